"""A while's memory in the buffered form (codegen/whiles.py writes the loop and its unwind).

Where the enclosing code's memory is planned (buffers.py), each carried array of a ``while``
(each gradient an unwind accumulates) is a group of its own there: a work array, or the
array returned to the caller (``out=``). The loop starts by copying the initial value into it,
and each trip updates it there: the body's memory is planned as straight code is, the carried
arrays its own (buffers.py ``carried``: a value computed from the carried one once that is dead
is written over it, ``xp.add(x, t6, out=x)``), its intermediates in the function's work arrays
free where the loop is; a trip's new value made elsewhere is copied in at the trip's end,
after its residuals are pushed (the body read the old value while it computed the new one);
where the carried array is a work array, the trip makes its new value in a second one instead,
the spare, and the two swap names at the trip's end (``spare_slots``: no copy; after the loop
the value is in either, both held while it lives)::

    buf1[...] = a
    x = buf1
    while xp.absolute(xp.subtract(xp.multiply(x, x, out=buf2), a, out=buf2)) ...:
        ...
        t6 = xp.divide(a, x, out=buf3)
        x += t6
        xp.multiply(_0_5, x, out=x)
        V[trips] = t6
        trips += 1
"""
from __future__ import annotations

import ast
import operator
from typing import Callable

from ..ir.tape import Stmt, Tape, Var
from ..rules.indexing import setitem_
from .branch_plan import copied_in
from .buffers import in_branch_array
from .emit import Emitter
from .region_slots import function_slot, in_array_after


def trip_plan(tape: Tape, own: slice, arrays: list) -> dict:
    """The plan arguments (``Emitter``'s ``carried``, ``turns``) of a trip of ``tape`` whose
    inputs ``own`` are the carried values, the first results their values after the trip;
    ``arrays``: those that live in an array of the enclosing plan (not None)."""
    inputs = {i.var for i in tape.inputs}
    owned = [i.var for i in tape.inputs[own]]
    carried = {r: c for r, c, a in zip(tape.result, owned, arrays)
               if a is not None and isinstance(r, Var) and r not in inputs
               and tape.result.count(r) == 1}
    # (a result is the trip's own to its end: a work array of its own, not a new array each
    # trip, buffers._mark_results, where it is copied before the next trip writes it again: a
    # residual, pushed on its stack, a carried value's, copied into its array; not a carried
    # value the enclosing plan leaves to the loop, whose array is the result after the loop)
    free = {r for r, a in zip(tape.result, arrays) if a is None}
    turns = frozenset(r for r in tape.result if isinstance(r, Var) and r not in inputs
                      and in_branch_array(r) and r not in free)
    return {"carried": carried, "turns": turns}


def updated_rows(tape: Tape) -> frozenset:
    """The values a trip adds into a row in place, ``dxs[t] += dh`` (``Emitter.update``: the
    sum ``dxs[t] + dh`` and the row it reads, written inline there): left out of the plan,
    which would make the sum in a work array and then assign the row."""
    made = {o: s for s in tape.stmts for o in s.outs}
    found = set()
    for s in tape.stmts:
        value = s.args[2] if s.prim.fn is setitem_ and len(s.args) == 3 else None
        op = made.get(value) if isinstance(value, Var) else None
        if op is None or op.prim.emit[:1] != ("binop",) or not isinstance(op.args[0], Var):
            continue
        read = made.get(op.args[0])
        if read is not None and read.prim.fn is operator.getitem \
                and read.args == tuple(s.args[:2]):
            found |= {value, op.args[0]}
    return frozenset(found)


def in_carried(sub: Emitter, tape: Tape, own: slice, arrays: list) -> list[bool]:
    """Per carried value, whether the trip left its new value in the carried array itself
    (its plan wrote it there, or it is the value as it came)."""
    owned = [i.var for i in tape.inputs[own]]
    done = []
    for r, c, a in zip(tape.result, owned, arrays):
        group = sub.memory.group.get(r) if isinstance(r, Var) else None
        done.append(a is not None and (r is c or group is not None
                                       and group is sub.memory.group.get(c)))
    return done


def carried_names(sub: Emitter, tape: Tape, own: slice, outs: list[str], arrays: list) -> None:
    """The values a trip writes over a carried array, in turn, take its name (``x += t6``)."""
    owned = [i.var for i in tape.inputs[own]]
    for c, name, a in zip(owned, outs, arrays):
        group = sub.memory.group.get(c)
        if a is not None and group is not None:
            for m in group.members:
                sub.names.names[m] = name


