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
    handwritten: Callable[..., tuple[Any, tuple]] | None   # None: checked against the numpy printer
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


# ===== issue 12: loops that stay loops (``tools/bench.py --loops``) ================================
# Each loop workload at several trip counts; today every loop is unrolled, so compile time and
# module size grow with the trip count. The handwritten gradients are what a careful person
# writes for a loop: saved values in one preallocated stacked array, a reverse loop.

# ----- a tanh RNN, hidden 64, input 32, loss summed over T steps ------------------------------

RNN_BATCH, RNN_INPUT, RNN_HIDDEN = 16, 32, 64


def rnn_bptt(Wx, Wh, b, xs, h0):
    """Backpropagation through time: every state in one (T + 1, batch, hidden) array; going
    back, step t's pre-activation gradient overwrites its state (no longer needed), so dWx and
    db come from one product and one sum at the end."""
    steps = xs.shape[0]
    hs = np.empty((steps + 1,) + h0.shape)
    hs[0] = h0
    value = 0.0
    for t in range(steps):
        h = hs[t + 1]
        np.matmul(xs[t], Wx, out=h)
        h += hs[t] @ Wh
        h += b
        np.tanh(h, out=h)
        value += np.vdot(h, h)
    dWh = np.zeros_like(Wh)
    dh = np.zeros_like(h0)
    for t in range(steps - 1, -1, -1):
        dz = hs[t + 1]                # h, then dz = (dh + h) * (1 - h * h) written over it
        dh += dz
        dz *= dz
        np.subtract(1.0, dz, out=dz)
        dz *= dh
        dWh += hs[t].T @ dz
        np.matmul(dz, Wh.T, out=dh)
    dzs = hs[1:].reshape(-1, h0.shape[-1])
    return value * 0.5, (xs.reshape(-1, xs.shape[-1]).T @ dzs, dWh, dzs.sum(axis=0))


def rnn_loop_args(steps: int) -> Callable:
    def make(r):
        return (r.standard_normal((RNN_INPUT, RNN_HIDDEN)) * 0.1,
                r.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) * 0.1, r.standard_normal(RNN_HIDDEN) * 0.1,
                r.standard_normal((steps, RNN_BATCH, RNN_INPUT)),
                r.standard_normal((RNN_BATCH, RNN_HIDDEN)) * 0.1)
    return make


# ----- a scalar polynomial loop over a ring: s += x[i] * x[(i + 1) % n] ** 2 ------------------

