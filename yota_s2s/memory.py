"""``memory_report(df)``: the work arrays a generated gradient holds per thread.

The generated module lists them in ``WORK_ARRAYS`` (shape, dtype, the values that live in
each); this reads that table, so it works on any generated module, also in a process without
the compiler's state. A plain-form module (``buffers=False``) holds none.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class MemoryReport:
    function: str
    arrays: tuple[tuple[tuple[int, ...], str, str], ...]    # (shape, dtype, values held)

    @property
    def bytes(self) -> int:
        """Bytes held per thread that has called the function."""
        return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype, _ in self.arrays)

    def __str__(self) -> str:
        lines = [f"{self.function}: {len(self.arrays)} work arrays per thread, {self.bytes:,} bytes"]
        for k, (shape, dtype, values) in enumerate(self.arrays, 1):
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            lines.append(f"  buf{k}  {dtype}{list(shape)}  {size:,} bytes  holds {values}")
        return "\n".join(lines)


def memory_report(df: Callable) -> MemoryReport:
    module = sys.modules.get(getattr(df, "__module__", ""), None)
    table = getattr(module, "WORK_ARRAYS", [])
    return MemoryReport(getattr(df, "__name__", "?"), tuple((tuple(s), d, v) for s, d, v in table))
