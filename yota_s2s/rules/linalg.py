"""Products: ``@`` (matmul) in its 1-D, 2-D and batched forms, and ``np.dot``.

For ``y = x1 @ x2`` with matrices, ``dx1 = dy @ x2.T`` and ``dx2 = x1.T @ dy``. A 1-D operand
is a vector on that side, and batched operands transpose their last two axes; batch axes that
were broadcast are summed back by backward.py.
"""
import operator

import numpy as np

from .registry import alias, diffrule, primitive

primitive(operator.matmul, "x1, x2", name="matmul", emit=("binop", "@"))
alias(np.matmul, operator.matmul)


def mT(x):
    """Swap the last two axes (``x.T`` for a matrix)."""
    return x.T if x.ndim == 2 else np.swapaxes(x, -1, -2)


@diffrule(operator.matmul, "x1")
def matmul_grad_x1(x1, x2, dy):
    if x2.ndim == 1:
        return dy[..., None] * x2 if x1.ndim > 1 else dy * x2
    if x1.ndim == 1:
        return x2 @ dy if x2.ndim == 2 else (x2 @ dy[..., None])[..., 0]
    return dy @ mT(x2)


@diffrule(operator.matmul, "x2")
def matmul_grad_x2(x1, x2, dy):
    if x1.ndim == 1:
        return x1[:, None] * dy[..., None, :] if x2.ndim > 1 else dy * x1
    if x2.ndim == 1:
        return dy @ x1 if x1.ndim == 2 else (dy[..., None, :] @ x1)[..., 0, :]
    return mT(x1) @ dy


primitive(np.dot, "a, b")
primitive(np.tensordot, "a, b, axes=2")


@diffrule(np.dot, "a")
def dot_grad_a(a, b, dy):
    """``np.dot`` is ``@`` for operands up to 2-D, and scaling when one is a scalar."""
    if a.ndim == 0 or b.ndim == 0:
        return np.sum(dy * b) if a.ndim == 0 else dy * b
    if a.ndim > 2 or b.ndim > 2:
        return np.tensordot(dy, b, (tuple(range(a.ndim - 1, dy.ndim)), tuple(_dot_rest(b))))
    return matmul_grad_x1(a, b, dy)


@diffrule(np.dot, "b")
def dot_grad_b(a, b, dy):
    if a.ndim == 0 or b.ndim == 0:
        return np.sum(dy * a) if b.ndim == 0 else dy * a
    if a.ndim > 2 or b.ndim > 2:
        moved = np.tensordot(a, dy, (tuple(range(a.ndim - 1)), tuple(range(a.ndim - 1))))
        return np.moveaxis(moved, 0, -2) if b.ndim > 1 else moved
    return matmul_grad_x2(a, b, dy)


def _dot_rest(b):
    """The axes of ``b`` other than the summed one (second to last, or the only one)."""
    summed = b.ndim - 2 if b.ndim > 1 else 0
    return [i for i in range(b.ndim) if i != summed]
