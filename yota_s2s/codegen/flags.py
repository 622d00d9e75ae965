"""A bool number in arithmetic as a conditional float: ``0.5 * (v == 0.2)`` (the tie of a
clip's, a maximum's gradient) is ``0.5 if v == 0.2 else 0.0``. numpy has no scalar fast path
for a Python float and a ``np.bool_`` (nor for ``np.bool_ + np.float64``): each such operation
goes through 0-d arrays, ~5 us and 24 bytes of array data, where the conditional costs ~50 ns
and allocates nothing; the values and bits are the same (``c * True`` is ``c``, ``c * False``
is ``c * 0.0``, a bool read as a float is ``1.0`` or ``0.0``)::

    t219 = t108 * ((1.0 if h_2 < v_18 else 0.0) + (0.5 if h_2 == v_18 else 0.0))

The conditional is Python's float where numpy gives a float64 scalar: so it is written only
where nothing can tell them apart: every value made of it is read only by ``+ - *`` of float64
and bool operands (a narrower float would take a Python float's dtype, NEP 50), up to where a
float64 array or numpy number meets it (the result is numpy's again); none is returned.
"""
from __future__ import annotations

import ast
import math
import operator

import numpy as np

from ..ir.tape import Lit, Stmt, Var
from ..ir.whiles import while_atoms, while_of

_ARITHMETIC = {operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult}
_MAYBE_PYTHON = {np.minimum, np.maximum, np.clip}     # a while's step: Python's (trip_floats.py)


def _flag(atom) -> bool:
    """A ``np.bool_`` (a comparison's of numpy numbers; Python's bool has the fast path)."""
    return isinstance(atom, Var) and atom.aval.shape == () and atom.aval.dtype == np.bool_ \
        and not atom.aval.weak


def _factor(atom) -> bool:
    return isinstance(atom, Lit) and type(atom.value) is float and math.isfinite(atom.value)


def flag_arithmetic(emitter, stmt: Stmt) -> ast.expr | None:
    """``c if b else 0.0`` for ``c * b`` (``c`` a float literal), ``(1.0 if b else 0.0)`` for a
    bool operand of any other ``+ - *`` that makes a float64 number; None where it stays (a
    bool after a numpy number or array, ``dy * (v <= 5.0)``: numpy's fast path already)."""
    if not _applies(emitter, stmt):
        return None
    a, b = stmt.args
    if stmt.prim.fn is operator.mul and (_factor(a) and _flag(b) or _flag(a) and _factor(b)):
        c, flag = (a, b) if _factor(a) else (b, a)
        return _conditional(emitter.atom(flag), c.value, c.value * 0.0)
    left, right = (_conditional(emitter.atom(x), 1.0, 0.0) if _flag(x) else emitter.atom(x)
                   for x in stmt.args)
    return ast.BinOp(left, _ARITHMETIC[stmt.prim.fn](), right)


def _applies(emitter, stmt: Stmt) -> bool:
    return stmt.prim.fn in _ARITHMETIC and emitter.device == "cpu" and not stmt.params \
        and len(stmt.args) == 2 and any(_flag(a) for a in stmt.args) \
        and stmt.out.aval.shape == () and stmt.out.aval.dtype == np.float64 \
        and _written(emitter, stmt)


def _written(emitter, stmt: Stmt) -> bool:
    """Whether ``stmt`` is written with conditional floats (decided once; one asked again
    while it is being decided is taken as written: its value Python's float, the cautious
    side for the values around it)."""
    decided, key = emitter.flag_forms, ("written", id(stmt))
    if key not in decided:
        decided[key] = True
        a, b = stmt.args     # (numpy's number or array, then a bool: numpy's fast path)
        decided[key] = not (_flag(b) and not _flag(a) and _numpy(a, emitter)) \
            and _unseen(emitter, stmt, set())
    return decided[key]


def _conditional(test: ast.expr, yes: float, no: float) -> ast.IfExp:
    return ast.IfExp(test, ast.Constant(yes), _number(no))


def _number(value: float) -> ast.expr:
    """``-0.0`` as Python prints it: a unary minus of ``0.0`` (the same float)."""
    if math.copysign(1.0, value) < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _numpy(atom, emitter) -> bool:
    if not isinstance(atom, Var):
        return False
    known, key = emitter.flag_forms, ("numpy", atom)
    if key not in known:
        known[key] = False      # (asked again while deciding: maybe Python's, the cautious side)
        known[key] = _numpy_now(atom, emitter)
    return known[key]


def _numpy_now(atom: Var, emitter) -> bool:
    """A float64 array, or a numpy float64 number at run time for sure: not a Python float
    (weak, scalar mode's, made of a conditional float by ``+ - *``), nor a number that may be
    one (a loop's or an arm's input, a carried ``dh = 0.0``; an extremum, trip_floats.py)."""
    if atom.aval.dtype != np.float64 or atom.aval.weak or atom in emitter.scalars.floats:
        return False
    made = emitter.facts.producer.get(atom)
    if atom.aval.ndim:      # (not a loop's Python list of floats, regions.py)
        return atom not in emitter.lists and atom not in emitter.list_names
    if made is None:
        return _numpy_input(emitter, atom)
    fn = made.prim.fn
    if fn in _MAYBE_PYTHON or getattr(fn, "__module__", None) in ("math", "builtins"):
        return False
    if getattr(fn, "__module__", None) == "_operator" and fn not in _ARITHMETIC:
        return any(_numpy(x, emitter) for x in made.args)     # ``v ** 0.2``: Python's of Python's
    if fn not in _ARITHMETIC:
        return True
    if any(_numpy(x, emitter) for x in made.args):
        return True
    return any(_flag(x) for x in made.args) and not _applies(emitter, made)


def _numpy_input(emitter, var: Var) -> bool:
    """An input of the function (not weak: numpy's); of a while's step that the loop does not
    carry, a row of a stack (numpy's number, or, where a stack is a list of Python floats, one
    read only beside float64 arrays, codegen/whiles.py ``_listed``) or an invariant, as its
    value before the loop is (``while_atoms``); a carried one may be Python's (``dh = 0.0``),
    as may an arm's or a loop's input."""
    within, outer = emitter.within, emitter.enclosing
    if outer is None:
        return True
    if within is None or while_of(within[0]) is None or var in within[1]:
        return False
    inputs = [i.var for i in emitter.tape.inputs]
    if var not in inputs:
        return False
    atom = while_atoms(within[0])[inputs.index(var)]
    return atom is None or _numpy(atom, outer)


def _unseen(emitter, stmt: Stmt, seen: set) -> bool:
    """Whether ``stmt``'s value, as Python's float, reads as numpy's would: a float64 array or
    numpy number among its operands makes it numpy's; otherwise every reader is ``+ - *`` of
    float64 and bool operands, whose value is followed the same way, and none is returned."""
    value, facts = stmt.out, emitter.facts
    if any(_numpy(x, emitter) for x in stmt.args if x is not value):
        return True
    if value in seen:
        return True
    seen.add(value)
    if value in facts.returned:
        return False
    for index in facts.readers.get(value, ()):
        reader = emitter.tape.stmts[index]
        if reader.prim.fn not in _ARITHMETIC or reader.params or len(reader.outs) != 1 \
                or reader.out.aval.dtype != np.float64 or not all(
                    isinstance(x, Lit) and type(x.value) in (int, float, bool) or
                    isinstance(x, Var) and (x.aval.dtype == np.float64 or _flag(x))
                    and (not x.aval.ndim or _numpy(x, emitter)) for x in reader.args):
            return False
        if not _unseen(emitter, reader, seen):
            return False
    return True
