"""The derivative of a loop region (yota_s2s/ad/regions.py): tape text in, tape text out.

Each test traces a loop that becomes a region (``MIN_STEPS`` steps or more), prints the
forward tape it starts from and the tape the reverse sweep makes of it, before the optimizing
passes (``passes=False``: exactly what ad/regions.py emits), and checks the gradients against
central finite differences in float64. The three shapes of a region's derivative: an
accumulator loop (the adjoint fused into the forward loop, nothing saved), a loop whose
backward step reads saved values (stacks), and one whose backward step makes a value again
from a saved one instead of saving it (the save-or-remake policy, ad/policies.py).
"""
import numpy as np
import pytest

from yota_s2s.ad import policies, regions
from yota_s2s.compiler import gradient_tape
from yota_s2s.ir.play import play
from yota_s2s.ir.printer import format_tape


def weighted_squares(x, w):
    s = 0.0
    for t in range(x.shape[0]):
        s = s + w * x[t] ** 2
    return s


def rnn(W, xs):
    h = xs[0]
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def diffuse(f):
    for _ in range(8):
        d = np.roll(f, 1) - np.roll(f, -1)
        f = f + 0.1 * d * d
    return np.sum(f)


def _tapes(fn, *args):
    forward, tape = gradient_tape(fn, args, passes=False, check=True)
    return format_tape(forward, locations=False), format_tape(tape, locations=False), tape


def _assert_gradients(fn, args, tape, eps=1e-6):
    """The tape's gradients, run by the interpreter, against central differences."""
    grads = play(tape, *args)[1:]
    assert len(grads) == len(args)
    for k, (a, g) in enumerate(zip(args, grads)):
        a = np.asarray(a, dtype=float)
        numeric = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            up, down = a.copy(), a.copy()
            up[i] += eps
            down[i] -= eps
            plus = [*args[:k], up if a.ndim else float(up), *args[k + 1:]]
            minus = [*args[:k], down if a.ndim else float(down), *args[k + 1:]]
            numeric[i] = (fn(*plus) - fn(*minus)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g), numeric, rtol=1e-6, atol=1e-8)


