"""Rule templates: parsing and checking a rule when it is registered, binding it when it is used.

A one-line rule is a Python expression over placeholders: the primitive's parameter names,
``y`` (its result) and ``dy`` (the incoming gradient). ``**kw`` in a call inside the rule (any
name that is not a placeholder) forwards the keyword options given at the primitive's call::

    diffrule(conv2d, "x", "conv2d_grad_data(dy, w, x.shape, **kw)")

Any other free name must resolve where the rule was registered (``np``, ``math``, a user helper
defined above the rule). A multi-line rule is a function whose parameters are placeholders; a
``**kw`` parameter receives the options it does not name. Errors point at the line that
registered the rule, so a typo fails at import time, not at the first gradient.

Instantiation is not done here: the frontend evaluates the expression (or inlines the rule
function) with ``bind``'s placeholders, so a rule becomes ordinary tape statements.
"""
from __future__ import annotations

import builtins
import inspect
import linecache
import types
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..errors import RuleError, SourceLoc
from ..ir.tape import Primitive

if TYPE_CHECKING:
    import gast            # imported where a rule is parsed: not at ``import yota_s2s``

RESULT, GRADIENT = "y", "dy"


def spelled(fn: Any) -> str:
    """How the registering code writes ``fn``: ``np.tanh``, ``math.exp``, ``operator.mul``,
    ``logistic``."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    module = getattr(fn, "__module__", None) or ""
    if isinstance(fn, np.ufunc) or module.startswith("numpy"):
        return f"np.{name}"
    if module in ("math", "_operator", "operator"):
        return f"{module.lstrip('_')}.{name}"
    return name


def is_static(value: Any) -> bool:
    """In a rule function: is ``value`` known when the gradient is compiled (a literal operand
    such as the ``3`` of ``x ** 3``, an option), not a traced value? A rule branches on it to
    keep the cheaper gradient of a literal (the frontend answers it; run as plain Python, as
    ``diffrule`` checks run, every value is static)."""
    return True


def _option_example(prim: Primitive) -> str:
    return f'ys.primitive({spelled(prim.fn)}, "{", ".join(prim.operands)}, option=default")'


def placeholders(prim: Primitive, loc: SourceLoc) -> set[str]:
    """The names a rule for ``prim`` may use: operands, options, ``y`` and ``dy``."""
    names = {o.lstrip("*") for o in prim.operands} | {o for o, _ in prim.options}
    clash = sorted(names & {RESULT, GRADIENT})
    if clash:
        name = spelled(prim.fn)
        raise RuleError(f"{name} has a parameter named {clash[0]!r}, which rules use for the "
                        "result (y) and its gradient (dy)", loc,
                        f"Declare it with other names first, e.g. ys.primitive({name}, "
                        f"\"{', '.join(_renamed(o) for o in prim.operands)}\").")
    return names | {RESULT, GRADIENT}


def _renamed(operand: str) -> str:
    return {RESULT: "y_", GRADIENT: "dy_"}.get(operand, operand)


def parse_rule_expr(text: str, loc: SourceLoc) -> gast.expr:
    import gast
    try:
        return gast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise RuleError(f"the rule {text!r} is not a Python expression ({e.msg})", loc) from None


def free_names(expr: gast.AST) -> set[str]:
    """Names an expression reads that it does not bind itself (lambdas, comprehensions)."""
    import gast
    bound: set[str] = set()
    for node in gast.walk(expr):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Param)):
            bound.add(node.id)
    return {n.id for n in gast.walk(expr)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)} - bound


def forwarded_kwargs(expr: gast.expr, allowed: set[str], prim: Primitive,
                     loc: SourceLoc) -> str | None:
    """The name in ``f(..., **kw)`` that stands for the call's keyword options, if any."""
    import gast
    names = sorted({kw.value.id for node in gast.walk(expr) if isinstance(node, gast.Call)
                    for kw in node.keywords
                    if kw.arg is None and isinstance(kw.value, gast.Name)} - allowed)
    name = spelled(prim.fn)
    if len(names) > 1:
        raise RuleError(f"the rule for {name} forwards keyword options under two names, "
                        f"{' and '.join(map(repr, names))}", loc, "Use one name, e.g. **kw.")
    if names and not prim.options:
        raise RuleError(f"the rule for {name} forwards **{names[0]}, but {name} has no keyword "
                        "options", loc, f"Declare them before the rule: {_option_example(prim)}.")
    return names[0] if names else None


