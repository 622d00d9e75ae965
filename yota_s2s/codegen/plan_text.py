"""A plan (plan.py) as text, a decision a line, as the tape printer writes a statement a line::

    plan loss (buffered)
      inline t2
      memory h: matmul in buf1
      memory h: ufunc over h in buf1
      work array buf1 float64(3, 5): h h
      region h, H = loop (10 steps)
        start H: in buf2, a stack's work array
        written h = xp.tanh(t1, out=t1)
        plan loss (body)
          ...

Values print under the names the module gives them (values that share an array share a name
there); ``name t7 -> h`` says where that is not the tape's own name. Nothing here decides anything:
the text is stable (statement order, then the planners' order), for tests and diffs
(``yota-s2s trace --plan``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.names import namer_of
from ..ir.printer import format_stmt
from ..ir.tape import Var
from ..text import printable
from .plan import (InReturned, InStack, NewArray, Operand, OwnCopy, Plan, RegionPlan,
                   ZeroedWork, ZeroList)
from .render import unparse

INDENT = "  "


def plan_text(plan: Plan) -> str:
    """The plan, a decision a line (the module docstring)."""
    return "\n".join(plan_lines(plan)) + "\n"


def plan_lines(plan: Plan, indent: str = "") -> list[str]:
    """The plan's lines under its head line, the regions' plans after its own."""
    names = plan.names
    inner = indent + INDENT
    lines = [f"{indent}plan {printable(plan.tape.name)} ({plan.form})"]
    order = [v for v in plan.facts.defined]         # inputs, then statement order
    lines += [f"{inner}inline {_name(names, v)}" for v in order if v in plan.inlined]
    lines += [inner + line for line in _scalar_lines(plan, order)]
    lines += [inner + line for line in _memory_lines(plan, order)]
    lines += [inner + line for line in _name_lines(plan, order)]
    lines += [inner + line for line in _chain_lines(plan)]
    for region in plan.regions:
        lines += region_lines(region, names, inner)
    return lines


def _name(names, v: Any) -> str:
    if isinstance(v, Var):
        return printable(names.names.get(v, "?"))
    return printable(str(v))


def _scalar_lines(plan: Plan, order: list[Var]) -> list[str]:
    """Scalar mode (scalars.py): the Python floats, the elements read by name, the vectors
    unpacked by ``tolist()``, the accumulators written an element at a time."""
    s, names = plan.scalars, plan.names
    lines = [f"float {_name(names, v)}" for v in order if v in s.floats]
    for v in order:
        if v in s.elements:
            array, i = s.elements[v]
            lines.append(f"element {_name(names, v)} = {_name(names, array)}[{i}]")
        if v in s.unpacked:
            parts = " ".join("_" if e is None else _name(names, e) for e in s.unpacked[v])
            lines.append(f"unpack {_name(names, v)}: {parts}")
        if v in s.powers:
            lines.append(f"power {_name(names, v)}")
    for root in sorted(set(s.chains.values()), key=lambda v: plan.facts.defined.get(v, -1)):
        steps = " ".join(_name(names, v) for v in order if s.chains.get(v) is root)
        marks = [w for w, on in (("once", root in s.once), ("together", root in s.together))
                 if on]
        ends = [_name(names, v) for v in order if s.chains.get(v) is root and v in s.chain_ends]
        lines.append(f"accumulator {_name(names, root)}: {steps}"
                     + (f" ({', '.join(marks)})" if marks else "")
                     + (f"; made at {' '.join(ends)}" if ends else ""))
    return lines


def _memory_lines(plan: Plan, order: list[Var]) -> list[str]:
    """Where each planned value is written (buffers.py), the work arrays, the ones returned
    arrays lend, the returned arrays made early and the gradients copied into out=."""
    memory, names = plan.memory, plan.names
    lines = []
    for v in order:
        group = memory.group.get(v)
        if group is None:
            continue
        form = memory.writes.get(v)
        over = memory.over.get(v)
        if group.kind == "fresh":
            lines.append(f"memory {_name(names, v)}: allocated by its call")
            continue
        lines.append(f"memory {_name(names, v)}: {form or 'made'}"
                     + (f" over {_name(names, over)}" if over is not None else "")
                     + f" in {_place(plan, group)}")
    for k, (shape, dtype, members) in enumerate(memory.slots):
        lines.append(f"work array {_slot(plan, k)} {np.dtype(dtype).name}{tuple(shape)}: "
                     + " ".join(_name(names, m) for m in members))
    for k, (group, offset) in sorted(memory.lent.items()):
        lines.append(f"lent {_slot(plan, k)} by {printable(plan.lent_arrays.get(id(group), '?'))}"
                     f" at {offset}")
    for v in order:
        if v in memory.delivered:
            lines.append(f"deliver {_name(names, v)} -> gradient {memory.delivered[v]}")
    return lines


def _slot(plan: Plan, k: int) -> str:
    return printable(plan.slot_names[k]) if k < len(plan.slot_names) else f"slot {k}"


def _place(plan: Plan, group) -> str:
    """A group's place (not ``"fresh"``): a work array, the returned array, a row of a stack,
    the first row of a returned array, the loop's carried array."""
    names = plan.names
    if group.kind == "slot":
        where = _slot(plan, group.slot) + (" (in turn)" if group.turn else "")
    elif group.kind == "result":
        where = f"returned gradient {group.result}" + \
            (" (F order)" if group.order == "F" else "") + \
            (f" as {printable(plan.lent_arrays[id(group)])}" if id(group) in plan.lent_arrays
             else "")
    elif group.kind == "row":
        where = f"row {unparse(group.row)}"
    elif group.kind == "head":
        where = f"the first row of {_name(names, group.host.members[-1])}"
    else:
        where = f"the carried array {_name(names, group.members[0])}"
    return where


