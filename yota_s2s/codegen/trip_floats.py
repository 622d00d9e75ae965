"""A while's step made by ``np.minimum`` or ``np.maximum`` of two numbers (codegen/scalars.py
``_extremum``) left Python's float, where numpy's float64 would give the same bits wherever
it goes (adaptive_heun's ``h_1 = h if h < t_2 or h != h else t_2``, no ``xp.float64``): the
trip's numbers made of it are Python's too, ~0.1 us an operation less than numpy's."""
from __future__ import annotations

import operator

import numpy as np

from ..ir.branch import branch_of
from ..ir.tape import Lit, Stmt, Tape, Var
from ..ir.whiles import while_of

SAFE = {operator.add, operator.sub, operator.mul, operator.neg}     # scalars.py's
_EXTREMA = {np.minimum, np.maximum}

_COMPARE = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}


def trip_floats(emitter, value: Var) -> bool:
    """Whether the extremum ``value`` of a while's body may stay Python's float (``h_1 = h if
    h < t_2 or h != h else t_2``, no ``xp.float64``: ~0.3 us a trip, and each number made of
    it ~0.1 us less): every value made of it, through the trips too, is read only by ``+ - *``
    and unary ``-`` of float64 numbers (whose results are followed the same way: Python's
    float and numpy's give the same bits), by a comparison that is a condition (the while's, a
    branch's: Python's bool and numpy's alike), as an operand of a ufunc beside a float64 array
    (the same array), by a branch (into its arm; the arm's result out), or as a carried or
    stacked value (an array stack makes it numpy's again; a list stack's rows are read only
    beside float64 arrays, codegen/whiles.py ``_listed``); a carried value the loop's
    statement gives out must be read no more after it."""
    within = emitter.within
    loop = while_of(within[0]) if within else None
    if loop is None or getattr(loop, "body", None) is None or emitter.enclosing is None:
        return False
    body, cond, n = emitter.tape, loop.cond, loop.ncarry
    if len(body.inputs) != len(loop.body.inputs) or [i.var for i in body.inputs[:n]] != \
            list(within[1]):
        return False
    outer = emitter.enclosing.facts
    seen: set[Var] = {value}
    work: list[tuple[Tape, Var]] = [(body, value)]
    arms: dict[int, tuple[Tape, Stmt]] = {}    # an arm (by id): its tape's, its branch

    def add(tape: Tape, v: Var) -> None:
        if v not in seen:
            seen.add(v)
            work.append((tape, v))

    while work:
        tape, v = work.pop()
        for k, r in enumerate(tape.result):
            if r is not v:
                continue
            if tape is cond:
                return False
            if tape is body:
                if k < n:
                    out = within[0].outs[k]
                    if outer.readers.get(out) or out in outer.returned:
                        return False
                    add(body, body.inputs[k].var)
                    add(cond, cond.inputs[k].var)
            else:
                around, branch = arms[id(tape)]
                add(around, branch.outs[k])
        for s in tape.stmts:
            if v not in s.args:
                continue
            branch = branch_of(s)
            if branch is not None:
                if s.args[0] is v:
                    return False
                for arm in branch.arms:
                    arms[id(arm)] = (tape, s)
                    for i, a in zip(arm.inputs, s.args[1:]):
                        if a is v:
                            add(arm, i.var)
                continue
            fn, outs = s.prim.fn, s.outs
            if len(outs) != 1 or s.params:
                return False
            numbers = all(isinstance(a, Lit) and type(a.value) in (int, float) or
                          isinstance(a, Var) and a.aval.ndim == 0 and a.aval.dtype == np.float64
                          for a in s.args)
            if (fn in SAFE or fn in _EXTREMA) and numbers and s.out.aval.ndim == 0 and \
                    s.out.aval.dtype == np.float64:
                add(tape, s.out)
            elif fn in _COMPARE and numbers:
                if not _condition(tape, body, cond, n, s.out):
                    return False
            elif not (s.prim.ufunc is not None and s.out.aval.ndim and
                      s.out.aval.dtype == np.float64 and
                      any(isinstance(a, Var) and a.aval.ndim for a in s.args) and
                      all(a.aval.dtype == np.float64 for a in s.args if isinstance(a, Var))):
                return False
    return True


def _condition(tape: Tape, body: Tape, cond: Tape, n: int, flag: Var) -> bool:
    """Whether ``flag`` (a comparison's) is only a condition: the while's (``cond``'s result),
    a branch's, or a residual the body stacks (a list of flags the unwind only tests, or an
    array of them)."""
    for k, r in enumerate(tape.result):
        if r is flag and not (tape is cond or tape is body and k >= n):
            return False
    return all(branch_of(s) is not None and s.args[0] is flag and flag not in s.args[1:]
               for s in tape.stmts if flag in s.args)
