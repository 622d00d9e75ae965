"""What a name or method means to the compiler: ndarray methods and attributes, and which
callables are inlined, called at compile time, or refused.

- ``x.sum(axis=1)`` is ``np.sum(x, axis=1)``: ``ARRAY_METHODS`` maps each ndarray method to
  the numpy function that has its rule (with small adapters where the call shapes differ,
  ``x.reshape(3, 4)``). ``x.sort()``, ``x.partition(k)`` and ``x.fill(v)`` change ``x``:
  ``IN_PLACE_METHODS``, recorded as updates (updates.py).
- ``x.shape``, ``x.ndim``, ``x.dtype``, ``x.size`` are static: read from the abstract value.
- Python functions with source are inlined, except library code (numpy, scipy, ...), which
  must have a rule.
"""
from __future__ import annotations

import operator
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedSyntax
from ..marks import generated_file, is_entry_point
from ..objects import is_library
from ..rules.elementwise import astype
from ..rules.shape import flatten, ravel

STATIC_ARRAY_ATTRS: dict[str, Callable] = {
    "shape": lambda a: a.shape,
    "ndim": lambda a: a.ndim,
    "size": lambda a: a.size,
    "dtype": lambda a: a.dtype,
    "itemsize": lambda a: a.dtype.itemsize,
    "nbytes": lambda a: a.size * a.dtype.itemsize,
}
SIZED_ATTRS = frozenset({"shape", "size", "nbytes"})    # those that a selection's count sets


def _shape_args(args: tuple) -> Any:
    """``x.reshape(3, 4)`` and ``x.reshape((3, 4))`` both mean the shape (3, 4)."""
    return args[0] if len(args) == 1 else tuple(args)


def _reshape(x, args, kwargs):
    return np.reshape, (x, _shape_args(args)), kwargs


def _transpose(x, args, kwargs):
    axes = _shape_args(args) if args else kwargs.pop("axes", None)
    return np.transpose, (x,) if axes is None else (x, axes), kwargs


def _ravel(x, args, kwargs):
    return ravel, (x,), kwargs


def _flatten(x, args, kwargs):
    return flatten, (x,), kwargs


def item(x, *index):
    """``x.item(*index)`` as a function; the frontend writes it with other primitives
    (calls.py ``_item``): the element (a 0-d value), then ``float`` or ``complex`` of it."""
    return x.item(*index)


def _item(x, args, kwargs):
    return item, (x, *args), kwargs


def _method(fn):
    return lambda x, args, kwargs: (fn, (x, *args), kwargs)


def _dot(x, args, kwargs):
    """``x.dot(y)``: ``np.dot``; of a scipy.sparse ``A``, ``A @ y``, which is what scipy
    computes."""
    return (operator.matmul if x.aval.sparse else np.dot), (x, *args), kwargs


ARRAY_METHODS: dict[str, Callable] = {
    "reshape": _reshape, "transpose": _transpose, "flatten": _flatten, "ravel": _ravel,
    "item": _item, "astype": _method(astype), "dot": _dot,
    **{name: _method(getattr(np, name)) for name in (
        "sum", "mean", "max", "min", "prod", "std", "var", "cumsum", "cumprod", "argmax",
        "argmin", "argsort", "argpartition", "any", "all", "clip", "round", "conj",
        "conjugate", "trace", "diagonal", "squeeze", "swapaxes", "repeat", "take", "nonzero",
        "copy", "searchsorted")},
}

# Methods that change the array in place (and return None): the frontend records an update.
IN_PLACE_METHODS: dict[str, Callable | None] = {"sort": np.sort, "partition": np.partition,
                                                "fill": None}


def array_method(method, args: tuple, kwargs: dict) -> tuple[Callable, tuple, dict]:
    """``x.name(*args, **kwargs)`` as a call of the function that carries the rule."""
    return ARRAY_METHODS[method.name](method.var, args, dict(kwargs))


