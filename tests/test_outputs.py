"""Auxiliary and structured outputs (issue 34): ``has_aux=True`` on the gradient entry points,
``vjp`` and ``jvp``; results that are tuples, lists, dicts, namedtuples and dataclasses of arrays
through ``compile``, ``vjp``, ``jvp`` and ``jacobian``, returned with the same structure. Values
are checked against numpy and central finite differences in float64."""
import collections
import dataclasses

import numpy as np
import pytest

import yota_s2s as ys

Stats = collections.namedtuple("Stats", "mean spread")


@dataclasses.dataclass
class Report:
    logits: np.ndarray
    accuracy: float
    count: int


def numeric_grad(f, args, k, eps=1e-6):
    """Central differences of the scalar ``f`` in argument ``k``."""
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        for sign in (1, -1):
            moved = x.copy()
            moved.flat[i] += sign * eps
            full = list(args)
            full[k] = moved if np.ndim(args[k]) else float(moved)
            g.flat[i] += sign * f(*full) / (2 * eps)
    return g


def classify(W, b, X, y):
    logits = X @ W + b
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    loss = -np.mean(logp[np.arange(X.shape[0]), y])
    hits = np.argmax(logits, axis=1) == y
    return loss, {"report": Report(logits, np.mean(hits), X.shape[0]),
                  "stats": Stats(np.mean(logits), [np.std(logits), 2.0])}


def classify_loss(W, b, X, y):
    return classify(W, b, X, y)[0]


def problem(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=(5, 4)),
            rng.integers(0, 3, size=5))


def check_aux(aux, W, b, X, y):
    logits = X @ W + b
    assert isinstance(aux, dict) and list(aux) == ["report", "stats"]
    report, stats = aux["report"], aux["stats"]
    assert type(report) is Report and type(stats) is Stats and type(stats.spread) is list
    np.testing.assert_allclose(report.logits, logits, rtol=1e-12)
    assert report.accuracy == np.mean(np.argmax(logits, axis=1) == y) and report.count == 5
    np.testing.assert_allclose(stats.mean, np.mean(logits), rtol=1e-12)
    np.testing.assert_allclose(stats.spread[0], np.std(logits), rtol=1e-12)
    assert stats.spread[1] == 2.0


@pytest.mark.parametrize("buffers", [True, False])
def test_simplegrad_has_aux_returns_aux_unchanged_beside_the_gradients(buffers):
    args = problem()
    df = ys.simplegrad(classify, *args, has_aux=True, buffers=buffers)
    (loss, aux), dW, db, dX, dy = df(*args)
    assert np.isclose(loss, classify_loss(*args), rtol=1e-12) and dy is None
    check_aux(aux, *args)
    for k, g in enumerate((dW, db, dX)):
        np.testing.assert_allclose(g, numeric_grad(classify_loss, args, k), rtol=1e-6,
                                   atol=1e-8)
    # a second call leaves the first call's aux alone (none of it lives in a work array)
    kept = aux["report"].logits.copy()
    other = problem(1)
    (_, aux2), *_ = df(*other)
    check_aux(aux2, *other)
    np.testing.assert_array_equal(aux["report"].logits, kept)


def test_grad_value_and_grad_and_gradient_take_has_aux():
    args = problem()
    expected = [numeric_grad(classify_loss, args, k) for k in range(2)]
    (loss, aux), g = ys.grad(classify, *args, has_aux=True)
    assert np.isclose(loss, classify_loss(*args), rtol=1e-12)
    check_aux(aux, *args)
    np.testing.assert_allclose(g[0], expected[0], rtol=1e-6, atol=1e-8)
    (loss, aux), (dW, db) = ys.value_and_grad(classify, (0, 1), has_aux=True)(*args)
    check_aux(aux, *args)
    np.testing.assert_allclose(db, expected[1], rtol=1e-6, atol=1e-8)
    dW, aux = ys.gradient(classify, has_aux=True)(*args)
    check_aux(aux, *args)
    np.testing.assert_allclose(dW, expected[0], rtol=1e-6, atol=1e-8)
    # the same function without has_aux is a different compile, refused with the fix named
    with pytest.raises(ys.YotaError, match="pass has_aux=True"):
        ys.grad(classify, *args)


def loss_alone(x):
    return np.sum(x ** 2)


def aux_not_scalar(x):
    return np.sin(x), x


