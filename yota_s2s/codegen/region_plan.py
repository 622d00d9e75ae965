"""A loop region's plan (plan.py ``RegionPlan``): every decision about writing the region,
made before a line of it is written (regions.py writes it from the plan).

- the body's names (``body_names``: the naming pass's, the invariants the enclosing code names
  kept) and its Emitter, in the buffered form with the body's memory planned (buffers.py) and
  its work arrays made the function's (region_slots.py);
- scalar mode in the body (region_scalars.py): invariants read as lists, accumulators and
  stacks of Python floats;
- the step's statements written another way: running sums added in place (``dW += t``),
  accumulators made in the returned arrays (``returned_sums``), rows assigned once, states
  made in their rows and products made for every step at once (region_rows.py);
- how each carried value starts, the invariants under names of their own, the carried values
  rebound at the end of a step and the region's results under the enclosing code's names.

The body is written once to be looked at (its written statements show which saves and
additions a step makes); the decisions that name things are made in the order the region's
text has them, so that every fresh name is the one the module has always had.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

import numpy as np

from ..ir.analysis import Analysis
from ..ir.branch import branch_of
from ..ir.names import dying_inits, name_tape, same_names
from ..ir.region import EMPTY, handed_over_operands, loop_of, made_stack
from ..ir.tape import Lit, Stmt, Var
from ..ir.whiles import while_of
from . import buffers
from .buffers import Group
from .emit import Emitter
from .out_forms import result_call
from .plan import (InReturned, InStack, NewArray, Operand, OwnCopy, RegionPlan, ZeroedWork,
                   ZeroList)
from .region_rows import (branch_rows, first_rows, input_product, made_in_rows_once, products_before,
                          rows_written_once, state_saves, states_in_rows, values_in_rows)
from .region_scalars import body_scalars, list_stacks
from .region_slots import body_slots, held_stacks, held_zeros, taken_in_turn
from .render import unparse
from .scalars import delivered_list


def plan_region(em: Emitter, stmt: Stmt) -> tuple[RegionPlan, Emitter, list]:
    """The plan of the loop region ``stmt`` in the code ``em`` writes, with the body's
    Emitter and its blocks as first written (the step's statements that the plan does not
    rewrite are written as they are there). The plan joins ``em.plan.regions``."""
    region = _Planner(em, stmt)
    sub, lent, turning = region.write_body()
    em.modules |= sub.modules
    blocks = sub.blocks()
    step = region.rewrites(sub, blocks)
    # the body's work arrays first: a carried array's (``held_zeros``, below) may be lent by
    # a returned array that one of those made
    starts = region.starts(sub, step)
    invariants = region.invariants(sub)
    before = region.rows(sub, step)
    moved = region.moved(sub)
    results = region.results(sub)
    plan = RegionPlan(stmt, sub.plan, dict(region.keep), frozenset(region.lists),
                      frozenset(region.sums), frozenset(region.floats),
                      frozenset(region.listed), dict(region.held), frozenset(region.summed),
                      dict(step.running), frozenset(step.dropped), dict(step.returned),
                      dict(step.once), tuple(step.first), tuple(before), tuple(lent),
                      tuple(turning), tuple(starts), tuple(invariants), tuple(moved),
                      tuple(results))
    em.plan.regions.append(plan)
    return plan, sub, blocks


@dataclass
class _Step:
    """The body's statements written another way than its Emitter wrote them: ``running``
    (a statement's id -> the one node it is written as), ``dropped`` (ids of statements left
    out), ``returned`` (accumulators made in the returned array, ``returned_sums``), ``once``
    (accumulators whose rows are each assigned once, ``rows_written_once``) and ``first`` (the
    stacks whose first row is saved before the loop, ``first_rows``)."""

    running: dict[int, ast.stmt]
    dropped: set[int]
    returned: dict[Var, ast.expr]
    once: dict
    first: list


class _Planner:
    """One loop region being planned, for the Emitter ``em`` of the enclosing code: the body's
    names (``keep``: the invariants the enclosing code names), its scalar plan (``lists``,
    ``sums``, ``floats``: region_scalars.py) and its stacks (``listed`` as lists, ``held`` in
    work arrays). Each method is a step of ``plan_region``, in its order."""

    def __init__(self, em: Emitter, stmt: Stmt):
        self.em, self.stmt = em, stmt
        self.loop = loop = loop_of(stmt)
        self.body = body = loop.body
        self.operands = dict(zip(loop.operand_vars(), stmt.args))
        self.lists, self.sums, self.floats = body_scalars(loop) if em.fast \
            else (set(), set(), set())
        self.keep = self._kept_names()
        # a Python float squared is written ``t * t`` (scalars.square: ``t ** 2`` may raise
        # OverflowError where numpy gives inf): its base needs a name
        self.squared = {s.args[0] for s in body.stmts if s.prim.fn is operator.pow and s.outs
                        and s.out in self.floats}
        self.listed = list_stacks(em, stmt, loop, self.floats)
        self.held = held_stacks(em, stmt, loop, self.listed)
        self.taken = set(em.names.taken) - body_names(em, stmt, self.keep).given()
        self.summed = summed_terms(loop)

    def _kept_names(self) -> dict[Var, str]:
        """The invariants named by the enclosing function, and those read as a list, made
        before the loop: a name of its own, or that of the list an earlier loop made."""
        em, operands = self.em, self.operands
        keep: dict[Var, str] = {}
        for k in self.loop.invariants:
            atom = operands[k]
            if isinstance(atom, Var) and atom in em.names and atom not in em.inlined:
                keep[k] = em.names[atom]
        for k in self.lists:
            keep.pop(k, None)
            a = operands[k]
            if isinstance(a, Var) and a in em.list_names and a in em.facts.arguments:
                keep[k] = em.list_names[a]        # the list an earlier loop made of an argument
            elif isinstance(a, Var) and a in em.lists and a in em.names and a not in em.inlined:
                keep[k] = em.names[a]     # a list already (a stack an earlier loop made): its name
        return keep

    def emitter(self, plan: frozenset | None, carried: dict | None = None,
                turns: frozenset = frozenset(), own: frozenset = frozenset(),
                rows: dict | None = None, first: frozenset = frozenset()) -> Emitter:
        """The body's Emitter, with the names of the naming pass (``body_names``); the memory
        plan's arguments as ``Emitter`` takes them (``plan`` None: no plan)."""
        em, body, loop = self.em, self.body, self.loop
        inner = body_names(em, self.stmt, self.keep)
        named = body.copy(params=tuple(inner.names[inp.var] for inp in body.inputs),
                          name=em.tape.name)
        named.namer = inner
        sub = Emitter(named, taken=self.taken, calls=em.calls, fast=False, roots=em.roots,
                      inline=self.summed, named=self.squared | own, plan=plan, carried=carried,
                      floats=self.floats, turns=turns, rows=rows, first=first,
                      device=em.device)
        sub.dot_sums = em.fast
        sub.enclosing = em              # module-level names (_ONES_n) are the function's
        sub.slot_at = next(i for i, s in enumerate(em.tape.stmts) if s is self.stmt) \
            if em.enclosing is None else em.slot_at     # (a branch's arms place arrays there)
        for k, name in self.keep.items():
            if sub.names[k] != name:
                raise AssertionError(f"loop invariant {name} renamed {sub.names[k]}")
        same_names(sub.names, loop, sub.facts)
        return sub

    def write_body(self) -> tuple[Emitter, list[ast.stmt], list[tuple[str, str]]]:
        """The body's Emitter; in the buffered form, with the body's memory planned (buffers.py):
        its temporaries in work arrays held per thread, written with out= or in place. Also the
        lines that make the work arrays returned arrays lend it, and the pairs of work arrays
        taken in turn (``body_slots``)."""
        em, stmt, loop, body = self.em, self.stmt, self.loop, self.body
        sub = self.emitter(None)
        if not em.fast or self.floats or widened(loop, self.operands):
            return sub, [], []
        # the values made in rows of a stack (found on a first, unplanned look) are left out
        # of the plan
        looked = sub.blocks()
        first = first_rows(sub, loop, looked)
        # (and the values a step assigns to its row of an array written once per row: named,
        # each a statement of its own)
        once_made = made_in_rows_once(em, sub, loop, rows_written_once(sub, loop, looked)) \
            if not self.sums else []
        saves = state_saves(em, stmt, loop, sub, first)
        rows = states_in_rows(sub, saves) + \
            values_in_rows(em, loop, sub, {id(save) for *_, save in first}) + once_made
        # and the running sums (``dW += t``: the accumulator's own array, written below)
        summing = running_sums(sub, loop)
        sums_made = {o for o in body.result if isinstance(o, Var)
                     and id(sub.facts.producer.get(o)) in summing}
        # and values too small to be worth a work array (numpy's own cache serves them)
        small = {v for st in body.stmts for v in st.outs if v.aval.size < buffers.BODY_MIN}
        carried = {o: c for c, o in zip(loop.carried, body.result) if isinstance(o, Var)
                   and sum(o is r for r in body.result) == 1
                   and c in body.owned and not c.aval.weak and c.aval.ndim
                   and c.aval.size >= buffers.BODY_MIN and o not in sums_made}
        # (a sum of a step's products starts from its input's, which can be made before the
        # loop: products_before)
        inputs = frozenset(input_product(s, loop, sub.facts) for s in body.stmts) - {None}
        # (and a branch's results its arms make in a row: buffers._rows)
        armed = branch_rows(em, loop, sub, {id(save) for *_, save in first})
        in_rows = {save.args[2]: (row, free) for _, save, row, free in saves}
        in_rows.update((g, (row, 0)) for g, _, row, _ in armed)
        sub = self.emitter(frozenset(made.out for made, _, _ in rows) | sums_made | small,
                           carried, taken_in_turn(em, stmt, loop, set(carried) | sums_made),
                           frozenset(made.out for made, _, _ in once_made), in_rows, inputs)
        for g, save, _, reads in armed:
            group = sub.memory.group.get(g)
            if group is not None and group.kind == "row":
                group.reads, group.saved = reads, id(save)
                group.unread = sub.facts.readers.get(g) == [sub.facts.defined[save.out]]
        for made, save, _, _ in saves:
            group = sub.memory.group.get(save.args[2])
            if made.prim.emit[:1] == ("branch",) and group is not None and group.kind == "row":
                group.saved = id(save)
        lent, turning = body_slots(em, stmt, sub)
        return sub, lent, turning

    def rewrites(self, sub: Emitter, blocks: list) -> _Step:
        """The statements of the step written another way: running sums added in place, rows
        written once assigned (and made in their row where the plan allows it)."""
        loop = self.loop
        first = first_rows(sub, loop, blocks)
        running = running_sums(sub, loop)
        returned = returned_sums(self.em, self.stmt, loop, sub, running, self.sums)
        once = rows_written_once(sub, loop, blocks) if not self.sums else {}
        for c, (add, node) in once.items():
            running[id(add)] = node
        assigned = set()          # dxs[t] = v left out: v is made in the row (no copy)
        for made, node, add in made_in_rows_once(self.em, sub, loop, once):
            if sub.planned is not None and made.out in sub.planned and id(made) not in running:
                running[id(made)] = node
                assigned.add(id(add))
        dropped = {id(save) for _, _, _, save in first} | assigned
        return _Step(running, dropped, returned, once, first)

    def starts(self, sub: Emitter, step: _Step) -> list[tuple]:
        """How each carried value starts, ``(carried, how)`` (plan.py: ``InStack``,
        ``ZeroList``, ``InReturned``, ``ZeroedWork``, ``NewArray``, ``OwnCopy``, ``Operand``);
        none where the body's name is the operand's already."""
        em, stmt, body, operands, names = self.em, self.stmt, self.body, self.operands, sub.names
        starts: list[tuple] = []
        for c, fresh in zip(self.loop.carried, self.loop.fresh):
            made: list[ast.stmt] = []
            if c in self.held:
                starts.append((c, InStack(self.held[c])))
            elif c in self.sums or c in self.listed:
                fill = False if c.aval.dtype == np.bool_ else 0.0       # (a stack of bools)
                starts.append((c, ZeroList(c.aval.shape[0], fill)))
            elif c in step.returned:
                starts.append((c, InReturned(step.returned[c], c not in step.once)))
            elif fresh is True and c not in step.once and held_zeros(em, stmt, c, made):
                starts.append((c, ZeroedWork(held_zeros(em, stmt, c, made), tuple(made))))
            elif fresh:
                starts.append((c, NewArray("empty" if fresh == EMPTY or c in step.once
                                           else "zeros")))
            elif c in body.owned and not given(em, stmt, operands[c]):
                # updated in place by the body: the loop's own copy
                starts.append((c, OwnCopy(_value(em, operands[c]))))
            elif names[c] != unparse(_value(em, operands[c])):
                starts.append((c, Operand(_value(em, operands[c]))))
        return starts

    def invariants(self, sub: Emitter) -> list[tuple[Var, ast.expr]]:
        """The invariants the body reads under a name of its own, with the value the name is
        given: a list made of a vector read one element at a time (``x.tolist()``, named for
        later loops too), or the operand."""
        em, operands, names = self.em, self.operands, sub.names
        found: list[tuple[Var, ast.expr]] = []
        for k in self.loop.invariants:
            if k in self.lists and k not in self.keep:
                value = _value(em, operands[k])
                if operands[k] not in em.lists:       # (else a list already)
                    value = ast.Call(ast.Attribute(value, "tolist"), [], [])
                found.append((k, value))
                if isinstance(operands[k], Var) and operands[k] in em.facts.arguments:
                    em.list_names[operands[k]] = names[k]
                    em.names.taken.add(names[k])        # no later body may take it
            elif k not in self.keep and k not in self.lists and (
                    k in sub.facts.readers or any(k is r for r in self.body.result)):
                found.append((k, _value(em, operands[k])))
        return found

    def rows(self, sub: Emitter, step: _Step) -> list[tuple[Stmt, ast.stmt]]:
        """Every step's input product made at once before the loop (``products_before``: the
        product's statement and the statement before the loop), and the values the step makes
        in a row of a stack, no copy (region_rows.py), added to the step's rewrites."""
        em, loop = self.em, self.loop
        saves = state_saves(em, self.stmt, loop, sub, step.first)
        before = []
        for made, line, node, unread in products_before(em, loop, sub, saves):
            before.append((made, line))
            step.running[id(made)] = node
            step.dropped |= unread
        for made, node, save in states_in_rows(sub, saves) + \
                values_in_rows(em, loop, sub, step.dropped):
            if sub.planned is not None and made.out not in sub.planned \
                    or id(made) in step.running:
                continue        # planned into memory of its own, or saved in two stacks
            step.running[id(made)] = node
            step.dropped.add(id(save))
        # a branch's arms make the state, or the value, in its row (write_body): no save
        if sub.planned is not None:
            step.dropped |= {g.saved for g in sub.memory.group.values()
                             if g.kind == "row" and g.saved is not None}
        return before

    def moved(self, sub: Emitter) -> list[tuple[str, ast.expr]]:
        """The carried values the step ends by rebinding (its result is not made under the
        carried value's name): ``(the name, the step's result)``."""
        names = sub.names
        outs = [_value(sub, o) for o in self.body.result]
        return [(names[c], o) for c, o in zip(self.loop.carried, outs) if names[c] != unparse(o)]

    def results(self, sub: Emitter) -> list[tuple[str, ast.expr]]:
        """The region's results under the enclosing code's names, ``(the name, its value)``: a
        list of floats made an array again, a Python float numpy's float64 again. The
        enclosing code learns the lists the loop made and the names its body took."""
        em, stmt, loop = self.em, self.stmt, self.loop
        em.lists.update(o for o, c in zip(stmt.outs, loop.carried) if c in self.listed)
        em.body_names |= set(sub.names.taken) - set(em.names.taken)
        found = []
        for o, c in zip(stmt.outs, loop.carried):
            if o not in em.names or (o not in em.facts.readers and o not in em.facts.outputs):
                continue            # carried for the next step only (dh for the gradient of h0)
            value: ast.expr = ast.Name(sub.names[c])
            if c in self.sums and not delivered_list(em, o):
                # Python floats in a list: the array again (or _deliver's, into the caller's out=)
                value = ast.Call(_xp("array"), [value], [])
            elif c in self.floats and not c.aval.weak:
                value = ast.Call(_xp("float64"), [value], [])     # numpy's float64 again
            if em.names[o] != unparse(value):
                found.append((em.names[o], value))
        return found


