"""``for`` loops that stay loops: the region trial (see ir/region.py for the statement).

A ``for`` over ``range(...)`` or over an array's rows, with at least ``MIN_STEPS`` steps, is
first *tried* as a region: its body runs once, into a scratch list of statements, with the
step index a traced int ``t`` and every name the body assigns that holds a traced value (or a
float) a fresh Var, the value at the start of any step. The trial keeps the region when that
one step is the same program for every step:

- the body never takes a decision on a traced value at compile time (a guard, a static use
  of ``t``: ``range(t)``, ``if t == 0``; an ``if`` that stays one, a branch statement of the
  step, is no decision: branches.py), has no ``break``, ``continue`` or ``return``, no
  ``else``;
- each carried value has the same shape and dtype after the step as before it;
- names that hold static values (ints, lists, strings) keep them; Python lists and dicts are
  not changed; a name first bound in the body is not read after the loop.

Otherwise everything the trial did is undone (the frame's names, the statements, the update
tables) and the loop is unrolled as before; ``loop_notes`` keeps what was chosen and why, which
the tape printout shows. The region's values after the loop are ghosts (frontend/abstract.py:
their avals are the carried values' avals); the body tape runs ``length`` times with numpy
(``run_loop``) only if Python code reads one of them (a branch on the loss, a ``float()``, a
static key). The step's carried values and invariants are likewise made only if the trial's
step reads them, so a loop after a loop does not run the first. The rows of a list the body
appends to are views of the region's stack, put on the tape when first read.

Here: the loop's iterable and steps, and the trial (carry, run one step, undo). Its parts:
``region_syntax.py`` (what the loop's source says before any trial), ``region_lists.py`` (the
lists and dicts a step reaches, and the rows of a region's stacks), ``region_check.py`` (is
the step the same program at every step?), ``region_tape.py`` (the loop statement made from a
step that is).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import gast
import numpy as np

from ..errors import YotaError
from ..ir.tape import Aval, Var
from .region_check import check_step, error_reason, traceable
from .region_lists import CarryLast, KeyedLast, LastRow, Watch, items_of, list_name
from .region_syntax import assigned_names, syntax_reason
from .selections import select_masks_in_step

MIN_STEPS = 8


class Before(NamedTuple):
    """The evaluator's state before a trial step, which ``undo_trial`` puts back."""
    names: dict          # the frame's locals
    latest: dict         # in-place updates (updates.py)
    views: dict          # views (updates.py)
    notes: int           # how many loop notes there were
    pending_rows: set    # rows of lists not yet stacked (region_lists.py)


class TrialAbort(YotaError):
    """The body is not the same program at every step: unroll (``what`` says why)."""


