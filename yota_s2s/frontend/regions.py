"""``for`` loops that stay loops: the region trial (see ir/region.py for the statement).

A ``for`` over ``range(...)`` or over an array's rows, with at least ``MIN_STEPS`` steps, is
first *tried* as a region: its body runs once, into a scratch list of statements, with the
step index a traced int ``t`` and every name the body assigns that holds a traced value (or a
float) a fresh Var, the value at the start of any step. The trial keeps the region when that
one step is the same program for every step:

- the body never takes a decision on a traced value (a branch, a guard, a static use of ``t``:
  ``range(t)``, ``if t == 0``), has no ``break``, ``continue`` or ``return``, no ``else``;
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
appends to are views of the region's stack, put on the tape when first read (``_rows``).
"""
from __future__ import annotations

import operator
from typing import Any

import gast
import numpy as np

from ..errors import YotaError
from ..ir.analysis import Analysis
from ..ir.region import EMPTY, Loop, loop_primitive
from ..ir.rewrite import substitute_stmt
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var, tree_vars
from ..rules.indexing import setitem
from .abstract import ghost

MIN_STEPS = 8
_MISSING = object()


class TrialAbort(YotaError):
    """The body is not the same program at every step: unroll (``what`` says why)."""


class _Watch:
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


class _Last:
    """The key of a carried ``hs[-1]``: the row the step before appended to the list (before
    the first step, the list's last item), carried like a name's value."""

    def __init__(self, rows: list, hint: str):
        self.rows, self.hint = rows, hint

    def __str__(self) -> str:
        return f"{self.hint}[-1]"


class _CarryLast(dict):
    """A trial's outcome: carry ``hs[-1]`` of these lists (id -> list) and try again."""


WHOLE = object()