def given(em: Emitter, stmt: Stmt, atom) -> bool:
    """An operand the region may update in place with no copy: a stack an earlier loop made
    (``EMPTY``: its own array, in the buffered form a work array held for it alone) whose
    memory nothing reads after this region (passes/stacked.py gives a loop a dead stack to
    write), or an array the function made that nothing reads after the region (ir/region.py
    ``handed_over``; the buffered form allocates it, buffers.py, never in a work array). The
    analysis sees the region's result as a new array: that is what it is, the operand's array,
    which nothing else uses."""
    if atom in em.lists or sum(a is atom for a in stmt.args) != 1:
        return False
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    if em.fast and made_stack(em.facts, atom):
        return em.facts.free_after(atom, at)
    return atom in handed_over_operands(em.facts, stmt, at)


def widened(loop, operands: dict) -> bool:
    """Whether a carried array starts in a narrower dtype than the step makes it
    (frontend/regions.py ``wider``: a float32 ``h`` becomes float64 in the first step). The
    body's types are the carried ones, but its first step runs on the start as numpy does, in
    the narrower dtype: a plan of its memory by those types would write a float32 value where
    a float64 one is meant (seed 25,300,096: ``h = h * 0.322`` then ``h += t``, float32 at the
    first step, and ``xp.dot(h[2], h[2], out=)`` into a float64 array raised). Such a body is
    written by its expressions."""
    return any(isinstance(a, Var) and not a.aval.weak and a.aval.dtype != c.aval.dtype
               for c in loop.carried for a in [operands.get(c)])


