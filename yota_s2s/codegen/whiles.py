"""A while statement (ir/whiles.py) written as a Python ``while``, its unwind as a ``for`` over
the recorded trips in reverse::

    # newton.py:6  while np.max(np.abs(x * x - a)) > 1e-10:
    x = a.copy()
    trips = 0
    X = xp.empty((16, 3))
    V = xp.empty((16, 3))
    while xp.abs(x * x - a).max() > 1e-10:
        if trips == len(X):
            X = xp.concatenate((X, xp.empty_like(X)))
            V = xp.concatenate((V, xp.empty_like(V)))
        X[trips] = x                # a carried value, as the trip starts
        # newton.py:7  x = 0.5 * (x + a / x)
        t6 = a / x
        x = 0.5 * (x + t6)
        V[trips] = t6               # a residual, as the trip ends
        trips += 1
    ...
    for t in reversed(range(trips)):
        x_1 = X[t]
        v = V[t]
        # grad of newton.py:7  x = 0.5 * (x + a / x)
        ...

The condition, the body and the backward step are each written by an Emitter of their own in
the plain form, as a branch's arms are (codegen/branches.py): the carried values take the
names of the statement's results (an initial array is copied: the loop's results are arrays
of its own, as the enclosing code takes them), the invariants those of its operands; a
condition of one statement is written in the ``while`` line, a longer one at the top of a
``while True`` with a ``break``. A stack starts with room for ``CAPACITY`` trips and doubles
when a trip finds it full (above); in the plain form a stack whose rows nobody writes in place
after their push is a list of them, ``X.append(x)`` (``_listed``); in the buffered form the
stacks are the thread's, made on its first call and kept grown (``_held_stacks``, workspace.py
``STACKS``), so a steady-state call makes none; there a stack of arrays is a list of its rows
(``_row_lists``: ``X[trips][...] = x``), a stack of numbers the plain form lists is a list
made per call, and one of float64 numbers only ufuncs read a held list of 0-d rows
(while_numbers.py). With ``max_steps`` (write_module) a stack holds that many
rows at most, and a trip past it raises ``StepLimitError`` naming the loop. emit.py finds
these writers in ``CONSTRUCTS``.
"""
from __future__ import annotations

import ast

import numpy as np

from ..ir.analysis import Analysis, memory_bases, read_only
from ..ir.names import tape_namer
from ..ir.rewrite import substitute
from ..ir.tape import Lit, Stmt, Tape, Var
from ..ir.whiles import CAPACITY, While, while_atoms, while_of
from .buffers import in_branch_array
from .branch_plan import nested_places, planned as memory_planned, result_arrays
from .emit import Emitter
from .render import Comment
from .while_numbers import (array_operand, number_rows, numbers_listed, only_tested, row_fill,
                            row_inputs, rows_kept)
from .while_plan import (carried_names, copied_back, spare_slots, started, trip_end, trip_plan,
                         updated_rows)


def _name(text: str, store: bool = False) -> ast.Name:
    return ast.Name(text, ast.Store() if store else ast.Load())


def _assign(target: str | list[str], value: ast.expr | list[ast.expr]) -> ast.Assign:
    if isinstance(target, list):
        target = ast.Tuple([_name(t, True) for t in target], ast.Store()) if len(target) > 1 \
            else _name(target[0], True)
        value = ast.Tuple(value, ast.Load()) if len(value) > 1 else value[0]
    else:
        target = _name(target, True)
    return ast.Assign([target], value, lineno=0)


def _call(fn: str, args: list, keywords: list | None = None) -> ast.Call:
    head, *rest = fn.split(".")
    func: ast.expr = _name(head)
    for part in rest:
        func = ast.Attribute(func, part, ast.Load())
    return ast.Call(func, args, keywords or [])


def _copied(em: Emitter, stmt: Stmt, atom, out: Var) -> ast.expr:
    """An initial value as the loop's own (the loop's result ``out``): an array copied, unless
    it is a new array this statement alone reads (``np.zeros``, ``np.cos(s)``: sharing no
    memory, ir/analysis.py; not in a work array), or nothing could see the sharing
    (``_unwritten``)."""
    value = em.atom(atom)
    if isinstance(atom, Var) and atom.aval.ndim:
        if _unwritten(em, stmt, atom, out):
            return value
        facts, made = em.facts, em.facts.producer.get(atom)
        if made is not None and (made.prim.creates or not memory_bases(made)
                                 and not read_only(made)) and atom not in em.inlined \
                and em.memory.group.get(atom) is None and facts.uses[atom] == 1 \
                and atom not in facts.returned and len(facts.members.get(atom, [atom])) == 1:
            return value
        return ast.Call(ast.Attribute(value, "copy", ast.Load()), [], [])
    if isinstance(atom, Lit) and getattr(atom.value, "ndim", 0):
        return ast.Call(ast.Attribute(value, "copy", ast.Load()), [], [])
    return value


