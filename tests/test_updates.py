"""In-place updates: recorded as pure ``setitem`` in the tape, written back in place in the
generated code where the old array is dead, refused where numpy would change the caller's data
or fail. Gradients of these programs are checked in test_gradcheck.py (UPDATES), in the
buffered form; the text checks here read the plain form."""
import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad, gradient_tape
from yota_s2s.ir.printer import format_tape
from yota_s2s.gradcheck import numerical_grad

from .programs import updates


def forward_code(fn, *args) -> str:
    text = compile_grad(fn, args, check=True, buffers=False).text
    return text.split("# -- forward --\n")[1].split("# -- backward --")[0]


def backward_code(fn, *args) -> str:
    return compile_grad(fn, args, check=True, buffers=False).text.split("# -- backward --\n")[1]


def test_the_tape_is_pure_and_the_code_writes_in_place():
    forward, _ = gradient_tape(updates.fill_in_loop, (np.ones(3),), passes=False)
    assert "out_1:f64[3] = setitem out 0" in format_tape(forward, locations=False)
    code = forward_code(updates.fill_in_loop, np.ones(3))
    assert "out[0] = " in code and "out[2] = " in code and ".copy()" not in code


def test_a_loop_that_fills_a_buffer_has_a_backward_without_copies_or_zeroing():
    code = backward_code(updates.fill_in_loop, np.ones(3))
    assert ".copy()" not in code and "= 0.0" not in code
    assert "dout[2]" in code and "dout[0]" in code


def test_augmented_updates_read_as_written():
    code = forward_code(updates.copy_then_set, np.ones((3, 3)), np.ones(3))
    assert "x_1 = x.copy()\n" in code
    assert "x_1[1] = w[0] * 3.0\n" in code
    assert "x_1[:, 1:] += w[None, :2]\n" in code


def test_an_update_copies_when_the_old_value_is_still_read():
    code = forward_code(updates.old_value_still_needed, np.ones(3), np.ones(3))
    assert "y_1 = y_.copy()\n" in code and "y_1[0] = 5.0\n" in code     # y_: a rule word


def test_updates_through_a_view_change_the_base():
    def f(x):
        y = x * 2.0
        v = y[1:]
        v *= 3.0
        return y
    value, _ = ys.trace(f, np.ones(4))
    np.testing.assert_array_equal(value, [2.0, 6.0, 6.0, 6.0])


def test_aliases_see_the_update():
    def f(x):
        y = x + 1.0
        alias = y
        rows = [y]
        y[0] = 10.0
        return alias + rows[0]
    value, _ = ys.trace(f, np.zeros(2))
    np.testing.assert_array_equal(value, [20.0, 2.0])


def test_an_index_that_repeats_is_marked_and_one_that_does_not_is_not():
    forward, _ = gradient_tape(updates.repeated_index, (np.ones(4), np.ones(3)), passes=False)
    assert "setitem[repeats=True] y" in format_tape(forward, locations=False)
    forward, _ = gradient_tape(updates.rows_and_columns, (np.ones((3, 4)), np.ones(2)), passes=False)
    assert "repeats" not in format_tape(forward)


