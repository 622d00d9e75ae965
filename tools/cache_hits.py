"""What a ``ys.grad`` cache hit costs on top of the generated call it makes.

    python tools/cache_hits.py

For the small bench workloads (tools/workloads.py: the polynomial; the seed loss on small
arrays) and a dict of parameters, it times ``ys.grad(f, *args)`` after the first call (a hit)
and the generated function it runs, called directly, in CPU time (``time.process_time``: less
disturbed by other processes than the wall clock), the best of 5 runs of 20,000 calls each,
and prints the difference: the key made from the arguments, the cache look-up and, for
structured arguments, the guard that checks their leaves. The README quotes these numbers.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import yota_s2s as ys  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

CALLS = 20_000


def cpu_us(fn) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(CALLS):
            fn()
        best = min(best, (time.process_time() - start) / CALLS)
    return best * 1e6


def two_layers(p, X):
    h = np.tanh(X @ p["W1"] + p["b1"])
    return np.sum((h @ p["W2"] + p["b2"]) ** 2)


def main() -> None:
    r = np.random.default_rng(0)
    workload = {w.name: w for w in WORKLOADS}
    params = {"W1": r.random((8, 16)), "b1": r.random(16), "W2": r.random((16, 4)),
              "b2": r.random(4)}
    cases = [("polynomial, 1 array of 8", workload["polynomial"].loss,
              workload["polynomial"].make_args(r)),
             ("seed, 3 arrays (4x3, 4, 3x2)", workload["seed"].loss,
              (r.random((4, 3)), r.random(4), r.random((3, 2)))),
             ("a dict of 4 arrays and 1 array", two_layers, (params, r.random((5, 8))))]
    print(f"{'workload':34s} {'ys.grad':>9s} {'generated':>10s} {'hit adds':>9s}   (us, CPU)")
    for name, f, args in cases:
        _, g = ys.grad(f, *args)
        variant = g._variant
        direct = (lambda: variant.fn(*args, _fn=f)) if variant.reads_closure \
            else (lambda: variant.fn(*args))
        hit, call = cpu_us(lambda: ys.grad(f, *args)), cpu_us(direct)
        print(f"{name:34s} {hit:9.1f} {call:10.1f} {hit - call:9.1f}")


if __name__ == "__main__":
    main()
