"""Loop regions: a statement that runs a body tape once per step of a ``for`` loop.

A region is the one statement of the tape that holds another tape::

    c_1, ..., c_n = loop[Loop](init_1, ..., init_m, k_1, ..., k_j)

``Loop.body`` is a tape whose inputs are the step index ``t`` (an int, ``0 .. length - 1``,
counted down with ``reverse``), the carried values ``c_in`` and the loop invariants ``k_in``;
its result is the tuple of the carried values after one step, ``c_out`` (same avals as
``c_in``). The statement's operands are the carried values' initial values (one per carried
value that is not ``fresh``: a ``fresh`` one starts as ``zeros`` made by the loop itself (an
``EMPTY`` one as ``empty``: a stack whose every row a step writes before any is read), an
accumulator or a stack of saved values that the body writes in place) and the invariants
(``k_in`` stand for them: the body is its own scope, its Vars are its own). Its results are
the carried values after the last step. Every other stage treats the statement as an opaque
call that reads its operands (ir/analysis.py: a region's uses are its outer operands) and
makes new arrays; the stages that look inside ask ``loop_of(stmt)``.

``run_loop`` interprets a region with numpy (the frontend's concrete values after a loop,
``verify.run``, constant folding), one body statement at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .analysis import memory_bases, read_only
from .play import apply_stmt
from .tape import Primitive, Stmt, Tape, Var


EMPTY = "empty"     # Loop.fresh: allocated uninitialized (every row is written by the steps)


@dataclass(eq=False)
class Loop:
    body: Tape              # inputs: index, carried (c_in), invariants (k_in); result: c_out tuple
    length: int
    ncarry: int
    fresh: tuple = ()       # per carried value: False (an operand), True (zeros) or EMPTY
    reverse: bool = False
    source: str = ""        # how the loop was written, for people: "range(1000)"

    @property
    def index(self) -> Var:
        return self.body.inputs[0].var

    @property
    def carried(self) -> list[Var]:
        return [i.var for i in self.body.inputs[1:1 + self.ncarry]]

    @property
    def invariants(self) -> list[Var]:
        return [i.var for i in self.body.inputs[1 + self.ncarry:]]

    @property
    def outs(self) -> list[Any]:
        return list(self.body.result)

    def steps(self) -> range:
        return range(self.length - 1, -1, -1) if self.reverse else range(self.length)

    def operand_vars(self) -> list[Var]:
        """The body inputs that take the statement's operands, in operand order."""
        return [c for c, f in zip(self.carried, self.fresh) if not f] + self.invariants

    def __repr__(self) -> str:
        return f"<loop {self.source or self.length} over {len(self.body.stmts)} stmts>"


def run_loop(*operands: Any, loop: Loop) -> tuple:
    """The values of a region's results, by running its body ``length`` times."""
    env: dict[Var, Any] = {}
    given = iter(operands)
    for var, fresh in zip(loop.carried, loop.fresh):
        env[var] = np.zeros(var.aval.shape, var.aval.dtype) if fresh else _own(next(given))
    for var in loop.invariants:
        env[var] = next(given)
    carried, index = loop.carried, loop.index
    outs = loop.outs
    plan = [_planned(stmt) for stmt in loop.body.stmts]
    for t in loop.steps():
        env[index] = t
        for stmt, flat, fn, params, single in plan:
            if flat is None:
                results = apply_stmt(stmt, env)
            else:
                result = fn(*[env[a] if var else a for var, a in flat], **params)
                results = (result,) if single else result
            env.update(zip(stmt.outs, results))
        new = [env[o] if isinstance(o, Var) else o.value for o in outs]
        env.update(zip(carried, new))
    return tuple(env[c] for c in carried)


def _planned(stmt: Stmt) -> tuple:
    """A statement ready to run many times: its operands as (is a Var, Var or value) when
    none is a sequence (else None: ``apply_stmt`` takes it)."""
    prim = stmt.prim
    if any(isinstance(a, tuple) for a in stmt.args) or \
            (prim.operands and prim.operands[-1].startswith("*")) or prim.nout not in (1, 2, 3):
        return stmt, None, None, None, None
    flat = [(True, a) if isinstance(a, Var) else (False, a.value) for a in stmt.args]
    return stmt, flat, prim.fn, dict(stmt.params), prim.nout == 1