def returned_sums(em: Emitter, stmt: Stmt, loop, sub: Emitter, running: dict,
                  lists: set[Var]) -> dict[Var, ast.expr]:
    """In the buffered form, an accumulator the loop makes (zeros) and adds to in place in
    every step (``dW += ...``), whose final value is a returned gradient, is made in the array
    returned to the caller (``_result``: the caller's out= or a new one), not copied into it
    after the loop. Carried value -> the ``_result(...)`` call; the planned memory
    (buffers.py) learns that the gradient now lives in a returned array."""
    if not em.fast:
        return {}
    memory, facts, found = em.memory, sub.facts, {}
    returned = [g for g in em.tape.grads or [] if isinstance(g, Var)]
    for c, fresh, o, r in zip(loop.carried, loop.fresh, stmt.outs, loop.body.result):
        if fresh is not True or o not in memory.delivered or returned.count(o) != 1 \
                or c.aval.weak or not c.aval.ndim or c.aval.dtype.kind not in "fc" \
                or c not in loop.body.owned or not isinstance(r, Var) or c in lists:
            continue
        made = facts.producer.get(r)
        if not (id(made) in running or facts.same_memory(c, r) or _kept_in(sub, c, r)):
            continue
        group = Group([o], kind="result", result=memory.delivered.pop(o))
        memory.group[o] = group
        found[c] = result_call(group, o)
    return found