def is_compiler(fn: Any) -> bool:
    """yota_s2s's own entry points and the functions they return (``ys.grad``, what
    ``ys.gradient`` or ``ys.vjp`` makes), told by their marks (``marks.py``): never inlined,
    since what they compute is a gradient, not their source."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    return getattr(fn, "__yota_gradient__", False) is True or is_entry_point(fn)


def nested_gradient(name: str, loc: Any = None) -> UnsupportedSyntax:
    """The error for differentiating what yota_s2s computes (a gradient of a gradient)."""
    return UnsupportedSyntax(
        f"{name} is a gradient function made by yota_s2s (ys.grad, ys.gradient, "
        "ys.value_and_grad, ys.elementwise_grad, ys.vjp...): differentiating a call of it "
        "works for functions of arrays and floats, not here (ys.grad itself, a bound "
        "method, or struct arguments)", loc,
        "For a second derivative, differentiate the generated gradient: "
        "df = ys.simplegrad(f, x), then ys.simplegrad(lambda x: np.dot(df(x)[1], v), x), "
        "or use ys.hvp(f, x) (docs/porting.md).")


def local_gradient(name: str, local: str, loc: Any = None) -> UnsupportedSyntax:
    """The error for ``ys.gradient(g)`` of a ``g`` defined inside the function being
    compiled that cannot be lifted out of it (frontend/local_gradients.py: it has defaults, or
    reads another function defined there)."""
    shown = "a lambda" if local == "<lambda>" else local
    return UnsupportedSyntax(
        f"{name} of {shown} defined inside the function being compiled, with defaults or "
        "reading another function defined there: it cannot be lifted out (a gradient of a "
        "function made there is compiled where it reads only values)", loc,
        "Define it outside, taking what it reads of the compiled function's values as "
        "arguments, and pass them: ys.gradient(lambda y, x: x * y)(2.0, x) differentiates "
        "through x as well.")


# module-level helpers that only the buffered form of a generated module has (codegen/workspace.py)
BUFFERED_HELPERS = ("_work_arrays", "_result", "_deliver", "_check_out")


def plain_form(fn: Any, loc: Any = None) -> Any:
    """What the frontend inlines for ``fn``: for a function of a buffered generated module,
    the same function of that module's plain form (compiler.py ``PlainForm``): the buffered
    code keeps per-thread work arrays, which a gradient of it cannot go through. ``fn``
    itself otherwise (a plain generated module inlines as it is)."""
    func = fn.__func__ if isinstance(fn, types.MethodType) else fn
    scope = getattr(func, "__globals__", None) or {}
    make = scope.get("__yota_plain__")
    if make is not None:
        plain = make(func.__name__)
        if plain is None:
            return fn
        return types.MethodType(plain, fn.__self__) if isinstance(fn, types.MethodType) else plain
    if any(name in scope for name in BUFFERED_HELPERS) and _generated(scope):
        raise UnsupportedSyntax(
            f"{func.__qualname__} is a buffered gradient module imported from "
            f"{scope.get('__file__')}: its plain form, which a gradient of it needs, is "
            "not known in this process", loc,
            "Write that module in its plain form (ys.simplegrad(..., buffers=False, "
            "out_dir=...)), or call the gradient ys.simplegrad returns in this process: the "
            "compiler finds its plain form itself.")
    return fn


def _generated(scope: dict) -> bool:
    if isinstance(scope.get("__yota_text__"), str):
        return True
    file = scope.get("__file__")
    return isinstance(file, str) and generated_file(Path(file))


def is_inlinable(fn: Any) -> bool:
    """A Python function of the user's (or a rule function) that the frontend can inline."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    return isinstance(fn, types.FunctionType) and not is_library(fn)


def is_random(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    owner = getattr(fn, "__self__", None)
    return module.startswith("numpy.random") or isinstance(owner, (np.random.Generator,
                                                                   np.random.RandomState))


def display_name(fn: Any) -> str:
    """How the user would write ``fn``: ``np.tanh``, ``np.linalg.inv``, ``math.exp``, ``f``."""
    from ..rules.callables import numpy_path
    if is_random(fn):
        return f"np.random.{getattr(fn, '__name__', 'function')}"
    path = numpy_path(fn)
    if path:
        return f"np.{path}"
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    if module in ("math", "builtins"):
        return f"{module}.{name}" if module == "math" else name
    return f"{module.split('.')[-1]}.{name}" if module and module != "__main__" else name
