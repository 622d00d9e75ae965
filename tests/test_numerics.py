"""Numerics where numpy code is smooth (or Python's semantics are exact) but a gradient was
nan, wrong or a crash: issue 29 items 5-8 and its crashes, issue 35's std and power.

Each test compares the value with the function run by numpy and the gradient with the exact
derivative (or central finite differences), in both forms and through ``ys.grad``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import numerical_grad

BOTH = pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")     # nan made by the programs


def grads(f, *args, buffers=True):
    """``(value, *gradients)`` of the compiled gradient of ``f``, called twice (work arrays)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # nan made by the program itself
        df = ys.simplegrad(f, *args, buffers=buffers)
        df(*args)
        return df(*args)


# -- item 6: x ** 0 at x = 0 ---------------------------------------------------------------

Z = np.array([0.0, 1.5, -2.0])


def poly(x):
    c = [1.0, 2.0, 3.0]
    return np.sum(sum(c[k] * x ** k for k in range(3)))


def vandermonde(x):
    return np.sum(x[:, None] ** np.arange(3) * np.array([1.0, 2.0, 3.0]))


def vandermonde_float(x):
    return np.sum(x[:, None] ** np.arange(3.0) * np.array([1.0, 2.0, 3.0]))


def power_int_zero(x):
    return np.sum(np.power(x, 0) * 5.0) + np.sum(x)


def power_float_zero(x):
    return np.sum(np.power(x, 0.0) * x)


def array_exponent(x):
    return np.sum(x ** np.array([0.0, 2.0, 0.0]))


def scalar_powers(x):
    return x[0] ** 0 + x[0] ** 0.0 * x[1] + x[0] ** 1


POWERS = [(poly, 2.0 + 6.0 * Z), (vandermonde, 2.0 + 6.0 * Z), (vandermonde_float, 2.0 + 6.0 * Z),
          (power_int_zero, np.ones(3)), (power_float_zero, np.ones(3)),
          (array_exponent, np.array([0.0, 3.0, 0.0])), (scalar_powers, np.array([1.0, 1.0, 0.0]))]


@BOTH
@pytest.mark.parametrize("f, expected", POWERS, ids=[f.__name__ for f, _ in POWERS])
def test_power_with_exponent_zero_has_gradient_zero_at_zero(f, expected, buffers):
    value, dx = grads(f, Z, buffers=buffers)
    assert value == pytest.approx(f(Z))
    np.testing.assert_allclose(dx, expected, rtol=1e-12)


def test_traced_exponent_zero_at_zero_base():
    def f(x, e):
        return np.sum(x ** e)
    x, e = np.array([0.0, 0.0, 2.0]), np.array([0.0, 2.0, 0.0])
    value, g = ys.grad(f, x, e)
    assert value == f(x, e)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(g[1], [0.0, 0.0, np.log(2.0)])


def test_power_zero_second_order():
    v = np.array([1.0, 0.5, 2.0])
    hf = ys.hvp(poly, Z)
    np.testing.assert_allclose(hf(Z, v), 6.0 * v)
    hf = ys.hvp(lambda x: np.sum(x[:, None] ** np.arange(4)), Z)
    np.testing.assert_allclose(hf(Z, v), (2.0 + 6.0 * Z) * v)


def test_literal_nonzero_exponent_keeps_its_code():
    def f(x):
        return np.sum(x ** 3)
    text = ys.source(ys.simplegrad(f, Z))
    body = text.split("-- backward --")[1]
    assert "where" not in body and "xp.square(x" in body


# -- item 8: Python's max and min ----------------------------------------------------------

def two(x):
    return max(x[0], x[1])


def three_min(x):
    return min(x[0], x[1] * 2.0, x[2])


def of_a_list(x):
    return max([x[0], x[1], x[2]])


def of_an_array(x):
    return max(x)


E = np.eye(3)
# each function's items as (value, gradient) pairs, and which of max/min picks among them
EXTREMA = [(two, max, lambda x: [(x[0], E[0]), (x[1], E[1])]),
           (three_min, min, lambda x: [(x[0], E[0]), (x[1] * 2.0, 2.0 * E[1]), (x[2], E[2])]),
           (of_a_list, max, lambda x: [(x[i], E[i]) for i in range(3)]),
           (of_an_array, max, lambda x: [(x[i], E[i]) for i in range(3)])]
