"""The Python lists and dicts a region's trial step reaches, and the rows of the lists it fills.

A trial's step must not change a list or dict from before the loop, except for one kind of
change a region can make at every step: ``hs.append(h)``, one row per step, which becomes the
region's *stack* (``(length, *h.shape)``). So the trial watches every container the step
reaches (``Watch``, filled by ``saw_container`` and ``saw_item``), to check it afterwards
(``misread``: is each read the same item at every step?) and to undo it. After the loop the
list holds the stack's rows, views whose statements go on the tape only when read
(``stack_row_views``, ``place_row``); ``np.stack(hs)`` of them all is the stack itself
(``stacked``).
"""
from __future__ import annotations

import operator
from typing import Any

import gast
import numpy as np

from ..ir.tape import Aval, Lit, Stmt, Var, tree_vars


class Watch:
    """What a trial's step does with Python lists and dicts: ``containers`` holds each one from
    before the step that the step reaches (id -> the object and its items then), to check and
    undo; ``made`` those the step builds (``[]``, ``{...}``: its own to change); ``reads`` a
    list's reads (id -> ``(key, its length then, where)``, key ``WHOLE`` for a read of the
    list itself: ``len(hs)``, ``for h in hs``, an argument of a call); ``last`` the lists
    whose ``hs[-1]`` before the append is carried (id -> its Var, the length it is read at)."""

    def __init__(self, containers: dict):
        self.containers = containers
        self.made: dict[int, Any] = {}
        self.reads: dict[int, list] = {}
        self.last: dict[int, tuple[Var, int]] = {}
        # dicts keyed by the step (region_dicts.py): the step index; id -> the offset from it
        # of the key the step sets (``hs[t] = h``: 0), and the offsets of the keys it reads
        # that it has not set (``hs[t - 1]``: -1)
        self.index: Var | None = None
        self.keyed: dict[int, int] = {}
        self.keyed_reads: dict[int, set] = {}


class LastRow:
    """The key of a carried ``hs[-1]``: the row the step before appended to the list (before
    the first step, the list's last item), carried like a name's value; of a carried
    ``hs[t - 1]``: the item the step before set in the dict (before the first step, its item
    ``key``)."""

    def __init__(self, rows: list | dict, hint: str, key: int | None = None):
        self.rows, self.hint, self.key = rows, hint, key

    def __str__(self) -> str:
        return f"{self.hint}[-1]" if self.key is None else f"{self.hint}[t - 1]"


class KeyedLast:
    """A dict whose item the step before set (``hs[t - 1]``) to carry, starting from its item
    ``key`` before the loop (``CarryLast``'s value for a dict)."""

    def __init__(self, rows: dict, key: int):
        self.rows, self.key = rows, key


class CarryLast(dict):
    """A trial's outcome: carry ``hs[-1]`` of these lists (id -> list) and ``hs[t - 1]`` of
    these dicts (id -> ``KeyedLast``), and try again."""


WHOLE = object()        # the key of a read of a list as a whole (``Watch.reads``)


