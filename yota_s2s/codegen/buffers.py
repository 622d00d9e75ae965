"""Memory planning: which array each value is written into, so that a call allocates nothing
but the gradients it returns.

The plan groups values that share storage and gives each group a place to live:

- a value computed elementwise from an operand of its shape and dtype that is dead afterwards
  (no later use, no live view of it) is written over that operand, *in place*
  (``h += b1``, ``xp.tanh(h, out=h)``); such a chain of values is one *group*;
- a group whose values are returned gradients lives in the array returned to the caller,
  fresh on each call or the caller's own (``out=``): ``"result"``;
- other groups live in *work arrays* held per thread and reused by every call: ``"slot"``.
  Two groups share a slot (same shape and dtype) when one is dead before the other is made,
  so the arrays held are about what is live at once, as in a handwritten gradient;
- a group whose first value comes from an operation with no ``out=`` form (``np.where``,
  fancy indexing) is allocated by it, as in the plain form: ``"fresh"``;
- in a loop body, a group whose last value becomes the state the step saves in a row of its
  stack lives in that row (``t = xp.matmul(xs[t], Wx, out=H[t + 1]); t += u; h =
  xp.tanh(t, out=t)``, as a handwritten BPTT writes it): ``"row"``;
- a vector a returned gradient is copied from, broadcast along its first axis, lives in that
  gradient's first row, and the copy writes the other rows (``t = xp.matmul(x, ones,
  out=dW_mem[0])`` ... ``xp.copyto(dW[1:], t)``): ``"head"``.

Only statements numpy can direct into an array take part (``writer`` names the form);
scalars, views (``x.T``, ``b[:, None]``: they extend the life of what they view) and values
that scalar mode turns into Python floats do not. The plan is a codegen-level transformation:
the tape is unchanged, and ``buffers=False`` writes the plain form from the same tape.
"""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..ir.analysis import Analysis, memory_bases, read_only
from ..ir.branch import branch_of
from ..ir.region import handed_over_operands, loop_of
from ..ir.whiles import while_of
from ..ir.tape import Stmt, Tape, Var, tree_vars
from ..passes.outputs import row_broadcast
from .scalars import ScalarPlan



def writer(stmt: Stmt) -> str | None:
    """How ``stmt`` can write its result into a given array (its primitive's ``ufunc`` or
    ``out_form`` trait), or None."""
    prim, out = stmt.prim, stmt.outs[0] if len(stmt.outs) == 1 else None
    if out is None or out.aval.weak or out.aval.ndim == 0 or prim.effect or prim.inplace \
            or not out_keeps_value(stmt):
        return None
    if prim.ufunc is not None:
        return "ufunc"
    if any(isinstance(a, Var) and a.aval.sparse for a in tree_vars(stmt.args)):
        return None             # scipy.sparse's products make their own array (no out=)
    if prim.out_form == "matmul" and not all(isinstance(a, Var) and a.aval.ndim >= 1
                                             for a in stmt.args):
        return None
    if prim.out_form == "dot":          # the matrix product, for operands up to 2-D
        # (not over a contraction of length 1: a product of single numbers, -0.0 from np.dot,
        # which matmul adds to +0.0, so that 1 / (0 * -1) would be inf for numpy's -inf)
        return "matmul" if all(isinstance(a, Var) and 1 <= a.aval.ndim <= 2
                               for a in stmt.args) and stmt.args[0].aval.shape[-1] != 1 \
            else None
    if prim.out_form == "where":        # copyto's where= takes a bool array; numbers as they are
        condition, *choices = stmt.args
        return "where" if isinstance(condition, Var) and condition.aval.dtype == np.bool_ \
            and not condition.aval.weak and all(isinstance(a, Var) or np.ndim(a.value) == 0
                                                for a in choices) else None
    if prim.out_form in ("fill", "empty", "fill_like", "empty_like"):
        like = prim.out_form.endswith("_like")      # np.zeros_like(a): a's shape and dtype only
        if any(tree_vars(stmt.args[1:] if like else stmt.args)) or prim.fn in (
                np.full, np.full_like) and np.ndim(stmt.args[1].value) != 0:
            return None         # ``a.fill(c)`` takes a scalar only, not a (1, 1) array
        return prim.out_form.removesuffix("_like")
    return prim.out_form


