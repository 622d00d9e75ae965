"""A branch's arms in the buffered form's loops (issue 33): an arm that gives on the value a
trip carries binds it, and the trip swaps the carried array with its spare only where the new
value is in the spare; an arm that gives on an operand of the branch made in the result's work
array copies nothing; an arm that gives on an array it read, read once after the branch, binds
it; a trip's residual is made in its row of its stack. Call after call the buffered form
returns what the plain form returns, and allocates nothing with out=."""
import re

import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.memory_report import allocated

from .programs import branches as B, whiles as W


def _heun_inputs(n):
    rng = np.random.default_rng(5)
    return [(rng.uniform(0.5, 3.0, 2), rng.uniform(0.5, 2.0, 2)) for _ in range(n)]


def _same_call_after_call(fn, inputs, exact=True):
    """(``exact``: the same bits; else to rounding, where the forms sum in another order)"""
    buffered = compile_grad(fn, inputs[0], buffers=True).fn
    plain = compile_grad(fn, inputs[0], buffers=False).fn
    for args in inputs + inputs[::-1]:
        got, want = buffered(*args), plain(*args)
        for g, w in zip(got, want):
            if exact:
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
            else:
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-15)
    return buffered


def test_a_rejected_trip_copies_nothing_and_swaps_nothing():
    text = compile_grad(W.adaptive_heun, _heun_inputs(1)[0], buffers=True).text
    assert "y__spare[...] =" not in text and "dy__spare[...] =" not in text \
        and "dk_spare[...] =" not in text
    assert "            y_1 = y_\n" in text        # the rejecting arm gives y on, bound
    assert "        if y_1 is y__spare:\n            y_, y__spare = y__spare, y_\n" in text
    assert re.search(r"        if t\d+ is dy__spare:\n            dy_, dy__spare = dy__spare, "
                     r"dy_\n", text)
    # y2 is made in the spare (the accepting arm binds it), y1 in its row of the stack Y1
    # (-k, loop-invariant, made once before the loop: passes/while_invariants.py)
    assert "f1 = xp.multiply(t1, y_, out=y__spare)" in text and "            y_1 = y2\n" in text
    assert "out=Y1[trips])" in text and "Y1[trips][...] =" not in text


def test_adaptive_heun_buffered_equals_plain_call_after_call():
    inputs = _heun_inputs(40)
    buffered = _same_call_after_call(W.adaptive_heun, inputs)
    out = [np.empty(2), np.empty(2)]
    assert allocated(lambda: buffered(*inputs[3], out=out)).arrays == 0


def test_an_arm_giving_on_a_gradient_read_binds_it():
    rng = np.random.default_rng(1)
    inputs = [(rng.normal(size=3), rng.normal(size=3)) for _ in range(30)]
    text = compile_grad(B.branch_in_loop, inputs[0], buffers=True).text
    # (the else arm copies dh into the weight's row of the stack once; the if arm makes its
    # term there: codegen/region_rows.py branch_rows)
    assert "dw_1" not in text and text.count("[...] = dh\n") == 1
    assert "            H_rows[t6][...] = dh\n" in text
    # (the plain form sums the rows of dw in another order: the same to rounding)
    buffered = _same_call_after_call(B.branch_in_loop, inputs, exact=False)
    out = [np.empty(3), np.empty(3)]
    assert allocated(lambda: buffered(*inputs[2], out=out)).arrays == 0


def kept_then_read(x, a):
    """The carried ``y`` kept by an arm and read after the branch, its new value made in the
    other arm from an operand read after it too."""
    y = x
    s = np.zeros_like(x)
    n = 0.0
    while n < 6.0 and np.max(np.abs(y)) < 50.0:
        z = y * a + 0.1
        if np.sum(z) > 0.0:
            y = z
        else:
            y = y
        s = s + y * z
        n = n + 1.0
    return np.sum(s) + np.sum(y * y)


@pytest.mark.parametrize("seed", range(3))
def test_kept_and_read_after_the_branch_equals_plain(seed):
    rng = np.random.default_rng(seed)
    inputs = [(rng.normal(size=3), rng.normal(size=3)) for _ in range(30)]
    _same_call_after_call(kept_then_read, inputs)
