"""``ys.vmap`` and ``ys.per_example_grad``: a function of one example, computed for a batch.

``vmap(f, in_axes=0, out_axes=0)`` returns ``vf``: ``vf(*args)`` is ``f`` applied to each
example of the batch, stacked along ``out_axes``, computed by a generated module that works on
the whole batch at once (ad/batching.py). It is compiled on the first call with a new
signature (shapes, dtypes, static values) and found again after that. It composes with the
gradient entry points: ``ys.vmap(ys.gradient(loss), in_axes=(None, 0, 0))(W, X, Y)`` is one
gradient per example.

``per_example_grad(loss, params, *batch)`` does that for ``params`` of any structure (an array,
a list, a dict, a class instance): per-example gradients with the structure of ``params``, each
array with the batch first. ``norms=True`` returns each example's gradient norm instead,
without making the gradients (the "ghost norm" of DP-SGD's clipping).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .cache import BUILT, arg_key, function_key
from .errors import GuardError, UsageError
from .ir.structure import LeafAxes, rebuild
from .marks import entry_point
from .objects import array_leaves, child, host
from .rules.batching import DIFFERENT_PATHS
from .rules.registry import RULES, RuleSet
from .struct_update import update


def compile_vmap(f: Callable, args: tuple, axes: tuple, out_axes: Any, **options: Any) -> Any:
    """``compiler.compile_vmap`` (the compile machinery is imported on the first compile)."""
    from .compiler import compile_vmap
    return compile_vmap(f, args, axes, out_axes, **options)


def compile_per_example(f: Callable, args: tuple, axes: tuple, norms: bool,
                        **options: Any) -> Any:
    """``compiler.compile_per_example``: per-example gradients (or their norms)."""
    from .compiler import compile_per_example
    return compile_per_example(f, args, axes, norms, **options)


@entry_point
def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0, *, device: str = "cpu",
         rules: RuleSet = RULES, buffers: bool = True) -> Callable:
    """``f`` mapped over a batch: ``vmap(f)(*args)`` stacks ``f`` of each example.

    ``in_axes``: one axis for every argument, or one per argument (an int: that axis of the
    array holds the examples; None: the argument is the same for every example, as weights
    are). Batched arguments are arrays (or floats given as arrays of one per example), or
    structures of them: one int batches each array of a dict, list, tuple or object along that
    axis, and a dict, list or tuple shaped like it gives an int or None per array (JAX's
    ``in_axes`` prefix); None passes a structure whole, unbatched. ``out_axes``: where the batch goes in each result
    (one int for all, or one per result); a result of several arrays (a tuple, a dict, a
    dataclass) comes back with that structure. The generated module is written for the batch
    (``vf.function(*args)`` is its function, ``ys.source`` of it its text); it is compiled
    once per signature and found again, guarded like ``ys.grad``'s (``cache.BUILT``)."""
    if isinstance(out_axes, list):
        out_axes = tuple(out_axes)

    def function(*args: Any) -> Callable:
        """The batched module's function for ``args`` (compiled if it is not yet)."""
        return BUILT.get(*kept(*args)).generated

    def kept(*args: Any) -> tuple:
        """``BUILT``'s key, guard arguments and builder for a call on ``args``."""
        axes = batch_axes(f, in_axes, args)
        key = ("vmap", function_key(f), rules, rules.version, axes, out_axes, device, buffers,
               *(arg_key(a) for a in args))
        return key, args, lambda: _called(f, compile_vmap(
            f, tuple(host(a) for a in args), axes, out_axes, rules=rules, device=device,
            buffers=buffers))

    def vf(*args: Any) -> Any:
        return _run(f, kept(*args), args)

    def inline(*example: Any) -> Callable:
        """For a call of ``vf`` inside a function being compiled (a gradient of a loss over
        a batch): the plain batched module's function, which the frontend inlines
        (nested.py), its primitives all with derivative rules."""
        return compile_vmap(f, example, batch_axes(f, in_axes, example), out_axes,
                            rules=rules, device=device, buffers=False).fn

    vf.__name__ = vf.__qualname__ = f"vmap_{getattr(f, '__name__', 'f')}"
    vf.__doc__ = getattr(f, "__doc__", None)
    vf.function = function
    vf.__yota_gradient__ = True          # (what the frontend inlines in its place: inline)
    vf.__yota_inline__ = inline
    return vf


def _called(f: Callable, compiled: Any) -> tuple[Callable, Any]:
    """The function ``vmap`` calls for ``compiled`` (and the compile, for ``BUILT``'s guards):
    the module's, its result given ``f``'s structure."""
    structure, fn = compiled.forward.structure, compiled.fn

    def call(*args: Any) -> Any:
        out = fn(*args)
        return out if structure is None or structure.plain else rebuild(structure, out)
    call.generated = fn
    return call, compiled


def _run(f: Callable, kept: tuple, args: tuple) -> Any:
    """The kept function (``BUILT``) called on ``args``; where its module refuses them (a
    branch that the batch it was compiled for took the other way), compiled again for them,
    and where that refuses them too, the examples of this batch take different paths."""
    key, guard_args, build = kept
    try:
        return BUILT.get(key, guard_args, build)(*args)
    except ValueError as e:
        if type(e).__name__ != "GuardError":     # (the generated module's own)
            raise
    try:
        return BUILT.rebuild(key, build)(*args)
    except ValueError as e:
        if type(e).__name__ != "GuardError":
            raise
        raise GuardError(f"vmap of {getattr(f, '__name__', f)}: the examples of the batch take "
                         f"different paths through the code ({e})", hint=DIFFERENT_PATHS) from None


