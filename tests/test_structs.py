"""Structured arguments: field paths for every container kind, methods, construction inside
the traced code, and gradients checked against central finite differences per field."""
from __future__ import annotations

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.errors import UnsupportedSyntax
from yota_s2s.gradcheck import numerical_grad

from .programs import structs as S


def leaf(obj, path):
    for key in path:
        obj = obj[key] if isinstance(obj, dict) or not isinstance(key, str) else getattr(obj, key)
    return obj


def check_fields(f, args, argnum, grads, tol=1e-6):
    """Every field gradient against finite differences, perturbing a copy of that field only."""
    for path, g in grads.items():
        def at(value, path=path):
            new = ys.update(args[argnum], {path: 0.0}, lambda x, _: value, inplace=False)
            return f(*args[:argnum], new, *args[argnum + 1:])
        expected = numerical_grad(at, [leaf(args[argnum], path)], 0)
        np.testing.assert_allclose(g, expected, rtol=tol, atol=tol, err_msg=str(path))


@pytest.fixture(autouse=True)
def _fresh_cache():
    ys.clear_cache()


def test_field_paths_of_every_container_kind(rng):
    args = (S.Params(rng.standard_normal((2, 2)), rng.standard_normal(3)),
            S.Scaled(rng.standard_normal((2, 2)), 3.0),
            [rng.standard_normal(2), (rng.standard_normal(2), 7)],
            {"a": {"b": rng.standard_normal(2)}})
    val, g = ys.grad(S.mixed, *args)
    assert val == pytest.approx(S.mixed(*args))
    assert list(g[0]) == [("W",), ("b",)]                       # namedtuple: field names
    assert list(g[1]) == [("W",), ("scale",)]                   # frozen dataclass
    assert list(g[2]) == [(0,), (1, 0)]                         # list, nested tuple
    assert list(g[3]) == [("a", "b")]                           # nested dicts
    assert isinstance(g[1][("scale",)], float)
    for i in range(4):
        check_fields(S.mixed, args, i, g[i])


def test_class_with_a_list_of_layers(rng):
    model, X = S.MLP([4, 5, 3], rng), rng.standard_normal((4, 6))
    val, g = ys.grad(S.mlp_loss, model, X)
    assert val == pytest.approx(model.loss(X))
    assert sorted(g[0]) == [("layers", i, f) for i in (0, 1) for f in ("W", "b")]
    check_fields(S.mlp_loss, (model, X), 0, g[0])
    np.testing.assert_allclose(g[1], numerical_grad(S.mlp_loss, [model, X], 1), atol=1e-6)


def test_generated_code_reads_leaves_by_path(rng):
    model, X = S.MLP([4, 5, 3], rng), rng.standard_normal((4, 6))
    text = ys.grad(S.mlp_loss, model, X)[1].source
    assert "    layers_0_W = model.layers[0].W\n" in text
    assert "if len(model.layers) != 2:" in text
    assert "if getattr(model.act, '__name__', None) != 'tanh':" in text
    assert "dmodel = {\n        ('layers', 0, 'W'): dlayers_0_W," in text
    assert "steps" not in text                       # a field the code never reads
    assert "yota_s2s" not in text.split('"""')[2]    # runs without the compiler


def test_generated_code_checks_struct_leaves(rng):
    model, X = S.MLP([4, 5, 3], rng), rng.standard_normal((4, 6))
    df = ys.simplegrad(S.mlp_loss, model, X)
    model.layers.append(model.layers[-1])
    with pytest.raises(TypeError, match=r"len\(model.layers\) must be 2, got 3"):
        df(model, X)
    model.layers.pop()
    model.layers[0].W = model.layers[0].W.astype(np.float32)
    with pytest.raises(TypeError, match=r"model.layers\[0\].W must be float64\[5, 4\]"):
        df(model, X)


def test_methods_properties_slots_and_dunders(rng):
    seq, x = S.Seq([rng.standard_normal(2), rng.standard_normal(2)], 1.5), rng.standard_normal(2)
    val, g = ys.grad(S.seq_loss, seq, x)
    assert val == pytest.approx(S.seq_loss(seq, x))
    assert list(g[0]) == [("items", 0), ("items", 1), ("scale",)]
    check_fields(S.seq_loss, (seq, x), 0, g[0])


