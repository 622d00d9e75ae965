"""Expressions for the partial evaluator (mixed into ``Evaluator``).

One ``visit_<Node>`` per gast expression node. Operators on static values are computed in
Python; on traced values they become the operator primitives (``+`` -> ``add``). Attribute and
index access on arrays become primitives or static facts (``x.shape``); on containers and
modules they are ordinary Python.
"""
from __future__ import annotations

import ast
import operator
import types
from typing import Any

import gast
import numpy as np

from ..errors import StaticValueError, UnsupportedSyntax, YotaError
from ..ir.assumptions import INDEX, Assumption
from ..ir.tape import Lit, Var
from ..ir.values import ArrayMethod, is_traced, python_numbers, to_tree
from ..objects import LIBRARY_MODULES
from .branches import NO_BRANCH
from .depends import module_root
from .frame import Frame
from .frozen import as_frozen, frozen_method
from .outside import GeneratorRef, OutsideCell, RandomMethod, is_data
from .outside_values import SPARSE_HINT
from .unreached import on_an_object
from .resolve import ARRAY_METHODS, IN_PLACE_METHODS, SIZED_ATTRS, STATIC_ARRAY_ATTRS
from .structs import StructValue, call_dunder, class_data, get_attribute, static_lookup

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
        value = method(node)
        if self.trial_records and (value.__class__ is list or value.__class__ is dict):
            self.saw_container(value, node)     # a region's trial watches them (region_lists.py)
        return value

    def container_part(self, node: gast.expr) -> Any:
        """``node``'s value where it is indexed (``hs[-1]``) or appended to (``hs.append``):
        a list read there is not read as a whole (see region_lists.py ``saw_container``)."""
        saved, self.part_node = self.part_node, node
        try:
            return self.expr(node)
        finally:
            self.part_node = saved

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
        outer = self.frame
        frame = Frame(outer.fn, outer.globals, {}, outer)
        frame.stmt, frame.call = outer.stmt, outer.call
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
        with self.in_frame(frame):
            loop(node.generators)
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
        if isinstance(left, StructValue) or isinstance(right, StructValue):
            return self.struct_binop(op, fn, left, right, node)
        if not isinstance(left, Var) and not isinstance(right, Var):
            return fn(left, right)
        prim = self.rules.lookup(fn)
        if self.backward_mode and fn in NUMPY_SEMANTICS and python_numbers([left, right]):
            # a derivative rule's ``dy / x`` of Python floats: numpy's inf, not ZeroDivisionError
            return self.ufunc_of_numbers(prim.ufunc, prim, [left, right], node)
        return self.call_primitive(prim, (left, right), {}, node)

    def struct_binop(self, op: gast.operator, fn: Any, left: Any, right: Any,
                     node: gast.AST) -> Any:
        """``a + b`` with an object of a user class: its ``__add__`` (then the other's
        ``__radd__``), inlined, as Python calls them."""
        name = fn.__name__.strip("_")
        for obj, other, method in ((left, right, f"__{name}__"), (right, left, f"__r{name}__")):
            if isinstance(obj, StructValue) and static_lookup(obj.cls, method)[0] is not None:
                result = call_dunder(self, obj, method, [other], node)
                if result is not NotImplemented:
                    return result
        symbol = BINOP_SYMBOLS[type(op)]
        kinds = " and ".join(v.cls.__name__ if isinstance(v, StructValue) else
                             type(v).__name__ for v in (left, right))
        cls = (left if isinstance(left, StructValue) else right).cls.__name__
        raise YotaError(f"unsupported operand types for {symbol}: {kinds}", self.loc(node),
                        f"Define __{name}__ (and __r{name}__ for the other order) on {cls}, or "
                        "write the operation on its fields.")

    def visit_UnaryOp(self, node: gast.UnaryOp) -> Any:
        if isinstance(node.op, gast.Not):      # of a traced bool: numpy's logical_not
            return self.condition(node) if self.branching() else \
                not self.truth(self.expr(node.operand), node.operand)
        value = self.expr(node.operand)
        if isinstance(node.op, gast.UAdd):
            return value
        fn = operator.neg if isinstance(node.op, gast.USub) else operator.invert
        if not isinstance(value, Var):
            return fn(value)
        return self.call_primitive(self.rules.lookup(fn), (value,), {}, node)

    def visit_BoolOp(self, node: gast.BoolOp) -> Any:
        if self.branching():        # of traced bools: numpy's logical_and (conditions.py)
            return self.condition(node)
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
            if isinstance(right, dict) and not is_traced(left):   # its keys: never traced
                return (left in right) == isinstance(op, gast.In)
            if is_traced(left) or is_traced(right):
                raise self.unsupported(node, "`in` with traced values")
            return (left in right) == isinstance(op, gast.In)
        fn = CMP_FNS[type(op)]
        if not isinstance(left, Var) and not isinstance(right, Var):
            return fn(left, right)
        return self.call_primitive(self.rules.lookup(fn), (left, right), {}, node)

    def visit_IfExp(self, node: gast.IfExp) -> Any:
        test = self.condition(node.test) if self.branching() else self.expr(node.test)
        if isinstance(test, Var):       # a branch statement (branches.py), or a guard
            value = self.branch_expr(node, test)
            if value is not NO_BRANCH:
                return value
        return self.expr(node.body if self.truth(test, node.test) else node.orelse)

    # -- attributes and indexing ---------------------------------------------------------

    def visit_Attribute(self, node: gast.Attribute) -> Any:
        obj = self.container_part(node.value) if node.attr == "append" else self.expr(node.value)
        return self.getattr(obj, node.attr, node)

    def getattr(self, obj: Any, name: str, node: gast.AST) -> Any:
        frozen = as_frozen(obj)
        if frozen is not None and self.rules.lookup(getattr(obj, name, None)) is None:
            return frozen_method(frozen, name)  # norm(0.0, s).logpdf: norm.logpdf(..., scale=s)
        if isinstance(obj, Var):
            if obj.aval.sparse and name not in ("format", "T", "dot", "transpose") \
                    and name not in STATIC_ARRAY_ATTRS:
                raise UnsupportedSyntax(
                    f"{name!r} of the scipy.sparse matrix {obj.hint or ''} ({obj.aval}): a "
                    "sparse matrix read from outside the function is an operand of products "
                    "only", self.loc(node), SPARSE_HINT)
            if name == "format" and obj.aval.sparse:    # a scipy.sparse matrix's: "csr"
                return obj.aval.sparse
            if name in STATIC_ARRAY_ATTRS:
                if name in SIZED_ATTRS:
                    self.static_reads.add(obj)
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
        if isinstance(obj, OutsideCell) and name == "cell_contents":
            # a closure read by a generated gradient inlined here: read where it is, as a
            # closure variable is (calls.py inline): data at run time, the rest by identity
            value = obj.cell.cell_contents
            if not is_data(value):
                self.depends.cell(obj.cell, value, f"{obj.name} (a variable of a closure)")
            return self.outside.wrap(value, obj.where, node, obj.name)
        if isinstance(obj, types.FunctionType) and name == "__closure__":
            cells = self.outside.cells(obj)
            if cells is not None:
                return cells
        try:
            value = getattr(obj, name)
        except AttributeError as e:
            raise YotaError(str(e), self.loc(node)) from None
        if isinstance(obj, types.ModuleType) and not _library_module(obj):
            wrapped = self.outside.wrap(value, (module_root(obj.__dict__), (("attr", name),)),
                                          node, name)
            if not isinstance(wrapped, Var):
                self.depends.attribute(obj, name, value)
            return wrapped
        self.depends.attribute(obj, name, value)
        if isinstance(obj, type):           # Model.W: data on a class can change in place
            owner, _ = static_lookup(obj, name)
            if owner is not None:
                return class_data(self, owner, name, value, node, obj)
            return value
        if not isinstance(obj, types.ModuleType):
            # an object whose fields the code does not read when it runs (a library's, as
            # types.SimpleNamespace; one the code cannot reach): its data can change in place
            return self.outside.unreached(value, node, f"{type(obj).__qualname__}.{name}",
                                          on_an_object(obj))
        return value

    def visit_Subscript(self, node: gast.Subscript) -> Any:
        return self.getitem(self.container_part(node.value), self.expr(node.slice), node)

    def getitem(self, obj: Any, key: Any, node: gast.AST) -> Any:
        if isinstance(obj, Var) and _has_traced_slice(key):
            key = self.dynamic_slice(obj, key, node)
        if isinstance(obj, Var) or (isinstance(obj, np.ndarray) and is_traced(key)):
            to_tree(key, self.loc(node), key=True)          # rejects traced slice bounds early
            return self.call_primitive(self.rules.lookup(operator.getitem), (obj, key), {}, node)
        if isinstance(obj, StructValue):
            return call_dunder(self, obj, "__getitem__", [key], node)
        if (obj is np.r_ or obj is np.c_) and is_traced(key):
            return self.concatenated(obj is np.c_, key if isinstance(key, tuple) else (key,), node)
        if self.trial_records and type(obj) is dict:
            item = self.step_read(obj, key, node)       # hs[t - 1] in a region's step
            if item is not None:
                return item
        if is_traced(key):
            raise StaticValueError(f"a {type(obj).__name__} cannot be indexed by a traced value",
                                   self.loc(node), "Index Python containers with ints known at compile time.")
        if self.trial_records and obj.__class__ is list:
            last = self.saw_item(obj, key, node)
            if last is not None:
                return last             # hs[-1], the row the step before appended (regions.py)
        if isinstance(obj, dict) and isinstance(key, StructValue) and key.obj is not None:
            key = key.obj               # a dict keyed by the objects themselves (convnet's)
        return obj[key]

    def concatenated(self, columns: bool, items: tuple, node: gast.AST) -> Any:
        """``np.r_[a, b, 1:4]`` of traced values: the items (a slice as its ``np.arange``) at
        least 1-d, joined along the first axis; ``np.c_[...]``: at least 2-d (a vector as a
        column), joined along the last. (numpy's string directives are not taken here.)"""
        parts = []
        for item in items:
            if isinstance(item, str):
                raise self.unsupported(node, f"np.{'c_' if columns else 'r_'}[{item!r}, ...] of "
                                       "traced values: a directive string",
                                       "Join with np.concatenate, np.stack or np.column_stack.")
            if isinstance(item, slice):
                if isinstance(item.step, complex) or is_traced([item.start, item.stop, item.step]):
                    raise self.unsupported(node, "np.r_ / np.c_ of a slice with a complex step "
                                           "or traced bounds", "Use np.linspace or np.arange.")
                item = np.arange(item.start or 0, item.stop, item.step or 1)
            ndim = item.aval.ndim if isinstance(item, Var) else np.ndim(item)
            if columns and ndim < 2:
                item = self.call(np.reshape, [item, (-1, 1) if ndim == 1 else (1, 1)], {}, node)
            elif ndim == 0:
                item = self.call(np.reshape, [item, (1,)], {}, node)
            parts.append(item)
        return self.call(np.concatenate, [parts], {"axis": -1 if columns else 0}, node)

    def dynamic_slice(self, obj: Var, key: Any, node: gast.AST) -> Any:
        """``x[i * B:(i + 1) * B]``, ``x[:-k]``, ``x[i:j]`` with traced ints (int arguments
        ``ys.grad`` keeps run-time values): each bound goes through numpy's normalization in
        the generated code (a negative bound adds the length, then it is clipped to the axis)
        behind guards that every choice of that normalization and the slice's length are
        those of the example; the generated code raises ``GuardError`` otherwise, and
        ``ys.grad`` compiles that case too. So every int gives numpy's slice or a
        ``GuardError``, never another slice. A traced step is guarded to its value.

        The slice is then plain (``x[2:10]``) where the guards fix its start (one bound
        traced, or an empty slice), else the rows ``x[start + arange(n) * step]``."""
        parts = key if isinstance(key, tuple) else (key,)
        dynamic = [k for k, p in enumerate(parts) if isinstance(p, slice) and is_traced(p)]
        if any(isinstance(p, Var) and p.aval.ndim for p in parts) or \
                dynamic[-1] >= obj.aval.ndim or \
                any(p is Ellipsis or p is None for p in parts[:dynamic[-1]]) or \
                any(isinstance(b, Var) and (b.aval.dtype.kind not in "iu" or b.aval.ndim)
                    for k in dynamic for b in (parts[k].start, parts[k].stop, parts[k].step)):
            raise self._traced_bounds(node)
        parts = list(parts)
        for k in dynamic:
            parts[k] = self._normalized_slice(parts[k], obj.aval.shape[k], node)
        rows = [k for k in dynamic if isinstance(parts[k], Var)]
        if rows and sum(isinstance(p, Var) for p in parts) > 1:
            raise self._traced_bounds(node)     # index arrays would broadcast together
        self.assumed.append(Assumption(
            f"{_source(node)}: its run-time bounds as numpy normalizes them, and its length",
            "int argument in a slice", INDEX, self.loc(node)))
        return tuple(parts) if isinstance(key, tuple) else parts[0]

    def _traced_bounds(self, node: gast.AST) -> StaticValueError:
        return StaticValueError("slice bounds must be known at compile time, but one is traced",
                                self.loc(node), "Use ints (or values computed from shapes) as "
                                "slice bounds; an int argument of ys.grad may be a bound of "
                                "plain slices (x[i:i + n], x[:-k]) along one axis at most "
                                "where both bounds are traced.")

    def _normalized_slice(self, part: slice, size: int, node: gast.AST) -> Any:
        """``part`` of an axis of length ``size`` as numpy reads it, guarded: a plain slice, or
        the rows it reads (an int Var array) where the start stays traced."""
        step = 1 if part.step is None else part.step
        if isinstance(step, Var):
            value = int(self.values[step])
            self.truth(self.compare(gast.Eq(), step, value, node), node)
            step = value
        if step == 0:
            raise YotaError("ValueError: slice step cannot be zero", self.loc(node))
        # numpy's bounds: each in [0, size] going forward, in [-1, size - 1] going backward
        # (-1: before the first item), as CPython's PySlice_AdjustIndices clips them
        low, high = (0, size) if step > 0 else (-1, size - 1)
        start = high if step < 0 and part.start is None else \
            self._bound(0 if part.start is None else part.start, size, low, high, node)
        stop = low if step < 0 and part.stop is None else \
            self._bound(size if part.stop is None else part.stop, size, low, high, node)
        first, last = (self.values[b] if isinstance(b, Var) else b for b in (start, stop))
        length = len(range(first, last, step))
        if length == 0:     # any empty slice reads the same: guarded to stay empty
            if isinstance(start, Var) or isinstance(stop, Var):
                after = (stop, start) if step > 0 else (start, stop)
                self.truth(self.compare(gast.LtE(), *after, node), node)
            return slice(0, 0)
        if not isinstance(start, Var) and not isinstance(stop, Var):
            return _plain_slice(start, length, step)
        if abs(step) == 1:
            span = self.binop(gast.Sub(), *((stop, start) if step > 0 else (start, stop)), node)
        else:               # ceil((stop - start) / step) steps
            span = self.binop(gast.Sub(), stop, start, node)
            span = self.binop(gast.Add(), span, step - 1 if step > 0 else step + 1, node)
            span = self.binop(gast.FloorDiv(), span, step, node)
        self.truth(self.compare(gast.Eq(), span, length, node), node)
        if not isinstance(start, Var):
            return _plain_slice(start, length, step)
        if not isinstance(stop, Var) and abs(step) == 1:    # the length fixes the start
            return _plain_slice(stop - step * length, length, step)
        offsets = [Lit(length)] if step == 1 else [Lit(0), Lit(step * length), Lit(step)]
        offsets = self.emit(self.rules.lookup(np.arange), offsets, {}, node)
        return self.binop(gast.Add(), offsets, start, node)

    def _bound(self, bound: Any, size: int, low: int, high: int, node: gast.AST) -> Any:
        """A slice bound as numpy normalizes it: a negative one counts from the end, then it is
        clipped to ``[low, high]``; where it is traced, each choice is a guard."""
        if not isinstance(bound, Var):
            return min(max(bound + size if bound < 0 else bound, low), high)
        if self.truth(self.compare(gast.Lt(), bound, 0, node), node):
            bound = self.binop(gast.Add(), bound, size, node)
            return low if self.truth(self.compare(gast.Lt(), bound, 0, node), node) else bound
        return high if self.truth(self.compare(gast.Gt(), bound, high, node), node) else bound

    def visit_Starred(self, node: gast.Starred) -> Any:
        raise self.unsupported(node, "a starred expression here")


def _library_module(module: types.ModuleType) -> bool:
    name = getattr(module, "__name__", "") or ""
    return any(name == m or name.startswith(m + ".") for m in LIBRARY_MODULES + ("yota_s2s",))


def _source(node: gast.AST) -> str:
    """``node`` as the source wrote it (``x[:-k]``), for the record of assumptions."""
    return ast.unparse(gast.gast_to_ast(node))


def _plain_slice(start: int, length: int, step: int) -> slice:
    """The slice of ``length`` items from ``start`` by ``step`` (``None`` for a stop before
    the first item, which a negative stop would not mean)."""
    stop = start + step * length
    return slice(start, stop if stop >= 0 else None, None if step == 1 else step)


def _has_traced_slice(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, slice) and is_traced(p) for p in parts)
