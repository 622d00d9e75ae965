"""Error messages: what went wrong, where in the user's code (file:line, the line, a caret),
and what to do. Each test pins the parts a user relies on."""
import re
import sys

import numpy as np
import pytest

import yota_s2s as ys

from .programs import bad


def error_text(fn, *args):
    with pytest.raises(ys.YotaError) as info:
        ys.simplegrad(fn, *args)
    return info.value, str(info.value)


def test_a_call_without_a_rule_names_the_function_the_line_and_the_fix():
    err, text = error_text(bad.no_rule, np.ones(3))
    assert isinstance(err, ys.NoRuleError)
    lines = text.splitlines()
    assert lines[0] == "bad.py:9 in no_rule: np.fft.hfft has no derivative rule and no Python source to inline"
    assert lines[1] == "    h = np.fft.hfft(x).real"
    assert lines[2] == "        ^^^^^^^^^^^^^^"
    assert lines[3] == ("Add a rule to bad.py (fill in <...>; y is the result, dy the incoming "
                        "gradient) or mark it non-differentiable:")
    assert lines[4:] == ['    ys.diffrule(np.fft.hfft, "a", "<expr in a, y, dy>")',
                         "    ys.nodiff(np.fft.hfft)"]


@pytest.mark.parametrize("fn,what,hint", [
    (bad.uses_try, "`Try` statements are not supported", "check the condition with an if"),
    (bad.uses_with, "`With` statements are not supported", "move the with-block out"),
    (bad.writes_global, "writing to global variables is not supported", "Return the new value"),
    (bad.generator, "generator", "Return a list"),
])
def test_unsupported_syntax_says_what_where_and_how(fn, what, hint):
    err, text = error_text(fn, np.ones(3))
    assert isinstance(err, ys.UnsupportedSyntax)
    assert text.startswith("bad.py:") and what in text and hint in text


def test_a_non_scalar_result_suggests_reducing_it():
    _, text = error_text(bad.vector_result, np.ones(3))
    assert "vector_result returns an array of float64[3]; gradients need a scalar float result" in text
    assert "np.sum(...)" in text


def test_a_complex_result_is_refused_with_the_fix():
    """The gradient of a complex scalar is not defined; it used to come back as if the result
    were its real part."""
    line = bad.complex_result.__code__.co_firstlineno
    for compile_it in (ys.simplegrad, ys.grad):
        with pytest.raises(ys.YotaError) as info:
            compile_it(bad.complex_result, np.ones(3))
        text = str(info.value)
        assert text.startswith(f"bad.py:{line} in complex_result: complex_result returns a complex "
                               "scalar (c128[]); the gradient of a value that is not real is not "
                               "defined")
        assert "np.real(...)" in text and "np.abs(...)" in text


def test_a_traced_bound_of_arange_is_refused():
    """np.arange(a, 5.0) with a traced ``a``: its values moved with ``a`` but got no gradient,
    and its length changed with ``a`` unguarded."""
    err, text = error_text(bad.traced_arange_start, np.ones(3), 2.0)
    line = bad.traced_arange_start.__code__.co_firstlineno + 1
    assert isinstance(err, ys.StaticValueError)
    assert text.startswith(f"bad.py:{line} in traced_arange_start: the arguments of np.arange must "
                           "be known at compile time, but one is traced")
    assert "a + np.arange(n) * step" in text


def test_float_of_a_size_one_vector_says_how_to_read_the_element():
    err, text = error_text(bad.float_of_a_vector, np.ones(1))
    line = bad.float_of_a_vector.__code__.co_firstlineno + 1
    assert text.startswith(f"bad.py:{line} in float_of_a_vector: float() of a traced f64[1]: ")
    assert "float(x[0])" in text


def test_values_that_must_be_static():
    err, text = error_text(bad.traced_axis, np.ones((2, 2)))
    assert isinstance(err, ys.StaticValueError) and "axis= argument of sum must be known at compile time" in text
    err, text = error_text(bad.traced_slice, np.ones(3))
    assert isinstance(err, ys.StaticValueError) and "slice bounds must be known at compile time" in text


