"""A list of ints the code only indexes with is read when the generated code runs (issue 35,
min-char-rnn's token ids): ``ys.grad`` compiles once for every list of that length, the
generated function checks it is a list of so many ints; a list used any other way is static,
as before (frontend/index_lists.py)."""
import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad

V, H = 6, 4
RS = np.random.RandomState(3)
WX, WH, WY = RS.randn(H, V) * 0.5, RS.randn(H, H) * 0.5, RS.randn(V, H) * 0.5


def chars_loss(Wx, Wh, Wy, inputs, targets, h):
    """A character RNN's loss as min-char-rnn writes it: one-hot rows set by the token ids,
    the target's probability read by its id."""
    loss = 0.0
    for t in range(len(inputs)):
        x = np.zeros((V, 1))
        x[inputs[t]] = 1
        h = np.tanh(Wx @ x + Wh @ h)
        p = np.exp(Wy @ h) / np.sum(np.exp(Wy @ h))
        loss += -np.log(p[targets[t], 0])
    return loss


def numeric(f, args, i, eps=1e-6):
    """Central differences of ``f`` in ``args[i]``."""
    out = np.zeros_like(args[i])
    for k in range(out.size):
        plus, minus = [a.copy() if j == i else a for j, a in enumerate(args)], \
            [a.copy() if j == i else a for j, a in enumerate(args)]
        plus[i].flat[k] += eps
        minus[i].flat[k] -= eps
        out.flat[k] = (f(*plus) - f(*minus)) / (2 * eps)
    return out


def chunks(n, length=5):
    rs = np.random.RandomState(n)
    return [([int(c) for c in rs.randint(0, V, length)], [int(c) for c in rs.randint(0, V, length)])
            for _ in range(n)]


def test_token_ids_in_a_list_compile_once_for_every_chunk():
    ys.clear_cache()
    h0 = np.zeros((H, 1))
    for inputs, targets in chunks(3):
        value, g = ys.grad(chars_loss, WX, WH, WY, inputs, targets, h0)
        args = (WX, WH, WY, inputs, targets, h0)
        assert np.isclose(value, chars_loss(*args), rtol=1e-13)
        for i in (0, 1, 2, 5):
            np.testing.assert_allclose(g[i], numeric(chars_loss, args, i), rtol=1e-6, atol=1e-8)
        assert g[3] is None and g[4] is None
    assert ys.cache_info()["misses"] == 1 and ys.cache_info()["hits"] == 2


@pytest.mark.parametrize("buffers", [True, False])
def test_the_generated_function_reads_the_list_and_checks_it(buffers):
    (inputs, targets), (other, _) = chunks(2, length=9)
    h0 = np.zeros((H, 1))
    compiled = compile_grad(chars_loss, (WX, WH, WY, inputs, targets, h0), buffers=buffers,
                            dynamic=frozenset({3, 4}))
    assert "inputs list of 9 ints" in compiled.text
    value, *grads = compiled.fn(WX, WH, WY, other, targets, h0)     # another chunk, no compile
    args = (WX, WH, WY, other, targets, h0)
    assert np.isclose(value, chars_loss(*args), rtol=1e-13)
    np.testing.assert_allclose(grads[0], numeric(chars_loss, args, 0), rtol=1e-6, atol=1e-8)
    for wrong in (other[:-1], [float(c) for c in other], tuple(other), [True] * 9):
        with pytest.raises(TypeError, match="must be a list of 9 ints"):
            compiled.fn(WX, WH, WY, wrong, targets, h0)


def concatenated(x, ids):
    return np.sum(x[ids + ids] ** 2)         # a list concatenation, not an array's sum


def as_a_key(x, ids):
    picked = {0: x, 1: 2.0 * x}
    return np.sum(picked[ids[0]] ** 2)


def as_numbers(x, ids):
    return np.sum(x * ids[1]) + ids[0] * 0.5


@pytest.mark.parametrize("f", [concatenated, as_a_key, as_numbers])
def test_a_list_of_ints_used_otherwise_than_as_an_index_is_static(f):
    x = np.linspace(0.5, 1.5, 4)
    for ids in ([1, 0, 3], [0, 1, 2]):
        value, g = ys.grad(f, x, ids)
        assert np.isclose(value, f(x, ids), rtol=1e-14)
        np.testing.assert_allclose(g[0], numeric(lambda a: f(a, ids), [x], 0), rtol=1e-7)


def keyed_loss(Wx, Wh, Wy, inputs, targets, hprev):
    """min-char-rnn's forward pass, in its form: dicts keyed by the step, ``hs[-1]`` before the
    loop, ``loss = 0``, the token ids read by the step index."""
    xs, hs, ps = {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((V, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wx, xs[t]) + np.dot(Wh, hs[t - 1]))
        ps[t] = np.exp(np.dot(Wy, hs[t])) / np.sum(np.exp(np.dot(Wy, hs[t])))
        loss += -np.log(ps[t][targets[t], 0])
    return loss


def test_min_char_rnns_form_is_a_region_that_trains_with_one_compile():
    ys.clear_cache()
    h0 = np.zeros((H, 1))
    for inputs, targets in chunks(3, length=12):
        value, g = ys.grad(keyed_loss, WX, WH, WY, inputs, targets, h0)
        args = (WX, WH, WY, inputs, targets, h0)
        assert np.isclose(value, keyed_loss(*args), rtol=1e-13)
        for i in (0, 1, 2, 5):
            np.testing.assert_allclose(g[i], numeric(keyed_loss, args, i), rtol=1e-6, atol=1e-8)
    assert ys.cache_info()["misses"] == 1 and ys.cache_info()["hits"] == 2
    loops = g._variant.compiled.forward.loops
    assert len(loops) == 1 and "region: range(len(inputs)), 12 steps" in loops[0], loops
