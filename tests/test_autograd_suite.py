"""tools/autograd_suite.py: autograd-style tests run through the shim are counted by outcome.

autograd's own tests are not in this repository (the tool reads them from a copy at run
time); these few stand in for them, one per outcome, to check the harness itself: that its
``check_grads`` passes a right derivative and fails a wrong one, and that the counting
tells a wrong value, a refusal, a crash and an autograd internal apart.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import autograd_suite  # noqa: E402

AUTOGRAD_STYLE_TESTS = '''
import autograd.numpy as np
import yota_s2s as ys
from autograd import grad
from autograd.extend import primitive
from autograd.test_util import check_grads


def double(x):
    return 2.0 * x


ys.diffrule(double, "x", "3.0 * dy")   # wrong on purpose


def test_right_derivative():
    check_grads(np.sin, modes=["rev"], order=1)(np.array([0.3, -0.5]))


def test_gradient_value():
    assert np.allclose(grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0])), [2.0, 4.0])


def test_wrong_rule():
    check_grads(double, modes=["rev"], order=1)(np.array([1.0, 2.0]))


def test_refused():
    grad(lambda n, x: x * n)(3, 2.0)   # an int has no gradient: a UsageError


def test_internal():
    primitive(lambda x: x)


def test_crash():
    {}["missing"]
'''


def test_each_outcome_is_counted_as_what_it_is(tmp_path):
    (tmp_path / "test_style.py").write_text(AUTOGRAD_STYLE_TESTS)
    records = autograd_suite.run(tmp_path, False, None, ["test_style.py"])
    got = {r["test"]: r["category"] for r in records}
    assert got == {"test_right_derivative": "passed", "test_gradient_value": "passed",
                   "test_wrong_rule": "wrong", "test_refused": "refused",
                   "test_internal": "out", "test_crash": "crashed"}
    table = autograd_suite.report(records, 5)
    assert "test_style.py                   5       2      1        1        1     1" in table
    assert "KeyError: 'missing'" in table
