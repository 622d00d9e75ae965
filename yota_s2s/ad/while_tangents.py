"""The forward-mode derivative (JVP) of a while statement (ir/whiles.py): the same loop,
carrying the tangents beside the values.

For ``c = while(c0, k)`` with body ``c' = step(c, k)``::

    tangent:  c, dot_c = while(c0, dot_c0, k, dot_k)
              with body  c', dot_c' = step(c, k), JVP of step at (c, k) along (dot_c, dot_k)

A trip's tangent needs that trip's values, and nothing after it: the tangents ride in the
loop, as a handwritten forward-mode loop carries them, with no stack. The body's JVP is the
ordinary forward sweep (forward.py) over the body; the condition reads the values only. A
carried float has a tangent where its initial value has one or a trip makes it from one
that has (an invariant with a tangent, another carried tangent); the others are carried as
before. The loop with tangents takes the forward loop's place (its first results are the
forward's): the tangents it starts from, made so far in the tangent section, move before it
(they are tangents of the statements before the loop, and read nothing after it). The
module registers ``jvp_while`` as forward mode's structural rule for whiles.
"""
from __future__ import annotations

from typing import Any

from ..frontend.abstract import ghost
from ..ir.tape import TANGENT, Aval, Input, Stmt, Tape, Var, tree_atoms
from ..ir.whiles import While, carried_sources, while_of, while_primitive
from .branch_tangents import _result_tangent
from .forward import STRUCTURAL_JVPS, _ForwardSweep, _tangent_rule

RULE = f"{TANGENT}the while loop's tangent: the body's JVP, carried beside the values"


def jvp_while(sweep: _ForwardSweep, stmt: Stmt) -> None:
    """The structural JVP of a while statement: the loop again, carrying the tangents of the
    carried floats that have one, in the place of ``stmt``."""
    loop: While = while_of(stmt)
    n = loop.ncarry
    inits, invariants = stmt.args[:n], stmt.args[n:]
    ins = [i.var for i in loop.body.inputs]
    active = [j for j, k in enumerate(invariants) if isinstance(k, Var) and k in sweep.tangent]
    dotted = _with_tangents(loop, [i for i in range(n) if isinstance(inits[i], Var)
                                   and inits[i] in sweep.tangent], active)
    read = _read_after(sweep, stmt) | (set(loop.saved) if loop.record else set())
    residuals = list(range(n, n + loop.nres))       # (each stacked: its tangent read too)
    # the tangents a tangent after the loop may read, and those a trip makes them from
    dotted = [i for i in carried_sources(loop, [i for i in dotted if i in read] + residuals,
                                         dotted.__contains__) if i < n]
    if not dotted:
        return
    ev, stmts = sweep.ev, sweep.ev.stmts
    in_arm = not loop.record and not any(s is stmt for s in stmts)
    at = None if in_arm else forward_position(sweep, stmt, "a while statement's JVP")
    with ev.at(stmt.loc, RULE), ev.collect() as made:
        starts = [sweep._tangent_or_zero(inits[i]) for i in dotted]
        body, dotted_res = _tangent_body(sweep, loop, dotted, active)
    made = [s.replace(rule=_tangent_rule(s.rule)) for s in made]
    dots = [Var(Aval(ins[i].aval.shape, ins[i].aval.dtype), hint=f"dot_{ins[i].hint or 'x'}")
            for i in dotted]
    for d in dots:
        ev.values[d] = _example(d.aval)
    cond = _widened(loop.cond, loop, dotted, active)
    saved = tuple(n + dotted.index(i) for i in loop.saved if i in dotted)
    tangent = While(cond, body, ncarry=n + len(dotted), source=loop.source,
                    saved=loop.saved + saved, record=loop.record,
                    nres=loop.nres + len(dotted_res))
    args = (*inits, *starts, *invariants, *(sweep.tangent[invariants[j]] for j in active))
    stacks, res_stacks = _tangent_stacks(sweep, stmt, loop, dotted, dotted_res)
    m = n + 1 + len(loop.saved)
    values = [Var(o.aval, hint=o.hint) for o in stmt.outs[:n]] if in_arm else stmt.outs[:n]
    outs = (*values, *dots, *stmt.outs[n:m], *stacks.values(), *stmt.outs[m:],
            *res_stacks.values())
    params = tuple(body.params)
    new = Stmt(outs, while_primitive(tangent, params, len(outs)), args,
               (("loop", tangent),), stmt.loc, stmt.rule)
    if in_arm:      # in a branch's tangent arm (branch_tangents.py), which makes the forward
        for v, o in zip(values, stmt.outs):     # values it reads again: the loop is a new
            ev.values.derive(v, o)              # statement there, its values its own
        stmts.extend(made + [new])
    else:       # the tangent section so far, and the tangents the loop starts from, move
        before = [s.replace(rule=_tangent_rule(s.rule)) for s in stmts[sweep.start:]]
        stmts[at:] = before + made + [new] + stmts[at + 1:sweep.start]      # before it
        sweep.start = len(stmts)
    for i, d in zip(dotted, dots):
        sweep.tangent[stmt.outs[i]] = d
        sweep.marks[d] = stmt.outs[i]
    for k, d in (stacks | res_stacks).items():
        sweep.tangent[k], sweep.marks[d] = d, k


