"""The public API as a user meets it: simplegrad, source, trace, loading and debugging."""
import inspect
import io
import json
import pdb
import subprocess
import sys
import traceback

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import numerical_grad

from .programs import design, models

ARGS = (np.ones((4, 3)), np.arange(4.0), np.ones((3, 2)), np.ones((4, 2)))


def handwritten(W, b, x, y):
    h = np.tanh(W @ x + b[:, None])
    dh = 2 * (h - y) / h.size
    dt = dh * (1 - h ** 2)
    return np.mean((h - y) ** 2), dt @ x.T, dt.sum(axis=1), W.T @ dt, -dh


def test_simplegrad_equals_the_handwritten_gradient():
    got = ys.simplegrad(design.loss, *ARGS)(*ARGS)
    for g, h in zip(got, handwritten(*ARGS)):
        np.testing.assert_allclose(g, h, rtol=1e-12)


def test_the_seed_example_from_the_issue():
    W, b, x = np.random.rand(128, 784), np.random.rand(128), np.random.rand(784, 100)
    val, dW, db, dx = ys.simplegrad(models.seed_loss, W, b, x)(W, b, x)
    ones = np.ones((128, 100))
    np.testing.assert_allclose(val, np.sum(W @ x + b[:, None]))
    np.testing.assert_allclose(dW, ones @ x.T)
    np.testing.assert_allclose(db, np.full(128, 100.0))
    np.testing.assert_allclose(dx, W.T @ ones)


def test_source_is_the_module_text_and_inspect_agrees():
    df = ys.simplegrad(design.loss, *ARGS)
    text = ys.source(df)
    assert text.startswith('"""Gradient of loss (design.py:9)')
    assert inspect.getsource(sys.modules[df.__module__]) == text
    assert "def loss_grad(W, b, x, y_, *, out=None):" in inspect.getsource(df)


def test_returned_gradients_are_fresh_arrays():
    df = ys.simplegrad(models.seed_loss, np.ones((2, 3)), np.ones(2), np.ones((3, 4)))
    _, dW, db, dx = df(np.ones((2, 3)), np.ones(2), np.ones((3, 4)))
    _, dW2, _, _ = df(np.ones((2, 3)), np.ones(2), np.ones((3, 4)))
    assert dW is not dW2 and dW.flags.writeable and db.flags.writeable and dx.flags.owndata
    dW += 1                                                   # the caller owns it


