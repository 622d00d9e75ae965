"""The world fuzzer (tests/worlds.py, refereed by tests/worldcheck.py): programs that read
globals, config dicts, closures, defaults, class and instance attributes, int arguments in
slices and tied struct fields, with that world changed between calls; every call of
``ys.simplegrad`` (both forms) and ``ys.grad`` equals the program run again and central
differences, or refuses cleanly. ``python tools/fuzz.py --world`` runs thousands.

Here: SEEDS (20 random worlds) and the catalogue of seed 0 (108 worlds of one change each, with
keyword-only defaults, a global partial and class data since the grammar has them): the whole
file took 16.7 s of CPU on the 2-core development machine (1 min of wall time); on main before
issue 29's fixes (37ee670) 18 of the 20 worlds and 29 of the then 86 single changes gave silently
wrong values or gradients."""
from __future__ import annotations

import re
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.errors import ArgumentMismatch, GuardError, InternalError, YotaError

from .fuzzcheck import Differences, Found
from .worldcheck import Flat, check, is_refusal
from .worlds import HELPERS, World, catalogue, generate

COVERAGE_SEEDS = range(400)
SEEDS = range(20)


def _assert_clean(outcomes, what: str) -> Counter:
    counts = Counter(o.kind for o in outcomes)
    bad = [o for o in outcomes if o.kind in ("mismatch", "crash", "generator")]
    assert not bad, (f"{dict(counts)} in {len(outcomes)} {what}:\n"
                     + "\n".join(f"{o.line()} {o.forms}" for o in bad)
                     + "\none of them: python tools/fuzz.py --world --seed S --n 1 --verbose "
                       "--shrink")
    return counts


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_worlds_have_no_silent_mismatch_and_no_internal_crash(tmp_path):
    """Every call of simplegrad (both forms) and ys.grad, on the world as written and after
    each change, gives the program's value and gradients, or refuses cleanly (then, compiled
    again, gives them)."""
    counts = _assert_clean([check(generate(seed), tmp_path) for seed in SEEDS], "worlds")
    assert counts["refusal"] == 0, counts
    assert counts["ok"] + counts["stale"] == len(SEEDS)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_each_kind_of_outside_read_and_change_on_its_own(tmp_path):
    """worlds.catalogue: each feature alone with each of its changes (seed 0): the table of
    tools/fuzz.py --world --catalogue, all right or refused cleanly."""
    _assert_clean([check(world, tmp_path) for _, _, world in catalogue(range(1))],
                  "single-change worlds")


def _world(body: str, calls, head: str = "", args=("X",), leaves=()) -> World:
    """A world written by hand: ``head`` after the helpers, ``f(x)`` returning ``body``."""
    text = "\n".join(["import numpy as np", "", HELPERS, head,
                      "X = np.array([0.3, -0.5, 0.9, 1.1])", "", ""])
    return World(7, text, ", ".join(a.lower() for a in args), ((f"t0 = {body}",),), "",
                 tuple(args), tuple(calls), tuple(leaves))


def test_worlds_are_the_same_for_a_seed_and_differ_across_seeds():
    assert generate(5) == generate(5)
    assert generate(5).describe() != generate(6).describe()


