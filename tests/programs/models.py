"""Small real models: the seed loss, the polynomial, logistic regression, an MLP, an RNN."""
import math

import numpy as np
import numpy as onp
from numpy import exp, tanh

SCALE = 0.5          # a module-level constant read by the code below


def seed_loss(W, b, x):
    return np.sum(W @ x + b[:, None])


def polynomial(x):
    return (x[2]*x[7]**3 - 3*x[2]*x[7]*x[5]**2 - x[0]*x[5]**3 + 3*x[0]*x[5]*x[7]**2
            + x[3]*x[4]**3 - 3*x[3]*x[4]*x[6]**2 - x[1]*x[6]**3 + 3*x[1]*x[6]*x[4]**2 - 1.2342523)


def sigmoid(z):
    return 1 / (1 + exp(-z))


def logistic_regression(w, b, X, y):
    p = sigmoid(X @ w + b)
    eps = 1e-9
    return -onp.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))


def softmax_cross_entropy(logits, labels):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


def mlp(W1, b1, W2, b2, X, labels):
    h = tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    return softmax_cross_entropy(logits, labels)


def rnn(Wx, Wh, b, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + np.sum(h ** 2)
    return total * SCALE


def helper_calls(x, y):
    def inner(a, scale=2.0, *rest, **kw):
        return scale * a + sum(rest) + kw.get("shift", 0.0)
    return np.sum(inner(x, 3.0, y, y, shift=1.0) * inner(y))


def with_guard(x):
    """The arms bind ``y`` to arrays of two shapes: one module cannot hold both, so the
    ``if`` is decided on the example, a guard (an ``if`` whose arms agree is a branch)."""
    if np.sum(x) > 0:
        y = x[:2] ** 2
    else:
        y = -x
    return np.sum(y)


def python_floats(a, b):
    c = math.exp(a) * b + math.sin(b) / (1.0 + a * a)
    return c ** 2 + math.sqrt(abs(b) + 1.0)


def loops_and_branches(x, n):
    acc = x
    i = 0
    while i < n:
        if i % 2 == 0:
            acc = acc * 1.5
        else:
            acc = acc + np.sin(acc)
        i += 1
        if i > 10:
            break
    for k, row in enumerate(acc):
        if k == 1:
            continue
        acc = acc + row[None, :] * 0.1
    return np.sum(acc)


def containers(x, y):
    parts = [x, y, x * y]
    d = {"a": parts[0], "b": parts[1]}
    squares = [p ** 2 for p in parts if p.ndim == 1]
    t = tuple(squares)
    first, *rest = t
    return np.sum(first) + np.sum(rest[-1]) + np.sum(d["b"] * d["a"])


def lambdas_and_closures(x, w):
    scale = 3.0
    f = lambda v: scale * v * w   # noqa: E731
    g = lambda v, k=2: v ** k     # noqa: E731
    return np.sum(f(g(x)))


def complex_intermediates(x, y):
    z = x + 1j * y
    w = z * z + np.exp(z) * np.conj(z)
    return np.sum(np.abs(w) ** 2) + np.sum(np.real(w) * np.imag(w)) + np.sum(np.angle(w))


def write_through_transpose(x):
    y = x * 2.0
    t = y.T
    t[0] += 1.0                 # writes y through the view
    return np.sum(y * y)


def write_through_alias_and_slice(x):
    y = x + 0.0
    z = y
    z[0] = 5.0                  # z is y
    v = y[1:3]
    v *= 3.0                    # v is a view of y
    old = y.copy()
    y[-1] = old[0] * old[1]
    return np.sum(old * y * x)


def scatter_add(x, v):
    a = x * 1.0
    np.add.at(a, np.array([0, 2, 0]), v)      # index 0 receives two values
    return np.sum(a ** 2)


def tanh_layer(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def gather_rows(W, idx):
    return np.sum(np.sin(W[idx]) ** 2)
