"""Reductions and scans: sum mean prod max min (amax amin) std var nansum nanmean, cumsum
cumprod diff, with ``axis``, ``keepdims`` and ``ddof``; their ndarray methods map here.

The gradient of a reduction spreads ``dy`` back over the reduced axes: ``expand_dims`` puts the
reduced axes back (unless ``keepdims`` kept them) and ``broadcast_to`` repeats it, without a copy.
A stable log-sum-exp written with ``np.max`` (``m + log(sum(exp(x - m)))``) needs nothing
special: the gradients through ``m`` cancel exactly. In a log-softmax or a softmax
(``s = x - max(x)``, then ``s - log(sum(exp(s)))`` or ``exp(s) / sum(exp(s))``) they cancel
before they reach ``m``, and ``max_shift`` (declared with ``cancels``) says so: that branch of the
gradient is not emitted.
"""
import operator

import numpy as np

from ..ir.tape import Var
from .registry import alias, batchrule, cancels, diffrule, primitive

# written ``x.sum(axis=0)``, and into a given array with ``out=``
primitive(np.sum,  "a, axis=None, dtype=None, keepdims=False", method="sum",  out_form="reduce", linear=True)
primitive(np.mean, "a, axis=None, dtype=None, keepdims=False", method="mean", out_form="reduce", linear=True)
# Of complex values numpy's order is lexicographic: the result is the element picked, and
# the gradient that element's (autograd's; docs/complex.md), as for real values
primitive(np.max,  "a, axis=None, keepdims=False",             method="max",  out_form="reduce")
# no out= form: cupy 14's min(axis, out=) raises (max's works)
primitive(np.min,  "a, axis=None, keepdims=False",             method="min")
primitive(np.prod, "a, axis=None, dtype=None, keepdims=False", method="prod", out_form="reduce")
primitive(np.cumsum, "a, axis=None, dtype=None", linear=True)
primitive(np.cumprod, "a, axis=None, dtype=None")
primitive(np.std,  "a, axis=None, dtype=None, ddof=0, keepdims=False")
primitive(np.var,  "a, axis=None, dtype=None, ddof=0, keepdims=False")
primitive(np.nansum, "a, axis=None, dtype=None, keepdims=False")
primitive(np.nanmean, "a, axis=None, dtype=None, keepdims=False")
primitive(np.diff, "a, n=1, axis=-1", linear=True)
alias(np.amax, np.max)
alias(np.amin, np.min)


def restore_axes(dy, axis, keepdims):
    """``dy`` with the reduced axes back as size-1 axes, so it broadcasts against the input."""
    if axis is None or keepdims:
        return dy
    return np.expand_dims(dy, axis)


@diffrule(np.sum, "a", ignores=("dtype",))
def sum_grad(a, dy, axis=None, keepdims=False):
    return np.broadcast_to(restore_axes(dy, axis, keepdims), a.shape)


@diffrule(np.mean, "a", ignores=("dtype",))
def mean_grad(a, y, dy, axis=None, keepdims=False):
    return np.broadcast_to(restore_axes(dy, axis, keepdims), a.shape) / (a.size // max(np.size(y), 1))


@diffrule(np.max, "a")
def max_grad(a, y, dy, axis=None, keepdims=False):
    """Ties share the gradient equally, as in autograd and JAX (over all axes: a count)."""
    y, dy = restore_axes(y, axis, keepdims), restore_axes(dy, axis, keepdims)
    hit = a == y
    return dy * hit / np.sum(hit, axis=axis, keepdims=axis is not None)


diffrule(np.min, "a", max_grad)


@diffrule(np.prod, "a", ignores=("dtype",))
def prod_grad(a, dy, axis=None, keepdims=False):
    """The product of all the other elements: exclusive products from the left and from the
    right, so zeros in ``a`` are exact (``y / a`` would give nan). An empty ``a`` (its product
    is 1) has an empty gradient."""
    if np.size(a) == 0:
        return None
    if axis is None:
        return np.reshape(prod_grad(np.reshape(a, -1), np.reshape(dy, (1,)), 0, True), a.shape)
    dy = restore_axes(dy, axis, keepdims)
    if not isinstance(axis, int):       # a tuple of axes: moved to the end as one axis
        last = tuple(range(a.ndim - len(axis), a.ndim))
        moved = np.moveaxis(a, axis, last)
        flat = np.reshape(moved, moved.shape[:a.ndim - len(axis)] + (-1,))
        others = np.reshape(other_products(flat), moved.shape)
        return dy * np.moveaxis(others, last, axis)
    return dy * np.moveaxis(other_products(np.moveaxis(a, axis, -1)), -1, axis)


def other_products(b):
    """For each element, the product of the others along the last axis."""
    ones = np.ones(b.shape[:-1] + (1,), b.dtype)
    left = np.cumprod(np.concatenate((ones, b[..., :-1]), -1), -1)
    right = np.flip(np.cumprod(np.concatenate((ones, np.flip(b, -1)[..., :-1]), -1), -1), -1)
    return left * right


@diffrule(np.var, "a", ignores=("dtype",))
def var_grad(a, y, dy, axis=None, ddof=0, keepdims=False):
    """``2 (a - mean) / (N - ddof)`` times ``dy``, over the reduced axes (conjugated for a
    complex ``a``: var is real)."""
    count = np.size(a) // max(np.size(y), 1)
    centered = conj_if_complex(a - np.mean(a, axis=axis, keepdims=True))
    return restore_axes(dy, axis, keepdims) * centered * (2.0 / (count - ddof))


@diffrule(np.std, "a", ignores=("dtype",))
def std_grad(a, y, dy, axis=None, ddof=0, keepdims=False):
    """``(a - mean) / ((N - ddof) std)`` times ``dy``; 0 over one element (``N == 1``), where the
    formula would make 0 / 0."""
    count = np.size(a) // max(np.size(y), 1)
    if count == 1:
        return None             # the std of one number is 0, whatever the number
    centered = conj_if_complex(a - np.mean(a, axis=axis, keepdims=True))
    return restore_axes(dy / y, axis, keepdims) * centered / (count - ddof)


def conj_if_complex(x):
    """A real function of complex ``x`` (var, std, norm) has the gradient ``conj`` of its
    steepest-ascent direction (docs/complex.md); real ``x`` is left alone."""
    return np.conj(x) if np.iscomplexobj(x) else x


@diffrule(np.nansum, "a", ignores=("dtype",))
def nansum_grad(a, dy, axis=None, keepdims=False):
    return np.where(np.isnan(a), 0.0, restore_axes(dy, axis, keepdims))


@diffrule(np.nanmean, "a", ignores=("dtype",))
def nanmean_grad(a, dy, axis=None, keepdims=False):
    """Each number gets ``dy`` over how many numbers were averaged; nans get nothing."""
    present = ~np.isnan(a)
    count = np.sum(present, axis=axis, keepdims=True)
    return np.where(present, restore_axes(dy, axis, keepdims) / count, 0.0)


@diffrule(np.cumsum, "a", ignores=("dtype",))
def cumsum_grad(a, dy, axis=None):
    """Each element is in every later partial sum: the reversed cumulative sum of ``dy``."""
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(dy))), np.shape(a))
    return np.flip(np.cumsum(np.flip(dy, axis), axis), axis)


