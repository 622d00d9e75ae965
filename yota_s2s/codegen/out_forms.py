"""Statements that write into planned memory (buffers.py): ``out=`` and in-place forms.

    h = xp.matmul(X, W1, out=buf1)       a value made in a work array
    h += b1                              in place over its first operand, same name
    xp.tanh(h, out=h)                    in place, a function
    dW1 = xp.matmul(X.T, dh, out=_result(out, 0, (784, 512)))    a returned gradient
    t = xp.matmul(xs[t], Wx, out=H[t + 1])   a loop step's state, made in its stack's row
    t4 = xp.matmul(x, ones, out=dW_mem[0])   then ``xp.copyto(dW[1:], t4)``: a broadcast's row
    dxs = buf3                           then ``dxs.fill(0.0)``: forms that return nothing

The operator a person would write becomes its ufunc (``*`` is ``xp.multiply``); ``x ** 2`` is
``xp.square`` and ``x ** 0.5`` is ``xp.sqrt``, which is what numpy's ``**`` computes for them.
"""
from __future__ import annotations

import ast
import operator

import numpy as np

from ..ir.tape import Lit, Stmt, Var
from ..text import dotted, identifier, literal

_AUGMENTED = {operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult,
              operator.truediv: ast.Div}
_FILL = {np.zeros: 0.0, np.ones: 1.0, np.zeros_like: 0.0, np.ones_like: 1.0}
_FLOATS = ("float64", "float32", "float16")   # the dtypes numbers are read in as 0-d arrays
# numpy casts an operand of up to this many elements (its buffer size, np.getbufsize()) into a
# new array of the loop's dtype, a longer one through its iteration buffer
CAST_WHOLE = 8192


def write_statement(em, stmt: Stmt) -> list[ast.stmt] | None:
    """``stmt`` written into its planned array, or None when it is written as usual."""
    plan = em.memory
    v = stmt.outs[0] if stmt.outs else None
    if v is None or v not in plan.writes:
        return None
    group = plan.group[v]
    if v in plan.over:
        target: ast.expr = ast.Name(em.names[plan.over[v]])
    elif group.kind == "slot":
        target = ast.Name(em.slot_names[group.slot])
        if group.slot in plan.lent and group.slot not in em.lent_made:
            return _lent_view(em, group.slot) + write_statement(em, stmt)
    elif group.kind == "result" and id(group) in em.lent_arrays:     # made at the start
        target = ast.Name(em.lent_arrays[id(group)])
    elif group.kind == "result":
        target = result_call(group, v)
    elif group.kind == "row":       # a loop's state made in its stack's row (regions.py)
        target = group.row
    elif group.kind == "head":      # in a returned gradient's first row, copied to the rest
        name = em.lent_arrays[id(group.host)]
        made = _result_array(em, group.host)
        return made + write_statement_into(em, stmt, ast.Subscript(ast.Name(name),
                                                                   ast.Constant(0), ast.Load()))
    else:
        return None
    return write_statement_into(em, stmt, target)


def write_statement_into(em, stmt: Stmt, target: ast.expr) -> list[ast.stmt]:
    """``stmt`` written into ``target``: ``out=``, in place, or bound then filled."""
    plan, v = em.memory, stmt.outs[0]
    form = plan.writes[v]
    if form in ("copy", "fill", "empty"):
        return _bind_then(em, stmt, v, target)
    if form == "where":
        return _where(em, stmt, v, target)
    filled, numbers = _numbers(em, stmt) if form == "ufunc" else ([], {})
    name = em.names[v]
    cast = _cast_operand(em, stmt, target) if form == "ufunc" else None
    if cast is not None:
        return filled + _cast_then(em, stmt, target, cast, numbers)
    value = _call(em, stmt, form, target, numbers)
    if isinstance(target, ast.Name) and target.id == name:
        first = stmt.args[0]
        augmented = _AUGMENTED.get(stmt.prim.fn)
        if augmented and isinstance(first, Var) and em.names.names.get(first) == name:
            operand = numbers.get(1) or em.atom(stmt.args[1])
            return filled + [ast.AugAssign(ast.Name(name), augmented(), operand)]
        second = stmt.args[1] if len(stmt.args) == 2 else None
        if augmented and stmt.prim.commutative and isinstance(second, Var) \
                and em.names.names.get(second) == name:     # t8 += t7 for t7 + t8: the same bits
            operand = numbers.get(0) or em.atom(first)
            return filled + [ast.AugAssign(ast.Name(name), augmented(), operand)]
        return filled + [ast.Expr(value)]
    return filled + [ast.Assign([ast.Name(name)], value, lineno=0)]


