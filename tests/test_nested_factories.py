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
