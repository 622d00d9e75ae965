"""Functions with discrete results: rounding, signs, tests and indices. They are recorded (the
generated code computes them) and no gradient flows through them.

    rounding     floor ceil round rint trunc fix sign signbit
    tests        isfinite isinf isnan isclose allclose array_equal all any, logical_*
    indices      argmax argmin argsort argpartition argwhere flatnonzero count_nonzero
                 searchsorted (``np.nonzero`` is argwhere's columns: see frontend/numpy_calls.py)

Comparisons (``<``, ``np.less``...) are in operators.py; ``np.shape``, ``np.ndim``,
``np.size`` and ``np.result_type`` are static facts, answered at compile time.
"""
import numpy as np

from .registry import batchrule, nodiff, primitive

primitive(np.round,          "a, decimals=0")
primitive(np.fix,            "x")
primitive(np.isclose,        "a, b, rtol=1e-05, atol=1e-08, equal_nan=False")
primitive(np.allclose,       "a, b, rtol=1e-05, atol=1e-08, equal_nan=False")
primitive(np.array_equal,    "a1, a2, equal_nan=False")
primitive(np.all,            "a, axis=None, keepdims=False")
primitive(np.any,            "a, axis=None, keepdims=False")
primitive(np.argmax,         "a, axis=None, keepdims=False")
primitive(np.argmin,         "a, axis=None, keepdims=False")
primitive(np.argsort,        "a, axis=-1, kind=None, stable=None")
primitive(np.argpartition,   "a, kth, axis=-1")
primitive(np.argwhere,       "a")
primitive(np.flatnonzero,    "a")
primitive(np.count_nonzero,  "a, axis=None, keepdims=False")
primitive(np.searchsorted,   "a, v, side='left', sorter=None")

DISCRETE = (np.floor, np.ceil, np.round, np.rint, np.trunc, np.fix, np.sign, np.signbit,
            np.isfinite, np.isinf, np.isnan, np.isclose, np.allclose, np.array_equal, np.all,
            np.any, np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.argmax,
            np.argmin, np.argsort, np.argpartition, np.argwhere, np.flatnonzero,
            np.count_nonzero, np.searchsorted)
for fn in DISCRETE:
    nodiff(fn)
# np.sign(z) of a complex z is z / |z|, smooth: its derivative is not zero, and no rule gives it
primitive(np.sign, real_only="np.sign of a complex z is z / |z|, which is not piecewise "
                             "constant (write z / np.abs(z))")


# -- batching (ys.vmap): the axes one further on; None, every axis of one example ------------

from .batching import after_batch, lined_up  # noqa: E402


@batchrule(np.round)
def round_batched(a, decimals=0):
    return np.round(a, decimals)


@batchrule(np.fix)
def fix_batched(x):
    return np.fix(x)


@batchrule(np.isclose)
def isclose_batched(a, b, batched, rtol=1e-05, atol=1e-08, equal_nan=False):
    rank = max(np.ndim(a) - batched[0], np.ndim(b) - batched[1])
    return np.isclose(lined_up(a, batched[0], rank), lined_up(b, batched[1], rank), rtol, atol,
                      equal_nan)


@batchrule(np.allclose)
def allclose_batched(a, b, batched, size, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = isclose_batched(a, b, batched, rtol, atol, equal_nan)
    return np.all(np.reshape(close, (size, -1)), axis=1)


@batchrule(np.array_equal)
def array_equal_batched(a1, a2, batched, size, equal_nan=False):
    if np.shape(a1)[batched[0]:] != np.shape(a2)[batched[1]:]:
        return np.zeros(size, bool)          # (numpy: shapes that differ are not equal)
    rank = np.ndim(a1) - batched[0]
    a1, a2 = lined_up(a1, batched[0], rank), lined_up(a2, batched[1], rank)
    same = (a1 == a2) | (a1 != a1) & (a2 != a2) if equal_nan else a1 == a2
    return np.all(np.reshape(same, (size, -1)), axis=1)


@batchrule(np.all)
def all_batched(a, axis=None, keepdims=False):
    return np.all(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.any)
def any_batched_(a, axis=None, keepdims=False):
    return np.any(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.count_nonzero)
def count_nonzero_batched(a, axis=None, keepdims=False):
    return np.count_nonzero(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.argmax)
def argmax_batched(a, axis=None, keepdims=False):
    if axis is None:
        return np.argmax(np.reshape(a, (np.shape(a)[0], -1)), 1, keepdims=keepdims)
    return np.argmax(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.argmin)
def argmin_batched(a, axis=None, keepdims=False):
    if axis is None:
        return np.argmin(np.reshape(a, (np.shape(a)[0], -1)), 1, keepdims=keepdims)
    return np.argmin(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.argsort)
def argsort_batched(a, axis=-1, kind=None, stable=None):
    if axis is None:
        return np.argsort(np.reshape(a, (np.shape(a)[0], -1)), 1, kind=kind, stable=stable)
    return np.argsort(a, after_batch(axis, np.ndim(a) - 1), kind=kind, stable=stable)


@batchrule(np.argpartition)
def argpartition_batched(a, kth, axis=-1):
    return np.argpartition(a, kth, after_batch(axis, np.ndim(a) - 1))


@batchrule(np.searchsorted)
def searchsorted_batched(a, v, batched, size, side="left", sorter=None):
    """A sorted array the same for every example: one search. One per example: the count of
    its elements before each value (``a < v``; ``a <= v`` for side="right")."""
    if not batched[0]:
        return np.searchsorted(a, v, side, sorter)
    if sorter is not None:
        return "searches an array that differs per example in the order of a sorter (not " \
            "batched yet)"
    rank = np.ndim(v) - batched[1]
    rows = np.reshape(a, (size,) + (1,) * rank + (np.shape(a)[1],))
    values = np.expand_dims(lined_up(v, batched[1], rank), -1)
    before = rows <= values if side == "right" else rows < values
    return np.sum(before, axis=-1)


@batchrule(np.argwhere)
def argwhere_batched(a):
    return "gives a number of rows that differs per example: the batch has no one shape"


@batchrule(np.flatnonzero)
def flatnonzero_batched(a):
    return "gives a number of indices that differs per example: the batch has no one shape"
