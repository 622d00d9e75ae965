"""Arrays made inside the function: no gradient flows into their shapes; fill values and the
ends of ``np.linspace`` get theirs.

These are primitives that ``creates`` arrays: even with all-static arguments they are recorded
(the array is made when the generated code runs), not baked into the code as a constant.
``out_form="fill"``: codegen can fill a work array instead (``buf.fill(0.0)``); ``"empty"``:
it can take a work array as it is; ``"fill_like"``, ``"empty_like"``: so too, the first operand
giving the shape and dtype alone (``np.zeros_like(c)``: ``lo = buf3; lo.fill(0.0)``).
"""
import numpy as np

from .registry import batchrule, diffrule, nodiff, primitive

primitive(np.zeros,      "shape, dtype=None", creates=True, out_form="fill")
primitive(np.ones,       "shape, dtype=None", creates=True, out_form="fill")
primitive(np.empty,      "shape, dtype=None", creates=True, out_form="empty")
primitive(np.full,       "shape, fill_value, dtype=None", creates=True, out_form="fill",
          linear=True)
primitive(np.zeros_like, "a, dtype=None, shape=None", creates=True, out_form="fill_like")
primitive(np.ones_like,  "a, dtype=None", creates=True, out_form="fill_like")
primitive(np.empty_like, "a, dtype=None", creates=True, out_form="empty_like")
primitive(np.full_like,  "a, fill_value, dtype=None", creates=True, out_form="fill_like")
primitive(np.arange,     "start, stop=None, step=None, dtype=None", creates=True)
primitive(np.linspace,   "start, stop, num=50, endpoint=True, dtype=None", creates=True)
primitive(np.eye,        "N, M=None, k=0, dtype=None", creates=True)
primitive(np.identity,   "n, dtype=None", creates=True)
primitive(np.array,      "object, dtype=None", creates=True)
primitive(np.asarray,    "a, dtype=None", creates=True)
for fn in (np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
           np.arange, np.eye, np.identity, np.array, np.asarray):
    nodiff(fn)

# A traced fill value or end point is a value like any other: ``np.full(s, a)`` is ``a``
# broadcast (ad/sweep.py sums ``dy`` back to its shape), ``np.linspace`` is linear in both ends.
nodiff(np.full, "shape")
diffrule(np.full, "fill_value", "dy", ignores=("dtype",))
nodiff(np.full_like, "a")
diffrule(np.full_like, "fill_value", "dy", ignores=("dtype",))


def _linspace_steps(dy, num, endpoint):
    """Where each of ``num`` points lies between start (0) and stop (1), along axis 0."""
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    return np.reshape(t, (num,) + (1,) * (np.ndim(dy) - 1))


@diffrule(np.linspace, "start", ignores=("dtype",))
def linspace_grad_start(start, stop, dy, num=50, endpoint=True):
    return dy * (1.0 - _linspace_steps(dy, num, endpoint))


@diffrule(np.linspace, "stop", ignores=("dtype",))
def linspace_grad_stop(start, stop, dy, num=50, endpoint=True):
    return dy * _linspace_steps(dy, num, endpoint)


# -- batching (ys.vmap): an array made like a batched one is a batch ------------------------

from .batching import lifted, lined_up  # noqa: E402


@batchrule(np.zeros_like)
def zeros_like_batched(a, dtype=None, shape=None):
    return np.zeros_like(a, dtype=dtype) if shape is None else \
        np.zeros((np.shape(a)[0],) + tuple(shape), dtype=dtype or a.dtype)


@batchrule(np.ones_like)
def ones_like_batched(a, dtype=None):
    return np.ones_like(a, dtype=dtype)


@batchrule(np.empty_like)
def empty_like_batched(a, dtype=None):
    return np.empty_like(a, dtype=dtype)


@batchrule(np.full_like)
def full_like_batched(a, fill_value, batched, size, dtype=None):
    return np.full_like(lifted(a, batched[0], size),
                        lined_up(fill_value, batched[1], np.ndim(a) - batched[0]), dtype=dtype)


@batchrule(np.full)
def full_batched(shape, fill_value, batched, size, dtype=None):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return np.full((size,) + shape, lined_up(fill_value, True, len(shape)), dtype=dtype)


@batchrule(np.asarray)
def asarray_batched(a, batched, size, dtype=None):
    if isinstance(a, tuple):        # a list of values: each example's array of them
        return np.stack([lifted(np.asarray(x, dtype=dtype), b, size)
                         for x, b in zip(a, batched[0])], axis=1)
    return np.asarray(a, dtype=dtype)


@batchrule(np.array)
def array_batched(object, batched, size, dtype=None):
    if isinstance(object, tuple):
        return np.stack([lifted(np.asarray(x, dtype=dtype), b, size)
                         for x, b in zip(object, batched[0])], axis=1)
    return np.array(object, dtype=dtype)


@batchrule(np.linspace)
def linspace_batched(start, stop, batched, size, num=50, endpoint=True, dtype=None):
    """Each example's points: its start plus its span times where each point lies."""
    n = max(np.ndim(start) - batched[0], np.ndim(stop) - batched[1])
    start = np.expand_dims(lined_up(lifted(start, batched[0], size), True, n), 1)
    stop = np.expand_dims(lined_up(lifted(stop, batched[1], size), True, n), 1)
    steps = np.reshape(np.linspace(0.0, 1.0, num, endpoint=endpoint), (1, num) + (1,) * n)
    points = start + (stop - start) * steps
    return points if dtype is None else points.astype(dtype)
