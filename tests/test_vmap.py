"""``ys.vmap`` and ``ys.per_example_grad`` (ad/batching.py, yota_s2s/batched.py).

The whole gradient-check table runs in tools/vmap_check.py (a batch of three against a loop
over them, both forms); here a deterministic subset of it, one case per family of rules.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_per_example, compile_vmap
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.errors import GuardError, NoRuleError, RuleError, UsageError
from yota_s2s.rules import RULES

from . import vmapcheck
from .test_gradcheck import CASES

SUBSET = ["tanh[2, 3]", "where[2, 1][1, 3]", "sum_axis_tuple", "matmul_vec_mat",
          "matmul_batch_broadcast_left", "transpose_axes", "index_mixed_advanced",
          "index_add_buffer", "float_math", "take_along_axis", "solve_vector", "mlp_softmax_xent",
          "loop_rnn_summed"]


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
@pytest.mark.parametrize("name", SUBSET)
def test_a_batch_of_three_equals_a_loop_of_three(name: str, buffers: bool) -> None:
    """``vmap(value_and_grad(f))`` on a batch against ``value_and_grad(f)`` per example."""
    case = next(c for c in CASES if c.name == name)
    assert vmapcheck.check(case, buffers=buffers) == "ok"


def mlp_loss(params, x, y):
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits)
    logp = logits - m - np.log(np.sum(np.exp(logits - m)))
    return -np.sum(y * logp)


def mlp(rng, n_in=12, n_hidden=16, n_out=5, batch=7):
    params = {"W1": rng.standard_normal((n_in, n_hidden)) * 0.3,
              "b1": rng.standard_normal(n_hidden),
              "W2": rng.standard_normal((n_hidden, n_out)) * 0.3, "b2": rng.standard_normal(n_out)}
    X = rng.standard_normal((batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, batch)]
    return params, X, Y


def test_per_example_gradients_of_an_mlp_equal_a_loop_of_simplegrad() -> None:
    params, X, Y = mlp(np.random.default_rng(0))
    grads = ys.per_example_grad(mlp_loss, params, X, Y)
    assert set(grads) == set(params)
    single = ys.simplegrad(mlp_loss, params, X[0], Y[0])
    for i in range(len(X)):
        _, expected, _, _ = single(params, X[i], Y[i])
        for key, g in grads.items():
            assert g.shape == (len(X),) + params[key].shape
            np.testing.assert_allclose(g[i], expected[(key,)], rtol=1e-12, atol=1e-12)


@dataclass
class Readout:
    W: np.ndarray
    v: np.ndarray


def readout_loss(p, x):
    return np.sum(np.tanh(x @ p.W) * p.v)


def test_per_example_gradients_keep_the_structure_of_params() -> None:
    rng = np.random.default_rng(8)
    W, v, X = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 3))
    g = ys.per_example_grad(readout_loss, Readout(W, v), X)
    assert isinstance(g, Readout) and g.W.shape == (4, 3, 2) and g.v.shape == (4, 2)
    as_list = ys.per_example_grad(lambda p, x: readout_loss(Readout(*p), x), [W, v], X)
    assert isinstance(as_list, list)
    single = ys.simplegrad(readout_loss, Readout(W, v), X[0])
    for i in range(4):
        expected = single(Readout(W, v), X[i])[1]
        for k, field in enumerate(("W", "v")):
            np.testing.assert_allclose(getattr(g, field)[i], expected[(field,)], rtol=1e-13)
            np.testing.assert_allclose(as_list[k][i], expected[(field,)], rtol=1e-13)


def test_ghost_norms_equal_the_norms_of_the_gradients_and_make_none_of_them() -> None:
    params, X, Y = mlp(np.random.default_rng(1))
    grads = ys.per_example_grad(mlp_loss, params, X, Y)
    expected = np.sqrt(sum(np.sum(g.reshape(len(X), -1) ** 2, axis=1) for g in grads.values()))
    norms = ys.per_example_grad(mlp_loss, params, X, Y, norms=True)
    np.testing.assert_allclose(norms, expected, rtol=1e-12)
    tape = compile_per_example(mlp_loss, (params, X, Y), (None, 0, 0), norms=True).tape
    made = {o.aval.shape for s in tape.stmts for o in s.outs}
    for key in ("W1", "W2"):             # dense layers: |a|^2 |g|^2, no (B, n, m) gradient
        assert (len(X),) + params[key].shape not in made


def test_vmap_composes_with_gradient() -> None:
    """``ys.vmap(ys.gradient(f), in_axes=(None, 0, 0))``: one gradient per example."""
    rng = np.random.default_rng(2)
    W, X, Y = rng.standard_normal((4, 3)), rng.standard_normal((6, 4)), rng.standard_normal((6, 3))

    def loss(W, x, y):
        return np.sum((np.tanh(x @ W) - y) ** 2)
    per_example = ys.vmap(ys.gradient(loss), in_axes=(None, 0, 0))(W, X, Y)
    assert per_example.shape == (6, 4, 3)
    for i in range(6):
        np.testing.assert_allclose(per_example[i], ys.gradient(loss)(W, X[i], Y[i]), rtol=1e-12)


def example_energy(w, x):
    return np.sum(np.tanh(x * w) ** 2)


per_example_energy = ys.vmap(example_energy, in_axes=(None, 0))


def total_energy(w, X):
    return np.sum(per_example_energy(w, X) * np.arange(1.0, 5.0))


def test_a_vmapped_function_can_be_differentiated() -> None:
    """A call of ``vf`` inside a function being compiled inlines the plain batched module."""
    rng = np.random.default_rng(7)
    w, X = rng.standard_normal(3), rng.standard_normal((4, 3))
    value, g = ys.grad(total_energy, w, X)
    assert np.isclose(value, sum(example_energy(w, X[i]) * (i + 1) for i in range(4)))
    np.testing.assert_allclose(g[0], numerical_grad(total_energy, [w, X], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g[1], numerical_grad(total_energy, [w, X], 1), rtol=1e-6, atol=1e-8)


def test_vmap_of_vmap() -> None:
    """A vmapped function batched again: a batch of batches."""
    rng = np.random.default_rng(9)
    w, XX = rng.standard_normal(3), rng.standard_normal((2, 4, 3))
    twice = ys.vmap(per_example_energy, in_axes=(None, 0))
    np.testing.assert_allclose(twice(w, XX), [[example_energy(w, x) for x in X] for X in XX],
                               rtol=1e-14)


def searched_and_compared(a, b, v):
    return (np.searchsorted(a, v) + 10 * np.searchsorted(a, v, side="right")
            + 100 * np.allclose(a, b) + 1000 * np.array_equal(a, b)
            + 10000 * np.array_equal(a, b, equal_nan=True))


def test_searches_and_comparisons_of_arrays_that_differ_per_example() -> None:
    A = np.sort(np.random.default_rng(10).integers(0, 5, (6, 5)).astype(float), axis=1)
    B = A.copy()
    B[1, 2] += 1e-9
    B[2, 0] += 1.0
    A[3, 4] = B[3, 4] = np.nan
    V = np.random.default_rng(11).integers(0, 5, (6, 2)).astype(float)
    np.testing.assert_array_equal(ys.vmap(searched_and_compared)(A, B, V),
                                  [searched_and_compared(A[i], B[i], V[i]) for i in range(6)])


POWER = 2


def powered(x):
    return np.sum(x ** POWER)


def test_a_changed_global_compiles_again(monkeypatch) -> None:
    """The batched module is found again under the guards of ``ys.grad``'s variants: a
    static global the trace read (an exponent) is checked at each call."""
    vf = ys.vmap(powered)
    X = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(vf(X), [1.0, 13.0, 41.0])
    monkeypatch.setattr(sys.modules[__name__], "POWER", 3)
    np.testing.assert_allclose(vf(X), [1.0, 35.0, 189.0])


def polynomial(a, x):
    return np.sum(a * x ** 2) + x[0] * x[-1]


def test_in_axes_and_out_axes() -> None:
    rng = np.random.default_rng(3)
    a, X = rng.standard_normal(4), rng.standard_normal((4, 5))       # examples are columns
    out = ys.vmap(lambda a, x: np.stack([x * a, x + 1.0]), in_axes=(None, 1), out_axes=1)(a, X)
    expected = np.stack([np.stack([X[:, i] * a, X[:, i] + 1.0]) for i in range(5)], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    np.testing.assert_allclose(ys.vmap(polynomial, in_axes=(None, 1))(a, X),
                               [polynomial(a, X[:, i]) for i in range(5)], rtol=1e-14)


def example_error(W, example):
    return np.sum((np.tanh(example["x"] @ W) - example["y"]) ** 2 * example["mask"])


@dataclass
class Example:
    x: np.ndarray
    y: np.ndarray
    power: int = 2


def example_power(W, e):
    return np.sum((e.x @ W) ** e.power * e.y)


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_in_axes_over_a_structure(buffers: bool) -> None:
    rng = np.random.default_rng(8)
    W, X, Y = rng.normal(size=(4, 3)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    mask = np.array([1.0, 0.0, 2.0])
    rows = [{"x": X[i], "y": Y[i], "mask": mask} for i in range(5)]
    spec = (None, {"x": 0, "y": 0, "mask": None})
    out = ys.vmap(example_error, in_axes=spec, buffers=buffers)(W, {"x": X, "y": Y, "mask": mask})
    np.testing.assert_allclose(out, [example_error(W, r) for r in rows], rtol=1e-14)
    # the examples of x along its axis 1, of y along 0; a dataclass batched by one int
    out = ys.vmap(example_error, in_axes=(None, {"x": 1, "y": 0, "mask": None}),
                  buffers=buffers)(W, {"x": X.T.copy(), "y": Y, "mask": mask})
    np.testing.assert_allclose(out, [example_error(W, r) for r in rows], rtol=1e-14)
    out = ys.vmap(example_power, in_axes=(None, 0), buffers=buffers)(W, Example(X, Y, 3))
    np.testing.assert_allclose(out, [example_power(W, Example(X[i], Y[i], 3)) for i in range(5)],
                               rtol=1e-14)
    grads = ys.per_example_grad(example_error, W, {"x": X, "y": Y, "mask": mask},
                                in_axes=({"x": 0, "y": 0, "mask": None},), buffers=buffers)
    for i, r in enumerate(rows):
        np.testing.assert_allclose(grads[i], numerical_grad(example_error, (W, r), 0),
                                   rtol=1e-6, atol=1e-8)


def test_in_axes_over_a_structure_is_checked() -> None:
    W, batch = np.ones((4, 3)), {"x": np.ones((5, 4)), "y": np.ones((5, 3)), "mask": np.ones(3)}
    with pytest.raises(UsageError, match=r"argument 1\['z'\], which the argument does not have"):
        ys.vmap(example_error, in_axes=(None, {"z": 0}))(W, batch)
    with pytest.raises(UsageError, match=r"argument 1\['mask'\] has shape \(3,\), with no "
                                         "examples along axis 1"):
        ys.vmap(example_error, in_axes=(None, {"x": 0, "y": 0, "mask": 1}))(W, batch)
    with pytest.raises(UsageError, match=r"example\['y'\]: 5, example\['mask'\]: 3"):
        ys.vmap(example_error, in_axes=(None, 0))(W, batch)


def layer_summary(W, x):
    h = np.tanh(x @ W)
    return {"h": h, "energy": np.sum(h * h)}


def test_a_structured_result_comes_back_with_its_structure() -> None:
    rng = np.random.default_rng(5)
    W, X = rng.standard_normal((3, 2)), rng.standard_normal((5, 3))
    out = ys.vmap(layer_summary, in_axes=(None, 0))(W, X)
    assert isinstance(out, dict) and set(out) == {"h", "energy"}
    for i in range(5):
        expected = layer_summary(W, X[i])
        np.testing.assert_allclose(out["h"][i], expected["h"], rtol=1e-14)
        np.testing.assert_allclose(out["energy"][i], expected["energy"], rtol=1e-14)


def test_the_batched_module_is_written_for_the_batch() -> None:
    W, X = np.ones((3, 2)), np.ones((5, 3))
    text = compile_vmap(lambda W, x: np.tanh(x @ W).sum(), (W, X), (None, 0), buffers=False).text
    assert text.startswith('"""Batched forward (5 examples at once) of')
    assert "xp.tanh(x @ W).sum(axis=1)" in text        # one matmul for the batch