def ring(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[(i + 1) % n] ** 2
    return s


def ring_hand(x):
    v = x.tolist()
    n = len(v)
    s, g = 0.0, [0.0] * n
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        a, c = v[i], v[j]
        cc = c * c
        s += a * cc
        g[i] += cc
        g[j] += 2.0 * a * c
    return s, (np.array(g),)


# ----- RK4 over 1,000 steps of dy/dt = tanh(W y + b) - y / 2; loss of the final state ----------
# The step sizes are an argument (a per-step input; no gradient asked for them).

RK4_DT, RK4_DIM = 0.01, 16


def ode(y, W, b):
    return np.tanh(W @ y + b) - 0.5 * y


def rk4(W, b, y0, dts):
    y = y0
    for dt in dts:
        k1 = ode(y, W, b)
        k2 = ode(y + 0.5 * dt * k1, W, b)
        k3 = ode(y + 0.5 * dt * k2, W, b)
        k4 = ode(y + dt * k3, W, b)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return 0.5 * np.sum(y * y)


def rk4_hand(W, b, y0, dts):
    """The discrete adjoint of RK4: each stage's point u and tanh s saved in (steps, 4, dim)
    arrays, the stages' adjoints in a third; dW and db from them in one product at the end."""
    steps = dts.shape[0]
    us = np.empty((steps, 4) + y0.shape)
    ss = np.empty_like(us)
    y = y0.copy()
    for n in range(steps):
        u, s, dt = us[n], ss[n], float(dts[n])
        u[0] = y
        s[0] = np.tanh(W @ y + b)
        k1 = s[0] - 0.5 * u[0]
        u[1] = y + 0.5 * dt * k1
        s[1] = np.tanh(W @ u[1] + b)
        k2 = s[1] - 0.5 * u[1]
        u[2] = y + 0.5 * dt * k2
        s[2] = np.tanh(W @ u[2] + b)
        k3 = s[2] - 0.5 * u[2]
        u[3] = y + dt * k3
        s[3] = np.tanh(W @ u[3] + b)
        k4 = s[3] - 0.5 * u[3]
        y += dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    value = 0.5 * np.dot(y, y)
    dzs = np.empty_like(us)
    dy = y                                       # d value / d y at the end
    WT = W.T
    for n in range(steps - 1, -1, -1):
        s, dz, dt = ss[n], dzs[n], float(dts[n])
        dk4 = dt / 6.0 * dy
        dk3, dk2, dk1 = 2.0 * dk4, 2.0 * dk4, dk4.copy()
        # a stage k = tanh(W u + b) - u / 2: dz = dk (1 - s^2), du = W^T dz - dk / 2
        dz[3] = dk4 * (1.0 - s[3] * s[3])
        du = WT @ dz[3] - 0.5 * dk4
        dy = dy + du
        dk3 += dt * du
        dz[2] = dk3 * (1.0 - s[2] * s[2])
        du = WT @ dz[2] - 0.5 * dk3
        dy += du
        dk2 += 0.5 * dt * du
        dz[1] = dk2 * (1.0 - s[1] * s[1])
        du = WT @ dz[1] - 0.5 * dk2
        dy += du
        dk1 += 0.5 * dt * du
        dz[0] = dk1 * (1.0 - s[0] * s[0])
        dy += WT @ dz[0] - 0.5 * dk1
    flat_dz, flat_u = dzs.reshape(-1, y0.shape[0]), us.reshape(-1, y0.shape[0])
    return value, (flat_dz.T @ flat_u, flat_dz.sum(axis=0), dy)


def rk4_args(steps: int) -> Callable:
    def make(r):
        return (r.standard_normal((RK4_DIM, RK4_DIM)) / np.sqrt(RK4_DIM), r.standard_normal(RK4_DIM) * 0.1,
                r.standard_normal(RK4_DIM), np.full(steps, RK4_DT))
    return make


# ----- 2-D advection-diffusion of a smoke field by a velocity field, 100 steps, np.roll stencil ---

FLOW_STEPS, FLOW_SIZE, FLOW_DT, FLOW_NU = 100, 32, 0.2, 0.05


def flow_step(f, vx, vy):
    """Centred differences on a periodic grid (np.roll), plus diffusion."""
    dfx = np.roll(f, -1, axis=1) - np.roll(f, 1, axis=1)
    dfy = np.roll(f, -1, axis=0) - np.roll(f, 1, axis=0)
    lap = np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0) + np.roll(f, 1, axis=1) \
        + np.roll(f, -1, axis=1) - 4.0 * f
    return f - 0.5 * FLOW_DT * (vx * dfx + vy * dfy) + FLOW_NU * lap


def flow(vx, vy, f0, target):
    f = f0
    for _ in range(FLOW_STEPS):
        f = flow_step(f, vx, vy)
    return np.sum((f - target) ** 2)


