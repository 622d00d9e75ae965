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
function again with the loop unrolled (one path for the whole batch, as before).

A gradient's recording while (``ys.per_example_grad``) counts each example's trips beside the
loop's (``trips = trips + running``: an example runs its trips from the first, so its trip
``t`` is the loop's), and its stacks hold every example's row (``X[t]`` is ``(size, ...)``).
The unwind runs the largest count, and a trip updates the examples that ran it only: each
example's trips less the largest (``behind``) counts up by one a trip, and the example's
cotangents and accumulators take the step's where it passed zero. Registered in
``batching.STRUCTURAL`` under ``"while"`` and ``"unwind"``.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import NoRuleError, YotaError
from ..frontend.abstract import ghost
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var, tree_atoms
from ..ir.whiles import Unwind, While, unwind_primitive, while_of, while_primitive
from .batch_branches import _unsafe
from .batching import STRUCTURAL, Batching


class NotBatched(NoRuleError):
    """A while statement that this batching does not write (the compiler unrolls it)."""


def batch_while(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    """The batched while of ``stmt`` (its operands ``args``, batched where ``flags``); a
    body or condition that cannot be batched so (an error while it is) is ``NotBatched``."""
    return _or_not_batched("while", _batch_while, outer, stmt, args, flags)


def _batch_while(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    loop = while_of(stmt)
    n = loop.ncarry
    batched = _fixed(outer, loop, {k for k, flag in enumerate(flags) if flag})
    cond, per_example = _tape(outer, loop.cond, batched)
    record = {"saved": loop.saved, "record": loop.record, "nres": loop.nres}
    if not per_example[0]:
        body, _ = _tape(outer, loop.body, batched, lift=batched & set(range(n)))
        new = While(cond, body, ncarry=n, source=loop.source, **record)
        return _emit(outer, stmt, new, _lifted(outer, args, flags, batched), batched)
    read = _read_after(outer, stmt)
    batched = _fixed(outer, loop, batched | {k for k in range(n) if stmt.outs[k] in read})
    kept = set(range(n)) - batched      # the same for every example that runs
    body = _masked(outer, loop, batched, stmt)
    operands = _lifted(outer, args, flags, batched)
    running = _running(outer, loop, operands)
    extra = [running]
    if loop.record:         # each example's trips, counted beside the loop's
        extra.append(outer.emit(np.zeros, [Lit((outer.size,))], {"dtype": np.dtype(np.int64)}))
        outer.batched.add(extra[-1])
    cond = _any(outer, loop, batched, len(extra))
    new = While(cond, body, ncarry=n + len(extra), source=loop.source, **record)
    results = _emit(outer, stmt, new, [*operands[:n], *extra, *operands[n:]],
                    {k for k in range(n + len(extra))} - kept, len(extra))
    outer.hints[results[n]] = "running"
    if not loop.record:
        return results[:n]
    outer.hints[results[n + 1]] = "trips"
    return (*results[:n], results[n + 1], *results[n + 3:])     # (the loop's count: G)


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
    """The values of the tape batched that a statement after ``stmt`` or a result reads
    (all of its results, where ``stmt`` is in a branch's arm, batched as statements of the
    tape around it: batch_branches.py)."""
    stmts = outer.tape.stmts
    at = next((k for k, s in enumerate(stmts) if s is stmt), None)
    if at is None:
        return set(stmt.outs)
    after = stmts[at + 1:]
    read = {u for s in after for u in s.uses()}
    read.update(a for a in tree_atoms(outer.tape.result) if isinstance(a, Var))
    read.update(g for g in outer.tape.grads or () if isinstance(g, Var))
    return read


def _lifted(outer: Batching, args: tuple, flags: tuple, batched: set[int]) -> list:
    """The operands, those batched in the loop and not given batched a copy per example."""
    return [outer.lifted(a) if k in batched and not flags[k] else a for k, a in enumerate(args)]


def _emit(outer: Batching, stmt: Stmt, new: While, operands: list, batched: set[int],
          extra: int = 0) -> tuple:
    """The batched while ``new`` on ``operands`` (``extra`` carried values after the loop's:
    the flags, the count); its results, those numbered in ``batched`` batched."""
    n = while_of(stmt).ncarry
    params = _params(stmt.prim.operands, n, extra)
    nout = new.ncarry + (1 + len(new.saved) + new.nres if new.record else 0)
    results = outer.ev.emit(while_primitive(new, params, nout), operands,
                            {"loop": new}, None)
    results = results if isinstance(results, tuple) else (results,)
    for k, out in enumerate(results[:new.ncarry]):     # (the count and the stacks: not)
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


def _with_running(inputs: list[Input], n: int, extra: list[Var]) -> list[Input]:
    """The batched tape's inputs with the flags ``running`` (and the count) after the ``n``
    carried values."""
    order = [i.var for i in inputs[:n]] + extra + [i.var for i in inputs[n:]]
    return [Input(v, k) for k, v in enumerate(order)]


def _params(params: tuple[str, ...], n: int, extra: int) -> tuple[str, ...]:
    return (*params[:n], *("running", "trips")[:extra], *params[n:])


def _flag(sub: Batching, dtype=np.bool_, hint: str = "running") -> Var:
    """The input that says which examples run (or how many trips each ran)."""
    flag = Var(Aval((sub.size,), np.dtype(dtype)), hint=hint)
    sub.ev.values[flag] = ghost(flag.aval.shape, flag.aval.dtype)
    sub.batched.add(flag)
    return flag


def _any(outer: Batching, loop: While, batched: set[int], extra: int) -> Tape:
    """The condition of the batched loop: any example runs."""
    sub = Batching.inside(outer.rules, loop.cond, outer.size)
    with sub.ev.collect() as stmts:
        inputs = sub.replay(loop.cond, {i.var for k, i in enumerate(loop.cond.inputs)
                                        if k in batched})
        flags = [_flag(sub), _flag(sub, np.int64, "trips")][:extra]
        result = sub.emit(np.any, [flags[0]], {})
    tape = _copy(sub, loop.cond, _with_running(inputs, loop.ncarry, flags), [stmts[-1]],
                 [result])
    return tape.copy(params=_params(loop.cond.params, loop.ncarry, extra))


def _masked(outer: Batching, loop: While, batched: set[int], stmt: Stmt) -> Tape:
    """The body of the batched loop: the trip, each carried value the trip's where the
    example runs, else as it was (one the same for every example: the trip's), and the
    flags, running where the condition holds on the values after the trip."""
    cond, body, n = loop.cond, loop.body, loop.ncarry
    sub = Batching.inside(outer.rules, body, outer.size)
    with np.errstate(all="ignore"), sub.ev.collect() as stmts:
        inputs = sub.replay(body, {i.var for k, i in enumerate(body.inputs) if k in batched})
        _refuse_unsafe(sub, loop, stmt)
        flags = [_flag(sub), _flag(sub, np.int64, "trips")][:1 + loop.record]
        running = flags[0]
        results = []
        for k, r in enumerate(body.result[:n]):
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
        results.append(sub.emit(np.logical_and, [running, sub._atom(cond.result[0])], {}))
        if loop.record:             # (an example's trips: those it ran, from the first)
            results.append(sub.emit(np.add, [flags[1], running], {}))
        results += [sub._atom(r) for r in body.result[n:]]      # (the residuals: each
        # example's row, one that has left a value the unwind does not take)
    tape = _copy(sub, body, _with_running(inputs, n, flags), stmts, results)
    return tape.copy(params=_params(body.params, n, len(flags)))


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


def batch_unwind(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    """The batched unwind of ``stmt``: its step batched, the rows of a stack of batched values
    batched (the stack holds every example's row: ``X[t]`` is ``(size, ...)``); where the
    recording loop counted each example's trips (a batch of counts), the unwind runs the
    largest count and a trip updates the examples that ran it only."""
    return _or_not_batched("unwind", _batch_unwind, outer, stmt, args, flags)


def _or_not_batched(what: str, batch, outer: Batching, stmt: Stmt, args: tuple,
                    flags: tuple) -> Any:
    """``batch(outer, stmt, args, flags)``; an error while it runs is ``NotBatched``."""
    try:
        return batch(outer, stmt, args, flags)
    except NotBatched:
        raise
    except YotaError as e:
        raise NotBatched(f"vmap: the {what} at {stmt.loc.short if stmt.loc else '?'} cannot "
                         f"be batched: {e.what}", stmt.loc,
                         "The compiler unrolls the loop on the example.") from e


def _batch_unwind(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    unwind: Unwind = while_of(stmt)
    s, j = unwind.nsaved, unwind.ninvariant
    trips, state = args[0], list(args[1 + s + j:])
    step = unwind.step
    batched = {k for k, a in enumerate(args[1:1 + s])       # rows of every example
               if isinstance(a, Var) and a.aval.ndim > stmt.args[1 + k].aval.ndim}
    batched |= {s + k for k, flag in enumerate(flags[1 + s:1 + s + j]) if flag}
    batched |= {s + j + k for k, flag in enumerate(flags[1 + s + j:]) if flag}
    nstate = len(state)
    while True:
        _, outs = _tape(outer, step, batched)
        more = {s + j + k for k in range(nstate) if outs[k]} - batched
        if not more:
            break
        batched |= more
    per_example = isinstance(trips, Var) and trips in outer.batched
    if per_example:
        batched |= {s + j + k for k in range(nstate)}
    starts = [outer.lifted(a) if s + j + k in batched and not (isinstance(a, Var) and
                                                                 a in outer.batched) else a
              for k, a in enumerate(state)]
    operands = [*args[1:1 + s + j], *starts]
    if not per_example:
        new_step, _ = _tape(outer, step, batched, lift={k - s - j for k in batched
                                                        if k >= s + j})
        new = Unwind(new_step, s, j, unwind.ncot, unwind.source)
        results = _emit_unwind(outer, stmt, new, [trips, *operands])
    else:
        count = outer.emit(np.max, [trips], {})           # the loop's trips
        behind = outer.emit(operator.sub, [trips, count], {})     # <= 0: trips not yet run
        outer.batched.add(behind)
        new = Unwind(_masked_step(outer, step, batched, nstate), s, j, unwind.ncot,
                     unwind.source)
        results = _emit_unwind(outer, stmt, new, [count, *operands, behind])[:nstate]
    for k, out in enumerate(results):
        if s + j + k in batched:
            outer.batched.add(out)
    return results


def _emit_unwind(outer: Batching, stmt: Stmt, new: Unwind, operands: list) -> tuple:
    names = tuple(new.step.params)
    results = outer.ev.emit(unwind_primitive(new, names, len(new.step.result)), operands,
                            {"unwind": new}, None)
    return results if isinstance(results, tuple) else (results,)


def _masked_step(outer: Batching, step: Tape, batched: set[int], nstate: int) -> Tape:
    """The unwind's step over the batch: the step, each cotangent and accumulator the step's
    where the example ran this trip (``behind``, its trips less the loop's, counts up to 1),
    else as it was; ``behind`` is carried last."""
    sub = Batching.inside(outer.rules, step, outer.size)
    with np.errstate(all="ignore"), sub.ev.collect() as stmts:
        inputs = sub.replay(step, {i.var for k, i in enumerate(step.inputs) if k in batched})
        behind = _flag(sub, np.int64, "behind")
        after = sub.emit(operator.add, [behind, Lit(1)], {})
        ran = sub.emit(operator.gt, [after, Lit(0)], {})
        results = []
        first = len(step.inputs) - nstate
        for k, r in enumerate(step.result):
            value = sub._atom(r)
            if not (isinstance(value, Var) and value in sub.batched):
                value = sub.lifted(value)
            old = inputs[first + k].var
            picked = sub.emit(np.reshape, [ran, Lit((sub.size,) + (1,) * (
                old.aval.ndim - 1))], {}) if old.aval.ndim > 1 else ran
            value = sub.emit(np.where, [picked, value, old], {})
            sub.batched.add(value)
            results.append(value)
        results.append(after)
    order = [i.var for i in inputs] + [behind]
    tape = _copy(sub, step, [Input(v, k) for k, v in enumerate(order)], stmts, results)
    return tape.copy(params=(*step.params, "behind"))


STRUCTURAL["while"] = batch_while
STRUCTURAL["unwind"] = batch_unwind
