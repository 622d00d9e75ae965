"""Generated lines fit in 100 columns: a statement too long for one line is broken inside its
brackets, before a binary operator or after a comma, its continuation lines aligned under the
first character after the bracket (PEP 8's visual indent)::

    polynomial = (x2 * t3 - t6 * t8 - x0 * t12 + t16 * t17 + x3 * t22 - t26 * t28 - x1 * t32
                  + t36 * t37 - 1.2342523)

An assignment whose value has no bracket of its own gets one. The broken statement is parsed
again and must give the same syntax tree, or the line stays as it was; a comment line is cut
(``...``). The writers keep most lines short themselves (module.py); this is the last word, on
the function's whole text, where the indentation of loops is known.
"""
from __future__ import annotations

import ast
import io
import tokenize

WIDTH = 100
# where a break goes: at the loosest binding of the bracket's top level (commas first)
_RANK = {",": 0, "if": 1, "else": 1, "or": 2, "and": 3, "not": 4, "in": 5, "is": 5, "<": 5,
         ">": 5, "<=": 5, ">=": 5, "==": 5, "!=": 5, "|": 6, "^": 7, "&": 8, "<<": 9, ">>": 9,
         "+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11, "@": 11, "**": 12}
_OPERATORS = set(_RANK) - {","}
_OPENING, _CLOSING = "([{", ")]}"


def fit(text: str) -> str:
    """``text`` (code, one statement a line but for bracketed continuations) with each line of
    more than ``WIDTH`` columns broken or cut; lines inside a triple-quoted string are left."""
    out: list[str] = []
    quoted = False
    for line in text.split("\n"):
        inside = quoted
        quoted ^= (line.count('"""') + line.count("'''")) % 2 == 1
        if len(line) <= WIDTH or inside or quoted:
            out.append(line)
        elif line.lstrip().startswith("#"):
            out.append(line[:WIDTH - 3] + "...")
        else:
            out += _broken(line)
    return "\n".join(out)


def _broken(line: str) -> list[str]:
    """``line`` broken inside the brackets of its value (given brackets where it has none), or
    of its target of several names where that fits and the first does not."""
    indent = line[:len(line) - len(line.lstrip())]
    code = line.strip()
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                    tokenize.COMMENT)]
        before = _tree(code)
    except (SyntaxError, tokenize.TokenError, IndentationError):
        return [line]
    tokens, code = _value_bracketed(tokens, code)
    found = None
    for form in (tokens, code), _names_bracketed(tokens, code):
        lines = form and _split(*form, len(indent), before)
        if lines and all(len(indent) + len(piece) <= WIDTH for piece in lines):
            found = lines
            break
        found = found or lines
    return [indent + piece for piece in found] if found else [line]


def _split(tokens: list, code: str, indent: int, before: str) -> list[str] | None:
    """The pieces of ``code`` broken at its first bracket's loosest points, or None where there
    is no such place or the pieces do not parse to the same syntax tree (``before``)."""
    pieces = _pieces(tokens, code)
    if pieces is None:
        return None
    head, parts, hang = pieces
    lines, current = [], head
    for part in parts:
        if indent + len(current) + len(part.rstrip()) > WIDTH and current.strip():
            lines.append(current.rstrip())
            current = " " * hang + part.lstrip()
        else:
            current += part
    lines.append(current.rstrip())
    try:
        return lines if _tree("\n".join(lines)) == before else None
    except SyntaxError:
        return None


def _tree(code: str) -> str:
    body = "\n    pass" if code.rstrip().endswith(":") else ""
    return ast.dump(ast.parse(code + body))


def _names_bracketed(tokens: list, code: str) -> tuple[list, str] | None:
    """``a, b, ... = value`` with its target in parentheses (``(buf1, buf2, ...) =
    _work_arrays()``), or None where the statement has no such target."""
    names = False
    for t in tokens:
        if t.string in _OPENING:
            return None
        if t.string == "," and t.type == tokenize.OP:
            names = True
        elif t.string == "=" and t.type == tokenize.OP:
            if not names:
                return None
            start = t.start[1]
            return _tokens(f"({code[:start].rstrip()}) {code[start:]}")
    return None


def _tokens(code: str) -> tuple[list, str]:
    return [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)], code


def _value_bracketed(tokens: list, code: str) -> tuple[list, str]:
    """``target = value`` (or ``return value``) with the value in parentheses where its top
    level has an operator or a comma outside any bracket (``polynomial = x2 * t3 - ...``,
    ``return loss, dW1, ...``); the tokens of the new code."""
    depth, assign = 0, tokens[0] if tokens and tokens[0].string == "return" else None
    for t in tokens:
        if t.string in _OPENING:
            depth += 1
        elif t.string in _CLOSING:
            depth -= 1
        elif depth == 0 and t.type == tokenize.OP and t.string.endswith("=") \
                and t.string not in _RANK:            # = += -= ..., not == <= >= !=
            assign = t
        elif depth == 0 and assign is not None and t.string in _RANK and t is not assign:
            start = assign.end[1]
            return _tokens(f"{code[:start]} ({code[start:].lstrip()})")
    return tokens, code


def _pieces(tokens: list, code: str) -> tuple[str, list[str], int] | None:
    """(the text up to and with the first bracket that holds the rest, the pieces between its
    break points, the continuation's column), or None where there is no place to break."""
    depth, opened, cuts, previous = 0, None, [], None
    for t in tokens:
        column = t.start[1]
        if t.string in _OPENING and t.type == tokenize.OP:
            depth += 1
            if opened is None:
                opened = t.end[1]
        elif t.string in _CLOSING and t.type == tokenize.OP:
            depth -= 1
        elif depth == 1 and opened is not None:
            operand_before = previous is not None and (
                previous.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
                and previous.string not in _OPERATORS or previous.string in _CLOSING)
            if t.string in _OPERATORS and operand_before:
                cuts.append((_RANK[t.string], column))
            elif previous is not None and previous.string == "," and previous.type == tokenize.OP:
                cuts.append((_RANK[","], column))
        previous = t
    if opened is None or not cuts:
        return None
    loosest = min(rank for rank, _ in cuts)
    bounds = [opened] + [column for rank, column in cuts if rank == loosest] + [len(code)]
    parts = [code[a:b] for a, b in zip(bounds, bounds[1:])]
    return code[:opened], parts, opened