def _cast_operand(em, stmt: Stmt, target: ast.expr) -> int | None:
    """The operand of a binary ufunc that numpy would cast into a new array of the result's
    dtype on each call (``dy * hit``, a bool mask: numpy's buffered cast of a small operand is
    a whole copy), where it can be copied into ``target`` first instead (``_cast_then``): an
    integer or bool array of the result's shape, the first operand or one of a commutative
    operation, and ``target`` not the other operand's array. Up to numpy's buffer size (8192
    elements): a longer operand numpy casts chunk by chunk in its iteration buffer, in one pass,
    which the copy would make two."""
    if len(stmt.args) != 2 or _ufunc(stmt) in ("square", "sqrt") \
            or int(np.prod(stmt.out.aval.shape)) > CAST_WHOLE:
        return None
    out = stmt.out.aval
    for i, a in enumerate(stmt.args):
        other = stmt.args[1 - i]
        if isinstance(a, Var) and a.aval.dtype.kind in "biu" and out.dtype.kind == "f" \
                and a.aval.shape == out.shape and not a.aval.weak \
                and (i == 0 or stmt.prim.commutative) and (
                    not isinstance(other, Var) or other.aval.dtype == out.dtype) \
                and not (isinstance(other, Var) and isinstance(target, ast.Name)
                         and em.names.names.get(other) == target.id) \
                and not (isinstance(other, Var) and other in em.inlined):
            return i
    return None


def _cast_then(em, stmt: Stmt, target: ast.expr, i: int,
               numbers: dict[int, ast.expr]) -> list[ast.stmt]:
    """``t = target; xp.copyto(t, hit); t *= dy``: operand ``i`` cast into the result's array
    by copyto (no new array), then the ufunc over it with the other operand: numpy casts it
    so before computing, so the bits are the same."""
    v, name = stmt.out, ast.Name(em.names[stmt.out])
    lines = [] if isinstance(target, ast.Name) and target.id == name.id else \
        [ast.Assign([ast.Name(em.names[v])], target, lineno=0)]
    lines.append(ast.Expr(ast.Call(_xp("copyto"), [name, em.atom(stmt.args[i])], [])))
    other = numbers.get(1 - i) or em.atom(stmt.args[1 - i])
    augmented = _AUGMENTED.get(stmt.prim.fn)
    if augmented is not None:
        lines.append(ast.AugAssign(ast.Name(name.id), augmented(), other))
    else:
        lines.append(ast.Expr(ast.Call(_xp(_ufunc(stmt)), [name, other],
                                       [ast.keyword("out", ast.Name(name.id))])))
    return lines


def _lent_view(em, slot: int) -> list[ast.stmt]:
    """Before the first value written into a work array that lives in a returned array
    (buffers.py, ``_lend_slots``): ``dW_mem = _result(...)`` (once per returned array, as late
    as this) and ``buf1 = dW_mem.ravel('K')[0:12800].reshape((128, 100))``, a view of its
    elements from the offset (of a copy, where the caller's out= array is not contiguous);
    of the rows after the first where a value lives there by then (``dW_mem[1:].ravel('K')``)."""
    em.lent_made.add(slot)
    group, start = em.memory.lent[slot]
    name = em.lent_arrays[id(group)]
    lines = _result_array(em, group)
    view = lent_view(name, group, start, em.memory.slots[slot][0])
    return lines + [ast.Assign([ast.Name(em.slot_names[slot])], view, lineno=0)]


def lent_view(name: str, group, start: int, shape: tuple) -> ast.expr:
    """``dW_mem.ravel('K')[0:12800].reshape((128, 100))``: the elements of returned array
    ``name`` from ``start`` as an array of ``shape``; of ``dW_mem[1:]`` past a first row that
    holds a value (buffers.py ``_heads``), which are those elements in any layout."""
    array: ast.expr = ast.Name(name)
    row = int(np.prod(group.members[0].aval.shape[1:]))
    if group.head is not None and start >= row:
        array = ast.Subscript(array, ast.Slice(ast.Constant(1), None), ast.Load())
        start -= row
    flat = ast.Call(ast.Attribute(array, "ravel", ast.Load()), [ast.Constant("K")], [])
    part = ast.Subscript(flat, ast.Slice(ast.Constant(start),
                                         ast.Constant(start + int(np.prod(shape)))), ast.Load())
    return ast.Call(ast.Attribute(part, "reshape", ast.Load()), [literal(shape)], [])


