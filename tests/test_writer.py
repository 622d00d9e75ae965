"""No code from data: names, keys, values and paths reach a generated module only as checked
identifiers or as literals and escaped text the compiler built (yota_s2s/text.py).

Each test compiles a program whose names or values once broke the module (a SyntaxError, a
wrong gradient, code that ran on import or on every call) and checks the gradient's values in
both forms, that the module parses, and that no payload ran.
"""
import ast
import copy
import enum
import importlib.util
import os
import sys
from fractions import Fraction

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.codegen import write_module
from yota_s2s.compiler import gradient_tape

FORMS = [True, False]           # buffers: the default form, then the plain one
CALLS: list[int] = []           # appended to by payloads that must never run
# A payload for a docstring: if it ends the docstring, the module sets this variable on import.
PAYLOAD = '""";__import__("os").environ.__setitem__("YS_PWNED","1");"""'


@pytest.fixture(autouse=True)
def _no_payload():
    os.environ.pop("YS_PWNED", None)
    CALLS.clear()
    yield
    assert "YS_PWNED" not in os.environ, "a payload from a name or value ran"
    assert CALLS == [], "code from a value's __repr__ ran in the generated module"


def grads(f, *args, buffers=True):
    """Compile, check that the module parses, call twice (the second call gives the same
    values); returns ``((value, *gradients), module text)``."""
    df = ys.simplegrad(f, *args, buffers=buffers)
    source = ys.source(df)
    ast.parse(source)
    first = copy.deepcopy(df(*args))
    second = df(*args)
    for a, b in zip(first, second):
        for key in (a if isinstance(a, dict) else [None]):
            pair = (a[key], b[key]) if key is not None else (a, b)
            if pair[0] is not None:
                assert_close(*pair)
    return first, source


def assert_close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-10, atol=1e-12)


X = np.array([0.5, -1.0, 2.0])


# -- docstring injection ---------------------------------------------------------------------

def square_if(x, mode):
    return np.sum(x * x) if mode else np.sum(x)


@pytest.mark.parametrize("buffers", FORMS)
def test_a_static_str_argument_cannot_end_the_docstring(buffers):
    (value, dx, dmode), source = grads(square_if, X, PAYLOAD, buffers=buffers)
    assert_close(dx, 2 * X)
    assert dmode is None
    assert PAYLOAD not in source.split('"""', 2)[1]     # escaped in the header
    assert "YS_PWNED" not in os.environ                  # the module did not run it on import


def read_key(d):
    return np.sum(d[PAYLOAD] ** 2)


@pytest.mark.parametrize("buffers", FORMS)
def test_a_dict_key_cannot_end_the_docstring(buffers):
    (value, dd), _ = grads(read_key, {PAYLOAD: X}, buffers=buffers)
    assert list(dd) == [(PAYLOAD,)]
    assert_close(dd[(PAYLOAD,)], 2 * X)
    assert "YS_PWNED" not in os.environ


def apply(x, fn):
    return np.sum(fn(x))


def doubled(v):
    return v * 2.0


@pytest.mark.parametrize("buffers", FORMS)
def test_a_qualname_cannot_end_the_docstring(buffers, monkeypatch):
    monkeypatch.setattr(doubled, "__qualname__", PAYLOAD)
    (value, dx, _), source = grads(apply, X, doubled, buffers=buffers)
    assert_close(dx, [2.0, 2.0, 2.0])
    assert "YS_PWNED" not in os.environ


