"""Updates written back in place, as the user wrote them.

The frontend records ``x[key] = v`` as a pure ``x_1 = setitem(x, key, v)`` (rules use the same
form). This pass, run last, turns each one into the in-place ``x[key] = v`` (``setitem_``, which
codegen writes as that assignment, under ``x``'s name) when nothing needs the old ``x`` any
more: no later statement reads ``x`` or an array that may share its memory (through view
statements: ``x[:2]``, ``x.T``, a reshape, earlier in-place updates), none of them is an
argument or a result, and the memory is writable (not made by ``broadcast_to``, not 0-d, which
may be a numpy scalar when the code runs). Otherwise the update goes to a copy:
``x_1 = x.copy(); x_1[key] = v``.

Before deciding, reads that come later in the same block (source line and section) and could
run before the update are moved up: a rule reads ``dy[key]`` after zeroing it in ``dy``, and
the order of two pure statements is free; one reader less saves a copy.

One forward scan; memory is tracked per alias class (a union-find over view statements) with a
count of the uses not yet passed, and reads find the updates they skip through an index of
each chain of updates, so a loop of ``out[i] = ...`` costs time linear in its length.
"""
from __future__ import annotations

import bisect
import operator
from collections import Counter, deque

import numpy as np

from ..ir.analysis import Analysis, MemoryClasses, basic_parts, index_copies, read_only
from ..ir.rewrite import substitute_stmt
from ..ir.tape import Stmt, Tape, Var
from ..rules.indexing import setitem, setitem_
from ..rules.registry import RuleSet
from .dce import dce


def write_in_place(tape: Tape, rules: RuleSet) -> Tape:
    if not any(s.prim.fn is setitem for s in tape.stmts):
        return tape
    tape, _ = dce(_read_around(tape), rules)
    memory = _Memory(Analysis(tape))
    pending, out = deque(tape.stmts), []
    while pending:
        stmt = pending.popleft()
        out += _lower(stmt, pending, memory, rules, tape) if stmt.prim.fn is setitem else [stmt]
        memory.passed(stmt)
    return tape.copy(stmts=out)


# -- reads that skip updates ------------------------------------------------------------------

def _read_around(tape: Tape) -> Tape:
    """``setitem(a, k1, v)[k2]`` reads ``a[k2]`` when ``k1`` and ``k2`` name different
    elements, so reads skip the updates that do not concern them (and updates that nobody
    reads any more go: the zeroing in the gradient of ``out[i] = ...`` in a loop)."""
    stmts, chains = list(tape.stmts), _Chains()
    for i, s in enumerate(stmts):
        if s.prim.fn is operator.getitem and isinstance(s.args[0], Var):
            stmts[i] = s.replace(args=(chains.source(s.args[0], s.args[1]), s.args[1]))
        elif s.prim.fn is setitem and isinstance(s.args[0], Var):
            chains.add(s)
    return tape.copy(stmts=stmts)


class _Chains:
    """Chains of updates of one array (``a_1 = setitem(a, ...)``, ``a_2 = setitem(a_1, ...)``),
    indexed so that a read finds the last update that may touch it without walking the chain:
    updates by ints (``a[i] = ...``, ``a[i, j] = ...``) by those ints, the others in a list."""

    def __init__(self):
        self.link: dict[Var, tuple[Var, Stmt]] = {}          # version -> (previous, update)
        self.root: dict[Var, Var] = {}
        self.position: dict[Var, int] = {}
        self.versions: dict[Var, list[Var]] = {}             # root -> version after each update
        self.by_ints: dict[Var, dict[int, dict[tuple, list[int]]]] = {}  # root -> len -> ints
        self.others: dict[Var, list[int]] = {}

    def add(self, s: Stmt) -> None:
        before = s.args[0]
        root = self.root.get(before, before)
        versions = self.versions.setdefault(root, [])
        if before is not (versions[-1] if versions else root):
            return                          # a branch off the chain: not indexed
        self.position[s.out] = len(versions)
        versions.append(s.out)
        self.link[s.out], self.root[s.out] = (before, s), root
        ints = _ints(s.args[1], s.out.aval.shape)
        if ints is None:
            self.others.setdefault(root, []).append(self.position[s.out])
        else:
            by_len = self.by_ints.setdefault(root, {}).setdefault(len(ints), {})
            by_len.setdefault(ints, []).append(self.position[s.out])

    def source(self, src: Var, key) -> Var:
        """The oldest version of ``src`` that still holds what ``src[key]`` reads."""
        while src in self.link:
            root, position = self.root[src], self.position[src]
            last = self.last_touching(root, position, _ints(key, src.aval.shape))
            if last < 0:
                return root
            version = self.versions[root][last]
            before, update = self.link[version]
            if not _disjoint(update.args[1], key, src.aval.shape):
                return version
            src = before
        return src

    def last_touching(self, root: Var, position: int, ints: tuple | None) -> int:
        """The position of the last update, up to ``position``, that may touch the elements
        under the int key ``ints`` (each update when the read is not by ints)."""
        by_ints = self.by_ints.get(root, {})
        if ints is None or any(n > len(ints) for n in by_ints):
            return position if by_ints else _at_most(self.others.get(root, []), position)
        last = _at_most(self.others.get(root, []), position)
        for n, writes in by_ints.items():           # an update of a[i] touches a[i, j]
            last = max(last, _at_most(writes.get(ints[:n], []), position))
        return last


