"""The benchmark's workloads: each a loss written once in numpy, a careful handwritten gradient,
and a PyTorch twin (JAX and autograd run the numpy source with their own ``np``).

A handwritten gradient is what a careful person writes by hand: values reused, row and column
sums instead of products with ones, no work for gradients nobody asked for, in-place updates
where they read naturally. It returns ``(value, grads)`` with one gradient per index in ``wrt``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass
class Workload:
    name: str
    title: str
    loss: Callable                        # numpy source; peers swap in their own ``np``
    make_args: Callable[[np.random.Generator], tuple]
    wrt: tuple[int, ...]                  # the arguments whose gradients are computed
    handwritten: Callable[..., tuple[Any, tuple]]
    torch_loss: Callable | None = None    # the same loss in torch (``torch`` passed first)


# ----- sum(W @ x + b[:, None]): the gradient of sum is a matrix of ones -----------------------

def seed(W, b, x):
    return np.sum(W @ x + b[:, None])


def seed_hand(W, b, x):
    value = np.sum(W @ x + b[:, None])
    dW = np.broadcast_to(x.sum(axis=1), W.shape).copy()
    db = np.full(b.shape, float(x.shape[1]))
    dx = np.broadcast_to(W.sum(axis=0)[:, None], x.shape).copy()
    return value, (dW, db, dx)


def seed_torch(torch, W, b, x):
    return torch.sum(W @ x + b[:, None])


# ----- MLP 784-512-10, tanh, softmax cross-entropy ---------------------------------------------

def softmax_cross_entropy(logits, labels):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


def mlp(W1, b1, W2, b2, X, labels):
    h = np.tanh(X @ W1 + b1)
    return softmax_cross_entropy(h @ W2 + b2, labels)


def mlp_hand(W1, b1, W2, b2, X, labels):
    h = X @ W1
    h += b1
    np.tanh(h, out=h)
    logits = h @ W2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    value = -np.mean(np.sum(labels * (shifted - np.log(s)), axis=1))
    dlogits = e / s * labels.sum(axis=1, keepdims=True) - labels
    dlogits /= X.shape[0]
    dh = dlogits @ W2.T
    dh *= 1 - h * h
    return value, (X.T @ dh, dh.sum(axis=0), h.T @ dlogits, dlogits.sum(axis=0))


def mlp_torch(torch, W1, b1, W2, b2, X, labels):
    h = torch.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - torch.amax(logits, dim=1, keepdim=True)
    log_probs = shifted - torch.log(torch.sum(torch.exp(shifted), dim=1, keepdim=True))
    return -torch.mean(torch.sum(labels * log_probs, dim=1))


def mlp_args(r):
    return (r.standard_normal((784, 512)) * 0.05, np.zeros(512), r.standard_normal((512, 10)) * 0.05,
            np.zeros(10), r.standard_normal((256, 784)), np.eye(10)[r.integers(0, 10, 256)])


# ----- logistic regression ---------------------------------------------------------------------

def logreg(w, b, X, y):
    p = 1 / (1 + np.exp(-(X @ w + b)))
    eps = 1e-9
    return -np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))


def logreg_hand(w, b, X, y):
    p = 1 / (1 + np.exp(-(X @ w + b)))
    a, c = p + 1e-9, 1 - p + 1e-9
    value = -np.mean(y * np.log(a) + (1 - y) * np.log(c))
    dz = ((1 - y) / c - y / a) * p * (1 - p) / X.shape[0]
    return value, (dz @ X, float(dz.sum()))


def logreg_torch(torch, w, b, X, y):
    p = 1 / (1 + torch.exp(-(X @ w + b)))
    return -torch.mean(y * torch.log(p + 1e-9) + (1 - y) * torch.log(1 - p + 1e-9))


def logreg_args(r):
    return r.standard_normal(100) * 0.1, 0.1, r.standard_normal((10000, 100)), (r.random(10000) > 0.5) * 1.0


# ----- logistic regression with gradients for the weights, the data and the labels --------------

def logreg_all(w, X, y):
    return np.mean(np.log(1 + np.exp(-y * (X @ w))))


def logreg_all_hand(w, X, y):
    z = X @ w
    e = np.exp(-y * z)
    value = np.mean(np.log(1 + e))
    dm = e / (1 + e)
    dm /= X.shape[0]                 # d value / d(-y * z)
    dz = -y * dm
    dy = -z * dm
    return value, (dz @ X, np.outer(dz, w), dy)


def logreg_all_torch(torch, w, X, y):
    return torch.mean(torch.log(1 + torch.exp(-y * (X @ w))))


def logreg_all_args(r):
    return (r.standard_normal(100) * 0.1, r.standard_normal((10000, 100)),
            np.where(r.random(10000) > 0.5, 1.0, -1.0))


# ----- the seed's polynomial: scalar work ------------------------------------------------------

def polynomial(x):
    return (x[2]*x[7]**3 - 3*x[2]*x[7]*x[5]**2 - x[0]*x[5]**3 + 3*x[0]*x[5]*x[7]**2
            + x[3]*x[4]**3 - 3*x[3]*x[4]*x[6]**2 - x[1]*x[6]**3 + 3*x[1]*x[6]*x[4]**2 - 1.2342523)


def polynomial_hand(x):
    x0, x1, x2, x3, x4, x5, x6, x7 = x.tolist()
    x4s, x5s, x6s, x7s = x4 * x4, x5 * x5, x6 * x6, x7 * x7
    value = (x2*x7s*x7 - 3*x2*x7*x5s - x0*x5s*x5 + 3*x0*x5*x7s
             + x3*x4s*x4 - 3*x3*x4*x6s - x1*x6s*x6 + 3*x1*x6*x4s - 1.2342523)
    grad = np.array([3*x5*x7s - x5s*x5, 3*x6*x4s - x6s*x6, x7s*x7 - 3*x7*x5s,
                     x4s*x4 - 3*x4*x6s, 3*x3*x4s - 3*x3*x6s + 6*x1*x6*x4,
                     -6*x2*x7*x5 - 3*x0*x5s + 3*x0*x7s, -6*x3*x4*x6 - 3*x1*x6s + 3*x1*x4s,
                     3*x2*x7s - 3*x2*x5s + 6*x0*x5*x7])
    return value, (grad,)


def polynomial_torch(torch, x):
    return polynomial(x)


# ----- an elementwise chain on 1e6 floats ------------------------------------------------------

def chain(x):
    s = np.sin(x)
    g = np.exp(-0.5 * x * x)
    return np.sum(s * g + np.tanh(x) ** 2)


def chain_hand(x):
    s, g, t = np.sin(x), np.exp(-0.5 * x * x), np.tanh(x)
    value = np.sum(s * g + t * t)
    dx = np.cos(x)
    dx -= x * s
    dx *= g
    dx += 2 * t * (1 - t * t)
    return value, (dx,)


def chain_args(n):
    return lambda r: (r.standard_normal(n),)


def chain_torch(torch, x):
    return torch.sum(torch.sin(x) * torch.exp(-0.5 * x * x) + torch.tanh(x) ** 2)


# ----- a tanh RNN, 20 steps ----------------------------------------------------------------------

def rnn(Wx, Wh, b, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + np.sum(h ** 2)
    return total * 0.5


def rnn_hand(Wx, Wh, b, xs, h0):
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ Wx + hs[-1] @ Wh + b))
    value = 0.5 * sum(np.sum(h * h) for h in hs[1:])
    dWx, dWh, db = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
    dh = np.zeros_like(h0)
    for t in range(xs.shape[0] - 1, -1, -1):
        h = hs[t + 1]
        dh += h
        dz = dh * (1 - h * h)
        dWx += xs[t].T @ dz
        dWh += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ Wh.T
    return value, (dWx, dWh, db)


def rnn_torch(torch, Wx, Wh, b, xs, h0):
    h, total = h0, 0.0
    for t in range(xs.shape[0]):
        h = torch.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + torch.sum(h ** 2)
    return total * 0.5


def rnn_args(r):
    return (r.standard_normal((128, 256)) * 0.05, r.standard_normal((256, 256)) * 0.05,
            np.zeros(256), r.standard_normal((20, 64, 128)), np.zeros((64, 256)))


# ----- a small VAE (784-400-20) --------------------------------------------------------------

def vae(W1, b1, Wm, bm, Wv, bv, W3, b3, W4, b4, X, eps):
    h = np.tanh(X @ W1 + b1)
    mu = h @ Wm + bm
    logvar = h @ Wv + bv
    z = mu + np.exp(0.5 * logvar) * eps
    logits = np.tanh(z @ W3 + b3) @ W4 + b4
    recon = np.sum(np.logaddexp(0.0, logits) - X * logits)
    kl = -0.5 * np.sum(1 + logvar - mu * mu - np.exp(logvar))
    return (recon + kl) / X.shape[0]


def vae_hand(W1, b1, Wm, bm, Wv, bv, W3, b3, W4, b4, X, eps):
    n = X.shape[0]
    h = np.tanh(X @ W1 + b1)
    mu = h @ Wm + bm
    logvar = h @ Wv + bv
    std = np.exp(0.5 * logvar)
    z = mu + std * eps
    h2 = np.tanh(z @ W3 + b3)
    logits = h2 @ W4 + b4
    softplus = np.logaddexp(0.0, logits)
    var = std * std
    value = (np.sum(softplus - X * logits) - 0.5 * np.sum(1 + logvar - mu * mu - var)) / n
    dlogits = np.exp(logits - softplus)
    dlogits -= X
    dlogits /= n
    dh2 = dlogits @ W4.T
    dh2 *= 1 - h2 * h2
    dz = dh2 @ W3.T
    dmu = dz + mu / n
    dlogvar = 0.5 * (dz * eps * std + (var - 1) / n)
    dh = dmu @ Wm.T + dlogvar @ Wv.T
    dh *= 1 - h * h
    return value, (X.T @ dh, dh.sum(axis=0), h.T @ dmu, dmu.sum(axis=0), h.T @ dlogvar,
                   dlogvar.sum(axis=0), z.T @ dh2, dh2.sum(axis=0), h2.T @ dlogits,
                   dlogits.sum(axis=0))


def vae_torch(torch, W1, b1, Wm, bm, Wv, bv, W3, b3, W4, b4, X, eps):
    h = torch.tanh(X @ W1 + b1)
    mu = h @ Wm + bm
    logvar = h @ Wv + bv
    z = mu + torch.exp(0.5 * logvar) * eps
    logits = torch.tanh(z @ W3 + b3) @ W4 + b4
    recon = torch.sum(torch.logaddexp(torch.zeros_like(logits), logits) - X * logits)
    kl = -0.5 * torch.sum(1 + logvar - mu * mu - torch.exp(logvar))
    return (recon + kl) / X.shape[0]


def vae_args(r):
    def layer(m, n):
        return r.standard_normal((m, n)) * (1 / np.sqrt(m)), np.zeros(n)
    return (*layer(784, 400), *layer(400, 20), *layer(400, 20), *layer(20, 400), *layer(400, 784),
            (r.random((128, 784)) > 0.5) * 1.0, r.standard_normal((128, 20)))


WORKLOADS = [
    Workload("seed", "sum(W @ x + b[:, None]), W 128x784, x 784x100", seed,
             lambda r: (r.random((128, 784)), r.random(128), r.random((784, 100))), (0, 1, 2),
             seed_hand, seed_torch),
    Workload("mlp", "MLP 784-512-10, tanh, softmax xent, batch 256", mlp, mlp_args, (0, 1, 2, 3),
             mlp_hand, mlp_torch),
    Workload("logreg", "logistic regression, X 10000x100", logreg, logreg_args, (0, 1),
             logreg_hand, logreg_torch),
    Workload("logreg_all", "logistic regression, gradients for w, X and y, X 10000x100",
             logreg_all, logreg_all_args, (0, 1, 2), logreg_all_hand, logreg_all_torch),
    Workload("polynomial", "the seed's 8-variable polynomial", polynomial,
             lambda r: (r.standard_normal(8),), (0,), polynomial_hand, polynomial_torch),
    Workload("chain", "elementwise chain on 1e6 floats", chain,
             chain_args(1_000_000), (0,), chain_hand, chain_torch),
    Workload("chain1e7", "elementwise chain on 1e7 floats", chain, chain_args(10_000_000), (0,),
             chain_hand, chain_torch),
    Workload("rnn", "tanh RNN, 20 steps, hidden 256, batch 64", rnn, rnn_args, (0, 1, 2),
             rnn_hand, rnn_torch),
    Workload("vae", "VAE 784-400-20, batch 128", vae, vae_args, tuple(range(10)), vae_hand,
             vae_torch),
]
