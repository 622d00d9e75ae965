"""Passes, before and after: the tape text (printer, no locations) is the expected value, and
the verifier and the interpreter check every optimized tape against the unoptimized one."""
from __future__ import annotations

import operator
import re

import numpy as np
import pytest

from yota_s2s import compiler, passes
from yota_s2s.compiler import gradient_tape, jvp_tape
from yota_s2s.errors import InternalError
from yota_s2s.ir import verify
from yota_s2s.ir.printer import format_tape
from yota_s2s.ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from yota_s2s.passes import STAGE_NAMES, cse, dce, fold, optimize, signs, simplify, stages_for
from yota_s2s.rules import RULES

WITHOUT_SIGNS = [fold, simplify, cse, dce]


def seed(W, b, x):
    return np.sum(W @ x + b[:, None])


def mean_rows(y, t):
    return np.mean(np.sum(t * np.log(y), axis=1))


def sigmoid_sum(x):
    return np.sum(1 / (1 + np.exp(-x)))


def outer_ones(A, v):
    return np.sum(A @ v) + np.sum(v @ A)


def text(tape) -> str:
    return format_tape(tape, locations=False)


def tapes(f, *args):
    _, raw = gradient_tape(f, args, passes=False)
    return raw, optimize(raw, RULES)


def test_ones_matrix_products_become_row_and_column_sums():
    raw, tape = tapes(seed, np.ones((2, 3)), np.ones(2), np.ones((3, 4)))
    assert "dt3:f64[2,4] = broadcast_to 1.0 (2, 4)\n  dt2:f64[2,1] = sum[axis=1, keepdims=True] dt3" in text(raw)
    assert "dW:f64[2,3] = matmul dt3 t4" in text(raw)
    assert text(tape).split("seed:f64[] = sum t3\n")[1] == """\
  t4:f64[3] = sum[axis=1] x
  t5:f64[2,3] = broadcast_to t4 (2, 3)
  t6:f64[3] = sum[axis=0] W
  t7:f64[3,1] = getitem[key=(:, None)] t6
  t8:f64[3,4] = broadcast_to t7 (3, 4)
  db:f64[2] = full (2,) 4.0
  dx:f64[3,4] = copy t8
  dW:f64[2,3] = copy t5
  return seed
  grads W: dW, b: db, x: dx"""


def test_views_and_scalings_of_broadcast_constants_fold():
    raw, tape = tapes(mean_rows, np.full((2, 3), 2.0), np.ones((2, 3)))
    assert "t5:f64[2,1] = expand_dims dt3 1" in text(raw)
    assert text(tape).split("mean_rows:f64[] = mean t3\n")[1] == """\
  dt:f64[2,3] = mul 0.5 t1
  dt1:f64[2,3] = mul t 0.5
  dy_:f64[2,3] = div dt1 y_
  return mean_rows
  grads y_: dy_, t: dt"""


def test_outer_product_with_ones_is_a_broadcast_sum():
    raw, tape = tapes(outer_ones, np.ones((2, 2)), np.ones(2))
    assert "broadcast_to 1.0" in text(raw) and "mul" in text(raw).split("outer_ones:f64[]")[1]
    assert "t6:f64[2,1] = getitem[key=(:, None)] v\n  dA:f64[2,2] = add t6 v" in text(tape)
    assert "broadcast_to 1.0" not in text(tape)


def test_signs_cancel_and_keep_the_gradient_name():
    _, raw = gradient_tape(sigmoid_sum, (np.ones(3),), passes=False)
    before = text(optimize(raw, RULES, WITHOUT_SIGNS))
    after = text(optimize(raw, RULES))
    assert before.count(" = neg ") == 3 and after.count(" = neg ") == 1     # -x in the forward
    assert after.split("sigmoid_sum:f64[] = sum t4\n")[1] == """\
  t5:f64[3] = div t4 t3
  dx:f64[3] = mul t5 t2
  return sigmoid_sum
  grads x: dx"""


def test_signs_turn_adding_a_negation_into_a_subtraction():
    def f(a, b):
        return np.sum(a * b - np.sin(a))
    _, raw = gradient_tape(f, (np.ones(3), np.ones(3)), passes=False)
    tape, changed = signs(optimize(raw, RULES, WITHOUT_SIGNS), RULES)
    assert changed and "da:f64[3] = sub b " in text(tape)


