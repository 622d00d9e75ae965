"""Getting and parsing the source of a Python function.

``parse_function(fn)`` returns a ``ParsedFunction``: the gast node of the ``def`` (or the
``lambda``), the file it lives in and how to map node positions back to file lines, so every
tape statement can carry a ``SourceLoc``. Works for functions in files, notebook cells (IPython
registers cells with ``linecache``), nested functions, lambdas and methods. Where Python keeps
no source (the plain REPL, ``exec`` of a string) it raises an error that says so.

The source must be the code that runs: a file edited after its module was imported would
otherwise be compiled in place of the running function. So the file's text (as ``inspect``
reads it) is compiled as the import system compiles it, and one of its code objects must equal
the function's ``__code__`` (same bytecode, constants, names and positions); if none does,
``StaleSourceError``. Checked for modules imported from source files by Python's own loader,
and for pseudo-files (notebook cells, ``exec`` of a text registered with ``linecache``), whose
name can be given to another text later (the code object is compared, not the file name);
code made by other loaders (pytest's assert rewriting) cannot be compiled again here, so it is
not checked, nor a text that does not compile as Python (a cell with magics).
"""
from __future__ import annotations

import __future__
import contextlib
import importlib.machinery
import inspect
import linecache
import os
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Iterator

import gast

from ..errors import SourceLoc, StaleSourceError, UnsupportedSyntax
from .resolve import is_compiler, nested_gradient


def _library_dirs() -> tuple[str, ...]:
    import sysconfig
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
            if k in paths}
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


_LIBRARY_DIRS = _library_dirs()


def is_installed(file: str) -> bool:
    """Code installed with Python or a package (the standard library, site-packages), not the
    user's own: an error inside it must not ask the user to edit it."""
    parts = file.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    return os.path.realpath(file).startswith(_LIBRARY_DIRS)


@dataclass(frozen=True)
class ParsedFunction:
    node: gast.FunctionDef | gast.Lambda
    name: str
    file: str
    line_offset: int      # file line = node line + line_offset
    col_offset: int       # file column = node column + col_offset (the dedent)
    code: types.CodeType

    def loc(self, node: gast.AST, func: str | None = None, within: gast.stmt | None = None) -> SourceLoc:
        """Where ``node`` is. Inside a statement that spans lines (``within``), the location is
        the statement's first line, so everything the statement computes shares one place;
        the caret columns are kept only when ``node`` is on that line."""
        line = getattr(node, "lineno", None)
        if line is None:
            return SourceLoc(self.file, self.line_offset + 1, func=func or self.name)
        if within is not None and getattr(within, "lineno", line) != line:
            line = within.lineno + self.line_offset
            text = linecache.getline(self.file, line).strip()
            return SourceLoc(self.file, line, 0, None, func or self.name, text)
        line += self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_col is not None and end_line == node.lineno:
            end_col += self.col_offset
        else:
            end_col = None
        text = linecache.getline(self.file, line).strip()
        return SourceLoc(self.file, line, col, end_col, func or self.name, text)


_cache: dict[types.CodeType, ParsedFunction] = {}
_readers: list[list[ParsedFunction]] = []


@contextlib.contextmanager
def reading() -> Iterator[list[ParsedFunction]]:
    """Every function whose source ``parse_function`` reads inside the block (cached or not),
    in order: what a compile traced (gradient files hash their code, gradfile.py)."""
    seen: list[ParsedFunction] = []
    _readers.append(seen)
    try:
        yield seen
    finally:
        _readers.remove(seen)


def _read(parsed: ParsedFunction) -> ParsedFunction:
    for seen in _readers:
        seen.append(parsed)
    return parsed


def parse_function(fn: Any) -> ParsedFunction:
    """Parse ``fn`` (a function, lambda or method); cached per code object. A decorated
    function is the wrapper that runs, not what ``__wrapped__`` names: a decorator may change
    the result (or, as ``ys.gradient``'s functions do, compute another function entirely)."""
    fn = getattr(fn, "__func__", fn)
    if is_compiler(fn):
        raise nested_gradient(fn.__qualname__)
    code = fn.__code__
    if code in _cache:
        return _read(_cache[code])
    try:
        lines, first = inspect.getsourcelines(code)     # the code that runs, unwrapped
    except (OSError, TypeError):
        raise UnsupportedSyntax(
            f"Python keeps no source for {fn.__qualname__} (defined in {code.co_filename})",
            hint="yota_s2s compiles from source. Functions typed at the plain Python prompt or "
                 "made by exec() have none: put the function in a file (or a Jupyter/IPython "
                 "cell) and import it.") from None
    _check_running(fn, code)
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    col_offset = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
    try:
        module = gast.parse(dedented)
    except SyntaxError:
        if code.co_name != "<lambda>":
            raise
        # a lambda in the middle of an expression spanning lines (an item of a list or dict
        # literal written over several lines): find it in its whole file
        module, first, col_offset = _whole_file(fn, code), 1, 0
    node = _find_node(module, fn, code.co_firstlineno - first + 1)
    parsed = ParsedFunction(node, code.co_name, code.co_filename, first - 1, col_offset, code)
    _cache[code] = parsed
    return _read(parsed)


