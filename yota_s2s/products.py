"""Vector products: ``vjp``, ``jvp`` and ``jvpfunction``, and ``linearize``.

``vjp(f, *args)`` compiles the gradient of ``sum(f(*args) * cotangent)`` (of each leaf with its
cotangent, for a structured result); ``jvpfunction`` the forward-mode module, which ``jvp``
finds again per signature; ``linearize`` the forward-mode module cut in two (ad/linearize.py),
the forward run once and a tangent map called per tangent. Every one takes ``has_aux=True``
(``f`` returns ``(out, aux)``) and results that are tuples, lists, dicts, namedtuples and
dataclasses of arrays (ir/structure.py), returned with their structure.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .api import _host, _user_function, simplegrad_compiled
from .cache import BUILT, arg_key, function_key
from .errors import UsageError, YotaError
from .ir.structure import Structure, flatten, nested, of_value, path_text, paths, rebuild
from .marks import entry_point
from .nested import vjp_inline
from .objects import param_names, unbind
from .rules.registry import RULES, RuleSet
from .text import describe
from .wrt import wrt_positions


def compile_jvp(f: Callable, args: tuple, tangents: tuple | None, **options: Any) -> Any:
    """``compiler.compile_jvp``: a forward-mode module for ``f`` on ``args``, the compile
    machinery imported on the first compile (as api.py's ``compile_grad``; a test may replace
    this name to count compiles)."""
    from .compiler import compile_jvp
    return compile_jvp(f, args, tangents, **options)


@entry_point
def vjp(f: Callable, *args: Any, device: str = "cpu", out_dir: str | Path | None = None,
        module_name: str | None = None, rules: RuleSet = RULES,
        buffers: bool = True, has_aux: bool = False, wrt: Any = None) -> Callable:
    """Vector-Jacobian products of ``f``, whose result is a float array like ``f(*args)``.

    Returns ``vf`` with ``vf(*args, cotangent) == (f(*args), c0, c1, ...)``, where ``ci`` is
    the gradient of ``sum(f(*args) * cotangent)`` with respect to argument ``i`` (None where
    there is none); ``cotangent`` has the shape and dtype of ``f``'s result. The code is one
    generated module, compiled once for arguments like ``args`` (``f`` is called once here to
    learn its result's shape): the gradient of ``np.sum(f(*args) * cotangent)``, whose
    gradient with respect to ``cotangent`` is ``f``'s value. ``buffers=False`` writes the plain
    form. ``ys.source(vf)`` shows it.

    A result with structure (a tuple, list, dict, namedtuple or dataclass of float arrays)
    takes a cotangent of that structure and its value comes back with it; ``has_aux=True``:
    ``f`` returns ``(out, aux)``, the cotangent is like ``out``, and ``vf(*args, cotangent) ==
    ((out, aux), c0, c1, ...)``. ``wrt`` limits the gradients computed, as in ``grad`` (a
    position, a parameter name, or a list, tuple or set of them); the others come back as None,
    and an argument left out needs no derivative rule.
    """
    return vjp_compiled(f, args, device=device, out_dir=out_dir, module_name=module_name,
                        rules=rules, buffers=buffers, has_aux=has_aux, wrt=wrt)[0]


def vjp_compiled(f: Callable, args: tuple, has_aux: bool = False, wrt: Any = None,
                 **options: Any) -> tuple[Callable, Any]:
    """``vjp``'s function and the ``Compiled`` it comes from."""
    structure, cotangents = example_cotangents(f, args, has_aux)
    options["wrt"] = _objective_wrt(f, args, wrt, len(cotangents))
    if structure.kind != "leaf" or has_aux:
        return _structured_vjp(f, args, structure, cotangents, has_aux, **options)
    cotangent, = cotangents
    objective = _vjp_objective(f)
    names = param_names(unbind(f)[0], len(args)) if not unbind(f)[1] else ()
    if len(names) == len(args):
        last = "cotangent"
        while last in names:
            last += "_"
        objective.__yota_params__ = (*names, last)
    name = f"{getattr(f, '__name__', '')}_vjp"
    if name.isidentifier():
        objective.__yota_name__ = name
    df, compiled = simplegrad_compiled(objective, (*args, cotangent), **options)

    @functools.wraps(df)
    def vf(*args_and_cotangent: Any) -> tuple:
        value, *grads = df(*args_and_cotangent)
        return (grads[-1], *grads[:-1])
    del vf.__wrapped__                  # the frontend must not trace df in place of vf
    vf.__yota_gradient__ = True
    vf.__yota_inline__ = vjp_inline(df)
    return vf, compiled


def _objective_wrt(f: Callable, args: tuple, wrt: Any, count: int) -> tuple[int, ...] | None:
    """The positions the objective ``(*args, *cotangents)`` is differentiated in for ``vjp``'s
    ``wrt``: those it asks for among ``args``, and every cotangent (whose gradient is the
    value); None (every one) for ``wrt=None``."""
    fn, bound = unbind(f)
    positions = wrt_positions(fn, args if bound is None else (bound, *args), wrt,
                              offset=int(bound is not None))
    if positions is None:
        return None
    offset = int(bound is not None)      # (the object of a bound method is not an argument)
    return (*(p - offset for p in positions if p >= offset),
            *range(len(args), len(args) + count))


def _vjp_objective(f: Callable) -> Callable:
    def vjp(*args):
        value = f(*args[:-1])
        return np.sum(value * args[-1])
    return vjp


def _structured_vjp(f: Callable, args: tuple, structure: Structure, cotangents: list,
                    has_aux: bool, **options: Any) -> tuple[Callable, Any]:
    """``vjp`` of an ``f`` whose result has structure, or comes with aux: the gradient of
    ``sum(np.sum(leaf * c) for each leaf of the result and its cotangent c)``, whose gradient
    with respect to each ``c`` is that leaf's value; ``vf`` takes the cotangent with the
    result's structure and returns the value with it."""
    objective = _leaves_objective(f, len(args), paths(structure), has_aux)
    count = len(cotangents)
    names = param_names(unbind(f)[0], len(args)) if not unbind(f)[1] else ()
    if len(names) == len(args):
        last = ["cotangent" if count == 1 else f"cotangent{i}" for i in range(count)]
        while any(n in names for n in last):
            last = [n + "_" for n in last]
        objective.__yota_params__ = (*names, *last)
    name = f"{getattr(f, '__name__', '')}_vjp"
    if name.isidentifier():
        objective.__yota_name__ = name
    df, compiled = simplegrad_compiled(objective, (*args, *cotangents), has_aux=has_aux,
                                       **options)

    @functools.wraps(df)
    def vf(*args_and_cotangent: Any) -> tuple:
        *args, cotangent = args_and_cotangent
        try:
            leaves = flatten(cotangent, structure, "the cotangent")
        except ValueError as e:
            raise UsageError(f"{name}: {e}", hint="Pass a cotangent with the structure of "
                             f"{getattr(f, '__name__', 'f')}'s result.") from None
        value, *grads = df(*args, *map(tangent_like, cotangents, leaves))
        out = rebuild(structure, nested(structure, grads[len(grads) - count:]))
        if has_aux:
            out = (out, value[1])           # (df rebuilt it: simplegrad_compiled)
        return (out, *grads[:len(grads) - count])
    del vf.__wrapped__                  # the frontend must not trace df in place of vf
    vf.__yota_gradient__ = True
    return vf, compiled


def _leaves_objective(f: Callable, n: int, leaf_paths: list, has_aux: bool) -> Callable:
    def vjp(*args):
        value = f(*args[:n])
        if has_aux:
            value, aux = value
        total = 0.0
        for path, cotangent in zip(leaf_paths, args[n:]):
            total = total + np.sum(_leaf_at(value, path) * cotangent)
        if has_aux:
            return total, aux
        return total
    return vjp


def _leaf_at(value: Any, path: tuple) -> Any:
    """The leaf of ``value`` at ``path`` (``ir.structure.paths``); traced in ``ys.vjp``'s
    objective, so written here (the frontend inlines this module's functions)."""
    for kind, key in path:
        value = getattr(value, key) if kind == "attr" else value[key]
    return value


def example_cotangents(f: Callable, args: tuple, has_aux: bool = False
                        ) -> tuple[Structure, list]:
    """The structure of ``f``'s result (with ``has_aux``: of its first item), and a cotangent
    for each of its leaves: ones of its shape and dtype, 1.0 for a Python float."""
    out = f(*args)
    fname = getattr(f, "__name__", f)
    if has_aux:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise YotaError(f"{fname} returns {type(out).__name__}; with has_aux=True it "
                            "returns a pair (out, aux)",
                            hint="Return out, aux, or drop has_aux=True.")
        out = out[0]
    structure = of_value(out)
    cotangents = []
    for path, leaf in zip(paths(structure), flatten(out, structure)):
        where = f"{fname}(...){path_text(path)} is" if path else f"{fname} returns"
        if type(leaf) is float:
            cotangents.append(1.0)
            continue
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")) or leaf.dtype.kind != "f":
            raise YotaError(f"{where} {type(leaf).__name__}"
                            f"{' of ' + str(leaf.dtype) if hasattr(leaf, 'dtype') else ''}; "
                            "vector-Jacobian products need real float arrays or floats",
                            hint="Return float arrays (alone or in a tuple, dict or dataclass; "
                                 "return other values beside them with has_aux=True), or use "
                                 "ys.grad for a scalar result.")
        cotangents.append(np.ones(np.shape(leaf), leaf.dtype))
    return structure, cotangents


def has_tangent(value: Any) -> bool:
    """A float or complex array or number, or a tuple, list or dict holding one (ints,
    strings, None and other static values have no tangent)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "fc"
    if isinstance(value, (tuple, list)):
        return any(map(has_tangent, value))
    if isinstance(value, dict):
        return any(map(has_tangent, value.values()))
    return isinstance(value, (float, complex))


@entry_point
def jvpfunction(f: Callable, *args: Any, tangents: tuple | None = None, device: str = "cpu",
                out_dir: str | Path | None = None, module_name: str | None = None,
                rules: RuleSet = RULES, buffers: bool = True, has_aux: bool = False,
                engine: str = "numpy") -> Callable:
    """Compile forward mode for ``f`` on arguments like ``args``: returns ``jf`` with
    ``jf(*args, *tangents) == (f(*args), J @ tangents)``, one tangent per float argument (in
    order; ints and static arguments have none), in a generated module (``ys.source(jf)``)
    whose ``# -- tangent --`` section computes ``dot_h`` for each ``h``. ``tangents``: example
    tangents to trace with (ones by default; only their shapes matter). A result with structure
    (a tuple, list, dict, namedtuple or dataclass of arrays) has a tangent of that structure
    (None for its ints, bools and strings); ``has_aux=True``: ``f`` returns ``(out, aux)`` and
    ``jf(*args, *tangents) == ((out, aux), J @ tangents)``, the tangent of ``out`` only.
    ``engine``: as in ``simplegrad`` (forward mode unrolls loops, so numba has none to run)."""
    return jvpfunction_compiled(f, args, tangents, device=device, out_dir=out_dir,
                                module_name=module_name, rules=rules, buffers=buffers,
                                has_aux=has_aux, engine=engine)[0]


def jvpfunction_compiled(f: Callable, args: tuple, tangents: tuple | None = None,
                         has_aux: bool = False, **options: Any) -> tuple[Callable, Any]:
    """``jvpfunction``'s function and the ``Compiled`` it comes from."""
    compiled = compile_jvp(f, _host(args), tangents, has_aux=has_aux, **options)
    fn = _user_function(compiled, f)
    structure = compiled.forward.structure
    if structure is None or structure.plain:
        return fn, compiled
    out = structure.children[0] if has_aux else structure

    @functools.wraps(fn)
    def structured(*args: Any) -> tuple:
        value, tangent = fn(*args)
        return rebuild(structure, value), rebuild(out, tangent)
    return structured, compiled


@entry_point
def jvp(f: Callable, primals: tuple, tangents: tuple, *, rules: RuleSet = RULES,
        has_aux: bool = False, engine: str = "numpy") -> tuple:
    """JAX's ``jvp``: ``(f(*primals), J @ tangents)``, the tangent of ``f``'s result along
    ``tangents`` (one per primal, like it; None for ints and static arguments; a tuple, list
    or dict has one of its structure). Compiled once per function and argument signature
    (``jvpfunction``) and found again after that, while its guards hold (the keys and lengths
    of structured arguments, the globals it read: as ``ys.grad``'s). A
    structured result (a tuple, dict, dataclass of arrays) has a tangent of its structure;
    ``has_aux=True``: ``f`` returns ``(out, aux)`` and ``jvp`` returns ``(out, J @ tangents,
    aux)``, as JAX's. ``engine``: as in ``jvpfunction``."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise YotaError(f"jvp: {len(primals)} primals but {len(tangents)} tangents",
                        hint="Give one tangent per primal (None for an int or static one).")
    key = ("jvp", function_key(f), rules, rules.version, has_aux, engine,
           *(arg_key(a) for a in primals))
    jf = BUILT.get(key, primals, lambda: jvpfunction_compiled(f, primals, rules=rules,
                                                              has_aux=has_aux, engine=engine))
    value, tangent = jf(*primals, *[tangent_like(p, t) for p, t in zip(primals, tangents)
                                    if has_tangent(p)])
    return (value[0], tangent, value[1]) if has_aux else (value, tangent)


@entry_point
def linearize(f: Callable, *primals: Any, has_aux: bool = False, device: str = "cpu",
              rules: RuleSet = RULES, buffers: bool = True) -> tuple:
    """JAX's ``linearize``: ``(f(*primals), f_jvp)``, where ``f_jvp(*tangents) == J @
    tangents`` (one tangent per primal, like it; None for ints and static arguments) is a
    generated tangent map that reads what it needs of the forward from values saved when
    ``linearize`` ran: it does not compute ``f`` again (ad/linearize.py), so many tangents at
    one point cost less than as many ``ys.jvp`` calls. ``has_aux=True``: ``f`` returns ``(out,
    aux)`` and ``linearize`` returns ``(out, f_jvp, aux)``. The two modules are compiled once
    per function and argument signature; ``ys.source(f_jvp)`` shows the tangent map's."""
    key = ("linearize", has_aux, buffers, device, function_key(f), rules, rules.version,
           *(arg_key(a) for a in primals))
    forward, tangent_map, structure = BUILT.get(
        key, primals, lambda: _linearized(f, primals, has_aux, device, rules, buffers))
    value, residuals = forward(*primals)
    if structure is not None and not structure.plain:
        value = rebuild(structure, value)
    out = structure.children[0] if has_aux and structure is not None else structure
    slots = [(k, p) for k, p in enumerate(primals) if has_tangent(p)]

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise UsageError(f"{f_jvp.__name__}: {len(primals)} primals but {len(tangents)} "
                             "tangents",
                             hint="Give one tangent per primal (None for an int or static one).")
        tangent = tangent_map(*residuals, *[tangent_like(p, tangents[k]) for k, p in slots])
        return tangent if out is None or out.plain else rebuild(out, tangent)
    functools.update_wrapper(f_jvp, tangent_map, updated=())
    del f_jvp.__wrapped__
    return (value[0], f_jvp, value[1]) if has_aux else (value, f_jvp)


def _linearized(f: Callable, primals: tuple, has_aux: bool, device: str, rules: RuleSet,
                buffers: bool) -> tuple[tuple, Any]:
    """``linearize``'s forward and tangent map for arguments like ``primals``, with the
    structure of ``f``'s result, and the compile whose guards decide when they apply."""
    from .compiler import compile_linearize
    halves = compile_linearize(f, _host(primals), rules=rules, device=device, buffers=buffers,
                               has_aux=has_aux)
    if halves is None:      # (the tangents write into the forward's values) each call a jvp
        jf, compiled = jvpfunction_compiled(f, primals, rules=rules, device=device,
                                            buffers=buffers, has_aux=has_aux)

        def forward(*args: Any) -> tuple:
            return jf(*args, *[tangent_like(a, None) for a in args if has_tangent(a)])[0], args

        def tangent_map(*args_and_tangents: Any) -> Any:
            return jf(*args_and_tangents)[1]
        return (forward, tangent_map, None), compiled
    forward, tangent = halves
    return (_user_function(forward, f), tangent.fn, forward.forward.structure), forward


def tangent_like(primal: Any, tangent: Any) -> Any:
    """A tangent as the generated code checks it: of its primal's kind, shape and dtype; of a
    tuple, list or dict, one of its structure, leaf by leaf (None: zeros, for each leaf with a
    tangent; a leaf without one, an int or a string, has None)."""
    if type(tangent) is np.ndarray and type(primal) is np.ndarray \
            and tangent.dtype == primal.dtype and primal.dtype.kind in "fc":
        return tangent          # (what np.asarray returns: the common case, tested first)
    if isinstance(primal, (tuple, list, dict)):
        return _structured_tangent(primal, tangent)
    if not has_tangent(primal):
        return None
    if tangent is None:
        tangent = np.zeros_like(primal)
    if isinstance(primal, np.ndarray):
        return np.asarray(tangent, primal.dtype)
    if isinstance(primal, np.generic):
        return primal.dtype.type(np.reshape(tangent, ()))
    return type(primal)(np.reshape(tangent, ()))


def _structured_tangent(primal: Any, tangent: Any) -> Any:
    """``tangent_like`` of each item of a tuple, list or dict (a namedtuple stays one)."""
    keys = list(primal) if isinstance(primal, dict) else range(len(primal))
    if tangent is not None and (set(tangent) != set(keys) if isinstance(primal, dict)
                                else len(tangent) != len(primal)):
        raise UsageError(f"a tangent {_layout(tangent)} for an argument {_layout(primal)}",
                         hint="Give the tangent of a structured argument its structure (None "
                         "for zeros, or for a leaf without a tangent: an int, a string).")
    items = [tangent_like(primal[k], None if tangent is None else tangent[k]) for k in keys]
    if isinstance(primal, dict):
        return dict(zip(keys, items))
    if isinstance(primal, list):
        return items
    return type(primal)(*items) if hasattr(type(primal), "_fields") else tuple(items)


def _layout(value: Any) -> str:
    """``a list of 3 items``, ``a dict with keys 'a', 'b'``: a container's layout, for errors."""
    if isinstance(value, dict):
        return f"a dict with keys {', '.join(map(describe, value)) or 'none'}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"of type {type(value).__name__}"
