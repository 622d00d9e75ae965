"""A recording while stacks the values of its trip that the backward step reads (issue 33):
the unwind reads them back, and the branch bit of an ``if`` in the body, rather than making
the trip again from the carried values (ad/whiles.py, policies.save_or_remake)."""
import re

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad

from .programs import whiles as W


def _sections(text):
    return text[text.index("# -- forward"):text.index("# -- backward")], \
        text[text.index("# -- backward"):]


@pytest.mark.parametrize("buffers", [False, True])
def test_the_unwind_reads_the_branch_bit_and_the_trip_values(buffers):
    """adaptive_heun's unwind reads ``err_cond`` from its stack, named after it, and the step's
    values (``y1``, the step size ``h``) from theirs: no ``max(`` of the error estimate, no
    ``y1`` made again; the carried ``t``, which no gradient reads, and ``y2``, which the arm's
    copy read before the passes, are not stacked. The step size and the time, made from
    numbers by the arms, carry no cotangent (``dh``, ``dt``). Gradients equal central
    differences."""
    compiled = compile_grad(W.adaptive_heun, (np.array([1.0, 2.0]), np.array([1.0, 1.5])),
                            buffers=buffers)
    forward, backward = _sections(compiled.text)
    # the plain form's stacks of arrays, of flags the unwind only tests and of float64 numbers
    # it reads only with float64 arrays (h * dy) are lists of references (nothing writes them
    # in place), with no check for room; the buffered form's stack of arrays, a list of its
    # rows held per thread, has y1 made in its row (whiles.py _in_rows: no copy), its stacks
    # of such flags are lists too (codegen/while_numbers.py numbers_listed), its numbers read
    # only by ufuncs with float64 arrays held 0-d rows (number_rows): ``h`` and ``0.5 * h``
    # filled into their rows where the trip first reads them, the unwind's ufuncs reading the
    # rows; in the plain form ``0.5 * h`` is made again by the unwind from the row of h, not
    # stacked (passes/while_rows.py)
    pushed = ("        ERR_COND.append(err_cond)\n",)
    pushed += ("        H[trips][()] = h_1\n        y1 = xp.multiply(H[trips], f1, "
               "out=Y1[trips])\n", "        V[trips][()] = t5\n        y2 *= V[trips]\n") \
        if buffers else ("        H.append(h_1)\n", "        Y1.append(y1)\n")
    assert all(p in forward for p in pushed)
    if buffers:
        assert re.search(r"\n        v = V\[t_\d+\]\n", backward) and "xp.multiply(v, dy_" in \
            backward and "H.append(" not in forward and \
            not re.search(r"buf\d+\[\(\)\] = (h|v)", compiled.text)
    else:
        assert "V.append(" not in forward and "V[trips]" not in forward and \
            re.search(r"\n        v = 0\.5 \* h_\d+\n", backward)
    assert ("len(" in forward) == buffers
    assert "T[trips]" not in forward and "Y2" not in compiled.text
    assert "max(" not in backward and "xp.minimum" not in backward
    assert " dh" not in backward and " dt" not in backward
    assert "err_cond_1 = ERR_COND[t" in backward and "if err_cond_1:" in backward
    for seed in range(2):
        r = np.random.default_rng(seed)
        args = (r.uniform(0.5, 3.0, 2), r.uniform(0.5, 2.0, 2))
        value, *grads = compiled.fn(*args)
        assert value == pytest.approx(W.adaptive_heun(*args), rel=1e-13)
        for i in (0, 1):
            np.testing.assert_allclose(grads[i], numerical_grad(W.adaptive_heun, args, i),
                                       rtol=1e-6, atol=1e-8)


def test_a_number_the_unwind_reads_with_numbers_keeps_its_array_stack():
    """rk45's unwind reads the step size ``h`` of a trip in operations on numbers (``dh * v``),
    where numpy's float64 and Python's float differ (a division by zero, a float32 operand):
    its stack stays an array, whose row is numpy's number, and the stacks are checked for
    room; adaptive_heun's (read only with float64 arrays) is a list (test above)."""
    compiled = compile_grad(W.rk45, (np.array([1.0, 2.0]), np.array([1.0, 1.5])),
                            buffers=False)
    forward, backward = _sections(compiled.text)
    assert "    H = xp.empty((16,))\n" in forward and "        H[trips] = h\n" in forward
    assert "if trips == len(H):" in forward and " = H[t" in backward


def test_a_residual_has_its_tangent_stacked_for_the_hvp():
    """Forward over reverse: the recording loop stacks ``dot_v`` beside the residual ``v``
    (``a / x``), and the Hessian-vector product is the exact one of sqrt."""
    hvp = ys.hvp(W.newton_sqrt, np.array([2.0, 3.0]), buffers=False)
    text = ys.source(hvp)
    assert "        V.append(t8)\n        dot_V.append(dt8)\n" in text
    a, v = np.array([0.5, 7.0]), np.array([0.3, -1.1])
    np.testing.assert_allclose(hvp(a, v), -0.25 * a ** -1.5 * v, rtol=1e-8)