def test_generated_worlds_cover_every_kind_of_outside_read_and_change():
    """Over COVERAGE_SEEDS, the module reads and the changes between calls take every form
    issue 29 lists: rebinding, changing in place, untying and tying again, shadowing and
    unshadowing a class attribute, another int, a list of ints changed in place or grown."""
    texts = [(w.source(), "\n".join(s for c in w.calls for s in c))
             for w in map(generate, COVERAGE_SEEDS)]
    reads = {
        "global float": r"\bS\d+ = ", "config dict": r'CFG\d+\["opt"\]\["lr"\]',
        "float list": r"\bL\d+\[", "list of arrays": r"for W in LAY", "global array": r"\bG\d+\b",
        "object field": r"\bO\d+\.", "class attribute": r"KI\d+\.rate",
        "helper through a global": r"hlp\d+\(x\)", "global int in range": r"range\(NS",
        "global list of ints": r"x\[IDS\d+", "closure list of ints": r"x\[ids\d+",
        "closure value": r"\bc\d+\b", "default": r"\bd\d+=", "negative slice": r"x\[:-[ki]\]",
        "slice with two ints": r"x\[[ki]:[ki]\]", "int in range": r"range\([ki]\)",
        "matrix rows by int": r"A\[:-[ki], :\]", "tied struct": r"m\.enc\.W",
        "class attribute of a struct": r"m\.scale", "dict of arrays": r'DATA\d+\["w"\]',
        "float two fields deep": r"C\d+\.inner\.l2", "int field in range": r"range\(C\d+\.steps",
        "global bool": r"if FLAG\d+:", "global numpy function": r"ACT\d+\(x\)",
        "numpy scalar": r"np\.float64\(", "float argument": r"def f\(.*\bs\b",
        "states in a list": r"hs\d+\[-1\]", "keyword-only default": r"def kwh\d+\(v, \*, ",
        "f's keyword-only default": r"def f\(.*\*, e\d+=", "global partial": r"P\d+\(",
        "class data": r"class CD\d+:", "class data of a factory's class": r"def make_cd\d+\(",
        "through a factory's instance": r"CDI\d+ = make_cd\d+\(\)\(\)",
        "in a closure": r"f = make\(.*make_cd\d+\(\)"}
    changes = {
        "rebind": r"^S\d+ = ", "in place": r"CFG\d+\[\"l2\"\] = ", "untie": r"M\.dec_W\.copy\(\)",
        "tie again": r"M\.dec_W = M\.enc\.W", "shadow": r"KI\d+\.rate = ",
        "unshadow": r'pop\("rate"', "another int": r"ARG_[ki] = -?\d",
        "ints in place": r"IDS\d+\[:\] = ", "ints grown": r"IDS\d+\.append",
        "closure cell": r"cell_contents = ", "default rebound": r"_set_default",
        "default in place": r"__defaults__\[\d\]\[", "helper rebound": r"hlp\d+ = hlp\d+_other",
        "flag flipped": r"FLAG\d+ = not", "0-d array in place": r"Z\d+\[\.\.\.\] = ",
        "list-of-ints field": r"C\d+\.ids\[\d\] = ",
        "kwdefaults in place": r"__kwdefaults__\[\"\w+\"\](\[\d\])? = ",
        "kwdefaults rebound": r"__kwdefaults__ = \{", "partial rebound": r"^P\d+ = functools",
        "partial keywords": r"P\d+\.keywords\[", "partial args in place": r"P\d+\.args\[0\]\[",
        "class array in place": r"CD\d+\)?\.W\[\d+\] = ",
        "local class's list in place": r'_cell\(f, "cd\d+"\)\.cell_contents\.(scales|table)\[',
        "factory class's data": r"type\(CDI\d+\)\.",
        "class data shadowed": r"CDI\d+\.(W|rate) = "}
    for label, pattern in reads.items():
        assert any(re.search(pattern, text, re.M) for text, _ in texts), label
    for label, pattern in changes.items():
        assert any(re.search(pattern, stmts, re.M) for _, stmts in texts), label
    negative = [w for w in map(generate, COVERAGE_SEEDS)
                for s in w.calls for c in s if re.match(r"ARG_k = -\d", c)]
    assert len(negative) > 20


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_world_referee_catches_a_stale_value_and_gradient(tmp_path, monkeypatch):
    """A ``simplegrad`` that keeps what it computed when compiled is a mismatch once the
    config dict changes in place; ``ys.grad`` that computes again is ok."""
    def frozen(f, *args, buffers=True):
        value = float(f(*args))
        grads = Differences(f, args, value)
        return lambda *xs: (value, *grads)

    class Result(list):
        source, function = "", SimpleNamespace(__module__="no_such_module")

    def fresh(f, *args):
        value = float(f(*args))
        return value, Result(Differences(f, args, value))

    monkeypatch.setattr(ys, "simplegrad", frozen)
    monkeypatch.setattr(ys, "grad", fresh)
    monkeypatch.setattr(ys, "source", lambda df: "")
    world = _world('np.sum(np.sin(x) * x) * CFG["l2"]', [('CFG["l2"] = 2.0',)],
                   head='CFG = {"l2": 0.5}')
    outcome = check(world, tmp_path, ("buffered", "grad"))
    assert outcome.kind == "mismatch" and outcome.form == "buffered", outcome.line()
    assert outcome.check == "call 2: value vs numpy", outcome.line()
    assert outcome.forms == {"buffered": "mismatch", "grad": "ok"}
    unchanged = check(_world('np.sum(x) * CFG["l2"]', [("X = X * 1.0",)],
                             head='CFG = {"l2": 0.5}'), tmp_path, ("buffered",))
    assert unchanged.kind == "ok", unchanged.line()


