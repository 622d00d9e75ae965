"""Random-program fuzzer: generate numpy programs, compile their gradients, check, count.

    python tools/fuzz.py --n 20000 --seed 0 --jobs 2            # counts per outcome, run time
    python tools/fuzz.py --n 2000 --show-failures --shrink      # each failure: seed, reason
    python tools/fuzz.py --seed 1234 --n 1 --verbose [--shrink] # one program and its modules
    python tools/fuzz.py --n 2000 --block 2     # chains of the small arrays run in blocks of 2
    python tools/fuzz.py --n 500 --recurrent --body-min 1 --lend 1   # RNN-like loops, planned
    python tools/fuzz.py --n 500 --stencil      # loops over a periodic field (np.roll)
    python tools/fuzz.py --n 500 --more         # accumulator loops, rows read, float16, ties...
    python tools/fuzz.py --world --n 2000 --show-failures --shrink   # the world between calls
    python tools/fuzz.py --world --seed 7 --n 1 --verbose --shrink   # one world, its modules
    python tools/fuzz.py --world --catalogue --n 3   # each kind of read and change on its own
    python tools/fuzz.py --n 1000 --lists       # lists read by hs[-1], hs[t // 2] as appended
    python tools/fuzz.py --n 500 --alike        # arguments used the same way (one gradient)
    python tools/fuzz.py --n 100 --recurrent --forms plain --engine numba   # loops through numba
    python tools/fuzz.py --n 100 --stencil --forms none --engine numba      # numba against plain only
    python tools/fuzz.py --n 500 --forms none --engine fused    # the fused cupy printer, on a CPU
    python tools/fuzz.py --n 500 --branches     # an if on a reduction of data: a branch
    python tools/fuzz.py --n 500 --whiles       # a while on a reduction of data: a while
    python tools/fuzz.py --n 500 --exits        # a loop left on data: break, continue, return
    python tools/fuzz.py --n 500 --inplace      # h[k] += e on a carried value, then h made anew

Programs come from tests/fuzzing.py (one seed, one program, on every machine); the checks
and the outcome classes (ok, mismatch, crash, refusal, generator) from tests/fuzzcheck.py.
``--shrink`` drops statements of a failing program while the same failure (kind, form,
check) persists, and prints what is left (the first few of each diagnosis, per job).

``--world``: programs that read globals, config dicts, closures, defaults, class and instance
attributes, int arguments in slices and tied struct fields, with the world changed between
calls (tests/worlds.py), refereed by tests/worldcheck.py in the forms buffered, plain (both
``ys.simplegrad``) and grad (``ys.grad``); outcomes ok, stale (a call refused cleanly, then
compiled again: right), mismatch, crash, refusal, generator. A failure's diagnosis is the form
that failed and the world's changes before the failing call, with names and numbers
generalized; ``--shrink`` drops calls, changes and loss terms while the failure persists.

``--engine numba``: each program with a loop is also compiled with ``engine="numba"`` and its
value and gradients compared with the plain form's (relative 1e-12 in float64;
tools/fuzz_numba.py), as the form ``numba``; the summary counts the loops numba compiled and
those left numpy, with numba's reasons. numba compiles for seconds a loop: run it in chunks;
``--forms none`` leaves out the checks of the numpy forms (numpy's value and finite differences
are still computed: a program numpy rejects counts as ``generator``).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import replace
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import yota_s2s as ys  # noqa: E402
from tests.fuzzcheck import FORMS, Outcome, check, load  # noqa: E402
from tests.fuzzing import generate  # noqa: E402
from tests import worldcheck, worlds  # noqa: E402

TIMEOUT = 60
SHRINK_PER_GROUP = 5        # per worker: the rest of a group only counts
_STATE: dict = {}


def _setup(forms: tuple, shrink: bool) -> None:
    base = Path(os.environ.get("YOTA_S2S_CACHE") or tempfile.gettempdir()) / f"fuzz-{os.getpid()}"
    os.environ["YOTA_S2S_CACHE"] = str(base / "cache")
    (base / "programs").mkdir(parents=True, exist_ok=True)
    _STATE.update(base=base, forms=forms, shrink=shrink, done=0, shrunk=Counter())
    warnings.simplefilter("ignore")           # numpy's RuntimeWarnings from generated code


class Overtime(BaseException):
    """A program over its time: not an ``Exception``, so that no ``except Exception`` on the
    way (a form's crash, numpy refusing extreme values) takes it for a failure of that step
    and goes on with the alarm spent (a ``while`` that never ends at an argument of inf)."""


def _timeout(*_):
    raise Overtime(f"over {TIMEOUT} s")


def referee(program, directory: Path, forms: tuple) -> Outcome:
    """tests/fuzzcheck.py's check of ``program``, and with ``--engine numba`` the numba
    engine's against the plain form where the program has a loop (tools/fuzz_numba.py)."""
    if _STATE.get("engine") == "numba":
        import fuzz_numba
        return fuzz_numba.referee(check, program, directory, forms)
    if _STATE.get("engine") == "fused":
        import fuzz_fused
        return fuzz_fused.referee(check, program, directory, forms)
    return check(program, directory, forms)


def run_one(seed: int) -> tuple[Outcome, str, str]:
    """The outcome of ``seed``, its diagnosis and, when shrinking is on, the shrunk source."""
    base, forms = _STATE["base"], _STATE["forms"]
    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(TIMEOUT)
    try:
        if _STATE["world"]:
            program = worlds.generate(seed)
            outcome = worldcheck.check(program, base / "programs", forms)
        else:
            program = generate(seed, _STATE["recurrent"], _STATE["stencil"], _STATE["more"],
                               lists=_STATE["lists"], alike=_STATE["alike"],
                               branches=_STATE["branches"], whiles=_STATE["whiles"],
                               exits=_STATE["exits"], inplace=_STATE["inplace"])
            outcome = referee(program, base / "programs", forms)
        small, why = "", ""
        if outcome.kind in ("mismatch", "crash"):
            why = diagnose_world(program, outcome) if _STATE["world"] else diagnose(outcome)
            if _STATE["shrink"] and _STATE["shrunk"][why] < SHRINK_PER_GROUP:
                _STATE["shrunk"][why] += 1
                if _STATE["world"]:
                    world, now = shrink_world(program, outcome, base / "programs", forms)
                    small, why = world.describe(), diagnose_world(world, now)
                else:
                    small = shrink(program, outcome, base / "programs", forms).source()
    except Overtime as e:
        outcome, small, why = Outcome(seed, "crash", "", "timeout", str(e)), "", "timeout"
    finally:
        signal.alarm(0)
    _STATE["done"] += 1
    if _STATE["done"] % 100 == 0:                 # keep the disk and sys.modules small
        shutil.rmtree(base / "cache", ignore_errors=True)
        for p in (base / "programs").glob("*.py"):
            p.unlink()
    return outcome, why, small


def shrink(program, outcome: Outcome, directory: Path, forms: tuple):
    """Drop statements and loss terms while the failure keeps its (kind, form, check) and its
    diagnosis (another bug with the same symptom must not take over)."""
    why = diagnose(outcome)

    def fails(p) -> bool:
        now = referee(p, directory, forms)
        return now.key == outcome.key and diagnose(now) == why

    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(program.stmts))):
            smaller = program.without({i})
            if len(smaller.stmts) < len(program.stmts) and fails(smaller):
                program, changed = smaller, True
                break
        if not changed and len(program.terms) > 1:
            for j in range(len(program.terms)):
                smaller = replace(program, terms=program.terms[:j] + program.terms[j + 1:])
                if fails(smaller):
                    program, changed = smaller, True
                    break
    return program


