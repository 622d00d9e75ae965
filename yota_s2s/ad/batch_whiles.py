"""The batching of a while statement (``ys.vmap``, ir/whiles.py).

The body and the condition are batched by the same rules (ad/batching.py), with the batched
carried values and invariants as batched inputs; which carried values are batched is a fixed
point, as for a loop region (batch_regions.py). Where the condition is the same for every
example (it reads nothing batched), the batched statement is the same loop over the batch.

Where the condition differs per example, the examples leave the loop at different trips: the
loop runs while any example runs, and a trip updates the examples still running only (JAX's
batched ``while_loop``), with one flag per example carried, so that an example that has left
does not come back::

    running = cond(c, k)                        # each example's condition, before the loop
    while xp.any(running):
        c_new = body(c, k)
        c = xp.where(running[:, None], c_new, c)
        running = xp.logical_and(running, cond(c, k))

Each carried value is batched (one copy per example where it starts the same), but for one
the trip makes the same for every example that nothing reads after the loop (the index of a
``for`` with a ``break``: every example that runs is at the same step). An example that has
left runs the body again on the values it left with, whose results are discarded; a body that
may raise on such values (a linear solve, an index computed per example: as
batch_branches._unsafe says) is not batched here: ``NotBatched``, and the compiler traces the
function again with the loop unrolled (one path for the whole batch, as before). A recording
while and an unwind (a gradient's: ``ys.per_example_grad``) are not batched either: their
stacks hold the trips of one example. Registered in ``batching.STRUCTURAL`` under ``"while"``
and ``"unwind"``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import NoRuleError, YotaError
from ..frontend.abstract import ghost
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var, tree_atoms
from ..ir.whiles import While, while_of, while_primitive
from .batch_branches import _unsafe
from .batching import STRUCTURAL, Batching


class NotBatched(NoRuleError):
    """A while statement that this batching does not write (the compiler unrolls it)."""


def batch_while(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    """The batched while of ``stmt`` (its operands ``args``, batched where ``flags``); a
    body or condition that cannot be batched so (an error while it is) is ``NotBatched``."""
    try:
        return _batch_while(outer, stmt, args, flags)
    except NotBatched:
        raise
    except YotaError as e:
        raise NotBatched(f"vmap: the while at {stmt.loc.short if stmt.loc else '?'} cannot "
                         f"be batched: {e.what}", stmt.loc,
                         "The compiler unrolls the loop on the example.") from e


def _batch_while(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    loop = while_of(stmt)
    if not isinstance(loop, While) or loop.record:
        raise NotBatched(f"vmap: the {stmt.prim.name} statement of a gradient "
                         f"(`{loop.source}`) stacks the trips of one example", stmt.loc,
                         "The compiler unrolls the loop on the example.")
    n = loop.ncarry
    batched = _fixed(outer, loop, {k for k, flag in enumerate(flags) if flag})
    cond, per_example = _tape(outer, loop.cond, batched)
    if not per_example[0]:
        body, _ = _tape(outer, loop.body, batched, lift=batched & set(range(n)))
        new = While(cond, body, ncarry=n, source=loop.source)
        results = _emit(outer, stmt, new, _lifted(outer, args, flags, batched), batched)
        return results
    read = _read_after(outer, stmt)
    batched = _fixed(outer, loop, batched | {k for k in range(n) if stmt.outs[k] in read})
    kept = set(range(n)) - batched      # the same for every example that runs
    body = _masked(outer, loop, batched, stmt)
    operands = _lifted(outer, args, flags, batched)
    running = _running(outer, loop, operands)
    cond = _any(outer, loop, batched)
    new = While(cond, body, ncarry=n + 1, source=loop.source)
    results = _emit(outer, stmt, new, [*operands[:n], running, *operands[n:]],
                    {k for k in range(n + 1)} - kept)
    outer.hints[results[n]] = "running"
    return results[:n]


def _fixed(outer: Batching, loop: While, batched: set[int]) -> set[int]:
    """The inputs (by number) batched: those given, and the carried values a trip makes
    batched from them, until nothing changes."""
    n = loop.ncarry
    while True:
        _, outs = _tape(outer, loop.body, batched)
        more = {k for k in range(n) if outs[k]} - batched
        if not more:
            return batched
        batched = batched | more


def _read_after(outer: Batching, stmt: Stmt) -> set[Var]:
    """The values of the tape batched that a statement after ``stmt`` or a result reads."""
    stmts = outer.tape.stmts
    after = stmts[next(k for k, s in enumerate(stmts) if s is stmt) + 1:]
    read = {u for s in after for u in s.uses()}
    read.update(a for a in tree_atoms(outer.tape.result) if isinstance(a, Var))
    read.update(g for g in outer.tape.grads or () if isinstance(g, Var))
    return read


def _lifted(outer: Batching, args: tuple, flags: tuple, batched: set[int]) -> list:
    """The operands, those batched in the loop and not given batched a copy per example."""
    return [outer.lifted(a) if k in batched and not flags[k] else a for k, a in enumerate(args)]


def _emit(outer: Batching, stmt: Stmt, new: While, operands: list, batched: set[int]) -> tuple:
    params = (*stmt.prim.operands[:new.ncarry], *stmt.prim.operands[new.ncarry:]) \
        if new.ncarry == while_of(stmt).ncarry else \
        (*stmt.prim.operands[:new.ncarry - 1], "running", *stmt.prim.operands[new.ncarry - 1:])
    results = outer.ev.emit(while_primitive(new, params, new.ncarry), operands,
                            {"loop": new}, None)
    results = results if isinstance(results, tuple) else (results,)
    for k, out in enumerate(results):
        if k in batched:
            outer.batched.add(out)
    return results


def _tape(outer: Batching, tape: Tape, batched: set[int], lift: set[int] = frozenset()
          ) -> tuple[Tape, list[bool]]:
    """``tape`` (the condition or the body) batched for its inputs numbered in ``batched``,
    and which of its results are batched; the results numbered in ``lift`` are lifted at its
    end where the trip gives them the same for every example."""
    sub = Batching.inside(outer.rules, tape, outer.size)
    with sub.ev.collect() as stmts:
        inputs = sub.replay(tape, {i.var for k, i in enumerate(tape.inputs) if k in batched})
        results = []
        for k, r in enumerate(tape.result):
            value = sub._atom(r)
            if k in lift and not (isinstance(value, Var) and value in sub.batched):
                value = sub.lifted(value)
            results.append(value)
    flags = [isinstance(r, Var) and r in sub.batched for r in results]
    return _copy(sub, tape, inputs, stmts, results), flags


def _copy(sub: Batching, tape: Tape, inputs: list, stmts: list, results: list) -> Tape:
    return tape.copy(inputs=inputs, stmts=list(stmts), result=tuple(results),
                     hints=sub.named(stmts), primals={}, folded={})


def _running(outer: Batching, loop: While, operands: list) -> Var:
    """Each example's condition on the initial values, before the loop (batched inline)."""
    for inp, a in zip(loop.cond.inputs, operands):
        outer.new[inp.var] = a
    for s in loop.cond.stmts:
        with outer.ev.at(s.loc, s.rule):
            outer.push(s)
    running = outer._atom(loop.cond.result[0])
    return running if running in outer.batched else outer.lifted(running)