def renamed_and_merged(x):
    total = 0.0 + np.sin(x)                 # simplify: the sine is `total`
    again = np.cos(x)                       # CSE: the cosine of the rule is `again`
    return np.sum(total * 1.0) + np.sum(again)


def test_passes_change_no_var_and_no_other_tape():
    """Names learnt by simplify and CSE go into the tape's side tables: the forward tape and
    the unoptimized tape, which share the Vars, print as before (they printed the sine as
    `total` too, and `total_1` for the value it replaced)."""
    forward, raw = gradient_tape(renamed_and_merged, (np.ones(3),), passes=False)
    fields = {v: (v.hint, v.grad_of) for s in raw.stmts for v in s.outs}
    before = text(forward), text(raw)
    tape = optimize(raw, RULES)
    assert "total:f64[3] = sin x" in text(tape) and "again:f64[3] = cos x" in text(tape)
    assert (text(forward), text(raw)) == before
    assert {v: (v.hint, v.grad_of) for v in fields} == fields
    assert text(optimize(raw, RULES)) == text(tape)


@pytest.mark.parametrize("f, shapes", [(seed, [(2, 3), (2,), (3, 4)]), (mean_rows, [(2, 3), (2, 3)]),
                                       (sigmoid_sum, [(3,)]), (outer_ones, [(2, 2), (2,)])])
def test_optimized_tapes_compute_the_same_gradients(f, shapes):
    args = [np.random.default_rng(0).uniform(0.5, 2.0, s) for s in shapes]
    raw, tape = tapes(f, *args)
    verify.check(tape)
    expected = verify.run(raw, args, check_avals=True)
    got = verify.run(tape, args, check_avals=True)
    assert np.allclose(got[0], expected[0])
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def fill_loop(x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = x[i] * x[i - 1]
    return np.sum(out)


def test_reads_past_writes_to_other_elements_see_the_array_before():
    raw, tape = tapes(fill_loop, np.arange(1.0, 4.0))
    assert "getitem[key=2] dout" in text(raw)                 # dy read after dy[k] = 0 writes
    optimized = text(tape)
    assert "dout" not in optimized and "broadcast_to" not in optimized
    # one per element of x, nothing else: x[i] and x[i - 1] read each element twice, and the
    # two parts of its gradient are added before the one write (ad/sweep.py)
    assert optimized.count("index_add") == 3
    assert sorted(line.split()[-2] for line in optimized.splitlines() if "index_add" in line) \
        == ["0", "1", "2"]
    _, grads = verify.run(tape, [np.arange(1.0, 4.0)])
    np.testing.assert_allclose(grads[0], [2.0 + 3.0, 1.0 + 3.0, 2.0 + 1.0])


def scores(Q, K):
    return np.sum((Q @ K.T) ** 2)


def row_means(x, y):
    return np.sum(np.mean(x, axis=1, keepdims=True) * y)


def test_transposed_products_in_the_backward_are_made_in_reading_order():
    raw, tape = tapes(scores, np.ones((2, 3)), np.ones((4, 3)))
    assert "transpose" in text(raw).split("= sum t3\n")[1]
    after = text(tape)
    assert "t4:f64[4,2] = transpose dt2\n  dK:f64[4,3] = matmul t4 Q" in after
    assert "t1:f64[3,4] = transpose K" in after            # the forward keeps the user's K.T
    _, grads = verify.run(tape, [np.ones((2, 3)), np.ones((4, 3))])
    np.testing.assert_allclose(grads[1], 2 * (np.ones((2, 3)) @ np.ones((3, 4))).T @ np.ones((2, 3)))


def test_broadcasts_are_scaled_before_they_are_made():
    raw, tape = tapes(row_means, np.ones((2, 3)), np.ones((2, 5)))
    assert "div t" in text(raw) and "(2, 3)" in text(raw)
    after = text(tape)
    assert ":f64[2,1] = div" in after and ":f64[2,3] = div" not in after
    _, grads = verify.run(tape, [np.ones((2, 3)), np.ones((2, 5))])
    np.testing.assert_allclose(grads[0], np.full((2, 3), 5 / 3))


def test_fold_keeps_a_float64_constant_strong_and_a_python_one_weak():
    """``np.float64(2.0) - 1`` is a strong float64 (``x32 * it`` is float64, as the tape says),
    ``2.0 - 1`` a weak float: folding keeps each as it was (NEP 50)."""
    sub, mul = RULES.lookup(operator.sub), RULES.lookup(operator.mul)
    for const, out_dtype in [(np.float64(2.0), np.float64), (2.0, np.float32)]:
        x = Var(Aval((3,), np.dtype(np.float32)))
        c = Var(Aval.of(const - 1))
        y = Var(Aval((3,), np.dtype(out_dtype)))
        stmts = [Stmt((c,), sub, (Lit(const), Lit(1))), Stmt((y,), mul, (x, c))]
        tape = Tape("f", ("x",), [Input(x, 0)], stmts, result=y)
        folded, changed = fold(tape, RULES)
        assert changed and len(folded.stmts) == 1
        (lit,) = [a for a in folded.stmts[0].args if isinstance(a, Lit)]
        assert type(lit.value) is type(const) and lit.value == 1.0
        value, _ = verify.run(folded, [np.ones(3, np.float32)], check_avals=True)
        assert value.dtype == out_dtype


def logistic(w, X, y):
    p = 1 / (1 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))


