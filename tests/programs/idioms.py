"""Helpers for test_idioms.py: functions with rules on private RuleSets (a rule whose gradient
calls a function without a rule; rules that read only some options of their call)."""
import numpy as np

import yota_s2s as ys

KERNEL = np.array([0.25, 0.5, 0.25])


def smooth(x):
    return np.convolve(x, KERNEL, mode="same")


SMOOTH_RULES = ys.RULES.copy()


@SMOOTH_RULES.diffrule(smooth, "x")
def smooth_grad(x, dy):
    """np.convolve has no rule: a first-order gradient only calls it."""
    return np.convolve(dy, KERNEL[::-1], mode="same")


def lse(a, axis=None, b=None, keepdims=False):
    m = np.max(a)
    scale = 1.0 if b is None else b
    return m + np.log(np.sum(scale * np.exp(a - m), axis=axis, keepdims=keepdims))


LSE_RULES = ys.RULES.copy()       # a rule written for axis and keepdims only


@LSE_RULES.diffrule(lse, "a")
def lse_grad(a, y, dy, axis=None, keepdims=False):
    return dy * np.exp(a - y)


LSE_EXPR_RULES = ys.RULES.copy()
LSE_EXPR_RULES.diffrule(lse, "a", "dy * np.exp(a - y)")

LSE_IGNORING_RULES = ys.RULES.copy()      # says b does not matter (wrongly, but on purpose)
LSE_IGNORING_RULES.diffrule(lse, "a", "dy * np.exp(a - y)", ignores=("b",))

LSE_B_RULES = ys.RULES.copy()


@LSE_B_RULES.diffrule(lse, "a")
def lse_grad_b(a, y, dy, axis=None, b=None, keepdims=False):
    scale = 1.0 if b is None else b
    return dy * scale * np.exp(a - y)


def halves(x):
    """A generator helper."""
    for i in range(3):
        yield x * (i + 1)
    yield from [np.sin(x), np.cos(x)]


def scaled_sum(x, scale, shift=0.0):
    return np.sum(x * scale + shift)