def test_a_clean_refusal_is_stale_and_any_other_error_a_crash(tmp_path, monkeypatch):
    """A compiled function that raises a GuardError when the world changed is compiled again
    and must then be right (``stale``); a KeyError is a crash."""
    def guarded(error):
        def simplegrad(f, *args, buffers=True):
            scale = float(f.__globals__["S"])

            def df(*xs):
                if f.__globals__["S"] != scale:
                    raise error
                value = float(f(*xs))
                return (value, *Differences(f, xs, value))
            return df
        return simplegrad

    world = _world("np.sum(x ** 2) * S", [("S = 3.0",)], head="S = 0.5")
    monkeypatch.setattr(ys, "source", lambda df: "")
    monkeypatch.setattr(ys, "simplegrad", guarded(GuardError("S changed")))
    outcome = check(world, tmp_path, ("plain",))
    assert (outcome.kind, outcome.check) == ("stale", "call 2"), outcome.line()
    assert "S changed" in outcome.detail
    monkeypatch.setattr(ys, "simplegrad", guarded(KeyError("S")))
    outcome = check(world, tmp_path, ("plain",))
    assert (outcome.kind, outcome.check) == ("crash", "call 2: call"), outcome.line()


def test_refusals_are_yota_errors_guards_and_argument_checks():
    class ModuleGuardError(ValueError):
        pass
    ModuleGuardError.__name__ = "GuardError"
    assert is_refusal(GuardError("x")) and is_refusal(ArgumentMismatch("x"))
    assert is_refusal(ModuleGuardError("x"))
    assert is_refusal(TypeError("f_grad: argument k must be 2, got 3; compile again for these "
                                "arguments (ys.grad does this for you)"))
    for e in (YotaError("np.foo fails"), InternalError("verifier"), KeyError("v"),
              TypeError("unsupported operand"), IndexError("index 9")):
        assert not is_refusal(e), e


def test_tied_struct_fields_are_one_leaf_whose_gradient_is_the_sum_of_its_entries():
    w = np.array([0.5, -1.0, 2.0])
    m = SimpleNamespace(enc=SimpleNamespace(W=w), dec_W=w, gain=0.5)

    def f(x, m):
        return float(np.sum(m.enc.W * m.dec_W * x) * m.gain)

    x = np.array([1.0, 2.0, 3.0])
    flat = Flat(f, [x, m], {1: [("enc", "W"), ("dec_W",), ("gain",)]})
    assert [paths for _, paths in flat.slots] == [None, [("enc", "W"), ("dec_W",)], [("gain",)]]
    fd = Differences(flat, flat.values, f(x, m))
    assert m.enc.W is w and m.dec_W is w and m.gain == 0.5        # put back after each call
    np.testing.assert_allclose(fd[1], 2 * w * x * 0.5, rtol=1e-8)
    whole = {("enc", "W"): w * x, ("gain",): float(np.sum(w * w * x))}
    halves = {("enc", "W"): w * x / 2, ("dec_W",): w * x / 2, ("gain",): whole[("gain",)]}
    for grads in (whole, halves):
        got = flat.split([np.zeros(3), grads])
        np.testing.assert_allclose(got[1], fd[1], rtol=1e-8)
        np.testing.assert_allclose(got[2], fd[2], rtol=1e-8)
    with pytest.raises(Found, match="entry for"):
        flat.split([np.zeros(3), {("b",): w}])
    m.dec_W = w.copy()                                             # untied: two leaves
    assert len(Flat(f, [x, m], {1: [("enc", "W"), ("dec_W",)]}).slots) == 3


def test_a_class_attribute_is_no_leaf_and_an_instance_attribute_that_shadows_it_is():
    class Model:
        scale = 2.0
    m = Model()
    m.W = np.array([1.0, 2.0])
    paths = {1: [("W",), ("scale",)]}
    assert [p for _, p in Flat(None, [None, m], paths).slots] == [[("W",)]]
    m.scale = 3.0
    assert [p for _, p in Flat(None, [None, m], paths).slots] == [[("W",)], [("scale",)]]