def spare_slots(em: Emitter, stmt: Stmt, tape: Tape, own: slice, outs: list[str],
                arrays: list, lines: list[ast.stmt], turned: dict[int, str],
                back: dict[int, str]) -> Callable[[Emitter], dict[int, str]]:
    """For ``branch_plan.nested_places``: a trip's new value of a carried value that lives in
    a work array of the enclosing plan, made in a work array of the trip's plan (not over the
    carried one), goes into a second work array of the function, the spare (``x_spare =
    buf7``, made before the loop: ``lines``), held from the loop to the end of the loop's
    result (in_array_after); the trip's plan names its work array so, and the names swap at
    the trip's end (``trip_end``) where the value would be copied in. ``turned``: carried
    index -> the spare's name. A carried value in the array returned to the caller (the
    unwind's ``dk``) may end in the spare: the array is kept under a name (``back``: carried
    index -> it, ``dk_out = dk``) and the value copied into it after the loop where it is not
    there (``copied_back``); the spare is the loop's alone. Not in a loop within another
    statement's (its arrays are placed at that statement, ``slot_at``)."""
    def named(sub: Emitter) -> dict[int, str]:
        if em.enclosing is not None:
            return {}
        at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
        done = in_carried(sub, tape, own, arrays)
        given: dict[int, str] = {}
        for k, r in enumerate(tape.result[:len(done)]):
            outer = em.memory.group.get(stmt.outs[k])
            group = sub.memory.group.get(r) if isinstance(r, Var) else None
            if done[k] or arrays[k] is None or outer is None \
                    or outer.kind not in ("slot", "result") \
                    or group is None or group.kind != "slot" or group.slot in given \
                    or tape.result[:len(done)].count(r) != 1:
                continue
            shape, dtype, _ = sub.memory.slots[group.slot]
            returned = outer.kind == "result"
            end = at if returned else in_array_after(em, stmt.outs[k], at)[1]
            j = function_slot(em, at, end, shape, dtype, [outs[k]], set(), lines)
            spare = em.names.fresh(f"{outs[k]}_spare")
            if returned:
                kept = em.names.fresh(f"{outs[k]}_out")
                lines.append(ast.Assign([ast.Name(kept, ast.Store())],
                                        ast.Name(outs[k], ast.Load()), lineno=0))
                back[k] = kept
            lines.append(ast.Assign([ast.Name(spare, ast.Store())],
                                    ast.Name(em.slot_names[j], ast.Load()), lineno=0))
            given[group.slot] = turned[k] = spare
            em.turned.append((outs[k], spare))
        return given
    return named


def copied_back(outs: list[str], back: dict[int, str]) -> list[ast.stmt]:
    """After the loop, each carried value the loop may leave in its spare put in the returned
    array it lives in (``spare_slots``): ``if dk is not dk_out: dk_out[...] = dk; dk =
    dk_out``."""
    nodes: list[ast.stmt] = []
    for k, kept in back.items():
        test = ast.Compare(ast.Name(outs[k], ast.Load()), [ast.IsNot()],
                           [ast.Name(kept, ast.Load())])
        copy = ast.Assign([ast.Subscript(ast.Name(kept, ast.Load()), ast.Constant(Ellipsis),
                                         ast.Store())], ast.Name(outs[k], ast.Load()), lineno=0)
        rebind = ast.Assign([ast.Name(outs[k], ast.Store())], ast.Name(kept, ast.Load()),
                            lineno=0)
        nodes.append(ast.If(test, [copy, rebind], []))
    return nodes


def trip_end(em: Emitter, sub: Emitter, tape: Tape, own: slice, outs: list[str],
             arrays: list, turned: dict[int, str]) -> list[ast.stmt] | None:
    """The copies that put a trip's new values made elsewhere into the carried arrays
    (``x[...] = t9``), ordered so that none writes an array a later one reads (``x, y = y,
    x``: None, where they read each other's); then the swaps of the carried arrays with
    their spares (``turned``: ``x, x_spare = x_spare, x``)."""
    owned = [i.var for i in tape.inputs[own]]
    done = [d or k in turned for k, d in enumerate(in_carried(sub, tape, own, arrays))]
    facts, plan = sub.facts, sub.memory

    def home(v: Var):
        root = facts.root(v)
        return plan.group.get(root) or root
    homes = {k: home(c) for k, c in enumerate(owned) if arrays[k] is not None}
    left = [k for k in homes if not done[k]]
    reads = {k: {j for j, h in homes.items() if j != k and isinstance(tape.result[k], Var)
                 and home(tape.result[k]) is h} for k in left}
    order: list[int] = []
    while left:
        ready = [k for k in left if not any(k in reads[j] for j in left if j != k)]
        if not ready:
            return None
        order.append(ready[0])
        left.remove(ready[0])
    swaps = [ast.Assign([ast.Tuple([ast.Name(outs[k], ast.Store()), ast.Name(spare, ast.Store())],
                                   ast.Store())],
                        ast.Tuple([ast.Name(spare, ast.Load()), ast.Name(outs[k], ast.Load())],
                                  ast.Load()), lineno=0) for k, spare in turned.items()]
    # (where an arm may give the carried value on, unswapped: ``if y_1 is y_spare:``)
    swaps = [ast.If(ast.Compare(sub.atom(tape.result[k]), [ast.Is()], [ast.Name(spare)]),
                    [swap], []) if spare in sub.passed else swap
             for swap, (k, spare) in zip(swaps, turned.items())]
    return [ast.Assign([ast.Subscript(ast.Name(outs[k]), ast.Constant(Ellipsis), ast.Store())],
                       sub.atom(tape.result[k]), lineno=0) for k in order] + swaps


def started(em: Emitter, names: list[str], inits: list[ast.expr], arrays: list
            ) -> list[ast.stmt]:
    """The carried arrays made from the initial values before the loop (``buf1[...] = a;
    x = buf1``)."""
    nodes: list[ast.stmt] = []
    for name, init, array in zip(names, inits, arrays):
        nodes += copied_in(em, name, array, init)
    return nodes
