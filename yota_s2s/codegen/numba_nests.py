"""The numba printer's loop nests: a loop's array statements as scalar loops over known shapes.

numba compiles an array expression (``f = t27 * d / length``) as a loop of its own, built at
compile time through its ufunc machinery: seconds of compile for a loop of a few dozen such
statements, and a temporary array for each operation. ``loop_nests`` writes them, in the
statements numba_form.py moves into a compiled function, as the loops numba would make,
from the shapes the statements' values have (known from the function's arguments, the tape's
values, and the statements before them)::

    # workloads.py:529  f = k * (length - rest) * d / length
    f_1 = xp.empty((15, 2))
    for i0 in range(15):
        t26 = length_1[i0, 0] - rest[i0, 0]
        ...
        for i1 in range(2):
            f_1[i0, i1] = t27 * d_1[i0, i1] / length_1[i0, 0]

- elementwise statements (arithmetic, the math ufuncs, ``x.copy()``, basic slices and
  indices, ``xp.expand_dims``, ``x.reshape`` (C order), numba_calls' zero ``_padN``) over one
  shape are fused into one nest, an operand of size 1 or a number broadcast by its index; a
  value only the nest reads is a number in it, not an array;
- a sum (``x.sum(axis=k)``, ``xp.sum(x)``, and so ``keepdims`` and ``xp.linalg.norm``, which
  numba_calls writes as sums) is a nest of its own that adds into its result;
- ``F[:-1] += f``, ``S[t] = v``, ``dk += v`` write in place, as numpy does.

A part of a statement that is none of these (``@``, a call numba has, a value of unknown shape)
is computed before it into a name of its own, as numpy computes it; a statement whose values
are not all float64 (numba's promotion of float32 is not numpy's), or whose shape is not known,
stays as it is. The value each statement computes is numpy's, element by element; only the
order in which a sum adds its terms can differ (numpy adds pairwise).
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from .numba_shapes import (ARITH, BINARY, UNARY, Shapes, Val, add_at_key, axes_of, bound_names,
                           broadcast, computes, constant, indexed, kept_sum, product_sum,
                           reshape_index, reshaped, rolled, sum_of, xp_name)
from .render import Comment


# -- a value's element ------------------------------------------------------------------------

class NotLowered(Exception):
    """A statement that stays as it is (a value of unknown shape, or not float64)."""


def _fit(shape: tuple[int, ...], outer: tuple[int, ...], index: list[ast.expr]) -> list[ast.expr]:
    """The index of an operand of ``shape`` broadcast to ``outer`` at ``index``."""
    off = len(outer) - len(shape)
    return [ast.Constant(0) if n == 1 else index[off + j] for j, n in enumerate(shape)]


def _plus(index: ast.expr, n: int) -> ast.expr:
    if n == 0:
        return index
    if isinstance(index, ast.Constant):
        return ast.Constant(index.value + n)
    return ast.BinOp(index, ast.Add() if n > 0 else ast.Sub(), ast.Constant(abs(n)))


def _subscript(name: str, index: list[ast.expr]) -> ast.expr:
    if not index:
        return ast.Name(name)
    return ast.Subscript(ast.Name(name), ast.Tuple(index) if len(index) > 1 else index[0])


class Elements:
    """The element of an elementwise value at an index (``at``), and the parts of a value
    computed before it into names of their own (``hoist``)."""

    def __init__(self, shapes: Shapes, fresh):
        self.shapes, self.fresh = shapes, fresh
        self.names: dict[str, str] = {}      # a name -> the array (or number) a nest holds it in
        self.scalars: set[str] = set()       # names a nest holds as numbers

    def at(self, e: ast.expr, index: list[ast.expr]) -> ast.expr:
        if isinstance(e, ast.Constant):
            return ast.Constant(e.value)
        if isinstance(e, ast.Name):
            name = self.names.get(e.id, e.id)
            return ast.Name(name) if name in self.scalars else _subscript(name, index)
        val = self.shapes.of(e)
        if isinstance(e, ast.UnaryOp):
            return ast.UnaryOp(e.op, self._arg(e.operand, val, index))
        if isinstance(e, ast.BinOp):
            return ast.BinOp(self._arg(e.left, val, index), e.op, self._arg(e.right, val, index))
        if isinstance(e, ast.Subscript):
            _, picks = self.shapes.view(e)
            inner, it = [], iter(index)
            for pick in picks:
                inner.append(self.at(pick[1], []) if pick[0] == "at" else _plus(next(it), pick[1]))
            return self.at(e.value, inner)
        if (found := reshaped(e)) is not None:
            inner = reshape_index(self.shapes.of(found[0]).shape, val.shape, index)
            return self.at(found[0], inner)
        name = xp_name(e.func)
        if name in UNARY or name in BINARY:
            return ast.Call(copy.deepcopy(e.func), [self._arg(a, val, index) for a in e.args], [])
        if name == "expand_dims":
            axis = constant(e.args[1]) % len(val.shape)
            return self.at(e.args[0], index[:axis] + index[axis + 1:])
        if isinstance(e.func, ast.Attribute) and e.func.attr == "copy":
            return self.at(e.func.value, index)
        if name == "roll":      # out[..., i, ...] = a[..., (i - shift) % n, ...]
            shift, axis = rolled(e, len(val.shape))
            n = val.shape[axis]
            inner = list(index)
            if n and shift % n:
                inner[axis] = ast.BinOp(_plus(index[axis], n - shift % n), ast.Mod(),
                                        ast.Constant(n))
            return self.at(e.args[0], inner)
        return self._pad(e, index)

    def _arg(self, e: ast.expr, outer: Val, index: list[ast.expr]) -> ast.expr:
        return self.at(e, _fit(self.shapes.of(e).shape, outer.shape, index))

    def _pad(self, e: ast.Call, index: list[ast.expr]) -> ast.expr:
        """``_padN(a, b0, a0, ...)``: a's element where the index is inside it, else 0.0."""
        shape = self.shapes.of(e.args[0]).shape
        widths = [constant(a) for a in e.args[1:]]
        inside, inner = [], []
        for j, (i, n) in enumerate(zip(index, shape)):
            before, after = widths[2 * j], widths[2 * j + 1]
            if before:
                inside.append(ast.Compare(i, [ast.GtE()], [ast.Constant(before)]))
            if after:
                inside.append(ast.Compare(i, [ast.Lt()], [ast.Constant(before + n)]))
            inner.append(_plus(i, -before))
        value = self.at(e.args[0], inner)
        if not inside:
            return value
        test = inside[0] if len(inside) == 1 else ast.BoolOp(ast.And(), inside)
        return ast.IfExp(test, value, ast.Constant(0.0))

    def elementwise(self, e: ast.expr) -> bool:
        """``e``'s node is one ``at`` writes element by element (its operands aside)."""
        if isinstance(e, (ast.Constant, ast.Name, ast.UnaryOp)):
            return not isinstance(e, ast.UnaryOp) or isinstance(e.op, (ast.USub, ast.UAdd))
        if isinstance(e, ast.BinOp):
            return isinstance(e.op, ARITH)
        if isinstance(e, ast.Subscript):
            return self.shapes.view(e) is not None
        if not isinstance(e, ast.Call):
            return False
        name = xp_name(e.func)
        if (name in UNARY or name in BINARY) and not e.keywords:
            return True
        if name in ("expand_dims", "roll") or reshaped(e) is not None or (
                isinstance(e.func, ast.Name) and e.func.id.startswith("_pad")):
            return self.shapes.of(e) is not None
        return isinstance(e.func, ast.Attribute) and e.func.attr == "copy" and not e.args \
            and not e.keywords and xp_name(e.func) is None

    def hoist(self, e: ast.expr, before: list[ast.stmt]) -> ast.expr:
        """``e`` with each part that is not elementwise computed first, into a new name (its
        statement appended to ``before``); NotLowered where a part's shape is unknown or a
        value is not float64."""
        val = self.shapes.of(e)
        if val is None or val.kind == "o" or (val.kind == "i" and val.shape):
            raise NotLowered
        if isinstance(e, (ast.Constant, ast.Name)):
            return e
        if not self.elementwise(e):
            name = self.fresh("r")
            before.append(ast.Assign([ast.Name(name)], e, lineno=0))
            self.shapes.env[name] = val
            return ast.Name(name)
        e = copy.copy(e)
        if isinstance(e, ast.UnaryOp):
            e.operand = self.hoist(e.operand, before)
        elif isinstance(e, ast.BinOp):
            e.left, e.right = self.hoist(e.left, before), self.hoist(e.right, before)
        elif isinstance(e, ast.Subscript):
            e.value = self.hoist(e.value, before)
        elif isinstance(e.func, ast.Attribute) and e.func.attr in ("copy", "reshape") \
                and xp_name(e.func) is None:
            e.func = ast.Attribute(self.hoist(e.func.value, before), e.func.attr)
        else:
            e.args = [self.hoist(e.args[0], before)] + e.args[1:] if xp_name(e.func) not in \
                UNARY | BINARY else [self.hoist(a, before) for a in e.args]
        return e


