"""The ``yota-s2s`` command line, run as a user runs it: in a subprocess, in a project directory.

Each test writes model files into a fresh project (a directory with a ``pyproject.toml``), runs
a command and checks its exit status, its output and the files it writes; generated modules
are imported and run in a process where ``yota_s2s`` cannot be imported.
"""
from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

MODEL = '''
import numpy as np
import yota_s2s as ys


def predict(W, b, x):
    return np.tanh(W @ x + b[:, None])


def make(rng):
    return rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((3, 2))


@ys.example(make)
def loss(W, b, x):
    h = predict(W, b, x)
    return np.mean(h ** 2)


@ys.example(lambda rng: make(rng) + (2,))
def loss_pow(W, b, x, n):
    h = predict(W, b, x)
    if np.max(h) > 0:                   # arms of two shapes: decided by the example, a guard
        h = h[:2] * 2
    return np.sum(h ** n)
'''

PROBLEMS = '''
import numpy as np
import yota_s2s as ys


def helper(v):
    return np.fmod(v, 3.0)


@ys.example(lambda: (np.linspace(0.1, 2.0, 4),))
def loss(x):
    y = np.heaviside(x - 1.0, 0.5)
    try:
        y = y * 2
    except ValueError:
        pass
    return np.sum(y * x) + np.sum(helper(x))
'''

CUSTOM_RULE = '''
import numpy as np
import yota_s2s as ys


def logistic(x):
    return 1 / (1 + np.exp(-x))


ys.diffrule(logistic, "x", "dy * y * (1 - y)")


@ys.example(lambda: (np.linspace(-1.0, 1.0, 5),))
def loss(x):
    return np.sum(logistic(x) * x)
'''


