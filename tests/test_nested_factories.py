"""Differentiating a function that ys.gradient / ys.elementwise_grad / ys.vjp made gives the
higher derivative. They once carried functools.wraps's __wrapped__, so the frontend traced the
wrapped function in their place: ys.gradient(ys.gradient(f)) silently returned the first
derivative; then it was refused; now the frontend inlines the plain generated gradient
(nested.py ``gradient_inline``)."""
import numpy as np
import pytest

import yota_s2s as ys


def cube(r):
    return r ** 3


def test_gradient_of_a_gradient_is_the_second_derivative_not_the_first():
    first = ys.gradient(cube)
    assert first(3.0) == pytest.approx(27.0)
    second = ys.gradient(first)
    assert second(3.0) == pytest.approx(18.0)            # 6 r, not 3 r ** 2
    assert ys.gradient(second)(3.0) == pytest.approx(6.0)
    assert ys.value_and_grad(first)(2.0) == pytest.approx((12.0, 12.0))


def test_elementwise_grad_of_an_elementwise_grad():
    x = np.linspace(-2, 2, 5)
    d1 = ys.elementwise_grad(np.tanh)
    np.testing.assert_allclose(d1(x), 1 - np.tanh(x) ** 2)
    t = np.tanh(x)
    np.testing.assert_allclose(ys.elementwise_grad(d1)(x), -2 * t * (1 - t * t), atol=1e-12)


def test_a_vjp_function_differentiates_and_still_shows_its_source():
    x = np.array([1.0, 2.0])
    vf = ys.vjp(np.sin, x)
    assert "def " in ys.source(vf)

    def through(x):
        return np.sum(vf(x, np.ones(2))[1])
    value, g = ys.grad(through, x)
    assert value == pytest.approx(np.sum(np.cos(x)))
    np.testing.assert_allclose(g[0], -np.sin(x))


def test_a_bound_method_gradient_is_still_refused_with_the_way_out():
    class Model:
        def __init__(self):
            self.w = np.ones(2)

        def loss(self, x):
            return np.sum(self.w * x ** 2)
    first = ys.gradient(Model().loss)

    def through(x):
        return np.sum(first(x))
    with pytest.raises(ys.UnsupportedSyntax, match="(?s)made by yota_s2s.*ys.hvp"):
        ys.grad(through, np.ones(2))


def test_a_gradient_function_made_inside_the_function_differentiated():
    """autograd's ``grad(lambda x: grad(f)(x) ...)``: ``ys.gradient(f)`` (and
    ``value_and_grad``, ``elementwise_grad``) called in the traced code on a function known
    when compiling is made then, and its call inlined; it was refused as 'a gradient function
    made by yota_s2s'."""
    def f(x):
        return np.sum(np.sin(x))

    def loss(x):
        return np.sum(ys.gradient(f)(x) ** 2)

    def loss2(x):
        value, _ = ys.value_and_grad(f)(x)
        return value * np.sum(ys.elementwise_grad(np.sin)(x))
    x = np.array([0.3, -0.7, 1.1])
    _, g = ys.grad(loss, x)
    np.testing.assert_allclose(g[0], -2 * np.cos(x) * np.sin(x), rtol=1e-12)
    _, g = ys.grad(loss2, x)
    np.testing.assert_allclose(g[0], np.cos(x) * np.sum(np.cos(x)) - np.sum(np.sin(x)) * np.sin(x),
                               rtol=1e-12)


def step_of(a):
    return lambda x: x - 0.05 * (x ** 2 - a)


def step_dot(f, a, x, w):
    return np.sum(f(a)(x) * w)


def test_a_gradient_function_given_a_module_level_function_as_an_argument_is_inlined():
    """A gradient of a function that takes another function (ys.fixed_point's adjoint step,
    ``f(a)(x)``): the function is static, named in the generated code, and the call is
    inlined and differentiated again; it was refused as 'a gradient function made by
    yota_s2s ... not here'."""
    def loss(a, x, w):
        da, dx = ys.gradient(step_dot, (1, 2))(step_of, a, x, w)    # 0.05 w, (1 - 0.1 x) w
        return da + 3.0 * dx
    g = ys.gradient(loss, (0, 1, 2))(2.0, 1.4, 0.7)
    np.testing.assert_allclose(g, (0.0, -0.3 * 0.7, 0.05 + 3.0 * (1 - 0.14)), rtol=1e-14)


