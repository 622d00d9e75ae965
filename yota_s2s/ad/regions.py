"""The derivative of a loop region (ir/region.py): a region again, running backwards.

For ``c = loop(init, k)`` with body ``c_out = step(t, c_in, k)``::

    forward:  the same loop, which also saves each value the backward step reads into a
              stack of its own, ``H[t] = h`` (a carried array that starts as zeros, made by
              the loop, written in place: one T x shape array per saved quantity)
    backward: for t in reversed(range(T)):
                  h = H[t]                          # what the step's adjoint reads
                  dc_in, dk += adjoint of the step at (dc_out)
              carried: the cotangents of the carried values (starting as the gradients of the
              region's results) and one accumulator per invariant that needs a gradient

The step's adjoint is the ordinary reverse sweep (sweep.py) over the body's statements,
seeded with the carried cotangents; a region inside the body is differentiated the same way
(its saved stacks become values of the outer step, saved in turn). The backward region is an
ordinary region, so the plain module can be differentiated again.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..frontend.abstract import ghost
from ..ir.region import EMPTY, Loop, loop_of, loop_primitive
from ..ir.tape import ACCUMULATE, Aval, Input, Lit, Stmt, Tape, Var
from ..ir.values import to_tree
from ..rules.indexing import index_add, setitem_
from .sweep import STRUCTURAL_RULES, Sweep, active_from

SAVED = "saved by the forward loop for the backward loop"
# A value of a step this large (elements) or larger, made by ``cheap`` primitives from values
# saved anyway, may be made again by the backward step instead of saved (_rematerialized); a
# smaller one is saved: making it again costs a call each step, saving it little memory.
REMAKE_MIN = 512


def sweep_region(sweep, stmt: Stmt) -> None:
    ev, rules = sweep.ev, sweep.rules
    loop: Loop = loop_of(stmt)
    body = loop.body
    dys = [sweep.adjoint(o) for o in stmt.outs]
    outer = dict(zip(loop.operand_vars(), stmt.args))
    seeds = {v for v, a in outer.items() if isinstance(a, Var) and a in sweep.active}
    while True:                     # a carried value is active once any step makes it so
        act = active_from(body.stmts, seeds, rules)
        more = {c for c, o in zip(loop.carried, body.result) if o in act} - seeds
        if not more:
            break
        seeds |= more
    carried = [c for c in loop.carried if c in seeds]
    if not carried and not any(k in seeds for k in loop.invariants):
        return

    sub = Sweep(ev, body, act, primals=sweep.primals, in_region=True)
    sub.find_cancellations()    # terms that cancel within one step (RuleSet.cancels)
    outer_stmts, ev.stmts = ev.stmts, []
    cot: dict[Var, Var] = {}        # carried c -> its cotangent at the end of a step
    for c, o in zip(loop.carried, body.result):
        if c in seeds:
            cot[c] = Var(c.aval, grad_of=c)
            ev.values[cot[c]] = _zeros(c.aval)
            if isinstance(o, Var) and o in act:
                sub.full[o] = cot[c]
    sub.sweep_all(sub.home)             # (a region in the body keeps its place)
    ev.loc_override = stmt.loc
    cot_out: dict[Var, Any] = {}
    for c in cot:
        ev.rule_text = "the cotangent of the value carried into the step"
        g = sub.adjoint(c)
        g = sub.fit(g, c.aval) if g is not None else sub.emit(
            rules.lookup(np.zeros), [Lit(c.aval.shape)], _dtype(c.aval), grad_of=c)
        cot_out[c] = g
    acc_in: dict[Var, Var] = {}
    acc_out: dict[Var, Any] = {}
    for k in loop.invariants:
        parts, total = sub.scatter.pop(k, []), sub.full.pop(k, None)
        if not parts and total is None:
            continue
        acc_in[k] = buf = Var(k.aval, grad_of=k)
        ev.values[buf] = _zeros(k.aval)
        for key, dy, s in parts:
            ev.loc_override, ev.rule_text = s.loc, "getitem a: da[key] += dy"
            buf = sub.emit(rules.lookup(index_add), [buf, key, sub.fit(dy, s.out.aval)], {},
                           grad_of=k)
        if total is not None:
            ev.rule_text = ACCUMULATE
            buf = sub.emit(rules.lookup(operator.add), [buf, sub.fit(total, k.aval)], {},
                           grad_of=k)
        acc_out[k] = buf
    back = ev.stmts
    ev.stmts = outer_stmts
    if _accumulator_loop(sweep, stmt, sub, back, cot, cot_out, acc_in, acc_out, dys):
        return

    # what the backward step reads of the forward step: saved per step, or an invariant
    made_fwd = {v for s in sub.home for v in s.outs} | set(loop.carried)
    made_back = {v for s in back for v in s.outs}
    reads: dict[Var, None] = {}
    for s in back:
        for v in s.uses():
            if v in made_fwd and v not in made_back:
                reads[v] = None
    for g in [*cot_out.values(), *acc_out.values()]:
        if isinstance(g, Var) and g in made_fwd and g not in made_back:
            reads[g] = None
    index = loop.index
    fwd_stmts = list(sub.home)
    # a row of an invariant (``xs[t]``) is read again, not saved
    producer = {o: s for s in fwd_stmts for o in s.outs}
    cheap: dict[Var, bool] = {}

    def again(v: Any) -> bool:
        """Made again in the backward step rather than saved: a row of an invariant, an index
        computed from the step's (``x[(i + 1) % n]``), a number computed from those (the
        step size ``dt / 6.0`` of ``for dt in dts``)."""
        if not isinstance(v, Var) or v is index or v in loop.invariants:
            return True
        if v not in cheap:
            made = producer.get(v)
            cheap[v] = made is not None and (
                made.prim.fn is operator.getitem or
                v.aval.ndim == 0 and made.prim.ufunc is not None
            ) and all(again(u) for u in made.uses())
        return cheap[v]
    # values made again from saved ones (after those are read back), where it saves memory
    rematerialized = _rematerialized(reads, again, producer, loop)
    remat = [s for s in fwd_stmts if any(o in rematerialized for o in s.outs)]
    remade = {v for v in reads if again(v)} | \
        {u for s in remat for u in s.uses() if u not in rematerialized and again(u)}
    for v in list(remade):
        stack = [v]
        while stack:
            u = stack.pop()
            if u in producer:
                remade.add(u)
                stack += [w for w in producer[u].uses() if w not in remade]
    prologue = [s for s in fwd_stmts if any(o in remade for o in s.outs)]
    remade |= rematerialized
    for v in remade:
        reads.pop(v, None)
    for s in remat:             # what a value made again reads: saved in its stead
        for u in s.uses():
            if u in made_fwd and u not in remade:
                reads[u] = None
    restore: list[Stmt] = []    # the saved values read back, before what is made from them
    names = tuple(body.params)
    hint_of = body.hint_of
    # one stack per saved value; a carried value read both before and after the step (the
    # state h and the new state) takes one stack of length + 1 rows, as a handwritten BPTT
    # keeps its states: the step at t reads its state at row t and writes the next at t + 1
    # (the other way round in a loop that counts down)
    groups: list[tuple[str, int, list]] = []      # (name, rows, [(var, row offset, first)])
    for c, o in zip(loop.carried, body.result):
        if c in reads and isinstance(o, Var) and o in reads and o not in loop.carried:
            ahead = (0, 1) if not loop.reverse else (1, 0)
            groups.append((_stack_name(hint_of(c) or "v"), loop.length + 1,
                           [(c, ahead[0], True), (o, ahead[1], False)]))
            del reads[c], reads[o]
    for v in reads:
        suffix = "_prev" if v in loop.carried else ""
        groups.append((_stack_name(hint_of(v) or "v") + suffix, loop.length,
                       [(v, 0, v in loop.carried)]))
    shifted = {}

    def row(offset: int, into: list, rule: str | None) -> Any:
        if not offset:
            return index
        key = (offset, id(into))
        if key not in shifted:
            shifted[key] = Var(index.aval)
            ev.values[shifted[key]] = offset
            into.append(Stmt((shifted[key],), rules.lookup(operator.add),
                             (index, Lit(offset)), (), stmt.loc, rule))
        return shifted[key]

    stacks_in, stacks_out, stack_args, stack_names = [], [], [], []
    first, last = [], []
    for base, rows, saves in groups:
        v0 = saves[0][0]
        aval = Aval((rows, *v0.aval.shape), v0.aval.dtype)
        s_in, s_b = Var(aval, hint=base), Var(aval, hint=base)
        ev.values[s_in] = ev.values[s_b] = ghost(aval.shape, aval.dtype)
        current = s_in
        for v, offset, before in saves:
            into = first if before else last
            at = row(offset, into, None)
            s_out = Var(aval, hint=base)
            ev.values[s_out] = ev.values[s_in]
            into.append(Stmt((s_out,), rules.lookup(setitem_), (current, at, v), (), stmt.loc,
                             None))
            current = s_out
            at = row(offset, restore, SAVED)
            python = {"f": float, "c": complex}.get(v.aval.dtype.kind) if v.aval.weak else None
            read = Var(Aval((), v.aval.dtype)) if python else v
            ev.values.derive(read, v, python and aval.dtype.type)
            restore.append(Stmt((read,), rules.lookup(operator.getitem), (s_b, at), (), stmt.loc,
                                SAVED))
            if python:          # a Python float saved in a float64 stack: a Python float again
                restore.append(Stmt((v,), rules.lookup(python), (read,), (), stmt.loc, SAVED))
        stacks_in.append(s_in)
        stacks_out.append(current)
        stack_args.append(s_b)
        stack_names.append(base)
    fwd_stmts = first + fwd_stmts + last
    prologue += restore + remat
    # the forward region, saving
    n = loop.ncarry
    fwd_inputs = [Input(index, 0)] + [Input(c, i + 1) for i, c in enumerate(loop.carried)] + \
        [Input(s, n + 1 + i) for i, s in enumerate(stacks_in)] + \
        [Input(k, n + 1 + len(stacks_in) + i) for i, k in enumerate(loop.invariants)]
    fwd_params = names[:1 + n] + tuple(stack_names) + names[1 + n:]
    fwd_body = body.copy(inputs=fwd_inputs, stmts=fwd_stmts, params=fwd_params,
                         result=tuple(body.result) + tuple(stacks_out),
                         owned=body.owned | frozenset(stacks_in))
    fwd_loop = Loop(fwd_body, loop.length, n + len(stacks_in),
                    fresh=tuple(loop.fresh) + (EMPTY,) * len(stacks_in), reverse=loop.reverse,
                    source=loop.source)
    fwd_prim = loop_primitive(fwd_loop, fwd_params[1:])
    stacks = tuple(Var(s.aval, hint=s.hint) for s in stacks_in)
    fwd = Stmt(tuple(stmt.outs) + stacks, fwd_prim, stmt.args, (("loop", fwd_loop),), stmt.loc,
               stmt.rule)
    for v in stacks:            # (nothing decides on a saved value: its example is zeros)
        ev.values[v] = ghost(v.aval.shape, v.aval.dtype)
    where = next(i for i, s in enumerate(sweep.home) if s is stmt)
    sweep.home[where] = fwd

    # the backward region
    read_back = {u for s in prologue + back for u in s.uses()} | \
        {g for g in [*cot_out.values(), *acc_out.values()] if isinstance(g, Var)}
    invariants = [k for k in loop.invariants if k in read_back]
    for k in invariants:
        reads.pop(k, None)
    # a cotangent the step passes on unchanged (that of a running sum) is an invariant
    steady = [c for c in cot if cot_out[c] is cot[c]]
    dinit = {c: dys[loop.carried.index(c)] for c in cot}
    for c in steady:
        if dinit[c] is None:
            dinit[c] = sub.emit(rules.lookup(np.zeros), [Lit(c.aval.shape)], _dtype(c.aval),
                                grad_of=c)
        del cot_out[c]
    held = {c: cot.pop(c) for c in steady}
    cvars = list(cot.values()) + list(acc_in.values())
    b_inputs = [Input(index, 0)] + [Input(v, i + 1) for i, v in enumerate(cvars)] + \
        [Input(k, 1 + len(cvars) + i)
         for i, k in enumerate(list(held.values()) + invariants + stack_args)]
    pname = {k: p for k, p in zip(loop.invariants, names[1 + n:])}
    cname = {c: p for c, p in zip(loop.carried, names[1:1 + n])}
    b_params = (names[0],) + tuple("d" + cname[c] for c in cot) + \
        tuple("d" + pname[k] for k in acc_in) + tuple("d" + cname[c] for c in held) + \
        tuple(pname[k] for k in invariants) + \
        tuple(s.hint for s in stack_args)
    b_result = tuple(to_tree(cot_out[c]) for c in cot) + tuple(to_tree(acc_out[k]) for k in acc_in)
    b_body = Tape(name="step_grad", params=b_params, inputs=b_inputs, stmts=prologue + back,
                  result=b_result, loc=body.loc,
                  primals={**body.primals, **{v: sweep.primals[v] for v in made_back
                                              if v in sweep.primals},
                           **_carried_primals(loop, cot)})
    fresh = tuple(dinit[c] is None for c in cot) + (True,) * len(acc_in)
    b_body.owned = frozenset(v for v, f in zip(cvars, fresh) if f)
    b_loop = Loop(b_body, loop.length, len(cvars), fresh=fresh, reverse=not loop.reverse,
                  source=loop.source)
    operands = [to_tree(dinit[c]) for c in cot if dinit[c] is not None]
    operands += [to_tree(dinit[c]) for c in held] + [outer[k] for k in invariants] + list(stacks)
    ev.loc_override, ev.rule_text = stmt.loc, "the loop's backward: its step's adjoint, reversed"
    b_prim = loop_primitive(b_loop, b_params[1:])
    # the gradients' examples are zeros: nothing decides on a gradient's value, and running
    # the loop here would make compile time grow with the trip count
    primal = [outer.get(c) for c in cot] + [outer[k] for k in acc_in]
    outs = tuple(Var(Aval.of(_zeros_like(ev.values[v])),
                     grad_of=p if isinstance(p, Var) else None) for v, p in zip(cvars, primal))
    for v, o in zip(cvars, outs):
        ev.values[o] = _zeros_like(ev.values[v])
    ev.stmts.append(Stmt(outs, b_prim, tuple(operands), (("loop", b_loop),), stmt.loc,
                         ev.rule_text))
    for c, g in zip(cot, outs[:len(cot)]):
        init = outer.get(c)
        if isinstance(init, Var) and init in sweep.active:
            sweep.accumulate(init, g)
    for c in held:
        init = outer.get(c)
        if isinstance(init, Var) and init in sweep.active:
            sweep.accumulate(init, sweep.fit(dinit[c], init.aval))
    for k, g in zip(acc_in, outs[len(cot):]):
        if outer[k] in sweep.active:
            sweep.accumulate(outer[k], sweep.fit(g, outer[k].aval))


def _rematerialized(reads: dict, again, producer: dict, loop: Loop) -> set:
    """The values the backward step makes again (with what they are made from, through
    ``cheap`` primitives: ``np.roll``, ``+``, ``-``) from values saved anyway or saved in
    their stead, where that saves memory: the centred differences of a stencil,
    ``np.roll(f, -1) - np.roll(f, 1)`` along two axes, are two stacks of fields, where the
    field ``f`` they are made from is one. Values of fewer than ``REMAKE_MIN`` elements are
    saved: making them again costs a call each, saving them little."""
    sources: dict[Var, set] = {}        # value -> the values it is made from, saved
    chain: dict[Var, set] = {}          # value -> the values made again for it

    def walk(v: Any) -> bool:
        if v in chain:
            return True
        made = producer.get(v)
        if made is None or not made.prim.cheap or len(made.outs) != 1 or v.aval.ndim == 0 \
                or v.aval.size < REMAKE_MIN:
            return False
        found, inner = set(), {v}
        for u in made.uses():
            if again(u):
                continue
            if u in reads or u in loop.carried or not walk(u):
                found.add(u)
            else:
                found |= sources[u]
                inner |= chain[u]
        sources[v], chain[v] = found, inner
        return True

    candidates = [v for v in reads if not again(v) and v not in loop.carried and walk(v)]

    def size(vs) -> int:
        return sum(v.aval.size * v.aval.dtype.itemsize for v in vs)

    kept = [v for v in reads if v not in candidates and not again(v)]
    instead = set(kept).union(*(sources[v] for v in candidates))
    if candidates and size(instead) < size(kept + candidates):
        return set().union(*(chain[v] for v in candidates))
    done: set = set()
    for v in candidates:            # one by one: those made of values saved anyway
        if sources[v] <= set(kept) | {c for c in reads if c is not v and c not in done}:
            done |= chain[v]
    return done


def _accumulator_loop(sweep, stmt: Stmt, sub, back: list[Stmt], cot: dict, cot_out: dict,
                      acc_in: dict, acc_out: dict, dys: list) -> bool:
    """An *accumulator loop*: every carried value that needs a gradient is a running sum
    (``s = s + e``, ``e`` reading no carried value that needs one), so its cotangent is the
    same in every step (``cot_out[c] is cot[c]``) and each step's adjoint is linear in it.
    Then nothing is saved and no loop runs backwards: each step's adjoint runs right after
    the step, in the same loop, and the invariants' gradients are sums the loop carries::

        for i in range(n):
            t = x[(i + 1) % n]
            t2 = t * t
            s = s + x[i] * t2
            dx[(i + 1) % n] += x[i] * 2.0 * t       # the adjoint, at ds = 1.0 (folded)
            dx[i] += t2

    The sums' cotangents are known before the loop where they are constants (``s`` is the
    result: 1.0); else, for one scalar sum (``loss = s ** 2`` after the loop), the loop adds
    up the adjoint at ``ds = 1.0`` and the gradients are scaled once after it
    (``dx = ds * dx_part1``). Not for several sums whose cotangents come after the loop (the
    two loops run then), nor for a step with a region of its own, nor for a region inside
    another's step (the enclosing step's adjoint would read the sums: a stack of them, one
    gradient of every invariant per step). Replaces the region with the fused one and
    returns True; False where the loop is not one."""
    ev, rules = sweep.ev, sweep.rules
    loop: Loop = loop_of(stmt)
    body = loop.body
    if sweep.in_region or not cot or any(cot_out[c] is not cot[c] for c in cot) \
            or any(loop_of(s) is not None or s.prim.inplace for s in sub.home):
        return False
    dinit = {c: dys[loop.carried.index(c)] for c in cot}
    if any(d is None for d in dinit.values()):
        return False
    constant = not any(isinstance(d, Var) for d in dinit.values())
    if not constant and (len(cot) != 1 or next(iter(cot)).aval.shape != ()):
        return False
    # the step, then its adjoint; the sums' cotangents are invariants of numbers (folded)
    n, names = loop.ncarry, tuple(body.params)
    pname = dict(zip(loop.invariants, names[1 + n:]))
    cname = dict(zip(loop.carried, names[1:1 + n]))
    accs = list(acc_in)
    seeds = [to_tree(d) if constant else Lit(1.0) for d in dinit.values()]
    carried = loop.carried + [acc_in[k] for k in accs]
    inputs = [Input(loop.index, 0)] + [Input(v, i + 1) for i, v in enumerate(carried)] + \
        [Input(v, 1 + len(carried) + i) for i, v in enumerate(loop.invariants + list(cot.values()))]
    params = names[:1 + n] + tuple("d" + pname[k] for k in accs) + names[1 + n:] + \
        tuple("d" + cname[c] for c in cot)
    made_back = {v for s in back for v in s.outs}
    fused_body = body.copy(inputs=inputs, stmts=list(sub.home) + back, params=params,
                           result=tuple(body.result) + tuple(to_tree(acc_out[k]) for k in accs),
                           owned=body.owned | frozenset(acc_in[k] for k in accs),
                           primals={**body.primals, **{v: sweep.primals[v] for v in made_back
                                                       if v in sweep.primals}})
    fused = Loop(fused_body, loop.length, len(carried),
                 fresh=tuple(loop.fresh) + (True,) * len(accs), reverse=loop.reverse,
                 source=loop.source)
    outer = dict(zip(loop.operand_vars(), stmt.args))
    grads = tuple(Var(k.aval, grad_of=outer[k] if isinstance(outer[k], Var) else None)
                  for k in accs)
    for g, k in zip(grads, accs):
        ev.values[g] = _zeros(k.aval)
    where = next(i for i, s in enumerate(sweep.home) if s is stmt)
    sweep.home[where] = Stmt(tuple(stmt.outs) + grads, loop_primitive(fused, params[1:]),
                             tuple(stmt.args) + tuple(seeds), (("loop", fused),), stmt.loc,
                             stmt.rule)
    ev.loc_override, ev.rule_text = stmt.loc, "a running sum's first value: the sum's gradient"
    for c, d in dinit.items():
        init = outer.get(c)
        if isinstance(init, Var) and init in sweep.active:
            sweep.accumulate(init, sweep.fit(d, init.aval))
    (ds,) = dinit.values() if not constant else (None,)
    for k, g in zip(accs, grads):
        if outer[k] in sweep.active:
            if ds is not None:
                ev.rule_text = "the loop's adjoint at ds = 1.0, scaled by ds"
                g = sweep.emit(rules.lookup(operator.mul), [ds, g], {}, grad_of=outer[k])
            sweep.accumulate(outer[k], sweep.fit(g, outer[k].aval))
    return True


def _carried_primals(loop: Loop, cot: dict[Var, Var]) -> dict[Var, Var]:
    """A carried cotangent, as a step begins, is the gradient of the value the forward step
    carried out (``dh`` of the new ``h``): named so, a step's ``dh = dh + ...`` reads as one
    running sum (ir/names.py)."""
    return {cot[c]: o for c, o in zip(loop.carried, loop.body.result)
            if c in cot and isinstance(o, Var)}


def _concrete(ev, atom: Any) -> Any:
    if isinstance(atom, tuple):
        return tuple(_concrete(ev, a) for a in atom)
    return ev.values[atom] if isinstance(atom, Var) else atom.value


def _zeros_like(value: Any) -> Any:
    return ghost(value.shape, value.dtype) if isinstance(value, np.ndarray) else type(value)(0)


def _zeros(aval: Aval) -> Any:
    """A cotangent's example: zeros of ``aval`` that take no memory."""
    return ghost(aval.shape, aval.dtype)


def _dtype(aval: Aval) -> dict:
    return {} if aval.dtype == np.float64 else {"dtype": aval.dtype}


def _stack_name(base: str) -> str:
    upper = base.upper()
    return upper if upper != base and upper.isidentifier() else f"{base}_all"


# the loop region's structural rule: the engine (sweep.py) sweeps a "loop" statement with it
STRUCTURAL_RULES["loop"] = sweep_region