def run(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "yota_s2s.cli", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def python(cwd: Path, code: str) -> subprocess.CompletedProcess:
    """``python -c code`` in ``cwd`` (so that ``cwd`` is on sys.path)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def run_isolated(directory: Path, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` with ``directory`` first on sys.path and ``yota_s2s`` not importable."""
    prelude = (f"import sys; sys.modules['yota_s2s'] = None; "
               f"sys.path.insert(0, {str(directory)!r})\n")
    return subprocess.run([sys.executable, "-I", "-c", prelude + textwrap.dedent(code)],
                          cwd=directory, capture_output=True, text=True, timeout=120)


# -- compile -----------------------------------------------------------------------------------

def test_compile_writes_one_module_per_model_file(project: Path) -> None:
    model = write(project / "model.py", MODEL)
    done = run(project, "compile", "model.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote model_grad.py  (loss: 3 args, ")
    assert "loss_pow: 4 args, " in done.stdout and "1 guard" in done.stdout
    assert done.stderr == ""                        # no progress in a pipe
    text = (project / "model_grad.py").read_text()
    assert re.search("\nSource: model.py, code sha256 [0-9a-f]{64}\n"
                     "Regenerate: yota-s2s compile model.py\n", text)
    assert "loss_grad: the gradient of loss (model.py:14), device cpu." in text
    assert "Compiled for: W float64[4, 3]; b float64[4]; x float64[3, 2]; n = 2." in text
    assert "def loss_grad(W, b, x):" in text and "def loss_pow_grad(W, b, x, n):" in text
    assert "import yota_s2s" not in text and "import model" not in text


def test_generated_module_runs_without_yota_s2s(project: Path, tmp_path_factory) -> None:
    write(project / "model.py", MODEL)
    assert run(project, "compile", "model.py").returncode == 0
    alone = tmp_path_factory.mktemp("alone")
    shutil.copy(project / "model_grad.py", alone)
    done = run_isolated(alone, '''
        import numpy as np
        import model_grad
        rng = np.random.default_rng(5)
        W, b, x = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((3, 2))
        value, dW, db, dx = model_grad.loss_grad(W, b, x)
        h = np.tanh(W @ x + b[:, None])
        dt = 2 * h / h.size * (1 - h * h)           # the gradient written out by hand
        assert np.isclose(value, np.mean(h ** 2))
        assert np.allclose(dW, dt @ x.T) and np.allclose(db, dt.sum(1))
        assert np.allclose(dx, W.T @ dt)
        try:
            import yota_s2s
        except ImportError:
            print("ran without yota_s2s")
    ''')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran without yota_s2s"


def test_output_is_byte_identical(project: Path) -> None:
    write(project / "src" / "model.py", MODEL)
    assert run(project, "compile", "src/model.py", env={"PYTHONHASHSEED": "1"}).returncode == 0
    first = (project / "src" / "model_grad.py").read_bytes()
    os.remove(project / "src" / "model_grad.py")
    done = run(project / "src", "compile", "model.py", env={"PYTHONHASHSEED": "2"})
    assert done.returncode == 0, done.stderr
    assert (project / "src" / "model_grad.py").read_bytes() == first
    assert b"Regenerate: yota-s2s compile src/model.py\n" in first      # from the project root


def test_func_and_arg_specs(project: Path) -> None:
    write(project / "model.py", '''
        import numpy as np

        def loss(W, x, n, scale=1.0, flag=False):
            for _ in range(n):
                x = np.tanh(W @ x)
            return np.sum(x) * scale if not flag else np.sum(W)
    ''')
    args = ["--func", "loss", "--arg", "x=float32[3,2]", "--arg", "W=float32[3,3]",
            "--arg", "n=2", "--arg", "flag=false", "-o", "grads"]
    done = run(project, "compile", "model.py", *args)
    assert done.returncode == 0, done.stderr
    text = (project / "grads" / "model_grad.py").read_text()
    assert ("Compiled for: W float32[3, 3]; x float32[3, 2]; n = 2; scale float; flag = False."
            in text)
    assert ("Regenerate: yota-s2s compile model.py --func loss --arg 'W=float32[3,3]' --arg "
            "'x=float32[3,2]' --arg n=2 --arg flag=False -o grads\n") in text
    assert run(project, "check", "model.py", *args).returncode == 0
    assert run(project, "check", "model.py", *args[:-2]).returncode == 1     # not in grads/


def test_wrt_and_device(project: Path) -> None:
    write(project / "model.py", MODEL)
    done = run(project, "compile", "model.py", "--func", "loss", "--wrt", "W", "--device", "cuda")
    assert done.returncode == 0, done.stderr
    text = (project / "model_grad.py").read_text()
    assert "import cupy as xp" in text and "device cuda" in text
    assert "Returns: loss, dW, None, None." in text
    assert "Regenerate: yota-s2s compile model.py --func loss --wrt W --device cuda\n" in text
    if importlib.util.find_spec("cupy") is None:     # no cupy: a message that says how to get it
        done = run(project, "check", "model.py", "--device", "cuda", "--gradcheck")
        assert "yota-s2s bug" not in done.stderr and done.returncode == 2, done.stderr
        assert "needs cupy, and cupy is not installed\nInstall cupy's binary wheel for your CUDA " \
               "version: pip install cupy-cuda12x (CUDA 12)" in done.stderr


def test_struct_arguments_from_the_example(project: Path) -> None:
    write(project / "model.py", '''
        import numpy as np
        import yota_s2s as ys

        class Layer:
            def __init__(self, W, b):
                self.W, self.b = W, b

        @ys.example(lambda rng: ([Layer(rng.standard_normal((3, 3)), np.zeros(3))],
                                 {"x": rng.standard_normal(3), "scale": 2.0}))
        def loss(layers, data):
            h = data["x"]
            for layer in layers:
                h = np.tanh(layer.W @ h + layer.b)
            return np.sum(h ** 2) * data["scale"]
    ''')
    done = run(project, "check", "model.py", "--gradcheck")
    assert done.returncode == 1 and "missing: model_grad.py" in done.stderr
    assert ("worst relative error layers[0].W " in done.stdout and ", layers[0].b " in done.stdout
            and ", data['x'] " in done.stdout and ", data['scale'] " in done.stdout)
    assert done.stdout.rstrip().endswith("[ok]")


# -- check -----------------------------------------------------------------------------------

def test_check_up_to_date_stale_missing(project: Path) -> None:
    model = write(project / "model.py", MODEL)
    assert run(project, "compile", "model.py").returncode == 0
    done = run(project, "check", "model.py")
    assert (done.returncode, done.stdout, done.stderr) == (0, "up to date: model_grad.py\n", "")

    model.write_text(model.read_text().replace("h ** 2", "h ** 4"))
    done = run(project, "check", "model.py", "--diff")
    assert done.returncode == 1
    assert "stale: model_grad.py" in done.stderr
    assert ("1 gradient file is out of date; regenerate with:\n    yota-s2s compile model.py"
            in done.stderr)
    assert "\n-    loss = (h ** 2).mean()\n" in done.stderr
    assert "\n+    loss = (h ** 4).mean()\n" in done.stderr

    os.remove(project / "model_grad.py")
    done = run(project, "check", "model.py")
    assert done.returncode == 1 and "missing: model_grad.py" in done.stderr


def test_check_stays_green_through_comments_docstrings_and_untraced_code(project: Path) -> None:
    """The header hashes the code the gradients were traced from (gradfile.code_digest), not
    the file: a comment, a docstring or an edit of an untraced function leaves the gradient
    file up to date; an edit of a traced helper makes it stale, and --diff shows the change."""
    model = write(project / "model.py", MODEL.replace(
        "def make(rng):", "def make(rng):\n    \"\"\"Example arguments.\"\"\"").replace(
        "    h = predict(W, b, x)\n    return np.mean",
        "    h = predict(W, b, x)  # layer\n    return np.mean"))
    model.write_text(model.read_text() + "\n\ndef train():\n    return 1\n")
    assert run(project, "compile", "model.py").returncode == 0
    before = (project / "model_grad.py").read_text()
    model.write_text(model.read_text()
                     .replace('"""Example arguments."""', '"""Example arguments (fixed)."""')
                     .replace("# layer", "# the hidden layer")
                     .replace("return 1", "return 2") + "# a trailing comment\n")
    done = run(project, "check", "model.py")
    assert (done.returncode, done.stdout, done.stderr) == (0, "up to date: model_grad.py\n", "")

    model.write_text(model.read_text().replace("np.tanh(W @ x + b[:, None])",
                                               "np.tanh(W @ x - b[:, None])"))
    done = run(project, "check", "model.py", "--diff")
    assert done.returncode == 1 and "stale: model_grad.py" in done.stderr
    old_digest = re.search("Source: model.py, code sha256 ([0-9a-f]{64})", before)[1]
    assert f"\n-Source: model.py, code sha256 {old_digest}\n+Source: model.py, code sha256 " \
        in done.stderr
    assert "\n+    # model.py:6  return np.tanh(W @ x - b[:, None])    (predict, inlined)\n" \
        in done.stderr


def test_check_gradcheck_reports_worst_error_per_argument(project: Path) -> None:
    write(project / "model.py", MODEL)
    assert run(project, "compile", "model.py").returncode == 0
    done = run(project, "check", "model.py", "--gradcheck")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("gradcheck")]
    assert len(lines) == 2 and all(line.endswith("[ok]") for line in lines)
    listed = lines[0].split("worst relative error ")[1].split("  [")[0]
    errors = [float(part.split()[-1]) for part in listed.split(",")]
    assert len(errors) == 3 and max(errors) < 1e-6


