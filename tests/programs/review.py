"""The three programs of docs/review.md: what a reviewer reads in the review form."""
import numpy as np


def mlp(W1, b1, W2, b2, X, labels):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(labels * logp) / X.shape[0]


def rnn(Wh, Wx, h0, xs):
    h = h0
    for t in range(5):
        h = np.tanh(Wh @ h + Wx @ xs[t])
    return np.sum(h * h)


def clipped(w, x):
    out = np.zeros(3)
    for i in range(3):
        if x[i] > 0:
            out[i] = w[i] * x[i] ** 2
        else:
            out[i] = -w[i]
    return np.sum(out)


def examples() -> dict:
    """Each program's example arguments (seeded: docs/review.md shows their gradients)."""
    r = np.random.default_rng(0)
    return {
        "mlp": (r.standard_normal((4, 8)), r.standard_normal(8), r.standard_normal((8, 3)),
                r.standard_normal(3), r.standard_normal((64, 4)), np.eye(3)[r.integers(0, 3, 64)]),
        "rnn": (r.standard_normal((3, 3)), r.standard_normal((3, 2)), r.standard_normal(3),
                r.standard_normal((5, 2))),
        "clipped": (r.standard_normal(3), np.array([1.0, -2.0, 3.0])),
    }


def reused(w, x):
    """A gradient that equals a forward value for these arguments only (tests)."""
    out = w * x ** 2
    return np.sum(out * w)
