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


def _flat_object_loss(m):
    return np.sum(ys.flatten(m)[0] ** 2)


def test_flatten_of_an_object_inside_a_differentiated_function_says_what_to_do():
    with pytest.raises(ys.YotaError, match="given an object") as e:
        ys.grad(_flat_object_loss, Plain(np.ones(2), 3))
    assert "ys.flatten([m.W, m.b])" in str(e.value)


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


# ----- odeint --------------------------------------------------------------------------------
TIGHT = {"rtol": 1e-11, "atol": 1e-11}


def _numeric(f, x, eps=1e-6):
    """Central differences of a scalar ``f`` at ``x`` (an array or a float)."""
    if np.ndim(x) == 0:
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    out = np.zeros(np.shape(x))
    for i in np.ndindex(np.shape(x)):
        e = np.zeros(np.shape(x))
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def linear(y, t, A):
    return A @ y


def _linear_loss(y0, A, t, w):
    return np.sum(w * ys.odeint(linear, y0, t, (A,), **TIGHT))


A_DAMPED = np.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0, TIMES = np.array([1.0, 0.5]), np.linspace(0.0, 1.0, 5)
WEIGHTS = np.random.RandomState(4).randn(5, 2)


def test_odeint_is_scipys_odeint():
    from scipy.integrate import odeint
    got = ys.odeint(linear, Y0, TIMES, (A_DAMPED,), **TIGHT)
    assert np.array_equal(got, odeint(linear, Y0, TIMES, args=(A_DAMPED,), **TIGHT))
    value, _ = ys.grad(_linear_loss, Y0, A_DAMPED, TIMES, WEIGHTS)
    assert value == np.sum(WEIGHTS * got)


def func(y, t, A):
    """autograd's test_odeint names its dynamics ``func``, a parameter name of the module's
    argument-check helpers: the name check refused the module (InternalError)."""
    return A @ y


def _func_loss(y0, A, t, w):
    return np.sum(w * ys.odeint(func, y0, t, (A,), **TIGHT))


def test_dynamics_named_like_a_helpers_parameter_compile():
    value, g = ys.grad(_func_loss, Y0, A_DAMPED, TIMES, WEIGHTS, wrt=(0,))
    expected, dy0 = ys.grad(_linear_loss, Y0, A_DAMPED, TIMES, WEIGHTS, wrt=(0,))
    assert value == expected and np.array_equal(g[0], dy0[0])


def test_odeint_gradient_of_a_linear_ode_is_the_closed_form():
    from scipy.linalg import expm
    value, g = ys.grad(_linear_loss, Y0, A_DAMPED, TIMES, WEIGHTS, wrt=(0, 1, 2))
    exact = [expm(A_DAMPED * t) @ Y0 for t in TIMES]                 # y(t) = e^{At} y0
    assert np.isclose(value, np.sum(WEIGHTS * exact), rtol=1e-9)
    dy0 = sum(expm(A_DAMPED * t).T @ w for t, w in zip(TIMES, WEIGHTS))
    assert np.allclose(g[0], dy0, rtol=1e-8, atol=1e-10)
    dt = [w @ (A_DAMPED @ y) for w, y in zip(WEIGHTS, exact)]        # w_i . y'(t_i)
    dt[0] = -sum(dt[1:])      # moving t_0 moves every later state back (autonomous system)
    assert np.allclose(g[2], dt, rtol=1e-8, atol=1e-10)
    dA = _numeric(lambda A: _linear_loss(Y0, A, TIMES, WEIGHTS), A_DAMPED)
    assert np.allclose(g[1], dA, rtol=1e-6, atol=1e-8)


def cubic(y, t, A, c):
    return np.dot(y ** 3, A) + c * np.sin(3.0 * t)


def _cubic_loss(y0, A, c, t):
    y = ys.odeint(cubic, y0, t, (A, c), **TIGHT)
    return np.sum(np.sin(y) * np.arange(1.0, 1.0 + y.size).reshape(y.shape))


def test_odeint_gradient_of_a_nonlinear_time_dependent_ode_matches_finite_differences():
    y0, A, c, t = np.array([0.6, -0.3]), 0.5 * A_DAMPED, np.array([0.2, -0.1]), \
        np.array([0.1, 0.4, 0.5, 0.9])
    _, g = ys.grad(_cubic_loss, y0, A, c, t)
    assert np.allclose(g[0], _numeric(lambda v: _cubic_loss(v, A, c, t), y0), rtol=1e-6)
    assert np.allclose(g[1], _numeric(lambda v: _cubic_loss(y0, v, c, t), A), rtol=1e-6)
    assert np.allclose(g[2], _numeric(lambda v: _cubic_loss(y0, A, v, t), c), rtol=1e-6)
    assert np.allclose(g[3], _numeric(lambda v: _cubic_loss(y0, A, c, v), t), rtol=1e-6)


def mlp_dynamics(y, t, params):
    for W, b in params:
        y = np.tanh(y @ W + b)
    return y


