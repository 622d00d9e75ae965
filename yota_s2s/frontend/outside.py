"""Data the function reads from outside: module globals, closure cells, and what hangs off them.

The generated code reads such data where the original reads it, at call time, never from a
copy pasted into the module (DESIGN.md, "Static and dynamic values"). So that it can, every
value the evaluator takes from a global or a closure cell comes with *where* it was found:
a root (``("module", "model")``: the globals of an importable module; ``("function",)``: the
compiled function itself, for its own closure) and a path of steps from it
(``(("attr", "X"),)`` is ``model.X``; a closure cell is ``__closure__[i].cell_contents``).
``OutsideReads.wrap`` turns the value into what the evaluator works with:

- a numeric ``ndarray`` becomes a Var made by an ``external`` statement (rules/outside.py):
  read at call time and checked for exact type, shape and dtype; it gets no gradient. Read
  twice, it is one Var. Its mutation in place between calls is seen; rebinding the name too;
- a user class instance becomes a ``StructValue`` whose fields are wrapped when read
  (``cfg.W``), so methods inline with ``self`` as usual;
- a ``RandomState`` or ``Generator`` becomes a ``GeneratorRef``: its methods are random draws
  (``draw`` statements), made by the generated code from the same object at call time; while
  tracing, a copy of the generator draws the example values, so compiling consumes none of
  the user's random numbers;
- lists, tuples and dicts that hold any of those are rebuilt with their items wrapped;
- a user function is remembered with its path, so that its own closure can be reached;
- everything else (numbers, strings, tuples of numbers, functions, modules) is static, as before.

Data found where the generated code cannot reach it (the closure of a function that came
from neither a global nor a closure) is compiled in and guarded by value: a small array, a
list or a dict there is compared with a copy at each call; a larger array is refused with a
hint.
"""
from __future__ import annotations

import copy
import functools
import numbers
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import StaticValueError, UnsupportedSyntax
from ..ir.assumptions import READ, VALUE, Assumption
from ..ir.tape import Aval, Stmt, Var, tree_atoms
from ..ir.values import MAX_LITERAL_SIZE
from ..objects import is_struct_object
from ..rules.outside import (DRAW, EXTERNAL, EXTERNAL_CHECK, draw, external,
                              external_check)

NUMPY_GLOBAL = ("numpy",)          # the root of np.random's own generator: ``xp.random``
FUNCTION = ("function",)           # the root of the compiled function's closure
_CELL = (("attr", "__closure__"),)
_MAX_ITEMS = 10_000                # containers larger than this are not searched for data

# Generator methods that are not draws: they change or show the generator's state, or shuffle
# an array in place.
_NOT_DRAWS = frozenset({"seed", "set_state", "get_state", "shuffle", "bit_generator", "spawn",
                        "jumped", "__getstate__", "__setstate__", "__reduce__"})


@dataclass(eq=False)
class GeneratorRef:
    """A random generator the function reads from outside (``rs``, ``rng``, ``np.random``)."""

    obj: Any
    where: tuple | None            # (root, path), or None where generated code cannot reach it


@dataclass(eq=False)
class RandomMethod:
    """``rs.randn`` before the call."""

    ref: GeneratorRef
    name: str


@dataclass(eq=False)
class OutsideCell:
    """``fn.__closure__[i]`` of a function found at a place the generated code reaches (a
    generated gradient inlined in another one reads ``_fn.__closure__[0].cell_contents``): its
    ``cell_contents`` is read where it is, like a closure variable (``OutsideReads.cells``)."""

    cell: types.CellType
    where: tuple
    name: str


def cell_path(where: tuple | None, index: int) -> tuple | None:
    """Where cell ``index`` of the function found at ``where`` is."""
    if where is None or where[0] is None:
        return None
    root, path = where
    return root, path + _CELL + (("item", index), ("attr", "cell_contents"))


