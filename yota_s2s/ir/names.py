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
- A loop region's body (ir/region.py) is named by the same pass, after the tape that holds it
  (``Namer.bodies``): its invariants keep the names of the values they stand for, a carried
  value takes its name in the source (``h``, ``dh``; the loop's result is bound to it after the
  loop where the two differ) and keeps it through the step where the old value is not read
  after the new one is made (``h = xp.tanh(W @ h + ...)``). A value of one body that another
  body reads again (a state the backward loop reads from its stack, a gradient's primal) has
  the name it has there, so the backward step says ``dt5`` for the gradient of the forward
  step's ``t5``; the state carried into a step and the new one are ``h_prev`` and ``h_new``
  there. A body's other names are new to the whole function (``_body_namer``).

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
from .region import loop_of
from .tape import ACCUMULATE, Stmt, Tape, Var

# Names the generated module defines or reads at module level: its imports (``numpy``: a dask
# module's argument checks, codegen/targets.py), its helpers (codegen/module.py,
# codegen/workspace.py) and the builtins generated code calls. A parameter
# or value with one of these names is renamed (``xp_1``), never allowed to shadow it. The
# ``_ONES_n`` vectors take fresh names as they are made; ``out`` is taken where the function
# has the ``out=`` keyword (codegen/module.py). ``write_module`` checks the result.
MODULE_NAMES = frozenset({"xp", "numpy", "math", "threading", "GuardError", "_mismatch",
                          "_result", "_deliver", "_out_entry", "_check_out", "_overlap", "_shared",
                          "_work_arrays", "WORK_ARRAYS", "_local", "_arrays", "_", "STACKS",
                          "_stacks", "_held_stacks", "StepLimitError", "ROW_LISTS"})
BUILTINS_USED = frozenset({"float", "int", "complex", "len", "isinstance", "getattr", "hasattr",
                           "repr", "slice", "tuple", "list", "TypeError", "ValueError",
                           "OverflowError", "RuntimeError", "None", "True", "False"})
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
        self.fixed: frozenset[str] = frozenset(self.taken)     # never given, in a body either
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
        self.bodies: dict = {}          # a region's Loop -> the Namer of its body
        self.known: dict[Var, str] = {}     # names of values of other tapes (other bodies)
        self.indices: set[str] = set()      # the loop indices' names (``for t in ...``)

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
        elif self.name_of(primal) is not None:
            name = self.fresh(self.prefix_of(var) + self.name_of(primal))
        else:
            name = self.temp()
        self.names[var] = name
        return name

    def name_of(self, var: Var | None) -> str | None:
        """``var``'s name here, or in the tape it was made in (a value of another body)."""
        return self.names.get(var) or self.known.get(var) if var is not None else None

    def __getitem__(self, var: Var) -> str:
        return self.names[var]

    def __contains__(self, var: Var) -> bool:
        return var in self.names

    def copy(self, taken: Iterable[str] = ()) -> "Namer":
        """A Namer that keeps these names and hands out fresh ones avoiding ``taken`` too."""
        other = Namer(taken)
        other.taken |= self.taken
        other.fixed = self.fixed | other.fixed
        other.avoided, other.source_names = set(self.avoided), set(self.source_names)
        other.names, other.params, other._temps = dict(self.names), list(self.params), self._temps
        other._suffix = dict(self._suffix)
        other.hint_of, other.primal_of = self.hint_of, self.primal_of
        other.prefix_of = self.prefix_of
        other.bodies, other.known = dict(self.bodies), dict(self.known)
        other.indices = set(self.indices)
        return other

    def clashes(self, taken: Iterable[str]) -> bool:
        """Some name given here or in a loop body is one of ``taken`` (then the tape is named
        again)."""
        given = self.given()
        return any(normal(n) in given for n in taken)

    def given(self) -> set[str]:
        """The names given here and in the loop bodies."""
        return set(self.names.values()) | set(self.params) | \
            set().union(*(inner.given() for inner in self.bodies.values()))


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
    """Name every Var of ``tape`` except those in ``skip``, then the bodies of its loop
    regions (``Namer.bodies``); ``facts``: the tape's analysis, when the caller has one. A
    running sum of a gradient keeps one name (``dW = dW + t``)."""
    facts = facts or Analysis(tape)
    namer = Namer(taken, tape)
    _name_values(namer, tape, skip, facts)
    _name_bodies(namer, tape, facts, {})
    return namer


def _name_values(namer: Namer, tape: Tape, skip: set[Var], facts: Analysis,
                 given: dict[Var, str] | None = None) -> None:
    """The naming of one tape's values; ``given``: names decided already (a body's inputs)."""
    given = given or {}
    hint_of, primal_of = tape.hint_of, tape.primal_of
    hints = {hint_of(inp.var) for inp in tape.inputs if hint_of(inp.var)}
    for stmt in tape.stmts:
        hints |= {hint_of(v) for v in stmt.outs if hint_of(v)}
    namer.reserve_sources(hints | set(tape.params))
    if given:
        namer.params = [given[inp.var] for inp in tape.inputs]
        namer.names.update(given)
    else:
        namer.params = [namer.param(p) for p in tape.params]
    for inp in tape.inputs:
        if inp.var in given:
            continue
        if inp.path == ():
            namer.names[inp.var] = namer.params[inp.argnum]
        else:
            namer.name_var(inp.var)
    totals = _accumulated_totals(tape, skip)
    continued = _running_sums(tape, facts)
    chained = set(continued) | set(continued.values())
    for index, stmt in enumerate(tape.stmts):
        loop = loop_of(stmt)
        dying = dying_inits(stmt, facts, index, namer.names) if loop is not None else {}
        carried = loop.carried if dying else []
        for i, v in enumerate(stmt.outs):
            if v in skip:
                continue
            if carried and hint_of(v) and dying.get(carried[i]) == name_base(hint_of(v)):
                namer.names[v] = dying[carried[i]]      # the stack H, updated by the loop: H
            elif v in namer.known and tape.primal_of(v) is None \
                    and namer._free(namer.known[v], own=True):      # made again from another body
                namer.names[v] = namer.fresh(namer.known[v], own=True)
            elif stmt.prim.inplace and stmt.first_var in namer.names:
                namer.names[v] = namer.names[stmt.first_var]
            elif v in continued and continued[v] in namer.names:
                namer.names[v] = namer.names[continued[v]]
            elif namer.name_of(primal_of(v)) is not None \
                    and v not in chained and v is not totals.get(primal_of(v), v):
                namer.names[v] = _partial_name(namer, tape.prefix_of(v) +
                                               namer.name_of(primal_of(v)))
            else:
                namer.name_var(v)


def _name_bodies(namer: Namer, tape: Tape, facts: Analysis, known: dict[Var, str]) -> None:
    """Name the body of each region of ``tape`` (module docstring), in statement order; every
    body's names are taken in ``namer`` after, so no name given later in the enclosing scope
    is one of them. ``known``: the names of the values of the bodies named so far."""
    for index, stmt in enumerate(tape.stmts):
        loop = loop_of(stmt)
        if loop is None:
            continue
        inner = _body_namer(namer, stmt, dying_inits(stmt, facts, index, namer.names), known)
        namer.bodies[loop] = inner
        namer.taken |= inner.taken
        namer._temps = max(namer._temps, inner._temps)


def arm_namer(namer: Namer, stmt: Stmt, arm: Tape, fixed: dict[Var, str] | None = None,
               operands: dict[Var, str] | None = None) -> Namer:
    """The names of one arm of the branch statement ``stmt`` (ir/branch.py) in the code
    ``namer`` names: each input takes the name of the operand it stands for (``operands``, else
    the enclosing namer's), ``fixed`` names its caller gives (a result named like the branch's
    result), and its other values names new to the enclosing code."""
    return tape_namer(namer, arm, stmt.args[1:], fixed, operands)


def tape_namer(namer: Namer, arm: Tape, atoms: Iterable, fixed: dict[Var, str] | None = None,
               operands: dict[Var, str] | None = None) -> Namer:
    """The names of a tape a statement holds (a branch's arm, a while's body: ir/whiles.py)
    in the code ``namer`` names, each input named after the atom it stands for (``atoms``, in
    input order; None: a name of its own), as ``arm_namer`` says."""
    fixed = fixed or {}
    inner = Namer(namer.taken | set(namer.names.values()), arm)
    inner.known = {**namer.known, **namer.names}
    inner._temps = namer._temps
    inner.reserve_sources(namer.source_names)
    names = operands if operands is not None else namer.names
    given: dict[Var, str] = {}
    for inp, atom in zip(arm.inputs, atoms):
        name = names.get(atom) if isinstance(atom, Var) else None
        if name in given.values():      # an operand given twice: the arm reads the first
            name = None
        given[inp.var] = name or inner.fresh(inp.var.hint or "k")
    given.update(fixed)
    _name_values(inner, arm, frozenset(fixed), Analysis(arm), given)
    _name_bodies(inner, arm, Analysis(arm), dict(inner.known))
    return inner


def dying_inits(stmt: Stmt, facts: Analysis, index: int, names: dict[Var, str]
                ) -> dict[Var, str]:
    """Carried values whose initial value is read last by the loop (at ``index``), once: they
    may take its name (``h = h0`` is not needed where the source wrote ``h`` before the loop)."""
    loop = loop_of(stmt)
    operands = dict(zip(loop.operand_vars(), stmt.args))
    once = [a for a in stmt.args if isinstance(a, Var)]
    return {c: names[a] for c, a in operands.items()
            if c in loop.carried and isinstance(a, Var) and a in names and once.count(a) == 1
            and facts.last.get(a) == index and a not in facts.outputs
            and facts.defined.get(a, -1) >= 0}


def _body_namer(namer: Namer, stmt: Stmt, dying: dict[Var, str], known: dict[Var, str]
                ) -> Namer:
    """The names of one region's body. It shares a name with the enclosing code only where
    a value is shared (an invariant, a carried value and the loop's result, a carried value's
    ``dying`` initial value): its other names are new to the whole function, so tracing the
    module again (a gradient of the gradient) finds in the loop no name bound before it,
    which would read as a carried value."""
    loop = loop_of(stmt)
    body = loop.body
    inner = Namer(namer.taken, body)
    known.update(namer.names)
    inner._temps, inner.known, inner.indices = namer._temps, known, namer.indices
    inner.reserve_sources(namer.source_names)
    hints = {body.hint_of(v) for s in body.stmts for v in s.outs if body.hint_of(v)}
    inner.reserve_sources(hints | set(body.params))
    given: dict[Var, str] = {}
    operands = dict(zip(loop.operand_vars(), stmt.args))
    for k in loop.invariants:                # the enclosing value's own name
        atom = operands[k]
        if isinstance(atom, Var) and atom in namer.names:
            given[k] = namer.names[atom]
    inner.taken |= set(given.values())
    read = {namer.names[a] for a in stmt.args if isinstance(a, Var) and a in namer.names}
    for i, inp in enumerate(body.inputs):
        v = inp.var
        if v in given:
            continue
        param = body.params[i] if i < len(body.params) else "v"
        result = namer.names.get(stmt.outs[i - 1]) if v in loop.carried else None
        if v is loop.index and name_base(param) in namer.indices:
            given[v] = name_base(param)      # an int the next loop's ``for`` binds again
        elif result is not None and result == param:
            given[v] = result                # h = h0; for ...: h = ...; the result is h
            inner.taken.add(result)
        elif dying.get(v) == name_base(param):      # h = zeros(...); for ...: h = f(h)
            given[v] = dying[v]
        elif result is not None and not inner._free(name_base(param), own=True) \
                and result not in read and result not in given.values():
            given[v] = result
            inner.taken.add(result)
        else:
            given[v] = inner.fresh(param, own=True)
    namer.indices.add(given[loop.index])
    facts = Analysis(body)
    _name_values(inner, body, frozenset(), facts, given)
    prev = same_names(inner, loop, facts)
    known.update(inner.names)
    known.update(prev)
    _name_bodies(inner, body, facts, known)
    return inner


def same_names(namer: Namer, loop, facts: Analysis) -> dict[Var, str]:
    """A carried value's new version takes its name where the old one is not read after the
    new one is made (``h = xp.tanh(W @ h + ...)``), so the step needs no rebinding; the old
    one is then ``h_prev`` and the new one ``h_new`` to the bodies named after (a backward
    step reads both)."""
    body, names = loop.body, namer.names
    prev: dict[Var, str] = {}
    count: dict[str, int] = {}
    for n in names.values():
        count[n] = count.get(n, 0) + 1
    for c, o in zip(loop.carried, body.result):
        if not isinstance(o, Var) or o not in facts.producer or o not in names:
            continue
        if names[o] == names[c] or count[names[o]] != 1 or facts.producer[o].prim.inplace:
            continue
        # every value under the old one's name: an in-place statement's result shares it
        # (``dh[:, 2] += 1.0``), and one read after the new value is made (a row saved at the
        # step's end) would read the new value under that name
        holders = [v for v, n in names.items() if n == names[c]]
        if all(facts.last.get(v, -1) <= facts.defined[o] and v not in facts.outputs
               for v in holders):
            count[names[o]] -= 1
            names[o] = names[c]
            prev[c], prev[o] = names[c] + "_prev", names[c] + "_new"
    return prev


def _running_sums(tape: Tape, facts: Analysis) -> dict[Var, Var]:
    """Accumulating additions whose running total, made by the backward section, is not read
    again: the sum may reuse the total's name (``dW = dW + t``)."""
    last_use, producer = facts.last, facts.producer
    continued = {}
    for index, stmt in enumerate(tape.stmts):
        total = stmt.first_var
        if stmt.rule == ACCUMULATE and total is not None and last_use.get(total) == index \
                and tape.primal_of(total) is tape.primal_of(stmt.out) \
                and (total in producer and producer[total].rule is not None   # not a forward value
                     or facts.defined.get(total) == -1 and total.grad_of is not None):
            # (a loop step's input that is a gradient: its carried ``dh``, its ``dW``)
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