class RegionsMixin:
    trial_depth: int = 0
    regions: bool = True    # False: every loop is unrolled (forward mode has no region yet)

    def loop_iterable(self, node: gast.expr) -> Any:
        """What a ``for`` iterates over: ``zip(...)`` and ``enumerate(...)`` of arrays and
        ranges stay ``Steps`` (each step's items made from the index), ``reversed`` of a range
        is the range reversed (``range(n - 1, -1, -1)``: a region like it), anything else is
        the value of the expression."""
        if isinstance(node, gast.Call) and not node.keywords and \
                not any(isinstance(a, gast.Starred) for a in node.args):
            fn = self.expr(node.func)
            if fn is reversed and len(node.args) == 1:
                steps = self.expr(node.args[0])
                return steps[::-1] if isinstance(steps, range) else self.call(fn, [steps], {}, node)
            if fn is zip or fn is enumerate:
                args = self.elements(node.args)
                if all(_steppable(a) for a in args[:1 if fn is enumerate else None]) and \
                        (fn is zip or len(args) == 1 or
                         len(args) == 2 and type(args[1]) is int):
                    return Steps(fn, args, node)
                return self.call(fn, args, {}, node)
        return self.expr(node)

    def eager(self, iterable: Any) -> Any:
        """A ``Steps`` as the value Python would iterate (when the loop is unrolled)."""
        if isinstance(iterable, Steps):
            return self.call(iterable.fn, list(iterable.args), {}, iterable.node)
        return iterable

    def step_item(self, iterable: Any, index: Any, node: gast.AST) -> Any:
        """The item of step ``index`` (a traced int, or an int)."""
        if isinstance(iterable, Steps):
            if iterable.fn is enumerate:
                start = iterable.args[1] if len(iterable.args) == 2 else 0
                count = index if not start else self.binop(gast.Add(), index, start, node)
                return (count, self.step_item(iterable.args[0], index, node))
            return tuple(self.step_item(a, index, node) for a in iterable.args)
        if isinstance(iterable, range):
            if not isinstance(index, Var):
                return iterable[index]
            item = index
            if iterable.step != 1:
                item = self.binop(gast.Mult(), item, iterable.step, node)
            if iterable.start != 0:
                item = self.binop(gast.Add(), item, iterable.start, node)
            return item
        return self.getitem(iterable, index, node)

    def region_while(self, node: gast.While) -> bool:
        """``while i < n: ...; i += k`` with ``i`` and ``n`` static ints: the loop
        ``for i in range(i, n, k)`` without the increment, as a region when it can be one
        (then ``i`` ends as the while loop leaves it). False: nothing done."""
        test, body = node.test, node.body
        if node.orelse or not body or not isinstance(test, gast.Compare) or \
                len(test.ops) != 1 or not isinstance(test.left, gast.Name) or \
                not isinstance(test.ops[0], (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.NotEq)):
            return False
        name, last = test.left.id, body[-1]
        if not (isinstance(last, gast.AugAssign) and isinstance(last.target, gast.Name) and
                last.target.id == name and isinstance(last.op, (gast.Add, gast.Sub)) and
                isinstance(last.value, gast.Constant) and type(last.value.value) is int and
                last.value.value) or name in assigned_names(body[:-1]):
            return False
        start = self.frame.locals.get(name)
        bound_node = test.comparators[0]
        if type(start) is not int or not isinstance(bound_node, (gast.Name, gast.Constant)):
            return False
        try:
            bound = self.expr(bound_node)
        except Exception:
            return False
        if type(bound) is not int:
            return False
        step = last.value.value if isinstance(last.op, gast.Add) else -last.value.value
        op = test.ops[0]
        if isinstance(op, gast.LtE):
            bound += 1
        elif isinstance(op, gast.GtE):
            bound -= 1
        elif isinstance(op, gast.NotEq) and (bound - start) % step:
            return False
        if (step > 0) != isinstance(op, (gast.Lt, gast.LtE, gast.NotEq)) and \
                not isinstance(op, gast.NotEq):
            return False
        steps = range(start, bound, step)
        loop = gast.For(target=gast.Name(name, gast.Store(), None, None), iter=test,
                        body=body[:-1], orelse=[], type_comment=None)
        gast.copy_location(loop, node)
        loop.target = gast.copy_location(loop.target, test.left)
        if not self.region_for(loop, steps):
            return False
        self.bind_name(name, start + len(steps) * step)
        return True

    def region_for(self, node: gast.For, iterable: Any) -> bool:
        """Run ``node`` as a region if it can be one; False (nothing done) to unroll it."""
        if self.collector is not None or self.backward_mode or not self.regions:
            return False
        length = _length(iterable)
        if length is None:
            return False
        if length < MIN_STEPS:
            return False        # short: unrolled, and not worth a note
        reason = syntax_reason(node)
        if reason:
            return self._unrolled(node, reason)
        names = assigned_names(node.body)
        overrides: dict[Any, Aval] = {}
        last: dict[int, list] = {}
        for _ in range(4):
            outcome = self._trial(node, iterable, length, names, overrides, last)
            if isinstance(outcome, CarryLast):
                last.update(outcome)            # hs[-1] read before the append: carry it
                continue
            if isinstance(outcome, dict):
                overrides.update(outcome)       # a carried value widened: try again from it
                continue
            if isinstance(outcome, str):
                return self._unrolled(node, outcome)
            return True
        return self._unrolled(node, "carried values keep changing type")

    def _unrolled(self, node: gast.AST, reason: str) -> bool:
        """Note that the loop is unrolled, and why; False."""
        loc = self.loc(node)
        where = f"{loc.short} " if loc else ""
        self.loop_notes.append(f"{where}unrolled: {reason}")
        return False

    # -- the trial -----------------------------------------------------------------------

    def _trial(self, node: gast.For, iterable: Any, length: int, names: list[str],
               overrides: dict[Any, Aval], last: dict[int, list]) -> Any:
        """Trace one step. True: the region is on the tape; a str: why not (all undone);
        a dict: carried values that must start wider (``s = 0.0`` then ``s += np.sum(x)``);
        a ``CarryLast``: lists whose ``hs[-1]`` to carry (``last`` those carried now)."""
        frame = self.frame
        saved = Before(dict(frame.locals), dict(self.latest), dict(self.views),
                       len(self.loop_notes), set(self.pending_rows))
        containers = {id(v): (v, items_of(v))
                      for v in frame.locals.values() if type(v) in (list, dict)}
        watch = Watch(containers)      # and every other one the step reaches
        index = watch.index = Var(Aval((), np.dtype(np.int64), weak=True),
                                  hint=node.target.id if isinstance(node.target, gast.Name)
                                  else "t")
        self.values[index] = 0
        carried = self.carry_names(names, overrides)
        self.carry_last_rows(last, overrides, carried, watch)
        self.trial_depth += 1
        outer_records, self.trial_records = self.trial_records, (*self.trial_records, watch)
        failure = None
        with self.collect() as body:     # the step's statements: the region's body
            try:
                self.assign(node.target, self.step_item(iterable, index, node.iter))
                self.exec_block(node.body)
            except TrialAbort as e:
                failure = e.what
            except Exception as e:           # anything the step could not do with a traced index
                failure = error_reason(e)
            finally:
                self.trial_depth -= 1
                self.trial_records = outer_records
        if failure is None:
            body[:] = select_masks_in_step(self, body, frame, watch.containers)
            outcome = check_step(self, node, names, carried, saved, watch, body)
            if isinstance(outcome, tuple):
                self.region_keys = watch.keyed      # (dicts keyed by the step: region_dicts)
                return self.make_region(node, iterable, length, index, carried, saved,
                                        watch.containers, body, *outcome)
            failure = outcome
        self.undo_trial(saved, watch.containers)
        return failure

    def carry_names(self, names: list[str], overrides: dict[Any, Aval]) -> dict:
        """A fresh Var, the value at the start of any step, for each name the body assigns that
        holds a traced value or a float (of the aval in ``overrides`` where a trial widened
        it), bound in the frame: name -> (its Var, its value before the loop)."""
        frame = self.frame
        carried: dict[Any, tuple[Var, Any]] = {}
        for name in names:
            if name not in frame.locals:
                continue
            pre = self.current(frame.locals[name])
            if not traceable(pre) and not (type(pre) is int and name in overrides):
                continue
            aval = overrides.get(name) or (pre.aval if isinstance(pre, Var) else Aval.of(pre))
            var = Var(aval, hint=name)
            start = None if aval.weak else _starting(aval.dtype)
            if isinstance(pre, Var):
                self.values.derive(var, pre, start)     # (made only if the step reads it)
            else:
                self.values[var] = start(pre) if start else pre
            carried[name] = (var, pre)
            frame.locals[name] = var
        return carried

    def carry_last_rows(self, last: dict[int, list], overrides: dict[Any, Aval],
                        carried: dict, watch: Watch) -> None:
        """A fresh Var for ``hs[-1]`` before the append of each list in ``last`` (the row the
        step before appended), added to ``carried`` under a ``LastRow`` key and to the
        trial's ``watch``."""
        for rows in last.values():      # hs[-1] before the append: the step before's row
            item = None
            if isinstance(rows, KeyedLast):     # hs[t - 1]: the item the step before set
                rows, item = rows.rows, rows.key
            pre = self.current(rows[-1 if item is None else item])
            listed = list_name(self.frame, rows)
            key = next((k for k in overrides if isinstance(k, LastRow) and k.rows is rows),
                       None) or LastRow(rows, listed, item)
            aval = overrides.get(key) or (pre.aval if isinstance(pre, Var) else Aval.of(pre))
            var = Var(aval, hint=f"{listed}_last")
            if isinstance(pre, Var):
                self.values.derive(var, pre, None if aval.weak else _starting(aval.dtype))
            else:
                self.values[var] = _starting(aval.dtype)(pre)
            carried[key] = (var, pre)
            watch.last[id(rows)] = (var, len(rows) if item is None else item)

    def undo_trial(self, saved: Before, containers: dict, notes: bool = True) -> None:
        """Undo what a trial did: the frame's names, the update and view tables, the loop notes
        (unless ``notes`` is False), the pending rows, the containers (its statements went to a
        list of their own: ``collect``)."""
        frame = self.frame
        frame.locals.clear()
        frame.locals.update(saved.names)
        self.latest.clear()
        self.latest.update(saved.latest)
        self.views.clear()
        self.views.update(saved.views)
        if notes:
            del self.loop_notes[saved.notes:]
        for row in [r for r in self.pending_rows if r not in saved.pending_rows]:
            del self.pending_rows[row]          # rows of lists the undone step made
        for obj, items in containers.values():
            obj.clear()
            obj.update(items) if isinstance(obj, dict) else obj.extend(items)