# -- statements ------------------------------------------------------------------------------

@dataclass
class Write:
    """A statement a nest writes: over ``shape``, ``value``'s elements into ``target`` (with
    ``op``, an augmented assignment), or summed over ``axes`` into the new array ``new``."""

    shape: tuple[int, ...]
    target: ast.expr
    op: ast.operator | None
    value: ast.expr
    new: str | None                  # the name a new array (or number) is bound to
    base: str                        # the array written
    env: dict
    axes: set[int] | None = None     # a sum over these axes
    keep: bool = False
    comments: list = field(default_factory=list)
    gather: bool = False             # xp.add.at(a, key, v): target is a[key], key's rows

    def reads(self) -> set[str]:
        names = {n.id for n in ast.walk(self.value) if isinstance(n, ast.Name)}
        if self.new is None:
            names |= {n.id for n in ast.walk(self.target) if isinstance(n, ast.Name)} - \
                {self.base}
        return names


class Lowering:
    """A compiled loop's statements with their array statements written as loop nests."""

    def __init__(self, env: dict[str, Val | None], used: set[str], known=None, products=True):
        self.used, self.products = set(used), products     # products: small @ as sums
        self.params = set(env)           # (never a number in a nest: numba types them arrays)
        self.shapes = Shapes(env, known)
        self.elements = Elements(self.shapes, self.fresh)
        self.index: list[str] = []

    def fresh(self, prefix: str) -> str:
        k = 0
        while f"{prefix}{k}" in self.used:
            k += 1
        self.used.add(f"{prefix}{k}")
        return f"{prefix}{k}"

    # the statements, each a Write or left as it is
    def block(self, stmts: list[ast.stmt]) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, Comment):
                out.append(stmt)
            elif isinstance(stmt, ast.For):
                out.append(self._loop(stmt))
            else:
                out += self.statement(stmt)
        return out

    def _loop(self, loop: ast.For) -> ast.For:
        env = self.shapes.env
        ranged = isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) \
            and loop.iter.func.id == "range" and isinstance(loop.target, ast.Name)
        if not ranged:
            for name in bound_names([loop]):
                env[name] = None
            return loop
        env[loop.target.id] = Val((), "i")
        for _ in range(4):          # a name the step binds to another shape: not known
            trial = Shapes(dict(env), self.shapes.known)
            bind_all(loop.body, trial)
            changed = [n for n in env if env[n] is not None and trial.env.get(n) != env[n]]
            if not changed:
                break
            for name in changed:
                env[name] = None
        return ast.For(loop.target, loop.iter, self.block(loop.body), [])

    def statement(self, stmt: ast.stmt) -> list:
        try:
            before: list[ast.stmt] = []
            write = self._number(stmt, before) or self._write(stmt, before)
        except NotLowered:
            bind(stmt, self.shapes)
            return [_made(stmt, self.shapes)]
        out = []
        for pre in before:
            out += self.statement(pre)
        if isinstance(write, ast.stmt):
            bind(write, self.shapes)
            return out + [write]
        write.env = dict(self.shapes.env)
        bind(stmt, self.shapes)
        return out + [write]

    def _add_at(self, call: ast.expr, before: list[ast.stmt]) -> Write:
        """``xp.add.at(a, key, v)`` over axis 0 (a fancy index's adds, repeated rows adding
        up): ``a[key[j], ...] += v[j, ...]`` for each j, in order, as numpy adds them."""
        found = add_at_key(call, self.shapes)
        if found is None or not isinstance(call.args[0], ast.Name):
            raise NotLowered
        key, m = found
        a, value = call.args[0], call.args[2]
        into, val = self.shapes.of(a), self.shapes.of(value)
        shape = (m,) + (into.shape[1:] if into is not None else ())
        if into is None or val is None or into.kind != "f" or not into.shape or m == 0 \
                or val.kind == "o" or (val.kind == "i" and val.shape) \
                or broadcast(shape, val.shape) != shape \
                or a.id in _names(value) | _names(key):
            raise NotLowered
        return Write(shape, ast.Subscript(ast.Name(a.id), key), ast.Add(),
                     self.elements.hoist(value, before), None, a.id, {}, gather=True)

    def _number(self, stmt: ast.stmt, before: list[ast.stmt]) -> ast.stmt | None:
        """A number computed from sums (``s = (x * x).sum() + 1.0``): the statement, its sums
        computed before it (as nests); None for any other statement."""
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            return None
        val = self.shapes.of(stmt.value)
        if val is None or val.shape or val.kind != "f" or sum_of(stmt.value) is not None \
                or not self.elements.elementwise(stmt.value) \
                or not any(isinstance(n, ast.Call) and sum_of(n) for n in ast.walk(stmt.value)):
            return None
        return ast.Assign(stmt.targets, self.elements.hoist(stmt.value, before), lineno=0)

    def _write(self, stmt: ast.stmt, before: list[ast.stmt]) -> Write:
        of = self.shapes.of
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
            val = of(value)
            if val is None or val.kind != "f":
                raise NotLowered
            value = self.products and product_sum(value, self.shapes) or value
            summed = kept_sum(value, self.shapes)
            if summed is not None:
                inner, axes, keep = summed
                got = of(inner)
                if got is None or not got.shape or name in _names(inner):
                    raise NotLowered
                return Write(got.shape, ast.Name(name), None,
                             self.elements.hoist(inner, before), name, name, {},
                             axes_of(axes, len(got.shape)), keep)
            if not val.shape or not computes(value) or not self.elements.elementwise(value):
                raise NotLowered
            return Write(val.shape, ast.Name(name), None, self.elements.hoist(value, before),
                         name, name, {})
        if isinstance(stmt, ast.Expr):
            return self._add_at(stmt.value, before)
        if isinstance(stmt, ast.AugAssign):
            target, op, value = stmt.target, stmt.op, stmt.value
            if not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                raise NotLowered
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, op, value = stmt.targets[0], None, stmt.value
        else:
            raise NotLowered
        base = target if isinstance(target, ast.Name) else target.value \
            if isinstance(target, ast.Subscript) else None
        if not isinstance(base, ast.Name) or (op is None and isinstance(target, ast.Name)):
            raise NotLowered
        into, val = of(target), of(value)
        if into is None or val is None or into.kind != "f" or not into.shape \
                or val.kind == "o" or (val.kind == "i" and val.shape) \
                or broadcast(into.shape, val.shape) != into.shape \
                or base.id in _names(value):
            raise NotLowered
        if isinstance(target, ast.Subscript) and self.shapes.view(target) is None:
            raise NotLowered
        return Write(into.shape, target, op, self.elements.hoist(value, before), None,
                     base.id, {})


