"""Frontend: Python source + example arguments -> SSA tape (see evaluator.py)."""
from __future__ import annotations

import inspect
import sys
import threading
from typing import Any, Callable, Sequence

from ..errors import InternalError, UnsupportedSyntax, YotaError
from ..ir.assumptions import IDENTITY, Assumption
from ..ir.tape import Tape, Var, tree_vars
from ..ir.values import to_tree
from ..objects import calling, param_names, unbind
from ..rules.registry import RULES, RuleSet
from .branches import SharedOnOnePath
from .collect import Collector
from .depends import Assumptions, rules_assumption
from .evaluator import Evaluator
from .frame import Frame
from .outside import FUNCTION
from .flatten import Flattener, arg_kind, leaf_names
from .index_lists import check_result, is_int_list
from .resolve import is_compiler
from .selections import select_masks
from .source import parse_function
from .structs import result_tree


def check_arguments(fn: Any, args: Sequence[Any], parsed: Any = None, hint: str = "") -> None:
    """``fn`` can be called with ``args`` (positional): else an error that says how many it
    takes, at its ``def`` (file:line), not an IndexError later."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*args)
        return
    except TypeError as e:
        problem = str(e)
    parsed = parsed if parsed is not None else parse_function(fn)
    params = list(sig.parameters.values())
    keywords = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if any(f"'{k}'" in problem for k in keywords):
        raise YotaError(f"{parsed.name} has keyword-only parameters without defaults "
                        f"({', '.join(keywords)}): the arguments differentiated are positional",
                        parsed.loc(parsed.node), "Give them with functools.partial: "
                        f"ys.grad(functools.partial({parsed.name}, {keywords[0]}=...), ...).")
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    takes = f"at least {required}" if any(p.kind == p.VAR_POSITIONAL for p in params) else \
        str(required) if required == len(positional) else f"{required} to {len(positional)}"
    raise YotaError(f"{parsed.name} takes {takes} positional argument"
                    f"{'' if takes.split()[-1] == '1' else 's'}, {len(args)} given ({problem})",
                    parsed.loc(parsed.node),
                    hint or f"Pass {parsed.name}'s arguments, as many as its def lists.")


def gradient_caller(g: Callable, examples: tuple) -> Callable:
    """A function that calls the gradient function ``g`` (``ys.gradient(f)``'s): what the
    frontend traces to differentiate ``g`` itself, named like ``g``."""
    def call(*args):
        return g(*args)
    call.__yota_name__ = call.__name__ = call.__qualname__ = getattr(g, "__name__", "call")
    call.__yota_params__ = param_names(g, len(examples))
    return call


# The tracer takes several Python frames for each call it follows (about 6 to 10): a recursion
# that Python runs within its limit can exhaust the tracer's. Such a trace runs again in a thread
# of its own with a larger stack and FRAMES_PER_CALL times the limit (calls still nest no deeper
# than Python's limit: Evaluator.max_depth).
FRAMES_PER_CALL = 16
DEEP_STACK = 512 << 20


def trace_function(fn: Any, args: Sequence[Any], rules: RuleSet = RULES,
                   collector: Collector | None = None,
                   dynamic: frozenset[int] = frozenset(),
                   regions: bool = True, branches: bool | None = None,
                   whiles: bool | None = None) -> tuple[Tape, Evaluator]:
    """Evaluate ``fn`` on ``args``; returns the tape and the evaluator (which holds the example
    value of every Var, for the backward pass, and ``flattener``/``depends``: what the code
    read from its arguments and its globals). A ``collector`` turns on collecting mode.
    ``regions``: loops as loop regions (else unrolled); ``branches``: an ``if`` on a traced
    number as a branch (branches.py; else a guard); None: as ``regions`` says; ``whiles``: a
    ``while`` on a traced condition as a while statement (whiles.py; else unrolled); None: where
    both regions and branches are on."""
    branches = regions if branches is None else branches
    whiles = regions and branches if whiles is None else whiles
    guarded: set[tuple] = set()         # ifs a branch statement cannot be: SharedOnOnePath

    def _trace(*args_) -> tuple[Tape, Evaluator]:
        while True:
            try:
                return _trace_once(*args_, frozenset(guarded))
            except SharedOnOnePath as e:
                if e.key in guarded:
                    raise InternalError(f"the if at {e.key} is a guard and still a branch") \
                        from None
                guarded.add(e.key)

    try:
        return _trace(fn, args, rules, collector, dynamic, branches,
                      sys.getrecursionlimit(), regions, whiles)
    except RecursionError:
        pass
    limit, found = sys.getrecursionlimit(), {}

    def deep() -> None:
        try:
            found["result"] = _trace(fn, args, rules, collector, dynamic, branches,
                                     limit, regions, whiles)
        except BaseException as e:      # (raised again in the caller's thread)
            found["error"] = e
    stack = threading.stack_size()
    try:
        sys.setrecursionlimit(limit * FRAMES_PER_CALL)
        try:
            threading.stack_size(DEEP_STACK)
            thread = threading.Thread(target=deep, name="yota_s2s deep trace")
            thread.start()
        finally:
            threading.stack_size(stack)
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    if isinstance(found.get("error"), RecursionError):
        parsed = parse_function(unbind(fn)[0])
        raise YotaError(f"{parsed.name}: the calls it makes nest too deep to trace (Python's "
                        f"recursion limit is {limit})", parsed.loc(parsed.node),
                        "Write the recursion as a loop, or make it shallower.") from None
    if "error" in found:
        raise found["error"]
    return found["result"]


def _trace_once(fn: Any, args: Sequence[Any], rules: RuleSet, collector: Collector | None,
                dynamic: frozenset[int], branches: bool, max_depth: int, regions: bool,
                whiles: bool, guarded: frozenset) -> tuple[Tape, Evaluator]:
    fn, self_arg = unbind(fn)
    if self_arg is not None:
        args = (self_arg, *args)
    if is_compiler(fn) and getattr(fn, "__yota_inline__", None) is not None:
        fn = gradient_caller(fn, args)  # ys.gradient(ys.gradient(f)): a function calling it
    elif self_arg is None and hasattr(fn, "__code__") and rules.lookup(fn) is not None:
        fn = calling(fn)    # a primitive with source (spla.solve_sylvester): by its rule
    parsed = parse_function(fn)
    if inspect.isgeneratorfunction(fn):
        raise UnsupportedSyntax(f"{parsed.name} is a generator function: the function to "
                                "differentiate must return its value", loc=parsed.loc(parsed.node),
                                hint="Return a list (or a sum) of what it yields; generators are "
                                     "fine in the helpers it calls.")
    check_arguments(fn, args, parsed)
    ev = Evaluator(rules)
    ev.max_depth = max_depth
    ev.collector = collector
    ev.regions = regions                # loops as loop regions (frontend/regions.py), or unrolled
    ev.branches = branches              # an if on a traced number as a branch (branches.py)
    ev.guarded = guarded                # but these ifs: guards (SharedOnOnePath)
    ev.whiles = whiles                  # a while on a traced condition as one (whiles.py)
    ev.flattener = flat = Flattener(ev.values, ev.input_vars, dynamic)
    ev.outside.function_found(fn, (FUNCTION, ()))       # its closure: the code's _fn argument
    names = param_names(fn, len(args))
    loc = flat.loc = parsed.loc(parsed.node)
    traced_args = [flat.flatten(a, i, (), names[i]) for i, a in enumerate(args)]
    structure, result = result_tree(ev.inline(fn, traced_args, {}, None), parsed.loc(parsed.node))
    result = ev.current_tree(result)        # (nested tuples of its leaves)
    ev.emit_stores()                        # fields assigned on arguments, stored last
    # the function's own name (a decorated one's too: loss, not its wrapper); ys.vjp's: f_vjp
    name = getattr(fn, "__yota_name__", None) or getattr(fn, "__name__", None) or parsed.name
    if not isinstance(name, str) or not name.isidentifier():
        name = parsed.name
    if isinstance(result, Var) and result.hint is None:
        # the value of loss() is called loss
        result.hint = name if name.isidentifier() else "value"
    inputs = sorted(flat.inputs, key=lambda i: i.argnum)      # struct fields are read lazily
    leaf_names(inputs, names)
    result = to_tree(result, loc)
    check_result(flat, result, loc)
    stmts = select_masks(ev, ev.placed_rows(ev.stmts, result), set(tree_vars(result)))
    tape = Tape(name=name, params=names, inputs=inputs, stmts=stmts,
                result=result, statics=flat.statics, loc=loc, layout=flat.layout,
                arg_kinds=tuple(_kind(a, i in dynamic) for i, a in enumerate(args)), freevars=fn.__code__.co_freevars,
                loops=list(ev.loop_notes), structure=structure)
    ev.assumes = assumptions(tape, ev, rules)
    return tape, ev


def _kind(arg: Any, dynamic: bool) -> str:
    """An argument's kind (``Tape.arg_kinds``); an int or a list of ints ``ys.grad`` reads
    when the code runs: "int", "ints"."""
    if dynamic and type(arg) is int:
        return "int"
    return "ints" if dynamic and is_int_list(arg) else arg_kind(arg)


def assumptions(tape: Tape, ev: Evaluator, rules: RuleSet) -> Assumptions:
    """The one record of what ``tape``'s code assumes about the world outside its arguments
    (``ir.assumptions``), kept on the tape (``tape.assumptions``) and returned with the guards'
    view of it: what the cache (``ys.grad``) and ``simplegrad``'s function check."""
    flat = ev.flattener
    record = [*ev.outside.record, *ev.assumed, *ev.depends.record()]
    record += [Assumption(f"type({a}) is {cls.__qualname__}", "class", IDENTITY, flat.loc,
                          (a, cls), code=True) for a, cls in flat.types]
    record += [Assumption(f"{a} is {b}", "tie", IDENTITY, flat.loc, (a, b))
               for a, b in flat.aliases]
    distinct = flat.distinct()
    record += [Assumption(", ".join(group) + " are distinct objects (untied)", "tie", IDENTITY,
                          flat.loc, group) for group in distinct]
    record += [Assumption(f"{a}.{n} not set on the object (its class's is read)", "attribute",
                          IDENTITY, flat.loc, (a, n)) for a, n in dict.fromkeys(flat.absent)]
    record += [Assumption(f"{a}.{n} set on the object (over its class's)", "attribute",
                          IDENTITY, flat.loc, (a, n)) for a, n in dict.fromkeys(flat.present)]
    record.append(rules_assumption(rules))
    tape.assumptions = tuple(record)
    return Assumptions(tuple(flat.types), tuple(flat.aliases), tuple(ev.depends),
                       tuple(dict.fromkeys(flat.absent)), tape.assumptions, tuple(distinct),
                       tuple(dict.fromkeys(flat.present)))


__all__ = ["assumptions", "Collector", "Evaluator", "Frame", "trace_function", "parse_function",
           "unbind", "check_arguments"]
