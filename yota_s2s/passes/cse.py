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
    """CSE for the review form: a gradient (or a backward value computed from one) never
    reuses a forward value, so no gradient is written as a forward value that equals it only
    for these arguments (``dw = out + out``, where ``out = w * x ** 2`` stands for
    ``dout * x ** 2`` because ``dout`` is ``w``). A rule's operands, computed from forward
    values alone (``h * h`` for ``1 - y * y``), still reuse them."""
    return _cse(tape, across=False)


def _cse(tape: Tape, across: bool) -> tuple[Tape, bool]:
    seen: dict[Any, tuple[Var, ...]] = {}
    mapping: dict[Var, Var] = {}
    resolve = resolver(mapping)
    kept = []
    targets = tape.in_place_targets()
    hints = dict(tape.hints)
    made_backward: set[Var] = set()      # gradients and values made from them
    for stmt in tape.stmts:
        stmt = substitute_stmt(stmt, resolve)
        key = (stmt.prim, stmt.args, stmt.params)
        if stmt.rule is not None:
            if not across and (any(u in made_backward for u in stmt.uses())
                               or any(tape.primal_of(o) is not None for o in stmt.outs)):
                key += ("a gradient",)
                made_backward.update(stmt.outs)
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
