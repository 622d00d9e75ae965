"""The reverse sweep: adjoint statements, accumulation, un-broadcasting, scatter buffers.

Tapes here are printed before the optimizing passes (``passes=False``) so they show exactly
what ad/sweep.py emits.
"""
import math

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import gradient_tape
from yota_s2s.ir.printer import format_tape
from yota_s2s.rules import RULES

from .programs import models


def reuse(x, b):
    y = x * x + b
    return np.sum(y * x)


def same_shapes(x, y):
    return np.sum(x * y)


def compare_and_int(x, k):
    return np.sum(x * (x > 0)) * k


def backward_text(fn, *args, passes=False):
    _, tape = gradient_tape(fn, args, passes=passes, check=True)
    return format_tape(tape, locations=False), tape


def test_reused_values_accumulate_and_broadcast_axes_are_summed():
    text, tape = backward_text(reuse, np.ones((2, 3)), np.ones(3))
    assert text == (
        "tape reuse(x:f64[2,3], b:f64[3]) -> f64[]\n"
        "  t1:f64[2,3] = mul x x\n"
        "  y_:f64[2,3] = add t1 b\n"             # y: the rules' word for a result
        "  t2:f64[2,3] = mul y_ x\n"
        "  reuse:f64[] = sum t2\n"
        "  dt2:f64[2,3] = broadcast_to 1.0 (2, 3)\n"
        "  dy_:f64[2,3] = mul dt2 x\n"
        "  dx:f64[2,3] = mul y_ dt2\n"           # a running sum keeps the total's name
        "  db:f64[3] = sum[axis=0] dy_\n"
        "  dx_part1:f64[2,3] = mul dy_ x\n"
        "  dx:f64[2,3] = add dx dx_part1\n"
        "  dx_part2:f64[2,3] = mul x dy_\n"
        "  dx:f64[2,3] = add dx dx_part2\n"
        "  return reuse\n"
        "  grads x: dx, b: db")


def test_no_unbroadcast_where_shapes_agree():
    text, _ = backward_text(same_shapes, np.ones(3), np.ones(3))
    assert "sum[" not in text and "reshape" not in text


def test_indexing_accumulates_into_one_buffer_per_array():
    text, tape = backward_text(models.polynomial, np.ones(8), passes=True)
    assert text.count("= zeros") == 1
    # one per element: the 20 reads x[i] in the source add their parts first (8 elements)
    assert text.count("index_add") == 8
    assert sorted(int(line.split()[-2]) for line in text.splitlines() if "index_add" in line) \
        == list(range(8))
    assert tape.grads[0].hint is None and "grads x: dx" in text


def test_indexing_that_keeps_every_element_is_a_reshape():
    text, _ = backward_text(models.seed_loss, np.ones((2, 3)), np.ones(2), np.ones((3, 4)))
    assert "zeros" not in text and "db:f64[2] = reshape" in text


def test_non_float_and_nodiff_values_get_no_gradient():
    text, tape = backward_text(compare_and_int, np.ones(3), 4)
    assert [i.var.hint for i in tape.inputs] == ["x"]        # the int is static, not an input
    assert "gt x 0" in text and "grads x: dx" in text
    assert not any(s.prim.name == "gt" and s.rule for s in tape.stmts)   # no rule ran for >


def test_backward_statements_carry_their_rule():
    _, tape = gradient_tape(models.mlp, (np.ones((4, 3)), np.ones(3), np.ones((3, 2)), np.ones(2),
                                        np.ones((5, 4)), np.eye(2)[[0, 1, 0, 1, 1]]), passes=False)
    rules = {s.rule for s in tape.stmts if s.rule}
    assert "tanh x: dy * (1 - y * y)" in rules
    assert any(r.startswith("matmul x1") for r in rules)
    forward = [s for s in tape.stmts if not s.rule]
    assert all(s.loc is not None for s in tape.stmts) and len(forward) < len(tape.stmts)


def test_python_float_arguments_get_python_float_gradients():
    df = ys.simplegrad(models.python_floats, 0.4, -1.2)
    value, da, db = df(0.4, -1.2)
    assert type(da) is float and type(db) is float
    assert value == pytest.approx(models.python_floats(0.4, -1.2))
    eps = 1e-6
    assert da == pytest.approx((models.python_floats(0.4 + eps, -1.2) - models.python_floats(0.4 - eps, -1.2)) / (2 * eps), rel=1e-6)
    assert math.isfinite(db)


def test_an_operand_without_a_rule_is_a_clear_error(tmp_path):
    rules = RULES.copy()
    rules.primitive(np.cumsum, "a, axis=None, dtype=None")
    rules.rules = {k: v for k, v in rules.rules.items() if k[0].fn is not np.cumsum}
    with pytest.raises(ys.NoRuleError) as info:
        gradient_tape(lambda x: np.sum(np.cumsum(x)), (np.ones(3),), rules=rules)
    assert "cumsum has no derivative rule for its operand 'a'" in str(info.value)
    assert "ys.diffrule(" in str(info.value) and "test_backward.py" in str(info.value)


