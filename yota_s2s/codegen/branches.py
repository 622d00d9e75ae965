"""A branch statement (ir/branch.py) written as a Python ``if``::

    # piecewise.py:4  if np.sum(x) > 0:
    if x.sum() > 0:
        # piecewise.py:5  y = x ** 2
        y = x ** 2
    else:
        # piecewise.py:7  y = -x
        y = -x

Each arm is written by an Emitter of its own (inlining, names from the source, comments per
source line, the rules of a backward arm). Where the enclosing code's memory is planned (the
buffered form), the arm's is too, and each array result is made in (or copied into) the array
the enclosing plan gives it, whichever arm runs (codegen/branch_plan.py). Elsewhere the arm is
written in the plain form: the analysis of the
enclosing code treats the branch's results as new arrays, so an arm's result that is a value
it read (or a view of one) is copied (``else: y = x.copy()``) where that sharing could be seen
(``_shared_unseen``): the result is returned, or something writes its memory, or writes the
memory it shares while it is read; else it is the value itself (``else: dw_1 = dh``). The arm's inputs
have the enclosing code's names (an operand written inline there is bound to a name first);
its results are bound to the names of the branch's results, made under those names where the
arm reads no value of that name after (``y = x ** 2``), else assigned at its end. emit.py finds
this writer in ``CONSTRUCTS``, by the type of the statement's ``Branch``.
"""
from __future__ import annotations

import ast
import copy

from ..ir.analysis import Analysis, memory_bases, read_only
from ..ir.branch import branch_of
from ..ir.names import arm_namer
from ..ir.rewrite import substitute
from ..ir.tape import Lit, Stmt, Tape, Var
from ..ir.whiles import while_of
from .branch_plan import nested_places, copied_in, made_in, planned, result_arrays
from .emit import Emitter

# the statements that may take an operand's array as their own and update it in place (a loop,
# an unwind's accumulators; not a branch: an arm's inputs are not its own, passes/regions.py):
# an arm's result that shares memory is copied before it reaches one
CONSTRUCT_EMITS = (("loop",), ("while",), ("unwind",))



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
    lines, arrays = result_arrays(em, stmt) if planned(em) else ([], [None] * len(outs))
    arms = [_arm(em, stmt, arm, operands, outs, arrays, lines) for arm in branch.arms]
    nodes += lines
    nodes.append(ast.If(em.atom(stmt.args[0]), arms[0] or [ast.Pass()], arms[1]))
    return nodes


def _result(em: Emitter, sub: Emitter, stmt: Stmt, arm: Tape, r, out: Var,
            earlier: list[Var]) -> ast.expr:
    """An arm's result as the branch's result ``out`` takes it: an array the arm read (or a
    view of one), or one given before as the results ``earlier``, copied, ``x.copy()``, where
    the sharing could be seen (``_shared_unseen``: the enclosing code's analysis takes a
    branch's results for arrays of their own; a number is not written in place, and scalar
    mode may hold it as a Python float); a number the passes folded it to, or a Python number
    (``d * 1.0``), of ``out``'s dtype where that is numpy's (``xp.float64(1.0)``, as the other
    arm gives it: a module traced again for a higher order finds one type in both arms)."""
    value = sub.atom(r)
    if isinstance(r, Var):
        shares = _borrowed_from(r, arm, sub.facts) if r.aval.ndim else None
        if shares is not None or earlier and r.aval.ndim:
            bases = [a for i, a in zip(arm.inputs, stmt.args[1:])
                     if i.var in (shares or ()) and isinstance(a, Var)] + earlier
            if not _shared_unseen(em, out, bases):
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


