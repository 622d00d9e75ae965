"""A loop region (ir/region.py) written as a ``for`` loop with its body once::

    # rnn.py:5  for t in range(xs.shape[0]):   (a loop region, 1000 steps)
    h = h0
    loss = 0.0
    H = xp.empty((1001, 64))                 # a stack the backward loop reads
    H[0] = h                                 # the first step's state: one row per step after
    for t in range(1000):
        # rnn.py:6  h = np.tanh(W @ h + U @ xs[t] + b)
        h = xp.tanh(W @ h + U @ xs[t] + b)
        ...
        H[t + 1] = h

In both forms the backward loop adds each accumulated product as it is made
(``dW += h.T @ dz``: no two products held at once) and assigns the rows of an accumulator each
step writes once (``dxs[t] = dz @ U``, no zero fill). The buffered form goes further, as a
handwritten BPTT does:

- a stack the loop makes is a work array held per thread (``H = buf1``, workspace.py);
- a saved state is made in its row (``h = xp.tanh(..., out=H[t + 1])``), no copy;
- an accumulator that becomes a returned gradient is made in the returned array
  (``dW = _result(out, 0, (64, 64))``): out= is written by the loop;
- ``np.sum(h ** 2)`` is ``xp.vdot(h, h)``;
- scalar mode (scalars.py): a vector read one element at a time is read from ``x.tolist()``
  (Python floats), an element-wise accumulator or a stack of numbers is a list.

The body is written by an Emitter of its own (the plain form: inlining, names from the source,
comments per source line) with the names the naming pass gave it (ir/names.py: the invariants
keep the enclosing function's names, the others are new to it). A carried value keeps one
name through the step where the body allows it (its old value is not read after the new one
is made), else the step ends by rebinding it.
"""
from __future__ import annotations

import ast
import operator

import numpy as np

from ..ir.analysis import Analysis
from ..ir.names import dying_inits, name_tape, same_names
from ..ir.region import EMPTY, handed_over_operands, loop_of, made_stack
from ..ir.tape import Lit, Stmt, Var
from ..passes.stacked import row_offset
from ..rules.indexing import index_add, setitem_
from ..text import comment, identifier, literal
from . import buffers
from .buffers import Group, writer
from .emit import Emitter
from .out_forms import lent_view, result_call, row_call
from .render import INDENT, Verbatim, block_lines, unparse
from .scalars import NUMPY_FORM, SAFE, delivered_list


