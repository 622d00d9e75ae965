"""Kernel launches per gradient call, counted on a CPU: an estimate for tools/bench_gpu.py's.

    python tools/launch_count.py                   # the bench workloads
    python tools/launch_count.py --only mlp,rnn

Runs each workload's generated cupy gradient (the buffered and plain forms of the numpy
printer, and the fused printer's: engine="fused") on tests/fakecupy.py, with arrays that count
what cupy would launch a kernel for: each ufunc (an operator, a math function, a sum, a
product), each copy and each array written by an index, each fused kernel. Allocations,
views, shapes and fills are not counted (cupy makes them without a kernel, or with a memset).
This is an estimate: cuBLAS may launch more than one kernel for a product, and cupy's own
functions (``xp.sum`` over several axes, ``xp.broadcast_to(...).copy()``) are counted as one.
The device's count (``bench_gpu.py --launches``, PyTorch's profiler) is the measure.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from tests import fakecupy  # noqa: E402

COUNT = {"n": 0, "depth": 0}

# numpy functions cupy runs without a kernel: views, shapes, new arrays (a memset at most)
_FREE = {"broadcast_to", "expand_dims", "reshape", "transpose", "swapaxes", "moveaxis",
         "squeeze", "ravel", "shape", "ndim", "size", "result_type", "empty", "empty_like",
         "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "asarray", "array",
         "atleast_1d", "atleast_2d", "atleast_3d", "may_share_memory", "shares_memory",
         "copyto"}


class Counted(np.ndarray):
    """An array whose kernel-launching operations are counted (not those inside another)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _counted(lambda *a, **k: getattr(ufunc, method)(*a, **k), inputs, kwargs, True)

    def __array_function__(self, func, types, args, kwargs):
        return _counted(func, args, kwargs, func.__name__ not in _FREE)

    def copy(self, *args, **kwargs):
        return _counted(lambda a: np.ndarray.copy(a, *args, **kwargs), (self,), {}, True)

    def __setitem__(self, key, value):
        _counted(lambda a, v: np.ndarray.__setitem__(a, key, v), (self, value), {}, True)


def _plain(x):
    if isinstance(x, Counted):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(v) for v in x)
    return x


def _wrap(x):
    if type(x) is np.ndarray:
        return x.view(Counted)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return x


def _counted(fn, args, kwargs, launches: bool):
    if COUNT["depth"] == 0 and launches:
        COUNT["n"] += 1
    COUNT["depth"] += 1
    try:
        out = fn(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
    finally:
        COUNT["depth"] -= 1
    if "out" in kwargs and kwargs["out"] is not None:
        return kwargs["out"][0] if isinstance(kwargs["out"], tuple) and len(
            kwargs["out"]) == 1 else kwargs["out"]
    return _wrap(out)


def counting_cupy():
    """fakecupy, whose arrays are Counted and whose kernels count a launch each."""
    fake = fakecupy.module()
    fake.ndarray = Counted
    for name in ("zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like",
                 "full_like", "asarray", "array", "arange", "eye", "linspace"):
        fn = getattr(np, name)
        setattr(fake, name, lambda *a, _fn=fn, **k: _wrap(_fn(*_plain(a), **k)))
    for kind in ("ElementwiseKernel", "ReductionKernel"):
        base = getattr(fakecupy, kind)

        def call(self, *args, _base=base, **kwargs):
            COUNT["n"] += 1
            COUNT["depth"] += 1
            try:
                return _wrap(_base.__call__(self, *_plain(args), **kwargs))
            finally:
                COUNT["depth"] -= 1
        setattr(fake, kind, type(kind, (base,), {"__call__": call}))
    return fake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated workload names")
    opts = parser.parse_args()
    sys.modules["cupy"] = counting_cupy()
    import workloads
    import yota_s2s as ys
    print(f"{'workload':12} {'buffered':>9} {'plain':>9} {'fused':>9}   (launches per call)")
    for w in workloads.WORKLOADS:
        if opts.only and w.name not in opts.only.split(","):
            continue
        args = w.make_args(np.random.default_rng(0))
        dargs = tuple(a.view(Counted) if isinstance(a, np.ndarray) else a for a in args)
        counts = []
        for kw in ({}, {"buffers": False}, {"engine": "fused"}):
            df = ys.simplegrad(w.loss, *args, device="cuda", wrt=set(w.wrt), **kw)
            df(*dargs)                                   # work arrays made
            COUNT["n"] = 0
            df(*dargs)
            counts.append(COUNT["n"])
        print(f"{w.name:12} {counts[0]:9d} {counts[1]:9d} {counts[2]:9d}", flush=True)


if __name__ == "__main__":
    main()
