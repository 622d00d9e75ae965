"""Elementwise functions: numpy ufuncs, ``math`` on Python floats, casts.

Each rule is the local derivative times ``dy``; un-broadcasting and dtype casts are done once,
in backward.py. ``y`` is the result, so ``exp`` and ``tanh`` reuse the forward value.
"""
import builtins
import math

import numpy as np

from .registry import diffrule, nodiff, primitive

# ----- numpy ------------------------------------------------------------------------------
diffrule(np.exp,        "x", "dy * y")
diffrule(np.exp2,       "x", "dy * y * np.log(2.0)")
diffrule(np.expm1,      "x", "dy * (y + 1)")
diffrule(np.log,        "x", "dy / x")
diffrule(np.log2,       "x", "dy / (x * np.log(2.0))")
diffrule(np.log10,      "x", "dy / (x * np.log(10.0))")
diffrule(np.log1p,      "x", "dy / (1 + x)")
diffrule(np.sqrt,       "x", "dy / (2 * y)")
diffrule(np.cbrt,       "x", "dy / (3 * y * y)")
diffrule(np.square,     "x", "dy * 2 * x")
diffrule(np.reciprocal, "x", "-dy * y * y")
diffrule(np.sin,        "x", "dy * np.cos(x)")
diffrule(np.cos,        "x", "-dy * np.sin(x)")
diffrule(np.tan,        "x", "dy * (1 + y * y)")
diffrule(np.arcsin,     "x", "dy / np.sqrt(1 - x * x)")
diffrule(np.arccos,     "x", "-dy / np.sqrt(1 - x * x)")
diffrule(np.arctan,     "x", "dy / (1 + x * x)")
diffrule(np.sinh,       "x", "dy * np.cosh(x)")
diffrule(np.cosh,       "x", "dy * np.sinh(x)")
diffrule(np.tanh,       "x", "dy * (1 - y * y)")
diffrule(np.arcsinh,    "x", "dy / np.sqrt(x * x + 1)")
diffrule(np.arccosh,    "x", "dy / np.sqrt(x * x - 1)")
diffrule(np.arctanh,    "x", "dy / (1 - x * x)")
diffrule(np.absolute,   "x", "dy * np.sign(x)")
diffrule(np.fabs,       "x", "dy * np.sign(x)")
diffrule(np.maximum,    "x1", "dy * (x1 >= x2)")    # ties: the whole gradient to x1
diffrule(np.maximum,    "x2", "dy * (x1 < x2)")
diffrule(np.minimum,    "x1", "dy * (x1 <= x2)")
diffrule(np.minimum,    "x2", "dy * (x1 > x2)")
diffrule(np.fmax,       "x1", "dy * (x1 >= x2)")
diffrule(np.fmax,       "x2", "dy * (x1 < x2)")
diffrule(np.fmin,       "x1", "dy * (x1 <= x2)")
diffrule(np.fmin,       "x2", "dy * (x1 > x2)")
diffrule(np.arctan2,    "x1", "dy * x2 / (x1 * x1 + x2 * x2)")
diffrule(np.arctan2,    "x2", "-dy * x1 / (x1 * x1 + x2 * x2)")
diffrule(np.hypot,      "x1", "dy * x1 / y")
diffrule(np.hypot,      "x2", "dy * x2 / y")
diffrule(np.logaddexp,  "x1", "dy * np.exp(x1 - y)")
diffrule(np.logaddexp,  "x2", "dy * np.exp(x2 - y)")

primitive(np.where, "condition, x1, x2")       # numpy's x, y: y is the result in rules
diffrule(np.where,      "x1", "np.where(condition, dy, 0.0)")
diffrule(np.where,      "x2", "np.where(condition, 0.0, dy)")

primitive(np.clip, "a, a_min, a_max")
diffrule(np.clip,       "a_min", "dy * (a < a_min)")
diffrule(np.clip,       "a_max", "dy * (a > a_max)")


@diffrule(np.clip, "a")
def clip_grad(a, a_min, a_max, dy):
    """The gradient passes where ``a`` is inside the bounds (a bound may be None)."""
    if a_min is None:
        return dy * (a <= a_max)
    if a_max is None:
        return dy * (a >= a_min)
    return dy * ((a >= a_min) & (a <= a_max))


primitive(np.round, "a, decimals=0")
primitive(np.fix, "x")
for fn in (np.sign, np.floor, np.ceil, np.round, np.rint, np.trunc, np.fix, np.isfinite,
           np.isinf, np.isnan, np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
           np.signbit):
    nodiff(fn)

# ----- math, on Python floats -------------------------------------------------------------
diffrule(math.exp,   "x", "dy * y")
diffrule(math.expm1, "x", "dy * (y + 1)")
diffrule(math.log1p, "x", "dy / (1 + x)")
diffrule(math.sqrt,  "x", "dy / (2 * y)")
diffrule(math.sin,   "x", "dy * math.cos(x)")
diffrule(math.cos,   "x", "-dy * math.sin(x)")
diffrule(math.tan,   "x", "dy * (1 + y * y)")
diffrule(math.asin,  "x", "dy / math.sqrt(1 - x * x)")
diffrule(math.acos,  "x", "-dy / math.sqrt(1 - x * x)")
diffrule(math.atan,  "x", "dy / (1 + x * x)")
diffrule(math.sinh,  "x", "dy * math.cosh(x)")
diffrule(math.cosh,  "x", "dy * math.sinh(x)")
diffrule(math.tanh,  "x", "dy * (1 - y * y)")
diffrule(math.fabs,  "x", "dy * math.copysign(1.0, x)")
primitive(math.log, "x")          # the one-argument form
diffrule(math.log,   "x", "dy / x")
for fn in (math.floor, math.ceil, math.trunc, math.copysign):
    nodiff(fn)

# ----- builtins and casts -----------------------------------------------------------------
primitive(builtins.abs, "x", name="abs", emit=("call", "abs"))
diffrule(builtins.abs, "x", "dy * np.sign(x)")
primitive(builtins.float, "x", name="float", emit=("call", "float"))
diffrule(builtins.float, "x", "dy")
primitive(builtins.complex, "x", name="complex", emit=("call", "complex"))
diffrule(builtins.complex, "x", "dy")


def astype(x, dtype):
    """``x.astype(dtype)`` as a function (the primitive behind the method)."""
    return x.astype(dtype)


primitive(astype, "x, dtype", name="astype", emit=("method", "astype"))
diffrule(astype, "x", "dy")           # backward.py casts dy back to x's dtype
