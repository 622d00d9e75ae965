"""The derivative of a while statement (ir/whiles.py): the forward loop records, and an
``unwind`` runs its trips again in reverse.

For ``c = while(c0, k)`` with body ``c' = step(c, k)``::

    forward:   the same loop, which also counts its trips and stacks, at the start of each
               trip, each carried value the backward step reads (``X[t] = x``)
    backward:  dc = dc_final; dk = 0
               for t in reversed(range(trips)):
                   x = X[t]
                   dc, dk += adjoint of the step at (dc)      # the step's values made again

The step's adjoint is the ordinary reverse sweep (sweep.py) over the body, seeded with the
carried cotangents; the body statements it reads are made again from the saved carried values
(a body is a few statements: what a handwritten backward of a fixed-point loop does). A
carried value that is not a float has no cotangent; an invariant that needs a gradient has an
accumulator. The module registers ``sweep_while`` as the engine's structural rule for whiles.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..frontend.abstract import ghost
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from ..ir.whiles import CAPACITY, Unwind, carried_sources, unwind_primitive, while_of, \
    while_primitive
from .branches import _gradient, made_again
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
    # the carried floats with a cotangent: those whose results have one, and their sources
    floats = carried_sources(loop, [i for i, dy in dys.items() if dy is not None],
                             lambda k: loop.body.inputs[k].var.aval.is_float)
    targets = [i for i in floats if isinstance(inits[i], Var) and inits[i] in sweep.active]
    if all(dy is None for dy in dys.values()) or not (wanted or targets):
        return
    ev = sweep.ev
    with ev.at(stmt.loc, RULE):
        step, saved = _step(sweep, loop, floats, wanted)
        trips, stacks = _record(sweep, stmt, saved)
        starts = [sweep.fit(dys[i], ins[i].aval) if dys[i] is not None else
                  _zeros(sweep, ins[i].aval) for i in floats]
        starts += [_zeros(sweep, ins[n + j].aval) for j in wanted]
        starts = [s if isinstance(s, (Var, Lit)) else Lit(s) for s in starts]
        unwind = Unwind(step, len(saved), len(invariants), len(floats), loop.source)
        names = tuple(step.params)
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


def _zeros(sweep: Sweep, aval: Aval) -> Var | Lit:
    """A cotangent or an accumulator as the unwind starts it: zeros; a number's a number of its
    dtype (a 0-d array would change type at its first trip, which numba refuses)."""
    if aval.ndim == 0:
        return Lit(aval.dtype.type(0))
    dtype = {} if aval.dtype == np.float64 else {"dtype": aval.dtype}
    return sweep.emit(sweep.rules.lookup(np.zeros), [Lit(aval.shape)], dtype)


def _step(sweep: Sweep, loop, floats: list[int], wanted: list[int]) -> tuple[Tape, list[int]]:
    """The backward step: inputs the saved carried values, the invariants, the carried
    cotangents and the accumulators; results the cotangents and accumulators after the trip.
    Also the carried values (by number) the step reads: those the forward stacks."""
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
    # the body's statements again, under names of their own, then the adjoint's
    fresh, remade = made_again(ev, sub.home, ins)
    stmts = [substitute_stmt(s, lambda a: fresh.get(a, a)) for s in remade + back]
    result = tuple(fresh.get(g, g) if isinstance(g, Var) else g for g in grads)
    stmts = live(stmts, [r for r in result if isinstance(r, Var)])
    read = {u for s in stmts for u in s.uses()} | {r for r in result if isinstance(r, Var)}
    saved = [i for i in range(n) if fresh[ins[i]] in read]
    inputs = [fresh[ins[i]] for i in saved] + [fresh[v] for v in ins[n:]] + cots + accs
    params = tuple(body.params[i] for i in saved) + tuple(body.params[n:]) + \
        tuple(f"d{body.params[i]}" for i in floats) + tuple(f"d{body.params[n + j]}"
                                                           for j in wanted)
    step = Tape(name="step", params=params, inputs=[Input(v, i) for i, v in enumerate(inputs)],
                stmts=stmts, result=result, loc=body.loc)
    return step, saved


def _placeholder(ev, v: Var) -> Var:
    """A cotangent (or accumulator) of ``v`` as the backward step starts."""
    cot = Var(Aval(v.aval.shape, v.aval.dtype), grad_of=v)
    ev.values[cot] = ghost(cot.aval.shape, cot.aval.dtype) if cot.aval.ndim \
        else cot.aval.dtype.type(0)
    return cot


def _record(sweep: Sweep, stmt: Stmt, saved: list[int]) -> tuple[Var, list[Var]]:
    """The while statement that also counts its trips and stacks the ``saved`` carried
    values, in the place of ``stmt`` in ``sweep.home``; its trip count and stacks."""
    loop = while_of(stmt)
    record = replace(loop, saved=tuple(saved), record=True)
    ins = [i.var for i in loop.body.inputs]
    trips = Var(Aval((), np.dtype(np.int64)), hint="trips")
    stacks = [Var(Aval((CAPACITY, *ins[i].aval.shape), ins[i].aval.dtype),
                  hint=(ins[i].hint or "x").upper()) for i in saved]
    sweep.ev.values[trips] = np.int64(0)
    for v in stacks:            # (nothing decides on a saved value: its example is zeros)
        sweep.ev.values[v] = ghost(v.aval.shape, v.aval.dtype)
    outs = tuple(stmt.outs) + (trips, *stacks)
    prim = while_primitive(record, stmt.prim.operands, len(outs))
    fwd = Stmt(outs, prim, stmt.args, (("loop", record),), stmt.loc, stmt.rule)
    home = sweep.home
    home[next(i for i, s in enumerate(home) if s is stmt)] = fwd
    return trips, stacks


STRUCTURAL_RULES["while"] = sweep_while
