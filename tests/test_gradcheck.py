"""Every rule and many whole programs against central finite differences, in float64.

A table of ``Case(name, fn, make_args, tol)``: each case is compiled with the verifier on after
every stage, run, and compared element by element with ``numerical_grad``. ``weighted`` sums
its argument with fixed, distinct weights, so a gradient that lands on the wrong element (a bad
transpose, a bad scatter) fails.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import differentiable, numerical_grad
from yota_s2s.ir import verify
from yota_s2s.rules.indexing import index_add

from .programs import loop_regions, loops, models, updates


@dataclass
class Case:
    name: str
    fn: Callable
    make_args: Callable[[np.random.Generator], tuple]
    tol: float = 1e-6


def _crosses_2_vectors() -> bool:
    """Whether this numpy's np.cross takes 2-vectors (numpy < 2.5)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.cross(np.ones(2), np.ones(2))
        except ValueError:
            return False
    return True


def weighted(y):
    """sum(y * c) with fixed weights c that differ per element."""
    return np.sum(y * np.cos(np.arange(np.size(y)) + 1.0).reshape(np.shape(y)))


def squares(v):
    """sum(v * v): the product of a value with itself (two gradient parts, one buffer)."""
    return np.sum(v * v)


def scaled_sine(a, s=0.5):
    return np.sin(a) * s + a


def write_through_view_of_one(x):
    v = x * 0.262
    v.T[-1] = np.cos(x.T[-1])
    return np.sum(np.sin(v))


def empty_index_lists(x):
    """``x[[]]``, ``x[[[], []]]``, ``x[..., [[[]]]]``: an empty list indexes with integers."""
    rows = np.concatenate([x[[]], x[[2, 0]], x[[[], []]].reshape(0, 3)])
    return weighted(rows) + weighted(x[..., [[[]]]]) + weighted(x[[], 1])


def empty_index_arrays(x):
    """Constant index arrays of shapes (0, 1) and (0,): they pick a (0, 0) array."""
    rows, cols = np.array([], dtype=int)[:, None], np.array([], dtype=int)
    return weighted(x[rows, cols] + x[1, :0]) + weighted(x[np.arange(0)]) + weighted(x)


def updated_at_no_element(x):
    """Writes through empty index lists and arrays: nothing changes, and ``x`` keeps all of
    its gradient (an empty list indexes with integers, as numpy reads it)."""
    y = x * 1.0
    y[[]] = 5.0
    y[:, np.array([], dtype=int)] = x[:, :0] * 2.0
    y[np.array([[], [], []], dtype=bool)] = 7.0
    return weighted(y ** 2)


def range_picked(P, y):
    """CS231n's softmax loss reads P[range(N), y] and writes dP[range(N), y] -= 1."""
    N = P.shape[0]
    dP = P * 1.0
    dP[range(N), y] -= 1
    return weighted(P[range(N), y]) + weighted(dP[range(1, N, 2)])


def padded(X, pr1, pr2, pc1, pc2):
    """numpy-ml's padding: an array of ints known when compiling decides the branch."""
    if any(np.array([pr1, pr2, pc1, pc2]) < 0):
        raise ValueError("padding must be non-negative")
    return weighted(np.pad(X, ((pr1, pr2), (pc1, pc2))))


def eig_magnitudes(a):
    """|w| and |v| of np.linalg.eig: unchanged by each eigenvector's phase (autograd's test)."""
    w, v = np.linalg.eig(a)
    return weighted(np.abs(w)) + weighted(np.abs(v))


def normal(*shape):
    return lambda r: tuple(r.standard_normal(s) if s != () else r.standard_normal() for s in shape)


def positive(*shape):
    return lambda r: tuple(r.uniform(0.5, 2.0, s) for s in shape)


def unit(*shape):
    return lambda r: tuple(r.uniform(-0.8, 0.8, s) for s in shape)


def above_one(*shape):
    return lambda r: tuple(r.uniform(1.5, 3.0, s) for s in shape)


def spd(n, batch=()):
    """Symmetric positive definite matrices (cholesky)."""
    def make(r):
        b = r.standard_normal(batch + (n, n))
        return (b @ np.swapaxes(b, -1, -2) + n * np.eye(n),)
    return make


def symmetric(n):
    """A symmetric matrix with well-separated eigenvalues (eigh)."""
    def make(r):
        q, _ = np.linalg.qr(r.standard_normal((n, n)))
        return ((q * np.arange(1.0, n + 1)) @ q.T,)
    return make


def well_conditioned(*shapes):
    """Square matrices far from singular (a multiple of the identity plus noise)."""
    return lambda r: tuple(r.standard_normal(s) * 0.3 + np.eye(s[-1]) * 2 for s in shapes)


def distinct(*shapes):
    """Values with no ties, within or across arguments (max/min/where are not smooth at ties)."""
    def make(r):
        sizes = [int(np.prod(s)) for s in shapes]
        values = r.permutation(sum(sizes)) * 0.37 + 0.1
        parts = np.split(values, np.cumsum(sizes)[:-1])
        return tuple(p.reshape(s) if s != () else float(p[0]) for p, s in zip(parts, shapes))
    return make


SHAPES = [(), (3,), (2, 3), (1, 3), (0, 3)]              # size-1 and empty axes included
PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((), (2, 3)), ((2, 1), (1, 3)),
         ((0, 3), (3,)), ((1, 1), (1,))]

UNARY = [
    ("exp", lambda x: weighted(np.exp(x)), normal),
    ("log", lambda x: weighted(np.log(x)), positive),
    ("log1p", lambda x: weighted(np.log1p(x)), positive),
    ("expm1", lambda x: weighted(np.expm1(x)), normal),
    ("sqrt", lambda x: weighted(np.sqrt(x)), positive),
    ("square", lambda x: weighted(np.square(x)), normal),
    ("reciprocal", lambda x: weighted(np.reciprocal(x)), positive),
    ("sin", lambda x: weighted(np.sin(x)), normal),
    ("cos", lambda x: weighted(np.cos(x)), normal),
    ("tan", lambda x: weighted(np.tan(x)), unit),
    ("tanh", lambda x: weighted(np.tanh(x)), normal),
    ("sinh", lambda x: weighted(np.sinh(x)), normal),
    ("cosh", lambda x: weighted(np.cosh(x)), normal),
    ("arcsin", lambda x: weighted(np.arcsin(x)), unit),
    ("arccos", lambda x: weighted(np.arccos(x)), unit),
    ("arctan", lambda x: weighted(np.arctan(x)), normal),
    ("abs", lambda x: weighted(np.abs(x)), positive),
    ("neg", lambda x: weighted(-x), normal),
    ("pow_int", lambda x: weighted(x ** 3), normal),
    ("pow_half", lambda x: weighted(x ** 0.5), positive),
    ("rpow", lambda x: weighted(2.0 ** x), normal),
    ("sign_nodiff", lambda x: weighted(np.sign(x) * x), positive),
    ("exp2", lambda x: weighted(np.exp2(x)), normal),
    ("log2", lambda x: weighted(np.log2(x)), positive),
    ("log10", lambda x: weighted(np.log10(x)), positive),
    ("cbrt", lambda x: weighted(np.cbrt(x)), positive),
    ("arcsinh", lambda x: weighted(np.arcsinh(x)), normal),
    ("arccosh", lambda x: weighted(np.arccosh(x)), above_one),
    ("arctanh", lambda x: weighted(np.arctanh(x)), unit),
    ("fabs", lambda x: weighted(np.fabs(x)), positive),
    ("absolute_negative", lambda x: weighted(np.absolute(-x)), positive),
    ("deg2rad_radians", lambda x: weighted(np.deg2rad(x) + np.radians(x) ** 2), normal),
    ("rad2deg_degrees", lambda x: weighted(np.rad2deg(x) + np.degrees(x) ** 2), normal),
    ("sinc", lambda x: weighted(np.sinc(x)), normal),
    ("nan_to_num", lambda x: weighted(np.nan_to_num(np.log(x - 0.2))), positive),
    ("real_imag_conj", lambda x: weighted(np.real(x) * 2 + np.conj(x) + np.conjugate(x) * np.imag(x)), normal),
    ("angle_of_real", lambda x: weighted(np.angle(x) * x + np.angle(x, deg=True)), normal),
    ("negative_power", lambda x: weighted(np.negative(x) + np.power(x, 3) + np.true_divide(x, 2.0)), normal),
    ("rounding_nodiff", lambda x: weighted(x * (np.floor(x) + np.ceil(x) + np.round(x, 1) + np.rint(x)
                                               + np.trunc(x) + np.fix(x) + np.signbit(x))), normal),
    ("tests_nodiff", lambda x: weighted(x * (np.isfinite(x) + np.isinf(x) + np.isnan(x) + np.isclose(x, 0.5)
                                             + np.logical_and(x > 0, x < 1) + np.logical_or(x > 0, x < -1)
                                             + np.logical_not(x > 0) + np.logical_xor(x > 0, x > 1))), normal),
]
BINARY = [
    ("add", lambda a, b: weighted(a + b), normal),
    ("sub", lambda a, b: weighted(a - b), normal),
    ("mul", lambda a, b: weighted(a * b), normal),
    ("div", lambda a, b: weighted(a / b), positive),
    ("pow", lambda a, b: weighted(a ** b), positive),
    ("np_multiply", lambda a, b: weighted(np.multiply(a, b) + np.subtract(a, b)), normal),
    ("maximum", lambda a, b: weighted(np.maximum(a, b)), distinct),
    ("minimum", lambda a, b: weighted(np.minimum(a, b)), distinct),
    ("where", lambda a, b: weighted(np.where(a > b, a * 2, b)), distinct),
    ("mod", lambda a, b: weighted(a % b), positive),
    ("np_divide_remainder", lambda a, b: weighted(np.divide(a, b) + np.remainder(a, b) + np.mod(b, a)), positive),
    ("np_add_power", lambda a, b: weighted(np.add(a, b) * np.power(a, b)), positive),
    ("arctan2", lambda a, b: weighted(np.arctan2(a, b)), positive),
    ("hypot", lambda a, b: weighted(np.hypot(a, b)), normal),
    ("logaddexp", lambda a, b: weighted(np.logaddexp(a, b)), normal),
    ("logaddexp2", lambda a, b: weighted(np.logaddexp2(a, b)), normal),
    ("fmax", lambda a, b: weighted(np.fmax(a, b)), distinct),
    ("fmin", lambda a, b: weighted(np.fmin(a, b)), distinct),
]

