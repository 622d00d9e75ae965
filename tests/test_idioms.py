"""Code written as autograd users write it (issue 11, items 4-8): vector-Jacobian products and
the gradient factories, plain Python (partial, map, generators, sorted, functions whose outputs
carry no gradient), calls inside rules, call options a rule does not read, and ties."""
import functools
import math

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.gradcheck import numerical_grad

from .programs import idioms

BOTH = pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])


def grads(f, *args, buffers=True, **kw):
    return ys.simplegrad(f, *args, buffers=buffers, **kw)(*args)


# -- 4. non-scalar outputs -----------------------------------------------------------------

def layer(x, W):
    return np.tanh(W @ x)


@pytest.fixture
def xW(rng):
    return rng.standard_normal(3), rng.standard_normal((2, 3))


@BOTH
def test_vjp_against_finite_differences(xW, rng, buffers):
    x, W = xW
    ct = rng.standard_normal(2)
    vf = ys.vjp(layer, x, W, buffers=buffers)
    y, dx, dW = vf(x, W, ct)
    np.testing.assert_allclose(y, layer(x, W), rtol=1e-15)

    def projected(x, W):
        return np.sum(layer(x, W) * ct)
    np.testing.assert_allclose(dx, numerical_grad(projected, [x, W], 0), atol=1e-8)
    np.testing.assert_allclose(dW, numerical_grad(projected, [x, W], 1), atol=1e-8)
    # another cotangent, same compiled code
    y2, dx2, _ = vf(x, W, 2 * ct)
    np.testing.assert_allclose(dx2, 2 * dx, rtol=1e-14)


def test_vjp_is_one_generated_module_whose_value_is_fs(xW):
    x, W = xW
    text = ys.source(ys.vjp(layer, x, W))
    assert "def layer_vjp_grad(x, W, cotangent" in text       # f's parameters, and the cotangent
    assert text.count("xp.tanh(") == 1          # f's value is computed once and returned
    assert "return layer_vjp, dx, dW, value" in text


def test_vjp_refuses_a_result_that_is_not_a_float_array(xW):
    with pytest.raises(ys.YotaError, match="real float array"):
        ys.vjp(lambda x: np.argmax(x), xW[0])


@BOTH
def test_jacobian_against_finite_differences(xW, buffers):
    x, W = xW
    J = ys.jacobian(layer, x, W, buffers=buffers)
    assert J.shape == (2, 3)
    expected = np.array([numerical_grad(lambda x, W: layer(x, W)[i], [x, W], 0) for i in range(2)])
    np.testing.assert_allclose(J, expected, atol=1e-8)
    JW = ys.jacobian(layer, x, W, argnum=1)
    assert JW.shape == (2, 2, 3)
    np.testing.assert_allclose(JW[1], numerical_grad(lambda x, W: layer(x, W)[1], [x, W], 1),
                               atol=1e-8)


def test_elementwise_grad_is_the_derivative_of_each_element():
    x = np.linspace(-2, 2, 7)
    ys.clear_cache()
    d = ys.elementwise_grad(np.tanh)
    np.testing.assert_allclose(d(x), 1 - np.tanh(x) ** 2, rtol=1e-14)
    np.testing.assert_allclose(d(x), 1 - np.tanh(x) ** 2, rtol=1e-14)
    assert ys.cache_info()["hits"] == 1


@BOTH
@pytest.mark.parametrize("f", [lambda x: np.sum(x * x, keepdims=True),
                               lambda x: x[None] @ np.sin(x)[:, None],
                               lambda x: np.reshape(np.sum(np.exp(x)), (1, 1, 1))],
                         ids=["(1,)", "(1,1)", "(1,1,1)"])