def place(where: tuple) -> str:
    """The kind of place a read is from: ``global``, ``closure cell``, ``default``, ``item``
    (of a container), ``attribute`` (of an object)."""
    root, path = where
    steps = [kind if kind != "attr" else key for kind, key in path]
    if "__defaults__" in steps or "__kwdefaults__" in steps:
        return "default"
    if steps[-1:] in (["len"], ["keys"]):
        return "length" if steps[-1] == "len" else "keys"
    if steps[-1:] == ["item"]:
        return "item"
    if "cell_contents" in steps and steps[-1] == "cell_contents":
        return "closure cell"
    return "global" if len(path) == 1 and root[0] == "module" else "attribute"


def is_generator(value: Any) -> bool:
    return isinstance(value, (np.random.RandomState, np.random.Generator))


def is_data(value: Any) -> bool:
    return type(value) is np.ndarray and value.dtype.kind in "biufc"


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


def on_an_object(obj: Any) -> Unreached:
    """Data on an object whose fields the generated code does not read when it runs: one the
    code cannot reach (in the closure of a function passed in as an argument), or one of a
    library's classes (``types.SimpleNamespace``)."""
    kind = type(obj).__qualname__
    if is_struct_object(obj) and not _standard_library(type(obj)):
        return Unreached(f"on a {kind} object the code cannot reach",
                         "Make the object (or the function holding it) a module global, or "
                         "pass the data in as an argument.")
    return Unreached(f"on a {kind} object, whose fields the generated code does not read when "
                     "it runs", "Hold the data in an instance of a class of your own or in a "
                     "module global, or pass it in as an argument.")


def describe_where(where: tuple) -> str:
    """``model.X``, ``objective's closure: X``: for messages."""
    root, path = where
    text = {"module": lambda: root[1], "function": lambda: "<the function>",
            "numpy": lambda: "np.random"}[root[0]]()
    return _steps(text, path)


def _steps(text: str, path: tuple) -> str:
    for kind, key in path:
        text = f"{kind}({text})" if kind == "len" else f"tuple({text})" if kind == "keys" else \
            text + (f".{key}" if kind == "attr" else f"[{key!r}]")
    return text


