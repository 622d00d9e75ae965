"""Data the generated code cannot read when it runs, nested: inside a container in the closure
of a function passed in as an argument, in the defaults of such a function, on a class that
only an argument leads to, on a library's object, in a dict whose keys the code cannot write
(tests/test_unreached.py). Each factory returns ``(f, args, change)``: ``change()`` changes in
place (or rebinds an item of) what ``f`` reads, as a caller would between two calls."""
import types

import numpy as np

X = np.array([0.3, -1.2, 0.7])


class Holder:
    pass


def passed(x, fn):
    """The traced function: ``fn`` is an argument, so its closure is where no global leads."""
    return np.sum(fn(x) ** 2)


def _passing(fn):
    return passed, (X, fn)


def closure_dict_of_arrays():
    cfg = {"W": np.array([1.0, 2.0, 3.0]), "lr": 0.5}

    def fn(x):
        return x * cfg["W"] * cfg["lr"]
    return (*_passing(fn), lambda: cfg["W"].__setitem__(0, 5.0))


def closure_tuple_holding_an_array():
    held = (np.array([1.0, 2.0, 3.0]), 2)

    def fn(x):
        return x * held[0]
    return (*_passing(fn), lambda: held[0].__setitem__(1, -4.0))


def closure_list_of_arrays_grown():
    states = [np.array([1.0, 2.0, 3.0])]

    def fn(x):
        return x * states[-1]
    return (*_passing(fn), lambda: states.append(np.array([2.0, 0.5, -1.0])))


def closure_list_item_rebound():
    layers = [Holder()]
    layers[0].W = np.array([1.0, 2.0, 3.0])
    other = Holder()
    other.W = np.array([-1.0, 0.5, 2.0])

    def fn(x):
        return x * layers[0].W
    return (*_passing(fn), lambda: layers.__setitem__(0, other))


def closure_float_beside_a_large_array():
    """``cfg["lr"]`` is read; the large array beside it is not, and must not be refused."""
    cfg = {"lr": 0.5, "X": np.ones(1000)}

    def fn(x):
        return x * cfg["lr"]
    return (*_passing(fn), lambda: cfg.__setitem__("lr", 2.0))


def closure_nested_config():
    """The issue's example: a list inside a dict in the closure."""
    settings = {"scales": [1.0, 2.0]}

    def fn(x):
        return x * settings["scales"][0]
    return (*_passing(fn), lambda: settings["scales"].__setitem__(0, 5.0))


def closure_object_tuple_field():
    o = Holder()
    o.t = (np.array([1.0, 2.0, 3.0]),)

    def fn(x):
        return x * o.t[0]
    return (*_passing(fn), lambda: o.t[0].__setitem__(0, 5.0))


def default_list():
    def fn(x, d=[1.0]):
        return x * d[0]
    return (*_passing(fn), lambda: fn.__defaults__[0].__setitem__(0, 5.0))


def default_array():
    def fn(x, a=np.array([1.0, 2.0, 3.0])):
        return x * a
    return (*_passing(fn), lambda: fn.__defaults__[0].__setitem__(0, 5.0))


def keyword_default_item():
    def fn(x, *, k={"s": 1.0}):
        return x * k["s"]
    return (*_passing(fn), lambda: fn.__kwdefaults__.__setitem__("k", {"s": 5.0}))


def make_net():
    class Net:
        held = (np.array([1.0, 2.0, 3.0]),)
        tables = {"W": np.array([0.5, 1.0, -1.0])}

        def loss(self, x):
            return np.sum(x * self.held[0])

        def tabled(self, x):
            return np.sum(np.sin(x) * self.tables["W"])
    return Net()


def net_loss(x, net):
    return net.loss(x)


def net_tabled(x, net):
    return net.tabled(x)


def class_tuple_holding_an_array():
    net = make_net()
    return net_loss, (X, net), lambda: type(net).held[0].__setitem__(0, 5.0)


def class_dict_of_arrays():
    """Refused before (a dict of arrays on such a class): now guarded by value as the rest."""
    net = make_net()
    return net_tabled, (X, net), lambda: type(net).tables["W"].__setitem__(2, 4.0)


NS = types.SimpleNamespace(held=(np.array([1.0, 2.0, 3.0]),))


def namespace_tuple(x):
    return np.sum(x * NS.held[0])


def namespace_tuple_holding_an_array():
    NS.held = (np.array([1.0, 2.0, 3.0]),)
    return namespace_tuple, (X,), lambda: NS.held[0].__setitem__(0, 5.0)


ODD = {1.5: np.array([1.0, 2.0, 3.0]), 2.5: 0.5}


def odd_keys(x):
    return np.sum(x * ODD[1.5]) * ODD[2.5]


def odd_keys_array():
    ODD[1.5], ODD[2.5] = np.array([1.0, 2.0, 3.0]), 0.5
    return odd_keys, (X,), lambda: ODD[1.5].__setitem__(0, 5.0)


def odd_keys_float():
    ODD[1.5], ODD[2.5] = np.array([1.0, 2.0, 3.0]), 0.5
    return odd_keys, (X,), lambda: ODD.__setitem__(2.5, 2.0)


ODD_PLAIN = {1.5: 2.0}


def odd_keys_numbers(x):
    return np.sum(x) * ODD_PLAIN[1.5]


def odd_keys_without_arrays():
    ODD_PLAIN[1.5] = 2.0
    return odd_keys_numbers, (X,), lambda: ODD_PLAIN.__setitem__(1.5, 5.0)


CASES = [closure_dict_of_arrays, closure_tuple_holding_an_array, closure_list_of_arrays_grown,
         closure_list_item_rebound, closure_float_beside_a_large_array, closure_nested_config,
         closure_object_tuple_field, default_list, default_array, keyword_default_item,
         class_tuple_holding_an_array, class_dict_of_arrays, namespace_tuple_holding_an_array,
         odd_keys_array, odd_keys_float, odd_keys_without_arrays]
