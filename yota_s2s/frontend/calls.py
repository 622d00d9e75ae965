"""Calls for the partial evaluator (mixed into ``Evaluator``).

A call resolves, in order, to: an ndarray method (rewritten to its numpy function); a builtin
the compiler understands (``len``, ``float``, ``sum``, ``zip``...); a primitive, recorded as a
tape statement (or computed now when all its operands are static); a Python function with
source, inlined; a library callable on static arguments, called now. Anything else is a
``NoRuleError`` that says how to add a rule.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import types
from typing import Any

import gast
import numpy as np

from ..errors import NoRuleError, StaticValueError, UnsupportedSyntax, YotaError
from ..ir.tape import Aval, Lit, Primitive, Stmt, Var, tree_atoms, tree_map
from ..ir.values import MAX_LITERAL_SIZE, ArrayMethod, LocalFunction, is_traced, normalize_static, to_tree, \
    python_numbers, weak_tree
from ..rules.registry import is_mutator, mutator_hint, opaque_primitive
from ..rules.template import is_static
from . import abstract
from .collect import rule_stub, skip_call
from .outside import RandomMethod, cell_path, is_data, random_method
from .flatten import is_struct_object
from .numpy_calls import NUMPY_CALLS, guard_selection, stacked
from .resolve import (IN_PLACE_METHODS, array_method, display_name, is_compiler, is_inlinable,
                      is_library, is_random, item, nested_gradient, plain_form)
from .source import is_installed, parse_function
from .structs import StructValue, call_dunder, call_object, construct, holds_struct, is_user_class

_signatures: dict[Primitive, inspect.Signature] = {}


def primitive_signature(prim: Primitive) -> inspect.Signature:
    if prim not in _signatures:
        P = inspect.Parameter
        optional = dict(prim.optional)
        params = [P(o[1:], P.VAR_POSITIONAL) if o.startswith("*") else
                  P(o, P.POSITIONAL_OR_KEYWORD, **({"default": optional[o]} if o in optional else {}))
                  for o in prim.operands]
        kind = P.KEYWORD_ONLY if any(o.startswith("*") for o in prim.operands) else P.POSITIONAL_OR_KEYWORD
        params += [P(name, kind, default=default) for name, default in prim.options]
        _signatures[prim] = inspect.Signature(params)
    return _signatures[prim]


class CallsMixin:
    def visit_Call(self, node: gast.Call) -> Any:
        fn = self.expr(node.func)
        args = self.elements(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.expr(kw.value))
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn: Any, args: list, kwargs: dict, node: gast.AST) -> Any:
        if isinstance(fn, functools.partial):       # its function, with the stored arguments
            inner = fn.local if isinstance(fn, _LocalPartial) else fn.func
            return self.call(inner, [*fn.args, *args], {**fn.keywords, **kwargs}, node)
        if isinstance(fn, ArrayMethod):
            if fn.name in IN_PLACE_METHODS:
                return self.update_by_method(fn, args, kwargs, node)
            fn, args, kwargs = array_method(fn, tuple(args), kwargs)
        stack = self.stacked(fn, args, kwargs) if self.stack_rows else None
        if stack is not None:
            return stack                              # np.stack(hs) of a loop's rows
        handler = _BUILTINS.get(_key(fn))
        if handler is not None:
            return handler(self, list(args), kwargs, node)
        if fn is complex and len(args) == 2 and not kwargs and not is_traced(list(args)):
            return complex(*args)       # a constant as generated code writes it: complex(2.0, 1.0)
        prim = self.rules.lookup(fn)
        if prim is not None and prim.fn is not fn and isinstance(fn, np.ufunc) and not kwargs \
                and python_numbers(args):
            return self.ufunc_of_numbers(fn, prim, args, node)
        if prim is not None and "out" in kwargs and all(n != "out" for n, _ in prim.options) \
                and is_traced([args, kwargs]):
            return self.write_out(fn, args, kwargs, node)    # np.exp(y, out=y): in place
        if prim is not None:
            return self.call_primitive(prim, args, kwargs, node)
        if isinstance(fn, LocalFunction):
            return self.inline_local(fn, args, kwargs, node)
        if isinstance(fn, StructValue) or is_struct_object(fn):
            return call_object(self, fn, args, kwargs, node)
        if is_user_class(fn) and (is_traced([args, kwargs]) or holds_struct([args, kwargs])):
            return construct(self, fn, args, kwargs, node)
        if isinstance(fn, RandomMethod):
            return self.outside.draw(fn.ref, fn.name, list(args), kwargs, node)
        if random_method(fn) is not None:
            method = random_method(fn)
            return self.outside.draw(method.ref, method.name, list(args), kwargs, node)
        if is_random(fn):
            return skip_call(self, UnsupportedSyntax(
                f"{display_name(fn)} draws random numbers inside the compiled function",
                self.loc(node), "Make the generator outside the function (a module global "
                "rs = np.random.RandomState(0), or a variable of the enclosing function) and "
                "draw from it inside: rs.randn(3)."),
                fn, args, kwargs)
        if is_compiler(fn):
            try:
                inlined = self.gradient_function(fn, args, kwargs)
            except UnsupportedSyntax as e:      # why it cannot be inlined, said where
                return skip_call(self, UnsupportedSyntax(e.what, e.loc or self.loc(node), e.hint),
                                 fn, args, kwargs)
            if inlined is not None:
                return self.call(inlined, args, kwargs, node)
            return skip_call(self, nested_gradient(display_name(fn), self.loc(node)),
                             fn, args, kwargs)
        fn = self.unguarded(fn)
        if is_inlinable(fn):
            return self.inline(plain_form(fn, self.loc(node)), args, kwargs, node)
        traced = is_traced(list(args)) or is_traced(kwargs)
        given = next((a for a in _atoms([args, list(kwargs.values())])
                      if isinstance(a, LocalFunction)), None)
        if given is not None and callable(fn) and getattr(fn, "__module__", None) != "builtins" \
                and not isinstance(getattr(fn, "__self__", None), (list, dict, set)):
            raise self.unsupported(node, f"{display_name(fn)} is given the function "
                                   f"{given.name}, defined in the compiled code, to call; "
                                   f"{display_name(fn)} is library code, run as it is (not "
                                   "traced), so it would call it outside the trace",
                                   "Write what it computes with numpy in your function (an "
                                   "integral as a sum on a grid: t = np.linspace(0, 1, 201); "
                                   "np.sum(f(t)) * (t[1] - t[0])), compute it before the call "
                                   "if it does not depend on what is differentiated, or make a "
                                   "function of yours that calls it a primitive with a "
                                   "derivative rule (ys.diffrule).")
        if not traced and callable(fn):
            return fn(*args, **kwargs)
        if isinstance(fn, types.BuiltinMethodType) and isinstance(fn.__self__, (list, dict)):
            if fn.__name__ == "extend" and isinstance(args[0], Var):
                args = [self.iterate(args[0], node)]        # the rows of an array
            return fn(*args, **kwargs)          # list.append(v), dict.update(...)
        if isinstance(fn, type) and issubclass(fn, np.generic) and len(args) == 1:
            from ..rules.elementwise import astype
            return self.call_primitive(self.rules.lookup(astype), (args[0], np.dtype(fn)), {}, node)
        if fn is slice and not kwargs and 1 <= len(args) <= 3:
            return slice(*args)     # traced bounds: a slice of a traced int (expressions.py)
        if getattr(fn, "__module__", None) == "builtins" or fn in (range, slice):
            raise StaticValueError(f"{getattr(fn, '__name__', fn)}() needs values known at compile "
                                   "time, but it is given a traced value", self.loc(node),
                                   "Use an int or a shape (x.shape[0]) here; traced values are "
                                   "only known when the gradient runs.")
        if self.is_opaque(fn, kwargs):
            result = self.opaque_call(fn, args, kwargs, node)
            if result is not None:
                return result
        return skip_call(self, self.no_rule(fn, node, args, kwargs), fn, args, kwargs)

    def gradient_function(self, fn: Any, args: list, kwargs: dict) -> Any:
        """What to inline for a call of a gradient function of ours (``ys.gradient(f)``'s,
        ``ys.vjp``'s, ``ys.hvp``'s): the function its ``__yota_inline__`` gives for the
        example arguments (higher.py), written over a plain generated gradient; None where
        it has none or the arguments are not plain arrays and floats."""
        make = getattr(fn, "__yota_inline__", None)
        examples = [_concrete_tree(self, a) for a in args]
        plain = all(isinstance(a, (np.ndarray, np.generic, float, int, bool))
                    for a in _leaves(examples))
        if make is None or kwargs or not plain:
            return None
        return make(*examples)

    def is_opaque(self, fn: Any, kwargs: dict) -> bool:
        """A library function (numpy, scipy...) with static keywords: a candidate for
        ``opaque_call``."""
        if not (is_library(fn) or isinstance(fn, np.ufunc)) or isinstance(fn, type):
            return False
        return not is_traced(kwargs)

    def opaque_call(self, fn: Any, args: list, kwargs: dict, node: gast.AST) -> Any:
        """``fn(*args, **kwargs)`` recorded as a plain call with no rules, where no gradient
        can flow through it: none of its operands is a traced float (``np.meshgrid`` of
        ``np.arange`` results), its results are integers or booleans (``np.searchsorted``,
        ``np.digitize``), or a derivative rule makes it (first-order gradients never
        differentiate a rule's own calls). None otherwise, or when its result is not an array
        or a tuple of arrays."""
        try:
            result = fn(*[_concrete_tree(self, a) for a in args], **kwargs)
        except Exception:
            return None
        if isinstance(result, (np.ndarray, np.generic)):
            results = [result]
        elif isinstance(result, (tuple, list)) and result and \
                all(isinstance(r, np.ndarray) for r in result):
            results = list(result)
        else:
            return None
        floats_in = any(isinstance(a, Var) and a.aval.is_float for a in _atoms(args))
        floats_out = any(r.dtype.kind in "fc" for r in results)
        if floats_in and floats_out and not self.backward_mode:
            return None
        nout = 1 if isinstance(result, (np.ndarray, np.generic)) else len(results)
        prim = opaque_primitive(fn, tuple(kwargs), nout)
        outs = self.call_primitive(prim, args, kwargs, node)
        if not self.backward_mode:
            for out in outs if nout > 1 else (outs,):
                self.guard_size(out, node)
        return outs

    def ufunc_of_numbers(self, fn: np.ufunc, prim: Primitive, args: list, node: gast.AST) -> Any:
        """``np.power(v, -0.154)`` where every operand is a Python number: numpy's semantics,
        which the operator the ufunc is an alias of does not have on Python numbers (``**``
        gives a complex number for a negative base, ``/`` and ``**`` raise where numpy gives inf
        or nan), and numpy's result, a numpy scalar (which, unlike a Python float, widens a
        float32 array it meets). The first traced operand becomes a numpy scalar of the dtype
        numpy converts it to (a constant would be a literal, which a derivative rule makes a
        Python number again); the operator then computes what the ufunc computes."""
        if not is_traced(args):
            return fn(*args)
        from ..rules.elementwise import astype
        dtype = np.result_type(*(a.aval.dtype if isinstance(a, Var) else
                                 type(a.value if isinstance(a, Lit) else a) for a in args))
        i = next(i for i, a in enumerate(args) if isinstance(a, Var))
        cast = self.call_primitive(self.rules.lookup(astype), (args[i], dtype), {}, node)
        return self.call_primitive(prim, [*args[:i], cast, *args[i + 1:]], {}, node)

    def guard_size(self, out: Var, node: gast.AST) -> None:
        """Check when the code runs that ``out`` has as many elements as in the example: the
        code after it is written for that shape (``np.unique``, ``np.flatnonzero`` of traced
        values may give another)."""
        if not isinstance(out, Var) or out.aval.ndim == 0:
            return
        from ..rules.control import guard
        size = int(out.aval.size)
        found = self.call_primitive(opaque_primitive(np.size, (), 1), [out], {}, node)
        same = self.compare(gast.Eq(), found, size, node)
        loc = self.loc(node)
        where = f"{loc.short} `{loc.text}` giving {size} elements" if loc else "a call"
        self.emit(self.rules.lookup(guard), [same], {"expected": True, "where": where}, node)

    def no_rule(self, fn: Any, node: gast.AST, args: list, kwargs: dict) -> NoRuleError:
        kind = "and no Python source to inline" if is_library(fn) or not callable(fn) else ""
        func = self.loc(node.func) if isinstance(node, gast.Call) else None
        if self.frame is not None and "__yota_text__" in self.frame.globals:
            # differentiating generated code: the call was made by a derivative rule, which
            # a first-order gradient never differentiates; a second differentiation does
            name = display_name(fn)
            return NoRuleError(
                f"{name} has no derivative rule; it is called by a derivative rule (in the "
                "generated gradient), and differentiating a gradient differentiates the calls "
                "its rules make", self.loc(node),
                f"Register a rule for {name} where the first rule is registered: "
                f'ys.diffrule({name}, "<operand>", "<expr in y, dy, ...>"), or ys.nodiff({name}) '
                "if its gradient is not needed.")
        if is_mutator(fn):
            return NoRuleError(f"{display_name(fn)} writes into its argument in place, which "
                               "is not differentiated (a rule or ys.nodiff would lose the "
                               "write)", self.loc(node), mutator_hint(fn))
        return NoRuleError(f"{display_name(fn)} has no derivative rule {kind}".strip(),
                           self.loc(node), rule_stub(fn, list(args), kwargs, func))

    # -- primitives ----------------------------------------------------------------------

    def call_primitive(self, prim: Primitive, args, kwargs: dict, node: gast.AST) -> Any:
        operands, params = self.bind_primitive(prim, args, kwargs, node)
        if not any(isinstance(a, Var) for t in operands for a in tree_atoms(t)):
            if not prim.creates and not prim.effect:
                result = prim.apply([tree_map(lambda a: a.value, t) for t in operands], params)
                result = result[0] if prim.nout == 1 else result
                if not _is_data(result):
                    return result       # static: shapes, axes, scalars, index metadata
        guard_selection(self, prim, operands, node)
        return self.emit(prim, operands, params, node)

    def bind_primitive(self, prim: Primitive, args, kwargs: dict, node: gast.AST):
        loc = self.loc(node)
        try:
            bound = primitive_signature(prim).bind(*args, **kwargs)
        except TypeError as e:
            raise YotaError(f"{prim.name}: {e}", loc) from None
        operands, params, optional = [], {}, dict(prim.optional)
        for name in prim.operands:
            value = bound.arguments.get(name.lstrip("*"), optional.get(name, ()))
            if name.startswith("*"):
                value = tuple(value)
            elif name == "key":
                value = self.index_key(value, node)
            elif "*" not in prim.sequences:
                value = self.operand_value(value, name in prim.sequences, node)
                if (prim.elementwise or prim.ufunc) and isinstance(value, (list, tuple)):
                    value = np.asarray(value)       # np.power(x, (2.0, 3.0)): static data
            operands.append(to_tree(value, loc, key=name == "key"))
        for name, default in prim.options:
            if name not in bound.arguments:
                if name in prim.written:
                    params[name] = default
                continue
            value = bound.arguments[name]
            if is_traced(value):
                raise StaticValueError(f"the {name}= argument of {prim.name} must be known at "
                                       "compile time, but it is traced", loc,
                                       f"Pass {name} as a Python value (int, tuple, dtype).")
            value = _static_option(value)
            if not _same(value, default) or name in prim.written:
                params[name] = value
        return operands, params

    def index_key(self, key: Any, node: gast.AST) -> Any:
        """An index key as numpy reads it: a ``range`` is the array ``np.arange`` makes
        (``P[range(N), y]``), made when the code runs."""
        if isinstance(key, tuple):
            return tuple(self.index_key(k, node) for k in key)
        if isinstance(key, range):
            bounds = [key.start, key.stop, key.step] if key.step != 1 else \
                [key.start, key.stop] if key.start else [key.stop]
            return self.call(np.arange, bounds, {}, node)
        return key

    def operand_value(self, value: Any, sequence: bool, node: gast.AST) -> Any:
        """An operand as numpy reads it: where a sequence of arrays goes, a traced array is
        the list of its rows; elsewhere a list or tuple holding traced values is an array,
        their ``np.stack`` (nested lists too, as ``np.asarray`` makes them)."""
        if sequence:
            return self.iterate(value, node) if isinstance(value, Var) else value
        if isinstance(value, (list, tuple)) and is_traced(value):
            return stacked(self, value, node)
        return value

    def emit(self, prim: Primitive, operands: list, params: dict, node: gast.AST | None,
             grad_of: Var | None = None) -> Any:
        loc = self.loc(node)
        operands = [tree_map(self.current, t) for t in operands]
        if self.backward_mode:      # constants of derivative rules never widen a gradient
            operands = [weak_tree(t) for t in operands]
        ghosts = abstract.evaluate(self, prim, operands, params)     # shape and dtype only
        try:
            results = ghosts or prim.apply(self.concrete_operands(prim, operands), params)
        except YotaError:
            raise
        except Exception as e:
            if self.rule_domain is not None:     # a derivative rule, outside its domain
                what, fix = self.rule_domain
                raise YotaError(what, loc, fix) from None
            described = ", ".join(_describe(t) for t in operands)
            raise YotaError(f"{prim.name}({described}) fails: {e}", loc) from None
        outs = tuple(Var(Aval.of(r), grad_of=grad_of) for r in results)
        order = [name for name, _ in prim.options]
        stmt = Stmt(outs, prim, tuple(operands),
                    tuple(sorted(params.items(), key=lambda kv: order.index(kv[0]))), loc,
                    self.rule_text)
        for v, r in zip(outs, results):
            if ghosts:
                self.values.set_ghost(v, r, stmt)
            else:
                self.values[v] = r
        self.stmts.append(stmt)
        copy = self.note_views(stmt, node)
        if ghosts and abstract.CHECK:
            abstract.check(ghosts, prim.apply(self.concrete_operands(prim, operands), params),
                           prim)
        return copy if copy is not None else outs[0] if prim.nout == 1 else outs

    def concrete(self, atom: Any) -> Any:
        return self.values[atom] if isinstance(atom, Var) else atom.value

    def concrete_operands(self, prim: Primitive, operands: list) -> list:
        return abstract.writable(prim, [tree_map(self.concrete, t) for t in operands])

    # -- inlining ------------------------------------------------------------------------

    def inline(self, fn: Any, args: list, kwargs: dict, node: gast.AST | None) -> Any:
        from .evaluator import Frame
        if isinstance(fn, types.MethodType):
            fn, args = fn.__func__, [fn.__self__, *args]
        parsed = parse_function(fn)
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise UnsupportedSyntax(f"{fn.__name__} is an async function", parsed.loc(parsed.node),
                                    "Make it an ordinary function.")
        try:
            bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
        except TypeError as e:
            raise YotaError(f"{fn.__name__}(): {e}", self.loc(node)) from None
        given = set(bound.arguments)
        bound.apply_defaults()
        code = fn.__code__
        closure, cells = {}, {}
        where = self.outside.where_function(fn)
        if len(given) < len(bound.arguments):
            self._defaults(fn, bound.arguments, given, where, node)
        for index, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):
            try:
                closure[name] = cell.cell_contents
            except ValueError:      # an empty cell: the name is not bound yet
                continue
            cells[name] = cell_path(where, index) or (None, ())
            if not is_data(closure[name]):      # arrays are read again when the code runs
                self.depends.cell(cell, closure[name], f"{fn.__qualname__}'s closure: {name}")
        frame = Frame(parsed, self.depends.watch(fn.__globals__), closure, None)
        frame.call = self.call_of(node)
        frame.cells = cells
        frame.locals.update(bound.arguments)
        if not is_installed(parsed.file) or (self.frame is not None
                                           and is_installed(self.frame.fn.file)):
            return self.run_function(frame, parsed.node)
        # library code called from the user's: an error inside it is said at this call (when
        # collecting errors too: one for the call, not one per line of the library)
        called_at, collector, self.collector = self.loc(node), self.collector, None
        try:
            return self.run_function(frame, parsed.node)
        except YotaError as e:
            if e.loc is None or not is_installed(e.loc.file) or called_at is None:
                raise
            error = library_error(fn, e, called_at)
        finally:
            self.collector = collector
        return skip_call(self, error, fn, args, kwargs)

    def unguarded(self, fn: Any) -> Any:
        """A ``simplegrad`` function is its generated function behind checks (api.py
        ``_guarded``, ``_pinned``): inlined, it is the generated one, and what its checks
        guarded by identity is guarded by the function being compiled."""
        func = fn.__func__ if isinstance(fn, types.MethodType) else fn
        if getattr(func, "__yota_world__", None) is None and \
                getattr(func, "__yota_pinned__", None) is None:
            return fn
        for dep in getattr(func, "__yota_deps__", ()):
            self.depends.deps.setdefault((id(dep.namespace), dep.name), dep)
        inner = self.unguarded(func.__wrapped__)
        return types.MethodType(inner, fn.__self__) if isinstance(fn, types.MethodType) else inner

    def _defaults(self, fn: Any, arguments: dict, given: set, where: tuple | None,
                  node: gast.AST | None) -> None:
        """Parameters that took their defaults: ``fn.__defaults__`` is guarded by identity, and
        a default the function reaches from outside (an array, a list) is read where it is,
        ``fn.__defaults__[i]``, like a closure's data: changed in place, it is seen."""
        self.depends.defaults(fn)
        if where is None or where[0] is None:
            return
        root, path = where
        code = fn.__code__
        positional = code.co_varnames[:code.co_argcount]
        defaults = fn.__defaults__ or ()
        first = len(positional) - len(defaults)
        for name in [n for n in arguments if n not in given]:
            if name in positional and positional.index(name) >= first:
                step = (("attr", "__defaults__"), ("item", positional.index(name) - first))
            elif name in (fn.__kwdefaults__ or {}):
                step = (("attr", "__kwdefaults__"), ("item", name))
            else:
                continue
            arguments[name] = self.outside.wrap(arguments[name], (root, path + step), node,
                                                  name)

    def inline_local(self, fn: LocalFunction, args: list, kwargs: dict, node: gast.AST) -> Any:
        from .evaluator import Frame
        sig = _local_signature(fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise YotaError(f"{fn.name}(): {e}", self.loc(node)) from None
        bound.apply_defaults()
        scope = fn.scope
        frame = Frame(scope.fn, scope.globals, {}, scope)
        frame.call = self.call_of(node)
        frame.locals.update(bound.arguments)
        return self.run_function(frame, fn.node)

    def run_function(self, frame, node: gast.FunctionDef | gast.Lambda) -> Any:
        if _is_generator(node):
            # A generator runs to the end at once; its values are what it yields, in order (the
            # caller iterates them: list(gen(x)), for v in gen(x)).
            frame.yields = []
            self.run_body(frame, node.body)
            return frame.yields
        if isinstance(node, gast.Lambda):
            saved, self.frame = self.frame, frame
            try:
                return self.expr(node.body)
            finally:
                self.frame = saved
        return self.run_body(frame, node.body)


def _is_generator(node: gast.AST) -> bool:
    """A ``def`` whose own body (not a nested function's) yields."""
    if not isinstance(node, gast.FunctionDef):
        return False
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.Yield, gast.YieldFrom)):
            return True
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            todo.extend(gast.iter_child_nodes(n))
    return False


