"""Scalar mode inside a loop body (buffered form; scalars.py is the function's own).

A float64 vector read one element at a time is read from a list (``x.tolist()`` before the
loop), so its elements and the ``+ - *`` of them are Python floats, which give numpy's bits for
these operations; an element-wise accumulator and a stack of numbers are lists of floats
(``V = [0.0] * n``), made arrays after the loop where anything else reads them.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir.analysis import Analysis
from ..ir.branch import branch_of
from ..ir.region import EMPTY, loop_of
from ..ir.tape import Lit, Stmt, Var
from ..rules.indexing import index_add, setitem_
from .emit import Emitter
from .scalars import NUMPY_FORM, SAFE


def _vector(v: Var) -> bool:
    return v.aval.ndim == 1 and v.aval.dtype == np.float64 and not v.aval.weak


def _int_key(key) -> bool:
    if isinstance(key, Lit):
        return type(key.value) is int
    return isinstance(key, Var) and key.aval.ndim == 0 and key.aval.dtype.kind in "iu"


def _number(atom) -> bool:
    return isinstance(atom, Lit) and type(atom.value) in (int, float) or \
        isinstance(atom, Var) and atom.aval.ndim == 0


def list_stacks(em: Emitter, stmt: Stmt, loop, floats: set[Var]) -> set[Var]:
    """In the buffered form, a stack of numbers (one Python float per step, ``V[i] = t``)
    whose only readers after the loop are loops that read it one element at a time (scalar
    mode, ``body_scalars``) is a list, ``V = [0.0] * n``: no array is written per step, and
    the reading loop takes the list as it is (not ``V.tolist()``). So is a stack of bools (a
    branch's conditions, ``H_COND[t] = h_cond``) whose only readers after the loop are loops
    that read it one element at a time (``h_cond_1 = H_COND[t]``), ``H_COND = [False] * n``:
    each element is the bool stored, read as the array's element was (``if h_cond_1:``; on a
    CPU: on another device a condition is the device's array, kept in one)."""
    if not em.fast:
        return set()
    body = loop.body
    facts = Analysis(body)
    results = dict(zip(loop.carried, body.result))
    found = set()
    for c, fresh, o in zip(loop.carried, loop.fresh, stmt.outs):
        bools = _bools(c) and em.device == "cpu"
        if fresh != EMPTY or not (_vector(c) or bools) or o in em.facts.returned:
            continue
        v = c
        while len(facts.readers.get(v, ())) == 1:
            step = body.stmts[facts.readers[v][0]]
            if step.prim.fn is not setitem_ or step.args[0] is not v or facts.uses[v] != 1 \
                    or not _int_key(step.args[1]) or not (
                        _bool(step.args[2]) if bools else step.args[2] in floats):
                break
            v = step.out
        readers = em.facts.readers.get(o, [])
        reads = _reads_rows if bools else _reads_as_list
        if v is results[c] and v not in facts.readers and readers and all(
                reads(em.tape.stmts[p], o) for p in readers):
            found.add(c)
    return found


def _bools(v: Var) -> bool:
    return v.aval.ndim == 1 and v.aval.dtype == np.bool_


def _bool(atom) -> bool:
    return isinstance(atom, Var) and atom.aval.ndim == 0 and atom.aval.dtype == np.bool_


def _reads_rows(user: Stmt, value: Var) -> bool:
    """Does the region ``user`` read ``value`` only one element at a time, by an int, each
    element only as a branch's condition (``if h_cond_1:``)?"""
    loop = loop_of(user)
    if loop is None:
        return False
    stmts, facts = loop.body.stmts, Analysis(loop.body)

    def condition(s: Stmt) -> bool:
        return s.prim.fn is operator.getitem and s.args[0] is not s.args[1] \
            and _int_key(s.args[1]) and s.out not in loop.body.result and all(
                branch_of(stmts[q]) is not None and stmts[q].args[0] is s.out
                and facts.uses[s.out] == len(facts.readers[s.out])
                for q in facts.readers.get(s.out, ()))

    return all(k in facts.readers and k not in loop.body.result
               and facts.uses[k] == len(facts.readers[k]) and all(
                   stmts[p].args[0] is k and condition(stmts[p]) for p in facts.readers[k])
               for k, a in zip(loop.operand_vars(), user.args) if a is value)


def _reads_as_list(user: Stmt, value: Var) -> bool:
    """Does the region ``user`` read ``value`` only as an invariant it reads as a list?"""
    loop = loop_of(user)
    if loop is None:
        return False
    lists = body_scalars(loop)[0]
    return all(k in lists for k, a in zip(loop.operand_vars(), user.args) if a is value)


def body_scalars(loop) -> tuple[set[Var], set[Var], set[Var]]:
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