def _result_array(em, group) -> list[ast.stmt]:
    """``dW_mem = _result(...)``, where the returned array ``group`` is made before it is
    written (work arrays live in it, or a value in its first row), the first time it is needed."""
    name = em.lent_arrays[id(group)]
    if name in em.lent_made:
        return []
    em.lent_made.add(name)
    return [ast.Assign([ast.Name(name)], result_call(group, group.members[0]), lineno=0)]


def result_call(group, v: Var) -> ast.expr:
    """``_result(out, key, shape[, dtype][, order="F"])``: the array ``group`` is returned in."""
    argnum, path = group.result
    where = argnum if not path else (argnum, path)
    args = [ast.Name("out"), literal(where), literal(v.aval.shape)]
    if v.aval.dtype.name != "float64":
        args.append(literal(v.aval.dtype))
    order = [ast.keyword("order", ast.Constant("F"))] if group.order == "F" else []
    return ast.Call(ast.Name("_result"), args, order)


def _xp(name: str) -> ast.expr:
    return dotted(f"xp.{name}")


def _call(em, stmt: Stmt, form: str, target: ast.expr,
          numbers: dict[int, ast.expr] | None = None) -> ast.expr:
    out = [ast.keyword("out", target)]
    operands = [em.atom(a) for a in stmt.args]
    if form == "ufunc" and any(isinstance(a, Var) and a.aval.dtype.kind == "f" for a in stmt.args):
        # 1.0, not 1: an int operand would make numpy cast through a 64 KB buffer on each call
        operands = [em.literal(float(a.value)) if isinstance(a, Lit) and type(a.value) is int
                    else o for a, o in zip(stmt.args, operands)]
    if form == "ufunc":
        read = operands[:1] if _ufunc(stmt) in ("square", "sqrt") else operands
        return ast.Call(_xp(_ufunc(stmt)), [(numbers or {}).get(i) or o
                                            for i, o in enumerate(read)], out)
    if form == "matmul":
        return ast.Call(_xp("matmul"), operands, out)
    keywords = [ast.keyword(identifier(k), em.literal(val)) for k, val in stmt.params] + out
    if form == "reduce" and sum_as_product(em, stmt):
        return ast.Call(_xp("matmul"), sum_as_product(em, stmt), out)
    if form == "reduce" and isinstance(stmt.args[0], Var) and not stmt.args[0].aval.weak:
        return ast.Call(ast.Attribute(operands[0], identifier(stmt.prim.method),
                                      ast.Load()), [], keywords)
    return ast.Call(_xp(stmt.prim.emit[1].removeprefix("xp.")), operands, keywords)   # xp.sum


def row_call(em, stmt: Stmt, row: ast.expr, form: str = "ufunc") -> ast.expr:
    """``stmt``'s ufunc (or matrix product: ``form``) written into ``row`` (a row of a loop's
    stack, codegen/regions.py), a ufunc's literal number operands the module's 0-d arrays
    (``_numbers``)."""
    if form == "matmul":
        return _call(em, stmt, form, row)
    return _call(em, stmt, "ufunc", row, _numbers(em, stmt, literals_only=True)[1])


