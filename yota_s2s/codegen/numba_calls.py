"""The numpy calls of a loop that numba does not take as they are, written in a form it takes.

numba compiles most of what the plain form writes (``xp.tanh``, ``@``, ``x.sum(axis=0)``,
slices, ``F[:-1] += f``), but not every keyword of every call. ``numba_forms`` rewrites, in the
statements of a loop numba_form.py moves into a compiled function:

- ``xp.diff(a, axis=k)``                      -> ``a[:, 1:] - a[:, :-1]``  (the slices of axis k)
- ``x.sum(axis=k, keepdims=True)``            -> ``xp.expand_dims(x.sum(axis=k), k)``
- ``xp.linalg.norm(d, axis=k[, keepdims])``   -> ``xp.sqrt((d * d).sum(axis=k))`` (real d)
- ``xp.pad(a, ((1, 0), (0, 0)))`` (zeros)     -> ``_pad2(a, 1, 0, 0, 0)``, a loop-free function
  written once in the module (``pad_helper``): a zero array with ``a`` in its middle.
- ``reversed(range(trips))`` (a while's unwind) -> ``range(trips - 1, -1, -1)``
- ``xp.clip(a, lo, hi)``                      -> ``xp.minimum(xp.maximum(a, lo), hi)`` (numpy's
  definition; numba's ``clip`` takes arrays only, not a number such as a step-size factor)

A call none of these match is left as it is; numba then compiles it or refuses the loop
(numba_form.check_loops).
"""
from __future__ import annotations

import ast
import copy

from .render import Comment

# a numba function of the module: cached beside it; a number divided by zero is inf or nan, as
# numpy makes it (numba's default raises ZeroDivisionError in a loop nest's scalar code)
DECORATOR = '@numba.njit(cache=True, error_model="numpy")'


def numba_forms(nodes: list[ast.stmt], helpers: set[int]) -> list[ast.stmt]:
    """A copy of ``nodes`` with the calls above rewritten; ``helpers`` gets the number of
    dimensions of each ``_padN`` the copy calls."""
    rewriter = _Rewriter(helpers)
    # (a comment line is kept as it is: it has no fields to copy)
    memo = {id(n): n for node in nodes for n in ast.walk(node) if isinstance(n, Comment)}
    return [rewriter.visit(node) for node in copy.deepcopy(nodes, memo)]


# calls numba compiles and then refuses at run time, or for some values only, where numpy
# computes them: a function that makes one stays numpy, for this reason
RUNTIME_REFUSALS = {
    "eig": "numba's np.linalg.eig of a real matrix raises at run time where its eigenvalues are "
           "complex (numpy returns them complex)",
    "nuc": "numba's np.linalg.norm has no ord='nuc' (it raises at run time)",
}


def runtime_refusal(nodes: list[ast.stmt]) -> str | None:
    """Why numba would fail at run time on a statement of ``nodes`` (``RUNTIME_REFUSALS``), or
    None."""
    for node in nodes:
        for n in ast.walk(node):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "linalg"):
                continue
            if n.func.attr in ("eig", "eigvals"):
                return RUNTIME_REFUSALS["eig"]
            order = [k.value for k in n.keywords if k.arg == "ord"] + n.args[1:2]
            if n.func.attr == "norm" and any(_constant(o) == "nuc" for o in order):
                return RUNTIME_REFUSALS["nuc"]
    return None


def pad_helper(ndim: int) -> str:
    """``_padN``: ``xp.pad`` with zeros for an array of ``ndim`` dimensions, as numba takes it."""
    widths = [f"b{i}, a{i}" for i in range(ndim)]
    shape = ", ".join(f"x.shape[{i}] + b{i} + a{i}" for i in range(ndim)) + \
        ("," if ndim == 1 else "")
    middle = ", ".join(f"b{i}:b{i} + x.shape[{i}]" for i in range(ndim))
    return (f"\n{DECORATOR}\ndef _pad{ndim}(x, {', '.join(widths)}):\n"
            f"    # xp.pad(x, ((b0, a0), ...)) with zeros\n"
            f"    out = xp.zeros(({shape}), x.dtype)\n"
            f"    out[{middle}] = x\n"
            f"    return out\n")


