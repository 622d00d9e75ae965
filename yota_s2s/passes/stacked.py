"""Stacked products: an accumulator of a loop region whose every step adds products of rows
of arrays the loop reads (``xs[t]``) and values of the step (``dz``) is one product per value
after the loop, as a handwritten BPTT makes ``dWx`` and ``db``, or a handwritten RK4 adjoint
its ``dW`` from the four stages' ``dz``::

    for t in reversed(range(T)):                  for t in reversed(range(T)):
        ...                                           ...
        dWx += xs[t].T @ dz             ->            H[t + 1] = dz        # a dead row
        db += dz.sum(axis=0)                      DZ = H[1:]
                                                  dWx = xs.reshape(-1, 32).T @ DZ.reshape(-1, 64)
                                                  db = DZ.sum(axis=(0, 1))

    for t in reversed(range(T)):                  for t in reversed(range(T)):
        ...                                           ...
        dW += dz4[..., None] * u4[t] + ...  ->        S4[t] = dz4; ...; S1[t] = dz1
        db += dz4 + dz3 + dz2 + dz1               dW = S4.T @ U4 + ... + S1.T @ U1
                                                  db = S4.sum(axis=0) + ... + S1.sum(axis=0)

Each step value ``dz`` goes into the rows of a stack of its own that the loop reads and the
function does not read after it (the forward loop's saved values, ``H``), each row once its last
read has passed: a stack whose reads in a step are at rows ``t + d`` for a few constants ``d``
is written at ``t + max(d)`` in a loop counting down (``t + min(d)`` counting up), after the
step's last read of it. A stack becomes a carried value of the region (written in place, the
region's own: nothing else reads it), and the accumulators leave the loop. The loop does fewer
numpy calls per step and the products are large ones; no memory is added.

The accumulator must start at zero (the loop makes it), be read only by its addition, and the
step's term be a chain of additions (partial sums read by nothing else) of terms of the forms
``r.T @ g``, ``g.T @ r``, the outer products of vectors ``g[:, None] * r`` and
``r[:, None] * g[None, :]`` (``r = k[t]``, ``k`` an array the loop reads, of ``length`` rows,
not a stack that takes a value), ``g.sum(axis)`` or ``g`` itself, each with a step value ``g``
of a row's shape and dtype. A stack for a value is chosen among the free ones that no term reads
after the loop, preferably one the step has read for the last time before it makes the value
(codegen/regions.py then makes the value in its row). For the buffered form (the plain form keeps
the loop as the rules wrote it, the one to review).
"""
from __future__ import annotations

import operator
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..ir.analysis import Analysis, basic_parts
from ..ir.region import Loop, loop_of, loop_primitive, made_stack
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from ..rules.indexing import setitem_
from ..rules.registry import RuleSet
from .dce import dce

STACKED = "an accumulator's terms: one product (or sum) of the stacked rows after the loop"

# keys that make a column of a vector (``g[:, None]``) and those that leave a row (``g[None, :]``)
_COLUMN = ((Ellipsis, None), (slice(None), None))
_ROW = ((None,), (None, slice(None)), (Ellipsis, None, slice(None)), (None, Ellipsis))


class Term(NamedTuple):
    """One term a step adds to an accumulator: ``kind`` "rT@g" (``r.T @ g``, or the outer
    product ``r[:, None] * g``), "gT@r", "sum" (``g.sum(axis)``) or "term" (``g``); ``g`` the
    step value; ``k`` the invariant whose row ``r = k[t]`` is (products)."""
    kind: str
    g: Var
    k: Var | None = None
    axis: object = None


class Free(NamedTuple):
    """A stack whose rows can take a step value: the row offset written, the body's keys by
    offset."""
    stack: Var
    offset: int
    keys: dict


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


# -- the accumulators and their terms ----------------------------------------------------------

