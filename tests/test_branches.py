"""``if`` on a traced number stays an ``if`` (issue 33): a branch statement with both arms on
the tape, its backward a branch on the same condition, one module for every path."""
import re

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad, compile_jvp, compile_vmap, gradient_tape
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.ir.branch import branch_of
from yota_s2s.ir.region import body_tapes
from yota_s2s.rules.control import guard

from .programs import branches as B


def _rng(seed):
    return np.random.default_rng(seed)


# (name, function, inputs: seed -> args, the arguments that need a gradient)
CASES = [
    ("piecewise", B.piecewise, lambda r: (r.normal(size=4),), (0,)),
    ("huber", B.huber, lambda r: (r.normal(size=3), float(r.uniform(0.5, 3.0))), (0, 1)),
    ("three_ways", B.three_ways, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
    ("normalized", B.normalized, lambda r: (r.normal(size=5) * r.uniform(0.2, 1.2),), (0,)),
    ("sqrt_or_half", B.sqrt_or_half, lambda r: (r.normal(size=3) + r.uniform(-1, 2),), (0,)),
    ("nested", B.nested, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
    ("two_results", B.two_results, lambda r: (r.normal(size=3),), (0,)),
    # an if that returns: the statements after it are its other arm
    ("huber_returns", B.huber_returns, lambda r: (r.normal(size=3), float(r.uniform(0.5, 3.0))),
     (0, 1)),
    ("returns_in_chain", B.returns_in_chain, lambda r: (r.normal(size=3) * 1.5,), (0,)),
    ("newton_or_half", B.newton_or_half, lambda r: (r.uniform(0.1, 3.0, 3),), (0,)),
    ("returns_inside", B.returns_inside, lambda r: (r.normal(size=3) * 1.5,), (0,)),
    # and, or, not and a chain of comparisons in the test; conditional expressions
    ("both_ways", B.both_ways, lambda r: (r.normal(size=3), r.normal(size=3) + 0.5), (0, 1)),
    ("in_band", B.in_band, lambda r: (r.normal(size=3),), (0,)),
    ("scaled_twice", B.scaled_twice, lambda r: (r.normal(size=3) * 1.2, r.normal(size=3)),
     (0, 1)),
    # inside a loop region: the branch in the step, its condition stacked or made again
    ("branch_in_loop", B.branch_in_loop, lambda r: (r.normal(size=3), r.normal(size=3)), (0, 1)),
]


def _paths(make, n=6):
    """``n`` inputs (seeds 0 .. n - 1: each case's reach both arms)."""
    return [make(_rng(seed)) for seed in range(n)]


def _branches(tape):
    """The branch statements of ``tape`` and of its loop bodies."""
    return [s for t in (tape, *body_tapes(tape)) for s in t.stmts if branch_of(s) is not None]


def _guards(tape):
    return [s for t in (tape, *body_tapes(tape)) for s in t.stmts if s.prim.fn is guard]


@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_the_if_is_a_branch_on_the_tape_with_no_guard(name, fn, make, wrt):
    forward, tape = gradient_tape(fn, make(_rng(0)), check=True)
    assert _branches(forward) and not _guards(forward)
    assert len(_branches(tape)) >= 2 and not _guards(tape)      # forward and backward


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_one_module_gives_every_path_its_gradient(name, fn, make, wrt, buffers):
    compiled = compile_grad(fn, make(_rng(0)), check=True, buffers=buffers)
    assert "if " in compiled.text
    for args in _paths(make):
        value, *grads = compiled.fn(*args)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
        for i, g in zip(range(len(args)), grads):
            expected = numerical_grad(fn, args, i)
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_ys_grad_compiles_once_for_every_path(name, fn, make, wrt):
    ys.clear_cache()
    for args in _paths(make, 6):
        value, g = ys.grad(fn, *args)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
        for i in wrt:
            np.testing.assert_allclose(g[i], numerical_grad(fn, args, i), rtol=1e-6, atol=1e-7)
    info = ys.cache_info()
    assert info["misses"] == 1 and info["guard_failures"] == 0


def test_the_inputs_reach_both_arms():
    """The inputs of the tests above take each arm of the first branch."""
    taken = {
        "piecewise": lambda x: np.sum(x) > 0,
        "huber": lambda r, d: np.sum(np.abs(r)) <= d,
        "three_ways": lambda x, w: abs(np.dot(x, w)) > 1.0,
        "normalized": lambda x: np.max(np.abs(x)) > 1.0,
        "sqrt_or_half": lambda x: np.min(x) > 0.0,
        "nested": lambda x, y: np.sum(x * y) > 0.0,
        "two_results": lambda x: np.sum(x) > 0.0,
        "huber_returns": lambda r, d: np.sum(np.abs(r)) <= d,
        "returns_in_chain": lambda x: abs(np.sum(x)) > 2.0,
        "returns_inside": lambda x: np.sum(x) > 0 and np.max(x) > 1.0,
        "newton_or_half": lambda a: np.min(a) > 0.5,
        "scaled_twice": lambda x, w: np.max(np.abs(x)) > 1.0,
        "both_ways": lambda x, w: np.sum(x) > 0 and not np.max(w) > 1.0 or np.min(x) > 0.5,
        "in_band": lambda x: -1.0 < np.sum(x) < 1.0,
        "branch_in_loop": lambda x, w: np.sum(x * w) > 0.0,
    }
    for name, fn, make, _ in CASES:
        arms = {bool(taken[name](*args)) for args in _paths(make, 6)}
        assert arms == {True, False}, name


def test_a_branch_in_a_loop_region_keeps_the_loop_and_compiles_once():
    """The branch-in-loop program of issue 33: the loop stays a region (its step holds the
    branch), the backward loop reads the branch taken per step, one compile for any input."""
    x, w = _rng(0).normal(size=3), _rng(1).normal(size=3)
    forward, tape = gradient_tape(B.branch_in_loop, (x, w), check=True)
    assert any("region: range(20), 20 steps" in note for note in forward.loops)
    text = compile_grad(B.branch_in_loop, (x, w), buffers=False).text
    assert "H_COND = xp.empty((20,), dtype=xp.bool)" in text and "H_COND[t] = h_cond" in text
    assert "h_cond_1 = H_COND[t]" in text and "if h_cond_1:" in text


def test_the_module_reads_like_handwritten_code():
    compiled = compile_grad(B.piecewise, (np.ones(3),), buffers=False)
    text = compiled.text
    forward = text[text.index("# -- forward"):text.index("# -- backward")]
    backward = text[text.index("# -- backward"):]
    assert "if x_cond:\n        # branches.py:7  y = x ** 2\n        y_ = x ** 2\n" in forward
    assert "    else:\n        # branches.py:9  y = -x\n        y_ = -x\n" in forward
    assert "# rule the branch's backward: each arm's adjoint, under the same condition" \
        in backward
    assert "    if x_cond:\n        # grad of branches.py:7  y = x ** 2\n" \
        "        # rule pow, x1: dy * x2 * x1 ** (x2 - 1)\n" in backward
    assert "    else:\n        # grad of branches.py:9  y = -x\n        # rule neg, x: -dy\n" \
        in backward


def test_a_constant_the_backward_arms_read_is_made_and_folded_in_them():
    """The seed of ``np.sum(y * 3.0)``'s backward, ``broadcast_to(3.0, (4,))``, is made in each
    arm that reads it, where the arm's passes fold it (``dy * 2 * x`` is ``6.0 * x``), not
    made before the ``if`` and multiplied through (what made piecewise 2x the one-path module)."""
    x = np.array([0.5, -1.0, 2.0, 0.25])
    for buffers in (False, True):
        compiled = compile_grad(B.piecewise, (x,), buffers=buffers)
        backward = compiled.text[compiled.text.index("# -- backward"):]
        made = "dx = xp.multiply(_6_0, x, out=_result(out, 0, (4,)))" if buffers \
            else "dx = 6.0 * x"         # (buffered: made in the returned array, branch_plan.py)
        assert made in backward and "dy_" not in backward
        for sign in (1.0, -1.0):
            value, dx = compiled.fn(sign * x)[0], compiled.fn(sign * x)[1]
            assert value == B.piecewise(sign * x)
            np.testing.assert_allclose(dx, numerical_grad(B.piecewise, (sign * x,), 0),
                                       rtol=1e-7, atol=1e-8)


def test_an_arm_whose_result_is_a_broadcast_number_gives_an_array_of_its_own():
    """``scaled_or_squared``'s backward arm gives ``dv`` = 0.5 everywhere: an array of its own
    (``xp.full``), which the buffered form then writes ``dx`` into (a read-only broadcast there
    was 'output array is read-only', fuzz --branches seed 95)."""
    for x in (np.array([1.0, -1.5, 0.5]), np.array([0.1, 0.2, -0.3])):
        for buffers in (True, False):
            compiled = compile_grad(B.scaled_or_squared, (x,), buffers=buffers)
            for y in (x, np.array([1.0, -1.5, 0.5]), np.array([0.1, 0.2, -0.3])):
                value, dx = compiled.fn(y)
                assert value == pytest.approx(B.scaled_or_squared(y), rel=1e-12)
                np.testing.assert_allclose(dx, numerical_grad(B.scaled_or_squared, (y,), 0),
                                           rtol=1e-6, atol=1e-8)


def test_the_backward_arm_reads_the_forward_result_not_made_again():
    """What an arm's adjoint reads of the arm's result (``sqrt``'s ``y``, ``x / m``) is the
    forward branch's result, given to the backward branch: not computed a second time."""
    x = np.array([0.5, 2.0, 1.5])
    compiled = compile_grad(B.sqrt_or_half, (x,), buffers=False)
    assert compiled.text.count("xp.sqrt(") == 1
    assert "dx = dy_ / (2 * y_)" in compiled.text or "dx = 1.0 / (2 * y_)" in compiled.text
    compiled = compile_grad(B.normalized, (np.array([3.0, -1.0, 0.5]),), buffers=False)
    assert compiled.text.count(" = x / m\n") == 1      # the forward's; the backward reads it
    for args, fn in (((x,), B.sqrt_or_half), ((-x,), B.sqrt_or_half),
                     ((3 * x,), B.normalized), ((0.1 * x,), B.normalized)):
        value, g = ys.grad(fn, *args)
        assert value == pytest.approx(fn(*args), rel=1e-12)
        np.testing.assert_allclose(g[0], numerical_grad(fn, args, 0), rtol=1e-6, atol=1e-8)


def _arm_of(text, cond):
    """The lines of the backward's ``if cond:`` arm (up to its ``else:``)."""
    backward = text[text.index("# -- backward"):]
    start = backward.index(f"if {cond}:\n")
    return backward[start:backward.index("else:", start)]


def test_a_value_only_one_arm_differentiates_has_its_backward_under_that_arm():
    """``m = max(abs(x))`` feeds the condition and one arm: its cotangent is zero on the
    other path, so its backward (max's ``==`` mask, abs's sign) is under the arm, not run on
    both paths (normalized was 2.1x the one-path module); nested, ``s = dot(x, w)`` of
    three_ways is differentiated under the innermost ``else`` only, and no arm makes zeros."""
    compiled = compile_grad(B.normalized, (np.array([3.0, -1.0, 0.5]),), buffers=False)
    arm = _arm_of(compiled.text, "m_cond")
    assert "# grad of branches.py:34  m = np.max(np.abs(x))" in arm
    assert "xp.sign(x)" in arm and compiled.text.count("xp.sign(") == 1
    compiled = compile_grad(B.three_ways, (np.ones(3), np.ones(3)), buffers=False)
    backward = compiled.text[compiled.text.index("# -- backward"):]
    inner = backward[backward.rindex("else:"):]
    assert "# grad of branches.py:23  s = np.dot(x, w)" in inner
    assert backward.count("# grad of branches.py:23") == 1 and "zeros" not in backward
    for fn, make in ((B.normalized, lambda r: (r.normal(size=3) * r.uniform(0.2, 1.2),)),
                     (B.three_ways, lambda r: (r.normal(size=3), r.normal(size=3)))):
        for buffers in (False, True):
            compiled = compile_grad(fn, make(_rng(0)), buffers=buffers)
            for args in _paths(make, 8):
                value, *grads = compiled.fn(*args)
                assert value == pytest.approx(fn(*args), rel=1e-12)
                for i, g in enumerate(grads):
                    np.testing.assert_allclose(g, numerical_grad(fn, args, i),
                                               rtol=1e-6, atol=1e-8)


def test_an_arm_that_passes_a_value_through_leaves_the_callers_array():
    """``normalized`` leaves ``x`` as it is in one arm: the caller's array is never written
    (nor returned as a gradient's memory). In the buffered form, the other arm writes the
    branch result's work array; the passing arm binds ``x`` itself, as the plain form does,
    where nothing writes either array while the result is read (branches.py _read_unseen)."""
    compiled = compile_grad(B.normalized, (np.full(3, 0.1),), buffers=True)
    assert "x_1 = xp.divide(x, buf5, out=buf2)" in compiled.text
    assert "    else:\n        x_1 = x\n" in compiled.text and "[...] = x\n" not in compiled.text
    x = np.full(3, 0.1)
    before = x.copy()
    compiled.fn(x)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("fn", [B.shapes_differ, B.statics_differ])
def test_arms_that_disagree_keep_the_guard(fn):
    x = np.array([1.0, 2.0, 3.0])
    forward, _ = gradient_tape(fn, (x,))
    assert _guards(forward) and not _branches(forward)
    compiled = compile_grad(fn, (x,))
    with pytest.raises(Exception, match="was True when this gradient was compiled") as e:
        compiled.fn(-x)
    assert type(e.value).__name__ == "GuardError"


@pytest.mark.parametrize("name,fn,make,wrt", CASES, ids=[c[0] for c in CASES])
def test_forward_mode_goes_through_the_branch(name, fn, make, wrt):
    """The JVP of a branch is a branch on the same condition (ad/branch_tangents.py): one
    jvp module, with no guard, gives ``J @ t`` on every path; ys.linearize's tangent map too
    (it reads the condition the forward saved)."""
    compiled = compile_jvp(fn, make(_rng(0)), check=True, buffers=False)
    assert "if " in compiled.text and "GuardError(" not in compiled.text
    assert "# tangent of branches.py" in compiled.text
    for args in _paths(make, 4):
        tangents = tuple(_rng(7).normal(size=np.shape(a)) if np.ndim(a) else 0.7 for a in args)
        expected = sum(np.sum(numerical_grad(fn, args, i) * t) for i, t in enumerate(tangents))
        value, tangent = compiled.fn(*args, *tangents)
        assert value == pytest.approx(fn(*args), rel=1e-12)
        assert tangent == pytest.approx(expected, rel=1e-6, abs=1e-8)
        value, f_jvp = ys.linearize(fn, *args)
        assert f_jvp(*tangents) == pytest.approx(expected, rel=1e-6, abs=1e-8)


# A while in an arm: the gradient module's arm holds the recording while and the other its
# unwind, which the arm trial does not take when traced again: second order keeps a guard
SECOND_ORDER = [c for c in CASES if c[0] != "newton_or_half"]


@pytest.mark.parametrize("strategy", ["rev-rev", "fwd-rev"])
@pytest.mark.parametrize("name,fn,make,wrt", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order_through_the_branch_is_one_module_for_every_path(name, fn, make, wrt,
                                                                      strategy):
    """The plain gradient module holds ``if``s; traced again for ys.hvp (reverse over reverse,
    forward over reverse) they are branches again: the Hessian-vector product compiled for the
    first input is right on every path (no GuardError), against differences of the gradient.
    (huber's backward arm gave ``d * 1.0``, a Python float, where the other gave a numpy one:
    traced again, the arms disagreed and the if was a guard.)"""
    hf = ys.hvp(fn, *make(_rng(0)), strategy=strategy)
    for args in _paths(make, 4):
        v = _rng(9).normal(size=np.shape(args[0]))

        def along(x_):
            return float(np.sum(ys.grad(fn, x_, *args[1:])[1][0] * v))
        np.testing.assert_allclose(hf(*args, v), numerical_grad(along, [args[0]], 0),
                                   rtol=1e-5, atol=1e-6)


def test_a_function_compiled_again_and_again_warns_naming_the_guard():
    """Arms of different shapes keep their guards: one variant per path, and at the fourth a
    RecompileWarning that names a guard's line and condition (issue 33)."""
    ys.clear_cache()
    paths = [[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0], [1.0, 0.5, 0.2], [-3.0, -1.0, 2.5]]
    with pytest.warns(ys.RecompileWarning) as caught:
        for x in paths[:3] * 2:
            ys.grad(B.four_paths, np.array(x))
        assert ys.cache_info()["variants"] == 3 and not caught
        ys.grad(B.four_paths, np.array(paths[3]))
    assert len(caught) == 1
    assert re.search(r"compiled four_paths 4 times .*a guard failed, branches\.py:\d+ `if ",
                     str(caught[0].message))


def test_ys_compile_writes_the_branch_too():
    """The forward alone (ys.compile) holds the if: right on both paths, no GuardError."""
    f = ys.compile(B.huber, np.ones(3), 1.0)
    for r, d in ((np.array([0.1, -0.2, 0.1]), 1.0), (np.array([2.0, -1.0, 0.5]), 0.7)):
        np.testing.assert_allclose(f(r, d), B.huber(r, d), rtol=1e-15)


def appends_in_an_arm(x, hs):
    if np.sum(x) > 0:
        hs.append(x * 2.0)
    return np.sum(hs[-1] * x)


def writes_an_outer_array(x, scale):
    state = {"buf": np.cos(x) * scale}
    if np.sum(x) > 0:
        state["buf"][0] = np.sum(x)         # an array from before the if, not by a local name
    return np.sum(state["buf"] * x)


@pytest.mark.parametrize("fn, extra", [
    (appends_in_an_arm, lambda: [np.ones(3)]),
    (writes_an_outer_array, lambda: 0.5)], ids=["append", "array"])
def test_an_arm_that_changes_what_it_reached_keeps_the_guard(fn, extra):
    """A list or an array from before the if, changed by an arm (reached through an argument
    or a dict, not a local name): both arms must not run on the trace; the guard is kept."""
    x = np.array([0.5, 1.0, -0.2])
    forward, _ = gradient_tape(fn, (x, extra()))
    assert _guards(forward) and not _branches(forward)
    value, g = ys.grad(fn, x, extra())
    np.testing.assert_allclose(value, fn(x, extra()))
    np.testing.assert_allclose(g[0], numerical_grad(lambda x_: fn(x_, extra()), [x], 0),
                               rtol=1e-6)


@pytest.mark.parametrize("name,fn,make,wrt", CASES, ids=[c[0] for c in CASES])
def test_vmap_selects_each_examples_arm(name, fn, make, wrt):
    """Under ys.vmap a condition that reads a batched value differs per example: both arms
    run on every example and each result is ``xp.where(cond, then, orelse)``
    (ad/batch_branches.py; the buffered form writes it ``xp.copyto(y, orelse); xp.copyto(y,
    then, where=cond)``); one module for a batch whose examples take both paths (a guard that
    failed on such a batch before)."""
    examples = _paths(make, 6)
    axes = tuple(0 if np.ndim(a) else None for a in examples[0])
    args = tuple(np.stack([e[k] for e in examples]) if axis == 0 else examples[0][k]
                 for k, axis in enumerate(axes))
    compiled = compile_vmap(fn, args, axes)
    assert ("xp.where(" in compiled.text or ", where=" in compiled.text) \
        and "GuardError(" not in compiled.text
    with np.errstate(all="ignore"):         # (sqrt of the examples the other arm takes)
        got = compiled.fn(*args)
    expected = [fn(*[a[i] if axis == 0 else a for a, axis in zip(args, axes)])
                for i in range(len(examples))]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_per_example_gradients_select_each_examples_arm():
    rng = _rng(3)
    for fn in (B.three_ways, B.nested, B.branch_in_loop):
        x, W = rng.normal(size=3), rng.normal(size=(8, 3)) * 1.5
        g = ys.per_example_grad(fn, x, W)
        expected = np.stack([numerical_grad(fn, (x, w), 0) for w in W])
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)


def test_vmap_keeps_the_if_when_the_condition_is_the_same_for_every_example():
    X = _rng(4).normal(size=(5, 3))
    for c in (np.array([0.5, 1.0, 2.0]), np.array([-0.5, 0.3, -2.0])):
        compiled = compile_vmap(B.shifted_or_scaled, (X, c), (0, None))
        assert "if c_cond:" in compiled.text and "xp.where(" not in compiled.text
        for c2 in (c, -c):
            np.testing.assert_allclose(compiled.fn(X, c2),
                                       [B.shifted_or_scaled(x, c2) for x in X], rtol=1e-13)


def test_vmap_refuses_an_arm_that_may_raise_on_another_examples_values():
    A = np.stack([np.eye(2) * k for k in (1.0, -1.0, 0.0)])
    b = np.ones((3, 2))
    with pytest.raises(ys.NoRuleError) as error:
        compile_vmap(B.solved_or_kept, (A, b), (0, 0))
    message = str(error.value)
    assert "decides per example" in message and "solve" in message
    assert "np.trace(A) > 0.0" in message


def test_numba_prints_a_branch_whose_arm_gives_no_gradient_for_a_number():
    """engine="numba": huber's body is one njit function with the ``if`` in it. The arm that
    does not differentiate ``d`` gives the number 0.0 (a 0-d array there was 'Cannot unify
    array(float64, 0d, C) and float64' and the body stayed numpy); values equal to the plain
    form's on both paths."""
    pytest.importorskip("numba")
    r = np.array([0.3, -0.2, 0.4])
    compiled = compile_grad(B.huber, (r, 2.0), engine="numba")
    plain = compile_grad(B.huber, (r, 2.0), buffers=False)
    assert "@numba.njit" in compiled.text and "stays numpy" not in compiled.text
    for d in (2.0, 0.5):
        for got, expected in zip(compiled.fn(r, d), plain.fn(r, d)):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


def _two_sums(x, a, b):
    v = (x + a) * 0.5 + (x + b) * 0.5
    if np.max(v) > 1.0:
        w = v * v
    else:
        w = np.sin(v)
    return np.sum(w)


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_an_array_an_arm_gives_as_two_results_is_two_arrays(buffers):
    """``da`` and ``db`` of ``_two_sums`` are one value, ``dv * 0.5``, in each backward arm
    (``v``'s backward is under the arms): the arm gives two arrays, not one twice (the
    buffered form wrote into the caller's gradient; fuzz --branches seed 1039)."""
    r = _rng(3)
    args = (r.normal(size=4), r.normal(size=4), r.normal(size=4))
    compiled = compile_grad(_two_sums, args, buffers=buffers)
    for scale in (1.0, 4.0):
        xs = tuple(scale * a for a in args)
        value, *grads = compiled.fn(*xs)
        assert value == pytest.approx(_two_sums(*xs), rel=1e-12)
        assert not any(np.shares_memory(g, h) for i, g in enumerate(grads) for h in grads[:i])
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(_two_sums, xs, i), rtol=1e-6, atol=1e-8)


# An array a result is on one path only, updated in place after the ``if``: in numpy the update
# changes the result on that path (it is the same array) and not on the other.

def _passed_then_added(x):
    y = x * 2.0
    if np.sum(x) > 0:
        z = y
    else:
        z = y * 3.0
    y += 1.0
    return np.sum(z * y)


def _kept_then_written(x):
    y = x * 2.0
    z = y
    if np.sum(x) > 0:
        z = z * 3.0
    y[0] = 5.0
    return np.sum(z * y)


def _view_then_written(x):
    y = x * 2.0
    if np.sum(x) > 0:
        z = y[1:]
    else:
        z = y[:-1] * 3.0
    y[1] = 7.0
    return np.sum(z * z)


def _view_from_before_then_written(x):
    y = x * 2.0
    w = y[1:]
    if np.sum(x) > 0:
        z = w
    else:
        z = w * 3.0
    y[2] = 7.0
    return np.sum(z * z)


def _listed_then_added(x):
    y = x * 2.0
    held = [y]
    if np.sum(x) > 0:
        z = y
    else:
        z = y * 3.0
    held[0] += 1.0
    return np.sum(z * x)


@pytest.mark.parametrize("fn", [_passed_then_added, _kept_then_written, _view_then_written,
                                _view_from_before_then_written, _listed_then_added],
                         ids=lambda f: f.__name__.strip("_"))
def test_an_array_a_result_is_on_one_path_updated_after_the_if_keeps_the_guard(fn):
    """The update changes the result on the path where it is that array: a branch statement
    cannot say so, and the if stays a guard (the trace starts again: SharedOnOnePath). Before,
    both forms gave the other path's value on that path, silently (z * y off by 15)."""
    for x in (np.array([1.0, 2.0, 3.0]), np.array([-1.0, -2.0, 0.5])):
        value, g = ys.grad(fn, x)
        assert value == pytest.approx(fn(x.copy()), rel=1e-12)
        np.testing.assert_allclose(g[0], numerical_grad(lambda a: fn(a.copy()), (x,), 0),
                                   rtol=1e-6, atol=1e-8)
    module = compile_grad(fn, (np.array([1.0, 2.0, 3.0]),), buffers=False).text
    assert "raise GuardError" in module


def scaled_or_summed(x, c):
    if np.sum(c) > 0.0:        # reads nothing batched when vmap batches x only
        y = x * c
    else:
        y = x * np.sum(x)      # a reduction of the batched input, in the second arm
    return np.sum(y ** 2)


def test_vmap_batches_the_second_arms_inputs_too():
    """The branch's batching took the batched inputs of its first arm for both arms' (each arm
    has inputs of its own): in the else arm ``x`` was not batched, ``np.sum(x)`` summed the
    whole batch, and every example's value was wrong, silently."""
    X = _rng(4).normal(size=(5, 3))
    for c in (np.array([-0.5, 1.0, -2.0]), np.array([0.5, 1.0, 2.0])):
        for buffers in (True, False):
            compiled = compile_vmap(scaled_or_summed, (X, c), (0, None), buffers=buffers)
            assert "if c_cond:" in compiled.text
            np.testing.assert_allclose(compiled.fn(X, c),
                                       [scaled_or_summed(x, c) for x in X], rtol=1e-13)
