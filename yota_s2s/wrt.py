"""Which arguments to differentiate: one reading of ``wrt=`` (and ``argnum=``) for every entry
point (``simplegrad``, ``grad``, ``gradient``, ``value_and_grad``, ``elementwise_grad``,
``hvp``, ``hessian``, ``jacobian``).

An argument is named by its position (an int, negative from the end as in Python) or by its
parameter name (a str; ``"self"`` for a bound method's object); several by a list, tuple or
set of them. Anything else is a ``UsageError`` that says what is accepted, and so is asking
for the gradient of an int (JAX's rule: an int has no gradient, and a ``None`` in its place
would only fail later, in the optimizer's arithmetic). Ints merely passed along keep getting
``None``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from .errors import SourceLoc, UsageError
from .objects import param_names

_FORMS = "an argument's position (int), its parameter name (str), or a list, tuple or set of them"


def wrt_items(wrt: Any, what: str = "wrt") -> tuple | None:
    """``wrt`` as a tuple of positions and names (None stays None: every argument), checked
    for its form only (the positions and names are checked against the function later)."""
    if wrt is None:
        return None
    if type(wrt) is tuple:                  # ys.gradient(f, (0, 1)) calls grad with it each time
        try:                                # (by type too: (True,) == (1,) and (1.0,) too)
            known = _CHECKED.get((wrt, tuple(map(type, wrt))))
        except TypeError:                   # an unhashable item: refused below
            known = None
        if known is not None:
            return known
    if isinstance(wrt, (list, tuple)):
        items = tuple(wrt)
    elif isinstance(wrt, (set, frozenset)):
        items = tuple(sorted(wrt, key=lambda w: (isinstance(w, str), w if isinstance(w, str)
                                                 else _position_or_0(w))))
    else:
        items = (wrt,)
    for w in items:
        if not (isinstance(w, str) or (isinstance(w, (int, np.integer))
                                       and not isinstance(w, (bool, np.bool_)))):
            raise UsageError(f"{what}={wrt!r}: {w!r} is not {_FORMS}",
                             hint=f"Write e.g. {what}=0, {what}=\"x\" or {what}=(0, \"b\").")
    if not items:
        raise UsageError(f"{what}={wrt!r} asks for no gradient",
                         hint=f"Name at least one argument, or leave {what} out for all of them.")
    if type(wrt) is tuple and len(_CHECKED) < 256:
        _CHECKED[wrt, tuple(map(type, wrt))] = items
    return items


_CHECKED: dict[tuple, tuple] = {}       # tuples already read: the hot path's lookup


def _position_or_0(w: Any) -> int:
    return int(w) if isinstance(w, (int, np.integer)) else 0


def wrt_positions(fn: Callable, args: tuple, wrt: Any, offset: int = 0,
                  what: str = "wrt") -> tuple[int, ...] | None:
    """The positions in ``args`` (which start with a bound method's object when ``offset`` is
    1) that ``wrt`` asks for, in its order, without repeats; None for every argument. Raises
    ``UsageError`` for a position or name that is not an argument's, and for an int asked
    for (by ``wrt``, or as the only kind of argument there is)."""
    name = getattr(fn, "__name__", "f")
    names = param_names(fn, len(args))
    items = wrt_items(wrt, what)
    if items is None:
        if len(args) > offset and all(int_like(a) for a in args[offset:]):
            shown = [f"{n} is {_kind(a)}" for n, a in zip(names[offset:], args[offset:])]
            what_ = (f"{name}'s only argument {shown[0]}" if len(shown) == 1 else
                     f"every argument of {name} is an int ({'; '.join(shown)})")
            raise UsageError(f"{what_}: an int has no gradient", where(fn),
                             f"Pass the values to differentiate as floats: "
                             f"np.asarray({names[offset]}, dtype=float), or 1.0 for 1.")
        return None
    out: list[int] = []
    users = len(args) - offset
    for w in items:
        if isinstance(w, str):
            if w not in names:
                raise UsageError(f"{what}={w!r}: {name} has no parameter {w!r}", where(fn),
                                 f"Its parameters are {', '.join(names) or 'none'}.")
            p = names.index(w)
        else:
            if not -users <= w < users:
                raise UsageError(f"{what}={w!r}: {name} is called with {users} argument"
                                 f"{'' if users == 1 else 's'}, so position {w} is none of them",
                                 where(fn), f"Use positions 0..{users - 1} or the names "
                                      f"{', '.join(names[offset:])}.")
            p = int(w) % users + offset
        if int_like(args[p]):
            raise UsageError(f"{what}={w!r} asks for the gradient of {name}'s argument "
                             f"{names[p]}, which is {_kind(args[p])}; an int has no gradient",
                             where(fn), f"Pass {names[p]} as a float to differentiate it "
                                  f"(np.asarray({names[p]}, dtype=float), or 1.0 for 1), or leave "
                                  f"it out of {what}.")
        if p not in out:
            out.append(p)
    return tuple(out)


def int_like(value: Any) -> bool:
    """An int, a numpy integer or bool, or an array of them: a value with no gradient."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iub"
    return isinstance(value, (int, np.integer, np.bool_))


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    return f"the int {value!r}" if isinstance(value, int) else f"a {type(value).__name__}"


