"""Every entry point takes what autograd's and JAX's users pass it: a numpy function or an
operator as the function itself, static values among ``jvp``'s primals, a function whose
result does not depend on its argument."""
import math
import functools
import operator

import numpy as np
import pytest

import yota_s2s as ys

X = np.linspace(0.1, 0.9, 3)


def test_a_numpy_function_or_operator_is_the_function_of_every_entry_point():
    np.testing.assert_allclose(ys.grad(np.sin, 0.5)[1][0], math.cos(0.5))
    np.testing.assert_allclose(ys.simplegrad(np.tanh, 0.5)(0.5)[1], 1 - math.tanh(0.5) ** 2)
    assert ys.gradient(operator.mul)(1.5, 2.0) == 2.0
    assert ys.gradient(operator.mul, "b")(1.5, 2.0) == 1.5        # operator.mul(a, b)
    np.testing.assert_allclose(ys.value_and_grad(np.sin)(0.5), (math.sin(0.5), math.cos(0.5)))
    np.testing.assert_allclose(ys.elementwise_grad(np.tanh)(X), 1 - np.tanh(X) ** 2)
    np.testing.assert_allclose(ys.gradient(ys.gradient(np.sin))(0.5), -math.sin(0.5))
    np.testing.assert_allclose(ys.grad(np.linalg.norm, X)[1][0], X / np.linalg.norm(X))
    np.testing.assert_allclose(ys.grad(math.exp, 0.5)[1][0], math.exp(0.5))
    assert ys.grad(abs, -0.5)[1][0] == -1.0
    value, tangent = ys.jvp(np.sum, (X,), (2 * X,))
    np.testing.assert_allclose((value, tangent), (np.sum(X), 2 * np.sum(X)))
    np.testing.assert_allclose(ys.jvpfunction(np.exp, X)(X, X)[1], np.exp(X) * X)
    for mode in ("rev", "fwd"):
        np.testing.assert_allclose(ys.jacobian(np.tanh, X, mode=mode),
                                   np.diag(1 - np.tanh(X) ** 2), atol=1e-15)
    expected = np.prod(X) / np.outer(X, X) * (1 - np.eye(3))
    np.testing.assert_allclose(ys.hessian(np.prod, X), expected, rtol=1e-12)
    np.testing.assert_allclose(ys.vjp(np.tanh, X)(X, X)[1], (1 - np.tanh(X) ** 2) * X)
    np.testing.assert_allclose(ys.compile(np.cos, X)(X), np.cos(X))
    assert str(ys.trace(operator.mul, X, X)[1]).splitlines()[0].startswith("tape mul(a:")


def test_the_function_made_for_a_primitive_is_named_like_it_and_found_again():
    df = ys.simplegrad(np.sum, X, buffers=False)
    assert "def sum_grad(a):" in ys.source(df)
    ys.clear_cache()
    for x in (0.3, 0.7, 0.3):
        np.testing.assert_allclose(ys.grad(np.cos, x)[1][0], -math.sin(x))
    assert ys.cache_info()["misses"] == 1
    value, g = ys.grad(operator.mul, 1.5, 2.0, wrt="b")
    assert (value, g[0], g[1]) == (3.0, None, 1.5)


def mixed(x, s, n, flags, nothing):
    scale = 2.0 if s == "double" else 1.0
    return np.sum(np.sin(x)) * scale * n * len(flags) + (0.0 if nothing is None else 1.0)


def test_jvp_takes_strings_none_bools_ints_and_tuples_of_them_among_the_primals():
    t = np.cos(X)
    for primals in [(X, "double", 3, (True, False), None), (X, "single", True, (1,), None)]:
        value, tangent = ys.jvp(mixed, primals, (t, None, None, None, None))
        np.testing.assert_allclose(value, mixed(*primals))
        scale = 2.0 if primals[1] == "double" else 1.0
        np.testing.assert_allclose(tangent, np.sum(np.cos(X) * t) * scale * primals[2]
                                   * len(primals[3]))


