"""What a generated module says differently by device: the array module it imports as ``xp``,
how an argument is tested to be one of that module's arrays, and (dask) the calls it lacks.

- ``cpu``: numpy; ``cuda``: cupy (docs/gpu.md). Either form, buffered or plain.
- ``dask``: ``dask.array`` (docs/dask.md), in the plain form only: the buffered form writes
  into work arrays with ``out=``, which lazy arrays do not take. An array argument may be a
  dask array or a numpy array (a dask operation takes both), so small parameters stay numpy
  beside chunked data; the results are lazy dask arrays that the caller computes. Functions
  and dtypes are read from ``xp`` as on numpy (``dask.array`` has ``exp``, ``float64``...);
  a call that ``dask.array`` lacks is refused when compiling (``check_calls``), by name and
  with the user's line that needs it.

Nothing else in the generated text depends on the device (the argument checks' tests are
written by ``not_an_array``; numpy's and cupy's text is what it was before dask).
"""
from __future__ import annotations

import ast
import re

from ..errors import DASK_INSTALL, UsageError

DEVICES = ("cpu", "cuda", "dask")
PLAIN_ONLY = frozenset({"dask"})        # devices whose modules are written in the plain form

CUPY_IMPORT = """try:
    import cupy as xp
except ModuleNotFoundError as e:
    raise ModuleNotFoundError("this module was generated for device='cuda', which needs cupy: "
                              "pip install cupy-cuda12x (CUDA 12) or cupy-cuda11x (CUDA 11)",
                              name="cupy") from e"""

DASK_IMPORT = """try:
    import dask.array as xp
except ModuleNotFoundError as e:
    raise ModuleNotFoundError("this module was generated for device='dask', which needs dask: "
                              "pip install 'dask[array]'", name="dask") from e
import numpy"""

# The dask module's _mismatch: it takes dask and numpy arrays, and says which it was given.
DASK_MISMATCH = '''
def _mismatch(func, name, expected, value):
    if isinstance(value, numpy.ndarray) and type(value) is not numpy.ndarray:
        return TypeError(f"{func}: argument {name} is a {type(value).__qualname__}, a subclass of "
                         "ndarray, whose operations may differ; pass a plain array: "
                         f"numpy.asarray({name})")
    kind = type(value).__module__.partition(".")[0]
    got = f"a {kind} array {value.dtype}{list(value.shape)}" if hasattr(value, "shape") else \\
        repr(value)
    return TypeError(f"{func}: argument {name} must be {expected}, got {got}; this module "
                     "takes dask or numpy arrays: compile again for these arguments (ys.grad "
                     "does this for you)")
'''


def import_lines(device: str) -> str:
    """The array module as ``xp`` (and, for dask, numpy for the argument checks)."""
    return {"cuda": CUPY_IMPORT, "dask": DASK_IMPORT}.get(device, "import numpy as xp")


def not_an_array(device: str, ref: str, scalar_ok: bool = False) -> str:
    """The test that ``ref`` is not an array this module takes: exactly ``xp.ndarray`` on
    numpy and cupy (a subclass such as np.matrix computes something else), a dask or a numpy
    array on dask; with ``scalar_ok`` (a 0-d argument), a numpy scalar too."""
    if device == "dask":
        test = f"type({ref}) not in (xp.Array, numpy.ndarray)"
        return f"({test} and not isinstance({ref}, numpy.generic))" if scalar_ok else test
    return f"(type({ref}) is not xp.ndarray and not isinstance({ref}, xp.generic))" \
        if scalar_ok else f"type({ref}) is not xp.ndarray"


def dask_array_module():
    """``dask.array``, or a ``UsageError`` that says how to install it."""
    try:
        import dask.array
    except ModuleNotFoundError:
        raise UsageError("device=\"dask\" needs dask, and dask is not installed",
                         hint=DASK_INSTALL) from None
    return dask.array


_SOURCE_COMMENT = re.compile(r"#(?: grad of)? (\S+:\d+)  (.*)")


def check_calls(text: str, device: str) -> None:
    """For dask: every ``xp.NAME`` (``xp.linalg.NAME``...) that the module reads exists in the
    installed ``dask.array``; the first that does not is refused, with the source line whose
    code needs it (the comment above it in the module: ``# model.py:12  y = ...``)."""
    if device != "dask":
        return
    xp = dask_array_module()
    lines = text.splitlines()
    lacking = sorted((node for node in ast.walk(ast.parse(text))
                      if (dotted := _xp_chain(node)) is not None and not _has(xp, dotted)),
                     key=lambda node: (node.lineno, node.col_offset))
    for node in lacking[:1]:
        dotted = _xp_chain(node)
        where = next((m for line in reversed(lines[:node.lineno - 1])
                      if (m := _SOURCE_COMMENT.match(line.strip()))), None)
        at = f" for {where[1]} ({where[2].strip()})" if where else ""
        raise UsageError(
            f"device=\"dask\": the gradient needs xp.{dotted}{at}, and dask.array has no "
            f"{dotted}", hint="Compile this function for device=\"cpu\" (numpy), or compute "
            "that part outside the function and pass its result in as an argument; dask.array "
            "implements most of numpy, not all (its linalg, for example, lacks det and eig).")


def _xp_chain(node: ast.AST) -> str | None:
    """``linalg.det`` for the outermost node of ``xp.linalg.det``; None for anything else."""
    if not isinstance(node, ast.Attribute):
        return None
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join(reversed(parts)) if isinstance(node, ast.Name) and node.id == "xp" else None


def _has(module: object, dotted: str) -> bool:
    for part in dotted.split("."):
        if not hasattr(module, part):
            return False
        module = getattr(module, part)
    return True