def _world_key(outcome: Outcome) -> tuple:
    return outcome.kind, outcome.form, re.sub(r"^call \d+: ?", "", outcome.check)


def shrink_world(world, outcome: Outcome, directory: Path, forms: tuple):
    """Drop calls, world changes and loss terms of a failing world while the failure keeps its
    kind, form and check (the call it fails at may move); the smaller world and its outcome."""
    def fails(w) -> bool:
        nonlocal outcome
        now = worldcheck.check(w, directory, forms)
        if _world_key(now) == _world_key(outcome):
            outcome = now
            return True
        return False

    def smaller(w):
        for i in reversed(range(len(w.calls))):
            yield replace(w, calls=w.calls[:i] + w.calls[i + 1:])
        for i, stmts in enumerate(w.calls):
            for j in range(len(stmts)):
                yield replace(w, calls=w.calls[:i] + (stmts[:j] + stmts[j + 1:],)
                              + w.calls[i + 1:])
        for i in range(len(w.terms)):
            yield replace(w, terms=w.terms[:i] + w.terms[i + 1:])

    changed = True
    while changed:
        changed = False
        for w in smaller(world):
            if fails(w):
                world, changed = w, True
                break
    return world, outcome


def diagnose_world(world, outcome: Outcome) -> str:
    """The failing forms and the world's changes before the failing call, with the names'
    numbers, the numbers and the arrays generalized: one label per kind of change."""
    n = re.match(r"call (\d+)", outcome.check)
    stmts = world.calls[int(n.group(1)) - 2] if n and int(n.group(1)) > 1 else ()
    general = sorted({re.sub(r"-?\b\d+(\.\d+)?\b", "N",
                             re.sub(r"np\.array\(\[[^\]]*\]\)", "ARRAY",
                                    re.sub(r"\b([A-Za-z_]+?)\d+(?=\b|_)", r"\1", s)))
                      for s in stmts})
    failed = "+".join(f for f, k in outcome.forms.items() if k == outcome.kind)
    return f"{outcome.kind} {failed}: {'; '.join(general) or 'first call'}"