def _atoms(value: Any):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _atoms(v)
    else:
        yield value


def _concrete_tree(ev: Any, value: Any) -> Any:
    if isinstance(value, Var):
        return ev.values[ev.current(value)]
    if isinstance(value, (list, tuple)):
        return type(value)(_concrete_tree(ev, v) for v in value)
    return value


def _leaves(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _is_data(value: Any) -> bool:
    """A float array made from constants is data to compute when the code runs
    (``np.broadcast_to(1.0, shape)``, empty ones too), not a constant to write into the code."""
    return isinstance(value, np.ndarray) and value.size != 1 and (
        value.dtype.kind in "fc" or value.size > MAX_LITERAL_SIZE)


def _local_signature(fn: LocalFunction) -> inspect.Signature:
    P = inspect.Parameter
    a = fn.node.args
    positional = [(x.id, P.POSITIONAL_ONLY) for x in a.posonlyargs] + \
                 [(x.id, P.POSITIONAL_OR_KEYWORD) for x in a.args]
    first_default = len(positional) - len(fn.defaults)
    params = [P(name, kind, **({"default": fn.defaults[i - first_default]} if i >= first_default else {}))
              for i, (name, kind) in enumerate(positional)]
    if a.vararg is not None:
        params.append(P(a.vararg.id, P.VAR_POSITIONAL))
    params += [P(x.id, P.KEYWORD_ONLY, **({"default": fn.kw_defaults[x.id]} if x.id in fn.kw_defaults else {}))
               for x in a.kwonlyargs]
    if a.kwarg is not None:
        params.append(P(a.kwarg.id, P.VAR_KEYWORD))
    return inspect.Signature(params)


def _static_option(value: Any) -> Any:
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):
        return tuple(_static_option(v) for v in value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value)
    return normalize_static(value)


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _describe(tree: Any) -> str:
    if isinstance(tree, tuple):
        return "(" + ", ".join(_describe(t) for t in tree) + ")"
    return str(tree.aval) if isinstance(tree, Var) else repr(tree.value)


