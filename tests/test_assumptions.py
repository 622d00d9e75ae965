"""The one record of what a compiled gradient assumes about the world outside its arguments
(ir/assumptions.py): numbers in config dicts and lists read at run time, lists of ints and
strings checked by value, class attributes, defaults, closure cells and tied weights guarded by
identity, by ``simplegrad``'s function as by ``ys.grad``. Between calls each test changes what
the function reads; the next call gives the new value and gradient, or a ``GuardError`` naming
what changed, never the stale answer (issue 29)."""
import contextlib
import linecache

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.errors import InternalError, StaleSourceError
from yota_s2s.ir import verify
from yota_s2s.ir.assumptions import Assumption

from .programs import world as m


def numeric(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for sign in (1, -1):
            xx = x.copy()
            xx[i] += sign * eps
            g[i] += sign * f(xx) / (2 * eps)
    return g


def expect(df, f, x):
    value, g = df(x)
    assert np.isclose(value, f(x), rtol=1e-12)
    np.testing.assert_allclose(g, numeric(f, x), rtol=1e-6, atol=1e-7)


def simple(buffers):
    return lambda f, x: (lambda df: lambda y: df(y))(ys.simplegrad(f, x, buffers=buffers))


def cached(f, x):
    ys.grad(f, x)           # compiled now, for the world as it is now
    return lambda y: (lambda v, g: (v, g[0]))(*ys.grad(f, y))


# ys.grad, and simplegrad's two forms: each must see the world as it is at the call
WAYS = pytest.mark.parametrize("make", [simple(True), simple(False), cached],
                               ids=["buffered", "plain", "grad"])
W3 = np.array([0.3, -1.2, 0.7])


@contextlib.contextmanager
def restored(obj, *names):
    saved = {n: obj[n] if isinstance(obj, (dict, list)) else getattr(obj, n) for n in names}
    try:
        yield
    finally:
        for n, v in saved.items():
            if isinstance(obj, (dict, list)):
                obj[n] = v
            else:
                setattr(obj, n, v)


@WAYS
def test_a_float_in_a_global_dict_is_read_at_run_time(make):
    with restored(m.CFG, "l2"):
        df = make(m.config_dict, W3)
        expect(df, m.config_dict, W3)
        m.CFG["l2"] = 2.0               # a hyper-parameter sweep, in place
        expect(df, m.config_dict, W3)


@WAYS
def test_floats_in_a_global_list_and_in_a_list_field_are_read_at_run_time(make):
    with restored(m.SCALES, 0, 1), restored(m.HELD.vals, 0):
        df, dl = make(m.global_list, W3), make(m.list_field, W3)
        m.SCALES[0], m.SCALES[1], m.HELD.vals[0] = 3.0, -1.0, 4.0
        expect(df, m.global_list, W3)
        expect(dl, m.list_field, W3)


@WAYS
def test_a_float_in_a_closure_list_is_read_at_run_time(make):
    scales = [0.5]
    loss = m.closure_list(scales)
    df = make(loss, W3)
    scales[0] = 3.0
    expect(df, loss, W3)


@WAYS
def test_a_mutable_default_array_changed_in_place_is_seen(make):
    saved = m.mutable_default.__defaults__[0].copy()
    try:
        df, dc = make(m.mutable_default, W3), make(m.calls_a_default, W3)
        m.mutable_default.__defaults__[0][0] = 7.0
        expect(df, m.mutable_default, W3)
        expect(dc, m.calls_a_default, W3)
    finally:
        m.mutable_default.__defaults__[0][...] = saved


@WAYS
def test_a_keyword_only_default_changed_in_place_is_seen(make):
    """``__kwdefaults__`` is a dict: its float is read at run time, its int checked (before,
    simplegrad's function kept returning the old default's value and gradient)."""
    with restored(m.keyword_default.__kwdefaults__, "a", "k"):
        df = make(m.keyword_default, W3)
        m.keyword_default.__kwdefaults__["a"] = 5.0
        expect(df, m.keyword_default, W3)
        m.keyword_default.__kwdefaults__["k"] = 3
        try:                            # ys.grad compiles again; simplegrad's function refuses
            expect(df, m.keyword_default, W3)
        except ValueError as e:         # the module's GuardError
            assert type(e).__name__ == "GuardError"
            assert "__kwdefaults__['k'], read from outside the function, was 2" in str(e)


@WAYS
def test_the_stored_arguments_of_a_global_partial_changed_in_place_are_seen(make):
    """``functools.partial(g, p=2.0, W=W)`` in a global: its keywords are read where they are
    (``WEIGHTED.keywords['W']``); before, both simplegrad forms and ys.grad returned the old
    values."""
    W = m.WEIGHTED.keywords["W"]
    with restored(m.WEIGHTED.keywords, "p", "k"):
        try:
            df = make(m.global_partial, W3)
            m.WEIGHTED.keywords["p"] = 5.0
            W[0] = 7.0
            expect(df, m.global_partial, W3)
            m.WEIGHTED.keywords["k"] = 2
            try:
                expect(df, m.global_partial, W3)
            except ValueError as e:
                assert type(e).__name__ == "GuardError"
                assert "WEIGHTED.keywords['k'] (read at world.py:" in str(e) and "was 3" in str(e)
        finally:
            W[0] = 1.0


@WAYS
def test_a_method_default_changed_in_place_is_read_at_run_time(make):
    """``def loss(self, x, W=np.array(...))`` of a class the code reaches: the default is read
    where it is (``world.Defaulted.loss.__defaults__[0]``), like a function's; before, it was
    compiled in and, changed in place, both simplegrad forms and ys.grad returned the old
    value and gradient."""
    W = m.Defaulted.loss.__defaults__[0]
    try:
        df = make(m.method_default, W3)
        W[0] = 5.0
        expect(df, m.method_default, W3)
    finally:
        W[0] = 1.0


@WAYS
def test_a_copied_or_merged_config_is_read_at_run_time(make):
    """``CFG.copy()``, ``{**CFG}``, ``CFG | {...}``, ``SCALES.copy() + [...]``,
    ``reversed(SCALES)``: every way of reading a config container's items reads them as the
    code runs; before, the copy was made in C of the items as they were when compiling, and
    after ``CFG["l2"] = 2.0`` both simplegrad forms and ys.grad returned the old value."""
    with restored(m.CFG, "l2"), restored(m.SCALES, 0, 1):
        df = make(m.copied_config, W3)
        m.CFG["l2"], m.SCALES[0], m.SCALES[1] = 2.0, -1.0, 4.0
        expect(df, m.copied_config, W3)


@WAYS
def test_a_config_number_given_as_a_static_option_is_checked_by_value(make):
    """``np.linalg.norm(w, **NORM)`` with ``NORM = {"ord": 3.0}``: the float is read at run
    time where it is data, and where numpy needs it known when compiling (``ord=``) it is
    compiled in and checked by value at each call, as an int there is: ys.grad compiles again
    for ``ord=4.0``, a simplegrad function raises GuardError (before, refused: "must be known
    at compile time, but it is traced")."""
    with restored(m.NORM, "ord"):
        df = make(m.static_option_from_config, W3)
        expect(df, m.static_option_from_config, W3)
        m.NORM["ord"] = 4.0
        if make is cached:
            expect(df, m.static_option_from_config, W3)
        else:
            with pytest.raises(ValueError, match=r"NORM\['ord'\]") as e:
                df(W3)
            assert type(e.value).__name__ == "GuardError"


def test_searching_a_config_list_read_at_run_time_is_refused():
    """``SCALES.index(2.0)`` decides a slice from numbers the code reads when it runs: refused,
    saying what to do (before, compiled for the values of the first call, silently)."""
    with pytest.raises(ys.StaticValueError, match=r"(?s)a list read from outside the function "
                                                  r"is compared by value while compiling.*"
                                                  r"pass the result in"):
        ys.simplegrad(m.searched, W3)


@WAYS
def test_a_list_a_dict_and_an_array_on_a_class_changed_in_place_are_seen(make):
    """Data on a class (``scales = [0.5, 2.0]``, ``W = np.array(...)``) is read where it is,
    ``world.Tables.W``; before, it was compiled in, and changed in place, both simplegrad
    forms and ys.grad returned the old value and gradient."""
    T = m.Tables
    with restored(T.scales, 0), restored(T.table, "a"):
        try:
            df = make(m.class_data, W3)
            T.scales[0], T.table["a"], T.W[0] = 4.0, -2.0, 5.0
            expect(df, m.class_data, W3)
        finally:
            T.W[0] = 1.0


def _local_class(f):
    """The class whose data ``f`` reads: made by a factory, or closed over."""
    return type(m.NET) if f is m.local_class_data else \
        f.__closure__[f.__code__.co_freevars.index("Table")].cell_contents


@WAYS
@pytest.mark.parametrize("f", [m.local_class_data, m.local_class_closure],
                         ids=["object", "closure"])
def test_data_on_a_class_defined_inside_a_function_changed_in_place_is_seen(make, f):
    """A class made by a factory (read through a global object) or defined in the traced
    function's enclosing function (read through its closure cell): its array, list and dict
    are read where they are (``world.NET.__class__.W``, the cell's ``.W``); before, they were
    compiled in, and changed in place, both simplegrad forms and ys.grad returned the old
    value and gradient."""
    T = _local_class(f)
    with restored(T.scales, 0), restored(T.table, "a"):
        try:
            df = make(f, W3)
            T.scales[0], T.table["a"], T.W[0] = 4.0, -2.0, 5.0
            expect(df, f, W3)
        finally:
            T.W[0] = 1.0


def test_reads_through_a_closure_variable_are_named_by_the_variable():
    """The record and the guards name a field of a closure variable by the variable
    (``cfg.W (in a closure)``); before, by the field's name alone, as if it were the variable
    (``W (a variable of a closure)``)."""
    cfg = m.Holder()
    cfg.W, cfg.scale = np.array([1.0, 2.0, 3.0]), 0.5
    src = ys.source(ys.simplegrad(m.closure_object(cfg), W3))
    assert "cfg.W (in a closure) (attribute): read at run time" in src
    assert "cfg.scale (in a closure) (attribute): read at run time" in src
    assert "(a variable of a closure)" not in src
    src = ys.source(ys.simplegrad(m.local_class_closure, W3))
    assert "Table.W (in a closure) (attribute): read at run time" in src
    assert "Table.scales[0] (in a closure) (item): read at run time" in src
    df = ys.simplegrad(m.closure_object(cfg), W3)
    cfg.W = np.ones(4)
    with pytest.raises(ValueError, match=r"cfg.W \(in a closure\) \(read at world.py:\d+\)"):
        df(W3)


def test_data_on_a_local_class_reached_only_through_an_argument_is_guarded_by_value():
    """``net.W`` of an argument whose class was defined inside a function: the generated code
    reaches the class nowhere, so its data is compiled in and compared with a copy at each
    call: simplegrad's function raises GuardError naming it, ys.grad compiles again (before,
    both returned the old value and gradient); a large array there is refused."""
    net = m.make_net()
    T = type(net)

    def loss(x):
        return m.local_class_argument(x, net)
    for buffers in (True, False):
        df = ys.simplegrad(m.local_class_argument, W3, net, buffers=buffers)
        assert np.isclose(df(W3, net)[0], loss(W3))
        T.W[0] = 5.0
        with pytest.raises(ys.GuardError, match=r"make_net.<locals>.Net.W \(a float64\[3\] array "
                                                r"on a class the code cannot reach\)"):
            df(W3, net)
        T.W[0] = 1.0
        df(W3, net)
        T.scales[0] = 4.0
        with pytest.raises(ys.GuardError, match=r"Net.scales \(a list on a class the code"):
            df(W3, net)
        T.scales[0] = 0.5
    ys.grad(m.local_class_argument, W3, net)
    try:
        T.W[1], T.table["a"] = -1.0, 3.0
        value, g = ys.grad(m.local_class_argument, W3, net)        # compiled again
        assert np.isclose(value, loss(W3), rtol=1e-12)
        np.testing.assert_allclose(g[0], numeric(loss, W3), rtol=1e-6, atol=1e-7)
    finally:
        T.W[1], T.table["a"] = 2.0, 1.5
    big = m.make_net(100)
    with pytest.raises(ys.StaticValueError, match=r"Net.W \(a float64\[100\] array on a class "
                                                  r"the code cannot reach\) is read by the "
                                                  r"function: .* too large"):
        ys.simplegrad(m.local_class_argument, np.ones(100), big)


@WAYS
def test_the_array_field_of_a_global_namedtuple_is_read_at_run_time(make):
    """``PAIR.W`` of a global namedtuple: compiling refused it ('Pair.W is a _tuplegetter, a
    descriptor the compiler cannot run'); now its items are read where they are."""
    try:
        df = make(m.global_namedtuple, W3)
        m.PAIR.W[0] = 5.0
        expect(df, m.global_namedtuple, W3)
    finally:
        m.PAIR.W[0] = 1.0


def test_a_list_of_ints_that_picks_rows_is_checked_every_call():
    W = np.arange(15.0).reshape(5, 3) / 10
    with restored(m.IDS, 0, 1, 2):
        for buffers in (True, False):
            m.IDS[:] = [0, 1, 2]
            df = ys.simplegrad(m.rows, W, buffers=buffers)
            m.IDS[:] = [3, 4, 4]
            with pytest.raises(ValueError, match=r"world.IDS\[0\] \(read at world.py:\d+\), read from outside the "
                                                 r"function, was 0 .* is 3 now"):
                df(W)
        m.IDS[:] = [0, 1, 2]
        ys.grad(m.rows, W)
        m.IDS[:] = [3, 4, 4]
        value, g = ys.grad(m.rows, W)       # compiled again for the new rows
        assert np.isclose(value, m.rows(W))
        np.testing.assert_allclose(g[0], numeric(m.rows, W), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_simplegrad_guards_class_attributes_defaults_and_globals(buffers):
    x = W3
    with restored(m.Scaled, "scale"), restored(m, "LR"):
        obj = m.Scaled()
        df = ys.simplegrad(obj.loss, x, buffers=buffers)
        assert np.isclose(df(x)[0], obj.loss(x))
        m.Scaled.scale = 3.0
        with pytest.raises(ys.GuardError, match=r"Scaled.scale \(class attribute\) \(read at "
                                                r"world.py:\d+\) is not the object"):
            df(x)
        m.Scaled.scale = 2.0
        df = ys.simplegrad(obj.loss, x, buffers=buffers)
        obj.scale = 5.0                 # shadows the class attribute
        with pytest.raises(ys.GuardError, match=r"self.scale was read from its class and is "
                                                r"now set on the object"):
            df(x)
        dn = ys.simplegrad(m.global_number, x, buffers=buffers)
        m.LR = 0.3
        with pytest.raises(ys.GuardError, match=r"world.LR \(global\) \(read at world.py:\d+\)"):
            dn(x)
    saved = m.number_default.__defaults__
    try:
        dd = ys.simplegrad(m.number_default, x, buffers=buffers)
        m.number_default.__defaults__ = (4.0,)
        with pytest.raises(ys.GuardError, match=r"number_default.__defaults__ \(default\)"):
            dd(x)
    finally:
        m.number_default.__defaults__ = saved


def test_grad_sees_class_attributes_shadowing_and_defaults():
    x = W3
    with restored(m.Scaled, "scale"):
        obj = m.Scaled()
        ys.grad(obj.loss, x)
        obj.scale = 5.0             # an instance attribute set later shadows the class's
        value, g = ys.grad(obj.loss, x)
        assert np.isclose(value, obj.loss(x))
        np.testing.assert_allclose(g[0], numeric(obj.loss, x), rtol=1e-6)
    saved = m.number_default.__defaults__
    try:
        ys.grad(m.number_default, x)
        m.number_default.__defaults__ = (4.0,)
        value, g = ys.grad(m.number_default, x)
        assert np.isclose(value, m.number_default(x))
    finally:
        m.number_default.__defaults__ = saved


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_tied_weights_untied_by_a_step_raise_in_simplegrad(buffers):
    rng = np.random.default_rng(0)
    W, x = rng.normal(size=(3, 3)), np.ones(3)
    model = m.Tied(W)
    df = ys.simplegrad(m.tied_loss, model, x, buffers=buffers)
    df(model, x)
    model.dec_W = model.dec_W - 0.1         # an SGD step that rebinds one path
    with pytest.raises(ys.GuardError, match=r"m.dec_W and m.enc.W were one object \(tied\)"):
        df(model, x)
    value, g = ys.grad(m.tied_loss, model, x)     # ys.grad compiles the untied model
    assert np.isclose(value, m.tied_loss(model, x))
    assert set(g[0]) == {("enc", "W"), ("dec_W",)}


def test_update_out_of_place_keeps_a_tie():
    W, x = np.random.default_rng(1).normal(size=(3, 3)), np.ones(3)
    model = m.Tied(W)
    value, g = ys.grad(m.tied_loss, model, x)
    new = ys.update(model, g[0], lambda a, ga: a - 0.1 * ga, inplace=False)
    assert new.enc.W is new.dec_W and model.enc.W is W and model.dec_W is W
    # one gradient under the first path (tied), or one per path (compiled untied): the total
    np.testing.assert_allclose(new.dec_W, W - 0.1 * sum(g[0].values()))


def test_the_record_is_listed_in_the_tape_and_the_module_header():
    with restored(m.CFG, "l2"):
        df = ys.simplegrad(m.config_dict, W3)
        text = ys.source(df)
        assert "Assumes, outside its arguments" in text
        assert "programs.world.CFG['l2'] (item): read at run time  (world.py:" in text
        assert "tuple(tests.programs.world.CFG) (keys): guarded by value" in text
        _, tape = ys.trace(m.config_dict, W3)
        assert "world.CFG['l2'] (item): read at run time" in str(tape)


def test_a_module_that_reads_nothing_from_outside_lists_nothing():
    def pure(x):
        return np.sum(x ** 2)
    df = ys.simplegrad(pure, W3)
    assert "Assumes" not in ys.source(df)


def test_the_verifier_refuses_an_outside_read_without_an_entry():
    _, tape = ys.trace(m.config_dict, W3)
    verify.check_assumptions(tape)
    with pytest.raises(InternalError, match="with no entry in the tape's record"):
        verify.check_assumptions(tape.copy(assumptions=()))
    unguarded = Assumption("world.CFG", "global", "compiled in")
    with pytest.raises(InternalError, match="neither read at run time nor guarded"):
        verify.check_assumptions(tape.copy(assumptions=tape.assumptions + (unguarded,)))


def _define(text, name):
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    scope = {"np": np}
    exec(compile(text, name, "exec"), scope)
    return scope["f"]


def test_a_reused_pseudo_file_name_is_not_compiled_for_the_old_function():
    name = "<yota-test-cell-reused>"
    try:
        f1 = _define("def f(x):\n    return np.sum(x ** 2)\n", name)
        f2 = _define("def f(x):\n    return np.sum(x ** 3)\n", name)     # same name, new text
        x = np.array([1.0, 2.0])
        value, g = ys.grad(f2, x)
        assert np.isclose(value, 9.0) and np.allclose(g[0], 3 * x ** 2)
        for compile_ in (lambda: ys.grad(f1, x), lambda: ys.simplegrad(f1, x)):
            with pytest.raises(StaleSourceError,
                               match=r"the source registered for <yota-test-cell-reused>"):
                compile_()
    finally:
        linecache.cache.pop(name, None)


def test_a_guarded_function_pickles_and_its_module_compiles_again():
    import pickle
    df = ys.simplegrad(m.global_number, W3)
    assert pickle.loads(pickle.dumps(df)) is df          # by reference, as a module function
    again = ys.simplegrad(m.global_number, W3)             # the same module, loaded before
    with restored(m, "LR"):
        m.LR = 0.3
        value, g = ys.grad(m.global_number, W3)            # compiles again, runs unguarded code
        assert np.isclose(value, m.global_number(W3))
        with pytest.raises(ys.GuardError):
            again(W3)


def test_a_list_in_a_closure_the_code_cannot_reach_is_guarded_by_value():
    scales = [0.5]
    act = m.closure_list(scales)         # passed in as an argument: no global leads to it
    x = W3

    def loss(w, f):
        return f(w)
    df = ys.simplegrad(loss, x, act)
    assert np.isclose(df(x, act)[0], act(x))
    ys.grad(loss, x, act)
    scales[0] = 2.0
    with pytest.raises(ys.GuardError, match=r"scales \(a list in a closure the code cannot "
                                            r"reach\) \(contents\) .* has changed in place"):
        df(x, act)
    value, g = ys.grad(loss, x, act)     # compiled again
    assert np.isclose(value, act(x))
    np.testing.assert_allclose(g[0], numeric(act, x), rtol=1e-6)


def test_an_array_in_a_closure_the_code_cannot_reach_is_guarded_by_value():
    weights = np.array([1.0, 2.0, 3.0])
    act = m.closure_array(weights)       # passed in as an argument: no global leads to it
    x = np.array([0.5, 0.6, 0.7])

    def loss(v, f):
        return f(v)
    df = ys.simplegrad(loss, x, act)
    np.testing.assert_allclose(df(x, act)[1], np.cos(x) * weights, rtol=1e-12)
    assert "w_ (a float64[3] array in a closure the code cannot reach) (contents): guarded " \
        "by value" in ys.source(df)          # in the record the module header lists
    ys.grad(loss, x, act)
    weights[:] = [3.0, 2.0, 1.0]         # changed in place between calls
    with pytest.raises(ys.GuardError, match=r"w_ \(a float64\[3\] array in a closure the code "
                                            r"cannot reach\) \(contents\) .* has changed in "
                                            r"place"):
        df(x, act)
    value, g = ys.grad(loss, x, act)     # compiled again
    assert np.isclose(value, act(x), rtol=1e-12)
    np.testing.assert_allclose(g[0], np.cos(x) * weights, rtol=1e-12)
    np.testing.assert_allclose(g[0], numeric(act, x), rtol=1e-6)
    weights[0] = np.nan                  # a nan equals itself: compiled once more, then a hit
    ys.grad(loss, x, act)
    assert np.isnan(ys.grad(loss, x, act)[0])


@pytest.mark.parametrize("strategy", ["rev-rev", "fwd-rev"])
def test_second_order_reads_the_closure_array_of_the_first_gradient_at_run_time(strategy):
    # the first gradient, inlined, reads _fn.__closure__[0].cell_contents: the second-order
    # module reads it there too (expressions.getattr, outside.OutsideCell), not a constant
    weights = np.array([1.0, 2.0, 3.0])
    f = m.closure_array(weights * 1.0)
    x, v = np.array([0.5, 0.6, 0.7]), np.array([1.0, -0.5, 2.0])
    hf = ys.hvp(f, x, strategy=strategy)
    hessp = ys.hessp(f, strategy=strategy)
    np.testing.assert_allclose(hf(x, v), -np.sin(x) * weights * v, rtol=1e-12)
    np.testing.assert_allclose(hessp(x, v), -np.sin(x) * weights * v, rtol=1e-12)
    f.__closure__[0].cell_contents[:] = [3.0, 2.0, 1.0]     # changed in place between calls
    new = -np.sin(x) * np.array([3.0, 2.0, 1.0])
    np.testing.assert_allclose(hf(x, v), new * v, rtol=1e-12)
    np.testing.assert_allclose(hessp(x, v), new * v, rtol=1e-12)
    np.testing.assert_allclose(ys.hessian(f, x, strategy=strategy), np.diag(new), rtol=1e-12)
    g = lambda y: ys.grad(f, y)[1][0][1]                    # noqa: E731
    np.testing.assert_allclose(hf(x, np.eye(3)[1]), numeric(g, x), rtol=1e-6)


def test_a_variant_compiled_untied_does_not_take_a_tied_model():
    rng = np.random.default_rng(2)
    W, x = rng.normal(size=(3, 3)), np.ones(3)
    untied = m.Tied(W)
    untied.dec_W = W * 1.0                  # same shape and dtype: could be tied
    value, g = ys.grad(m.tied_loss, untied, x)
    assert set(g[0]) == {("enc", "W"), ("dec_W",)}
    df = ys.simplegrad(m.tied_loss, untied, x)
    assert "m.enc.W, m.dec_W are distinct objects (untied) (tie): guarded by identity" in \
        ys.source(df)
    tied = m.Tied(W)
    value, g = ys.grad(m.tied_loss, tied, x)      # its own variant: one gradient for W
    assert np.isclose(value, m.tied_loss(tied, x), rtol=1e-12)
    assert set(g[0]) == {("enc", "W")}
    np.testing.assert_allclose(g[0][("enc", "W")],
                               numeric(lambda w: m.tied_loss(m.Tied(w), x), W), rtol=1e-6)
    with pytest.raises(ys.GuardError, match=r"m.enc.W, m.dec_W were distinct objects and two "
                                            r"of them are one now \(tied\)"):
        df(tied, x)


@WAYS
def test_a_global_bound_to_a_numpy_function_and_rebound_is_seen(make):
    with restored(m, "ACT"):
        df = make(m.activation, W3)
        expect(df, m.activation, W3)
        m.ACT = np.sin                  # the user's choice of activation, rebound
        if make is cached:
            expect(df, m.activation, W3)
        else:
            with pytest.raises(ys.GuardError, match=r"world.ACT \(global\) \(read at "
                                                    r"world.py:\d+\) is not the object"):
                df(W3)


def test_numpy_and_its_functions_under_their_own_names_get_no_guard():
    name = "<yota-test-own-names>"
    try:
        f = _define("from numpy import exp\nimport numpy.linalg as la\n"
                    "def f(x):\n    return np.sum(exp(x) * np.tanh(x)) + la.norm(x)\n", name)
        for buffers in (True, False):
            df = ys.simplegrad(f, W3, buffers=buffers)
            assert not hasattr(df, "__yota_world__")   # the module's function: no cost
            expect(df, f, W3)
    finally:
        linecache.cache.pop(name, None)


@pytest.mark.parametrize("buffers", [True, False, None], ids=["buffered", "plain", "grad"])
def test_deleting_an_attribute_that_shadowed_the_class_attribute_is_seen(buffers):
    obj = m.Shadowed()
    obj.W, obj.scale = np.array([1.0, -2.0, 0.5]), 3.0      # its own scale, over the class's
    f = lambda y: m.shadowed_loss(y, obj)                   # noqa: E731
    if buffers is None:
        ys.grad(m.shadowed_loss, W3, obj)
    else:
        df = ys.simplegrad(m.shadowed_loss, W3, obj, buffers=buffers)
        assert "m.scale set on the object (over its class's) (attribute): guarded by " \
            "identity" in ys.source(df)
    del obj.scale                       # the class's 2.0 is read now
    if buffers is None:
        value, g = ys.grad(m.shadowed_loss, W3, obj)
        assert np.isclose(value, f(W3), rtol=1e-12)
        np.testing.assert_allclose(g[0], numeric(f, W3), rtol=1e-6)
        assert set(g[1]) == {("W",)}    # scale is the class's: no gradient for it
    else:
        with pytest.raises(ys.GuardError, match=r"m.scale was read from the object and is now "
                                                r"its class's"):
            df(W3, obj)


def test_data_on_an_object_the_code_cannot_reach_is_guarded_by_value():
    """``settings.W`` of an object held only in the closure of a function passed in as an
    argument: compiled in and compared with a copy at each call (before, its array changed in
    place gave the old value and gradient in both forms and through ys.grad)."""
    fn, settings = m.make_scaler()

    def loss(x):
        return m.passed_function(x, fn)
    for buffers in (True, False):
        df = ys.simplegrad(m.passed_function, W3, fn, buffers=buffers)
        assert np.isclose(df(W3, fn)[0], loss(W3))
        settings.W[0] = 10.0
        with pytest.raises(ys.GuardError, match=r"Settings.W \(a float64\[3\] array on a "
                                                r"Settings object the code cannot reach\)"):
            df(W3, fn)
        settings.W[0] = 1.0
        settings.scale = 2.0
        with pytest.raises(ys.GuardError, match="scale"):
            df(W3, fn)
        settings.scale = 0.5
    ys.grad(m.passed_function, W3, fn)
    try:
        settings.W[1] = -1.0
        value, g = ys.grad(m.passed_function, W3, fn)        # compiled again
        assert np.isclose(value, loss(W3), rtol=1e-12)
        np.testing.assert_allclose(g[0], numeric(loss, W3), rtol=1e-6, atol=1e-7)
    finally:
        settings.W[1] = 2.0


def test_data_on_a_library_object_in_a_global_is_guarded_by_value():
    """``NS.W`` of a ``types.SimpleNamespace`` global: the generated code does not read a
    library object's fields when it runs, so an array there is compared with a copy at each
    call (before, ys.grad and simplegrad returned the old value after ``NS.W[0] = 10.0``); a
    large one is refused, saying what to do."""
    for buffers in (True, False):
        df = ys.simplegrad(m.namespace_data, W3, buffers=buffers)
        assert np.isclose(df(W3)[0], m.namespace_data(W3))
        m.NS.W[0] = 10.0
        try:
            with pytest.raises(ys.GuardError, match=r"SimpleNamespace.W \(a float64\[3\] array "
                                                    r"on a SimpleNamespace object, whose fields"):
                df(W3)
        finally:
            m.NS.W[0] = 1.0
    ys.grad(m.namespace_data, W3)
    try:
        m.NS.W[2] = -2.0
        value, g = ys.grad(m.namespace_data, W3)            # compiled again
        assert np.isclose(value, m.namespace_data(W3), rtol=1e-12)
        np.testing.assert_allclose(g[0], numeric(m.namespace_data, W3), rtol=1e-6, atol=1e-7)
    finally:
        m.NS.W[2] = 3.0
    with pytest.raises(ys.StaticValueError, match=r"(?s)SimpleNamespace.big .*too large.*"
                                                  r"instance of a class of your own"):
        ys.simplegrad(m.namespace_big, W3)


@pytest.mark.parametrize("buffers", [True, False])
def test_a_numpy_int_argument_is_checked_like_an_int(buffers):
    """``np.int64(0)`` (an index read from an array) is compiled in as ``0`` is, so the
    function checks it: called with another index it raises, never returns the gradient of
    row 0 (before, numpy ints and bools were not checked at all)."""
    x = np.arange(4.0)
    df = ys.simplegrad(m.picked, x, np.int64(0), buffers=buffers)
    np.testing.assert_array_equal(df(x, np.int64(0))[1], [2.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(df(x, 0)[1], [2.0, 0.0, 0.0, 0.0])
    for other in (np.int64(2), 2, np.int32(1)):
        with pytest.raises(TypeError, match=r"argument i must be xp.int64\(0\)"):
            df(x, other)
    df = ys.simplegrad(m.flagged, x, np.True_, buffers=buffers)
    np.testing.assert_array_equal(df(x, np.True_)[1], np.full(4, 2.0))
    with pytest.raises(TypeError, match=r"argument flag must be xp.bool\(True\)"):
        df(x, np.False_)
    np.testing.assert_array_equal(ys.grad(m.picked, x, np.int64(2))[1][0], [0.0, 0.0, 2.0, 0.0])
