"""Products: ``@`` (matmul) in its 1-D, 2-D and batched forms, ``np.dot``, ``vdot``, ``inner``,
``outer``, ``kron``, ``tensordot``, ``cross`` and ``einsum`` with any subscripts.

For ``y = x1 @ x2`` with matrices, ``dx1 = dy @ x2.T`` and ``dx2 = x1.T @ dy``: each operand's
gradient contracts ``dy`` with the other operand over the axes they did not share. A 1-D
operand is a vector on that side, and batched operands transpose their last two axes; batch
axes that were broadcast are summed back by ad/sweep.py. ``einsum`` gets the same treatment in
its own language: the gradient of an operand is the einsum that puts ``dy`` in its place.
"""
import operator

import numpy as np

from .registry import alias, batchrule, diffrule, primitive

primitive(operator.matmul, "x1, x2", name="matmul", emit=("binop", "@"), out_form="matmul", multilinear=True, sparse=True)
alias(np.matmul, operator.matmul)
primitive(np.dot, "a, b", multilinear=True, out_form="dot")     # up to 2-D: matmul(a, b, out=)
primitive(np.vdot, "a, b", multilinear=True)
primitive(np.inner, "a, b", multilinear=True)
primitive(np.outer, "a, b", multilinear=True)
primitive(np.kron, "a, b", multilinear=True)
primitive(np.tensordot, "a, b, axes=2", multilinear=True)
primitive(np.einsum, "subscripts, *operands, optimize=False", view=True, multilinear=True)   # "ii->i" is a view


def mT(x):
    """Swap the last two axes (``x.T`` for a matrix)."""
    return x.T if np.ndim(x) == 2 else np.swapaxes(x, -1, -2)


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


@diffrule(np.dot, "a")
def dot_grad_a(a, b, dy):
    """``np.dot`` is ``@`` for operands up to 2-D, and scaling when one is a scalar."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.sum(dy * b) if np.ndim(a) == 0 else dy * b
    if np.ndim(a) > 2 or np.ndim(b) > 2:
        return tensordot_grad_a(a, b, dy, ((np.ndim(a) - 1,), (max(np.ndim(b) - 2, 0),)))
    return matmul_grad_x1(a, b, dy)


@diffrule(np.dot, "b")
def dot_grad_b(a, b, dy):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.sum(dy * a) if np.ndim(b) == 0 else dy * a
    if np.ndim(a) > 2 or np.ndim(b) > 2:
        return tensordot_grad_b(a, b, dy, ((np.ndim(a) - 1,), (max(np.ndim(b) - 2, 0),)))
    return matmul_grad_x2(a, b, dy)




@diffrule(np.vdot, "a")
def vdot_grad_a(a, b, dy):
    """``vdot`` flattens both and conjugates ``a``: ``sum(conj(a) * b)``."""
    g = np.reshape(b, np.shape(a)) * dy
    return np.conj(g) if np.iscomplexobj(g) else g


@diffrule(np.vdot, "b")
def vdot_grad_b(a, b, dy):
    return np.reshape(np.conj(a) if np.iscomplexobj(a) else a, np.shape(b)) * dy


diffrule(np.outer, "a", "np.reshape(dy @ np.ravel(b), np.shape(a))")
diffrule(np.outer, "b", "np.reshape(np.ravel(a) @ dy, np.shape(b))")


@diffrule(np.inner, "a")
def inner_grad_a(a, b, dy):
    """``inner`` sums the last axes of ``a`` and ``b``; a scalar operand scales."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.sum(dy * b) if np.ndim(a) == 0 else dy * b
    return tensordot_grad_a(a, b, dy, ((np.ndim(a) - 1,), (np.ndim(b) - 1,)))


@diffrule(np.inner, "b")
def inner_grad_b(a, b, dy):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.sum(dy * a) if np.ndim(b) == 0 else dy * a
    return tensordot_grad_b(a, b, dy, ((np.ndim(a) - 1,), (np.ndim(b) - 1,)))


