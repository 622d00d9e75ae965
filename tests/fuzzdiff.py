"""The referee's measures (tests/fuzzcheck.py): central finite differences in float64 with
their noise, estimated again where two steps disagree (``Differences``), and the distance of a
computed value or gradient from the expected one (``far``, ``gradient_far``); ``copies`` and
``snapshot`` of arguments and results, so that no call sees another's writes."""
from __future__ import annotations

import numpy as np


def copies(args) -> list:
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


def run_numpy(f, args):
    with np.errstate(all="ignore"):
        return float(f(*copies(args)))


FD_STEP = 1e-6


def central(f, args, i, j, h) -> float:
    """The central difference of ``f`` along element ``j`` of argument ``i`` (float64 args)."""
    plus, minus = copies(args), copies(args)
    if j is None:                                               # a Python float
        plus[i], minus[i] = args[i] + h, args[i] - h
    else:
        plus[i][j] += h
        minus[i][j] -= h
    return (run_numpy(f, plus) - run_numpy(f, minus)) / (2 * h)


def noise(value: float, h: float) -> float:
    """What rounding alone moves a central difference by: a difference of two values of f is
    exact to a few of their ulps, over 2h (seed 23,300,018: f is 3.2e5, one ulp of it over 2h
    is 3e-5)."""
    return 8 * np.finfo(np.float64).eps * abs(value) / (2 * h)


class Differences(list):
    """The gradient of ``f`` at ``args`` by central differences in float64, one array per
    argument (a 0-d array for a Python float), at step ``FD_STEP``.

    One step trades truncation (h squared times f's third derivative) against rounding (1/h),
    and no step suits every program: seed 26,601,949 (expm1 of a doubled max, then twelve tanh
    steps) curves so sharply that the difference at 1e-6 is 2e-3 off a gradient of 16, past
    the referee's 1e-4. ``refine`` estimates again, only where a form disagrees, two more ways
    (Richardson's extrapolation of the steps 2h and h, truncation h**4; and the step h / 10,
    truncation / 100): a gradient that is right agrees with one of them, a wrong one with
    none.

    A float16 argument made float64 is another program where float16 arithmetic is what it
    does: seed 271,874 squares and sums a float16 vector, then takes the cosine of its
    product with a float32 argument for 13 steps; float16 rounding moves the phase, and the
    gradient of the float32 argument is -49.82 in float16 arithmetic, -42.90 in float64. So
    for the gradient of an argument that is not float16, one more estimate keeps the float16
    arguments float16 (``narrow``): what a float16 value computes does not depend on the
    argument differentiated, only its rounding differs.

    A float32 program is defined only up to its arguments' rounding, and some programs amplify
    it: seed 282,344 takes the sine of a sum that seven stencil steps made large, and its
    gradient, -75.598 in float32 (ours and JAX's alike), is -74.961 in float64; moving the
    arguments by one float32 ulp moves the float64 gradient by up to 0.9. So for a program with
    a float32 (or float16) argument, where no estimate agrees, the difference at step h widens
    by twice its spread under such moves (``jittered``): a gradient that float32 cannot tell
    from the right one passes, and only such a one."""

    def __init__(self, f, args, value: float, h: float = FD_STEP):
        self.f, self.h, self.value = f, h, value
        self.args = [np.array(a, dtype=np.float64) if isinstance(a, np.ndarray) else a
                     for a in args]
        self.half = [isinstance(a, np.ndarray) and a.dtype == np.float16 for a in args]
        self.narrow = [np.array(a) if half else b for a, b, half in zip(args, self.args, self.half)]
        self.narrowest = min((a.dtype.itemsize for a in args if isinstance(a, np.ndarray)
                              and a.dtype.kind == "f"), default=8)
        super().__init__(self._gradient(i, a) for i, a in enumerate(self.args))

    def _gradient(self, i, a) -> np.ndarray:
        if not isinstance(a, np.ndarray):
            return np.array(central(self.f, self.args, i, None, self.h))
        g = np.zeros_like(a)
        for j in np.ndindex(a.shape):
            g[j] = central(self.f, self.args, i, j, self.h)
        return g

    def estimates(self, i, j):
        """Better estimates of element ``j`` of gradient ``i``, each with its rounding noise."""
        at = None if not isinstance(self.args[i], np.ndarray) else j
        h, d = self.h, self[i][j]
        wide = central(self.f, self.args, i, at, 2 * h)
        yield d + (d - wide) / 3, 1.5 * noise(self.value, h)
        yield central(self.f, self.args, i, at, h / 10), noise(self.value, h / 10)
        if any(self.half) and not self.half[i]:
            yield central(self.f, self.narrow, i, at, h), noise(self.value, h)

    def jittered(self, i, at) -> float:
        """How far the difference along ``at`` of argument ``i`` moves when every float
        argument moves by about one ulp of the narrowest argument dtype (three random moves)."""
        rng = np.random.default_rng(0)
        eps = np.finfo(np.dtype(f"f{self.narrowest}")).eps
        base = central(self.f, self.args, i, at, self.h)
        spread = 0.0
        for _ in range(3):
            moved = [a * (1 + eps * rng.standard_normal(a.shape)) if isinstance(a, np.ndarray)
                     else a for a in self.args]
            spread = max(spread, abs(central(self.f, moved, i, at, self.h) - base))
        return spread

    def refine(self, i, got, rtol: float, atol: float) -> None:
        """Where ``got`` (gradient ``i`` of a form) is further than ``atol + rtol * |want|``
        from the difference at step h (``atol`` without its rounding noise), take the first
        better estimate it is that close to (``estimates``); the others stay."""
        got = np.asarray(got, np.float64)
        want = self[i]
        if got.shape != want.shape:
            return
        err = np.abs(got - want)
        with np.errstate(invalid="ignore"):
            bad = ~(err <= atol + noise(self.value, self.h) + rtol * np.abs(want))
        for j in map(tuple, np.argwhere(bad)):
            for estimate, rounding in self.estimates(i, j):
                if abs(got[j] - estimate) <= atol + rounding + rtol * abs(estimate):
                    want[j] = estimate
                    break
            else:
                if self.narrowest < 8:      # float32 cannot tell got from the difference
                    at = None if not isinstance(self.args[i], np.ndarray) else j
                    margin = 2 * self.jittered(i, at) + noise(self.value, self.h)
                    if abs(got[j] - want[j]) <= atol + margin + rtol * abs(want[j]):
                        want[j] = got[j]


