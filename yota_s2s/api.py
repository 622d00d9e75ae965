"""The public entry points: ``simplegrad``, ``grad``, ``update``, ``trace``, ``source``
(the vector products, ``vjp``, ``jvp`` and ``linearize``, are in products.py).

``simplegrad(f, *args)`` compiles once for the example arguments and returns a plain function
from an importable generated module: ``val, *grads = df(*args)``. ``grad(f, *args)`` compiles on
first use and then finds the compiled code again in the per-signature cache (``cache.py``):
``val, g = grad(loss, m, X)``, ``g[0]`` a ``{path: gradient}`` dict for the struct ``m``.
``update(m, g[0], fn)`` applies ``fn(x, gx)`` to those fields in place. ``trace(f, *args)``
returns the value and the SSA tape (``tape.play(*args)`` evaluates it), ``compile(f, *args)``
a forward-only generated module's function; ``source(df)`` gives the generated module's text.
``@example(make_args)`` marks a function for ``yota-s2s compile`` (see ``cli.py``).
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .cache import BUILT, CACHE, Variant, arg_key, function_guard, function_key, world_guard
from .errors import ArgumentMismatch, GuardError, RecompileWarning, UsageError, YotaError
from .ir.structure import rebuild
from .ir.tape import Tape, tree_map
from .marks import entry_point, function_maker
from .nested import gradient_inline
from .objects import host, is_int_list, param_names, unbind
from .results import GradResult
from .rules.registry import RULES, RuleSet
from .wrt import int_like, with_keywords, wrt_items, wrt_positions


# -- the compile machinery, imported on the first compile ---------------------------------
# ``import yota_s2s`` imports none of the frontend (nor gast), passes, ad, codegen and
# compiler.py: a script that only loads rules, or finds its gradients in ``ys.grad``'s cache
# after one compile, starts without them. The entry points compile through these names (a test
# may replace them to count compiles).

def compile_grad(f: Callable, args: tuple, **options: Any) -> Any:
    """``compiler.compile_grad``: a gradient module for ``f`` on ``args``."""
    from .compiler import compile_grad
    return compile_grad(f, args, **options)


def compile_forward_module(f: Callable, args: tuple, **options: Any) -> Any:
    """``compiler.compile_forward``: a forward-only module for ``f`` on ``args``."""
    from .compiler import compile_forward
    return compile_forward(f, args, **options)


def parse_function(fn: Callable) -> Any:
    """``frontend.parse_function``: ``fn``'s source, parsed (for messages at its ``def``)."""
    from .frontend import parse_function
    return parse_function(fn)


@entry_point
def simplegrad(f: Callable, *args: Any, device: str = "cpu", out_dir: str | Path | None = None,
               module_name: str | None = None, rules: RuleSet = RULES,
               wrt: Any = None, buffers: bool = True, has_aux: bool = False,
               engine: str = "numpy", max_steps: int | None = None, **kwargs: Any) -> Callable:
    """Compile the gradient of ``f`` for arguments like ``args``.

    Returns ``df`` with ``df(*args) == (f(*args), d0, d1, ...)``: one gradient per argument,
    ``None`` for arguments that are not differentiable (ints, strings, integer arrays), a
    ``{path: gradient}`` dict for structured ones. For a bound method ``model.loss``, ``df``
    is bound to ``model`` too and returns the gradient of ``self`` first.
    The function lives in a generated module: ``df.__module__`` imports in a fresh process
    that has the module's directory (``out_dir`` or the cache) on its path. ``wrt`` limits the
    gradients computed, as in ``grad`` (a position, a parameter name, or a list, tuple or set
    of them); the others come back as None. ``buffers=False`` writes the plain form (no work
    arrays, no scalar mode; docs/performance.md). ``has_aux=True``: ``f`` returns ``(loss,
    aux)``, aux any tuple, list, dict, namedtuple or dataclass of arrays and numbers computed
    beside the loss; only the loss is differentiated and ``df(*args) == ((loss, aux), d0, d1,
    ...)``. Other keyword arguments are ``f``'s, as in ``grad``; ``df`` takes them by name too.
    ``engine="numba"`` runs the loops as numba-compiled functions (codegen/numba_form.py; needs
    ``pip install 'yota-s2s[numba]'``), ``"auto"`` where numba is installed; with
    ``device="cuda"``, ``engine="fused"`` writes elementwise groups as CUDA kernels
    (codegen/cupy_form.py, docs/gpu.md). ``max_steps``: the most trips a ``while`` on data may
    run (its stacks hold that many rows at most); past it ``df`` raises ``StepLimitError`` (a
    ``RuntimeError``) naming the loop. None: the stacks grow as the loop needs.
    """
    if isinstance(f, functools.partial):
        spread = Spread(f, args)
        df = simplegrad(f.func, *spread.arguments(args), device=device, out_dir=out_dir,
                        module_name=module_name, rules=rules, wrt=spread.user_wrt(wrt),
                        buffers=buffers, has_aux=has_aux, engine=engine, max_steps=max_steps,
                        **kwargs)
        return spread.wrap(df)
    if kwargs:
        args = with_keywords(f, args, kwargs)
    return simplegrad_compiled(f, args, device=device, out_dir=out_dir, module_name=module_name,
                               rules=rules, wrt=wrt, buffers=buffers, has_aux=has_aux,
                               engine=engine, max_steps=max_steps)[0]


