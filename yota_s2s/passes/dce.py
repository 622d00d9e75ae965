"""Dead-code elimination: keep only statements that the outputs (or an effect) need.

With ``wrt=`` limiting the gradients asked for, this is what removes the work for the others.
"""
from __future__ import annotations

from ..ir.tape import Tape, Var
from ..rules.registry import RuleSet


def dce(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    live: set[Var] = {a for a in tape.outputs() if isinstance(a, Var)}
    kept = []
    for stmt in reversed(tape.stmts):
        if stmt.prim.effect or any(o in live for o in stmt.outs):
            kept.append(stmt)
            live.update(stmt.uses())
    kept.reverse()
    return tape.copy(stmts=kept), len(kept) != len(tape.stmts)
