"""Tape -> text, one typed statement per line, in the spirit of a jaxpr or a Yota tape::

    tape loss(W:f64[3,4], b:f64[3], x:f64[4,5]) -> f64[]
      t1:f64[3,5] = matmul W x                  # model.py:11
      t2:f64[3,1] = getitem[key=(:, None)] b    # model.py:11
      h:f64[3,5] = add t1 t2                    # model.py:11
      loss:f64[] = sum h                        # model.py:12
      return loss

Static parameters print in ``[k=v]``, outputs nobody uses as ``_``. ``locations=False`` and
``shapes=False`` drop the comment column and the types (handy for tests).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..text import describe, literal_text, printable
from .assumptions import lines as assumption_lines
from .names import Namer, arm_namer, name_tape, namer_of, tape_namer
from .branch import branch_of
from .whiles import while_atoms, while_of
from .region import loop_of
from .tape import METHODS, Aval, Lit, Stmt, Tape, Var


def format_static(value: Any) -> str:
    """Compact text for a static value: ``:``, ``1::2``, ``...``, ``(0, None)``, ``f32(1.0)``."""
    if isinstance(value, slice):
        parts = ["" if p is None else format_static(p) for p in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    if isinstance(value, tuple):
        inner = ", ".join(format_static(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, np.generic):
        return f"{Aval.of(value)}".split("[")[0] + f"({literal_text(value.item())})"
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if isinstance(value, np.ndarray):
        items = value.tolist()      # an empty one's list may hide its shape: (0, 1) is []
        hidden = value.size == 0 and np.shape(items) != value.shape
        shape = f", shape={value.shape}" if hidden else ""
        return f"array({describe(items)}{shape}, {value.dtype.name})"
    if callable(value) and isinstance(getattr(value, "__name__", None), str):
        return printable(value.__name__)
    return describe(value)     # never the value's own repr: text.describe


def format_tree(tree: Any, names: Namer) -> str:
    if isinstance(tree, tuple):
        inner = ", ".join(format_tree(t, names) for t in tree)
        return f"({inner},)" if len(tree) == 1 else f"({inner})"
    if isinstance(tree, Var):
        return names.names.get(tree, "?")
    if isinstance(tree, Lit):
        return format_static(tree.value)
    return format_static(tree)


def format_stmt(stmt: Stmt, names: Namer, used: set[Var] | None = None, shapes: bool = True) -> str:
    def out(v: Var) -> str:
        name = names.names.get(v, "?") if used is None or v in used else "_"
        return f"{name}:{v.aval}" if shapes else name
    params = list(stmt.params)
    args = list(stmt.args)
    if stmt.prim.emit[:1] == ("getitem",):
        params.insert(0, ("key", args.pop()))   # the index key reads best as a parameter
    if stmt.prim.emit[:1] == ("loop",):
        loop = stmt.param("loop")
        order = "reversed " if loop.reverse else ""
        params = [("region", f"{order}{loop.source or 'range'}, {loop.length} steps")]
    if stmt.prim.emit[:1] == ("branch",):
        params = [("if", stmt.param("branch").source)]
    if stmt.prim.emit[:1] in (("while",), ("unwind",)):
        params = [(stmt.prim.emit[0], while_of(stmt).source)]
    ptext = ", ".join(f"{printable(k)}={format_tree(v, names)}" for k, v in params)
    head = printable(stmt.prim.name) + (f"[{ptext}]" if ptext else "")
    operands = " ".join(format_tree(a, names) for a in args)
    lhs = ", ".join(out(v) for v in stmt.outs)
    return (f"{lhs} = " if stmt.outs else "") + head + (f" {operands}" if operands else "")


def format_tape(tape: Tape, locations: bool = True, shapes: bool = True) -> str:
    names = namer_of(tape)
    used = {v for s in tape.stmts for v in s.uses()} | {a for a in tape.outputs() if isinstance(a, Var)}
    ins = ", ".join([f"{names[i.var]}:{i.var.aval}" if shapes else names[i.var] for i in tape.inputs]
                    + [f"{printable(tape.params[s.argnum])}={format_static(s.value)}"
                       for s in tape.statics
                       if s.path == ()])
    res = format_tree(tape.result, names)
    head = f"tape {printable(tape.name)}({ins})"
    if shapes and isinstance(tape.result, Var):
        head += f" -> {tape.result.aval}"
    lines = _stmt_lines(tape, names, used, shapes, "  ")
    lines.append((f"  return {res}", ""))
    if tape.grads is not None:
        pairs = [f"{names[i.var]}: {format_tree(g, names) if g is not None else 'None'}"
                 for i, g in zip(tape.inputs, tape.grads)]
        lines.append((f"  grads {', '.join(pairs)}", ""))
    if tape.tangent is not None:
        lines.append((f"  tangent {format_tree(tape.tangent, names)}", ""))
    if tape.loops:
        lines += [(f"  # loop {printable(note)}", "") for note in tape.loops]
    lines += [(f"  # {printable(line)}", "") for line in assumption_lines(tape.assumptions)]
    width = max(len(text) for text, _ in lines) + 2
    body = [text.ljust(width) + f"# {loc}" if locations and loc else text for text, loc in lines]
    return "\n".join([head] + body)


def _stmt_lines(tape: Tape, names: Namer, used: set[Var], shapes: bool, indent: str) -> list:
    """Each statement's line; a region's body follows it, indented, as one step of the loop."""
    lines = []
    for s in tape.stmts:
        lines.append((f"{indent}{format_stmt(s, names, used, shapes)}",
                      printable(s.loc.short) if s.loc else ""))
        branch = branch_of(s)
        if branch is not None:
            lines += _arm_lines(s, branch, names, shapes, indent)
        if while_of(s) is not None:
            lines += _while_lines(s, names, shapes, indent)
        loop = loop_of(s)
        if loop is None:
            continue
        body = loop.body
        inner = names.bodies.get(loop) or name_tape(body, taken=set(names.names.values()))
        inner_used = {v for b in body.stmts for v in b.uses()} | \
            {a for a in body.outputs() if isinstance(a, Var)}
        fresh = [f"{inner[c]}={'empty' if f == 'empty' else 'zeros'}"
                 for c, f in zip(loop.carried, loop.fresh) if f]
        ins = [inner[v] for v in loop.operand_vars()]
        lines.append((f"{indent}  step {inner[loop.index]}: {', '.join(fresh + ins)}", ""))
        lines += _stmt_lines(body, inner, inner_used, shapes, indent + "    ")
        carried = ", ".join(inner[c] for c in loop.carried)
        lines.append((f"{indent}    next {carried} = {format_tree(body.result, inner)}", ""))
    return lines


def _arm_lines(stmt: Stmt, branch, names: Namer, shapes: bool, indent: str) -> list:
    """The arms of a branch statement, each under its heading, indented."""
    lines = []
    for label, arm in zip(("then", "else"), branch.arms):
        inner = arm_namer(names, stmt, arm)
        used = {v for b in arm.stmts for v in b.uses()} | \
            {a for a in arm.outputs() if isinstance(a, Var)}
        ins = ", ".join(inner[i.var] for i in arm.inputs)
        lines.append((f"{indent}  {label} {ins}:", ""))
        lines += _stmt_lines(arm, inner, used, shapes, indent + "    ")
        result = ", ".join(format_tree(r, inner) for r in arm.result)
        lines.append((f"{indent}    result {result}", ""))
    return lines


def _while_lines(stmt: Stmt, names: Namer, shapes: bool, indent: str) -> list:
    """The tapes of a while or unwind statement, each under its heading, indented."""
    lines = []
    construct = while_of(stmt)
    for label, tape in zip(("while", "do") if len(construct.tapes) == 2 else ("step",),
                           construct.tapes):
        inner = tape_namer(names, tape, while_atoms(stmt))
        used = {v for b in tape.stmts for v in b.uses()} | \
            {a for a in tape.outputs() if isinstance(a, Var)}
        ins = ", ".join(inner[i.var] for i in tape.inputs)
        lines.append((f"{indent}  {label} {ins}:", ""))
        lines += _stmt_lines(tape, inner, used, shapes, indent + "    ")
        result = ", ".join(format_tree(r, inner) for r in tape.result)
        lines.append((f"{indent}    result {result}", ""))
    return lines


METHODS["format"] = format_tape      # str(tape)