def test_module_imports_by_name_in_a_fresh_process(tmp_path, monkeypatch):
    monkeypatch.setenv("YOTA_S2S_CACHE", str(tmp_path))
    df = ys.simplegrad(design.loss, *ARGS)
    code = (f"import sys, json, numpy as np; sys.path.insert(0, {str(tmp_path)!r}); "
            f"from {df.__module__} import loss_grad; "
            "print(json.dumps(loss_grad(np.ones((4, 3)), np.arange(4.0), np.ones((3, 2)), np.ones((4, 2)))[2].tolist()))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == df(*ARGS)[2].tolist()


def test_out_dir_in_the_project_is_a_plain_import(tmp_path):
    df = ys.simplegrad(design.loss, *ARGS, out_dir=tmp_path / "grads", module_name="loss_grads")
    assert (tmp_path / "grads" / "loss_grads.py").read_text() == ys.source(df)
    code = (f"import sys, numpy as np; sys.path.insert(0, {str(tmp_path / 'grads')!r}); "
            "import loss_grads; print(loss_grads.loss_grad.__name__)")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "loss_grad"


def test_tracebacks_point_into_the_generated_file():
    df = ys.simplegrad(models.with_guard, np.ones(3))
    try:
        df(-np.ones(3))
    except ValueError:
        frames = traceback.extract_tb(sys.exc_info()[2])
    assert frames[-1].filename == sys.modules[df.__module__].__file__
    assert frames[-1].line.startswith("raise GuardError(")


def test_pdb_stops_on_a_line_of_the_generated_module():
    df = ys.simplegrad(design.loss, *ARGS, buffers=False)
    path = sys.modules[df.__module__].__file__
    line = next(i for i, text in enumerate(ys.source(df).splitlines(), 1) if text.strip().startswith("dW ="))
    out = io.StringIO()
    debugger = pdb.Pdb(stdin=io.StringIO(f"break {path}:{line}\ncontinue\np dt3.shape\ncontinue\n"),
                       stdout=out, nosigint=True)
    debugger.use_rawinput = False
    debugger.runcall(df, *ARGS)
    assert "(4, 2)" in out.getvalue() and "dW = dt3 @ x.T" in out.getvalue()


def test_trace_gives_value_and_printable_tape():
    val, tape = ys.trace(models.seed_loss, np.ones((2, 3)), np.ones(2), np.ones((3, 4)))
    assert val == pytest.approx(2 * 4 * 3 + 4 * 2)
    assert str(tape).splitlines()[0] == "tape seed_loss(W:f64[2,3], b:f64[2], x:f64[3,4]) -> f64[]"


def test_gradcheck_passes_and_reports_a_wrong_rule():
    errors = ys.gradcheck(design.loss, *ARGS)
    assert set(errors) == {0, 1, 2, 3} and max(errors.values()) < 1e-7
    rules = ys.RULES.copy()
    rules.diffrule(np.tanh, "x", "dy * (1 + y * y)")        # wrong on purpose
    from yota_s2s.gradcheck import numerical_grad
    df = ys.simplegrad(design.loss, *ARGS, rules=rules)
    assert not np.allclose(df(*ARGS)[1], numerical_grad(design.loss, ARGS, 0))


def test_cupy_example_arguments_are_copied_to_the_host_for_compiling():
    class FakeCupyArray:                       # quacks like cupy.ndarray
        __cuda_array_interface__ = {}

        def __init__(self, a):
            self.a = a

        def get(self):
            return self.a
    from yota_s2s.api import _host
    host = _host((FakeCupyArray(np.ones(2)), 3))
    assert isinstance(host[0], np.ndarray) and host[1] == 3


class _Tagged(np.ndarray):
    """A user's subclass of ndarray."""


def _elementwise_product(x, y):
    return np.sum(x * y)


class _Holder:
    def __init__(self, W):
        self.W = W


def _field_product(m, x):
    return np.sum(m.W * x)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")     # np.matrix
@pytest.mark.parametrize("make", [np.matrix, lambda a: np.ma.masked_array(a, mask=[[0, 1], [0, 0]]),
                                  lambda a: a.view(_Tagged)], ids=["matrix", "masked", "user_subclass"])
@pytest.mark.parametrize("buffers", [True, False])
def test_numpy_subclasses_are_refused_by_the_generated_code_and_the_compiler(make, buffers):
    """np.matrix's * is a matrix product and a masked array skips masked elements: code compiled
    for plain arrays computed something else for them, silently (the check used isinstance)."""
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    df = ys.simplegrad(_elementwise_product, a, a, buffers=buffers)
    with pytest.raises(TypeError, match=r"_elementwise_product_grad: argument y is a \w+, a subclass "
                                        r"of ndarray.*pass a plain array: np\.asarray\(y\)"):
        df(a, make(a))
    for compile_it in (ys.simplegrad, ys.grad):
        with pytest.raises(ys.ArgumentMismatch) as info:
            compile_it(_elementwise_product, make(a), a)
        text = str(info.value)
        line = _elementwise_product.__code__.co_firstlineno
        assert text.startswith(f"test_api.py:{line} in _elementwise_product: argument x is a ")
        assert "a subclass of numpy.ndarray" in text and "np.asarray(x)" in text


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_a_numpy_subclass_inside_a_struct_is_not_a_cache_hit():
    m = _Holder(np.ones((2, 2)))
    ys.grad(_field_product, m, np.ones((2, 2)))
    m.W = np.matrix(np.ones((2, 2)))
    with pytest.raises(ys.ArgumentMismatch, match=r"argument m\.W is a numpy\.matrix"):
        ys.grad(_field_product, m, np.ones((2, 2)))


def test_a_static_function_argument_is_the_one_compiled_for_not_one_of_the_same_name():
    def apply(f, x):
        return np.sum(f(x))
    square = lambda x: x * x                                # noqa: E731
    five = lambda x: 5 * x                                  # noqa: E731  (also a <lambda>)
    x = np.ones(2)
    df = ys.simplegrad(apply, square, x)
    np.testing.assert_array_equal(df(square, x)[2], 2.0)
    np.testing.assert_array_equal(df(f=square, x=x)[2], 2.0)
    with pytest.raises(ys.ArgumentMismatch, match="not the function the gradient of apply"):
        df(five, x)                                     # also a <lambda>
    assert "def apply_grad(f, x" in inspect.getsource(df)
    assert df.__module__ == df.__wrapped__.__module__


def test_a_static_function_in_a_struct_is_the_one_compiled_for():
    def apply(p, x):
        return np.sum(p["f"](x) * p["w"])
    x = np.ones(2)
    sine = lambda x: np.sin(x)                              # noqa: E731
    cube = lambda x: x ** 3                                 # noqa: E731
    df = ys.simplegrad(apply, {"f": sine, "w": 2.0}, x)
    np.testing.assert_allclose(df({"f": sine, "w": 2.0}, x)[2], 2 * np.cos(x))
    with pytest.raises(ys.ArgumentMismatch):
        df({"f": cube, "w": 2.0}, x)


def test_the_function_pin_takes_parameters_named_like_its_own_constants():
    """The identity check of static functions runs with the user's parameter names (so that
    keyword calls work); a parameter named ``_k0`` or ``getattr`` must not shadow what it uses."""
    def apply(_k0, getattr, x):
        return np.sum(_k0(x) * getattr(x))
    square = lambda x: x * x                                # noqa: E731
    sine = lambda x: np.sin(x)                              # noqa: E731
    x = np.array([0.5, 1.5])
    df = ys.simplegrad(apply, square, sine, x)
    expected = 2 * x * np.sin(x) + x * x * np.cos(x)
    np.testing.assert_allclose(df(square, sine, x)[3], expected)
    np.testing.assert_allclose(df(square, sine, x=x)[3], expected)
    with pytest.raises(ys.ArgumentMismatch):
        df(sine, sine, x)


# -- ys.compile: the tracer on its own, a forward-only module --------------------------------

@pytest.mark.parametrize("buffers", [True, False])
def test_compile_writes_a_forward_only_module(tmp_path, monkeypatch, buffers):
    from .programs import models
    r = np.random.default_rng(0)
    args = (r.standard_normal((3, 4)) * 0.5, r.standard_normal((4, 4)) * 0.5, r.standard_normal(4),
            r.standard_normal((5, 2, 3)), r.standard_normal((2, 4)))
    cf = ys.compile(models.rnn, *args, buffers=buffers, out_dir=tmp_path, module_name="rnn_fwd")
    assert cf(*args) == pytest.approx(models.rnn(*args), rel=1e-12)
    assert cf(*args) == pytest.approx(models.rnn(*args), rel=1e-12)      # work arrays reused
    text = ys.source(cf)
    assert text.startswith('"""Forward of rnn') and "def rnn_forward(" in text
    assert "backward" not in text and ("_work_arrays" in text) == buffers
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    del sys.modules["rnn_fwd"]
    fresh = importlib.import_module("rnn_fwd")            # importable like a gradient module
    assert fresh.rnn_forward(*args) == pytest.approx(models.rnn(*args), rel=1e-12)
    with pytest.raises(TypeError, match="must be float64"):
        cf(args[0].astype(np.float32), *args[1:])


def pair_of_results(x, w):
    h = np.tanh(x * w)
    return h, np.sum(h * h)


def test_compile_returns_tuples_and_differentiates_through():
    x, w = np.linspace(-1, 1, 4), 0.7
    cf = ys.compile(pair_of_results, x, w)
    h, s = cf(x, w)
    np.testing.assert_allclose(h, np.tanh(x * w))
    assert s == pytest.approx(np.sum(np.tanh(x * w) ** 2))

    def through(x):
        return cf(x, w)[1]
    _, dx = ys.simplegrad(through, x)(x)      # its plain form is inlined
    np.testing.assert_allclose(dx, 2 * np.tanh(x * w) * (1 - np.tanh(x * w) ** 2) * w)


# -- one wrt for every entry point (issue 30) --------------------------------------------------

def two(x, y):
    return np.sum(x * y) + np.sum(y ** 2)


def test_wrt_means_the_same_everywhere():
    x, y = np.arange(3.0), np.array([0.5, -1.0, 2.0])
    dx, dy = y, x + 2 * y
    for wrt in (0, "x", [0], ("x",), {0}, (-2,)):
        assert ys.simplegrad(two, x, y, wrt=wrt)(x, y)[2] is None
        np.testing.assert_array_equal(ys.simplegrad(two, x, y, wrt=wrt)(x, y)[1], dx)
        _, g = ys.grad(two, x, y, wrt=wrt)
        assert g[1] is None
        np.testing.assert_array_equal(g[0], dx)
    for wrt in ("y", {1}, [1], ("y", 1)):
        value, gx, gy = ys.simplegrad(two, x, y, wrt=wrt)(x, y)
        assert gx is None
        np.testing.assert_array_equal(gy, dy)
    np.testing.assert_array_equal(ys.gradient(two, ["y", "x"])(x, y)[1], dx)
    np.testing.assert_array_equal(ys.jacobian(lambda x, y: x * y, x, y, argnum="y"), np.diag(x))
    np.testing.assert_allclose(ys.hessian(two, x, y, argnum="y"), 2 * np.eye(3), atol=1e-14)


@pytest.mark.parametrize("call, words", [
    (lambda x, y: ys.simplegrad(two, x, y, wrt=1.5),
     "wrt=1.5: 1.5 is not an argument's position (int), its parameter name (str), or a list, "
     "tuple or set of them\nWrite e.g. wrt=0"),
    (lambda x, y: ys.grad(two, x, y, wrt={"z"}),
     "in two: wrt='z': two has no parameter 'z'\n    def two(x, y):\nIts parameters are x, y."),
    (lambda x, y: ys.grad(two, x, y, wrt=()), "wrt=() asks for no gradient"),
    (lambda x, y: ys.simplegrad(two, x, y, wrt=2),
     "wrt=2: two is called with 2 arguments, so position 2 is none of them\n"),
    (lambda x, y: ys.gradient(two, {0, 1}),
     "argnum={0, 1} is a set, which has no order; the gradients come back in argnum's order\n"
     "Give a tuple: argnum=(0, 1)."),
    (lambda x, y: ys.hessian(two, x, y, argnum=(0, 1)),
     "hessian: argnum=(0, 1) names 2 arguments; hessian differentiates one"),
])
def test_a_wrt_that_names_no_argument_says_what_is_accepted(call, words):
    with pytest.raises(ys.UsageError) as err:
        call(np.ones(3), np.ones(3))
    assert words in str(err.value)


def scaled(x, n):
    return np.sum(x ** 2) * n


def test_an_int_asked_for_is_refused_and_an_int_passed_along_gets_none():
    x = np.array([1.0, 2.0])
    with pytest.raises(ys.UsageError) as err:
        ys.grad(scaled, x, 3, wrt="n")
    assert str(err.value).startswith(
        "test_api.py:"
        f"{scaled.__code__.co_firstlineno} in scaled: wrt='n' asks for the gradient of scaled's "
        "argument n, which is the int 3; an int has no gradient\n    def scaled(x, n):\n"
        "Pass n as a float to differentiate it (np.asarray(n, dtype=float), or 1.0 for 1), or "
        "leave it out of wrt.")
    with pytest.raises(ys.UsageError, match="wrt=1 asks for the gradient of scaled's argument n"):
        ys.simplegrad(scaled, x, 3, wrt=(0, 1))
    with pytest.raises(ys.UsageError, match=r"only argument x is an array of int64: an int has "
                                            r"no gradient(.|\n)*np.asarray\(x, dtype=float\)"):
        ys.grad(lambda x: np.sum(x * 2.0), np.array([1, 2, 3]))
    with pytest.raises(ys.UsageError, match="every argument of scaled is an int"):
        ys.grad(scaled, 2, 3)
    _, g = ys.grad(scaled, x, 3)            # passed along: None, as before
    assert g[1] is None
    np.testing.assert_array_equal(g[0], 6 * x)


def powered(x, scale=1.0, n=2):
    return np.sum(x ** n) * scale


def only_by_name(x, *, s):
    return np.sum(x) * s


def test_keyword_arguments_of_f_are_passed_in_their_places():
    x = np.arange(3.0)
    value, g = ys.grad(powered, x, scale=2.0)          # traced, like a positional float
    assert value == 10.0 and len(g) == 2
    np.testing.assert_array_equal(g[0], 4 * x)
    assert g["scale"] == g[1] == 5.0
    value, g = ys.grad(powered, x, n=3)                # scale takes its default; n is static
    assert value == 9.0 and g[1] == 9.0 and g["n"] is None
    np.testing.assert_array_equal(g["x"], 3 * x ** 2)
    value, gx = ys.value_and_grad(powered)(x, scale=3.0)
    assert value == 15.0
    np.testing.assert_array_equal(gx, 6 * x)
    np.testing.assert_array_equal(ys.gradient(powered, "scale")(x, scale=3.0), 5.0)
    df = ys.simplegrad(powered, x, scale=2.0)
    assert df(x, scale=2.0)[2] == df(x, 2.0)[2] == 5.0
    with pytest.raises(ys.UsageError) as err:
        ys.grad(only_by_name, x, s=1.0)
    assert str(err.value) == (
        f"test_api.py:{only_by_name.__code__.co_firstlineno} in only_by_name: only_by_name() got "
        "the keyword argument s=, which is keyword-only: arguments are compiled by position\n"
        "    def only_by_name(x, *, s):\n"
        "Make s a positional parameter (before the *), or fix its value in a lambda: "
        "ys.grad(lambda x: only_by_name(x, s=...), ...).")
    with pytest.raises(ys.UsageError, match="got the keyword argument scal=, which is none of "
                                            "its parameters(.|\n)*Its parameters are x, scale, n."):
        ys.grad(powered, x, scal=1.0)
    with pytest.raises(ys.UsageError, match="got multiple values for argument 'x'"):
        ys.grad(powered, x, x=x)


def dict_loss(p, x):
    return np.sum(np.tanh(p["W"] @ x)) + np.sum(p["layers"][0]["b"] ** 2)


def test_struct_gradients_are_found_by_a_plain_key_and_a_miss_names_the_paths():
    p = {"W": np.full((2, 3), 0.5), "layers": [{"b": np.array([1.0, -2.0])}]}
    x = np.array([1.0, 2.0, 3.0])
    _, g = ys.grad(dict_loss, p, x)
    dW = (1 - np.tanh(p["W"] @ x) ** 2)[:, None] * x
    np.testing.assert_allclose(g[0]["W"], dW, rtol=1e-14)
    assert g[0]["W"] is g[0][("W",)]
    assert g[0]["layers"][0]["b"] is g[0][("layers", 0, "b")]
    assert dict(g[0]["layers"]) == {(0, "b"): g[0][("layers", 0, "b")]}
    assert g[0].get("Z") is None
    with pytest.raises(KeyError) as err:
        g[0]["Z"]
    assert str(err.value) == "'Z': no gradient has this path; the paths are ('W',), " \
                             "('layers', 0, 'b')"
    ys.update(p, g[0], lambda v, gv: v - gv)           # ys.update takes them as before
    np.testing.assert_allclose(p["W"], 0.5 - dW, rtol=1e-14)
    np.testing.assert_array_equal(p["layers"][0]["b"], [-1.0, 2.0])


def list_loss(x):
    return np.sum(np.exp(x) * 2.0) + np.mean(x) * np.dot(x, x) + np.sum(x)


def test_a_list_of_floats_is_read_as_numpy_reads_it():
    """np.exp, np.sum, np.dot of a list make an array of it: each element gets its gradient
    (the rules gave one gradient for the whole array: 'a rule for a sequence operand must
    return one gradient per element', or a tuple's missing .shape)."""
    x = [1.0, 2.0]
    value, g = ys.grad(list_loss, x)
    assert value == pytest.approx(list_loss(np.array(x)), rel=1e-15)
    a = np.array(x)
    expected = 2 * np.exp(a) + np.sum(a ** 2) / 2 + 2 * a * np.mean(a) + 1
    assert list(g[0]) == [(0,), (1,)]
    np.testing.assert_allclose([g[0][0], g[0][1]], expected, rtol=1e-14)
    np.testing.assert_allclose([g[0][0], g[0][1]],
                               numerical_grad(list_loss, [a], 0), rtol=1e-7)


def written_out(x):
    y = x * 1.0
    head = y[:2]                              # a view: sees the writes below
    np.exp(y, out=y)
    z = np.clip(y, 0.0, 3.0, out=y)
    np.multiply(head, 2.0, out=head)
    return np.sum(y * z) + np.sum(head)


def test_out_writes_into_the_array_as_numpy_does():
    x = np.array([0.5, 1.0, 2.0])
    value, g = ys.grad(written_out, x)
    assert value == written_out(x.copy())
    np.testing.assert_allclose(g[0], numerical_grad(written_out, [x], 0), rtol=1e-7)
    y = np.exp(x)
    expected = np.where(y < 3.0, 2 * y * y, 0.0) * np.array([4, 4, 1]) + [2 * y[0], 2 * y[1], 0]
    np.testing.assert_allclose(g[0], expected, rtol=1e-13)


def printing(x, w):
    h = np.tanh(x * w)
    print("h:", h, "total", np.sum(h), sep=" | ")
    return np.sum(h ** 2)


def test_print_prints_at_run_time_the_values_of_each_call(capsys):
    """print in the function was dropped at compile time and at run time; it is a statement of
    the generated code now, as jax.debug.print (nothing prints while compiling)."""
    x, w = np.array([0.5, 1.0]), 2.0
    df = ys.simplegrad(printing, x, w)
    assert capsys.readouterr().out == ""
    assert "    print('h:', h, 'total', " in ys.source(df)
    for scale in (1.0, 2.0):
        value, dx, dw = df(x * scale, w)
        h = np.tanh(x * scale * w)
        assert capsys.readouterr().out == f"h: | {h} | total | {np.sum(h)}\n"
        assert value == pytest.approx(np.sum(h ** 2), rel=1e-15)
        np.testing.assert_allclose(dx, 2 * h * (1 - h ** 2) * w, rtol=1e-14)
    ys.grad(printing, x, w)
    assert capsys.readouterr().out.startswith("h: | ")
    with pytest.raises(ys.YotaError, match=r"pass it to print: print\(\"x =\", x\)"):
        ys.grad(lambda x: print(f"{x}") or np.sum(x), x)


class Pair:
    def __init__(self, w):
        self.w = w

    def __add__(self, other):
        return Pair(self.w + other.w)

    def __rmul__(self, k):
        return Pair(k * self.w)


class Params:
    """Fields found by __getattr__ (m.w is m.values["w"]); a miss raises KeyError, as
    such classes often do (hasattr(m, "__cuda_array_interface__") raised it)."""

    def __init__(self, values):
        self.values = values

    def __getattr__(self, name):
        return self.values[name]


def test_operators_and_getattr_of_user_classes_are_followed():
    w = np.array([1.0, -2.0, 0.5])
    value, g = ys.grad(lambda p: np.sum((p + 3.0 * p).w ** 2), Pair(w))
    assert value == pytest.approx(16 * np.sum(w ** 2), rel=1e-15)
    np.testing.assert_allclose(g[0]["w"], 32 * w, rtol=1e-15)
    value, g = ys.grad(lambda m: np.sum(np.tanh(m.w)), Params({"w": w}))
    np.testing.assert_allclose(g[0][("values", "w")], 1 - np.tanh(w) ** 2, rtol=1e-15)
    with pytest.raises(ys.YotaError, match="unsupported operand types for -: Pair and Pair(.|\n)*"
                                           "Define __sub__ \\(and __rsub__ for the other order\\) "
                                           "on Pair, or write the operation on its fields."):
        ys.grad(lambda p: np.sum((p - p).w), Pair(w))


def weighted_power(x, w, p=1, q=0.5):
    return np.sum(np.abs(x) ** p * w) * q


def test_a_functools_partial_is_differentiated_with_its_values_read_at_each_call():
    """ys.simplegrad / ys.grad of functools.partial (issue 29: AttributeError __code__): the
    partial's values are g's arguments, read from it at every call (a keyword changed in place
    is seen: a float at run time, an int checked), and only the caller's get gradients."""
    import functools
    x, w = np.linspace(0.5, 1.5, 3), np.array([1.0, 2.0, 3.0])
    square = functools.partial(weighted_power, p=2)
    value, dx, dw = ys.simplegrad(square, x, w)(x, w)
    assert value == weighted_power(x, w, 2)
    np.testing.assert_allclose(dx, x * w, rtol=1e-14)
    np.testing.assert_allclose(dw, x ** 2 * 0.5, rtol=1e-14)
    value, g = ys.grad(square, x, w)
    assert value == weighted_power(x, w, 2) and len(g) == 2
    np.testing.assert_allclose(g[1], x ** 2 * 0.5, rtol=1e-14)
    assert ys.grad(square, x, w, wrt=1)[1][0] is None
    value, g = ys.grad(functools.partial(weighted_power, x), w)      # a bound array, positional
    assert value == weighted_power(x, w) and len(g) == 1
    np.testing.assert_allclose(g[0], x * 0.5, rtol=1e-14)
    scaled = functools.partial(weighted_power, p=2, q=1.0)
    df = ys.simplegrad(scaled, x, w)
    scaled.keywords["q"] = 3.0                                      # a float: read at run time
    value, dx, dw = df(x, w)
    assert value == weighted_power(x, w, 2, 3.0)
    np.testing.assert_allclose(dx, 2 * x * w * 3.0, rtol=1e-14)
    scaled.keywords["p"] = 3                                        # an int: checked
    with pytest.raises(TypeError, match="argument p must be 2, got 3"):
        df(x, w)
    assert ys.grad(scaled, x, w)[0] == weighted_power(x, w, 3, 3.0)        # ys.grad compiles again
    with pytest.raises(ys.YotaError, match=r"test_api.py:\d+ in weighted_power: functools."
                                           r"partial of "
                                           r"weighted_power: it cannot be called with 3 more"):
        ys.grad(square, x, w, w)


def test_more_arguments_than_the_function_has_say_so_at_its_def():
    """ys.hvp(f, x, v) for a one-argument f (issue 29): an IndexError in the frontend before;
    now the count, f's def (file:line), and for hvp where the vector goes."""
    x = np.ones(3)
    for call in (ys.hvp, ys.grad, ys.simplegrad):
        with pytest.raises(ys.YotaError, match=r"test_api.py:\d+ in sines: sines takes 1 "
                                               r"positional argument, 2 given"):
            call(sines, x, x)
    with pytest.raises(ys.YotaError, match=r"hf = ys.hvp\(sines, x\); hf\(x, v\)"):
        ys.hvp(sines, x, x)
    with pytest.raises(ys.YotaError, match=r"sines takes 1 positional argument, 0 given"):
        ys.grad(sines)


def sines(x):
    return np.sum(np.sin(x))
