"""A branch's result made in its stack's row (buffered form, codegen/region_rows.py): a loop
step's ``if`` whose result is the state the step saves (``H[t + 1] = h``) or the value it
writes into an accumulator's row (``H[t6] = dw_1``) has each arm make it in that row
(``out=H[t + 1]``), no work array and no copy; an arm that reads the row (``h_new = H[t6]``)
makes its result there only after its last read of it."""
import re

import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad

from .programs import branches as B

PATHS = [(np.array([0.3, -0.2, 0.5]), np.array([0.9, 1.1, -0.4])),
         (np.array([-0.8, 0.2, -0.5]), np.array([0.5, -1.2, 0.7])),
         (np.array([0.1, 0.1, 0.1]), np.array([-0.3, 0.2, 0.9]))]


def _grad_text(fn, args) -> str:
    text = compile_grad(fn, args, buffers=True).text
    return text[text.index("# -- forward --"):]


def test_branch_in_loop_makes_its_state_and_weight_gradient_in_their_rows():
    text = _grad_text(B.branch_in_loop, PATHS[0])
    forward, backward = text.split("# -- backward --")
    # each arm makes the state in its row; no save, no pair of work arrays taken in turn
    assert len(re.findall(r"out=H_rows\[t \+ 1\]\)", forward)) == 2
    assert "H_rows[t + 1][...] = h" not in forward and "h_spare" not in forward
    # the tanh arm makes the weight's per-step gradient in its row (over the row it reads
    # last in that ufunc), the other arm copies dh there once; no name binds it
    assert re.search(r"= xp\.multiply\(h_new, h_new, out=H_rows\[(\w+)\]\)", backward)
    assert re.search(r"\n +H_rows\[\w+\]\[\.\.\.\] = dh\n", backward)
    assert "dw_1" not in backward


def _reads_row_late(x, w):
    h = x
    for t in range(20):
        if np.sum(h * w) > 0.0:
            h = np.tanh(h * w) + 0.5 * np.sin(h)     # its backward reads h_prev after making dw's first value
        else:
            h = 0.5 * h + w
    return np.sum(h ** 2)


def test_an_arm_that_reads_the_row_after_starting_its_result_makes_it_elsewhere():
    """The backward's tanh arm makes ``h_prev * w`` first, the group the weight gradient is
    made over, and reads ``h_prev = H_prev[t]`` (the row it is saved in) after it: made in
    the row, that product would write over ``h_prev`` before its last read."""
    text = _grad_text(_reads_row_late, PATHS[0])
    backward = text.split("# -- backward --")[1]
    assert "out=H_prev_rows[t])" not in backward
    assert re.search(r"H_prev_rows\[t\]\[\.\.\.\] = dw_1\n", backward)


@pytest.mark.parametrize("fn", [B.branch_in_loop, _reads_row_late])
def test_rows_give_what_the_plain_form_gives_call_after_call(fn):
    buffered = compile_grad(fn, PATHS[0], buffers=True).fn
    plain = compile_grad(fn, PATHS[0], buffers=False).fn
    for args in PATHS + PATHS[::-1]:      # paths switching between calls
        value, *grads = plain(*args)
        out = [np.empty_like(a) for a in args]
        for kwargs in ({}, {"out": out}):
            got, *into = buffered(*args, **kwargs)
            assert got == pytest.approx(value, rel=1e-13)
            for i, g in zip(into, grads):
                np.testing.assert_allclose(i, g, rtol=1e-12, atol=1e-14)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-5, atol=1e-7)
