"""A branch statement (ir/branch.py) written as a Python ``if``::

    # piecewise.py:4  if np.sum(x) > 0:
    if x.sum() > 0:
        # piecewise.py:5  y = x ** 2
        y = x ** 2
    else:
        # piecewise.py:7  y = -x
        y = -x

Each arm is written by an Emitter of its own, in the plain form (inlining, names from the
source, comments per source line, the rules of a backward arm): an arm is a few statements
that run once, so the buffered form's work arrays would save little there; the enclosing
code treats the branch's results as new arrays, so an arm's result that is a value it read
(or a view of one) is copied (``else: y = x.copy()``). The arm's inputs
have the enclosing code's names (an operand written inline there is bound to a name first);
its results are bound to the names of the branch's results, made under those names where the
arm reads no value of that name after (``y = x ** 2``), else assigned at its end. emit.py finds
this writer in ``CONSTRUCTS``, by the type of the statement's ``Branch``.
"""
from __future__ import annotations

import ast

from ..ir.analysis import Analysis, memory_bases, read_only
from ..ir.branch import branch_of
from ..ir.names import arm_namer
from ..ir.rewrite import substitute
from ..ir.tape import Lit, Stmt, Tape, Var
from .emit import Emitter



def branch_statements(em: Emitter, stmt: Stmt) -> list[ast.stmt]:
    """The branch ``stmt`` as an ``if`` with its two arms (the module docstring)."""
    branch = branch_of(stmt)
    nodes: list[ast.stmt] = []
    operands: dict[Var, str] = {}
    for atom in stmt.args[1:]:
        if not isinstance(atom, Var) or atom in operands:
            continue
        if atom in em.inlined:
            operands[atom] = em.names.fresh(atom.hint or "k")
            nodes.append(ast.Assign([ast.Name(operands[atom])], em.atom(atom), lineno=0))
        else:
            operands[atom] = em.names[atom]
    outs = [em.names[o] for o in stmt.outs]
    arms = [_arm(em, stmt, arm, operands, outs) for arm in branch.arms]
    nodes.append(ast.If(em.atom(stmt.args[0]), arms[0] or [ast.Pass()], arms[1]))
    return nodes


def _result(em: Emitter, sub: Emitter, arm: Tape, r, out: Var, again: bool = False
            ) -> ast.expr:
    """An arm's result as the branch's result ``out`` takes it: an array the arm read (or a
    view of one), or one given before (``again``), copied, ``x.copy()`` (a branch's results are arrays of its own: the enclosing
    code may write into them; a number is not written in place, and scalar mode may hold it
    as a Python float); a number the passes folded it to, or a Python number (``d * 1.0``), of
    ``out``'s dtype where that is numpy's (``xp.float64(1.0)``, as the other arm gives it: a
    module traced again for a higher order finds one type in both arms)."""
    value = sub.atom(r)
    if isinstance(r, Var):
        if r.aval.ndim and (again or _borrowed(r, arm, sub.facts)):
            return ast.Call(ast.Attribute(value, "copy"), [], [])
        if not _retyped(r, out):
            return value
    if out.aval.weak or (isinstance(r, Lit) and type(r.value) is out.aval.dtype.type):
        return value        # (a numpy number of its dtype is written so already)
    em.modules.add("xp")
    if out.aval.ndim == 0:
        return ast.Call(ast.Attribute(ast.Name("xp"), out.aval.dtype.name), [value], [])
    return ast.Call(ast.Attribute(ast.Name("xp"), "full"),
                    [ast.Constant(out.aval.shape), value,
                     ast.Attribute(ast.Name("xp"), out.aval.dtype.name)], [])


def _arm(em: Emitter, stmt: Stmt, arm: Tape, operands: dict[Var, str], outs: list[str]
         ) -> list[ast.stmt]:
    """One arm's statements, ending with its results bound to ``outs``."""
    first: dict[Var, Var] = {}
    twice: dict[Var, Var] = {}          # an operand given twice: its second input reads the first
    for i, a in zip(arm.inputs, stmt.args[1:]):
        if isinstance(a, Var):
            twice.update({i.var: first[a]} if a in first else {})
            first.setdefault(a, i.var)
    # an operand that is a literal (a stage after the arms' passes made it one) is read as
    # that literal in the arm
    twice.update({i.var: a for i, a in zip(arm.inputs, stmt.args[1:]) if isinstance(a, Lit)})
    arm = substitute(arm, twice) if twice else arm
    ins = {operands[a] for a in stmt.args[1:] if isinstance(a, Var)}
    # results made under the branch's names: not one an in-place update makes (it has the
    # name of the array it updates), nor one named like a value the arm reads
    made = {o for s in arm.stmts if not s.prim.inplace for o in s.outs}
    facts = Analysis(arm)
    fixed: dict[Var, str] = {}
    for r, name, out in zip(arm.result, outs, stmt.outs):
        if isinstance(r, Var) and r in made and r not in fixed and name not in ins \
                and not (r.aval.ndim and _borrowed(r, arm, facts)) and not _retyped(r, out) \
                and name not in fixed.values():
            fixed[r] = name
    names = arm_namer(em.names, stmt, arm, fixed, operands)
    # names new to the whole function: a name one arm binds is read nowhere else, so the
    # module traced again (a gradient of it) finds each such name in one arm only
    nodes, sub = em.nested(arm, names)
    pending = [(name, r) for r, name in zip(arm.result, outs)
               if not (isinstance(r, Var) and fixed.get(r) == name)]
    if pending:
        targets = [ast.Name(name) for name, _ in pending]
        # an array given as two results is given twice: each result an array of its own
        again = [k for k, r in enumerate(arm.result)
                 if isinstance(r, Var) and r.aval.ndim and r in arm.result[:k]]
        values = [_result(em, sub, arm, r, out, k in again) for (_, r), out, k in
                  zip(pending, [o for r, o, n in zip(arm.result, stmt.outs, outs)
                                if not (isinstance(r, Var) and fixed.get(r) == n)],
                      [k for k, (r, n) in enumerate(zip(arm.result, outs))
                       if not (isinstance(r, Var) and fixed.get(r) == n)])]
        nodes.append(ast.Assign([targets[0] if len(targets) == 1 else ast.Tuple(targets)],
                                values[0] if len(values) == 1 else ast.Tuple(values),
                                lineno=0))
    return nodes


def _retyped(r: Var, out: Var) -> bool:
    """Whether the arm's result ``r`` is a Python number where the branch gives a numpy one."""
    return r.aval.ndim == 0 and r.aval.weak and not out.aval.weak


def _borrowed(r: Var, arm: Tape, facts: Analysis) -> bool:
    """Whether the arm's result ``r`` is memory the arm does not own: a value it read (or a
    view of one), a read-only broadcast or a view of a constant."""
    inputs = {i.var for i in arm.inputs}
    while r in facts.producer and r not in inputs:
        made = facts.producer[r]
        if read_only(made):
            return True
        bases = memory_bases(made)
        if len(bases) != 1:
            break
        r = bases[0]
    return r in inputs or facts.root(r) in inputs