def test_a_result_of_one_element_is_a_scalar(f, buffers):
    x = np.linspace(-1, 1, 4)
    value, dx = grads(f, x, buffers=buffers)
    assert np.shape(value) == np.shape(f(x))
    np.testing.assert_allclose(value, f(x), rtol=1e-15)
    np.testing.assert_allclose(dx, numerical_grad(f, [x], 0), atol=1e-8)
    np.testing.assert_allclose(ys.grad(f, x)[1][0], dx, rtol=1e-15)
    assert max(ys.gradcheck(f, x).values()) < 1e-6


def test_a_result_of_several_elements_is_still_refused():
    with pytest.raises(ys.YotaError, match="scalar float result"):
        ys.simplegrad(lambda x: x * 2, np.ones(2))


def loss(W, b, x):
    return np.sum(np.tanh(W @ x + b) ** 2)


def test_gradient_factory_is_autograds_grad(rng):
    W, b, x = rng.standard_normal((2, 3)), rng.standard_normal(2), rng.standard_normal(3)
    ys.clear_cache()
    dW = ys.gradient(loss)
    assert dW.__name__ == "grad_loss"
    np.testing.assert_allclose(dW(W, b, x), numerical_grad(loss, [W, b, x], 0), atol=1e-8)
    np.testing.assert_allclose(dW(W, b, x), ys.grad(loss, W, b, x)[1][0], rtol=1e-15)
    assert ys.cache_info()["misses"] == 2 and ys.cache_info()["hits"] == 1   # wrt=0, then all
    dW(W, b, x)
    assert ys.cache_info()["hits"] == 2
    db = ys.gradient(loss, "b")(W, b, x)
    np.testing.assert_allclose(db, numerical_grad(loss, [W, b, x], 1), atol=1e-8)
    both = ys.gradient(loss, (0, 2))(W, b, x)
    np.testing.assert_allclose(both[1], numerical_grad(loss, [W, b, x], 2), atol=1e-8)
    value, gb = ys.value_and_grad(loss, 1)(W, b, x)
    assert value == pytest.approx(loss(W, b, x), rel=1e-15)
    np.testing.assert_allclose(gb, db, rtol=1e-15)


def test_gradient_factory_names_a_bad_argnum():
    with pytest.raises(ys.YotaError, match="wrt=5: loss is called with 3 arguments, so position 5 is none"):
        ys.gradient(loss, 5)(np.ones((2, 3)), np.ones(2), np.ones(3))


# -- 5. plain Python -----------------------------------------------------------------------

def uses_partial(x):
    f = functools.partial(idioms.scaled_sum, scale=2.0)
    total = functools.partial(np.sum, axis=0)(x[None] * 3.0)        # a numpy function
    g = functools.partial(idioms.scaled_sum, x)                    # holding a traced value
    h = functools.partial(lambda a, b: np.sum(a * b), b=x)         # of a lambda
    return f(x) + np.sum(total) + g(np.sin(x)) + h(np.cos(x))


def uses_map(x):
    total = sum(map(lambda v: np.sum(v * v), [x, 2 * x]))
    for v in map(np.sin, [x, x[::-1]]):
        total = total + np.sum(v)
    return total + np.sum(np.stack(list(map(np.cos, x))))


def uses_generator(x):
    total = sum(np.sum(v) for v in list(idioms.halves(x)))
    for v in idioms.halves(x * x):
        total = total + np.sum(v)
    return total


def uses_sorted(x):
    d = {"b": 2.0, "a": 1.0, "c": -1.0}
    total, weight = 0.0, 1.0
    for k in sorted(d):
        weight = weight * 2
        total = total + weight * d[k] * np.sum(x)      # a=1 * 2, b=2 * 4, c=-1 * 8
    for k, v in sorted(d.items()):
        total = total + v * np.sum(np.sin(x))
    return total


def uses_no_gradient_functions(x):
    X, Y = np.meshgrid(np.arange(x.shape[0]), np.arange(3))
    rows, cols = np.indices((3, x.shape[0]))
    counts = np.bincount((x > 0).astype(int), minlength=2)     # traced integers: no gradient
    bins = np.digitize(x, np.array([-0.5, 0.5]))               # integer results: no gradient
    near = np.isclose(x, 0.3)
    return (np.sum(x * X) + np.sum(x * rows * cols) + np.sum(x ** 2) * counts[1] + np.sum(Y)
            + np.sum(x * bins) + np.sum(np.where(near, 2 * x, x)))


