"""A loop region (ir/region.py) written as a ``for`` loop with its body once::

    # rnn.py:5  for t in range(xs.shape[0]):   (a loop region, 1000 steps)
    h = h0
    loss = 0.0
    H = xp.zeros((1000, 64))                 # a stack the backward loop reads, allocated once
    for t in range(1000):
        # rnn.py:6  h = np.tanh(W @ h + U @ xs[t] + b)
        h = xp.tanh(W @ h + U @ xs[t] + b)
        H[t] = h
        ...

The body is written by an Emitter of its own (the plain form: inlining, names from the source,
comments per source line) with the names the naming pass gave it (ir/names.py: the invariants
keep the enclosing function's names, the others are new to it). A carried value keeps one
name through the step where the body allows it (its old value is not read after the new one
is made), else the step ends by rebinding it.
"""
from __future__ import annotations

import ast
import operator

from ..ir.names import dying_inits, name_tape, same_names
from ..ir.region import EMPTY, loop_of
from ..ir.tape import Lit, Stmt, Var
from ..text import identifier


class Verbatim(ast.stmt):
    """Lines of code written as they are (a loop with its comments); ``unparse`` knows it."""

    _fields = ()

    def __init__(self, lines: list[str]):
        super().__init__()
        self.lines = lines


def loop_statements(em, stmt: Stmt) -> list[ast.stmt]:
    from .emit import Emitter, unparse
    from .writer import INDENT, _block_lines
    loop = loop_of(stmt)
    body = loop.body
    operands = dict(zip(loop.operand_vars(), stmt.args))
    keep: dict[Var, str] = {}          # invariants named by the enclosing function
    for k in loop.invariants:
        atom = operands[k]
        if isinstance(atom, Var) and atom in em.names and atom not in em.inlined:
            keep[k] = em.names[atom]
    inner = body_names(em, stmt, keep)
    params = tuple(inner.names[inp.var] for inp in body.inputs)
    taken = set(em.names.taken) - inner.given()
    named = body.copy(params=params, name=em.tape.name)
    named.namer = inner
    sub = Emitter(named, taken=taken, calls=em.calls, fast=False, roots=em.roots)
    names = sub.names
    for k, name in keep.items():
        if names[k] != name:
            raise AssertionError(f"loop invariant {name} renamed {names[k]}")
    same_names(sub.names, loop, sub.facts)
    em.modules |= sub.modules
    lines: list[str] = []
    for c, fresh in zip(loop.carried, loop.fresh):
        if fresh:
            made = "empty" if fresh == EMPTY else "zeros"
            lines.append(f"{names[c]} = xp.{made}({_shape(c)}{_dtype(c)})")
            em.modules.add("xp")
        elif c in body.owned:       # updated in place by the body: the loop's own copy
            lines.append(f"{names[c]} = {_text(em, operands[c], unparse)}.copy()")
        elif names[c] != _text(em, operands[c], unparse):
            lines.append(f"{names[c]} = {_text(em, operands[c], unparse)}")
    for k in loop.invariants:
        if k not in keep:
            lines.append(f"{names[k]} = {_text(em, operands[k], unparse)}")
    steps = f"range({loop.length - 1}, -1, -1)" if loop.reverse else f"range({loop.length})"
    lines.append(f"for {identifier(names[loop.index])} in {steps}:")
    inner: list[str] = []
    running = _running_sums(sub, loop)
    previous, shown = None, set()
    for block in sub.blocks():
        block.stmts = [running.get(id(source), node)
                       for node, source in zip(block.stmts, block.sources)]
        inner += _block_lines(block, sub.tape, sub, previous, shown)
        previous = block
    ins = [names[c] for c in loop.carried]
    outs = [_text(sub, o, unparse) for o in body.result]
    moved = [(a, b) for a, b in zip(ins, outs) if a != b]
    if moved:
        inner.append(f"{', '.join(a for a, _ in moved)} = {', '.join(b for _, b in moved)}")
    lines += [INDENT + line for line in inner or ["pass"]]
    after = [(em.names[o], names[c]) for o, c in zip(stmt.outs, loop.carried)
             if o in em.names and em.names[o] != names[c]]
    for target, value in after:
        lines.append(f"{target} = {value}")
    return [Verbatim(lines)]


def body_names(em, stmt: Stmt, keep: dict[Var, str]):
    """The body's names from the naming pass (ir/names.py ``Namer.bodies``), its invariants
    named as the enclosing code names them (``keep``), and any other name of the body that the
    enclosing code gives a value live across the loop made fresh."""
    loop = loop_of(stmt)
    inner = em.names.bodies.get(loop)
    inner = inner.copy() if inner is not None else \
        name_tape(loop.body, taken=set(em.names.taken))
    inner.names.update(keep)
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    facts = em.facts
    live = {em.names.names[v] for v in facts.defined
            if v in em.names.names and v not in em.inlined
            and facts.defined[v] < at <= facts.last.get(v, -1)}
    inner.taken |= live | set(em.names.taken)
    shared = set(keep.values()) | {em.names.names.get(o) for o in stmt.outs} | \
        {name for c, name in dying_inits(stmt, facts, at, em.names.names).items()
         if inner.names.get(c) == name}
    for v, name in list(inner.names.items()):
        if name in live and name not in shared:
            inner.names[v] = inner.fresh(name)
    return inner


def _running_sums(sub, loop) -> dict[int, ast.stmt]:
    """``dW += t1.T @ t2``: an accumulator the loop owns (it made it: nothing else sees its
    memory) whose new value is its old one plus a term of its own shape and dtype, the old one
    not read again in the step, is added to in place (as a handwritten BPTT does)."""
    facts, names = sub.facts, sub.names.names
    done: dict[int, ast.stmt] = {}
    body = loop.body
    for c, o in zip(loop.carried, body.result):
        if c not in body.owned or not isinstance(o, Var) or o not in facts.producer:
            continue
        stmt = facts.producer[o]
        at = facts.defined[o]
        if stmt.prim.fn is not operator.add or stmt.args[0] is not c or stmt.args[1] is c \
                or (o.aval.shape, o.aval.dtype) != (c.aval.shape, c.aval.dtype) \
                or facts.last_memory.get(c, -1) > at or names.get(o) != names.get(c) \
                or o in sub.inlined:
            continue
        term = stmt.args[1]
        if isinstance(term, Var) and term.aval.shape != c.aval.shape:
            continue
        done[id(stmt)] = ast.AugAssign(ast.Name(names[c], ast.Store()), ast.Add(),
                                       sub.atom(term))
    return done


def _text(em, atom, unparse) -> str:
    if isinstance(atom, Lit):
        return unparse(em.literal(atom.value))
    return unparse(em.atom(atom))


def _shape(v: Var) -> str:
    return repr(tuple(v.aval.shape))


def _dtype(v: Var) -> str:
    return "" if v.aval.dtype == "float64" else f", dtype=xp.{v.aval.dtype.name}"
