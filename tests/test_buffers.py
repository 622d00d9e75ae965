"""Generated code with planned memory (work arrays, in-place updates, out=) and scalar mode,
checked against the plain form (buffers=False), across repeated and concurrent calls."""
from __future__ import annotations

import re
import sys
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.memory_report import allocated

from .programs import custom, loops, models
from .test_gradcheck import PROGRAMS


def mlp_args(rng, batch=16):
    return (rng.standard_normal((20, 12)) * 0.3, rng.standard_normal(12), rng.standard_normal((12, 5)) * 0.3,
            rng.standard_normal(5), rng.standard_normal((batch, 20)), np.eye(5)[rng.integers(0, 5, batch)])


def assert_same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, dict):
            assert g.keys() == e.keys()
            assert_same(list(g.values()), list(e.values()))
        elif e is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("case", PROGRAMS, ids=lambda c: c.name)
def test_buffered_and_plain_forms_agree_call_after_call(case):
    args = case.make_args(np.random.default_rng(3))
    other = case.make_args(np.random.default_rng(4))
    fast = compile_grad(case.fn, args, check=True)
    plain = compile_grad(case.fn, args, check=True, buffers=False)
    for plain_text in ("out=", "_work_arrays", ".tolist()", "WORK_ARRAYS"):
        assert plain_text not in plain.text
    first = fast.fn(*args)
    if case.name != "guard_taken":
        assert_same(fast.fn(*other), plain.fn(*other))
        assert_same(first, plain.fn(*args))      # not overwritten by a call on other arguments
    assert_same(fast.fn(*args), plain.fn(*args))
    assert_same(first, plain.fn(*args))          # the first call's arrays were not overwritten


def test_mlp_is_written_in_place_into_work_arrays():
    text = compile_grad(models.mlp, mlp_args(np.random.default_rng(0)), wrt={0, 1, 2, 3}).text
    assert "    h = xp.matmul(X, W1, out=buf1)\n    h += b1\n    xp.tanh(h, out=h)\n" in text
    assert "dW1 = xp.matmul(X.T, " in text and "out=_result(out, 0, (20, 12)))" in text
    assert "def mlp_grad(W1, b1, W2, b2, X, labels, *, out=None):" in text
    assert "import threading" in text and "_local = threading.local()" in text
    assert "Work arrays: " in text and "per thread" in text
    assert "(20, 12)" not in text.split("WORK_ARRAYS = [")[1].split("]")[0]     # returned, not held


def test_out_arrays_are_filled_and_returned():
    args = mlp_args(np.random.default_rng(0))
    df = ys.simplegrad(models.mlp, *args)
    value, *grads = df(*args)
    out = [np.empty_like(g) for g in grads]
    out[5] = None                                   # no array for labels: a new one comes back
    value2, *grads2 = df(*args, out=out)
    assert value2 == value
    for k, (g, o, g2) in enumerate(zip(grads, out, grads2)):
        assert g2 is o if o is not None else g2 is not g
        np.testing.assert_array_equal(g2, g)
    with pytest.raises(TypeError, match=r"out\[0\] must be float64\[20, 12\]"):
        df(*args, out=[np.empty((3, 3))] + out[1:])


def test_returned_arrays_are_fresh_on_each_call():
    args = mlp_args(np.random.default_rng(0))
    df = ys.simplegrad(models.mlp, *args)
    first = df(*args)
    kept = [np.copy(g) for g in first[1:]]
    second = df(*mlp_args(np.random.default_rng(1)))
    for a, b, k in zip(first[1:], second[1:], kept):
        assert a is not b and not np.shares_memory(a, b)
        np.testing.assert_array_equal(a, k)


def test_threads_each_get_their_own_work_arrays():
    inputs = [mlp_args(np.random.default_rng(i), batch=64) for i in range(4)]
    df = ys.simplegrad(models.mlp, *inputs[0])
    expected = [df(*a) for a in inputs]
    errors = []

    def work(k):
        for _ in range(30):
            got = df(*inputs[k])
            if not all(np.array_equal(g, e) for g, e in zip(got, expected[k])):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def allocated_during(fn) -> int:
    fn()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak - base


def test_steady_state_allocates_the_returned_arrays_or_nothing_with_out():
    args = mlp_args(np.random.default_rng(0), batch=256)
    df = ys.simplegrad(models.mlp, *args, wrt={0, 1, 2, 3})
    grads = df(*args)[1:5]
    returned = sum(g.nbytes for g in grads)
    out = [np.empty_like(g) for g in grads] + [None, None]
    # numpy's own iteration buffer for a broadcasting ufunc is 64 KB; no array is allocated
    fresh = allocated_during(lambda: df(*args))
    assert fresh < returned + 80_000
    assert allocated_during(lambda: df(*args, out=out)) < 80_000
    plain = ys.simplegrad(models.mlp, *args, wrt={0, 1, 2, 3}, buffers=False)
    assert allocated_during(lambda: plain(*args)) > fresh + 50_000     # its temporaries


def test_memory_report_lists_the_work_arrays():
    args = mlp_args(np.random.default_rng(0))
    report = ys.memory_report(ys.simplegrad(models.mlp, *args))
    assert report.bytes == sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d, _ in report.arrays) > 0
    assert str(report).startswith(f"mlp_grad: {len(report.arrays)} work arrays per thread")
    assert "h" in report.arrays[0][2]
    # the arrays the module made once: each its own bytes, by name (ones vectors, 0-d numbers)
    df = ys.simplegrad(models.mlp, *args)
    module = sys.modules[df.__module__]
    assert report.constants and all(size == getattr(module, name).nbytes
                                    for name, size in report.constants)
    assert report.constant_bytes == sum(size for _, size in report.constants)
    assert str(report).splitlines()[-1].startswith(
        f"  and {len(report.constants)} arrays made once by the module")
    plain = ys.memory_report(ys.simplegrad(models.mlp, *args, buffers=False))
    assert plain.bytes == 0 and plain.constant_bytes == 0


def test_polynomial_runs_on_python_floats():
    x = np.random.default_rng(0).standard_normal(8)
    df = ys.simplegrad(models.polynomial, x)
    text = ys.source(df)
    assert "    x0, x1, x2, x3, x4, x5, x6, x7 = x.tolist()\n" in text
    # each element is written once, as one expression: no zeros, no +=, no negation of its own
    backward = [line for line in text.split("# -- backward --")[1].splitlines()
                if not line.lstrip().startswith("#")]
    assert not any("0.0" in line or "+=" in line or "= -" in line for line in backward)
    assert "    dx = [\n        3.0 * (t17 * x5) - t12,\n        3.0 * (t37 * x6) - t32,\n" \
        "        t3 - 3.0 * (t8 * x7),\n" in text                    # an element a line
    # the floats go straight into the returned array: one xp.asarray, or the caller's out=
    # (``a[...] = list`` stores element by element: no array made on the way, issue 14)
    assert "    if out is None or (dx_out := out[0]) is None:\n        dx = xp.asarray(dx)\n" \
        "    else:\n        dx_out[...] = dx\n        dx = dx_out\n" in text
    # the common out= (a list or tuple of arrays made for it) is told apart inline, each entry
    # read once
    assert "        if ((out.__class__ is not list and out.__class__ is not tuple) or len(out) != 1\n" \
        "                or x.base is not None\n" \
        "                or (out0 := out[0]).__class__ is not xp.ndarray or out0.base is not None\n" \
        "                or out0.shape != (8,) or out0.dtype is not _float64 or not out0.flags.writeable\n" \
        "                or out0 is x):\n            _check_out('polynomial_grad', out, 1, [x], " \
        "[(0, (8,), _float64)], ())\n" in text
    assert "return _float64_scalar(polynomial), dx\n" in text    # numpy's float64, as traced
    assert "x.dtype != _float64" in text and "\n_float64 = xp.dtype(xp.float64)\n" in text
    assert "\n_float64_scalar = xp.float64\n" in text
    assert "t8 = x5 * x5" in text                      # x[5] ** 2, exactly as numpy squares
    value, dx = df(x)
    plain_value, plain_dx = ys.simplegrad(models.polynomial, x, buffers=False)(x)
    assert type(value) is np.float64 and value == plain_value == models.polynomial(x)
    assert type(dx) is np.ndarray and dx.dtype == np.float64 and dx.shape == (8,)
    np.testing.assert_array_equal(dx, plain_dx)
    for _ in range(3):                                   # call after call, with and without out=
        mine = np.full(8, np.nan)
        value2, dx2 = df(x, out=[mine])
        assert dx2 is mine and value2 == value
        np.testing.assert_array_equal(mine, plain_dx)
        value3, dx3 = df(x, out=[None])
        assert type(dx3) is np.ndarray and dx3 is not mine
        np.testing.assert_array_equal(dx3, plain_dx)
    with pytest.raises(TypeError, match=r"out\[0\] must be float64\[8\]"):
        df(x, out=[np.empty(8, np.float32)])
    with pytest.raises(ValueError, match="shares memory with an argument"):
        df(x, out=[x])