def _at_most(positions: list[int], position: int) -> int:
    """The largest of the sorted ``positions`` that is at most ``position``; -1 if none."""
    k = bisect.bisect_right(positions, position)
    return positions[k - 1] if k else -1


def _ints(key, shape: tuple) -> tuple | None:
    """A key of ints only (``a[i]``, ``a[i, j]``) as non-negative ints; None for any other."""
    parts = basic_parts(key)
    if parts is None or len(parts) > len(shape) or not all(isinstance(p, int) for p in parts):
        return None
    return tuple(p % n for p, n in zip(parts, shape))


def _disjoint(k1, k2, shape: tuple) -> bool:
    a, b = _positions(k1, shape), _positions(k2, shape)
    if a is None or b is None:
        return False
    return any(not set(x) & set(y) for x, y in zip(a, b))


def _positions(key, shape: tuple) -> list | None:
    """Per axis, the indices a basic key selects; None where it cannot say."""
    parts = basic_parts(key)
    if parts is None or None in parts:
        return None
    if Ellipsis in parts:
        i = parts.index(Ellipsis)
        parts = parts[:i] + (slice(None),) * (len(shape) - len(parts) + 1) + parts[i + 1:]
    parts += (slice(None),) * (len(shape) - len(parts))
    if len(parts) != len(shape):
        return None
    return [range(n)[p] if isinstance(p, slice) else [p % n] for p, n in zip(parts, shape)]


# -- lowering -----------------------------------------------------------------------------------

class _Memory:
    """The memory classes of the analysis (same memory, through view and in-place statements),
    joined further as updates are lowered, with the number of uses each class still has ahead,
    and whether it may not be written (an argument's, a result's, a read-only view's)."""

    def __init__(self, facts: Analysis):
        self.facts = facts
        self.left: Counter = Counter(facts.uses)     # per value: its uses not yet passed
        self.rows: dict[Var, None] = {}              # row views passed, with uses ahead
        self.classes = MemoryClasses()
        self.classes.parent = {v: facts.root(v) for v in facts.defined if facts.root(v) is not v}
        self.ahead: Counter = Counter()
        for v, n in facts.uses.items():
            self.ahead[facts.root(v)] += n
        self.frozen: set[Var] = {facts.root(v) for v in facts.arguments | facts.returned}
        self.frozen |= {facts.root(s.out) for s in facts.tape.stmts if s.outs and read_only(s)}

    def root(self, v: Var) -> Var:
        return self.classes.root(v)

    def join(self, v: Var, base: Var) -> None:
        rv, rb = self.root(v), self.root(base)
        if rv is rb:
            return
        self.classes.join(v, base)
        self.ahead[rb] += self.ahead.pop(rv, 0)
        if rv in self.frozen or rb in self.frozen:
            self.frozen.add(rb)

    def passed(self, s: Stmt) -> None:
        for v in s.uses():
            self.ahead[self.root(v)] -= 1
            self.left[v] -= 1
            if v in self.rows and self.left[v] <= 0:
                del self.rows[v]
        if _row_view(s) and self.left[s.out] > 0 and s.out not in self.facts.returned:
            self.rows[s.out] = None

    def uses_ahead(self, v: Var, stmt: Stmt) -> int:
        """Uses of ``v``'s class after ``stmt`` (``stmt`` itself not counted)."""
        r = self.root(v)
        return self.ahead[r] - sum(1 for u in stmt.uses() if self.root(u) is r)

    def writable(self, v: Var) -> bool:
        return v.aval.ndim > 0 and self.root(v) not in self.frozen


