"""``memory_report(df)``: the work arrays a generated gradient holds per thread, and the
arrays its module makes once.

The generated module lists its work arrays in ``WORK_ARRAYS`` (shape, dtype, the values that
live in each); this reads that table, so it works on any generated module, also in a process
without the compiler's state. A plain-form module (``buffers=False``) holds none. The module's
constants (``_ONES_100``, the ones vector of row sums; ``_1_0``, the 0-d array of a number
ufuncs read) are held too, once per process: ``constant_bytes``.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class MemoryReport:
    function: str
    arrays: tuple[tuple[tuple[int, ...], str, str], ...]    # (shape, dtype, values held)
    constants: tuple[tuple[str, int], ...] = ()     # (name, bytes) of the module's arrays

    @property
    def bytes(self) -> int:
        """Bytes held per thread that has called the function."""
        return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype, _ in self.arrays)

    @property
    def constant_bytes(self) -> int:
        """Bytes of the arrays the module made once (ones vectors, 0-d numbers)."""
        return sum(size for _, size in self.constants)

    def __str__(self) -> str:
        lines = [f"{self.function}: {len(self.arrays)} work arrays per thread, {self.bytes:,} bytes"]
        for k, (shape, dtype, values) in enumerate(self.arrays, 1):
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            lines.append(f"  buf{k}  {dtype}{list(shape)}  {size:,} bytes  holds {values}")
        if self.constants:
            lines.append(f"  and {len(self.constants)} arrays made once by the module, "
                         f"{self.constant_bytes:,} bytes: {', '.join(n for n, _ in self.constants)}")
        return "\n".join(lines)


def memory_report(df: Callable) -> MemoryReport:
    module = sys.modules.get(getattr(df, "__module__", ""), None)
    table = getattr(module, "WORK_ARRAYS", [])
    constants = () if module is None else tuple(
        (name, int(value.nbytes)) for name, value in vars(module).items() if _array(value))
    return MemoryReport(getattr(df, "__name__", "?"), tuple((tuple(s), d, v) for s, d, v in table),
                        constants)


def _array(value: object) -> bool:
    """A numpy array, or cupy's (a GPU module's constants)."""
    return isinstance(value, np.ndarray) or (type(value).__name__ == "ndarray"
                                             and type(value).__module__.startswith("cupy"))


@dataclass(frozen=True)
class Allocation:
    """What one call allocates above the memory before it (tracemalloc): ``peak``, every
    allocation at the call's peak; ``arrays``, numpy array data alone (its own peak); ``kept``,
    what is still allocated after the call (what it returns)."""

    peak: int
    arrays: int
    kept: int


def allocated(call: Callable[[], object]) -> Allocation:
    """The allocations of ``call()`` (called three times: a warm-up, then once for each figure).

    numpy reports its array data to tracemalloc in a domain of its own
    (``np.lib.tracemalloc_domain``); everything else (Python objects, numpy's iteration
    buffers and scalars) is Python's allocator, domain 0. tracemalloc keeps one peak for all
    domains, and a snapshot shows only what is alive when it is taken, not a temporary freed
    inside the call; so the array figure is measured in a second call during which Python's
    allocators are the untraced ones again (``PyMem_SetAllocator``, by ctypes): tracing stays
    on, and only numpy's own reports move the traced memory."""
    import tracemalloc

    call()
    untraced = _allocators()
    tracemalloc.start()
    try:
        traced = _allocators()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        current, peak = tracemalloc.get_traced_memory()
        del result
        _set_allocators(untraced)
        try:
            tracemalloc.reset_peak()
            base_arrays = tracemalloc.get_traced_memory()[0]
            result = call()
            arrays = tracemalloc.get_traced_memory()[1] - base_arrays
            del result
        finally:
            _set_allocators(traced)
    finally:
        tracemalloc.stop()
    return Allocation(peak - base, arrays, current - base)


_DOMAINS = (0, 1, 2)        # PYMEM_DOMAIN_RAW, _MEM, _OBJ


class _PyMemAllocatorEx(ctypes.Structure):
    """A context and four function pointers: only copied and put back, never called here."""
    _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]


def _pymem(name: str):
    """``PyMem_GetAllocator`` or ``PyMem_SetAllocator`` (the documented C API), called with the
    GIL held."""
    prototype = ctypes.PYFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(_PyMemAllocatorEx))
    return prototype((name, ctypes.pythonapi))


def _allocators() -> list[_PyMemAllocatorEx]:
    """Python's three allocators as they are now."""
    get, found = _pymem("PyMem_GetAllocator"), []
    for domain in _DOMAINS:
        found.append(_PyMemAllocatorEx())
        get(domain, ctypes.byref(found[-1]))
    return found


def _set_allocators(allocators: list[_PyMemAllocatorEx]) -> None:
    put = _pymem("PyMem_SetAllocator")
    for domain, allocator in zip(_DOMAINS, allocators):
        put(domain, ctypes.byref(allocator))
