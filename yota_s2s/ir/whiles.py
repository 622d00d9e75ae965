"""``while`` regions: a ``while`` on a traced condition that stays a ``while``.

The statement holds two tapes, the condition and the body, over the carried values and the
invariants::

    c_1, ..., c_n = while[While](init_1, ..., init_n, k_1, ..., k_j)

``While.cond`` maps ``(c, k)`` to one traced boolean number, ``While.body`` maps ``(c, k)`` to
the carried values after one trip (the same avals: frontend/whiles.py checks it, or unrolls
as before). The number of trips is a run-time value. A while that records also gives the
trip count and one stack per saved value: each carried value the backward reads (``saved``,
by number), as it is at the start of each trip (``X[t] = x``), then each residual, a value
of the trip the backward reads (``nres`` of them: a recording body's results are the carried
values, then the residuals, as JAX's scan gives ``ys``), as the trip ends (``Y1[t] = y1``);
a stack's first axis is its capacity, which the generated code doubles when a trip finds it
full, so its length on the tape is the capacity it starts with (``CAPACITY``), not the trip
count::

    c_1, ..., c_n, trips, X_1, ..., R_1, ... = while[While](init_1, ..., k_1, ...)

Its backward (ad/whiles.py) is an ``unwind`` statement: a ``for`` over the recorded count in
reverse, whose step (``Unwind.step``) reads the saved values of its trip, the invariants,
the carried cotangents and one accumulator per invariant that needs a gradient, and gives the
cotangents and accumulators after it::

    dinit_1, ..., dinit_m, dk_1, ..., dk_p = unwind[Unwind](trips, S_1, ..., S_s, k_1, ...,
                                                           k_j, dc_1, ..., dc_m, z_1, ..., z_p)

Every other stage treats both as opaque calls whose results are arrays of their own; those
that look inside ask ``while_of(stmt)``: the reverse sweep, the passes (each tape on its own),
the tape printer and codegen (codegen/whiles.py). ``run_while`` and ``run_unwind`` interpret
them with numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .play import run
from .tape import Aval, Primitive, Stmt, Tape, Var

CAPACITY = 16       # the trips a stack holds before it is first doubled


@dataclass(eq=False)
class While:
    cond: Tape              # inputs: carried, invariants; result: (the condition,)
    body: Tape              # inputs: carried, invariants; result: the carried values after,
    ncarry: int             # then the residuals
    source: str = ""        # the condition as written: "np.max(np.abs(x * x - a)) > 1e-10"
    saved: tuple[int, ...] = ()     # carried values (by number) stacked per trip
    record: bool = False    # also give the trip count and the stacks
    nres: int = 0           # the residuals (recording): the body's last results, stacked

    def stack_avals(self) -> list[Aval]:
        """The avals of a recording loop's stacks: the saved carried values', the residuals'."""
        body, n = self.body, self.ncarry
        rows = [body.inputs[i].var.aval for i in self.saved] + \
            [r.aval if isinstance(r, Var) else Aval.of(r.value) for r in body.result[n:]]
        return [Aval((CAPACITY, *a.shape), a.dtype) for a in rows]

    @property
    def tapes(self) -> tuple[Tape, ...]:
        return self.cond, self.body

    def with_tapes(self, tapes: tuple[Tape, ...]) -> "While":
        return replace(self, cond=tapes[0], body=tapes[1])

    def __repr__(self) -> str:
        return f"<while {self.source}>"


@dataclass(eq=False)
class Unwind:
    step: Tape              # inputs: saved rows, invariants, cotangents, accumulators
    nsaved: int
    ninvariant: int
    ncot: int               # results: the cotangents, then the accumulators
    source: str = ""

    @property
    def nacc(self) -> int:
        """The accumulators (the last inputs of the step, the last results)."""
        return len(self.step.result) - self.ncot

    @property
    def tapes(self) -> tuple[Tape, ...]:
        return (self.step,)

    def with_tapes(self, tapes: tuple[Tape, ...]) -> "Unwind":
        return replace(self, step=tapes[0])

    def __repr__(self) -> str:
        return f"<unwind {self.source}>"


def _call(tape: Tape, operands: tuple) -> list:
    env: dict[Var, Any] = {i.var: value for i, value in zip(tape.inputs, operands)}
    run(tape.stmts, env, inputs=set(env))
    return [env[r] if isinstance(r, Var) else r.value for r in tape.result]


