"""Common-subexpression elimination across the forward and backward sections.

Two statements with the same primitive, operands and parameters compute the same value, so the
second one reuses the first (``x[2]`` read once; ``np.exp(x)`` in a rule and in the forward
code computed once). Sums and products of numbers are the same in either order (IEEE ``+`` and
``*`` commute), so ``3 * x`` and ``x * 3`` are one value. Statements that make fresh buffers
(``np.zeros`` for an accumulation), update in place, or make a value that is updated in place
are never merged; nor are the copies that give returned gradients arrays of their own
(passes/outputs.py: ``dx4 = np.copy(dx3)``, ``dx5 = np.copy(dx3)``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.rewrite import resolver, substitute, substitute_stmt
from ..ir.tape import Lit, Stmt, Tape, Var
from ..rules.registry import RuleSet


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
    returned = set(tape.outputs())      # a returned copy is that output's own array (outputs.py)
    hints = dict(tape.hints)
    folded = dict(tape.folded)           # the rules of a merged statement stay with its value
    made_backward: set[Var] = set()      # gradients and values made from them
    for stmt in tape.stmts:
        stmt = substitute_stmt(stmt, resolve)
        key = (stmt.prim, _operands(stmt), stmt.params)
        if stmt.rule is not None:
            if not across and (any(u in made_backward for u in stmt.uses())
                               or any(tape.primal_of(o) is not None for o in stmt.outs)):
                key += ("a gradient",)
                made_backward.update(stmt.outs)
        written = any(o in targets for o in stmt.outs)    # each in-place target is its own array
        if stmt.prim.creates or stmt.prim.inplace or written or \
                (stmt.prim.fn is np.copy and any(o in returned for o in stmt.outs)):
            kept.append(stmt)
            continue
        try:
            earlier = seen.get(key)
        except TypeError:       # an unhashable parameter: never merged
            kept.append(stmt)
            continue
        if earlier is None:
            seen[key] = stmt.outs
            kept.append(stmt)
        else:
            for new, old in zip(stmt.outs, earlier):
                mapping[new] = old
                if hints.get(old, old.hint) is None and tape.hint_of(new) is not None:
                    hints[old] = tape.hint_of(new)     # keep the source name the reader knows
            rules = ((stmt.rule,) if stmt.rule else ()) + folded.get(stmt.outs[0], ()) \
                if stmt.outs else ()
            if rules:
                first = earlier[0]
                folded[first] = tuple(dict.fromkeys(folded.get(first, ()) + rules))
    if len(kept) == len(tape.stmts):
        return tape, False
    return substitute(tape, mapping, kept, hints=hints, folded=folded), True


def _operands(stmt: Stmt) -> tuple:
    """The operands as CSE compares them: a sum or product of two numbers (numeric results)
    in one order, a literal first, then Vars in creation order."""
    args = stmt.args
    if not stmt.prim.commutative or len(args) != 2 or stmt.params \
            or stmt.out.aval.dtype.kind not in "biufc" \
            or not all(isinstance(a, Var) or _number(a) for a in args):
        return args
    a, b = args
    return args if _order(a) <= _order(b) else (b, a)


def _number(atom) -> bool:
    return isinstance(atom, Lit) and isinstance(atom.value, (bool, int, float, complex))


def _order(atom) -> tuple:
    return (0, 0) if isinstance(atom, Lit) else (1, atom.id)

