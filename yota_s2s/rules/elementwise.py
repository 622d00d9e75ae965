"""Elementwise functions: numpy ufuncs (exp log trig hyperbolic powers abs maximum/minimum
fmax/fmin clip where logaddexp hypot arctan2 sinc nan_to_num, real imag conj angle), ``math``
on Python floats, casts. Rounding and predicates have no gradient: see discrete.py.

Each rule is the local derivative times ``dy``; un-broadcasting and dtype casts are done once,
in ad/sweep.py. ``y`` is the result, so ``exp`` and ``tanh`` reuse the forward value.
"""
import builtins
import math

import numpy as np

from .registry import batchrule, diffrule, jvprule, nodiff, primitive

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
diffrule(np.fabs,       "x", "dy * np.sign(x)")
# Ties (docs/rules.md): where x1 == x2 each operand gets half of dy, as in autograd and JAX,
# so np.maximum(0, x) and np.maximum(x, 0) agree. fmax/fmin pass dy to the number where the
# other operand is nan (the one they return).
ORDERS = "complex numbers have no order (numpy compares them lexicographically, not smoothly)"
for fn in (np.maximum, np.minimum, np.fmax, np.fmin):
    primitive(fn, real_only=ORDERS)
diffrule(np.maximum,    "x1", "dy * ((x1 > x2) + 0.5 * (x1 == x2))")
diffrule(np.maximum,    "x2", "dy * ((x2 > x1) + 0.5 * (x2 == x1))")
diffrule(np.minimum,    "x1", "dy * ((x1 < x2) + 0.5 * (x1 == x2))")
diffrule(np.minimum,    "x2", "dy * ((x2 < x1) + 0.5 * (x2 == x1))")
diffrule(np.fmax,       "x1", "dy * ((x1 > x2) + 0.5 * (x1 == x2) + np.isnan(x2))")
diffrule(np.fmax,       "x2", "dy * ((x2 > x1) + 0.5 * (x2 == x1) + np.isnan(x1))")
diffrule(np.fmin,       "x1", "dy * ((x1 < x2) + 0.5 * (x1 == x2) + np.isnan(x2))")
diffrule(np.fmin,       "x2", "dy * ((x2 < x1) + 0.5 * (x2 == x1) + np.isnan(x1))")
diffrule(np.arctan2,    "x1", "dy * x2 / (x1 * x1 + x2 * x2)")
diffrule(np.arctan2,    "x2", "-dy * x1 / (x1 * x1 + x2 * x2)")
diffrule(np.hypot,      "x1", "dy * x1 / y")
diffrule(np.hypot,      "x2", "dy * x2 / y")
diffrule(np.logaddexp,  "x1", "dy * np.exp(x1 - y)")
diffrule(np.logaddexp,  "x2", "dy * np.exp(x2 - y)")
diffrule(np.logaddexp2, "x1", "dy * np.exp2(x1 - y)")
diffrule(np.logaddexp2, "x2", "dy * np.exp2(x2 - y)")
diffrule(np.deg2rad,    "x", "dy * (np.pi / 180)")
diffrule(np.radians,    "x", "dy * (np.pi / 180)")
diffrule(np.rad2deg,    "x", "dy * (180 / np.pi)")
diffrule(np.degrees,    "x", "dy * (180 / np.pi)")
diffrule(np.conjugate,  "x", "np.conj(dy)")


@diffrule(np.absolute, "x")
def abs_grad(x, dy):
    """``dy * sign(x)``; for complex ``x``, ``dy * conj(x) / |x|`` (0 at 0), written without
    ``np.sign``, which has no derivative for complex values (a gradient of this one needs it)."""
    if np.iscomplexobj(x):
        return dy * np.conj(x) / np.where(x == 0, 1, np.abs(x))
    return dy * np.sign(x)


primitive(np.sinc, "x", elementwise=True)