def sublist_product(a, sa, b, sb, out):
    return np.sum(np.einsum(a, sa, b, sb, out) ** 2)


def test_a_gradient_function_given_einsum_sublists_with_ellipsis_is_inlined():
    """autograd's test_einsum2_matmult_broadcast: the sublists ``(Ellipsis, 0, 1)`` are static
    arguments of the inlined gradient; it was refused as 'a gradient function made by yota_s2s
    ... not here' (Ellipsis was not taken for a plain value)."""
    sa, sb, out = (Ellipsis, 0, 1), (Ellipsis, 1, 2), (Ellipsis, 0, 2)
    a, b = np.random.default_rng(3).standard_normal((2, 2, 3)), np.ones((3, 4))

    def loss(a):
        return np.sum(ys.gradient(sublist_product)(a, sa, b, sb, out) * a)   # 2 <a b b^T, a>
    g = ys.gradient(loss)(a)
    np.testing.assert_allclose(g, 4 * a @ b @ b.T, rtol=1e-12)


def test_a_gradient_of_a_function_defined_inside_the_function_differentiated():
    """autograd's grad(lambda y: x * y)(2.0) and grad(inner)(y) with inner a def reading the
    traced ``x`` (test_enclosing_scope_ref, test_jacobian_against_stacked_grads,
    test_nested_higher_order): the local function is lifted with what it reads as parameters
    (frontend/local_gradients.py), read when the gradient is called, as a closure is; it was
    refused ('a gradient of a function made there is not compiled')."""
    def scoped(x):
        inner_fun = lambda y: y * x    # noqa: E731
        return x * ys.gradient(inner_fun)(2.0)              # x^2
    assert ys.gradient(scoped)(1.5) == pytest.approx(3.0)
    assert ys.gradient(ys.gradient(scoped))(1.5) == pytest.approx(2.0)

    def stacked(x):
        def inner(y):
            return np.exp(y) * np.tanh(x[0])
        return ys.gradient(inner)(x[1])
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(ys.gradient(stacked)(x), [np.exp(0.7) / np.cosh(0.3) ** 2,
                                                          np.exp(0.7) * np.tanh(0.3)], rtol=1e-14)

    def late(x):
        k = 2.0
        g = ys.gradient(lambda y: k * y ** 2 * x)
        k = 3.0
        return g(x)                                      # 2 k x^2, k read at the call: 3
    assert ys.gradient(late)(1.5) == pytest.approx(12 * 1.5)


def outer_sines(x, y):
    return np.sin(np.outer(x, y)) + np.cos(np.dot(x, x))


def test_a_jacobian_inside_the_function_differentiated():
    """autograd's check_grads(lambda x: np.sum(np.sin(jacobian(fun)(x)))): ys.jacobian called
    in traced code is inlined as the rows of f's VJP function (nested.py jacobian_rows), with
    its argnum= keyword; it was refused as 'a gradient function made by yota_s2s'."""
    x, y = np.array([0.3, -0.5]), np.array([0.2, 0.9, -0.4])

    def loss(x, y):
        return np.sum(np.sin(ys.jacobian(outer_sines, x, y, argnum=1)) * np.arange(6.0).reshape(2, 3, 1))
    gx, gy = ys.gradient(loss, (0, 1))(x, y)
    eps = 1e-6
    for g, k, v in ((gx, 0, x), (gy, 1, y)):
        numeric = [(loss(*[v + eps * u if j == k else a for j, a in enumerate((x, y))])
                    - loss(*[v - eps * u if j == k else a for j, a in enumerate((x, y))]))
                   / (2 * eps) for u in np.eye(v.size)]
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-9)


def test_a_gradient_of_a_gradient_at_a_python_complex_scalar():
    """A call of a gradient function at a Python complex was refused as 'a gradient function
    made by yota_s2s' (only arrays, floats and ints were inlined). L = |3 z^2|^2 = 9 |z|^4:
    its gradient in JAX's (and autograd's) convention is 36 |z|^2 conj(z)."""
    def f(z):
        return np.real(z * z * z)
    gf = ys.gradient(f)

    def loss(z):
        return np.real(gf(z) * np.conj(gf(z)))
    z = 0.6 + 0.3j
    assert np.isclose(gf(z), 3 * z ** 2)
    _, g = ys.grad(loss, z)
    assert np.isclose(g[0], 36 * abs(z) ** 2 * np.conj(z), rtol=1e-12)
