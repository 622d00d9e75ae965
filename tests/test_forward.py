"""Forward mode (ad/forward.py): every case of the gradient-check table through ``jvp`` against
central finite differences along a random tangent, both generated forms; every built-in rule
used by that run (or refused here with a reason); ``jacobian`` in both modes agreeing; the
generated module's tangent section; the errors."""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_jvp, jvp_tape
from yota_s2s.errors import NoRuleError, YotaError
from yota_s2s.frontend.flatten import arg_kind
from yota_s2s.rules import RULES

from .test_gradcheck import CASES, RULE_CASES, Case
from .test_gradcheck_scipy import EXTRA_CASES
from .test_rules import builtin_rules

# Cases of the table whose JVP is not checked here, and why: forward mode through ys.odeint is
# its reverse rules transposed, which differentiates the adjoint (solve_odeint_adjoint, its
# gradient traced), and that compiles and integrates for 15-60 s per case, too long for the
# suite; test_gradcheck_scipy's odeint_adjoint case checks that derivative in reverse mode.
NOT_CHECKED = {"odeint": "its JVP compiles the adjoint's gradient (too slow for the suite)",
               "odeint_adjoint": "its JVP compiles the adjoint's second gradient (too slow "
                                 "for the suite)"}

# Built-in rules that forward mode does not check here, and why.
REFUSED: dict[tuple[str, str], str] = {
    **{("ys.odeint", name): NOT_CHECKED["odeint"] for name in ("y0", "t", "args")},
    **{("ys.odeint_adjoint", name): NOT_CHECKED["odeint_adjoint"]
       for name in ("states", "t", "dstates", "args")},
}


def has_tangent(value) -> bool:
    return not isinstance(value, (bool, int, np.integer)) and np.result_type(value).kind in "fc" \
        and arg_kind(value) != "struct"


def tangents_for(args: tuple, rng: np.random.Generator) -> list:
    out = []
    for a in args:
        if not has_tangent(a):
            out.append(None)
        elif isinstance(a, float) and not isinstance(a, np.generic):
            out.append(float(rng.standard_normal()))
        else:
            t = rng.standard_normal(np.shape(a))
            if np.iscomplexobj(a):
                t = t + 1j * rng.standard_normal(np.shape(a))
            t = np.asarray(t, np.result_type(a))
            out.append(t[()] if isinstance(a, np.generic) else t)
    return out


def moved(args: tuple, tangents: list, eps: float) -> list:
    return [a if t is None else a + eps * t for a, t in zip(args, tangents)]


def jvp_case(case: Case) -> None:
    args = case.make_args(np.random.default_rng(1))
    if any(arg_kind(a) == "struct" for a in args):
        pytest.skip("structured arguments: test_jvp_of_tuple_list_dict_and_namedtuple_arguments")
    tangents = tangents_for(args, np.random.default_rng(2))
    if case.name in NOT_CHECKED:
        pytest.skip(NOT_CHECKED[case.name])
    eps = 1e-6
    expected = (np.asarray(case.fn(*moved(args, tangents, eps)), np.float64)
                - np.asarray(case.fn(*moved(args, tangents, -eps)), np.float64)) / (2 * eps)
    given = [t for t in tangents if t is not None]
    results = []
    for buffers in (True, False):
        compiled = compile_jvp(case.fn, args, tangents, check=True, buffers=buffers)
        compiled.fn(*args, *given)
        value, tangent = compiled.fn(*args, *given)
        np.testing.assert_allclose(value, case.fn(*args), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tangent, expected, rtol=10 * case.tol, atol=10 * case.tol,
                                   err_msg=f"{case.name}, buffers={buffers}")
        results.append(tangent)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12,
                               err_msg="plain vs buffered")


@pytest.mark.parametrize("case", CASES + EXTRA_CASES, ids=lambda c: c.name)
def test_jvp_matches_finite_differences(case: Case) -> None:
    jvp_case(case)


def test_every_builtin_rule_has_a_jvp_checked_by_a_case() -> None:
    """Tracing every case of the rule table in forward mode uses the JVP of every built-in
    rule (declared, derived from a trait, or the transposed VJP); a new rule whose case does
    not reach it fails here unless REFUSED says why."""
    rules, used = RULES.copy(), set()
    lookup = rules.jvp

    def recording(prim, argname):
        used.add((prim, argname))
        return lookup(prim, argname)
    rules.jvp = recording
    linear = set()
    for case in RULE_CASES + EXTRA_CASES:
        if case.name in NOT_CHECKED:
            continue
        args = case.make_args(np.random.default_rng(1))
        _, tape = jvp_tape(case.fn, args, tangents_for(args, np.random.default_rng(2)),
                           rules=rules, passes=False)
        linear |= {s.prim for s in tape.stmts if s.prim.linear or s.prim.multilinear}
    missing = sorted(f"{p.name} {a}" for (p, a) in builtin_rules()
                     if (p, a) not in used and p not in linear
                     and (p.name, a) not in REFUSED)
    assert not missing, "rules whose JVP no case of the table reaches:\n" + "\n".join(missing)


