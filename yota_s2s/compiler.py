"""The pipeline, end to end: function + example arguments -> imported gradient function.

    trace (frontend) -> backward -> optimize (passes) -> write (codegen) -> load
    trace (frontend) -> forward  -> optimize (passes) -> write (codegen) -> load   (jvp)

With ``check=True`` the verifier runs after every stage (the tests do this).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

from .backward import backward
from .forward import forward as forward_sweep
from .codegen import function_name, load, module_name_for, write_module
from .codegen.outside import reads_function
from .codegen.writer import names_taken
from .frontend import trace_function
from .frontend.depends import Assumptions
from .ir import verify
from .ir.names import assign_names
from .ir.tape import Tape
from .passes import optimize
from .rules.registry import RULES, RuleSet

DEVICES = ("cpu", "cuda")


@dataclass
class Compiled:
    """A compiled gradient: the function, its module and text, and the tapes behind it."""

    fn: Callable
    module: ModuleType
    text: str
    forward: Tape
    tape: Tape
    assumes: Assumptions | None = None      # for ys.grad's cache: what else the code relies on

    @property
    def reads_closure(self) -> bool:
        """The function reads its closure at call time: it takes the function as ``_fn``."""
        return reads_function(self.tape)


def gradient_tape(f: Any, args: Sequence[Any], rules: RuleSet = RULES, wrt: set[int] | None = None,
                  check: bool = False, passes: bool = True, review: bool = False
                  ) -> tuple[Tape, Tape]:
    """(forward tape, optimized gradient tape) for ``f`` on ``args``; ``review``: optimized
    for the review form (the plain form, ``buffers=False``: passes.REVIEW_PIPELINE)."""
    forward, tape, _ = _gradient(f, args, rules, wrt, check, passes, review=review)
    return forward, tape


def _gradient(f: Any, args: Sequence[Any], rules: RuleSet, wrt: set[int] | None, check: bool,
              passes: bool, dynamic: frozenset[int] = frozenset(), review: bool = False
              ) -> tuple[Tape, Tape, Assumptions]:
    """``gradient_tape``, and what the trace assumed beyond the tape (for ``ys.grad``'s cache)."""
    forward, ev = trace_function(f, args, rules, dynamic=dynamic)
    assumes = Assumptions(tuple(ev.flattener.types), tuple(ev.flattener.aliases), tuple(ev.depends))
    if check:
        verify.check(forward)
    return forward, _optimized(backward(forward, ev, wrt), rules, check, passes, review), assumes


def _optimized(tape: Tape, rules: RuleSet, check: bool, passes: bool, review: bool = False
               ) -> Tape:
    """A swept tape, verified and (with ``passes``) optimized, then named once
    (ir/names.assign_names); ``review``: optimized for the review form."""
    if check:
        verify.check(tape)
    if passes:
        tape = optimize(tape, rules, review=review)
        if check:
            verify.check(tape)
    return assign_names(tape, names_taken(tape))


def compile_grad(f: Any, args: Sequence[Any], *, rules: RuleSet = RULES,
                 wrt: set[int] | None = None, device: str = "cpu",
                 out_dir: str | Path | None = None, module_name: str | None = None,
                 regenerate: str | None = None, check: bool = False,
                 buffers: bool = True, dynamic: frozenset[int] = frozenset()) -> Compiled:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    forward, tape, assumes = _gradient(f, args, rules, wrt, check, passes=True, dynamic=dynamic,
                                       review=not buffers)
    return _written(forward, tape, device, out_dir, module_name, regenerate, buffers, assumes)


def _written(forward: Tape, tape: Tape, device: str, out_dir: str | Path | None,
             module_name: str | None, regenerate: str | None, buffers: bool,
             assumes: Assumptions | None = None) -> Compiled:
    """``tape``'s module, written and loaded."""
    text = write_module(tape, device=device, regenerate=regenerate, buffers=buffers)
    fname = function_name(tape)
    if module_name is None:
        module_name = fname if out_dir is not None else module_name_for(fname, text)
    module = load(text, module_name, out_dir)
    return Compiled(getattr(module, fname), module, text, forward, tape, assumes)


def jvp_tape(f: Any, args: Sequence[Any], tangents: Sequence[Any] | None = None,
             rules: RuleSet = RULES, check: bool = False, passes: bool = True) -> tuple[Tape, Tape]:
    """(forward tape, optimized tape that also computes the tangent) for ``f`` on ``args``,
    the tangents' example values ``tangents`` (ones where None)."""
    forward, ev = trace_function(f, args, rules)
    if check:
        verify.check(forward)
    tape = forward_sweep(forward, ev, list(tangents or [None] * len(args)))
    return forward, _optimized(tape, rules, check, passes)


def compile_jvp(f: Any, args: Sequence[Any], tangents: Sequence[Any] | None = None, *,
                rules: RuleSet = RULES, device: str = "cpu", out_dir: str | Path | None = None,
                module_name: str | None = None, check: bool = False,
                buffers: bool = True) -> Compiled:
    """The forward-mode module of ``f``: ``f_jvp(*args, *tangents) == (f(*args), J @ t)``,
    one tangent argument per argument with float values (forward.py)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    forward, tape = jvp_tape(f, args, tangents, rules, check)
    return _written(forward, tape, device, out_dir, module_name, None, buffers)