def _arm(em: Emitter, stmt: Stmt, arm: Tape, operands: dict[Var, str], outs: list[str],
         arrays: list, lines: list[ast.stmt]) -> list[ast.stmt]:
    """One arm's statements, ending with its results bound to ``outs``; in planned memory
    (``arrays``, branch_plan.py) its intermediates planned, its results made in (or copied
    into) those arrays, the lines that place its work arrays added to ``lines``."""
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
    # a result made in its array: one the arm gives once, sharing memory with no other (a
    # value given twice is copied into the second's array: the enclosing code may write over
    # either)
    roots = [facts.root(r) if isinstance(r, Var) else None for r in arm.result]
    # (where the branch reads the array, a stack's row, the arm makes it there only after
    # reading it: buffers._homes)
    viewing = [_viewing(em, out, arm, stmt) for out in stmt.outs]
    homes = {r: (array, reads) for r, array, root, reads in zip(arm.result, arrays, roots, viewing)
             if isinstance(r, Var) and array is not None and roots.count(root) == 1}
    nodes, sub = em.nested(arm, names, within=(stmt, arm), homes=homes,
                           place=nested_places(em, stmt, lines) if planned(em) else None)
    # a result bound under its name where it is made (not one that the plan then names after
    # the value of its group it is written over, as ``t7 -= t8`` is)
    bound = [isinstance(r, Var) and fixed.get(r) == name and sub.names[r] == name
             for r, name in zip(arm.result, outs)]
    for r, name, array, out in zip(arm.result, outs, arrays, stmt.outs):
        if array is not None and _passed_on(em, stmt, arm, r, out, array):
            em.passed.add(array.id)
            nodes.append(ast.Assign([ast.Name(name)], sub.atom(r), lineno=0))
        elif array is not None and (_read_unseen(em, stmt, arm, r, out, array)
                                    or _in_array(em, stmt, arm, r, out)):
            nodes.append(ast.Assign([ast.Name(name)], sub.atom(r), lineno=0))
        elif array is not None and not made_in(sub, r, array) and _unbound(em, out):
            nodes.append(ast.Assign([_stored(array)], sub.atom(r), lineno=0))
        elif array is not None and not made_in(sub, r, array):
            nodes += copied_in(em, name, array, sub.atom(r))
    # an array given as two results is given twice: each result an array of its own where
    # that could be seen
    def earlier(k: int) -> list[Var]:
        r = arm.result[k]
        return [o for q, o in zip(arm.result[:k], stmt.outs)
                if isinstance(r, Var) and r.aval.ndim and q is r]
    pending = [k for k, (r, array) in enumerate(zip(arm.result, arrays)) if not bound[k]
               and (array is None or made_in(sub, r, array)) and not _unbound(em, stmt.outs[k])]
    if pending:
        targets = [ast.Name(outs[k]) for k in pending]
        values = [sub.atom(arm.result[k]) if arrays[k] is not None else
                  _result(em, sub, stmt, arm, arm.result[k], stmt.outs[k], earlier(k))
                  for k in pending]
        nodes.append(ast.Assign([targets[0] if len(targets) == 1 else ast.Tuple(targets)],
                                values[0] if len(values) == 1 else ast.Tuple(values),
                                lineno=0))
    return nodes


def _unbound(em: Emitter, out: Var) -> bool:
    """Whether the branch's result ``out`` is read under no name: made in a stack's row whose
    save the loop leaves out (buffers.py ``Group.unread``, region_plan.py)."""
    group = em.memory.group.get(out) if em.memory is not None else None
    return group is not None and group.kind == "row" and group.unread


def _stored(array: ast.expr) -> ast.expr:
    """``array`` (a row: ``H[t6]``) as an assignment's target."""
    target = copy.deepcopy(array)
    target.ctx = ast.Store()
    return target


def _viewing(em: Emitter, out: Var, arm: Tape, stmt: Stmt) -> frozenset:
    """The arm's inputs that view the row the plan makes the branch's result ``out`` in
    (buffers.py ``Group.reads``)."""
    group = em.memory.group.get(out) if em.memory is not None else None
    reads = group.reads if group is not None and group.kind == "row" else ()
    return frozenset(i.var for i, a in zip(arm.inputs, stmt.args[1:])
                     if any(a is v for v in reads))


