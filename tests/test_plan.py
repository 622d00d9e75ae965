"""The codegen plan (codegen/plan.py): plan text in, as tape tests assert tape text.

Each test compiles a small program's gradient and asserts the plan that its module is written
from (codegen/plan_text.py, ``yota-s2s trace --plan``): a straight-line function in the
buffered form (inlining, values written in place and into work arrays, returned arrays,
shared names) and in the plain form (inlining alone), a loop region (a stack in a work array,
a state made in its row, a running sum and rows assigned once in the returned arrays),
scalar mode (a vector read as Python floats, an accumulator written an element at a time) and
a cache-blocked chain.
"""
from __future__ import annotations

import ast

import numpy as np

import yota_s2s as ys
from yota_s2s import cli
from yota_s2s.codegen.module import function_plans, write_functions
from yota_s2s.codegen.plan_text import plan_text
from yota_s2s.codegen.render import Comment, unparse
from yota_s2s.compiler import gradient_tape


def layer(W, b, x):
    h = np.tanh(x @ W + b)
    return np.sum(h * h)


def rnn(W, h0, xs):
    h = h0
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        loss = loss + np.sum(h)
    return loss


def poly(x):
    return x[0] * x[1] + x[2] * x[0]


def planned(f, *args, buffers: bool = True) -> str:
    _, tape = gradient_tape(f, args, device="cpu" if buffers else None, review=not buffers)
    return plan_text(function_plans([tape], buffers=buffers)[0])


LAYER = """\
plan layer (buffered)
  inline t5
  inline t6
  memory h: matmul in buf1
  memory h: ufunc over h in buf1
  memory h: ufunc over h in buf1
  memory t3: ufunc in buf2
  memory layer: allocated by its call
  memory dh: ufunc over h in buf1
  memory t4: ufunc over t3 in buf2
  memory dt2: ufunc over dh in buf1
  memory db: reduce in returned gradient (1, ())
  memory dx: matmul in returned gradient (2, ())
  memory dW: matmul in returned gradient (0, ())
  work array buf1 float64(4, 2): h h h dh dt2
  work array buf2 float64(4, 2): t3 t4
  work array buf3 float64(): t3.sum()
  name t1 -> h
  name t2 -> h
"""

LAYER_PLAIN = """\
plan layer (plain)
  inline t1
  inline t2
  inline t4
  inline t5
  inline t6
"""


def test_a_straight_line_function() -> None:
    args = np.ones((3, 2)), np.ones(2), np.ones((4, 3))
    assert planned(layer, *args) == LAYER
    assert planned(layer, *args, buffers=False) == LAYER_PLAIN


RNN = """\
plan rnn (buffered)
  memory dW: made in returned gradient (0, ())
  memory dxs: made in returned gradient (2, ())
  work array buf1 float64(21, 3): H
  work array buf2 float64(): h.sum()
  work array buf3 float64(3,): t7
  work array buf4 float64(3, 3): dW_part1
  deliver dh0 -> gradient (1, ())
  region h, loss, H = loop (20 steps)
    keep W
    keep xs
    start h: h0
    start loss: 0.0
    start H: in buf1, a stack's work array
    first row H[0] = h
    left out H = setitem_ H t h
    written h = xp.tanh(t1, out=t1)
    left out H = setitem_ H t5 h
    plan rnn (body)
      inline t2
      inline t4
      inline t5
      memory H: made in the carried array H
      memory H: made in the carried array H
      memory t1: matmul in row H[t + 1]
      memory t1: ufunc over t1 in row H[t + 1]
      memory t4: allocated by its call
      memory loss: allocated by its call
      memory t5: allocated by its call
      memory H: made in the carried array H
      name t3 -> t1
  region dh0, dW, dxs = reversed loop (20 steps)
    keep W
    keep H
    summed dW_part1
    start dh: xp.zeros
    start dW: _result(out, 0, (3, 3)), zero-filled
    start dxs: _result(out, 2, (20, 3))
    rows once dxs
    written dW += dW_part1
    written dxs[t] = dt3
    result dh0 = dh
    plan rnn (body)
      inline t6
      inline t9
      memory dh: made in the carried array dh
      memory dxs: made in the carried array dxs
      memory t6: allocated by its call
      memory dh: ufunc over dh in the carried array dh
      memory t7: ufunc in buf3
      memory t7: ufunc over t7 in buf3
      memory dt3: ufunc over dh in the carried array dh
      memory dW_part1: ufunc in buf4
      memory dh: allocated by its call
      memory dxs: made in the carried array dxs
      work array buf3 float64(3,): t7 t7
      work array buf4 float64(3, 3): dW_part1
      name t8 -> t7
"""


def test_a_loop_region_with_a_stack_and_running_sums() -> None:
    """The forward loop saves each state in its row of the stack ``H`` (a work array): the
    first row before the loop, each step's state made in its row (the save left out); the
    backward loop adds ``dW += dW_part1`` in the returned array and assigns each row of ``dxs``
    once. Each region's body has a plan of its own."""
    assert planned(rnn, np.ones((3, 3)), np.ones(3), np.ones((20, 3))) == RNN