@pytest.mark.parametrize("fn,written,fix", [
    (updates.writes_argument_item, "`x[...] = ...` would change the caller's array x in place",
     "Copy it first: `x = x.copy()`."),
    (updates.writes_argument_view, "`v -= ...` would change the caller's array x in place",
     "Write `v = v - ...`"),
    (updates.sorts_argument, "`x.sort()` would change the caller's array x in place",
     "x = x.copy()"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_writing_into_an_argument_is_refused(fn, written, fix):
    with pytest.raises(ys.UnsupportedSyntax) as info:
        gradient_tape(fn, (np.ones(3),))
    assert written in str(info.value) and fix in str(info.value)
    assert str(info.value).startswith("updates.py:")


def test_writing_into_an_argument_held_in_a_list_says_how_to_copy_the_item():
    def f(x):
        rows = [x, x * 2.0]
        rows[0][1] = 2.0
        return np.sum(rows[1])
    with pytest.raises(ys.UnsupportedSyntax) as info:
        gradient_tape(f, (np.ones(3),))
    assert "Copy it first: `rows[...] = rows[...].copy()`." in str(info.value)


def test_a_0d_array_updated_in_place_stays_an_array_that_other_names_see():
    def f(x):
        total = np.zeros(())
        total += np.sum(np.sin(x))
        before = total
        total *= 2.0
        return before + total
    x = np.linspace(0.1, 0.9, 4)
    for buffers in (True, False):
        value, dx = ys.simplegrad(f, x, buffers=buffers)(x)
        assert np.isclose(value, f(x)) and np.isclose(value, 4 * np.sum(np.sin(x)))
        np.testing.assert_allclose(dx, 4 * np.cos(x))


def test_updates_numpy_refuses_are_refused():
    def read_only(x):
        b = np.broadcast_to(x * 2.0, (3, 4))
        b[0] = 1.0
        return np.sum(b)

    def into_a_scalar(x):
        s = np.sum(x)
        s[()] = 1.0
        return s

    def float_into_int(x):
        y = np.zeros(4, dtype=int)
        y += x
        return np.sum(x)
    for fn, what in [(read_only, "read-only view (made by broadcast_to)"),
                     (into_a_scalar, "which is not an array"),
                     (float_into_int, "casts float64 into int64")]:
        with pytest.raises(ys.UnsupportedSyntax, match=what.replace("(", r"\(").replace(")", r"\)")):
            gradient_tape(fn, (np.ones(4),))


def test_numpy_scalars_and_floats_are_rebound_not_updated():
    def f(x, s):
        s += 1.0
        return np.sum(x) * s
    value, dx, ds = ys.simplegrad(f, np.ones(3), np.float64(2.0))(np.ones(3), np.float64(2.0))
    assert value == 9.0 and ds == 3.0
    np.testing.assert_array_equal(dx, [3.0, 3.0, 3.0])


def test_a_boolean_mask_is_guarded_by_its_count():
    """A mean reads the count (a sum does not: tests/test_masks.py)."""
    def f(x):
        return np.mean(x[x > 0] ** 2)
    df = ys.simplegrad(f, np.array([1.0, -1.0, 2.0]))
    np.testing.assert_array_equal(df(np.array([3.0, -1.0, 1.0]))[1], [3.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="selecting 2 elements was True when this gradient was "
                                         "compiled and is False now"):
        df(np.array([1.0, 1.0, 1.0]))


def _first_of_masked_or_doubled(x, c):
    return np.sum(np.concatenate([x[c > 0], x[None] * 2.0])[0] * x)


def _rows_where(x, c):
    return np.sum(x[c > 0] ** 2)


def _write_where(x, c):
    y = x * 1.0
    y[c > 0] = 2.0 * x
    return np.sum(y * x)


@pytest.mark.parametrize("buffers", [True, False])
@pytest.mark.parametrize("fn,x,taken,other", [
    (_first_of_masked_or_doubled, np.array(0.5), np.array(1.0), np.array(-1.0)),
    (_first_of_masked_or_doubled, np.array(0.5), np.array(-1.0), np.array(1.0)),
    (_rows_where, np.array([1.0, 2.0]), np.array(1.0), np.array(-1.0)),
    (_write_where, np.array([0.5, 1.5, 2.0]), np.array(1.0), np.array(-1.0)),
])
def test_a_0d_boolean_mask_is_guarded_too(fn, x, taken, other, buffers):
    """``x[c > 0]`` with a 0-d mask has 0 or 1 rows, decided by data: it had no guard (the plain
    form returned a wrong gradient for the other outcome, the buffered one a numpy error).
    ``y[mask] = v`` had none either, though the gradient of ``v`` reads ``dy[mask]`` (the
    buffered form failed for another count; a mask of the array's shape writing a number needs
    no guard: tests/test_masks.py)."""
    df = ys.simplegrad(fn, x, taken, buffers=buffers)
    for _ in range(2):
        value, dx, dc = df(x, taken)
        assert value == pytest.approx(fn(x, taken))
        np.testing.assert_allclose(dx, numerical_grad(fn, (x, taken), 0), atol=1e-6)
    with pytest.raises(ValueError, match="when this gradient was compiled and is False now"):
        df(x, other)


def test_lists_grow_with_append_extend_and_plus_equals():
    value, tape = ys.trace(updates.lists_of_traced, np.array([1.0, 2.0, 3.0]))
    assert value == pytest.approx(updates.lists_of_traced(np.array([1.0, 2.0, 3.0])))
    assert "stack" in format_tape(tape)


def _double(x):
    return x * 2.0


def _double_grad_in_place(x, dy):
    g = dy * 2.0
    g[0] = 0.0
    return g


def test_a_rule_that_assigns_in_place_is_refused():
    rules = ys.RULES.copy()
    rules.primitive(_double, "x")
    rules.diffrule(_double, "x", _double_grad_in_place)
    with pytest.raises(ys.UnsupportedSyntax, match="in a derivative rule: rules are pure"):
        gradient_tape(lambda x: np.sum(_double(x)), (np.ones(3),), rules=rules)