def _kept_in(sub: Emitter, c: Var, r: Var) -> bool:
    """The body's plan writes the step's result ``r`` into the carried array ``c`` (buffers.py
    ``carried``: ``xp.matmul(dz, W.T, out=dh)``): the loop's array is the same one throughout."""
    group = sub.memory.group.get(c)
    return group is not None and group.kind == "carried" and sub.memory.group.get(r) is group


def summed_terms(loop) -> set[Var]:
    """The terms of the running sums (``dW = dW + t``, ``dW`` the loop's own accumulator),
    written inline into the sum (``dW += h.T @ dz``) where nothing the term reads is written
    between the two: each product is added as soon as it is made, so no two of them are held
    at once."""
    body = loop.body
    facts = Analysis(body)
    found = set()
    for c, o in zip(loop.carried, body.result):
        add = facts.producer.get(o) if isinstance(o, Var) else None
        if c not in body.owned or add is None or add.prim.fn is not operator.add \
                or len(add.args) != 2 or add.args[0] is not c:
            continue
        term = add.args[1]
        made = facts.producer.get(term) if isinstance(term, Var) else None
        if made is None or facts.uses[term] != 1 or body.hint_of(term) or made.prim.nout != 1 \
                or made.prim.effect or made.prim.inplace or made.prim.creates \
                or any(of(made) is not None for of in (loop_of, branch_of, while_of)) \
                or any(term is r for r in body.result):       # (a construct: its own lines)
            continue
        reads, todo = set(), list(made.uses())
        while todo:                 # everything the term's expression reads, transitively
            u = todo.pop()
            if facts.root(u) not in reads:
                reads.add(facts.root(u))
                if u in facts.producer:
                    todo += facts.producer[u].uses()
        if not facts.written_between(reads, facts.defined[term], facts.defined[o]):
            found.add(term)
    return found


