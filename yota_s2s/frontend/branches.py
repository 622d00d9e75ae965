"""``if`` on a traced number that stays an ``if``: the branch trial (ir/branch.py for the
statement).

Where the condition of an ``if`` is a traced boolean number (``np.sum(x) > 0``), both arms are
traced, each into a list of its own, from the same state (what the first did is undone before
the second runs): the arms are run on the example values, but only their shapes and dtypes
matter. The ``if`` becomes a branch statement when

- neither arm leaves the block (``return``, ``break``, ``continue``, ``yield``) nor writes an
  attribute, updates an array, list or dict from before the ``if`` in place, holds a loop or
  a statement with an effect (a guard: a decision on a traced value the arm cannot make);
- each name either arm binds, read after the ``if``, is bound by both (or before it), to
  values of one shape and dtype (a traced value or a float), or to one static value.

Otherwise everything is undone and the ``if`` is decided on the example, as before: a guard.
The names the arms bind are then the branch's results. A loop region's trial step may hold a
branch (the backward loop reads the condition of each step from a stack, or makes it again).
Forward mode goes through a branch (ad/branch_tangents.py: its JVP is a branch on the same
condition), and so does a module yota-s2s wrote, traced again for a higher order (a gradient
of a gradient, ``ys.hvp``): its ``if``s are branches again; and ``ys.vmap``
(ad/batch_branches.py: a branch, or both arms and a select where the condition differs per
example).
"""
from __future__ import annotations

import ast
from typing import Any

import gast
import numpy as np

from ..ir.analysis import memory_bases
from ..ir.branch import Branch, arm_tape, branch_primitive
from ..ir.region import loop_of
from ..ir.rewrite import live, substitute_stmt
from ..ir.tape import Aval, Lit, Var
from .region_check import traceable
from .region_lists import Watch, items_of
from .region_syntax import assigned_names, read_after

_MISSING = object()
NO_BRANCH = object()       # branch_expr: the conditional expression is no branch statement
_VALUE = "(the value)"      # the name a conditional expression's arms bind (no identifier)


class _NoBranch(Exception):
    """The ``if`` cannot be a branch statement: keep the guard."""


class SharedOnOnePath(BaseException):
    """An array updated in place after a branch statement is, on one of its paths, the same
    array as one of its results (``z = y`` in one arm, then ``y += 1``): numpy's update changes
    both there and one only on the other path, which the branch statement cannot say. The
    trace starts again with that ``if`` (``key``) a guard (trace_function). A BaseException:
    no trial (an arm's, a loop's) takes it for a failure of its own."""

    def __init__(self, key: tuple):
        super().__init__(key)
        self.key = key


