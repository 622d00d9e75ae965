"""Benchmark: generated gradients against a careful handwritten gradient and against peers.

    python tools/bench.py                      # every workload, one thread per framework
    python tools/bench.py --only mlp,rnn --reps 31 --threads 1
    python tools/bench.py --loops                     # issue 12's loop workloads (RNN over T ...)
    python tools/bench.py --loops --only rnn_T10,rnn_T100 --compile-timeout 60

For each workload (tools/workloads.py) it times, in one process, with repetitions interleaved
after a warm-up: the forward function, the handwritten gradient, the generated gradient (fresh
arrays, and with ``out=`` arrays when the module takes them), ``ys.compile``'s forward-only
module of the loss (against the forward function: the helper calls' overhead gone), and JAX (jit), PyTorch (eager) and
autograd where they are installed (skipped otherwise). Before any timing it checks that every
implementation returns the same value and gradients as the handwritten one.

It prints medians and ratios (to the forward call, to the handwritten gradient, and the generated
gradient against each peer); with tracemalloc, the bytes a steady-state call allocates (its peak
above the memory before it) and keeps, and peak memory (that, plus the work arrays a generated
module holds and the arrays it made once, its ones vectors and 0-d numbers); for the call with
``out=``, the bytes of numpy array data apart from the rest (yota_s2s.memory_report.allocated:
numpy traces array data in a tracemalloc domain of its own); and
compile time: the latency of the first ``simplegrad`` call, from a cold cache.

    python tools/bench.py --compile-growth     # compile stages against program and array size

``--loops`` runs the loop workloads instead (workloads.LOOP_WORKLOADS: a tanh RNN at T = 10 ..
10,000 and at hidden 16, batch 1, T = 1,000; a scalar ring loop; RK4; a 2-D advection stencil
at 100 and 200 steps; a spring chain; RK4 on the Lorenz system) and adds a table of compile time
and module lines of both forms. Each plain form's gradient is checked along a random direction
against finite differences of the loss. Where numba is installed: the numba engine's gradient
(checked against the plain form to relative 1e-12) against the plain and buffered forms and
JAX, and ``ys.compile(..., engine="numba")``'s forward against a numba forward written by hand
(tools/loop_peers.py). The only peer by default is JAX (``jit(value_and_grad)`` of the loss
written with ``lax.scan`` / ``lax.fori_loop``, tools/loop_peers.py), where installed. A compile
that runs past ``--compile-timeout`` seconds of CPU time is reported as "timeout" and that
workload is not timed.
"""
from __future__ import annotations

import os
import sys

THREADS = "1"
for i, arg in enumerate(sys.argv):
    if arg.startswith("--threads"):
        THREADS = arg.split("=", 1)[1] if "=" in arg else sys.argv[i + 1]
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
            "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[var] = THREADS
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen="
                           f"{'true' if THREADS != '1' else 'false'} "
                           f"intra_op_parallelism_threads={THREADS}").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import signal  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

try:                    # numba, where installed: the numba engine's column of --loops
    import numba  # noqa: E402, F401
    HAVE_NUMBA = True
except ImportError:
    HAVE_NUMBA = False
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["YOTA_S2S_CACHE"] = tempfile.mkdtemp(prefix="yota-bench-")   # cold: compile time is real

import loop_peers  # noqa: E402
import workloads  # noqa: E402
import yota_s2s as ys  # noqa: E402
from yota_s2s.gradcheck import numerical_grad  # noqa: E402
from yota_s2s.memory_report import allocated  # noqa: E402

PEERS = ("jax", "torch", "autograd")
FORWARDS = ("ys.compile", "ys.compile numba", "numba by hand")   # forwards only: no gradient
SAMPLE_SECONDS = 0.004      # each timed sample loops a call until about this long
CLOCK = time.perf_counter   # --clock cpu: time.process_time, this process's CPU time


@dataclass
class Impl:
    name: str
    call: Callable[[], Any]                     # the timed call
    result: Callable[[], tuple]                 # (value, grads) as numpy, for the check
    numpy_memory: bool = True                   # tracemalloc sees its arrays
    held: int = 0           # bytes held between calls: work arrays, the module's constant arrays
    times: list[float] = field(default_factory=list)
    inner: int = 1
    alloc: int | None = None
    kept: int | None = None
    arrays: int | None = None                   # of alloc: numpy array data