def test_scalar_mode_keeps_numpy_semantics_where_python_differs():
    def ratio(x):
        return x[0] / x[1] + x[2] * x[0]

    def mixed(x, y):
        return np.sum(x[0] * y) + x[1]

    x = np.array([1.0, 0.5, 2.0])
    df = ys.simplegrad(ratio, x)
    assert "xp.divide(x0, x1)" in ys.source(df)
    with np.errstate(divide="ignore", invalid="ignore"):
        value, dx = df(np.array([1.0, 0.0, 2.0]))     # no ZeroDivisionError: numpy's inf
    assert np.isinf(value) and np.isinf(dx[0])
    text = ys.source(ys.simplegrad(mixed, x, np.ones(3, np.float32)))
    assert ".tolist()" not in text                     # x[0] * float32 array: stays numpy


def powers(x):
    return x[0] ** 3 * x[1] + x[2] ** 5 - x[3] ** 4 + x[1] ** -1 + x[4] ** 2


def quotients(x):
    return x[0] / x[1] + np.exp(x[2]) * x[3] - 2.0 ** x[4] + x[1] * x[4]


@pytest.mark.parametrize("f, point", [
    (powers, [1e200, 2.0, 1e100, 1e80, 3.0]),       # x ** 3, x ** 5, x ** 4 overflow: inf
    (powers, [-1e200, 2.0, -1e100, -1e80, 1e160]),  # -inf, and x ** 2 overflowing
    (powers, [2.0, 0.0, 1.5, 0.5, 1.0]),            # 0.0 ** -1: inf, not ZeroDivisionError
    (powers, [np.inf, np.nan, -np.inf, 1.0, 2.0]),
    (powers, [1e-200, -1e-120, 1e-70, 1e-90, 1e-200]),     # underflow to 0.0
    (quotients, [1.0, 0.0, 800.0, 2.0, 2000.0]),    # division by zero, exp(800), 2.0 ** 2000
    (quotients, [0.0, 0.0, -np.inf, np.nan, -np.inf]),
])
def test_scalar_mode_gives_numpy_values_where_python_raises(f, point):
    """Scalar mode (Python floats) computes numpy's values, inf and nan included, where
    Python's own operations would raise (``1e200 ** 3.0``: OverflowError; ``0.0 ** -1.0``,
    ``1.0 / 0.0``: ZeroDivisionError): the same bits as the plain form's numpy scalars."""
    x = np.array(point)
    fast = ys.simplegrad(f, np.linspace(0.5, 1.5, 5))
    plain = ys.simplegrad(f, np.linspace(0.5, 1.5, 5), buffers=False)
    assert "x.tolist()" in ys.source(fast)
    with np.errstate(all="ignore"):
        expected, (dx,) = f(x), plain(x)[1:]
        for _ in range(2):
            value, dx_fast = fast(x)
            assert type(value) is np.float64
            np.testing.assert_array_equal(value, expected)
            np.testing.assert_array_equal(dx_fast, dx)
            np.testing.assert_array_equal(fast(x, out=[np.empty(5)])[1], dx)


def test_scalar_mode_powers_overflow_into_inf_as_numpy_does():
    """The seed's polynomial at ``x[7] = 1e200``: ``x7 ** 3.0`` would raise OverflowError on
    Python floats; the generated code gives numpy's inf, with numpy's warning, and raises
    numpy's FloatingPointError under ``np.errstate(over="raise")`` as the plain form does."""
    x = np.random.default_rng(0).standard_normal(8)
    fast = ys.simplegrad(models.polynomial, x)
    plain = ys.simplegrad(models.polynomial, x, buffers=False)
    assert "    try:\n        t3 = x7 ** 3.0\n    except OverflowError:\n" \
        "        t3 = float(xp.power(x7, 3.0))\n" in ys.source(fast)
    x[7] = 1e200
    with pytest.warns(RuntimeWarning, match="overflow"):
        value, dx = fast(x)
    with np.errstate(over="ignore"):
        expected, expected_dx = plain(x)
        assert value == expected == models.polynomial(x) == np.inf
    np.testing.assert_array_equal(dx, expected_dx)
    assert np.isinf(dx[[0, 2, 5, 7]]).all() and np.isfinite(dx[[1, 3, 4, 6]]).all()
    for df in (fast, plain):
        with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
            df(x)


def test_design_example_matches_the_buffered_golden_file():
    """The buffered form of the design example, reviewed like code (plain form: design_loss.py)."""
    from .programs import design
    args = (np.ones((4, 3)), np.ones(4), np.ones((3, 2)), np.ones((4, 2)))
    text = compile_grad(design.loss, args, module_name="design_loss_buffered").text
    assert text == (Path(__file__).parent / "golden" / "design_loss_buffered.py").read_text()


def test_generated_text_is_deterministic():
    args = mlp_args(np.random.default_rng(0))
    assert compile_grad(models.mlp, args).text == compile_grad(models.mlp, args).text


class _Subclass(np.ndarray):
    pass


def _matrix_loss(W, b):
    return np.sum(np.tanh(W @ b) ** 2)


def _delivered_loss(W, b):
    # (db delivered by a copy: the clip's gradient is not written into out=; np.where's was,
    # before its copyto form)
    return np.sum(np.where(W > 0, W, 0.5 * W) @ b) + np.sum(np.clip(b, -0.5, 0.5) ** 2)


@pytest.mark.parametrize("fn", [_matrix_loss, _delivered_loss])
def test_out_entries_are_checked(fn):
    """issue 10 #3: every out= entry is checked (written in place or delivered by a copy):
    shape, dtype, exact type, writeable, no memory shared with an argument or another entry."""
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    df = ys.simplegrad(fn, W, b)
    value, dW, db = df(W, b)
    text = ys.source(df)
    if fn is _delivered_loss:
        assert "_deliver(out, 1," in text            # the path that checked nothing before
    good = [np.empty((3, 4)), np.empty(4)]
    bad_outs = {
        "shape": ([good[0], np.empty((3, 4))], TypeError, r"out\[1\] must be float64\[4\]"),
        "dtype": ([good[0], np.empty(4, np.float32)], TypeError, r"out\[1\] must be float64\[4\]"),
        "type": ([good[0], np.empty(4).view(_Subclass)], TypeError, r"out\[1\] must be"),
        "list": ([np.empty(4)], TypeError, r"one entry per argument \(2\)"),
        "argument": ([W, None], ValueError, r"out\[0\] shares memory with an argument"),
        "view of argument": ([None, W[0]], ValueError, r"out\[1\] shares memory with an argument"),
    }
    read_only = np.empty(4)
    read_only.flags.writeable = False
    bad_outs["read-only"] = ([None, read_only], ValueError, r"out\[1\] is read-only")
    shared = np.empty(16)
    bad_outs["each other"] = ([shared[:12].reshape(3, 4), shared[8:12]], ValueError,
                              r"out\[1\] shares memory with another out= entry")
    for what, (out, error, message) in bad_outs.items():
        before = [None if o is None else np.array(o) for o in out]
        with pytest.raises(error, match=message):
            df(W, b, out=out)
        for o, kept in zip(out, before):     # nothing was written before the check failed
            if o is not None and kept.size:
                np.testing.assert_array_equal(np.asarray(o), kept, err_msg=what)
    got = df(W, b, out=good)
    assert got[1] is good[0] and got[2] is good[1]
    np.testing.assert_allclose(got[1], dW, rtol=1e-13)
    np.testing.assert_allclose(got[2], db, rtol=1e-13)
    np.testing.assert_allclose(df(W, b, out=[None, None])[2], db, rtol=1e-13)


