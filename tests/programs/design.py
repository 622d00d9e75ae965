# model.py from DESIGN.md
import numpy as np


def predict(W, b, x):
    return np.tanh(W @ x + b[:, None])


def loss(W, b, x, y):
    h = predict(W, b, x)
    return np.mean((h - y) ** 2)
