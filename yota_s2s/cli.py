"""``yota-s2s``: compile model files to gradient modules that people commit, check and review.

    yota-s2s compile MODEL.py ...    write MODEL_grad.py next to each model (or into -o DIR)
    yota-s2s check MODEL.py ...      exit 1 if a gradient file is missing or stale
    yota-s2s trace MODEL.py          print the tape (--grad: with its gradients; --after STAGE:
                                     as that stage of the passes leaves it; --plan: the
                                     buffered form's plan, a decision a line)
    yota-s2s show MODEL.py           print the gradient module that compile would write
    yota-s2s review MODEL.py         write an HTML page per function: source beside code

Every command compiles the functions marked ``@ys.example(make_args)``, or ``--func NAME``
with ``--arg NAME=SPEC`` (see ``modelfile.py``). Exit status: 0 ok, 1 stale (check), 2 usage,
3 compile errors (all of them are listed, each with file:line and a fix). Progress goes to a
terminal's stderr and not to a pipe; ``-q`` keeps only errors. Colour only where the terminal
supports it (``--color`` and the ``NO_COLOR``/``FORCE_COLOR`` conventions decide otherwise).
"""
from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Callable, Sequence

from . import highlight
from .codegen.loader import stale_bytecode, write_atomic, write_module_file
from .codegen.module import function_plans, write_functions, write_module
from .codegen.numba_form import ENGINES, check_engine
from .codegen.plan_text import plan_text
from .errors import UsageError, YotaError
from .gradcheck import sampled_errors
from .gradfile import (GradFile, Options, Result, build, compile_target, counts, gradient_function,
                       load_text, project_root)
from .marks import generated_file
from .modelfile import ModelFile, Target, load_model, targets
from .passes import STAGE_NAMES, STAGES, stages_for
from .review import review_page
from .version import __version__

OK, STALE, USAGE, COMPILE_ERRORS = 0, 1, 2, 3
CLOSED_PIPE = 141          # 128 + SIGPIPE, as a shell reports `yota-s2s show m.py | head`
TOLERANCE = {"float64": 1e-5, "float32": 1e-3, "float16": 3e-2}


class Output:
    """Where messages go: results to stdout, problems and progress to stderr."""

    def __init__(self, quiet: bool, color: str):
        self.quiet = quiet
        self.color = color == "always" or (color == "auto" and _supports_color(sys.stdout))
        self.live = not quiet and sys.stderr.isatty()
        self.shown = False

    def info(self, text: str) -> None:
        if not self.quiet:
            self.clear()
            print(text, flush=True)

    def error(self, text: str) -> None:
        self.clear()
        print(text, file=sys.stderr, flush=True)

    def code(self, text: str) -> None:
        """Python or tape text, highlighted on a terminal that shows colour."""
        self.clear()
        print(highlight.ansi(text) if self.color else text, flush=True)

    def tape(self, text: str) -> None:
        self.clear()
        print(highlight.ansi_tape(text) if self.color else text, flush=True)

    def progress(self, text: str) -> None:
        if self.live:
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False


def _supports_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty() and os.environ.get("TERM") != "dumb"


# -- compiling every model file ---------------------------------------------------------------

def _options(ns: argparse.Namespace) -> Options:
    out_dir = Path(ns.out) if getattr(ns, "out", None) and ns.command != "review" else None
    return Options(func=ns.func, wrt=tuple(ns.wrt), device=ns.device, out_dir=out_dir,
                   engine=check_engine(ns.engine))


def _plan(ns: argparse.Namespace) -> list[tuple[ModelFile, list[Target]]]:
    """Every model file, loaded, with what to compile in it."""
    if ns.arg and len(ns.models) > 1:
        raise UsageError("--arg applies to one model file; give one, or use @ys.example")
    return [(model, targets(model, ns.func, ns.arg, ns.wrt))
            for model in map(load_model, ns.models)]


