"""The forward-mode derivative (JVP) of an unwind (ir/whiles.py): the same reverse loop,
carrying the tangents of its cotangents and accumulators beside them.

For ``d = unwind(trips, S, k, d0)`` with step ``d' = step(S[t], k, d)``::

    tangent:  d, dot_d = unwind(trips, S, dot_S, k, dot_k, d0, dot_d0)
              with step  d', dot_d' = step(S[t], k, d), JVP of step along (dot_S[t], dot_k, dot_d)

The tangent of a stack is the stack of the tangents, which the recording loop's JVP fills
beside it (``dot_X[t] = dot_x``, ad/while_tangents.py): a trip of the unwind reads the row of
each. This is forward over reverse through a ``while``: the JVP of the gradient's tape, one
module for every trip count (``ys.hvp``, higher.py). A cotangent or an accumulator has a
tangent where its start has one or a trip makes it from one that has (a tangent row, an
invariant with a tangent, another state tangent); the others are carried as before. The
unwind with tangents takes the unwind's place, as a while's JVP takes the loop's. The module
registers ``jvp_unwind`` as forward mode's structural rule for unwinds.
"""
from __future__ import annotations

from ..ir.tape import TANGENT, Aval, Input, Stmt, Tape, Var
from ..ir.whiles import Unwind, unwind_primitive, while_of
from .branch_tangents import _result_tangent
from .forward import STRUCTURAL_JVPS, _ForwardSweep, _tangent_rule
from .while_tangents import _example, forward_position, seeded_sweep

RULE = f"{TANGENT}the unwind's tangent: the step's JVP, carried beside the cotangents"


def jvp_unwind(sweep: _ForwardSweep, stmt: Stmt) -> None:
    """The structural JVP of an unwind statement: the unwind again, carrying the tangents of
    the state entries that have one, in the place of ``stmt``."""
    unwind: Unwind = while_of(stmt)
    s, j, m = unwind.nsaved, unwind.ninvariant, len(unwind.step.result)
    trips, stacks = stmt.args[0], stmt.args[1:1 + s]
    invariants, starts = stmt.args[1 + s:1 + s + j], stmt.args[1 + s + j:]
    rows = [k for k in range(s) if stacks[k] in sweep.tangent]
    active = [k for k in range(j) if isinstance(invariants[k], Var)
              and invariants[k] in sweep.tangent]
    seeded = [i for i in range(m) if isinstance(starts[i], Var) and starts[i] in sweep.tangent]
    dotted = _with_tangents(unwind, rows, active, seeded)
    if not dotted:
        return
    ev, stmts = sweep.ev, sweep.ev.stmts
    at = forward_position(sweep, stmt, "an unwind's JVP")
    with ev.at(stmt.loc, RULE), ev.collect() as made:
        dot_starts = {i: sweep._tangent_or_zero(starts[i]) for i in dotted}
        step = _tangent_step(sweep, unwind, rows, active, dotted)
    made = [t.replace(rule=_tangent_rule(t.rule)) for t in made]
    dots = {i: Var(Aval(o.aval.shape, o.aval.dtype))
            for i, o in enumerate(stmt.outs) if i in dotted}
    for d in dots.values():
        ev.values[d] = _example(d.aval)
    cots, accs = range(unwind.ncot), range(unwind.ncot, m)
    new_unwind = Unwind(step, s + len(rows), j + len(active),
                        unwind.ncot + sum(i in dots for i in cots), unwind.source)
    args = (trips, *stacks, *(sweep.tangent[stacks[k]] for k in rows), *invariants,
            *(sweep.tangent[invariants[k]] for k in active),
            *_state(starts, dot_starts, cots), *_state(starts, dot_starts, accs))
    outs = (*_state(stmt.outs, dots, cots), *_state(stmt.outs, dots, accs))
    new = Stmt(outs, unwind_primitive(new_unwind, tuple(step.params), len(outs)), args,
               (("unwind", new_unwind),), stmt.loc, stmt.rule)
    # the tangent section so far, and the tangents the unwind starts from, move before it
    before = [t.replace(rule=_tangent_rule(t.rule)) for t in stmts[sweep.start:]]
    stmts[at:] = before + made + [new] + stmts[at + 1:sweep.start]
    sweep.start = len(stmts)
    for i, d in dots.items():
        sweep.tangent[stmt.outs[i]], sweep.marks[d] = d, stmt.outs[i]


def _state(values, dots: dict, which: range) -> list:
    """The state entries ``which`` (the cotangents or the accumulators), then their tangents."""
    return [values[i] for i in which] + [dots[i] for i in which if i in dots]


def _with_tangents(unwind: Unwind, rows: list[int], active: list[int],
                   seeded: list[int]) -> list[int]:
    """The state entries (by number) that have a tangent: those ``seeded`` and those a trip
    makes from a tangent row, invariant or state entry that has one, until nothing changes."""
    step, s, j = unwind.step, unwind.nsaved, unwind.ninvariant
    ins = [i.var for i in step.inputs]
    have = {i for i in seeded if ins[s + j + i].aval.is_float}
    while True:
        live = {ins[k] for k in rows} | {ins[s + k] for k in active} | \
            {ins[s + j + i] for i in have}
        for t in step.stmts:
            if any(u in live for u in t.uses()):
                live.update(o for o in t.outs if o.aval.is_float)
        more = {i for i, r in enumerate(step.result) if i not in have
                and ins[s + j + i].aval.is_float and r in live}
        if not more:
            return sorted(have)
        have |= more


def _tangent_step(sweep: _ForwardSweep, unwind: Unwind, rows: list[int], active: list[int],
                  dotted: list[int]) -> Tape:
    """The step that also gives the state's tangents: inputs the rows, their tangents, the
    invariants, theirs, the cotangents, theirs, the accumulators, theirs; results the same
    state after the trip."""
    ev, step, s, j = sweep.ev, unwind.step, unwind.nsaved, unwind.ninvariant
    ins, params = [i.var for i in step.inputs], step.params
    sub, places = seeded_sweep(ev, step, [*rows, *(s + k for k in active),
                                          *(s + j + i for i in dotted)])
    with ev.collect() as made:
        for t in step.stmts:
            sub.push(t)
        results = {i: _result_tangent(sub, step.result[i], ins[s + j + i]) for i in dotted}
    made = [t.replace(rule=_tangent_rule(t.rule)) for t in made]
    cots, accs = range(unwind.ncot), range(unwind.ncot, len(step.result))
    inputs: list[Var] = []      # each group's values, then the tangents of those that have one
    names: list[str] = []
    for group in (range(s), range(s, s + j), [s + j + i for i in cots],
                  [s + j + i for i in accs]):
        inputs += [ins[k] for k in group] + [places[k] for k in group if k in places]
        names += [params[k] for k in group] + \
            [f"dot_{params[k]}" for k in group if k in places]
    result = tuple(_state(step.result, results, cots) + _state(step.result, results, accs))
    tape = Tape(name="step", params=tuple(names),
                inputs=[Input(v, k) for k, v in enumerate(inputs)], stmts=list(step.stmts) + made,
                result=result, loc=step.loc)
    tape.primals.update(step.primals)
    tape.primals.update(sub.marks)
    return tape


STRUCTURAL_JVPS["unwind"] = jvp_unwind
