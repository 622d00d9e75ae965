"""Data the function reads from where the generated code cannot read it when it runs: the
closure or the defaults of a function that came from neither a global nor a closure (passed in
as an argument), a class only an argument leads to, a library's object
(``types.SimpleNamespace``), a dict whose keys the code cannot write, a module it cannot import
by name. Such data is compiled in and guarded by value at every depth
(``UnreachedReads.unreached``), never compiled in unchecked; where it cannot be (a large
array), it is refused with a hint (issue 29, docs/outside.md).
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import StaticValueError
from ..ir.values import MAX_LITERAL_SIZE
from ..objects import LAYOUT, is_struct_object
from .outside_values import (GeneratorRef, OutsideDict, OutsideList, OutsideTuple, holds_data,
                             holds_mutable, is_data, is_generator, path_text, standard_library)


@dataclass(frozen=True)
class Unreached:
    """Where data was found that the generated code cannot read when it runs, for messages:
    ``there`` follows "a float64[3] array ..." and ``fix`` says what to do. Such data is
    compiled in and compared with a copy at each call, or refused where it cannot be."""
    there: str
    fix: str


IN_A_CLOSURE = Unreached("in a closure the code cannot reach",
                         "Make it (or the function holding it) a module global, or pass it in "
                         "as an argument.")
ON_A_CLASS = Unreached("on a class the code cannot reach",
                       "Define the class at module level (or read it through a global or a "
                       "closure variable), or pass the data in as an argument.")
IN_DEFAULTS = Unreached("in the defaults of a function the code cannot reach",
                        "Make the function a module global, or pass the value in as an "
                        "argument.")
IN_A_MODULE = Unreached("in a module the generated code cannot import by name",
                        "Import the module normally, or register it (sys.modules[name] = "
                        "module) before compiling; or pass the data in as an argument.")
ODD_KEYS = Unreached("in a dict whose keys the generated code cannot write (not str, int or "
                     "bool)", "Key the dict by strings or ints, or pass the data in as an "
                     "argument.")


def on_an_object(obj: Any) -> Unreached:
    """Data on an object whose fields the generated code does not read when it runs: one the
    code cannot reach (in the closure of a function passed in as an argument), or one of a
    library's classes (``types.SimpleNamespace``)."""
    kind = type(obj).__qualname__
    if is_struct_object(obj) and not standard_library(type(obj)):
        return Unreached(f"on a {kind} object the code cannot reach",
                         "Make the object (or the function holding it) a module global, or "
                         "pass the data in as an argument.")
    return Unreached(f"on a {kind} object, whose fields the generated code does not read when "
                     "it runs", "Hold the data in an instance of a class of your own or in a "
                     "module global, or pass it in as an argument.")


_PLAIN = (int, float, complex, bool, str, bytes)     # an item compared by value, not identity


def odd_keys(value: Any) -> list:
    """The keys of the dicts in ``value`` (a list, dict or tuple of them) that are neither
    numbers nor strings (convnet's layer objects): a copy to guard ``value`` by keeps them, as
    the code looks items up by them, and copies the items."""
    if isinstance(value, dict):
        return [k for k in value if type(k) not in _PLAIN] + \
            [k for v in value.values() for k in odd_keys(v)]
    if isinstance(value, (list, tuple)):
        return [k for v in value for k in odd_keys(v)]
    return []


def _layout(container: list | dict) -> int | tuple:
    """What a container's entry of its length or keys (``objects.LAYOUT``) holds: ``len`` of
    a list, a dict's keys (``cache._dep_test`` tests the same)."""
    return tuple(container) if isinstance(container, dict) else len(container)


def unreached_place(where: tuple | None) -> Unreached:
    """The kind of place of a read the generated code cannot reach: a global of a module it
    cannot import, else a closure (or what hangs off one)."""
    if where is not None and where[1][:1] and where[1][0][0] == "attr" and \
            where[1][0][1] != "__closure__":
        return IN_A_MODULE
    return IN_A_CLOSURE


