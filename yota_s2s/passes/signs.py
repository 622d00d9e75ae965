"""Sign propagation: negations move outward until they cancel or fold into a subtraction.

Rules produce negations in many places (``-dy`` for a subtraction, ``-dy * y / x2`` for a
division, ``-dy * sin(x)``); a person would write the same gradient with fewer of them::

    (-a) * b, a * (-b)  ->  -(a * b)          (-a) / b  ->  -(a / b)
    sum(-a)             ->  -sum(a)           (on the smaller array)
    a + (-b)            ->  a - b             (-a) + b  ->  b - a
    a - (-b)            ->  a + b             (-a) - b  ->  -(a + b)

together with ``-(-x) -> x`` from simplify.py. Each rewrite is exact in IEEE arithmetic
(negation only flips a sign bit), and applies where the negated value has no other use, so no
statement is added; or where it has several, each of which takes the negation in the end: a
sum or difference, or a product whose own result does, and so on (``n = -t; a = n * x;
b = y * n; u + a; v + b`` -> ``u - t * x; v - y * t``): each reader gets a negation of its
own for a round, and the next rounds fold them away. ``(-a) - b`` moves out only where its
one reader folds the negation (``c + ((-a) - b)`` -> ``c - (a + b)``: a call fewer), and where
``a`` is a float array of the result's shape (no larger negation); it is exact but for the
sign of a zero (``a = 0, b = -0``: ``+0`` before, ``-0`` after).
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir.analysis import Analysis
from ..ir.rewrite import use_counts
from ..ir.tape import Stmt, Tape, Var
from ..rules.registry import RuleSet

# The operands a negation moves out of: -(a * b) from either, -(a / b) and -sum(a) from a.
_LINEAR_IN = {operator.mul: (0, 1), operator.truediv: (0,), np.sum: (0,)}


def signs(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    uses = use_counts(tape)
    spread = _spread(tape, uses) | _folded_later(tape, uses)
    producer: dict[Var, Stmt] = {}
    kept, changed = [], False
    for stmt in tape.stmts:
        new = _rewrite(stmt, producer, uses, rules, spread)
        if new is not None:
            kept += new
            changed = True
        else:
            kept.append(stmt)
        for s in new or [stmt]:
            producer.update((o, s) for o in s.outs)
    return (tape.copy(stmts=kept), True) if changed else (tape, False)


def _negated(atom, producer: dict[Var, Stmt], uses, spread: set[Var]) -> Var | None:
    """``a`` when ``atom`` is ``-a`` and nothing else reads ``atom`` (or every reader takes
    the negation: ``spread``)."""
    stmt = producer.get(atom) if isinstance(atom, Var) else None
    if stmt is None or stmt.prim.fn is not operator.neg or (uses[atom] != 1 and atom not in spread):
        return None
    return stmt.args[0] if isinstance(stmt.args[0], Var) else None


def _spread(tape: Tape, uses) -> set[Var]:
    """Negations read several times where every reader takes the negation in the end
    (``uses``: the tape's use counts, outputs included, an upper bound of the readers')."""
    if not any(s.prim.fn is operator.neg and uses[s.out] > 1 for s in tape.stmts):
        return set()        # no candidate: no analysis to build
    facts = Analysis(tape)
    outputs, memo = set(facts.outputs), {}

    def takes(v: Var, depth: int) -> bool:
        """Every reader of ``v`` folds a negation of ``v`` into a subtraction, directly or
        through products whose results do."""
        if v not in memo:
            memo[v] = False         # (a cycle cannot happen in SSA; depth bounds the walk)
            readers = [tape.stmts[i] for i in facts.readers.get(v, ())]
            memo[v] = depth < 8 and v not in outputs and bool(readers) and \
                sum(r.args[:2].count(v) for r in readers) == facts.uses[v] and \
                all(r.args[:2].count(v) == 1 and _folds(r, v, lambda o: takes(o, depth + 1))
                    for r in readers)
        return memo[v]
    return {s.out for s in tape.stmts if s.prim.fn is operator.neg and facts.uses[s.out] > 1
            and takes(s.out, 0)}


def _folded_later(tape: Tape, uses) -> set[Var]:
    """The results of ``(-a) - b`` whose one reader folds a negation of them into a sum or a
    difference, ``a`` a float of the result's shape and dtype (their negation moves out)."""
    negs = {s.out for s in tape.stmts if s.prim.fn is operator.neg and len(s.outs) == 1}
    candidates = {s.out: s for s in tape.stmts if s.prim.fn is operator.sub and len(s.outs) == 1
                  and len(s.args) == 2 and s.args[0] in negs and uses[s.args[0]] == 1
                  and uses[s.out] == 1 and s.out.aval.dtype.kind in "fc"
                  and getattr(s.args[0], "aval", None) == s.out.aval}
    if not candidates:
        return set()
    found = set()
    for reader in tape.stmts:
        for v in reader.uses():
            if v in candidates and reader.args[:2].count(v) == 1 and \
                    (reader.prim.fn is operator.add and len(reader.args) == 2
                     or reader.prim.fn is operator.sub and reader.args[1:2] == (v,)):
                found.add(v)
    return found - {a for a in tape.outputs() if isinstance(a, Var)}


def _folds(reader: Stmt, v: Var, takes) -> bool:
    fn, args = reader.prim.fn, reader.args
    if fn is operator.add and len(args) == 2 or fn is operator.sub and args[1:2] == (v,):
        return True
    return fn in _LINEAR_IN and args.index(v) in _LINEAR_IN[fn] and len(reader.outs) == 1 \
        and takes(reader.out)


def _rewrite(stmt: Stmt, producer: dict[Var, Stmt], uses, rules: RuleSet,
             spread: set[Var]) -> list[Stmt] | None:
    fn, args = stmt.prim.fn, stmt.args
    if fn not in (operator.add, operator.sub) and fn not in _LINEAR_IN:
        return None
    neg = [_negated(a, producer, uses, spread) for a in args[:2]]
    if fn is operator.add and neg[1] is not None:
        return [_as(stmt, rules.lookup(operator.sub), (args[0], neg[1]))]
    if fn is operator.add and neg[0] is not None:
        return [_as(stmt, rules.lookup(operator.sub), (args[1], neg[0]))]
    if fn is operator.sub and len(neg) > 1 and neg[1] is not None:
        return [_as(stmt, rules.lookup(operator.add), (args[0], neg[1]))]
    if fn is operator.sub and neg[0] is not None and stmt.out in spread:
        inner = Var(stmt.out.aval)
        return [_as(stmt, rules.lookup(operator.add), (neg[0], args[1])).replace(outs=(inner,)),
                _as(stmt, rules.lookup(operator.neg), (inner,))]
    k = next((k for k in _LINEAR_IN.get(fn, ()) if neg[k] is not None), None)
    if k is None:
        return None
    inner = Var(stmt.out.aval)
    positive = stmt.replace(outs=(inner,), args=args[:k] + (neg[k],) + args[k + 1:])
    return [positive, _as(stmt, rules.lookup(operator.neg), (inner,))]


def _as(stmt: Stmt, prim, args: tuple) -> Stmt:
    return stmt.replace(prim=prim, args=args, params=())
