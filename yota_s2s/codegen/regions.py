"""A loop region (ir/region.py) written as a ``for`` loop with its body once::

    # rnn.py:5  for t in range(xs.shape[0]):   (a loop region, 1000 steps)
    h = h0
    loss = 0.0
    H = xp.empty((1001, 64))                 # a stack the backward loop reads
    H[0] = h                                 # the first step's state: one row per step after
    for t in range(1000):
        # rnn.py:6  h = np.tanh(W @ h + U @ xs[t] + b)
        h = xp.tanh(W @ h + U @ xs[t] + b)
        ...
        H[t + 1] = h

In both forms the backward loop adds each accumulated product as it is made
(``dW += h.T @ dz``: no two products held at once) and assigns the rows of an accumulator each
step writes once (``dxs[t] = dz @ U``, no zero fill). The buffered form goes further, as a
handwritten BPTT does:

- a stack the loop makes is a work array held per thread (``H = buf1``, workspace.py);
- a saved state is made in its row (``h = xp.tanh(..., out=H[t + 1])``), no copy;
- an accumulator that becomes a returned gradient is made in the returned array
  (``dW = _result(out, 0, (64, 64))``): out= is written by the loop;
- ``np.sum(h ** 2)`` is ``xp.vdot(h, h)``;
- scalar mode (scalars.py): a vector read one element at a time is read from ``x.tolist()``
  (Python floats), an element-wise accumulator or a stack of numbers is a list.

The body is written by an Emitter of its own (the plain form: inlining, names from the source,
comments per source line) with the names the naming pass gave it (ir/names.py: the invariants
keep the enclosing function's names, the others are new to it). A carried value keeps one
name through the step where the body allows it (its old value is not read after the new one
is made), else the step ends by rebinding it.

Every decision is made first, in the region's plan (region_plan.py, plan.py ``RegionPlan``;
the buffered form's beside it: region_slots.py for work arrays, region_rows.py for values made
in rows, region_scalars.py for scalar mode in a body); ``region_statements`` then writes the
plan as statements: what the loop starts from, an ``ast.For`` holding the step's blocks with
their comments, and the results. emit.py finds this writer in ``CONSTRUCTS``, by the type of
the region's ``Loop``.
"""
from __future__ import annotations

import ast

from ..ir.tape import Stmt, Var
from ..text import comment, identifier
from .emit import Emitter
from .plan import (InReturned, InStack, NewArray, Operand, OwnCopy, RegionPlan, ZeroedWork,
                   ZeroList)
from .region_plan import plan_region
from .region_rows import products_note
from .render import Comment, block_nodes


def region_statements(em: Emitter, stmt: Stmt) -> list[ast.stmt]:
    """The loop region ``stmt`` as a ``for`` loop with its body once (the module docstring),
    written from its plan: the work arrays returned arrays lend the body, what the loop starts
    from, the step, and the names its results have after it."""
    plan, sub, blocks = plan_region(em, stmt)
    nodes: list[ast.stmt] = list(plan.lent)
    nodes += [node for start in plan.starts for node in _start(em, sub, start)]
    nodes += [_assign(sub.names[k], value) for k, value in plan.invariants]
    nodes += _first_rows(plan)
    nodes.append(_step_loop(sub, plan, blocks))
    nodes += [_assign(name, value) for name, value in plan.results]
    return nodes


def _start(em: Emitter, sub: Emitter, start: tuple) -> list[ast.stmt]:
    """A carried value as the loop starts (region_plan.py ``starts``), by its writer in
    ``_STARTS``."""
    c, how = start
    if isinstance(how, NewArray):
        em.modules.add("xp")
    return _STARTS[type(how)](sub.names[c], how, c)


def _zeroed(name: str, how: ZeroedWork, c: Var) -> list[ast.stmt]:
    return list(how.made) + [_assign(name, ast.Name(how.array)),
                             _method(name, "fill", ast.Constant(0.0))]


def _in_returned(name: str, how: InReturned, c: Var) -> list[ast.stmt]:
    return [_assign(name, how.call)] + \
        ([_method(name, "fill", ast.Constant(0.0))] if how.fill else [])


