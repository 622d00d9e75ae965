"""Random numpy programs (tests/fuzzing.py), compiled in both forms and checked by the referee
(tests/fuzzcheck.py): value against numpy, gradients against finite differences, the first
result kept across a second call, out=, Fortran-ordered, strided and read-only arguments, and
the two forms against each other. ``python tools/fuzz.py`` runs thousands of them."""
from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from .fuzzcheck import Found, check, check_form
from .fuzzing import generate

SEEDS = range(300)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # nan/inf of wrong gradients
def test_random_programs_have_no_silent_mismatch_and_no_internal_crash(tmp_path):
    outcomes = [check(generate(seed), tmp_path) for seed in SEEDS]
    counts = Counter(o.kind for o in outcomes)
    bad = [o for o in outcomes if o.kind in ("mismatch", "crash", "generator")]
    checks = Counter(f"{o.kind} {o.form}: {o.check}" for o in bad).most_common()
    assert not bad, (f"{dict(counts)} in {len(SEEDS)} programs; "
                     + "; ".join(f"{n} {c}" for c, n in checks) + "\n"
                     + "\n".join(o.line() for o in bad)
                     + "\none of them: python tools/fuzz.py --seed S --n 1 --verbose --shrink")
    assert counts["refusal"] <= len(SEEDS) // 20, "refusals should stay rare"


def test_programs_are_the_same_for_a_seed_and_differ_across_seeds():
    a, b = generate(7), generate(7)
    assert a.source() == b.source()
    assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a.args, b.args))
    assert len({generate(s).source() for s in range(20)}) == 20


def test_generated_programs_cover_the_features_and_both_dtypes():
    programs = [generate(s) for s in range(150)]
    text = "\n".join(p.source() for p in programs)
    for feature in ("np.exp(", "np.log(", "np.arccos(", "np.arctan2(", " / ", " ** ", ".sum(",
                    "keepdims=True", "np.einsum(", " @ ", "np.outer(", "[None", "np.array([",
                    " > ", "np.concatenate(", "np.stack(", "np.where(", "np.maximum(", "clip(",
                    "np.tile(", ".T", "np.zeros(", "for i in range(", "+= ", "def h", "float("):
        assert feature in text, feature
    for feature in ("for t in range(", "for j in range(", "while t < ", "hs.append(", "enumerate(",
                    "zip(", "[t] = ", " % ", "[t - 1]", "    if np.sum("):      # loops (issue 12)
        assert feature in text, feature
    trips = [int(n) for n in re.findall(r"for t in range\((\d+)\)", text)]
    assert min(trips) < 8 <= max(trips), "short loops and loops long enough for a region"
    assert {p.dtype for p in programs} == {"float32", "float64"}
    assert any(isinstance(a, float) for p in programs for a in p.args)
    shapes = {np.shape(a) for p in programs for a in p.args}
    assert {(), (1,), (3,), (1, 3), (3, 1), (3, 4), (2, 3, 4)} <= shapes


class Fake:
    """A compiled gradient that is wrong in a chosen way, to show the referee notices."""

    def __init__(self, how: str):
        self.how, self.work = how, np.zeros(3)

    def __call__(self, x, out=None):
        value, grad = float(np.sum(np.sin(x))), np.cos(x)
        if self.how == "wrong gradient":
            grad = grad + 1e-3
        if self.how == "work array returned":
            self.work[...] = grad
            grad = self.work
        if self.how == "argument written":
            x[1] = 1.0
        return value, grad


@pytest.mark.parametrize("how,check_name", [
    ("wrong gradient", "gradient 0 vs finite differences"),
    ("work array returned", "first result unchanged by a second call"),
    ("argument written", "arguments unchanged"),
])
def test_the_referee_catches_a_wrong_gradient_function(how, check_name):
    x = np.array([0.3, -0.7, 1.1])
    other = x + 0.01
    ref = ((float(np.sum(np.sin(x))), float(np.sum(np.sin(other)))), [np.cos(x)])
    check_form("plain", Fake("right"), [x.copy()], [other], ref, (1e-4, 1e-5, 1e-10))
    with pytest.raises(Found) as found:
        check_form("plain", Fake(how), [x.copy()], [other], ref, (1e-4, 1e-5, 1e-10))
    assert found.value.kind == "mismatch" and found.value.check == check_name