SIGNS = [     # (label, check pattern, detail pattern, pattern in the buffered module); the G
              # numbers are the groups of the findings note (/work/notes/fuzz-findings.md)
    ("G1 #1 buffered: two parts of one gradient named the same (dx = ...; dx -= dx)",
     r"gradient \d+ vs|buffered vs plain", "", r"(?m)^\s*(\w+) [-+*/]= \1$"),
    ("G2 #2 buffered: returned 0-d gradient is a view of a work array",
     "first result unchanged", "at \\(\\)", ""),
    ("G7 crash: buffered: the size-1 seed literal xp.asarray([1.0]) used as a scalar (.fill, x[i] +=)",
     "", "setting an array element with a sequence", r"xp\.asarray\(\[+1\.0\]+"),
    ("G5 buffered: out= entry ignored for a 0-d gradient", "out= entry not written", r"\[\]", ""),
    ("G8 crash: float32 program, Python float of a traced value: backward casts a float literal",
     "compile", r"astype\(.*\) fails: 'float' object", ""),
    ("G9 crash: prod over a tuple of axes: backward's moveaxis gets a tuple source and one destination",
     "compile", r"moveaxis\(.*\(\d, \d\), -1\) fails", ""),
    ("G3 #3 buffered: out= entry aliasing its argument gives wrong results", "out= aliasing", "", ""),
    ("G4 #3 buffered: out= entry of the wrong shape accepted", "wrong shape accepted", "", ""),
    ("G10 crash: a value minus itself (v - v): emit._inlinable reads args[1] of a one-operand accumulate",
     "compile", r"IndexError: tuple index out of range \(emit.py", ""),
    ("G12 crash: buffered: scalar mode names an element of a vector written through a view (names.py KeyError)",
     "compile", r"KeyError: Var\(.*\(names.py", ""),
    ("G13 crash: np.outer/np.inner with a Python float: backward calls .ravel() on the float",
     "call", r"'float' object has no attribute 'ravel'", ""),
    ("G11 crash: fold of broadcast_to of a size-1 literal with too many dims (sum of a (1, 1) value)",
     "compile", "more dimensions than allowed by the axis remapping", ""),
    ("G14 a 0-d argument's gradient comes back with shape (1, 1) (size-1 seed literal, both forms)",
     r"gradient \d+ vs", r"shape \(1(, 1)*\) != \(\)", ""),
    ("G6 buffered: module takes no out= (every gradient 0-d?)", "out=", "unexpected keyword argument 'out'", ""),
    ("G15 crash: scalar mode: Python's ** of a float overflows (numpy gives inf)",
     "extreme values", "OverflowError", r"\*\* \d+\.0"),
    ("G16 np.power / np.divide of Python floats written as ** and / (complex, ZeroDivisionError)",
     "extreme values|compile", r"complex|ZeroDivisionError|division by zero", ""),
    ("G17 buffered: a float16 mean into out= (numpy rounds its float32 sum once, after dividing)",
     "value vs numpy|buffered vs plain", "", r"(?s)FLOAT16.*\.mean\((axis=[^)]*, )?out="),
    ("G18 scalar mode: a Python float meets a float16/float32 number and takes its dtype (NEP 50)",
     "value dtype", "(float16|float32) where numpy gives float64", ""),
]


