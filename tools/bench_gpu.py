"""Benchmark on a CUDA device: the generated cupy gradient against the handwritten gradient run
on cupy arrays, and against PyTorch (cuda, eager) and JAX (jit, GPU) where installed.

    python tools/bench_gpu.py                  # every workload of tools/workloads.py
    python tools/bench_gpu.py --only mlp,rnn --scale 8

The handwritten gradients and the losses are tools/workloads.py's numpy source with ``np``
bound to cupy, so every implementation does the same arithmetic on the same device. Before any
timing it checks that every implementation returns the handwritten value and gradients. Each
sample synchronizes the device; medians of interleaved samples, and ratios to the handwritten
gradient. ``--scale`` multiplies the batch-like first axis of the data arguments where a
workload has one (GPU work at CPU sizes is mostly launch latency).

Besides the generated module as ``ys.simplegrad`` writes it (``yota``: the buffered cupy form)
it times the fused printer's module (``fused``: ``engine="fused"``, elementwise groups as CUDA
kernels, codegen/cupy_form.py), the buffered module replayed from a CUDA graph (``graph``:
``ys.cuda_graph``) and the fused one replayed (``fused+graph``), and counts, for one call of
each (``--launches``), the kernels the device runs and the
launches the host makes (cudaLaunchKernel, cuLaunchKernel, cudaGraphLaunch, memcpy/memset),
from PyTorch's profiler (CUPTI sees every library's kernels), where torch is installed.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import os
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("YOTA_S2S_CACHE", tempfile.mkdtemp(prefix="yota-bench-gpu-"))
os.environ.setdefault("JAX_PLATFORMS", "cuda")        # before bench, which defaults it to cpu

import cupy as cp  # noqa: E402

import bench  # noqa: E402   (its _rebind: a workload function with another ``np``)
import workloads  # noqa: E402
import yota_s2s as ys  # noqa: E402


def on_device(args: tuple) -> tuple:
    return tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def host(x):
    return x.get() if isinstance(x, cp.ndarray) else np.asarray(x)


def impls(w: workloads.Workload, args: tuple, wanted: set[str]) -> dict:
    dargs = on_device(args)
    t0 = time.perf_counter()
    df = ys.simplegrad(w.loss, *args, device="cuda", wrt=set(w.wrt))
    compile_s = time.perf_counter() - t0
    loss, hand = bench._rebind(w.loss, cp), bench._rebind(w.handwritten, cp)

    def pick(res):
        value, *grads = res
        return host(value), tuple(host(grads[i]) for i in w.wrt)
    out = {"forward": (lambda: loss(*dargs), None),
           "handwritten": (lambda: hand(*dargs), lambda: (host(hand(*dargs)[0]),
                                                          tuple(map(host, hand(*dargs)[1])))),
           "yota": (lambda: df(*dargs), lambda: pick(df(*dargs)))}
    fused = ys.simplegrad(w.loss, *args, device="cuda", wrt=set(w.wrt), engine="fused")
    if "fused" in wanted:
        out["fused"] = (lambda: fused(*dargs), lambda: pick(fused(*dargs)))
    for name, fn in (("graph", df), ("fused+graph", fused)):
        if name in wanted:
            graph = ys.cuda_graph(fn)
            try:
                graph(*dargs)                           # captured here, replayed after
            except ys.UsageError as e:
                print(f"{w.name}: no CUDA graph of {name}: {str(e).splitlines()[0]}")
            else:
                out[name] = (lambda g=graph: g(*dargs), lambda g=graph: pick(g(*dargs)))
    if "torch" in wanted and importlib.util.find_spec("torch") and w.torch_loss is not None:
        import torch
        targs = [torch.as_tensor(a, device="cuda") if isinstance(a, np.ndarray)
                 else torch.tensor(a, dtype=torch.float64, device="cuda") for a in args]
        params = [targs[i].requires_grad_() for i in w.wrt]

        def tcall():
            value = w.torch_loss(torch, *targs)
            return value, torch.autograd.grad(value, params)
        out["torch"] = (tcall, lambda: (tcall()[0].item(),
                                        tuple(g.cpu().numpy() for g in tcall()[1])))
    if "jax" in wanted and importlib.util.find_spec("jax"):
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        f = jax.jit(jax.value_and_grad(bench._rebind(w.loss, jnp), argnums=w.wrt))
        jargs = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        out["jax"] = (lambda: jax.block_until_ready(f(*jargs)),
                      lambda: (float(f(*jargs)[0]), tuple(np.asarray(g) for g in f(*jargs)[1])))
    return out, compile_s


def check(name: str, found: dict) -> None:
    value, grads = found["handwritten"][1]()
    for impl, (_, result) in found.items():
        if result is None or impl == "handwritten":
            continue
        v, gs = result()
        assert np.allclose(v, value, rtol=1e-6), f"{name}: {impl} value {v} != {value}"
        for i, (g, h) in enumerate(zip(gs, grads)):
            assert np.allclose(g, h, rtol=1e-6, atol=1e-8), f"{name}: {impl} gradient {i} differs"


def launches(call) -> tuple[int, int] | None:
    """(host launches, device kernels) of one ``call``, from PyTorch's profiler; None without
    torch."""
    if importlib.util.find_spec("torch") is None:
        return None
    from torch.profiler import ProfilerActivity, profile
    cp.cuda.Device().synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        cp.cuda.Device().synchronize()
    events = prof.events()
    host = sum(1 for e in events if any(k in e.name for k in (
        "LaunchKernel", "GraphLaunch", "Memcpy", "Memset")) and e.device_type.name == "CPU")
    device = sum(1 for e in events if e.device_type.name == "CUDA")
    return host, device


def sample(call, seconds: float = 0.01) -> float:
    """Seconds per call, looping until about ``seconds`` have passed, device synchronized."""
    cp.cuda.Device().synchronize()
    n, t0 = 0, time.perf_counter()
    while True:
        call()
        n += 1
        cp.cuda.Device().synchronize()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return elapsed / n


def scaled(args: tuple, w: workloads.Workload, scale: int) -> tuple:
    """The data arguments (those not differentiated) with their first axis tiled ``scale``
    times, where every data argument shares that first axis."""
    data = [i for i, a in enumerate(args) if i not in w.wrt and isinstance(a, np.ndarray)]
    if scale == 1 or not data or len({args[i].shape[0] for i in data}) != 1:
        return args
    return tuple(np.concatenate([a] * scale) if i in data else a for i, a in enumerate(args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--peers", default="torch,jax,fused,graph,fused+graph",
                        help="what else to time: torch, jax, fused (engine=\"fused\"), graph "
                             "(ys.cuda_graph of the buffered module), fused+graph (of the "
                             "fused one)")
    parser.add_argument("--launches", action="store_true",
                        help="count each implementation's launches per call (torch's profiler)")
    opts = parser.parse_args()
    chosen = [w for w in workloads.WORKLOADS if not opts.only or w.name in opts.only.split(",")]
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, cupy {cp.__version__}, "
          f"numpy {np.__version__}, scale {opts.scale}")
    print(f"{'workload':12} {'compile':>8} {'forward':>9} {'hand':>9} {'yota':>9} {'yota/hand':>9} "
          f"{'yota/fwd':>8}  peers (yota/peer)")
    for w in chosen:
        args = scaled(w.make_args(np.random.default_rng(0)), w, opts.scale)
        found, compile_s = impls(w, args, set(opts.peers.split(",")))
        check(w.name, found)
        times = {name: [] for name in found}
        for name, (call, _) in found.items():
            for _ in range(3):
                call()                                  # warm-up: kernels compiled, pools filled
        for _ in range(opts.reps):
            for name, (call, _) in found.items():
                times[name].append(sample(call))
        med = {name: statistics.median(t) for name, t in times.items()}
        peers = "  ".join(f"{p} {med['yota'] / med[p]:.2f}" for p in ("torch", "jax") if p in med)
        ours = ("fused", "graph", "fused+graph")
        peers += "".join(f"  {p}/jax {med[p] / med['jax']:.2f}" for p in ours
                         if p in med and "jax" in med)
        peers += "".join(f"  {p}/hand {med[p] / med['handwritten']:.2f}" for p in ours
                         if p in med)
        print(f"{w.name:12} {compile_s:7.2f}s {med['forward'] * 1e6:8.0f}u {med['handwritten'] * 1e6:8.0f}u "
              f"{med['yota'] * 1e6:8.0f}u {med['yota'] / med['handwritten']:9.2f} "
              f"{med['yota'] / med['forward']:8.2f}  {peers}")
        if opts.launches:
            counts = {name: launches(call) for name, (call, _) in found.items()}
            print(f"{'':12} launches per call (host, device kernels): " + "  ".join(
                f"{name} {c[0]},{c[1]}" for name, c in counts.items() if c is not None))


if __name__ == "__main__":
    main()
