"""A trial that passed, made into the loop statement (mixed into ``Evaluator``).

The trial's step becomes the body tape of a ``Loop`` (ir/region.py): its inputs are the step
index, the carried values, the stacks of the lists it appends to (``hs.append(h)`` becomes
``hs_out[t] = h``) and, as inputs of their own, the values it reads from before the loop (the
invariants); its statements are those the carried values and rows need. The trial's own
statements are undone and the loop statement is emitted in their place; the names the step
assigned are then bound to the loop's results, and each list gets the rows of its stack.
"""
from __future__ import annotations

import operator
from typing import Any

import gast

from ..errors import YotaError
from ..ir.region import EMPTY, Loop, loop_primitive
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from ..rules.indexing import setitem
from .abstract import ghost
from .region_check import error_reason
from .region_lists import LastRow, list_name
from .region_syntax import loaded_outside, loop_source


class RegionTapeMixin:
    """The loop statement from a trial's step."""

    def make_region(self, node: gast.For, iterable: Any, length: int, index: Var,
                    carried: dict, saved: tuple, containers: dict, body: list, outs: list,
                    updated: set, appended: list) -> bool | str:
        """Emit the loop statement of a step that passed its checks (``check_step``'s outs,
        updated and appended) and bind what it leaves; True, or why a later step fails."""
        carried_names = [name for name, _ in outs]
        c_in = [carried[n][0] for n in carried_names]
        unchanged = {carried[n][0]: carried[n][1] for n in carried if n not in carried_names}
        outer, mapping = self.step_invariants(body, {index, *c_in}, unchanged)
        stmts = [substitute_stmt(s, lambda a: mapping.get(a, a)) for s in body]
        stmts = live(stmts, [v for _, v in outs] + [v for _, v in appended])
        stacks_in, stacks_out = self.step_stacks(node, length, index, appended, stmts)
        used = {v for s in stmts for v in s.uses()}
        invariants = [(mapping[v], o) for v, o in outer.items() if mapping[v] in used]
        loop, params = self.step_loop(node, length, index, carried_names, c_in,
                                      (stacks_in, stacks_out), invariants, outs, stmts)
        operands = [_operand(carried[n][1]) for n in carried_names] + \
            [_operand(o) for _, o in invariants]
        prim = loop_primitive(loop, params[1:])
        self.undo_trial(saved, containers, notes=False)
        try:
            results = self.emit(prim, operands, {"loop": loop}, node)
        except YotaError as e:          # a later step fails where the first did not
            self.undo_trial(saved, containers)
            return f"a step fails: {error_reason(e)}"
        results = results if isinstance(results, tuple) else (results,)
        self.bind_region_results(node, carried, outs, updated, appended, results, stacks_in,
                                 length)
        targets = {n.id for n in gast.walk(node.target) if isinstance(n, gast.Name)}
        if targets & loaded_outside(self.frame, node):
            self.assign(node.target, self.step_item(iterable, length - 1, node.iter))
        loc = self.loc(node)
        carries = [*map(str, carried_names), *(s.hint for s in stacks_in)]
        self.loop_notes.append(f"{loc.short + ' ' if loc else ''}region: {loop.source}, "
                               f"{length} steps, carries {', '.join(carries)}")
        return True

    def step_invariants(self, body: list, own: set, unchanged: dict) -> tuple[dict, dict]:
        """What the body reads from outside the step (``own``: the index and the carried
        values): each such value -> the value before the loop (``outer``), and -> the step's
        input standing for it (``mapping``: a fresh Var, or the carried name's own Var where
        the step leaves it ``unchanged``)."""
        defined = own | {v for s in body for v in s.outs}
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
        return outer, mapping

    def step_stacks(self, node: gast.For, length: int, index: Var, appended: list,
                    stmts: list) -> tuple[list, list]:
        """A stack for each list the step appends to, as the step's input and output: the
        append becomes ``stack[t] = row``, added to ``stmts``."""
        stacks_in, stacks_out = [], []
        for obj, v in appended:
            listed = list_name(self.frame, obj)
            aval = Aval((length, *v.aval.shape), v.aval.dtype)
            s_in, s_out = Var(aval, hint=listed), Var(aval, hint=listed)
            self.values[s_in] = self.values[s_out] = ghost(aval.shape, aval.dtype)
            stmts.append(Stmt((s_out,), self.rules.lookup(setitem), (s_in, index, v), (),
                              self.loc(node), None))
            stacks_in.append(s_in)
            stacks_out.append(s_out)
        return stacks_in, stacks_out

    def step_loop(self, node: gast.For, length: int, index: Var, carried_names: list,
                  c_in: list, stacks: tuple[list, list], invariants: list, outs: list,
                  stmts: list) -> tuple[Loop, tuple]:
        """The ``Loop`` of the step's tape, and the tape's parameter names (the index, the
        carried names, the stacks, the invariants)."""
        stacks_in, stacks_out = stacks
        hint = index.hint or "t"
        params = (hint, *(n.hint if isinstance(n, LastRow) else n for n in carried_names),
                  *(v.hint for v in stacks_in),
                  *(k.hint or f"k{i}" for i, (k, _) in enumerate(invariants)))
        c_all = c_in + stacks_in
        inputs = [Input(index, 0)] + [Input(c, i + 1) for i, c in enumerate(c_all)] + \
            [Input(k, i + 1 + len(c_all)) for i, (k, _) in enumerate(invariants)]
        tape = Tape(name="step", params=params, inputs=inputs, stmts=stmts,
                    result=tuple(v for _, v in outs) + tuple(stacks_out), loc=self.loc(node),
                    owned=frozenset(stacks_in))
        loop = Loop(tape, length, len(c_all), source=loop_source(node),
                    fresh=(False,) * len(c_in) + (EMPTY,) * len(stacks_in))
        return loop, params

    def bind_region_results(self, node: gast.For, carried: dict, outs: list, updated: set,
                            appended: list, results: tuple, stacks_in: list,
                            length: int) -> None:
        """After the loop: each list gets its stack's rows, each carried name its result (an
        array updated in place: its latest value; ``hs.append(h)``: ``h`` is ``hs[-1]``)."""
        last_rows = {}
        for (obj, v), stack, s_in in zip(appended, results[len(outs):], stacks_in):
            stack.hint = stack.hint or s_in.hint
            rows = self.stack_row_views(stack, length, node)
            self.stack_rows.update((row, (stack, i)) for i, row in enumerate(rows))
            if isinstance(obj, dict):           # hs[t] = h: the items under their keys
                first = self.region_keys[id(obj)]
                obj.update((first + i, row) for i, row in enumerate(rows))
            else:
                obj.extend(rows)
            last_rows[v] = rows[-1]
        for (name, out), value in zip(outs, results):
            if isinstance(name, LastRow):
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


def _operand(value: Any) -> Any:
    """A value from before the loop as the loop statement's operand."""
    return value if isinstance(value, Var) else Lit(value)
