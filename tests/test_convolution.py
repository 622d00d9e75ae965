"""``ys.signal.convolve``: autograd's n-dimensional convolution (``axes``, ``dot_axes``,
``mode``), its values against a direct sum, its derivatives (reverse, forward, second order)
against finite differences, and, where autograd is installed, against autograd's own. The
gradient-check table has its cases too (tests/test_gradcheck_scipy.py, ``ys_convolve_*``)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.signal import convolve

# (A's shape, B's shape, axes, dot_axes): every axis; a longer B; pairs out of order, summed
# pairs out of order, kept axes on both sides (autograd's convnet layer is the fourth)
SHAPES = [
    ((5,), (3,), None, ((), ())),
    ((2, 3), (4, 4), None, ((), ())),
    ((6, 7), (3, 2), ([1, 0], [1, 0]), ((), ())),
    ((4, 2, 7, 6), (2, 3, 3, 2), ([2, 3], [2, 3]), ([1], [0])),
    ((2, 3, 4, 5), (3, 2, 2, 6), ([3], [3]), ([1, 0], [0, 1])),
    ((4, 3), (3, 5), ([0], [1]), ([], [])),
]
MODES = ["full", "valid", "same"]


def direct(A, B, axes, dot_axes, mode):
    """The convolution as its definition: each pair of convolved positions, a matrix product
    of the summed axes, added at ``i + j`` of the full result, then cut where ``mode`` says."""
    axes = axes or (list(range(A.ndim)), list(range(A.ndim)))
    conv_a, conv_b = list(axes[0]), list(axes[1])
    dot_a, dot_b = list(dot_axes[0]), list(dot_axes[1])
    kept_a = [i for i in range(A.ndim) if i not in conv_a + dot_a]
    kept_b = [i for i in range(B.ndim) if i not in conv_b + dot_b]
    m, n = [A.shape[i] for i in conv_a], [B.shape[j] for j in conv_b]
    dots = int(np.prod([A.shape[i] for i in dot_a]))
    a = np.transpose(A, kept_a + dot_a + conv_a).reshape(-1, dots, *m)
    b = np.transpose(B, kept_b + dot_b + conv_b).reshape(-1, a.shape[1], *n)
    full = np.zeros((a.shape[0], b.shape[0], *[p + q - 1 for p, q in zip(m, n)]))
    for i in itertools.product(*map(range, m)):
        for j in itertools.product(*map(range, n)):
            k = tuple(p + q for p, q in zip(i, j))
            full[(slice(None), slice(None)) + k] += a[(Ellipsis,) + i] @ b[(Ellipsis,) + j].T
    cut = []
    for p, q in zip(m, n):
        start, length = {"full": (0, p + q - 1), "valid": (min(p, q) - 1, abs(p - q) + 1),
                         "same": ((q - 1) // 2, p)}[mode]
        cut.append(slice(start, start + length))
    kept = [A.shape[i] for i in kept_a] + [B.shape[j] for j in kept_b]
    out = full[(slice(None), slice(None)) + tuple(cut)]
    return out.reshape(kept + list(out.shape[2:]))


@pytest.mark.parametrize("sa, sb, axes, dot_axes", SHAPES)
def test_values_are_the_sums_that_define_the_convolution(sa, sb, axes, dot_axes):
    r = np.random.default_rng(0)
    A, B = r.standard_normal(sa), r.standard_normal(sb)
    for mode in MODES:
        expected = direct(A, B, axes, dot_axes, mode)
        got = convolve(A, B, axes, dot_axes, mode)
        assert got.shape == expected.shape and np.allclose(got, expected, atol=1e-12)
    a, v = r.standard_normal(6), r.standard_normal(4)
    for mode in MODES:
        assert np.allclose(convolve(a, v, mode=mode), np.convolve(a, v, mode))


def test_a_mode_or_axes_it_cannot_take_are_refused_saying_what_it_needs():
    with pytest.raises(ValueError, match="mode must be 'full', 'valid' or 'same', not 'wrap'"):
        convolve(np.ones(3), np.ones(2), mode="wrap")
    with pytest.raises(ValueError, match="one operand at least as long as the other"):
        convolve(np.ones((4, 2)), np.ones((2, 4)), mode="valid")
    with pytest.raises(ValueError, match="must pair the axes of A with as many axes of B"):
        convolve(np.ones((4, 2)), np.ones((2, 4)), axes=([0], [0, 1]))
    with pytest.raises(ValueError, match="name each axis of an operand at most once"):
        convolve(np.ones((4, 2)), np.ones((2, 4)), axes=([0], [0]), dot_axes=([0], [1]))


def layer(x, w, b):
    """autograd's convnet layer: images [data, colour, y, x], kernels [colour in, out, y, x]."""
    return np.tanh(convolve(x, w, axes=([2, 3], [2, 3]), dot_axes=([1], [0]), mode="valid") + b)


