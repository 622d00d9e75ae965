"""The text primitives of codegen, below every writer: how written statements become lines.

- ``unparse``: one ``ast`` node as Python text, the same on every Python we support;
- ``Comment``: a comment line among statements (a loop region's step holds its blocks'
  comments, regions.py), ``statement_lines`` a statement's lines;
- ``Block``: consecutive statements of one source line, which share one comment
  (``# model.py:4  h = ...``, ``# grad of model.py:4  ...``), grouped by ``group_blocks`` and
  written by ``block_lines`` with the rules that made them (``# rule tanh, x: ...``);
- ``Loop``: a cache-blocked chain as written (blocks.py), ``INDENT`` the indentation of a
  level.

Nothing here decides what to write; emit.py and the construct writers above it do.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

from ..errors import SourceLoc
from ..ir.tape import TANGENT, Stmt
from ..text import comment

INDENT = "    "


class Comment(ast.stmt):
    """A comment line among statements (``ast`` keeps none): ``text``, the whole line, made by
    ``text.comment`` (escaped). ``unparse`` writes it, and a ``for`` loop holding it (a loop
    region's step, regions.py)."""

    _fields = ()

    def __init__(self, text: str):
        super().__init__()
        self.text = text


def unparse(node: ast.AST) -> str:
    """``ast.unparse``, but the same text on every Python we support: 3.10 writes a tuple
    target as ``(a, b) = ...`` where 3.11+ writes ``a, b = ...`` (committed files must not
    change with the reviewer's Python), and a tuple assigned to a tuple is written bare on both
    sides (``h, dh = h_new, dh_new``). A ``Comment`` is its line; a ``for`` loop is written a
    statement at a time (``statement_lines``): its body may hold comments."""
    if isinstance(node, Comment):
        return node.text
    if isinstance(node, (ast.For, ast.If, ast.While)):
        return "\n".join(statement_lines(node))
    _number_statements(node)
    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], ast.Tuple) and len(node.targets[0].elts) > 1:
        targets = ", ".join(ast.unparse(e) for e in node.targets[0].elts)
        value = node.value
        if isinstance(value, ast.Tuple) and len(value.elts) > 1:
            return f"{targets} = {', '.join(ast.unparse(e) for e in value.elts)}"
        return f"{targets} = {ast.unparse(value)}"
    return ast.unparse(node)


def statement_lines(node: ast.stmt) -> list[str]:
    """A statement's lines: a ``for`` loop's line, then its body's statements indented (a
    comment among them as it is); a list too long for one line (scalar mode's gradient
    elements) has an element a line."""
    if isinstance(node, (ast.For, ast.While)):       # (a while statement: whiles.py)
        bare = ast.For(node.target, node.iter, [ast.Pass()], []) if isinstance(node, ast.For) \
            else ast.While(node.test, [ast.Pass()], [])
        _number_statements(bare)
        head = ast.unparse(bare).splitlines()[0]
        return [head] + [INDENT + line for child in node.body for line in statement_lines(child)]
    if isinstance(node, ast.If):        # a branch (branches.py): its arms may hold comments
        return _if_lines(node, "if")
    text = unparse(node)
    if len(text) + 2 * len(INDENT) <= 99 or not isinstance(node, ast.Assign) \
            or not isinstance(node.value, ast.List) or len(node.targets) != 1:
        return text.splitlines()
    return [f"{unparse(node.targets[0])} = ["] + \
        [f"{INDENT}{unparse(e)}," for e in node.value.elts] + ["]"]


def _if_lines(node: ast.If, keyword: str) -> list[str]:
    """An ``if`` (``keyword``: or ``elif``) and its arms; an ``else`` holding one ``if`` and
    no comment is written ``elif``."""
    test = ast.unparse(node.test)
    lines = [f"{keyword} {test}:"] + [INDENT + line for child in node.body
                                      for line in statement_lines(child)]
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        return lines + _if_lines(node.orelse[0], "elif")
    if node.orelse:
        lines += ["else:"] + [INDENT + line for child in node.orelse
                              for line in statement_lines(child)]
    return lines


def _number_statements(node: ast.AST) -> None:
    """Line 1 for each statement in ``node`` that has no line: the one location ``ast.unparse``
    reads (a statement's ``lineno``, for its type comment). ``ast.fix_missing_locations`` would
    do it too, but it visits every expression as well, at many times the cost."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.stmt) and not hasattr(n, "lineno"):
            n.lineno = 1
        for field in _BLOCK_FIELDS.get(type(n), ()):
            todo += getattr(n, field)


# where statements hold statements
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {
    ast.FunctionDef: ("body",), ast.AsyncFunctionDef: ("body",), ast.ClassDef: ("body",),
    ast.For: ("body", "orelse"), ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"), ast.If: ("body", "orelse"), ast.With: ("body",),
    ast.AsyncWith: ("body",), ast.Try: ("body", "handlers", "orelse", "finalbody"),
    ast.ExceptHandler: ("body",), ast.Module: ("body",),
}


@dataclass
class Loop:
    """A cache-blocked chain (blocks.py) as written: ``before`` the loop, the comments above
    it (``notes``), the ``for`` loop with the two statements that make a block's slice, the
    chain's blocks (one per source line) to write inside it after those, ``after`` it."""
    before: list[ast.stmt]
    notes: list[ast.stmt]            # Comment
    loop: ast.For
    inner: list                      # Block, each with its comment
    after: list[ast.stmt]