POINTS = [[1.0, np.nan, 3.0], [np.nan, 1.0, 0.0], [2.0, 2.0, 2.0], [1.0, 2.0, -1.0],
          [0.0, 0.0, 5.0], [4.0, np.nan, np.nan], [1.0, 0.5, 0.5]]


def picked(py_fn, items):
    """The item Python's max/min returns: the first, unless a later one compares greater
    (less) than the best so far."""
    best = items[0]
    for item in items[1:]:
        if (item[0] > best[0]) if py_fn is max else (item[0] < best[0]):
            best = item
    return best


@BOTH
@pytest.mark.parametrize("f, py_fn, items", EXTREMA, ids=[e[0].__name__ for e in EXTREMA])
def test_python_max_min_is_pythons_left_fold(f, py_fn, items, buffers):
    df = ys.simplegrad(f, np.array(POINTS[0]), buffers=buffers)    # one compile: any values
    for point in POINTS:
        x = np.array(point)
        value, dx = df(x)
        np.testing.assert_equal(value, f(x))
        expected_value, expected = picked(py_fn, items(x))
        np.testing.assert_equal(value, expected_value)
        np.testing.assert_array_equal(dx, expected, err_msg=f"{f.__name__} at {point}")


def test_python_max_keeps_the_first_of_equal_items():
    _, g = ys.grad(lambda a, b: max(a, b) + 2.0 * min(b, a), 1.0, 1.0)
    assert g[0] == 1.0 and g[1] == 2.0
    _, g = ys.grad(lambda x: max(x[0], x[1]), np.array([np.nan, 1.0]))
    np.testing.assert_array_equal(g[0], [1.0, 0.0])


def test_python_max_of_arrays_is_refused_as_python_refuses_it():
    with pytest.raises(ys.YotaError, match="np.maximum"):
        ys.simplegrad(lambda x: np.sum(max(x, 2.0 * x)), np.ones(3))


# -- crashes: det of a singular matrix, prod of an empty array, std of one element ----------

SINGULAR = [np.array([[1.0, 2.0], [2.0, 4.0]]),
            np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),
            np.outer([1.0, 2.0, 3.0], [1.0, 1.0, 2.0])]


@BOTH
@pytest.mark.parametrize("a", SINGULAR, ids=["2x2", "rank2", "rank1"])
def test_det_of_a_singular_matrix_has_the_adjugate_as_gradient(a, buffers):
    value, da = grads(lambda a: np.linalg.det(a), a, buffers=buffers)
    assert value == pytest.approx(np.linalg.det(a), abs=1e-12)
    # the cofactor matrix: each entry's minor, signed
    n = len(a)
    cofactor = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                          for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(da, cofactor, atol=1e-9)


def test_det_batched_with_a_singular_matrix():
    a = np.stack([np.outer([1.0, 2.0, 3.0], [1.0, 1.0, 2.0]) + np.outer([0, 1.0, 0], [1.0, 0, 0]),
                  np.eye(3) * 2 + 0.1])

    def f(a):
        return np.sum(np.linalg.det(a) * np.array([1.0, 2.0]))
    _, g = ys.grad(f, a)
    np.testing.assert_allclose(g[0], numerical_grad(f, (a,), 0), atol=1e-7)


def det_(a):
    return np.linalg.det(a)


def second_difference(f, a, h=0.5):
    """The Hessian of ``f`` at ``a`` by central second differences. det is affine in each entry,
    so for det these are exact up to rounding at any step (h = 0.5 keeps rounding small)."""
    x, n = a.ravel(), a.size
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            def at(di, dj):
                y = x.copy()
                y[i] += di
                y[j] += dj
                return f(y.reshape(a.shape))
            hess[i, j] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    return hess


