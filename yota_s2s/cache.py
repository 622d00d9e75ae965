"""The compile cache behind ``ys.grad``: compiled gradients, found again in microseconds.

A call is looked up in two steps:

1. **Key** (one dict lookup): the function (its code object, the globals it runs in, closure
   cell contents and defaults: a function redefined in a notebook cell has a new code object
   and misses), the
   rule set and its ``version`` (bumped by every ``diffrule``/``nodiff``), ``wrt``, the device,
   and per argument its static signature: an array's shape and dtype, a float's type, a static
   value itself (ints, strings, tuples of them; functions and other objects by identity), a
   structured argument's class.
2. **Variants** under the key, most recently used first. A variant is a compiled module plus
   two guards, small functions generated from what tracing read:
   ``fits(*args)`` checks the struct leaves, static leaves, list lengths, dict keys, classes
   and shared objects (``m.dec.W is m.enc.W``) of the arguments;
   ``fresh()`` checks that every global, closure cell and class attribute the source read is
   still bound to the same object (a helper redefined in a notebook cell, a patched method).
   A variant that is no longer fresh is dropped. When the generated code raises its own
   ``GuardError`` (a value-dependent branch went the other way) the next variant is tried, and
   if none fits, this path is compiled too and kept beside the others.

Bounded: at most ``maxsize`` variants, least recently used keys go first. Thread-safe: lookups
take a short lock, compiling takes a second (re-entrant) lock, so threads that miss on the same
signature compile it once.
"""
from __future__ import annotations

import ast
import functools
import threading
import types
import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from .errors import InternalError, RecompileWarning
from .objects import LAYOUT, MISSING, is_lazy_array, is_struct_object
from .text import access_expr, literal_text

if TYPE_CHECKING:           # the compile machinery comes in on the first compile, not here
    from .compiler import Compiled
    from .frontend.depends import Dep
    from .ir.tape import Tape

_PLAIN = (bool, int, str, bytes, type(None))
_MISSING = MISSING


class _Identity:
    """A key part that compares by identity (and keeps its object alive while cached)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj


def static_key(value: Any) -> Any:
    """A static value for a key: by value where Python compares it plainly, else by identity."""
    t = type(value)
    if t in _PLAIN or isinstance(value, (np.integer, np.bool_)):
        return (t, value)
    if t is tuple:
        return (t, tuple(static_key(v) for v in value))
    return _Identity(value)


def arg_key(value: Any) -> Any:
    """An argument's static signature; struct contents are left to the variant's guard."""
    t = type(value)
    if t is np.ndarray:
        return (t, value.shape, value.dtype)
    how = _BY_TYPE.get(t)
    if how is None:
        how = _BY_TYPE[t] = _key_maker(value)
    return how(value)


def _key_maker(value: Any) -> Callable[[Any], Any]:
    """How to key values of ``type(value)`` (decided once per type: this is on the hot path)."""
    t = type(value)
    if t in (float, complex) or isinstance(value, np.inexact):
        return lambda v: type(v)
    if t in _PLAIN or isinstance(value, np.generic):
        return lambda v: (type(v), v)
    if t is tuple:
        return lambda v: static_key(v) if all(isinstance(x, _PLAIN) for x in v) else tuple
    if isinstance(value, (list, tuple, dict)) or is_struct_object(value):
        return lambda v: type(v)    # a container or class instance: its contents are the guard's
    if hasattr(type(value), "__cuda_array_interface__") or is_lazy_array(value):
        # a cupy or a dask array (tested on the class: a __getattr__ may raise anything); a
        # dask array's chunks do not change the module
        return lambda v: (type(v), v.shape, v.dtype)
    return static_key


_BY_TYPE: dict[type, Callable[[Any], Any]] = {}


def function_key(fn: Callable) -> Any:
    """The code, the globals it runs in (one code object can run under several), and what it
    closes over; a new ``def`` always misses."""
    try:
        code, cells, defaults = fn.__code__, fn.__closure__, fn.__defaults__
    except AttributeError:
        return _Identity(fn)
    kwdefaults = fn.__kwdefaults__
    if cells is None and defaults is None and kwdefaults is None:
        return code, id(fn.__globals__)      # kept alive by the variant (Cache.call's owner)
    contents = []
    for cell in cells or ():
        try:
            contents.append(static_key(cell.cell_contents))
        except ValueError:            # an empty cell
            contents.append(_MISSING)
    return (code, id(fn.__globals__), tuple(contents), static_key(defaults or ()),
            tuple((k, static_key(v)) for k, v in sorted((kwdefaults or {}).items())))


class _Never(Exception):
    """Stands in for the GuardError of a module that has no guards."""


class Variant:
    """One compiled gradient with the guards that say when it applies."""

    __slots__ = ("fn", "fits", "fresh", "guard_error", "compiled", "owner", "reads_closure")

    def __init__(self, compiled: Compiled, owner: Any = None):
        self.compiled = compiled
        self.owner = owner          # what ids in the key refer to, alive while this is cached
        self.fn = compiled.fn
        self.reads_closure = compiled.reads_closure     # called with _fn=the function
        self.guard_error = getattr(compiled.module, "GuardError", _Never)
        self.fits, self.fresh = make_guards(compiled)


class _Consts:
    """Objects a guard's source refers to: ``const(value)`` is the name it goes by."""

    def __init__(self, avoid: Iterable[str] = ()) -> None:
        self.values: dict[str, Any] = {}
        self.avoid = set(avoid)      # the guard's parameter names

    def __call__(self, value: Any) -> str:
        n = len(self.values)
        while f"_k{n}" in self.avoid or f"_k{n}" in self.values:
            n += 1
        name = f"_k{n}"
        self.values[name] = value
        return name


