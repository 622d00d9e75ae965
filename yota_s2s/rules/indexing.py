"""Indexing: ``x[key]``, the update ``x[key] = v``, take, take_along_axis, delete, sort, partition.

The gradient of ``y = a[key]`` is ``da[key] += dy``. ad/sweep.py gathers every such
contribution to one array into a single buffer (one ``np.zeros`` per array, not one per
index), which is what makes element-by-element code like the seed polynomial cheap.
``index_add`` is that update as a primitive: in place on a buffer nobody else reads; the
generated code writes ``dx[2] += t`` for plain keys and ``np.add.at`` where integer-array keys
may repeat an index.

``setitem(a, key, v)`` is ``a[key] = v`` as a pure function: the frontend records every
in-place update of the user's code this way (see frontend/updates.py), and passes/inplace.py
writes it back in place (``setitem_``) where the old array is not needed any more. What was
overwritten gets no gradient; ``v`` gets ``dy`` where it landed.
"""
import operator

import numpy as np

from .registry import batchrule, diffrule, primitive, scatter_rule

primitive(operator.getitem, "a, key", name="getitem", emit=("getitem",), view=True, linear=True)
scatter_rule(operator.getitem, "a")


def index_add(a, key, v):
    """``a[key] += v`` in place, accumulating repeated indices."""
    np.add.at(a, key, v)
    return a


primitive(index_add, "a, key, v", name="index_add", emit=("index_add",), inplace=True)
diffrule(index_add, "a", "dy")
diffrule(index_add, "v", "dy[key]")


def setitem(a, key, v, repeats=False):
    """``a[key] = v`` on a copy of ``a``. ``repeats``: the key may name a position twice
    (an integer index array), where numpy keeps the last write."""
    out = np.array(a, copy=True)
    out[key] = v
    return out


def setitem_(a, key, v):
    """``a[key] = v`` in place: what codegen writes when ``a`` is dead afterwards."""
    a[key] = v
    return a


primitive(setitem, "a, key, v, repeats=False", name="setitem", linear=True)
primitive(setitem_, "a, key, v", name="setitem_", emit=("setitem",), inplace=True)


def selects_all(key):
    """``x[...]``, ``x[:, :]``: a key that names every element once."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is Ellipsis or isinstance(p, slice) and p == slice(None) for p in parts)


@diffrule(setitem, "a", ignores=("repeats",))
def setitem_grad_a(key, dy):
    """What was overwritten gets no gradient (none at all when it was everything)."""
    return None if selects_all(key) else setitem(dy, key, 0.0)


@diffrule(setitem, "v")
def setitem_grad_v(a, key, dy, repeats=False):
    """``dy`` where ``v`` landed. Where the key names a position twice only the last write
    stayed, so only that element of ``v`` gets the gradient there."""
    if selects_all(key):
        return dy
    landed = dy[key]
    if not repeats:
        return landed
    order = np.reshape(np.arange(np.size(landed)), np.shape(landed))
    last = setitem(np.full(np.shape(a), -1), key, order)
    return np.where(last[key] == order, landed, 0.0)


primitive(np.take, "a, indices, axis=None, mode='raise'", linear=True)
primitive(np.take_along_axis, "arr, indices, axis=-1", linear=True, written=("axis",))


@diffrule(np.take, "a")
def take_grad(a, indices, dy, axis=None, mode="raise"):
    """``np.take`` reads ``a[..., indices]`` along ``axis`` (the flattened ``a`` for None);
    repeated indices add up."""
    if isinstance(indices, tuple):          # a list of indices, as the tape keeps it
        indices = list(indices)
    if mode != "raise":                     # where "wrap" or "clip" really read
        n = np.size(a) if axis is None else np.shape(a)[axis]
        indices = np.take(np.arange(n), indices, mode=mode)
    if axis is None:
        return np.reshape(index_add(np.ravel(np.zeros_like(a)), indices, dy), np.shape(a))
    before = (slice(None),) * (axis % np.ndim(a))
    return index_add(np.zeros_like(a), before + (indices,), dy)


@diffrule(np.take_along_axis, "arr")
def take_along_axis_grad(arr, indices, dy, axis=-1):
    """Scatter ``dy`` back to where each element was taken from (repeats add up)."""
    if axis is None:
        return np.reshape(index_add(np.ravel(np.zeros_like(arr)), indices, dy), np.shape(arr))
    return index_add(np.zeros_like(arr), along_axis_key(indices, axis, np.shape(dy)), dy)


def along_axis_key(indices, axis, shape):
    """The index that ``np.take_along_axis(a, indices, axis)`` reads to make a result of
    ``shape``: ``indices`` on ``axis``, and an arange on every other axis."""
    ndim = len(shape)
    axis = axis % ndim
    key = []
    for i, n in enumerate(shape):
        trailing = (None,) * (ndim - 1 - i)
        key.append(indices if i == axis else np.arange(n)[(slice(None),) + trailing])
    return key[0] if ndim == 1 else tuple(key)


primitive(np.delete, "arr, obj, axis=None", linear=True)


@diffrule(np.delete, "arr")
def delete_grad(arr, obj, dy, axis=None):
    """What ``np.delete`` kept goes back to where it was; what it deleted gets zero."""
    if isinstance(obj, tuple):              # a list of indices, as the tape keeps it
        obj = list(obj)
    if axis is None:
        kept = np.delete(np.arange(np.size(arr)), obj)
        return np.reshape(index_add(np.zeros(np.size(arr), dy.dtype), kept, dy), np.shape(arr))
    kept = np.delete(np.arange(np.shape(arr)[axis]), obj)
    before = (slice(None),) * (axis % np.ndim(arr))
    return index_add(np.zeros(np.shape(arr), dy.dtype), before + (kept,), dy)


primitive(np.sort, "a, axis=-1, kind=None, stable=None", real_only="complex numbers have no order")
primitive(np.partition, "a, kth, axis=-1", real_only="complex numbers have no order")


@diffrule(np.sort, "a", ignores=("kind", "stable"))
def sort_grad(a, dy, axis=-1):
    """The gradient follows the permutation: ``dy`` goes back to where each element came
    from. Equal elements keep their order (a stable argsort), so with ties the first of them
    gets the gradient of the first of their places (docs/rules.md)."""
    if axis is None:
        return np.reshape(sort_grad(np.reshape(a, -1), dy, 0), np.shape(a))
    return take_along_axis_grad(a, np.argsort(a, axis, kind="stable"), dy, axis)


@diffrule(np.partition, "a")
def partition_grad(a, kth, dy, axis=-1):
    """As for sort, with ``np.argpartition``'s permutation (the same selection algorithm)."""
    if axis is None:
        return np.reshape(partition_grad(np.reshape(a, -1), kth, dy, 0), np.shape(a))
    return take_along_axis_grad(a, np.argpartition(a, kth, axis), dy, axis)