def _key(fn: Any) -> Any:
    try:
        hash(fn)
        return fn
    except TypeError:
        return None


# -- builtins the compiler understands ---------------------------------------------------

def _len(ev, args, kwargs, node):
    (x,) = args
    if isinstance(x, StructValue):
        return call_dunder(ev, x, "__len__", [], node)
    if isinstance(x, Var):
        if x.aval.ndim == 0:
            raise YotaError("len() of a 0-d array", ev.loc(node))
        return x.aval.shape[0]
    return len(x)


def _isinstance(ev, args, kwargs, node):
    value, cls = args
    return isinstance(ev.values.peek(value) if isinstance(value, Var) else value, cls)


def _type(ev, args, kwargs, node):
    (value,) = args
    if isinstance(value, StructValue):
        return value.cls
    return type(ev.values.peek(value) if isinstance(value, Var) else value)


def _float(ev, args, kwargs, node):
    if args and isinstance(args[0], Var):
        x = args[0]
        if x.aval.ndim > 0 and x.aval.size == 1:
            # numpy 2.x deprecates (then, from 2.4, refuses) converting a size-1 array that is
            # not 0-d: refused on every numpy, so a module compiled on one runs on the others
            raise YotaError(f"float() of a traced {x.aval}: only a 0-d array converts to a "
                            "Python float (numpy 2 deprecates, then refuses, other size-1 "
                            "arrays)", ev.loc(node),
                            "Read its one element: float(x[0]) (or x.reshape(()) for a 0-d "
                            "array).")
        return ev.call_primitive(ev.rules.lookup(builtins.float), args, kwargs, node)
    return float(*args, **kwargs)