def body_names(em: Emitter, stmt: Stmt, keep: dict[Var, str]):
    """The body's names from the naming pass (ir/names.py ``Namer.bodies``), its invariants
    named as the enclosing code names them (``keep``), and any other name of the body that the
    enclosing code gives a value live across the loop made fresh."""
    loop = loop_of(stmt)
    inner = em.names.bodies.get(loop)
    inner = inner.copy() if inner is not None else \
        name_tape(loop.body, taken=set(em.names.taken))
    inner.names.update(keep)
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    facts = em.facts
    live = {em.names.names[v] for v in facts.defined
            if v in em.names.names and v not in em.inlined
            and facts.defined[v] < at <= facts.last.get(v, -1)}
    inner.taken |= live | set(em.names.taken)
    shared = set(keep.values()) | {em.names.names.get(o) for o in stmt.outs} | \
        {name for c, name in dying_inits(stmt, facts, at, em.names.names).items()
         if inner.names.get(c) == name}
    for v, name in list(inner.names.items()):
        if name in live and name not in shared:
            inner.names[v] = inner.fresh(name)
    return inner


def running_sums(sub: Emitter, loop) -> dict[int, ast.stmt]:
    """``dW += t1.T @ t2``: an accumulator the loop owns (it made it: nothing else sees its
    memory) whose new value is its old one plus a term of its own shape and dtype, the old one
    not read again in the step, is added to in place (as a handwritten BPTT does)."""
    facts, names = sub.facts, sub.names.names
    done: dict[int, ast.stmt] = {}
    body = loop.body
    for c, o in zip(loop.carried, body.result):
        if c not in body.owned or not isinstance(o, Var) or o not in facts.producer:
            continue
        stmt = facts.producer[o]
        at = facts.defined[o]
        if stmt.prim.fn is not operator.add or stmt.args[0] is not c or stmt.args[1] is c \
                or (o.aval.shape, o.aval.dtype) != (c.aval.shape, c.aval.dtype) \
                or facts.last_memory.get(c, -1) > at or names.get(o) != names.get(c) \
                or o in sub.inlined:
            continue
        term = stmt.args[1]
        if isinstance(term, Var) and term.aval.shape != c.aval.shape:
            continue
        done[id(stmt)] = ast.AugAssign(ast.Name(names[c], ast.Store()), ast.Add(),
                                       sub.atom(term))
    return done


def _value(em: Emitter, atom) -> ast.expr:
    """An operand as the enclosing code (or the body) reads it."""
    if isinstance(atom, Lit):
        return em.literal(atom.value)
    return em.atom(atom)


def _xp(name: str) -> ast.expr:
    return ast.Attribute(ast.Name("xp"), name)
