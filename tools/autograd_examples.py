"""autograd's examples run with yota_s2s, their imports changed, against autograd (issue 35).

    python tools/autograd_examples.py --autograd PATH [--only convnet,ode_net] [--iters 3]

PATH is a copy of https://github.com/HIPS/autograd (a work tree, or a bare git directory, read
at HEAD); nothing of autograd's is kept in this repository. Each example (``EXAMPLES``) is read
from the copy and written twice into a temporary folder: as it is (run with autograd, when
autograd is importable), and ported, with only its imports rewritten (``PORT``: autograd.numpy
-> numpy, ``grad`` -> ``ys.gradient``, ``flatten`` -> ``ys.flatten``, ``odeint`` /
``fixed_point`` -> ``ys.odeint`` / ``ys.fixed_point``, ``autograd.scipy.signal`` ->
``yota_s2s.signal``, autograd's ``adam`` -> ``adam`` below, written with ``ys.flatten``).

Both run the same way, statement by statement (a script's ``if __name__ == "__main__":`` body
too), as a module of the example's name: matplotlib is a stand-in that draws nothing, MNIST
(``data_mnist.mnist``, a download) is a small random set of the same shapes (``fake_mnist``),
an optimizer runs its first ``--iters`` steps only, and ``OVERRIDES`` sets a few names after
the statement that binds them (convnet's unseeded ``RandomState()``, its 50 epochs). Every call
of a gradient function that ``grad`` made is recorded: the value of the function at the
arguments and the gradient. The report compares the two runs call by call (and the numbers each
printed), with the statements that failed in either.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import sys
import tempfile
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import yota_s2s as ys  # noqa: E402
from public_models import read  # noqa: E402  (a file of a copy of a repository)

EXAMPLES = ["neural_net", "neural_net_regression", "ode_net", "fixed_points", "convnet"]
HELPERS = {"neural_net": ["data.py"]}           # autograd's own modules an example imports

# import line (stripped) -> its port; an import of autograd's that is not here is an error
PORT = {
    "import autograd.numpy as np": "import numpy as np",
    "import autograd.numpy.random as npr": "import numpy.random as npr",
    "from autograd import grad": "from yota_s2s import gradient as grad",
    "from autograd.misc.flatten import flatten": "from yota_s2s import flatten",
    "from autograd.misc import flatten": "from yota_s2s import flatten",
    "from autograd.misc.optimizers import adam": "from autograd_examples import adam",
    "from autograd.scipy.special import logsumexp": "from scipy.special import logsumexp",
    "from autograd.scipy.stats import norm": "from scipy.stats import norm",
    "from autograd.builtins import tuple": "",
    "from autograd.scipy.integrate import odeint": "from yota_s2s import odeint",
    "from autograd.misc.fixed_points import fixed_point": "from yota_s2s import fixed_point",
    "import autograd.scipy.signal": "import yota_s2s.signal",
}
MODULE_PATHS = {"autograd.scipy.signal.": "yota_s2s.signal."}   # convnet's alias of the import

# name -> value, set after the statement that binds it (both runs)
OVERRIDES: dict[str, dict[str, Callable[[dict], Any]]] = {
    "convnet": {"rs": lambda ns: ns["npr"].RandomState(0),      # RandomState(): unseeded
                "num_epochs": lambda ns: 1},
}


def ported(source: str) -> str:
    """``source`` with its imports of autograd rewritten (``PORT``, ``MODULE_PATHS``)."""
    lines = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped in PORT:
            line = line[:len(line) - len(line.lstrip())] + PORT[stripped]
        elif re.match(r"(from|import)\s+autograd\b", stripped):
            raise SystemExit(f"no port for the import {stripped!r}: add it to PORT")
        for old, new in MODULE_PATHS.items():
            line = line.replace(old, new)
        lines.append(line)
    return "\n".join(lines) + "\n"


def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """autograd's ``adam`` (``autograd.misc.optimizers``) for the ported examples: the
    parameters flattened with ``ys.flatten``, the gradient (a ``{path: array}`` dict of
    ``ys.gradient``) laid out the same way by ``unflatten.flat``; the same arithmetic."""
    flat, unflatten = ys.flatten(x)
    m = np.zeros(len(flat))
    v = np.zeros(len(flat))
    for i in range(num_iters):
        g_struct = grad(unflatten(flat), i)
        g = unflatten.flat(g_struct)
        if callback:
            callback(unflatten(flat), i, unflatten(g))
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * (g**2) + b2 * v
        mhat = m / (1 - b1 ** (i + 1))
        vhat = v / (1 - b2 ** (i + 1))
        flat = flat - step_size * mhat / (np.sqrt(vhat) + eps)
    return unflatten(flat)


# ----- the world the examples run in -------------------------------------------------------
class Inert(types.ModuleType):
    """matplotlib: every attribute, call and item is another one that does nothing."""

    def __getattr__(self, name: str) -> "Inert":
        if name.startswith("__"):
            raise AttributeError(name)
        return Inert(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> "Inert":
        return Inert(self.__name__ + "()")

    def __iter__(self):
        return iter(())


def fake_mnist() -> types.ModuleType:
    """``data_mnist`` with ``mnist()``: 512 training and 128 test images of random pixels
    (MNIST's 28 x 28 uint8, labels 0-9), the same on every call."""
    def mnist():
        r = np.random.RandomState(1)
        return (r.randint(0, 256, (512, 28, 28)).astype(np.uint8), r.randint(0, 10, 512),
                r.randint(0, 256, (128, 28, 28)).astype(np.uint8), r.randint(0, 10, 128))
    module = types.ModuleType("data_mnist")
    module.mnist = mnist
    return module


def leaves(x: Any) -> list[np.ndarray]:
    """The arrays of a gradient or a value: autograd's lists and tuples, and ``ys.gradient``'s
    ``{path: array}`` dicts by sorted path (the same order)."""
    if isinstance(x, dict):
        return [a for k in sorted(x) for a in leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [a for item in x for a in leaves(item)]
    return [np.asarray(x, dtype=float)]


@dataclass
class Run:
    """What one run of an example did: each gradient call's ``(value, gradient leaves)``,
    the numbers it printed, and the statements that raised (line, error)."""

    calls: list = field(default_factory=list)
    printed: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    output: str = ""


def recording(grad: Callable, run: Run) -> Callable:
    """``grad`` whose gradient functions record each call (``grad(grad(f))`` differentiates
    the gradient function itself, unrecorded)."""
    def grad_(fun, *args, **kwargs):
        inner = getattr(fun, "recorded", fun)
        df = grad(inner, *args, **kwargs)

        def call(*a, **k):
            g = df(*a, **k)
            run.calls.append((leaves(inner(*a, **k)), leaves(g)))
            return g
        call.recorded = df
        return call
    return grad_


def capped(optimizer: Callable, iters: int) -> Callable:
    """``optimizer`` running its first ``iters`` steps at most."""
    def run(grad, x, callback=None, num_iters=100, **kwargs):
        return optimizer(grad, x, callback, num_iters=min(num_iters, iters), **kwargs)
    return run


# ----- running an example ------------------------------------------------------------------
def statements(tree: ast.Module) -> list[ast.stmt]:
    """A script's statements in order, its ``if __name__ == "__main__":`` body among them."""
    out = []
    for stmt in tree.body:
        if (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare)
                and ast.unparse(stmt.test).replace("'", '"') == '__name__ == "__main__"'):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out


def one_statement(stmt: ast.stmt, imports: list[ast.stmt], path: Path) -> types.CodeType:
    """``stmt`` compiled as it is in its whole file: after ``if False:`` and the file's imports,
    so that CPython compiles ``np.sum(x)`` as it does there (a method of an imported name),
    and yota_s2s finds the functions it defines to be the file's (``StaleSourceError``)."""
    never = ast.If(ast.Constant(False), imports or [ast.Pass()], [])
    tree = ast.fix_missing_locations(ast.Module([ast.copy_location(never, stmt), stmt], []))
    return compile(tree, str(path), "exec", dont_inherit=True)


def run_example(name: str, folder: Path, iters: int) -> Run:
    """Run ``folder/name.py`` as the module ``name``, statement by statement (module
    docstring), recording into a ``Run``."""
    touched = [name, "data", "data_mnist", *[m for m in sys.modules if m.startswith("matplotlib")]]
    saved = {m: sys.modules.pop(m) for m in touched if m in sys.modules}   # put back at the end
    for mpl in ("matplotlib", "matplotlib.pyplot", "matplotlib.image", "matplotlib.cm"):
        sys.modules[mpl] = Inert(mpl)
    sys.modules["data_mnist"] = fake_mnist()
    sys.path.insert(0, str(folder))
    path = folder / f"{name}.py"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    ns, run, out = module.__dict__, Run(), io.StringIO()
    overrides = dict(OVERRIDES.get(name, {}))
    try:
        body = statements(ast.parse(path.read_text(), str(path)))
        imports = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]
        for stmt in body:
            code = one_statement(stmt, imports, path)
            try:
                with contextlib.redirect_stdout(out):
                    exec(code, ns)
            except Exception as e:                      # noqa: BLE001  (reported, then on)
                run.failed.append((stmt.lineno, f"{type(e).__name__}: {str(e)[:200]}"))
                if "-v" in sys.argv:
                    traceback.print_exc()
            for key in list(overrides):
                if key in ns:
                    ns[key] = overrides.pop(key)(ns)
            if "grad" in ns and not hasattr(ns["grad"], "recording"):
                ns["grad"] = recording(ns["grad"], run)
                ns["grad"].recording = True
            if "adam" in ns and not hasattr(ns["adam"], "capped"):
                ns["adam"] = capped(ns["adam"], iters)
                ns["adam"].capped = True
    finally:
        sys.path.remove(str(folder))
        for m in [*touched, "matplotlib.pyplot", "matplotlib.image", "matplotlib.cm"]:
            sys.modules.pop(m, None)
        sys.modules.update(saved)
    run.output = out.getvalue()
    run.printed = [float(x) for x in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+|nan",
                                                run.output)]
    return run


