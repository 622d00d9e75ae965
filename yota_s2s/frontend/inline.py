"""Inlining (mixed into ``Evaluator``): a Python function with source runs in a frame of its own.

A call of a function whose source the compiler can read (the user's, a library's pure Python)
is inlined: its arguments are bound to its signature, its defaults and closure cells read
where the generated code can reach them again (``fn.__defaults__[i]``,
``fn.__closure__[i].cell_contents``: outside.py), and its body runs in a new ``Frame``. A
``def`` or ``lambda`` of the traced code itself is a ``LocalFunction`` (``inline_local``); a
generator runs to its end at once. An error inside library code is said at the user's call
(``library_error``), with what to do in the user's code.
"""
from __future__ import annotations

import inspect
import types
import weakref
from typing import Any

import gast

from ..errors import UnsupportedSyntax, YotaError
from ..ir.values import LocalFunction
from .collect import skip_call
from .depends import library_function
from .frame import Frame
from .outside import cell_path, is_data
from .resolve import display_name
from .source import is_installed, parse_function


class InliningMixin:
    def inline(self, fn: Any, args: list, kwargs: dict, node: gast.AST | None) -> Any:
        """Run ``fn``'s source on ``args`` in a frame of its own (a method: its ``self`` first)."""
        if isinstance(fn, types.MethodType):
            fn, args = fn.__func__, [fn.__self__, *args]
        parsed = parse_function(fn)
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise UnsupportedSyntax(f"{fn.__name__} is an async function", parsed.loc(parsed.node),
                                    "Make it an ordinary function.")
        frame = self.call_frame(fn, parsed, args, kwargs, node)
        if not is_installed(parsed.file) or (self.frame is not None
                                           and is_installed(self.frame.fn.file)):
            return self.run_function(frame, parsed.node)
        return self.run_library_function(frame, fn, args, kwargs, node)

    def call_frame(self, fn: Any, parsed: Any, args: list, kwargs: dict,
                   node: gast.AST | None) -> Frame:
        """The frame ``fn`` runs in: its parameters bound (defaults read where they are), its
        closure's cells, its globals watched."""
        try:
            bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
        except TypeError as e:
            raise YotaError(f"{fn.__name__}(): {e}", self.loc(node)) from None
        given = set(bound.arguments)
        bound.apply_defaults()
        where = self.outside.where_function(fn)
        if len(given) < len(bound.arguments):
            self._defaults(fn, bound.arguments, given, where, node)
        closure, cells = self.read_closure(fn, where)
        frame = Frame(parsed, self.depends.watch(fn.__globals__), closure, None)
        frame.call = self.call_of(node)
        frame.cells = cells
        frame.locals.update(bound.arguments)
        return frame

    def read_closure(self, fn: Any, where: tuple | None) -> tuple[dict, dict]:
        """``fn``'s closure variables (an empty cell is left out) and where each cell is; a
        static value there is guarded by identity, data is read again when the code runs."""
        closure, cells = {}, {}
        for index, (name, cell) in enumerate(zip(fn.__code__.co_freevars, fn.__closure__ or ())):
            try:
                closure[name] = cell.cell_contents
            except ValueError:      # an empty cell: the name is not bound yet
                continue
            cells[name] = cell_path(where, index) or (None, ())
            if not is_data(closure[name]):      # arrays are read again when the code runs
                self.depends.cell(cell, closure[name], f"{fn.__qualname__}'s closure: {name}")
        return closure, cells

    def run_library_function(self, frame: Frame, fn: Any, args: list, kwargs: dict,
                             node: gast.AST | None) -> Any:
        """Library code called from the user's: an error inside it is said at this call (when
        collecting errors too: one for the call, not one per line of the library)."""
        called_at, collector, self.collector = self.loc(node), self.collector, None
        try:
            return self.run_function(frame, frame.fn.node)
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
        where = self.outside.where_function(func)
        if where is not None:       # where the code reaches it, it reaches the one it wraps
            root, path = where
            self.outside.function_found(func.__wrapped__, (root, path + (("attr", "__wrapped__"),)))
        inner = self.unguarded(func.__wrapped__)
        return types.MethodType(inner, fn.__self__) if isinstance(fn, types.MethodType) else inner

    def _defaults(self, fn: Any, arguments: dict, given: set, where: tuple | None,
                  node: gast.AST | None) -> None:
        """Parameters that took their defaults: ``fn.__defaults__`` is guarded by identity, and
        a default the function reaches from outside (an array, a list; any value of the dict
        ``__kwdefaults__``) is read where it is, ``fn.__defaults__[i]``, like a closure's data:
        changed in place, it is seen."""
        self.depends.defaults(fn)
        if where is None or where[0] is None:
            self._unreached_defaults(fn, arguments, given, node)
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
            # __kwdefaults__ is a dict: an item can change in place (a number in it is read at
            # run time or checked, like a config dict's); __defaults__ is a tuple
            arguments[name] = self.outside.wrap(arguments[name], (root, path + step), node,
                                                  name, field=step[0][1] == "__kwdefaults__")

    def _unreached_defaults(self, fn: Any, arguments: dict, given: set,
                            node: gast.AST | None) -> None:
        """The defaults of a function the generated code cannot reach (one passed in as an
        argument): guarded by value like the rest of its data (``OutsideReads.unreached``): an
        array or list in ``__defaults__`` compared with a copy at each call, an item of the
        dict ``__kwdefaults__`` (which can be rebound in place) by its slot too. A library's
        function (an installed package's, or yota_s2s's own ``np.gradient``) is not: library
        code's defaults do not change while a program runs (docs/outside.md)."""
        if is_installed(fn.__code__.co_filename) or library_function(fn):
            return
        place = self.outside.IN_DEFAULTS
        kwdefaults = fn.__kwdefaults__ or {}
        for name in [n for n in arguments if n not in given]:
            if name in kwdefaults:
                arguments[name] = self.outside.unreached_item(kwdefaults, name, kwdefaults[name],
                                                              node, name, place)
            else:
                arguments[name] = self.outside.unreached(arguments[name], node, name, place)

    def inline_local(self, fn: LocalFunction, args: list, kwargs: dict, node: gast.AST) -> Any:
        """Run a ``def`` or ``lambda`` of the traced code, in a frame under the one it was
        defined in."""
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
        """Run a function's body (a lambda's expression) in ``frame``: its return value."""
        if _is_generator(node):
            # A generator runs to the end at once; its values are what it yields, in order (the
            # caller iterates them: list(gen(x)), for v in gen(x)).
            frame.yields = []
            self.run_body(frame, node.body)
            return frame.yields
        if isinstance(node, gast.Lambda):
            with self.in_frame(frame):
                return self.expr(node.body)
        return self.run_body(frame, node.body)


def _is_generator(node: gast.AST) -> bool:
    """A ``def`` whose own body (not a nested function's) yields (asked on each call of a
    function inlined, rule functions too: found once per parsed function)."""
    if not isinstance(node, gast.FunctionDef):
        return False
    found = _GENERATORS.get(node)
    if found is None:
        found = _GENERATORS[node] = _yields(node)
    return found


_GENERATORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _yields(node: gast.FunctionDef) -> bool:
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.Yield, gast.YieldFrom)):
            return True
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            todo.extend(gast.iter_child_nodes(n))
    return False


def _local_signature(fn: LocalFunction) -> inspect.Signature:
    """The signature of a ``def`` or ``lambda`` of the traced code, its defaults as evaluated."""
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
