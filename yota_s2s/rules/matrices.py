"""Matrix structure: ``diag``, ``diagonal``, ``trace``, ``tril``, ``triu``.

Reading a diagonal and writing one are each other's gradient: the gradient of
``np.diagonal(a)`` puts ``dy`` on the diagonal of an array of zeros, the gradient of
``np.diag(v)`` reads the diagonal of ``dy``. ``tril``/``triu`` keep their triangle of ``dy``.
"""
import numpy as np

from .indexing import setitem
from .registry import batchrule, diffrule, primitive

primitive(np.diag, "v, k=0", view=True, linear=True)   # of a matrix: a read-only view
primitive(np.diagonal, "a, offset=0, axis1=0, axis2=1", view=True, linear=True)
primitive(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None", linear=True)
primitive(np.tril, "m, k=0", linear=True)
primitive(np.triu, "m, k=0", linear=True)

diffrule(np.tril, "m", "np.tril(dy, k)")
diffrule(np.triu, "m", "np.triu(dy, k)")


@diffrule(np.diag, "v")
def diag_grad(v, dy, k=0):
    """A vector put on a diagonal reads it back; a matrix's diagonal goes back in place."""
    if np.ndim(v) == 1:
        return np.diagonal(dy, k)
    return diagonal_grad(v, dy, k)


@diffrule(np.diagonal, "a")
def diagonal_grad(a, dy, offset=0, axis1=0, axis2=1):
    """``dy`` on the diagonal of an array of zeros (built with the two axes last)."""
    shape = np.shape(a)
    first, second = axis1 % len(shape), axis2 % len(shape)
    rest = tuple(n for i, n in enumerate(shape) if i not in (first, second))
    i = np.arange(np.shape(dy)[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i + abs(offset), i)
    key = (Ellipsis, rows, cols) if rest else (rows, cols)
    if (first, second) == (len(shape) - 2, len(shape) - 1):
        return setitem(np.zeros_like(a), key, dy)
    g = setitem(np.zeros_like(a, shape=rest + (shape[first], shape[second])), key, dy)
    return np.moveaxis(g, (-2, -1), (first, second))


@diffrule(np.trace, "a", ignores=("dtype",))
def trace_grad(a, dy, offset=0, axis1=0, axis2=1):
    """``dy`` times the identity (shifted by ``offset``) on the two axes."""
    shape = np.shape(a)
    first, second = axis1 % len(shape), axis2 % len(shape)
    eye = np.eye(shape[first], shape[second], offset)
    if len(shape) == 2:
        return dy * eye if first < second else dy * eye.T
    return np.moveaxis(np.expand_dims(dy, (-2, -1)) * eye, (-2, -1), (first, second))


# -- batching (ys.vmap) ----------------------------------------------------------------------

from .batching import after_batch  # noqa: E402


@batchrule(np.diag)
def diag_batched(v, k=0):
    if np.ndim(v) == 2:             # vectors: a diagonal matrix each
        n = np.shape(v)[1] + abs(k)
        rows = np.arange(np.shape(v)[1]) + max(-k, 0)
        out = np.zeros((np.shape(v)[0], n, n), np.result_type(v))
        return setitem(out, (slice(None), rows, rows + k), v)
    return np.diagonal(v, k, 1, 2)


@batchrule(np.diagonal)
def diagonal_batched(a, offset=0, axis1=0, axis2=1):
    n = np.ndim(a) - 1
    return np.diagonal(a, offset, after_batch(axis1, n), after_batch(axis2, n))


@batchrule(np.trace)
def trace_batched(a, offset=0, axis1=0, axis2=1, dtype=None):
    n = np.ndim(a) - 1
    return np.trace(a, offset, after_batch(axis1, n), after_batch(axis2, n), dtype)


@batchrule(np.tril)
def tril_batched(m, k=0):
    return np.tril(m, k)


@batchrule(np.triu)
def triu_batched(m, k=0):
    return np.triu(m, k)
