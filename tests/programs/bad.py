"""Functions that cannot compile, one per error the user can meet."""
import numpy as np

COUNTER = 0
TABLE = np.arange(100.0)


def no_rule(x):
    h = np.fft.hfft(x).real
    return np.sum(h)


def uses_try(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return np.sum(y)


def generator(x):
    yield np.sum(x)


def writes_global(x):
    global COUNTER
    COUNTER = 1
    return np.sum(x)


def uses_with(x):
    with open("f") as f:
        f.read()
    return np.sum(x)


def vector_result(x):
    return x * 2


def traced_loop_bound(x):
    total = 0.0
    for i in range(x[0]):
        total = total + i
    return total


def traced_axis(x):
    return np.sum(np.sum(x, axis=x.shape[0] - np.sum(x)))


def undefined_name(x):
    return np.sum(x * undefined_thing)  # noqa: F821


def random_inside(x):
    return np.sum(x * np.random.rand(3))


def big_constant(x):
    return np.sum(x * TABLE)


def writes_argument(x):
    x += 1.0
    return np.sum(x)


def traced_slice(x):
    n = np.sum(x)
    return np.sum(x[:n])


def ambiguous_truth(x):
    if x > 0:
        return np.sum(x)
    return 0.0


def shape_mismatch(x, y):
    return np.sum(x @ y)


def complex_result(x):
    return np.sum(x * (1 + 2j))


def traced_arange_start(x, a):
    return np.sum(np.arange(a, 5.0) * x)


def float_of_a_vector(x):
    return float(x) * 2.0