def _item(ev, args, kwargs, node):
    """``x.item()`` of a size-1 array, ``x.item(k)`` (flat index), ``x.item(i, j)``: the element
    as a Python float (or complex); an integer or bool element stays a 0-d array."""
    x, *index = args
    if len(index) == 1:
        flat = ev.call_primitive(ev.rules.lookup(np.ravel), (x,), {}, node)
        x = ev.getitem(flat, index[0], node)
    elif index:
        x = ev.getitem(x, tuple(index), node)
    elif x.aval.ndim:
        if x.aval.size != 1:
            raise YotaError(f"{x.aval}.item() needs an array of one element", ev.loc(node),
                            "Pass the index of the element: x.item(k) or x.item(i, j).")
        x = ev.call_primitive(ev.rules.lookup(np.reshape), (x, ()), {}, node)
    kind = x.aval.dtype.kind if isinstance(x, Var) else None
    if kind in ("f", "c"):
        python = float if kind == "f" else complex
        return ev.call_primitive(ev.rules.lookup(python), (x,), {}, node)
    return x


def _int(ev, args, kwargs, node):
    if is_traced(args):
        raise StaticValueError("int() of a traced value: its value is not known at compile time",
                               ev.loc(node), "Use an array operation (np.floor, astype) instead.")
    return int(*args, **kwargs)


