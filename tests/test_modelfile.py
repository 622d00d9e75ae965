"""Model files, in process: ``@ys.example``, argument specs, import names, collecting mode."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.errors import NoRuleError, UnsupportedSyntax, UsageError, YotaError
from yota_s2s.frontend import Collector, trace_function
from yota_s2s.modelfile import ArraySpec, args_from_specs, example_args, import_name, parse_spec


def test_example_returns_the_function_unchanged_and_keeps_the_factory() -> None:
    def make():
        return (np.ones(3),)

    def f(x):
        return np.sum(x)
    assert ys.example(make)(f) is f and f.__yota_example__ is make
    with pytest.raises(YotaError, match="f already has an example"):
        ys.example(make)(f)
    with pytest.raises(YotaError, match="takes a function that returns the example arguments"):
        ys.example(3)


def test_example_factory_gets_a_seeded_rng() -> None:
    @ys.example(lambda rng: (rng.standard_normal(3),))
    def f(x):
        return np.sum(x)
    assert np.array_equal(example_args(f)[0], example_args(f)[0])
    assert np.array_equal(example_args(f)[0], np.random.default_rng(0).standard_normal(3))


@pytest.mark.parametrize("text, expected", [
    ("float32[64,10]", ArraySpec(np.dtype("float32"), (64, 10))),
    ("float64[]", ArraySpec(np.dtype("float64"), ())),
    ("int64[ 3 ]", ArraySpec(np.dtype("int64"), (3,))),
    ("float32", ArraySpec(np.dtype("float32"), None)),
    ("5", 5), ("0.1", 0.1), ("True", True), ("false", False), ("None", None),
    ("'relu'", "relu"), ("(2, 3)", (2, 3)),
])
def test_parse_spec(text: str, expected) -> None:
    assert parse_spec(text) == expected


@pytest.mark.parametrize("text", ["flaot32[3]", "float32[3", "relu", "[1, 2]", "f(x)"])
def test_parse_spec_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read the argument spec"):
        parse_spec(text)


def test_args_from_specs_fill_defaults_in_parameter_order() -> None:
    def f(x, scale=2.0, n=1, flag=False):
        return np.sum(x) * scale
    args, canonical = args_from_specs(f, ["n=3", "x=float32[2,2]"])
    assert [type(a) for a in args] == [np.ndarray, float, int] and args[1:] == (2.0, 3)
    assert args[0].dtype == np.float32 and args[0].shape == (2, 2)
    assert canonical == ("x=float32[2,2]", "n=3")
    scalar, _ = args_from_specs(f, ["x=float32"])
    assert isinstance(scalar[0], np.float32)


def test_import_name_follows_packages(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    assert import_name(tmp_path / "pkg" / "sub" / "m.py") == ("pkg.sub.m", tmp_path)
    assert import_name(tmp_path / "m.py") == ("m", tmp_path)
    with pytest.raises(UsageError, match="'my-model' is not a Python name"):
        import_name(tmp_path / "my-model.py")


def _problems(x):
    y = np.heaviside(x, 0.5) * x
    with open("/dev/null"):
        y = y * 2
    return np.sum(np.fmod(y, 3.0)) + np.sum(y)


def test_collecting_mode_records_every_problem_and_goes_on() -> None:
    with pytest.raises(NoRuleError, match="np.heaviside"):
        trace_function(_problems, (np.arange(3.0),))
    collector = Collector()
    tape, _ = trace_function(_problems, (np.arange(3.0),), collector=collector)
    kinds = [(type(p), p.loc.line) for p in collector.problems]
    line = _problems.__code__.co_firstlineno
    assert kinds == [(NoRuleError, line + 1), (UnsupportedSyntax, line + 2),
                     (NoRuleError, line + 4)]
    assert 'ys.diffrule(np.fmod, "x1", "<expr in x1, y, dy>")' in collector.problems[2].hint
    assert tape.stmts            # the rest of the function was traced
