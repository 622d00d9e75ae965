"""``ys.update(obj, grads, fn)``: apply an optimizer step to the fields of a struct, by the
{path: gradient} dict that ``ys.grad`` returns for it (in place, or into a new object).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import UpdateError
from .objects import array_leaves, child, groups, rebuilt


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


def _update_fields(node: Any, grads: dict, fn: Callable, where: str) -> None:
    for key, sub in groups(grads).items():
        field, at = child(node, key), _where(where, node, key)
        if () not in sub:
            _update_fields(field, sub, fn, at)
            continue
        new = fn(field, sub[()])
        if not _overwrite(field, new):
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
        node = child(node, key)
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
    for path, value in array_leaves(obj):
        if id(value) in new and path not in out:
            out[path] = new[id(value)]
    return out
