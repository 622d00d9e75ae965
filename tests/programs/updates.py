"""In-place updates as people write them: filled buffers, copies, masks, views, lists."""
import numpy as np


def fill_in_loop(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.tanh(x[i]) * x[i]
    return np.sum(out * out)


def copy_then_set(x, w):
    x = x.copy()
    x[1] = w[0] * 3.0
    x[:, 1:] += w[None, :2]
    return np.sum(x * x)


def mask_to_zero(x):
    y = np.exp(x)
    y[x < 0] = 0.0
    return np.sum(y * y)


def scale_in_place(x, w):
    a = x * w
    a *= 2.0
    b = a                      # the same array: b sees every update of a
    b += x
    a -= 0.5 * w
    return np.sum(a * b)


def write_through_view(x):
    y = x * 2.0
    v = y[:2]                  # a view: updating v updates y
    v += 1.0
    v[0] = x[3] ** 2
    t = y.T
    t[1] *= x[0]
    return np.sum(y ** 2)


def old_value_still_needed(x, w):
    y = x * w
    z = y * y                  # reads y before the update below
    y[0] = 5.0
    return np.sum(z) + np.sum(y * x)


def repeated_index(x, v):
    y = x * 1.5
    y[[0, 0, 2]] = v           # numpy keeps the last write to position 0
    return np.sum(y * np.arange(1.0, 5.0))


def rows_and_columns(x, v):
    y = x + 0.0
    y[np.array([0, 2]), 1:] = v[:, None] * y[1, 1:]
    y[..., 0] -= y[:, 2]
    return np.sum(y ** 2)


def lists_of_traced(x):
    rows = []
    rows.append(x[0] * 2.0)
    rows.extend(x[1:])
    rows += [np.sin(x[0])]
    return np.sum(np.stack(rows) ** 2)


def sort_and_fill_methods(x):
    y = x * 1.0
    y.sort()
    z = np.empty(3)
    z.fill(2.0)
    z[1] = y[0]
    return np.sum(y * np.arange(1.0, 5.0)) + np.sum(z * x[:3])


def nested_item(x):
    y = x.copy()
    y[1][2] = y[0][0] * 3.0
    return np.sum(y * y)


# -- refused: these would change the caller's array ---------------------------------------

def writes_argument_item(x):
    x[0] = 1.0
    return np.sum(x)


def writes_argument_view(x):
    v = x[:2]
    v -= 1.0
    return np.sum(x)


def sorts_argument(x):
    x.sort()
    return np.sum(x)
