"""A ``while`` on a traced condition through the other modes (issue 33): forward mode carries
the tangents in the loop (ad/while_tangents.py), ``ys.vmap`` runs the loop while any example's
condition holds (ad/batch_whiles.py), ``ys.compile`` writes the loop; one module for every
trip count, values against finite differences."""
import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad, compile_jvp, compile_vmap, per_example_tape
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.ir.whiles import while_of

from .test_whiles import CASES, _rng
from .programs import loops, whiles as W


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


def _batch(make, count):
    examples = [make(_rng(seed + 1)) for seed in range(count)]
    return examples, tuple(np.stack([e[k] for e in examples]) for k in range(len(examples[0])))


@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_vmap_runs_the_loop_while_any_example_runs(name, fn, make, wrt):
    """The examples of a batch leave the loop at different trips: the batched loop runs while
    any runs, each trip updating those still running (``xp.where(running, ...)``); one module,
    each example's value (today's main: GuardError, the examples take different paths)."""
    examples, args = _batch(make, 6)
    compiled = compile_vmap(fn, args, (0,) * len(args), check=True)
    assert "while xp.any(running):" in compiled.text and "GuardError(" not in compiled.text
    np.testing.assert_allclose(compiled.fn(*args), [fn(*e) for e in examples], rtol=1e-12,
                               atol=1e-12)


def test_vmap_of_a_for_with_a_break_keeps_the_index_one_number():
    """``for t in range(12): h = h + xs[t]; if ...: break``: every example that runs is at
    the same step, so ``t`` stays a number (``xs[:, t]``) and no example indexes past the end;
    the examples break at different steps."""
    rng = _rng(5)
    xs, h0 = rng.normal(size=(8, 12, 3)), rng.normal(size=(8, 3))
    compiled = compile_vmap(loops.break_on_data, (xs, h0), (0, 0), check=True)
    assert "while xp.any(running):" in compiled.text and "GuardError(" not in compiled.text
    expected = [loops.break_on_data(x, h) for x, h in zip(xs, h0)]
    np.testing.assert_allclose(compiled.fn(xs, h0), expected, rtol=1e-12)


def test_vmap_keeps_the_while_when_its_condition_is_the_same_for_every_example():
    """``until_small(a, w)`` with ``a`` the same for every example: the condition reads
    nothing batched, the loop is the example's, with the batched sum carried."""
    a, ws = np.array([2.0, 5.0, 9.0]), _rng(6).normal(size=(4, 3))
    compiled = compile_vmap(W.until_small, (a, ws), (None, 0), check=True)
    assert "while " in compiled.text and "xp.any(" not in compiled.text
    np.testing.assert_allclose(compiled.fn(a, ws), [W.until_small(a, w) for w in ws],
                               rtol=1e-12)


def halvings(a):
    """Not a fixed point: a trip too many changes the value."""
    x = a
    n = 0.0
    while np.sum(x * x) > 1.0:
        x = x * 0.5
        n = n + 1.0
    return np.sum(x) + n


def test_vmap_stops_each_example_at_its_own_trip():
    """Each example leaves when its own sum is small: the condition after a trip reads the
    trip's values per example (it read them as one value for the batch, a sum over all the
    examples, and every example ran as long as the largest: found by the fuzzer's whiles)."""
    a = np.array([[0.1, 0.2], [3.0, 1.0], [40.0, -7.0], [0.9, 0.1]])
    compiled = compile_vmap(halvings, (a,), (0,), check=True)
    np.testing.assert_allclose(compiled.fn(a), [halvings(x) for x in a], rtol=1e-15)


def halve_by_solving(A, b):
    x = b
    while np.max(np.abs(x)) > 1.0:
        x = np.linalg.solve(A, x)
    return np.sum(x)


def test_vmap_unrolls_a_while_whose_body_may_raise_for_an_example_that_left():
    """An example that has left would run the body again: a linear solve (which may raise on
    its values) is not run so; the loop is unrolled on the first example, as before: right for
    a batch on one path, GuardError naming the loop for another."""
    A = np.stack([2.0 * np.eye(2)] * 3)
    b = np.array([[3.0, 1.0], [2.5, -3.5], [-3.9, 0.2]])     # two trips each
    compiled = compile_vmap(halve_by_solving, (A, b), (0, 0))
    assert "xp.any(running)" not in compiled.text
    np.testing.assert_allclose(compiled.fn(A, b), [halve_by_solving(a, v) for a, v in zip(A, b)])
    with pytest.raises(Exception, match=r"`while np.max\(np.abs\(x\)\) > 1.0:` was") as e:
        compiled.fn(A, b * np.array([[1.0], [1.0], [100.0]]))
    assert type(e.value).__name__ == "GuardError"


