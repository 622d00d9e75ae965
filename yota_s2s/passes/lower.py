"""Lowering: a primitive that numpy computes one element at a time, written as the SIMD ufuncs
that compute the same formula (the buffered form on a CPU only: it is about speed, not about
what the code says; the plain form and a GPU module keep the one call).

numpy's ``logaddexp`` is a scalar loop: per element, ``max(a, b) + log1p(exp(-|a - b|))`` with
the C library's ``exp`` and ``log1p`` (numpy's ``npy_logaddexp``). Its ``exp``, ``log1p``,
``absolute``, ``negative``, ``maximum`` and ``add`` ufuncs run SIMD loops (x86-64 with AVX2 or
AVX-512): on the bench machine, ``np.logaddexp(0.0, x)`` over 1e5 float64 takes 1.7 ms, the
same formula as six ufunc calls 0.29 ms. ``logaddexp(c, x)`` with a finite number ``c``
(``logaddexp(0.0, x)`` is softplus) is written::

    a = |x - c|                     # (|x| for c = 0)
    l = log1p(exp(-a))
    y = maximum(x, c) + l

the formula numpy evaluates, so the result differs from numpy's by the ulps of the SIMD
``exp`` and ``log1p`` (within 1 ulp each) against the C library's. Infinities and nan come out
as numpy's: ``x = inf`` gives inf, ``x = -inf`` gives ``c``, nan gives nan. Two array operands
are left alone: for two infinities of one sign, ``a - b`` is nan where numpy returns the
infinity (it tests ``a == b`` first). Arrays of fewer than ``MIN_SIZE`` elements are left alone
too: six calls cost more than the scalar loop saves.

``np.mean`` of a whole float array is a Python function (numpy's ``_methods._mean``: the
count, the sum, the division, a few microseconds of Python per call, more than the sum of a
small array takes). ``mean(x)`` is written ``sum(x) / n``, what that function computes: the same
bits, for float64 and float32 (numpy sums float16 in float32; an integer array's mean is a
float64: both are left alone), without the Python around it.

The statements replace the one that made ``y``, at its place, with its source location; ``y``
keeps its Var (its name, its readers, its gradient links).
"""
from __future__ import annotations

import math
import operator
from dataclasses import replace

import numpy as np

from ..ir.region import loop_of, loop_primitive
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from ..rules.indexing import setitem_
from ..rules.registry import RuleSet

MIN_SIZE = 512          # elements: below, one scalar loop beats six calls
ROWS_MIN_STEPS = 8      # a loop this long or longer reads a broadcast invariant made once
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def lower(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    new_stmts: list[Stmt] = []
    changed = False
    for stmt in tape.stmts:
        found = _softplus_form(stmt)
        if found is not None:
            new_stmts += _lowered(stmt, *found, rules)
        elif _whole_mean(stmt):
            new_stmts += _mean_as_sum(stmt, rules)
        elif _roll_form(stmt) is not None:
            new_stmts += _roll_as_copies(stmt, *_roll_form(stmt), rules)
        elif loop_of(stmt) is not None:     # a loop body, lowered as a tape of its own
            body, did = lower(loop_of(stmt).body, rules)
            if did:
                stmt = stmt.replace(params=tuple(
                    (k, replace(v, body=body) if k == "loop" else v) for k, v in stmt.params))
            made = _rows_made_once(stmt, rules)
            new_stmts += made or [stmt]
            changed |= did or bool(made)
            continue
        else:
            new_stmts.append(stmt)
            continue
        changed = True
    return (tape.copy(stmts=new_stmts), True) if changed else (tape, False)


def _softplus_form(stmt: Stmt) -> tuple[Var, float] | None:
    """(x, c) for ``y = logaddexp(c, x)`` or ``logaddexp(x, c)`` that lowering applies to."""
    if stmt.prim.ufunc is not np.logaddexp or stmt.params or len(stmt.outs) != 1 \
            or len(stmt.args) != 2:
        return None
    for x, c in (stmt.args, reversed(stmt.args)):
        if isinstance(x, Var) and isinstance(c, Lit) and _finite_real(c.value) \
                and x.aval.dtype in _FLOATS and stmt.out.aval.dtype == x.aval.dtype \
                and stmt.out.aval.shape == x.aval.shape and x.aval.size >= MIN_SIZE:
            return x, float(c.value)
    return None


def _finite_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) \
        and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)


