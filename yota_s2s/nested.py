"""What the frontend inlines for a call of a gradient function: gradients of gradients.

A gradient module's plain form (``buffers=False``) uses only primitives with rules, so a
function that calls a generated gradient can be differentiated again: the frontend inlines
the plain form in place of a buffered module's function (``frontend/resolve.py``
``plain_form``), and in place of a call of ``ys.gradient``'s (or ``value_and_grad``'s,
``elementwise_grad``'s, ``vjp``'s, ``hvp``'s) function it inlines what that function's
``__yota_inline__`` gives for the example arguments: ``picked_gradient`` over the plain
generated gradient. The entry points set ``__yota_inline__`` with the makers here, passing
what they need from above (``grad``); the functions made here are what the frontend traces,
so they are plain Python over a generated gradient.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .objects import param_names, unbind
from .rules.registry import RuleSet


def picked_gradient(df: Callable, position: Any, with_value: bool, has_aux: bool,
                    *args: Any) -> Any:
    """``df(*args)``'s gradient at ``position`` (a tuple of positions: a tuple of them), with
    the value first when ``with_value`` (``has_aux``: the value is ``(loss, aux)``, and without
    it the gradient comes with ``aux``): what ``ys.gradient(f)(*args)`` returns, written over
    a generated gradient ``df`` so that the frontend can inline it."""
    out = df(*args)
    if isinstance(position, tuple):
        picked = tuple([out[1 + p] for p in position])
    else:
        picked = out[1 + position]
    if with_value:
        return out[0], picked
    if has_aux:
        return picked, out[0][1]
    return picked


def gradient_inline(f: Callable, argnum: Any, with_value: bool, device: str,
                    rules: RuleSet, grad: Callable, has_aux: bool = False) -> Callable:
    """``__yota_inline__`` of ``ys.gradient(f, argnum)``'s function: for example arguments,
    the function the frontend inlines in its place (``picked_gradient`` over ``f``'s
    gradient compiled by ``grad``, ``ys.grad``, for them), or None where it cannot (a bound
    method)."""
    def make(*example: Any) -> Callable | None:
        fn, bound = unbind(f)
        if bound is not None:
            return None
        names = param_names(fn, len(example))
        positions = tuple(_position(a, names) for a in argnum) if isinstance(argnum, tuple) \
            else _position(argnum, names)
        _, grads = grad(f, *example, wrt=argnum, device=device, rules=rules, has_aux=has_aux)
        if grads._variant.reads_closure:
            # its code reads f's closure when it runs (``_fn=f``): handed over beside it, f
            # is found where the function being compiled reaches it (frontend/outside.py
            # handed_over), and the closure is read there when the code runs
            return functools.partial(closure_gradient, grads.function, fn, positions,
                                     with_value, has_aux)
        return functools.partial(picked_gradient, grads.function, positions, with_value,
                                 has_aux)
    return make


def closure_gradient(df: Callable, fn: Callable, position: Any, with_value: bool,
                     has_aux: bool, *args: Any) -> Any:
    """``picked_gradient`` over a generated gradient that reads ``fn``'s closure when it
    runs (called with ``_fn=fn``)."""
    return picked_gradient(functools.partial(df, _fn=fn), position, with_value, has_aux, *args)


def position_inline(df: Callable, position: int) -> Callable:
    """``__yota_inline__`` of a function that returns ``df(*args)[1 + position]``
    (``ys.hvp``'s): ``picked_gradient`` over ``df``, whatever the example arguments."""
    return lambda *example: functools.partial(picked_gradient, df, position, False, False)


def vjp_inline(df: Callable) -> Callable:
    """``__yota_inline__`` of ``ys.vjp``'s function: ``vjp_reordered`` over its gradient."""
    return lambda *example: functools.partial(vjp_reordered, df)


def vjp_reordered(df: Callable, *args: Any) -> tuple:
    """``(f(*args), c0, c1, ...)`` from the gradient of ``sum(f(*args) * cotangent)``."""
    out = df(*args)
    return (out[-1], *out[1:-1])


def _position(argnum: Any, names: tuple) -> int:
    return names.index(argnum) if isinstance(argnum, str) else argnum


def jacobian_inline(vjp: Callable) -> Callable:
    """``__yota_inline__`` of ``ys.jacobian``, called in a function being differentiated
    (autograd's ``np.sin(jacobian(f)(x))``): for example arguments ``(f, *args)`` and its
    keywords, ``jacobian_rows`` over ``f``'s VJP function (made by ``vjp``, ``ys.vjp``), or
    None where it cannot (a result with structure, ``mode="fwd"``)."""
    def make(f: Callable, *args: Any, argnum: int = 0, mode: str = "rev", **options: Any):
        out = f(*args)
        if mode != "rev" or not isinstance(argnum, int) or \
                not isinstance(out, (np.ndarray, np.floating, float)):
            return None
        return functools.partial(jacobian_rows, vjp(f, *args), argnum, np.shape(out))
    make.keywords = True
    return make


def jacobian_rows(vf: Callable, position: int, shape: tuple, f: Callable, *args: Any,
                  **options: Any) -> Any:
    """``ys.jacobian(f, *args, argnum=position)`` written over ``f``'s VJP function ``vf``:
    one product per element of the result (of ``shape``), stacked, so that the frontend can
    inline it."""
    size = int(np.prod(shape))
    rows = [vf(*args, np.reshape(np.eye(size)[i], shape))[1 + position] for i in range(size)]
    return np.reshape(np.stack(rows), shape + np.shape(args[position]))
