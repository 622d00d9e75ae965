"""``ys.grad``'s compile cache: hits and misses, static values, guard failures, redefinition
in a notebook cell, rebinding of what the source read, the bound, and threads."""
from __future__ import annotations

import importlib
import itertools
import linecache
import sys
import threading
import types

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s import api
from yota_s2s.cache import Cache
from yota_s2s.errors import StaleSourceError

from .programs import structs as S

_cells = itertools.count(1)


def cell(source: str, namespace: dict) -> None:
    """Run ``source`` as IPython runs a notebook cell: a pseudo-file known to linecache."""
    filename = f"<ipython-input-{next(_cells)}-test>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)


@pytest.fixture(autouse=True)
def _fresh_cache():
    ys.clear_cache()


def misses() -> int:
    return ys.cache_info()["misses"]


def iterative(x, n):
    for i in range(n):
        x = 2 * x
    return np.sum(x)


def test_static_ints_decide_control_flow_without_a_flag():
    x = np.ones(3)
    for n, expected in [(1, 2.0), (2, 4.0), (3, 8.0), (1, 2.0), (2, 4.0)]:
        _, g = ys.grad(iterative, x, n)
        np.testing.assert_array_equal(g[0], expected)
        assert g[1] is None
    assert ys.cache_info() == {"hits": 2, "misses": 3, "guard_failures": 0, "variants": 3}


def test_a_hit_does_no_parsing_or_codegen(rng, monkeypatch):
    m = S.Linear(rng.standard_normal((3, 4)), rng.standard_normal(3))
    X = rng.standard_normal((4, 5))
    loss = lambda m, X: np.sum(m(X))                              # noqa: E731
    ys.grad(loss, m, X)

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled on a cache hit")
    monkeypatch.setattr(api, "compile_grad", no_compiling)
    for _ in range(3):
        val, g = ys.grad(loss, m, X)
    assert val == pytest.approx(loss(m, X))
    assert ys.cache_info()["hits"] == 3 and misses() == 1


def test_new_shapes_dtypes_and_static_leaves_compile_new_variants(rng):
    model, X = S.MLP([3, 4, 2], rng), rng.standard_normal((3, 5))
    ys.grad(S.mlp_loss, model, X)
    ys.grad(S.mlp_loss, model, rng.standard_normal((3, 7)))                 # shape
    ys.grad(S.mlp_loss, model, X.astype(np.float32))                         # dtype
    for layer in model.layers:
        layer.steps += 1                    # a field the code never reads: still a hit
    ys.grad(S.mlp_loss, model, X)
    assert misses() == 3
    model.act = S.relu                                                       # static leaf
    val, _ = ys.grad(S.mlp_loss, model, X)
    assert misses() == 4 and val == pytest.approx(model.loss(X))
    model.layers.append(S.Linear(rng.standard_normal((2, 2)), np.zeros(2)))  # layout
    val, g = ys.grad(S.mlp_loss, model, X)
    assert misses() == 5 and val == pytest.approx(model.loss(X)) and len(g[0]) == 6


def branchy(x):
    if np.sum(x) > 0:
        y = x[:1] * x[:1]       # arms of two shapes: a guard, one variant per path
    else:
        y = -x
    return np.sum(y)


def test_guard_failure_compiles_the_other_path_and_keeps_both():
    pos, neg = np.ones(2), -np.ones(2)
    for x in (pos, neg, pos, neg):
        _, g = ys.grad(branchy, x)
        np.testing.assert_array_equal(g[0], [2 * x[0], 0.0] if x[0] > 0 else -1.0)
    info = ys.cache_info()
    assert info["misses"] == 2 and info["variants"] == 2 and info["hits"] == 2
    assert info["guard_failures"] >= 2