def test_an_error_in_a_sweep_leaves_the_evaluator_as_it_was():
    """The sweep emits through the evaluator's context managers (``deriving``, ``at``,
    ``collect``): a rule missing halfway leaves its statement list, mode, location and rule
    text as they were, for whatever runs next on it."""
    from yota_s2s.ad.backward import backward
    from yota_s2s.frontend import trace_function
    rules = RULES.copy()
    rules.primitive(np.cumsum, "a, axis=None, dtype=None")
    rules.rules = {k: v for k, v in rules.rules.items() if k[0].fn is not np.cumsum}
    forward, ev = trace_function(lambda x: np.sum(np.sin(np.cumsum(x)) * x), (np.ones(3),), rules)
    stmts = ev.stmts
    with pytest.raises(ys.NoRuleError, match="cumsum has no derivative rule"):
        backward(forward, ev)
    assert ev.stmts is stmts and len(stmts) == len(forward.stmts)
    assert (ev.backward_mode, ev.loc_override, ev.rule_text) == (False, None, None)


def test_the_evaluators_context_managers_restore_what_they_set_on_an_error():
    from yota_s2s.frontend.evaluator import Evaluator
    from yota_s2s.frontend.frame import Frame
    ev = Evaluator(RULES)
    outer, frame = ev.stmts, Frame(None, {}, {}, None)
    ev.loc_override, ev.rule_text = None, "outer rule"
    with pytest.raises(ZeroDivisionError):
        with ev.collect() as inner, ev.at("somewhere", rule="inner rule"), ev.in_frame(frame):
            assert ev.stmts is inner and inner is not outer and ev.frame is frame
            assert (ev.loc_override, ev.rule_text) == ("somewhere", "inner rule")
            1 / 0
    assert ev.stmts is outer and ev.frame is None
    assert (ev.loc_override, ev.rule_text) == (None, "outer rule")
    with pytest.raises(ZeroDivisionError):
        with ev.at(rule="only the rule"):
            ev.loc_override = "set inside"      # not given to at: not restored
            1 / 0
    assert (ev.loc_override, ev.rule_text) == ("set inside", "outer rule")
    with pytest.raises(ZeroDivisionError):
        with ev.deriving([]) as stmts:
            assert ev.backward_mode and ev.stmts is stmts and ev.rule_text is None
            1 / 0
    assert not ev.backward_mode and ev.stmts is outer
    assert (ev.loc_override, ev.rule_text) == ("set inside", "outer rule")


def test_a_non_scalar_result_is_refused():
    with pytest.raises(ys.YotaError, match="returns an array of float64\\[3\\]; gradients need a scalar"):
        gradient_tape(lambda x: x * 2.0, (np.ones(3),))


def test_the_backward_pass_changes_no_forward_value():
    """A rule may return a forward value itself (here ``x2``, an intermediate): that it is
    a gradient is recorded in the gradient tape, and the forward tape prints as before."""
    from yota_s2s.ad.backward import backward
    from yota_s2s.frontend import trace_function

    from .programs import custom
    rules = RULES.copy()
    rules.diffrule(custom.blend, "x1", "x2")

    def f(x):
        return np.sum(custom.blend(x, np.sin(x)))
    forward, ev = trace_function(f, (np.ones(3),), rules)
    before = format_tape(forward, locations=False)
    tape = backward(forward, ev)
    assert format_tape(forward, locations=False) == before
    assert "dx_part1:f64[3] = sin x" not in before and "t1:f64[3] = sin x" in before
    assert "dx_part1:f64[3] = sin x" in format_tape(tape, locations=False)


def _log_softmax(x):
    shifted = x - np.max(x, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


def _softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def test_the_max_of_a_stable_log_softmax_or_softmax_gets_no_gradient_term():
    """Its terms cancel exactly (rules/reductions.py max_shift): nothing of the max's rule is
    written, and the gradient is still right."""
    x, w = np.random.default_rng(1).standard_normal((2, 4, 3))
    # named functions: Python 3.10 cannot tell two lambdas on one line apart

    def log_softmax_loss(x, w):
        return np.sum(w * _log_softmax(x))

    def softmax_loss(x, w):
        return np.sum(w * _softmax(x))
    for f in (log_softmax_loss, softmax_loss):
        text, _ = backward_text(f, x, w, passes=True)
        assert "max[" in text and " eq " not in text       # max_grad's `a == y`: not emitted
        ys.gradcheck(f, x, w)


def test_a_max_shift_read_elsewhere_keeps_its_gradient():
    """``shifted`` also returned in a sum: the result depends on the max, whose term stays."""
    def f(x):
        shifted = x - np.max(x, axis=1, keepdims=True)
        return np.sum(shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))) \
            + np.sum(shifted ** 2)
    x = np.random.default_rng(2).standard_normal((4, 3))
    text, _ = backward_text(f, x, passes=True)
    assert " eq " in text
    ys.gradcheck(f, x)


def test_a_rule_set_declares_terms_that_cancel():
    rules = RULES.copy()
    seen = []

    @rules.cancels
    def nothing(tape, facts):
        seen.append(len(tape.stmts))
        return set()
    assert nothing in rules.cancellations and nothing not in RULES.cancellations
    gradient_tape(lambda x: np.sum(np.sin(x)), (np.ones(3),), rules)
    assert seen == [2]