def _build_all(ns: argparse.Namespace, out: Output) -> list[GradFile]:
    """Load every model, find its targets, then compile them all (with progress)."""
    plan = _plan(ns)
    total, done = sum(len(found) for _, found in plan), [0]

    def progress(model: ModelFile, target: Target) -> None:
        done[0] += 1
        out.progress(f"[{done[0]}/{total}] {model.path.name}: {target.name}")
    files = [build(model, found, _options(ns), lambda t, m=model: progress(m, t))
             for model, found in plan]
    out.clear()
    return files


def _report_problems(files: Sequence[GradFile], out: Output) -> bool:
    """Print every problem of every target that did not compile; True if there were any."""
    for grad in files:
        for result in grad.results:
            if not result.problems:
                continue
            n = len(result.problems)
            out.error(f"{_shown(grad.model.path)}: {result.target.name} does not compile "
                      f"({n} problem{'s' if n != 1 else ''}):\n")
            for problem in result.problems:
                out.error(problem.format() + "\n")
            if result.stopped is not None:
                out.error("Tracing stopped here, perhaps because of the problems above:\n"
                          + result.stopped.format() + "\n")
    return any(not grad.ok for grad in files)


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


# -- the commands ------------------------------------------------------------------------------

def _refuse_foreign(paths: Sequence[Path], ns: argparse.Namespace) -> None:
    """A ``UsageError`` if a file at one of ``paths`` was not written by yota-s2s (unless
    ``--force``): compile and review replace only their own files."""
    foreign = [p for p in paths if p.exists() and not ns.force and not generated_file(p)]
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if foreign[1:] else ""
        raise UsageError(f"{_shown(foreign[0])} exists and was not written by yota-s2s; it is "
                         f"left as it is{more}",
                         hint="Move it away, write elsewhere with -o DIR, or replace it with "
                              "--force.")


def cmd_compile(ns: argparse.Namespace, out: Output) -> int:
    files = _build_all(ns, out)
    _refuse_foreign([grad.path for grad in files if grad.ok], ns)
    for grad in files:
        if grad.ok:
            write_module_file(grad.path, grad.text)
            summary = "; ".join(counts(r.tape) for r in grad.results)
            out.info(f"wrote {_shown(grad.path)}  ({summary})")
            if grad.note:
                out.info(f"note: {grad.note}")
    if not _report_problems(files, out):
        return OK
    for grad in files:
        failing = sum(1 for r in grad.results if r.problems)
        if failing:
            out.error(f"{_shown(grad.path)} is not written: {failing} of {len(grad.results)} "
                      f"function{'s' if len(grad.results) > 1 else ''} did not compile.")
    return COMPILE_ERRORS


def cmd_check(ns: argparse.Namespace, out: Output) -> int:
    files = _build_all(ns, out)
    failed = _report_problems(files, out)
    stale = [grad for grad in files if grad.ok and not _fresh(grad, ns.diff, out)]
    if stale:
        out.error(f"{len(stale)} gradient file{'s are' if len(stale) > 1 else ' is'} out of date; "
                  "regenerate with:")
        for grad in stale:
            root = project_root(grad.model.path)
            where = "" if Path.cwd().resolve() == root else f"    (in {_shown(root)})"
            out.error(f"    {grad.command}{where}")
    wrong = ns.gradcheck and not all([_gradcheck(grad, ns, out) for grad in files if grad.ok])
    return COMPILE_ERRORS if failed else STALE if stale or wrong else OK