def test_recompute_makes_cheap_forward_values_again_in_the_backward():
    """issue 14, peak memory: ``1 + e``, ``p + eps`` and ``1 - y`` (one cheap operation of
    values alive anyway) are made again where the backward reads them, not kept; the buffered
    pipeline only, and nothing for small arrays."""
    from yota_s2s.passes.recompute import MIN_SIZE, RULE, recompute
    r = np.random.default_rng(0)
    n = MIN_SIZE
    args = (r.standard_normal(5) * 0.1, r.standard_normal((n, 5)), (r.random(n) > 0.5) * 1.0)
    _, tape = gradient_tape(logistic, args)
    _, review = gradient_tape(logistic, args, review=True)
    again = [s for s in tape.stmts if s.rule == RULE]
    assert len(again) == 3 and not any(s.rule == RULE for s in review.stmts)
    assert {s.prim.ufunc for s in again} == {np.add, np.subtract}
    verify.check(tape)
    start = next(i for i, s in enumerate(tape.stmts) if s.rule is not None)
    for stmt in again:
        position = tape.stmts.index(stmt)
        assert position >= start                  # in the backward section
        reader = next(s for s in tape.stmts[position + 1:] if stmt.out in tuple(s.uses()))
        assert reader.rule is not None and reader.rule != RULE
        kept = next(s for s in tape.stmts[:start]               # the forward statement itself
                    if s.prim is stmt.prim and s.args == stmt.args and s.params == stmt.params)
        assert not any(kept.out in tuple(s.uses()) for s in tape.stmts[start:])
    small = tuple(a[:10] if a.ndim else a for a in args[1:])
    _, tape = gradient_tape(logistic, (args[0], *small))
    assert recompute(tape, RULES) == (tape, False)


def softplus_loss(x, w):
    return np.sum(np.logaddexp(0.0, x * w) * w) + np.sum(np.logaddexp(x, -1.5))