class Steps:
    """``zip(...)``/``enumerate(...)`` in a ``for``, kept apart until the loop is decided."""

    def __init__(self, fn: Any, args: list, node: gast.AST):
        self.fn, self.args, self.node = fn, args, node


def _starting(dtype: np.dtype) -> Any:
    """A carried value's start, of the carried dtype and of the start's kind: a 0-d array stays
    an array (``total += ...`` updates it in place, as other names see), a number a scalar."""
    def start(v: Any) -> Any:
        array = np.asarray(v, dtype)
        return array if isinstance(v, np.ndarray) else array[()]
    return start


def _steppable(value: Any) -> bool:
    """Can a region step through ``value``: a range, or an array's rows?"""
    return isinstance(value, range) or isinstance(value, Var) and value.aval.ndim >= 1 \
        and not value.aval.weak


def _length(iterable: Any) -> int | None:
    """How many steps a loop over ``iterable`` takes (None: not a loop that can be a region)."""
    if isinstance(iterable, Steps):
        parts = iterable.args[:1] if iterable.fn is enumerate else iterable.args
        lengths = [_length(p) for p in parts]
        return min(lengths) if lengths and None not in lengths else None
    if isinstance(iterable, range):
        return len(iterable)
    if _steppable(iterable):
        return iterable.aval.shape[0]
    return None
