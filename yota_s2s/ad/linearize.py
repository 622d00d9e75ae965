"""Linearization: a forward-mode tape cut in two, the forward and the tangent map it leaves.

``ys.linearize(f, *primals)`` evaluates ``f`` once and returns a function of the tangents alone,
JAX's ``linearize``. Its tangent map is linear in the tangents; what it reads of the primal
computation (``W``, ``1 - h * h``, ``np.cos(x)``) does not change from one call to the next.
So the optimized JVP tape (ad/forward.py) is cut along the tangents' dependencies:

    statements that read a tangent, however indirectly -> the tangent map
    every other statement                              -> the forward

and the values the tangent map reads from the forward (primal arguments and intermediates) are
its *residuals*: the forward returns them after its value, the tangent map takes them as
arguments before the tangents. A factor of the tangent that depends on the primal only, such
as a ``tanh``'s derivative, is computed once in the forward, not at every tangent call.
A ``while`` carrying tangents (ad/while_tangents.py) is not cut: its trips' values would be
residuals of a number known at run time only (a stack per value); ``split`` gives None, and
``ys.linearize`` runs the whole JVP at each call of its tangent map (products.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.tape import Aval, Input, Stmt, Tape, Var, tree_atoms
from ..ir.whiles import while_of
from ..rules.registry import RuleSet
from .hoist import hoist_steps


@dataclass
class Linearized:
    """The two halves of a JVP tape: ``forward`` returns ``(value, *residuals)``;
    ``tangent`` takes ``(*residuals, *tangents)`` and returns the result's tangent."""

    forward: Tape
    tangent: Tape
    residuals: list[Var]


def split(tape: Tape, nparams: int, rules: RuleSet) -> Linearized | None:
    """Cut the JVP ``tape`` (whose first ``nparams`` parameters are the primal arguments, the
    rest their tangents) into the forward and the tangent map, the tangent map's independent
    steps hoisted (ad/hoist.py); None where a statement of the tangent map would write into a
    value of the forward (it would change the residuals that the next call reads)."""
    tangent_inputs = [i for i in tape.inputs if i.argnum >= nparams]
    reads_tangent = {i.var for i in tangent_inputs}
    forward_stmts: list[Stmt] = []
    tangent_stmts: list[Stmt] = []
    for stmt in tape.stmts:
        if any(u in reads_tangent for u in stmt.uses()):
            if stmt.prim.inplace and stmt.first_var not in reads_tangent:
                return None
            if while_of(stmt) is not None:
                return None     # a while carrying tangents (while_tangents.py) makes the
                #                 forward's values too: a cut would need them stacked per trip
            tangent_stmts.append(stmt)
            reads_tangent.update(stmt.outs)
        else:
            forward_stmts.append(stmt)
    forward_stmts, tangent_stmts = hoist_steps(
        forward_stmts, tangent_stmts, reads_tangent, {i.var for i in tangent_inputs}, rules,
        {a for a in tree_atoms(tape.tangent) if isinstance(a, Var)})
    reads_tangent.update(o for s in tangent_stmts for o in s.outs)
    residuals = list(dict.fromkeys(
        a for a in [*(u for s in tangent_stmts for u in s.uses()), *tree_atoms(tape.tangent)]
        if isinstance(a, Var) and a not in reads_tangent))
    forward = tape.copy(stmts=forward_stmts, inputs=[i for i in tape.inputs if i.argnum < nparams],
                        params=tape.params[:nparams], arg_kinds=tape.arg_kinds[:nparams],
                        result=(tape.result, tuple(residuals)), tangent=None, tangents=set(),
                        structure=None, role="linearize")
    names = _residual_names(tape, residuals, nparams)
    inputs = [Input(v, k, (), n) for k, (v, n) in enumerate(zip(residuals, names))]
    inputs += [Input(i.var, i.argnum - nparams + len(residuals), i.path, i.access)
               for i in tangent_inputs]
    tangent = tape.copy(stmts=tangent_stmts, inputs=inputs,
                        params=(*names, *tape.params[nparams:]),
                        arg_kinds=(*map(_kind, residuals), *tape.arg_kinds[nparams:]),
                        result=tape.tangent, tangent=None, statics=[], layout=[],
                        assumptions=(), structure=None, freevars=(), role="tangent")
    return Linearized(forward, tangent, residuals)


def _residual_names(tape: Tape, residuals: list[Var], nparams: int) -> list[str]:
    """Parameter names for the residuals: their names in the JVP tape's module (``h``,
    ``t3``), where it was named; else their source names."""
    namer = tape.namer
    taken: set[str] = set(tape.params[nparams:])        # the tangents
    names = []
    for k, v in enumerate(residuals):
        name = (namer.names.get(v) if namer is not None else None) or tape.hint_of(v) or f"r{k}"
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    return names


def _kind(var: Var) -> str:
    """The argument kind a residual is checked as: an array, a numpy scalar, a Python float,
    int or bool."""
    aval: Aval = var.aval
    if aval.weak:       # a Python number (np.allclose's bool, a float)
        return {"b": "bool", "i": "int", "u": "int"}.get(aval.dtype.kind, "float")
    return "scalar" if aval.shape == () else "array"


__all__ = ["Linearized", "split"]