def test_lower_writes_logaddexp_with_a_number_as_simd_ufuncs():
    """issue 14: numpy's logaddexp is a scalar loop; ``logaddexp(c, x)`` with a finite number
    ``c`` is written as the same formula in SIMD ufuncs (max(x, c) + log1p(exp(-|x - c|))) in
    the buffered form on a CPU; the plain form, a GPU module and small arrays keep the call.
    Values as numpy's within a few ulp, infinities and nan as numpy's, gradients too."""
    import yota_s2s as ys
    from yota_s2s.passes.lower import MIN_SIZE, lower
    r = np.random.default_rng(1)
    x = r.standard_normal(MIN_SIZE) * 30
    x[:6] = [0.0, -0.0, 1e-300, -745.5, 800.0, -1.5]
    w = r.standard_normal(MIN_SIZE)
    df = ys.simplegrad(softplus_loss, x, w)
    text = ys.source(df)
    assert "xp.logaddexp" not in text and text.count("xp.log1p(") == 2
    assert "xp.logaddexp(" in ys.source(ys.simplegrad(softplus_loss, x, w, buffers=False))
    _, plain_tape = gradient_tape(softplus_loss, (x, w))
    assert any(s.prim.fn is np.logaddexp for s in plain_tape.stmts)     # device not said
    _, cpu_tape = gradient_tape(softplus_loss, (x, w), device="cpu")
    assert not any(s.prim.fn is np.logaddexp for s in cpu_tape.stmts)
    lowered, changed = lower(plain_tape, RULES)
    assert changed and not any(s.prim.fn is np.logaddexp for s in lowered.stmts)
    verify.check(lowered)
    assert lower(gradient_tape(softplus_loss, (x[:10], w[:10]))[1], RULES)[1] is False
    _, swept = gradient_tape(softplus_loss, (x, w), passes=False)
    for device, kept in (("cpu", False), ("cuda", True), (None, True)):
        optimized = optimize(swept, RULES, device=device)
        assert any(s.prim.fn is np.logaddexp for s in optimized.stmts) is kept
    value, dx, dw = df(x, w)
    assert np.isclose(value, softplus_loss(x, w), rtol=1e-14)
    hx, hw = ys.simplegrad(softplus_loss, x, w, buffers=False)(x, w)[1:]
    assert np.allclose(dx, hx, rtol=1e-13, atol=0) and np.allclose(dw, hw, rtol=1e-13, atol=0)

    def softplus(v):
        return np.logaddexp(0.0, v) + np.logaddexp(v, 2.5)
    special = np.concatenate([[np.inf, -np.inf, np.nan, 0.0, 2.5, 709.0, -709.0, 1e308, -1e308],
                              r.standard_normal(MIN_SIZE) * 40])
    with np.errstate(invalid="ignore", over="ignore"):     # 1e308 + log(2), inf - inf
        forward = ys.compile(softplus, special)
        got, want = forward(special), softplus(special)
    assert "xp.logaddexp" not in ys.source(forward)
    assert np.array_equal(got[:3], want[:3], equal_nan=True)
    assert np.allclose(got, want, rtol=4e-16, atol=0, equal_nan=True)
    for dtype in (np.float32,):
        v = special[9:].astype(dtype)
        f32 = ys.compile(softplus, v)
        assert "xp.logaddexp" not in ys.source(f32) and f32(v).dtype == dtype
        assert np.allclose(f32(v), softplus(v), rtol=3e-7, atol=0)
    from yota_s2s.codegen import blocks
    big = r.standard_normal(blocks.MIN_SIZE + 3) * 20         # in cache-blocked chains
    wide = r.standard_normal(big.shape[0])
    blocked = ys.simplegrad(softplus_loss, big, wide)
    assert "for start in range" in ys.source(blocked) and "xp.logaddexp" not in ys.source(blocked)
    got, want = blocked(big, wide), ys.simplegrad(softplus_loss, big, wide, buffers=False)(big, wide)
    assert np.isclose(got[0], want[0], rtol=1e-13)
    assert all(np.allclose(g, h, rtol=1e-12, atol=1e-15) for g, h in zip(got[1:], want[1:]))
    v = special[9:] / 40
    grad = ys.simplegrad(softplus_squared, v)(v)[1]
    assert np.allclose(grad, 2 * np.logaddexp(0.0, v) / (1 + np.exp(-v)), rtol=1e-14, atol=0)


def mean_loss(x):
    return np.mean(x * x) - np.mean(np.tanh(x))


def test_lower_writes_a_whole_mean_as_sum_over_count_with_the_same_bits():
    """issue 14: ``np.mean(x)`` of a whole float array is numpy's Python ``_mean`` (count, sum,
    divide); the buffered CPU form writes ``x.sum() / n``, which gives the same bits."""
    import yota_s2s as ys
    r = np.random.default_rng(2)
    for n, dtype in ((10000, np.float64), (7, np.float64), (1001, np.float32)):
        x = (r.standard_normal(n) * 3).astype(dtype)
        forward, df = ys.compile(mean_loss, x), ys.simplegrad(mean_loss, x)
        for text in (ys.source(forward), ys.source(df)):
            # (into the 0-d work array: numpy would make a 0-d array for the sum, issue 14)
            assert ".mean()" not in text and re.search(rf"\.sum\(out=buf\d+\)\[\(\)\] / {n}\b",
                                                       text)
        plain = ys.simplegrad(mean_loss, x, buffers=False)
        assert ".mean()" in ys.source(plain)
        assert forward(x) == mean_loss(x) and forward(x).dtype == dtype
        value, dx = df(x)
        assert value == plain(x)[0] and np.array_equal(dx, plain(x)[1])


