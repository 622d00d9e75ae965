"""An arm reads a value made before its branch, not made again (issue 33).

The condition of an ``if`` is often made of what an arm computes again: ``if np.sum(h * w) >
0: h = np.tanh(h * w)``. The arm is a tape of its own (ir/branch.py), so the tape-wide CSE does
not see that its ``h * w`` is the one made for the condition; here such a statement of an arm
(the same primitive, parameters and operands as a statement before the branch, its operands
the branch's operands) becomes an operand more of the branch, as a handwritten ``if`` reads
``t = h * w`` in both places::

    t = h * w                       t = h * w
    if t.sum() > 0:                 if t.sum() > 0:
        h = np.tanh(h * w)   ->         h = np.tanh(t)

Not a view (made again at no cost), nor a value written in place between the two, nor one
the arm writes in place (an arm's inputs are not its own).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.analysis import Analysis
from ..ir.branch import arm_tape, branch_of, branch_primitive
from ..ir.rewrite import substitute
from ..ir.tape import Stmt, Tape, Var
from ..rules.registry import RuleSet
from .arm_saves import _key, _mapped, _pure, _updated


def outer_values_in_arms(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    """``tape`` with each arm reading the values made before its branch that it made again
    (the module docstring)."""
    if not any(branch_of(s) is not None for s in tape.stmts):
        return tape, False
    facts = None
    stmts = list(tape.stmts)
    changed = False
    for index, stmt in enumerate(tape.stmts):
        if branch_of(stmt) is None:
            continue
        facts = facts or Analysis(tape)
        new = _reading(stmt, index, facts)
        if new is not None:
            stmts[index] = new
            changed = True
    return (tape.copy(stmts=stmts), True) if changed else (tape, False)


def _reading(stmt: Stmt, index: int, facts: Analysis) -> Stmt | None:
    """The branch ``stmt`` (at ``index``) with the values its arms make again read from
    before it; None where there is none."""
    made: dict = {}
    for s in facts.tape.stmts[:index]:
        if _pure(s) and not s.prim.view:
            made.setdefault((s.prim, s.params, _key(s.args)), s.out)
    branch = branch_of(stmt)
    found: list[dict[Var, Var]] = []
    outer: list[Var] = []                 # the values read, in the order of the new operands
    for arm in branch.arms:
        same = {i.var: a for i, a in zip(arm.inputs, stmt.args[1:]) if isinstance(a, Var)}
        inner = {}
        written = _updated(arm)     # (an arm's input is not its own to write)
        for s in arm.stmts:
            if not _pure(s) or s.prim.view or s.out in written \
                    or not all(v in same for v in s.uses()):
                continue
            v = made.get((s.prim, s.params, _key(_mapped(s.args, same))))
            if v is None or v.aval != s.out.aval \
                    or facts.written_between({facts.root(v)}, facts.defined[v], index):
                continue
            inner[s.out] = v
            same[s.out] = v             # (what reads it may be made before too)
            outer += [v] if v not in outer else []
        found.append(inner)
    if not outer:
        return None
    arms = []
    for arm, inner in zip(branch.arms, found):
        ins = [Var(v.aval, hint=v.hint) for v in outer]
        by_outer = dict(zip(outer, ins))
        kept = [s for s in arm.stmts if not (s.outs and s.outs[0] in inner)]
        body = substitute(arm.copy(stmts=kept), {b: by_outer[v] for b, v in inner.items()})
        arms.append(arm_tape(arm.name, (*arm.params, *(v.hint or "k" for v in outer)),
                             [i.var for i in arm.inputs] + ins, body.stmts, body.result,
                             arm.loc))
    new = replace(branch, then=arms[0], orelse=arms[1])
    names = (*stmt.prim.operands[1:], *(v.hint or "k" for v in outer))
    return stmt.replace(prim=branch_primitive(new, names), args=(*stmt.args, *outer),
                        params=tuple((k, new if k == "branch" else v) for k, v in stmt.params))


__all__ = ["outer_values_in_arms"]
