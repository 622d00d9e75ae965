"""The dataflow fuzzer's programs through the fused cupy printer (``tools/fuzz.py --engine
fused``, issue 36), on tests/fakecupy.py (no GPU needed).

Each program is compiled a third time, with ``ys.simplegrad(f, *args, device="cuda",
engine="fused")``, run on the stand-in (its kernels evaluate the printer's CUDA C with numpy),
and its value and gradients compared with the numpy printer's plain form: relative 1e-12 in
float64 (the same operations, rounded alike), the fuzzer's tight tolerance otherwise. Outcomes:
``ok``; ``mismatch``; ``crash`` (the fused module raised where the plain form ran: a C subset
the stand-in does not read, a kernel whose threads would race). With a real GPU, cupy itself
is used instead of the stand-in only by tools/fused_check.py --device.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

from tests import fakecupy
from tests.fakecupy import compare
from tests.fuzzcheck import RANK, TOLERANCES, Outcome, copies, load

sys.modules["cupy"] = fakecupy.module()         # (this process runs no other cupy code)
import yota_s2s as ys  # noqa: E402

KERNELS: Counter = Counter()        # "programs with kernels", "kernels"


def referee(check, program, directory: Path, forms: tuple) -> Outcome:
    """``check``'s outcome of ``program`` (tests/fuzzcheck.py), then the fused printer's
    against the plain form; the worse of the two, with the form ``fused`` among ``forms``."""
    outcome = check(program, directory, forms)
    if outcome.kind == "generator":
        return outcome
    now = check_fused(program, directory)
    if now is None:
        return outcome
    outcome.forms["fused"] = now.kind
    if RANK[now.kind] > RANK[outcome.kind]:
        now.forms, now.modules = outcome.forms, {**outcome.modules, **now.modules}
        return now
    return outcome


def check_fused(program, directory: Path) -> Outcome | None:
    """The fused printer's outcome on ``program``; None where the plain form does not compile
    or run (the numpy checks report it)."""
    f = load(program, directory)
    args = copies(program.args)
    tight = TOLERANCES[min(np.asarray(a).dtype.itemsize for a in args)][2]
    rtol = 1e-12 if tight == TOLERANCES[8][2] else tight
    try:
        with np.errstate(all="ignore"):
            want = ys.simplegrad(f, *args, buffers=False)(*copies(args))
    except Exception:       # noqa: BLE001  (the plain form's own checks report it)
        return None
    out = Outcome(program.seed, "ok", "fused")
    try:
        df = ys.simplegrad(f, *args, device="cuda", engine="fused")
        out.modules["fused"] = ys.source(df)
        with np.errstate(all="ignore"):
            got = df(*copies(args))
    except Exception as e:  # noqa: BLE001
        out.kind, out.check = "crash", "fused"
        out.detail = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        return out
    kernels = out.modules["fused"].count("Kernel(\n")
    KERNELS.update({"programs with kernels": kernels > 0, "kernels": kernels})
    bad = compare(got, want, rtol)
    if bad:
        out.kind, out.check, out.detail = "mismatch", "fused vs plain", bad
    return out


def summary() -> list[str]:
    return [f"fused: {KERNELS['programs with kernels']} programs with kernels, "
            f"{KERNELS['kernels']} kernels"]
