"""scipy.sparse matrices read from outside the function: the operand of products with a dense
traced value (rules/products.py, the ``sparse`` trait), read at run time and checked
(codegen/outside.py); any other use refused by name (docs/outside.md)."""
import numpy as np
import pytest

import yota_s2s as ys

sp = pytest.importorskip("scipy.sparse")

A = sp.random(5, 4, density=0.5, format="csr", random_state=0)
A_ARRAY = sp.csr_array(sp.random(5, 4, density=0.5, random_state=1))
CONFIG = {"A": sp.random(5, 4, density=0.5, format="csc", random_state=2)}


def times(x):
    return np.sum(np.tanh(A @ x))


def dotted(x):
    return np.sum(np.tanh(A.dot(x)))


def on_the_right(y):
    return np.sum(np.sin(y @ A))


def transposed(y):
    return np.sum(np.sin(A.T @ y))


def transposed_dot(y):
    return np.sum(np.sin(A.T.dot(y)))


def matrices(X):
    return np.sum(np.tanh(A @ X) ** 2)


def matrices_on_the_right(Y):
    return np.sum(np.tanh(Y @ A) ** 2)


def sparse_array(x):
    return np.sum(np.tanh(A_ARRAY @ x))


def from_a_config(x):
    return np.sum(np.cos(CONFIG["A"] @ x))


def closing_over(B):
    def energy(x):
        return np.sum(np.cos(B @ x)) + x @ (B.T @ (B @ x))
    return energy


def central(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


CASES = [(times, (4,)), (dotted, (4,)), (on_the_right, (5,)), (transposed, (5,)),
         (transposed_dot, (5,)), (matrices, (4, 3)), (matrices_on_the_right, (2, 5)),
         (sparse_array, (4,)), (from_a_config, (4,)),
         (closing_over(sp.random(5, 4, density=0.6, format="coo", random_state=3)), (4,))]


@pytest.mark.parametrize("buffers", [True, False])
@pytest.mark.parametrize("f, shape", CASES, ids=[f.__qualname__ for f, _ in CASES])
def test_gradient_through_a_sparse_product_matches_finite_differences(f, shape, buffers):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    value, dx = ys.simplegrad(f, x, buffers=buffers)(x)
    assert np.isclose(value, f(x), rtol=1e-14)
    np.testing.assert_allclose(dx, central(f, x), rtol=1e-6, atol=1e-9)
    t = rng.normal(size=shape)
    np.testing.assert_allclose(ys.jvp(f, (x,), (t,))[1], np.sum(dx * t), rtol=1e-12)


def test_the_module_reads_the_matrix_at_run_time_and_checks_it():
    global A
    x = np.linspace(-1, 1, 4)
    grad = ys.simplegrad(times, x)
    text = ys.source(grad)
    assert "getattr(A, 'format', None) != 'csr'" in text and "dx = " in text
    saved = A
    try:
        A = saved * 2.0                              # rebound: read again at the next call
        np.testing.assert_allclose(grad(x)[1], central(times, x), rtol=1e-6)
        A = saved.tocsc()                            # another format than compiled for
        with pytest.raises(ValueError, match=r"was csr float64\[5, 4\] when this gradient was "
                           r"compiled and is csc float64\[5, 4\] now"):
            grad(x)
    finally:
        A = saved


def propagated(x, xs):
    h = x
    for t in range(xs.shape[0]):
        h = np.tanh(A.T @ (A @ h) * 0.5 + xs[t])
    return np.sum(h ** 2)


@pytest.mark.parametrize("buffers", [True, False])
def test_a_loop_region_reads_the_matrix_again_in_its_backward_step(buffers):
    """A sparse matrix is no row of a stack: the backward loop reads it again (ad/policies.py)."""
    rng = np.random.default_rng(2)
    x, xs = rng.normal(size=5) * 0.3, rng.normal(size=(30, 4)) * 0.3
    grad = ys.simplegrad(propagated, x[:4], xs, buffers=buffers)
    text = ys.source(grad)
    assert "for t in range(30)" in text and "A_all" not in text
    _, dx, dxs = grad(x[:4], xs)
    np.testing.assert_allclose(dx, central(lambda x: propagated(x, xs), x[:4]), rtol=1e-6)
    np.testing.assert_allclose(dxs, central(lambda xs: propagated(x[:4], xs), xs), rtol=1e-6,
                               atol=1e-10)


def test_second_order_and_linearize_through_a_sparse_product():
    rng = np.random.default_rng(1)
    B = sp.random(4, 4, density=0.6, format="csr", random_state=4)
    energy = closing_over(B)
    x = rng.normal(size=4)
    hessian = ys.hessian(energy, x)
    dense = B.toarray()
    want = -dense.T @ np.diag(np.cos(dense @ x)) @ dense + dense.T @ dense + (dense.T @ dense).T
    np.testing.assert_allclose(hessian, want, rtol=1e-10, atol=1e-12)
    value, f_jvp = ys.linearize(lambda x: np.tanh(B @ x), x)
    t = rng.normal(size=4)
    np.testing.assert_allclose(f_jvp(t), (1 - np.tanh(dense @ x) ** 2) * (dense @ t), rtol=1e-12)


def elementwise(x):
    return np.sum(A * x)


def summed(x):
    return np.sum(A) * np.sum(x)


def numpy_dot(y):
    return np.sum(np.dot(y, A))


@pytest.mark.parametrize("f, what", [(elementwise, "mul"), (summed, "sum"), (numpy_dot, "dot")])
def test_anything_but_a_product_of_the_matrix_is_refused_by_name(f, what):
    with pytest.raises(ys.UnsupportedSyntax, match=f"{what} of the scipy.sparse matrix A "
                       r"\(csr f64\[5,4\]\): .* operand of products only"):
        ys.grad(f, np.ones(5 if f is numpy_dot else 4))


def to_dense(x):
    return np.sum(A.toarray() @ x)


def test_a_method_of_the_matrix_other_than_a_product_is_refused_by_name():
    with pytest.raises(ys.UnsupportedSyntax, match="'toarray' of the scipy.sparse matrix A "
                       r"\(csr f64\[5,4\]\): .* operand of products only"):
        ys.grad(to_dense, np.ones(4))


def product(M, x):
    return np.sum(M @ x)


def test_a_sparse_argument_and_a_gpu_module_are_refused():
    with pytest.raises(ys.UnsupportedSyntax, match="argument M is a scipy.sparse matrix.*"
                       "a gradient with respect to its entries is not"):
        ys.grad(product, A, np.ones(4), wrt=1)
    with pytest.raises(ys.UnsupportedSyntax, match="device='cuda' cannot multiply"):
        ys.simplegrad(times, np.ones(4), device="cuda")