RULE_CASES: list[Case] = []
for name, fn, dist in UNARY:
    for shape in SHAPES:
        RULE_CASES.append(Case(f"{name}{list(shape)}", fn, dist(shape)))
for name, fn, dist in BINARY:
    for sa, sb in PAIRS:
        RULE_CASES.append(Case(f"{name}{list(sa)}{list(sb)}", fn, dist(sa, sb)))

RULE_CASES += [
    Case("clip", lambda x: weighted(np.clip(x, -0.5, 0.5)), distinct((2, 3))),
    Case("clip_lower", lambda x: weighted(np.clip(x, 0.3, None)), distinct((4,))),
    Case("clip_bounds", lambda x, lo: weighted(np.clip(x, lo, 1.0)), lambda r: (r.uniform(0, 2, 5), r.uniform(0.9, 1.1, 5))),
    Case("clip_upper_bound", lambda x, hi: weighted(np.clip(x, None, hi)), lambda r: (r.uniform(0, 2, 5), r.uniform(0.9, 1.1, 5))),
    Case("index_add_buffer", lambda x, v: weighted(index_add(np.zeros(3) + x, np.array([0, 0, 2]), v)), normal((3,), (3,))),
    Case("index_add_two_buffers", lambda x, v: weighted(index_add(x * 1.0, np.array([1]), v) * index_add(x * 1.0, np.array([2]), v)), normal((3,), (1,))),
    Case("sum", lambda x: np.sum(x) * 2.0, normal((2, 3))),
    Case("sum_axis0", lambda x: weighted(np.sum(x, axis=0)), normal((2, 3, 4))),
    Case("sum_axis_tuple", lambda x: weighted(np.sum(x, axis=(0, 2))), normal((2, 3, 4))),
    Case("sum_keepdims", lambda x: weighted(x.sum(axis=1, keepdims=True)), normal((2, 3))),
    Case("sum_neg_axis", lambda x: weighted(x.sum(-1)), normal((2, 3))),
    Case("mean", lambda x: np.mean(x), normal((2, 3))),
    Case("mean_axis", lambda x: weighted(x.mean(axis=0)), normal((4, 3))),
    Case("mean_keepdims", lambda x: weighted(np.mean(x, axis=1, keepdims=True)), normal((2, 3))),
    Case("max", lambda x: np.max(x), distinct((2, 3))),
    Case("max_axis", lambda x: weighted(np.max(x, axis=1)), distinct((3, 4))),
    Case("amax_keepdims", lambda x: weighted(np.amax(x, axis=0, keepdims=True)), distinct((3, 4))),
    Case("min_method", lambda x: weighted(x.min(axis=0)), distinct((3, 4))),
    Case("prod", lambda x: np.prod(x), normal((2, 3))),
    Case("prod_axis", lambda x: weighted(np.prod(x, axis=1)), normal((3, 4))),
    Case("prod_with_zero", lambda x: weighted(np.prod(x * np.array([1.0, 0.0, 1.0]), axis=1)), normal((2, 3))),
    Case("matmul_2d", lambda a, b: weighted(a @ b), normal((3, 4), (4, 5))),
    Case("matmul_vec_mat", lambda a, b: weighted(a @ b), normal((4,), (4, 5))),
    Case("matmul_mat_vec", lambda a, b: weighted(a @ b), normal((3, 4), (4,))),
    Case("matmul_vec_vec", lambda a, b: a @ b, normal((4,), (4,))),
    Case("matmul_batched", lambda a, b: weighted(a @ b), normal((2, 3, 4), (2, 4, 5))),
    Case("matmul_batch_broadcast", lambda a, b: weighted(a @ b), normal((2, 3, 4), (4, 5))),
    Case("matmul_batch_broadcast_left", lambda a, b: weighted(np.matmul(a, b)), normal((3, 4), (2, 4, 5))),
    Case("matmul_vec_batched", lambda a, b: weighted(a @ b), normal((4,), (2, 4, 5))),
    Case("matmul_batched_vec", lambda a, b: weighted(a @ b), normal((2, 3, 4), (4,))),
    Case("dot_2d", lambda a, b: weighted(np.dot(a, b)), normal((3, 4), (4, 2))),
    Case("dot_1d", lambda a, b: np.dot(a, b), normal((4,), (4,))),
    Case("dot_method", lambda a, b: weighted(a.dot(b)), normal((3, 4), (4,))),
    Case("reshape", lambda x: weighted(np.reshape(x, (3, 2)) @ np.ones(2)), normal((2, 3))),
    Case("reshape_method", lambda x: weighted(x.reshape(6, 1) * x.reshape(-1)[:, None]), normal((2, 3))),
    Case("transpose_T", lambda x: weighted(x.T), normal((2, 3))),
    Case("transpose_axes", lambda x: weighted(np.transpose(x, (2, 0, 1))), normal((2, 3, 4))),
    Case("transpose_method", lambda x: weighted(x.transpose(1, 0, 2)), normal((2, 3, 4))),
    Case("expand_dims", lambda x: weighted(np.expand_dims(x, 1) * x[:, None, :]), normal((2, 3))),
    Case("squeeze", lambda x: weighted(np.squeeze(x)), normal((2, 1, 3))),
    Case("squeeze_axis", lambda x: weighted(x.squeeze(axis=1)), normal((2, 1, 3))),
    Case("broadcast_to", lambda x: weighted(np.broadcast_to(x, (4, 3))), normal((3,))),
    Case("concatenate", lambda a, b: weighted(np.concatenate([a, b, a])), normal((2, 3), (1, 3))),
    Case("concatenate_axis1", lambda a, b: weighted(np.concatenate((a, b), axis=1)), normal((2, 3), (2, 2))),
    Case("stack", lambda a, b: weighted(np.stack([a, b])), normal((2, 3), (2, 3))),
    Case("stack_axis1", lambda a, b: weighted(np.stack([a, b, a], axis=1)), normal((2, 3), (2, 3))),
    Case("ravel_flatten", lambda x: weighted(x.ravel() + x.flatten()), normal((2, 3))),
    Case("index_int", lambda x: x[1] * x[-1] + x[0] ** 2, normal((5,))),
    Case("index_slices", lambda x: weighted(x[1:, ::2]) + weighted(x[::-1, -2]), normal((4, 5))),
    Case("index_none_ellipsis", lambda x: weighted(x[None, ..., 1] * x[..., None, 0]), normal((3, 4))),
    Case("index_int_array", lambda x: weighted(x[np.array([0, 2, 2, 1])]), normal((4, 3))),
    Case("index_list_repeats", lambda x: weighted(x[[1, 1, 0], 2]), normal((3, 4))),
    Case("index_rows_cols", lambda x: weighted(x[np.array([0, 1]), np.array([2, 2])]), normal((3, 4))),
    Case("index_mixed_use", lambda x: np.sum(x * x[0]) + x[1, 2], normal((3, 4))),
    Case("astype", lambda x: weighted(x.astype(np.float32).astype(np.float64) * x), normal((3,)), tol=1e-2),
    Case("creation", lambda x: weighted(x * np.ones(3) + np.zeros_like(x) + np.arange(3.0) * x + np.full(3, 2.0)), normal((3,))),
    Case("np_array_of_traced", lambda a, b: weighted(np.array([a, b * 2.0]) * np.asarray(a)), normal((3,), (3,))),
    Case("float_math", lambda a: math.exp(a) + math.log(a + 3.0) + math.sqrt(a + 3.0) + math.tanh(a) * math.cos(a), lambda r: (0.3,)),
    Case("float_math_more", lambda a: math.sin(a) * math.tan(a) + math.asin(a) + math.acos(a) * math.atan(a)
         + math.sinh(a) * math.cosh(a) + math.expm1(a) + math.log1p(a) + math.fabs(a - 1.0), lambda r: (0.3,)),
    Case("complex_real_part", lambda a: (complex(a) * (2 + 1j)).real + a ** 2, lambda r: (0.7,)),
    Case("complex_intermediates", models.complex_intermediates, normal((3,), (3,))),
    Case("float_array_mix", lambda a, x: a * np.sum(x) + float(np.sum(x ** 2)) * a ** 2, lambda r: (0.7, r.standard_normal(3))),
    Case("builtin_abs_sum_max", lambda x: abs(x[0]) + sum([x[1], x[2]]) + max(x[0], x[1]), lambda r: (np.array([-1.3, 0.4, 2.0]),)),
]