class RegionsMixin:
    trial_depth: int = 0
    trial_records: tuple = ()   # the trials running now, innermost last (``_Watch``)
    part_node: Any = None       # the expression being indexed or appended to (expressions.py)
    regions: bool = True    # False: every loop is unrolled (forward mode has no region yet)
    stack_rows: dict        # a row a region appended to a list -> (its stack, its index)
    pending_rows: dict      # such a row not on the tape yet -> (its statement, where it goes)

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
                last.value.value) or name in _assigned(body[:-1]):
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
        reason = _syntax_reason(node)
        if reason:
            return self._unrolled(node, reason)
        names = _assigned(node.body)
        overrides: dict[Any, Aval] = {}
        last: dict[int, list] = {}
        for _ in range(4):
            outcome = self._trial(node, iterable, length, names, overrides, last)
            if isinstance(outcome, _CarryLast):
                last.update(outcome)            # hs[-1] read before the append: carry it
                continue
            if isinstance(outcome, dict):
                overrides.update(outcome)       # a carried value widened: try again from it
                continue
            if isinstance(outcome, str):
                return self._unrolled(node, outcome)
            return True
        return self._unrolled(node, "carried values keep changing type")

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
        fresh = _builds(node)
        key = id(value)
        for watch in self.trial_records:
            if key in watch.made or key in watch.containers:
                pass
            elif fresh:
                watch.made[key] = value
            else:
                watch.containers[key] = (value, _items(value))
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

    def _rows(self, stack: Var, length: int, node: gast.AST) -> list[Var]:
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

    def _unrolled(self, node: gast.AST, reason: str) -> bool:
        loc = self.loc(node)
        where = f"{loc.short} " if loc else ""
        self.loop_notes.append(f"{where}unrolled: {reason}")
        return False

    # -- the trial -----------------------------------------------------------------------

    def _trial(self, node: gast.For, iterable: Any, length: int, names: list[str],
               overrides: dict[Any, Aval], last: dict[int, list]) -> Any:
        """Trace one step. True: the region is on the tape; a str: why not (all undone);
        a dict: carried values that must start wider (``s = 0.0`` then ``s += np.sum(x)``);
        a ``_CarryLast``: lists whose ``hs[-1]`` to carry (``last`` those carried now)."""
        frame = self.frame
        saved = (dict(frame.locals), self.stmts, dict(self.latest), dict(self.views),
                 len(self.loop_notes), set(self.pending_rows))
        containers = {id(v): (v, _items(v))
                      for v in frame.locals.values() if type(v) in (list, dict)}
        watch = _Watch(containers)      # and every other one the step reaches
        index = Var(Aval((), np.dtype(np.int64), weak=True),
                    hint=node.target.id if isinstance(node.target, gast.Name) else "t")
        self.values[index] = 0
        carried: dict[str, tuple[Var, Any]] = {}
        for name in names:
            if name not in frame.locals:
                continue
            pre = self.current(frame.locals[name])
            if not _traceable(pre):
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
        for rows in last.values():      # hs[-1] before the append: the step before's row
            pre = self.current(rows[-1])
            listed = _list_name(frame, rows)
            key = next((k for k in overrides if isinstance(k, _Last) and k.rows is rows),
                       None) or _Last(rows, listed)
            aval = overrides.get(key) or (pre.aval if isinstance(pre, Var) else Aval.of(pre))
            var = Var(aval, hint=f"{listed}_last")
            if isinstance(pre, Var):
                self.values.derive(var, pre, None if aval.weak else _starting(aval.dtype))
            else:
                self.values[var] = _starting(aval.dtype)(pre)
            carried[key] = (var, pre)
            watch.last[id(rows)] = (var, len(rows))
        self.stmts = []
        self.trial_depth += 1
        outer_records, self.trial_records = self.trial_records, (*self.trial_records, watch)
        failure = None
        try:
            self.assign(node.target, self.step_item(iterable, index, node.iter))
            self.exec_block(node.body)
        except TrialAbort as e:
            failure = e.what
        except Exception as e:           # anything the step could not do with a traced index
            failure = _short(e)
        finally:
            self.trial_depth -= 1
            self.trial_records = outer_records
        body = self.stmts
        if failure is None:
            outcome = self._check_step(node, names, carried, saved, watch, body)
            if isinstance(outcome, tuple):
                return self._make_region(node, iterable, length, index, carried, saved,
                                         watch.containers, body, *outcome)
            failure = outcome
        self._undo(saved, watch.containers)
        return failure

    def _undo(self, saved, containers, notes: bool = True) -> None:
        frame = self.frame
        frame.locals.clear()
        frame.locals.update(saved[0])
        self.stmts = saved[1]
        self.latest.clear()
        self.latest.update(saved[2])
        self.views.clear()
        self.views.update(saved[3])
        if notes:
            del self.loop_notes[saved[4]:]
        for row in [r for r in self.pending_rows if r not in saved[5]]:
            del self.pending_rows[row]          # rows of lists the undone step made
        for obj, items in containers.values():
            obj.clear()
            obj.update(items) if isinstance(obj, dict) else obj.extend(items)

    def _check_step(self, node, names, carried, saved, watch, body) -> Any:
        """(carried names, their values after the step) when the step is a region; else a
        reason (str) or the avals to start from (dict)."""
        frame = self.frame
        if any(s.prim.effect for s in body):
            return "the body checks a traced value (a guard) or prints"
        made = {v for s in body for v in s.outs}
        inputs = {v for v, _ in carried.values()}
        appended = []               # hs.append(h): one value per step, stacked
        carry = _CarryLast()
        for obj, items in watch.containers.values():
            now = _items(obj)
            if isinstance(obj, list) and len(now) == len(items) + 1 and \
                    all(a is b for a, b in zip(now, items)) and isinstance(now[-1], Var) and \
                    (now[-1] in made or now[-1] in inputs):
                misread = _misread(watch.reads.get(id(obj), ()), len(items),
                                   id(obj) in watch.last)
                if misread is _LAST and _traceable(self.current(items[-1])):
                    carry[id(obj)] = obj
                elif misread:
                    return misread if misread is not _LAST else \
                        "the step reads hs[-1] of a list of static values it appends to"
                appended.append((obj, now[-1]))
                continue
            if _changed(now, items):
                return "the loop changes a Python list or dict"
        if carry:
            return carry
        for old, new in self.latest.items():
            if saved[2].get(old) is not new and old not in inputs and old not in made:
                return "an array from before the loop is updated through another name"
        outs, wider = [], {}
        for name in names:
            pre, now = saved[0].get(name, _MISSING), frame.locals.get(name, _MISSING)
            if name in carried:
                var = carried[name][0]
                now = self.current(now) if now is not _MISSING else now
                if now is var:
                    continue
                if not isinstance(now, Var):
                    return f"`{name}` becomes a static value in the loop"
                if now not in made:
                    return f"`{name}` is not computed in the loop"
                if now.aval != var.aval:
                    if _widens(var.aval, now.aval):
                        wider[name] = now.aval
                        continue
                    return f"`{name}` changes from {var.aval} to {now.aval} in the loop"
                outs.append((name, now))
            elif pre is _MISSING:
                if isinstance(now, Var) and name in _loaded_outside(frame, node):
                    return f"`{name}` is first bound in the loop and read after it"
            elif not _same_static(pre, now):
                return f"`{name}` is a static value that changes in the loop"
        rows = {id(obj): v for obj, v in appended}
        for key, (var, _) in carried.items():
            if not isinstance(key, _Last):
                continue
            now = rows.get(id(key.rows))
            if now is None:
                return f"the step reads {key} but does not append to the list"
            if var in self.latest:
                return f"the step writes into {key}, the row the step before appended"
            if now.aval != var.aval:
                if _widens(var.aval, now.aval):
                    wider[key] = now.aval
                    continue
                return f"{key} changes from {var.aval} to {now.aval} in the loop"
            outs.append((key, now))
        if wider:
            return wider
        if not outs and not appended:
            return "the loop carries no traced value"
        updated = {name for name, (var, _) in carried.items() if var in self.latest}
        facts = Analysis(Tape("step", (), [Input(v, 0) for v in inputs], body,
                              result=tuple(v for _, v in outs)), frozenset())
        roots, rows = [facts.view_root(v) for _, v in outs], [v for _, v in appended]
        if any(root not in made for root in roots):
            return "a carried value is a view of a value from before the step"
        if len(set(roots)) < len(roots) or len(set(rows)) < len(rows):
            return "two names (or two lists) hold one array after a step"
        for _, v in appended:       # a row must be an array of its own, as the stack's is
            if v in inputs:
                return "a list gets the array a step starts from (hs.append(h) before h changes)"
            if facts.view_root(v) is not v:
                return "a list gets a view, whose memory a later value shares"
            if v in self.latest or any(out is v and name in updated for name, out in outs):
                return "a list gets an array that is then changed in place"
        return (outs, updated, appended)

    def _make_region(self, node, iterable, length, index, carried, saved, containers, body,
                     outs, updated, appended) -> bool | str:
        frame = self.frame
        carried_names = [name for name, _ in outs]
        c_in = [carried[n][0] for n in carried_names]
        # what the body reads from outside the step: the invariants, as inputs of their own
        defined = {index, *c_in} | {v for s in body for v in s.outs}
        unchanged = {carried[n][0]: carried[n][1] for n in carried if n not in carried_names}
        outer: dict[Var, Any] = {}
        for stmt in body:
            for v in stmt.uses():
                if v not in defined and v not in outer:
                    outer[v] = unchanged.get(v, v)
        mapping = {}
        for v in outer:
            if v in unchanged:
                mapping[v] = v          # already a Var of the step's own
            else:
                mapping[v] = k = Var(v.aval, hint=v.hint)
                self.values.derive(k, v)
        stmts = [substitute_stmt(s, lambda a: mapping.get(a, a)) for s in body]
        stmts = _live(stmts, [v for _, v in outs] + [v for _, v in appended])
        stacks_in, stacks_out = [], []
        for obj, v in appended:
            listed = _list_name(frame, obj)
            aval = Aval((length, *v.aval.shape), v.aval.dtype)
            s_in, s_out = Var(aval, hint=listed), Var(aval, hint=listed)
            self.values[s_in] = self.values[s_out] = ghost(aval.shape, aval.dtype)
            stmts.append(Stmt((s_out,), self.rules.lookup(setitem), (s_in, index, v), (),
                              self.loc(node), None))
            stacks_in.append(s_in)
            stacks_out.append(s_out)
        used = {v for s in stmts for v in s.uses()}
        invariants = [(mapping[v], o) for v, o in outer.items() if mapping[v] in used]
        hint = index.hint or "t"
        params = (hint, *(n.hint if isinstance(n, _Last) else n for n in carried_names),
                  *(v.hint for v in stacks_in),
                  *(k.hint or f"k{i}" for i, (k, _) in enumerate(invariants)))
        c_all = c_in + stacks_in
        inputs = [Input(index, 0)] + [Input(c, i + 1) for i, c in enumerate(c_all)] + \
            [Input(k, i + 1 + len(c_all)) for i, (k, _) in enumerate(invariants)]
        tape = Tape(name="step", params=params, inputs=inputs, stmts=stmts,
                    result=tuple(v for _, v in outs) + tuple(stacks_out), loc=self.loc(node),
                    owned=frozenset(stacks_in))
        source = _loop_source(node)
        loop = Loop(tape, length, len(c_all), source=source,
                    fresh=(False,) * len(c_in) + (EMPTY,) * len(stacks_in))
        operands = [_operand(carried[n][1]) for n in carried_names] + \
            [_operand(o) for _, o in invariants]
        prim = loop_primitive(loop, params[1:])
        self._undo(saved, containers, notes=False)
        try:
            results = self.emit(prim, operands, {"loop": loop}, node)
        except YotaError as e:          # a later step fails where the first did not
            self._undo(saved, containers)
            return f"a step fails: {_short(e)}"
        results = results if isinstance(results, tuple) else (results,)
        last_rows = {}
        for (obj, v), stack, s_in in zip(appended, results[len(carried_names):], stacks_in):
            stack.hint = stack.hint or s_in.hint
            rows = self._rows(stack, length, node)
            self.stack_rows.update((row, (stack, i)) for i, row in enumerate(rows))
            obj.extend(rows)
            last_rows[v] = rows[-1]
        for (name, out), value in zip(outs, results):
            if isinstance(name, _Last):
                continue                        # (the list's rows are the stack's)
            pre = carried[name][1]
            if isinstance(pre, Var) and name in updated:
                self.latest[pre] = value        # ``out[t] = ...``: the array was updated
            if out in last_rows:                # hs.append(h): h after the loop is hs[-1]
                row = last_rows[out]
                self.views[value] = (row, Stmt((value,), self.rules.lookup(operator.getitem),
                                               (row, Lit(Ellipsis)), (), self.loc(node),
                                               self.rule_text))
            self.bind_name(name, value)
        targets = {n.id for n in gast.walk(node.target) if isinstance(n, gast.Name)}
        if targets & _loaded_outside(frame, node):
            self.assign(node.target, self.step_item(iterable, length - 1, node.iter))
        loc = self.loc(node)
        carries = [*map(str, carried_names), *(s.hint for s in stacks_in)]
        self.loop_notes.append(f"{loc.short + ' ' if loc else ''}region: {source}, "
                               f"{length} steps, carries {', '.join(carries)}")
        return True


