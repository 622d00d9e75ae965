"""Loop regions (issue 12): loops that stay loops, in the tape and in both generated forms."""
import re

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import gradient_tape
from yota_s2s.frontend import trace_function
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.ir import verify

from .programs.loop_regions import (decayed_sum, decayed_total, inner_sums, minibatch,
                                    minibatch_squared, previous_product, ring_squared,
                                    rnn_leaving_two, two_sums, two_sums_multiplied)
from .programs.loop_regions import (appended, appended_before_step, appended_then_updated,
                                    appended_view, batched_args, branchy, broadcast_invariants,
                                    breaking, calls_region, cosine_of_inputs, counted, cyclic,
                                    enumerated, growing, index_scaled, last_row_is_state, leaky,
                                    masked, named_out, nested, returning, reversed_leak,
                                    reversed_steps, rk4_args, rk4_steps, rnn,
                                    lent_after_body, lent_after_body_args,
                                    rnn_args, rnn_batched, rnn_batched_args, rnn_dot,
                                    rnn_input_second, rnn_rows, rnn_vector_args, row_from_row,
                                    row_read_in_step, row_sums, row_updated_twice,
                                    rows_read_after, rows_written_after, shifted, short,
                                    softmax_steps, stacks_and_rows_written, stencil, stencil_args,
                                    two_row_stores, two_stacks, weak_then_array, with_helper,
                                    written_rows, zero_d_total, zipped)
from .programs.loop_regions import advected, advected_args
from .programs.loop_regions import (keyed_from_one, keyed_one_hot, keyed_read_in_a_later_loop,
                                    keyed_states, keyed_two_back, keyed_two_items)
from .programs.loop_regions import (by_length, by_step, last_of_list, list_args, list_in_dict,
                                    list_made_in_step, own_row, params_dict, rewritten_row,
                                    two_back, two_lists, whole_list)


def _vec(n, seed=1):
    return np.random.default_rng(seed).normal(size=n)


def _softmax_args():
    r = np.random.default_rng(3)
    return r.normal(size=(4, 3)), r.normal(size=(10, 5, 4)), r.random((10, 5, 3))


CASES = [
    ("rnn", rnn, rnn_args, "region"),
    ("rnn_rows", rnn_rows, rnn_args, "region"),
    ("rnn_batched", rnn_batched, rnn_batched_args, "region"),
    ("lent_after_body", lent_after_body, lent_after_body_args, "region"),
    ("leaky", leaky, lambda: (_vec(5), _vec(50).reshape(10, 5)), "region"),
    ("two_stacks", two_stacks, lambda: (_vec(5), _vec(50).reshape(10, 5)), "region"),
    # a 0-d invariant's gradient is a sum of all the stacked rows; a (1, n) one's stays a
    # per-step sum with keepdims (passes/stacked.py)
    ("broadcast_invariants", broadcast_invariants,
     lambda: (_vec(15).reshape(3, 5), np.full((), 0.3), _vec(5, 2).reshape(1, 5),
              _vec(150, 3).reshape(10, 3, 5)), "region"),
    ("reversed_leak", reversed_leak, batched_args, "region"),
    ("cosine_of_inputs", cosine_of_inputs, batched_args, "region"),
    ("row_sums", row_sums, batched_args, "region"),
    ("reversed_steps", reversed_steps, batched_args, "region"),
    ("shifted", shifted, lambda: (_vec(10), 0.7), "region"),
    ("cyclic", cyclic, lambda: (_vec(11),), "region"),
    ("with_helper", with_helper, lambda: (rnn_args()[0], _vec(5), _vec(40).reshape(8, 5)),
     "region"),
    ("calls_region", calls_region, lambda: (rnn_args()[0], _vec(5), _vec(45).reshape(9, 5)),
     "region"),
    ("zipped", zipped, lambda: (rnn_args()[0], _vec(50).reshape(10, 5), _vec(50, 2).reshape(10, 5)),
     "region"),
    ("enumerated", enumerated, lambda: (_vec(3), _vec(30).reshape(10, 3)), "region"),
    ("written_rows", written_rows, lambda: (rnn_args()[0] * 2, _vec(50).reshape(10, 5)), "region"),
    ("appended", appended, lambda: (rnn_args()[0] * 2, _vec(50).reshape(10, 5)), "region"),
    ("nested", nested, lambda: (rnn_args()[0], _vec(50).reshape(10, 5) * 0.1), "region"),
    ("counted", counted, lambda: (_vec(10),), "region"),
    ("softmax_steps", softmax_steps, lambda: _softmax_args(), "region"),
    ("named_out", named_out, lambda: (_vec(10),), "region"),
    ("weak_then_array", weak_then_array, lambda: (_vec(4),), "region"),
    ("rows_read_after", rows_read_after, lambda: (rnn_args()[0], _vec(50).reshape(10, 5)),
     "region"),
    ("rows_written_after", rows_written_after,
     lambda: (rnn_args()[0], _vec(50).reshape(10, 5)), "region"),
    ("stacks_and_rows_written", stacks_and_rows_written,
     lambda: (rnn_args()[0], _vec(50).reshape(10, 5)), "region"),
    *((f.__name__, f, lambda: (rnn_args()[0], _vec(50).reshape(10, 5)), kind) for f, kind in [
        (last_row_is_state, "region"), (zero_d_total, "region"),
        (appended_then_updated, "unrolled"), (appended_before_step, "unrolled"),
        (appended_view, "unrolled")]),
    *((f.__name__, f, lambda: (rnn_args()[0], _vec(50).reshape(10, 5)), "region") for f in [
        row_read_in_step, row_from_row, row_updated_twice, two_row_stores]),
    ("stencil", stencil, stencil_args, "region"),
    ("advected", advected, advected_args, "region"),
    ("rk4_steps", rk4_steps, rk4_args, "region"),
    ("rnn_vector", rnn_batched, rnn_vector_args, "region"),
    ("branchy", branchy, lambda: (_vec(10),), "region"),     # its if: a branch (issue 33)
    ("growing", growing, lambda: (_vec(10),), "unrolled"),
    ("breaking", breaking, lambda: (_vec(10),), "unrolled"),
    ("returning", returning, lambda: (_vec(10) * 0.1,), "unrolled"),
    ("masked", masked, lambda: (_vec(60).reshape(10, 6),), "region"),
    ("short", short, lambda: (_vec(5),), ""),
    # a list read by an index that moves with the step while the step appends to it (issue 29)
    *((f.__name__, f, list_args, kind) for f, kind in [
        (last_of_list, "region"), (two_lists, "region"), (two_back, "unrolled"),
        (by_length, "unrolled"), (by_step, "unrolled"), (whole_list, "unrolled"),
        (own_row, "region"), (rewritten_row, "unrolled"), (list_made_in_step, "region")]),
    # a dict keyed by the step: hs[t] = f(hs[t - 1]) (issue 35, min-char-rnn)
    *((f.__name__, f, list_args, kind) for f, kind in [
        (keyed_states, "region"), (keyed_one_hot, "region"), (keyed_from_one, "region"),
        (keyed_two_back, "unrolled"), (keyed_two_items, "unrolled")]),
]


@pytest.mark.parametrize("name, f, make, kind", CASES, ids=[c[0] for c in CASES])
def test_region_or_unrolled(name, f, make, kind):
    tape, _ = trace_function(f, make())
    assert all(kind in note for note in tape.loops) and bool(tape.loops) == bool(kind), tape.loops
    regions = [s for s in tape.stmts if s.prim.emit[:1] == ("loop",)]
    assert bool(regions) == (kind == "region")


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
@pytest.mark.parametrize("name, f, make, kind", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(name, f, make, kind, buffers):
    args = make()
    df = ys.simplegrad(f, *args, buffers=buffers)
    value, *grads = df(*args)
    assert np.allclose(value, f(*args), rtol=1e-12, atol=1e-12)
    for i, g in enumerate(grads):
        if g is None:
            continue
        expected = numerical_grad(f, list(args), i)
        assert np.allclose(g, expected, rtol=1e-5, atol=1e-7), (i, g, expected)


def test_interpreted_tape_matches():
    args = rnn_args()
    _, tape = gradient_tape(rnn, args, check=True)
    value, grads = verify.run(tape, [args[i.argnum] for i in tape.inputs])
    assert np.isclose(value, rnn(*args))
    for inp, g in zip(tape.inputs, grads):
        assert np.allclose(g, numerical_grad(rnn, list(args), inp.argnum), atol=1e-7)


def test_module_is_one_loop_whatever_the_trip_count():
    texts = {T: ys.source(ys.simplegrad(rnn, *rnn_args(T))) for T in (10, 200)}
    lines = {T: len(text.splitlines()) for T, text in texts.items()}
    assert lines[10] == lines[200]
    text = texts[200]
    assert "for t in range(200):" in text and "for t in range(199, -1, -1):" in text
    # (the buffered form makes the state in its stack's row, its pre-activation there too:
    # one row written per step, no work array for it)
    assert re.search(r"\n        (t\d+) = xp\.matmul\(W, h, out=H_rows\[t \+ 1\]\)\n(.*\n){3}"
                     r"        h = xp\.tanh\(\1, out=\1\)\n", text), text
    # (each row of dxs is written once: made in its row, not added to zeros)
    assert "xp.matmul(dt7, U, out=dxs[t])" in text


def test_tape_prints_the_region():
    tape, _ = trace_function(rnn, rnn_args())
    text = str(tape)
    assert "loop[region=" in text and "step t:" in text and "next " in text
    assert "region: range(xs.shape[0]), 12 steps, carries h, loss" in text


def test_region_values_after_the_loop_are_concrete():
    # later code decides on a value the loop made: the trace follows the example
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i] ** 2
        if s > 1.0:
            return s * 2.0
        return s
    args = (_vec(10),)
    df = ys.simplegrad(f, *args)
    value, g = df(*args)
    assert np.isclose(value, f(*args))
    assert np.allclose(g, numerical_grad(f, list(args), 0))


