"""The scipy family as a user meets it: the generated module imports what it calls from scipy
by name (and scipy only when it calls it), runs in a fresh process, and whole models (a
Gaussian process, a Gaussian mixture) match finite differences in both forms."""
import re
import subprocess
import sys

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.compiler import compile_grad

from .test_gradcheck import Case, check_case

special = pytest.importorskip("scipy.special")
models = pytest.importorskip("tests.programs.scipy_models")

R = np.random.default_rng(3)
GP_ARGS = (np.array([-0.3, 0.2, -2.0]), np.linspace(0.0, 3.0, 8), np.sin(np.linspace(0.0, 6.0, 8)))
GMM_ARGS = (R.standard_normal(3), np.array([-2.0, 0.0, 2.0]), np.array([-0.5, 0.0, 0.3]),
            R.standard_normal(20) * 2)

MODELS = [
    Case("gp_nll_multivariate_normal", models.gp_nll_stats, lambda r: GP_ARGS, tol=1e-5),
    Case("gp_nll_cholesky_solve_triangular", models.gp_nll_cholesky, lambda r: GP_ARGS, tol=1e-5),
    Case("gmm_logsumexp", models.gmm_nll, lambda r: GMM_ARGS, tol=1e-5),
]


@pytest.mark.parametrize("case", MODELS, ids=lambda c: c.name)
def test_models_match_finite_differences(case):
    check_case(case, case.make_args(np.random.default_rng(1)))


def test_the_two_gaussian_process_formulations_agree():
    _, *by_stats = ys.simplegrad(models.gp_nll_stats, *GP_ARGS)(*GP_ARGS)
    _, *by_factor = ys.simplegrad(models.gp_nll_cholesky, *GP_ARGS)(*GP_ARGS)
    np.testing.assert_allclose(by_stats[0], by_factor[0], rtol=1e-9)


@pytest.mark.parametrize("buffers", [True, False])
def test_the_module_imports_scipy_by_name_and_runs_in_a_fresh_process(tmp_path, buffers):
    c = compile_grad(models.gmm_nll, GMM_ARGS, out_dir=tmp_path, module_name="gmm_grad",
                     buffers=buffers)
    assert "from scipy.special import logsumexp\nfrom scipy.stats import norm\n" in c.text
    assert re.search(r"norm\.logpdf\(\w+, loc=means, scale=\w+\)", c.text)
    assert "logsumexp(lp, axis=1)" in c.text and "logsumexp(log_weights)" in c.text
    np.save(tmp_path / "args.npy", np.array(GMM_ARGS, dtype=object), allow_pickle=True)
    script = ("import sys, numpy as np\n"
              f"sys.path.insert(0, {str(tmp_path)!r})\n"
              "import gmm_grad\n"
              f"args = np.load({str(tmp_path / 'args.npy')!r}, allow_pickle=True)\n"
              "print(repr(float(gmm_grad.gmm_nll_grad(*args)[2][1])))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == pytest.approx(c.fn(*GMM_ARGS)[2][1], rel=1e-12)


def test_a_module_that_calls_no_scipy_imports_none():
    text = compile_grad(lambda x: np.sum(np.convolve(x, x)), (np.ones(3),)).text
    assert "import scipy" not in text and "from scipy" not in text


def test_a_users_rule_for_a_scipy_ufunc_imports_it_from_scipy_special():
    """Its __module__ is None: it was written as a bare ``erfcx`` (a NameError when called)."""
    rules = ys.RULES.copy()
    rules.diffrule(special.erfcx, "x", "dy * (2 * x * y - 2 / np.sqrt(np.pi))")
    x = np.linspace(-1.0, 1.0, 4)
    for buffers in (True, False):
        c = compile_grad(lambda x: np.sum(special.erfcx(x)), (x,), rules=rules, buffers=buffers)
        assert "from scipy.special import erfcx" in c.text
        np.testing.assert_allclose(c.fn(x)[1], 2 * x * special.erfcx(x) - 2 / np.sqrt(np.pi))


def test_the_method_of_an_object_its_module_does_not_hold_is_still_refused():
    """A frozen distribution is one object: the generated module could not import it."""
    rules = ys.RULES.copy()
    rules.primitive(models.FROZEN.logpdf, "x")
    rules.diffrule(models.FROZEN.logpdf, "x", "-dy * x / 4.0")
    with pytest.raises(ys.RuleError, match="method of one object"):
        compile_grad(models.frozen_logpdf, (np.ones(3),), rules=rules)


def test_operands_with_defaults_must_come_first_in_the_spec():
    rules = ys.RULES.copy()

    def f(x, scale=1.0, loc=0.0):
        return (x - loc) / scale
    with pytest.raises(ys.RuleError, match="must name the first parameters"):
        rules.primitive(f, "x, scale=1.0, loc=0.0", operands="x, loc")
    prim = rules.primitive(f, "x, scale=1.0, loc=0.0", operands="x, scale")
    assert prim.operands == ("x", "scale") and prim.optional == (("scale", 1.0),)
    assert prim.options == (("loc", 0.0),)
