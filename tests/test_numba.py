"""engine="numba" (issue 32): the plain form's loops as numba-compiled functions.

numba compiles slowly (seconds a loop), so the suite compiles two small loops (one gradient
shared by the tests, one numba refuses); tools/numba_check.py runs the whole loop-region table
and reports which loops print for numba and which stay numpy.
"""
import ast
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.errors import UsageError
from yota_s2s.gradcheck import numerical_grad

from .test_gradcheck import _crosses_2_vectors
from .test_loops import _vec

numba = pytest.importorskip("numba")


def ring(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[(i + 1) % n] ** 2
    return s


def rolled(f):
    for _ in range(30):
        f = f + 0.1 * (np.flip(f, axis=1) - f)         # numba has no np.flip with an axis
    return np.sum(f ** 2)


def _same_as_numpy(f, args):
    """The numba engine's value and gradients equal the numpy printer's (relative 1e-12) and
    finite differences."""
    dn = ys.simplegrad(f, *args, engine="numba")
    dp = ys.simplegrad(f, *args, buffers=False)
    got, want = dn(*args), dp(*args)
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None
            continue
        scale = max(1.0, np.max(np.abs(w))) if np.size(w) else 1.0
        assert np.shape(g) == np.shape(w) and np.allclose(g, w, rtol=1e-12, atol=1e-12 * scale), i
    for i, g in enumerate(got[1:]):
        if g is not None:
            assert np.allclose(g, numerical_grad(f, list(args), i), rtol=1e-5, atol=1e-7), i
    return ys.source(dn)


def test_loops_run_in_numba_and_equal_the_numpy_printer():
    text = _same_as_numpy(ring, (_vec(30),))
    assert "@numba.njit(cache=True, error_model=\"numpy\")" in text and "stays numpy" not in text
    assert "import numba" in text and "review form is the plain numpy module" in text


def test_a_loop_numba_cannot_compile_stays_numpy_and_says_why():
    text = _same_as_numpy(rolled, (_vec(12).reshape(4, 3),))
    assert "# numba: this loop stays numpy: No implementation of function" in text
    reasons = [line.split("stays numpy:")[1] for line in text.splitlines()
               if "stays numpy:" in line]
    assert len(reasons) == 2 and all("<function flip>" in r for r in reasons)
    # a forward (one loop) is tried first as one function, its whole body, and says why not
    forward = ys.source(ys.compile(rolled, _vec(12).reshape(4, 3), engine="numba"))
    assert "# numba: the body is not one numba function (each loop is tried alone): No " \
        "implementation of" in forward and "# numba: this loop stays numpy: No" in forward
    assert "@numba.njit" not in text and "import numba" not in text


def spring(x, v, k):
    for _ in range(40):
        d = np.diff(x, axis=0)
        length = np.linalg.norm(d, axis=1, keepdims=True)
        f = k * (length - 1.0) * d / length
        F = np.zeros_like(x)
        F[:-1] += f
        F[1:] -= f
        v = v + 0.1 * F
        x = x + 0.1 * v
    return np.sum(x[-1] ** 2) + 0.5 * np.sum(v * v)


def test_a_loops_array_statements_are_loop_nests_fused_over_one_shape():
    r = np.random.default_rng(5)
    args = (np.stack([np.arange(4.0), np.zeros(4)], axis=1) + 0.1 * r.standard_normal((4, 2)),
            0.1 * r.standard_normal((4, 2)), 1.0 + 0.2 * r.random((3, 1)))
    text = _same_as_numpy(spring, args)
    kernels = text.split("def spring_grad(")[0]
    assert "stays numpy" not in text and "for i0 in range(3):" in kernels
    code = "\n".join(line for line in kernels.splitlines() if not line.strip().startswith("#"))
    for call in ("xp.diff", "xp.linalg.norm", "keepdims", "xp.pad", "_pad2"):
        assert call not in code, call
    # the source line above its nest; the norm's sum, then the force's statements in one nest;
    # the step's arrays made once, before the loop (numba_hoist.py)
    assert "np.linalg.norm(d, axis=1, keepdims=True)\n        for i0 in range(3):\n" \
        "            r0[i0] = 0.0\n" in kernels and ".fill(" not in kernels
    assert "F_1[i0, i1] += f[i0, i1]" in kernels
    assert "    r0 = xp.empty((3,))\n" in kernels
    # two loops (the forward's, the backward's): a function each (numba_form.WHOLE_LOOPS); the
    # forward, one loop, is one function with what is around the loop: the interpreter makes
    # only its call
    assert "# numba: the loop runs in _spring_grad_loop2" in text
    cf = ys.compile(spring, *args, engine="numba")
    assert np.isclose(cf(*args), spring(*args), rtol=1e-12)
    function = ys.source(cf).split("def spring_forward(")[1]
    assert "# numba: the body runs in _spring_forward_body" in function
    assert "xp." not in function.split("# numba: the body runs in")[1]


def poly(x, w):
    z = np.tanh(w * x[:3]) / (1.0 + x[3:] ** 2)
    return np.sum(z * z) + x[0] * x[5] ** 3


def test_a_straight_line_function_is_one_numba_function():
    text = _same_as_numpy(poly, (_vec(6), 0.7))
    assert "# numba: the body runs in _poly_grad_body" in text
    body = text.split("def _poly_grad_body(")[1].split("def poly_grad(")[0]
    assert "# test_numba.py:" in body and "for i0 in range(3):" in body


def leaky32(h, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(0.5 * h + xs[t])
    return np.sum(h * h)


def test_a_float32_loop_keeps_float32():
    args = (_vec(3).astype(np.float32), _vec(30).reshape(10, 3).astype(np.float32))
    dn = ys.simplegrad(leaky32, *args, engine="numba")
    dp = ys.simplegrad(leaky32, *args, buffers=False)
    for g, w in zip(dn(*args)[1:], dp(*args)[1:]):
        assert g.dtype == w.dtype == np.float32
        assert np.allclose(g, w, rtol=1e-6, atol=1e-6)


def mean_steps32(x):
    total = 0.0
    for t in range(4):
        total = total + np.mean(np.tanh(x * (t + 0.5)))
    return total


def carried_total32(xs):
    total = 0.0
    for t in range(xs.shape[0]):
        total = total + np.mean(np.tanh(xs[t]))
    return total


@pytest.mark.parametrize("f", [mean_steps32, carried_total32])
def test_a_float32_number_stays_float32(f):
    """numba returns a number as a Python float, and types ``0.0 + float32`` float64 (numpy
    makes it float32): a float32 number of the tape is float32 again after the body's call
    (mean_steps32, unrolled: one body), and a loop carrying one stays numpy (bench32's fuzz
    seed 650007: float64 where numpy gave float32)."""
    x = _vec(12).reshape(4, 3).astype(np.float32)
    arg = x[0] if f is mean_steps32 else x
    value, dx = ys.simplegrad(f, arg, engine="numba")(arg)
    plain = ys.simplegrad(f, arg, buffers=False)(arg)
    assert type(value) is type(f(arg)) is np.float32 and dx.dtype == np.float32
    assert np.allclose(value, plain[0], rtol=1e-6, atol=1e-6)
    assert np.allclose(dx, plain[1], rtol=1e-6, atol=1e-6)


def test_the_numba_module_is_deterministic():
    args = (_vec(30),)
    first = ys.source(ys.simplegrad(ring, *args, engine="numba"))
    assert ys.source(ys.simplegrad(ring, *args, engine="numba")) == first
    # the loop's statements are the plain numpy form's, under the source line
    plain = ys.source(ys.simplegrad(ring, *args, buffers=False))
    assert "s = s + t1 * t5" in plain and "s = s + t1 * t5" in first


def test_compile_and_grad_take_the_engine():
    x = _vec(30)
    cf = ys.compile(ring, x, engine="numba")
    assert np.isclose(cf(x), ring(x), rtol=1e-12)
    assert "@numba.njit" in ys.source(cf)
    value, g = ys.grad(ring, x, engine="numba")
    value_np, g_np = ys.grad(ring, x)
    assert np.isclose(value, value_np, rtol=1e-12)
    assert np.allclose(g[0], g_np[0], rtol=1e-12)
    with pytest.raises(UsageError, match="engine must be one of"):
        ys.simplegrad(ring, x, engine="jit")


def tanh_steps(x):
    for _ in range(20):
        x = np.tanh(x)
    return np.sum(x)


def test_auto_compiles_loops_over_small_arrays_and_leaves_large_ones_to_numpy():
    small = ys.source(ys.simplegrad(ring, _vec(30), engine="auto"))
    assert "@numba.njit" in small       # the module test_loops_run_in_numba... compiled
    x = _vec(5000)
    df = ys.simplegrad(tanh_steps, x, engine="auto")
    assert "import numba" not in ys.source(df)
    assert ys.source(df) == ys.source(ys.simplegrad(tanh_steps, x))      # the buffered form
    # a loop numba refuses: the buffered numpy form, not the plain form with the loop in numpy
    f = _vec(12).reshape(4, 3)
    assert ys.source(ys.simplegrad(rolled, f, engine="auto")) == ys.source(ys.simplegrad(rolled, f))


def test_without_numba_the_engine_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)        # import numba raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'yota-s2s\[numba\]'"):
        ys.simplegrad(ring, _vec(5), engine="numba")
    assert "@numba" not in ys.source(ys.simplegrad(ring, _vec(5), engine="auto"))


def test_a_second_process_loads_the_compiled_loops_from_the_cache(tmp_path):
    args = (_vec(30),)
    ys.simplegrad(ring, *args, engine="numba", out_dir=tmp_path, module_name="ring_numba")
    script = textwrap.dedent(f"""
        import sys, numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        import ring_numba
        value, dx = ring_numba.ring_grad(np.linspace(-1, 1, 30))
        kernel = ring_numba._ring_grad_body
        print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["1", "0"], out        # loaded from numba's cache, not compiled again


GRADCHECK = ("sum_neg_axis", "np_multiply[0, 3][3]", "rounding_nodiff[2, 3]",
             "norm_matrix_fro_nuc", "eig_complex_pairs",
             *(("cross_of_2_vectors",) if _crosses_2_vectors() else ()))
# bodies left numpy, and why: numba has no np.fix; it compiles eig, norm(ord='nuc') and the
# cross product of 2-vectors, then raises at run time (eig where the eigenvalues are complex):
# tools/numba_check.py found these
STAYS = {"rounding": "Use of unsupported NumPy function 'numpy.fix'",
         "norm_matrix": "numba's np.linalg.norm has no ord='nuc'",
         "eig_complex": "numba's np.linalg.eig of a real matrix raises at run time",
         "cross_of_2": "numba's np.cross takes 3-vectors only"}


def test_the_tapes_shapes_are_known_for_names_bound_once_outside_the_loops():
    # t5's shape the statements do not tell (xp.arange); the tape does: kron_mixed_ndim's
    # gradient's 4-d products of reshapes of t5 became nests (numba's own broadcasting of
    # 4-d arrays compiled for 22-25 s of CPU each; the body 40 s, now 7 s)
    from yota_s2s.codegen.numba_form import _known
    from yota_s2s.codegen.numba_shapes import Val
    from yota_s2s.ir.tape import Aval
    nodes = ast.parse(textwrap.dedent("""
        t5 = xp.cos(xp.arange(12) + 1.0).reshape((2, 6))
        h = t5 * 2.0
        for t in range(3):
            h = h + 1.0
            w = h * 3.0
        """)).body
    held = {n: Aval(shape, np.dtype(np.float64)) for n, shape in
            (("t5", (2, 6)), ("h", (2, 6)), ("w", (2, 6)), ("t", ()))}
    # h is bound twice, w and t in the loop only (a body's values have names of their own)
    assert _known(nodes, held) == {"t5": Val((2, 6), "f")}


def test_a_cross_product_stays_numpy_unless_its_vectors_are_known_3_vectors():
    from yota_s2s.codegen.numba_form import CROSS_REFUSAL, LoopKernel, _cross_refusal
    from yota_s2s.ir.tape import Aval

    def refusal(n: int, source: str):
        avals = [Aval((n,), np.dtype(np.float64)), Aval((5, n), np.dtype(np.float64))]
        return _cross_refusal(LoopKernel("_k", 0, ["u", "v"], avals, ["y"], [None],
                                         ast.parse(textwrap.dedent(source)).body))
    straight, looped = "w = u * 2.0\ny = xp.cross(w, v)\n", \
        "y = v\nfor t in range(3):\n    w = y[0] + u\n    y = xp.cross(w, v)\n"
    assert refusal(3, straight) is None and refusal(3, looped) is None
    assert refusal(2, straight) == refusal(2, looped) == CROSS_REFUSAL
    # a vector whose shape is not followed (a call the shapes do not know): refused
    assert refusal(3, "w = xp.flip(u)\ny = xp.cross(w, v)\n") == CROSS_REFUSAL


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradient_check_table_cases_through_numba(name):
    """A few of tests/test_gradcheck.py's cases (tools/numba_check.py --gradcheck 1 runs them
    all): a straight-line body in numba, or left numpy with numba's reason (np.fix)."""
    from .test_gradcheck import CASES
    case = next(c for c in CASES if c.name == name)
    text = _same_as_numpy(case.fn, case.make_args(np.random.default_rng(1)))
    stays = next((why for key, why in STAYS.items() if name.startswith(key)), None)
    if stays is not None:
        assert f"# numba: the body stays numpy: {stays}" in text
    else:
        assert "# numba: the body runs in _" in text
