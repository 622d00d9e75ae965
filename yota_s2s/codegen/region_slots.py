"""A loop region's work arrays in the buffered form (regions.py writes the region).

The function's work arrays (held per thread, workspace.py) serve its loops too: a body's planned
values take one of the function's free work arrays of their shape and dtype, or the memory of a
returned gradient first written after the loop (``_room``, as buffers.py lends work arrays); a
stack a loop makes is a work array of its own (``held_stacks``), so is the zeros a backward loop
starts a carried gradient from (``held_zeros``); a step's result may live in two work arrays the
step takes in turn (``taken_in_turn``, ``body_slots``). Each function says which values it places, and
the lines it adds before the loop.
"""
from __future__ import annotations

import ast

import numpy as np

from ..ir.region import EMPTY, handed_over_operands, loop_of
from ..ir.tape import Stmt, Var
from . import buffers
from .emit import Emitter
from .out_forms import lent_view, result_call


def held_zeros(em: Emitter, stmt: Stmt, c: Var, lines: list[ast.stmt]) -> str | None:
    """In the buffered form, a carried array the loop starts at zeros and the function does
    not return (the backward loop's ``dh``) lives in a work array (``function_slot``), filled with
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
    over, end = in_array_after(em, o, at)      # none returned, the slot busy to the end
    if aval.weak or not aval.ndim or aval.size < buffers.BODY_MIN or aval.dtype.kind not in "fc" \
            or any(v in em.facts.returned or v in em.memory.delivered for v in over):
        chosen[c] = None
        return None
    j = function_slot(em, at, end, tuple(aval.shape), aval.dtype,
                      [em.names.names.get(o, "")], set(), lines)
    chosen[c] = em.slot_names[j]
    return chosen[c]


def in_array_after(em: Emitter, o: Var, at: int) -> tuple[list[Var], int]:
    """The values in the array of a loop's result ``o`` (the region at ``at``) after the loop:
    ``o`` and those the plan writes over it (``dx6 = xp.multiply(dh, 0.3, out=dh)``, then
    ``dx6 += ...``), and the last statement that reads any of them."""
    group = em.memory.group.get(o)
    members = group.members if group is not None else [o]
    return members, max([at] + [em.facts.last_memory.get(v, at) for v in members])


def body_slots(em: Emitter, stmt: Stmt,
               sub: Emitter) -> tuple[list[ast.stmt], list[tuple[str, str]]]:
    """The work arrays of a body's plan are the function's too (``function_slot``). Returns the
    statements that make those lent by returned arrays, before the loop, and the pairs of
    names of the slots that hold a step's result (buffers.py ``turn``): two work arrays, held
    to the end of the function (the loop's result is in one of them), swapped at the end of
    each step, or, for a gradient the function returns as the loop leaves it, a work array and the
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
            j = function_slot(em, at, at, shape, dtype, labels, taken, lines)
            sub.slot_names[k] = em.slot_names[j]
            continue
        c, after = carried_of[turning[k].members[-1]]
        if after in em.memory.delivered:    # a returned gradient: the last step writes it
            key = em.memory.delivered[after]
            returned = em.names.fresh(f"{em.names[after]}_mem")
            call = result_call(buffers.Group([after], kind="result", result=key), after)
            lines.append(ast.Assign([ast.Name(returned)], call, lineno=0))
            work = em.slot_names[function_slot(em, at, at, shape, dtype, labels, taken, lines)]
            first, second = (returned, work) if loop.length % 2 else (work, returned)
            em.delivered_done.add(after)
        else:                               # held until the loop's result is dead
            end = in_array_after(em, after, at)[1]
            first, second = (em.slot_names[function_slot(em, at, end, shape, dtype, labels,
                                                         taken, lines)] for _ in range(2))
        name = c.hint or sub.names[c]
        new, spare = em.names.fresh(f"{name}_new"), em.names.fresh(f"{name}_spare")
        lines.append(ast.Assign([ast.Tuple([ast.Name(new), ast.Name(spare)])],
                                ast.Tuple([ast.Name(first), ast.Name(second)]), lineno=0))
        sub.slot_names[k] = new
        pairs.append((new, spare))
        em.turned.append((new, spare))
    em.names.taken -= body
    return lines, pairs


def taken_in_turn(em: Emitter, stmt: Stmt, loop, kept: set[Var]) -> frozenset:
    """The step results that may live in two work arrays the loop takes in turn (buffers.py
    ``turn``, ``body_slots``) instead of a new array each step: a carried float array of
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
        members = in_array_after(em, a, 0)[0]
        if any(m in handed for m in members) or any(m in em.facts.returned for m in members) \
                and not (members == [a] and a in em.memory.delivered and loop.length
                         and em.facts.members.get(em.facts.root(a), [a]) == [a]):
            continue
        turns.add(o)
    return frozenset(turns)


def function_slot(em: Emitter, at: int, end: int, shape: tuple, dtype, labels: list[str],
                  taken: set[int], lines: list[ast.stmt]) -> int:
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
                lines.append(ast.Assign([ast.Name(name)], result_call(group, group.members[0]),
                                        lineno=0))
            em.lent_made.add(j)
            lines.append(ast.Assign([ast.Name(em.slot_names[j])],
                                    lent_view(name, group, start, shape), lineno=0))
    busy.setdefault(j, []).append((at, end))
    taken.add(j)
    return j


def _room(em: Emitter, end: int, shape: tuple, dtype) -> tuple | None:
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


def _busy(em: Emitter) -> dict[int, list[tuple[int, int]]]:
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


def held_stacks(em: Emitter, stmt: Stmt, loop, listed: set[Var]) -> dict[Var, str]:
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
        if em.enclosing is None and c.aval.ndim > 1:     # its rows as a list: stack_rows.py
            em.stack_slots = getattr(em, "stack_slots", set()) | {len(em.slot_names) - 1}
    return held