def _own(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def run_while(*operands: Any, loop: While) -> Any:
    """The carried values after the loop (and, recording, the trip count and the stacks)."""
    n = loop.ncarry
    carried, invariants = [_own(v) for v in operands[:n]], tuple(operands[n:])
    stacks = [np.empty(a.shape, a.dtype) for a in loop.stack_avals()] if loop.record else []
    trips = 0
    while bool(_call(loop.cond, (*carried, *invariants))[0]):
        if loop.record:
            if stacks and trips == len(stacks[0]):
                stacks = [np.concatenate((s, np.empty_like(s))) for s in stacks]
            for s, i in zip(stacks, loop.saved):
                s[trips] = carried[i]
        results = _call(loop.body, (*carried, *invariants))
        for s, r in zip(stacks[len(loop.saved):], results[n:]):
            s[trips] = r
        carried = [_own(v) for v in results[:n]]
        trips += 1
    results = tuple(carried) + ((np.int64(trips), *stacks) if loop.record else ())
    return results[0] if len(results) == 1 else results


def run_unwind(trips: Any, *operands: Any, unwind: Unwind) -> Any:
    """The cotangents of the initial carried values and the invariants' gradients."""
    s, j = unwind.nsaved, unwind.ninvariant
    stacks, invariants, state = operands[:s], operands[s:s + j], list(operands[s + j:])
    for t in reversed(range(int(trips))):
        rows = tuple(stack[t] for stack in stacks)
        state = _call(unwind.step, (*rows, *invariants, *state))
    return state[0] if len(state) == 1 else tuple(state)


def while_primitive(loop: While, names: tuple[str, ...], nout: int) -> Primitive:
    """The primitive of one while statement (each its own: its number of results)."""
    return Primitive("while", run_while, names, options=(("loop", None),), emit=("while",),
                     nout=nout)


def unwind_primitive(unwind: Unwind, names: tuple[str, ...], nout: int) -> Primitive:
    return Primitive("unwind", run_unwind, ("trips", *names), options=(("unwind", None),),
                     emit=("unwind",), nout=nout)


def while_of(stmt: Stmt) -> While | Unwind | None:
    """The ``While`` or ``Unwind`` of such a statement; None for any other statement."""
    kind = stmt.prim.emit[:1]
    if kind == ("while",):
        return stmt.param("loop")
    if kind == ("unwind",):
        return stmt.param("unwind")
    return None


def while_atoms(stmt: Stmt) -> list:
    """What each input of the statement's tapes stands for in the enclosing code, in input
    order (the tapes' inputs are named after them): a carried value is the statement's
    result (the loop's variable), an invariant its operand, a cotangent or an accumulator of
    an unwind its result; a saved row None (a name of its own)."""
    construct = while_of(stmt)
    if isinstance(construct, While):
        return [*stmt.outs[:construct.ncarry], *stmt.args[construct.ncarry:]]
    s, j = construct.nsaved, construct.ninvariant
    return [None] * s + list(stmt.args[1 + s:1 + s + j]) + list(stmt.outs)


def with_tapes(stmt: Stmt, tapes: tuple[Tape, ...]) -> Stmt:
    """``stmt`` holding ``tapes`` in the place of its construct's tapes."""
    construct = while_of(stmt)
    key = "loop" if isinstance(construct, While) else "unwind"
    new = construct.with_tapes(tapes)
    return stmt.replace(params=tuple((k, new if k == key else v) for k, v in stmt.params))


__all__ = ["While", "Unwind", "CAPACITY", "run_while", "run_unwind", "while_primitive",
           "unwind_primitive", "while_of", "while_atoms", "with_tapes"]


def carried_sources(loop: While, seeds: list[int], admits) -> list[int]:
    """The carried values (by number) ``seeds``, and those a trip makes them from that
    ``admits(k)``, transitively: ``err`` of ``while err > tol``, which only the condition reads,
    is none of them (the sweeps carry no tangent or cotangent for it)."""
    body = loop.body
    ins = [i.var for i in body.inputs]
    reach: dict[Var, set[int]] = {v: {k} for k, v in enumerate(ins[:loop.ncarry])}
    for s in body.stmts:
        sources = set().union(*(reach.get(u, set()) for u in s.uses()))
        for o in s.outs:
            reach[o] = sources
    found, todo = set(seeds), list(seeds)
    while todo:
        r = body.result[todo.pop()]
        for k in reach.get(r, set()) if isinstance(r, Var) else ():
            if k not in found and admits(k):
                found.add(k)
                todo.append(k)
    return sorted(found)
