"""Frontend: Python source + example arguments -> tape text.

Each test traces one construct and compares the printed tape (without locations), so the
expected value is exactly what a reader of ``ys.trace`` sees.
"""
import linecache
import textwrap

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.ir.printer import format_tape

from .programs import constructs as c

X = np.arange(6.0).reshape(3, 2)


def tape_text(fn, *args):
    _, tape = ys.trace(fn, *args)
    return format_tape(tape, locations=False)


def lines(text):
    return textwrap.dedent(text).strip()


def test_for_range_continue_and_static_int():
    assert tape_text(c.loop_continue, X, 3) == lines("""
        tape loop_continue(x:f64[3,2], n=3) -> f64[]
          t1:f64[2] = getitem[key=0] x
          t2:f64[] = sum t1
          total:f64[] = add 0.0 t2
          t3:f64[2] = getitem[key=2] x
          t4:f64[] = sum t3
          total_1:f64[] = add total t4
          return total_1""")


def test_tuple_unpacking_of_an_array():
    assert tape_text(c.unpack, X[:2]) == lines("""
        tape unpack(x:f64[2,2]) -> f64[]
          a:f64[2] = getitem[key=0] x
          b:f64[2] = getitem[key=1] x
          t1:f64[2] = mul a b
          unpack:f64[] = sum t1
          return unpack""")


def test_while_on_a_traced_condition_is_a_while_statement():
    """(Issue 33: it was unrolled on the example, a guard per test; tests/test_whiles.py.)"""
    assert tape_text(c.while_guard, np.ones(2)) == lines("""
        tape while_guard(x:f64[2]) -> f64[]
          x_1:f64[2] = while[while='np.sum(x) < 10'] x
            while x_1:
              t1:f64[] = sum x_1
              x_cond:bool[] = lt t1 10
              result x_cond
            do x_1:
              x_2:f64[2] = mul x_1 2
              result x_2
          while_guard:f64[] = sum x_1
          return while_guard""")


@pytest.mark.parametrize("flag,expected", [(True, "early_return:f64[] = sum x"),
                                           (False, "t1:f64[3,2] = mul x 2")])
def test_early_return_on_a_static_flag(flag, expected):
    assert expected in tape_text(c.early_return, X, flag)


@pytest.mark.parametrize("mode,op", [("a", "add x 1"), ("b", "mul x 3"), ("c", "neg x")])
def test_if_elif_else_on_static_values(mode, op):
    assert f"y_:f64[3,2] = {op}" in tape_text(c.elif_chain, X, mode)     # y_: a rule word


def test_conditional_expression_and_boolean_operators():
    assert tape_text(c.cond_expr_boolop, X, 2) == lines("""
        tape cond_expr_boolop(x:f64[3,2], k=2) -> f64[]
          y_:f64[3,2] = mul x 2
          t1:f64[] = sum y_
          cond_expr_boolop:f64[] = mul t1 3
          return cond_expr_boolop""")


def test_numpy_under_other_names_and_module_constants():
    assert tape_text(c.aliases, X) == lines("""
        tape aliases(x:f64[3,2]) -> f64[]
          t1:f64[3,2] = exp x
          t2:f64[] = sum t1
          aliases:f64[] = add t2 2.0
          return aliases
          # Assumes, outside its arguments (docs/outside.md):
          #   tests.programs.constructs.OFFSET (global): guarded by identity  (constructs.py:56)""")


def float64_constants(x):
    return np.sum(x * np.float64(2.0)) + np.sum(x * np.log(2 * np.pi))


def test_numpy_float64_constants_stay_float64_on_the_tape():
    """Under NumPy 2's promotion (NEP 50) ``x32 * np.float64(2.0)`` is float64, as on the tape;
    the constants used to become Python floats (``t1:f32[3] = mul x 2.0``)."""
    assert tape_text(float64_constants, np.ones(3, np.float32)) == lines("""
        tape float64_constants(x:f32[3]) -> f64[]
          t1:f64[3] = mul x f64(2.0)
          t2:f64[] = sum t1
          t3:f64[3] = mul x f64(1.8378770664093453)
          t4:f64[] = sum t3
          float64_constants:f64[] = add t2 t4
          return float64_constants""")