class BranchesMixin:
    """The branch trial (mixed into ``Evaluator``)."""

    branches: bool = True   # False: every if on a traced value is a guard
    guarded: frozenset = frozenset()    # ifs (branch_key) decided by a guard: SharedOnOnePath
    exit_flags: frozenset = frozenset()    # a lowered break's flags (exits.py): bool results

    def branching(self) -> bool:
        """May an ``if`` on data be a branch statement here (not while collecting errors, nor
        in a backward written by hand, nor where branches are off)?"""
        return self.collector is None and not self.backward_mode and self.branches

    def branch_if(self, node: gast.If, cond: Any) -> bool:
        """Run ``node`` as a branch statement on the traced condition ``cond``; False (nothing
        done) to decide it on the example with a guard."""
        if not self.branching() or self.branch_key(node) in self.guarded:
            return False
        cond = self.current(cond)
        if cond.aval.shape != () or cond.aval.dtype != np.bool_ or _leaves(node):
            return False
        saved, containers = self._trial_state()
        try:
            arms = [self._arm(block, saved, containers) for block in (node.body, node.orelse)]
            return self._branch(node, cond, saved, arms)
        except _NoBranch:
            self._restore(saved)
            return False

    def branch_expr(self, node: gast.IfExp, cond: Any) -> Any:
        """``a if cond else b`` on the traced ``cond`` as a branch statement of one result: the
        ``if`` whose arms bind it, to the name the statement assigns it to (``y = a if c else
        b``), or to none; ``NO_BRANCH`` (nothing done) to decide it on the example."""
        stmt = self.frame.stmt
        name = stmt.targets[0].id if isinstance(stmt, gast.Assign) and stmt.value is node \
            and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) else None
        target = name or _VALUE

        def bind(value: gast.expr) -> gast.Assign:
            store = gast.copy_location(gast.Name(target, gast.Store(), None, None), node)
            return gast.copy_location(gast.Assign(targets=[store], value=value,
                                                  type_comment=None), node)
        as_if = gast.copy_location(gast.If(test=node.test, body=[bind(node.body)],
                                           orelse=[bind(node.orelse)]), node)
        if not self.branch_if(as_if, cond):
            return NO_BRANCH
        if name is not None:
            return self.frame.locals[name]
        value = self.frame.locals.pop(_VALUE)
        if isinstance(value, Var) and value.hint == _VALUE:
            value.hint = None
        return value

    def _arm(self, block: list, saved: tuple, containers: dict) -> tuple[list, dict]:
        """One arm traced from the state before the ``if``: its statements and the names it
        leaves bound (as a read sees them); the state is put back after, and the lists and
        dicts it reached (a ``Watch``, as a loop's trial keeps) are checked unchanged."""
        frame = self.frame
        self._restore(saved)
        watch = Watch(dict(containers))
        outer, self.trial_records = self.trial_records, (*self.trial_records, watch)
        try:
            with self.collect() as stmts:
                self.exec_block(block)
        except Exception:
            raise _NoBranch() from None
        finally:
            self.trial_records = outer
            changed = put_back(watch)
        env = {n: self.current(v) for n, v in frame.locals.items()}
        if changed or self._trial_changed(saved, stmts) \
                or any(s.prim.effect or loop_of(s) is not None for s in stmts):
            raise _NoBranch()       # an array, list or dict from before changed; a guard
        return stmts, env

    def _trial_state(self) -> tuple[tuple, dict]:
        """What a trial (an arm, a while's body) puts back after it (``_restore``), and the
        lists and dicts it reaches, which it must leave as they were (a ``Watch``)."""
        frame = self.frame
        saved = (dict(frame.locals), dict(self.latest), dict(self.views), len(self.loop_notes),
                 set(self.pending_rows))
        containers = {id(v): (v, items_of(v))
                      for v in frame.locals.values() if type(v) in (list, dict)}
        return saved, containers

    def _trial_changed(self, saved: tuple, stmts: list) -> bool:
        """A trial's ``stmts`` left a row pending, or changed what a name from before it
        holds last (an array updated in place), or made a value that is not theirs."""
        made = {o for s in stmts for o in s.outs}
        return set(self.pending_rows) != saved[4] \
            or any(self.latest.get(k) is not v for k, v in saved[1].items()) \
            or any(k not in made for k in self.latest if k not in saved[1])

    def _restore(self, saved: tuple) -> None:
        names, latest, views, notes, _ = saved
        frame = self.frame
        frame.locals.clear()
        frame.locals.update(names)
        self.latest.clear()
        self.latest.update(latest)
        self.views.clear()
        self.views.update(views)
        del self.loop_notes[notes:]

    def _branch(self, node: gast.If, cond: Var, saved: tuple, arms: list) -> bool:
        """The branch statement of two arms that were traced, emitted, and its results bound."""
        (then_stmts, then_env), (else_stmts, else_env) = arms
        before = {n: self.current(v) for n, v in saved[0].items()}
        names = list(dict.fromkeys(assigned_names(node.body) + assigned_names(node.orelse)))
        after = read_after(self.frame, node)
        statics: dict[str, Any] = {}
        outs: list[tuple[str, Any, Any]] = []
        for name in names:
            a, b = then_env.get(name, _MISSING), else_env.get(name, _MISSING)
            if a is _MISSING or b is _MISSING:
                if name in after:
                    raise _NoBranch()
                continue
            if name in self.exit_flags and a is not b:
                a, b = _flag(a), _flag(b)                   # ``done = True`` in one arm
                if a is True and b is False:
                    statics[name] = cond                    # ``done = x_cond``
                else:
                    outs.append((name, a, b))
                continue
            if a is b:
                if before.get(name, _MISSING) is not a:
                    statics[name] = a
                continue
            if not (traceable(a) and traceable(b)):
                if isinstance(a, Var) or isinstance(b, Var) or type(a) is not type(b) \
                        or not _same_static(a, b):
                    raise _NoBranch()
                statics[name] = a
                continue
            if _aval(a) != _aval(b):
                raise _NoBranch()
            outs.append((name, a, b))
        branch, invariants = self._arms(node, then_stmts, else_stmts, outs) if outs \
            else (None, [])
        self._restore(saved)
        for name, value in statics.items():
            self.frame.locals[name] = value
        if branch is None:
            return True         # the arms bind the same values: nothing to decide
        if cond.hint is None and cond not in self.input_vars:
            cond.hint = _cond_hint(node.test)
        params = tuple(k.hint or f"k{i}" for i, k in enumerate(invariants))
        results = self.emit(branch_primitive(branch, params), [cond, *invariants],
                            {"branch": branch}, node)
        results = results if isinstance(results, tuple) else (results,)
        for (name, _, _), value in zip(outs, results):
            self.bind_name(name, value)
        self._note_shared(node, arms, outs, results)
        return True

    def branch_key(self, node: gast.If) -> tuple:
        """The ``if`` as SharedOnOnePath names it: its file, line and column."""
        loc = self.frame.fn.loc(node)
        return (loc.file, loc.line, loc.col) if loc else (node.lineno, node.col_offset)

    def _note_shared(self, node: gast.If, arms: list, outs: list, results: tuple) -> None:
        """Each result that is, on one path, an array from before the ``if`` (``z = y``, ``z =
        y[1:]``), and that array and the arrays it is a view of: an update in place of any of
        them later (``check_shared``, from updates.py) starts the trace again with this ``if``
        a guard."""
        key = self.branch_key(node)
        for k, (stmts, _) in enumerate(arms, start=1):
            producer = {o: s for s in stmts for o in s.outs}
            for out, result in zip(outs, results):
                todo = [out[k]] if isinstance(out[k], Var) and out[k].aval.ndim else []
                while todo:                     # the arm's value back to what it may share
                    v = todo.pop()
                    if v in producer:           # (ir/analysis: none for an array of its own)
                        todo += memory_bases(producer[v])
                        continue
                    self.shared[result] = key
                    v = self.current(v)
                    while v is not None:        # the array, and what it is a view of
                        self.shared[v] = key
                        v = self.views[v][0] if v in self.views else None

    def check_shared(self, old: Var) -> None:
        """``old`` is about to be updated in place: SharedOnOnePath where a branch noted it."""
        key = self.shared.get(old)
        if key is not None:
            raise SharedOnOnePath(key)

    def _arms(self, node: gast.If, then_stmts: list, else_stmts: list, outs: list
              ) -> tuple[Branch, list[Var]]:
        """The two arm tapes over one list of values read from before the ``if``."""
        sides, reads = live_sides([(then_stmts, [o[1] for o in outs]),
                                   (else_stmts, [o[2] for o in outs])])
        invariants = list(reads)
        loc = self.loc(node)
        tapes = []
        for label, (kept, result) in zip(("then", "orelse"), sides):
            mapping = {}
            for v in invariants:
                mapping[v] = k = Var(v.aval, hint=v.hint)
                self.values.derive(k, v)
            stmts = [substitute_stmt(s, lambda a: mapping.get(a, a)) for s in kept]
            result = tuple(mapping.get(r, r) if isinstance(r, Var) else Lit(r) for r in result)
            params = tuple(v.hint or f"k{i}" for i, v in enumerate(invariants))
            tapes.append(arm_tape(label, params, [mapping[v] for v in invariants], stmts,
                                  result, loc))
        return Branch(*tapes, source=_source(node.test)), invariants


