"""A backward arm reads what its forward arm made, not made again (issue 33).

A branch's backward is a branch on the same condition (ad/branches.py), each arm the adjoint
of the forward arm, which makes again the forward values it reads (an ``elif``'s condition,
the ``tanh`` whose derivative it needs): the forward arm ran them already, in the same
function. Here each such value becomes a result of the forward branch and an operand of the
backward one::

    if s > 1.0:                         if s > 1.0:
        y = np.tanh(x) * w                  t3 = np.tanh(x)
    else:                                   y = t3 * w
        y = x * s            becomes    else:
    ...                                     y = x * s
    if s > 1.0:                             t3 = x          # (not read: the other arm's)
        t3 = np.tanh(x)                 ...
        dx = dy * w * (1 - t3 * t3)     if s > 1.0:
                                            dx = dy * w * (1 - t3 * t3)

The forward branch's other arm gives a value of the same type it has at hand, read by no one
(an operand or a value it made, of that shape and dtype; for a boolean number the condition):
no array is made for it. A value with no such stand-in, and a view (``x[0]``: made again at no
cost), is made again, as before. Only for a forward and a backward branch of one tape (not
across a loop's steps: there a value kept would be stacked per step).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir.analysis import Analysis
from ..ir.branch import arm_tape, branch_of, branch_primitive
from ..ir.rewrite import substitute
from ..ir.tape import Lit, Stmt, Tape, Var
from ..rules.outside import external
from ..rules.registry import RuleSet

STRUCTURES = (("branch",), ("loop",), ("while",), ("unwind",))


def saved_in_arms(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    """``tape`` with each backward branch reading the values its forward branch made (the
    module docstring)."""
    branches = [k for k, s in enumerate(tape.stmts) if branch_of(s) is not None]
    if len(branches) < 2:
        return tape, False
    stmts = list(tape.stmts)
    changed = False
    for i in branches:
        for j in branches:
            if j <= i or stmts[j].args[0] is not stmts[i].args[0] \
                    or not isinstance(stmts[i].args[0], Var):
                continue
            pair = _saved(stmts[i], stmts[j])
            if pair is not None:
                stmts[i], stmts[j] = pair
                changed = True
    return (tape.copy(stmts=stmts), True) if changed else (tape, False)


def _saved(forward: Stmt, backward: Stmt) -> tuple[Stmt, Stmt] | None:
    """The pair with the values the backward arms make again read from the forward branch;
    None where there is none."""
    fb, bb = branch_of(forward), branch_of(backward)
    found = [_matches(forward, fa, backward, ba) for fa, ba in zip(fb.arms, bb.arms)]
    keep: list[tuple[int, Var, Var]] = []       # (arm, the forward value, the backward one)
    cond = forward.args[0]
    for k, matched in enumerate(found):
        other = fb.arms[1 - k]
        for b, f in matched.items():
            if _stand_in(other, f, cond) is not None and not any(f is g for _, g, _ in keep):
                keep.append((k, f, b))
    if not keep:
        return None
    f_arms, b_arms = list(fb.arms), list(bb.arms)
    new_outs, new_ins = [], []
    read_cond = [None, None]        # each forward arm's input for the condition, where read
    for k, f, b in keep:
        out = Var(f.aval, hint=f.hint)
        new_outs.append(out)
        for side in (0, 1):
            arm = f_arms[side]
            r = f if side == k else _stand_in(fb.arms[side], f, cond)
            if r is cond:
                if read_cond[side] is None:
                    read_cond[side] = Var(cond.aval, hint=cond.hint)
                r = read_cond[side]
            f_arms[side] = arm.copy(result=(*arm.result, r))
            barm = b_arms[side]
            inner = Var(b.aval, hint=b.hint)
            stmts = barm.stmts
            if side == k:
                stmts = [s for s in barm.stmts if b not in s.outs]
                barm = substitute(barm.copy(stmts=stmts), {b: inner})
            b_arms[side] = arm_tape(barm.name, (*barm.params, f.hint or "s"),
                                    [i.var for i in barm.inputs] + [inner], barm.stmts,
                                    barm.result, barm.loc)
        new_ins.append(out)
    names, args = tuple(forward.prim.operands[1:]), forward.args
    if any(read_cond):          # the condition, an operand more: an input of each arm
        for side in (0, 1):
            arm = f_arms[side]
            inner = read_cond[side] or Var(cond.aval, hint=cond.hint)
            f_arms[side] = arm_tape(arm.name, (*arm.params, cond.hint or "c"),
                                    [i.var for i in arm.inputs] + [inner], arm.stmts,
                                    arm.result, arm.loc)
        names, args = (*names, cond.hint or "c"), (*args, cond)
    fnew = replace(fb, then=f_arms[0], orelse=f_arms[1])
    bnew = replace(bb, then=b_arms[0], orelse=b_arms[1])
    forward = forward.replace(
        prim=branch_primitive(fnew, names), args=args,
        outs=(*forward.outs, *new_outs),
        params=tuple((p, fnew if p == "branch" else v) for p, v in forward.params))
    backward = backward.replace(
        prim=branch_primitive(bnew, (*backward.prim.operands[1:],
                                     *(o.hint or "s" for o in new_outs))),
        args=(*backward.args, *new_ins),
        params=tuple((p, bnew if p == "branch" else v) for p, v in backward.params))
    return forward, backward


def _matches(forward: Stmt, fa: Tape, backward: Stmt, ba: Tape) -> dict[Var, Var]:
    """The values of the backward arm ``ba`` made by statements that the forward arm ``fa``
    has (the same primitive, parameters and operands, through the branches' operands and the
    forward branch's results) and that the backward arm reads after them: backward value ->
    forward value."""
    same: dict[Var, object] = {}
    f_in = [i.var for i in fa.inputs]
    for i, a in zip(ba.inputs, backward.args[1:]):
        if isinstance(a, Var) and a in forward.args[1:]:
            same[i.var] = f_in[list(forward.args[1:]).index(a)]
        elif isinstance(a, Var) and a in forward.outs:
            same[i.var] = fa.result[forward.outs.index(a)]
    made = {}
    for s in fa.stmts:
        if _pure(s):
            made.setdefault((s.prim, s.params, _key(s.args)), s)
    matched: dict[Var, Var] = {}
    for s in ba.stmts:
        if not _pure(s) or not all(v in same for v in s.uses()):
            continue
        args = _mapped(s.args, same)
        t = made.get((s.prim, s.params, _key(args)))
        if t is None or any(o.aval != p.aval for o, p in zip(s.outs, t.outs)):
            continue
        for o, p in zip(s.outs, t.outs):
            same[o] = p
            matched[o] = p
    if not matched:
        return {}
    # those read by what is made again no more: the backward arm's other statements, results
    kept = {s.outs[0] for s in ba.stmts if s.outs and s.outs[0] in matched}
    read = {v for s in ba.stmts if not (s.outs and s.outs[0] in kept) for v in s.uses()} \
        | {r for r in ba.result if isinstance(r, Var)}
    # not a value an in-place update writes after it is made, in either arm
    written = _updated(fa) | _updated(ba)
    # not a view (``x[0]``, ``x.T``): made again at no cost, and nothing to keep
    views = {s.outs[0] for s in fa.stmts if s.outs and s.prim.view}
    return {b: f for b, f in matched.items() if b in read and isinstance(f, Var)
            and f not in written and b not in written and f not in views}


def _updated(arm: Tape) -> set[Var]:
    facts = Analysis(arm)
    return {m for r in facts.updates for m in facts.members.get(r, [r])}


def _pure(s: Stmt) -> bool:
    """A statement of one result that reads its operands only: not an effect (a random
    draw), an update, a value read from outside, nor a region, branch or while."""
    p = s.prim
    return len(s.outs) == 1 and not (p.effect or p.inplace or p.fn is external
                                     or p.emit[:1] in STRUCTURES)


def _mapped(tree, same):
    if isinstance(tree, Var):
        return same.get(tree, tree)
    if isinstance(tree, tuple):
        return tuple(_mapped(t, same) for t in tree)
    if isinstance(tree, list):
        return [_mapped(t, same) for t in tree]
    return tree


def _key(tree):
    """A hashable stand-in for operands: a Var itself, a literal by its exact value."""
    if isinstance(tree, Var):
        return ("v", id(tree))
    if isinstance(tree, Lit):
        return tree
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(_key(t) for t in tree))
    return (type(tree), repr(tree))


def _stand_in(arm: Tape, f: Var, cond: Var | None = None):
    """What the arm ``arm`` gives where the other gives ``f``: a value it has of ``f``'s
    type (an input, a value it made; not one an in-place update makes), or for a boolean
    number the branch's condition ``cond`` (returned as is: the caller makes it an operand
    more of the branch); None where it has none. Never a literal: a module traced again (a higher order) finds a traced
    value in both arms, or keeps a guard."""
    aval = f.aval
    for v in [i.var for i in arm.inputs] + [o for s in arm.stmts if not s.prim.inplace
                                           for o in s.outs]:
        if v.aval == aval:
            return v
    if cond is not None and cond.aval == aval:
        return cond
    return None


__all__ = ["saved_in_arms"]