def _unwritten(em: Emitter, stmt: Stmt, atom: Var, out: Var) -> bool:
    """Whether the loop ``stmt`` may start from the array ``atom`` itself: in the plain form,
    at the function's level, where nothing writes in place (neither the loop's tapes nor the
    function) and neither ``atom`` nor the loop's result ``out`` is returned (newton_sqrt's
    ``x = a``, the unwind's ``dx = dx_part1``: the loop makes new arrays, and its result may
    be the start itself, unwritten)."""
    if em.function().fast or em.enclosing is not None or em.facts.updates:
        return False
    if atom in em.facts.returned or out in em.facts.returned:
        return False
    return not any(Analysis(t).updates for t in while_of(stmt).tapes)


def _operands(em: Emitter, stmt: Stmt, atoms: list, taken: set[str], nodes: list
              ) -> dict[Var, str]:
    """The enclosing names of the invariant operands among ``atoms`` (one written inline, or
    named like a carried value, bound to a name of its own first)."""
    operands: dict[Var, str] = {}
    for atom in atoms:
        if not isinstance(atom, Var) or atom in operands:
            continue
        if atom in em.inlined or em.names[atom] in taken:
            operands[atom] = em.names.fresh(atom.hint or "k")
            nodes.append(_assign(operands[atom], em.atom(atom)))
        else:
            operands[atom] = em.names[atom]
    return operands


def _prepared(tape: Tape, atoms: list) -> Tape:
    """``tape`` reading a literal operand as that literal, and an operand given twice through
    its first input."""
    first: dict[Var, Var] = {}
    mapping: dict = {}
    for i, a in zip(tape.inputs, atoms):
        if isinstance(a, Lit):
            mapping[i.var] = a
        elif isinstance(a, Var):
            if a in first:
                mapping[i.var] = first[a]
            first.setdefault(a, i.var)
    return substitute(tape, mapping) if mapping else tape


