"""Constant folding: a statement whose operands are all literals becomes a literal.

Rules instantiated with a literal ``dy`` (the seed 1.0) and simplification leave such
statements behind (``2 - 1``). Only scalars fold: a float array stays a statement, made when the
code runs, so no large constant is ever written into the generated module.
"""
from __future__ import annotations

from ..ir.rewrite import Folding, resolver, substitute, substitute_stmt
from ..ir.tape import Lit, Tape, Var
from ..ir.values import normalize_static, weak_scalar
from ..ir.verify import call_stmt
from ..rules.registry import RuleSet


def fold(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    mapping: dict[Var, Lit] = {}
    resolve = resolver(mapping)
    kept = []
    folding = Folding(tape, mapping)
    for stmt in tape.stmts:
        folding.note(stmt)
        if _foldable(stmt, mapping):
            lit_stmt = substitute_stmt(stmt, resolve)
            (value,) = call_stmt(lit_stmt, {})
            value = normalize_static(value)
            if stmt.out.aval.weak:      # weak as the statement's result was (NEP 50): a
                value = weak_scalar(value)  # strong np.float64 stays one, so no dtype changes
            if getattr(value, "ndim", 0) == 0:
                folding.replaced(stmt)
                mapping[stmt.out] = Lit(value)
                continue
        kept.append(stmt)
        folding.kept([stmt])
    if not mapping:
        return tape, False
    return substitute(tape, mapping, kept, folded=folding.folded), True


def _foldable(stmt, mapping) -> bool:
    p = stmt.prim
    if p.effect or p.creates or p.inplace or p.nout != 1:
        return False
    return all(v in mapping for v in stmt.uses())       # every operand a literal, or one now

