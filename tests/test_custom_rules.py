"""Custom derivative rules as a user meets them: diffrule, **kw forwarding, nodiff,
stop_gradient, overrides, re-declaration, imports in the generated module, ys.rules(), and the
errors. Claims about reuse are checked in the generated text; gradients against finite
differences."""
import ast
import dataclasses
import importlib
import operator
import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.codegen import write_module
from yota_s2s.compiler import compile_grad, gradient_tape
from yota_s2s.gradcheck import numerical_grad
from yota_s2s.passes import optimize

from .programs import custom

ROOT = Path(__file__).parent.parent
X = np.linspace(-1.5, 1.5, 5)


def compiled(fn, *args, rules=ys.RULES, buffers=False):
    """(generated function, the code of its body without comments), with the verifier on."""
    c = compile_grad(fn, args, rules=rules, check=True, buffers=buffers)
    body = c.text[c.text.index("# -- forward --"):].splitlines()
    return c.fn, "\n".join(line for line in body if not line.lstrip().startswith("#"))


def assert_matches_fd(fn, *args, rules=ys.RULES, buffers=False):
    df, _ = compiled(fn, *args, rules=rules, buffers=buffers)
    _, *grads = df(*args)
    for i, (a, g) in enumerate(zip(args, grads)):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            np.testing.assert_allclose(g, numerical_grad(fn, args, i), rtol=1e-6, atol=1e-8)


def rule_error(thunk) -> str:
    with pytest.raises(ys.RuleError) as info:
        thunk()
    return str(info.value)