def _written(em: Emitter, stmt: Stmt, tape: Tape, atoms: list, operands: dict[Var, str],
             outs: list[str], own: slice = slice(0, 0), planned: tuple | None = None,
             back: dict[int, str] | None = None, rows: dict[int, ast.expr] | None = None,
             numbers=None) -> tuple[list[ast.stmt], dict[Var, str], list[ast.expr],
                                    list[ast.stmt]]:
    """``tape``'s statements with its comments, its results bound to ``outs`` at the end (the
    last statement's made under its name where that is a result); its inputs' names; the
    results after those ``outs`` binds (a recording body's residuals), as expressions. A
    result that is an input other than the loop's ``own`` (an invariant, a saved row) or a
    view of one is copied: what the loop carries out is its own array. ``planned`` (the
    buffered form: the arrays of the carried values, the lines before the loop, while_plan.py):
    the tape's memory planned, the carried arrays updated in place, and the copies that end a
    trip (the fourth result); ``back`` gets the returned arrays a carried value is copied back
    into after the loop (while_plan.spare_slots); ``rows``: result index -> the row of its
    stack a residual may be made in (``_in_rows``), the index left there where it is not;
    ``numbers`` (planned): called with the emitter before it writes, and its ``done`` after
    (the rows of number-row stacks: ``_TripRows``, ``_StepRows``)."""
    tape = _prepared(tape, atoms)
    shared = {i.var for i in tape.inputs} - {i.var for i in tape.inputs[own]}
    fixed: dict[Var, str] = {}
    last = tape.stmts[-1] if tape.stmts else None
    if last is not None and not last.prim.inplace and not last.prim.view \
            and len(last.outs) == 1:
        r = last.outs[0]
        if tape.result.count(r) == 1 and r not in {i.var for i in tape.inputs} \
                and tape.result.index(r) < len(outs) \
                and (planned is None or not in_branch_array(r)):
            # (planned: a number only; an array may share its group's name, which would take
            # the carried value's while the trip still reads it)
            fixed[r] = outs[tape.result.index(r)]
    names = tape_namer(em.names, tape, atoms, fixed, operands)
    if planned is not None:
        _apart(names, tape, fixed)
    within = (stmt, [i.var for i in tape.inputs[own]])
    if planned is None:
        nodes, sub = em.nested(tape, names, within=within)
        arrays, ends = [None] * len(outs), []
    else:
        arrays, lines = planned
        turned: dict[int, str] = {}
        back = {} if back is None else back
        place = nested_places(em, stmt, lines, spare_slots(em, stmt, tape, own, outs, arrays,
                                                           lines, turned, back))

        def placed(sub: Emitter) -> None:
            place(sub)
            carried_names(sub, tape, own, outs, arrays)
            if numbers is not None:
                numbers(sub)
        inputs = {i.var for i in tape.inputs}
        homes = {tape.result[k]: (row, ()) for k, row in (rows or {}).items()
                 if isinstance(tape.result[k], Var) and tape.result[k] not in inputs
                 and tape.result.count(tape.result[k]) == 1}
        nodes, sub = em.nested(tape, names, within=within, place=placed, homes=homes,
                               unplanned=updated_rows(tape), **trip_plan(tape, own, arrays))
        for k in list(rows or ()):
            group = sub.memory.group.get(tape.result[k])
            if group is None or group.kind != "row" or group.row is not rows[k]:
                del rows[k]
        if numbers is not None:
            numbers.done()
        ends = trip_end(em, sub, tape, own, outs, arrays, turned)
        if ends is None:
            raise AssertionError(f"the trip of {stmt.loc} swaps carried arrays")
    pending = [(name, r) for k, (r, name) in enumerate(zip(tape.result, outs))
               if not (isinstance(r, Var) and fixed.get(r) == name)
               and not (isinstance(r, Var) and names.names.get(r) == name)
               and arrays[k] is None]
    if pending:
        nodes.append(_assign([n for n, _ in pending], [_own(sub, r, shared) for _, r in pending]))
    rest = [sub.atom(r) for r in tape.result[len(outs):]]
    return nodes, {i.var: names[i.var] for i in tape.inputs}, rest, ends


def _apart(names, tape: Tape, fixed: dict[Var, str]) -> None:
    """The values a planned trip makes named apart from its inputs (``dk`` -> ``dk_3``): the
    plain form may give a new value a carried one's name, where the carried one is read no more
    after it; planned, a value may share its name with an earlier one of its array (plan.py
    ``_shared_names``), bound while the carried value is still read."""
    inputs = {i.var for i in tape.inputs}
    held = {names.names[v] for v in inputs if v in names.names}
    moved: dict[str, str] = {}
    for v, name in list(names.names.items()):
        if v not in inputs and v not in fixed and name in held:
            if name not in moved:
                moved[name] = names.fresh(name)
            names.names[v] = moved[name]


def _own(sub: Emitter, r, shared: set[Var]) -> ast.expr:
    value = sub.atom(r)
    if isinstance(r, Var) and r.aval.ndim and sub.facts.root(r) in shared:
        return ast.Call(ast.Attribute(value, "copy", ast.Load()), [], [])
    return value


