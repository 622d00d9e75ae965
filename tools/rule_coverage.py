"""Write docs/coverage.md from the rule registry: what yota_s2s differentiates and how, what it
records without a gradient, and what the frontend writes with other primitives.

``python tools/rule_coverage.py`` rewrites the page; ``--check`` exits 1 when it is stale
(tests/test_rules.py runs the check). The page depends only on the registry, so it is the
same on every machine.
"""
from __future__ import annotations

import inspect
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PAGE = ROOT / "docs" / "coverage.md"

HEADER = """# What yota_s2s differentiates

Generated from the rule registry by `python tools/rule_coverage.py`; do not edit by hand (the tests
check that it is current). Rules live in `yota_s2s/rules/`, one file per family; each is a
one-line expression in the primitive's parameters, `y` (the result) and `dy` (the incoming
gradient), or a rule function the compiler inlines. Every rule below is checked against central
finite differences by a case of `tests/test_gradcheck.py`, over shapes that include
broadcasting, empty and size-1 axes. A numpy function that is not here has no rule: calling it
on a traced value is a `NoRuleError` that shows the `ys.diffrule(...)` line to add.

The `scipy.*` rows (rules/scipy_*.py) are registered only where scipy is installed: yota_s2s
itself does not need it. Generated code imports what it calls from scipy by name
(`from scipy.stats import norm`, `from scipy.special import gammaln`).
"""


def _names(prims) -> dict:
    """Each primitive -> every name a user can call it by (``np.add`` and ``+``)."""
    from yota_s2s.frontend.resolve import display_name
    names = defaultdict(list)
    for fn, prim in prims.items():
        names[prim].append(display_name(fn))
    return names


# The compiler's own primitives, as the code that uses them reads.
_SPELLED = {"getitem": "a[key]", "setitem": "a[key] = v", "index_add": "a[key] += v",
            "svd_values": "np.linalg.svd(a, compute_uv=False)"}


def _call(prim, names: list[str]) -> str:
    """``np.sum(a, axis=None, ...)``, ``x.astype(dtype)``, or the operator: ``x1 + x2``."""
    kind = prim.emit[0]
    if kind in ("binop", "cmp"):
        return f"x1 {prim.emit[1]} x2"
    if kind == "unop":
        return f"{prim.emit[1]}x"
    if prim.name in _SPELLED:
        return _SPELLED[prim.name]
    optional = dict(prim.optional)
    params = [f"{o}={optional[o]!r}" if o in optional else o for o in prim.operands]
    params += [f"{k}={v!r}" for k, v in prim.options]
    if kind == "method":
        return f"{params[0]}.{prim.emit[1]}({', '.join(params[1:])})"
    if len(prim.emit) > 2:          # imported by generated code: scipy.stats.norm.logpdf
        return f"{prim.emit[2]}.{prim.emit[1]}({', '.join(params)})"
    own = [n for n in names if n.split(".")[-1] == prim.name.split(".")[-1]]
    return f"{(own or sorted(names))[0]}({', '.join(params)})"


def _rule_text(rule) -> str:
    if rule.scatter:
        return "`da[key] += dy`, one buffer per array"
    if rule.fn is not None:
        doc = inspect.getdoc(rule.fn) or ""
        first = doc.split("\n\n")[0].replace("\n", " ").replace("``", "`")
        return f"`{rule.fn.__name__}`: {first}" if first else f"`{rule.fn.__name__}`"
    return f"`{rule.text}`"


def _where(rule) -> str:
    path = Path(rule.loc.file).resolve()
    return f"{path.relative_to(ROOT / 'yota_s2s').as_posix()}:{rule.loc.line}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


# numpy's old names that the numpy pyproject admits may or may not have: the page is the same
# on every numpy (name: the name it aliases, the last numpy that has it)
REMOVED = {"np.row_stack": ("np.vstack", "numpy < 2.5")}


def differentiable(rules, names) -> list[str]:
    lines = ["## Differentiable", "", "| call | operand | rule | where |", "|---|---|---|---|"]
    rows = []
    for (prim, arg), rule in rules.rules.items():
        if rule.loc is None or "yota_s2s" not in Path(rule.loc.file).parts:
            continue
        call = _call(prim, names[prim])
        aliases = sorted({n for n in names[prim] if n.startswith(("np.", "math."))
                          and not call.startswith(n + "(")} - set(REMOVED)
                         | {f"{old} ({until})" for old, (new, until) in REMOVED.items()
                            if call.startswith(new + "(")})
        also = f" (also {', '.join(aliases)})" if aliases else ""
        rows.append((call + also, arg, _rule_text(rule), _where(rule)))
    for call, arg, text, where in sorted(rows):
        lines.append(f"| `{_escape(call)}` | {arg} | {_escape(text)} | {where} |")
    return lines


