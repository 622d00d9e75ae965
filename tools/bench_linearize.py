"""Benchmark: a tangent of ``ys.linearize`` against ``ys.jvp`` from scratch at the same point.

    python tools/bench_linearize.py                 # batch 32, the table of docs/outputs.md
    python tools/bench_linearize.py --batch 256 --repeat 31

For an MLP (64-128-10, tanh) and a tanh RNN (16-32, 20 steps), with tangents in every argument
and in the inputs alone (the weights closed over), it checks that ``f_jvp(*t)`` equals
``ys.jvp(f, primals, t)[1]`` (to 1e-12) and times both, interleaved, the best of ``--repeat`` runs of
``--number`` calls each (the modules compiled and warm before any timing), in CPU time of this
process (``time.process_time``: on a shared machine, others' load shows less in it than in wall
time). Run with OPENBLAS_NUM_THREADS=1 (or your BLAS's) for one thread.
"""
from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import yota_s2s as ys  # noqa: E402


def mlp(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    return np.tanh(h @ W2 + b2)


def rnn(Wx, Wh, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return h


def cases(batch: int, rng: np.random.Generator) -> list[tuple[str, str, object, tuple]]:
    P = (rng.normal(size=(64, 128)) * .1, rng.normal(size=128), rng.normal(size=(128, 10)) * .1,
         rng.normal(size=10))
    X = rng.normal(size=(batch, 64))
    R = (rng.normal(size=(16, 32)) * .1, rng.normal(size=(32, 32)) * .1)
    xs, h0 = rng.normal(size=(20, batch, 16)), np.zeros((batch, 32))

    def mlp_of_x(x):
        return mlp(*P, x)

    def rnn_of_xs(xs):
        return rnn(*R, xs, h0)
    return [(f"MLP 64-128-10, batch {batch}", "the input", mlp_of_x, (X,)),
            (f"MLP 64-128-10, batch {batch}", "every argument", mlp, (*P, X)),
            (f"RNN 16-32, 20 steps, batch {batch}", "the inputs", rnn_of_xs, (xs,)),
            (f"RNN 16-32, 20 steps, batch {batch}", "every argument", rnn, (*R, xs, h0))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=50)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| function | tangents in | `f_jvp` | `ys.jvp` | ratio |\n|---|---|---:|---:|---:|")
    for name, where, f, primals in cases(opts.batch, rng):
        _, f_jvp = ys.linearize(f, *primals)
        tangents = [rng.normal(size=np.shape(p)) for p in primals]
        np.testing.assert_allclose(f_jvp(*tangents), ys.jvp(f, primals, tangents)[1],
                                   rtol=1e-12, atol=1e-12)
        tangent, whole = [], []
        for _ in range(opts.repeat):
            tangent.append(timeit.timeit(lambda: f_jvp(*tangents), number=opts.number,
                                         timer=time.process_time))
            whole.append(timeit.timeit(lambda: ys.jvp(f, primals, tangents), number=opts.number,
                                       timer=time.process_time))
        a, b = min(tangent) / opts.number * 1e6, min(whole) / opts.number * 1e6
        print(f"| {name} | {where} | {a:,.0f} µs | {b:,.0f} µs | {b / a:.1f}× |", flush=True)


if __name__ == "__main__":
    main()