def test_jvp_takes_a_list_of_ints_and_a_list_of_floats():
    value, tangent = ys.jvp(lambda a, w: np.sum(a * w[1]), (X, [2, 3]), (X, None))
    np.testing.assert_allclose((value, tangent), (3 * np.sum(X), 3 * np.sum(X)))
    value, tangent = ys.jvp(lambda a, w: np.sum(a * w[0]), (X, [2.0]), (X, [0.5]))
    np.testing.assert_allclose((value, tangent), (2 * np.sum(X), 2.5 * np.sum(X)))


def made_of_constants(x):
    """A result made of constants only (fuzzer seed 9991800: sin(2 * arctan2(0.5, 0.5)))."""
    v = np.arctan2(0.5, 0.5)
    return np.sin(v + v)


@pytest.mark.parametrize("buffers", [True, False])
def test_a_constant_function_has_zero_gradients_of_its_arguments_shapes(buffers):
    """As in autograd and JAX: f ignores its argument, depends only on ints, or returns a
    comparison; the gradients are zeros like the arguments (they were refused)."""
    x32 = X.astype(np.float32)
    cases = [(lambda a: 1.0, (X,), 1.0),
             (lambda x: 3, (2.0,), 3),
             (lambda a, n: n * 2.0, (x32, 3), 6.0),
             (made_of_constants, (np.float32(0.3),), 1.0),
             (lambda a, b: a >= b, (0.7, 1.8), False),
             (lambda x, y: np.sum(x != y), (X, X), 0)]
    for f, args, value in cases:
        got, *grads = ys.simplegrad(f, *args, buffers=buffers)(*args)
        assert got == value and type(got) is type(f(*args))
        for a, g in zip(args, grads):
            if type(a) is int:
                assert g is None
            else:
                assert np.shape(g) == np.shape(a) and np.result_type(g) == np.result_type(a)
                assert not np.any(g)
    assert ys.grad(lambda a: 1.0, X)[1][0].tolist() == [0.0] * 3
    assert ys.gradient(lambda a, b: a < b, 1)(0.7, 1.8) == 0.0
    assert ys.gradient(ys.gradient(lambda a: 1.0))(2.0) == 0.0


def angle(z):
    return np.angle(z)


def test_forward_mode_of_a_result_with_no_tangent_is_zero():
    """The JVP of the VJP of np.angle at a float (a Python float result that no tangent
    reaches: the module's writer met a bare 0.0, AttributeError), and of constants."""
    vf = ys.vjp(angle, 0.5)

    def angle_vjp(x, v):
        return vf(x, v)[1]
    assert ys.jvp(angle_vjp, (0.5, np.ones(())), (1.0, np.zeros(()))) == (0.0, 0.0)
    assert ys.jvp(lambda x: 1.0, (X,), (X,)) == (1.0, 0.0)
    assert ys.jvp(lambda x, n: n * 2.0, (X, 3), (X, None)) == (6.0, 0.0)
    # a tuple result (vf's value and gradient) has a tuple tangent (issue 34)
    assert ys.jvp(vf, (0.5, np.ones(())), (1.0, np.ones(()))) == ((0.0, 0.0), (0.0, 0.0))


def test_vjp_of_a_function_that_returns_a_python_float():
    """autograd's second-order check takes the VJP of a VJP whose result is a float."""
    vf = ys.vjp(lambda a: a ** 3.0, 0.5)
    assert vf(0.5, 2.0) == (0.125, 1.5)


