"""What the numba printer's loop nests know of a value: its shape and kind (numba_nests.py).

``Shapes.of`` follows a compiled loop's statements from the shapes of the names it takes (the
tape's values): arithmetic broadcasts, a basic index (``x[1:]``, ``S[t]``, ``x[-1]``) takes its
part, ``x.sum(axis=k)`` drops axis k, ``xp.expand_dims``, ``_padN``, ``x.T``, ``xp.roll``,
``@`` of matrices and vectors, ``xp.zeros((m, n))``; any other value's shape is not known (None).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

# xp.<name>(x) on a number, as numba takes it on an array's element
UNARY = {"tanh", "exp", "log", "sqrt", "sin", "cos", "tan", "abs", "absolute", "negative",
         "log1p", "expm1", "arctan", "arcsin", "arccos", "sinh", "cosh", "arctanh",
         "arcsinh", "arccosh", "log2", "log10", "exp2", "square", "reciprocal"}
BINARY = {"maximum", "minimum", "arctan2", "hypot"}
ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


@dataclass(frozen=True)
class Val:
    """What is known of a value: its ``shape`` and ``kind``: "f" float64, "i" an integer, "o"
    anything else (float32, complex, bool: left to numpy)."""

    shape: tuple[int, ...]
    kind: str


def kind_of(dtype) -> str:
    dtype = np.dtype(dtype)
    return "f" if dtype == np.float64 else "i" if dtype.kind in "iu" else "o"


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def constant(node: ast.expr):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return -node.operand.value
    return None


def xp_name(func: ast.expr) -> str | None:
    """``name`` where ``func`` is ``xp.name``."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id == "xp":
        return func.attr
    return None


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


# -- what a value is: its shape and kind ----------------------------------------------------