def uses_astype_int(x):
    steps = (x * 3).astype(int)
    return np.sum(x * steps) + np.sum(np.tanh(x.astype(int) + x))


@BOTH
@pytest.mark.parametrize("f", [uses_partial, uses_map, uses_generator, uses_sorted,
                               uses_no_gradient_functions, uses_astype_int])
def test_plain_python_against_finite_differences(f, buffers):
    x = np.array([-0.7, 0.3, 0.45, 1.2])
    value, dx = grads(f, x, buffers=buffers)
    assert value == pytest.approx(f(x), rel=1e-14)
    np.testing.assert_allclose(dx, numerical_grad(f, [x], 0), atol=1e-7)


def test_functions_without_gradient_are_plain_calls_in_the_generated_code():
    x = np.array([-0.7, 0.3, 0.45, 1.2])
    text = ys.source(ys.simplegrad(uses_no_gradient_functions, x))
    assert "xp.meshgrid(" in text and "xp.bincount(" in text and "xp.digitize(" in text


def test_a_function_without_rule_on_a_float_is_still_refused():
    def f(x):
        return np.trapezoid(x)
    with pytest.raises(ys.NoRuleError) as e:
        ys.simplegrad(f, np.ones(4))
    text = str(e.value)
    assert "np.trapezoid has no derivative rule" in text
    assert "test_idioms.py:" in text and 'ys.diffrule(np.trapezoid, "y"' in text


# -- 6. calls inside rules -----------------------------------------------------------------

def stepped(x):
    return np.sum(np.sin(idioms.steps(x) * x[1:]) ** 2)


@BOTH
def test_a_rule_may_call_a_function_without_rule(buffers):
    x = np.linspace(0, 1, 6)
    value, dx = grads(stepped, x, buffers=buffers, rules=idioms.STEP_RULES)
    assert value == pytest.approx(stepped(x), rel=1e-14)
    np.testing.assert_allclose(dx, numerical_grad(stepped, [x], 0), atol=1e-8)


def test_a_second_differentiation_names_the_rules_call(tmp_path, monkeypatch):
    import importlib
    monkeypatch.syspath_prepend(str(tmp_path))
    x = np.linspace(0, 1, 6)
    ys.simplegrad(stepped, x, buffers=False, rules=idioms.STEP_RULES, out_dir=tmp_path,
                  module_name="first_stepped")
    first = importlib.import_module("first_stepped").stepped_grad

    def directional(x):
        return np.sum(first(x)[1])
    with pytest.raises(ys.NoRuleError) as e:
        ys.simplegrad(directional, x, rules=idioms.STEP_RULES)
    text = str(e.value)
    assert "first_stepped.py:" in text
    assert "np.ediff1d has no derivative rule; it is called by a derivative rule" in text
    assert 'ys.diffrule(np.ediff1d, "<operand>"' in text and "ys.nodiff(np.ediff1d)" in text


# -- 7. call options a rule does not read --------------------------------------------------

RULE_LINE = idioms.lse_grad.__code__.co_firstlineno      # its decorator line


@pytest.mark.parametrize("rules, rule", [(idioms.LSE_RULES, "lse_grad(a, y, dy, axis, keepdims)"),
                                         (idioms.LSE_EXPR_RULES, "dy * np.exp(a - y)")],
                         ids=["function", "expression"])
def test_an_option_the_rule_does_not_read_is_refused(rules, rule):
    x = np.linspace(0, 1, 4)

    def f(x):
        return idioms.lse(x, b=2.5)
    with pytest.raises(ys.RuleError) as e:
        ys.simplegrad(f, x, rules=rules)
    text = str(e.value)
    assert "is called with b=2.5 at test_idioms.py:" in text
    assert f"its rule for 'a' ({rule}) does not take 'b'" in text
    assert text.startswith("idioms.py:")
    assert 'ignores=("b",)' in text and "**kw" in text
    if rules is idioms.LSE_RULES:
        assert text.startswith(f"idioms.py:{RULE_LINE} ")


