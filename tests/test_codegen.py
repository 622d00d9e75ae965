"""Codegen: the generated module is the product.

A golden file for the model of DESIGN.md (reviewed like code), byte-identical output across
compilations and processes, valid Python with no unused names, the cupy variant, and the
layout rules (sections, source comments, argument checks).
"""
import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from yota_s2s.codegen import write_module
from yota_s2s.codegen.emit import Emitter
from yota_s2s.compiler import compile_grad, gradient_tape

from .programs import design, models

GOLDEN = Path(__file__).parent / "golden"
DESIGN_ARGS = (np.ones((4, 3)), np.ones(4), np.ones((3, 2)), np.ones((4, 2)))


def module_text(fn, *args, **options):
    _, tape = gradient_tape(fn, args, check=True)
    return write_module(tape, **options)


def test_design_example_matches_the_golden_file():
    assert module_text(design.loss, *DESIGN_ARGS, buffers=False) == (GOLDEN / "design_loss.py").read_text()


def test_two_compilations_are_byte_identical():
    assert module_text(models.mlp, *_mlp_args()) == module_text(models.mlp, *_mlp_args())


def test_output_does_not_depend_on_the_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, sys
        from tests.test_codegen import module_text, _mlp_args
        from tests.programs import models
        sys.stdout.write(module_text(models.mlp, *_mlp_args()))
    """)
    root = Path(__file__).parent.parent
    other = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert other.stdout == module_text(models.mlp, *_mlp_args())


def _mlp_args():
    r = np.random.default_rng(0)
    return (r.random((6, 5)), r.random(5), r.random((5, 3)), r.random(3), r.random((4, 6)),
            np.eye(3)[[0, 2, 1, 2]])


PROGRAMS = {
    "design": (design.loss, DESIGN_ARGS),
    "mlp": (models.mlp, _mlp_args()),
    "rnn": (models.rnn, (np.ones((3, 4)), np.ones((4, 4)), np.ones(4), np.ones((5, 2, 3)), np.ones((2, 4)))),
    "polynomial": (models.polynomial, (np.ones(8),)),
    "guard": (models.with_guard, (np.ones(3),)),
    "floats": (models.python_floats, (0.3, 0.5)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_generated_code_is_valid_python_with_no_unused_names(name):
    fn, args = PROGRAMS[name]
    tree = ast.parse(module_text(fn, *args))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_grad"))
    assigned = {t.id for n in ast.walk(func) if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    loaded = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert assigned <= loaded, f"unused: {assigned - loaded}"
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert imported <= used, f"unused imports: {imported - used}"


def test_sections_and_source_comments():
    text = module_text(design.loss, *DESIGN_ARGS)
    body = text[text.index("def loss_grad"):]
    assert body.index("# -- forward --") < body.index("# -- backward --")
    assert "# design.py:6  return np.tanh(W @ x + b[:, None])    (predict, inlined)" in body
    assert "# grad of design.py:11  return np.mean((h - y) ** 2)" in body
    assert "import numpy as xp" in text and "yota_s2s" not in text.split('"""', 2)[2]


def test_guards_become_checks_that_raise(tmp_path):
    text = module_text(models.with_guard, np.ones(3))
    assert "class GuardError(ValueError)" in text
    assert "if not x.sum(out=buf2)[()] > 0:\n        raise GuardError(" in text     # 0-d buf2
    df = compile_grad(models.with_guard, (np.ones(3),), out_dir=tmp_path).fn
    assert df(np.ones(3))[0] == 2.0         # the arm taken: x[:2] ** 2
    with pytest.raises(ValueError, match=r"models.py:\d+ `if np.sum\(x\) > 0:` was True when"):
        df(-np.ones(3))


def test_argument_checks_name_the_argument_and_what_was_expected(tmp_path):
    df = compile_grad(design.loss, DESIGN_ARGS, out_dir=tmp_path).fn
    with pytest.raises(TypeError, match=r"argument x must be float64\[3, 2\], got float32\[3, 2\]"):
        df(DESIGN_ARGS[0], DESIGN_ARGS[1], DESIGN_ARGS[2].astype(np.float32), DESIGN_ARGS[3])
    with pytest.raises(TypeError, match=r"argument b must be float64\[4\], got \[1.0"):
        df(DESIGN_ARGS[0], [1.0] * 4, DESIGN_ARGS[2], DESIGN_ARGS[3])


