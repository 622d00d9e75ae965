"""``stop_gradient(x)``: the value of ``x``, as a constant for differentiation.

    target = ys.stop_gradient(np.tanh(W @ x))     # used, but not differentiated through
    return np.sum((h - target) ** 2)

Forward it is the identity, and the generated code writes it as one (``target = t1``); the
backward pass sends no gradient through it. ``nodiff(f)`` does the same for every call of ``f``.
"""
from .registry import nodiff, primitive


def stop_gradient(x):
    """``x`` itself; gradients treat the result as a constant."""
    return x


primitive(stop_gradient, "x", name="stop_gradient", emit=("identity",), view=True)
nodiff(stop_gradient)