def test_traced_loop_bound_is_reported_at_its_line():
    err, text = error_text(bad.traced_loop_bound, np.ones(3))
    assert isinstance(err, ys.StaticValueError)
    assert text.startswith("bad.py:43 in traced_loop_bound: range() needs values known at compile time")
    assert "for i in range(x[0]):" in text and "x.shape[0]" in text


def test_undefined_names():
    _, text = error_text(bad.undefined_name, np.ones(3))
    assert text.startswith("bad.py:53 in undefined_name: name 'undefined_thing' is not defined")


def test_random_numbers_inside_are_drawn_by_the_generated_code():
    # once refused ("draw them outside"); now a call in the forward section (docs/globals.md)
    df = ys.simplegrad(bad.random_inside, np.ones(3))
    assert "xp.random.rand(3)" in ys.source(df)
    np.random.seed(1)
    value, g = df(np.ones(3))
    np.random.seed(1)
    draw = np.random.rand(3)
    np.testing.assert_allclose(g, draw, rtol=0, atol=0)
    assert value == np.sum(draw)


def test_large_constant_arrays_are_read_at_call_time():
    # once refused ("pass it in as an argument"); now read from the module when the code runs
    df = ys.simplegrad(bad.big_constant, np.ones(100))
    assert "bad.TABLE" in ys.source(df) and "xp.asarray" not in ys.source(df)
    np.testing.assert_allclose(df(np.ones(100))[1], bad.TABLE, rtol=0, atol=0)


def test_writing_into_an_argument_in_place_is_refused():
    _, text = error_text(bad.writes_argument, np.ones(3))
    assert "`x += ...` would change the caller's array x in place" in text
    assert "Write `x = x + ...`" in text


def test_ambiguous_truth_value_suggests_any_or_all():
    _, text = error_text(bad.ambiguous_truth, np.ones(3))
    assert "truth value of a traced bool[3] is ambiguous" in text and "np.any" in text


def test_numpy_failures_show_the_shapes():
    _, text = error_text(bad.shape_mismatch, np.ones((2, 3)), np.ones((4, 5)))
    assert text.startswith("bad.py:81 in shape_mismatch: matmul(f64[2,3], f64[4,5]) fails:")


def test_rule_with_unknown_name_points_at_the_rule():
    rules = ys.RULES.copy()
    with pytest.raises(ys.RuleError) as info:
        rules.diffrule(np.tanh, "x", "dy * (1 - z * z)")
    text = str(info.value)
    assert text.startswith("test_errors.py:") and "uses 'z'" in text and "Rules may use:" in text


def test_rule_for_a_missing_operand():
    with pytest.raises(ys.RuleError, match="tanh has no operand named 'a'"):
        ys.RULES.copy().diffrule(np.tanh, "a", "dy")


# -- issue 30: messages that leaked internals or gave no fix ----------------------------------

def loss_and_aux(x):
    return np.sum(x ** 2), x


def test_a_loss_returned_with_auxiliary_values_names_has_aux():
    line = loss_and_aux.__code__.co_firstlineno
    for compile_it in (ys.simplegrad, ys.grad):
        with pytest.raises(ys.YotaError) as info:
            compile_it(loss_and_aux, np.ones(3))
        assert str(info.value).splitlines() == [
            f"test_errors.py:{line} in loss_and_aux: loss_and_aux returns a tuple of 2 values "
            "(a float64 scalar, an array of float64[3]); gradients need one scalar float result, "
            "the loss",
            "    def loss_and_aux(x):",
            "Return the loss alone, or return loss, aux and pass has_aux=True to get aux back "
            "beside the gradients (as in JAX). For the gradients of a non-scalar result use "
            "ys.vjp or ys.jacobian."]
    (value, aux), dx = ys.simplegrad(loss_and_aux, np.ones(3), has_aux=True)(np.ones(3))
    assert value == 3.0 and np.array_equal(aux, np.ones(3)) and np.array_equal(dx, 2 * np.ones(3))


def list_norm(x):
    return np.linalg.norm(x)


def list_norm_test(x):
    """A primitive of the user's whose operand is a list: its rule must give one gradient per
    element."""
    return np.sqrt(x[0] ** 2 + x[1] ** 2)


def list_norm_loss(x):
    return list_norm_test(x)


