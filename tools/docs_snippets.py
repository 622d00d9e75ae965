"""Keep the real tapes and modules shown in docs/ up to date.

Docs mark a generated block with an HTML comment naming a snippet, followed by a fenced block:

    <!-- snippet: forward-tape -->
    ```text
    ...
    ```

``python tools/docs_snippets.py`` rewrites those blocks from the current compiler;
``--check`` exits 1 when a doc is stale (tests/test_docs.py runs the check).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MARK = re.compile(r"(<!-- snippet: (?P<name>[\w-]+) -->\n```(?P<lang>\w*)\n)(?P<body>.*?)(```)", re.S)


def snippets() -> dict[str, str]:
    import numpy as np

    from tests.programs import design
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    from yota_s2s.ir.printer import format_tape

    args = (np.ones((4, 3)), np.ones(4), np.ones((3, 2)), np.ones((4, 2)))
    forward, plain = gradient_tape(design.loss, args, passes=False)
    _, optimized = gradient_tape(design.loss, args, device="cpu")     # as compile_grad's
    _, review = gradient_tape(design.loss, args, review=True)
    return {
        "model": (ROOT / "tests/programs/design.py").read_text(),
        "forward-tape": format_tape(forward) + "\n",
        "gradient-tape": format_tape(plain) + "\n",
        "optimized-tape": format_tape(review) + "\n",
        "module": write_module(review, buffers=False),
        "module-buffered": write_module(optimized),
        "struct-module": _struct_module(),
        **_seed(),
        **_review(),
        **_workflow(),
        **_primer(),
        **_loops(),
        **_branches(),
        **_whiles(),
        **_while_modes(),
        **_jvp(args),
    }


def _loops() -> dict[str, str]:
    """docs/how-it-works.md: a loop region on the tape and in the generated module."""
    import numpy as np

    from tests.programs import loop_regions as loops
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    from yota_s2s.ir.printer import format_tape

    args = (np.ones((4, 4)), np.ones((4, 3)), np.ones(4), np.ones(4), np.ones((100, 3)))
    forward, tape = gradient_tape(loops.rnn, args, review=True)     # the plain form
    text = write_module(tape, buffers=False)
    model = (ROOT / "tests/programs/loop_regions.py").read_text()
    return {"loop-model": model[:model.index("\n\n# --")] + "\n",
            "loop-tape": format_tape(forward) + "\n",
            "loop-module": text[text.index("    # -- forward --"):]}


def _branches() -> dict[str, str]:
    """docs/how-it-works.md: a branch on the tape and in the generated module (review form)."""
    import numpy as np

    from tests.programs import branches
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    from yota_s2s.ir.printer import format_tape

    _, tape = gradient_tape(branches.piecewise, (np.ones(4),), review=True)
    text = write_module(tape, buffers=False)
    return {"branch-tape": format_tape(tape) + "\n",
            "branch-module": text[text.index("    # -- forward --"):]}


def _whiles() -> dict[str, str]:
    """docs/how-it-works.md: a while statement on the tape and in both forms."""
    import numpy as np

    from tests.programs import whiles
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    from yota_s2s.ir.printer import format_tape

    args = (np.array([2.0, 3.0]),)
    _, tape = gradient_tape(whiles.newton_sqrt, args, review=True)
    _, optimized = gradient_tape(whiles.newton_sqrt, args, device="cpu")
    plain, buffered = write_module(tape, buffers=False), write_module(optimized)
    return {"while-tape": format_tape(tape) + "\n",
            "while-module": plain[plain.index("    # -- forward --"):],
            "while-module-buffered": buffered[buffered.index("    buf1"):]}


def _while_modes() -> dict[str, str]:
    """docs/how-it-works.md: a while statement in forward mode and under ys.vmap."""
    import numpy as np

    from tests.programs import whiles
    from yota_s2s.compiler import compile_jvp, compile_vmap

    jvp = compile_jvp(whiles.newton_sqrt, (np.array([2.0, 3.0]),), buffers=False).text
    batch = np.array([[2.0, 3.0], [0.5, 9.0], [1e4, 7.0]])
    vmap = compile_vmap(whiles.newton_sqrt, (batch,), (0,), buffers=False).text
    return {"while-jvp-module": jvp[jvp.index("    # -- forward --"):],
            "while-vmap-module": vmap[vmap.index("    # -- forward --"):]}


def _jvp(args: tuple) -> dict[str, str]:
    """docs/how-it-works.md: the forward-mode module of the design loss (from its def on)."""
    from tests.programs import design
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import jvp_tape

    _, tape = jvp_tape(design.loss, args)
    text = write_module(tape, buffers=False)
    return {"jvp-module": text[text.index("def loss_jvp"):]}


def _seed() -> dict[str, str]:
    """README and docs/performance.md: the seed loss's gradient, plain and buffered (the body
    from the forward section on)."""
    import numpy as np

    from tests.programs import models
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape

    args = (np.ones((128, 784)), np.ones(128), np.ones((784, 100)))
    _, tape = gradient_tape(models.seed_loss, args)
    _, review = gradient_tape(models.seed_loss, args, review=True)

    def body(text: str) -> str:
        start = text.index("def seed_loss_grad")
        lines = text[start:].splitlines()
        first = next(i for i, line in enumerate(lines)
                     if "_work_arrays()" in line or line.strip() == "# -- forward --")
        keep = [lines[0]] + ["    ...                     # argument checks"] + lines[first:]
        return "\n".join(keep) + "\n"
    return {"seed-plain": body(write_module(review, buffers=False)),
            "seed-buffered": body(write_module(tape, buffers=True))}


def _review() -> dict[str, str]:
    """docs/review.md: three programs (tests/programs/review.py) and their review forms, from
    the function on (the module's header and helpers are those of every module)."""
    import inspect

    from tests.programs import review
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    from yota_s2s.ir.printer import format_tape

    values = {}
    for name, args in review.examples().items():
        fn = getattr(review, name)
        _, tape = gradient_tape(fn, args, review=True)
        text = write_module(tape, buffers=False)
        values[f"review-{name}-source"] = inspect.getsource(fn)
        values[f"review-{name}"] = text[text.index(f"def {name}_grad"):]
        values[f"review-{name}-tape"] = format_tape(tape, locations=False) + "\n"
    sys.path.insert(0, str(ROOT / "tools"))
    from review_metrics import table
    values["review-metrics"] = table()
    return values


def _workflow() -> dict[str, str]:
    """docs/workflow.md: what ``yota-s2s compile examples/mlp.py`` prints and writes."""
    from yota_s2s.gradfile import Options, build, counts
    from yota_s2s.modelfile import load_model, targets

    model = load_model(ROOT / "examples" / "mlp.py")
    grad = build(model, targets(model), Options())
    summary = "; ".join(counts(r.tape) for r in grad.results)
    return {"mlp-compile": f"$ yota-s2s compile examples/mlp.py\n"
                           f"wrote examples/mlp_grad.py  ({summary})\n",
            "mlp-header": grad.text[:grad.text.index('"""\n', 3) + 4]}


def _primer() -> dict[str, str]:
    """docs/primer.md: reverse mode on tests/programs/primer.py, from the tape to the module,
    and the tape played by the interpreter (ir/play.py)."""
    import numpy as np

    from tests.programs import primer
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape
    from yota_s2s.ir.printer import format_tape

    args = (np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, 0.25]))
    forward, adjoint = gradient_tape(primer.loss, args, passes=False)
    _, optimized = gradient_tape(primer.loss, args)
    module = write_module(optimized, buffers=False)
    value, dw, dx = optimized.play(*args)

    def shown(a):             # 4 decimals: the same text on every platform's numpy
        return np.array2string(np.asarray(a), precision=4, floatmode="fixed")
    played = (f">>> w, x = np.array({args[0].tolist()}), np.array({args[1].tolist()})\n"
              ">>> value, dw, dx = tape.play(w, x)     # tape: the optimized gradient tape\n"
              f">>> print(value, dw, dx)\n{shown(value)} {shown(dw)} {shown(dx)}\n")
    return {"primer-model": (ROOT / "tests/programs/primer.py").read_text(),
            "primer-forward": format_tape(forward) + "\n",
            "primer-adjoint": format_tape(adjoint) + "\n",
            "primer-optimized": format_tape(optimized) + "\n",
            "primer-module": module[module.index("def loss_grad"):],
            "primer-play": played}


def _struct_module() -> str:
    """docs/structs.md: the gradient of a loss taking an MLP object (tests/programs/structs.py)."""
    import numpy as np

    from tests.programs import structs
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape

    model = structs.MLP([3, 4, 2], np.random.default_rng(0))
    _, tape = gradient_tape(structs.mlp_loss, (model, np.ones((3, 5))), review=True)
    return write_module(tape, buffers=False)


def update(text: str, values: dict[str, str]) -> str:
    def replace(m: re.Match) -> str:
        return m.group(1) + values[m.group("name")] + m.group(5)
    return MARK.sub(replace, text)


def main(argv: list[str]) -> int:
    values = snippets()
    stale = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()
        new = update(text, values)
        if new != text:
            stale.append(doc.name)
            if "--check" not in argv:
                doc.write_text(new)
    if stale:
        print(("stale: " if "--check" in argv else "updated: ") + ", ".join(stale))
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