class Shapes:
    """The shapes of a function's names, statement by statement (``env``: a name -> its Val,
    None where not known; ``known``: a name's Val wherever it is bound, where the statements
    do not tell it: a name bound once, from the tape)."""

    def __init__(self, env: dict[str, Val | None], known: dict[str, Val] | None = None):
        self.env, self.known = env, known or {}

    def of(self, e: ast.expr) -> Val | None:
        if isinstance(e, ast.Constant):
            t = type(e.value)
            return Val((), "f" if t is float else "i" if t is int else "o")
        if isinstance(e, ast.Name):
            got = self.env.get(e.id)
            return got if got is not None else self.known.get(e.id)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.of(e.operand)
        if isinstance(e, ast.BinOp):
            return self._binop(e)
        if isinstance(e, ast.Subscript):
            view = self.view(e)
            return None if view is None else view[0]
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.Attribute) and e.attr == "T":
            got = self.of(e.value)
            return None if got is None else Val(got.shape[::-1], got.kind)
        return None

    def _binop(self, e: ast.BinOp) -> Val | None:
        a, b = self.of(e.left), self.of(e.right)
        if a is None or b is None:
            return None
        if isinstance(e.op, ast.MatMult):
            return _matmul(a, b)
        shape = broadcast(a.shape, b.shape)
        if shape is None:
            return None
        if "o" in (a.kind, b.kind):
            kind = "o"
        elif a.kind == b.kind == "i" and not isinstance(e.op, (ast.Div, ast.Pow)):
            kind = "i"
        elif isinstance(e.op, ARITH):
            kind = "f"
        else:
            kind = "o"
        return Val(shape, kind)

    def view(self, e: ast.Subscript) -> tuple[Val, list] | None:
        """A basic index's value and, for each dimension of its base, what it takes: an
        ``("at", expr)`` index or a ``("from", start, size)`` slice (step 1)."""
        base = self.of(e.value)
        if base is None or not base.shape:
            return None
        keys = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        if len(keys) > len(base.shape):
            return None
        picks, shape = [], []
        for key, n in zip(keys, base.shape):
            if isinstance(key, ast.Slice):
                if key.step is not None:
                    return None
                lo, hi = (constant(key.lower) if key.lower is not None else 0,
                          constant(key.upper) if key.upper is not None else n)
                if type(lo) is not int or type(hi) is not int:
                    return None
                lo, hi = slice(lo, hi).indices(n)[:2]
                picks.append(("from", lo, max(hi - lo, 0)))
                shape.append(max(hi - lo, 0))
                continue
            got = self.of(key)
            if got is None or got.shape or got.kind != "i":
                return None
            at = constant(key)
            if type(at) is int:
                if not -n <= at < n:
                    return None
                key = ast.Constant(at % n)
            picks.append(("at", key))
        for n in base.shape[len(keys):]:
            picks.append(("from", 0, n))
            shape.append(n)
        return Val(tuple(shape), base.kind), picks

    def _call(self, e: ast.Call) -> Val | None:
        name = xp_name(e.func)
        if name in ("zeros", "empty", "ones") and len(e.args) == 1 and not e.keywords:
            shape = _shape_literal(e.args[0])      # (its argument is a shape, not a value)
            return None if shape is None else Val(shape, "f")
        found = reshaped(e)
        if found is not None and (got := self.of(found[0])) is not None:
            shape, size = found[1], int(np.prod(got.shape))
            rest = int(np.prod([n for n in shape if n != -1]))
            if shape.count(-1) == 1 and rest and size % rest == 0:
                shape = tuple(size // rest if n == -1 else n for n in shape)
            if int(np.prod(shape)) == size and min(shape, default=0) >= 0:
                return Val(shape, got.kind)
            return None
        args = [self.of(a) for a in e.args]
        if any(a is None for a in args):
            return None
        if name in UNARY and len(args) == 1 and not e.keywords:
            return Val(args[0].shape, "f" if args[0].kind in "fi" else "o")
        if name in BINARY and len(args) == 2 and not e.keywords:
            shape = broadcast(args[0].shape, args[1].shape)
            kind = "f" if {args[0].kind, args[1].kind} <= {"f", "i"} else "o"
            return None if shape is None else Val(shape, kind)
        if name == "expand_dims" and len(args) == 2 and type(constant(e.args[1])) is int:
            shape = list(args[0].shape)
            axis = constant(e.args[1]) % (len(shape) + 1)
            return Val(tuple(shape[:axis] + [1] + shape[axis:]), args[0].kind)
        if name == "roll" and rolled(e, len(args[0].shape)) is not None:
            return args[0]
        if name in ("zeros_like", "empty_like", "ones_like") and len(args) == 1 \
                and not e.keywords:
            return args[0]
        if isinstance(e.func, ast.Name) and e.func.id.startswith("_pad") and args:
            widths = [constant(a) for a in e.args[1:]]
            if len(widths) != 2 * len(args[0].shape) or any(type(w) is not int for w in widths):
                return None
            return Val(tuple(n + widths[2 * i] + widths[2 * i + 1]
                             for i, n in enumerate(args[0].shape)), args[0].kind)
        summed = sum_of(e)
        if summed is not None:
            value, axes, keep = summed
            got = self.of(value)
            if got is None or (axes := axes_of(axes, len(got.shape))) is None:
                return None
            shape = tuple(1 if i in axes else n for i, n in enumerate(got.shape)
                          if keep or i not in axes)
            return Val(shape, got.kind)
        if isinstance(e.func, ast.Attribute) and e.func.attr == "copy" and not e.args:
            return self.of(e.func.value)
        return None


def _matmul(a: Val, b: Val) -> Val | None:
    if not a.shape or not b.shape or len(a.shape) > 2 or len(b.shape) > 2:
        return None
    if a.shape[-1] != b.shape[0]:
        return None
    kind = "f" if a.kind == b.kind == "f" else "o"
    return Val(a.shape[:-1] + b.shape[1:], kind)


def _shape_literal(e: ast.expr) -> tuple[int, ...] | None:
    try:
        shape = ast.literal_eval(e)
    except ValueError:
        return None
    shape = (shape,) if type(shape) is int else shape
    if isinstance(shape, tuple) and all(type(n) is int and n >= 0 for n in shape):
        return shape
    return None


def reshaped(e: ast.expr) -> tuple[ast.expr, tuple[int, ...]] | None:
    """``x.reshape(shape)`` or ``xp.reshape(x, shape)`` with a literal shape (C order): (x, the
    shape, -1 as written); None for any other value."""
    if not isinstance(e, ast.Call) or e.keywords:
        return None
    if isinstance(e.func, ast.Attribute) and e.func.attr == "reshape" and xp_name(e.func) is None:
        value, args = e.func.value, e.args
    elif xp_name(e.func) == "reshape" and len(e.args) == 2:
        value, args = e.args[0], e.args[1:]
    else:
        return None
    try:
        shape = tuple(ast.literal_eval(a) for a in args)
    except ValueError:
        return None
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
    if not all(type(n) is int and n >= -1 for n in shape):
        return None
    return value, shape


def reshape_index(old: tuple[int, ...], new: tuple[int, ...],
                  index: list[ast.expr]) -> list[ast.expr]:
    """The index into an array of shape ``old`` of the element ``index`` of its reshape to
    ``new`` (C order): the same index where the two differ by dimensions of 1 only, else
    the element's place in C order (``i0 * 6 + i1``) divided out again."""
    if [n for n in old if n != 1] == [n for n in new if n != 1]:
        it = iter(i for i, n in zip(index, new) if n != 1)
        return [ast.Constant(0) if n == 1 else next(it) for n in old]
    flat, stride = None, 1
    for i, n in reversed(list(zip(index, new))):
        if n != 1:
            term = i if stride == 1 else ast.BinOp(i, ast.Mult(), ast.Constant(stride))
            flat = term if flat is None else ast.BinOp(term, ast.Add(), flat)
        stride *= n
    out, stride = [], int(np.prod(old))
    for j, n in enumerate(old):
        stride //= max(n, 1)
        at = flat if stride == 1 else ast.BinOp(flat, ast.FloorDiv(), ast.Constant(stride))
        out.append(ast.Constant(0) if n == 1 else
                   at if j == 0 else ast.BinOp(at, ast.Mod(), ast.Constant(n)))
    return out


def sum_of(e: ast.expr) -> tuple[ast.expr, object, bool] | None:
    """``x.sum(axis=..., keepdims=...)`` or ``xp.sum(x, ...)``: (x, the axis (None: all),
    keepdims); None for any other value."""
    if not isinstance(e, ast.Call) or not set(k.arg for k in e.keywords) <= {"axis", "keepdims"}:
        return None
    if isinstance(e.func, ast.Attribute) and e.func.attr == "sum" and not e.args \
            and xp_name(e.func) is None:
        value = e.func.value
    elif xp_name(e.func) == "sum" and len(e.args) == 1:
        value = e.args[0]
    else:
        return None
    axis = _keyword(e, "axis")
    keep = _keyword(e, "keepdims")
    if keep is not None and type(constant(keep)) is not bool:
        return None
    try:
        axes = None if axis is None else ast.literal_eval(axis)
    except ValueError:
        return None
    return value, (axes if axes is not None else "all"), bool(keep is not None and constant(keep))


def axes_of(axes, ndim: int) -> set[int] | None:
    if axes == "all":
        return set(range(ndim))
    axes = (axes,) if type(axes) is int else axes
    if not isinstance(axes, tuple) or any(type(a) is not int or not -ndim <= a < ndim
                                          for a in axes):
        return None
    return {a % ndim for a in axes}


def rolled(e: ast.Call, ndim: int) -> tuple[int, int] | None:
    """``xp.roll(a, shift, axis=k)`` with constants: (shift, k) with k in 0..ndim-1; None for any
    other call."""
    if xp_name(e.func) != "roll" or len(e.args) != 2 or [k.arg for k in e.keywords] != ["axis"]:
        return None
    shift, axis = constant(e.args[1]), constant(e.keywords[0].value)
    if type(shift) is not int or type(axis) is not int or not -ndim <= axis < ndim:
        return None
    return shift, axis % ndim


# -- what a statement does, as the nests ask it ----------------------------------------------

def add_at_key(call: ast.expr, shapes: Shapes) -> tuple[ast.expr, int] | None:
    """``xp.add.at(a, key, v)`` with ``key`` a list of int constants or a 1-d int array: the
    key as a nest indexes it (a tuple of the constants, or the array) and its length."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "at" and xp_name(call.func.value) == "add"
            and len(call.args) == 3 and not call.keywords):
        return None
    key = call.args[1]
    if isinstance(key, ast.List) and key.elts and all(type(constant(e)) is int
                                                      for e in key.elts):
        return ast.Tuple([ast.Constant(constant(e)) for e in key.elts]), len(key.elts)
    got = shapes.of(key) if isinstance(key, ast.Name) else None
    if got is not None and got.kind == "i" and len(got.shape) == 1:
        return key, got.shape[0]
    return None


def kept_sum(value: ast.expr, shapes: Shapes) -> tuple[ast.expr, object, bool] | None:
    """``value``'s sum as ``sum_of`` finds it, also written ``xp.expand_dims(x.sum(axis=k),
    k)`` (numba_calls' form of ``keepdims=True``): a sum that keeps its axis."""
    if not isinstance(value, ast.Call):
        return None
    if xp_name(value.func) == "expand_dims" and len(value.args) == 2 \
            and isinstance(value.args[0], ast.Call):
        summed = sum_of(value.args[0])
        inner = summed and shapes.of(summed[0])
        axis = constant(value.args[1])
        if summed is None or inner is None or summed[2] or type(axis) is not int:
            return None
        axes = axes_of(summed[1], len(inner.shape))
        if axes is None or axes != {axis % len(inner.shape)}:
            return None
        return summed[0], summed[1], True
    return sum_of(value)


# a product ``a @ b`` of float64 matrices or vectors is a loop nest (a sum of products) where it
# has at most this many multiply-adds, or 4 times as many with one row or column (a vector
# times a matrix): numba's @ calls BLAS, about 0.3 us a call whatever the size; measured on
# this machine, the nest takes 0.09 us for 1x16 @ 16x16, BLAS's time at 4x16 @ 16x16 and at
# 1x64 @ 64x64, 2.6x BLAS's at 16x16 @ 16x16
SMALL_PRODUCT = 1024


def product_sum(e: ast.expr, shapes: Shapes) -> ast.expr | None:
    """A small ``a @ b`` (``SMALL_PRODUCT``) as the sum of products that the nests write:
    ``(xp.expand_dims(a, 2) * xp.expand_dims(b, 0)).sum(axis=1)`` for matrices (the nest
    runs over i, k, j: b's rows read in order), ``(a * b).sum(axis=1)`` for a matrix times a
    vector; None for any other value."""
    if not (isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult)):
        return None
    a, b = shapes.of(e.left), shapes.of(e.right)
    if a is None or b is None or a.kind != "f" or b.kind != "f" or _matmul(a, b) is None:
        return None
    m = a.shape[0] if len(a.shape) == 2 else 1
    n = b.shape[1] if len(b.shape) == 2 else 1
    adds = m * a.shape[-1] * n
    if adds > SMALL_PRODUCT * (4 if 1 in (m, n) else 1):
        return None

    def expand(x: ast.expr, axis: int) -> ast.expr:
        return ast.Call(ast.Attribute(ast.Name("xp"), "expand_dims"), [x, ast.Constant(axis)], [])
    left = expand(e.left, len(a.shape)) if len(b.shape) == 2 else e.left
    right = expand(e.right, 0) if len(a.shape) == 2 and len(b.shape) == 2 else e.right
    axis = [] if len(a.shape) == len(b.shape) == 1 else \
        [ast.keyword("axis", ast.Constant(len(a.shape) - 1))]
    return ast.Call(ast.Attribute(ast.BinOp(left, ast.Mult(), right), "sum"), [], axis)


