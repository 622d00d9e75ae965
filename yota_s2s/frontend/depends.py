"""What a compiled gradient depends on besides its arguments.

While the evaluator runs a function's source it reads names: globals (``forward``, ``np``,
``SCALE``), closure cells, attributes of the user's modules and classes (``m.forward`` is found
on ``type(m)``). ``Depends`` records each namespace, name and the value found there, so the
compile cache (``yota_s2s.cache``) can check on every hit that none has been rebound since: a
helper redefined in a notebook cell, a method patched onto a class, a reloaded module. Values
are compared by identity, so rebinding is seen; changing a global array in place is not.

Namespaces of library code (numpy, yota_s2s's own rules) are not recorded: they are not
redefined while a program runs, and ``RuleSet.version`` covers the rules.
"""
from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

from .resolve import LIBRARY_MODULES


@dataclass(frozen=True)
class Dep:
    """``namespace[name] is value`` held when the gradient was compiled.

    ``namespace`` is a dict (module globals, a class's ``__dict__``) or a closure cell
    (``name`` is then ``"cell_contents"``).
    """

    namespace: Any
    name: str
    value: Any


@dataclass(frozen=True)
class Assumptions:
    """What compiled code assumes about its arguments and environment beyond the tape's inputs
    and statics: the class of each struct, objects shared by two paths, names it read."""

    types: tuple[tuple[str, type], ...]       # (access, class): type(m.layers[0]) is Linear
    aliases: tuple[tuple[str, str], ...]      # (access, access): m.dec.W is m.enc.W
    deps: tuple[Dep, ...]


class Depends:
    def __init__(self) -> None:
        self.deps: dict[tuple[int, str], Dep] = {}

    def read(self, namespace: Any, name: str, value: Any) -> None:
        self.deps.setdefault((id(namespace), name), Dep(namespace, name, value))

    def forget(self, namespace: Any, name: str) -> None:
        """``name`` was read as data that the generated code reads again at each call (a
        global array): its rebinding needs no new compile, the code's guard checks it."""
        namespace = getattr(namespace, "globals", namespace)
        self.deps.pop((id(namespace), name), None)

    def watch(self, globals_: dict) -> Mapping:
        """``globals_`` as the evaluator should see it: reads are recorded (user code only)."""
        if _library(globals_.get("__name__") or ""):
            return globals_
        return WatchedGlobals(globals_, self)

    def cell(self, cell: types.CellType, value: Any) -> None:
        self.read(cell, "cell_contents", value)

    def attribute(self, obj: Any, name: str, value: Any) -> None:
        """``obj.name`` was read: recorded for the user's modules (``helpers.f``)."""
        if isinstance(obj, types.ModuleType) and not _library(obj.__name__):
            self.read(obj.__dict__, name, value)

    def __iter__(self) -> Iterator[Dep]:
        return iter(self.deps.values())


def _library(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LIBRARY_MODULES + ("yota_s2s",))


class WatchedGlobals(Mapping):
    """A module's globals that tell ``Depends`` which names were read."""

    __slots__ = ("globals", "depends")

    def __init__(self, globals_: dict, depends: Depends):
        self.globals, self.depends = globals_, depends

    def __getitem__(self, name: str) -> Any:
        value = self.globals[name]
        self.depends.read(self.globals, name, value)
        return value

    def __contains__(self, name: object) -> bool:
        return name in self.globals

    def __iter__(self) -> Iterator[str]:
        return iter(self.globals)

    def __len__(self) -> int:
        return len(self.globals)