def make_guards(compiled: Compiled) -> tuple[Callable | None, Callable | None]:
    """``fits(*args)`` and ``fresh()`` for a compiled gradient (None when nothing to check)."""
    tape, assumes = compiled.forward, compiled.assumes
    const = _Consts()
    consts = const.values
    params, read = _reader(tape)
    tests = []
    for inp in tape.inputs:
        if inp.path:
            tests.append(_leaf_test(read(inp.access), inp.var.aval, const))
    for static in tape.statics + tape.layout:
        if static.path or static.access != tape.params[static.argnum]:
            tests.append(_static_test(read(static.access), static.value, const))
    tests += [f"type({read(access)}) is {const(cls)}" for access, cls in assumes.types
              if access not in tape.params]
    tests += [f"{read(a)} is {read(b)}" for a, b in assumes.aliases]
    tests += [_distinct_test(group, read) for group in assumes.distinct]
    tests += [f"{literal_text(n)} not in {read(a)}.__dict__" for a, n in assumes.absent]
    tests += [f"{literal_text(n)} in {read(a)}.__dict__" for a, n in assumes.present]
    deps = [_dep_test(dep, const) for dep in assumes.deps]
    consts["_MISSING"] = _MISSING
    fits = _function("fits", params, tests, consts) if tests else None
    fresh = _function("fresh", (), deps, consts) if deps else None
    return fits, fresh


_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def function_guard(compiled: Compiled) -> Callable | None:
    """``pinned(*args, **kwargs)``: every function among the static arguments is the very one
    the gradient was compiled for (a bound method: the same function and object). The
    generated module can tell functions apart only by name; None when there are none."""
    tape = compiled.forward
    # the function's own parameter names, so that it takes the same keywords; the constants
    # and the one builtin it calls go by names that no parameter has
    const = _Consts(avoid=tape.params)
    root = {p: p for p in tape.params}
    tests = []
    for static in tape.statics:
        value, access = static.value, ast.unparse(access_expr(static.access, root))
        if isinstance(value, types.MethodType):
            get = const(getattr)
            tests.append(f"{get}({access}, '__func__', None) is {const(value.__func__)}"
                         f" and {get}({access}, '__self__', None) is {const(value.__self__)}")
        elif isinstance(value, _FUNCTIONS):
            tests.append(f"{access} is {const(value)}")
    if not tests:
        return None
    rest = [n for n in ("_", "__", "___", "____") if n not in tape.params][:2]
    return _function("pinned", (*tape.params, f"*{rest[0]}", f"**{rest[1]}"), tests, const.values)


