"""The forward-mode derivative (JVP) of a branch statement (ir/branch.py): a branch again, on
the same condition, whose arms give the tangents of the results.

For ``r = branch(c, k)`` with arms ``r = then(k)`` and ``r = orelse(k)``::

    tangent:  dot_r = branch(c, k, r, dot_k)
              with arms  dot_r = JVP of then at (k, dot_k)  and  dot_r = JVP of orelse ...

Each tangent arm is the ordinary forward sweep (forward.py) over its forward arm, from the
tangents of the operands that have one; what it reads of the forward branch's results ``r`` is
read from them (operands, where an arm reads them), the other forward statements it reads are
made again in it, as the backward arms do (branches.py). A result an arm does not make from an
operand with a tangent has tangent zero there. The module registers ``jvp_branch`` as forward
mode's structural rule for branches.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.branch import Branch, arm_tape, branch_of, branch_primitive
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import TANGENT, Lit, Stmt, Tape, Var
from .branches import given_results, made_again
from .forward import STRUCTURAL_JVPS, _ForwardSweep, _tangent_rule

RULE = f"{TANGENT}the branch's tangent: each arm's JVP, under the same condition"


def jvp_branch(sweep: _ForwardSweep, stmt: Stmt) -> None:
    """The structural JVP of a branch statement: the tangent branch, whose results are the
    tangents of the branch's float results."""
    branch: Branch = branch_of(stmt)
    operands = stmt.args[1:]
    active = [j for j, a in enumerate(operands) if isinstance(a, Var) and a in sweep.tangent]
    floats = [i for i, o in enumerate(stmt.outs) if o.aval.is_float]
    if not active or not floats:
        return
    ev = sweep.ev
    with ev.at(stmt.loc, RULE):
        dots = [sweep.tangent[operands[j]] for j in active]
        made = [_tangent_arm(sweep, arm, label, dict(zip(active, dots)), floats, stmt.outs)
                for label, arm in zip(("then", "orelse"), branch.arms)]
        read = sorted(set().union(*(r for _, r in made)))
        arms = [given_results(arm, len(operands), len(stmt.outs), read) for arm, _ in made]
        tangent = Branch(*arms, source=branch.source)
        results = ev.emit(branch_primitive(tangent, tuple(arms[0].params)),
                          [stmt.args[0], *operands, *(stmt.outs[i] for i in read),
                           *dots],
                          {"branch": tangent}, None)
    results = results if isinstance(results, tuple) else (results,)
    for i, t in zip(floats, results):
        sweep.tangent[stmt.outs[i]] = t
        sweep.marks[t] = stmt.outs[i]


def _tangent_arm(sweep: _ForwardSweep, arm: Tape, label: str, active: dict[int, Var],
                 floats: list[int], outs: tuple[Var, ...]) -> tuple[Tape, set[int]]:
    """The tangent arm of ``arm``: inputs its forward inputs, the forward branch's results and
    the tangents of the ``active`` inputs (their number -> the tangent outside); results the
    tangents of the ``floats`` results. Also the numbers of the forward results it reads."""
    ev = sweep.ev
    inputs = [i.var for i in arm.inputs]
    dots = {}
    for j, outside in active.items():
        dots[inputs[j]] = Var(inputs[j].aval)
        ev.values.derive(dots[inputs[j]], outside)
    sub = _ForwardSweep(arm, ev, [])
    sub.tangent.update(dots)
    sub.marks.update({t: v for v, t in dots.items()})
    with ev.collect() as made:
        for s in arm.stmts:
            sub.push(s)
        results = [_result_tangent(sub, arm.result[i], outs[i]) for i in floats]
    made = [s.replace(rule=_tangent_rule(s.rule)) for s in made]
    # the forward statements again, under names of their own (the branch's results read)
    given = [Var(o.aval, hint=o.hint) for o in outs]
    for o, g in zip(outs, given):
        ev.values.derive(g, o)
    own = {r: g for r, g in zip(arm.result, given) if isinstance(r, Var) and r not in set(inputs)}
    fresh, remade = made_again(ev, arm.stmts, inputs, own, grad_of=False)
    fresh.update({t: Var(t.aval, hint=t.hint) for t in dots.values()})
    for t in dots.values():
        ev.values.derive(fresh[t], t)
    stmts = [substitute_stmt(s, lambda a: fresh.get(a, a)) for s in remade + made]
    result = tuple(fresh.get(t, t) if isinstance(t, Var) else t for t in results)
    stmts = live(stmts, [r for r in result if isinstance(r, Var)])
    params = tuple(arm.params) + tuple(g.hint or f"r{i}" for i, g in enumerate(given)) + \
        tuple(f"dot_{v.hint}" if v.hint else f"dot_k{j}" for j, v in zip(active, dots))
    uses = {v for s in stmts for v in s.uses()} | set(result)
    tape = arm_tape(label, params, [fresh[v] for v in inputs] + given +
                    [fresh[t] for t in dots.values()], stmts, result, arm.loc)
    tape.primals.update({fresh[t]: fresh.get(p, p) for t, p in sub.marks.items()
                         if t in fresh})
    return tape, {i for i, g in enumerate(given) if g in uses}


def _result_tangent(sub: _ForwardSweep, r: Any, out: Var) -> Any:
    """The tangent of the arm's result ``r`` as the branch's result ``out`` takes it: of its
    shape and dtype, zeros where the arm gives none."""
    t = sub.tangent.get(r) if isinstance(r, Var) else None
    if t is None:       # (a number: a Lit of its type, as ad/branches.py gives one)
        if out.aval.ndim == 0:
            zero = out.aval.dtype.type(0)
            return Lit(zero.item() if out.aval.weak else zero)
        return sub._zeros(out)
    t = sub.linear.fit(t, out.aval)
    if isinstance(t, Var) and (t.aval.shape, t.aval.dtype, t.aval.weak) == \
            (out.aval.shape, out.aval.dtype, out.aval.weak):
        return t
    return sub.emit(np.add, [sub._zeros(out), t], {}) if not out.aval.weak else t


STRUCTURAL_JVPS["branch"] = jvp_branch