def test_jvp_coverage_counts() -> None:
    """How the JVPs of the built-in rules come about (reported in docs/how-it-works.md)."""
    kinds: dict[str, int] = {}
    for prim, argname in builtin_rules():
        kind, _ = RULES.jvp(prim, argname)
        kinds[kind] = kinds.get(kind, 0) + 1
    assert "none" not in kinds
    derived = kinds.get("linear", 0) + kinds.get("multilinear", 0) + kinds.get("elementwise", 0)
    assert derived > kinds.get("transposed", 0) + kinds.get("declared", 0)


def mlp(W1, b1, W2, x):
    h = np.tanh(x @ W1 + b1)
    return np.exp(h @ W2) / np.sum(np.exp(h @ W2), axis=1, keepdims=True)


@pytest.mark.parametrize("argnum", [0, 1, 2, 3])
@pytest.mark.parametrize("buffers", [True, False])
def test_jacobian_modes_agree(argnum: int, buffers: bool) -> None:
    r = np.random.default_rng(0)
    args = (r.standard_normal((3, 4)), r.standard_normal(4), r.standard_normal((4, 2)),
            r.standard_normal((5, 3)))
    fwd = ys.jacobian(mlp, *args, argnum=argnum, mode="fwd", buffers=buffers)
    rev = ys.jacobian(mlp, *args, argnum=argnum, mode="rev", buffers=buffers)
    assert fwd.shape == (5, 2) + args[argnum].shape
    np.testing.assert_allclose(fwd, rev, rtol=1e-12, atol=1e-12)


def test_jvp_api_returns_value_and_tangent_like_jax() -> None:
    r = np.random.default_rng(3)
    x, t = r.standard_normal(4), r.standard_normal(4)

    def f(x, n):
        return np.sin(x) * n + np.sum(x ** 2)
    value, tangent = ys.jvp(f, (x, 3), (t, None))
    np.testing.assert_allclose(value, f(x, 3))
    np.testing.assert_allclose(tangent, np.cos(x) * t * 3 + np.sum(2 * x * t))


def test_module_has_a_tangent_section_named_from_the_source() -> None:
    def layer(x, W):
        h = np.tanh(x @ W)
        return np.sum(h * h)
    r = np.random.default_rng(0)
    text = compile_jvp(layer, (r.standard_normal((2, 3)), r.standard_normal((3, 4))),
                       buffers=False).text
    assert "def layer_jvp(x, W, dot_x, dot_W):" in text
    assert "# -- tangent --" in text
    assert "dot_h = " in text
    assert "return layer, dot_layer" in text


def test_a_primitive_without_rules_is_refused_with_what_to_add() -> None:
    rules = RULES.copy()

    def opaque(x):
        return x * 2.0
    rules.primitive(opaque, "x")

    def f(x):
        return np.sum(opaque(x))
    with pytest.raises(NoRuleError, match="jvprule"):
        compile_jvp(f, (np.ones(3),), rules=rules)


def scaled(x):
    return x * 2.0


def test_declared_jvprule_is_used() -> None:
    rules = RULES.copy()
    rules.primitive(scaled, "x")
    rules.jvprule(scaled, "x", "dx * 2.0")

    def f(x):
        return scaled(x)
    value, tangent = compile_jvp(f, (np.ones(3),), rules=rules).fn(np.ones(3), np.arange(3.0))
    np.testing.assert_allclose(tangent, [0.0, 2.0, 4.0])


def test_a_tuple_result_has_a_tuple_tangent_and_a_bool_result_is_refused() -> None:
    value, tangent = compile_jvp(lambda x: (x, x * 3.0), (np.ones(2),)).fn(np.ones(2),
                                                                           np.arange(2.0))
    np.testing.assert_allclose(tangent[0], [0.0, 1.0])
    np.testing.assert_allclose(tangent[1], [0.0, 3.0])
    with pytest.raises(YotaError, match="forward mode needs float arrays or scalars"):
        compile_jvp(lambda x: x > 0, (np.ones(2),))


def doubled(x):
    return x * 2.0


def test_a_user_primitive_declared_linear_needs_no_rule() -> None:
    rules = RULES.copy()
    rules.primitive(doubled, "x", linear=True)

    def f(x):
        return doubled(x)
    value, tangent = compile_jvp(f, (np.ones(3),), rules=rules).fn(np.ones(3), np.arange(3.0))
    np.testing.assert_allclose(tangent, [0.0, 2.0, 4.0])


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cuda_jvp_equals_the_numpy_jvp(case: Case, buffers: bool, tmp_path) -> None:
    """The cupy path (``device="cuda"``) of forward mode, where cupy and a device exist, as
    tests/test_cupy.py does for gradients; cases that cupy cannot run are skipped there too."""
    from .test_cupy import CUPY_DIFFERS, CUPY_LACKS, HAS_DEVICE, cp, to_device, to_host
    if not HAS_DEVICE:
        pytest.skip("no CUDA device")
    lacks = CUPY_LACKS.get((case.name, "buffered" if buffers else "plain"))
    if lacks is not None or case.name in CUPY_DIFFERS:
        pytest.skip(lacks or "the program means something else on cupy")
    args = case.make_args(np.random.default_rng(1))
    if any(arg_kind(a) == "struct" for a in args):
        pytest.skip("forward mode takes array and float arguments")
    tangents = tangents_for(args, np.random.default_rng(2))
    given = [t for t in tangents if t is not None]
    expected = compile_jvp(case.fn, args, tangents, buffers=buffers).fn(*args, *given)
    fn = compile_jvp(case.fn, args, tangents, buffers=buffers, device="cuda", out_dir=tmp_path,
                     module_name=f"jvp_{abs(hash(case.name))}_{int(buffers)}").fn
    fn(*to_device(tuple(args)), *to_device(tuple(given)))
    got = fn(*to_device(tuple(args)), *to_device(tuple(given)))
    assert cp is not None
    for g, e in zip(got, expected):
        np.testing.assert_allclose(to_host(g), e, rtol=1e-10, atol=1e-10)


