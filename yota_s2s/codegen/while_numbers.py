"""The stacks of numbers of a recording while (codegen/whiles.py) that are not arrays: in the
plain form, and in the buffered form, a stack of flags or float64 numbers the unwind reads only
as a branch's condition or a ufunc's operand is a Python list (``H = []``, ``H.append(h_1)``:
``numbers_listed``); in the buffered form, a float64 number the unwind reads only as a ufunc's
operand with float64 arrays is a held stack of 0-d rows (``number_rows``)::

    H = _held_stacks[2]                     # a list of 0-d arrays, views of one array
    while t < 1.0:
        ...
        h_1 = h if h < t_2 or h != h else t_2
        H[trips][()] = h_1                  # where a ufunc of the trip first reads it
        y1 = xp.multiply(H[trips], f1, out=Y1[trips])
        ...
    for t_3 in reversed(range(trips)):
        h_3 = H[t_3]
        ...
        t16 = xp.multiply(h_3, t14, out=t14)     # the row itself: no fill

The row serves the trip's push and its ufuncs (each would fill the function's 0-d work array
with the number, or numpy would make a 0-d array of it), and the unwind's ufuncs read
it as it is. A row is filled once, as its trip makes the number (the first ufunc at the top
of the trip that reads it; else at the trip's end, as a push), and nothing writes it after.
"""
from __future__ import annotations

import ast

import numpy as np

from ..ir.analysis import Analysis
from ..ir.branch import branch_of
from ..ir.tape import Lit, Stmt, Tape, Var
from ..ir.whiles import While, while_of
from .emit import Emitter
from .out_forms import number_into


def number_rows(em: Emitter, stmt: Stmt) -> set[Var]:
    """The stacks of float64 numbers of the recording while ``stmt`` held as 0-d rows in the
    buffered form: of those ``numbers_listed`` lists, each one that every unwind step reads
    only as an operand of a ufunc with a float64 array, not through Python arithmetic
    (``0.5 * h_3`` of a 0-d array would be numpy's call, ~0.5 us)."""
    if not em.function().fast or em.enclosing is not None:
        return set()
    facts = em.facts
    return {out for out in numbers_listed(em, stmt) if out.aval.dtype == np.float64 and
            all(array_operand(facts.tape.stmts[p], out, arithmetic=False)
                for p in facts.readers.get(out, ()))}


def row_inputs(tape: Tape, indices: list[int]) -> set[Var]:
    """The inputs ``indices`` of an unwind's step ``tape`` (its rows of number-row stacks), and
    the inputs of the arms of its branches that they are given as: the values the step's ufuncs
    read as 0-d rows (out_forms._numbers)."""
    found = {tape.inputs[i].var for i in indices}
    more = set(found)
    while more:
        v = more.pop()
        for s in _all_stmts(tape):
            branch = branch_of(s)
            if branch is not None and v in s.args[1:]:
                for arm in branch.arms:
                    for i, a in zip(arm.inputs, s.args[1:]):
                        if a is v and i.var not in found:
                            found.add(i.var)
                            more.add(i.var)
    return found


def _all_stmts(tape: Tape):
    for s in tape.stmts:
        yield s
        branch = branch_of(s)
        if branch is not None:
            for arm in branch.arms:
                yield from _all_stmts(arm)


def row_fill(row: ast.expr, value: ast.expr) -> ast.stmt:
    """``H[trips][()] = h_1``: a number written in its 0-d row."""
    return number_into(row, value)


def numbers_listed(em: Emitter, stmt: Stmt) -> set[Var]:
    """The stacks of numbers of the recording while ``stmt`` written as Python lists in the
    buffered form (``H = []``, ``H.append(h_1)``: a push ~0.1 us, a read ~0.15 us less than a
    held array's, and nothing made that numpy counts), on the plain form's terms (whiles.py
    ``_listed``): a flag each unwind step reads only as a branch's condition, a float64 number
    only as an operand of a ufunc with a float64 array (``number_rows`` takes those the unwind
    reads with no arithmetic). A number there is never a work array (a 0-d
    result is not written with out=: buffers.writer), nor is it updated in place where it is
    pushed or read (checked)."""
    loop: While = while_of(stmt)
    n, facts = loop.ncarry, em.facts
    pushed = [loop.body.inputs[i].var for i in loop.saved] + list(loop.body.result[n:])
    body_updates = Analysis(loop.body).updates
    listed = set()
    for out, value in zip(stmt.outs[n + 1:], pushed):
        if out.aval.ndim != 1 or (isinstance(value, Var) and body_updates.get(value)):
            continue
        readers = [facts.tape.stmts[p] for p in facts.readers.get(out, ())]
        if readers and all(r.prim.emit[:1] == ("unwind",) and _rows_unwritten(r, out)
                           for r in readers) and \
                (out.aval.dtype.kind == "b" and all(only_tested(r, out) for r in readers) or
                 out.aval.dtype == np.float64 and not out.aval.weak and
                 all(array_operand(r, out) for r in readers)):
            listed.add(out)
    return listed


