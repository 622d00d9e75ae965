"""Stacked products: an accumulator of a loop region whose every step adds a product of a row
of an array the loop reads (``xs[t]``) and a value of the step (``dz``) is one product after
the loop, as a handwritten BPTT makes ``dWx`` and ``db``::

    for t in reversed(range(T)):                  for t in reversed(range(T)):
        ...                                           ...
        dWx += xs[t].T @ dz             ->            H[t + 1] = dz        # a dead row
        db += dz.sum(axis=0)                      DZ = H[1:]
                                                  dWx = xs.reshape(-1, 32).T @ DZ.reshape(-1, 64)
                                                  db = DZ.sum(axis=(0, 1))

The steps' values ``dz`` go into the rows of a stack the loop reads and the function does not
read after it (the forward loop's saved states, ``H``), each row once its last read has passed:
a stack whose reads in a step are at rows ``t + d`` for a few constants ``d`` is written at
``t + max(d)`` in a loop counting down (``t + min(d)`` counting up), after the step's last read
of it. The stack becomes a carried value of the region (written in place, the region's own:
nothing else reads it), and the accumulators leave the loop. The loop does half the numpy
calls per step and the product is one large one; no memory is added.

The accumulator must start at zero (the loop makes it), be read only by its addition, and
each term be one of: ``r.T @ g``, ``g.T @ r`` (``r = k[t]``, ``k`` an array the loop reads,
of ``length`` rows, not the stack), ``g.sum(axis)`` or ``g`` itself, all with the same step
value ``g`` of a row's shape and dtype. For the buffered form (the plain form keeps the loop
as the rules wrote it, the one to review).
"""
from __future__ import annotations

import operator
from dataclasses import replace

import numpy as np

from ..ir.analysis import Analysis
from ..ir.region import Loop, loop_of, loop_primitive, made_stack
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from ..rules.indexing import setitem_
from ..rules.registry import RuleSet
from .dce import dce

STACKED = "the steps' terms of an accumulator: one product (or sum) of the stacked rows after the loop"


