"""Higher order and dense derivatives built on the entry points: Hessian-vector products,
dense Hessians, and Jacobians.

``hvp(f, *args)``: ``H v`` is the gradient of ``x -> <grad f(x), v>`` ("rev-rev", reverse
over reverse: one generated module whose forward section is the first gradient and whose
backward section differentiates it; the frontend inlines the plain first gradient, nested.py),
or the forward-mode derivative of the gradient in direction ``v`` ("fwd-rev", with
``ys.jvpfunction``). Where the first gradient holds a ``while`` on a traced condition, both
take the gradient tape's JVP instead (forward over reverse on the tape, ``_over_reverse``: one
module for every trip count, where a traced module unrolls the loop on the example).
``hessian(f, *args)`` is one ``hvp`` per unit vector, ``jacobian`` one
vector-Jacobian product per element of the result (or one Jacobian-vector product per element
of the argument): dense, for small inputs.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .api import _user_function, simplegrad, simplegrad_compiled
from .cache import BUILT, arg_key, function_key
from .errors import YotaError
from .gradcheck import differentiable
from .ir.region import body_tapes
from .ir.structure import Structure, flatten, nested, of_value, rebuild
from .ir.tape import Tape
from .ir.whiles import while_of
from .marks import entry_point
from .nested import jacobian_inline, position_inline
from .products import (example_cotangents, vjp, has_tangent, jvpfunction, jvpfunction_compiled,
                       tangent_like, vjp_compiled)
from .objects import param_names, unbind
from .rules.registry import RULES, RuleSet
from .rules.stop import stop_gradient
from .wrt import one_position

STRATEGIES = ("rev-rev", "fwd-rev")
HESSIAN_LIMIT = 4096        # elements of x: a dense Hessian beyond this is an hvp's job


@entry_point
def hvp(f: Callable, *args: Any, argnum: int = 0, strategy: str = "rev-rev",
        device: str = "cpu", out_dir: str | Path | None = None, module_name: str | None = None,
        rules: RuleSet = RULES, buffers: bool = True) -> Callable:
    """Hessian-vector products of a scalar ``f`` with respect to argument ``argnum``.

    Returns ``hf`` with ``hf(*args, v) == H @ v``, ``H`` the Hessian of ``f`` in argument
    ``argnum`` at ``args`` and ``v`` an array like that argument; the result has its shape.
    ``hf`` is a generated module's function (``ys.source(hf)`` shows it), compiled once for
    arguments like ``args``. ``strategy``: ``"rev-rev"`` differentiates ``<grad f, v>`` in
    reverse mode (one module: the first gradient, then its backward section); ``"fwd-rev"``
    pushes ``v`` forward through the gradient (``ys.jvpfunction`` of the plain gradient).
    ``"rev-rev"`` is the default: on the bench's MLP, RNN and logistic regression it is as fast
    as ``"fwd-rev"`` or faster (``tools/hvp_bench.py``), and it needs no forward rules.
    """
    if strategy not in STRATEGIES:
        raise YotaError(f"hvp: strategy={strategy!r} is not one of {', '.join(STRATEGIES)}",
                        hint='Use strategy="rev-rev" (reverse over reverse) or "fwd-rev".')
    from .frontend import check_arguments       # (the compile machinery: on first use)
    fn, bound = unbind(f)
    name = getattr(fn, "__name__", "f")
    check_arguments(fn, args if bound is None else (bound, *args),
                    hint=f"ys.hvp(f, *args) takes {name}'s arguments only; the vector goes to "
                         f"the function it returns: hf = ys.hvp({name}, x); hf(x, v).")
    argnum, x = _float_argument("hvp", f, args, argnum)
    return _hvp(f, args, argnum, x, strategy, device, out_dir, module_name, rules, buffers)[0]


def _hvp(f: Callable, args: tuple, argnum: int, x: Any, strategy: str, device: str,
         out_dir: str | Path | None, module_name: str | None, rules: RuleSet,
         buffers: bool) -> tuple[Callable, Any]:
    """``hvp``'s function, and the ``Compiled`` of ``f``'s first gradient (the compile that
    traced ``f``: its guards say when the function still applies)."""
    fn, bound = unbind(f)
    name = getattr(fn, "__name__", "f")
    # the first gradient, traced again by the frontend: its plain form, numpy
    df, first = simplegrad_compiled(f, args, buffers=False, wrt={argnum}, rules=rules)
    names = param_names(fn, len(args)) if bound is None else ()
    if _holds_while(first.tape):
        return _over_reverse(f, args, argnum, device, out_dir, module_name, rules,
                             buffers), first
    if strategy == "fwd-rev":
        return _fwd_rev(df, args, argnum, name, names, device, rules), first
    directional = _directional(df, argnum)
    if len(names) == len(args):
        v = "v"
        while v in names:
            v += "_"
        directional.__yota_params__ = (*names, v)
    if f"{name}_hvp".isidentifier():
        directional.__yota_name__ = f"{name}_hvp"
    hf = simplegrad(directional, *args, np.zeros_like(x), wrt={argnum}, rules=rules,
                    device=device, out_dir=out_dir, module_name=module_name, buffers=buffers)

    @functools.wraps(hf)
    def hessian_vector(*args_and_v: Any) -> Any:
        return hf(*args_and_v)[1 + argnum]
    del hessian_vector.__wrapped__         # the frontend must not trace hf in place of it
    hessian_vector.__yota_gradient__ = True
    hessian_vector.__yota_inline__ = position_inline(hf, argnum)
    hessian_vector.strategy = strategy
    return hessian_vector, first


def compile_hvp(f: Callable, args: tuple, argnum: int, **options: Any) -> Any:
    """``compiler.compile_hvp``, imported on first use (``import yota_s2s`` stays light)."""
    from .compiler import compile_hvp
    return compile_hvp(f, args, argnum, **options)


def _holds_while(tape: Tape) -> bool:
    """The tape holds a ``while`` on a traced condition (ir/whiles.py), in a loop body too."""
    return any(while_of(s) is not None for t in (tape, *body_tapes(tape)) for s in t.stmts)


def _over_reverse(f: Callable, args: tuple, argnum: int, device: str,
                  out_dir: str | Path | None, module_name: str | None, rules: RuleSet,
                  buffers: bool) -> Callable:
    """``H v`` as the JVP of the gradient's tape (compiler.hvp_tape), for a function whose
    gradient holds a ``while``: either strategy's road traces the gradient module again,
    where its recording loop is unrolled on the example, one module per trip count; the
    tape's JVP keeps the ``while`` and the unwind, one module for every trip count."""
    fn, bound = unbind(f)
    compiled = compile_hvp(f, args, argnum + (bound is not None), rules=rules, device=device,
                           out_dir=out_dir, module_name=module_name, buffers=buffers)
    hf = _user_function(compiled, f)

    @functools.wraps(hf)
    def hessian_vector(*args_and_v: Any) -> Any:
        return hf(*args_and_v)[1]
    del hessian_vector.__wrapped__
    hessian_vector.__yota_gradient__ = True
    hessian_vector.strategy = "fwd-rev"
    return hessian_vector


