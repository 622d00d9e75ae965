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

Data found where the generated code cannot reach it (the closure or the defaults of a function
that came from neither a global nor a closure, a class only an argument leads to, a library's
object, a dict whose keys the code cannot write) is compiled in and guarded by value, at every
depth (unreached.py): a small array, or a list or dict of numbers and strings, is
compared with a copy at each call; a container holding arrays or objects is read item by item,
its length or keys compared at each call and each item the code reads by the same rule (its
slot by identity, a number by value); a larger array is refused with a hint.
"""
from __future__ import annotations

import copy
import functools
import numbers
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedSyntax
from ..ir.assumptions import READ, VALUE, Assumption
from ..ir.tape import Aval, Stmt, Var, tree_atoms
from ..objects import is_struct_object
from ..rules.outside import (DRAW, EXTERNAL, EXTERNAL_CHECK, draw, external,
                              external_check)
from .outside_values import (GeneratorRef, holds_data, holds_mutable, is_data, is_generator,
                             is_namedtuple, path_text, plain_key, standard_library)
from .unreached import (IN_DEFAULTS, ODD_KEYS, ON_A_CLASS, UnreachedReads, on_an_object,
                        unreached_place)

NUMPY_GLOBAL = ("numpy",)          # the root of np.random's own generator: ``xp.random``
FUNCTION = ("function",)           # the root of the compiled function's closure
_CELL = (("attr", "__closure__"),)

# Generator methods that are not draws: they change or show the generator's state, or shuffle
# an array in place.
_NOT_DRAWS = frozenset({"seed", "set_state", "get_state", "shuffle", "bit_generator", "spawn",
                        "jumped", "__getstate__", "__setstate__", "__reduce__"})


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


def describe_where(where: tuple) -> str:
    """``model.X``, ``objective's closure: X``: for messages."""
    root, path = where
    text = {"module": lambda: root[1], "function": lambda: "<the function>",
            "numpy": lambda: "np.random"}[root[0]]()
    return path_text(text, path)


class OutsideReads(UnreachedReads):
    """The reads from outside that one trace made, by where they were found."""

    ON_A_CLASS = ON_A_CLASS     # (for structs.py, which this module imports)
    IN_DEFAULTS = IN_DEFAULTS   # (for inline.py)

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

    def handed_over(self, fn: Any, values: tuple) -> None:
        """``values`` that the ``__yota_inline__`` of ``fn`` (a gradient function of ours)
        hands to the function it inlines in ``fn``'s place (``ys.vjp``'s gives its generated
        gradient): those ``fn`` closes over are found in its closure, where the generated
        code reads them (and what they read) when it runs."""
        where = self.where_function(fn)
        for index, cell in enumerate(getattr(fn, "__closure__", None) or ()):
            try:
                content = cell.cell_contents
            except ValueError:      # an empty cell
                continue
            if any(v is content for v in values):
                self.function_found(content, cell_path(where, index))

    def shown(self, where: tuple) -> str:
        """What a read from ``where`` is called in messages and the record: ``model.CFG['l2']``;
        in a closure, by the closure variable's name (``m.W (in a closure)``)."""
        root, path = where
        for i in range(len(path), 0, -1):
            name = self.cell_names.get((root, path[:i]))
            if name is not None:
                return f"{name} (a variable of a closure)" if i == len(path) else \
                    f"{path_text(name, path[i:])} (in a closure)"
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
        if not reachable:
            return self.unreached(value, node, name or _hint(where) or "a value",
                                  unreached_place(where))
        if is_data(value):
            return self._read(value, where, node, name)
        if is_generator(value):
            return GeneratorRef(value, where)
        if reachable and field and type(value) is float:
            return self._read(value, where, node, name)
        if reachable and field and (type(value) in (int, bool, str) or value is None):
            self._check(value, where, node)
            return value
        if reachable and type(value) is functools.partial:
            return self._partial(value, where, node)
        if isinstance(value, (numbers.Number, str, bytes)):
            return value            # numbers and strings: static
        key = (where[0], where[1])
        if key in self.reads:
            return self.reads[key]
        if is_struct_object(value) and not standard_library(type(value)) \
                and not is_namedtuple(value):
            from .structs import StructValue
            wrapped = StructValue(type(value), value, None, where, describe_where(where))
        elif type(value) in (list, tuple, dict) or is_namedtuple(value):
            # searched once per trace. A list or dict can change in place: one without data is
            # read item by item as the code reads it (a float in a config dict is read at run
            # time, an int checked); a tuple without lists or dicts stays the static value it is
            if isinstance(value, dict) and not all(map(plain_key, value)):
                wrapped = self.unreached(value, node, describe_where(where), ODD_KEYS)
            elif holds_data(value, [0]):
                wrapped = self._container(value, where, node)
            elif type(value) is list or (type(value) is dict and all(map(plain_key, value))):
                wrapped = self._lazy(value, where, node)
            elif holds_mutable(value):
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
            if not all(plain_key(k) for k in value):
                return self.unreached(value, node, describe_where(where), ODD_KEYS)
            self._check(tuple(value), (root, path + (("keys", None),)), node)
            return {k: self.wrap(v, (root, path + (("item", k),)), node, field=True)
                    for k, v in value.items()}
        field = type(value) is list or isinstance(value, dict)      # tuples cannot change
        items = [self.wrap(v, (root, path + (("item", i),)), node, field=field)
                 for i, v in enumerate(value)]
        if is_namedtuple(value):
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
        if not all(plain_key(k) for k in value.keywords):
            return value
        self._check(tuple(value.keywords), (root, stored[1] + (("keys", None),)), node)
        keywords = {k: self.wrap(v, (root, stored[1] + (("item", k),)), node, field=True)
                    for k, v in value.keywords.items()}
        return functools.partial(func, *args, **keywords)

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
        return self._items(value, item)

    def pinned(self, value: Any, node: Any) -> Any:
        """``value`` where the code needs a value known when compiling (a static option,
        ``rtol=CFG['rtol']``): a number read at run time from outside is compiled in and
        checked by value at call time instead, as an int there is; anything else as it is."""
        if not (isinstance(value, Var) and value in self.vars and value.aval.shape == ()):
            return value
        where = next((k for k, v in self.reads.items() if v is value and k[0] != "check"), None)
        if where is None:
            return value
        number = self.ev.values[value]
        number = number.item() if hasattr(number, "item") else number
        self._check(number, where, node)
        return number

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
        the traced code built from static values): as ``unreached`` gives it."""
        return self.unreached(vars(obj)[name], node, f"{type(obj).__qualname__}.{name}",
                              on_an_object(obj))

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
