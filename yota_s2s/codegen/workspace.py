"""The module-level pieces of planned memory (buffers.py): the work-array table, the per-thread
accessor, and the helpers that put returned gradients into the caller's ``out=`` arrays.

    WORK_ARRAYS = [          # shape, dtype: the values that live in it
        ((256, 512), "float64", "h, dh"),
    ]

Each thread gets its own work arrays on its first call (``threading.local``), so concurrent
calls never share one; what a call returns is never a work array.
"""
from __future__ import annotations

from ..ir.tape import Tape
from ..text import literal_text

_WORK = '''
_local = threading.local()


def _work_arrays():
    """This thread's work arrays: made on its first call, reused by every later one."""
    arrays = getattr(_local, "arrays", None)
    if arrays is None:
        arrays = _local.arrays = tuple(xp.empty(shape, dtype) for shape, dtype, _ in WORK_ARRAYS)
    return arrays
'''

_OUT = '''
def _out_entry(out, key):
    argnum, path = key if isinstance(key, tuple) else (key, ())
    entry = out[argnum]
    return entry[path] if path and entry is not None else entry


def _result(out, key, shape, dtype=xp.float64):
    """The array a returned gradient is written into: the caller's (out=) or a new one."""
    array = None if out is None else _out_entry(out, key)
    if array is None:
        return xp.empty(shape, dtype)
    if array.shape != shape or array.dtype != dtype:
        raise TypeError(f"out[{key!r}] must be {xp.dtype(dtype).name}{list(shape)}, got "
                        f"{array.dtype}{list(array.shape)}")
    return array
'''

_DELIVER = '''
def _deliver(out, key, value):
    """``value``, or a copy of it in the caller's array when one was given (out=)."""
    array = None if out is None else _out_entry(out, key)
    if array is None:
        return value
    xp.copyto(array, value)
    return array
'''


def takes_out(emitter) -> bool:
    memory = emitter.memory
    return bool(memory.delivered) or any(g.kind == "result" for g in memory.group.values())


def prelude(emitter) -> str:
    """Module-level definitions the function body relies on ("" when there are none)."""
    memory, parts = emitter.memory, []
    if emitter.ones:
        parts.append("\n# Row and column sums of matrices are products with these (see header); "
                     "never written.\n" + "\n".join(
                         f"{name} = xp.ones({n})" if dtype == "float64" else
                         f"{name} = xp.ones({n}, xp.{dtype})"
                         for (n, dtype), name in sorted(emitter.ones.items())) + "\n")
    if memory.slots:
        rows = []
        for (shape, dtype, values), name in zip(memory.slots, emitter.slot_names):
            held = ", ".join(dict.fromkeys(emitter.names[v] for v in values))
            rows.append(f"    {literal_text((shape, dtype.name, held))},    # {name}")
        parts.append("\nWORK_ARRAYS = [    # shape, dtype, the values that live in it\n"
                     + "\n".join(rows) + "\n]\n" + _WORK)
    if takes_out(emitter):
        parts.append(_OUT)
    if memory.delivered:
        parts.append(_DELIVER)
    return "\n".join(parts)


def unpack_line(emitter) -> list[str]:
    if not emitter.slot_names:
        return []
    return [f"{', '.join(emitter.slot_names)}{',' if len(emitter.slot_names) == 1 else ''} = _work_arrays()"]


def header_lines(emitter, tape: Tape) -> list[str]:
    memory, lines = emitter.memory, []
    if emitter.ones:
        lines.append("Sums along an axis of a matrix are written as products with a vector of "
                     "ones (_ONES_n), which BLAS computes several times faster.")
    if memory.slots:
        lines.append(f"Work arrays: {len(memory.slots)} per thread, {_size(memory.bytes)} "
                     "(WORK_ARRAYS), made on a thread's first call.")
    if takes_out(emitter):
        lines.append("Gradients come back in new arrays, or in the caller's: pass out= with one "
                     "array (or None) per argument to allocate nothing.")
    return lines


def _size(n: int) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"
