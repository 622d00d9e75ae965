"""Recompute cheap forward values in the backward section instead of keeping them (the
buffered form only: it is about memory held, not about what the code says).

A forward value the backward sweep reads again stays alive, in a work array, from where it is
made until its last backward read: across the rest of the forward section, where the arrays
live at once are most numerous. When the value is one cheap operation (a primitive declared
``cheap``, as a loop's backward step reads it too, ad/regions.py: ``+ - *``, a negation,
``np.roll``) of operands that are alive at that backward read anyway (arguments, literals,
values read there or later), computing it again there costs one pass over the array,
and frees its memory for the whole stretch in between; the forward statement that made it may
then write into an operand in place. Logistic regression keeps ``1 + e``, ``p + eps`` and
``1 - y`` this way; recomputing them takes the gradient's peak memory from 8 arrays of the
data's length to 6, below a handwritten gradient's 7.

The recomputed statement is the forward one itself (same primitive, operands and parameters),
so it computes the same bits; it is placed just before the first backward statement reading
the value, and every backward read of the value reads it instead. Small arrays (fewer than
``MIN_SIZE`` elements) are kept: they cost little memory, and a pass costs a call.
"""
from __future__ import annotations

from ..ir.analysis import Analysis
from ..ir.rewrite import resolver, substitute_stmt
from ..ir.tape import Stmt, Tape, Var
from ..rules.registry import RuleSet

MIN_SIZE = 8192             # elements: 64 KB of float64
RULE = "recompute: a cheap forward value, made again here rather than kept in memory"


def recompute(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    if tape.grads is None or tape.tangent is not None:
        return tape, False
    stmts = tape.stmts
    start = next((i for i, s in enumerate(stmts) if s.rule is not None), None)
    if start is None:
        return tape, False
    facts = Analysis(tape)
    placed: dict[int, list[tuple[Stmt, Var]]] = {}      # position -> (statement, value) before it
    for index, stmt in enumerate(stmts[:start]):
        if _cheap(stmt) and stmt.rule is None:
            found = _worth_it(stmt, index, start, facts)
            if found is not None:
                placed.setdefault(found, []).append((stmt, stmt.out))
    if not placed:
        return tape, False
    new_stmts: list[Stmt] = list(stmts[:start])
    mapping: dict[Var, Var] = {}
    resolve = resolver(mapping)
    for index in range(start, len(stmts)):
        for made, value in placed.get(index, ()):
            again = Var(value.aval, hint=value.hint)
            new_stmts.append(made.replace(outs=(again,), loc=stmts[index].loc, rule=RULE))
            mapping[value] = again
        new_stmts.append(substitute_stmt(stmts[index], resolve))
    return tape.copy(stmts=new_stmts), True


def _cheap(stmt: Stmt) -> bool:
    if len(stmt.outs) != 1 or not stmt.prim.cheap or stmt.prim.inplace:
        return False
    aval = stmt.out.aval
    return aval.ndim >= 1 and aval.size >= MIN_SIZE and not aval.weak


def _worth_it(stmt: Stmt, index: int, start: int, facts: Analysis) -> int | None:
    """The position of the first backward statement reading ``stmt``'s value, where it can be
    made again: None unless the forward section reads it too (else nothing is freed), it is
    nobody's memory but its own (no view of it, no update of it, not returned), and each
    operand is an argument or alive there, unchanged since."""
    value = stmt.out
    readers = facts.readers.get(value, [])
    forward = [r for r in readers if r < start]
    backward = [r for r in readers if r >= start]
    if not forward or not backward or value in facts.returned:
        return None
    root = facts.root(value)
    if root is not value or facts.members.get(root, [value]) != [value] or root in facts.updates:
        return None
    first = backward[0]
    for operand in stmt.uses():
        if operand.aval.ndim and operand not in facts.arguments \
                and facts.last_memory.get(operand, -1) < first:
            return None             # kept alive longer for it: nothing gained
        if facts.written_between({facts.root(operand)}, index, first):
            return None
    return first
