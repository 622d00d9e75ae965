"""Start-up: ``import yota_s2s`` imports no optional library. The scipy rule families are
imported on first sight of scipy (rules/__init__.py ``DEFERRED``), before the frontend looks a
scipy function up and before a user's rule for one (which then wins); listings load them all."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
pytest.importorskip("scipy")


def run(script: str, tmp_path: Path) -> str:
    (tmp_path / "model.py").write_text(
        "import numpy as np\nimport scipy.special\n\n\n"
        "def loss(x):\n    return np.sum(scipy.special.expit(x) * scipy.special.erf(x))\n")
    env = {**os.environ, "YOTA_S2S_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_yota_s2s_imports_no_scipy_and_its_rules_load_on_first_sight(tmp_path):
    out = run(
        "import sys\n"
        "import numpy as np\n"
        "import yota_s2s as ys\n"
        "from yota_s2s.rules import OPTIONAL, RULES\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'sklearn')),\n"
        "      OPTIONAL)\n"
        "version = RULES.version\n"
        "import model                                    # imports scipy.special\n"
        "x = np.array([0.5, -1.0, 2.0])\n"
        "g = ys.grad(model.loss, x)[1]\n"
        "print(OPTIONAL, RULES.version == version)\n"
        "s = 1 / (1 + np.exp(-x))\n"
        "from math import erf, exp, pi\n"
        "erf_x = np.array([erf(v) for v in x])\n"
        "want = s * (1 - s) * erf_x + s * 2 / np.sqrt(pi) * np.exp(-x * x)\n"
        "print(np.allclose(g, want, rtol=1e-12, atol=0))\n", tmp_path)
    before, after, right = out.splitlines()
    # which other families come with it depends on what scipy.special imports in this scipy
    assert before == "[] []" and after.startswith("['scipy_special'") and right == "True"
    assert after.endswith("] True")


def test_a_users_rule_for_a_scipy_function_wins_over_the_family_loaded_after_it(tmp_path):
    out = run(
        "import numpy as np\n"
        "import scipy.special\n"
        "import yota_s2s as ys\n"
        "ys.diffrule(scipy.special.erf, 'x', 'dy * 3.0')       # before any lookup\n"
        "import model\n"
        "x = np.array([0.5, -1.0])\n"
        "g = ys.grad(model.loss, x)[1]\n"
        "s = 1 / (1 + np.exp(-x))\n"
        "from math import erf\n"
        "print(np.allclose(g, s * (1 - s) * np.array([erf(v) for v in x]) + s * 3.0))\n"
        "print(ys.rules(scipy.special.erf).text.splitlines()[1].split()[1:3])\n"
        "print(ys.rules.OPTIONAL)\n", tmp_path)
    right, rule, loaded = out.splitlines()
    assert right == "True" and rule == "['dy', '*']"
    # every family loaded (ys.rules lists them all), in the order this scipy's imports met them
    assert sorted(ast.literal_eval(loaded)) == ["scipy_misc", "scipy_special", "scipy_stats"]
