"""The batching of a loop region (``ys.vmap``): the same loop, its carried values batched.

A region's body is a tape of one step (ir/region.py). Batched, it is the body batched by the
same rules (ad/batching.py), with the batched carried values and invariants as batched inputs
(``xs[t]`` of a batched ``xs`` reads ``xs[:, t]``: every example's step ``t``). Which carried
values are batched is a fixed point: those whose initial value is batched, and those a step
makes batched from a batched input (a state that starts as zeros and adds a batched
invariant), found by batching the body again until no carried value changes. A carried value
that starts unbatched but is batched is lifted before the loop (one copy per example); the step
index stays a number. Registered in ``batching.STRUCTURAL`` under ``"loop"``.
"""
from __future__ import annotations

from typing import Any

from ..ir.region import Loop, loop_primitive
from ..ir.tape import Stmt, Tape, Var
from .batching import STRUCTURAL, Batching


def batch_loop(outer: Batching, stmt: Stmt, args: tuple, flags: tuple) -> Any:
    """The batched region of ``stmt`` (its operands ``args``, batched where ``flags``)."""
    loop: Loop = stmt.param("loop")
    given = dict(zip(loop.operand_vars(), flags))
    batched = {v for v, flag in given.items() if flag}
    while True:
        body, outs = _body(outer, loop, batched, lift=set())
        more = {c for c, out in zip(loop.carried, outs) if out} - batched
        if not more:
            break
        batched |= more
    lift = {c for c, out in zip(loop.carried, outs) if c in batched and not out}
    body, _ = _body(outer, loop, batched, lift)
    new_loop = Loop(body, loop.length, loop.ncarry, fresh=loop.fresh, reverse=loop.reverse,
                    source=loop.source)
    operands = []
    for var, arg, flag in zip(loop.operand_vars(), args, flags):
        if var in batched and not flag:         # one copy per example, before the loop
            arg = outer.lifted(arg)
        operands.append(arg)
    prim = loop_primitive(new_loop, stmt.prim.operands)
    outs = outer.ev.emit(prim, operands, {"loop": new_loop}, None)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for c, out in zip(loop.carried, outs):
        if c in batched:
            outer.batched.add(out)
    return outs


def _body(outer: Batching, loop: Loop, batched: set[Var], lift: set[Var]
          ) -> tuple[Tape, list[bool]]:
    """The body batched for the inputs ``batched``, and which of its results are batched;
    the results of ``lift`` (carried values batched while the step makes them the same for
    every example) are lifted at the end of the step."""
    body, size = loop.body, outer.size
    sub = Batching.inside(outer.rules, body, size)
    with sub.ev.collect() as stmts:
        inputs = sub.replay(body, batched)
        results = []
        for c, out in zip(loop.carried, body.result):
            value = sub.new.get(out, out) if isinstance(out, Var) else out
            if c in lift:
                value = sub.lifted(value)
            results.append(value)
    flags = [isinstance(r, Var) and r in sub.batched for r in results]
    tape = body.copy(inputs=inputs, stmts=list(stmts), result=tuple(results),
                     hints=sub.named(stmts), primals={}, folded={},
                     owned=frozenset(sub.new[v] for v in body.owned if v in sub.new))
    return tape, flags


STRUCTURAL["loop"] = batch_loop
