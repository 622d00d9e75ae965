"""Python operators on arrays and floats: ``+ - * / ** -x``, and the non-differentiable ones.

``np.add`` and friends are aliases of the operators, so ``np.multiply(a, b)`` is written
``a * b`` in the generated code. ``@`` (matmul) lives in linalg.py, indexing in indexing.py.
"""
import operator

import numpy as np

from .registry import alias, diffrule, nodiff, primitive
from .template import is_static

# Each operator is elementwise: the numpy ufunc named beside it computes it (into out=).
primitive(operator.add,     "x1, x2", name="add", emit=("binop", "+"),  ufunc=np.add,
          cheap=True, commutative=True)
primitive(operator.sub,     "x1, x2", name="sub", emit=("binop", "-"),  ufunc=np.subtract,
          cheap=True)
primitive(operator.mul,     "x1, x2", name="mul", emit=("binop", "*"),  ufunc=np.multiply,
          cheap=True, commutative=True)
primitive(operator.truediv, "x1, x2", name="div", emit=("binop", "/"),  ufunc=np.divide)
primitive(operator.pow,     "x1, x2", name="pow", emit=("binop", "**"), ufunc=np.power)
primitive(operator.neg,     "x",      name="neg", emit=("unop", "-"),   ufunc=np.negative, cheap=True)

diffrule(operator.add,     "x1", "dy")
diffrule(operator.add,     "x2", "dy")
diffrule(operator.sub,     "x1", "dy")
diffrule(operator.sub,     "x2", "-dy")
diffrule(operator.mul,     "x1", "dy * x2")
diffrule(operator.mul,     "x2", "x1 * dy")
diffrule(operator.truediv, "x1", "dy / x2")
diffrule(operator.truediv, "x2", "-dy * y / x2")
diffrule(operator.neg,     "x",  "-dy")


@diffrule(operator.pow, "x1", shows="dy * x2 * x1 ** (x2 - 1)")
def pow_base_grad(x1, x2, dy):
    """``dy * x2 * x1 ** (x2 - 1)``, and 0 where the exponent is 0: ``x1 ** 0`` is 1 for every
    ``x1`` (numpy's ``0 ** 0`` too), where the formula would make ``0 * 0 ** -1``, nan. A literal
    exponent decides it when compiling (the common case: no extra work); a traced one per
    element, with the same number of operations."""
    if not (is_static(x2) and np.ndim(x2) == 0):
        return dy * x2 * x1 ** np.where(x2 == 0, 1, x2 - 1)
    if x2 == 0:
        return None
    return dy * x2 * x1 ** (x2 - 1)


@diffrule(operator.pow, "x2")
def pow_exponent_grad(x1, y, dy):
    """d(x1 ** x2)/dx2 = y * log(x1), taking log(0) as 0 where the base is 0 (as autograd)."""
    return dy * y * np.log(np.where(x1 == 0, 1.0, x1))


for np_fn, op in [(np.add, operator.add), (np.subtract, operator.sub),
                  (np.multiply, operator.mul), (np.divide, operator.truediv),
                  (np.true_divide, operator.truediv), (np.power, operator.pow),
                  (np.negative, operator.neg)]:
    alias(np_fn, op)

# Piecewise constant: the derivative is zero almost everywhere.
for op, emit, name, ufunc in [
        (operator.floordiv, ("binop", "//"), "floordiv", np.floor_divide),
        (operator.lt,       ("cmp", "<"),    "lt",       np.less),
        (operator.le,       ("cmp", "<="),   "le",       np.less_equal),
        (operator.gt,       ("cmp", ">"),    "gt",       np.greater),
        (operator.ge,       ("cmp", ">="),   "ge",       np.greater_equal),
        (operator.eq,       ("cmp", "=="),   "eq",       np.equal),
        (operator.ne,       ("cmp", "!="),   "ne",       np.not_equal),
        (operator.and_,     ("binop", "&"),  "and",      np.bitwise_and),
        (operator.or_,      ("binop", "|"),  "or",       np.bitwise_or),
        (operator.xor,      ("binop", "^"),  "xor",      np.bitwise_xor)]:
    primitive(op, "x1, x2", name=name, emit=emit, ufunc=ufunc)
    nodiff(op)
primitive(operator.invert, "x", name="invert", emit=("unop", "~"), ufunc=np.invert)
nodiff(operator.invert)
for np_fn, op in [(np.floor_divide, operator.floordiv), (np.less, operator.lt),
                  (np.less_equal, operator.le), (np.greater, operator.gt),
                  (np.greater_equal, operator.ge), (np.equal, operator.eq),
                  (np.not_equal, operator.ne)]:
    alias(np_fn, op)

# x % m = x - m * floor(x / m): slope 1 in x, -floor(x / m) in m.
primitive(operator.mod, "x1, x2", name="mod", emit=("binop", "%"), ufunc=np.remainder)
diffrule(operator.mod, "x1", "dy")
diffrule(operator.mod, "x2", "-dy * np.floor(x1 / x2)")
alias(np.mod, operator.mod)
alias(np.remainder, operator.mod)
