"""``scipy.special`` (loaded when scipy is installed): the gamma family (gammaln gamma rgamma
digamma psi polygamma multigammaln beta betaln; gammainc gammaincc betainc in x; gammasgn,
piecewise constant), error functions (erf
erfc erfcx erfinv erfcinv ndtr log_ndtr), expit log_expit logit xlogy xlog1py entr, Bessel
functions (i0 i1 i0e i1e, j0 j1 y0 y1, and in x: jv (jn) yn iv ive kv), and logsumexp (axis,
keepdims, b), softmax and log_softmax (axis).

The ufuncs have no ``__module__``; generated code imports them from scipy.special, as a person
would (``from scipy.special import gammaln``). Integer orders (``polygamma(n, x)``,
``multigammaln(a, d)``) get no gradient.
"""
import numpy as np
from scipy.special import (beta, betainc, betaln, digamma, entr, erf, erfc, erfcinv, erfcx, erfinv,
                           expit, gamma, gammainc, gammaincc, gammaln, gammasgn, i0, i0e, i1, i1e, iv, ive,
                           j0, j1, jv, kv, log_expit, log_ndtr, log_softmax, logit, logsumexp,
                           multigammaln, ndtr, polygamma, rgamma, softmax, xlog1py, xlogy, y0, y1,
                           yn)

from .reductions import restore_axes
from .registry import diffrule, nodiff, primitive

SQRT_PI = np.sqrt(np.pi)
SQRT_2PI = np.sqrt(2 * np.pi)

for ufunc in (gammaln, gamma, rgamma, gammainc, gammaincc, erf, erfc, erfcx, erfinv, erfcinv, ndtr,
              log_ndtr, expit, log_expit, logit, xlogy, xlog1py, entr, beta, betaln, i0, i1, i0e,
              i1e, j0, j1, y0, y1, jv, yn, iv, ive, kv):
    primitive(ufunc, module="scipy.special")
primitive(betainc, module="scipy.special")
primitive(gammasgn, module="scipy.special")
nodiff(gammasgn)                # the sign of gamma(x): piecewise constant
primitive(digamma, name="scipy.special.digamma", emit=("call", "digamma", "scipy.special"),
          real_only="its derivative, scipy.special.polygamma, has no complex version")  # psi
primitive(polygamma, "n, x", module="scipy.special", elementwise=True)
primitive(multigammaln, "a, d", module="scipy.special", elementwise=True)
primitive(logsumexp, "a, axis=None, b=None, keepdims=False, return_sign=False",
          operands="a, axis, b", module="scipy.special")
primitive(softmax, "x, axis=None", module="scipy.special")
primitive(log_softmax, "x, axis=None", module="scipy.special")

# ----- gamma and beta ---------------------------------------------------------------------
diffrule(gammaln,   "x", "dy * digamma(x)")
diffrule(gamma,     "x", "dy * y * digamma(x)")
diffrule(rgamma,    "x", "-dy * y * digamma(x)")
diffrule(gammainc,  "x2", "dy * np.exp((x1 - 1) * np.log(x2) - x2 - gammaln(x1))")    # in x only
diffrule(gammaincc, "x2", "-dy * np.exp((x1 - 1) * np.log(x2) - x2 - gammaln(x1))")
# the regularized incomplete beta function I_x(a, b), in x only (as autograd): its density
diffrule(betainc,   "x3", "dy * np.exp((x1 - 1) * np.log(x3) + (x2 - 1) * np.log1p(-x3) - betaln(x1, x2))")
diffrule(digamma,   "x", "dy * polygamma(1, x)")          # scipy.special.psi is digamma
diffrule(polygamma, "x", "dy * polygamma(n + 1, x)")
diffrule(betaln,    "x1", "dy * (digamma(x1) - digamma(x1 + x2))")
diffrule(betaln,    "x2", "dy * (digamma(x2) - digamma(x1 + x2))")
diffrule(beta,      "x1", "dy * y * (digamma(x1) - digamma(x1 + x2))")
diffrule(beta,      "x2", "dy * y * (digamma(x2) - digamma(x1 + x2))")


@diffrule(multigammaln, "a")
def multigammaln_grad(a, d, dy):
    """The sum of ``digamma(a - j / 2)`` for j = 0 .. d - 1."""
    return dy * sum(digamma(a - j / 2) for j in range(d))


