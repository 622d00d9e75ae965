"""Arrays made inside the function: no gradient flows into their shapes or fill values.

These are primitives that ``creates`` arrays: even with all-static arguments they are recorded
(the array is made when the generated code runs), not baked into the code as a constant.
``out_form="fill"``: codegen can fill a work array instead (``buf.fill(0.0)``).
"""
import numpy as np

from .registry import nodiff, primitive

primitive(np.zeros,      "shape, dtype=None", creates=True, out_form="fill")
primitive(np.ones,       "shape, dtype=None", creates=True, out_form="fill")
primitive(np.empty,      "shape, dtype=None", creates=True)
primitive(np.full,       "shape, fill_value, dtype=None", creates=True, out_form="fill")
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
for fn in (np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
           np.full_like, np.arange, np.linspace, np.eye, np.identity, np.array, np.asarray):
    nodiff(fn)