def _lowered(stmt: Stmt, x: Var, c: float, rules: RuleSet) -> list[Stmt]:
    aval = stmt.out.aval
    out: list[Stmt] = []

    def call(fn, *args) -> Var:
        value = Var(aval)
        out.append(Stmt((value,), rules.lookup(fn), args, loc=stmt.loc))
        return value
    a = call(np.absolute, x if c == 0 else call(operator.sub, x, Lit(c)))
    l = call(np.log1p, call(np.exp, call(operator.neg, a)))
    m = call(np.maximum, x, Lit(c))
    out.append(Stmt(stmt.outs, rules.lookup(operator.add), (m, l), loc=stmt.loc))
    return out


def _whole_mean(stmt: Stmt) -> bool:
    """``y = np.mean(x)`` of a whole float64 or float32 array, no other parameter."""
    if stmt.prim.fn is not np.mean or len(stmt.outs) != 1 or len(stmt.args) != 1 \
            or any(stmt.param(p) not in (None, False) for p in ("axis", "dtype", "keepdims")):
        return False
    x = stmt.args[0]
    return isinstance(x, Var) and x.aval.dtype in _FLOATS and not x.aval.weak \
        and x.aval.size > 0 and stmt.out.aval == Aval((), x.aval.dtype)


def _mean_as_sum(stmt: Stmt, rules: RuleSet) -> list[Stmt]:
    x = stmt.args[0]
    total = Var(stmt.out.aval)
    return [Stmt((total,), rules.lookup(np.sum), (x,), loc=stmt.loc),
            Stmt(stmt.outs, rules.lookup(operator.truediv), (total, Lit(x.aval.size)), loc=stmt.loc)]


def _roll_form(stmt: Stmt) -> tuple[Var, int, int] | None:
    """(a, k, axis) for ``y = np.roll(a, shift, axis)`` of an array along one axis by a
    static shift, ``k = shift % n`` not 0, that lowering applies to."""
    if stmt.prim.fn is not np.roll or len(stmt.outs) != 1 or len(stmt.args) != 2:
        return None
    a, shift, axis = stmt.args[0], stmt.args[1], stmt.param("axis")
    if not isinstance(a, Var) or a.aval.ndim == 0 or a.aval.weak or not isinstance(shift, Lit) \
            or type(shift.value) is not int or type(axis) is not int \
            or not -a.aval.ndim <= axis < a.aval.ndim or stmt.out.aval != a.aval:
        return None
    axis %= a.aval.ndim
    n = a.aval.shape[axis]
    return (a, shift.value % n, axis) if n and shift.value % n else None


def _roll_as_copies(stmt: Stmt, a: Var, k: int, axis: int, rules: RuleSet) -> list[Stmt]:
    """``np.roll`` is a Python function (an empty array, index tuples, two slice copies:
    about 9 µs on a 32 x 32 array, where the copies take 1): written as its two copies into a
    new array (a work array in the buffered form), ``y[:, k:] = a[:, :-k]; y[:, :k] = a[:, -k:]``,
    the same elements."""
    aval, n = stmt.out.aval, a.aval.shape[axis]

    def key(part: slice) -> tuple | Lit:
        return (Lit(slice(None)),) * axis + (Lit(part),) if axis else Lit(part)
    dtype = () if aval.dtype == np.float64 else (("dtype", aval.dtype),)
    made, head, y = Var(aval), Var(aval), stmt.outs[0]
    body, tail = Var(Aval(_shape_with(aval.shape, axis, n - k), aval.dtype)), \
        Var(Aval(_shape_with(aval.shape, axis, k), aval.dtype))
    return [Stmt((made,), rules.lookup(np.empty), (Lit(aval.shape),), dtype, stmt.loc, stmt.rule),
            Stmt((body,), rules.lookup(operator.getitem), (a, key(slice(None, n - k))), (),
                 stmt.loc, stmt.rule),
            Stmt((head,), rules.lookup(setitem_), (made, key(slice(k, None)), body), (),
                 stmt.loc, stmt.rule),
            Stmt((tail,), rules.lookup(operator.getitem), (a, key(slice(n - k, None))), (),
                 stmt.loc, stmt.rule),
            Stmt((y,), rules.lookup(setitem_), (head, key(slice(None, k)), tail), (),
                 stmt.loc, stmt.rule)]


