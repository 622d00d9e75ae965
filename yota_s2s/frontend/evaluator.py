"""The partial evaluator: runs a function's source on example arguments and records a tape.

It walks the gast tree of the function like an interpreter. Static values (ints, shapes,
containers, functions) are computed at compile time; every operation on a traced value becomes
a tape statement, computed on the example values too, so each Var knows its shape and dtype and
every branch can be decided:

- calls to Python functions with source are inlined; primitives are recorded (``calls.py``);
- ``if``/``while``/``and``/``or``/``x if c else y`` on static values pick a branch; on traced
  values they follow the example and record a *guard*, which the generated code checks, but
  for an ``if`` on a traced boolean number whose arms agree, which stays an ``if``
  (``branches.py``);
- ``for`` loops become loop regions where the body is one program for every step
  (``regions.py``), and are unrolled otherwise; ``break``, ``continue`` and ``return`` work
  anywhere.

Statements are here; expressions in ``expressions.py``; calls in ``calls.py`` (primitives in
``primitive_calls.py``, inlining in ``inline.py``, builtins in ``builtin_calls.py``).
"""
from __future__ import annotations

import itertools
import sys
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Iterator

import gast
import numpy as np

from ..errors import SourceLoc, StaticValueError, UnsupportedSyntax, YotaError
from ..ir.tape import Lit, Stmt, Var
from ..ir.values import LocalFunction, to_tree
from ..rules.registry import RuleSet
from .calls import CallsMixin
from .abstract import Values
from .branches import BranchesMixin
from .conditions import ConditionsMixin
from .collect import Collector
from .expressions import ExpressionsMixin
from .depends import Depends
from .frame import Frame
from .inline import InliningMixin
from .outside import OutsideReads
from .primitive_calls import PrimitiveCallsMixin
from .region_dicts import RegionDictsMixin
from .region_lists import RegionListsMixin
from .region_tape import RegionTapeMixin
from .regions import RegionsMixin, TrialAbort
from .structs import set_attribute
from .updates import UpdatesMixin
from .returns import ReturnsMixin
from .whiles import WhilesMixin

MAX_LOOP = 100_000


_KEEP = object()     # Evaluator.at: leave the location or the rule text as it is


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


