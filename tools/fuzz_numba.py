"""The dataflow fuzzer's loop programs through ``engine="numba"`` (``tools/fuzz.py --engine
numba``, issue 32).

A program with a loop (tests/fuzzing.py: RNN-like, stencil, accumulator and list loops) is
compiled a third time, with ``ys.simplegrad(f, *args, engine="numba")``, and its value and
gradients are compared with the numpy printer's plain form at the program's arguments and at
the fuzzer's second inputs: relative 1e-12 in float64 (the two run the same statements; numba's
LLVM may contract or reorder nothing that numpy would not), the fuzzer's tight tolerance for
float32 and float16 programs; shapes and dtypes must be the same. Outcomes: ``ok``; ``mismatch``;
``crash`` (the numba engine raised where the plain form compiled and ran: a loop numba cannot
compile must stay numpy, not fail). The counts of loops compiled by numba and left numpy (with
numba's reason) are kept for the summary.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np

import yota_s2s as ys
from tests.fuzzcheck import RANK, TOLERANCES, Outcome, copies, far, load
from yota_s2s.codegen.numba_calls import DECORATOR
from yota_s2s.errors import YotaError

import numba  # noqa: F401  (the engine's dependency: fail here, not in every program)

LOOPS: Counter = Counter()          # "numba", "numpy", and "numpy: <reason>" per loop
STAYED = "# numba: this loop stays numpy: "


def has_loop(program) -> bool:
    return any(line.lstrip().startswith(("for ", "while ")) for s in program.stmts for line in s.lines)


def referee(check, program, directory: Path, forms: tuple) -> Outcome:
    """``check``'s outcome of ``program`` (tests/fuzzcheck.py), then, for a program with a loop,
    the numba engine's against the plain form; the worse of the two, with the form ``numba``
    among ``forms`` of the outcome."""
    outcome = check(program, directory, forms)
    if not has_loop(program) or outcome.kind == "generator":
        return outcome
    now = check_numba(program, directory)
    if now is None:
        return outcome
    outcome.forms["numba"] = now.kind
    if now.modules:
        outcome.modules["numba"] = now.modules["numba"]
    if RANK[now.kind] > RANK[outcome.kind]:
        now.forms, now.modules = outcome.forms, {**outcome.modules, **now.modules}
        return now
    return outcome


def check_numba(program, directory: Path) -> Outcome | None:
    """The numba engine's outcome on ``program``; None where the plain form does not compile or
    run (a refusal, or a failure the numpy checks report)."""
    f = load(program, directory)
    args = copies(program.args)
    rng = np.random.default_rng(program.seed + 1)
    others = [(a + 1e-3 * rng.standard_normal(np.shape(a))).astype(np.asarray(a).dtype)
              if isinstance(a, np.ndarray) else a + 1e-3 for a in args]
    tight = TOLERANCES[min(np.asarray(a).dtype.itemsize for a in args)][2]
    rtol = 1e-12 if tight == TOLERANCES[8][2] else tight
    try:
        dp = ys.simplegrad(f, *args, buffers=False)
        with np.errstate(all="ignore"):
            want = [dp(*copies(args)), dp(*copies(others))]
    except Exception:       # noqa: BLE001  (the plain form's own checks report it)
        return None
    out = Outcome(program.seed, "ok", "numba")
    try:
        dn = ys.simplegrad(f, *args, engine="numba")
    except YotaError as e:
        return _failed(out, "crash", "compile", e)
    except Exception as e:  # noqa: BLE001
        return _failed(out, "crash", "compile", e)
    text = ys.source(dn)
    out.modules["numba"] = text
    stayed = re.findall(re.escape(STAYED) + "(.*)", text)
    LOOPS["numba"] += text.count(DECORATOR + "\ndef _") - len(re.findall(r"def _pad\d+\(", text))
    LOOPS["numpy"] += len(stayed)
    LOOPS.update(f"numpy: {why[:120]}" for why in stayed)
    for name, xs, ref in (("call", args, want[0]), ("second call", others, want[1])):
        try:
            with np.errstate(all="ignore"):
                got = dn(*copies(xs))
        except Exception as e:  # noqa: BLE001
            return _failed(out, "crash", f"numba {name}", e)
        bad = _differs(got, ref, rtol)
        if bad:
            out.kind, out.check, out.detail = "mismatch", f"numba vs plain ({name})", bad
            return out
    return out


def _differs(got, want, rtol: float) -> str:
    if not isinstance(got, tuple) or len(got) != len(want):
        return f"returned {type(got).__name__} of length {len(got)}, plain {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if (g is None) != (w is None):
            return f"result {i}: {g!r} where plain gives {w!r}"
        if w is None:
            continue
        if np.shape(g) != np.shape(w) or np.asarray(g).dtype != np.asarray(w).dtype:
            return (f"result {i}: shape {np.shape(g)} {np.asarray(g).dtype} where plain gives "
                    f"{np.shape(w)} {np.asarray(w).dtype}")
        w64 = np.asarray(w, np.float64)
        bad = far(np.asarray(g, np.float64), w64, rtol,
                  rtol * max(1.0, float(np.max(np.abs(w64), initial=0, where=np.isfinite(w64)))))
        if bad:
            return f"result {i} {bad}"
    return ""


def _failed(out: Outcome, kind: str, check: str, error: Exception) -> Outcome:
    out.kind, out.check = kind, check
    out.detail = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    return out


def summary() -> list[str]:
    """Lines for the end of a run: loops compiled by numba, left numpy, and why."""
    if not LOOPS:
        return []
    lines = [f"numba engine: {LOOPS['numba']} loops compiled by numba, {LOOPS['numpy']} left numpy"]
    for why, n in LOOPS.most_common():
        if why.startswith("numpy: "):
            lines.append(f"  {n:6d}  {why}")
    return lines
