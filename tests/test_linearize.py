"""ys.linearize's tangent map: the independent steps of an unrolled loop hoisted into one
statement over every step (ad/hoist.py), its values against ys.jvp at the same point."""
import re

import numpy as np
import pytest

import yota_s2s as ys


def rnn(Wx, Wh, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return h


def rnn_from_one(Wx, Wh, xs, h0):       # rows 1.. of xs: a slice
    h = h0
    for t in range(1, xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return h


def backwards(Wx, Wh, xs, h0):         # rows counting down: xs[::-1]
    h = h0
    for t in reversed(range(xs.shape[0])):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return h


def scaled_steps(w, xs, h0):            # elementwise: dot_xs[t] * w for every t
    h = h0
    for t in range(xs.shape[0]):
        h = np.sin(xs[t] * w + h * 0.5)
    return h


def left_products(W, xs, h0):           # W @ xs[t], the steps' matrices on the right
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ xs[t] + h)
    return h


def left_vectors(W, xs, h0):            # W @ xs[t] of vectors: no stack lines those up
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ xs[t] + h)
    return h


def every_other(Wx, xs, h0):            # xs[2 * t]: rows that are not consecutive
    h = h0
    for t in range(xs.shape[0] // 2):
        h = np.tanh(xs[2 * t] @ Wx + h)
    return h


def tangent_agrees(f, shapes, buffers=True, seed=0):
    rng = np.random.default_rng(seed)
    primals = [rng.normal(size=s) * 0.5 for s in shapes]
    value, f_jvp = ys.linearize(f, *primals, buffers=buffers)
    np.testing.assert_allclose(value, f(*primals), rtol=1e-13)
    for _ in range(2):
        tangents = [rng.normal(size=s) for s in shapes]
        np.testing.assert_allclose(f_jvp(*tangents), ys.jvp(f, primals, tangents)[1],
                                   rtol=1e-12, atol=1e-14)
    return ys.source(f_jvp)


def products(text):
    body = text[re.search(r"def \w+_tangent\(", text).start():]
    code = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
    return len(re.findall(r" @ |xp\.matmul\(", code))


@pytest.mark.parametrize("buffers", [True, False])
def test_rnn_tangent_map_makes_the_products_of_every_step_at_once(buffers):
    steps = 6
    text = tangent_agrees(rnn, [(3, 4), (4, 4), (steps, 2, 3), (2, 4)], buffers)
    # dot_xs[t] @ Wx, xs[t] @ dot_Wx and h @ dot_Wh for every t: once for all the steps,
    # the last two one product; only dot_h @ Wh is left in the steps (4 products a step before)
    assert products(text) == steps + 2
    assert re.search(r"matmul\(dot_xs, Wx\b|dot_xs @ Wx", text)
    # the forward stacks the states h0 .. h_4 once and joins them to xs, [xs | hs], for
    # xs @ dot_Wx + hs @ dot_Wh = [xs | hs] @ [dot_Wx; dot_Wh]: the tangent map reads them
    assert "def rnn_tangent(Wx, xs_hs, Wh," in text and "stack" not in text
    assert re.search(r"xs_hs @ xp\.concatenate\(\(dot_Wx, dot_Wh\)\)|"
                     r"matmul\(xs_hs, t\d+", text)


def test_rnn_tangent_map_in_the_inputs_alone():
    rng = np.random.default_rng(1)
    Wx, Wh, h0 = rng.normal(size=(3, 4)), rng.normal(size=(4, 4)), np.zeros((2, 4))

    def of_xs(xs):
        return rnn(Wx, Wh, xs, h0)
    text = tangent_agrees(of_xs, [(5, 2, 3)])
    assert products(text) == 1 + 4        # dot_xs @ Wx once, dot_h @ Wh at steps 1..4


@pytest.mark.parametrize("f, shapes, hoisted", [
    (rnn_from_one, [(3, 4), (4, 4), (5, 2, 3), (2, 4)], True),
    (backwards, [(3, 4), (4, 4), (5, 2, 3), (2, 4)], True),
    (scaled_steps, [(3,), (4, 2, 3), (2, 3)], True),
    (left_products, [(2, 2), (4, 2, 3), (2, 3)], True),
    (left_vectors, [(2, 3), (4, 3), (2,)], False),
    (every_other, [(3, 4), (6, 2, 3), (2, 4)], False),
], ids=["slice", "backwards", "elementwise", "matrices-on-the-right", "vectors-on-the-right", "every-other"])
def test_hoisted_steps_agree_with_jvp(f, shapes, hoisted):
    text = tangent_agrees(f, shapes)
    # hoisted: the steps read no row dot_xs[t] of the tangent, they read rows of the result
    assert (re.search(r"dot_xs\[\d+\]", text) is None) is hoisted



def minus_state(Wx, Wh, xs, h0):        # a difference: x - (u + w) is (x - w) - u
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx - h @ Wh)
    return h