def layer_loss(x, w, b):
    return np.sum(layer(x, w, b) ** 2) + np.sum(convolve(x, w[:, :1], ([3], [3]), ([1], [0]),
                                                         "same"))


def numeric(f, args, i, eps=1e-6):
    g = np.zeros_like(args[i])
    for k in np.ndindex(g.shape):
        e = np.zeros_like(g)
        e[k] = eps
        up, down = list(args), list(args)
        up[i], down[i] = args[i] + e, args[i] - e
        g[k] = (f(*up) - f(*down)) / (2 * eps)
    return g


def test_the_layers_gradient_is_convolutions_and_matches_finite_differences():
    r = np.random.default_rng(1)
    args = (r.standard_normal((2, 2, 6, 5)), r.standard_normal((2, 3, 3, 2)),
            r.standard_normal((1, 3, 1, 1)))
    value, g = ys.grad(layer_loss, *args)
    assert np.isclose(value, layer_loss(*args))
    for i in range(3):
        assert np.allclose(g[i], numeric(layer_loss, args, i), rtol=1e-6, atol=1e-8)
    text = ys.source(ys.simplegrad(layer_loss, *args, buffers=False))
    assert "from yota_s2s.rules.convolution import convolve" in text
    assert "convolve(x, xp.flip(" not in text and "xp.flip(w, axis=(2, 3))" in text


def test_forward_mode_and_second_order_match_finite_differences():
    r = np.random.default_rng(2)
    x, w = r.standard_normal((2, 2, 5, 4)), r.standard_normal((2, 3, 2, 2))
    b = np.zeros((1, 3, 1, 1))
    dx, dw = r.standard_normal(x.shape), r.standard_normal(w.shape)
    out, tangent = ys.jvp(layer, (x, w, b), (dx, dw, np.zeros_like(b)))
    eps = 1e-6
    expected = (layer(x + eps * dx, w + eps * dw, b)
                - layer(x - eps * dx, w - eps * dw, b)) / (2 * eps)
    assert np.allclose(out, layer(x, w, b)) and np.allclose(tangent, expected, atol=1e-8)
    v = r.standard_normal(w.shape)      # the Hessian in w along v: the gradient's own derivative
    hv = ys.hvp(layer_loss, x, w, b, argnum=1)(x, w, b, v)
    grad_w = lambda w_: ys.grad(layer_loss, x, w_, b, wrt=1)[1][1]        # noqa: E731
    assert np.allclose(hv, (grad_w(w + eps * v) - grad_w(w - eps * v)) / (2 * eps), atol=1e-6)


@pytest.mark.parametrize("sa, sb, axes, dot_axes", SHAPES[:4])
def test_values_and_gradients_match_autogradss_own_convolve(sa, sb, axes, dot_axes):
    autograd = pytest.importorskip("autograd")       # for checking only: not a dependency
    from autograd.scipy.signal import convolve as ag_convolve
    r = np.random.default_rng(3)
    A, B = r.standard_normal(sa), r.standard_normal(sb)
    for mode in MODES:
        if mode == "valid" and sa == (2, 3):
            continue        # autograd's gradient recurses without end here (a longer B)
        C = r.standard_normal(direct(A, B, axes, dot_axes, mode).shape)
        ours = ys.grad(lambda a, b: np.sum(np.sin(convolve(a, b, axes, dot_axes, mode)) * C), A, B)
        theirs = autograd.grad(lambda a, b: autograd.numpy.sum(
            autograd.numpy.sin(ag_convolve(a, b, axes, dot_axes, mode)) * C), (0, 1))(A, B)
        assert np.allclose(convolve(A, B, axes, dot_axes, mode),
                           ag_convolve(A, B, axes, dot_axes, mode), rtol=1e-13, atol=1e-13)
        for g, h in zip(ours[1], theirs):
            assert np.allclose(g, h, rtol=1e-12, atol=1e-13)