def batching(rules, names) -> list[str]:
    """How ``ys.vmap`` batches each differentiable primitive (ad/batching.py)."""
    lines = ["## Batching (`ys.vmap`, `ys.per_example_grad`)", "",
             "How each primitive with a derivative rule computes a batch of examples at once. "
             "*elementwise*: the operands are lined up (a batched operand of fewer dimensions "
             "gets length-1 axes after its batch axis) and the primitive applied as it is; a "
             "named rule is a `batchrule` declared beside the derivative rules; *refused*: "
             "`ys.vmap` refuses it by name where an operand differs per example (it runs as it "
             "is where none does).", "", "| call | batched by | where |", "|---|---|---|"]
    rows = set()
    for prim, _ in rules.rules:
        rule = rules.batches.get(prim)
        if rule is not None:
            how, where = f"`{rule.fn.__name__}`", _where(rule) if rule.loc else ""
        elif prim.elementwise or prim.ufunc is not None:
            how, where = "elementwise", ""
        else:
            how, where = "refused", ""
        rows.add((_call(prim, names[prim]), how, where))
    lines += [f"| `{_escape(call)}` | {how} | {where} |" for call, how, where in sorted(rows)]
    return lines


def recorded(rules, names) -> list[str]:
    from yota_s2s.rules.registry import NODIFF_ALL
    made, discrete = [], []
    for prim, marks in rules.nodiffs.items():
        if NODIFF_ALL not in marks or prim.effect:
            continue
        (made if prim.creates else discrete).append(f"`{_call(prim, names[prim])}`")
    return ["## Recorded without a gradient", "",
            "Computed when the generated code runs; no gradient flows through them (rounding, "
            "tests, comparisons, indices):", "", ", ".join(sorted(discrete)), "",
            "Arrays made inside the function (their shape and fill values are constants):", "",
            ", ".join(sorted(made))]


def sparse(rules, names) -> list[str]:
    """The primitives that take a scipy.sparse matrix read from outside (the ``sparse`` trait)."""
    calls = sorted({_call(prim, names[prim]) for prim, _ in rules.rules if prim.sparse})
    return ["## scipy.sparse matrices", "",
            "A scipy.sparse matrix (any format: `csr_matrix`, `csc_array`, ...) that the function "
            "reads from outside (a global, a closure, a config dict) is read at run time and "
            "checked (its format, shape and dtype: docs/outside.md), like an outside array; it is "
            "an operand of these primitives, with a dense traced operand, vector or matrix: "
            + ", ".join(f"`{_escape(c)}`" for c in calls) + ", so `A @ x`, `x @ A`, `A.T @ x` "
            "and `A.dot(x)`. Their rules are the dense ones, written in `@` and `.T`, which "
            "scipy's matrices have: the gradient of `x` in `A @ x` is `A.T @ dy` (`dy @ A` for "
            "a vector), its tangent `A @ dx`. The matrix gets no gradient: any other operation "
            "on it, and a sparse matrix passed as an argument (a gradient with respect to its "
            "entries), is refused by name. CPU (numpy) only."]


def frontend() -> list[str]:
    from yota_s2s.frontend.numpy_calls import NUMPY_CALLS, STATIC_FACTS
    from yota_s2s.frontend.resolve import (ARRAY_METHODS, IN_PLACE_METHODS, STATIC_ARRAY_ATTRS,
                                           display_name)
    return [
        "## Written with other primitives", "",
        "The frontend writes these with the primitives above (frontend/numpy_calls.py): "
        + ", ".join(sorted(f"`{display_name(fn)}`" for fn in NUMPY_CALLS
                           if fn not in STATIC_FACTS)) + ".", "",
        "## Static facts", "",
        "Answered at compile time from shapes and dtypes: "
        + ", ".join(f"`{display_name(fn)}`" for fn in STATIC_FACTS) + "; and the attributes "
        + ", ".join(f"`x.{a}`" for a in STATIC_ARRAY_ATTRS) + ".", "",
        "## ndarray methods and attributes", "",
        "Methods that map to the numpy function with the rule: "
        + ", ".join(f"`x.{m}()`" for m in sorted(ARRAY_METHODS)) + "; attributes `x.T`, "
        "`x.real`, `x.imag`. In place: " + ", ".join(f"`x.{m}()`" for m in IN_PLACE_METHODS)
        + ".", "",
        "## In-place updates", "",
        "`x[key] = v`, `x[key] += v`, `x += v` on arrays made inside the function, through "
        "views too (`v = x[:2]; v += 1` updates `x`), and `list.append`/`extend`/`+=` of "
        "traced values. Each update is a pure `setitem` in the tape, with a rule, and the "
        "generated code writes it in place again where the old array is not needed. Writing "
        "into an argument (or a view of one) is an error: it would change the caller's data.",
    ]


def page() -> str:
    from yota_s2s.rules import RULES
    RULES.load_all()
    names = _names(RULES.prims)
    parts = [HEADER, *differentiable(RULES, names), "", *batching(RULES, names), "",
             *recorded(RULES, names), "", *sparse(RULES, names), "", *frontend()]
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    text = page()
    if "--check" in argv:
        if PAGE.read_text() != text:
            print(f"{PAGE} is stale; run python tools/rule_coverage.py")
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