def _made(stmt: ast.stmt, shapes: Shapes) -> ast.stmt:
    """``stmt``, or where it makes a float64 array of zeros (or not set) of a known shape
    (``xp.zeros_like(x)``), that array as the nests make theirs (``xp.zeros((16, 2))``), which
    numba_hoist.py can make once before the loop."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call):
        how = {"zeros": "zeros", "zeros_like": "zeros", "empty": "empty",
               "empty_like": "empty"}.get(xp_name(stmt.value.func))
        val = shapes.env.get(stmt.targets[0].id)
        if how is not None and val is not None and val.kind == "f" and val.shape:
            return _alloc(stmt.targets[0].id, val.shape, how)
    return stmt


def _names(e: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}


def bind(stmt: ast.stmt, shapes: Shapes) -> None:
    """``shapes`` after ``stmt``: the shape of the name it binds (None: not known)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        shapes.env[stmt.targets[0].id] = shapes.of(stmt.value)
    elif isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
        shapes.env[stmt.target.id] = Val((), "i")
        bind_all(stmt.body, shapes)
    elif isinstance(stmt, (ast.AugAssign, ast.Expr, Comment)) or (
            isinstance(stmt, ast.Assign) and not any(isinstance(t, (ast.Name, ast.Tuple))
                                                     for t in stmt.targets)):
        pass                          # in place: the names keep their shapes
    else:
        for name in bound_names([stmt]):
            shapes.env[name] = None


