"""The log-likelihood of a hidden Markov model by the forward algorithm: a Python loop over time
with scipy.special.logsumexp over the previous state, differentiated with respect to the initial,
transition and emission parameters (Gaussian emissions), and fitted by gradient ascent.

    .venv/bin/python examples/hmm.py

The loop stays a loop in the gradient module (a loop region: its backward is a reverse loop over
the states it saved), but its length is part of the compiled signature, so a new length of
sequence compiles a new variant; a sequence of the same length reuses it.
"""
import numpy as np
from scipy.special import logsumexp

import yota_s2s as ys


def log_normalize(a, axis):
    return a - logsumexp(a, axis=axis, keepdims=True)


def log_likelihood(log_pi, log_A, means, log_sd, obs):
    """log p(obs) = log sum over state paths; ``log_pi``/``log_A`` unnormalized log-probabilities."""
    log_pi = log_normalize(log_pi, 0)
    log_A = log_normalize(log_A, 1)                      # rows: from state, columns: to state
    sd = np.exp(log_sd)
    log_emit = -0.5 * ((obs[:, None] - means[None, :]) / sd) ** 2 - log_sd - 0.5 * np.log(2 * np.pi)
    log_alpha = log_pi + log_emit[0]
    for t in range(1, len(obs)):
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_emit[t]
    return logsumexp(log_alpha)


def sample(T=60, seed=0):
    rs = np.random.RandomState(seed)
    A = np.array([[0.9, 0.1], [0.2, 0.8]])
    states = [0]
    for _ in range(T - 1):
        states.append(rs.choice(2, p=A[states[-1]]))
    states = np.array(states)
    return np.array([-1.0, 1.5])[states] + 0.5 * rs.randn(T), states


def main(steps=200, lr=0.005):
    obs, _ = sample()
    params = [np.zeros(2), np.zeros((2, 2)), np.array([-0.5, 0.5]), np.zeros(2)]
    print(f"log-likelihood at the start: {log_likelihood(*params, obs):.3f}")
    for _ in range(steps):
        value, g = ys.grad(log_likelihood, *params, obs, wrt=(0, 1, 2, 3))
        params = [p + lr * gp for p, gp in zip(params, g)]
    print(f"after {steps} steps: {log_likelihood(*params, obs):.3f}")
    print("means:", np.round(params[2], 2), " sds:", np.round(np.exp(params[3]), 2))
    print("transitions:\n", np.round(np.exp(log_normalize(params[1], 1)), 2))
    return log_likelihood(*params, obs)


if __name__ == "__main__":
    main()
