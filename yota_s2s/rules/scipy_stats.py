"""``scipy.stats`` distributions (loaded when scipy is installed):

    norm, t, gamma, beta, chi2    logpdf pdf cdf logcdf sf logsf, in x, loc, scale, and in
                                  the shape parameters (df, a, b) of logpdf and pdf
    poisson                       logpmf pmf cdf logcdf sf logsf, in mu
    bernoulli, binom              logpmf pmf, in p
    multivariate_normal           logpdf pdf, in x, mean, cov; entropy, in cov
    dirichlet                     logpdf pdf, in x, alpha

The primitives are the methods of scipy's distribution objects, ``norm.logpdf``; the generated
module imports the object (``from scipy.stats import norm``) and calls its method with the
operands the call gave (``norm.logpdf(x, loc=mu, scale=s)``). ``loc`` and ``scale`` (and
``mean``, ``cov``) are operands with defaults: a call may leave them out, or give them traced
values. The cdfs and sfs have no gradient in their shape parameters (df, a, b: an incomplete-gamma or
-beta derivative), and neither do the integer ``k`` and ``loc`` of poisson. A frozen
distribution (``norm(mu, s).logpdf(x)``) is this method with its parameters by name
(frontend/frozen.py).

Every rule of a continuous distribution is written with ``z = (x - loc) / scale`` and the
derivative of its log density in ``z`` (``dz`` below): ``x`` gets ``dz / scale``, ``loc``
``-dz / scale`` and ``scale`` ``-(z dz + 1) / scale``.
"""
import numpy as np
from scipy.special import digamma
from scipy.stats import (bernoulli, beta, binom, chi2, dirichlet, gamma, multivariate_normal, norm,
                         poisson, t)

from .linalg import triangle_grad
from .products import mT
from .registry import diffrule, nodiff, primitive

LOC_SCALE = {norm: "", t: "df", gamma: "a", beta: "a, b", chi2: "df"}   # shape parameters

for dist, shape in LOC_SCALE.items():
    for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        params = ", ".join(p for p in ("x", shape, "loc", "scale") if p)
        spec = params.replace("loc", "loc=0.0").replace("scale", "scale=1.0")
        primitive(getattr(dist, method), spec, operands=params, name=f"{dist.name}.{method}",
                  emit=("call", f"{dist.name}.{method}", "scipy.stats"), elementwise=True)
for method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
    primitive(getattr(poisson, method), "k, mu, loc=0", operands="k, mu, loc",
              name=f"poisson.{method}", emit=("call", f"poisson.{method}", "scipy.stats"),
              elementwise=True)
for method in ("logpmf", "pmf"):
    primitive(getattr(bernoulli, method), "k, p, loc=0", operands="k, p, loc",
              name=f"bernoulli.{method}", emit=("call", f"bernoulli.{method}", "scipy.stats"),
              elementwise=True)
    primitive(getattr(binom, method), "k, n, p, loc=0", operands="k, n, p, loc",
              name=f"binom.{method}", emit=("call", f"binom.{method}", "scipy.stats"),
              elementwise=True)
primitive(multivariate_normal.entropy, "mean=None, cov=1", operands="mean, cov",
          name="multivariate_normal.entropy",
          emit=("call", "multivariate_normal.entropy", "scipy.stats"))
nodiff(multivariate_normal.entropy, "mean")      # the entropy does not depend on the mean
for method in ("logpdf", "pdf"):
    primitive(getattr(multivariate_normal, method), "x, mean=None, cov=1, allow_singular=False",
              operands="x, mean, cov", name=f"multivariate_normal.{method}",
              emit=("call", f"multivariate_normal.{method}", "scipy.stats"))
    primitive(getattr(dirichlet, method), "x, alpha", name=f"dirichlet.{method}",
              emit=("call", f"dirichlet.{method}", "scipy.stats"))


def z(x, loc, scale):
    """The standardized value."""
    return (x - loc) / scale


# d log density / dz, per distribution
def norm_dz(z):
    return -z


def t_dz(z, df):
    return -(df + 1) * z / (df + z * z)


def gamma_dz(z, a):
    return (a - 1) / z - 1


def beta_dz(z, a, b):
    return (a - 1) / z - (b - 1) / (1 - z)


def chi2_dz(z, df):
    return (df / 2 - 1) / z - 0.5


# d log density / d shape parameter
def t_ddf(z, df):
    return 0.5 * (digamma((df + 1) / 2) - digamma(df / 2) - 1 / df - np.log1p(z * z / df)
                  + (df + 1) * z * z / (df * (df + z * z)))