def bind_all(stmts: list[ast.stmt], shapes: Shapes) -> None:
    for stmt in stmts:
        bind(stmt, shapes)


# -- nests -----------------------------------------------------------------------------------

@dataclass
class Nest:
    """Writes fused into one loop nest over ``shape``, and the comment lines above it."""

    shape: tuple[int, ...]
    writes: list[Write] = field(default_factory=list)
    head: list[Comment] = field(default_factory=list)
    written: set[str] = field(default_factory=set)
    made: set[str] = field(default_factory=set)       # the new arrays' names
    read: set[str] = field(default_factory=set)

    def joins(self, w: Write) -> bool:
        first = self.writes[0]
        if w.axes is not None or first.axes is not None or w.shape != self.shape:
            return False
        reads = w.reads()
        if w.new is None and w.base in self.read | self.written:
            return False
        if w.new is not None and w.new in self.written:
            return False
        again = reads & self.written
        return again <= self.made and not again & indexed(w.value) and all(
            w.env.get(n) is not None and w.env[n].shape == self.shape for n in again)

    def add(self, w: Write, comments: list[Comment]) -> None:
        w.comments = comments
        self.writes.append(w)
        self.read |= w.reads()
        self.written.add(w.base)
        if w.new is not None:
            self.made.add(w.new)