def line_of(text: str, path: Path = Path(__file__)) -> int:
    """The line of this file that contains ``text`` (so expected locations survive edits)."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# -- the issue's example -----------------------------------------------------------------------

def test_the_issue_example_reads_like_the_rule():
    df, body = compiled(custom.L, X)
    assert body.splitlines() == [
        "    t1 = logistic(x)",
        "    L = t1.sum()",
        "    dx = t1 * (1 - t1)",
        "    return L, dx"]
    s = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(df(X)[1], s * (1 - s))


def test_logistic_is_called_once_and_its_result_reused_by_the_rule():
    df, body = compiled(custom.logistic_loss, X)
    assert body.count("logistic(") == 1
    y = re.search(r"(\w+) = logistic\(x\)", body).group(1)
    assert f"dx = {y} * (1 - {y}) * " in body         # the rule y * (1 - y) * dy, as written
    val, dx = df(X)
    s = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(val, np.sum(s * custom.WEIGHTS))
    np.testing.assert_allclose(dx, s * (1 - s) * custom.WEIGHTS)


def test_a_rule_that_calls_the_forward_function_again_gets_it_from_cse():
    _, body = compiled(custom.softplus_logistic_loss, X)
    assert body.count("logistic(") == 1 and body.count("softplus(") == 1
    assert_matches_fd(custom.softplus_logistic_loss, X)


def test_x_to_the_y_recomputed_by_an_overriding_rule_is_computed_once():
    rules = ys.RULES.copy()
    rules.diffrule(operator.pow, "x2", "dy * x1 ** x2 * np.log(x1)")
    _, body = compiled(lambda x, p: np.sum(x ** p), X + 2, X, rules=rules)
    assert body.count("x ** p") == 1 and "xp.log(x)" in body
    assert_matches_fd(lambda x, p: np.sum(x ** p), X + 2, X, rules=rules)


def test_a_rule_function_shows_its_formula_in_the_comments():
    """``shows=`` puts the math in the generated code's rule comment, not the function's name;
    a string rule shows itself and refuses it."""
    rules = ys.RULES.copy()

    @rules.diffrule(np.cbrt, "x", shows="dy / (3 * y ** 2)")
    def cbrt_grad(y, dy):
        return dy / (3 * y * y)
    text = compile_grad(lambda x: np.sum(np.cbrt(x)), (X + 2,), rules=rules, check=True).text
    assert "# rule cbrt, x: dy / (3 * y ** 2)\n" in text and "cbrt_grad" not in text
    assert_matches_fd(lambda x: np.sum(np.cbrt(x)), X + 2, rules=rules)
    with pytest.raises(ys.RuleError, match="shows= is for a rule function"):
        rules.diffrule(np.cbrt, "x", "dy / (3 * y * y)", shows="dy / (3 * y ** 2)")


# -- keyword arguments -------------------------------------------------------------------------

def test_kw_forwards_the_options_the_call_gave():
    df, body = compiled(custom.scale_loss, X)
    assert "scale(x, factor=3.0)" in body and "dx = scale_grad(dt1, factor=3.0)" in body
    np.testing.assert_allclose(df(X)[1], 2 * (3 * X) * 3)


def test_a_rule_function_receives_the_options_in_its_kw_parameter():
    _, body = compiled(custom.clipped_loss, X)
    assert "(x >= -1.0) & (x <= 0.5)" in body          # hi=0.5 from the call, lo's default
    assert_matches_fd(custom.clipped_loss, X + 0.01)


@pytest.fixture
def conv2d(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    return importlib.import_module("conv2d")


@pytest.mark.parametrize("pad,stride", [(0, 1), (1, 1), (1, 2), (2, 3)])
def test_conv2d_example_against_finite_differences(conv2d, pad, stride):
    r = np.random.default_rng(pad * 10 + stride)
    x, w = r.standard_normal((2, 3, 7, 6)), r.standard_normal((4, 3, 3, 2))
    c = r.standard_normal(conv2d.conv2d(x, w, pad=pad, stride=stride).shape)

    def loss(x, w, c):
        return np.sum(np.sin(conv2d.conv2d(x, w, pad=pad, stride=stride)) * c)
    assert_matches_fd(loss, x, w, c)


def test_conv2d_rules_forward_pad_and_stride_in_the_generated_code(conv2d):
    r = np.random.default_rng(0)
    x, w1, w2 = r.standard_normal((2, 3, 8, 8)), r.standard_normal((4, 3, 3, 3)), \
        r.standard_normal((5, 4, 3, 3))
    df, body = compiled(conv2d.loss, x, w1, w2)
    assert "dh = conv2d_grad_data(dy_, w2, (2, 4, 8, 8), pad=1, stride=2)" in body   # y_: y
    assert "dw2 = conv2d_grad_filter(h, dy_, (5, 4, 3, 3), pad=1, stride=2)" in body
    assert "conv2d_grad_data(dt1, w1, (2, 3, 8, 8), pad=1)" in body
    assert body.count("conv2d(") == 2                       # the two layers, called once each
    assert "from conv2d import conv2d, conv2d_grad_data, conv2d_grad_filter" in ys.source(df)
    assert max(ys.gradcheck(conv2d.loss, x, w1, w2).values()) < 1e-7


def test_the_conv2d_gradient_functions_have_rules_too(conv2d):
    r = np.random.default_rng(1)
    x, w, g = r.standard_normal((2, 3, 6, 6)), r.standard_normal((4, 3, 3, 3)), \
        r.standard_normal((2, 4, 3, 3))
    assert_matches_fd(lambda g, w: np.sum(np.sin(
        conv2d.conv2d_grad_data(g, w, (2, 3, 6, 6), pad=1, stride=2))), g, w)
    assert_matches_fd(lambda x, g: np.sum(np.sin(
        conv2d.conv2d_grad_filter(x, g, (4, 3, 3, 3), pad=1, stride=2))), x, g)


def test_the_conv2d_example_runs_as_a_script(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "conv2d.py")], cwd=tmp_path,
                         capture_output=True, text=True, check=True,
                         env={"YOTA_S2S_CACHE": str(tmp_path), "PATH": ""})
    assert "from conv2d import conv2d, conv2d_grad_data, conv2d_grad_filter" in out.stdout
    errors = re.search(r"per argument: (.*)", out.stdout).group(1)
    assert all(float(e.split(": ")[1]) < 1e-7 for e in errors.split(", "))


# -- what gets no gradient ---------------------------------------------------------------------

def test_integer_boolean_and_static_arguments_get_none():
    df, body = compiled(custom.power_loss, X, 3, True)
    assert "power(x, 3)" in body                  # the int operand needs no rule
    _, dx, dn, dflag = df(X, 3, True)
    assert dn is None and dflag is None
    np.testing.assert_allclose(dx, 3 * X ** 2)


def test_nodiff_function_is_called_and_passes_no_gradient():
    df, body = compiled(custom.nodiff_loss, X)
    assert "argmax_weight(x)" in body and "argmax" not in body.replace("argmax_weight", "")
    np.testing.assert_allclose(df(X)[1], np.full(5, np.exp(X.max())))


def test_nodiff_of_one_operand():
    df, _ = compiled(custom.affine_loss, X, X + 2)
    _, dx, dw = df(X, X + 2)
    np.testing.assert_allclose(dx, 2 * (X * (X + 2) + 1) * (X + 2))
    assert not dw.any()


def test_stop_gradient_is_the_identity_forward_and_a_constant_backward():
    assert ys.stop_gradient(X) is X
    df, body = compiled(custom.stopped_loss, X)
    assert "target = xp.tanh(x)" in body and "stop_gradient" not in body
    val, dx = df(X)
    np.testing.assert_allclose(val, np.sum((X - np.tanh(X)) ** 2))
    np.testing.assert_allclose(dx, 2 * (X - np.tanh(X)))


def test_nodiff_after_a_rule_drops_it_and_a_rule_after_nodiff_lifts_it():
    rules = ys.RULES.copy()
    rules.nodiff(custom.logistic)
    assert rules.rule(rules.lookup(custom.logistic), "x") is None
    assert not compiled(custom.logistic_loss, X, rules=rules)[0](X)[1].any()
    rules.diffrule(custom.logistic, "x", "y * (1 - y) * dy")
    assert not rules.is_nodiff(rules.lookup(custom.logistic), "x")
    assert compiled(custom.logistic_loss, X, rules=rules)[0](X)[1].all()


# -- overriding and re-declaring ---------------------------------------------------------------

def test_a_user_rule_overrides_a_built_in():
    rules = ys.RULES.copy()
    rules.diffrule(np.tanh, "x", "dy / np.cosh(x) ** 2")
    _, body = compiled(lambda x: np.sum(np.tanh(x)), X, rules=rules)
    assert "xp.cosh(x) ** 2" in body
    _, default = compiled(lambda x: np.sum(np.tanh(x)), X)
    assert "cosh" not in default                          # the default set is untouched


def test_re_declaring_a_primitive_keeps_its_rules_marks_and_aliases():
    rules = ys.RULES.copy()
    rules.primitive(operator.mul, "x1, x2", name="mul", emit=("binop", "*"))
    new = rules.lookup(operator.mul)
    assert rules.lookup(np.multiply) is new and rules.rule(new, "x1").prim is new
    assert_matches_fd(lambda a, b: np.sum(np.multiply(a, b) * a), X, X + 1, rules=rules)
    rules.nodiff(custom.affine, "w")
    rules.primitive(custom.affine, "x, w")
    assert rules.is_nodiff(rules.lookup(custom.affine), "w")


def test_a_user_primitive_named_like_a_built_in_is_called_as_itself():
    """Issue 10 #7: a user function named "transpose" was written ``x.T``."""
    x, w = np.arange(6.0).reshape(3, 2) + 1, np.cos(np.arange(6.0)).reshape(2, 3)
    expected_dx = np.rot90(w, -1)
    for name in ("transpose", "rotate_it"):
        rules = ys.RULES.copy()
        rules.primitive(custom.rotate, "a", name=name)
        for buffers in (True, False):
            c = compile_grad(custom.rotate_loss, (x, w), rules=rules, check=True,
                             buffers=buffers)
            value, dx, dw = c.fn(x, w)
            assert value == custom.rotate_loss(x, w)
            np.testing.assert_allclose(dx, expected_dx)
            np.testing.assert_allclose(dw, np.rot90(x))
            assert "rotate(x)" in c.text and ".T" not in c.text


