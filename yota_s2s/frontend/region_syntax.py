"""What a loop's source says about it, before any trial: read from the syntax alone.

``syntax_reason`` is why a ``for`` cannot be a region whatever its values (``break``,
``continue``, ``return`` or ``yield`` in its body, an ``else`` block, an assigned attribute);
``assigned_names`` the names its body binds or updates, the candidates to carry;
``loaded_outside`` the names the function reads elsewhere (a name first bound in the loop
must not be one); ``read_after`` the names it may read after a statement before binding them
again (what an ``if``'s arms must both bind); ``loop_source`` the text of its iterable, for the
region's note.
"""
from __future__ import annotations

import ast
import functools

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


def read_after(frame, node: gast.stmt) -> set[str]:
    """Names the function may read after the statement ``node`` before it binds them again:
    on any path from the end of ``node`` (the statements after it in its block, then in the
    blocks around it; a loop around it runs its body again). Where ``node`` is not one of the
    function's own statements (a rewrite: exits.py, returns.py), every name read outside it
    (``loaded_outside``)."""
    found = _read_after(frame.fn.node, node)
    return set(found) if found is not None else loaded_outside(frame, node)


@functools.lru_cache(maxsize=None)
def _read_after(fn: gast.AST, node: gast.stmt) -> frozenset | None:
    path = _path(getattr(fn, "body", None), node, None)
    if path is None:
        return None
    reads: set[str] = set()
    bound: frozenset | None = frozenset()
    for block, k, owner in reversed(path):      # from the innermost block out
        bound = _reads(block[k + 1:], reads, bound)
        if isinstance(owner, (gast.For, gast.While)):
            _loads(owner.test if isinstance(owner, gast.While) else owner.iter, reads, bound)
            _reads(owner.body, reads, bound)            # the next trip
        if bound is None:       # every path returned
            break
    return frozenset(reads)


def _path(block, node, owner) -> list | None:
    """The blocks from the function's down to the one holding ``node``: (block, index of the
    statement there, the statement owning the block); None where it is not found, or lies in
    a ``try`` or ``with`` (not followed)."""
    if not isinstance(block, list):
        return None
    for k, s in enumerate(block):
        if s is node:
            return [(block, k, owner)]
        if isinstance(s, (gast.If, gast.For, gast.While)):
            for inner in (s.body, s.orelse):
                found = _path(inner, node, s)
                if found is not None:
                    return [(block, k, owner)] + found
    return None


def _reads(stmts: list, reads: set, bound: frozenset | None) -> frozenset | None:
    """Add to ``reads`` the names ``stmts`` may read before binding them (``bound``: bound
    already); the names bound after them on every path (None: no path goes on)."""
    for s in stmts:
        if bound is None:
            return None
        if isinstance(s, gast.If):
            _loads(s.test, reads, bound)
            a, b = _reads(s.body, reads, bound), _reads(s.orelse, reads, bound)
            bound = b if a is None else a if b is None else a & b
        elif isinstance(s, (gast.For, gast.While)):
            _loads(s.test if isinstance(s, gast.While) else s.iter, reads, bound)
            inner = bound | _stored(s.target) if isinstance(s, gast.For) else bound
            _reads(s.body, reads, inner)
            _reads(s.orelse, reads, bound)          # the body may not run: binds nothing
        elif isinstance(s, gast.Return):
            _loads(s, reads, bound)
            return None
        elif isinstance(s, (gast.Break, gast.Continue)):
            return bound
        elif isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = s.targets if isinstance(s, gast.Assign) else [s.target]
            _loads(s.value, reads, bound)
            for t in targets:
                if isinstance(s, gast.AugAssign) or not isinstance(t, (gast.Name, gast.Tuple,
                                                                         gast.List)):
                    _loads(t, reads, bound, stores=True)
            bound = bound | frozenset().union(*(_stored(t) for t in targets))
        else:
            _loads(s, reads, bound, stores=True)     # with, try, a call: every name it names
    return bound


def _stored(target: gast.AST) -> frozenset:
    """The names an assignment's target binds (``x``, ``a, b``; not ``x[i]``)."""
    if isinstance(target, gast.Name):
        return frozenset((target.id,))
    if isinstance(target, (gast.Tuple, gast.List)):
        return frozenset().union(*(_stored(e) for e in target.elts))
    return frozenset()


def _loads(node, reads: set, bound: frozenset, stores: bool = False) -> None:
    """The names ``node`` reads (also those it stores into, with ``stores``: ``x[i] = v``
    and ``x += v`` need ``x``), that are not ``bound``."""
    if node is None:
        return
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and (stores or isinstance(n.ctx, gast.Load)) \
                and n.id not in bound:
            reads.add(n.id)
