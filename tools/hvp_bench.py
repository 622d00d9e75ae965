"""Hessian-vector products against gradients: the cost of one order up.

    python tools/hvp_bench.py                  # mlp, rnn, logreg; every strategy available
    python tools/hvp_bench.py --only mlp --reps 21

For each workload (tools/workloads.py) it compiles the generated gradient (``ys.simplegrad``,
buffered, the workload's ``wrt``) and ``ys.hvp`` in argument 0 for each strategy
(``rev-rev``; ``fwd-rev`` where ``ys.jvp`` exists), checks the HVP against central
differences of gradients, then times them interleaved (medians) and prints HVP time / gradient
time. JAX's ``jvp(grad(f))`` is timed too where JAX is installed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("YOTA_S2S_CACHE", tempfile.mkdtemp(prefix="yota-hvp-bench-"))

import numpy as np  # noqa: E402

import bench  # noqa: E402   (bench._rebind: a workload with another np)
import workloads  # noqa: E402
import yota_s2s as ys  # noqa: E402
from yota_s2s.higher import STRATEGIES  # noqa: E402


def timed(calls: dict, reps: int) -> dict:
    for call in calls.values():
        call()
    times = {name: [] for name in calls}
    for _ in range(reps):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def jax_hvp(w: workloads.Workload, args: tuple, v):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    loss = bench._rebind(w.loss, jnp)        # its helpers see jax.numpy too

    def grad0(*a):
        return jax.grad(loss)(*a)
    f = jax.jit(lambda *a: jax.jvp(lambda x: grad0(x, *a[1:-1]), (a[0],), (a[-1],))[1])
    jargs = [jnp.asarray(a) for a in args]
    return lambda: f(*jargs, jnp.asarray(v)).block_until_ready()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="mlp,rnn,logreg", help="comma-separated workloads")
    parser.add_argument("--reps", type=int, default=11)
    opts = parser.parse_args()
    rows = []
    for w in workloads.WORKLOADS:
        if w.name not in opts.only.split(","):
            continue
        args = w.make_args(np.random.default_rng(0))
        v = np.random.default_rng(1).standard_normal(np.shape(args[0]))
        df = ys.simplegrad(w.loss, *args, wrt=set(w.wrt))
        calls = {"gradient": lambda: df(*args)}
        plain = ys.simplegrad(w.loss, *args, buffers=False)
        eps = 1e-5
        expected = (plain(args[0] + eps * v, *args[1:])[1]
                    - plain(args[0] - eps * v, *args[1:])[1]) / (2 * eps)
        for strategy in STRATEGIES:
            try:
                hf = ys.hvp(w.loss, *args, strategy=strategy)
            except ys.YotaError as e:
                print(f"{w.name}: {strategy}: {str(e).splitlines()[0]}", file=sys.stderr)
                continue
            got = hf(*args, v)
            scale = max(1.0, float(np.max(np.abs(expected))))
            if not np.allclose(got, expected, rtol=1e-4, atol=1e-6 * scale):
                raise SystemExit(f"{w.name}: hvp {strategy} disagrees with differences of gradients")
            calls[f"hvp {strategy}"] = lambda hf=hf: hf(*args, v)
        jax_call = jax_hvp(w, args, v)
        if jax_call is not None:
            calls["jax jvp(grad)"] = jax_call
        rows.append((w.name, timed(calls, opts.reps)))
        print(f"{w.name}: checked and timed ({', '.join(calls)})", file=sys.stderr)
    print(f"# Hessian-vector products in argument 0, {opts.reps} interleaved samples, medians\n")
    names = ["gradient"] + [f"hvp {s}" for s in STRATEGIES] + ["jax jvp(grad)"]
    print("| workload | " + " | ".join(names) + " | " +
          " | ".join(f"{n} / gradient" for n in names[1:]) + " |")
    print("|---" * (2 * len(names)) + "|")
    for name, t in rows:
        cells = [f"{t[n] * 1e3:.2f} ms" if n in t else "-" for n in names]
        cells += [f"{t[n] / t['gradient']:.2f}x" if n in t else "-" for n in names[1:]]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
