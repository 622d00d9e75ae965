"""Programs with a ``while`` on a traced condition (issue 33: while loops that stay loops)."""
import numpy as np


def newton_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
    return np.sum(x)


def cube_root(c):
    """Bisection on [0, c + 1], then one Newton step (the root's derivative comes from it)."""
    lo = np.zeros_like(c)
    hi = c + 1.0
    while np.max(hi - lo) > 1e-9:
        mid = 0.5 * (lo + hi)
        above = mid ** 3 > c
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    x = 0.5 * (lo + hi)
    x = x - (x ** 3 - c) / (3 * x ** 2)
    return np.sum(x * x)


def until_small(a, w):
    """A Python float carried (``err``), two carried arrays, an invariant ``w``."""
    x = np.ones_like(a)
    s = np.zeros_like(a)
    err = 1.0
    while err > 1e-12:
        y = 0.5 * (x + a / x)
        err = np.max(np.abs(y - x))
        s = s + w * y
        x = y
    return np.sum(x ** 3) + np.sum(np.sin(s))


def adaptive_heun(k, y0):
    """dy/dt = -k y on [0, 1] by Heun's method with an adaptive step: a step is accepted
    where the Euler/Heun difference is small (the ``if`` in the while: a branch statement)."""
    y = y0
    t = 0.0
    h = 0.1
    while t < 1.0:
        h = np.minimum(h, 1.0 - t)
        f1 = -k * y
        y1 = y + h * f1
        f2 = -k * y1
        y2 = y + 0.5 * h * (f1 + f2)
        err = np.max(np.abs(y2 - y1))
        if err < 1e-3:
            t = t + h
            y = y2
            h = h * 1.5
        else:
            h = h * 0.5
    return np.sum(y)


def _decay(y, k):
    return -k * y + 0.1 * np.sin(y)


def rk45(k, y0):
    """dy/dt = -k y + 0.1 sin(y) on [0, 2] by Dormand-Prince 5(4): a step is accepted where the
    error estimate of its embedded pair is within the tolerance (the ``if`` in the while), and
    the next step size is scaled by the estimate either way."""
    tol = 1e-6
    y = y0
    t = 0.0
    h = 0.1
    while t < 2.0:
        h = np.minimum(h, 2.0 - t)
        k1 = _decay(y, k)
        k2 = _decay(y + h * (k1 / 5), k)
        k3 = _decay(y + h * (3 / 40 * k1 + 9 / 40 * k2), k)
        k4 = _decay(y + h * (44 / 45 * k1 - 56 / 15 * k2 + 32 / 9 * k3), k)
        k5 = _decay(y + h * (19372 / 6561 * k1 - 25360 / 2187 * k2 + 64448 / 6561 * k3
                             - 212 / 729 * k4), k)
        k6 = _decay(y + h * (9017 / 3168 * k1 - 355 / 33 * k2 + 46732 / 5247 * k3
                             + 49 / 176 * k4 - 5103 / 18656 * k5), k)
        y5 = y + h * (35 / 384 * k1 + 500 / 1113 * k3 + 125 / 192 * k4 - 2187 / 6784 * k5
                      + 11 / 84 * k6)
        k7 = _decay(y5, k)
        err = np.max(np.abs(h * (71 / 57600 * k1 - 71 / 16695 * k3 + 71 / 1920 * k4
                                 - 17253 / 339200 * k5 + 22 / 525 * k6 - 1 / 40 * k7)))
        if err <= tol:
            t = t + h
            y = y5
        h = h * np.clip(0.9 * (tol / (err + 1e-300)) ** 0.2, 0.2, 5.0)
    return np.sum(y ** 2)


def early_stop(x, w):
    """A ``for`` that leaves when the state is small: a while statement over the index and a
    ``done`` flag, the statements after the ``break`` a branch."""
    h = x
    for t in range(20):
        h = np.tanh(h * w + 0.1 * t)
        if np.sum(h * h) < 0.5:
            break
        h = h * 1.1
    return np.sum(h ** 2)


def with_break(a):
    x = a
    while np.max(x) > 1.0:
        x = x * 0.5
        if np.min(x) < 0.1:
            break
    return np.sum(x * x)


def shape_grows(a):
    x = a
    while np.sum(x) < 10.0:
        x = np.concatenate([x, x])
    return np.sum(x)


