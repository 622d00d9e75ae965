"""One small function per frontend construct, for the frontend tests (tape text)."""
import functools

import numpy as np
import numpy as onp
from numpy import exp

from . import helpers

OFFSET = 2.0


def loop_continue(x, n):
    total = 0.0
    for i in range(n):
        if i == 1:
            continue
        total = total + np.sum(x[i])
    return total


def unpack(x):
    a, b = x
    return np.sum(a * b)


def while_guard(x):
    while np.sum(x) < 10:
        x = x * 2
    return np.sum(x)


def early_return(x, flag):
    if flag:
        return np.sum(x)
    return np.sum(x * 2)


def elif_chain(x, mode):
    if mode == "a":
        y = x + 1
    elif mode == "b":
        y = x * 3
    else:
        y = -x
    return np.sum(y)


def cond_expr_boolop(x, k):
    y = x * 2 if k > 1 and k < 5 else x
    z = (k == 0) or 3
    return np.sum(y) * z


def aliases(x):
    return onp.sum(exp(x)) + OFFSET


def across_modules(x):
    return helpers.scaled_sum(x, scale=3.0)


def defaults_and_kwargs(x):
    return helpers.combine(x, x, 1.0, 2.0, shift=0.5)


def zip_enumerate(xs, ws):
    total = 0.0
    for i, (x, w) in enumerate(zip(xs, ws)):
        total = total + i * np.sum(x * w)
    return total


def comprehension(x):
    parts = [x[i] * i for i in range(3) if i != 1]
    d = {k: v for k, v in zip("ab", parts)}
    return d["a"] + d["b"]


def augmented(x):
    y = x * 1.0
    y += 2.0
    y *= x
    return np.sum(y)


def nested_def(x):
    scale = 4.0

    def inner(v):
        return v * scale
    return np.sum(inner(x))


def make_closure(factor):
    def closure(x):
        return np.sum(x * factor)
    return closure


def iterate_array(x):
    total = 0.0
    for row in x:
        total = total + row[0]
    return total


def recursion(x, depth):
    if depth == 0:
        return np.sum(x)
    return recursion(x * 2.0, depth - 1)


def shapes_are_static(x):
    n, m = x.shape
    return np.sum(x.reshape(m, n)) / x.size + x.ndim


def import_inside(x):
    import math
    from numpy import tanh
    return math.pi * np.sum(tanh(x))


class Model:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, x):
        return np.sum(x) * self.scale


def doubled(f):
    """A decorator that changes the result: the compiled code must run it, not what
    ``__wrapped__`` names."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return 2 * f(*args, **kwargs)
    return wrapper


@doubled
def doubled_loss(x):
    return np.sum(x ** 2)


@doubled
def doubled_square(x):
    return x ** 2


def calls_doubled(x):
    return np.sum(doubled_square(x))

