"""The gradient-check table of the signal family (np.convolve, np.correlate, np.fft) and of the
optional scipy families (scipy.special, scipy.stats, scipy.signal, scipy.linalg), run like
``RULE_CASES`` (both forms, float64 central finite differences). ``EXTRA_CASES`` is part of the
rule table that tests/test_rules.py checks for coverage; without scipy its scipy part is empty
(and no scipy rule is registered)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.rules.implicit import fixed_point_adjoint, odeint_adjoint

from .test_gradcheck import Case, check_case, normal, positive, spd, unit, weighted, well_conditioned

HAS_SCIPY = importlib.util.find_spec("scipy") is not None


def between(lo, hi):
    return lambda *shapes: (lambda r: tuple(r.uniform(lo, hi, s) for s in shapes))


def away_from_zero(*shapes):
    return lambda r: tuple(r.uniform(0.3, 2.0, s) * r.choice([-1.0, 1.0], s) for s in shapes)


SIGNAL_CASES = [
    Case("np_convolve_modes", lambda a, v: sum(weighted(np.convolve(a, v, m)) * (i + 1)
                                               for i, m in enumerate(["full", "same", "valid"])), normal((5,), (3,))),
    Case("np_convolve_longer_kernel", lambda a, v: weighted(np.convolve(a, v)) + weighted(np.convolve(a, v, "same") ** 2),
         normal((2,), (5,))),
    Case("np_correlate_modes", lambda a, v: sum(weighted(np.correlate(a, v, mode=m)) * (i + 1)
                                                for i, m in enumerate(["full", "same", "valid"])), normal((5,), (3,))),
    Case("np_correlate_longer_kernel", lambda a, v: weighted(np.correlate(a, v, "same")) + weighted(np.correlate(a, v)),
         normal((2,), (5,))),
    Case("fft_ifft", lambda a: weighted(np.abs(np.fft.fft(a)) ** 2) + weighted(np.fft.fft(a, n=7).real)
         + weighted(np.fft.ifft(a, norm="ortho").imag) + weighted(np.fft.fft(a, n=3, axis=0).imag), normal((4, 5))),
    Case("fft2_fftn", lambda a: weighted(np.fft.fft2(a).real) + weighted(np.fft.ifft2(a, s=(3, 6)).imag)
         + weighted(np.abs(np.fft.fftn(a, norm="forward"))) + weighted(np.fft.ifftn(a, axes=(0,)).real), normal((4, 5))),
    Case("rfft", lambda a: weighted(np.abs(np.fft.rfft(a))) + weighted(np.fft.rfft(a, n=9, axis=0).imag)
         + weighted(np.fft.rfft(a, norm="ortho").real), normal((4, 6))),
    Case("irfft_even", lambda a: weighted(np.fft.irfft(np.fft.rfft(a, axis=0) ** 2, axis=0))
         + weighted(np.fft.irfft(np.fft.rfft(a, axis=0) * 1j, n=3, axis=0, norm="ortho")), normal((6, 3))),
    Case("sum_of_real_parts", lambda x: np.sum(np.fft.fft(x).real) + np.sum(np.real(x.astype(np.complex128))) * 2,
         normal((3,))),      # the cast of a constant gradient to complex (was a TypeError)
    Case("rfftn_rfft2", lambda a: weighted(np.abs(np.fft.rfftn(a))) + weighted(np.fft.rfft2(a, s=(3, 5)).imag)
         + weighted(np.fft.rfftn(a, axes=(0,), norm="ortho").real), normal((4, 6))),
    Case("irfftn_irfft2", lambda a: weighted(np.fft.irfftn(np.fft.rfftn(a) ** 2)) + weighted(np.fft.irfft2(np.fft.rfft2(a) * 1j, s=(4, 5)))
         + weighted(np.fft.irfftn(np.fft.rfftn(a, axes=(0,)), s=(3,), axes=(0,), norm="ortho")), normal((4, 6))),
    Case("fftshift_ifftshift", lambda a: weighted(np.fft.fftshift(a) ** 2) + weighted(np.fft.ifftshift(a, axes=1) * a)
         + weighted(np.fft.fftshift(np.sin(a), axes=(0,))), normal((3, 5))),
    Case("irfft_odd", lambda a: weighted(np.fft.irfft(np.fft.rfft(a), n=7) ** 2), normal((2, 5))),
    # ys.signal.convolve, autograd's: every axis, then axes paired, summed (dot) and kept
    Case("ys_convolve_modes", lambda a, b: sum(weighted(ys.signal.convolve(a, b, mode=m)) * (i + 1)
                                               for i, m in enumerate(["full", "same", "valid"])), normal((5, 4), (3, 2))),
    Case("ys_convolve_longer_B", lambda a, b: sum(weighted(np.tanh(ys.signal.convolve(a, b, mode=m)))
                                                  for m in ["full", "same", "valid"]), normal((2, 3), (4, 4))),
    Case("ys_convolve_axes_dot_axes",
         lambda x, w: sum(weighted(np.sin(ys.signal.convolve(x, w, ([2, 3], [3, 2]), ([1], [0]), m)))
                          for m in ["full", "same", "valid"]), normal((2, 3, 5, 4), (3, 2, 2, 3))),
    Case("ys_convolve_kept_dot_pairs", lambda a, b: weighted(ys.signal.convolve(
        a, b, ([3], [0]), ([1, 0], [3, 1]), "same") ** 2), normal((2, 3, 2, 4), (3, 2, 2, 3))),
]

SCIPY_CASES: list[Case] = []

SINGULAR_COV = np.diag([1.0, 1.0, 0.0, 0.0])


def on_support_density(x, mean, density):
    """``density`` at ``x`` moved onto the support of ``SINGULAR_COV`` around ``mean``."""
    return density(np.concatenate([x[:2], mean[2:]]), mean, SINGULAR_COV, allow_singular=True)
if HAS_SCIPY:
    from scipy import linalg, signal, special, stats

    PRIOR = stats.norm(0.0, 2.0)

    SPECIAL_UNARY = [
        ("gammaln", lambda x: weighted(special.gammaln(x)), positive),
        ("gamma", lambda x: weighted(special.gamma(x)), positive),
        ("digamma_psi", lambda x: weighted(special.digamma(x) + special.psi(x) ** 2), positive),
        ("polygamma", lambda x: weighted(special.polygamma(1, x) + special.polygamma(2, x)), positive),
        ("multigammaln", lambda x: weighted(special.multigammaln(x, 3)), between(1.5, 3.0)),
        ("erf_erfc", lambda x: weighted(special.erf(x) + special.erfc(x) ** 2), normal),
        ("erfinv", lambda x: weighted(special.erfinv(x)), unit),
        ("erfcinv", lambda x: weighted(special.erfcinv(x)), between(0.3, 1.7)),
        ("ndtr_log_ndtr", lambda x: weighted(special.ndtr(x) + special.log_ndtr(x)), normal),
        ("expit", lambda x: weighted(special.expit(x)), normal),
        ("logit", lambda x: weighted(special.logit(x)), between(0.2, 0.8)),
        ("i0_i1", lambda x: weighted(special.i0(x) + special.i1(x) ** 2), normal),
        ("i0e_i1e", lambda x: weighted(special.i0e(x) + special.i1e(x) ** 2), away_from_zero),
        ("rgamma_erfcx_entr", lambda x: weighted(special.rgamma(x) + special.erfcx(x) + special.entr(x)), positive),
        ("log_expit", lambda x: weighted(special.log_expit(x)), normal),
        ("gammainc_gammaincc", lambda x: weighted(special.gammainc(2.5, x) + special.gammaincc(1.5, x) ** 2), positive),
        ("betainc_gammasgn", lambda x: weighted(special.betainc(2.5, 1.5, x) + special.gammasgn(x - 0.5) * x), between(0.1, 0.9)),
        ("bessel_j_y", lambda x: weighted(special.j0(x) + special.j1(x) ** 2 + special.y0(x) + special.y1(x) ** 2), positive),
        ("bessel_of_order", lambda x: weighted(special.jv(1.5, x) + special.jn(2, x) + special.yn(1, x) + special.iv(0.5, x)
                                               + special.ive(2, x) + special.kv(1.5, x)), positive),
    ]
    SPECIAL_BINARY = [
        ("xlogy_xlog1py", lambda a, b: weighted(special.xlogy(a, b) + special.xlog1py(a, b)), positive),
        ("beta_betaln", lambda a, b: weighted(special.beta(a, b) + special.betaln(a, b)), positive),
    ]
    for name, fn, dist in SPECIAL_UNARY:
        for shape in [(), (2, 3), (0, 3)]:
            SCIPY_CASES.append(Case(f"{name}{list(shape)}", fn, dist(shape)))
    for name, fn, dist in SPECIAL_BINARY:
        for sa, sb in [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (2, 3))]:
            SCIPY_CASES.append(Case(f"{name}{list(sa)}{list(sb)}", fn, dist(sa, sb)))

    def lse(a, b):
        return (weighted(special.logsumexp(a, axis=1)) + special.logsumexp(a) * 2
                + weighted(special.logsumexp(a, axis=0, b=b, keepdims=True))
                + weighted(special.logsumexp(a, (0, 1), b[None, :] * 2.0)))

    loc_scale = lambda r: (r.standard_normal(4), 0.3, 1.4)      # noqa: E731
    SCIPY_CASES += [
        Case("logsumexp", lse, lambda r: (r.standard_normal((3, 4)), r.uniform(0.5, 2.0, 4))),
        Case("logsumexp_positional_axis", lambda a: weighted(special.logsumexp(a, 1)), normal((2, 3))),
        Case("softmax", lambda x: weighted(special.softmax(x, axis=1)) + weighted(special.softmax(x) ** 2), normal((2, 3))),
        Case("log_softmax", lambda x: weighted(special.log_softmax(x, axis=0)) + weighted(special.log_softmax(x)), normal((2, 3))),
        Case("norm", lambda x, mu, s: weighted(stats.norm.logpdf(x, mu, s) + stats.norm.pdf(x, loc=mu, scale=s)
                                               + stats.norm.cdf(x, mu, s) + stats.norm.logcdf(x, mu, s)) + np.sum(stats.norm.logpdf(x)),
             loc_scale),
        Case("norm_vector_loc", lambda x, mu: weighted(stats.norm.logpdf(x, mu, 2.0) * stats.norm.cdf(x, scale=0.5)), normal((2, 3), (3,))),
        Case("t", lambda x, df, mu, s: weighted(stats.t.logpdf(x, df, mu, s) + stats.t.pdf(x, df, loc=mu, scale=s)
                                                + stats.t.cdf(x, 3.0, mu, s) + stats.t.logcdf(x, 3.0, mu, s)),
             lambda r: (r.standard_normal(4), 4.5, 0.3, 1.4)),
        Case("gamma", lambda x, a, s: weighted(stats.gamma.logpdf(x, a, 0.1, s) + stats.gamma.pdf(x, a, scale=s)
                                               + stats.gamma.cdf(x, 2.0, 0.1, s) + stats.gamma.logcdf(x, 2.0, scale=s)),
             lambda r: (r.uniform(1.0, 3.0, 4), 2.5, 1.3)),
        Case("gamma_loc", lambda x, loc: weighted(stats.gamma.logpdf(x, 2.0, loc) + stats.gamma.pdf(x, 2.0, loc)
                                                  + stats.gamma.cdf(x, 2.0, loc) + stats.gamma.logcdf(x, 2.0, loc)),
             lambda r: (r.uniform(1.0, 3.0, 4), 0.2)),
        Case("beta", lambda x, a, b: weighted(stats.beta.logpdf(x, a, b) + stats.beta.pdf(x, a, b, 0.0, 1.0)
                                              + stats.beta.cdf(x, 2.0, 3.0) + stats.beta.logcdf(x, 2.0, 3.0, -0.1, 1.2)),
             lambda r: (r.uniform(0.2, 0.8, 4), 2.5, 1.7)),
        Case("beta_loc_scale", lambda x, loc, s: weighted(stats.beta.logpdf(x, 2.0, 3.0, loc, s) + stats.beta.pdf(x, 2.0, 3.0, loc, s)
                                                          + stats.beta.cdf(x, 2.0, 3.0, loc, s) + stats.beta.logcdf(x, 2.0, 3.0, loc, s)),
             lambda r: (r.uniform(0.2, 0.8, 4), -0.1, 1.2)),
        Case("chi2", lambda x, df, s: weighted(stats.chi2.logpdf(x, df, 0.0, s) + stats.chi2.pdf(x, df, scale=s) * 2
                                               + stats.chi2.cdf(x, 3.0, scale=s) + stats.chi2.logcdf(x, 3.0, 0.0, s)),
             lambda r: (r.uniform(1.0, 3.0, 4), 3.5, 1.2)),
        Case("chi2_loc", lambda x, loc: weighted(stats.chi2.logpdf(x, 3.0, loc) + stats.chi2.pdf(x, 3.0, loc)
                                                 + stats.chi2.cdf(x, 3.0, loc) + stats.chi2.logcdf(x, 3.0, loc)),
             lambda r: (r.uniform(1.0, 3.0, 4), 0.2)),
        Case("poisson", lambda mu: weighted(stats.poisson.logpmf(np.array([0, 1, 3]), mu) + stats.poisson.pmf(np.array([2, 0, 1]), mu)),
             lambda r: (r.uniform(0.5, 3.0, 3),)),
        Case("poisson_cdf_sf", lambda mu: weighted(stats.poisson.cdf(np.array([0, 1, 3]), mu) + stats.poisson.logcdf(np.array([2, 0, 1]), mu)
                                                   + stats.poisson.sf(np.array([1, 4, 2]), mu) + stats.poisson.logsf(np.array([0, 2, 5]), mu, 1)),
             lambda r: (r.uniform(0.5, 3.0, 3),)),
        Case("sf_logsf", lambda x, mu, s: weighted(stats.norm.sf(x, mu, s) + stats.norm.logsf(x, mu, s) + stats.t.sf(x, 3.0, mu, s)
                                                   + stats.t.logsf(x, 3.0, mu, s)), loc_scale),
        Case("sf_logsf_positive", lambda x, loc, s: weighted(stats.gamma.sf(x, 2.0, loc, s) + stats.gamma.logsf(x, 2.0, loc, s)
                                                             + stats.chi2.sf(x, 3.0, loc, s) + stats.chi2.logsf(x, 3.0, loc, s)
                                                             + stats.beta.sf(x / 4, 2.0, 3.0, loc / 4, s) + stats.beta.logsf(x / 4, 2.0, 3.0, loc / 4, s)),
             lambda r: (r.uniform(1.0, 3.0, 4), 0.2, 1.3)),
        Case("multivariate_normal", lambda x, m, c: weighted(stats.multivariate_normal.logpdf(x, m, c))
             + weighted(stats.multivariate_normal.pdf(x, mean=m, cov=c)) * 3,
             lambda r: (r.standard_normal((5, 3)), r.standard_normal(3), spd(3)(r)[0] + np.tril(np.ones((3, 3)), -1) * 0.2)),
        Case("bernoulli_binom", lambda p: weighted(stats.bernoulli.logpmf(np.array([0, 1, 1]), p) + stats.bernoulli.pmf(np.array([1, 0, 1]), p)
                                                   + stats.binom.logpmf(np.array([0, 2, 3]), 3, p) + stats.binom.pmf(np.array([2, 4, 1]), 4, p, 1)),
             lambda r: (r.uniform(0.2, 0.8, 3),)),
        # frozen distributions, made in the function and read from a global (PRIOR)
        Case("frozen_distributions", lambda w, s: weighted(stats.norm(0.5, s).logpdf(w) + stats.t(3.0, scale=s).pdf(w)
                                                          + PRIOR.logpdf(w) * s + stats.poisson(s).logpmf(np.array([0, 2, 1])))
             + stats.multivariate_normal(np.zeros(3), s * np.eye(3)).logpdf(w) + stats.multivariate_normal(cov=s).entropy(),
             lambda r: (r.standard_normal(3), 1.5)),
        Case("multivariate_normal_entropy", lambda c, d, s: stats.multivariate_normal.entropy(np.zeros(3), c)
             + stats.multivariate_normal.entropy(np.ones(3), cov=d) * 2 + stats.multivariate_normal.entropy(np.zeros(2), s),
             lambda r: (spd(3)(r)[0] + np.tril(np.ones((3, 3)), -1) * 0.2, r.uniform(1, 2, 3), 1.7)),
        Case("multivariate_normal_one_point_diagonal", lambda x, m, c: stats.multivariate_normal.logpdf(x, m, c)
             + stats.multivariate_normal.pdf(x, m, c), lambda r: (r.standard_normal(3), r.standard_normal(3), r.uniform(1, 2, 3))),
        Case("multivariate_normal_scalar_cov", lambda x, c: weighted(stats.multivariate_normal.logpdf(x, np.zeros(3), c))
             + weighted(stats.multivariate_normal.pdf(x[:, 0], None, c)),
             lambda r: (r.standard_normal((4, 3)) * 0.5, 1.7)),
        # scipy's density on the support of a singular cov (autograd's test_mvn_sing_cov)
        Case("multivariate_normal_allow_singular", lambda x, m: on_support_density(x, m, stats.multivariate_normal.logpdf)
             + on_support_density(x, m, stats.multivariate_normal.pdf) * 3,
             lambda r: (np.concatenate((r.standard_normal(2), np.zeros(2))), np.concatenate((r.standard_normal(2), np.zeros(2))))),
        Case("dirichlet", lambda z, alpha: stats.dirichlet.logpdf(np.exp(z) / np.sum(np.exp(z)), alpha)
             + stats.dirichlet.pdf(np.exp(z) / np.sum(np.exp(z)), alpha), lambda r: (r.standard_normal(3), r.uniform(1.5, 3.0, 3))),
        Case("dirichlet_samples", lambda z, alpha: weighted(stats.dirichlet.logpdf(np.exp(z) / np.sum(np.exp(z), axis=0), alpha)
                                                            + stats.dirichlet.pdf(np.exp(z) / np.sum(np.exp(z), axis=0), alpha)),
             lambda r: (r.standard_normal((3, 4)), r.uniform(1.5, 3.0, 3))),
        Case("signal_convolve_modes", lambda a, v: sum(weighted(signal.convolve(a, v, m)) * (i + 1)
                                                       for i, m in enumerate(["full", "same", "valid"])), normal((5, 4), (3, 2))),
        Case("signal_convolve_1d", lambda a, v: weighted(signal.convolve(a, v)) + weighted(signal.convolve(a, v, mode="same")),
             normal((3,), (6,))),
        Case("signal_correlate_modes", lambda a, v: sum(weighted(signal.correlate(a, v, mode=m)) * (i + 1)
                                                        for i, m in enumerate(["full", "same", "valid"])), normal((3, 2), (5, 4))),
        Case("solve_banded", lambda ab, b, m: weighted(linalg.solve_banded((1, 1), ab, b)) + weighted(linalg.solve_banded((2, 0), ab + 3.0, m)),
             lambda r: (r.standard_normal((3, 5)) + np.array([[0.0], [4.0], [0.0]]), r.standard_normal(5), r.standard_normal((5, 2)))),
        Case("solve_triangular", lambda a, b: weighted(linalg.solve_triangular(a, b, lower=True))
             + weighted(linalg.solve_triangular(a, b, trans=1))
             + weighted(linalg.solve_triangular(a, b[:, 0], trans="T", lower=True, unit_diagonal=True)),
             lambda r: (well_conditioned((3, 3))(r)[0], r.standard_normal((3, 2)))),
        Case("scipy_cholesky", lambda a: weighted(linalg.cholesky(a)) + weighted(linalg.cholesky(a, lower=True) ** 2), spd(3)),
        Case("sqrtm", lambda a: weighted(linalg.sqrtm(a)), spd(3)),
        Case("solve_sylvester", lambda a, b, q: weighted(linalg.solve_sylvester(a, b, q)),
             lambda r: (well_conditioned((3, 3))(r)[0], well_conditioned((2, 2))(r)[0], r.standard_normal((3, 2)))),
    ]



# ys.odeint and ys.fixed_point: the user's function is an operand (module-level here, so that
# the generated module imports it)
def decay(y, t, k, c):
    return -k * y ** 3 + c * np.cos(t)


def cosine_iter(a):
    return lambda x: np.cos(a * x) / 2 + a * x / 4


def largest_change(x, x_prev):
    return np.max(np.abs(x - x_prev))


def growth(y, t, k):
    return k * y * t


def adjoint_loss(states, dstates, k, t):
    dy0, dt, dargs = odeint_adjoint(growth, states, t, dstates, (k,), rtol=1e-10, atol=1e-10)
    return weighted(dy0) + weighted(dt) + weighted(dargs)


def increasing(n):
    return lambda r: np.cumsum(r.uniform(0.2, 0.5, n))


IMPLICIT_CASES = [
    Case("fixed_point", lambda a: weighted(ys.fixed_point(cosine_iter, a, np.zeros_like(a),
                                                          largest_change, 1e-14)),
         lambda r: (r.uniform(-1.0, 1.0, 3),)),
    # the adjoint alone, at any x the adjoint iteration converges from: its rules (the gradient
    # of its definition, solve_adjoint) are what a second derivative through fixed_point uses
    Case("fixed_point_adjoint", lambda a, x, dx: weighted(fixed_point_adjoint(
        cosine_iter, a, x, dx, largest_change, 1e-14)),
         lambda r: (r.uniform(-1.0, 1.0, 3), r.uniform(-1.0, 1.0, 3), r.standard_normal(3))),
]
if HAS_SCIPY:
    IMPLICIT_CASES.append(
        Case("odeint", lambda y0, k, c, t: weighted(ys.odeint(decay, y0, t, (k, c), rtol=1e-11,
                                                              atol=1e-11)),
             lambda r: (r.uniform(0.2, 1.0, 2), r.uniform(0.5, 1.0, 2), r.uniform(-1, 1),
                        increasing(4)(r))))
    # the adjoint alone (its rules: the gradient of its definition, solve_odeint_adjoint)
    IMPLICIT_CASES.append(
        Case("odeint_adjoint", adjoint_loss,
             lambda r: (r.uniform(0.2, 1.0, (2, 2)), r.standard_normal((2, 2)),
                        r.uniform(0.5, 1.0, 2), increasing(2)(r))))

EXTRA_CASES = SIGNAL_CASES + SCIPY_CASES + IMPLICIT_CASES


@pytest.mark.parametrize("case", EXTRA_CASES, ids=lambda c: c.name)
def test_matches_finite_differences(case: Case) -> None:
    check_case(case, case.make_args(np.random.default_rng(1)))


def test_without_scipy_the_package_imports_and_compiles_and_registers_no_scipy_rule(tmp_path):
    """scipy is optional: with it hidden, the scipy families are skipped quietly."""
    (tmp_path / "model.py").write_text("import numpy as np\n\n\ndef loss(x):\n"
                                       "    return np.sum(np.convolve(x, x) ** 2)\n")
    script = (
        "import sys\n"
        "sys.modules['scipy'] = None             # import scipy fails, as when it is not installed\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import numpy as np\n"
        "import yota_s2s as ys\n"
        "from yota_s2s.rules import OPTIONAL, RULES\n"
        "assert OPTIONAL == [], OPTIONAL\n"
        "assert not any('scipy' in p.name for p in RULES.prims.values())\n"
        "import model\n"
        "x = np.array([0.5, -1.0, 2.0])\n"
        "print(max(ys.gradcheck(model.loss, x).values()) < 1e-6)\n")
    env = {**os.environ, "YOTA_S2S_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
