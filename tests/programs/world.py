"""Functions that read the world outside their arguments (tests/test_assumptions.py): numbers
in config dicts and lists, lists of ints that pick rows, mutable defaults, class attributes,
tied weights. Each test changes what they read between calls."""
import collections
import functools
import types

import numpy as np

CFG = {"l2": 0.5, "name": "ridge"}
SCALES = [0.5, 2.0]
IDS = [0, 1, 2]
LR = 0.1


class Holder:
    pass


HELD = Holder()
HELD.vals = [0.5]


def config_dict(w):
    return np.sum(w ** 2) * CFG["l2"]


def global_list(w):
    return np.sum(w ** 2) * SCALES[0] + np.sum(w) * SCALES[-1]


def list_field(w):
    return np.sum(np.sin(w)) * HELD.vals[0]


def rows(W):
    total = 0.0
    for t in range(3):
        total = total + np.sum(W[IDS[t]] ** 2)
    return total


def global_number(w):
    return np.sum(w ** 2) * LR


def mutable_default(x, W=np.array([1.0, 2.0, 3.0])):
    return np.sum(np.tanh(x * W))


def number_default(x, a=2.0):
    return np.sum(x ** 2) * a


def keyword_default(x, *, a=2.0, k=2):
    return np.sum(x[:k] ** 2) * a


def scaled_by(x, p=2.0, W=None, k=3):
    return np.sum(x ** 2) * p + np.sum(x[:k] * W[:k])


WEIGHTED = functools.partial(scaled_by, p=2.0, W=np.array([1.0, 2.0, 3.0]), k=3)


def global_partial(x):
    return WEIGHTED(x)


class Tables:
    scales = [0.5, 2.0]
    table = {"a": 1.5}
    W = np.array([1.0, 2.0, 3.0])

    def loss(self, x):
        return np.sum(x ** 2) * self.scales[0] + np.sum(x) * Tables.table["a"] \
            + np.sum(np.sin(x) * self.W)


TABLES = Tables()


def class_data(x):
    return TABLES.loss(x)


def make_net(n=3):
    """A factory that defines a class and returns an instance: the class cannot be reached
    by name (``make_net.<locals>.Net``); its data is on the class."""
    class Net:
        W = np.linspace(1.0, 3.0, n)
        scales = [0.5, 2.0]
        table = {"a": 1.5}

        def loss(self, x):
            return np.sum(x ** 2) * self.scales[0] + np.sum(x) * self.table["a"] \
                + np.sum(np.sin(x) * self.W)
    return Net()


NET = make_net()


def local_class_data(x):
    """Reaches ``Net``'s data through the global object: ``world.NET.__class__.W``."""
    return NET.loss(x)


def local_class_argument(x, net):
    """Reaches ``Net``'s data only through an argument: guarded by value."""
    return net.loss(x)


def make_objective():
    """A class statement in the traced function's enclosing function."""
    class Table:
        W = np.array([1.0, 2.0, 3.0])
        scales = [0.5, 2.0]
        table = {"a": 1.5}

    def objective(x):
        return np.sum(x ** 2) * Table.scales[0] + np.sum(x) * Table.table["a"] \
            + np.sum(np.sin(x) * Table.W)
    return objective


local_class_closure = make_objective()


def closure_object(cfg):
    def loss(w):
        return np.sum(w * cfg.W) * cfg.scale
    return loss


Pair = collections.namedtuple("Pair", "W s")
PAIR = Pair(np.array([1.0, 2.0, 3.0]), 0.5)


def global_namedtuple(x):
    return np.sum(np.sin(x) * PAIR.W) * PAIR.s


def closure_list(scales):
    def loss(w):
        return np.sum(w ** 2) * scales[0]
    return loss


def closure_array(w_):
    def loss(x):
        return np.sum(np.sin(x) * w_)
    return loss


ACT = np.tanh                   # a library function under a user's name: may be rebound


def activation(x):
    return np.sum(ACT(x))


def calls_a_default(x):
    return mutable_default(x)


class Scaled:
    scale = 2.0

    def loss(self, x):
        return np.sum(x ** 2) * self.scale


class Shadowed:
    scale = 2.0


def shadowed_loss(x, m):
    return np.sum(np.tanh(x) * m.W) * m.scale


class Encoder:
    def __init__(self, W):
        self.W = W


class Tied:
    def __init__(self, W):
        self.enc = Encoder(W)
        self.dec_W = W


def tied_loss(m, x):
    h = np.tanh(m.enc.W @ x)
    return np.sum((m.dec_W.T @ h - x) ** 2)


class Settings:
    """An object of the user's class, held only in the closure of a function that the
    traced function gets as an argument: the generated code cannot reach it."""

    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])
        self.scale = 0.5


def make_scaler():
    settings = Settings()

    def scale(x):
        return x * settings.W * settings.scale
    return scale, settings


def passed_function(x, fn):
    return np.sum(fn(x) ** 2)


NS = types.SimpleNamespace(W=np.array([1.0, 2.0, 3.0]), lr=0.5, big=np.ones(200_000))


def namespace_data(x):
    """A global of a library's class: the generated code does not read its fields when it
    runs, so its arrays are guarded by value."""
    return np.sum((x * NS.W) ** 2) * NS.lr


def namespace_big(x):
    return np.sum(x) * np.sum(NS.big)


def picked(x, i):
    """``i``: an index argument, a numpy int or bool as often as a Python one (from an array)."""
    return x[i] * 2.0


def flagged(x, flag):
    return np.sum(x) * (2.0 if flag else 3.0)


class Defaulted:
    """A method with an array default, on a class the code reaches (``world.Defaulted``)."""

    def loss(self, x, W=np.array([1.0, 2.0, 3.0])):
        return np.sum(np.tanh(x * W))


DEFAULTED = Defaulted()


def method_default(x):
    return DEFAULTED.loss(x)


def copied_config(w):
    """Config containers copied or merged before their numbers are read: the copy is made of
    the numbers as read at run time, not of the numbers as they were when compiling."""
    cfg = {**CFG, "extra": 1.0}
    scales = SCALES.copy() + [3.0]
    return np.sum(w ** 2) * CFG.copy()["l2"] * cfg["l2"] + np.sum(w) * scales[0] \
        + np.sum(np.sin(w)) * list(reversed(SCALES))[0] * (CFG | {"x": 1})["l2"]


def searched(w):
    return np.sum(w[:SCALES.index(2.0)])


NORM = {"ord": 3.0}


def static_option_from_config(w):
    """A number of a config dict where numpy needs one known when compiling (``ord=``)."""
    return np.linalg.norm(w * 2.0, **NORM) + np.sum(w * w) * NORM["ord"]