class UnreachedReads:
    """``OutsideReads``' reads of data the generated code cannot reach (a mixin: ``self.ev``
    is the evaluator)."""

    ev: Any

    def unreached(self, value: Any, node: Any, name: str, place: Unreached) -> Any:
        """The evaluator's view of ``value``, data found where the generated code cannot read
        it when it runs (``place``: the closure or defaults of a function only an argument
        leads to, a class defined inside a function, a library's object): guarded by value at
        every depth, never compiled in unchecked. A small array, or a list, dict or tuple of
        numbers and strings, is compiled in and compared with a copy at each call
        (``_unreachable``, ``_contents``); a container holding arrays or objects is read item
        by item (``unreached_item``), its length or keys compared at each call; a partial's
        stored keywords likewise; a larger array is refused with a hint. Numbers and strings
        are static as they are (their place is guarded where it was read: a cell, a field, an
        item); an object's fields are guarded as the code reads them."""
        if is_data(value):
            return self._unreachable(value, node, name, place)
        if is_generator(value):
            return GeneratorRef(value, None)
        if type(value) is functools.partial:
            return self._unreached_partial(value, node, name, place)
        if type(value) not in (list, dict, tuple):
            return value
        if not holds_data(value, [0]):
            if type(value) is not tuple or holds_mutable(value):
                self._contents(value, node, name, place)
            return value
        if type(value) is not tuple:        # a list can grow, a dict gain keys: checked
            self.ev.depends.read(value, LAYOUT, _layout(value), kind="length" if type(
                value) is list else "keys", shown=f"{name} ({place.there})", equal=True)

        def item(key: Any, found: Any) -> Any:
            shown = path_text(name, (("item", key),))
            return self.unreached_item(value, key, found, node, shown, place)
        return self._items(value, item)

    def _items(self, value: list | dict | tuple, item: Any) -> Any:
        """``value`` whose items are read through ``item(key, raw)`` (``_Reads``)."""
        wrapped = {list: OutsideList, dict: OutsideDict, tuple: OutsideTuple}[type(value)](
            value, item)
        wrapped._loc = lambda: self.ev.loc(self.ev.frame.stmt if self.ev.frame else None)
        return wrapped

    def unreached_item(self, container: Any, key: Any, found: Any, node: Any, name: str,
                       place: Unreached) -> Any:
        """``container[key]``, read from a container the generated code cannot reach: the slot
        is guarded (a list's or dict's item can be rebound) by value for a number or string,
        by identity for anything else, and what it holds by ``unreached``'s rule."""
        if type(container) is not tuple:
            plain = type(found) in _PLAIN or found is None or isinstance(found, np.generic)
            self.ev.depends.read(container, key, found, item=True, equal=plain, kind="item",
                                 shown=f"{name} ({place.there})")
        return self.unreached(found, node, name, place)

    def _unreached_partial(self, value: functools.partial, node: Any, name: str,
                           place: Unreached) -> functools.partial:
        """A ``functools.partial`` where the code cannot reach it: its stored keywords are a
        dict that can change in place, guarded like one; its function and ``args`` (a tuple)
        by ``unreached``'s rule."""
        args = [self.unreached(v, node, f"{name}.args[{i}]", place)
                for i, v in enumerate(value.args)]
        keywords = self.unreached(value.keywords, node, f"{name}.keywords", place)
        if isinstance(keywords, OutsideDict):
            keywords = {k: keywords[k] for k in value.keywords}
        return functools.partial(value.func, *args, **keywords)

    def _unreachable(self, value: np.ndarray, node: Any, name: str, place: Unreached) -> Any:
        """An array where the generated code cannot reach it (``unreached``): a small one is
        written into the code, and its contents guarded by value like a list there
        (``_contents``): compared with a copy at each call, by ``ys.grad``'s cache and
        ``simplegrad``'s function; a larger one is refused, saying what to do."""
        if value.size <= MAX_LITERAL_SIZE:
            snapshot = value.copy()
            snapshot.flags.writeable = False
            shown = f"{name} (a {value.dtype}{list(value.shape)} array {place.there})"
            self.ev.depends.read(value, "<contents>", snapshot, kind="contents", equal=True,
                                 shown=shown)
            return value
        if place is IN_A_MODULE:
            raise StaticValueError(
                f"the global {name} (a {value.dtype}{list(value.shape)} array) is in a module "
                "that the generated code cannot import by name (it is not in sys.modules under "
                "its __name__)", self.ev.loc(node), place.fix)
        raise StaticValueError(
            f"{name} (a {value.dtype}{list(value.shape)} array {place.there}) is read by the "
            "function: the generated code cannot read it when it runs, and it is too large to "
            "compile in and compare with a copy at each call", self.ev.loc(node), place.fix)

    def _contents(self, value: Any, node: Any, name: str, place: Unreached) -> None:
        """A list, dict or tuple of numbers and strings where the generated code cannot reach
        it: compiled in, and its contents guarded by value, compared with a copy at each call
        (by ``ys.grad``'s cache and ``simplegrad``'s function)."""
        try:
            snapshot = copy.deepcopy(value, {id(k): k for k in odd_keys(value)})
            same = bool(snapshot == value)
        except Exception:
            same = False
        if not same:        # no copy compares equal: nothing to guard it by
            raise StaticValueError(
                f"{name} (a {type(value).__name__} {place.there}) is read by "
                "the function, and its contents cannot be compared with a copy",
                self.ev.loc(node), place.fix)
        self.ev.depends.read(value, "<contents>", snapshot, kind="contents", equal=True,
                             shown=f"{name} (a {type(value).__name__} "
                                   f"{place.there})")

