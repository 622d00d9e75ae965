"""A sum with a branch's result made in the arms (ir/branch.py): no zeros made to be added.

A branch's backward gives every gradient in both arms; an arm whose adjoint gives none to a
value gives zeros (ad/branches.py), which the gradient's other terms are then added to::

    if c:                           if c:
        g = dy * 2.0                    dx = a + dy * 2.0
    else:                 becomes   else:
        g = np.zeros((3,))              dx = a
    dx = a + g

where the branch's result ``g`` is read by that sum alone, ``a`` is of its shape and dtype
(no broadcast), made before the branch and not written in between: the sum moves into the
arms, as ``a`` itself where the arm gives zeros. The arm that gives ``a`` back shares its
memory; codegen/branches.py copies it where that sharing could be seen. An arm the sum moved
into goes through the sign pass again, with the sum it reads now (signs.py: ``a + ((-p) - q)``
is ``a - (p + q)``, a call fewer; the arms were optimized before the sum moved in).
"""
from __future__ import annotations

import operator
from dataclasses import replace

import numpy as np

from ..ir.analysis import Analysis
from ..ir.branch import arm_tape, branch_of, branch_primitive
from ..ir.tape import Lit, Stmt, Tape, Var
from ..rules.registry import RuleSet
from .dce import dce
from .signs import signs


def sums_in_arms(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    """``tape`` with each such sum made in the arms of its branch (the module docstring)."""
    if not any(branch_of(s) is not None for s in tape.stmts):
        return tape, False
    facts = Analysis(tape)
    outputs = set(facts.outputs)
    stmts = list(tape.stmts)
    gone: set[int] = set()
    for index, stmt in enumerate(tape.stmts):
        if branch_of(stmt) is None:
            continue
        for j, g in enumerate(stmt.outs):
            found = _sum_of(facts, stmts, index, g, outputs)
            if found is None or found in gone:
                continue
            new = _moved(stmts[index], j, stmts[found], g, rules)
            if new is not None:
                stmts[index] = new
                gone.add(found)
    if not gone:
        return tape, False
    return tape.copy(stmts=[s for k, s in enumerate(stmts) if k not in gone]), True


def _sum_of(facts: Analysis, stmts: list[Stmt], index: int, g: Var, outputs: set
            ) -> int | None:
    """The position of the sum ``a + g`` (or ``g + a``) that alone reads the branch's result
    ``g`` (at ``index``), where ``a`` may be read at the branch instead; None if none."""
    readers = facts.readers.get(g, ())
    if g in outputs or len(readers) != 1 or facts.uses[g] != 1 or not g.aval.is_float:
        return None
    at = readers[0]
    s = stmts[at]
    if s.prim.fn is not operator.add or s.prim.inplace or len(s.args) != 2 or s.params \
            or len(s.outs) != 1 or s.out.aval != g.aval:
        return None
    a = s.args[1] if s.args[0] is g else s.args[0]
    if not isinstance(a, Var) or a.aval != g.aval or facts.defined.get(a, index) >= index \
            or facts.written_between({facts.root(a)}, index, at):
        return None
    return at


def _moved(stmt: Stmt, j: int, total: Stmt, g: Var, rules: RuleSet) -> Stmt | None:
    """The branch ``stmt`` whose ``j``-th result is ``total`` (``a + g``): ``a`` an operand
    more, each arm's result ``a`` where it is zeros, else the sum made at the arm's end."""
    branch = branch_of(stmt)
    if not any(_zeros(arm, arm.result[j]) for arm in branch.arms):
        return None
    first = total.args[0] is not g
    a = total.args[0] if first else total.args[1]
    arms = []
    for arm in branch.arms:
        inner = Var(a.aval, hint=a.hint)
        r = arm.result[j]
        body = list(arm.stmts)
        if _zeros(arm, r):
            made = inner
            if isinstance(r, Var):      # the zeros, read by nothing else now
                body = [s for s in body if r not in s.outs] \
                    if sum(u is r for s in body for u in s.uses()) == 0 \
                    and sum(q is r for q in arm.result) == 1 else body
        else:
            made = Var(total.out.aval, hint=total.out.hint, grad_of=total.out.grad_of)
            body.append(total.replace(outs=(made,), args=(inner, r) if first else (r, inner)))
        result = arm.result[:j] + (made,) + arm.result[j + 1:]
        new_arm = arm_tape(arm.name, (*arm.params, a.hint or "a"),
                           [i.var for i in arm.inputs] + [inner], body, result, arm.loc)
        new_arm, signed = signs(new_arm, rules)
        arms.append(dce(new_arm, rules)[0] if signed else new_arm)
    new = replace(branch, then=arms[0], orelse=arms[1])
    names = (*stmt.prim.operands[1:], a.hint or "a")
    outs = stmt.outs[:j] + (total.out,) + stmt.outs[j + 1:]
    return stmt.replace(prim=branch_primitive(new, names), args=(*stmt.args, a), outs=outs,
                        params=tuple((k, new if k == "branch" else v) for k, v in stmt.params))


def _zeros(arm: Tape, r) -> bool:
    """Whether the arm's result ``r`` is zeros: the number 0, or an array of zeros the arm
    makes (``np.zeros``, a 0 filled or broadcast)."""
    if isinstance(r, Lit):
        return _zero(r.value)
    made = next((s for s in arm.stmts if r in s.outs), None)
    if made is None:
        return False
    fn = made.prim.fn
    if fn is np.zeros:
        return True
    if fn is np.full and len(made.args) > 1 and isinstance(made.args[1], Lit):
        return _zero(made.args[1].value)
    if fn is np.broadcast_to and isinstance(made.args[0], Lit):
        return _zero(made.args[0].value)
    return False


def _zero(value) -> bool:
    return np.ndim(value) == 0 and isinstance(value, (int, float, np.number)) \
        and not isinstance(value, bool) and value == 0


__all__ = ["sums_in_arms"]
