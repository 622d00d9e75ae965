"""Frontend: Python source + example arguments -> SSA tape (see evaluator.py)."""
from __future__ import annotations

import inspect
from typing import Any, Sequence

from ..ir.tape import Input, StaticInput, Tape, Var
from ..rules.registry import RULES, RuleSet
from .evaluator import Evaluator, Frame
from .flatten import arg_kind, flatten
from .source import parse_function
from .values import to_tree


def param_names(fn: Any, n_args: int) -> tuple[str, ...]:
    """One name per positional argument: the parameter's, or ``args_0``... for ``*args``."""
    sig = inspect.signature(fn)
    names = []
    params = list(sig.parameters.values())
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names += [f"{p.name}_{i}" for i in range(n_args - len(names))]
    return tuple(names[:n_args])


def trace_function(fn: Any, args: Sequence[Any], rules: RuleSet = RULES) -> tuple[Tape, Evaluator]:
    """Evaluate ``fn`` on ``args``; returns the tape and the evaluator (which holds the example
    value of every Var, for the backward pass)."""
    parsed = parse_function(fn)
    ev = Evaluator(rules)
    inputs: list[Input] = []
    statics: list[StaticInput] = []
    names = param_names(fn, len(args))
    traced_args = [flatten(a, i, (), names[i], inputs, statics, ev.values) for i, a in enumerate(args)]
    ev.input_vars = {i.var for i in inputs}
    loc = parsed.loc(parsed.node)
    self_arg = getattr(fn, "__self__", None)
    call_args = traced_args
    target = fn
    if self_arg is not None:
        target = fn.__func__
        call_args = [self_arg, *traced_args]
    result = ev.inline(target, call_args, {}, None)
    if isinstance(result, Var) and result.hint is None:
        # the value of loss() is called loss
        result.hint = parsed.name if parsed.name.isidentifier() else "value"
    tape = Tape(name=parsed.name, params=names, inputs=inputs, stmts=ev.stmts,
                result=to_tree(result, loc), statics=statics, loc=loc,
                arg_kinds=tuple(arg_kind(a) for a in args))
    return tape, ev


__all__ = ["Evaluator", "Frame", "trace_function", "parse_function"]