def _cached_hvp(f: Callable, args: tuple, argnum: int, x: Any, strategy: str,
                rules: RuleSet, again: bool = False) -> Callable:
    """``hvp(f, *args, argnum=argnum)``, compiled once per function and argument signature
    and found again (``cache.BUILT``, guarded like ``ys.grad``'s variants); ``again``:
    compiled again for ``args`` (the module kept refused them)."""
    key = ("hvp", strategy, argnum, function_key(f), rules, rules.version,
           *(arg_key(a) for a in args))
    _, bound = unbind(f)

    def build() -> tuple[Callable, Any]:
        return _hvp(f, args, argnum, x, strategy, "cpu", None, None, rules, True)
    if again:
        return BUILT.rebuild(key, build)
    return BUILT.get(key, args if bound is None else (bound, *args), build)


def _cached_hvp_call(f: Callable, args: tuple, argnum: int, x: Any, strategy: str,
                     rules: RuleSet, v: Any) -> Any:
    """``H v`` by ``_cached_hvp``'s function; where its module refuses ``args`` (its own
    ``GuardError``: the first gradient, traced again, decided something on the example),
    compiled again for them."""
    try:
        return _cached_hvp(f, args, argnum, x, strategy, rules)(*args, v)
    except ValueError as e:
        if type(e).__name__ != "GuardError":     # (the generated module's own)
            raise
    return _cached_hvp(f, args, argnum, x, strategy, rules, again=True)(*args, v)


