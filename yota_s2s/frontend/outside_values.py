"""Values read from outside the function while tracing, apart from where they were found
(outside.py): the random generators, what counts as data, and the containers that hand out
their items wrapped (``OutsideList``, ``OutsideTuple``, ``OutsideDict``), so that every item
the code reads is read at run time or guarded, however Python reads it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import StaticValueError
from ..ir.tape import Var, is_sparse
from ..objects import is_struct_object

MAX_ITEMS = 10_000                 # containers larger than this are not searched for data


@dataclass(eq=False)
class GeneratorRef:
    """A random generator the function reads from outside (``rs``, ``rng``, ``np.random``)."""

    obj: Any
    where: tuple | None            # (root, path), or None where generated code cannot reach it


def is_generator(value: Any) -> bool:
    return isinstance(value, (np.random.RandomState, np.random.Generator))


# what to do with a scipy.sparse matrix read from outside, used otherwise than in a product
SPARSE_HINT = ("Write its products with @ (A @ x, x @ A, A.T @ x) or A.dot(x); for anything "
               "else, make it dense outside the function (A.toarray()).")


def is_data(value: Any) -> bool:
    """A numeric array, or a scipy.sparse matrix of numbers (read at run time the same way:
    rules/sparse.py)."""
    return (type(value) is np.ndarray or is_sparse(value)) and value.dtype.kind in "biufc"


def path_text(text: str, path: tuple) -> str:
    """``text`` followed by the steps of ``path``: ``model.CFG['l2']``, ``len(model.IDS)``."""
    for kind, key in path:
        text = f"{kind}({text})" if kind == "len" else f"tuple({text})" if kind == "keys" else \
            text + (f".{key}" if kind == "attr" else f"[{key!r}]")
    return text


class _Reads:
    """What ``OutsideList``, ``OutsideTuple`` and ``OutsideDict`` share: every way Python has to
    read a container's items goes through ``__getitem__``, which wraps (and so reads at run
    time, or guards) the item, never the raw item compiled in unchecked. Builtin methods that
    read the items in C (``copy``, ``+``, ``reversed``, ``{**d}``, ``d | e``) are written over
    the wrapped items; the ones that decide something from the items' values when compiling
    (``index``, ``count``, ``==``) are refused where an item is read at run time."""

    _kind = "container"
    _base: type = list
    _loc: Any = staticmethod(lambda: None)     # where the source reads it (set by OutsideReads)

    def _known(self) -> list:
        """The wrapped items, each a value known when compiling (else refused)."""
        items = [self[k] for k in self._keys()]
        if any(isinstance(v, Var) for v in items):
            raise StaticValueError(
                f"a {self._kind} read from outside the function is compared by value while "
                "compiling, and a number in it is read when the code runs", self._loc(),
                "Compare or search the container outside the function and pass the result in, "
                "or index it directly (cfg['l2'], scales[0]).")
        return items

    def _keys(self) -> Any:
        return range(len(self))

    def _plain(self) -> Any:
        """The container as a plain one, of its items as known when compiling."""
        return self._base(self._known())

    def __eq__(self, other: Any) -> Any:
        if not isinstance(other, self._base):
            return NotImplemented           # (another kind: unequal, as for a plain one)
        return self._plain() == (other._plain() if isinstance(other, _Reads) else other)

    def __ne__(self, other: Any) -> Any:
        same = self.__eq__(other)
        return same if same is NotImplemented else not same

    __hash__ = None  # type: ignore[assignment]


class _Sequence(_Reads):
    """``OutsideList`` and ``OutsideTuple``: items by position."""

    _item: Any

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self._made(self[j] for j in range(*i.indices(len(self))))
        n = len(self)
        k = i + n if isinstance(i, int) and -n <= i < 0 else i
        return self._item(k, self._raw(i))

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __reversed__(self) -> Any:
        return (self[i] for i in range(len(self) - 1, -1, -1))

    def __add__(self, other: Any) -> Any:
        return self._made(list(self) + list(other))

    def __radd__(self, other: Any) -> Any:
        return type(other)(list(other) + list(self))

    def __mul__(self, n: Any) -> Any:
        return self._made(list(self) * n)

    __rmul__ = __mul__

    def index(self, value: Any, *bounds: Any) -> int:
        return self._known().index(value, *bounds)

    def count(self, value: Any) -> int:
        return self._known().count(value)


class OutsideList(_Sequence, list):
    """A list read from outside while tracing: each item is wrapped as it is read."""

    _kind, _base = "list", list

    def __init__(self, items: list, item: Any):
        list.__init__(self, items)
        self._item = item

    def _raw(self, i: Any) -> Any:
        return list.__getitem__(self, i)

    def _made(self, items: Any) -> list:
        return list(items)

    def copy(self) -> list:
        return list(self)


class OutsideTuple(_Sequence, tuple):
    """A tuple read from where the generated code cannot reach: each item is guarded as read."""

    _kind, _base = "tuple", tuple

    def __new__(cls, items: tuple, item: Any) -> "OutsideTuple":
        made = tuple.__new__(cls, items)
        made._item = item
        return made

    __hash__ = tuple.__hash__

    def _raw(self, i: Any) -> Any:
        return tuple.__getitem__(self, i)

    def _made(self, items: Any) -> tuple:
        return tuple(items)


class OutsideDict(_Reads, dict):
    """A dict read from outside while tracing: each value is wrapped as it is read. (Its own
    ``__iter__`` makes ``{**d}`` and ``e.update(d)`` read through ``__getitem__`` too.)"""

    _kind, _base = "dict", dict

    def __init__(self, items: dict, item: Any):
        dict.__init__(self, items)
        self._item = item

    def _keys(self) -> Any:
        return list(dict.keys(self))

    def _plain(self) -> dict:
        return dict(zip(self._keys(), self._known()))

    def __iter__(self) -> Any:
        return iter(dict.keys(self))

    def __getitem__(self, key: Any) -> Any:
        return self._item(key, dict.__getitem__(self, key))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def values(self) -> Any:
        return [self[k] for k in self]

    def items(self) -> Any:
        return [(k, self[k]) for k in self]

    def copy(self) -> dict:
        return {k: self[k] for k in self}

    def __or__(self, other: Any) -> dict:
        return {**self.copy(), **other}

    def __ror__(self, other: Any) -> dict:
        return {**other, **self.copy()}


def holds_mutable(value: Any) -> bool:
    """A tuple (of tuples) that holds a list or a dict."""
    return any(type(v) in (list, dict) or (isinstance(v, tuple) and holds_mutable(v))
               for v in value)


def standard_library(cls: type) -> bool:
    module = (getattr(cls, "__module__", None) or "").split(".")[0]
    return module in getattr(sys, "stdlib_module_names", ()) or module == "builtins"


def plain_key(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(plain_key(k) for k in key)
    return type(key) in (str, int, bool)


def is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def holds_data(value: Any, count: list) -> bool:
    """Does the container hold an array, a struct object or a generator (searched up to
    ``MAX_ITEMS`` items)?"""
    count[0] += 1
    if count[0] > MAX_ITEMS:
        return False
    if is_data(value) or is_generator(value) or \
            (is_struct_object(value) and not standard_library(type(value))):
        return True
    if isinstance(value, dict):
        return any(holds_data(v, count) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_data(v, count) for v in value)
    return False