def _own(value: Any) -> Any:
    """A carried value the body may update in place: the loop's own copy."""
    return value.copy() if isinstance(value, np.ndarray) else value


def loop_primitive(loop: Loop, names: tuple[str, ...]) -> Primitive:
    """The primitive of one region (each region has its own: its number of results)."""
    def region(*operands, loop=None):
        results = run_loop(*operands, loop=loop)
        return results[0] if loop.ncarry == 1 else results
    return Primitive("loop", region, tuple(names), options=(("loop", None),), emit=("loop",),
                     nout=loop.ncarry, creates=True)


def loop_of(stmt: Stmt) -> Loop | None:
    """The loop of a region statement; None for any other statement."""
    if stmt.prim.emit[:1] == ("loop",):
        return stmt.param("loop")
    return None


def made_stack(facts, atom: Any) -> bool:
    """Is ``atom`` a stack a region made (a carried value starting ``EMPTY``: an array of the
    loop's own, in the buffered form a work array held for it alone)? ``facts``: the
    enclosing tape's Analysis."""
    made = facts.producer.get(atom) if isinstance(atom, Var) else None
    loop = loop_of(made) if made is not None else None
    return loop is not None and loop.fresh[list(made.outs).index(atom)] == EMPTY


def handed_over(facts, stmt: Stmt, index: int, atom: Any) -> bool:
    """May the region ``stmt`` (at ``index`` of the enclosing tape, whose Analysis is
    ``facts``) take its operand ``atom`` as the array of a carried value its body updates in
    place, with no copy: an array the tape made (not an argument's memory, not read-only, not
    returned), given once, whose memory nothing reads after the region (``O = np.zeros((T,
    n))`` before ``for t: O[t] = h``: the zeros are the loop's, not a copy of them)."""
    if not isinstance(atom, Var) or not atom.aval.ndim or atom.aval.weak \
            or sum(a is atom for a in stmt.args) != 1:
        return False
    made = facts.producer.get(atom)
    while made is not None and made.prim.inplace and made.first_var is not None:
        made = facts.producer.get(made.first_var)       # (through updates, not views)
    return made is not None and not memory_bases(made) and not read_only(made) \
        and facts.free_after(atom, index)


def handed_over_operands(facts, stmt: Stmt, index: int) -> list[Var]:
    """The operands of the region ``stmt`` that it takes as its own (``handed_over``): those
    of the carried values its body updates in place (``body.owned``)."""
    loop = loop_of(stmt)
    carried = set(loop.carried)
    return [a for v, a in zip(loop.operand_vars(), stmt.args)
            if v in carried and v in loop.body.owned and handed_over(facts, stmt, index, a)]


def body_tapes(tape: Tape):
    """Every tape inside ``tape``'s regions, depth first (not ``tape`` itself)."""
    for stmt in tape.stmts:
        loop = loop_of(stmt)
        if loop is not None:
            yield loop.body
            yield from body_tapes(loop.body)


def inner_tapes(tape: Tape):
    """Every tape inside ``tape``'s statements, depth first: loop regions' bodies, branches'
    arms, while statements' and unwinds' tapes (not ``tape`` itself)."""
    from .branch import branch_of
    from .whiles import while_of

    for stmt in tape.stmts:
        loop, branch, construct = loop_of(stmt), branch_of(stmt), while_of(stmt)
        tapes = (loop.body,) if loop is not None else tuple(branch.arms) \
            if branch is not None else construct.tapes if construct is not None else ()
        for inner in tapes:
            yield inner
            yield from inner_tapes(inner)


__all__ = ["EMPTY", "Loop", "run_loop", "loop_primitive", "loop_of", "made_stack", "handed_over",
           "handed_over_operands", "body_tapes", "inner_tapes"]
