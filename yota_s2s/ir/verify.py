"""Checks that a tape is well formed, and runs a tape directly (the reference for passes).

``check(tape)`` is ``check_jaxpr`` for our IR: every use is defined, each Var is defined once,
an in-place statement's first operand is dead afterwards, outputs exist. ``run(tape, values)``
interprets the tape with numpy and, with ``check_avals``, verifies each result's shape and dtype
against its Var's aval. On failure both raise ``InternalError`` showing the statements around
the bad one.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InternalError
from .analysis import Analysis, memory_bases, read_only
from .assumptions import HOWS, READ, VALUE
from .names import name_tape
from .play import apply_stmt, value_of
from .play import run as play_stmts
from .printer import format_stmt
from .branch import branch_of
from .region import loop_of
from .tape import Aval, Stmt, Tape, Var


def _fail(tape: Tape, index: int, message: str) -> None:
    names = name_tape(tape)
    lo, hi = max(index - 8, 0), min(index + 9, len(tape.stmts))
    window = []
    for i in range(lo, hi):
        mark = ">>" if i == index else "  "
        window.append(f"{mark} {format_stmt(tape.stmts[i], names)}")
    raise InternalError(f"while checking tape {tape.name}: {message}",
                        hint="\n".join(window) + "\nThis is a yota_s2s bug; please report it with this text.")


def check_assumptions(tape: Tape) -> Tape:
    """The record of what ``tape`` assumes about the world (``tape.assumptions``) is complete:
    every entry stays right in one of the ways ``ir.assumptions.HOWS`` names (read at run time,
    or guarded), and every read of the world that the code makes at run time (an ``external``
    statement) or checks (``external_check``) has its entry. An outside read with neither a
    run-time read nor a guard is refused: it would be a value compiled in that nobody checks."""
    for entry in tape.assumptions:
        if entry.how not in HOWS:
            raise InternalError(f"while checking tape {tape.name}: {entry.what} ({entry.kind}) "
                                f"is assumed {entry.how!r}, neither read at run time nor guarded",
                                entry.loc, "This is a yota_s2s bug; please report it.")
    recorded = {(e.how, tuple(e.guard)) for e in tape.assumptions
                if e.how in (READ, VALUE) and isinstance(e.guard, tuple)}
    for index, stmt in enumerate(tape.stmts):
        emit = stmt.prim.emit[:1]
        if emit in (("external",), ("external_check",)):
            how = READ if emit == ("external",) else VALUE
            if (how, (stmt.param("root"), stmt.param("path"))) not in recorded:
                _fail(tape, index, f"{stmt.param('shown')} is read from outside the function "
                      "with no entry in the tape's record of assumptions")
    return tape


def check(tape: Tape) -> Tape:
    inputs: set[Var] = {i.var for i in tape.inputs}
    defined = set(inputs)
    if len(defined) != len(tape.inputs):
        _fail(tape, 0, "an input is listed twice")
    last_use = Analysis(tape).last        # outputs: read at the end
    for index, stmt in enumerate(tape.stmts):
        for v in stmt.uses():
            if v not in defined:
                _fail(tape, index, f"{v!r} is used before it is defined")
        if len(stmt.outs) != stmt.prim.nout:
            _fail(tape, index, f"{stmt.prim.name} makes {stmt.prim.nout} results, not {len(stmt.outs)}")
        if stmt.prim.inplace:
            target = stmt.first_var
            if target is None or last_use.get(target, -1) > index:
                _fail(tape, index, "an in-place update's target is used after the update")
            if target in inputs and target not in tape.owned:
                _fail(tape, index, "an in-place update writes into an argument")
        for v in stmt.outs:
            if v in defined:
                _fail(tape, index, f"{v!r} is defined twice")
            defined.add(v)
        if loop_of(stmt) is not None:
            _check_region(tape, index, stmt)
        if branch_of(stmt) is not None:
            _check_branch(tape, index, stmt)
    for out in tape.outputs():
        if isinstance(out, Var) and out not in defined:
            _fail(tape, len(tape.stmts) - 1, f"output {out!r} is never defined")
    return tape


def _check_region(tape: Tape, index: int, stmt: Stmt) -> None:
    """A region's body is a well-formed tape of its own whose result matches its carried
    values, and the statement has one operand per given input, one result per carried value."""
    loop = loop_of(stmt)
    body = loop.body
    check(body)
    if len(loop.fresh) != loop.ncarry or len(body.result) != loop.ncarry:
        _fail(tape, index, "a region's body gives a result per carried value")
    if len(stmt.args) != len(loop.operand_vars()):
        _fail(tape, index, "a region has one operand per carried initial value and invariant")
    for c, o, out in zip(loop.carried, body.result, stmt.outs):
        aval = o.aval if isinstance(o, Var) else None
        if aval is not None and (aval.shape, aval.dtype) != (c.aval.shape, c.aval.dtype):
            _fail(tape, index, f"a carried value changes from {c.aval} to {aval} in a step")
        if (out.aval.shape, out.aval.dtype) != (c.aval.shape, c.aval.dtype):
            _fail(tape, index, f"a region's result {out.aval} is not its carried {c.aval}")
    for c, fresh in zip(loop.carried, loop.fresh):
        if fresh and c not in body.owned:
            _fail(tape, index, "a carried value the region starts as zeros is the body's own")


def _check_branch(tape: Tape, index: int, stmt: Stmt) -> None:
    """A branch's arms are well-formed tapes with an input per operand (after the condition, a
    boolean number) and a result per result of the statement, of its shape and dtype."""
    cond = stmt.args[0]
    if isinstance(cond, Var) and (cond.aval.shape != () or cond.aval.dtype != np.bool_):
        _fail(tape, index, f"a branch's condition is a boolean number, not {cond.aval}")
    for arm in branch_of(stmt).arms:
        check(arm)
        if len(arm.inputs) != len(stmt.args) - 1 or len(arm.result) != len(stmt.outs):
            _fail(tape, index, "a branch's arm has an input per operand, a result per result")
        for r, out in zip(arm.result, stmt.outs):
            aval = r.aval if isinstance(r, Var) else Aval.of(r.value)
            if (aval.shape, aval.dtype) != (out.aval.shape, out.aval.dtype):
                _fail(tape, index, f"a branch's arm gives {aval} for its result {out.aval}")


def call_stmt(stmt: Stmt, env: dict[Var, Any]) -> tuple:
    """Evaluate one statement on concrete values; returns its results as a tuple."""
    return apply_stmt(stmt, env)


def run(tape: Tape, values: Sequence[Any], check_avals: bool = False) -> tuple[Any, list]:
    """Interpret ``tape`` on leaf values (one per input); returns (result, grads)."""
    env: dict[Var, Any] = {i.var: v for i, v in zip(tape.inputs, values)}

    def checked(index: int, stmt: Stmt, results: tuple) -> None:
        for v, r in zip(stmt.outs, results):
            if v.aval.shape != np.shape(r):
                _fail(tape, index, f"result has shape {np.shape(r)}, its aval says {v.aval}")
            if Aval.of(r).dtype != v.aval.dtype:
                _fail(tape, index, f"result has dtype {Aval.of(r).dtype}, its aval says {v.aval}")
    play_stmts(tape.stmts, env, check=checked if check_avals else None)
    result = value_of(tape.result, env)
    grads = [None if g is None else value_of(g, env) for g in (tape.grads or [])]
    return result, grads


def check_written(tape: Tape, facts, storage: dict[Var, Any], names: dict[Var, str]) -> None:
    """Invariants of the written code (codegen's plan; ``facts`` is the tape's ``Analysis`` with
    codegen's read positions):

    - no value is read after its array (``storage``: a key per Var, None for Python scalars;
      ``("slot", k)`` for work array ``k``) is written with another value, nor after its name
      (``names``) is bound to another value;
    - nothing returned is, or shares memory with, a work array (but for a loop step's result
      in the two arrays the loop takes in turn, ``("turn", k)``: the next step's is the other);
    - nothing is written into the memory of an argument.
    """
    writers = {v for v in facts.defined if v not in facts.producer or
               not memory_bases(facts.producer[v]) or facts.producer[v].prim.inplace}
    for v in facts.returned:
        key = storage.get(v)
        if isinstance(key, tuple) and key[0] == "slot":
            _fail(tape, facts.defined[v], f"{v!r} is returned but lives in a work array")
    held = {storage.get(a): "the memory of an argument" for a in facts.arguments}
    held.update((storage.get(s.out), "read-only memory") for s in tape.stmts
                if s.outs and read_only(s) and not memory_bases(s))     # a constant's view
    held.pop(None, None)
    for v, key in storage.items():
        if key in held and v in writers and facts.producer.get(v) is not None \
                and not read_only(facts.producer[v]):
            _fail(tape, facts.defined[v], f"{v!r} is written into {held[key]}")
    _check_locations(tape, facts, storage, writers, "its array is written with")
    _check_locations(tape, facts, names, set(facts.defined), "its name is bound to")


def _check_locations(tape: Tape, facts, where: dict[Var, Any], writers: set[Var],
                     what: str) -> None:
    """A value is not read after its location holds another value."""
    by_location: dict[Any, list[Var]] = {}
    for v, key in where.items():
        if key is not None and v in facts.defined:
            by_location.setdefault(key, []).append(v)
    for values in by_location.values():
        values.sort(key=lambda v: (facts.defined[v], v.id))
        latest, reader = -2, None
        for v in values:
            at = facts.defined[v]
            if v in writers and reader is not None and latest > at:
                _fail(tape, facts.defined[reader],
                      f"{reader!r} is read at statement {latest} but {what} {v!r} at {at}")
            last = facts.last.get(v, -1)
            if last > latest:
                latest, reader = last, v