def cubic_loss(x):
    return np.sum(np.tanh(x) ** 2) + np.sum(x ** 3)


@pytest.mark.parametrize("buffers", [False], ids=["plain"])
def test_forward_over_reverse_is_a_hessian_vector_product(buffers: bool) -> None:
    """jvp of a function that calls a generated gradient: H @ v. (The buffered form's work
    arrays are refused when traced, as for reverse over reverse: issue 13 item 1, whose fix
    makes the compiler use the plain form there; add True here with it.)"""
    x, v = np.linspace(-1, 1, 5), np.arange(5.0)
    df = ys.simplegrad(cubic_loss, x, buffers=buffers)

    def gradient(x):
        return df(x)[1]
    _, hv = ys.jvp(gradient, (x,), (v,))
    t = np.tanh(x)
    hessian = np.diag(2 * (1 - t ** 2) ** 2 - 4 * t ** 2 * (1 - t ** 2) + 6 * x)
    np.testing.assert_allclose(hv, hessian @ v, rtol=1e-12, atol=1e-12)


Pair = collections.namedtuple("Pair", "w b")


def structured(p, xs, n):
    """Arguments with structure: a namedtuple, a tuple holding a float and a dict with an int."""
    return np.sin(p.w) * p.b * xs[0] + np.sum(xs[1]["k"] ** 2) * n


def test_jvp_of_tuple_list_dict_and_namedtuple_arguments_matches_finite_differences():
    """A structured argument's tangent has its structure (None: zeros, for the whole or a leaf;
    None for its ints); jvp, jvpfunction and linearize agree with central differences."""
    r = np.random.default_rng(0)
    args = (Pair(r.standard_normal(3), r.standard_normal(3)),
            (0.7, {"k": r.standard_normal(2), "i": 3}), 2)
    t = (Pair(r.standard_normal(3), None), (0.3, {"k": r.standard_normal(2), "i": None}), None)

    def moved(eps):
        return (Pair(args[0].w + eps * t[0].w, args[0].b),
                (args[1][0] + eps * t[1][0], {"k": args[1][1]["k"] + eps * t[1][1]["k"], "i": 3}),
                2)
    expected = (structured(*moved(1e-6)) - structured(*moved(-1e-6))) / 2e-6
    value, tangent = ys.jvp(structured, args, t)
    np.testing.assert_allclose(value, structured(*args), rtol=1e-14)
    np.testing.assert_allclose(tangent, expected, rtol=1e-7, atol=1e-9)
    value, f_jvp = ys.linearize(structured, *args)
    np.testing.assert_allclose(f_jvp(*t), expected, rtol=1e-7, atol=1e-9)
    zero = ys.jvp(structured, args, (None, None, None))[1]
    np.testing.assert_array_equal(zero, np.zeros(3))
    jf = ys.jvpfunction(structured, *args)
    assert "dot_xs[1]['k']" in ys.source(jf)       # read from the tangent's own structure


def test_jvp_of_a_dict_with_other_keys_compiles_again():
    def total(d):
        return sum(np.sum(np.sin(v)) for v in d.values())
    for d in ({"a": np.ones(2)}, {"b": np.ones(2)}, {"b": np.ones(2), "c": 1.0}):
        t = {k: 2.0 * v for k, v in d.items()}
        value, tangent = ys.jvp(total, (d,), (t,))
        assert (value, tangent) == pytest.approx(
            (total(d), sum(np.sum(np.cos(v) * t[k]) for k, v in d.items())), rel=1e-14)


def test_jvp_of_an_object_argument_or_a_tangent_of_another_layout_is_refused():
    @dataclasses.dataclass
    class Model:
        w: np.ndarray

    with pytest.raises(YotaError, match="forward mode takes arrays, floats and tuples, lists "
                                        "and dicts of them; m is a Model object"):
        ys.jvp(lambda m, x: np.sum(m.w * x), (Model(np.ones(2)), np.ones(2)), (None, np.ones(2)))
    with pytest.raises(ys.UsageError, match="a tangent a dict with keys 'a' for an argument a "
                                            "dict with keys 'a', 'b'"):
        ys.jvp(lambda d: d["a"] * d["b"], ({"a": 1.0, "b": 2.0},), ({"a": 1.0},))