def _with_running(inputs: list[Input], n: int, running: Var) -> list[Input]:
    """The batched tape's inputs with the flag ``running`` after the ``n`` carried values."""
    order = [i.var for i in inputs[:n]] + [running] + [i.var for i in inputs[n:]]
    return [Input(v, k) for k, v in enumerate(order)]


def _params(tape: Tape, n: int) -> tuple[str, ...]:
    return (*tape.params[:n], "running", *tape.params[n:])


def _flag(sub: Batching) -> Var:
    """The input that says which examples run."""
    running = Var(Aval((sub.size,), np.dtype(np.bool_)), hint="running")
    sub.ev.values[running] = ghost(running.aval.shape, running.aval.dtype)
    sub.batched.add(running)
    return running


def _any(outer: Batching, loop: While, batched: set[int]) -> Tape:
    """The condition of the batched loop: any example runs."""
    sub = Batching.inside(outer.rules, loop.cond, outer.size)
    with sub.ev.collect() as stmts:
        inputs = sub.replay(loop.cond, {i.var for k, i in enumerate(loop.cond.inputs)
                                        if k in batched})
        running = _flag(sub)
        result = sub.emit(np.any, [running], {})
    tape = _copy(sub, loop.cond, _with_running(inputs, loop.ncarry, running), [stmts[-1]],
                 [result])
    return tape.copy(params=_params(loop.cond, loop.ncarry))


