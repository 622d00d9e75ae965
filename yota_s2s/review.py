"""The review page: one self-contained HTML file per compiled gradient function.

Each row is a line of the function's source, beside the forward statements and the backward
statements generated from it, in the review form (the plain form, with the tape's names); each backward statement names the rule that produced it (its
``Stmt.rule``, and those of the temporaries written inline into it). Functions inlined into
the compiled one follow as sections of their own. The statements are the generated module's
own (``codegen.module.Written``: the blocks, names and returns of the function as written),
so the page and the file agree; the whole module closes the page, and a toggle (``<details>``)
shows the buffered form. CSS is inline, and there are
no scripts, fonts or links to fetch: the page opens offline, from a CI artifact or a mail
attachment.
"""
from __future__ import annotations

import ast
import linecache
import os
from dataclasses import dataclass, field
from typing import Sequence

from .codegen.module import Written, function_name, signature_lines
from .codegen.render import unparse
from .highlight import html as code_html
from .highlight import html_lines
from .ir.tape import Tape
from .text import html as escape
from .version import __version__

Key = tuple[str, int, tuple]     # (file, line, SourceLoc.call: which call of an inlined function)


@dataclass
class _Code:
    forward: list[str] = field(default_factory=list)
    backward: list[tuple[str, list[str]]] = field(default_factory=list)   # (statement, rules)


def review_page(written: Written, module_text: str, device: str = "cpu",
                notes: Sequence[str] = (), buffered: str | None = None) -> str:
    """The page for one function of a gradient module (``module_text``, the plain form: the
    review form); ``notes`` are more lines for the page's head (the model file's hash,
    statement counts); ``buffered``: the buffered form's module, behind a toggle."""
    tape = written.tape
    code = _code_by_line(written)
    sections = _sections(tape, code)
    title = f"Gradient of {tape.name}"
    where = f" <small>{escape(tape.loc.short)}</small>" if tape.loc else ""
    facts = "".join(f"<li>{escape(line)}</li>" for line in
                    signature_lines(tape, device, written.returns) + list(notes))
    body = "".join(_section_html(name, lines, code) for name, lines in sections)
    return _PAGE.format(
        title=escape(f"{title} — yota-s2s review"), heading=escape(title) + where,
        facts=facts, sections=body, fname=escape(function_name(tape)),
        module=code_html(module_text), version=__version__,
        buffered="" if buffered is None else _BUFFERED.format(module=code_html(buffered)))


def _code_by_line(written: Written) -> dict[Key | None, _Code]:
    code: dict[Key | None, _Code] = {}
    emitter = written.emitter
    for block in written.blocks:
        key = (block.loc.file, block.loc.line, block.loc.call) if block.loc else None
        entry = code.setdefault(key, _Code())
        for stmt, nodes in block.parts():
            text = "\n".join(unparse(node) for node in nodes)
            if block.section == "backward":
                entry.backward.append((text, emitter.rules_of(stmt)))
            else:
                entry.forward.append(text)
    return code


def _sections(tape: Tape, code: dict[Key | None, _Code]) -> list[tuple[str, list[Key]]]:
    """(heading, source lines) for the compiled function, then each call of a function inlined
    into it, in the order its code appears: a helper called three times has three sections,
    each beside its own statements."""
    trees: dict[str, ast.Module] = {}
    sections: dict[tuple[str, int, int, tuple], str] = {}
    if tape.loc is not None:
        sections[(*_function_lines(tape.loc.file, tape.loc.line, trees)[:3], ())] = tape.name
    for key in code:
        if key is None or any(f == key[0] and a <= key[1] <= b and c == key[2]
                              for f, a, b, c in sections):
            continue
        file, first, last, name = _function_lines(key[0], key[1], trees)
        site = f" at {key[2][1]}" if key[2] else ""
        sections.setdefault((file, first, last, key[2]),
                            f"{name or 'module level'} (inlined{site})")
    headings = [f"{name} · {os.path.basename(f)}:{a}-{b}"
                for (f, a, b, _), name in sections.items()]
    out = []
    for (heading, ((f, a, b, call), _)) in zip(headings, sections.items()):
        if headings.count(heading) > 1:       # one site reached twice (a loop, f(x) + f(y))
            heading += f" · call {headings[:len(out) + 1].count(heading)}"
        out.append((heading, [(f, n, call) for n in range(a, b + 1)]))
    if None in code:
        out.append(("without a source line", [None]))
    return out