def diagnose(outcome: Outcome) -> str:
    """A best-guess root cause for a failure, from the check and the buffered module's text."""
    text = outcome.modules.get("buffered", "")
    for label, chk, detail, module in SIGNS:
        if (re.search(chk, outcome.check) and re.search(detail, outcome.detail)
                and (not module or re.search(module, text))):
            return label
    return f"other: {outcome.kind} {outcome.form} {outcome.check}"


def verbose_world(seed: int, forms: tuple, do_shrink: bool) -> None:
    """Print the world of ``seed`` (its module, the changes before each call), its outcome,
    and the generated modules that ran last for (the shrunk) world."""
    directory = _STATE["base"] / "programs"
    world = worlds.generate(seed)
    print(world.describe())
    outcome = worldcheck.check(world, directory, forms)
    print("#", outcome.line(), outcome.forms)
    if do_shrink and outcome.kind in ("mismatch", "crash"):
        world, outcome = shrink_world(world, outcome, directory, forms)
        print("# shrunk:\n" + world.describe())
        print("#", outcome.line(), outcome.forms, f"[{diagnose_world(world, outcome)}]")
    for form in forms:
        print(f"# ---- {form} ----\n{outcome.modules.get(form, '(not compiled)')}")


def catalogue(seeds, forms: tuple) -> int:
    """Each feature of tests/worlds.py on its own with each of its changes (worlds.catalogue):
    one line per world, the outcome per form; the failures' reproducers after the table."""
    _setup(forms, False)
    directory, bad = _STATE["base"] / "programs", []
    print(f"{'feature':16s} {'change':48s} " + " ".join(f"{f:9s}" for f in forms))
    for feature, change, world in worlds.catalogue(seeds):
        outcome = worldcheck.check(world, directory, forms)
        print(f"{feature:16s} {change[:48]:48s} "
              + " ".join(f"{outcome.forms.get(f, '-'):9s}" for f in forms), flush=True)
        if outcome.kind in ("mismatch", "crash", "generator"):
            bad.append((world, outcome))
    for world, outcome in bad:
        print(f"\n# {outcome.line()}\n{world.describe()}")
    print(f"{len(bad)} failing worlds")
    return 1 if bad else 0


def verbose(seed: int, forms: tuple, do_shrink: bool) -> None:
    """Print the program of ``seed``, its outcome, and the modules of (the shrunk) program."""
    _setup(forms, False)
    if _STATE["world"]:
        return verbose_world(seed, forms, do_shrink)
    program = generate(seed, _STATE["recurrent"], _STATE["stencil"], _STATE["more"],
                       lists=_STATE["lists"], alike=_STATE["alike"],
                       branches=_STATE["branches"], whiles=_STATE["whiles"],
                       exits=_STATE["exits"], inplace=_STATE["inplace"])
    print(program.source())
    outcome = referee(program, _STATE["base"] / "programs", forms)
    print("#", outcome.line())
    if do_shrink and outcome.kind in ("mismatch", "crash"):
        program = shrink(program, outcome, _STATE["base"] / "programs", forms)
        print("# shrunk:\n" + program.source())
        print("# args:", ", ".join(f"{n} = {_literal(a)}" for n, a in zip(program.params, program.args)))
    f = load(program, _STATE["base"] / "programs")
    for form in forms:
        try:
            df = ys.simplegrad(f, *program.args, buffers=form == "buffered")
            print(f"# ---- {form} form ----\n{ys.source(df)}")
        except Exception as e:
            print(f"# ---- {form} form: {type(e).__name__}: {e}")
    if "numba" in outcome.modules:
        print(f"# ---- numba engine ----\n{outcome.modules['numba']}")
    if "fused" in outcome.modules:
        print(f"# ---- fused cupy printer ----\n{outcome.modules['fused']}")


