"""Gaussian process regression: fit an RBF kernel's hyperparameters by gradient descent on the
negative log marginal likelihood, written twice -- with scipy.stats.multivariate_normal.logpdf, and
with a Cholesky factor and a triangular solve (what the logpdf does inside, and the faster form).

    .venv/bin/python examples/gp.py

The hyperparameters are plain float arguments (log length scale, log signal variance, log noise
variance): ``ys.grad`` returns one float gradient for each. The data ``x``, ``y`` are arguments
too; their gradients are computed only when asked for (``wrt=``).
"""
import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.stats import multivariate_normal

import yota_s2s as ys


def rbf_covariance(x, log_lengthscale, log_variance, log_noise):
    """k(x_i, x_j) = s^2 exp(-|x_i - x_j|^2 / (2 l^2)), plus the noise variance on the diagonal."""
    scaled = x / np.exp(log_lengthscale)
    sq = np.sum((scaled[:, None, :] - scaled[None, :, :]) ** 2, axis=2)
    return np.exp(log_variance) * np.exp(-0.5 * sq) + (np.exp(log_noise) + 1e-6) * np.eye(len(x))


def nll_stats(log_lengthscale, log_variance, log_noise, x, y):
    """-log N(y; 0, K(x)) by scipy.stats."""
    K = rbf_covariance(x, log_lengthscale, log_variance, log_noise)
    return -multivariate_normal.logpdf(y, mean=np.zeros(len(y)), cov=K)


def nll_cholesky(log_lengthscale, log_variance, log_noise, x, y):
    """The same, through K = L L^T: 1/2 |L^-1 y|^2 + sum log diag L + n/2 log 2 pi."""
    K = rbf_covariance(x, log_lengthscale, log_variance, log_noise)
    L = cholesky(K, lower=True)
    alpha = solve_triangular(L, y, lower=True)
    return 0.5 * np.sum(alpha ** 2) + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


def predict(log_lengthscale, log_variance, log_noise, x, y, x_new):
    """Posterior mean at ``x_new`` (plain numpy; no gradient needed)."""
    both = np.concatenate([x, x_new])
    K = rbf_covariance(both, log_lengthscale, log_variance, log_noise)
    n = len(x)
    return K[n:, :n] @ np.linalg.solve(K[:n, :n], y)


def data(n=40, seed=0):
    rs = np.random.RandomState(seed)
    x = np.sort(rs.uniform(-3, 3, n))[:, None]
    y = np.sin(2 * x[:, 0]) + 0.1 * rs.randn(n)
    return x, y


def fit(nll, hyper, x, y, steps=100, lr=0.05):
    """Gradient descent on the hyperparameters only (``wrt`` the first three arguments)."""
    hyper = list(hyper)
    for _ in range(steps):
        value, g = ys.grad(nll, *hyper, x, y, wrt=(0, 1, 2))
        hyper = [h - lr * gh for h, gh in zip(hyper, g)]
    return value, hyper


def main(steps=100):
    x, y = data()
    start = [0.0, 0.0, -1.0]
    print(f"nll at the start: {nll_cholesky(*start, x, y):.4f} "
          f"(scipy.stats: {nll_stats(*start, x, y):.4f})")
    value, hyper = fit(nll_cholesky, start, x, y, steps)
    print(f"after {steps} steps: nll {value:.4f}, length scale {np.exp(hyper[0]):.3f}, "
          f"signal sd {np.exp(hyper[1] / 2):.3f}, noise sd {np.exp(hyper[2] / 2):.3f}")
    x_new = np.linspace(-3, 3, 5)[:, None]
    print("posterior mean:", np.round(predict(*hyper, x, y, x_new), 3))
    print("sin(2x):       ", np.round(np.sin(2 * x_new[:, 0]), 3))
    return value, hyper


if __name__ == "__main__":
    main()
