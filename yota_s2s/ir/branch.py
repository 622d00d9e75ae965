"""Branch regions: an ``if`` on a traced value that stays an ``if``.

A branch is the one statement of the tape that holds two tapes, its arms::

    r_1, ..., r_n = branch[Branch](c, k_1, ..., k_j)

``c`` is a traced boolean number (the condition, computed before the statement); ``k_1 ..
k_j`` are the values either arm reads from before the ``if``. ``Branch.then`` and
``Branch.orelse`` are tapes whose inputs stand for ``k_1 .. k_j`` (each arm its own Vars: a
tape is its own scope) and whose results are the names the ``if`` binds, the same avals in
both arms (frontend/branches.py checks it, or keeps the guard). Every other stage treats the
statement as an opaque call of its operands whose results may share memory with them
(ir/analysis.py ``memory_bases``: ``y = x`` in one arm); the stages that look inside ask
``branch_of(stmt)``: the reverse sweep (ad/branches.py: the backward is a ``branch`` on the
same condition, each arm the adjoint of the forward arm), the passes inside the arms
(passes/regions.py), the tape printer and codegen (codegen/branches.py writes a Python
``if``).

``run_branch`` interprets a branch with numpy (the frontend's example values, constant
folding, ``tape.play``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .play import run
from .tape import Input, Primitive, Stmt, Tape, Var


@dataclass(eq=False)
class Branch:
    then: Tape              # inputs: the values read from before the if; result: the outs
    orelse: Tape
    source: str = ""        # the condition as written, for people: "np.sum(x) > 0"

    @property
    def arms(self) -> tuple[Tape, Tape]:
        return self.then, self.orelse

    def __repr__(self) -> str:
        return f"<branch {self.source}>"


def run_branch(cond: Any, *operands: Any, branch: Branch) -> Any:
    """The results of the arm that ``cond`` picks, run on ``operands``."""
    arm = branch.then if bool(cond) else branch.orelse
    env: dict[Var, Any] = {i.var: value for i, value in zip(arm.inputs, operands)}
    run(arm.stmts, env, inputs=set(env))
    results = tuple(_own(env[r], operands) if isinstance(r, Var) else r.value
                    for r in arm.result)
    return results[0] if len(results) == 1 else results


def _own(value: Any, operands: tuple) -> Any:
    """A result as a new array where it shares memory with an operand (the arm gave a value
    it read, or a view of one): a branch's results are its own, as codegen writes them."""
    if isinstance(value, np.ndarray) and any(
            isinstance(o, np.ndarray) and np.may_share_memory(value, o) for o in operands):
        return value.copy()
    return value


def branch_primitive(branch: Branch, names: tuple[str, ...]) -> Primitive:
    """The primitive of one branch (each has its own: its number of results)."""
    return Primitive("branch", run_branch, ("cond", *names), options=(("branch", None),),
                     emit=("branch",), nout=len(branch.then.result))


def branch_of(stmt: Stmt) -> Branch | None:
    """The branch of a branch statement; None for any other statement."""
    if stmt.prim.emit[:1] == ("branch",):
        return stmt.param("branch")
    return None


def arm_tape(name: str, params: tuple, inputs: list, stmts: list, result: tuple,
             loc: Any) -> Tape:
    """An arm: a tape of its own whose inputs are numbered in operand order."""
    return Tape(name=name, params=tuple(params),
                inputs=[Input(v, i) for i, v in enumerate(inputs)], stmts=list(stmts),
                result=tuple(result), loc=loc)


__all__ = ["Branch", "run_branch", "branch_primitive", "branch_of", "arm_tape"]
