"""What a tape's statements say about its values, computed once: the one place passes and
codegen ask who makes a value, who reads it, when it is last read and which values may share
memory.

Contract: ``Analysis(tape)`` is a read-only snapshot of ``tape``; a pass that changes the tape
builds a new one. Positions are statement indices; the function's outputs (result and
gradients) are read at ``len(tape.stmts)``; inputs are defined at -1.

- def-use: ``producer[v]`` (the statement that makes ``v``), ``defined[v]`` (its position),
  ``readers[v]`` (positions of the statements reading it, once per statement), ``uses[v]``
  (how many operands it is, over all statements), ``last[v]`` (the last position reading it).
- memory: a statement's result may share memory with the operands ``memory_bases(stmt)``
  gives (a view, unless it is an index that copies; an in-place update's first operand). Values
  joined that way form a *memory class* (``root``, ``members``); ``last_memory[v]`` is the last
  position that reads any value of ``v``'s class, which is how long ``v``'s memory must keep
  its contents. ``updates[root]`` are the positions of in-place statements writing the class.
- ``returned``: the outputs and every value sharing memory with one; ``arguments``: the inputs
  and every value sharing memory with one (neither may be written or reused as work memory).

``inlined`` values are written inside the expression of their one reader (codegen), so what
they read is read where that reader is: pass them to get read positions of the written code.

Per statement: ``memory_bases(stmt)``, ``index_copies(stmt)`` (an index that makes a copy),
``read_only(stmt)`` (a broadcast, a view of a constant: never written). ``MemoryClasses`` is
the union-find, for a pass that joins classes as it rewrites (passes/inplace.py). The frontend
copies a result whose memory sharing its primitive does not declare (frontend/updates.py), so
these classes are what the code does; ``ir.verify.check_written`` checks codegen's plan
against them.

Primitive properties come from the primitive object (``prim.view``, ``prim.inplace``, the
function itself), never from its name, which a user can set.
"""
from __future__ import annotations

import bisect
import copy
import itertools
import operator
from collections import Counter

import numpy as np

from .tape import Lit, Stmt, Tape, Var, tree_vars

# functions that return their operand itself when it already is such an array
_PASS_THROUGH = (np.asarray, np.asanyarray, np.ascontiguousarray)


def memory_bases(stmt: Stmt) -> tuple[Var, ...]:
    """The operands whose memory ``stmt``'s result may share (empty: a new array)."""
    if not stmt.outs or not stmt.args:
        return ()
    prim = stmt.prim
    if prim.inplace:
        first = stmt.first_var
        return (first,) if first is not None else ()
    if prim.fn in _PASS_THROUGH:
        return tuple(tree_vars(stmt.args[0]))
    if not prim.view or index_copies(stmt):
        return ()
    first = tuple(tree_vars(stmt.args[0]))
    if first or prim.fn is operator.getitem:
        return first
    operands = tuple(v for a in stmt.args for v in tree_vars(a))
    return operands if len(operands) == 1 else ()     # np.einsum("ii->i", a); numpy's views
                                                      # are of one array


def index_copies(stmt: Stmt) -> bool:
    """``a[key]`` with a key that makes a copy: an index array or a mask (a traced 0-d integer
    is an int to numpy: basic indexing, a view). One element read (``x[3]``) is a view: numpy
    gives an immutable scalar, but cupy gives a 0-d array that sees later writes to ``x``, and
    the generated code must be right on both."""
    if stmt.prim.fn is not operator.getitem:
        return False
    key = stmt.args[1]
    parts = key if isinstance(key, tuple) else (key,)
    for p in parts:
        value = p.aval if isinstance(p, Var) else p.value if isinstance(p, Lit) else p
        if isinstance(value, (np.ndarray, np.generic)) or isinstance(p, Var):
            if np.ndim(value) if not isinstance(p, Var) else value.ndim:
                return True
            if np.dtype(value.dtype).kind not in "iu":
                return True
        elif not (value is None or value is Ellipsis or isinstance(value, slice)
                  or isinstance(value, int) and not isinstance(value, bool)):
            return True
    return False


def basic_parts(key) -> tuple | None:
    """A key of ints, slices, None and ``...`` as a tuple of values; None for any other."""
    parts = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(p, Lit) for p in parts):
        return None
    values = tuple(p.value for p in parts)
    if all(v is None or v is Ellipsis or isinstance(v, (int, slice)) and not isinstance(v, bool)
           for v in values):
        return values
    return None


def read_only(stmt: Stmt) -> bool:
    """The result may not be written: a broadcast (numpy makes it read-only) or a view of
    something that is not a value of the tape (a constant)."""
    return stmt.prim.fn is np.broadcast_to or (stmt.prim.view and not memory_bases(stmt)
                                               and not index_copies(stmt))