def _masked(outer: Batching, loop: While, batched: set[int], stmt: Stmt) -> Tape:
    """The body of the batched loop: the trip, each carried value the trip's where the
    example runs, else as it was (one the same for every example: the trip's), and the
    flags, running where the condition holds on the values after the trip."""
    cond, body, n = loop.cond, loop.body, loop.ncarry
    sub = Batching.inside(outer.rules, body, outer.size)
    with np.errstate(all="ignore"), sub.ev.collect() as stmts:
        inputs = sub.replay(body, {i.var for k, i in enumerate(body.inputs) if k in batched})
        _refuse_unsafe(sub, loop, stmt)
        running = _flag(sub)
        results = []
        for k, r in enumerate(body.result):
            value = sub._atom(r)
            if k in batched:
                if not (isinstance(value, Var) and value in sub.batched):
                    value = sub.lifted(value)
                old = inputs[k].var       # (the batch first: (size, *the example's shape))
                picked = sub.emit(np.reshape, [running, Lit((sub.size,) + (1,) * (
                    old.aval.ndim - 1))], {}) if old.aval.ndim > 1 else running
                value = sub.emit(np.where, [picked, value, old], {})
                sub.batched.add(value)
            results.append(value)
        for k, (c_in, b_in) in enumerate(zip(cond.inputs, body.inputs)):
            sub.new[c_in.var] = results[k] if k < n else sub.new[b_in.var]
        for s in cond.stmts:
            with sub.ev.at(s.loc, s.rule):
                sub.push(s)
        still = sub.emit(np.logical_and, [running, sub._atom(cond.result[0])], {})
    tape = _copy(sub, body, _with_running(inputs, n, running), stmts, results + [still])
    return tape.copy(params=_params(body, n))


def _refuse_unsafe(sub: Batching, loop: While, stmt: Stmt) -> None:
    """An example that has left runs the body again: refuse a statement that may raise on
    its values (batch_branches._unsafe) where it reads a value that differs per example."""
    for s in loop.body.stmts:
        reason = _unsafe(s, loop.body)
        index = [u for u in s.args[1:] if isinstance(u, Var) and u.aval.dtype.kind in "iub"]
        per_example = [u for u in (index if s.prim.emit[:1] == ("getitem",) else s.uses())
                       if sub._atom(u) in sub.batched]
        if reason and per_example:
            where = stmt.loc.short if stmt.loc else "the while"
            raise NotBatched(f"vmap: the while at {where} (`{loop.source}`) decides per "
                             f"example, so the examples that left would run its body again, "
                             f"and it {reason}", s.loc,
                             "The compiler unrolls the loop on the example.")


def refuse_unwind(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    raise NotBatched(f"vmap: the unwind of a gradient (`{while_of(stmt).source}`) runs the "
                     "trips of one example", stmt.loc,
                     "The compiler unrolls the loop on the example.")


STRUCTURAL["while"] = batch_while
STRUCTURAL["unwind"] = refuse_unwind