def test_vjp_wrt_differentiates_only_the_arguments_asked_for():
    """autograd's make_vjp(f, argnum): betainc has no derivative in a or b, so the VJP in x
    alone must not need one (it was refused: 'no derivative rule for its operand x1')."""
    import scipy.special as sp
    a, b, x, v = np.array([1.5, 2.2]), np.array([2.1, 3.3]), np.array([0.3, 0.6]), np.array([0.7, -1.1])
    value, ga, gb, gx = ys.vjp(sp.betainc, a, b, x, wrt=2)(a, b, x, v)
    eps = 1e-6
    numeric = (sp.betainc(a, b, x + eps) - sp.betainc(a, b, x - eps)) / (2 * eps) * v
    np.testing.assert_allclose(value, sp.betainc(a, b, x))
    np.testing.assert_allclose(gx, numeric, rtol=1e-7)
    assert ga is None and gb is None

    def f(p, q):
        return {"s": np.sin(p) * q}
    value, gp, gq = ys.vjp(f, a, b, wrt=("q",))(a, b, {"s": v})
    assert gp is None
    np.testing.assert_allclose(gq, np.sin(a) * v)


def test_a_vjp_of_a_function_closing_over_a_large_array_is_differentiated_again():
    """autograd's second-order check of np.concatenate((A, x)) with A (120 elements) in a
    closure: the gradient of ys.vjp's function inlines its generated gradient, which reads A
    through the function's closure; that path went through the vjp's own wrappers and was
    lost ('cell.cell_contents ... too large to compile in')."""
    rng = np.random.default_rng(0)
    big, x = rng.standard_normal((5, 6, 4)), rng.standard_normal((2, 6, 4))
    v, w = rng.standard_normal((7, 6, 4)), rng.standard_normal((2, 6, 4))

    def fun(x):
        return np.concatenate((big, x)) ** 2
    vf = ys.vjp(fun, x)

    def paired(x, v):
        return np.sum(vf(x, v)[1] * w)          # sum(2 x v[5:] w)
    _, (gx, gv) = ys.grad(paired, x, v)
    np.testing.assert_allclose(gx, 2 * v[5:] * w)
    np.testing.assert_allclose(gv, np.concatenate((np.zeros((5, 6, 4)), 2 * x * w)))
    big *= 2.0          # read where it is when the gradient runs, not a copy
    _, (gx, gv) = ys.grad(paired, x, v)
    np.testing.assert_allclose(gx, 2 * v[5:] * w)


def closure_reader(weights):
    def f(x):
        return np.sum(np.sin(x) * weights)
    return f


def test_a_gradient_of_the_gradient_of_a_closure_reader_reads_the_closure_when_it_runs():
    """Its generated gradient reads the closure when it runs (autograd's test_hess_vector_prod:
    grad(fun) of a fun reading randv, differentiated again). It was refused ('f reads
    variables of an enclosing function'); inlined, the closure is read where the function
    being compiled reaches it, so a change to the array in place is seen, not a stale copy."""
    weights = np.array([1.0, 2.0, 3.0])
    gf = ys.gradient(closure_reader(weights))

    def loss(x):
        return np.sum(gf(x) ** 2)           # sum(cos(x)^2 weights^2)
    _, (g,) = ys.grad(loss, X)
    np.testing.assert_allclose(g, -2 * np.cos(X) * np.sin(X) * weights ** 2)
    weights *= 2.0
    _, (g,) = ys.grad(loss, X)
    np.testing.assert_allclose(g, -2 * np.cos(X) * np.sin(X) * weights ** 2)


ENTRY_POINTS = ["simplegrad", "grad", "gradient", "value_and_grad", "vjp", "jacobian",
                "elementwise_grad", "trace", "compile", "jvp", "jvpfunction", "hvp", "hessian"]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_an_entry_point_called_in_traced_code_is_refused_by_its_mark_not_inlined(name):
    """The frontend knows the entry points by the mark each carries (marks.py), not by
    importing the API: calling one inside the function to differentiate is refused, named."""
    entry = getattr(ys, name)

    def loss(x):
        return np.sum(entry(np.sin, x))
    with pytest.raises(ys.UnsupportedSyntax,
                       match=rf"\.{entry.__name__} is a gradient function made by yota_s2s"):
        ys.grad(loss, np.ones(3))