def region_statements(em: Emitter, stmt: Stmt) -> list[ast.stmt]:
    loop = loop_of(stmt)
    body = loop.body
    operands = dict(zip(loop.operand_vars(), stmt.args))
    keep: dict[Var, str] = {}          # invariants named by the enclosing function
    for k in loop.invariants:
        atom = operands[k]
        if isinstance(atom, Var) and atom in em.names and atom not in em.inlined:
            keep[k] = em.names[atom]
    lists, sums, floats = _body_scalars(loop) if em.fast else (set(), set(), set())
    for k in lists:                 # read as a list, made before the loop: a name of its own,
        keep.pop(k, None)           # or that of the list an earlier loop made of an argument
        a = operands[k]
        if isinstance(a, Var) and a in em.list_names and a in em.facts.arguments:
            keep[k] = em.list_names[a]
        elif isinstance(a, Var) and a in em.lists and a in em.names and a not in em.inlined:
            keep[k] = em.names[a]     # a list already (a stack an earlier loop made): its name
    # a Python float squared is written ``t * t`` (scalars.square: ``t ** 2`` may raise
    # OverflowError where numpy gives inf): its base needs a name
    squared = {s.args[0] for s in body.stmts if s.prim.fn is operator.pow and s.outs
               and s.out in floats}
    listed = _list_stacks(em, stmt, loop, floats)
    held = _held_stacks(em, stmt, loop, listed)
    taken = set(em.names.taken) - body_names(em, stmt, keep).given()
    summed = _summed_terms(loop)

    def emitter(plan: frozenset | None, carried: dict | None = None,
                turns: frozenset = frozenset(), own: frozenset = frozenset(),
                rows: dict | None = None, first: frozenset = frozenset()) -> Emitter:
        inner = body_names(em, stmt, keep)
        named = body.copy(params=tuple(inner.names[inp.var] for inp in body.inputs),
                          name=em.tape.name)
        named.namer = inner
        sub = Emitter(named, taken=taken, calls=em.calls, fast=False, roots=em.roots,
                      inline=summed, named=squared | own, plan=plan, carried=carried,
                      floats=floats, turns=turns, rows=rows, first=first)
        sub.dot_sums = em.fast
        sub.enclosing = em              # module-level names (_ONES_n) are the function's
        for k, name in keep.items():
            if sub.names[k] != name:
                raise AssertionError(f"loop invariant {name} renamed {sub.names[k]}")
        same_names(sub.names, loop, sub.facts)
        return sub
    sub = emitter(None)
    if em.fast and not floats and not _widened(loop, operands):
        # the buffered form plans the body's memory (buffers.py): its temporaries in work
        # arrays held per thread, written with out= or in place; the values made in rows of
        # a stack (found on a first, unplanned look) are left out of the plan
        looked = sub.blocks()
        first = _first_rows(sub, loop, looked)
        # (and the values a step assigns to its row of an array written once per row: named,
        # each a statement of its own)
        once_made = _made_in_rows_once(em, sub, loop, _rows_written_once(sub, loop, looked)) \
            if not sums else []
        saves = _state_saves(em, stmt, loop, sub, first)
        rows = _states_in_rows(sub, saves) + \
            _values_in_rows(em, loop, sub, {id(save) for *_, save in first}) + once_made
        # and the running sums (``dW += t``: the accumulator's own array, regions.py writes them)
        summing = _running_sums(sub, loop)
        sums_made = {o for o in body.result if isinstance(o, Var)
                     and id(sub.facts.producer.get(o)) in summing}
        # and values too small to be worth a work array (numpy's own cache serves them)
        small = {v for st in body.stmts for v in st.outs if v.aval.size < buffers.BODY_MIN}
        carried = {o: c for c, o in zip(loop.carried, body.result) if isinstance(o, Var)
                   and sum(o is r for r in body.result) == 1
                   and c in body.owned and not c.aval.weak and c.aval.ndim
                   and c.aval.size >= buffers.BODY_MIN and o not in sums_made}
        # (a sum of a step's products starts from its input's, which can be made before the
        # loop: _products_before)
        inputs = frozenset(_input_product(s, loop, sub.facts) for s in body.stmts) - {None}
        sub = emitter(frozenset(made.out for made, _, _ in rows) | sums_made | small, carried,
                      _turns(em, stmt, loop, set(carried) | sums_made),
                      frozenset(made.out for made, _, _ in once_made),
                      {made.out: (row, free) for made, _, row, free in saves}, inputs)
        lent, turning = _body_slots(em, stmt, sub)
    else:
        lent, turning = [], []
    names = sub.names
    em.modules |= sub.modules
    blocks = sub.blocks()
    first = _first_rows(sub, loop, blocks)
    running = _running_sums(sub, loop)
    returned = _returned_sums(em, stmt, loop, sub, running, sums)
    once = _rows_written_once(sub, loop, blocks) if not sums else {}
    for c, (add, node) in once.items():
        running[id(add)] = node
    assigned = set()          # dxs[t] = v left out: v is made in the row (no copy)
    for made, node, add in _made_in_rows_once(em, sub, loop, once):
        if sub.planned is not None and made.out in sub.planned and id(made) not in running:
            running[id(made)] = node
            assigned.add(id(add))
    # the body's work arrays first: a carried array's (``_held_zeros``, below) may be lent by
    # a returned array that one of those made
    lines: list[str] = list(lent)
    for c, fresh in zip(loop.carried, loop.fresh):
        if c in held:
            lines.append(f"{names[c]} = {held[c]}")
        elif c in sums or c in listed:
            lines.append(f"{names[c]} = [0.0] * {c.aval.shape[0]}")
        elif c in returned:
            lines.append(f"{names[c]} = {unparse(returned[c])}")
            if c not in once:
                lines.append(f"{names[c]}.fill(0.0)")
        elif fresh is True and c not in once and _held_zeros(em, stmt, c, lines):
            lines.append(f"{names[c]} = {_held_zeros(em, stmt, c, lines)}")
            lines.append(f"{names[c]}.fill(0.0)")
        elif fresh:
            made = "empty" if fresh == EMPTY or c in once else "zeros"
            lines.append(f"{names[c]} = xp.{made}({_shape(c)}{_dtype(c)})")
            em.modules.add("xp")
        elif c in body.owned and not _given(em, stmt, operands[c]):
            # updated in place by the body: the loop's own copy
            lines.append(f"{names[c]} = {_text(em, operands[c], unparse)}.copy()")
        elif names[c] != _text(em, operands[c], unparse):
            lines.append(f"{names[c]} = {_text(em, operands[c], unparse)}")
    for k in loop.invariants:
        if k in lists and k not in keep:
            made = "" if operands[k] in em.lists else ".tolist()"     # a list already
            lines.append(f"{names[k]} = {_text(em, operands[k], unparse)}{made}")
            if isinstance(operands[k], Var) and operands[k] in em.facts.arguments:
                em.list_names[operands[k]] = names[k]
                em.names.taken.add(names[k])        # no later body may take it
        elif k not in keep and k not in lists and (k in sub.facts.readers or any(k is r for r in body.result)):
            lines.append(f"{names[k]} = {_text(em, operands[k], unparse)}")
    for stack, c, row, _ in first:
        lines.append(f"{names[stack]}[{row}] = {names[c]}")
    dropped = {id(save) for _, _, _, save in first} | assigned
    saves = _state_saves(em, stmt, loop, sub, first)
    for made, before, node, unread in _products_before(em, loop, sub, saves):
        lines += [comment(_products_note(made, loop, sub)), unparse(before)]
        running[id(made)] = node
        dropped |= unread
    for made, node, save in _states_in_rows(sub, saves) + \
            _values_in_rows(em, loop, sub, dropped):
        if sub.planned is not None and made.out not in sub.planned or id(made) in running:
            continue        # planned into memory of its own, or saved in two stacks
        running[id(made)] = node
        dropped.add(id(save))
    steps = f"range({loop.length - 1}, -1, -1)" if loop.reverse else f"range({loop.length})"
    lines.append(f"for {identifier(names[loop.index])} in {steps}:")
    inner: list[str] = []
    previous, shown = None, set()
    for block in blocks:
        # a statement written another way (running, above) is that one statement instead
        kept = [([running[id(source)]] if id(source) in running else nodes, source)
                for source, nodes in block.parts() if id(source) not in dropped]
        if not kept:
            continue
        block.stmts = [node for nodes, _ in kept for node in nodes]
        block.sources, block.sizes = [s for _, s in kept], [len(nodes) for nodes, _ in kept]
        inner += block_lines(block, sub.tape.name, sub.rules_of, previous, shown)
        previous = block
    ins = [names[c] for c in loop.carried]
    outs = [_text(sub, o, unparse) for o in body.result]
    moved = [(a, b) for a, b in zip(ins, outs) if a != b]
    if moved:
        inner.append(f"{', '.join(a for a, _ in moved)} = {', '.join(b for _, b in moved)}")
    for new, spare in turning:          # the next step's result goes where the last one's was
        inner.append(f"{new}, {spare} = {spare}, {new}")
    lines += [INDENT + line for line in inner or ["pass"]]
    em.lists.update(o for o, c in zip(stmt.outs, loop.carried) if c in listed)
    em.body_names |= set(sub.names.taken) - set(em.names.taken)
    for o, c in zip(stmt.outs, loop.carried):
        if o not in em.names or (o not in em.facts.readers and o not in em.facts.outputs):
            continue            # carried for the next step only (dh for the gradient of h0)
        value = names[c]
        if c in sums and not delivered_list(em, o):     # Python floats in a list: the array
            value = f"xp.array({value})"        # again (or _deliver's, into the caller's out=)
        elif c in floats and not c.aval.weak:       # a Python float: numpy's float64 again
            value = f"xp.float64({value})"
        if em.names[o] != value:
            lines.append(f"{em.names[o]} = {value}")
    return [Verbatim(lines)]


