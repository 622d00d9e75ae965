"""DP-SGD on scikit-learn's digits: an MLP trained with per-example clipping and noise.

    pip install -e '.[examples]'
    python examples/dpsgd_digits.py

Differentially private SGD (Abadi et al., 2016) bounds what one example can do to a step: each
example's gradient is clipped to a norm ``C``, the clipped gradients are summed, and Gaussian
noise of scale ``sigma * C`` is added. The norms come from ``ys.per_example_grad(...,
norms=True)``, which never makes the per-example gradients (the ghost norm of a dense layer is
``|x|^2 |g|^2``); the clipped sum is then one batch gradient, of the losses weighted by each
example's clipping factor (``clipped_sum``). ``check`` compares that with clipping the
per-example gradients themselves (``ys.per_example_grad``) on one batch.

The noise multiplier and clipping norm are the usual ones for such a model; the privacy
accounting (epsilon for these settings) is out of this example's scope.
"""
import numpy as np

import yota_s2s as ys


def example_loss(params, x, label):
    """Softmax cross-entropy of one image ``x`` with its ``label`` (an int)."""
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits)
    return m + np.log(np.sum(np.exp(logits - m))) - logits[label]


def weighted_loss(params, X, labels, weights):
    """The losses of a batch, each weighted: its gradient is the weighted sum of theirs."""
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits, axis=1, keepdims=True)
    losses = m[:, 0] + np.log(np.sum(np.exp(logits - m), axis=1)) - \
        logits[np.arange(X.shape[0]), labels]
    return np.sum(weights * losses)


def clipped_sum(params, X, labels, clip):
    """The sum over the batch of each example's gradient clipped to the norm ``clip``, from the
    ghost norms and one weighted batch gradient."""
    norms = ys.per_example_grad(example_loss, params, X, labels, norms=True)
    factors = np.minimum(1.0, clip / np.maximum(norms, 1e-12))
    _, g = ys.grad(weighted_loss, params, X, labels, factors, wrt=0)
    return {key: g[0][(key,)] for key in params}, norms


def check(params, X, labels, clip):
    """The largest difference between ``clipped_sum`` and clipping the materialized
    per-example gradients (``ys.per_example_grad``), over the parameters."""
    fast, _ = clipped_sum(params, X, labels, clip)
    per_example = ys.per_example_grad(example_loss, params, X, labels)
    norms = np.sqrt(sum(np.sum(g.reshape(len(X), -1) ** 2, axis=1) for g in per_example.values()))
    factors = np.minimum(1.0, clip / norms)
    return max(float(np.max(np.abs(fast[k] - np.tensordot(factors, g, axes=1))))
               for k, g in per_example.items())


def init(rng, sizes=(64, 32, 10)):
    n_in, n_hidden, n_out = sizes
    return {"W1": rng.standard_normal((n_in, n_hidden)) * np.sqrt(2.0 / (n_in + n_hidden)),
            "b1": np.zeros(n_hidden),
            "W2": rng.standard_normal((n_hidden, n_out)) * np.sqrt(2.0 / (n_hidden + n_out)),
            "b2": np.zeros(n_out)}


def accuracy(params, X, labels):
    logits = np.tanh(X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def split(rng):
    from sklearn.datasets import load_digits
    digits = load_digits()
    X, labels = digits.data / 16.0, digits.target
    order = rng.permutation(len(X))
    test, train = order[:360], order[360:]
    return X[train], labels[train], X[test], labels[test]


def main(epochs=15, batch=64, lr=0.5, clip=1.0, sigma=1.0):
    rng = np.random.default_rng(0)
    X_train, y_train, X_test, y_test = split(rng)
    params = init(rng)
    print(f"clipped sum vs clipping the per-example gradients: max |diff| "
          f"{check(params, X_train[:batch], y_train[:batch], clip):.1e}")
    for epoch in range(epochs):
        order = rng.permutation(len(X_train))
        clipped = []
        for start in range(0, len(order) - batch + 1, batch):      # same shape every step
            idx = order[start:start + batch]
            total, norms = clipped_sum(params, X_train[idx], y_train[idx], clip)
            clipped.append(np.mean(norms > clip))
            for key, g in total.items():
                noisy = (g + sigma * clip * rng.standard_normal(g.shape)) / batch
                params[key] = params[key] - lr * noisy
        if epoch % 5 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch:2d}  clipped {np.mean(clipped):.0%} of the examples  "
                  f"test accuracy {accuracy(params, X_test, y_test):.3f}")
    print(f"final test accuracy: {accuracy(params, X_test, y_test):.3f} on {len(X_test)} digits "
          f"(noise multiplier {sigma}, clipping norm {clip})")
    return accuracy(params, X_test, y_test)


if __name__ == "__main__":
    main()