def out_keeps_value(stmt: Stmt) -> bool:
    """Whether ``out=`` gives what the call gives without it. Not for numpy's mean of float16
    values: it sums them in float32 and rounds once, after dividing; into a float16 ``out=``
    it rounds the sum first (a unit in the last place off, one call in four)."""
    return not (stmt.prim.fn is np.mean and stmt.outs and stmt.out.aval.dtype == np.float16)


# A work array this large (elements) or larger lives in a returned array's memory where one is
# free for it (_lend_slots); a smaller one is not worth a view made on each call.
LEND_MIN = 512
# A loop body's value this large (elements) or larger is planned into a work array (or in
# place; codegen/region_plan.py), a smaller one made by its expression. Every one is: ``out=`` into a
# work array costs no more than numpy's new array even at 16 elements (RK4's stages: 0.86x
# the time of the module that made them anew, and no array allocated), and the literals go
# through the module's 0-d arrays. tools/fuzz.py --body-min sets it for the fuzzer.
BODY_MIN = 1


@dataclass(eq=False)
class Group:
    members: list[Var]
    kind: str = "slot"             # "slot", "result", "fresh", "carried", "row" or "head"
    slot: int = -1
    result: tuple = ()             # (argnum, path) of the returned gradient
    order: str = "C"               # a returned array's layout: "F" for a tall outer product
    end: int = 0                   # index of the last statement that reads the group
    turn: bool = False             # a loop step's result: its slot is two arrays, in turn
    row: object = None             # a "row" group's array: the stack's row (an ast expression)
    head: Group | None = None      # "result": the group that lives in its first row
    host: Group | None = None      # "head": the returned group in whose first row it lives
    reads: frozenset = frozenset()  # "row" of a branch's result: its operands viewing the row
    unread: bool = False           # "row" of a branch's result read only by its save, left out
    saved: int | None = None       # "row" of a branch's result: id of the save it makes needless


@dataclass
class MemoryPlan:
    group: dict[Var, Group] = field(default_factory=dict)
    writes: dict[Var, str] = field(default_factory=dict)      # value -> writer form
    over: dict[Var, Var] = field(default_factory=dict)        # value -> operand it overwrites
    slots: list[tuple[tuple, np.dtype, list[Var]]] = field(default_factory=list)
    delivered: dict[Var, tuple] = field(default_factory=dict)  # returned, copied into out=
    lent: dict[int, tuple[Group, int]] = field(default_factory=dict)   # slot -> (result, offset)

    @property
    def bytes(self) -> int:
        """The work arrays held per thread (not those lent by returned arrays)."""
        return sum(int(np.prod(s)) * np.dtype(d).itemsize
                   for k, (s, d, _) in enumerate(self.slots) if k not in self.lent)