def while_statements(em: Emitter, stmt: Stmt) -> list[ast.stmt]:
    """The while statement ``stmt`` as a ``while`` (the module docstring)."""
    loop: While = while_of(stmt)
    n = loop.ncarry
    outs = [em.names[o] for o in stmt.outs[:n]]
    nodes: list[ast.stmt] = []
    operands = _operands(em, stmt, stmt.args[n:], set(outs), nodes)
    operands.update(zip(stmt.outs[:n], outs))
    lines, arrays = result_arrays(em, stmt, stmt.outs[:n]) if memory_planned(em) \
        else ([], [None] * n)
    for name, init, out, array in zip(outs, stmt.args[:n], stmt.outs, arrays):
        if array is not None:
            lines += started(em, [name], [em.atom(init)], [array])
        elif not (isinstance(init, Var) and em.names.name_of(init) == name
                  and not init.aval.ndim):
            lines.append(_assign(name, _copied(em, stmt, init, out)))
    atoms = while_atoms(stmt)
    cond_name = em.names.fresh("cond")
    plan = memory_planned(em)
    cond_nodes, _, _, _ = _written(em, stmt, loop.cond, atoms, operands, [cond_name],
                                   planned=([None], lines) if plan else None)
    back: dict[int, str] = {}
    first = n + 1 + len(loop.saved)
    made = _in_rows(em, stmt, first) if plan and loop.record else {}
    numbered = number_rows(em, stmt) if loop.record else set()
    trip = _trip_rows(em, stmt, numbered)
    body, _, residuals, ends = _written(em, stmt, loop.body, atoms, operands, outs,
                                        slice(0, n), (arrays, lines) if plan else None, back,
                                        made, trip)
    nodes += lines
    if loop.record:
        trips = em.names[stmt.outs[n]]
        nodes.append(_assign(trips, ast.Constant(0)))
        listed, rows = _listed(em, stmt), _row_lists(em, stmt)
        nodes += _stacks(em, stmt, listed, numbered)
        body = _pushes(em, stmt, outs, listed, rows, numbered) + body
        body += [_push(em.names[s], trips, r, s in listed, s in rows, s in numbered)
                 for k, (s, r) in enumerate(zip(stmt.outs[first:], residuals), start=n)
                 if k not in made and k not in trip.filled] + ends
        body.append(ast.AugAssign(_name(trips, True), ast.Add(), ast.Constant(1)))
    else:
        body += ends
    plain = [s for s in cond_nodes if not isinstance(s, Comment)]
    if len(plain) == 1 and isinstance(plain[0], ast.Assign) and \
            isinstance(plain[0].targets[0], ast.Name) and plain[0].targets[0].id == cond_name:
        nodes.append(ast.While(_as_python(plain[0].value), body, []))
    else:
        stop = ast.If(ast.UnaryOp(ast.Not(), _name(cond_name)), [ast.Break()], [])
        nodes.append(ast.While(ast.Constant(True), cond_nodes + [stop] + body, []))
    return nodes + copied_back(outs, back)


class _TripRows:
    """The 0-d rows of a recording while's number-row stacks (while_numbers.py) that its
    trip's emitter reads: called with the emitter before it writes, it gives each saved number
    its row (filled as the trip starts) and each residual number its row (filled by the first
    ufunc at the top of the trip that reads it: ``out_forms._numbers``); ``filled``, after:
    the residuals' indices (body results) so filled, which need no push at the trip's end."""

    def __init__(self, saved: dict[int, ast.expr], residual: dict[int, ast.expr]):
        self.saved, self.residual = saved, residual
        self.filled: set[int] = set()
        self.sub: Emitter | None = None

    def __call__(self, sub: Emitter) -> None:
        tape, self.sub = sub.tape, sub
        inputs = {i.var for i in tape.inputs}
        for i, row in self.saved.items():
            sub.number_rows[tape.inputs[i].var] = row
            sub.rows_filled.add(tape.inputs[i].var)
        for k, row in self.residual.items():
            v = tape.result[k]
            if isinstance(v, Var) and v not in inputs and tape.result.count(v) == 1 \
                    and v not in sub.number_rows:
                sub.number_rows[v] = row

    def done(self) -> None:
        if self.sub is not None:
            result = self.sub.tape.result
            self.filled = {k for k in self.residual if result[k] in self.sub.rows_filled}


def _trip_rows(em: Emitter, stmt: Stmt, numbered: set[Var]) -> _TripRows:
    """The rows of the number-row stacks ``numbered`` of the recording while ``stmt``, by the
    body's input (saved values) and result (residuals) index: ``H[trips]``."""
    loop: While = while_of(stmt)
    n = loop.ncarry
    trips = em.names[stmt.outs[n]] if loop.record else ""
    stacks = stmt.outs[n + 1:]
    saved, residual = {}, {}
    for j, s in enumerate(stacks):
        if s in numbered:
            row = ast.Subscript(_name(em.names[s]), _name(trips), ast.Load())
            if j < len(loop.saved):
                saved.setdefault(loop.saved[j], row)
            else:
                residual[n + j - len(loop.saved)] = row
    return _TripRows(saved, residual)


def _in_rows(em: Emitter, stmt: Stmt, first: int) -> dict[int, ast.expr]:
    """The residuals of the recording while ``stmt`` (the body's results from ``n`` on, the
    stacks ``stmt.outs[first:]``) that a trip may make in its row of their stack, a list of
    rows (``_row_lists``: ``y1 = xp.multiply(buf6, f1, out=Y1[trips])``, no push copying it
    there): body result index -> that row (the trip's plan takes it where the residual is the
    last value of a work array's group, buffers._homes)."""
    loop: While = while_of(stmt)
    rows, trips = _row_lists(em, stmt), em.names[stmt.outs[loop.ncarry]]
    return {k: ast.Subscript(_name(em.names[s]), _name(trips), ast.Load())
            for k, s in enumerate(stmt.outs[first:], start=loop.ncarry) if s in rows}


