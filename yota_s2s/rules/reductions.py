"""Reductions: sum, mean, max, min, prod (with axis and keepdims), and their ndarray methods.

The gradient of a reduction spreads ``dy`` back over the reduced axes: ``expand_dims`` puts the
reduced axes back (unless ``keepdims`` kept them) and ``broadcast_to`` repeats it, without a copy.
"""
import numpy as np

from .registry import alias, diffrule, primitive

primitive(np.sum,  "a, axis=None, dtype=None, keepdims=False")
primitive(np.mean, "a, axis=None, dtype=None, keepdims=False")
primitive(np.max,  "a, axis=None, keepdims=False")
primitive(np.min,  "a, axis=None, keepdims=False")
primitive(np.prod, "a, axis=None, dtype=None, keepdims=False")
primitive(np.cumsum, "a, axis=None, dtype=None")
primitive(np.cumprod, "a, axis=None, dtype=None")
alias(np.amax, np.max)
alias(np.amin, np.min)


def restore_axes(dy, axis, keepdims):
    """``dy`` with the reduced axes back as size-1 axes, so it broadcasts against the input."""
    if axis is None or keepdims:
        return dy
    return np.expand_dims(dy, axis)


@diffrule(np.sum, "a")
def sum_grad(a, dy, axis=None, keepdims=False):
    return np.broadcast_to(restore_axes(dy, axis, keepdims), a.shape)


@diffrule(np.mean, "a")
def mean_grad(a, y, dy, axis=None, keepdims=False):
    return np.broadcast_to(restore_axes(dy, axis, keepdims), a.shape) / (a.size // max(np.size(y), 1))


@diffrule(np.max, "a")
def max_grad(a, y, dy, axis=None, keepdims=False):
    """Ties share the gradient equally, as in autograd and JAX."""
    y, dy = restore_axes(y, axis, keepdims), restore_axes(dy, axis, keepdims)
    hit = a == y
    return dy * hit / np.sum(hit, axis=axis, keepdims=True)


diffrule(np.min, "a", max_grad)


@diffrule(np.prod, "a")
def prod_grad(a, dy, axis=None, keepdims=False):
    """The product of all the other elements: exclusive products from the left and from the
    right, so zeros in ``a`` are exact (``y / a`` would give nan)."""
    if axis is None:
        return np.reshape(prod_grad(np.reshape(a, -1), np.reshape(dy, (1,)), 0, True), a.shape)
    dy = restore_axes(dy, axis, keepdims)
    b = np.moveaxis(a, axis, -1)
    ones = np.ones(b.shape[:-1] + (1,), b.dtype)
    left = np.cumprod(np.concatenate((ones, b[..., :-1]), -1), -1)
    right = np.flip(np.cumprod(np.concatenate((ones, np.flip(b, -1)[..., :-1]), -1), -1), -1)
    return dy * np.moveaxis(left * right, -1, axis)