def _bool(ev, args, kwargs, node):
    return ev.truth(args[0], node) if args else False


def _abs(ev, args, kwargs, node):
    (x,) = args
    if isinstance(x, Var):
        return ev.call_primitive(ev.rules.lookup(builtins.abs), (x,), {}, node)
    return abs(x)


def _sum(ev, args, kwargs, node):
    items = ev.iterate(args[0], node)
    start = args[1] if len(args) > 1 else kwargs.get("start", 0)
    if not items:
        return start
    if not isinstance(start, Var) and start == 0:
        total, items = items[0], items[1:]
    else:
        total = start
    for item in items:
        total = ev.binop(gast.Add(), total, item, node)
    return total


def _extremum(py_fn, more: gast.cmpop):
    """Python's ``max``/``min`` of traced numbers: the left fold ``best = item if item > best
    else best`` (``<`` for min) that Python runs, as ``np.where(item > best, item, best)``: a
    nan after the first item is skipped (every comparison with it is false), a nan first stays,
    and of equal items the first is kept, with all of the gradient. Arrays of more than one
    element have no single truth value: Python refuses them, and so does this."""
    def handler(ev, args, kwargs, node):
        items = ev.iterate(args[0], node) if len(args) == 1 else list(args)
        if not is_traced(items):
            return py_fn(*args, **kwargs)
        if kwargs:
            raise ev.unsupported(node, f"{py_fn.__name__}() with keywords on traced values")
        for item in items:
            if isinstance(item, Var) and item.aval.ndim > 0 or np.ndim(item) > 0:
                shown = item.aval if isinstance(item, Var) else f"array of shape {np.shape(item)}"
                raise YotaError(f"{py_fn.__name__}() of a traced {shown}: Python compares its "
                                "items with one truth value each, which an array does not have",
                                ev.loc(node), f"For the elementwise {py_fn.__name__}imum of arrays, "
                                f"use np.{py_fn.__name__}imum(a, b); for the largest element, "
                                f"np.{py_fn.__name__}(x).")
        best = items[0]
        for item in items[1:]:
            better = ev.compare(more, item, best, node)
            best = ev.call_primitive(ev.rules.lookup(np.where), (better, item, best), {}, node)
        return best
    return handler