def _as_python(test: ast.expr) -> ast.expr:
    """A while's test of numbers, its ``xp.logical_and`` and ``xp.logical_not`` written
    ``and`` and ``not`` (``while t < 20 and not done:``): the test is one number, so are their
    operands, and numpy's ufunc call on two numbers costs a trip some microseconds."""
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and \
            isinstance(test.func.value, ast.Name) and test.func.value.id == "xp" and \
            not test.keywords:
        if test.func.attr == "logical_and" and len(test.args) == 2:
            return ast.BoolOp(ast.And(), [_as_python(a) for a in test.args])
        if test.func.attr == "logical_not" and len(test.args) == 1:
            return ast.UnaryOp(ast.Not(), _as_python(test.args[0]))
        if test.func.attr == "bool_" and len(test.args) == 1 and \
                isinstance(test.args[0], (ast.BoolOp, ast.UnaryOp)):
            return test.args[0]         # emit.py's Python logic, made numpy's bool
    return test


def _row(stack: ast.expr, index: str, value: Var) -> ast.expr:
    """The unwind's read of a trip's row; a Python number (a range's index, ``0.1 * t``)
    made Python's again (``V[t].item()``): numpy's would be a strong scalar, which promotes
    a float32 gradient to float64 (NEP 50). (``.item()``, not ``int()``: a module traced
    again for a higher order reads it as the number it is, not a static int.)"""
    row = ast.Subscript(stack, _name(index), ast.Load())
    if value.aval.weak and value.aval.ndim == 0:
        return ast.Call(ast.Attribute(row, "item", ast.Load()), [], [])
    return row


def _assign_to(target: ast.expr, value: ast.expr) -> ast.Assign:
    return ast.Assign([target], value, lineno=0)


def _listed(em: Emitter, stmt: Stmt) -> set[Var]:
    """The stacks of the recording while ``stmt`` written as Python lists of references (``X =
    []``, ``X.append(x)``): in the plain form, a stack of arrays (a row of an array stack is a
    copy, ~0.5 us a push and ~0.2 us a read against ~0.05 us each) whose rows nobody writes
    in place after their push: the loop's body and the step of each unwind reading it (the
    stack's only readers) update nothing in place, nor does the function the memory of the
    loop's operands or results (a row may be one of them, or a view of one). A number keeps
    its array stack, where a row read there is numpy's number, as the backward was written
    for; a float64 number that each unwind step reads only as an operand of a ufunc with a
    float64 array (``h * dy``: Python's float and numpy's give the same array) is a list of
    them too (``_array_operand``: a push ~0.1 us, a read ~0.15 us less than a row's, and no
    check for room where every stack is a list)."""
    function = em.function()
    loop: While = while_of(stmt)
    if function.fast:
        return numbers_listed(em, stmt) - number_rows(em, stmt) if em.enclosing is None \
            else set()
    if em.enclosing is not None or Analysis(loop.body).updates:
        return set()
    facts = em.facts
    roots = {facts.root(v) for v in (*stmt.args, *stmt.outs) if isinstance(v, Var)}
    if any(facts.updates.get(r) for r in roots):
        return set()
    listed = set()
    for out in stmt.outs[loop.ncarry + 1:]:
        readers = [facts.tape.stmts[p] for p in facts.readers.get(out, ())]
        if all(r.prim.emit[:1] == ("unwind",) and rows_kept(r, out) for r in readers) and \
                (out.aval.ndim > 1 or out.aval.dtype.kind == "b" and
                 all(only_tested(r, out) for r in readers) or
                 out.aval.dtype == np.float64 and not out.aval.weak and
                 all(array_operand(r, out) for r in readers)):
            listed.add(out)
    return listed