def _fresh(grad: GradFile, diff: bool, out: Output) -> bool:
    on_disk = grad.path.read_text(encoding="utf-8") if grad.path.is_file() else None
    if on_disk == grad.text:
        bytecode = stale_bytecode(grad.path)
        if bytecode is None:
            out.info(f"up to date: {_shown(grad.path)}")
            return True
        out.error(f"stale bytecode: {_shown(bytecode)} was not compiled from "
                  f"{_shown(grad.path)}, and Python would run it instead of the file")
        return False
    out.error(f"{'missing' if on_disk is None else 'stale'}: {_shown(grad.path)}")
    if diff and on_disk is not None:
        lines = difflib.unified_diff(on_disk.splitlines(True), grad.text.splitlines(True),
                                     f"{_shown(grad.path)} (on disk)", "(compiled now)")
        out.error("".join(lines))
    return False


def _gradcheck(grad: GradFile, ns: argparse.Namespace, out: Output) -> bool:
    """Run each compiled function on its examples against finite differences; True if all
    agree within tolerance."""
    module = load_text(grad.text, grad.path, grad.path.stem)
    good = True
    for result in grad.results:
        target = result.target
        value, *grads = gradient_function(module, result)(*target.args)
        errors = sampled_errors(target.fn, target.args, grads, ns.samples)
        access = {(i.argnum, i.path): i.access or target.params[i.argnum]
                  for i in result.tape.inputs}
        parts, bad = [], []
        for (argnum, path), error in errors.items():
            name = access[(argnum, path)]
            parts.append(f"{name} {error:.1e}")
            if error > _tolerance(ns, result, argnum):
                bad.append(name)
        verdict = f"FAILED for {', '.join(bad)}" if bad else "ok"
        line = (f"gradcheck {_shown(grad.model.path)} {target.name}: worst relative error "
                f"{', '.join(parts) or '(nothing to check)'}  [{verdict}]")
        (out.error if bad else out.info)(line)
        good = good and not bad
    return good


def _tolerance(ns: argparse.Namespace, result: Result, argnum: int) -> float:
    if ns.tol is not None:
        return ns.tol
    dtypes = [i.var.aval.dtype.name for i in result.tape.inputs if i.argnum == argnum]
    return max((TOLERANCE.get(d, 1e-3) for d in dtypes), default=1e-6)


def cmd_trace(ns: argparse.Namespace, out: Output) -> int:
    _check_stage(ns.after, ns.grad, ns.plan)
    ok = True
    for model, found in _plan(ns):
        for target in found:
            result = compile_target(target, backward=ns.grad or ns.plan, after=ns.after,
                                    buffered=ns.plan)
            if result.problems:
                _report_problems([GradFile(model, Path(), [result], None)], out)
                ok = False
            elif ns.plan:
                out.tape(plan_text(function_plans([result.tape])[0]))
            else:
                out.tape(_stage_line(ns.after) + str(result.tape if ns.grad else result.forward)
                         + "\n")
    return OK if ok else COMPILE_ERRORS


def _stage_line(after: str | None) -> str:
    """``# after the stage in-place: ...`` above a tape that ``--after`` stopped: what the
    stage does, from the schedule (passes.STAGES)."""
    if after is None:
        return ""
    return f"# after the stage {after}: {next(s.does for s in STAGES if s.name == after)}\n"


def _check_stage(after: str | None, grad: bool, plan: bool = False) -> None:
    """A ``UsageError`` unless ``--after`` names a stage of the plain form's passes (the form
    the gradient files have) and comes with ``--grad`` (not ``--plan``: the buffered form's)."""
    if after is not None and plan:
        raise UsageError(f"--plan prints the plan of the finished buffered form; --after {after} "
                         "stops the plain form's passes",
                         hint="Use one of them: yota-s2s trace --plan ..., or "
                              f"yota-s2s trace --grad --after {after} ...")
    if after is None:
        return
    if not grad:
        raise UsageError(f"--after {after} shows the gradient tape after a stage of the "
                         "passes; the tape without --grad is the traced one",
                         hint=f"Add --grad: yota-s2s trace --grad --after {after} ...")
    plain = [stage.name for stage in stages_for("plain")]
    if after not in plain:
        raise UsageError(f"the stage {after} makes the buffered form only; the gradient files "
                         "have the plain form", hint=f"Its stages: {', '.join(plain)}.")


