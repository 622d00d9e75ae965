"""A while loop's memory in the buffered form (issue 33): its stacks are held per thread,
made on the thread's first call, doubled by a call that needs more rows and kept so; and
``max_steps`` bounds them: past it the function raises ``StepLimitError`` naming the loop."""
import sys
import threading

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad
from yota_s2s.errors import UsageError
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.memory_report import allocated

from .programs import custom, whiles as W


def _stacks_of(compiled):
    return compiled.module._local.stacks


def test_a_threads_stacks_are_made_once_and_kept_grown():
    """Bisection to 1e-9 of [0, 101] takes 37 trips: the first such call doubles the stacks
    of 16 rows twice, and the calls after it reuse them: none allocates a stack again."""
    compiled = compile_grad(W.cube_root, (np.array([2.0, 3.0]),), buffers=True)
    assert "_held_stacks = _stacks()" in compiled.text and "xp.empty((16" not in compiled.text
    c = np.array([100.0, 50.0])
    _, g = compiled.fn(c)
    np.testing.assert_allclose(g, numerical_grad(W.cube_root, (c,), 0), rtol=1e-6)
    stacks = list(_stacks_of(compiled))
    # (a stack of arrays is a list of its rows: workspace.py _stacks())
    assert [(len(s), s[0].shape) for s in stacks] == [(64, (2,))] * len(stacks) and stacks
    compiled.fn(c)
    assert all(a is b for a, b in zip(_stacks_of(compiled), stacks))
    # a stack of 64 rows is 1 KB: a call now allocates only the loop body's small arrays
    assert allocated(lambda: compiled.fn(c)).arrays < 64 * 2 * 8


def test_each_thread_has_stacks_of_its_own():
    compiled = compile_grad(W.newton_sqrt, (np.array([2.0, 3.0]),), buffers=True)
    inputs = [np.array([2.0 + k, 10.0 ** (k + 1)]) for k in range(4)]
    expected = [compiled.fn(a) for a in inputs]
    errors = []

    def work(k):
        for _ in range(50):
            value, g = compiled.fn(inputs[k])
            if value != expected[k][0] or not np.array_equal(g, expected[k][1]):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_max_steps_bounds_the_trips_and_names_the_loop(buffers):
    """Bisection to 1e-9 of [0, c + 1] takes 32 trips for c = 3, 37 for c = 100 and 44 for
    c = 1e4: with max_steps=40 the first two get their gradients (the stacks of 16 rows grown
    to 32, then 40), the third an error that names the loop's line, never a gradient of the
    40 trips run."""
    c = np.array([2.0, 3.0])
    df = ys.simplegrad(W.cube_root, c, buffers=buffers, max_steps=40)
    for c in (np.array([2.0, 3.0]), np.array([100.0, 50.0])):
        _, g = df(c)
        np.testing.assert_allclose(g, numerical_grad(W.cube_root, (c,), 0), rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"whiles\.py:16 `while np\.max\(hi - lo\) > 1e-09:` "
                                           r"ran more than max_steps=40 trips") as e:
        df(np.array([2.0, 1e4]))
    assert type(e.value).__name__ == "StepLimitError"
    if buffers:
        assert {len(s) for s in sys.modules[df.__module__]._local.stacks} == {40}


def test_max_steps_is_part_of_ys_grads_key_and_checked():
    a = np.array([2.0, 300.0])          # 9 trips
    ys.clear_cache()
    _, g = ys.grad(W.newton_sqrt, a)
    np.testing.assert_allclose(g[0], 0.5 / np.sqrt(a), rtol=1e-9)
    with pytest.raises(RuntimeError, match="max_steps=5"):
        ys.grad(W.newton_sqrt, a, max_steps=5)
    assert ys.cache_info()["misses"] == 2
    for bad in (0, -3, 2.5, "10"):
        with pytest.raises(UsageError, match="max_steps must be a positive int or None"):
            ys.simplegrad(W.newton_sqrt, a, max_steps=bad)


def _monitored_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / custom.monitor(x))
    return np.sum(x)


def test_a_call_made_from_inside_the_loop_gets_stacks_of_its_own():
    """A nodiff monitor in the loop's body calls the same compiled gradient: the function
    takes its thread's stacks for the call and gives them back as it returns, so the inner
    call makes its own and the outer one's rows are never written over. (On b2470a7 the
    monitor called in a while's body was not imported: NameError.)"""
    a, inner = np.array([2.0, 300.0]), np.array([5.0, 7e4])
    fast = compile_grad(_monitored_sqrt, (a,))
    assert "_local.stacks = _held_stacks" in fast.text
    plain = compile_grad(_monitored_sqrt, (a,), buffers=False).fn
    expected = plain(a)         # (nodiff: the monitor's value passes no gradient)
    np.testing.assert_allclose(expected[1], 1.0 / np.sqrt(a), rtol=1e-9)
    for _ in range(2):
        custom.MONITOR.update(calls=[(fast.fn, (inner,))], seen=[])
        value, g = fast.fn(a)
        assert value == expected[0] and np.array_equal(g, expected[1])
        (seen_value, seen_g), = custom.MONITOR["seen"]
        assert seen_value == plain(inner)[0] and np.array_equal(seen_g, plain(inner)[1])


def _monitored_arm(x):
    if np.sum(x) > 0.0:
        y = custom.monitor(np.tanh(x)) * x
    else:
        y = x * 2.0
    return np.sum(y)


@pytest.mark.parametrize("buffers", [False, True], ids=["plain", "buffered"])
def test_a_user_function_called_in_an_arm_is_imported(buffers):
    """(b2470a7: ``monitor(...)`` written in the arm with no import, NameError.)"""
    x = np.array([0.5, -0.2, 0.9])
    df = compile_grad(_monitored_arm, (x,), buffers=buffers)
    assert "import monitor" in df.text
    custom.MONITOR.update(calls=[], seen=[])
    value, g = df.fn(x)
    np.testing.assert_allclose(value, _monitored_arm(x), rtol=1e-14)
    np.testing.assert_allclose(g, np.tanh(x), rtol=1e-14)     # nodiff: no gradient through it
    _, g = df.fn(-x)
    np.testing.assert_allclose(g, np.full(3, 2.0))