def tensordot_axes(axes, na, nb):
    """numpy's ``axes`` (an int N, or two sequences) as two tuples of non-negative axes."""
    if isinstance(axes, int):
        return tuple(range(na - axes, na)), tuple(range(axes))
    first, second = axes
    first = (first,) if isinstance(first, int) else tuple(first)
    second = (second,) if isinstance(second, int) else tuple(second)
    return tuple(i % na for i in first), tuple(i % nb for i in second)


@diffrule(np.tensordot, "a")
def tensordot_grad_a(a, b, dy, axes=2):
    """Contract ``dy`` with ``b`` over ``b``'s free axes, then put ``a``'s axes in order
    (tensordot keeps the axes it does not sum in their original order)."""
    summed_a, summed_b = tensordot_axes(axes, np.ndim(a), np.ndim(b))
    free_a = [i for i in range(np.ndim(a)) if i not in summed_a]
    free_b = [i for i in range(np.ndim(b)) if i not in summed_b]
    dy_b = tuple(range(len(free_a), len(free_a) + len(free_b)))
    g = np.tensordot(dy, b, (dy_b, tuple(free_b)))
    order = free_a + [summed_a[summed_b.index(i)] for i in sorted(summed_b)]
    return g if order == sorted(order) else np.transpose(g, tuple(np.argsort(order)))


@diffrule(np.tensordot, "b")
def tensordot_grad_b(a, b, dy, axes=2):
    summed_a, summed_b = tensordot_axes(axes, np.ndim(a), np.ndim(b))
    free_a = [i for i in range(np.ndim(a)) if i not in summed_a]
    free_b = [i for i in range(np.ndim(b)) if i not in summed_b]
    g = np.tensordot(a, dy, (tuple(free_a), tuple(range(len(free_a)))))
    order = [summed_b[summed_a.index(i)] for i in sorted(summed_a)] + free_b
    return g if order == sorted(order) else np.transpose(g, tuple(np.argsort(order)))


def kron_blocks(a, b, dy):
    """``dy`` as blocks: axes (a0, b0, a1, b1, ...), with both shapes padded to one ndim."""
    nd = max(np.ndim(a), np.ndim(b))
    sa = (1,) * (nd - np.ndim(a)) + np.shape(a)
    sb = (1,) * (nd - np.ndim(b)) + np.shape(b)
    return np.reshape(dy, interleave(sa, sb)), sa, sb


def interleave(first, second):
    return tuple(n for pair in zip(first, second) for n in pair)


@diffrule(np.kron, "a")
def kron_grad_a(a, b, dy):
    """Each element of ``a`` scales one block, a copy of ``b``: sum the blocks times ``b``."""
    blocks, sa, sb = kron_blocks(a, b, dy)
    copies = np.reshape(b, interleave((1,) * len(sb), sb))
    return np.reshape(np.sum(blocks * copies, axis=tuple(range(1, 2 * len(sa), 2))), np.shape(a))


@diffrule(np.kron, "b")
def kron_grad_b(a, b, dy):
    blocks, sa, sb = kron_blocks(a, b, dy)
    scales = np.reshape(a, interleave(sa, (1,) * len(sa)))
    return np.reshape(np.sum(blocks * scales, axis=tuple(range(0, 2 * len(sa), 2))), np.shape(b))


@diffrule(np.einsum, "operands", ignores=("optimize",))
def einsum_grad(subscripts, operands, dy):
    """For each operand, the einsum with ``dy`` in its place that produces its term."""
    terms, output = einsum_terms(subscripts, [np.shape(op) for op in operands])
    return tuple(einsum_term_grad(terms, output, operands, dy, k) for k in range(len(operands)))


