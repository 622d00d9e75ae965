"""Models kept in structured arguments: classes, dataclasses, namedtuples, dicts, lists."""
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class Linear:
    def __init__(self, W, b):
        self.W, self.b = W, b
        self.steps = 0                  # never read by the code: not part of the compile key

    def __call__(self, x):
        return self.W @ x + self.b[:, None]


def relu(x):
    return np.maximum(x, 0.0)


class MLP:
    def __init__(self, sizes, rng, act=np.tanh):
        self.layers = [Linear(rng.standard_normal((o, i)) / np.sqrt(i), np.zeros(o))
                       for i, o in zip(sizes[:-1], sizes[1:])]
        self.act = act

    def forward(self, X):
        h = X
        for layer in self.layers[:-1]:
            h = self.act(layer(h))
        return self.layers[-1](h)

    def loss(self, X):
        return np.mean(self.forward(X) ** 2)


def mlp_loss(model, X):
    return model.loss(X)


class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray


@dataclass(frozen=True)
class Scaled:
    W: np.ndarray
    scale: float
    name: str = "scaled"


def mixed(p, d, lst, dct):
    return (np.sum(np.tanh(p.W) * d.W) * d.scale + np.sum(lst[0] * lst[1][0] ** 2)
            + np.sum(dct["a"]["b"] ** 3) + p.b[1])


class State(NamedTuple):
    h: np.ndarray
    c: np.ndarray


@dataclass
class Pair:
    a: np.ndarray
    b: np.ndarray

    def total(self):
        return np.sum(self.a * self.b)


class Counter:
    def __init__(self, x):
        self.x = x
        self.n = 1

    def add(self, y):
        self.x = self.x + y
        self.n += 1


def built_inside(W, X):
    """Namedtuples, dataclasses and plain classes constructed from traced values."""
    s = State(np.tanh(W @ X), X)
    acc = Counter(Pair(s.h, s.h).total())
    acc.add(np.sum(s.c ** 2))
    return acc.x * acc.n


class Seq:
    __slots__ = ("items", "scale")

    def __init__(self, items, scale):
        self.items, self.scale = items, scale

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    @property
    def double(self):
        return 2 * self.scale

    @staticmethod
    def square(x):
        return x * x

    @classmethod
    def count(cls, items):
        return len(items)


def seq_loss(seq, x):
    total = 0.0
    for i in range(len(seq)):
        total = total + np.sum(Seq.square(seq[i] * x)) * seq.double
    return total * Seq.count([1, 2])


class Tied:
    """An autoencoder whose decoder reuses the encoder's matrix (one array, two paths)."""

    def __init__(self, W):
        self.enc = Linear(W, np.zeros(W.shape[0]))
        self.dec_W = W

    def loss(self, X):
        h = np.tanh(self.enc(X))
        return np.sum((self.dec_W.T @ h - X) ** 2)


class Quadratic:
    def __init__(self, A):
        self.A = A

    def __call__(self, x):
        return np.sum((self.A @ x) ** 2)


class Dense:
    """ML-From-Scratch's layer: made from its sizes, its weights set afterwards, and its input
    kept for a backward pass (``self.layer_input = X``)."""

    def __init__(self, n_units, input_shape):
        self.n_units, self.input_shape = n_units, input_shape
        self.W = None
        self.w0 = np.zeros((1, n_units))
        self.layer_input = None

    def forward_pass(self, X):
        self.layer_input = X
        return X.dot(self.W) + self.w0


def dense_built_inside(W, w0, X):
    """A layer built inside the loss from static values, its weights assigned to it."""
    layer = Dense(W.shape[1], (W.shape[0],))
    layer.W = W
    y = layer.forward_pass(X)
    layer.w0 = w0
    out = np.tanh(layer.forward_pass(y @ W.T))
    return np.sum(out ** 2) + np.sum(layer.layer_input)


def dense_loss(layer, X):
    """The layer's forward as its author wrote it (``self.layer_input = X``), twice: the
    caller's layer keeps what the last call stored, as calling the function does."""
    h = np.tanh(layer.forward_pass(X))
    out = h * 1.0
    layer.output = out
    out *= 2.0              # after the store: the stored array changes with it, as in Python
    return np.sum(layer.forward_pass(h) ** 2) + np.sum(layer.output)
