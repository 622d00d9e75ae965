"""Shape operations: reshape, transpose, expand_dims, squeeze, broadcast_to, concatenate, stack,
and the axis movers the other rules use.

Most are linear maps that only move elements, so the gradient moves ``dy`` back: a reshape is
undone by reshaping to the input's shape, a transpose by the inverse permutation, a
concatenation by slicing ``dy`` into the pieces.
"""
import numpy as np

from .registry import diffrule, primitive


def ravel(a):
    """``x.ravel()`` / ``x.flatten()``: the flattened array."""
    return np.reshape(a, -1)


primitive(ravel, "a", name="ravel", emit=("method", "ravel"), view=True)
primitive(np.reshape, "a, shape", view=True)
primitive(np.transpose, "a, axes=None", view=True)
primitive(np.expand_dims, "a, axis", view=True)
primitive(np.squeeze, "a, axis=None", view=True)
primitive(np.broadcast_to, "array, shape", view=True)
primitive(np.swapaxes, "a, axis1, axis2", view=True)
primitive(np.moveaxis, "a, source, destination", view=True)
primitive(np.flip, "m, axis=None", view=True)
primitive(np.concatenate, "arrays, axis=0")
primitive(np.stack, "arrays, axis=0")
primitive(np.copy, "a")

diffrule(ravel,          "a", "np.reshape(dy, a.shape)")
diffrule(np.reshape,     "a", "np.reshape(dy, a.shape)")
diffrule(np.expand_dims, "a", "np.reshape(dy, a.shape)")
diffrule(np.squeeze,     "a", "np.reshape(dy, a.shape)")
diffrule(np.broadcast_to, "array", "dy")          # backward.py sums the broadcast axes
diffrule(np.swapaxes,    "a", "np.swapaxes(dy, axis1, axis2)")
diffrule(np.moveaxis,    "a", "np.moveaxis(dy, destination, source)")
diffrule(np.flip,        "m", "np.flip(dy, axis)")
diffrule(np.copy,        "a", "dy")


@diffrule(np.transpose, "a")
def transpose_grad(a, dy, axes=None):
    if axes is None:
        return np.transpose(dy)
    return np.transpose(dy, tuple(int(i) for i in np.argsort(axes)))


@diffrule(np.concatenate, "arrays")
def concatenate_grad(arrays, dy, axis=0):
    """One slice of ``dy`` per input, along ``axis``."""
    before = (slice(None),) * (axis % dy.ndim)
    grads, start = [], 0
    for a in arrays:
        stop = start + np.shape(a)[axis]
        grads.append(dy[before + (slice(start, stop),)])
        start = stop
    return tuple(grads)


@diffrule(np.stack, "arrays")
def stack_grad(arrays, dy, axis=0):
    before = (slice(None),) * (axis % dy.ndim)
    return tuple(dy[before + (i,)] for i in range(len(arrays)))
