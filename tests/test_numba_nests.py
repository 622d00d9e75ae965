"""The numba printer's loop nests (codegen/numba_nests.py), without numba: the nests are Python,
so each case runs both the statements and their nests with numpy and compares the values, and
the text of a few is asserted as written."""
import ast
import textwrap

import numpy as np
import pytest

from yota_s2s.codegen.numba_calls import numba_forms
from yota_s2s.codegen.numba_hoist import hoisted
from yota_s2s.codegen.numba_nests import loop_nests
from yota_s2s.codegen.numba_shapes import Val, kind_of
from yota_s2s.codegen.render import statement_lines


def _nests(source: str, args: dict, results: list[str], hoist: bool = False) -> str:
    nodes = numba_forms(ast.parse(textwrap.dedent(source)).body, set())
    env = {k: Val(np.shape(v), kind_of(np.asarray(v).dtype) if not isinstance(v, float)
                  else "f") for k, v in args.items()}
    out, index = loop_nests(nodes, env, results)
    out = hoisted(out, list(args), index) if hoist else out
    return "\n".join(line for node in out for line in statement_lines(node))


def _run(source: str, args: dict, results: list[str]) -> list:
    scope = {"xp": np, **{k: np.copy(v) if isinstance(v, np.ndarray) else v
                          for k, v in args.items()}}
    exec(source, scope)
    return [scope[r] for r in results] + [scope[k] for k in args]    # (in place, too)


def _same(source: str, args: dict, results: list[str], hoist: bool = False) -> str:
    """The nests' values equal the statements' (1e-13), results and arguments changed in
    place alike; the nests' text (``hoist``: with the step's arrays made before the loop)."""
    nests = _nests(source, args, results, hoist)
    for got, want in zip(_run(nests, args, results), _run(textwrap.dedent(source), args, results)):
        assert np.shape(got) == np.shape(want)
        assert np.allclose(got, want, rtol=1e-13, atol=1e-13)
    return nests


r = np.random.default_rng(3)
X, V = r.standard_normal((5, 2)), r.standard_normal((5, 2))
K = 1.0 + r.random((4, 1))


def test_elementwise_statements_over_one_shape_fuse_and_a_name_read_before_gets_its_own():
    text = _same("""
        x = x + 0.01 * v
        y = xp.tanh(x) * v - x
        """, {"x": X, "v": V}, ["x", "y"])
    assert text == textwrap.dedent("""\
        x_0 = xp.empty((5, 2))
        y = xp.empty((5, 2))
        for i0 in range(5):
            for i1 in range(2):
                x_0[i0, i1] = x[i0, i1] + 0.01 * v[i0, i1]
                y[i0, i1] = xp.tanh(x_0[i0, i1]) * v[i0, i1] - x_0[i0, i1]
        x = x_0""")


def test_a_value_only_its_nest_reads_is_a_number_and_size_1_operands_broadcast():
    text = _same("""
        t = k * (x[1:] - x[:-1])
        f = t / k + 1.5
        """, {"x": X, "k": K}, ["f"])
    assert "    t = k[i0, 0] * (x[i0 + 1, i1] - x[i0, i1])" in text.replace("    ", " ", 1)
    assert "t = xp.empty" not in text


def test_the_spring_chains_step_lowers_to_nests_with_the_same_values():
    text = _same("""
        d = xp.diff(x, axis=0)
        length = xp.linalg.norm(d, axis=1, keepdims=True)
        f = k * (length - 0.9) * d / length
        F = xp.zeros_like(x)
        F[:-1] += f
        F[1:] -= f
        g = (f * d).sum(axis=1, keepdims=True)
        back = xp.pad(d, ((1, 0), (0, 0))) - xp.pad(d, ((0, 1), (0, 0)))
        total = (F * F).sum() + xp.sum(g)
        """, {"x": X, "k": K}, ["F", "g", "back", "total"])
    for numpy_call in ("diff", "norm", "sum(", "_pad", "keepdims", "expand_dims"):
        assert numpy_call not in text
    assert "g = xp.zeros((4, 1))" in text and "g[i0, 0] += f[i0, i1] * d[i0, i1]" in text
    assert "(d[i0 - 1, i1] if i0 >= 1 else 0.0)" in text


def test_stack_rows_in_a_loop_and_a_small_matrix_product_is_a_nest():
    text = _same("""
        for t in range(3):
            S[t] = h
            h = xp.tanh(W @ h + b)
            g = xp.tanh(h @ W) @ W
            u = W.T @ xp.expand_dims(h, 1)
            s = h @ h
        """, {"S": np.zeros((3, 4)), "h": r.standard_normal(4), "W": r.standard_normal((4, 4)),
              "b": r.standard_normal(4)}, ["h", "g", "u", "s"])
    assert "@" not in text and "S[t, i0] = h[i0]" in text
    assert "r0[i0] += W[i0, i1] * h[i1]" in text              # W @ h: a sum over W's rows


def test_a_large_matrix_product_stays_numbas_and_a_small_one_reads_rows_in_order():
    text = _same("""
        y = xp.tanh(A @ B)
        z = x @ B
        """, {"A": r.standard_normal((40, 40)), "B": r.standard_normal((40, 40)),
              "x": r.standard_normal((1, 40))}, ["y", "z"])
    assert "r0 = A @ B" in text                                 # 64,000 multiply-adds: BLAS
    assert "z[0, i1] += x[0, i0] * B[i0, i1]" in text          # one row: a nest over B's rows


