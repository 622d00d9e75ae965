"""The rule table: every built-in rule parses and uses only legal placeholders, every one is
exercised by a case of the gradient-check table, and docs/coverage.md lists them as they are."""
import builtins
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import yota_s2s.rules
from yota_s2s.compiler import gradient_tape
from yota_s2s.rules import RULES
from yota_s2s.rules.discrete import DISCRETE
from yota_s2s.rules.template import free_names

from .test_gradcheck import RULE_CASES
from .test_gradcheck_scipy import EXTRA_CASES, HAS_SCIPY

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = Path(yota_s2s.rules.__file__).parent


def builtin_rules() -> dict:
    """The rules registered by yota_s2s/rules/ (tests may add their own elsewhere)."""
    return {key: rule for key, rule in RULES.rules.items()
            if rule.loc is not None and Path(rule.loc.file).parent == RULE_FILES}


def placeholders(prim) -> set[str]:
    return {o.lstrip("*") for o in prim.operands} | {o for o, _ in prim.options} | {"y", "dy"}


@pytest.mark.parametrize("key", sorted(builtin_rules(), key=str), ids=lambda k: f"{k[0].name}-{k[1]}")
def test_rule_parses_and_names_only_placeholders(key):
    prim, argname = key
    rule = builtin_rules()[key]
    assert argname in {o.lstrip("*") for o in prim.operands}
    if rule.expr is not None:
        unknown = {n for n in free_names(rule.expr) - placeholders(prim)
                   if n not in rule.globals and not hasattr(builtins, n)}
        assert not unknown, f"{rule}: {unknown}"
    elif rule.fn is not None:
        assert set(inspect.signature(rule.fn).parameters) <= placeholders(prim), str(rule)
    else:
        assert rule.scatter


def exercised() -> tuple[set, set]:
    """(rules the backward pass used, primitives recorded) over every case of RULE_CASES and
    of the signal and scipy table (EXTRA_CASES)."""
    rules, used, recorded = RULES.copy(), set(), set()
    lookup = rules.rule

    def recording(prim, argname):
        used.add((prim, argname))
        return lookup(prim, argname)
    rules.rule = recording
    for case in RULE_CASES + EXTRA_CASES:
        forward, _ = gradient_tape(case.fn, case.make_args(np.random.default_rng(1)), rules=rules,
                                   passes=False)
        recorded.update(s.prim for s in forward.stmts)
    return used, recorded


@pytest.fixture(scope="module")
def coverage():
    return exercised()


def test_every_rule_has_a_case_in_the_gradient_table(coverage):
    used, _ = coverage
    missing = sorted(str(rule) for key, rule in builtin_rules().items() if key not in used)
    assert not missing, "rules with no case in RULE_CASES (tests/test_gradcheck.py) or " \
        "EXTRA_CASES (tests/test_gradcheck_scipy.py):\n" + \
        "\n".join(missing)


def test_every_function_without_a_gradient_is_recorded_by_a_case(coverage):
    _, recorded = coverage
    missing = sorted(fn.__name__ for fn in DISCRETE if RULES.lookup(fn) not in recorded)
    assert not missing, f"no case records {missing}"


def test_a_function_without_a_rule_is_refused_with_the_stub_to_add():
    def uses_fft(x):
        return np.sum(np.fft.hfft(x))
    with pytest.raises(yota_s2s.NoRuleError) as info:
        gradient_tape(uses_fft, (np.ones(4),))
    assert 'ys.diffrule(np.fft.hfft, "a", "<expr in a, y, dy>")' in str(info.value)


@pytest.mark.skipif(not HAS_SCIPY, reason="the page lists the scipy family, registered with scipy")
def test_coverage_page_is_up_to_date():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "rule_coverage.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