def test_gradient_of_gradient_through_plain_form():
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + np.sin(x[i]) * x[i]
        return s
    x = _vec(9)
    df = ys.simplegrad(f, x, buffers=False)

    def g(x):
        return np.sum(df(x)[1] ** 2)
    ddf = ys.simplegrad(g, x, buffers=False)
    value, gg = ddf(x)
    assert np.isclose(value, g(x))
    assert np.allclose(gg, numerical_grad(g, [x], 0), atol=1e-6)


def test_review_page_shows_the_loop_once():
    import html
    import re

    from yota_s2s.codegen.module import write_functions, write_module
    from yota_s2s.review import review_page
    _, tape = gradient_tape(rnn, rnn_args(50))
    written, _ = write_functions([tape])
    page = review_page(written[0], write_module(tape, buffers=False))
    text = html.unescape(re.sub("<[^>]+>", "", page))
    assert "for t in range(50):" in text and "for t in range(49, -1, -1):" in text
    assert "h = xp.tanh(W @ h + U @ xs[t] + b)" in text


def test_gradient_of_the_rnn_gradient_keeps_both_loops():
    """The plain module's forward and reverse loops are regions when it is compiled again."""
    args = rnn_args(10)
    df = ys.simplegrad(rnn, *args, buffers=False)

    def g(W, U, b, h0, xs):
        out = df(W, U, b, h0, xs)
        return np.sum(out[1] ** 2) + np.sum(out[5] * xs)
    tape, _ = trace_function(g, args)
    assert len(tape.loops) == 2 and all("region" in note for note in tape.loops), tape.loops
    for buffers in (False, True):
        value, *grads = ys.simplegrad(g, *args, buffers=buffers)(*args)
        assert np.isclose(value, g(*args))
        for i, grad in enumerate(grads):
            assert np.allclose(grad, numerical_grad(g, list(args), i), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_float32_gradient_stays_float32(buffers):
    x = np.linspace(-0.5, 0.7, 4).astype(np.float32)
    value, dx = ys.simplegrad(index_scaled, x, buffers=buffers)(x)
    assert dx.dtype == np.float32
    expected = numerical_grad(index_scaled, [x.astype(np.float64)], 0)
    assert np.allclose(dx, expected, rtol=1e-3, atol=1e-3)


# -- the generated loops' run-time shape (issue 12): one stack row per step, stacks held per
# -- thread, returned accumulators in the returned arrays --

def _loop_lines(text: str, header: str) -> list[str]:
    """The lines of the loop that starts with ``header``, indented one level more than it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == header)
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line.strip())
    return body


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_state_stack_takes_one_row_per_step(buffers):
    """The state h and the next state share one (T + 1)-row stack: row 0 is written once before
    the loop, each step writes its next state only (not the state the step before wrote)."""
    args = rnn_args(20)
    df = ys.simplegrad(rnn, *args, buffers=buffers)
    text = ys.source(df)
    loop = _loop_lines(text, "for t in range(20):")
    writes = [line for line in loop if line.startswith(("H[", "H_rows[")) or "out=H" in line]
    # the buffered form makes the next state in its row, over the pre-activation made there
    # first: no copy into the stack
    if buffers:
        assert len(writes) == 1 and re.fullmatch(
            r"(t\d+) = xp\.matmul\(W, h, out=H_rows\[t \+ 1\]\)", writes[0]), writes
        made = re.fullmatch(r"(t\d+) = .*", writes[0]).group(1)
        assert f"h = xp.tanh({made}, out={made})" in loop, loop
    else:
        assert writes == ["H[t + 1] = h"]
    before = text.split("for t in range(20):")[0].rstrip().splitlines()
    assert before[-1].strip() == ("H_rows[0][...] = h" if buffers else "H[0] = h")
    for _ in range(2):          # a second call: the stack's rows are all written again
        value, *grads = df(*args)
        assert np.isclose(value, rnn(*args), rtol=1e-12)
        for i, g in enumerate(grads):
            assert np.allclose(g, numerical_grad(rnn, list(args), i), rtol=1e-5, atol=1e-7)


def test_stack_is_a_work_array_held_per_thread():
    """The buffered form's stack is allocated once per thread (WORK_ARRAYS), not per call;
    calls with other arguments in between give what the plain form gives."""
    args = rnn_args(15)
    df = ys.simplegrad(rnn, *args)
    plain = ys.simplegrad(rnn, *args, buffers=False)
    text = ys.source(df)
    assert "H = buf" in text and "xp.empty((16, 5))" not in text
    assert ys.memory_report(df).bytes >= 16 * 5 * 8
    for seed in (1, 2, 1):
        other = rnn_args(15, seed=seed)
        for a, b in zip(df(*other), plain(*other)):
            assert np.allclose(a, b, rtol=1e-12, atol=1e-14)


def test_returned_accumulator_is_made_in_the_returned_array():
    """A gradient the backward loop adds to in place (``dW += ...``) lives in the array
    returned to the caller: out= is written by the loop, with no copy after it."""
    args = rnn_args(10)
    df = ys.simplegrad(rnn, *args, wrt={0, 1})
    text = ys.source(df)
    assert "dW = _result(out, 0, (5, 5))" in text and "dW.fill(0.0)" in text
    assert "_deliver(out, 0" not in text and "_deliver(out, 1" not in text
    value, dW, dU, *_ = df(*args)
    outs = [np.full((5, 5), np.nan), np.full((5, 3), np.nan), None, None, None]
    again = df(*args, out=outs)
    assert again[1] is outs[0] and again[2] is outs[1]
    assert np.array_equal(outs[0], dW) and np.array_equal(outs[1], dU)
    assert np.allclose(dW, numerical_grad(rnn, list(args), 0), rtol=1e-5, atol=1e-7)


def test_sum_of_squares_in_a_buffered_loop_is_a_dot_product():
    """``np.sum(h ** 2)`` in a loop body: one BLAS call in the buffered form (no array made for
    the square each step), ``h.dot(h, out=buf2)`` (``xp.vdot(h, h)`` would make a 0-d array
    for its result each step: issue 14; the function ``xp.dot`` costs its dispatch, 0.2 us);
    the plain form keeps the source's form."""
    from .programs.loop_regions import rnn_rows
    args = rnn_args(20)
    fast = ys.simplegrad(rnn_rows, *args)
    plain = ys.simplegrad(rnn_rows, *args, buffers=False)
    assert "total = total + h.dot(h, out=buf2)" in _loop_lines(ys.source(fast),
                                                               "for x in range(20):")
    assert "total = total + (h ** 2).sum()" in ys.source(plain)
    for a, b in zip(fast(*args), plain(*args)):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-14)
    assert np.isclose(fast(*args)[0], rnn_rows(*args), rtol=1e-12)


def test_running_sums_add_each_product_as_it_is_made():
    """The backward loop adds each accumulated product where it is made (``dW += t.T @ dz``):
    two products are never held at once (peak memory), as in a handwritten BPTT. In the
    buffered form dU and db leave the loop (passes/stacked.py: dz goes into the dead state
    row, one product and one sum after the loop); dW, whose outer product reads the state
    rows, stays."""
    args = rnn_args(10)
    for buffers in (True, False):
        df = ys.simplegrad(rnn, *args, buffers=buffers)
        text = ys.source(df)
        loop = _loop_lines(text, "for t in range(9, -1, -1):")
        sums = [line for line in loop if line.startswith(("dW +=", "dU +=", "db +="))]
        assert len(sums) == (1 if buffers else 3), loop
        if buffers:
            after = text.split("for t in range(9, -1, -1):")[1].split("\n    return")[0]
            assert "dU = xp.matmul(" in after and "db = xp.matmul(_ONES_10," in after, after
        # each product is added where it is made (the buffered form makes it in a work array)
        made = {line.split(" = ")[0]: line.split(" = ", 1)[1] for line in loop if " = " in line}
        products = [line.split(" += ")[1] for line in sums if not line.startswith("db")]
        assert all("*" in p or "@" in p or made[p].startswith(("xp.multiply(", "xp.matmul("))
                   for p in products), loop
        value, *grads = df(*args)
        for i, g in enumerate(grads):
            assert np.allclose(g, numerical_grad(rnn, list(args), i), rtol=1e-5, atol=1e-7)


def _state_used_after(W, U, b, h0, xs):
    h = h0
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        loss += np.sum(h)
    h[0] = 3.0 * h[0]
    return loss + np.sum(h ** 2)


