"""A branch's memory in the buffered form (codegen/branches.py writes the branch).

Where the enclosing code's memory is planned (buffers.py), each array a branch gives is a group
of its own there: a work array, or the array returned to the caller (``out=``). Whichever arm
runs writes it there, and the arm's intermediates are planned as straight code is, in the
function's work arrays (their lives end with the arm)::

    if x_cond:
        y_ = xp.square(x, out=buf2)
    else:
        y_ = xp.negative(x, out=buf2)
    ...
    if x_cond:
        dx = xp.multiply(_6_0, x, out=_result(out, 0, (4,)))
    else:
        dx = _result(out, 0, (4,))
        dx.fill(-3.0)

An arm's result the arm does not make into that array (one it read, a view, a number) is copied
into it (``buf2[...] = x; y = buf2``): the enclosing plan may write over the branch's result.
"""
from __future__ import annotations

import ast
import copy
from typing import Callable

from ..ir.tape import Stmt, Var
from .emit import Emitter
from .out_forms import _lent_view, _result_array, result_call
from .region_slots import _busy, function_slot


def planned(em: Emitter) -> bool:
    """Whether ``em`` writes into planned memory (the buffered form, a planned loop body)."""
    return em.fast or em.planned is not None


def result_arrays(em: Emitter, stmt: Stmt, outs: list[Var] | None = None
                  ) -> tuple[list[ast.stmt], list[ast.expr | None]]:
    """The array each result of the branch ``stmt`` (or a while's carried value, ``outs``:
    while_plan.py) is written into (None: as the plain form writes it: a number, a value the
    plan leaves to its maker), and the lines that make those arrays before the ``if`` (a work
    array lent by a returned one, buffers.py)."""
    lines: list[ast.stmt] = []
    arrays: list[ast.expr | None] = []
    for o in stmt.outs if outs is None else outs:
        group = em.memory.group.get(o)
        if group is None or em.memory.writes.get(o) not in ("branch", "while"):
            arrays.append(None)
        elif group.kind == "slot":
            if group.slot in em.memory.lent and group.slot not in em.lent_made:
                lines += _lent_view(em, group.slot)
            arrays.append(ast.Name(em.slot_names[group.slot]))
        elif group.kind == "result" and id(group) in em.lent_arrays:
            lines += _result_array(em, group)
            arrays.append(ast.Name(em.lent_arrays[id(group)]))
        elif group.kind == "result":
            arrays.append(result_call(group, o))
        elif group.kind == "row":       # an arm's result made in its branch's array
            arrays.append(group.row)
        else:
            arrays.append(None)
    return lines, arrays


def nested_places(em: Emitter, stmt: Stmt, lines: list[ast.stmt],
                  named: Callable[[Emitter], dict[int, str]] | None = None
                  ) -> Callable[[Emitter], None]:
    """How an arm of the branch ``stmt`` (a while's condition, body, unwind step) places its
    plan's work arrays: in the function's,
    free where the statement is (region_slots.function_slot: the statement of the function
    it is in, or the loop or branch holding it); in one of its own where that statement
    is not known; those ``named`` gives (a trip's new carried value: while_plan.py
    ``spare_slots``), under the name it gives. The
    lines that make them (a returned array lending one) go to ``lines``."""
    function = em.function()
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt) \
        if em.enclosing is None else em.slot_at

    def place(sub: Emitter) -> None:
        sub.slot_at = at
        taken: set[int] = set()
        given = named(sub) if named is not None else {}
        for k, (shape, dtype, members) in enumerate(sub.memory.slots):
            if k in given:
                sub.slot_names[k] = given[k]
                continue
            labels = list(dict.fromkeys(sub.names[v] for v in members))
            if at is None:
                j = function.add_slot(shape, dtype, labels)
                _busy(function)[j] = [(-1, function.facts.end)]
            else:
                j = function_slot(function, at, at, shape, dtype, labels, taken, lines)
            sub.slot_names[k] = function.slot_names[j]
    return place


def made_in(sub: Emitter, r, array: ast.expr | None) -> bool:
    """Whether the arm (``sub``) made its result ``r`` in ``array`` (buffers.py ``_homes``)."""
    group = sub.memory.group.get(r) if isinstance(r, Var) else None
    return array is not None and group is not None and group.kind == "row" \
        and group.row is array


def copied_in(em: Emitter, name: str, array: ast.expr, value: ast.expr) -> list[ast.stmt]:
    """An arm's result copied into the branch result's array, then bound to its name (which
    the value may be read under: ``buf2[...] = s; s = buf2``); a returned array, made by a call,
    bound first (``dx = _result(...); dx[...] = dh``)."""
    if isinstance(array, ast.Name):
        return [ast.Assign([ast.Subscript(copy.deepcopy(array), ast.Constant(Ellipsis),
                                          ast.Store())], value, lineno=0),
                ast.Assign([ast.Name(name)], copy.deepcopy(array), lineno=0)]
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    into = em.names.fresh(name) if name in read else name
    lines = [ast.Assign([ast.Name(into)], copy.deepcopy(array), lineno=0),
             ast.Assign([ast.Subscript(ast.Name(into), ast.Constant(Ellipsis), ast.Store())],
                        value, lineno=0)]
    return lines + ([ast.Assign([ast.Name(name)], ast.Name(into), lineno=0)]
                    if into != name else [])