def _whole_file(fn: Any, code: types.CodeType) -> gast.Module:
    text = "".join(linecache.getlines(code.co_filename))
    try:
        return gast.parse(text)
    except SyntaxError:
        raise UnsupportedSyntax(f"cannot read the source of {fn.__qualname__} in "
                                f"{code.co_filename}:{code.co_firstlineno}",
                                hint="Give the function a name with def.") from None


_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
_file_codes: dict[tuple[str, int, int], frozenset[types.CodeType] | None] = {}


def _check_running(fn: Any, code: types.CodeType) -> None:
    """A ``StaleSourceError`` unless the text ``inspect`` reads for ``fn`` compiles to ``code``."""
    file = code.co_filename
    pseudo = not os.path.isfile(file)
    loader = getattr(inspect.getmodule(fn), "__loader__", None)
    if not pseudo and not isinstance(loader, (importlib.machinery.SourceFileLoader, type(None))):
        return
    text = "".join(linecache.getlines(file, fn.__globals__))
    flags = code.co_flags & _FUTURE_FLAGS
    key = (file, flags, hash(text))
    if key not in _file_codes:
        if len(_file_codes) > 256:
            _file_codes.clear()
        try:
            top = compile(text, file, "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError):
            top = None
        _file_codes[key] = frozenset(_all_codes(top)) if top is not None else None
    codes = _file_codes[key]
    if codes is None or code in codes:
        return          # a text that does not compile here (a cell with magics): not checked
    if pseudo:
        raise StaleSourceError(
            f"the source registered for {file} (linecache) is not the code of "
            f"{fn.__qualname__}: that name was given to another text after the function was "
            "defined (two cells or exec() calls under one file name), and yota_s2s compiles "
            "the source", SourceLoc(file, code.co_firstlineno, func=fn.__name__),
            "Give each text its own file name when you compile and register it, or define "
            "the function again from the text that is registered now.")
    raise StaleSourceError(
        f"{os.path.basename(file)} has changed since {fn.__qualname__} was imported: the "
        "function that runs is not the one in the file, and yota_s2s compiles the source",
        SourceLoc(file, code.co_firstlineno, func=fn.__name__),
        "Reload the module (importlib.reload, or %autoreload in IPython) or restart Python, so "
        "that the code that runs is the code in the file.")


def _all_codes(code: types.CodeType) -> Any:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _all_codes(const)


def _find_node(module: gast.Module, fn: Any, line: int) -> gast.FunctionDef | gast.Lambda:
    """The ``def`` of ``fn`` by name, or its lambda: the one on its first ``line`` (of
    ``module``) with its parameters."""
    code = fn.__code__          # by its code's name: functools.wraps renames the function
    if code.co_name != "<lambda>":
        for node in gast.walk(module):
            if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)) and node.name == code.co_name:
                if isinstance(node, gast.AsyncFunctionDef):
                    raise UnsupportedSyntax(f"{code.co_name} is async; only plain functions compile")
                return node
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)
               and [a.id for a in n.args.args + n.args.kwonlyargs] == params
               and n.lineno == line]
    if len(lambdas) > 1:
        lambdas = _lambdas_at_column(lambdas, code) or lambdas
    if not lambdas:
        raise UnsupportedSyntax(f"cannot find the source of {fn.__qualname__} in "
                                f"{code.co_filename}:{code.co_firstlineno}")
    if len(lambdas) > 1:
        raise UnsupportedSyntax(f"several lambdas on {code.co_filename}:{code.co_firstlineno} "
                                "take the same parameters; cannot tell which one to compile",
                                hint="Give the function a name with def, or put each lambda on its own line.")
    return lambdas[0]


def _lambdas_at_column(lambdas: list[gast.Lambda], code: types.CodeType) -> list[gast.Lambda]:
    """Tell lambdas on one line apart by where their bytecode points (Python 3.11+)."""
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return []
    cols = {c for _, _, c, _ in positions() if c is not None}
    return [n for n in lambdas if any(n.body.col_offset <= c < (n.body.end_col_offset or 10**6)
                                      for c in cols)]
