"""Values from outside the function, read when the gradient runs: ``external`` and ``draw``.

``external(root=..., path=...)`` is an array the function reads from a module global, a
closure cell or an attribute of such an object (``X``, ``cfg.W``, ``data[0]``). The generated
code reads it where the original does, at call time, from the user's module or the closure,
and checks its type, shape and dtype (``GuardError`` otherwise); it is never written into the
module as a literal. It is not an argument, so it gets no gradient.

A float field of such an object (``cfg.scale``) is read the same way; an int, bool, string or
None field (``cfg.layers``) stays static, and ``external_check`` checks at call time that it
still has the value the code was compiled for.

``draw(args, method=..., root=..., path=..., keywords=...)`` is a call that draws random
numbers (``np.random.randn(3)``, ``rs.normal(size=n)``, ``rng.standard_normal(n)``): kept as
that call in the forward section, calling the same generator (numpy's global one, or the
user's ``RandomState``/``Generator`` read at call time like an ``external``); the backward
section reuses the drawn value. It has no gradient: a reparameterized sample
(``mu + sigma * eps``) carries the gradient through the arithmetic.

``root`` is ``("module", name)`` (a module's globals, imported by name) or ``("function",)``
(the compiled function itself, whose closure the generated code reads through its ``_fn``
argument); ``path`` is a tuple of steps, each ``("attr", name)`` or ``("item", key)``, and for
checks a last ``("len", None)`` or ``("keys", None)`` (a list's length, a dict's keys). Both
are static values, written into the code through ``yota_s2s.text``.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from ..errors import InternalError, YotaError
from ..ir.play import HANDLERS
from ..ir.tape import Stmt
from .registry import nodiff, primitive


def follow(obj: Any, path: tuple) -> Any:
    """``obj`` read along ``path``: ``(("attr", "W"), ("item", 0))`` is ``obj.W[0]``."""
    for kind, key in path:
        obj = len(obj) if kind == "len" else tuple(obj) if kind == "keys" else \
            getattr(obj, key) if kind == "attr" else obj[key]
    return obj


def external(root: tuple = (), path: tuple = (), shown: str = "") -> Any:
    """The value at ``path`` from ``root``, read now (what the generated code does)."""
    if not root or root[0] != "module":
        raise InternalError("a value read from a closure cannot be read again outside the call")
    return follow(importlib.import_module(root[1]), path)


def external_check(root: tuple = (), path: tuple = (), shown: str = "",
                   expected: Any = None) -> None:
    """A static field read from outside (``cfg.layers``) still has the value compiled for."""
    raise InternalError("a check of a value read from outside runs in the generated code only")


def draw(args: tuple = (), method: str = "", keywords: tuple = (), root: tuple = (),
         path: tuple = ()) -> Any:
    """``generator.method(*args)``: ``len(keywords)`` trailing items of ``args`` are keywords."""
    raise InternalError("a random draw is made by the generated code, never at compile time")


EXTERNAL = primitive(external, "root=(), path=(), shown=''", name="external",
                     emit=("external",), creates=True, view=True)
nodiff(external)
EXTERNAL_CHECK = primitive(external_check, "root=(), path=(), shown='', expected=None",
                           name="external_check", emit=("external_check",), nout=0, effect=True)
nodiff(external_check)
DRAW = primitive(draw, "args, method='', keywords=(), root=(), path=()", name="draw",
                 emit=("draw",), creates=True, effect=True, sequences=("args",))
nodiff(draw)


# -- played (ir/play.py): read along the root and path, as the generated code does ---------------

def _base(stmt: Stmt, fn: Callable | None) -> Any:
    """What ``path`` starts from: a module, numpy's global generator, or the traced function."""
    root = stmt.param("root")
    if root[0] == "module":
        return importlib.import_module(root[1])
    if root[0] == "numpy":
        return np.random
    if fn is None:
        raise YotaError(f"{stmt.param('shown') or 'a value'} is read from the function's "
                        "closure; play needs the function to read it",
                        hint="Call tape.play(*args, fn=f) with the traced function.")
    return fn


def _play_external(stmt: Stmt, operands: list, fn: Callable | None) -> tuple:
    return (follow(_base(stmt, fn), stmt.param("path")),)


def _play_external_check(stmt: Stmt, operands: list, fn: Callable | None) -> tuple:
    target = follow(_base(stmt, fn), stmt.param("path"))
    if target != stmt.param("expected"):
        raise YotaError(f"{stmt.param('shown')} was {stmt.param('expected')!r} when traced and "
                        f"is {target!r} now")
    return ()


def _play_draw(stmt: Stmt, operands: list, fn: Callable | None) -> tuple:
    target = follow(_base(stmt, fn), stmt.param("path"))
    values, names = operands[0], stmt.param("keywords")
    positional = values[:len(values) - len(names)]
    keywords = dict(zip(names, values[len(values) - len(names):]))
    return (getattr(target, stmt.param("method"))(*positional, **keywords),)


HANDLERS.update({EXTERNAL: _play_external, EXTERNAL_CHECK: _play_external_check,
                 DRAW: _play_draw})
