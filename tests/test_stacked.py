"""The stage ``stacked-products`` (passes/stacked.py): tape text in, tape text out.

The tape going in is the one the stages before it leave (``optimize(..., until="bodies")``);
after it, an accumulator's per-step terms are rows of a dead stack and the sum or product is
made once after the loop. Every tape out computes what the tape in does (ir/verify.run).
"""
from __future__ import annotations

import numpy as np

from yota_s2s.compiler import gradient_tape
from yota_s2s.ir import verify
from yota_s2s.ir.printer import format_tape
from yota_s2s.passes import optimize, stack_products
from yota_s2s.rules import RULES

from .programs.loop_regions import rnn_batched, rnn_batched_args


def scaled(w, xs):
    h = np.zeros(3)
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h * w + xs[t])
        total = total + np.sum(h)
    return total


def through_matrix(W, xs):
    h = np.zeros(3)
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        total = total + np.sum(h)
    return total


def text(tape) -> str:
    """The tape without locations, and without the closing notes on the loops (file:line)."""
    return "\n".join(line for line in format_tape(tape, locations=False).splitlines()
                     if not line.startswith("  # loop "))


def stacked(f, *args):
    """(tape in, tape out, changed), both checked and run against each other."""
    _, swept = gradient_tape(f, args, passes=False)
    before = optimize(swept, RULES, until="bodies")
    after, changed = stack_products(before, RULES)
    verify.check(after)
    (value, grads), (same, same_grads) = (verify.run(t, list(args), check_avals=True)
                                          for t in (before, after))
    assert np.isclose(same, value, rtol=1e-14)
    for got, want in zip(same_grads, grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    return before, after, changed


SCALED_FORWARD = """\
tape scaled(w:f64[3], xs:f64[8,3]) -> f64[]
  h:f64[3] = zeros 3
  _:f64[3], total:f64[], H:f64[9,3] = loop[region='range(xs.shape[0]), 8 steps'] h 0.0 w xs
    step t: H=empty, h, total, w, xs
      H:f64[9,3] = setitem_ H t h
      t{0}:f64[3] = mul h w
      t{1}:f64[3] = getitem[key=t] xs
      t{2}:f64[3] = add t{0} t{1}
      h:f64[3] = tanh t{2}
      t{3}:f64[] = sum h
      total:f64[] = add total t{3}
      t{4}:int = add t 1
      H:f64[9,3] = setitem_ H t{4} h
      next h, total, H = (h, total, H)
"""


def test_a_sum_of_step_values_is_one_sum_of_the_stack_after_the_loop():
    """``dw += h_prev * dt`` each step: the step's value goes into the row of the forward
    stack ``H`` that the step has read for the last time, and ``dw`` is the sum of the rows."""
    r = np.random.default_rng(0)
    before, after, changed = stacked(scaled, r.normal(size=3), r.normal(size=(8, 3)))
    assert changed
    assert text(before) == SCALED_FORWARD.format(1, 2, 3, 4, 5) + """\
  _:f64[3], dw:f64[3], dxs:f64[8,3] = loop[region='reversed range(xs.shape[0]), 8 steps'] 1.0 w H
    step t: dh=zeros, dw=zeros, dxs=zeros, dtotal, w, H
      h_prev:f64[3] = getitem[key=t] H
      t6:int = add t 1
      h_new:f64[3] = getitem[key=t6] H
      dh:f64[3] = add dh 1.0
      t7:f64[3] = mul h_new h_new
      t8:f64[3] = sub 1 t7
      dt3:f64[3] = mul dh t8
      dh:f64[3] = mul dt3 w
      dw_part1:f64[3] = mul h_prev dt3
      dw:f64[3] = add dw dw_part1
      dxs:f64[8,3] = index_add dxs t dt3
      next dh, dw, dxs = (dh, dw, dxs)
  return total
  grads w: dw, xs: dxs"""
    assert text(after) == SCALED_FORWARD.format(2, 3, 4, 5, 6) + """\
  _:f64[3], dxs:f64[8,3], H:f64[9,3] = loop[region='reversed range(xs.shape[0]), 8 steps'] H w
    step t: dh=zeros, dxs=zeros, H, w
      h_prev:f64[3] = getitem[key=t] H
      t7:int = add t 1
      h_new:f64[3] = getitem[key=t7] H
      dh:f64[3] = add dh 1.0
      t8:f64[3] = mul h_new h_new
      t9:f64[3] = sub 1 t8
      dt4:f64[3] = mul dh t9
      dh:f64[3] = mul dt4 w
      dw_1:f64[3] = mul h_prev dt4
      dxs:f64[8,3] = index_add dxs t dt4
      H:f64[9,3] = setitem_ H t7 dw_1
      next dh, dxs, H = (dh, dxs, H)
  t1:f64[8,3] = getitem[key=1:9] H
  dw:f64[3] = sum[axis=0] t1
  return total
  grads w: dw, xs: dxs"""


def test_products_with_rows_of_an_input_are_one_product_after_the_loop():
    """A batched RNN: ``dWx += xs[t].T @ dz`` and ``db += dz.sum(axis=0)`` leave the loop as
    one product of the reshaped stacks and one sum; ``dWh``, whose term reads the stack the
    values go into (``h_prev``), stays in the loop."""
    before, after, changed = stacked(rnn_batched, *rnn_batched_args(T=8, B=2, D=3, H=4))
    assert changed
    backward = text(before).split("  rnn_batched:f64[] = mul total 0.5\n")[1]
    assert backward.startswith(
        "  dh0:f64[2,4], dxs:f64[8,2,3], dWx:f64[3,4], dWh:f64[4,4], db:f64[4] = loop")
    assert "      dWx:f64[3,4] = add dWx dWx_part1\n" in backward
    assert "      db:f64[4] = add db db_part1\n" in backward
    backward = text(after).split("  rnn_batched:f64[] = mul total 0.5\n")[1]
    assert backward.startswith("  dh0:f64[2,4], dxs:f64[8,2,3], dWh:f64[4,4], H:f64[9,2,4] = "
                               "loop[region='reversed range(xs.shape[0]), 8 steps'] H Wx Wh\n"
                               "    step t: dh=zeros, dxs=zeros, dWh=zeros, H, Wx, Wh\n")
    assert "      dWh:f64[4,4] = add dWh dWh_part1\n      H:f64[9,2,4] = setitem_ H t13 dt9\n" \
        in backward
    assert backward.endswith("""
      next dh, dxs, dWh, H = (dh, dxs, dWh, H)
  t1:f64[8,2,4] = getitem[key=1:9] H
  t2:f64[16,3] = reshape xs (16, 3)
  t3:f64[16,4] = reshape t1 (16, 4)
  t4:f64[3,16] = transpose t2
  dWx:f64[3,4] = matmul t4 t3
  db:f64[4] = sum[axis=(0, 1)] t1
  return rnn_batched
  grads Wx: dWx, Wh: dWh, b: db, xs: dxs, h0: dh0""")


def test_a_term_that_reads_the_only_free_stack_stays_in_the_loop():
    """``dW += dt[:, None] * h_prev`` reads a row of ``H``, the one stack the step values
    could go into: no memory is added for it, the tape comes out as it went in."""
    r = np.random.default_rng(1)
    before, after, changed = stacked(through_matrix, r.normal(size=(3, 3)),
                                     r.normal(size=(8, 3)))
    assert not changed and text(after) == text(before)
    assert "      dW_part1:f64[3,3] = mul t9 h_prev\n      dh:f64[3] = matmul dt3 W\n" \
        "      dW:f64[3,3] = add dW dW_part1\n" in text(after)


def test_the_plain_form_keeps_the_accumulators_in_the_loop():
    """The stage is the buffered form's: the review form reads as the rules wrote the loop."""
    args = rnn_batched_args(T=8, B=2, D=3, H=4)
    _, swept = gradient_tape(rnn_batched, args, passes=False)
    plain = text(optimize(swept, RULES, review=True))
    assert "dWx:f64[3,4] = add dWx dWx_part1" in plain and "= getitem[key=1:9] H" not in plain
    assert "= getitem[key=1:9] H" in text(optimize(swept, RULES))
