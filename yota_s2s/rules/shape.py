"""Shape operations: reshape ravel flatten squeeze expand_dims atleast_1d/2d/3d broadcast_to,
transpose swapaxes moveaxis rollaxis, flip fliplr flipud rot90 roll, copy.

These are linear maps that only move elements, so the gradient moves ``dy`` back: a reshape is
undone by reshaping to the input's shape, a transpose by the inverse permutation, a flip or a
roll by the same flip or the opposite roll. A broadcast's gradient is summed back to the
input's shape centrally, in ad/sweep.py.
"""
import numpy as np

from .registry import alias, batchrule, diffrule, primitive


def ravel(a):
    """``x.ravel()`` and ``np.ravel(x)``: the flattened array (a view where possible)."""
    return np.reshape(a, -1)


def flatten(a):
    """``x.flatten()``: a flattened copy."""
    return np.array(a, copy=True).reshape(-1)


primitive(ravel, "a", name="ravel", emit=("method", "ravel"), view=True, linear=True)
alias(np.ravel, ravel)
primitive(flatten, "a", name="flatten", emit=("method", "flatten"), linear=True)
primitive(np.reshape, "a, shape, order='C'", view=True, method="reshape", linear=True,
          array_first=True)
primitive(np.transpose, "a, axes=None", view=True, linear=True, sparse=True)   # A.T: sparse too
primitive(np.expand_dims, "a, axis", view=True, linear=True, array_first=True)
primitive(np.squeeze, "a, axis=None", view=True, linear=True)
primitive(np.atleast_1d, "ary", view=True, linear=True)
primitive(np.atleast_2d, "ary", view=True, linear=True)
primitive(np.atleast_3d, "ary", view=True, linear=True)
primitive(np.broadcast_to, "array, shape", view=True, linear=True, array_first=True)
primitive(np.swapaxes, "a, axis1, axis2", view=True, linear=True)
primitive(np.moveaxis, "a, source, destination", view=True, linear=True)
primitive(np.rollaxis, "a, axis, start=0", view=True, linear=True)
primitive(np.flip, "m, axis=None", view=True, linear=True)
primitive(np.fliplr, "m", view=True, linear=True)
primitive(np.flipud, "m", view=True, linear=True)
primitive(np.rot90, "m, k=1, axes=(0, 1)", view=True, linear=True)
primitive(np.roll, "a, shift, axis=None", linear=True, cheap=True)
primitive(np.copy, "a", method="copy", out_form="copy", linear=True)

diffrule(ravel,          "a", "np.reshape(dy, a.shape)")
diffrule(flatten,        "a", "np.reshape(dy, a.shape)")
diffrule(np.reshape,     "a", "np.reshape(dy, a.shape, order=order)")
diffrule(np.expand_dims, "a", "np.reshape(dy, a.shape)")
diffrule(np.squeeze,     "a", "np.reshape(dy, a.shape)", ignores=("axis",))
diffrule(np.atleast_1d,  "ary", "np.reshape(dy, np.shape(ary))")
diffrule(np.atleast_2d,  "ary", "np.reshape(dy, np.shape(ary))")
diffrule(np.atleast_3d,  "ary", "np.reshape(dy, np.shape(ary))")
diffrule(np.broadcast_to, "array", "dy")          # ad/sweep.py sums the broadcast axes
diffrule(np.swapaxes,    "a", "np.swapaxes(dy, axis1, axis2)")
diffrule(np.moveaxis,    "a", "np.moveaxis(dy, destination, source)")
diffrule(np.flip,        "m", "np.flip(dy, axis)")
diffrule(np.fliplr,      "m", "np.fliplr(dy)")
diffrule(np.flipud,      "m", "np.flipud(dy)")
diffrule(np.rot90,       "m", "np.rot90(dy, -k, axes)")
diffrule(np.copy,        "a", "dy")


@diffrule(np.transpose, "a")
def transpose_grad(a, dy, axes=None):
    if axes is None:
        return np.transpose(dy)
    return np.transpose(dy, tuple(int(i) for i in np.argsort(axes)))


@diffrule(np.rollaxis, "a")
def rollaxis_grad(a, dy, axis, start=0):
    """``rollaxis`` moves ``axis`` to ``start`` (one less when moving right); move it back."""
    n = np.ndim(a)
    axis, start = axis % n, start + n if start < 0 else start
    return np.moveaxis(dy, start - 1 if axis < start else start, axis)