def test_static_arguments_are_checked(tmp_path):
    df = compile_grad(lambda x, n: np.sum(x ** n), (np.ones(2), 3), out_dir=tmp_path).fn
    assert df(np.ones(2), 3)[2] is None
    with pytest.raises(TypeError, match="argument n must be 3, got 4"):
        df(np.ones(2), 4)


def test_cuda_device_imports_cupy_and_nothing_else_differs(monkeypatch, tmp_path):
    cpu = module_text(design.loss, *DESIGN_ARGS)
    gpu = module_text(design.loss, *DESIGN_ARGS, device="cuda")
    from yota_s2s.codegen.targets import CUPY_IMPORT as _CUPY_IMPORT   # says how to install it
    assert _CUPY_IMPORT.startswith("try:\n    import cupy as xp\nexcept ModuleNotFoundError")
    assert "pip install cupy-cuda12x (CUDA 12)" in _CUPY_IMPORT and _CUPY_IMPORT in gpu
    gpu = gpu.replace(_CUPY_IMPORT, "import cupy as xp")
    assert gpu.replace("cupy", "numpy").replace("device cuda", "device cpu") != cpu
    # numbers go through 0-d arrays on a CPU only (on a GPU [()] would be a view, and cupy
    # passes numbers to its kernels as they are): nothing else differs
    assert "_work_arrays()" in gpu and "[()]" not in gpu and "xp.array(" not in gpu
    monkeypatch.setattr(Emitter, "numbers_in_arrays", property(lambda self: False))
    cpu = module_text(design.loss, *DESIGN_ARGS)
    gpu = module_text(design.loss, *DESIGN_ARGS, device="cuda").replace(_CUPY_IMPORT,
                                                                        "import cupy as xp")
    # (the prelude's message names both kinds of array: the same text in both modules)
    assert gpu.replace("cupy", "numpy").replace("device cuda", "device cpu") == \
        cpu.replace("cupy", "numpy")
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "cupy", np)      # no GPU here: numpy stands in for cupy
    df = compile_grad(design.loss, DESIGN_ARGS, device="cuda", out_dir=tmp_path, module_name="gpu_loss").fn
    assert np.allclose(df(*DESIGN_ARGS)[1], compile_grad(design.loss, DESIGN_ARGS).fn(*DESIGN_ARGS)[1])


def _strict_cupy():
    """numpy, refusing a number where cupy wants an array (``cupy.broadcast_to(1.0, shape)``
    raises TypeError): the cupy behaviour a CPU can check."""
    import types
    strict = types.ModuleType("cupy")
    strict.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})

    def needs_array(fn):
        def call(a, *args, **kwargs):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"{fn.__name__}: expected an array, got {type(a).__name__}")
            return fn(a, *args, **kwargs)
        return call
    for name in ("broadcast_to", "reshape", "expand_dims"):
        setattr(strict, name, needs_array(getattr(np, name)))
    return strict


def sum_of_previous_rows(xs, w):
    s = 0.0
    for t in range(1, xs.shape[0]):          # a loop region; its backward carries ds = 1.0
        s = s + np.sum(xs[t] * xs[t - 1] * w)
    return s


def mean_of_a_scalar_broadcast(x):
    return np.mean(np.broadcast_to(np.sum(x), (3, 2)))


@pytest.mark.parametrize("fn, args", [
    (sum_of_previous_rows, (np.random.default_rng(0).standard_normal((10, 2, 3)), np.ones(3))),
    (mean_of_a_scalar_broadcast, (np.arange(4.0),)),
])
@pytest.mark.parametrize("buffers", [True, False])
def test_a_number_where_cupy_wants_an_array_is_wrapped(fn, args, buffers, monkeypatch, tmp_path):
    """A number (a literal, a 0-d value, a loop's carried ``ds = 1.0``) that reaches reshape,
    expand_dims or broadcast_to is written ``xp.asarray(...)``: found on an H200, where cupy
    raised for the loop's backward."""
    monkeypatch.setitem(sys.modules, "cupy", _strict_cupy())
    gpu = compile_grad(fn, args, device="cuda", buffers=buffers, out_dir=tmp_path,
                       module_name=f"strict_{fn.__name__}_{int(buffers)}").fn
    cpu = compile_grad(fn, args, buffers=buffers).fn
    for g, c in zip(gpu(*args), cpu(*args)):
        np.testing.assert_allclose(g, c, rtol=1e-13, atol=1e-15)