def test_a_roll_is_an_index_modulo_its_axis():
    text = _same("""
        lap = xp.roll(f, 1, axis=0) + xp.roll(f, -1, axis=1) - 2.0 * f
        g = xp.roll(f, 7, axis=0) * xp.roll(f, 0, axis=1)
        """, {"f": r.standard_normal((5, 4))}, ["lap", "g"])
    assert "f[(i0 + 4) % 5, i1]" in text and "f[i0, (i1 + 1) % 4]" in text
    assert "f[(i0 + 3) % 5, i1] * f[i0, i1]" in text and "roll" not in text


def test_a_reshape_is_an_index_into_its_array_in_c_order():
    # np.kron's gradient (kron_mixed_ndim): 4-d products of reshapes, which numba's own
    # broadcasting compiled for 22-25 s of CPU each (2-d: 1 s); as nests, loops over indices
    text = _same("""
        t7 = t5.reshape((1, 2, 3, 2))
        da = (t7 * b.reshape((1, 2, 1, 2))).sum(axis=(1, 3)).reshape((3,))
        db = (t7 * xp.reshape(a, (1, 1, 3, 1))).sum(axis=(0, 2))
        e = xp.tanh(t5.reshape(-1)).reshape((3, 4)) * 2.0
        """, {"t5": r.standard_normal((2, 6)), "a": r.standard_normal(3),
              "b": r.standard_normal((2, 2))}, ["t7", "da", "db", "e"])
    assert "reshape" not in text.split("t7 = t5.reshape((1, 2, 3, 2))\n")[1]
    # dimensions of 1 apart, the same index; else the element's place in C order divided out
    assert "b[i0, i2]" in text and "a[i1]" in text and "t7[0, i0, i1, i2]" in text
    assert "xp.tanh(t5[(i0 * 4 + i1) // 6, (i0 * 4 + i1) % 6])" in text


def test_fancy_index_adds_are_a_nest_over_the_keys_rows_adding_repeats():
    text = _same("""
        xp.add.at(d, [2, 0, 2], v)
        xp.add.at(e, idx, 2.0 * w)
        """, {"d": np.zeros((4, 2)), "v": r.standard_normal((3, 2)), "e": np.ones(4),
              "idx": np.array([3, -1, 0, 3, 1]), "w": r.standard_normal(5)}, [])
    assert "d[(2, 0, 2)[i0], i1] += v[i0, i1]" in text and "e[idx[i0]] += 2.0 * w[i0]" in text
    assert ".at(" not in text


def test_an_operand_broadcast_into_a_slice_in_place():
    text = _same("""
        x[1:] += s
        x[:2] -= u
        """, {"x": r.standard_normal((4, 3)), "s": r.standard_normal((1,)), "u": 0.5}, [])
    assert "x[i0 + 1, i1] += s[0]" in text and "x[i0, i1] -= u" in text


@pytest.mark.parametrize("source, args", [
    ("y = x * 2.0", {"x": X.astype(np.float32)}),             # numba's float32 is not numpy's
    ("y = x[[0, 2]] * 2.0", {"x": X}),                         # fancy index: shape unknown
    ("y = x[1:] + 1.0\ny = y[1:]", {"x": X}),                  # a view stays a view
    ("x[1:] += x[:-1]", {"x": X}),                             # reads what it writes
])
def test_what_stays_numpy(source, args):
    text = _same(source, args, [])
    assert text.splitlines()[-1] == source.splitlines()[-1]
    assert "for i0" not in text or source.startswith("y = x[1:]")


# -- the step's arrays made once (numba_hoist.py) --------------------------------------------

def test_a_steps_arrays_are_made_once_and_a_carried_one_is_two_swapped():
    text = _same("""
        for t in range(5):
            x = x + 0.1 * v
            d = xp.tanh(x[1:] - x[:-1])
            n = (d * d).sum(axis=1)
            F = xp.zeros_like(x)
            F[:-1] += d
            F[1:] -= d * n[:, None]
            v = v - 0.01 * F * x
            S[t] = v
            s = (h * h).sum()
            h = xp.tanh(v[0] * s)
        """, {"x": X, "v": V, "S": np.zeros((5, 5, 2)), "h": V[1]}, ["x", "v", "h"], hoist=True)
    loop = text.index("for t in range(5):")
    before, step = text[:loop], text[loop:]
    assert "xp.empty(" in before and "xp.empty(" not in step and "xp.zeros(" not in step
    for carried in ("x_0", "v_0"):            # read by the next step before bound again: two
        assert f"{carried}, {carried}b = {carried}b, {carried}" in step
    # a sum's zeros made once: written again by a nest (numba calls fill as a function)
    assert "for i0 in range(4):\n        n[i0] = 0.0\n" in step and ".fill(" not in text
    assert "for i0 in range(5):\n        for i1 in range(2):\n            F[i0, i1] = 0.0\n" \
        in step and "F, Fb" not in step
    # h holds the argument before the loop: its buffers are named apart
    assert "h_a, h_b = h_b, h_a\n    h = h_a\n" in step and "h = xp.empty" not in text


def test_an_array_held_past_its_step_is_made_in_its_step():
    # y is kept a step longer by name (w = prev), z by a view: a buffer reused would change them
    text = _same("""
        for t in range(4):
            y = x * (t + 1.0) + w
            w = prev
            prev = y
            z = q * 2.0 + view
            view = z.T
        """, {"x": X, "w": np.zeros((5, 2)), "prev": np.ones((5, 2)),
              "q": r.standard_normal((3, 3)), "view": np.eye(3)}, ["y", "w", "z"], hoist=True)
    step = text[text.index("for t in range(4):"):]
    assert "y = xp.empty((5, 2))" in step and "z = xp.empty((3, 3))" in step
    assert "numba: the step's arrays" not in text