def _mlp_loss(params, y0, t):
    return np.sum(ys.odeint(mlp_dynamics, y0, t, (params,), **TIGHT) ** 2)


def test_odeint_gradient_of_struct_arguments_and_the_generated_module():
    r = np.random.RandomState(5)
    params = [(r.randn(2, 4), r.randn(4)), (r.randn(4, 2), r.randn(2))]
    y0, t = np.array([0.3, -0.2]), np.linspace(0.0, 0.8, 4)
    value, g = ys.grad(_mlp_loss, params, y0, t, wrt=0)
    for path in [(0, 0), (1, 1)]:
        leaf = params[path[0]][path[1]]

        def at(v, path=path):
            changed = [list(layer) for layer in params]
            changed[path[0]][path[1]] = v
            return _mlp_loss([tuple(layer) for layer in changed], y0, t)
        assert np.allclose(g[0][path], _numeric(at, leaf), rtol=1e-6, atol=1e-9)
    text = ys.source(ys.simplegrad(_mlp_loss, params, y0, t, buffers=False))
    assert "= odeint(mlp_dynamics, y0, t, args=((" in text
    assert "= odeint_adjoint(mlp_dynamics, " in text
    assert "from tests.test_implicit import mlp_dynamics" in text


# ----- fixed_point ---------------------------------------------------------------------------
def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)


def largest(x, y):
    return np.max(np.abs(x - y))


def _newton_sqrt(a):
    return np.sum(ys.fixed_point(newton_sqrt_iter, a, np.ones_like(a), largest, 1e-13))


def _newton_sqrt_scalar(a):
    return ys.fixed_point(newton_sqrt_iter, a, 10.0, largest, 1e-13)


def test_fixed_point_gradient_of_newtons_sqrt_is_the_closed_form():
    value, g = ys.grad(_newton_sqrt_scalar, 2.0)
    assert np.isclose(value, np.sqrt(2.0), rtol=1e-15) and np.isclose(g[0], 0.5 / np.sqrt(2.0))
    a = np.array([0.5, 2.0, 9.0])
    value, g = ys.grad(_newton_sqrt, a)
    assert np.isclose(value, np.sum(np.sqrt(a)), rtol=1e-14)
    assert np.allclose(g[0], 0.5 / np.sqrt(a), rtol=1e-12)


def _started_at_a(a):
    return np.sum(ys.fixed_point(newton_sqrt_iter, a, a, largest, 1e-13))


def test_fixed_point_gradient_does_not_flow_through_the_start():
    a = np.array([2.0, 5.0])
    value, g = ys.grad(_started_at_a, a)
    assert np.isclose(value, np.sum(np.sqrt(a))) and np.allclose(g[0], 0.5 / np.sqrt(a))


def scaled_sqrt_iter(params):
    a, scale = params
    return lambda x: 0.5 * (x + scale * a / x)


def _scaled_sqrt(a, scale):
    return np.sum(ys.fixed_point(scaled_sqrt_iter, (a, scale), np.ones_like(a), largest, 1e-13))


def test_fixed_point_of_a_tuple_parameter_gives_one_gradient_per_item():
    a, scale = np.array([2.0, 5.0]), 3.0        # x = sqrt(scale * a)
    value, g = ys.grad(_scaled_sqrt, a, scale)
    assert np.isclose(value, np.sum(np.sqrt(scale * a)))
    assert np.allclose(g[0], 0.5 * np.sqrt(scale / a))
    assert np.isclose(g[1], np.sum(0.5 * np.sqrt(a / scale)))


def contraction(a):
    return lambda x: np.cos(a * x) / 2 + a[::-1] * x / 4


def _contraction_loss(a):
    x = ys.fixed_point(contraction, a, np.zeros_like(a), largest, 1e-14)
    return np.sum(x * np.arange(1.0, 1.0 + x.size))


def test_fixed_point_gradient_matches_finite_differences_and_never_differentiates_the_steps():
    a = np.array([0.3, 1.1, -0.7])
    _, g = ys.grad(_contraction_loss, a)
    assert np.allclose(g[0], _numeric(_contraction_loss, a), rtol=1e-7, atol=1e-10)
    text = ys.source(ys.simplegrad(_contraction_loss, a, buffers=False))
    assert "= fixed_point(contraction, a, " in text and "fixed_point_adjoint(contraction, a, " in text
    assert "cos" not in text            # the iteration is called, never traced


def _newton_cubes(a):
    return np.sum(ys.fixed_point(newton_sqrt_iter, a, np.ones_like(a), largest, 1e-13) ** 3)


