"""np.clip of a number with number bounds is written as comparisons (codegen/scalars.py
``_clip``), and a bool number in ``+ - *`` as a conditional float (codegen/flags.py: the tie
factors of clip's, minimum's and maximum's gradients): numpy's values bit for bit, ties, nan
and signed zeros included, the number's dtype kept (float32 stays float32)."""
import numpy as np
import pytest

import yota_s2s as ys

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad


def _clips(x):
    s = np.sum(x[:2])
    return np.clip(s, 0.2, 5.0), np.clip(s, None, 0.0), np.clip(s, -1, None), np.clip(s, 0.0, 1)


VALUES = [0.2, 5.0, 0.0, -0.0, 1.0, -1.0, 0.19999999999999998, 7.5, np.inf, -np.inf, np.nan, 3.0]


def test_a_clip_of_a_number_is_comparisons_with_numpys_value():
    fn = ys.compile(_clips, np.array([0.3, 0.1]))
    assert "xp.clip(" not in ys.source(fn)
    for v in VALUES:
        for w in (0.0, -0.0):
            x = np.array([v, w])
            got, expected = fn(x), _clips(x)
            for g, e in zip(got, expected):
                assert type(g) is type(e) is np.float64
                assert np.array_equal(g, e, equal_nan=True) and np.signbit(g) == np.signbit(e)


def _clip32(x):
    return np.clip(np.sum(x), 0.1, 5.0), np.clip(x[0], None, 0.3)


def test_a_float32_number_stays_float32():
    """The bounds compare in float32 (0.1 rounds there) and the result is numpy's float32."""
    x = np.array([0.1, 0.0], dtype=np.float32)
    fn = ys.compile(_clip32, x)
    assert "xp.clip(" not in ys.source(fn) and "xp.float32(" in ys.source(fn)
    for v in (0.1, 0.3, 0.09999999, 0.30000001, 6.0, -1.0, np.nan, 0.2):
        x = np.array([v, 0.0], dtype=np.float32)
        with np.errstate(invalid="ignore"):
            got, expected = fn(x), _clip32(x)
        for g, e in zip(got, expected):
            assert type(g) is type(e) is np.float32
            assert np.array_equal(g, e, equal_nan=True)


def _ties(x):
    a, b = np.sum(x[:2]), np.max(x[2:])
    c = 3.0 * np.clip(a, 0.2, 5.0) + np.minimum(a, b) * 2.0 + np.maximum(b, 1.0 - a)
    return np.sum(x * c)


@pytest.mark.parametrize("buffers", [False, True])
def test_tie_factors_are_conditional_floats_with_the_same_gradient(buffers):
    """``0.5 * (a == b)`` is ``0.5 if a == b else 0.0``: the half at a tie, exactly."""
    x0 = np.array([0.3, 0.1, 0.5, 0.2])
    compiled = compile_grad(_ties, (x0,), buffers=buffers)
    code = "\n".join(line for line in compiled.text.splitlines() if "#" not in line)
    assert "0.5 * (" not in code and "0.5 if " in code
    cases = {   # x: dc/dx by hand (clip's, minimum's, maximum's ties split in halves)
        (0.1, 0.1, 0.5, 0.2): [1.5 + 2.0 - 1.0] * 2 + [0.0, 0.0],       # a = 0.2: at the bound
        (2.5, 2.5, 5.0, 0.0): [1.5 + 1.0] * 2 + [1.0 + 1.0, 0.0],       # a = 5.0 = b
        (0.25, 0.25, 0.5, 0.0): [3.0 + 1.0 - 0.5] * 2 + [1.0 + 0.5, 0.0],  # a = b, b = 1 - a
        (4.0, 4.0, 0.5, 0.0): [0.0, 0.0, 2.0 + 1.0, 0.0],               # a clipped away
    }
    for x, dc in cases.items():
        x = np.array(x)
        a, b = np.sum(x[:2]), np.max(x[2:])
        c = 3.0 * np.clip(a, 0.2, 5.0) + np.minimum(a, b) * 2.0 + np.maximum(b, 1.0 - a)
        value, g = compiled.fn(x)
        assert value == _ties(x)
        np.testing.assert_allclose(g, c + np.sum(x) * np.array(dc), rtol=1e-15)
    x = np.array([1.3, 0.4, 0.9, 0.2])
    np.testing.assert_allclose(compiled.fn(x)[1], numerical_grad(_ties, (x,), 0), rtol=1e-6)


def _clip_grad32(x):
    return np.sum(x * np.clip(np.sum(x), 0.1, 5.0))


def test_a_float32_clip_gradient_matches_the_plain_numpy_rule():
    x = np.array([0.05, 0.05], dtype=np.float32)     # the sum is 0.1 in float32: a tie
    for buffers in (False, True):
        value, g = compile_grad(_clip_grad32, (x,), buffers=buffers).fn(x)
        assert value == _clip_grad32(x) and g.dtype == np.float32
        s = np.sum(x)
        expected = np.clip(s, 0.1, 5.0) + np.sum(x) * np.float32(0.5)
        np.testing.assert_array_equal(g, np.full(2, expected, dtype=np.float32))
