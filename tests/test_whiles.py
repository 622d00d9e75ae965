"""``while`` on a traced condition stays a ``while`` (issue 33): a while statement with its
condition and body on the tape, the trip count a run-time value, the backward a ``for`` over
the recorded trips in reverse; one module for every trip count."""
import re

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad, gradient_tape
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.ir.whiles import while_of
from yota_s2s.rules.control import guard

from .programs import whiles as W


def _rng(seed):
    return np.random.default_rng(seed)


# (name, function, inputs: rng -> args, the arguments that need a gradient)
CASES = [
    ("newton_sqrt", W.newton_sqrt, lambda r: (10.0 ** r.uniform(-2.0, 3.0, 3),), (0,)),
    ("cube_root", W.cube_root, lambda r: (r.uniform(0.5, 20.0, 3),), (0,)),
    ("until_small", W.until_small, lambda r: (r.uniform(0.5, 30.0, 3), r.normal(size=3)),
     (0, 1)),
    ("early_stop", W.early_stop, lambda r: (r.normal(size=3), r.uniform(0.5, 1.5, 3)), (0, 1)),
    ("adaptive_heun", W.adaptive_heun, lambda r: (r.uniform(0.5, 3.0, 2), r.uniform(0.5, 2.0, 2)),
     (0, 1)),
    ("with_break", W.with_break, lambda r: (10.0 ** r.uniform(-0.8, 1.5, 3),), (0,)),
    ("shrink_until", W.shrink_until, lambda r: (r.uniform(0.1, 1.5, 3),), (0,)),
    ("capped_newton", W.capped_newton, lambda r: (10.0 ** r.uniform(-0.3, 1.0, 3),), (0,)),
    ("first_small", W.first_small, lambda r: (r.normal(size=3), r.uniform(0.5, 1.5, 3)), (0, 1)),
    ("settle", W.settle, lambda r: (r.uniform(0.0, 1.5, 3), r.uniform(-1.0, 1.0, 3)), (0, 1)),
    ("break_or_turn", W.break_or_turn, lambda r: (r.normal(size=3), r.uniform(0.5, 1.2, 3)),
     (0, 1)),
    ("rk45", W.rk45, lambda r: (r.uniform(0.5, 3.0, 2), r.uniform(0.5, 2.0, 2)), (0, 1)),
]
# (skip_negative's ``continue`` makes a region of its for, not a while: LEAVING below)


def _whiles(tape):
    return [s for s in tape.stmts if while_of(s) is not None]


