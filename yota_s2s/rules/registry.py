"""The RuleSet: which callables are primitives, and their derivative rules.

A primitive is declared with its signature in numpy's own parameter names::

    primitive(np.sum, "a, axis=None, dtype=None, keepdims=False")

Parameters without a default are *operands* (given positionally, traced or literal); those with
a default are static *options* (keywords, printed as ``[axis=1]``). A rule is one expression per
differentiable operand, written in those names plus ``y`` (the result) and ``dy`` (the incoming
gradient)::

    diffrule(np.tanh, "x", "dy * (1 - y * y)")

or an ordinary Python function whose parameters are such names and which returns the gradient;
the frontend inlines it like user code, so shape branches are decided at compile time::

    @diffrule(np.sum, "a")
    def sum_grad(a, dy, axis=None, keepdims=False):
        ...

There is one default ``RuleSet`` (``RULES``); tests can ``copy()`` it.
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any, Callable

import gast
import numpy as np

from ..errors import RuleError, SourceLoc
from ..ir.tape import Primitive
from .template import check_rule_expr, parse_rule_expr, rule_function_params

NODIFF_ALL = "*"


@dataclass(frozen=True)
class Rule:
    """The derivative of ``prim`` with respect to its operand ``argname``."""

    prim: Primitive
    argname: str
    text: str                        # the expression, or "name(params)" of a rule function
    expr: gast.expr | None = None    # one-line rules
    fn: Callable | None = None       # multi-line rules (inlined by the frontend)
    scatter: bool = False            # d a[key] += dy, accumulated per array (see backward.py)
    globals: dict | None = None      # where names in ``expr`` resolve (np, math, user helpers)
    loc: SourceLoc | None = None     # where the rule was registered

    def __str__(self) -> str:
        return f"{self.prim.name} {self.argname}: {self.text}"


def parse_signature(spec: str) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """``"a, axis=None, keepdims=False"`` -> (("a",), (("axis", None), ("keepdims", False)))."""
    node = gast.parse(f"def _({spec}): pass").body[0].args
    names = [a.id for a in node.args]
    defaults = [gast.literal_eval(d) for d in node.defaults]
    n_required = len(names) - len(defaults)
    operands = tuple(names[:n_required])
    if node.vararg is not None:
        operands += ("*" + node.vararg.id,)
    options = tuple(zip(names[n_required:], defaults))
    options += tuple((a.id, gast.literal_eval(d)) for a, d in zip(node.kwonlyargs, node.kw_defaults))
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


def _default_spec(fn: Any) -> str:
    if isinstance(fn, np.ufunc):
        return {1: "x", 2: "x1, x2"}.get(fn.nin) or ", ".join(f"x{i + 1}" for i in range(fn.nin))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise RuleError(f"cannot read the parameters of {fn!r}; declare them with "
                        f"ys.primitive({getattr(fn, '__name__', fn)}, \"x, axis=None\")") from None
    return str(sig)[1:-1].replace("/, ", "").replace(", /", "")


def _caller_loc() -> tuple[SourceLoc, dict]:
    """Where the user (or a built-in rule file) registered a rule: the first frame outside here."""
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    info = inspect.getframeinfo(frame, context=1)
    text = (info.code_context or [""])[0].strip()
    return SourceLoc(info.filename, info.lineno, text=text), frame.f_globals


class RuleSet:
    def __init__(self) -> None:
        self.prims: dict[Any, Primitive] = {}
        self.rules: dict[tuple[Primitive, str], Rule] = {}
        self.nodiffs: dict[Primitive, set[str]] = {}
        self.version = 0          # bumped on every change: compiled code keyed on it goes stale

    def copy(self) -> "RuleSet":
        new = RuleSet()
        new.prims, new.rules = dict(self.prims), dict(self.rules)
        new.nodiffs = {p: set(s) for p, s in self.nodiffs.items()}
        return new

    # -- declaring ---------------------------------------------------------------------------

    def primitive(self, fn: Any, spec: str | None = None, *, name: str | None = None,
                  emit: tuple | None = None, nout: int = 1, **flags: Any) -> Primitive:
        """Declare ``fn`` a primitive (idempotent unless a new spec is given)."""
        if fn in self.prims and spec is None and name is None and emit is None:
            return self.prims[fn]
        operands, options = parse_signature(spec if spec is not None else _default_spec(fn))
        path = numpy_path(fn)
        if name is None:
            name = path or _qualified_name(fn)
        if emit is None:
            emit = ("call", "xp." + path) if path else ("call", _qualified_name(fn))
        prim = Primitive(name, fn, operands, options, emit, nout, **flags)
        self.prims[fn] = prim
        self.version += 1
        return prim

    def alias(self, fn: Any, target: Any) -> None:
        """Calls to ``fn`` become the primitive of ``target`` (``np.add`` -> ``+``)."""
        self.prims[fn] = self.prims[target]
        self.version += 1

    def diffrule(self, fn: Any, argname: str, rule: str | Callable | None = None):
        """Register ``rule`` as the derivative of ``fn`` with respect to ``argname``."""
        if rule is None:          # used as a decorator
            def register(rule_fn: Callable) -> Callable:
                self.diffrule(fn, argname, rule_fn)
                return rule_fn
            return register
        prim = self.primitive(fn)
        loc, env = _caller_loc()
        self._check_argname(prim, argname, loc)
        placeholders = set(prim.operands) | {o for o, _ in prim.options} | {"y", "dy"}
        placeholders = {p.lstrip("*") for p in placeholders}
        if callable(rule):
            rule_function_params(rule, placeholders, prim.name)
            entry = Rule(prim, argname, f"{rule.__name__}(...)", fn=rule, loc=loc)
        else:
            expr = parse_rule_expr(rule, loc)
            check_rule_expr(expr, placeholders, env, prim.name, loc)
            entry = Rule(prim, argname, rule.strip(), expr=expr, globals=env, loc=loc)
        self.rules[(prim, argname)] = entry
        self.nodiffs.get(prim, set()).discard(argname)
        self.version += 1
        return rule

    def scatter_rule(self, fn: Any, argname: str) -> None:
        """``d a[key] += dy``: contributions to one array accumulate in a single buffer."""
        prim = self.primitive(fn)
        loc, _ = _caller_loc()
        self.rules[(prim, argname)] = Rule(prim, argname, "d{a}[key] += dy", scatter=True, loc=loc)
        self.version += 1

    def nodiff(self, fn: Any, argname: str | None = None) -> Any:
        """No gradient flows through ``fn`` (or through its operand ``argname``)."""
        prim = self.primitive(fn)
        if argname is not None:
            self._check_argname(prim, argname, _caller_loc()[0])
        self.nodiffs.setdefault(prim, set()).add(argname or NODIFF_ALL)
        self.version += 1
        return fn

    def _check_argname(self, prim: Primitive, argname: str, loc: SourceLoc) -> None:
        names = [o.lstrip("*") for o in prim.operands]
        if argname not in names:
            raise RuleError(f"{prim.name} has no operand named {argname!r}", loc,
                            f"Its operands are: {', '.join(names) or '(none)'}.")

    # -- looking up --------------------------------------------------------------------------

    def lookup(self, fn: Any) -> Primitive | None:
        try:
            return self.prims.get(fn)
        except TypeError:         # unhashable callables are never primitives
            return None

    def rule(self, prim: Primitive, argname: str) -> Rule | None:
        return self.rules.get((prim, argname))

    def is_nodiff(self, prim: Primitive, argname: str) -> bool:
        marks = self.nodiffs.get(prim, ())
        return NODIFF_ALL in marks or argname in marks


def _qualified_name(fn: Any) -> str:
    """``math.exp`` -> "math.exp"; builtins and operators by their bare name."""
    module = getattr(fn, "__module__", None) or ""
    if module in ("", "builtins", "_operator", "operator"):
        return fn.__name__
    return f"{module}.{fn.__qualname__}"


RULES = RuleSet()
primitive = RULES.primitive
alias = RULES.alias
scatter_rule = RULES.scatter_rule
nodiff = RULES.nodiff
diffrule = RULES.diffrule
