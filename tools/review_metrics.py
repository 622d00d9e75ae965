"""How reviewable is the review form? Counts for the seven bench workloads (tools/workloads.py).

For each workload's gradient in the review form (the plain form, ``buffers=False``):

- ``lines``: code lines of the generated function from ``# -- forward --`` to ``return`` (no
  comments, blank lines, argument checks or header), comparable with Tangent's output;
- ``temps``: distinct ``t<n>`` names the function assigns;
- ``unnamed``: names without meaning: a ``t<n>`` that holds a value with a source name, or a
  gradient not called ``d<name>``, in the function and in its loop bodies (both 0 by
  construction: ir/names.py);
- ``rules/block``: ``# rule`` comment lines per backward block (``# grad of ...``), and the
  backward blocks with none.

    python tools/review_metrics.py            # the table (docs/review.md shows it)
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

# Tangent's output for the same functions: code lines (docs/review.md, issue 15)
TANGENT = {"seed": ("seed_loss", 25), "logreg": ("logistic", 35), "mlp": ("mlp", 65),
           "chain": ("elementwise", 50), "rnn": ("rnn", 94), "polynomial": ("polynomial", 181),
           "vae": ("vae", 189)}
_TEMP = re.compile(r"t\d+$")


def measure(fn, args, wrt) -> dict:
    from yota_s2s.codegen.module import function_name, write_functions, write_module
    from yota_s2s.compiler import gradient_tape

    _, tape = gradient_tape(fn, args, wrt=set(wrt), review=True)
    text = write_module(tape, buffers=False)
    written = write_functions([tape])[0][0]
    body = text[text.index(f"def {function_name(tape)}("):].splitlines()
    start = next(i for i, line in enumerate(body) if line.strip() == "# -- forward --")
    code = [line for line in body[start:] if line.strip() and not line.strip().startswith("#")]
    comments = [line.strip() for line in body[start:] if line.strip().startswith("#")]
    blocks = sum(line.startswith("# grad of") for line in comments)
    rules = sum(line.startswith("# rule") for line in comments)
    empty = _blocks_without_rules(comments)
    function = next(n for n in ast.parse(text).body
                    if isinstance(n, ast.FunctionDef) and n.name == function_name(tape))
    assigned = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    temps = {n for n in assigned if _TEMP.match(n)}
    unnamed = {n for t, names in _named(tape, written.emitter.names) for v, n in names.items()
               if n in assigned and ((n in temps and t.hint_of(v)) or (
                   t.primal_of(v) is not None and not n.startswith("d") and t.hint_of(v) is None))}
    return {"lines": len(code), "temps": len(temps), "unnamed": len(unnamed),
            "blocks": blocks, "rules": rules, "empty": empty}


def _named(tape, namer) -> list:
    """(tape, its names) for the function and every loop body in it (ir/names.py names the
    bodies in the same pass: ``Namer.bodies``)."""
    found = [(tape, namer.names)]
    for loop, inner in namer.bodies.items():
        found += _named(loop.body, inner)
    return found


def _blocks_without_rules(comments: list[str]) -> int:
    empty, current = 0, None
    for line in comments + ["# end"]:
        if line.startswith("# rule"):
            current = (current or 0) + 1
            continue
        if current == 0:
            empty += 1
        current = 0 if line.startswith("# grad of") else None
    return empty


def table() -> str:
    import numpy as np

    from workloads import WORKLOADS

    rows = ["workload     lines  Tangent  temps  unnamed  rules/block  blocks without rules"]
    for w in WORKLOADS:
        m = measure(w.loss, w.make_args(np.random.default_rng(0)), w.wrt)
        label, tangent = TANGENT.get(w.name, (w.name, None))
        per = m["rules"] / m["blocks"] if m["blocks"] else 0.0
        rows.append(f"{label:<12} {m['lines']:>5}  {tangent if tangent else '-':>7}  "
                    f"{m['temps']:>5}  {m['unnamed']:>7}  {per:>11.1f}  "
                    f"{m['empty']:>3} of {m['blocks']}")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
