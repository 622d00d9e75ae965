"""What a loop's source says about it, before any trial: read from the syntax alone.

``syntax_reason`` is why a ``for`` cannot be a region whatever its values (``break``,
``continue``, ``return`` or ``yield`` in its body, an ``else`` block, an assigned attribute);
``assigned_names`` the names its body binds or updates, the candidates to carry;
``loaded_outside`` the names the function reads elsewhere (a name first bound in the loop
must not be one); ``loop_source`` the text of its iterable, for the region's note.
"""
from __future__ import annotations

import ast

import gast

def loop_source(node: gast.For) -> str:
    """The loop's iterable as written (``range(n)``), for the region's note."""
    try:
        return gast.unparse(node.iter) if hasattr(gast, "unparse") else \
            ast.unparse(gast.gast_to_ast(node.iter))
    except Exception:
        return "the loop"


def _walk_own(nodes, loops: bool = True):
    """The nodes of a block, not entering function definitions (nor loops, with
    ``loops=False``: a ``break`` there is that loop's)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        for child in gast.iter_child_nodes(n):
            if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.AsyncFunctionDef)):
                continue
            if not loops and isinstance(child, (gast.For, gast.While)):
                continue
            stack.append(child)


def syntax_reason(node: gast.For) -> str | None:
    """Why the loop's syntax keeps it from being a region (None: nothing does)."""
    if node.orelse:
        return "the loop has an else block"
    for n in _walk_own(node.body, loops=False):
        if isinstance(n, gast.Break):
            return "break"
        if isinstance(n, gast.Continue):
            return "continue"
    for n in _walk_own(node.body):
        if isinstance(n, gast.Return):
            return "return inside the loop"
        if isinstance(n, (gast.Yield, gast.YieldFrom)):
            return "yield inside the loop"
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            return "global names"
        if isinstance(n, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in targets:
                for sub in gast.walk(t):
                    if isinstance(sub, gast.Attribute) and isinstance(sub.ctx, gast.Store):
                        return "an attribute is assigned in the loop"
    return None


def assigned_names(body: list) -> list[str]:
    """Names the body binds or updates (``x = ...``, ``x += ...``, ``x[i] = ...``), in order."""
    names: dict[str, None] = {}
    for n in _walk_own(body):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            names[n.id] = None
        elif isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
            base = n.value
            while isinstance(base, gast.Subscript):
                base = base.value
            if isinstance(base, gast.Name):
                names[base.id] = None
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Subscript):
            base = n.target.value
            if isinstance(base, gast.Name):
                names[base.id] = None
    return sorted(names)


def loaded_outside(frame, node: gast.For) -> set[str]:
    """Names read in the function outside the loop ``node`` (conservatively: anywhere else)."""
    inside = {id(n) for n in gast.walk(node)}
    return {n.id for n in gast.walk(frame.fn.node)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in inside}