def test_a_wrapper_that_copies_an_entry_points_attributes_is_still_the_users_function():
    @functools.wraps(ys.hvp)
    def squares(x):
        return x * x
    del squares.__wrapped__

    def loss(x):
        return np.sum(squares(x))
    x = np.array([0.5, -1.0, 2.0])
    value, g = ys.grad(loss, x)
    assert value == pytest.approx(np.sum(x * x)) and np.allclose(g[0], 2 * x, rtol=1e-15)


def test_a_list_of_traced_values_inside_a_sequence_operand_is_an_array():
    """np.append(A, B, axis=0) of nested lists of floats (autograd's
    test_simple_append_list_2D): concatenate's operand held a list of traced values as one
    element, and its gradient (an array per element) could not be given back to the list
    ('its derivative rule gives one gradient for them'). numpy reads each element as an array;
    so does the frontend now."""
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]
    w = np.arange(9.0).reshape(3, 3)

    def loss(a, b):
        return np.sum(np.sin(np.append(a, b, axis=0)) * w)
    _, (ga, gb) = ys.grad(loss, a, b)
    expected = np.cos(np.array(a + b)) * w
    np.testing.assert_allclose([ga[(i, j)] for i in range(2) for j in range(3)],
                               expected[:2].ravel())
    np.testing.assert_allclose([gb[(0, j)] for j in range(3)], expected[2])

    def joined(x, y):
        return np.sum(np.concatenate([[x, y], np.array([x * y])]) ** 2)
    _, (gx, gy) = ys.grad(joined, 0.5, 2.0)
    np.testing.assert_allclose((gx, gy), (2 * 0.5 + 2 * 0.5 * 2.0 ** 2, 2 * 2.0 + 2 * 2.0 * 0.25))


def test_a_primitive_with_python_source_given_as_the_function_is_its_rule():
    """scipy.linalg.solve_sylvester is a Python function (scipy's array-API wrapper) with a
    rule: given to ys.jvp itself, its wrapper's source was traced ('array_namespace has no
    derivative rule'; autograd's test_solve_sylvester in forward mode). Now it is called,
    like np.sin, and its rule serves."""
    import scipy.linalg as spla
    rng = np.random.default_rng(2)
    a, b, q = (rng.standard_normal((3, 3)) for _ in range(3))
    ta, tb, tq = (rng.standard_normal((3, 3)) for _ in range(3))
    eps = 1e-6
    numeric = (spla.solve_sylvester(a + eps * ta, b + eps * tb, q + eps * tq)
               - spla.solve_sylvester(a - eps * ta, b - eps * tb, q - eps * tq)) / (2 * eps)
    value, tangent = ys.jvp(spla.solve_sylvester, (a, b, q), (ta, tb, tq))
    np.testing.assert_allclose(value, spla.solve_sylvester(a, b, q))
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)
    v = rng.standard_normal((3, 3))
    _, ga, gb, gq = ys.vjp(spla.solve_sylvester, a, b, q)(a, b, q, v)
    np.testing.assert_allclose(np.sum(ga * ta) + np.sum(gb * tb) + np.sum(gq * tq),
                               np.sum(v * numeric), rtol=1e-6)


def test_a_vjp_function_given_a_string_is_differentiated_again():
    """ys.vjp(np.einsum, 'ij,jk->ik', a, b)'s function, differentiated again (autograd's
    second-order einsum and pad checks): a string among the arguments made it 'not a
    function of arrays and floats'; strings are static, as ints are."""
    rng = np.random.default_rng(3)
    a, b, v = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    vf = ys.vjp(np.einsum, "ij,jk->ik", a, b)

    def paired(a, b):
        return np.sum(vf("ij,jk->ik", a, b, v)[2] ** 2)     # |v b^T|^2 (the gradient in a)
    _, (ga, gb) = ys.grad(paired, a, b)
    np.testing.assert_allclose(gb, 2 * (v @ b.T).T @ v)
    assert np.all(ga == 0)
