"""The struct examples run as documented: the seed Linear model, and the MLP class on digits."""
import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seed_example_runs(capsys):
    load("linear").main()
    out = capsys.readouterr().out
    assert "g[0] = {('W',): (3, 4)}" in out and "step  99" in out and "dm = {('W',): dW" in out


def test_mlp_class_learns_digits(capsys):
    pytest.importorskip("sklearn")
    assert load("mlp_digits").main(epochs=3) > 0.85