# ----- implementations ----------------------------------------------------------------------------

class CompileTimeout(Exception):
    """A compile ran past ``--compile-timeout``."""


def compile_timed(w: workloads.Workload, args: tuple, timeout: float, cpu: dict | None = None,
                  **options) -> tuple[Any, float]:
    """``simplegrad`` of the workload and its latency in ms (its process CPU time in ms into
    ``cpu[w.name]``: on a shared machine the steadier of the two); CompileTimeout past
    ``timeout`` s of CPU time (0: no limit), so that a loaded machine does not turn a compile
    into a timeout."""
    expired = []

    def alarm(*_):
        expired.append(True)
        raise CompileTimeout
    old = signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, timeout)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        df = ys.simplegrad(w.loss, *args, **_wrt_option(w.wrt, len(args)), **options)
    except Exception:
        if expired:                 # the compiler may wrap what the alarm raised
            raise CompileTimeout from None
        raise
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    if cpu is not None:
        cpu[w.name] = (time.process_time() - c0) * 1e3
    return df, (time.perf_counter() - t0) * 1e3


def numpy_impls(w: workloads.Workload, args: tuple, compile_ms: dict, df=None) -> list[Impl]:
    """Forward, handwritten and generated (``df``, or compiled here and timed into compile_ms)."""
    wrt = w.wrt
    if df is None:
        df, compile_ms[w.name] = compile_timed(w, args, 0)
    held = _held_bytes(df)

    def pick(res):
        value, *grads = res
        return value, tuple(grads[i] for i in wrt)
    cf = ys.compile(w.loss, *args)          # the forward alone, as a generated module
    if not np.allclose(cf(*args), w.loss(*args), rtol=1e-9):
        raise SystemExit(f"{w.name}: ys.compile's forward disagrees with the loss")
    impls = [Impl("forward", _call(w.loss, args), lambda: None),
             reference_impl(w, args),
             Impl("yota", _call(df, args), lambda: pick(df(*args)), held=held),
             Impl("ys.compile", _call(cf, args), lambda: None, held=_held_bytes(cf))]
    if "out" in inspect.signature(df).parameters:
        value, *grads = df(*args)
        outs = tuple(np.empty_like(g) if isinstance(g, np.ndarray) else None for g in grads)
        impls.append(Impl("yota out=", _call(df, args, out=outs),
                          lambda: pick(df(*args, out=outs)), held=held))
    return impls


def reference_impl(w: workloads.Workload, args: tuple) -> Impl:
    """The gradient the others are checked against: the handwritten one, or where a workload
    has none, the numpy printer's plain form (itself checked against finite differences)."""
    if w.handwritten is not None:
        return Impl("handwritten", _call(w.handwritten, args), lambda: w.handwritten(*args))
    dp = ys.simplegrad(w.loss, *args, buffers=False, **_wrt_option(w.wrt, len(args)))
    value, *grads = dp(*args)
    for i in w.wrt:
        expected = numerical_grad(w.loss, list(args), i)
        if not np.allclose(grads[i], expected, rtol=1e-5, atol=1e-7 * np.max(np.abs(expected))):
            raise SystemExit(f"{w.name}: the numpy printer's gradient {i} disagrees with finite "
                             "differences")
    return Impl("numpy printer", _call(dp, args),
                lambda: (dp(*args)[0], tuple(dp(*args)[1 + i] for i in w.wrt)))


def numba_impl(w: workloads.Workload, args: tuple, info: dict, timeout: float) -> Impl | None:
    """The numba engine's gradient (compile CPU time into ``info``), checked against the numpy
    printer's plain form to relative 1e-12; None without numba."""
    if not HAVE_NUMBA:
        return None
    try:
        cpu: dict = {}
        dn, info["numba_ms"] = compile_timed(w, args, timeout, cpu, engine="numba")
    except CompileTimeout:
        info["numba_ms"] = "timeout"
        return None
    info["numba_cpu_ms"] = cpu[w.name]
    info["numba_fallbacks"] = ys.source(dn).count("# numba: this loop stays numpy")
    dp = ys.simplegrad(w.loss, *args, buffers=False, **_wrt_option(w.wrt, len(args)))
    for i, (g, r) in enumerate(zip(dn(*args), dp(*args))):
        if (g is None) != (r is None) or r is not None and not np.allclose(g, r, rtol=1e-12, atol=1e-12 * np.max(np.abs(r))):
            raise SystemExit(f"{w.name}: the numba engine's result {i} differs from the numpy "
                             "printer's by more than 1e-12")
    return Impl("yota numba", _call(dn, args),
                lambda: (dn(*args)[0], tuple(dn(*args)[1 + i] for i in w.wrt)))


