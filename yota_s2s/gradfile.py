"""Gradient files: the module ``yota-s2s compile`` writes for a model file, made in memory.

``build(model, targets, options)`` compiles every target and, when all compile, writes the text
of one module with one gradient function per target, in the plain form (no work arrays: the
form to read, review and compile again; docs/performance.md). The text depends only on the model's
source, the targets and the options, never on the working directory or the time, so the same
inputs give byte-identical files that can be committed, diffed and checked (``check`` compares
a fresh build with the file on disk).

The header records the model file's path and the sha256 of the code the gradients were traced from
(``code_digest``: the syntax trees of the functions the tracer read, without docstrings, so a
comment, a docstring or an edit of an untraced function leaves it alone), what each function was
compiled for, and the command that writes the file again. Paths in it are relative to the *project
root*: the nearest directory above the model with a ``pyproject.toml``, ``setup.py``, ``setup.cfg``
or ``.git``, else the model's own directory; the command is meant to be run there.

A target that does not compile is retraced in collecting mode (``frontend/collect.py``) so that
every unsupported construct and missing rule is reported at once.
"""
from __future__ import annotations

import ast
import copy
import hashlib
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Sequence

import gast

from .codegen import function_name, write_module
from .compiler import gradient_tape, numba_checked
from .errors import SourceLoc, UnsupportedSyntax, YotaError, run_module_code
from .frontend import Collector, trace_function
from .frontend.source import ParsedFunction, reading
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
    engine: str = "numpy"              # "numba": the loops compiled (codegen/numba_form.py)


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
    source: str = ""              # the header's Source line (source_line)

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
    with reading() as traced:
        for target in targets:
            progress(target)
            results.append(compile_target(target))
    path = grad_path(model, options.out_dir)
    command = regenerate(model, targets, options)
    if any(r.problems for r in results):
        return GradFile(model, path, results, None, command)
    source = source_line(model, traced)
    text, _ = numba_checked(
        lambda form: write_module([r.tape for r in results], device=options.device,
                                  buffers=False, source=source, regenerate=command, numba=form),
        numba=options.engine != "numpy" and options.device == "cpu",
        auto=options.engine == "auto")
    return GradFile(model, path, results, text, command, _import_note(model, path, text), source)


def compile_target(target: Target, backward: bool = True, after: str | None = None,
                   buffered: bool = False) -> Result:
    """The target's tapes (only the forward one if not ``backward``), or all its problems;
    ``after``: the gradient tape after that stage of the passes (passes.STAGE_NAMES);
    ``buffered``: the gradient tape of the buffered form on a CPU (``ys.grad``'s), not the
    plain form of the gradient files."""
    try:
        if backward:
            forward, tape = gradient_tape(target.fn, target.args, RULES, target.wrt, check=True,
                                          review=not buffered, after=after,
                                          device="cpu" if buffered else None)
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


def source_line(model: ModelFile, traced: Sequence[ParsedFunction]) -> str:
    """The model's path and the ``code_digest`` of the functions traced."""
    return f"{relative(model.path, project_root(model.path))}, code sha256 {code_digest(traced)}"


def code_digest(traced: Sequence[ParsedFunction]) -> str:
    """sha256 of what the gradients were traced from: each function whose source the tracer
    read (the targets, the helpers they inline, rule functions; not yota_s2s's own rules, which
    the yota-s2s version covers), as its name and its syntax tree without docstrings and
    positions. Comments, docstrings, blank lines, line breaks inside a statement and edits of
    code nothing traced are outside it; everything the tracer reads is in it."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    parts = set()
    for parsed in traced:
        if os.path.abspath(parsed.file).startswith(package):
            continue
        tree = gast.gast_to_ast(_without_docstrings(parsed.node))
        parts.add(f"{parsed.name}\n{_canonical(tree)}\n")
    return hashlib.sha256("".join(sorted(parts)).encode()).hexdigest()


def _canonical(node) -> str:
    """``ast.dump`` without positions and without the fields a Python or gast version adds
    empty (``type_params=[]`` from 3.12, ``kind=None``, ``type_comment=None``): the same text
    on every Python and gast that pyproject admits, so a committed file is not stale on
    another CI runner."""
    if isinstance(node, ast.AST):
        fields = ((name, getattr(node, name, None)) for name in node._fields)
        inner = ", ".join(f"{name}={_canonical(value)}" for name, value in fields
                          if value is not None and value != [])
        return f"{type(node).__name__}({inner})"
    if isinstance(node, list):
        return f"[{', '.join(_canonical(item) for item in node)}]"
    return repr(node)


def _without_docstrings(node: gast.AST) -> gast.AST:
    """A copy of ``node`` without the docstrings of its functions and classes."""
    node = copy.deepcopy(node)
    for inner in gast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)) and body \
                and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant) \
                and isinstance(body[0].value.value, str):
            inner.body = body[1:] or [gast.Pass()]
    return node


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
    if options.engine != "numpy":
        words += ["--engine", options.engine]
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
    run_module_code(compile(text, str(path), "exec"), module.__dict__)
    return module


def gradient_function(module: ModuleType, result: Result):
    return getattr(module, function_name(result.tape))
