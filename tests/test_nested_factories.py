"""Differentiating a function that ys.gradient / ys.elementwise_grad / ys.vjp made is refused.
They once carried functools.wraps's __wrapped__, so the frontend traced the wrapped function in
their place: ys.gradient(ys.gradient(f)) silently returned the first derivative."""
import numpy as np
import pytest

import yota_s2s as ys


def cube(r):
    return r ** 3


def test_gradient_of_a_gradient_is_refused_not_the_first_derivative():
    first = ys.gradient(cube)
    assert first(3.0) == pytest.approx(27.0)
    with pytest.raises(ys.UnsupportedSyntax, match="made by yota_s2s.*not supported"):
        ys.gradient(first)(3.0)


def test_elementwise_grad_of_an_elementwise_grad_is_refused():
    x = np.linspace(-2, 2, 5)
    d1 = ys.elementwise_grad(np.tanh)
    np.testing.assert_allclose(d1(x), 1 - np.tanh(x) ** 2)
    with pytest.raises(ys.UnsupportedSyntax, match="ys.simplegrad"):
        ys.elementwise_grad(d1)(x)


def test_a_vjp_function_is_refused_and_still_shows_its_source():
    x = np.array([1.0, 2.0])
    vf = ys.vjp(np.sin, x)
    assert "def " in ys.source(vf)

    def through(x):
        return np.sum(vf(x, np.ones(2))[1])
    with pytest.raises(ys.UnsupportedSyntax, match="made by yota_s2s"):
        ys.grad(through, x)