def plan_memory(tape: Tape, scalars: ScalarPlan, inlined: set[Var],
                facts: Analysis | None = None, exclude: frozenset = frozenset(),
                carried: dict[Var, Var] | None = None,
                turns: frozenset = frozenset(), rows: dict | None = None,
                heads: bool = True, first: frozenset = frozenset(),
                homes: dict | None = None, over_carried: bool = False) -> MemoryPlan:
    """The plan for ``tape``; ``inlined`` values are written inside their user's expression,
    so what they read is read where that user is (``facts`` is the analysis of the tape with
    those read positions). For a loop body (codegen/region_plan.py): ``exclude``, values the caller
    writes elsewhere (made in a row of a stack), in no group; ``carried``, the step's result
    -> the carried value it becomes, an array of the loop's own (``"carried"``): the values
    the step makes of it in place and the result, when its array is dead by then, live in
    it (``dh += h; ...; xp.matmul(dz, W.T, out=dh)``); ``turns``, step results that may live
    in a work array the loop takes in turn with a second one (``turn``: the step before's
    result is in the other, codegen/region_slots.py), where they would be new arrays each step;
    ``rows``, a state made in a row of its stack (one of ``exclude``) -> (that row, the index
    of the first statement from which the row is free to write): the group of the elementwise
    operand it is made over lives in the row (``_rows``); ``heads``: a vector a returned
    gradient is broadcast from may live in its first row (``_heads``; not in a GPU module,
    which keeps its work arrays); ``first``, values a chain should start from: a sum (or
    product) of two operands that may both be written over is written over the one in
    ``first`` (``t8 += t7`` for ``t7 + t8``: the same bits), so that codegen/region_rows.py can
    make a chain's first value before the loop. ``homes``: a branch arm's results -> the array
    the enclosing code gives that result (``_homes``). A branch statement's array results (a
    while's carried arrays, an unwind's gradients: ``construct_arrays``) are each a group of
    their own (``"slot"``): whichever arm runs writes them there (branch_plan.py), the loop
    updates them there (while_plan.py); ``over_carried``: a carried value read for the last time
    may be written over by any value made from it, not the step's result alone (a while's trip:
    ``x += t6``, then ``x *= 0.5``)."""
    plan = MemoryPlan()
    facts = facts or Analysis(tape, inlined)
    carried = carried or {}
    excluded = facts.arguments - (set(carried.values()) if over_carried else set()) | inlined
    for c in carried.values():
        plan.group[c] = Group([c], kind="carried")
    for index, stmt in enumerate(tape.stmts):
        if any(o in scalars.chains or o in scalars.elements or o in exclude for o in stmt.outs):
            continue
        if stmt.prim.inplace and stmt.outs:
            base = stmt.first_var
            if base in plan.group:
                _join(plan, stmt.out, base)
            continue
        construct = stmt.prim.emit[:1]
        if construct in (("branch",), ("while",), ("unwind",)):
            for o in construct_arrays(stmt):
                plan.writes[o] = construct[0] if construct != ("unwind",) else "while"
                plan.group[o] = Group([o])
            continue
        form = writer(stmt) if stmt.outs and stmt.out not in scalars.floats else None
        if form is None:
            if stmt.outs and len(stmt.outs) == 1 and not memory_bases(stmt) \
                    and not read_only(stmt):
                plan.group[stmt.out] = Group([stmt.out], kind="fresh")
            continue
        plan.writes[stmt.out] = form
        target = _overwritable(stmt, index, facts, plan, excluded, first) \
            if form == "ufunc" else None
        if target is None and stmt.out in carried:
            target = _home(tape, stmt, index, facts, plan, carried[stmt.out])
        if target is not None:
            plan.over[stmt.out] = target
            _join(plan, stmt.out, target)
        else:
            plan.group[stmt.out] = Group([stmt.out])
    _rows(tape, plan, facts, rows or {})
    _homes(plan, facts, homes or {})
    _mark_results(tape, plan, facts, turns)
    if heads:
        _heads(plan, facts)
    _handed_over(tape, plan, facts)
    _assign_slots(tape, plan, facts)
    _lend_slots(plan, facts)
    return plan


def _join(plan: MemoryPlan, var: Var, base: Var) -> None:
    group = plan.group[base]
    group.members.append(var)
    plan.group[var] = group


def _overwritable(stmt: Stmt, index: int, facts: Analysis, plan: MemoryPlan,
                  excluded: set[Var], first: frozenset = frozenset()) -> Var | None:
    """An operand whose storage the result can take: same shape and dtype, its memory dead
    after this (no later read of it or of anything sharing it), and a named array of ours (not
    an argument, not a temporary inside an expression); of a commutative operation's two, one
    in ``first`` before the other."""
    out = stmt.out
    operands = [a for a in stmt.args if isinstance(a, Var)]
    if stmt.prim.commutative:
        operands.sort(key=lambda a: a not in first)
    for a in operands:
        group = plan.group.get(a)
        if group is None or a in excluded:
            continue
        if a.aval.shape != out.aval.shape or a.aval.dtype != out.aval.dtype \
                or facts.last_memory.get(a) != index:
            continue
        if any(o is not a and plan.group.get(o) is group for o in operands):
            continue
        return a
    return None


