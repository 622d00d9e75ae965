"""The model examples (examples/gp.py, gmm.py, hmm.py) give the gradients finite differences give,
and their fits improve the objective. They need scipy and its rules; a test is skipped only when
scipy is missing or the scipy function it uses has no rule here."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import sampled_errors

EXAMPLES = Path(__file__).parent.parent / "examples"
scipy = pytest.importorskip("scipy")


def load(name):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs_rules(*pairs):
    """Skip unless every (function, operand) has a derivative rule in ys.RULES."""
    for fn, argname in pairs:
        prim = ys.RULES.lookup(fn)
        if prim is None or ys.RULES.rule(prim, argname) is None:
            pytest.skip(f"no rule for {getattr(fn, '__qualname__', fn)} in {argname!r} yet "
                        "(the scipy rule family)")


def check(f, args, wrt, tol=1e-6):
    value, g = ys.grad(f, *args, wrt=wrt)
    assert np.isclose(value, f(*args), rtol=1e-12)
    grads = [g[i] if i in wrt else None for i in range(len(args))]
    errors = sampled_errors(f, args, grads)
    assert set(k[0] for k in errors) == set(wrt)
    assert max(errors.values()) < tol, errors
    return g


def test_gp_negative_log_marginal_likelihood_both_ways():
    from scipy.linalg import cholesky, solve_triangular
    from scipy.stats import multivariate_normal
    needs_rules((multivariate_normal.logpdf, "cov"), (cholesky, "a"), (solve_triangular, "a"),
                (solve_triangular, "b"))
    gp = load("gp")
    x, y = gp.data(n=12)
    args = (0.2, -0.1, -1.5, x, y)
    g_stats = check(gp.nll_stats, args, (0, 1, 2, 3, 4))
    g_chol = check(gp.nll_cholesky, args, (0, 1, 2, 3, 4))
    assert np.isclose(gp.nll_stats(*args), gp.nll_cholesky(*args), rtol=1e-10)
    for a, b in zip(g_stats, g_chol):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)
    assert isinstance(g_chol[0], float)        # a float hyperparameter gets a float gradient


def test_gp_fit_lowers_the_nll(capsys):
    from scipy.linalg import cholesky, solve_triangular
    needs_rules((cholesky, "a"), (solve_triangular, "a"))
    value, _ = load("gp").main(steps=30)
    assert value < 0 < 29.0 and "posterior mean" in capsys.readouterr().out


def test_gmm_nll_with_logsumexp_gradient_by_field_path():
    from scipy.special import logsumexp
    needs_rules((logsumexp, "a"))
    gmm = load("gmm")
    x, _ = gmm.data(n=20)
    g = check(gmm.nll, (gmm.init_params(), x), (0, 1))
    assert set(g[0]) == {("log_weights",), ("means",), ("log_stds",)}


def test_gmm_fit_finds_the_clusters():
    from scipy.special import logsumexp
    needs_rules((logsumexp, "a"))
    gmm = load("gmm")
    assert gmm.main(steps=100) < 0.7 * gmm.nll(gmm.init_params(), gmm.data()[0])


def test_hmm_forward_pass_log_likelihood():
    from scipy.special import logsumexp
    needs_rules((logsumexp, "a"))
    hmm = load("hmm")
    obs, _ = hmm.sample(T=8)
    rs = np.random.RandomState(3)
    args = (rs.randn(2), rs.randn(2, 2), np.array([-0.5, 0.5]), 0.1 * rs.randn(2), obs)
    check(hmm.log_likelihood, args, (0, 1, 2, 3, 4))
    # the forward algorithm against the sum over all 2**T state paths, on a short sequence
    short = obs[:4]
    pi = np.exp(hmm.log_normalize(args[0], 0))
    A = np.exp(hmm.log_normalize(args[1], 1))
    sd = np.exp(args[3])
    emit = np.exp(-0.5 * ((short[:, None] - args[2]) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    total = 0.0
    for path in np.ndindex(*(2,) * len(short)):
        p = pi[path[0]] * emit[0, path[0]]
        for t in range(1, len(short)):
            p *= A[path[t - 1], path[t]] * emit[t, path[t]]
        total += p
    assert np.isclose(hmm.log_likelihood(*args[:4], short), np.log(total), rtol=1e-12)


def test_hmm_fit_raises_the_likelihood():
    from scipy.special import logsumexp
    needs_rules((logsumexp, "a"))
    hmm = load("hmm")
    obs, _ = hmm.sample()
    start = hmm.log_likelihood(np.zeros(2), np.zeros((2, 2)), np.array([-0.5, 0.5]), np.zeros(2), obs)
    assert hmm.main(steps=60) > start + 10