def _sums(loop: Loop, facts: Analysis) -> dict[Var, list[Term]]:
    """Accumulator -> the terms its step adds, for each accumulator whose steps only add terms
    of stackable forms."""
    found = {}
    results = dict(zip(loop.carried, loop.body.result))
    for c, fresh in zip(loop.carried, loop.fresh):
        term = _step_term(c, results[c], fresh, loop, facts) if fresh is True else None
        if term is None:
            continue
        terms = [_form(v, loop, facts) for v in _chain(term, facts)]
        if all(t is not None for t in terms):
            found[c] = terms
    return found


def _step_term(c: Var, o, fresh, loop: Loop, facts: Analysis) -> Var | None:
    """``term`` where the step's ``o = c + term`` (``c`` read by nothing else, of its shape and
    dtype: an addition that broadcasts or casts is not a sum of terms)."""
    add = facts.producer.get(o) if isinstance(o, Var) else None
    if add is None or add.prim.fn is not operator.add or len(add.args) != 2 \
            or facts.readers.get(c) != [facts.defined[o]] or facts.uses[c] != 1 \
            or facts.readers.get(o) or o.aval != c.aval or c.aval.weak \
            or sum(o is r for r in loop.body.result) != 1:
        return None
    term = add.args[1] if add.args[0] is c else add.args[0]
    if not isinstance(term, Var) or term is c or term in loop.carried \
            or term.aval.shape != c.aval.shape or term.aval.dtype != c.aval.dtype:
        return None
    return term


def _chain(term: Var, facts: Analysis) -> list[Var]:
    """The terms of ``term``, a chain of additions whose partial sums are read only by the
    chain, each of the sum's shape and dtype; ``[term]`` when it is not such a sum."""
    made = facts.producer.get(term)
    if made is None or made.prim.fn is not operator.add or len(made.args) != 2 or made.params \
            or not all(isinstance(a, Var) and a.aval == term.aval for a in made.args):
        return [term]
    return [leaf for a in made.args
            for leaf in (_chain(a, facts) if len(facts.readers.get(a, ())) == 1 else [a])]


def _form(term: Var, loop: Loop, facts: Analysis) -> Term | None:
    made = facts.producer.get(term)
    if made is None:
        return None
    if made.prim.fn is operator.matmul and not made.params and len(made.args) == 2:
        return _matmul(made, loop, facts)
    if made.prim.fn is operator.mul and not made.params and len(made.args) == 2 \
            and term.aval.ndim == 2:
        outer = _outer(made, loop, facts)
        if outer is not None:
            return outer
    if made.prim.fn is np.sum and isinstance(made.args[0], Var) and len(made.args) == 1 \
            and all(k == "axis" for k, _ in made.params):
        axis = made.param("axis")
        if axis is None or isinstance(axis, int) or isinstance(axis, tuple) and \
                all(isinstance(a, int) for a in axis):
            return Term("sum", made.args[0], axis=axis)
        return None
    return Term("term", term)


def _matmul(made: Stmt, loop: Loop, facts: Analysis) -> Term | None:
    """``r.T @ g`` or ``g.T @ r`` of matrices, ``r = k[t]``."""
    a, b = made.args
    for kind, row, g in (("rT@g", _transposed(a, facts), b), ("gT@r", b, _transposed(a, facts))):
        k = _row(row, loop, facts)
        if k is not None and isinstance(g, Var) and g.aval.ndim == 2 \
                and row.aval.ndim == 2 and g.aval.shape[0] == row.aval.shape[0]:
            return Term(kind, g, k)
    return None


def _outer(made: Stmt, loop: Loop, facts: Analysis) -> Term | None:
    """The outer product of vectors ``a[:, None] * b`` (``b`` or ``b[None, :]``, either
    order; the rules' gradients of ``W @ x`` and ``x @ W``), one of them a row ``k[t]``."""
    x, y = made.args
    for column, row in ((x, y), (y, x)):
        a, b = _vector(column, _COLUMN, facts), _vector(row, _ROW, facts) or row
        if a is None or not isinstance(b, Var) or b.aval.ndim != 1:
            continue
        k = _row(b, loop, facts)
        if k is not None:
            return Term("gT@r", a, k)
        k = _row(a, loop, facts)
        if k is not None:
            return Term("rT@g", b, k)
    return None