def _row_lists(em: Emitter, stmt: Stmt) -> set[Var]:
    """The stacks of arrays of the recording while ``stmt`` that are lists of their rows, held
    as the stacks are (buffered form: workspace.py ``_stacks()`` makes each stack of two or
    more dimensions so, ``list(xp.empty((16, 3)))``): a push copies into a row (``X[trips][...]
    = x``), a read takes it (``X[t]``), each a list's index where an array's row is a view made
    anew (~0.3 us a push, ~0.25 us a read less). The stacks' only readers are the unwinds (an
    unwind's row is the view it was)."""
    if not em.function().fast:
        return set()
    loop: While = while_of(stmt)
    rows = {out for out in stmt.outs[loop.ncarry + 1:] if out.aval.ndim > 1}
    for out in rows:
        readers = [em.facts.tape.stmts[p] for p in em.facts.readers.get(out, ())]
        if any(r.prim.emit[:1] != ("unwind",) for r in readers):
            raise AssertionError(f"the stack {em.names[out]} of {stmt.loc} is read by other "
                                 "than its unwind")
    return rows


def _push(stack: str, trips: str, value: ast.expr, listed: bool, rows: bool = False,
          numbered: bool = False) -> ast.stmt:
    """``value`` pushed on ``stack`` as trip ``trips``'s row (``rows``: copied into the row of
    a list of rows, ``_row_lists``; ``numbered``: filled into its 0-d row, while_numbers.py)."""
    if listed:
        return ast.Expr(_call(f"{stack}.append", [value]))
    if numbered:
        return row_fill(ast.Subscript(_name(stack), _name(trips), ast.Load()), value)
    row = ast.Subscript(_name(stack), _name(trips), ast.Store())
    if rows:
        row = ast.Subscript(ast.Subscript(_name(stack), _name(trips), ast.Load()),
                            ast.Constant(Ellipsis), ast.Store())
    return _assign_to(row, value)


def _stacks(em: Emitter, stmt: Stmt, listed: set[Var], numbered: set[Var] = frozenset()
            ) -> list[ast.stmt]:
    """The recording loop's stacks before it: new arrays in the plain form (``X =
    xp.empty((16, 3))``), or lists (``X = []``, ``listed``: ``_listed``); in the buffered
    form, this thread's, kept from its last call (``X = _held_stacks[0]``:
    workspace.stacks_prelude), which the function does not make."""
    loop: While = while_of(stmt)
    em.modules.add("xp")
    function = em.function()
    nodes = []
    for out in stmt.outs[loop.ncarry + 1:]:
        if out in listed:
            nodes.append(_assign(em.names[out], ast.List([], ast.Load())))
            continue
        start = (min(CAPACITY, function.max_steps or CAPACITY), *out.aval.shape[1:])
        if function.fast:
            function.while_stacks.append((start, out.aval.dtype, em.names[out]))
            if out in numbered:     # a list of 0-d rows (workspace.py _number_rows)
                function.row_stacks[out] = len(function.while_stacks) - 1
            held = ast.Subscript(_name("_held_stacks"),
                                 ast.Constant(len(function.while_stacks) - 1), ast.Load())
            nodes.append(_assign(em.names[out], held))
            continue
        args = [ast.Constant(start)]
        if out.aval.dtype.name != "float64":
            args.append(_name("xp.bool_" if out.aval.dtype.kind == "b" else
                              f"xp.{out.aval.dtype.name}"))
        nodes.append(_assign(em.names[out], _call("xp.empty", args)))
    return nodes


