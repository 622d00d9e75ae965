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

from ..ir.tape import Stmt, Tape, Var
from ..rules.registry import RULES
from .rewrite import use_counts


def signs(tape: Tape) -> tuple[Tape, bool]:
    uses = use_counts(tape)
    producer: dict[Var, Stmt] = {}
    kept, changed = [], False
    for stmt in tape.stmts:
        new = _rewrite(stmt, producer, uses)
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
    if stmt is None or stmt.prim.name != "neg" or uses[atom] != 1:
        return None
    return stmt.args[0] if isinstance(stmt.args[0], Var) else None


def _rewrite(stmt: Stmt, producer: dict[Var, Stmt], uses) -> list[Stmt] | None:
    name, args = stmt.prim.name, stmt.args
    if name not in ("mul", "div", "sum", "add", "sub"):
        return None
    neg = [_negated(a, producer, uses) for a in args[:2]]
    if name == "add" and neg[1] is not None:
        return [_as(stmt, operator.sub, (args[0], neg[1]))]
    if name == "add" and neg[0] is not None:
        return [_as(stmt, operator.sub, (args[1], neg[0]))]
    if name == "sub" and len(neg) > 1 and neg[1] is not None:
        return [_as(stmt, operator.add, (args[0], neg[1]))]
    if name in ("mul", "div", "sum"):
        k = 0 if neg[0] is not None else 1 if name == "mul" and neg[1] is not None else None
        if k is None:
            return None
        inner = Var(stmt.out.aval)
        positive = stmt.replace(outs=(inner,), args=args[:k] + (neg[k],) + args[k + 1:])
        return [positive, _as(stmt, operator.neg, (inner,))]
    return None


def _as(stmt: Stmt, fn, args: tuple) -> Stmt:
    return stmt.replace(prim=RULES.lookup(fn), args=args, params=())
