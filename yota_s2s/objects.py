"""The user's functions and values as the entry points and the tracer both read them, without
the compile machinery (``import yota_s2s`` imports this, not the frontend):

- ``unbind``: a bound method or callable object as ``(function, self)``; a callable without
  Python source (``np.sin``) as a function calling it (``calling``);
- ``param_names``: one name per positional argument;
- ``is_struct_object``: a class instance whose fields are arguments' leaves; ``is_library``:
  code that is never inlined (numpy, scipy, ...);
- ``host``: a GPU array's example value on the host; ``is_int_list``: a list of ints (token
  ids), which ``ys.grad`` first reads when the code runs (frontend/index_lists.py);
  ``is_lazy_array``: a dask array, traced by shape and dtype (its values computed only where
  the code reads them);
- ``array_leaves``, ``rebuilt``: a struct's arrays by path, and a copy of it with new values
  at some paths (nothing of it changed);
- ``MISSING``: the value of a name that a namespace did not hold (what the frontend records and
  the cache's guards compare with); ``LAYOUT``: the name under which the frontend records a
  container's length or keys.
"""
from __future__ import annotations

import copy
import enum
import functools
import inspect
import types
from typing import Any, Callable

import numpy as np

from .text import normal

MISSING = object()          # the value of a name that a namespace did not hold
LAYOUT = object()           # the name of a container's length-or-keys entry (depends.Dep)

# Library code is never inlined: a call into it needs a rule (or is static).
LIBRARY_MODULES = ("numpy", "scipy", "cupy", "jax", "torch", "math", "builtins", "operator",
                   "functools", "itertools", "collections", "typing", "abc", "yota_s2s.frontend",
                   "yota_s2s.ir", "yota_s2s.codegen", "yota_s2s.passes", "yota_s2s.objects")


def is_library(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return any(module == m or module.startswith(m + ".") for m in LIBRARY_MODULES)


def host(value: Any) -> Any:
    """A GPU (cupy) array as a numpy array: compiling only needs its example value."""
    if hasattr(type(value), "__cuda_array_interface__") and hasattr(type(value), "get"):
        return value.get()
    return value


def is_int_list(value: Any) -> bool:
    """A list of Python ints (bools are not ints here), not empty."""
    return type(value) is list and bool(value) and all(type(v) is int for v in value)


def is_lazy_array(value: Any) -> bool:
    """A dask array (an array with a task graph): compiling reads its shape and dtype, and its
    values only where the traced code looks at them (device="dask", docs/dask.md)."""
    t = type(value)
    return hasattr(t, "__dask_graph__") and hasattr(t, "compute") and hasattr(t, "dtype") \
        and hasattr(t, "shape")


def is_struct_object(value: Any) -> bool:
    """A class instance whose attributes are read lazily (not a function, module, enum...)."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType,
                          types.BuiltinFunctionType, enum.Enum, np.ufunc, np.dtype)):
        return False
    if not (hasattr(value, "__dict__") or hasattr(type(value), "__slots__")):
        return False
    return not is_library(type(value)) and not is_lazy_array(value)


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


# -- structs: their array leaves, rebuilt with new values ---------------------------

def array_leaves(node: Any, path: tuple = (), seen: set | None = None) -> Any:
    """``(path, array)`` for every array held by the fields and items of ``node``."""
    if hasattr(node, "__array_interface__") or hasattr(node, "__cuda_array_interface__"):
        yield path, node
        return
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, tuple) and hasattr(type(node), "_fields"):
        items = list(zip(type(node)._fields, node))
    elif isinstance(node, (list, tuple)):
        items = list(enumerate(node))
    elif is_struct_object(node):
        items = [(k, v) for k, v in vars(node).items() if isinstance(k, str)] \
            if hasattr(node, "__dict__") else \
            [(k, getattr(node, k)) for k in getattr(type(node), "__slots__", ()) if hasattr(node, k)]
    else:
        return
    for key, value in items:
        yield from array_leaves(value, path + (key,), seen)


def child(node: Any, key: Any) -> Any:
    if isinstance(node, dict) or not isinstance(key, str):
        return node[key]
    return getattr(node, key)


def groups(grads: dict) -> dict[Any, dict]:
    """``{path: v}`` by first key: ``{key: {rest of path: v}}``."""
    out: dict[Any, dict] = {}
    for path, g in grads.items():
        out.setdefault(path[0], {})[path[1:]] = g
    return out


def rebuilt(node: Any, grads: dict, fn: Callable) -> Any:
    """``node`` with ``fn`` applied at each path; new containers along the way, nothing mutated."""
    if () in grads:
        return fn(node, grads[()])
    changes = {key: rebuilt(child(node, key), sub, fn) for key, sub in groups(grads).items()}
    if isinstance(node, dict):
        return {**node, **changes}
    if isinstance(node, list):
        return [changes.get(i, v) for i, v in enumerate(node)]
    if isinstance(node, tuple) and hasattr(type(node), "_fields"):
        return node._replace(**changes)
    if isinstance(node, tuple):
        return tuple(changes.get(i, v) for i, v in enumerate(node))
    new = copy.copy(node)
    for key, value in changes.items():
        object.__setattr__(new, key, value)       # works for frozen dataclasses too
    return new
