# the function of docs/primer.md
import numpy as np


def loss(w, x):
    h = np.tanh(w * x)
    return np.sum(h * h)