def _group(items: list) -> list:
    """``items`` with consecutive Writes fused into Nests (their comments inside them)."""
    out: list = []
    nest, pending = None, []
    for item in items:
        if isinstance(item, Comment):
            pending.append(item)
            continue
        if isinstance(item, Write) and nest is not None and nest.joins(item):
            nest.add(item, pending)
            pending = []
            continue
        if nest is not None:
            out.append(nest)
            nest = None
        if isinstance(item, Write):
            nest = Nest(item.shape, head=pending)
            nest.add(item, [])
        else:
            if isinstance(item, ast.For):
                item = ast.For(item.target, item.iter, _group(item.body), [])
            out += pending + [item]
        pending = []
    return out + ([nest] if nest is not None else []) + pending


def _loads(items: list, counts: dict[str, int]) -> None:
    """Count the names each item reads (a nest's new names also count where the function
    returns them)."""
    for item in items:
        if isinstance(item, Nest):
            for w in item.writes:
                for n in ast.walk(w.value):
                    if isinstance(n, ast.Name):
                        counts[n.id] = counts.get(n.id, 0) + 1
                if w.new is None:
                    for n in ast.walk(w.target):
                        if isinstance(n, ast.Name):
                            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(item, ast.For):
            for n in ast.walk(item.iter):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
            _loads(item.body, counts)
        elif not isinstance(item, Comment):
            targets = item.targets if isinstance(item, ast.Assign) else []
            stores = {id(e) for t in targets
                      for e in (t.elts if isinstance(t, ast.Tuple) else [t])}
            for n in ast.walk(item):
                if isinstance(n, ast.Name) and id(n) not in stores:
                    counts[n.id] = counts.get(n.id, 0) + 1


