"""Central finite differences in float64: the independent oracle for every gradient.

``numerical_grad(f, args, i)`` perturbs each element of argument ``i`` by ``±eps``;
``gradcheck(f, *args)`` compiles the gradient and compares, raising a ``GradcheckError`` that
lists the worst element per argument when they disagree. ``sampled_errors`` checks a gradient
that is already compiled on a sample of elements per leaf (``yota-s2s check --gradcheck``).
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from .api import simplegrad
from .errors import YotaError


class GradcheckError(YotaError):
    """A compiled gradient disagrees with central finite differences."""


def _as_float64(value: Any) -> Any:
    """Float arrays and numpy floats in float64, inside plain containers too."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    if isinstance(value, np.floating):
        return np.float64(value)
    if type(value) in (list, tuple):
        return type(value)(_as_float64(v) for v in value)
    if type(value) is dict:
        return {k: _as_float64(v) for k, v in value.items()}
    return value


def _scalar(value: Any) -> float:
    """``f``'s value as a float: a result of one element (shape (1,), (1, 1)) counts as a
    scalar, as it does for the gradient."""
    return float(np.reshape(value, ())) if np.size(value) == 1 else float(value)


def numerical_grad(f: Callable, args: Sequence[Any], i: int, eps: float = 1e-6) -> Any:
    """d f(*args) / d args[i] by central differences (``args[i]``: a float array or a float)."""
    args = list(args)
    x = args[i]
    if isinstance(x, float):
        def at(v):
            args[i] = v
            return _scalar(f(*args))
        return (at(x + eps) - at(x - eps)) / (2 * eps)
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        args[i] = x.copy()
        hi = _scalar(f(*args))
        flat[k] = orig - eps
        args[i] = x.copy()
        lo = _scalar(f(*args))
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


# -- sampled check of a compiled gradient -----------------------------------------------------

def sampled_errors(f: Callable, args: Sequence[Any], grads: Sequence[Any], samples: int = 16,
                   eps: float = 1e-6) -> dict[tuple[int, tuple], float]:
    """The worst relative error of ``grads`` (as a compiled gradient returns them) against
    central differences of ``f`` in float64, over at most ``samples`` elements of each leaf.

    Keys are ``(argnum, path)``: ``path`` is ``()`` for an array argument, a field path for a
    leaf of a struct argument (its gradient is a dict from paths). The error of a leaf is
    ``max |g - fd| / max(|fd|, |g|)`` over the sampled elements, so it does not blow up where
    single gradient entries are near zero. Elements are drawn with a fixed seed.
    """
    args64 = [_as_float64(a) for a in args]
    errors = {}
    for argnum, grad in enumerate(grads):
        leaves = grad.items() if isinstance(grad, dict) else [] if grad is None else [((), grad)]
        for path, g in leaves:
            if differentiable(leaf(args64[argnum], path)):
                errors[(argnum, path)] = _leaf_error(f, args64, argnum, path, np.asarray(g),
                                                     samples, eps)
    return errors


def _leaf_error(f: Callable, args: list, argnum: int, path: tuple, g: np.ndarray, samples: int,
                eps: float) -> float:
    x = np.array(leaf(args[argnum], path), dtype=np.float64)
    rng = np.random.default_rng(0)
    picks = np.sort(rng.choice(x.size, min(samples, x.size), replace=False))
    as_float = not isinstance(leaf(args[argnum], path), np.ndarray)
    worst = scale = 0.0
    for k in picks:
        values = []
        for step in (eps, -eps):
            moved = x.copy()
            moved.reshape(-1)[k] += step
            new = float(moved) if as_float else moved
            trial = list(args)
            trial[argnum] = with_leaf(args[argnum], path, new)
            values.append(_scalar(f(*trial)))
        fd = (values[0] - values[1]) / (2 * eps)
        got = float(g.reshape(-1)[k])
        worst, scale = max(worst, abs(got - fd)), max(scale, abs(fd), abs(got))
    return worst / scale if scale else 0.0


def leaf(value: Any, path: tuple) -> Any:
    """The leaf at ``path`` inside a struct: dict keys, list/tuple indices, attribute names."""
    for key in path:
        value = value[key] if isinstance(value, (dict, list, tuple)) else getattr(value, key)
    return value


def with_leaf(value: Any, path: tuple, new: Any) -> Any:
    """A copy of ``value`` with the leaf at ``path`` replaced; the original is not changed."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    if isinstance(value, (dict, list)):
        out = type(value)(value)
        out[key] = with_leaf(value[key], rest, new)
        return out
    if isinstance(value, tuple):
        items = list(value)
        items[key] = with_leaf(value[key], rest, new)
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if dataclasses.is_dataclass(value):
        return dataclasses.replace(value, **{key: with_leaf(getattr(value, key), rest, new)})
    out = copy.copy(value)
    setattr(out, key, with_leaf(getattr(value, key), rest, new))
    return out