def gradient_far(got, fd, i: int, value: float, rtol: float, atol: float) -> str:
    """``far`` for gradient ``i`` against the finite differences ``fd`` (of a function whose
    value is ``value``): ``atol`` scaled by the gradient's size, plus the differences' own
    rounding; where they disagree, estimated again (``Differences.refine``), then judged."""
    rounding = noise(value, FD_STEP)
    scaled = atol * max(1.0, float(np.max(np.abs(fd[i]), initial=0)))
    bad = far(got, fd[i], rtol, rounding + scaled)
    if bad and isinstance(fd, Differences) and got is not None:
        fd.refine(i, got, rtol, scaled)         # a sharp curve: estimate again, then judge
        bad = far(got, fd[i], rtol, rounding + scaled)
    return bad


def snapshot(result) -> list:
    return [None if r is None else np.array(r, copy=True) for r in result]


def far(got, want, rtol, atol) -> str:
    """'' when ``got`` is close to ``want``; else a short description of the worst element."""
    if got is None:
        return "" if not np.any(want) else "None where a gradient was expected"
    got = np.asarray(got)
    if got.shape != np.shape(want):
        return f"shape {got.shape} != {np.shape(want)}"
    err = np.abs(got.astype(np.float64) - want)
    with np.errstate(invalid="ignore"):
        bad = ~(err <= atol + rtol * np.abs(want)) & ~(np.isnan(got) & np.isnan(want))  # nan: bad
    if not np.any(bad):
        return ""
    k = tuple(int(i) for i in np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1)), err.shape))
    return f"at {k}: {float(got[k])!r} vs {float(np.asarray(want)[k])!r}"