def _function_lines(file: str, line: int, trees: dict[str, ast.Module]) \
        -> tuple[str, int, int, str | None]:
    """(file, first line with decorators, last line, name) of the innermost def around
    ``line``; the line alone where there is none."""
    if file not in trees:
        try:
            trees[file] = ast.parse("".join(linecache.getlines(file)))
        except SyntaxError:
            trees[file] = ast.Module(body=[], type_ignores=[])
    best = (file, line, line, None)
    for node in ast.walk(trees[file]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno) and \
                (best[3] is None or node.lineno > best[1]):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            best = (file, first, node.end_lineno or node.lineno, node.name)
    return best


# -- HTML ------------------------------------------------------------------------------------

def _section_html(heading: str, keys: list[Key | None], code: dict[Key | None, _Code]) -> str:
    source = [linecache.getline(k[0], k[1]).rstrip("\n") if k else "" for k in keys]
    highlighted = html_lines("\n".join(source)) if any(source) else [""] * len(keys)
    rows = []
    for key, text in zip(keys, highlighted):
        entry = code.get(key, _Code())
        forward = "".join(f"<pre>{code_html(s)}</pre>" for s in entry.forward)
        backward = "".join(f'<div class="bw"><pre>{code_html(s)}</pre><span class="rule">'
                           f'{"<br>".join(map(escape, r))}</span></div>'
                           for s, r in entry.backward)
        css = ' class="gen"' if entry.forward or entry.backward else ""
        number = key[1] if key else ""
        rows.append(f'<tr{css}><td class="ln">{number}</td><td class="src"><pre>{text}</pre></td>'
                    f"<td>{forward}</td><td>{backward}</td></tr>")
    return (f'<h2>{escape(heading)}</h2>\n<table>\n<colgroup><col class="c-ln"><col '
            f'class="c-src"><col class="c-fw"><col class="c-bw"></colgroup>\n<thead><tr><th></th>'
            f"<th>source</th><th>forward</th><th>backward · rule</th></tr></thead>\n<tbody>\n"
            + "\n".join(rows) + "\n</tbody>\n</table>\n")


_BUFFERED = """<details class="buffered">
<summary>The buffered form (what ys.grad runs by default: the same values, call after call,
written for speed; one name may hold several values, so review the form above)</summary>
<pre>{module}</pre>
</details>
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1f21;
        background: #fff; margin: 1.5em 2em; }}
h1 {{ font-size: 1.5em; margin: 0 0 .3em; }}
h1 small {{ color: #777; font-weight: normal; font-size: .6em; }}
h2 {{ font-size: 1.1em; margin: 1.6em 0 .4em; }}
ul.facts {{ margin: 0; padding-left: 1.2em; color: #444; }}
table {{ border-collapse: collapse; width: 100%; table-layout: fixed; }}
col.c-ln {{ width: 3em; }} col.c-src {{ width: 25%; }} col.c-fw {{ width: 22%; }}
th {{ text-align: left; font-weight: 600; border-bottom: 2px solid #ccc; padding: 4px 8px; }}
td {{ vertical-align: top; padding: 2px 8px; border-bottom: 1px solid #eee; }}
tr.gen td {{ background: #f7f9fc; }}
tr:not(.gen) td.src {{ color: #888; }}
td.ln {{ color: #999; text-align: right; font: 12px/1.6 ui-monospace, monospace; }}
pre {{ margin: 0; font: 12.5px/1.6 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
       white-space: pre-wrap; overflow-wrap: anywhere; }}
div.bw {{ display: grid; grid-template-columns: minmax(0, 1fr) minmax(16em, 50%); gap: 1em; }}
span.rule {{ color: #8a6d3b; font: 11px/1.6 ui-monospace, monospace; overflow-wrap: break-word; }}
details {{ margin-top: 2em; }} summary {{ cursor: pointer; font-weight: 600; }}
details pre {{ background: #fafafa; border: 1px solid #eee; padding: 1em; }}
.k {{ color: #8959a8; font-weight: 600; }} .b {{ color: #3e999f; }} .n {{ color: #c76b29; }}
.s {{ color: #718c00; }} .c {{ color: #8e908c; font-style: italic; }} .o {{ color: #555; }}
footer {{ margin-top: 2em; color: #999; font-size: 12px; }}
</style>
</head>
<body>
<h1>{heading}</h1>
<ul class="facts">{facts}</ul>
{sections}<details>
<summary>The generated module ({fname})</summary>
<pre>{module}</pre>
</details>
{buffered}<footer>Written by yota-s2s {version} review. Each row: a source line, the statements
generated from it, and the rule behind each backward statement.</footer>
</body>
</html>
"""
