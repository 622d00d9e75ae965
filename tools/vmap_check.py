"""ys.vmap on every case of the gradient-check table (tests/test_gradcheck.py): a batch of three
examples of ys.value_and_grad against a loop over them, buffered and plain (tests/vmapcheck.py).

    python tools/vmap_check.py                  # counts per outcome, and each failure
    python tools/vmap_check.py -k matmul        # the cases whose name contains "matmul"
    python tools/vmap_check.py --forms buffered

Outcomes: ok; refused (a primitive with no batching rule, or an index that differs per
example: NoRuleError, by name and line); guarded (the examples take different paths through
the code, a branch or a count: ys.GuardError when the batched module runs); mismatch (an
AssertionError); crash (anything else).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tests import vmapcheck  # noqa: E402
from tests.test_gradcheck import CASES  # noqa: E402
from yota_s2s.errors import GuardError, NoRuleError  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    parser.add_argument("--forms", default="buffered,plain")
    parser.add_argument("--quiet", action="store_true", help="counts only")
    options = parser.parse_args()
    forms = options.forms.split(",")
    counts: collections.Counter = collections.Counter()
    refusals: collections.Counter = collections.Counter()
    start = time.perf_counter()
    for case in [c for c in CASES if options.k in c.name]:
        for form in forms:
            try:
                outcome = vmapcheck.check(case, buffers=form == "buffered")
                outcome = "ok" if outcome == "ok" else "skipped"
            except NoRuleError as e:
                outcome, line = "refused", str(e).splitlines()[0]
                refusals[line.split(": ", 1)[-1].split(" differs")[0]] += 1
            except GuardError as e:     # examples that take different paths: refused when run
                outcome, line = "guarded", str(e).splitlines()[0]
            except AssertionError as e:
                outcome, line = "mismatch", str(e).strip().splitlines()[0]
            except Exception as e:    # noqa: BLE001 (a tool: every failure is counted)
                outcome = "crash"
                line = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                if os.environ.get("VMAP_TRACEBACK"):
                    traceback.print_exc()
            counts[outcome] += 1
            if outcome not in ("ok", "skipped") and not options.quiet:
                print(f"{outcome:9s} {form:8s} {case.name}: {line[:160]}", flush=True)
    total = sum(counts.values())
    print(f"\n{total} checks ({len(forms)} forms) in {time.perf_counter() - start:.0f} s: " +
          ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    for reason, n in refusals.most_common():
        print(f"  refused {n:4d}x  {reason}")
    return 0 if counts["mismatch"] + counts["crash"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