def _vector(v, keys: tuple, facts: Analysis) -> Var | None:
    """``x`` where ``v = x[key]``, ``x`` a vector and ``key`` one of ``keys``."""
    made = facts.producer.get(v) if isinstance(v, Var) else None
    if made is None or made.prim.fn is not operator.getitem or len(made.args) != 2 \
            or not isinstance(made.args[0], Var) or made.args[0].aval.ndim != 1:
        return None
    return made.args[0] if basic_parts(made.args[1]) in keys else None


def _transposed(v, facts: Analysis):
    """``x`` where ``v = x.T`` of a matrix (else None)."""
    made = facts.producer.get(v) if isinstance(v, Var) else None
    if made is None or made.prim.fn is not np.transpose or made.param("axes") is not None \
            or len(made.args) != 1 or not isinstance(made.args[0], Var) \
            or made.args[0].aval.ndim != 2:
        return None
    return made.args[0]


def _row(v, loop: Loop, facts: Analysis) -> Var | None:
    """``k`` where ``v = k[t]``, ``k`` an invariant of ``length`` rows."""
    made = facts.producer.get(v) if isinstance(v, Var) else None
    if made is None or made.prim.fn is not operator.getitem or len(made.args) != 2 \
            or made.args[1] is not loop.index or made.args[0] not in loop.invariants \
            or made.args[0].aval.shape[:1] != (loop.length,):
        return None
    return made.args[0]


def row_offset(key, loop: Loop, facts: Analysis) -> int | None:
    """``d`` where ``key`` is the step index plus the constant ``d``."""
    if key is loop.index:
        return 0
    made = facts.producer.get(key) if isinstance(key, Var) else None
    if made is not None and made.prim.fn is operator.add and made.args[0] is loop.index \
            and isinstance(made.args[1], Lit) and type(made.args[1].value) is int:
        return made.args[1].value
    return None


# -- the stacks --------------------------------------------------------------------------------

def _free_stacks(stmt: Stmt, loop: Loop, at: int, outer: Analysis, facts: Analysis,
                 g: Var) -> list[Free]:
    """The invariant stacks whose rows can take ``g``'s values. A stack's operand's memory is
    read by nothing after the region (and is neither an argument nor returned), it is one
    operand of the region, and the step reads it only at rows ``t + d``."""
    operands = dict(zip(loop.operand_vars(), stmt.args))
    args = [a for a in stmt.args if isinstance(a, Var)]
    found = []
    for k in loop.invariants:
        a = operands[k]
        if not isinstance(a, Var) or k.aval.ndim != g.aval.ndim + 1 or \
                k.aval.shape[1:] != g.aval.shape or k.aval.dtype != g.aval.dtype or \
                not made_stack(outer, a) or not outer.free_after(a, at) or args.count(a) != 1 or \
                any(b is not a and outer.same_memory(a, b) for b in args):
            continue
        keys = _row_keys(k, loop, facts)
        if not keys:
            continue
        d = max(keys) if loop.reverse else min(keys)
        if d >= 0 and d + loop.length <= k.aval.shape[0]:
            found.append(Free(k, d, keys))
    return found


def _row_keys(k: Var, loop: Loop, facts: Analysis) -> dict[int, object]:
    """The body's keys of its reads of ``k`` by row offset (empty: a read of another kind)."""
    keys: dict[int, object] = {}
    for p in facts.readers.get(k, []):
        s = loop.body.stmts[p]
        d = row_offset(s.args[1], loop, facts) if s.prim.fn is operator.getitem and \
            len(s.args) == 2 and s.args[0] is k else None
        if d is None:
            return {}
        keys.setdefault(d, s.args[1])
    return keys


