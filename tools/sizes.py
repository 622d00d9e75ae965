"""The biggest modules and functions of the package, in lines (issue 31: none over 600 and 80).

    python tools/sizes.py                  # the five biggest of each, a markdown table
    python tools/sizes.py -n 10            # the ten biggest
    python tools/sizes.py --over           # every module over 600 lines, every function over 80

A module's size is its number of lines; a function's is the lines from its ``def`` to its last
line (a method is named ``Class.method``, a function inside another ``outer.inner``, and an
inner function's lines count in its outer one's too).
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "yota_s2s"
MODULE_LIMIT, FUNCTION_LIMIT = 600, 80


def module_sizes(package: Path = PACKAGE) -> list[tuple[int, str]]:
    """(lines, path) of every module, biggest first."""
    sizes = [(len(path.read_text().splitlines()), path.relative_to(package.parent).as_posix())
             for path in package.rglob("*.py")]
    return sorted(sizes, key=lambda s: (-s[0], s[1]))


def function_sizes(package: Path = PACKAGE) -> list[tuple[int, str]]:
    """(lines, path:line name) of every function and method, biggest first."""
    sizes = []
    for path in package.rglob("*.py"):
        shown = path.relative_to(package.parent).as_posix()
        for node, name in _functions(ast.parse(path.read_text(), str(path)), ""):
            sizes.append((node.end_lineno - node.lineno + 1, f"{shown}:{node.lineno} {name}"))
    return sorted(sizes, key=lambda s: (-s[0], s[1]))


def _functions(tree: ast.AST, prefix: str):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                yield node, name
            yield from _functions(node, name + ".")
        else:
            yield from _functions(node, prefix)


def table(title: str, rows: list[tuple[int, str]]) -> str:
    lines = [f"| {title} | lines |", "|---|---:|"]
    lines += [f"| `{what}` | {n:,} |" for n, what in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="how many of each (default 5)")
    parser.add_argument("--over", action="store_true",
                        help=f"every module over {MODULE_LIMIT} and function over "
                             f"{FUNCTION_LIMIT} lines instead")
    ns = parser.parse_args(argv)
    modules, functions = module_sizes(), function_sizes()
    if ns.over:
        modules = [m for m in modules if m[0] > MODULE_LIMIT]
        functions = [f for f in functions if f[0] > FUNCTION_LIMIT]
    else:
        modules, functions = modules[:ns.n], functions[:ns.n]
    total = sum(n for n, _ in module_sizes())
    print(f"{total:,} lines in {len(module_sizes())} modules\n")
    print(table("module", modules) + "\n")
    print(table("function", functions))


if __name__ == "__main__":
    main()