def simplegrad_compiled(f: Callable, args: tuple, wrt: Any = None, **options: Any
                        ) -> tuple[Callable, Any]:
    """``simplegrad``'s function and the ``Compiled`` it comes from (its guards)."""
    fn, bound = unbind(f)
    full = args if bound is None else (bound, *args)
    positions = wrt_positions(fn, full, wrt, offset=int(bound is not None))
    compiled = compile_grad(f, _host(args), wrt=None if positions is None else set(positions),
                            **options)
    return _structured(_user_function(compiled, f), compiled), compiled


class Spread:
    """``functools.partial(g, *a, **k)`` called with ``args``: ``g``'s positional arguments
    ``(*a, *args, ...)``, where a keyword the partial holds (or, before one, a default) fills
    its parameter's place. The gradient of ``g`` is compiled for all of them, the partial's
    values as arguments like any other: arrays and floats read at every call, ints and strings
    checked (as the arguments they are); the partial's are read from it at every call (its
    ``keywords`` dict can change), and only the caller's arguments get gradients."""

    def __init__(self, f: functools.partial, args: tuple):
        self.partial, self.start, self.count, self.args = f, len(f.args), len(args), args
        try:
            sig = inspect.signature(f.func)
            sig.bind(*f.args, *args, **f.keywords)
        except TypeError as e:
            parsed = parse_function(f.func)
            raise YotaError(f"functools.partial of {parsed.name}: it cannot be called with "
                            f"{len(args)} more arguments ({e})", parsed.loc(parsed.node),
                            "Pass the arguments the partial leaves open.") from None
        params = list(sig.parameters.values())[self.start + self.count:]
        given = [p for p in params if p.name in f.keywords]
        if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in given) or \
                len(given) != len(f.keywords):
            parsed = parse_function(f.func)
            raise YotaError(f"functools.partial of {parsed.name}: its keywords "
                            f"{', '.join(f.keywords)} must name positional parameters after the "
                            "arguments given", parsed.loc(parsed.node),
                            "Bind keyword-only parameters with a small wrapper function.")
        last = max((params.index(p) for p in given), default=-1)
        # (name, default) of each place after the caller's arguments up to the last keyword
        self.tail = [(p.name, p.default) for p in params[:last + 1]]

    def arguments(self, args: tuple) -> tuple:
        keywords = self.partial.keywords
        return (*self.partial.args, *args,
                *[keywords[name] if name in keywords else default for name, default in self.tail])

    def user_wrt(self, wrt: Any) -> Any:
        """The caller's ``wrt`` (a position among its arguments, a name, or a list, tuple or
        set of them) as ``g``'s; for None, the caller's arguments that are not ints."""
        def shift(w: Any) -> Any:
            inside = type(w) is int and -self.count <= w < self.count
            return w % self.count + self.start if inside else w
        if wrt is None:
            wanted = [i for i, a in enumerate(self.args) if not int_like(a)]
            return tuple(map(shift, wanted)) or None
        return type(wrt)(map(shift, wrt)) if isinstance(wrt, (tuple, list, set, frozenset)) \
            else shift(wrt)

    def grads(self, grads: Any) -> tuple:
        return tuple(grads)[self.start:self.start + self.count]

    def wrap(self, df: Callable) -> Callable:
        spread = self

        @functools.wraps(df)
        def partial_grad(*args: Any, out: Any = None) -> Any:
            full = spread.arguments(args)
            if out is not None:
                out = [None] * spread.start + list(out) + [None] * len(spread.tail)
                value, *grads = df(*full, out=out)
            else:
                value, *grads = df(*full)
            return (value, *spread.grads(grads))
        return partial_grad


