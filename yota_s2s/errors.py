"""Errors, and the source locations they point at.

Every error a user can reach is a ``YotaError``: it says *what* went wrong, *where* in the user's
code (file:line, the line itself and a caret under the offending span) and *what to do*.

    model.py:14 in loss: np.foo has no derivative rule and no Python source to inline
        h = np.foo(x)
            ^^^^^^^^^
    Add a rule to model.py (fill in <...>; y is the result, dy the incoming gradient) or mark
    it non-differentiable:
        ys.diffrule(np.foo, "x", "<expr in x, y, dy>")
        ys.nodiff(np.foo)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A span in a source file: where a tape statement (or an error) comes from."""

    file: str          # full path, or a pseudo-file such as "<ipython-input-3>"
    line: int          # 1-based
    col: int = 0       # 0-based, as in ast
    end_col: int | None = None
    func: str = ""     # the function the line belongs to
    text: str = ""     # the source line, stripped
    iteration: str = ""    # in an unrolled loop: which pass, ``t = 3`` (``t = 1, i = 2`` nested)
    # in an inlined function: which call of it, (ordinal in the trace, call site "model.py:20");
    # only the review page reads it (one block of rows per call), so it is not compared
    call: tuple = field(default=(), compare=False)

    @property
    def short(self) -> str:
        """``model.py:14``: the file's base name, so output does not depend on the checkout."""
        return f"{os.path.basename(self.file)}:{self.line}"

    def caret(self) -> str:
        """The source line with a caret under the span, indented for an error message."""
        if not self.text:
            return ""
        raw = _raw_line(self.file, self.line)
        if raw is None or self.end_col is None:
            return f"    {self.text}"
        indent = len(raw) - len(raw.lstrip())
        start = max(self.col - indent, 0)
        end = self.end_col - indent if self.end_col > self.col else len(self.text)
        width = max(min(end, len(self.text)) - start, 1)
        return f"    {self.text}\n    {' ' * start}{'^' * width}"


def _raw_line(file: str, line: int) -> str | None:
    import linecache
    raw = linecache.getline(file, line)
    return raw.rstrip("\n") if raw else None


class YotaError(Exception):
    """Base of every error yota_s2s raises on purpose."""

    def __init__(self, what: str, loc: SourceLoc | None = None, hint: str = ""):
        self.what, self.loc, self.hint = what, loc, hint
        super().__init__(self.format())

    def format(self) -> str:
        head = self.what
        if self.loc is not None:
            where = self.loc.short + (f" in {self.loc.func}" if self.loc.func else "")
            head = f"{where}: {self.what}"
            caret = self.loc.caret()
            if caret:
                head += "\n" + caret
        return head + (f"\n{self.hint}" if self.hint else "")


class UnsupportedSyntax(YotaError):
    """A Python construct the frontend cannot turn into a straight-line tape."""


class ResultTypeError(YotaError, TypeError):
    """A function given to a gradient whose result is not one real scalar (a tuple, an array,
    a complex value): a ``TypeError`` too, as JAX's and autograd's ``grad`` raise."""


class ArgumentWriteError(UnsupportedSyntax, TypeError):
    """``x[...] = v`` into an argument array, the caller's: a ``TypeError`` too, as JAX's and
    autograd's for an assignment into an array being differentiated."""


class NoRuleError(YotaError):
    """A call to something with neither a derivative rule nor Python source to inline."""


class StaticValueError(YotaError):
    """A value that must be known at compile time (a shape, an axis, a loop bound) is traced."""


class RuleError(YotaError):
    """A derivative rule that does not parse or names something it cannot see."""


class GuardError(YotaError):
    """The arguments take a path through the code other than the one that was compiled.

    Generated modules define their own ``GuardError(ValueError)`` so that they run without
    yota_s2s; ``ys.grad`` recognises both.
    """


class ArgumentMismatch(YotaError):
    """Arguments that do not match what a function was compiled for."""


class UpdateError(YotaError):
    """``ys.update`` was asked to replace a value inside an immutable container."""


class InternalError(YotaError):
    """A compiler bug: a verifier failure. Please report it with the printed tape."""


class UsageError(YotaError):
    """A command line or a model file that cannot be compiled as asked: a file that does not
    exist, an argument spec that does not parse, a name that is not a parameter."""


class CacheError(YotaError):
    """A cache directory or a generated file that cannot be trusted, or a module name that
    would replace or escape something it must not."""


class StaleSourceError(YotaError):
    """The source on disk no longer is the code that runs (edited after import)."""


class RecompileWarning(UserWarning):
    """``ys.grad`` compiles a function again and again: for new values of a static argument,
    or one variant per path where a guard decides (cache.py)."""


CUPY_INSTALL = ("Install cupy's binary wheel for your CUDA version: pip install cupy-cuda12x "
                "(CUDA 12) or pip install cupy-cuda11x (CUDA 11); `pip install cupy` builds it "
                "from source, which needs the CUDA toolkit. Or compile for device=\"cpu\".")


DASK_INSTALL = ("Install it: pip install 'yota-s2s[dask]' (dask.array, and dask.distributed "
                "to run on a cluster). Or compile for device=\"cpu\".")


def run_module_code(code, namespace: dict) -> None:
    """``exec`` of a generated module's code; a ``device="cuda"`` module on a machine without
    cupy (``device="dask"``: without dask) is a ``UsageError`` that says how to install it
    (not a bare ModuleNotFoundError)."""
    try:
        exec(code, namespace)
    except ModuleNotFoundError as e:
        if e.name == "dask":
            raise UsageError("this gradient was compiled for device=\"dask\", which needs dask, "
                             "and dask is not installed", hint=DASK_INSTALL) from None
        if e.name != "cupy":
            raise
        raise UsageError("this gradient was compiled for device=\"cuda\", which needs cupy, and "
                         "cupy is not installed", hint=CUPY_INSTALL) from None