def cmd_show(ns: argparse.Namespace, out: Output) -> int:
    files = _build_all(ns, out)
    for grad in files:
        if grad.ok:
            if len(files) > 1:
                out.code(f"# ---- {_shown(grad.path)} ----")
            out.code(grad.text)
    return COMPILE_ERRORS if _report_problems(files, out) else OK


def cmd_review(ns: argparse.Namespace, out: Output) -> int:
    files = _build_all(ns, out)
    pages = [(grad, written) for grad in files if grad.ok
             for written in write_functions([r.tape for r in grad.results])[0]]
    paths = [_review_path(ns.out, grad.model, written.tape.name, len(pages))
             for grad, written in pages]
    _refuse_foreign(paths, ns)
    for (grad, written), path in zip(pages, paths):
        name = written.tape.name
        notes = [f"Statements: {counts(written.tape).split(': ', 1)[1]}.",
                 f"Source: {grad.source}"]
        buffered = write_module(written.tape, device=ns.device, buffers=True)
        write_atomic(path, review_page(written, grad.text, ns.device, notes, buffered))
        out.info(f"wrote {_shown(path)}  (review of {name})")
    return COMPILE_ERRORS if _report_problems(files, out) else OK


def _review_path(out: str | None, model: ModelFile, function: str, pages: int) -> Path:
    """``-o page.html`` for one page (``page.<function>.html`` for several), ``-o DIR`` or the
    working directory for ``<model>.<function>.html``."""
    name = f"{model.path.stem}.{function}.html"
    if out is None:
        return Path(name)
    target = Path(out)
    if target.suffix == ".html":
        return target if pages == 1 else target.with_name(f"{target.stem}.{function}.html")
    return target / name


COMMANDS: dict[str, Callable[[argparse.Namespace, Output], int]] = {
    "compile": cmd_compile, "check": cmd_check, "trace": cmd_trace, "show": cmd_show,
    "review": cmd_review}


