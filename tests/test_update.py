"""``ys.update``: in place, keeping identity; immutable containers; the functional form."""
from __future__ import annotations

import types

import numpy as np
import pytest

import yota_s2s as ys

from .programs import structs as S


def sgd(x, gx):
    return x - 0.1 * gx


def test_arrays_are_updated_in_place_and_references_see_it(rng):
    model = S.MLP([3, 4, 2], rng)
    W0 = model.layers[0].W
    held = {"optimizer state": W0}                 # a reference kept elsewhere
    before = W0.copy()
    _, g = ys.grad(S.mlp_loss, model, rng.standard_normal((3, 5)))
    assert ys.update(model, g[0], sgd) is model
    assert model.layers[0].W is W0 and held["optimizer state"] is W0
    np.testing.assert_allclose(W0, before - 0.1 * g[0][("layers", 0, "W")])


def test_floats_and_changed_arrays_are_stored_back():
    obj = types.SimpleNamespace(W=np.ones(2, dtype=np.float32), scale=2.0,
                                items=[1.0, np.ones(2)], table={"k": 3.0})
    grads = {("W",): np.ones(2), ("scale",): 1.0, ("items", 0): 1.0, ("items", 1): np.ones(2),
             ("table", "k"): 1.0}
    W, items1 = obj.W, obj.items[1]
    ys.update(obj, grads, lambda x, gx: x - 0.5 * gx)
    assert obj.W is W and obj.W.dtype == np.float32             # float64 step, same_kind cast
    assert obj.scale == 1.5 and obj.items[0] == 0.5 and obj.table["k"] == 2.5
    assert obj.items[1] is items1
    ys.update(obj, {("W",): np.ones(2)}, lambda x, gx: np.concatenate([x, gx]))
    assert obj.W is not W and obj.W.shape == (4,)               # a new shape: stored back


def test_immutable_containers_raise_with_the_fix():
    p = S.Params(np.ones(2), np.ones(2))
    b = p.b
    ys.update(p, {("b",): np.ones(2)}, sgd)                     # the array itself is mutable
    assert p.b is b and b[0] == pytest.approx(0.9)
    frozen = S.Scaled(np.ones(2), 2.0)
    with pytest.raises(ys.UpdateError, match=r"Scaled.scale: Scaled objects are immutable") as e:
        ys.update(frozen, {("scale",): 1.0}, sgd)
    assert "inplace=False" in str(e.value)
    with pytest.raises(ys.UpdateError, match=r"tuple\[1\]"):
        ys.update((np.ones(2), 1.0), {(1,): 1.0}, sgd)


def test_functional_update_builds_a_new_object():
    frozen = S.Scaled(np.ones(2), 2.0)
    new = ys.update(frozen, {("scale",): 1.0, ("W",): np.ones(2)}, sgd, inplace=False)
    assert type(new) is S.Scaled and new.scale == pytest.approx(1.9) and new.name == "scaled"
    assert frozen.scale == 2.0 and frozen.W[0] == 1.0           # untouched
    nested = {"a": [np.ones(2), S.Params(np.ones(2), np.zeros(2))], "keep": np.zeros(3)}
    out = ys.update(nested, {("a", 1, "W"): np.ones(2)}, sgd, inplace=False)
    assert out["keep"] is nested["keep"] and out["a"][0] is nested["a"][0]
    assert out["a"][1].W[0] == pytest.approx(0.9) and nested["a"][1].W[0] == 1.0
    assert isinstance(out["a"][1], S.Params)


def test_top_level_arrays_and_missing_gradients():
    x = np.ones(3)
    assert ys.update(x, np.ones(3), sgd) is x and x[0] == pytest.approx(0.9)
    assert ys.update(x, None, sgd) is x
    with pytest.raises(ys.UpdateError, match="inplace=False"):
        ys.update(1.0, 1.0, sgd)
    assert ys.update(1.0, 1.0, sgd, inplace=False) == pytest.approx(0.9)


def test_the_seed_example_trains(rng):
    m = S.Linear(rng.random((3, 4)), rng.random(3))
    X = rng.random((4, 5))
    loss = lambda m, X: np.sum((m.W @ X) ** 2)                 # noqa: E731
    first, _ = ys.grad(loss, m, X)
    for _ in range(50):
        val, g = ys.grad(loss, m, X)
        ys.update(m, g[0], lambda x, gx: x - 0.01 * gx)
    assert val < first / 10 and list(g[0]) == [("W",)]