def test_python_floats_use_math():
    text = module_text(models.python_floats, 0.3, 0.5)
    assert text.startswith('"""') and "import math\nimport numpy as xp" in text
    assert "math.exp(a)" in text


def test_long_lines_are_broken_inside_brackets_at_their_loosest_operator():
    """codegen/lines.py: a statement over 100 columns is broken inside a bracket (an
    assignment's value gets one) before its loosest operator or after a comma, continuation
    aligned under the bracket; the same syntax tree; a comment is cut; a docstring's lines and
    a line with no bracket to break in stay as they are."""
    from yota_s2s.codegen.lines import fit
    terms = " + ".join(f"t{i} * x{i}" for i in range(12))
    long = f"    total = {terms} - 1.5"
    fitted = fit(long).split("\n")
    assert fitted[0] == "    total = (" + fitted[0].split("(", 1)[1]
    assert all(len(line) <= 100 for line in fitted) and len(fitted) == 2
    assert fitted[1].startswith(" " * 13 + "+ t") and fitted[1].endswith(" - 1.5)")
    assert ast.dump(ast.parse(fit(long).strip().replace("\n", " "))) == \
        ast.dump(ast.parse(long.strip()))
    call = "        y = xp.add(" + ", ".join(f"operand_number_{i}" for i in range(6)) + ", out=buf1)"
    lines = fit(call).split("\n")
    assert [line.rstrip()[-1] for line in lines[:-1]] == [","] * (len(lines) - 1)
    assert lines[1].startswith(" " * len("        y = xp.add(") + "operand_number_")
    for head in ("    return ", "    t += "):
        line = head + ", ".join(f"gradient_of_number_{i}" for i in range(8)) if "return" in \
            head else head + " + ".join(f"value_{i}" for i in range(15))
        broken = fit(line).split("\n")
        assert len(broken) == 2 and broken[0].startswith(head + "(") and broken[1].endswith(")")
        assert ast.dump(ast.parse(fit(line).strip())) == ast.dump(ast.parse(line.strip()))
    # a target of several names gets brackets where the value has none to break in
    names = "    " + ", ".join(f"buf{i}" for i in range(1, 30)) + " = _work_arrays()"
    broken = fit(names).split("\n")
    assert broken[0].startswith("    (buf1, buf2, ") and broken[-1].endswith(") = _work_arrays()")
    assert all(len(line) <= 100 for line in broken) and broken[1].startswith("     buf")
    assert ast.dump(ast.parse(fit(names).strip())) == ast.dump(ast.parse(names.strip()))
    # ... and not where the value's brackets hold what is long
    call = "    dW1, db1 = step(" + ", ".join(f"argument{i}" for i in range(13)) + ")"
    broken = fit(call).split("\n")
    assert broken[0].startswith("    dW1, db1 = step(argument0, ") and len(broken) == 2
    comment = "    # " + "x" * 120
    assert fit(comment) == comment[:97] + "..."
    text = '"""\n' + "word " * 30 + '\n"""\n' + "    if mode != '" + "a" * 100 + "':"
    assert fit(text) == text


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
def test_every_generated_line_fits_in_100_columns(buffers):
    """The bench's workloads, loops among them (source comments inside loop bodies, the
    polynomial's one long sum), in both forms."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
    try:
        import workloads
    finally:
        sys.path.pop(0)
    import yota_s2s as ys
    for w in workloads.WORKLOADS + workloads.LOOP_WORKLOADS:
        if w.name in ("chain1e7", "rnn_T10000", "rnn_T1000", "rk4_1000", "ring_n10000",
                      "rnn_h16_T1000", "flow_200"):
            continue                                  # the same modules as smaller ones
        args = w.make_args(np.random.default_rng(0))
        text = ys.source(ys.simplegrad(w.loss, *args, wrt=w.wrt, buffers=buffers))
        long = [line for line in text.splitlines() if len(line) > 100]
        assert not long, (w.name, long)
