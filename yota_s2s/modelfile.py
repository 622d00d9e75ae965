"""Model files for ``yota-s2s``: importing one by path, and what to compile in it.

**Import name.** A model file is imported under the name Python gives it when its *root* is on
``sys.path``: the root is the first directory above the file that is not a package (has no
``__init__.py``), the name is the file's stem behind the packages in between. So
``examples/mlp.py`` is ``mlp`` with root ``examples/``, or ``examples.mlp`` with the project
as root when ``examples/`` has an ``__init__.py``. A gradient module that calls a function of
the model (one given a rule with ``ys.diffrule``) imports it from that name
(``codegen/imports.py``).

**Targets.** The functions of the file marked ``@ys.example(make_args)``, in source order, or
one ``--func NAME`` whose arguments come from its example or from ``--arg NAME=SPEC`` specs::

    float32[64,10]   an array (seeded standard normal values; ints in [0, 10), random bools)
    float64[]        a 0-d array;  float32  a numpy scalar
    5  0.1  True  'relu'  (2, 3)  None    a Python value (a float is traced, the rest static)
"""
from __future__ import annotations

import ast
import importlib
import inspect
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from .errors import SourceLoc, UsageError, YotaError
from .objects import param_names


@dataclass(frozen=True)
class ModelFile:
    path: Path              # absolute
    name: str               # the import name: "mlp", "examples.mlp"
    root: Path              # the directory that must be on sys.path to import it by name
    module: ModuleType


@dataclass(frozen=True)
class Target:
    """One function to compile, with its example arguments."""

    fn: Callable
    args: tuple
    params: tuple[str, ...]          # one name per argument
    wrt: frozenset[int] | None       # argument numbers to differentiate; None: all
    specs: tuple[str, ...] = ()      # the --arg specs it was made from, canonical, in order

    @property
    def name(self) -> str:
        return self.fn.__name__


# -- importing -------------------------------------------------------------------------------

def import_name(path: Path) -> tuple[str, Path]:
    """``(dotted name, root)`` of the Python file ``path`` (see the module docstring)."""
    parts, directory = [path.stem], path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    bad = [p for p in parts if not p.isidentifier()]
    if bad:
        raise UsageError(f"{path} cannot be imported: {bad[0]!r} is not a Python name",
                         hint="Rename it with letters, digits and underscores, e.g. my_model.py.")
    return ".".join(parts), directory