def check_rule_expr(expr: gast.expr, allowed: set[str], env: dict, prim: Primitive,
                    loc: SourceLoc) -> None:
    unknown = sorted(n for n in free_names(expr)
                     if n not in allowed and n not in env and not hasattr(builtins, n))
    if unknown:
        name = spelled(prim.fn)
        raise RuleError(f"the rule for {name} uses {', '.join(map(repr, unknown))}, which is "
                        f"neither a parameter of {name} nor defined where the rule is registered",
                        loc, f"Rules may use: {', '.join(sorted(allowed))}, and names defined "
                        "above the rule in its module (np, math, your helpers).")


def rule_parameters(fn: Callable) -> tuple[tuple[str, ...], str | None]:
    """A rule function's parameter names, in order, and the name of its ``**kw`` parameter (or
    None), as ``inspect.signature`` gives them; a plain function's read from its code, ten times
    faster (hundreds of rule functions at import, one per use in a gradient)."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__") \
            or hasattr(fn, "__signature__"):
        params = inspect.signature(fn).parameters.values()
        return (tuple(p.name for p in params),
                next((p.name for p in params if p.kind is p.VAR_KEYWORD), None))
    code = fn.__code__
    n, k, names = code.co_argcount, code.co_kwonlyargcount, code.co_varnames
    star = (names[n + k],) if code.co_flags & inspect.CO_VARARGS else ()
    kwargs = names[n + k + len(star)] if code.co_flags & inspect.CO_VARKEYWORDS else None
    return names[:n] + star + names[n:n + k] + ((kwargs,) if kwargs else ()), kwargs


def check_rule_function(fn: Callable, allowed: set[str], prim: Primitive) -> str | None:
    """Check a rule function's parameters; return the name of its ``**kw`` parameter, if any."""
    params, kwargs = rule_parameters(fn)
    unknown = [p for p in params if p != kwargs and p not in allowed]
    name = spelled(prim.fn)
    if unknown:
        raise RuleError(f"rule function {fn.__name__} takes {', '.join(map(repr, unknown))}, "
                        f"which {name} does not have", function_loc(fn),
                        f"Its parameters must come from: {', '.join(sorted(allowed))}.")
    if kwargs is not None and not prim.options:
        raise RuleError(f"rule function {fn.__name__} takes **{kwargs}, but {name} has no "
                        "keyword options", function_loc(fn),
                        f"Declare them first: {_option_example(prim)}.")
    return kwargs


def function_loc(fn: Callable) -> SourceLoc:
    code = fn.__code__
    text = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    return SourceLoc(code.co_filename, code.co_firstlineno, func=fn.__name__, text=text)


def unread_options(rule: Any, given: dict[str, Any]) -> list[str]:
    """The options a call sets (``given``) that ``rule`` neither reads nor forwards with
    ``**kw`` nor declares ``ignores``: its gradient would be that of another call."""
    if rule.kwargs or rule.scatter or not given:
        return []
    if rule.fn is not None:
        read = set(rule_parameters(rule.fn)[0])
    else:
        read = free_names(rule.expr)
    return [name for name in given if name not in read and name not in rule.ignores]


def check_options(rule: Any, given: dict[str, Any], call: SourceLoc | None) -> None:
    """Refuse a call whose options ``rule`` would silently ignore (``b=W`` of a logsumexp
    rule written for ``axis`` and ``keepdims`` only)."""
    unread = unread_options(rule, given)
    if not unread:
        return
    name, where = spelled(rule.prim.fn), f" at {call.short}" if call else ""
    shown = ", ".join(f"{o}={_shown(given[o])}" for o in unread)
    example = (f"def {rule.fn.__name__}(..., {unread[0]}=None)" if rule.fn is not None
               else f"use {unread[0]} in the expression")
    raise RuleError(f"{name} is called with {shown}{where}, but its rule for {rule.argname!r} "
                    f"({rule.text}) does not take {unread[0]!r}: the gradient would ignore it",
                    rule.loc, f"Make the rule use it ({example}), forward the options with "
                    f"**kw, or, if it does not change this gradient, say so: ys.diffrule({name}, "
                    f"\"{rule.argname}\", ..., ignores=(\"{unread[0]}\",)).")


def _shown(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{value.dtype} array of shape {tuple(value.shape)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def bind(rule: Any, env: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Placeholder values for one use of ``rule`` (a ``registry.Rule``).

    ``env`` holds every placeholder (options at their call value or default); ``given`` the
    options the call actually set, which is what ``**kw`` forwards. For an expression the
    result is its namespace; for a function, its keyword arguments.
    """
    if rule.fn is None:
        return {**env, rule.kwargs: dict(given)} if rule.kwargs else dict(env)
    params, kwargs = rule_parameters(rule.fn)
    named = {k: env[k] for k in params if k in env and k != kwargs}
    if kwargs is not None:
        named.update((k, v) for k, v in given.items() if k not in named)
    return named