def _iterating(py_fn):
    """zip, enumerate, reversed, list, tuple: iterate traced arrays row by row first."""
    def handler(ev, args, kwargs, node):
        args = [ev.iterate(a, node) if isinstance(a, Var) else a for a in args]
        return py_fn(*args, **kwargs)
    return handler


def _map(ev, args, kwargs, node):
    fn, *iterables = args
    columns = [ev.iterate(it, node) for it in iterables]
    return [ev.call(fn, list(items), {}, node) for items in zip(*columns)]


def _getattr(ev, args, kwargs, node):
    obj, name, *default = args
    try:
        return ev.getattr(obj, name, node)
    except YotaError:
        if default:
            return default[0]
        raise


def _hasattr(ev, args, kwargs, node):
    obj, name = args
    try:
        ev.getattr(obj, name, node)
    except YotaError:
        return False
    return True


def _is_static(ev, args, kwargs, node):
    (value,) = args
    return not is_traced(value)


def library_error(fn: Any, error: YotaError, called_at: Any) -> YotaError:
    """An error inside library code (``error.loc`` there), said where the user's code calls
    it, with what to do in the user's code: never an edit of the library."""
    name = getattr(fn, "__qualname__", None) or display_name(fn)
    module = (getattr(fn, "__module__", None) or "").split(".")[0] or "a library"
    inner = error.loc
    where = f"{inner.short} in {inner.func}" if inner.func else inner.short
    example = (f" (a fitted scikit-learn linear model's decision function is "
               "X @ model.coef_.T + "
               "model.intercept_)") if module == "sklearn" else ""
    return type(error)(
        f"{name} ({module}) cannot be traced: at {where}: {error.what}", called_at,
        f"Library code that cannot be traced is not yours to change: write what it computes "
        f"with numpy in your function{example}, or make a function of yours that calls it a "
        "primitive with a derivative rule (ys.diffrule(fn, \"x\", \"<expr in x, y, dy>\")).")