def computes(e: ast.expr) -> bool:
    """``e`` computes new values (numpy makes a new array), not only a view of an array."""
    for n in ast.walk(e):
        if isinstance(n, (ast.BinOp, ast.UnaryOp)):
            return True
        if isinstance(n, ast.Call) and (xp_name(n.func) in UNARY | BINARY | {"roll"} or (
                isinstance(n.func, ast.Attribute) and n.func.attr == "copy")
                or (isinstance(n.func, ast.Name) and n.func.id.startswith("_pad"))):
            return True
    return False


def indexed(value: ast.expr) -> set[str]:
    """The names ``value`` reads at another index than its own (sliced, indexed, padded)."""
    out = set()
    for n in ast.walk(value):
        inner = n.value if isinstance(n, ast.Subscript) else n.args[0] if isinstance(
            n, ast.Call) and n.args and (xp_name(n.func) in ("expand_dims", "roll") or (
                isinstance(n.func, ast.Name) and n.func.id.startswith("_pad"))) else None
        if inner is not None:
            out |= {m.id for m in ast.walk(inner) if isinstance(m, ast.Name)}
    return out


def bound_names(stmts: list[ast.stmt]) -> set[str]:
    """The names the statements bind (assignments, augmented ones, for targets)."""
    out = set()
    for stmt in stmts:
        for n in ast.walk(stmt):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] \
                if isinstance(n, (ast.For, ast.AugAssign)) else []
            for t in targets:
                out |= {e.id for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                        if isinstance(e, ast.Name)}
    return out
