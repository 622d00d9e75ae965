"""Complex numbers (docs/complex.md): every case of the gradient-check table run again on
complex arguments, where numpy accepts them. The gradient of the real loss
``Re((1 - 0.5j) f(z))`` must be JAX's (and autograd's) ``dL/da - i dL/db`` for ``z = a + ib``,
by central differences along the real and the imaginary direction of each element, in both
generated forms; forward mode must give ``(f(z + e t) - f(z - e t)) / 2e`` for a complex
tangent ``t`` (``f`` itself may be complex: holomorphic functions go through ``jvp``). Cases
whose primitives have no derivative for complex values are refused with an error that says so
(``REFUSED``); a case that numpy itself refuses on complex input is not applicable."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad, compile_jvp
from yota_s2s.frontend.flatten import arg_kind

from .test_gradcheck import RULE_CASES, Case, complex_numerical_grad
from .test_gradcheck_scipy import EXTRA_CASES

CASES_ALL = RULE_CASES + EXTRA_CASES

# Cases refused on complex input, by the primitive that refuses them (its ``real_only`` trait).
REFUSED = {
    "maximum": "np.maximum orders its operands", "minimum": "np.minimum orders its operands",
    "fmax": "np.fmax orders its operands", "fmin": "np.fmin orders its operands",
    "clip": "np.clip orders", "sort": "np.sort orders", "partition": "np.partition orders",
    "searchsorted_all_any_nodiff": "np.sort orders",
    "cholesky": "real matrices only", "scipy_cholesky": "real matrices only",
    "qr": "real matrices only", "pinv": "real matrices only", "slogdet": "the sign is smooth",
    "where_unselected_branch": "np.clip orders",
    "sign_nodiff": "np.sign(z) = z / |z| is smooth",
    "digamma": "scipy's polygamma has no complex version",
    "fixed_point": "its adjoint iterates real vector-Jacobian products",
    "solve_banded": "real matrices only",
}


# Cases whose loss depends on the phases of complex eigenvectors or singular vectors (``u ** 2``),
# which numpy leaves to LAPACK: no derivative is that of every choice; the rules give the
# gradient of phase-free functions (docs/complex.md), test_complex_eigh_and_svd_* below.
PHASES = ("eigh", "svd_square", "svd_tall", "svd_wide")


def complexify(args: tuple, rng: np.random.Generator) -> tuple | None:
    """``args`` with every float value given an imaginary part (None: there is none)."""
    out, changed = [], False
    for a in args:
        if arg_kind(a) == "struct" or isinstance(a, (bool, int, np.integer)) or \
                np.result_type(a).kind != "f":
            out.append(a)
            continue
        changed = True
        imag = 0.25 * rng.standard_normal(np.shape(a))
        if isinstance(a, np.ndarray):
            out.append(a + 1j * imag)
        elif isinstance(a, np.generic):
            out.append(np.complex128(a + 1j * imag))
        else:
            out.append(complex(a, float(imag)))
    return tuple(out) if changed else None


def real_loss(fn):
    def loss(*args):
        return np.real((1 - 0.5j) * np.asarray(fn(*args)).reshape(()))
    loss.__name__ = "complex_loss"
    return loss


def check_complex_grad(case: Case, loss, args: tuple) -> None:
    grads = []
    for buffers in (True, False):
        fn = compile_grad(loss, args, check=True, buffers=buffers).fn
        fn(*args)
        value, *g = fn(*args)
        np.testing.assert_allclose(value, loss(*args), rtol=1e-10, atol=1e-10)
        grads.append(g)
    for i, (a, g, plain) in enumerate(zip(args, *grads)):
        if np.iscomplexobj(a):
            expected = complex_numerical_grad(loss, args, i)
            np.testing.assert_allclose(g, expected, rtol=10 * case.tol, atol=10 * case.tol,
                                       err_msg=f"argument {i} of {case.name}")
            np.testing.assert_allclose(plain, g, rtol=1e-12, atol=1e-12, err_msg="plain")


def check_complex_jvp(case: Case, args: tuple) -> None:
    rng = np.random.default_rng(7)
    tangents = [None if not np.iscomplexobj(a) else
                type(a)(complex(*rng.standard_normal(2))) if np.ndim(a) == 0 and
                not isinstance(a, np.ndarray) else
                (rng.standard_normal(np.shape(a)) + 1j * rng.standard_normal(np.shape(a)))
                .astype(np.result_type(a)) for a in args]
    # float (real) arguments keep a zero tangent: the check is along the complex ones
    given = [t if t is not None else (np.zeros_like(a) if isinstance(a, np.ndarray) else
                                      type(a)(0)) for a, t in zip(args, tangents)
             if np.result_type(a).kind in "fc" and not isinstance(a, (bool, int))
             and arg_kind(a) != "struct"]
    eps = 1e-6

    def at(sign):
        return case.fn(*[a if t is None else a + sign * eps * t for a, t in zip(args, tangents)])
    expected = (np.asarray(at(1)) - np.asarray(at(-1))) / (2 * eps)
    for buffers in (True, False):
        fn = compile_jvp(case.fn, args, tangents, check=True, buffers=buffers).fn
        _, tangent = fn(*args, *given)
        np.testing.assert_allclose(tangent, expected, rtol=10 * case.tol, atol=10 * case.tol,
                                   err_msg=f"jvp of {case.name}, buffers={buffers}")


def refusal(name: str) -> str | None:
    base = name.split("[")[0]
    for key, reason in REFUSED.items():
        if base == key or base.startswith(key + "_"):
            return reason
    return None


@pytest.mark.parametrize("case", CASES_ALL, ids=lambda c: c.name)
def test_complex_arguments_match_finite_differences(case: Case) -> None:
    args = complexify(case.make_args(np.random.default_rng(1)), np.random.default_rng(5))
    if args is None or any(arg_kind(a) == "struct" for a in args):
        pytest.skip("no complex argument to give")
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            case.fn(*args)
    except Exception as e:          # numpy has no complex version (hypot, floor, <)
        pytest.skip(f"numpy refuses complex input: {type(e).__name__}")
    if case.name.split("[")[0] in PHASES:
        pytest.skip("its loss depends on the vectors' phases (test_complex_eigh_and_svd_*)")
    expected_refusal = refusal(case.name)
    try:
        check_complex_grad(case, real_loss(case.fn), args)
        check_complex_jvp(case, args)
    except ys.YotaError as e:
        assert expected_refusal is not None, f"refused without a reason in REFUSED: {e}"
        assert "complex" in str(e)
        return
    assert expected_refusal is None, f"{case.name} is in REFUSED ({expected_refusal}) but works"


def real_if_close_loss(z):
    return np.sum(np.abs(np.real_if_close(z) * np.array([1.0, 2.0, -0.5])) ** 2)


def test_real_if_close_of_complex_takes_the_examples_arm_and_guards_it() -> None:
    """np.real_if_close's dtype depends on the values (autograd's unary_ufunc_check of it):
    the example's arm is compiled, the real part where every imaginary part is below 100 eps,
    and the generated code checks that it still holds. It was refused."""
    z = np.array([0.4 + 0.1j, -0.3 + 0.05j, 1.5 - 0.2j])
    near = z.real + 1e-18j
    weights = np.array([1.0, 2.0, -0.5]) ** 2
    for x, expected in ((z, 2 * weights * np.conj(z)), (near, 2 * weights * near.real)):
        value, g = ys.grad(real_if_close_loss, x)
        assert value == real_if_close_loss(x)
        np.testing.assert_allclose(g[0], expected, rtol=1e-13)   # (autograd: conj)
    df = ys.simplegrad(real_if_close_loss, z)
    with pytest.raises(ValueError, match="was False when this gradient was compiled"):
        df(near)


def test_refused_complex_says_what_to_do() -> None:
    z = np.array([1 + 2j, 3 - 1j])
    with pytest.raises(ys.YotaError, match="complex numbers have no order") as info:
        compile_grad(lambda z: np.real(np.sum(np.maximum(z, 1.0))), (z,))
    assert "np.real(z)" in str(info.value)


def test_complex_result_is_refused_by_grad_pointing_at_jvp() -> None:
    z = np.array([1 + 2j, 3 - 1j])
    with pytest.raises(ys.YotaError, match="ys.jvp"):
        compile_grad(lambda z: np.sum(z * z), (z,))


def test_holomorphic_derivative_through_jvp() -> None:
    z = np.array([0.3 + 0.2j, -1.0 + 0.5j, 2.0 - 1.0j])

    def f(z):
        return np.sin(z) * np.exp(z) + z ** 3
    value, tangent = ys.jvp(f, (z,), (np.ones(3, complex),))
    np.testing.assert_allclose(value, f(z))
    np.testing.assert_allclose(tangent, np.cos(z) * np.exp(z) + np.sin(z) * np.exp(z) + 3 * z ** 2)


def complex_constant(z):
    return 2.5j


def test_jvp_of_a_complex_constant_is_a_complex_zero() -> None:
    """A function whose value is a complex constant (autograd's check_grads of vjp_std: the
    VJP of std at one element, 0j) has the tangent 0j in forward mode; it was refused as
    'returns the constant 2.5j; forward mode needs float arrays or scalars'."""
    for z in (np.array([1.0, 2.0]), np.array([1.0 + 1j, 2.0])):
        value, tangent = ys.jvp(complex_constant, (z,), (np.ones_like(z),))
        assert value == 2.5j and tangent == 0j and isinstance(tangent, complex)


def test_real_functions_of_complex_follow_jax_convention() -> None:
    """d|z|^2 = 2 conj(z) (JAX, autograd: dL/da - i dL/db); PyTorch would give 2 z."""
    z = np.array([3.0 + 4.0j])
    _, g = compile_grad(lambda z: np.sum(np.abs(z) ** 2), (z,)).fn(z)
    np.testing.assert_allclose(g, [6.0 - 8.0j])
    _, g = compile_grad(lambda z: np.var(z * np.array([1.0])) + np.linalg.norm(z), (z,)).fn(z)
    np.testing.assert_allclose(g, [0.6 - 0.8j])


def test_the_gradient_of_a_python_complex_argument_is_complex():
    """A gradient lives where its argument does: for a Python complex ``z`` it is a Python
    complex even where it is real-valued (``np.real(z)``: 1 + 0j), and 0j where the result does
    not depend on ``z``; it was the float 1.0 and 0.0 (autograd's test_real_type)."""
    def real_part(z):
        return np.sum(np.real(z))

    def ignores(z, x):
        return x * 2.0
    g = ys.gradient(real_part)(1.0j)
    assert type(g) is complex and g == 1 + 0j
    assert type(ys.gradient(lambda z: np.real(z) * 3.0)(2.0 + 1.0j)) is complex
    assert type(ys.gradient(real_part)(2.0)) in (float, np.float64)
    _, grads = ys.grad(ignores, 1.0j, 3.0)
    assert type(grads[0]) is complex and grads[0] == 0j


def test_the_gradient_of_the_gradient_of_abs_of_complex_values():
    """|z|'s rule, ``dy conj(z) / |z|``, is written without np.sign (which has no derivative
    for complex values): a gradient of the gradient, and its JVP, agree with differences in
    the real and the imaginary direction (autograd's second-order checks of np.abs)."""
    z = np.array([0.3 + 0.4j, -1.0 + 0.2j, 0.5 - 0.7j])
    w = np.array([0.2 - 0.1j, 0.5 + 0.3j, -0.4 + 0.6j])
    df = ys.gradient(lambda z: np.sum(np.abs(z) ** 3 + np.abs(z)))

    def paired(z):
        return np.real(np.sum(df(z) * w))
    _, (g,) = ys.grad(paired, z)
    eps = 1e-6
    numeric = [(paired(z + eps * e) - paired(z - eps * e)) / (2 * eps)
               - 1j * (paired(z + 1j * eps * e) - paired(z - 1j * eps * e)) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(g, numeric, rtol=1e-7, atol=1e-8)
    _, tangent = ys.jvp(df, (z,), (w,))
    np.testing.assert_allclose(tangent, (df(z + eps * w) - df(z - eps * w)) / (2 * eps),
                               rtol=1e-7, atol=1e-8)


def _phase_free_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    weights = np.cos(np.arange(u.size)).reshape(u.shape)
    return np.sum(np.abs(u) * weights) + np.sum(s ** 2 * np.arange(1.0, s.size + 1)) \
        + np.sum(np.abs(vh) ** 3) + np.real(np.sum((u @ np.conj(u.T)) * (1 - 2j)))


def _phase_free_eigh(a, uplo="L"):
    w, v = np.linalg.eigh(a, uplo)
    return np.sum(w * np.arange(1.0, w.size + 1)) + np.sum(np.abs(v) * np.sin(np.arange(v.size)).reshape(v.shape))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_complex_eigh_and_svd_gradients_of_phase_free_functions(shape):
    """autograd's convention for complex svd and eigh (docs/complex.md): the gradient of a real
    function of the singular values, |u|, |vh| and the projector u u^H, and of the eigenvalues
    and |v| of the Hermitian matrix numpy reads from one triangle, agrees with central
    differences along the real and the imaginary part of each element; so does the JVP. They
    were refused ('its rule is written for real matrices')."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    cases = [(_phase_free_svd, (a,))]
    if shape[0] == shape[1]:
        cases += [(_phase_free_eigh, (a,)), (lambda m: _phase_free_eigh(m, "U"), (a,))]
    for fn, args in cases:
        _, (g,) = ys.grad(fn, *args)
        np.testing.assert_allclose(g, complex_numerical_grad(fn, args, 0), rtol=1e-6, atol=1e-7)
        t = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        eps = 1e-6
        _, tangent = ys.jvp(fn, args, (t,))
        np.testing.assert_allclose(tangent, (fn(a + eps * t) - fn(a - eps * t)) / (2 * eps),
                                   rtol=1e-6, atol=1e-7)


def test_complex_svd_values_second_order():
    """The gradient of the nuclear norm (its rule calls svd with vectors) differentiated
    again: autograd's second-order check of norm(x, 'nuc') for a complex x."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    w = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    df = ys.gradient(lambda x: np.linalg.norm(x, ord="nuc"))

    def paired(x):
        return np.real(np.sum(df(x) * w))
    _, (g,) = ys.grad(paired, a)
    np.testing.assert_allclose(g, complex_numerical_grad(paired, (a,), 0), rtol=1e-5, atol=1e-6)


def test_the_gradient_of_the_gradient_of_a_p_norm_of_complex_values():
    """norm(z, ord=3)'s rule wrote np.sign(z) |z|^2, and np.sign of a complex value has no
    derivative: its gradient, differentiated again, was refused (autograd's
    test_vector_norm_ord_complex). Written z |z|, it agrees with differences."""
    rng = np.random.default_rng(6)
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    w = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    for order in (3, 4):
        df = ys.gradient(lambda z: np.linalg.norm(z, ord=order))

        def paired(z):
            return np.real(np.sum(df(z) * w))
        _, (g,) = ys.grad(paired, z)
        np.testing.assert_allclose(g, complex_numerical_grad(paired, (z,), 0), rtol=1e-6,
                                   atol=1e-7)