def numba_forward_impls(w: workloads.Workload, args: tuple, info: dict) -> list[Impl]:
    """``ys.compile(..., engine="numba")``'s forward (its cold compile's CPU time into ``info``)
    and the forward written by hand for numba (tools/loop_peers.py), each checked against the
    loss (relative 1e-12); none without numba."""
    if not HAVE_NUMBA:
        return []
    want = float(w.loss(*args))
    c0 = time.process_time()
    cf = ys.compile(w.loss, *args, engine="numba")
    made = [("ys.compile numba", cf, float(cf(*args)))]
    info["forward_cpu_ms"] = (time.process_time() - c0) * 1e3
    hand = loop_peers.numba_forward(w.loss)
    if hand is not None:
        made.append(("numba by hand", hand, float(hand(*args))))
    for name, _, got in made:
        if abs(got - want) > 1e-12 * max(1.0, abs(want)):
            raise SystemExit(f"{w.name}: the {name} forward gives {got!r}, the loss {want!r}")
    return [Impl(name, _call(fn, args), lambda: None) for name, fn, _ in made]


def directional_check(w: workloads.Workload, args: tuple, df) -> None:
    """``df``'s gradients (the numpy printer's plain form) along a random direction against
    central differences of the loss along it, one per argument (a loop's arguments have too
    many elements for numerical_grad's one difference per element)."""
    rng = np.random.default_rng(1)
    value, *grads = df(*args)
    for i in w.wrt:
        d = rng.standard_normal(np.shape(args[i]))

        def at(t):
            xs = list(args)
            xs[i] = args[i] + t * d
            return float(w.loss(*xs))
        eps = 1e-6
        fd = (at(eps) - at(-eps)) / (2 * eps)
        along = float(np.sum(grads[i] * d))
        tol = 1e-5 * float(np.sum(np.abs(grads[i] * d))) + 1e-9 * abs(float(value)) / eps
        if not abs(fd - along) <= tol:
            raise SystemExit(f"{w.name}: gradient {i} along a direction {along!r}, finite "
                             f"differences {fd!r}")


def _call(fn: Callable, args: tuple, **keywords) -> Callable:
    """``lambda: fn(a0, a1, ..., out=out)``: the call written out, as a user writes it.
    ``fn(*args, out=outs)`` builds a dict of the keywords on every call (CPython's
    CALL_FUNCTION_EX), 0.1 us more than ``fn(x, out=o)``: 7% of the polynomial's gradient,
    measured against a handwritten gradient called without keywords."""
    names = [f"a{i}" for i in range(len(args))]
    text = ", ".join(names + [f"{k}={k}" for k in keywords])
    return eval(f"lambda: fn({text})", {"fn": fn, **dict(zip(names, args)), **keywords})


def _wrt_option(wrt: tuple, n: int) -> dict:
    """``wrt=`` for the gradients asked for, where this version of simplegrad takes it."""
    if "wrt" in inspect.signature(ys.simplegrad).parameters:
        return {"wrt": set(wrt)}
    return {}


def _held_bytes(df) -> int:
    """What the generated module holds between calls: its work arrays (one thread's) and the
    arrays it made once (ones vectors, 0-d numbers)."""
    report = getattr(ys, "memory_report", None)
    if report is None:
        return 0
    held = report(df)
    return held.bytes + getattr(held, "constant_bytes", 0)


