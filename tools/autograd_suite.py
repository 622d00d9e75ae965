"""Run autograd's own test suite against yota_s2s, through a thin shim (issue 35).

    python tools/autograd_suite.py --tests /path/to/autograd/tests [--autograd] [-k EXPR]

``--tests`` is the ``tests`` folder of a copy of https://github.com/HIPS/autograd (nothing of
autograd's is kept in this repository). The tests run under pytest with
``tools/autograd_shim`` standing in for the ``autograd`` package: ``autograd.numpy`` is numpy,
``autograd.scipy`` is scipy, and ``grad``, ``jacobian``, ``make_vjp``, ``make_jvp``,
``make_hvp``, ``elementwise_grad``, ``value_and_grad``, ``hessian`` and ``check_grads`` are
yota_s2s's entry points. ``--autograd`` runs the same harness with the installed autograd
instead (a sanity check of the harness: everything in scope should pass).

Each test is counted as: passed; wrong (an assertion failed: a value or a shape differs);
refused (a ``YotaError``, or an autograd entry point with no counterpart yet); crashed (any
other exception); out of scope (it exercises autograd's internals: its VSpace, boxes,
primitive machinery or tracer, listed in OUT_OF_SCOPE by file, or a test that reached one of
the shim's stand-ins for them); skipped (by the test itself). The report is a table per file
and the most frequent causes.

The same file is the pytest plugin that records the outcomes (``-p autograd_suite``).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIM = HERE / "autograd_shim"

OUT_OF_SCOPE = {
    "test_vspaces.py": "autograd's VSpace objects (vspace(x).randn, inner products, covectors)",
    "test_tests.py": "check_grads on primitives built with autograd.extend.defvjp to be wrong",
    "test_builtins.py": "autograd.builtins.isinstance on its boxes",
    "test_core.py": None,   # in scope: core.make_vjp maps to ys.vjp (scalar operators)
}
# single tests that check autograd's own behaviour rather than a derivative
OUT_OF_SCOPE_TESTS = {
    "test_rfftn_odd_not_implemented": "expects autograd's NotImplementedError for an odd-sized "
                                      "rfftn (a limitation of autograd; numpy computes it)",
    "test_nograd": "expects autograd's TypeError for the gradient of a boolean result "
                   "(yota_s2s returns zeros, as JAX does)",
    "test_wrapped_name_and_docs": "the __name__ and __doc__ autograd gives its wrappers",
    "test_custom_where_dtypes": "the result types of autograd.numpy's own where wrapper",
    "test_custom_where": "autograd.numpy's own where wrapper (its keyword arguments)",
    "test_deprecated_defgrad_wrapper": "autograd's deprecated primitive machinery",
    "test_deprecated_defvjp_wrapper": "autograd's deprecated primitive machinery",
    "test_deprecated_defvjp_is_zero_wrapper": "autograd's deprecated primitive machinery",
    "test_deprecated_quick_grad_check_wrapper": "autograd.util.quick_grad_check, deprecated",
}


# --- the pytest plugin (runs inside the pytest process) ---------------------------------

def _category(excinfo) -> tuple[str, str]:
    if excinfo is None:
        return "passed", ""
    names = {c.__name__ for c in type(excinfo.value).__mro__}
    message = f"{type(excinfo.value).__name__}: {str(excinfo.value).strip().splitlines()[0] if str(excinfo.value).strip() else ''}"
    if "Skipped" in names or excinfo.typename == "Skipped":
        return "skipped", message
    if "OutOfScope" in names:
        return "out", message
    if "YotaError" in names or "Missing" in names:
        return "refused", message
    if "AssertionError" in names:
        return "wrong", message
    return "crashed", message


def _where(excinfo) -> str:
    """The innermost frame in yota_s2s or the shim, for a crash: where to look."""
    best = ""
    for entry in excinfo.traceback:
        path = str(entry.path)
        if "yota_s2s" in path or "autograd_shim" in path:
            best = f"{Path(path).name}:{entry.lineno + 1}"
    return best


def pytest_runtest_makereport(item, call):
    out = os.environ.get("AUTOGRAD_SUITE_OUT")
    if not out or (call.when != "call" and call.excinfo is None):
        return
    category, message = _category(call.excinfo)
    if call.when != "call" and category == "passed":
        return
    name = item.name.split("[")[0]
    if name in OUT_OF_SCOPE_TESTS and category != "skipped":
        category, message = "out", OUT_OF_SCOPE_TESTS[name]
    if category == "crashed":
        message += f" [{_where(call.excinfo)}]"
    with open(out, "a") as fh:
        fh.write(json.dumps({"file": Path(str(item.fspath)).name, "test": item.name,
                             "category": category, "message": message[:300]}) + "\n")


def pytest_collectreport(report):
    out = os.environ.get("AUTOGRAD_SUITE_OUT")
    if out and report.failed:
        with open(out, "a") as fh:
            fh.write(json.dumps({"file": Path(str(report.fspath)).name, "test": "<collection>",
                                 "category": "crashed",
                                 "message": str(report.longrepr).strip().splitlines()[-1][:300]}) + "\n")


# --- the runner ----------------------------------------------------------------------------

CATEGORIES = ("passed", "wrong", "refused", "crashed")


def run(tests: Path, real_autograd: bool, keyword: str | None, files: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "outcomes.jsonl"
        paths = [str(tests / f) for f in files] if files else \
            [str(p) for p in sorted(tests.glob("test_*.py")) if p.name not in OUT_OF_SCOPE
             or OUT_OF_SCOPE[p.name] is None]
        env = dict(os.environ, AUTOGRAD_SUITE_OUT=str(out))
        path = [str(HERE)] + ([] if real_autograd else [str(SHIM)])
        env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")])
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "autograd_suite", "-p", "no:cacheprovider",
               "--rootdir", str(tests), "-W", "ignore", "--tb=no", "--no-header"] + paths
        if keyword:
            cmd += ["-k", keyword]
        subprocess.run(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL)
        if not out.exists():
            return []
        return [json.loads(line) for line in out.read_text().splitlines()]


def _normalized(message: str) -> str:
    message = re.sub(r"0x[0-9a-f]+", "0x..", message)
    message = re.sub(r"\[[^\]]*\]\s*$", lambda m: m.group(0), message)
    return re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", message)[:160]


def report(records: list[dict], causes: int) -> str:
    by_file: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in records:
        by_file[r["file"]][r["category"]] += 1
    lines = [f"{'file':24} {'in scope':>8} {'passed':>7} {'wrong':>6} {'refused':>8} {'crashed':>8}"
             f" {'out':>5} {'skipped':>8}"]
    total: collections.Counter = collections.Counter()
    for name in sorted(by_file):
        c = by_file[name]
        total.update(c)
        lines.append(f"{name:24} {sum(c[k] for k in CATEGORIES):8} {c['passed']:7} {c['wrong']:6}"
                     f" {c['refused']:8} {c['crashed']:8} {c['out']:5} {c['skipped']:8}")
    scope = sum(total[k] for k in CATEGORIES)
    lines.append(f"{'total':24} {scope:8} {total['passed']:7} {total['wrong']:6} {total['refused']:8}"
                 f" {total['crashed']:8} {total['out']:5} {total['skipped']:8}")
    if scope:
        lines.append(f"passed {total['passed']} of {scope} in scope ({100 * total['passed'] / scope:.1f}%)")
    lines.append("")
    lines.append("out of scope by file:")
    for name, why in sorted(OUT_OF_SCOPE.items()):
        if why:
            lines.append(f"  {name}: {why}")
    outs = collections.Counter((r["file"], _normalized(r["message"])) for r in records if r["category"] == "out")
    for (name, why), n in sorted(outs.items()):
        lines.append(f"  {name}: {n} test(s) reaching {why}")
    for category in ("wrong", "crashed", "refused"):
        counted = collections.Counter(_normalized(r["message"]) for r in records if r["category"] == category)
        if counted:
            lines.append(f"\ntop causes, {category}:")
            for message, n in counted.most_common(causes):
                tests = [f"{r['file']}::{r['test']}" for r in records
                         if r["category"] == category and _normalized(r["message"]) == message]
                lines.append(f"  {n:4}  {message}")
                lines.append(f"        e.g. {', '.join(tests[:3])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", required=True, type=Path, help="autograd's tests folder")
    parser.add_argument("--autograd", action="store_true", help="run with the installed autograd")
    parser.add_argument("-k", dest="keyword", help="pytest's -k expression")
    parser.add_argument("--causes", type=int, default=15, help="causes listed per category")
    parser.add_argument("--json", type=Path, help="write the outcome of each test here")
    parser.add_argument("files", nargs="*", help="test files (default: every one in scope)")
    args = parser.parse_args(argv)
    records = run(args.tests.resolve(), args.autograd, args.keyword, args.files)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    print(report(records, args.causes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