def _tangent_stacks(sweep: _ForwardSweep, stmt: Stmt, loop: While, dotted: list[int],
                    dotted_res: list[int]) -> tuple[dict[Var, Var], dict[Var, Var]]:
    """A recording loop's stacks of the tangents (``dot_X[t] = dot_x``) beside the stacks of
    the values, by the value's stack (a stack's tangent is the stack of the tangents: what
    the unwind's JVP reads, ad/unwind_tangents.py): the saved carried values', the
    residuals' (``dotted_res``, by number); none where the loop does not record."""
    if not loop.record:
        return {}, {}
    m = loop.ncarry + 1 + len(loop.saved)
    carried = [s for s, i in zip(stmt.outs[loop.ncarry + 1:m], loop.saved) if i in dotted]
    residual = [stmt.outs[m + k] for k in dotted_res]
    made: tuple[dict[Var, Var], dict[Var, Var]] = ({}, {})
    for group, stacks in zip(made, (carried, residual)):
        for stack in stacks:
            group[stack] = Var(stack.aval, hint=f"dot_{stack.hint or 'X'}")
            sweep.ev.values[group[stack]] = _example(stack.aval)
    return made


def _with_tangents(loop: While, seeded: list[int], active: list[int]) -> list[int]:
    """The carried floats (by number) that have a tangent: those ``seeded`` (the initial value
    has one) and those a trip makes from one that has, until nothing changes."""
    n, body = loop.ncarry, loop.body
    ins = [i.var for i in body.inputs]
    have = {i for i in seeded if ins[i].aval.is_float}
    while True:
        live = {ins[i] for i in have} | {ins[n + j] for j in active}
        for s in body.stmts:
            if any(u in live for u in s.uses()):
                live.update(o for o in s.outs if o.aval.is_float)
        more = {i for i in range(n) if ins[i].aval.is_float and i not in have
                and body.result[i] in live}
        if not more:
            return sorted(have)
        have |= more


def _read_after(sweep: _ForwardSweep, stmt: Stmt) -> set[int]:
    """The loop's results (by number) that a statement after it or the result reads."""
    stmts = sweep.tape.stmts
    after = stmts[next(k for k, s in enumerate(stmts) if s is stmt) + 1:]
    read = {u for s in after for u in s.uses()}
    read.update(a for a in tree_atoms(sweep.tape.result) if isinstance(a, Var))
    return {i for i, o in enumerate(stmt.outs) if o in read}


def forward_position(sweep: _ForwardSweep, stmt: Stmt, what: str) -> int:
    """Where ``stmt`` is among the statements the sweep writes: in its forward section."""
    at = next((k for k, s in enumerate(sweep.ev.stmts) if s is stmt), None)
    if at is None or at >= sweep.start:
        raise AssertionError(f"{what}: the loop is not in the forward section")
    return at