def flow_hand(vx, vy, f0, target, steps=FLOW_STEPS):
    """The adjoint of the stencil: each field saved in one (steps + 1, n, n) array; the adjoint
    of a centred difference is minus the difference, the Laplacian is its own adjoint, so a
    step back is four rolls of (nu a -+ c v a) plus four of the saved field for dvx, dvy."""
    c, nu = 0.5 * FLOW_DT, FLOW_NU
    fs = np.empty((steps + 1,) + f0.shape)
    fs[0] = f0
    for n in range(steps):
        f = fs[n]
        east, west = np.roll(f, -1, axis=1), np.roll(f, 1, axis=1)
        south, north = np.roll(f, -1, axis=0), np.roll(f, 1, axis=0)
        g = fs[n + 1]
        np.multiply(1.0 - 4.0 * nu, f, out=g)
        g += nu * (east + west + south + north)
        g -= c * (vx * (east - west) + vy * (south - north))
    r = fs[-1] - target
    value = np.vdot(r, r)
    a = 2.0 * r
    dvx, dvy = np.zeros_like(vx), np.zeros_like(vy)
    for n in range(steps - 1, -1, -1):
        f = fs[n]
        ca = c * a
        dvx -= ca * (np.roll(f, -1, axis=1) - np.roll(f, 1, axis=1))
        dvy -= ca * (np.roll(f, -1, axis=0) - np.roll(f, 1, axis=0))
        na, gx, gy = nu * a, vx * ca, vy * ca
        a = (1.0 - 4.0 * nu) * a + np.roll(na - gx, 1, axis=1) + np.roll(na + gx, -1, axis=1) \
            + np.roll(na - gy, 1, axis=0) + np.roll(na + gy, -1, axis=0)
    return value, (dvx, dvy)


def flow_args(r):
    n = FLOW_SIZE
    yy, xx = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float), indexing="ij")
    f0 = np.exp(-((yy - 10.0) ** 2 + (xx - 12.0) ** 2) / 12.0)
    target = np.exp(-((yy - 20.0) ** 2 + (xx - 18.0) ** 2) / 12.0)
    return 0.5 + 0.3 * r.standard_normal((n, n)), 0.5 + 0.3 * r.standard_normal((n, n)), f0, target


# ----- a spring chain: 16 masses in the plane, 500 velocity-Verlet steps (issue 32) -------------
# np.diff along the chain, the springs' lengths by np.linalg.norm(..., axis=1), each spring's
# force added to both its ends (F[:-1] += f): numpy calls on arrays of 16 rows, where the
# interpreter's cost per call, not the arithmetic, sets the time.

SPRING_MASSES, SPRING_STEPS, SPRING_DT = 16, 500, 0.01


def spring_forces(x, k, rest):
    d = np.diff(x, axis=0)
    length = np.linalg.norm(d, axis=1, keepdims=True)
    f = k * (length - rest) * d / length
    F = np.zeros_like(x)
    F[:-1] += f
    F[1:] -= f
    return F


def spring(x0, v0, k, rest):
    x, v = x0, v0
    a = spring_forces(x, k, rest)
    for _ in range(SPRING_STEPS):
        x = x + SPRING_DT * v + (0.5 * SPRING_DT ** 2) * a
        a_new = spring_forces(x, k, rest)
        v = v + (0.5 * SPRING_DT) * (a + a_new)
        a = a_new
    return np.sum(x[-1] ** 2) + 0.5 * np.sum(v * v)


def spring_args(r):
    n = SPRING_MASSES
    x0 = np.stack([np.arange(n, dtype=float), np.zeros(n)], axis=1) + 0.1 * r.standard_normal((n, 2))
    return x0, 0.1 * r.standard_normal((n, 2)), 1.0 + 0.2 * r.random((n - 1, 1)), \
        0.9 + 0.2 * r.random((n - 1, 1))


# ----- RK4 on the Lorenz system: state 3 (three Python floats), 10,000 steps (issue 32) ----------

LORENZ_STEPS, LORENZ_DT = 10_000, 0.001


def lorenz_rate(x, y, z, s, r, b):
    return s * (y - x), x * (r - z) - y, x * y - b * z