def test_has_aux_needs_a_pair_with_a_scalar_loss():
    x = np.ones(3)
    with pytest.raises(ys.YotaError) as info:
        ys.simplegrad(loss_alone, x, has_aux=True)
    line = loss_alone.__code__.co_firstlineno
    assert str(info.value).startswith(
        f"test_outputs.py:{line} in loss_alone: loss_alone returns a float64 scalar; with "
        "has_aux=True the function returns a pair (loss, aux)")
    with pytest.raises(ys.YotaError, match="returns an array of float64.3.; gradients need a "
                                           "scalar float result"):
        ys.grad(aux_not_scalar, x, has_aux=True)


def shapes(x, s):
    return {"sin": np.sin(x) * s, "parts": [x[:2], np.sum(x * x)],
            "stats": Stats(np.mean(x), np.max(x) * s), "n": 3}


def shapes_report(x, s):
    return Report(np.tanh(x) * s, np.sum(x) * s, 7)


@pytest.mark.parametrize("buffers", [True, False])
def test_compile_returns_the_structure_of_the_result(buffers):
    x, s = np.array([0.3, -1.2, 2.0]), 1.5
    out = ys.compile(shapes, x, s, buffers=buffers)(x, s)
    assert list(out) == ["sin", "parts", "stats", "n"] and type(out["parts"]) is list
    assert type(out["stats"]) is Stats and out["n"] == 3
    np.testing.assert_allclose(out["sin"], np.sin(x) * s, rtol=1e-15)
    np.testing.assert_allclose(out["parts"][0], x[:2])
    assert np.isclose(out["parts"][1], np.sum(x * x)) and out["stats"].spread == 2.0 * s
    report = ys.compile(shapes_report, x, s, buffers=buffers)(x, s)
    assert type(report) is Report and report.count == 7
    np.testing.assert_allclose(report.logits, np.tanh(x) * s, rtol=1e-15)
    assert np.isclose(report.accuracy, np.sum(x) * s)


def test_the_module_names_returned_values_from_their_keys():
    x, s = np.array([0.3, -1.2, 2.0]), 1.5
    text = ys.source(ys.compile(shapes, x, s))
    assert "return (sin, (t" in text and "3)" in text


@pytest.mark.parametrize("buffers", [True, False])
def test_jvp_gives_the_tangent_with_the_structure_of_the_result(buffers):
    x, s = np.array([0.3, -1.2, 2.0]), 1.5
    t, ts = np.array([1.0, -0.5, 0.25]), 0.75
    value, tangent = ys.jvp(shapes, (x, s), (t, ts)) if buffers else \
        ys.jvpfunction(shapes, x, s, buffers=False)(x, s, t, ts)
    assert list(tangent) == ["sin", "parts", "stats", "n"] and tangent["n"] is None
    eps = 1e-6
    plus, minus = shapes(x + eps * t, s + eps * ts), shapes(x - eps * t, s - eps * ts)
    np.testing.assert_allclose(tangent["sin"], (plus["sin"] - minus["sin"]) / (2 * eps),
                               rtol=1e-7)
    np.testing.assert_allclose(tangent["parts"][0], t[:2])
    assert np.isclose(tangent["parts"][1], np.sum(2 * x * t))
    assert type(tangent["stats"]) is Stats and np.isclose(tangent["stats"].mean, np.mean(t))
    assert np.isclose(tangent["stats"].spread, (np.max(plus["stats"].spread) -
                                                np.max(minus["stats"].spread)) / (2 * eps))
    np.testing.assert_allclose(value["sin"], np.sin(x) * s)
    report, dreport = ys.jvpfunction(shapes_report, x, s, buffers=buffers)(x, s, t, ts)
    assert type(dreport) is Report and dreport.count is None
    np.testing.assert_allclose(dreport.logits, (1 - np.tanh(x) ** 2) * t * s + np.tanh(x) * ts)


def jvp_with_aux(x):
    y = np.sin(x)
    return y * 2.0, {"y": y, "label": "sine"}


def test_jvp_has_aux_returns_aux_after_the_tangent():
    x, t = np.array([0.1, 0.7]), np.array([1.0, 2.0])
    out, tangent, aux = ys.jvp(jvp_with_aux, (x,), (t,), has_aux=True)
    np.testing.assert_allclose(out, 2 * np.sin(x))
    np.testing.assert_allclose(tangent, 2 * np.cos(x) * t)
    assert aux["label"] == "sine"
    np.testing.assert_allclose(aux["y"], np.sin(x))


