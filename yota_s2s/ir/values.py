"""The values the partial evaluator works with, and how they become tape operands.

During evaluation a Python name is bound to one of:

- a ``Var``: a traced value (arrays, numpy scalars, Python floats from the arguments, and
  anything computed from them); its concrete example value is kept beside the tape;
- a static Python value: ints, bools, strings, None, shapes, dtypes, modules, functions,
  constants, and containers (lists, tuples, dicts) that may hold Vars;
- a ``LocalFunction`` (a ``def`` or ``lambda`` inside the traced code) or an
  ``ArrayMethod`` (``x.sum`` before it is called).

``to_tree`` turns such a value into a tape operand tree (``Var``, ``Lit``, tuples).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SourceLoc, StaticValueError
from .tape import Lit, Var

if TYPE_CHECKING:
    import gast


MAX_LITERAL_SIZE = 64      # larger constant arrays are not written into generated code


def contains(value: Any, kind: type) -> bool:
    """Does ``value``, or anything inside its lists, tuples, dicts and slices, have ``kind``?"""
    if isinstance(value, kind):
        return True
    if isinstance(value, (list, tuple)):
        return any(contains(v, kind) for v in value)
    if isinstance(value, dict):
        return any(contains(v, kind) for v in value.values())
    if isinstance(value, slice):
        return any(contains(v, kind) for v in (value.start, value.stop, value.step))
    return False


def is_traced(value: Any) -> bool:
    """Does ``value`` (a Var or a container) hold a traced value anywhere?"""
    return contains(value, Var)


_PYTHON_DTYPES = (int, float, bool, complex)


def python_numbers(args: list) -> bool:
    """Are all of ``args`` Python numbers (constants, or traced values that are Python floats)?"""
    def python(a):
        if isinstance(a, Var):
            return a.aval.weak
        a = a.value if isinstance(a, Lit) else a
        return isinstance(a, _PYTHON_DTYPES) and not isinstance(a, np.generic)
    return bool(args) and all(python(a) for a in args)


def normalize_static(value: Any) -> Any:
    """Numpy scalars that Python would treat the same become Python scalars (``np.int64(3)`` ->
    ``3``, ``np.bool_(True)`` -> ``True``) so literals print plainly. Floating and complex
    numpy scalars keep their type: under NumPy 2's promotion (NEP 50) a Python float is "weak"
    and ``np.float64(2.0)`` is not (``x32 * np.float64(2.0)`` is float64, ``x32 * 2.0`` is
    float32); ``passes.constants`` writes them plainly where that changes nothing. A 0-d array
    becomes its scalar. A Python type where numpy takes a dtype (``int``, ``float``) becomes
    that dtype."""
    if isinstance(value, type) and value in _PYTHON_DTYPES:
        return np.dtype(value)      # ``x.astype(int)``, ``dtype=float``: numpy's dtype for it
    if isinstance(value, (np.bool_, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return normalize_static(value[()])
    return value


def weak_scalar(value: Any) -> Any:
    """``value`` as a "weak" Python scalar where it is a float64 or complex128 numpy scalar
    (``np.float64(0.5)`` -> ``0.5``): a math constant, such as ``np.log(2.0)`` in a derivative
    rule, that must not widen what it multiplies. Anything else is returned unchanged."""
    if type(value) is np.float64:
        return float(value)
    if type(value) is np.complex128:
        return complex(value)
    return value


def weak_tree(tree: Any) -> Any:
    """An operand tree with every float64/complex128 literal made weak (``weak_scalar``)."""
    if isinstance(tree, tuple):
        return tuple(weak_tree(t) for t in tree)
    if isinstance(tree, Lit) and type(tree.value) in (np.float64, np.complex128):
        return Lit(weak_scalar(tree.value))
    return tree


def to_tree(value: Any, loc: SourceLoc | None = None, key: bool = False) -> Any:
    """An evaluator value as a tape operand: ``Var``, ``Lit`` or a tuple of those.

    ``key=True`` treats a list as numpy does inside ``x[...]``: an index array.
    """
    if isinstance(value, Lit):
        return to_tree(value.value, loc, key) if isinstance(value.value, tuple) else value
    if isinstance(value, Var):
        return value
    if isinstance(value, tuple) or (isinstance(value, list) and not key):
        return tuple(to_tree(v, loc, key) for v in value)
    if isinstance(value, list):
        if is_traced(value):
            raise StaticValueError("indexing with a list of traced values is not supported", loc,
                                   "Index with an integer array instead.")
        return Lit(index_array(value))
    if isinstance(value, slice) and is_traced(value):
        raise StaticValueError("slice bounds must be known at compile time, but one is traced",
                               loc, "Use ints (or values computed from shapes) as slice bounds.")
    if isinstance(value, dict):
        raise StaticValueError("a dict cannot be passed to a numpy function", loc)
    if isinstance(value, np.ndarray) and value.size > MAX_LITERAL_SIZE:
        # arrays from globals and closures are read at call time (outside.py), arrays the
        # code computes are computed when it runs (calls.py): this one came from neither
        raise StaticValueError(
            f"a constant array of {value.size} elements ({value.dtype}{list(value.shape)}) that "
            "the generated code cannot read at call time is used in the computation", loc,
            "Make it a module global (read when the code runs) or pass it in as an argument.")
    return Lit(normalize_static(value))


def index_array(items: list) -> np.ndarray:
    """A list inside ``x[...]`` as the index array numpy makes of it: ``np.asarray(items)``,
    where an empty one (``[]``, ``[[], []]``, whatever its nesting) is an ``intp`` array of
    that shape, not ``asarray``'s float64 (numpy's own rule for an index that is not an
    array: ``x[[]]`` selects no rows)."""
    array = np.asarray(items)
    return array.astype(np.intp) if array.size == 0 else array


def static_of(value: Any) -> Any:
    """The static value of an operand tree leaf (undoing ``to_tree`` for Lits)."""
    if isinstance(value, Lit):
        return value.value
    if isinstance(value, tuple):
        return tuple(static_of(v) for v in value)
    return value


@dataclass
class LocalFunction:
    """A ``def`` or ``lambda`` met while evaluating: its node and the scope it closes over."""

    node: gast.FunctionDef | gast.Lambda
    scope: Any               # the defining Frame (read when the function is called)
    defaults: tuple
    kw_defaults: dict
    name: str


@dataclass
class ArrayMethod:
    """``x.sum`` before the call: the array and the method name."""

    var: Var
    name: str
