"""The one Namer: turns Vars into readable, deterministic Python names.

- Parameters keep their names; values bound to a source name keep it (``h``), later SSA
  versions of the same name get ``h_1``, ``h_2``.
- Adjoints are ``d<primal>`` (``dW``, ``dh``), tangents (forward mode) ``dot_<primal>``. When a gradient is accumulated from several
  contributions, the total gets the plain name and the partials ``dh_1``, ``dh_2``; with
  ``running_sums`` (codegen) the sum keeps one name instead: ``dW = dW + h.T @ t7``.
- Everything else is a temporary ``t1, t2, ...``, numbered densely in statement order.
- An ``inplace`` statement's result shares its first operand's name (``dx[2] += t5``).

- Every name is an identifier in its NFKC normal form (``text.name_base``), compared in that
  form, as Python compares names: ``µ`` and ``μ`` get ``μ`` and ``μ_1``, a dict key ``x²`` is
  ``x2``. Names the generated module reads or defines (``RESERVED``: ``xp``, ``_result``,
  ``isinstance``...) are never given to a value; a parameter with one is renamed (``xp_1``).

Names never depend on Var ids, so the same program always gets the same names.
"""
from __future__ import annotations

from typing import Callable, Iterable

from ..text import name_base, normal
from .analysis import Analysis
from .tape import ACCUMULATE, Tape, Var

# Names the generated module defines or reads at module level: its imports, its helpers
# (codegen/writer.py, codegen/workspace.py) and the builtins generated code calls. A parameter
# or value with one of these names is renamed (``xp_1``), never allowed to shadow it. The
# ``_ONES_n`` vectors take fresh names as they are made; ``out`` is taken where the function
# has the ``out=`` keyword (codegen/writer.py). ``write_module`` checks the result.
MODULE_NAMES = frozenset({"xp", "math", "threading", "GuardError", "_mismatch", "_result",
                          "_deliver", "_out_entry", "_check_out", "_work_arrays", "WORK_ARRAYS",
                          "_local", "_"})
BUILTINS_USED = frozenset({"float", "int", "complex", "len", "isinstance", "getattr", "hasattr",
                           "repr", "slice", "tuple", "list", "TypeError", "ValueError", "None",
                           "True", "False"})
RESERVED = MODULE_NAMES | BUILTINS_USED
# Names that values other than parameters avoid, for the reader (a temporary is never ``sum``);
# a parameter keeps them (``self``).
AVOIDED = frozenset({"bool", "abs", "max", "min", "range", "sum", "print", "dict", "type", "self"})


class Namer:
    """Hands out names; every name it gives is an identifier in its NFKC normal form (the form
    Python compares), so two names it gives are never one variable to Python."""

    def __init__(self, taken: Iterable[str] = (), tape: Tape | None = None):
        self.taken: set[str] = {normal(n) for n in RESERVED | set(taken)}
        self.avoided: set[str] = set(AVOIDED)
        self.source_names: set[str] = set()
        self.names: dict[Var, str] = {}
        self.params: list[str] = []        # the generated function's parameter names
        self._temps = 0
        self._suffix: dict[str, int] = {}    # base -> the smallest k that may give a free base_k
        # a tape's side tables (Tape.hints, Tape.primals) over the Vars' own fields
        self.hint_of: Callable[[Var], str | None] = tape.hint_of if tape else lambda v: v.hint
        self.primal_of: Callable[[Var], Var | None] = \
            tape.primal_of if tape else lambda v: v.grad_of
        self.prefix_of: Callable[[Var], str] = tape.prefix_of if tape else lambda v: "d"

    def reserve_sources(self, names: Iterable[str]) -> None:
        """Source names are kept for their own values; other values avoid them."""
        self.source_names |= {name_base(n) for n in names}

    def _free(self, name: str, own: bool = False) -> bool:
        return name not in self.taken and name not in self.avoided and \
            (own or name not in self.source_names)

    def param(self, name: str) -> str:
        """The generated function's name for a parameter: its own unless that would shadow
        a name the module needs (``xp`` -> ``xp_1``)."""
        base = name_base(name)
        if base not in self.taken:
            self.taken.add(base)
            return base
        return self.fresh(base, own=True)

    def fresh(self, base: str, own: bool = False) -> str:
        """``base`` (made an identifier, ``text.name_base``) if free, else ``base_1``,
        ``base_2``, ...

        A source name is free only for a value that was bound to it (``own``).
        """
        base = name_base(base)
        if self._free(base, own):
            self.taken.add(base)
            return base
        return self.suffixed(base)

    def suffixed(self, base: str) -> str:
        """The first free ``base_1``, ``base_2``, ... A name once taken stays taken, so the
        search goes on from where the last one for ``base`` stopped: linear in the names."""
        k = self._suffix.get(base, 1)
        while not self._free(f"{base}_{k}"):
            k += 1
        self._suffix[base] = k + 1
        self.taken.add(f"{base}_{k}")
        return f"{base}_{k}"

    def temp(self) -> str:
        while True:
            self._temps += 1
            name = f"t{self._temps}"
            if self._free(name):
                self.taken.add(name)
                return name

    def name_var(self, var: Var) -> str:
        if var in self.names:
            return self.names[var]
        hint, primal = self.hint_of(var), self.primal_of(var)
        if hint:
            name = self.fresh(hint, own=True)
        elif primal is not None and primal in self.names:
            name = self.fresh(self.prefix_of(var) + self.names[primal])
        else:
            name = self.temp()
        self.names[var] = name
        return name

    def __getitem__(self, var: Var) -> str:
        return self.names[var]

    def __contains__(self, var: Var) -> bool:
        return var in self.names