def test_a_region_is_written_as_a_for_loop_from_its_plan() -> None:
    """Each region is an ``ast.For`` among the function's statements (its blocks' comments
    ``Comment`` nodes inside it), and the statements its plan writes another way are the ones
    in the loop's body."""
    _, tape = gradient_tape(rnn, (np.ones((3, 3)), np.ones(3), np.ones((20, 3))), device="cpu")
    written = write_functions([tape], buffers=True)[0][0]
    loops = [node for block in written.blocks for node in block.stmts
             if isinstance(node, ast.For)]
    assert [unparse(loop.iter) for loop in loops] == ["range(20)", "range(19, -1, -1)"]
    assert all(isinstance(node, ast.stmt) for loop in loops for node in loop.body)
    assert any(isinstance(node, Comment) for node in loops[1].body)
    for loop, region in zip(loops, written.emitter.plan.regions):
        rewritten = list(region.running.values())
        assert [unparse(node) for node in rewritten] == \
            [unparse(node) for node in loop.body if any(node is n for n in rewritten)]
    assert [unparse(node) for node in written.emitter.plan.regions[1].running.values()] == \
        ["dW += dW_part1", "dxs[t] = dt3"]


def test_the_module_written_from_the_plan_is_right() -> None:
    """The buffered module of ``rnn`` (its loops written from their plans) against central
    differences in float64."""
    rng = np.random.default_rng(1)
    args = [rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(20, 3))]
    value, *grads = ys.simplegrad(rnn, *args)(*args)
    assert np.isclose(value, rnn(*args), rtol=1e-14)
    for arg, grad in zip(args, grads):
        numeric = np.zeros_like(arg)
        for i in np.ndindex(arg.shape):
            step = np.zeros_like(arg)
            step[i] = 1e-6
            moved = [a + step if a is arg else a for a in args]
            back = [a - step if a is arg else a for a in args]
            numeric[i] = (rnn(*moved) - rnn(*back)) / 2e-6
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


POLY = """\
plan poly (buffered)
  inline t3
  inline t5
  inline dt1
  float x0
  float x1
  float t3
  float x2
  float t5
  float poly
  float dt1
  unpack x: x0 x1 x2
  element x0 = x[0]
  element x1 = x[1]
  element x2 = x[2]
  accumulator dx: dx dx dx dx (once, together); made at dx
  memory t3: allocated by its call
  memory t5: allocated by its call
  memory poly: allocated by its call
  memory dt1: allocated by its call
  deliver dx -> gradient (0, ())
"""


def test_scalar_mode() -> None:
    assert planned(poly, np.ones(3)) == POLY


def chained(x, w):
    return np.sum(np.tanh(x * w) + w)


CHAINED = """\
plan chained (buffered)
  memory t1: ufunc in returned gradient (1, ())
  memory t1: ufunc over t1 in returned gradient (1, ())
  memory t3: ufunc in buf1
  memory chained: allocated by its call
  memory dt1: ufunc over t1 in returned gradient (1, ())
  memory dt1: ufunc over dt1 in returned gradient (1, ())
  memory dx: ufunc in returned gradient (0, ())
  memory dw_part1: ufunc over dt1 in returned gradient (1, ())
  memory dw: ufunc over dw_part1 in returned gradient (1, ())
  work array buf1 float64(32768,): t3
  work array buf2 float64(): t3.sum()
  name t2 -> t1
  name t4 -> dt1
""" + "  chain t1 t1 t3 chained dt1 dt1 dx dw_part1 dw: (200000,), 32768 rows a block; " \
    "sums chained; block arrays buf1\n"


def test_a_blocked_chain() -> None:
    """Over 200,000 elements the elementwise statements run in blocks of 32,768 (blocks.py):
    the sum is accumulated a block at a time and the work array ``buf1`` shrinks to a block;
    the gradient of ``w`` is made in its returned array, in place, from ``t1`` on."""
    assert planned(chained, np.ones(200_000), np.ones(200_000)) == CHAINED


MODEL = '''\
import numpy as np


def layer(W, b, x):
    h = np.tanh(x @ W + b)
    return np.sum(h * h)
'''


def test_trace_prints_the_plan(tmp_path, monkeypatch, capsys) -> None:
    """``yota-s2s trace --plan``: the buffered form's plan; with ``--after`` (a stage of the
    plain form's passes) it is refused."""
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    command = ["trace", "model.py", "--func", "layer", "--arg", "W=float64[3,2]",
               "--arg", "b=float64[2]", "--arg", "x=float64[4,3]", "--plan", "--color", "never"]
    assert cli.main(command) == cli.OK
    assert capsys.readouterr().out == LAYER + "\n"
    assert cli.main(command + ["--after", "bodies"]) == cli.USAGE
    assert "--plan prints the plan of the finished buffered form" in capsys.readouterr().err