def _lower(stmt: Stmt, pending: deque[Stmt], memory: _Memory, rules: RuleSet,
           tape: Tape) -> list[Stmt]:
    target, key, value = stmt.args
    inplace = rules.lookup(setitem_)
    if isinstance(target, Var) and memory.writable(target):
        moved = _hoist_readers(stmt, pending, memory) if memory.uses_ahead(target, stmt) else []
        if memory.uses_ahead(target, stmt):
            moved += _copy_rows(stmt, pending, memory, rules, tape)
        if memory.uses_ahead(target, stmt) == 0:
            memory.join(stmt.out, target)
            return moved + [Stmt(stmt.outs, inplace, stmt.args, (), stmt.loc, stmt.rule)]
    else:
        moved = []
    fresh = Var(stmt.out.aval, hint=tape.hint_of(stmt.out), grad_of=tape.primal_of(stmt.out))
    memory.join(stmt.out, fresh)
    return moved + [Stmt((fresh,), rules.lookup(np.copy), (target,), (), stmt.loc, stmt.rule),
                    Stmt(stmt.outs, inplace, (fresh, key, value), (), stmt.loc, stmt.rule)]


def _row_view(s: Stmt) -> bool:
    """A view of part of an array by a basic index (``a[t]``, ``a[1:]``), an array itself."""
    return s.prim.fn is operator.getitem and len(s.outs) == 1 and isinstance(s.args[0], Var) \
        and s.out.aval.ndim >= 1 and not index_copies(s) \
        and s.out.aval.size < s.args[0].aval.size


def _copy_rows(stmt: Stmt, pending: deque[Stmt], memory: _Memory, rules: RuleSet,
               tape: Tape) -> list[Stmt]:
    """When the only later readers of the target's memory are views of parts of it
    (``dt = dO[t]`` read after ``dO[t] = 0.0``), a copy of those parts, made now, rather than
    a copy of the whole array: ``dt = dO[t].copy()``. In a loop over the rows of an array this
    keeps each step's cost that of a row (a copy of the array per step is quadratic)."""
    mine = memory.root(stmt.args[0])
    rows = [v for v in memory.rows if memory.root(v) is mine]
    ahead = {v: memory.left[v] - sum(1 for u in stmt.uses() if u is v) for v in rows}
    if not rows or sum(ahead.values()) != memory.uses_ahead(stmt.args[0], stmt) \
            or sum(v.aval.size for v in rows) * 2 > stmt.args[0].aval.size:
        return []
    wanted = [v for v in rows if ahead[v] > 0]
    readers = [j for j, s in enumerate(pending) if any(u in wanted for u in s.uses())]
    if any(pending[j].prim.inplace and pending[j].first_var in wanted for j in readers):
        return []           # (an update through the view writes the array itself)
    copies, made = {}, []
    for v in wanted:
        copies[v] = Var(v.aval, hint=tape.hint_of(v), grad_of=tape.primal_of(v))
        made.append(Stmt((copies[v],), rules.lookup(np.copy), (v,), (), stmt.loc, stmt.rule))
    for j in readers:
        pending[j] = substitute_stmt(pending[j], lambda a: copies.get(a, a))
    for v, c in copies.items():
        n = ahead[v]
        memory.ahead[mine] -= n
        memory.left[v] -= n
        memory.left[c] += n
        memory.ahead[memory.root(c)] += n
        memory.rows.pop(v, None)
    return made


def _hoist_readers(stmt: Stmt, pending: deque[Stmt], memory: _Memory) -> list[Stmt]:
    """Take out of ``pending`` the statements of ``stmt``'s block that read the target's
    memory and may run before ``stmt`` (they are emitted first, and count as passed)."""
    mine = memory.root(stmt.args[0])
    between: set[Var] = set(stmt.outs)          # defined after the update, so not movable
    moved, j = [], 0
    while j < len(pending) and _same_block(pending[j], stmt):
        s = pending[j]
        pure = not (s.prim.effect or s.prim.inplace or s.prim.fn is setitem)
        reads = any(memory.root(u) is mine for u in s.uses())
        if pure and reads and not any(u in between for u in s.uses()):
            moved.append(pending[j])
            del pending[j]
            memory.passed(s)
            continue
        between.update(s.outs)
        j += 1
    return moved


def _same_block(a: Stmt, b: Stmt) -> bool:
    return a.loc == b.loc and (a.rule is None) == (b.rule is None)