ORTHOGONAL3 = np.linalg.qr(np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]))[0]
RANDOM = np.random.default_rng(29)
ORTHOGONAL6 = np.linalg.qr(RANDOM.normal(size=(6, 6)))[0]
RANK5 = RANDOM.normal(size=(6, 5)) @ RANDOM.normal(size=(5, 6))
RANK4 = RANDOM.normal(size=(6, 4)) @ RANDOM.normal(size=(4, 6))
# repeated singular values (the identity, orthogonal, a scaled identity, a projection) and
# singular matrices of rank n - 1 and lower, up to 5 x 5 (the minors) and 6 x 6 (inv or svd)
DET_POINTS = {
    "identity": np.eye(3), "scaled_identity": 3.0 * np.eye(3), "orthogonal": ORTHOGONAL3,
    "projection": np.eye(3) - np.outer([1.0, 2.0, 2.0], [1.0, 2.0, 2.0]) / 9.0,
    "diag_110": np.diag([1.0, 1.0, 0.0]), "diag_100": np.diag([1.0, 0.0, 0.0]),
    "rank2": SINGULAR[1], "rank1": SINGULAR[2], "diag_2100": np.diag([2.0, 1.0, 0.0, 0.0]),
    "identity_6": np.eye(6),
    "orthogonal_6": ORTHOGONAL6, "rank5_6": RANK5, "rank4_6": RANK4,
}


@pytest.mark.parametrize("a", DET_POINTS.values(), ids=DET_POINTS.keys())
def test_det_gradient_and_hessian_at_repeated_singular_values_and_singular_matrices(a):
    """Issue 29: det's gradient rule (an SVD cofactor) made its Hessian nan at repeated singular
    values (the identity); the cofactor is now computed by formulas whose derivatives are
    right there and at singular matrices."""
    value, da = grads(det_, a)
    assert value == pytest.approx(np.linalg.det(a), abs=1e-12)
    np.testing.assert_allclose(da, numerical_grad(det_, (a,), 0), atol=1e-8)
    expected = second_difference(det_, a)
    for strategy in ("rev-rev", "fwd-rev"):
        hess = ys.hessian(det_, a, strategy=strategy).reshape(a.size, a.size)
        np.testing.assert_allclose(hess, expected, atol=1e-9, err_msg=strategy)


def test_det_hessian_of_a_batch_inside_a_second_order_program():
    a = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0]), ORTHOGONAL3 * 2.0])

    def f(a):
        return np.sum(np.linalg.det(a) ** 2 * np.array([1.0, 2.0, 3.0])) + np.sum(a ** 2)
    hess = ys.hessian(f, a).reshape(a.size, a.size)
    np.testing.assert_allclose(hess, second_difference(f, a, h=1e-3), atol=1e-5)