def test_a_directory_name_cannot_end_the_docstring(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    folder = tmp_path / 'p"""; open("PWNED", "w"); """\\'
    folder.mkdir()
    (folder / "model.py").write_text(
        "import numpy as np\nimport yota_s2s as ys\n\n\n"
        "@ys.example(lambda: (np.array([1.0, 2.0]),))\ndef loss(x):\n    return np.sum(x * x)\n")
    import subprocess
    done = subprocess.run([sys.executable, "-m", "yota_s2s.cli", "compile",
                           str(folder.relative_to(tmp_path) / "model.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    module = (folder / "model_grad.py").read_text()
    ast.parse(module)
    run = subprocess.run([sys.executable, "-c", "import numpy as np, model_grad; "
                          "print(model_grad.loss_grad(np.array([1.0, 2.0]))[1])"],
                         cwd=folder, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[2.", "4.]"]
    assert not (folder / "PWNED").exists()
    doc = ast.get_docstring(ast.parse(module))
    assert 'p"""; open("PWNED", "w"); """\\' in doc       # shown as it is, inside the docstring


# -- repr of static values -------------------------------------------------------------------

class Loud(int):
    """An int whose repr is code: it must never be written into a module."""

    def __repr__(self):
        return "(__import__('tests.test_writer', fromlist=['CALLS']).CALLS.append(1) or 2)"


TWO = Loud(2)


def times_global(x):
    return np.sum(x * TWO)


@pytest.mark.parametrize("buffers", FORMS)
def test_an_int_subclass_is_written_as_its_value_not_its_repr(buffers):
    (value, dx), source = grads(times_global, X, buffers=buffers)
    assert_close(value, 2 * X.sum())
    assert_close(dx, [2.0, 2.0, 2.0])
    assert CALLS == []                   # two calls of the gradient ran none of its repr
    assert "CALLS" not in source


class Size(enum.IntEnum):
    TWO = 2


class Mode(str, enum.Enum):          # a StrEnum that also runs on Python 3.10
    SQUARE = "square"


def scaled_head(x, n):
    return np.sum(x[:n] * n)


def by_mode(x, mode):
    return np.sum(x * x) if mode == "square" else np.sum(x)


@pytest.mark.parametrize("buffers", FORMS)
def test_enum_arguments_are_written_as_their_plain_values(buffers):
    (value, dx, dn), source = grads(scaled_head, X, Size.TWO, buffers=buffers)
    assert_close(value, 2 * X[:2].sum())
    assert_close(dx, [2.0, 2.0, 0.0])
    assert "n = 2 (Size)" in source and "if n != 2:" in source
    (value, dx, _), source = grads(by_mode, X, Mode.SQUARE, buffers=buffers)
    assert_close(dx, 2 * X)
    assert "if mode != 'square':" in source


def test_a_static_value_without_a_literal_is_refused():
    from yota_s2s import text
    class Opaque(float):
        pass
    assert text.literal_text(Opaque(1.5)) == "1.5"
    with pytest.raises(ys.StaticValueError, match="cannot be written"):
        text.literal(object())
    with pytest.raises(ys.StaticValueError):
        text.literal(np.array(["a"]))


THIRD = np.longdouble(1) / 3                        # more digits than a float holds (x86)
SEVENTHS = np.arange(3, dtype=np.longdouble) / 7


def long_constants(x):
    return np.sum(np.sin(x) ** 2 * SEVENTHS) * THIRD + np.sum(x * np.longdouble(2.5))


def real_squares(x):
    return np.real(np.sum(x ** 2))


def test_longdouble_constants_and_arguments_are_written_exactly():
    """np.longdouble has no Python number: ``item()`` gives it back, and ``literal`` recursed
    without end (issue 29). Its shortest text reads back exactly: ``xp.float128('0.1')``,
    arrays of those; a clongdouble (whose text reads back through a complex128) from its parts,
    ``xp.complex256(xp.float128('0.1')) + xp.complex256(xp.float128('-0.3')) * 1j`` (it was
    refused: autograd's test_dtypes, grad of real(sum(x**2)) at a complex256 x); one with an
    infinite imaginary part is still refused."""
    from yota_s2s import text
    for value in (THIRD, SEVENTHS, SEVENTHS.reshape(3, 1), np.longdouble("-inf"),
                  np.array(THIRD), np.zeros((0, 2), np.longdouble)):
        back = eval(text.literal_text(value), {"xp": np})
        assert back.dtype == value.dtype and np.shape(back) == np.shape(value)
        np.testing.assert_array_equal(back, value)
    third = np.clongdouble(1) / 3
    for value in (third, third - 1j * third, np.clongdouble(2.5), -third * 1j,
                  np.clongdouble(np.longdouble("inf"))):
        back = eval(text.literal_text(value), {"xp": np})
        assert type(back) is np.clongdouble and back.real == value.real \
            and back.imag == value.imag
    infinite = np.ones((), np.clongdouble)
    infinite.imag = np.inf
    with pytest.raises(ys.StaticValueError, match="infinite or nan imaginary part"):
        text.literal(infinite[()])
    z = (np.array([[0.5, -1.5], [2.0, 0.25]]) + 1j * np.array([[1.0, 0.5], [-0.75, 2.0]]))
    g = ys.gradient(real_squares)(z.astype(np.clongdouble))
    assert g.dtype == np.clongdouble
    np.testing.assert_allclose(g.astype(complex), ys.gradient(real_squares)(z), rtol=1e-15)
    for x in (np.linspace(0.1, 0.7, 3), np.linspace(0.1, 0.7, 3).astype(np.longdouble)):
        exact = 2 * np.sin(x) * np.cos(x) * SEVENTHS * THIRD + np.longdouble(2.5)
        for buffers in (True, False):
            (value, dx), source = grads(long_constants, x, buffers=buffers)
            assert value == long_constants(x) and dx.dtype == x.dtype
            np.testing.assert_allclose(dx, exact.astype(x.dtype), rtol=4 * np.finfo(x.dtype).eps)
        value, g = ys.grad(long_constants, x)
        assert value == long_constants(x)
        np.testing.assert_allclose(g[0], exact.astype(x.dtype), rtol=4 * np.finfo(x.dtype).eps)


def test_an_index_array_reads_back_as_the_same_index():
    """A constant index array is written as the list numpy reads back (``[0, 2]``); an empty
    one keeps its dtype and shape (a list would lose both: ``[]`` reads as intp of shape
    (0,)), for any shape and integer or bool dtype."""
    from yota_s2s import text
    x = np.zeros((2, 0, 4))
    keys = [np.array([1, 0, 1]), np.array([[0], [1]], np.int32), np.array([True, False]),
            np.zeros((0,), np.intp), np.zeros((0, 1), int), np.zeros((1, 1, 0), np.uint8),
            np.zeros((2, 0), bool)]
    for key in keys:
        written = text.index_literal(key)
        back = eval(ast.unparse(written), {"xp": np})
        assert x[back].shape == x[key].shape, (key.dtype, key.shape)
        if key.size == 0:
            assert back.dtype == key.dtype and back.shape == key.shape
        else:
            assert isinstance(written, ast.List)
    with pytest.raises(ys.InternalError):
        text.index_literal(np.zeros(0))


# -- comments --------------------------------------------------------------------------------

def test_a_newline_in_a_file_name_stays_inside_its_comment(tmp_path):
    name = "m\n__import__('os').environ.__setitem__('YS_PWNED', '1')\n#.py"
    path = tmp_path / name
    path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(np.sin(x))\n")
    spec = importlib.util.spec_from_file_location("ys_newline_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for buffers in FORMS:
        (value, dx), source = grads(module.f, X, buffers=buffers)
        assert_close(dx, np.cos(X))
        assert "YS_PWNED" not in os.environ
        body = source[source.index("def f_grad"):]
        assert all(line.lstrip().startswith("#") for line in body.splitlines()
                   if "__import__" in line)
        assert "# grad of m\\x0a__import__" in body
        assert source.startswith('"""Gradient of f (m\\\\x0a__import__')      # one header line


# -- names: helpers of the module, NFKC, keywords ---------------------------------------------

def ones_shadow(_ONES_2, W):
    return np.sum(np.sum(W * W, axis=0) * _ONES_2)


@pytest.mark.parametrize("buffers", FORMS)
def test_a_parameter_named_like_a_module_helper_keeps_its_value(buffers):
    a, W = np.array([1.0, 2.0, 3.0]), np.arange(1.0, 7.0).reshape(2, 3)
    (value, da, dW), source = grads(ones_shadow, a, W, buffers=buffers)
    assert_close(value, np.sum(np.sum(W * W, axis=0) * a))
    assert_close(da, np.sum(W * W, axis=0))
    assert_close(dW, 2 * W * a)


def nfkc_keys(d):
    return np.sum(d["µ"] * d["μ"] + d["H"] * 2.0 * d["ℌ"])


@pytest.mark.parametrize("buffers", FORMS)
def test_names_equal_under_nfkc_stay_separate_variables(buffers):
    d = {"µ": X, "μ": X + 1.0, "H": X + 2.0, "ℌ": X + 3.0}
    (value, dd), source = grads(nfkc_keys, d, buffers=buffers)
    assert_close(value, nfkc_keys(d))
    assert_close(dd[("µ",)], X + 1.0)
    assert_close(dd[("μ",)], X)
    assert_close(dd[("H",)], 2.0 * (X + 3.0))
    assert_close(dd[("ℌ",)], 2.0 * (X + 2.0))


def odd_keys(d):
    return np.sum(d["class"] * d["x²"])


@pytest.mark.parametrize("buffers", FORMS)
def test_dict_keys_that_are_keywords_or_hold_superscripts(buffers):
    d = {"class": X, "x²": X + 1.0}
    (value, dd), source = grads(odd_keys, d, buffers=buffers)
    assert_close(dd[("class",)], X + 1.0)
    assert_close(dd[("x²",)], X)


def module_names(xp, math, out, isinstance):
    return np.sum(np.sin(xp) * math * out + isinstance)


@pytest.mark.parametrize("buffers", FORMS)
def test_parameters_named_like_the_modules_imports_and_builtins(buffers):
    a, b, c, d = X, X + 1.0, X + 2.0, X + 3.0
    (value, da, db, dc, dd), source = grads(module_names, a, b, c, d, buffers=buffers)
    assert_close(value, module_names(a, b, c, d))
    assert_close(da, np.cos(a) * b * c)
    assert_close(db, np.sin(a) * c)
    assert_close(dc, np.sin(a) * b)
    assert_close(dd, np.ones(3))


def spread(args_1, *args):
    return np.sum(args_1 * args[0] * args[1])


@pytest.mark.parametrize("buffers", FORMS)
def test_a_parameter_named_like_an_item_of_star_args(buffers):
    a, b, c = X, X + 1.0, X + 2.0
    (value, da, db, dc), source = grads(spread, a, b, c, buffers=buffers)
    assert_close(da, b * c)
    assert_close(db, a * c)
    assert_close(dc, a * b)


# -- lambdas in literals that span lines ------------------------------------------------------

IN_LIST = [lambda v: v * 2.0,
           lambda v: np.sin(v)]
IN_DICT = {
    "a": lambda v: v * 3.0,
    "b": lambda v: np.cos(v)}


def call_list(x, fs):
    return np.sum(fs[0](x) + fs[1](x))


def call_dict(x, fs):
    return np.sum(fs["a"](x) + fs["b"](x))


@pytest.mark.parametrize("buffers", FORMS)
def test_lambdas_inside_multi_line_list_and_dict_literals(buffers):
    (value, dx, _), _ = grads(call_list, X, IN_LIST, buffers=buffers)
    assert_close(dx, 2.0 + np.cos(X))
    (value, dx, _), _ = grads(call_dict, X, IN_DICT, buffers=buffers)
    assert_close(dx, 3.0 - np.sin(X))


# -- the writer's routines -------------------------------------------------------------------

def test_identifiers_are_checked_in_their_normal_form():
    from yota_s2s import text
    assert text.is_identifier("h") and text.is_identifier("μ")
    assert not text.is_identifier("µ")          # MICRO SIGN: Python reads it as μ
    assert not text.is_identifier("class") and not text.is_identifier("x²")
    assert not text.is_identifier("ｉｆ")        # normalizes to the keyword if
    assert [text.name_base(n) for n in ["µ", "ℌ", "x²", "class", "a-b", "ｉｆ"]] == \
        ["μ", "H", "x2", "class_", "a_b", "if_"]


def test_comments_docstrings_and_html_are_escaped():
    from yota_s2s import text
    assert text.comment("a\nb\u2028c") == "# a\\x0ab\\u2028c"
    line = text.docstring_line('x"""y\\')
    assert '"""' not in line
    assert ast.literal_eval(f'"""{line}"""') == 'x"""y\\'
    assert text.html('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"


def test_accesses_are_checked_before_they_are_written():
    from yota_s2s import text
    assert ast.unparse(text.access_expr("m.layers[0]['W']", {"m": "m_1"})) == "m_1.layers[0]['W']"
    for bad in ["m.f()", "m[__import__('os')]", "m + 1", "m[x]"]:
        with pytest.raises(ys.InternalError):
            text.access_expr(bad)


def test_printer_shows_values_without_their_repr():
    _, tape = gradient_tape(times_global, (X,), check=True)
    assert "CALLS" not in str(tape)
    assert "CALLS" not in write_module(tape)


def named_like_its_gradient(named_like_its_gradient_grad, x):
    return np.sum(named_like_its_gradient_grad * x)


@pytest.mark.parametrize("buffers", FORMS)
def test_a_parameter_named_like_the_gradient_function(buffers):
    (value, da, dx), source = grads(named_like_its_gradient, X, X + 1.0, buffers=buffers)
    assert_close(da, X + 1.0)
    assert_close(dx, X)
    assert "def named_like_its_gradient_grad(named_like_its_gradient_grad_1, x" in source


def named_like_guard_constants(_k0, d):
    return np.sum(_k0 * d["a"])


def named_like_a_builtin(len, m):
    return np.sum(len * m[0] * m[1])


def test_parameters_named_like_the_cache_guards_constants_and_builtins():
    ys.clear_cache()
    for _ in range(3):
        value, g = ys.grad(named_like_guard_constants, X, {"a": X + 1.0})
        assert_close(g[0], X + 1.0)
        assert_close(g[1][("a",)], X)
        value, g = ys.grad(named_like_a_builtin, X, [X + 1.0, X + 2.0])
        assert_close(g[0], (X + 1.0) * (X + 2.0))
        assert_close(g[1][(1,)], X * (X + 1.0))
    assert ys.cache_info()["misses"] == 2          # one compilation each, then hits


# -- constants are told apart by value, not by their repr ---------------------------------------

NEAR = np.array([1.0, 2.0000000001, 3.0])
FAR = np.array([1.0, 2.0, 3.0])         # the same repr as NEAR (8 digits)


def two_constants(x):
    return np.sum(np.sin(x * NEAR)) + np.sum(np.sin(x * FAR) * 3.0)


@pytest.mark.parametrize("buffers", FORMS)
def test_constant_arrays_with_the_same_repr_stay_two_constants(buffers):
    x = np.array([1e9, 2e9, 3.0])
    (value, dx), _ = grads(two_constants, x, buffers=buffers)
    assert_close(value, two_constants(x))
    assert_close(dx, NEAR * np.cos(x * NEAR) + 3.0 * FAR * np.cos(x * FAR))


class Affine:
    def __init__(self, W):
        self.W = W

    def loss(self, x):
        return np.sum(np.tanh(self.W @ x))


def test_a_method_keeps_self_and_builtin_named_parameters_keep_their_names():
    m = Affine(np.arange(6.0).reshape(2, 3) / 10)
    (value, dself, dx), source = grads(m.loss, X)
    assert "def loss_grad(self, x" in source
    t = np.tanh(m.W @ X)
    assert_close(dself[("W",)], np.outer(1 - t * t, X))


HALF = Fraction(1, 2)


def times_fraction(x):
    return np.sum(x * HALF)


def test_a_constant_without_a_literal_is_refused_with_its_place():
    with pytest.raises(ys.StaticValueError, match=r"test_writer.py:\d+ in times_fraction: the "
                       r"static value <Fraction> cannot be written"):
        ys.simplegrad(times_fraction, X)


@pytest.mark.parametrize("buffers", FORMS)
def test_a_long_static_string_holding_or_is_not_split(buffers):
    mode = "this or that " * 8
    (value, dx, _), source = grads(square_if, X, mode, buffers=buffers)
    assert_close(dx, 2 * X)
    assert f"if mode != {mode!r}:" in source


TRIPLES = [("print", "_deliver", "max"), ("bool", "abs", "ValueError"),
           ("_mismatch", "_ONES_2", "bool"), ("complex", "buf1", "sum"), ("dict", "float", "_result"), ("xp", "dx", "t1"),
           ("WORK_ARRAYS", "_local", "threading"), ("len", "tuple", "getattr")]


@pytest.mark.parametrize("buffers", FORMS)
def test_parameters_named_like_anything_the_module_uses(tmp_path, monkeypatch, buffers):
    lines = ["import numpy as np", ""]
    for i, (a, b, c) in enumerate(TRIPLES):
        lines += [f"def f{i}({a}, {b}, {c}, *args):",
                  f"    return np.sum(np.sin({a}) * {b} + {c} * {a} * args[0]) + "
                  f"np.sum(np.sum({b}.reshape(3, 1) * {c}, axis=0))", ""]
    (tmp_path / "ys_named_params.py").write_text("\n".join(lines))
    monkeypatch.syspath_prepend(str(tmp_path))
    import ys_named_params as m
    A, B, C, D = X, X + 1.0, X * X, X - 2.0
    for i in range(len(TRIPLES)):
        (value, da, db, dc, dd), _ = grads(getattr(m, f"f{i}"), A, B, C, D, buffers=buffers)
        assert_close(da, np.cos(A) * B + C * D)
        assert_close(db, np.sin(A) + C.sum())
        assert_close(dc, A * D + B.sum())
        assert_close(dd, C * A)
