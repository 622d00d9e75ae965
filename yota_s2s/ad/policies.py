"""Save or make again: what the backward loop of a region reads of the forward step.

The backward step of a loop (regions.py) reads values of the forward step at the same index.
Each is either saved by the forward loop, a stack with one row per step, or made again by the
backward step from what it has: the index, the invariants, and values saved anyway. A
``SavePolicy`` decides, as JAX's checkpoint policies (``jax/_src/ad_checkpoint.py``) decide
which residuals a rematerialized function saves; a memory budget is one more policy.
"""
from __future__ import annotations

import operator
from typing import Any

from dataclasses import dataclass

from ..ir.region import Loop
from ..ir.tape import Stmt, Var

# A value of a step this large (elements) or larger, made by ``cheap`` primitives from values
# saved anyway, may be made again by the backward step instead of saved (RemakeCheap); a
# smaller one is saved: making it again costs a call each step, saving it little memory.
REMAKE_MIN = 512


@dataclass(frozen=True)
class Trip:
    """A while's trip (ir/whiles.py) as a policy sees a loop: no index; the body's carried
    values and invariants (its inputs)."""
    carried: tuple
    invariants: tuple
    index: None = None


class Step:
    """What a policy sees of a loop's step: the loop (or a while's ``Trip``), and the
    statement that makes each value of the step (``producer``)."""

    def __init__(self, loop: Loop | Trip, stmts: list[Stmt]):
        self.loop = loop
        self.producer = {o: s for s in stmts for o in s.outs}
        self._indexing: dict[Var, bool] = {}

    def read_again(self, v: Any) -> bool:
        """Is ``v`` a scipy.sparse matrix read from outside (rules/products.py), or its ``.T``?
        No stack of rows holds one: the backward step reads it again, as the forward step
        did."""
        made = self.producer.get(v) if isinstance(v, Var) and v.aval.sparse else None
        return made is not None and (made.prim.emit[:1] == ("external",) or all(
            self.read_again(u) or self.indexing(u) for u in made.uses()))

    def indexing(self, v: Any) -> bool:
        """Is ``v`` the index, an invariant, a row of an invariant, an index computed from the
        step's (``x[(i + 1) % n]``) or a number computed from those (the step size ``dt / 6.0``
        of ``for dt in dts``)? In a while's trip, any value made from the invariants alone
        (``-k``). The backward step has what it needs to make it again."""
        loop = self.loop
        if not isinstance(v, Var) or v is loop.index or v in loop.invariants:
            return True
        if v not in self._indexing:
            made = self.producer.get(v)
            self._indexing[v] = made is not None and (
                made.prim.fn is operator.getitem or loop.index is None or    # (a while's trip:
                v.aval.ndim == 0 and made.prim.ufunc is not None        # the same every trip)
            ) and all(self.indexing(u) for u in made.uses())
        return self._indexing[v]


class SavePolicy:
    """Which values of a loop's step the backward step makes again rather than reading them
    back from a stack that the forward loop saves, one row per step (JAX's checkpoint
    policies are the model: a memory budget is one more policy).

    ``remade(v, step)``: ``v`` is made again from the index and the invariants, before the
    saved values are read back; ``remake(reads, step)``: the values of ``reads`` (what the
    backward step reads of the forward step) made again from saved values, after those are
    read back, with the values made again for them. This base policy saves all it can."""

    def remade(self, v: Any, step: Step) -> bool:
        return not isinstance(v, Var) or v is step.loop.index or v in step.loop.invariants \
            or step.read_again(v)

    def remake(self, reads: dict[Var, None], step: Step) -> set[Var]:
        return set()


class RemakeCheap(SavePolicy):
    """The default: indexing values (``Step.indexing``) are made again, and values of
    ``min_size`` elements or more made by ``cheap`` primitives (``np.roll``, ``+``, ``-``) from
    values saved anyway or saved in their stead, where that saves memory: the centred
    differences of a stencil, ``np.roll(f, -1) - np.roll(f, 1)`` along two axes, are two
    stacks of fields, where the field ``f`` they are made from is one. Smaller values are
    saved: making them again costs a call each, saving them little."""

    def __init__(self, min_size: int = REMAKE_MIN):
        self.min_size = min_size

    def remade(self, v: Any, step: Step) -> bool:
        return step.indexing(v) or step.read_again(v)

    def remake(self, reads: dict[Var, None], step: Step) -> set[Var]:
        sources: dict[Var, set] = {}        # value -> the values it is made from, saved
        chain: dict[Var, set] = {}          # value -> the values made again for it
        candidates = [v for v in reads if not self.remade(v, step)
                      and v not in step.loop.carried and self._walk(v, reads, step, sources, chain)]
        kept = [v for v in reads if v not in candidates and not self.remade(v, step)]
        instead = set(kept).union(*(sources[v] for v in candidates))
        if candidates and _size(instead) < _size(kept + candidates):
            return set().union(*(chain[v] for v in candidates))
        done: set = set()
        for v in candidates:            # one by one: those made of values saved anyway
            if sources[v] <= set(kept) | {c for c in reads if c is not v and c not in done}:
                done |= chain[v]
        return done

    def _walk(self, v: Any, reads: dict, step: Step, sources: dict, chain: dict) -> bool:
        """Can ``v`` be made again by cheap statements? Fills ``sources[v]`` (the values it is
        made from, saved) and ``chain[v]`` (the values made again for it)."""
        if v in chain:
            return True
        made = step.producer.get(v)
        if made is None or not made.prim.cheap or len(made.outs) != 1 or v.aval.ndim == 0 \
                or v.aval.size < self.min_size:
            return False
        found, inner = set(), {v}
        for u in made.uses():
            if self.remade(u, step):
                continue
            if u in reads or u in step.loop.carried or not self._walk(u, reads, step, sources,
                                                                      chain):
                found.add(u)
            else:
                found |= sources[u]
                inner |= chain[u]
        sources[v], chain[v] = found, inner
        return True


def save_or_remake(policy: SavePolicy, reads: dict[Var, None], stmts: list[Stmt], step: Step,
                   made: set[Var]) -> tuple[list[Stmt], list[Stmt]]:
    """Of ``reads`` (what a backward step reads of the forward step ``stmts``, which make or
    carry the values ``made``), those ``policy`` says are made again are dropped, and what a
    value made again reads is added (saved in its stead); the forward statements the backward
    step runs again: the prologue (from the index and the invariants, before the saved values
    are read back) and the rematerialized ones (from saved values, after them)."""
    rematerialized = policy.remake(reads, step)
    remat = [s for s in stmts if any(o in rematerialized for o in s.outs)]
    remade = {v for v in reads if policy.remade(v, step)} | \
        {u for s in remat for u in s.uses() if u not in rematerialized and policy.remade(u, step)}
    for v in list(remade):          # with what they are made from
        stack = [v]
        while stack:
            u = stack.pop()
            if u in step.producer:
                remade.add(u)
                stack += [w for w in step.producer[u].uses() if w not in remade]
    prologue = [s for s in stmts if any(o in remade for o in s.outs)]
    remade |= rematerialized
    for v in remade:
        reads.pop(v, None)
    for s in remat:             # what a value made again reads: saved in its stead
        for u in s.uses():
            if u in made and u not in remade:
                reads[u] = None
    return prologue, remat


def _size(vs) -> int:
    return sum(v.aval.size * v.aval.dtype.itemsize for v in vs)


def stack_name(base: str) -> str:
    """The name of the stack of a value named ``base``: ``h_cond`` -> ``H_COND``."""
    upper = base.upper()
    return upper if upper != base and upper.isidentifier() else f"{base}_all"
