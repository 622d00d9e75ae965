"""autograd's n-dimensional convolution, ``convolve(A, B, axes=None, dot_axes=((), ()),
mode='full')`` (its ``autograd.scipy.signal.convolve``; ``ys.signal.convolve``), and its rules.

Each axis of ``A`` and of ``B`` has one role. ``axes`` pairs axes of ``A`` with axes of ``B``
that are convolved (``None``: every axis of ``A`` with the same axis of ``B``); ``dot_axes``
pairs axes that are summed over, as ``np.tensordot`` does; every other axis is kept, as in an
outer product. The result's axes are ``A``'s kept ones, then ``B``'s, then one per convolved
pair, in the order of ``axes``. Along a pair of lengths ``m`` (``A``) and ``n`` (``B``) the full
convolution has ``m + n - 1`` entries, ``full[k] = sum_j A[k - j] B[j]``; the mode keeps a
window of it, as scipy's does: ``valid`` the ``|m - n| + 1`` where one operand covers the
other (from ``min(m, n) - 1``; one operand must be the longer on every pair), ``same`` the
``m`` in the middle (from ``(n - 1) // 2``).

Linear in each operand, its gradient is a convolution again: ``A``'s is ``dy`` convolved with
``B`` flipped on its convolved axes and summed over ``B``'s kept axes, in the adjoint mode
(full: valid; valid: full where ``A`` is the longer operand, else valid; same: valid of ``dy``
padded back to its full length), its axes put back in ``A``'s order; ``B``'s the same with
the roles swapped.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .registry import diffrule, primitive

MODES = ("full", "valid", "same")


def roles(ndim_a, ndim_b, axes, dot_axes):
    """``A``'s and ``B``'s axes by role, ``(convolved, dotted, kept)`` each, checked."""
    if axes is None:
        axes = (tuple(range(ndim_a)), tuple(range(ndim_a)))
    conv_a, conv_b = tuple(axes[0]), tuple(axes[1])
    dot_a, dot_b = tuple(dot_axes[0]), tuple(dot_axes[1])
    if len(conv_a) != len(conv_b) or len(dot_a) != len(dot_b):
        raise ValueError(f"convolve: axes={axes!r} and dot_axes={dot_axes!r} must pair the axes "
                         "of A with as many axes of B")
    for named, ndim in ((conv_a + dot_a, ndim_a), (conv_b + dot_b, ndim_b)):
        if len(set(named)) != len(named) or not all(0 <= i < ndim for i in named):
            raise ValueError(f"convolve: axes={axes!r}, dot_axes={dot_axes!r} name each axis of "
                             "an operand at most once, from 0 to its number of dimensions - 1")
    kept_a = tuple(i for i in range(ndim_a) if i not in conv_a + dot_a)
    kept_b = tuple(i for i in range(ndim_b) if i not in conv_b + dot_b)
    return (conv_a, dot_a, kept_a), (conv_b, dot_b, kept_b)


def window(m, n, mode):
    """``(start, length)``: where ``mode`` cuts one axis of the result from the full
    convolution of lengths ``m`` (A) and ``n`` (B)."""
    if mode == "full":
        return 0, m + n - 1
    if mode == "valid":
        return min(m, n) - 1, abs(m - n) + 1
    return (n - 1) // 2, m


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    """autograd's ``autograd.scipy.signal.convolve``: ``A`` and ``B`` convolved along the pairs
    of ``axes``, summed along those of ``dot_axes``, every other axis kept (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', not {mode!r}")
    A, B = np.asarray(A) if np.ndim(A) == 0 else A, np.asarray(B) if np.ndim(B) == 0 else B
    ra, rb = roles(np.ndim(A), np.ndim(B), axes, dot_axes)
    m, n = [A.shape[i] for i in ra[0]], [B.shape[j] for j in rb[0]]
    if mode == "valid" and not (all(p >= q for p, q in zip(m, n)) or
                                all(p <= q for p, q in zip(m, n))):
        raise ValueError(f"convolve: mode 'valid' needs one operand at least as long as the other"
                         f" on every convolved axis; A has {tuple(m)} there, B {tuple(n)}")
    cuts = [window(p, q, mode) for p, q in zip(m, n)]
    if np.prod(n) <= np.prod(m) or mode == "same":
        return slid(A, B, ra, rb, cuts)
    out = slid(B, A, rb, ra, cuts)      # B the longer: the same sums, B's kept axes first
    kept_a, kept_b = len(ra[2]), len(rb[2])
    return np.moveaxis(out, tuple(range(kept_b, kept_b + kept_a)), tuple(range(kept_a)))


def slid(X, Y, roles_x, roles_y, cuts):
    """``out[kept X, kept Y, k] = sum over the dotted axes and j of X[k + s - j] Y[j]`` on each
    convolved pair, ``(s, length)`` its cut: ``Y`` flipped, slid over ``X`` padded with zeros
    (one ``np.tensordot`` of the windows, a matrix product)."""
    (conv_x, dot_x, kept_x), (conv_y, dot_y, kept_y) = roles_x, roles_y
    widths = [(0, 0)] * X.ndim
    for i, j, (start, length) in zip(conv_x, conv_y, cuts):
        widths[i] = (Y.shape[j] - 1 - start, length + start - X.shape[i])
    windows = sliding_window_view(np.pad(X, widths), [Y.shape[j] for j in conv_y], conv_x)
    spans = tuple(range(X.ndim, windows.ndim))        # one axis per pair, after X's own
    out = np.tensordot(windows, np.flip(Y, conv_y), (dot_x + spans, dot_y + conv_y))
    # out's axes: X's kept and convolved ones in X's order, then Y's kept ones
    at = [i for i in range(X.ndim) if i not in dot_x]
    order = [at.index(i) for i in kept_x] + list(range(len(at), len(at) + len(kept_y))) + \
        [at.index(i) for i in conv_x]
    return np.transpose(out, order)


primitive(convolve, "A, B, axes=None, dot_axes=((), ()), mode='full'", name="ys.signal.convolve",
          multilinear=True)


# ----- the gradients: convolutions with the other operand flipped ----------------------------
def adjoint(dy, x_shape, Y, roles_x, roles_y, kept_y_at, mode, n):
    """The gradient of ``X`` (of shape ``x_shape``) in a convolution with ``Y``: ``dy``
    convolved with ``Y`` flipped on its convolved axes, summed over ``Y``'s kept axes (at
    ``kept_y_at`` in ``dy``), in ``X``'s axis order. ``n``: ``B``'s convolved lengths."""
    (conv_x, dot_x, kept_x), (conv_y, dot_y, kept_y) = roles_x, roles_y
    conv_dy = tuple(range(np.ndim(dy) - len(conv_x), np.ndim(dy)))
    if mode == "same":              # dy put back where 'same' cut it from the full result
        dy = np.pad(dy, [(0, 0)] * (np.ndim(dy) - len(n)) +
                    [((q - 1) // 2, q - 1 - (q - 1) // 2) for q in n])
    longer = any(x_shape[i] > np.shape(Y)[j] for i, j in zip(conv_x, conv_y))
    adjoint_mode = "full" if mode == "valid" and longer else "valid"     # both symmetric
    dotted = [dot_x[dot_y.index(j)] for j in sorted(dot_y)]    # X's, as Y's come in order
    swapped = dotted + list(kept_x) + list(conv_x)
    if dotted and kept_x and swapped == sorted(swapped):
        # Y first, so that the axes come in X's order: its dotted, kept, convolved ones
        return convolve(np.flip(Y, conv_y), dy, (conv_y, conv_dy), (kept_y, kept_y_at),
                        adjoint_mode)
    g = convolve(dy, np.flip(Y, conv_y), (conv_dy, conv_y), (kept_y_at, kept_y), adjoint_mode)
    order = list(kept_x) + dotted + list(conv_x)    # g's axes, as X's
    if order == sorted(order):
        return g
    return np.transpose(g, [order.index(i) for i in range(len(order))])


@diffrule(convolve, "A")
def convolve_grad_A(A, B, dy, axes=None, dot_axes=((), ()), mode="full"):
    """``dy`` convolved with ``B`` flipped, summed over ``B``'s kept axes."""
    ra, rb = roles(np.ndim(A), np.ndim(B), axes, dot_axes)
    n = [np.shape(B)[j] for j in rb[0]]
    kept_b_at = tuple(range(len(ra[2]), len(ra[2]) + len(rb[2])))
    return adjoint(dy, np.shape(A), B, ra, rb, kept_b_at, mode, n)


@diffrule(convolve, "B")
def convolve_grad_B(A, B, dy, axes=None, dot_axes=((), ()), mode="full"):
    """``dy`` convolved with ``A`` flipped, summed over ``A``'s kept axes."""
    ra, rb = roles(np.ndim(A), np.ndim(B), axes, dot_axes)
    n = [np.shape(B)[j] for j in rb[0]]
    return adjoint(dy, np.shape(B), A, rb, ra, tuple(range(len(ra[2]))), mode, n)
