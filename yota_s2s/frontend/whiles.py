"""``while`` on a traced condition that stays a ``while``: the while trial (ir/whiles.py for the
statement).

Where a ``while``'s condition is a traced boolean number (``np.max(np.abs(r)) > 1e-10``), in
straight-line code (not in a ``for`` region's step), the condition and the body are traced
once, from the state before the loop with each name the body binds that holds a traced value
or a float a fresh Var (the value at the start of any trip), each into a tape of its own. The
``while`` becomes a while statement when

- the body leaves the loop only by ``break`` and ``continue`` written as structured code
  (exits.py: the statements after them in the other arm of their ``if``, a ``break`` setting
  a flag ``done`` the condition reads; an early ``return``: returns.py), has no ``else``,
  takes no decision on a traced value at compile time (a guard; an ``if`` that stays a branch
  is no decision), holds no loop, writes no attribute, no array in place and no list or dict
  from before the loop;
- each carried value has the same shape and dtype after a trip as before it; a name holding a
  static value keeps it, but an ``int`` the body steps (``i += 1``), carried as a run-time
  int; a name first bound in the body is not read after the loop;
- the condition (``and``, ``or``, ``not`` over traced bools as numpy's logical functions)
  reads something other than int counters: a loop counted by them alone is unrolled.

Otherwise everything is undone and the loop is unrolled on the example, as before (a guard per
trip). Forward mode keeps it (its JVP carries the tangents in the loop: ad/while_tangents.py);
in ``ys.vmap`` and a module yota-s2s wrote traced again (``branches`` off, or ``_generated``)
the loop is unrolled.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gast
import numpy as np

from ..ir.branch import branch_primitive
from ..ir.region import loop_of
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Aval, Input, Lit, Tape, Var
from ..ir.whiles import While, while_of, while_primitive
from ..marks import generated_file
from .branches import _own_nodes, _source, live_sides, put_back
from .exits import lower, own_exits
from .region_check import traceable
from .region_lists import Watch
from .region_syntax import assigned_names, loaded_outside

_MISSING = object()


@functools.lru_cache(maxsize=None)
def _generated(file: str) -> bool:
    """Whether ``file`` is a module yota-s2s wrote: its ``while`` loops are unrolled when it is
    traced again for a higher order (a gradient of a gradient)."""
    return generated_file(Path(file))


class _NoWhile(Exception):
    """The ``while`` cannot be a while statement: unroll it."""


class WhilesMixin:
    """The while trial (mixed into ``Evaluator``)."""

    whiles: bool = True     # False: every while on a traced condition is unrolled
    break_flag: str | None = None   # the name of a lowered break's flag (returns.py), or done

    def while_region(self, node: gast.While) -> bool:
        """Run ``node`` as a while statement if its condition is traced; False (nothing done)
        to unroll it on the example."""
        if self.collector is not None or self.backward_mode or not self.whiles \
                or self.trial_depth or node.orelse:
            return False
        if _generated(self.frame.fn.file):
            return False
        body, flag, outer = node.body, None, self.exit_flags
        if _leaves(body):
            lowered = self._lowered(body)
            if lowered is None:
                return False
            body, flag = lowered
        saved, containers = self._trial_state()
        try:
            return self._while(node, body, flag, saved, containers)
        except _NoWhile:
            self._restore(saved)
            return False
        finally:
            self.exit_flags = outer

    def structured(self, node: gast.For | gast.While) -> gast.For | gast.While:
        """A loop whose body leaves a trip by ``continue`` (and never by ``break``) as the same
        loop with the statements after each ``continue`` in the other arm of its ``if``
        (exits.py): the same program, whose ``if`` on data can then be a branch statement, in
        a region, a while statement or an unrolled loop alike. Any other loop as it is."""
        exits = own_exits(node.body)
        if not exits or any(isinstance(n, gast.Break) for n in exits) \
                or _leaves(node.body, exits=False) or node.orelse or self._static_exits(node):
            return node
        body = lower(node.body, None)
        if body is None:
            return node
        fields = {f: getattr(node, f) for f in node._fields}
        return gast.copy_location(type(node)(**{**fields, "body": body}), node)

    def _static_exits(self, node: gast.For | gast.While) -> bool:
        """Is every test that decides an exit of the loop's body made of the loop's index and
        static values from before the loop (``if t % 3 == 0: continue``)? The unrolled loop
        decides those, as before."""
        index = {n.id for n in gast.walk(node.target) if isinstance(n, gast.Name)} \
            if isinstance(node, gast.For) else set()
        bound = set(assigned_names(node.body)) - index
        for s in _own_nodes(node.body):
            if not isinstance(s, gast.If) or not own_exits(s.body + s.orelse):
                continue
            for n in gast.walk(s.test):
                if not isinstance(n, gast.Name) or n.id in index:
                    continue
                if n.id in bound:
                    return False
                try:
                    value = self.frame.lookup(n.id)
                except KeyError:
                    return False
                if isinstance(value, (Var, np.ndarray)):
                    return False
        return True

    def _lowered(self, body: list) -> tuple[list, str | None] | None:
        """The body with its own ``break`` and ``continue`` as structured code (exits.py), and
        the name of the flag a ``break`` sets (None: no ``break``), one of ``exit_flags`` from
        then on (the caller puts them back); None if it cannot be."""
        if _leaves(body, exits=False):
            return None
        flag = None
        if any(isinstance(n, gast.Break) for n in own_exits(body)):
            used = {n.id for n in gast.walk(self.frame.fn.node) if isinstance(n, gast.Name)}
            flag = self.break_flag or next(f"done{k or ''}" for k in range(len(used) + 1)
                                           if f"done{k or ''}" not in used)
        lowered = lower(body, flag)
        if lowered is None:
            return None
        if flag is not None:
            self.exit_flags = self.exit_flags | {flag}
        return lowered, flag

    def _while(self, node: gast.While, body: list, flag: str | None, saved: tuple,
               containers: dict) -> bool:
        frame = self.frame
        before = {n: self.current(v) for n, v in saved[0].items()}
        names = assigned_names(body)
        flags = [f for f in names if f in self.exit_flags]
        before.update((f, np.bool_(False)) for f in flags)
        carried = _carried(names, before, body, flags)
        places: dict[str, Var] = {}
        for name in carried:
            places[name] = self._place(name, before[name])
            frame.locals[name] = places[name]
        watch = Watch(dict(containers))
        outer, self.trial_records = self.trial_records, (*self.trial_records, watch)
        try:
            with self.collect() as cond_stmts:
                test = cond = self.current(self.condition(node.test, strict=True))
                if flag is not None:
                    test = self._and_not(cond, places[flag], node)
            if not isinstance(test, Var) or test.aval.shape != () \
                    or test.aval.dtype != np.bool_:
                raise _NoWhile()
            with self.collect() as body_stmts:
                frame.locals.update((f, False) for f in flags)    # in a trip until its break
                self.exec_block(body)
        except _NoWhile:
            raise
        except Exception:
            raise _NoWhile() from None
        finally:
            self.trial_records = outer
            changed = put_back(watch)       # a trial not kept leaves no row behind
        env = {n: self.current(v) for n, v in frame.locals.items()}
        counters = {places[n] for n in carried if type(before[n]) is int}
        if (not isinstance(cond, Var) or _counted_only(cond_stmts, cond, counters)) and (
                flag is None or _counted_only(body_stmts, env.get(flag), counters)):
            raise _NoWhile()    # trips counted by ints alone (while i < n): unrolled
        stmts = cond_stmts + body_stmts
        if changed or self._trial_changed(saved, stmts) \
                or any(s.prim.effect or loop_of(s) is not None or while_of(s) is not None
                       for s in stmts):
            raise _NoWhile()
        _check_after(names, places, before, env, loaded_outside(frame, node))
        outs = [env[n] for n in carried]
        _no_alias(outs, body_stmts, places.values())
        _no_narrowing([before[n] for n in carried], body_stmts)
        loop, invariants = self._tapes(node, _source(node.test), test, cond_stmts, body_stmts,
                                       [places[n] for n in carried], outs)
        self._restore(saved)
        if test.hint is None:
            test.hint = _cond_hint(node.test)
        inits = [v if isinstance(v, Var) else Lit(_numpy(v)) for v in
                 (before[n] for n in carried)]
        params = tuple(carried) + tuple(k.hint or f"k{i}" for i, k in enumerate(invariants))
        results = self.emit(while_primitive(loop, params, len(carried)), [*inits, *invariants],
                            {"loop": loop}, node)
        results = results if isinstance(results, tuple) else (results,)
        for name, value in zip(carried, results):
            self.bind_name(name, value)
        return True

    def while_for(self, node: gast.For, iterable: Any) -> bool:
        """``for t in range(...)`` whose body leaves by one ``if <traced test>: break`` at its
        top level, as a while statement over ``t`` and a ``done`` flag: a trip runs the
        statements before the ``if``, then those after it unless the test holds (a branch
        statement), so the trips are counted as the loop ran them and the backward starts at
        the one that left. Any other ``break`` (under an ``if`` with more in its arm, several,
        nested ``if``s; ``continue`` beside it) is lowered (exits.py): the body sets the flag.
        False (nothing done) to unroll it on the example."""
        body = node.body
        exits = [k for k, s in enumerate(body) if isinstance(s, gast.If) and not s.orelse
                 and len(s.body) == 1 and isinstance(s.body[0], gast.Break)]
        if self.collector is not None or self.backward_mode or not self.branches \
                or not self.whiles or self.trial_depth or node.orelse \
                or not isinstance(iterable, range) \
                or not len(iterable) or not isinstance(node.target, gast.Name) \
                or _generated(self.frame.fn.file):
            return False
        lowered, outer = None, self.exit_flags
        if len(exits) != 1 or _leaves(body[:exits[0]] + body[exits[0] + 1:]):
            lowered = self._lowered(body) if _leaves(body) else None
            if lowered is None or lowered[1] is None:
                self.exit_flags = outer
                return False
        saved, containers = self._trial_state()
        try:
            return self._for_break(node, iterable, exits[0] if lowered is None else lowered,
                                   saved, containers)
        except _NoWhile:
            self._restore(saved)
            return False
        finally:
            self.exit_flags = outer

    def _for_break(self, node: gast.For, steps: range, k: int | tuple, saved: tuple,
                   containers: dict) -> bool:
        """The while statement of ``while_for``; ``k`` the index of the ``if <test>: break``,
        or the lowered body and its flag."""
        frame = self.frame
        before = {n: self.current(v) for n, v in saved[0].items()}
        index = node.target.id
        body, flag = (node.body, None) if isinstance(k, int) else k
        names = [n for n in assigned_names(body) if n not in (index, flag)]
        flags = [f for f in names if f in self.exit_flags]      # a return's (returns.py)
        before.update((f, np.bool_(False)) for f in flags)
        carried = _carried(names, before, body, flags)
        places = {n: self._place(n, before[n]) for n in carried}
        t = Var(Aval((), np.dtype(np.int64), weak=True), hint=index)    # range's: Python's
        done = Var(Aval((), np.dtype(np.bool_)), hint=flag or self.break_flag or "done")
        self.values[t], self.values[done] = int(steps.start), np.bool_(False)
        frame.locals.update(places)
        watch = Watch(dict(containers))
        outer, self.trial_records = self.trial_records, (*self.trial_records, watch)
        try:
            with self.collect() as cond_stmts:
                more = self.compare(gast.Lt() if steps.step > 0 else gast.Gt(), t, steps.stop,
                                    node)
                test = self.call(np.logical_and, [more, self.call(np.logical_not, [done], {},
                                                                  node)], {}, node)
            with self.collect() as body_stmts:
                frame.locals[index] = t
                if flag is None:
                    leave, outs = self._exit_trip(node.body, k, names, before)
                else:
                    frame.locals.update((f, False) for f in (flag, *flags))
                    self.exec_block(body)
                    after = {n: self.current(v) for n, v in frame.locals.items()}
                    _check_after(names, places, before, after, set())
                    leave, outs = after[flag], {n: after[n] for n in carried}
                    if not isinstance(leave, Var):
                        raise _NoWhile()
                following = self.binop(gast.Add(), t, steps.step, node)
        except _NoWhile:
            raise
        except Exception:
            raise _NoWhile() from None
        finally:
            self.trial_records = outer
            changed = put_back(watch)
        stmts = cond_stmts + body_stmts
        if changed or self._trial_changed(saved, stmts) \
                or any(s.prim.effect or loop_of(s) is not None or while_of(s) is not None
                       for s in stmts):
            raise _NoWhile()
        if _counted_only(body_stmts, leave,
                         {t} | {places[n] for n in carried if type(before[n]) is int}):
            raise _NoWhile()        # a break on the index alone (or a counter): unrolled
        for name in names:
            if name not in places and name not in before and name in loaded_outside(frame, node):
                raise _NoWhile()
        _no_alias([outs[n] for n in carried], body_stmts, list(places.values()) + [t, done])
        _no_narrowing([before[n] for n in carried], body_stmts)
        source = f"for {index} in {_source(node.iter)}: ... " + (
            f"if {_source(node.body[k].test)}: break" if flag is None else "break")
        loop, invariants = self._tapes(node, source, test, cond_stmts, body_stmts,
                                       [t, done] + [places[n] for n in carried],
                                       [following, leave] + [outs[n] for n in carried])
        self._restore(saved)
        inits = [Lit(int(steps.start)), Lit(np.bool_(False))] + \
            [v if isinstance(v, Var) else Lit(_numpy(v)) for v in (before[n] for n in carried)]
        params = (index, done.hint) + tuple(carried) + \
            tuple(v.hint or f"k{i}" for i, v in enumerate(invariants))
        results = self.emit(while_primitive(loop, params, len(inits)), [*inits, *invariants],
                            {"loop": loop}, node)
        results[0].hint, results[1].hint = index, done.hint
        if self.break_flag is not None:
            frame.locals[self.break_flag] = results[1]  # (read by a return's branch: returns.py)
        for name, value in zip(carried, results[2:]):
            self.bind_name(name, value)
        if index in loaded_outside(frame, node):    # as Python leaves it: the last trip's
            self.bind_name(index, self.binop(gast.Sub(), results[0], steps.step, node))
        return True

    def _exit_trip(self, body: list, k: int, names: list, before: dict) -> tuple[Var, dict]:
        """One trip of a body that leaves by ``body[k]``, ``if <test>: break``: the test, and
        the carried values after the trip (``_left``)."""
        frame, exit_node = self.frame, body[k]
        self.exec_block(body[:k])
        held, frame.stmt = frame.stmt, exit_node     # (its line: the if's)
        try:
            leave = self.current(self.expr(exit_node.test))
            if isinstance(leave, Var) and leave.hint is None:
                leave.hint = _cond_hint(exit_node.test)
            first = {n: self.current(v) for n, v in frame.locals.items()}
            with self.collect() as rest:
                frame.stmt = held
                self.exec_block(body[k + 1:])
                frame.stmt = exit_node
            after = {n: self.current(v) for n, v in frame.locals.items()}
            return leave, self._left(exit_node, leave, names, before, first, after, rest)
        finally:
            frame.stmt = held

    def _left(self, exit_node: gast.If, leave: Var, names: list, before: dict, first: dict,
              after: dict, rest: list) -> dict:
        """The carried values after a trip: where ``leave`` holds, as the statements before
        the ``break`` left them, else as the rest of the body did (a branch statement)."""
        if not isinstance(leave, Var) or leave.aval.shape != () or leave.aval.dtype != np.bool_:
            raise _NoWhile()
        outs, picks = {}, []
        for name in names:
            a, b = first.get(name, _MISSING), after.get(name, _MISSING)
            if name not in before:
                continue            # bound in the body only (checked not read after)
            if a is _MISSING or b is _MISSING or not traceable(b) or not traceable(a) \
                    or _aval(a)[:2] != _aval(b)[:2] or _aval(b)[:2] != _aval(before[name])[:2]:
                if a is b and not traceable(a):
                    continue
                raise _NoWhile()
            if a is b:
                outs[name] = a
            else:
                picks.append((name, a, b))
        if picks:
            branch, invariants = self._arms(exit_node, [], rest, picks)
            params = tuple(v.hint or f"k{i}" for i, v in enumerate(invariants))
            results = self.emit(branch_primitive(branch, params), [leave, *invariants],
                                {"branch": branch}, exit_node)
            results = results if isinstance(results, tuple) else (results,)
            outs.update((name, r) for (name, _, _), r in zip(picks, results))
        return outs

    def _and_not(self, test: Any, done: Var, node: gast.AST) -> Any:
        """``test and not done``: the condition of a loop a lowered ``break`` leaves."""
        left = self.call(np.logical_not, [done], {}, node)
        if isinstance(test, Var):
            return self.call(np.logical_and, [test, left], {}, node)
        return left if self.truth(test, node) else test

    def _place(self, name: str, value: Any) -> Var:
        """The carried value ``name`` at the start of a trip: a Var of the value's shape and
        dtype (a Python float: a float64 number), whose example is the value before the loop."""
        if isinstance(value, Var):
            place = Var(Aval(value.aval.shape, value.aval.dtype), hint=name)
            self.values.derive(place, value, _numpy)
        else:
            place = Var(Aval.of(np.asarray(value)), hint=name)
            self.values[place] = np.asarray(value)[()] if np.ndim(value) == 0 else value
        return place

    def _tapes(self, node: gast.stmt, source: str, test: Var, cond_stmts: list,
               body_stmts: list, places: list[Var], outs: list) -> tuple[While, list[Var]]:
        """The condition's and the body's tapes over the carried values and one list of
        values read from before the loop (the invariants)."""
        sides, reads = live_sides([(cond_stmts, [test]), (body_stmts, outs)])
        invariants = [v for v in reads if v not in places]
        loc = self.loc(node)
        params = tuple(p.hint for p in places) + \
            tuple(v.hint or f"k{i}" for i, v in enumerate(invariants))
        tapes = []
        for label, (kept, result) in zip(("cond", "body"), sides):
            mapping = {}
            for v in places + invariants:
                mapping[v] = k = Var(v.aval, hint=v.hint)
                self.values.derive(k, v)
            stmts = [substitute_stmt(s, lambda a: mapping.get(a, a)) for s in kept]
            res = tuple(mapping.get(r, r) if isinstance(r, Var) else Lit(_numpy(r))
                        for r in result)
            tapes.append(Tape(name=label, params=params,
                              inputs=[Input(mapping[v], i)
                                      for i, v in enumerate(places + invariants)],
                              stmts=stmts, result=res, loc=loc))
        return While(*tapes, ncarry=len(places), source=source), invariants


def _carried(names: list, before: dict, body: list, flags: list) -> list[str]:
    """The names a loop carries: those the body binds that hold a traced value or a float
    before it, the ``int`` counters it steps (``i += 1``, ``k = k + 2``: a run-time int), and
    the flags of a lowered ``break`` or ``return``."""
    counters = _counters(body)
    return [n for n in names if n in before and (
        traceable(before[n]) or n in flags
        or (type(before[n]) is int and n in counters))]


def _counters(body: list) -> set[str]:
    """Names the body steps from their own value: ``i += k`` or ``i = <expr reading i>``."""
    names = set()
    for n in _own_nodes(body):
        if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            names.add(n.target.id)
        elif isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name):
            name = n.targets[0].id
            if any(isinstance(r, gast.Name) and r.id == name for r in gast.walk(n.value)):
                names.add(name)
    return names


def _check_after(names: list, places: dict, before: dict, env: dict, read_after: set) -> None:
    """After a trip each carried value keeps its shape and dtype, each static value is the
    one it was, and no name bound in the body alone is read after the loop."""
    for name in names:
        if name in places:
            after = env.get(name, _MISSING)
            if not traceable(after) or _aval(after)[:2] != _aval(places[name])[:2]:
                raise _NoWhile()        # a carried value changes shape or dtype
        elif name not in before:
            if name in read_after:
                raise _NoWhile()        # bound in the body only: unbound after 0 trips
        elif env.get(name, _MISSING) is not before[name]:
            raise _NoWhile()            # a static value the body changes


def _counted_only(stmts: list, test: Var, counters: set) -> bool:
    """Is ``test`` made of the loop's index and int counters alone (``while i < n``, ``if t
    == 8: break``)? Then the loop's trips do not depend on data: the unrolled loop decides."""
    if not isinstance(test, Var):
        return True
    made = {o for s in stmts for o in s.outs}
    leaves = {v for s in live(stmts, [test]) for v in s.uses() if v not in made} \
        if test in made else {test}
    return leaves <= counters


