"""Cache-blocked elementwise chains (buffered form).

numpy runs one statement over the whole array before the next starts; over arrays larger than
the cache, every statement reads its operands from memory and writes its result back. A run
of elementwise statements over arrays of one shape (a *chain*) computes each element from the
same element of its operands, so it can run block by block instead: the chain once inside a
``for`` over blocks of ``BLOCK`` elements, each statement writing ``out=`` into the block of
its array. A block's values then stay in the L2 cache from one statement to the next, and work
arrays whose values all live and die inside the chain shrink to one block (they never go to
memory at all), which is what numexpr does, with numpy alone:

    chain = 0.0
    for start in range(0, 1000000, 32768):
        n = min(32768, 1000000 - start)
        k = slice(start, start + n)
        s = xp.sin(x[k], out=buf1[:n])          # a work array of one block
        ...
        chain += t4.sum()                       # a sum over the array: one per block
        dx = xp.multiply(dt3, t5, out=dx_full[k])
    dx = dx_full                                # values read after the loop: whole arrays

A chain is a run of statements, in the order the code is written, each either

- a ufunc written ``out=`` into planned memory (buffers.py) whose array operands all have the
  chain's shape (scalars may come from anywhere before the chain), or
- a sum (or mean) of a whole array of the chain's shape to a float64 scalar: accumulated per
  block; a statement that reads it ends the chain, since it needs the whole array.

Block by block is the same computation as whole arrays statement by statement: each element is
computed from the same elements, in the same order (sums add in a different order: per block,
then the blocks). Chains over fewer than ``MIN_SIZE`` elements stay as they are; their arrays
are in the cache already.

Planned from the analysis (ir/analysis.py: definitions, last reads) and the memory plan
(buffers.py); the tape is unchanged: a codegen-level transformation, like the memory plan.
"""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field

import numpy as np

from ..ir.analysis import Analysis, memory_bases
from ..ir.tape import Lit, Stmt, Tape, Var, tree_vars
from ..text import comment
from . import halfangle
from .buffers import MemoryPlan
from .scalars import ScalarPlan
from .out_forms import result_call
from .render import Comment, Loop

# Elements per block: 32768 float64 (256 KB per array) keeps a chain's handful of live blocks in
# a 1-2 MB L2 cache; 16K-64K measured within a few percent of each other (docs/performance.md).
BLOCK = 32768
MIN_SIZE = 4 * BLOCK        # smaller arrays stay whole (4 blocks: 1 MB a float64 array)
_SUMS = (np.sum, np.mean)


@dataclass
class Chain:
    start: int                       # first tape statement
    stop: int                        # one past the last
    shape: tuple
    rows: int                        # rows (first-axis entries) per block
    sums: dict[Var, Var] = field(default_factory=dict)      # accumulated value -> its operand
    slots: set[int] = field(default_factory=set)            # work arrays shrunk to one block
    whole: set[int] = field(default_factory=set)            # work arrays of its shape, whole


def plan_chains(tape: Tape, facts: Analysis, memory: MemoryPlan, scalars: ScalarPlan,
                inlined: set[Var]) -> list[Chain]:
    """The chains worth blocking, in order; shrinks the work arrays used only inside one."""
    chains: list[Chain] = []
    stmts, i = tape.stmts, 0
    while i < len(stmts):
        chain = _chain_from(stmts, i, facts, memory, scalars, inlined)
        if chain is None:
            i += 1
            continue
        chains.append(chain)
        i = chain.stop
    _shrinkable(chains, facts, memory)
    return chains


