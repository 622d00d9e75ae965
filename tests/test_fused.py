"""The fused cupy printer (``device="cuda", engine="fused"``, codegen/cupy_form.py) and CUDA-graph
replay (yota_s2s/cuda_graph.py), checked on a CPU with tests/fakecupy.py standing in for cupy.

fakecupy's kernels evaluate the printer's CUDA C subset with numpy, one operation at a time, so
the fused gradient equals the unfused numpy gradient to the last bits here (the referee is
1e-12 relative, as on a device). tools/fused_check.py runs both whole tables; this file runs a
few cases of each kind.
"""
from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad
from yota_s2s.cuda_graph import CudaGraph
from yota_s2s.errors import UsageError

from . import fakecupy
from .fakecupy import compare
from .test_gradcheck import CASES
from .test_loops import CASES as LOOPS


@pytest.fixture
def cupy(monkeypatch):
    fake = fakecupy.module()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


def mlp(W1, b1, W2, x, y):
    h = np.tanh(x @ W1 + b1)
    p = h @ W2
    err = np.sum((p - y) ** 2, axis=1)
    return np.sum(np.sqrt(err + 1.0)) + 0.01 * np.sum(W1 * W1)


def mlp_args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 8)), rng.standard_normal(8), rng.standard_normal((8, 2)),
            rng.standard_normal((16, 3)), rng.standard_normal((16, 2)))


# one or two cases of each kind the printer meets: broadcasting, the math functions, maximum's
# preamble function, sums over axes, slices, in-place adds, xp.add.at, float32 (left numpy)
TABLE = ["tanh[2, 3]", "pow_int[2, 3]", "maximum[2, 1][1, 3]", "hypot[2, 3][3]", "div[][2, 3]",
         "sum_keepdims", "mean_axis", "diff", "roll", "logsumexp_stable", "index_add_buffer",
         "clip", "norm_axis_keepdims", "astype"]
LOOP_TABLE = ["rnn", "leaky"]


@pytest.mark.parametrize("name", TABLE)
def test_the_fused_gradient_is_the_numpy_gradient(name, cupy, tmp_path):
    case = next(c for c in CASES if c.name == name)
    args = case.make_args(np.random.default_rng(1))
    want = compile_grad(case.fn, args, buffers=False).fn(*args)
    fused = compile_grad(case.fn, args, device="cuda", engine="fused", out_dir=tmp_path,
                         module_name="fused_case")
    assert compare(fused.fn(*args), want) is None


@pytest.mark.parametrize("name", LOOP_TABLE)
def test_a_loop_region_runs_its_step_in_kernels(name, cupy, tmp_path):
    _, fn, make, _ = next(c for c in LOOPS if c[0] == name)
    want = compile_grad(fn, make(), buffers=False).fn(*make())
    fused = compile_grad(fn, make(), device="cuda", engine="fused", out_dir=tmp_path,
                         module_name="fused_loop")
    assert "ElementwiseKernel(" in fused.text
    assert compare(fused.fn(*make()), want) is None


def test_the_mlp_gradient_launches_fewer_kernels_with_the_source_in_them(cupy, tmp_path):
    """Forward and backward groups fused, a sum of an expression a ReductionKernel, the
    matrix products left to cuBLAS; the kernels' C carries the source's names, its call the
    source line; a group over several lines has them as C comments."""
    args = mlp_args()
    fused = compile_grad(mlp, args, device="cuda", engine="fused", out_dir=tmp_path,
                         module_name="fused_mlp")
    text = fused.text
    assert "xp.ElementwiseKernel(" in text and "xp.ReductionKernel(" in text
    assert "    'h = tanh(r0 + b1);\\n',\n" in text                # names from the source
    line = inspect.getsourcelines(mlp)[1] + 3
    assert f"    # grad of test_fused.py:{line}  err = np.sum((p - y) ** 2, axis=1)\n" in text
    assert "    # kernel _mlp_grad_k6: 2 statements in one launch\n" \
        "    dt3, dy_ = _mlp_grad_k6(xp.expand_dims(dt5, 1), t3)\n" in text
    # a name bound twice in one group (dW1 = 0.01 * W1; dW1 = dW1 + dW1): first a C local
    assert "    'double dW1 = 0.01 * W1;\\n'\n    'dW1_0 = dW1 + dW1;\\n',\n" in text
    assert "    dW1 = _mlp_grad_k4(W1)\n" in text
    assert "    dh = dt3 @ W2.T\n" in text                          # products stay cuBLAS calls
    before = fakecupy.COUNTS["launches"]
    got = fused.fn(*args)
    assert fakecupy.COUNTS["launches"] - before == text.count("Kernel(\n") == 8
    assert compare(got, compile_grad(mlp, args, buffers=False).fn(*args)) is None
    again = compile_grad(mlp, args, device="cuda", engine="fused", out_dir=tmp_path,
                         module_name="fused_mlp_again").text
    assert again == text                                         # deterministic text
    fn, make = next(c[1:3] for c in LOOPS if c[0] == "rnn")
    loop = compile_grad(fn, make(), device="cuda",
                        engine="fused", out_dir=tmp_path, module_name="fused_rnn").text
    assert "    '// grad of " in loop                                  # source lines in the C


