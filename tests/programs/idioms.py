"""Helpers for test_idioms.py: functions with rules on private RuleSets (a rule whose gradient
calls a function without a rule; rules that read only some options of their call)."""
import numpy as np

import yota_s2s as ys

def steps(x):
    return np.ediff1d(x)


STEP_RULES = ys.RULES.copy()


@STEP_RULES.diffrule(steps, "x")
def steps_grad(x, dy):
    """np.ediff1d has no rule: a first-order gradient only calls it."""
    return -np.ediff1d(np.concatenate((np.zeros(1), dy, np.zeros(1))))


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
