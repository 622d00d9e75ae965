"""The referee of ``ys.vmap`` on the gradient-check table (tests/test_gradcheck.py): a batch of
three examples against a loop over them, in both forms (buffered and plain).

``check(case, buffers)`` batches ``ys.value_and_grad(case.fn, <every float argument>)``: the
function's value and its gradients, per example, from one generated module, compared with the
same function called on each example (its own compiled gradient). Arguments that are not float
(ints, strings, index arrays) are the same for every example (``in_axes`` None). Returns
"ok", or raises what went wrong: a refusal (a primitive without a batching rule) is a
``NoRuleError``.
"""
from __future__ import annotations

import numpy as np

import yota_s2s as ys
from yota_s2s.batched import vmap
from yota_s2s.gradcheck import differentiable

SEEDS = (1, 2, 3)


def batch_of(case) -> tuple[list[tuple], tuple, tuple]:
    """Three examples of ``case``'s arguments, the batch made of them and its ``in_axes``."""
    examples = [case.make_args(np.random.default_rng(seed)) for seed in SEEDS]
    batch, axes = [], []
    for k, first in enumerate(examples[0]):
        if differentiable(first):
            batch.append(np.stack([np.asarray(e[k]) for e in examples]))
            axes.append(0)
        else:
            examples = [e[:k] + (first,) + e[k + 1:] for e in examples]
            batch.append(first)
            axes.append(None)
    return examples, tuple(batch), tuple(axes)


def check(case, buffers: bool = True, rtol: float = 1e-9) -> str:
    examples, batch, axes = batch_of(case)
    wrt = tuple(k for k, a in enumerate(axes) if a is not None)
    if not wrt:
        return "no float argument"
    fn = ys.value_and_grad(case.fn, wrt)
    value, grads = vmap(fn, in_axes=axes, buffers=buffers)(*batch)
    for i, example in enumerate(examples):
        expected_value, expected = fn(*example)
        _close(value[i], expected_value, rtol, f"{case.name}: the value of example {i}")
        for k, g, e in zip(wrt, grads, expected):
            _close(g[i], e, rtol, f"{case.name}: the gradient of argument {k}, example {i}")
    return "ok"


def _close(got, expected, rtol: float, what: str) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale, err_msg=what)