def hessp(f: Callable, *, strategy: str = "rev-rev", rules: RuleSet = RULES) -> Callable:
    """scipy.optimize's ``hessp=``: ``hp(x, p, *args) == H(x) @ p``, ``H`` the Hessian of a
    scalar ``f(x, *args)`` in its first argument, in the order scipy calls it
    (``minimize(f, x0, args=args, jac=ys.gradient(f), hessp=ys.hessp(f),
    method="trust-ncg")``). Each call goes through a cache like ``grad``'s: the
    Hessian-vector product is compiled for the first signature and found again after that."""
    if strategy not in STRATEGIES:
        raise YotaError(f"hessp: strategy={strategy!r} is not one of {', '.join(STRATEGIES)}",
                        hint='Use strategy="rev-rev" (reverse over reverse) or "fwd-rev".')

    def hp(x: Any, p: Any, *args: Any) -> Any:
        full = (x, *args)
        _, x = _float_argument("hessp", f, full, 0)
        return _cached_hvp_call(f, full, 0, x, strategy, rules,
                                np.asarray(p, dtype=np.result_type(x)).reshape(np.shape(x)))
    hp.__name__ = hp.__qualname__ = f"hessp_{getattr(f, '__name__', 'f')}"
    hp.__doc__ = f"H(x) @ p for {getattr(f, '__name__', 'f')} (ys.hessp)"
    return hp


def _directional(df: Callable, argnum: int) -> Callable:
    """``<grad f(*args), v>`` as a function of ``(*args, v)``: its gradient is ``H v``."""
    def hvp(*args):
        grads = df(*args[:-1])
        return np.sum(grads[1 + argnum] * args[-1])
    return hvp


def _fwd_rev(df: Callable, args: tuple, argnum: int, name: str, params: tuple, device: str,
             rules: RuleSet) -> Callable:
    """``H v`` as the forward-mode derivative of the plain gradient along ``v``
    (``ys.jvpfunction`` of ``grad_argnum f``, the other arguments held constant)."""
    gradient = _held_gradient(df, argnum, tuple(i for i, a in enumerate(args)
                                                if i != argnum and differentiable(a)))
    gradient.__yota_name__ = f"{name}_hvp" if f"{name}_hvp".isidentifier() else "hvp"
    if params:
        gradient.__yota_params__ = params
    jf = jvpfunction(gradient, *args, rules=rules, device=device)
    floats = [i for i, a in enumerate(args) if differentiable(a)]

    def hessian_vector(*args_and_v: Any) -> Any:
        *primals, v = args_and_v
        tangents = [v if i == argnum else _zero_like(primals[i]) for i in floats]
        return jf(*primals, *tangents)[1]
    hessian_vector.__name__ = hessian_vector.__qualname__ = f"{name}_hvp"
    hessian_vector.__module__ = getattr(jf, "__module__", __name__)     # ys.source shows it
    hessian_vector.__yota_gradient__ = True
    hessian_vector.strategy = "fwd-rev"
    return hessian_vector


def _zero_like(a: Any) -> Any:
    """A zero tangent of ``a``'s kind: a Python float, a numpy scalar or an array."""
    if isinstance(a, float):
        return 0.0
    return a.dtype.type(0) if isinstance(a, np.generic) else np.zeros_like(a)