def _home(tape: Tape, stmt: Stmt, index: int, facts: Analysis, plan: MemoryPlan,
          c: Var) -> Var | None:
    """The value of ``c``'s group (a carried array) that a step's result is written over:
    every value in that array read for the last time before this statement, and none of its
    operands in it (``out=`` of a product may not be an operand)."""
    group, out = plan.group[c], stmt.out
    if out.aval.shape != c.aval.shape or out.aval.dtype != c.aval.dtype:
        return None
    if any(facts.last_memory.get(m, -1) >= index for m in group.members):
        return None
    if any(plan.group.get(facts.root(u)) is group or plan.group.get(u) is group
           for u in stmt.uses()):
        return None
    # ``out=`` names the member: no value made after it may have taken its name (the plain
    # form's names, ``dz = dz - t`` made in a stack's row, outside the plan)
    home = group.members[-1]
    names = getattr(getattr(tape, "namer", None), "names", None)
    if names is None or home not in names or any(
            names.get(o) == names[home] for s in tape.stmts[facts.defined.get(home, -1) + 1:index]
            for o in s.outs):
        return None
    return home


def _rows(tape: Tape, plan: MemoryPlan, facts: Analysis, rows: dict) -> None:
    """A state a loop step makes elementwise in its stack's row (``h = xp.tanh(t, out=H[t +
    1])``, codegen/region_rows.py) is made over its operand ``t`` where ``t`` is the last value
    of a work-array group, of the state's shape and dtype, dead once the state is made, and made
    (from its group's first value on) after the row is free to write: that group lives in the
    row, its first value written there (``out=H[t + 1]``), the rest in place, no work array."""
    for h, (row, free) in rows.items():
        stmt = facts.producer.get(h)
        group = plan.group.get(h)
        if stmt is not None and plan.writes.get(h) == "branch" and group is not None \
                and group.members == [h] and group.kind == "slot":
            group.kind, group.row = "row", row      # each arm makes it there (branch_plan.py)
            continue
        if stmt is None or writer(stmt) != "ufunc":
            continue
        at = facts.defined[h]
        for a in stmt.args:
            group = plan.group.get(a) if isinstance(a, Var) else None
            if group is None or group.kind != "slot" or group.members[-1] is not a \
                    or (a.aval.shape, a.aval.dtype) != (h.aval.shape, h.aval.dtype) \
                    or facts.last_memory.get(a) != at or facts.defined[group.members[0]] < free \
                    or sum(u is a for u in stmt.args) != 1 \
                    or any(m in facts.returned for m in group.members):
                continue
            group.kind, group.row = "row", row
            break


def construct_arrays(stmt: Stmt) -> list[Var]:
    """The results of a branch, while or unwind statement that live in arrays the plan gives
    them (codegen/branch_plan.py, while_plan.py): a branch's arrays, a while's carried ones (not
    its trip count and stacks: the thread's, whiles.py), an unwind's gradients."""
    outs = stmt.outs[:while_of(stmt).ncarry] if stmt.prim.emit[:1] == ("while",) else stmt.outs
    return [o for o in outs if in_branch_array(o)]


def in_branch_array(o: Var) -> bool:
    """Whether a branch's result ``o`` lives in an array the plan gives it (an array of
    numbers; a Python number or a 0-d value is no array to write into)."""
    return not o.aval.weak and o.aval.ndim > 0 and not o.aval.sparse \
        and o.aval.dtype.kind in "biufc"