def _held_zeros(em, stmt: Stmt, c: Var, lines: list[str]) -> str | None:
    """In the buffered form, a carried array the loop starts at zeros and the function does
    not return (the backward loop's ``dh``) lives in a work array (``_slot``), filled with
    zeros: no array made on each call. Its name (once chosen, the same on each call)."""
    if not em.fast:
        return None
    chosen = getattr(em, "zeros_held", None)
    if chosen is None:
        chosen = em.zeros_held = {}
    if c in chosen:
        return chosen[c]
    loop = loop_of(stmt)
    o = dict(zip(loop.carried, stmt.outs))[c]
    aval = c.aval
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    over, end = _in_array_after(em, o, at)      # none returned, the slot busy to the end
    if aval.weak or not aval.ndim or aval.size < buffers.BODY_MIN or aval.dtype.kind not in "fc" \
            or any(v in em.facts.returned or v in em.memory.delivered for v in over):
        chosen[c] = None
        return None
    j = _slot(em, at, end, tuple(aval.shape), aval.dtype, [em.names.names.get(o, "")], set(),
              lines)
    chosen[c] = em.slot_names[j]
    return chosen[c]


def _in_array_after(em, o: Var, at: int) -> tuple[list[Var], int]:
    """The values in the array of a loop's result ``o`` (the region at ``at``) after the loop:
    ``o`` and those the plan writes over it (``dx6 = xp.multiply(dh, 0.3, out=dh)``, then
    ``dx6 += ...``), and the last statement that reads any of them."""
    group = em.memory.group.get(o)
    members = group.members if group is not None else [o]
    return members, max([at] + [em.facts.last_memory.get(v, at) for v in members])


def _body_slots(em, stmt: Stmt, sub) -> tuple[list[str], list[tuple[str, str]]]:
    """The work arrays of a body's plan are the function's too (``_slot``). Returns the lines
    that make those lent by returned arrays, before the loop, and the pairs of names of the
    slots that hold a step's result (buffers.py ``turn``): two work arrays, held to the end
    of the function (the loop's result is in one of them), swapped at the end of each step,
    or, for a gradient the function returns as the loop leaves it, a work array and the
    returned array (``_result``), in the order that has the last step write the returned one::

        f_new, f_spare = buf3, buf4
        for t in range(100):
            ...
            f = xp.subtract(t3, t6, out=f_new)     # the step before's f is in f_spare
            ...
            f_new, f_spare = f_spare, f_new
    """
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    body = (em.body_names | set(sub.names.names.values())) - em.names.taken
    em.names.taken |= body
    turning = {g.slot: g for g in sub.memory.group.values() if g.kind == "slot" and g.turn}
    loop = loop_of(stmt)
    carried_of = {o: (c, after) for c, o, after in zip(loop.carried, loop.body.result, stmt.outs)}
    taken, lines, pairs = set(), [], []
    for k, (shape, dtype, members) in enumerate(sub.memory.slots):
        labels = list(dict.fromkeys(sub.names[v] for v in members))
        if k not in turning:
            j = _slot(em, at, at, shape, dtype, labels, taken, lines)
            sub.slot_names[k] = em.slot_names[j]
            continue
        c, after = carried_of[turning[k].members[-1]]
        if after in em.memory.delivered:    # a returned gradient: the last step writes it
            key = em.memory.delivered[after]
            returned = em.names.fresh(f"{em.names[after]}_mem")
            call = result_call(buffers.Group([after], kind="result", result=key), after)
            lines.append(f"{returned} = {unparse(call)}")
            work = em.slot_names[_slot(em, at, at, shape, dtype, labels, taken, lines)]
            first, second = (returned, work) if loop.length % 2 else (work, returned)
            em.delivered_done.add(after)
        else:                               # held until the loop's result is dead
            end = _in_array_after(em, after, at)[1]
            first, second = (em.slot_names[_slot(em, at, end, shape, dtype, labels, taken,
                                                 lines)] for _ in range(2))
        name = c.hint or sub.names[c]
        new, spare = em.names.fresh(f"{name}_new"), em.names.fresh(f"{name}_spare")
        lines.append(f"{new}, {spare} = {first}, {second}")
        sub.slot_names[k] = new
        pairs.append((new, spare))
        em.turned.append((new, spare))
    em.names.taken -= body
    return lines, pairs


def _turns(em, stmt: Stmt, loop, kept: set[Var]) -> frozenset:
    """The step results that may live in two work arrays the loop takes in turn (buffers.py
    ``turn``, ``_body_slots``) instead of a new array each step: a carried float array of
    ``BODY_MIN`` elements or more, once in the step's results, not written over the carried
    array itself nor a running sum (``kept``), whose value after the loop the function does not
    hand to a later loop, nor return (the work arrays are the function's to its end, never the
    caller's) but as a gradient, as it is: then one of the two is the returned array, the one
    the last step writes. Not for a loop inside another loop's step."""
    if em.enclosing is not None:
        return frozenset()
    results = loop.body.result
    after = dict(zip(loop.carried, stmt.outs))
    handed = {a for i, s in enumerate(em.tape.stmts) if loop_of(s) is not None
              for a in handed_over_operands(em.facts, s, i)}
    turns = set()
    for c, o in zip(loop.carried, results):
        aval = c.aval
        if not isinstance(o, Var) or o in kept or sum(o is r for r in results) != 1 \
                or aval.weak or not aval.ndim or aval.size < buffers.BODY_MIN \
                or aval.dtype.kind not in "fc":
            continue
        a = after[c]
        members = _in_array_after(em, a, 0)[0]
        if any(m in handed for m in members) or any(m in em.facts.returned for m in members) \
                and not (members == [a] and a in em.memory.delivered and loop.length
                         and em.facts.members.get(em.facts.root(a), [a]) == [a]):
            continue
        turns.add(o)
    return frozenset(turns)


