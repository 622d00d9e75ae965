"""Python's builtins the compiler understands, and what each does with traced values.

``call`` (calls.py) looks a callee up in ``BUILTIN_CALLS`` before anything else: ``len`` of an
array is its first dimension, ``float`` of a 0-d array a traced Python float, ``max``/``min``
of traced numbers a fold of ``np.where``, ``sum`` a chain of additions, ``zip``/``enumerate``/
``list`` iterate an array row by row, ``print`` is a statement of the generated code,
``functools.partial`` of a function defined in the traced code is a ``LocalPartial``. numpy's own
functions that need the same care are in ``numpy_calls.py`` (``NUMPY_CALLS``, merged in here).
"""
from __future__ import annotations

import builtins
import functools
from typing import Any

import gast
import numpy as np

from ..errors import StaticValueError, YotaError
from ..ir.tape import Var
from ..ir.values import is_traced
from ..rules.template import is_static
from .numpy_calls import NUMPY_CALLS
from .outside_values import OutsideDict, OutsideList, OutsideTuple
from .resolve import item
from .structs import StructValue, call_dunder


def builtin_handler(fn: Any) -> Any:
    """The handler of ``fn`` in ``BUILTIN_CALLS`` (None: not a builtin understood here, or not
    hashable)."""
    try:
        hash(fn)
    except TypeError:
        return None
    return BUILTIN_CALLS.get(fn)


def _len(ev, args, kwargs, node):
    (x,) = args
    if isinstance(x, StructValue):
        return call_dunder(ev, x, "__len__", [], node)
    if isinstance(x, Var):
        if x.aval.ndim == 0:
            raise YotaError("len() of a 0-d array", ev.loc(node))
        ev.static_reads.add(x)
        return x.aval.shape[0]
    return len(x)


def _isinstance(ev, args, kwargs, node):
    value, cls = args
    return isinstance(ev.values.peek(value) if isinstance(value, Var) else value, cls)


def _type(ev, args, kwargs, node):
    (value,) = args
    if isinstance(value, StructValue):
        return value.cls
    if type(value) in (OutsideList, OutsideTuple, OutsideDict):   # read from outside
        return type(value)._base
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


def _sorted(ev, args, kwargs, node):
    """``sorted(d)`` of a dict: its keys, never traced, whatever its values are."""
    (x,) = args
    if is_traced(kwargs) or is_traced(list(x) if isinstance(x, dict) else x):
        raise StaticValueError("sorted() needs values known at compile time, but it is given "
                               "a traced value", ev.loc(node),
                               "Sort with np.sort (an array), or sort values known when "
                               "compiling (a dict's keys, ints).")
    return sorted(x, **kwargs)


def _dict(ev, args, kwargs, node):
    """``dict(pairs, k=v)``: a dict whose values may be traced; its keys may not."""
    if any(isinstance(a, Var) for a in args):
        raise StaticValueError("dict() of a traced array: its rows would be its keys",
                               ev.loc(node), "Build the dict from (key, value) pairs or "
                               "keywords.")
    out = dict(*args, **kwargs)
    if is_traced(list(out)):
        raise StaticValueError("dict() with a traced key: keys must be known at compile time",
                               ev.loc(node), "Key the dict by names or ints known when "
                               "compiling; keep traced values as its values.")
    return out


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
    return LocalPartial(fn, tuple(stored), kwargs)


class LocalPartial(functools.partial):
    """A partial of a ``def`` or ``lambda`` met while tracing (not callable from Python)."""

    def __new__(cls, fn, args, keywords):
        self = super().__new__(cls, _not_called, *args, **keywords)
        self.local = fn
        return self


def _not_called(*args, **kwargs):
    raise TypeError("a partial of a function defined inside traced code")


BUILTIN_CALLS = {
    len: _len, isinstance: _isinstance, type: _type, float: _float, int: _int, bool: _bool,
    abs: _abs, sum: _sum, max: _extremum(max, gast.Gt()), min: _extremum(min, gast.Lt()),
    zip: _iterating(zip), enumerate: _iterating(enumerate), reversed: _iterating(reversed),
    list: _iterating(list), tuple: _iterating(tuple), map: _map, sorted: _sorted, dict: _dict,
    getattr: _getattr, hasattr: _hasattr, item: _item, functools.partial: _partial,
    print: _print, is_static: _is_static, **NUMPY_CALLS,
}
