"""Gradients of gradients: the plain form of a generated module uses only primitives with rules,
so it can be compiled again (DESIGN.md keeps this door open). Hessian-vector products are
checked against finite differences of the first gradient."""
import importlib
import sys

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import numerical_grad

from .programs import models


@pytest.fixture
def first_order(tmp_path, monkeypatch):
    """Compile f's plain gradient into tmp_path and import it as a user would."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def compile_first(f, *args, name):
        ys.simplegrad(f, *args, buffers=False, out_dir=tmp_path, module_name=name)
        return getattr(importlib.import_module(name), f"{f.__name__}_grad")
    yield compile_first
    for name in [n for n in sys.modules if n.startswith("first_")]:
        del sys.modules[name]


def test_hessian_vector_product_of_a_tanh_layer(first_order):
    r = np.random.default_rng(0)
    W, x, V = r.standard_normal((3, 4)), r.standard_normal(4), r.standard_normal((3, 4))
    grad = first_order(models.tanh_layer, W, x, name="first_tanh")

    def directional(W, x):
        _, dW, _ = grad(W, x)
        return np.sum(dW * V)

    _, hW, hx = ys.simplegrad(directional, W, x, buffers=False)(W, x)
    np.testing.assert_allclose(hW, numerical_grad(directional, [W, x], 0), atol=1e-6)
    np.testing.assert_allclose(hx, numerical_grad(directional, [W, x], 1), atol=1e-6)


def test_second_order_through_a_scatter_with_repeated_indices(first_order):
    r = np.random.default_rng(1)
    W, V, idx = r.standard_normal((3, 4)), r.standard_normal((3, 4)), np.array([0, 2, 0])
    grad = first_order(models.gather_rows, W, idx, name="first_gather")
    assert "xp.add.at(" in ys.source(grad)            # the scatter that must compile again

    def directional(W):
        return np.sum(grad(W, idx)[1] * V)

    _, hW = ys.simplegrad(directional, W, buffers=False)(W)
    np.testing.assert_allclose(hW, numerical_grad(directional, [W], 0), atol=1e-6)