def slogdet_log(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet * 2.0


SLOGDET_LINE = slogdet_log.__code__.co_firstlineno + 1


@pytest.mark.parametrize("how", ["buffered", "plain", "grad", "jvp"])
def test_slogdet_of_a_singular_matrix_says_why_it_has_no_gradient(how):
    """Issue 29: compiling failed with 'linalg.inv(f64[2,2]) fails: Singular matrix'."""
    a = SINGULAR[0]
    assert tuple(np.linalg.slogdet(a)) == (0.0, -np.inf)
    with pytest.raises(ys.YotaError) as info:
        if how == "grad":
            ys.grad(slogdet_log, a)
        elif how == "jvp":
            ys.jvp(slogdet_log, (a,), (np.ones_like(a),))
        else:
            ys.simplegrad(slogdet_log, a, buffers=how == "buffered")
    assert str(info.value) == (
        f"test_numerics.py:{SLOGDET_LINE} in slogdet_log: np.linalg.slogdet of a singular matrix "
        "(at the example arguments): its log-determinant is -inf (numpy's value is (0, -inf)) "
        "and has no gradient (inv(a).T does not exist)\n"
        "    sign, logdet = np.linalg.slogdet(a)\n"
        "                   ^^^^^^^^^^^^^^^^^^^^\n"
        "Differentiate at an invertible matrix, or differentiate np.linalg.det(a): its "
        "gradient, the cofactor matrix, is finite at a singular matrix.")


def test_slogdet_sign_of_a_singular_matrix_has_gradient_zero():
    def f(a):
        sign, _ = np.linalg.slogdet(a)
        return sign + np.sum(a)
    value, da = grads(f, SINGULAR[0])
    assert value == 9.0
    np.testing.assert_array_equal(da, np.ones((2, 2)))


def test_a_rule_domain_must_be_what_and_what_to_do():
    def scaled(a):
        return a * 2.0
    with pytest.raises(ys.YotaError, match="must be two strings: what the error says and what"):
        ys.diffrule(scaled, "a", "2.0 * dy", domain="singular")


@BOTH
def test_prod_of_an_empty_array_is_one_with_an_empty_gradient(buffers):
    def f(x):
        return np.prod(x[:0]) * 2.0 + np.sum(np.prod(x.reshape(2, 1)[:, :0], axis=1)) + np.sum(x)
    value, dx = grads(f, np.array([1.0, 2.0]), buffers=buffers)
    assert value == f(np.array([1.0, 2.0])) == 7.0
    np.testing.assert_array_equal(dx, [1.0, 1.0])
    value, dx = grads(lambda e: np.prod(e) + 0.0, np.zeros(0), buffers=buffers)
    assert value == 1.0 and dx.shape == (0,)


@BOTH
def test_std_over_one_element_has_gradient_zero(buffers):
    def f(x):
        return np.std(x[:1]) + np.sum(np.std(x.reshape(3, 1), axis=1)) \
            + np.sum(np.std(x.reshape(1, 3), axis=0, keepdims=True)) + np.var(x[1:2])
    x = np.array([1.0, 2.0, 4.0])
    value, dx = grads(f, x, buffers=buffers)
    assert value == f(x) == 0.0
    np.testing.assert_array_equal(dx, [0.0, 0.0, 0.0])
    value, dx = grads(lambda x: np.std(x), np.array([3.0]), buffers=buffers)
    assert value == 0.0 and dx.tolist() == [0.0]


# -- item 5: numpy's in-place functions are updates, not primitives --------------------------

X3 = np.array([1.0, 2.1, 3.2])
W9 = np.arange(9.0).reshape(3, 3)


def fill_diagonal_issue(x):
    a = np.outer(x, x)
    np.fill_diagonal(a, 0.0)
    return np.sum(a)


def fill_diagonal_values(x):
    a = np.outer(x, x[:2]) * 1.0
    np.fill_diagonal(a, x[1:] * 3.0)
    return np.sum(a * W9[:, :2])


def fill_diagonal_wrap(x):
    a = np.outer(np.concatenate([x, x, x]), x[:2])
    np.fill_diagonal(a, x * 2.0, wrap=True)
    return np.sum(a * np.arange(18.0).reshape(9, 2))


def put_cycled(x):
    a = np.outer(x, x)
    np.put(a, [0, 4, 5], x[:2] * 2.0)
    return np.sum(a * W9)


def put_wrap(x):
    a = np.outer(x, x)
    np.put(a, [-1, 10, 2], x * 2.0, mode="wrap")
    return np.sum(a * W9)


def putmask_traced(x):
    a = np.outer(x, x)
    np.putmask(a, a > 3.0, x * 10.0)
    return np.sum(a * W9)


def putmask_same_shape(x):
    a = np.outer(x, x)
    np.putmask(a, np.eye(3, dtype=bool), np.sin(a))
    return np.sum(a * W9)


def place_cycled(x):
    a = np.outer(x, x)
    np.place(a, a > 3.0, x[:2] ** 2)
    return np.sum(a * W9)


MUTATING = [fill_diagonal_issue, fill_diagonal_values, fill_diagonal_wrap, put_cycled, put_wrap,
            putmask_traced, putmask_same_shape, place_cycled]


@BOTH
@pytest.mark.parametrize("f", MUTATING, ids=lambda f: f.__name__)
def test_in_place_numpy_functions_write_and_differentiate(f, buffers):
    value, dx = grads(f, X3, buffers=buffers)
    assert value == pytest.approx(f(X3), rel=1e-13)
    np.testing.assert_allclose(dx, numerical_grad(f, (X3,), 0), rtol=1e-7, atol=1e-7)


def test_fill_diagonal_of_the_issue():
    value, g = ys.grad(fill_diagonal_issue, np.array([1.0, 2.0, 3.0]))
    assert value == 22.0            # numpy's; the write was lost (36.0) under nodiff
    np.testing.assert_array_equal(g[0], [10.0, 8.0, 6.0])


@pytest.mark.parametrize("fn", [np.fill_diagonal, np.put, np.putmask, np.place, np.copyto,
                                np.put_along_axis], ids=lambda f: f.__name__)
def test_nodiff_or_a_rule_of_a_function_that_writes_in_place_is_refused(fn):
    rules = ys.RULES.copy()
    with pytest.raises(ys.RuleError, match="writes into its argument in place") as info:
        rules.nodiff(fn)
    assert "test_numerics.py" in str(info.value)
    with pytest.raises(ys.RuleError, match="writes into its argument in place"):
        rules.diffrule(fn, "a", "dy")


def test_no_rule_error_of_a_mutator_does_not_suggest_nodiff():
    def f(x):
        a = np.outer(x, x)
        np.copyto(a, 0.0, where=a > 3.0)
        return np.sum(a)
    with pytest.raises(ys.NoRuleError) as info:
        ys.grad(f, X3)
    text = str(info.value)
    assert "writes into its argument in place" in text and "nodiff(np.copyto)" not in text
    assert "a = np.where(mask, v, a)" in text


# -- item 7: nan from the branch np.where (a mask, clip) did not select -----------------------

def where_sqrt(x):
    return np.sum(np.where(x >= 0, x, np.sqrt(-x)))


def where_chain(x):
    return np.sum(np.where(x > 0, np.log(np.sqrt(x)) * 2.0, x ** 2))


def where_nested(x):
    return np.sum(np.where(x > 1, x, np.where(x > -1, np.arcsin(x) * 0.5, np.log(-x))))


def clip_log(x):
    return np.sum(np.clip(np.log(x), -5.0, 5.0) + np.clip(np.sqrt(x), 0.5, None))


def mask_write(x):
    y = np.sqrt(x)
    y[x <= 0] = 0.0
    return np.sum(y)


def mask_product(x):
    return np.sum(np.sqrt(x) * (x > 0) * 3.0)


NAN_FREE = [
    (where_sqrt, np.array([1.0, 2.0, 0.0, -4.0]), [1.0, 1.0, 1.0, -0.25]),
    (where_chain, np.array([1.0, 2.0, 0.0, -3.0]), [1.0, 0.5, 0.0, -6.0]),
    (where_nested, np.array([2.0, 0.0, -2.0, 0.5]), [1.0, 0.5, -0.5, 0.5 / np.sqrt(0.75)]),
    (clip_log, np.array([1.0, 2.0, 0.0, 4.0]), [1.5, 0.5 + 0.5 / np.sqrt(2.0), 0.0, 0.5]),
    (mask_write, np.array([1.0, 4.0, 0.0, 0.0]), [0.5, 0.25, 0.0, 0.0]),
    (mask_product, np.array([1.0, 4.0, 0.0, 0.0]), [1.5, 0.75, 0.0, 0.0]),
]


@BOTH
@pytest.mark.parametrize("f, x, expected", NAN_FREE, ids=[c[0].__name__ for c in NAN_FREE])
def test_unselected_branch_gives_no_nan(f, x, expected, buffers):
    value, dx = grads(f, x, buffers=buffers)
    with np.errstate(all="ignore"):
        assert value == pytest.approx(f(x))
    np.testing.assert_allclose(dx, expected, rtol=1e-12)
    _, g = ys.grad(f, x)
    np.testing.assert_allclose(g[0], expected, rtol=1e-12)


def test_selected_branch_still_gives_its_own_nan_or_inf():
    # where the selected branch has no derivative, the gradient says so
    _, dx = grads(lambda x: np.sum(np.where(x >= 0, np.sqrt(x), 0.0)), np.array([0.0, 1.0]))
    assert np.isinf(dx[0]) and dx[1] == 0.5


def test_masking_costs_nothing_without_a_selection():
    def f(x):
        return np.sum(np.sqrt(x) * 2.0 + np.log(x))
    assert "xp.where" not in ys.source(ys.simplegrad(f, np.ones(3)))


def test_a_where_reached_only_by_finite_scaling_is_not_masked_again():
    text = ys.source(ys.simplegrad(lambda x: np.sum(np.where(x > 0, x, -0.5 * x)), np.ones(3),
                                   buffers=False))
    assert text.split("-- backward --")[1].count("xp.where") == 2
