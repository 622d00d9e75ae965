"""Rule templates: parsing and checking a rule when it is registered.

A one-line rule is a Python expression over placeholders: the primitive's parameter names,
``y`` (its result) and ``dy`` (the incoming gradient). Any other free name must resolve in the
module that registered the rule (``np``, ``math``, a user helper). Errors point at the line that
registered the rule, so a typo fails at import time, not at the first gradient.

Instantiation is not done here: the frontend evaluates the expression (or inlines the rule
function) with placeholders bound to tape values, so a rule becomes ordinary tape statements.
"""
from __future__ import annotations

import builtins
import inspect
from typing import Callable, Iterable

import gast

from ..errors import RuleError, SourceLoc


def parse_rule_expr(text: str, loc: SourceLoc) -> gast.expr:
    try:
        return gast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise RuleError(f"the rule {text!r} is not a Python expression ({e.msg})", loc) from None


def free_names(expr: gast.AST) -> set[str]:
    """Names an expression reads that it does not bind itself (lambdas, comprehensions)."""
    bound: set[str] = set()
    for node in gast.walk(expr):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Param)):
            bound.add(node.id)
    return {n.id for n in gast.walk(expr)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)} - bound


def check_rule_expr(expr: gast.expr, placeholders: Iterable[str], env: dict, prim: str,
                    loc: SourceLoc) -> None:
    allowed = set(placeholders)
    unknown = sorted(n for n in free_names(expr)
                     if n not in allowed and n not in env and not hasattr(builtins, n))
    if unknown:
        raise RuleError(f"the rule for {prim} uses {', '.join(map(repr, unknown))}, which is "
                        f"neither a parameter of {prim} nor defined where the rule is registered",
                        loc, f"Rules may use: {', '.join(sorted(allowed))}, and module-level names.")


def rule_function_params(fn: Callable, placeholders: Iterable[str], prim: str) -> None:
    allowed = set(placeholders)
    params = inspect.signature(fn).parameters
    unknown = [p for p in params if p not in allowed]
    if unknown:
        code = fn.__code__
        loc = SourceLoc(code.co_filename, code.co_firstlineno, func=fn.__name__)
        raise RuleError(f"rule function {fn.__name__} takes {', '.join(map(repr, unknown))}, "
                        f"which {prim} does not have", loc,
                        f"Its parameters must come from: {', '.join(sorted(allowed))}.")