def compare(ours: Run, theirs: Run) -> tuple[str, float]:
    """``(what differs and how much was compared, largest relative difference)`` of the
    recorded calls and printed numbers (relative to the largest magnitude of each array)."""
    worst, notes, count = 0.0, [], 0
    if len(ours.calls) != len(theirs.calls):
        notes.append(f"{len(ours.calls)} gradient calls, autograd {len(theirs.calls)}")
    for (v, g), (w, h) in zip(ours.calls, theirs.calls):
        for a, b in zip(v + g, w + h):
            if np.shape(a) != np.shape(b):
                notes.append(f"shapes {np.shape(a)} and {np.shape(b)}")
                continue
            scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-300)
            count += np.size(b)
            worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)) / scale)
    if len(ours.printed) != len(theirs.printed):
        notes.append(f"printed {len(ours.printed)} numbers, autograd {len(theirs.printed)}")
    for a, b in zip(ours.printed, theirs.printed):
        worst = max(worst, abs(a - b) / max(abs(b), 1e-300))
    notes.append(f"{count} values and gradient entries, {len(theirs.printed)} printed numbers")
    return "; ".join(notes), worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--autograd", required=True, help="a copy of HIPS/autograd")
    parser.add_argument("--only", help="examples to run, comma separated")
    parser.add_argument("--iters", type=int, default=3, help="optimizer steps (default 3)")
    ns, _ = parser.parse_known_args(argv)
    names = ns.only.split(",") if ns.only else EXAMPLES
    try:
        import autograd  # noqa: F401
        have_autograd = True
    except ImportError:
        have_autograd = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            theirs_dir, ours_dir = Path(tmp, name, "autograd"), Path(tmp, name, "ported")
            for folder in (theirs_dir, ours_dir):
                folder.mkdir(parents=True)
            for file in [f"{name}.py", *HELPERS.get(name, [])]:
                source = read(ns.autograd, f"examples/{file}")
                (theirs_dir / file).write_text(source)
                (ours_dir / file).write_text(ported(source))
            ours = run_example(name, ours_dir, ns.iters)
            theirs = run_example(name, theirs_dir, ns.iters) if have_autograd else None
            rows.append(report_row(name, ours, theirs))
            print(rows[-1], flush=True)
    return 0


def report_row(name: str, ours: Run, theirs: Run | None) -> str:
    failed = "; ".join(f"line {line}: {why}" for line, why in ours.failed) or "all statements"
    row = f"{name:24} ran: {failed}; {len(ours.calls)} gradient calls"
    if theirs is None:
        return row + " (autograd not importable: not compared)"
    if theirs.failed:
        row += " | autograd failed at " + "; ".join(f"line {n}: {w}" for n, w in theirs.failed)
    notes, worst = compare(ours, theirs)
    return row + f" | vs autograd: max relative difference {worst:.1e}" + \
        (f" ({notes})" if notes else "")


if __name__ == "__main__":
    sys.modules.setdefault("autograd_examples", sys.modules["__main__"])   # PORT's adam
    sys.exit(main())
