"""A recording while stacks the values of its trip that the backward step reads (issue 33):
the unwind reads them back, and the branch bit of an ``if`` in the body, rather than making
the trip again from the carried values (ad/whiles.py, policies.save_or_remake)."""
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
    assert "        ERR_COND[trips] = err_cond\n" in forward
    # the plain form's array stacks are lists of references (nothing writes them in place)
    y1 = "        Y1[trips] = y1\n" if buffers else "        Y1.append(y1)\n"
    assert y1 in forward and "        H[trips] = h_1\n" in forward
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


def test_a_residual_has_its_tangent_stacked_for_the_hvp():
    """Forward over reverse: the recording loop stacks ``dot_v`` beside the residual ``v``
    (``a / x``), and the Hessian-vector product is the exact one of sqrt."""
    hvp = ys.hvp(W.newton_sqrt, np.array([2.0, 3.0]), buffers=False)
    text = ys.source(hvp)
    assert "        V.append(t8)\n        dot_V.append(dt8)\n" in text
    a, v = np.array([0.5, 7.0]), np.array([0.3, -1.1])
    np.testing.assert_allclose(hvp(a, v), -0.25 * a ** -1.5 * v, rtol=1e-8)

