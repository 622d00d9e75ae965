"""Frontend: Python source + example arguments -> SSA tape (see evaluator.py)."""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UnsupportedSyntax
from ..ir.assumptions import IDENTITY, Assumption
from ..ir.tape import Tape, Var
from ..rules.registry import RULES, RuleSet
from ..text import normal
from .collect import Collector
from .depends import Assumptions, rules_assumption
from .evaluator import Evaluator, Frame
from .externals import FUNCTION
from .flatten import Flattener, arg_kind, is_struct_object, leaf_names
from .resolve import is_compiler
from .source import parse_function
from .values import to_tree


def param_names(fn: Any, n_args: int) -> tuple[str, ...]:
    """One name per positional argument: the parameter's, or ``args_0``... for ``*args``
    (or those a wrapper of ours lists in ``__yota_params__``: ``ys.vjp``'s)."""
    given = getattr(fn, "__yota_params__", None)
    if given is not None and len(given) == n_args:
        return tuple(given)
    fn = getattr(fn, "__yota_calls__", fn)     # calling(f)'s are f's
    if isinstance(fn, np.ufunc):        # numpy < 2.3 gives ufuncs no signature
        return (("x",) if fn.nin == 1 else tuple(f"x{i + 1}" for i in range(fn.nin)))[:n_args]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):     # a builtin without one
        return tuple(f"args_{i}" for i in range(n_args))
    names = []
    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names += [_spread_name(p.name, i, params) for i in range(n_args - len(names))]
    return tuple(names[:n_args])


def _spread_name(name: str, i: int, params: list) -> str:
    """``args_1`` for ``*args``'s second item, ``args_1_`` where a parameter is ``args_1``."""
    taken = {normal(p.name) for p in params}
    spread = f"{name}_{i}"
    while normal(spread) in taken:
        spread += "_"
    return spread


def unbind(fn: Any) -> tuple[Callable, Any]:
    """``(function, self)`` for a bound method or a callable object, ``(fn, None)`` otherwise:
    ``model.loss`` is compiled as ``loss(self, ...)`` with ``self`` a structured argument. A
    callable without Python source (``np.sin``, ``operator.mul``) is a function calling it."""
    if isinstance(fn, types.MethodType) and not isinstance(fn.__self__, type):
        return fn.__func__, fn.__self__
    if is_struct_object(fn) and isinstance(getattr(type(fn), "__call__", None), types.FunctionType):
        return type(fn).__call__, fn
    if callable(fn) and not hasattr(fn, "__code__") \
            and not isinstance(fn, (type, functools.partial)):
        return calling(fn), None
    return fn, None


_callers: dict[Any, Callable] = {}


def calling(fn: Callable) -> Callable:
    """A Python function that calls ``fn``, a callable without Python source (a numpy
    function, an operator, a builtin: ``ys.grad(np.sin, x)``), with its name and parameters:
    what the entry points compile for it. The same one every time, so ``ys.grad``'s cache
    finds its gradient again."""
    try:
        return _callers[fn]
    except KeyError:
        pass
    except TypeError:           # unhashable
        return _caller(fn)
    made = _callers[fn] = _caller(fn)
    return made


def _caller(fn: Callable) -> Callable:
    def call(*args):
        return fn(*args)
    name = getattr(fn, "__name__", None)
    call.__yota_name__ = call.__name__ = call.__qualname__ = \
        name if isinstance(name, str) and name.isidentifier() else "f"
    call.__yota_calls__ = fn            # param_names reads its parameters' names
    return call


def trace_function(fn: Any, args: Sequence[Any], rules: RuleSet = RULES,
                   collector: Collector | None = None,
                   dynamic: frozenset[int] = frozenset(),
                   regions: bool = True) -> tuple[Tape, Evaluator]:
    """Evaluate ``fn`` on ``args``; returns the tape and the evaluator (which holds the example
    value of every Var, for the backward pass, and ``flattener``/``depends``: what the code
    read from its arguments and its globals). A ``collector`` turns on collecting mode."""
    fn, self_arg = unbind(fn)
    if self_arg is not None:
        args = (self_arg, *args)
    if is_compiler(fn) and getattr(fn, "__yota_inline__", None) is not None:
        from ..higher import calling
        fn = calling(fn, args)      # ys.gradient(ys.gradient(f)): a function that calls it
    parsed = parse_function(fn)
    if inspect.isgeneratorfunction(fn):
        raise UnsupportedSyntax(f"{parsed.name} is a generator function: the function to "
                                "differentiate must return its value", loc=parsed.loc(parsed.node),
                                hint="Return a list (or a sum) of what it yields; generators are "
                                     "fine in the helpers it calls.")
    ev = Evaluator(rules)
    ev.collector = collector
    ev.regions = regions                # loops as loop regions (frontend/loops.py), or unrolled
    ev.flattener = flat = Flattener(ev.values, ev.input_vars, dynamic)
    ev.externals.function_found(fn, (FUNCTION, ()))     # its closure: the code's _fn argument
    names = param_names(fn, len(args))
    loc = flat.loc = parsed.loc(parsed.node)
    traced_args = [flat.flatten(a, i, (), names[i]) for i, a in enumerate(args)]
    result = ev.current_tree(ev.inline(fn, traced_args, {}, None))
    # the function's own name (a decorated one's too: loss, not its wrapper); ys.vjp's: f_vjp
    name = getattr(fn, "__yota_name__", None) or getattr(fn, "__name__", None) or parsed.name
    if not isinstance(name, str) or not name.isidentifier():
        name = parsed.name
    if isinstance(result, Var) and result.hint is None:
        # the value of loss() is called loss
        result.hint = name if name.isidentifier() else "value"
    inputs = sorted(flat.inputs, key=lambda i: i.argnum)      # struct fields are read lazily
    leaf_names(inputs, names)
    result = to_tree(result, loc)
    tape = Tape(name=name, params=names, inputs=inputs, stmts=ev.placed_rows(ev.stmts, result),
                result=result, statics=flat.statics, loc=loc, layout=flat.layout,
                arg_kinds=tuple("int" if i in dynamic and type(a) is int else arg_kind(a)
                                for i, a in enumerate(args)), freevars=fn.__code__.co_freevars,
                loops=list(ev.loop_notes))
    ev.assumes = assumptions(tape, ev, rules)
    return tape, ev


def assumptions(tape: Tape, ev: Evaluator, rules: RuleSet) -> Assumptions:
    """The one record of what ``tape``'s code assumes about the world outside its arguments
    (``ir.assumptions``), kept on the tape (``tape.assumptions``) and returned with the guards'
    view of it: what the cache (``ys.grad``) and ``simplegrad``'s function check."""
    flat = ev.flattener
    record = [*ev.externals.record, *ev.assumed, *ev.depends.record()]
    record += [Assumption(f"type({a}) is {cls.__qualname__}", "class", IDENTITY, flat.loc,
                          (a, cls), code=True) for a, cls in flat.types]
    record += [Assumption(f"{a} is {b}", "tie", IDENTITY, flat.loc, (a, b))
               for a, b in flat.aliases]
    record += [Assumption(f"{a}.{n} not set on the object (its class's is read)", "attribute",
                          IDENTITY, flat.loc, (a, n)) for a, n in dict.fromkeys(flat.absent)]
    record.append(rules_assumption(rules))
    tape.assumptions = tuple(record)
    return Assumptions(tuple(flat.types), tuple(flat.aliases), tuple(ev.depends),
                       tuple(dict.fromkeys(flat.absent)), tape.assumptions)


__all__ = ["assumptions", "Collector", "Evaluator", "Frame", "trace_function", "parse_function", "unbind"]
