"""Second derivatives against finite differences of gradients: the gradient-check table run one
order up. For each case with a smooth second derivative, ``directional(*args, *vs)`` is
``sum_i <grad_i f(*args), v_i>`` written over the *buffered* generated gradient (the frontend
inlines its plain form, nested.py); its compiled gradient (a Hessian-vector product, plus the
gradient itself for the ``v``s) must match central differences of it, which are differences of
first gradients."""
from __future__ import annotations

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import differentiable, numerical_grad

from .test_gradcheck import CASES, Case

# Not smooth where the table samples (kinks, steps, ties, piecewise definitions) or with a
# second derivative that is zero almost everywhere by construction: left out one order up.
NOT_SMOOTH = ("abs", "fabs", "absolute", "sign", "rounding", "tests_nodiff", "maximum",
              "minimum", "fmax", "fmin", "where", "mod", "np_divide_remainder", "clip", "max",
              "amax", "min_method", "sort", "partition", "argmax", "where_indices", "searchsorted",
              "norm_ord1", "norm_matrix_1_inf", "norm_matrix_2", "norm_matrix_fro_nuc",
              "index_bool_mask", "take_along_axis", "nan_to_num", "nansum", "nanmean",
              "builtin_abs", "update_sort", "guard_", "python_types_as_dtypes", "astype",
              "item_with_an_index", "one_element_read_twice", "logsumexp_stable")
# Complex intermediates: the first gradient's conj/sign/astype(complex) statements are not yet
# differentiated with one complex convention (issue 13 item 3, complex numbers done right).
# eig_real too: numpy 2.5's eig gives a real matrix complex eigenvalues even where they are real
COMPLEX_PENDING = ("complex_intermediates", "eig_complex_pairs", "eig_real")
UNARY_SHAPE, BINARY_SHAPES = "[2, 3]", "[2, 3][3]"      # one shape per elementwise rule


def _smooth(case: Case) -> bool:
    if case.name.startswith(NOT_SMOOTH) or case.name in COMPLEX_PENDING:
        return False
    if "[" in case.name:                  # an elementwise rule at one of several shapes
        return case.name.endswith(UNARY_SHAPE) and case.name.count("[") == 1 or \
            case.name.endswith(BINARY_SHAPES)
    return True


SECOND = [c for c in CASES if _smooth(c)]


def directional_of(df, n: int, picks: tuple):
    """``(*args, *vs) -> sum_k <grad_{picks[k]} f(*args), vs[k]>``."""
    def directional(*a):
        grads = df(*a[:n])
        total = 0.0
        for k, i in enumerate(picks):
            total = total + np.sum(grads[1 + i] * a[n + k])
        return total
    return directional


def check_second_order(case: Case, args: tuple, buffers: bool = True) -> None:
    picks = tuple(i for i, a in enumerate(args) if differentiable(a))
    r = np.random.default_rng(7)
    vs = tuple(float(r.standard_normal()) if isinstance(args[i], float)
               else r.standard_normal(np.shape(args[i])) for i in picks)
    df = ys.simplegrad(case.fn, *args, buffers=buffers)
    directional = directional_of(df, len(args), picks)
    full = (*args, *vs)
    value, *second = ys.simplegrad(directional, *full)(*full)
    assert value == pytest.approx(directional(*full), rel=1e-10, abs=1e-10)
    tol = max(case.tol, 1e-5) * 10
    for i in picks + tuple(range(len(args), len(full))):
        expected = numerical_grad(directional, full, i, eps=1e-5)
        assert np.shape(second[i]) == np.shape(full[i])
        np.testing.assert_allclose(second[i], expected, rtol=tol, atol=tol,
                                   err_msg=f"argument {i} of {case.name}, one order up")


@pytest.mark.parametrize("case", SECOND, ids=lambda c: c.name)
def test_second_derivatives_match_differences_of_gradients(case: Case) -> None:
    check_second_order(case, case.make_args(np.random.default_rng(1)))


def test_second_order_table_is_large_enough() -> None:
    assert len(SECOND) >= 120