def lorenz(p, y0):
    x, y, z = y0[0], y0[1], y0[2]
    s, r, b = p[0], p[1], p[2]
    h = LORENZ_DT
    for _ in range(LORENZ_STEPS):
        ax, ay, az = lorenz_rate(x, y, z, s, r, b)
        bx, by, bz = lorenz_rate(x + 0.5 * h * ax, y + 0.5 * h * ay, z + 0.5 * h * az, s, r, b)
        cx, cy, cz = lorenz_rate(x + 0.5 * h * bx, y + 0.5 * h * by, z + 0.5 * h * bz, s, r, b)
        dx, dy, dz = lorenz_rate(x + h * cx, y + h * cy, z + h * cz, s, r, b)
        x = x + h / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx)
        y = y + h / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy)
        z = z + h / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz)
    return x * x + y * y + z * z


def lorenz_args(r):
    return np.array([10.0, 28.0, 8.0 / 3.0]) + 0.1 * r.random(3), np.array([1.0, 1.0, 1.0]) + 0.1 * r.random(3)


# ----- issue 32's sizes of two of the above: a tanh RNN of hidden 16, input 16, batch 1 over 1,000
# steps; the advection stencil for 200 steps (below the others: their source lines, which the
# generated modules quote, stay where they were)

def rnn_small_args(r):
    return (r.standard_normal((16, 16)) * 0.1, r.standard_normal((16, 16)) * 0.1,
            r.standard_normal(16) * 0.1, r.standard_normal((1_000, 1, 16)),
            r.standard_normal((1, 16)) * 0.1)


FLOW_LONG_STEPS = 200


def flow_long(vx, vy, f0, target):
    f = f0
    for _ in range(FLOW_LONG_STEPS):
        f = flow_step(f, vx, vy)
    return np.sum((f - target) ** 2)


LOOP_WORKLOADS = [
    *(Workload(f"rnn_T{steps}", f"tanh RNN, hidden {RNN_HIDDEN}, input {RNN_INPUT}, batch {RNN_BATCH}, "
               f"loss summed over {steps:,} steps", rnn, rnn_loop_args(steps), (0, 1, 2), rnn_bptt)
      for steps in (10, 100, 1_000, 10_000)),
    Workload("rnn_h16_T1000", "tanh RNN, hidden 16, input 16, batch 1, loss summed over 1,000 steps",
             rnn, rnn_small_args, (0, 1, 2), rnn_bptt),
    *(Workload(f"ring_n{n}", f"scalar loop s += x[i] * x[(i + 1) % n] ** 2, n = {n:,}", ring,
               lambda r, n=n: (r.standard_normal(n),), (0,), ring_hand) for n in (1_000, 10_000)),
    *(Workload(f"rk4_{steps}", f"RK4, {steps:,} steps of dy/dt = tanh(W y + b) - y / 2, dim {RK4_DIM}",
               rk4, rk4_args(steps), (0, 1, 2), rk4_hand) for steps in (100, 1_000)),
    Workload("flow_100", f"2-D advection-diffusion, {FLOW_SIZE}x{FLOW_SIZE} periodic grid (np.roll), "
             f"{FLOW_STEPS} steps", flow, flow_args, (0, 1), flow_hand),
    Workload("flow_200", f"2-D advection-diffusion, {FLOW_SIZE}x{FLOW_SIZE} periodic grid (np.roll), "
             f"{FLOW_LONG_STEPS} steps", flow_long, flow_args, (0, 1),
             lambda vx, vy, f0, target: flow_hand(vx, vy, f0, target, FLOW_LONG_STEPS)),
    # (no handwritten gradient: the bench checks these against the numpy printer's and finite
    # differences)
    Workload("spring_16", f"spring chain, {SPRING_MASSES} masses in the plane, {SPRING_STEPS} "
             "velocity-Verlet steps (np.diff, np.linalg.norm(axis=1), F[:-1] += f)", spring,
             spring_args, (0, 1, 2, 3), None),
    Workload("lorenz_10000", f"RK4 on the Lorenz system, state 3 (floats), {LORENZ_STEPS:,} steps",
             lorenz, lorenz_args, (0, 1), None),
]