def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return m[..., 0] + np.log(np.sum(np.exp(x - m), axis=-1))


REDUCTIONS = [
    Case("std", lambda x: np.std(x), normal((2, 3))),
    Case("std_axis_ddof", lambda x: weighted(np.std(x, axis=0, ddof=1)), normal((4, 3))),
    Case("var_keepdims", lambda x: weighted(x.var(axis=1, keepdims=True)), normal((2, 3))),
    Case("var_ddof", lambda x: np.var(x, ddof=1) + x.std(axis=(0, 1)), normal((3, 2))),
    Case("var_size1_axis", lambda x: weighted(np.var(x, axis=0) + np.mean(x, axis=1)), normal((1, 3))),
    Case("cumsum", lambda x: weighted(np.cumsum(x)), normal((2, 3))),
    Case("cumsum_axis", lambda x: weighted(x.cumsum(axis=0)), normal((3, 2))),
    Case("cumprod", lambda x: weighted(np.cumprod(x)), normal((2, 3))),
    Case("cumprod_axis_with_zero", lambda x: weighted(np.cumprod(x * np.array([1.0, 0.0, 1.0]), axis=1)), normal((2, 3))),
    Case("cumprod_axis0", lambda x: weighted(x.cumprod(axis=0)), normal((3, 2))),
    Case("diff", lambda x: weighted(np.diff(x)), normal((5,))),
    Case("diff_n2_axis0", lambda x: weighted(np.diff(x, n=2, axis=0)), normal((4, 3))),
    Case("nansum", lambda x: weighted(np.nansum(np.where(x > 1.0, np.nan, x), axis=1)), normal((3, 4))),
    Case("nanmean", lambda x: weighted(np.nanmean(np.where(x > 1.0, np.nan, x), axis=0)) + np.nanmean(x), normal((4, 3))),
    Case("sum_empty", lambda x, y: np.sum(x) + np.mean(y), normal((0, 3), (2, 3))),
    Case("logsumexp_stable", lambda x: weighted(logsumexp(x)), lambda r: (r.standard_normal((2, 4)) * 3 + 800.0,)),
    Case("norm_vector", lambda x: np.linalg.norm(x), normal((4,))),
    Case("norm_flattened", lambda x: np.linalg.norm(x), normal((2, 3, 2))),
    Case("norm_ord1_inf_p", lambda x: np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf) + np.linalg.norm(x, 3)
         + np.linalg.norm(x, -np.inf) + np.linalg.norm(x, 0), distinct((5,))),
    Case("norm_axis_keepdims", lambda x: weighted(np.linalg.norm(x, axis=1, keepdims=True)), normal((3, 4))),
    Case("norm_matrix_fro_nuc", lambda x: np.linalg.norm(x, "fro") + np.linalg.norm(x, "nuc"), normal((3, 4))),
    Case("norm_matrix_2", lambda x: np.linalg.norm(x, 2) + np.linalg.norm(x, -2), normal((4, 3))),
    Case("norm_matrix_1_inf", lambda x: np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf)
         + np.linalg.norm(x, -1) + np.linalg.norm(x, -np.inf), distinct((3, 4))),
    Case("norm_matrix_axes", lambda x: weighted(np.linalg.norm(x, axis=(0, 2)) + np.linalg.norm(x, 1, axis=(2, 0))), distinct((3, 2, 4))),
]

