"""Shape operations: reshape ravel flatten squeeze expand_dims atleast_1d/2d/3d broadcast_to,
transpose swapaxes moveaxis rollaxis, flip fliplr flipud rot90 roll, copy.

These are linear maps that only move elements, so the gradient moves ``dy`` back: a reshape is
undone by reshaping to the input's shape, a transpose by the inverse permutation, a flip or a
roll by the same flip or the opposite roll. A broadcast's gradient is summed back to the
input's shape centrally, in ad/sweep.py.
"""
import numpy as np

from .registry import alias, diffrule, primitive


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
primitive(np.transpose, "a, axes=None", view=True, linear=True)
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