def _numbers(em, stmt: Stmt, literals_only: bool = False
             ) -> tuple[list[ast.stmt], dict[int, ast.expr]]:
    """The number operands of a ufunc written into an array, as 0-d arrays (operand index ->
    its expression): numpy makes a new 0-d array of a number operand on every call (8 bytes
    of array data, a quarter microsecond). A literal is the module's 0-d array of it
    (``xp.subtract(_1_0, t, out=t)``: ``Emitter.number_array``); a number computed at run time
    (an argument, a sum) is first written into the function's 0-d work array (``buf7[()] = b``
    and ``t1 += buf7``: ``Emitter.number_slot``), and the statements that do so come first; not
    where another operand is an expression, which may write that array too (a sum to a number).
    Each in the dtype numpy converts it to: a numpy scalar's own, a Python number's that of the
    array operands (one float dtype, holding a literal exactly). Numbers stay as they are in a
    GPU module (cupy passes them to its kernels), and in any other dtype. ``literals_only``:
    numbers at run time stay as they are (a single statement is wanted). A reduction to a number
    inlined into the ufunc is its 0-d work array itself (``dx /= t1.sum(out=buf3)``); an integer
    or bool number with float64 arrays goes into a float64 one, as numpy converts it (a 0-d
    int64 array would be cast into a new one)."""
    filled: list[ast.stmt] = []
    numbers: dict[int, ast.expr] = {}
    if not em.numbers_in_arrays:
        return filled, numbers
    dtypes = {a.aval.dtype for a in stmt.args if isinstance(a, Var) and a.aval.ndim
              and not a.aval.weak and a not in em.scalars.floats}
    array = dtypes.pop() if len(dtypes) == 1 else None
    read = stmt.args[:1] if _ufunc(stmt) in ("square", "sqrt") else stmt.args
    inlined = [a for a in read if isinstance(a, Var) and a in em.inlined]
    for i, atom in enumerate(read):
        if isinstance(atom, Lit) and (type(atom.value) is float or isinstance(
                atom.value, np.floating) or type(atom.value) is int and abs(atom.value) <= 2 ** 53):
            dtype = atom.value.dtype if isinstance(atom.value, np.generic) else array
            if dtype is not None and dtype.kind in "biu" and type(atom.value) is float:
                dtype = np.dtype(np.float64)     # a Python float with integers: numpy's float64
            if dtype is not None and dtype.name in _FLOATS and _exact(atom.value, dtype):
                numbers[i] = ast.Name(em.number_array(float(atom.value), dtype))
        elif isinstance(atom, Var) and atom in em.inlined and not literals_only \
                and not set(inlined) - {atom} and atom.aval.dtype == array \
                and _into_number(em.atom(atom)) is not None:
            numbers[i] = _into_number(em.atom(atom))
        elif isinstance(atom, Var) and not literals_only and array == np.float64 and \
                atom.aval.dtype == np.float64 and not atom.aval.ndim and \
                (atom in em.number_rows or atom in em.function().row_numbers):
            numbers[i] = _row_read(em, atom, filled)
        elif isinstance(atom, Var) and (atom.aval.ndim == 0 or atom in em.scalars.floats) \
                and not filled and not literals_only and array is not None and not set(inlined) - {atom}:
            dtype = array if atom.aval.weak or atom in em.scalars.floats else atom.aval.dtype
            if dtype.kind in "biu" and array == np.float64:
                dtype = array   # numpy's float64 of it (an int64 count: the max's ties)
            if dtype.name in _FLOATS and atom.aval.dtype.kind in "biuf":
                slot = em.number_slot(dtype, em.names[atom])
                filled.append(number_into(ast.Name(slot), em.atom(atom)))
                numbers[i] = ast.Name(slot)
    return filled, numbers


def number_into(array: ast.expr, value: ast.expr) -> ast.stmt:
    """``buf7[()] = b``: a number written into a 0-d array (~0.06 us; ``buf7.fill(b)``, the
    method call, ~0.2 us), cast as ``fill`` casts it."""
    return ast.Assign([ast.Subscript(array, ast.Tuple([], ast.Load()), ast.Store())], value,
                      lineno=0)


def _row_read(em, atom: Var, filled: list[ast.stmt]) -> ast.expr:
    """A number of a while's stack of 0-d rows (codegen/while_numbers.py), read by a ufunc:
    in its trip, its row (``H[trips]``), filled by the first reader; in the unwind, the row
    read (``h_3 = H[t_3]``), as it is."""
    row = em.number_rows.get(atom)
    if row is None:
        return em.atom(atom)
    if atom not in em.rows_filled:
        em.rows_filled.add(atom)
        filled.append(number_into(row, em.atom(atom)))
    return row


def _into_number(expr: ast.expr) -> ast.expr | None:
    """``t1.sum(out=buf3)`` of ``t1.sum(out=buf3)[()]`` (``Emitter.into_number``): the 0-d
    array the reduction writes, read by the ufunc as it is (``[()]`` makes a numpy scalar, which
    the ufunc would make a new 0-d array of: 8 bytes a call; an int64 count, the max's ties,
    goes into no float work array). The ufunc reads it as it reads the scalar (numpy promotes
    a 0-d array as it does a numpy scalar), before any other operand is made."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Tuple) \
            and not expr.slice.elts and isinstance(expr.value, ast.Call) \
            and any(k.arg == "out" for k in expr.value.keywords):
        return expr.value
    return None


def _exact(value, dtype: np.dtype) -> bool:
    """Does ``dtype`` hold ``value`` exactly (NaN too)?"""
    with np.errstate(all="ignore"):
        held = float(dtype.type(value))
    return held == value or (held != held and value != value)


def sum_as_product(em, stmt: Stmt) -> list[ast.expr] | None:
    """``x.sum(axis=0)`` of a matrix as ``ones @ x`` (``axis=1``: ``x @ ones``), the cheaper
    form: BLAS's matrix-vector product is 2-30x faster than numpy's reduction along an axis
    (30x for a tall, narrow matrix). Not for broadcast views, which BLAS cannot read, nor for
    long float32 sums, where numpy's pairwise summation is the more accurate."""
    x, params = stmt.args[0], dict(stmt.params)
    if stmt.prim.fn is not np.sum or set(params) != {"axis"} or not isinstance(x, Var):
        return None
    aval, axis = x.aval, params["axis"]
    if aval.ndim != 2 or aval.weak or aval.dtype.name not in ("float64", "float32") \
            or axis not in (0, 1, -1, -2):
        return None
    n = aval.shape[axis % 2]
    made = em.made_by.get(x)
    if (aval.dtype.name == "float32" and n > 4096) or (made and made.prim.fn is np.broadcast_to):
        return None
    ones = ast.Name(em.ones_vector(n, aval.dtype.name))
    return [ones, em.atom(x)] if axis % 2 == 0 else [em.atom(x), ones]