def world_guard(compiled: Compiled) -> Callable[[Callable, Callable], Callable] | None:
    """For a ``simplegrad`` function: what the record says is guarded by identity (globals,
    closure cells, defaults, class attributes the source read, the classes of struct
    arguments, tied leaves, instance attributes that must stay absent or present), checked at
    each call.
    Returns ``guard(fn, fail)``, which makes the function that checks, then calls ``fn``; where a
    check fails it calls ``fail(why)`` (``why`` names the first entry that fails and where the
    source read it). None when nothing is guarded: the module is called as it is. The checks
    are ``is`` tests written into one generated function with the arguments by position (a call
    with keywords takes a slower path that binds them first)."""
    tape, assumes = compiled.forward, compiled.assumes
    if assumes is None:
        return None
    from .frontend.depends import library_binding
    const = _Consts()
    params, read = _reader(tape)
    missing = const(_MISSING)
    checks: list[tuple[str, str]] = []          # (test, what failed)
    for access, cls in assumes.types:
        checks.append((f"type({read(access)}) is {const(cls)}",
                       f"{access} is a {cls.__qualname__} no more"))
    for a, b in assumes.aliases:
        checks.append((f"{read(a)} is {read(b)}",
                       f"{a} and {b} were one object (tied) and are two now"))
    for group in assumes.distinct:
        checks.append((_distinct_test(group, read),
                       f"{', '.join(group)} were distinct objects and two of them are one now "
                       "(tied)"))
    for access, name in assumes.absent:
        checks.append((f"{literal_text(name)} not in {read(access)}.__dict__",
                       f"{access}.{name} was read from its class and is now set on the "
                       "object"))
    for access, name in assumes.present:
        checks.append((f"{literal_text(name)} in {read(access)}.__dict__",
                       f"{access}.{name} was read from the object and is now its class's "
                       "(deleted from the object)"))
    for dep in assumes.deps:
        if library_binding(dep.name, dep.value):
            continue            # np, exp of 'from numpy import exp' (depends.library_binding)
        where = f" (read at {dep.loc.short})" if dep.loc is not None else ""
        checks.append((_dep_test(dep, const, missing),
                       f"{dep.shown or dep.name} ({dep.kind}){where} " + (
                           "has changed in place" if dep.equal else
                           "is not the object it was when the gradient was compiled")))
    if not checks:
        return None
    n = len(params)
    world = _function("world", params, [t for t, _ in checks], const.values)
    singles = [(_function("one", params, [t], const.values), why) for t, why in checks]
    body = "\n            and ".join(t for t, _ in checks)
    unpack = "".join(f"        {p} = _args[{i}]\n" for i, p in enumerate(params))
    source = (f"def guarded(*_args, **_kwargs):\n"
              f"    if len(_args) >= {n}:\n{unpack}"
              f"        try:\n            ok = ({body})\n"
              f"        except Exception:\n            ok = False\n"
              f"        if ok:\n            return _call(*_args, **_kwargs)\n"
              f"    return _slow(_args, _kwargs)\n")

    def guard(fn: Callable, fail: Callable[[str], Any]) -> Callable:
        def slow(args: tuple, kwargs: dict) -> Any:
            bound = list(args[:n]) + [kwargs[p] for p in tape.params[len(args):] if p in kwargs]
            if len(bound) == n and not world(*bound):
                why = next((why for test, why in singles if not test(*bound)),
                           "the world it was compiled for has changed")
                fail(why)
            return fn(*args, **kwargs)      # (too few arguments: the module says so)
        namespace = dict(const.values, _call=fn, _slow=slow)
        exec(compile(source, "<yota_s2s guard world>", "exec"), namespace)
        checked = namespace["guarded"]
        checked.source = source
        return checked
    return guard


def _reader(tape: Tape) -> tuple[tuple[str, ...], Callable[[str], str]]:
    """The guards' parameters, ``_a0, _a1, ...`` (no parameter name can shadow a constant or
    a builtin), and ``read(access)``: an argument's field read from them, checked to be an
    access (``text.access_expr``), never pasted as it is."""
    params = tuple(f"_a{i}" for i in range(len(tape.params)))
    root = dict(zip(tape.params, params))
    return params, lambda access: ast.unparse(access_expr(access, root))


def _distinct_test(group: tuple[str, ...], read: Callable[[str], str]) -> str:
    """The leaves of ``group`` are distinct objects: ``a is not b`` for two, a set of ids for
    more (one test, linear in the group's size)."""
    if len(group) == 2:
        return f"{read(group[0])} is not {read(group[1])}"
    return f"len({{{', '.join(f'id({read(a)})' for a in group)}}}) == {len(group)}"


def _leaf_test(access: str, aval: Any, const: Callable[[Any], str]) -> str:
    if aval.weak:
        return f"type({access}) is {'complex' if aval.dtype.kind == 'c' else 'float'}"
    dtype, ndarray = const(aval.dtype), const(np.ndarray)
    # a numpy subclass (np.matrix, a masked array) misses: compiling it again refuses it
    return (f"getattr({access}, 'dtype', None) == {dtype} and {access}.shape == {aval.shape!r} "
            f"and (type({access}) is {ndarray} or not isinstance({access}, {ndarray}))")


def _static_test(access: str, value: Any, const: Callable[[Any], str]) -> str:
    key = static_key(value)
    if isinstance(key, _Identity):
        return f"{access} is {const(value)}"
    return f"type({access}) is {const(type(value))} and {access} == {const(value)}"


