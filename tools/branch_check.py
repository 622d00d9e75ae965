"""Branches and while loops that stay so (issue 33): each program of tests/programs/branches.py
and tests/programs/whiles.py through ``ys.grad`` on N random inputs (1,000 by default): one
compile, no guard failure, and the value and every gradient equal to the program's value and
central differences (float64).

    python tools/branch_check.py [N] [--time] [--alloc] [--only NAME,NAME] [--forms grad,plain,...]

``--forms``: the compiled forms checked on every input (``FORMS``; ``grad``, the default, is
``ys.grad`` with its cache counts, the buffered numpy module; ``plain`` the plain one; ``numba``
and ``numba-plain`` the numba printer's), each compiled once.

``--time``: the steady-state CPU time of a gradient call, the branch (or while) module against
the module specialized to one path with guards (what the compiler wrote before branches and
while statements: the first input's path, its loops unrolled), both forms.

``--alloc``: the bytes of numpy array data a steady buffered call with out= (every gradient
into the caller's array) allocates (``memory_report.allocated``), the branch module against the
path-specialized one, at the first input.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import yota_s2s as ys  # noqa: E402
from yota_s2s.gradcheck import numerical_grad  # noqa: E402
from tests.programs import branches as B  # noqa: E402
from tests.programs import whiles as W  # noqa: E402

PROGRAMS = {
    "piecewise": (B.piecewise, lambda r: (r.normal(size=4),)),
    "huber": (B.huber, lambda r: (r.normal(size=3), float(r.uniform(0.5, 3.0)))),
    "huber_returns": (B.huber_returns, lambda r: (r.normal(size=3), float(r.uniform(0.5, 3.0)))),
    "both_ways": (B.both_ways, lambda r: (r.normal(size=3), r.normal(size=3) + 0.5)),
    "three_ways": (B.three_ways, lambda r: (r.normal(size=3), r.normal(size=3))),
    "normalized": (B.normalized, lambda r: (r.normal(size=5) * r.uniform(0.2, 1.2),)),
    "sqrt_or_half": (B.sqrt_or_half, lambda r: (r.normal(size=3) + r.uniform(-1, 2),)),
    "nested": (B.nested, lambda r: (r.normal(size=3), r.normal(size=3))),
    "two_results": (B.two_results, lambda r: (r.normal(size=3),)),
    "branch_in_loop": (B.branch_in_loop, lambda r: (r.normal(size=3), r.normal(size=3))),
    "newton_sqrt": (W.newton_sqrt, lambda r: (10.0 ** r.uniform(-2.0, 3.0, 3),)),
    "cube_root": (W.cube_root, lambda r: (r.uniform(0.5, 20.0, 3),)),
    "until_small": (W.until_small, lambda r: (r.uniform(0.5, 30.0, 3), r.normal(size=3))),
    "early_stop": (W.early_stop, lambda r: (r.normal(size=3), r.uniform(0.5, 1.5, 3))),
    "adaptive_heun": (W.adaptive_heun, lambda r: (r.uniform(0.5, 3.0, 2),
                                                  r.uniform(0.5, 2.0, 2))),
    "rk45": (W.rk45, lambda r: (r.uniform(0.5, 3.0, 2), r.uniform(0.5, 2.0, 2))),
}


FORMS = {   # form: the compile's options (ys.grad's cache gives the buffered numpy form)
    "grad": None,
    "plain": {"buffers": False},
    "numba": {"engine": "numba"},
    "numba-plain": {"engine": "numba", "buffers": False},
}


def check(name: str, fn, make, n: int, forms: list[str]) -> tuple[dict, dict, int]:
    """The largest error of each form over ``n`` inputs (relative to 1 + |expected|), the
    cache's counts (form ``grad``: ``ys.grad`` on every input), and how many inputs lie where a
    branch switches within the differences' step (the function jumps there: central
    differences at 1e-6 and 1e-5 disagree, and that input is not counted). Each other form is
    compiled once, at the first input, and called on every input: a guard that fails raises."""
    from yota_s2s.compiler import compile_grad

    ys.clear_cache()
    first = make(np.random.default_rng(0))
    compiled = {form: compile_grad(fn, first, **FORMS[form]).fn for form in forms
                if FORMS[form] is not None}
    worst, switching = dict.fromkeys(forms, 0.0), 0
    for seed in range(n):
        args = make(np.random.default_rng(seed))
        expected = [fn(*args)] + [numerical_grad(fn, args, i) for i in range(len(args))]
        errors = {}
        for form in forms:
            got = list(ys.grad(fn, *args)) if form == "grad" else compiled[form](*args)
            if form == "grad":
                got = [got[0], *(got[1][i] for i in range(len(args)))]
            errors[form] = max(float(np.max(np.abs(np.asarray(g) - e) / (1 + np.abs(e))))
                               for g, e in zip(got, expected))
        if max(errors.values()) > 1e-6 and _jumps(fn, args):
            switching += 1
            continue
        for form, error in errors.items():
            worst[form] = max(worst[form], error)
    return worst, ys.cache_info(), switching


def _jumps(fn, args) -> bool:
    for i in range(len(args)):
        fine, coarse = numerical_grad(fn, args, i, 1e-6), numerical_grad(fn, args, i, 1e-5)
        if np.any(np.abs(fine - coarse) > 1e-2 * (1 + np.abs(coarse))):
            return True
    return False


def timing(fn, make) -> list[tuple[str, float, float]]:
    """(form, seconds a call of the branch module, of the guarded one) for both forms."""
    args = make(np.random.default_rng(0))
    rows = []
    for buffers in (False, True):
        branch, guarded = _both(fn, args, buffers)
        rows.append(("buffered" if buffers else "plain", *_best(branch, guarded, args)))
    return rows


def _both(fn, args, buffers: bool):
    """The gradient of ``fn`` compiled at ``args`` with branches and while loops (the module of
    issue 33), and specialized to ``args``' path with guards (branches and whiles refused)."""
    from yota_s2s.compiler import compile_grad
    from yota_s2s.frontend import branches, whiles

    branch = compile_grad(fn, args, buffers=buffers).fn
    keep = (branches.BranchesMixin.branch_if, whiles.WhilesMixin.while_region,
            whiles.WhilesMixin.while_for)
    branches.BranchesMixin.branch_if = lambda self, node, cond: False
    whiles.WhilesMixin.while_region = lambda self, node: False
    whiles.WhilesMixin.while_for = lambda self, node, iterable: False
    try:
        guarded = compile_grad(fn, args, buffers=buffers).fn
    finally:
        (branches.BranchesMixin.branch_if, whiles.WhilesMixin.while_region,
         whiles.WhilesMixin.while_for) = keep
    return branch, guarded


