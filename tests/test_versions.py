"""A generated module runs on every numpy that pyproject admits (numpy>=2.0): it never leans
on a default that some of them lack. CI runs the suite on the oldest Python with the oldest
admitted numpy and gast (.ci/run), where the second test below sees that numpy's own signatures."""
from __future__ import annotations

import inspect

import numpy as np

import yota_s2s as ys
from yota_s2s.rules import RULES


def gather(x, i, j):
    return np.sum(np.take_along_axis(x, i, axis=-1) ** 2) + np.sum(np.take_along_axis(x, j, 0))


def test_take_along_axis_is_written_with_its_axis_which_numpy_before_2_3_requires():
    x = np.random.default_rng(0).normal(size=(3, 4))
    i, j = np.argsort(x, axis=-1), np.argsort(x, axis=0)[:2]
    df = ys.simplegrad(gather, x, i, j, buffers=False)
    text = ys.source(df)
    assert "xp.take_along_axis(x, i, axis=-1)" in text
    assert "xp.take_along_axis(x, j, axis=0)" in text
    val, dx, di, dj = df(x, i, j)
    want = np.zeros_like(x)
    rows = np.arange(3)[:, None]
    np.add.at(want, (rows, i), 2 * np.take_along_axis(x, i, axis=-1))
    np.add.at(want, (j, np.arange(4)[None, :]), 1.0)
    assert np.allclose(dx, want, rtol=1e-13, atol=0) and di is None and dj is None
    assert np.isclose(val, gather(x, i, j), rtol=1e-13)


def test_every_option_left_out_at_its_default_has_that_default_in_this_numpy():
    """An option equal to its declared default is left out of the generated call; where this
    numpy's function has no default for it, the primitive must declare it ``written``."""
    RULES.load_all()
    lacking = []
    for fn, prim in RULES.prims.items():
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        for name, _ in prim.options:
            p = params.get(name)
            if p is not None and p.default is p.empty and name not in prim.written:
                lacking.append(f"{prim.name}({name}=)")
    assert lacking == []


def test_the_code_hash_of_a_gradient_file_is_the_same_on_every_python_and_gast():
    """A gradient file's Source line hashes the traced code's syntax tree (gradfile.code_digest);
    written on one CI runner it must be current on the others (Python 3.10 to 3.13, gast 0.6
    and 0.7, whose trees differ in fields added empty), so the hash of ``gather`` is pinned."""
    from yota_s2s.frontend.source import parse_function
    from yota_s2s.gradfile import code_digest
    assert code_digest([parse_function(gather)]) == \
        "89f1cc709b032a5b507e5d23e168f7a07cdee36232320b2e682a706a502e909d"


def test_the_package_version_is_the_one_pyproject_declares():
    import re
    from pathlib import Path

    from yota_s2s.version import __version__
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"$', pyproject, re.M).group(1) == __version__ == ys.__version__
