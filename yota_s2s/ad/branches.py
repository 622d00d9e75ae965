"""The derivative of a branch statement (ir/branch.py): a branch again, on the same condition.

For ``r = branch(c, k)`` with arms ``r = then(k)`` and ``r = orelse(k)``::

    backward:  dk = branch(c, k, r, dr)
               with arms  dk = adjoint of then at (k, r, dr)  and  dk = adjoint of orelse ...

Each backward arm is the ordinary reverse sweep (sweep.py) over its forward arm, seeded with
the cotangents of the results; what its adjoint reads of the forward branch's results ``r`` is
read from them (operands of the backward branch, those an arm reads), the other forward statements it reads are made again in it
(an arm is a few statements: what a handwritten backward of an ``if`` does), the others are
left to the passes inside the arms. The condition is the forward's value, read again. An
input that an arm does not differentiate gets zeros there, so that both arms give every
gradient, of one shape and dtype. The module registers ``sweep_branch`` as the engine's
structural rule for branches.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir.branch import Branch, arm_tape, branch_of, branch_primitive
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Input, Lit, Stmt, Tape, Var, tree_atoms
from ..frontend.abstract import ghost
from .sweep import STRUCTURAL_RULES, Sweep, active_from

RULE = "the branch's backward: each arm's adjoint, under the same condition"


def sweep_branch(sweep: Sweep, stmt: Stmt) -> None:
    """The structural rule of a branch statement: the backward branch, whose results are the
    gradients of the operands that need one, added to their adjoints. The statements before
    it whose gradients come from the branch alone (``absorbed``) are swept in its arms: their
    backward runs only on the path that gives them a gradient."""
    branch: Branch = branch_of(stmt)
    taken = absorbed(sweep, stmt)
    defined = {o for s in taken for o in s.outs}
    extra = list(dict.fromkeys(u for s in taken for u in s.uses() if u not in defined
                               and u not in stmt.args[1:]))
    operands = (*stmt.args[1:], *extra)
    wanted = [j for j, a in enumerate(operands) if isinstance(a, Var) and a in sweep.active
              and a.aval.is_float and a not in defined]
    dys = [sweep.adjoint(o) for o in stmt.outs]
    seeds = [i for i, (o, dy) in enumerate(zip(stmt.outs, dys))
             if dy is not None and o.aval.is_float]
    if not wanted or not seeds:
        return
    dy_atoms = [dys[i] if isinstance(dys[i], (Var, Lit)) else Lit(dys[i]) for i in seeds]
    outs = (*stmt.outs, *(o for s in taken for o in s.outs))
    with sweep.ev.at(stmt.loc, RULE):
        made = [_adjoint_arm(sweep, extended(sweep.ev, arm, stmt.args[1:], extra, taken),
                             label, seeds, wanted, dy_atoms, outs)
                for label, arm in zip(("then", "orelse"), branch.arms)]
        read = sorted(set().union(*(r for _, r in made)))
        arms = [given_results(arm, len(operands), len(outs), read) for arm, _ in made]
        back = Branch(*arms, source=branch.source)
        names = tuple(arms[0].params)
        results = sweep.emit(branch_primitive(back, names),
                             [stmt.args[0], *operands, *(outs[i] for i in read),
                              *dy_atoms], {"branch": back})
    results = results if isinstance(results, tuple) else (results,)
    for j, g in zip(wanted, results):
        sweep.accumulate(operands[j], g)


def absorbed(sweep: Sweep, stmt: Stmt) -> list[Stmt]:
    """The primitive statements before the branch ``stmt`` whose results get gradients from
    the branch (or from each other) only: every later use of them is the branch, another of
    them, or a statement not differentiated (the condition), and none is the tape's result
    or has a gradient yet. In forward order."""
    home = sweep.home
    k = next((i for i, s in enumerate(home) if s is stmt), None)
    if k is None or sweep.tape is None:
        return []
    users: dict[Var, list[int]] = {}
    for i, s in enumerate(home[:k + 1]):
        for u in s.uses():
            users.setdefault(u, []).append(i)
    ends = {v for v in tree_atoms(sweep.tape.result) if isinstance(v, Var)}
    taken = {k}
    for i in reversed(range(k)):
        s = home[i]
        if s.prim.emit and s.prim.emit[0] in STRUCTURAL_RULES \
                or not any(o in sweep.active for o in s.outs):
            continue
        if all(o not in ends and o not in sweep.full and o not in sweep.scatter
               and all(j in taken or not any(p in sweep.active for p in home[j].outs)
                       for j in users.get(o, ()))
               for o in s.outs):
            taken.add(i)
    return [home[i] for i in sorted(taken - {k})]


def extended(ev, arm: Tape, operands: tuple, extra: list, taken: list[Stmt]) -> Tape:
    """``arm`` with the ``taken`` statements before its own (an input they make is read from
    them) and the operands they read besides the branch's as inputs after the arm's."""
    if not taken:
        return arm
    inputs = [i.var for i in arm.inputs]
    new = [Var(v.aval, hint=v.hint) for v in extra]
    for n, v in zip(new, extra):
        ev.values.derive(n, v)
    defined = {o for s in taken for o in s.outs}
    inner = {o: i for o, i in zip(operands, inputs) if o not in defined}
    inner.update(zip(extra, new))
    outer = {i: o for o, i in zip(operands, inputs) if o in defined}
    stmts = [substitute_stmt(s, lambda a: inner.get(a, a)) for s in taken] \
        + [substitute_stmt(s, lambda a: outer.get(a, a)) for s in arm.stmts]
    result = tuple(outer.get(r, r) if isinstance(r, Var) else r for r in arm.result)
    return arm_tape(arm.name, tuple(arm.params) + tuple(v.hint or f"a{i}" for i, v in
                                                        enumerate(extra)),
                    inputs + new, stmts, result, arm.loc)


def _adjoint_arm(sweep: Sweep, arm: Tape, label: str, seeds: list[int], wanted: list[int],
                 dy_atoms: list, outs: tuple[Var, ...]) -> tuple[Tape, set[int]]:
    """The backward arm of ``arm``: inputs its forward inputs, the forward branch's results
    (one per result: what the arm's adjoint reads of them is read there, not made again) and
    the results' cotangents; results the gradients of the ``wanted`` inputs. Also the
    numbers of the forward results it reads."""
    ev, rules = sweep.ev, sweep.rules
    inputs = [i.var for i in arm.inputs]
    act = active_from(arm.stmts, {inputs[j] for j in wanted}, rules)
    sub = Sweep(ev, arm, act, primals=sweep.primals, in_region=True)
    cots = []
    for i, atom in zip(seeds, dy_atoms):
        out = arm.result[i]
        cot = Var(out.aval if isinstance(out, Var) else atom.aval, grad_of=out
                  if isinstance(out, Var) else None)
        ev.values[cot] = ghost(cot.aval.shape, cot.aval.dtype) if cot.aval.ndim \
            else cot.aval.dtype.type(0)
        cots.append(cot)
        if isinstance(out, Var) and out in act:
            sub.accumulate(out, cot)
    with ev.collect() as back:
        sub.sweep_all(sub.home)
        grads = [_arm_gradient(sub, inputs[j]) for j in wanted]
    # the forward statements again, under names of their own, then the adjoint's
    given = [Var(o.aval, hint=o.hint) for o in outs]
    for o, g in zip(outs, given):
        ev.values.derive(g, o)
    own = {r: g for r, g in zip((*arm.result, *outs[len(arm.result):]), given)
           if isinstance(r, Var) and r not in set(inputs)}
    fresh, remade = made_again(ev, sub.home, inputs, own)
    stmts = [substitute_stmt(s, lambda a: fresh.get(a, a)) for s in remade + back]
    result = tuple(fresh.get(g, g) if isinstance(g, Var) else g for g in grads)
    stmts = live(stmts, [r for r in result if isinstance(r, Var)])
    params = tuple(arm.params) + tuple(f"d{c.grad_of.hint}" if c.grad_of is not None
                                       and c.grad_of.hint else "dr" for c in cots)
    params = params[:len(inputs)] + tuple(g.hint or f"r{i}" for i, g in enumerate(given)) \
        + params[len(inputs):]
    uses = {v for s in stmts for v in s.uses()} | set(result)
    return (arm_tape(label, params, [fresh[v] for v in inputs] + given + cots, stmts, result,
                     arm.loc), {i for i, g in enumerate(given) if g in uses})


def given_results(arm: Tape, n: int, m: int, read: list[int]) -> Tape:
    """``arm`` (inputs: ``n`` operands, ``m`` forward results, the cotangents) with only the
    forward results of ``read`` as inputs."""
    keep = list(range(n)) + [n + i for i in read] + list(range(n + m, len(arm.inputs)))
    return arm.copy(params=tuple(arm.params[j] for j in keep),
                    inputs=[Input(arm.inputs[j].var, k) for k, j in enumerate(keep)])


def made_again(ev, stmts: list[Stmt], inputs, own: dict | None = None, grad_of: bool = True
               ) -> tuple[dict[Var, Var], list[Stmt]]:
    """``stmts`` made again under values of their own: each old value's new one (``inputs``
    first), and the statements; a value ``own`` gives (a result of the forward branch) is
    read, not made. ``grad_of``: the new values keep what they are the gradient of."""
    fresh = {v: Var(v.aval, hint=v.hint) for v in inputs}
    for v, k in fresh.items():
        ev.values.derive(k, v)
    own = own or {}
    remade = []
    for s in stmts:
        if len(s.outs) == 1 and s.out in own:
            fresh[s.out] = own[s.out]
            continue
        new_outs = tuple(Var(o.aval, hint=o.hint, grad_of=o.grad_of if grad_of else None)
                         for o in s.outs)
        fresh.update(zip(s.outs, new_outs))
        for o, n in zip(s.outs, new_outs):
            ev.values.derive(n, o)
        remade.append(s.replace(outs=new_outs))
    return fresh, remade


def _arm_gradient(sub: Sweep, v: Var) -> Var | Lit:
    """``v``'s complete gradient in an arm (``_gradient``); where the arm gives none to a
    number, the number 0 of its type: the other arm gives a number, not a 0-d array, which
    numba would not unify with it."""
    aval = v.aval
    if aval.ndim == 0 and v not in sub.full and v not in sub.scatter:     # (none given)
        return Lit(aval.dtype.type(0).item() if aval.weak else aval.dtype.type(0))
    return _gradient(sub, v)


def _gradient(sub: Sweep, v: Var) -> Var:
    """``v``'s complete gradient in the arm, as an array of ``v``'s shape and dtype (zeros
    where the arm gives none)."""
    g = sub.adjoint(v)
    aval = v.aval
    dtype = {} if aval.dtype == np.float64 else {"dtype": aval.dtype}
    with sub.ev.at(rule="zero: the arm does not depend on it" if g is None else None):
        if g is not None:
            g = sub.fit(g, aval)
        if isinstance(g, Var) and g.aval.shape == aval.shape and g.aval.dtype == aval.dtype \
                and not g.aval.weak:
            return g
        zeros = sub.emit(sub.rules.lookup(np.zeros), [Lit(aval.shape)], dtype, grad_of=v)
        if g is None:
            return zeros
        return sub.emit(sub.rules.lookup(operator.add), [zeros, g], {}, grad_of=v)


STRUCTURAL_RULES["branch"] = sweep_branch
