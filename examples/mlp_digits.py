"""An MLP written as a class with a list of layers, trained on scikit-learn's digits.

    pip install -e '.[examples]'
    python examples/mlp_digits.py

The data set (1797 8x8 images of handwritten digits) ships inside scikit-learn, so nothing is
downloaded. The loss is a method of the model: ``ys.grad(model.loss, X, Y)`` compiles it with
the model as a structured argument, and ``g.self`` maps each field path
(``("layers", 0, "W")``) to its gradient. Plain SGD with momentum keeps its velocity arrays in
a dict keyed by the same paths; ``ys.update`` changes the model's arrays in place.
"""
import numpy as np
from sklearn.datasets import load_digits

import yota_s2s as ys


class Dense:
    def __init__(self, n_in, n_out, rng, act=None):
        self.W = rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / (n_in + n_out))
        self.b = np.zeros(n_out)
        self.act = act

    def __call__(self, h):
        z = h @ self.W + self.b
        return z if self.act is None else self.act(z)


class MLP:
    def __init__(self, sizes, rng):
        acts = [np.tanh] * (len(sizes) - 2) + [None]
        self.layers = [Dense(i, o, rng, act) for i, o, act in zip(sizes[:-1], sizes[1:], acts)]

    def logits(self, X):
        h = X
        for layer in self.layers:
            h = layer(h)
        return h

    def loss(self, X, Y):
        """Mean softmax cross-entropy against one-hot labels ``Y``."""
        z = self.logits(X)
        z = z - np.max(z, axis=1, keepdims=True)
        log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(np.sum(Y * log_p, axis=1))


def accuracy(model, X, labels):
    return float(np.mean(np.argmax(model.logits(X), axis=1) == labels))


def split(rng):
    digits = load_digits()
    X, labels = digits.data / 16.0, digits.target
    order = rng.permutation(len(X))
    test, train = order[:360], order[360:]
    return X[train], labels[train], X[test], labels[test]


def main(epochs=30, batch=64, lr=0.1, momentum=0.9):
    rng = np.random.default_rng(0)
    X_train, y_train, X_test, y_test = split(rng)
    Y_train = np.eye(10)[y_train]
    model = MLP([64, 32, 10], rng)
    velocity = {}
    for epoch in range(epochs):
        order = rng.permutation(len(X_train))
        losses = []
        for start in range(0, len(order) - batch + 1, batch):      # same shape every step
            idx = order[start:start + batch]
            val, g = ys.grad(model.loss, X_train[idx], Y_train[idx], wrt="self")
            for path, grad in g.self.items():
                velocity[path] = momentum * velocity.get(path, 0.0) + grad
            ys.update(model, velocity, lambda x, v: x - lr * v)
            losses.append(val)
        if epoch % 5 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch:2d}  loss {np.mean(losses):.4f}  "
                  f"test accuracy {accuracy(model, X_test, y_test):.3f}")
    print(f"final test accuracy: {accuracy(model, X_test, y_test):.3f} on {len(X_test)} digits")
    print("cache:", ys.cache_info())
    return accuracy(model, X_test, y_test)


if __name__ == "__main__":
    main()
