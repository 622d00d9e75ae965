"""Gradient files: the module ``yota-s2s compile`` writes for a model file, made in memory.

``build(model, targets, options)`` compiles every target and, when all compile, writes the text
of one module with one gradient function per target, in the plain form (no work arrays: the
form to read, review and compile again; docs/performance.md). The text depends only on the model's
source, the targets and the options, never on the working directory or the time, so the same
inputs give byte-identical files that can be committed, diffed and checked (``check`` compares
a fresh build with the file on disk).

The header records the model file's path and sha256, what each function was compiled for, and
the command that writes the file again. Paths in it are relative to the *project root*: the
nearest directory above the model with a ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or
``.git``, else the model's own directory; the command is meant to be run there.

A target that does not compile is retraced in collecting mode (``frontend/collect.py``) so that
every unsupported construct and missing rule is reported at once.
"""
from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Sequence

from .codegen import function_name, write_module
from .compiler import gradient_tape
from .errors import SourceLoc, UnsupportedSyntax, YotaError
from .frontend import Collector, trace_function
from .ir.tape import Tape
from .modelfile import ModelFile, Target, import_name
from .rules.registry import RULES

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@dataclass(frozen=True)
class Options:
    """What, besides the targets, decides a gradient file (and goes into its Regenerate line)."""

    func: str | None = None
    wrt: tuple[str, ...] = ()
    device: str = "cpu"
    out_dir: Path | None = None


@dataclass
class Result:
    """One target: its tapes when it compiled, else every problem found."""

    target: Target
    forward: Tape | None = None
    tape: Tape | None = None
    problems: list[YotaError] = field(default_factory=list)
    stopped: YotaError | None = None     # what ended a collecting trace early, if anything


@dataclass
class GradFile:
    model: ModelFile
    path: Path                    # where the module goes
    results: list[Result]
    text: str | None              # None when a target does not compile
    command: str = ""             # the command that writes it (run from the project root)
    note: str | None = None       # how to make the model importable from there, if needed

    @property
    def ok(self) -> bool:
        return self.text is not None


def grad_path(model: ModelFile, out_dir: Path | None) -> Path:
    """``<out_dir or the model's directory>/<model>_grad.py``."""
    return Path(out_dir or model.path.parent) / f"{model.path.stem}_grad.py"


def project_root(path: Path) -> Path:
    for directory in path.resolve().parents:
        if any((directory / marker).exists() for marker in _ROOT_MARKERS):
            return directory
    return path.resolve().parent


def build(model: ModelFile, targets: Sequence[Target], options: Options,
          progress=lambda target: None) -> GradFile:
    """Compile ``targets`` of ``model``; ``progress(target)`` is called before each."""
    results = []
    for target in targets:
        progress(target)
        results.append(compile_target(target))
    path = grad_path(model, options.out_dir)
    command = regenerate(model, targets, options)
    if any(r.problems for r in results):
        return GradFile(model, path, results, None, command)
    text = write_module([r.tape for r in results], device=options.device, buffers=False,
                        source=source_line(model), regenerate=command)
    return GradFile(model, path, results, text, command, _import_note(model, path, text))


def compile_target(target: Target, backward: bool = True) -> Result:
    """The target's tapes (only the forward one if not ``backward``), or all its problems."""
    try:
        if backward:
            forward, tape = gradient_tape(target.fn, target.args, RULES, target.wrt, check=True,
                                          review=True)
        else:
            forward, tape = trace_function(target.fn, target.args, RULES)[0], None
    except (YotaError, RecursionError) as error:
        collector = Collector()
        stopped = None
        try:
            trace_function(target.fn, target.args, RULES, collector)
        except (YotaError, RecursionError) as end:
            stopped = _as_problem(end, target)
        if not collector.problems:
            return Result(target, problems=[_as_problem(error, target)])
        return Result(target, problems=collector.problems, stopped=stopped)
    return Result(target, forward, tape)


def _as_problem(error: Exception, target: Target) -> YotaError:
    if isinstance(error, YotaError):
        return error
    code = target.fn.__code__
    return UnsupportedSyntax(f"calls nest too deeply in {target.name} (unbounded recursion?)",
                             SourceLoc(code.co_filename, code.co_firstlineno, func=target.name),
                             "Recursion must stop on a static value (an int or a shape).")


def counts(tape: Tape) -> str:
    """``loss: 6 args, 9 forward + 14 backward statements, 1 guard``."""
    guards = sum(1 for s in tape.stmts if s.prim.emit[:1] == ("guard",))
    backward = sum(1 for s in tape.stmts if s.rule is not None)
    forward = len(tape.stmts) - backward - guards
    return (f"{tape.name}: {_plural(len(tape.params), 'arg')}, {forward} forward + "
            f"{_plural(backward, 'backward statement')}, {_plural(guards, 'guard')}")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# -- the header ------------------------------------------------------------------------------

def relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), root)).as_posix()


def source_line(model: ModelFile) -> str:
    """The model's path and sha256, of its bytes with ``\\r\\n`` read as ``\\n`` (a checkout
    with Windows line ends has the same hash)."""
    digest = hashlib.sha256(model.path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()
    return f"{relative(model.path, project_root(model.path))}, sha256 {digest}"


def regenerate(model: ModelFile, targets: Sequence[Target], options: Options) -> str:
    """The command that writes this file again, run from the project root."""
    root = project_root(model.path)
    words = ["yota-s2s", "compile", relative(model.path, root)]
    if options.func:
        words += ["--func", options.func]
    for target in targets:
        for spec in target.specs:
            words += ["--arg", spec]
    if options.wrt:
        words += ["--wrt", ",".join(options.wrt)]
    if options.device != "cpu":
        words += ["--device", options.device]
    if options.out_dir is not None:
        words += ["-o", relative(options.out_dir, root)]
    return shlex.join(words)


def _import_note(model: ModelFile, path: Path, text: str) -> str | None:
    """Where the gradient module needs the model on ``sys.path`` beside its own directory."""
    if not any(line.startswith((f"from {model.name} import", f"import {model.name} as"))
               for line in text.splitlines()):
        return None
    _, grad_root = import_name(path.resolve())
    if grad_root == model.root:
        return None
    return (f"{path} imports {model.name}: where you import it, {model.root} must be on "
            "sys.path too")


# -- checking --------------------------------------------------------------------------------

def load_text(text: str, path: Path, name: str) -> ModuleType:
    """Run a module's text without writing it (``check --gradcheck``)."""
    module = ModuleType(name)
    module.__file__ = str(path)
    exec(compile(text, str(path), "exec"), module.__dict__)
    return module


def gradient_function(module: ModuleType, result: Result):
    return getattr(module, function_name(result.tape))
