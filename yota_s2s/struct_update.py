"""``ys.update(obj, grads, fn)``: apply an optimizer step to the fields of a struct, by the
{path: gradient} dict that ``ys.grad`` returns for it (in place, or into a new object).
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from .errors import UpdateError


def update(obj: Any, grads: Any, fn: Callable[[Any, Any], Any], *, inplace: bool = True) -> Any:
    """Apply ``fn(x, gx)`` to every field of ``obj`` that has a gradient in ``grads``.

    ``grads`` is what ``grad`` returned for ``obj``: a ``{path: gradient}`` dict, or one
    gradient when ``obj`` is an array. In place (the default), arrays are overwritten
    (``x[...] = fn(x, gx)``) so that every reference to them sees the new values; a value that
    cannot be overwritten (a float, or a result of another shape or dtype) is stored back into
    its container, and an immutable container (tuple, namedtuple, frozen dataclass) raises
    ``UpdateError``. With ``inplace=False`` nothing is changed: a new object is returned,
    with new containers along each updated path and the other fields shared.
    """
    if grads is None:
        return obj
    if not isinstance(grads, dict):
        grads = {(): grads}
    grads = {path: g for path, g in grads.items() if g is not None}
    if not inplace:
        return _rebuilt(obj, grads, fn)
    if () in grads:
        if not _overwrite(obj, fn(obj, grads[()])):
            raise UpdateError(f"cannot update a {type(obj).__name__} in place",
                              hint="Use x = ys.update(x, g, fn, inplace=False).")
        return obj
    _update_fields(obj, grads, fn, type(obj).__name__)
    return obj


def _groups(grads: dict) -> dict[Any, dict]:
    out: dict[Any, dict] = {}
    for path, g in grads.items():
        out.setdefault(path[0], {})[path[1:]] = g
    return out


def _update_fields(node: Any, grads: dict, fn: Callable, where: str) -> None:
    for key, sub in _groups(grads).items():
        child, at = _child(node, key), _where(where, node, key)
        if () not in sub:
            _update_fields(child, sub, fn, at)
            continue
        new = fn(child, sub[()])
        if not _overwrite(child, new):
            _store(node, key, new, at)


def _overwrite(x: Any, new: Any) -> bool:
    """``x[...] = new`` where ``x`` is an array that can hold ``new`` as it is."""
    if not (hasattr(x, "__array_interface__") or hasattr(x, "__cuda_array_interface__")):
        return False
    if not getattr(x, "flags", None) or not x.flags.writeable or np.shape(new) != x.shape:
        return False
    if not np.can_cast(np.result_type(new), x.dtype, "same_kind"):
        return False
    x[...] = new
    return True


def _child(node: Any, key: Any) -> Any:
    if isinstance(node, dict) or not isinstance(key, str):
        return node[key]
    return getattr(node, key)


def _where(where: str, node: Any, key: Any) -> str:
    if isinstance(node, dict) or not isinstance(key, str):
        return f"{where}[{key!r}]"
    return f"{where}.{key}"


def _store(node: Any, key: Any, value: Any, where: str) -> None:
    if isinstance(node, (dict, list)):
        node[key] = value
        return
    try:
        if isinstance(node, tuple):
            raise AttributeError
        setattr(node, key, value)
    except AttributeError:      # a tuple, a frozen dataclass (FrozenInstanceError), slots
        raise UpdateError(f"cannot store the new value of {where}: {type(node).__name__} "
                          "objects are immutable",
                          hint="Use new = ys.update(obj, grads, fn, inplace=False), which builds "
                               "a new object, or keep the values in arrays, lists or a mutable "
                               "class.") from None


def _rebuilt(node: Any, grads: dict, fn: Callable) -> Any:
    """``node`` with ``fn`` applied at each path; new containers along the way, nothing mutated."""
    if () in grads:
        return fn(node, grads[()])
    changes = {key: _rebuilt(_child(node, key), sub, fn) for key, sub in _groups(grads).items()}
    if isinstance(node, dict):
        return {**node, **changes}
    if isinstance(node, list):
        return [changes.get(i, v) for i, v in enumerate(node)]
    if isinstance(node, tuple) and hasattr(type(node), "_fields"):
        return node._replace(**changes)
    if isinstance(node, tuple):
        return tuple(changes.get(i, v) for i, v in enumerate(node))
    new = copy.copy(node)
    for key, value in changes.items():
        object.__setattr__(new, key, value)       # works for frozen dataclasses too
    return new