def _slot(em, at: int, end: int, shape: tuple, dtype, labels: list[str], taken: set[int],
          lines: list[str]) -> int:
    """A work array of the function for values of a loop that live from its statement (``at``)
    to ``end``: one of its shape and dtype holding no value live then (the forward step's, in
    the backward step), or, as buffers.py lends work arrays, the memory of a returned gradient
    first written after ``end`` (``dWx``, after the backward loop), made before the loop
    (``lines``); or a new one, held per thread (WORK_ARRAYS, labelled ``labels``)."""
    busy, memory = _busy(em), em.memory
    lent = memory.lent
    free = [j for j, (other, kind, _) in enumerate(memory.slots)
            if (other, kind) == (shape, dtype) and j not in taken
            and (j not in lent or j in em.lent_made and
                 buffers.lent_until(*lent[j], em.facts) > end)
            and not any(a <= end and at <= b for a, b in busy.get(j, ()))]
    if free:
        j = free[0]
        memory.slots[j][2].extend(labels)
    else:
        j = len(memory.slots)
        memory.slots.append((shape, dtype, labels))
        em.slot_names.append(em.names.fresh(f"buf{j + 1}"))
        room = _room(em, end, shape, dtype) if em.blocked and not em.chains else None
        if room is not None:
            group, start = room
            lent[j] = room
            if id(group) not in em.lent_arrays:
                em.lent_arrays[id(group)] = em.names.fresh(em.names[group.members[-1]] + "_mem")
            name = em.lent_arrays[id(group)]
            if name not in em.lent_made:
                em.lent_made.add(name)
                lines.append(f"{name} = {unparse(result_call(group, group.members[0]))}")
            em.lent_made.add(j)
            lines.append(f"{em.slot_names[j]} = {unparse(lent_view(name, group, start, shape))}")
    busy.setdefault(j, []).append((at, end))
    taken.add(j)
    return j


def _room(em, end: int, shape: tuple, dtype) -> tuple | None:
    """(a returned gradient's group, the offset) with room for a work array of ``shape``:
    first written after the statement at ``end``, of ``dtype``, past the work arrays lent to
    it already."""
    size = int(np.prod(shape))
    if size < buffers.LEND_MIN:
        return None
    results = sorted({id(g): g for g in em.memory.group.values() if g.kind == "result"}.values(),
                     key=lambda g: em.facts.defined[g.members[0]])
    for g in results:
        v = g.members[0]
        used = max((start + int(np.prod(em.memory.slots[k][0]))
                    for k, (other, start) in em.memory.lent.items() if other is g), default=0)
        used = buffers.lend_start(g, used, end, em.facts)
        if v.aval.dtype != dtype or buffers.lent_until(g, used, em.facts) <= end:
            continue
        if v.aval.size - used >= size:
            return g, used
    return None


def _busy(em) -> dict[int, list[tuple[int, int]]]:
    """Per work array of the function, the positions (first, last statement) where its
    values live: the plan's groups, the stacks loops hold (all the function), the loops
    whose bodies use it (their position)."""
    if not hasattr(em, "slot_busy"):
        em.slot_busy = {}
        for group in {id(g): g for g in em.memory.group.values()}.values():
            if group.kind == "slot":
                start = em.facts.defined[group.members[0]]
                em.slot_busy.setdefault(group.slot, []).append((start, group.end))
    return em.slot_busy


def _given(em, stmt: Stmt, atom) -> bool:
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


def _vector(v: Var) -> bool:
    return v.aval.ndim == 1 and v.aval.dtype == np.float64 and not v.aval.weak


def _int_key(key) -> bool:
    if isinstance(key, Lit):
        return type(key.value) is int
    return isinstance(key, Var) and key.aval.ndim == 0 and key.aval.dtype.kind in "iu"


def _number(atom) -> bool:
    return isinstance(atom, Lit) and type(atom.value) in (int, float) or \
        isinstance(atom, Var) and atom.aval.ndim == 0


def _list_stacks(em, stmt: Stmt, loop, floats: set[Var]) -> set[Var]:
    """In the buffered form, a stack of numbers (one Python float per step, ``V[i] = t``)
    whose only readers after the loop are loops that read it one element at a time (scalar
    mode, ``_body_scalars``) is a list, ``V = [0.0] * n``: no array is written per step, and
    the reading loop takes the list as it is (not ``V.tolist()``)."""
    if not em.fast:
        return set()
    body = loop.body
    facts = Analysis(body)
    results = dict(zip(loop.carried, body.result))
    found = set()
    for c, fresh, o in zip(loop.carried, loop.fresh, stmt.outs):
        if fresh != EMPTY or not _vector(c) or o in em.facts.returned:
            continue
        v = c
        while len(facts.readers.get(v, ())) == 1:
            step = body.stmts[facts.readers[v][0]]
            if step.prim.fn is not setitem_ or step.args[0] is not v or facts.uses[v] != 1 \
                    or not _int_key(step.args[1]) or step.args[2] not in floats:
                break
            v = step.out
        readers = em.facts.readers.get(o, [])
        if v is results[c] and v not in facts.readers and readers and all(
                _reads_as_list(em.tape.stmts[p], o) for p in readers):
            found.add(c)
    return found