def test_bound_method_and_callable_object(rng):
    model, X = S.MLP([3, 4, 2], rng), rng.standard_normal((3, 5))
    val, g = ys.grad(model.loss, X)
    assert val == pytest.approx(model.loss(X)) and len(g) == 1
    assert sorted(g.self) == [("layers", i, f) for i in (0, 1) for f in ("W", "b")]
    q = S.Quadratic(rng.standard_normal((2, 3)))
    _, gq = ys.grad(q, X)
    assert list(gq.self) == [("A",)] and gq[0].shape == X.shape
    np.testing.assert_allclose(gq.self[("A",)], 2 * (q.A @ X) @ X.T)
    df = ys.simplegrad(model.loss, X)                  # bound, like the method
    val2, dself, dX = df(X)
    np.testing.assert_allclose(dX, g[0])
    np.testing.assert_allclose(dself[("layers", 0, "W")], g.self[("layers", 0, "W")])


def test_objects_built_inside_the_traced_code(rng):
    W, X = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    val, g = ys.grad(S.built_inside, W, X)
    assert val == pytest.approx(S.built_inside(W, X))
    np.testing.assert_allclose(g[0], numerical_grad(S.built_inside, [W, X], 0), atol=1e-6)
    np.testing.assert_allclose(g[1], numerical_grad(S.built_inside, [W, X], 1), atol=1e-6)


def test_an_object_built_from_static_values_takes_assigned_fields(rng):
    """``layer = Dense(3, (2,)); layer.W = W``: an object the traced code builds from static
    values is its own (as one built from traced values is), so the code may assign its fields;
    its other fields are the constructor's (issue 35, ML-From-Scratch)."""
    W, w0, X = rng.standard_normal((2, 3)), rng.standard_normal((1, 3)), rng.standard_normal((4, 2))
    args = [W, w0, X]
    for buffers in (True, False):
        value, *grads = ys.simplegrad(S.dense_built_inside, *args, buffers=buffers)(*args)
        assert value == pytest.approx(S.dense_built_inside(*args), rel=1e-13)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(g, numerical_grad(S.dense_built_inside, args, i),
                                       rtol=1e-6, atol=1e-8)


def test_a_field_assigned_on_an_argument_is_stored_when_the_code_runs(rng):
    """``self.layer_input = X`` in a layer's forward, the layer an argument (ML-From-Scratch):
    the generated code stores each assigned field into the caller's object at the end of its
    forward, its last value (a copy of an array made inside, an argument array itself), as
    calling the function does; the gradient is the function's (issue 35)."""
    W, w0 = rng.standard_normal((3, 3)), rng.standard_normal((1, 3))
    X = rng.standard_normal((4, 3))

    def layer():
        d = S.Dense(3, (3,))
        d.W, d.w0 = W.copy(), w0.copy()
        return d
    expected = layer()
    value = S.dense_loss(expected, X)
    for buffers in (True, False):
        df = ys.simplegrad(S.dense_loss, layer(), X, buffers=buffers)
        given = layer()
        for _ in range(2):
            got, dlayer, dX = df(given, X)
            assert got == pytest.approx(value, rel=1e-13)
            np.testing.assert_allclose(given.layer_input, expected.layer_input, rtol=1e-13)
            np.testing.assert_allclose(given.output, expected.output, rtol=1e-13)
            assert given.output is not expected.output
        assert "layer.layer_input = " in ys.source(df)
        np.testing.assert_allclose(dX, numerical_grad(lambda x: S.dense_loss(layer(), x), [X], 0),
                                   rtol=1e-6, atol=1e-8)
        dW = numerical_grad(lambda w: S.dense_loss(_with(layer(), W=w), X), [W], 0)
        np.testing.assert_allclose(dlayer[("W",)], dW, rtol=1e-6, atol=1e-8)


def test_items_appended_to_an_argument_list_or_set_in_its_dict_reach_the_caller(rng):
    """``cache.append(h)`` and ``state["h"] = h`` on an argument's list and dict: done to the
    caller's by the generated code, as calling the function does (before, the trace changed
    a copy and the caller's list stayed empty); a list changed otherwise is refused."""
    def f(x, cache, state):
        h = np.tanh(x)
        cache.append(h)
        state["h"] = h * state["scale"]
        return np.sum(h ** 2) * state["scale"]
    x = rng.standard_normal(3)
    for buffers in (True, False):
        cache, state = [], {"scale": 1.5}
        df = ys.simplegrad(f, x, [], {"scale": 1.5}, buffers=buffers)
        value, dx, _, dstate = df(x, cache, state)
        assert value == pytest.approx(f(x, [], {"scale": 1.5}), rel=1e-13)
        assert len(cache) == 1 and sorted(state) == ["h", "scale"]
        np.testing.assert_allclose(cache[0], np.tanh(x), rtol=1e-15)
        np.testing.assert_allclose(state["h"], 1.5 * np.tanh(x), rtol=1e-15)
        np.testing.assert_allclose(dx, numerical_grad(lambda a: f(a, [], {"scale": 1.5}), [x], 0),
                                   rtol=1e-6, atol=1e-8)
        assert dstate[("scale",)] == pytest.approx(np.sum(np.tanh(x) ** 2), rel=1e-12)

    def popped(x, xs):
        return np.sum(x * xs.pop())
    with pytest.raises(UnsupportedSyntax, match="changes the argument list xs other than by "
                                                "appending"):
        ys.simplegrad(popped, x, [np.ones(3)])