def _assign(stmt: Stmt, loop: Loop, at: int, outer: Analysis, facts: Analysis,
            sums: dict[Var, list[Term]]) -> dict[Var, Free]:
    """A stack of its own for each step value of the terms, in the order the step makes them:
    preferably one no term reads rows of (read after the loop, the stack could not be), then
    one the step has read for the last time before it makes the value."""
    read = {t.k for terms in sums.values() for t in terms}
    values = {t.g: None for terms in sums.values() for t in terms if t.g in facts.producer}
    taken: dict[Var, Free] = {}
    for g in sorted(values, key=facts.defined.__getitem__):
        if g.aval.weak or not g.aval.ndim or facts.written_between(
                {facts.root(g)}, facts.defined[g], facts.end):
            continue        # (its memory updated later in the step: the row would see that)
        used = {f.stack for f in taken.values()}
        free = [f for f in _free_stacks(stmt, loop, at, outer, facts, g) if f.stack not in used]
        if free:
            taken[g] = min(free, key=lambda f: (f.stack in read,
                                                facts.last_memory[f.stack] > facts.defined[g]))
    return taken


# -- the rewrite -------------------------------------------------------------------------------

def _stacked(stmt: Stmt, loop: Loop, at: int, outer: Analysis, rules: RuleSet
             ) -> list[Stmt] | None:
    facts = Analysis(loop.body)
    sums = _sums(loop, facts)
    if not sums:
        return None
    taken = _assign(stmt, loop, at, outer, facts, sums)
    stacks = {f.stack for f in taken.values()}
    operands = dict(zip(loop.operand_vars(), stmt.args))
    gone = [c for c, terms in sums.items()
            if all(t.g in taken and t.k not in stacks for t in terms)
            and all(isinstance(operands.get(t.k), Var) for t in terms if t.k is not None)]
    if not gone:
        return None
    values = {t.g: taken[t.g] for c in gone for t in sums[c]}
    region, after = _region(stmt, loop, rules, values, gone)
    return [region, *_after(stmt, loop, rules, sums, gone, values, after, operands)]


def _region(stmt: Stmt, loop: Loop, rules: RuleSet, values: dict[Var, Free], gone: list[Var]
            ) -> tuple[Stmt, dict[Var, Var]]:
    """The region whose step writes each value into its stack: the stacks are carried (the
    loop's own), the accumulators leave it. Returns the region and each stack after it."""
    body = loop.body
    new_stmts, results = _write_rows(stmt, loop, rules, values)
    stacks = [f.stack for f in values.values()]
    names = dict(zip((i.var for i in body.inputs), body.params))
    carried = [c for c in loop.carried if c not in gone] + stacks
    fresh = [f for c, f in zip(loop.carried, loop.fresh) if c not in gone] + [False] * len(stacks)
    invariants = [k for k in loop.invariants if k not in stacks]
    new_body = body.copy(stmts=new_stmts, result=tuple(results[c] for c in carried),
                         owned=(body.owned - set(gone)) | set(stacks))
    new_body, _ = dce(_with_inputs(new_body, loop.index, carried, invariants, names), rules)
    read = {v for s in new_body.stmts for v in s.uses()} | \
        {r for r in new_body.result if isinstance(r, Var)}
    new_body = _with_inputs(new_body, loop.index, carried, [k for k in invariants if k in read],
                            names)
    new_loop = replace(loop, body=new_body, ncarry=len(carried), fresh=tuple(fresh))
    operands = dict(zip(loop.operand_vars(), stmt.args))
    outs = dict(zip(loop.carried, stmt.outs))
    after = {s: Var(s.aval, hint=s.hint) for s in stacks}
    region = Stmt(tuple(outs[c] for c in carried if c not in after) + tuple(after.values()),
                  loop_primitive(new_loop, new_body.params[1:]),
                  tuple(operands[v] for v in new_loop.operand_vars()), (("loop", new_loop),),
                  stmt.loc, stmt.rule)
    return region, after


def _write_rows(stmt: Stmt, loop: Loop, rules: RuleSet, values: dict[Var, Free]
                ) -> tuple[list[Stmt], dict[Var, Var]]:
    """The step's statements, then each value written into its stack's row at the step's end,
    after its last read of the stack; and the step's results by carried value (the stacks
    written included)."""
    new_stmts = list(loop.body.stmts)
    results = dict(zip(loop.carried, loop.body.result))
    for g, (stack, offset, keys) in values.items():
        key = keys.get(offset)
        if key is None:
            key = Var(loop.index.aval)
            new_stmts.append(Stmt((key,), rules.lookup(operator.add), (loop.index, Lit(offset)),
                                  (), stmt.loc, None))
        results[stack] = Var(stack.aval, hint=stack.hint)
        new_stmts.append(Stmt((results[stack],), rules.lookup(setitem_), (stack, key, g), (),
                              stmt.loc, STACKED))
    return new_stmts, results