SHAPE_OPS = [
    Case("ravel_fn", lambda x: weighted(np.ravel(x) * 2), normal((2, 3))),
    Case("atleast", lambda x, s: weighted(np.atleast_1d(s) + np.atleast_2d(x) + np.atleast_3d(x)[..., 0]), normal((3,), ())),
    Case("swapaxes", lambda x: weighted(np.swapaxes(x, 0, 2) + x.swapaxes(2, 0)), normal((2, 3, 4))),
    Case("moveaxis", lambda x: weighted(np.moveaxis(x, 0, -1)), normal((2, 3, 4))),
    Case("rollaxis", lambda x: weighted(np.rollaxis(x, 2) * 2) + weighted(np.rollaxis(x, 0, 3)), normal((2, 3, 4))),
    Case("flip", lambda x: weighted(np.flip(x, 0) + np.flip(x)), normal((2, 3))),
    Case("fliplr_flipud", lambda x: weighted(np.fliplr(x) * np.flipud(x)), normal((3, 3))),
    Case("rot90", lambda x: weighted(np.rot90(x)) + weighted(np.rot90(x, 3, axes=(1, 0)) ** 2), normal((2, 3))),
    Case("roll", lambda x: weighted(np.roll(x, 2) + np.roll(x, (1, -1), axis=(0, 1))), normal((3, 4))),
    Case("copy", lambda x: weighted(np.copy(x) * x.copy()), normal((3,))),
    Case("hstack_vstack", lambda a, b: weighted(np.hstack([a, b])) + weighted(np.vstack((a, b, a))), normal((2, 3), (2, 3))),
    Case("hstack_1d", lambda a, b, s: weighted(np.hstack((a, s, b))), normal((2,), (3,), ())),
    Case("vstack_1d", lambda a, b: weighted(np.vstack([a, b])), normal((3,), (3,))),
    Case("dstack", lambda a, b: weighted(np.dstack([a, b])), normal((2, 3), (2, 3))),
    Case("column_stack", lambda a, b: weighted(np.column_stack((a, b))), normal((3,), (3, 2))),
    Case("concatenate_none", lambda a, b: weighted(np.concatenate((a, b), axis=None)), normal((2, 2), (3,))),
    # one array where numpy takes a sequence: its rows (np.vstack(x) of a 1-D x is a column)
    Case("vstack_of_one_array", lambda a, m: weighted(np.vstack(a)) + weighted(np.vstack(m)), normal((3,), (2, 3, 2))),
    Case("hstack_of_one_array", lambda a, m: weighted(np.hstack(a)) + weighted(np.hstack(m)), normal((3,), (2, 3))),
    Case("column_stack_of_one_array", lambda a, m: weighted(np.column_stack(a)) + weighted(np.column_stack(m)),
         normal((3,), (2, 3, 2))),
    Case("dstack_concatenate_stack_of_one_array",
         lambda m: weighted(np.dstack(m)) + weighted(np.concatenate(m)) + weighted(np.stack(m, axis=1)), normal((2, 3))),
    Case("r_and_c_of_traced_values", lambda a, m, s: weighted(np.r_[a, np.ones(2), 1:4, s]) + weighted(np.r_[m, m * 2])
         + weighted(np.c_[a, a ** 2, np.arange(3.0)]) + weighted(np.c_[m, s * m]), normal((3,), (2, 3), ())),
    Case("column_stack_3d", lambda a, b: weighted(np.column_stack((a, b))), normal((2, 3, 2), (2, 1, 2))),
    # a list of traced values given to a numpy function: the array np.asarray makes of it
    Case("mean_std_var_of_a_list", lambda x: np.mean([x, x + 2]) + np.std([x, x * x]) + np.var([np.sin(x), x]),
         normal((3,))),
    Case("norm_of_a_list", lambda x, s: np.linalg.norm([x, x * s]) + np.linalg.norm([s, 2.0 * s, 1.0]), normal((3,), ())),
    Case("sum_of_a_list_of_scalars", lambda a, x: np.sum([1, a * a, 2]) * np.sum([np.sum(x), np.sum(x * x)]), normal((), (3,))),
    Case("max_of_a_list", lambda a, b: np.max([a, b]) + np.min((a, 2 * b)) + np.prod([[a, b], [b, 1.0]]), normal((), ())),
    # a static tuple as a ufunc operand is an array (the exponent's rule computes x2 - 1)
    Case("power_of_a_tuple", lambda a: weighted(np.power(a, (1.5, 2.0, 2.5))) + weighted(np.add(a, [1.0, 2.0, 3.0])),
         positive((3,))),
    # public models' forms (issue 35): a range as an index, numpy's memory order, several arrays
    Case("range_index", range_picked, lambda r: (r.standard_normal((4, 3)), np.array([0, 2, 1, 1]))),
    Case("reshape_order_f", lambda x: weighted(x.reshape((3, 4), order="F")) + weighted(np.reshape(x.T, 12, order="F") ** 2)
         + weighted(x.reshape(2, 6, order="F")[:, 1:]), normal((4, 3))),
    Case("atleast_2d_of_several", lambda g, b: weighted(np.atleast_2d(g, b)[0] * np.atleast_2d(g, b)[1].T), normal((3,), ())),
    Case("static_ints_in_an_array_decide_a_branch", padded, lambda r: (r.standard_normal((3, 3)), 1, 0, 2, 1)),
    Case("append", lambda a, b: weighted(np.append(a, b)) + weighted(np.append(a, a * b, axis=0)), normal((2, 3), (3,))),
    Case("cross", lambda a, b: weighted(np.cross(a, b)), normal((4, 3), (3,))),
    # the vectors along other axes (autograd's test_cross): moveaxis, cross, moveaxis
    Case("cross_along_axes", lambda a, b: weighted(np.cross(a, b, axisa=0, axisb=1, axisc=0)),
         normal((3, 4), (4, 3))),
    Case("cross_along_axis", lambda a, b: weighted(np.cross(a, b, axis=0)), normal((3, 2), (3, 2))),
    # 2-vectors (the z component): deprecated in numpy 2.0, an error from numpy 2.5
    *([Case("cross_of_2_vectors", lambda u, v: weighted(np.cross(u, v)), normal((2,), (5, 2)))]
      if _crosses_2_vectors() else []),
    Case("select", lambda x: weighted(np.select([x < -0.5, x > 0.5], [x ** 2, np.sin(x)], default=x * 3))
         + weighted(np.select([x > 0], [x])), normal((6,))),
    *([Case("row_stack", lambda a, b: weighted(np.row_stack((a, b))), normal((3,), (2, 3)))] if hasattr(np, "row_stack") else []),
    Case("real_if_close_of_a_real_array", lambda a: weighted(np.real_if_close(a) ** 2), normal((3,))),
    Case("gradient_1d", lambda f, h: weighted(np.gradient(f)) + weighted(np.gradient(f * f, h, edge_order=2)), lambda r: (r.standard_normal(6), 0.7)),
    Case("gradient_2d", lambda f: weighted(np.gradient(f)[0]) + weighted(np.gradient(f, 2.0, axis=1) ** 2)
         + sum(weighted(g) * (k + 1) for k, g in enumerate(np.gradient(f, 0.5, 2.0, edge_order=2))), normal((4, 5))),
    Case("einsum_sublists", lambda a, b: weighted(np.einsum(a, [0, 1], b, [1, 2], [0, 2])) + weighted(np.einsum(a, [Ellipsis, 1], a, [Ellipsis, 1])),
         normal((2, 3), (3, 4))),
    Case("eig_complex_pairs", eig_magnitudes, lambda r: (r.standard_normal((4, 4)),)),
    Case("eig_real", eig_magnitudes, lambda r: (np.diag([1.0, 2.0, 3.5]) + 0.3 * r.standard_normal((3, 3)),)),
    Case("where_of_lists", lambda a, b: weighted(np.where([True, False], [a, b], (b, a))), normal((), ())),
    Case("concatenate_empty", lambda a, b: weighted(np.concatenate([a, b])), normal((0, 3), (2, 3))),
    Case("split", lambda x: sum(weighted(p) * (i + 1) for i, p in enumerate(np.split(x, 3))), normal((6, 2))),
    Case("split_indices_axis", lambda x: weighted(np.split(x, [1, 3], axis=1)[1]), normal((2, 5))),
    Case("array_split", lambda x: sum(np.sum(p ** 2) * (i + 1) for i, p in enumerate(np.array_split(x, 3))), normal((7,))),
    Case("hsplit_vsplit_dsplit", lambda x: weighted(np.hsplit(x, 2)[1]) + weighted(np.vsplit(x, 2)[0] ** 2)
         + weighted(np.dsplit(x, [1])[1]), normal((2, 4, 3))),
    Case("tile", lambda x: weighted(np.tile(x, (2, 3))), normal((2, 2))),
    Case("tile_more_dims", lambda x: weighted(np.tile(x, (2, 1, 2))), normal((3,))),
    Case("repeat", lambda x: weighted(np.repeat(x, 3)), normal((2, 2))),
    Case("repeat_axis", lambda x: weighted(x.repeat(2, axis=1)), normal((2, 3))),
    Case("repeat_counts", lambda x: weighted(np.repeat(x, [1, 0, 3], axis=0)), normal((3, 2))),
    Case("pad_constant", lambda x: weighted(np.pad(x, ((1, 2), (0, 1)))), normal((2, 3))),
    Case("pad_modes", lambda x: weighted(np.pad(x, 2, mode="reflect") + np.pad(x, 2, mode="edge")
                                          + np.pad(x, 2, mode="wrap") + np.pad(x, (2, 2), "symmetric")), normal((3, 4))),
]

INDEXING = [
    Case("index_bool_mask", lambda x: weighted(x[x > 0.2]) + np.sum(x[np.array([True, False, True])] ** 2), normal((3, 2))),
    Case("index_mixed_advanced", lambda x: weighted(x[np.array([0, 2]), :, np.array([1, 0])]), normal((3, 2, 4))),
    Case("index_advanced_middle", lambda x: weighted(x[:, [1, 1, 0], 1:]), normal((2, 3, 4))),
    Case("index_negative_steps", lambda x: weighted(x[::-2, -1::-1]), normal((5, 3))),
    Case("index_newaxis", lambda x: weighted(x[np.newaxis, :, None] * x[..., np.newaxis]), normal((3,))),
    Case("take", lambda x: weighted(np.take(x, [0, 3, 3])), normal((2, 3))),
    Case("take_axis", lambda x: weighted(x.take(np.array([2, 0, 2]), axis=1)), normal((2, 3))),
    Case("take_wrap", lambda x: weighted(np.take(x, [4, -1], mode="wrap")), normal((3,))),
    Case("delete", lambda x: weighted(np.delete(x, [0, 2])) + weighted(np.delete(x, 1, axis=1)), normal((2, 3))),
    Case("delete_slice", lambda x: weighted(np.delete(x, slice(0, 3, 2), axis=0)), normal((4, 2))),
    Case("take_along_axis", lambda x: weighted(np.take_along_axis(x, np.argsort(x, axis=1), axis=1)), distinct((3, 4))),
    Case("take_along_axis0", lambda x: weighted(np.take_along_axis(x, np.array([[1, 0, 1]]), axis=0)), normal((2, 3))),
    # empty index lists (integers, as numpy reads them) and empty constant index arrays (written
    # with their dtype and shape: a list [] would lose both)
    Case("index_empty_lists", empty_index_lists, normal((3, 3))),
    Case("index_empty_int_arrays", empty_index_arrays, normal((3, 3))),
    Case("index_empty_bool_array", lambda x: weighted(np.concatenate([x[:, :0][np.array([[], [], []], bool)], x[0]])),
         normal((3, 3))),
    Case("take_empty", lambda x: weighted(np.take(x, [])) + weighted(np.take(x, [], axis=1)) + weighted(x.take([1])),
         normal((3, 3))),
    Case("update_at_no_element", updated_at_no_element, normal((3, 3))),
    Case("sort", lambda x: weighted(np.sort(x)), distinct((3, 4))),
    Case("sort_axis0_none", lambda x: weighted(np.sort(x, axis=0)) + weighted(np.sort(x, axis=None) ** 2), distinct((3, 4))),
    Case("partition", lambda x: weighted(np.partition(x, 2)), distinct((2, 6))),
    Case("partition_axis0", lambda x: weighted(np.partition(x, (0, 2), axis=0)), distinct((4, 3))),
    Case("argmax_argsort_nodiff", lambda x: weighted(x[np.argmax(x)] * x[np.argmin(x, axis=0)] + x[np.argsort(x)]
                                                   + x[np.argpartition(x, 2)]), distinct((5,))),
    Case("where_indices_nodiff", lambda x: weighted(x[np.nonzero(x > 0.5)]) + weighted(x[np.flatnonzero(x > 1.0)])
         + weighted(x[np.where(x < 0.5)[0]] ** 2)
         + np.sum(np.argwhere(x > 0.5) * x[0]) + np.count_nonzero(x > 0) * x[1], distinct((6,))),
    Case("searchsorted_all_any_nodiff", lambda x: x[np.searchsorted(np.sort(x), 0.9)] * (np.all(x > 0) + np.any(x > 2))
         + x[0] * np.allclose(x, x) + x[1] * np.array_equal(x, x), distinct((4,))),
]