def _chain_from(stmts, i, facts, memory, scalars, inlined) -> Chain | None:
    first = stmts[i]
    if not _elementwise(first, None, facts, i, memory, scalars, inlined, set()):
        return None
    shape = first.out.aval.shape
    size = int(np.prod(shape))
    if size < MIN_SIZE:
        return None
    sums: dict[Var, Var] = {}
    stop, count = i, 0
    while stop < len(stmts):
        stmt = stmts[stop]
        if _elementwise(stmt, shape, facts, i, memory, scalars, inlined, sums):
            count += 1
        elif _sum(stmt, shape, scalars, inlined, sums):
            sums[stmt.out] = stmt.args[0]
        else:
            break
        stop += 1
    if count < 2:
        return None
    inner = int(np.prod(shape[1:]))
    rows = max(1, BLOCK // max(inner, 1))
    if shape[0] < 2 * rows:
        return None
    return Chain(i, stop, shape, rows, sums)


def _elementwise(stmt: Stmt, shape, facts: Analysis, start: int, memory: MemoryPlan,
                 scalars: ScalarPlan, inlined, sums) -> bool:
    """A ufunc into planned memory, its arrays of the chain's shape. A value from before the
    chain that shares memory with another (a view, ``a[::-1]``; an element ``a[3]``, a 0-d view
    on cupy) only if it is an argument's, which nothing writes: a view of memory the chain
    writes would read other elements than the block's, some already overwritten by an earlier
    block."""
    if len(stmt.outs) != 1 or stmt.prim.inplace or stmt.prim.effect:
        return False
    v = stmt.out
    if memory.writes.get(v) != "ufunc" or v in inlined or v in scalars.floats \
            or v.aval.dtype.kind != "f" or (shape is not None and v.aval.shape != shape):
        return False
    group = memory.group.get(v)
    if group is None or group.kind not in ("slot", "result"):
        return False
    for a in stmt.args:
        if isinstance(a, Lit):
            if np.ndim(a.value) != 0:
                return False
            continue
        for u in tree_vars(a):
            if u in sums or u in inlined:
                return False
            if u.aval.ndim != 0 and u.aval.shape != v.aval.shape:
                return False
            if facts.defined.get(u, -1) < start and u in facts.producer \
                    and memory_bases(facts.producer[u]) and u not in facts.arguments:
                return False
    return True


def _sum(stmt: Stmt, shape, scalars: ScalarPlan, inlined, sums) -> bool:
    if stmt.prim.fn not in _SUMS or stmt.params or len(stmt.args) != 1 or len(stmt.outs) != 1:
        return False
    x, v = stmt.args[0], stmt.out
    return isinstance(x, Var) and x.aval.shape == shape and x.aval.dtype == np.float64 \
        and x not in sums and x not in inlined and v.aval.ndim == 0 and not v.aval.weak \
        and v.aval.dtype == np.float64 and v not in scalars.floats and v not in inlined


def _shrinkable(chains: list[Chain], facts: Analysis, memory: MemoryPlan) -> None:
    """Work arrays whose every value is made and last read inside one chain: one block will do
    (``chain.slots``); every chain's ``whole`` lists the work arrays of its shape that stay whole."""
    starts = [c.start for c in chains]
    for k, (shape, _, members) in enumerate(memory.slots):
        if not members:
            continue
        first = min(facts.defined[m] for m in members)
        last = max(max(facts.defined[m], facts.last_memory.get(m, -1)) for m in members)
        at = bisect.bisect_right(starts, first) - 1
        chain = chains[at] if at >= 0 else None
        if chain is not None and shape == chain.shape and last < chain.stop:
            chain.slots.add(k)
    by_shape: dict[tuple, set[int]] = {}
    for k, (shape, _, _) in enumerate(memory.slots):
        by_shape.setdefault(shape, set()).add(k)
    for chain in chains:
        chain.whole = by_shape.get(chain.shape, set()) - chain.slots


# -- writing ------------------------------------------------------------------------------------

class _Blocked(ast.NodeTransformer):
    """A chain's statements as the loop body: arrays from outside the chain read and written
    at ``[k]``, work arrays of one block at ``[:n]``, returned arrays in their hoisted name."""

    def __init__(self, whole: set[str], block: set[str], results: dict[str, str], k: str, n: str):
        self.whole, self.block, self.results, self.k, self.n = whole, block, results, k, n

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.whole:
            return ast.Subscript(ast.Name(node.id, ast.Load()), ast.Name(self.k, ast.Load()),
                                 ast.Load())
        if node.id in self.block:
            n = ast.Slice(None, ast.Name(self.n, ast.Load()))
            return ast.Subscript(ast.Name(node.id, ast.Load()), n, ast.Load())
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if isinstance(node.func, ast.Name) and node.func.id == "_result":
            return ast.Subscript(ast.Name(self.results[ast.unparse(node)], ast.Load()),
                                 ast.Name(self.k, ast.Load()), ast.Load())
        return self.generic_visit(node)


def assigned_names(nodes: list[ast.stmt]) -> set[str]:
    """The names statements bind (``a = ...``, ``a, b = ...``; not ``a += ...``)."""
    names = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign):
                for target in sub.targets:
                    parts = target.elts if isinstance(target, ast.Tuple) else [target]
                    names.update(t.id for t in parts if isinstance(t, ast.Name))
    return names


