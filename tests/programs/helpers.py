"""Helpers in another module, inlined across module boundaries."""
import numpy as np


def scaled_sum(x, scale=1.0):
    return np.sum(x) * scale


def combine(a, b, *extra, shift=0.0, **unused):
    return np.sum(a * b) + sum(extra) + shift