class OutsideReads:
    """The reads from outside that one trace made, by where they were found."""

    ON_A_CLASS = ON_A_CLASS     # (for structs.py, which this module imports)

    def __init__(self, ev: Any):
        self.ev = ev
        self.reads: dict[tuple, Any] = {}
        self.functions: dict[int, tuple] = {}       # id(function) -> where it was found
        self.classes: dict[int, tuple] = {}         # id(class) -> where it was found
        self.cell_names: dict[tuple, str] = {}      # (root, path) of a cell -> its variable
        self.held: list[Any] = []                   # keeps the ids above valid
        self.copies: dict[int, Any] = {}            # id(generator) -> the copy that traces
        self.uses_function = False                  # the code reads the function's closure
        self.vars: set[Var] = set()                 # the values read from outside
        self.record: list[Assumption] = []          # each read and check, as ir.assumptions

    def function_found(self, fn: Any, where: tuple | None) -> None:
        if where is not None and where[0] is not None and id(fn) not in self.functions:
            self.functions[id(fn)] = where
            self.held.append(fn)

    def where_function(self, fn: Any) -> tuple | None:
        return self.functions.get(id(fn))

    def shown(self, where: tuple) -> str:
        """What a read from ``where`` is called in messages and the record: ``model.CFG['l2']``;
        in a closure, by the closure variable's name (``m.W (in a closure)``)."""
        root, path = where
        for i in range(len(path), 0, -1):
            name = self.cell_names.get((root, path[:i]))
            if name is not None:
                return f"{name} (a variable of a closure)" if i == len(path) else \
                    f"{_steps(name, path[i:])} (in a closure)"
        return describe_where(where)

    def where_class(self, cls: type) -> tuple | None:
        """Where the code can reach ``cls`` (a global, a closure cell), if it was read there."""
        return self.classes.get(id(cls))

    def cells(self, fn: types.FunctionType) -> tuple | None:
        """``fn.__closure__`` as ``OutsideCell``s, where the code can reach ``fn``; else None."""
        where = self.where_function(fn)
        if where is None or fn.__closure__ is None:
            return None
        return tuple(OutsideCell(cell, cell_path(where, i), name) for i, (name, cell) in
                     enumerate(zip(fn.__code__.co_freevars, fn.__closure__)))

    def wrap(self, value: Any, where: tuple | None, node: Any, name: str | None = None,
             field: bool = False) -> Any:
        """The evaluator's view of ``value``, found outside the function at ``where`` (under
        ``name``, the variable the source reads). A ``field`` (an attribute of an object, an
        item of a container) can change without any name being rebound: a float there is
        read at call time too, and an int, bool, string or None is checked at call time."""
        if isinstance(value, (types.FunctionType, types.MethodType)):
            self.function_found(value, where)
            return value
        reachable = where is not None and where[0] is not None
        if reachable and name and where[1][-1:] == (("attr", "cell_contents"),):
            self.cell_names.setdefault((where[0], where[1]), name)
        if isinstance(value, type):
            if reachable and id(value) not in self.classes:
                self.classes[id(value)] = where         # its data is read from there
                self.held.append(value)
            return value
        if is_data(value):
            if not reachable:
                return self._unreachable(value, where, node, name)
            return self._read(value, where, node, name)
        if is_generator(value):
            return GeneratorRef(value, where if reachable else None)
        if reachable and field and type(value) is float:
            return self._read(value, where, node, name)
        if reachable and field and (type(value) in (int, bool, str) or value is None):
            self._check(value, where, node)
            return value
        if reachable and type(value) is functools.partial:
            return self._partial(value, where, node)
        if not reachable and (type(value) in (list, dict) or (
                type(value) is tuple and _holds_mutable(value))) and not _holds_data(value, [0]):
            self._contents(value, node, name)
            return value
        if not reachable or isinstance(value, (numbers.Number, str, bytes)):
            return value            # numbers and strings: static
        key = (where[0], where[1])
        if key in self.reads:
            return self.reads[key]
        if is_struct_object(value) and not _standard_library(type(value)) \
                and not _is_namedtuple(value):
            from .structs import StructValue
            wrapped = StructValue(type(value), value, None, where, describe_where(where))
        elif type(value) in (list, tuple, dict) or _is_namedtuple(value):
            # searched once per trace. A list or dict can change in place: one without data is
            # read item by item as the code reads it (a float in a config dict is read at run
            # time, an int checked); a tuple without lists or dicts stays the static value it is
            if _holds_data(value, [0]):
                wrapped = self._container(value, where, node)
            elif type(value) is list or (type(value) is dict and all(map(_plain_key, value))):
                wrapped = self._lazy(value, where, node)
            elif _holds_mutable(value):
                wrapped = self._container(value, where, node)
            else:
                wrapped = value
        else:
            return value
        self.reads[key] = wrapped
        return wrapped

    def _container(self, value: Any, where: tuple, node: Any) -> Any:
        root, path = where
        if type(value) is list:             # a list can grow: its length is checked
            self._check(len(value), (root, path + (("len", None),)), node)
        if isinstance(value, dict):
            if not all(_plain_key(k) for k in value):
                return value
            self._check(tuple(value), (root, path + (("keys", None),)), node)
            return {k: self.wrap(v, (root, path + (("item", k),)), node, field=True)
                    for k, v in value.items()}
        field = type(value) is list or isinstance(value, dict)      # tuples cannot change
        items = [self.wrap(v, (root, path + (("item", i),)), node, field=field)
                 for i, v in enumerate(value)]
        if _is_namedtuple(value):
            return type(value)(*items)
        return items if isinstance(value, list) else tuple(items)

    def _partial(self, value: functools.partial, where: tuple, node: Any) -> functools.partial:
        """A ``functools.partial`` read from outside (``P = partial(g, p=2.0, W=W)``): its
        stored arguments are read where they are, ``P.args[0]``, ``P.keywords['W']``, so an
        array or a float there changed in place is seen; ``keywords`` is a dict, so its keys
        are checked and an int or string in it checked at each call, like a config dict's."""
        root, path = where
        func = self.wrap(value.func, (root, path + (("attr", "func"),)), node)
        args = [self.wrap(v, (root, path + (("attr", "args"), ("item", i))), node)
                for i, v in enumerate(value.args)]
        stored = (root, path + (("attr", "keywords"),))
        if not all(_plain_key(k) for k in value.keywords):
            return value
        self._check(tuple(value.keywords), (root, stored[1] + (("keys", None),)), node)
        keywords = {k: self.wrap(v, (root, stored[1] + (("item", k),)), node, field=True)
                    for k, v in value.keywords.items()}
        return functools.partial(func, *args, **keywords)

    def _contents(self, value: Any, node: Any, name: str | None,
                  place: Unreached = IN_A_CLOSURE) -> None:
        """A list or dict where the generated code cannot reach it (the closure of a function
        passed in as an argument): compiled in, and its contents guarded by value, compared
        with a copy at each call (by ``ys.grad``'s cache and ``simplegrad``'s function)."""
        try:
            snapshot = copy.deepcopy(value)
            same = bool(snapshot == value)
        except Exception:
            same = False
        if not same:        # no copy compares equal: nothing to guard it by
            raise StaticValueError(
                f"{name or 'a container'} (a {type(value).__name__} {place.there}) is read by "
                "the function, and its contents cannot be compared with a copy",
                self.ev.loc(node), place.fix)
        self.ev.depends.read(value, "<contents>", snapshot, kind="contents", equal=True,
                             shown=f"{name or 'a container'} (a {type(value).__name__} "
                                   f"{place.there})")

    def _lazy(self, value: list | dict, where: tuple, node: Any) -> list | dict:
        """A list or dict without arrays, read from outside: its length (keys) checked at each
        call, each item wrapped when the code reads it (``CFG["l2"]``, ``IDS[t]``)."""
        root, path = where
        if type(value) is list:
            self._check(len(value), (root, path + (("len", None),)), node)
        else:
            self._check(tuple(value), (root, path + (("keys", None),)), node)

        def item(key: Any, found: Any) -> Any:
            at = self.ev.frame.stmt if self.ev.frame is not None else node
            step = (root, path + (("item", key),))
            if isinstance(found, (types.FunctionType, types.MethodType, type,
                                  types.ModuleType)) or (
                    isinstance(found, numbers.Number) and type(found) not in (float, int, bool)):
                # compiled in, and not something a check by value can spell: by identity
                self.ev.depends.read(value, key, found, item=True, kind="item",
                                     shown=describe_where(step))
            return self.wrap(found, step, at, field=True)
        return (OutsideList if type(value) is list else OutsideDict)(value, item)

    def _check(self, value: Any, where: tuple, node: Any) -> None:
        """A static field (``cfg.layers = 3``): the code checks at call time it is unchanged."""
        key = ("check", where[0], where[1])
        if key in self.reads:
            return
        self.reads[key] = value
        if where[0] == FUNCTION:
            self.uses_function = True
        ev = self.ev
        params = (("root", where[0]), ("path", where[1]),
                  ("shown", _read_at(self.shown(where), ev.loc(node))), ("expected", value))
        prim = ev.rules.lookup(external_check) or EXTERNAL_CHECK
        ev.stmts.append(Stmt((), prim, (), params, ev.loc(node)))
        self.record.append(Assumption(self.shown(where), place(where), VALUE, ev.loc(node),
                                      where))

    def _read(self, value: Any, where: tuple, node: Any, name: str | None) -> Var:
        key = (where[0], where[1])
        if key in self.reads:
            return self.reads[key]
        ev = self.ev
        if where[0] == FUNCTION:
            self.uses_function = True
        prim = ev.rules.lookup(external) or EXTERNAL      # a rule set made empty
        var = Var(Aval.of(value), hint=name or _hint(where))
        ev.values[var] = value
        ev.input_vars.add(var)          # never written in place: it is the user's array
        self.vars.add(var)
        shown = self.shown(where)
        params = (("root", where[0]), ("path", where[1]), ("shown", _read_at(shown, ev.loc(node))))
        ev.stmts.append(Stmt((var,), prim, (), params, ev.loc(node)))
        self.record.append(Assumption(shown, place(where), READ, ev.loc(node), where))
        self.reads[key] = var
        return var

    def field_of(self, obj: Any, name: str, node: Any) -> Any:
        """The attribute ``name`` of ``obj``, an object the code cannot reach when it runs (one
        the traced code built from static values): as ``compiled_in`` gives it."""
        return self.compiled_in(vars(obj)[name], node, f"{type(obj).__qualname__}.{name}",
                                on_an_object(obj))

    def compiled_in(self, value: Any, node: Any, name: str, place: Unreached) -> Any:
        """Data found where the generated code cannot read it when it runs (``place``: on a
        class defined inside a function that only an argument leads to, on a library's
        object): a small array, a list or a dict is compiled in and guarded by value, compared
        with a copy at each call (``_contents``, ``_unreachable``); numbers, strings and tuples
        of them are static as they are (their place is guarded by identity)."""
        if is_data(value):
            return self._unreachable(value, None, node, name, place)
        if is_generator(value):
            return GeneratorRef(value, None)
        if type(value) in (list, dict) or (type(value) is tuple and _holds_mutable(value)):
            if _holds_data(value, [0]):
                raise StaticValueError(
                    f"{name} (a {type(value).__name__} of arrays {place.there}) is read by the "
                    "function; the generated code can neither read it when it runs nor compare "
                    "it with a copy", self.ev.loc(node), place.fix)
            self._contents(value, node, name, place)
        return value

    def _unreachable(self, value: np.ndarray, where: tuple | None, node: Any,
                     name: str | None = None, place: Unreached | None = None) -> Any:
        """An array where the generated code cannot reach it (the closure of a function passed
        in as an argument, a module not importable by name): a small one is written into the
        code, and its contents guarded by value like a list there (``_contents``): compared
        with a copy at each call, by ``ys.grad``'s cache and ``simplegrad``'s function."""
        if value.size <= MAX_LITERAL_SIZE:
            snapshot = value.copy()
            snapshot.flags.writeable = False
            shown = f"{name or 'an array'} (a {value.dtype}{list(value.shape)} array " \
                    f"{(place or IN_A_CLOSURE).there})"
            self.ev.depends.read(value, "<contents>", snapshot, kind="contents", equal=True,
                                 shown=shown)
            return value
        if where is not None and where[1][:1] and where[1][0][0] == "attr":
            raise StaticValueError(
                f"the global {where[1][0][1]} (a {value.dtype}{list(value.shape)} array) is in a "
                "module that the generated code cannot import by name (it is not in sys.modules "
                "under its __name__)", self.ev.loc(node),
                "Import the module normally, or register it (sys.modules[name] = module) before "
                "compiling; or pass the array in as an argument.")
        if place is not None:
            raise StaticValueError(
                f"{name} (a {value.dtype}{list(value.shape)} array {place.there}) is read by "
                "the function: the generated code cannot read it when it runs, and it is too "
                "large to compile in and compare with a copy at each call", self.ev.loc(node),
                place.fix)
        raise StaticValueError(
            f"a {value.dtype}{list(value.shape)} array is read from the closure of a function "
            "that the generated code cannot reach (it came from neither a global nor a "
            "closure)", self.ev.loc(node),
            "Make the array (or the function holding it) a module global, or pass it in as "
            "an argument.")

    # -- random draws --------------------------------------------------------------------

    def draw(self, ref: GeneratorRef, method: str, args: list, kwargs: dict, node: Any) -> Any:
        ev = self.ev
        shown = f"{_generator_name(ref)}.{method}"
        if method in _NOT_DRAWS or method.startswith("_"):
            raise UnsupportedSyntax(f"{shown}() inside the compiled function changes the random "
                                    "generator's state", ev.loc(node),
                                    "Seed or shuffle outside the function; draws "
                                    "(rs.randn(...), rng.normal(...)) are fine inside.")
        if ref.where is None:
            raise UnsupportedSyntax(
                f"{shown}() draws from a generator that the generated code cannot reach (one "
                "made inside the function, or held where no global or closure leads)",
                ev.loc(node), "Make the generator a module global (rs = np.random.RandomState"
                "(0)) or a variable of the enclosing function, and draw from it inside.")
        traced = [a for a in tree_atoms(_tree(args + list(kwargs.values()))) if isinstance(a, Var)]
        if traced:
            raise UnsupportedSyntax(
                f"{shown}() is given a traced value; random draws take static arguments "
                "(shapes, constants) and carry no gradient", ev.loc(node),
                "Reparameterize: draw eps = rng.standard_normal(shape), then use "
                "mu + sigma * eps, which carries the gradient to mu and sigma.")
        if ref.where[0] == FUNCTION:
            self.uses_function = True
        value = getattr(self._copy(ref.obj), method)(*args, **kwargs)
        value = np.asarray(value) if isinstance(value, np.generic) else value
        from ..ir.values import to_tree
        operands = to_tree(tuple(args) + tuple(kwargs.values()), ev.loc(node))
        prim = ev.rules.lookup(draw) or DRAW
        var = Var(Aval.of(value), hint=None)
        ev.values[var] = value
        params = (("method", method), ("keywords", tuple(kwargs)), ("root", ref.where[0]),
                  ("path", ref.where[1]))
        ev.stmts.append(Stmt((var,), prim, (operands,), params, ev.loc(node)))
        return var

    def _copy(self, obj: Any) -> Any:
        """The copy of ``obj`` that draws the example values while tracing."""
        found = self.copies.get(id(obj))
        if found is None:
            if isinstance(obj, np.random.RandomState):
                found = np.random.RandomState()
                found.set_state(obj.get_state())
            else:
                found = copy.deepcopy(obj)
            self.copies[id(obj)] = found
            self.held.append(obj)
        return found


