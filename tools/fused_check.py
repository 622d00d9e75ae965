"""The fused cupy printer's referee on a CPU: tests/test_gradcheck.py's table (and the loop
table) compiled with ``device="cuda", engine="fused"`` and run on tests/fakecupy.py, whose
kernels evaluate the printer's CUDA C with numpy.

    python tools/fused_check.py                    # both tables
    python tools/fused_check.py --only rnn,tanh --every 4
    python tools/fused_check.py --device           # on a GPU: the real cupy, not the stand-in

For each case: the fused module's value and gradients against the unfused numpy plain form's
(float64, relative 1e-12), the kernels the module defines and the kernels one call launches
(each a group of numpy calls the plain form makes one by one). Exit status 1 on any mismatch
or crash. What this cannot check is the device itself: CUDA's libm and the order in which a
sum adds its terms (docs/gpu.md says what remains to measure).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "tools"]
sys.path.insert(0, str(ROOT))

from tests import fakecupy  # noqa: E402
from tests.fakecupy import compare  # noqa: E402

from yota_s2s.compiler import compile_grad  # noqa: E402

DEVICE = False                      # --device: cupy itself, not tests/fakecupy.py


def moved(value, there: bool):
    """``value``'s arrays on the device (``there``) or back on the host, with --device."""
    if not DEVICE:
        return value
    import cupy
    if isinstance(value, (tuple, list)):
        return type(value)(moved(v, there) for v in value)
    if isinstance(value, dict):
        return {k: moved(v, there) for k, v in value.items()}
    if there and isinstance(value, np.ndarray):
        return cupy.asarray(value)
    return value.get() if isinstance(value, cupy.ndarray) else value


def check(name: str, fn, make) -> tuple[str, int, int]:
    """(why the fused module differs, or "" where it does not; kernels defined; launched)."""
    args = make()
    want = compile_grad(fn, args, buffers=False).fn(*args)
    compiled = compile_grad(fn, make(), device="cuda", engine="fused")
    defined = compiled.text.count("Kernel(\n")
    before = fakecupy.COUNTS["launches"]
    got = moved(compiled.fn(*moved(make(), True)), False)
    launched = fakecupy.COUNTS["launches"] - before
    return compare(got, want) or "", defined, launched


def cases(every: int) -> list:
    from tests.test_gradcheck import CASES as TABLE
    from tests.test_loops import CASES as LOOPS
    table = [(c.name, c.fn, (lambda c=c: c.make_args(np.random.default_rng(1))))
             for c in TABLE[::every]]
    return table + [(name, f, make) for name, f, make, _ in LOOPS[::every]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--every", type=int, default=1, help="every EVERY-th case of each table")
    parser.add_argument("--quiet", action="store_true", help="print only what fails, and totals")
    parser.add_argument("--device", action="store_true",
                        help="run on the GPU with cupy (no launch counts), not the stand-in")
    opts = parser.parse_args()
    global DEVICE
    DEVICE = opts.device
    if not DEVICE:          # (here, not on import: the suite imports compare from this file)
        sys.modules["cupy"] = fakecupy.module()
    bad = total = defined = launched = with_kernels = 0
    for name, fn, make in cases(opts.every):
        if opts.only and name not in opts.only.split(","):
            continue
        total += 1
        try:
            why, k, n = check(name, fn, make)
        except Exception as e:          # a crash is reported, and the run goes on
            why, k, n = f"crash: {type(e).__name__}: {str(e).splitlines()[0][:160]}", 0, 0
        bad += bool(why)
        defined, launched, with_kernels = defined + k, launched + n, with_kernels + (k > 0)
        if why or not opts.quiet:
            print(f"{name:40s} {'FAIL ' + why if why else 'ok':50s} {k:3d} kernels, "
                  f"{n:3d} launched", flush=True)
    print(f"{total} cases: {total - bad} equal the numpy gradient to 1e-12, {bad} not; "
          f"{with_kernels} with kernels, {defined} kernels defined, {launched} launched")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