def rnn(Wx, Wh, xs, h):
    for x in xs:
        h = np.tanh(x @ Wx + h @ Wh)
    return np.sum(h)


def test_a_loop_is_batched_as_a_loop() -> None:
    """The loop region's body is batched (``xs[t]`` reads every example's step ``t``), not
    unrolled: the module has one ``for`` loop, and the state ``h``, the same for every example
    at first, is batched from the start."""
    rng = np.random.default_rng(6)
    Wx, Wh = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.5
    XS, h0 = rng.standard_normal((5, 20, 3)), np.zeros(4)
    vf = ys.vmap(rnn, in_axes=(None, None, 0, None), buffers=False)
    np.testing.assert_allclose(vf(Wx, Wh, XS, h0), [rnn(Wx, Wh, xs, h0) for xs in XS],
                               rtol=1e-13)
    body = ys.source(vf.function(Wx, Wh, XS, h0)).split("def rnn_vmap(")[1]
    assert body.count("    for ") == 1 and "xs[:, " in body


def softclip(x, limit):
    return limit * np.tanh(x / limit)


def softclipped(x):
    return np.sum(softclip(x, 2.0) ** 2)


def test_a_primitive_without_a_batching_rule_is_refused_by_name_at_its_line() -> None:
    rules = RULES.copy()
    rules.diffrule(softclip, "x", "dy * (1 - (y / limit) ** 2)")
    X = np.ones((4, 3))
    with pytest.raises(NoRuleError) as e:
        ys.vmap(softclipped, rules=rules)(X)
    message = str(e.value)
    assert "softclip has no batching rule" in message and "test_vmap.py:" in message
    assert "batchrule" in message

    @rules.batchrule(softclip)
    def softclip_batched(x, limit):
        return softclip(x, limit)
    np.testing.assert_allclose(ys.vmap(softclipped, rules=rules)(X),
                               [softclipped(x) for x in X], rtol=1e-15)


