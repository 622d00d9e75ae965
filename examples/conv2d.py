"""A 2-D convolution written in numpy, its two gradient functions, and the rules that tie them.

    python examples/conv2d.py

``conv2d(x, w, pad=1, stride=2)`` becomes a primitive through its rules: the generated module
calls it (it is not inlined), and its gradients call ``conv2d_grad_data`` and
``conv2d_grad_filter`` with the same ``pad=1, stride=2``, forwarded by ``**kw``. The gradient
functions have rules too (each is linear in both operands), so a generated gradient can itself
be differentiated.
"""
import numpy as np

import yota_s2s as ys


def out_size(n, k, pad, stride):
    return (n + 2 * pad - k) // stride + 1


def windows(shape, kh, kw, pad, stride):
    """(i, j, index) per kernel offset: ``index`` picks, from the padded input, the input
    pixels that meet kernel element (i, j), one per output position."""
    oh, ow = out_size(shape[2], kh, pad, stride), out_size(shape[3], kw, pad, stride)
    return [(i, j, (slice(None), slice(None), slice(i, i + stride * oh, stride),
                    slice(j, j + stride * ow, stride)))
            for i in range(kh) for j in range(kw)]


def conv2d(x, w, pad=0, stride=1):
    """Cross-correlation, as deep learning does it: x (N, C, H, W), w (F, C, KH, KW) gives
    (N, F, OH, OW)."""
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = 0.0
    for i, j, index in windows(x.shape, kh, kw, pad, stride):
        out = out + np.einsum("nchw,fc->nfhw", xp[index], w[:, :, i, j])
    return out


def conv2d_grad_data(g, w, x_shape, pad=0, stride=1):
    """d<conv2d(x, w), g>/dx: each output gradient spread back over the pixels it read."""
    n, c, h, wd = x_shape
    dxp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), dtype=np.result_type(g, w))
    for i, j, index in windows(x_shape, w.shape[2], w.shape[3], pad, stride):
        dxp[index] += np.einsum("nfhw,fc->nchw", g, w[:, :, i, j])
    return dxp[:, :, pad:pad + h, pad:pad + wd]


def conv2d_grad_filter(x, g, w_shape, pad=0, stride=1):
    """d<conv2d(x, w), g>/dw: each kernel element meets every window it slid over."""
    f, c, kh, kw = w_shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dw = np.zeros(w_shape, dtype=np.result_type(x, g))
    for i, j, index in windows(x.shape, kh, kw, pad, stride):
        dw[:, :, i, j] = np.einsum("nchw,nfhw->fc", xp[index], g)
    return dw


# y = conv2d(x, w, **kw): the gradient functions take the call's keyword options as they are.
ys.diffrule(conv2d, "x", "conv2d_grad_data(dy, w, x.shape, **kw)")
ys.diffrule(conv2d, "w", "conv2d_grad_filter(x, dy, w.shape, **kw)")

# The gradient functions are linear in each operand; their adjoints are convolutions again.
ys.diffrule(conv2d_grad_data, "g", "conv2d(dy, w, **kw)")
ys.diffrule(conv2d_grad_data, "w", "conv2d_grad_filter(dy, g, w.shape, **kw)")
ys.diffrule(conv2d_grad_filter, "x", "conv2d_grad_data(g, dy, x.shape, **kw)")
ys.diffrule(conv2d_grad_filter, "g", "conv2d(x, dy, **kw)")


def loss(x, w1, w2):
    """Two convolution layers: the first keeps the size (pad=1), the second halves it."""
    h = np.tanh(conv2d(x, w1, pad=1))
    y = conv2d(h, w2, pad=1, stride=2)
    return np.mean(y ** 2)


def main():
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3)), \
        rng.standard_normal((5, 4, 3, 3))

    dloss = ys.simplegrad(loss, x, w1, w2)
    print(ys.source(dloss))
    errors = ys.gradcheck(loss, x, w1, w2)
    print("largest difference from central finite differences, per argument:",
          ", ".join(f"{i}: {e:.1e}" for i, e in errors.items()))
    print("\n" + str(ys.rules(conv2d)))


if __name__ == "__main__":
    # Run as a script, this file is __main__, which a generated module cannot import. Import it
    # by its module name, so that the generated code reads `from conv2d import conv2d, ...`.
    import conv2d
    conv2d.main()