def _held_gradient(df: Callable, argnum: int, held: tuple) -> Callable:
    """``grad_argnum f(*args)`` with the arguments at ``held`` behind ``stop_gradient``: no
    tangent flows from them (theirs are zeros)."""
    def gradient(*args):
        args = list(args)
        for i in held:
            args[i] = stop_gradient(args[i])
        return df(*args)[1 + argnum]
    return gradient


@entry_point
def hessian(f: Callable, *args: Any, argnum: int = 0, rules: RuleSet = RULES,
            strategy: str = "rev-rev") -> np.ndarray:
    """The dense Hessian of a scalar ``f`` in argument ``argnum`` at ``args``, of shape
    ``x.shape + x.shape``: one Hessian-vector product (``hvp``) per element of ``x``, so
    meant for small ``x`` (at most ``HESSIAN_LIMIT`` elements). The Hessian-vector product
    is compiled once per function and argument signature and found again after that (as
    ``ys.grad``'s gradients are): scipy's ``hess=lambda x, *a: ys.hessian(f, x, *a)``."""
    argnum, x = _float_argument("hessian", f, args, argnum)
    size = int(np.size(x))
    if size > HESSIAN_LIMIT:
        raise YotaError(f"hessian: argument {argnum} has {size} elements; a dense Hessian of "
                        f"it has {size * size} and takes {size} Hessian-vector products",
                        hint="Use ys.hvp(f, *args) for products with the Hessian, or pass a "
                             f"smaller argument (at most {HESSIAN_LIMIT} elements).")
    if strategy not in STRATEGIES:
        raise YotaError(f"hessian: strategy={strategy!r} is not one of {', '.join(STRATEGIES)}",
                        hint='Use strategy="rev-rev" (reverse over reverse) or "fwd-rev".')
    rows = []
    for i in range(size):
        v = np.zeros(np.shape(x), np.result_type(x))
        v.flat[i] = 1
        rows.append(np.reshape(_cached_hvp_call(f, args, argnum, x, strategy, rules, v), -1))
    return np.reshape(np.array(rows).T, np.shape(x) + np.shape(x))


def _float_argument(what: str, f: Callable, args: tuple, argnum: Any) -> tuple[int, Any]:
    """``(position, argument)`` of the float argument ``argnum`` names (a position or name)."""
    position = one_position(f, args, argnum, what)
    x = args[position]
    if not (isinstance(x, (np.ndarray, np.floating, float)) and np.result_type(x).kind == "f"):
        raise YotaError(f"{what}: argument {argnum!r} of {getattr(f, '__name__', f)} is not a "
                        "real float array or float",
                        hint="Give argnum= the position of a float array argument.")
    return position, x