@dataclass
class Block:
    """Consecutive statements of one source line, written under one comment."""

    section: str                 # "forward", "backward" or "tangent"
    loc: SourceLoc | None
    stmts: list[ast.stmt] = field(default_factory=list)
    sources: list[Stmt] = field(default_factory=list)   # the tape statements behind it
    loop: Loop | None = None     # a cache-blocked chain (blocks.py): the blocks inside its loop
    quiet: list[Stmt] = field(default_factory=list)     # more, written by a later one
    sizes: list[int] = field(default_factory=list)      # how many of stmts each source wrote

    def parts(self) -> list[tuple[Stmt, list[ast.stmt]]]:
        """Each source with the statements it was written as (one or more: a work array
        zeroed is ``dx = buf4`` and ``dx.fill(0.0)``)."""
        sizes = self.sizes if len(self.sizes) == len(self.sources) else [1] * len(self.sources)
        if sum(sizes) != len(self.stmts):
            raise AssertionError("a block's statements do not match its sources")
        parts, at = [], 0
        for source, size in zip(self.sources, sizes):
            parts.append((source, self.stmts[at:at + size]))
            at += size
        return parts


def section_of(stmt: Stmt) -> str:
    """``forward``, ``backward`` or ``tangent``: the section of the function ``stmt`` is in."""
    if stmt.rule is None:
        return "forward"
    return "tangent" if stmt.rule.startswith(TANGENT) else "backward"


def block_key(stmt: Stmt) -> tuple:
    """Statements share a block (and its comment) when they share section, source line and,
    in an unrolled loop, iteration (``# t = 3``)."""
    loc = stmt.loc
    return (section_of(stmt), loc.file if loc else None, loc.line if loc else None) + \
        ((loc.iteration,) if loc and loc.iteration else ())


def group_blocks(written: list[tuple[Stmt, list[ast.stmt]]]) -> list[Block]:
    """Statements as written, in blocks: consecutive statements of one source line. A
    statement written as nothing (written by a later one: an element of a scalar-mode
    accumulator) hands its rules to the next statement of its line."""
    blocks: list[Block] = []
    silent: list[Stmt] = []
    for stmt, nodes in written:
        key = block_key(stmt)
        if not nodes:
            silent = [s for s in silent if block_key(s) == key] + [stmt]
            continue
        if not blocks or block_key(blocks[-1].sources[0]) != key:
            blocks.append(Block(key[0], stmt.loc))
        blocks[-1].stmts += nodes
        blocks[-1].sources.append(stmt)
        blocks[-1].sizes.append(len(nodes))
        blocks[-1].quiet += [s for s in silent if block_key(s) == key]
        silent = []
    return blocks


def block_lines(block: Block, function: str, rules_of: Callable[[Stmt], list[str]],
                previous: Block | None, shown: set[str]) -> list[str]:
    """The block's comments, then its statements (``block_nodes``, as lines)."""
    return [line for node in block_nodes(block, function, rules_of, previous, shown)
            for line in statement_lines(node)]


def block_nodes(block: Block, function: str, rules_of: Callable[[Stmt], list[str]],
                previous: Block | None, shown: set[str]) -> list[ast.stmt]:
    """The block's comments, then its statements. In an unrolled loop, ``# t = 3`` where a
    pass begins; the source line (said once for a run of passes over one line); for a backward
    block, the rules that made its statements (``# rule tanh, x: dy * (1 - y * y)``), each
    once under its source line (``shown``: those said since it). ``function``: the traced
    function's name (a block of another is marked inlined); ``rules_of``: a statement's rules
    (``Emitter.rules_of``)."""
    loc = block.loc
    before = previous.loc if previous is not None else None
    again = before is not None and loc is not None and previous.section == block.section \
        and (before.file, before.line) == (loc.file, loc.line)
    note = ""
    if loc is not None:
        prefix = {"backward": "grad of ", "tangent": "tangent of "}.get(block.section, "")
        note = f"{prefix}{loc.short}  {loc.text}"
        if loc.func and loc.func != function and block.section == "forward":
            note += f"    ({loc.func}, inlined)"
    line = comment(note)           # escaped: a newline in a file name cannot end it
    lines = []
    if loc is not None and loc.iteration and (before is None or before.iteration != loc.iteration):
        lines.append(comment(loc.iteration))
    if not again:
        lines += [line] if loc is not None else []   # (cut to the width: lines.fit)
        shown.clear()
    if block.section == "backward":
        rules = dict.fromkeys(r for s in block.quiet + block.sources for r in rules_of(s)
                              if r not in shown)
        lines += [comment(rule_comment(r)) for r in rules]
        shown.update(rules)
    return [Comment(text) for text in lines] + list(block.stmts)


def rule_comment(rule: str) -> str:
    """``tanh x: dy * (1 - y * y)`` -> ``rule tanh, x: dy * (1 - y * y)``: which primitive, which
    operand, what derivative (the rule's own text, in its words ``y`` and ``dy``)."""
    head, sep, text = rule.partition(": ")
    prim, _, operand = head.partition(" ")
    if sep and operand and " " not in operand:
        return f"rule {prim}, {operand}: {text}"
    return f"rule {rule}"
