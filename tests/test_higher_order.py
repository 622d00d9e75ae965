"""Gradients of gradients: the plain form of a generated module uses only primitives with rules,
so it can be compiled again (DESIGN.md keeps this door open). Hessian-vector products are
checked against finite differences of the first gradient."""
import importlib
import sys

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import numerical_grad

from .programs import models


@pytest.fixture
def first_order(tmp_path, monkeypatch):
    """Compile f's plain gradient into tmp_path and import it as a user would."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def compile_first(f, *args, name):
        ys.simplegrad(f, *args, buffers=False, out_dir=tmp_path, module_name=name)
        return getattr(importlib.import_module(name), f"{f.__name__}_grad")
    yield compile_first
    for name in [n for n in sys.modules if n.startswith("first_")]:
        del sys.modules[name]


def test_hessian_vector_product_of_a_tanh_layer(first_order):
    r = np.random.default_rng(0)
    W, x, V = r.standard_normal((3, 4)), r.standard_normal(4), r.standard_normal((3, 4))
    grad = first_order(models.tanh_layer, W, x, name="first_tanh")

    def directional(W, x):
        _, dW, _ = grad(W, x)
        return np.sum(dW * V)

    _, hW, hx = ys.simplegrad(directional, W, x, buffers=False)(W, x)
    np.testing.assert_allclose(hW, numerical_grad(directional, [W, x], 0), atol=1e-6)
    np.testing.assert_allclose(hx, numerical_grad(directional, [W, x], 1), atol=1e-6)


def test_second_order_through_a_scatter_with_repeated_indices(first_order):
    r = np.random.default_rng(1)
    W, V, idx = r.standard_normal((3, 4)), r.standard_normal((3, 4)), np.array([0, 2, 0])
    grad = first_order(models.gather_rows, W, idx, name="first_gather")
    assert "xp.add.at(" in ys.source(grad)            # the scatter that must compile again

    def directional(W):
        return np.sum(grad(W, idx)[1] * V)

    _, hW = ys.simplegrad(directional, W, buffers=False)(W)
    np.testing.assert_allclose(hW, numerical_grad(directional, [W], 0), atol=1e-6)


# -- from the public API: buffered gradients, hvp, hessian (higher.py) ----------------------

def test_gradient_of_a_function_calling_a_buffered_gradient():
    """The issue's example: a default (buffered) df once failed with "assigning 'arrays' would
    change _local in place"; the frontend now inlines its plain form."""
    x, v = np.linspace(-1, 1, 5), np.cos(np.arange(5.0))
    df = ys.simplegrad(models.tanh_layer, np.eye(5), x)
    assert "_work_arrays" in ys.source(df)

    def directional(x):
        return np.dot(df(np.eye(5), x)[2], v)
    _, hx = ys.simplegrad(directional, x)(x)
    np.testing.assert_allclose(hx, numerical_grad(directional, [x], 0), atol=1e-6)
    assert "_local" not in ys.source(ys.simplegrad(directional, x, buffers=False))


def test_a_gradient_through_ys_grad_function_of_a_cached_variant():
    x = np.linspace(-1, 1, 4)
    _, g = ys.grad(models.tanh_layer, np.eye(4), x)

    def through(W):
        return np.sum(g.function(W, x)[1] ** 2)
    W = np.eye(4) * 0.5
    _, dW = ys.simplegrad(through, W)(W)
    np.testing.assert_allclose(dW, numerical_grad(through, [W], 0), atol=1e-6)


def tanh_sum(x):
    return np.sum(np.tanh(x))


def test_third_and_fourth_derivatives_of_tanh():
    x = np.linspace(-2, 2, 7)
    t = np.tanh(x)
    d1 = ys.elementwise_grad(tanh_sum)
    d2 = ys.elementwise_grad(d1)
    d3 = ys.elementwise_grad(d2)
    d4 = ys.elementwise_grad(d3)
    np.testing.assert_allclose(d1(x), 1 - t ** 2, atol=1e-12)
    np.testing.assert_allclose(d2(x), -2 * t * (1 - t ** 2), atol=1e-12)
    np.testing.assert_allclose(d3(x), -2 + 8 * t ** 2 - 6 * t ** 4, atol=1e-12)
    np.testing.assert_allclose(d4(x), (16 * t - 24 * t ** 3) * (1 - t ** 2), atol=1e-12)
    # the same through simplegrad of functions that call buffered generated gradients
    g1 = ys.simplegrad(tanh_sum, x)
    g2 = ys.simplegrad(lambda x: np.sum(g1(x)[1]), x)
    g3 = ys.simplegrad(lambda x: np.sum(g2(x)[1]), x)
    g4 = ys.simplegrad(lambda x: np.sum(g3(x)[1]), x)
    np.testing.assert_allclose(g4(x)[1], (16 * t - 24 * t ** 3) * (1 - t ** 2), atol=1e-12)


