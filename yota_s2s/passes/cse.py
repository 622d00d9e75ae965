"""Common-subexpression elimination across the forward and backward sections.

Two statements with the same primitive, operands and parameters compute the same value, so the
second one reuses the first (``x[2]`` read once; ``np.exp(x)`` in a rule and in the forward
code computed once). Statements that make fresh buffers (``np.zeros`` for an accumulation),
update in place, or make a value that is updated in place are never merged.
"""
from __future__ import annotations

from typing import Any

from ..ir.tape import Tape, Var
from ..rules.registry import RuleSet
from .rewrite import resolver, substitute, substitute_stmt


def cse(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    return _cse(tape, across=True)


def cse_within_sections(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    """CSE for the review form: a backward statement never reuses a forward value, so each
    backward line computes what its rule says (``dy * (1 - h * h)``, not ``dy * (1 - t6)``
    where ``t6`` is a forward ``h * h``) and no gradient is written as a forward value."""
    return _cse(tape, across=False)


def _cse(tape: Tape, across: bool) -> tuple[Tape, bool]:
    seen: dict[Any, tuple[Var, ...]] = {}
    mapping: dict[Var, Var] = {}
    resolve = resolver(mapping)
    kept = []
    targets = tape.in_place_targets()
    hints = dict(tape.hints)
    for stmt in tape.stmts:
        stmt = substitute_stmt(stmt, resolve)
        key = (stmt.prim, stmt.args, stmt.params) + (() if across else (stmt.rule is None,))
        written = any(o in targets for o in stmt.outs)    # each in-place target is its own array
        if stmt.prim.creates or stmt.prim.inplace or written or not _hashable(key):
            kept.append(stmt)
        elif key not in seen:
            seen[key] = stmt.outs
            kept.append(stmt)
        else:
            for new, old in zip(stmt.outs, seen[key]):
                mapping[new] = old
                if hints.get(old, old.hint) is None and tape.hint_of(new) is not None:
                    hints[old] = tape.hint_of(new)     # keep the source name the reader knows
    if len(kept) == len(tape.stmts):
        return tape, False
    return substitute(tape, mapping, kept, hints=hints), True


def _hashable(key: Any) -> bool:
    try:
        hash(key)
        return True
    except TypeError:
        return False