def _no_alias(outs: list, stmts: list, places) -> None:
    """A carried array bound to an array from before the loop (``x = b``) would be that array
    after the loop, which an update in place (``x *= 2``) writes, as Python does: unroll."""
    made = {o for s in stmts for o in s.outs} | set(places)
    if any(isinstance(o, Var) and o.aval.ndim and o not in made for o in outs):
        raise _NoWhile()


def _no_narrowing(inits: list, stmts: list) -> None:
    """A carried Python float is carried as a float64 number; numpy makes it float32 (NEP 50)
    where the body adds it to float32 values, so the loop's dtype would depend on the trip
    count: a body with values narrower than float64 and a Python float carried is unrolled."""
    if any(type(v) is float or type(v) is complex for v in inits) and any(
            v.aval.dtype in (np.float32, np.float16, np.complex64)
            for s in stmts for v in (*s.uses(), *s.outs)):
        raise _NoWhile()


def _numpy(value: Any) -> Any:
    """A carried number as numpy's (a Python float carried: numpy's float64)."""
    if type(value) is int:
        return np.int64(value)      # an int counter carried
    return np.float64(value) if type(value) is float else value


def _aval(value: Any) -> tuple:
    aval = value.aval if isinstance(value, Var) else Aval.of(_numpy(value))
    return aval.shape, aval.dtype, aval.weak


def _leaves(body: list, exits: bool = True) -> bool:
    """Does the body leave the loop (``exits``: by ``break`` or ``continue`` too), or write an
    attribute or a global?"""
    for n in _own_nodes(body):
        if isinstance(n, (gast.Return, gast.Yield, gast.YieldFrom, gast.Global,
                          gast.Nonlocal)):
            return True
        if exits and isinstance(n, (gast.Break, gast.Continue)):
            return True
        if isinstance(n, gast.Attribute) and isinstance(n.ctx, (gast.Store, gast.Del)):
            return True
    return False


def _cond_hint(test: gast.expr) -> str:
    """The condition's name: the first name the test reads and ``_cond`` (``x_cond``)."""
    names = [n for n in gast.walk(test) if isinstance(n, gast.Name)
             and isinstance(n.ctx, gast.Load) and n.id not in ("np", "xp")]
    if not names:
        return "cond"
    first = min(names, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return f"{first.id}_cond"