class Printer:
    """The nests' statements."""

    def __init__(self, lowering: Lowering, counts: dict[str, int]):
        self.lowering, self.counts = lowering, counts

    def items(self, items: list) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for item in items:
            if isinstance(item, Nest):
                out += item.head + self.nest(item)
            elif isinstance(item, ast.For):
                out.append(ast.For(item.target, item.iter, self.items(item.body), []))
            else:
                out.append(item)
        return out

    def _index(self, depth: int) -> str:
        while len(self.lowering.index) <= depth:
            self.lowering.index.append(self.lowering.fresh("i"))
        return self.lowering.index[depth]

    def nest(self, nest: Nest) -> list[ast.stmt]:
        elements = self.lowering.elements
        elements.names, elements.scalars = {}, set()
        inside: dict[str, int] = {}
        _loads([Nest(nest.shape, nest.writes)], inside)
        index, loops = [], []
        for n in nest.shape:
            if n == 1:
                index.append(ast.Constant(0))
            else:
                loops.append((self._index(len(loops)), n))
                index.append(ast.Name(loops[-1][0]))
        before, body, after, seen = [], [], [], set()
        for w in nest.writes:
            elements.shapes.env = w.env
            seen |= w.reads()
            value = elements.at(w.value, _fit(elements.shapes.of(w.value).shape, w.shape, index))
            body += w.comments
            if w.axes is not None:
                before.append(self._sum(w, index, body, value))
                continue
            if w.new is None:
                target = _gathered(w, index) if w.gather else elements.at(w.target, index)
                body.append(ast.AugAssign(target, w.op, value) if w.op is not None
                            else ast.Assign([target], value, lineno=0))
                continue
            out = w.new
            if w.new in seen:               # read before: the new array has a name of its own
                out = self.lowering.fresh(w.new + "_")
                after.append(ast.Assign([ast.Name(w.new)], ast.Name(out), lineno=0))
            elif self.counts.get(w.new, 0) == inside.get(w.new, 0) \
                    and w.new not in self.lowering.params:
                elements.scalars.add(out)   # only this nest reads it: a number
            if out not in elements.scalars:
                before.append(_alloc(out, w.shape, "empty"))
            body.append(ast.Assign([_subscript(out, [] if out in elements.scalars else index)],
                                   value, lineno=0))
            elements.names[w.new] = out
        for name, n in reversed(loops):
            body = [ast.For(ast.Name(name), ast.Call(ast.Name("range"), [ast.Constant(n)], []),
                            body, [])]
        return before + body + after

    def _sum(self, w: Write, index: list[ast.expr], body: list, value: ast.expr) -> ast.stmt:
        kept = [ast.Constant(0) if j in w.axes else i for j, i in enumerate(index)
                if w.keep or j not in w.axes]
        shape = tuple(1 if j in w.axes else n for j, n in enumerate(w.shape)
                      if w.keep or j not in w.axes)
        body.append(ast.AugAssign(_subscript(w.new, kept), ast.Add(), value))
        if not shape:
            return ast.Assign([ast.Name(w.new)], ast.Constant(0.0), lineno=0)
        return _alloc(w.new, shape, "zeros")


def _gathered(w: Write, index: list[ast.expr]) -> ast.expr:
    """``a[key[j], i1, ...]``: the element xp.add.at adds row j of its value into."""
    key = w.target.slice
    row = key.elts[index[0].value] if isinstance(index[0], ast.Constant) and \
        isinstance(key, ast.Tuple) else ast.Subscript(copy.deepcopy(key), index[0])
    return _subscript(w.base, [row] + index[1:])


def _alloc(name: str, shape: tuple[int, ...], how: str) -> ast.stmt:
    dims = ast.Tuple([ast.Constant(n) for n in shape])
    return ast.Assign([ast.Name(name)], ast.Call(ast.Attribute(ast.Name("xp"), how), [dims], []),
                      lineno=0)


def loop_nests(nodes: list[ast.stmt], env: dict[str, Val | None], results: list[str],
               known: dict | None = None) -> tuple[list[ast.stmt], list[str]]:
    """A loop's ``nodes`` as nests, and the nests' index names (each nest binds them before it
    reads them: free for another nest); ``env``: its names' shapes; ``results``: the names
    returned; ``known``: Shapes'."""
    lowering, items, counts = fused_groups(nodes, env, results, known)
    return Printer(lowering, counts).items(items), lowering.index


def fused_groups(nodes: list[ast.stmt], env: dict[str, Val | None], results: list[str],
                 known: dict | None = None, products: bool = True) -> tuple[Lowering, list, dict]:
    """Both fused printers' grouping (these nests, cupy_form's kernels): the Lowering, the items
    (Nests), each name's reads; ``known``: Shapes'; ``products``: small ``@`` as sums."""
    used = {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}
    lowering = Lowering(dict(env), used | set(env), known, products)
    items = _group(lowering.block(nodes))
    counts = {r: 1 for r in results}
    _loads(items, counts)
    return lowering, items, counts
