"""A 2-D fluid step (advection by a velocity field, then diffusion), in the style of autograd's
fluidsim example, differentiated with respect to the initial velocities.

The grid's constants (cell coordinates, the initial smoke and the target picture) are module
globals: the generated gradient reads them from this module each time it runs (checking their
shape and dtype), as the function does; it pastes none of them into its code, and changing
them in place between calls is seen. They get no gradient: they are not arguments.

    python examples/fluid.py
"""
import numpy as np

import yota_s2s as ys

ROWS, COLS = 16, 16
STEPS = 3
DIFFUSION = 0.05
CELL_Y, CELL_X = np.meshgrid(np.arange(ROWS, dtype=float), np.arange(COLS, dtype=float),
                             indexing="ij")
SMOKE = np.exp(-((CELL_Y - 5.0) ** 2 + (CELL_X - 6.0) ** 2) / 8.0)     # the initial smoke
TARGET = np.exp(-((CELL_Y - 9.0) ** 2 + (CELL_X - 9.0) ** 2) / 8.0)    # where we want it


def advect(f, vx, vy):
    """Move ``f`` along the velocities: each cell takes the bilinear interpolation of ``f`` at
    the point the flow brings to it (periodic boundaries)."""
    x = (CELL_X - vx).ravel()
    y = (CELL_Y - vy).ravel()
    left = np.floor(x).astype(np.int64)
    top = np.floor(y).astype(np.int64)
    rw = x - left
    bw = y - top
    left = left % COLS
    top = top % ROWS
    right = (left + 1) % COLS
    bottom = (top + 1) % ROWS
    flat = (1.0 - bw) * ((1.0 - rw) * f[top, left] + rw * f[top, right]) \
        + bw * ((1.0 - rw) * f[bottom, left] + rw * f[bottom, right])
    return np.reshape(flat, (ROWS, COLS))


def diffuse(f):
    """The five-point stencil, by rolling the grid."""
    neighbours = np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0) + np.roll(f, 1, axis=1) \
        + np.roll(f, -1, axis=1)
    return f + DIFFUSION * (neighbours - 4.0 * f)


def simulate(vx, vy, smoke):
    for _ in range(STEPS):
        vx, vy = advect(vx, vx, vy), advect(vy, vx, vy)
        smoke = diffuse(advect(smoke, vx, vy))
    return smoke


def loss(vx, vy):
    """How far the smoke ends from the target, for initial velocities ``vx``, ``vy``."""
    return np.sum((simulate(vx, vy, SMOKE) - TARGET) ** 2)


def main(iterations=20, rate=0.5):
    rng = np.random.default_rng(0)
    vx, vy = 0.3 * rng.standard_normal((ROWS, COLS)), 0.3 * rng.standard_normal((ROWS, COLS))
    dloss = ys.simplegrad(loss, vx, vy)
    first = loss(vx, vy)
    for _ in range(iterations):
        value, dvx, dvy = dloss(vx, vy)
        vx, vy = vx - rate * dvx, vy - rate * dvy
    print(f"loss {first:.4f} -> {loss(vx, vy):.4f} after {iterations} steps")
    return first, loss(vx, vy)


if __name__ == "__main__":
    main()
