"""What a compiled gradient depends on besides its arguments.

While the evaluator runs a function's source it reads names: globals (``forward``, ``np``,
``SCALE``), closure cells, attributes of the user's modules, classes and objects (``m.forward``
is found on ``type(m)``; ``Config.scale``, ``cfg.scale`` of a global ``cfg``). ``Depends``
records each namespace, name and the value found there, so the compile cache
(``yota_s2s.cache``) can check on every hit that none has been rebound since: a helper
redefined in a notebook cell, a method patched onto a class, ``Config.scale = 3.0``, a reloaded
module. An attribute found on a class is recorded on every class of the MRO up to the one that
has it (absent there: ``MISSING``), so one set on a subclass or the object later is seen too.
Values are compared by identity, so rebinding is seen. Data that can change in place is read
again by the generated code when it runs (outside.py), or, where the code cannot reach it, is
recorded with ``equal`` and compared by value (unreached.py): a container's contents or
length or keys, an item, an array's bytes.

Namespaces of library code (numpy, yota_s2s's own rules) are not recorded: they are not
redefined while a program runs, and ``RuleSet.version`` covers the rules.
"""
from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ..ir.assumptions import IDENTITY, VALUE, VERSION, Assumption
from ..objects import LIBRARY_MODULES, MISSING
from ..text import is_identifier


_CODE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
         type, staticmethod, classmethod, property)


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
    item: bool = False          # ``namespace[name] is value``: an item of a list or dict
    equal: bool = False         # ``namespace == value``: a container's contents, by value;
    #                             with ``item``, the item by value; named ``objects.LAYOUT``, the
    #                             length of a list or the keys of a dict
    shown: str = field(default="", compare=False)      # ``model.helper``, ``Model.scale``
    kind: str = field(default="global", compare=False)
    loc: Any = field(default=None, compare=False)      # where the source read it

    def assumption(self) -> Assumption:
        code = self.value is MISSING or isinstance(self.value, _CODE) or \
            self.kind == "default" or (callable(self.value) and library_class(type(self.value)))
        return Assumption(self.shown or self.name, self.kind, VALUE if self.equal else IDENTITY,
                          self.loc, self, code)


@dataclass(frozen=True)
class Assumptions:
    """What compiled code assumes about its arguments and environment beyond the tape's inputs
    and statics, as its guards test it: the class of each struct, objects shared by two paths,
    instance attributes that must stay absent (a class attribute read through an argument) or
    present (one read from the object that shadows its class's),
    names it read. ``record`` is the same as ``ir.assumptions`` entries, with the run-time
    reads and value checks of the tape: what the printed tape and the module header list."""

    types: tuple[tuple[str, type], ...]       # (access, class): type(m.layers[0]) is Linear
    aliases: tuple[tuple[str, str], ...]      # (access, access): m.dec.W is m.enc.W
    deps: tuple[Dep, ...]
    absent: tuple[tuple[str, str], ...] = ()  # (access, name): m has no own attribute "scale"
    record: tuple[Assumption, ...] = ()
    distinct: tuple[tuple[str, ...], ...] = ()  # accesses that were distinct objects (untied)
    present: tuple[tuple[str, str], ...] = ()  # (access, name): m's own "scale" over Model's