def test_what_the_kernels_cannot_hold_stays_numpy(cupy, tmp_path):
    """float32 values and an integer operand are written as the plain form writes them."""
    def f(x, n):
        return np.sum(np.exp(x * np.float32(2.0)) * n)
    args = (np.linspace(0.1, 1.0, 6, dtype=np.float32), 3)
    fused = compile_grad(f, args, device="cuda", engine="fused", out_dir=tmp_path,
                         module_name="fused_f32")
    assert "Kernel(" not in fused.text
    assert compare(fused.fn(*args), compile_grad(f, args, buffers=False).fn(*args)) is None


def test_a_source_line_cannot_continue_its_c_comment():
    """The source lines in the kernels' C are ASCII, with no backslash and no trigraph ``??/``
    (either at a line's end would make the next C statement part of the comment)."""
    from yota_s2s.codegen.cupy_form import _c_comment
    text = _c_comment("# m.py:3  y = f(x)  # caf\u00e9 ???/ \\")
    assert text.isascii() and "\\" not in text and "??" not in text
    assert text.startswith("m.py:3  y = f(x)  # caf?")


def test_the_fused_engine_is_for_the_gpu():
    with pytest.raises(UsageError, match='needs device="cuda"'):
        ys.simplegrad(mlp, *mlp_args(), engine="fused")


@pytest.mark.parametrize("text, why", [
    ("y = x * 2;", "integer literal"),
    ("y = x > 0.0 ? x : 0.0;", "subset"),
    ("y = (double)x;", "reads double"),
    ("y = erf(x);", "not a function"),
    ("double y = x;", "declared twice"),
])
def test_the_stand_in_reads_only_the_printers_c(text, why):
    """fakecupy's kernels refuse C the printer does not write, so the subset stays small."""
    kernel = fakecupy.ElementwiseKernel("float64 x", "float64 y", text, "k",
                                        preamble=fakecupy.PREAMBLE, options=fakecupy.OPTIONS)
    with pytest.raises((SyntaxError, NameError), match=why):
        kernel(np.ones(3))


def test_the_stand_in_tells_a_race_from_an_element_read_then_written():
    """An input that is the output's own elements (a size-1 axis's stride aside) is read then
    written by each thread; one shifted against the output races (fuzz seed 315: a row of dv3
    read, kept, then zeroed in one kernel)."""
    kernel = fakecupy.ElementwiseKernel("float64 x", "float64 y", "double k = x;\ny = k + 1.0;",
                                        "k", preamble=fakecupy.PREAMBLE, options=fakecupy.OPTIONS)
    a = np.arange(8.0).reshape(2, 4, 1)
    kernel(a[1], a[1])
    assert np.array_equal(a[1, :, 0], [5.0, 6.0, 7.0, 8.0])
    with pytest.raises(RuntimeError, match="race"):
        kernel(a[0, :3], a[0, 1:])


def test_cuda_graph_captures_once_then_replays(cupy, tmp_path):
    """The first call runs the buffered gradient, captures it with out= arrays of its own and
    launches the graph; later calls copy their arguments into the graph's inputs and launch it.
    (The stand-in checks the control flow; a device, the values replayed.)"""
    args = mlp_args()
    df = compile_grad(mlp, args, device="cuda", out_dir=tmp_path, module_name="graph_mlp").fn
    want = compile_grad(mlp, args).fn(*args)
    graph = ys.cuda_graph(df)
    counts = dict(fakecupy.COUNTS)
    got = graph(*args)
    assert compare(got, want) is None
    assert fakecupy.COUNTS["captures"] == counts["captures"] + 1
    other = tuple(a * 2.0 for a in args)
    for k in range(3):
        assert graph(*other) is got                        # the graph's arrays, again
        assert all(np.array_equal(i, a) for i, a in zip(graph.inputs, other))
    assert (graph.captures, graph.replays) == (1, 3)
    assert fakecupy.COUNTS["replays"] == counts["replays"] + 4
    assert fakecupy.COUNTS["captures"] == counts["captures"] + 1
    with pytest.raises(UsageError, match="captured for float64"):
        graph(args[0][:2], *args[1:])


def test_cuda_graph_refuses_what_it_cannot_replay(cupy, tmp_path):
    def scaled(x, s):
        return np.sum(np.sin(x) * s)
    df = compile_grad(scaled, (np.ones(4), 2.0), device="cuda", wrt={0}, out_dir=tmp_path,
                      module_name="graph_number").fn
    graph = CudaGraph(df)
    graph(np.ones(4), 2.0)
    with pytest.raises(UsageError, match="the number 2.0 is captured"):
        graph(np.ones(4), 3.0)
    with pytest.raises(UsageError, match="captured for 2 arguments"):
        graph(np.ones(4))


def test_cuda_graph_captures_the_fused_form_too(cupy, tmp_path):
    """The fused module (the plain form: it allocates its arrays, from memory the wrapper keeps
    while the graph lives) is captured without out=."""
    args = mlp_args()
    fused = compile_grad(mlp, args, device="cuda", engine="fused", out_dir=tmp_path,
                         module_name="graph_fused").fn
    graph = ys.cuda_graph(fused)
    assert not graph.takes_out
    assert compare(graph(*args), compile_grad(mlp, args, buffers=False).fn(*args)) is None
    graph(*args)
    assert (graph.captures, graph.replays) == (1, 1)
