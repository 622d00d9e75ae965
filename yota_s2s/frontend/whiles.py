"""``while`` on a traced condition that stays a ``while``: the while trial (ir/whiles.py for the
statement).

Where a ``while``'s condition is a traced boolean number (``np.max(np.abs(r)) > 1e-10``), in
straight-line code (not in a ``for`` region's step), the condition and the body are traced
once, from the state before the loop with each name the body binds that holds a traced value
or a float a fresh Var (the value at the start of any trip), each into a tape of its own. The
``while`` becomes a while statement when

- the body does not leave the loop (``break``, ``continue``, ``return``), has no ``else``,
  takes no decision on a traced value at compile time (a guard; an ``if`` that stays a branch
  is no decision), holds no loop, writes no attribute, no array in place and no list or dict
  from before the loop;
- each carried value has the same shape and dtype after a trip as before it; a name holding a
  static value keeps it; a name first bound in the body is not read after the loop.

Otherwise everything is undone and the loop is unrolled on the example, as before (a guard per
trip). In forward mode, ``ys.vmap`` and a module yota-s2s wrote traced again (``branches``
off, or ``_generated``) the loop is unrolled too.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gast
import numpy as np

from ..ir.region import loop_of
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Aval, Input, Lit, Tape, Var
from ..ir.whiles import While, while_of, while_primitive
from ..marks import generated_file
from .branches import _own_nodes, _source
from .region_check import traceable
from .region_lists import Watch, items_of
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

    def while_region(self, node: gast.While) -> bool:
        """Run ``node`` as a while statement if its condition is traced; False (nothing done)
        to unroll it on the example."""
        if self.collector is not None or self.backward_mode or not self.whiles \
                or self.trial_depth or node.orelse or _leaves(node.body):
            return False
        if _generated(self.frame.fn.file):
            return False
        frame = self.frame
        saved = (dict(frame.locals), dict(self.latest), dict(self.views), len(self.loop_notes),
                 set(self.pending_rows))
        containers = {id(v): (v, items_of(v))
                      for v in frame.locals.values() if type(v) in (list, dict)}
        try:
            return self._while(node, saved, containers)
        except _NoWhile:
            self._restore(saved)
            return False

    def _while(self, node: gast.While, saved: tuple, containers: dict) -> bool:
        frame = self.frame
        before = {n: self.current(v) for n, v in saved[0].items()}
        names = assigned_names(node.body)
        carried = [n for n in names if n in before and traceable(before[n])]
        places: dict[str, Var] = {}
        for name in carried:
            places[name] = self._place(name, before[name])
            frame.locals[name] = places[name]
        watch = Watch(dict(containers))
        outer, self.trial_records = self.trial_records, (*self.trial_records, watch)
        try:
            with self.collect() as cond_stmts:
                test = self.current(self.expr(node.test))
            if not isinstance(test, Var) or test.aval.shape != () \
                    or test.aval.dtype != np.bool_:
                raise _NoWhile()
            with self.collect() as body_stmts:
                self.exec_block(node.body)
        except _NoWhile:
            raise
        except Exception:
            raise _NoWhile() from None
        finally:
            self.trial_records = outer
        env = {n: self.current(v) for n, v in frame.locals.items()}
        stmts = cond_stmts + body_stmts
        made = {o for s in stmts for o in s.outs}
        if any(items_of(obj) != items for obj, items in watch.containers.values()) \
                or set(self.pending_rows) != saved[4] \
                or any(self.latest.get(k) is not v for k, v in saved[1].items()) \
                or any(k not in made for k in self.latest if k not in saved[1]) \
                or any(s.prim.effect or loop_of(s) is not None or while_of(s) is not None
                       for s in stmts):
            raise _NoWhile()
        read_after = loaded_outside(frame, node)
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
        outs = [env[n] for n in carried]
        loop, invariants = self._tapes(node, test, cond_stmts, body_stmts,
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

    def _tapes(self, node: gast.While, test: Var, cond_stmts: list, body_stmts: list,
               places: list[Var], outs: list) -> tuple[While, list[Var]]:
        """The condition's and the body's tapes over the carried values and one list of
        values read from before the loop (the invariants)."""
        sides = []
        reads: dict[Var, None] = {}
        for stmts, result in ((cond_stmts, [test]), (body_stmts, outs)):
            kept = live(stmts, [r for r in result if isinstance(r, Var)])
            made = {v for s in kept for v in s.outs}
            for s in kept:
                reads.update((v, None) for v in s.uses() if v not in made)
            reads.update((r, None) for r in result if isinstance(r, Var) and r not in made)
            sides.append((kept, result))
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
        return While(*tapes, ncarry=len(places), source=_source(node.test)), invariants


def _numpy(value: Any) -> Any:
    """A carried number as numpy's (a Python float carried: numpy's float64)."""
    return np.float64(value) if type(value) is float else value


def _aval(value: Any) -> tuple:
    aval = value.aval if isinstance(value, Var) else Aval.of(_numpy(value))
    return aval.shape, aval.dtype, aval.weak


def _leaves(body: list) -> bool:
    """Does the body leave the loop, or write an attribute or a global?"""
    for n in _own_nodes(body):
        if isinstance(n, (gast.Return, gast.Yield, gast.YieldFrom, gast.Global,
                          gast.Nonlocal, gast.Break, gast.Continue)):
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