def _literal(a) -> str:
    if not isinstance(a, np.ndarray):
        return repr(a)
    return f"np.array({a.tolist()!r}{', np.float32' if a.dtype == np.float32 else ''})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--forms", help=f"default {','.join(FORMS)}; with --world "
                    f"{','.join(worldcheck.FORMS)}; none: no numpy form (with --engine numba)")
    ap.add_argument("--show-failures", action="store_true")
    ap.add_argument("--shrink", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--refusals", action="store_true", help="list refusals (and stale "
                    "refusals) too")
    ap.add_argument("--recurrent", action="store_true", help="every program with an RNN-like "
                    "loop (tests/fuzzing.py Gen.recurrent), not 30%% of them")
    ap.add_argument("--stencil", action="store_true", help="every program with a loop over a "
                    "periodic field (np.roll; tests/fuzzing.py Gen.stencil), not 10%% of them")
    ap.add_argument("--more", action="store_true", help="every program with one or two "
                    "statements of tests/fuzzing.py Gen.more (accumulator loops, rows read in "
                    "the steps, float16 arguments, ties, masks, powers), not 30%% of them")
    ap.add_argument("--world", action="store_true", help="programs that read the world "
                    "outside their arguments, changed between calls (tests/worlds.py)")
    ap.add_argument("--catalogue", action="store_true", help="with --world: each feature on "
                    "its own with each of its changes, for --n seeds from --seed (a table)")
    ap.add_argument("--lists", action="store_true", help="every program with a loop that "
                    "reads the lists it appends to by indices moving with the step (hs[-1], "
                    "hs[t // 2]; tests/fuzzing.py Gen.listed), not 15%% of them")
    ap.add_argument("--alike", action="store_true", help="every program with two or three "
                    "arguments used the same way, whose gradients are one expression "
                    "(tests/fuzzing.py Gen.alike), not 20%% of them")
    ap.add_argument("--engine", choices=("numpy", "numba", "fused"), default="numpy",
                    help="numba: programs with a loop compiled with engine='numba' too, against "
                    "the plain form (tools/fuzz_numba.py); fused: every program compiled with "
                    "device='cuda', engine='fused' too, run on tests/fakecupy.py "
                    "(tools/fuzz_fused.py)")
    ap.add_argument("--branches", action="store_true", help="every program with an if on a "
                    "reduction of data, a branch in the module (tests/fuzzing.py "
                    "Gen.branches), not 20%% of them")
    ap.add_argument("--whiles", action="store_true", help="every program with a while on a "
                    "reduction of data, a while statement in the module (tests/fuzzing.py "
                    "Gen.whiles; none by default)")
    ap.add_argument("--exits", action="store_true", help="every program with a loop left on "
                    "data: a break, a continue, an early return, an int counter beside a data "
                    "test (tests/fuzzing.py Gen.exits; none by default)")
    ap.add_argument("--inplace", action="store_true", help="every program with an in-place "
                    "write on a value a loop carries, a while or an if arm updates, then made "
                    "anew (tests/fuzzing.py Gen.carried_writes; none by default)")
    ap.add_argument("--block", type=int, help="elements per block of a cache-blocked chain "
                    "(codegen/blocks.py), and chains of twice that many are blocked: small "
                    "values put the fuzzer's small arrays through the blocked form")
    ap.add_argument("--lend", type=int, help="work arrays of this many elements or more live "
                    "in returned arrays not yet written (codegen/buffers.py LEND_MIN): 1 puts the "
                    "fuzzer's small arrays through it")
    ap.add_argument("--body-min", type=int, help="values of a loop body of this many elements "
                    "or more are planned into work arrays (codegen/buffers.py BODY_MIN, 1 by "
                    "default: all of them); 512 leaves smaller ones to their expressions")
    opts = ap.parse_args(argv)
    if opts.body_min:
        from yota_s2s.codegen import buffers
        buffers.BODY_MIN = opts.body_min
    if opts.lend:
        from yota_s2s.codegen import buffers
        buffers.LEND_MIN = opts.lend
    if opts.block:
        from yota_s2s.codegen import blocks
        blocks.BLOCK, blocks.MIN_SIZE = opts.block, 2 * opts.block
    forms = tuple(opts.forms.split(",")) if opts.forms else (
        worldcheck.FORMS if opts.world else FORMS)
    forms = () if forms == ("none",) else forms     # with --engine numba: that engine only
    _STATE["world"] = opts.world
    _STATE["engine"] = opts.engine
    if opts.engine == "numba":
        global TIMEOUT
        TIMEOUT = 300                   # numba compiles for seconds a loop, more on a loaded machine
    _STATE["recurrent"] = True if opts.recurrent else None
    _STATE["stencil"] = True if opts.stencil else None
    _STATE["more"] = True if opts.more else None
    _STATE["lists"] = True if opts.lists else None
    _STATE["alike"] = True if opts.alike else None
    _STATE["branches"] = True if opts.branches else None
    _STATE["whiles"] = True if opts.whiles else None
    _STATE["exits"] = True if opts.exits else None
    _STATE["inplace"] = True if opts.inplace else None
    if opts.verbose:
        verbose(opts.seed, forms, opts.shrink)
        return 0
    if opts.catalogue:
        return catalogue(range(opts.seed, opts.seed + opts.n), forms)
    seeds = range(opts.seed, opts.seed + opts.n)
    start, counts, failures, per_form = time.perf_counter(), Counter(), [], Counter()
    if opts.jobs > 1:
        import multiprocessing
        pool = multiprocessing.get_context("fork").Pool(opts.jobs, _setup, (forms, opts.shrink))
        results = pool.imap_unordered(run_one, seeds, chunksize=8)
    else:
        _setup(forms, opts.shrink)
        results = map(run_one, seeds)
    for k, (outcome, why, small) in enumerate(results, 1):
        counts[outcome.kind] += 1
        per_form.update(outcome.forms.items())
        if outcome.kind != "ok" and (outcome.kind not in ("refusal", "stale") or opts.refusals):
            failures.append((outcome, why))
            if opts.show_failures:
                print(outcome.line(), f"[{why}]" if why else "", flush=True)
                if small:
                    print("    " + small.replace("\n", "\n    "))
        if k % 500 == 0:
            print(f"# {k} programs, {time.perf_counter() - start:.0f} s: {dict(counts)}; by form:",
                  {f"{f} {kind}": n for (f, kind), n in sorted(per_form.items())}, file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    print(f"{opts.n} programs (seeds {opts.seed}..{opts.seed + opts.n - 1}), forms {','.join(forms) or 'none'},"
          f" {elapsed:.1f} s, {opts.n / elapsed:.1f} programs/s with {opts.jobs} job(s)")
    kinds = worldcheck.KINDS if opts.world else ("ok", "mismatch", "crash", "refusal", "generator")
    print("  " + " " * 10 + "".join(f"{k:>10s}" for k in kinds))
    print("  " + f"{'worst':10s}" + "".join(f"{counts[k]:10d}" for k in kinds))
    for form in forms + ((opts.engine,) if opts.engine in ("numba", "fused") else ()):
        print("  " + f"{form:10s}" + "".join(f"{per_form[form, k]:10d}" for k in kinds))
    if opts.engine == "numba" and opts.jobs == 1:
        import fuzz_numba
        print("\n".join(fuzz_numba.summary()))
    if opts.engine == "fused" and opts.jobs == 1:
        import fuzz_fused
        print("\n".join(fuzz_fused.summary()))
    print("by check:")
    for (kind, form, chk), n in Counter(o.key for o, _ in failures).most_common():
        print(f"  {n:6d}  {kind} {form}: {chk}")
    print("by diagnosis (tools/fuzz.py SIGNS):")
    for why, n in Counter(why for o, why in failures if o.kind not in ("refusal", "stale")
                          ).most_common():
        seeds = [o.seed for o, w in failures if w == why][:6]
        print(f"  {n:6d}  {why}  (seeds {', '.join(map(str, seeds))})")
    return 1 if counts["mismatch"] or counts["crash"] or counts["generator"] else 0


if __name__ == "__main__":
    sys.exit(main())