def test_the_plain_loop_gives_its_own_values_on_without_copies():
    """adaptive_heun's plain module: the arms of the ``if`` in the while give the trip's
    ``y2`` or the carried ``y`` on as they are, and so do the unwind's arms with ``dy`` and
    ``dk`` (a value nobody writes in place needs no copy); the stacks of arrays and of the
    flags are lists. Gradients equal central differences."""
    args = (np.array([1.0, 2.0]), np.array([1.0, 1.5]))
    compiled = compile_grad(W.adaptive_heun, args, buffers=False)
    text = compiled.text
    forward = text[text.index("    while t < 1.0:"):text.index("# -- backward")]
    unwind = text[text.index("in reversed(range(trips)):"):]
    assert ".copy()" not in forward + unwind
    assert "        Y.append(y_)\n" in forward and "        ERR_COND.append(err_cond)\n" in forward
    for seed in range(4):
        rng = np.random.default_rng(seed)
        args = (rng.uniform(0.5, 3.0, 2), rng.uniform(0.5, 2.0, 2))
        value, dk, dy0 = compiled.fn(*args)
        assert value == pytest.approx(W.adaptive_heun(*args), rel=1e-12)
        for k, g in enumerate((dk, dy0)):
            np.testing.assert_allclose(g, numerical_grad(W.adaptive_heun, args, k), rtol=1e-6)


def _invariant_then_written(a):
    k = a * 0.1
    y = a * 1.0
    while np.sum(y) > 1.0:
        if np.max(y) > 30.0:
            y = k
        else:
            y = y * 0.5
    y[0] = 7.0
    return np.sum(y * k)


@pytest.mark.parametrize("buffers", [False, True])
def test_an_arm_giving_an_invariant_on_copies_it(buffers):
    """An arm that makes the carried value the loop's invariant ``k``: the loop's result is
    written in place after it, which must not change ``k`` (the arm copies it there)."""
    a = np.array([4.0, 5.0])
    compiled = compile_grad(_invariant_then_written, (a,), buffers=buffers)
    assert "while " in compiled.text
    for a in (np.array([40.0, 5.0]), np.array([0.8, 0.9]), np.array([2.0, 1.0])):
        value, g = compiled.fn(a)
        assert value == pytest.approx(_invariant_then_written(a), rel=1e-12)
        np.testing.assert_allclose(g, numerical_grad(_invariant_then_written, (a,), 0),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("buffers", [False, True])
def test_the_loops_make_a_value_of_invariants_once_before_them(buffers):
    """``-k`` of ``f1 = -k * y`` (and of its rule, mul, x1: ``dy * x2``) reads the invariant
    ``k`` alone: made once, before the while (passes/while_invariants.py), and read by the
    trips and by the unwind's ``for``: neither loop makes it, nor ``-(k * y)`` per trip."""
    args = (np.array([1.0, 2.0]), np.array([1.0, 1.5]))
    compiled = compile_grad(W.adaptive_heun, args, buffers=buffers)
    forward, backward = _sections(compiled.text)
    before, trip = forward.split("    while t < 1.0:\n")
    made = "t1 = -k\n" if not buffers else "t1 = xp.negative(k, out="
    code = [line for line in (trip + backward).splitlines()
            if not line.lstrip().startswith("#")]
    assert made in before and not any("-k" in c or "negative(" in c for c in code)
    assert "# whiles.py:47  f1 = -k * y\n" in before
    assert "f1 = t1 * y_\n" in trip if not buffers else "xp.multiply(t1, y_, out=" in trip
    for seed in range(3):
        rng = np.random.default_rng(seed)
        args = (rng.uniform(0.5, 3.0, 2), rng.uniform(0.5, 2.0, 2))
        grads = compiled.fn(*args)[1:]
        for k, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(W.adaptive_heun, args, k), rtol=1e-6)


def test_a_new_array_starts_a_loop_as_it_is():
    """until_small's plain module: the while starts from ``np.ones_like``'s and
    ``np.zeros_like``'s arrays, its unwind from the cotangents ``np.cos(s)`` and ``3 x ** 2``,
    new arrays nothing else reads: no copy of them (ir/analysis memory_bases)."""
    args = (np.array([2.0, 9.0, 0.5]), np.array([0.3, -1.0, 2.0]))
    compiled = compile_grad(W.until_small, args, buffers=False)
    assert ".copy()" not in compiled.text
    for seed in range(3):
        rng = np.random.default_rng(seed)
        args = (rng.uniform(0.5, 30.0, 3), rng.normal(size=3))
        grads = compiled.fn(*args)[1:]
        for k, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(W.until_small, args, k), rtol=1e-6,
                                       atol=1e-8)