def _dep_test(dep: Dep, const: Callable[[Any], str], missing: str = "_MISSING") -> str:
    if isinstance(dep.namespace, types.CellType):
        return f"{const(dep.namespace)}.cell_contents is {const(dep.value)}"
    if dep.name is LAYOUT:
        measure = "tuple" if isinstance(dep.namespace, dict) else "len"
        return f"{measure}({const(dep.namespace)}) == {const(dep.value)}"
    if dep.equal and dep.item:
        return (f"{const(_same_item)}({const(dep.namespace)}, {const(dep.name)}, "
                f"{const(dep.value)})")
    if dep.equal and isinstance(dep.value, np.ndarray):
        return f"{const(_same_array)}({const(dep.namespace)}, {const(dep.value)})"
    if dep.equal:
        return f"{const(dep.namespace)} == {const(dep.value)}"
    if dep.item:
        return f"{const(dep.namespace)}[{literal_text(dep.name)}] is {const(dep.value)}"
    if dep.attribute:
        return (f"getattr({const(dep.namespace)}, {literal_text(dep.name)}, {missing}) is "
                f"{const(dep.value)}")
    return f"{const(dep.namespace)}.get({literal_text(dep.name)}, {missing}) is {const(dep.value)}"


def _same_item(container: Any, key: Any, value: Any) -> bool:
    """``container[key]`` is still ``value`` (a number or string read from a container the
    generated code cannot reach, ``OutsideReads.unreached_item``): the same object, or one of
    the same type equal to it (a nan is only itself: it compiles again)."""
    found = container[key]
    return found is value or (type(found) is type(value) and found == value)


def _same_array(array: np.ndarray, copy: np.ndarray) -> bool:
    """An array compiled in (``OutsideReads._unreachable``, frontend/outside.py) still holds the
    copy's contents: the same dtype, shape and bytes (a nan equals itself; -0.0 differs from
    0.0, which only compiles again)."""
    return array.dtype == copy.dtype and array.shape == copy.shape and \
        array.tobytes() == copy.tobytes()


def _function(name: str, params: tuple[str, ...], tests: list[str], consts: dict) -> Callable:
    body = "\n            and ".join(tests)
    source = (f"def {name}({', '.join(params)}):\n    try:\n        return bool({body})\n"
              f"    except Exception:\n        return False\n")
    namespace = dict(consts)
    exec(compile(source, f"<yota_s2s guard {name}>", "exec"), namespace)
    fn = namespace[name]
    fn.source = source
    return fn


def _cause(error: Exception) -> str:
    """A guard's message up to its verdict: ``model.py:12 `if loss > 1.0:` was True``."""
    text = str(error)
    cut = text.find(" when this gradient was compiled")
    return text[:cut] if cut > 0 else text


def _call(variant: Variant, args: tuple, closure_of: Any) -> Any:
    if variant.reads_closure:
        return variant.fn(*args, _fn=closure_of)
    return variant.fn(*args)


# variants of one key (arguments of one static signature) compiled: warn once, naming why
RECOMPILE_VARIANTS = 4