# ----- error functions and the normal distribution ------------------------------------------
diffrule(erf,      "x", "dy * 2 / SQRT_PI * np.exp(-x * x)")
diffrule(erfc,     "x", "-dy * 2 / SQRT_PI * np.exp(-x * x)")
diffrule(erfcx,    "x", "dy * (2 * x * y - 2 / SQRT_PI)")
diffrule(erfinv,   "x", "dy * SQRT_PI / 2 * np.exp(y * y)")
diffrule(erfcinv,  "x", "-dy * SQRT_PI / 2 * np.exp(y * y)")
diffrule(ndtr,     "x", "dy * np.exp(-x * x / 2) / SQRT_2PI")
diffrule(log_ndtr, "x", "dy * np.exp(-x * x / 2 - y) / SQRT_2PI")

# ----- logistic, x log y ------------------------------------------------------------------
diffrule(expit,   "x", "dy * y * (1 - y)")
diffrule(log_expit, "x", "dy * expit(-x)")
diffrule(logit,   "x", "dy / (x * (1 - x))")
diffrule(xlogy,   "x1", "dy * np.log(x2)")
diffrule(xlogy,   "x2", "dy * x1 / x2")
diffrule(xlog1py, "x1", "dy * np.log1p(x2)")
diffrule(xlog1py, "x2", "dy * x1 / (1 + x2)")
diffrule(entr,    "x", "-dy * (np.log(x) + 1)")

# ----- modified Bessel functions ----------------------------------------------------------
diffrule(i0,  "x", "dy * i1(x)")
diffrule(i0e, "x", "dy * (i1e(x) - np.sign(x) * y)")
diffrule(j0,  "x", "-dy * j1(x)")
diffrule(j1,  "x", "dy * (j0(x) - jv(2, x)) / 2")
diffrule(y0,  "x", "-dy * y1(x)")
diffrule(y1,  "x", "dy * (y0(x) - yn(2, x)) / 2")
# of order x1 (no gradient) at x2: scipy.special.jn is jv
diffrule(jv,  "x2", "dy * (jv(x1 - 1, x2) - jv(x1 + 1, x2)) / 2")
diffrule(yn,  "x2", "dy * (yn(x1 - 1, x2) - yn(x1 + 1, x2)) / 2")
diffrule(iv,  "x2", "dy * (iv(x1 - 1, x2) + iv(x1 + 1, x2)) / 2")
diffrule(ive, "x2", "dy * ((ive(x1 - 1, x2) + ive(x1 + 1, x2)) / 2 - np.sign(x2) * y)")
diffrule(kv,  "x2", "-dy * (kv(x1 - 1, x2) + kv(x1 + 1, x2)) / 2")


@diffrule(i1, "x")
def i1_grad(x, y, dy):
    """``i0(x) - i1(x) / x``, and 1/2 at 0."""
    at_zero = x == 0
    return dy * np.where(at_zero, 0.5, i0(x) - y / np.where(at_zero, 1.0, x))


@diffrule(i1e, "x")
def i1e_grad(x, y, dy):
    """``i0e(x) - i1e(x) (sign(x) + 1 / x)``, and 1/2 at 0."""
    at_zero = x == 0
    return dy * np.where(at_zero, 0.5, i0e(x) - y * (np.sign(x) + 1 / np.where(at_zero, 1.0, x)))


# ----- reductions -------------------------------------------------------------------------
@diffrule(logsumexp, "a")
def logsumexp_grad_a(a, axis, b, y, dy, keepdims=False, return_sign=False):
    """``b exp(a - y)``: the softmax of ``a`` weighted by ``b`` (``return_sign=False`` only;
    ``b`` keeps the sum positive)."""
    if return_sign:
        raise NotImplementedError("the gradient of logsumexp(..., return_sign=True)")
    weights = np.exp(a - restore_axes(y, axis, keepdims))
    grad = restore_axes(dy, axis, keepdims) * weights
    return grad if b is None else grad * b


@diffrule(logsumexp, "b")
def logsumexp_grad_b(a, axis, b, y, dy, keepdims=False):
    """``exp(a - y)``: the share of each term in the sum."""
    return restore_axes(dy, axis, keepdims) * np.exp(a - restore_axes(y, axis, keepdims))


@diffrule(softmax, "x")
def softmax_grad(x, y, dy, axis=None):
    """``y (dy - sum(dy y))`` along ``axis``."""
    return y * (dy - np.sum(dy * y, axis=axis, keepdims=True))


diffrule(log_softmax, "x", "dy - np.exp(y) * np.sum(dy, axis=axis, keepdims=True)")
