"""The derivative of a loop region (ir/region.py): a region again, running backwards.

For ``c = loop(init, k)`` with body ``c_out = step(t, c_in, k)``::

    forward:  the same loop, which also saves each value the backward step reads into a
              stack of its own, ``H[t] = h`` (a carried array that starts as zeros, made by
              the loop, written in place: one T x shape array per saved quantity)
    backward: for t in reversed(range(T)):
                  h = H[t]                          # what the step's adjoint reads
                  dc_in, dk += adjoint of the step at (dc_out)
              carried: the cotangents of the carried values (starting as the gradients of the
              region's results) and one accumulator per invariant that needs a gradient

The step's adjoint is the ordinary reverse sweep (sweep.py) over the body's statements,
seeded with the carried cotangents; a region inside the body is differentiated the same way
(its saved stacks become values of the outer step, saved in turn). The backward region is an
ordinary region, so the plain module can be differentiated again.

``sweep_region`` runs the steps in order (``_Region``'s methods): which values need a
gradient (``activity``), the step's adjoint (``sweep_body``, with the carried cotangents and
the invariants' accumulators), an accumulator loop where it is one (``accumulator_loop``:
nothing saved), what the backward step reads and whether each is saved or made again
(``save_or_remake``, asking a ``SavePolicy`` of policies.py), the stacks (``stacks``), the
forward region that saves (``forward_region``), the backward region (``initial_cotangents``,
``backward_region``) and the gradients it gives the enclosing sweep (``accumulate``). The
module registers ``sweep_region`` as the engine's structural rule for loops (at its end), as
JAX's control_flow/loops.py registers scan's rules.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..frontend.abstract import ghost
from ..ir.region import EMPTY, Loop, loop_of, loop_primitive
from ..ir.tape import ACCUMULATE, Aval, Input, Lit, Stmt, Tape, Var
from ..ir.values import to_tree
from ..rules.indexing import index_add, setitem_
from .policies import RemakeCheap, SavePolicy, Step, save_or_remake, stack_name
from .sweep import STRUCTURAL_RULES, Sweep, active_from

SAVED = "saved by the forward loop for the backward loop"
POLICY: SavePolicy = RemakeCheap()      # the policy sweep_region asks


# -- the steps --------------------------------------------------------------------------------

@dataclass
class _Plan:
    """What the backward step reads saved (``reads``, in order) and the forward statements it
    runs again: ``prologue`` (from the index and the invariants, and the saved values read
    back), ``remat`` (from saved values, after them)."""
    reads: dict[Var, None]
    prologue: list[Stmt]
    remat: list[Stmt]


@dataclass
class _Stacks:
    """The stacks of saved values: per stack its forward input and output (``ins``, ``outs``),
    the backward loop's operand (``args``) and name; the forward step's statements that write
    them before (``first``) and after (``last``) the step's own, and the backward step's that
    read them back (``restore``)."""
    ins: list[Var] = field(default_factory=list)
    outs: list[Var] = field(default_factory=list)
    args: list[Var] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    first: list[Stmt] = field(default_factory=list)
    last: list[Stmt] = field(default_factory=list)
    restore: list[Stmt] = field(default_factory=list)
    shifted: dict = field(default_factory=dict)     # (offset, list) -> the index + offset


def sweep_region(sweep: Sweep, stmt: Stmt) -> None:
    """The structural rule of a loop region: sweep ``stmt`` (a ``loop`` statement of the tape
    ``sweep`` runs over), replacing it in ``sweep.home`` by the forward region that saves what
    the backward one reads, and emitting the backward region."""
    region = _Region(sweep, stmt)
    if not region.activity():
        return
    region.sweep_body()
    if region.accumulator_loop():
        return
    plan = region.save_or_remake(POLICY)
    stacks = region.stacks(plan)
    saved = region.forward_region(stacks)
    dinit, held = region.initial_cotangents()
    with region.ev.at(stmt.loc, "the loop's backward: its step's adjoint, reversed"):
        outs = region.backward_region(plan, stacks, saved, dinit, held)
        region.accumulate(outs, dinit, held)


class _Region:
    """The state of one region's sweep, step by step (see ``sweep_region``)."""

    def __init__(self, sweep: Sweep, stmt: Stmt):
        self.sweep, self.stmt, self.ev, self.rules = sweep, stmt, sweep.ev, sweep.rules
        self.loop: Loop = loop_of(stmt)
        self.dys = [sweep.adjoint(o) for o in stmt.outs]    # the results' gradients
        self.outer = dict(zip(self.loop.operand_vars(), stmt.args))

    def activity(self) -> bool:
        """The values of the step that need a gradient (``act``): those computed from an
        operand that needs one, or from a carried value that needs one in any step (a fixed
        point). False where neither a carried value nor an invariant needs one."""
        loop, body = self.loop, self.loop.body
        seeds = {v for v, a in self.outer.items() if isinstance(a, Var) and a in self.sweep.active}
        while True:                     # a carried value is active once any step makes it so
            act = active_from(body.stmts, seeds, self.rules)
            more = {c for c, o in zip(loop.carried, body.result) if o in act} - seeds
            if not more:
                break
            seeds |= more
        self.seeds, self.act = seeds, act
        return any(c in seeds for c in loop.carried) or any(k in seeds for k in loop.invariants)

    def sweep_body(self) -> None:
        """The step's adjoint (``back``): the ordinary sweep over the body, seeded with the
        cotangents of the carried values (``cot``: the backward loop carries them), then the
        cotangents it hands on (``cot_out``) and the invariants' gradients, added up in
        accumulators (``acc_in`` -> ``acc_out``)."""
        ev, loop = self.ev, self.loop
        self.sub = sub = Sweep(ev, loop.body, self.act, primals=self.sweep.primals,
                               in_region=True)
        sub.find_cancellations()    # terms that cancel within one step (RuleSet.cancels)
        self.cot: dict[Var, Var] = {}       # carried c -> its cotangent at the end of a step
        for c, o in zip(loop.carried, loop.body.result):
            if c in self.seeds:
                self.cot[c] = Var(c.aval, grad_of=c)
                ev.values[self.cot[c]] = _zeros(c.aval)
                if isinstance(o, Var) and o in self.act:
                    sub.full[o] = self.cot[c]
        with ev.collect() as self.back:
            sub.sweep_all(sub.home)         # (a region in the body keeps its place)
            with ev.at(self.stmt.loc):
                self.cot_out = self._cotangents_out()
                self.acc_in, self.acc_out = self._accumulators()

    def _cotangents_out(self) -> dict[Var, Any]:
        """The cotangent of each carried value as the step begins: what the step hands on."""
        sub, ev = self.sub, self.ev
        cot_out: dict[Var, Any] = {}
        for c in self.cot:
            with ev.at(rule="the cotangent of the value carried into the step"):
                g = sub.adjoint(c)
                g = sub.fit(g, c.aval) if g is not None else sub.emit(
                    self.rules.lookup(np.zeros), [Lit(c.aval.shape)], _dtype(c.aval),
                    grad_of=c)
            cot_out[c] = g
        return cot_out

    def _accumulators(self) -> tuple[dict[Var, Var], dict[Var, Any]]:
        """An accumulator per invariant with a gradient in the step: its value as the step
        begins and ends (the contributions of its rows, ``da[key] += dy``, then the rest)."""
        sub, ev, rules = self.sub, self.ev, self.rules
        acc_in: dict[Var, Var] = {}
        acc_out: dict[Var, Any] = {}
        loc = ev.loc_override       # a sum's line: that of the last row added before it
        for k in self.loop.invariants:
            parts, total = sub.scatter.pop(k, []), sub.full.pop(k, None)
            if not parts and total is None:
                continue
            acc_in[k] = buf = Var(k.aval, grad_of=k)
            ev.values[buf] = _zeros(k.aval)
            for key, dy, s in parts:
                loc = s.loc
                with ev.at(loc, "getitem a: da[key] += dy"):
                    buf = sub.emit(rules.lookup(index_add), [buf, key, sub.fit(dy, s.out.aval)],
                                   {}, grad_of=k)
            if total is not None:
                with ev.at(loc, ACCUMULATE):
                    buf = sub.emit(rules.lookup(operator.add), [buf, sub.fit(total, k.aval)],
                                   {}, grad_of=k)
            acc_out[k] = buf
        return acc_in, acc_out

    def save_or_remake(self, policy: SavePolicy) -> _Plan:
        """What the backward step reads of the forward step, each value saved or made again
        as ``policy`` says; a value made again reads values saved in its stead."""
        fwd_stmts = list(self.sub.home)
        reads = self._reads()
        prologue, remat = save_or_remake(policy, reads, fwd_stmts, Step(self.loop, fwd_stmts),
                                         self.made_fwd)
        return _Plan(reads, prologue, remat)

    def _reads(self) -> dict[Var, None]:
        """The values of the forward step (or carried into it) that the backward step reads,
        in the order it reads them."""
        self.made_fwd = {v for s in self.sub.home for v in s.outs} | set(self.loop.carried)
        self.made_back = {v for s in self.back for v in s.outs}
        reads: dict[Var, None] = {}
        for v in [v for s in self.back for v in s.uses()] + \
                [g for g in [*self.cot_out.values(), *self.acc_out.values()] if isinstance(g, Var)]:
            if v in self.made_fwd and v not in self.made_back:
                reads[v] = None
        return reads

    def stacks(self, plan: _Plan) -> _Stacks:
        """One stack per saved value, written by the forward step and read back by the backward
        one. A carried value read both before and after the step (the state h and the new
        state) takes one stack of length + 1 rows, as a handwritten BPTT keeps its states: the
        step at t reads its state at row t and writes the next at t + 1 (the other way round
        in a loop that counts down)."""
        loop, reads, hint_of = self.loop, plan.reads, self.loop.body.hint_of
        groups: list[tuple[str, int, list]] = []      # (name, rows, [(var, row offset, first)])
        for c, o in zip(loop.carried, loop.body.result):
            if c in reads and isinstance(o, Var) and o in reads and o not in loop.carried:
                ahead = (0, 1) if not loop.reverse else (1, 0)
                groups.append((stack_name(hint_of(c) or "v"), loop.length + 1,
                               [(c, ahead[0], True), (o, ahead[1], False)]))
                del reads[c], reads[o]
        for v in reads:
            suffix = "_prev" if v in loop.carried else ""
            groups.append((stack_name(hint_of(v) or "v") + suffix, loop.length,
                           [(v, 0, v in loop.carried)]))
        stacks = _Stacks()
        for base, rows, saves in groups:
            self._stack(stacks, base, rows, saves)
        return stacks

    def _stack(self, stacks: _Stacks, base: str, rows: int, saves: list) -> None:
        """The stack ``base`` of ``rows`` rows: each of ``saves`` written into its row by the
        forward step, before or after the step's own statements, and read back."""
        ev, rules, stmt = self.ev, self.rules, self.stmt
        v0 = saves[0][0]
        aval = Aval((rows, *v0.aval.shape), v0.aval.dtype)
        s_in, s_b = Var(aval, hint=base), Var(aval, hint=base)
        ev.values[s_in] = ev.values[s_b] = ghost(aval.shape, aval.dtype)
        current = s_in
        for v, offset, before in saves:
            into = stacks.first if before else stacks.last
            at = self._row(stacks, offset, into, None)
            s_out = Var(aval, hint=base)
            ev.values[s_out] = ev.values[s_in]
            into.append(Stmt((s_out,), rules.lookup(setitem_), (current, at, v), (), stmt.loc,
                             None))
            current = s_out
            at = self._row(stacks, offset, stacks.restore, SAVED)
            python = {"f": float, "c": complex}.get(v.aval.dtype.kind) if v.aval.weak else None
            read = Var(Aval((), v.aval.dtype)) if python else v
            ev.values.derive(read, v, python and aval.dtype.type)
            stacks.restore.append(Stmt((read,), rules.lookup(operator.getitem), (s_b, at), (),
                                       stmt.loc, SAVED))
            if python:          # a Python float saved in a float64 stack: a Python float again
                stacks.restore.append(Stmt((v,), rules.lookup(python), (read,), (), stmt.loc,
                                           SAVED))
        stacks.ins.append(s_in)
        stacks.outs.append(current)
        stacks.args.append(s_b)
        stacks.names.append(base)

    def _row(self, stacks: _Stacks, offset: int, into: list, rule: str | None) -> Any:
        """The row of a stack a step writes or reads: the index, plus ``offset`` (a statement
        of ``into``, made once per list)."""
        index = self.loop.index
        if not offset:
            return index
        key = (offset, id(into))
        if key not in stacks.shifted:
            stacks.shifted[key] = Var(index.aval)
            self.ev.values[stacks.shifted[key]] = offset
            into.append(Stmt((stacks.shifted[key],), self.rules.lookup(operator.add),
                             (index, Lit(offset)), (), self.stmt.loc, rule))
        return stacks.shifted[key]

    def forward_region(self, stacks: _Stacks) -> tuple[Var, ...]:
        """The forward region, which also writes the stacks, in the place of the region in
        ``sweep.home``; returns the stacks it makes (the backward region's operands)."""
        loop, body, stmt, n = self.loop, self.loop.body, self.stmt, self.loop.ncarry
        names = tuple(body.params)
        fwd_inputs = [Input(loop.index, 0)] + \
            [Input(c, i + 1) for i, c in enumerate(loop.carried)] + \
            [Input(s, n + 1 + i) for i, s in enumerate(stacks.ins)] + \
            [Input(k, n + 1 + len(stacks.ins) + i) for i, k in enumerate(loop.invariants)]
        fwd_params = names[:1 + n] + tuple(stacks.names) + names[1 + n:]
        fwd_stmts = stacks.first + list(self.sub.home) + stacks.last
        fwd_body = body.copy(inputs=fwd_inputs, stmts=fwd_stmts, params=fwd_params,
                             result=tuple(body.result) + tuple(stacks.outs),
                             owned=body.owned | frozenset(stacks.ins))
        fwd_loop = Loop(fwd_body, loop.length, n + len(stacks.ins),
                        fresh=tuple(loop.fresh) + (EMPTY,) * len(stacks.ins),
                        reverse=loop.reverse, source=loop.source)
        fwd_prim = loop_primitive(fwd_loop, fwd_params[1:])
        saved = tuple(Var(s.aval, hint=s.hint) for s in stacks.ins)
        fwd = Stmt(tuple(stmt.outs) + saved, fwd_prim, stmt.args, (("loop", fwd_loop),),
                   stmt.loc, stmt.rule)
        for v in saved:            # (nothing decides on a saved value: its example is zeros)
            self.ev.values[v] = ghost(v.aval.shape, v.aval.dtype)
        home = self.sweep.home
        home[next(i for i, s in enumerate(home) if s is stmt)] = fwd
        return saved

    def initial_cotangents(self) -> tuple[dict[Var, Any], dict[Var, Var]]:
        """The carried cotangents as the backward loop starts (the gradients of the region's
        results, None for zeros made by the loop), and those the step passes on unchanged
        (that of a running sum: ``held``, an invariant of the backward loop, out of ``cot``
        and ``cot_out``)."""
        loop, cot, cot_out = self.loop, self.cot, self.cot_out
        steady = [c for c in cot if cot_out[c] is cot[c]]
        dinit = {c: self.dys[loop.carried.index(c)] for c in cot}
        for c in steady:
            if dinit[c] is None:
                dinit[c] = self.sub.emit(self.rules.lookup(np.zeros), [Lit(c.aval.shape)],
                                         _dtype(c.aval), grad_of=c)
            del cot_out[c]
        held = {c: cot.pop(c) for c in steady}
        return dinit, held

    def backward_region(self, plan: _Plan, stacks: _Stacks, saved: tuple[Var, ...],
                        dinit: dict, held: dict) -> tuple[Var, ...]:
        """The backward region, emitted: it runs the step's adjoint (after the statements of
        ``plan`` that make again what it reads) for t in reversed order, carrying the
        cotangents and the accumulators, from ``dinit`` (``initial_cotangents``). Returns
        its results."""
        ev, loop, stmt = self.ev, self.loop, self.stmt
        prologue = plan.prologue + stacks.restore + plan.remat
        read_back = {u for s in prologue + self.back for u in s.uses()} | \
            {g for g in [*self.cot_out.values(), *self.acc_out.values()] if isinstance(g, Var)}
        invariants = [k for k in loop.invariants if k in read_back]
        cot, acc_in = self.cot, self.acc_in
        cvars = list(cot.values()) + list(acc_in.values())
        fresh = tuple(dinit[c] is None for c in cot) + (True,) * len(acc_in)
        b_body, b_params = self._backward_step(prologue, cvars, held, invariants, stacks)
        b_body.owned = frozenset(v for v, f in zip(cvars, fresh) if f)
        b_loop = Loop(b_body, loop.length, len(cvars), fresh=fresh, reverse=not loop.reverse,
                      source=loop.source)
        operands = [to_tree(dinit[c]) for c in cot if dinit[c] is not None]
        operands += [to_tree(dinit[c]) for c in held] + [self.outer[k] for k in invariants] + \
            list(saved)
        b_prim = loop_primitive(b_loop, b_params[1:])
        # the gradients' examples are zeros: nothing decides on a gradient's value, and running
        # the loop here would make compile time grow with the trip count
        primal = [self.outer.get(c) for c in cot] + [self.outer[k] for k in acc_in]
        outs = tuple(Var(Aval.of(_zeros_like(ev.values[v])),
                         grad_of=p if isinstance(p, Var) else None) for v, p in zip(cvars, primal))
        for v, o in zip(cvars, outs):
            ev.values[o] = _zeros_like(ev.values[v])
        ev.stmts.append(Stmt(outs, b_prim, tuple(operands), (("loop", b_loop),), stmt.loc,
                             ev.rule_text))
        return outs

    def _backward_step(self, prologue: list[Stmt], cvars: list[Var], held: dict,
                       invariants: list[Var], stacks: _Stacks) -> tuple[Tape, tuple]:
        """The backward loop's step, ``step_grad``, and its parameters' names: the index, the
        carried cotangents (``dh``) and accumulators (``dW``), the held cotangents, the
        invariants it reads and the stacks."""
        loop, sweep, n = self.loop, self.sweep, self.loop.ncarry
        body, cot, acc_in = loop.body, self.cot, self.acc_in
        names = tuple(body.params)
        b_inputs = [Input(loop.index, 0)] + [Input(v, i + 1) for i, v in enumerate(cvars)] + \
            [Input(k, 1 + len(cvars) + i)
             for i, k in enumerate(list(held.values()) + invariants + stacks.args)]
        pname = {k: p for k, p in zip(loop.invariants, names[1 + n:])}
        cname = {c: p for c, p in zip(loop.carried, names[1:1 + n])}
        b_params = (names[0],) + tuple("d" + cname[c] for c in cot) + \
            tuple("d" + pname[k] for k in acc_in) + tuple("d" + cname[c] for c in held) + \
            tuple(pname[k] for k in invariants) + tuple(s.hint for s in stacks.args)
        b_result = tuple(to_tree(self.cot_out[c]) for c in cot) + \
            tuple(to_tree(self.acc_out[k]) for k in acc_in)
        primals = {**body.primals, **{v: sweep.primals[v] for v in self.made_back
                                      if v in sweep.primals}, **_carried_primals(loop, cot)}
        b_body = Tape(name="step_grad", params=b_params, inputs=b_inputs,
                      stmts=prologue + self.back, result=b_result, loc=body.loc, primals=primals)
        return b_body, b_params

    def accumulate(self, outs: tuple[Var, ...], dinit: dict, held: dict) -> None:
        """The backward region's results into the enclosing sweep: the gradients of the carried
        values' initial values and of the invariants."""
        sweep, outer, cot = self.sweep, self.outer, self.cot
        for c, g in zip(cot, outs[:len(cot)]):
            init = outer.get(c)
            if isinstance(init, Var) and init in sweep.active:
                sweep.accumulate(init, g)
        for c in held:
            init = outer.get(c)
            if isinstance(init, Var) and init in sweep.active:
                sweep.accumulate(init, sweep.fit(dinit[c], init.aval))
        for k, g in zip(self.acc_in, outs[len(cot):]):
            if outer[k] in sweep.active:
                sweep.accumulate(outer[k], sweep.fit(g, outer[k].aval))

    def accumulator_loop(self) -> bool:
        """An *accumulator loop*: every carried value that needs a gradient is a running sum
        (``s = s + e``, ``e`` reading no carried value that needs one), so its cotangent is the
        same in every step (``cot_out[c] is cot[c]``) and each step's adjoint is linear in it.
        Then nothing is saved and no loop runs backwards: each step's adjoint runs right after
        the step, in the same loop, and the invariants' gradients are sums the loop carries::

            for i in range(n):
                t = x[(i + 1) % n]
                t2 = t * t
                s = s + x[i] * t2
                dx[(i + 1) % n] += x[i] * 2.0 * t       # the adjoint, at ds = 1.0 (folded)
                dx[i] += t2

        The sums' cotangents are known before the loop where they are constants (``s`` is the
        result: 1.0); else, for one scalar sum (``loss = s ** 2`` after the loop), the loop adds
        up the adjoint at ``ds = 1.0`` and the gradients are scaled once after it
        (``dx = ds * dx_part1``). Not for several sums whose cotangents come after the loop (the
        two loops run then), nor for a step with a region of its own, nor for a region inside
        another's step (the enclosing step's adjoint would read the sums: a stack of them, one
        gradient of every invariant per step). Replaces the region with the fused one and
        returns True; False where the loop is not one."""
        sweep, stmt, sub, loop, ev, rules = (self.sweep, self.stmt, self.sub, self.loop,
                                             self.ev, self.rules)
        body, back, cot, cot_out = loop.body, self.back, self.cot, self.cot_out
        acc_in, acc_out, outer = self.acc_in, self.acc_out, self.outer
        if sweep.in_region or not cot or any(cot_out[c] is not cot[c] for c in cot) \
                or any(loop_of(s) is not None or s.prim.inplace for s in sub.home):
            return False
        dinit = {c: self.dys[loop.carried.index(c)] for c in cot}
        if any(d is None for d in dinit.values()):
            return False
        constant = not any(isinstance(d, Var) for d in dinit.values())
        if not constant and (len(cot) != 1 or next(iter(cot)).aval.shape != ()):
            return False
        # the step, then its adjoint; the sums' cotangents are invariants of numbers (folded)
        n, names = loop.ncarry, tuple(body.params)
        pname = dict(zip(loop.invariants, names[1 + n:]))
        cname = dict(zip(loop.carried, names[1:1 + n]))
        accs = list(acc_in)
        seeds = [to_tree(d) if constant else Lit(1.0) for d in dinit.values()]
        carried = loop.carried + [acc_in[k] for k in accs]
        inputs = [Input(loop.index, 0)] + [Input(v, i + 1) for i, v in enumerate(carried)] + \
            [Input(v, 1 + len(carried) + i)
             for i, v in enumerate(loop.invariants + list(cot.values()))]
        params = names[:1 + n] + tuple("d" + pname[k] for k in accs) + names[1 + n:] + \
            tuple("d" + cname[c] for c in cot)
        made_back = {v for s in back for v in s.outs}
        fused_body = body.copy(inputs=inputs, stmts=list(sub.home) + back, params=params,
                               result=tuple(body.result) + tuple(to_tree(acc_out[k]) for k in accs),
                               owned=body.owned | frozenset(acc_in[k] for k in accs),
                               primals={**body.primals, **{v: sweep.primals[v] for v in made_back
                                                           if v in sweep.primals}})
        fused = Loop(fused_body, loop.length, len(carried),
                     fresh=tuple(loop.fresh) + (True,) * len(accs), reverse=loop.reverse,
                     source=loop.source)
        grads = tuple(Var(k.aval, grad_of=outer[k] if isinstance(outer[k], Var) else None)
                      for k in accs)
        for g, k in zip(grads, accs):
            ev.values[g] = _zeros(k.aval)
        where = next(i for i, s in enumerate(sweep.home) if s is stmt)
        sweep.home[where] = Stmt(tuple(stmt.outs) + grads, loop_primitive(fused, params[1:]),
                                 tuple(stmt.args) + tuple(seeds), (("loop", fused),), stmt.loc,
                                 stmt.rule)
        with ev.at(stmt.loc, "a running sum's first value: the sum's gradient"):
            for c, d in dinit.items():
                init = outer.get(c)
                if isinstance(init, Var) and init in sweep.active:
                    sweep.accumulate(init, sweep.fit(d, init.aval))
            (ds,) = dinit.values() if not constant else (None,)
            for k, g in zip(accs, grads):
                if outer[k] in sweep.active:
                    if ds is not None:
                        with ev.at(rule="the loop's adjoint at ds = 1.0, scaled by ds"):
                            g = sweep.emit(rules.lookup(operator.mul), [ds, g], {},
                                           grad_of=outer[k])
                    sweep.accumulate(outer[k], sweep.fit(g, outer[k].aval))
        return True


def _carried_primals(loop: Loop, cot: dict[Var, Var]) -> dict[Var, Var]:
    """A carried cotangent, as a step begins, is the gradient of the value the forward step
    carried out (``dh`` of the new ``h``): named so, a step's ``dh = dh + ...`` reads as one
    running sum (ir/names.py)."""
    return {cot[c]: o for c, o in zip(loop.carried, loop.body.result)
            if c in cot and isinstance(o, Var)}


def _zeros_like(value: Any) -> Any:
    return ghost(value.shape, value.dtype) if isinstance(value, np.ndarray) else type(value)(0)


def _zeros(aval: Aval) -> Any:
    """A cotangent's example: zeros of ``aval`` that take no memory."""
    return ghost(aval.shape, aval.dtype)


def _dtype(aval: Aval) -> dict:
    return {} if aval.dtype == np.float64 else {"dtype": aval.dtype}


# the loop region's structural rule: the engine (sweep.py) sweeps a "loop" statement with it
STRUCTURAL_RULES["loop"] = sweep_region