def test_fixed_point_second_derivatives_are_the_closed_form():
    """The adjoint is written with fixed_point and generated gradients (solve_adjoint), so a
    gradient through it is differentiated again: grad of grad, hvp and hessian. It was refused:
    'ys.fixed_point_adjoint has no derivative rule for its operand a'."""
    second = ys.gradient(ys.gradient(_newton_sqrt_scalar))
    assert np.isclose(second(2.0), -2.0 ** -1.5 / 4, rtol=1e-12)     # d2/da2 sqrt(a)
    first = ys.gradient(_newton_sqrt_scalar)
    assert np.isclose(second(2.0), _numeric(first, 2.0), rtol=1e-7)
    a, v = np.array([0.5, 2.0, 9.0]), np.array([1.0, -2.0, 0.5])
    curvature = 0.75 / np.sqrt(a)                                     # d2/da2 a^(3/2)
    np.testing.assert_allclose(ys.hessian(_newton_cubes, a), np.diag(curvature), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(ys.hvp(_newton_cubes, a)(a, v), curvature * v, rtol=1e-12)


def _scaled_sqrt_gradients(a, scale):
    da, dscale = ys.gradient(_scaled_sqrt, (0, 1))(a, scale)
    return np.sum(da * np.array([1.0, 2.0])) + 3.0 * dscale


def _scaled_sqrt_gradients_closed(a, scale):
    return np.sum(0.5 * np.sqrt(scale / a) * np.array([1.0, 2.0])) + \
        3.0 * np.sum(0.5 * np.sqrt(a / scale))


def test_fixed_point_second_derivative_of_a_tuple_parameter_matches_finite_differences():
    a, scale = np.array([2.0, 5.0]), 3.0
    assert np.isclose(_scaled_sqrt_gradients(a, scale), _scaled_sqrt_gradients_closed(a, scale))
    ga, gscale = ys.gradient(_scaled_sqrt_gradients, (0, 1))(a, scale)
    np.testing.assert_allclose(ga, _numeric(lambda a: _scaled_sqrt_gradients_closed(a, scale), a),
                               rtol=1e-7)
    assert np.isclose(gscale, _numeric(lambda s: _scaled_sqrt_gradients_closed(a, s), scale),
                      rtol=1e-7)


def test_fixed_point_hessian_of_a_step_that_slices_matches_finite_differences():
    """The adjoint's gradient, inlined by its rule, is a plain generated module that writes in
    place (``da[...] += ...``: the gradient of ``a[::-1]``); the frontend takes those writes as
    pure updates. It was refused: '`da[...] = ...` in a derivative rule: rules are pure'."""
    a = np.array([0.3, 1.1, -0.7])
    first = ys.gradient(_contraction_loss)
    numeric = np.array([_numeric(lambda s: first(a + s * e)[i], 0.0) for i, e in
                        enumerate(np.eye(3))])
    np.testing.assert_allclose(np.diag(ys.hessian(_contraction_loss, a)), numeric, rtol=1e-6,
                               atol=1e-9)


# ----- autograd's examples, ported -----------------------------------------------------------
def test_fixed_points_example_matches_autograd(capsys):
    from .test_examples import load
    value, gradient, second = load("fixed_points").main()
    # autograd 1.9.1 running its own examples/fixed_points.py prints these
    assert value == 1.4147939385813015
    assert np.isclose(gradient, 0.35338076161609844, rtol=1e-14)
    assert np.isclose(second, -0.08809989985285249, rtol=1e-12)     # grad(grad(sqrt))(2.)
    out = capsys.readouterr().out
    assert "0.3533807616160" in out and "-0.088099899852" in out


def test_ode_net_example_matches_autograd():
    from .test_examples import load
    losses, params = load("ode_net").main(num_iters=3, hidden=8, every=1000)
    # autograd 1.9.1, its examples/ode_net.py with layer_sizes=[2, 8, 2] and 3 steps of its adam
    assert np.allclose(losses, [1.4438630374069583, 1.4419806676751599, 1.4401115923716035],
                       rtol=1e-12)
    assert [np.shape(p) for layer in params for p in layer] == [(2, 8), (8,), (8, 2), (2,)]


# ----- functions the generated code cannot name ----------------------------------------------
def _local_rhs_loss(y0, A):
    def rhs(y, t, A):
        return A @ y
    return np.sum(ys.odeint(rhs, y0, np.linspace(0.0, 1.0, 3), (A,)))


lambda_rhs = lambda y, t, A: A @ y      # noqa: E731


def _lambda_rhs_loss(y0, A):
    return np.sum(ys.odeint(lambda_rhs, y0, np.linspace(0.0, 1.0, 3), (A,)))


def test_a_function_the_generated_code_cannot_name_is_refused_saying_where_and_what_to_do():
    with pytest.raises(ys.UnsupportedSyntax, match="given the function rhs, defined inside") as e:
        ys.grad(_local_rhs_loss, np.ones(2), np.eye(2))
    assert "test_implicit.py" in str(e.value) and "top level of a module" in str(e.value)
    with pytest.raises(ys.RuleError, match="is a lambda") as e:
        ys.grad(_lambda_rhs_loss, np.ones(2), np.eye(2))
    assert "def at the top level" in str(e.value)
