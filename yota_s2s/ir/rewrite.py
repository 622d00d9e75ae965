"""Small helpers the passes share: substituting values and counting uses."""
from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from .tape import Stmt, Tape, Var, tree_map


def resolver(mapping: dict[Var, Any]):
    """A function from an atom to what ``mapping`` makes of it (chains followed)."""
    def resolve(atom):
        while isinstance(atom, Var) and atom in mapping:
            atom = mapping[atom]
        return atom
    resolve.mapping = mapping       # (substitute_stmt: a statement reading none stays as it is)
    return resolve


class Folding:
    """The rules of the backward statements a pass folds away, handed on to the statements
    that read their values (``Tape.folded``), so the review form's ``# rule`` comments keep
    them: ``note`` before a statement is substituted, ``gone`` when its value is replaced,
    ``kept`` when it stays."""

    def __init__(self, tape: Tape, mapping: dict[Var, Any]):
        self.tape, self.mapping = tape, mapping
        self.gone: dict[Var, tuple[str, ...]] = {}
        self.folded = dict(tape.folded)
        self.took: tuple[str, ...] = ()

    def note(self, stmt: Stmt) -> None:
        gone = self.gone
        self.took = _merged(*(gone[v] for v in stmt.uses() if v in gone)) if gone else ()

    def replaced(self, stmt: Stmt) -> None:
        own = (stmt.rule,) if stmt.rule else ()
        self.gone[stmt.out] = _merged(own, self.folded.get(stmt.out, ()), self.took)

    def kept(self, stmts: list[Stmt], before: Stmt | None = None,
             producer: dict[Var, Stmt] | None = None) -> None:
        """``stmts`` replace ``before`` (itself, unless rewritten): a backward value it read
        and they do not (``x * broadcast_to(c)`` written ``x * c``) hands its rules on too."""
        took = self.took
        if before is not None and producer is not None \
                and not (len(stmts) == 1 and stmts[0] is before):     # not just itself
            now = {v for s in stmts for v in s.uses()}
            for v in before.uses():
                made = producer.get(v)
                if v not in now and made is not None and made.rule:
                    took = _merged(took, (made.rule,), self.folded.get(v, ()))
        if took:
            for s in stmts:
                for o in s.outs[:1]:
                    self.folded[o] = _merged(self.folded.get(o, ()), took)


def _merged(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r for g in groups for r in g))


def substitute_stmt(stmt: Stmt, resolve) -> Stmt:
    """``stmt`` with each operand ``resolve`` replaces replaced (itself if none is)."""
    mapping = getattr(resolve, "mapping", None)
    if mapping.keys().isdisjoint(stmt.uses()) if mapping is not None \
            else all(resolve(v) is v for v in stmt.uses()):
        return stmt
    args = tuple(tree_map(resolve, a) for a in stmt.args)
    return stmt if args == stmt.args else stmt.replace(args=args)


def substitute(tape: Tape, mapping: dict[Var, Any], stmts: list[Stmt] | None = None,
               **changes: Any) -> Tape:
    """``tape`` with every use of a key of ``mapping`` replaced by its value (and ``changes``
    to its other fields)."""
    resolve = resolver(mapping)
    new_stmts = [substitute_stmt(s, resolve) for s in (tape.stmts if stmts is None else stmts)]
    grads = None if tape.grads is None else [None if g is None else resolve(g) for g in tape.grads]
    tangent = None if tape.tangent is None else tree_map(resolve, tape.tangent)
    new = tape.copy(stmts=new_stmts, result=tree_map(resolve, tape.result), grads=grads,
                    tangent=tangent, **changes)
    # a gradient of a replaced value is the gradient of its replacement (``d`` + its name)
    for stmt in new_stmts:
        for v in stmt.outs:
            primal = new.primal_of(v)
            if primal in mapping and isinstance(resolve(primal), Var):
                new.primals[v] = resolve(primal)
    return new


def use_counts(tape: Tape) -> Counter:
    counts = Counter(itertools.chain.from_iterable(stmt.uses() for stmt in tape.stmts))
    counts.update(a for a in tape.outputs() if isinstance(a, Var))
    return counts


def live(stmts: list[Stmt], outs: list) -> list[Stmt]:
    """The statements of ``stmts`` that ``outs`` need, and those with an effect, in order."""
    needed = set(outs)
    kept = []
    for stmt in reversed(stmts):
        if stmt.prim.effect or any(o in needed for o in stmt.outs):
            kept.append(stmt)
            needed.update(stmt.uses())
    kept.reverse()
    return kept
