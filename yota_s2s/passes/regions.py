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
from ..ir.branch import branch_of
from ..ir.region import loop_of
from ..ir.rewrite import substitute
from ..ir.tape import Lit, Stmt, Tape
from ..rules.registry import RuleSet


def optimize_bodies(tape: Tape, optimize: Callable[[Tape], Tape]) -> Tape:
    """``tape`` with every region's body (and theirs, depth first) run through ``optimize``.
    An invariant whose operand is a number is that number inside the body, so the body's
    passes fold it (the backward loop's ``dloss * 2 * h``, ``dloss = 0.5``, is ``h``)."""
    def change(body: Tape, loop, stmt: Stmt) -> Tape:
        body = _constant_invariants(body, loop, stmt)
        return optimize(optimize_bodies(body, optimize))

    def arm(body: Tape, stmt: Stmt) -> Tape:
        numbers = {i.var: a for i, a in zip(body.inputs, stmt.args[1:])
                   if isinstance(a, Lit) and _number(a.value)}
        body = substitute(body, numbers) if numbers else body
        return optimize(optimize_bodies(body, optimize))
    return _each_arm(_each_body(tape, change, with_loop=True), arm)


def _each_arm(tape: Tape, change: Callable) -> Tape:
    """``tape`` with each arm of its branch statements (ir/branch.py) made ``change(arm,
    stmt)``; an arm keeps its inputs and results, so the branch keeps its operands."""
    stmts: list[Stmt] = []
    changed = False
    for stmt in tape.stmts:
        branch = branch_of(stmt)
        if branch is not None:
            new = replace(branch, then=change(branch.then, stmt),
                          orelse=change(branch.orelse, stmt))
            stmt = stmt.replace(params=tuple((k, new if k == "branch" else v)
                                             for k, v in stmt.params))
            changed = True
        stmts.append(stmt)
    return tape.copy(stmts=stmts) if changed else tape


def _constant_invariants(body: Tape, loop, stmt: Stmt) -> Tape:
    """``body`` reading the number itself where an invariant's operand is a number (the
    invariant stays an input of the body, unread)."""
    operands = dict(zip(loop.operand_vars(), stmt.args))
    numbers = {k: operands[k] for k in loop.invariants
               if isinstance(operands[k], Lit) and _number(operands[k].value)}
    return substitute(body, numbers) if numbers else body


def _number(value) -> bool:
    return isinstance(value, (int, float, complex, np.number, np.bool_))


def in_place_bodies(tape: Tape, rules: RuleSet) -> Tape:
    """``write_in_place`` inside every body. A carried array that the body then updates in
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
    return _each_body(tape, lower, with_loop=True)


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