@entry_point
def per_example_grad(loss: Callable, params: Any, *batch: Any, norms: bool = False,
                     in_axes: Any = 0, device: str = "cpu", rules: RuleSet = RULES,
                     buffers: bool = True) -> Any:
    """The gradient of ``loss(params, *example)`` for each example of ``batch``, with the
    structure of ``params`` (an array: an array; a dict, list or object: the same, each
    array with the batch first).

    ``batch`` holds the arrays whose ``in_axes`` axis (0: the first) runs over the examples
    (an int per array, or None for one that is the same for every example). With
    ``norms=True`` it returns each example's gradient norm (over every array of ``params``)
    without making the gradients: where a weight's gradient is an outer product of one
    example's activation ``a`` and output gradient ``g`` (a dense layer), its squared norm is
    ``|a|^2 |g|^2`` (the ghost norm of DP-SGD), else the square of the gradient summed.
    Compiled once per signature and found again, guarded like ``ys.grad``'s."""
    args = (params, *batch)
    axes = (None, *batch_axes(loss, in_axes, batch, offset=1))
    key = ("per_example_grad", function_key(loss), rules, rules.version, axes, norms, device,
           buffers, *(arg_key(a) for a in args))

    def build() -> tuple[Callable, Any]:
        compiled = compile_per_example(loss, tuple(host(a) for a in args), axes, norms,
                                       rules=rules, device=device, buffers=buffers)
        return compiled.fn, compiled
    out = _run(loss, (key, args, build), args)
    if norms:
        return out
    grads = out[1]
    if isinstance(grads, dict):           # a structure's {path: gradient}: its shape again
        return update(params, grads, lambda x, g: g, inplace=False)
    return grads


def batch_axes(f: Callable, in_axes: Any, args: tuple, offset: int = 0) -> tuple:
    """``in_axes`` as one axis (or None) per argument, each checked against its argument; a
    structured argument's as ``LeafAxes`` (the axis of each of its arrays)."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not isinstance(in_axes, tuple):
        in_axes = (in_axes,) * len(args)
    if len(in_axes) != len(args):
        raise UsageError(f"vmap of {getattr(f, '__name__', f)}: in_axes={in_axes!r} gives "
                         f"{len(in_axes)} axes for {len(args)} arguments",
                         hint="Give one axis (or None) per argument, or one int for all.")
    axes = []
    for k, (axis, arg) in enumerate(zip(in_axes, args)):
        if axis is None:
            axes.append(None)
        elif _is_array(arg):
            axes.append(_array_axis(f, axis, arg, f"argument {k + offset}"))
        elif isinstance(arg, (int, float, complex, str, bytes, type(None))):
            raise UsageError(f"vmap of {getattr(f, '__name__', f)}: argument {k + offset} is "
                             f"a {type(arg).__name__}, and in_axes batches it along axis {axis}",
                             hint="Batch arrays (np.asarray(...) of a list of examples), and "
                                  "give None in in_axes for arguments that are the same for "
                                  "every example.")
        else:
            leaves = tuple(_leaf_axes(f, axis, arg, (), f"argument {k + offset}"))
            if not leaves:
                raise UsageError(f"vmap of {getattr(f, '__name__', f)}: argument {k + offset} "
                                 f"(a {type(arg).__name__}) holds no array for in_axes to batch",
                                 hint="Give None in in_axes for it.")
            axes.append(LeafAxes(leaves))
    return tuple(axes)


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__")


def _array_axis(f: Callable, axis: Any, arg: Any, where: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise UsageError(f"vmap of {getattr(f, '__name__', f)}: in_axes gives {axis!r} for "
                         f"{where}; an axis is an int or None")
    if not -arg.ndim <= axis < arg.ndim or arg.shape[axis] == 0:
        raise UsageError(f"vmap of {getattr(f, '__name__', f)}: {where} has "
                         f"shape {arg.shape}, with no examples along axis {axis}",
                         hint="in_axes names the axis that runs over the examples.")
    return int(axis) % arg.ndim


def _leaf_axes(f: Callable, axis: Any, arg: Any, path: tuple, where: str):
    """``(path, axis)`` of each array of the structure ``arg`` that ``axis`` batches: one int
    for every array in it, or a structure like ``arg``'s (a dict of its keys or fields, a list
    or tuple of its items) of ints, None and such structures (JAX's in_axes prefix)."""
    if axis is None:
        return
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        for sub, leaf in array_leaves(arg):
            yield path + sub, _array_axis(f, axis, leaf, f"{where}{_shown(path + sub)}")
        return
    if isinstance(axis, dict):
        keys = axis.items()
    elif isinstance(axis, (list, tuple)) and not hasattr(type(axis), "_fields"):
        keys = enumerate(axis)
    else:
        raise UsageError(f"vmap of {getattr(f, '__name__', f)}: in_axes gives {axis!r} for "
                         f"{where}{_shown(path)}; an axis is an int, None, or a dict, list "
                         "or tuple shaped like the argument")
    for key, sub in keys:
        try:
            value = child(arg, key)
        except (KeyError, IndexError, AttributeError, TypeError):
            raise UsageError(f"vmap of {getattr(f, '__name__', f)}: in_axes names "
                             f"{where}{_shown(path + (key,))}, which the argument does not "
                             "have", hint="Shape in_axes like the argument, or give one int "
                                          "for all its arrays.") from None
        if _is_array(value):
            if sub is not None:
                yield path + (key,), _array_axis(f, sub, value, f"{where}{_shown(path + (key,))}")
        else:
            yield from _leaf_axes(f, sub, value, path + (key,), where)


def _shown(path: tuple) -> str:
    return "".join(f"[{key!r}]" for key in path)