@diffrule(np.roll, "a")
def roll_grad(a, dy, shift, axis=None):
    """Roll back by the same amount."""
    back = -shift if isinstance(shift, int) else tuple(-s for s in shift)
    return np.roll(dy, back, axis)


# -- batching (ys.vmap): the example's axes are one further on -------------------------------

from .batching import after_batch, lined_up  # noqa: E402


@batchrule(np.reshape)
def reshape_batched(a, shape, order="C"):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if order == "F":               # the batch last, where F order keeps it apart
        moved = np.reshape(np.moveaxis(a, 0, -1), shape + (np.shape(a)[0],), order="F")
        return np.moveaxis(moved, -1, 0)
    return np.reshape(a, (np.shape(a)[0],) + shape)


@batchrule(ravel)
def ravel_batched(a):
    return np.reshape(a, (np.shape(a)[0], -1))


@batchrule(flatten)
def flatten_batched(a):
    return np.reshape(a, (np.shape(a)[0], -1))


@batchrule(np.transpose)
def transpose_batched(a, axes=None):
    n = np.ndim(a) - 1
    if axes is None:
        return np.transpose(a, (0,) + tuple(range(n, 0, -1)))
    return np.transpose(a, (0,) + after_batch(tuple(axes), n))


@batchrule(np.expand_dims)
def expand_dims_batched(a, axis):
    rank = np.ndim(a) - 1 + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    return np.expand_dims(a, after_batch(axis, rank))


@batchrule(np.squeeze)
def squeeze_batched(a, axis=None):
    if axis is None:
        axis = tuple(i for i, n in enumerate(np.shape(a)[1:]) if n == 1)
    return np.squeeze(a, after_batch(axis, np.ndim(a) - 1)) if axis != () else a


@batchrule(np.broadcast_to)
def broadcast_to_batched(array, shape):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return np.broadcast_to(lined_up(array, True, len(shape)), (np.shape(array)[0],) + shape)


@batchrule(np.swapaxes)
def swapaxes_batched(a, axis1, axis2):
    n = np.ndim(a) - 1
    return np.swapaxes(a, after_batch(axis1, n), after_batch(axis2, n))


@batchrule(np.moveaxis)
def moveaxis_batched(a, source, destination):
    n = np.ndim(a) - 1
    return np.moveaxis(a, after_batch(source, n), after_batch(destination, n))


@batchrule(np.flip)
def flip_batched(m, axis=None):
    return np.flip(m, after_batch(axis, np.ndim(m) - 1))


@batchrule(np.fliplr)
def fliplr_batched(m):
    return np.flip(m, 2)


@batchrule(np.flipud)
def flipud_batched(m):
    return np.flip(m, 1)


@batchrule(np.roll)
def roll_batched(a, shift, axis=None):
    if axis is None:
        flat = np.roll(np.reshape(a, (np.shape(a)[0], -1)), shift, 1)
        return np.reshape(flat, np.shape(a))
    return np.roll(a, shift, after_batch(axis, np.ndim(a) - 1))


@batchrule(np.copy)
def copy_batched(a):
    return np.copy(a)


@batchrule(np.atleast_1d)
def atleast_1d_batched(ary):
    return ary if np.ndim(ary) > 1 else np.reshape(ary, (np.shape(ary)[0], 1))


@batchrule(np.atleast_2d)
def atleast_2d_batched(ary):
    if np.ndim(ary) > 2:
        return ary
    return np.reshape(ary, (np.shape(ary)[0], 1, -1) if np.ndim(ary) == 2 else
                      (np.shape(ary)[0], 1, 1))


@batchrule(np.atleast_3d)
def atleast_3d_batched(ary):
    n = np.ndim(ary) - 1
    if n == 0:
        return np.reshape(ary, (np.shape(ary)[0], 1, 1, 1))
    if n == 1:
        return np.expand_dims(ary, (1, 3))
    return np.expand_dims(ary, 3) if n == 2 else ary


@batchrule(np.rollaxis)
def rollaxis_batched(a, axis, start=0):
    n = np.ndim(a) - 1
    return np.rollaxis(a, axis % n + 1, (start + n if start < 0 else start) + 1)


@batchrule(np.rot90)
def rot90_batched(m, k=1, axes=(0, 1)):
    n = np.ndim(m) - 1
    return np.rot90(m, k, (after_batch(axes[0], n), after_batch(axes[1], n)))
