"""ir/names.py, the one naming pass: tape text in (a program), names out (the printed tape,
which reads its names from the same Namer as both codegen forms and the review page)."""
from __future__ import annotations

import numpy as np

from yota_s2s.compiler import gradient_tape
from yota_s2s.ir.names import Namer, namer_of
from yota_s2s.ir.printer import format_tape

from .programs.loop_regions import rnn_batched, rnn_batched_args


def twice(W, x):
    h = np.tanh(W @ x)
    h = np.tanh(W @ h)
    return np.sum(h * h)


def words(y, dy, xp, x):
    sum = np.sum(y * dy)        # noqa: A001 (a user's names that shadow builtins)
    max = np.max(xp * x)        # noqa: A001
    return sum * max + np.sum(x)


def keyed(p):
    return np.sum(p["x²"] * p["µ"])


def text(f, *args) -> str:
    return format_tape(gradient_tape(f, args)[1], locations=False)


def test_source_names_their_versions_temporaries_and_gradients():
    """A name bound twice is ``h``, then ``h_1``; other values are ``t1, t2, ...`` in
    statement order; a gradient is ``d`` + its primal's name (``dt2`` for ``t2``); the
    gradient accumulated from two uses keeps its name as a running sum, its other
    contribution is a part (``dW_part1``, never ``dW_1``, which reads as the gradient of
    ``W_1``)."""
    assert text(twice, np.ones((3, 3)), np.ones(3)) == """\
tape twice(W:f64[3,3], x:f64[3]) -> f64[]
  t1:f64[3] = matmul W x
  h:f64[3] = tanh t1
  t2:f64[3] = matmul W h
  h_1:f64[3] = tanh t2
  t3:f64[3] = mul h_1 h_1
  twice:f64[] = sum t3
  dh_1:f64[3] = add h_1 h_1
  t4:f64[3] = sub 1 t3
  dt2:f64[3] = mul dh_1 t4
  t5:f64[3,1] = getitem[key=(..., None)] dt2
  dW:f64[3,3] = mul t5 h
  dh:f64[3] = matmul dt2 W
  t6:f64[3] = mul h h
  t7:f64[3] = sub 1 t6
  dt1:f64[3] = mul dh t7
  t8:f64[3,1] = getitem[key=(..., None)] dt1
  dW_part1:f64[3,3] = mul t8 x
  dW:f64[3,3] = add dW dW_part1
  dx:f64[3] = matmul dt1 W
  return twice
  grads W: dW, x: dx"""


def test_rule_words_module_names_and_builtins_are_renamed():
    """``y`` and ``dy`` are the rules' words (``dy * (1 - y * y)``): the parameters become
    ``y_`` and ``dy_`` (their gradients ``dy__1``, ``ddy_``); ``xp`` is the module's array
    library: ``xp_1``; a value the source calls ``sum`` or ``max`` is ``sum_1``, ``max_1``."""
    assert text(words, *(np.arange(3.0) + k for k in range(4))) == """\
tape words(y_:f64[3], dy_:f64[3], xp_1:f64[3], x:f64[3]) -> f64[]
  t1:f64[3] = mul y_ dy_
  sum_1:f64[] = sum t1
  t2:f64[3] = mul xp_1 x
  max_1:f64[] = max t2
  t3:f64[] = mul sum_1 max_1
  t4:f64[] = sum x
  words:f64[] = add t3 t4
  t5:bool[3] = eq t2 max_1
  t6:f64[3] = mul sum_1 t5
  t7:i64[] = sum t5
  dt2:f64[3] = div t6 t7
  dxp_1:f64[3] = mul dt2 x
  dx_part1:f64[3] = mul xp_1 dt2
  dx:f64[3] = add 1.0 dx_part1
  dy__1:f64[3] = mul max_1 dy_
  ddy_:f64[3] = mul y_ max_1
  return words
  grads y_: dy__1, dy_: ddy_, xp_1: dxp_1, x: dx"""


def test_dict_keys_become_identifiers_in_their_normal_form():
    """A leaf of a dict argument is named after its key, made an identifier in the NFKC form
    Python compares names in: ``x²`` is ``x2``, the micro sign ``µ`` is the Greek ``μ``."""
    tape = text(keyed, {"x²": np.ones(2), "µ": np.ones(2)})
    assert tape.splitlines()[0] == "tape keyed(x2:f64[2], μ:f64[2]) -> f64[]"
    assert tape.endswith("  dx2:f64[2] = copy μ\n  dμ:f64[2] = copy x2\n  return keyed\n"
                         "  grads x2: dx2, μ: dμ")


def test_a_loop_body_names_its_carried_values_as_the_source_does():
    """The forward step makes ``h`` from ``h``; the backward step reads the state before and
    after the step from the stack as ``h_prev`` and ``h_new``, carries ``dh``, and calls the
    gradient of the forward step's ``t9`` ``dt9``."""
    tape = text(rnn_batched, *rnn_batched_args(T=8, B=2, D=3, H=4))
    assert "\n    step t: H=empty, h, total, xs, Wx, Wh, b\n" in tape
    assert "\n      t9:f64[2,4] = add t8 b\n      h:f64[2,4] = tanh t9\n" in tape
    assert "\n    step t: dh=zeros, dxs=zeros, dWh=zeros, H, Wx, Wh\n" \
           "      h_prev:f64[2,4] = getitem[key=t] H\n      t13:int = add t 1\n" \
           "      h_new:f64[2,4] = getitem[key=t13] H\n      dh:f64[2,4] = add dh h_new\n" in tape
    assert "\n      dt9:f64[2,4] = mul dh t15\n" in tape


def test_names_do_not_depend_on_var_ids():
    """The same program traced twice (new Vars, new ids) gets the same names."""
    args = (np.ones((3, 3)), np.ones(3))
    first, second = gradient_tape(twice, args)[1], gradient_tape(twice, args)[1]
    assert {v.id for s in first.stmts for v in s.outs}.isdisjoint(
        {v.id for s in second.stmts for v in s.outs})
    assert format_tape(first) == format_tape(second)


def test_the_namer_hands_out_free_names():
    namer = Namer({"a", "t1", "t2"})
    assert [namer.fresh("a"), namer.fresh("a"), namer.fresh("y"), namer.fresh("y")] == \
        ["a_1", "a_2", "y_", "y_1"]
    assert [namer.param("W"), namer.param("W"), namer.param("xp")] == ["W", "W_1", "xp_1"]
    assert namer.temp() == "t3"
    assert [namer.suffixed("dh", "_part"), namer.suffixed("dh", "_part")] == \
        ["dh_part1", "dh_part2"]
    assert [namer.fresh("sum"), namer.fresh("x²")] == ["sum_1", "x2"]


def test_a_finished_tape_keeps_its_names_unless_they_clash():
    """``assign_names`` keeps the names as the tape's side table; asked for names that avoid
    ``h`` (a name the module needs elsewhere), the tape is named again around it."""
    _, tape = gradient_tape(twice, (np.ones((3, 3)), np.ones(3)))
    h, h_1 = tape.stmts[1].out, tape.stmts[3].out
    assert tape.namer is not None and namer_of(tape)[h] == "h"
    renamed = namer_of(tape, taken={"h"})
    assert (renamed[h], renamed[h_1]) == ("h_1", "h_2") and tape.namer[h] == "h"
