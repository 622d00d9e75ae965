"""Arrays made inside the function: no gradient flows into their shapes; fill values and the
ends of ``np.linspace`` get theirs.

These are primitives that ``creates`` arrays: even with all-static arguments they are recorded
(the array is made when the generated code runs), not baked into the code as a constant.
``out_form="fill"``: codegen can fill a work array instead (``buf.fill(0.0)``); ``"empty"``:
it can take a work array as it is.
"""
import numpy as np

from .registry import diffrule, nodiff, primitive

primitive(np.zeros,      "shape, dtype=None", creates=True, out_form="fill")
primitive(np.ones,       "shape, dtype=None", creates=True, out_form="fill")
primitive(np.empty,      "shape, dtype=None", creates=True, out_form="empty")
primitive(np.full,       "shape, fill_value, dtype=None", creates=True, out_form="fill",
          linear=True)
primitive(np.zeros_like, "a, dtype=None, shape=None", creates=True)
primitive(np.ones_like,  "a, dtype=None", creates=True)
primitive(np.empty_like, "a, dtype=None", creates=True)
primitive(np.full_like,  "a, fill_value, dtype=None", creates=True)
primitive(np.arange,     "start, stop=None, step=None, dtype=None", creates=True)
primitive(np.linspace,   "start, stop, num=50, endpoint=True, dtype=None", creates=True)
primitive(np.eye,        "N, M=None, k=0, dtype=None", creates=True)
primitive(np.identity,   "n, dtype=None", creates=True)
primitive(np.array,      "object, dtype=None", creates=True)
primitive(np.asarray,    "a, dtype=None", creates=True)
for fn in (np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
           np.arange, np.eye, np.identity, np.array, np.asarray):
    nodiff(fn)

# A traced fill value or end point is a value like any other: ``np.full(s, a)`` is ``a``
# broadcast (ad/sweep.py sums ``dy`` back to its shape), ``np.linspace`` is linear in both ends.
nodiff(np.full, "shape")
diffrule(np.full, "fill_value", "dy", ignores=("dtype",))
nodiff(np.full_like, "a")
diffrule(np.full_like, "fill_value", "dy", ignores=("dtype",))


def _linspace_steps(dy, num, endpoint):
    """Where each of ``num`` points lies between start (0) and stop (1), along axis 0."""
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    return np.reshape(t, (num,) + (1,) * (np.ndim(dy) - 1))


@diffrule(np.linspace, "start", ignores=("dtype",))
def linspace_grad_start(start, stop, dy, num=50, endpoint=True):
    return dy * (1.0 - _linspace_steps(dy, num, endpoint))


@diffrule(np.linspace, "stop", ignores=("dtype",))
def linspace_grad_stop(start, stop, dy, num=50, endpoint=True):
    return dy * _linspace_steps(dy, num, endpoint)
