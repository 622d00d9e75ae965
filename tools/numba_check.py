"""The loop-region table (tests/test_loops.py CASES) through engine="numba".

    python tools/numba_check.py                 # every case
    python tools/numba_check.py --only rnn,ring_squared
    python tools/numba_check.py --gradcheck 1     # tests/test_gradcheck.py's table (--gradcheck 4:
                                                  # every fourth case; --offset 1..3: the others)

For each case: the numba engine's value and gradients against the numpy printer's plain form
(relative 1e-12), how many loops run in numba and how many stay numpy (with numba's reason),
and the compile's CPU time. numba compiles for seconds a loop, so the suite runs only a few of
these (tests/test_numba.py); this runs them all. Exit status 1 on any mismatch or crash.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "tools"]
import numba  # noqa: E402, F401  (before tools/ could shadow ``coverage``, which numba imports)

sys.path.insert(0, str(ROOT))
import yota_s2s as ys  # noqa: E402
from yota_s2s.codegen.numba_calls import DECORATOR  # noqa: E402
from tests.test_loops import CASES  # noqa: E402


def check(name, f, make) -> tuple[str, str]:
    args = make()
    c0 = time.process_time()
    dn = ys.simplegrad(f, *args, engine="numba")
    cpu = time.process_time() - c0
    dp = ys.simplegrad(f, *args, buffers=False)
    for i, (g, w) in enumerate(zip(dn(*args), dp(*args))):
        if w is None:
            if g is not None:
                return "mismatch", f"result {i}: a gradient where numpy has none"
            continue
        scale = max(1.0, float(np.max(np.abs(w)))) if np.size(w) else 1.0
        if np.shape(g) != np.shape(w) or np.result_type(g) != np.result_type(w) or \
                not np.allclose(g, w, rtol=1e-12, atol=1e-12 * scale, equal_nan=True):
            return "mismatch", f"result {i}"
    text = ys.source(dn)
    compiled = text.count(DECORATOR + "\ndef _")
    compiled -= len(re.findall(r"def _pad\d\(", text))
    left = re.findall(r"# numba: (?:this loop|the body) stays numpy: (.*)", text)
    why = "; ".join(sorted(set(left)))
    return "ok", f"{compiled} in numba, {len(left)} numpy{': ' + why if why else ''} ({cpu:.1f} s CPU)"


def gradcheck_cases(every: int, offset: int = 0) -> list:
    """tests/test_gradcheck.py's table (every ``every``-th case from ``offset``), as (name, f,
    make, kind)."""
    from tests.test_gradcheck import CASES as TABLE
    return [(c.name, c.fn, (lambda c=c: c.make_args(np.random.default_rng(1))), "gradcheck")
            for c in TABLE[offset::every]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--gradcheck", type=int, metavar="EVERY", default=0,
                        help="tests/test_gradcheck.py's table instead (every EVERY-th case: 1 "
                        "for all; each compiles a function's straight-line body in numba)")
    parser.add_argument("--offset", type=int, default=0,
                        help="with --gradcheck EVERY: start at this case (0 .. EVERY - 1), so "
                        "that EVERY runs with offsets 0 .. EVERY - 1 cover the table")
    opts = parser.parse_args()
    bad = 0
    for name, f, make, kind in (gradcheck_cases(opts.gradcheck, opts.offset) if opts.gradcheck else CASES):
        if opts.only and name not in opts.only.split(","):
            continue
        try:
            status, note = check(name, f, make)
        except Exception as e:      # a crash is reported, and the run goes on
            status, note = "crash", f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        bad += status != "ok"
        print(f"{name:28s} {kind or 'no loop':9s} {status:8s} {note}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