def test_zero_d_gradients_go_into_out_and_are_fresh():
    def f(a, x):
        v = a[None] * x
        return np.sum(v * v)
    a, x = np.array(0.7), np.arange(1.0, 4.0)
    df = ys.simplegrad(f, a, x)
    first = df(a, x)
    df(np.array(-2.0), x)
    plain = ys.simplegrad(f, a, x, buffers=False)(a, x)
    assert_same(first, plain)
    out = [np.empty(()), np.empty(3)]
    got = df(a, x, out=out)
    assert got[1] is out[0] and got[2] is out[1]
    assert_same(got, plain)


def test_one_out_array_for_two_gradients_is_refused():
    def f(a, b):
        return np.sum(np.sin(a) * b)
    a, b = np.linspace(0.1, 0.9, 4), np.linspace(-1.0, 1.0, 4)
    df = ys.simplegrad(f, a, b)
    g = np.zeros(4)
    with pytest.raises(ValueError, match=r"out\[1\] shares memory with another out= entry"):
        df(a, b, out=[g, g])
    with pytest.raises(ValueError, match=r"out\[0\] shares memory with an argument"):
        df(a, b, out=[b, None])
    assert not g.any()
    _, da, db = df(a, b, out=[g, None])
    assert da is g
    np.testing.assert_allclose(da, np.cos(a) * b, rtol=1e-13)
    np.testing.assert_allclose(db, np.sin(a), rtol=1e-13)


def _tanh_of_rotated(x, w):
    return np.sum(np.tanh(custom.rotate(x) * w))


@pytest.mark.parametrize("buffers", [True, False])
def test_a_user_primitive_returning_a_view_is_copied_not_written_through(buffers):
    """custom.rotate returns np.rot90(a), a view of its argument, without declaring it: the
    analysis did not know, and the buffered form wrote dw over it, into the caller's x."""
    x, w = np.arange(6.0).reshape(3, 2) / 5 + 0.1, np.cos(np.arange(6.0)).reshape(2, 3)
    kept = x.copy()
    df = compile_grad(_tanh_of_rotated, (x, w), check=True, buffers=buffers).fn
    for _ in range(2):
        value, dx, dw = df(x, w)
        np.testing.assert_array_equal(x, kept)
        assert not np.shares_memory(dw, x) and not np.shares_memory(dx, x)
        np.testing.assert_allclose(dx, numerical_grad(_tanh_of_rotated, (x, w), 0), atol=1e-7)
        np.testing.assert_allclose(dw, numerical_grad(_tanh_of_rotated, (x, w), 1), atol=1e-7)


def test_only_0d_gradients_still_take_out():
    """Fuzzer G5/G6: with every gradient 0-d the buffered function had no out= parameter, and a
    0-d entry was ignored where it had one."""
    def f(a, b):
        return np.sum(np.sin(a) * b)
    a, b = np.array(0.3), np.array(-1.5)
    df = ys.simplegrad(f, a, b)
    out = [np.full((), np.nan), None]
    value, da, db = df(a, b, out=out)
    assert da is out[0] and float(da) == np.cos(0.3) * -1.5
    assert db is not out[0] and float(db) == np.sin(0.3)
    with pytest.raises(TypeError, match=r"out\[1\] must be float64\[\]"):
        df(a, b, out=[None, np.empty(1)])


def _dict_loss(p, x):
    return np.sum(np.tanh(p["W"] @ x + p["b"]))


def test_out_entries_of_a_struct_argument_are_checked():
    p, x = {"W": np.ones((3, 4)) * 0.1, "b": np.zeros(3)}, np.arange(4.0)
    df = ys.simplegrad(_dict_loss, p, x)
    _, dp, dx = df(p, x)
    o = {("W",): np.empty((3, 4)), ("b",): np.empty(3)}
    _, dp2, _ = df(p, x, out=[o, None])
    assert dp2[("W",)] is o[("W",)] and dp2[("b",)] is o[("b",)]
    np.testing.assert_allclose(dp2[("W",)], dp[("W",)], rtol=1e-13)
    with pytest.raises(ValueError, match=r"out\[\(0, \('W',\)\)\] shares memory with an argument"):
        df(p, x, out=[{("W",): p["W"]}, None])
    with pytest.raises(TypeError, match=r"out\[0\] must be None or a dict"):
        df(p, x, out=[np.empty((3, 4)), None])
    _, dp3, _ = df(p, x, out=[{("b",): o[("b",)]}, None])     # a path left out: a new array
    np.testing.assert_allclose(dp3[("W",)], dp[("W",)], rtol=1e-13)


LAYOUTS = {
    "fortran": np.asfortranarray,
    "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],          # every other element
    "read-only": lambda a: np.lib.stride_tricks.as_strided(a, writeable=False),
}


def array_args(case) -> list[int]:
    args = case.make_args(np.random.default_rng(5))
    return [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim]


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
@pytest.mark.parametrize("case", [c for c in PROGRAMS if array_args(c)], ids=lambda c: c.name)
def test_fortran_strided_and_readonly_arguments_give_the_same_results(case, buffers):
    args = case.make_args(np.random.default_rng(5))
    df = compile_grad(case.fn, args, buffers=buffers).fn
    expected = df(*args)
    kept = [None if e is None else np.copy(e) for e in expected]
    arrays = array_args(case)
    for name, layout in LAYOUTS.items():
        changed = [layout(a) if k in arrays else a for k, a in enumerate(args)]
        assert all(np.array_equal(c, a) for c, a in zip(changed, args))
        if name == "strided":
            assert not any(changed[k].flags.c_contiguous for k in arrays if args[k].size > 1)
        got = df(*changed)
        for g, e in zip(got, kept):
            if e is None:
                assert g is None
            else:
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=name)


def test_nan_and_inf_arguments_propagate_as_in_numpy():
    def f(x, y):
        return np.sum(np.tanh(x) * y) + np.sum(np.exp(x))

    x, y = np.array([0.5, np.nan, np.inf, -np.inf]), np.array([2.0, 3.0, 4.0, 5.0])
    with np.errstate(all="ignore"):
        value = f(x, y)
        dx = (1 - np.tanh(x) ** 2) * y + np.exp(x)         # [.., nan, inf, 0]
        dy = np.tanh(x)                                      # [.., nan, 1, -1]
    for buffers in (True, False):
        df = ys.simplegrad(f, np.ones(4), np.ones(4), buffers=buffers)
        with np.errstate(all="ignore"):
            for _ in range(2):
                got = df(x, y)
                np.testing.assert_array_equal(got[0], value)
                np.testing.assert_allclose(got[1], dx, rtol=1e-14)
                np.testing.assert_allclose(got[2], dy, rtol=1e-14)
    p = np.random.default_rng(0).standard_normal(8)
    p[3] = np.nan
    fast, plain = ys.simplegrad(models.polynomial, p), ys.simplegrad(models.polynomial, p, buffers=False)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fast(p)[1], plain(p)[1])      # scalar mode: same nans
        assert np.isnan(fast(p)[0]) and np.isnan(models.polynomial(p))


# -- cache-blocked elementwise chains (codegen/blocks.py) --------------------------------------

def long_chain(x):
    s = np.sin(x)
    g = np.exp(-0.5 * x * x)
    return np.sum(s * g + np.tanh(x) ** 2)


def chain_then_mean(x, y):
    t = np.tanh(x * y + 1.0)
    return np.mean(t * t) * np.sum(np.cos(t))       # two totals, then a product of them


def chain_into_a_reduction_along_an_axis(A):
    e = np.exp(np.sin(A) * 0.5)
    return np.sum(np.log1p(e).sum(axis=1) ** 2)


