"""A branch's memory in the buffered form (issue 33, codegen/branch_plan.py): each result of an
``if`` lives in a work array or in the caller's out= array, written by whichever arm runs, and
the arms' intermediates are planned like straight code. A steady call with out= allocates no
array on either path, and returns what the plain form returns, call after call."""
import numpy as np
import pytest

from yota_s2s.compiler import compile_grad
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.memory_report import allocated

from .programs import branches as B

# program, inputs on each path (one arm, then the other; nested: the three ways)
PATHS = {
    "piecewise": (B.piecewise, [(np.array([0.5, -1.0, 2.0, 0.25]),),
                                (np.array([-0.5, 1.0, -2.0, -0.25]),)]),
    # (normalized's x / m arm, m > 1: the max's backward divides by numpy's int64 count of the
    # ties, ``buf7.fill(t10.sum(out=buf8)[()])`` and ``t11 /= buf7``, its float64 in a 0-d work
    # array; before, ``t11 /= t10.sum(out=buf7)[()]`` made a number and a cast of it, 24 bytes)
    "normalized": (B.normalized, [(np.array([0.3, -0.2, 0.5]),), (np.array([0.1, 0.2, -0.5]),),
                                  (np.array([2.0, -3.0, 0.5]),)]),
    # (three_ways: ``s = xp.dot(x, w, out=buf4)``, the number in a 0-d work array; before, 8
    # bytes: numpy's dot of two vectors makes its number in a new 0-d array)
    "three_ways": (B.three_ways, [(np.array([1.0, 0.5, 2.0]), np.array([0.5, 0.4, 0.3])),
                                  (np.array([1.0, 0.5, 2.0]), np.array([-0.5, -0.4, -0.3])),
                                  (np.array([0.3, 0.2, 0.1]), np.array([0.5, -0.4, 0.3]))]),
    "nested": (B.nested, [(np.array([1.0, 0.5, 2.0]), np.array([0.3, 0.2, 0.1])),
                          (np.array([-1.0, -0.5, -2.0]), np.array([-0.3, -0.2, -0.1])),
                          (np.array([1.0, 0.5, 2.0]), np.array([-0.3, -0.2, -0.1]))]),
    "two_results": (B.two_results, [(np.array([0.3, -0.2, 0.5]),), (np.array([-0.3, 0.2, -0.5]),)]),
    "branch_in_loop": (B.branch_in_loop, [(np.array([0.3, -0.2, 0.5]), np.array([0.9, 1.1, -0.4])),
                                          (np.array([-0.8, 0.2, -0.5]), np.array([0.5, -1.2, 0.7]))]),
}


@pytest.mark.parametrize("name", list(PATHS))
def test_a_branch_with_out_allocates_no_array_on_any_path(name):
    """(Before: piecewise 72 bytes a call, nested 192, two_results 128, branch_in_loop 200: the
    arms were written unplanned, each value a new array, then copied into out=.)"""
    fn, paths = PATHS[name]
    buffered = compile_grad(fn, paths[0], buffers=True).fn
    plain = compile_grad(fn, paths[0], buffers=False).fn
    for args in paths:
        out = [np.empty_like(a) for a in args]
        assert allocated(lambda: buffered(*args, out=out)).arrays == 0
        value, *grads = plain(*args)
        for _ in range(2):            # call after call, into the same out= arrays
            got, *into = buffered(*args, out=out)
            assert got == pytest.approx(value, rel=1e-13)
            for g, i, o in zip(grads, into, out):
                assert i is o
                np.testing.assert_allclose(i, g, rtol=1e-13, atol=1e-15)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-8)


def test_an_arm_result_read_under_its_own_name_is_copied_before_it_is_rebound():
    """A branch in a loop's step whose arm gives the carried ``s`` as it is: the result's
    work array is written from ``s`` before the name ``s`` is bound to it (``s = buf; s[...] =
    s`` copied the array into itself: the sum was wrong on every step that skipped)."""
    from .programs import whiles as W
    r = np.random.default_rng(0)
    make = lambda r: (r.normal(size=3), r.uniform(-1.5, 1.5, 3))     # noqa: E731
    buffered = compile_grad(W.skip_negative, make(r), buffers=True)
    assert "[...] = s\n" in buffered.text
    for seed in range(4):
        args = make(np.random.default_rng(seed))
        value, *grads = buffered.fn(*args)
        assert value == pytest.approx(W.skip_negative(*args), rel=1e-13)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(W.skip_negative, args, i),
                                       rtol=1e-6, atol=1e-8)


def test_a_while_with_out_allocates_no_array_for_any_trip_count():
    """Newton's square root: the carried ``x`` lives in a work array the trip updates in place
    (``x += t6; x *= 0.5``), the unwind's gradients in work arrays and the caller's out= array
    (``dx *= 0.5``, ``da_part1 += t9``), the condition's and the steps' intermediates in work
    arrays (codegen/while_plan.py). Before: 168 bytes a call (``a / x``, ``x * x - a``,
    ``dx_part1.copy()`` ...). Values equal the plain form's, call after call, for inputs of
    other trip counts, and central differences."""
    from .programs import whiles as W
    first = (np.array([2.0, 30.0, 0.5]),)
    buffered = compile_grad(W.newton_sqrt, first, buffers=True)
    plain = compile_grad(W.newton_sqrt, first, buffers=False).fn
    assert "x += t6" in buffered.text and ".copy()" not in buffered.text
    out = [np.empty(3)]
    for a in (first[0], np.array([900.0, 0.01, 7.0]), np.array([4.0, 0.3, 50.0])):
        assert allocated(lambda: buffered.fn(a, out=out)).arrays == 0
        value, grad = plain(a)
        for _ in range(2):
            got, into = buffered.fn(a, out=out)
            assert into is out[0] and got == pytest.approx(value, rel=1e-13)
            np.testing.assert_allclose(into, grad, rtol=1e-13)
        np.testing.assert_allclose(grad, numerical_grad(W.newton_sqrt, (a,), 0), rtol=1e-6)