def softplus_squared(v):
    return np.sum(np.logaddexp(0.0, v) ** 2)


def test_constant_invariant_folds_inside_a_loop_body():
    """A loop body reads a number where the region's operand is one: the backward loop's
    ``dtotal * 2 * h`` (``dtotal = 0.5`` from ``total * 0.5``) folds to ``h``, one array
    operation less per step, and the invariant is not written at all."""
    import re

    import yota_s2s as ys
    from yota_s2s.gradcheck import numerical_grad

    from .programs.loop_regions import rnn_args, rnn_rows
    args = rnn_args()
    for buffers in (True, False):
        df = ys.simplegrad(rnn_rows, *args, buffers=buffers)
        text = ys.source(df)
        backward = [line for line in text.split("for x in range(11, -1, -1):")[1].splitlines()
                    if not line.strip().startswith("#")]
        twice = re.compile(r"\*\s*2(\.0)?(?![\w.])|(?<![\w.])2(\.0)?\s*\*")    # "* 2", "2 *"
        assert "dtotal" not in text and not [line for line in backward if twice.search(line)]
        value, *grads = df(*args)
        assert np.isclose(value, rnn_rows(*args), rtol=1e-12)
        for i, g in enumerate(grads):
            assert np.allclose(g, numerical_grad(rnn_rows, list(args), i), rtol=1e-5, atol=1e-7)


def test_cse_takes_sums_and_products_in_either_order_as_one_value():
    def f(x, y):
        return np.sum(3 * x * y + y * (x * 3) + (x + y) * (y + x))
    args = (np.array([0.5, -1.5, 2.0]), np.array([1.25, 0.75, -3.0]))
    raw, tape = tapes(f, *args)
    after = text(tape)
    assert after.count("= mul 3 x") + after.count("= mul x 3") == 1
    assert after.count("= add x y") + after.count("= add y x") == 1
    verify.check(tape)
    expected, got = verify.run(raw, list(args)), verify.run(tape, list(args))
    assert got[0] == expected[0]
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_array_equal(g, e)          # IEEE + and * commute: the same bits
    x, y = args
    np.testing.assert_allclose(got[1][0], 6 * y + 2 * (x + y))


def _twice_negated(x):        # the gradient of - x[1] ** 2 * x[0]: -dy, read by two products
    s = x[0] * x[2] - x[1] ** 2 * x[0] + x[1]
    return s * x[2]


def test_a_negation_read_twice_folds_into_each_reader():
    args = (np.array([0.5, -1.5, 2.0]),)
    _, raw = gradient_tape(_twice_negated, args, passes=False)
    before, after = text(optimize(raw, RULES, WITHOUT_SIGNS)), text(optimize(raw, RULES))
    negated = [line.split(":")[0].strip() for line in before.splitlines() if " = neg " in line]
    assert any(before.count(f" {n} ") + before.count(f" {n}\n") >= 2 for n in negated)
    assert " = neg " not in after and "dt4:f64[] = sub t2 t10" in after
    expected, got = verify.run(raw, list(args)), verify.run(optimize(raw, RULES), list(args))
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1][0], expected[1][0])      # a sign moved: exact
    x0, x1, x2 = args[0]
    np.testing.assert_allclose(got[1][0], [x2 * x2 - x1 ** 2 * x2, x2 - 2 * x1 * x0 * x2,
                                           x0 * x2 - x1 ** 2 * x0 + x1 + x0 * x2])


def test_a_negation_some_reader_cannot_take_stays():
    def f(x):
        n = -np.sin(x)
        return np.sum(np.exp(n) + n * x)
    args = (np.array([0.5, -1.5, 2.0]),)
    raw, tape = tapes(f, *args)
    assert " = neg " in text(tape)
    expected, got = verify.run(raw, list(args)), verify.run(tape, list(args))
    np.testing.assert_allclose(got[1][0], expected[1][0], rtol=1e-15)


