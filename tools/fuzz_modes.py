"""The fuzzer's programs with a ``while`` on data (tests/fuzzing.py Gen.whiles) through forward
mode and ``ys.vmap``:

    python tools/fuzz_modes.py --seed 3200 --n 200

For each program whose trace keeps a while statement: its JVP module's tangent against the
gradient module's ``<grad, t>`` (the gradient is what tools/fuzz.py checks against finite
differences), and its batched module over 4 examples (the first the program's, the others
scaled by 5% noise, so they take other trip counts) against each example's numpy run.
A program with float16 or float32 arguments computes its tangent in that precision: its JVP
is compared at rtol 1e-3. vmap refusals of other statements (a mask whose count differs per
example) are counted apart, as ``refused``.
"""
from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzzing import generate  # noqa: E402
from yota_s2s.compiler import compile_grad, compile_jvp, compile_vmap, gradient_tape  # noqa: E402
from yota_s2s.errors import NoRuleError  # noqa: E402
from yota_s2s.ir.whiles import while_of  # noqa: E402

TIMEOUT = 20        # seconds a program


class Overtime(Exception):
    pass


def _overtime(*_):
    raise Overtime()


def check(seed: int, directory: Path) -> tuple[str, str]:
    """(outcome, detail) of one seed: ok, nowhile, jvp-mismatch, vmap-mismatch, refused,
    crash."""
    program = generate(seed, whiles=True)
    path = directory / f"prog{seed}.py"
    path.write_text(program.source())
    spec = importlib.util.spec_from_file_location(f"prog{seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    f, args = module.f, program.args
    forward, _ = gradient_tape(f, args)
    if not any(while_of(s) is not None for s in forward.stmts):
        return "nowhile", ""
    rng = np.random.default_rng(seed)
    floats = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    tangents = {i: float(rng.normal()) if isinstance(args[i], float) else
                np.asarray(rng.normal(size=np.shape(args[i]))).astype(np.asarray(args[i]).dtype)
                for i in floats}
    grads = compile_grad(f, args, wrt=set(floats)).fn(*args)
    tangent = compile_jvp(f, args).fn(*args, *tangents.values())[1]
    expected = sum(np.sum(grads[1 + k] * tangents[i]) for k, i in enumerate(floats))
    narrow = any(np.asarray(args[i]).dtype.itemsize < 8 for i in floats)
    if not np.allclose(tangent, expected, rtol=1e-3 if narrow else 1e-7, atol=1e-9):
        return "jvp-mismatch", f"{tangent} != {expected}"
    batch = tuple(np.stack([np.asarray(a) if k == 0 else
                            np.asarray(a) * (1 + 0.05 * rng.normal(size=np.shape(a)))
                            for k in range(4)]) for a in args)
    try:
        got = compile_vmap(f, batch, (0,) * len(args)).fn(*batch)
    except NoRuleError as e:
        return "refused", e.what[:120]
    want = [f(*[b[k] for b in batch]) for k in range(4)]
    if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
        return "vmap-mismatch", f"{got} != {want}"
    return "ok", ""


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=3200)
    ap.add_argument("--n", type=int, default=100)
    opts = ap.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="fuzz_modes"))
    counts: Counter = Counter()
    start = time.time()
    signal.signal(signal.SIGALRM, _overtime)
    for seed in range(opts.seed, opts.seed + opts.n):
        signal.alarm(TIMEOUT)
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                outcome, detail = check(seed, directory)
        except Overtime:
            outcome, detail = "timeout", ""
        except Exception as e:          # noqa: BLE001  (counted, shown)
            outcome, detail = "crash", f"{type(e).__name__}: {str(e)[:200]}"
        finally:
            signal.alarm(0)
        counts[outcome] += 1
        if outcome not in ("ok", "nowhile"):
            print(f"seed {seed}: {outcome} {detail}", flush=True)
    print(dict(counts), f"{time.time() - start:.0f} s")
    return 1 if counts["jvp-mismatch"] or counts["vmap-mismatch"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
