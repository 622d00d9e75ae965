"""``ys.fixed_point`` and ``ys.odeint``: implicit functions of a user's function, differentiated
by their rules (rules/implicit.py) with generated VJPs of that function, which this module
makes for the rules: ``ys.vjp``'s, compiled once per function and argument signature and found
again (``cache.BUILT``, guarded like ``ys.grad``'s variants).
"""
from __future__ import annotations

from typing import Any, Callable

from .products import vjp_compiled
from .cache import BUILT, arg_key, function_key
from .api import gradient
from .rules.implicit import GRADIENTS, VJPS, fixed_point, odeint  # noqa: F401  (ys.fixed_point, ys.odeint)


def cached_vjp(fn: Callable, args: tuple, cotangent: Any) -> Callable:
    """``ys.vjp(fn, *args)``, compiled for the first arguments of a signature, then found (its
    guards see the arguments and ``cotangent``, like ``fn``'s result)."""
    key = ("implicit-vjp", function_key(fn), *(arg_key(a) for a in args))
    return BUILT.get(key, (*args, cotangent), lambda: vjp_compiled(fn, args, buffers=False))


VJPS.make = cached_vjp
GRADIENTS.make = gradient
