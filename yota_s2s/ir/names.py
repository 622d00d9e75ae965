"""The one Namer: turns Vars into readable, deterministic Python names.

- Parameters keep their names; values bound to a source name keep it (``h``), later SSA
  versions of the same name get ``h_1``, ``h_2``.
- Adjoints are ``d<primal>`` (``dW``, ``dh``). When a gradient is accumulated from several
  contributions, the total gets the plain name and the partials ``dh_1``, ``dh_2``; with
  ``running_sums`` (codegen) the sum keeps one name instead: ``dW = dW + h.T @ t7``.
- Everything else is a temporary ``t1, t2, ...``, numbered densely in statement order.
- An ``inplace`` statement's result shares its first operand's name (``dx[2] += t5``).

Names never depend on Var ids, so the same program always gets the same names.
"""
from __future__ import annotations

from typing import Iterable

from .analysis import Analysis
from .tape import ACCUMULATE, Tape, Var

RESERVED = frozenset({"xp", "math", "GuardError", "float", "int", "abs", "max", "min", "len",
                      "range", "sum", "print", "isinstance", "tuple", "list", "dict", "None",
                      "True", "False", "self", "lambda", "def", "return", "in", "is", "not"})


class Namer:
    def __init__(self, taken: Iterable[str] = ()):
        self.taken: set[str] = set(RESERVED) | set(taken)
        self.source_names: set[str] = set()
        self.names: dict[Var, str] = {}
        self._temps = 0

    def reserve_sources(self, names: Iterable[str]) -> None:
        """Source names are kept for their own values; other values avoid them."""
        self.source_names |= set(names)

    def fresh(self, base: str, own: bool = False) -> str:
        """``base`` if free, else ``base_1``, ``base_2``, ...

        A source name is free only for a value that was bound to it (``own``).
        """
        if base not in self.taken and (own or base not in self.source_names):
            self.taken.add(base)
            return base
        k = 1
        while f"{base}_{k}" in self.taken or f"{base}_{k}" in self.source_names:
            k += 1
        self.taken.add(f"{base}_{k}")
        return f"{base}_{k}"

    def temp(self) -> str:
        while True:
            self._temps += 1
            name = f"t{self._temps}"
            if name not in self.taken and name not in self.source_names:
                self.taken.add(name)
                return name

    def name_var(self, var: Var) -> str:
        if var in self.names:
            return self.names[var]
        if var.hint:
            name = self.fresh(var.hint, own=True)
        elif var.grad_of is not None and var.grad_of in self.names:
            name = self.fresh("d" + self.names[var.grad_of])
        else:
            name = self.temp()
        self.names[var] = name
        return name

    def __getitem__(self, var: Var) -> str:
        return self.names[var]

    def __contains__(self, var: Var) -> bool:
        return var in self.names


def name_tape(tape: Tape, skip: set[Var] = frozenset(), taken: Iterable[str] = (),
              running_sums: bool = False) -> Namer:
    """Name every Var of ``tape`` except those in ``skip`` (inlined into expressions)."""
    namer = Namer(taken)
    hints = {v.hint for inp in tape.inputs for v in [inp.var] if v.hint}
    for stmt in tape.stmts:
        hints |= {v.hint for v in stmt.outs if v.hint}
    namer.reserve_sources(hints | set(tape.params))
    for param in tape.params:
        namer.taken.add(param)
    for inp in tape.inputs:
        if inp.path == ():
            namer.names[inp.var] = tape.params[inp.argnum]
        else:
            namer.name_var(inp.var)
    totals = _accumulated_totals(tape, skip)
    continued = _running_sums(tape) if running_sums else {}
    for stmt in tape.stmts:
        for v in stmt.outs:
            if v in skip:
                continue
            if stmt.prim.inplace and stmt.first_var in namer.names:
                namer.names[v] = namer.names[stmt.first_var]
            elif v in continued and continued[v] in namer.names:
                namer.names[v] = namer.names[continued[v]]
            elif running_sums and v.grad_of is not None and v.grad_of in namer.names:
                namer.names[v] = namer.fresh("d" + namer.names[v.grad_of])
            elif v.grad_of is not None and v.grad_of in namer.names and v is not totals.get(v.grad_of, v):
                namer.names[v] = _partial_name(namer, "d" + namer.names[v.grad_of])
            else:
                namer.name_var(v)
    return namer


def _running_sums(tape: Tape) -> dict[Var, Var]:
    """Accumulating additions whose running total is not read again: the sum may reuse the
    total's name (``dW = dW + t``)."""
    last_use = Analysis(tape).last
    continued = {}
    for index, stmt in enumerate(tape.stmts):
        total = stmt.first_var
        if stmt.rule == ACCUMULATE and total is not None and last_use.get(total) == index \
                and total.grad_of is stmt.out.grad_of:
            continued[stmt.out] = total
    return continued


def _partial_name(namer: Namer, base: str) -> str:
    """Partials of an accumulated gradient: ``dh_1``, ``dh_2`` (the total takes ``dh``)."""
    k = 1
    while f"{base}_{k}" in namer.taken or f"{base}_{k}" in namer.source_names:
        k += 1
    namer.taken.add(f"{base}_{k}")
    return f"{base}_{k}"


def _accumulated_totals(tape: Tape, skip: set[Var]) -> dict[Var, Var]:
    """For each primal, the last named adjoint defined for it: the accumulated total."""
    totals: dict[Var, Var] = {}
    for stmt in tape.stmts:
        for v in stmt.outs:
            if v.grad_of is not None and v not in skip and not stmt.prim.inplace:
                totals[v.grad_of] = v
    return totals