@pytest.mark.parametrize("fn, shapes", [
    (long_chain, [(4 * 32768 + 5,)]),
    (chain_then_mean, [(4 * 32768 + 1,), (4 * 32768 + 1,)]),
    (chain_into_a_reduction_along_an_axis, [(2500, 60)]),
])
def test_long_elementwise_chains_run_in_blocks_and_agree_with_the_plain_form(fn, shapes):
    from yota_s2s.codegen import blocks
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s) for s in shapes]
    fast = ys.simplegrad(fn, *args)
    plain = ys.simplegrad(fn, *args, buffers=False)
    text = ys.source(fast)
    assert "in blocks of" in text and "for start in range(0, " in text
    assert "in blocks of" not in ys.source(plain)
    if fn is long_chain:            # every work array lives inside the loop: one block each,
        # and the sum of each block goes through a 0-d one (t5.sum(out=buf9)[()])
        assert {s for s, _, _ in ys.memory_report(fast).arrays} == {(blocks.BLOCK,), ()}
        assert re.search(r"chain \+= t\d+\.sum\(out=buf\d+\)\[\(\)\]", text)
    expected = plain(*args)
    for _ in range(2):                                          # work arrays reused
        got = fast(*args)
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
        for g, e in zip(got[1:], expected[1:]):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-15)
    out = [np.empty_like(a) for a in args]
    got = fast(*args, out=out)
    assert all(g is o for g, o in zip(got[1:], out))
    for g, e in zip(got[1:], expected[1:]):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-15)


def test_short_chains_stay_whole():
    x = np.random.default_rng(0).standard_normal(1000)
    assert "in blocks of" not in ys.source(ys.simplegrad(long_chain, x))


def logistic_all(w, X, y):
    return np.mean(np.log(1 + np.exp(-y * (X @ w))))


def test_a_tall_outer_product_gradient_is_returned_in_fortran_order():
    rng = np.random.default_rng(2)
    args = (rng.standard_normal(8), rng.standard_normal((400, 8)), np.sign(rng.standard_normal(400)))
    fast = ys.simplegrad(logistic_all, *args)
    plain = ys.simplegrad(logistic_all, *args, buffers=False)
    assert "order='F'" in ys.source(fast)
    got, expected = fast(*args), plain(*args)
    assert got[2].flags.f_contiguous and not got[2].flags.c_contiguous
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)
    out = [np.empty(8), np.empty((400, 8)), np.empty(400)]       # the caller's C order is kept
    got = fast(*args, out=out)
    assert got[2] is out[1]
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-13, atol=1e-15)
    wide = (rng.standard_normal(400), rng.standard_normal((8, 400)), np.sign(rng.standard_normal(8)))
    assert "order='F'" not in ys.source(ys.simplegrad(logistic_all, *wide))


def eight_reads(x):
    return x[2] * x[7] ** 3 - 3 * x[2] * x[7] * x[5] ** 2 - x[0] * x[5] ** 3 + x[1] * x[3] + x[4] * x[6]


def every_element(x):
    """Every element read, in straight-line code (a ``for`` loop here would be a loop region)."""
    n = x.shape[0]
    return sum(x[i] * x[(i + 1) % n] for i in range(n))


@pytest.mark.parametrize("fn, size, floats", [
    (eight_reads, 64, True), (eight_reads, 96, True), (eight_reads, 97, False),
    (every_element, 200, True),
])
def test_scalar_mode_applies_where_floats_measured_faster(fn, size, floats):
    """A vector read whole is faster as Python floats at every length; a few reads of a long
    one are not (``x.tolist()`` costs every element): 8 reads pay up to 96 elements."""
    x = np.random.default_rng(1).standard_normal(size)
    fast = ys.simplegrad(fn, x)
    assert ("x.tolist()" in ys.source(fast)) is floats
    assert_same(fast(x), ys.simplegrad(fn, x, buffers=False)(x))


def test_chains_stay_whole_on_a_gpu():
    """On cupy each block would be a kernel launch per statement: no blocks there."""
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    x = np.random.default_rng(0).standard_normal(4 * 32768 + 5)
    _, tape = gradient_tape(long_chain, [x])
    assert "in blocks of" in write_module(tape, buffers=True)
    assert "in blocks of" not in write_module(tape, device="cuda", buffers=True)


# -- sine and cosine from one tan of the half angle, in blocked chains (codegen/halfangle.py) ---

HALF = 4 * 32768 + 3            # a chain this long is blocked (blocks.MIN_SIZE)


def sin_times(x, y):
    """The gradient of np.sum(np.sin(x) * y) at y = 1 is (cos(x), sin(x)), both exact products
    with ones: the half-angle forms' own values."""
    return np.sum(np.sin(x) * y)


def sin_and_cos(x, y):
    return halfangle_module(sin_times, x, y)(x, y)[1:]


def halfangle_module(fn, *args, buffers=True):
    from yota_s2s.codegen import halfangle
    old, halfangle.ENABLED = halfangle.ENABLED, True      # written so on any machine
    try:
        return ys.simplegrad(fn, *args, buffers=buffers)
    finally:
        halfangle.ENABLED = old


def long_double_or_skip():
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("no extended long double here to compare against")


@pytest.mark.parametrize("low, high", [(1e-300, 1e-8), (1e-8, 1.0), (1.0, 10.0), (10.0, 1e3),
                                       (1e3, 1e6), (1e6, 1e22), (1e22, 1e300)])
def test_half_angle_sin_within_3_ulp_and_cos_within_4e_16(low, high):
    long_double_or_skip()
    rng = np.random.default_rng(int(np.log10(high)) + 400)
    x = np.exp(rng.uniform(np.log(low), np.log(high), HALF)) * rng.choice([-1.0, 1.0], HALF)
    cos, sin = sin_and_cos(x, np.ones(HALF))
    exact = x.astype(np.longdouble)
    ulps = np.abs((sin - np.sin(exact)) / np.spacing(np.abs(np.sin(x))))
    assert ulps.max() <= 3.0
    assert np.abs(cos - np.cos(exact)).max() <= 4e-16
    # relative: numpy's cos where |cos x| < 2**-8, so within 3e-16 / 2**-8 elsewhere
    assert np.abs((cos - np.cos(exact)) / np.cos(exact)).max() <= 8e-14
    assert np.abs(sin).max() <= 1.0 and np.abs(cos).max() <= 1.0


def test_half_angle_forms_keep_signed_zeros_and_exact_values():
    x = np.zeros(HALF)
    special = [0.0, -0.0, np.pi, -np.pi, 1e-310, -1e-310, 1.5, 1e-300]
    x[:len(special)] = special
    cos, sin = sin_and_cos(x, np.ones(HALF))
    assert list(np.signbit(sin[:2])) == [False, True] and sin[0] == 0.0 and sin[1] == 0.0
    np.testing.assert_array_equal(cos[:4], [1.0, 1.0, -1.0, -1.0])
    np.testing.assert_allclose(sin[2:4], [np.sin(np.pi), -np.sin(np.pi)], rtol=1e-15)
    assert abs(sin[4] - 1e-310) <= 5e-324 and abs(sin[5] + 1e-310) <= 5e-324   # subnormal: x/2
    np.testing.assert_allclose(sin[6:8], np.sin(special[6:]), rtol=3e-16)


def test_half_angle_forms_give_nan_and_numpys_warning_for_inf_and_nan():
    x = np.random.default_rng(0).standard_normal(HALF)
    x[:3] = [np.inf, -np.inf, np.nan]
    y = np.ones(HALF)
    fast = halfangle_module(sin_times, x, y)
    plain = ys.simplegrad(sin_times, x, y, buffers=False)
    for df in (fast, plain):
        with pytest.warns(RuntimeWarning, match="invalid value"):
            value, cos, sin = df(x, y)
        assert np.isnan(value) and np.isnan(cos[:3]).all() and np.isnan(sin[:3]).all()
        np.testing.assert_allclose(sin[3:], np.sin(x[3:]), rtol=3e-15, atol=1e-300)
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
            df(x, y)
    x[:2] = 0.0                               # nan alone: no warning in either form
    with np.errstate(invalid="raise"):
        assert np.isnan(fast(x, y)[1][2]) and np.isnan(plain(x, y)[1][2])