class Steps:
    """``zip(...)``/``enumerate(...)`` in a ``for``, kept apart until the loop is decided."""

    def __init__(self, fn: Any, args: list, node: gast.AST):
        self.fn, self.args, self.node = fn, args, node


def _builds(node: gast.AST) -> bool:
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


def _items(container: list | dict) -> list:
    return list(container.items()) if isinstance(container, dict) else list(container)


def _list_name(frame, rows: list) -> str:
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


def _changed(now: list, items: list) -> bool:
    """Do a container's items (``_items``: a dict's as pairs, made anew each time) differ?"""
    return len(now) != len(items) or any(
        a is not b and not (type(a) is tuple and type(b) is tuple and len(a) == len(b) == 2
                            and a[0] is b[0] and a[1] is b[1]) for a, b in zip(now, items))


_LAST = "hs[-1] before the append"


def _misread(reads, before: int, carried: bool) -> str | None:
    """Why the reads of a list a step appends one row to are not the same at every step
    (None: they are; ``_LAST``: only by ``hs[-1]`` before the append, the row the step before
    made, which the region carries unless ``carried`` already). ``before``: its length when
    the loop starts. At step ``t`` it has ``t`` more rows than in the trial's step, so an
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
    return _LAST if last and not carried else None


def _starting(dtype: np.dtype) -> Any:
    """A carried value's start, of the carried dtype and of the start's kind: a 0-d array stays
    an array (``total += ...`` updates it in place, as other names see), a number a scalar."""
    def start(v: Any) -> Any:
        array = np.asarray(v, dtype)
        return array if isinstance(v, np.ndarray) else array[()]
    return start


def _steppable(value: Any) -> bool:
    return isinstance(value, range) or isinstance(value, Var) and value.aval.ndim >= 1 \
        and not value.aval.weak


def _length(iterable: Any) -> int | None:
    if isinstance(iterable, Steps):
        parts = iterable.args[:1] if iterable.fn is enumerate else iterable.args
        lengths = [_length(p) for p in parts]
        return min(lengths) if lengths and None not in lengths else None
    if isinstance(iterable, range):
        return len(iterable)
    if _steppable(iterable):
        return iterable.aval.shape[0]
    return None


def _operand(value: Any) -> Any:
    return value if isinstance(value, Var) else Lit(value)


def _traceable(value: Any) -> bool:
    if isinstance(value, Var):
        return True
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc"


def _same_static(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (Var, np.ndarray)):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _short(e: Exception) -> str:
    what = getattr(e, "what", None) or str(e) or type(e).__name__
    return what.splitlines()[0][:120]


def _live(stmts: list, outs: list) -> list:
    live = set(outs)
    kept = []
    for stmt in reversed(stmts):
        if stmt.prim.effect or any(o in live for o in stmt.outs):
            kept.append(stmt)
            live.update(stmt.uses())
    kept.reverse()
    return kept


def _loop_source(node: gast.For) -> str:
    try:
        return gast.unparse(node.iter) if hasattr(gast, "unparse") else \
            __import__("ast").unparse(gast.gast_to_ast(node.iter))
    except Exception:
        return "the loop"


def _walk_own(nodes, loops: bool = True):
    """The nodes of a block, not entering function definitions (nor loops, with
    ``loops=False``: a ``break`` there is that loop's)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        for child in gast.iter_child_nodes(n):
            if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.AsyncFunctionDef)):
                continue
            if not loops and isinstance(child, (gast.For, gast.While)):
                continue
            stack.append(child)


