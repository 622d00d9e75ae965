"""Expressions for the partial evaluator (mixed into ``Evaluator``).

One ``visit_<Node>`` per gast expression node. Operators on static values are computed in
Python; on traced values they become the operator primitives (``+`` -> ``add``). Attribute and
index access on arrays become primitives or static facts (``x.shape``); on containers and
modules they are ordinary Python.
"""
from __future__ import annotations

import operator
import types
from typing import Any

import gast
import numpy as np

from ..errors import StaticValueError, YotaError
from ..ir.tape import Lit, Var
from .externals import GeneratorRef, RandomMethod, module_root
from .resolve import ARRAY_METHODS, IN_PLACE_METHODS, LIBRARY_MODULES, STATIC_ARRAY_ATTRS
from .structs import StructValue, call_dunder, get_attribute
from .values import ArrayMethod, is_traced, python_numbers, to_tree

# Operators whose Python semantics on Python floats differ from numpy's (ZeroDivisionError,
# OverflowError, a complex power) where numpy gives inf or nan.
NUMPY_SEMANTICS = (operator.truediv, operator.pow, operator.floordiv, operator.mod)
BINOP_FNS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
             gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
             gast.Pow: operator.pow, gast.MatMult: operator.matmul, gast.BitAnd: operator.and_,
             gast.BitOr: operator.or_, gast.BitXor: operator.xor, gast.LShift: operator.lshift,
             gast.RShift: operator.rshift}
BINOP_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//",
                 gast.Mod: "%", gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&",
                 gast.BitOr: "|", gast.BitXor: "^", gast.LShift: "<<", gast.RShift: ">>"}
CMP_FNS = {gast.Lt: operator.lt, gast.LtE: operator.le, gast.Gt: operator.gt,
           gast.GtE: operator.ge, gast.Eq: operator.eq, gast.NotEq: operator.ne}


