"""Calls for the partial evaluator (mixed into ``Evaluator``): what a callee resolves to.

A call resolves, in order, to: an ndarray method (rewritten to its numpy function); a builtin
the compiler understands (``len``, ``float``, ``sum``, ``zip``...: ``builtin_calls.py``); a
primitive, recorded as a tape statement or computed now when all its operands are static
(``primitive_calls.py``); a Python function with source, inlined (``inline.py``); a library
callable on static arguments, called now. Anything else is a ``NoRuleError`` that says how to
add a rule.
"""
from __future__ import annotations

import functools
import types
from typing import Any

import gast
import numpy as np

from ..errors import NoRuleError, StaticValueError, UnsupportedSyntax
from ..ir.tape import Lit, Primitive, Var
from ..ir.values import ArrayMethod, LocalFunction, is_traced, python_numbers
from ..marks import is_function_maker
from ..objects import is_library, is_struct_object
from ..rules.callables import is_mutator, mutator_hint, opaque_primitive
from .builtin_calls import LocalPartial, builtin_handler
from .frozen import Frozen, is_distribution
from .local_gradients import lifted_maker
from .collect import rule_stub, skip_call
from .outside import RandomMethod, random_method
from .resolve import (IN_PLACE_METHODS, array_method, display_name, is_compiler, is_inlinable,
                      is_random, local_gradient, nested_gradient, plain_form)