def einsum_terms(subscripts, shapes):
    """``"ij,jk->ik"`` as (["ij", "jk"], "ik"): ``...`` spelled out with unused letters, and
    numpy's implicit output (the labels used once, sorted) made explicit."""
    spec = subscripts.replace(" ", "")
    inputs, output = spec.split("->") if "->" in spec else (spec, None)
    terms = inputs.split(",")
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in spec]
    width = max([len(s) - len(t) + 3 for t, s in zip(terms, shapes) if "..." in t] + [0])
    dots = "".join(free[:width])
    terms = [t.replace("...", dots[width - (len(s) - len(t) + 3):]) if "..." in t else t
             for t, s in zip(terms, shapes)]
    if output is None:
        labels = "".join(terms)
        output = dots + "".join(sorted(c for c in set(labels) if labels.count(c) == 1
                                       and c not in dots))
    return terms, output.replace("...", dots)


def einsum_or_same(spec, *operands):
    """``np.einsum(spec, *operands)``, or the operand itself where the spec changes nothing."""
    inputs, output = spec.split("->")
    return operands[0] if inputs == output else np.einsum(spec, *operands)


def einsum_term_grad(terms, output, operands, dy, k):
    """The gradient of operand ``k``: an einsum over the others and ``dy``; a label repeated
    within its term (a diagonal) goes back through an identity, a label nothing else has (it
    was summed away) comes back by broadcasting."""
    target = terms[k]
    others = terms[:k] + terms[k + 1:] + [output]
    known = "".join(others)
    labels = "".join(c for i, c in enumerate(target) if c in known and c not in target[:i])
    g = einsum_or_same(",".join(others) + "->" + labels, *operands[:k], *operands[k + 1:], dy)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in known + target]
    renamed, eyes = "", []
    for i, c in enumerate(target):
        if c in target[:i]:                         # a repeated label: a diagonal
            renamed += spare[len(eyes)]
            eyes.append((c + spare[len(eyes)], np.eye(np.shape(operands[k])[i])))
        elif c in known or target.count(c) > 1:
            renamed += c
    if eyes and not labels:                 # a scalar times the diagonal
        g = g * einsum_or_same(",".join(e for e, _ in eyes) + "->" + renamed, *[m for _, m in eyes])
    elif eyes:
        g = np.einsum(",".join([labels] + [e for e, _ in eyes]) + "->" + renamed, g,
                      *[m for _, m in eyes])
    missing = tuple(i for i, c in enumerate(target) if c not in known and target.count(c) == 1)
    if missing:
        g = np.broadcast_to(np.expand_dims(g, missing), np.shape(operands[k]))
    return g


# ----- cross product ------------------------------------------------------------------------
# of vectors along the last axis: 3-vectors give a vector, 2-vectors the z component
primitive(np.cross, "a, b", multilinear=True)


@diffrule(np.cross, "a")
def cross_grad_a(a, b, dy):
    """``b x dy`` (of 2-vectors: ``dy`` times ``(b1, -b0)``)."""
    if np.shape(b)[-1] == 2:
        dy = np.expand_dims(dy, -1)
        return np.concatenate((b[..., 1:] * dy, -b[..., :1] * dy), axis=-1)
    return np.cross(b, dy)


@diffrule(np.cross, "b")
def cross_grad_b(a, b, dy):
    """``dy x a`` (of 2-vectors: ``dy`` times ``(-a1, a0)``)."""
    if np.shape(a)[-1] == 2:
        dy = np.expand_dims(dy, -1)
        return np.concatenate((-a[..., 1:] * dy, a[..., :1] * dy), axis=-1)
    return np.cross(dy, a)


