"""Arguments -> the evaluator's view of them: traced leaves, static leaves and structs.

Every value the traced function reads from its arguments goes through ``Flattener.flatten``:

- a *traced* leaf (numpy array, numpy float scalar, Python float or complex) becomes a ``Var``
  and an ``Input`` of the tape; so does a dask array, whose example value is a ghost of its
  shape and dtype (abstract.py), computed only if the code reads it (device="dask");
- a *static* leaf (int, bool, str, None, dtype, function, module, any other object) is returned
  as it is and recorded as a ``StaticInput``, since it is baked into the code;
- a tuple, list or dict is rebuilt with its items flattened (a namedtuple stays a namedtuple);
  its length (a dict: its keys) is recorded, since loops over it are unrolled;
- a class instance (plain class, dataclass, slots) becomes a ``StructValue`` whose attributes
  are flattened when the code reads them (``structs.py``), so fields the function never reads
  (a step counter, a cache, the training data) are neither inputs nor part of the compile key.

Each leaf has a *path* from its argument (attribute names, dict keys, list/tuple indices:
``("layers", 0, "W")``) and an *access*, the Python expression that reads it from the argument
(``model.layers[0].W``); generated code reads leaves with it. ``types`` and ``aliases`` record
what else the compiled code assumes about the arguments' layout (the class of each struct, and
leaves that are one object reached by two paths, such as tied weights), for the compile cache.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ArgumentMismatch, SourceLoc, UnsupportedSyntax
from ..ir.tape import Aval, Input, Primitive, StaticInput, Stmt, Var, is_sparse
from ..objects import host, is_lazy_array, is_struct_object
from ..text import access_attr, access_item, describe, name_base, plain_value
from .abstract import ghost
from .index_lists import is_int_list, run_time_list

_PLAIN_KEYS = (str, int, bool, type(None))


def is_traced_leaf(value: Any) -> bool:
    if isinstance(value, (bool, int, np.bool_, np.integer)):
        return False
    return isinstance(value, (float, complex, np.ndarray, np.generic))


def is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def arg_kind(value: Any) -> str:
    if isinstance(value, np.ndarray) or is_lazy_array(value):
        return "array"
    if isinstance(value, np.generic) and is_traced_leaf(value):
        return "scalar"
    if isinstance(value, (float, complex)) and not isinstance(value, bool):
        return "float"
    if isinstance(value, tuple) and all(isinstance(v, _PLAIN_KEYS) for v in value):
        return "static"
    if isinstance(value, (tuple, list, dict)) or is_struct_object(value):
        return "struct"
    return "static"


class Flattener:
    """Turns argument values into evaluator values, recording every leaf it hands out."""

    def __init__(self, values: dict[Var, Any], input_vars: set[Var],
                 dynamic: frozenset[int] = frozenset()):
        self.dynamic = dynamic            # int (and int list) arguments read at run time
        self.index_only: set[Var] = set()  # such a list as an array, and what is read of it
        self.values = values              # the evaluator's example value of each Var
        self.input_vars = input_vars      # the evaluator's set of Vars that are inputs
        self.inputs: list[Input] = []
        self.statics: list[StaticInput] = []
        self.layout: list[StaticInput] = []          # len(m.layers), tuple(d): containers' shape
        self.types: list[tuple[str, type]] = []      # (access, class) of each struct object
        self.aliases: list[tuple[str, str]] = []     # (access, first access) of shared objects
        self.absent: list[tuple[str, str]] = []      # (access, name): no own attribute name
        self.present: list[tuple[str, str]] = []     # (access, name): an own attribute that
        #                                              shadows the class's (deleted: the class's)
        self.untied: list[tuple[int, str, Any]] = []  # (argnum, access, aval): array leaves
        #                                               that could be tied, met once each
        self._seen: dict[tuple[int, int], tuple[Any, str, Any]] = {}
        # the lists and dicts handed out for an argument's, with their access and items then:
        # what the code appends or assigns to them the generated code does to the caller's
        self.containers: list[tuple[Any, str, Any]] = []
        self.loc: SourceLoc | None = None            # the traced function, for errors

    def flatten(self, value: Any, argnum: int, path: tuple, access: str,
                attribute: bool = False) -> Any:
        """The evaluator's view of ``value``: ``access`` reads it at ``path`` of arg ``argnum``.

        An object met again (the same class instance, or the same array read as an attribute:
        tied weights) is the same value, so its gradient is one total. Arrays that merely
        repeat inside a list or dict stay separate leaves, as in JAX's pytrees."""
        shared = bool(path) and (is_struct_object(value) or (
            attribute and not isinstance(value, (bool, int, float, complex, str, type(None)))))
        if shared:
            seen = self._seen.get((argnum, id(value)))
            if seen is not None:            # one object reached by two paths: tied weights
                self.aliases.append((access, seen[1]))
                return seen[0]
        result = self._flatten_new(host(value), argnum, path, access)
        if shared:
            self._seen[(argnum, id(value))] = (result, access, value)
            if isinstance(result, Var) and not result.aval.weak:
                self.untied.append((argnum, access, result.aval))
        return result

    def _lazy_leaf(self, value: Any, argnum: int, path: tuple, access: str) -> Var:
        """A dask array: a Var of its shape and dtype whose example value is a ghost
        (abstract.py), computed (on the caller's scheduler) only if the traced code reads it.
        A gradient over data larger than memory compiles without loading the data."""
        shape = tuple(value.shape)
        if not all(isinstance(n, (int, np.integer)) for n in shape):
            raise ArgumentMismatch(
                f"argument {access} is a dask array of unknown shape {shape} (chunks of unknown "
                "size): the gradient is compiled for known shapes", self.loc,
                f"Compute its chunk sizes first: {access}.compute_chunk_sizes().")
        sample = ghost(tuple(map(int, shape)), np.dtype(value.dtype))
        var = Var(Aval.of(sample), hint=_hint(access))
        self.inputs.append(Input(var, argnum, path, access))
        made = Primitive("example", lambda: np.asarray(value.compute()), ())
        self.values.set_ghost(var, sample, Stmt((var,), made, ()))
        self.input_vars.add(var)
        return var

    def distinct(self) -> list[tuple[str, ...]]:
        """Groups of array leaves, reached as attributes of one argument, that were distinct
        objects of one shape and dtype: each could be tied to another of its group (the code
        compiled for them gives one gradient per path), so the guards check they still are
        distinct (a tied model compiles its own code, with one gradient for the shared array)."""
        groups: dict[tuple, list[str]] = {}
        for argnum, access, aval in self.untied:
            groups.setdefault((argnum, aval.shape, aval.dtype), []).append(access)
        return [tuple(group) for group in groups.values() if len(group) > 1]

    def _flatten_new(self, value: Any, argnum: int, path: tuple, access: str) -> Any:
        if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
            raise ArgumentMismatch(
                f"argument {access} is a {type(value).__module__}.{type(value).__qualname__}, a "
                "subclass of numpy.ndarray, whose operations may differ from ndarray's (np.matrix's * "
                "is a matrix product, a masked array skips masked elements); the gradient would "
                "be compiled for the wrong operations", self.loc,
                f"Pass a plain array: np.asarray({access}) (for a masked array, decide what the "
                f"masked elements hold: {access}.filled(0.0)).")
        if is_sparse(value):
            raise UnsupportedSyntax(
                f"argument {access} is a scipy.sparse matrix: a sparse matrix is supported as a "
                "constant the function reads from outside (a global, a closure, a config), "
                "whose products get their rules; a gradient with respect to its entries is "
                "not", self.loc,
                f"Read it from outside the function (close over it: lambda x: f({access}, x)); "
                f"for a gradient with respect to its entries, pass {access}.toarray().")
        if is_lazy_array(value):
            return self._lazy_leaf(value, argnum, path, access)
        if is_traced_leaf(value) or (not path and argnum in self.dynamic and type(value) is int):
            var = Var(Aval.of(value), hint=_hint(access))
            self.inputs.append(Input(var, argnum, path, access))
            self.values[var] = value
            self.input_vars.add(var)
            return var
        if not path and argnum in self.dynamic and is_int_list(value):
            return run_time_list(self, value, argnum, access, _hint(access))
        if is_namedtuple(value):
            self.types.append((access, type(value)))
            fields = type(value)._fields
            return type(value)(*(self.flatten(v, argnum, path + (f,), access_attr(access, f))
                                 for f, v in zip(fields, value)))
        if isinstance(value, tuple) and all(isinstance(v, _PLAIN_KEYS) for v in value):
            self.statics.append(StaticInput(argnum, path, value, access))    # a shape, a flag set
            return value
        if isinstance(value, (tuple, list)):
            self._layout(argnum, path, f"len({access})", len(value))
            items = [self.flatten(v, argnum, path + (i,), access_item(access, i))
                     for i, v in enumerate(value)]
            if isinstance(value, list):
                self.containers.append((items, access, list(items)))
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return self._flatten_dict(value, argnum, path, access)
        if is_struct_object(value):
            from .structs import StructValue
            self.types.append((access, type(value)))
            return StructValue(type(value), value, argnum, path, access)
        self.statics.append(StaticInput(argnum, path, value, access))
        return value

    def _flatten_dict(self, value: dict, argnum: int, path: tuple, access: str) -> dict:
        for key in value:
            if not _plain_key(key):
                raise UnsupportedSyntax(
                    f"argument {access} has the key {describe(key)}, which generated code "
                    "cannot spell",
                    hint="Use str, int or bool keys (or tuples of them) in dicts that hold arrays.")
        self._layout(argnum, path, f"tuple({access})", tuple(value))
        items = {k: self.flatten(v, argnum, path + (k,), access_item(access, k))
                 for k, v in value.items()}
        self.containers.append((items, access, dict(items)))
        return items

    def _layout(self, argnum: int, path: tuple, access: str, value: Any) -> None:
        """A fact about a container that the code depends on (``len(m.layers)``, ``tuple(p)``)."""
        self.layout.append(StaticInput(argnum, path, value, access))


def _plain_key(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_plain_key(k) for k in key)
    return isinstance(key, _PLAIN_KEYS)


def _hint(access: str) -> str:
    """A first name for a leaf (``xs[0]`` -> ``xs_0``); ``leaf_names`` shortens it afterwards."""
    name = "".join(c if c.isalnum() else "_" for c in access)
    return name_base("_".join(p for p in name.split("_") if p), empty="a")


def leaf_names(inputs: list[Input], params: tuple[str, ...]) -> None:
    """Name struct leaves for the generated code by the shortest end of their path that no
    other leaf shares: ``W = m.W``, ``layers_0_W = model.layers[0].W``, ``p_W``/``d_W``."""
    leaves = [i for i in inputs if i.path]
    parts = [(params[i.argnum], *i.path) for i in leaves]
    for inp, full in zip(leaves, parts):
        for k in range(1, len(full) + 1):
            end = full[-k:]
            if not isinstance(end[0], str) or end[0].startswith("_"):
                continue
            if sum(p[-k:] == end for p in parts) == 1 and (k > 1 or end[0] not in params):
                break
        inp.var.hint = _hint("_".join(str(plain_value(k)) for k in end))