def test_a_list_given_to_a_function_whose_rule_gives_one_gradient_names_the_call_and_the_fix():
    """numpy's functions read a list as an array (np.linalg.norm of a list argument gets one
    gradient per element); a user's primitive gets the list as it is."""
    np.testing.assert_allclose(ys.grad(list_norm, [3.0, 4.0])[1][0][(1,)], 0.8)
    rules = ys.RULES.copy()
    rules.diffrule(list_norm_test, "x", "dy * np.asarray(x) / y")
    line = list_norm_loss.__code__.co_firstlineno + 1
    with pytest.raises(ys.YotaError) as info:
        ys.simplegrad(list_norm_loss, [3.0, 4.0], rules=rules)
    assert str(info.value).splitlines() == [
        f"test_errors.py:{line} in list_norm_loss: tests.test_errors.list_norm_test is given a "
        "list or tuple of 2 traced values as its operand x, and its derivative rule gives one "
        "gradient for them, not one per element",
        "    return list_norm_test(x)",
        "           ^^^^^^^^^^^^^^^^^",
        "Return a tuple from the rule, one gradient per element, or give the function an array: "
        "np.asarray(...) of the list."]


def exp_into_argument(x):
    np.exp(x, out=x)
    return np.sum(x)


def test_out_into_an_argument_is_refused_with_the_rewrite():
    line = exp_into_argument.__code__.co_firstlineno + 1
    _, text = error_text(exp_into_argument, np.ones(3))
    assert text.splitlines() == [
        f"test_errors.py:{line} in exp_into_argument: `np.exp(..., out=x)` would change the "
        "caller's array x in place",
        "    np.exp(x, out=x)",
        "    ^^^^^^^^^^^^^^^^",
        "Write `x = np.exp(...)` (without out=) to make a new array instead."]


def _fitted():
    from sklearn.linear_model import LogisticRegression, Ridge
    r = np.random.default_rng(0)
    X = r.standard_normal((20, 3))
    return (LogisticRegression().fit(X, (X[:, 0] > 0).astype(int)),
            Ridge().fit(X, X[:, 1]), X)


def test_library_code_that_cannot_be_traced_is_said_at_the_users_call():
    """sklearn's predict_proba used to point into sklearn/utils/_tags.py and tell the user to
    rewrite a try statement there; Ridge.predict said `super(): __class__ cell not found`."""
    pytest.importorskip("sklearn")
    clf, ridge, X = _fitted()

    def proba(X):
        return np.sum(clf.predict_proba(X))

    def predicted(X):
        return np.sum(ridge.predict(X))
    fix = ("Library code that cannot be traced is not yours to change: write what it computes "
           "with numpy in your function (a fitted scikit-learn linear model's decision function "
           "is X @ model.coef_.T + model.intercept_), or make a function of yours that calls it "
           "a primitive with a derivative rule (ys.diffrule(fn, \"x\", \"<expr in x, y, dy>\")).")
    # where inside sklearn tracing stops depends on its version (1.7 on Python 3.10: Ridge's
    # predict is LinearModel's and stops at a try statement in _tags.py; later: at super())
    for fn, head in ((proba, r"LogisticRegression\.predict_proba \(sklearn\) cannot be traced: "
                             r"at _tags\.py:"),
                     (predicted, r"(Ridge|LinearModel)\.predict \(sklearn\) cannot be traced: "
                                 r"at _(ridge|tags)\.py:")):
        with pytest.raises(ys.YotaError) as info:
            ys.grad(fn, X)
        lines = str(info.value).splitlines()
        where = f"test_errors.py:{fn.__code__.co_firstlineno + 1} in {fn.__name__}: "
        assert lines[0].startswith(where) and re.match(head, lines[0][len(where):]), lines[0]
        assert lines[1].strip().startswith("return np.sum(")
        assert lines[-1] == fix
    assert ("super(): __class__ cell not found" in str(info.value)
            or "`Try` statements are not supported" in str(info.value))


def integral(a):
    import scipy.integrate
    return scipy.integrate.quad(lambda t: a * t, 0.0, 1.0)[0]