def test_check_gradcheck_catches_a_wrong_rule(project: Path) -> None:
    write(project / "model.py", CUSTOM_RULE.replace("dy * y * (1 - y)", "dy * y"))
    assert run(project, "compile", "model.py").returncode == 0
    done = run(project, "check", "model.py", "--gradcheck")
    assert done.returncode == 1
    assert "gradcheck model.py loss: worst relative error x " in done.stderr
    assert "[FAILED for x]" in done.stderr


SCALED = """
import numpy as np
import yota_s2s as ys

@ys.example(lambda: (np.ones(3),))
def loss(x):
    return np.sum(x * 2.0)
"""


def with_bytecode() -> dict:
    """An environment in which Python writes ``__pycache__`` as it does by default."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}        # empty: not set


WITHOUT_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}


def edit_model(model: Path) -> None:
    """``model.py`` with 3.0 for 2.0, stamped two seconds later: the fresh process that ran the
    gradient left model.py's bytecode behind, and an edit within the same second at the same
    size would be read from it (compile then rightly refuses: the code that runs is not the
    file's)."""
    model.write_text(model.read_text().replace("2.0", "3.0"))
    edited = os.stat(model)
    os.utime(model, ns=(edited.st_atime_ns, edited.st_mtime_ns + 2_000_000_000))


def test_a_gradient_file_rewritten_without_bytecode_leaves_no_stale_bytecode(
        project: Path) -> None:
    """Under PYTHONDONTWRITEBYTECODE compile removes bytecode it did not write."""
    model = write(project / "model.py", SCALED)
    grad = project / "model_grad.py"
    assert run(project, "compile", "model.py", env=WITHOUT_BYTECODE).returncode == 0
    assert gradient_in_a_fresh_process(project) == "2.0"     # leaves __pycache__ behind
    stamp = os.stat(grad)
    edit_model(model)
    assert run(project, "compile", "model.py", env=WITHOUT_BYTECODE).returncode == 0
    os.utime(grad, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))     # within the same second
    assert gradient_in_a_fresh_process(project) == "3.0"


