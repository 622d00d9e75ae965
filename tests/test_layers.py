"""The package's layers: no circle in its import graph, no import of a higher layer.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import``, at
the top of a module or inside a function (an import inside a function hides a dependency from a
reader without removing it). ``from pkg import name`` is an edge to ``pkg.name`` where that is a
module, else to ``pkg``; the parents a dotted import runs implicitly are not edges. The layers
are the table in docs/how-it-works.md ("Layers"), read from there: one source of truth.

``PENDING`` lists today's edges that break either rule while the restructuring of issue 31
removes them: whoever removes an edge removes its entry (an entry whose import is gone fails
the test), and the list ends empty.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "yota_s2s"
DOC = ROOT / "docs" / "how-it-works.md"

# (importer, imported): the edges that still break a rule, and who removes them (none left).
PENDING: set[tuple[str, str]] = set()


# -- the import graph -------------------------------------------------------------------------

def modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(package: Path) -> dict[str, dict[str, int]]:
    """importer -> {imported module: the first line that imports it}, within ``package``."""
    mods = modules(package)
    graph: dict[str, dict[str, int]] = {name: {} for name in mods}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, here, mods):
                if target != name:
                    line = graph[name].get(target, node.lineno)
                    graph[name][target] = min(line, node.lineno)
    return graph


def _targets(node: ast.AST, here: list[str], mods: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = here[:len(here) - node.level + 1] + (node.module.split(".") if node.module else [])
    else:
        base = (node.module or "").split(".")
    source = ".".join(base)
    targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source
               for a in node.names]
    return [t for t in targets if t in mods]


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


# -- the layer table --------------------------------------------------------------------------

def layer_table(text: str) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """(layer -> its module entries, layer -> the layers it may import) from the table under
    ``## Layers``: ``| layer | `a.py`, `pkg/` | x, y |``."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    entries, allowed = {}, {}
    for row in re.findall(r"^\|(.+)\|\s*$", section, re.M)[2:]:
        layer, mods, may = (cell.strip() for cell in row.split("|"))
        entries[layer] = re.findall(r"`([^`]+)`", mods)
        allowed[layer] = set() if may.startswith("nothing") else \
            {w.strip() for w in may.split(",")}
    return entries, allowed


def layer_of(entries: dict[str, list[str]], package: str, names) -> tuple[dict, list[str]]:
    """(module -> its layer, the table's entries that name no module)."""
    owner, unused = {}, []
    for layer, paths in entries.items():
        for path in paths:
            if path == "__init__.py":
                matched = [n for n in names if n == package]
            elif path.endswith("/"):
                dotted = f"{package}.{path.rstrip('/').replace('/', '.')}"
                matched = [n for n in names if n == dotted or n.startswith(dotted + ".")]
            else:
                dotted = f"{package}.{path.removesuffix('.py').replace('/', '.')}"
                matched = [n for n in names if n == dotted]
            if not matched:
                unused.append(path)
            for name in matched:
                owner.setdefault(name, []).append(layer)
    return owner, unused