def _rows_unwritten(unwind: Stmt, stack: Var) -> bool:
    """Whether the step of ``unwind`` updates none of its rows of ``stack`` in place."""
    step = while_of(unwind).step
    updates = Analysis(step).updates
    return not any(updates.get(i.var) for i, a in zip(step.inputs, unwind.args[1:])
                   if a is stack)


def array_operand(unwind: Stmt, stack: Var, arithmetic: bool = True) -> bool:
    """Whether the step of ``unwind`` reads each row of the number stack ``stack`` only as an
    operand of a ufunc whose other operand is a float64 array (in an arm of a branch of the
    step, too): there a Python float and numpy's float64 give the same array, bit for bit, so
    the row may be the pushed number itself, whichever of the two the forward holds."""
    step = while_of(unwind).step
    rows = [i.var for i, a in zip(step.inputs, unwind.args[1:]) if a is stack]
    return all(not v.aval.weak and _read_with_arrays(step, v, arithmetic) for v in rows)


def _read_with_arrays(tape: Tape, v: Var, arithmetic: bool = True) -> bool:
    if any(r is v for r in tape.result):
        return False
    for s in tape.stmts:
        if v not in s.args:
            continue
        branch = branch_of(s)
        if branch is not None:
            if s.args[0] is v:
                return False
            if not all(_read_with_arrays(arm, i.var, arithmetic) for arm in branch.arms
                       for i, a in zip(arm.inputs, s.args[1:]) if a is v):
                return False
            continue
        others = [a for a in s.args if a is not v]
        if _number_arithmetic(s) and arithmetic:    # 0.5 * h: Python's float and numpy's
            if not _read_with_arrays(tape, s.out):    # give the same bits
                return False
            continue
        if s.prim.ufunc is None or s.params or len(s.outs) != 1 or \
                s.out.aval.dtype != np.float64 or not s.out.aval.ndim or \
                not any(isinstance(a, Var) and a.aval.ndim for a in others) or \
                any(a.aval.dtype != np.float64 for a in others if isinstance(a, Var)):
            return False
    return True


def _number_arithmetic(s: Stmt) -> bool:
    """Whether ``s`` adds, subtracts, multiplies or negates float64 numbers (no division:
    Python's raises where numpy's gives inf) into a float64 number."""
    return s.prim.ufunc in (np.add, np.subtract, np.multiply, np.negative) and \
        not s.params and len(s.outs) == 1 and s.out.aval.ndim == 0 and \
        s.out.aval.dtype == np.float64 and not s.out.aval.weak and \
        all(isinstance(a, Var) and a.aval.ndim == 0 and a.aval.dtype == np.float64
            or isinstance(a, Lit) and type(a.value) is float for a in s.args)


def rows_kept(unwind: Stmt, stack: Var) -> bool:
    """Whether the step of ``unwind`` writes nothing in place (a row of ``stack`` it reads
    is the pushed value itself where ``stack`` is a list)."""
    return not Analysis(while_of(unwind).step).updates


def only_tested(unwind: Stmt, stack: Var) -> bool:
    """Whether the step of ``unwind`` reads each row of ``stack`` only as a branch's condition
    (``if err_cond_1:``), where a Python bool and numpy's are one: a list of the flags."""
    step = while_of(unwind).step
    rows = [i.var for i, a in zip(step.inputs, unwind.args[1:]) if a is stack]
    return all(s.prim.emit[:1] == ("branch",) and s.args[0] is v and v not in s.args[1:]
               for v in rows for s in step.stmts if v in s.args)
