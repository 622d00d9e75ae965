"""A ``while`` on a traced condition through the other modes (issue 33): forward mode carries
the tangents in the loop (ad/while_tangents.py), ``ys.vmap`` runs the loop while any example's
condition holds (ad/batch_whiles.py), ``ys.compile`` writes the loop; one module for every
trip count, values against finite differences."""
import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_jvp
from yota_s2s.gradcheck import numerical_grad

from .test_whiles import CASES, _rng
from .programs import whiles as W


def _directional(fn, args, tangents):
    """``J @ t`` by central differences of the gradient's pieces (numerical_grad per argument)."""
    return sum(np.sum(numerical_grad(fn, args, i) * t) for i, t in enumerate(tangents))


@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_forward_mode_carries_the_tangents_in_the_loop(name, fn, make, wrt):
    """The JVP of a while is the while carrying ``dot_x`` beside ``x``: one jvp module, with
    no guard, gives ``J @ t`` for inputs that take different trip counts (today's main
    unrolled the loop on the example: GuardError on another count)."""
    compiled = compile_jvp(fn, make(_rng(0)), check=True, buffers=False)
    assert "while " in compiled.text and "GuardError(" not in compiled.text
    assert "# tangent of whiles.py" in compiled.text
    for seed in range(4):
        args = make(_rng(seed + 1))
        tangents = tuple(_rng(seed + 20).normal(size=np.shape(a)) for a in args)
        value, tangent = compiled.fn(*args, *tangents)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tangent, _directional(fn, args, tangents), rtol=1e-6,
                                   atol=1e-7)


def test_jvp_jvpfunction_and_linearize_go_through_the_while():
    """ys.jvpfunction compiles once for every trip count; ys.linearize does not cut a loop
    carrying tangents (its trips' values would be residuals): its tangent map runs the JVP."""
    a = np.array([2.0, 3.0, 5.0])
    jf = ys.jvpfunction(W.newton_sqrt, a)
    for scale in (1e-2, 1.0, 1e3):
        b = a * scale
        t = np.array([0.3, -1.0, 0.5])
        expected = np.sum(0.5 / np.sqrt(b) * t)
        assert jf(b, t)[1] == pytest.approx(expected, rel=1e-9)
        assert ys.jvp(W.newton_sqrt, (b,), (t,))[1] == pytest.approx(expected, rel=1e-9)
        value, f_jvp = ys.linearize(W.newton_sqrt, b)
        assert value == pytest.approx(np.sum(np.sqrt(b)), rel=1e-12)
        assert f_jvp(t) == pytest.approx(expected, rel=1e-9)