def _homes(plan: MemoryPlan, facts: Analysis, homes: dict) -> None:
    """A branch arm's result made in the array the enclosing code gives it (the branch
    result's work array or returned array, codegen/branches.py): the group whose last value it
    is lives there, its first value written there (``out=``), the rest in place; no work
    array of the arm's. (The arm's inputs are never in a group: nothing writes over them.)
    ``homes``: result -> (the array, the arm's inputs that view it: a stack's row the branch
    reads, codegen/region_rows.py ``branch_rows``); where it views an input, the group is made
    there only if its first value is made after the arm last reads that input, or by a ufunc
    that reads it last (numpy makes an elementwise result over its operand right), as
    region_rows.branch_rows saw before it gave the row."""
    for r, (target, reads) in homes.items():
        group = plan.group.get(r)
        if group is None or group.kind != "slot" or group.members[-1] is not r:
            continue
        first = group.members[0]
        at, last = facts.defined[first], max((facts.last_memory.get(v, -1) for v in reads),
                                             default=-1)
        if last < at or last == at and plan.writes.get(first) == "ufunc":
            group.kind, group.row = "row", target


def _mark_results(tape: Tape, plan: MemoryPlan, facts: Analysis, turns: frozenset) -> None:
    """Groups holding returned gradients live in the returned arrays; nothing returned lives
    in (or views) a work array: such a group is allocated on each call instead, but for a
    loop step's result in ``turns``, alone in its group and its memory (the two arrays taken
    in turn are the loop's, codegen/region_slots.py)."""
    for inp, g in zip(tape.inputs, tape.grads or []):
        if not isinstance(g, Var) or g.aval.weak:
            continue
        key = (inp.argnum, inp.path)
        group = plan.group.get(g)
        if group is not None and group.members[-1] is g and group.kind == "slot" and g.aval.ndim:
            group.kind, group.result = "result", key
            group.order = "F" if _tall_outer_product(group, facts) else "C"
            continue
        plan.delivered[g] = key
    for v in facts.returned:
        group = plan.group.get(v)
        if group is not None and group.kind == "slot":
            alone = v in turns and group.members[-1] is v and facts.members.get(
                facts.root(v), [v]) == [v] and not any(
                m is not v and m in facts.returned for m in group.members)
            group.turn = alone
            group.kind = "slot" if alone else "fresh"


def _heads(plan: MemoryPlan, facts: Analysis) -> None:
    """A returned gradient copied from a work-array value broadcast along its first axis
    (``dW = np.copy(np.broadcast_to(t, (128, 784)))``, ``t`` of shape (784,)), where ``t`` is
    the last value of its group and dead after the copy: that group lives in the gradient's
    first row, and the copy writes the other rows from it; no work array, and nothing
    overlaps (``xp.copyto(dW[1:], t)``)."""
    for g, group in list(plan.group.items()):
        if group.kind != "result" or group.members != [g] or plan.writes.get(g) != "copy":
            continue
        t = row_broadcast(facts.producer[g], facts.producer)
        held = plan.group.get(t) if t is not None else None
        if held is None or held.kind != "slot" or held.turn or held.members[-1] is not t \
                or facts.last_memory.get(t) != facts.defined[g] \
                or any(m in facts.returned for m in held.members):
            continue
        held.kind, held.host, group.head = "head", group, held


def _handed_over(tape: Tape, plan: MemoryPlan, facts: Analysis) -> None:
    """An array a loop region takes as its own, to update in place with no copy
    (ir/region.py ``handed_over``: ``O = np.zeros((T, n))`` before ``for t: O[t] = h``) is
    allocated, not a work array: the region's result is that array, which the plan does not
    see, and a work array would be handed to another value after the region."""
    for index, stmt in enumerate(tape.stmts):
        if loop_of(stmt) is None:
            continue
        for atom in handed_over_operands(facts, stmt, index):
            group = plan.group.get(atom)
            if group is not None and group.kind == "slot":
                group.kind = "fresh"