def test_redefining_in_a_notebook_cell_never_returns_stale_code():
    ns = {"np": np}
    cell("def loss(x):\n    return np.sum(x * x)\n", ns)
    x = np.arange(3.0)
    np.testing.assert_array_equal(ys.grad(ns["loss"], x)[1][0], 2 * x)
    cell("def loss(x):\n    return np.sum(x * x * x)\n", ns)
    np.testing.assert_array_equal(ys.grad(ns["loss"], x)[1][0], 3 * x * x)
    assert misses() == 2


def test_rebinding_a_helper_the_source_calls_recompiles():
    ns = {"np": np}
    cell("def helper(x):\n    return x * x\n\ndef loss(x):\n    return np.sum(helper(x))\n", ns)
    loss, x = ns["loss"], np.arange(3.0)
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 2 * x)
    cell("def helper(x):\n    return 5 * x\n", ns)                 # only the helper changes
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 5.0)
    assert misses() == 2 and ys.cache_info()["variants"] == 1   # the stale variant is dropped


def test_patching_a_method_on_the_class_recompiles(rng):
    class Model:
        def __init__(self, W):
            self.W = W

        def loss(self, X):
            return np.sum(self.W @ X)
    m, X = Model(rng.standard_normal((2, 3))), rng.standard_normal((3, 4))
    ys.grad(m.loss, X)
    Model.loss = lambda self, X: np.sum((self.W @ X) ** 2)
    _, g = ys.grad(m.loss, X)
    np.testing.assert_allclose(g.self[("W",)], 2 * (m.W @ X) @ X.T)


def test_closures_are_part_of_the_key():
    def scaled(k):
        return lambda x: np.sum(k * x)
    x = np.ones(2)
    np.testing.assert_array_equal(ys.grad(scaled(2), x)[1][0], 2.0)
    np.testing.assert_array_equal(ys.grad(scaled(3), x)[1][0], 3.0)
    np.testing.assert_array_equal(ys.grad(scaled(2), x)[1][0], 2.0)
    assert misses() == 2


def test_rebinding_a_class_attribute_the_source_reads_recompiles():
    ns = {"np": np}
    cell("class Base:\n    scale = 2.0\n\nclass Cfg(Base):\n    pass\n\n"
         "def loss(x):\n    return np.sum(x * Cfg.scale)\n", ns)
    loss, x = ns["loss"], np.ones(2)
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 2.0)
    ns["Base"].scale = 3.0                              # where it was found
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 3.0)
    ns["Cfg"].scale = 4.0                               # shadowed on the subclass
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 4.0)
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 4.0)
    assert misses() == 3


def test_rebinding_an_attribute_of_a_global_object_recompiles():
    ns = {"np": np}
    cell("class Cfg:\n    scale = 2.0\n\nclass Slots:\n    __slots__ = ('k',)\n\n"
         "cfg, slots = Cfg(), Slots()\nslots.k = 1.0\n\n"
         "def loss(x):\n    return np.sum(x * cfg.scale * slots.k)\n", ns)
    loss, x = ns["loss"], np.ones(2)
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 2.0)
    ns["cfg"].scale = 3.0                               # set on the object, over the class's
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 3.0)
    ns["cfg"].scale = 5.0
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 5.0)
    ns["slots"].k = 2.0
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 10.0)
    np.testing.assert_array_equal(ys.grad(loss, x)[1][0], 10.0)
    assert misses() == 4


def test_one_code_object_under_other_globals_is_another_function():
    first = {"np": np, "K": 2.0}
    cell("def loss(x):\n    return np.sum(x * K)\n", first)
    other = types.FunctionType(first["loss"].__code__, {"np": np, "K": 5.0})
    x = np.ones(2)
    np.testing.assert_array_equal(ys.grad(first["loss"], x)[1][0], 2.0)
    np.testing.assert_array_equal(ys.grad(other, x)[1][0], 5.0)
    np.testing.assert_array_equal(ys.grad(first["loss"], x)[1][0], 2.0)
    assert misses() == 2


