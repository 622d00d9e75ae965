"""Functions that read data from outside: module globals, closures, objects, generators."""
import numpy as np

X = np.random.RandomState(1).randn(50, 3)      # more than 64 elements: once refused
Y = np.random.RandomState(2).randn(50)
SMALL = np.array([1.0, 2.0, 3.0])              # small: once written into the code, went stale
rs = np.random.RandomState(0)
rng = np.random.default_rng(0)


class Config:
    def __init__(self):
        self.W = np.eye(3) * 0.5
        self.shift = 0.25
        self.power = 2


cfg = Config()


def least_squares(w):
    r = X @ w - Y
    return np.sum(r ** 2) + np.sum(SMALL * w)


def with_config(w):
    return np.sum(np.tanh(cfg.W @ w + cfg.shift) ** cfg.power)


def make_objective(A, b):
    def objective(w):
        return np.sum((A @ w - b) ** 2)
    return objective


objective = make_objective(np.arange(12.0).reshape(4, 3), np.ones(4))


def through_global_closure(w):
    return objective(w) * 2.0


def sampled(mu, log_sigma):
    eps = rs.randn(4, 3)
    z = mu + np.exp(log_sigma) * eps
    return np.sum(z ** 2) + np.sum(np.random.normal(size=(4, 3)) * z)


def sampled_generator(mu):
    eps = rng.standard_normal((4, 3))
    u = rng.uniform(size=3)
    return np.sum(np.sin(mu + eps) * u)


def make_sampled(seed):
    local = np.random.RandomState(seed)

    def f(mu):
        return np.sum((mu + local.randn(3)) ** 2)
    return f, local


def draws_from_traced(mu):
    return np.sum(rs.normal(mu, 1.0))


def makes_a_generator(mu):
    g = np.random.RandomState(0)
    return np.sum(mu * g.randn(3))


def batch_loss(w, i):
    B = 5
    r = X[i * B:(i + 1) * B] @ w - Y[i * B:(i + 1) * B]
    return np.sum(r ** 2)


num_batches = 10


def batch_indices(it):
    idx = it % num_batches
    return slice(idx * 5, (idx + 1) * 5)


def autograd_objective(w, it):
    """autograd's idiom: the int ``it`` picks the batch."""
    idx = batch_indices(it)
    return np.sum((X[idx] @ w - Y[idx]) ** 2)


def window(w, i):
    return np.sum(np.sin(w[i:i + 2]) ** 2)


def repeated(w, n):
    for _ in range(n):
        w = np.sin(w)
    return np.sum(w)


LAYERS = [np.eye(3), 0.5 * np.ones((3, 3))]
TABLES = {"a": np.ones(3), "b": np.arange(3.0)}


def through_layers(w):
    for W in LAYERS:
        w = np.tanh(W @ w)
    return np.sum(w * TABLES["b"])


LABELS = np.array([0, 2, 2, 0])                 # read when the code runs: may change in place


def labelled(w):
    """``np.unique`` of a global: as many elements as when compiled, or the code says so."""
    return np.sum(w[np.unique(LABELS)] ** 2)
