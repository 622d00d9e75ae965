"""The one Namer: turns Vars into readable, deterministic Python names.

- Parameters keep their names; values bound to a source name keep it (``h``), later SSA
  versions of the same name get ``h_1``, ``h_2``.
- Adjoints are ``d<primal>`` (``dW``, ``dh``, ``dt5`` for the temporary ``t5``), tangents
  (forward mode) ``dot_<primal>``. When a gradient is accumulated from several contributions,
  a running sum keeps the total's name (``dW = dW + h.T @ dt7``), and a contribution that is
  not itself the running total is a part: ``dh_part1``, ``dh_part2`` (never ``dh_1``, which
  reads as the gradient of ``h_1``).
- Everything else is a temporary ``t1, t2, ...``, numbered densely in statement order.
- ``y`` and ``dy`` are the rules' words for a statement's result and its incoming gradient
  (the ``# rule`` comments of the module say ``dy * (1 - y * y)``): a user's value or parameter
  with one of these names is renamed ``y_`` / ``dy_``, its gradient ``dy_``/``ddy_``.

``name_tape`` is the one naming pass: ``assign_names`` runs it once on a finished tape and
keeps the result as the tape's side table ``Tape.namer``; the tape printer, both codegen forms
and the review page read their names from it, so a value has one name everywhere (the
buffered form may give a temporary written into another value's array that value's name).
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
                          "_deliver", "_out_entry", "_check_out", "_overlap", "_shared",
                          "_work_arrays", "WORK_ARRAYS", "_local", "_"})
BUILTINS_USED = frozenset({"float", "int", "complex", "len", "isinstance", "getattr", "hasattr",
                           "repr", "slice", "tuple", "list", "TypeError", "ValueError", "None",
                           "True", "False"})
RESERVED = MODULE_NAMES | BUILTINS_USED
# Names that values other than parameters avoid, for the reader (a temporary is never ``sum``);
# a parameter keeps them (``self``).
AVOIDED = frozenset({"bool", "abs", "max", "min", "range", "sum", "print", "dict", "type", "self"})
# The rules' vocabulary (rules/: ``dy * (1 - y * y)``): no value or parameter of the user's is
# called this in generated code, where ``# rule`` comments use these words.
RULE_WORDS = frozenset({"y", "dy"})


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
        self._suffix: dict[tuple[str, str], int] = {}   # (base, sep) -> the smallest k that may be free
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
        a name the module needs (``xp`` -> ``xp_1``) or is a rule word (``y`` -> ``y_``)."""
        base = name_base(name)
        if base in RULE_WORDS:
            return self.fresh(base + "_", own=True)
        if base not in self.taken:
            self.taken.add(base)
            return base
        return self.fresh(base, own=True)

    def fresh(self, base: str, own: bool = False) -> str:
        """``base`` (made an identifier, ``text.name_base``) if free, else ``base_1``,
        ``base_2``, ...

        A source name is free only for a value that was bound to it (``own``). A rule word
        is never given: ``y`` gets ``y_``, then ``y_1``, ``y_2``.
        """
        base = name_base(base)
        first = base + "_" if base in RULE_WORDS else base
        if self._free(first, own):
            self.taken.add(first)
            return first
        return self.suffixed(base)

    def suffixed(self, base: str, sep: str = "_") -> str:
        """The first free ``base_1``, ``base_2``, ... (``sep`` between). A name once taken stays
        taken, so the search goes on from where the last one for ``base`` stopped: linear in
        the names."""
        k = self._suffix.get((base, sep), 1)
        while not self._free(f"{base}{sep}{k}"):
            k += 1
        self._suffix[(base, sep)] = k + 1
        self.taken.add(f"{base}{sep}{k}")
        return f"{base}{sep}{k}"

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

    def copy(self, taken: Iterable[str] = ()) -> "Namer":
        """A Namer that keeps these names and hands out fresh ones avoiding ``taken`` too."""
        other = Namer(taken)
        other.taken |= self.taken
        other.avoided, other.source_names = set(self.avoided), set(self.source_names)
        other.names, other.params, other._temps = dict(self.names), list(self.params), self._temps
        other._suffix = dict(self._suffix)
        other.hint_of, other.primal_of = self.hint_of, self.primal_of
        other.prefix_of = self.prefix_of
        return other

    def clashes(self, taken: Iterable[str]) -> bool:
        """Some name given here is one of ``taken`` (then the tape is named again)."""
        given = set(self.names.values()) | set(self.params)
        return any(normal(n) in given for n in taken)


def assign_names(tape: Tape, taken: Iterable[str] = ()) -> Tape:
    """The naming pass, once, on a finished tape: ``tape.namer`` (a side table) names every
    value; printers and codegen read it (``namer_of``)."""
    tape.namer = name_tape(tape, taken=taken)
    return tape


def namer_of(tape: Tape, taken: Iterable[str] = ()) -> Namer:
    """The tape's names: its side table when it has one that avoids ``taken``, else the same
    pass run now (a tape printed before it was finished)."""
    namer = getattr(tape, "namer", None)
    if namer is None or namer.clashes(taken):
        return name_tape(tape, taken=taken)
    return namer.copy(taken)


def name_tape(tape: Tape, skip: set[Var] = frozenset(), taken: Iterable[str] = (),
              facts: Analysis | None = None) -> Namer:
    """Name every Var of ``tape`` except those in ``skip``; ``facts``: the tape's analysis,
    when the caller has one. A running sum of a gradient keeps one name (``dW = dW + t``)."""
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
    continued = _running_sums(tape, facts or Analysis(tape))
    chained = set(continued) | set(continued.values())
    for stmt in tape.stmts:
        for v in stmt.outs:
            if v in skip:
                continue
            if stmt.prim.inplace and stmt.first_var in namer.names:
                namer.names[v] = namer.names[stmt.first_var]
            elif v in continued and continued[v] in namer.names:
                namer.names[v] = namer.names[continued[v]]
            elif primal_of(v) is not None and primal_of(v) in namer.names \
                    and v not in chained and v is not totals.get(primal_of(v), v):
                namer.names[v] = _partial_name(namer, tape.prefix_of(v) + namer.names[primal_of(v)])
            else:
                namer.name_var(v)
    return namer


def _running_sums(tape: Tape, facts: Analysis) -> dict[Var, Var]:
    """Accumulating additions whose running total, made by the backward section, is not read
    again: the sum may reuse the total's name (``dW = dW + t``)."""
    last_use, producer = facts.last, facts.producer
    continued = {}
    for index, stmt in enumerate(tape.stmts):
        total = stmt.first_var
        if stmt.rule == ACCUMULATE and total is not None and last_use.get(total) == index \
                and tape.primal_of(total) is tape.primal_of(stmt.out) \
                and total in producer and producer[total].rule is not None:   # not a forward value
            continued[stmt.out] = total
    return continued


def _partial_name(namer: Namer, base: str) -> str:
    """Parts of an accumulated gradient: ``dh_part1``, ``dh_part2`` (the total takes ``dh``)."""
    return namer.suffixed(base, "_part")


def _accumulated_totals(tape: Tape, skip: set[Var]) -> dict[Var, Var]:
    """For each primal, the last named adjoint defined for it: the accumulated total."""
    totals: dict[Var, Var] = {}
    for stmt in tape.stmts:
        for v in stmt.outs:
            if tape.primal_of(v) is not None and v not in skip and not stmt.prim.inplace:
                totals[tape.primal_of(v)] = v
    return totals
