"""Loops for issue 12 (loop regions): the forms a region must cover, and the ones that must stay
unrolled (guarded). Each takes float64 arrays and returns a scalar; tests/test_gradcheck.py
checks them in both forms against finite differences. Trip counts are at least 8 unless the
loop is meant to be short."""
import numpy as np

STEPS = 10           # a module-level trip count


def weighted(y):
    """sum(y * c) with fixed weights c that differ per element."""
    return np.sum(y * np.cos(np.arange(np.size(y)) + 1.0).reshape(np.shape(y)))


# ----- loops a region covers ---------------------------------------------------------------------

def carried_array(W, x):
    h = x
    for t in range(STEPS):
        h = np.tanh(W @ h + 0.1 * t)          # the index as a value, not only as a key
    return weighted(h)


def per_step_input(xs, a, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] * a + 0.5 * h)
    return weighted(h)


def per_step_output(xs, a):
    out = np.zeros((xs.shape[0], a.shape[0]))
    h = a
    for t in range(xs.shape[0]):
        h = np.sin(h * xs[t] + 0.3)
        out[t] = h * 2.0
    return weighted(out)


def previous_step(xs, w):
    s = 0.0
    for t in range(1, xs.shape[0]):
        s = s + np.sum(xs[t] * xs[t - 1] * w)
    return s


def over_first_axis(xs, h0):
    h = h0
    for x_t in xs:
        h = np.tanh(h + x_t) * 0.9
    return weighted(h)


def zipped(xs, ys, h0):
    h = h0
    for a, b in zip(xs, ys):
        h = h * np.cos(b) + a
    return weighted(h)


def enumerated(xs, h0):
    h = h0
    for t, x_t in enumerate(xs):
        h = h * 0.8 + np.sin(x_t) * (t + 1.0)
    return weighted(h)


def nested(W, xs, h0):
    h = h0
    for i in range(xs.shape[0]):
        for j in range(W.shape[0]):
            h = np.tanh(h * W[j] + xs[i])
    return weighted(h)


def nested_short_inner(xs, h0):
    h = h0
    for i in range(xs.shape[0]):
        for j in range(2):
            h = np.sin(h + xs[i, j])
    return weighted(h)


def run_steps(h, xs, w):
    for t in range(xs.shape[0]):
        h = np.tanh(h * w + xs[t])
    return h


def loop_in_helper(xs, w, h0):
    return weighted(run_steps(h0, xs, w) + run_steps(h0 * 0.5, xs[::-1], w))


def while_static(x, w):
    h = x
    t = 0
    while t < STEPS:
        h = np.sin(h * w) + x
        t += 1
    return weighted(h)


def append_and_stack(xs, h0):
    hs = []
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h + xs[t])
        hs.append(h)
    return weighted(np.stack(hs))


def ring(x):
    """(i + 1) % n wraps at the end; x[i - 1] is x[-1] at i = 0 (a negative key at run time)."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[(i + 1) % n] ** 2 - 0.5 * x[i - 1]
    return s


def reversed_range(xs, h0):
    h = h0
    for t in range(xs.shape[0] - 1, -1, -1):
        h = np.tanh(h * 0.7 + xs[t])
    return weighted(h)


def accumulate_in_place(xs, a):
    acc = np.zeros_like(a)
    h = a
    for t in range(xs.shape[0]):
        h = np.cos(h + xs[t])
        acc += h * xs[t]
    return weighted(acc)


def rnn_summed(Wx, Wh, b, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + np.sum(h * h)
    return 0.5 * total


def continue_on_index(xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        if t % 3 == 0:
            continue
        h = np.sin(h + xs[t])
    return weighted(h)


# ----- loops that stay unrolled (the fallback) -------------------------------------------------

def data_branch(xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        if np.sum(xs[t]) > 0:                 # decided by the data at every step
            h = np.tanh(h + xs[t])
        else:
            h = h * 0.5 - xs[t]
    return weighted(h)


def growing_carry(x):
    h = x
    for t in range(9):
        h = np.concatenate([h, np.sin(h[-1:]) * 0.5])     # the carried shape changes
    return weighted(h)


def break_on_index(xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h + xs[t])
        if t == 8:
            break
    return weighted(h)


def break_on_data(xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = h + xs[t]
        if np.sum(h) > 4.0:
            break
    return weighted(np.sin(h))


def early_return(xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.sin(h + xs[t])
        if t == 6:
            return weighted(h) * 2.0
    return weighted(h)


def short_loop(xs, h0):
    h = h0
    for t in range(3):
        h = np.tanh(h + xs[t])
    return weighted(h)


def decided_after(xs, h0):
    """Python branches on the loop's result, its arms arrays of two shapes (a guard): the
    region's steps run at compile time (its value is read)."""
    h = h0
    s = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h * 0.9 + xs[t])
        s = s + np.sum(h ** 2)
    if s > 1.0:
        z = weighted(h) * h[:2]
    else:
        z = h * 3.0
    return s * 2.0 + np.sum(z)


def loop_after_loop(xs, h0):
    """Two regions in a row, the second starting where the first ends: neither runs at compile
    time (nothing reads their values)."""
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h + xs[t])
    g = h * 0.5
    for t in range(xs.shape[0]):
        g = np.sin(g * xs[t] + h)
    return weighted(g) + weighted(h)
