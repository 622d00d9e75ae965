"""``ys.flatten(params)`` -> ``(vector, unflatten)``: any struct the package accepts as an
argument as one 1-D vector, and back (autograd's ``flatten``, JAX's ``ravel_pytree``), so that
structured parameters meet ``scipy.optimize``, which knows vectors only::

    x0, unflatten = ys.flatten(params)

    def fun(x):
        value, g = ys.grad(loss, unflatten(x), wrt=0)
        return value, unflatten.flat(g[0])      # the gradient in the vector's layout

    result = minimize(fun, x0, jac=True)

The vector holds the *float leaves* of ``params`` (the leaves ``ys.grad`` differentiates: float
and complex arrays, numpy float scalars, Python floats and complex numbers), each raveled, in a
fixed order: list and tuple items in order, namedtuple and dataclass fields and object
attributes in the order the object holds them, dict values by sorted key (insertion order
where the keys do not sort). Its dtype is float64, complex128 where a leaf is complex. One
array reached by two paths (tied weights) is in the vector once. Integer and bool leaves and
anything else (strings, None, functions) are not in it: ``unflatten`` keeps them as they are.

``unflatten(vector)`` builds a new struct of the same layout, each float leaf a new value of
its own shape and dtype (a float32 array stays float32, a Python float a Python float; a
tied array is one new array at every path); nothing of ``params`` is changed.
``unflatten.flat(g[0])`` is a gradient of the struct (``ys.grad``'s ``{path: gradient}``
dict) as a vector in the same layout: scipy's ``jac``.

Inside a function being differentiated, ``ys.flatten(params)[0]`` of lists, tuples, dicts and
arrays is traced as the ``np.concatenate`` of the raveled leaves (autograd's
``neural_net_regression`` prior: ``np.sum(norm.logpdf(flatten(params)[0], 0, s))``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import UsageError
from .objects import is_struct_object
from .objects import rebuilt


def flatten(params: Any) -> tuple[np.ndarray, Callable[[Any], Any]]:
    """``params`` as one 1-D vector of its float leaves, and the function that builds a struct
    like ``params`` from such a vector (see the module's docstring)."""
    leaves = _float_leaves(params)
    groups: dict[int, list[tuple]] = {}           # id(leaf) -> its paths, in order
    values: list[Any] = []
    for path, value in leaves:
        key = id(value) if isinstance(value, np.ndarray) else ("path", path)
        if key not in groups:
            groups[key] = []
            values.append(value)
        groups[key].append(path)
    complex_ = any(np.iscomplexobj(v) for v in values)
    dtype = np.complex128 if complex_ else np.float64
    parts = [np.ravel(np.asarray(v)).astype(dtype) for v in values]
    vector = np.concatenate(parts) if parts else np.zeros(0, dtype)
    layout = [(paths, _Leaf.of(v)) for paths, v in zip(groups.values(), values)]
    return vector, Unflatten(params, layout, vector.size, np.dtype(dtype))


class _Leaf:
    """What a float leaf was: its shape, its dtype, and its kind (array, numpy scalar, Python
    float or complex), so that ``unflatten`` gives back the same kind."""

    __slots__ = ("shape", "dtype", "kind", "size")

    def __init__(self, shape: tuple, dtype: np.dtype, kind: str) -> None:
        self.shape, self.dtype, self.kind = shape, dtype, kind
        self.size = int(np.prod(shape, dtype=np.int64))

    @classmethod
    def of(cls, value: Any) -> "_Leaf":
        if isinstance(value, np.ndarray):
            return cls(value.shape, value.dtype, "array")
        if isinstance(value, np.generic):
            return cls((), value.dtype, "scalar")
        return cls((), np.result_type(value), type(value).__name__)     # float, complex

    def rebuild(self, segment: np.ndarray) -> Any:
        if self.dtype.kind != "c" and np.iscomplexobj(segment):
            segment = segment.real          # a real leaf's part of a complex vector
        if self.kind == "array":
            return segment.reshape(self.shape).astype(self.dtype, copy=True)
        if self.kind == "scalar":
            return self.dtype.type(segment[0])
        return float(segment[0]) if self.kind == "float" else complex(segment[0])


class Unflatten:
    """``unflatten(vector)``: a new struct like the one ``ys.flatten`` was given, its float
    leaves read from ``vector`` (1-D, of the size ``flatten`` returned)."""

    def __init__(self, params: Any, layout: list, size: int, dtype: np.dtype) -> None:
        self._params, self._layout, self.size, self.dtype = params, layout, size, dtype

    def __call__(self, vector: Any) -> Any:
        vector = np.asarray(vector)
        if vector.ndim != 1 or vector.size != self.size:
            raise UsageError(f"unflatten: expected a 1-D vector of {self.size} elements (what "
                             f"ys.flatten returned), got an array of shape {vector.shape}",
                             hint="Pass a vector of the same size as the one ys.flatten gave "
                                  "(scipy.optimize's x, or a gradient flattened the same way).")
        new: dict[tuple, Any] = {}
        start = 0
        for paths, leaf in self._layout:
            value = leaf.rebuild(vector[start:start + leaf.size])
            start += leaf.size
            for path in paths:
                new[path] = value
        if () in new:
            return new[()]
        return rebuilt(self._params, new, lambda old, value: value)

    def flat(self, grads: Any) -> np.ndarray:
        """A gradient of the struct as a vector in this layout: ``grads`` is what ``ys.grad``
        gives for it (a ``{path: gradient}`` dict; a leaf with no entry is not read by the
        function, its part zeros), or a struct like the one flattened."""
        if not isinstance(grads, dict) or not all(isinstance(k, tuple) for k in grads):
            grads = dict(_float_leaves(grads))
        parts = []
        for paths, leaf in self._layout:
            part = np.zeros(leaf.size, self.dtype)
            for path in paths:          # a tied array: its gradient under any of its paths
                if grads.get(path) is not None:
                    part = part + np.ravel(np.asarray(grads[path]))
            parts.append(part)
        return np.concatenate(parts) if parts else np.zeros(0, self.dtype)

    def __repr__(self) -> str:
        return f"<unflatten: a vector of {self.size} {self.dtype.name} elements>"


def _float_leaves(node: Any, path: tuple = (), seen: set | None = None) -> list[tuple]:
    """``(path, leaf)`` for every float leaf of ``node``, in the vector's order."""
    seen = set() if seen is None else seen
    if _is_float_leaf(node):
        return [(path, node)]
    if isinstance(node, (bool, int, str, bytes, type(None), np.ndarray, np.generic)):
        return []
    if id(node) in seen:
        return []               # a container met again (a cycle): its leaves are listed once
    seen.add(id(node))
    out: list[tuple] = []
    for key, value in _items(node):
        out += _float_leaves(value, path + (key,), seen)
    return out


def _is_float_leaf(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "fc"
    return isinstance(value, (float, complex))


def _items(node: Any) -> list[tuple]:
    """The (key, value) pairs of a container or struct object, in the vector's order."""
    if isinstance(node, dict):
        keys = list(node)
        try:
            keys = sorted(keys)
        except TypeError:
            pass                # keys of mixed types: insertion order
        return [(k, node[k]) for k in keys]
    if isinstance(node, tuple) and hasattr(type(node), "_fields"):
        return list(zip(type(node)._fields, node))
    if isinstance(node, (list, tuple)):
        return list(enumerate(node))
    if is_struct_object(node):
        if hasattr(node, "__dict__"):
            return [(k, v) for k, v in vars(node).items() if isinstance(k, str)]
        slots = [s for c in type(node).__mro__ for s in getattr(c, "__slots__", ())]
        return [(k, getattr(node, k)) for k in slots if hasattr(node, k)]
    return []


def traced_flatten(params: Any) -> tuple:
    """What the frontend inlines for ``ys.flatten(params)`` inside a function being
    differentiated: the vector, as the concatenation of the raveled float leaves of lists,
    tuples, dicts (by sorted key) and arrays; no ``unflatten`` (None)."""
    return np.concatenate(traced_leaves(params)), None


def traced_leaves(node: Any) -> list:
    """The raveled float leaves of ``node``, in ``flatten``'s order (inlined by the frontend)."""
    if isinstance(node, dict):
        out = []
        for key in sorted(node.keys()):
            out = out + traced_leaves(node[key])
        return out
    if isinstance(node, (list, tuple)):
        out = []
        for item in node:
            out = out + traced_leaves(item)
        return out
    if isinstance(node, (bool, int, str, type(None))):
        return []               # static leaves: not in the vector
    if isinstance(node, (np.ndarray, np.generic, float, complex)):
        return [np.ravel(node)]
    raise UsageError("ys.flatten inside a differentiated function reads lists, tuples, dicts "
                     "and arrays; it is given an object, whose fields it cannot list there",
                     hint="Flatten a dict or list of the arrays (ys.flatten([m.W, m.b])), or "
                          "call ys.flatten outside the function.")


flatten.__yota_traced__ = traced_flatten
