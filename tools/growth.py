"""Compile-growth report: how each compile stage's time and memory grow with the program's
length (statements) and with the size of the example arrays.

    python tools/growth.py                 # both sweeps, a markdown report
    python tools/growth.py --quick         # smaller sizes (a smoke run)
    python tools/growth.py --loops         # only the loop-region tables (issue 12 and 14)
    python tools/bench.py --compile-growth # the same report, from the benchmark

Two long straight-line programs: an unrolled tanh RNN (T steps: about 30 tape statements a
step with its gradient) and a chain of elementwise operations (n operations). The stages of
``compile_grad`` are timed one by one (frontend, backward, each pass, codegen, import);
compile memory is measured in a second run under tracemalloc: the peak above the memory at
the start of each stage, and what the compile as a whole keeps until it ends. The *growth
exponent* of a stage is the slope of log(time) against log(size) by least squares: 1 is linear,
2 quadratic, 0 independent of size. Measured, not asserted: the machine's load shows.

Then the same RNN (tools/workloads.py's sizes) with its loop a region: the body is on the tape
once, the steps never run at compile time (frontend/abstract.py), so no stage should grow with
T (issue 12), and its compile memory at batch 2048, T = 1000 against the gradient's own peak
(issue 14).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import math
import os
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("YOTA_S2S_CACHE", tempfile.mkdtemp(prefix="yota-growth-"))

import yota_s2s.compiler as compiler  # noqa: E402
import yota_s2s.passes as passes  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import rnn  # noqa: E402   (the bench's tanh RNN)

# -- the programs ---------------------------------------------------------------------------------


def rnn_args(steps: int, batch: int, hidden: int = 0, inputs: int = 0) -> tuple:
    hidden, inputs = hidden or batch, inputs or batch
    r = np.random.default_rng(0)
    return (r.standard_normal((inputs, hidden)) * 0.05, r.standard_normal((hidden, hidden)) * 0.05,
            np.zeros(hidden), r.standard_normal((steps, batch, inputs)), np.zeros((batch, hidden)))


def chain(x, n):
    y = x
    for i in range(n):
        k = i % 6
        if k == 0:
            y = np.sin(y)
        elif k == 1:
            y = y * x
        elif k == 2:
            y = np.tanh(y)
        elif k == 3:
            y = y + x
        elif k == 4:
            y = np.cos(y)
        else:
            y = 0.5 * y
    return np.sum(y)


def chain_of(n: int) -> Callable:
    def chained(x):
        return chain(x, n)
    chained.__name__ = f"chain_{n}"
    return chained


# -- timing the stages ----------------------------------------------------------------------------

STAGES = ("frontend", "backward", "fold", "simplify", "signs", "cse", "dce", "fresh_outputs",
          "plain_constants", "write_in_place", "codegen", "import")


class Meter:
    """Wraps the stages of ``compiler.compile_grad``; ``measure`` runs one compile."""

    def __init__(self, memory: bool, regions: bool = False):
        self.memory, self.regions = memory, regions
        self.time: dict[str, float] = defaultdict(float)
        self.peak: dict[str, int] = defaultdict(int)

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            start_mem = tracemalloc.get_traced_memory()[0] if self.memory else 0
            if self.memory:
                tracemalloc.reset_peak()
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.time[name] += time.perf_counter() - t0
                if self.memory:
                    self.peak[name] = max(self.peak[name],
                                          tracemalloc.get_traced_memory()[1] - start_mem)
        timed.__wrapped__ = fn
        return timed

    @contextlib.contextmanager
    def installed(self):
        saved_compiler = {n: getattr(compiler, n) for n in
                          ("trace_function", "backward", "write_module", "load")}
        saved_passes = {n: getattr(passes, n) for n in
                        ("dce", "fresh_outputs", "plain_constants", "write_in_place")}
        saved_pipeline = list(passes.PIPELINE)
        try:
            for name, stage in (("trace_function", "frontend"), ("backward", "backward"),
                                ("write_module", "codegen"), ("load", "import")):
                setattr(compiler, name, self.wrap(stage, saved_compiler[name]))
            # growth in statements: the RNN's loop unrolled (as a region it does not grow)
            if not self.regions:
                unrolled = functools.partial(saved_compiler["trace_function"], regions=False)
                compiler.trace_function = self.wrap("frontend", unrolled)
            for name in saved_passes:
                setattr(passes, name, self.wrap(name, saved_passes[name]))
            passes.PIPELINE[:] = [self.wrap(fn.__name__, fn) for fn in saved_pipeline]
            yield
        finally:
            for name, fn in saved_compiler.items():
                setattr(compiler, name, fn)
            for name, fn in saved_passes.items():
                setattr(passes, name, fn)
            passes.PIPELINE[:] = saved_pipeline


def measure(fn: Callable, args: tuple, memory: bool = False, regions: bool = False
            ) -> tuple[dict, dict, float, int, int]:
    """(time per stage, memory peak per stage, total seconds, statements, bytes the compile
    holds at its end) of ``compile_grad(fn, args)`` (memory: a tracemalloc run; ``regions``:
    loops stay loops, else they are unrolled)."""
    meter = Meter(memory, regions)
    gc.collect()
    if memory:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    with meter.installed():
        compiled = compiler.compile_grad(fn, args)
    total = time.perf_counter() - t0
    held = 0
    if memory:
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
    return dict(meter.time), dict(meter.peak), total, len(compiled.tape.stmts), held


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-6)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def fmt_s(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 10 else f"{s:.1f} s"


def fmt_b(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def sweep(title: str, runs: list[tuple[str, float, Callable, tuple]], against: str,
          memory: bool = True, regions: bool = False) -> list[str]:
    """One table: a row per run (label, x for the exponent, function, args), the stages'
    times, the total, the compile's memory, and a last row of growth exponents."""
    rows, times, totals, xs, peaks = [], defaultdict(list), [], [], []
    for label, x, fn, args in runs:
        stage_time, _, total, stmts, _ = measure(fn, args, regions=regions)
        peak = held = 0
        if memory:
            _, stage_peak, _, _, held = measure(fn, args, memory=True, regions=regions)
            peak = max(stage_peak.values())
        xs.append(x if x else stmts)
        totals.append(total)
        peaks.append(max(peak, 1))
        for s in STAGES:
            times[s].append(stage_time.get(s, 0.0))
        rows.append(f"| {label} | {stmts} | " + " | ".join(fmt_s(stage_time.get(s, 0.0))
                                                       for s in STAGES)
                    + f" | **{fmt_s(total)}** | {fmt_b(peak)} | {fmt_b(held)} |")
        print(f"  {title}: {label}: {stmts} statements, {total:.2f} s", file=sys.stderr)
    exps = " | ".join(f"{slope(xs, times[s]):.2f}" if min(times[s]) > 2e-3 else "~"
                      for s in STAGES)
    mem_exp = f"{slope(xs, peaks):.2f}" if memory else ""
    head = ["", f"### {title}", "",
            "| program | statements | " + " | ".join(STAGES) + " | total | peak | held |",
            "|---" * (len(STAGES) + 5) + "|"]
    return head + rows + [f"| exponent in {against} | | {exps} | "
                          f"**{slope(xs, totals):.2f}** | {mem_exp} | |"]