class Cache:
    def __init__(self, maxsize: int = 128):
        self.maxsize = maxsize
        self._entries: OrderedDict[Any, tuple[Variant, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._compiling = threading.RLock()
        self.hits = self.misses = self.guard_failures = 0
        self._why: dict[Any, str] = {}      # key -> why its last variant did not apply
        self._warned: set = set()

    def call(self, key: Any, args: tuple, compile_fn: Callable[[], Compiled],
             owner: Any = None, closure_of: Any = None) -> tuple[Variant, Any]:
        """``(variant, variant.fn(*args))``, compiling a new variant only when none applies.
        ``owner`` is kept alive with the variant: an ``id()`` in ``key`` stays its own.
        ``closure_of`` is the function compiled: code that reads its closure is given it."""
        found = self._run(key, args, closure_of)
        if found is not None:
            return found
        with self._compiling:
            found = self._run(key, args, closure_of)    # compiled meanwhile by another thread?
            if found is not None:
                return found
            variant = Variant(compile_fn(), owner)
            if variant.fits is not None and not variant.fits(*args):
                raise InternalError("a freshly compiled gradient rejects the arguments it was "
                                    "compiled for; please report this with the guard:\n"
                                    + variant.fits.source)
            self._add(key, variant)
            self.misses += 1
            self._recompiled(key, variant)
        return variant, _call(variant, args, closure_of)

    def _recompiled(self, key: Any, variant: Variant) -> None:
        """Warn once per key when it holds ``RECOMPILE_VARIANTS`` variants: each call tries
        them in turn, and the cause (a guard's ``file:line`` and condition) is the user's to
        change."""
        count = len(self._entries.get(key, ()))
        if count < RECOMPILE_VARIANTS or key in self._warned:
            return
        self._warned.add(key)
        name = variant.compiled.forward.name
        why = self._why.get(key, "the checks of what it read outside its arguments failed")
        warnings.warn(
            f"ys.grad has compiled {name} {count} times for arguments of one shape and dtype: "
            f"{why}. Each new case compiles again (up to {self.maxsize} variants), and every "
            "call tries them in turn. Where the guard is an if on data, arms that give values "
            "of one shape and dtype keep it an if, one module for every path.",
            RecompileWarning, stacklevel=4)

    def _run(self, key: Any, args: tuple, closure_of: Any = None) -> tuple[Variant, Any] | None:
        with self._lock:
            variants = self._entries.get(key)
            if variants is None:
                return None
            self._entries.move_to_end(key)
            self.hits += 1              # taken back below if no variant applies
        for variant in variants:
            if variant.fresh is not None and not variant.fresh():
                self._drop(key, variant)
                continue
            if variant.fits is not None and not variant.fits(*args):
                self._why[key] = "what it read outside its arguments changed (its checks)"
                continue
            try:
                out = _call(variant, args, closure_of)
            except variant.guard_error as e:
                with self._lock:
                    self.guard_failures += 1
                    self._why[key] = f"a guard failed, {_cause(e)}"
                continue
            if variant is not variants[0]:
                self._promote(key, variant)
            return variant, out
        with self._lock:
            self.hits -= 1
        return None

    def _add(self, key: Any, variant: Variant) -> None:
        with self._lock:
            self._entries[key] = (variant, *self._entries.get(key, ()))[:self.maxsize]
            self._entries.move_to_end(key)
            while len(self) > self.maxsize and len(self._entries) > 1:
                self._entries.popitem(last=False)

    def _promote(self, key: Any, variant: Variant) -> None:
        with self._lock:
            variants = self._entries.get(key, ())
            if variant in variants:
                self._entries[key] = (variant, *(v for v in variants if v is not variant))

    def _drop(self, key: Any, variant: Variant) -> None:
        with self._lock:
            variants = tuple(v for v in self._entries.get(key, ()) if v is not variant)
            if variants:
                self._entries[key] = variants
            else:
                self._entries.pop(key, None)

    def __len__(self) -> int:
        """The number of compiled variants held."""
        return sum(len(v) for v in self._entries.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._why.clear()
            self._warned.clear()
            self.hits = self.misses = self.guard_failures = 0

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses,
                    "guard_failures": self.guard_failures, "variants": len(self)}


CACHE = Cache()


class Built:
    """Functions built over compiled modules (``ys.hessian``'s Hessian-vector product,
    ``ys.jacobian``'s vector-Jacobian product, ``ys.hessp``'s), found again by a key like
    ``grad``'s (the function, the rules, the options, each argument's static signature) and
    kept while the guards of the compile that traced the user's code hold: ``fresh()``
    (globals, closure cells, class attributes read) and ``fits(*args)`` (struct leaves and
    classes). One function per key, the least recently used dropped past ``maxsize``."""

    def __init__(self, maxsize: int = 64):
        self.maxsize = maxsize
        self._entries: OrderedDict[Any, tuple[Any, Callable | None, Callable | None]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any, guard_args: tuple,
            build: Callable[[], tuple[Any, Compiled]]) -> Any:
        """The function kept under ``key`` if its guards accept ``guard_args`` (the traced
        compile's arguments), else ``build()``'s, kept. ``build`` returns the function and
        the compile whose guards decide when it applies."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None:
            fn, fits, fresh = entry
            if (fresh is None or fresh()) and (fits is None or fits(*guard_args)):
                with self._lock:
                    if key in self._entries:
                        self._entries.move_to_end(key)
                return fn
        return self.rebuild(key, build)

    def rebuild(self, key: Any, build: Callable[[], tuple[Any, Compiled]]) -> Any:
        """``build()``'s function, kept under ``key`` in place of the one there (whose module
        refused these arguments: a branch on a value went the other way)."""
        fn, compiled = build()
        fits, fresh = make_guards(compiled) if compiled.assumes is not None else (None, None)
        with self._lock:
            self._entries[key] = (fn, fits, fresh)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return fn

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


BUILT = Built()