PRODUCTS = [
    Case("vdot", lambda a, b: np.vdot(a, b), normal((2, 3), (3, 2))),
    Case("inner", lambda a, b: weighted(np.inner(a, b)), normal((2, 3), (4, 3))),
    Case("inner_1d_scalar", lambda a, b: np.inner(a, b) + weighted(np.inner(a, 2.0)), normal((3,), (3,))),
    Case("outer", lambda a, b: weighted(np.outer(a, b)), normal((3,), (2, 2))),
    Case("kron", lambda a, b: weighted(np.kron(a, b)), normal((2, 3), (3, 2))),
    Case("kron_mixed_ndim", lambda a, b: weighted(np.kron(a, b)), normal((3,), (2, 2))),
    Case("tensordot", lambda a, b: weighted(np.tensordot(a, b)), normal((2, 3, 4), (3, 4, 5))),
    Case("tensordot_axes", lambda a, b: weighted(np.tensordot(a, b, axes=([0, 2], [2, 0]))), normal((2, 3, 4), (4, 5, 2))),
    Case("tensordot_int0", lambda a, b: weighted(np.tensordot(a, b, 0)), normal((2,), (3,))),
    Case("dot_nd", lambda a, b: weighted(np.dot(a, b)), normal((2, 3, 4), (5, 4, 2))),
    Case("dot_scalar", lambda a, b: weighted(np.dot(a, b)), normal((), (3,))),
    Case("einsum_matmul", lambda a, b: weighted(np.einsum("ij,jk->ik", a, b)), normal((2, 3), (3, 4))),
    Case("einsum_implicit", lambda a, b: weighted(np.einsum("ij,kj", a, b)), normal((2, 3), (4, 3))),
    Case("einsum_trace_diag", lambda a: np.einsum("ii", a) + weighted(np.einsum("ii->i", a)), normal((3, 3))),
    Case("einsum_sum_broadcast", lambda a, b: weighted(np.einsum("ij,k->ik", a, b)), normal((2, 3), (4,))),
    Case("einsum_ellipsis", lambda a, b: weighted(np.einsum("...ij,...jk->...ik", a, b)), normal((2, 2, 3), (3, 4))),
    Case("einsum_three", lambda a, b, c: np.einsum("i,ij,j->", a, b, c), normal((2,), (2, 3), (3,))),
    Case("einsum_repeated_batch", lambda a: weighted(np.einsum("bii->bi", a)), normal((2, 3, 3))),
]

LINALG = [
    Case("inv", lambda a: weighted(np.linalg.inv(a)), well_conditioned((3, 3))),
    Case("inv_batched", lambda a: weighted(np.linalg.inv(a)), well_conditioned((2, 3, 3))),
    Case("det", lambda a: np.linalg.det(a), well_conditioned((3, 3))),
    Case("det_batched", lambda a: weighted(np.linalg.det(a)), well_conditioned((2, 3, 3))),
    Case("det_singular", lambda a: weighted(np.linalg.det(a)),       # the adjugate: no inverse
         lambda r: (np.stack([np.outer(r.standard_normal(3), r.standard_normal(3))
                              + np.outer(r.standard_normal(3), r.standard_normal(3)),
                              np.outer(r.standard_normal(3), r.standard_normal(3))]),)),
    Case("slogdet", lambda a: weighted(np.linalg.slogdet(a)[1]) + np.sum(np.linalg.slogdet(a)[0]), well_conditioned((2, 3, 3))),
    Case("solve", lambda a, b: weighted(np.linalg.solve(a, b)), lambda r: (well_conditioned((3, 3))(r)[0], r.standard_normal((3, 2)))),
    Case("solve_vector", lambda a, b: weighted(np.linalg.solve(a, b)), lambda r: (well_conditioned((3, 3))(r)[0], r.standard_normal(3))),
    Case("pinv_tall", lambda a: weighted(np.linalg.pinv(a)), normal((4, 3))),
    Case("pinv_wide", lambda a: weighted(np.linalg.pinv(a)), normal((2, 3))),
    Case("cholesky", lambda a: weighted(np.linalg.cholesky(a)), spd(3)),
    Case("cholesky_upper_batched", lambda a: weighted(np.linalg.cholesky(a, upper=True)), spd(3, (2,))),
    Case("cholesky_of_product", lambda b: weighted(np.linalg.cholesky(b @ b.T + 3 * np.eye(3))), normal((3, 3))),
    Case("eigh", lambda a: weighted(np.linalg.eigh(a)[0]) + weighted(np.linalg.eigh(a)[1] ** 2), symmetric(4)),
    Case("eigh_upper_values", lambda a: weighted(np.linalg.eigh(a, UPLO="U")[0] ** 2), symmetric(3)),
    Case("svd_square", lambda a: weighted(np.linalg.svd(a)[1]) + weighted(np.linalg.svd(a)[0] ** 2), normal((3, 3))),
    Case("svd_tall", lambda a: weighted(np.linalg.svd(a, full_matrices=False)[1])
         + weighted(np.linalg.svd(a, full_matrices=False)[0] ** 2) + weighted(np.linalg.svd(a, full_matrices=False)[2] ** 2), normal((4, 3))),
    Case("svd_wide", lambda a: weighted(np.linalg.svd(a, full_matrices=False)[2] ** 2)
         + weighted(np.linalg.svd(a, full_matrices=False)[0] ** 2), normal((2, 4))),
    Case("svd_values", lambda a: weighted(np.linalg.svd(a, compute_uv=False)), normal((3, 2))),
    Case("qr", lambda a: weighted(np.linalg.qr(a)[0]) + weighted(np.linalg.qr(a)[1]), normal((4, 3))),
    Case("qr_r_only", lambda a: weighted(np.linalg.qr(a)[1] ** 2), normal((3, 3))),
    Case("diag", lambda v, m: weighted(np.diag(v, 1)) + weighted(np.diag(m, -1)) + weighted(np.diag(m)), normal((3,), (3, 4))),
    Case("diagonal", lambda a: weighted(np.diagonal(a, 1)) + weighted(a.diagonal(0, 2, 1)), normal((3, 4, 3))),
    Case("trace", lambda a, b: np.trace(a) + np.trace(a, 1) + weighted(b.trace(axis1=1, axis2=2)) + np.trace(a, axis1=1, axis2=0),
         normal((3, 4), (2, 3, 3))),
    Case("tril_triu", lambda a: weighted(np.tril(a) + np.triu(a, 1) ** 2), normal((3, 4))),
]

UPDATES = [
    Case("update_fill_in_loop", updates.fill_in_loop, normal((4,))),
    Case("update_copy_then_set", updates.copy_then_set, normal((3, 3), (3,))),
    Case("update_mask_to_zero", updates.mask_to_zero, normal((5,))),
    Case("update_scale_in_place", updates.scale_in_place, normal((3,), (3,))),
    Case("update_write_through_view", updates.write_through_view, normal((4,))),
    Case("update_old_value_still_needed", updates.old_value_still_needed, normal((3,), (3,))),
    Case("update_repeated_index", updates.repeated_index, normal((4,), (3,))),
    Case("update_rows_and_columns", updates.rows_and_columns, normal((3, 4), (2,))),
    Case("update_lists_of_traced", updates.lists_of_traced, normal((3,))),
    Case("update_sort_and_fill_methods", updates.sort_and_fill_methods, distinct((4,))),
    Case("update_nested_item", updates.nested_item, normal((2, 3))),
]

def value_minus_itself(x0):
    """The fuzzer's G10: an accumulation that a pass rewrote into a one-operand statement."""
    v1 = np.einsum("ijk,ijk->ijk", x0, x0)
    v2 = v1[1:, :2]
    v8 = np.negative(v2)
    v9 = v2 - v2
    return np.sum(np.tanh(v8) * v8) + np.sum(v9)


def element_of_a_size_one_constant(x0):
    """Fuzz seed 31552: the gradient of sum(keepdims) is a broadcast constant [1.0]; one
    element of it was the (1,) array itself (an inhomogeneous xp.array([...]) in scalar mode)."""
    v3 = x0 * 0.336
    v3.T[-1] = np.cos(x0.T[-1])
    v6 = np.sum(v3, axis=0, keepdims=True)
    return np.sum(v6)