def compiled_once(fn: Callable, args: tuple, buffers: bool = True, reps: int = 3
                  ) -> tuple[float, object]:
    """The fastest of ``reps`` compiles (seconds) and the last compiled gradient."""
    best, compiled = math.inf, None
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        compiled = compiler.compile_grad(fn, args, buffers=buffers)
        best = min(best, time.perf_counter() - t0)
    return best, compiled


def traced_peak(run: Callable) -> tuple[int, object]:
    """(tracemalloc's peak above its start, the result) of ``run()``."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    try:
        result = run()
        return tracemalloc.get_traced_memory()[1] - base, result
    finally:
        tracemalloc.stop()


def loop_table(steps: tuple, batch: int, big: tuple = (2048, 1000)) -> list[str]:
    """Issue 12's loop table: the tanh RNN of tools/workloads.py (hidden 64, input 32), its loop
    a region, at each T: the fastest of three compiles of each form, module lines and the
    compile's peak memory; then issue 14's row: at batch ``big[0]``, T = ``big[1]``, the
    compile's peak memory against the gradient's own (one call; the arguments not counted)."""
    import workloads as w
    lines = ["", f"### tanh RNN as a loop region (hidden {w.RNN_HIDDEN}, input {w.RNN_INPUT}, "
             f"batch {batch}): T steps", "",
             "| T | compile buffered | compile plain | lines buffered / plain | compile peak |",
             "|---|---|---|---|---|"]
    totals = []
    for t in steps:
        args = rnn_args(t, batch, w.RNN_HIDDEN, w.RNN_INPUT)
        buffered, df = compiled_once(rnn, args)
        plain, pf = compiled_once(rnn, args, buffers=False)
        peak, _ = traced_peak(lambda: compiler.compile_grad(rnn, args))
        totals.append(buffered)
        lines.append(f"| {t:,} | {fmt_s(buffered)} | {fmt_s(plain)} | "
                     f"{len(df.text.splitlines())} / {len(pf.text.splitlines())} | "
                     f"{fmt_b(peak)} |")
        print(f"  loop region: T={t}: {buffered:.3f} s", file=sys.stderr)
    lines.append(f"| exponent in T | **{slope(list(steps), totals):.2f}** | | | |")
    b, t = big
    args = rnn_args(t, b, w.RNN_HIDDEN, w.RNN_INPUT)
    seconds, _ = compiled_once(rnn, args, reps=1)
    compile_peak, compiled = traced_peak(lambda: compiler.compile_grad(rnn, args))
    grad_peak, _ = traced_peak(lambda: compiled.fn(*args))
    lines += ["", f"At batch {b}, T = {t:,} (arguments {fmt_b(sum(a.nbytes for a in args))}): "
              f"compile {fmt_s(seconds)}, compile peak {fmt_b(compile_peak)}; the gradient's "
              f"own peak {fmt_b(grad_peak)} (compile / gradient: {compile_peak / grad_peak:.4f})."]
    print(f"  loop region: batch {b}, T={t}: compile peak {compile_peak}, gradient {grad_peak}",
          file=sys.stderr)
    return lines


def report(quick: bool = False, steps: tuple = ()) -> str:
    steps = steps or ((25, 50, 100, 200) if quick else (200, 400, 800, 1600))
    ops = (50, 100, 200) if quick else (50, 100, 200, 400, 800)
    sizes = (10**3, 10**4, 10**5) if quick else (10**3, 10**4, 10**5, 10**6, 10**7)
    batches = (16, 64, 256) if quick else (16, 64, 256, 1024)
    loop_steps = (10, 100, 1000) if quick else (10, 100, 1_000, 10_000)
    lines = ["## Compile growth", "",
             "Seconds per stage of `compile_grad`, the compile's peak memory above its start "
             "(tracemalloc) and what it holds at its end; last row: the growth exponent "
             "(log-log slope; ~ where the stage takes under 2 ms)."]
    lines += sweep("unrolled RNN, batch 4, hidden 8: T steps",
                   [(f"T={t}", 0, rnn, rnn_args(t, 4, 8)) for t in steps], "statements")
    lines += sweep("elementwise chain on 1000 floats: n operations",
                   [(f"n={n}", 0, chain_of(n), (np.linspace(-1, 1, 1000),)) for n in ops],
                   "statements")
    lines += sweep("50-operation chain: array size",
                   [(f"{s:.0e}", s, chain_of(50), (np.linspace(-1, 1, s),)) for s in sizes],
                   "array size")
    lines += sweep("RNN, T=20, batch = hidden = inputs",
                   [(f"b={b}", b * b, rnn, rnn_args(20, b)) for b in batches],
                   "array size (b²)")
    lines += sweep("tanh RNN as a loop region, batch 16, hidden 64, input 32: T steps",
                   [(f"T={t}", t, rnn, rnn_args(t, 16, 64, 32)) for t in loop_steps],
                   "T", regions=True)
    lines += loop_table(loop_steps, 16, (256, 100) if quick else (2048, 1000))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--steps", help="RNN lengths, comma-separated (default 200,400,800,1600)")
    parser.add_argument("--loops", action="store_true",
                        help="only the tanh RNN as a loop region: compile time, module lines and "
                             "memory against T, and compile memory at batch 2048, T = 1000")
    opts = parser.parse_args()
    steps = tuple(int(s) for s in opts.steps.split(",")) if opts.steps else ()
    if opts.loops:
        print("\n".join(loop_table((10, 100, 1_000, 10_000), 16)))
        return
    print(report(opts.quick, steps))


if __name__ == "__main__":
    main()