def test_ys_compile_writes_the_while_once_for_every_trip_count():
    """The forward alone (ys.compile): the loop as written, right for inputs of any count."""
    f = ys.compile(W.cube_root, np.array([1.0, 8.0]))
    assert "while " in ys.source(f)
    for c in (np.array([0.5, 27.0]), np.array([1000.0, 3.0])):
        np.testing.assert_allclose(f(c), W.cube_root(c), rtol=1e-14)


def damped(a):
    """``c``, a carried number read after the loop by nothing: its cotangent starts at zero.
    Its factor is a number clipped (``np.clip``, which numba takes for arrays only) and made
    from the largest element (a max's gradient over all axes: the ties counted)."""
    x = a
    c = 1.0
    while np.sum(x * x) > 0.5:
        x = x * c * 0.9
        c = c * np.clip(0.9 + 0.1 * np.max(np.abs(x)), 0.5, 0.99)
    return np.sum(x)


def test_numba_prints_the_while_and_its_unwind():
    """engine="numba": the gradient's body is one njit function holding the recording
    ``while`` and the unwind, whose ``reversed(range(trips))`` numba does not take, written
    ``range(trips - 1, -1, -1)`` (numba_calls.py), and whose cotangent of the number ``c``
    starts as a number, not a 0-d array (today's main: 'the body stays numpy: Untyped global
    name reversed'; then 'Cannot unify array(float64, 0d, C) and float64', as adaptive_heun's
    ``dt``; f4ad041: 'No implementation of function clip', then of ``sum`` with ``keepdims``)."""
    pytest.importorskip("numba")
    compiled = compile_grad(damped, (np.array([0.9, 0.7]),), engine="numba")
    assert "@numba.njit" in compiled.text and "stays numpy" not in compiled.text
    assert "in range(trips - 1, -1, -1):" in compiled.text
    for a in (np.array([0.9, 0.7]), np.array([0.1, 0.2]), np.array([3.0, -2.0])):
        value, g = compiled.fn(a)
        np.testing.assert_allclose(value, damped(a), rtol=1e-12)
        np.testing.assert_allclose(g, numerical_grad(damped, (a,), 0), rtol=1e-6)


def test_hessp_and_hessian_are_right_for_every_trip_count():
    """ys.hessp and ys.hessian, whose modules are kept, are right for another trip count (the
    Hessian-vector module is the JVP of the gradient tape, one for every count:
    test_while_second_order.py; before it, a module per count, compiled again where the
    kept one raised its GuardError). Values against the exact Hessian of sqrt and
    differences of the gradient."""
    hp = ys.hessp(W.newton_sqrt)
    v = np.array([0.7, -0.4])
    for a in (np.array([2.0, 3.0]), np.array([0.01, 900.0])):
        np.testing.assert_allclose(hp(a, v), -0.25 * a ** -1.5 * v, rtol=1e-8)
        H = ys.hessian(W.newton_sqrt, a)
        np.testing.assert_allclose(H, np.diag(-0.25 * a ** -1.5), rtol=1e-8, atol=1e-12)

        def along(x):
            return float(np.sum(ys.grad(W.newton_sqrt, x)[1][0] * v))
        np.testing.assert_allclose(hp(a, v), numerical_grad(along, [a], 0), rtol=1e-5)


@pytest.mark.parametrize("name, fn, make, wrt", [c for c in CASES if c[0] in (
    "until_small", "early_stop", "adaptive_heun")], ids=["until_small", "early_stop",
                                                         "adaptive_heun"])
def test_per_example_gradients_unwind_each_examples_trips(name, fn, make, wrt):
    """ys.per_example_grad through a while: the recording loop counts each example's trips
    beside the loop's (``trips = trips + running``; the stacks hold every example's row), and
    the unwind runs the largest count, a trip updating the examples that ran it only (today's
    main: GuardError, the examples take different paths)."""
    examples = [make(_rng(seed + 1)) for seed in range(5)]
    params, batch = examples[0][0], np.stack([e[1] for e in examples])
    got = ys.per_example_grad(fn, params, batch)
    expected = np.stack([numerical_grad(fn, (params, b), 0) for b in batch])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    _, tape = per_example_tape(fn, (params, batch), (None, 0), check=True)
    assert [type(while_of(s)).__name__ for s in tape.stmts if while_of(s) is not None] == \
        ["While", "Unwind"]
