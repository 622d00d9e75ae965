"""autograd's ``examples/fixed_points.py``: a square root as the fixed point of an iteration,
differentiated implicitly (``ys.fixed_point``), never through the iterations.

    .venv/bin/python examples/fixed_points.py

The port changes the imports only (``autograd.numpy`` -> ``numpy``, autograd's ``grad`` ->
``ys.gradient``, ``autograd.misc.fixed_points.fixed_point`` -> ``ys.fixed_point``). At the
fixed point ``x* = f(a)(x*)`` the gradient of ``a`` solves the adjoint fixed point
``w = dy + (df/dx)^T w`` and is ``(df/da)^T w``: here ``1 / (2 sqrt(a))``, as for ``np.sqrt``.
That adjoint is itself written with ``fixed_point`` (as autograd's), so the last two lines
differentiate it again: a second derivative through the fixed point, ``-a^(-3/2) / 4``.
"""
import numpy as np

import yota_s2s as ys
from yota_s2s import fixed_point

grad = ys.gradient


def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)


def grad_descent_sqrt_iter(a):
    return lambda x: x - 0.05 * (x**2 - a)


def sqrt(a, guess=10.0):
    # return fixed_point(newton_sqrt_iter, a, guess, distance, 1e-4)
    return fixed_point(grad_descent_sqrt_iter, a, guess, distance, 1e-4)


def distance(x, y):
    return np.abs(x - y)


def main():
    print(np.sqrt(2.0))
    print(sqrt(2.0))
    print()
    print(grad(np.sqrt)(2.0))
    print(grad(sqrt)(2.0))
    print()
    print(grad(grad(np.sqrt))(2.0))
    print(grad(grad(sqrt))(2.0))
    print()
    return sqrt(2.0), grad(sqrt)(2.0), grad(grad(sqrt))(2.0)


if __name__ == "__main__":
    main()