def test_a_traced_function_given_to_library_code_says_what_to_write():
    pytest.importorskip("scipy")
    line = integral.__code__.co_firstlineno + 2
    _, text = error_text(integral, 2.0)
    lines = text.splitlines()
    assert lines[0] == (f"test_errors.py:{line} in integral: _quadpack_py.quad is given the "
                        "function <lambda>, defined in the compiled code, to call; "
                        "_quadpack_py.quad is library code, run as it is (not traced), so it "
                        "would call it outside the trace")
    assert lines[-1].startswith("Write what it computes with numpy in your function (an integral "
                                "as a sum on a grid: t = np.linspace(0, 1, 201);")
    assert "ys.diffrule" in lines[-1]


def accumulated(x):
    total = 0.0

    def add():
        nonlocal total
        total = total + np.sum(x)
    add()
    return total


def test_nonlocal_is_called_nonlocal_with_the_rewrite():
    _, text = error_text(accumulated, np.ones(3))
    lines = text.splitlines()
    assert lines[0].endswith("`nonlocal total`: writing to a variable of the enclosing function "
                             "is not supported")
    assert lines[0].startswith(f"test_errors.py:{accumulated.__code__.co_firstlineno + 4} ")
    assert lines[-1] == ("Return the new value from the inner function instead (total = "
                         "inner(..., total)), or keep the state in a list or dict that the inner "
                         "function changes.")


def small_loss(W, x):
    return np.sum(np.tanh(W @ x))


def test_an_array_of_the_other_device_says_which_it_is_and_what_to_pass(monkeypatch, tmp_path):
    """A numpy array given to a device="cuda" module said "must be float64[4, 3], got
    float64[4, 3]; compile again"; a cupy array given to a numpy module the same."""
    import types
    W, x = np.ones((4, 3)), np.ones(3)

    class ndarray(np.ndarray):          # cupy's array, as a CPU can make one
        __module__ = "cupy"
    fake = types.ModuleType("cupy")
    fake.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    fake.ndarray = ndarray
    monkeypatch.setitem(sys.modules, "cupy", fake)
    gpu = ys.simplegrad(small_loss, W, x, device="cuda", out_dir=tmp_path, module_name="on_gpu")
    with pytest.raises(TypeError) as info:
        gpu(W, x)
    assert str(info.value) == ("small_loss_grad: argument W is a numpy array (float64[4, 3]); "
                               "this module was compiled for cupy arrays: pass cupy.asarray(W), "
                               "or compile for the other device")
    class on_device:                    # a cupy array handed to a numpy module
        __module__, shape, dtype = "cupy", W.shape, W.dtype
    cpu = ys.simplegrad(small_loss, W, x)
    with pytest.raises(TypeError) as info:
        cpu(on_device(), x)
    assert str(info.value) == ("small_loss_grad: argument W is a cupy array (float64[4, 3]); "
                               "this module was compiled for numpy arrays: pass W.get(), or "
                               "compile for the other device")


def test_device_cuda_without_cupy_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)          # as if it were not installed
    with pytest.raises(ys.UsageError) as info:
        ys.grad(small_loss, np.ones((4, 3)), np.ones(3), device="cuda")
    assert str(info.value) == (
        "this gradient was compiled for device=\"cuda\", which needs cupy, and cupy is not "
        "installed\nInstall cupy's binary wheel for your CUDA version: pip install cupy-cuda12x "
        "(CUDA 12) or pip install cupy-cuda11x (CUDA 11); `pip install cupy` builds it from "
        "source, which needs the CUDA toolkit. Or compile for device=\"cpu\".")


def countdown(x, n):
    if n == 0:
        return x
    return countdown(x * 0.999, n - 1)


def deep(x):
    return np.sum(countdown(x, 800))


def forever(x, n):
    return forever(x, n + 1)


def endless(x):
    return np.sum(forever(x, 0))


