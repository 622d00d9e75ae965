"""Write every generated module we ship or test into a folder, to compare two versions byte for byte.

    python tools/dump_modules.py OUT          # OUT/<group>/<name>.<form>.py, one file each
    git worktree add /tmp/base <commit> && python /tmp/base/tools/dump_modules.py BASE
    diff -r BASE OUT                          # empty: a restructuring changed no module

The groups: ``snippets`` (every generated block of docs/, tools/docs_snippets.py), ``golden``
(tests/golden), ``bench`` (tools/workloads.py's workloads and loop workloads: the buffered form
for "cpu" and "cuda", the plain form and the forward of ``ys.compile``) and ``gradcheck`` (every
case of tests/test_gradcheck.py: buffered, plain and forward mode, with the traced and optimized
tapes). A case that does not compile writes its error's type and first line instead, so a change
of what is refused shows too.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np  # noqa: E402


def _refusal(error: BaseException) -> str:
    first = str(error).splitlines()[0] if str(error) else ""
    return f"# refused: {type(error).__name__}: {first}\n"


def _forms(fn, args: tuple, wrt: set[int] | None = None, jvp: bool = True,
           cuda: bool = False) -> dict[str, str]:
    """The modules (and tapes) of ``fn`` on ``args``, by form."""
    from yota_s2s.codegen import write_module
    from yota_s2s.compiler import gradient_tape, jvp_tape
    from yota_s2s.ir.printer import format_tape

    texts: dict[str, str] = {}

    def attempt(form: str, make) -> None:
        try:
            texts[form] = make()
        except Exception as error:      # noqa: BLE001  (a refusal is part of what is compared)
            texts[form] = _refusal(error)

    def buffered(device: str) -> str:
        forward, tape = gradient_tape(fn, args, wrt=wrt, device=device)
        texts.setdefault("forward-tape.txt", format_tape(forward) + "\n")
        texts[f"tape-{device}.txt"] = format_tape(tape) + "\n"
        return write_module(tape, device=device)

    def plain() -> str:
        _, tape = gradient_tape(fn, args, wrt=wrt, review=True)
        texts["tape-plain.txt"] = format_tape(tape) + "\n"
        return write_module(tape, buffers=False)

    attempt("buffered.py", lambda: buffered("cpu"))
    if cuda:
        attempt("cuda.py", lambda: buffered("cuda"))
    attempt("plain.py", plain)
    if jvp:
        attempt("jvp.py", lambda: write_module(jvp_tape(fn, args)[1], buffers=False))
    return texts


def snippets() -> dict[str, str]:
    import docs_snippets
    return {name: text for name, text in docs_snippets.snippets().items()}


def golden() -> dict[str, str]:
    from tests.programs import design
    from yota_s2s.compiler import compile_grad, gradient_tape
    from yota_s2s.codegen import write_module

    args = (np.ones((4, 3)), np.ones(4), np.ones((3, 2)), np.ones((4, 2)))
    _, tape = gradient_tape(design.loss, args, check=True)
    return {"design_loss.py": write_module(tape, buffers=False),
            "design_loss_buffered.py": compile_grad(design.loss, args,
                                                    module_name="design_loss_buffered").text}


def bench() -> dict[str, str]:
    import workloads
    from yota_s2s.compiler import compile_forward

    texts = {}
    for w in workloads.WORKLOADS + workloads.LOOP_WORKLOADS:
        args = w.make_args(np.random.default_rng(0))
        for form, text in _forms(w.loss, args, wrt=set(w.wrt), jvp=False, cuda=True).items():
            texts[f"{w.name}.{form}"] = text
        try:
            texts[f"{w.name}.compile.py"] = compile_forward(w.loss, args).text
        except Exception as error:      # noqa: BLE001
            texts[f"{w.name}.compile.py"] = _refusal(error)
    return texts


def gradcheck() -> dict[str, str]:
    from tests import test_gradcheck

    texts = {}
    for case in test_gradcheck.CASES:
        args = case.make_args(np.random.default_rng(0))
        for form, text in _forms(case.fn, args).items():
            texts[f"{case.name}.{form}"] = text
    return texts


GROUPS = {"snippets": snippets, "golden": golden, "bench": bench, "gradcheck": gradcheck}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write (made if missing)")
    parser.add_argument("--only", default=",".join(GROUPS), help="groups, comma-separated")
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    os.chdir(ROOT)
    for group in options.only.split(","):
        folder = options.out / group
        folder.mkdir(parents=True, exist_ok=True)
        texts = GROUPS[group]()
        for name, text in texts.items():
            (folder / name.replace("/", "_")).write_text(text)
        print(f"{group}: {len(texts)} files", flush=True)


if __name__ == "__main__":
    main()