def test_the_chains_gradient_with_half_angle_forms_matches_finite_differences():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(HALF) * 3.0
    df = halfangle_module(long_chain, x)
    text = ys.source(df)
    assert "sin and cos of x from one tan of the half angle" in text
    assert "xp.sin(" not in text and "xp.tan(" in text and "xp.cos(x[k], out=t10, where=near)" in text
    assert "xp.sin(" in ys.source(ys.simplegrad(long_chain, x, buffers=False))   # for review
    value, dx = df(x)
    assert value == pytest.approx(long_chain(x), rel=1e-14)

    def terms(x):           # long_chain(x) is their sum: its gradient, theirs element by element
        return np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(x) ** 2
    h = 1e-5
    np.testing.assert_allclose(dx, (terms(x + h) - terms(x - h)) / (2 * h), rtol=0, atol=1e-9)


def cos_of_sin(x, y):
    return np.sum(np.cos(np.sin(x) * y) * y)


def test_half_angle_work_arrays_are_one_block_each_and_shared_by_later_operands():
    """sin(x) forward with cos(x) backward share one pair of work arrays (t_x, d_x); forward
    only, cos(sin(x) * y) reuses sin(x)'s pair, free by then, and is written over its operand
    (numpy's cosines next to its zeros go into ``gap`` first)."""
    from yota_s2s.codegen import blocks, halfangle
    x = np.random.default_rng(1).standard_normal(HALF)
    df = halfangle_module(long_chain, x)
    held = [v for _, _, v in ys.memory_report(df).arrays]
    assert "t_x" in held and "d_x" in held
    assert {s for s, _, _ in ys.memory_report(df).arrays} == {(blocks.BLOCK,), ()}   # (): sums
    y = np.ones(HALF)
    old, halfangle.ENABLED = halfangle.ENABLED, True
    try:
        f = ys.compile(cos_of_sin, x, y)
    finally:
        halfangle.ENABLED = old
    held = [v for _, _, v in ys.memory_report(f).arrays]
    assert "t_x, t_t1" in held and "d_x, d_t1" in held
    assert "xp.copyto(t1, gap, where=near)" in ys.source(f)
    for z in (x, x * 1e4):
        assert f(z, y) == pytest.approx(cos_of_sin(z, y), rel=1e-13)


def sin_of_a_product(x, c):
    a = x * c
    v = np.sin(a) * 0.25 + a - c
    return np.sum(np.tanh(v) * v)


def test_half_angle_cosine_written_over_its_operand_reads_it_first(monkeypatch):
    """Regression (fuzzer seed 41931, blocks of 4): ``t10 = xp.cos(t2, out=t2)`` became
    ``t10 = xp.subtract(2.0, d, out=t2)`` before ``xp.cos(t2, out=t10, where=near)`` read t2:
    numpy's cosines next to the zeros go into ``gap`` first where the result overwrites x."""
    from yota_s2s.codegen import blocks, halfangle
    monkeypatch.setattr(halfangle, "ENABLED", True)
    monkeypatch.setattr(blocks, "BLOCK", 4)
    monkeypatch.setattr(blocks, "MIN_SIZE", 8)
    rng = np.random.default_rng(3)
    x, c = rng.standard_normal((3, 4)), np.linspace(-1.144, 0.786, 4)
    x[0, 0] = np.pi / 2 / c[0]                  # a cosine next to its zero, from numpy
    fast = ys.simplegrad(sin_of_a_product, x, c)
    assert "xp.copyto(" in ys.source(fast) and "where=near" in ys.source(fast)
    expected = ys.simplegrad(sin_of_a_product, x, c, buffers=False)(x, c)
    for _ in range(2):
        got = fast(x, c)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)


def test_half_angle_forms_only_where_they_pay(monkeypatch):
    """float32 sin and cos are numpy SIMD loops already; the plain form, short chains and cupy
    keep xp.sin and xp.cos; the forms follow numpy's CPU dispatch of float64 tan."""
    from yota_s2s.codegen import halfangle
    introspect = pytest.importorskip("numpy.lib.introspect")
    monkeypatch.setattr(halfangle, "ENABLED", True)
    x = np.random.default_rng(2).standard_normal(HALF)
    assert "xp.tan(" not in ys.source(ys.simplegrad(long_chain, x.astype(np.float32)))
    assert "xp.tan(" not in ys.source(ys.simplegrad(long_chain, x[:1000]))
    assert "xp.tan(" not in ys.source(ys.simplegrad(long_chain, x, buffers=False))
    monkeypatch.setattr(halfangle, "ENABLED", False)
    assert "xp.sin(" in ys.source(ys.simplegrad(long_chain, x))
    detect = halfangle.simd_tan.__wrapped__
    monkeypatch.setattr(introspect, "opt_func_info", lambda **_: {"tan": {"dd": {
        "current": "baseline(X86_V2)", "available": "baseline(X86_V2)"}}})
    assert detect() is False
    monkeypatch.setattr(introspect, "opt_func_info", lambda **_: {"tan": {"dd": {
        "current": "AVX512_SKX", "available": "AVX512_SKX baseline(SSE SSE2 SSE3)"}}})
    assert detect() is True


def test_recomputed_forward_values_hold_less_memory_and_change_no_bit():
    """issue 14, peak memory: logistic regression's buffered gradient keeps 6 arrays of the
    data's length (8 before recompute), and returns what the plain form returns, call after
    call."""
    def logreg(w, b, X, y):
        p = 1 / (1 + np.exp(-(X @ w + b)))
        return -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))

    r = np.random.default_rng(1)
    args = (r.standard_normal(20) * 0.1, 0.1, r.standard_normal((10000, 20)),
            (r.random(10000) > 0.5) * 1.0)
    fast = ys.simplegrad(logreg, *args, wrt={0, 1})
    plain = ys.simplegrad(logreg, *args, buffers=False, wrt={0, 1})
    text = ys.source(fast)
    assert text.count("# rule recompute: a cheap forward value") == 2
    assert "t10 = xp.subtract(_1_0, p, out=buf5)\n    t10 += _1e_09\n" in text
    report = ys.memory_report(fast)
    assert [shape for shape, _, _ in report.arrays] == [(10000,)] * 6 + [()]   # (): b, sums
    for _ in range(3):
        args = (r.standard_normal(20) * 0.1, float(r.standard_normal()),
                r.standard_normal((10000, 20)), (r.random(10000) > 0.5) * 1.0)
        got, want = fast(*args), plain(*args)
        assert got[0] == want[0] and got[2] == want[2]
        np.testing.assert_array_equal(got[1], want[1])