def test_static_function_arguments_are_told_apart_by_identity_not_name():
    def apply(f, x):
        return np.sum(f(x))
    x = np.ones(2)
    square = lambda x: x * x                                # noqa: E731
    five = lambda x: 5 * x                                  # noqa: E731  (also a <lambda>)
    makers = [lambda x, k=k: k * x for k in (2.0, 7.0)]     # one code object, two defaults
    np.testing.assert_array_equal(ys.grad(apply, square, x)[1][1], 2.0)
    np.testing.assert_array_equal(ys.grad(apply, five, x)[1][1], 5.0)
    np.testing.assert_array_equal(ys.grad(apply, makers[0], x)[1][1], 2.0)
    np.testing.assert_array_equal(ys.grad(apply, makers[1], x)[1][1], 7.0)


MODULE = """import numpy as np


def loss(x):
    return np.sum(x * 2.0)


def other(x):
    return x
"""


def test_a_source_file_edited_after_import_is_not_compiled_for_the_running_code(
        tmp_path, monkeypatch):
    path = tmp_path / "edited_after_import.py"
    path.write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    # no .pyc: the edits below keep the file's size within one second, so a reload would run
    # the cached bytecode of the first text (Python's own staleness check is mtime and size)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    module = importlib.import_module("edited_after_import")
    x = np.ones(2)
    path.write_text(MODULE.replace("x * 2.0", "x * 7.0"))
    with pytest.raises(StaleSourceError, match="edited_after_import.py has changed since loss"):
        ys.grad(module.loss, x)
    path.write_text("# a line more\n" + MODULE)     # the text is the same, its lines are not
    with pytest.raises(StaleSourceError):
        ys.grad(module.loss, x)
    path.write_text(MODULE.replace("return x", "return 2 * x"))   # another function changed
    np.testing.assert_array_equal(ys.grad(module.loss, x)[1][0], 2.0)
    path.write_text(MODULE.replace("x * 2.0", "x * 7.0"))
    module = importlib.reload(module)
    np.testing.assert_array_equal(ys.grad(module.loss, x)[1][0], 7.0)


def sines(x):
    return np.sum(np.sin(x))


def test_a_new_rule_invalidates_compiled_code():
    rules = ys.RULES.copy()
    x = np.arange(3.0)
    np.testing.assert_allclose(ys.grad(sines, x, rules=rules)[1][0], np.cos(x))
    rules.nodiff(np.sin)                                # bumps rules.version
    np.testing.assert_array_equal(ys.grad(sines, x, rules=rules)[1][0], 0.0)
    assert misses() == 2


def test_the_cache_is_bounded():
    cache = Cache(maxsize=3)
    for n in range(6):
        key, x = ("iterative", n), np.ones(2)
        cache.call(key, (x, n), lambda n=n: api.compile_grad(iterative, (x, n)))
    assert len(cache) == 3 and cache.stats()["misses"] == 6
    cache.clear()
    assert len(cache) == 0 and cache.stats()["misses"] == 0


def test_clear_cache_empties_it():
    ys.grad(iterative, np.ones(2), 2)
    assert ys.cache_info()["variants"] == 1
    ys.clear_cache()
    assert ys.cache_info() == {"hits": 0, "misses": 0, "guard_failures": 0, "variants": 0}


def test_threads_on_the_same_and_on_different_signatures(rng):
    model = S.MLP([3, 4, 2], rng)
    inputs = [rng.standard_normal((3, n)) for n in (2, 3, 4, 5)]
    expected = [ys.simplegrad(S.mlp_loss, model, X)(model, X) for X in inputs]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(k: int) -> None:
        try:
            start.wait()
            for i in range(40):
                j = (k + i) % len(inputs) if k % 2 else 0       # half share one signature
                val, g = ys.grad(S.mlp_loss, model, inputs[j])
                assert val == expected[j][0]
                for path, dv in expected[j][1].items():
                    np.testing.assert_array_equal(g[0][path], dv)
        except BaseException as e:                               # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    info = ys.cache_info()
    assert info["misses"] == len(inputs) and info["hits"] == 8 * 40 - len(inputs)
