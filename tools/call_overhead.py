"""What a call of a ``simplegrad`` gradient costs beyond its arithmetic: the entry's checks of
its arguments and of the world it was compiled for (issue 29's guards), in microseconds.

    python tools/call_overhead.py                          # this checkout's yota_s2s
    python tools/call_overhead.py --against ../base        # and another checkout's, side by side

Functions whose arithmetic is small next to a Python call: ``np.sum(x * w)`` of 3-element
arrays, the same reading a float from a global dict (``CFG["l2"]``: compiled in before issue
29, read and checked at each call since), and the model of DESIGN.md
(``tests/programs/design.py``, W 4 x 3). For each it times,
with timeit (the minimum over ``--rounds`` x ``--repeat`` runs of ``--number`` calls), the
function itself, its gradient compiled by ``ys.simplegrad`` in both forms (buffered and plain),
and ``ys.grad`` (the cache lookup and guards, then the same module). The clock is the
process's CPU time (``time.process_time``), not the wall's: on a shared machine the time other
processes hold the CPU does not count. ``--against DIR`` runs this script again with
``DIR`` first on ``sys.path`` (a checkout of another commit: ``git worktree add DIR COMMIT``) and
prints both, with the difference.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


CFG = {"l2": 0.5}


def tiny(x, w):
    return np.sum(x * w)


def configured(x, w):
    return np.sum(x * w) + CFG["l2"] * np.sum(w * w)


def cases() -> dict:
    sys.path.insert(0, str(ROOT / "tests" / "programs"))
    from design import loss
    rng = np.random.default_rng(0)
    design = (rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(3, 2)),
              rng.normal(size=(4, 2)))
    return {"tiny np.sum(x * w), 3 elements": (tiny, (np.ones(3), np.arange(3.0))),
            "tiny, reading CFG['l2'] (a float in a global dict)": (configured,
                                                                  (np.ones(3), np.arange(3.0))),
            "DESIGN.md model, W 4 x 3": (loss, design)}


def measure(number: int, repeat: int) -> dict:
    """{case: {implementation: microseconds per call}} for the yota_s2s first on sys.path."""
    import yota_s2s as ys
    out = {}
    for name, (f, args) in cases().items():
        calls = {"function itself": lambda: f(*args)}
        for form, buffers in (("simplegrad buffered", True), ("simplegrad plain", False)):
            df = ys.simplegrad(f, *args, buffers=buffers)
            calls[form] = (lambda df: lambda: df(*args))(df)
        ys.grad(f, *args)
        calls["ys.grad"] = lambda: ys.grad(f, *args)
        for impl, call in calls.items():
            call()
        out[name] = {impl: min(timeit.repeat(call, timer=time.process_time, number=number,
                                             repeat=repeat)) / number * 1e6
                     for impl, call in calls.items()}
    return {"yota_s2s": str(Path(ys.__file__).parent), "times": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="another checkout (its root folder)")
    parser.add_argument("--number", type=int, default=2000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=15, help="timings; the minimum is kept")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each checkout, alternated; the minimum is kept")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.json:
        print(json.dumps(measure(ns.number, ns.repeat)))
        return
    roots = ([ns.against] if ns.against else []) + [str(ROOT)]
    runs: list = [None] * len(roots)
    for _ in range(ns.rounds):          # alternated, so that the machine's load hits both alike
        for i, root in enumerate(roots):
            path = os.pathsep.join([str(Path(root).resolve()), os.environ.get("PYTHONPATH", "")])
            command = [sys.executable, __file__, "--json", "--number", str(ns.number),
                       "--repeat", str(ns.repeat)]
            done = subprocess.run(command, env=dict(os.environ, PYTHONPATH=path), check=True,
                                  capture_output=True, text=True)
            run = json.loads(done.stdout)
            if runs[i] is not None:
                for name, times in run["times"].items():
                    for impl, t in times.items():
                        times[impl] = min(t, runs[i]["times"][name][impl])
            runs[i] = run
    for run in runs:
        print(f"# {run['yota_s2s']}")
    for name in runs[-1]["times"]:
        print(f"\n{name} (us per call, min of {ns.rounds} x {ns.repeat} x {ns.number})")
        for impl, after in runs[-1]["times"][name].items():
            if len(runs) == 1:
                print(f"  {impl:22} {after:8.2f}")
            else:
                before = runs[0]["times"][name][impl]
                print(f"  {impl:22} {before:8.2f} -> {after:8.2f}  ({after - before:+.2f})")


if __name__ == "__main__":
    main()