class RegionListsMixin:
    """The lists of a region's step (mixed into ``Evaluator``)."""

    trial_records: tuple = ()   # the trials running now, innermost last (``Watch``)
    part_node: Any = None       # the expression being indexed or appended to (expressions.py)
    stack_rows: dict        # a row a region appended to a list -> (its stack, its index)
    pending_rows: dict      # such a row not on the tape yet -> (its statement, where it goes)

    def stacked(self, fn: Any, args: list, kwargs: dict) -> Var | None:
        """``np.stack(hs)`` of the rows a region appended to ``hs``, in order: the stack the
        region made (None for anything else)."""
        if fn not in (np.stack, np.array, np.asarray) or len(args) != 1 or \
                kwargs not in ({}, {"axis": 0}) or not isinstance(args[0], (list, tuple)) or \
                not args[0]:
            return None
        rows = [self.stack_rows.get(r) if isinstance(r, Var) else None for r in args[0]]
        stack = rows[0][0] if rows[0] else None
        if stack is None or len(rows) != stack.aval.shape[0] or \
                any(r is None or r[0] is not stack or r[1] != i for i, r in enumerate(rows)) or \
                any(self.latest.get(v) is not None for v in (stack, *args[0])):
            return None     # (a row or the stack written in place since: stack the rows)
        # np.stack copies: from here on a write into the result or into a row reaches only
        # itself, and the stack is handed out once (a second np.stack(hs) stacks the rows)
        for row in args[0]:
            del self.stack_rows[row]
        for view in [v for v, (base, _) in self.views.items() if base is stack]:
            del self.views[view]        # (the rows; h after the loop stays hs[-1]'s view)
        return stack

    def saw_container(self, value: list | dict, node: gast.AST) -> None:
        """A list or dict an expression of a trial's step gave: kept (with its items) to check
        and undo, unless the step built it; a list read other than by an item or an append
        is read whole."""
        fresh = builds(node)
        key = id(value)
        for watch in self.trial_records:
            if key in watch.made or key in watch.containers:
                pass
            elif fresh:
                watch.made[key] = value
            else:
                watch.containers[key] = (value, items_of(value))
            if value.__class__ is list and node is not self.part_node:
                watch.reads.setdefault(key, []).append((WHOLE, len(value), self.loc(node)))

    def saw_item(self, value: list, key: Any, node: gast.AST) -> Var | None:
        """``hs[key]`` read in a trial's step (checked if the step appends to ``hs``); the
        carried ``hs[-1]`` where a trial carries it and the step has not appended yet."""
        found = None
        for watch in reversed(self.trial_records):
            watch.reads.setdefault(id(value), []).append((key, len(value), self.loc(node)))
            last = watch.last.get(id(value))
            if found is None and last is not None and key == -1 and len(value) == last[1]:
                found = self.current(last[0])
        return found

    def stack_row_views(self, stack: Var, length: int, node: gast.AST) -> list[Var]:
        """The rows ``stack[0]``, ..., ``stack[length - 1]`` for the list a region appended to:
        views of the stack whose statements go on the tape when a row is first read
        (``place_row``), so the rows nothing reads (``np.stack(hs)`` reads the stack) cost
        no statement."""
        prim = self.rules.lookup(operator.getitem)
        loc, whole = self.loc(node), self.values.peek(stack)
        aval = Aval(stack.aval.shape[1:], stack.aval.dtype)
        rows = []
        for i in range(length):
            row = Var(aval)
            stmt = Stmt((row,), prim, (stack, Lit(i)), (), loc, self.rule_text)
            self.values.set_ghost(row, whole[i], stmt)
            self.views[row] = (stack, stmt)
            self.pending_rows[row] = (stmt, self.stmts)
            rows.append(row)
        return rows

    def place_row(self, row: Var) -> None:
        """Put a row's statement on the tape, at the end of the statements the region that
        made it went into (a trial of a later loop reading the row puts it before that loop)."""
        stmt, into = self.pending_rows.pop(row)
        into.append(stmt)

    def placed_rows(self, stmts: list, result: Any) -> list:
        """``stmts`` with the rows they (or ``result``) read that are still pending placed after
        their stacks (a row that reached the result without a read: a field of a struct)."""
        if not self.pending_rows:
            return stmts
        used = {v for s in stmts for v in s.uses()} | set(tree_vars(result))
        late: dict[Var, list] = {}
        for row in [r for r in used if r in self.pending_rows]:
            stmt, _ = self.pending_rows.pop(row)
            late.setdefault(stmt.args[0], []).append(stmt)
        if not late:
            return stmts
        placed = []
        for s in stmts:
            placed.append(s)
            for o in s.outs:
                placed += late.get(o, [])
        return placed


def builds(node: gast.AST) -> bool:
    """Does ``node`` make a new list or dict (``[]``, ``{...}``, a comprehension, ``a + b``,
    ``list(...)``, ``x.copy()``), not give one that exists (``hs``, ``st["hs"]``)?"""
    if isinstance(node, (gast.List, gast.Dict, gast.ListComp, gast.DictComp, gast.GeneratorExp,
                         gast.BinOp)):
        return True
    if isinstance(node, gast.Call):
        fn = node.func
        return isinstance(fn, gast.Name) and fn.id in ("list", "dict", "sorted") or \
            isinstance(fn, gast.Attribute) and fn.attr == "copy"
    return False


def items_of(container: list | dict) -> list:
    """A container's items as a list (a dict's as pairs), to compare and restore."""
    return list(container.items()) if isinstance(container, dict) else list(container)


def list_name(frame, rows: list) -> str:
    """A name for a list a region appends to: its local name, or its key in a local dict."""
    for name, value in frame.locals.items():
        if value is rows:
            return name
    for value in frame.locals.values():
        if type(value) is dict:
            for key, item in value.items():
                if item is rows and isinstance(key, str) and key.isidentifier():
                    return key
    return "rows"


def changed(now: list, items: list) -> bool:
    """Do a container's items (``items_of``: a dict's as pairs, made anew each time) differ?"""
    return len(now) != len(items) or any(
        a is not b and not (type(a) is tuple and type(b) is tuple and len(a) == len(b) == 2
                            and a[0] is b[0] and a[1] is b[1]) for a, b in zip(now, items))


READS_LAST = "hs[-1] before the append"


def misread(reads, before: int, carried: bool) -> str | None:
    """Why the reads of a list a step appends one row to are not the same at every step
    (None: they are; ``READS_LAST``: only by ``hs[-1]`` before the append, the row the step
    before made, which the region carries unless ``carried`` already). ``before``: its length
    when the loop starts. At step ``t`` it has ``t`` more rows than in the trial's step, so an
    item before them (``hs[0]``) and, after the append, the step's own row (``hs[-1]``) are
    the same item at every step; ``hs[t]``, ``hs[-2]``, ``len(hs)`` and ``for h in hs`` are
    not: unrolled."""
    last = False
    for key, length, loc in reads:
        where = f" ({loc.short})" if loc else ""
        if key is WHOLE:
            return f"the step reads the list it appends to as a whole (len, a loop, a call){where}"
        if type(key) is not int:
            return f"the step reads the list it appends to by {type(key).__name__}{where}"
        if 0 <= key < before or key == -1 and length == before + 1:
            continue
        if key == -1 and length == before and before:
            last = True
            continue
        return (f"the step reads [{key}] of the list it appends to: another item at each "
                f"step{where}")
    return READS_LAST if last and not carried else None