def _shape_with(shape: tuple, axis: int, n: int) -> tuple:
    return shape[:axis] + (n,) + shape[axis + 1:]


def _rows_made_once(stmt: Stmt, rules: RuleSet) -> list[Stmt] | None:
    """A loop whose body's ufuncs read an invariant broadcast to their result's shape
    (``t6 += b``: b of 64 elements, t6 of 16 x 64), that invariant made once before the loop in
    that shape, ``xp.copyto(b_rows, xp.broadcast_to(b, (16, 64)))``, and read instead. For a
    broadcast operand numpy's iterator copies the vector into its buffer row after row, on
    every call (numpy 2.4: 1.26 us for that add, where two 16 x 64 arrays take 0.46 us); made
    once, the copy is once per call, not once per step. The same elements added in the same
    order: the same bits. For loops of ``ROWS_MIN_STEPS`` steps or more and results of
    ``MIN_SIZE`` elements or more. The statements before the loop and the loop, or None."""
    loop = loop_of(stmt)
    if loop.length < ROWS_MIN_STEPS:
        return None
    shapes: dict[Var, set] = {}         # invariant -> the shapes it is broadcast to (None: other)
    for s in filter(_elementwise, loop.body.stmts):
        for a in s.args:
            if isinstance(a, Var) and a in loop.invariants:
                shapes.setdefault(a, set()).add(_broadcast_to(a, s.out.aval))
    tiled = {k: found.pop() for k, found in shapes.items() if len(found) == 1 and None not in found}
    if not tiled:
        return None
    operands = dict(zip(loop.operand_vars(), stmt.args))
    names = dict(zip((i.var for i in loop.body.inputs), loop.body.params))
    before: list[Stmt] = []
    rows: dict[Var, Var] = {}           # invariant -> the body's input for its rows
    for k, shape in tiled.items():
        aval = Aval(shape, k.aval.dtype)
        view, made = Var(aval), Var(aval, hint=f"{k.hint}_rows" if k.hint else None)
        before += [Stmt((view,), rules.lookup(np.broadcast_to), (operands[k], Lit(shape)), (),
                        stmt.loc, stmt.rule),
                   Stmt((made,), rules.lookup(np.copy), (view,), (), stmt.loc, stmt.rule)]
        rows[k] = Var(aval, hint=made.hint)
        operands[rows[k]], names[rows[k]] = made, f"{names[k]}_rows"
    body = loop.body
    stmts = [s.replace(args=tuple(rows.get(a, a) if isinstance(a, Var) else a for a in s.args))
             if _elementwise(s) else s for s in body.stmts]
    read = {v for s in stmts for v in s.uses()} | {r for r in body.result if isinstance(r, Var)}
    inputs = [loop.index, *loop.carried, *(k for k in loop.invariants if k in read),
              *rows.values()]
    new_body = body.copy(stmts=stmts, inputs=[Input(v, i) for i, v in enumerate(inputs)],
                         params=tuple(names[v] for v in inputs))
    new_loop = replace(loop, body=new_body)
    region = Stmt(stmt.outs, loop_primitive(new_loop, new_body.params[1:]),
                  tuple(operands[v] for v in new_loop.operand_vars()), (("loop", new_loop),),
                  stmt.loc, stmt.rule)
    return before + [region]


def _elementwise(s: Stmt) -> bool:
    """A ufunc with one result that writes no operand: where an operand's rows may stand for it."""
    return s.prim.ufunc is not None and not s.prim.inplace and not s.prim.effect \
        and len(s.outs) == 1


def _broadcast_to(k: Var, aval: Aval) -> tuple | None:
    """The shape ``k`` is broadcast to as an operand of a ufunc with result ``aval`` where it
    is worth making once (a float array of ``MIN_SIZE`` elements or more, of ``k``'s dtype,
    larger than ``k``); else None."""
    if aval.weak or k.aval.weak or aval.size < MIN_SIZE or aval.dtype not in _FLOATS \
            or k.aval.dtype != aval.dtype or not 0 < k.aval.size < aval.size:
        return None
    return aval.shape if np.broadcast_shapes(k.aval.shape, aval.shape) == aval.shape else None