def test_work_arrays_live_in_returned_arrays_not_yet_written():
    """issue 14, peak memory: the seed's ``W @ x`` is dead before ``dx`` is written, so it
    lives in that array's memory, which the call allocates anyway, instead of a work array
    held between calls. ``dW`` is the row sums of ``x`` in every row: they are made in its
    first row and copied to the others, and it is written last, so the column sums of ``W``
    (read while ``dx`` is written) live in its second row until then. Only the 0-d array of
    the sum is held. Call after call, with out= (a strided, an F-ordered and a C-ordered
    array) and without, the values are the plain form's."""
    def seed(W, b, x):
        return np.sum(W @ x + b[:, None])

    r = np.random.default_rng(2)
    args = (r.random((128, 784)), r.random(128), r.random((784, 100)))
    fast = ys.simplegrad(seed, *args)
    plain = ys.simplegrad(seed, *args, buffers=False)
    text = ys.source(fast)
    assert "    buf3, = _work_arrays()\n" in text       # buf3: 0-d, for the sum
    # each returned array made where its first work array is first written (W @ x's numpy
    # broadcasting buffer is allocated before dx is)
    assert "    dx_mem = _result(out, 2, (784, 100))\n" \
           "    buf1 = dx_mem.ravel('K')[0:12800].reshape((128, 100))\n" \
           "    t1 = xp.matmul(W, x, out=buf1)\n" in text
    assert "    dW_mem = _result(out, 0, (128, 784))\n" \
           "    t4 = xp.matmul(x, _ONES_100, out=dW_mem[0])\n" \
           "    buf2 = dW_mem[1:].ravel('K')[0:784].reshape((784,))\n" \
           "    t6 = xp.matmul(_ONES_128, W, out=buf2)\n" in text
    assert text.index("seed = t1.sum(out=buf3)[()]") < text.index("dW_mem = ")
    assert "    dx = dx_mem\n" in text
    assert text.endswith("    dW = dW_mem\n    xp.copyto(dW[1:], t4)\n    return seed, dW, db, dx\n")
    assert [shape for shape, _, _ in ys.memory_report(fast).arrays] == [()]  # (): sum
    assert ys.memory_report(fast).constant_bytes == (100 + 128) * 8        # the ones vectors
    assert "2 more in the memory of returned gradients" in text
    assert "t4: in the first row of the gradient it is broadcast into" in text
    # the plain form copies dW last too, from the broadcast
    assert ys.source(plain).endswith(
        "    dW = xp.broadcast_to(x.sum(axis=1), (128, 784)).copy()\n    return seed, dW, db, dx\n")
    for call in range(4):
        args = (r.random((128, 784)), r.random(128), r.random((784, 100)))
        want = plain(*args)
        if call == 0:
            out = None
        elif call == 1:
            out = [np.empty((128, 784), order="F"), None, np.empty((784, 200))[:, ::2]]
        else:
            out = [np.empty((128, 784)), np.empty(128), np.empty((784, 100))]
        fresh = [np.copy(g) for g in fast(*args)[1:]]
        got = fast(*args, out=out)
        assert got[0] == want[0]
        for g, f, w in zip(got[1:], fresh, want[1:]):
            np.testing.assert_array_equal(g, f)            # with out= or without: the same bits
            np.testing.assert_allclose(g, w, rtol=1e-13)   # row sums as BLAS products
        if out is not None:
            assert all(o is None or g is o for g, o in zip(got[1:], out))



def _copy_updated_then_broadcast(x0, x2):     # dataflow fuzzer seed 270067, shrunk
    v2 = float(np.mean(x0))
    v4 = np.expand_dims(x0, 0)
    v5 = v4.copy()
    v5[-1] = np.tanh(v4[-1]) * -0.178
    v5[0] += 1.04
    v6 = np.add(v5, v2)
    return np.sum(x2 * v6) * 0.402


def _copy_added_then_broadcast(a, W):
    v = a.copy()
    v += 1.5
    return np.sum(W * v) * 0.5


def _copy_sliced_then_broadcast(a, W):
    v = np.copy(a)
    v[1:] = v[1:] * 2.0
    v[0] += np.tanh(a[2])
    return np.sum(W * (v * 0.3))


def _copy_set_then_broadcast(a, W):
    v = a.copy()
    v[0] = 2.0
    return np.sum(W * v)


@pytest.mark.parametrize("fn, shapes", [
    pytest.param(_copy_updated_then_broadcast, [(), (2, 1)], id="fuzz_270067"),
    pytest.param(_copy_added_then_broadcast, [(5,), (4, 5)], id="added"),
    pytest.param(_copy_sliced_then_broadcast, [(5,), (3, 5)], id="sliced"),
    pytest.param(_copy_set_then_broadcast, [(5,), (3, 5)], id="set")])
def test_a_copy_made_in_a_returned_gradients_first_row_copies_its_operand(fn, shapes):
    """A value copied (``.copy()``, ``np.copy``), updated in place and broadcast into the
    returned ``dW`` lives in ``dW``'s first row (buffers.py ``_heads``). Its copy was written as
    ``dW``'s (``v = dW_mem[0]; xp.copyto(v[1:], dW)``: from ``dW`` before it existed,
    UnboundLocalError): the copy is ``v = dW_mem[0]; xp.copyto(v, a)``, and ``dW``'s the rows
    after the first, last. Both forms give numpy's value and the finite differences, with
    out= too."""
    r = np.random.default_rng(5)
    args = [r.standard_normal(s) for s in shapes]
    fast = compile_grad(fn, args, check=True)
    plain = compile_grad(fn, args, check=True, buffers=False)
    assert "in the first row of the gradient it is broadcast into" in fast.text
    buffered, out = _three_calls(fn, fast, plain, lambda: [r.standard_normal(s) for s in shapes],
                                 lambda: [np.empty(s) for s in shapes])
    assert buffered[2] is out[1]        # dW: made in the caller's array


def _three_calls(fn, fast, plain, draw, outs):
    """Three calls of both forms on new arguments (``draw()``), the last into ``outs()``: each
    gives numpy's value and the finite differences. The last buffered result and its out."""
    for call in range(3):
        args = draw()
        out = outs() if call == 2 else None
        buffered = fast.fn(*args, **({"out": out} if out else {}))
        for got in (buffered, plain.fn(*args)):
            assert got[0] == pytest.approx(fn(*args), rel=1e-13)
            for i, g in enumerate(got[1:]):
                np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-8)
    return buffered, out


def _zeros_in_a_dict_then_set(x, scale):
    state = {"buf": np.zeros(3) + scale}
    state["buf"][0] = x[0] * 2.0
    return np.sum(state["buf"] * x)


def _sum_in_a_dict_then_tail_set(x, s):
    state = {"v": np.cos(x) + s}
    state["v"][1:] = np.tanh(x[:2])
    return np.sum(state["v"] * x)


def _sum_in_a_list_then_set(x, s):
    bufs = [x * 0.5 + s]
    bufs[0][0] = x[1] * 3.0
    return np.sum(bufs[0] * x)


def _zeros_in_a_dict_then_set_then_squared(x, s):
    state = {"buf": np.zeros(3) + s}
    state["buf"][0] = x[0] * 2.0
    return np.sum(state["buf"] ** 2) + np.sum(x)


@pytest.mark.parametrize("fn", [_zeros_in_a_dict_then_set, _sum_in_a_dict_then_tail_set,
                                _sum_in_a_list_then_set, _zeros_in_a_dict_then_set_then_squared],
                         ids=["zeros_set", "tail_set", "list_set", "work_array"])
def test_an_update_on_the_next_line_of_an_unnamed_value_in_planned_memory_keeps_its_name(fn):
    """An unnamed value made in planned memory (``t1 = _result(out, 0, (3,)); t1.fill(0.0);
    t1 += buf2``: in the returned ``dx``'s array; ``t1 = buf1`` in the last case) and updated
    in place on the next line (``state["buf"][0] = ...``): the update was written under the
    name its operand had before the operand took its array's first value's (``t2[0] = t4``,
    never bound: NameError). An in-place update keeps its operand's name (plan.py
    ``_shared_names``). Both forms give numpy's value and the finite differences, with out=
    too."""
    r = np.random.default_rng(7)
    args = [r.standard_normal(3), 0.5]
    fast = compile_grad(fn, args, check=True)
    plain = compile_grad(fn, args, check=True, buffers=False)
    buffered, out = _three_calls(fn, fast, plain,
                                 lambda: [r.standard_normal(3), float(r.standard_normal())],
                                 lambda: [np.empty(3), None])
    assert buffered[1] is out[0]        # dx: made in the caller's array


def _elements_read_twice(x):
    a = 3 * x[0] * x[1] - x[1] ** 2 + 2 * x[0]      # x[0] and x[1]: several reads each
    return a * x[3] - x[-1] * x[0]                  # x[-1] is x[3]; x[2] never read


def test_scalar_mode_writes_each_element_once_with_float_literals():
    x = np.array([0.5, -1.25, 7.0, 2.0])
    fast, plain = ys.simplegrad(_elements_read_twice, x), \
        ys.simplegrad(_elements_read_twice, x, buffers=False)
    text = ys.source(fast)
    code = [line for line in text.split("# -- forward --")[1].splitlines()
            if not line.lstrip().startswith("#")]
    int_literal = re.compile(r"(?<![\w.])\d+ [*+-]|[*+-] \d+(?![\w.])")    # 3 * t, t * 2
    assert "    t2 = 3.0 * x0" in code
    assert not any(int_literal.search(line) or "+=" in line for line in code)
    assert "    dx = [dt1, dt3, 0.0, dt10]" in code    # x[2]: never written, a literal
    plain_code = [line.strip() for line in ys.source(plain).splitlines() if "] += " in line
                  and not line.lstrip().startswith("#")]
    assert plain_code == ["dx[0] += dt1", "dx[-1] += dt10", "dx[1] += dt3"]     # once each
    for args in ([x], [np.array([-2.0, 0.125, 1.0, -0.75])]):
        value, dx = fast(*args)
        plain_value, plain_dx = plain(*args)
        assert value == plain_value == _elements_read_twice(*args)
        np.testing.assert_array_equal(dx, plain_dx)
        x0, x1, _, x3 = args[0]
        a = 3 * x0 * x1 - x1 ** 2 + 2 * x0
        np.testing.assert_allclose(dx, [(3 * x1 + 2) * x3 - x3, (3 * x0 - 2 * x1) * x3, 0.0,
                                        a - x0])
        mine = np.empty(4)
        assert fast(*args, out=[mine])[1] is mine
        np.testing.assert_array_equal(mine, plain_dx)


