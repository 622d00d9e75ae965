"""What a compiled gradient depends on besides its arguments.

While the evaluator runs a function's source it reads names: globals (``forward``, ``np``,
``SCALE``), closure cells, attributes of the user's modules, classes and objects (``m.forward``
is found on ``type(m)``; ``Config.scale``, ``cfg.scale`` of a global ``cfg``). ``Depends``
records each namespace, name and the value found there, so the compile cache
(``yota_s2s.cache``) can check on every hit that none has been rebound since: a helper
redefined in a notebook cell, a method patched onto a class, ``Config.scale = 3.0``, a reloaded
module. An attribute found on a class is recorded on every class of the MRO up to the one that
has it (absent there: ``MISSING``), so one set on a subclass or the object later is seen too.
Values are compared by identity, so rebinding is seen; changing a global array in place is not.

Namespaces of library code (numpy, yota_s2s's own rules) are not recorded: they are not
redefined while a program runs, and ``RuleSet.version`` covers the rules.
"""
from __future__ import annotations

import builtins
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

from .resolve import LIBRARY_MODULES


MISSING = object()          # the value of a name that a namespace did not hold


@dataclass(frozen=True)
class Dep:
    """``namespace.get(name, MISSING) is value`` held when the gradient was compiled.

    ``namespace`` is a dict (module globals, an object's ``__dict__``), a class's
    ``__dict__`` (a mapping proxy) or a closure cell (``name`` is then ``"cell_contents"``);
    with ``attribute`` set it is an object without a ``__dict__`` (slots), and the test is
    ``getattr(namespace, name, MISSING) is value``.
    """

    namespace: Any
    name: str
    value: Any
    attribute: bool = False


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

    def read(self, namespace: Any, name: str, value: Any, owner: Any = None,
             attribute: bool = False) -> None:
        """``owner`` (default: ``namespace``) identifies the namespace (a class for its
        ``__dict__``, which is a new proxy object on every access)."""
        key = (id(namespace if owner is None else owner), name)
        self.deps.setdefault(key, Dep(namespace, name, value, attribute))

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
        """``obj.name`` was read: recorded for the user's modules (``helpers.f``), classes
        (``Config.scale``) and objects (``cfg.scale``); library ones are not watched."""
        if isinstance(obj, types.ModuleType):
            if not _library(obj.__name__):
                self.read(obj.__dict__, name, value)
            return
        cls = obj if isinstance(obj, type) else type(obj)
        if _library_class(cls):
            return
        if not isinstance(obj, type):
            own = getattr(obj, "__dict__", None)
            if isinstance(own, dict):
                self.read(own, name, own.get(name, MISSING))
                if own.get(name, MISSING) is value:
                    return
            else:
                self.read(obj, name, value, attribute=True)
        self.class_attribute(cls, name)

    def class_attribute(self, cls: type, name: str) -> None:
        """``name`` looked up on ``cls``: each class of its MRO up to the one that has it."""
        for klass in cls.__mro__:
            found = klass.__dict__.get(name, MISSING)
            if not _library_class(klass):
                self.read(klass.__dict__, name, found, owner=klass)
            if found is not MISSING:
                return

    def __iter__(self) -> Iterator[Dep]:
        return iter(self.deps.values())


def _library(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LIBRARY_MODULES + ("yota_s2s",))


def _library_class(cls: type) -> bool:
    """A class of numpy, the standard library...; not one whose ``__module__`` says
    ``builtins`` only because it was made by ``exec`` in a namespace without ``__name__``."""
    module = getattr(cls, "__module__", None) or "builtins"
    if module == "builtins":
        return (getattr(builtins, cls.__name__, None) is cls
                or cls.__dict__.get("__module__") is None)
    return _library(module)


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