def cross_axes(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross`` of the vectors along ``axisa`` of ``a`` and ``axisb`` of ``b``, the result's
    along ``axisc`` (``axis``: all three), as numpy computes it: the primitive's cross of the
    last axes between ``np.moveaxis`` calls (frontend/numpy_calls.py inlines it where a call
    gives an axis). Of two 2-vectors the result is their z component, with no vector axis."""
    if axis is not None:
        axisa = axisb = axisc = axis
    c = np.cross(np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1))
    if np.shape(a)[axisa] == 2 and np.shape(b)[axisb] == 2:
        return c
    return np.moveaxis(c, -1, axisc)


CROSS_AXES = ("axisa", "axisb", "axisc", "axis")


# -- batching (ys.vmap) ----------------------------------------------------------------------

from .batching import example_ndim, lifted, lined_up  # noqa: E402


@batchrule(operator.matmul)
def matmul_batched(x1, x2, batched):
    """A batch of vectors or matrices times the same matrix is one ``@`` (one BLAS call); two
    batches pair example with example, vectors as matrices of one row or column."""
    b1, b2 = batched
    n1, n2 = example_ndim(x1, b1), example_ndim(x2, b2)
    if not b2 and n2 == 2:
        return x1 @ x2                           # (B, ..., k) @ (k, m)
    if not b1 and n1 == 2 and n2 == 1:
        return x2 @ mT(x1)                       # A @ x_i: x_i @ A.T
    if n1 == 1 and n2 == 1:
        return np.einsum("bk,bk->b", lifted(x1, b1, np.shape(x2)[0]) if not b1 else x1,
                         lifted(x2, b2, np.shape(x1)[0]) if not b2 else x2)
    m1, m2 = max(n1, 2), max(n2, 2)
    rank = max(m1, m2)
    x1 = lined_up(np.expand_dims(x1, -2) if n1 == 1 else x1, b1, rank)
    x2 = lined_up(np.expand_dims(x2, -1) if n2 == 1 else x2, b2, rank)
    y = x1 @ x2
    if n1 == 1:
        return y[..., 0, :]
    return y[..., 0] if n2 == 1 else y


@batchrule(np.dot)
def dot_batched(a, b, batched):
    """``np.dot`` is ``@`` up to 2-D, ``*`` with a scalar."""
    ba, bb = batched
    na, nb = example_ndim(a, ba), example_ndim(b, bb)
    if na == 0 or nb == 0:
        rank = max(na, nb)
        return lined_up(a, ba, rank) * lined_up(b, bb, rank)
    if na <= 2 and nb <= 2:
        return matmul_batched(a, b, batched)
    return np.einsum(batched_subscripts(dot_subscripts(na, nb), batched), a, b)


def dot_subscripts(na, nb):
    """``np.dot`` of arrays of ``na`` and ``nb`` dimensions as einsum subscripts."""
    left = "abcdefgh"[:na]
    right = "ijklmnop"[:nb - 2] + left[-1] + "q"
    return f"{left},{right}->{left[:-1]}{right[:-2]}q"


def batched_subscripts(subscripts, batched):
    """einsum's ``subscripts`` with the batch letter ``Z`` in front of each batched operand and
    of the result (its implicit result spelled out)."""
    if "->" in subscripts:
        ins, out = subscripts.replace(" ", "").split("->")
    else:
        ins = subscripts.replace(" ", "")
        letters = ins.replace(",", "").replace(".", "")
        out = ("..." if "..." in ins else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    parts = ins.split(",")
    return ",".join("Z" + p if flag else p for p, flag in zip(parts, batched)) + "->Z" + out


@batchrule(np.einsum)
def einsum_batched(subscripts, operands, batched, optimize=False):
    return np.einsum(batched_subscripts(subscripts, batched[1]), *operands, optimize=optimize)


@batchrule(np.outer)
def outer_batched(a, b, batched, size):
    return np.einsum("Zi,Zj->Zij", np.reshape(lifted(a, batched[0], size), (size, -1)),
                     np.reshape(lifted(b, batched[1], size), (size, -1)))


@batchrule(np.inner)
def inner_batched(a, b, batched):
    na, nb = example_ndim(a, batched[0]), example_ndim(b, batched[1])
    if na == 0 or nb == 0:
        return dot_batched(a, b, batched)
    left, right = "abcdefgh"[:na - 1] + "k", "ijmnop"[:nb - 1] + "k"
    return np.einsum(batched_subscripts(f"{left},{right}->{left[:-1]}{right[:-1]}", batched), a, b)


@batchrule(np.vdot)
def vdot_batched(a, b, batched, size):
    a = np.reshape(lifted(np.conj(a), batched[0], size), (size, -1))
    return np.einsum("Zk,Zk->Z", a, np.reshape(lifted(b, batched[1], size), (size, -1)))


def tensordot_subscripts(na, nb, axes):
    """``np.tensordot(a, b, axes)`` of arrays of ``na`` and ``nb`` dimensions as einsum
    subscripts."""
    if isinstance(axes, int):
        axes = (tuple(range(na - axes, na)), tuple(range(axes)))
    left_axes, right_axes = axes
    left_axes = (left_axes,) if isinstance(left_axes, int) else tuple(left_axes)
    right_axes = (right_axes,) if isinstance(right_axes, int) else tuple(right_axes)
    left = list("abcdefghij"[:na])
    right = list("klmnopqrst"[:nb])
    for i, j in zip(left_axes, right_axes):
        right[j % nb] = left[i % na]
    kept = [c for i, c in enumerate(left) if i not in [k % na for k in left_axes]] + \
        [c for j, c in enumerate(right) if j not in [k % nb for k in right_axes]]
    return f"{''.join(left)},{''.join(right)}->{''.join(kept)}"


@batchrule(np.tensordot)
def tensordot_batched(a, b, batched, axes=2):
    subscripts = tensordot_subscripts(example_ndim(a, batched[0]), example_ndim(b, batched[1]),
                                      axes)
    return np.einsum(batched_subscripts(subscripts, batched), a, b)


@batchrule(np.kron)
def kron_batched(a, b, batched, size):
    """Every product of an element of ``a`` and one of ``b``, each axis of ``a``'s before the
    same axis of ``b``'s, merged: numpy's block layout, example by example."""
    n = max(example_ndim(a, batched[0]), example_ndim(b, batched[1]))
    a = np.reshape(lifted(a, batched[0], size), (size,) + (1,) * (n - example_ndim(a, batched[0]))
                   + np.shape(a)[batched[0]:])
    b = np.reshape(lifted(b, batched[1], size), (size,) + (1,) * (n - example_ndim(b, batched[1]))
                   + np.shape(b)[batched[1]:])
    left, right = "abcdefgh"[:n], "ijklmnop"[:n]
    pairs = "".join(x + y for x, y in zip(left, right))
    blocks = np.einsum(f"Z{left},Z{right}->Z{pairs}", a, b)
    return np.reshape(blocks, (size,) + tuple(np.shape(a)[k + 1] * np.shape(b)[k + 1]
                                               for k in range(n)))


@batchrule(np.cross)
def cross_batched(a, b, batched):
    rank = max(example_ndim(a, batched[0]), example_ndim(b, batched[1]))
    return np.cross(lined_up(a, batched[0], rank), lined_up(b, batched[1], rank))


# -- scipy.sparse matrices ---------------------------------------------------------------------
# ``@`` takes a scipy.sparse matrix read from outside the function (a global, a closure, a
# config: the ``sparse`` trait above, and np.transpose's in shape.py, for ``A.T``): ``A @ x``,
# ``x @ A``, ``A.T @ x``, ``A.dot(x)`` (frontend/resolve.py) of a dense ``x``, vector or matrix.
# matmul_grad_x1/x2 are written in ``@`` and ``.T`` only, which scipy's matrices have, so the
# gradient of ``x`` is ``A.T @ dy`` (``dy @ A`` for a vector) as for a dense ``A``, and the
# JVP ``A @ dx``; ``A``, a constant, gets none. The generated code reads ``A`` at run time and
# checks its format, shape and dtype (codegen/outside.py); any other primitive refuses it by
# name (frontend/primitive_calls.refuse_sparse), and so does an argument (frontend/flatten.py).
