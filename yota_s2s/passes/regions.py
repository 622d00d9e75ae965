"""The passes inside loop regions (ir/region.py) and the arms of branches (ir/branch.py): each
body and each arm is optimized as a tape of its own.

A body's inputs (the step index, the carried values, the invariants) and its result (the
carried values after a step) stay as they are, so the region statement around it keeps its
operands and results: nothing moves across the region boundary. Dead-code elimination inside
a body keeps what the next step or the region's results need; common subexpressions are merged
within one step only.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from ..ir.analysis import Analysis
from ..ir.branch import branch_of, branch_primitive
from ..ir.region import loop_of
from ..ir.rewrite import substitute
from ..ir.tape import Input, Lit, Stmt, Tape, Var
from ..rules.outside import external
from ..ir.whiles import Unwind, While, unwind_primitive, while_of, while_primitive, \
    with_tapes
from ..rules.registry import RuleSet
from .dce import dce


def optimize_bodies(tape: Tape, optimize: Callable[[Tape], Tape], rules: RuleSet) -> Tape:
    """``tape`` with every region's body (and theirs, depth first) run through ``optimize``.
    An invariant whose operand is a number is that number inside the body, so the body's
    passes fold it (the backward loop's ``dloss * 2 * h``, ``dloss = 0.5``, is ``h``)."""
    def change(body: Tape, loop, stmt: Stmt) -> Tape:
        body = _constant_invariants(body, loop, stmt)
        return optimize(optimize_bodies(body, optimize, rules))

    def arm(body: Tape, stmt: Stmt, made: dict[Var, Stmt]) -> Tape:
        numbers = {i.var: _as_input(a, i.var) for i, a in zip(body.inputs, stmt.args[1:])
                   if isinstance(a, Lit) and _number(a.value)}
        body = substitute(body, numbers) if numbers else body
        body = _constant_operands(body, stmt, made)
        return _filled_results(optimize(optimize_bodies(body, optimize, rules)), rules)

    def tapes(stmt: Stmt) -> Stmt:     # a while statement's (ir/whiles.py): each on its own
        construct = while_of(stmt)
        return with_tapes(stmt, tuple(optimize(optimize_bodies(t, optimize, rules))
                                      for t in construct.tapes))
    stepped = _each_body(tape, change, with_loop=True)
    armed = _each_arm(stepped, arm)     # (an operand an arm now makes itself: dead outside)
    armed = dce(armed, None)[0] if armed is not stepped else armed
    return _unread_stacks_dropped(_idle_unwinds_dropped(_each_while(armed, tapes)))


def _idle_unwinds_dropped(tape: Tape) -> Tape:
    """``tape`` without the unwinds whose step gives back the cotangents and accumulators it
    was given, each in its place (nothing the loop carries needs a gradient on the way back:
    a line search's step size, halved): their results are the values they were given. (The
    loop printed with no statement in it did not parse.)"""
    given: dict[Var, object] = {}
    stmts = []
    for stmt in tape.stmts:
        unwind = while_of(stmt)
        if isinstance(unwind, Unwind):
            step, first = unwind.step, len(unwind.step.inputs) - len(unwind.step.result)
            if not step.stmts and all(r is i.var for r, i in zip(step.result,
                                                                  step.inputs[first:])):
                given.update((out, stmt.args[1 + first + j]) for j, out in enumerate(stmt.outs))
                continue
        stmts.append(stmt)
    return substitute(tape.copy(stmts=stmts), given) if given else tape


def drop_unread_stacks(tape: Tape) -> Tape:
    """``tape`` without the stacks nothing reads (``_unread_stacks_dropped``)."""
    return _unread_stacks_dropped(tape)


def _unread_stacks_dropped(tape: Tape) -> Tape:
    """``tape`` without the rows an unwind's step no longer reads (its passes made it simpler:
    ``y2`` of an arm's ``y = y2`` read for its shape), and without the stacks of a recording
    while that nothing reads then: the carried values it no longer saves, the residuals it
    no longer gives (the body's statements that made them only go too)."""
    stmts = [_rows_dropped(s) if isinstance(while_of(s), Unwind) else s for s in tape.stmts]
    read = {u for s in stmts for u in s.uses()} | \
        {a for a in tape.outputs() if isinstance(a, Var)}
    stmts = [_stacks_dropped(s, read) if isinstance(while_of(s), While) else s for s in stmts]
    if all(a is b for a, b in zip(stmts, tape.stmts)):
        return tape
    return tape.copy(stmts=stmts)


def _rows_dropped(stmt: Stmt) -> Stmt:
    unwind: Unwind = while_of(stmt)
    step = unwind.step
    read = {u for s in step.stmts for u in s.uses()} | \
        {r for r in step.result if isinstance(r, Var)}
    keep = [k for k, i in enumerate(step.inputs) if k >= unwind.nsaved or i.var in read]
    if len(keep) == len(step.inputs):
        return stmt
    step = step.copy(inputs=[Input(step.inputs[k].var, j) for j, k in enumerate(keep)],
                     params=tuple(step.params[k] for k in keep))
    new = replace(unwind, step=step, nsaved=sum(k < unwind.nsaved for k in keep))
    return stmt.replace(prim=unwind_primitive(new, tuple(step.params), len(stmt.outs)),
                        args=(stmt.args[0], *(stmt.args[1 + k] for k in keep)),
                        params=(("unwind", new),))


def _stacks_dropped(stmt: Stmt, read: set[Var]) -> Stmt:
    loop: While = while_of(stmt)
    if not loop.record:
        return stmt
    n, s = loop.ncarry, len(loop.saved)
    stacks = stmt.outs[n + 1:]
    if all(v in read for v in stacks) and (stacks or stmt.outs[n] in read):
        return stmt
    saved = [i for i, v in zip(loop.saved, stacks[:s]) if v in read]
    residuals = [r for r, v in zip(loop.body.result[n:], stacks[s:]) if v in read]
    body = dce(loop.body.copy(result=(*loop.body.result[:n], *residuals)), None)[0]
    new = replace(loop, body=body, saved=tuple(saved), nres=len(residuals))
    outs = (*stmt.outs[:n + 1], *(v for v in stacks if v in read))
    if len(outs) == n + 1 and stmt.outs[n] not in read:     # nothing to record: no unwind
        new, outs = replace(new, record=False), outs[:n]
    return stmt.replace(outs=outs, prim=while_primitive(new, stmt.prim.operands, len(outs)),
                        params=(("loop", new),))


def _each_while(tape: Tape, change: Callable) -> Tape:
    """``tape`` with each while or unwind statement (ir/whiles.py) made ``change(stmt)``."""
    if not any(while_of(s) is not None for s in tape.stmts):
        return tape
    return tape.copy(stmts=[change(s) if while_of(s) is not None else s for s in tape.stmts])


def _each_arm(tape: Tape, change: Callable) -> Tape:
    """``tape`` with each arm of its branch statements (ir/branch.py) made ``change(arm,
    stmt, made)`` (``made``: the statement that makes each value of ``tape`` read once, by
    that branch); the operands neither arm reads after that are dropped, with the arms'
    inputs that stand for them."""
    stmts: list[Stmt] = []
    changed = False
    facts = None
    for stmt in tape.stmts:
        branch = branch_of(stmt)
        if branch is not None:
            facts = facts or Analysis(tape)
            made = {v: facts.producer[v] for v in stmt.uses()
                    if v in facts.producer and facts.uses[v] == 1}
            stmt = _unread_dropped(stmt, replace(branch, then=change(branch.then, stmt, made),
                                                 orelse=change(branch.orelse, stmt, made)))
            changed = True
        stmts.append(stmt)
    return tape.copy(stmts=stmts) if changed else tape


def _constant_operands(arm: Tape, stmt: Stmt, made: dict[Var, Stmt]) -> Tape:
    """``arm`` making again, at its start, each operand of ``stmt`` made from literals alone
    and read by nothing else (the backward's seed ``broadcast_to(3.0, (4,))``), so that the
    arm's passes fold it into what reads it (``dy * 2 * x`` is ``6.0 * x``); the statement
    outside is then dead. Not a random draw, nor a value read from outside."""
    moved: list[Stmt] = []
    mapping: dict[Var, Var] = {}
    for inp, a in zip(arm.inputs, stmt.args[1:]):
        maker = made.get(a) if isinstance(a, Var) else None
        if maker is None or not _constant(maker):
            continue
        mapping[inp.var] = Var(inp.var.aval, hint=inp.var.hint)
        moved.append(maker.replace(outs=(mapping[inp.var],)))
    if not moved:
        return arm
    return substitute(arm, mapping, moved + list(arm.stmts))


def _filled_results(arm: Tape, rules: RuleSet) -> Tape:
    """``arm`` making each result that is a number broadcast (``broadcast_to(0.516, (3,))``,
    read-only) as an array of its own, ``np.full((3,), 0.516)``: a branch's results are new
    arrays, which the code after it may write in place."""
    results = {r for r in arm.result if isinstance(r, Var)}
    stmts = [s.replace(prim=rules.lookup(np.full), args=s.args[::-1],
                       params=() if s.out.aval.dtype == np.float64
                       else (("dtype", s.out.aval.dtype),))
             if s.prim.fn is np.broadcast_to and isinstance(s.args[0], Lit) and s.outs
             and s.out in results else s for s in arm.stmts]
    return arm.copy(stmts=stmts) if any(a is not b for a, b in zip(stmts, arm.stmts)) else arm


def _constant(stmt: Stmt) -> bool:
    p = stmt.prim
    return not (p.effect or p.inplace or stmt.uses() or p.nout != 1 or p.fn is external
                or loop_of(stmt) is not None or branch_of(stmt) is not None)


def _unread_dropped(stmt: Stmt, branch) -> Stmt:
    """The branch statement ``stmt`` of ``branch``'s arms, without the operands neither arm
    reads (each arm's inputs renumbered)."""
    def read(arm: Tape) -> set[Var]:
        return {v for s in arm.stmts for v in s.uses()} | \
            {r for r in arm.result if isinstance(r, Var)}
    reads = read(branch.then), read(branch.orelse)
    keep = [j for j in range(len(branch.then.inputs))
            if branch.then.inputs[j].var in reads[0] or branch.orelse.inputs[j].var in reads[1]]
    if len(keep) == len(branch.then.inputs):
        return stmt.replace(params=tuple((k, branch if k == "branch" else v)
                                         for k, v in stmt.params))
    arms = [arm.copy(params=tuple(arm.params[j] for j in keep),
                     inputs=[Input(arm.inputs[j].var, i) for i, j in enumerate(keep)])
            for arm in branch.arms]
    new = replace(branch, then=arms[0], orelse=arms[1])
    names = tuple(stmt.prim.operands[1 + j] for j in keep)
    return stmt.replace(prim=branch_primitive(new, names),
                        args=(stmt.args[0], *(stmt.args[1 + j] for j in keep)),
                        params=tuple((k, new if k == "branch" else v) for k, v in stmt.params))


def _constant_invariants(body: Tape, loop, stmt: Stmt) -> Tape:
    """``body`` reading the number itself where an invariant's operand is a number (the
    invariant stays an input of the body, unread)."""
    operands = dict(zip(loop.operand_vars(), stmt.args))
    numbers = {k: operands[k] for k in loop.invariants
               if isinstance(operands[k], Lit) and _number(operands[k].value)}
    return substitute(body, numbers) if numbers else body


def _as_input(number: Lit, k: Var) -> Lit:
    """The number an arm reads for its input ``k``, of ``k``'s type: a Python number given for
    a numpy one (the backward's seed ``1.0`` for a cotangent) is numpy's, so that what reads it
    computes what the tape says (``d * 1.0`` is a Python float, ``d * xp.float64(1.0)`` not)."""
    value = number.value
    if not k.aval.weak and type(value) in (int, float, complex) and k.aval.dtype.kind in "fc":
        return Lit(k.aval.dtype.type(value))
    return number


def _number(value) -> bool:
    return isinstance(value, (int, float, complex, np.number, np.bool_))


def in_place_bodies(tape: Tape, rules: RuleSet) -> Tape:
    """``write_in_place`` inside every body and arm. A carried array that the body then updates in
    place (``out[t] = h``) becomes the loop's own: the body tape ``owns`` it and codegen
    starts it as a copy of its initial value, once, before the loop."""
    from .inplace import write_in_place

    def lower(body: Tape, loop, stmt: Stmt) -> Tape:
        body = in_place_bodies(body, rules)
        given = frozenset(c for c, f in zip(loop.carried, loop.fresh)
                          if not f and not c.aval.weak and c.aval.ndim)
        body = write_in_place(body.copy(owned=body.owned | given), rules)
        facts = Analysis(body)
        written = {facts.root(s.first_var) for s in body.stmts
                   if s.prim.inplace and s.first_var is not None}
        body.owned = (body.owned - given) | frozenset(c for c in given if c in written)
        return body

    def lower_while(stmt: Stmt) -> Stmt:     # an unwind's accumulators are its own arrays
        construct = while_of(stmt)
        own = frozenset(i.var for i in construct.tapes[0].inputs[-construct.nacc:]) \
            if isinstance(construct, Unwind) and construct.nacc else frozenset()
        return with_tapes(stmt, tuple(write_in_place(in_place_bodies(t, rules).copy(
            owned=t.owned | own), rules) for t in construct.tapes))
    def lower_arm(arm: Tape, stmt: Stmt, made) -> Tape:   # an arm's updates, its own too
        return write_in_place(in_place_bodies(arm, rules), rules)
    tape = _each_while(_each_body(tape, lower, with_loop=True), lower_while)
    return _each_arm(tape, lower_arm) if any(branch_of(s) for s in tape.stmts) else tape


def _each_body(tape: Tape, change: Callable, with_loop: bool = False) -> Tape:
    stmts: list[Stmt] = []
    changed = False
    for stmt in tape.stmts:
        loop = loop_of(stmt)
        if loop is not None:
            body = change(loop.body, loop, stmt) if with_loop else change(loop.body)
            new = replace(loop, body=body)
            stmt = stmt.replace(params=tuple((k, new if k == "loop" else v)
                                             for k, v in stmt.params))
            changed = True
        stmts.append(stmt)
    return tape.copy(stmts=stmts) if changed else tape