def upward(graph: dict[str, dict[str, int]], owner: dict[str, str],
           allowed: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The edges from a module to one of a layer its own layer may not import."""
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if a in owner and b in owner and owner[a] != owner[b]
                  and owner[b] not in allowed[owner[a]])


def _where(graph, mods: dict[str, Path], a: str, b: str) -> str:
    return f"{mods[a].relative_to(ROOT).as_posix()}:{graph[a][b]} imports {b}"


# -- the tests --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def package():
    mods = modules(PACKAGE)
    graph = import_graph(PACKAGE)
    entries, allowed = layer_table(DOC.read_text())
    owners, unused = layer_of(entries, PACKAGE.name, mods)
    return mods, graph, entries, allowed, owners, unused


def test_every_module_is_in_one_layer_of_the_table(package):
    mods, _, entries, allowed, owners, unused = package
    assert not unused, f"docs/how-it-works.md (Layers) names modules that do not exist: {unused}"
    missing = sorted(set(mods) - set(owners))
    assert not missing, f"modules in no layer of docs/how-it-works.md (Layers): {missing}"
    twice = {m: ls for m, ls in owners.items() if len(ls) > 1}
    assert not twice, f"modules in more than one layer: {twice}"
    assert set(allowed) == set(entries)
    unknown = {layer: may - set(entries) for layer, may in allowed.items() if may - set(entries)}
    assert not unknown, f"layers that may import layers the table does not have: {unknown}"
    layers = {layer: dict.fromkeys(may, 0) for layer, may in allowed.items()}
    assert not circles(layers), "the layers' 'may import' column goes round in a circle"


def test_no_module_imports_a_higher_layer(package):
    mods, graph, _, allowed, owners, _ = package
    owner = {m: ls[0] for m, ls in owners.items()}
    wrong = [(a, b) for a, b in upward(graph, owner, allowed) if (a, b) not in PENDING]

    def may(layer: str) -> str:
        return ", ".join(sorted(allowed[layer])) or "nothing"
    assert not wrong, "imports of a higher layer (docs/how-it-works.md, Layers):\n" + "\n".join(
        f"  {_where(graph, mods, a, b)}: {owner[a]} may import {may(owner[a])}, not {owner[b]}"
        for a, b in wrong) + "\nMove what is imported down, or pass it in from above."


def test_the_import_graph_has_no_circle(package):
    mods, graph, *_ = package
    kept = {a: {b: line for b, line in targets.items() if (a, b) not in PENDING}
            for a, targets in graph.items()}
    found = circles(kept)
    assert not found, "circles in the import graph (one way round each):\n" + "\n".join(
        f"  {', '.join(c)}; one way round:\n" + "\n".join(
            f"    {_where(kept, mods, a, b)}" for a, b in zip(path, path[1:]))
        for c in found for path in [shortest_circle(kept, c)]) + \
        "\nInvert one import of each: a table the higher module fills, or a parameter."


def shortest_circle(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """A shortest way from the component's first module round to itself (breadth first)."""
    start, inside = component[0], set(component)
    came = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while came[path[-1]] is not None:
                        path.append(came[path[-1]])
                    return [start] + path[::-1][1:] + [start] if v != start else [start, start]
                if w in inside and w not in came:
                    came[w] = v
                    following.append(w)
        frontier = following
    return [start]


def test_every_pending_edge_is_still_there(package):
    """An import removed takes its entry out of ``PENDING`` with it."""
    _, graph, *_ = package
    gone = sorted(e for e in PENDING if e[1] not in graph.get(e[0], {}))
    assert not gone, f"imports gone: remove them from PENDING in tests/test_layers.py: {gone}"


def test_the_checks_find_a_circle_and_an_upward_import(tmp_path):
    """The graph, the circles and the layer rule on a small package of four modules."""
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .top import run\n")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from . import b\n")
    (pkg / "low" / "b.py").write_text("def f():\n    from .a import g\n    from .. import top\n")
    (pkg / "top.py").write_text("import pkg.low.a\nfrom .low import b as _b\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": {"pkg.top": 1}, "pkg.low": {}, "pkg.low.a": {"pkg.low.b": 1},
                     "pkg.low.b": {"pkg.low.a": 2, "pkg.top": 3},
                     "pkg.top": {"pkg.low.a": 1, "pkg.low.b": 2}}
    assert circles(graph) == [["pkg.low.a", "pkg.low.b", "pkg.top"]]
    assert shortest_circle(graph, ["pkg.low.a", "pkg.low.b", "pkg.top"]) == \
        ["pkg.low.a", "pkg.low.b", "pkg.low.a"]
    assert shortest_circle(graph, ["pkg.top", "pkg.low.a", "pkg.low.b"]) == \
        ["pkg.top", "pkg.low.b", "pkg.top"]
    entries, allowed = layer_table("# t\n\n## Layers\n\n| layer | modules | may import |\n"
                                   "|---|---|---|\n| low | `low/` | nothing |\n"
                                   "| top | `__init__.py`, `top.py` | low |\n\n## Next\n")
    owners, unused = layer_of(entries, "pkg", graph)
    assert unused == [] and allowed == {"low": set(), "top": {"low"}}
    owner = {m: ls[0] for m, ls in owners.items()}
    assert owner == {"pkg": "top", "pkg.top": "top", "pkg.low": "low", "pkg.low.a": "low",
                     "pkg.low.b": "low"}
    assert upward(graph, owner, allowed) == [("pkg.low.b", "pkg.top")]


# -- sizes: a module a reader can hold in mind -----------------------------------------------

def _sizes():
    spec = importlib.util.spec_from_file_location("sizes", ROOT / "tools" / "sizes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_module_over_600_lines_and_no_function_over_80():
    """tools/sizes.py's limits (issue 31): split a module or function that grows past them
    into parts that each do one job, not into helpers that only move lines."""
    sizes = _sizes()
    modules = [m for m in sizes.module_sizes(PACKAGE) if m[0] > sizes.MODULE_LIMIT]
    functions = [f for f in sizes.function_sizes(PACKAGE) if f[0] > sizes.FUNCTION_LIMIT]
    assert (modules, functions) == ([], [])


def test_the_sizes_are_counted_in_lines_from_def_to_the_last_line(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text("class A:\n    def f(self):\n        def g():\n            pass\n"
                              "        return g\n\n\ndef h():\n    return 1\n")
    sizes = _sizes()
    assert sizes.module_sizes(pkg) == [(9, "pkg/m.py")]
    assert sizes.function_sizes(pkg) == [(4, "pkg/m.py:2 A.f"), (2, "pkg/m.py:3 A.f.g"),
                                         (2, "pkg/m.py:8 h")]