def _aval(value: Any) -> tuple:
    aval = value.aval if isinstance(value, Var) else Aval.of(value)
    return aval.shape, aval.dtype, aval.weak


def _flag(value: Any) -> Any:
    """A lowered ``break``'s flag as a branch's result: a traced bool, or numpy's bool."""
    if isinstance(value, Var):
        if value.aval.shape != () or value.aval.dtype != np.bool_:
            raise _NoBranch()
        return value
    if type(value) not in (bool, np.bool_):
        raise _NoBranch()
    return bool(value)


def _same_static(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _leaves(node: gast.If) -> bool:
    """Does an arm leave the block, or write an attribute or a global?"""
    for n in _own_nodes(node.body + node.orelse):
        if isinstance(n, (gast.Return, gast.Yield, gast.YieldFrom, gast.Global,
                          gast.Nonlocal)):
            return True
        if isinstance(n, (gast.Break, gast.Continue)):
            return True
        if isinstance(n, gast.Attribute) and isinstance(n.ctx, (gast.Store, gast.Del)):
            return True
    return False


def _own_nodes(nodes: list):
    """The nodes of a block, not entering function definitions; a ``break`` or ``continue``
    inside a loop of the block (that loop's) is left out."""
    stack = [(n, False) for n in nodes]
    while stack:
        n, in_loop = stack.pop()
        if in_loop and isinstance(n, (gast.Break, gast.Continue)):
            continue
        yield n
        for child in gast.iter_child_nodes(n):
            if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.AsyncFunctionDef)):
                continue
            stack.append((child, in_loop or isinstance(n, (gast.For, gast.While))))


