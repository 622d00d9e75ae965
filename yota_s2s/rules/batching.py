"""Helpers of the batching rules (``batchrule``, ad/batching.py), inlined with them.

A batched value has the batch as its first axis: an axis of one example's array is one further
on in the batch's, and an example's array of fewer dimensions than another lines up with it
once length-1 axes follow its batch axis.

Each family imports these at the head of its batching section (``# noqa: E402``), below its
derivative rules: those keep their line numbers, which the generated code's comments cite.
"""
import numpy as np

# What to do where the examples of a batch take different paths through the code (a branch
# traced on the first example, which a guard checks for the whole batch): ad/batching.py,
# batched.py
DIFFERENT_PATHS = ("The batched module computes the path of the first example for all of them: "
                   "write the branch with np.where, or batch the examples of each path apart.")


def after_batch(axis, ndim):
    """``axis`` of an example's array (of ``ndim`` dimensions) as the batch's axis: one further
    on; None (every axis) is every axis but the batch."""
    if axis is None:
        return 1 if ndim == 1 else tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(a % ndim + 1 for a in axis)
    return axis % ndim + 1


def lined_up(x, batched, rank):
    """The batched ``x`` with length-1 axes after the batch, up to ``rank`` axes per example,
    so that numpy's broadcasting pairs each example with its own; ``x`` unbatched is as it is
    (it broadcasts against every example)."""
    if not batched or np.ndim(x) - 1 >= rank:
        return x
    return np.expand_dims(x, tuple(range(1, 1 + rank - (np.ndim(x) - 1))))


def lifted(x, batched, size):
    """``x`` as a batch: the same for every example where it is not batched."""
    return x if batched else np.broadcast_to(x, (size,) + np.shape(x))


def example_ndim(x, batched):
    """The number of dimensions of one example's ``x``."""
    return np.ndim(x) - 1 if batched else np.ndim(x)


def lifted_copy(x, batched, size):
    """``x`` as a batch that may be written into: a copy made for every example where it is
    not batched."""
    return x if batched else np.zeros((size,) + np.shape(x), np.result_type(x)) + x


def any_batched(flags):
    """Whether any of a tree of flags (``batched`` of a sequence operand, an index) is set."""
    if isinstance(flags, tuple):
        return any(any_batched(f) for f in flags)
    return flags


def key_parts(key):
    return key if isinstance(key, tuple) else (key,)


def is_advanced(part):
    """An integer or boolean array (or a list) in an index: numpy's advanced indexing."""
    if part is None or part is Ellipsis or isinstance(part, slice):
        return False
    return isinstance(part, list) or np.ndim(part) > 0


def is_mask(part):
    return (np.asarray(part) if isinstance(part, list) else part).dtype == bool


def advanced_ndim(parts):
    """The number of dimensions numpy's advanced indices among ``parts`` make (a mask: one)."""
    return max([1 if is_mask(p) else np.ndim(p) for p in parts if is_advanced(p)], default=0)


def advanced_first(parts):
    """The number of axes numpy puts first for the advanced indices of ``parts`` when they
    are not next to each other (integers among them count), else 0."""
    where = [i for i, p in enumerate(parts) if is_advanced(p) or
             (isinstance(p, int) and not isinstance(p, bool))]
    if not any(is_advanced(p) for p in parts) or where[-1] - where[0] == len(where) - 1:
        return 0
    return advanced_ndim(parts)


def indexed_ndim(ndim, parts):
    """The number of dimensions of ``x[parts]`` for ``x`` of ``ndim`` dimensions."""
    slices = sum(1 for p in parts if isinstance(p, slice))
    new = sum(1 for p in parts if p is None)
    ints = sum(1 for p in parts if not is_advanced(p) and p is not None and p is not Ellipsis
               and not isinstance(p, slice))
    masks = sum(np.ndim(p) if is_mask(p) else 1 for p in parts if is_advanced(p))
    return ndim - ints - masks + new + advanced_ndim(parts)
