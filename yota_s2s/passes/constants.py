"""Plain constants: a float64 (complex128) numpy scalar is written as a Python float (complex)
where that gives the same result.

Under NumPy 2's promotion rules (NEP 50) ``np.float64(2.0)`` is a "strong" operand and ``2.0``
a "weak" one: ``x32 * np.float64(2.0)`` is float64, ``x32 * 2.0`` float32. The frontend keeps
the numpy scalars of the user's code (``np.log(2 * np.pi)``, ``1 / np.sqrt(d)``) as they are,
so the tape computes what numpy computes, and the writer spells them ``xp.float64(...)``. In
the common case every array operand is float64 (or an integer, a bool) already; the constant
then decides nothing, and this pass makes it the plain literal ``1.8378770664093453``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.tape import Lit, Tape, Var, tree_atoms
from ..ir.values import weak_scalar, weak_tree
from ..rules.registry import RuleSet

_STRONG = (np.float64, np.complex128)


def plain_constants(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    stmts, changed = [], False
    for stmt in tape.stmts:
        if _has_strong(stmt) and _decides_nothing(stmt):
            stmt = stmt.replace(args=tuple(weak_tree(a) for a in stmt.args),
                                params=tuple((k, _weak_param(v)) for k, v in stmt.params))
            changed = True
        stmts.append(stmt)
    return (tape.copy(stmts=stmts), True) if changed else (tape, False)


def _has_strong(stmt) -> bool:
    return any(isinstance(a, Lit) and type(a.value) in _STRONG
               for arg in stmt.args for a in tree_atoms(arg)) or \
        any(type(v) in _STRONG for _, v in stmt.params)


def _decides_nothing(stmt) -> bool:
    """Would a weak Python scalar in place of the float64/complex128 constants give the same
    dtypes? Yes where some operand is an array (or numpy scalar) and every one of them is a
    bool, an integer, float64, complex128 or wider: a weak float makes an integer float64, and
    the constant cannot widen float64 further. Not for float32, float16 or complex64 operands,
    and not for Python-float (weak) operands, whose result the constant makes float64."""
    operands = [a for arg in stmt.args for a in tree_atoms(arg) if isinstance(a, Var)]
    return bool(operands) and all(not v.aval.weak and _wide(v.aval.dtype) for v in operands)


def _wide(dtype: np.dtype) -> bool:
    if dtype.kind in "biu":
        return True
    if dtype.kind == "f":
        return dtype.itemsize >= 8
    if dtype.kind == "c":
        return dtype.itemsize >= 16
    return False


def _weak_param(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_weak_param(v) for v in value)
    return weak_scalar(value)
