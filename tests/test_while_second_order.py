"""Second order through a ``while`` on a traced condition (issue 33): forward over reverse on
the tape (compiler.hvp_tape), the recording loop's JVP stacking the tangents beside the values
(ad/while_tangents.py) and the unwind's JVP carrying the cotangents' tangents
(ad/unwind_tangents.py): one Hessian-vector module for every trip count."""
import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_hvp
from yota_s2s.gradcheck import numerical_grad

from .test_whiles import CASES, _rng
from .programs import whiles as W


@pytest.fixture
def compiles(monkeypatch):
    """How many modules ys.hessp and ys.hessian compile (the first gradient, then H v's)."""
    import yota_s2s.api as api
    import yota_s2s.higher as higher
    ys.clear_cache()
    count = [0]
    for module, name in ((api, "compile_grad"), (higher, "compile_hvp")):
        real = getattr(module, name, None)

        def counted(*args, real=real, **kwargs):
            count[0] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, counted, raising=False)
    return count


def _trips(a):
    x, n = a, 0
    while np.max(np.abs(x * x - a)) > 1e-10:
        x, n = 0.5 * (x + a / x), n + 1
    return n


POINTS = [np.array([2.0, 3.0]), np.array([0.01, 900.0]), np.array([1e4, 0.5]),
          np.array([0.3, 50.0])]


def test_hessp_and_hessian_compile_once_for_every_trip_count(compiles):
    """ys.hessp and ys.hessian of Newton's square root: the exact Hessian (``-a^(-3/2)/4`` on
    the diagonal) for inputs that take different trip counts, from one first gradient and one
    Hessian-vector module (today's main: the gradient module traced again unrolled the loop
    on the example, and a new trip count compiled a new module)."""
    assert len({_trips(a) for a in POINTS}) >= 3
    hp = ys.hessp(W.newton_sqrt)
    v = np.array([0.7, -0.4])
    for a in POINTS:
        np.testing.assert_allclose(hp(a, v), -0.25 * a ** -1.5 * v, rtol=1e-8)
        np.testing.assert_allclose(ys.hessian(W.newton_sqrt, a), np.diag(-0.25 * a ** -1.5),
                                   rtol=1e-8, atol=1e-15)
    assert compiles[0] == 2


# cube_root's bisection flips a comparison every ~2^-40 of its input: differences of its
# gradient cross those steps; its Hessian is checked against the path's own in test_whiles
SMOOTH = [c for c in CASES if c[0] != "cube_root"]


@pytest.mark.parametrize("name, fn, make, wrt", SMOOTH, ids=[c[0] for c in SMOOTH])
def test_hvp_module_keeps_the_while_and_the_unwind(name, fn, make, wrt):
    """One module per argument, compiled on one input, gives the gradient and ``H v`` for
    inputs of other trip counts: ``H v`` against central differences of the gradient
    (ys.grad, one module for every trip count) along ``v``."""
    for k in wrt:
        compiled = compile_hvp(fn, make(_rng(0)), k, check=True)
        assert "GuardError(" not in compiled.text and "while " in compiled.text
        for seed in range(2):
            args = make(_rng(seed + 1))
            v = _rng(seed + 9).normal(size=np.shape(args[k]))
            g, hv = compiled.fn(*args, v)

            def along(*a):
                return float(np.sum(ys.grad(fn, *a)[1][k] * v))
            np.testing.assert_allclose(g, ys.grad(fn, *args)[1][k], rtol=1e-13, atol=1e-14)
            np.testing.assert_allclose(hv, numerical_grad(along, list(args), k), rtol=1e-6,
                                       atol=1e-7)


def test_the_hvp_module_reads_like_handwritten_code():
    """The recording loop stacks ``dot_x`` beside ``x`` (and ``dot_v`` beside the residual
    ``v``, ``a / x``); the unwind reads both rows and
    carries ``dot_dx`` beside ``dx``; the plain form, no work arrays."""
    text = ys.source(ys.hvp(W.newton_sqrt, np.array([2.0, 3.0]), buffers=False))
    assert text.startswith('"""Gradient and Hessian-vector product of newton_sqrt')
    assert "        X.append(x)\n        dot_X.append(dot_x_part1)\n" in text
    assert "    for t in reversed(range(trips)):\n        x_2 = X[t]\n        v = V[t]\n" \
        "        dot_x_1 = dot_X[t]\n        dot_v = dot_V[t]\n" in text
    assert "        dot_dx = " in text and "    return da, dot_da\n" in text
