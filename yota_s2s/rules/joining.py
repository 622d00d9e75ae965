"""Joining, splitting and repeating: concatenate stack hstack vstack (row_stack) dstack
column_stack append, split array_split hsplit vsplit dsplit, tile repeat pad.

A join's gradient cuts ``dy`` back into the pieces; copies (tile, repeat, edge padding) add up.
The split family has no rule: a split is a list of slices, so ``SPLITS`` holds Python versions
that the frontend inlines (``a, b = np.split(x, 2)`` reads ``x[:2]`` and ``x[2:]``); so does
``np.append``, a concatenation. ``np.row_stack`` is ``np.vstack``.
"""
import numpy as np

from .indexing import index_add
from .registry import alias, batchrule, diffrule, primitive

primitive(np.concatenate, "arrays, axis=0", out_form="join", linear=True,   # (.., out=)
          sequences=("arrays",))
primitive(np.stack, "arrays, axis=0", out_form="join", linear=True, sequences=("arrays",))
primitive(np.hstack, "tup", linear=True, sequences=("tup",))
primitive(np.vstack, "tup", linear=True, sequences=("tup",))
primitive(np.dstack, "tup", linear=True, sequences=("tup",))
primitive(np.column_stack, "tup", linear=True, sequences=("tup",))
if hasattr(np, "row_stack"):        # numpy's old name for vstack (deprecated in numpy 2.0)
    alias(np.row_stack, np.vstack)
primitive(np.tile, "A, reps", linear=True)
primitive(np.repeat, "a, repeats, axis=None", linear=True)
primitive(np.pad, "array, pad_width, mode='constant', constant_values=0, reflect_type='even'")


def pieces(dy, sizes, axis, shapes):
    """``dy`` cut along ``axis`` into consecutive parts of ``sizes``, reshaped to ``shapes``."""
    before = (slice(None),) * (axis % np.ndim(dy))
    grads, start = [], 0
    for n, shape in zip(sizes, shapes):
        grads.append(np.reshape(dy[before + (slice(start, start + n),)], shape))
        start += n
    return tuple(grads)


def atleast(shape, ndim):
    """The shape ``np.atleast_1d/2d/3d`` makes of ``shape``."""
    if len(shape) >= ndim:
        return shape
    if ndim == 2:
        return (1,) + shape if shape else (1, 1)
    if ndim == 3:
        return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    return (1,)


@diffrule(np.concatenate, "arrays")
def concatenate_grad(arrays, dy, axis=0):
    """One slice of ``dy`` per input, along ``axis`` (of the flattened inputs for None)."""
    shapes = [np.shape(a) for a in arrays]
    if axis is None:
        return pieces(dy, [np.size(a) for a in arrays], 0, shapes)
    return pieces(dy, [s[axis] for s in shapes], axis, shapes)


@diffrule(np.stack, "arrays")
def stack_grad(arrays, dy, axis=0):
    before = (slice(None),) * (axis % np.ndim(dy))
    return tuple(dy[before + (i,)] for i in range(len(arrays)))


def joined(tup, dy, ndim, axis):
    """The gradient of a join of the inputs made at least ``ndim``-D, along ``axis``."""
    shapes = [atleast(np.shape(a), ndim) for a in tup]
    return pieces(dy, [s[axis] for s in shapes], axis, [np.shape(a) for a in tup])


diffrule(np.vstack, "tup", "joined(tup, dy, 2, 0)")
diffrule(np.dstack, "tup", "joined(tup, dy, 3, 2)")
diffrule(np.hstack, "tup", "joined(tup, dy, 1, 0 if np.ndim(dy) == 1 else 1)")


@diffrule(np.column_stack, "tup")
def column_stack_grad(tup, dy):
    """1-D inputs became columns; others are joined along axis 1."""
    sizes = [np.shape(a)[1] if np.ndim(a) >= 2 else 1 for a in tup]
    return pieces(dy, sizes, 1, [np.shape(a) for a in tup])


