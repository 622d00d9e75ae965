"""Models as people write them with scipy: a Gaussian process's negative log marginal
likelihood, twice (scipy.stats and a Cholesky factor), and a Gaussian mixture with logsumexp."""
import numpy as np
from scipy import stats
from scipy.linalg import cholesky, solve_triangular
from scipy.special import logsumexp
from scipy.stats import multivariate_normal, norm

FROZEN = stats.norm(0.0, 2.0)


def rbf(x, log_ls, log_var):
    d = (x[:, None] - x[None, :]) / np.exp(log_ls)
    return np.exp(log_var) * np.exp(-0.5 * d ** 2)


def gp_covariance(params, x):
    log_ls, log_var, log_noise = params[0], params[1], params[2]
    return rbf(x, log_ls, log_var) + (np.exp(log_noise) + 1e-6) * np.eye(len(x))


def gp_nll_stats(params, x, y):
    return -multivariate_normal.logpdf(y, mean=np.zeros(len(x)), cov=gp_covariance(params, x))


def gp_nll_cholesky(params, x, y):
    L = cholesky(gp_covariance(params, x), lower=True)
    alpha = solve_triangular(L, y, lower=True)
    return 0.5 * np.sum(alpha ** 2) + np.sum(np.log(np.diag(L))) + 0.5 * len(x) * np.log(2 * np.pi)


def gmm_nll(log_weights, means, log_stds, data):
    """A 1-D Gaussian mixture: -sum_n log sum_k w_k N(x_n; mu_k, s_k)."""
    log_w = log_weights - logsumexp(log_weights)
    lp = norm.logpdf(data[:, None], means, np.exp(log_stds)) + log_w
    return -np.sum(logsumexp(lp, axis=1))


def frozen_logpdf(x):
    return np.sum(FROZEN.logpdf(x))