def test_a_built_in_name_on_a_user_primitive_changes_nothing_but_printing():
    """Every built-in's name given to user functions: the optimized tape and the generated
    code are the same as with their own names (calls, not the built-in's operator, method,
    identities or out= form). The tape is traced once; each name renames its statements."""
    x = np.arange(9.0).reshape(3, 3) / 7 + 0.1
    w = np.cos(np.arange(9.0)).reshape(3, 3)
    for buffers in (True, False):
        assert_matches_fd(custom.like_built_ins, x, w, buffers=buffers)
    _, raw = gradient_tape(custom.like_built_ins, (x, w), passes=False)
    mine = {ys.RULES.lookup(custom.rotate), ys.RULES.lookup(custom.blend)}
    optimized = optimize(raw, ys.RULES)
    calls = sum(s.prim in mine for s in optimized.stmts)
    expected = [write_module(optimized, buffers=b) for b in (True, False)]
    for name in sorted({prim.name for prim in ys.RULES.prims.values()}):
        renamed = {p: dataclasses.replace(p, name=name) for p in mine}
        stmts = [s.replace(prim=renamed.get(s.prim, s.prim)) for s in raw.stmts]
        tape = optimize(raw.copy(stmts=stmts), ys.RULES)
        assert sum(s.prim in renamed.values() for s in tape.stmts) == calls, name
        assert [write_module(tape, buffers=b) for b in (True, False)] == expected, name