# -- the command line --------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("models", nargs="+", metavar="MODEL.py", help="model files")
    common.add_argument("--func", metavar="NAME", help="compile this function (default: those "
                        "marked @ys.example)")
    common.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                        help="an example argument for --func: float32[64,10], float64[], 5, "
                             "0.1, True, 'relu'")
    common.add_argument("--wrt", action=_Names, default=[], metavar="NAMES",
                        help="differentiate with respect to these parameters only (comma list)")
    common.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="the array module the generated code imports: numpy or cupy")
    common.add_argument("--engine", choices=ENGINES, default="numpy",
                        help="numba: the loops run as numba-compiled functions (pip install "
                             "'yota-s2s[numba]'); auto: numba where it is installed")
    common.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    common.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser = argparse.ArgumentParser(prog="yota-s2s", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"yota-s2s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in _COMMAND_HELP.items():
        command = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        _COMMAND_OPTIONS.get(name, lambda p: None)(command)
    return parser


class _Names(argparse.Action):
    """``--wrt W,b --wrt x`` -> ["W", "b", "x"]."""

    def __call__(self, parser, namespace, values, option_string=None):
        names = getattr(namespace, self.dest) + [v.strip() for v in values.split(",") if v.strip()]
        setattr(namespace, self.dest, names)


def _check_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--out", metavar="DIR", help="where the gradient files are")
    p.add_argument("--diff", action="store_true", help="show how stale files differ")
    p.add_argument("--gradcheck", action="store_true",
                   help="also compare each gradient with finite differences on its examples")
    p.add_argument("--samples", type=int, default=16, metavar="N",
                   help="elements per argument that --gradcheck perturbs (default 16)")
    p.add_argument("--tol", type=float, metavar="REL", help="largest relative error accepted "
                   "(default by dtype: " + ", ".join(f"{k} {v:g}" for k, v in TOLERANCE.items())
                   + ")")


def _force(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="replace files at the output paths that yota-s2s did not write")


_COMMAND_HELP = {
    "compile": "write a gradient module for each model file",
    "check": "exit 1 if a gradient file is missing or out of date (for CI)",
    "trace": "print the tape of each function",
    "show": "print the gradient module that compile would write",
    "review": "write an HTML review page per function: source beside generated code",
}
_COMMAND_OPTIONS = {
    "compile": lambda p: (p.add_argument("-o", "--out", metavar="DIR",
                                         help="write the gradient files here"), _force(p)),
    "check": _check_options,
    "trace": lambda p: (p.add_argument("--grad", action="store_true",
                                       help="the tape with its gradients, optimized"),
                        p.add_argument("--after", metavar="STAGE", choices=STAGE_NAMES,
                                       help="with --grad: the tape as this stage of the "
                                            "passes leaves it (the stages of the gradient "
                                            "files' form: " + ", ".join(
                                                s.name for s in stages_for("plain")) + ")"),
                        p.add_argument("--plan", action="store_true",
                                       help="the plan of the gradient's buffered form (the "
                                            "module ys.grad runs): inlining, scalar mode, "
                                            "memory, names, blocked chains and loop regions, "
                                            "a decision a line")),
    "review": lambda p: (p.add_argument("-o", "--out", metavar="PATH",
                                        help="a .html file, or a directory for the pages"),
                         _force(p)),
}


# ``check`` runs in a child process that records, as its last act, that it ran to the end: a
# model that ends the process while it is imported or run (os._exit(0)) would otherwise end
# ``check`` with status 0, nothing checked. (compile, show... leave their files or output
# unwritten: a failure anyone sees.)
CHILD = "YOTA_S2S_CHECK_DONE"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        ns = _parser().parse_args(argv)
    except SystemExit as e:                 # --help, --version, or a usage error (2)
        return e.code if isinstance(e.code, int) else USAGE
    if ns.command == "check" and CHILD not in os.environ:
        return _check_in_child(argv, Output(ns.quiet, ns.color))
    code = _run(ns)
    if ns.command == "check" and os.environ.get(CHILD):
        Path(os.environ[CHILD]).write_text(f"done {code}\n")
    return code


def _check_in_child(argv: list[str], out: Output) -> int:
    """``yota-s2s check argv`` in a child process: its status where it ran to the end, else a
    failure that says so."""
    handle, done = tempfile.mkstemp(prefix="yota_s2s-check-")
    os.close(handle)
    try:
        child = subprocess.run([sys.executable, "-m", "yota_s2s.cli", *argv],
                               env={**os.environ, CHILD: done})
        finished = Path(done).read_text()
    finally:
        os.unlink(done)
    if finished == f"done {child.returncode}\n":
        return child.returncode
    out.error(f"yota-s2s check: the check did not run to the end: the process ended with status "
              f"{child.returncode} before it finished (the model's code ended it: os._exit, a "
              "signal?); nothing is known to be checked")
    return COMPILE_ERRORS


def _run(ns: argparse.Namespace) -> int:
    out = Output(ns.quiet, ns.color)
    try:
        return COMMANDS[ns.command](ns, out)
    except BrokenPipeError:                 # the reader went away: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE
    except UsageError as e:
        out.error(f"yota-s2s {ns.command}: {e.format()}")
        return USAGE
    except YotaError as e:
        out.error(e.format())
        return COMPILE_ERRORS
    except SystemExit as e:                 # user code (a model, an example) called sys.exit
        out.error(f"yota-s2s {ns.command}: the model's code called sys.exit({e.code!r}); "
                  "nothing was checked or written after it")
        return COMPILE_ERRORS
    except Exception:
        out.error(traceback.format_exc() + "\nThis is a yota-s2s bug; please report it with the "
                  "traceback above.")
        return COMPILE_ERRORS


if __name__ == "__main__":
    sys.exit(main())