def random_method(fn: Any) -> RandomMethod | None:
    """``np.random.randn`` (a method of numpy's global RandomState) as a draw, or None."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if owner is np.random.mtrand._rand and isinstance(name, str):
        return RandomMethod(GeneratorRef(owner, (NUMPY_GLOBAL, ())), name)
    return None


def _generator_name(ref: GeneratorRef) -> str:
    if ref.where is None:
        return type(ref.obj).__name__
    return describe_where(ref.where)


def _tree(values: list) -> tuple:
    return tuple(values)


def _read_at(shown: str, loc: Any) -> str:
    """``model.X (read at model.py:12)``: what a guard's message names."""
    return f"{shown} (read at {loc.short})" if loc is not None else shown


def _hint(where: tuple) -> str | None:
    root, path = where
    if path and path[-1][0] == "attr" and path[-1][1] != "cell_contents":
        return path[-1][1]
    return None             # an item of a container: named by what the code binds it to


class OutsideList(list):
    """A list read from outside while tracing: each item is wrapped as it is read."""

    def __init__(self, items: list, item: Any):
        super().__init__(items)
        self._item = item

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        k = i + n if isinstance(i, int) and -n <= i < 0 else i
        return self._item(k, list.__getitem__(self, i))

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))


class OutsideDict(dict):
    """A dict read from outside while tracing: each value is wrapped as it is read."""

    def __init__(self, items: dict, item: Any):
        super().__init__(items)
        self._item = item

    def __getitem__(self, key: Any) -> Any:
        return self._item(key, dict.__getitem__(self, key))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def values(self) -> Any:
        return [self[k] for k in self]

    def items(self) -> Any:
        return [(k, self[k]) for k in self]


def _holds_mutable(value: Any) -> bool:
    """A tuple (of tuples) that holds a list or a dict."""
    return any(type(v) in (list, dict) or (isinstance(v, tuple) and _holds_mutable(v))
               for v in value)


def _standard_library(cls: type) -> bool:
    module = (getattr(cls, "__module__", None) or "").split(".")[0]
    return module in getattr(sys, "stdlib_module_names", ()) or module == "builtins"


def _plain_key(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_plain_key(k) for k in key)
    return type(key) in (str, int, bool)


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _holds_data(value: Any, count: list) -> bool:
    """Does the container hold an array, a struct object or a generator (searched up to
    ``_MAX_ITEMS`` items)?"""
    count[0] += 1
    if count[0] > _MAX_ITEMS:
        return False
    if is_data(value) or is_generator(value) or \
            (is_struct_object(value) and not _standard_library(type(value))):
        return True
    if isinstance(value, dict):
        return any(_holds_data(v, count) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_data(v, count) for v in value)
    return False