@diffrule(np.sinc, "x")
def sinc_grad(x, y, dy):
    """``(cos(pi x) - sinc(x)) / x``, and 0 at 0."""
    at_zero = x == 0
    return dy * np.where(at_zero, 0.0, (np.cos(np.pi * x) - y) / np.where(at_zero, 1.0, x))


primitive(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None", elementwise=True)
diffrule(np.nan_to_num, "x", "np.where(np.isfinite(x), dy, 0.0)",
         ignores=("copy", "nan", "posinf", "neginf"))    # replacements are constants

# Complex numbers follow JAX's (and autograd's) convention, docs/complex.md: the gradient of a
# real loss L with respect to z = a + ib is dL/da - i dL/db, so holomorphic rules need no
# conjugates.
primitive(np.real, "val", view=True, elementwise=True)
primitive(np.imag, "val", view=True, elementwise=True)
primitive(np.angle, "z, deg=False", elementwise=True)
diffrule(np.real, "val", "dy")                  # ad/sweep.py casts dy to val's dtype


@diffrule(np.imag, "val")
def imag_grad(val, dy):
    """``-1j * dy``; a real input has no imaginary part to vary."""
    return -1j * dy if np.iscomplexobj(val) else np.zeros_like(dy)


@diffrule(np.angle, "z")
def angle_grad(z, dy, deg=False):
    """``dy conj(iz) / |z|^2``; the angle of a real number is piecewise constant."""
    if not np.iscomplexobj(z):
        return np.zeros_like(dy)
    scale = 180 / np.pi if deg else 1.0
    return dy * scale * np.conj(z * 1j) / np.abs(z) ** 2

# Forward mode: these are not holomorphic, so their JVP is not their VJP with dy := the tangent
# (the elementwise derivation); for a real operand they agree with it.
jvprule(np.real, "val", "np.real(dval)")
jvprule(np.imag, "val", "np.imag(dval)")


@jvprule(np.absolute, "x")
def abs_jvp(x, dx):
    """``Re(conj(x) dx) / |x|`` (0 at 0); ``sign(x) dx`` for a real ``x``."""
    if np.iscomplexobj(x):
        return np.real(np.conj(x) * dx) / np.where(x == 0, 1, np.abs(x))
    return np.sign(x) * dx


@jvprule(np.angle, "z")
def angle_jvp(z, dz, deg=False):
    """``Im(conj(z) dz) / |z|^2``: the angle of ``z`` is ``Im(log z)``; 0 for a real ``z``."""
    if not np.iscomplexobj(z):
        return np.zeros_like(np.real(dz))
    scale = 180 / np.pi if deg else 1.0
    return scale * np.imag(np.conj(z) * dz) / np.abs(z) ** 2


primitive(np.where, "condition, x1, x2", elementwise=True, out_form="where")   # numpy's x, y: y is the result in rules
diffrule(np.where,      "x1", "np.where(condition, dy, 0.0)")
diffrule(np.where,      "x2", "np.where(condition, 0.0, dy)")

primitive(np.clip, "a, a_min, a_max", elementwise=True, real_only=ORDERS)


# clip(a, lo, hi) is minimum(maximum(a, lo), hi): at a bound, a and the bound share dy
# equally (the maximum/minimum tie rule); a bound may be None. The last factor is the boolean
# mask of the closed interval, so that the rules before it see exact zeros outside the bounds
# (ad/sweep.py, "masked": np.clip(np.log(x), -5, 5) at x = 0 has the gradient 0, not nan).
@diffrule(np.clip, "a")
def clip_grad(a, a_min, a_max, dy):
    """``dy`` inside the bounds, half of it at a bound, none outside."""
    if a_min is None:
        return dy * (1.0 - 0.5 * (a == a_max)) * (a <= a_max)
    if a_max is None:
        return dy * (1.0 - 0.5 * (a == a_min)) * (a >= a_min)
    return dy * (1.0 - 0.5 * (a == a_min) - 0.5 * (a == a_max)) * ((a >= a_min) & (a <= a_max))


diffrule(np.clip,       "a_min", "dy * ((a < a_min) + 0.5 * (a == a_min))")
diffrule(np.clip,       "a_max", "dy * ((a > a_max) + 0.5 * (a == a_max))")


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
diffrule(math.fabs,  "x", "dy * (1.0 * (x > 0) - 1.0 * (x < 0))")    # 0 at 0, as np.abs
primitive(math.log, "x")          # the one-argument form
diffrule(math.log,   "x", "dy / x")
for fn in (math.floor, math.ceil, math.trunc, math.copysign):
    nodiff(fn)

# ----- builtins and casts -----------------------------------------------------------------
primitive(builtins.abs, "x", name="abs", emit=("call", "abs"), elementwise=True)
diffrule(builtins.abs, "x", abs_grad)
jvprule(builtins.abs, "x", abs_jvp)
primitive(builtins.float, "x", name="float", emit=("call", "float"), elementwise=True)
diffrule(builtins.float, "x", "dy")
primitive(builtins.complex, "x", name="complex", emit=("call", "complex"), elementwise=True)
diffrule(builtins.complex, "x", "dy")    # ad/sweep.py takes the real part for a real x


def astype(x, dtype):
    """``x.astype(dtype)`` as a function (the primitive behind the method); a Python number
    (a folded constant) becomes a numpy scalar of ``dtype``."""
    return x.astype(dtype) if hasattr(x, "astype") else np.dtype(dtype).type(x)


primitive(astype, "x, dtype", name="astype", emit=("method", "astype"), elementwise=True)
diffrule(astype, "x", "dy")           # ad/sweep.py casts dy back to x's dtype


# ----- written with where and real --------------------------------------------------------------
# (Python versions the frontend inlines: frontend/numpy_calls.py)
def select(condlist, choicelist, default=0):
    """``np.select``: the choice of the first condition that holds, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    result = default
    for condition, choice in zip(condlist[::-1], choicelist[::-1]):
        result = np.where(condition, choice, result)
    return result


def real_if_close(a, tol=100):
    """``np.real_if_close``, as numpy computes it: a complex array whose imaginary parts are
    all below ``tol`` (in machine epsilons where ``tol > 1``) is its real part, any other is
    itself. The result's dtype depends on the values: the frontend takes the example's arm and
    the generated code checks it holds (a guard)."""
    if not np.iscomplexobj(a):
        return a
    if tol > 1:
        tol = tol * np.finfo(np.result_type(a)).eps
    if np.all(np.abs(np.imag(a)) < tol):
        return np.real(a)
    return a


WRITTEN = {np.select: select, np.real_if_close: real_if_close}


# ----- batching (ys.vmap): math's functions of a float are numpy's ufuncs on a batch --------
MATH_UFUNCS = {math.exp: np.exp, math.expm1: np.expm1, math.log1p: np.log1p, math.sqrt: np.sqrt,
               math.sin: np.sin, math.cos: np.cos, math.tan: np.tan, math.asin: np.arcsin,
               math.acos: np.arccos, math.atan: np.arctan, math.sinh: np.sinh,
               math.cosh: np.cosh, math.tanh: np.tanh, math.fabs: np.fabs, math.log: np.log}


def _as_ufunc(ufunc):
    def math_batched(x):
        return ufunc(x)
    return math_batched


for _fn, _ufunc in MATH_UFUNCS.items():
    batchrule(_fn, _as_ufunc(_ufunc))


@batchrule(builtins.float)
def float_batched(x, size):
    """A float of each example (of its one element): float64, as Python's float is."""
    return np.reshape(x, (size,)).astype(np.float64)


@batchrule(builtins.complex)
def complex_batched(x, size):
    return np.reshape(x, (size,)).astype(np.complex128)
