"""Scalar mode: small arrays read element by element become Python floats.

Code like the seed's polynomial reads ``x[0]`` ... ``x[7]`` and does a few dozen scalar
operations; as numpy scalars each costs ~100 ns, as Python floats ~20 ns. The plan finds

- *unpacked arrays*: float64 vectors whose every use is a read ``x[i]`` with a constant ``i``,
  of at most ``MAX_SIZE`` elements or with one element in ``READ_RATIO`` read; the code reads
  them once, ``x0, x1, _, x3 = x.tolist()``;
- *Python-float values*: results of ``+ - *``, unary ``-`` and ``** n`` (a positive integer
  literal ``n``) whose operands are such floats, Python floats from the arguments or number
  literals. For these operations Python floats and numpy float64 scalars give the same bits, so
  the generated code computes exactly what the traced function computes;
- *accumulators*: the gradient buffer of such a vector (``np.zeros`` then ``dx[i] += v``)
  becomes one Python float per element and one ``xp.asarray([dx0, ...])`` at the end. Where
  each element is written once (the backward sweep adds the parts of one element first), the
  element is that value, named ``dx4`` where it is computed, and an element never written is
  ``0.0`` in the list: no zeros, no ``+=``.

A vector is unpacked only if every value that becomes a Python float is consumed by one of
those operations, by a function call (which gets the same number either way), by an
accumulator or by the result; otherwise (a division, a method call, an array operand, a
float16 or float32 number, whose dtype a Python float would take) it stays a numpy array. Divisions and non-integer powers of Python floats are written ``xp.divide``,
``xp.power`` so that they keep numpy's semantics (inf and nan, not ZeroDivisionError).
An integer literal in ``+ - *`` with a Python float, or as its exponent, is written as the float
it converts to (``3.0 * x2``, ``x7 ** 3.0``, the same bits): CPython multiplies two floats in
about half the time it takes to convert an int first.

Where numpy gives inf or nan, so does the generated code, never an exception: a square is
``t * t`` (``t ** 2.0`` may raise OverflowError); a higher power ``x7 ** 3.0`` (C's ``pow``,
as numpy's, not ``x7 * x7 * x7``, which rounds twice) is tried, and on OverflowError is
``xp.power``'s (``_power`` below); a division is ``xp.divide``. ``+ - *`` of Python floats give
numpy's bits, overflow included, but do not signal it: no RuntimeWarning, and no
FloatingPointError under ``np.errstate(over="raise")`` (the plain form's numpy scalars do).
A power that overflows signals as numpy does (it goes through ``xp.power``).
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field

import numpy as np

from ..ir.analysis import Analysis
from ..ir.tape import Lit, Stmt, Tape, Var
from ..rules.indexing import index_add
from ..text import literal
from .trip_floats import trip_floats

# Python floats or numpy: ``x.tolist()`` and ``xp.asarray([dx0, ...])`` cost ~60 ns an element,
# read or not; each element read and its operations cost ~500 ns more as numpy scalars. Measured
# (docs/performance.md): a vector read whole is faster as floats at every length (3-5x, 8 to
# 1024 elements); the polynomial's 8 reads of a longer vector are faster up to ~100 elements.
MAX_SIZE = 64               # a vector this short: always
READ_RATIO = 12             # a longer one: when at least one element in 12 is read (written)
SAFE = {operator.add, operator.sub, operator.mul, operator.neg}
NUMPY_FORM = {operator.truediv: "xp.divide", operator.pow: "xp.power"}


@dataclass
class ScalarPlan:
    elements: dict[Var, tuple[Var, int]] = field(default_factory=dict)   # x[i] -> (x, i)
    unpacked: dict[Var, list[Var | None]] = field(default_factory=dict)  # x -> element Vars
    floats: set[Var] = field(default_factory=set)                        # Python floats at run time
    chains: dict[Var, Var] = field(default_factory=dict)    # accumulator step -> its zeros Var
    chain_ends: set[Var] = field(default_factory=set)       # where the array is made
    once: set[Var] = field(default_factory=set)    # zeros Vars whose elements are written once
    together: set[Var] = field(default_factory=set)     # ... by steps that follow each other
    powers: set[Var] = field(default_factory=set)   # ``x ** n``, n >= 3: Python may raise

    def numpy_form(self, stmt: Stmt) -> str | None:
        """``xp.divide`` where a Python float meets an operation Python would do differently."""
        if stmt.prim.fn not in NUMPY_FORM or stmt.outs[0] in self.floats:
            return None
        if any(isinstance(a, Var) and a in self.floats for a in stmt.args):
            return NUMPY_FORM[stmt.prim.fn]
        return None


def plan_scalars(tape: Tape, facts: Analysis | None = None) -> ScalarPlan:
    facts = facts or Analysis(tape)
    candidates = _candidates(tape, facts)
    while candidates:
        plan = _plan(tape, candidates)
        bad = _rejected(tape, plan, facts)
        if not bad:
            return plan
        candidates -= bad
    return ScalarPlan()


def _candidates(tape: Tape, facts: Analysis) -> set[Var]:
    outputs = set(facts.outputs)
    found = set()
    for var, positions in facts.readers.items():
        a = var.aval
        if a.ndim != 1 or a.dtype != np.float64 or var in outputs:
            continue
        keys = {_element_key(tape.stmts[i], var) for i in positions}
        if None not in keys and _worth_it(a.size, len(keys)):
            found.add(var)
    return found


def _worth_it(size: int, used: int) -> bool:
    """Python floats for a vector of ``size`` elements of which ``used`` are read (written)."""
    return size <= MAX_SIZE or size <= READ_RATIO * used


def _element_key(stmt: Stmt, var: Var) -> int | None:
    if stmt.prim.fn is not operator.getitem or stmt.args[0] is not var \
            or not isinstance(stmt.args[1], Lit):
        return None
    key = stmt.args[1].value
    if isinstance(key, bool) or not isinstance(key, int) or not -var.aval.size <= key < var.aval.size:
        return None
    return key % var.aval.size


def _plan(tape: Tape, arrays: set[Var]) -> ScalarPlan:
    plan = ScalarPlan()
    for stmt in tape.stmts:
        first = stmt.args[0] if stmt.args else None
        if isinstance(first, Var) and first in arrays:
            i = _element_key(stmt, first)
            plan.elements[stmt.out] = (first, i)
            slots = plan.unpacked.setdefault(first, [None] * first.aval.size)
            slots[i] = slots[i] or stmt.out     # x[0] and x[-3] of 3 read one element
            plan.floats.add(stmt.out)
        elif _is_float_op(stmt, plan.floats):
            plan.floats.add(stmt.out)
            if stmt.prim.fn is operator.pow and stmt.args[1].value >= 3:
                plan.powers.add(stmt.out)
    _plan_chains(tape, plan)
    return plan


def _is_float_op(stmt: Stmt, floats: set[Var]) -> bool:
    fn, args = stmt.prim.fn, stmt.args
    if not stmt.outs or stmt.outs[0].aval.shape != () or not any(a in floats for a in args
                                                                 if isinstance(a, Var)):
        return False
    if fn is operator.pow:
        exponent = args[1]
        return isinstance(exponent, Lit) and type(exponent.value) is int and exponent.value >= 1 \
            and _float_operand(args[0], floats)
    return fn in SAFE and all(_float_operand(a, floats) for a in args)


def _float_operand(atom, floats: set[Var]) -> bool:
    if isinstance(atom, Var):
        return atom in floats or (atom.aval.weak and atom.aval.dtype.kind == "f")
    return type(atom.value) in (int, float)


def _plan_chains(tape: Tape, plan: ScalarPlan) -> None:
    """``np.zeros(n)`` followed only by ``buf[i] += scalar``: one float per element."""
    made = {s.out: s for s in tape.stmts if s.prim.fn is np.zeros and _small_zeros(s)}
    steps: dict[Var, Var] = {}
    bad: set[Var] = set()
    written: dict[Var, set] = {}
    for stmt in tape.stmts:
        if stmt.prim.fn is not index_add:
            continue
        buf, key, value = stmt.args
        root = steps.get(buf, buf if buf in made else None)
        if root is None:
            continue
        steps[stmt.out] = root
        scalar = not isinstance(value, Var) or value.aval.shape == ()
        if not (isinstance(key, Lit) and type(key.value) is int and scalar):
            bad.add(root)
        else:
            written.setdefault(root, set()).add(key.value % root.aval.size)
    bad |= {root for root, keys in written.items() if not _worth_it(root.aval.size, len(keys))}
    plan.chains = {v: root for v, root in steps.items() if root not in bad}
    plan.chains.update({root: root for root in set(plan.chains.values())})
    last = {root: v for v, root in steps.items() if root not in bad}
    plan.chain_ends = set(last.values())
    at: dict[Var, list[int]] = {}
    for i, stmt in enumerate(tape.stmts):
        if stmt.outs and stmt.out in steps:
            at.setdefault(steps[stmt.out], []).append(i)
    plan.once = {root for root in last if len(at[root]) == len(written[root])}
    plan.together = {root for root in plan.once if at[root][-1] - at[root][0] == len(at[root]) - 1}


def _small_zeros(stmt: Stmt) -> bool:
    a = stmt.out.aval
    return a.ndim == 1 and a.dtype == np.float64 and not stmt.params


def _rejected(tape: Tape, plan: ScalarPlan, facts: Analysis) -> set[Var]:
    """Unpacked arrays whose Python floats reach an operation that would treat them otherwise."""
    bad = set()
    for stmt in tape.stmts:
        for pos, arg in enumerate(stmt.args):
            for v in ([arg] if isinstance(arg, Var) else []):
                if v in plan.floats and not _accepts(stmt, pos, plan):
                    bad |= _sources(v, facts, plan)
    return bad


def _accepts(stmt: Stmt, pos: int, plan: ScalarPlan) -> bool:
    if stmt.outs and stmt.outs[0] in plan.floats:
        return True
    if any(_narrow(a) for a in stmt.args):
        return False        # float64 + float16 is float64; a Python float + float16 is float16
    kind = stmt.prim.emit[0]
    if stmt.prim.fn is index_add:
        return pos == 2
    if stmt.outs and stmt.outs[0].aval.shape != ():
        return False
    return kind == "call" or stmt.prim.fn in SAFE or stmt.prim.fn in NUMPY_FORM


def _narrow(atom) -> bool:
    """A numpy value of a float or complex dtype narrower than a Python float's: a Python
    float takes its dtype (NEP 50), a numpy float64 scalar does not."""
    if not isinstance(atom, Var) or atom.aval.weak:
        return False
    dtype = atom.aval.dtype
    return (dtype.kind == "f" and dtype.itemsize < 8) or (dtype.kind == "c" and dtype.itemsize < 16)


def _sources(var: Var, facts: Analysis, plan: ScalarPlan) -> set[Var]:
    """The unpacked arrays ``var`` was computed from."""
    producer = facts.producer
    found, todo, seen = set(), [var], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in plan.elements:
            found.add(plan.elements[v][0])
        elif v in producer:
            todo += [a for a in producer[v].uses() if a in plan.floats]
    return found


# ----- writing it ------------------------------------------------------------------------------

def name_scalars(tape: Tape, plan: ScalarPlan, namer, facts: Analysis,
                 inlined: set[Var]) -> dict[tuple[Var, int], str]:
    """``x2`` for ``x[2]`` and ``dx2`` for element 2 of an accumulator ``dx``. An element
    written once with a value computed for it alone (read by nothing else) gives that value
    its name: ``dx4 = dt21 + t25 * t37``."""
    names = {}
    for array, elements in plan.unpacked.items():
        for i, v in enumerate(elements):
            if v is not None:
                namer.names[v] = names[array, i] = namer.fresh(f"{namer[array]}{i}")
    for v, key in plan.elements.items():        # a second read of an element: the same name
        namer.names[v] = names[key]
    for root in sorted({r for r in plan.chains.values()} - plan.together, key=lambda v: v.id):
        for i in range(root.aval.size):
            names[root, i] = namer.fresh(f"{namer[root]}{i}")
    for stmt in tape.stmts:
        root = plan.chains.get(stmt.out) if stmt.outs else None
        if root in plan.once and root not in plan.together and stmt.out is not root:
            value = stmt.args[2]
            if _own_value(value, plan, facts, inlined):
                namer.names[value] = names[plan.chains[stmt.out], _index(stmt)]
    return names


def _own_value(value, plan: ScalarPlan, facts: Analysis, inlined: set[Var]) -> bool:
    """A Python float that a statement of its own computes for one accumulator element only."""
    return isinstance(value, Var) and value in plan.floats and value not in plan.elements \
        and value not in inlined and value in facts.producer and facts.uses[value] == 1


def _index(stmt: Stmt) -> int:
    """The element an accumulator step ``buf[i] += v`` writes."""
    return stmt.args[1].value % stmt.args[0].aval.size


# np.minimum and np.maximum of two float64 numbers on a CPU: numpy's ufunc call costs ~1 us
# on two numbers, a comparison ~0.1 us (``_extremum``)
_EXTREMA = {np.minimum: ast.Lt, np.maximum: ast.Gt}


def _float_number(atom) -> bool:
    if isinstance(atom, Lit):
        return type(atom.value) in (int, float)
    return isinstance(atom, Var) and atom.aval.ndim == 0 and atom.aval.dtype == np.float64


def _extremum(emitter, stmt: Stmt) -> list[ast.stmt] | None:
    """``np.minimum(h, 1.0 - t)`` of two float64 numbers as a comparison: the first operand
    where it is the smaller (the larger: maximum) or nan, else the second, which is numpy's
    value, nan and ties alike (``np.minimum(0.0, -0.0)`` is ``-0.0``), made numpy's float64
    as numpy gives it (cupy's and dask's numbers are 0-d arrays: their call stays)::

        t7 = 1.0 - t
        h_1 = xp.float64(h if h < t7 or h != h else t7)

    A while's step that every reader would take alike as Python's float stays Python's
    (trip_floats.py: adaptive_heun's ``h_1 = h if h < t_2 or h != h else t_2``).
    """
    compare = _EXTREMA.get(stmt.prim.fn)
    if compare is None or emitter.device != "cpu" or stmt.params or len(stmt.args) != 2 \
            or len(stmt.outs) != 1 or not all(_float_number(a) for a in stmt.args) \
            or stmt.out.aval.ndim or stmt.out.aval.dtype != np.float64 \
            or getattr(emitter.memory.group.get(stmt.out), "kind", "fresh") != "fresh":
        return None     # (a number in a work array is written there)
    nodes, operands = [], []
    for atom in stmt.args:     # (an operand written inline: named first, read twice here)
        if isinstance(atom, Var) and atom in emitter.inlined:
            name = emitter.temporary("t")
            nodes.append(ast.Assign([ast.Name(name)], emitter.atom(atom), lineno=0))
            operands.append(ast.Name(name))
        else:
            operands.append(emitter.atom(atom))
    a, b = operands
    test = ast.Compare(a, [compare()], [b])
    if isinstance(stmt.args[0], Var):
        test = ast.BoolOp(ast.Or(), [test, ast.Compare(a, [ast.NotEq()], [a])])
    value = ast.IfExp(test, a, b)
    if not trip_floats(emitter, stmt.out):
        emitter.modules.add("xp")
        value = ast.Call(ast.Attribute(ast.Name("xp"), "float64", ast.Load()), [value], [])
    return nodes + [ast.Assign([ast.Name(emitter.names[stmt.out])], value, lineno=0)]


def _bound(atom) -> float | None:
    """A clip's bound as the float it is: a finite int or float literal (None: none)."""
    if isinstance(atom, Lit) and atom.value is None:
        return None
    if not isinstance(atom, Lit) or type(atom.value) not in (int, float) \
            or not abs(atom.value) <= 2 ** 53:
        raise ValueError(atom)
    return float(atom.value)


def _clip(emitter, stmt: Stmt) -> list[ast.stmt] | None:
    """``np.clip(v, 0.2, 5.0)`` of a float64 or float32 number, the bounds number literals
    (lo < hi, or one None), as comparisons: numpy's ``clip`` makes 0-d arrays of the number,
    each bound and the result (~15 us, 32 bytes); numpy's value, the bound at a tie (``-0.0``
    at ``0.0`` is ``0.0``), nan as it is; the number compares with a bound in its own dtype
    (NEP 50), and the result is made the number's dtype::

        t87 = xp.float64(5.0 if t86 >= 5.0 else 0.2 if t86 <= 0.2 else t86)
    """
    a = stmt.args[0] if len(stmt.args) == 3 else None
    if emitter.device != "cpu" or stmt.params or len(stmt.outs) != 1 \
            or not isinstance(a, Var) or a.aval.ndim or a.aval.dtype not in _CLIPPED \
            or stmt.out.aval.ndim or stmt.out.aval.dtype != a.aval.dtype \
            or getattr(emitter.memory.group.get(stmt.out), "kind", "fresh") != "fresh":
        return None
    try:
        lo, hi = _bound(stmt.args[1]), _bound(stmt.args[2])
    except ValueError:
        return None
    if lo is None and hi is None or lo is not None and hi is not None and not lo < hi:
        return None
    nodes, value = [], emitter.atom(a)
    if a in emitter.inlined:     # (read twice or three times here: named first)
        name = emitter.temporary("t")
        nodes.append(ast.Assign([ast.Name(name)], value, lineno=0))
        value = ast.Name(name)
    for bound, compare in ((lo, ast.LtE), (hi, ast.GtE)):
        if bound is not None:
            value = ast.IfExp(ast.Compare(nodes and ast.Name(name) or emitter.atom(a),
                                          [compare()], [ast.Constant(bound)]),
                              ast.Constant(bound), value)
    if a.aval.dtype != np.float64 or not trip_floats(emitter, stmt.out):
        emitter.modules.add("xp")
        value = ast.Call(ast.Attribute(ast.Name("xp"), _CLIPPED[a.aval.dtype], ast.Load()),
                         [value], [])
    return nodes + [ast.Assign([ast.Name(emitter.names[stmt.out])], value, lineno=0)]


_CLIPPED = {np.dtype(np.float64): "float64", np.dtype(np.float32): "float32"}


def scalar_statement(emitter, stmt: Stmt) -> list[ast.stmt] | None:
    """The statements for ``stmt`` in scalar mode, or None when it is written as usual."""
    if stmt.prim.fn in _EXTREMA:
        extremum = _extremum(emitter, stmt)
        if extremum is not None:
            return extremum
    if stmt.prim.fn is np.clip:
        clipped = _clip(emitter, stmt)
        if clipped is not None:
            return clipped
    plan, names = emitter.scalars, emitter.scalar_names
    if stmt.outs and stmt.out in plan.powers:
        return [_power(emitter, stmt)]
    if stmt.outs and stmt.out in plan.elements:
        array, _ = plan.elements[stmt.out]
        if array in emitter.unpacked_done:
            return []
        emitter.unpacked_done.add(array)
        targets = [ast.Name(names[array, i]) if v is not None else ast.Name("_")
                   for i, v in enumerate(plan.unpacked[array])]
        call = ast.Call(ast.Attribute(emitter.atom(array), "tolist", ast.Load()), [], [])
        return [ast.Assign([ast.Tuple(targets)], call, lineno=0)]
    if not stmt.outs or stmt.out not in plan.chains:
        return None
    root = plan.chains[stmt.out]
    if root in plan.once:
        body, elements = _written_once(emitter, stmt, root)
    else:
        elements = [ast.Name(names[root, i]) for i in range(root.aval.size)]
        if stmt.out is root:
            return [ast.Assign(elements, ast.Constant(0.0), lineno=0)]
        target = ast.Name(names[root, _index(stmt)])
        body = [ast.AugAssign(target, ast.Add(), emitter.atom(stmt.args[2]))]
    if stmt.out in plan.chain_ends:
        body += _made(emitter, stmt.out, ast.List(elements))
    return body


def _power(emitter, stmt: Stmt) -> ast.Try:
    """``x ** n`` of a Python float, where Python raises OverflowError and numpy gives inf
    (``1e200 ** 3``): numpy's value then, with numpy's warning (or its FloatingPointError
    under ``np.errstate(over="raise")``), as the plain form's numpy scalars give. A ``try``
    costs nothing until it catches (a call of a helper would cost each power ~25 ns)::

        try:
            t3 = x7 ** 3.0
        except OverflowError:
            t3 = float(xp.power(x7, 3.0))
    """
    target = ast.Name(emitter.names[stmt.out])
    base = emitter.atom(stmt.args[0])
    exponent = float_literal(emitter, stmt, stmt.args[1]) or emitter.atom(stmt.args[1])
    power = ast.Call(ast.Attribute(ast.Name("xp"), "power", ast.Load()), [base, exponent], [])
    numpy = ast.Call(ast.Name("float"), [power], [])
    return ast.Try([ast.Assign([target], ast.BinOp(base, ast.Pow(), exponent), lineno=0)],
                   [ast.ExceptHandler(ast.Name("OverflowError"), None,
                                      [ast.Assign([target], numpy, lineno=0)])], [], [])


def _written_once(emitter, stmt: Stmt, root: Var) -> tuple[list[ast.stmt], list[ast.expr]]:
    """An accumulator whose elements are each written once. Where its writes follow each
    other, the elements are written into the list where the last one is (a value used there
    alone is written inline: ``[3.0 * dt15 - t12, ...]``); otherwise each write is
    ``dx4 = v``, where ``v`` is not named ``dx4`` already (name_scalars), and the list names
    them. ``0.0`` for an element never written, a literal as it is."""
    plan = emitter.scalars
    if stmt.out is root:
        return [], []
    together, body = root in plan.together, []
    value = stmt.args[2]
    if not together and isinstance(value, Var):
        name = emitter.scalar_names[root, _index(stmt)]
        if emitter.names.names.get(value) != name:
            body.append(ast.Assign([ast.Name(name)], emitter.atom(value), lineno=0))
    if stmt.out not in plan.chain_ends:
        return body, []
    values = {_index(s): s.args[2] for s in emitter.tape.stmts
              if s.outs and plan.chains.get(s.out) is root and s.out is not root}
    elements = [ast.Constant(0.0) if i not in values else
                ast.Name(emitter.scalar_names[root, i]) if isinstance(values[i], Var)
                and not together else emitter.atom(values[i]) for i in range(root.aval.size)]
    return body, elements


def _made(emitter, var: Var, elements: ast.List) -> list[ast.stmt]:
    """The accumulator's array from its elements: ``dx = xp.asarray([dx0, ...])``; a returned
    one the caller may give an array for: ``dx = [dx0, ...]``, then the floats go straight
    into the caller's array (``a[...] = list`` makes no array: numpy stores element by
    element, in about half the time of ``xp.asarray``)::

        if out is None or (dx_out := out[0]) is None:
            dx = xp.asarray(dx)
        else:
            dx_out[...] = dx
            dx = dx_out

    (the gradient of a struct's field: ``dx = xp.asarray(dx) if out is None else
    _deliver(out, (0, path), dx)``)."""
    name = ast.Name(emitter.names[var])
    if not delivered_list(emitter, var):
        return [ast.Assign([name], _array(emitter, elements), lineno=0)]
    argnum, path = emitter.memory.delivered[var]
    emitter.delivered_done.add(var)
    made = ast.Assign([name], elements, lineno=0)
    if path:
        delivered = ast.IfExp(ast.Compare(ast.Name("out"), [ast.Is()], [ast.Constant(None)]),
                              _array(emitter, name),
                              ast.Call(ast.Name("_deliver"),
                                       [ast.Name("out"), literal((argnum, path)), name], []))
        return [made, ast.Assign([name], delivered, lineno=0)]
    entry = ast.Name(emitter.outer_name(f"{name.id}_out"))      # out[argnum], read once
    none = [[ast.Is()], [ast.Constant(None)]]
    read = ast.NamedExpr(entry, ast.Subscript(ast.Name("out"), ast.Constant(argnum)))
    given = ast.BoolOp(ast.Or(), [ast.Compare(ast.Name("out"), *none), ast.Compare(read, *none)])
    into = ast.Subscript(entry, ast.Constant(Ellipsis), ast.Store())
    return [made, ast.If(given, [ast.Assign([name], _array(emitter, name), lineno=0)],
                         [ast.Assign([into], name, lineno=0),
                          ast.Assign([name], entry, lineno=0)])]


def _array(emitter, floats: ast.expr) -> ast.Call:
    """A float64 array of a list of Python floats: ``xp.asarray(dx)`` (``xp.fromiter`` is
    10% faster on a CPU, but it holds a second buffer while it fills the first: a higher
    peak than a handwritten ``np.array``)."""
    return ast.Call(ast.Attribute(ast.Name("xp"), "asarray", ast.Load()), [floats], [])


def delivered_list(emitter, var: Var) -> bool:
    """A returned accumulator read by nothing else: ``_deliver`` writes its floats straight
    into the caller's out= array, or makes the array when none was given (on a CPU: numpy
    takes a list where cupy wants an array). Also a loop's list of floats (regions.py)."""
    return var in emitter.memory.delivered and not emitter.facts.readers.get(var) \
        and emitter.blocked


def float_literal(emitter, stmt: Stmt, atom) -> ast.expr | None:
    """``3.0`` for the int literal ``3`` in ``+ - *`` with a Python float, or as the exponent
    of one (``x7 ** 3.0``: the float Python converts it to, exactly: at most 2 ** 53)."""
    if not isinstance(atom, Lit) or type(atom.value) is not int or abs(atom.value) > 2 ** 53 \
            or not stmt.outs or stmt.out not in emitter.scalars.floats:
        return None
    if stmt.prim.fn not in SAFE and not (stmt.prim.fn is operator.pow and atom is stmt.args[1]):
        return None
    return ast.Constant(float(atom.value))


def square(emitter, stmt: Stmt) -> ast.expr | None:
    """``t * t`` for a Python float squared: what numpy computes, and it cannot overflow into an
    exception as ``t ** 2`` can."""
    base, exponent = stmt.args
    if stmt.out in emitter.scalars.floats and isinstance(exponent, Lit) and exponent.value == 2 \
            and isinstance(base, Var) and base not in emitter.inlined:
        return ast.BinOp(emitter.atom(base), ast.Mult(), emitter.atom(base))
    return None