def differences_of_gradients(f, args, argnum, v, eps=1e-5):
    """H v by central differences of the first gradient along v."""
    df = ys.simplegrad(f, *args, buffers=False)
    plus, minus = list(args), list(args)
    plus[argnum], minus[argnum] = args[argnum] + eps * v, args[argnum] - eps * v
    return (df(*plus)[1 + argnum] - df(*minus)[1 + argnum]) / (2 * eps)


def _logreg(r):
    return r.standard_normal(5), 0.1, r.standard_normal((20, 5)), (r.random(20) > 0.5) * 1.0


def _mlp(r):
    return (r.standard_normal((6, 5)) * 0.5, r.standard_normal(5), r.standard_normal((5, 3)) * 0.5,
            r.standard_normal(3), r.standard_normal((4, 6)), np.eye(3)[[0, 2, 1, 2]])


def _rnn(r):
    return (r.standard_normal((3, 4)) * 0.5, r.standard_normal((4, 4)) * 0.5, r.standard_normal(4),
            r.standard_normal((5, 2, 3)), r.standard_normal((2, 4)))


@pytest.mark.parametrize("f,make,argnums", [
    (models.logistic_regression, _logreg, (0,)),
    (models.mlp, _mlp, (0, 1, 2, 3)),
    (models.rnn, _rnn, (0, 1, 2)),
], ids=["logreg", "mlp", "rnn"])
@pytest.mark.parametrize("buffers", [True, False])
def test_hvp_matches_differences_of_gradients(f, make, argnums, buffers):
    r = np.random.default_rng(3)
    args = make(r)
    for argnum in argnums:
        hf = ys.hvp(f, *args, argnum=argnum, buffers=buffers)
        assert hf.strategy == "rev-rev" and "def " in ys.source(hf)
        v = r.standard_normal(np.shape(args[argnum]))
        hv = hf(*args, v)
        assert np.shape(hv) == np.shape(args[argnum])
        np.testing.assert_allclose(hv, differences_of_gradients(f, args, argnum, v),
                                   rtol=1e-5, atol=1e-6, err_msg=f"argument {argnum}")
        np.testing.assert_allclose(hf(*args, v), hv, rtol=1e-12, atol=1e-14)   # work arrays reused


def test_hessian_is_dense_symmetric_and_agrees_with_hvp():
    r = np.random.default_rng(4)
    args = _logreg(r)
    H = ys.hessian(models.logistic_regression, *args)
    assert H.shape == (5, 5)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    v = r.standard_normal(5)
    np.testing.assert_allclose(H @ v, differences_of_gradients(models.logistic_regression, args, 0, v),
                               rtol=1e-5, atol=1e-6)
    W = r.standard_normal((2, 3))
    H2 = ys.hessian(models.tanh_layer, W, r.standard_normal(3))
    assert H2.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H2, np.transpose(H2, (2, 3, 0, 1)), atol=1e-12)


def test_hvp_and_hessian_refuse_what_they_cannot_do():
    x = np.ones(3)
    with pytest.raises(ys.YotaError, match="strategy"):
        ys.hvp(tanh_sum, x, strategy="fwd-fwd")
    with pytest.raises(ys.YotaError, match="argument n, which is the int 3; an int has no "):
        ys.hvp(lambda n, x: np.sum(x) * n, 3, x)
    with pytest.raises(ys.YotaError, match="not a real float"):
        ys.hvp(lambda n, x: np.sum(x) * n, 1j, x)
    with pytest.raises(ys.YotaError, match="ys.hvp"):
        ys.hessian(tanh_sum, np.ones(5000))


def test_hvp_of_an_hvp_function_is_a_third_derivative():
    x = np.linspace(-1, 1, 4)
    hf = ys.hvp(tanh_sum, x)
    v = np.ones(4)

    def third(x):
        return np.sum(hf(x, v))
    t = np.tanh(x)
    np.testing.assert_allclose(ys.simplegrad(third, x)(x)[1], -2 + 8 * t ** 2 - 6 * t ** 4,
                               atol=1e-12)


def test_fwd_rev_agrees_with_rev_rev_or_is_refused_with_the_way_out():
    r = np.random.default_rng(5)
    args = _mlp(r)
    v = r.standard_normal(np.shape(args[0]))
    expected = ys.hvp(models.mlp, *args)(*args, v)
    if not hasattr(ys, "jvpfunction"):
        with pytest.raises(ys.YotaError, match="rev-rev"):
            ys.hvp(models.mlp, *args, strategy="fwd-rev")
        return
    hf = ys.hvp(models.mlp, *args, strategy="fwd-rev")
    assert hf.strategy == "fwd-rev" and "def " in ys.source(hf)
    np.testing.assert_allclose(hf(*args, v), expected, rtol=1e-10, atol=1e-12)
    small = _logreg(r)
    np.testing.assert_allclose(ys.hessian(models.logistic_regression, *small, strategy="fwd-rev"),
                               ys.hessian(models.logistic_regression, *small), atol=1e-10)


