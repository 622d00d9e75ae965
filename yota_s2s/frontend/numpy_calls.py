"""numpy calls that the frontend writes with other primitives, instead of one rule each.

- ``np.array`` / ``np.asarray`` of traced values: a stack of the items (nested lists too), a
  cast, a copy; of static data, an array made when the code runs.
- ``np.split`` and its family: slices (``rules/joining.py`` has them in Python, inlined here
  with every statement at the call's line); so are ``np.append`` (a concatenation),
  ``np.select`` and ``np.real_if_close`` (``rules/elementwise.py``) and ``np.gradient``
  (differences of slices, ``rules/reductions.py``).
- ``np.nonzero(a)`` and ``np.where(a)``: the columns of ``np.argwhere(a)`` (one index array
  per axis).
- ``np.linalg.svd(a, compute_uv=False)``: the singular values only, a primitive of its own.
- ``np.add.at(a, key, v)``: an in-place update, accumulating repeated indices (``index_add``),
  so the gradients we generate can be compiled again.
- ``np.shape(x)``, ``np.ndim(x)``, ``np.size(x)`` ...: static facts about the example value.
- ``np.atleast_2d(a, b)`` of several arrays: one call each.
- ``np.einsum`` in sublist form: its subscripts as a string.
- ``np.cross`` with ``axisa``, ``axisb``, ``axisc`` or ``axis``: the cross of the last axes
  between ``np.moveaxis`` calls (``rules/products.py`` ``cross_axes``).
- ``np.linalg.eig``: the eigenvalues checked to be complex (or real) as in the example.

And a guard for results whose shape depends on the data (``x[mask]``, ``np.argwhere``): the
shapes of everything after are those of the example, so the generated code checks the count.
"""
from __future__ import annotations

import operator

import gast
import numpy as np

from ..errors import StaticValueError, YotaError
from ..ir.tape import Var, tree_atoms
from ..ir.values import MAX_LITERAL_SIZE, is_traced
from ..rules.control import guard
from ..rules.elementwise import astype
from ..rules.indexing import index_add, setitem
from ..rules.elementwise import WRITTEN as ELEMENTWISE_WRITTEN
from ..rules.joining import SPLITS
from ..rules.linalg import svd_values
from ..rules.callables import opaque_primitive
from ..rules.products import CROSS_AXES, cross_axes
from ..rules.reductions import WRITTEN as REDUCTIONS_WRITTEN


def _array(copy: bool):
    """np.array / np.asarray: of a traced array, a cast or copy; of a list holding traced
    values, a stack; of static data, an array made when the code runs."""
    def handler(ev, args, kwargs, node):
        obj, dtype = args[0], (args[1] if len(args) > 1 else kwargs.get("dtype"))
        if not is_traced(obj):
            fn = np.array if copy else np.asarray
            static = _static_ints(fn, args, kwargs)
            if static is not None:
                return static
            return ev.call_primitive(ev.rules.lookup(fn), args, kwargs, node)
        value = stacked(ev, obj, node)
        if dtype is not None and np.dtype(dtype) != value.aval.dtype:
            from ..rules.elementwise import astype
            return ev.call_primitive(ev.rules.lookup(astype), (value, np.dtype(dtype)), {}, node)
        if copy and value is obj:
            return ev.call_primitive(ev.rules.lookup(np.copy), (value,), {}, node)
        return value
    return handler