def test_buffered_argument_checks_compare_with_a_dtype_made_once():
    x = np.array([0.5, -1.25, 7.0, 2.0])
    fast = ys.simplegrad(_elements_read_twice, x)
    assert "x.dtype != _float64" in ys.source(fast)
    for bad in (x.astype(np.float32), x.astype(">f8"), x[:3], x.reshape(2, 2),
                np.ma.masked_array(x), x.tolist()):
        with pytest.raises(TypeError, match="argument x"):
            fast(bad)
    assert fast(x.astype("<f8"))[0] == _elements_read_twice(x)


def _ring_args(rng):
    return (rng.standard_normal(1000),)


def _rnn_args(rng):
    """20 steps (a loop region), every per-step value of 512 elements or more."""
    return (rng.standard_normal((32, 64)) * 0.2, rng.standard_normal((64, 64)) * 0.1,
            rng.standard_normal(64) * 0.1, rng.standard_normal((20, 16, 32)),
            rng.standard_normal((16, 64)) * 0.5)


def _seed_args(rng):
    return rng.standard_normal((128, 64)), rng.standard_normal(128), rng.standard_normal((64, 100))


def _logreg(w, b, X, y):
    p = 1 / (1 + np.exp(-(X @ w + b)))
    return -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))


def _logreg_args(rng):                   # b: a Python float, read by a ufunc (t1 += b)
    return (rng.standard_normal(20) * 0.1, 0.1, rng.standard_normal((2000, 20)),
            (rng.random(2000) > 0.5) * 1.0)


def _scaled_by_its_sum(x):
    """Numbers made at run time (a sum, a mean; their gradients) read by ufuncs."""
    s = np.sum(x)
    return np.sum(np.exp(x / s) * np.mean(x)) + s * s


def _float32(x, w):
    return np.sum(np.tanh(x * w + 0.5) * 2.0)


def _float32_args(rng):
    return (rng.standard_normal(1000).astype(np.float32),
            rng.standard_normal(1000).astype(np.float32))


# (name, loss, arguments, bytes of array data a call with out= may allocate): none. numpy
# would make a 0-d array of 8 bytes for the result of a reduction to a number (``t.sum()``,
# ``xp.vdot(h, h)``) and for a number operand of a ufunc (``xp.subtract(1.0, t, out=t)``,
# ``t1 += b`` for a float b); the buffered form reads numbers from 0-d arrays instead (the
# module's, made once, and a 0-d work array).
STEADY_OUT = [
    ("scalar mode", models.polynomial, lambda rng: (rng.standard_normal(8),), 0),
    ("array mode, a broadcast bias add", models.seed_loss, _seed_args, 0),
    ("array mode, an MLP", models.mlp, lambda rng: mlp_args(rng, batch=256), 0),
    ("reductions and number operands, a float argument", _logreg, _logreg_args, 0),
    ("numbers made at run time read by ufuncs", _scaled_by_its_sum,
     lambda rng: (rng.random(1000) + 0.5,), 0),
    ("float32 operands and literals", _float32, _float32_args, 0),
    ("a long chain in blocks, with a sum", long_chain,
     lambda rng: (rng.standard_normal(2 * 32768 + 3),), 0),
    ("a loop region with a planned body", loops.rnn_summed, _rnn_args, 0),
    ("a loop over Python floats", loops.ring, _ring_args, 0),
]


@pytest.mark.parametrize("name, fn, make_args, arrays", STEADY_OUT, ids=[c[0] for c in STEADY_OUT])
def test_a_steady_state_call_with_out_allocates_no_array(name, fn, make_args, arrays):
    """issue 14: with out=, a call after the first allocates no array data (numpy's tracemalloc
    domain; its iteration buffers and Python objects are counted apart: memory.allocated), and
    returns what the call without out= returns, in the caller's arrays."""
    args = make_args(np.random.default_rng(0))
    df = ys.simplegrad(fn, *args)
    value, *grads = df(*args)
    out = [np.full_like(g, np.nan) if isinstance(g, np.ndarray) else None for g in grads]
    got = df(*args, out=out)
    assert got[0] == value
    for g, o, expected in zip(got[1:], out, grads):
        assert g is o or o is None
        np.testing.assert_array_equal(g, expected)
    assert allocated(lambda: df(*args, out=out)).arrays == arrays
    # the measure itself: an array made in the call is seen, a list of floats is not
    assert allocated(lambda: np.empty(1000)).arrays == 8000
    assert allocated(lambda: [0.0] * 1000).arrays == 0 < allocated(lambda: [0.0] * 1000).peak


def _literals(x, y):
    a = np.where(x > 0.25, x * 3, -0.0 * x)
    b = np.maximum(a, -np.inf) + np.minimum(y, 1e300) * 2
    c = np.exp(-x * 0.5) ** 3.0 + np.tanh(b) / 7 + np.float32(0.5) * x
    return np.sum(c * c) + np.mean(x) * np.sum(y) + np.max(x) * np.min(y)


def _run_time_numbers(x, s):
    return np.sum(np.sin(x * s) + s) * s + np.prod(x[:3])


@pytest.mark.parametrize("fn, dtype", [(_literals, np.float64), (_literals, np.float32),
                                       (_run_time_numbers, np.float64),
                                       (_run_time_numbers, np.float32),
                                       (_literals, np.float16)])
def test_numbers_read_from_0d_arrays_keep_numpys_dtypes_and_values(fn, dtype):
    """The 0-d arrays numbers go through (issue 14) are in the dtype numpy converts each number
    to: a Python number takes the array's (``_0_5_FLOAT32``), a numpy scalar keeps its own, a
    number the dtype cannot hold exactly (1e300 in float32) stays a number; -0.0, -inf and a
    float argument (``buf[()] = s``) included, the buffered form returns what the plain form
    does, bit for bit and type for type, with out= and without."""
    rng = np.random.default_rng(4)
    x = rng.random(50).astype(dtype)
    args = (x, rng.random(50).astype(dtype)) if fn is _literals else (x, 0.7)
    with np.errstate(over="ignore"):
        fast = ys.simplegrad(fn, *args)
        plain = ys.simplegrad(fn, *args, buffers=False)
        want = plain(*args)
        got = fast(*args)
        out = [np.empty_like(g) if isinstance(g, np.ndarray) else None for g in got[1:]]
        given = fast(*args, out=out)
    for g, o, w in zip(got, given, want):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(o, w)
    text = ys.source(fast)
    suffix = "" if dtype == np.float64 else f"_{np.dtype(dtype).name.upper()}"
    kind = "" if dtype == np.float64 else f", xp.{np.dtype(dtype).name}"
    if fn is _literals:
        assert f"\n_MINUS_0_0{suffix} = xp.array(-0.0{kind})\n" in text
        assert f"\n_MINUS_INF{suffix} = xp.array(-xp.inf{kind})\n" in text
        assert "\n_0_5_FLOAT32 = xp.array(0.5, xp.float32)\n" in text     # np.float32(0.5)
        # 1e300: a 0-d float64 array; no float32 or float16 holds it, there it stays a number
        assert ("\n_1e300 = xp.array(1e+300)\n" in text) == (dtype == np.float64)
        assert (", 1e+300, out=" in text) == (dtype != np.float64)
    else:
        assert re.search(r"\n    buf\d+\[\(\)\] = s\n", text)
    if fn is _literals:     # numpy's min takes out= (cupy's does not: no out= form of its own)
        assert re.search(r"= y_\.min\(out=buf\d+\)\[\(\)\]\n", text)
        # a mask times 0.5: copied into the result's array, then multiplied there (numpy would
        # cast it into a new array)
        assert re.search(r"xp\.copyto\((t\d+), t\d+\)\n    \1 \*= _0_5\n", text) \
            or dtype != np.float64