def _storable(value: Any) -> bool:
    """A static value the generated code can store into an argument's field, list or dict: a
    number (numpy's too: numpy-ml keeps ``out_rows``, an ``np.int64``), a string, None, or a
    tuple of those (a shape)."""
    if isinstance(value, tuple):
        return all(_storable(v) for v in value)
    return isinstance(value, (bool, int, float, complex, str, type(None), np.number, np.bool_))


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Evaluator(ExpressionsMixin, CallsMixin, PrimitiveCallsMixin, InliningMixin, UpdatesMixin,
                RegionsMixin, RegionListsMixin, RegionDictsMixin, RegionTapeMixin, ConditionsMixin,
                BranchesMixin, WhilesMixin, ReturnsMixin):
    def __init__(self, rules: RuleSet, values: dict[Var, Any] | None = None):
        self.rules = rules
        self.stmts: list[Stmt] = []
        # the example values; ghosts until Python code reads them (abstract.py)
        self.values = values if isinstance(values, Values) else Values(values or {})
        self.frame: Frame | None = None
        self.depth = 0
        self.max_depth = sys.getrecursionlimit()    # calls nest as deep as Python lets them
        self.hint_depth: dict[Var, int] = {}
        self.backward_mode = False            # set while instantiating derivative rules
        self.loc_override: SourceLoc | None = None
        self.rule_text: str | None = None
        self.rule_domain: tuple[str, str] | None = None   # the rule running now: its domain=
        self.input_vars: set[Var] = set()
        self.flattener = None                 # frontend.flatten.Flattener, set by trace_function
        # globals and class attributes the source read, each with where it was read
        self.depends = Depends(lambda: self.loc(self.frame.stmt) if self.frame else None)
        self.outside = OutsideReads(self)     # data read from globals and closures
        # other entries of the record of assumptions (ir/assumptions.py): an int argument's
        # role in an index, ... (the record also takes outside's, depends' and the flattener's)
        self.assumed: list = []
        self.collector: Collector | None = None    # collecting mode: see collect.py
        self.latest: dict[Var, Var] = {}      # in-place updates: see updates.py
        self.views: dict[Var, tuple[Var, Stmt]] = {}
        self.shared: dict[Var, tuple] = {}    # arrays a branch's result may be: branches.py
        self.constants: set[Var] = set()
        self.stores: dict[tuple[str, str], tuple] = {}  # fields assigned on arguments
        # masks' counts: each guard's condition -> its mask; arrays whose shape the code read
        # (len, .shape): what selections.py needs to write a selection as a select
        self.selection_guards: dict[Var, Var] = {}
        self.static_reads: set[Var] = set()
        self.loop_notes: list[str] = []       # per loop: region or unrolled, and why (regions.py)
        self.stack_rows: dict = {}
        self.pending_rows: dict = {}
        self.calls = itertools.count(1)       # inlined calls, numbered (SourceLoc.call)

    # -- where emitted statements go, and what they say ---------------------------------

    @contextmanager
    def at(self, loc: SourceLoc | None | object = _KEEP, rule: str | None | object = _KEEP
           ) -> Iterator[None]:
        """The statements emitted inside are located at ``loc`` (``loc_override``; None: where
        the traced code is) and carry the rule text ``rule`` (``rule_text``); one not given is
        left as it is. What was set is restored on leaving, by an error too."""
        saved = self.loc_override, self.rule_text
        if loc is not _KEEP:
            self.loc_override = loc
        if rule is not _KEEP:
            self.rule_text = rule
        try:
            yield
        finally:
            if loc is not _KEEP:
                self.loc_override = saved[0]
            if rule is not _KEEP:
                self.rule_text = saved[1]

    @contextmanager
    def deriving(self, stmts: list[Stmt]) -> Iterator[list[Stmt]]:
        """A sweep of the AD engine: derivative rules are instantiated (``backward_mode``), the
        statements go into ``stmts`` (given to the block), at the locations and with the rule
        texts the sweep sets; all of it is restored on leaving, by an error too."""
        saved = self.backward_mode
        self.backward_mode = True
        try:
            with self.collect(stmts), self.at(None, None):
                yield stmts
        finally:
            self.backward_mode = saved

    @contextmanager
    def in_frame(self, frame: Frame) -> Iterator[Frame]:
        """Names are looked up in ``frame`` inside (a rule's placeholders); the frame that was
        current is restored on leaving, by an error too."""
        saved, self.frame = self.frame, frame
        try:
            yield frame
        finally:
            self.frame = saved

    @contextmanager
    def collect(self, stmts: list[Stmt] | None = None) -> Iterator[list[Stmt]]:
        """The statements emitted inside go into ``stmts`` (a new list if not given), which is
        given to the block; the current list is restored on leaving, by an error too."""
        saved, self.stmts = self.stmts, [] if stmts is None else stmts
        try:
            yield self.stmts
        finally:
            self.stmts = saved

    # -- locations and errors ------------------------------------------------------------

    def loc(self, node: gast.AST | None) -> SourceLoc | None:
        if self.loc_override is not None:
            return self.loc_override
        if self.frame is None or node is None:
            return None
        loc = self.frame.fn.loc(node, within=self.frame.stmt)
        if self.frame.iterations and loc is not None:
            loc = replace(loc, iteration=", ".join(self.frame.iterations))
        if self.frame.call and loc is not None:
            loc = replace(loc, call=self.frame.call)
        return loc

    def call_of(self, node: gast.AST | None) -> tuple:
        """``SourceLoc.call`` for a function inlined at ``node``: () for the compiled one."""
        site = self.loc(node) if node is not None else None
        return () if site is None else (next(self.calls), site.short)

    def unsupported(self, node: gast.AST, what: str, hint: str = "") -> UnsupportedSyntax:
        return UnsupportedSyntax(what, self.loc(node), hint)

    # -- running a function body ---------------------------------------------------------

    def run_body(self, frame: Frame, body: list[gast.stmt]) -> Any:
        self.depth += 1
        try:
            with self.in_frame(frame):
                if self.depth > self.max_depth:
                    raise UnsupportedSyntax(f"calls nest deeper than {self.max_depth}, Python's "
                                            "recursion limit (unbounded recursion?)",
                                            frame.fn.loc(frame.fn.node),
                                            "Recursion must stop on a static value (an int or a "
                                            "shape).")
                self.exec_block(body)
                return None
        except _Return as ret:
            return ret.value
        finally:
            self.depth -= 1

    def exec_block(self, body: list[gast.stmt]) -> None:
        for k, stmt in enumerate(body):
            if self.returning_loop(stmt, body[k + 1:]) or self.returning_if(stmt, body[k + 1:]):
                return      # a loop or an if that returns on data, and the rest (returns.py)
            self.exec_stmt(stmt)

    def exec_stmt(self, node: gast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        frame = self.frame
        outer, frame.stmt = frame.stmt, node
        try:
            if method is None:
                raise self.unsupported(node, f"`{type(node).__name__}` statements are not "
                                       "supported", _UNSUPPORTED_HINTS.get(type(node).__name__, ""))
            method(node)
        except UnsupportedSyntax as e:
            if self.collector is None:
                raise
            self.collector.record(e)        # and go on after the statement
        except (YotaError, _Return, _Break, _Continue):
            raise
        except RecursionError:
            raise
        except Exception as e:      # a user-level error (bad shapes, ...) at this line
            raise YotaError(f"{type(e).__name__}: {e}", self.loc(node)) from e
        finally:
            frame.stmt = outer

    # -- statements ----------------------------------------------------------------------

    def stmt_Expr(self, node: gast.Expr) -> None:
        if isinstance(node.value, gast.Constant) and isinstance(node.value.value, str):
            return                  # docstring
        self.expr(node.value)

    def stmt_Pass(self, node: gast.Pass) -> None:
        pass

    def stmt_Return(self, node: gast.Return) -> None:
        raise _Return(None if node.value is None else self.expr(node.value))

    def stmt_Assign(self, node: gast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, node: gast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.expr(node.value))

    def stmt_AugAssign(self, node: gast.AugAssign) -> None:
        """``x op= v``: in place on arrays and lists (see updates.py), a new value otherwise."""
        target = node.target
        if isinstance(target, gast.Name):
            current = self.lookup(target.id, target)
            value = self.augmented(node.op, current, self.expr(node.value), node, target.id)
            self.assign(target, value)
        elif isinstance(target, gast.Subscript):
            container = self.expr(target.value)
            key = self.expr(target.slice)
            if isinstance(container, (list, dict)) and not isinstance(key, Var):
                shown = f"{_shown(target.value)}[...]"
                value = self.augmented(node.op, container[key], self.expr(node.value), node, shown)
                container[key] = value
            else:
                old = self.getitem(container, key, target)
                new = self.binop(node.op, old, self.expr(node.value), node)
                self.write_item(container, key, new, node, _shown(target.value))
        elif isinstance(target, gast.Attribute):
            obj = self.expr(target.value)
            current = self.getattr(obj, target.attr, target)
            shown = f"{_shown(target.value)}.{target.attr}"
            value = self.augmented(node.op, current, self.expr(node.value), node, shown)
            set_attribute(self, obj, target.attr, value, node)
        else:
            raise self.unsupported(node, f"augmented assignment to {type(target).__name__}")

    def stmt_If(self, node: gast.If) -> None:
        test = self.condition(node.test) if self.branching() else self.expr(node.test)
        if isinstance(test, Var) and self.branch_if(node, test):
            return          # a branch statement: both arms kept (branches.py)
        branch = node.body if self.truth(test, node.test) else node.orelse
        self.exec_block(branch)

    def stmt_For(self, node: gast.For) -> None:
        node = self.structured(node)        # `continue` as an if's other arm (exits.py)
        iterable = self.loop_iterable(node.iter)
        if self.region_for(node, iterable) or self.while_for(node, iterable):
            return      # a loop region, or a while statement (a break on data: whiles.py)
        iterable = self.eager(iterable)
        items = self.iterate(iterable, node.iter, lazy=True)
        for count, item in enumerate(items):
            if count >= MAX_LOOP:
                raise self.unsupported(node, f"the loop runs more than {MAX_LOOP} times")
            self.assign(node.target, item)
            marks = self.frame.iterations
            counter = isinstance(node.target, gast.Name) and type(item) is int
            if counter:      # ``# t = 3`` above the statements of this pass (codegen)
                marks.append(f"{node.target.id} = {item}")
            try:
                if self.loop_body(node.body):
                    return
            finally:
                if counter:
                    marks.pop()
        self.exec_block(node.orelse)

    def stmt_While(self, node: gast.While) -> None:
        node = self.structured(node)
        if self.region_while(node) or self.while_region(node):
            return      # a for region (static ints), or a while statement (whiles.py)
        count = 0
        while self.truth(self.expr(node.test), node.test):
            count += 1
            if count > MAX_LOOP:
                raise self.unsupported(node, f"the loop runs more than {MAX_LOOP} times",
                                       "Loops are unrolled at compile time; is the condition static?")
            if self.loop_body(node.body):
                return
        self.exec_block(node.orelse)

    def loop_body(self, body: list[gast.stmt]) -> bool:
        """Run one iteration; True when it ends in ``break``."""
        try:
            self.exec_block(body)
        except _Break:
            return True
        except _Continue:
            pass
        return False

    def stmt_Break(self, node: gast.Break) -> None:
        raise _Break()

    def stmt_Continue(self, node: gast.Continue) -> None:
        raise _Continue()

    def stmt_FunctionDef(self, node: gast.FunctionDef) -> None:
        if node.decorator_list:
            raise self.unsupported(node, "decorated functions defined inside a compiled function",
                                   "Define the decorated function at module level.")
        self.frame.locals[node.name] = self.make_local_function(node, node.name)

    def stmt_Assert(self, node: gast.Assert) -> None:
        if not self.truth(self.expr(node.test), node.test):
            message = self.expr(node.msg) if node.msg is not None else ""
            raise YotaError(f"assertion failed on the example arguments: {message}", self.loc(node))

    def stmt_Raise(self, node: gast.Raise) -> None:
        exc = self.expr(node.exc) if node.exc is not None else None
        raise YotaError(f"the function raises {exc!r} on the example arguments", self.loc(node))

    def stmt_Delete(self, node: gast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, gast.Name):
                self.frame.locals.pop(target.id, None)
            else:
                raise self.unsupported(node, "`del` of anything but a local name")

    def stmt_Import(self, node: gast.Import) -> None:
        for alias in node.names:
            module = __import__(alias.name)
            if alias.asname:
                for part in alias.name.split(".")[1:]:
                    module = getattr(module, part)
            self.frame.locals[alias.asname or alias.name.split(".")[0]] = module

    def stmt_ImportFrom(self, node: gast.ImportFrom) -> None:
        module = __import__(node.module or "", fromlist=[a.name for a in node.names], level=node.level)
        for alias in node.names:
            self.frame.locals[alias.asname or alias.name] = getattr(module, alias.name)

    def stmt_Global(self, node: gast.Global) -> None:
        raise self.unsupported(node, "writing to global variables is not supported",
                               "Return the new value instead, or keep the state in an argument.")

    def stmt_Nonlocal(self, node: gast.Nonlocal) -> None:
        names = ", ".join(node.names)
        raise self.unsupported(node, f"`nonlocal {names}`: writing to a variable of the "
                               "enclosing function is not supported",
                               f"Return the new value from the inner function instead "
                               f"({node.names[0]} = inner(..., {node.names[0]})), or keep the "
                               "state in a list or dict that the inner function changes.")

    # -- binding names -------------------------------------------------------------------

    def assign(self, target: gast.AST, value: Any) -> None:
        if isinstance(target, gast.Name):
            self.bind_name(target.id, value)
        elif isinstance(target, (gast.Tuple, gast.List)):
            self.assign_unpack(target, value)
        elif isinstance(target, gast.Subscript):
            container = self.expr(target.value)
            key = self.expr(target.slice)
            if isinstance(container, (list, dict)) and not isinstance(key, Var):
                container[key] = value
            elif not (type(container) is dict and self.trial_records and
                      self.step_write(container, key, value, target)):     # hs[t] = h
                self.write_item(container, key, value, target, _shown(target.value))
        elif isinstance(target, gast.Starred):
            self.assign(target.value, list(value))
        elif isinstance(target, gast.Attribute):
            set_attribute(self, self.expr(target.value), target.attr, value, target)
        else:
            raise self.unsupported(target, f"assignment to {type(target).__name__}")

    def assign_unpack(self, target: gast.Tuple | gast.List, value: Any) -> None:
        items = list(self.iterate(value, target))
        starred = [i for i, t in enumerate(target.elts) if isinstance(t, gast.Starred)]
        if starred:
            i = starred[0]
            after = len(target.elts) - i - 1
            items = items[:i] + [items[i:len(items) - after]] + items[len(items) - after:]
        if len(items) != len(target.elts):
            raise StaticValueError(f"cannot unpack {len(items)} values into {len(target.elts)} names",
                                   self.loc(target))
        for t, item in zip(target.elts, items):
            self.assign(t, item)

    def bind_name(self, name: str, value: Any) -> None:
        if (isinstance(value, Var) and not self.backward_mode and value.grad_of is None
                and (not self.is_input(value) or value in self.outside.vars)
                and (value.hint is None or self.hint_depth.get(value, 0) > self.depth)):
            value.hint = name
            self.hint_depth[value] = self.depth
        self.frame.locals[name] = value

    def lookup(self, name: str, node: gast.AST) -> Any:
        try:
            value, where = self.frame.locate(name)
        except KeyError:
            raise YotaError(f"name {name!r} is not defined", self.loc(node)) from None
        if where is not None:
            value = self.outside.wrap(value, where, node, name)
            if isinstance(value, Var) and where[1][:1] == (("attr", name),):
                self.depends.forget(self.frame.globals, name)   # read when the code runs
        return self.current(value)

    def is_input(self, var: Var) -> bool:
        return var in self.input_vars

    # -- fields assigned on arguments ----------------------------------------------------

    def store_field(self, sv: Any, name: str, value: Any, node: gast.AST) -> None:
        """``layer.layer_input = X``, ``layer`` an argument (or reached from one): read back as
        ``value`` from here on, and stored into the caller's object by the generated code
        (``emit_stores``). A loop that assigns one is unrolled (a store per step)."""
        if self.trial_depth:
            raise TrialAbort(f"the body assigns {sv.access}.{name}, a field of an argument",
                             self.loc(node))
        sv.fields[name] = value
        key = (sv.access, name)
        self.stores.pop(key, None)          # (the last assignment is stored, last)
        self.stores[key] = (sv, name, value, self.loc(node))

    def emit_stores(self) -> None:
        """What the function did to its arguments' objects, lists and dicts, done by the
        generated code at the end of its forward, each value in its last version (an array
        written in place after the assignment is stored as it ends), as calling the function
        leaves them: the fields assigned (``store_field``), the items appended to a list,
        the keys assigned in a dict. A list changed otherwise (an item replaced, removed,
        inserted) or a key deleted is refused: the code does not undo it."""
        for sv, name, value, loc in self.stores.values():
            self._store(value, sv.access, name, "attr", loc, f"{sv.access}.{name}")
        loc = self.flattener.loc
        for now, access, then in self.flattener.containers:
            if isinstance(now, list):
                if len(now) < len(then) or any(a is not b for a, b in zip(now, then)):
                    raise UnsupportedSyntax(
                        f"the function changes the argument list {access} other than by "
                        "appending to it (an item replaced, removed or inserted)", loc,
                        f"Append to {access} (the generated code appends too), or make a new "
                        f"list (`{access.split('.')[-1]} = list(...)`) and return it.")
                added = now[len(then):]
                stack = self._whole_stack(added)
                if stack is not None:       # the rows a loop region appended: its stack
                    self._store(stack, access, "", "extend", loc, f"{access}.extend(...)")
                    continue
                for item in added:
                    self._store(item, access, "", "append", loc, f"{access}.append(...)")
                continue
            if any(key not in now for key in then):
                raise UnsupportedSyntax(f"the function deletes a key of the argument dict "
                                        f"{access}", loc, "Make a new dict and return it.")
            for key, value in now.items():
                if key not in then or value is not then[key]:
                    self._store(value, access, key, "item", loc, f"{access}[{key!r}]")

    def _whole_stack(self, rows: list) -> Var | None:
        """The stack of a loop region whose rows ``rows`` are, all of them in order and none
        written since (region_lists.py ``stack_rows``); None otherwise."""
        found = [self.stack_rows.get(r) if isinstance(r, Var) else None for r in rows]
        if not found or found[0] is None:
            return None
        stack = found[0][0]
        if len(rows) != stack.aval.shape[0] or self.latest.get(stack) is not None or \
                any(f is None or f[0] is not stack or f[1] != i or self.latest.get(r) is not None
                    for i, (f, r) in enumerate(zip(found, rows))):
            return None
        return stack

    def _store(self, value: Any, target: str, name: Any, kind: str, loc: Any,
               shown: str) -> None:
        from ..rules.control import store
        value = self.current_tree(value)
        if not isinstance(value, Var) and not _storable(value):
            raise UnsupportedSyntax(
                f"{shown} is given a {type(value).__name__}; the generated code stores arrays, "
                "numbers, strings and None into an argument's fields, lists and dicts", loc,
                "Give it the arrays one by one, or return the value.")
        with self.at(loc):
            self.emit(self.rules.lookup(store), [value if isinstance(value, Var) else Lit(value)],
                      {"target": target, "name": name, "kind": kind}, None)

    # -- truth and iteration -------------------------------------------------------------

    def truth(self, value: Any, node: gast.AST) -> bool:
        """Python truthiness; a traced condition follows the example and records a guard."""
        if not isinstance(value, Var):
            return bool(value)
        value = self.current(value)
        if self.trial_depth:
            raise TrialAbort("the body branches on a traced value", self.loc(node))
        try:
            taken = bool(self.values[value])
        except ValueError:
            raise YotaError(f"the truth value of a traced {value.aval} is ambiguous", self.loc(node),
                            "Use np.any(...) or np.all(...) to get a single bool.") from None
        loc = self.loc(node)
        where = f"{loc.short} `{loc.text}`" if loc else "a condition"
        self.emit(self.rules.lookup(_guard_fn()), (value,),
                  {"expected": taken, "where": where}, node)
        return taken

    def iterate(self, value: Any, node: gast.AST, lazy: bool = False) -> Any:
        """The items of ``value``; an array gives its rows (``lazy``: each read when needed)."""
        if isinstance(value, Var):
            if value.aval.ndim == 0:
                raise YotaError(f"cannot iterate over a traced scalar {value.aval}", self.loc(node))
            self.static_reads.add(value)        # (as many steps as it has rows)
            rows = (self.getitem(value, i, node) for i in range(value.aval.shape[0]))
            return rows if lazy else list(rows)
        if isinstance(value, dict):
            return list(value)
        try:
            return list(value)
        except TypeError:
            raise YotaError(f"cannot iterate over {type(value).__name__}", self.loc(node)) from None

    def make_local_function(self, node: gast.FunctionDef | gast.Lambda, name: str) -> LocalFunction:
        args = node.args
        defaults = tuple(self.expr(d) for d in args.defaults)
        kw_defaults = {a.id: self.expr(d) for a, d in zip(args.kwonlyargs, args.kw_defaults)
                       if d is not None}
        return LocalFunction(node, self.frame, defaults, kw_defaults, name)


def _guard_fn():
    from ..rules.control import guard
    return guard


def _shown(node: gast.expr) -> str:
    """What an update writes into, as the user wrote it (``x``, ``self.W`` in ``x[i] = v``)."""
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return f"{_shown(node.value)}.{node.attr}"
    return f"{_shown(node.value)}[...]" if isinstance(node, gast.Subscript) else "the array"


_UNSUPPORTED_HINTS = {
    "Try": "Exceptions are not traced; check the condition with an if instead.",
    "With": "Context managers are not traced; move the with-block out of the compiled function.",
    "ClassDef": "Define classes at module level.",
    "AsyncFor": "Async code is not supported.",
    "AsyncWith": "Async code is not supported.",
    "Match": "Use if/elif instead of match.",
}