def _static_ints(fn, args, kwargs) -> np.ndarray | None:
    """``np.array([pr1, pr2, pc1, pc2])`` of ints known when compiling: a static array (its
    comparisons decide branches, ``any(... < 0)``), as small as a literal; None for other data
    (floats are made when the code runs)."""
    if not isinstance(args[0], (list, tuple)):
        return None
    try:
        value = fn(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    if value.dtype.kind in "biu" and value.size <= MAX_LITERAL_SIZE:
        return value
    return None


def stacked(ev, obj, node):
    """A list or tuple of traced values (lists of them too) as the array ``np.asarray`` makes
    of it: the ``np.stack`` of its items."""
    if isinstance(obj, (list, tuple)):
        items = [stacked(ev, item, node) for item in obj]
        return ev.call_primitive(ev.rules.lookup(np.stack), (items,), {}, node)
    return obj


def _inline_at_call(py_fn):
    """Inline ``py_fn`` (numpy written in Python) as if it were one call at the call's line."""
    def handler(ev, args, kwargs, node):
        with ev.at(ev.loc(node)):
            return ev.inline(py_fn, list(args), kwargs, node)
    return handler


def _cross(ev, args, kwargs, node):
    """``np.cross``: the primitive along the last axes; with ``axisa``, ``axisb``, ``axisc`` or
    ``axis``, ``cross_axes`` (moveaxis, the primitive, moveaxis) inlined at the call."""
    if not any(k in kwargs for k in CROSS_AXES) and len(args) <= 2:
        return ev.call_primitive(ev.rules.lookup(np.cross), args, kwargs, node)
    with ev.at(ev.loc(node)):
        return ev.inline(cross_axes, list(args), kwargs, node)


def _nonzero(ev, args, kwargs, node):
    (a,) = args
    if not isinstance(a, Var):
        return np.nonzero(a)
    found = ev.call_primitive(ev.rules.lookup(np.argwhere), (a,), {}, node)
    return tuple(ev.getitem(found, (slice(None), i), node) for i in range(a.aval.ndim))


def _where(ev, args, kwargs, node):
    """``np.where(condition)`` is ``np.nonzero(condition)``."""
    if len(args) == 1 and not kwargs:
        return _nonzero(ev, args, kwargs, node)
    return ev.call_primitive(ev.rules.lookup(np.where), args, kwargs, node)


def _svd(ev, args, kwargs, node):
    prim = ev.rules.lookup(np.linalg.svd)
    bound = dict(zip(("a", "full_matrices", "compute_uv", "hermitian"), args), **kwargs)
    if bound.get("compute_uv", True) is False:
        prim = ev.rules.lookup(svd_values)
    return ev.call_primitive(prim, args, kwargs, node)


def guard_selection(ev, prim, operands: list, node) -> None:
    """After ``x[mask]``, ``np.argwhere(mask)``, ``np.flatnonzero(mask)``: check that the
    mask selects as many elements as it did in the example."""
    if ev.backward_mode:
        return          # the forward code checked it
    if prim.fn in (np.argwhere, np.flatnonzero):
        masks = [operands[0]]
    elif prim.fn is operator.getitem or (prim.fn in (setitem, index_add)
                                         and isinstance(operands[2], Var)):
        # 0-d masks too: x[c > 0] has 0 or 1 rows. A written value's gradient is dy[mask],
        # whose shape the generated code has as in the example, so its count is checked too.
        masks = [a for a in tree_atoms(operands[1]) if isinstance(a, Var) and a.aval.dtype == bool]
    else:
        return
    for mask in masks:
        if not isinstance(mask, Var) or ev.all_constants(mask):
            continue        # (a constant mask selects as many elements in every call)
        count = int(np.count_nonzero(ev.values[ev.current(mask)]))
        found = ev.call_primitive(ev.rules.lookup(np.count_nonzero), (mask,), {}, node)
        same = ev.compare(_EQ, found, count, node)
        ev.selection_guards[same] = mask      # (selections.py may find it needless)
        loc = ev.loc(node)
        where = f"{loc.short} `{loc.text}` selecting {count} elements" if loc else "a selection"
        ev.emit(ev.rules.lookup(guard), [same], {"expected": True, "where": where}, node)


_EQ = gast.Eq()

STATIC_FACTS = (np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj,
                np.isscalar)


def _static_fact(fn):
    def handler(ev, args, kwargs, node):
        if fn in (np.shape, np.size):
            ev.static_reads.update(a for a in args if isinstance(a, Var))
        return fn(*[ev.values.peek(a) if isinstance(a, Var) else a for a in args], **kwargs)
    return handler


def _atleast(fn):
    """``np.atleast_2d(gamma, beta)``: one array each, as numpy gives them (a tuple; a list
    before numpy 2)."""
    several = type(fn(0, 0))

    def handler(ev, args, kwargs, node):
        prim = ev.rules.lookup(fn)
        if len(args) == 1:
            return ev.call_primitive(prim, args, kwargs, node)
        return several(ev.call_primitive(prim, (a,), kwargs, node) for a in args)
    return handler


def _eig(ev, args, kwargs, node):
    """``np.linalg.eig``: numpy's eigenvalues are complex or real by their values (a real matrix
    with complex pairs), and the code after is written for the example's, so the generated
    code checks that they are of that kind. Its result is the pair ``(w, v)``."""
    w, v = ev.call_primitive(ev.rules.lookup(np.linalg.eig), args, kwargs, node)
    if not ev.backward_mode and isinstance(w, Var):
        kind = w.aval.dtype.kind == "c"
        found = ev.call_primitive(opaque_primitive(np.iscomplexobj, (), 1), [w], {}, node)
        loc = ev.loc(node)
        where = f"whether {loc.short} `{loc.text}` gives complex eigenvalues" if loc else \
            "whether np.linalg.eig gives complex eigenvalues"
        ev.emit(ev.rules.lookup(guard), [found], {"expected": kind, "where": where}, node)
    return w, v


def _einsum(ev, args, kwargs, node):
    """``np.einsum`` in sublist form, ``np.einsum(a, [0, 1], b, [1, 2], [0, 2])``: the same
    call with its subscripts spelled as a string (``"ab,bc->ac"``)."""
    prim = ev.rules.lookup(np.einsum)
    if not args or isinstance(args[0], str):
        return ev.call_primitive(prim, args, kwargs, node)
    operands, sublists = list(args[0::2]), list(args[1::2])
    output = None
    if len(args) % 2:                  # the last argument is the output's sublist
        output, operands = operands[-1], operands[:-1]
    spec = ",".join(_subscripts(s, ev, node) for s in sublists)
    if output is not None:
        spec += "->" + _subscripts(output, ev, node)
    return ev.call_primitive(prim, (spec, *operands), kwargs, node)


def _subscripts(sublist, ev, node) -> str:
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if is_traced(sublist) or not all(s is Ellipsis or isinstance(s, int) and 0 <= s < 52
                                     for s in sublist):
        raise StaticValueError("np.einsum's sublists hold ints from 0 to 51 (and Ellipsis) known "
                               "at compile time", ev.loc(node),
                               "Write the subscripts as a string: np.einsum('ij,jk->ik', a, b).")
    return "".join("..." if s is Ellipsis else letters[s] for s in sublist)


def _arange(ev, args, kwargs, node):
    """``np.arange``: its length depends on the values of its bounds, so they must be static
    (a traced start would also get no gradient: it is a creation primitive)."""
    if is_traced([args, kwargs]):
        raise StaticValueError("the arguments of np.arange must be known at compile time, but one "
                               "is traced (the length of the result depends on them)", ev.loc(node),
                               "Use static bounds and shift or scale the result: "
                               "`a + np.arange(n) * step`.")
    return ev.call_primitive(ev.rules.lookup(np.arange), args, kwargs, node)


def _add_at(ev, args, kwargs, node):
    """``np.add.at(a, key, v)``: ``a[key] += v`` where every repeat of an index adds (as in the
    gradients we generate), recorded with primitives that have rules: a zeros buffer that
    ``index_add`` accumulates into, added to ``a``."""
    from ..rules.indexing import index_add
    a, key, v = args
    target = ev.current(a)
    shown = node.args[0].id if isinstance(node, gast.Call) and isinstance(node.args[0], gast.Name) \
        else "the array"
    if not ev.is_array(target):
        return np.add.at(*args)                 # a static array: numpy does it now
    ev.check_writable(target, node, f"np.add.at({shown}, ...)", shown,
                      f"Copy it first: `{shown} = {shown}.copy()`.")
    dtype = {} if target.aval.dtype == np.float64 else {"dtype": target.aval.dtype}
    buf = ev.call_primitive(ev.rules.lookup(np.zeros), (target.aval.shape,), dtype, node)
    buf = ev.call_primitive(ev.rules.lookup(index_add), (buf, key, v), {}, node)
    ev.replace(target, ev.binop(gast.Add(), target, buf, node), node)


# -- numpy's in-place functions: updates of their first argument (rules/callables.MUTATORS) --

def _mutator(fn, update, params: str):
    """``fn(a, ...)`` writes into ``a`` and returns None: ``update(ev, target, args)`` returns the
    ``(key, value)`` to write (``a[key] = value``, recorded as the user's own update), and the
    call returns None. A static ``a`` (read from outside, never traced) is written by numpy now.
    ``params``: numpy's parameter names, spelled out (numpy 2.0's ``np.putmask`` is a builtin
    that ``inspect.signature`` cannot read)."""
    names = tuple(p.strip() for p in params.split(","))

    def handler(ev, args, kwargs, node):
        bound = dict(zip(names, args), **kwargs)
        target = ev.current(bound[names[0]])
        if not ev.is_array(target):
            if is_traced([args, kwargs]):
                shown = target.aval if isinstance(target, Var) else type(target).__name__
                raise ev.unsupported(node, f"np.{fn.__name__} writes traced values into a "
                                     f"{shown}, which is not an array made by the traced code",
                                     "Copy it into an array first: `a = np.array(a)`.")
            return fn(*args, **kwargs)
        func = node.args[0] if isinstance(node, gast.Call) and node.args else None
        shown = func.id if isinstance(func, gast.Name) else "the array"
        key, value = update(ev, target, bound, node)
        ev.write_item(target, key, value, node, shown, f"np.{fn.__name__}({shown}, ...)")
        return None
    return handler


def _cycled(ev, values, count: int, node):
    """``values`` flattened and repeated (or cut) to ``count`` elements, as numpy's flat writes
    use them; a single value stays as it is (it broadcasts)."""
    size = values.aval.size if isinstance(values, Var) else np.size(values)
    if size == 1:
        return values
    if size == 0:
        raise YotaError("the values to write are empty", ev.loc(node),
                        "numpy raises here too: pass at least one value.")
    flat = ev.call_primitive(ev.rules.lookup(np.reshape), (values, (-1,)), {}, node)
    if size == count:
        return flat
    times = -(-count // size)
    if times > 1:
        flat = ev.call_primitive(ev.rules.lookup(np.tile), (flat, times), {}, node)
    return ev.getitem(flat, slice(0, count), node)


def _flat_write(ev, target, key, values, node):
    """``target.flat[key] = values`` as ``target[...] = new``, with ``new`` the raveled array
    written at ``key`` (``setitem``, pure) and shaped back."""
    shape = target.aval.shape
    flat = ev.call_primitive(ev.rules.lookup(np.reshape), (target, (-1,)), {}, node)
    params = {} if isinstance(key, slice) or np.ndim(key) == 0 else {"repeats": True}
    flat = ev.call_primitive(ev.rules.lookup(setitem), (flat, key, values), params, node)
    return Ellipsis, ev.call_primitive(ev.rules.lookup(np.reshape), (flat, shape), {}, node)


def _fill_diagonal(ev, target, bound, node):
    """numpy's own steps: ``a.flat[:end:step] = val`` (the values cycled)."""
    shape, wrap = target.aval.shape, bound.get("wrap", False)
    if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
        raise YotaError(f"np.fill_diagonal of a {target.aval}: the array must be at least 2-d, "
                        "and of equal lengths beyond 2-d", ev.loc(node))
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
    key = slice(None, end, step)
    count = len(range(*key.indices(int(np.prod(shape)))))
    return _flat_write(ev, target, key, _cycled(ev, bound["val"], count, node), node)


def _put(ev, target, bound, node):
    """``a.flat[ind] = v`` (``v`` cycled to the indices; ``mode`` wraps or clips them)."""
    ind, mode, size = bound["ind"], bound.get("mode", "raise"), target.aval.size
    if mode not in ("raise", "wrap", "clip"):
        raise YotaError(f"np.put: mode={mode!r} is not one of 'raise', 'wrap', 'clip'", ev.loc(node))
    if not is_traced(ind):
        ind = np.ravel(ind) if mode == "raise" else np.take(np.arange(size), np.ravel(ind), mode=mode)
        count = int(np.size(ind))
    else:
        ind = ev.call_primitive(ev.rules.lookup(np.reshape), (ind, (-1,)), {}, node)
        if mode == "wrap":
            ind = ev.binop(gast.Mod(), ind, size, node)
        elif mode == "clip":
            ind = ev.call_primitive(ev.rules.lookup(np.clip), (ind, 0, size - 1), {}, node)
        count = ind.aval.size
    return _flat_write(ev, target, ind, _cycled(ev, bound["v"], count, node), node)


def _putmask(ev, target, bound, node):
    """``a.flat[n] = values.flat[n % values.size]`` where ``mask.flat[n]``: ``np.where``."""
    values = _cycled(ev, bound["values"], target.aval.size, node)
    if isinstance(values, Var) and values.aval.ndim and values.aval.shape != target.aval.shape:
        values = ev.call_primitive(ev.rules.lookup(np.reshape), (values, target.aval.shape), {},
                                   node)
    new = ev.call_primitive(ev.rules.lookup(np.where), (bound["mask"], values, target), {}, node)
    return Ellipsis, new


def _place(ev, target, bound, node):
    """``arr[mask] = vals`` with the first ``count(mask)`` values, cycled (a traced mask's count
    is the example's, checked when the code runs, as for ``x[mask] = v``)."""
    mask = bound["mask"]
    count = int(np.count_nonzero(ev.values[ev.current(mask)] if isinstance(mask, Var) else mask))
    if isinstance(mask, Var) and mask.aval.dtype != bool:
        mask = ev.call_primitive(ev.rules.lookup(astype), (mask, np.dtype(bool)), {}, node)
    elif not isinstance(mask, Var):
        mask = np.asarray(mask, bool)
    if count == 0:
        return mask, 0.0 if target.aval.is_float else 0
    return mask, _cycled(ev, bound["vals"], count, node)


NUMPY_CALLS = {
    **{fn: _static_fact(fn) for fn in STATIC_FACTS},
    np.asarray: _array(copy=False), np.array: _array(copy=True), np.nonzero: _nonzero,
    np.where: _where,
    np.linalg.svd: _svd, np.linalg.eig: _eig, np.add.at: _add_at, np.arange: _arange,
    np.einsum: _einsum, np.cross: _cross,
    **{fn: _atleast(fn) for fn in (np.atleast_1d, np.atleast_2d, np.atleast_3d)},
    np.fill_diagonal: _mutator(np.fill_diagonal, _fill_diagonal, "a, val, wrap"),
    np.put: _mutator(np.put, _put, "a, ind, v, mode"),
    np.putmask: _mutator(np.putmask, _putmask, "a, mask, values"),
    np.place: _mutator(np.place, _place, "arr, mask, vals"),
    **{fn: _inline_at_call(py) for fn, py in {**SPLITS, **ELEMENTWISE_WRITTEN,
                                               **REDUCTIONS_WRITTEN}.items()},
}
