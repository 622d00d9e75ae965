"""The structure of a structured result: what a function returns around its arrays.

A function may return one array, or a tuple, list, dict, namedtuple or dataclass of them (nested
as deep as it likes). The tape's ``result`` is the same tree written as nested tuples of its
leaves (``Var`` and ``Lit``), which is what the generated module returns; the ``Structure`` kept
beside it says what each tuple was, and the entry points rebuild the user's value from the
module's tuples with ``rebuild`` (``{"loss": l, "acc": a}`` comes back a dict, not ``(l, a)``).

    Structure("dict", keys=("loss", "acc"), children=(LEAF, LEAF))
    rebuild(that, (0.5, 0.9)) == {"loss": 0.5, "acc": 0.9}

``flatten`` does the reverse on concrete values: a cotangent of ``f``'s structure for ``ys.vjp``
becomes one leaf per array, in the order of the tape's leaves.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..objects import rebuilt

KINDS = ("leaf", "tuple", "list", "dict", "namedtuple", "dataclass")


@dataclass(frozen=True)
class Structure:
    """One node of a result's structure: a ``leaf`` (an array, a number, None), or a container
    of ``kind`` with ``children`` (``keys``: a dict's keys, a dataclass's field names; ``cls``:
    the namedtuple or dataclass to rebuild)."""

    kind: str = "leaf"
    children: tuple = ()
    keys: tuple = ()
    cls: Any = None

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind

    @property
    def plain(self) -> bool:
        """Only tuples and leaves: the module's value is the user's value as it is."""
        return self.kind == "leaf" or self.kind == "tuple" and all(c.plain for c in self.children)

    def describe(self) -> str:
        """The structure in the user's words: ``a dict with keys 'loss', 'acc'``."""
        if self.kind == "leaf":
            return "an array"
        if self.kind == "dict":
            return "a dict with keys " + ", ".join(map(repr, self.keys))
        if self.kind in ("namedtuple", "dataclass"):
            return f"a {self.cls.__name__}"
        return f"a {self.kind} of {len(self.children)}"

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(f"{k!r}: {c!r}" if self.kind in ("dict", "dataclass") else repr(c)
                          for k, c in zip(self.keys or range(len(self.children)), self.children))
        name = self.cls.__name__ if self.cls is not None else self.kind
        return f"{name}({inner})"


LEAF = Structure()


def rebuild(structure: Structure, nested: Any) -> Any:
    """The user's value of ``structure`` from the nested tuples the module returns."""
    kind = structure.kind
    if kind == "leaf":
        return nested
    items = [rebuild(c, v) for c, v in zip(structure.children, nested)]
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    if kind == "dict":
        return dict(zip(structure.keys, items))
    if kind == "namedtuple":
        return structure.cls(*items)
    return _new_dataclass(structure.cls, dict(zip(structure.keys, items)))


def _new_dataclass(cls: type, values: dict) -> Any:
    """An instance of the dataclass ``cls`` with these field values, set as the traced code set
    them (not through ``__init__``, whose ``__post_init__`` already ran while tracing)."""
    obj = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(obj, name, value)        # (a frozen dataclass too)
    return obj


def flatten(value: Any, structure: Structure, what: str = "the value") -> list:
    """The leaves of ``value``, which must have ``structure``, in the tape's order; a mismatch
    is a ``ValueError`` that says where (``what['acc']``) and what was expected."""
    kind = structure.kind
    if kind == "leaf":
        return [value]
    if kind == "dict":
        if not isinstance(value, dict) or set(value) != set(structure.keys):
            raise ValueError(f"{what} must be {structure.describe()}, like the function's "
                             f"result, not {_kind_of(value)}")
        children = [(value[k], f"{what}[{k!r}]") for k in structure.keys]
    elif kind == "dataclass":
        if type(value) is not structure.cls:
            raise ValueError(f"{what} must be {structure.describe()}, like the function's "
                             f"result, not {_kind_of(value)}")
        children = [(getattr(value, k), f"{what}.{k}") for k in structure.keys]
    else:
        ok = isinstance(value, (tuple, list)) and len(value) == len(structure.children)
        if kind == "namedtuple":
            ok = ok and type(value) is structure.cls
        if not ok:
            raise ValueError(f"{what} must be {structure.describe()}, like the function's "
                             f"result, not {_kind_of(value)}")
        children = [(v, f"{what}[{i}]") for i, v in enumerate(value)]
    return [leaf for (v, w), c in zip(children, structure.children)
            for leaf in flatten(v, c, w)]


def of_value(value: Any) -> Structure:
    """The structure of a concrete value (tuples, lists, dicts, namedtuples, dataclass
    instances; anything else is a leaf)."""
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return Structure("namedtuple", tuple(of_value(v) for v in value), type(value)._fields,
                         type(value))
    if isinstance(value, (tuple, list)):
        return Structure(type(value).__name__ if type(value) in (tuple, list) else "tuple",
                         tuple(of_value(v) for v in value))
    if isinstance(value, dict):
        return Structure("dict", tuple(of_value(v) for v in value.values()), tuple(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = tuple(f.name for f in dataclasses.fields(value))
        return Structure("dataclass", tuple(of_value(getattr(value, n)) for n in names), names,
                         type(value))
    return LEAF


def nested(structure: Structure, leaves: list) -> Any:
    """``leaves`` (in order) as the nested tuples of ``structure``."""
    it = iter(leaves)

    def build(s: Structure) -> Any:
        return next(it) if s.kind == "leaf" else tuple(build(c) for c in s.children)
    return build(structure)


def paths(structure: Structure, prefix: tuple = ()) -> list[tuple]:
    """Each leaf's path: ``("item", key)`` and ``("attr", field)`` steps (a dict's key, a
    position; a dataclass's field) that lead to it from the whole value."""
    if structure.kind == "leaf":
        return [prefix]
    steps = [("attr", k) for k in structure.keys] if structure.kind == "dataclass" else \
        [("item", k) for k in structure.keys] if structure.kind == "dict" else \
        [("item", i) for i in range(len(structure.children))]
    return [p for step, c in zip(steps, structure.children) for p in paths(c, (*prefix, step))]


def path_text(path: tuple) -> str:
    """``path`` as Python after a value: ``['loss']``, ``.acc[0]``."""
    return "".join(f".{key}" if kind == "attr" else f"[{key!r}]" for kind, key in path)


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "a dict with keys " + ", ".join(map(repr, value))
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


@dataclass(frozen=True)
class LeafAxes:
    """``in_axes`` of a structured argument: the batch axis of each of its array leaves, as
    ``((path, axis), ...)``; a leaf not listed is the same for every example."""

    axes: tuple

    def at(self, path: tuple) -> int | None:
        return dict(self.axes).get(tuple(path))

    def example(self, arg: Any) -> Any:
        """The struct of the first example: each batched leaf's entry 0 along its axis."""
        return rebuilt(arg, dict(self.axes),
                       lambda x, axis: np.asarray(np.take(np.asarray(x), 0, axis=axis)))