def _source(test: gast.expr) -> str:
    """The condition as written, for the tape's printout."""
    try:
        return ast.unparse(gast.gast_to_ast(test))
    except Exception:
        return "the condition"


def _cond_hint(test: gast.expr) -> str:
    """A name for the condition, after the source: ``if big:`` -> ``big``; else the first
    name the test reads and ``_cond`` (``loss > 1.0`` -> ``loss_cond``, ``np.sum(h * w) > 0``
    -> ``h_cond``; a stack of them in a loop, ``H_COND``)."""
    if isinstance(test, gast.Name):
        return test.id
    for n in gast.walk(test):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id not in ("np", "xp"):
            return f"{n.id}_cond"
    return "cond"


def live_sides(sides: list) -> tuple[list, dict]:
    """Each (statements, results) pair with only the statements its results need, and the
    values they read from before them, in order of first read (an arm's, a while's tapes)."""
    kept_sides = []
    reads: dict[Var, None] = {}
    for stmts, result in sides:
        kept = live(stmts, [r for r in result if isinstance(r, Var)])
        made = {v for s in kept for v in s.outs}
        for s in kept:
            reads.update((v, None) for v in s.uses() if v not in made)
        reads.update((r, None) for r in result if isinstance(r, Var) and r not in made)
        kept_sides.append((kept, result))
    return kept_sides, reads


def put_back(watch: Watch) -> list:
    """The lists and dicts a trial (an arm, a while's body) reached and changed, each put back
    as it was before the trial (a trial that is not kept must leave no row behind)."""
    changed = [(obj, items) for obj, items in watch.containers.values() if items_of(obj) != items]
    for obj, items in changed:
        obj.clear()
        obj.update(items) if isinstance(obj, dict) else obj.extend(items)
    return changed