SCORES = {      # the derivative of the log density in each operand, as rule text
    norm: {"": "norm_dz(z(x, loc, scale))"},
    t: {"": "t_dz(z(x, loc, scale), df)", "df": "t_ddf(z(x, loc, scale), df)"},
    gamma: {"": "gamma_dz(z(x, loc, scale), a)", "a": "np.log(z(x, loc, scale)) - digamma(a)"},
    beta: {"": "beta_dz(z(x, loc, scale), a, b)",
           "a": "np.log(z(x, loc, scale)) - digamma(a) + digamma(a + b)",
           "b": "np.log1p(-z(x, loc, scale)) - digamma(b) + digamma(a + b)"},
    chi2: {"": "chi2_dz(z(x, loc, scale), df)",
           "df": "0.5 * (np.log(z(x, loc, scale) / 2) - digamma(df / 2))"},
}

for dist, scores in SCORES.items():
    dz = scores[""]
    by_operand = {"x": f"{dz} / scale", "loc": f"-{dz} / scale",
                  "scale": f"-(z(x, loc, scale) * {dz} + 1) / scale",
                  **{p: s for p, s in scores.items() if p}}
    for operand, score in by_operand.items():
        diffrule(dist.logpdf, operand, f"dy * ({score})")
        diffrule(dist.pdf, operand, f"dy * y * ({score})")
    # the cdf grows with the density at x, and the sf (1 - cdf) falls with it; their logs
    # change by the density over the value
    density = f"{dist.name}.pdf(x, {LOC_SCALE[dist] + ', ' if LOC_SCALE[dist] else ''}loc, scale)"
    ratio = f"np.exp({density.replace('.pdf', '.logpdf')} - y)"
    for method, d, up in ((dist.cdf, density, True), (dist.logcdf, ratio, True),
                          (dist.sf, density, False), (dist.logsf, ratio, False)):
        plus, minus = ("dy", "-dy") if up else ("-dy", "dy")
        diffrule(method, "x", f"{plus} * {d}")
        diffrule(method, "loc", f"{minus} * {d}")
        diffrule(method, "scale", f"{minus} * {d} * z(x, loc, scale)")

diffrule(poisson.logpmf, "mu", "dy * ((k - loc) / mu - 1)")
diffrule(poisson.pmf,    "mu", "dy * y * ((k - loc) / mu - 1)")
# d/dmu P(K <= k) = -pmf(floor(k)): the mass moves past k
diffrule(poisson.cdf,    "mu", "-dy * poisson.pmf(np.floor(k), mu, loc)")
diffrule(poisson.logcdf, "mu", "-dy * np.exp(poisson.logpmf(np.floor(k), mu, loc) - y)")
diffrule(poisson.sf,     "mu", "dy * poisson.pmf(np.floor(k), mu, loc)")
diffrule(poisson.logsf,  "mu", "dy * np.exp(poisson.logpmf(np.floor(k), mu, loc) - y)")

# log p^k (1 - p)^(n - k) (+ log C(n, k)) in p, with k counted from loc; bernoulli: n = 1
diffrule(bernoulli.logpmf, "p", "dy * ((k - loc) / p - (1 - (k - loc)) / (1 - p))")
diffrule(bernoulli.pmf,    "p", "dy * y * ((k - loc) / p - (1 - (k - loc)) / (1 - p))")
diffrule(binom.logpmf,     "p", "dy * ((k - loc) / p - (n - (k - loc)) / (1 - p))")
diffrule(binom.pmf,        "p", "dy * y * ((k - loc) / p - (n - (k - loc)) / (1 - p))")


# ----- multivariate normal ----------------------------------------------------------------
def lower_symmetric(cov):
    """The symmetric matrix that scipy reads from ``cov``: its lower triangle."""
    return np.tril(cov) + mT(np.tril(cov, -1))


def mvn_parts(x, mean, cov, dy, allow_singular=False):
    """The dimension ``d``, the residuals ``r`` as rows ``(n, d)``, ``cov^-1 r`` as rows, and
    ``dy`` as a column ``(n, 1)``: scipy reads the last axis of ``x`` as the dimension (the
    length of ``mean``, or of ``cov``; 1 when both are scalars). ``allow_singular``: the
    pseudo-inverse, as scipy's density uses on the support of a singular ``cov``."""
    d = np.shape(mean)[-1] if np.ndim(mean) > 0 else np.shape(cov)[-1] if np.ndim(cov) > 0 else 1
    r = np.reshape(x, (-1, d)) if mean is None else np.reshape(x, (-1, d)) - np.reshape(mean, (d,))
    if np.ndim(cov) == 2 and allow_singular:
        solved = r @ np.linalg.pinv(lower_symmetric(cov), hermitian=True)
    elif np.ndim(cov) == 2:
        solved = mT(np.linalg.solve(lower_symmetric(cov), mT(r)))
    else:
        solved = r / cov
    return d, r, solved, np.reshape(dy, (-1, 1))