def test_numpy_ints_and_shapes_appended_to_an_argument_list_reach_the_caller(rng):
    """numpy-ml's pooling layer appends ``out_rows`` (an ``np.int64``) and its flatten layer
    ``X.shape`` (a tuple) to the lists it keeps for its backward pass: stored as they are (were
    refused as not arrays, numbers, strings or None)."""
    def f(x, kept):
        rows = np.floor(1 + (x.shape[0] - 2) / 2).astype(int)
        kept["rows"].append(rows)
        kept["dims"].append(x.shape)
        return np.sum(np.tanh(x) ** 2)
    x = rng.standard_normal((4, 3))
    for buffers in (True, False):
        kept = {"rows": [], "dims": []}
        df = ys.simplegrad(f, x, {"rows": [], "dims": []}, buffers=buffers)
        value, dx, _ = df(x, kept)
        assert kept == {"rows": [2], "dims": [(4, 3)]} and type(kept["rows"][0]) is np.int64
        assert value == pytest.approx(f(x, {"rows": [], "dims": []}), rel=1e-13)
        np.testing.assert_allclose(dx, numerical_grad(lambda a: f(a, {"rows": [], "dims": []}),
                                                      [x], 0), rtol=1e-6, atol=1e-8)


def _with(obj, **fields):
    for name, value in fields.items():
        setattr(obj, name, value)
    return obj


def test_tied_weights_get_one_gradient(rng):
    W, X = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    model = S.Tied(W)
    _, g = ys.grad(model.loss, X)
    assert ("dec_W",) not in g.self                 # one array, reported at its first path
    expected = numerical_grad(lambda w: S.Tied(w).loss(X), [W], 0)
    np.testing.assert_allclose(g.self[("enc", "W")], expected, atol=1e-6)
    model.dec_W = W.copy()                            # untied: the same layout, new variant
    _, g2 = ys.grad(model.loss, X)
    assert ("dec_W",) in g2.self


def test_assigning_an_argument_field_changes_the_callers_object(rng):
    """``m.W = m.W * 2`` (once refused): the generated code assigns it too, and reads the new
    value after the assignment, as the function does; a global's field is still refused."""
    def bump(m):
        m.W = m.W * 2
        return np.sum(m.W)
    W = rng.standard_normal((2, 2))
    m = S.Linear(W.copy(), np.zeros(2))
    value, g = ys.grad(bump, m)
    assert value == pytest.approx(2 * np.sum(W)) and np.array_equal(m.W, 2 * W)
    np.testing.assert_allclose(g[0][("W",)], np.full((2, 2), 2.0))

    def bump_global(x):
        GLOBAL_LINEAR.W = x
        return np.sum(x)
    with pytest.raises(UnsupportedSyntax, match="an object from outside the function"):
        ys.grad(bump_global, W)


GLOBAL_LINEAR = S.Linear(np.eye(2), np.zeros(2))


def test_dict_keys_must_be_spellable():
    with pytest.raises(UnsupportedSyntax, match="key"):
        ys.grad(lambda d: np.sum(d[1.5]), {1.5: np.ones(2)})


def test_wrt_limits_the_gradients_computed(rng):
    model, X = S.MLP([3, 4, 2], rng), rng.standard_normal((3, 5))
    _, g = ys.grad(S.mlp_loss, model, X, wrt=1)
    assert g[0] is None and g[1].shape == X.shape
    assert "dlayers" not in g.source
    _, g = ys.grad(S.mlp_loss, model, X, wrt="model")
    assert g[1] is None and len(g[0]) == 4
    with pytest.raises(ys.YotaError, match="wrt=5: mlp_loss is called with 2 arguments, so position 5 is none"):
        ys.grad(S.mlp_loss, model, X, wrt=5)


def test_grad_result_reads_well(rng):
    m = S.Linear(rng.standard_normal((3, 4)), rng.standard_normal(3))
    _, g = ys.grad(lambda m, X: np.sum(m(X)), m, rng.standard_normal((4, 5)))
    assert repr(g) == ("<GradResult of <lambda>\n  m: {('W',): float64[3, 4], ('b',): float64[3]}\n"
                       "  X: float64[4, 5]>")
    assert [type(x) for x in g] == [ys.results.Gradients, np.ndarray]     # a dict, keyed by path
    assert "def lambda_grad(m, X" in g.source and "tape <lambda>" in str(g.tape)
    with pytest.raises(AttributeError, match="bound methods"):
        g.self