@pytest.mark.parametrize("buffers", [True, False])
def test_vjp_takes_a_cotangent_of_the_result_structure(buffers):
    x, s = np.array([0.3, -1.2, 2.0]), 1.5
    rng = np.random.default_rng(1)
    cot = {"sin": rng.normal(size=3), "parts": [rng.normal(size=2), 0.5],
           "stats": Stats(-0.25, 2.0), "n": None}

    def inner(x, s):                        # <f(x, s), cot> over the float leaves
        out = shapes(x, s)
        return (np.sum(out["sin"] * cot["sin"]) + np.sum(out["parts"][0] * cot["parts"][0])
                + out["parts"][1] * 0.5 + out["stats"].mean * -0.25 + out["stats"].spread * 2)
    with pytest.raises(ys.YotaError, match=r"shapes\(...\)\['n'\] is int"):
        ys.vjp(shapes, x, s)

    def floats(x, s):
        out = shapes(x, s)
        return {"sin": out["sin"], "parts": out["parts"], "stats": out["stats"]}
    del cot["n"]
    vf = ys.vjp(floats, x, s, buffers=buffers)
    value, dx, ds = vf(x, s, cot)
    assert list(value) == ["sin", "parts", "stats"] and type(value["stats"]) is Stats
    np.testing.assert_allclose(value["sin"], np.sin(x) * s, rtol=1e-15)
    np.testing.assert_allclose(dx, numeric_grad(inner, (x, s), 0), rtol=1e-6, atol=1e-8)
    assert np.isclose(ds, numeric_grad(inner, (x, s), 1), rtol=1e-6)
    with pytest.raises(ys.UsageError, match=r"the cotangent\['parts'\] must be a list of 2"):
        vf(x, s, {"sin": cot["sin"], "parts": [1.0], "stats": cot["stats"]})


def vjp_with_aux(W, x):
    h = np.tanh(W @ x)
    return (h, W.T @ h), {"h": h, "norm": np.linalg.norm(h)}


