"""Syntax highlighting of Python source and tape text, for the terminal and for HTML.

``spans(text)`` splits text into ``(kind, piece)`` pairs, kind one of ``keyword``, ``builtin``,
``number``, ``string``, ``comment``, ``op``, ``name`` or ``""`` (spaces, newlines); joining the
pieces gives ``text`` back exactly. It uses the standard library's ``tokenize``, so it knows
Python as well as the running interpreter; where text stops tokenizing (a fragment with an
unclosed bracket) the rest is one plain span. ``ansi`` and ``html`` render the spans;
``ansi_tape`` colours a printed tape (``ir/printer.py``) by its own layout.
"""
from __future__ import annotations

import builtins
import html as html_escape
import io
import keyword
import re
import tokenize

_BUILTINS = set(dir(builtins))
_ANSI = {"keyword": "35", "builtin": "36", "number": "33", "string": "32", "comment": "2;37"}


def spans(text: str) -> list[tuple[str, str]]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    def offset(row: int, col: int) -> int:
        return min(starts[min(row, len(starts)) - 1] + col, len(text))
    out: list[tuple[str, str]] = []
    pos = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            begin, end, kind = offset(*tok.start), offset(*tok.end), _kind(tok)
            if end <= begin or begin < pos or not kind:
                continue
            if begin > pos:
                out.append(("", text[pos:begin]))
            out.append((kind, text[begin:end]))
            pos = end
    except (tokenize.TokenError, SyntaxError):
        pass        # a fragment: what follows stays plain
    if pos < len(text):
        out.append(("", text[pos:]))
    return out


def _kind(tok: tokenize.TokenInfo) -> str:
    name = tokenize.tok_name[tok.type]
    if name == "NAME":
        if keyword.iskeyword(tok.string) or keyword.issoftkeyword(tok.string):
            return "keyword"
        return "builtin" if tok.string in _BUILTINS else "name"
    if name == "STRING" or name.startswith("FSTRING"):
        return "string"
    return {"NUMBER": "number", "COMMENT": "comment", "OP": "op"}.get(name, "")


def ansi(text: str) -> str:
    """``text`` with ANSI colours (for a terminal that shows them)."""
    return "".join(f"\033[{_ANSI[kind]}m{piece}\033[0m" if kind in _ANSI else piece
                   for kind, piece in spans(text))


_CLASSES = {"keyword": "k", "builtin": "b", "number": "n", "string": "s", "comment": "c",
            "op": "o"}


_TAPE_STMT = re.compile(r"(?P<lhs>\s*[^=#]*= )?(?P<prim>\w+)(?P<rest>.*?)(?P<loc>\s+# [^#]*)?")
_TYPES = re.compile(r"(:[a-z]+[0-9]*(?:\[[0-9,]*\])?)")


def ansi_tape(text: str) -> str:
    """A printed tape with the primitives bold, types and locations dimmed."""
    def color(code: str, piece: str) -> str:
        return f"\033[{code}m{piece}\033[0m" if piece else ""
    lines = []
    for line in text.splitlines():
        match = _TAPE_STMT.fullmatch(line)
        if line.startswith("tape ") or match is None:
            lines.append(_TYPES.sub(lambda m: color("2", m[1]), line))
            continue
        lhs = _TYPES.sub(lambda m: color("2", m[1]), match["lhs"] or "")
        prim = color("1;36" if match["lhs"] else "35", match["prim"])
        lines.append(lhs + prim + match["rest"] + color(_ANSI["comment"], match["loc"] or ""))
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def html(text: str) -> str:
    """``text`` escaped for HTML, each token kind in a ``<span class="...">``: ``k`` keyword,
    ``b`` builtin, ``n`` number, ``s`` string, ``c`` comment, ``o`` operator."""
    return "\n".join(html_lines(text))


def html_lines(text: str) -> list[str]:
    """``html(text)`` one line at a time, each line's spans closed (a docstring that spans
    lines is highlighted on each of them)."""
    lines = [""]
    for kind, piece in spans(text):
        for i, part in enumerate(piece.split("\n")):
            if i:
                lines.append("")
            if part:
                escaped = html_escape.escape(part, quote=False)
                lines[-1] += f'<span class="{_CLASSES[kind]}">{escaped}</span>' \
                    if kind in _CLASSES else escaped
    if text.endswith("\n"):
        lines.pop()
    return lines