def allocation(fn, make) -> tuple[int, int]:
    """Bytes of numpy array data a steady buffered call with out= allocates: the branch
    module's, the path-specialized one's (first input)."""
    from yota_s2s.memory_report import allocated

    args = make(np.random.default_rng(0))
    out = [np.empty_like(np.asarray(a, dtype=float)) for a in args]
    out = [o if o.ndim else None for o in out]  # a Python float's gradient is returned
    return tuple(allocated(lambda: f(*args, out=out)).arrays for f in _both(fn, args, True))


def _best(f, g, args, repeat: int = 9, number: int = 1000) -> tuple[float, float]:
    """The least CPU time (process time: the load of a shared machine is not counted) of a
    call of ``f`` and of ``g``, their repeats interleaved."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for k, h in enumerate((f, g)):
            start = time.process_time()
            for _ in range(number):
                h(*args)
            best[k] = min(best[k], (time.process_time() - start) / number)
    return best[0], best[1]


def main(argv: list[str]) -> int:
    n = int(next((a for a in argv if a.isdigit()), 1000))
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else list(PROGRAMS)
    forms = argv[argv.index("--forms") + 1].split(",") if "--forms" in argv else ["grad"]
    if "--alloc" in argv:
        print(f"{'':16} bytes of arrays a steady buffered call with out= allocates")
        print(f"{'program':16} {'branch':>8} {'one path':>9}")
        for name in only:
            branch, guarded = allocation(*PROGRAMS[name])
            print(f"{name:16} {branch:8} {guarded:9}")
        return 0
    failed = False
    for name, (fn, make) in ((name, PROGRAMS[name]) for name in only):
        worst, info, switching = check(name, fn, make, n, forms)
        ok = max(worst.values()) < 1e-6 and info["misses"] <= 1 and info["guard_failures"] == 0
        failed |= not ok
        errors = "  ".join(f"{form} {error:.1e}" for form, error in worst.items())
        print(f"{name:16} {n} inputs  compiles {max(info['misses'], 1)}  guard failures "
              f"{info['guard_failures']}  worst error: {errors}  at a switch "
              f"{switching}  {'ok' if ok else 'FAIL'}")
        if "--time" in argv:
            for form, t_branch, t_guard in timing(fn, make):
                print(f"{'':16} {form:8} branch {t_branch * 1e6:7.1f} us  one path, guarded "
                      f"{t_guard * 1e6:7.1f} us  ratio {t_branch / t_guard:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