@diffrule(np.tile, "A")
def tile_grad(A, reps, dy):
    """``dy`` as (copies, size) pairs of axes, summed over the copies."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = max(len(reps), np.ndim(A))
    shape = (1,) * (nd - np.ndim(A)) + np.shape(A)
    reps = (1,) * (nd - len(reps)) + reps
    pairs = tuple(n for pair in zip(reps, shape) for n in pair)
    total = np.sum(np.reshape(dy, pairs), axis=tuple(range(0, 2 * nd, 2)))
    return np.reshape(total, np.shape(A))


@diffrule(np.repeat, "a")
def repeat_grad(a, repeats, dy, axis=None):
    """The copies of each element add up: a reshape and a sum for a constant count, sums over
    runs (differences of a cumulative sum) for counts per element."""
    shape = np.shape(a) if axis is not None else (np.size(a),)
    axis = 0 if axis is None else axis % len(shape)
    if np.size(repeats) == 1:
        count = int(np.reshape(repeats, -1)[0])
        runs = np.reshape(dy, shape[:axis + 1] + (count,) + shape[axis + 1:])
        return np.reshape(np.sum(runs, axis=axis + 1), np.shape(a))
    ends = np.cumsum(repeats)
    width = [(0, 0)] * len(shape)
    width[axis] = (1, 0)
    running = np.pad(np.cumsum(dy, axis=axis), width)
    total = np.take(running, ends, axis=axis) - np.take(running, ends - repeats, axis=axis)
    return np.reshape(total, np.shape(a))


def pad_widths(pad_width, ndim):
    """numpy's forms of ``pad_width`` (n, (before, after), one pair per axis) as pairs."""
    if isinstance(pad_width, int):
        return ((pad_width, pad_width),) * ndim
    if isinstance(pad_width[0], int):
        pair = tuple(pad_width) * (2 // len(pad_width))
        return (pair,) * ndim
    if len(pad_width) == 1:
        return (tuple(pad_width[0]) * (2 // len(pad_width[0])),) * ndim
    return tuple(tuple(p) * (2 // len(p)) for p in pad_width)


@diffrule(np.pad, "array", ignores=("constant_values",))
def pad_grad(array, pad_width, dy, mode="constant", reflect_type="even"):
    """Constant padding: the middle of ``dy``. Edge, wrap, reflect and symmetric padding copy
    elements: along each axis, ``dy`` adds back to where each element was read from."""
    widths = pad_widths(pad_width, np.ndim(array))
    if mode == "constant":
        return dy[tuple(slice(b, b + n) for (b, _), n in zip(widths, np.shape(array)))]
    if mode not in ("edge", "wrap", "reflect", "symmetric"):
        raise NotImplementedError(f"np.pad with mode={mode!r} has no gradient rule; "
                                  "constant, edge, wrap, reflect and symmetric do")
    options = {"reflect_type": reflect_type} if mode in ("reflect", "symmetric") else {}
    g = dy
    for axis, ((before, after), n) in enumerate(zip(widths, np.shape(array))):
        source = np.pad(np.arange(n), (before, after), mode, **options)
        shape = np.shape(g)[:axis] + (n,) + np.shape(g)[axis + 1:]
        g = index_add(np.zeros_like(array, shape=shape), (slice(None),) * axis + (source,), g)
    return g


def append(arr, values, axis=None):
    """``np.append``: a concatenation, of the flattened arrays without ``axis``."""
    if axis is None:
        return np.concatenate((np.ravel(arr), np.ravel(values)))
    return np.concatenate((arr, values), axis=axis)


def split(ary, indices_or_sections, axis=0):
    """``np.split``: the pieces are slices (equal sections must divide the axis)."""
    n = np.shape(ary)[axis]
    if isinstance(indices_or_sections, int) and n % indices_or_sections:
        raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis=0):
    """``np.array_split``: sections may differ by one, or cut at the given indices."""
    n = np.shape(ary)[axis]
    if isinstance(indices_or_sections, int):
        size, extra = divmod(n, indices_or_sections)
        sizes = [size + 1] * extra + [size] * (indices_or_sections - extra)
        cuts = [sum(sizes[:i]) for i in range(1, indices_or_sections)]
    else:
        cuts = list(indices_or_sections)
    before = (slice(None),) * (axis % np.ndim(ary))
    bounds = [0] + cuts + [n]
    return [ary[before + (slice(start, stop),)] for start, stop in zip(bounds[:-1], bounds[1:])]


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 1 if np.ndim(ary) > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 2)


SPLITS = {np.split: split, np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit,
          np.dsplit: dsplit, np.append: append}


# -- batching (ys.vmap) ----------------------------------------------------------------------

from .batching import after_batch, lifted, lined_up  # noqa: E402


def batch_all(arrays, batched, size):
    """Every array of a sequence as a batch (the same for every example where it is not)."""
    return [lifted(a, b, size) for a, b in zip(arrays, batched)]


@batchrule(np.concatenate)
def concatenate_batched(arrays, batched, size, axis=0):
    arrays = batch_all(arrays, batched[0], size)
    if axis is None:
        return np.concatenate([np.reshape(a, (size, -1)) for a in arrays], axis=1)
    return np.concatenate(arrays, axis=after_batch(axis, np.ndim(arrays[0]) - 1))


@batchrule(np.stack)
def stack_batched(arrays, batched, size, axis=0):
    arrays = batch_all(arrays, batched[0], size)
    return np.stack(arrays, axis=after_batch(axis, np.ndim(arrays[0])))


@batchrule(np.hstack)
def hstack_batched(tup, batched, size):
    arrays = batch_all(tup, batched[0], size)
    if all(np.ndim(a) <= 2 for a in arrays):        # numbers and vectors: joined end to end
        return np.concatenate([np.reshape(a, (size, -1)) for a in arrays], axis=1)
    return np.concatenate(arrays, axis=2)


@batchrule(np.vstack)
def vstack_batched(tup, batched, size):
    arrays = batch_all(tup, batched[0], size)
    rows = [np.reshape(a, (size, 1, -1)) if np.ndim(a) <= 2 else a for a in arrays]
    return np.concatenate(rows, axis=1)


@batchrule(np.tile)
def tile_batched(A, reps):
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    n = max(np.ndim(A) - 1, len(reps))
    return np.tile(lined_up(A, True, n), (1,) + (1,) * (n - len(reps)) + reps)


@batchrule(np.repeat)
def repeat_batched(a, repeats, axis=None):
    if axis is None:
        return np.repeat(np.reshape(a, (np.shape(a)[0], -1)), repeats, 1)
    return np.repeat(a, repeats, after_batch(axis, np.ndim(a) - 1))


def pad_widths(pad_width, n):
    """numpy's forms of ``pad_width`` (a number, a pair, one pair per axis) as a pair per axis."""
    if not isinstance(pad_width, (tuple, list)):
        return [(pad_width, pad_width)] * n
    if not isinstance(pad_width[0], (tuple, list)):
        pair = tuple(pad_width) if len(pad_width) == 2 else (pad_width[0], pad_width[0])
        return [pair] * n
    pairs = [tuple(p) if len(p) == 2 else (p[0], p[0]) for p in pad_width]
    return pairs * n if len(pairs) == 1 else pairs


@batchrule(np.pad)
def pad_batched(array, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    widths = [(0, 0)] + pad_widths(pad_width, np.ndim(array) - 1)
    if mode == "constant":
        return np.pad(array, widths, mode, constant_values=constant_values)
    if mode in ("reflect", "symmetric"):
        return np.pad(array, widths, mode, reflect_type=reflect_type)
    return np.pad(array, widths, mode)


@batchrule(np.column_stack)
def column_stack_batched(tup, batched, size):
    arrays = batch_all(tup, batched[0], size)
    columns = [np.reshape(a, (size, -1, 1)) if np.ndim(a) <= 2 else a for a in arrays]
    return np.concatenate(columns, axis=2)


@batchrule(np.dstack)
def dstack_batched(tup, batched, size):
    arrays = batch_all(tup, batched[0], size)
    deep = [np.reshape(a, (size, 1, -1, 1)) if np.ndim(a) <= 2 else
            np.expand_dims(a, -1) if np.ndim(a) == 3 else a for a in arrays]
    return np.concatenate(deep, axis=3)