# -- batching (ys.vmap): the index one axis further on ---------------------------------------

from .batching import (  # noqa: E402
    advanced_first, after_batch, any_batched, indexed_ndim, is_advanced, key_parts, lifted,
    lifted_copy, lined_up)

PER_EXAMPLE_INDEX = ("indexes with an array that differs per example after a slice or apart "
                     "from the other array indices (not batched yet)")


def per_example_key(parts, flags, batched, size):
    """The key of ``parts`` (index arrays among them differ per example: ``flags``) for the
    batch, and the number of dimensions its index arrays make per example; (None, 0) where
    this is not written yet. The examples' array indices come first and together
    (``x[labels]``, ``x[i, j]``); an ``arange`` over the batch (if the array is batched) goes in
    front of them and each batched index array gets length-1 axes after its batch, so that
    they broadcast example by example. A mask that differs per example picks a number of
    elements that does too: refused."""
    advanced = [i for i, (p, f) in enumerate(zip(parts, flags)) if f or is_advanced(p) or
                isinstance(p, int) and not isinstance(p, bool)]
    if advanced != list(range(len(advanced))) or \
            any(f and p.dtype == bool for p, f in zip(parts, flags)):
        return None, 0
    rank = max([np.ndim(p) - 1 if f else np.ndim(p) for p, f in zip(parts, flags)
                if f or is_advanced(p)], default=0)
    lined = tuple(lined_up(p, True, rank) if f else p for p, f in zip(parts, flags))
    if not batched:
        return lined, rank
    return (np.reshape(np.arange(size), (size,) + (1,) * rank),) + lined, rank


@batchrule(operator.getitem)
def getitem_batched(a, key, batched):
    """``a[:, key]``; where numpy puts the axes of advanced indices first (they are apart),
    the batch axis comes after them, and is moved back."""
    parts = key_parts(key)
    if any_batched(batched[1]):
        key, _ = per_example_key(parts, key_parts(batched[1]), batched[0], np.shape(a)[0] if
                                 batched[0] else None)
        return PER_EXAMPLE_INDEX if key is None else a[key]
    first = advanced_first(parts)
    return np.moveaxis(a[batched_key(parts)], first, 0) if first else a[batched_key(parts)]


def batched_key(parts):
    """The index of an example's ``parts`` in the batch: after the batch axis (a leading
    ``...`` covers it already)."""
    return parts if parts and parts[0] is Ellipsis else (slice(None),) + parts


