"""np.minimum and np.maximum of two float64 numbers on a CPU are written as a comparison
(codegen/scalars.py ``_extremum``: numpy's ufunc call costs ~1 us on two numbers), with
numpy's value: nan from either operand, the second operand on a tie (-0.0 against 0.0), a
numpy float64 (a while's step that numpy's and Python's would give alike: Python's float,
codegen/trip_floats.py)."""
import numpy as np
import pytest

import yota_s2s as ys

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad

from .programs import whiles as W


def _extrema(x):
    a, b = np.sum(x[:2]), np.max(x[2:])
    return np.minimum(a, b) + 2.0 * np.maximum(a, 1.0 - b), np.minimum(a, b), np.maximum(b, a)


def _value(x):
    a, b = np.sum(x[:2]), np.max(x[2:])
    lo = np.minimum(a, b)
    hi = np.maximum(a, 1.0 - b)
    return lo + 2.0 * hi


@pytest.mark.parametrize("buffers", [False, True])
def test_an_extremum_of_two_numbers_is_a_comparison_with_numpys_value(buffers):
    compiled = compile_grad(_value, (np.array([0.3, 0.1, 0.5, 0.2]),), buffers=buffers)
    # (a value written inline into another's expression keeps its call)
    assert "xp.minimum(" not in compiled.text and "xp.maximum(" not in compiled.text
    for x in (np.array([0.3, 0.1, 0.5, 0.2]), np.array([-1.0, 0.2, 2.0, 3.0]),
              np.array([0.5, 0.5, 0.3, 0.2])):
        value, g = compiled.fn(x)
        assert type(value) is np.float64 and value == _value(x)
        np.testing.assert_allclose(g, numerical_grad(_value, (x,), 0), rtol=1e-6, atol=1e-8)
    with np.errstate(invalid="ignore"):
        for x in (np.array([np.nan, 0.0, 1.0, 2.0]), np.array([0.0, 1.0, np.nan, 2.0])):
            assert np.isnan(compiled.fn(x)[0]) and np.isnan(_value(x))


def _three(x):
    return _extrema(x)


def test_ties_and_nan_are_numpys():
    """The three results of ``_extrema`` as ``ys.compile``'s module gives them, against
    numpy's, bit for bit (the sign of a zero too), each a numpy float64."""
    fn = ys.compile(_three, np.array([0.3, 0.1, 0.5, 0.2]))
    assert "xp.minimum(" not in ys.source(fn) and "= xp.maximum(" not in ys.source(fn)
    for x in (np.array([0.0, 0.0, -0.0, -1.0]), np.array([-0.0, 0.0, 0.0, -1.0]),
              np.array([np.nan, 1.0, 0.0, 0.0]), np.array([1.0, 0.0, np.nan, 0.0])):
        with np.errstate(invalid="ignore"):
            got, expected = fn(x), _three(x)
        for g, e in zip(got, expected):
            assert type(g) is type(e) is np.float64
            assert np.array_equal(g, e, equal_nan=True) and np.signbit(g) == np.signbit(e)


def test_adaptive_heuns_step_is_a_comparison():
    text = compile_grad(W.adaptive_heun, (np.array([1.0, 2.0]), np.array([1.0, 1.5])),
                        buffers=False).text
    # (a Python float: h_1, and the numbers made of it, are read only by + - * of numbers, by
    # comparisons that are conditions and beside float64 arrays, trip after trip)
    assert "        t_2 = 1.0 - t\n        h_1 = h if h < t_2 or h != h else t_2\n" in text
    assert "xp.float64(" not in text
    # (the operand's name is the function's: the unwind's index is another)
    assert "for t_2 in" not in text and "for t_3 in reversed(range(trips)):" in text


def _stepped(x):
    t = 0.0
    h = 0.3
    while t < 1.0:
        h = np.minimum(h, 1.0 - t)
        x = x * (1.0 + h)
        t = t + h
    return np.sum(x)


def _stepped_time(x):
    t = 0.0
    h = 0.3
    while t < 1.0:
        h = np.minimum(h, 1.0 - t)
        x = x * (1.0 + h)
        t = t + h
    return np.sum(x) + t


def _stepped_divided(x):
    t = 0.0
    h = 0.3
    while t < 1.0:
        h = np.minimum(h, 1.0 - t)
        x = x * (1.0 + h)
        t = t + h / (h + 1.0) + 0.1
    return np.sum(x)


@pytest.mark.parametrize("buffers", [False, True])
@pytest.mark.parametrize("fn, python", [(_stepped, True), (_stepped_time, False),
                                        (_stepped_divided, False)])
def test_a_trips_extremum_is_pythons_float_where_numpys_would_give_the_same(fn, python,
                                                                          buffers):
    """A while's step ``np.minimum(h, 1.0 - t)`` is Python's float where every number made of
    it, trip after trip, goes only through + - * of numbers, conditions, and operations beside
    float64 arrays; numpy's where the loop's ``t`` is read after it (``+ t``: the returned
    value's type) or divided by (Python's division by zero raises)."""
    x = np.array([0.5, -1.0, 2.0])
    compiled = compile_grad(fn, (x,), buffers=buffers)
    assert "while t < 1.0:" in compiled.text
    assert ("xp.float64(" not in compiled.text) == python
    value, g = compiled.fn(x)
    assert type(value) is np.float64 and value == fn(x)
    np.testing.assert_allclose(g, numerical_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8)