def _name_lines(plan: Plan, order: list[Var]) -> list[str]:
    """The module's names where they are not the tape's own (shared arrays, names separated,
    scalar elements); and the work arrays' and returned arrays' names."""
    own = namer_of(plan.tape)
    unbound = plan.inlined | set(plan.scalars.elements)
    return [f"name {_name(own, v)} -> {_name(plan.names, v)}" for v in order
            if v not in unbound and v in own.names and v in plan.names.names
            and own.names[v] != plan.names.names[v]]


def _chain_lines(plan: Plan) -> list[str]:
    """The cache-blocked chains (blocks.py): which statements, over what shape, how many rows
    a block, the sums accumulated a block at a time and the work arrays shrunk to a block."""
    names, stmts, lines = plan.names, plan.tape.stmts, []
    for chain in plan.chains:
        outs = [_name(names, o) for s in stmts[chain.start:chain.stop] for o in s.outs]
        line = f"chain {' '.join(outs)}: {tuple(chain.shape)}, {chain.rows} rows a block"
        if chain.sums:
            line += "; sums " + " ".join(f"{_name(names, v)}" for v in chain.sums)
        if chain.slots:
            line += "; block arrays " + " ".join(_slot(plan, k) for k in sorted(chain.slots))
        lines.append(line)
    return lines


def region_lines(region: RegionPlan, outer, indent: str) -> list[str]:
    """A loop region's plan (region_plan.py), then its body's plan, indented under it. ``outer``:
    the enclosing code's names."""
    body, names = region.body, region.body.names
    loop = region.stmt.param("loop")
    inner = indent + INDENT
    outs = ", ".join(_name(outer, o) for o in region.stmt.outs)
    order = "reversed " if loop.reverse else ""
    lines = [f"{indent}region {outs} = {order}loop ({loop.length} steps)"]
    said = [("keep", region.kept), ("list", region.lists), ("sum list", region.sums),
            ("float", region.floats), ("stack list", region.listed),
            ("summed", region.summed)]
    for word, values in said:
        lines += [f"{inner}{word} {_name(names, v)}" for v in _ordered(body, values)]
    lines += [f"{inner}start {_name(names, c)}: {_START[type(how)](how)}"
              for c, how in region.starts]
    lines += [f"{inner}invariant {_name(names, k)} = {unparse(value)}"
              for k, value in region.invariants]
    lines += [f"{inner}first row {_name(names, stack)}[{row}] = {_name(names, c)}"
              for stack, c, row, _ in region.first]
    lines += [f"{inner}before the loop {_name(names, made.out)}: {unparse(line)}"
              for made, line in region.before]
    lines += [f"{inner}rows once {_name(names, c)}" for c in region.once]
    for stmt in body.tape.stmts:
        if id(stmt) in region.running:
            lines.append(f"{inner}written {unparse(region.running[id(stmt)])}")
        if id(stmt) in region.dropped:
            lines.append(f"{inner}left out {format_stmt(stmt, names, shapes=False)}")
    lines += [f"{inner}lends {unparse(node)}" for node in region.lent]
    lines += [f"{inner}in turn {printable(a)} {printable(b)}" for a, b in region.turning]
    lines += [f"{inner}next {printable(name)} = {unparse(value)}" for name, value in region.moved]
    lines += [f"{inner}result {printable(name)} = {unparse(value)}"
              for name, value in region.results]
    return lines + plan_lines(body, inner)


# How a carried value starts (region_plan.py ``starts``), as text, by its type
_START = {
    InStack: lambda how: f"in {printable(how.array)}, a stack's work array",
    ZeroList: lambda how: f"a list of {how.size} {'False' if how.fill is False else 'zeros'}",
    InReturned: lambda how: unparse(how.call) + (", zero-filled" if how.fill else ""),
    ZeroedWork: lambda how: f"in {printable(how.array)}, zero-filled"
                            + "".join(f"; {unparse(node)}" for node in how.made),
    NewArray: lambda how: f"xp.{how.made}",
    OwnCopy: lambda how: f"a copy of {unparse(how.operand)}",
    Operand: lambda how: unparse(how.operand),
}


def _ordered(body: Plan, values) -> list[Var]:
    """``values`` in the body's order: inputs, then statement order."""
    order = list(body.facts.defined)
    return [v for v in order if v in values] + \
        sorted((v for v in values if v not in body.facts.defined), key=lambda v: v.id)
