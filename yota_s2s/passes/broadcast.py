"""Rewrites for constants broadcast to a shape: the arrays of ones that gradients start from.

The gradient of ``np.sum(a)`` is ``broadcast_to(1.0, a.shape)``; a rule applied to it would
multiply by a matrix of ones, where a handwritten gradient uses row and column sums::

    sum(broadcast_to(c, s), axis)        ->  broadcast_to(c * n, ...)     n: elements summed
    a * broadcast_to(c, s)               ->  broadcast_to(a * c, a * broadcast's shape)
    broadcast_to(c, (m, k)) @ B          ->  broadcast_to(sum(B, axis=0) * c, (m, n))
    A @ broadcast_to(c, (k, n))          ->  broadcast_to(sum(A, axis=1)[:, None] * c, (m, n))
    broadcast_to(c, s)[key]              ->  broadcast_to(c, the result's shape)
    f(broadcast_to(c, s))                ->  broadcast_to(f(c), s)            (f elementwise)
    sum(a.T, axis=k)                     ->  sum(a, axis=1 - k)               (a a matrix)

Each function takes a statement and a map from a Var to the statement that made it, and
returns None (no change) or the statements that replace it, the last one defining the same
output. ``c`` is a literal scalar; results keep the statement's shape and dtype. Shape
operations of broadcast constants (``expand_dims``, ``.T``) fold in simplify.py.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..ir.tape import Aval, Lit, Stmt, Var
from ..rules.elementwise import astype
from ..rules.registry import RuleSet

_UNARY = {operator.neg, astype, builtins.float}


def constant_of(atom, producer: dict[Var, Stmt]):
    """``c`` when ``atom`` is ``broadcast_to(c, shape)`` of a literal scalar, else None."""
    stmt = producer.get(atom) if isinstance(atom, Var) else None
    if stmt is None or stmt.prim.fn is not np.broadcast_to or not isinstance(stmt.args[0], Lit):
        return None
    value = stmt.args[0].value
    return value if np.ndim(value) == 0 and not isinstance(value, (bool, np.bool_)) else None


def broadcast_constant(stmt: Stmt, producer: dict[Var, Stmt], rules: RuleSet) -> list[Stmt] | None:
    fn = stmt.prim.fn
    if fn is np.sum:
        return _sum(stmt, producer, rules)
    if fn is operator.matmul:
        return _matmul(stmt, producer, rules)
    if fn is operator.mul:
        return _scale(stmt, producer, rules)
    if fn is operator.getitem and constant_of(stmt.args[0], producer) is not None:
        return [_filled(stmt, constant_of(stmt.args[0], producer), rules)]
    if fn in _UNARY and constant_of(stmt.args[0], producer) is not None:
        rest = [a.value for a in stmt.args[1:]]        # astype's dtype
        value = stmt.prim.fn(constant_of(stmt.args[0], producer), *rest, **dict(stmt.params))
        if np.result_type(value) != stmt.out.aval.dtype:
            return None
        return [_filled(stmt, value, rules)]
    return None


def _filled(stmt: Stmt, value, rules: RuleSet) -> Stmt:
    """``stmt``'s output as ``broadcast_to(value, its shape)``."""
    shape = tuple(Lit(n) for n in stmt.out.aval.shape)
    return stmt.replace(prim=rules.lookup(np.broadcast_to), args=(Lit(value), shape), params=())


def _sum(stmt: Stmt, producer: dict[Var, Stmt], rules: RuleSet) -> list[Stmt] | None:
    source = stmt.args[0]
    c = constant_of(source, producer)
    if c is not None and stmt.param("dtype") is None:
        total = c * (source.aval.size // max(stmt.out.aval.size, 1))
        if np.result_type(total) == stmt.out.aval.dtype:
            return [_filled(stmt, total, rules)]
    inner = producer.get(source) if isinstance(source, Var) else None
    axis = stmt.param("axis")
    if inner is not None and inner.prim.fn is np.transpose and inner.param("axes") is None \
            and source.aval.ndim == 2 and isinstance(axis, int) and not stmt.param("keepdims"):
        return [stmt.replace(args=(inner.args[0],), params=_with(stmt.params, axis=1 - axis % 2))]
    return None


def _matmul(stmt: Stmt, producer: dict[Var, Stmt], rules: RuleSet) -> list[Stmt] | None:
    """A product with a broadcast constant is a row or column sum, broadcast."""
    a, b = stmt.args
    out = stmt.out.aval
    for side, const, other in ((0, a, b), (1, b, a)):
        c = constant_of(const, producer)
        if c is None or not isinstance(other, Var) or other.aval.ndim != 2 or \
                const.aval.ndim > 2 or out.ndim > 2:
            continue
        axis = 0 if side == 0 else 1
        sums = Var(Aval((other.aval.shape[1 - axis],), other.aval.dtype))
        stmts = [_derived(stmt, sums, rules.lookup(np.sum), (other,), (("axis", axis),))]
        if side == 1 and out.ndim == 2:
            column = Var(Aval(sums.aval.shape + (1,), sums.aval.dtype))
            key = (Lit(slice(None)), Lit(None))
            stmts.append(_derived(stmt, column, rules.lookup(operator.getitem), (sums, key), ()))
            sums = column
        if not (isinstance(c, (int, float)) and c == 1):
            dtype = (np.zeros((), sums.aval.dtype) * c).dtype
            scaled = Var(Aval(sums.aval.shape, dtype))
            stmts.append(_derived(stmt, scaled, rules.lookup(operator.mul), (sums, Lit(c)), ()))
            sums = scaled
        if sums.aval.dtype != out.dtype:
            return None
        shape = tuple(Lit(n) for n in out.shape)
        stmts.append(stmt.replace(prim=rules.lookup(np.broadcast_to), args=(sums, shape), params=()))
        return stmts
    return None


def _scale(stmt: Stmt, producer: dict[Var, Stmt], rules: RuleSet) -> list[Stmt] | None:
    """A product with a broadcast constant that widens the other operand (an outer product
    with ones) is the other operand, scaled, broadcast."""
    for k in (0, 1):
        c, other = constant_of(stmt.args[k], producer), stmt.args[1 - k]
        if c is None or not isinstance(other, Var) or other.aval.shape == stmt.out.aval.shape:
            continue
        shape = tuple(Lit(n) for n in stmt.out.aval.shape)
        if isinstance(c, (int, float)) and c == 1:
            if other.aval.dtype != stmt.out.aval.dtype:
                return None
            return [stmt.replace(prim=rules.lookup(np.broadcast_to), args=(other, shape), params=())]
        scaled = Var(Aval(other.aval.shape, stmt.out.aval.dtype))
        return [_derived(stmt, scaled, stmt.prim, (other, Lit(c)), ()),
                stmt.replace(prim=rules.lookup(np.broadcast_to), args=(scaled, shape), params=())]
    return None


def _derived(stmt: Stmt, out: Var, prim, args: tuple, params: tuple) -> Stmt:
    return Stmt((out,), prim, args, params, stmt.loc, stmt.rule)


def _with(params: tuple, **changes) -> tuple:
    merged = dict(params)
    merged.update(changes)
    return tuple(merged.items())