def test_a_recursion_python_runs_is_traced_and_an_endless_one_is_refused_at_its_def():
    """A static recursion 800 deep, which Python runs at its default limit (issue 29: a
    RecursionError inside the tracer, which takes several frames a call): traced, in a thread
    with a larger stack; one without end stops at Python's limit, with its def."""
    x = np.linspace(0.1, 0.3, 2)
    limit = sys.getrecursionlimit()
    value, g = ys.grad(deep, x)
    assert value == deep(x) and sys.getrecursionlimit() == limit
    np.testing.assert_allclose(g[0], 0.999 ** 800, rtol=1e-12)
    with pytest.raises(ys.UnsupportedSyntax, match=r"test_errors.py:\d+ in forever: calls nest "
                                                   r"deeper than \d+, Python's recursion limit"):
        ys.grad(endless, x)
    assert sys.getrecursionlimit() == limit


LIBRARY_MODEL = '''
import numpy as np
import yota_s2s as ys
from sklearn.linear_model import LogisticRegression

_X = np.random.default_rng(0).standard_normal((20, 3))
clf = LogisticRegression().fit(_X, (_X[:, 0] > 0).astype(int))


@ys.example(lambda: (_X,))
def loss(X):
    return np.sum(clf.predict_proba(X))
'''


def test_yota_s2s_compile_says_a_library_error_once_at_the_users_call(tmp_path, monkeypatch,
                                                                     capsys):
    """Collecting every error of a model file, the library's lines each gave one (in sklearn's
    files, with sklearn's lines to edit); now the call gives one."""
    pytest.importorskip("sklearn")
    from yota_s2s import cli
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "libmodel.py").write_text(LIBRARY_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli.main(["compile", "libmodel.py"]) == cli.COMPILE_ERRORS
    err = capsys.readouterr().err
    assert "libmodel.py: loss does not compile (1 problem):\n\nlibmodel.py:12 in loss: " \
           "LogisticRegression.predict_proba (sklearn) cannot be traced: at _tags.py:" in err
    assert "Library code that cannot be traced is not yours to change" in err
    sys.modules.pop("libmodel", None)


def test_a_result_that_is_not_a_real_scalar_and_a_write_into_an_argument_are_type_errors():
    """As JAX's and autograd's grad (autograd's test_grad_complex_output and
    test_assignment_raises_error expect a TypeError): still YotaErrors, with their messages."""
    with pytest.raises(TypeError, match="complex scalar"):
        ys.grad(lambda x: x * (1.0 + 0.2j), 1.0)
    with pytest.raises(TypeError, match="gradients need a scalar float result"):
        ys.grad(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ys.YotaError):
        ys.grad(lambda x: (x, x), 1.0)

    def fun(a, b):
        a[1] = b
        return np.sum(a)
    with pytest.raises(TypeError, match="would change the caller's array a in place") as info:
        ys.grad(fun, np.ones(5), 3.0)
    assert isinstance(info.value, ys.UnsupportedSyntax)


def test_a_gradient_of_a_function_defined_inside_the_compiled_one():
    """autograd's grad(lambda y: x * y)(2.0) inside the differentiated function: the message
    blamed 'ys.grad itself, a bound method, or struct arguments', then said it is not compiled;
    now the lambda is lifted (frontend/local_gradients.py) and differentiated through ``x``. A
    local function that reads another one is still refused, naming the line and the fix, which
    works (the suggestion is checked too)."""
    def fun(x):
        inner_fun = lambda y: x * y    # noqa: E731
        return x * ys.gradient(inner_fun)(2.0)
    assert ys.grad(fun, 1.5)[1][0] == pytest.approx(2 * 1.5)       # d(x * x)/dx

    def reads_a_local(x):
        scale = lambda y: y * x        # noqa: E731
        inner_fun = lambda y: scale(y) * 2.0    # noqa: E731
        return x * ys.gradient(inner_fun)(2.0)
    with pytest.raises(ys.UnsupportedSyntax) as info:
        ys.grad(reads_a_local, 1.0)
    text = str(info.value)
    assert "in reads_a_local: ys.gradient of a lambda defined inside the function being " \
           "compiled" in text
    assert "return x * ys.gradient(inner_fun)(2.0)" in text and "(2.0, x)" in text

    def fixed(x):
        return x * ys.gradient(OUTSIDE)(2.0, x)
    assert ys.grad(fixed, 1.5)[1][0] == pytest.approx(2 * 1.5)       # d(x * x)/dx


OUTSIDE = lambda y, x: x * y    # noqa: E731
