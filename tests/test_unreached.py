"""Data the generated code cannot read when it runs is guarded by value at every depth (issue 29,
docs/outside.md): an array, list or number inside a container in the closure of a function
passed in as an argument, in that function's defaults, on a class only an argument leads to,
on a library's object, in a dict with keys the code cannot write. Each case changes such data
in place (or rebinds an item) between two calls: ``simplegrad``'s function raises
``GuardError`` naming it, ``ys.grad`` compiles again and returns the new value and gradient.
Before, all of them returned the old value and gradient, silently."""
import numpy as np
import pytest

import yota_s2s as ys

from .programs import unreached as u


def numeric(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


CASES = pytest.mark.parametrize("case", u.CASES, ids=[c.__name__ for c in u.CASES])


@CASES
@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_simplegrad_raises_when_unreached_data_changes(case, buffers):
    f, args, change = case()
    df = ys.simplegrad(f, *args, buffers=buffers)
    value = df(*args)[0]
    assert np.isclose(value, f(*args), rtol=1e-12)
    change()
    with pytest.raises(ys.GuardError, match="has changed in place|is not the object it was"):
        df(*args)


@CASES
def test_grad_compiles_again_when_unreached_data_changes(case):
    f, args, change = case()
    ys.grad(f, *args)
    change()
    value, g = ys.grad(f, *args)
    x, rest = args[0], args[1:]
    assert np.isclose(value, f(*args), rtol=1e-12)
    np.testing.assert_allclose(g[0], numeric(lambda y: f(y, *rest), x), rtol=1e-6, atol=1e-8)


def test_a_large_array_read_from_an_unreached_container_is_refused_with_a_hint():
    big = {"W": np.ones(1000)}

    def fn(x):
        return x * np.sum(big["W"])
    with pytest.raises(ys.StaticValueError, match=r"(?s)big\['W'\] \(a float64\[1000\] array in a "
                                                  r"closure the code cannot reach\).*too large.*"
                                                  r"module global, or pass it in"):
        ys.simplegrad(u.passed, u.X, fn)