def test_vjp_has_aux_returns_the_value_and_aux():
    rng = np.random.default_rng(2)
    W, x = rng.normal(size=(3, 2)), rng.normal(size=2)
    c = (rng.normal(size=3), rng.normal(size=2))
    (value, aux), dW, dx = ys.vjp(vjp_with_aux, W, x, has_aux=True)(W, x, c)
    h = np.tanh(W @ x)
    np.testing.assert_allclose(value[0], h)
    np.testing.assert_allclose(aux["norm"], np.linalg.norm(h))

    def inner(W, x):
        a, b = vjp_with_aux(W, x)[0]
        return np.sum(a * c[0]) + np.sum(b * c[1])
    np.testing.assert_allclose(dW, numeric_grad(inner, (W, x), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, numeric_grad(inner, (W, x), 1), rtol=1e-6, atol=1e-8)


def pair(x):
    return {"a": np.sin(x), "b": np.sum(x ** 3)}


@pytest.mark.parametrize("buffers", [True, False])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_jacobian_of_a_structured_result_is_that_structure_of_jacobians(mode, buffers):
    x = np.array([0.2, -0.4, 1.1])
    J = ys.jacobian(pair, x, mode=mode, buffers=buffers)
    assert list(J) == ["a", "b"] and J["a"].shape == (3, 3) and J["b"].shape == (3,)
    np.testing.assert_allclose(J["a"], np.diag(np.cos(x)), atol=1e-15)
    np.testing.assert_allclose(J["b"], 3 * x ** 2)


class Plain:
    def __init__(self, x):
        self.x = x


def returns_plain_object(x):
    return Plain(np.sin(x))


def test_a_result_that_is_not_a_dataclass_is_refused():
    with pytest.raises(ys.YotaError, match="returns a Plain, which is not a dataclass"):
        ys.compile(returns_plain_object, np.ones(2))


# -- linearize ---------------------------------------------------------------------------

def mlp(W1, b1, W2, x):
    h = np.tanh(x @ W1 + b1)
    return np.tanh(h @ W2)


def rnn(Wx, Wh, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
    return h


def central(f, args, tangents, eps=1e-6):
    plus = f(*[a + eps * t for a, t in zip(args, tangents)])
    minus = f(*[a - eps * t for a, t in zip(args, tangents)])
    return (plus - minus) / (2 * eps)


@pytest.mark.parametrize("buffers", [True, False])
@pytest.mark.parametrize("f, shapes", [
    (mlp, [(4, 6), (6,), (6, 3), (5, 4)]),
    (rnn, [(3, 4), (4, 4), (6, 2, 3), (2, 4)]),
], ids=["mlp", "rnn"])
def test_linearize_tangents_match_finite_differences(f, shapes, buffers):
    rng = np.random.default_rng(3)
    args = [rng.normal(size=s) * 0.5 for s in shapes]
    value, f_jvp = ys.linearize(f, *args, buffers=buffers)
    np.testing.assert_allclose(value, f(*args), rtol=1e-14)
    for _ in range(2):          # the saved forward values serve every call
        tangents = [rng.normal(size=s) for s in shapes]
        np.testing.assert_allclose(f_jvp(*tangents), central(f, args, tangents), rtol=1e-6,
                                   atol=1e-9)
    # the tangent map computes no forward: the tanh are in the linearization, not in it
    text = ys.source(f_jvp)
    assert f"def {f.__name__}_tangent(" in text and "xp.tanh" not in text


def test_linearize_reads_the_values_of_its_own_point():
    rng = np.random.default_rng(4)
    shapes = [(4, 6), (6,), (6, 3), (5, 4)]
    first = [rng.normal(size=s) for s in shapes]
    second = [rng.normal(size=s) for s in shapes]
    _, jvp_first = ys.linearize(mlp, *first)
    _, jvp_second = ys.linearize(mlp, *second)         # the same modules, other residuals
    tangents = [rng.normal(size=s) for s in shapes]
    np.testing.assert_allclose(jvp_first(*tangents), ys.jvp(mlp, first, tangents)[1],
                               rtol=1e-12)
    np.testing.assert_allclose(jvp_second(*tangents), ys.jvp(mlp, second, tangents)[1],
                               rtol=1e-12)
    with pytest.raises(ys.UsageError, match="4 primals but 1 tangents"):
        jvp_first(tangents[0])


def scaled_with_aux(x, n):
    y = np.sin(x) * n
    return {"y": y, "total": np.sum(y)}, {"n": n, "peak": np.max(y)}


def test_linearize_structured_result_with_aux_and_an_int_argument():
    x, t = np.array([0.2, 0.9, -0.4]), np.array([1.0, -2.0, 0.5])
    out, f_jvp, aux = ys.linearize(scaled_with_aux, x, 3, has_aux=True)
    assert aux == {"n": 3, "peak": np.max(np.sin(x) * 3)}
    np.testing.assert_allclose(out["y"], np.sin(x) * 3)
    tangent = f_jvp(t, None)
    np.testing.assert_allclose(tangent["y"], 3 * np.cos(x) * t)
    assert np.isclose(tangent["total"], np.sum(3 * np.cos(x) * t))


def test_docs_outputs_python_blocks_run_in_order(monkeypatch):
    """docs/outputs.md's examples run one after the other, as a reader would paste them."""
    import linecache
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "docs" / "outputs.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 4
    monkeypatch.setattr("builtins.print", lambda *args, **kwargs: None)
    scope: dict = {"__name__": "docs_outputs"}     # (its classes are the user's, not builtins)
    for i, block in enumerate(blocks):
        name = f"<docs/outputs.md block {i + 1}>"       # its lines are the source of its code
        linecache.cache[name] = (len(block), None, block.splitlines(True), name)
        exec(compile(block, name, "exec"), scope)
    x = scope["x"]
    np.testing.assert_allclose(scope["dx"], np.ones_like(x) / 5)      # d mean / dx
    np.testing.assert_allclose(scope["J"]["moments"].mean, np.kron(np.ones((1, 5)), np.eye(2))
                               .reshape(2, 5, 2) / 5)


def _alike_then_branch(w, a, b, c):
    v = w * 1.5
    s = np.mean(np.sin(v) * a) + np.mean(np.sin(v) * b) + np.mean(np.sin(v) * c)
    if np.sum(v * v) > 3.0:
        u = np.sin(v) - 0.2
    else:
        u = np.tanh(v) * 0.9
    return s + np.sum(u)


def test_three_equal_gradients_stay_three_arrays_after_a_later_round_of_cse():
    """a, b and c get one gradient value; fresh_outputs copies it for b and c (``db =
    np.copy(da)``, ``dc = np.copy(da)``), and a round of the passes after it (the branch's
    arms shed a statement) merged the two copies: db and dc were one array (fuzz --branches
    seed 230206)."""
    from yota_s2s.compiler import compile_grad
    args = tuple(np.random.default_rng(i).normal(size=7) for i in range(4))
    for buffers in (True, False):
        compiled = compile_grad(_alike_then_branch, args, buffers=buffers)
        value, *grads = compiled.fn(*args)
        assert not any(np.shares_memory(grads[i], grads[j])
                       for i in range(4) for j in range(i + 1, 4))
        np.testing.assert_array_equal(grads[2], grads[1])
        np.testing.assert_array_equal(grads[3], grads[1])