def write_chain(em, chain: Chain, group_blocks) -> Loop | None:
    """``chain`` as a loop over blocks, or None where its names cannot be (a name bound inside
    the chain that also holds a whole array read in it)."""
    stmts = em.tape.stmts[chain.start:chain.stop]
    names, memory = em.names, em.memory
    made = {v for s in stmts for v in s.outs}
    whole = {names[u] for s in stmts for a in s.args if isinstance(a, Var)
             for u in tree_vars(a) if u.aval.ndim and u not in made}
    whole |= {em.slot_names[k] for k in chain.whole}
    block = {em.slot_names[k] for k in chain.slots}
    results: dict[str, str] = {}          # _result(...) text -> the hoisted array's name
    before: list[ast.stmt] = []
    for s in stmts:
        group = memory.group.get(s.out)
        if group is not None and group.kind == "result" and s.out not in memory.over:
            call = result_call(group, s.out)
            key = ast.unparse(call)
            if key not in results:
                results[key] = names.fresh(names[group.members[-1]] + "_full")
                before.append(ast.Assign([ast.Name(results[key], ast.Store())], call, lineno=0))
    written = []
    for s in stmts:
        if s.out in chain.sums:
            x = em.atom(chain.sums[s.out])
            total = ast.Call(ast.Attribute(x, "sum", ast.Load()), [], [])
            total = em.into_number(s, total) if em.numbers_in_arrays else total
            written.append((s, [ast.AugAssign(ast.Name(names[s.out], ast.Store()), ast.Add(), total)]))
            before.append(ast.Assign([ast.Name(names[s.out], ast.Store())], ast.Constant(0.0), lineno=0))
        else:
            written.append((s, em.statements(s)))
    bound = assigned_names([n for _, nodes in written for n in nodes])
    read = {names[u] for s in stmts for a in s.args if isinstance(a, Var) for u in tree_vars(a)
            if u not in made}
    totals = {names[v] for v in chain.sums}         # bound before the loop, not in it
    if bound & (whole | block | set(results.values()) | totals) or totals & read:
        return None
    if halfangle.applies():             # sin and cos from a SIMD tan (halfangle.py)
        added = halfangle.rewrite(em, chain, written)
        chain.slots |= added
        block |= {em.slot_names[k] for k in added}
    start, n, k = names.fresh("start"), names.fresh("n"), names.fresh("k")
    blocked = _Blocked(whole, block, results, k, n)
    for slot in chain.slots:
        shape, dtype, members = memory.slots[slot]
        memory.slots[slot] = ((chain.rows, *shape[1:]), dtype, members)
    written = [(s, [blocked.visit(node) for node in nodes])
               for s, nodes in written]
    after: list[ast.stmt] = []
    for s in stmts:
        if s.out in chain.sums and s.prim.fn is np.mean:
            size = int(np.prod(chain.sums[s.out].aval.shape))
            after.append(ast.AugAssign(ast.Name(names[s.out], ast.Store()), ast.Div(),
                                       ast.Constant(size)))
    for s in stmts:
        v = s.out
        if v in chain.sums or em.facts.last.get(v, -1) < chain.stop:
            continue
        storage = _storage(em, v, made, results)
        if names[v] != storage:
            after.append(ast.Assign([ast.Name(names[v], ast.Store())], ast.Name(storage, ast.Load()),
                                    lineno=0))
    total, rows = chain.shape[0], chain.rows
    what = "elements" if len(chain.shape) == 1 else "rows"
    notes = [comment(f"{len(stmts)} statements over {_shape_text(chain.shape)}, in blocks of "
                     f"{rows} {what}:"),
             comment("a block's values stay in the cache from one statement to the next "
                     "(blocks.py)")]
    return Loop(before, [Comment(note) for note in notes], _block_loop(total, rows, start, n, k),
                group_blocks(written), after)


def _block_loop(total: int, rows: int, start: str, n: str, k: str) -> ast.For:
    """``for start in range(0, total, rows):`` with the block's size ``n`` and slice ``k``
    (the chain's statements go after them)."""
    steps = ast.Call(ast.Name("range"), [ast.Constant(0), ast.Constant(total),
                                         ast.Constant(rows)], [])
    size = ast.Call(ast.Name("min"), [ast.Constant(rows), ast.BinOp(
        ast.Constant(total), ast.Sub(), ast.Name(start))], [])
    part = ast.Call(ast.Name("slice"), [ast.Name(start), ast.BinOp(
        ast.Name(start), ast.Add(), ast.Name(n))], [])
    return ast.For(ast.Name(start), steps, [ast.Assign([ast.Name(n)], size, lineno=0),
                                            ast.Assign([ast.Name(k)], part, lineno=0)], [])


def _storage(em, v: Var, made: set[Var], results: dict[str, str]) -> str:
    """The name of the whole array ``v`` lives in, after the loop: the array its chain of
    in-place writes started in (a work array, a hoisted returned array) or, where that started
    before the chain, the name of the value it overwrote there."""
    while v in em.memory.over and v in made:
        v = em.memory.over[v]
    if v not in made:
        return em.names[v]
    group = em.memory.group[v]
    if group.kind == "slot":
        return em.slot_names[group.slot]
    return results[ast.unparse(result_call(group, v))]


def _shape_text(shape: tuple) -> str:
    return "x".join(map(str, shape)) if len(shape) > 1 else f"{shape[0]} elements"