def one_element_read_twice(x0):
    """Fuzz seed 40387: x[-3] and x[0] of a 3-vector in scalar mode, one element named once."""
    v3 = np.sin(x0 * 2.0) - x0
    return v3[-3] + np.sum(np.minimum(x0, float(v3[0])))


def sum_over_axes_of_a_written_view(x1):
    """Fuzz seed 40657: the (1,) seed constant broadcast back to a (1, 1) value's shape."""
    v2 = x1 * -1.395
    v2.T[-1] = np.cos(x1.T[-1])
    return np.sum(v2.sum(axis=(0, 2)))


def written_through_a_view_in_scalar_mode(x1):
    """Fuzz G12: a small vector written through a view, its elements read as Python floats."""
    v2 = x1[[3, 1]]
    v4 = v2 * 0.912
    v4.T[-1] = np.cos(v2.T[-1])
    return np.sum(np.sin(v4))


def _filled_diagonal(x):
    a = np.outer(x, np.cos(x))
    np.fill_diagonal(a, x[::-1] * 2.0)
    return a


def _put_putmask_place(x):
    a = np.outer(x, x)
    np.put(a, [0, -1], np.sin(x[:2]))
    np.putmask(a, a > 3.0, x * 10.0)
    np.place(a, a < 2.5, x[1:] ** 2)
    return a


# internal crashes and silent zeros of issue 10: each was a crash (or a zero gradient) before
CRASHES = [
    # issue 29: nan from 0 * 0 ** -1, a crash, a nan from 0 / 0
    Case("pow_zero_exponent_at_zero", lambda x, e: weighted(sum((k + 1.0) * x ** k for k in range(3))
                                                           + x[:, None] ** np.arange(3) + x ** e),
         lambda r: (np.array([0.0, 0.7, -1.3]), np.array([0, 2, 3]))),    # e: a traced int array
    Case("fill_diagonal", lambda x: weighted(_filled_diagonal(x)), normal((3,))),
    Case("put_putmask_place", lambda x: weighted(_put_putmask_place(x)), lambda r: (np.array([1.0, 2.1, 3.2]),)),
    Case("where_unselected_branch", lambda x: weighted(np.where(x >= 0, np.sin(x), np.sqrt(-x) * 2.0))
         + weighted(np.clip(np.log(x * x), -1.0, 1.0)) + weighted(np.where(np.abs(x) < 1, np.arccos(x), x)),
         lambda r: (np.array([[0.3, -1.2, 2.5], [-0.4, 1.7, 0.8]]),)),
    Case("prod_empty", lambda x: np.prod(x[:0]) + weighted(np.prod(x[:, :0], axis=1)) + weighted(x),
         normal((2, 3))),
    Case("std_one_element", lambda x: weighted(np.std(x, axis=1)) + np.std(x[0]) + weighted(x), normal((3, 1))),
    Case("sum_size_one", lambda x: np.sum(x) * 2.0, normal((1,))),
    Case("sum_size_one_matrix", lambda x: np.sum(x), normal((1, 1))),
    Case("outer_python_float_operand", lambda x, a: weighted(np.outer(x, a)) + weighted(np.outer(a, x)),
         lambda r: (r.standard_normal(3), 0.7)),
    Case("python_types_as_dtypes", lambda x: weighted(x * x.astype(int) + x.astype(bool) * x + x.astype(float) ** 2
                                                      + np.zeros(3, dtype=float) + np.ones(3, dtype=int) * x),
         lambda r: (r.uniform(-3, 3, 3),)),
    Case("full_traced_fill_value", lambda x, a: weighted(np.full((2, 3), x) * a + np.full_like(x, a) * x
                                                         + np.full(3, np.sum(x))), lambda r: (r.standard_normal(3), 0.7)),
    Case("einsum_size_one_axes", lambda c, d: weighted(np.einsum("ij,jk->ik", c, c)) + weighted(np.einsum("ij,jk->ik", d, c)),
         normal((1, 4), (3, 1))),
    Case("element_of_a_computed_vector", lambda a, x: weighted(np.atleast_1d(a)[0] * x),
         lambda r: (r.standard_normal(1), np.array(0.4))),
    Case("item_of_size_one_arrays", lambda x, m: x.item() * 2.0 + m.item() ** 2 + np.sum(m).item() * x.item(),
         normal((1,), (1, 1))),
    Case("item_with_an_index", lambda x: np.sum(x) * x.item(1) + x.item(1, 0) ** 2 + np.sum(x > 0).item() * x.item(3),
         normal((2, 2))),
    Case("numpy_scalar_types_of_python_floats", lambda x, a: weighted(x * np.float64(a)) + np.real(np.sum(x * np.complex128(a))),
         lambda r: (r.standard_normal(3), 0.7)),
    Case("python_floats_through_inner_and_float", lambda x, c: float(np.sum(np.inner(x, 0.5))) ** 2 + x * c,
         lambda r: (0.3, 0.7)),
    Case("prod_tuple_of_axes", lambda x, y: weighted(np.prod(x, axis=(0, 2))) + weighted(y.prod(axis=(-1, 0), keepdims=True))
         + np.prod(x, axis=(0, 1, 2)), normal((2, 3, 2), (3, 1))),
    Case("value_minus_itself", value_minus_itself, normal((2, 3, 4))),
    Case("element_of_a_size_one_constant", element_of_a_size_one_constant, normal((4,))),
    Case("one_element_read_twice", one_element_read_twice, normal((3,))),
    Case("sum_over_axes_of_a_written_view", sum_over_axes_of_a_written_view, normal((2, 1, 4))),
    Case("sum_of_a_size_one_axis_then_sum", lambda x: np.sum(np.sum(x[:, None], axis=-1)), normal((1, 3))),
    Case("written_through_a_view_in_scalar_mode", written_through_a_view_in_scalar_mode, normal((4,))),
    Case("outer_with_a_python_float_then_mean", lambda x, s: weighted(np.outer(np.exp(x), s).mean(axis=-2, keepdims=True)),
         lambda r: (r.standard_normal((2, 3)), 0.283)),
    Case("linspace_traced_ends", lambda x, a: weighted(np.linspace(a, np.sum(x), 5) ** 2)
         + weighted(np.cos(np.linspace(x, a, 4, endpoint=False))), lambda r: (r.standard_normal(3), 0.7)),
]

RULE_CASES += REDUCTIONS + SHAPE_OPS + INDEXING + PRODUCTS + LINALG + UPDATES + CRASHES