def _reads_as_list(user: Stmt, value: Var) -> bool:
    """Does the region ``user`` read ``value`` only as an invariant it reads as a list?"""
    loop = loop_of(user)
    if loop is None:
        return False
    lists = _body_scalars(loop)[0]
    return all(k in lists for k, a in zip(loop.operand_vars(), user.args) if a is value)


def _body_scalars(loop) -> tuple[set[Var], set[Var], set[Var]]:
    """Scalar mode (scalars.py) inside a loop body, for the buffered form: a float64 vector
    invariant read only one element at a time (``x[i]``, ``x[(i + 1) % n]``, the index a
    runtime int) is read from a list, ``x.tolist()`` made before the loop, so its elements are
    Python floats; so are the results of ``+ - *``, unary ``-`` and ``** 2`` of such floats
    (and a carried number whose every step's value is one); a float64 accumulator the loop
    makes (zeros) and only adds numbers to, one element at a time (``dx[i] += v``), is a list
    of Python floats, made an array after the loop. For these operations Python floats give
    numpy's bits. (listed invariants, listed accumulators, Python-float values); nothing where
    any of those floats reaches an operation that would treat a Python float otherwise."""
    body = loop.body
    facts = Analysis(body)
    stmts = body.stmts

    vector, int_key, number = _vector, _int_key, _number
    lists = {k for k in loop.invariants if vector(k) and k in facts.readers and all(
        stmts[p].prim.fn is operator.getitem and stmts[p].args[0] is k and int_key(stmts[p].args[1])
        for p in facts.readers[k])}
    results = dict(zip(loop.carried, body.result))
    sums: dict[Var, list] = {}      # accumulator -> the numbers added to it
    for c, fresh in zip(loop.carried, loop.fresh):
        if fresh is not True or c not in body.owned or not vector(c):
            continue
        v, added = c, []
        while len(facts.readers.get(v, ())) == 1:
            step = stmts[facts.readers[v][0]]
            if step.prim.fn is not index_add or step.args[0] is not v or facts.uses[v] != 1 \
                    or not int_key(step.args[1]) or not number(step.args[2]):
                break
            added.append(step.args[2])
            v = step.out
        if v is results[c] and v not in facts.readers:
            sums[c] = added
    carried = {o: c for c, o in results.items() if isinstance(o, Var) and c.aval.ndim == 0
               and c.aval.dtype == np.float64}
    assumed = set(carried.values())     # carried numbers: floats if every step makes one

    def operand(atom) -> bool:
        if isinstance(atom, Var):
            return atom in floats or atom.aval.weak and atom.aval.dtype.kind == "f"
        return type(atom.value) in (int, float)
    while True:
        floats = set(assumed)
        for stmt in stmts:
            fn, args = stmt.prim.fn, stmt.args
            if not stmt.outs or stmt.out.aval.shape != ():
                continue
            if fn is operator.getitem and args[0] in lists:
                floats.add(stmt.out)
            elif any(isinstance(a, Var) and a in floats for a in args) and all(
                    operand(a) for a in args) and (fn in SAFE and fn is not operator.pow or (
                    fn is operator.pow and args[1] == Lit(2) and type(args[1].value) is int)):
                floats.add(stmt.out)
        kept = {c for o, c in carried.items() if c in assumed and o in floats}
        if kept == assumed:
            break
        assumed = kept
    for index, stmt in enumerate(stmts):         # every float goes where a float may go
        for pos, arg in enumerate(stmt.args):
            if not (isinstance(arg, Var) and arg in floats) or stmt.outs and stmt.out in floats:
                continue
            fn = stmt.prim.fn
            # a number stored, or an operation with a number's result that numpy computes
            # alike for a Python float and a float64 (``xp.divide`` for a division)
            if fn is index_add and pos == 2 or fn is setitem_ and pos == 2 and \
                    stmt.out.aval.ndim == 1 or (fn in NUMPY_FORM or fn in SAFE) \
                    and stmt.out.aval.ndim == 0:
                continue
            return set(), set(), set()
    outs = {o for o in body.result if isinstance(o, Var)}
    if any(o in floats and o not in carried for o in outs):
        return set(), set(), set()
    # a list holds Python floats only (on cupy a 0-d array in it would not make an array)
    return lists, {c for c, added in sums.items()
                   if all(a in floats if isinstance(a, Var) else True for a in added)}, floats


def _rows_written_once(sub, loop, blocks) -> dict[Var, tuple[Stmt, ast.stmt]]:
    """An accumulator the loop makes (zeros) of one row per step, to which each step adds only
    at its own row (``dxs[t] += v``): every row is written once, so the step assigns it
    (``dxs[t] = v``) and the array starts uninitialized, with no zero fill. Accumulator ->
    (the addition, its assignment)."""
    if any(len(b.stmts) != len(b.sources) for b in blocks):
        return {}
    facts, body, found = sub.facts, loop.body, {}
    results = dict(zip(loop.carried, body.result))
    for c, fresh in zip(loop.carried, loop.fresh):
        if fresh is not True or c not in body.owned or not c.aval.ndim \
                or c.aval.shape[0] != loop.length:
            continue
        readers = facts.readers.get(c, [])
        members = facts.members.get(facts.root(c), [])
        if len(readers) != 1 or any(facts.readers.get(m, [])
                                    for m in members if m is not c):
            continue
        add = body.stmts[readers[0]]
        if add.prim.fn is not index_add or add.args[0] is not c or add.args[1] is not loop.index \
                or add.out is not results[c] or facts.uses[c] != 1:
            continue
        row = ast.Subscript(ast.Name(sub.names[add.out]), sub.key(add.args[1]), ast.Store())
        found[c] = (add, ast.Assign([row], sub.atom(add.args[2]), lineno=0))
    return found


