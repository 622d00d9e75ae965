"""Reverse mode: from a forward tape to a tape that also computes the gradients of its result.

The result must be one real scalar, the loss; its gradient is seeded with one and the sweep
(sweep.py) runs from the last statement to the first. Each argument that wants a gradient
gets the adjoint of its value, fitted to it (zeros where the result does not depend on it).
``transpose`` runs the same sweep over a linear map's statements: forward mode's way from a
VJP rule to a JVP (forward.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ResultTypeError
from ..frontend.evaluator import Evaluator
from ..ir.tape import Aval, Lit, Stmt, Tape, Var
from ..ir.values import to_tree
from .sweep import Sweep, active_from


def backward(tape: Tape, ev: Evaluator, wrt: set[int] | None = None,
             has_aux: bool = False) -> Tape:
    """Extend ``tape`` (recorded by ``ev``) with the gradients of its result; ``wrt``: the
    arguments (by number) that want one, None for every argument with float values;
    ``has_aux``: the result is a pair ``(loss, aux)``, and only the loss is differentiated (the
    tape's result stays the pair: the module returns ``aux`` beside the loss, as computed)."""
    diff = [i.var.aval.is_float and (wrt is None or i.argnum in wrt) for i in tape.inputs]
    seeds = {i.var for i, d in zip(tape.inputs, diff) if d}
    sweep = Sweep(ev, tape, active_from(tape.stmts, seeds, ev.rules), masks=True)
    with ev.deriving(sweep.home) as stmts:
        result = loss_of(tape) if has_aux else tape.result
        _check_result(tape, result)
        if result in sweep.active:
            sweep.full[result] = _one(result.aval)
            if result.aval.shape != ():      # an array of one element, taken as a scalar
                dtype = {} if result.aval.dtype == np.float64 else {"dtype": result.aval.dtype}
                with ev.at(tape.loc, "the result's own gradient"):
                    sweep.full[result] = sweep.emit(ev.rules.lookup(np.ones),
                                                    [Lit(result.aval.shape)], dtype,
                                                    grad_of=result)
            sweep.find_cancellations()
            sweep.sweep_all(tape.stmts)
        grads = [to_tree(sweep.final_grad(i.var)) if d else None
                 for i, d in zip(tape.inputs, diff)]
    return tape.copy(stmts=stmts, grads=grads, primals=sweep.primals)


def loss_of(tape: Tape) -> Any:
    """The loss of a tape whose function returns ``(loss, aux)`` (``has_aux=True``)."""
    structure = tape.structure
    if not isinstance(tape.result, tuple) or len(tape.result) != 2 or \
            structure is not None and structure.kind not in ("tuple", "list"):
        raise ResultTypeError(f"{tape.name} returns {describe(tape.result, structure)}; with "
                              "has_aux=True the function returns a pair (loss, aux)", tape.loc,
                              "Return loss, aux: the loss a scalar, aux anything to return "
                              "beside it (a tuple, dict or dataclass of arrays), or drop "
                              "has_aux=True.")
    return tape.result[0]


def _check_result(tape: Tape, result: Any) -> None:
    """Gradients need one real scalar result (or an array of one element): the loss."""
    if isinstance(result, tuple):
        raise ResultTypeError(f"{tape.name} returns {describe(result, tape.structure)}; "
                              "gradients need one scalar float result, the loss", tape.loc,
                              "Return the loss alone, or return loss, aux and pass has_aux=True "
                              "to get aux back beside the gradients (as in JAX). For the "
                              "gradients of a non-scalar result use ys.vjp or ys.jacobian.")
    if not is_constant(result) and (not isinstance(result, Var) or result.aval.size != 1
                                    or not result.aval.is_float):
        raise ResultTypeError(f"{tape.name} returns {describe(result)}; gradients need a "
                              "scalar float result (or an array of one element)", tape.loc,
                              "Reduce the output to a scalar, e.g. return np.sum(...) or "
                              "np.mean(...); for the gradients of a non-scalar result use ys.vjp "
                              "or ys.jacobian.")
    if isinstance(result, Var) and result.aval.dtype.kind == "c":
        raise ResultTypeError(f"{tape.name} returns a complex scalar ({result.aval}); the "
                              "gradient of a value that is not real is not defined", tape.loc,
                              "Return a real scalar: its real part (np.real(...), .real), its "
                              "magnitude (np.abs(...)) or a squared norm. The derivative of a "
                              "holomorphic function is a JVP: ys.jvp(f, (z,), (1.0 + 0j,)) "
                              "(docs/complex.md).")


def transpose(ev: Evaluator, stmts: list[Stmt], inputs: list[Var],
              seeds: list[tuple[Any, Any]]) -> list[Any]:
    """The transpose of the linear map that ``stmts`` compute from ``inputs``: the adjoints of
    ``inputs`` (None where zero) when each ``(value, seed)`` of ``seeds`` gives a value its
    adjoint. Forward mode uses it to turn a VJP rule into a JVP (forward.py)."""
    active = set(inputs)
    for stmt in stmts:
        if any(u in active for u in stmt.uses()):
            active |= {o for o in stmt.outs if o.aval.is_float}
    sweep = Sweep.linear(ev, active)
    for value, seed in seeds:
        if value in sweep.active:
            sweep.accumulate(value, seed)
    for stmt in reversed(stmts):
        if not any(o in inputs for o in stmt.outs):     # (what makes a placeholder)
            sweep.sweep(stmt)
    out = []
    for u in inputs:
        g = sweep.adjoint(u)
        out.append(None if g is None else sweep.fit(g, u.aval))
    return out


def _one(aval: Aval) -> Any:
    return 1.0 if aval.weak or aval.dtype == np.float64 else aval.dtype.type(1)


def is_constant(result: Any) -> bool:
    """A real number that no gradient flows to: a constant (``lambda x: 1.0``, a value made
    of static ints), or a bool or int computed from the arguments (``x > y``). Its gradient
    with respect to every argument is zero, as in autograd and JAX."""
    if isinstance(result, Lit):
        return np.ndim(result.value) == 0 and np.asarray(result.value).dtype.kind in "biuf"
    return isinstance(result, Var) and result.aval.size == 1 and result.aval.dtype.kind in "biu"


def describe(value: Any, structure: Any = None) -> str:
    """A returned value in the user's words: ``an array of float64[3]``, ``a tuple of 2
    values (a float64 scalar, an array of float64[3])``, ``a dict with keys 'loss', 'acc'``,
    ``the constant 3``; ``structure``: what its tuples were (ir/structure.py)."""
    if isinstance(value, tuple):
        if structure is not None and structure.kind not in ("tuple", "list"):
            return structure.describe()
        kind = "list" if structure is not None and structure.kind == "list" else "tuple"
        children = structure.children if structure is not None else [None] * len(value)
        return (f"a {kind} of {len(value)} value{'' if len(value) == 1 else 's'} ("
                + ", ".join(describe(v, c) for v, c in zip(value, children)) + ")")
    if isinstance(value, Var):
        aval = value.aval
        if aval.shape == ():
            return f"a {'Python ' if aval.weak else ''}{aval.dtype} scalar"
        return f"an array of {aval.dtype}[{', '.join(map(str, aval.shape))}]"
    value = value.value if isinstance(value, Lit) else value
    return "None" if value is None else f"the constant {value!r}"
