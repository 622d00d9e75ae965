"""Sign propagation: negations move outward until they cancel or fold into a subtraction.

Rules produce negations in many places (``-dy`` for a subtraction, ``-dy * y / x2`` for a
division, ``-dy * sin(x)``); a person would write the same gradient with fewer of them::

    (-a) * b, a * (-b)  ->  -(a * b)          (-a) / b  ->  -(a / b)
    sum(-a)             ->  -sum(a)           (on the smaller array)
    a + (-b)            ->  a - b             (-a) + b  ->  b - a
    a - (-b)            ->  a + b

together with ``-(-x) -> x`` from simplify.py. Each rewrite is exact in IEEE arithmetic
(negation only flips a sign bit), and applies only where the negated value has no other use,
so no statement is ever added.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir.tape import Stmt, Tape, Var
from ..rules.registry import RuleSet
from .rewrite import use_counts

# The operands a negation moves out of: -(a * b) from either, -(a / b) and -sum(a) from a.
_LINEAR_IN = {operator.mul: (0, 1), operator.truediv: (0,), np.sum: (0,)}


def signs(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    uses = use_counts(tape)
    producer: dict[Var, Stmt] = {}
    kept, changed = [], False
    for stmt in tape.stmts:
        new = _rewrite(stmt, producer, uses, rules)
        if new is not None:
            kept += new
            changed = True
        else:
            kept.append(stmt)
        for s in new or [stmt]:
            producer.update((o, s) for o in s.outs)
    return (tape.copy(stmts=kept), True) if changed else (tape, False)


def _negated(atom, producer: dict[Var, Stmt], uses) -> Var | None:
    """``a`` when ``atom`` is ``-a`` and nothing else reads ``atom``."""
    stmt = producer.get(atom) if isinstance(atom, Var) else None
    if stmt is None or stmt.prim.fn is not operator.neg or uses[atom] != 1:
        return None
    return stmt.args[0] if isinstance(stmt.args[0], Var) else None


def _rewrite(stmt: Stmt, producer: dict[Var, Stmt], uses, rules: RuleSet) -> list[Stmt] | None:
    fn, args = stmt.prim.fn, stmt.args
    if fn not in (operator.add, operator.sub) and fn not in _LINEAR_IN:
        return None
    neg = [_negated(a, producer, uses) for a in args[:2]]
    if fn is operator.add and neg[1] is not None:
        return [_as(stmt, rules.lookup(operator.sub), (args[0], neg[1]))]
    if fn is operator.add and neg[0] is not None:
        return [_as(stmt, rules.lookup(operator.sub), (args[1], neg[0]))]
    if fn is operator.sub and len(neg) > 1 and neg[1] is not None:
        return [_as(stmt, rules.lookup(operator.add), (args[0], neg[1]))]
    k = next((k for k in _LINEAR_IN.get(fn, ()) if neg[k] is not None), None)
    if k is None:
        return None
    inner = Var(stmt.out.aval)
    positive = stmt.replace(outs=(inner,), args=args[:k] + (neg[k],) + args[k + 1:])
    return [positive, _as(stmt, rules.lookup(operator.neg), (inner,))]


def _as(stmt: Stmt, prim, args: tuple) -> Stmt:
    return stmt.replace(prim=prim, args=args, params=())