def _widened(loop, operands: dict) -> bool:
    """Whether a carried array starts in a narrower dtype than the step makes it
    (frontend/regions.py ``wider``: a float32 ``h`` becomes float64 in the first step). The
    body's types are the carried ones, but its first step runs on the start as numpy does, in
    the narrower dtype: a plan of its memory by those types would write a float32 value where
    a float64 one is meant (seed 25,300,096: ``h = h * 0.322`` then ``h += t``, float32 at the
    first step, and ``xp.dot(h[2], h[2], out=)`` into a float64 array raised). Such a body is
    written by its expressions."""
    return any(isinstance(a, Var) and not a.aval.weak and a.aval.dtype != c.aval.dtype
               for c in loop.carried for a in [operands.get(c)])


def _made_in_rows_once(em, sub, loop, once: dict) -> list[tuple[Stmt, ast.stmt, Stmt]]:
    """In the buffered form, the value a step assigns to its row of an array written once per
    row (``once``, from ``_rows_written_once``: ``dxs[t] = dt5``) is made in that row, where a
    ufunc or a matrix product of the row's shape and dtype makes it and nothing else reads it:
    ``xp.matmul(dt9, Wx.T, out=dxs[t])``, no copy. (the value's statement, its new node, the
    addition it replaces) per such value."""
    if not em.fast:
        return []
    facts, body, found = sub.facts, loop.body, []
    for c, (add, _) in once.items():
        v = add.args[2]
        made = facts.producer.get(v) if isinstance(v, Var) else None
        form = writer(made) if made is not None else None
        if form not in ("ufunc", "matmul") or v.aval.weak \
                or (v in sub.inlined and sub.planned is not None) \
                or facts.readers.get(v) != [facts.defined[add.out]] \
                or any(v is r for r in body.result) \
                or v.aval.shape != tuple(c.aval.shape[1:]) or v.aval.dtype != c.aval.dtype:
            continue
        row = ast.Subscript(ast.Name(sub.names[add.out]), sub.key(add.args[1]), ast.Load())
        found.append((made, ast.Expr(row_call(sub, made, row, form)), add))
    return found


def _held_stacks(em, stmt: Stmt, loop, listed: set[Var]) -> dict[Var, str]:
    """In the buffered form, each stack the loop makes (``EMPTY``: every row written by a step
    before any is read) is a work array held per thread (workspace.py), allocated once, not on
    every call: carried value -> the work array's name. Not for a stack the function returns
    (or that shares memory with what it returns): a returned array is never a work array."""
    if not em.fast:
        return {}
    held = {}
    for c, fresh, o in zip(loop.carried, loop.fresh, stmt.outs):
        if fresh != EMPTY or o in em.facts.returned or c.aval.weak or c in listed:
            continue
        _busy(em)[len(em.memory.slots)] = [(-1, em.facts.end)]    # (and its views, later)
        em.memory.slots.append((tuple(c.aval.shape), c.aval.dtype, [o]))
        # bound when the function starts: no name an earlier loop's body assigns
        body = em.body_names - em.names.taken
        em.names.taken |= body
        em.slot_names.append(em.names.fresh(f"buf{len(em.memory.slots)}"))
        em.names.taken -= body
        held[c] = em.slot_names[-1]
    return held


def _returned_sums(em, stmt: Stmt, loop, sub, running: dict, lists: set[Var]) -> dict[Var, ast.expr]:
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


def _kept_in(sub, c: Var, r: Var) -> bool:
    """The body's plan writes the step's result ``r`` into the carried array ``c`` (buffers.py
    ``carried``: ``xp.matmul(dz, W.T, out=dh)``): the loop's array is the same one throughout."""
    group = sub.memory.group.get(c)
    return group is not None and group.kind == "carried" and sub.memory.group.get(r) is group


def _summed_terms(loop) -> set[Var]:
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
                or loop_of(made) is not None or any(term is r for r in body.result):
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


def _states_in_rows(sub, saves) -> list[tuple[Stmt, ast.stmt, Stmt]]:
    """In the buffered form, a state saved in its stack (``_first_rows``) is made in its row:
    ``h = xp.tanh(..., out=H[t + 1])``, no copy; ``h`` is then that row, which no later step
    writes. Where the plan put the values it is made over in that row too (buffers.py
    ``"row"``: ``t = xp.matmul(xs[t], Wx, out=H[t + 1])``, then ``t += ...``), it is made over
    them in place: ``h = xp.tanh(t, out=t)``. (the state's statement, its new node, the save
    left out) per state of ``_state_saves`` (``saves``)."""
    found = []
    for made, save, row, _ in saves:
        over = _row_operand(sub, made)
        target = ast.Name(sub.names[over]) if over is not None else row
        node = ast.Assign([ast.Name(sub.names[made.out])], row_call(sub, made, target), lineno=0)
        found.append((made, node, save))
    return found


def _row_operand(sub, made: Stmt) -> Var | None:
    """The operand of the state's statement ``made`` whose group the plan put in the state's
    row (buffers.py ``"row"``), or None."""
    groups = sub.memory.group
    return next((a for a in made.args if isinstance(a, Var) and a in groups
                 and groups[a].kind == "row"), None)


