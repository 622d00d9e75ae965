"""Peers of the loop workloads (tools/workloads.py LOOP_WORKLOADS) for ``tools/bench.py --loops``
(issue 32): each loss written for JAX with ``lax.scan`` or ``lax.fori_loop`` (a Python loop of
10,000 steps under ``jax.jit`` unrolls), and a forward written by hand for numba (``@njit``):
explicit loops over the elements, what a careful person writes for numba, the bar for
``ys.compile(..., engine="numba")``.

Both are found by the name of the workload's loss (``JAX[w.loss.__name__]``, ``numba_forward``).
Neither JAX nor numba is a dependency: the JAX losses take ``jnp`` and ``lax`` as arguments, and
without numba ``numba_forward`` returns None.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from workloads import (FLOW_DT, FLOW_LONG_STEPS, FLOW_NU, FLOW_STEPS, LORENZ_DT, LORENZ_STEPS,
                       SPRING_DT, SPRING_STEPS)

try:
    import numba
    _njit = numba.njit(cache=False, fastmath=False)
except ImportError:                 # the plain Python functions below, never timed
    numba = None

    def _njit(fn):
        return fn


# ----- JAX: value_and_grad of these under jit; ``jnp``, ``lax`` passed first ---------------------

def rnn_jax(jnp, lax, Wx, Wh, b, xs, h0):
    def step(carry, x):
        h, total = carry
        h = jnp.tanh(x @ Wx + h @ Wh + b)
        return (h, total + jnp.sum(h ** 2)), None
    (_, total), _ = lax.scan(step, (h0, jnp.zeros((), h0.dtype)), xs)
    return total * 0.5


def ring_jax(jnp, lax, x):
    n = x.shape[0]
    return lax.fori_loop(0, n, lambda i, s: s + x[i] * x[(i + 1) % n] ** 2,
                         jnp.zeros((), x.dtype))


def rk4_jax(jnp, lax, W, b, y0, dts):
    def ode(y):
        return jnp.tanh(W @ y + b) - 0.5 * y

    def step(y, dt):
        k1 = ode(y)
        k2 = ode(y + 0.5 * dt * k1)
        k3 = ode(y + 0.5 * dt * k2)
        k4 = ode(y + dt * k3)
        return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4), None
    y, _ = lax.scan(step, y0, dts)
    return 0.5 * jnp.sum(y * y)


def flow_jax(jnp, lax, vx, vy, f0, target, steps=FLOW_STEPS):
    def step(_, f):
        dfx = jnp.roll(f, -1, axis=1) - jnp.roll(f, 1, axis=1)
        dfy = jnp.roll(f, -1, axis=0) - jnp.roll(f, 1, axis=0)
        lap = jnp.roll(f, 1, axis=0) + jnp.roll(f, -1, axis=0) + jnp.roll(f, 1, axis=1) \
            + jnp.roll(f, -1, axis=1) - 4.0 * f
        return f - 0.5 * FLOW_DT * (vx * dfx + vy * dfy) + FLOW_NU * lap
    f = lax.fori_loop(0, steps, step, f0)
    return jnp.sum((f - target) ** 2)


def spring_jax(jnp, lax, x0, v0, k, rest):
    def forces(x):
        d = jnp.diff(x, axis=0)
        length = jnp.linalg.norm(d, axis=1, keepdims=True)
        f = k * (length - rest) * d / length
        return jnp.zeros_like(x).at[:-1].add(f).at[1:].add(-f)

    def step(_, state):
        x, v, a = state
        x = x + SPRING_DT * v + (0.5 * SPRING_DT ** 2) * a
        a_new = forces(x)
        return x, v + (0.5 * SPRING_DT) * (a + a_new), a_new
    x, v, _ = lax.fori_loop(0, SPRING_STEPS, step, (x0, v0, forces(x0)))
    return jnp.sum(x[-1] ** 2) + 0.5 * jnp.sum(v * v)


def lorenz_jax(jnp, lax, p, y0):
    s, r, b, h = p[0], p[1], p[2], LORENZ_DT

    def rate(x, y, z):
        return s * (y - x), x * (r - z) - y, x * y - b * z

    def step(_, state):
        x, y, z = state
        ax, ay, az = rate(x, y, z)
        bx, by, bz = rate(x + 0.5 * h * ax, y + 0.5 * h * ay, z + 0.5 * h * az)
        cx, cy, cz = rate(x + 0.5 * h * bx, y + 0.5 * h * by, z + 0.5 * h * bz)
        dx, dy, dz = rate(x + h * cx, y + h * cy, z + h * cz)
        return (x + h / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx),
                y + h / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy),
                z + h / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz))
    x, y, z = lax.fori_loop(0, LORENZ_STEPS, step, (y0[0], y0[1], y0[2]))
    return x * x + y * y + z * z


JAX = {"rnn": rnn_jax, "ring": ring_jax, "rk4": rk4_jax, "flow": flow_jax,
       "flow_long": partial(flow_jax, steps=FLOW_LONG_STEPS), "spring": spring_jax,
       "lorenz": lorenz_jax}


# ----- numba: forwards written by hand, loops over the elements -----------------------------------

@_njit
def rnn_numba(Wx, Wh, b, xs, h0):
    steps, batch, inputs = xs.shape
    hidden = h0.shape[1]
    h, z = h0.copy(), np.empty_like(h0)
    total = 0.0
    for t in range(steps):
        for i in range(batch):
            for j in range(hidden):
                z[i, j] = b[j]
            for k in range(inputs):                 # row k of Wx: the inner loop is contiguous
                a = xs[t, i, k]
                for j in range(hidden):
                    z[i, j] += a * Wx[k, j]
            for k in range(hidden):
                a = h[i, k]
                for j in range(hidden):
                    z[i, j] += a * Wh[k, j]
        for i in range(batch):
            for j in range(hidden):
                v = math.tanh(z[i, j])
                h[i, j] = v
                total += v * v
    return total * 0.5


@_njit
def ring_numba(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        c = x[(i + 1) % n]
        s += x[i] * c * c
    return s


@_njit
def _ode_numba(W, b, y, out):
    n = y.shape[0]
    for i in range(n):
        z = b[i]
        for j in range(n):
            z += W[i, j] * y[j]
        out[i] = math.tanh(z) - 0.5 * y[i]


@_njit
def rk4_numba(W, b, y0, dts):
    n = y0.shape[0]
    y, u = y0.copy(), np.empty_like(y0)
    k1, k2, k3, k4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for step in range(dts.shape[0]):
        dt = dts[step]
        _ode_numba(W, b, y, k1)
        for i in range(n):
            u[i] = y[i] + 0.5 * dt * k1[i]
        _ode_numba(W, b, u, k2)
        for i in range(n):
            u[i] = y[i] + 0.5 * dt * k2[i]
        _ode_numba(W, b, u, k3)
        for i in range(n):
            u[i] = y[i] + dt * k3[i]
        _ode_numba(W, b, u, k4)
        for i in range(n):
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return 0.5 * np.sum(y * y)


@_njit
def flow_numba(vx, vy, f0, target, steps):
    rows, cols = f0.shape
    f, g = f0.copy(), np.empty_like(f0)
    c = 0.5 * FLOW_DT
    for _ in range(steps):
        for i in range(rows):
            north, south = (i - 1) % rows, (i + 1) % rows
            for j in range(cols):
                west, east = f[i, (j - 1) % cols], f[i, (j + 1) % cols]
                up, down = f[north, j], f[south, j]
                here = f[i, j]
                g[i, j] = here - c * (vx[i, j] * (east - west) + vy[i, j] * (down - up)) \
                    + FLOW_NU * (up + down + west + east - 4.0 * here)
        f, g = g, f
    total = 0.0
    for i in range(rows):
        for j in range(cols):
            r = f[i, j] - target[i, j]
            total += r * r
    return total


@_njit
def _spring_forces_numba(x, k, rest, F):
    F[:] = 0.0
    for i in range(x.shape[0] - 1):
        dx, dy = x[i + 1, 0] - x[i, 0], x[i + 1, 1] - x[i, 1]
        length = math.sqrt(dx * dx + dy * dy)
        c = k[i, 0] * (length - rest[i, 0]) / length
        F[i, 0] += c * dx
        F[i, 1] += c * dy
        F[i + 1, 0] -= c * dx
        F[i + 1, 1] -= c * dy


@_njit
def spring_numba(x0, v0, k, rest):
    x, v = x0.copy(), v0.copy()
    a, a_new = np.empty_like(x0), np.empty_like(x0)
    _spring_forces_numba(x, k, rest, a)
    n = x.shape[0]
    for _ in range(SPRING_STEPS):
        for i in range(n):
            for j in range(2):
                x[i, j] += SPRING_DT * v[i, j] + (0.5 * SPRING_DT ** 2) * a[i, j]
        _spring_forces_numba(x, k, rest, a_new)
        for i in range(n):
            for j in range(2):
                v[i, j] += (0.5 * SPRING_DT) * (a[i, j] + a_new[i, j])
        a, a_new = a_new, a
    return x[-1, 0] ** 2 + x[-1, 1] ** 2 + 0.5 * np.sum(v * v)


@_njit
def lorenz_numba(p, y0):
    x, y, z = y0[0], y0[1], y0[2]
    s, r, b, h = p[0], p[1], p[2], LORENZ_DT
    for _ in range(LORENZ_STEPS):
        ax, ay, az = s * (y - x), x * (r - z) - y, x * y - b * z
        x1, y1, z1 = x + 0.5 * h * ax, y + 0.5 * h * ay, z + 0.5 * h * az
        bx, by, bz = s * (y1 - x1), x1 * (r - z1) - y1, x1 * y1 - b * z1
        x2, y2, z2 = x + 0.5 * h * bx, y + 0.5 * h * by, z + 0.5 * h * bz
        cx, cy, cz = s * (y2 - x2), x2 * (r - z2) - y2, x2 * y2 - b * z2
        x3, y3, z3 = x + h * cx, y + h * cy, z + h * cz
        dx, dy, dz = s * (y3 - x3), x3 * (r - z3) - y3, x3 * y3 - b * z3
        x += h / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx)
        y += h / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy)
        z += h / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz)
    return x * x + y * y + z * z


_NUMBA = {"rnn": rnn_numba, "ring": ring_numba, "rk4": rk4_numba,
          "flow": lambda vx, vy, f0, target: flow_numba(vx, vy, f0, target, FLOW_STEPS),
          "flow_long": lambda vx, vy, f0, target: flow_numba(vx, vy, f0, target, FLOW_LONG_STEPS),
          "spring": spring_numba, "lorenz": lorenz_numba}


def numba_forward(loss):
    """The handwritten numba forward of ``loss`` (a workload's), or None (no numba, or none
    written)."""
    return _NUMBA.get(loss.__name__) if numba is not None else None
