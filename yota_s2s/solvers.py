"""``ys.fixed_point`` and ``ys.odeint``: implicit functions of a user's function, differentiated
by their rules (rules/implicit.py) with generated gradients of that function, which this module
makes for the rules: ``ys.gradient``'s, compiled once per function and argument signature and
found again (``grad``'s cache, guarded).
"""
from __future__ import annotations

from .api import gradient
from .rules.implicit import GRADIENTS, fixed_point, odeint  # noqa: F401  (ys.fixed_point, ys.odeint)

GRADIENTS.make = gradient