PROGRAMS: list[Case] = [
    Case("seed_loss", models.seed_loss, normal((4, 6), (4,), (6, 3))),
    Case("polynomial", models.polynomial, normal((8,)), tol=1e-5),
    Case("logistic_regression", models.logistic_regression,
         lambda r: (r.standard_normal(5), 0.1, r.standard_normal((20, 5)), (r.random(20) > 0.5) * 1.0)),
    Case("mlp_softmax_xent", models.mlp,
         lambda r: (r.standard_normal((6, 5)) * 0.5, r.standard_normal(5), r.standard_normal((5, 3)) * 0.5,
                    r.standard_normal(3), r.standard_normal((4, 6)), np.eye(3)[[0, 2, 1, 2]])),
    Case("rnn_python_loop", models.rnn,
         lambda r: (r.standard_normal((3, 4)) * 0.5, r.standard_normal((4, 4)) * 0.5, r.standard_normal(4),
                    r.standard_normal((5, 2, 3)), r.standard_normal((2, 4)))),
    # loop regions (issue 12): kept as loops, and loops that stay unrolled (a data branch,
    # a changing shape, break, an early return)
    Case("region_rnn", loop_regions.rnn, lambda r: loop_regions.rnn_args(9, seed=4)),
    Case("region_rnn_input_products_first", loop_regions.rnn_leaving_two,
         lambda r: loop_regions.rnn_batched_args(T=12, seed=5)),
    Case("region_rnn_input_products_second", loop_regions.rnn_input_second,
         lambda r: loop_regions.rnn_batched_args(T=8, seed=6)),
    Case("region_cyclic_index", loop_regions.cyclic, normal((12,))),
    Case("region_in_helper", loop_regions.calls_region,
         lambda r: (r.standard_normal((4, 4)) * 0.4, r.standard_normal(4), r.standard_normal((9, 4)))),
    Case("region_in_region", loop_regions.nested,
         lambda r: (r.standard_normal((4, 4)) * 0.4, r.standard_normal((8, 4)) * 0.2)),
    Case("region_rows_written", loop_regions.written_rows,
         lambda r: (r.standard_normal((3, 3)), r.standard_normal((10, 3)))),
    Case("region_rows_appended", loop_regions.appended,
         lambda r: (r.standard_normal((3, 3)), r.standard_normal((10, 3)))),
    Case("unrolled_data_branch", loop_regions.branchy, positive((10,))),
    Case("unrolled_changing_shape", loop_regions.growing, normal((10,))),
    Case("unrolled_break", loop_regions.breaking, normal((10,))),
    Case("unrolled_early_return", loop_regions.returning, lambda r: (r.standard_normal(10) * 0.1,)),
    Case("helper_calls_args_kwargs", models.helper_calls, normal((3,), (3,))),
    Case("guard_taken", models.with_guard, positive((4,))),
    Case("guard_not_taken", models.with_guard, lambda r: (-r.uniform(0.5, 2, 4),)),
    Case("python_floats", models.python_floats, lambda r: (0.4, -1.2)),
    Case("loops_and_branches", lambda x: models.loops_and_branches(x, 5), normal((3, 2))),
    Case("containers", models.containers, normal((3,), (3,))),
    Case("lambdas_and_closures", models.lambdas_and_closures, normal((3,), (3,))),
    Case("write_through_transpose", models.write_through_transpose, normal((4, 3))),
    Case("write_through_alias_and_slice", models.write_through_alias_and_slice, normal((5,))),
    Case("np_add_at_repeated_index", models.scatter_add, normal((4,), (3,))),
    # issue 10 #1: two parts of one gradient (a view of a joined array's gradient and a
    # product written into the returned array) were given one name in the buffered form
    Case("parts_concatenate_cos", lambda x: np.sum(np.concatenate([x, np.cos(x)]) ** 2),
         normal((3,))),
    Case("parts_stack_cos", lambda x: np.sum(np.stack([x, np.cos(x)]) ** 2), normal((3,))),
    Case("parts_reshape_arccos",
         lambda x: np.sum(np.concatenate([x.reshape(2, 3), np.arccos(x).reshape(2, 3)]) ** 2),
         unit((6,))),
    Case("parts_arctan2_second", lambda x, y: np.sum(np.concatenate([x, np.arctan2(y, x)]) ** 2),
         normal((3,), (3,))),
    # issue 10 #2: returned 0-d gradients were views into work arrays (a later call changed an
    # earlier result)
    # fuzzer seed 204: a ufunc wrote its result over a read-only broadcast (a gradient of 1s)
    Case("sum_plus_broadcast_ones",
         lambda x: np.sum(scaled_sine(x, s=1.307)) + np.sum(np.sin(x.sum(axis=0, keepdims=True))),
         normal((2, 3, 4))),
    # fuzzer seed 1052: scalar mode unpacked a one-element array written inline (no name)
    Case("scalar_mode_write_through_view", write_through_view_of_one, normal((1,))),
    Case("returned_0d_view", lambda a: squares(a[None]), lambda r: (np.array(r.standard_normal()),)),
    Case("returned_0d_hstack", lambda x, c: squares(np.hstack([np.sin(x), c])),
         lambda r: (r.standard_normal(3), np.array(r.standard_normal()))),
    Case("returned_0d_hstack_0d", lambda x, c: squares(np.hstack([np.sin(x), c])),
         lambda r: (np.array(r.standard_normal()), np.array(r.standard_normal()))),
    Case("returned_0d_outer", lambda c, a: squares(np.outer(c, a)),
         lambda r: (r.standard_normal(3), np.array(r.standard_normal()))),
    Case("returned_0d_tile", lambda a: squares(np.tile(a, 2)),
         lambda r: (np.array(r.standard_normal()),)),
]



def signed_rows(steps, width):
    """Rows whose sums alternate in sign, far from zero (a branch on the sum at every step)."""
    def make(r):
        signs = np.where(np.arange(steps) % 3 == 1, -1.0, 1.0)[:, None]
        return r.standard_normal((steps, width)) * 0.2 + 0.5 * signs, r.standard_normal(width) * 0.5
    return make


# issue 12: loops. Today every loop is unrolled; these are the referee for loop regions (the
# first group must become regions, the second, "loop_fallback_*", must stay unrolled and guarded).
LOOPS: list[Case] = [
    Case("loop_carried_array", loops.carried_array, lambda r: (r.standard_normal((4, 4)) * 0.4,
                                                               r.standard_normal(4))),
    Case("loop_per_step_input", loops.per_step_input, normal((12, 3), (3,), (3,))),
    Case("loop_per_step_output", loops.per_step_output, normal((9, 3), (3,))),
    Case("loop_previous_step", loops.previous_step, normal((10, 2, 3), (3,))),
    Case("loop_over_first_axis", loops.over_first_axis, normal((11, 2, 3), (2, 3))),
    Case("loop_zip", loops.zipped, normal((9, 3), (9, 3), (3,))),
    Case("loop_enumerate", loops.enumerated, lambda r: (r.standard_normal((8, 3)), r.standard_normal(3))),
    Case("loop_nested_regions", loops.nested, lambda r: (r.standard_normal((8, 3)) * 0.5,
                                                         r.standard_normal((8, 3)), r.standard_normal(3))),
    Case("loop_nested_short_inner", loops.nested_short_inner, normal((9, 2, 3), (3,))),
    Case("loop_in_helper", loops.loop_in_helper, normal((10, 3), (3,), (3,))),
    Case("loop_while_static", loops.while_static, lambda r: (r.standard_normal(3) * 0.5,
                                                             r.uniform(0.2, 0.8, 3))),
    Case("loop_append_stack", loops.append_and_stack, normal((8, 2, 3), (2, 3))),
    Case("loop_ring_index_arithmetic", loops.ring, normal((12,))),
    Case("loop_reversed_range", loops.reversed_range, normal((10, 3), (3,))),
    Case("loop_accumulate_in_place", loops.accumulate_in_place, normal((9, 3), (3,))),
    Case("loop_rnn_summed", loops.rnn_summed,
         lambda r: (r.standard_normal((3, 4)) * 0.5, r.standard_normal((4, 4)) * 0.5, r.standard_normal(4),
                    r.standard_normal((12, 2, 3)), r.standard_normal((2, 4)))),
    Case("loop_continue_on_index", loops.continue_on_index, normal((10, 3), (3,))),
    Case("loop_decided_after", loops.decided_after, normal((10, 3), (3,))),
    Case("loop_after_loop", loops.loop_after_loop, normal((9, 3), (3,))),
    Case("loop_fallback_data_branch", loops.data_branch, signed_rows(10, 3)),
    Case("loop_fallback_growing_carry", loops.growing_carry, normal((2,))),
    Case("loop_fallback_break_on_index", loops.break_on_index, normal((14, 3), (3,))),
    Case("loop_fallback_break_on_data", loops.break_on_data,
         lambda r: (0.3 + 0.01 * r.standard_normal((12, 3)), np.full(3, 0.1))),
    Case("loop_fallback_early_return", loops.early_return, normal((12, 3), (3,))),
    Case("loop_fallback_short", loops.short_loop, normal((3, 3), (3,))),
]

CASES = RULE_CASES + PROGRAMS + LOOPS


def leaf_values(tape, args: tuple) -> list:
    """The argument leaf behind each tape input, by its field path."""
    def leaf(i):
        value = args[i.argnum]
        for key in i.path:
            value = value[key]
        return value
    return [leaf(i) for i in tape.inputs]


