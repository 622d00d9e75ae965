"""A function activation of the partial evaluator: its locals, and where free names resolve.

A ``Frame`` is made for the compiled function (frontend/__init__.py), for each inlined call
(``calls.py``, ``inline.py``), each comprehension (``expressions.py``) and each rule of the
backward sweep; its ``parent`` is the frame a nested function was defined in.
"""
from __future__ import annotations

import builtins
from typing import Any

import gast

from .depends import module_root
from .source import ParsedFunction


class Frame:
    """One function activation: its locals and where free names resolve."""

    def __init__(self, fn: ParsedFunction, globals: dict, closure: dict, parent: "Frame | None"):
        self.fn, self.globals, self.closure, self.parent = fn, globals, closure, parent
        self.locals: dict[str, Any] = {}
        self.stmt: gast.stmt | None = None     # the statement running now (for locations)
        self.yields: list | None = None        # a generator's values (see calls.run_function)
        self.cells: dict[str, tuple | None] = {}    # where each closure cell is (outside.py)
        self.iterations: list[str] = []        # unrolled loops running now: ``t = 3``
        self.call: tuple = ()                  # an inlined call: (ordinal, call site), SourceLoc.call

    def lookup(self, name: str) -> Any:
        return self.locate(name)[0]

    def locate(self, name: str) -> tuple[Any, tuple | None]:
        """The value of ``name`` and, for a global or a closure cell, where it was found
        (``(root, path)``, root None where generated code cannot reach it); None for locals
        and builtins."""
        frame: Frame | None = self
        while frame is not None:
            if name in frame.locals:
                return frame.locals[name], None
            if name in frame.closure:
                return frame.closure[name], frame.cells.get(name, (None, ()))
            frame = frame.parent
        if name in self.globals:
            return self.globals[name], (module_root(self.globals), (("attr", name),))
        if hasattr(builtins, name):
            return getattr(builtins, name), None
        raise KeyError(name)