@diffrule(np.cumprod, "a", ignores=("dtype",))
def cumprod_grad(a, dy, axis=None):
    """``d y_j / d a_i`` is the product of ``a_k`` for ``k <= j``, ``k != i`` (``j >= i``),
    from a table of partial products with ``a_i`` left out: no division, so zeros are exact,
    at O(n^2) along the axis."""
    if axis is None:
        return np.reshape(cumprod_grad(np.reshape(a, -1), dy, 0), np.shape(a))
    last = axis % np.ndim(a) == np.ndim(a) - 1
    b, g = (a, dy) if last else (np.moveaxis(a, axis, -1), np.moveaxis(dy, axis, -1))
    k = np.arange(np.shape(b)[-1])
    others = np.cumprod(np.where(k[:, None] == k, 1.0, b[..., None, :]), -1)
    total = np.sum(np.where(k[:, None] <= k, others * g[..., None, :], 0.0), -1)
    return total if last else np.moveaxis(total, -1, axis)


@diffrule(np.diff, "a")
def diff_grad(a, dy, n=1, axis=-1):
    """One difference's adjoint is the difference the other way round, with the ends kept:
    ``dy`` padded before minus ``dy`` padded after; ``n`` differences take ``n`` of them."""
    before, after = [(0, 0)] * np.ndim(a), [(0, 0)] * np.ndim(a)
    before[axis], after[axis] = (1, 0), (0, 1)
    for _ in range(n):
        dy = np.pad(dy, before) - np.pad(dy, after)
    return dy


@cancels
def max_shift(tape, facts) -> set:
    """``s = x - np.max(x, axis, keepdims=True)`` read only by ``e = np.exp(s)``, ``e`` only by
    ``z = np.sum(e, axis, keepdims=True)`` (the same axis) and ``e / z``, ``z`` only by ``e / z``
    and ``l = np.log(z)``, ``l`` only by ``s - l``: the log-softmax ``s - l`` and the softmax
    ``e / z`` do not depend on the max, so the gradient of ``s``'s subtrahend adds up to zero
    (``-sum(ds, axis)``, with ``ds = dr - softmax * sum(dr)``) and is not emitted."""
    stmts, producer, readers = tape.stmts, facts.producer, facts.readers
    kept = set(facts.outputs)

    def made(v, fn):
        s = producer.get(v) if isinstance(v, Var) else None
        return s if s is not None and s.prim.fn is fn else None

    def read_by(v, allowed) -> bool:
        return v not in kept and all(allowed(stmts[j]) for j in readers.get(v, []))

    found = set()
    for index, stmt in enumerate(stmts):
        if stmt.prim.fn is not operator.sub or len(stmt.args) != 2:
            continue
        top = made(stmt.args[1], np.max)
        if top is None or not (top.param("keepdims") or top.param("axis") is None):
            continue
        axis, s = top.param("axis"), stmt.out
        exps = [stmts[j] for j in readers.get(s, []) if stmts[j].prim.fn is np.exp]
        sums = [stmts[j] for e in exps for j in readers.get(e.out, [])
                if stmts[j].prim.fn is np.sum]
        if len(exps) != 1 or len(sums) != 1 or sums[0].param("axis") != axis \
                or sums[0].param("keepdims") != top.param("keepdims"):
            continue
        e, z = exps[0].out, sums[0].out
        logs = [stmts[j].out for j in readers.get(z, []) if stmts[j].prim.fn is np.log]

        def softmax(r):
            return r.prim.fn is operator.truediv and r.args == (e, z)

        def log_softmax(r):
            return r.prim.fn is operator.sub and r.args[0] is s and r.args[1] in logs
        if read_by(s, lambda r: r is exps[0] or log_softmax(r)) \
                and read_by(e, lambda r: r is sums[0] or softmax(r)) \
                and read_by(z, lambda r: softmax(r) or r.prim.fn is np.log) \
                and all(read_by(v, log_softmax) for v in logs):
            found.add((index, "x2"))
    return found


