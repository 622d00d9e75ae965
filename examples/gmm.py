"""A Gaussian mixture fitted by gradient descent on its negative log-likelihood, with
scipy.special.logsumexp for the sum over components and for the mixing weights' softmax.

    .venv/bin/python examples/gmm.py

The parameters are one dict (``{"log_weights", "means", "log_stds"}``): ``ys.grad`` returns its
gradient by field path, and ``ys.update`` applies a step to every field in place -- no flatten
and unflatten of a parameter vector.
"""
import numpy as np
from scipy.special import logsumexp

import yota_s2s as ys


def component_logpdfs(params, data):
    """log w_k + log N(x_n; mu_k, diag(s_k^2)) for every point n and component k: [N, K]."""
    log_w = params["log_weights"] - logsumexp(params["log_weights"])
    means, stds = params["means"], np.exp(params["log_stds"])           # [K, D]
    z = (data[:, None, :] - means[None, :, :]) / stds[None, :, :]         # [N, K, D]
    log_norm = -0.5 * z ** 2 - params["log_stds"][None, :, :] - 0.5 * np.log(2 * np.pi)
    return log_w[None, :] + np.sum(log_norm, axis=2)


def nll(params, data):
    """-sum_n log sum_k w_k N(x_n; mu_k, diag(s_k^2))."""
    return -np.sum(logsumexp(component_logpdfs(params, data), axis=1))


def responsibilities(params, data):
    lp = component_logpdfs(params, data)
    return np.exp(lp - logsumexp(lp, axis=1, keepdims=True))


def data(seed=0, n=150):
    rs = np.random.RandomState(seed)
    centers = np.array([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.5]])
    labels = rs.randint(0, 3, n)
    return centers[labels] + 0.5 * rs.randn(n, 2), labels


def init_params(k=3, d=2, seed=1):
    rs = np.random.RandomState(seed)
    return {"log_weights": np.zeros(k), "means": rs.randn(k, d), "log_stds": np.zeros((k, d))}


def main(steps=200, lr=0.01):
    x, labels = data()
    params = init_params()
    print(f"nll at the start: {nll(params, x):.3f}")
    for _ in range(steps):
        value, g = ys.grad(nll, params, x, wrt=0)
        ys.update(params, g[0], lambda p, gp: p - lr * gp)
    print(f"after {steps} steps: nll {nll(params, x):.3f}")
    print("means:\n", np.round(params["means"], 2))
    assigned = responsibilities(params, x).argmax(axis=1)
    pure = np.mean([np.bincount(assigned[labels == k]).max() / np.sum(labels == k) for k in range(3)])
    print(f"points of a true cluster in its most common component: {pure:.0%} on average")
    return nll(params, x)


if __name__ == "__main__":
    main()