def _ufunc(stmt: Stmt) -> str:
    ufunc = stmt.prim.ufunc
    base, exponent = stmt.args[0], stmt.args[1] if len(stmt.args) > 1 else None
    # not where the exponent decides the dtype (float32 ** np.float64(2.0) is float64)
    if ufunc is np.power and isinstance(exponent, Lit) and np.ndim(exponent.value) == 0 \
            and exponent.value in (2, 0.5) \
            and isinstance(base, Var) and base.aval.dtype == stmt.out.aval.dtype:
        return "square" if exponent.value == 2 else "sqrt"
    return ufunc.__name__


def _where(em, stmt: Stmt, v: Var, target: ast.expr) -> list[ast.stmt]:
    """``np.where(c, a, b)``, which has no out=, into ``target``: ``t = target``, then
    ``xp.copyto(t, b)`` (a number: ``t.fill(b)``) and ``xp.copyto(t, a, where=c)`` (a number:
    the module's 0-d array of it, which copyto would make anew). ``target`` is none of the
    operands' arrays (the plan writes no where over an operand), so ``b`` overwrites no value
    that is read after it."""
    condition, a, b = stmt.args
    name = ast.Name(em.names[v])
    lines = [] if isinstance(target, ast.Name) and target.id == name.id else \
        [ast.Assign([ast.Name(em.names[v])], target, lineno=0)]
    if isinstance(b, Lit):
        lines.append(ast.Expr(ast.Call(ast.Attribute(name, "fill", ast.Load()),
                                       [em.atom(b)], [])))
    else:
        lines.append(ast.Expr(ast.Call(_xp("copyto"), [name, em.atom(b)], [])))
    dtype = v.aval.dtype
    chosen = em.atom(a)
    if isinstance(a, Lit) and em.numbers_in_arrays and dtype.name in _FLOATS \
            and isinstance(a.value, (float, int, np.floating, np.integer)) \
            and not isinstance(a.value, bool) and _exact(a.value, dtype):
        chosen = ast.Name(em.number_array(float(a.value), dtype))
    lines.append(ast.Expr(ast.Call(_xp("copyto"), [name, chosen],
                                   [ast.keyword("where", em.atom(condition))])))
    return lines


def _bind_then(em, stmt: Stmt, v: Var, target: ast.expr) -> list[ast.stmt]:
    """``dW = <array>`` then ``xp.copyto(dW, src)`` or ``dW.fill(c)`` (nothing more: ``np.empty``)."""
    name = ast.Name(em.names[v])
    lines = [] if isinstance(target, ast.Name) and target.id == name.id else \
        [ast.Assign([ast.Name(em.names[v])], target, lineno=0)]
    if em.memory.writes[v] == "empty":
        return lines
    head = em.memory.group[v].head      # a returned gradient's: the value in its first row
    if em.memory.writes[v] == "copy" and head is not None:     # copied from there (buffers.py)
        rest = ast.Subscript(name, ast.Slice(ast.Constant(1), None), ast.Load())
        call = ast.Call(_xp("copyto"), [rest, ast.Name(em.names[head.members[-1]])], [])
    elif em.memory.writes[v] == "copy":
        call = ast.Call(_xp("copyto"), [name, em.atom(stmt.args[0])], [])
    else:
        value = _FILL.get(stmt.prim.fn)
        fill = ast.Constant(value) if value is not None else em.atom(stmt.args[1])
        call = ast.Call(ast.Attribute(name, "fill", ast.Load()), [fill], [])
    return lines + [ast.Expr(call)]