# ----- np.gradient ----------------------------------------------------------------------------
# written with slices (frontend/numpy_calls.py inlines it): linear in f, so differentiated too
def gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient`` with uniform spacing (a number per axis): central differences inside,
    one-sided ones of ``edge_order`` 1 or 2 at the ends; a list of arrays for several axes."""
    axes = tuple(range(np.ndim(f))) if axis is None else \
        (axis,) if isinstance(axis, int) else tuple(axis)
    spacing = list(varargs) if len(varargs) == len(axes) else list(varargs) * len(axes) \
        if len(varargs) == 1 else [1.0] * len(axes)
    outs = [_gradient_along(f, a % np.ndim(f), h, edge_order) for a, h in zip(axes, spacing)]
    return outs[0] if len(outs) == 1 else _SEVERAL(outs)


def _gradient_along(f, axis, h, edge_order):
    if np.ndim(h) != 0:
        raise NotImplementedError("np.gradient with coordinate arrays: give a number per axis")
    if np.shape(f)[axis] < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "(edge_order + 1) elements are required.")

    def part(start, stop):
        key = [slice(None)] * np.ndim(f)
        key[axis] = slice(start, stop)
        return f[tuple(key)]
    inner = (part(2, None) - part(None, -2)) / (2.0 * h)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / h
        last = (part(-1, None) - part(-2, -1)) / h
    else:
        first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / h
        last = (0.5 * part(-3, -2) - 2.0 * part(-2, -1) + 1.5 * part(-1, None)) / h
    return np.concatenate((first, inner, last), axis=axis)


_SEVERAL = type(np.gradient(np.zeros((2, 2))))     # a tuple (a list before numpy 2)
WRITTEN = {np.gradient: gradient}


# -- batching (ys.vmap): the reduced axes are one further on --------------------------------

from .batching import after_batch  # noqa: E402


@batchrule(np.sum)
def sum_batched(a, axis=None, dtype=None, keepdims=False):
    return np.sum(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, keepdims=keepdims)


@batchrule(np.mean)
def mean_batched(a, axis=None, dtype=None, keepdims=False):
    return np.mean(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, keepdims=keepdims)


@batchrule(np.max)
def max_batched(a, axis=None, keepdims=False):
    return np.max(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.min)
def min_batched(a, axis=None, keepdims=False):
    return np.min(a, after_batch(axis, np.ndim(a) - 1), keepdims=keepdims)


@batchrule(np.prod)
def prod_batched(a, axis=None, dtype=None, keepdims=False):
    return np.prod(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, keepdims=keepdims)


@batchrule(np.std)
def std_batched(a, axis=None, dtype=None, ddof=0, keepdims=False):
    return np.std(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, ddof=ddof, keepdims=keepdims)


@batchrule(np.var)
def var_batched(a, axis=None, dtype=None, ddof=0, keepdims=False):
    return np.var(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, ddof=ddof, keepdims=keepdims)


@batchrule(np.nansum)
def nansum_batched(a, axis=None, dtype=None, keepdims=False):
    return np.nansum(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, keepdims=keepdims)


@batchrule(np.nanmean)
def nanmean_batched(a, axis=None, dtype=None, keepdims=False):
    return np.nanmean(a, after_batch(axis, np.ndim(a) - 1), dtype=dtype, keepdims=keepdims)


def flat_examples(a, axis):
    """The batch ``a`` and the axis of a scan over it: each example flattened for None."""
    if axis is None:
        return np.reshape(a, (np.shape(a)[0], -1)), 1
    return a, after_batch(axis, np.ndim(a) - 1)


@batchrule(np.cumsum)
def cumsum_batched(a, axis=None, dtype=None):
    a, axis = flat_examples(a, axis)
    return np.cumsum(a, axis, dtype=dtype)


@batchrule(np.cumprod)
def cumprod_batched(a, axis=None, dtype=None):
    a, axis = flat_examples(a, axis)
    return np.cumprod(a, axis, dtype=dtype)


@batchrule(np.diff)
def diff_batched(a, n=1, axis=-1):
    return np.diff(a, n, after_batch(axis, np.ndim(a) - 1))