def seeded_sweep(ev, tape: Tape, numbers: list[int]) -> tuple[_ForwardSweep, dict[int, Var]]:
    """A forward sweep over ``tape`` whose inputs ``numbers`` have tangents, and those tangents
    by number: a new value each, ``dot_`` and the input's name."""
    ins = [i.var for i in tape.inputs]
    sub = _ForwardSweep(tape, ev, [])
    places: dict[int, Var] = {}
    for k in numbers:
        v = ins[k]
        places[k] = dot = Var(Aval(v.aval.shape, v.aval.dtype), hint=f"dot_{v.hint or 'x'}")
        ev.values[dot] = _example(dot.aval)
        sub.tangent[v], sub.marks[dot] = dot, v
    return sub, places


def _tangent_body(sweep: _ForwardSweep, loop: While, dotted: list[int],
                  active: list[int]) -> tuple[Tape, list[int]]:
    """The body that also gives the carried tangents: inputs the carried values, their
    tangents, the invariants and theirs; results the carried values, their tangents, the
    residuals (a recording loop's), the tangents of those that have one. Also those
    residuals (by number)."""
    ev, body, n = sweep.ev, loop.body, loop.ncarry
    ins = [i.var for i in body.inputs]
    sub, places = seeded_sweep(ev, body, [*dotted, *(n + j for j in active)])
    residuals = body.result[n:]
    with ev.collect() as made:
        for s in body.stmts:
            sub.push(s)
        results = [_result_tangent(sub, body.result[i], ins[i]) for i in dotted]
        dotted_res = [k for k, r in enumerate(residuals) if isinstance(r, Var)
                      and r.aval.is_float and sub.tangent.get(r) is not None]
        tangents = [_result_tangent(sub, residuals[k], residuals[k]) for k in dotted_res]
    made = [s.replace(rule=_tangent_rule(s.rule)) for s in made]
    order = [*ins[:n], *(places[i] for i in dotted), *ins[n:],
             *(places[n + j] for j in active)]
    params = _names(body, loop, dotted, active)
    tape = Tape(name="body", params=params, inputs=[Input(v, k) for k, v in enumerate(order)],
                stmts=list(body.stmts) + made,
                result=(*body.result[:n], *results, *residuals, *tangents), loc=body.loc)
    tape.primals.update({t: p for t, p in sub.marks.items()})
    return tape, dotted_res


def _widened(tape: Tape, loop: While, dotted: list[int], active: list[int]) -> Tape:
    """The condition over the inputs of the loop with tangents (it reads the values only)."""
    n = loop.ncarry
    ins = [i.var for i in tape.inputs]
    extra = {k: Var(ins[k].aval, hint=f"dot_{ins[k].hint or 'x'}")
             for k in [*dotted, *(n + j for j in active)]}
    order = [*ins[:n], *(extra[i] for i in dotted), *ins[n:], *(extra[n + j] for j in active)]
    return Tape(name=tape.name, params=_names(tape, loop, dotted, active),
                inputs=[Input(v, k) for k, v in enumerate(order)], stmts=list(tape.stmts),
                result=tape.result, loc=tape.loc)


def _names(tape: Tape, loop: While, dotted: list[int], active: list[int]) -> tuple[str, ...]:
    """The tapes' parameter names: the carried values', their tangents' (``dot_x``), the
    invariants', theirs."""
    n, p = loop.ncarry, tape.params
    return (*p[:n], *(f"dot_{p[i]}" for i in dotted), *p[n:], *(f"dot_{p[n + j]}" for j in active))


def _example(aval: Aval) -> Any:
    """A tangent's example value: zeros (nothing decides on a tangent)."""
    return ghost(aval.shape, aval.dtype) if aval.ndim else aval.dtype.type(0)


STRUCTURAL_JVPS["while"] = jvp_while
