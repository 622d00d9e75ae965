"""Dicts keyed by a region's step: ``hs[t] = f(hs[t - 1])`` (min-char-rnn's ``xs``, ``hs``,
``ys``, ``ps``).

A step that sets ``d[t]`` (``t`` the loop's item, ``t + k`` as well) of a dict from before
the loop sets one item per step, as ``hs.append(h)`` appends one row: the items are the rows
of a stack the region makes, put into the dict under their keys after the loop (``d[0]``,
..., ``d[n - 1]``: views of the stack, on the tape only when read). In the trial's step the
item is kept under a ``StepKey`` (its offset from the step index) and read back as the
step's own; ``d[t - 1]`` (before or after the step sets ``d[t]``) is the item the step before
set, carried like ``hs[-1]`` (``KeyedLast``), starting from the item the dict holds under that
key before the loop (``hs[-1] = np.copy(hprev)``). Any other item keyed by the step
(``d[t - 2]``, ``d[t + 1]``, ``d[t]`` before the step sets it) or a second key set per step
is not the same program at every step: the loop is unrolled.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import gast

from ..errors import YotaError
from ..ir.tape import Lit, Var
from .region_lists import KeyedLast, items_of, list_name


@dataclass(frozen=True)
class StepKey:
    """The key ``t + offset`` of a dict item a trial's step sets (``t``: the step index)."""
    offset: int


class RegionDictsMixin:
    """Dict items keyed by the step of a region's trial (mixed into ``Evaluator``)."""

    region_keys: dict           # the trial that became a region: id(dict) -> the offset set

    def step_write(self, container: dict, key: Any, value: Any, node: gast.AST) -> bool:
        """``d[t + k] = value`` in a trial's step: kept under ``StepKey(k)``; False where the
        key is not the step index plus an int (as before: refused, the loop unrolled)."""
        offset = step_offset(self, key)
        if offset is None:
            return False
        watch = self.trial_records[-1]
        name = list_name(self.frame, container)
        if id(container) not in watch.containers or id(container) in watch.made:
            raise YotaError(f"the step sets {name}[...] of a dict it makes", self.loc(node))
        if watch.keyed.setdefault(id(container), offset) != offset:
            raise YotaError(f"the step sets two items of {name} keyed by the step index",
                            self.loc(node))
        container[StepKey(offset)] = value
        return True

    def step_read(self, container: dict, key: Any, node: gast.AST) -> Any:
        """``d[t + k]`` in a trial's step: the item the step set, the carried item the step
        before set, or (in the first trial, to learn its type) the item before the loop; None
        where the key is not the step index plus an int."""
        offset = step_offset(self, key)
        if offset is None:
            return None
        own = container.get(StepKey(offset))
        if own is not None:
            return own
        watch = self.trial_records[-1]
        watch.keyed_reads.setdefault(id(container), set()).add(offset)
        carried = watch.last.get(id(container))
        if carried is not None and carried[1] == offset:
            return self.current(carried[0])
        first = offset       # the key at the first step (the index is 0 there)
        if first not in container:
            raise YotaError(f"the step reads {list_name(self.frame, container)}[...], another "
                            "item at each step, which the dict does not hold before the loop",
                            self.loc(node))
        return container[first]


def step_offset(ev: Any, key: Any) -> int | None:
    """``key`` as ``t + k`` with ``t`` the innermost trial's step index: ``k`` (None: not so)."""
    if not isinstance(key, Var) or not ev.trial_records:
        return None
    index, offset = ev.trial_records[-1].index, 0
    while key is not index:
        stmt = next((s for s in reversed(ev.stmts) if key in s.outs), None)
        if stmt is None or stmt.prim.fn not in (operator.add, operator.sub) or stmt.params:
            return None
        a, b = stmt.args
        if isinstance(a, Var) and isinstance(b, Lit) and type(b.value) is int:
            key, offset = a, offset + (b.value if stmt.prim.fn is operator.add else -b.value)
        elif stmt.prim.fn is operator.add and isinstance(b, Var) and isinstance(a, Lit) and \
                type(a.value) is int:
            key, offset = b, offset + a.value
        else:
            return None
    return offset


def keyed_row(ev: Any, watch: Any, obj: dict, items: list, made: set, inputs: set) -> Any:
    """A dict from before the loop that the step set one item of by the step index: its row
    (the item's current value), a ``KeyedLast`` where the step read the item the step before
    set and it is not carried yet, or a reason to unroll; None: not such a dict (it changed
    otherwise)."""
    offset = watch.keyed.get(id(obj))
    now = items_of(obj)
    if offset is None or len(now) != len(items) + 1 or now[-1][0] != StepKey(offset) or \
            any(a[0] is not b[0] or a[1] is not b[1] for a, b in zip(now, items)):
        return None
    name = list_name(ev.frame, obj)
    row = ev.current(now[-1][1])
    if not isinstance(row, Var) or (row not in made and row not in inputs):
        return f"the step sets {name}[...] to a value not computed in the step"
    reads = watch.keyed_reads.get(id(obj), set())
    if reads - {offset - 1}:
        return f"the step reads {name}[...] of another step than the one before, or before " \
            "it sets it"
    if reads and id(obj) not in watch.last:
        return KeyedLast(obj, offset - 1)
    return row