@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_the_while_is_one_statement_with_no_guard(name, fn, make, wrt):
    forward, tape = gradient_tape(fn, make(_rng(0)), check=True)
    assert len(_whiles(forward)) == 1 and not any(s.prim.fn is guard for s in forward.stmts)
    kinds = [while_of(s).__class__.__name__ for s in _whiles(tape)]
    assert kinds == ["While", "Unwind"] and while_of(_whiles(tape)[0]).record


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_one_module_gives_every_trip_count_its_gradient(name, fn, make, wrt, buffers):
    compiled = compile_grad(fn, make(_rng(0)), check=True, buffers=buffers)
    assert "while " in compiled.text
    assert re.search(r"for \w+ in reversed\(range\(trips\)\):", compiled.text)
    for seed in range(8):
        args = make(_rng(seed + 1))
        value, *grads = compiled.fn(*args)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
        for i, g in zip(range(len(args)), grads):
            np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_while_whose_backward_has_nothing_to_do_has_no_backward_loop(buffers):
    """line_search's while carries a step size no gradient reaches: its unwind gave back the
    zeros it was given, its loop had no statement (the module did not parse); it is gone, and
    so are the while's trip count and stacks."""
    compiled = compile_grad(W.line_search, (np.array([0.5, -0.3, 0.8]),), buffers=buffers)
    assert "reversed(range(" not in compiled.text and "trips" not in compiled.text
    for seed in range(6):
        x = _rng(seed).normal(size=3)
        value, g = compiled.fn(x)
        np.testing.assert_allclose(value, W.line_search(x), rtol=1e-12)
        np.testing.assert_allclose(g, numerical_grad(W.line_search, (x,), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
@pytest.mark.parametrize("fn", [W.early_stop, W.index_scaled], ids=["early_stop", "index_scaled"])
def test_a_float32_loop_left_on_data_is_a_while_of_float32(fn, buffers):
    """A for's index is Python's int (range's), also in the while statement and in its
    unwind (``T[t].item()``: a row of numbers stacked from Python's): the
    float32 state stays float32 (the index was np.int64, which made it float64 at the
    first trip: the loop was unrolled, a guard per test), and so do the gradients."""
    def make(seed):
        r = _rng(seed)
        return r.normal(size=3).astype(np.float32), r.uniform(0.5, 1.5, 3).astype(np.float32)
    compiled = compile_grad(fn, make(0), buffers=buffers)
    assert "while " in compiled.text and "GuardError(" not in compiled.text
    for seed in range(6):
        x, w = make(seed)
        value, dx, dw = compiled.fn(x, w)
        assert type(value) is np.float32 and dx.dtype == dw.dtype == np.float32
        np.testing.assert_allclose(value, fn(x, w), rtol=1e-6)
        wide = (x.astype(np.float64), w.astype(np.float64))
        for g, i in ((dx, 0), (dw, 1)):
            np.testing.assert_allclose(g, numerical_grad(fn, wide, i), rtol=2e-3, atol=2e-4)


def test_newtons_square_root_has_the_derivative_of_the_square_root():
    compiled = compile_grad(W.newton_sqrt, (np.array([2.0, 3.0, 5.0]),), buffers=False)
    for seed in range(5):
        a = _rng(seed).uniform(0.01, 1000.0, 3)
        _, g = compiled.fn(a)
        np.testing.assert_allclose(g, 0.5 / np.sqrt(a), rtol=1e-9)


def test_the_inputs_take_different_trip_counts():
    """The inputs above make the loops run different numbers of trips (else the tests would
    not show that the count is a run-time value)."""
    def trips(a):
        x, n = a, 0
        while np.max(np.abs(x * x - a)) > 1e-10:
            x, n = 0.5 * (x + a / x), n + 1
        return n
    counts = {trips(CASES[0][2](_rng(seed + 1))[0]) for seed in range(8)}
    assert len(counts) >= 2


@pytest.mark.parametrize("name, fn, make, wrt", CASES, ids=[c[0] for c in CASES])
def test_ys_grad_compiles_once_for_every_trip_count(name, fn, make, wrt):
    ys.clear_cache()
    for seed in range(6):
        args = make(_rng(seed))
        value, g = ys.grad(fn, *args)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
        for i in wrt:
            np.testing.assert_allclose(g[i], numerical_grad(fn, args, i), rtol=1e-6, atol=1e-7)
    info = ys.cache_info()
    assert info["misses"] == 1 and info["guard_failures"] == 0


def test_the_module_reads_like_handwritten_code():
    text = compile_grad(W.newton_sqrt, (np.array([2.0, 3.0]),), buffers=False).text
    forward = text[text.index("# -- forward"):text.index("# -- backward")]
    backward = text[text.index("# -- backward"):]
    assert "    while xp.absolute(x * x - a).max() > 1e-10:\n" in forward
    # the plain form's stacks are lists of the arrays (nothing writes them in place)
    assert "    X = []\n    V = []\n" in forward and "len(X)" not in forward
    assert "        X.append(x)\n        # whiles.py:8  x = 0.5 * (x + a / x)\n" \
        "        t6 = a / x\n        x = 0.5 * (x + t6)\n        V.append(t6)\n" \
        "        trips += 1\n" in forward
    assert "# rule the while loop's backward: the body's adjoint, trip by trip in reverse" \
        in backward
    assert "    for t in reversed(range(trips)):\n        x_1 = X[t]\n        v = V[t]\n" \
        in backward


@pytest.mark.parametrize("buffers", [True, False])
def test_the_callers_array_is_not_written(buffers):
    """The loop's carried value starts as a copy of the argument (buffered: in its work array,
    which the trips update in place; the plain form, which writes nothing in place: the
    argument itself, ``x = a``): the caller's array is never written, with no trip too (the
    gradient of ``np.sum(a)``, ones)."""
    compiled = compile_grad(W.newton_sqrt, (np.array([2.0, 3.0]),), buffers=buffers)
    assert ("    buf1[...] = a\n    x = buf1\n" if buffers else "    x = a\n") in compiled.text
    for a, expected in ((np.array([4.0, 9.0]), np.array([0.25, 1 / 6])),
                        (np.array([1.0, 1.0]), np.ones(2))):
        before = a.copy()
        _, g = compiled.fn(a)
        np.testing.assert_array_equal(a, before)
        np.testing.assert_allclose(g, expected, rtol=1e-9)


@pytest.mark.parametrize("buffers", [False, True])
def test_a_stack_grows_past_its_first_capacity(buffers):
    """Bisection to 1e-9 of [0, 101] takes 37 trips: the stacks double from 16 twice (the
    buffered form's; the plain form's are lists)."""
    compiled = compile_grad(W.cube_root, (np.array([2.0, 3.0]),), buffers=buffers)
    c = np.array([100.0, 50.0])
    _, g = compiled.fn(c)
    np.testing.assert_allclose(g, numerical_grad(W.cube_root, (c,), 0), rtol=1e-6)


@pytest.mark.parametrize("fn", [W.shape_grows, W.rebinds_argument])
def test_a_loop_that_cannot_be_a_while_statement_is_unrolled_as_before(fn):
    a = np.array([3.0, 1.5])
    forward, _ = gradient_tape(fn, (a,))
    assert not _whiles(forward) and any(s.prim.fn is guard for s in forward.stmts)
    compiled = compile_grad(fn, (a,))
    with pytest.raises(Exception, match="compile again for these arguments"):
        compiled.fn(np.array([30.0, 15.0]))


def test_a_break_on_data_leaves_the_for_at_a_trip_the_backward_starts_from():
    """``early_stop``'s inputs above leave the loop at different steps (or run all 20)."""
    def left(x, w):
        h = x
        for t in range(20):
            h = np.tanh(h * w + 0.1 * t)
            if np.sum(h * h) < 0.5:
                return t
            h = h * 1.1
        return 20
    make = dict((c[0], c[2]) for c in CASES)["early_stop"]
    assert len({left(*make(_rng(seed + 1))) for seed in range(8)}) >= 2
    text = compile_grad(W.early_stop, make(_rng(0)), buffers=False).text
    assert "    while t < 20 and (not done):\n" in text
    assert re.search(r"        # whiles\.py:\d+  if np\.sum\(h \* h\) < 0\.5:\n        h_cond = ",
                     text)


def test_a_python_float_carried_with_float32_values_keeps_numpys_dtype():
    """(fuzz seed 2007 of --whiles: the loss came back float64 where numpy gives float32.) A
    float64 ``a`` makes it a while statement; a float32 one is unrolled, as before."""
    a64 = np.array([0.5, 0.25])
    assert _whiles(gradient_tape(W.running_sum, (a64,))[0])
    a32 = a64.astype(np.float32)
    forward, _ = gradient_tape(W.running_sum, (a32,))
    assert not _whiles(forward)
    value, g = compile_grad(W.running_sum, (a32,)).fn(a32)
    assert value.dtype == W.running_sum(a32).dtype == np.float32 and g.dtype == np.float32


def test_the_row_a_trip_reads_gets_its_gradient_in_place():
    """``h = h + xs[t]`` in a for with a break on data: the backward adds each trip's
    gradient into the accumulator's row (``dxs[t] += dh``), not into a zero array of the
    whole shape per trip."""
    from .programs import loops
    xs, h0 = 0.3 + 0.01 * _rng(0).standard_normal((12, 3)), np.full(3, 0.1)
    for buffers in (False, True):
        compiled = compile_grad(loops.break_on_data, (xs, h0), buffers=buffers)
        loop = compiled.text[compiled.text.index("in reversed(range(trips)):"):]
        assert re.search(r"dxs\[\w+\] \+= dh\n", loop) and "zeros" not in loop
        _, gx, gh = compiled.fn(xs, h0)
        np.testing.assert_allclose(gx, numerical_grad(loops.break_on_data, (xs, h0), 0),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gh, numerical_grad(loops.break_on_data, (xs, h0), 1),
                                   rtol=1e-6, atol=1e-8)


# -- leaving a loop on data (issue 33: break, continue, early return, counters) -------------

def _right_for_every_input(fn, make, seeds=8, **options):
    """One module (each form), right for inputs taking every path, checked against numpy and
    central differences."""
    for buffers in (False, True):
        compiled = compile_grad(fn, make(_rng(0)), check=True, buffers=buffers, **options)
        assert "GuardError(" not in compiled.text
        for seed in range(seeds):
            args = make(_rng(seed + 1))
            value, *grads = compiled.fn(*args)
            np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
            for i, g in enumerate(grads):
                np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-7)
    return compiled


def test_a_continue_on_data_makes_the_rest_of_the_step_the_other_arm():
    """(Unrolled with a guard per step before.) 12 steps: a region whose step holds the
    branch; 4 steps: unrolled, each step's ``if`` a branch."""
    make = lambda r: (r.normal(size=3), r.uniform(-1.5, 1.5, 3))     # noqa: E731
    text = _right_for_every_input(W.skip_negative, make).text
    body = text[text.index("def skip_negative_grad("):]
    assert "    for t in range(12):\n" in body and "continue" not in body

    def short(x, w):
        s = np.zeros_like(x)
        for t in range(4):
            x = np.tanh(x * w + 0.5 * t)
            if np.sum(x) < 0.0:
                continue
            s = s + x * x
        return np.sum(s) + np.sum(x)
    _right_for_every_input(short, make)


def test_the_module_of_a_loop_left_on_data_reads_like_handwritten_code():
    text = compile_grad(W.first_small, (np.full(3, 0.5), np.ones(3)), buffers=False).text
    forward = text[text.index("# -- forward"):text.index("# -- backward")]
    assert "    while t < 20 and (not returned):\n" in forward
    assert "    if returned:\n        # whiles.py:180  return np.sum(h) * 3.0\n" \
        "        first_small = h.sum() * 3.0\n    else:\n" \
        "        # whiles.py:182  return np.sum(h ** 2)\n        first_small = " in forward
    text = compile_grad(W.capped_newton, (np.array([2.0, 3.0]),), buffers=False).text
    assert "    i = xp.int64(0)\n" in text and "        i = i + 1\n" in text
    assert "    while i < 5 and xp.absolute(x * x - a).max() > 1e-10:\n" in text
    text = compile_grad(W.shrink_until, (np.array([0.9, 0.8]),), buffers=False).text
    assert "    while x_1.sum() > 1.0 and (not done):\n" in text
    assert "        # whiles.py:146  if np.max(x) < 0.5:\n        done = x_2.max() < 0.5\n" in text


def test_an_early_return_whose_value_differs_in_shape_keeps_the_guard():
    a = np.array([3.0, 1.5])
    forward, _ = gradient_tape(W.returns_a_row, (a,))
    assert not _whiles(forward) and any(s.prim.fn is guard for s in forward.stmts)
    compiled = compile_grad(W.returns_a_row, (a,))
    np.testing.assert_allclose(compiled.fn(a)[1], numerical_grad(W.returns_a_row, (a,), 0),
                               rtol=1e-6)
    with pytest.raises(Exception, match="compile again for these arguments"):
        compiled.fn(np.array([30.0, 15.0]))


def test_names_the_user_binds_are_not_taken_by_the_flags():
    """A function that reads ``done`` and ``returned`` of its own: the flags take others."""
    def own_names(x):
        done, returned = 2.0, 3.0
        for t in range(10):
            x = x * 0.8
            if np.max(x) < 0.3:
                break
            if np.sum(x) < 0.0:
                return np.sum(x) * returned
        return np.sum(x) * done
    make = lambda r: (r.uniform(-0.5, 1.5, 3),)    # noqa: E731
    compiled = _right_for_every_input(own_names, make)
    assert "done1 = " in compiled.text and "returned1 = " in compiled.text


def test_the_command_line_writes_one_module_for_every_path(tmp_path, monkeypatch, capsys):
    """``yota-s2s compile`` of a loop with an early return: a committed file, 0 guards."""
    import importlib.util
    import inspect
    from yota_s2s import cli
    source = inspect.getsource(W.first_small)
    (tmp_path / "leaving_model.py").write_text(
        "import numpy as np\nimport yota_s2s as ys\n\n\n"
        "@ys.example(lambda: (np.full(3, 0.5), np.ones(3)))\n" + source)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["compile", "leaving_model.py"]) == cli.OK
    assert " 0 guards)" in capsys.readouterr().out
    path = tmp_path / "leaving_model_grad.py"
    spec = importlib.util.spec_from_file_location("leaving_model_grad", path)
    model_grad = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model_grad)
    make = dict((c[0], c[2]) for c in CASES)["first_small"]
    for seed in range(6):
        args = make(_rng(seed + 1))
        value, *grads = model_grad.first_small_grad(*args)
        np.testing.assert_allclose(value, W.first_small(*args), rtol=1e-12)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(W.first_small, args, i), rtol=1e-6,
                                       atol=1e-7)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_while_trial_not_kept_leaves_the_lists_it_appended_to_as_they_were(buffers):
    x = np.array([0.3, -0.7])
    value, dx = ys.simplegrad(W.counted_append, x, buffers=buffers)(x)
    assert np.isclose(value, W.counted_append(x), rtol=1e-13)
    np.testing.assert_allclose(dx, numerical_grad(W.counted_append, [x], 0), rtol=1e-6)