def gradient_in_a_fresh_process(project: Path) -> str:
    done = subprocess.run([sys.executable, "-c", "import numpy as np, model_grad; "
                           "print(model_grad.loss_grad(np.ones(3))[1][0])"],
                          cwd=project, env=with_bytecode(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_gradient_file_rewritten_within_a_second_at_the_same_size_is_not_run_stale(
        project: Path) -> None:
    model = write(project / "model.py", SCALED)
    grad = project / "model_grad.py"
    assert run(project, "compile", "model.py", env=with_bytecode()).returncode == 0
    assert gradient_in_a_fresh_process(project) == "2.0"     # leaves __pycache__ behind
    stamp = os.stat(grad)
    edit_model(model)
    assert run(project, "compile", "model.py", env=with_bytecode()).returncode == 0
    assert os.stat(grad).st_size == stamp.st_size
    os.utime(grad, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))     # within the same second
    done = run(project, "check", "model.py", "--gradcheck")
    assert done.returncode == 0, done.stderr
    assert gradient_in_a_fresh_process(project) == "3.0"


def test_check_reports_bytecode_that_python_would_run_instead_of_the_file(project: Path) -> None:
    model = write(project / "model.py", SCALED)
    grad = project / "model_grad.py"
    assert run(project, "compile", "model.py").returncode == 0
    old = grad.read_text()
    edit_model(model)
    assert run(project, "compile", "model.py").returncode == 0
    # bytecode of the old text stamped as the new file's (rewritten by hand, a checkout...)
    info = os.stat(grad)
    cfile = Path(importlib.util.cache_from_source(str(grad)))
    cfile.parent.mkdir(exist_ok=True)
    cfile.write_bytes(importlib.util.MAGIC_NUMBER + bytes(4)
                      + (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                      + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little")
                      + marshal.dumps(compile(old, str(grad), "exec", dont_inherit=True)))
    assert gradient_in_a_fresh_process(project) == "2.0"     # what Python would run
    done = run(project, "check", "model.py", "--gradcheck")
    assert done.returncode == 1
    assert "stale bytecode: __pycache__/model_grad." in done.stderr
    assert "regenerate with:\n    yota-s2s compile model.py" in done.stderr
    assert run(project, "compile", "model.py", env=with_bytecode()).returncode == 0
    assert gradient_in_a_fresh_process(project) == "3.0"
    assert run(project, "check", "model.py").returncode == 0


@pytest.mark.parametrize("command, output", [("compile", "model_grad.py"),
                                             ("review", "model.loss.html")])
def test_compile_and_review_do_not_overwrite_files_they_did_not_write(
        project: Path, command: str, output: str) -> None:
    write(project / "model.py", SCALED)
    mine = write(project / output, "# my own notes\n")
    done = run(project, command, "model.py")
    assert done.returncode == 2
    assert f"{output} exists and was not written by yota-s2s" in done.stderr
    assert "--force" in done.stderr
    assert mine.read_text() == "# my own notes\n"
    assert run(project, command, "model.py").returncode == 2
    done = run(project, command, "model.py", "--force")
    assert done.returncode == 0, done.stderr
    assert run(project, command, "model.py").returncode == 0      # its own file: replaced


@pytest.mark.parametrize("code", ["0", "None", "'done'", "3"])
def test_a_model_that_calls_sys_exit_at_import_fails_check(project: Path, code: str) -> None:
    write(project / "model.py", SCALED)
    assert run(project, "compile", "model.py").returncode == 0
    (project / "model.py").write_text(f"import sys\nsys.exit({code})\n" + SCALED)
    for command in ("check", "compile"):
        done = run(project, command, "model.py")
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "model.py:2: importing model.py calls sys.exit(" in done.stderr
        assert "up to date" not in done.stdout


def test_a_model_that_ends_the_process_fails_check(project: Path) -> None:
    """os._exit(0) at import (issue 29: check exited 0, nothing checked): check runs in a
    child process that records that it ran to the end."""
    write(project / "model.py", SCALED)
    assert run(project, "compile", "model.py").returncode == 0
    (project / "model.py").write_text("import os\nos._exit(0)\n" + SCALED)
    done = run(project, "check", "model.py")
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "the check did not run to the end: the process ended with status 0" in done.stderr


def test_an_example_that_calls_sys_exit_fails_check(project: Path) -> None:
    write(project / "model.py", SCALED.replace("lambda: (np.ones(3),)", "lambda: exit(0)"))
    done = run(project, "check", "model.py")
    assert done.returncode == 3
    assert "called sys.exit(0)" in done.stderr


# -- a function that calls into the model: the import rule ------------------------------------

def test_custom_rule_imports_the_model_by_name(project: Path) -> None:
    write(project / "model.py", CUSTOM_RULE)
    assert run(project, "compile", "model.py").returncode == 0
    text = (project / "model_grad.py").read_text()
    assert "\nfrom model import logistic\n" in text and "= logistic(x)" in text
    done = python(project, """
        import numpy as np, model_grad
        x = np.linspace(-1.0, 1.0, 5)
        value, dx = model_grad.loss_grad(x)
        s = 1 / (1 + np.exp(-x))
        assert np.allclose(dx, s + x * s * (1 - s))
    """)
    assert done.returncode == 0, done.stderr


def test_model_in_a_package_is_imported_by_its_dotted_name(project: Path) -> None:
    write(project / "pkg" / "__init__.py", "")
    write(project / "pkg" / "model.py", CUSTOM_RULE)
    assert run(project, "compile", "pkg/model.py").returncode == 0
    assert "\nfrom pkg.model import logistic\n" in (project / "pkg" / "model_grad.py").read_text()
    done = python(project, "import numpy as np\nfrom pkg.model_grad import loss_grad\n"
                           "print(loss_grad(np.linspace(-1.0, 1.0, 5))[0])")
    assert done.returncode == 0, done.stderr


def test_output_elsewhere_says_where_the_model_must_be(project: Path) -> None:
    write(project / "models" / "model.py", CUSTOM_RULE)
    done = run(project, "compile", "models/model.py", "-o", "grads")
    assert done.returncode == 0, done.stderr
    assert "note: grads/model_grad.py imports model: where you import it," in done.stdout


# -- errors ------------------------------------------------------------------------------------

def test_compile_reports_every_problem_with_a_fix(project: Path) -> None:
    write(project / "model.py", PROBLEMS)
    done = run(project, "compile", "model.py")
    assert done.returncode == 3
    assert not (project / "model_grad.py").exists()
    err = done.stderr
    assert "model.py: loss does not compile (3 problems):" in err
    assert "model.py:11 in loss: np.heaviside has no derivative rule" in err
    assert ('    ys.diffrule(np.heaviside, "x1", "<expr in x1, y, dy>")\n'
            '    ys.nodiff(np.heaviside)\n') in err
    assert "model.py:12 in loss: `Try` statements are not supported" in err
    assert "model.py:6 in helper: np.fmod has no derivative rule" in err
    assert '    ys.diffrule(np.fmod, "x1", "<expr in x1, y, dy>")\n' in err
    assert "model_grad.py is not written: 1 of 1 function did not compile." in err
    assert err.index("np.heaviside") < err.index("`Try`") < err.index("np.fmod")


def test_pasted_stubs_make_it_compile(project: Path) -> None:
    try_block = "    try:\n        y = y * 2\n    except ValueError:\n        pass\n"
    fixed = PROBLEMS.replace(try_block, "")
    fixed += 'ys.nodiff(np.heaviside)\nys.diffrule(np.fmod, "x1", "dy")\n'
    write(project / "model.py", fixed)
    done = run(project, "check", "model.py", "--gradcheck")
    assert "[ok]" in done.stdout, done.stderr


@pytest.mark.parametrize("args, message", [
    (["compile", "nope.py"], "yota-s2s compile: nope.py: no such file"),
    (["compile", "model.py", "--func", "nope"], "model.py has no function 'nope'"),
    (["compile", "plain.py"], "plain.py marks no function with @ys.example"),
    (["compile", "model.py", "--arg", "W=float64[4,3]"], "--arg needs --func NAME"),
    (["compile", "plain.py", "--func", "f", "--arg", "x=float64[3"],
     "cannot read the argument spec 'float64[3'"),
    (["compile", "plain.py", "--func", "f", "--arg", "y=float64[3]"], "f has no parameter 'y'"),
    (["compile", "plain.py", "--func", "f", "--arg", "k=2"], "f needs --arg x=SPEC"),
    (["compile", "plain.py", "--func", "f", "--arg", "x"], "write NAME=SPEC"),
    (["trace", "plain.py", "--func", "f", "--arg", "x=float64[99999999999]"],   # not a bug
     "--arg x=float64[99999999999]: its example values (745 GiB) cannot be made"),
    (["compile", "model.py", "--wrt", "q"], "--wrt q: no function compiled here has that"),
    (["compile", "listy.py"], "the example factory of f returns a list, not a tuple"),
    (["compile", "model.py", "--device", "tpu"], "invalid choice: 'tpu'"),
    (["frobnicate", "model.py"], "invalid choice: 'frobnicate'"),
    (["compile"], "the following arguments are required: MODEL.py"),
])
def test_usage_errors_exit_2(project: Path, args: list[str], message: str) -> None:
    write(project / "model.py", MODEL)
    write(project / "plain.py", "import numpy as np\n\ndef f(x, k=1):\n    return np.sum(x) * k\n")
    write(project / "listy.py", "import numpy as np\nimport yota_s2s as ys\n\n"
                                "@ys.example(lambda: [np.ones(3)])\n"
                                "def f(x):\n    return np.sum(x)\n")
    done = run(project, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_a_model_that_does_not_import_exits_3(project: Path) -> None:
    write(project / "broken.py", "import numpy as np\n\nx = np.ones(3) @ np.ones(4)\n")
    done = run(project, "compile", "broken.py")
    assert done.returncode == 3
    assert "broken.py:3: importing broken.py fails: ValueError" in done.stderr


# -- trace, show, review -----------------------------------------------------------------------

def test_trace_prints_the_tape(project: Path) -> None:
    write(project / "model.py", MODEL)
    done = run(project, "trace", "model.py", "--func", "loss")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "tape loss(W:f64[4,3], b:f64[4], x:f64[3,2]) -> f64[]"
    assert lines[1].startswith("  t1:f64[4,2] = matmul W x") and lines[1].endswith("# model.py:6")
    assert "\033[" not in done.stdout
    grad = run(project, "trace", "model.py", "--func", "loss", "--grad", "--color", "always")
    assert "\033[1;36mmatmul\033[0m" in grad.stdout and "grads W: dW, b: db, x: dx" in grad.stdout


def test_trace_after_a_stage_of_the_passes(project: Path) -> None:
    """``trace --grad --after STAGE``: the gradient tape as that stage of the passes leaves it
    (the gradients of a sum are read-only broadcasts after ``fixed-point``, arrays of their own
    after ``fresh-outputs``); a stage that is not one of the plain form's is refused with the
    list of stages."""
    write(project / "model.py", """
        import numpy as np


        def f(x, v):
            return np.sum(x * 2.0 + v)
        """)
    command = ("trace", "model.py", "--func", "f", "--arg", "x=float64[3]",
               "--arg", "v=float64[3]", "--grad")
    done = run(project, *command, "--after", "fixed-point")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# after the stage fixed-point: fold, simplify, signs, cse, "
                                  "dce, until nothing changes\ntape f(x:f64[3], v:f64[3])")
    assert re.search(r"\n  dx:f64\[3\] = broadcast_to 2.0 \(3,\) +# model.py:5\n", done.stdout)
    assert done.stdout.endswith("  return f\n  grads x: dx, v: dt2\n\n")
    last = run(project, *command, "--after", "in-place")          # the plain form's last
    assert re.search(r"\n  dx:f64\[3\] = full \(3,\) 2.0 +# model.py:5\n", last.stdout)
    assert last.stdout.endswith("  return f\n  grads x: dx, v: dv\n\n")
    wrong = run(project, *command, "--after", "lowered")
    assert wrong.returncode == 2 and "argument --after: invalid choice: 'lowered' (choose from " \
        "'fixed-point', 'fresh-outputs', 'plain-constants', 'bodies', 'remade-rows', " \
        "'stacked-products', 'in-place', 'recompute', 'lower')" in wrong.stderr
    buffered = run(project, *command, "--after", "recompute")
    assert buffered.returncode == 2 and buffered.stderr == (
        "yota-s2s trace: the stage recompute makes the buffered form only; the gradient files "
        "have the plain form\nIts stages: fixed-point, fresh-outputs, plain-constants, bodies, "
        "remade-rows, in-place.\n")
    alone = run(project, *command[:-1], "--after", "bodies")
    assert alone.returncode == 2 and "Add --grad: yota-s2s trace --grad --after bodies" in \
        alone.stderr


def test_trace_of_a_function_that_does_not_compile(project: Path) -> None:
    write(project / "model.py", PROBLEMS)
    done = run(project, "trace", "model.py")
    assert done.returncode == 3 and "(3 problems)" in done.stderr


def test_show_prints_what_compile_writes(project: Path) -> None:
    write(project / "model.py", MODEL)
    shown = run(project, "show", "model.py")
    assert shown.returncode == 0 and not (project / "model_grad.py").exists()
    assert run(project, "compile", "model.py").returncode == 0
    assert shown.stdout == (project / "model_grad.py").read_text() + "\n"
    colored = run(project, "show", "model.py", env={"FORCE_COLOR": "1"})
    assert "\033[35mdef\033[0m loss_grad" in colored.stdout
    plain = run(project, "show", "model.py", "--color", "auto", env={"NO_COLOR": "1"})
    assert "\033[" not in plain.stdout


def test_a_reader_that_stops_early_ends_it_quietly(project: Path) -> None:
    write(project / "model.py", MODEL)
    with subprocess.Popen([sys.executable, "-m", "yota_s2s.cli", "show", "model.py"],
                          cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout.readline().startswith(b'"""Gradients for model.py')
        proc.stdout.close()
        assert proc.wait(timeout=120) in (0, 141) and proc.stderr.read() == b""


def test_review_writes_a_page_per_function(project: Path) -> None:
    write(project / "model.py", MODEL)
    done = run(project, "review", "model.py", "-o", "review.html")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["wrote review.loss.html  (review of loss)",
                                        "wrote review.loss_pow.html  (review of loss_pow)"]
    one = run(project, "review", "model.py", "--func", "loss", "-o", "pages")
    assert one.returncode == 0 and (project / "pages" / "model.loss.html").is_file()


# -- progress and quiet ------------------------------------------------------------------------

def test_progress_on_a_terminal_only(project: Path) -> None:
    write(project / "model.py", MODEL)
    primary, secondary = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "yota_s2s.cli", "compile", "model.py"],
                          cwd=project, stdout=subprocess.PIPE, stderr=secondary, text=True,
                          timeout=120)
    os.close(secondary)
    seen = b""
    while select.select([primary], [], [], 1)[0]:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert proc.returncode == 0
    assert b"[1/2] model.py: loss" in seen and b"[2/2] model.py: loss_pow" in seen
    assert proc.stdout.startswith("wrote model_grad.py")
    quiet = run(project, "compile", "model.py", "-q")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_console_script_is_installed() -> None:
    script = shutil.which("yota-s2s", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the package is not installed with its console script here")
    done = subprocess.run([script, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().startswith("yota-s2s ")


def test_the_mlp_example_compiles_and_imports_as_in_the_issue(project: Path) -> None:
    (project / "examples").mkdir()
    shutil.copy(REPO / "examples" / "mlp.py", project / "examples")
    done = run(project, "compile", "examples/mlp.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote examples/mlp_grad.py  (loss: 6 args, ")
    imported = python(project, "from examples.mlp_grad import loss_grad")
    assert imported.returncode == 0, imported.stderr
    assert run(project, "check", "examples/mlp.py", "--gradcheck").returncode == 0


def test_the_committed_example_gradient_file_is_up_to_date() -> None:
    """Our own repository follows the workflow: examples/mlp_grad.py is committed and checked,
    as a project's CI would (`yota-s2s compile examples/mlp.py` regenerates it)."""
    done = run(REPO, "check", "examples/mlp.py")
    assert done.returncode == 0, done.stdout + done.stderr