def _pushes(em: Emitter, stmt: Stmt, outs: list[str], listed: set[Var], rows: set[Var],
            numbered: set[Var] = frozenset()) -> list[ast.stmt]:
    """A trip's first statements: each saved value written in its row of its stack (appended
    to a list: ``listed``), the array stacks doubled first where they are full
    (``max_steps``: up to that many rows, and a ``StepLimitError`` naming the loop where a
    trip finds that many full; with list stacks alone, that check only); in the buffered
    form the grown stack is kept in this thread's for the calls after."""
    loop: While = while_of(stmt)
    n = loop.ncarry
    trips = em.names[stmt.outs[n]]
    stacks = [em.names[s] for s in stmt.outs[n + 1:] if s not in listed]
    function = em.function()
    limit = function.max_steps
    stop = []
    if limit is not None:
        function.step_limit = True
        where = f"{stmt.loc.short} `while {loop.source}:`" if stmt.loc else \
            f"`while {loop.source}:`"
        message = f"{where} ran more than max_steps={limit} trips; compile with a larger " \
                  "max_steps (or None: the stacks grow as the loop needs)"
        raise_ = ast.Raise(_call("StepLimitError", [ast.Constant(message)]))
        stop = [ast.If(ast.Compare(_name(trips), [ast.Eq()], [ast.Constant(limit)]),
                       [raise_], [])]
    saved = [_push(em.names[s], trips, _name(outs[i]), s in listed, s in rows, s in numbered)
             for s, i in zip(stmt.outs[n + 1:], loop.saved)]
    if not stacks:
        return stop + saved
    grow = []
    first = len(function.while_stacks) - len(stacks)
    for k, (s, out) in enumerate(zip(stacks, [s for s in stmt.outs[n + 1:] if s not in listed])):
        more = _name(s) if limit is None else ast.Subscript(_name(s), ast.Slice(
            None, ast.BinOp(ast.Constant(limit), ast.Sub(), _name(trips))), ast.Load())
        if out in numbered:     # H.extend(_number_rows(len(H))): as many 0-d rows more
            grow.append(ast.Expr(_call(f"{s}.extend", [_call("_number_rows", [_call(
                "len", [more])])])))
            continue
        if out in rows:     # as many rows more, made at once: X.extend(xp.empty((16, 3)))
            count = _call("len", [more])
            args = [ast.Tuple([count, *map(ast.Constant, out.aval.shape[1:])], ast.Load())]
            if out.aval.dtype.name != "float64":
                args.append(_name("xp.bool_" if out.aval.dtype.kind == "b" else
                                  f"xp.{out.aval.dtype.name}"))
            grow.append(ast.Expr(_call(f"{s}.extend", [_call("xp.empty", args)])))
            continue
        value = _call("xp.concatenate", [ast.Tuple(
            [_name(s), _call("xp.empty_like", [more])], ast.Load())])
        targets = [_name(s, True)]
        if function.fast:
            targets.append(ast.Subscript(_name("_held_stacks"), ast.Constant(first + k),
                                         ast.Store()))
        grow.append(ast.Assign(targets, value, lineno=0))
    full = ast.Compare(_name(trips), [ast.Eq()], [_call("len", [_name(stacks[0])])])
    return [ast.If(full, stop + grow, [])] + saved


class _StepRows:
    """An unwind step's rows of number-row stacks (while_numbers.py), ``H[t]``, 0-d arrays its
    ufuncs read as they are (``out_forms._numbers``): the step's inputs ``indices`` and the arm
    inputs they are given as, marked on the function's emitter (``row_numbers``)."""

    def __init__(self, indices: list[int]):
        self.indices = indices

    def __call__(self, sub: Emitter) -> None:
        sub.function().row_numbers.update(row_inputs(sub.tape, self.indices))

    def done(self) -> None:
        pass


def unwind_statements(em: Emitter, stmt: Stmt) -> list[ast.stmt]:
    """The unwind ``stmt`` as a ``for`` over the recorded trips in reverse."""
    unwind = while_of(stmt)
    s, j = unwind.nsaved, unwind.ninvariant
    trips, stacks = stmt.args[0], stmt.args[1:1 + s]
    starts = stmt.args[1 + s + j:]
    outs = [em.names[o] for o in stmt.outs]
    nodes: list[ast.stmt] = []
    operands = _operands(em, stmt, list(stmt.args[1:1 + s + j]), set(outs), nodes)
    operands.update(zip(stmt.outs, outs))
    plan = memory_planned(em)
    lines, arrays = result_arrays(em, stmt) if plan else ([], [None] * len(outs))
    for name, start, out, array in zip(outs, starts, stmt.outs, arrays):
        lines += started(em, [name], [em.atom(start)], [array]) if array is not None else \
            [_assign(name, _copied(em, stmt, start, out))]
    back: dict[int, str] = {}
    function = em.function()
    numbered = [k for k, stack in enumerate(stacks) if stack in function.row_stacks]
    step, inputs, _, ends = _written(em, stmt, unwind.step, while_atoms(stmt), operands, outs,
                                     slice(s + j, None), (arrays, lines) if plan else None, back,
                                     numbers=_StepRows(numbered) if numbered else None)
    nodes += lines
    step += ends
    index = em.names.fresh("t")
    rows = [_assign(inputs[i.var], _row(em.atom(stack), index, i.var))
            for i, stack in zip(unwind.step.inputs[:s], stacks)]
    count = _call("reversed", [_call("range", [em.atom(trips)])])
    nodes.append(ast.For(_name(index, True), count, rows + step, [], lineno=0))
    return nodes + copied_back(outs, back)