def test_options_the_rule_reads_or_ignores_on_purpose_compile():
    x = np.linspace(0, 1, 4)

    def plain(x):
        return idioms.lse(x, axis=0)

    def weighted(x):
        return idioms.lse(x, b=2.5)
    np.testing.assert_allclose(grads(plain, x, rules=idioms.LSE_RULES)[1],
                               numerical_grad(plain, [x], 0), atol=1e-8)
    np.testing.assert_allclose(grads(weighted, x, rules=idioms.LSE_B_RULES)[1],
                               numerical_grad(weighted, [x], 0), atol=1e-8)
    ys.simplegrad(weighted, x, rules=idioms.LSE_IGNORING_RULES)      # the user said so


def test_ignores_names_an_option():
    rules = ys.RULES.copy()
    with pytest.raises(ys.RuleError, match="ignores='c': .*lse has no such option") as e:
        rules.diffrule(idioms.lse, "a", "dy", ignores=("c",))
    assert "test_idioms.py:" in str(e.value) and "axis, b, keepdims" in str(e.value)


def test_built_in_rules_read_or_ignore_every_option():
    from yota_s2s.rules.template import unread_options
    missing = [(str(r), unread_options(r, dict(prim.options)))
               for (prim, _), r in ys.RULES.rules.items() if unread_options(r, dict(prim.options))]
    refused = [m for m in missing if m[0].startswith("scipy.special.logsumexp b:")]
    assert [m for m in missing if m not in refused] == []
    # logsumexp(..., return_sign=True) has no gradient: a call with it is refused
    assert [options for _, options in refused] in ([], [["return_sign"]])


# -- 8. ties -------------------------------------------------------------------------------

X = np.array([-1.0, 0.0, 2.0])
TIES = [
    (lambda x: np.sum(np.maximum(0, x)), [0.0, 0.5, 1.0]),
    (lambda x: np.sum(np.maximum(x, 0)), [0.0, 0.5, 1.0]),
    (lambda x: np.sum(np.minimum(0.0, x)), [1.0, 0.5, 0.0]),
    (lambda x: np.sum(np.minimum(x, 0.0)), [1.0, 0.5, 0.0]),
    (lambda x: np.sum(np.fmax(x, 0.0)), [0.0, 0.5, 1.0]),
    (lambda x: np.sum(np.fmin(0.0, x)), [1.0, 0.5, 0.0]),
    (lambda x: np.sum(np.fmax(x, np.array([np.nan, 1.0, 3.0]))), [1.0, 0.0, 0.0]),
    (lambda x: np.sum(np.clip(x, 0.0, 2.0)), [0.0, 0.5, 0.5]),
    (lambda x: np.sum(np.clip(x, -1.0, None)), [0.5, 1.0, 1.0]),
    (lambda x: np.sum(np.clip(x, None, 0.0)), [1.0, 0.5, 0.0]),
    (lambda x: np.sum(np.abs(x)), [-1.0, 0.0, 1.0]),
    (lambda x: np.sum(np.fabs(x)), [-1.0, 0.0, 1.0]),
    (lambda x: math.fabs(float(x[1])) + abs(float(x[1])), [0.0, 0.0, 0.0]),
    (lambda x: max(float(x[1]), 0.0), [0.0, 1.0, 0.0]),      # Python's max keeps the first
    (lambda x: min(0.0, float(x[1]), x[1] * 1.0), [0.0, 0.0, 0.0]),
    (lambda x: np.max(np.array([x[1], x[1], x[0], x[1] + 0.0])), [0.0, 1.0, 0.0]),
    (lambda x: np.min(np.stack([x, x[::-1]]), axis=0)[1] * 4, [0.0, 4.0, 0.0]),
    (lambda x: np.sum(np.sort(np.array([x[1], x[1] * 1.0, x[0]])) * np.array([1.0, 2.0, 3.0])),
     [1.0, 5.0, 0.0]),
]


