"""ys.flatten (structs as one vector and back), ys.odeint (the adjoint method) and
ys.fixed_point (implicit differentiation): values against numpy and scipy, gradients against
finite differences in float64."""
import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import yota_s2s as ys

Pair = namedtuple("Pair", "W b")


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray
    act: str = "tanh"


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float
    w: np.ndarray


class Plain:
    def __init__(self, W, steps):
        self.W, self.steps = W, steps


class Slotted:
    __slots__ = ("w", "k")

    def __init__(self, w, k):
        self.w, self.k = w, k


def _same(a, b):
    """``a`` and ``b`` the same struct, leaf for leaf (type, shape, dtype and value)."""
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif hasattr(a, "__dict__") or hasattr(type(a), "__slots__"):
        names = vars(a) if hasattr(a, "__dict__") else type(a).__slots__
        for k in names:
            _same(getattr(a, k), getattr(b, k))
    else:
        assert a == b


rs = np.random.RandomState(0)
STRUCTS = {
    "array": rs.randn(3, 2),
    "float": 2.5,
    "dict": {"b": rs.randn(2), "a": {"x": 1.5, "n": 3, "s": "relu"}},
    "list_of_tuples": [(rs.randn(2, 3), rs.randn(3)), (rs.randn(3, 1), rs.randn(1))],
    "namedtuple": Pair(rs.randn(2, 2), np.float64(0.5)),
    "dataclass": Layer(rs.randn(2, 2).astype(np.float32), rs.randn(2)),
    "frozen_dataclass": Frozen(0.5, rs.randn(3)),
    "object": Plain(rs.randn(4), 7),
    "slots": Slotted(rs.randn(2) + 1j * rs.randn(2), np.arange(3)),
    "nested": {"layers": [Layer(rs.randn(1, 2), rs.randn(2))], "t": (3, None)},
}
SIZES = {"array": 6, "float": 1, "dict": 3, "list_of_tuples": 13, "namedtuple": 5,
         "dataclass": 6, "frozen_dataclass": 4, "object": 4, "slots": 2, "nested": 4}


@pytest.mark.parametrize("kind", sorted(STRUCTS))
def test_flatten_round_trips_every_struct_kind(kind):
    params = STRUCTS[kind]
    x, unflatten = ys.flatten(params)
    assert x.ndim == 1 and x.size == SIZES[kind]
    assert x.dtype == (np.complex128 if kind == "slots" else np.float64)
    _same(unflatten(x), params)
    moved = unflatten(x + 1)            # a new struct with new values; params unchanged
    again, _ = ys.flatten(moved)
    assert np.allclose(again, x + 1)
    assert np.array_equal(ys.flatten(params)[0], x)


def test_flatten_order_shapes_dtypes_and_kept_leaves():
    params = {"w": np.arange(4.0, dtype=np.float32).reshape(2, 2), "b": 1.0,
              "n": np.arange(3), "scale": np.float64(2.0), "name": "net"}
    x, unflatten = ys.flatten(params)
    assert x.tolist() == [1.0, 2.0, 0.0, 1.0, 2.0, 3.0]      # b, scale, w: keys sorted
    new = unflatten(np.array([5.0, 6.0, 7.0, 8.0, 9.0, 10.0]))
    assert type(new["b"]) is float and new["b"] == 5.0
    assert type(new["scale"]) is np.float64 and new["scale"] == 6.0
    assert new["w"].dtype == np.float32 and new["w"].tolist() == [[7.0, 8.0], [9.0, 10.0]]
    assert new["n"] is params["n"] and new["name"] == "net"     # ints and others kept
    assert params["b"] == 1.0 and params["w"][0, 0] == 0.0       # nothing changed in place


def test_flatten_keeps_tied_arrays_tied():
    W = np.ones((2, 2))
    params = {"enc": W, "dec": W, "b": np.zeros(2)}
    x, unflatten = ys.flatten(params)
    assert x.size == 6
    new = unflatten(np.arange(6.0))
    assert new["enc"] is new["dec"] and new["enc"] is not W


def test_unflatten_flat_puts_a_gradient_by_path_in_the_vector_layout():
    W = np.ones((2, 2))
    params = {"a": 1.0, "enc": W, "dec": W, "n": 2, "z": np.zeros(3)}
    x, unflatten = ys.flatten(params)
    assert x.size == 8                  # a, dec (= enc, tied), z
    g = {("a",): 2.0, ("enc",): np.full((2, 2), 3.0)}        # z not read: no entry
    assert unflatten.flat(g).tolist() == [2.0, 3.0, 3.0, 3.0, 3.0, 0.0, 0.0, 0.0]
    struct = {"a": 1.0, "dec": np.ones((2, 2)), "z": np.arange(3.0)}
    assert unflatten.flat(struct).tolist() == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0]


def test_unflatten_refuses_a_vector_of_another_size():
    _, unflatten = ys.flatten([np.ones(3)])
    with pytest.raises(ys.UsageError, match="1-D vector of 3 elements"):
        unflatten(np.ones(4))


def _prior(params, s):
    flat, _ = ys.flatten(params)
    return np.sum(-0.5 * (flat / s) ** 2)


def test_flatten_inside_a_differentiated_function_is_the_concatenation():
    params = {"layers": [(rs.randn(2, 3), rs.randn(3))], "scale": 0.5, "n": 4}
    value, g = ys.grad(_prior, params, 3.0)
    flat = np.concatenate([params["layers"][0][0].ravel(), params["layers"][0][1], [0.5]])
    assert np.isclose(value, np.sum(-0.5 * (flat / 3.0) ** 2))
    assert np.allclose(g[0][("layers", 0, 0)], -params["layers"][0][0] / 9.0)
    assert np.isclose(g[0][("scale",)], -0.5 / 9.0)
    assert np.isclose(g[1], np.sum(flat ** 2) / 27.0)


def _regression_loss(params, X, y):
    h = np.tanh(X @ params["hidden"].W + params["hidden"].b)
    return np.mean((h @ params["out"][0] + params["out"][1] - y) ** 2)


def test_flatten_trains_structured_params_with_scipy_minimize():
    from scipy.optimize import minimize
    r = np.random.RandomState(3)
    X = r.randn(40, 2)
    y = np.sin(X[:, :1]) + 0.5 * X[:, 1:]
    params = {"hidden": Pair(0.5 * r.randn(2, 8), np.zeros(8)),
              "out": [0.5 * r.randn(8, 1), np.zeros(1)]}
    x0, unflatten = ys.flatten(params)

    def fun(x):
        value, g = ys.grad(_regression_loss, unflatten(x), X, y, wrt=0)
        return value, unflatten.flat(g[0])

    start = _regression_loss(params, X, y)
    result = minimize(fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": 60})
    trained = unflatten(result.x)
    assert _regression_loss(trained, X, y) < 0.2 * start
    assert isinstance(trained["hidden"], Pair) and trained["out"][0].shape == (8, 1)
    value, g = fun(x0)
    e = np.zeros_like(x0)
    e[3] = 1e-6
    numeric = (fun(x0 + e)[0] - fun(x0 - e)[0]) / 2e-6
    assert np.isclose(g[3], numeric, rtol=1e-6, atol=1e-9)
