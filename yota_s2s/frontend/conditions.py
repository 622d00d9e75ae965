"""The value of a test on data (an ``if``'s, a ``while``'s, a conditional expression's; issue
33): one traced bool that a branch statement or a while statement reads.

``and``, ``or`` and ``not`` over traced bools are numpy's ``logical_and``, ``logical_or`` and
``logical_not``, and a chain of comparisons (``-1.0 < s < 1.0``) the ``and`` of its links. A
static part decides where it can, as Python's short circuit does (``i < 100 and err > tol``);
the parts after a traced one are evaluated whatever its value (a test reads values, it does
not change them). A traced part that is not one bool (an array, a number) is decided on the
example, as Python decides it (a guard), or, in a ``strict`` test (a while's), raises
``NotOneBool``.
"""
from __future__ import annotations

from typing import Any

import gast
import numpy as np

from ..ir.tape import Var


class NotOneBool(Exception):
    """A part of a strict test is traced and not one bool."""


class ConditionsMixin:
    """Tests on data (mixed into ``Evaluator``)."""

    def condition(self, test: gast.expr, strict: bool = False) -> Any:
        if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
            value = self.current(self.condition(test.operand, strict))
            if _one_bool(value, strict):
                return self.call(np.logical_not, [value], {}, test)
            return not self.truth(value, test.operand)
        if isinstance(test, gast.Compare) and len(test.ops) > 1:
            return self._chain(test, strict)
        if not isinstance(test, gast.BoolOp):
            return self.expr(test)
        want = isinstance(test.op, gast.Or)       # `or` stops at the first true value
        fn = np.logical_or if want else np.logical_and
        traced = None
        for part in test.values:
            value = self.current(self.condition(part, strict))
            if _one_bool(value, strict):
                traced = value if traced is None else self.call(fn, [traced, value], {}, test)
            elif self.truth(value, part) == want:
                return value    # decides: `... or True`, `... and False`
        return traced if traced is not None else value

    def _chain(self, test: gast.Compare, strict: bool) -> Any:
        """``a < b < c``: ``a < b and b < c``, each operand evaluated once."""
        left, traced, link = self.expr(test.left), None, True
        for op, right_node in zip(test.ops, test.comparators):
            right = self.expr(right_node)
            link = self.current(self.compare(op, left, right, test))
            if _one_bool(link, strict):
                traced = link if traced is None else \
                    self.call(np.logical_and, [traced, link], {}, test)
            elif not self.truth(link, test):
                return link
            left = right
        return traced if traced is not None else link


def _one_bool(value: Any, strict: bool) -> bool:
    if not isinstance(value, Var):
        return False
    if value.aval.shape == () and value.aval.dtype == np.bool_:
        return True
    if strict:
        raise NotOneBool()      # `and` of arrays: Python's truth of an array, a guard
    return False
