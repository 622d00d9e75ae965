"""Branch arms without waste (issue 33): an arm gives a value it read as it is where no one
can see the sharing (codegen/branches.py ``_shared_unseen``), and a gradient that one arm
does not give is not made of zeros to be added after the ``if`` (passes/arm_sums.py)."""
import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad

from .programs import branches as B
from .programs import whiles as W


def _backward(text: str) -> str:
    """The backward's code, without its comments (they quote the source)."""
    return "\n".join(line for line in text.split("# -- backward --", 1)[1].splitlines()
                     if not line.lstrip().startswith("#"))


def _check(compiled, fn, args):
    value, *grads = compiled.fn(*args)
    assert value == pytest.approx(fn(*args), rel=1e-12)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-8)
        assert not any(np.shares_memory(g, a) for a in args if isinstance(a, np.ndarray))
    return grads


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_backward_arm_gives_the_gradient_it_read_with_no_copy(buffers):
    """``branch_in_loop``'s backward ``else`` gives ``dh`` as ``w``'s term: it is only read
    (into the stack's row, or added), so it is not copied (``dh, dw_1 = t11, dh``)."""
    rng = np.random.default_rng(0)
    compiled = compile_grad(B.branch_in_loop, (rng.normal(size=3), rng.normal(size=3)),
                            buffers=buffers)
    assert ".copy()" not in _backward(compiled.text)
    for seed in range(6):
        r = np.random.default_rng(seed)
        _check(compiled, B.branch_in_loop, (r.normal(size=3), r.normal(size=3)))


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_value_an_arm_passes_through_is_not_copied_and_not_written(buffers):
    """``normalized``'s ``else`` passes ``x`` through, read only after: ``x_1 = x``, and the
    caller's ``x`` is never written."""
    compiled = compile_grad(B.normalized, (np.full(3, 0.1),), buffers=buffers)
    forward = compiled.text.split("# -- forward --", 1)[1].split("# -- backward --")[0]
    assert ".copy()" not in forward
    for x in (np.full(3, 0.1), np.array([3.0, -0.5, 0.2])):
        before = x.copy()
        _check(compiled, B.normalized, (x,))
        np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_returned_gradient_an_arm_read_is_still_an_array_of_its_own(buffers):
    """``nested``'s inner ``else`` gives ``x`` as both ``y``'s gradient (returned: copied)
    and a term of ``x``'s (added once: not copied)."""
    rng = np.random.default_rng(0)
    compiled = compile_grad(B.nested, (rng.normal(size=3), rng.normal(size=3)),
                            buffers=buffers)
    assert _backward(compiled.text).count(".copy()") <= 2     # dy = x.copy(), dx = z.copy()
    x = np.array([-1.0, -0.5, -2.0])
    grads = _check(compiled, B.nested, (x, 2.0 * x))         # t > 0, sum(x) < 0
    np.testing.assert_array_equal(grads[1], x)


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_an_arm_with_no_gradient_for_a_value_makes_no_zeros(buffers):
    """``nested``'s outer ``else`` gives ``x`` no term: ``dx = z`` there (a copy: returned),
    not zeros added after the ``if``; the sum is made in the arm that has a term."""
    rng = np.random.default_rng(1)
    compiled = compile_grad(B.nested, (rng.normal(size=3), rng.normal(size=3)),
                            buffers=buffers)
    assert "zeros" not in _backward(compiled.text)
    for seed in range(8):
        r = np.random.default_rng(seed)
        _check(compiled, B.nested, (r.normal(size=3), r.normal(size=3)))


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_while_step_whose_arm_gives_no_gradient_adds_no_zeros(buffers):
    """``adaptive_heun``'s rejected step gives ``k`` no term: the unwind's step keeps ``dk``
    in that arm, no ``xp.zeros`` made and added on each rejected trip."""
    args = (np.array([1.0, 2.5]), np.array([1.5, 0.7]))
    compiled = compile_grad(W.adaptive_heun, args, buffers=buffers)
    step = _backward(compiled.text).split("reversed(range(", 1)[1]
    assert "zeros" not in step
    for k in (np.array([1.0, 2.5]), np.array([2.9, 0.6])):
        _check(compiled, W.adaptive_heun, (k, np.array([1.5, 0.7])))


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_backward_arm_reads_the_values_its_forward_arm_made(buffers):
    """``three_ways``: the backward ``if`` reads the forward arm's ``tanh(x)`` and the
    ``elif``'s condition, not made again (passes/arm_saves.py); every path's gradient."""
    rng = np.random.default_rng(0)
    compiled = compile_grad(B.three_ways, (rng.normal(size=3), rng.normal(size=3)),
                            buffers=buffers)
    backward = _backward(compiled.text)
    assert "tanh" not in backward and "-1.0" not in backward
    assert compiled.text.count("xp.tanh(") == 1
    for x, w in [(np.ones(3), np.ones(3)), (np.ones(3), -np.ones(3)),
                 (np.array([0.3, -0.2, 0.1]), np.array([0.5, 0.4, -0.3]))]:
        _check(compiled, B.three_ways, (x, w))


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_an_inner_condition_is_computed_once(buffers):
    """``nested``: the inner ``if``'s condition is the forward's, read by the backward's
    inner ``if`` (the outer ``else`` gives the outer condition, False there, in its place)."""
    rng = np.random.default_rng(0)
    compiled = compile_grad(B.nested, (rng.normal(size=3), rng.normal(size=3)), buffers=buffers)
    assert "> 0.0" not in _backward(compiled.text)
    for seed in range(8):
        r = np.random.default_rng(seed)
        _check(compiled, B.nested, (r.normal(size=3), r.normal(size=3)))


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_an_arm_reads_the_product_its_condition_made(buffers):
    """``branch_in_loop``'s step: ``if np.sum(h * w) > 0: h = np.tanh(h * w)`` makes ``h *
    w`` once, for the condition, and the arm reads it (passes/arm_reads.py)."""
    rng = np.random.default_rng(0)
    compiled = compile_grad(B.branch_in_loop, (rng.normal(size=3), rng.normal(size=3)),
                            buffers=buffers)
    code = "\n".join(line for line in compiled.text.splitlines()
                     if not line.lstrip().startswith("#"))
    assert "tanh(h * w)" not in code and "xp.tanh(" in code
    for seed in range(6):
        r = np.random.default_rng(seed)
        _check(compiled, B.branch_in_loop, (r.normal(size=3), r.normal(size=3)))