class MemoryClasses:
    """Union-find over Vars that may share memory."""

    def __init__(self):
        self.parent: dict[Var, Var] = {}

    def root(self, v: Var) -> Var:
        path = []
        while v in self.parent:
            path.append(v)
            v = self.parent[v]
        for p in path:
            self.parent[p] = v
        return v

    def join(self, v: Var, base: Var) -> Var:
        """Put ``v`` in ``base``'s class; returns the class's root (``base``'s)."""
        rv, rb = self.root(v), self.root(base)
        if rv is not rb:
            self.parent[rv] = rb
        return rb


class Analysis:
    def __init__(self, tape: Tape, inlined: frozenset[Var] | set[Var] = frozenset()):
        self.tape = tape
        stmts = tape.stmts
        self.end = len(stmts)
        self.producer: dict[Var, Stmt] = {}
        self.defined: dict[Var, int] = {i.var: -1 for i in tape.inputs}
        self.readers: dict[Var, list[int]] = {}
        self.uses: Counter = Counter(itertools.chain.from_iterable(s.uses() for s in stmts))
        readers_of, producer, defined = self.readers, self.producer, self.defined
        for index, stmt in enumerate(stmts):
            for v in stmt.uses():
                readers = readers_of.get(v)
                if readers is None:
                    readers_of[v] = [index]
                elif readers[-1] != index:
                    readers.append(index)
            for v in stmt.outs:
                producer[v] = stmt
                defined[v] = index
        self.outputs: list[Var] = [a for a in tape.outputs() if isinstance(a, Var)]
        self.classes = MemoryClasses()
        self.updates: dict[Var, list[int]] = {}
        for index, stmt in enumerate(stmts):
            for base in memory_bases(stmt):
                self.classes.join(stmt.out, base)
        for index, stmt in enumerate(stmts):
            if stmt.prim.inplace and stmt.first_var is not None:
                self.updates.setdefault(self.root(stmt.first_var), []).append(index)
        self.members: dict[Var, list[Var]] = {}
        for v in self.defined:
            self.members.setdefault(self.root(v), []).append(v)
        self.returned: set[Var] = self._closure(self.outputs)
        self.arguments: set[Var] = self._closure(i.var for i in tape.inputs
                                                 if i.var not in tape.owned)
        self._last_reads(inlined)

    def with_inlined(self, inlined: frozenset[Var] | set[Var]) -> "Analysis":
        """``Analysis(self.tape, inlined)``, made from this one: only the read positions
        (``last``, ``last_memory``) change."""
        new = copy.copy(self)
        new._last_reads(inlined)
        return new

    def _last_reads(self, inlined) -> None:
        """``last`` and ``last_memory``, with ``inlined`` values read where their reader is."""
        if inlined:
            where = self._read_positions(inlined)
            self.last: dict[Var, int] = {v: max(where[i] for i in r)
                                         for v, r in self.readers.items()}
        else:       # positions ascend: the last reader reads last
            self.last = {v: r[-1] for v, r in self.readers.items()}
        for v in self.outputs:
            self.last[v] = self.end
        class_last: dict[Var, int] = {}
        for v, position in self.last.items():
            r = self.root(v)
            class_last[r] = max(class_last.get(r, -1), position)
        self.last_memory: dict[Var, int] = {v: class_last.get(self.root(v), -1)
                                            for v in self.defined}

    def _read_positions(self, inlined) -> list[int]:
        """Per statement, where its reads happen in the written code."""
        where = list(range(self.end))
        if not inlined:
            return where
        for index in reversed(range(self.end)):
            outs = self.tape.stmts[index].outs
            if outs and outs[0] in inlined and outs[0] in self.readers:
                where[index] = where[self.readers[outs[0]][-1]]
        return where

    def _closure(self, vars) -> set[Var]:
        return {m for v in vars for m in self.members.get(self.root(v), [v])}

    # -- memory --------------------------------------------------------------------------

    def root(self, v: Var) -> Var:
        """The first array of ``v``'s memory class (what it views or updates, transitively)."""
        return self.classes.root(v)

    def same_memory(self, a: Var, b: Var) -> bool:
        return self.root(a) is self.root(b)

    def free_after(self, v: Var, index: int) -> bool:
        """May the statement at ``index`` write ``v``'s memory (a region taking it as its own):
        nothing after it reads that memory, and it is neither an argument's nor returned."""
        return self.last_memory.get(v, self.end) <= index and v not in self.arguments \
            and v not in self.returned

    def written_between(self, roots: set[Var], start: int, stop: int) -> bool:
        """Does an in-place update strictly between ``start`` and ``stop`` write one of the
        memory classes ``roots``?"""
        for root in roots:
            positions = self.updates.get(root, ())
            k = bisect.bisect_right(positions, start)
            if k < len(positions) and positions[k] < stop:
                return True
        return False

    def view_root(self, v: Var) -> Var:
        """Following views and in-place updates back through single bases: the array ``v``'s
        memory was made as (a value of the tape or an input)."""
        while v in self.producer:
            bases = memory_bases(self.producer[v])
            if len(bases) != 1:
                break
            v = bases[0]
        return v
