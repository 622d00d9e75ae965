"""Playing a tape: evaluate its statements one by one with numpy, no code generated.

``play(tape, *args)`` reads the tape's inputs from ``args`` (argument ``argnum`` at ``path``,
as the flattener recorded them), calls each statement's primitive on the values of its
operands, and returns the tape's result (a tuple result as a tuple); after the backward pass
it returns ``(result, *grads)``, one gradient per *input leaf* (``tape.inputs`` order, None
where there is none), and after the forward sweep ``(result, tangent)``. ``run(stmts, env)`` is the loop itself, for callers that keep their own
environment (a region body evaluated on given values): it updates ``env`` (Var -> value) and
returns it.

The statements are evaluated as written: no check of the arguments' shapes or dtypes (the
generated module makes those), so ``play`` is for looking at a tape, checking a pass, or
evaluating a small program, not for speed. Reads from outside the function (``external``)
follow their root: a module by name, or, for ``("function",)``, the ``fn=`` given to
``play`` (the traced function, whose closure holds the value); rules/outside.py plays them,
through ``HANDLERS``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..errors import YotaError
from .tape import METHODS, Atom, Lit, Primitive, Stmt, Tape, Tree, Var, tree_map

# Primitives that play evaluates with a handler of their own instead of calling their function:
# ``handler(stmt, operands, fn)`` returns the statement's results as a tuple. The rule family
# that declares such a primitive registers its handler (rules/outside.py: reads from outside the
# function, which need the traced function ``fn`` for a closure), so the IR imports no rules.
HANDLERS: dict[Primitive, Callable[[Stmt, list, Callable | None], tuple]] = {}


def play(tape: Tape, *args: Any, fn: Callable | None = None) -> Any:
    """The tape's value on ``args`` (and its gradients, for a tape with ``grads``)."""
    env: dict[Var, Any] = {}
    for inp in tape.inputs:
        if inp.argnum >= len(args):
            raise YotaError(f"{tape.name} takes {len(tape.params)} arguments; "
                            f"play was given {len(args)}",
                            hint=f"Call tape.play({', '.join(tape.params)}).")
        env[inp.var] = leaf(args[inp.argnum], inp.path)
    run(tape.stmts, env, fn=fn, inputs={i.var for i in tape.inputs})
    result = value_of(tape.result, env)
    if getattr(tape, "tangent", None) is not None:      # forward mode: the value and its tangent
        return result, value_of(tape.tangent, env)
    if tape.grads is None:
        return result
    return (result, *(None if g is None else value_of(g, env) for g in tape.grads))


def run(stmts: Iterable[Stmt], env: dict[Var, Any], fn: Callable | None = None,
        inputs: set[Var] = frozenset(),
        check: Callable[[int, Stmt, tuple], None] | None = None) -> dict[Var, Any]:
    """Evaluate ``stmts`` in order, reading operands from and writing results to ``env``.
    An in-place statement whose first operand is one of ``inputs`` writes into a copy, so the
    caller's arrays are never changed. ``check(index, stmt, results)`` sees each statement's
    results before they are stored (the verifier compares them with the avals)."""
    for index, stmt in enumerate(stmts):
        results = apply_stmt(stmt, env, fn, copy_first=stmt.prim.inplace and stmt.first_var in inputs)
        if check is not None:
            check(index, stmt, results)
        for var, value in zip(stmt.outs, results):
            env[var] = value
    return env


def apply_stmt(stmt: Stmt, env: dict[Var, Any], fn: Callable | None = None,
               copy_first: bool = False) -> tuple:
    """One statement on the values in ``env``: its results, as a tuple."""
    operands = [value_of(a, env) for a in stmt.args]
    if copy_first:
        operands[0] = np.array(operands[0], copy=True)
    return _apply(stmt, operands, fn)


def value_of(tree: Tree, env: dict[Var, Any]) -> Any:
    """The value of an operand tree: a Var's from ``env``, a Lit's own, tuples as tuples."""
    def atom(a: Atom) -> Any:
        if isinstance(a, Lit):
            return a.value
        try:
            return env[a]
        except KeyError:
            raise YotaError(f"{a} is used before any statement computes it") from None
    return tree_map(atom, tree)


def leaf(value: Any, path: tuple) -> Any:
    """The leaf of an argument at ``path``: dict keys and sequence indices by item, other
    steps (a namedtuple's or an object's fields) by attribute."""
    for key in path:
        if isinstance(value, dict) or (isinstance(value, (list, tuple)) and isinstance(key, int)):
            value = value[key]
        else:
            value = getattr(value, key)
    return value


def _apply(stmt: Stmt, operands: list, fn: Callable | None) -> tuple:
    handler = HANDLERS.get(stmt.prim)
    if handler is not None:
        return handler(stmt, operands, fn)
    return stmt.prim.apply(operands, dict(stmt.params))


METHODS["play"] = play           # tape.play(*args)