def state_minus(Wx, Wh, xs, h0):        # the carried term first: u - (x + w)
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ Wh - xs[t] @ Wx)
    return h


def step_lines(text, t):
    """The code of step ``t`` of a plain tangent map (its lines between ``# t = t`` and the
    next step or the return)."""
    body = text[text.index(f"    # t = {t}\n"):]
    body = body[:re.search(r"\n    (# t = \d+|return )", body[1:]).start() + 1]
    return [line.strip() for line in body.splitlines()[1:]]


@pytest.mark.parametrize("f, step, hoisted", [
    (rnn, r"\(t\d+ @ Wh \+ t\d+\[1\]\) \* \w+\[1\]", 2),
    (minus_state, r"\(t\d+\[1\] - t\d+ @ Wh\) \* \w+\[1\]", 3),
    (state_minus, r"\(t\d+ @ Wh \+ t\d+\[1\]\) \* \w+\[1\]", 3),
], ids=["sum", "difference", "carried-first"])
def test_each_step_adds_the_hoisted_terms_once(f, step, hoisted):
    # xs[t] @ Wx ± h @ Wh in every argument: dot_xs[t] @ Wx + xs[t] @ dot_Wx ± (dot_h @ Wh +
    # h @ dot_Wh); the terms made before the steps are summed once, for all the steps, and a
    # step adds their row to dot_h @ Wh (it added two rows, one at a time)
    text = tangent_agrees(f, [(3, 4), (4, 4), (4, 2, 3), (2, 4)], buffers=False)
    assert re.fullmatch(r"t\d+ = " + step, step_lines(text, 1)[0]), step_lines(text, 1)
    # (a sum joins xs @ dot_Wx + hs @ dot_Wh into one product; a difference does not)
    assert products(text) == 4 + hoisted
    # buffered: a step is the product, one add and the factor's multiply
    text = tangent_agrees(f, [(3, 4), (4, 4), (4, 2, 3), (2, 4)])
    assert len(step_lines(text, 2)) == 3


def test_the_steps_factors_are_one_residual():
    # tanh's factor 1 - h * h at each step: the forward stacks them, the tangent map takes
    # one array (not one argument a step) and each step reads its row
    steps = 6
    text = tangent_agrees(rnn, [(3, 4), (4, 4), (steps, 2, 3), (2, 4)], buffers=False)
    params = re.search(r"def rnn_tangent\(([^)]*)\)", text).group(1).split(", ")
    assert len(params) == 4 + 4, params         # Wx, [xs | hs], Wh, the factors; 4 tangents
    factors = params[3]
    assert all(f"* {factors}[{t}]" in "\n".join(step_lines(text, t)) for t in range(steps))


def test_a_saved_python_bool_is_checked_as_one():
    # np.allclose returns a Python bool: the tangent map's saved value, a bool argument (it
    # was checked as a float, and a bool refused: "must be a float, got True")
    def f(x):
        return x[0] * np.allclose(x, x) + x[1] * (np.sum(x) > 100.0)
    text = tangent_agrees(f, [(3,)])
    assert "type(" in text and "is not bool" in text


def test_two_linearizations_keep_their_own_saved_values():
    # the forward's stacks and joins (hs, the factors, [xs | hs]) are new arrays each call,
    # not its work arrays: a second linearize leaves the first one's tangent map as it was
    rng = np.random.default_rng(2)
    shapes = [(3, 4), (4, 4), (5, 2, 3), (2, 4)]
    first = [rng.normal(size=s) * 0.5 for s in shapes]
    second = [p * 1.5 for p in first]
    tangents = [rng.normal(size=s) for s in shapes]
    _, f_jvp = ys.linearize(rnn, *first)
    before = f_jvp(*tangents)
    _, g_jvp = ys.linearize(rnn, *second)
    np.testing.assert_array_equal(f_jvp(*tangents), before)
    np.testing.assert_allclose(before, ys.jvp(rnn, first, tangents)[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g_jvp(*tangents), ys.jvp(rnn, second, tangents)[1], rtol=1e-12,
                               atol=1e-14)