def _tall_outer_product(group: Group, facts: Analysis) -> bool:
    """A matrix made from a column and a row only (``dz[:, None] * w``, an outer product),
    much taller than wide: written column by column, numpy's inner loop runs down the long
    axis (2-4x faster than 10000 rows of 100), so the returned array is Fortran-ordered."""
    (v,) = group.members if len(group.members) == 1 else (None,)
    if v is None or v.aval.ndim != 2 or v not in facts.producer:
        return False
    m, n = v.aval.shape
    stmt = facts.producer[v]
    if stmt.prim.ufunc is None or m < 4 * n:
        return False
    shapes = [u.aval.shape for a in stmt.args for u in tree_vars(a)]
    return any(s[-1:] == (1,) for s in shapes) and all(np.prod(s) in (1, m, n) and s[-1:] != (m,)
                                                      for s in shapes)


def _assign_slots(tape: Tape, plan: MemoryPlan, facts: Analysis) -> None:
    """Work arrays by liveness: a group takes a free slot of its shape and dtype (the one freed
    first), or a new one. Groups are taken in order of definition; the busy ones wait in a
    heap by their end, so the plan is n log n in the number of groups. A loop step's result
    taken in turn (``turn``) has a slot of its own: codegen gives it two arrays."""
    groups = []
    for var, group in plan.group.items():
        if group.kind == "slot" and group.members[0] is var:
            group.end = max(facts.last_memory.get(m, -1) for m in group.members)
            if plan.writes.get(var) in ("branch", "while"):   # written there, read or not
                group.end = max(group.end, facts.defined[var])
            groups.append(group)
    order = facts.defined
    busy: list[tuple[int, int, Group]] = []      # (end, when it was taken, group)
    free: dict[tuple, deque[int]] = {}
    handed: set[int] = set()     # groups whose slot a branch's result took on (_given_on)
    for taken, group in enumerate(sorted(groups, key=lambda g: order[g.members[0]])):
        start = order[group.members[0]]
        done = []
        while busy and busy[0][0] < start:
            done.append(heapq.heappop(busy))
        for _, _, g in sorted(done, key=lambda d: d[1]):       # freed in the order taken
            if id(g) not in handed:
                free.setdefault(_kind(g.members[0]), deque()).append(g.slot)
        given = _given_on(group, [g for _, _, g in busy if id(g) not in handed], plan, facts)
        pool = free.get(_kind(group.members[0])) if not group.turn else None
        if given is not None:
            group.slot = given.slot
            handed.add(id(given))
        elif pool:
            group.slot = pool.popleft()
        else:
            group.slot = len(plan.slots)
            plan.slots.append((group.members[0].aval.shape, group.members[0].aval.dtype, []))
        plan.slots[group.slot][2].extend(group.members)
        if not group.turn:
            heapq.heappush(busy, (group.end, taken, group))


def _given_on(group: Group, busy: list[Group], plan: MemoryPlan, facts: Analysis
              ) -> Group | None:
    """The busy group whose work array a branch's result (``group``'s first value) takes on:
    an operand of the branch, the last value of its group, read last by the branch, that an
    arm gives on as this result and no arm reads otherwise (``if ok: y_1 = y2``, ``else: y_1
    = y``): made in the result's array, the arm copies nothing, and the other arm writes that
    array reading no more of it."""
    var = group.members[0]
    stmt = facts.producer.get(var)
    branch = branch_of(stmt) if stmt is not None else None
    if branch is None or plan.writes.get(var) != "branch":
        return None
    k, at = stmt.outs.index(var), facts.defined[var]
    for g in busy:
        a = g.members[-1]
        if g.end != at or _kind(a) != _kind(var) or a not in stmt.args[1:] \
                or any(m in facts.returned for m in g.members):
            continue
        gives = False
        for arm in branch.arms:
            ins = {i.var for i, b in zip(arm.inputs, stmt.args[1:]) if b is a}
            if any(v in ins for s in arm.stmts for v in s.args) \
                    or any(r in ins for j, r in enumerate(arm.result) if j != k):
                break
            gives |= arm.result[k] in ins
        else:
            if gives:
                return g
    return None


