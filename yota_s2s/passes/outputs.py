"""Returned gradients belong to the caller.

After simplification a gradient may be an argument itself (``d(x * y)/dx`` with ``dy = 1`` is
``y``), a view of one, a read-only broadcast (``np.broadcast_to(1.0, x.shape)``), the same array
as another gradient, or a literal. Each of those is replaced by a fresh array here, once, at the
end of the pipeline: ``np.full`` for a constant (or a broadcast constant), else ``np.copy``.

A copy of a vector broadcast along the gradient's first axis (``dW = np.copy(np.broadcast_to(
t, (128, 784)))``) comes after the others: the buffered form makes ``t`` in the gradient's first
row and copies it into the rest (codegen/buffers.py ``_heads``), and until then the rest of that
array is free for the values the other copies read.
"""
from __future__ import annotations

import numpy as np

from ..ir.analysis import Analysis, memory_bases, read_only
from ..ir.rewrite import resolver, substitute_stmt
from ..ir.tape import Input, Lit, Stmt, Tape, Var, tree_map
from ..ir.values import to_tree
from ..rules.registry import RuleSet


def fresh_outputs(tape: Tape, rules: RuleSet) -> Tape:
    if not tape.grads:
        return tape
    facts = Analysis(tape)
    stmts, grads, roots, result = list(tape.stmts), list(tape.grads), set(), tape.result
    for k, (inp, g) in enumerate(zip(tape.inputs, tape.grads)):
        if g is None or inp.var.aval.weak:
            continue
        if isinstance(g, Lit):
            grads[k] = _add(stmts, tape, inp, rules.lookup(np.full),
                            (to_tree(inp.var.aval.shape), g), _dtype(inp))
            continue
        root, borrowed = _root(g, facts)
        made = facts.producer.get(g)
        if made is not None and made.prim.fn is np.broadcast_to and isinstance(made.args[0], Lit):
            grads[k] = _add(stmts, tape, inp, rules.lookup(np.full), made.args[::-1], _dtype(inp),
                            made.loc)
        elif borrowed or root in roots:
            if made is not None and tape.primal_of(g) is inp.var:
                # the copy is the gradient now, and takes its name; an argument before whose
                # gradient is the same value keeps that value, named for it (``np.sum(a * x) +
                # np.sum(b * x)``: da and db are both x, db = np.copy(da))
                first = next((i for i, other in zip(tape.inputs[:k], grads) if other is g), None)
                g = _unnamed(stmts, made, first.var if first is not None else None)
                grads = [g if other is made.out else other for other in grads]
                result = tree_map(lambda v: g if v is made.out else v, result)
            grads[k] = _add(stmts, tape, inp, rules.lookup(np.copy), (g,), (),
                            made.loc if made is not None else None)
        roots.add(root)
    producer = {o: s for s in stmts for o in s.outs}
    made = len(tape.stmts)
    stmts[made:] = sorted(stmts[made:], key=lambda s: row_broadcast(s, producer) is not None)
    return tape.copy(stmts=stmts, grads=grads, result=result)


def row_broadcast(stmt: Stmt, producer: dict[Var, Stmt]) -> Var | None:
    """The value ``stmt`` copies into every row, where it is a copy of a value of its dtype
    broadcast along its first axis only (a vector into the rows of a matrix); else None."""
    source = stmt.args[0] if stmt.prim.fn is np.copy and stmt.args else None
    made = producer.get(source) if isinstance(source, Var) else None
    if made is None or made.prim.fn is not np.broadcast_to or not isinstance(made.args[0], Var):
        return None
    row, out = made.args[0], stmt.out.aval
    return row if (row.aval.shape, row.aval.dtype) == (out.shape[1:], out.dtype) \
        and out.ndim >= 2 else None


def _unnamed(stmts: list[Stmt], made: Stmt, grad_of: Var | None) -> Var:
    """The value ``made`` computes, as a new Var without the gradient's name hint (with
    ``grad_of``'s, where given)."""
    temp = Var(made.out.aval, grad_of=grad_of)
    resolve = resolver({made.out: temp})
    stmts[:] = [made.replace(outs=(temp,)) if s is made else substitute_stmt(s, resolve)
                for s in stmts]
    return temp


def _root(var: Var, facts: Analysis) -> tuple[Var, bool]:
    """The array ``var`` shares memory with, and whether that memory is not ours to return
    (an argument, a read-only broadcast, a view of a constant)."""
    borrowed = False
    while var in facts.producer:
        stmt = facts.producer[var]
        borrowed |= read_only(stmt)
        bases = memory_bases(stmt)
        if len(bases) != 1:
            break
        var = bases[0]
    return var, borrowed or var in facts.arguments


def _dtype(inp: Input) -> tuple:
    return () if inp.var.aval.dtype == np.float64 else (("dtype", inp.var.aval.dtype),)


def _add(stmts: list[Stmt], tape: Tape, inp: Input, prim, args: tuple, params: tuple,
         loc=None) -> Var:
    """A fresh gradient array, placed with the statement it copies (or at the function)."""
    out = Var(inp.var.aval, grad_of=inp.var)
    stmts.append(Stmt((out,), prim, args, params, loc or tape.loc,
                      rule="fresh: a returned gradient must not share memory"))
    return out
