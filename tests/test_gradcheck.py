"""Every rule and many whole programs against central finite differences, in float64.

A table of ``Case(name, fn, make_args, tol)``: each case is compiled with the verifier on after
every stage, run, and compared element by element with ``numerical_grad``. ``weighted`` sums
its argument with fixed, distinct weights, so a gradient that lands on the wrong element (a bad
transpose, a bad scatter) fails.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import differentiable, numerical_grad
from yota_s2s.ir import verify

from .programs import models


@dataclass
class Case:
    name: str
    fn: Callable
    make_args: Callable[[np.random.Generator], tuple]
    tol: float = 1e-6


def weighted(y):
    """sum(y * c) with fixed weights c that differ per element."""
    return np.sum(y * np.cos(np.arange(np.size(y)) + 1.0).reshape(np.shape(y)))


def normal(*shape):
    return lambda r: tuple(r.standard_normal(s) if s != () else r.standard_normal() for s in shape)


def positive(*shape):
    return lambda r: tuple(r.uniform(0.5, 2.0, s) for s in shape)


def unit(*shape):
    return lambda r: tuple(r.uniform(-0.8, 0.8, s) for s in shape)


def distinct(*shapes):
    """Values with no ties, within or across arguments (max/min/where are not smooth at ties)."""
    def make(r):
        sizes = [int(np.prod(s)) for s in shapes]
        values = r.permutation(sum(sizes)) * 0.37 + 0.1
        parts = np.split(values, np.cumsum(sizes)[:-1])
        return tuple(p.reshape(s) if s != () else float(p[0]) for p, s in zip(parts, shapes))
    return make


SHAPES = [(), (3,), (2, 3)]
PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((), (2, 3)), ((2, 1), (1, 3))]

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
    Case("float_array_mix", lambda a, x: a * np.sum(x) + float(np.sum(x ** 2)) * a ** 2, lambda r: (0.7, r.standard_normal(3))),
    Case("builtin_abs_sum_max", lambda x: abs(x[0]) + sum([x[1], x[2]]) + max(x[0], x[1]), lambda r: (np.array([-1.3, 0.4, 2.0]),)),
]

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
    Case("helper_calls_args_kwargs", models.helper_calls, normal((3,), (3,))),
    Case("guard_taken", models.with_guard, positive((4,))),
    Case("guard_not_taken", models.with_guard, lambda r: (-r.uniform(0.5, 2, 4),)),
    Case("python_floats", models.python_floats, lambda r: (0.4, -1.2)),
    Case("loops_and_branches", lambda x: models.loops_and_branches(x, 5), normal((3, 2))),
    Case("containers", models.containers, normal((3,), (3,))),
    Case("lambdas_and_closures", models.lambdas_and_closures, normal((3,), (3,))),
]

CASES = RULE_CASES + PROGRAMS


def leaf_values(tape, args: tuple) -> list:
    """The argument leaf behind each tape input, by its field path."""
    def leaf(i):
        value = args[i.argnum]
        for key in i.path:
            value = value[key]
        return value
    return [leaf(i) for i in tape.inputs]


def check_case(case: Case, args: tuple) -> None:
    compiled = compile_grad(case.fn, args, check=True)
    verify.run(compiled.tape, leaf_values(compiled.tape, args), check_avals=True)
    value, *grads = compiled.fn(*args)
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
