"""Collecting mode: every problem in a function in one pass, each with a fix to paste.

Normally the first construct the frontend cannot handle stops the trace. With a ``Collector`` on
the evaluator (``Evaluator.collector``):

- a call that has neither a derivative rule nor source to inline is recorded (a ``NoRuleError``
  whose hint is a ``rule_stub``), and the trace goes on with the real function's result on the
  example values, as an opaque constant through which no gradient flows;
- an unsupported statement (``UnsupportedSyntax``) is recorded and skipped.

A tape traced this way only serves to find problems and is never compiled. An error of another
kind, typically a consequence of a skipped statement (a name it would have bound), ends the
trace; the caller reports what was recorded before it, or that error if nothing was.
"""
from __future__ import annotations

import inspect
import linecache
import os
from typing import Any

import gast
import numpy as np

from ..errors import SourceLoc, YotaError
from ..ir.tape import Var
from ..ir.values import is_traced
from .resolve import display_name


class Collector:
    """The problems found so far, in the order met, each place reported once."""

    def __init__(self) -> None:
        self.problems: list[YotaError] = []
        self._seen: set[tuple] = set()

    def record(self, error: YotaError) -> None:
        loc = error.loc
        key = (type(error), error.what, loc.file if loc else None, loc.line if loc else None)
        if key not in self._seen:
            self._seen.add(key)
            self.problems.append(error)


def skip_call(ev: Any, error: YotaError, fn: Any, args: list, kwargs: dict) -> Any:
    """Raise ``error``; when collecting, record it and return ``fn``'s result on the examples."""
    if ev.collector is None:
        raise error
    ev.collector.record(error)
    try:
        return fn(*_concrete(ev, args), **_concrete(ev, kwargs))
    except Exception:
        raise error from None


def _concrete(ev: Any, value: Any) -> Any:
    if isinstance(value, Var):
        return ev.values[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_concrete(ev, v) for v in value)
    if isinstance(value, dict):
        return {k: _concrete(ev, v) for k, v in value.items()}
    return value


def rule_stub(fn: Any, args: list, kwargs: dict, func_loc: SourceLoc | None) -> str:
    """How to fix a missing rule, as lines to paste into the file that makes the call::

        ys.diffrule(np.sort, "a", "<expr in a, y, dy>")
        ys.nodiff(np.sort)

    ``fn`` is named as the call site writes it; one ``diffrule`` per parameter that receives a
    traced value; a ``ys.primitive`` declaration first where Python cannot read ``fn``'s
    parameters (functions written in C).
    """
    name = _written_name(func_loc) or display_name(fn)
    names, spec = _traced_params(fn, args, kwargs)
    lines = [f'ys.primitive({name}, "{spec}")'] if spec is not None else []
    lines += [f'ys.diffrule({name}, "{p}", "<expr in {p}, y, dy>")' for p in names]
    lines.append(f"ys.nodiff({name})")
    where = f" to {os.path.basename(func_loc.file)}" if func_loc else ""
    return (f"Add a rule{where} (fill in <...>; y is the result, dy the incoming gradient) or "
            "mark it non-differentiable:\n    " + "\n    ".join(lines))


def _written_name(loc: SourceLoc | None) -> str | None:
    """The callee as the source writes it (``special.erf``), if it is a plain dotted name."""
    if loc is None or loc.end_col is None:
        return None
    text = linecache.getline(loc.file, loc.line)[loc.col:loc.end_col]
    try:
        node = gast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    while isinstance(node, gast.Attribute):
        node = node.value
    return text if isinstance(node, gast.Name) else None


def _traced_params(fn: Any, args: list, kwargs: dict) -> tuple[list[str], str | None]:
    """(parameters given traced values, a primitive spec when the signature cannot be read)."""
    if isinstance(fn, np.ufunc):
        names = ["x"] if fn.nin == 1 else [f"x{i + 1}" for i in range(fn.nin)]
        return [n for n, a in zip(names, args) if is_traced(a)], None
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        names = ["x"] if len(args) == 1 else [f"x{i + 1}" for i in range(len(args))]
        spec = ", ".join(names + [f"{k}=None" for k in kwargs])
        return [n for n, a in zip(names, args) if is_traced(a)], spec
    return [p for p, value in bound.arguments.items() if is_traced(value)], None