# The writer of each way a carried value starts (plan.py), by its type
_STARTS = {
    InStack: lambda name, how, c: [_assign(name, ast.Name(how.array))],
    ZeroList: lambda name, how, c: [_assign(name, ast.BinOp(
        ast.List([ast.Constant(how.fill)]), ast.Mult(), ast.Constant(how.size)))],
    InReturned: _in_returned,
    ZeroedWork: _zeroed,
    NewArray: lambda name, how, c: [_assign(name, _new_array(how.made, c))],
    OwnCopy: lambda name, how, c: [_assign(name, ast.Call(ast.Attribute(how.operand, "copy"),
                                                          [], []))],
    Operand: lambda name, how, c: [_assign(name, how.operand)],
}


def _first_rows(plan: RegionPlan) -> list[ast.stmt]:
    """The first row of each stack saved before the loop (``H[0] = h``) and every step's
    input product made at once (``products_before``)."""
    names, loop = plan.body.names, plan.stmt.param("loop")
    nodes: list[ast.stmt] = [
        ast.Assign([ast.Subscript(ast.Name(names[stack]), ast.Constant(row))],
                   ast.Name(names[c]), lineno=0) for stack, c, row, _ in plan.first]
    for made, before in plan.before:
        nodes += [Comment(comment(products_note(made, loop, plan.body))), before]
    return nodes


def _step_loop(sub: Emitter, plan: RegionPlan, blocks: list) -> ast.For:
    """The ``for`` loop and the step: the body's blocks (a statement written another way,
    ``plan.running``, is that one statement instead; one ``plan.dropped`` left out), then the
    carried values rebound and the work arrays taken in turn swapped."""
    loop, names = plan.stmt.param("loop"), sub.names
    bounds = [loop.length - 1, -1, -1] if loop.reverse else [loop.length]
    steps = ast.Call(ast.Name("range"), [ast.Constant(n) for n in bounds], [])
    inner: list[ast.stmt] = []
    previous, shown = None, set()
    for block in blocks:
        kept = [([plan.running[id(source)]] if id(source) in plan.running else nodes, source)
                for source, nodes in block.parts() if id(source) not in plan.dropped]
        if not kept:
            continue
        block.stmts = [node for nodes, _ in kept for node in nodes]
        block.sources, block.sizes = [s for _, s in kept], [len(nodes) for nodes, _ in kept]
        inner += block_nodes(block, sub.tape.name, sub.rules_of, previous, shown)
        previous = block
    if plan.moved:
        inner.append(_rebind([ast.Name(a) for a, _ in plan.moved], [b for _, b in plan.moved]))
    for new, spare in plan.turning:     # the next step's result goes where the last one's was
        inner.append(_rebind([ast.Name(new), ast.Name(spare)], [ast.Name(spare), ast.Name(new)]))
    return ast.For(ast.Name(identifier(names[loop.index])), steps, inner or [ast.Pass()], [])


def _assign(name: str, value: ast.expr) -> ast.stmt:
    return ast.Assign([ast.Name(name)], value, lineno=0)


def _rebind(targets: list[ast.expr], values: list[ast.expr]) -> ast.stmt:
    """``h = h_new``, or ``h, dh = h_new, dh_new`` (render.unparse writes both sides bare)."""
    if len(targets) == 1:
        return ast.Assign(targets, values[0], lineno=0)
    return ast.Assign([ast.Tuple(targets)], ast.Tuple(values), lineno=0)


def _method(name: str, method: str, *args: ast.expr) -> ast.stmt:
    return ast.Expr(ast.Call(ast.Attribute(ast.Name(name), method), list(args), []))


def _xp(name: str) -> ast.expr:
    return ast.Attribute(ast.Name("xp"), name)


def _new_array(made: str, v: Var) -> ast.expr:
    """``xp.zeros((3, 4))`` (``made``: ``zeros`` or ``empty``) for ``v``, its dtype said where
    it is not float64."""
    dtype = [] if v.aval.dtype == "float64" else \
        [ast.keyword("dtype", _xp(v.aval.dtype.name))]
    return ast.Call(_xp(made), [ast.Constant(tuple(v.aval.shape))], dtype)