def branchy(x):
    if np.sum(x) > 0:
        return x * 2.0
    return -x


def guarded(x):
    if np.sum(x) > 0:
        y = x[:1] * 2.0         # arms of two shapes: the if is a guard
    else:
        y = -x
    return np.sum(y) * x


def test_a_branch_that_returns_takes_each_examples_path() -> None:
    f = ys.vmap(branchy)
    mixed = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, 2.0]])
    np.testing.assert_allclose(f(mixed), [branchy(x) for x in mixed])


def test_a_guarded_branch_holds_for_the_whole_batch_or_is_refused_when_it_runs() -> None:
    """The module follows the path of the batch it was compiled for; a batch whose examples
    all take the other path compiles the other module, one whose examples differ is
    refused."""
    f = ys.vmap(guarded)
    X = np.abs(np.random.default_rng(4).standard_normal((3, 2)))
    np.testing.assert_allclose(f(X), [guarded(x) for x in X])
    np.testing.assert_allclose(f(-X), [guarded(x) for x in -X])
    np.testing.assert_allclose(f(X), [guarded(x) for x in X])
    with pytest.raises(GuardError, match="take different paths"):
        f(np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, 2.0]]))


def test_usage_errors() -> None:
    with pytest.raises(UsageError, match="2 axes for 1 arguments"):
        ys.vmap(np.sum, in_axes=(0, 0))(np.ones(3))
    with pytest.raises(UsageError, match="batches of different sizes"):
        ys.vmap(polynomial)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(UsageError, match="is a float"):
        ys.vmap(polynomial, in_axes=(0, 0))(1.0, np.ones((4, 2)))


def test_a_batching_rule_names_operands_and_options_only() -> None:
    rules = RULES.copy()
    with pytest.raises(RuleError, match="parameter 'q'"):
        @rules.batchrule(np.tanh)
        def tanh_batched(x, q):
            return np.tanh(x)
