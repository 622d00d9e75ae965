"""A loop stack's rows held as a list (buffered form, on a CPU): region_slots.py ``held_stacks``
gives each stack a loop makes a work array of its own, ``H = buf2``; each ``H[t + 1]`` a step
writes or reads makes a new view of a row (a fraction of a microsecond, several a trip). The
rows of such a work array are views made once per thread with the work arrays (workspace.py
``ROW_LISTS``, ``_work_arrays()``), and a row reached by a Python int (the loop's ``t``,
``t + 1``, a name bound to one) is read from that list::

    h_2 = xp.tanh(t3, out=H_rows[t + 1])      # was out=H[t + 1]
    h_prev = H_rows[t]                        # was H[t]
    H_rows[t6][...] = dh                      # was H[t6] = dh

The array stays for what reads it whole or by slices (``xp.matmul(_ONES_20, H[1:21], ...)``).
A view is the array's row as long as the array is the same object: a work array is made once
per thread and never rebound, and the stack's name is bound once, to it (else nothing here).
"""
from __future__ import annotations

import ast

from .emit import Emitter

_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def held_rows(em: Emitter, blocks: list) -> None:
    """Rewrite the function's statements (its ``blocks``, render.py, changed in place) to read
    and write held stacks' rows from lists; record the lists as ``em.row_lists`` (the work
    array's position among the function's, the list's name)."""
    em.row_lists = []
    stacks = getattr(em, "stack_slots", None)
    if not em.fast or em.device != "cpu" or not stacks:
        return
    nodes = []
    for block in blocks:
        nodes.append(block.stmts)
        chain = block.loop          # a cache-blocked chain (blocks.py)
        if chain is not None:
            nodes += [chain.before, chain.notes, [chain.loop], chain.after]
            nodes += [part.stmts for part in chain.inner]
    every = [n for stmts in nodes for s in stmts for n in ast.walk(s)]
    bound: dict[str, list] = {}
    for node in every:
        for name, value in _bindings(node):
            bound.setdefault(name, []).append(value)
    used = {n.id for n in every if isinstance(n, ast.Name)}
    held = [name for k, name in enumerate(em.slot_names) if k not in em.memory.lent]
    for k in sorted(stacks):
        slot = em.slot_names[k]
        aliases = {slot} if slot not in bound else set()
        aliases |= {name for name, values in bound.items() if len(values) == 1
                    and isinstance(values[0], ast.Name) and values[0].id == slot}
        rows = _Rows(aliases, lambda key: _is_int(key, bound, set()))
        for stmts in nodes:
            for s in stmts:
                rows.count(s)
        if not rows.looped:
            continue
        base = f"{min(aliases - {slot}, default=slot)}_rows"
        name, n = base, 1
        while name in used or name in em.names.taken:
            n += 1
            name = f"{base}{n}"
        used.add(name)
        rows.name = name
        for stmts in nodes:
            stmts[:] = [rows.visit(s) for s in stmts]
        em.row_lists.append((held.index(slot), name))


def _bindings(node: ast.AST):
    """(name, the value bound: an expression, "int" for a ``range`` loop's target, None for
    anything else) for each name ``node`` binds."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value
            else:
                yield from ((name, None) for name in _names(target))
    elif isinstance(node, (ast.For, ast.comprehension)):
        ranged = isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) \
            and node.iter.func.id == "range" and isinstance(node.target, ast.Name)
        yield from ((name, "int" if ranged else None) for name in _names(node.target))
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.withitem)):
        target = node.optional_vars if isinstance(node, ast.withitem) else node.target
        yield from ((name, None) for name in _names(target))
    elif isinstance(node, (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal)):
        yield "", None      # (none in a gradient function: then nothing is certain)


def _names(target) -> list[str]:
    """The names an assignment to ``target`` binds (none for ``H[t] = ...``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for elt in target.elts for name in _names(elt)]
    return _names(target.value) if isinstance(target, ast.Starred) else []


def _is_int(expr: ast.expr, bound: dict, seen: set) -> bool:
    """Is ``expr`` a Python int, for sure: an int constant, a name every binding of which is
    one (a ``range`` loop's target, ``t6 = t + 1``), ``+ - * // %`` of those?"""
    if "" in bound:
        return False
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int
    if isinstance(expr, ast.Name):
        if expr.id in seen or expr.id not in bound:
            return False
        seen = seen | {expr.id}
        return all(v == "int" or isinstance(v, ast.expr) and _is_int(v, bound, seen)
                   for v in bound[expr.id])
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, _INT_OPS) and _is_int(expr.left, bound, seen) \
            and _is_int(expr.right, bound, seen)
    if isinstance(expr, ast.UnaryOp):
        return isinstance(expr.op, (ast.USub, ast.UAdd)) and _is_int(expr.operand, bound, seen)
    return False


class _Rows(ast.NodeTransformer):
    """``H[i]`` (``H`` one of ``aliases``, ``i`` an int) -> ``H_rows[i]``, written
    ``H_rows[i][...] = value``; ``count`` first says whether any is in a loop (``looped``)."""

    def __init__(self, aliases: set[str], is_int):
        self.aliases, self.is_int, self.looped, self.name = aliases, is_int, False, ""

    def _row(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
            and node.value.id in self.aliases and self.is_int(node.slice)

    def count(self, stmt: ast.stmt) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.While)) and any(
                    self._row(n) for s in node.body for n in ast.walk(s)):
                self.looped = True

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if not self._row(node):
            return self.generic_visit(node)
        return ast.Subscript(ast.Name(self.name, ast.Load()), self.visit(node.slice), ast.Load())

    def _target(self, node: ast.expr) -> ast.expr:
        """A target: a row written whole, ``H_rows[t][...]``."""
        if isinstance(node, (ast.Tuple, ast.List)):
            node.elts = [self._target(elt) for elt in node.elts]
            return node
        if self._row(node):
            return ast.Subscript(self.visit(node), ast.Constant(Ellipsis), ast.Store())
        return self.visit(node)

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        node.targets = [self._target(t) for t in node.targets]
        node.value = self.visit(node.value)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        node.target, node.value = self._target(node.target), self.visit(node.value)
        return node