def one_position(f: Callable, args: tuple, argnum: Any, what: str) -> int:
    """The position in ``args`` of the one argument ``argnum`` names (a position or a
    parameter name): ``hvp``, ``hessian`` and ``jacobian`` differentiate one array."""
    items = wrt_items(argnum, "argnum")
    if len(items) != 1:
        raise UsageError(f"{what}: argnum={argnum!r} names {len(items)} arguments; {what} "
                         "differentiates one", hint="Give one position or parameter name.")
    return wrt_positions(f, args, items[0], 0, "argnum")[0]


def where(fn: Callable) -> SourceLoc | None:
    """The ``def`` line of ``fn``: where an error about its arguments points."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return None
    import linecache
    text = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    return SourceLoc(code.co_filename, code.co_firstlineno, func=code.co_name, text=text)


_EMPTY = inspect.Parameter.empty
_PARAMS: dict[Any, tuple[tuple[str, Any, Any], ...]] = {}


def with_keywords(f: Callable, args: tuple, kwargs: dict) -> tuple:
    """``args`` with ``f``'s keyword arguments put in their parameters' places (a parameter
    skipped before one takes its default): the entry points compile positional arguments,
    and the generated function takes them by name too."""
    fn = getattr(f, "__func__", f)
    key = getattr(fn, "__code__", fn)
    params = _PARAMS.get(key)
    if params is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        params = _PARAMS[key] = () if sig is None else tuple(
            (p.name, p.kind, p.default) for p in sig.parameters.values())
    if fn is not f and params and params[0][1] != inspect.Parameter.KEYWORD_ONLY:
        params = params[1:]                 # a bound method: self is given
    positional = [p for p in params if p[1] in (inspect.Parameter.POSITIONAL_ONLY,
                                                 inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    names = [p[0] for p in positional]
    name = getattr(fn, "__name__", "f")
    places = {}
    for k in kwargs:
        if k not in names:
            if not any(p[0] == k for p in params):
                raise UsageError(f"{name}() got the keyword argument {k}=, which is none of its "
                                 "parameters", where(fn),
                                 f"Its parameters are {', '.join(p[0] for p in params)}.")
            raise UsageError(f"{name}() got the keyword argument {k}=, which is keyword-only: "
                             "arguments are compiled by position", where(fn),
                             f"Make {k} a positional parameter (before the *), or fix its value "
                             f"in a lambda: ys.grad(lambda {', '.join(names)}: {name}("
                             f"{', '.join(names)}, {k}=...), ...).")
        i = names.index(k)
        if i < len(args):
            raise UsageError(f"{name}() got multiple values for argument {k!r}", where(fn),
                             f"Pass {k} by position or by name, not both.")
        places[i] = kwargs[k]
    out = list(args)
    for i in range(len(args), max(places) + 1):
        if i in places:
            out.append(places[i])
        elif positional[i][2] is not _EMPTY:
            out.append(positional[i][2])
        else:
            raise UsageError(f"{name}() is missing the argument {names[i]!r}", where(fn),
                             f"Pass {names[i]} too (by position or by name).")
    return tuple(out)
