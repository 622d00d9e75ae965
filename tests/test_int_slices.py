"""Int arguments of ``ys.grad`` as slice bounds (issue 29, item 1): the generated code runs
numpy's normalization of each bound (a negative one counts from the end, then it is clipped to
the axis; the step's sign picks the clip) behind guards, so every int gives numpy's slice or
a ``GuardError`` that compiles the case, never another slice. Checked exhaustively over small
ranges of ints against numpy, in both forms."""
import warnings

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad

X = np.linspace(0.3, 1.2, 5)           # every int from -7 to 7: past either end, inside, 0
A = np.arange(15.0).reshape(5, 3) / 7.0


def drop_last(x, k): return np.sum(x[:-k] ** 2)
def last(x, k): return np.sum(x[-k:] ** 2)
def inner(x, k): return np.sum(x[k:-k] ** 2)
def rows_but_last(a, k): return np.sum(a[:-k, :] ** 2)
def columns_from(a, k): return np.sum(a[:, k:] ** 2)
def three_from(x, i): return np.sum(x[i:i + 3] ** 2)
def from_back(x, k): return np.sum(x[k::-1] ** 2)
def after_back(x, k): return np.sum(x[:k:-1] ** 2)
def every_other_from(x, k): return np.sum(x[k::2] ** 2)
def back_by_three(x, k): return np.sum(x[:k:-3] ** 2)
def by_step(x, k): return np.sum(x[::k] ** 2)
def between(x, i, j): return np.sum(x[i:j] ** 2)
def between_by_two(x, i, j): return np.sum(x[i:j:-2] ** 2)

ONE_INT = [drop_last, last, inner, three_from, from_back, after_back, every_other_from,
           back_by_three, by_step]


# the same keys, for numpy
KEYS = {drop_last: lambda k: np.s_[:-k], last: lambda k: np.s_[-k:],
        inner: lambda k: np.s_[k:-k], rows_but_last: lambda k: np.s_[:-k, :],
        columns_from: lambda k: np.s_[:, k:], three_from: lambda i: np.s_[i:i + 3],
        from_back: lambda k: np.s_[k::-1], after_back: lambda k: np.s_[:k:-1],
        every_other_from: lambda k: np.s_[k::2], back_by_three: lambda k: np.s_[:k:-3],
        by_step: lambda k: np.s_[::k], between: lambda i, j: np.s_[i:j],
        between_by_two: lambda i, j: np.s_[i:j:-2]}


def expected(f, a, ints):
    """numpy's value and gradient of ``sum(a[key] ** 2)``."""
    key = KEYS[f](*ints)
    g = np.zeros_like(a)
    g[key] = 2 * a[key]
    return np.sum(a[key] ** 2), g


def plain_variants(f, a, ints):
    """The plain form through ys.grad's rule: try each compiled case, compile on GuardError."""
    cases = plain_variants.cases.setdefault(f, [])
    for fn, guard in cases:
        try:
            return fn(a, *ints)
        except guard:
            continue
    compiled = compile_grad(f, (a, *ints), buffers=False,
                            dynamic=frozenset(range(1, 1 + len(ints))))
    assert "type(" in compiled.text          # the ints are arguments of the generated code
    cases.insert(0, (compiled.fn, compiled.module.GuardError))
    return compiled.fn(a, *ints)


plain_variants.cases = {}


def check(f, a, ints, buffers):
    want_value, want_grad = expected(f, a, ints)
    if buffers:
        value, g = ys.grad(f, a, *ints)
        g = g[0]
    else:
        value, g, *_ = plain_variants(f, a, ints)
    assert np.isclose(value, want_value, rtol=1e-12, atol=0), (f.__name__, ints)
    np.testing.assert_allclose(g, want_grad, rtol=1e-12, atol=0, err_msg=f"{f.__name__}{ints}")


BOTH = pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])


@BOTH
@pytest.mark.parametrize("f", ONE_INT, ids=lambda f: f.__name__)
def test_every_int_past_both_ends_gives_numpys_slice(f, buffers):
    ys.clear_cache()
    values = list(range(-7, 8)) + [3, -3, 0, 6, -6]
    if f is by_step:
        values.remove(0), values.remove(0)      # numpy refuses a zero step
    with warnings.catch_warnings():
        # the ints stay run-time values: no warning that they are static (a compile per value);
        # the slice's cases are guards, and a few variants of them do warn (issue 33)
        warnings.simplefilter("ignore", ys.RecompileWarning)
        warnings.filterwarnings("error", r".* values of its int argument", ys.RecompileWarning)
        for k in values:
            check(f, X, (k,), buffers)


@BOTH
@pytest.mark.parametrize("f", [rows_but_last, columns_from], ids=lambda f: f.__name__)
def test_a_run_time_bound_on_one_axis_of_a_matrix(f, buffers):
    ys.clear_cache()
    for k in list(range(-7, 8)) + [2, -2]:
        check(f, A, (k,), buffers)


@BOTH
@pytest.mark.parametrize("f", [between, between_by_two], ids=lambda f: f.__name__)
def test_two_run_time_bounds_over_every_pair(f, buffers):
    ys.clear_cache()
    x = X[:3]
    for i in range(-4, 5):          # past both ends of 3 items
        for j in range(-4, 5):
            check(f, x, (i, j), buffers)


def test_the_issues_reproducers_compile_each_case_once():
    ys.clear_cache()
    x = np.linspace(0.3, 1.2, 10)
    value, g = ys.grad(drop_last, x, 2)
    assert np.isclose(value, 3.80)
    value, g = ys.grad(drop_last, x, 3)                 # was f(x, 2)'s value and gradient
    assert np.isclose(value, 2.80) and np.isclose(value, drop_last(x, 3))
    np.testing.assert_allclose(g[0], expected(drop_last, x, (3,))[1])
    ys.grad(three_from, x, 8)
    value, g = ys.grad(three_from, x, 9)                 # was an IndexError
    assert np.isclose(value, three_from(x, 9))
    np.testing.assert_allclose(g[0], expected(three_from, x, (9,))[1])
    misses = ys.cache_info()["misses"]
    for k in (2, 3, 8, 9):                               # every case is found again
        ys.grad(drop_last, x, k) if k < 8 else ys.grad(three_from, x, k)
    assert ys.cache_info()["misses"] == misses


def test_a_slice_whose_start_the_guards_fix_is_a_plain_view():
    x = np.linspace(0.3, 1.2, 10)
    text = ys.grad(drop_last, x, 2)[1].source
    assert "x[0:8]" in text and "arange" not in text
    # the record of assumptions (ir/assumptions.py) names the slice in the module's header
    assert "x[:-k]: its run-time bounds as numpy normalizes them" in text
    assert "guarded by index arithmetic" in text
    text = ys.grad(three_from, x, 2)[1].source
    assert "xp.arange(3)" in text
