"""CUDA-graph replay of a buffered cupy gradient: ``ys.cuda_graph(df)``.

At the bench sizes a GPU gradient is kernel-launch latency: each launch costs the host a few
microseconds however little the kernel does. A CUDA graph records the kernels of one call and
launches them all at once. The buffered form (``device="cuda"``, the default form) already has
what a graph needs: its work arrays stay at fixed addresses from one call to the next, and with
``out=`` it allocates nothing. ``cuda_graph(df)`` wraps such a function:

- the first call copies the arguments into arrays of its own (the graph's inputs), calls ``df``
  once as usual (the work arrays made, the kernels compiled), then again on a stream of its
  own between ``begin_capture()`` and ``end_capture()``, with ``out=`` arrays of its own: that
  captures the call's kernels into a graph; then launches the graph and returns its results;
- each later call copies its arguments into the graph's inputs (nothing where an argument is
  that input itself: ``g.inputs``) and launches the graph on the current stream: one launch
  from the host for the whole gradient.

It is safe where the call does the same work on the same memory every time, which it checks
or refuses: the arguments keep their shapes and dtypes, and numbers (captured by value) keep
their values; the function takes ``out=`` (the buffered form); it reads nothing on the host
inside (scalar mode's ``float(x[3])`` synchronizes, and cupy refuses it while capturing: the
capture's error says so). What it returns are the graph's arrays, written again by the next
call (as ``out=`` arrays are); copy them to keep them. One thread: the work arrays are the
thread's. Not yet measured on a device (docs/gpu.md).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import UsageError


def cuda_graph(fn: Callable) -> "CudaGraph":
    """``fn`` (a buffered gradient compiled with ``device="cuda"``) replayed from a CUDA graph:
    the first call captures it, later calls replay it (this module's docstring)."""
    return CudaGraph(fn)


class CudaGraph:
    """A gradient function and the CUDA graph of one of its calls."""

    def __init__(self, fn: Callable, xp: Any = None):
        try:
            takes_out = "out" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes_out = False
        if not takes_out:
            raise UsageError("cuda_graph replays a gradient that takes out= (the buffered "
                             "form); this function does not",
                             hint='Compile it with device="cuda" and buffers=True (the '
                                  'default), engine="numpy".')
        self.fn, self._xp = fn, xp
        self.graph: Any = None
        self.inputs: list | None = None      # the graph's arguments: arrays, or numbers
        self.result: Any = None
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
        self.inputs = [a.copy() if isinstance(a, xp.ndarray) else a for a in args]
        first = self.fn(*self.inputs)          # work arrays made, kernels compiled
        value, *grads = first if isinstance(first, tuple) else (first,)
        arrays = [isinstance(a, xp.ndarray) for a in args]
        if len(grads) != len(args) or any(
                g is not None and array and not isinstance(g, xp.ndarray)
                for g, array in zip(grads, arrays)):
            raise UsageError("cuda_graph replays a gradient that returns its value and one "
                             "gradient (or None) per argument, an array for an array",
                             hint="Call the gradient itself (a struct argument's gradient is "
                                  "not replayed yet).")
        # out= for the arrays' gradients; a number's is a 0-d work array's element on cupy
        out = [xp.empty_like(g) if g is not None and array else None
               for g, array in zip(grads, arrays)]
        stream = xp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            try:
                result = self.fn(*self.inputs, out=out)
            except Exception as e:
                stream.end_capture()
                raise UsageError(f"this gradient cannot be captured in a CUDA graph: {e}",
                                 hint="It reads a value on the host (scalar mode, a number "
                                      "argument's gradient) or allocates: call it without "
                                      "cuda_graph.") from e
            self.graph = stream.end_capture()
        self.result, self.captures = result, self.captures + 1
        current = xp.cuda.get_current_stream()
        with current:
            self.graph.launch(current)
        return result

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