def load_model(path: str | Path) -> ModelFile:
    """Import the model file at ``path`` by its import name (its root goes on ``sys.path``)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    if path.suffix != ".py":
        raise UsageError(f"{path} is not a Python file", hint="Give the model's .py file.")
    path = path.resolve()
    name, root = import_name(path)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    module = sys.modules.get(name)
    if module is None:
        try:
            module = importlib.import_module(name)
        except SystemExit as e:           # sys.exit at import: a failure, never a clean pass
            raise YotaError(f"importing {path.name} calls sys.exit({e.code!r})",
                            _failing_line(e, path),
                            "A model file must import without exiting: put the script part "
                            "under if __name__ == '__main__':") from None
        except Exception as e:
            raise YotaError(f"importing {path.name} fails: {type(e).__name__}: {e}",
                            _failing_line(e, path)) from e
    if getattr(module, "__file__", None) is None or Path(module.__file__).resolve() != path:
        raise UsageError(f"{path.name} would be imported as {name}, but that name is taken by "
                         f"{getattr(module, '__file__', None) or 'a built-in module'}",
                         hint=f"Rename {path.name}.")
    return ModelFile(path, name, root, module)


def _failing_line(error: BaseException, path: Path) -> SourceLoc | None:
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        return SourceLoc(error.filename, error.lineno, text=(error.text or "").strip())
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == path]
    if not frames:
        return None
    return SourceLoc(frames[-1].filename, frames[-1].lineno, text=frames[-1].line or "")


# -- targets ---------------------------------------------------------------------------------

def marked_functions(module: ModuleType) -> list[Callable]:
    """The functions defined in ``module`` with ``@ys.example``, in source order."""
    found = [fn for fn in vars(module).values()
             if callable(fn) and getattr(fn, "__yota_example__", None) is not None
             and getattr(fn, "__module__", None) == module.__name__]
    return sorted(found, key=lambda fn: fn.__code__.co_firstlineno)


def targets(model: ModelFile, func: str | None = None, specs: Sequence[str] = (),
            wrt: Sequence[str] = ()) -> list[Target]:
    """What to compile in ``model``: its marked functions, or ``func`` (with ``specs``)."""
    if specs and func is None:
        raise UsageError("--arg needs --func NAME: which function are the arguments for?")
    if func is None:
        fns = marked_functions(model.module)
        if not fns:
            raise UsageError(f"{model.path.name} marks no function with @ys.example",
                             hint="Mark the functions to compile with @ys.example(make_args), or "
                                  "name one: --func NAME --arg NAME=SPEC ...")
    else:
        fn = getattr(model.module, func, None)
        if not inspect.isfunction(fn):
            names = [n for n, v in vars(model.module).items()
                     if inspect.isfunction(v) and v.__module__ == model.name]
            raise UsageError(f"{model.path.name} has no function {func!r}",
                             hint=f"Its functions: {', '.join(names) or '(none)'}.")
        fns = [fn]
    made = [_target(fn, specs) for fn in fns]
    return _with_wrt(made, wrt)


def _target(fn: Callable, specs: Sequence[str]) -> Target:
    if not specs and getattr(fn, "__yota_example__", None) is not None:
        args = example_args(fn)
        return Target(fn, args, param_names(fn, len(args)), None)
    args, canonical = args_from_specs(fn, specs)
    return Target(fn, args, param_names(fn, len(args)), None, canonical)


def _with_wrt(made: list[Target], wrt: Sequence[str]) -> list[Target]:
    if not wrt:
        return made
    unknown = [w for w in wrt if not any(w in t.params for t in made)]
    if unknown:
        params = ", ".join(dict.fromkeys(p for t in made for p in t.params))
        raise UsageError(f"--wrt {unknown[0]}: no function compiled here has that parameter",
                         hint=f"Parameters: {params}.")
    return [Target(t.fn, t.args, t.params, frozenset(i for i, p in enumerate(t.params) if p in wrt),
                   t.specs) for t in made]


def example_args(fn: Callable) -> tuple:
    """The arguments ``fn``'s ``@ys.example`` factory makes (given a seeded rng if it wants one)."""
    make = fn.__yota_example__
    code = getattr(make, "__code__", None)
    loc = SourceLoc(code.co_filename, code.co_firstlineno, func=make.__name__) if code else None
    try:
        wants_rng = len(inspect.signature(make).parameters) > 0
        args = make(np.random.default_rng(0)) if wants_rng else make()
    except Exception as e:
        raise YotaError(f"the example factory of {fn.__name__} fails: {type(e).__name__}: {e}",
                        loc) from e
    if type(args) is not tuple:
        raise UsageError(f"the example factory of {fn.__name__} returns a {type(args).__name__}, "
                         "not a tuple of arguments", loc,
                         "Return one value per parameter: return (W, b, x), or (params,) for one.")
    try:
        inspect.signature(fn).bind(*args)
    except TypeError as e:
        raise UsageError(f"the example arguments do not fit {fn.__name__}: {e}", loc) from None
    return args


# -- argument specs --------------------------------------------------------------------------

_ARRAY = re.compile(r"([a-z]+[0-9]*)(?:\[([0-9,\s]*)\])?")


@dataclass(frozen=True)
class ArraySpec:
    dtype: np.dtype
    shape: tuple[int, ...] | None     # None: a numpy scalar

    def __str__(self) -> str:
        if self.shape is None:
            return self.dtype.name
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    def make(self, rng: np.random.Generator) -> Any:
        shape = self.shape if self.shape is not None else ()
        kind = self.dtype.kind
        if kind == "f":
            value = rng.standard_normal(shape)
        elif kind == "c":
            value = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        elif kind in "iu":
            value = rng.integers(0, 10, shape)
        elif kind == "b":
            value = rng.random(shape) < 0.5
        else:
            raise UsageError(f"cannot make example values of dtype {self.dtype.name}")
        value = np.asarray(value).astype(self.dtype)
        return value[()] if self.shape is None else value