@entry_point
def jacobian(f: Callable, *args: Any, argnum: int = 0, mode: str = "rev",
             rules: RuleSet = RULES, buffers: bool = True) -> np.ndarray:
    """The Jacobian of ``f`` at ``args`` with respect to array argument ``argnum``, of shape
    ``f(*args).shape + args[argnum].shape``. ``mode="rev"``: one vector-Jacobian product per
    element of the result (rows of the generated ``vjp`` function), for small results;
    ``mode="fwd"``: one Jacobian-vector product per element of the argument (columns of the
    generated ``jvp`` function), for small arguments. A result with structure (a tuple, list,
    dict, namedtuple or dataclass of float arrays) gives the same structure of Jacobians, one
    per array: ``jacobian(f, x)["loss"]`` of shape ``f(x)["loss"].shape + x.shape``."""
    k = one_position(f, args, argnum, "jacobian")
    x = args[k]
    if not isinstance(x, (np.ndarray, float, np.floating)):
        raise YotaError(f"jacobian: argument {argnum!r} of {getattr(f, '__name__', f)} is not "
                        "a float array", hint="Give argnum= the position of an array argument.")
    if mode not in ("fwd", "rev"):
        raise YotaError(f"jacobian: mode={mode!r}", hint='Use mode="fwd" or mode="rev".')
    out = f(*args)
    key = ("jacobian", mode, k, buffers, function_key(f), rules, rules.version,
           *(arg_key(a) for a in args))
    structure = of_value(out)
    if structure.kind != "leaf":
        return _structured_jacobian(f, args, k, x, mode, structure, key, rules, buffers)
    if mode == "fwd":
        jf = BUILT.get(key, args,
                       lambda: jvpfunction_compiled(f, args, rules=rules, buffers=buffers))
        zeros = [tangent_like(a, None) if has_tangent(a) else None for a in args]
        columns = []
        for i in range(np.size(x)):
            tangent = np.zeros(np.shape(x), np.result_type(x))
            tangent.flat[i] = 1
            tangents = [*zeros[:k], tangent_like(x, tangent), *zeros[k + 1:]]
            columns.append(np.asarray(jf(*args, *[t for t in tangents if t is not None])[1]))
        return np.reshape(np.stack(columns, axis=-1) if columns else
                          np.zeros(np.shape(out) + (0,)), np.shape(out) + np.shape(x))
    cotangent = np.zeros(np.shape(out), np.result_type(out))
    vf = BUILT.get(key, (*args, cotangent),
                   lambda: vjp_compiled(f, args, rules=rules, buffers=buffers))
    rows = []
    for i in range(out.size):
        cotangent = np.zeros(out.shape, out.dtype)
        cotangent.flat[i] = 1
        rows.append(vf(*args, cotangent)[1 + k])
    return np.reshape(np.array(rows), out.shape + np.shape(x))


def _structured_jacobian(f: Callable, args: tuple, k: int, x: Any, mode: str,
                         structure: Structure, key: tuple, rules: RuleSet, buffers: bool) -> Any:
    """``jacobian`` of a result with structure: the Jacobian of each leaf, in that structure
    (rows of the structured ``vjp``, one leaf's element at a time, or columns of the ``jvp``,
    whose tangent has the structure)."""
    leaves = flatten(f(*args), structure)
    shapes = [np.shape(leaf) for leaf in leaves]
    if mode == "fwd":
        jf = BUILT.get(key, args,
                       lambda: jvpfunction_compiled(f, args, rules=rules, buffers=buffers))
        zeros = [tangent_like(a, None) if has_tangent(a) else None for a in args]
        columns: list[list] = [[] for _ in leaves]
        for i in range(np.size(x)):
            tangent = np.zeros(np.shape(x), np.result_type(x))
            tangent.flat[i] = 1
            tangents = [*zeros[:k], tangent_like(x, tangent), *zeros[k + 1:]]
            dout = jf(*args, *[t for t in tangents if t is not None])[1]
            for column, t in zip(columns, flatten(dout, structure)):
                column.append(np.reshape(t, -1))
        jacobians = [np.reshape(np.stack(c, axis=-1) if c else np.zeros((int(np.prod(s)), 0)),
                                s + np.shape(x)) for c, s in zip(columns, shapes)]
        return rebuild(structure, nested(structure, jacobians))
    zeros = [np.zeros(s, np.result_type(leaf)) for s, leaf in zip(shapes, leaves)]
    vf = BUILT.get(key, (*args, *example_cotangents(f, args)[1]),
                   lambda: vjp_compiled(f, args, rules=rules, buffers=buffers))
    jacobians = []
    for j, s in enumerate(shapes):
        rows = []
        for i in range(int(np.prod(s))):
            cotangent = [z.copy() for z in zeros]
            cotangent[j].flat[i] = 1
            rows.append(np.reshape(vf(*args, rebuild(structure, nested(structure, cotangent)))
                                   [1 + k], -1))
        jacobians.append(np.reshape(np.array(rows) if rows else np.zeros((0, np.size(x))),
                                    s + np.shape(x)))
    return rebuild(structure, nested(structure, jacobians))


# called in a function being differentiated, the Jacobian is inlined: rows of f's VJP function
jacobian.__yota_inline__ = jacobian_inline(lambda f, *args: vjp(f, *args, buffers=False))