def test_lower_makes_a_loops_broadcast_invariant_once_with_the_same_bits(monkeypatch):
    """issue 14: for ``t += b`` with ``b`` broadcast over the rows, numpy copies ``b`` into its
    iteration buffer row after row on every call (1.26 us at 16 x 64, where two 16 x 64 arrays
    take 0.46 us). A buffered loop of ``ROWS_MIN_STEPS`` steps or more reads ``b_rows``, made
    once before the loop: the same elements added in the same order, so the same bits as the
    module without it; the plain form keeps ``b``."""
    import sys

    import yota_s2s as ys

    from .programs.loop_regions import rnn_batched, rnn_batched_args
    args = rnn_batched_args(T=12, B=16, D=8, H=64, seed=3)
    df = ys.simplegrad(rnn_batched, *args)
    text = ys.source(df)
    before, loop = text.split("# -- backward --")[0].split("for t in range(12):")
    assert "xp.copyto(b_rows, xp.broadcast_to(b, (16, 64)))" in before
    assert re.search(r"\+= b_rows\n", loop) and not re.search(r"\+= b\n", loop)
    monkeypatch.setattr(sys.modules["yota_s2s.passes.lower"], "ROWS_MIN_STEPS", 13)
    without = ys.simplegrad(rnn_batched, *args)
    assert "b_rows" not in ys.source(without) and re.search(r"\+= b\n", ys.source(without))
    plain = ys.simplegrad(rnn_batched, *args, buffers=False)
    assert "b_rows" not in ys.source(plain)
    got, same, want = df(*args), without(*args), plain(*args)
    assert got[0] == same[0] and all(np.array_equal(g, s) for g, s in zip(got[1:4], same[1:4]))
    assert np.isclose(got[0], want[0], rtol=1e-13)
    assert all(np.allclose(g, w, rtol=1e-12, atol=1e-15) for g, w in zip(got[1:4], want[1:4]))


# -- the schedule: named stages -----------------------------------------------------------------

def twice_plus(x, y):
    return np.sum(x * 2.0 + y)


def test_the_schedule_is_named_stages_by_form_and_device():
    assert STAGE_NAMES == ("fixed-point", "fresh-outputs", "plain-constants", "bodies",
                           "remade-rows", "stacked-products", "in-place", "recompute", "lower")
    names = lambda *form: [stage.name for stage in stages_for(*form)]    # noqa: E731
    assert names("plain") == names("plain", "cpu") == \
        ["fixed-point", "fresh-outputs", "plain-constants", "bodies", "remade-rows", "in-place"]
    buffered = [name for name in STAGE_NAMES if name != "remade-rows"]
    assert names("buffered", "cpu") == buffered
    assert names("buffered", "cuda") == names("buffered") == buffered[:-1]


def test_how_it_works_names_every_stage_in_order():
    """docs/how-it-works.md (3. Passes) lists the schedule's stages as they run."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[1] / "docs" / "how-it-works.md").read_text()
    section = doc.split("The schedule is data:", 1)[1].split("\n\n", 1)[0]
    named = [name for name in re.findall(r"`([a-z-]+)`", section) if name in STAGE_NAMES]
    assert list(dict.fromkeys(named)) == list(STAGE_NAMES)


def test_optimize_stops_after_the_stage_named():
    """Tape text after ``fixed-point`` and after ``fresh-outputs``: the gradients of the sum
    are read-only broadcasts, returned as arrays of their own after it."""
    args = (np.ones(3), np.ones(3))
    _, raw = gradient_tape(twice_plus, args, passes=False)
    assert text(optimize(raw, RULES, until="fixed-point")) == """\