def check_case(case: Case, args: tuple) -> None:
    """The buffered form (the default) against finite differences, called twice so that work
    arrays reused across calls are checked too, and the plain form against the buffered."""
    compiled = compile_grad(case.fn, args, check=True)
    verify.run(compiled.tape, leaf_values(compiled.tape, args), check_avals=True)
    compiled.fn(*args)
    value, *grads = compiled.fn(*args)
    plain = compile_grad(case.fn, args, buffers=False).fn(*args)
    for a, b in zip(plain, (value, *grads)):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg="plain vs buffered")
    assert np.allclose(value, case.fn(*args), rtol=1e-12, atol=1e-12)
    assert len(grads) == len(args)
    for i, (arg, grad) in enumerate(zip(args, grads)):
        if not differentiable(arg):
            assert grad is None, f"argument {i} is not differentiable but got a gradient"
            continue
        expected = numerical_grad(case.fn, args, i)
        assert np.shape(grad) == np.shape(arg), f"argument {i}: gradient shape {np.shape(grad)}"
        np.testing.assert_allclose(grad, expected, rtol=case.tol, atol=case.tol,
                                   err_msg=f"argument {i} of {case.name}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_finite_differences(case: Case) -> None:
    check_case(case, case.make_args(np.random.default_rng(1)))


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 80


@pytest.mark.parametrize("case", [c for c in PROGRAMS if c.name in ("mlp_softmax_xent", "seed_loss")],
                         ids=lambda c: c.name)
def test_float32_inputs_give_float32_gradients(case: Case) -> None:
    args64 = case.make_args(np.random.default_rng(2))
    args = tuple(a.astype(np.float32) for a in args64)
    value, *grads = compile_grad(case.fn, args, check=True).fn(*args)
    assert np.asarray(value).dtype == np.float32
    for i, grad in enumerate(grads):
        assert grad.dtype == np.float32
        expected = numerical_grad(case.fn, [a.astype(np.float64) for a in args], i)
        np.testing.assert_allclose(grad, expected, rtol=2e-2, atol=2e-3)


def cast_to_float64_and_sum(x):
    return np.sum(x.astype(np.float64) ** 2)


def python_float_of_sum(x):
    return float(np.sum(x * x)) * 2.0


def sum_cast_to_float64(x):
    return np.sum(x * x).astype(np.float64)


@pytest.mark.parametrize("fn", [cast_to_float64_and_sum, python_float_of_sum, sum_cast_to_float64],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("buffers", [True, False])
def test_float32_program_with_float64_casts(fn, buffers: bool) -> None:
    """A float32 argument cast to float64 (or a Python float) on the way: the constant gradient
    of the cast used to crash the compiler (``1.0.astype``); it comes back float32."""
    x = np.random.default_rng(3).standard_normal(4).astype(np.float32)
    grad = compile_grad(fn, (x,), check=True, buffers=buffers).fn
    grad(x)
    value, dx = grad(x)
    assert np.isclose(value, fn(x), rtol=1e-6)
    assert dx.dtype == np.float32
    np.testing.assert_allclose(dx, numerical_grad(fn, [x.astype(np.float64)], 0), rtol=1e-4, atol=1e-4)


def float64_constants(x):
    return np.sum(x * np.float64(2.0)) + np.sum(x * np.log(2 * np.pi))


def complex128_constant(z):
    return np.sum(np.real(z * np.complex128(1 + 2j)))


@pytest.mark.parametrize("buffers", [True, False])
def test_numpy_float64_constants_widen_a_float32_program_as_in_numpy(buffers: bool) -> None:
    """``np.float64(2.0)``, ``np.log(2 * np.pi)`` are strong float64 operands under NumPy 2's
    promotion (NEP 50): ``x32 * np.float64(2.0)`` is float64. They used to become Python
    floats, so the generated code computed in float32 and returned a float32 value."""
    x = np.linspace(0.1, 0.9, 3).astype(np.float32)
    expected = float64_constants(x)
    assert expected.dtype == np.float64
    grad = compile_grad(float64_constants, (x,), check=True, buffers=buffers)
    for _ in range(2):
        value, dx = grad.fn(x)
        assert value.dtype == np.float64
        assert value == expected                    # the same float64 operations as numpy's
        assert dx.dtype == np.float32
        np.testing.assert_allclose(dx, np.full(3, 2.0 + np.log(2 * np.pi)), rtol=1e-6)
    # (the buffered form reads it from a 0-d float64 array made once: as strong as the scalar)
    assert ("\n_1_8378770664093453 = xp.array(1.8378770664093453)\n" if buffers
            else "xp.float64(1.8378770664093453)") in grad.text


@pytest.mark.parametrize("buffers", [True, False])
def test_numpy_complex128_constant_widens_a_complex64_program(buffers: bool) -> None:
    z = (np.arange(3.0) + 1j).astype(np.complex64)
    expected = complex128_constant(z)
    assert expected.dtype == np.float64
    grad = compile_grad(complex128_constant, (z,), check=True, buffers=buffers)
    for _ in range(2):
        value, dz = grad.fn(z)
        assert value.dtype == np.float64 and value == expected
        assert dz.dtype == np.complex64
        np.testing.assert_allclose(dz, np.full(3, 1 + 2j))


def squared_by_float64(x):
    return np.sum(x ** np.float64(2.0)) + np.sum(np.sqrt(x) ** np.float64(0.5))


def clipped_by_float64(x):
    return np.sum(np.clip(x, np.float64(0.2), np.float64(0.7)) * np.maximum(x, np.float64(0.3)))


def updated_by_float64(x):
    y = np.where(x > 0.5, x, np.float64(0.25))
    z = x * 1.0
    z *= np.float64(3.0)              # in place: stays float32, as in numpy
    return np.sum(y * z) + np.sum(x) / np.float64(3.0)


@pytest.mark.parametrize("fn", [squared_by_float64, clipped_by_float64, updated_by_float64],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("buffers", [True, False])
def test_float64_constants_with_float32_operands_compute_what_numpy_computes(fn, buffers):
    """``x32 ** np.float64(2.0)`` is float64: the buffered form used to write it as
    ``xp.square(x, out=<float64 work array>)``, squaring in float32."""
    x = np.linspace(0.1, 0.9, 5).astype(np.float32)
    expected = fn(x)
    grad = compile_grad(fn, (x,), check=True, buffers=buffers)
    for _ in range(2):
        value, dx = grad.fn(x)
        assert value.dtype == expected.dtype     # float64 (float32 for ** on numpy < 2.3)
        np.testing.assert_allclose(value, expected, rtol=1e-14)
        assert dx.dtype == np.float32


def log_two_pi(x):
    return np.sum(x * np.log(2 * np.pi) - 1 / np.sqrt(x.shape[0]) * x ** 2)


def test_float64_constant_in_a_float64_program_is_written_plainly() -> None:
    """Where every operand is float64 already the constant decides nothing: it reads as the
    plain float, not ``xp.float64(...)``."""
    x = np.linspace(0.1, 0.9, 3)
    grad = compile_grad(log_two_pi, (x,), check=True)
    assert "1.8378770664093453" in grad.text
    assert "xp.float64(" not in grad.text
    value, dx = grad.fn(x)
    assert value == log_two_pi(x)
    np.testing.assert_allclose(dx, np.log(2 * np.pi) - 2 / np.sqrt(3) * x)


def rule_constants(x):
    return np.sum(np.exp2(x) + np.log2(x) + np.deg2rad(x) * np.log10(x))


@pytest.mark.parametrize("buffers", [True, False])
def test_rule_constants_keep_a_float32_program_in_float32(buffers: bool) -> None:
    """The constants of derivative rules (``np.log(2.0)`` for exp2, ``np.pi / 180``) are math
    constants: they must not make a float32 program's backward pass float64."""
    x = np.linspace(0.5, 1.5, 4).astype(np.float32)
    grad = compile_grad(rule_constants, (x,), check=True, buffers=buffers)
    value, dx = grad.fn(x)
    assert value.dtype == np.float32 and dx.dtype == np.float32
    backward = grad.text.split("# -- backward --")[1]
    assert "float64" not in backward
    assert "'float64'" not in grad.text               # no float64 work array
    for line in backward.splitlines():
        assert "xp.float64" not in line
    np.testing.assert_allclose(dx, numerical_grad(rule_constants, [x.astype(np.float64)], 0),
                               rtol=1e-3, atol=1e-3)


def complex_numerical_grad(fn, args, i, eps=1e-6):
    """autograd's convention for a complex argument z = a + ib: dL/da - i dL/db."""
    def at(delta):
        moved = list(args)
        moved[i] = args[i] + delta
        return float(fn(*moved))
    z = np.asarray(args[i], dtype=complex)
    grad = np.zeros(z.shape, complex)
    for k in np.ndindex(z.shape):
        for step, part in ((eps, 1.0), (eps * 1j, -1j)):
            delta = np.zeros(z.shape, complex)
            delta[k] = step
            delta = delta if z.ndim else complex(delta)
            grad[k] += part * (at(delta) - at(-delta)) / (2 * eps)
    return grad if z.ndim else complex(grad)


def vdot_of_complex(a, x):
    return np.real(np.vdot(a, x * (1 + 2j))) + np.imag(np.vdot(x * a, a * 0.5))


def python_complex_argument(x, z):
    return np.sum(np.abs(x * z) ** 2) + np.real(z * np.sum(x))


@pytest.mark.parametrize("fn,make", [
    (vdot_of_complex, lambda r: (r.standard_normal(3) + 1j * r.standard_normal(3), r.standard_normal(3))),
    (python_complex_argument, lambda r: (r.standard_normal(3), 0.5 - 1.5j)),
], ids=["vdot_conjugates_a", "python_complex_argument"])
@pytest.mark.parametrize("buffers", [True, False])
def test_complex_arguments(fn, make, buffers: bool) -> None:
    """np.vdot conjugates its first operand (its gradients did not); a Python complex argument
    was refused by the argument check of the code compiled for it. Both forms, called twice."""
    args = make(np.random.default_rng(4))
    grad = compile_grad(fn, args, check=True, buffers=buffers).fn
    grad(*args)
    value, *grads = grad(*args)
    assert np.isclose(value, fn(*args))
    for i, g in enumerate(grads):
        expected = complex_numerical_grad(fn, args, i) if np.iscomplexobj(args[i]) \
            else numerical_grad(fn, args, i)
        assert type(g) is type(expected) or isinstance(g, np.ndarray)
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-6, err_msg=f"argument {i}")