@BOTH
@pytest.mark.parametrize("f, expected", TIES, ids=[f"tie{i}" for i in range(len(TIES))])
def test_ties_split_evenly(f, expected, buffers):
    np.testing.assert_array_equal(grads(f, X, buffers=buffers)[1], expected)


@BOTH
def test_sort_ties_keep_the_order_of_equal_elements(buffers):
    # the first of equal elements gets the gradient of the first of their places
    def f(x):
        return np.sum(np.sort(x) * np.array([1.0, 10.0, 100.0, 1000.0]))
    a = np.array([1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(grads(f, a, buffers=buffers)[1], [10.0, 100.0, 1.0, 1000.0])


@BOTH
def test_clip_bounds_share_the_gradient_at_a_tie(buffers):
    lo, hi = np.array(0.0), np.array(2.0)
    _, dx, dlo, dhi = grads(lambda x, lo, hi: np.sum(np.clip(x, lo, hi)), X, lo, hi,
                            buffers=buffers)
    np.testing.assert_array_equal(dx, [0.0, 0.5, 0.5])
    assert (dlo, dhi) == (1.5, 0.5)


def picks_unique(x, labels):
    return np.sum(x[np.unique(labels)] ** 2)


@BOTH
def test_a_call_without_gradient_is_guarded_on_its_size(buffers):
    x, labels, others = np.linspace(0, 1, 5), np.array([0, 0, 2, 3, 3]), np.arange(5)
    df = ys.simplegrad(picks_unique, x, labels, buffers=buffers)
    np.testing.assert_allclose(df(x, labels)[1], [0.0, 0.0, 1.0, 1.5, 0.0], rtol=1e-15)
    where = r"test_idioms.py:\d+ `return np.sum\(x\[np.unique\(labels\)\] \*\* 2\)`"
    with pytest.raises(Exception, match=where + " giving 3 elements") as e:
        df(x, others)                # five labels now: the code after it was written for three
    assert type(e.value).__name__ == "GuardError"
    np.testing.assert_allclose(ys.grad(picks_unique, x, others)[1][0], 2 * x, rtol=1e-15)


def net(params, x):
    return np.tanh(params["W"] @ x + params["b"])


@BOTH
def test_vjp_of_a_struct_argument_and_jacobian_of_a_float(rng, buffers):
    params = {"W": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    x, ct = rng.standard_normal(3), rng.standard_normal(2)
    y, dp, dx = ys.vjp(net, params, x, buffers=buffers)(params, x, ct)
    np.testing.assert_allclose(y, net(params, x), rtol=1e-15)

    def projected_b(b):
        return np.sum(net({"W": params["W"], "b": b}, x) * ct)
    np.testing.assert_allclose(dp[("b",)], numerical_grad(projected_b, [params["b"]], 0),
                               atol=1e-8)
    J = ys.jacobian(lambda s, x: np.sin(s * x), 0.5, x, buffers=buffers)
    np.testing.assert_allclose(J, x * np.cos(0.5 * x), rtol=1e-14)


class Quadratic:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])

    def loss(self, x):
        return np.sum(self.W * x ** 2)


def test_gradient_of_a_bound_method():
    m, x = Quadratic(), np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(ys.gradient(m.loss)(x), 2 * m.W * x, rtol=1e-15)
    np.testing.assert_allclose(ys.gradient(m.loss, "self")(x)[("W",)], x ** 2, rtol=1e-15)


# -- 9. index arrays made from lists, empty ones too ---------------------------------------

def minor_squares(a):
    """The squares of every minor's entries (a cofactor matrix's indexing): its index arrays
    are constants made from lists, of shape (1, 0) for a 1 x 1 matrix."""
    n = a.shape[-1]
    keep = np.array([[k for k in range(n) if k != i] for i in range(n)], int).reshape(n, -1)
    minors = a[..., keep[:, None, :, None], keep[None, :, None, :]]     # (..., n, n, n-1, n-1)
    weights = np.cos(np.arange(minors.size)).reshape(minors.shape)
    return np.sum(minors ** 2 * weights) + np.sum(np.sin(a))


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("form", ["buffered", "plain", "grad"])
def test_an_empty_constant_index_array_keeps_its_dtype_and_shape(form, n):
    a = np.linspace(-0.9, 1.3, 2 * n * n).reshape(2, n, n)
    if form == "grad":
        value, g = ys.grad(minor_squares, a)
        da = g[0]
    else:
        df = ys.simplegrad(minor_squares, a, buffers=form == "buffered")
        value, da = df(a)
        if n == 1:
            assert "[..., xp.empty((1, 1, 0, 1), dtype=xp.int64), xp.empty((1, 1, 1, 0), " \
                   "dtype=xp.int64)]" in ys.source(df)
    assert value == pytest.approx(minor_squares(a), rel=1e-14)
    np.testing.assert_allclose(da, numerical_grad(minor_squares, [a], 0), rtol=1e-8, atol=1e-8)


# -- dicts of traced values: their keys are known when compiling (autograd's test_dict) ------

def weighted_by_sorted_keys(d):
    total = 0.0
    for i, k in enumerate(sorted(d)):
        total = total + np.sum(np.sin(d[k])) * (i + 1.0)
    made = dict([("a", total)], b=2.0 * total)
    return made["a"] + made["b"] + (1.0 if "c" in d else 0.0) * np.sum(d["x"])


def test_sorted_dict_and_in_read_the_keys_of_a_dict_of_traced_values(rng):
    d = {"y": rng.standard_normal(3), "x": rng.standard_normal(2)}
    value, g = ys.grad(weighted_by_sorted_keys, d)
    assert value == pytest.approx(weighted_by_sorted_keys(d), rel=1e-14)
    np.testing.assert_allclose(g[0][("x",)], 3.0 * np.cos(d["x"]), rtol=1e-14)
    np.testing.assert_allclose(g[0][("y",)], 6.0 * np.cos(d["y"]), rtol=1e-14)
    with_c = dict(d, c=rng.standard_normal(2))
    _, g = ys.grad(weighted_by_sorted_keys, with_c)
    np.testing.assert_allclose(g[0][("x",)], 6.0 * np.cos(d["x"]) + 1.0, rtol=1e-14)  # x second


def test_sorted_of_traced_values_and_a_dict_with_a_traced_key_are_refused(rng):
    with pytest.raises(ys.StaticValueError, match=r"sorted\(\) needs values known"):
        ys.grad(lambda x: np.sum(sorted([x[0], x[1]])), rng.standard_normal(2))
    with pytest.raises(ys.StaticValueError, match=r"dict\(\) with a traced key"):
        ys.grad(lambda x: np.sum(dict([(x[0], x)])[0.0]), rng.standard_normal(2))


def sines_of_a_dict(d):
    return np.sum(np.sin(d["a"])) + np.sum(np.cos(d["b"]))


def grad_of_sines_summed(d):
    g = ys.gradient(sines_of_a_dict)(d)
    return np.sum(np.sin(g[("a",)])) + np.sum(g[("b",)])


def test_the_gradient_of_a_gradient_of_a_dict_argument(rng):
    d = {"a": rng.standard_normal(3), "b": rng.standard_normal(2)}
    _, (g,) = ys.grad(grad_of_sines_summed, d)
    np.testing.assert_allclose(g[("a",)], -np.cos(np.cos(d["a"])) * np.sin(d["a"]), rtol=1e-13)
    np.testing.assert_allclose(g[("b",)], -np.cos(d["b"]), rtol=1e-13)