def _passed_on(em: Emitter, stmt: Stmt, arm: Tape, r, out: Var, array: ast.expr) -> bool:
    """Whether the arm gives on, as the trip's new value ``out``, the carried value it read
    (``else: y_1 = y``), where the trip makes its new value in the carried array's spare
    (``array``, while_plan.spare_slots) and nothing writes the carried array after the branch:
    bound, not copied into the spare; the trip's end swaps the two only where the new value is
    in the spare (``trip_end``)."""
    if em.within is None or while_of(em.within[0]) is None or not isinstance(array, ast.Name) \
            or not isinstance(r, Var):
        return False
    own, inputs = em.within[1], [i.var for i in arm.inputs]
    a = stmt.args[1 + inputs.index(r)] if r in inputs else None
    if a not in own or em.tape.result.count(out) != 1 \
            or em.tape.result.index(out) != own.index(a):
        return False
    if (em.names[a], array.id) not in em.function().turned:
        return False
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    return not _written(em, [a], at)


def _read_unseen(em: Emitter, stmt: Stmt, arm: Tape, r, out: Var, array: ast.expr) -> bool:
    """Whether the arm's result ``r``, an array the arm read as it came, is the branch's result
    ``out`` as it is, not copied into ``out``'s work array (``array``): where the sharing could
    not be seen (``_shared_unseen``: nothing writes either array while ``out`` is read, and
    ``out`` is not returned), as the plain form gives it (``else: dw = dh``, then ``H[t6] =
    dw``)."""
    if not isinstance(array, ast.Name) or not isinstance(r, Var) or not r.aval.ndim:
        return False
    group = em.memory.group.get(out)
    inputs = [i.var for i in arm.inputs]
    if group is None or group.kind != "slot" or r not in inputs or r.aval != out.aval \
            or out in em.facts.returned:
        return False
    a = stmt.args[1 + inputs.index(r)]
    return isinstance(a, Var) and _shared_unseen(em, out, [a])


def _in_array(em: Emitter, stmt: Stmt, arm: Tape, r, out: Var) -> bool:
    """Whether the arm's result ``r``, an operand of the branch it gives on as it came, is in
    the work array of the branch's result ``out`` already (buffers._given_on)."""
    inputs = [i.var for i in arm.inputs]
    if not isinstance(r, Var) or r not in inputs:
        return False
    a = stmt.args[1 + inputs.index(r)]
    mine, given = em.memory.group.get(a), em.memory.group.get(out)
    return mine is not None and given is not None and mine.kind == given.kind == "slot" \
        and mine.slot == given.slot


def _retyped(r: Var, out: Var) -> bool:
    """Whether the arm's result ``r`` is a Python number where the branch gives a numpy one."""
    return r.aval.ndim == 0 and r.aval.weak and not out.aval.weak


def _borrowed(r: Var, arm: Tape, facts: Analysis) -> bool:
    """Whether the arm's result ``r`` is memory the arm does not own: a value it read (or a
    view of one), a read-only broadcast or a view of a constant."""
    return _borrowed_from(r, arm, facts) is not None


def _borrowed_from(r: Var, arm: Tape, facts: Analysis) -> list[Var] | None:
    """The arm's inputs whose memory its result ``r`` may share (empty: a read-only
    broadcast or a view of a constant); None where ``r`` is memory of the arm's own."""
    inputs = {i.var for i in arm.inputs}
    while r in facts.producer and r not in inputs:
        made = facts.producer[r]
        if read_only(made):
            return []
        bases = memory_bases(made)
        if len(bases) != 1:
            break
        r = bases[0]
    shared = [m for m in facts.members.get(facts.root(r), [r]) if m in inputs]
    return shared if r in inputs or shared else None


