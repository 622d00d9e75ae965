"""Our example programs, loaded as modules of their own (the generated code imports them to
read their globals), checked against finite differences in both forms."""
import importlib.util
import sys
from pathlib import Path

import numpy as np

import yota_s2s as ys

from .test_outside import BOTH, numeric

EXAMPLES = Path(__file__).parent.parent / "examples"
def load(name):
    """The example as an importable module (in ``sys.modules`` under its name)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_seed_example_prints_the_plain_module_the_readme_shows_and_says_where_the_fast_one_is(
        capsys):
    seed = load("seed_loss")
    seed.main()
    out = capsys.readouterr().out
    shown = out.split(" ---\n\n", 1)[1].split("\n(dloss runs", 1)[0]
    W, b, x = np.ones((128, 784)), np.ones(128), np.ones((784, 100))
    plain = ys.source(ys.simplegrad(seed.loss, W, b, x, buffers=False))
    assert shown.rstrip() == plain.rstrip()
    assert "    db = xp.full((128,), 100.0)\n" in shown and "out=None" not in shown
    assert "print(ys.source(dloss)), or python examples/seed_loss.py --buffered" in out
    seed.main(buffered=True)
    out = capsys.readouterr().out
    assert ys.source(ys.simplegrad(seed.loss, W, b, x)).rstrip() in out and "out=None" in out


@BOTH
def test_fluid_gradient_matches_finite_differences(buffers):
    fluid = load("fluid")
    rng = np.random.default_rng(3)
    vx, vy = 0.3 * rng.standard_normal((16, 16)), 0.3 * rng.standard_normal((16, 16))
    df = ys.simplegrad(fluid.loss, vx, vy, buffers=buffers)
    text = ys.source(df)
    assert "fluid.CELL_X" in text and "fluid.TARGET" in text and "xp.asarray" not in text
    value, dvx, dvy = df(vx, vy)
    assert np.isclose(value, fluid.loss(vx, vy))
    np.testing.assert_allclose(dvx, numeric(lambda a: fluid.loss(a, vy), vx), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(dvy, numeric(lambda a: fluid.loss(vx, a), vy), rtol=1e-4,
                               atol=1e-6)


def test_fluid_reads_its_target_when_it_runs():
    fluid = load("fluid")
    vx = vy = np.zeros((16, 16))
    df = ys.simplegrad(fluid.loss, vx, vy)
    before = df(vx, vy)[0]
    saved = fluid.TARGET.copy()
    try:
        fluid.TARGET[...] = 0.0
        assert df(vx, vy)[0] == fluid.loss(vx, vy) != before
    finally:
        fluid.TARGET[...] = saved


def test_fluid_example_learns():
    first, last = load("fluid").main(iterations=5)
    assert last < first


@BOTH
def test_vae_gradient_matches_finite_differences_with_the_seed_reset(buffers):
    vae = load("vae")
    p = vae.init_params()
    df = ys.simplegrad(vae.elbo_loss, p, buffers=buffers)
    assert "vae.rs.randn(20, 2)" in ys.source(df)

    def seed():
        vae.rs.seed(11)
    seed()
    value, dp = df(p)
    seed()
    assert value == vae.elbo_loss(p)
    for key in ("W1", "Ws", "V2"):
        def f(x, key=key):
            return vae.elbo_loss({**p, key: x})
        np.testing.assert_allclose(dp[(key,)], numeric(f, p[key], reset=seed), rtol=1e-5,
                                   atol=1e-7)
    assert df(p)[0] != df(p)[0]          # fresh draws on each call


def test_vae_example_learns():
    first, last = load("vae").main(iterations=30)
    assert last < first


def test_dpsgd_clipped_sum_equals_clipping_the_per_example_gradients():
    """examples/dpsgd_digits.py: the clipped sum from the ghost norms and one weighted batch
    gradient equals clipping each materialized per-example gradient, some examples clipped and
    some not (random images: scikit-learn is not needed)."""
    dp = load("dpsgd_digits")
    rng = np.random.default_rng(0)
    params = dp.init(rng)
    X, labels = rng.uniform(0.0, 1.0, (16, 64)), rng.integers(0, 10, 16)
    norms = ys.per_example_grad(dp.example_loss, params, X, labels, norms=True)
    clip = float(np.median(norms))
    assert 0 < np.sum(norms > clip) < len(X)
    assert dp.check(params, X, labels, clip) < 1e-12