@entry_point
def compile_forward(f: Callable, *args: Any, device: str = "cpu",
                    out_dir: str | Path | None = None, module_name: str | None = None,
                    rules: RuleSet = RULES, buffers: bool = True, engine: str = "numpy"
                    ) -> Callable:
    """``ys.compile``: the tracer without AD. Returns ``cf`` with ``cf(*args) == f(*args)``,
    a function of a generated forward-only module written from ``f``'s tape for arguments
    like ``args``: helper calls inlined, common subexpressions shared, values in work arrays
    (``buffers=False``: the plain form; ``engine="numba"``: its loops compiled by numba, as
    in ``simplegrad``). ``ys.source(cf)`` shows it; it imports like a gradient module."""
    compiled = compile_forward_module(f, _host(args), device=device, out_dir=out_dir,
                                      module_name=module_name, rules=rules, buffers=buffers,
                                      engine=engine)
    return _structured(_user_function(compiled, f), compiled, whole=True)


def _structured(fn: Callable, compiled: Any, whole: bool = False) -> Callable:
    """``fn``, returning ``f``'s value with its structure (a dict, a dataclass: the module
    returns nested tuples, ir/structure.py): its whole result (``whole``), else its first item
    (a gradient's value: ``(value, *grads)``). ``fn`` itself where there is nothing to rebuild."""
    structure = compiled.forward.structure
    if structure is None or structure.plain:
        return fn

    @functools.wraps(fn)
    def structured(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if whole:
            return rebuild(structure, out)
        return (rebuild(structure, out[0]), *out[1:])
    return structured


def _value_of(compiled: Any, value: Any) -> Any:
    """A module's value as ``f`` returned it (``_structured``)."""
    structure = compiled.forward.structure
    return value if structure is None or structure.plain else rebuild(structure, value)


def _user_function(compiled: Any, f: Callable) -> Callable:
    """The generated function as the user calls it: bound to ``f``'s closure where the code
    reads it, pinned to the function arguments it was compiled for, a method of ``f``'s
    object for a bound method."""
    fn = compiled.fn
    inner, bound = unbind(f)
    if compiled.reads_closure:          # the code reads f's closure at each call: bind it
        fn = compiled.module.bind(inner)
    fn = _pinned(fn, function_guard(compiled), compiled.forward.name)
    guarded = _guarded(fn, world_guard(compiled), compiled.forward.name,
                       compiled.assumes.deps if compiled.assumes is not None else ())
    if guarded is not fn and fn is compiled.fn:
        # pickled by reference (module, name), as the module's function is: in this process
        # the name finds the guarded one; in another, the module's own (whose identity
        # guards would be that process's objects anyway)
        guarded.__yota_module_function__ = fn
        setattr(compiled.module, compiled.fn.__name__, guarded)
    return guarded if bound is None else types.MethodType(guarded, bound)


def _guarded(fn: Callable, guard: Callable | None, name: str, deps: tuple) -> Callable:
    """``fn``, checking at each call what the compiled code assumed about the world by
    identity (the record's guarded entries: ``cache.world_guard``): a ``GuardError`` naming
    what changed where ``ys.grad`` would compile again."""
    if guard is None:
        return fn

    def fail(why: str) -> None:
        raise GuardError(f"{fn.__name__}: {why}; the gradient of {name} was compiled for the "
                         "old one",
                         hint="Compile again (ys.simplegrad), or use ys.grad, which compiles "
                              "again when the world changes.")
    checked = functools.update_wrapper(guard(fn, fail), fn)
    checked.__yota_world__ = checked.source
    checked.__yota_deps__ = deps        # a function that calls this one guards them too
    return checked


def _pinned(fn: Callable, pinned: Callable | None, name: str) -> Callable:
    """``fn``, refusing function arguments other than those it was compiled for (the generated
    module can check them by name only: two lambdas are both ``<lambda>``)."""
    if pinned is None:
        return fn

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if not pinned(*args, **kwargs):
            raise ArgumentMismatch(
                f"{fn.__name__}: a function argument is not the function the gradient of {name} "
                "was compiled for (they are told apart by identity, not by name)",
                hint="Compile again for it (ys.simplegrad), or use ys.grad, which compiles once "
                     "per function and finds it again.")
        return fn(*args, **kwargs)
    checked.__yota_pinned__ = pinned.source
    return checked


@entry_point
def grad(f: Callable, *args: Any, wrt: Any = None, device: str = "cpu",
         rules: RuleSet = RULES, has_aux: bool = False, engine: str = "numpy",
         max_steps: int | None = None, **kwargs: Any) -> tuple[Any, GradResult]:
    """``(f(*args), GradResult)``, compiled once per static signature and cached.

    ``wrt`` limits the gradients computed: an argument's position or parameter name, or a
    list, tuple or set of them (``"self"`` for the object of a bound method); the others come
    back None. Asking for an int's gradient is a ``UsageError`` (ints have none).
    A bound method ``model.loss`` is compiled with ``model`` as a structured argument: its
    gradients are ``g.self``. ``device="cuda"`` generates cupy code, ``"dask"`` dask.array code
    (docs/dask.md). Other keyword arguments are ``f``'s (``grad(f, x, scale=2.0)``): each is
    passed in its parameter's place, static or
    traced like a positional one (parameters skipped before it take their defaults), and
    ``g["scale"]`` is its gradient; a keyword-only parameter is refused. ``has_aux=True``:
    ``f`` returns ``(loss, aux)`` (aux: arrays and numbers in any tuple, list, dict, namedtuple
    or dataclass), only the loss is differentiated, and the value is the pair:
    ``(loss, aux), g = grad(f, ...)``. ``engine="numba"``: loops compiled by numba, as in
    ``simplegrad`` (part of the cache key); so is ``max_steps``, as in ``simplegrad``.
    """
    if isinstance(f, functools.partial):
        spread = Spread(f, args)
        value, grads = grad(f.func, *spread.arguments(args), device=device, rules=rules,
                            wrt=spread.user_wrt(wrt), has_aux=has_aux, engine=engine,
                            max_steps=max_steps, **kwargs)
        return value, GradResult(spread.grads(grads), grads._variant)
    if kwargs:
        args = with_keywords(f, args, kwargs)
    fn, offset = f, 0
    if type(f) is not types.FunctionType:
        fn, bound = unbind(f)
        if bound is not None:
            args, offset = (bound, *args), 1
    if wrt is not None and type(wrt) is not int and type(wrt) is not str:
        wrt = wrt_items(wrt)            # a tuple: one cache key for [0], (0,) and {0}
    code = _code_of(fn)
    ints = frozenset(i for i, a in enumerate(args) if type(a) is int or is_int_list(a))
    dynamic = _dynamic_ints.get(code, ints) & ints
    try:
        variant, out = _cached(fn, args, wrt, device, rules, offset, dynamic, has_aux, engine,
                               max_steps)
    except YotaError as e:
        if not dynamic or isinstance(e, UsageError):
            raise
        _dynamic_ints[code] = frozenset()     # the code needs the ints' values: static
        variant, out = _cached(fn, args, wrt, device, rules, offset, frozenset(), has_aux,
                               engine, max_steps)
    if dynamic and code not in _dynamic_ints:
        _dynamic_ints[code] = dynamic
    return _value_of(variant.compiled, out[0]), GradResult(out[1:], variant, offset)


@function_maker
def gradient(f: Callable, argnum: int | str | tuple = 0, *, device: str = "cpu",
             rules: RuleSet = RULES, has_aux: bool = False) -> Callable:
    """autograd's ``grad(f)``: a reusable function ``g(*args)`` that returns the gradient of
    ``f`` with respect to argument ``argnum`` (a position or a parameter name; a tuple gives a
    tuple of gradients). Each call goes through ``grad``'s per-signature cache: compiled on the
    first call with a new signature, found again after that. ``has_aux=True``: ``f`` returns
    ``(loss, aux)`` and ``g(*args) == (gradient, aux)``, as JAX's ``grad``."""
    return _gradient_factory(f, argnum, device, rules, with_value=False, has_aux=has_aux)


@function_maker
def value_and_grad(f: Callable, argnum: int | str | tuple = 0, *, device: str = "cpu",
                   rules: RuleSet = RULES, has_aux: bool = False) -> Callable:
    """Like ``gradient``, with the value too: ``g(*args) == (f(*args), gradient)``;
    ``has_aux=True``: ``f`` returns ``(loss, aux)`` and ``g(*args) == ((loss, aux), gradient)``,
    as JAX's ``value_and_grad``."""
    return _gradient_factory(f, argnum, device, rules, with_value=True, has_aux=has_aux)


def _gradient_factory(f: Callable, argnum: Any, device: str, rules: RuleSet,
                      with_value: bool, has_aux: bool = False) -> Callable:
    if isinstance(argnum, (set, frozenset)):
        raise UsageError(f"argnum={argnum!r} is a set, which has no order; the gradients come "
                         "back in argnum's order", hint=f"Give a tuple: argnum={tuple(argnum)!r}.")
    items = wrt_items(argnum, "argnum")
    argnum = items if isinstance(argnum, (list, tuple)) else items[0]

    def g(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = with_keywords(f, args, kwargs)
        value, grads = grad(f, *args, wrt=argnum, device=device, rules=rules, has_aux=has_aux)
        picked = _picked(f, args, grads, argnum)
        if with_value:
            return value, picked
        return (picked, value[1]) if has_aux else picked
    # no functools.wraps: its __wrapped__ would make the frontend trace f in place of g (a
    # nested ys.gradient(ys.gradient(f)) silently gave the first derivative)
    g.__name__ = g.__qualname__ = f"grad_{getattr(f, '__name__', 'f')}"
    g.__doc__ = getattr(f, "__doc__", None)
    g.__yota_gradient__ = True          # the frontend inlines __yota_inline__'s function instead
    g.__yota_inline__ = gradient_inline(f, argnum, with_value, device, rules, grad, has_aux)
    return g


def _picked(f: Callable, args: tuple, grads: GradResult, argnum: Any) -> Any:
    if isinstance(argnum, tuple):
        return tuple(_picked(f, args, grads, a) for a in argnum)
    if isinstance(argnum, str):
        if argnum == "self":
            return grads.self
        fn, bound = unbind(f)
        names = param_names(fn, len(args) + (bound is not None))
        return grads[names.index(argnum) - (bound is not None)]
    return grads[argnum]


@function_maker
def elementwise_grad(f: Callable, argnum: int | str | tuple = 0, *, device: str = "cpu",
                     rules: RuleSet = RULES) -> Callable:
    """autograd's ``elementwise_grad(f)``: ``g(*args)``, the gradient of ``np.sum(f(*args))``
    with respect to argument ``argnum`` (the vector-Jacobian product with ones; for an
    elementwise ``f``, each element's own derivative). Cached like ``gradient``."""
    def summed(*args):
        return np.sum(f(*args))
    return _gradient_factory(summed, argnum, device, rules, with_value=False)


# int arguments first try to stay run-time values (an index, a slice offset: autograd's
# objective(params, iter)): one compile serves every value. Where the code needs an int's
# value to compile (range(n), a shape, an axis), the function's ints are static from then on.
_dynamic_ints: dict[Any, frozenset[int]] = {}


def _cached(fn: Callable, args: tuple, wrt: Any, device: str, rules: RuleSet, offset: int,
            dynamic: frozenset[int], has_aux: bool = False, engine: str = "numpy",
            max_steps: int | None = None) -> tuple["Variant", Any]:
    keys = [arg_key(a) if i not in dynamic else ("int at run time",) if type(a) is int else
            ("int list at run time", len(a)) for i, a in enumerate(args)]
    key = (function_key(fn), rules, rules.version, wrt, device, *keys)
    if has_aux:
        key += ("has_aux",)
    if engine != "numpy":
        key += (("engine", engine),)
    if max_steps is not None:
        key += (("max_steps", max_steps),)

    def compile_now():
        if not dynamic:
            _note_static_ints(fn, args, offset)
        return compile_grad(fn, _host(args), rules=rules, device=device,
                            wrt=_argnums(fn, args, wrt, offset), dynamic=dynamic,
                            has_aux=has_aux, engine=engine, max_steps=max_steps)
    return CACHE.call(key, args, compile_now, fn, closure_of=fn)


RECOMPILE_WARNING = 8       # compiles for as many values of one int argument: warn once
_static_ints: dict[Any, dict[int, set]] = {}
_warned: set = set()


def _note_static_ints(fn: Callable, args: tuple, offset: int) -> None:
    """Count the values of each int argument ``fn`` is compiled for; at
    ``RECOMPILE_WARNING`` distinct values of one, warn once that it makes ``grad`` compile
    again for every value (autograd's ``objective(params, iter)``)."""
    code = _code_of(fn)
    if code is None:
        return
    seen = _static_ints.setdefault(code, {})
    for i, a in enumerate(args):
        if type(a) is int or isinstance(a, np.integer):
            values = seen.setdefault(i, set())
            if len(values) < RECOMPILE_WARNING:
                values.add(int(a))
            if len(values) == RECOMPILE_WARNING and (code, i) not in _warned:
                _warned.add((code, i))
                name = param_names(fn, len(args))[i]
                warnings.warn(
                    f"ys.grad has compiled {fn.__name__} for {RECOMPILE_WARNING} values of its "
                    f"int argument {name!r}: ints are static (part of the compile key), so each "
                    "new value compiles again, and past the cache's size nothing is reused. If "
                    f"{name!r} picks a batch (X[{name} * B:({name} + 1) * B]), slice outside and "
                    "pass the batch in as an argument; if it is data, pass a float or an array.",
                    RecompileWarning, stacklevel=4)


def _code_of(fn: Callable) -> Any:
    """What tells ``fn``'s code apart: its code object; for the function that calls a numpy
    function or operator (``objects.calling``: one code for all), that callable."""
    return getattr(fn, "__yota_calls__", None) or getattr(fn, "__code__", None)


def clear_cache() -> None:
    """Forget every gradient ``grad`` compiled, and the functions ``hessian``, ``hessp`` and
    ``jacobian`` keep (the generated files stay on disk)."""
    CACHE.clear()
    BUILT.clear()


def cache_info() -> dict[str, int]:
    """``{"hits", "misses", "guard_failures", "variants"}`` of ``grad``'s cache."""
    return CACHE.stats()


def _argnums(fn: Callable, args: tuple, wrt: Any, offset: int) -> set[int] | None:
    positions = wrt_positions(fn, args, wrt, offset)
    return None if positions is None else set(positions)


# -- trace and source --------------------------------------------------------------------

@entry_point
def trace(f: Callable, *args: Any, rules: RuleSet = RULES) -> tuple[Any, Tape]:
    """``(f(*args), tape)``: the value on these arguments and the SSA tape that computes it."""
    from .frontend import trace_function
    tape, ev = trace_function(f, _host(args), rules)
    value = tree_map(ev.concrete, tape.result)
    return (value if tape.structure.plain else rebuild(tape.structure, value)), tape


def source(df: Callable) -> str:
    """The text of the generated module that ``df`` comes from (or of ``g.source``)."""
    module = sys.modules.get(getattr(df, "__module__", ""), None)
    text = getattr(module, "__yota_text__", None)
    return text if text is not None else inspect.getsource(module or df)


def example(make_args: Callable[..., tuple]) -> Callable[[Callable], Callable]:
    """Mark a function for ``yota-s2s compile``: ``make_args()`` returns its example arguments.

    ``make_args`` returns a tuple with one example per positional parameter (arrays, floats,
    ints, structs); if it takes a parameter, it gets a ``numpy.random.Generator`` seeded with 0,
    so the examples, and the branches they decide, are the same on every compile. The decorator
    returns the function unchanged; the factory is kept as ``fn.__yota_example__``.
    """
    if not callable(make_args):
        raise YotaError(f"ys.example takes a function that returns the example arguments, "
                        f"not {make_args!r}",
                        hint="Write @ys.example(make_args) above the function.")

    def mark(fn: Callable) -> Callable:
        if getattr(fn, "__yota_example__", None) is not None:
            raise YotaError(f"{fn.__qualname__} already has an example",
                            hint="Give each function one @ys.example; compile other signatures "
                                 "with yota-s2s compile --func NAME --arg NAME=SPEC.")
        fn.__yota_example__ = make_args
        return fn
    return mark


def _host(args: tuple) -> tuple:
    """Example arguments on the host: cupy arrays are copied to numpy for compiling."""
    return tuple(host(a) for a in args)