def _shared_unseen(em: Emitter, out: Var, bases: list[Var]) -> bool:
    """Whether the branch's result ``out`` (a value of ``em``'s tape) may be an array it shares
    with ``bases`` (values of that tape from before the branch) with no one seeing it: neither
    it nor anything of its memory is returned (or, from an arm, returned by the enclosing
    branch, asked there again) or written, in place, by the memory plan or by a region or
    while taking it as its own, and nothing writes the memory of ``bases`` after the branch
    (not only while ``out`` is read: a later branch may give ``out`` on as its own result)."""
    facts = em.facts
    at = facts.defined.get(out)
    if at is None:
        return False
    if _written(em, [out] + bases, at):
        return False
    if out not in facts.returned:
        return True
    if em.within is None or em.enclosing is None or out not in em.tape.result:
        return False
    stmt, arm = em.within
    if while_of(stmt) is not None:
        return _carried_unseen(em, out, bases, arm)
    outer_out = stmt.outs[em.tape.result.index(out)]
    inputs = [i.var for i in arm.inputs]
    outer = []
    for b in bases:
        if b in inputs:
            a = stmt.args[1 + inputs.index(b)]
            outer += [a] if isinstance(a, Var) else []
        elif b in facts.returned:
            return False            # (two of the arm's results: their sharing is seen there)
    return _shared_unseen(em.enclosing, outer_out, outer)


def _carried_unseen(em: Emitter, out: Var, bases: list[Var], own: list[Var]) -> bool:
    """Whether a while body's (or an unwind step's) result ``out`` may share memory with
    ``bases`` unseen, after the trip too: the tape writes nothing in place (a later trip would
    write it there) and holds none of them in a work array (a later trip takes it again), the
    result is one result alone, and ``bases`` are the trip's own: values it made or the loop's
    own carried inputs ``own`` (``else: y_1 = y``, which the next trip takes as its own, as
    codegen/whiles.py gives a carried input on), not an invariant or a saved row, nor another
    carried result (a residual may be one: its stack copies it, or holds it unwritten)."""
    facts, loop = em.facts, while_of(em.within[0])
    carried = getattr(loop, "ncarry", len(em.tape.result))    # (a body's residuals after)
    if facts.updates or em.tape.result.count(out) != 1:
        return False
    inputs = {i.var for i in em.tape.inputs} - set(own)
    for v in [out, *bases]:
        members = facts.members.get(facts.root(v), [v])
        if any(m in inputs or em.memory.group.get(m) is not None for m in members):
            return False
        if v is not out and any(r is m for r in em.tape.result[:carried] for m in members):
            return False
    return all(m is out or m not in em.tape.result
               for m in facts.members.get(facts.root(out), [out]))


def _written(em: Emitter, values: list[Var], start: int) -> bool:
    """Whether the memory of ``values`` may be written by a statement of ``em``'s tape after
    ``start``: an in-place update, a value the memory plan writes there (a later member of
    its group, a group taking its work array after it, a later loop's step, which may take
    that work array), a region or while reading it (``CONSTRUCT_EMITS``)."""
    facts, plan = em.facts, em.memory
    members = {m for v in values for m in facts.members.get(facts.root(v), [v])}
    roots = {facts.root(v) for v in values}
    if any(start < p for r in roots for p in facts.updates.get(r, ())):
        return True
    for m in members:
        if any(start < p and facts.tape.stmts[p].prim.emit[:1] in CONSTRUCT_EMITS
               for p in facts.readers.get(m, ())):
            return True
        group = plan.group.get(m)
        if group is None:
            continue
        if group.kind not in ("slot", "fresh", "carried", "result", "row") or group.turn \
                or group.head is not None or group.slot in plan.lent:
            return True
        living = plan.slots[group.slot][2] if group.kind == "slot" and group.slot >= 0 \
            else group.members
        if any(start < facts.defined.get(x, -1) for x in living):
            return True
        if group.kind == "slot" and any(s.prim.emit[:1] in CONSTRUCT_EMITS
                                        for s in facts.tape.stmts[start + 1:]):
            return True     # (a later loop's step may take a work array free by then)
    return False