def name_tape(tape: Tape, skip: set[Var] = frozenset(), taken: Iterable[str] = (),
              running_sums: bool = False, facts: Analysis | None = None) -> Namer:
    """Name every Var of ``tape`` except those in ``skip`` (inlined into expressions);
    ``facts``: the tape's analysis, when the caller has one."""
    namer = Namer(taken, tape)
    hint_of, primal_of = tape.hint_of, tape.primal_of
    hints = {hint_of(inp.var) for inp in tape.inputs if hint_of(inp.var)}
    for stmt in tape.stmts:
        hints |= {hint_of(v) for v in stmt.outs if hint_of(v)}
    namer.reserve_sources(hints | set(tape.params))
    namer.params = [namer.param(p) for p in tape.params]
    for inp in tape.inputs:
        if inp.path == ():
            namer.names[inp.var] = namer.params[inp.argnum]
        else:
            namer.name_var(inp.var)
    totals = _accumulated_totals(tape, skip)
    continued = _running_sums(tape, facts or Analysis(tape)) if running_sums else {}
    for stmt in tape.stmts:
        for v in stmt.outs:
            if v in skip:
                continue
            if stmt.prim.inplace and stmt.first_var in namer.names:
                namer.names[v] = namer.names[stmt.first_var]
            elif v in continued and continued[v] in namer.names:
                namer.names[v] = namer.names[continued[v]]
            elif running_sums and primal_of(v) is not None and primal_of(v) in namer.names:
                namer.names[v] = namer.fresh(tape.prefix_of(v) + namer.names[primal_of(v)])
            elif primal_of(v) is not None and primal_of(v) in namer.names \
                    and v is not totals.get(primal_of(v), v):
                namer.names[v] = _partial_name(namer, tape.prefix_of(v) + namer.names[primal_of(v)])
            else:
                namer.name_var(v)
    return namer


def _running_sums(tape: Tape, facts: Analysis) -> dict[Var, Var]:
    """Accumulating additions whose running total is not read again: the sum may reuse the
    total's name (``dW = dW + t``)."""
    last_use = facts.last
    continued = {}
    for index, stmt in enumerate(tape.stmts):
        total = stmt.first_var
        if stmt.rule == ACCUMULATE and total is not None and last_use.get(total) == index \
                and tape.primal_of(total) is tape.primal_of(stmt.out):
            continued[stmt.out] = total
    return continued


def _partial_name(namer: Namer, base: str) -> str:
    """Partials of an accumulated gradient: ``dh_1``, ``dh_2`` (the total takes ``dh``)."""
    return namer.suffixed(base)


def _accumulated_totals(tape: Tape, skip: set[Var]) -> dict[Var, Var]:
    """For each primal, the last named adjoint defined for it: the accumulated total."""
    totals: dict[Var, Var] = {}
    for stmt in tape.stmts:
        for v in stmt.outs:
            if tape.primal_of(v) is not None and v not in skip and not stmt.prim.inplace:
                totals[tape.primal_of(v)] = v
    return totals
