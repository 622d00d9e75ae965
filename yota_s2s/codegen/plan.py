"""The plan of a generated function: every decision the writer reads, made before it writes.

``plan_function`` runs the planners in their order and returns a frozen ``Plan``:

- which temporaries are written inline, inside their one reader's expression (``_inlinable``);
- scalar mode (scalars.py): the vectors read one element at a time as Python floats;
- memory (buffers.py): which array each value is written into (work arrays held per thread,
  in place over an operand, the returned arrays and the work arrays they lend);
- names: the tape's names (ir/names.py), values sharing an array sharing a name
  (``_shared_names``), a name holding one value at a time (``_separate_names``), the work
  arrays' and the scalar elements' names;
- the cache-blocked chains (blocks.py);

and ``verify.check_written`` checks the plan (a name read after another value took it) before
a line is written. A loop region's decisions are a ``RegionPlan`` of its own (regions.py fills
it as it plans the loop), holding its body's ``Plan``. plan_text.py prints both, a decision a
line (``yota-s2s trace --plan``).

The plan is a codegen-level decision: the tape is unchanged, and the plain form's plan is
the inlining and the names alone.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..ir import verify
from ..ir.analysis import Analysis
from ..ir.names import Namer, namer_of
from ..ir.tape import ACCUMULATE, Lit, Stmt, Tape, Var
from .blocks import Chain, plan_chains
from .buffers import MemoryPlan, plan_memory, storage, writer
from .render import block_key
from .scalars import ScalarPlan, name_scalars, plan_scalars


@dataclass(frozen=True)
class Plan:
    """What a function (or a loop body) is written as. ``form``: ``"plain"`` (the review form:
    inlining and names), ``"buffered"`` (scalar mode, planned memory, blocked chains on a CPU)
    or ``"body"`` (a loop body's planned memory, regions.py). ``facts``: the analysis with the
    inlined values read where their reader is. The work arrays a writer adds later (a 0-d array
    for reductions, a loop's stacks: ``Emitter.add_slot``) join ``memory.slots`` and
    ``slot_names``; ``regions`` collects the plans of the function's loop regions as they are
    planned."""

    tape: Tape
    form: str
    facts: Analysis
    scalars: ScalarPlan
    inlined: frozenset
    memory: MemoryPlan
    names: Namer
    scalar_names: Mapping[tuple[Var, int], str]
    slot_names: list[str]
    chains: tuple[Chain, ...]
    lent_arrays: Mapping[int, str]       # id of a returned group -> its array, made early
    regions: list = field(default_factory=list)     # RegionPlan, in the order they are planned


@dataclass(frozen=True)
class RegionPlan:
    """A loop region's decisions (region_plan.py): how the body reads its invariants and
    carries its values, and the statements of the step written another way than its ``body``
    plan writes them. Statements are the body's; a statement's new form is the node written;
    regions.py writes the region from it."""

    stmt: Stmt                       # the region's statement in the enclosing tape
    body: Plan
    kept: Mapping[Var, str]          # invariants under the enclosing code's names
    lists: frozenset                 # invariants read as Python lists (scalar mode)
    sums: frozenset                  # carried element-wise accumulators, lists of floats
    floats: frozenset                # carried Python floats
    listed: frozenset                # stacks made as Python lists
    held: Mapping[Var, str]          # stacks in work arrays held per thread -> the array
    summed: frozenset                # terms written inline into their running sum
    running: Mapping[int, ast.stmt]  # id of a body statement -> the node it is written as
    dropped: frozenset               # ids of body statements left out
    returned: Mapping[Var, ast.expr]     # accumulators made in the returned array
    once: Mapping                    # accumulators whose rows are each assigned once
    first: tuple                     # (stack, carried, row, save): first rows saved before
    before: tuple                    # (product, the line before the loop): made at once
    lent: tuple[ast.stmt, ...]       # making the body's work arrays that results lend
    turning: tuple[tuple[str, str], ...]     # work arrays taken in turn, swapped each step
    starts: tuple                    # (carried, InStack | ZeroList | ... ): how each starts
    invariants: tuple                # (invariant, value): those under a name of their own
    moved: tuple                     # (name, value): carried values rebound after a step
    results: tuple                   # (name, value): results under the enclosing names


# How a loop starts a carried value (region_plan.py ``starts``; regions.py writes each by its type)

@dataclass(frozen=True)
class InStack:
    """A stack in its work array (region_slots.held_stacks): ``H = buf1``."""
    array: str


@dataclass(frozen=True)
class ZeroList:
    """A list of ``size`` Python floats (scalar mode): ``dx = [0.0] * 3``; of bools (a stack
    of conditions, region_scalars.py ``list_stacks``): ``H_COND = [False] * 20``."""
    size: int
    fill: float | bool = 0.0


@dataclass(frozen=True)
class InReturned:
    """An accumulator made in the returned array (``returned_sums``): ``dW = _result(...)``,
    then ``dW.fill(0.0)`` unless each of its rows is assigned once (``fill``)."""
    call: ast.expr
    fill: bool


@dataclass(frozen=True)
class ZeroedWork:
    """A work array filled with zeros (region_slots.held_zeros), after ``made``: the
    statements that make a returned array lend it."""
    array: str
    made: tuple


@dataclass(frozen=True)
class NewArray:
    """A new array of the value's shape and dtype: ``"zeros"`` or ``"empty"``."""
    made: str


@dataclass(frozen=True)
class OwnCopy:
    """The loop's own copy of the operand, which the body updates in place."""
    operand: ast.expr


@dataclass(frozen=True)
class Operand:
    """The operand under the body's name."""
    operand: ast.expr


def plan_function(tape: Tape, taken: set[str] = frozenset(), fast: bool = False,
                  blocked: bool = True, inline: set[Var] = frozenset(),
                  named: set[Var] = frozenset(), exclude: frozenset | None = None,
                  carried: dict[Var, Var] | None = None, floats: set[Var] = frozenset(),
                  turns: frozenset = frozenset(), rows: dict | None = None,
                  first: frozenset = frozenset(), homes: dict | None = None,
                  over_carried: bool = False) -> Plan:
    """The plan of ``tape`` (``Emitter``'s arguments: emit.py): ``fast`` plans scalar mode and
    memory, ``exclude`` (not None: a loop body) plans the memory of every value but these,
    without scalar mode."""
    facts = Analysis(tape)
    scalars = plan_scalars(tape, facts) if fast else ScalarPlan(floats=set(floats))
    inlined = _inlined(tape, facts, scalars, inline, named, fast, exclude)
    facts = facts.with_inlined(inlined) if inlined else facts
    memory = plan_memory(tape, scalars, inlined, facts, exclude=exclude or frozenset(),
                         carried=carried, turns=turns, rows=rows, heads=blocked, first=first,
                         homes=homes, over_carried=over_carried) \
        if fast or exclude is not None else MemoryPlan()
    names = namer_of(tape, taken)     # the tape's names (ir/names.py)
    for v, same in _shared_names(tape, memory).items():
        names.names[v] = names[same]
    scalar_names = name_scalars(tape, scalars, names, facts, inlined)
    unbound = inlined | set(scalars.elements)     # elements: bound by x.tolist()
    _separate_names(tape, facts, names, unbound)
    verify.check_written(tape, facts, storage(tape, memory, scalars, facts),
                         {v: n for v, n in names.names.items() if v not in unbound})
    slot_names = [names.fresh(f"buf{i + 1}") for i in range(len(memory.slots))]
    chains = plan_chains(tape, facts, memory, scalars, inlined) if fast and blocked else []
    if chains or not blocked:   # blocked chains hoist returned arrays their own way (blocks.py);
        memory.lent.clear()     # a GPU module keeps its work arrays
    lent_arrays: dict[int, str] = {}
    hosts = [g for g in memory.group.values() if g.kind == "result" and g.head]
    for group in [g for g, _ in memory.lent.values()] + hosts:
        if id(group) not in lent_arrays:
            lent_arrays[id(group)] = names.fresh(names[group.members[-1]] + "_mem")
    form = "buffered" if fast else "plain" if exclude is None else "body"
    return Plan(tape, form, facts, scalars, frozenset(inlined), memory, names, scalar_names,
                slot_names, tuple(chains), lent_arrays)


def _inlined(tape: Tape, facts: Analysis, scalars: ScalarPlan, inline: set[Var],
             named: set[Var], fast: bool, exclude: frozenset | None) -> set[Var]:
    """The temporaries written inline (``_inlinable``, and the caller's ``inline``), but for
    the ``named`` ones, the elements scalar mode reads by name (``x0, x1 = x.tolist()``;
    ``t3 = x7 ** 3.0``) and, where memory is planned, the values written into an array: each
    is a statement of its own."""
    inlined = (_inlinable(tape, facts, scalars.floats) | set(inline)) - set(named) \
        - set(scalars.elements) - set(scalars.unpacked) - scalars.powers
    if fast or exclude is not None:
        squares = _squares_summed(tape, inlined) if exclude is not None else set()
        inlined -= {s.out for s in tape.stmts if s.outs and writer(s)
                    and s.out not in scalars.floats and s.out not in (exclude or ())
                    and s.out not in squares}
    return inlined


def _squares_summed(tape: Tape, inlined: set[Var]) -> set[Var]:
    """The squares written inline into a whole-array sum (``np.sum(h ** 2)``): a loop body
    (regions.py sets ``dot_sums``) writes that sum as a dot product (emit.py
    ``_sum_of_squares``), with no array made."""
    made = {s.out: s for s in tape.stmts if s.outs}
    found = set()
    for stmt in tape.stmts:
        if stmt.prim.fn is np.sum and len(stmt.args) == 1 and not stmt.params \
                and stmt.args[0] in inlined:
            square = made[stmt.args[0]]
            if square.prim.fn is operator.pow and square.args[1] == Lit(2) or \
                    square.prim.fn is operator.mul and square.args[0] is square.args[1]:
                found.add(stmt.args[0])
    return found


def _shared_names(tape: Tape, memory: MemoryPlan) -> dict[Var, Var]:
    """Values sharing an array share a name when they have none of their own: a temporary takes
    the name of the next named value of its group in the same block (``h = X @ W1; h += b1;
    xp.tanh(h, out=h)``), and temporaries after the last named value take the first one's. An
    in-place update (``t1[0] = t4``, which binds no name) is written under its operand's name
    (ir/names.py), so it stays in its operand's block here, whatever line it is on."""
    block = {o: block_key(s) for s in tape.stmts for o in s.outs}
    updates = {s.out for s in tape.stmts if s.prim.inplace and s.outs}
    returned = {g for g in tape.grads or [] if isinstance(g, Var)}
    inputs = {i.var for i in tape.inputs}   # (a carried array a body writes over keeps its name)
    shared: dict[Var, Var] = {}
    for group in {id(g): g for g in memory.group.values()}.values():
        pending: list[Var] = []
        for m in group.members:
            if pending and block[pending[0]] != block[m] and m not in updates:
                shared.update((p, pending[0]) for p in pending[1:])
                pending = []
            if tape.hint_of(m) or tape.primal_of(m) is not None or m in returned or m in inputs:
                shared.update((p, m) for p in pending)
                pending = []
            else:
                pending.append(m)
        shared.update((p, pending[0]) for p in pending[1:])
    return shared


def _separate_names(tape: Tape, facts: Analysis, namer: Namer, unbound: set[Var]) -> None:
    """A name holds one value at a time. Where a value is still read after another value takes
    its name (two parts of one gradient, both named after it; a temporary named after the
    array it is written into), the earlier value gets a name of its own, together with the
    in-place updates that write through it (they are written under their operand's name).
    ``unbound`` values have no assignment of their own (inlined; elements of an unpacked array,
    bound once by ``x.tolist()``, where two reads of one element share its name)."""
    updated = {s.first_var: s.out for s in tape.stmts if s.prim.inplace and s.outs}
    holder: dict[str, Var] = {}
    for v in facts.defined:             # inputs first, then statement order
        name = namer.names.get(v)
        if name is None or v in unbound:
            continue
        old = holder.get(name)
        if old is not None and old is not v and facts.last.get(old, -1) > facts.defined[v]:
            chain = [old]
            while chain[0] in facts.producer and facts.producer[chain[0]].prim.inplace \
                    and namer.names.get(facts.producer[chain[0]].first_var) == name:
                chain.insert(0, facts.producer[chain[0]].first_var)
            while chain[-1] in updated and namer.names.get(updated[chain[-1]]) == name:
                chain.append(updated[chain[-1]])
            own = namer.fresh(name)
            for c in chain:
                namer.names[c] = own
            holder[own] = old
        holder[name] = v


def _inlinable(tape: Tape, facts: Analysis, floats: set[Var] = frozenset()) -> set[Var]:
    """Temporaries written inline into their one use in the same block: the same source line,
    with no statement from another line in between (so code keeps the source's order), and no
    in-place update between the two that writes memory the temporary reads. A Python float of
    scalar mode (``floats``) is written inline even where it has a name (a gradient, a source
    name): a statement of its own costs it a third of an operation."""
    block: list[int] = []                     # statement index -> its contiguous block
    current, last_key = 0, None
    for stmt in tape.stmts:
        if block_key(stmt) != last_key:
            current, last_key = current + 1, block_key(stmt)
        block.append(current)
    uses, readers = facts.uses, facts.readers
    outputs = set(facts.outputs) | tape.in_place_targets()
    named = {i.var for i in tape.inputs}      # values that keep a name (adjoints are d<name>)
    inline, reads = set(), {}
    for i, stmt in enumerate(tape.stmts):
        plain = stmt.prim.nout == 1 and not (stmt.prim.effect or stmt.prim.inplace or stmt.prim.creates) \
            and stmt.prim.emit[:1] not in (("branch",), ("while",), ("unwind",))  # (an ``if``,
        # a ``while``: codegen/branches.py, whiles.py)
        v = stmt.outs[0] if stmt.outs else None
        user = readers[v][-1] if v in readers else None
        # (a pass may have rewritten the addition into a one-operand statement: check the arity)
        partial = uses[v] == 1 and tape.stmts[user].rule == ACCUMULATE \
            and len(tape.stmts[user].args) == 2 and tape.stmts[user].args[1] is v
        if not plain or (v not in floats and (tape.hint_of(v) or (tape.primal_of(v) in named
                                                                  and not partial))) \
                or v in outputs or uses[v] != 1:
            named.update(stmt.outs)
            continue
        reads[v] = set().union(*(reads.get(u) or {facts.root(u)} for u in stmt.uses()))
        if block[user] != block[i] or facts.written_between(reads[v], i, user):
            named.add(v)
            reads[v] = None
            continue
        inline.add(v)
    return inline
