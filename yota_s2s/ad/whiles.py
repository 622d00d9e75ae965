"""The derivative of a while statement (ir/whiles.py): the forward loop records, and an
``unwind`` runs its trips again in reverse.

For ``c = while(c0, k)`` with body ``c' = step(c, k)``::

    forward:   the same loop, which also counts its trips and stacks each value the backward
               step reads: a carried value as the trip starts (``X[t] = x``), a value of the
               trip (a residual) as it ends (``Y1[t] = y1``, ``ERR_COND[t] = err_cond``)
    backward:  dc = dc_final; dk = 0
               for t in reversed(range(trips)):
                   x = X[t]; y1 = Y1[t]; err_cond = ERR_COND[t]
                   dc, dk += adjoint of the step at (dc)

The step's adjoint is the ordinary reverse sweep (sweep.py) over the body, seeded with the
carried cotangents. Each value of the trip it reads is saved or made again as the loop
regions' policy says (policies.py ``save_or_remake``, ``POLICY`` of regions.py): a branch's
condition is read back, not computed again. A body holding a while of its own (whose stacks
grow: no stack of fixed rows holds them) saves the carried values only, and the step makes
the trip's values again from them. A carried value that is not a float has no cotangent; an
invariant that needs a gradient has an accumulator. The module registers ``sweep_while`` as
the engine's structural rule for whiles.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..frontend.abstract import ghost
from ..ir.branch import branch_of
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from ..ir.whiles import Unwind, carried_sources, unwind_primitive, while_of, while_primitive
from .branches import _gradient, made_again
from .policies import Step, Trip, save_or_remake, stack_name
from .regions import POLICY
from .sweep import STRUCTURAL_RULES, Sweep, active_from

RULE = "the while loop's backward: the body's adjoint, trip by trip in reverse"


def sweep_while(sweep: Sweep, stmt: Stmt) -> None:
    """The structural rule of a while statement: the recording loop in its place, and the
    unwind whose results are the gradients of the operands that need one."""
    loop = while_of(stmt)
    n = loop.ncarry
    inits, invariants = stmt.args[:n], stmt.args[n:]
    ins = [i.var for i in loop.body.inputs]
    wanted = [j for j, k in enumerate(invariants)
              if isinstance(k, Var) and k in sweep.active and k.aval.is_float]
    dys = {i: sweep.adjoint(stmt.outs[i]) for i in range(n) if ins[i].aval.is_float}
    active = _active_carried(sweep, loop, inits, wanted)
    # the carried floats with a cotangent: those whose results have one, and their sources
    floats = carried_sources(loop, [i for i, dy in dys.items() if dy is not None
                                    and i in active], active.__contains__)
    targets = [i for i in floats if isinstance(inits[i], Var) and inits[i] in sweep.active]
    if all(dy is None for dy in dys.values()) or not (wanted or targets):
        return
    ev = sweep.ev
    with ev.at(stmt.loc, RULE):
        plan = _step(sweep, loop, floats, wanted)
        trips, stacks = _record(sweep, stmt, plan)
        starts = [sweep.fit(dys[i], ins[i].aval) if dys[i] is not None else
                  _zeros(sweep, ins[i].aval) for i in floats]
        starts += [_zeros(sweep, ins[n + j].aval) for j in wanted]
        starts = [s if isinstance(s, (Var, Lit)) else Lit(s) for s in starts]
        unwind = Unwind(plan.step, len(stacks), len(invariants), len(floats), loop.source)
        names = tuple(plan.step.params)
        results = sweep.emit(unwind_primitive(unwind, names, len(starts)),
                             [trips, *stacks, *invariants, *starts], {"unwind": unwind})
    results = results if isinstance(results, tuple) else (results,)
    for i, g in zip(floats, results):       # (named after the carried value: dx)
        g.grad_of = stmt.outs[i]
    for i, g in zip(floats, results):
        if i in targets:
            sweep.accumulate(inits[i], g)
    for j, g in zip(wanted, results[len(floats):]):
        sweep.accumulate(invariants[j], g)


def _active_carried(sweep: Sweep, loop, inits: tuple, wanted: list[int]) -> set[int]:
    """The carried floats (by number) that a value needing a gradient reaches: those whose
    initial value needs one, and those a trip makes from one that is reached, until nothing
    changes. The others need no cotangent: the step size ``h`` of an adaptive integrator,
    made from a number by the arms of a branch on data, whose cotangents would be carried
    trip by trip and thrown away."""
    body, n = loop.body, loop.ncarry
    ins = [i.var for i in body.inputs]
    have = {i for i in range(n) if ins[i].aval.is_float and isinstance(inits[i], Var)
            and inits[i] in sweep.active}
    while True:
        reached = _reached(body, {ins[i] for i in have} | {ins[n + j] for j in wanted},
                           sweep.rules)
        more = {i for i in range(n) if ins[i].aval.is_float and body.result[i] in reached}
        if more <= have:
            return have
        have |= more


def _reached(tape: Tape, seeds: set[Var], rules) -> set[Var]:
    """The float values of ``tape`` computed from ``seeds``: ``active_from``, but through a
    branch statement's arms, result by result (a result each arm makes from numbers only is
    not reached where an operand is)."""
    reached = set(seeds)
    for s in tape.stmts:
        branch = branch_of(s)
        if branch is None or not any(u in reached for u in s.uses()):
            reached |= active_from([s], reached, rules) - reached
            continue
        for arm in (branch.then, branch.orelse):
            inner = _reached(arm, {i.var for i, a in zip(arm.inputs, s.args[1:])
                                   if isinstance(a, Var) and a in reached}, rules)
            reached |= {o for o, r in zip(s.outs, arm.result)
                        if o.aval.is_float and isinstance(r, Var) and r in inner}
    return reached


def _zeros(sweep: Sweep, aval: Aval) -> Var | Lit:
    """A cotangent or an accumulator as the unwind starts it: zeros; a number's a number of its
    dtype (a 0-d array would change type at its first trip, which numba refuses)."""
    if aval.ndim == 0:
        return Lit(aval.dtype.type(0))
    dtype = {} if aval.dtype == np.float64 else {"dtype": aval.dtype}
    return sweep.emit(sweep.rules.lookup(np.zeros), [Lit(aval.shape)], dtype)


@dataclass
class _Plan:
    """The backward step, and what the forward loop stacks for it: the carried values (by
    number) as a trip starts, the residuals (values of ``forward``, the trip's statements) as
    it ends."""
    step: Tape
    saved: list[int]
    residuals: list[Var]
    forward: list[Stmt]


def _step(sweep: Sweep, loop, floats: list[int], wanted: list[int]) -> _Plan:
    """The backward step: inputs the saved carried values and residuals, the invariants, the
    carried cotangents and the accumulators; results the cotangents and accumulators after
    the trip."""
    ev, rules, body, n = sweep.ev, sweep.rules, loop.body, loop.ncarry
    ins = [i.var for i in body.inputs]
    act = active_from(body.stmts, {ins[i] for i in floats} | {ins[n + j] for j in wanted},
                      rules)
    sub = Sweep(ev, body, act, primals=sweep.primals, in_region=True)
    cots = [_placeholder(ev, ins[i]) for i in floats]
    accs = [_placeholder(ev, ins[n + j]) for j in wanted]
    for i, cot in zip(floats, cots):
        out = body.result[i]
        if isinstance(out, Var) and out in act:
            sub.accumulate(out, cot)
    for acc, j in zip(accs, wanted):    # the trip's gradient added into the accumulator (the
        sub.accumulate(ins[n + j], acc)  # rows it reads, xs[t], into its rows: dxs[t] += ...)
    with ev.collect() as back:
        sub.sweep_all(sub.home)
        grads = [_gradient(sub, ins[i]) for i in floats]
        grads += [_gradient(sub, ins[n + j]) for j in wanted]
    forward, again, residuals = _save_or_remake(sub.home, back, grads, ins[:n], ins[n:])
    if residuals is None:       # (a while inside: the trip made again from the carried values)
        forward, residuals = list(body.stmts), []
    fresh, remade = made_again(ev, again, ins + residuals)
    for v in residuals:         # (a row of no source name: v = V[t], as its stack)
        fresh[v].hint = fresh[v].hint or "v"
    stmts = [substitute_stmt(s, lambda a: fresh.get(a, a)) for s in remade + back]
    result = tuple(fresh.get(g, g) if isinstance(g, Var) else g for g in grads)
    stmts = live(stmts, [r for r in result if isinstance(r, Var)])
    read = {u for s in stmts for u in s.uses()} | {r for r in result if isinstance(r, Var)}
    saved = [i for i in range(n) if fresh[ins[i]] in read]
    residuals = [v for v in residuals if fresh[v] in read]
    inputs = [fresh[ins[i]] for i in saved] + [fresh[v] for v in residuals] + \
        [fresh[v] for v in ins[n:]] + cots + accs
    params = tuple(body.params[i] for i in saved) + \
        tuple(body.hint_of(v) or "r" for v in residuals) + tuple(body.params[n:]) + \
        tuple(f"d{body.params[i]}" for i in floats) + tuple(f"d{body.params[n + j]}"
                                                           for j in wanted)
    step = Tape(name="step", params=params, inputs=[Input(v, i) for i, v in enumerate(inputs)],
                stmts=stmts, result=result, loc=body.loc)
    return _Plan(step, saved, residuals, forward)


def _save_or_remake(fwd: list[Stmt], back: list[Stmt], grads: list, carried: list[Var],
                    invariants: list[Var]) -> tuple[list[Stmt], list[Stmt], list[Var] | None]:
    """The trip's statements as the recording loop runs them, those the backward step makes
    again (in order) and the residuals: the values of the trip the step reads that the policy
    says to save (the carried values it reads are stacked as a trip starts). None for the
    residuals where the trip holds a while: its stacks grow, and no stack of rows holds them."""
    if any(while_of(s) is not None for s in fwd):
        return fwd, fwd, None
    made = {o for s in fwd for o in s.outs} | set(carried)
    own = {o for s in back for o in s.outs}
    reads: dict[Var, None] = {}
    for v in [u for s in back for u in s.uses()] + [g for g in grads if isinstance(g, Var)]:
        if v in made and v not in own:
            reads[v] = None
    prologue, remat = save_or_remake(POLICY, reads, fwd, Step(Trip(tuple(carried),
                                                                   tuple(invariants)), fwd), made)
    again = {id(s) for s in prologue + remat}
    return fwd, [s for s in fwd if id(s) in again], [v for v in reads if v not in set(carried)]


def _placeholder(ev, v: Var) -> Var:
    """A cotangent (or accumulator) of ``v`` as the backward step starts."""
    cot = Var(Aval(v.aval.shape, v.aval.dtype), grad_of=v)
    ev.values[cot] = ghost(cot.aval.shape, cot.aval.dtype) if cot.aval.ndim \
        else cot.aval.dtype.type(0)
    return cot


def _record(sweep: Sweep, stmt: Stmt, plan: _Plan) -> tuple[Var, list[Var]]:
    """The while statement that also counts its trips and stacks what ``plan`` says, in the
    place of ``stmt`` in ``sweep.home``; its trip count and stacks."""
    loop = while_of(stmt)
    n = loop.ncarry
    body = loop.body.copy(stmts=list(plan.forward),
                          result=tuple(loop.body.result) + tuple(plan.residuals))
    record = replace(loop, body=body, saved=tuple(plan.saved), nres=len(plan.residuals),
                     record=True)
    ins = [i.var for i in loop.body.inputs]
    hints = [(ins[i].hint or "x").upper() for i in plan.saved] + \
        [stack_name(body.hint_of(v) or "v") for v in plan.residuals]
    trips = Var(Aval((), np.dtype(np.int64)), hint="trips")
    stacks = [Var(aval, hint=hint) for aval, hint in zip(record.stack_avals(), hints)]
    sweep.ev.values[trips] = np.int64(0)
    for v in stacks:            # (nothing decides on a saved value: its example is zeros)
        sweep.ev.values[v] = ghost(v.aval.shape, v.aval.dtype)
    outs = tuple(stmt.outs[:n]) + (trips, *stacks)
    prim = while_primitive(record, stmt.prim.operands, len(outs))
    fwd = Stmt(outs, prim, stmt.args, (("loop", record),), stmt.loc, stmt.rule)
    home = sweep.home
    home[next(i for i, s in enumerate(home) if s is stmt)] = fwd
    return trips, stacks


STRUCTURAL_RULES["while"] = sweep_while
