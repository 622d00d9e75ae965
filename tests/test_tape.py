"""The IR: abstract values, the printer's text, the verifier and the interpreter."""
import operator

import numpy as np
import pytest

from yota_s2s.errors import InternalError
from yota_s2s.ir import verify
from yota_s2s.ir.printer import format_static, format_tape
from yota_s2s.ir.tape import Aval, Input, Lit, Stmt, Tape, Var
from yota_s2s.rules import RULES
from yota_s2s.rules.indexing import index_add

ADD, MUL = RULES.lookup(operator.add), RULES.lookup(operator.mul)
SUM, TANH = RULES.lookup(np.sum), RULES.lookup(np.tanh)
GETITEM, ZEROS = RULES.lookup(operator.getitem), RULES.lookup(np.zeros)
F64 = np.dtype("float64")


def small_tape():
    x = Var(Aval((3,), F64), hint="x")
    h = Var(Aval((3,), F64), hint="h")
    t = Var(Aval((3,), F64))
    s = Var(Aval((), F64), hint="loss")
    stmts = [Stmt((t,), MUL, (x, Lit(2.0))), Stmt((h,), TANH, (t,)),
             Stmt((s,), SUM, (h,), (("axis", 0),))]
    return Tape("loss", ("x",), [Input(x, 0)], stmts, result=s, arg_kinds=("array",)), x, s


def test_avals_print_short():
    assert str(Aval((3, 4), np.dtype("float32"))) == "f32[3,4]"
    assert str(Aval((), F64)) == "f64[]"
    assert str(Aval.of(1.5)) == "float"
    assert Aval.of(np.float32(1)).shape == () and not Aval.of(np.float32(1)).weak


@pytest.mark.parametrize("value,text", [
    (slice(None), ":"), (slice(1, None), "1:"), (slice(None, None, -1), "::-1"), (slice(1, 5, 2), "1:5:2"),
    (Ellipsis, "..."), ((slice(None), None), "(:, None)"), ((3,), "(3,)"),
    (np.float32(0.5), "f32(0.5)"), (np.dtype("float32"), "float32"), (np.array([1, 2]), "array([1, 2], int64)"),
    (np.zeros(0, int), "array([], int64)"), (np.zeros((2, 0), bool), "array([[], []], bool)"),
    (np.zeros((0, 1), int), "array([], shape=(0, 1), int64)"),      # its list hides the shape
])
def test_static_values_print_compactly(value, text):
    assert format_static(value) == text


def test_tape_prints_one_typed_statement_per_line():
    tape, _, _ = small_tape()
    assert format_tape(tape, locations=False) == (
        "tape loss(x:f64[3]) -> f64[]\n"
        "  t1:f64[3] = mul x 2.0\n"
        "  h:f64[3] = tanh t1\n"
        "  loss:f64[] = sum[axis=0] h\n"
        "  return loss")
    assert repr(tape) == "<Tape loss: 3 stmts>"
    assert format_tape(tape, shapes=False, locations=False).splitlines()[1] == "  t1 = mul x 2.0"


def test_unused_outputs_print_as_underscore():
    tape, x, s = small_tape()
    dead = Var(Aval((3,), F64), hint="dead")
    tape.stmts.insert(0, Stmt((dead,), TANH, (x,)))
    assert "  _:f64[3] = tanh x" in format_tape(tape, locations=False)


def test_verify_accepts_a_good_tape_and_run_computes_it():
    tape, _, _ = small_tape()
    verify.check(tape)
    result, _ = verify.run(tape, [np.array([0.1, 0.2, 0.3])], check_avals=True)
    assert result == pytest.approx(np.sum(np.tanh(np.array([0.2, 0.4, 0.6]))))


def test_verify_reports_use_before_definition_with_a_window():
    tape, x, s = small_tape()
    tape.stmts.reverse()
    with pytest.raises(InternalError) as info:
        verify.check(tape)
    message = str(info.value)
    assert "is used before it is defined" in message and ">> loss:f64[] = sum[axis=0] h" in message
    assert "please report" in message


def test_verify_reports_double_definition():
    tape, _, _ = small_tape()
    tape.stmts.append(tape.stmts[-1])
    with pytest.raises(InternalError, match="defined twice"):
        verify.check(tape)


def test_verify_rejects_reading_a_buffer_after_an_in_place_update():
    x = Var(Aval((3,), F64), hint="x")
    buf, buf2, later = Var(Aval((3,), F64)), Var(Aval((3,), F64)), Var(Aval((3,), F64))
    stmts = [Stmt((buf,), ZEROS, ((Lit(3),),)), Stmt((buf2,), RULES.lookup(index_add), (buf, Lit(0), x)),
             Stmt((later,), ADD, (buf, x))]
    tape = Tape("f", ("x",), [Input(x, 0)], stmts, result=later)
    with pytest.raises(InternalError, match="in-place update's target is used after"):
        verify.check(tape)


def test_run_checks_avals():
    tape, _, _ = small_tape()
    with pytest.raises(InternalError, match="shape"):
        verify.run(tape, [np.zeros(4)], check_avals=True)


# -- tape.play: the tracer on its own (ir/play.py) -----------------------------------------

def test_play_evaluates_a_traced_tape_on_new_arguments():
    import yota_s2s as ys
    from .programs import models
    r = np.random.default_rng(0)
    args = [r.standard_normal((3, 4)), r.standard_normal(4), r.standard_normal((4, 2)),
            r.standard_normal(2), r.standard_normal((5, 3)), np.eye(2)[np.arange(5) % 2]]
    value, tape = ys.trace(models.mlp, *args)
    assert tape.play(*args) == pytest.approx(value)
    other = [a * 0.5 if a.dtype.kind == "f" else a for a in args]
    assert tape.play(*other) == pytest.approx(models.mlp(*other))