def test_state_read_after_the_loop_is_not_a_row_of_the_stack():
    """The last state is a row of the stack only where nothing after the loop reads it: here
    it is updated in place after the loop, which must not change the row the backward loop
    reads."""
    args = rnn_args(10)
    fast = ys.simplegrad(_state_used_after, *args)
    plain = ys.simplegrad(_state_used_after, *args, buffers=False)
    # (the backward loop writes dz over the dead rows, passes/stacked.py: ``out=H[t + 1]``)
    assert "out=H[" not in ys.source(fast).split("# -- backward --")[0]
    for _ in range(2):
        value, *grads = fast(*[a.copy() for a in args])
        again = plain(*[a.copy() for a in args])
        assert np.isclose(value, _state_used_after(*[a.copy() for a in args]), rtol=1e-12)
        for i, (g, p) in enumerate(zip(grads, again[1:])):
            assert np.allclose(g, p, rtol=1e-12, atol=1e-14)
            expected = numerical_grad(lambda *a: _state_used_after(*[x.copy() for x in a]),
                                      [a.copy() for a in args], i)
            assert np.allclose(g, expected, rtol=1e-5, atol=1e-7)


# -- scalar mode in loop bodies (buffered form): elements as Python floats --

def _ring_ratio(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] / x[(i + 1) % n] - x[i] ** 2
    return s


def test_scalar_loop_reads_python_floats_from_lists():
    """A vector read one element at a time in a loop is read from ``x.tolist()``: the body
    computes with Python floats (numpy's bits for + - * and squares), the gradient accumulates
    in a list, made an array after the loop; the value comes back as numpy's float64."""
    x = _vec(11)
    fast = ys.simplegrad(cyclic, x)
    plain = ys.simplegrad(cyclic, x, buffers=False)
    text = ys.source(fast)
    assert ".tolist()" in text and "= [0.0] * 11" in text
    # the list of floats becomes the array in _deliver: the caller's out=, or a new one
    assert "return s, _deliver(out, 0, dx)\n" in text and "xp.array(dx)" not in text
    assert ".tolist()" not in ys.source(plain)
    for scale in (1.0, 3.0):
        value, dx = fast(x * scale)
        expected, dx_plain = plain(x * scale)
        assert type(value) is type(expected) is np.float64
        assert value == expected and np.array_equal(dx, dx_plain)
        assert np.allclose(dx, numerical_grad(cyclic, [x * scale], 0), rtol=1e-5, atol=1e-7)


