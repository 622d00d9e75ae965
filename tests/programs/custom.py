"""User functions with custom derivative rules, registered at import as a user's module would."""
import numpy as np

import yota_s2s as ys


def logistic(x):
    return 1 / (1 + np.exp(-x))


ys.diffrule(logistic, "x", "y * (1 - y) * dy")      # y: the result, dy: the incoming gradient



def L(x):
    """The issue's example."""
    return np.sum(logistic(x))


WEIGHTS = np.array([0.5, -1.0, 2.0, 0.25, 1.5])


def logistic_loss(x):
    return np.sum(logistic(x) * WEIGHTS)


def softplus(x):
    return np.log1p(np.exp(x))


# a rule that calls the forward function again: common-subexpression elimination reuses it
ys.diffrule(softplus, "x", "dy * logistic(x)")


def softplus_logistic_loss(x):
    return np.sum(softplus(x) + logistic(x))


def scale(x, factor=1.0, shift=0.0):
    return x * factor + shift


def scale_grad(g, factor=1.0, shift=0.0):
    return g * factor


ys.primitive(scale_grad)                             # called by the rule, not inlined
ys.nodiff(scale_grad)
ys.diffrule(scale, "x", "scale_grad(dy, **kw)")     # forwards factor=, shift= as given


def scale_loss(x):
    return np.sum(scale(x, factor=3.0) ** 2)


def clipped(x, lo=-1.0, hi=1.0):
    return np.clip(x, lo, hi)


def inside(x, lo=-1.0, hi=1.0):
    return (x >= lo) & (x <= hi)


@ys.diffrule(clipped, "x")
def clipped_grad(x, dy, **options):
    """A multi-line rule: ``options`` holds the keyword options the call gave (``hi=0.5``)."""
    mask = inside(x, **options)
    return dy * mask


def clipped_loss(x):
    return np.sum(clipped(x, hi=0.5) * x)


def power(x, n):
    """``n`` is an integer operand: it never gets a gradient, so it needs no rule."""
    return x ** n


ys.diffrule(power, "x", "dy * n * x ** (n - 1)")


def power_loss(x, n, flag):
    return np.sum(power(x, n)) if flag else np.sum(x)


def argmax_weight(x):
    return np.exp(x[np.argmax(x)])


ys.nodiff(argmax_weight)


def nodiff_loss(x):
    return np.sum(x * argmax_weight(x))


def affine(x, w):
    return x * w + 1.0


ys.diffrule(affine, "x", "dy * w")
ys.nodiff(affine, "w")


def affine_loss(x, w):
    return np.sum(affine(x, w) ** 2)


def stopped_loss(x):
    target = ys.stop_gradient(np.tanh(x))
    return np.sum((x - target) ** 2)


def shadowing(logistic):
    """A parameter named like an imported function: the import takes an alias."""
    return np.sum(LOGISTIC(logistic))


LOGISTIC = logistic


def rotate(a):
    """A quarter turn: the same shape as ``a.T`` for a square matrix, other values."""
    return np.rot90(a)


ys.diffrule(rotate, "a", "np.rot90(dy, -1)")


def rotate_loss(x, w):
    return np.sum(rotate(x) * w)


def blend(x1, x2):
    return 2.0 * x1 + 3.0 * x2


ys.diffrule(blend, "x1", "2.0 * dy")
ys.diffrule(blend, "x2", "3.0 * dy")


def like_built_ins(x, w):
    """Calls where a built-in of the same name would be simplified or written otherwise:
    ``.T``, ``-(-x)``, ``x * 1``, ``0 + x``, ``0 - x``, zeros added, ``out=`` forms."""
    a = rotate(rotate(x)) + rotate(x)[0]
    b = blend(x, 1.0) + blend(0.0, x) + blend(np.zeros((3, 3)), x)
    return np.sum((a + b) * w)


# A monitor that calls a compiled gradient from inside a call of it (issue 29, item 9): while
# MONITOR["calls"] holds gradients to call, each call of monitor pops one and calls it (which
# may call monitor again: recursion), recording what it returned.
MONITOR = {"calls": [], "seen": []}


def monitor(h):
    if MONITOR["calls"]:
        grad, args = MONITOR["calls"].pop(0)
        MONITOR["seen"].append(grad(*args))
    return h


ys.nodiff(monitor)


def monitored_loss(x):
    h = np.tanh(x) * 3.0
    return np.sum(monitor(h) * x ** 2) + np.sum(np.sin(h))