def _lend_slots(plan: MemoryPlan, facts: Analysis) -> None:
    """Work arrays whose values are all dead before a returned gradient's array is first
    written live in that array instead (its first elements, then the next ones): memory the
    call allocates anyway, so they are not held between calls and do not add to the peak (the
    seed's ``W @ x`` in ``dx``, which a handwritten gradient frees before it allocates the
    gradients). Largest first, each into the first returned array that is written after its
    last read and has room; in one whose first row holds a value (``_heads``), from after that
    row, or before it for a work array dead before that value is made. The function makes
    those arrays early (codegen/out_forms.py)."""
    results = sorted({id(g): g for g in plan.group.values() if g.kind == "result"}.values(),
                     key=lambda g: facts.defined[g.members[0]])
    if not results:
        return
    ends: dict[int, int] = {}
    for var, group in plan.group.items():
        if group.kind == "slot" and group.members[0] is var:
            ends[group.slot] = max(ends.get(group.slot, -1), group.end)
    room = {id(g): int(np.prod(g.members[0].aval.shape)) for g in results}
    order = sorted(range(len(plan.slots)), key=lambda k: (-int(np.prod(plan.slots[k][0])), k))
    for k in order:
        shape, dtype, _ = plan.slots[k]
        size = int(np.prod(shape))
        if size < LEND_MIN or k not in ends:
            continue
        for g in results:
            total = int(np.prod(g.members[0].aval.shape))
            start = lend_start(g, total - room[id(g)], ends[k], facts)
            if g.members[0].aval.dtype == dtype and lent_until(g, start, facts) > ends[k] \
                    and total - start >= size:
                plan.lent[k] = (g, start)
                room[id(g)] = total - start - size
                break


def lent_until(g: Group, start: int, facts: Analysis) -> int:
    """The statement from which returned group ``g``'s memory at element ``start`` on is
    written: its copy or first value, or, in its first row, the value that lives there
    (``_heads``)."""
    if g.head is not None and start < int(np.prod(g.members[0].aval.shape[1:])):
        return facts.defined[g.head.members[0]]
    return facts.defined[g.members[0]]


def lend_start(g: Group, used: int, end: int, facts: Analysis) -> int:
    """Where in returned group ``g``'s memory, from element ``used`` on, a work array read up
    to statement ``end`` may start: past the first row where a value lives there by then."""
    if g.head is not None and facts.defined[g.head.members[0]] <= end:
        return max(used, int(np.prod(g.members[0].aval.shape[1:])))
    return used


def _kind(var: Var) -> tuple:
    return var.aval.shape, var.aval.dtype


def storage(tape: Tape, plan: MemoryPlan, scalars: ScalarPlan, facts: Analysis) -> dict[Var, object]:
    """Where each value's array lives in the written code, for the verifier: ``("slot", k)``
    for work array ``k`` (``("turn", k)`` for the loop's, which a step may return: ``turn``),
    one key per other group, the base's for views and in-place updates, the value itself for
    an array of its own; None for Python scalars."""
    where: dict[Var, object] = {i.var: ("own", i.var) for i in tape.inputs}
    turns = {g.slot for g in plan.group.values() if g.kind == "slot" and g.turn}
    for stmt in tape.stmts:
        for v in stmt.outs:
            group = plan.group.get(v)
            bases = memory_bases(stmt)
            if v in scalars.floats or v in scalars.elements or v in scalars.chains \
                    or v.aval.weak:
                where[v] = None
            elif group is not None:
                where[v] = (("turn" if group.slot in turns else "slot", group.slot)
                            if group.kind == "slot" else ("group", id(group)))
            elif len(bases) == 1:
                where[v] = where.get(bases[0])
            else:
                where[v] = None if bases else ("own", v)
    return where