WHILES = {  # program, inputs of several trip counts
    # lo = np.zeros_like(c) filled in a work array (``lo = buf1; lo.fill(0.0)``); np.where,
    # which has no out=, as ``xp.copyto(hi_2, hi_1); xp.copyto(hi_2, mid, where=above)``, in the
    # trip and in the unwind (before: 224 bytes a call)
    "cube_root": ("cube_root", [np.array([2.0, 8.0, 0.5]), np.array([19.0, 1.0, 3.0]),
                                np.array([0.7, 0.6, 0.9])]),
    # x = np.ones_like(a), s = np.zeros_like(a) filled in work arrays (before: 56 bytes)
    "until_small": ("until_small", [np.array([2.0, 30.0, 0.5]), np.array([1.5, 2.5, 1.2]),
                                    np.array([900.0, 0.01, 7.0])]),
}


@pytest.mark.parametrize("name", list(WHILES))
def test_a_while_with_out_allocates_no_array_on_any_trip_count(name):
    """Values equal the plain form's, call after call into the same out= arrays, and central
    differences, for inputs of other trip counts than the first."""
    from .programs import whiles as W
    fn, inputs = getattr(W, WHILES[name][0]), WHILES[name][1]
    other = (lambda a: ()) if name == "cube_root" else (lambda a: (np.array([0.3, -0.2, 0.5]),))
    first = (inputs[0], *other(inputs[0]))
    buffered = compile_grad(fn, first, buffers=True).fn
    plain = compile_grad(fn, first, buffers=False).fn
    for a in inputs:
        args = (a, *other(a))
        out = [np.empty_like(x) for x in args]
        assert allocated(lambda: buffered(*args, out=out)).arrays == 0
        value, *grads = plain(*args)
        for _ in range(2):
            got, *into = buffered(*args, out=out)
            assert got == pytest.approx(value, rel=1e-13)
            for g, i, o in zip(grads, into, out):
                assert i is o
                np.testing.assert_allclose(i, g, rtol=1e-13, atol=1e-15)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-6)


def test_a_max_gradient_with_out_allocates_no_array():
    """The max's backward, ``dy * hit / count``: the bool mask copied into the result's array
    and multiplied there (``xp.copyto(dx, t1); dx *= buf2``: numpy would cast the mask into a
    new array first), the int64 count divided by as a float64 in a 0-d work array. Before: 56
    bytes a call (3 elements: the cast mask 24, the count's number and its cast 16)."""
    def f(x):
        return np.max(x) * 2.0 + np.sum(x * x)

    x = np.array([0.5, 2.0, 2.0])           # a tie: the count is 2
    buffered = compile_grad(f, (x,), buffers=True)
    plain = compile_grad(f, (x,), buffers=False).fn
    assert "xp.copyto(" in buffered.text
    out = [np.empty(3)]
    assert allocated(lambda: buffered.fn(x, out=out)).arrays == 0
    value, grad = plain(x)
    for _ in range(2):
        got, into = buffered.fn(x, out=out)
        assert into is out[0] and got == value
        np.testing.assert_array_equal(into, grad)
    np.testing.assert_array_equal(grad, [1.0, 5.0, 5.0])


def test_rk45s_step_size_control_with_out_allocates_no_array():
    """rk45's ``h * np.clip(0.9 * (tol / (err + 1e-300)) ** 0.2, 0.2, 5.0)`` of a number is
    comparisons (``5.0 if t86 >= 5.0 else 0.2 if t86 <= 0.2 else t86``), and the ties of its
    gradient and of ``np.minimum(h, 2.0 - t)``'s conditional floats (``0.5 if v_1 == 0.2 else
    0.0``): before, 32 bytes a call (numpy's 0-d arrays of the clip's number, bounds and
    result; a Python float times a ``np.bool_``, 24 bytes)."""
    from .programs import whiles as W
    rng = np.random.default_rng(0)
    first = (rng.uniform(0.5, 3.0, 2), rng.uniform(0.5, 2.0, 2))
    buffered = compile_grad(W.rk45, first, buffers=True)
    plain = compile_grad(W.rk45, first, buffers=False).fn
    assert "xp.clip(" not in buffered.text
    out = [np.empty(2), np.empty(2)]
    for args in (first, (np.array([0.6, 2.9]), np.array([1.9, 0.6])),
                 (np.array([2.0, 1.0]), np.array([1.0, 1.5]))):
        assert allocated(lambda: buffered.fn(*args, out=out)).arrays == 0
        value, *grads = plain(*args)
        for _ in range(2):
            got, *into = buffered.fn(*args, out=out)
            assert got == value
            for g, i, o in zip(grads, into, out):
                assert i is o
                np.testing.assert_array_equal(i, g)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(W.rk45, args, i), rtol=1e-6, atol=1e-6)
