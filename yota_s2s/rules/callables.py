"""What a callable is as a primitive, read from the callable itself: its operands and options
(its signature, or the spec it is declared with), the name it is printed by, how generated code
calls it, and the traits it has by default; numpy's functions that write in place, which are
never primitives; and the opaque primitives of calls that need no gradient.

The RuleSet (registry.py) declares primitives with these; the frontend asks them about calls it
meets (``is_mutator``, ``opaque_primitive``, ``numpy_path``).
"""
from __future__ import annotations

import ast
import inspect
import keyword
import sys
import types
from typing import Any

import numpy as np

from ..errors import RuleError, SourceLoc
from ..ir.tape import Primitive
from .template import spelled

# numpy functions that write into their first argument and return None. A call is an update of
# that array, never a primitive: a primitive's result is what it returns, so a rule (or nodiff)
# would record a call whose write is lost. The frontend records the supported ones (True) as
# updates (frontend/numpy_calls.py, as ``a[key] = v`` is recorded); the others are refused.
MUTATORS = {np.fill_diagonal: True, np.put: True, np.putmask: True, np.place: True,
            np.add.at: True, np.copyto: False, np.put_along_axis: False}


def mutator_hint(fn: Any) -> str:
    """What to write instead of registering (or marking nodiff) a function that writes in
    place."""
    if MUTATORS.get(fn):
        return (f"{spelled(fn)} is differentiated as an update of the array it writes (no rule "
                "needed); to stop the gradient through the values written, pass "
                "ys.stop_gradient(values).")
    return ("Write the update with indexing, which is differentiated: `a[key] = v`, "
            "`a[mask] = v`, or `a = np.where(mask, v, a)`.")


def parse_signature(spec: str) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """``"a, axis=None, keepdims=False"`` -> (("a",), (("axis", None), ("keepdims", False)))."""
    names = [n.strip() for n in spec.split(",")]
    if all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return tuple(names), ()          # "x1, x2": operands only, nothing to parse
    node = ast.parse(f"def _({spec}): pass").body[0].args     # ast: gast's conversion costs
    names = [a.arg for a in node.args]
    defaults = [ast.literal_eval(d) for d in node.defaults]
    n_required = len(names) - len(defaults)
    operands = tuple(names[:n_required])
    if node.vararg is not None:
        operands += ("*" + node.vararg.arg,)
    options = tuple(zip(names[n_required:], defaults))
    options += tuple((a.arg, ast.literal_eval(d))
                     for a, d in zip(node.kwonlyargs, node.kw_defaults))
    return operands, options


def numpy_path(fn: Any) -> str | None:
    """``np.linalg.inv`` -> ``"linalg.inv"``; None when ``fn`` is not a public numpy callable."""
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    for prefix, module in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
        if getattr(module, name, None) is fn:
            return prefix + name
    return None


def read_signature(fn: Any, loc: SourceLoc) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """Operands and options read from ``fn``'s own signature (ufuncs: ``x`` or ``x1, x2``)."""
    if isinstance(fn, np.ufunc):
        return ("x",) if fn.nin == 1 else tuple(f"x{i + 1}" for i in range(fn.nin)), ()
    positional = _positional_builtin(fn)
    if positional is not None:
        return positional, ()
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        raise RuleError(f"cannot read the parameters of {spelled(fn)}", loc,
                        f"Declare them: ys.primitive({spelled(fn)}, \"x, axis=None\").") from None
    operands, options = [], []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            operands.append("*" + p.name)
        elif p.default is not p.empty:
            options.append((p.name, p.default))
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            operands.append(p.name)
        else:
            what = f"**{p.name}" if p.kind is p.VAR_KEYWORD else f"the keyword {p.name!r}"
            raise RuleError(f"{spelled(fn)} takes {what}; a primitive's options need names and "
                            "defaults", loc, f"Declare them: ys.primitive({spelled(fn)}, "
                            f"\"{', '.join(operands + ['option=default'])}\").")
    return tuple(operands), tuple(options)



def _positional_builtin(fn: Any) -> tuple[str, ...] | None:
    """A builtin's parameters when its text signature names positional ones only (``math.exp``:
    ``($module, x, /)``), read without ``inspect``, which tokenizes the text (a millisecond
    each, for math's functions at import); None for any other callable."""
    text = getattr(fn, "__text_signature__", None) \
        if isinstance(fn, types.BuiltinFunctionType) else None
    if not text or text[0] != "(" or text[-1] != ")":
        return None
    names = [n.strip() for n in text[1:-1].split(",")]
    names = [n for n in names[names[0].startswith("$"):] if n != "/"]
    return tuple(names) if all(n.isidentifier() for n in names) else None


