"""``ys.update(obj, grads, fn)``: apply an optimizer step to the fields of a struct, by the
{path: gradient} dict that ``ys.grad`` returns for it (in place, or into a new object).
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from .errors import UpdateError
from .objects import is_struct_object


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
        return rebuilt(obj, _tied(obj, grads, fn), lambda x, new: new)
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


def _at(node: Any, path: tuple) -> Any:
    for key in path:
        node = _child(node, key)
    return node


def _tied(obj: Any, grads: dict, fn: Callable) -> dict:
    """{path: new value} for ``grads``, keeping ties: an array held at several paths of
    ``obj`` (tied weights, ``m.dec_W is m.enc.W``) is one parameter, updated once with the
    sum of its paths' gradients (the gradient comes once, under its first path, or per path
    from a gradient compiled untied), and every path to it gets the one new array."""
    olds = {path: _at(obj, path) for path in grads}
    total: dict[int, Any] = {}
    for path, g in grads.items():
        key = id(olds[path])
        total[key] = g if key not in total else total[key] + g
    new: dict[int, Any] = {}
    for path, old in olds.items():
        if id(old) not in new:
            new[id(old)] = fn(old, total[id(old)])
    out = {path: new[id(old)] for path, old in olds.items()}
    for path, value in _arrays(obj, (), set()):
        if id(value) in new and path not in out:
            out[path] = new[id(value)]
    return out


def _arrays(node: Any, path: tuple, seen: set) -> Any:
    """``(path, array)`` for every array held by the fields and items of ``node``."""
    if hasattr(node, "__array_interface__") or hasattr(node, "__cuda_array_interface__"):
        yield path, node
        return
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, tuple) and hasattr(type(node), "_fields"):
        items = list(zip(type(node)._fields, node))
    elif isinstance(node, (list, tuple)):
        items = list(enumerate(node))
    elif is_struct_object(node):
        items = [(k, v) for k, v in vars(node).items() if isinstance(k, str)] \
            if hasattr(node, "__dict__") else \
            [(k, getattr(node, k)) for k in getattr(type(node), "__slots__", ()) if hasattr(node, k)]
    else:
        return
    for key, value in items:
        yield from _arrays(value, path + (key,), seen)


def rebuilt(node: Any, grads: dict, fn: Callable) -> Any:
    """``node`` with ``fn`` applied at each path; new containers along the way, nothing mutated."""
    if () in grads:
        return fn(node, grads[()])
    changes = {key: rebuilt(_child(node, key), sub, fn) for key, sub in _groups(grads).items()}
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