def ufuncs_of_python_floats(x):
    v = float(np.sum(x))
    a = np.power(v, -0.5)               # numpy: nan for a negative base (Python: complex)
    b = np.divide(1.0, v - v)           # numpy: inf (Python: ZeroDivisionError)
    c = np.multiply(v, 2.0)             # numpy: a float64 scalar, which widens x * c
    return np.sum(np.sin(a) + x * c) + np.where(b > 0.0, 1.0, 0.0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")       # numpy's, as f's own: 1 / 0
@pytest.mark.parametrize("buffers", [False, True])
def test_a_ufunc_of_python_floats_keeps_numpy_semantics(buffers):
    """``np.power(v, -0.5)`` of a Python float is numpy's power: nan for a negative base, inf
    for a division by zero, and a numpy scalar result. It used to be written ``v ** -0.5``
    (a complex number for v < 0) and traced as ``/`` (ZeroDivisionError at compile time)."""
    x = np.array([1.0, 2.0], np.float32)
    assert tape_text(ufuncs_of_python_floats, x).count(":f64[]") >= 4
    df = ys.simplegrad(ufuncs_of_python_floats, x, buffers=buffers)
    with np.errstate(all="ignore"):
        for arg in (x, -x):
            want = ufuncs_of_python_floats(arg)
            value, dx = df(arg)
            assert type(value) is type(want) and value.dtype == want.dtype == np.float64
            assert np.isnan(value) if np.isnan(want) else value == want
            assert dx.dtype == np.float32
    value, dx = df(x)
    assert value == ufuncs_of_python_floats(x)
    s = float(np.sum(x))                # the value is 2 sin(s ** -0.5) + 2 s ** 2 (+ 0)
    assert np.allclose(dx, -np.cos(s ** -0.5) * s ** -1.5 + 4 * s)


def log_of_a_float(x):
    v = float(np.sum(x))
    return np.log(v) + np.sqrt(v) + np.sum(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("buffers", [False, True])
def test_a_derivative_rule_of_python_floats_keeps_numpy_semantics(buffers):
    """The rules of ``np.log(v)`` (``dy / x``) and ``np.sqrt(v)`` (``dy / (2 * y)``) on a
    Python float ``v`` divide Python floats: at v = 0 numpy's gradient is inf; Python's ``/``
    raised ZeroDivisionError from the generated function."""
    df = ys.simplegrad(log_of_a_float, np.array([0.5, 0.25]), buffers=buffers)
    value, dx = df(np.zeros(2))
    assert value == -np.inf and np.all(dx == np.inf)
    value, dx = df(np.array([0.5, 0.25]))
    assert np.allclose(dx, 1 / 0.75 + 0.5 / np.sqrt(0.75) + 1)


def test_calls_across_modules_with_keywords_defaults_varargs():
    assert "mul t1 3.0" in tape_text(c.across_modules, X)
    assert tape_text(c.defaults_and_kwargs, X) == lines("""
        tape defaults_and_kwargs(x:f64[3,2]) -> f64[]
          t1:f64[3,2] = mul x x
          t2:f64[] = sum t1
          t3:f64[] = add t2 3.0
          defaults_and_kwargs:f64[] = add t3 0.5
          return defaults_and_kwargs""")


def test_zip_enumerate_over_lists_of_arrays():
    text = tape_text(c.zip_enumerate, [X, X], [X, 2 * X])
    assert text.startswith("tape zip_enumerate(xs_0:f64[3,2], xs_1:f64[3,2], ws_0:f64[3,2], ws_1:f64[3,2])")
    assert "t1:f64[3,2] = mul xs_0 ws_0" in text and "t4:f64[3,2] = mul xs_1 ws_1" in text


def test_comprehensions_and_dicts():
    text = tape_text(c.comprehension, X)
    assert "getitem[key=1]" not in text          # the comprehension's `if i != 1`
    assert text.endswith("comprehension:f64[2] = add v v_1\n  return comprehension")


def test_augmented_assignment_rebinds():
    assert "y_1:f64[3,2] = add y_ 2.0\n  y_2:f64[3,2] = mul y_1 x" in tape_text(c.augmented, X)


def test_nested_functions_closures_and_methods():
    assert "t1:f64[3,2] = mul x 4.0" in tape_text(c.nested_def, X)
    assert "t1:f64[3,2] = mul x 2.0" in tape_text(c.make_closure(2.0), X)
    # a bound method's object is an argument: its float field is traced
    assert "loss:f64[] = mul t1 scale" in tape_text(c.Model(3.0).loss, X)


def test_iterating_an_array_reads_each_row_in_the_loop():
    assert tape_text(c.iterate_array, X) == lines("""
        tape iterate_array(x:f64[3,2]) -> f64[]
          row:f64[2] = getitem[key=0] x
          t1:f64[] = getitem[key=0] row
          total:f64[] = add 0.0 t1
          row_1:f64[2] = getitem[key=1] x
          t2:f64[] = getitem[key=0] row_1
          total_1:f64[] = add total t2
          row_2:f64[2] = getitem[key=2] x
          t3:f64[] = getitem[key=0] row_2
          total_2:f64[] = add total_1 t3
          return total_2""")


def test_recursion_on_a_static_depth_unrolls():
    assert tape_text(c.recursion, X, 2).count("mul") == 2


def test_shapes_are_static_values():
    assert tape_text(c.shapes_are_static, X) == lines("""
        tape shapes_are_static(x:f64[3,2]) -> f64[]
          t1:f64[2,3] = reshape x (2, 3)
          t2:f64[] = sum t1
          t3:f64[] = div t2 6
          shapes_are_static:f64[] = add t3 2
          return shapes_are_static""")


def test_imports_inside_the_function():
    assert "mul 3.141592653589793 t2" in tape_text(c.import_inside, X)


def test_lambda_source_is_found():
    f = lambda v: np.sum(v * 3.0)  # noqa: E731
    assert "mul v 3.0" in tape_text(f, X)


def test_notebook_cells_work_through_linecache():
    # IPython registers each cell's source with linecache under a pseudo file name
    source = "import numpy as np\ndef cell_fn(x):\n    return np.sum(x * 5.0)\n"
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace = {}
    exec(compile(source, name, "exec"), namespace)
    assert "mul x 5.0" in tape_text(namespace["cell_fn"], X)


def test_no_source_says_so_and_suggests_a_file():
    namespace = {}
    exec(compile("def typed(x):\n    return x\n", "<stdin>", "exec"), namespace)
    with pytest.raises(ys.UnsupportedSyntax, match="keeps no source") as info:
        ys.trace(namespace["typed"], X)
    assert "put the function in a file" in str(info.value)


def test_trace_returns_the_value():
    value, _ = ys.trace(c.aliases, X)
    assert value == pytest.approx(np.sum(np.exp(X)) + 2.0)


@pytest.mark.parametrize("buffers", [True, False])
def test_a_decorated_function_is_compiled_as_it_runs(buffers):
    """functools.wraps sets __wrapped__ and __name__; the frontend once read the source of the
    wrapped function, so a decorator that changes the result was silently left out."""
    x = np.array([1.0, 2.0])
    for f in (c.doubled_loss, c.calls_doubled):
        value, dx = ys.simplegrad(f, x, buffers=buffers)(x)
        assert value == 10.0
        np.testing.assert_array_equal(dx, [4.0, 8.0])
    assert ys.simplegrad(c.doubled_loss, x, buffers=buffers).__name__ == "doubled_loss_grad"


# -- abstract evaluation (frontend/abstract.py): values are computed only where they are read --

def _chain(x):
    y = x
    for i in range(12):
        y = np.sin(y) * x + 0.5 if i % 2 else np.tanh(y) - x
    return np.sum(y * y)


def test_compile_memory_does_not_grow_with_the_arrays(monkeypatch):
    """A chain on 1e6 floats compiles keeping no value of that size: the evaluator and the
    backward sweep know the intermediates by shape and dtype (issue 14)."""
    import tracemalloc

    from yota_s2s.compiler import compile_grad
    from yota_s2s.frontend import abstract
    monkeypatch.setattr(abstract, "CHECK", False)       # (which computes every value)
    x = np.linspace(-1.0, 1.0, 1_000_000)
    tracemalloc.start()
    try:
        compiled = compile_grad(_chain, (x,))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes / 2, f"compiling held {peak} bytes"
    value, dx = compiled.fn(x)
    assert np.isclose(value, _chain(x))


def test_values_read_by_python_are_computed_from_the_statements(monkeypatch):
    """A branch on a value and float() of one see the real numbers (computed on demand, with
    what they depend on); what nothing reads stays a ghost."""
    from yota_s2s.frontend import abstract, trace_function
    monkeypatch.setattr(abstract, "CHECK", False)

    def branchy(x):
        y = np.exp(x) * 2.0
        z = np.cos(y)
        unread = np.tanh(x) @ x
        if np.sum(y) > 10.0:       # arms of two shapes: decided on the example, a guard
            w = y[:4]
        else:
            w = y
        return float(np.sum(w)) * np.sum(z) + unread

    x = np.linspace(0.0, 1.0, 8)
    tape, ev = trace_function(branchy, (x,))
    assert float(np.sum(np.exp(x) * 2.0)) > 10.0         # the branch taken
    assert len(tape.stmts) > 6
    by_hint = {s.out.hint: s.out for s in tape.stmts if s.outs and s.out.hint}
    assert ev.values.is_ghost(by_hint["z"]) and ev.values.is_ghost(by_hint["unread"])
    assert not ev.values.is_ghost(by_hint["y"])          # read by the branch
    np.testing.assert_allclose(ev.values[by_hint["z"]], np.cos(np.exp(x) * 2.0))
    assert not ev.values.is_ghost(by_hint["z"])
    from yota_s2s.compiler import compile_grad
    np.testing.assert_allclose(compile_grad(branchy, (x,)).fn(x)[0], branchy(x))


@pytest.mark.parametrize("fn, args", [
    (lambda x, s: np.sum((x.astype(np.float32) * s) ** 2), (np.arange(6.0).reshape(2, 3), 1.5)),
    (lambda x: np.sum(x.mean(axis=0, keepdims=True) * x.max(axis=1)[:, None]), (X,)),
    (lambda a, b: np.sum((a @ b) @ (b.T @ a[0].T)), (np.ones((2, 3, 4)), np.ones((4, 5)))),
    (lambda a, v: np.sum(v @ a[0] + (v @ v) * np.zeros_like(a[1, 0])), (np.ones((2, 4, 4)), np.ones(4))),
    (lambda x: np.sum(np.broadcast_to(x[:, None], (3, 4, 2)).transpose(2, 0, 1)
                      * np.full((2, 3, 4), 2, np.float32)), (X,)),
    (lambda x: np.sum(np.prod(x.astype(np.float32), axis=(0, 1))) + float(np.sum(x[1:])), (X,)),
    (lambda x: np.sum(np.where(x > 1, x, 0.0) * (x.reshape(-1) ** 2).reshape(3, 2)), (X,)),
    (lambda n: np.sum((n + 1) * 0.5 * n) + np.sum(n // 2) * 1.0, (np.arange(4),)),
])
def test_abstract_results_are_what_numpy_computes(fn, args, monkeypatch):
    """Every abstract result checked against the real one (YOTA_S2S_CHECK_ABSTRACT does this for
    the whole suite): shape, dtype, weak or not, ndarray or scalar."""
    from yota_s2s.compiler import compile_grad
    from yota_s2s.frontend import abstract
    monkeypatch.setattr(abstract, "CHECK", True)
    if all(np.asarray(a).dtype.kind != "f" for a in args):
        from yota_s2s.frontend import trace_function
        trace_function(fn, args)
        return
    compiled = compile_grad(fn, args, check=True)
    np.testing.assert_allclose(compiled.fn(*args)[0], fn(*args))


@pytest.mark.parametrize("shapes", [[(3,), ()], [(2, 1), (1, 4)], [(0,), (1,)], [()],
                                    [(5, 1, 3), (4, 1)], [(2,), (3,)], [(0,), (3,)],
                                    [(2, 3), (3, 2)], [(1, 0), (7, 1)]])
def test_shapes_broadcast_in_the_abstract_evaluation_as_numpy_broadcasts_them(shapes):
    from yota_s2s.frontend.abstract import _broadcast_shapes
    try:
        want = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError):
            _broadcast_shapes(shapes)
    else:
        assert _broadcast_shapes(shapes) == want