def per_example_values(a, key, v, batched, size):
    """``batched_values`` for a key whose index arrays differ per example (``per_example_key``)."""
    parts = key_parts(key)
    key, rank = per_example_key(parts, key_parts(batched[1]), True, size)
    if key is None:
        return a, None, v
    arrays = sum(1 for p in parts if p is not None and p is not Ellipsis and
                 not isinstance(p, slice))
    ndim = np.ndim(a) - batched[0] - arrays + rank + sum(1 for p in parts if p is None)
    return lifted_copy(a, batched[0], size), key, lined_up(v, batched[2], ndim)


def batched_values(a, key, v, batched, size):
    """``a`` (a batch to write into), its key and the values ``v`` lined up with ``a[key]``."""
    parts = key_parts(key)
    first = advanced_first(parts)
    rank = indexed_ndim(np.ndim(a) - batched[0], parts)
    if first or batched[2]:
        v = lined_up(lifted(v, batched[2], size), True, rank)
        v = np.moveaxis(v, 0, first) if first else v
    return lifted_copy(a, batched[0], size), batched_key(parts), v


@batchrule(index_add)
def index_add_batched(a, key, v, batched, size):
    if not batched[0]:         # the same array for every example: the batch's additions to it
        added = np.zeros((size,) + np.shape(a), np.result_type(a))
        return index_add_batched(added, key, v, (True,) + batched[1:], size) + a
    if any_batched(batched[1]):
        a, key, v = per_example_values(a, key, v, batched, size)
        return PER_EXAMPLE_INDEX if key is None else index_add(a, key, v)
    a, key, v = batched_values(a, key, v, batched, size)
    return index_add(a, key, v)


@batchrule(setitem)
def setitem_batched(a, key, v, batched, size, repeats=False):
    parts = key_parts(key)
    if len(parts) == 1 and key_parts(batched[1])[0]:
        mask = parts[0]
        if mask.dtype == bool and np.ndim(mask) == np.ndim(a) + 1 - batched[0] and \
                np.ndim(v) == batched[2]:       # x[mask] = c: where the mask holds, c
            return np.where(mask, lined_up(v, batched[2], np.ndim(mask) - 1), a)
    if any_batched(batched[1]):
        a, key, v = per_example_values(a, key, v, batched, size)
        return PER_EXAMPLE_INDEX if key is None else setitem(a, key, v, repeats)
    a, key, v = batched_values(a, key, v, batched, size)
    return setitem(a, key, v, repeats)


@batchrule(setitem_)
def setitem__batched(a, key, v, batched, size):
    if any_batched(batched[1]):
        a, key, v = per_example_values(a, key, v, batched, size)
        return PER_EXAMPLE_INDEX if key is None else setitem_(a, key, v)
    a, key, v = batched_values(a, key, v, batched, size)
    return setitem_(a, key, v)


@batchrule(np.take)
def take_batched(a, indices, batched, size, axis=None, mode="raise"):
    if any_batched(batched[1]):      # each example's indices: x[indices] of its flat x
        if mode != "raise" or isinstance(indices, tuple) or \
                axis is not None and axis % (np.ndim(a) - batched[0]) != 0:
            return PER_EXAMPLE_INDEX
        flat = a if axis is not None else np.reshape(a, (size, -1)) if batched[0] else \
            np.ravel(a)
        return getitem_batched(flat, (indices,), (batched[0], (True,)))
    if axis is None:
        return np.take(np.reshape(a, (np.shape(a)[0], -1)), indices, 1, mode=mode)
    return np.take(a, indices, after_batch(axis, np.ndim(a) - 1), mode=mode)


@batchrule(np.take_along_axis)
def take_along_axis_batched(arr, indices, batched, size, axis=-1):
    rank = np.ndim(arr) - batched[0]
    if axis is None:
        return np.take_along_axis(np.reshape(lifted(arr, batched[0], size), (size, -1)),
                                  lifted(indices, batched[1], size), axis=1)
    return np.take_along_axis(lifted(arr, batched[0], size),
                              lined_up(lifted(indices, batched[1], size), True, rank),
                              axis=after_batch(axis, rank))


@batchrule(np.sort)
def sort_batched(a, axis=-1, kind=None, stable=None):
    if axis is None:
        return np.sort(np.reshape(a, (np.shape(a)[0], -1)), 1, kind=kind, stable=stable)
    return np.sort(a, after_batch(axis, np.ndim(a) - 1), kind=kind, stable=stable)


@batchrule(np.partition)
def partition_batched(a, kth, axis=-1):
    if axis is None:
        return np.partition(np.reshape(a, (np.shape(a)[0], -1)), kth, 1)
    return np.partition(a, kth, after_batch(axis, np.ndim(a) - 1))