class Depends:
    def __init__(self, locate: Callable[[], Any] = lambda: None) -> None:
        self.deps: dict[tuple[int, str], Dep] = {}
        self.locate = locate          # where the source is reading now (a SourceLoc or None)

    def read(self, namespace: Any, name: Any, value: Any, owner: Any = None,
             attribute: bool = False, kind: str | None = None, shown: str = "",
             item: bool = False, equal: bool = False) -> None:
        """``owner`` (default: ``namespace``) identifies the namespace (a class for its
        ``__dict__``, which is a new proxy object on every access)."""
        key = (id(namespace if owner is None else owner), name)
        if key in self.deps:
            return
        if kind is None:
            kind, shown = _place(namespace, name, owner)
        self.deps[key] = Dep(namespace, name, value, attribute, item, equal, shown, kind,
                             self.locate())

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

    def cell(self, cell: types.CellType, value: Any, shown: str = "") -> None:
        self.read(cell, "cell_contents", value, kind="closure cell", shown=shown)

    def defaults(self, fn: types.FunctionType) -> None:
        """``fn`` was called with a default: ``fn.__defaults__`` and ``__kwdefaults__`` must
        stay the objects they were (a rebound ``f.__defaults__``)."""
        name = getattr(fn, "__qualname__", "function")
        for attr in ("__defaults__", "__kwdefaults__"):
            self.read(fn, attr, getattr(fn, attr, None), attribute=True, kind="default",
                      shown=f"{name}.{attr}")

    def record(self) -> list[Assumption]:
        return [dep.assumption() for dep in self.deps.values()]

    def attribute(self, obj: Any, name: str, value: Any) -> None:
        """``obj.name`` was read: recorded for the user's modules (``helpers.f``), classes
        (``Config.scale``) and objects (``cfg.scale``); library ones are not watched."""
        if isinstance(obj, types.ModuleType):
            if not _library(obj.__name__):
                self.read(obj.__dict__, name, value)
            return
        cls = obj if isinstance(obj, type) else type(obj)
        if library_class(cls):
            return
        if not isinstance(obj, type):
            own = getattr(obj, "__dict__", None)
            if isinstance(own, dict):
                self.read(own, name, own.get(name, MISSING), kind="attribute",
                          shown=f"{type(obj).__qualname__} object's {name}")
                if own.get(name, MISSING) is value:
                    return
            else:
                self.read(obj, name, value, attribute=True, kind="attribute",
                          shown=f"{type(obj).__qualname__} object's {name}")
        self.class_attribute(cls, name)

    def class_attribute(self, cls: type, name: str) -> None:
        """``name`` looked up on ``cls``: each class of its MRO up to the one that has it."""
        for klass in cls.__mro__:
            found = klass.__dict__.get(name, MISSING)
            if not library_class(klass):
                self.read(klass.__dict__, name, found, owner=klass)
            if found is not MISSING:
                return

    def __iter__(self) -> Iterator[Dep]:
        return iter(self.deps.values())


def _place(namespace: Any, name: str, owner: Any) -> tuple[str, str]:
    """(kind, shown) of a read: ``("global", "model.helper")``, ``("class attribute",
    "Model.scale")``, ``("attribute", "Config object's scale")``."""
    if isinstance(owner, type):
        return "class attribute", f"{owner.__qualname__}.{name}"
    if isinstance(namespace, dict) and isinstance(namespace.get("__name__"), str):
        return "global", f"{namespace['__name__']}.{name}"
    return "attribute", f"{type(namespace).__name__} {name}"


def rules_assumption(rules: Any) -> Assumption:
    """The rule set the code was derived with, at its version (``RuleSet.version``)."""
    return Assumption(f"rules version {getattr(rules, 'version', 0)}", "rules", VERSION,
                      code=True)


def library_value(value: Any) -> bool:
    """numpy, or one of its functions (``np``, ``exp`` from ``from numpy import exp``): a name
    bound to library code, which ``simplegrad``'s function does not check at each call (they
    are not rebound while a program runs, like the rules); ``ys.grad`` checks them too."""
    if isinstance(value, types.ModuleType):
        return _library(value.__name__)
    if isinstance(value, np.ufunc):     # np.exp.__module__ is None on numpy 2.0
        return True
    module = getattr(value, "__module__", None)
    return callable(value) and isinstance(module, str) and _library(module) and \
        module.split(".")[0] != "yota_s2s"


def library_binding(name: str, value: Any) -> bool:
    """A name that ``simplegrad``'s function need not check at each call: a library module
    (``np``, ``np.linalg``) or a library function bound under its own name (``tanh`` from
    ``from numpy import tanh``), which a program does not rebind while it runs. Any other name
    bound to library code (``ACT = np.tanh``, a user's choice of activation) is guarded by
    identity like a user's function: rebinding it (``ACT = np.sin``) must be seen."""
    if isinstance(value, types.ModuleType):
        return library_value(value)
    return library_value(value) and name == getattr(value, "__name__", None)


def library_function(fn: Any) -> bool:
    """A function of numpy's or another library's modules, or of yota_s2s's own (a composite
    a rule inlines: ``np.gradient`` written in rules/reductions.py): library code, which does
    not change while a program runs."""
    return _library(getattr(fn, "__module__", None) or "")


def _library(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LIBRARY_MODULES + ("yota_s2s",))


def library_class(cls: type) -> bool:
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


def module_root(globals_: Any) -> tuple | None:
    """``("module", name)`` for the globals of a module imported under ``name``, else None."""
    globals_ = getattr(globals_, "globals", globals_)       # a WatchedGlobals
    name = globals_.get("__name__") if isinstance(globals_, dict) else None
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None or module.__dict__ is not globals_ or \
            not all(map(is_identifier, name.split("."))):
        return None
    return ("module", name)