def _syntax_reason(node: gast.For) -> str | None:
    if node.orelse:
        return "the loop has an else block"
    for n in _walk_own(node.body, loops=False):
        if isinstance(n, gast.Break):
            return "break"
        if isinstance(n, gast.Continue):
            return "continue"
    for n in _walk_own(node.body):
        if isinstance(n, gast.Return):
            return "return inside the loop"
        if isinstance(n, (gast.Yield, gast.YieldFrom)):
            return "yield inside the loop"
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            return "global names"
        if isinstance(n, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in targets:
                for sub in gast.walk(t):
                    if isinstance(sub, gast.Attribute) and isinstance(sub.ctx, gast.Store):
                        return "an attribute is assigned in the loop"
    return None


def _assigned(body: list) -> list[str]:
    """Names the body binds or updates (``x = ...``, ``x += ...``, ``x[i] = ...``), in order."""
    names: dict[str, None] = {}
    for n in _walk_own(body):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            names[n.id] = None
        elif isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
            base = n.value
            while isinstance(base, gast.Subscript):
                base = base.value
            if isinstance(base, gast.Name):
                names[base.id] = None
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Subscript):
            base = n.target.value
            if isinstance(base, gast.Name):
                names[base.id] = None
    return sorted(names)


def _loaded_outside(frame, node: gast.For) -> set[str]:
    """Names read in the function outside the loop ``node`` (conservatively: anywhere else)."""
    inside = {id(n) for n in gast.walk(node)}
    return {n.id for n in gast.walk(frame.fn.node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in inside}


__all__ = ["RegionsMixin", "TrialAbort", "MIN_STEPS", "tree_vars"]


def _widens(before, after) -> bool:
    """A carried value the first step makes wider (a float32 start made float64): the same
    shape, a dtype numpy casts to without losing its kind."""
    return after.shape == before.shape and np.can_cast(before.dtype, after.dtype, "same_kind")