def _state_saves(em, stmt: Stmt, loop, sub, first) -> list[tuple[Stmt, Stmt, ast.expr, int]]:
    """The states of ``_first_rows`` that can be made in their stack's row: where the state
    comes from an elementwise function (a ufunc) of its shape, nothing between it and its save
    touches the stack or the state's memory, and nothing after the loop reads the loop's last
    state (a view of the stack there). (the state's statement, the save, the row, the index
    from which nothing before the save reads the stack and the row's key is made) per state."""
    if not em.fast:
        return []
    facts, found = sub.facts, []
    after = dict(zip(loop.carried, stmt.outs))
    for stack, c, _, _ in first:
        results = dict(zip(loop.carried, loop.body.result))
        o, root = results[c], facts.root(stack)
        save = next(s for s in loop.body.stmts if s.prim.inplace and len(s.args) == 3
                    and s.args[2] is o
                    and facts.root(s.args[0]) is root)
        made = facts.producer.get(o)
        if made is None or writer(made) != "ufunc" or o.aval.weak or c.aval.weak \
                or made.out.aval.shape != tuple(stack.aval.shape[1:]) \
                or made.out.aval.dtype != stack.aval.dtype:
            continue
        start, stop = facts.defined[o], facts.defined[save.out]
        key = save.args[1]
        free = 1 + max((p for m in facts.members.get(root, []) for p in facts.readers.get(m, ())
                        if p < stop), default=-1)
        if isinstance(key, Var) and key not in sub.inlined:
            free = max(free, facts.defined.get(key, -1) + 1)
        if start < free or facts.updates.get(facts.root(o)) \
                or em.facts.readers.get(after[c]) or after[c] in em.facts.returned:
            continue
        row = ast.Subscript(ast.Name(sub.names[save.args[0]]), sub.key(key), ast.Load())
        found.append((made, save, row, free))
    return found


def _products_before(em, loop, sub, saves) -> list[tuple[Stmt, ast.stmt, ast.stmt, set[int]]]:
    """A step's state made in its stack's row over a product of the step's input row and a
    weight the loop does not change (buffers.py ``"row"``: ``t = xp.matmul(xs[t], Wx,
    out=H[t + 1])``, then ``t += ...``, ``h = xp.tanh(t, out=t)``) has that product made for
    every step at once before the loop, in one matrix product into the rows the steps make
    their states in: ``xp.matmul(xs.reshape((160, 32)), Wx, out=H[1:11].reshape((160, 64)))``
    (what an expert writes: one large product runs faster than ten small ones, and each step
    calls one function less); the step then reads its row, ``t = H[t + 1]``. Forward loops,
    where the row is ``t + 1`` and the input row is ``xs[t]``, both matrices. Each element is
    the sum of the same terms as the step's; numpy's OpenBLAS adds them in the same order
    whatever the number of rows (the same bits in the bench workloads), another BLAS may round
    the last place differently, as it may between any two sizes. (the product's statement,
    the line before the loop, the step's node, the statements left unread) each."""
    if not em.fast or loop.reverse or sub.planned is None:
        return []
    facts, memory, found = sub.facts, sub.memory, []
    for made, save, row, _ in saves:
        over = _row_operand(sub, made)
        if over is None:
            continue
        product = facts.producer.get(memory.group[over].members[0])
        if product is None or memory.writes.get(product.out) != "matmul" \
                or _input_product(product, loop, facts) is None \
                or row_offset(save.args[1], loop, facts) != 1:
            continue
        (x, w), taken = product.args, facts.producer[product.args[0]]
        xs, stack, n = taken.args[0], save.args[0], loop.length
        flat = (n * x.aval.shape[0], x.aval.shape[1])
        rows = ast.Name(sub.names[xs]) if xs.aval.shape[0] == n else \
            ast.Subscript(ast.Name(sub.names[xs]), ast.Slice(None, ast.Constant(n)), ast.Load())
        out = ast.Subscript(ast.Name(sub.names[stack]),
                            ast.Slice(ast.Constant(1), ast.Constant(n + 1)), ast.Load())
        before = ast.Expr(ast.Call(ast.Attribute(ast.Name("xp"), "matmul", ast.Load()), [
            _reshaped(rows, flat), ast.Name(sub.names[w])],
            [ast.keyword("out", _reshaped(out, (flat[0], product.out.aval.shape[1])))]))
        em.modules.add("xp")
        node = ast.Assign([ast.Name(sub.names[product.out])], row, lineno=0)
        unread = {id(taken)} if x not in sub.inlined and facts.uses.get(x) == 1 else set()
        found.append((product, before, node, unread))
    return found


def _input_product(product: Stmt, loop, facts) -> Var | None:
    """``product``'s result where it is ``xs[t] @ W`` in a forward loop: the step's input row
    times a weight, both matrices, invariants of the loop that nothing updates."""
    if loop.reverse or buffers.writer(product) != "matmul" or len(product.args) != 2:
        return None
    x, w = product.args
    taken = facts.producer.get(x) if isinstance(x, Var) else None
    if taken is None or taken.prim.fn is not operator.getitem or len(taken.args) != 2 \
            or taken.args[1] is not loop.index or taken.args[0] not in loop.invariants \
            or w not in loop.invariants or x.aval.ndim != 2 or w.aval.ndim != 2 \
            or any(facts.updates.get(facts.root(v)) for v in (taken.args[0], w)):
        return None
    return product.out


def _products_note(product: Stmt, loop, sub) -> str:
    """``loop_regions.py:318  xs[t] @ Wx of every step at once``: the comment above
    ``_products_before``'s product."""
    x, w = product.args
    xs, t = sub.facts.producer[x].args[0], loop.index
    where = f"{product.loc.short}  " if product.loc is not None else ""
    return f"{where}{sub.names[xs]}[{sub.names[t]}] @ {sub.names[w]} of every step at once"


def _reshaped(array: ast.expr, shape: tuple) -> ast.expr:
    """``array.reshape(shape)``."""
    return ast.Call(ast.Attribute(array, "reshape", ast.Load()), [literal(shape)], [])


