"""Start-up: ``import yota_s2s`` imports no optional library and parses no rule. The scipy rule
families are imported on first sight of scipy (rules/__init__.py ``DEFERRED``), before the
frontend looks a scipy function up and before a user's rule for one (which then wins); listings
load them all. A built-in rule's expression is parsed and checked when a gradient first needs it
(rules/registry.py ``Rule``), a user's when it is registered."""
from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
needs_scipy = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                 reason="scipy is not installed")


def run(script: str, tmp_path: Path, before: bool = False) -> str:
    """``script``'s output in a fresh Python (``before``: the modules loaded at its start are
    ``before``, so that what an import adds can be told from what Python loads itself)."""
    if before:
        script = "import sys\nbefore = set(sys.modules)\n" + script
    (tmp_path / "model.py").write_text(
        "import numpy as np\nimport scipy.special\n\n\n"
        "def loss(x):\n    return np.sum(scipy.special.expit(x) * scipy.special.erf(x))\n")
    env = {**os.environ, "YOTA_S2S_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_scipy
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


@needs_scipy
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


# what a profile hook counts: calls of these functions, by the file they are defined in
PARSING = """
import sys
from collections import Counter
from pathlib import Path
parsed = Counter()

def count(frame, event, arg):
    code = frame.f_code
    if event == "call" and (code.co_name, Path(code.co_filename).name) in (
            ("parse_rule_expr", "template.py"), ("parse", "gast.py")):
        parsed[code.co_name] += 1

sys.setprofile(count)
"""


def test_import_yota_s2s_parses_no_rule_and_a_gradient_parses_the_rules_it_uses(tmp_path):
    (tmp_path / "tanh_model.py").write_text(
        "import numpy as np\n\n\ndef loss(x):\n    return np.sum(np.tanh(x))\n")
    out = run(PARSING + (
        "import yota_s2s as ys\n"
        "sys.setprofile(None)\n"
        "print(dict(parsed))\n"
        "import numpy as np\n"
        "from yota_s2s.rules import RULES\n"
        "tanh = RULES.rule(RULES.lookup(np.tanh), 'x')\n"
        "sys.setprofile(count)\n"
        "x = np.array([0.5, -1.0, 2.0])\n"
        "import tanh_model\n"
        "g = ys.grad(tanh_model.loss, x)[1]\n"
        "sys.setprofile(None)\n"
        "print(parsed['parse_rule_expr'] > 0, tanh.expr is not None)\n"
        "print(np.allclose(g, 1 - np.tanh(x) ** 2, rtol=1e-14, atol=0))\n"), tmp_path)
    at_import, parsed, right = out.splitlines()
    assert at_import == "{}" and parsed == "True True" and right == "True"


def twice(x):
    return 2 * x


def test_a_broken_builtin_rule_says_where_it_is_registered_when_first_used():
    """A built-in rule file's mistake (here a module named like one) is found at first use, and
    says the same as a user's mistake at registration: what, the rule's file:line, what to do."""
    from yota_s2s.errors import RuleError
    from yota_s2s.rules import RULES
    rules = RULES.copy()
    family = {"__name__": "yota_s2s.rules.broken", "rules": rules, "twice": twice}
    exec(compile("\n\nrules.diffrule(twice, 'x', 'dy * slope')\n", "broken.py", "exec"), family)
    rule = rules.rule(rules.lookup(twice), "x")            # registered, not parsed yet
    with pytest.raises(RuleError) as info:
        rule.expr
    assert "the rule for twice uses 'slope', which is neither a parameter of twice nor defined " \
        "where the rule is registered" in str(info.value)
    assert (info.value.loc.file, info.value.loc.line) == ("broken.py", 3)
    assert "Rules may use: dy, x, y" in info.value.hint
    with pytest.raises(RuleError, match="the rule for twice uses 'slope'") as user:
        rules.diffrule(twice, "x", "dy * slope")           # a user's: refused at once, here
    assert user.value.loc.file == __file__


COMPILE_MACHINERY = ("gast", "yota_s2s.frontend", "yota_s2s.passes", "yota_s2s.ad",
                     "yota_s2s.codegen", "yota_s2s.compiler")


def test_import_yota_s2s_imports_no_compile_machinery_until_the_first_compile(tmp_path):
    """``import yota_s2s`` leaves the frontend (and gast), the passes, AD, codegen and the
    pipeline unimported, and the standard library modules only they need; the first
    ``ys.grad`` imports them and computes the gradient. Importing them registers no rule (every
    built-in family registers at ``import yota_s2s``): the second call finds the first's
    gradient in the cache, whose key holds ``RULES.version``."""
    (tmp_path / "layer_model.py").write_text(
        "import numpy as np\n\n\ndef loss(x, W):\n    return np.sum(np.tanh(W @ x) ** 2)\n")
    out = run(
        f"machinery = {COMPILE_MACHINERY!r}\n"
        "def loaded():\n"
        "    return sorted(m for m in sys.modules\n"
        "                  if any(m == p or m.startswith(p + '.') for p in machinery))\n"
        "import numpy as np\n"
        "import yota_s2s as ys\n"
        "print(loaded(), sorted(m for m in ('fractions', 'html', 'unicodedata')\n"
        "                       if m in sys.modules and m not in before))\n"
        "version = ys.RULES.version\n"
        "import layer_model\n"
        "x = np.array([0.5, -1.0, 2.0])\n"
        "W = np.arange(6.0).reshape(2, 3) / 7\n"
        "val, g = ys.grad(layer_model.loss, x, W)\n"
        "print([m for m in loaded() if m in machinery])\n"
        "val, g = ys.grad(layer_model.loss, x, W)      # found again: the rules did not change\n"
        "print(ys.RULES.version == version, ys.cache_info())\n"
        "t = np.tanh(W @ x)\n"
        "print(np.allclose(g[0], W.T @ (2 * t * (1 - t * t)), rtol=1e-13, atol=0),\n"
        "      np.allclose(g[1], np.outer(2 * t * (1 - t * t), x), rtol=1e-13, atol=0),\n"
        "      np.isclose(val, np.sum(t ** 2), rtol=1e-14, atol=0))\n", tmp_path, before=True)
    at_import, after, cached, right = out.splitlines()
    assert at_import == "[] []" and after == str(sorted(COMPILE_MACHINERY))
    assert cached == "True {'hits': 1, 'misses': 1, 'guard_failures': 0, 'variants': 1}"
    assert right == "True True True"
