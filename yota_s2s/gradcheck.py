"""Central finite differences in float64: the independent oracle for every gradient.

``numerical_grad(f, args, i)`` perturbs each element of argument ``i`` by ``±eps``;
``gradcheck(f, *args)`` compiles the gradient and compares, raising a ``GradcheckError`` that
lists the worst element per argument when they disagree.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .errors import YotaError


class GradcheckError(YotaError):
    """A compiled gradient disagrees with central finite differences."""


def _as_float64(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    if isinstance(value, np.floating):
        return np.float64(value)
    return value


def numerical_grad(f: Callable, args: Sequence[Any], i: int, eps: float = 1e-6) -> Any:
    """d f(*args) / d args[i] by central differences (``args[i]``: a float array or a float)."""
    args = list(args)
    x = args[i]
    if isinstance(x, float):
        def at(v):
            args[i] = v
            return float(f(*args))
        return (at(x + eps) - at(x - eps)) / (2 * eps)
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        args[i] = x.copy()
        hi = float(f(*args))
        flat[k] = orig - eps
        args[i] = x.copy()
        lo = float(f(*args))
        flat[k] = orig
        gflat[k] = (hi - lo) / (2 * eps)
    return grad


def differentiable(value: Any) -> bool:
    return (isinstance(value, np.ndarray) and value.dtype.kind == "f") or \
        isinstance(value, (np.floating,)) or (isinstance(value, float) and not isinstance(value, bool))


def gradcheck(f: Callable, *args: Any, rtol: float = 1e-5, atol: float = 1e-7,
              eps: float = 1e-6) -> dict[int, float]:
    """Compile ``f``'s gradient, compare with finite differences in float64.

    Returns the largest absolute error per differentiable argument; raises ``GradcheckError``
    when an element differs by more than ``atol + rtol * |expected|``.
    """
    from .api import simplegrad
    args = [_as_float64(a) for a in args]
    dfn = simplegrad(f, *args)
    value, *grads = dfn(*args)
    errors, problems = {}, []
    for i, (a, g) in enumerate(zip(args, grads)):
        if not differentiable(a):
            continue
        expected = numerical_grad(f, args, i, eps)
        got = np.asarray(g, dtype=np.float64)
        diff = np.abs(got - expected)
        errors[i] = float(diff.max()) if diff.size else 0.0
        bad = diff > atol + rtol * np.abs(expected)
        if np.any(bad):
            k = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
            problems.append(f"argument {i}: at {k} the gradient is {got[k]!r}, finite "
                            f"differences give {expected[k]!r} ({int(bad.sum())} elements differ)")
    if problems:
        raise GradcheckError(f"the gradient of {getattr(f, '__name__', f)} disagrees with finite "
                             "differences:\n  " + "\n  ".join(problems))
    return errors
