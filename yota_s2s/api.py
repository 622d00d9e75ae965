"""The public entry points: ``simplegrad``, ``trace``, ``source``.

``simplegrad(f, *args)`` compiles once for the example arguments and returns a plain function
from an importable generated module: ``val, *grads = df(*args)``. ``trace(f, *args)`` returns the
value and the SSA tape. ``source(df)`` gives the generated module's text.
"""
from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from .compiler import compile_grad
from .frontend import trace_function
from .ir.tape import Tape
from .rules.registry import RULES, RuleSet


def simplegrad(f: Callable, *args: Any, device: str = "cpu", out_dir: str | Path | None = None,
               module_name: str | None = None, rules: RuleSet = RULES) -> Callable:
    """Compile the gradient of ``f`` for arguments like ``args``.

    Returns ``df`` with ``df(*args) == (f(*args), d0, d1, ...)``: one gradient per argument,
    ``None`` for arguments that are not differentiable (ints, strings, integer arrays).
    The function lives in a generated module: ``df.__module__`` imports in a fresh process
    that has the module's directory (``out_dir`` or the cache) on its path.
    """
    return compile_grad(f, _host(args), device=device, out_dir=out_dir,
                        module_name=module_name, rules=rules).fn


def trace(f: Callable, *args: Any, rules: RuleSet = RULES) -> tuple[Any, Tape]:
    """``(f(*args), tape)``: the value on these arguments and the SSA tape that computes it."""
    tape, ev = trace_function(f, _host(args), rules)
    result = tape.result
    value = ev.concrete(result) if not isinstance(result, tuple) else tuple(ev.concrete(r) for r in result)
    return value, tape


def source(df: Callable) -> str:
    """The text of the generated module that ``df`` comes from."""
    module = sys.modules.get(getattr(df, "__module__", ""), None)
    text = getattr(module, "__yota_text__", None)
    return text if text is not None else inspect.getsource(module or df)


def _host(args: tuple) -> tuple:
    """Example arguments on the host: cupy arrays are copied to numpy for compiling."""
    return tuple(a.get() if hasattr(a, "__cuda_array_interface__") and hasattr(a, "get") else a
                 for a in args)
