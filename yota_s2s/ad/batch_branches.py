"""The batching of a branch statement (``ys.vmap``, ir/branch.py).

Where the condition is the same for every example (it reads nothing batched), the batched
statement is a branch again, on that condition, each arm batched by the same rules
(ad/batching.py) with the batched operands as batched inputs; a result one arm gives batched
and the other not is lifted in the second (a copy per example), so both give one shape.

Where the condition differs per example, each example takes its own arm: both arms are
batched inline, on every example, and each result is the select
``np.where(cond[:, None, ...], then, orelse)`` (the values an arm computes for the examples
that do not take it are never read: a ``nan`` there is discarded, not multiplied). An arm that
may raise on values it was not written for (a linear solve of another example's singular
matrix, an index computed per example) is refused by name. Registered in
``batching.STRUCTURAL`` under ``"branch"``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import NoRuleError
from ..ir.branch import Branch, branch_of, branch_primitive
from ..ir.tape import Lit, Stmt, Tape, Var
from .batching import STRUCTURAL, Batching


def batch_branch(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    """The batched statement(s) of the branch ``stmt`` (its operands ``args``, batched where
    ``flags``)."""
    branch: Branch = branch_of(stmt)
    if flags[0]:
        return _select(outer, stmt, branch, args)
    # (each arm's inputs are Vars of its own: the else arm's batched ones are its own too)
    batched = [{i.var for i, flag in zip(arm.inputs, flags[1:]) if flag} for arm in branch.arms]
    lift: set[int] = set()
    while True:
        arms = [_arm(outer, arm, inputs, lift) for arm, inputs in zip(branch.arms, batched)]
        more = {k for k, (a, b) in enumerate(zip(arms[0][1], arms[1][1])) if a != b} - lift
        if not more:
            break
        lift |= more
    new = Branch(arms[0][0], arms[1][0], source=branch.source)
    outs = outer.ev.emit(branch_primitive(new, stmt.prim.operands[1:]), list(args),
                         {"branch": new}, None)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for out, flag in zip(outs, arms[0][1]):
        if flag:
            outer.batched.add(out)
    return outs


def _arm(outer: Batching, arm: Tape, batched: set[Var], lift: set[int]
         ) -> tuple[Tape, list[bool]]:
    """``arm`` batched for its ``batched`` inputs (a tape of its own), and which of its
    results are batched; the results numbered in ``lift`` are lifted at its end."""
    size = outer.size
    sub = Batching.inside(outer.rules, arm, size)
    with sub.ev.collect() as stmts:
        inputs = sub.replay(arm, batched)
        results = []
        for k, r in enumerate(arm.result):
            value = sub.new.get(r, r) if isinstance(r, Var) else r
            if k in lift and not (isinstance(value, Var) and value in sub.batched):
                value = sub.lifted(value)
            results.append(value)
    flags = [isinstance(r, Var) and r in sub.batched for r in results]
    tape = arm.copy(inputs=inputs, stmts=list(stmts), result=tuple(results),
                    hints=sub.named(stmts), primals={}, folded={})
    return tape, flags


def _select(outer: Batching, stmt: Stmt, branch: Branch, args: tuple) -> tuple:
    """Both arms on every example, inline, and each result selected per example (numpy's
    floating-point warnings off while the example batch is computed: an arm's values for the
    examples that do not take it are not read)."""
    with np.errstate(all="ignore"):
        return _selected(outer, stmt, branch, args)


def _selected(outer: Batching, stmt: Stmt, branch: Branch, args: tuple) -> tuple:
    cond, operands = args[0], args[1:]
    values = []
    for arm in branch.arms:
        for s in arm.stmts:
            reason = _unsafe(s, arm)
            if reason:
                where = stmt.loc.short if stmt.loc else "the if"
                raise NoRuleError(
                    f"vmap: the if at {where} (`{branch.source}`) decides per example, so each "
                    f"arm would run on every example, and an arm {reason}", s.loc,
                    "Make the condition the same for every example (a value not batched), or "
                    "call vmap on a function without this if (np.where of the two values, "
                    "each safe to compute for every example).")
        for inp, a in zip(arm.inputs, operands):
            outer.new[inp.var] = a
        for s in arm.stmts:
            with outer.ev.at(s.loc, s.rule):
                outer.push(s)
        values.append([outer._atom(r) for r in arm.result])
    outs = []
    for out, a, b in zip(stmt.outs, *values):
        a, b = (v if isinstance(v, Var) and v in outer.batched else outer.lifted(v)
                for v in (a, b))
        shape = (outer.size,) + (1,) * out.aval.ndim
        picked = outer.emit(np.reshape, [cond, Lit(shape)], {}) if out.aval.ndim else cond
        outs.append(outer.emit(np.where, [picked, a, b], {}))
        outer.batched.add(outs[-1])
    return tuple(outs)


def _unsafe(stmt: Stmt, arm: Tape) -> str | None:
    """Why ``stmt`` may raise on an example whose arm it is not (None: it computes a number
    for any values, a nan or an inf at worst)."""
    module = getattr(stmt.prim.fn, "__module__", "") or ""
    if module.startswith(("numpy.linalg", "scipy")):
        return f"calls {stmt.prim.name}, which may raise on another example's values"
    if stmt.prim.emit[:1] == ("getitem",) and any(
            isinstance(a, Var) and a.aval.dtype.kind in "iub" for a in stmt.args[1:]):
        return f"indexes with a value computed per example ({stmt.prim.name})"
    return None


STRUCTURAL["branch"] = batch_branch