def test_a_buffered_module_imported_from_its_file_is_refused_with_the_way_out(tmp_path, monkeypatch):
    x = np.linspace(-1, 1, 4)
    ys.simplegrad(tanh_sum, x, out_dir=tmp_path, module_name="imported_buffered")
    monkeypatch.syspath_prepend(str(tmp_path))
    del sys.modules["imported_buffered"]
    grad = importlib.import_module("imported_buffered").tanh_sum_grad   # no plain form known

    def through(x):
        return np.sum(grad(x)[1])
    with pytest.raises(ys.UnsupportedSyntax, match="(?s)buffered gradient module.*buffers=False"):
        ys.simplegrad(through, x)
    del sys.modules["imported_buffered"]


# -- found again, and scipy.optimize's spelling (issue 30) ------------------------------------

def chained(x, a, b):
    """The n-dimensional Rosenbrock function, with its constants as arguments."""
    return np.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)


def rosen_hessian(x, a, b):          # a enters the gradient only
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 2 - 4 * b * (x[i + 1] - 3 * x[i] ** 2)
        H[i + 1, i + 1] += 2 * b
        H[i, i + 1] = H[i + 1, i] = -4 * b * x[i]
    return H


@pytest.fixture
def compiles(monkeypatch):
    """How many gradients are compiled (every hessian, hessp and jacobian compiles some)."""
    import yota_s2s.api as api
    import yota_s2s.products as products
    ys.clear_cache()
    count = [0]
    for module, name in ((api, "compile_grad"), (products, "compile_jvp")):
        real = getattr(module, name)

        def counted(*args, real=real, **kwargs):
            count[0] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    return count


def test_hessian_and_jacobian_compile_once_per_signature(compiles):
    x = np.array([-1.2, 1.0, 0.5])
    np.testing.assert_allclose(ys.hessian(chained, x, 1.0, 100.0), rosen_hessian(x, 1.0, 100.0),
                               rtol=1e-13)
    first = compiles[0]
    assert first == 2                        # the plain gradient, then <grad, v>'s gradient
    y = np.array([0.3, -0.2, 2.0])
    np.testing.assert_allclose(ys.hessian(chained, y, 1.0, 10.0), rosen_hessian(y, 1.0, 10.0),
                               rtol=1e-13)
    assert compiles[0] == first              # found again: a new point, new constants
    ys.hessian(chained, np.ones(4), 1.0, 10.0)
    assert compiles[0] == first + 2          # a new shape compiles
    A = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])
    for mode in ("rev", "fwd"):
        before = compiles[0]
        for point in (x, y):
            np.testing.assert_allclose(ys.jacobian(lambda x, A: np.tanh(A @ x), point, A,
                                                   mode=mode),
                                       (1 - np.tanh(A @ point) ** 2)[:, None] * A, rtol=1e-13)
        assert compiles[0] == before + 1


SCALE = 2.0


def scaled_cube(x):
    return SCALE * np.sum(x ** 3)


def test_a_found_hessian_follows_a_global_rebound(compiles):
    global SCALE
    x = np.array([1.0, 2.0])
    try:
        np.testing.assert_allclose(ys.hessian(scaled_cube, x), np.diag(12 * x), rtol=1e-14)
        SCALE = 3.0                          # the compiled code read SCALE: compiled again
        np.testing.assert_allclose(ys.hessian(scaled_cube, x), np.diag(18 * x), rtol=1e-14)
        assert compiles[0] == 4
    finally:
        SCALE = 2.0


def test_scipy_minimize_takes_gradient_hessp_and_value_and_grad():
    from scipy.optimize import minimize
    x0, args = np.array([-1.2, 1.0, 0.5, 0.3]), (1.0, 100.0)
    hp = ys.hessp(chained)
    p = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(hp(x0, p, *args), rosen_hessian(x0, *args) @ p, rtol=1e-13)
    found = []
    for method in ("trust-ncg", "Newton-CG"):
        result = minimize(chained, x0, args=args, jac=ys.gradient(chained), hessp=hp,
                          method=method)
        assert result.success, result.message
        found.append(result.x)
    result = minimize(ys.value_and_grad(chained), x0, args=args, jac=True, method="BFGS")
    assert result.success, result.message
    found.append(result.x)
    result = minimize(chained, x0, args=args, jac=ys.gradient(chained), method="trust-exact",
                      hess=lambda x, *a: ys.hessian(chained, x, *a))
    found.append(result.x)
    for x in found:                          # the same local minimum, a stationary point
        np.testing.assert_allclose(x, found[0], atol=1e-4)
        assert np.max(np.abs(ys.gradient(chained)(x, *args))) < 1e-4