def sines_subtracted(x):
    return np.sum(0.0 - np.sin(x)) + np.sum(-1.0 * np.cos(x))


def test_passes_write_the_primitives_of_the_rule_set_they_were_given():
    """``0 - t`` simplified to ``-t`` took the negation of the global RULES (written ``-``)
    whatever rule set was compiled with; and passes missed the re-declared negation itself."""
    rules = ys.RULES.copy()
    rules.primitive(operator.neg, "x", name="negate", emit=("call", "xp.negative"))
    df, body = compiled(sines_subtracted, X, rules=rules)
    assert "sines_subtracted = xp.negative(t1.sum()) - t4.sum()" in body     # the tape's names
    assert "dx = t1 - t4" in body                  # -(-x) and signs see the re-declared one
    value, dx = df(X)
    np.testing.assert_allclose(value, sines_subtracted(X))
    np.testing.assert_allclose(dx, np.sin(X) - np.cos(X))


def _name_reads(path: Path) -> list[str]:
    """``prim.name`` read outside an f-string, and ``<x>.name`` compared with strings
    (dtype names aside), in one module: how code would recognise a primitive by its name."""
    tree = ast.parse(path.read_text())
    in_text = {id(n) for s in ast.walk(tree) if isinstance(s, ast.JoinedStr) for n in ast.walk(s)}

    def is_name(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "name" and not (
            isinstance(node.value, (ast.Attribute, ast.Name)) and
            getattr(node.value, "attr", getattr(node.value, "id", None)) == "dtype")

    def strings(node) -> bool:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return any(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items)

    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if is_name(node) and id(node) not in in_text and (
                getattr(node.value, "attr", getattr(node.value, "id", None)) == "prim"):
            found.append(where)
        elif isinstance(node, ast.Compare) and any(map(is_name, [node.left, *node.comparators])) \
                and any(map(strings, [node.left, *node.comparators])):
            found.append(where)
    return found


def test_no_pass_or_codegen_module_recognises_a_primitive_by_its_name():
    package = ROOT / "yota_s2s"
    modules = [p for d in ("passes", "codegen", "frontend", "ir")
               for p in (package / d).glob("*.py") if p.name != "printer.py"]
    modules += [*(package / "ad").glob("*.py"), package / "compiler.py"]
    assert [where for path in modules for where in _name_reads(path)] == []


def test_a_ufunc_from_outside_numpy_is_called_as_itself_in_both_forms():
    """It has no xp.<name>(..., out=) form (was ``xp.expit``: AttributeError)."""
    special = pytest.importorskip("scipy.special")
    rules = ys.RULES.copy()
    rules.primitive(special.expit, "x", module="scipy.special")
    rules.diffrule(special.expit, "x", "dy * y * (1 - y)")
    x = np.linspace(-1.0, 1.0, 5)
    for buffers in (True, False):
        c = compile_grad(lambda x: np.sum(special.expit(x * 2.0)), (x,), rules=rules,
                         buffers=buffers)
        y = special.expit(2 * x)
        np.testing.assert_allclose(c.fn(x)[1], 2 * y * (1 - y))


def test_re_declaring_a_built_in_keeps_its_traits():
    """A view stays a view (the memory analyses rely on it), a ufunc keeps its out= form."""
    rules = ys.RULES.copy()
    rules.primitive(np.reshape, "a, shape, order='C'", name="my_reshape")
    rules.primitive(operator.mul, "x1, x2", name="times")
    assert rules.lookup(np.reshape).traits() == ys.RULES.lookup(np.reshape).traits()
    assert rules.lookup(np.reshape).view and rules.lookup(np.reshape).method == "reshape"
    assert rules.lookup(operator.mul).ufunc is np.multiply
    assert rules.primitive(np.copy, "a", method=None).method is None      # unless given anew
    assert "no option 'veiw'" in rule_error(lambda: rules.primitive(custom.rotate, veiw=True))


def test_re_declaring_with_a_rule_for_an_operand_that_is_gone_is_an_error():
    rules = ys.RULES.copy()
    text = rule_error(lambda: rules.primitive(custom.affine, "w, x=1.0"))
    assert text.startswith(f"test_custom_rules.py:{line_of('w, x=1.0')}")
    assert "re-declaring affine drops its operand 'x', which has a rule (custom.py:" in text
    assert rules.lookup(custom.affine).operands == ("x", "w")      # nothing changed


def test_every_change_takes_a_new_version():
    rules = ys.RULES.copy()
    seen = {ys.RULES.version, rules.version}
    assert len(seen) == 2                                 # a copy is a new rule set

    def check_new():
        assert rules.version not in seen
        seen.add(rules.version)
    rules.diffrule(custom.logistic, "x", "dy * y * (1 - y)")
    check_new()
    rules.nodiff(custom.affine, "x")
    check_new()
    rules.primitive(custom.power, "x, n")
    check_new()
    rules.alias(custom.scale_grad, custom.scale)
    check_new()
    before = rules.version
    rules.primitive(custom.power)                         # already declared: no change
    assert rules.version == before


# -- the generated module imports what it calls ------------------------------------------------

def test_generated_module_imports_the_users_functions_in_a_fresh_process(tmp_path):
    df = ys.simplegrad(custom.logistic_loss, X, out_dir=tmp_path, module_name="logistic_grads")
    assert "from tests.programs.custom import logistic\n" in ys.source(df)
    code = textwrap.dedent(f"""
        import sys, numpy as np
        sys.path[:0] = [{str(tmp_path)!r}, {str(ROOT)!r}]
        import logistic_grads
        print(logistic_grads.logistic_loss_grad(np.linspace(-1.5, 1.5, 5))[1].tolist())
    """)
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == str(df(X)[1].tolist())
    assert "yota_s2s" not in ys.source(df)


def test_a_parameter_named_like_an_imported_function_gets_an_aliased_import():
    df, body = compiled(custom.shadowing, X)
    assert "import tests.programs.custom as _tests_programs_custom" in ys.source(df)
    assert "_tests_programs_custom.logistic(logistic)" in body
    s = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(df(X)[1], s * (1 - s))


def test_a_function_from_main_is_a_clear_error_and_module_names_it(tmp_path, monkeypatch):
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import numpy as np
        import yota_s2s as ys

        def bump(x):
            return x + np.sin(x)

        ys.diffrule(bump, "x", "dy * (1 + np.cos(x))")

        def loss(x):
            return np.sum(bump(x))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    main = runpy.run_path(str(tmp_path / "script.py"), run_name="__main__")
    with pytest.raises(ys.RuleError) as info:
        ys.simplegrad(main["loss"], X)
    text = str(info.value)
    assert text.startswith("script.py:11 in loss: bump is defined in __main__")
    assert 'ys.primitive(bump, module="mymodel")' in text
    rules = ys.RULES.copy()
    rules.primitive(main["bump"], module="script")
    rules.diffrule(main["bump"], "x", "dy * (1 + np.cos(x))")
    df = ys.simplegrad(main["loss"], X, rules=rules)
    assert "from script import bump" in ys.source(df)
    np.testing.assert_allclose(df(X)[1], 1 + np.cos(X))


LOCAL_RULES = ys.RULES.copy()


def make_scaler():
    def inner(x):
        return x * 2.0
    LOCAL_RULES.diffrule(inner, "x", "2.0 * dy")
    return inner


SCALER = make_scaler()


def local_function_loss(x):
    return np.sum(SCALER(x))


def test_a_function_defined_inside_another_is_a_clear_error():
    with pytest.raises(ys.RuleError, match=r"inner is defined inside make_scaler\(\)"):
        ys.simplegrad(local_function_loss, X, rules=LOCAL_RULES)


# -- ys.rules() --------------------------------------------------------------------------------

def test_rules_lists_a_primitive_its_rules_and_where_they_were_registered():
    text = str(ys.rules(custom.logistic))
    lines = text.splitlines()
    assert lines[0] == "tests.programs.custom.logistic(x)"
    where = line_of('ys.diffrule(logistic, "x"', Path(custom.__file__))
    assert re.fullmatch(rf"    x  y \* \(1 - y\) \* dy +custom\.py:{where}", lines[1])
    assert repr(ys.rules(custom.logistic)) == text


def test_rules_shows_nodiff_options_operators_and_function_rules():
    assert str(ys.rules(custom.argmax_weight)).endswith("argmax_weight(x)  no gradient (nodiff)")
    assert "    w  no gradient (nodiff)" in str(ys.rules(custom.affine))
    scale = str(ys.rules(custom.scale))
    assert scale.startswith("tests.programs.custom.scale(x, factor=1.0, shift=0.0)")
    mul = str(ys.rules(np.multiply))
    assert mul.splitlines()[0] == "mul(x1, x2)  [*]  also np.multiply, operator.mul"
    assert "a  sum_grad(a, dy, axis, keepdims)" in str(ys.rules(np.sum))
    listing = ys.rules("exp")
    assert {p.name for p in listing.prims} >= {"exp", "exp2", "expm1", "math.exp"}
    assert str(ys.rules("no such thing")) == "no primitive matches 'no such thing'"
    assert ys.rules.RULES is ys.RULES                    # ys.rules is still the package


# -- errors at registration --------------------------------------------------------------------

def test_unknown_names_point_at_the_registering_line():
    rules = ys.RULES.copy()
    text = rule_error(lambda: rules.diffrule(custom.logistic, "x", "y * (1 - z) * dy"))
    first, source, hint = text.splitlines()
    assert first == (f"test_custom_rules.py:{line_of('(1 - z)')} in <lambda>: the rule for "
                     "logistic "
                     "uses 'z', which is neither a parameter of logistic nor defined where the "
                     "rule is registered")
    assert "(1 - z)" in source and hint.startswith("Rules may use: dy, x, y, and names defined")


@pytest.mark.parametrize("args,message", [
    ((custom.logistic, "a", "dy"), "logistic has no operand named 'a'"),
    ((custom.scale, "factor", "dy"), "'factor' is a static option of scale"),
    ((custom.logistic, "x", "dy *"), "the rule 'dy *' is not a Python expression"),
    ((custom.logistic, "x", "helper(dy, **kw)"), "forwards **kw, but logistic has no keyword"),
    ((custom.scale, "x", "f(dy, **kw, **more)"), "keyword options under two names, 'kw' and 'more'"),
    ((custom.logistic, "x", 3), "must be a string or a Python function, not int"),
    ((lambda x, y: x * y, "x", "dy * y"), "has a parameter named 'y', which rules use for the"),
    ((lambda x, **kw: x, "x", "dy"), "takes **kw; a primitive's options need names and defaults"),
])
def test_registration_errors(args, message):
    text = rule_error(lambda: ys.RULES.copy().diffrule(*args))
    assert message in text and text.startswith("test_custom_rules.py:")


def wrong_params(x, dz):
    return dz


def kw_without_options(x, dy, **kw):
    return dy


def test_rule_function_errors_point_at_the_function():
    rules = ys.RULES.copy()
    text = rule_error(lambda: rules.diffrule(custom.logistic, "x", wrong_params))
    assert text.startswith(f"test_custom_rules.py:{line_of('def wrong_params')} in wrong_params: "
                           "rule function wrong_params takes 'dz', which logistic does not have")
    text = rule_error(lambda: rules.diffrule(custom.logistic, "x", kw_without_options))
    assert "takes **kw, but logistic has no keyword options" in text


def test_nodiff_of_a_missing_operand_and_a_spec_with_keywords():
    rules = ys.RULES.copy()
    assert "affine has no operand named 'b'" in rule_error(lambda: rules.nodiff(custom.affine, "b"))
    assert "has **keywords" in rule_error(lambda: rules.primitive(custom.scale, "x, **kw"))