@diffrule(multivariate_normal.logpdf, "x")
def mvn_logpdf_grad_x(x, mean, cov, dy, allow_singular=False):
    """``-cov^-1 (x - mean)`` per sample."""
    _, _, solved, dy = mvn_parts(x, mean, cov, dy, allow_singular)
    return np.reshape(-dy * solved, np.shape(x))


@diffrule(multivariate_normal.logpdf, "mean")
def mvn_logpdf_grad_mean(x, mean, cov, dy, allow_singular=False):
    """``cov^-1 (x - mean)``, summed over the samples."""
    _, _, solved, dy = mvn_parts(x, mean, cov, dy, allow_singular)
    return np.reshape(np.sum(dy * solved, axis=0), np.shape(mean))


@diffrule(multivariate_normal.logpdf, "cov")
def mvn_logpdf_grad_cov(x, mean, cov, dy, allow_singular=False):
    """``(S r r^T S - S) / 2`` with ``S = cov^-1``, summed over the samples; for a matrix, the
    gradient of the lower triangle that scipy reads (a scalar or diagonal ``cov``: its
    entries). Not for a singular ``cov`` (its pseudo-determinant has none in general)."""
    if allow_singular:
        raise NotImplementedError("multivariate_normal with allow_singular=True has no gradient "
                                  "in cov; x and mean have one")
    d, r, solved, dy = mvn_parts(x, mean, cov, dy)
    if np.ndim(cov) == 2:
        g = (mT(solved) @ (dy * solved) - np.sum(dy) * np.linalg.inv(lower_symmetric(cov))) / 2
        return triangle_grad(g, lower=True)
    if np.ndim(cov) == 1:
        return np.sum(dy * (solved * solved - 1 / cov), axis=0) / 2
    return np.sum(dy * (np.sum(solved * solved, axis=1, keepdims=True) - d / cov)) / 2


diffrule(multivariate_normal.pdf, "x", "mvn_logpdf_grad_x(x, mean, cov, dy * y, allow_singular)")
diffrule(multivariate_normal.pdf, "mean",
         "mvn_logpdf_grad_mean(x, mean, cov, dy * y, allow_singular)")
diffrule(multivariate_normal.pdf, "cov", "mvn_logpdf_grad_cov(x, mean, cov, dy * y, allow_singular)")



@diffrule(multivariate_normal.entropy, "cov")
def mvn_entropy_grad_cov(mean, cov, dy):
    """``log det(2 pi e cov) / 2`` in ``cov``: ``cov^-1 / 2``, of the lower triangle that scipy
    reads for a matrix (a diagonal: ``1 / (2 cov)``; a scalar: ``d / (2 cov)``)."""
    if np.ndim(cov) == 2:
        return dy * triangle_grad(np.linalg.inv(lower_symmetric(cov)) / 2, lower=True)
    if np.ndim(cov) == 1:
        return dy / (2 * cov)
    return dy * (np.shape(mean)[-1] if np.ndim(mean) > 0 else 1) / (2 * cov)


# ----- Dirichlet --------------------------------------------------------------------------
def per_component(alpha, x):
    """``alpha`` along the first axis of ``x``, which holds the components, one sample per
    column: ``x`` is (k,) or (k, n)."""
    return np.reshape(alpha, (-1,) + (1,) * (np.ndim(x) - 1))


diffrule(dirichlet.logpdf, "x", "dy * (per_component(alpha, x) - 1) / x")
diffrule(dirichlet.pdf,    "x", "dy * y * (per_component(alpha, x) - 1) / x")


@diffrule(dirichlet.logpdf, "alpha")
def dirichlet_logpdf_grad_alpha(x, alpha, dy):
    """``digamma(sum alpha) - digamma(alpha) + log x``, summed over the samples."""
    common = np.sum(dy) * (digamma(np.sum(alpha)) - digamma(alpha))
    return common + (np.log(x) * dy if np.ndim(x) == 1 else np.log(x) @ dy)


diffrule(dirichlet.pdf, "alpha", "dirichlet_logpdf_grad_alpha(x, alpha, dy * y)")
