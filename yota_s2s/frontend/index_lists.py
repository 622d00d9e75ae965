"""A list of ints the code only indexes with: a run-time integer array (``ys.grad``).

min-char-rnn's ``lossFun(inputs, targets, hprev)`` takes its token ids as Python lists of
ints. Baked into the code as static values, every new chunk of text is a new compile, and the
ids decide nothing that the compiled code needs when compiling: the code only reads items of
the list (``inputs[t]``) and indexes arrays with them (``xs[t][inputs[t]] = 1``). So
``ys.grad`` first traces such a top-level argument as an int64 array of the list's length,
read when the generated code runs (its check: a list of that many ints), as it traces an int
argument (api.py ``_dynamic_ints``).

The array must behave as the list does, so it is *index only*: the list and each item or
slice read from it (``Flattener.index_only``) may only be indexed (``inputs[t]``), measured
(``len``), iterated, or used as an index (the ``key`` of ``getitem``/``setitem``). Any other
use (``inputs + [0]``, ``np.array(inputs)``, ``inputs[t] * 2.0``, an item as a dict key or a
``range`` bound, the list returned) raises ``StaticValueError`` here or where a Python value
is needed, and ``ys.grad`` compiles the function again with its ints and int lists static.
"""
from __future__ import annotations

import operator
from typing import Any

import gast
import numpy as np

from ..errors import StaticValueError
from ..ir.tape import Aval, Input, Var, tree_atoms
from ..objects import is_int_list

__all__ = ["check_result", "index_uses", "is_int_list", "run_time_list"]


def run_time_list(flat: Any, value: list, argnum: int, access: str, hint: str) -> Var:
    """The argument ``value`` (an int list) as an int64 array input of the tape, index only."""
    var = Var(Aval((len(value),), np.dtype(np.int64)), hint=hint)
    flat.inputs.append(Input(var, argnum, (), access))
    flat.values[var] = np.asarray(value, dtype=np.int64)
    flat.input_vars.add(var)
    flat.index_only.add(var)
    return var


def index_uses(ev: Any, prim: Any, operands: list, node: gast.AST | None) -> bool:
    """Check that ``prim(*operands)`` uses the index-only values among its operands as an
    index, or indexes one (True: then its result is an item or part of the list, index only
    too); a ``StaticValueError`` for any other use."""
    marked = ev.flattener.index_only if ev.flattener is not None else None
    if not marked:
        return False
    read = False
    for k, (name, tree) in enumerate(zip(prim.operands, operands)):
        for atom in tree_atoms(tree):
            if not isinstance(atom, Var) or atom not in marked or name == "key":
                continue
            if k == 0 and prim.fn is operator.getitem and tree is atom:
                read = True
                continue
            raise StaticValueError(
                f"{prim.name} of {atom.hint or 'an item of a list of ints'}: a list of ints "
                "(or an item of one) that an argument gives is read when the code runs only "
                "where the code indexes with it", ev.loc(node),
                "ys.grad compiles the function with the list's values instead.")
    return read


def check_result(flat: Any, result: Any, loc: Any) -> None:
    """A list argument read as an array must not reach the result (it would come back as an
    array, where the function returns a list)."""
    if flat.index_only and any(isinstance(a, Var) and a in flat.index_only
                               for a in tree_atoms(result)):
        raise StaticValueError("the function returns a list of ints an argument gave, or an "
                               "item of one", loc, "ys.grad compiles it with the list's values.")