from .structs import (StructValue, built_from_statics, call_object, construct, holds_struct,
                      is_user_class)


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
        """``fn(*args, **kwargs)``, resolved in the order the module's docstring says."""
        if isinstance(fn, functools.partial):       # its function, with the stored arguments
            inner = fn.local if isinstance(fn, LocalPartial) else fn.func
            return self.call(inner, [*fn.args, *args], {**fn.keywords, **kwargs}, node)
        if isinstance(fn, ArrayMethod):
            if fn.name in IN_PLACE_METHODS:
                return self.update_by_method(fn, args, kwargs, node)
            fn, args, kwargs = array_method(fn, tuple(args), kwargs)
        stack = self.stacked(fn, args, kwargs) if self.stack_rows else None
        if stack is not None:
            return stack                              # np.stack(hs) of a loop's rows
        handler = builtin_handler(fn)
        if handler is not None:
            return handler(self, list(args), kwargs, node)
        if fn is complex and len(args) == 2 and not kwargs and not is_traced(list(args)):
            return complex(*args)       # a constant as generated code writes it: complex(2.0, 1.0)
        traced = getattr(fn, "__yota_traced__", None) if isinstance(fn, types.FunctionType) \
            else None
        if traced is not None:          # one of ours, traced in the form it names (ys.flatten)
            return self.inline(traced, args, kwargs, node)
        prim = self.rules.lookup(fn)
        if prim is not None:
            return self.call_with_rule(fn, prim, args, kwargs, node)
        if isinstance(fn, LocalFunction):
            return self.inline_local(fn, args, kwargs, node)
        if isinstance(fn, StructValue) or is_struct_object(fn):
            return call_object(self, fn, args, kwargs, node)
        if is_user_class(fn) and (is_traced([args, kwargs]) or holds_struct([args, kwargs])):
            return construct(self, fn, args, kwargs, node)
        if is_user_class(fn):
            self.refuse_local_callback(fn, args, kwargs, node)
            return built_from_statics(self, fn, args, kwargs, node)
        if is_distribution(fn):             # stats.norm(0.0, s): frozen parameters
            return Frozen(fn, tuple(args), dict(kwargs))
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
            return self.call_compiler_function(fn, args, kwargs, node)
        fn = self.unguarded(fn)
        if is_inlinable(fn):
            return self.inline(plain_form(fn, self.loc(node)), args, kwargs, node)
        return self.call_library(fn, args, kwargs, node)

    def call_with_rule(self, fn: Any, prim: Primitive, args: list, kwargs: dict,
                       node: gast.AST) -> Any:
        """A call of a callable with a rule: a ufunc on Python numbers as numpy computes it,
        ``out=`` that the rule does not take as a write in place, else the primitive."""
        if prim.fn is not fn and isinstance(fn, np.ufunc) and not kwargs \
                and python_numbers(args):
            return self.ufunc_of_numbers(fn, prim, args, node)
        if "out" in kwargs and all(n != "out" for n, _ in prim.options) \
                and is_traced([args, kwargs]):
            return self.write_out(fn, args, kwargs, node)    # np.exp(y, out=y): in place
        return self.call_primitive(prim, args, kwargs, node)

    def call_compiler_function(self, fn: Any, args: list, kwargs: dict, node: gast.AST) -> Any:
        """A call of one of our gradient functions: the plain gradient it stands for, inlined;
        where there is none, an error that says why. ``ys.gradient(f)`` itself, of values
        known when compiling, is made now: what it makes is inlined where it is called."""
        local = next((a for a in _atoms([list(args), list(kwargs.values())])
                      if isinstance(a, LocalFunction)), None)
        if is_function_maker(fn) and local is not None:
            made = lifted_maker(fn, local, list(args), dict(kwargs))
            if made is not None:
                return made
            return skip_call(self, local_gradient(f"ys.{fn.__name__}", local.name, self.loc(node)),
                             fn, args, kwargs)
        if is_function_maker(fn) and not is_traced([list(args), kwargs]):
            return fn(*args, **kwargs)
        try:
            inlined = self.gradient_function(fn, args, kwargs)
        except UnsupportedSyntax as e:      # why it cannot be inlined, said where
            return skip_call(self, UnsupportedSyntax(e.what, e.loc or self.loc(node), e.hint),
                             fn, args, kwargs)
        if inlined is not None:
            if isinstance(inlined, functools.partial):
                self.outside.handed_over(fn, inlined.args)
            return self.call(inlined, args, kwargs, node)
        return skip_call(self, nested_gradient(display_name(fn), self.loc(node)),
                         fn, args, kwargs)

    def call_library(self, fn: Any, args: list, kwargs: dict, node: gast.AST) -> Any:
        """A callable with neither a rule nor source: called now on static arguments (a
        list's or dict's own methods on traced ones too), a numpy scalar type as a cast, an
        opaque call where no gradient flows through it; anything else has no rule."""
        traced = is_traced(list(args)) or is_traced(kwargs)
        self.refuse_local_callback(fn, args, kwargs, node)
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

    def refuse_local_callback(self, fn: Any, args: list, kwargs: dict, node: gast.AST) -> None:
        """Library code given a function defined in the traced code would call it outside the
        trace: an error (list and dict methods and builtins are not library code here)."""
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

    def gradient_function(self, fn: Any, args: list, kwargs: dict) -> Any:
        """What to inline for a call of a gradient function of ours (``ys.gradient(f)``'s,
        ``ys.vjp``'s, ``ys.hvp``'s): the function its ``__yota_inline__`` gives for the
        example arguments (nested.py), written over a plain generated gradient; None where
        it has none or the arguments are not plain arrays and floats (or functions, static:
        ``fixed_point``'s adjoint takes the user's ``f``, which the generated code names)."""
        make = getattr(fn, "__yota_inline__", None)
        examples = [_concrete_tree(self, a) for a in args]
        plain = all(isinstance(a, (np.ndarray, np.generic, float, complex, int, bool, str,
                                   types.FunctionType))
                    or a is None or a is Ellipsis for a in _leaves(examples))
        # (strings: einsum's, pad's; Ellipsis: einsum's sublists, (Ellipsis, 0, 1))
        if make is None or not plain or is_traced(kwargs) or \
                (kwargs and not getattr(make, "keywords", False)):
            return None         # (``ys.jacobian``'s maker takes its keywords: argnum=...)
        return make(*examples, **kwargs)

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
        if not isinstance(out, Var) or out.aval.ndim == 0 or out in self.constants:
            return      # (one made of constants, np.meshgrid of np.arange(n), never changes)
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


def _atoms(value: Any):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _atoms(v)
    else:
        yield value


def _concrete_tree(ev: Any, value: Any) -> Any:
    if isinstance(value, Var):
        return ev.values[ev.current(value)]
    if isinstance(value, dict):
        return {k: _concrete_tree(ev, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_concrete_tree(ev, v) for v in value]
        return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
    return value


def _leaves(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        for v in (value.values() if isinstance(value, dict) else value):
            yield from _leaves(v)
    else:
        yield value