tape twice_plus(x:f64[3], y_:f64[3]) -> f64[]
  t1:f64[3] = mul x 2.0
  t2:f64[3] = add t1 y_
  twice_plus:f64[] = sum t2
  dt2:f64[3] = broadcast_to 1.0 (3,)
  dx:f64[3] = broadcast_to 2.0 (3,)
  return twice_plus
  grads x: dx, y_: dt2"""
    after = optimize(raw, RULES, until="fresh-outputs")
    assert text(after).split("twice_plus:f64[] = sum t2\n")[1] == """\
  dx:f64[3] = full (3,) 2.0
  dy_:f64[3] = full (3,) 1.0
  return twice_plus
  grads x: dx, y_: dy_"""
    assert text(optimize(raw, RULES, review=True, until="in-place")) == \
        text(optimize(raw, RULES, review=True)) == text(after)
    with pytest.raises(ValueError, match="'lowered' is not a stage of the passes; the stages: "
                       "fixed-point, fresh-outputs, .*, recompute, lower$"):
        optimize(raw, RULES, until="lowered")
    with pytest.raises(ValueError, match="the stage 'recompute' does not run for the plain form "
                       r"\(no device said\); its stages: fixed-point, .*, bodies, remade-rows, in-place$"):
        optimize(raw, RULES, review=True, until="recompute")
    with pytest.raises(ValueError, match="'lower' does not run for the buffered form on 'cuda'"):
        optimize(raw, RULES, device="cuda", until="lower")


def test_every_stage_keeps_the_values():
    """A loop region with an accumulator (bodies, stacked products) and numpy's scalar loop
    (lower): after each stage the verifier passes and the tape computes what the swept one
    does; the stages that change this tape are the ones expected."""
    from .programs.loop_regions import rnn_batched, rnn_batched_args

    def f(Wx, Wh, b, xs, h0):
        softplus = np.logaddexp(0.0, xs[0, 0, 0] * np.ones(600))
        return rnn_batched(Wx, Wh, b, xs, h0) + np.sum(softplus)
    args = rnn_batched_args(T=10, B=4, D=3, H=5)
    _, raw = gradient_tape(f, args, passes=False)
    (want, want_grads), before, changed = verify.run(raw, list(args)), text(raw), []
    for stage in stages_for("buffered", "cpu"):
        tape = optimize(raw, RULES, device="cpu", until=stage.name, check=True)
        got, grads = verify.run(tape, list(args), check_avals=True)
        assert np.isclose(got, want, rtol=1e-13), stage.name
        assert all(np.allclose(g, w, rtol=1e-12, atol=1e-14) for g, w in zip(grads, want_grads))
        if text(tape) != before:
            changed.append(stage.name)
        before = text(tape)
    assert changed == ["fixed-point", "bodies", "stacked-products", "lower"]
    assert before == text(optimize(raw, RULES, device="cpu"))


def test_check_names_the_stage_that_breaks_an_invariant(monkeypatch):
    """With ``check`` the verifier runs after every stage: a stage that leaves a statement
    reading a value before it is made is named in the error."""
    _, raw = gradient_tape(twice_plus, (np.ones(3), np.ones(3)), passes=False)

    def backwards(tape, rules):
        return tape.copy(stmts=tape.stmts[::-1])
    monkeypatch.setattr(passes, "write_in_place", backwards)
    optimize(raw, RULES)                    # unchecked: nobody looks
    with pytest.raises(InternalError, match=r"^after the stage 'in-place': while checking tape "
                       r"twice_plus: Var\(.*\) is used before it is defined\n"
                       r"(.*\n)*>> twice_plus:f64\[\] = sum t1\n"):
        optimize(raw, RULES, check=True)
    with pytest.raises(InternalError, match="after the stage 'in-place'"):
        gradient_tape(twice_plus, (np.ones(3), np.ones(3)), check=True)


@pytest.mark.parametrize("stage, attribute, make", [("backward", "backward", gradient_tape),
                                                     ("forward", "forward_sweep", jvp_tape)])
def test_check_names_the_sweep_that_breaks_an_invariant(monkeypatch, stage, attribute, make):
    """The stages before the passes are named too: the backward sweep, the forward one."""
    sweep = getattr(compiler, attribute)

    def backwards(*args):
        tape = sweep(*args)
        return tape.copy(stmts=tape.stmts[::-1])
    monkeypatch.setattr(compiler, attribute, backwards)
    with pytest.raises(InternalError, match=rf"^after the stage '{stage}': while checking "
                       "tape twice_plus: Var"):
        make(twice_plus, (np.ones(3), np.ones(3)), check=True)
