"""A while's stacked number made again by its unwind from the rows it reads anyway.

A recording while (ir/whiles.py) pushes each residual its backward reads, once per trip. Where
a residual is a number made by one elementwise operation of numbers the loop stacks as well
(or literals), ``t5 = 0.5 * h_1`` with ``h_1`` stacked, the unwind's step makes it again from
its rows, as the trip made it, and the stack goes (a push and a read a trip fewer)::

    while t < 1.0:                              while t < 1.0:
        ...                                         ...
        H.append(h_1)                     ->        H.append(h_1)
        V.append(t5)
    for t in reversed(range(trips)):            for t in reversed(range(trips)):
        h_3 = H[t]                                  h_3 = H[t]
        v = V[t]                                    v = 0.5 * h_3

The statement made again is the trip's own (same primitive, parameters and literals, its
operands the rows of the values the trip read), so it gives the same bits. Only numbers (0-d,
one operation a row, no array made), and only where every unwind reading the stack reads the
operands' stacks too; the stack nothing reads then is dropped (regions.py).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.tape import Input, Lit, Stmt, Tape, Var
from ..ir.whiles import Unwind, While, unwind_primitive, while_of
from .regions import drop_unread_stacks


def recomputed_rows(tape: Tape) -> Tape:
    """``tape`` with each stacked number that qualifies made again by its unwinds."""
    facts_readers: dict[Var, list[int]] = {}
    for k, s in enumerate(tape.stmts):
        for v in s.uses():
            facts_readers.setdefault(v, []).append(k)
    stmts = list(tape.stmts)
    changed = False
    for stmt in tape.stmts:
        loop = while_of(stmt)
        if not isinstance(loop, While) or not loop.record:
            continue
        for stack, maker, operands in _remade(stmt, loop):
            readers = facts_readers.get(stack, [])
            if not readers or any(while_of(stmts[k]) is None
                                  or not isinstance(while_of(stmts[k]), Unwind)
                                  for k in readers):
                continue
            new = [_unwind_remaking(stmts[k], stack, maker, operands) for k in readers]
            if any(x is None for x in new):
                continue
            for k, x in zip(readers, new):
                stmts[k] = x
            changed = True
    return drop_unread_stacks(tape.copy(stmts=stmts)) if changed else tape


def _remade(stmt: Stmt, loop: While) -> list[tuple[Var, Stmt, dict]]:
    """The residual stacks of ``stmt`` whose number the body makes by one elementwise
    operation of stacked values and literals: (stack, the body's statement, the stack of
    each operand)."""
    body, n = loop.body, loop.ncarry
    stacks = stmt.outs[n + 1:]
    pushed: dict[Var, Var] = {}
    for k, i in enumerate(loop.saved):
        pushed.setdefault(body.inputs[i].var, stacks[k])
    for j, r in enumerate(body.result[n:]):
        if isinstance(r, Var):
            pushed.setdefault(r, stacks[len(loop.saved) + j])
    producer = {o: s for s in body.stmts for o in s.outs}
    found = []
    for j, r in enumerate(body.result[n:]):
        maker = producer.get(r) if isinstance(r, Var) else None
        if maker is None or len(maker.outs) != 1 or r.aval.ndim != 0 \
                or maker.prim.ufunc is None or maker.prim.effect or maker.prim.inplace \
                or maker.prim.view or maker.prim.creates or not maker.uses() \
                or not all(isinstance(a, Lit) or isinstance(a, Var) and a in pushed
                           and pushed[a] is not stacks[len(loop.saved) + j]
                           for a in maker.args):
            continue
        found.append((stacks[len(loop.saved) + j], maker,
                      {a: pushed[a] for a in maker.args if isinstance(a, Var)}))
    return found


def _unwind_remaking(stmt: Stmt, stack: Var, maker: Stmt, operands: dict) -> Stmt | None:
    """The unwind ``stmt`` making its row of ``stack`` again by ``maker`` from its rows of the
    operands' stacks (None where it does not read one of them)."""
    unwind: Unwind = while_of(stmt)
    step, s = unwind.step, unwind.nsaved
    rows = list(zip(step.inputs[:s], stmt.args[1:1 + s]))
    row_of = {}
    for i, a in rows:
        row_of.setdefault(a, i.var)
    if any(a not in row_of for a in operands.values()):
        return None
    mine = [i.var for i, a in rows if a is stack]
    made = [maker.replace(outs=(v,), args=tuple(row_of[operands[a]] if isinstance(a, Var)
                                                else a for a in maker.args))
            for v in mine]
    keep = [k for k, (i, a) in enumerate(rows) if a is not stack] + \
        list(range(s, len(step.inputs)))
    new_step = step.copy(stmts=made + list(step.stmts),
                         inputs=[Input(step.inputs[k].var, j) for j, k in enumerate(keep)],
                         params=tuple(step.params[k] for k in keep))
    new = replace(unwind, step=new_step, nsaved=s - len(mine))
    return stmt.replace(prim=unwind_primitive(new, tuple(new_step.params), len(stmt.outs)),
                        args=(stmt.args[0], *(stmt.args[1 + k] for k in keep)),
                        params=(("unwind", new),))