def stack_products(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    facts = None
    stmts: list[Stmt] = []
    changed = False
    for index, stmt in enumerate(tape.stmts):
        loop = loop_of(stmt)
        if loop is not None:
            facts = facts or Analysis(tape)
            made = _stacked(stmt, loop, index, facts, rules)
            if made is not None:
                stmts += made
                changed = True
                continue
        stmts.append(stmt)
    return (tape.copy(stmts=stmts), True) if changed else (tape, False)


def _terms(loop: Loop, facts: Analysis) -> dict[Var, tuple]:
    """Accumulator -> (kind, step value, row read or None, the row's invariant) for each
    accumulator whose steps only add a term of a stackable form."""
    body = loop.body
    found = {}
    results = dict(zip(loop.carried, body.result))
    for c, fresh in zip(loop.carried, loop.fresh):
        o = results[c]
        add = facts.producer.get(o) if isinstance(o, Var) else None
        if fresh is not True or add is None or add.prim.fn is not operator.add \
                or len(add.args) != 2 or facts.readers.get(c) != [facts.defined[o]] \
                or facts.uses[c] != 1 or facts.readers.get(o) or o.aval != c.aval \
                or c.aval.weak or any(o is r for r in body.result if r is not results[c]):
            continue
        term = add.args[1] if add.args[0] is c else add.args[0]
        if not isinstance(term, Var) or term is c or term in loop.carried \
                or term.aval.shape != c.aval.shape or term.aval.dtype != c.aval.dtype:
            continue            # (an addition that broadcasts or casts is not a sum of terms)
        form = _form(term, loop, facts)
        if form is not None:
            found[c] = form
    return found


def _form(term: Var, loop: Loop, facts: Analysis) -> tuple | None:
    made = facts.producer.get(term)
    if made is None:
        return None
    if made.prim.fn is operator.matmul and not made.params and len(made.args) == 2:
        a, b = made.args
        for kind, row, g in (("rT@g", _row(_transposed(a, facts), loop, facts), b),
                             ("gT@r", _row(b, loop, facts), _transposed(a, facts))):
            if row is not None and isinstance(g, Var) and g.aval.ndim == 2 \
                    and row[0].aval.ndim == 2 and g.aval.shape[0] == row[0].aval.shape[0]:
                return (kind, g, *row)
        return None
    if made.prim.fn is np.sum and isinstance(made.args[0], Var) and len(made.args) == 1 \
            and all(k == "axis" for k, _ in made.params):
        axis = made.param("axis")
        g = made.args[0]
        if axis is None or isinstance(axis, int) or isinstance(axis, tuple) and \
                all(isinstance(a, int) for a in axis):
            return ("sum", g, axis)
        return None
    return ("term", term, None)


def _transposed(v, facts: Analysis):
    """``x`` where ``v = x.T`` of a matrix (else None)."""
    made = facts.producer.get(v) if isinstance(v, Var) else None
    if made is None or made.prim.fn is not np.transpose or made.param("axes") is not None \
            or len(made.args) != 1 or not isinstance(made.args[0], Var) \
            or made.args[0].aval.ndim != 2:
        return None
    return made.args[0]


def _row(v, loop: Loop, facts: Analysis):
    """(the row, its invariant) where ``v = k[t]``, ``k`` an invariant of ``length`` rows."""
    made = facts.producer.get(v) if isinstance(v, Var) else None
    if made is None or made.prim.fn is not operator.getitem or len(made.args) != 2 \
            or made.args[1] is not loop.index or made.args[0] not in loop.invariants \
            or made.args[0].aval.shape[:1] != (loop.length,):
        return None
    return v, made.args[0]


def row_offset(key, loop: Loop, facts: Analysis) -> int | None:
    """``d`` where ``key`` is the step index plus the constant ``d``."""
    if key is loop.index:
        return 0
    made = facts.producer.get(key) if isinstance(key, Var) else None
    if made is not None and made.prim.fn is operator.add and made.args[0] is loop.index \
            and isinstance(made.args[1], Lit) and type(made.args[1].value) is int:
        return made.args[1].value
    return None


def _free_stack(stmt: Stmt, loop: Loop, at: int, outer: Analysis, facts: Analysis,
                g: Var) -> tuple | None:
    """An invariant stack whose rows can take ``g``'s values: (the stack, the row offset
    written, the body's keys by offset). Its operand's memory is read by nothing after the
    region (and is neither an argument nor returned), it is one operand of the region, and the
    step reads it only at rows ``t + d``."""
    operands = dict(zip(loop.operand_vars(), stmt.args))
    args = [a for a in stmt.args if isinstance(a, Var)]
    for k in loop.invariants:
        a = operands[k]
        if not isinstance(a, Var) or k.aval.ndim != g.aval.ndim + 1 or \
                k.aval.shape[1:] != g.aval.shape or k.aval.dtype != g.aval.dtype or \
                not made_stack(outer, a) or not outer.free_after(a, at) or args.count(a) != 1 or \
                any(b is not a and outer.same_memory(a, b) for b in args):
            continue
        readers = facts.readers.get(k, [])
        keys: dict[int, object] = {}
        body = loop.body
        for p in readers:
            s = body.stmts[p]
            d = row_offset(s.args[1], loop, facts) if s.prim.fn is operator.getitem and \
                len(s.args) == 2 and s.args[0] is k else None
            if d is None:
                break
            keys.setdefault(d, s.args[1])
        else:
            if not keys:
                continue
            d = max(keys) if loop.reverse else min(keys)
            if d < 0 or d + loop.length > k.aval.shape[0]:
                continue
            return k, d, keys
    return None


def _stacked(stmt: Stmt, loop: Loop, at: int, outer: Analysis, rules: RuleSet
             ) -> list[Stmt] | None:
    body = loop.body
    facts = Analysis(body)
    terms = _terms(loop, facts)
    if not terms:
        return None
    by_value: dict[Var, list[Var]] = {}
    for c, form in terms.items():
        by_value.setdefault(form[1], []).append(c)
    g = max(by_value, key=lambda v: len(by_value[v]))
    if g.aval.weak or not g.aval.ndim or g not in facts.producer:
        return None
    # a row read of the stack itself cannot be summed after the loop: it is overwritten
    free = _free_stack(stmt, loop, at, outer, facts, g)
    if free is None:
        return None
    stack, offset, keys = free
    gone = [c for c in by_value[g] if terms[c][0] not in ("rT@g", "gT@r")
            or terms[c][3] is not stack]
    if not gone:
        return None
    # the step writes its value into the stack's row at its end, after its last read of it
    new_stmts = list(body.stmts)
    key = keys.get(offset)
    if key is None:
        key = Var(loop.index.aval)
        new_stmts.append(Stmt((key,), rules.lookup(operator.add), (loop.index, Lit(offset)),
                              (), stmt.loc, None))
    written = Var(stack.aval, hint=stack.hint)
    new_stmts.append(Stmt((written,), rules.lookup(setitem_), (stack, key, g), (), stmt.loc,
                          STACKED))
    # the region: the stack is carried (the loop's own), the accumulators leave it
    results = dict(zip(loop.carried, body.result))
    names = dict(zip((i.var for i in body.inputs), body.params))
    carried = [c for c in loop.carried if c not in gone] + [stack]
    fresh = [f for c, f in zip(loop.carried, loop.fresh) if c not in gone] + [False]
    result = [results[c] for c in loop.carried if c not in gone] + [written]
    invariants = [k for k in loop.invariants if k is not stack]
    inputs = [loop.index, *carried, *invariants]
    new_body = body.copy(inputs=[Input(v, i) for i, v in enumerate(inputs)], stmts=new_stmts,
                         params=tuple(names[v] for v in inputs), result=tuple(result),
                         owned=(body.owned - set(gone)) | {stack})
    new_body, _ = dce(new_body, rules)
    read = {v for s in new_body.stmts for v in s.uses()} | \
        {r for r in new_body.result if isinstance(r, Var)}
    invariants = [k for k in invariants if k in read]
    inputs = [loop.index, *carried, *invariants]
    new_body = new_body.copy(inputs=[Input(v, i) for i, v in enumerate(inputs)],
                             params=tuple(names[v] for v in inputs))
    new_loop = replace(loop, body=new_body, ncarry=len(carried), fresh=tuple(fresh))
    operands = dict(zip(loop.operand_vars(), stmt.args))
    outs = dict(zip(loop.carried, stmt.outs))
    after = Var(stack.aval, hint=stack.hint)
    region = Stmt(tuple(outs[c] for c in carried if c is not stack) + (after,),
                  loop_primitive(new_loop, new_body.params[1:]),
                  tuple(operands[v] for v in new_loop.operand_vars()), (("loop", new_loop),),
                  stmt.loc, stmt.rule)
    # after the loop: the stacked values, then one product or sum per accumulator
    made = [region]

    def emit(fn, args, aval, params=()):
        out = Var(aval)
        made.append(Stmt((out,), rules.lookup(fn), tuple(args), tuple(params), stmt.loc,
                         STACKED))
        return out
    rows = (loop.length, *g.aval.shape)
    stacked = after
    if offset or stack.aval.shape[0] != loop.length:
        stacked = emit(operator.getitem, (after, Lit(slice(offset, offset + loop.length))),
                       Aval(rows, g.aval.dtype))
    flat = {}

    def flattened(v: Var) -> Var:
        if v not in flat:
            n, *rest = v.aval.shape[1:]
            shape = (loop.length * n, *rest)
            flat[v] = emit(np.reshape, (v, Lit(shape)), Aval(shape, v.aval.dtype))
        return flat[v]
    for c in gone:
        kind = terms[c][0]
        out = outs[c]
        if kind == "term":
            made.append(Stmt((out,), rules.lookup(np.sum), (stacked,), (("axis", 0),), stmt.loc,
                             STACKED))
        elif kind == "sum":
            axis = terms[c][2]
            if axis is None:
                params = ()
            else:
                axes = (axis,) if isinstance(axis, int) else axis
                params = (("axis", (0,) + tuple(a % g.aval.ndim + 1 for a in axes)),)
            made.append(Stmt((out,), rules.lookup(np.sum), (stacked,), params, stmt.loc,
                             STACKED))
        else:
            k = operands[terms[c][3]]
            if not isinstance(k, Var):
                return None
            rows_k = flattened(k)
            rows_g = flattened(stacked)
            if kind == "rT@g":
                left = emit(np.transpose, (rows_k,), Aval(rows_k.aval.shape[::-1], k.aval.dtype))
                args = (left, rows_g)
            else:
                left = emit(np.transpose, (rows_g,), Aval(rows_g.aval.shape[::-1], g.aval.dtype))
                args = (left, rows_k)
            made.append(Stmt((out,), rules.lookup(operator.matmul), args, (), stmt.loc, STACKED))
    return made


__all__ = ["stack_products", "row_offset", "STACKED"]