class ExpressionsMixin:
    def expr(self, node: gast.expr) -> Any:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.unsupported(node, f"`{type(node).__name__}` expressions are not supported")
        return method(node)

    # -- leaves --------------------------------------------------------------------------

    def visit_Constant(self, node: gast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: gast.Name) -> Any:
        return self.lookup(node.id, node)

    def visit_NamedExpr(self, node: gast.NamedExpr) -> Any:
        value = self.expr(node.value)
        self.assign(node.target, value)
        return value

    def visit_Yield(self, node: gast.Yield) -> Any:
        yields = self._yields(node, "`yield`")
        yields.append(None if node.value is None else self.expr(node.value))
        return None                     # what send() would give: nothing is sent

    def visit_YieldFrom(self, node: gast.YieldFrom) -> Any:
        yields = self._yields(node, "`yield from`")
        yields.extend(self.iterate(self.expr(node.value), node))
        return None

    def _yields(self, node: gast.AST, what: str) -> list:
        """The list the enclosing generator function collects its yielded values in."""
        frame = self.frame
        while frame is not None and getattr(frame, "yields", None) is None:
            frame = frame.parent
        if frame is None:
            raise self.unsupported(node, f"{what} outside a generator function")
        return frame.yields

    def visit_Lambda(self, node: gast.Lambda) -> Any:
        return self.make_local_function(node, "<lambda>")

    def visit_JoinedStr(self, node: gast.JoinedStr) -> str:
        parts = []
        for value in node.values:
            v = self.expr(value)
            if is_traced(v):
                raise StaticValueError("an f-string of a traced value", self.loc(node),
                                       "Strings are computed at compile time; format shapes, "
                                       "not values. To print a value as each call computes it, "
                                       "pass it to print: print(\"x =\", x).")
            parts.append(v)
        return "".join(parts)

    def visit_FormattedValue(self, node: gast.FormattedValue) -> Any:
        value = self.expr(node.value)
        if is_traced(value):
            return value
        spec = self.expr(node.format_spec) if node.format_spec is not None else ""
        conv = {115: str, 114: repr, 97: ascii}.get(node.conversion, lambda v: v)
        return format(conv(value), spec)

    # -- containers ----------------------------------------------------------------------

    def elements(self, nodes: list[gast.expr]) -> list:
        items = []
        for n in nodes:
            if isinstance(n, gast.Starred):
                items.extend(self.iterate(self.expr(n.value), n))
            else:
                items.append(self.expr(n))
        return items

    def visit_Tuple(self, node: gast.Tuple) -> tuple:
        return tuple(self.elements(node.elts))

    def visit_List(self, node: gast.List) -> list:
        return self.elements(node.elts)

    def visit_Set(self, node: gast.Set) -> set:
        items = self.elements(node.elts)
        if is_traced(items):
            raise self.unsupported(node, "a set of traced values")
        return set(items)

    def visit_Dict(self, node: gast.Dict) -> dict:
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.expr(v))
            else:
                out[self.expr(k)] = self.expr(v)
        return out

    def visit_Slice(self, node: gast.Slice) -> slice:
        def part(n):
            return None if n is None else self.expr(n)
        return slice(part(node.lower), part(node.upper), part(node.step))

    # -- comprehensions ------------------------------------------------------------------

    def comprehension(self, node, element) -> list:
        from .evaluator import Frame
        outer = self.frame
        self.frame = Frame(outer.fn, outer.globals, {}, outer)
        self.frame.stmt = outer.stmt
        results: list = []

        def loop(generators):
            if not generators:
                results.append(element())
                return
            gen = generators[0]
            for item in self.iterate(self.expr(gen.iter), gen.iter):
                self.assign(gen.target, item)
                if all(self.truth(self.expr(c), c) for c in gen.ifs):
                    loop(generators[1:])
        try:
            loop(node.generators)
        finally:
            self.frame = outer
        return results

    def visit_ListComp(self, node: gast.ListComp) -> list:
        return self.comprehension(node, lambda: self.expr(node.elt))

    visit_GeneratorExp = visit_ListComp

    def visit_SetComp(self, node: gast.SetComp) -> set:
        return set(self.comprehension(node, lambda: self.expr(node.elt)))

    def visit_DictComp(self, node: gast.DictComp) -> dict:
        return dict(self.comprehension(node, lambda: (self.expr(node.key), self.expr(node.value))))

    # -- operators -----------------------------------------------------------------------

    def visit_BinOp(self, node: gast.BinOp) -> Any:
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: gast.operator, left: Any, right: Any, node: gast.AST) -> Any:
        fn = BINOP_FNS[type(op)]
        if not isinstance(left, Var) and not isinstance(right, Var):
            return fn(left, right)
        prim = self.rules.lookup(fn)
        if self.backward_mode and fn in NUMPY_SEMANTICS and python_numbers([left, right]):
            # a derivative rule's ``dy / x`` of Python floats: numpy's inf, not ZeroDivisionError
            return self.ufunc_of_numbers(prim.ufunc, prim, [left, right], node)
        return self.call_primitive(prim, (left, right), {}, node)

    def visit_UnaryOp(self, node: gast.UnaryOp) -> Any:
        value = self.expr(node.operand)
        if isinstance(node.op, gast.Not):
            return not self.truth(value, node.operand)
        if isinstance(node.op, gast.UAdd):
            return value
        fn = operator.neg if isinstance(node.op, gast.USub) else operator.invert
        if not isinstance(value, Var):
            return fn(value)
        return self.call_primitive(self.rules.lookup(fn), (value,), {}, node)

    def visit_BoolOp(self, node: gast.BoolOp) -> Any:
        want = isinstance(node.op, gast.Or)       # `or` stops at the first true value
        for value_node in node.values[:-1]:
            value = self.expr(value_node)
            if self.truth(value, value_node) == want:
                return value
        return self.expr(node.values[-1])

    def visit_Compare(self, node: gast.Compare) -> Any:
        left = self.expr(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            result = self.compare(op, left, right, node)
            if len(node.ops) > 1 and not self.truth(result, node):
                return result
            left = right
        return result

    def compare(self, op: gast.cmpop, left: Any, right: Any, node: gast.AST) -> Any:
        if isinstance(op, (gast.Is, gast.IsNot)):
            return (left is right) == isinstance(op, gast.Is)
        if isinstance(op, (gast.In, gast.NotIn)):
            if is_traced(left) or is_traced(right):
                raise self.unsupported(node, "`in` with traced values")
            return (left in right) == isinstance(op, gast.In)
        fn = CMP_FNS[type(op)]
        if not isinstance(left, Var) and not isinstance(right, Var):
            return fn(left, right)
        return self.call_primitive(self.rules.lookup(fn), (left, right), {}, node)

    def visit_IfExp(self, node: gast.IfExp) -> Any:
        return self.expr(node.body if self.truth(self.expr(node.test), node.test) else node.orelse)

    # -- attributes and indexing ---------------------------------------------------------

    def visit_Attribute(self, node: gast.Attribute) -> Any:
        return self.getattr(self.expr(node.value), node.attr, node)

    def getattr(self, obj: Any, name: str, node: gast.AST) -> Any:
        if isinstance(obj, Var):
            if name in STATIC_ARRAY_ATTRS:
                return STATIC_ARRAY_ATTRS[name](obj.aval)
            if name == "T":
                return self.call_primitive(self.rules.lookup(np.transpose), (obj,), {}, node)
            if name in ("real", "imag"):
                return self.call_primitive(self.rules.lookup(getattr(np, name)), (obj,), {}, node)
            if name in ARRAY_METHODS or name in IN_PLACE_METHODS:
                return ArrayMethod(obj, name)
            raise YotaError(f"arrays have no supported attribute {name!r}", self.loc(node))
        if isinstance(obj, StructValue):
            return get_attribute(self, obj, name, node)
        if isinstance(obj, GeneratorRef):
            if not callable(getattr(obj.obj, name, None)):
                raise YotaError(f"{type(obj.obj).__name__}.{name} is not a method the compiled "
                                "function can call", self.loc(node))
            return RandomMethod(obj, name)
        try:
            value = getattr(obj, name)
        except AttributeError as e:
            raise YotaError(str(e), self.loc(node)) from None
        if isinstance(obj, types.ModuleType) and not _library_module(obj):
            wrapped = self.externals.wrap(value, (module_root(obj.__dict__), (("attr", name),)),
                                          node, name)
            if not isinstance(wrapped, Var):
                self.depends.attribute(obj, name, value)
            return wrapped
        self.depends.attribute(obj, name, value)
        return value

    def visit_Subscript(self, node: gast.Subscript) -> Any:
        return self.getitem(self.expr(node.value), self.expr(node.slice), node)

    def getitem(self, obj: Any, key: Any, node: gast.AST) -> Any:
        if isinstance(obj, Var) and _has_traced_slice(key):
            key = self.dynamic_slice(obj, key, node)
        if isinstance(obj, Var) or (isinstance(obj, np.ndarray) and is_traced(key)):
            to_tree(key, self.loc(node), key=True)          # rejects traced slice bounds early
            return self.call_primitive(self.rules.lookup(operator.getitem), (obj, key), {}, node)
        if isinstance(obj, StructValue):
            return call_dunder(self, obj, "__getitem__", [key], node)
        if is_traced(key):
            raise StaticValueError(f"a {type(obj).__name__} cannot be indexed by a traced value",
                                   self.loc(node), "Index Python containers with ints known at compile time.")
        return obj[key]

    def dynamic_slice(self, obj: Var, key: Any, node: gast.AST) -> Any:
        """``x[i * B:(i + 1) * B]`` with a traced ``i`` (an int argument ``ys.grad`` keeps a
        run-time value): the rows ``x[arange(n) + i * B]``, ``n`` the length on the example,
        with guards that the slice has that length and stays inside ``x`` (the generated code
        raises ``GuardError`` for another length, and ``ys.grad`` compiles that one too)."""
        parts = key if isinstance(key, tuple) else (key,)
        dynamic = [k for k, p in enumerate(parts) if isinstance(p, slice) and is_traced(p)]
        k = dynamic[0]
        part = parts[k]
        if len(dynamic) > 1 or is_traced(part.step) or part.step not in (None, 1) or \
                any(p is Ellipsis or p is None or isinstance(p, Var) for p in parts[:k]) or \
                any(isinstance(p, Var) and p.aval.ndim for p in parts) or k >= obj.aval.ndim or \
                any(isinstance(b, Var) and (b.aval.dtype.kind not in "iu" or b.aval.ndim)
                    for b in (part.start, part.stop)):
            raise StaticValueError("slice bounds must be known at compile time, but one is "
                                   "traced", self.loc(node),
                                   "Use ints (or values computed from shapes) as slice bounds; "
                                   "an int argument of ys.grad may be a bound in one plain "
                                   "slice (x[i:i + n]).")
        size = obj.aval.shape[k]
        example = slice(*(self.values[b] if isinstance(b, Var) else b
                          for b in (part.start, part.stop)))
        length = len(range(*example.indices(size)))
        start = 0 if part.start is None else part.start
        stop = size if part.stop is None else part.stop
        if not isinstance(stop, Var):
            stop = min(stop, size) if stop >= 0 else stop + size
        if isinstance(start, Var):
            self.truth(self.compare(gast.GtE(), start, 0, node), node)
        if isinstance(stop, Var):
            self.truth(self.compare(gast.LtE(), stop, size, node), node)
        self.truth(self.compare(gast.Eq(), self.binop(gast.Sub(), stop, start, node), length,
                                node), node)
        steps = self.emit(self.rules.lookup(np.arange), [Lit(length)], {}, node)  # xp.arange(n)
        rows = self.binop(gast.Add(), steps, start, node)
        return parts[:k] + (rows,) + parts[k + 1:] if isinstance(key, tuple) else rows

    def visit_Starred(self, node: gast.Starred) -> Any:
        raise self.unsupported(node, "a starred expression here")


def _library_module(module: types.ModuleType) -> bool:
    name = getattr(module, "__name__", "") or ""
    return any(name == m or name.startswith(m + ".") for m in LIBRARY_MODULES + ("yota_s2s",))


def _has_traced_slice(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, slice) and is_traced(p) for p in parts)
