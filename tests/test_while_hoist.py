"""A while's trip statements of its invariants alone, made once before it
(passes/while_invariants.py), a stacked number made again by the unwind from the rows it reads
(passes/while_rows.py), and ``a + ((-p) - q)`` written ``a - (p + q)`` (passes/signs.py): the
module text says so, and call after call the buffered form returns what the plain form does,
which equals central differences, on inputs that run no trip too."""
import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.memory_report import allocated


def damped(x, a, tol):
    """``np.exp(a) * 0.5`` reads the invariant ``a`` alone; ``0.25 * s`` is a number made of
    the stacked ``s``."""
    y = x
    s = 1.0
    while np.max(np.abs(y)) > tol:
        y = y - np.exp(a) * 0.5 * y + 0.25 * s * np.sin(y)
        s = s * 0.5
    return np.sum(y ** 2) + s


def _sections(text):
    return text[text.index("# -- forward"):text.index("# -- backward")], \
        text[text.index("# -- backward"):]


@pytest.mark.parametrize("buffers", [False, True])
def test_a_value_of_invariants_is_made_once_before_the_while(buffers):
    args = (np.array([0.5, -0.3, 0.2]), np.array([-0.5, -0.1, 0.3]), 1e-3)
    text = compile_grad(damped, args, buffers=buffers).text
    forward, _ = _sections(text)
    code = "\n".join(c for c in forward.splitlines() if not c.lstrip().startswith("#"))
    before, trip = code.split("    while ", 1)
    assert "exp(a" in before and "exp(" not in trip


def test_buffered_equals_plain_call_after_call_and_central_differences():
    rng = np.random.default_rng(3)
    inputs = [(rng.uniform(-0.6, 0.6, 3), rng.uniform(-0.5, 0.5, 3), 1e-3) for _ in range(12)]
    inputs.append((np.array([1e-5, 0.0, -1e-5]), inputs[0][1], 1e-3))     # no trip at all
    buffered = compile_grad(damped, inputs[0], buffers=True).fn
    plain = compile_grad(damped, inputs[0], buffers=False).fn
    for args in inputs + inputs[::-1]:
        got, want = buffered(*args), plain(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-15)
    for args in (inputs[1], inputs[-1]):
        grads = plain(*args)[1:]
        for i in (0, 1):
            np.testing.assert_allclose(grads[i], numerical_grad(damped, args, i),
                                       rtol=1e-6, atol=1e-8)
    out = [np.empty(3), np.empty(3), None]
    assert allocated(lambda: buffered(*inputs[2], out=out)).arrays == 0


def test_a_negated_difference_added_is_one_subtraction():
    """adaptive_heun's ``dk + (-(t * y1) - u * y)``: ``dk - (t * y1 + u * y)``, no negation
    in the unwind (the sum moved into the arm goes through the sign pass again)."""
    from .programs import whiles as W
    args = (np.array([1.0, 2.0]), np.array([1.0, 1.5]))
    for buffers in (False, True):
        _, backward = _sections(compile_grad(W.adaptive_heun, args, buffers=buffers).text)
        code = [c for c in backward.splitlines() if not c.lstrip().startswith("#")]
        assert not any("negative(" in c or "= -(" in c for c in code)
        assert any(c.strip().startswith("t11 = ") and "dk" in c and "-" in c for c in code) \
            or any("subtract(dk," in c for c in code)
