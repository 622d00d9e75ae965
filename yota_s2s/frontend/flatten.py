"""Arguments -> traced leaves and static leaves, each with its field path.

An argument is *traced* (a numpy array, a numpy scalar, a Python float or complex), *static*
(an int, bool, str, None, dtype, function: baked into the code and checked at the entry) or a
*container* (tuple, list, dict) whose items are flattened in turn. The path of a leaf is the
sequence of keys that reaches it from its argument, e.g. ``(0, "W")``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.tape import Aval, Input, StaticInput, Var


def is_traced_leaf(value: Any) -> bool:
    if isinstance(value, (bool, int, np.bool_, np.integer)):
        return False
    return isinstance(value, (float, complex, np.ndarray, np.generic))


def arg_kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, np.generic) and is_traced_leaf(value):
        return "scalar"
    if isinstance(value, (float, complex)) and not isinstance(value, bool):
        return "float"
    if isinstance(value, (tuple, list, dict)):
        return "struct"
    return "static"


def flatten(value: Any, argnum: int, path: tuple, access: str,
            inputs: list[Input], statics: list[StaticInput], values: dict[Var, Any]) -> Any:
    """The evaluator's view of ``value``: Vars for traced leaves, containers rebuilt.

    ``access`` is the Python expression that reads ``value`` from the arguments (``xs[0]``).
    """
    if is_traced_leaf(value):
        var = Var(Aval.of(value), hint=_hint(access))
        inputs.append(Input(var, argnum, path, access))
        values[var] = value
        return var
    if isinstance(value, (tuple, list)):
        items = [flatten(v, argnum, path + (i,), f"{access}[{i}]", inputs, statics, values)
                 for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: flatten(v, argnum, path + (k,), f"{access}[{k!r}]", inputs, statics, values)
                for k, v in value.items()}
    statics.append(StaticInput(argnum, path, value))
    return value


def _hint(access: str) -> str:
    """A variable name for a leaf: ``xs[0]`` -> ``xs_0``, ``m.W`` -> ``W``, ``d['w']`` -> ``d_w``."""
    if "." in access and "[" not in access.rsplit(".", 1)[1]:
        return access.rsplit(".", 1)[1]
    name = "".join(c if c.isalnum() else "_" for c in access)
    name = "_".join(p for p in name.split("_") if p)
    return name if name.isidentifier() else f"a_{name}"