def _values_in_rows(em, loop, sub, dropped: set[int]) -> list[tuple[Stmt, ast.stmt, Stmt]]:
    """In the buffered form, a value a step writes into a row of a stack the loop carries and
    owns (``H[t + 1] = dz``, passes/stacked.py) is made in that row: ``dz = xp.multiply(...,
    out=H[t + 1])``, no copy. Where it comes from an elementwise function (a ufunc) of the
    row's shape and dtype, is not carried out of the step, the stack is written by nothing
    else in the step, and between the value and its write the step reads the stack only
    through rows at other offsets from the step index (``h_prev = H[t]`` while ``H[t + 1]`` is
    written): the row's old contents are not read once the value is made. (the value's
    statement, its new node, the write left out) per such value."""
    if not em.fast:
        return []
    facts, body, found = sub.facts, loop.body, []
    results = {id(r) for r in body.result}
    for c in loop.carried:
        if c not in body.owned or c.aval.weak or c.aval.ndim < 1:
            continue
        root = facts.root(c)
        writes = facts.updates.get(root, [])
        if len(writes) != 1:
            continue
        save = body.stmts[writes[0]]
        if save.prim.fn is not setitem_ or save.args[0] is not c or id(save) in dropped:
            continue
        key, g = save.args[1], save.args[2]
        offset = row_offset(key, loop, facts)
        made = facts.producer.get(g) if isinstance(g, Var) else None
        if offset is None or made is None or writer(made) != "ufunc" or g.aval.weak \
                or id(g) in results or g in sub.inlined \
                or g.aval.shape != tuple(c.aval.shape[1:]) or g.aval.dtype != c.aval.dtype:
            continue
        start, stop = facts.defined[g], facts.defined[save.out]
        if isinstance(key, Var) and (facts.defined.get(key, -1) > start or key in sub.inlined):
            continue
        if facts.updates.get(facts.root(g)) or not all(
                _row_at(m, c, loop, facts) not in (None, offset)
                for m in facts.members.get(root, []) if m is not c
                for p in facts.readers.get(m, ()) if start < _written_at(p, body, sub) < stop):
            continue
        row = ast.Subscript(ast.Name(sub.names[c]), sub.key(key), ast.Load())
        node = ast.Assign([ast.Name(sub.names[g])], row_call(sub, made, row), lineno=0)
        found.append((made, node, save))
    return found


def _written_at(p: int, body, sub) -> int:
    """Where the statement at ``p`` is read in the written code: a value written inside its
    reader's expression (``sub.inlined``: ``dW += dz * h_prev``) is computed there."""
    while True:
        outs = body.stmts[p].outs
        readers = sub.facts.readers.get(outs[0]) if outs and outs[0] in sub.inlined else None
        if not readers:
            return p
        p = readers[-1]


def _row_at(v: Var, stack: Var, loop, facts) -> int | None:
    """The offset ``d`` where ``v`` is a view of row ``t + d`` of ``stack`` (through views of
    one base: ``H[t].T``); None if it is not (or not known to be) one row."""
    while v in facts.producer:
        made = facts.producer[v]
        if made.prim.fn is operator.getitem and made.args[0] is stack and len(made.args) == 2:
            return row_offset(made.args[1], loop, facts)
        bases = [b for b in (made.args[0],) if isinstance(b, Var)] if made.prim.view else []
        if len(bases) != 1 or not facts.same_memory(bases[0], stack):
            return None
        v = bases[0]
    return None


def _first_rows(sub, loop, blocks) -> list[tuple[Var, Var, int, Stmt]]:
    """The stacks that keep a carried value and its next value in one array (ad/regions.py:
    the step at ``t`` saves its state ``h`` at row ``t`` and the next state at ``t + 1``): row
    ``t`` of step ``t`` is what the step before wrote at its ``t + 1``, so only the first step's
    save is needed, written once before the loop (``H[0] = h``): one row written per step, as
    in a handwritten BPTT. (stack, carried value, row, the save left out of the body) per such
    stack, where the analysis shows the stack's memory written by exactly those two saves and
    read by nothing else in the step."""
    if any(len(b.stmts) != len(b.sources) for b in blocks):
        return []
    facts, body, index = sub.facts, loop.body, loop.index
    stmts = body.stmts

    def is_index(key, shift: int) -> bool:
        """``key`` is the step index plus ``shift``."""
        if not shift:
            return key is index
        made = facts.producer.get(key) if isinstance(key, Var) else None
        return made is not None and made.prim.fn is operator.add and made.args[0] is index \
            and isinstance(made.args[1], Lit) and type(made.args[1].value) is int \
            and made.args[1].value == shift

    found = []
    results = dict(zip(loop.carried, body.result))
    fresh = dict(zip(loop.carried, loop.fresh))
    for stack in loop.carried:
        if fresh[stack] != EMPTY:
            continue
        root = facts.root(stack)
        writes = facts.updates.get(root, [])
        if len(writes) != 2:
            continue
        save, later = stmts[writes[0]], stmts[writes[1]]
        if save.prim.fn is not setitem_ or later.prim.fn is not setitem_ \
                or save.args[0] is not stack or later.args[0] is not save.out:
            continue
        c = save.args[2]
        if not isinstance(c, Var) or c not in results or fresh[c] or results[c] is not later.args[2]:
            continue
        first, second = (0, 1) if not loop.reverse else (1, 0)
        if not (is_index(save.args[1], first) and is_index(later.args[1], second)):
            continue
        members = facts.members.get(root, [])
        readers = {p for m in members for p in facts.readers.get(m, ())}
        if readers - {writes[0], writes[1]} or results[stack] is not later.out:
            continue
        found.append((stack, c, 0 if not loop.reverse else loop.length, save))
    return found


def body_names(em, stmt: Stmt, keep: dict[Var, str]):
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


def _running_sums(sub, loop) -> dict[int, ast.stmt]:
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


def _text(em, atom, unparse) -> str:
    if isinstance(atom, Lit):
        return unparse(em.literal(atom.value))
    return unparse(em.atom(atom))


def _shape(v: Var) -> str:
    return repr(tuple(v.aval.shape))


def _dtype(v: Var) -> str:
    return "" if v.aval.dtype == "float64" else f", dtype=xp.{v.aval.dtype.name}"
