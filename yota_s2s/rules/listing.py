"""``ys.rules()``: the registered primitives and their rules, as text for a terminal.

    >>> ys.rules("exp")
    exp(x)
        x  dy * y                   elementwise.py:14
    exp2(x)
        x  dy * y * np.log(2.0)     elementwise.py:15
    expm1(x)
        x  dy * (y + 1)             elementwise.py:16
    ...
    >>> ys.rules(logistic)
    model.logistic(x)
        x  y * (1 - y) * dy     model.py:7

One block per primitive, in registration order: its signature (with the functions that are
aliases of it), then one line per operand with its rule and where it was registered, or
``no gradient (nodiff)``, or ``no rule``. A filter picks primitives by function or by a piece
of their name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.printer import format_static
from ..ir.tape import Primitive
from .registry import NODIFF_ALL, RULES, RuleSet

WHERE_COLUMN = 72     # where the "registered at" column starts, at most


@dataclass(frozen=True)
class RuleListing:
    """What ``ys.rules()`` returns: prints as the table; ``prims`` are the primitives listed."""

    prims: tuple[Primitive, ...]
    text: str

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def list_rules(match: Any = None, rules: RuleSet = RULES) -> RuleListing:
    """The primitives of ``rules`` (those of ``match``: a function, or part of a name), with
    every optional family whose library is installed."""
    rules.load_all()
    names: dict[Primitive, list[str]] = {}
    for fn, prim in rules.prims.items():
        names.setdefault(prim, []).append(_fn_name(fn))
    prims = tuple(p for p in names if _matches(p, names[p], match, rules))
    rows = [row for p in prims for row in _rows(p, names[p], rules)]
    column = min(max((len(left) for left, where in rows if where), default=0) + 2, WHERE_COLUMN)
    text = "\n".join(f"{left:<{column}}{where}".rstrip() if where else left for left, where in rows)
    return RuleListing(prims, text or f"no primitive matches {match!r}")


def _matches(prim: Primitive, fn_names: list[str], match: Any, rules: RuleSet) -> bool:
    if match is None:
        return True
    if isinstance(match, str):
        return any(match in n for n in [prim.name, *fn_names])
    return rules.lookup(match) is prim


def _rows(prim: Primitive, fn_names: list[str], rules: RuleSet) -> list[tuple[str, str]]:
    """(text, where registered) for the primitive's heading and each of its operands."""
    params = list(prim.operands) + [f"{k}={format_static(v)}" for k, v in prim.options]
    head = f"{prim.name}({', '.join(params)})"
    if prim.emit[:1] in (("binop",), ("unop",), ("cmp",)):
        head += f"  [{prim.emit[1]}]"
    aliases = sorted({n for n in fn_names if n not in (prim.name, f"np.{prim.name}")
                      and not prim.name.endswith("." + n)})
    if aliases:
        head += f"  also {', '.join(aliases)}"
    marks = rules.nodiffs.get(prim, set())
    if NODIFF_ALL in marks or not prim.nout:
        return [(f"{head}  no gradient ({'nodiff' if prim.nout else 'no result'})", "")]
    rows = [(head, "")]
    width = max(len(o) for o in prim.operands)
    for operand in prim.operands:
        rule = rules.rule(prim, operand.lstrip("*"))
        if operand.lstrip("*") in marks:
            rows.append((f"    {operand:<{width}}  no gradient (nodiff)", ""))
        elif rule is None:
            rows.append((f"    {operand:<{width}}  no rule", ""))
        else:
            where = rule.loc.short if rule.loc else ""
            rows.append((f"    {operand:<{width}}  {rule.text}", where))
    return rows


def _fn_name(fn: Any) -> str:
    """How a user writes the function: ``np.add``, ``operator.mul``, ``math.exp``, ``logistic``."""
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", None) or repr(fn)
    if module.startswith("numpy") or type(fn).__name__ == "ufunc":
        return f"np.{name}"
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    return f"{module}.{name}" if module == "math" else name