def rebinds_argument(a):
    """``x = b`` carries the caller's array itself (Python's ``x`` is ``b`` after the loop)."""
    b = a[::-1] * 0.5
    x = a * 1.0
    while np.sum(x) > np.sum(b) + 5.0:
        x = b
    return np.sum(x * a)


def running_sum(a):
    """A Python float carried: numpy makes it float32 with a float32 ``a`` (NEP 50)."""
    s = 0.0
    while s < 3.0:
        s = s + np.sum(a * a) + 0.5
    return s


# -- leaving a loop on data: break, continue, an early return, a counter in the condition ----

def shrink_until(x):
    """A ``break`` on data in a ``while`` on data: the loop carries a ``done`` flag."""
    while np.sum(x) > 1.0:
        x = x * 0.9
        if np.max(x) < 0.5:
            break
    return np.sum(x * x)


def capped_newton(a):
    """An int counter beside a data test (``i < 5 and ...``): ``i`` is a run-time int."""
    x = a
    i = 0
    while i < 5 and np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
        i += 1
    return np.sum(x) + 0.5 * i


def skip_negative(x, w):
    """``continue`` on data in a ``for``: the statements after it are the other arm."""
    h = x
    s = np.zeros_like(x)
    for t in range(12):
        h = np.tanh(h * w + 0.3 * np.sin(t))
        if np.sum(h) < 0.0:
            continue
        s = s + h * h
    return np.sum(s) + np.sum(h)


def first_small(x, w):
    """An early ``return`` on data in a ``for``: the loop leaves there and the function
    returns after it, under a branch on whether it did."""
    h = x
    for t in range(20):
        h = np.tanh(h * w + 0.1 * t)
        if np.sum(h * h) < 0.5:
            return np.sum(h) * 3.0
        h = h * 1.1
    return np.sum(h ** 2)


def index_scaled(x, w):
    """The index of a ``for`` left on data read by the step (``t * 0.1``, ``h * t``): a
    Python int, as range gives it, so a float32 state stays float32."""
    h = x
    for t in range(12):
        h = np.tanh(h * w) * (t * 0.1 + 1.0) + h * t * 0.01
        if np.sum(h * h) > 4.0:
            break
    return np.sum(h ** 2)


def line_search(x):
    """A backtracking line search: the while carries only a step size that no gradient
    reaches (it is 0.5 ** trips), so its backward has nothing to do."""
    g = 3.0 * x + 0.5
    step = 1.0
    while np.sum((x - step * g) ** 2) > np.sum(x ** 2) * 0.3:
        step = step * 0.5
    return np.sum((x - step * g) ** 2)


def break_or_turn(x, w):
    """``break`` in one arm of an ``elif`` chain, ``continue`` in another, and statements after
    the chain: they run only after its last arm (they move into it)."""
    h = x
    for t in range(20):
        h = np.tanh(h * w + 0.1)
        if np.sum(h) > 1.5:
            break
        elif np.sum(h) < -1.0:
            h = -0.5 * h
            continue
        h = h * 1.2
    return np.sum(h ** 2)


def settle(a, w):
    """``break`` after more statements in its arm, ``continue`` in a ``while`` beside it, and
    an ``or`` in the condition."""
    x = a
    s = 0.0
    n = 0
    while np.max(x) > 0.3 or n < 2:
        x = x * 0.8 + 0.05 * w
        n += 1
        if np.min(x) < 0.0:
            s = s + np.sum(x * w)
            break
        if np.sum(x) > 2.0:
            continue
        s = s + np.sum(np.sin(x))
    return s + np.sum(x ** 2)


def returns_a_row(x):
    """The early return gives an array of one number, the last one a number: one module
    cannot return both, so the loop is unrolled on the example, a guard per test, as before."""
    for t in range(6):
        x = x * 0.7
        if np.max(x) < 0.5:
            return np.sum(x * x, keepdims=True)
    return np.sum(x)


def counted_append(x):
    """A while counted by an int alone (unrolled) whose body appends to a list: the trial of a
    while statement traced the body once and left its row in the list (a KeyError compiling)."""
    ys = []
    t = 3
    h = x
    while t >= 0:
        h = np.tanh(h) + 0.1 * t
        ys.append(h)
        t -= 1
    return np.sum(np.stack(ys) ** 2)