def _keyword(call: ast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _constant(node) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    return None


def _is(func: ast.expr, *path: str) -> bool:
    """``func`` is the dotted name ``path`` (``xp.linalg.norm``)."""
    for name in reversed(path[1:]):
        if not isinstance(func, ast.Attribute) or func.attr != name:
            return False
        func = func.value
    return isinstance(func, ast.Name) and func.id == path[0]


def _only(call: ast.Call, *allowed: str) -> bool:
    return all(k.arg in allowed for k in call.keywords)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, helpers: set[int]):
        self.helpers = helpers

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        for form in (self._diff, self._keepdims_sum, self._norm, self._pad, self._reversed,
                     self._clip):
            new = form(node)
            if new is not None:
                return new
        return node

    @staticmethod
    def _reversed(call: ast.Call) -> ast.expr | None:
        """``reversed(range(n))`` (a while's unwind, codegen/whiles.py) as numba takes it."""
        if not (isinstance(call.func, ast.Name) and call.func.id == "reversed"
                and len(call.args) == 1 and not call.keywords
                and isinstance(call.args[0], ast.Call) and isinstance(call.args[0].func, ast.Name)
                and call.args[0].func.id == "range" and len(call.args[0].args) == 1):
            return None
        count = call.args[0].args[0]
        minus_one = ast.UnaryOp(ast.USub(), ast.Constant(1))
        return ast.Call(ast.Name("range", ast.Load()), [
            ast.BinOp(count, ast.Sub(), ast.Constant(1)), minus_one, minus_one], [])

    @staticmethod
    def _clip(call: ast.Call) -> ast.expr | None:
        if not _is(call.func, "xp", "clip") or len(call.args) != 3 or call.keywords \
                or any(isinstance(bound, ast.Constant) and bound.value is None
                       for bound in call.args[1:]):
            return None
        a, lo, hi = call.args
        above = ast.Call(ast.Attribute(ast.Name("xp"), "maximum"), [a, lo], [])
        return ast.Call(ast.Attribute(ast.Name("xp"), "minimum"), [above, hi], [])

    @staticmethod
    def _diff(call: ast.Call) -> ast.expr | None:
        if not _is(call.func, "xp", "diff") or len(call.args) != 1 or not _only(call, "axis"):
            return None
        axis = _constant(_keyword(call, "axis")) if _keyword(call, "axis") is not None else -1
        if not isinstance(axis, int):
            return None
        a = call.args[0]

        def part(lower, upper) -> ast.expr:
            cut = ast.Slice(lower, upper, None)
            if axis < 0:
                key = [ast.Constant(Ellipsis), cut] + [ast.Slice(None, None, None)] * (-axis - 1)
            else:
                key = [ast.Slice(None, None, None)] * axis + [cut]
            return ast.Subscript(copy.deepcopy(a), ast.Tuple(key) if len(key) > 1 else key[0])
        return ast.BinOp(part(ast.Constant(1), None), ast.Sub(),
                         part(None, ast.UnaryOp(ast.USub(), ast.Constant(1))))

    @staticmethod
    def _keepdims_sum(call: ast.Call) -> ast.expr | None:
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "sum") \
                or call.args or not _only(call, "axis", "keepdims") \
                or _constant(_keyword(call, "keepdims")) is not True:
            return None
        axis = _keyword(call, "axis")
        if not isinstance(_constant(axis), int):
            return None
        summed = ast.Call(call.func, [], [ast.keyword("axis", axis)])
        return _expand(summed, axis)

    @staticmethod
    def _norm(call: ast.Call) -> ast.expr | None:
        if not _is(call.func, "xp", "linalg", "norm") or len(call.args) != 1 \
                or not _only(call, "axis", "keepdims"):
            return None
        axis = _keyword(call, "axis")
        if not isinstance(_constant(axis), int):
            return None
        d = call.args[0]
        squares = ast.BinOp(d, ast.Mult(), copy.deepcopy(d))
        summed = ast.Call(ast.Attribute(squares, "sum"), [], [ast.keyword("axis", axis)])
        root = ast.Call(ast.Attribute(ast.Name("xp"), "sqrt"), [summed], [])
        return _expand(root, axis) if _constant(_keyword(call, "keepdims")) is True else root

    def _pad(self, call: ast.Call) -> ast.expr | None:
        if not _is(call.func, "xp", "pad") or len(call.args) != 2 or call.keywords:
            return None
        widths = _literal(call.args[1])
        if not (isinstance(widths, tuple) and widths and all(
                isinstance(w, tuple) and len(w) == 2 and all(type(n) is int for n in w)
                for w in widths)):
            return None
        self.helpers.add(len(widths))
        return ast.Call(ast.Name(f"_pad{len(widths)}"),
                        [call.args[0]] + [ast.Constant(n) for w in widths for n in w], [])


def _expand(value: ast.expr, axis: ast.expr) -> ast.expr:
    return ast.Call(ast.Attribute(ast.Name("xp"), "expand_dims"), [value, copy.deepcopy(axis)], [])


def _literal(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None