def _print(ev, args, kwargs, node):
    """``print(...)``: a statement of the generated code, which prints the values each call
    computes (never the example values of the trace)."""
    from ..rules.control import show
    if kwargs.get("file") is not None:
        raise ev.unsupported(node, "print(..., file=...) in a compiled function: the generated "
                             "code prints to standard output only",
                             "Print to standard output (leave file= out), or print the "
                             "returned values after the call.")
    kwargs = {k: v for k, v in kwargs.items() if k != "file"}
    ev.call_primitive(ev.rules.lookup(show), args, kwargs, node)
    return None


def _partial(ev, args, kwargs, node):
    """``functools.partial(f, x, s=2.0)`` holding traced values, or of a function defined in
    the traced code: called like ``f`` later (see ``call``)."""
    fn, *stored = args
    if callable(fn):
        return functools.partial(fn, *stored, **kwargs)
    return _LocalPartial(fn, tuple(stored), kwargs)


class _LocalPartial(functools.partial):
    """A partial of a ``def`` or ``lambda`` met while tracing (not callable from Python)."""

    def __new__(cls, fn, args, keywords):
        self = super().__new__(cls, _not_called, *args, **keywords)
        self.local = fn
        return self


def _not_called(*args, **kwargs):
    raise TypeError("a partial of a function defined inside traced code")


_BUILTINS = {
    len: _len, isinstance: _isinstance, type: _type, float: _float, int: _int, bool: _bool,
    abs: _abs, sum: _sum, max: _extremum(max, gast.Gt()), min: _extremum(min, gast.Lt()),
    zip: _iterating(zip), enumerate: _iterating(enumerate), reversed: _iterating(reversed),
    list: _iterating(list), tuple: _iterating(tuple), map: _map, getattr: _getattr,
    hasattr: _hasattr, item: _item, functools.partial: _partial,
    print: _print, is_static: _is_static, **NUMPY_CALLS,
}
