"""Programs with an ``if`` on a traced number (issue 33: branches that stay ``if``s)."""
import numpy as np


def piecewise(x):
    if np.sum(x) > 0:
        y = x ** 2
    else:
        y = -x
    return np.sum(y * 3.0)


def huber(r, d):
    a = np.sum(np.abs(r))
    if a <= d:
        loss = 0.5 * a ** 2
    else:
        loss = d * (a - 0.5 * d)
    return loss


def three_ways(x, w):
    s = np.dot(x, w)
    if s > 1.0:
        y = np.tanh(x) * w
    elif s < -1.0:
        y = np.exp(x) - w
    else:
        y = x * s
    return np.sum(y ** 2)


def normalized(x):
    m = np.max(np.abs(x))
    if m > 1.0:
        x = x / m        # else x is returned as it is: the arm passes it through
    return np.sum(np.sin(x)) + np.sum(x * x)


def sqrt_or_half(x):
    if np.min(x) > 0.0:
        y = np.sqrt(x)     # nan where x < 0: the arm is not run there
    else:
        y = 0.5 * x
    return np.sum(y)


def nested(x, y):
    t = np.sum(x * y)
    if t > 0.0:
        if np.sum(x) > 0.0:
            z = x * y * t
        else:
            z = x + y
    else:
        z = y * 2.0
    return np.sum(z * x)


def two_results(x):
    a = np.sum(x)
    if a > 0.0:
        u = x * a
        v = np.cos(x)
    else:
        u = -x
        v = x ** 3
    return np.sum(u * v)


def huber_returns(r, d):
    """huber written with returns: the statements after the ``if`` that returns are its other
    arm, and each arm binds the returned value."""
    a = np.sum(np.abs(r))
    if a <= d:
        return 0.5 * a ** 2
    return d * (a - 0.5 * d)


def returns_in_chain(x):
    """An ``elif`` chain whose arms return, and statements after it."""
    s = np.sum(x)
    if s > 2.0:
        return np.sum(np.tanh(x))
    elif s < -2.0:
        y = np.exp(x)
        return np.sum(y) * 0.5
    z = x * s
    return np.sum(z ** 2)


def returns_inside(x):
    """A return in an if inside an arm, statements after: they are written in both arms."""
    s = np.sum(x)
    if s > 0:
        if np.max(x) > 1.0:
            return np.sum(x ** 2)
        y = x * 3.0
    else:
        y = -x
    return np.sum(np.sin(y))


def newton_or_half(a):
    """A while on data in an arm (a guard clause, then Newton's square root)."""
    if np.min(a) > 0.5:
        x = a
        while np.max(np.abs(x * x - a)) > 1e-10:
            x = 0.5 * (x + a / x)
    else:
        x = a * 0.5
    return np.sum(x * x) + np.sum(x)


def both_ways(x, w):
    """``and``, ``or`` and ``not`` in the test: one traced bool (numpy's logical_and, ...),
    written ``and`` in the module."""
    if np.sum(x) > 0 and not np.max(w) > 1.0 or np.min(x) > 0.5:
        y = x * w
    else:
        y = x + w
    return np.sum(y ** 2)


def in_band(x):
    """A chain of comparisons, and conditional expressions: one assigned, one inside a sum."""
    s = np.sum(x)
    y = np.tanh(x) if -1.0 < s < 1.0 else x * 0.5
    return np.sum(y * y) + (s * 2.0 if s > 0 else -s)


def _scaled(x):
    m = np.max(np.abs(x))
    if m > 1.0:
        return x / m
    return x


def scaled_twice(x, w):
    """A helper that returns early on data, inlined twice: a branch at each call."""
    return np.sum(_scaled(x * w) ** 2) + np.sum(_scaled(x) * w)


def shapes_differ(x):
    if np.sum(x) > 0:
        y = x[:2]
    else:
        y = x
    return np.sum(y)


def statics_differ(x):
    if np.sum(x) > 0:
        k = 2
    else:
        k = 3
    return np.sum(x ** k)


def four_paths(x):
    if np.sum(x) > 0:
        y = x[:2]
    else:
        y = x
    if np.max(x) > 2.0:
        y = y[:1]
    return np.sum(y)


def branch_in_loop(x, w):
    h = x
    for t in range(20):
        if np.sum(h * w) > 0.0:
            h = np.tanh(h * w)
        else:
            h = 0.5 * h + w
    return np.sum(h ** 2)


def scaled_or_squared(x):
    v = x * x
    if np.sum(v) > 2.0:
        y = v * 0.5 - 0.5      # its backward arm's gradient is the number 0.5, broadcast
    else:
        y = v * v
    return np.sum(y)


def shifted_or_scaled(x, c):
    if np.sum(c) > 0.0:        # reads nothing batched when vmap batches x only
        y = x * c
    else:
        y = x - c
    return np.sum(y ** 2)


def solved_or_kept(A, b):
    if np.trace(A) > 0.0:
        y = np.linalg.solve(A, b)      # may raise for an example whose A is singular
    else:
        y = b
    return np.sum(y)