def parse_spec(text: str) -> Any:
    """An ``ArraySpec`` or a Python value (see the module docstring)."""
    text = text.strip()
    match = _ARRAY.fullmatch(text)
    if match and _is_dtype_name(match[1]):
        if match[2] is None:
            return ArraySpec(np.dtype(match[1]), None)
        dims = tuple(int(d) for d in match[2].split(",") if d.strip())
        return ArraySpec(np.dtype(match[1]), dims)
    lowered = {"true": True, "false": False, "none": None}
    if text.lower() in lowered:
        return lowered[text.lower()]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = ...
    if not isinstance(value, (bool, int, float, complex, str, tuple, type(None))):
        raise UsageError(f"cannot read the argument spec {text!r}",
                         hint="Write an array as DTYPE[DIMS] (float32[64,10]; float64[] is 0-d), "
                              "a numpy scalar as its dtype (float32), or a Python value: 5, 0.1, "
                              "True, 'relu', (2, 3).")
    return value


def _made(name: str, spec: ArraySpec, rng: np.random.Generator) -> Any:
    """``spec``'s example value, or a UsageError where it would not fit in memory (checked
    before numpy allocates: with overcommit, a too large array is killed while it is filled)."""
    size = math.prod(spec.shape or ()) * spec.dtype.itemsize
    problem = f"more than this machine's memory ({_memory() / 2 ** 30:.3g} GiB)" \
        if size > _memory() else ""
    if not problem:
        try:
            return spec.make(rng)
        except (MemoryError, ValueError, OverflowError) as e:
            problem = f"{type(e).__name__}: {e}"
    raise UsageError(f"--arg {name}={spec}: its example values ({size / 2 ** 30:.3g} GiB) "
                     f"cannot be made: {problem}",
                     hint="The function is traced on an array of that shape, and the gradient "
                          "compiled for it: give a shape that fits in memory.")


def _memory() -> float:
    """The machine's physical memory in bytes (inf where the OS does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return math.inf


def _is_dtype_name(name: str) -> bool:
    try:
        return np.dtype(name).name == name
    except TypeError:
        return False


def args_from_specs(fn: Callable, specs: Sequence[str]) -> tuple[tuple, tuple[str, ...]]:
    """(arguments, canonical specs in parameter order) for ``fn`` from ``NAME=SPEC`` texts."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in params]
    given: dict[str, Any] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--arg {spec!r}: write NAME=SPEC, e.g. --arg 'W=float64[128,784]'")
        if name not in names:
            raise UsageError(f"--arg {name}: {fn.__name__} has no parameter {name!r}",
                             hint=f"Its parameters: {', '.join(names) or '(none)'}.")
        if name in given:
            raise UsageError(f"--arg {name} is given twice")
        given[name] = parse_spec(text)
    last = max((names.index(n) for n in given), default=-1)
    missing = [p.name for p in params[:last + 1] if p.name not in given and p.default is p.empty]
    missing += [p.name for p in params[last + 1:] if p.default is p.empty]
    if missing:
        raise UsageError(f"{fn.__name__} needs --arg {missing[0]}=SPEC",
                         hint=f"Give every parameter without a default: {', '.join(missing)}.")
    rng = np.random.default_rng(0)
    args, canonical = [], []
    for p in params[:last + 1]:
        spec = given.get(p.name, p.default)
        args.append(_made(p.name, spec, rng) if isinstance(spec, ArraySpec) else spec)
        if p.name in given:
            canonical.append(f"{p.name}={spec if isinstance(spec, ArraySpec) else repr(spec)}")
    return tuple(args), tuple(canonical)