def test_play_reads_struct_leaves_globals_and_gives_gradients():
    import yota_s2s as ys
    from yota_s2s.compiler import gradient_tape
    from .programs import outside, structs
    model = structs.MLP([3, 4, 2], np.random.default_rng(1))
    X = np.random.default_rng(2).standard_normal((3, 5))
    value, tape = ys.trace(structs.mlp_loss, model, X)
    assert tape.play(model, X) == pytest.approx(structs.mlp_loss(model, X))
    w = np.arange(3.0)
    _, tape = ys.trace(outside.least_squares, w)
    assert tape.play(w) == pytest.approx(outside.least_squares(w))
    _, grad = gradient_tape(outside.least_squares, [w])
    value, dw = grad.play(w)
    expected = ys.simplegrad(outside.least_squares, w)(w)
    assert value == pytest.approx(expected[0]) and np.allclose(dw, expected[1])


def _scattered(x, v):
    a = x * 1.0
    np.add.at(a, np.array([0, 2, 0]), v)
    return a, np.sum(a ** 2)


def test_play_returns_tuples_and_never_writes_into_arguments():
    import yota_s2s as ys
    x, v = np.arange(5.0), np.ones(3)
    before = x.copy()
    value, tape = ys.trace(_scattered, x, v)
    played = tape.play(x, v)
    assert isinstance(played, tuple) and len(played) == 2
    np.testing.assert_allclose(played[0], value[0])
    assert played[1] == pytest.approx(value[1])
    np.testing.assert_array_equal(x, before)


SCALES = [2.0, 3.0]      # a list read from outside: its length checked at each call


def _reading_outside():
    W = np.arange(3.0)

    def f(x):
        noise = np.random.randn(3)
        return np.sum((W * x) ** 2 * SCALES[1] + noise)
    return f


def test_play_reads_closures_checks_static_fields_and_draws_as_the_code_does():
    import yota_s2s as ys
    f, x = _reading_outside(), np.array([0.5, -1.0, 2.0])
    np.random.seed(3)
    value, tape = ys.trace(f, x)
    prims = [s.prim.name for s in tape.stmts]
    assert {"draw", "external", "external_check"} <= set(prims), prims
    np.random.seed(3)
    assert tape.play(x, fn=f) == pytest.approx(value, rel=1e-14)
    np.random.seed(4)
    noise = np.random.randn(3)
    np.random.seed(4)
    want = np.sum((np.arange(3.0) * x) ** 2 * 3.0 + noise)
    assert tape.play(x, fn=f) == pytest.approx(want, rel=1e-14)
    with pytest.raises(ys.YotaError, match=r"read from the function's closure; play needs the "
                       r"function to read it") as info:
        tape.play(x)
    assert "tape.play(*args, fn=f)" in info.value.hint
    SCALES.append(4.0)
    try:
        with pytest.raises(ys.YotaError, match=r"SCALES.* was 2 when traced and is 3 now"):
            tape.play(x, fn=f)
    finally:
        SCALES.pop()


def test_a_statement_s_uses_follow_its_operands_after_replace():
    """``Stmt.uses()`` is computed once per statement (passes ask often); a statement made by
    ``replace`` has the uses of its own operands, and the cache is no part of equality."""
    x, y = Var(Aval((3,), F64), hint="x"), Var(Aval((3,), F64), hint="y")
    t = Var(Aval((3,), F64))
    stmt = Stmt((t,), GETITEM, (x, (Lit(slice(None)), y)))
    assert stmt.uses() == (x, y) and stmt.uses() is stmt.uses()
    moved = stmt.replace(args=(y, (x, Lit(1), x)))
    assert moved.uses() == (y, x, x) and stmt.uses() == (x, y)
    again = Stmt((t,), GETITEM, (x, (Lit(slice(None)), y)))
    assert again == stmt and hash(again) == hash(stmt)      # one has its uses cached, one not
    assert "_uses" not in repr(stmt)


def test_an_analysis_with_inlined_values_made_from_another_is_the_same():
    """``Analysis.with_inlined`` (codegen: the reads of values written inside their reader)
    gives what ``Analysis(tape, inlined)`` does, and leaves the analysis it came from as it was."""
    from yota_s2s.ir.analysis import Analysis
    x, y = Var(Aval((3,), F64), hint="x"), Var(Aval((3,), F64), hint="y")
    t, u, v = (Var(Aval((3,), F64)) for _ in range(3))
    r, s = Var(Aval((3,), F64)), Var(Aval((), F64), hint="loss")
    stmts = [Stmt((t,), MUL, (x, y)), Stmt((u,), TANH, (x,)),
             Stmt((r,), GETITEM, (u, Lit(slice(None)))), Stmt((v,), ADD, (t, r)),
             Stmt((s,), SUM, (v,), (("axis", 0),))]
    tape = Tape("loss", ("x", "y"), [Input(x, 0), Input(y, 1)], stmts, result=s,
                arg_kinds=("array", "array"))
    facts = Analysis(tape)
    before = (dict(facts.last), dict(facts.last_memory))
    for inlined in ({t}, {u}, {t, v}, {u, r}):
        made, want = facts.with_inlined(inlined), Analysis(tape, inlined)
        assert made.last == want.last and made.last_memory == want.last_memory
        assert made.readers == want.readers and made.members == want.members
        assert made.returned == want.returned and made.arguments == want.arguments
    assert Analysis(tape, {t}).last[x] == 3 and facts.last[x] == 1     # x * y is read at t + r
    assert (facts.last, facts.last_memory) == before
