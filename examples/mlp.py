"""A two-layer perceptron on MNIST-sized batches: a model file for the gradient file workflow.

    yota-s2s compile examples/mlp.py      # writes examples/mlp_grad.py
    yota-s2s check examples/mlp.py        # in CI: exit 1 if mlp_grad.py is out of date
    yota-s2s review examples/mlp.py       # an HTML page per function for the reviewer

``@ys.example`` marks the functions to compile and says what they are compiled for: the
factory returns one example per parameter (shapes, dtypes and static values are what count;
the values decide branches on data, so the factory draws them from the seeded ``rng``).
"""
import numpy as np

import yota_s2s as ys

N_IN, N_HIDDEN, N_OUT, BATCH = 784, 128, 10, 64


def batch(rng):
    """Weights, biases, a batch of inputs and its one-hot labels."""
    W1 = rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN)
    W2 = rng.standard_normal((N_HIDDEN, N_OUT)) / np.sqrt(N_HIDDEN)
    b1, b2 = np.zeros(N_HIDDEN), np.zeros(N_OUT)
    X = rng.random((BATCH, N_IN))
    labels = np.eye(N_OUT)[rng.integers(0, N_OUT, BATCH)]
    return W1, b1, W2, b2, X, labels


def predict(W1, b1, W2, b2, X):
    h = np.tanh(X @ W1 + b1)
    return h @ W2 + b2


def cross_entropy(logits, labels):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


@ys.example(batch)
def loss(W1, b1, W2, b2, X, labels):
    return cross_entropy(predict(W1, b1, W2, b2, X), labels)


@ys.example(lambda rng: batch(rng) + (1e-4,))
def regularized_loss(W1, b1, W2, b2, X, labels, decay):
    penalty = decay * (np.sum(W1 ** 2) + np.sum(W2 ** 2))
    return loss(W1, b1, W2, b2, X, labels) + penalty