def _with_inputs(body: Tape, index: Var, carried: list[Var], invariants: list[Var],
                 names: dict[Var, str]) -> Tape:
    inputs = [index, *carried, *invariants]
    return body.copy(inputs=[Input(v, i) for i, v in enumerate(inputs)],
                     params=tuple(names[v] for v in inputs))


class _Emitter:
    """The statements after the loop, those that reshape or slice a stack made once."""

    def __init__(self, stmt: Stmt, rules: RuleSet):
        self.stmt, self.rules = stmt, rules
        self.made: list[Stmt] = []
        self.memo: dict[tuple, Var] = {}

    def emit(self, fn, args, aval: Aval, params=(), out: Var | None = None) -> Var:
        out = out or Var(aval)
        self.made.append(Stmt((out,), self.rules.lookup(fn), tuple(args), tuple(params),
                              self.stmt.loc, STACKED))
        return out

    def once(self, fn, args, aval: Aval, params=()) -> Var:
        key = (fn, *(id(a) if isinstance(a, Var) else repr(a.value) for a in args), params)
        if key not in self.memo:
            self.memo[key] = self.emit(fn, args, aval, params)
        return self.memo[key]

    def flat(self, v: Var) -> Var:
        """A stack of matrices ``(length, n, m)`` as rows ``(length * n, m)`` (a stack of
        vectors is rows already)."""
        if v.aval.ndim == 2:
            return v
        n, *rest = v.aval.shape[1:]
        shape = (v.aval.shape[0] * n, *rest)
        return self.once(np.reshape, (v, Lit(shape)), Aval(shape, v.aval.dtype))


def _after(stmt: Stmt, loop: Loop, rules: RuleSet, sums: dict[Var, list[Term]],
           gone: list[Var], values: dict[Var, Free], after: dict[Var, Var],
           operands: dict) -> list[Stmt]:
    """After the loop: per accumulator, the sum of one product (or sum) per term of the rows
    its value took in its stack."""
    em = _Emitter(stmt, rules)
    outs = dict(zip(loop.carried, stmt.outs))

    def rows(g: Var) -> Var:
        stack, offset, _ = values[g]
        v = after[stack]
        if offset or v.aval.shape[0] != loop.length:
            v = em.once(operator.getitem, (v, Lit(slice(offset, offset + loop.length))),
                        Aval((loop.length, *g.aval.shape), g.aval.dtype))
        return v
    for c in gone:
        terms, total = sums[c], None
        for i, t in enumerate(terms):
            last = outs[c] if i == len(terms) - 1 else None
            part = _product(em, t, rows(t.g), operands, c.aval, None if i else last)
            total = part if total is None else em.emit(operator.add, (total, part), c.aval,
                                                        out=last)
    return em.made


def _product(em: _Emitter, t: Term, rows: Var, operands: dict, aval: Aval,
             out: Var | None) -> Var:
    """One term's steps at once: a sum over the rows, or a product of them with ``k``'s."""
    if t.kind == "term":
        return em.emit(np.sum, (rows,), aval, (("axis", 0),), out)
    if t.kind == "sum":
        params = ()
        if t.axis is not None:
            axes = (t.axis,) if isinstance(t.axis, int) else t.axis
            params = (("axis", (0,) + tuple(a % t.g.aval.ndim + 1 for a in axes)),)
        return em.emit(np.sum, (rows,), aval, params, out)
    rows_k, rows_g = em.flat(operands[t.k]), em.flat(rows)
    left, right = (rows_k, rows_g) if t.kind == "rT@g" else (rows_g, rows_k)
    left = em.once(np.transpose, (left,), Aval(left.aval.shape[::-1], left.aval.dtype))
    return em.emit(operator.matmul, (left, right), aval, (), out)


__all__ = ["stack_products", "row_offset", "STACKED"]