def _means16(x):
    v = np.exp(x * 0.5) / 2.0
    return np.mean(v * v) + np.sum(np.mean(v, axis=0) ** 2)


def test_a_float16_mean_is_numpys_in_the_buffered_form():
    """numpy's mean of float16 values sums them in float32 and rounds once; with a float16
    out= it rounds the sum before dividing (one float16 ulp off, fuzz seed 22500185). The
    buffered form writes such a mean without out= (buffers.out_keeps_value): the value and
    the gradient are the plain form's, bit for bit, on many inputs."""
    rng = np.random.default_rng(5)
    xs = [rng.uniform(-2, 2, (6, 5)).astype(np.float16) for _ in range(20)]
    fast = ys.simplegrad(_means16, xs[0])
    plain = ys.simplegrad(_means16, xs[0], buffers=False)
    text = ys.source(fast)
    assert ".mean(out=" not in text and ".mean(axis=0)" in text, text
    for x in xs:
        got, want = fast(x), plain(x)
        assert np.asarray(got[0]).dtype == np.float16 and got[0] == _means16(x) == want[0]
        np.testing.assert_array_equal(got[1], want[1])


def _elements_and_a_narrow_mean(x, y):
    v = x[3] * x[3] ** 2 - x[4] - x[1] ** 3
    return v * v + np.mean(np.sin(y) * y)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_scalar_mode_keeps_float64_where_a_narrower_number_joins(dtype):
    """``x[3] * ...`` is numpy's float64 scalar: plus a float16 mean it stays float64. As a
    Python float (scalar mode) it would take float16 (NEP 50; fuzz seeds 22600100,
    22600216): a Python float that meets a narrower float stays numpy's (scalars._narrow)."""
    rng = np.random.default_rng(6)
    args = (rng.uniform(-1, 1, 8), rng.uniform(-1, 1, (2, 3)).astype(dtype))
    fast = ys.simplegrad(_elements_and_a_narrow_mean, *args)
    plain = ys.simplegrad(_elements_and_a_narrow_mean, *args, buffers=False)
    want = _elements_and_a_narrow_mean(*args)
    for got in (fast(*args), plain(*args)):
        assert np.asarray(got[0]).dtype == np.float64 and got[0] == want
        np.testing.assert_array_equal(got[1], plain(*args)[1])
        assert got[2].dtype == dtype


def test_out_of_the_common_kind_is_told_apart_inline_and_anything_else_checked_in_full():
    """The inline tests let through only arrays of their own with arguments of their own; a
    view on either side, a read-only array, an argument, a dict or an entry given twice goes
    through _check_out and its errors."""
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((3, 3)), rng.standard_normal(3)
    df = ys.simplegrad(_matrix_loss, W, b)
    value, dW, db = df(W, b)
    text = ys.source(df)
    assert "or out0 is W or out1 is b):\n" in text
    for out in ([np.empty((3, 3)), np.empty(3)], (np.empty((3, 3)), np.empty(3))):
        got = df(W, b, out=out)
        assert got[1] is out[0] and got[2] is out[1]
        np.testing.assert_array_equal(got[1], dW)
        np.testing.assert_array_equal(got[2], db)
    mine = np.empty(3)
    with pytest.raises(ValueError, match="shares memory with an argument"):
        df(W, mine[:], out=[None, mine])             # the argument views the out= array
    big = np.empty(6)
    got = df(W, b, out=[None, big[:3]])              # a view: checked in full, accepted
    assert got[2].base is big
    np.testing.assert_array_equal(big[:3], db)
    frozen = np.empty(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"out\[1\] is read-only"):
        df(W, b, out=[np.empty((3, 3)), frozen])
    with pytest.raises(TypeError, match="out must be a list"):
        df(W, b, out={0: np.empty((3, 3)), 1: np.empty(3)})
    with pytest.raises(ValueError, match="shares memory with an argument"):
        df(W, b, out=[np.empty((3, 3)), b])
    square = rng.standard_normal((3, 3))
    df2 = ys.simplegrad(lambda A, B: np.sum(np.tanh(A @ B)), square, square + 1)
    g = np.empty((3, 3))
    with pytest.raises(ValueError, match=r"out\[1\] shares memory with another out= entry"):
        df2(square, square + 1, out=[g, g])


def test_out_of_large_arguments_is_checked_by_check_out_alone():
    """The inline tests are written only where the arguments are a few numbers: with larger
    ones the function's own work dwarfs _check_out's cost, and the tests would grow with
    entries times arguments. The full check still takes the common out= and refuses the rest."""
    args = _seed_args(np.random.default_rng(0))
    df = ys.simplegrad(models.seed_loss, *args)
    text = ys.source(df)
    assert "    if out is not None:\n        _check_out('seed_loss_grad', out, 3, " in text
    assert ".flags.writeable" not in text.split("def seed_loss_grad")[1]
    value, *grads = df(*args)
    out = [np.empty_like(g) for g in grads]
    got = df(*args, out=out)
    for g, o, expected in zip(got[1:], out, grads):
        assert g is o
        np.testing.assert_array_equal(o, expected)
    with pytest.raises(ValueError, match="shares memory with an argument"):
        df(*args, out=[out[0], args[1], out[2]])


def test_a_call_made_from_inside_a_call_gets_its_own_work_arrays():
    """A nodiff monitor that calls the same compiled gradient, one and two deep (issue 29):
    the inner calls make their own work arrays; the outer one returns what the plain form
    returns (and the handwritten gradient: the monitor passes none), and so does each inner
    call."""
    x, inner = np.linspace(0.1, 0.9, 4), np.full(4, 9.0)
    fast = compile_grad(custom.monitored_loss, (x,))
    assert " = _arrays = _work_arrays()" in fast.text
    assert "_local.arrays = _arrays    # given back" in fast.text
    plain = compile_grad(custom.monitored_loss, (x,), buffers=False).fn
    expected, h = plain(x), np.tanh(x) * 3.0
    np.testing.assert_allclose(expected[0], custom.monitored_loss(x), rtol=1e-14)
    np.testing.assert_allclose(expected[1], 2 * h * x + np.cos(h) * 3.0 / np.cosh(x) ** 2,
                               rtol=1e-13)
    for depth in (1, 2):
        custom.MONITOR.update(calls=[(fast.fn, (inner,))] * depth, seen=[])
        assert_same(fast.fn(x), expected)
        assert not custom.MONITOR["calls"] and len(custom.MONITOR["seen"]) == depth
        for seen in custom.MONITOR["seen"]:
            assert_same(seen, plain(inner))
        assert_same(fast.fn(x), expected)          # and the arrays given back are reused
    assert "_local.arrays = _arrays" not in \
        compile_grad(models.mlp, mlp_args(np.random.default_rng(0))).text      # numpy only



def _dot_then_reciprocal(a, b):
    return np.sum(np.reciprocal(np.dot(a, b))) + np.sum(a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_dot_over_a_contraction_of_one_keeps_numpys_signed_zero(dtype):
    """``np.dot`` of a (1, 1) and a (1, 1) array is one product: 0 * -0.7 is -0.0, whose
    reciprocal is -inf; written as ``xp.matmul(a, b, out=buf)`` the product was added to +0.0
    and the buffered form returned +inf where numpy and the plain form give -inf (the fuzzer,
    seed 242439: inf against nan). Such a dot is not written into a work array."""
    a, b = np.zeros((1, 1), dtype), np.full((1, 1), -0.7, dtype)
    with np.errstate(divide="ignore"):
        want = _dot_then_reciprocal(a, b)
        for buffers in (True, False):
            value = ys.simplegrad(_dot_then_reciprocal, a, b, buffers=buffers)(a, b)[0]
            assert value == want == -np.inf