def test_scalar_loop_keeps_numpy_semantics_at_the_edges():
    """Python floats where numpy would not raise: a square that overflows is inf (``t * t``,
    not ``t ** 2``, which raises OverflowError), a division by zero is inf (``xp.divide``)."""
    x = np.array([1e200, 2.0, 0.0, -3.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    fast = ys.simplegrad(_ring_ratio, _vec(12))
    plain = ys.simplegrad(_ring_ratio, _vec(12), buffers=False)
    text = ys.source(fast)
    assert ".tolist()" in text and "xp.divide(" in text and "for i in range(12):" in text
    with np.errstate(all="ignore"):
        got, want = fast(x), plain(x)
    assert np.array_equal(got[0], want[0], equal_nan=True)
    assert np.array_equal(got[1], want[1], equal_nan=True)
    value, dx = fast(_vec(12))
    assert np.isclose(value, _ring_ratio(_vec(12)), rtol=1e-12)
    assert np.allclose(dx, numerical_grad(_ring_ratio, [_vec(12)], 0), rtol=1e-5, atol=1e-7)


def test_stack_of_numbers_is_a_list_read_as_it_is():
    """A stack of Python floats read only element by element by the backward loop is a list:
    no array written per step, no ``V.tolist()``; the argument's list is made once."""
    x = _vec(11)
    text = ys.source(ys.simplegrad(cyclic, x))
    assert "= [0.0] * 11" in text and text.count("x.tolist()") == 1 and "V.tolist()" not in text
    for scale in (1.0, -2.0):
        value, dx = ys.simplegrad(cyclic, x)(x * scale)
        expected, dx_plain = ys.simplegrad(cyclic, x, buffers=False)(x * scale)
        assert value == expected and np.array_equal(dx, dx_plain)


def _two_loops(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        buf4 = np.tanh(W @ h + xs[t])
        h = buf4 * 1.5
    g = h0
    total = 0.0
    for t in range(xs.shape[0]):
        g = np.tanh(W @ g + xs[t])
        total = total + np.sum(g)
    return total + np.sum(h ** 2)


def test_work_array_names_avoid_the_names_loop_bodies_assign():
    """A work array bound when the function starts keeps its name through every loop: a body
    assigning ``buf4`` (the user's name) does not take the name of the second loop's stack."""
    r = np.random.default_rng(3)
    args = (r.normal(size=(4, 4)) * 0.4, r.normal(size=4), r.normal(size=(10, 4)))
    df = ys.simplegrad(_two_loops, *args)
    plain = ys.simplegrad(_two_loops, *args, buffers=False)
    text = ys.source(df)
    assigned = text.split("= _work_arrays()")[0].splitlines()[-1].strip()
    after = [line.strip() for line in text.split("= _work_arrays()")[1].splitlines()]
    assert not [line for line in after for name in assigned.split(", ")
                if line.startswith(f"{name} = ")]
    for a, b in zip(df(*args), plain(*args)):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-14)
    value, *grads = df(*args)
    for i, g in enumerate(grads):
        assert np.allclose(g, numerical_grad(_two_loops, list(args), i), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_rows_written_once_are_assigned_without_a_zero_fill(buffers):
    """``dxs[t] += v`` where each step adds only at its own row: every row is written once,
    so the step assigns it and the array is not filled with zeros first; in the buffered form
    the product is made in the row (``xp.matmul(dt7, U, out=dxs[t])``, no copy)."""
    args = rnn_args(12)
    df = ys.simplegrad(rnn, *args, buffers=buffers)
    text = ys.source(df)
    loop = _loop_lines(text, "for t in range(11, -1, -1):")
    writes = [line for line in loop if "dxs[" in line]
    assert writes == (["xp.matmul(dt7, U, out=dxs[t])"] if buffers else ["dxs[t] = dt8"]), loop
    assert "dxs = xp.zeros" not in text and "dxs.fill" not in text
    assert ("dxs = _result(out, 4, (12, 3))" if buffers else "dxs = xp.empty((12, 3))") in text
    for _ in range(2):
        value, *grads = df(*args)
        assert np.allclose(grads[4], numerical_grad(rnn, list(args), 4), rtol=1e-5, atol=1e-7)
    if buffers:
        out = [None, None, None, None, np.full((12, 3), np.nan)]
        assert df(*args, out=out)[5] is out[4]
        assert np.allclose(out[4], grads[4], rtol=1e-14, atol=0)


def _assigned_names(text: str) -> set[str]:
    import ast
    function = [f for f in ast.parse(text).body
                if isinstance(f, ast.FunctionDef) and f.name.endswith("_grad")][0]
    return {n.id for n in ast.walk(function) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def test_names_in_the_loop_bodies_read_as_a_handwritten_bptt():
    """One naming pass names the bodies too (ir/names.py): the backward step's gradients are
    ``d<name>`` of the forward step's values (``dt5`` of the pre-activation ``t5``), the carried
    gradient is ``dh`` (``dh0 = dh`` after the loop), the saved states are ``h_prev`` and
    ``h_new``; the tape printout, the plain and the buffered form use the same names."""
    import re

    from yota_s2s.codegen import write_module
    from yota_s2s.ir.printer import format_tape
    _, tape = gradient_tape(rnn, rnn_args(50), review=True)
    plain, printed = write_module(tape, buffers=False), format_tape(tape, locations=False)
    back = plain.split("# -- backward --")[1]
    for line in ("for t in range(49, -1, -1):", "h_prev = H[t]", "h_new = H[t + 1]",
                 "dh = dh + 1.0", "dt5 = dh * (1 - h_new * h_new)", "dh = dt5 @ W",
                 "dW += t12 * h_prev", "db += dt5"):
        assert f"        {line}\n" in back or f"    {line}\n" in back, line
    assert back.index("    dh = xp.zeros((5,))\n") < back.index("    for t in") \
        < back.index("\n    dh0 = dh\n")
    assert "      t5:f64[5] = add t4 b" in printed and "dt5:f64[5] = mul dh" in printed
    assert "h = xp.tanh(W @ h + U @ xs[t] + b)" in plain.split("# -- backward --")[0]
    # the gradients in the step are d<name> (a rule's own intermediate, dt5[..., None] shared
    # by two outer products, stays a t<n>)
    assert not re.search(r"^\s+(h_\d+|dh_\d+|dh0) = ", back.split("\n    dh0 = dh")[0], re.M)
    assert re.findall(r"^\s+(t\d+) = ", back, re.M) == ["t8", "t12"]     # xs[t], dt5[..., None]
    printed_names = set(re.findall(r"^\s+(\w+):f", printed, re.M)) | \
        set(re.findall(r"\b(\w+)(?:=zeros)?[,\n]", "\n".join(re.findall(r"step (.*)", printed))
                       + "\n")) | set(tape.params)
    assert _assigned_names(plain) - {"_"} <= printed_names | {"t"}, \
        _assigned_names(plain) - printed_names
    _, fast = gradient_tape(rnn, rnn_args(50))
    buffered = write_module(fast)
    # (the key ``t + 1`` is named where the step also writes dz in that row, passes/stacked.py)
    assert "dh += _1_0" in buffered and re.search(r"h_new = H_rows\[(t \+ 1|t\d+)\]", buffered)


def test_a_cancelled_term_in_a_loop_body_is_not_emitted():
    """RuleSet.cancels works inside a region's step: the log-softmax's max has no gradient
    block in the backward loop, and the gradient matches finite differences."""
    args = _softmax_args()
    for buffers in (False, True):
        df = ys.simplegrad(softmax_steps, *args, buffers=buffers)
        # the step's adjoint (an accumulator loop: right after the step, in the same loop)
        back = ys.source(df).split("        # grad of ", 1)[1]
        assert "grad of" in back and "np.max(logits" not in back and ".max(" not in back
        assert "        dshifted = " in back or buffers
        value, *grads = df(*args)
        for i, g in enumerate(grads):
            assert np.allclose(g, numerical_grad(softmax_steps, list(args), i), atol=1e-7)


def test_nested_bodies_are_named_by_the_same_pass():
    """The inner loop's backward step, inside the outer one's, reads its saved states as
    ``h_prev``/``h_new``, names the gradient of the forward step's pre-activation ``dt4`` and
    counts with the forward loop's index name ``k``; both forms agree with the printout."""
    from yota_s2s.codegen import write_module
    from yota_s2s.ir.printer import format_tape
    args = (rnn_args()[0], _vec(50).reshape(10, 5) * 0.1)
    _, tape = gradient_tape(nested, args, review=True)
    plain = write_module(tape, buffers=False)
    back = plain.split("# -- backward --")[1]
    for line in ("for k in range(7, -1, -1):", "h_prev = H_1[k]", "h_new = H_1[k + 1]",
                 "dt4 = dh * (1 - h_new * h_new)", "dh = dt4 @ W"):
        assert f"            {line}\n" in back or f"        {line}\n" in back, line
    assert "dt4:f64[5] = mul dh" in format_tape(tape, locations=False)


# -- compile time flat in the trip count: a region's steps run only where Python reads a value --

def _count_runs(monkeypatch) -> list:
    """Count the regions run at compile time (the frontend's check mode, which runs every one to
    compare, off)."""
    from yota_s2s.frontend import abstract
    from yota_s2s.ir import region
    monkeypatch.setattr(abstract, "CHECK", False)
    runs = []
    real = region.run_loop

    def counted(*operands, loop):
        runs.append(loop.length)
        return real(*operands, loop=loop)
    monkeypatch.setattr(region, "run_loop", counted)
    return runs


def _assert_right(df, f, args) -> None:
    """``df`` gives ``f``'s value and its gradient for every argument (finite differences)."""
    value, *grads = df(*args)
    assert np.isclose(value, f(*args))
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, numerical_grad(f, args, i), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_region_nothing_reads_is_not_run_at_compile_time(monkeypatch, buffers):
    """The RNN's forward region and its backward region, and two regions in a row (the second
    starts from the first's result): compiled without running a step; the gradient is right."""
    from .programs.loops import loop_after_loop
    runs = _count_runs(monkeypatch)
    args = rnn_args(T=40)
    df = ys.simplegrad(rnn, *args, buffers=buffers)
    xs = _vec(27).reshape(9, 3)
    h0 = _vec(3, seed=2)
    df2 = ys.simplegrad(loop_after_loop, xs, h0, buffers=buffers)
    assert runs == []
    _assert_right(df, rnn, args)
    _assert_right(df2, loop_after_loop, (xs, h0))


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_branch_on_the_loss_after_a_region_runs_it(monkeypatch, buffers):
    """``if s > 1.0`` after the loop reads the region's value: its steps run (once), the branch
    taken is the one numpy takes, the gradient is right, and the other branch's arguments are
    refused by the guard."""
    from .programs.loops import decided_after
    runs = _count_runs(monkeypatch)
    xs, h0 = _vec(30).reshape(10, 3), _vec(3, seed=3)
    df = ys.simplegrad(decided_after, xs, h0, buffers=buffers)
    assert runs == [10]
    _assert_right(df, decided_after, (xs, h0))
    small = (xs * 0.0 + 0.01, h0 * 0.0)
    with pytest.raises(ValueError, match="was True when this gradient was compiled"):
        df(*small)
    _assert_right(ys.simplegrad(decided_after, *small, buffers=buffers), decided_after, small)


def test_region_results_in_check_mode_are_the_run_values(monkeypatch):
    """``YOTA_S2S_CHECK_ABSTRACT``: each region's abstract results (its carried values' avals,
    of the kind the step makes) against the values of running it; ``shifted`` carries a Python
    float whose gradient accumulator started as a 0-d array (an add of the two was called an
    array by the abstract evaluation, a numpy float by numpy)."""
    from yota_s2s.compiler import compile_grad
    from yota_s2s.frontend import abstract
    monkeypatch.setattr(abstract, "CHECK", True)
    for f, args in [(shifted, (_vec(10), 0.7)), (rnn, rnn_args()), (appended, (
            rnn_args()[0] * 2, _vec(50).reshape(10, 5))), (counted, (_vec(10),)),
            (weak_then_array, (_vec(4),))]:
        for buffers in (True, False):
            compiled = compile_grad(f, args, buffers=buffers, check=True)
            assert np.isclose(compiled.fn(*args)[0], f(*args))


def test_rows_of_an_appended_list_go_on_the_tape_only_when_read():
    """``hs.append(h)`` in a region of 500 steps: ``np.stack(hs)`` reads the stack, no row;
    reading ``hs[3]`` puts that row (only) on the tape (compile time does not grow with T)."""
    import operator

    W, xs = rnn_args()[0], _vec(2500).reshape(500, 5) * 0.1
    tape, _ = trace_function(appended, (W, xs))
    assert not [s for s in tape.stmts if s.prim.fn is operator.getitem], tape.stmts
    tape, _ = trace_function(rows_read_after, (W, xs))
    rows = [s.args[1].value for s in tape.stmts if s.prim.fn is operator.getitem]
    assert sorted(rows) == [3, 5, 499]
    value, dW, _ = ys.simplegrad(rows_read_after, W, xs)(W, xs)
    assert np.isclose(value, rows_read_after(W, xs))
    np.testing.assert_allclose(dW, numerical_grad(rows_read_after, (W, xs), 0), rtol=1e-6,
                               atol=1e-8)


def test_products_of_rows_are_one_product_after_the_loop():
    """passes/stacked.py, the buffered form: ``dWx += xs[t].T @ dz`` and ``db += dz.sum(0)``
    leave the backward loop; each step writes its dz over the state row it has read for the
    last time (``H[t + 1]``), and dWx and db are one product and one sum of those rows after
    the loop, as in a handwritten BPTT. ``dWh += h_prev.T @ dz`` reads a row of that stack:
    it stays in the loop. The plain form keeps the rules' loop. Values: finite differences,
    the plain form, calls with other arguments in between, out=."""
    args = rnn_batched_args()
    df = ys.simplegrad(rnn_batched, *args)
    plain = ys.simplegrad(rnn_batched, *args, buffers=False)
    text = ys.source(df)
    loop = _loop_lines(text, "for t in range(9, -1, -1):")
    assert not any(line.startswith(("dWx +=", "db +=")) for line in loop), loop
    assert "dWh += dWh_part1" in loop and any(
        line.startswith("dWh_part1 = xp.matmul(h_prev.T, ") for line in loop), loop
    # dz is made in its row (codegen/region_rows.py values_in_rows): no copy into the stack
    made = [line for line in loop if "out=H_rows[t" in line]
    assert len(made) == 1 and made[0].startswith("dt") and "xp.multiply(" in made[0], loop
    assert not any(line.startswith(("H[t", "H_rows[t")) for line in loop), loop
    after = text.split("for t in range(9, -1, -1):")[1].split("\n    return")[0]
    assert "xs.reshape((40, 3)).T @" in after or "xp.matmul(xs.reshape((40, 3)).T," in after
    assert ".sum(axis=(0, 1)" in after
    assert "H = buf1" in text and text.count("xp.empty((11, 4, 5))") == 0
    plain_loop = _loop_lines(ys.source(plain), "for t in range(9, -1, -1):")
    assert any(line.startswith("dWx +=") for line in plain_loop), plain_loop
    grads = _right_and_plain(df, plain, rnn_batched, rnn_batched_args, (0, 1, 2))
    outs = [np.full((3, 5), np.nan), np.full((5, 5), np.nan), np.full(5, np.nan), None, None]
    again = df(*args, out=outs)
    assert again[1] is outs[0] and again[3] is outs[2]
    for a, b in zip(again[1:4], grads[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_after_the_backward_loop_the_stack_is_still_H_and_an_unasked_gradient_is_unbound():
    """The stack the backward loop writes its dz rows into is the forward's ``H``, dying
    there: after the loop it is still ``H`` (no ``H_1 = H``). The gradient carried for ``h0``,
    not asked for (wrt=), is not bound after the loop (no ``dh0 = dh``, a dead statement); when
    it is asked for, it is. Values: finite differences and the plain form."""
    args = rnn_batched_args()
    for wrt, bound in (((0, 1, 2), False), ((0, 1, 2, 4), True)):
        df = ys.simplegrad(rnn_batched, *args, wrt=wrt)
        plain = ys.simplegrad(rnn_batched, *args, wrt=wrt, buffers=False)
        for form in (df, plain):
            after = ys.source(form).split("for t in range(9, -1, -1):")[1].split("\n    return")[0]
            after = [line for line in after.splitlines() if not line.startswith("        ")]
            assert ("    dh0 = dh" in after) == bound, after
            assert not any("H_1" in line for line in after), after
        after = ys.source(df).split("for t in range(9, -1, -1):")[1]
        assert re.search(r"\n    t\d+ = H\[1:11\]\n", after), after
        _right_and_plain(df, plain, rnn_batched, rnn_batched_args, wrt)


def _right_and_plain(df, plain, f, make, argnums) -> list:
    """``df`` gives ``f``'s value and gradients (finite differences, for ``argnums``) on
    ``make()``, and what ``plain`` gives on other arguments call after call; its gradients."""
    args = list(make())
    value, *grads = df(*args)
    assert np.isclose(value, f(*args), rtol=1e-12)
    for i in argnums:
        np.testing.assert_allclose(grads[i], numerical_grad(f, args, i), rtol=1e-5, atol=1e-7)
    for seed in (1, 2, 0):
        other = make(seed=seed)
        for a, b in zip(df(*other), plain(*other)):
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    return grads


def test_a_sum_of_step_values_is_one_sum_after_the_loop():
    """An invariant's gradient that each step adds a value of the state's shape to
    (``dx += dt``) is the sum of those values, written over the dead state rows, after the
    loop (buffered form); the values agree with finite differences and the plain form."""
    args = (_vec(5), _vec(50).reshape(10, 5))
    df = ys.simplegrad(leaky, *args)
    text = ys.source(df)
    loop = _loop_lines(text, "for t in range(9, -1, -1):")
    assert not any(line.startswith("dx +=") for line in loop), loop
    after = text.split("for t in range(9, -1, -1):")[1].splitlines()
    # a sum over the rows: ``H.sum(axis=0)``, or a product with ones (BLAS, buffers.py)
    assert any(line.startswith("    dx = ") and "H" in line for line in after), after
    plain = ys.simplegrad(leaky, *args, buffers=False)
    for a, b in zip(df(*args), plain(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(df(*args)[1], numerical_grad(leaky, list(args), 0), rtol=1e-5,
                               atol=1e-7)


def _after_loop(text: str, header: str) -> list[str]:
    """The lines of the backward section after the loop ``header`` (before the return)."""
    return text.split(header)[1].split("\n    return")[0].split("\n    dh0 = dh\n")[-1] \
        .splitlines()


def test_sums_of_outer_products_are_one_product_per_stage_after_the_loop():
    """passes/stacked.py on RK4, buffered form: each step adds four outer products
    ``dz[..., None] * u`` (one per stage) to dW and the four dz to db. Each stage's dz is made
    in the row of a forward stack of its own that the step has read for the last time
    (``out=V[dt]``), and after the loop dW is four products of the stacks (``S.T @ U``) and db
    their four sums, as the handwritten adjoint makes them. The plain form keeps the rules'
    loop. Values: finite differences, the plain form call after call, out=."""
    args = rk4_args()
    df = ys.simplegrad(rk4_steps, *args, wrt={0, 1, 2})
    plain = ys.simplegrad(rk4_steps, *args, wrt={0, 1, 2}, buffers=False)
    text = ys.source(df)
    header = "for dt in range(11, -1, -1):"
    loop = _loop_lines(text, header)
    assert not any(line.startswith(("dW", "db")) for line in loop), loop
    made = [line for line in loop if re.search(r"out=\w+\[dt\]\)$", line)]
    assert len(made) == 4 and all("xp.multiply(" in line for line in made), loop
    after = _after_loop(text, header)
    products = [line for line in after if re.search(r"= xp\.matmul\(\w+\.T, \w+, out=", line)]
    assert len(products) == 4 and sum(line.startswith("    dW += ") for line in after) == 3
    assert sum(line.startswith("    db += ") for line in after) == 3, after
    plain_loop = _loop_lines(ys.source(plain), header)
    assert any(line.startswith("dW +=") for line in plain_loop), plain_loop
    assert _right_and_plain(df, plain, rk4_steps, rk4_args, (0, 1, 2))[3] is None
    outs = [np.full((4, 4), np.nan), np.full(4, np.nan), np.full(4, np.nan), None]
    again = df(*args, out=outs)
    assert again[1] is outs[0] and again[2] is outs[1]
    for a, b in zip(again[1:4], plain(*args)[1:4]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_outer_products_of_a_vector_state_leave_the_loop_where_their_rows_do():
    """One sequence (``h`` a vector): dWx adds ``xs[t][:, None] * dz[..., None, :]`` (the
    rule of ``x @ W``) and db adds dz; dz goes into the dead state row, and dWx and db are one
    product and one sum after the loop. dWh's outer product reads the state rows, which dz
    overwrites: it stays in the loop."""
    args = rnn_vector_args()
    df = ys.simplegrad(rnn_batched, *args)
    text = ys.source(df)
    header = "for t in range(9, -1, -1):"
    loop = _loop_lines(text, header)
    assert [line for line in loop if line.startswith(("dW", "db")) and "+=" in line] == \
        ["dWh += dWh_part1"], loop
    assert any(line.startswith("dWh_part1 = xp.multiply(h_prev[:, None], dt7[..., None, :], ")
               for line in loop), loop
    after = _after_loop(text, header)
    assert any(line.startswith("    dWx = xp.matmul(xs.T, ") for line in after), after
    assert any(line.startswith("    db = ") for line in after), after
    plain = ys.simplegrad(rnn_batched, *args, buffers=False)
    _right_and_plain(df, plain, rnn_batched, rnn_vector_args, (0, 1, 2, 4))


def test_backward_loop_body_writes_into_work_arrays():
    """The buffered form plans a body's memory (codegen/region_plan.py, buffers.py): the carried gradient is updated in place and the step's
    product written over it (``xp.matmul(dt, Wh.T, out=dh)``), dh itself lives in a work
    array filled with zeros (no array made per call; where dh0 is not returned),
    temporaries go into work arrays, and
    those the loop needs only while it runs live in dWx's memory, written after the loop.
    Values: the plain form over calls with other arguments, finite differences, out=."""
    make = lambda seed=0: rnn_batched_args(T=10, B=16, D=32, H=32, seed=seed)    # noqa: E731
    args = make()
    df = ys.simplegrad(rnn_batched, *args, wrt={0, 1, 2})
    plain = ys.simplegrad(rnn_batched, *args, wrt={0, 1, 2}, buffers=False)
    text = ys.source(df)
    back = _loop_lines(text, "for t in range(9, -1, -1):")
    assert "dh += h_new" in back, back
    assert any(line.startswith("xp.matmul(dt") and line.endswith(", Wh.T, out=dh)")
               for line in back), back
    assert "dh = xp.zeros(" not in text and "dh.fill(0.0)" in text
    before = text.split("for t in range(10):")[0]
    assert "dWx_mem = _result(out, 0, (32, 32))" in before
    forward = _loop_lines(text, "for t in range(10):")
    made = [line.split(" = ")[0] for line in forward if line.endswith(" = H_rows[t + 1]")]
    assert len(made) == 1 and f"h = xp.tanh({made[0]}, out={made[0]})" in forward, forward
    for seed in (1, 2, 0, 0):
        other = make(seed)
        for a, b in zip(df(*other), plain(*other)):
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    value, *grads = df(*args)
    for i in (0, 2):
        np.testing.assert_allclose(grads[i], numerical_grad(rnn_batched, list(args), i),
                                   rtol=1e-5, atol=1e-7)
    outs = [np.full((32, 32), np.nan), np.full((32, 32), np.nan), np.full(32, np.nan), None, None]
    again = df(*args, out=outs)
    assert again[1] is outs[0]
    for a, b in zip(again[1:4], grads[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_input_products_of_every_step_are_one_product_before_the_loop():
    """The buffered form makes a step's pre-activation in the row of the state stack where the
    step's state goes (``h = xp.tanh(t, out=t)``), and the input's product of every step at
    once before the loop: ``xp.matmul(xs.reshape((40, 3)), Wx, out=H[1:11].reshape((40,
    5)))``, the step reading its row. Each row's product sums the terms the step would (with
    numpy's OpenBLAS in the same order: the same bits), so the module with the product made
    in the loop instead agrees with it to the last places; both match the plain form and
    finite differences, call after call."""
    args = rnn_batched_args()
    df = ys.simplegrad(rnn_batched, *args)
    text = ys.source(df)
    before = text.split("for t in range(10):")[0].splitlines()
    forward = _loop_lines(text, "for t in range(10):")
    made = [line.split(" = ")[0] for line in forward if line.endswith(" = H_rows[t + 1]")]
    assert len(made) == 1 and f"h = xp.tanh({made[0]}, out={made[0]})" in forward, forward
    assert before[-3:-1] == ["    # loop_regions.py:318  xs[t] @ Wx of every step at once",
                           "    xp.matmul(xs.reshape((40, 3)), Wx, out=H[1:11].reshape((40, 5)))"]
    assert not [line for line in forward if ("Wx" in line or "xs" in line)
                and not line.startswith("#")], forward
    # the step as it was: the product made in the row inside the loop
    inside = f"        {made[0]} = xp.matmul(xs[t], Wx, out=H_rows[t + 1])"
    step = [inside if line == f"        {made[0]} = H_rows[t + 1]" else line
            for line in text.splitlines()
            if line != "    xp.matmul(xs.reshape((40, 3)), Wx, out=H[1:11].reshape((40, 5)))"]
    assert len(step) == len(text.splitlines()) - 1 and inside in step
    namespace: dict = {}
    exec(compile("\n".join(step), "step_in_loop", "exec"), namespace)
    plain = ys.simplegrad(rnn_batched, *args, buffers=False)
    for seed in (0, 1, 2):
        other = rnn_batched_args(seed=seed)
        hoisted, inside = df(*other), namespace["rnn_batched_grad"](*other)
        for a, b, c in zip(hoisted, inside, plain(*other)):
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
                np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    value, *grads = df(*args)
    for i in range(5):
        np.testing.assert_allclose(grads[i], numerical_grad(rnn_batched, list(args), i),
                                   rtol=1e-5, atol=1e-7)


def test_input_products_written_second_are_made_before_the_loop_too():
    """``h @ Wh + xs[t] @ Wx``: the sum is written over the input's product (``t += u`` for
    ``u + t``, IEEE addition commutes: the same bits), so that product starts the chain made
    in the state's row and is made for every step before the loop. The module gives the bits
    of ``xs[t] @ Wx + h @ Wh``'s; values: the plain form and finite differences."""
    args = rnn_batched_args()
    df = ys.simplegrad(rnn_input_second, *args)
    text = ys.source(df)
    forward = _loop_lines(text, "for t in range(10):")
    assert "    xp.matmul(xs.reshape((40, 3)), Wx, out=H[1:11].reshape((40, 5)))" \
        in text.splitlines()
    made = [line.split(" = ")[0] for line in forward if line.endswith(" = H_rows[t + 1]")]
    product = [line.split(" = ")[0] for line in forward if "xp.matmul(h, Wh, out=" in line]
    assert len(made) == len(product) == 1, forward
    assert forward.index(f"{made[0]} += {product[0]}") > forward.index(f"{made[0]} = H_rows[t + 1]")
    first = ys.simplegrad(rnn_batched, *args)
    plain = ys.simplegrad(rnn_input_second, *args, buffers=False)
    for seed in (0, 1):
        other = rnn_batched_args(seed=seed)
        for a, b, c in zip(df(*other), first(*other), plain(*other)):
            if a is not None:
                np.testing.assert_array_equal(a, b)
                np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    grads = df(*args)[1:]
    for i in range(5):
        np.testing.assert_allclose(grads[i], numerical_grad(rnn_input_second, list(args), i),
                                   rtol=1e-5, atol=1e-7)


def test_np_dot_in_a_step_is_written_into_planned_memory():
    """``np.dot`` of matrices is the matrix product: the buffered form writes it with
    ``xp.matmul(..., out=)`` into a work array (the step's input product before the loop), so
    a call with ``out=`` allocates no array data, as with ``@``. Values: the plain form (which
    keeps ``np.dot``), the ``@`` program's module and finite differences."""
    from yota_s2s.memory_report import allocated
    args = rnn_batched_args()
    df = ys.simplegrad(rnn_dot, *args, wrt={0, 1, 2})
    text = ys.source(df)
    assert "xp.dot(" not in text and "xp.matmul(h, Wh, out=" in text
    assert "    xp.matmul(xs.reshape((40, 3)), Wx, out=H[1:11].reshape((40, 5)))" \
        in text.splitlines()
    assert "np.dot(" in ys.source(ys.simplegrad(rnn_dot, *args, wrt={0, 1, 2}, buffers=False))
    at = ys.simplegrad(rnn_batched, *args, wrt={0, 1, 2})
    plain = ys.simplegrad(rnn_dot, *args, wrt={0, 1, 2}, buffers=False)
    for a, b, c in zip(df(*args), at(*args), plain(*args)):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-13)
            np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    out = [np.empty_like(g) if g is not None else None for g in df(*args)[1:]]
    assert allocated(lambda: df(*args, out=out)).arrays == 0
    grads = df(*args)[1:]
    for i in range(3):
        np.testing.assert_allclose(grads[i], numerical_grad(rnn_dot, list(args), i),
                                   rtol=1e-5, atol=1e-7)


def test_input_products_before_the_loop_read_the_rows_the_steps_read():
    """Over the first 10 of 12 rows of ``xs``, the product before the loop reads those rows
    (``xs[:10]``); an ``xs`` laid out otherwise (Fortran order, a strided view) is read the
    same. Values: the plain form and finite differences."""
    r = np.random.default_rng(3)
    Wx, Wh, b, _, h0 = rnn_batched_args()
    args = (Wx, Wh, b, r.normal(size=(12, 4, 3)), h0)
    df = ys.simplegrad(rnn_leaving_two, *args)
    plain = ys.simplegrad(rnn_leaving_two, *args, buffers=False)
    assert "    xp.matmul(xs[:10].reshape((40, 3)), Wx, out=H[1:11].reshape((40, 5)))" \
        in ys.source(df).splitlines()
    wide = r.normal(size=(12, 4, 6))
    for xs in (args[3], np.asfortranarray(args[3]), wide[:, :, ::2], r.normal(size=(12, 4, 3))):
        other = (Wx, Wh, b, xs, h0)
        for a, c in zip(df(*other), plain(*other)):
            if a is not None:
                np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    grads = df(*args)[1:]
    for i in range(5):
        np.testing.assert_allclose(grads[i], numerical_grad(rnn_leaving_two, list(args), i),
                                   rtol=1e-5, atol=1e-7)


def _field_then_sums(u0, v):
    u = u0
    for t in range(3):
        u = u - 0.08 * v * (np.roll(u, -1, axis=1) - np.roll(u, 1, axis=1))
    total = 0.0
    h = v * 0.3
    for t in range(12):
        h = np.cos(h * 0.3 + 0.2)
        total = total + np.mean(h * h)
    return np.mean(u ** 2) + total


def _sums_only(v):
    total = 0.0
    h = v * 0.3
    for t in range(12):
        h = np.cos(h * 0.3 + 0.2)
        total = total + np.mean(h * h)
    return total


@pytest.mark.parametrize("f", [_field_then_sums, _sums_only])
def test_a_returned_gradient_made_over_a_backward_loops_carried_array_is_not_a_work_array(f):
    """The backward loop's dh (576 elements) ends as dv: ``dv = xp.multiply(dh, 0.3,
    out=dh)``, then ``dv += ...`` from the unrolled field loop, then returned. Its array must
    not be a work array (codegen/region_slots.py held_zeros): once it was one, free after the
    multiply, the field's adjoint wrote its temporaries over dv (fuzz seed 22500076, a wrong
    gradient), and the array returned was overwritten by the next call."""
    rng = np.random.default_rng(0)
    args = list(rng.uniform(-1, 1, (2, 24, 24))[2 - f.__code__.co_argcount:])
    df = ys.simplegrad(f, *args)
    plain = ys.simplegrad(f, *args, buffers=False)
    first = df(*args)
    kept = [np.copy(a) for a in first]
    df(*[a + 0.1 for a in args])
    for a, b, c in zip(first, kept, plain(*args)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(b, c, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kept[-1], numerical_grad(f, args, len(args) - 1), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("name, f, make, kind", [c for c in CASES if c[3] == "region"],
                         ids=[c[0] for c in CASES if c[3] == "region"])
def test_planned_loop_bodies_match_finite_differences(monkeypatch, name, f, make, kind):
    """Every region of the table with every body value planned into work arrays and work
    arrays lent by returned ones (LEND_MIN at 1: the small arrays of the table go through it),
    buffered form."""
    from yota_s2s.codegen import buffers
    monkeypatch.setattr(buffers, "LEND_MIN", 1)
    args = make()
    df = ys.simplegrad(f, *args)
    for _ in range(2):
        value, *grads = df(*args)
        assert np.allclose(value, f(*args), rtol=1e-12, atol=1e-12)
        for i, g in enumerate(grads):
            if g is not None:
                expected = numerical_grad(f, list(args), i)
                assert np.allclose(g, expected, rtol=1e-5, atol=1e-7), (i, g, expected)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_gradient_of_the_buffered_stacked_rnn_gradient(buffers):
    """A gradient of the buffered RNN gradient (whose backward loop writes dz over the state
    rows and makes dWx after the loop, passes/stacked.py) traces its plain form: the value
    and the second derivatives agree with finite differences of the gradient."""
    args = rnn_batched_args(T=9, B=3, D=2, H=4)
    df = ys.simplegrad(rnn_batched, *args, wrt={0, 1, 2})
    assert "out=H_rows[t" in ys.source(df)

    def g(Wx, Wh, b, xs, h0):
        _, dWx, dWh, db, _, _ = df(Wx, Wh, b, xs, h0)
        return np.sum(dWx ** 2) + np.sum(dWh * Wh) + np.sum(db)
    ddf = ys.simplegrad(g, *args, wrt={0, 1, 2}, buffers=buffers)
    value, *grads = ddf(*args)
    assert np.isclose(value, g(*args), rtol=1e-12)
    for i in (0, 1, 2):
        np.testing.assert_allclose(grads[i], numerical_grad(g, list(args), i), rtol=1e-5,
                                   atol=1e-7)


@pytest.mark.parametrize("f", [reversed_leak, cosine_of_inputs])
def test_planned_loop_bodies_at_a_batch_size_that_plans_them(f):
    """The two programs above at sizes the buffered form lends (640-element states, above
    buffers.LEND_MIN): both forms match finite differences call after call (the buffered form
    was wrong on both before the fix: an addition lost, a product written over its operand)."""
    args = batched_args(T=10, B=16, D=3, H=40)
    value = f(*args)
    expected = [numerical_grad(f, list(args), i) for i in range(4)]
    plain = ys.simplegrad(f, *args, buffers=False)(*args)
    for g, e in zip(plain[1:], expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    df = ys.simplegrad(f, *args)
    for _ in range(2):
        got, *grads = df(*args)
        assert np.isclose(got, value, rtol=1e-12)
        for g, p in zip(grads, plain[1:]):
            np.testing.assert_allclose(g, p, rtol=1e-10, atol=1e-12)


# -- rows of an array in the steps, and a stencil (flow6) --

def test_stencil_at_sizes_that_save_both_differences():
    """At the table's 6 x 5 grid (below ad/regions.py's REMAKE_MIN) the differences are saved, and the backward
    step writes the terms of ``dvx`` over the rows of the differences' stack
    (passes/stacked.py) while ``dvy``'s running sum, written inside ``dvy += dt * dfy``, still
    reads the row of ``dfy`` in that stack: the row is written after that read (it was written
    before it, and ``dvy`` came out wrong)."""
    args = list(stencil_args())
    df = ys.simplegrad(stencil, *args)
    assert "DFX" in ys.source(df) and "DFY" in ys.source(df)
    _assert_right(df, stencil, args)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
@pytest.mark.parametrize("f", [row_read_in_step, row_from_row, row_updated_twice, two_row_stores])
def test_rows_in_the_steps_cost_a_row_per_step(f, buffers):
    """A step that writes and reads rows of a (T, n) array copies a row at most, never the
    array (passes/inplace.py copies a row view read after an update of its array), and adds a
    row's gradient into the row of the array's gradient (ad/sweep.py), never into a zero
    array of the whole shape: the cost of a step does not grow with T."""
    import re
    args = (rnn_args()[0], _vec(50).reshape(10, 5))
    df = ys.simplegrad(f, *args, buffers=buffers)
    _assert_right(df, f, list(args))
    text = ys.source(df)
    # the step's work arrays (the buffered form's WORK_ARRAYS) are smaller than the (10, 5)
    # arrays: a row, or dW's outer product (5 x 5)
    sizes = {m.group(2): np.prod(eval(m.group(1)), dtype=int)
             for m in re.finditer(r"^    \((\([\d, ]*\)), '\w+', .*# (buf\d+)$", text, re.M)}
    for header in ("for t in range(10):", "for t in range(9, -1, -1):"):
        body = _loop_lines(text, header)
        assigned_rows = {m.group(1) for line in body
                         for m in [re.match(r"(\w+) = \w+\[[^\]]*\]$", line)] if m}
        for line in body:
            copied = re.match(r"\w+ = (\w+)\.copy\(\)$", line)
            assert copied is None or copied.group(1) in assigned_rows, (header, line)
            assert "zeros" not in line, (header, line)
            assert all(sizes[buf] < 50 for buf in re.findall(r"\bbuf\d+\b", line)), (header, line)
    # the zeros the loop writes rows of, and the gradient it adds rows into, are the loops'
    # own arrays (ir/region.py handed_over): no copy of them as a loop starts
    if f is not row_updated_twice:          # (its dO starts as a read-only broadcast of ones)
        assert not re.search(r"^    \w+ = \w+\.copy\(\)$", text, re.M), text


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_stencil_saves_the_field_and_makes_its_differences_again(monkeypatch, buffers):
    """The centred differences ``np.roll(f, -1) - np.roll(f, 1)`` along both axes are made
    again in the backward step from the field, saved once per step (``cheap`` primitives,
    ad/policies.py's RemakeCheap, for values of ``min_size`` elements or more: 1 here): one
    stack, not two; in the buffered form each roll is two slice copies into a work array
    (passes/lower.py), no ``np.roll`` call left, the same numbers."""
    from yota_s2s.ad import regions
    monkeypatch.setattr(regions, "POLICY", regions.RemakeCheap(min_size=1))
    args = stencil_args()
    df = ys.simplegrad(stencil, *args, buffers=buffers)
    _assert_right(df, stencil, list(args))
    import re
    text = ys.source(df)
    heads = [line.strip() for line in text.splitlines() if re.match(r"\s+for \w+ in range", line)]
    forward = _loop_lines(text, heads[0])
    assert [line.split(" = ")[0] for line in forward if line.startswith("F_prev")] == \
        (["F_prev_rows[__1][...]"] if buffers else ["F_prev[__1]"]), forward
    assert "DFX" not in text and "DFY" not in text and len(heads) == 2
    backward = "\n".join(_loop_lines(text, heads[1]))
    assert re.search(r"\n\w+ = F_prev(_rows)?\[__2\]\n", "\n" + backward), backward
    assert ("xp.roll(" in text) != buffers
    plain = ys.simplegrad(stencil, *args, buffers=False)(*args)
    for a, b in zip(df(*args), plain):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def _accumulator_args(rng):
    """Loops of at least frontend.regions.MIN_STEPS steps (a shorter one is unrolled)."""
    return {
        cyclic: (rng.standard_normal(12),),
        ring_squared: (rng.standard_normal(12),),
        two_sums: (rng.standard_normal(10), 0.7),
        two_sums_multiplied: (rng.standard_normal(10), 0.7),
        previous_product: (rng.standard_normal(10),),
        minibatch: (rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(4),
                    rng.standard_normal((9, 2, 3)), rng.standard_normal((9, 2, 4))),
        minibatch_squared: (rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((9, 2, 3))),
        decayed_sum: (rng.standard_normal((9, 4)), rng.standard_normal((3, 4)) * 0.5),
        decayed_total: (rng.standard_normal((9, 4)), rng.standard_normal((3, 4)) * 0.5),
        inner_sums: (rng.standard_normal((3, 4)) * 0.3, rng.standard_normal((9, 4))),
    }


@pytest.mark.parametrize("f, fused", [
    (cyclic, True), (ring_squared, True), (two_sums, True), (minibatch, True),
    (minibatch_squared, True), (two_sums_multiplied, False), (previous_product, False),
    (decayed_total, True), (decayed_sum, False), (inner_sums, False)])
def test_accumulator_loops_run_each_steps_adjoint_in_the_step(f, fused):
    """A loop whose carried values that need gradients are running sums (``s += e``, ``e``
    reading none of them) runs each step's adjoint right after the step, in one loop: no
    stack saved, no loop counting down; its gradients match finite differences and the plain
    form, in both forms. Not where a carried value read by the step needs a gradient
    (``s += x[i] * p; p = x[i]``), nor for two sums whose cotangents come after the loop."""
    args = _accumulator_args(np.random.default_rng(5))[f]
    diff = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    value = f(*args)
    grads = {}
    for buffers in (False, True):
        df = ys.simplegrad(f, *args, buffers=buffers)
        text = ys.source(df)
        loops = re.findall(r"^ +for \w+ in range\(", text, re.M)
        assert len(loops) == (1 if fused else 4 if f is inner_sums else 2), text
        assert ("-1, -1)" in text) is not fused          # a loop counting down
        for _ in range(2):
            got = df(*args)
            assert np.allclose(got[0], value, rtol=1e-13)
            for i in diff:
                np.testing.assert_allclose(got[1 + i], numerical_grad(f, list(args), i),
                                           rtol=1e-6, atol=1e-8)
            grads[buffers] = got[1:]
    for plain, fast in zip(grads[False], grads[True]):
        if plain is not None:
            np.testing.assert_allclose(fast, plain, rtol=1e-13, atol=1e-15)


def test_the_ring_loop_reads_like_its_handwritten_gradient():
    """The ring workload's gradient: one loop computing the value and the gradient, the
    gradient's elements Python floats in a list, as tools/workloads.py's ring_hand."""
    x = np.random.default_rng(0).standard_normal(50)
    text = ys.source(ys.simplegrad(cyclic, x))
    assert "    s = 0.0\n    dx = [0.0] * 50\n    x_1 = x.tolist()\n    for i in range(50):\n" \
        in text
    loop = [line.strip() for line in text.split("for i in range(50):\n")[1].splitlines()
            if not line.strip().startswith("#")]
    assert loop[:7] == ["t1 = x_1[i]", "t3 = (i + 1) % 50", "t4 = x_1[t3]", "t5 = t4 * t4",
                        "s = s + t1 * t5", "dx[t3] += t1 * 2.0 * t4",     # a float: inline
                        "dx[i] += t5"], loop
    squared = ys.source(ys.simplegrad(ring_squared, x))     # 2 s known after the loop:
    assert "    ds = 2.0 * s\n" in squared and re.search(          # scaled (ds through a 0-d
        r"\n    (buf\d+)\[\(\)\] = ds\n    dx = xp\.multiply\(\1, dx_part1, ", squared)  # work array)
    assert squared.index("# -- forward --") < squared.index(" in range(50):\n") \
        < squared.index("# -- backward --") < squared.index("    ds = 2.0 * s\n")


def test_a_carried_field_takes_two_work_arrays_in_turn():
    """A carried array made anew by each step (an explicit scheme's field, a gradient carried
    back) lives in two work arrays the loop takes in turn (codegen/region_slots.py ``body_slots``):
    no array per step, none per call with out=. Nine steps and ten (the result in one or the
    other), calls with other arguments in between. What the function returns is never a work
    array: a gradient carried back to an argument takes turns with the returned array, the
    last step writing it; a forward-only module's returned field is a new array each step."""
    from yota_s2s.memory_report import allocated

    from .programs.loop_regions import diffused_even, diffused_odd

    def loss_even(kappa, f):
        return np.sum(diffused_even(kappa, f) ** 2)
    r = np.random.default_rng(5)
    calls = [(r.random((32, 32)), r.random((32, 32))) for _ in range(3)]
    for f in (diffused_odd, loss_even):
        for wrt in ((0,), (0, 1)):
            df = ys.simplegrad(f, *calls[0], wrt=wrt)
            plain = ys.simplegrad(f, *calls[0], wrt=wrt, buffers=False)
            text = ys.source(df)
            assert re.search(r"\n +f_new, f_spare = buf\d+, buf\d+\n", text), text
            assert re.search(r"\n +df_new, df_spare = df_spare, df_new\n", text), text
            first = "df_mem, buf" if f is diffused_odd else "buf\\d+, df_mem"
            assert (re.search(rf"\n +df_new, df_spare = {first}", text) is not None) == \
                (wrt == (0, 1)), text
            firsts = df(*calls[0])
            kept = [np.copy(g) for g in firsts[1:] if g is not None]
            for args in calls[1:] + calls[:1]:
                for a, b in zip(df(*args), plain(*args)):
                    if b is not None:
                        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
            for g, k in zip(firsts[1:], kept):       # returned arrays are the caller's alone
                np.testing.assert_array_equal(g, k)
            value, *grads = df(*calls[1])
            assert np.isclose(value, f(*calls[1]))
            for i in wrt:
                np.testing.assert_allclose(grads[i], numerical_grad(f, list(calls[1]), i),
                                           rtol=1e-6, atol=1e-6)
            out = [np.empty((32, 32)), np.empty((32, 32)) if wrt == (0, 1) else None]
            again = df(*calls[1], out=out)
            assert all(g is o for g, o in zip(again[1:], out) if o is not None)
            for a, b in zip(again[1:], grads):
                if b is not None:
                    np.testing.assert_array_equal(a, b)
            assert allocated(lambda: df(*calls[2], out=out)).arrays == 0
    forward = ys.compile(diffused_even, *calls[0])
    first = forward(*calls[0])
    kept = first.copy()
    second = forward(*calls[1])
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_allclose(second, diffused_even(*calls[1]), rtol=1e-13)
    assert not np.shares_memory(first, second)


def test_a_state_widened_by_its_first_step_is_not_planned_by_its_later_type():
    """frontend/regions.py carries ``h`` as float64 when the first step widens a float32 start;
    the first step still runs in float32 up to the addition, as numpy's does. A body planned by
    the carried type wrote that step's float32 ``h * 0.322`` as the state, then summed its
    squares into a float64 array with ``xp.dot(..., out=)``, which raised (seed 25,300,096):
    such a body is written by its expressions (codegen/region_plan.py ``widened``). Both forms
    against numpy's value and finite differences (in b), call after call."""
    from .programs.loop_regions import widened_state
    r = np.random.default_rng(3)
    h0, b = r.standard_normal((6, 1)).astype(np.float32), r.standard_normal((6, 1))
    want = widened_state(h0, b)
    for buffers in (True, False):
        df = ys.simplegrad(widened_state, h0, b, buffers=buffers)
        for _ in range(2):
            value, dh0, db = df(h0, b)
            assert np.isclose(value, want, rtol=1e-12) and dh0.dtype == np.float32
            np.testing.assert_allclose(db, numerical_grad(widened_state, [h0, b], 1),
                                       rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_dict_argument_read_in_the_step_is_a_region(buffers):
    W, xs = list_args()
    params = {"W": W, "b": np.linspace(-0.5, 0.5, 3)}
    tape, _ = trace_function(params_dict, (params, xs))
    assert " region: " in tape.loops[0], tape.loops
    value, dparams, dxs = ys.simplegrad(params_dict, params, xs, buffers=buffers)(params, xs)
    assert np.isclose(value, params_dict(params, xs), rtol=1e-12)
    for key in ("W", "b"):
        def f(a, key=key):
            return params_dict({**params, key: a}, xs)
        np.testing.assert_allclose(dparams[(key,)], numerical_grad(f, [params[key]], 0),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("T", [7, 8, 12])
def test_last_item_of_an_appended_list_through_grad(T):
    """Issue 29 item 11: from 8 steps (a region's trial) hs[-1] read the list's first item at
    every step; value and gradients were wrong in ys.grad too."""
    W, xs = list_args(T)
    value, g = ys.grad(last_of_list, W, xs)
    assert np.isclose(value, last_of_list(W, xs), rtol=1e-12)
    for i in (0, 1):
        np.testing.assert_allclose(g[i], numerical_grad(last_of_list, [W, xs], i),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_list_inside_a_dict_argument(buffers):
    W, xs = list_args()
    fresh = lambda: {"hs": [np.full((2, 3), 0.2)]}          # noqa: E731 (the loss appends)
    df = ys.simplegrad(list_in_dict, W, xs, fresh(), buffers=buffers)
    value, dW, dxs, dstate = df(W, xs, fresh())
    assert np.isclose(value, list_in_dict(W, xs, fresh()), rtol=1e-12)
    np.testing.assert_allclose(dW, numerical_grad(lambda W: list_in_dict(W, xs, fresh()), [W], 0),
                               rtol=1e-5, atol=1e-7)
    h0 = fresh()["hs"][0]
    np.testing.assert_allclose(
        dstate[("hs", 0)],
        numerical_grad(lambda h: list_in_dict(W, xs, {"hs": [h]}), [h0], 0), rtol=1e-5, atol=1e-7)
    # the rows the loop appended reach the caller's list, as calling the function does
    given, expected = fresh(), fresh()
    df(W, xs, given), list_in_dict(W, xs, expected)
    assert len(given["hs"]) == len(expected["hs"]) == len(xs) + 1
    for row, want in zip(given["hs"], expected["hs"]):
        np.testing.assert_allclose(row, want, rtol=1e-13)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_later_loop_reading_the_items_a_region_set_by_key_is_unrolled(buffers):
    args = list_args()
    tape, _ = trace_function(keyed_read_in_a_later_loop, args)
    assert "region" in tape.loops[0] and "unrolled" in tape.loops[1], tape.loops
    value, *grads = ys.simplegrad(keyed_read_in_a_later_loop, *args, buffers=buffers)(*args)
    assert np.isclose(value, keyed_read_in_a_later_loop(*args), rtol=1e-13)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, numerical_grad(keyed_read_in_a_later_loop, list(args), i),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_a_carried_value_written_in_place_then_made_anew_keeps_its_saved_row(buffers):
    from .programs.loop_regions import column_bumped
    rng = np.random.default_rng(1)
    args = [rng.normal(size=(3, 4)), rng.normal(size=(4, 4)) * 0.5]
    value, *grads = ys.simplegrad(column_bumped, *args, buffers=buffers)(*args)
    assert np.isclose(value, column_bumped(*args), rtol=1e-13)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, numerical_grad(column_bumped, args, i), rtol=1e-6,
                                   atol=1e-8)


def test_reverse_over_reverse_through_an_index_summed_in_a_loop():
    from .programs.loop_regions import column_summed
    rng = np.random.default_rng(1)
    x, W = rng.normal(size=(3, 4)), rng.normal(size=(4, 4)) * 0.5
    v = rng.normal(size=x.shape)
    df = ys.simplegrad(column_summed, x, W, wrt={0}, buffers=False)
    eps = 1e-6
    expected = (df(x + eps * v, W)[1] - df(x - eps * v, W)[1]) / (2 * eps)
    for strategy in ("rev-rev", "fwd-rev"):
        hv = ys.hvp(column_summed, x, W, strategy=strategy)(x, W, v)
        np.testing.assert_allclose(hv, expected, rtol=1e-6, atol=1e-8)
