"""Boolean masks whose count depends on the data (issue 33; frontend/selections.py).

A selection ``x[mask]`` that only elementwise work reads, written back through the same mask
(or its complement: a mask of its own) or summed, is written as ``np.where`` over the whole
array: one module for every count of True entries (no guard, one ``ys.grad`` variant), no
inf or nan from the lanes the mask leaves out. Where anything else reads the count, the guard
stays.
"""
import warnings

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import numerical_grad


def sigmoid(x):
    """The numerically stable sigmoid as CS231n writes it."""
    pos = x >= 0
    neg = ~pos
    z = np.zeros_like(x)
    z[pos] = np.exp(-x[pos])
    z[neg] = np.exp(x[neg])
    top = np.ones_like(x)
    top[neg] = z[neg]
    return top / (1 + z)


def sigmoid_by_complement(x):
    """The issue's form: ``~pos`` written twice is one mask."""
    pos = x >= 0
    z = np.zeros_like(x)
    z[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    z[~pos] = np.exp(x[~pos]) / (1.0 + np.exp(x[~pos]))
    return z


def sigmoid_loss(x, w):
    return np.sum(sigmoid(x) * w)


def complement_loss(x, w):
    return np.sum(sigmoid_by_complement(x) * w)


def lstm_step(x, prev_h, prev_c, Wx, Wh, b):
    """CS231n's LSTM step (rnn_layers.lstm_step_forward), its gates through ``sigmoid``."""
    H = prev_h.shape[1]
    a = x @ Wx + prev_h @ Wh + b
    i, f, o = sigmoid(a[:, :H]), sigmoid(a[:, H:2 * H]), sigmoid(a[:, 2 * H:3 * H])
    g = np.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    return o * np.tanh(next_c), next_c


def lstm_loss(x, h, c, Wx, Wh, b, target):
    next_h, next_c = lstm_step(x, h, c, Wx, Wh, b)
    return np.sum((next_h - target) ** 2) + np.sum(next_c ** 2)


NULL = 0


def captioning_loss(features, captions, W_proj, b_proj, W_embed, Wx, Wh, b, W_vocab, b_vocab):
    """CS231n's CaptioningRNN.loss (cell_type "lstm"): project the image features to h0, embed
    the words, run the LSTM over time, score the vocabulary, temporal softmax loss."""
    captions_in, captions_out = captions[:, :-1], captions[:, 1:]
    mask = captions_out != NULL
    h = features @ W_proj + b_proj
    c = np.zeros_like(h)
    x = W_embed[captions_in]
    N, T, _ = x.shape
    hs = []
    for t in range(T):
        h, c = lstm_step(x[:, t, :], h, c, Wx, Wh, b)
        hs.append(h)
    scores = np.stack(hs, axis=1) @ W_vocab + b_vocab
    V = scores.shape[2]
    flat, y, m = scores.reshape(N * T, V), captions_out.reshape(N * T), mask.reshape(N * T)
    probs = np.exp(flat - np.max(flat, axis=1, keepdims=True))
    probs /= np.sum(probs, axis=1, keepdims=True)
    return -np.sum(m * np.log(probs[np.arange(N * T), y])) / N


def _batch(rng, scale=1.0):
    return rng.normal(size=(4, 5)) * scale, rng.normal(size=(4, 5))


def _check_grads(fn, args, grads, argnums):
    for i in argnums:
        np.testing.assert_allclose(grads[i], numerical_grad(fn, args, i), rtol=1e-5, atol=1e-7)


@pytest.fixture(autouse=True)
def _fresh_cache():
    ys.clear_cache()


@pytest.mark.parametrize("buffers", [True, False])
@pytest.mark.parametrize("fn", [sigmoid_loss, complement_loss])
def test_the_masked_sigmoid_is_one_module_for_every_count(fn, buffers):
    """Ten minibatches, each with its own count of positive entries, through the module
    compiled for the first: values as numpy's, gradients as finite differences."""
    rng = np.random.default_rng(0)
    dloss = ys.simplegrad(fn, *_batch(rng), buffers=buffers)
    assert "raise GuardError(" not in ys.source(dloss)
    counts = set()
    for _ in range(10):
        x, w = _batch(rng)
        counts.add(int(np.count_nonzero(x >= 0)))
        value, dx, dw = dloss(x, w)
        assert value == pytest.approx(fn(x, w), rel=1e-12)
        _check_grads(fn, (x, w), (dx, dw), (0, 1))
    assert len(counts) > 1


@pytest.mark.parametrize("buffers", [True, False])
def test_large_values_give_no_inf_nan_or_warning(buffers):
    """exp(-x) at x = -800 overflows: the lanes a mask leaves out compute the first selected
    lane's value instead, so nothing overflows and no 0 * inf reaches the gradient."""
    x = np.array([[-800.0, 800.0, -30.0, 0.0, 2.0], [700.0, -700.0, 1.0, -1.0, 800.0]])
    w = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    dloss = ys.simplegrad(sigmoid_loss, np.random.default_rng(1).normal(size=x.shape), w,
                          buffers=buffers)
    for sample in (x, -x, np.full_like(x, 800.0), np.full_like(x, -800.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if (sample > 0).all() or (sample < 0).all():
                # a mask that selects nothing: its lanes compute at the first element, which
                # may overflow (numpy warns); the selects drop it all the same
                warnings.simplefilter("ignore", RuntimeWarning)
            value, dx, dw = dloss(sample, w)
        assert np.isfinite(value) and np.isfinite(dx).all() and np.isfinite(dw).all()
        expected = 0.5 * (1.0 + np.tanh(0.5 * sample))         # the sigmoid, another way
        assert value == pytest.approx(np.sum(expected * w))
        np.testing.assert_allclose(dx, w * expected * (1.0 - expected), rtol=1e-3, atol=1e-12)


def test_the_unselected_lanes_stay_in_the_domain_of_log():
    """``np.log(x[x > 0])``: the left-out lanes take a selected value, not 0 (log(0) warns)."""
    def f(x):
        y = np.zeros_like(x)
        m = x > 0
        y[m] = np.log(x[m]) / x[m]
        return np.sum(y ** 2) + np.sum(np.sqrt(x[m]))
    rng = np.random.default_rng(2)
    df = ys.simplegrad(f, rng.normal(size=7))
    assert "raise GuardError(" not in ys.source(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            x = rng.normal(size=7)
            value, dx = df(x)
            assert value == pytest.approx(f(x))
            np.testing.assert_allclose(dx, numerical_grad(f, (x,), 0), rtol=1e-5, atol=1e-7)
    with np.errstate(invalid="ignore"):     # nothing selected: the lanes compute at -1.0
        value, dx = df(-np.ones(7))
    assert value == 0.0 and not dx.any()


def test_ys_grad_trains_the_sigmoid_and_an_lstm_step_with_one_compile():
    rng = np.random.default_rng(3)
    N, D, H = 3, 4, 2
    params = [rng.normal(size=(D, 4 * H)), rng.normal(size=(H, 4 * H)), rng.normal(size=4 * H)]
    for step in range(10):
        x, h, c, target = (rng.normal(size=s) for s in ((N, D), (N, H), (N, H), (N, H)))
        args = (x, h, c, *params, target)
        value, grads = ys.grad(lstm_loss, *args)
        assert value == pytest.approx(lstm_loss(*args))
        if step in (0, 9):
            _check_grads(lstm_loss, args, grads, range(6))
        params = [p - 0.1 * g for p, g in zip(params, grads[3:6])]
        xs, w = _batch(rng)
        ys.grad(sigmoid_loss, xs, w)
    assert ys.cache_info()["variants"] == 2 and ys.cache_info()["guard_failures"] == 0
    assert ys.cache_info()["misses"] == 2


def test_cs231n_captioning_lstm_trains_with_one_compile():
    """Its time loop stays a loop (a region): the step's selections are selects too."""
    rng = np.random.default_rng(4)
    N, T, D, H, W, V = 2, 8, 3, 2, 3, 5
    features, captions = rng.normal(size=(N, D)), rng.integers(0, V, size=(N, T + 1))
    _, tape = ys.trace(captioning_loss, features, captions,
                       *[rng.normal(size=s) for s in ((D, H), (H,), (V, W), (W, 4 * H),
                                                       (H, 4 * H), (4 * H,), (H, V), (V,))])
    assert "region: range(T), 8 steps" in tape.loops[0]
    shapes = [(D, H), (H,), (V, W), (W, 4 * H), (H, 4 * H), (4 * H,), (H, V), (V,)]
    params = [rng.normal(size=s) * 0.5 for s in shapes]
    for step in range(10):
        features = rng.normal(size=(N, D))
        captions = rng.integers(0, V, size=(N, T + 1))
        args = (features, captions, *params)
        value, grads = ys.grad(captioning_loss, *args)
        assert value == pytest.approx(captioning_loss(*args))
        if step == 9:
            _check_grads(captioning_loss, args, grads, [0, *range(2, 10)])
        params = [p - 0.05 * g for p, g in zip(params, grads[2:])]
    assert ys.cache_info() == {"hits": 9, "misses": 1, "guard_failures": 0, "variants": 1}


def test_a_sum_of_a_selection_needs_no_count():
    def f(x):
        return np.sum(x[x > 0] ** 2) + np.sum(np.exp(x[x > 0]))
    rng = np.random.default_rng(5)
    df = ys.simplegrad(f, rng.normal(size=(3, 3)))
    for _ in range(4):
        x = rng.normal(size=(3, 3))
        value, dx = df(x)
        assert value == pytest.approx(f(x))
        np.testing.assert_allclose(dx, numerical_grad(f, (x,), 0), rtol=1e-6)


def test_a_number_written_through_a_mask_needs_no_count():
    def f(x, c):
        y = x * 1.0
        y[c > 0] = np.sum(x)
        return np.sum(y * x)
    x = np.array([0.5, 1.5, 2.0])
    df = ys.simplegrad(f, x, np.array([1.0, -1.0, 1.0]))
    for c in ([1.0, 1.0, 1.0], [-1.0, -1.0, -1.0], [1.0, -1.0, -1.0]):
        c = np.array(c)
        value, dx, _ = df(x, c)
        assert value == pytest.approx(f(x, c))
        np.testing.assert_allclose(dx, numerical_grad(f, (x, c), 0), rtol=1e-6)


def _mean_of_selection(x):
    return np.mean(np.exp(x[x > 0]))


def _len_of_selection(x):
    return np.sum(x[x > 0]) / len(x[x > 0])


def _max_of_selection(x):
    s = np.exp(x[x > 0])
    y = np.zeros_like(x)
    y[x > 0] = s
    return np.sum(y) + np.max(s)


def _selection_multiplied(x):
    return x[x > 0] @ x[x > 0]


def _another_masks_write(x):
    y = np.zeros_like(x)
    y[x < 0] = x[x > 0]
    return np.sum(y)


@pytest.mark.parametrize("fn", [_mean_of_selection, _len_of_selection, _max_of_selection,
                                _selection_multiplied, _another_masks_write])
def test_what_reads_the_count_keeps_its_guard(fn):
    x = np.array([1.0, -2.0, 0.5, -1.0])
    df = ys.simplegrad(fn, x)
    assert "selecting 2 elements" in ys.source(df)
    with pytest.raises(ValueError, match="selecting 2 elements"):
        df(np.array([1.0, 2.0, 0.5, -1.0]))