def _rebind(fn: Callable, np_module) -> Callable:
    """``fn`` with ``np`` (and the workload module's other functions) bound to ``np_module``."""
    env = dict(workloads.__dict__, np=np_module)
    for name, value in list(env.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == workloads.__name__:
            env[name] = types.FunctionType(value.__code__, env, name, value.__defaults__)
    return env[fn.__name__]


def _splice(args: tuple, wrt: tuple, params) -> list:
    full = list(args)
    for i, p in zip(wrt, params):
        full[i] = p
    return full


def jax_impl(w: workloads.Workload, args: tuple) -> Impl:
    """``jit(value_and_grad)`` of the loss with JAX's ``np``; a loop workload's written with
    ``lax.scan`` or ``lax.fori_loop`` (tools/loop_peers.py; a Python loop would unroll)."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    looped = loop_peers.JAX.get(w.loss.__name__) if _is_loop(w) else None
    loss = _rebind(w.loss, jnp) if looped is None else \
        (lambda *xs: looped(jnp, jax.lax, *xs))
    f = jax.jit(jax.value_and_grad(loss, argnums=w.wrt))
    jargs = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]

    def result():
        value, grads = f(*jargs)
        return float(value), tuple(np.asarray(g) for g in grads)
    call = _call(f, tuple(jargs))
    return Impl("jax", lambda: jax.block_until_ready(call()), result, numpy_memory=False)


def _is_loop(w: workloads.Workload) -> bool:
    return any(w is loop for loop in workloads.LOOP_WORKLOADS)


def torch_impl(w: workloads.Workload, args: tuple) -> Impl | None:
    import torch
    torch.set_num_threads(int(THREADS))
    targs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else torch.tensor(a, dtype=torch.float64)
             for a in args]
    params = [targs[i].requires_grad_() for i in w.wrt]

    def call():
        value = w.torch_loss(torch, *targs)
        return value, torch.autograd.grad(value, params)

    def result():
        value, grads = call()
        return value.item(), tuple(g.numpy() for g in grads)
    return Impl("torch", call, result, numpy_memory=False)


def autograd_impl(w: workloads.Workload, args: tuple) -> Impl:
    import autograd
    import autograd.numpy as anp
    loss = _rebind(w.loss, anp)
    f = autograd.value_and_grad(lambda ps: loss(*_splice(args, w.wrt, ps)))
    params = tuple(args[i] for i in w.wrt)

    def result():
        value, grads = f(params)
        return float(value), tuple(np.asarray(g) for g in grads)
    return Impl("autograd", lambda: f(params), result)


def peer_impls(w: workloads.Workload, args: tuple, wanted: set[str]) -> list[Impl]:
    makers = {"jax": jax_impl, "torch": torch_impl, "autograd": autograd_impl}
    impls = []
    for name in PEERS:
        if name not in wanted or importlib.util.find_spec(name) is None:
            continue
        if name == "torch" and w.torch_loss is None:
            continue
        impls.append(makers[name](w, args))
    return impls


# ----- checking, timing, memory -------------------------------------------------------------------

def check(w: workloads.Workload, impls: list[Impl]) -> None:
    """Every implementation's value and gradients agree with the handwritten ones."""
    ref_value, ref_grads = impls[1].result()
    for impl in impls[2:]:
        if impl.name in FORWARDS:
            continue                    # a forward only: checked against the loss when made
        value, grads = impl.result()
        pairs = [("value", value, ref_value)] + [(f"gradient {i}", g, r) for i, g, r in
                                                  zip(w.wrt, grads, ref_grads)]
        for what, got, ref in pairs:
            scale = max(1.0, float(np.max(np.abs(ref))))
            if np.shape(got) != np.shape(ref) or not np.allclose(got, ref, rtol=1e-6, atol=1e-9 * scale):
                raise SystemExit(f"{w.name}: {impl.name} disagrees with the handwritten {what}")


def calibrate(impl: Impl) -> None:
    for _ in range(3):
        impl.call()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < SAMPLE_SECONDS / 2 or n < 2:
        impl.call()
        n += 1
    per_call = (time.perf_counter() - t0) / n
    impl.inner = max(1, round(SAMPLE_SECONDS / per_call))


def time_interleaved(impls: list[Impl], reps: int) -> None:
    for impl in impls:
        calibrate(impl)
    for _ in range(reps):
        for impl in impls:
            call, n = impl.call, impl.inner
            t0 = CLOCK()
            for _ in range(n):
                call()
            impl.times.append((CLOCK() - t0) / n)


def measure_memory(impl: Impl) -> None:
    """The call's peak and kept bytes, and the peak of numpy array data alone (``arrays``; the
    rest: iteration buffers, Python objects, numpy scalars): yota_s2s.memory_report.allocated."""
    if not impl.numpy_memory:
        return
    found = allocated(impl.call)
    impl.alloc, impl.kept, impl.arrays = found.peak, found.kept, found.arrays


# ----- report -----------------------------------------------------------------------------------

def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "n/a"
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _named(impls: list[Impl]) -> dict[str, Impl]:
    """The implementations by name, the reference (impls[1]) as "handwritten" too."""
    return {**{i.name: i for i in impls}, "handwritten": impls[1]}


def report(results: list[tuple[workloads.Workload, list[Impl]]], compile_ms: dict) -> str:
    names = ["forward", "handwritten", "yota", "yota out=", *PEERS]
    present = [n for n in names if any(i.name == n for _, impls in results for i in impls)]
    lines = ["## Median time per call", "",
             "| workload | " + " | ".join(present) + " |", "|---" * (len(present) + 1) + "|"]
    for w, impls in results:
        by = {n: statistics.median(i.times) for n, i in _named(impls).items()}
        lines.append(f"| {w.name} | " + " | ".join(fmt_time(by[n]) if n in by else "-" for n in present) + " |")
    lines += ["", "## Ratios (median time over median time)", "",
              "| workload | yota / forward | yota / handwritten | out= / handwritten | "
              + " | ".join(f"{p} / handwritten" for p in PEERS) + " | "
              + " | ".join(f"yota / {p}" for p in PEERS) + " |",
              "|---" * (4 + 2 * len(PEERS)) + "|"]
    for w, impls in results:
        by = {n: statistics.median(i.times) for n, i in _named(impls).items()}

        def ratio(a, b):
            return f"{by[a] / by[b]:.2f}x" if a in by and b in by else "-"
        cells = [ratio("yota", "forward"), ratio("yota", "handwritten"), ratio("yota out=", "handwritten")]
        cells += [ratio(p, "handwritten") for p in PEERS] + [ratio("yota", p) for p in PEERS]
        lines.append(f"| {w.name} | " + " | ".join(cells) + " |")
    lines += ["", "## ys.compile: the forward-only generated module against the Python forward", "",
              "| workload | forward | ys.compile | ys.compile / forward |", "|---" * 4 + "|"]
    for w, impls in results:
        by = {n: statistics.median(i.times) for n, i in _named(impls).items()}
        if "ys.compile" in by:
            lines.append(f"| {w.name} | {fmt_time(by['forward'])} | {fmt_time(by['ys.compile'])} | "
                         f"{by['ys.compile'] / by['forward']:.2f}x |")
    lines += ["", "## Memory per steady-state call (tracemalloc) and compile time", "",
              "out= arrays: the peak of numpy array data during a call with out= (issue 14: 0); "
              "out= other: the rest of its peak (numpy's iteration buffers, Python objects, "
              "numpy scalars).", "",
              "yota held: the work arrays one thread holds between calls and the arrays the "
              "module made once (ones vectors, 0-d numbers); yota peak: its call's peak plus "
              "those.", "",
              "| workload | handwritten peak | yota alloc | yota kept | yota held | yota peak "
              "| yota peak / handwritten | out= arrays | out= other | autograd peak "
              "| compile (first simplegrad) |",
              "|---" * 11 + "|"]
    for w, impls in results:
        by = _named(impls)
        yota = by["yota"]
        peak = None if yota.alloc is None else yota.alloc + yota.held
        lines.append(" | ".join([f"| {w.name}", fmt_bytes(by["handwritten"].alloc), fmt_bytes(yota.alloc),
                                 fmt_bytes(yota.kept), fmt_bytes(yota.held), fmt_bytes(peak),
                                 peak_ratio(yota, by["handwritten"]),
                                 *out_memory(by.get("yota out=")),
                                 fmt_bytes(by["autograd"].alloc if "autograd" in by else None),
                                 f"{compile_ms[w.name]:.0f} ms |"]))
    planned = [w.name for w, impls in results if impls[1].name != "handwritten"]
    if planned:
        lines += ["", f"({', '.join(planned)}: no handwritten gradient; the column 'handwritten' is "
                  "the numpy printer's plain form there.)"]
    return "\n".join(lines)


def peak_ratio(yota: Impl, hand: Impl) -> str:
    """The generated gradient's peak (its call's, plus what the module holds) over the
    handwritten one's, as a table cell."""
    if yota.alloc is None or not hand.alloc:
        return "-"
    return f"{(yota.alloc + yota.held) / hand.alloc:.3f}x"


def out_memory(out: Impl | None) -> list[str]:
    """The out= call's array bytes and its other bytes, as table cells."""
    if out is None or out.alloc is None:
        return ["-", "-"]
    return [fmt_bytes(out.arrays), fmt_bytes(out.alloc - out.arrays)]


def module_lines(df) -> int:
    return len(ys.source(df).splitlines())


def loop_report(results: list[tuple[workloads.Workload, list[Impl] | None]], compile_ms: dict,
                loops: dict) -> str:
    """Issue 12's table: what a loop costs to compile and to read, and the gradient's time and
    peak memory against the handwritten one (yota peak = its allocations plus what the module
    holds: work arrays, constant arrays)."""
    lines = ["## Loops: compile, module size, time and memory against handwritten", "",
             "| workload | compile buffered (CPU) | compile plain | lines buffered / plain | yota / handwritten "
             "| yota / forward | yota peak / handwritten peak | out= arrays | out= other |",
             "|---" * 9 + "|"]
    numba_lines = ["", "## Loops: the numba engine (engine=\"numba\") against the numpy printer and JAX",
                   "", "| workload | compile numba (CPU) | loops left numpy | numba | numpy printer (plain) "
                   "| buffered | JAX | plain / numba | buffered / numba | numba / JAX |", "|---" * 10 + "|"]
    forward_lines = ["", "## Loops: forwards, ys.compile(..., engine=\"numba\") against a numba forward "
                     "written by hand (tools/loop_peers.py)", "",
                     "| workload | numpy (the loss) | ys.compile numba (compile CPU) | numba by hand "
                     "| ys.compile numba / by hand |", "|---" * 5 + "|"]
    for w, impls in results:
        info = loops[w.name]
        plain = info.get("plain_ms")
        cells = [f"{compile_ms[w.name] / 1e3:.2f} s ({info['cpu_ms'][w.name] / 1e3:.2f} s)"
                 if w.name in compile_ms else "timeout",
                 "-" if plain is None else (f"{plain / 1e3:.2f} s" if plain != "timeout" else "timeout"),
                 f"{info.get('lines', 'timeout')} / {info.get('plain_lines', 'timeout')}"]
        if impls is None:
            cells += ["timeout"] * 5
        else:
            by = {i.name: i for i in impls}
            med = {n: statistics.median(i.times) for n, i in by.items()}
            ref = impls[1].name
            cells += [f"{med['yota'] / med[ref]:.2f}x" + (" (plain)" if ref != "handwritten" else ""),
                      f"{med['yota'] / med['forward']:.2f}x",
                      peak_ratio(by["yota"], by[ref]), *out_memory(by.get("yota out="))]
            if "yota numba" in med:
                plain = info.get("plain_time")
                jax = med.get("jax")
                over_jax = f"{med['yota numba'] / jax:.2f}x" if jax else "-"
                numba_lines.append(
                    f"| {w.name} | {info['numba_ms'] / 1e3:.2f} s ({info['numba_cpu_ms'] / 1e3:.2f} s) | "
                    f"{info['numba_fallbacks']} | {fmt_time(med['yota numba'])} | "
                    f"{fmt_time(plain) if plain else '-'} | {fmt_time(med['yota'])} | "
                    f"{fmt_time(jax) if jax else '-'} | "
                    f"{plain / med['yota numba']:.1f}x | {med['yota'] / med['yota numba']:.1f}x | "
                    f"{over_jax} |")
            if "ys.compile numba" in med:
                hand = med.get("numba by hand")
                over_hand = f"{med['ys.compile numba'] / hand:.2f}x" if hand else "-"
                forward_lines.append(
                    f"| {w.name} | {fmt_time(med['forward'])} | {fmt_time(med['ys.compile numba'])} "
                    f"({info['forward_cpu_ms'] / 1e3:.2f} s) | {fmt_time(hand) if hand else '-'} | "
                    f"{over_hand} |")
        lines.append(f"| {w.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines + (numba_lines if len(numba_lines) > 5 else [])
                     + (forward_lines if len(forward_lines) > 5 else []))


def run_loop_workload(w: workloads.Workload, args: tuple, opts, compile_ms: dict, loops: dict):
    """The buffered form timed as usual, the plain form compiled for its size; None when the
    buffered compile times out."""
    info = loops[w.name] = {"cpu_ms": {}}
    try:
        df, compile_ms[w.name] = compile_timed(w, args, opts.compile_timeout, info["cpu_ms"])
    except CompileTimeout:
        print(f"{w.name}: compile (buffered) over {opts.compile_timeout:g} s", file=sys.stderr)
        return None
    info["lines"] = module_lines(df)
    print(f"{w.name}: compiled in {compile_ms[w.name] / 1e3:.1f} s", file=sys.stderr)
    impls = numpy_impls(w, args, compile_ms, df)
    try:
        df, info["plain_ms"] = compile_timed(w, args, opts.compile_timeout, buffers=False)
        directional_check(w, args, df)
        info["plain_lines"] = module_lines(df)
        info["plain_time"] = _median_call(_call(df, args))
    except CompileTimeout:
        info["plain_ms"] = "timeout"
    numba = numba_impl(w, args, info, opts.compile_timeout)
    if numba is None:
        return impls
    return impls + [numba] + numba_forward_impls(w, args, info)


def _median_call(call: Callable) -> float:
    """The median time of ``call`` (the plain form's, beside the table's interleaved ones)."""
    impl = Impl("plain", call, lambda: None)
    time_interleaved([impl], 7)
    return statistics.median(impl.times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--reps", type=int, default=15, help="timed samples per implementation")
    parser.add_argument("--threads", default="1", help="threads per framework (default 1)")
    parser.add_argument("--peers", default=None, help="peers to run, if installed (default: all; "
                        "jax with --loops)")
    parser.add_argument("--loops", action="store_true", help="the loop workloads (issue 12)")
    parser.add_argument("--compile-timeout", type=float, default=240.0,
                        help="CPU seconds a --loops compile may take before it is reported as timeout")
    parser.add_argument("--compile-growth", action="store_true",
                        help="instead: compile time and memory per stage against program length "
                             "and array size, with growth exponents (tools/growth.py)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time samples by the wall clock (default) or by this process's CPU "
                             "time (on a loaded machine: the time others hold the CPU does not "
                             "count; with --threads 1, peers' worker threads count too)")
    opts = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if opts.clock == "cpu" else time.perf_counter
    if opts.compile_growth:
        import growth
        print(growth.report())
        return
    peers = opts.peers if opts.peers is not None else ("jax" if opts.loops else ",".join(PEERS))
    table = workloads.LOOP_WORKLOADS if opts.loops else workloads.WORKLOADS
    chosen = [w for w in table if not opts.only or w.name in opts.only.split(",")]
    results, compile_ms, loops = [], {}, {}
    for w in chosen:
        args = w.make_args(np.random.default_rng(0))
        if opts.loops:
            impls = run_loop_workload(w, args, opts, compile_ms, loops)
            if impls is None:
                results.append((w, None))
                continue
        else:
            impls = numpy_impls(w, args, compile_ms)
        impls += peer_impls(w, args, set(peers.split(",")))
        check(w, impls)
        time_interleaved(impls, opts.reps)
        for impl in impls:
            measure_memory(impl)
        results.append((w, impls))
        print(f"{w.name}: {w.title}: checked and timed ({', '.join(i.name for i in impls)})",
              file=sys.stderr)
    print(f"# yota-s2s {ys.__version__} benchmark, numpy {np.__version__}, {THREADS} thread(s) "
          f"per framework, {opts.reps} interleaved samples, medians of "
          f"{'CPU' if opts.clock == 'cpu' else 'wall-clock'} time\n")
    timed = [(w, impls) for w, impls in results if impls is not None]
    print(report(timed, compile_ms))
    if opts.loops:
        print()
        print(loop_report(results, compile_ms, loops))


if __name__ == "__main__":
    main()
