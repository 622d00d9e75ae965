"""CUDA-graph replay of a cupy gradient: ``ys.cuda_graph(df)``.

At the bench sizes a GPU gradient is kernel-launch latency: each launch costs the host a few
microseconds however little the kernel does. A CUDA graph records the kernels of one call and
launches them all at once. ``cuda_graph(df)`` wraps a gradient compiled with ``device="cuda"``:

- the first call copies the arguments into arrays of its own (the graph's inputs, ``g.inputs``),
  calls ``df`` once as usual (work arrays made, kernels compiled), then again on a stream of
  its own between ``begin_capture()`` and ``end_capture()``, which records the call's kernels
  (its loops' steps included) into a graph; then launches the graph and returns its results;
- each later call copies its arguments into the graph's inputs (nothing where an argument is
  that input itself) and launches the graph on the current stream: one launch from the host for
  the whole gradient.

A graph replays the same kernels on the same memory. The buffered form (the default) keeps its
work arrays at fixed addresses and, given ``out=`` (arrays the wrapper makes once), allocates
nothing. Whatever a call does allocate while it is captured (the plain and the fused forms'
new arrays, a library's scratch space) is allocated from cupy's pool and kept by the wrapper as
long as the graph lives, so no later array is given that memory while replays write it. The
wrapper checks the rest or refuses: the arguments keep their shapes and dtypes, numbers (the
graph holds their values) keep their values, and a call that reads the device from the host
(scalar mode's ``float(x[3])``) cannot be captured: cupy's error is raised as a UsageError
that says so. What it returns are the graph's arrays, written again by the next call (as
``out=`` arrays are); copy them to keep them. One thread, one stream at a time. Not yet
measured on a device (docs/gpu.md).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import UsageError


def cuda_graph(fn: Callable) -> "CudaGraph":
    """``fn`` (a gradient compiled with ``device="cuda"``) replayed from a CUDA graph: the
    first call captures it, later calls replay it (this module's docstring)."""
    return CudaGraph(fn)


class CudaGraph:
    """A gradient function and the CUDA graph of one of its calls."""

    def __init__(self, fn: Callable, xp: Any = None):
        try:
            self.takes_out = "out" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            self.takes_out = False
        self.fn, self._xp = fn, xp
        self.graph: Any = None
        self.inputs: list | None = None      # the graph's arguments: arrays, or numbers
        self.result: Any = None
        self.kept: list = []                 # the memory the captured call allocated
        self.captures = self.replays = 0

    @property
    def xp(self) -> Any:
        if self._xp is None:
            try:
                import cupy
            except ModuleNotFoundError:
                raise UsageError("cuda_graph needs cupy", hint="pip install cupy-cuda12x "
                                 "(CUDA 12) or cupy-cuda11x (CUDA 11)") from None
            self._xp = cupy
        return self._xp

    def __call__(self, *args: Any) -> Any:
        if self.graph is None:
            return self._capture(args)
        self._check(args)
        xp = self.xp
        stream = xp.cuda.get_current_stream()
        with stream:
            for into, a in zip(self.inputs, args):
                if isinstance(into, xp.ndarray) and a is not into:
                    xp.copyto(into, a)
            self.graph.launch(stream)
        self.replays += 1
        return self.result

    def _capture(self, args: tuple) -> Any:
        xp = self.xp
        current, stream = xp.cuda.get_current_stream(), xp.cuda.Stream(non_blocking=True)
        self.inputs = [a.copy() if isinstance(a, xp.ndarray) else a for a in args]
        stream.wait_event(current.record())
        pool = xp.get_default_memory_pool()

        def kept(size: int) -> Any:            # the graph's own memory, for its lifetime
            memory = pool.malloc(size)
            self.kept.append(memory)
            return memory
        with stream:
            # once as usual on the capture's stream: work arrays made, kernels compiled, and
            # the pool holding blocks of the sizes the call allocates (the capture takes them)
            first = self.fn(*self.inputs)
            keywords = {"out": self._out(args, first)} if self.takes_out else {}
            del first
            with xp.cuda.using_allocator(kept):
                stream.begin_capture()
                try:
                    result = self.fn(*self.inputs, **keywords)
                except Exception as e:
                    stream.end_capture()
                    raise UsageError(f"this gradient cannot be captured in a CUDA graph: {e}",
                                     hint="It reads a value of the device on the host (scalar "
                                          "mode: small vectors read element by element): call "
                                          "it without cuda_graph.") from e
                self.graph = stream.end_capture()
        self.result, self.captures = result, self.captures + 1
        current.wait_event(stream.record())
        with current:
            self.graph.launch(current)
        return result

    def _out(self, args: tuple, first: Any) -> list:
        """out= for the captured call: an array for each array argument's gradient (a
        number's is a 0-d work array's element on cupy)."""
        xp = self.xp
        value, *grads = first if isinstance(first, tuple) else (first,)
        arrays = [isinstance(a, xp.ndarray) for a in args]
        if len(grads) != len(args) or any(g is not None and array and not isinstance(
                g, xp.ndarray) for g, array in zip(grads, arrays)):
            raise UsageError("cuda_graph gives out= to a gradient that returns its value and "
                             "one gradient (or None) per argument, an array for an array",
                             hint="Call the gradient itself (a struct argument's gradient is "
                                  "not replayed yet).")
        return [xp.empty_like(g) if g is not None and array else None
                for g, array in zip(grads, arrays)]

    def _check(self, args: tuple) -> None:
        xp = self.xp
        if len(args) != len(self.inputs):
            raise UsageError(f"this CUDA graph was captured for {len(self.inputs)} arguments, "
                             f"not {len(args)}", hint="Make a cuda_graph for each signature.")
        for i, (into, a) in enumerate(zip(self.inputs, args)):
            if isinstance(into, xp.ndarray):
                if not isinstance(a, xp.ndarray) or a.shape != into.shape \
                        or a.dtype != into.dtype:
                    got = f"{a.dtype}{list(a.shape)}" if hasattr(a, "shape") else \
                        type(a).__name__
                    raise UsageError(f"argument {i}: the graph was captured for "
                                     f"{into.dtype}{list(into.shape)}, not {got}",
                                     hint="Make a cuda_graph for each signature.")
            elif type(a) is not type(into) or a != into:
                raise UsageError(f"argument {i}: the number {into!r} is captured in the graph, "
                                 "and this call passes another",
                                 hint="Pass it as a 0-d cupy array, or make a cuda_graph for "
                                      "each value.")