def _body(text: str) -> list[str]:
    """The tape's lines without its trailing notes (the loop's, the assumptions')."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


def test_an_accumulator_loop_runs_its_adjoint_in_the_forward_loop():
    """``s`` is a running sum: each step's adjoint runs right after the step, at ``ds`` (the
    sum's gradient, 1.0 here: the result), and the gradients are sums the loop carries;
    nothing is saved and no loop runs backwards."""
    args = (np.arange(8.0) * 0.1, 0.5)
    forward, text, tape = _tapes(weighted_squares, *args)
    assert _body(forward) == [
        "tape weighted_squares(x:f64[8], w:float) -> f64[]",
        "  s:f64[] = loop[region='range(x.shape[0]), 8 steps'] 0.0 x w",
        "    step t: s, x, w",
        "      t1:f64[] = getitem[key=t] x",
        "      t2:f64[] = pow t1 2",
        "      t3:f64[] = mul w t2",
        "      s:f64[] = add s t3",
        "      next s = (s,)",
        "  return s",
    ]
    assert _body(text) == [
        "tape weighted_squares(x:f64[8], w:float) -> f64[]",
        "  s:f64[], dx:f64[8], dw:float = loop[region='range(x.shape[0]), 8 steps'] 0.0 x w 1.0",
        "    step t: dx=zeros, dw=zeros, s, x, w, ds",
        "      t1:f64[] = getitem[key=t] x",
        "      t2:f64[] = pow t1 2",
        "      t3:f64[] = mul w t2",
        "      s:f64[] = add s t3",
        "      dw_part1:f64[] = mul ds t2",
        "      dt2:f64[] = mul w ds",
        "      t4:f64[] = mul dt2 2",
        "      t5:f64[] = pow t1 1",
        "      dt1:f64[] = mul t4 t5",
        "      dx:f64[8] = index_add dx t dt1",
        "      dw:f64[] = add dw dw_part1",
        "      next s, dx, dw = (s, dx, dw)",
        "  return s",
        "  grads x: dx, w: dw",
    ]
    _assert_gradients(weighted_squares, args, tape)


def test_a_state_read_before_and_after_the_step_is_saved_in_one_stack():
    """``h`` is read by the step's adjoint before the step (``W @ h``) and after it (tanh's
    ``y``): one stack of T + 1 rows, ``H[t] = h`` before the step and ``H[t + 1]`` after it;
    the backward loop runs reversed, carrying ``dh`` and the accumulators ``dW``, ``dxs``."""
    args = (np.array([[0.5, -0.2], [0.3, 0.4]]), np.linspace(-0.5, 0.5, 16).reshape(8, 2))
    _, text, tape = _tapes(rnn, *args)
    assert _body(text) == [
        "tape rnn(W:f64[2,2], xs:f64[8,2]) -> f64[]",
        "  h:f64[2] = getitem[key=0] xs",
        "  h:f64[2], H:f64[9,2] = loop[region='range(xs.shape[0]), 8 steps'] h W xs",
        "    step t: H=empty, h, W, xs",
        "      H:f64[9,2] = setitem_ H t h",
        "      t3:f64[2] = matmul W h",
        "      t4:f64[2] = getitem[key=t] xs",
        "      t5:f64[2] = add t3 t4",
        "      h:f64[2] = tanh t5",
        "      t6:int = add t 1",
        "      H:f64[9,2] = setitem_ H t6 h",
        "      next h, H = (h, H)",
        "  rnn:f64[] = sum h",
        "  dh:f64[2] = broadcast_to 1.0 (2,)",
        "  dh_1:f64[2], dW:f64[2,2], dxs_part1:f64[8,2] = "
        "loop[region='reversed range(xs.shape[0]), 8 steps'] dh W H",
        "    step t: dW=zeros, dxs_part1=zeros, dh, W, H",
        "      h_prev:f64[2] = getitem[key=t] H",
        "      t7:int = add t 1",
        "      h_new:f64[2] = getitem[key=t7] H",
        "      t8:f64[2] = mul h_new h_new",
        "      t9:f64[2] = sub 1 t8",
        "      dt5:f64[2] = mul dh t9",
        "      t10:f64[2,1] = getitem[key=(..., None)] dt5",
        "      dW_part1:f64[2,2] = mul t10 h_prev",
        "      dh:f64[2] = matmul dt5 W",
        "      dW:f64[2,2] = add dW dW_part1",
        "      dxs_part1:f64[8,2] = index_add dxs_part1 t dt5",
        "      next dh, dW, dxs_part1 = (dh, dW, dxs_part1)",
        "  t1:f64[2] = getitem[key=0] dxs_part1",
        "  t2:f64[2] = add t1 dh_1",
        "  dxs:f64[8,2] = setitem dxs_part1 0 t2",
        "  return rnn",
        "  grads W: dW, xs: dxs",
    ]
    _assert_gradients(rnn, args, tape)


_DIFFUSE_FORWARD = [
    "      t1:f64[4] = roll f_1 1",
    "      t2:f64[4] = roll f_1 -1",
    "      d:f64[4] = sub t1 t2",
    "      t3:f64[4] = mul 0.1 d",
    "      t4:f64[4] = mul t3 d",
    "      f_1:f64[4] = add f_1 t4",
]
_DIFFUSE_ADJOINT = [
    "      dt5:f64[4] = mul df d_1",
    "      dd_1:f64[4] = mul t5 df",
    "      dd_1_part1:f64[4] = mul 0.1 dt5",
    "      dd_1:f64[4] = add dd_1 dd_1_part1",
    "      dt2:f64[4] = neg dd_1",
    "      df_1_prev_part1:f64[4] = roll dt2 1",
    "      df_1_prev:f64[4] = add df df_1_prev_part1",
    "      df_1_prev_part2:f64[4] = roll dd_1 -1",
    "      df_1_prev:f64[4] = add df_1_prev df_1_prev_part2",
    "      next df = (df_1_prev,)",
    "  return diffuse",
    "  grads f: df",
]


def test_the_default_policy_saves_small_values_the_backward_step_reads():
    """Below ``REMAKE_MIN`` elements both ``d`` and ``0.1 * d`` are saved: two stacks."""
    args = (np.linspace(0.0, 1.0, 4),)
    _, text, tape = _tapes(diffuse, *args)
    assert _body(text) == [
        "tape diffuse(f:f64[4]) -> f64[]",
        "  f_1:f64[4], D:f64[8,4], V:f64[8,4] = loop[region='range(8), 8 steps'] f",
        "    step __1: D=empty, V=empty, f_1",
        *_DIFFUSE_FORWARD,
        "      D:f64[8,4] = setitem_ D __1 d",
        "      V:f64[8,4] = setitem_ V __1 t3",
        "      next f_1, D, V = (f_1, D, V)",
        "  diffuse:f64[] = sum f_1",
        "  df_1:f64[4] = broadcast_to 1.0 (4,)",
        "  df:f64[4] = loop[region='reversed range(8), 8 steps'] df_1 D V",
        "    step __2: df, D, V",
        "      d_1:f64[4] = getitem[key=__2] D",
        "      t5:f64[4] = getitem[key=__2] V",
        *_DIFFUSE_ADJOINT,
    ]
    _assert_gradients(diffuse, args, tape)


def test_a_policy_that_remakes_saves_one_stack(monkeypatch):
    """With ``RemakeCheap(min_size=1)`` the backward step makes ``0.1 * d`` again from the
    saved ``d`` (after reading it back) instead of saving it: one stack, the same numbers."""
    monkeypatch.setattr(regions, "POLICY", policies.RemakeCheap(min_size=1))
    args = (np.linspace(0.0, 1.0, 4),)
    _, text, tape = _tapes(diffuse, *args)
    assert _body(text) == [
        "tape diffuse(f:f64[4]) -> f64[]",
        "  f_1:f64[4], D:f64[8,4] = loop[region='range(8), 8 steps'] f",
        "    step __1: D=empty, f_1",
        *_DIFFUSE_FORWARD,
        "      D:f64[8,4] = setitem_ D __1 d",
        "      next f_1, D = (f_1, D)",
        "  diffuse:f64[] = sum f_1",
        "  df_1:f64[4] = broadcast_to 1.0 (4,)",
        "  df:f64[4] = loop[region='reversed range(8), 8 steps'] df_1 D",
        "    step __2: df, D",
        "      d_1:f64[4] = getitem[key=__2] D",
        "      t5:f64[4] = mul 0.1 d_1",
        *_DIFFUSE_ADJOINT,
    ]
    _assert_gradients(diffuse, args, tape)


def gated(W, xs):
    h = xs[0]
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h) * xs[t]
    return np.sum(h)


@pytest.mark.parametrize("policy, saved", [(policies.RemakeCheap(), False),
                                           (policies.SavePolicy(), True)],
                         ids=["remake_cheap", "save_all"])
def test_a_row_of_an_invariant_is_read_again_or_saved_as_the_policy_says(monkeypatch, policy,
                                                                         saved):
    """The step's adjoint reads ``xs[t]``: the default policy reads the row again in the
    backward step (``Step.indexing``); ``SavePolicy``, which makes nothing again but the index
    and the invariants, saves it in a stack of its own. The same numbers either way."""
    monkeypatch.setattr(regions, "POLICY", policy)
    args = (np.array([[0.5, -0.2], [0.3, 0.4]]), np.linspace(-0.9, 0.9, 16).reshape(8, 2))
    _, text, tape = _tapes(gated, *args)
    lines = text.splitlines()
    reads = lines[lines.index(next(l for l in lines if "reversed range" in l)) + 2:][:3]
    if saved:       # xs[t] (t5) and tanh's result (t4) saved; the backward loop reads no xs
        assert "      V:f64[8,2] = setitem_ V t t5" in lines
        assert reads == ["      t6:f64[2] = getitem[key=t] V",
                         "      t7:f64[2] = getitem[key=t] V_1",
                         "      h_prev:f64[2] = getitem[key=t] H_prev"]
    else:           # xs[t] read again from xs, an operand of the backward loop
        assert "      V:f64[8,2] = setitem_ V t t4" in lines
        assert reads == ["      t6:f64[2] = getitem[key=t] xs",
                         "      t7:f64[2] = getitem[key=t] V",
                         "      h_prev:f64[2] = getitem[key=t] H_prev"]
    _assert_gradients(gated, args, tape)