def call_emit(fn: Any, module: str | None) -> tuple:
    """How generated code calls ``fn``: ``xp.tanh``, ``math.exp``, ``abs``, or a user function
    ``("call", qualname, module)`` that the generated module imports (see codegen/imports.py)."""
    path = numpy_path(fn)
    if path is not None and module is None:
        return ("call", "xp." + path)
    module = module or getattr(fn, "__module__", None) or ufunc_home(fn) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    if module in ("", "builtins", "_operator", "operator"):
        return ("call", name)
    if module == "math":
        return ("call", f"math.{name}")
    return ("call", name, module)


def ufunc_home(fn: Any) -> str | None:
    """The module that exports a ufunc that has no ``__module__``: numpy for its own (before
    numpy 2.1), else where it is found (scipy.special's: generated code imports it from there,
    ``from scipy.special import erf``)."""
    if not isinstance(fn, np.ufunc):
        return None
    if numpy_path(fn) is not None:
        return "numpy"          # numpy's own: they have a __module__ from numpy 2.1 only
    for module in UFUNC_HOMES:
        found = sys.modules.get(module)
        if found is not None and getattr(found, fn.__name__, None) is fn:
            return module
    return None


UFUNC_HOMES = ["scipy.special"]



def optional_operands(required: tuple[str, ...], options: tuple, operands: str | None,
                       loc: SourceLoc) -> tuple[tuple[str, Any], ...]:
    """The options that ``operands`` makes operands (the first ones: calls give them by
    position), with their defaults."""
    if operands is None:
        return ()
    names = tuple(n.strip() for n in operands.split(",") if n.strip())
    order = required + tuple(n for n, _ in options)
    if names != order[:len(names)] or len(names) < len(required):
        raise RuleError(f"operands={operands!r} must name the first parameters of the spec, in "
                        f"order: {', '.join(order)}", loc,
                        "Operands come first; the parameters after them are static options.")
    return options[:len(names) - len(required)]


def is_mutator(fn: Any) -> bool:
    """Is ``fn`` one of numpy's functions that write into an argument (``MUTATORS``)?"""
    try:
        return fn in MUTATORS
    except TypeError:
        return False



def default_traits(fn: Any) -> dict[str, Any]:
    """A numpy ufunc is elementwise with an ``out=`` form; a user's function takes its
    operands as given (a list stays a list for its rule); other functions declare their
    traits (``view=True``, ``method="sum"``...) beside their rules."""
    is_numpy_ufunc = isinstance(fn, np.ufunc) and numpy_path(fn) is not None
    module = getattr(fn, "__module__", None) or ufunc_home(fn) or ""
    library = module.split(".")[0] in LIBRARIES
    return {"ufunc": fn if is_numpy_ufunc else None,
            "elementwise": isinstance(fn, np.ufunc) or getattr(fn, "__module__", None) == "math",
            "sequences": () if library else ("*",)}


# Whose functions read a list operand as numpy does, as an array (see TRAITS["sequences"]).
LIBRARIES = frozenset({"numpy", "scipy", "cupy", "math", "operator", "_operator", "builtins",
                       "yota_s2s"})



def qualified_name(fn: Any, module: str | None = None) -> str:
    """``math.exp`` -> "math.exp", ``logistic`` -> "model.logistic": the name printed for a
    function declared without one (only for reading: passes and codegen never look at it)."""
    module = module or getattr(fn, "__module__", None) or ufunc_home(fn) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    return name if module in ("", "builtins", "_operator", "operator") else f"{module}.{name}"



class _Given:
    """The default of an option of an opaque call: never equal to a value, so every keyword the
    call gives is passed on."""

    def __repr__(self) -> str:
        return "<given>"


GIVEN = _Given()
_opaque: dict[tuple, Primitive] = {}


def opaque_primitive(fn: Any, keywords: tuple[str, ...], nout: int) -> Primitive:
    """A primitive for a library call through which no gradient flows (``np.meshgrid`` of
    integer arrays, ``np.convolve`` inside a rule): recorded as a call with its positional
    arguments as operands and its keywords as options, and no rules. Not declared in any
    RuleSet: the frontend makes one where the call needs no gradient (see frontend/calls.py)."""
    key = (fn, keywords, nout)
    prim = _opaque.get(key)
    if prim is None:
        prim = Primitive(numpy_path(fn) or qualified_name(fn), fn, ("*args",),
                         tuple((k, GIVEN) for k in keywords), call_emit(fn, None), nout,
                         **default_traits(fn))
        _opaque[key] = prim
    return prim
