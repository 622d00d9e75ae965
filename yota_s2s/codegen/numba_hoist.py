"""The numba printer's arrays made once: a step's new arrays allocated before its loop.

A compiled loop's step makes its arrays anew (``d_1 = xp.empty((15, 2))``, the loop nests'
results; ``r0 = xp.zeros((15,))``, a sum's): in numba about 50 ns each, most of a step over a
few dozen numbers (the spring chain's 500 steps made 3,500 arrays: two thirds of its forward's
time). ``hoisted`` makes each such array once, before the loop, where that is the same
computation::

    d_1 = xp.empty((15, 2))                  # before the loop
    x_0 = xp.empty((16, 2))
    x_0b = xp.empty((16, 2))
    for _ in range(500):
        x_0, x_0b = x_0b, x_0                # made in the step before last: x holds the last
        for i0 in range(16): ...             # x_0[i0, i1] = x[i0, i1] + ...
        x = x_0
        ...                                  # d_1's elements written again (a sum's: its
                                             # zeros written by a loop nest first)

The same computation: no name may hold a step's array when a later step writes it again. The
array's name and the names it is given by name (``x = x_0``, its *aliases*), each bound once a
step at the step's top level, hold it; the array is read otherwise only by element, or by an
operation that makes a new value of it (arithmetic, a ufunc, ``@``, a sum, a copy into another
array: ``S[t] = x``); never bound to another name, passed to a call that may return it or a
view of it, or sliced into a name. Then at the step's allocation the step before's array is
held only by aliases not yet bound again in this step: an array no alias reads before it is
bound again is one buffer (the step writes over the step before's); an array an alias reads
before it is bound again (``x``, carried to the next step) is two buffers, swapped each step.
Any array that does not satisfy all of this is made in its step, as before.

A sum's zeros made once are written again each step by a loop nest (``for i0 in range(15):
r1[i0] = 0.0``), not by ``r1.fill(0.0)``: numba calls ``fill`` as a function of its own, and the
spring chain's forward spent about a fifth of its time in its two calls a step (measured: 94 us
with ``fill``, 75 us with the nests; ``r1[:] = 0.0``, 98 us).
"""
from __future__ import annotations

import ast

from .numba_shapes import BINARY, UNARY, bound_names, xp_name
from ..text import comment
from .render import Comment

# calls whose result is a new value, never their argument or a view of it
_FRESH = UNARY | BINARY | {"zeros_like", "empty_like", "ones_like", "sum", "dot", "outer",
                           "where", "matmul", "multiply", "add", "subtract", "divide",
                           "power", "prod", "mean", "max", "min", "sign", "floor", "ceil",
                           "isnan", "isfinite", "array"}
_FRESH_METHODS = {"copy", "sum", "fill", "mean", "prod", "max", "min", "dot", "any", "all"}
_FRESH_NAMES = {"range", "len", "int", "float", "abs", "min", "max"}


def hoisted(nodes: list[ast.stmt], params: list[str], index: list[str] = ()) -> list[ast.stmt]:
    """``nodes`` (a compiled function's statements) with the arrays each top-level ``for``
    loop's step makes moved before the loop, where that is safe (above); ``index``: the loop
    nests' index names (numba_nests.loop_nests), which the zeros' nests use too."""
    used = {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}
    index = list(index)
    out: list[ast.stmt] = []
    bound = set(params)
    for node in nodes:
        if isinstance(node, ast.For) and not isinstance(node, Comment):
            before, loop = _hoist(node, bound, used, index)
            out += before + [loop]
        else:
            out.append(node)
        bound |= bound_names([node])
    return out


def _hoist(loop: ast.For, outside: set[str], used: set[str],
           index: list[str]) -> tuple[list[ast.stmt], ast.For]:
    body = list(loop.body)
    before: list[ast.stmt] = []
    for j, stmt in enumerate(loop.body):
        made = _allocation(stmt)
        if made is None:
            continue
        name, shape, how = made
        carried = _carried(name, j, loop.body)
        if carried is None:
            continue
        # a name the function holds before the loop keeps that value there: its buffers are
        # named apart (name = name_a in the step)
        own = _fresh(f"{name}_a", used) if name in outside else name
        before.append(ast.Assign([ast.Name(own)], _empty(shape), lineno=0))
        step: list[ast.stmt] = []
        if carried:
            other = _fresh(f"{name}b" if own == name else f"{name}_b", used)
            before.append(ast.Assign([ast.Name(other)], _empty(shape), lineno=0))
            step.append(ast.Assign([ast.Tuple([ast.Name(own), ast.Name(other)])],
                                   ast.Tuple([ast.Name(other), ast.Name(own)]), lineno=0))
        if own != name:
            step.append(ast.Assign([ast.Name(name)], ast.Name(own), lineno=0))
        if how == "zeros":
            step.append(_zeroed(name, shape, index, used))
        body[j] = step
    if not before:
        return [], loop
    flat = [s for item in body for s in (item if isinstance(item, list) else [item])]
    head = Comment(comment("numba: the step's arrays, made once (an array the next step reads: "
                           "two, swapped)"))
    return [head] + before, ast.For(loop.target, loop.iter, flat, [])


def _allocation(stmt: ast.stmt) -> tuple[str, tuple, str] | None:
    """``name = xp.empty((m, n))`` or ``xp.zeros(...)`` (as numba_nests writes them): (name,
    shape, "empty" or "zeros")."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call)):
        return None
    how = xp_name(stmt.value.func)
    call = stmt.value
    if how not in ("empty", "zeros") or len(call.args) != 1 or call.keywords \
            or not isinstance(call.args[0], ast.Tuple):
        return None
    dims = call.args[0].elts
    if not dims or not all(isinstance(d, ast.Constant) and type(d.value) is int for d in dims):
        return None
    return stmt.targets[0].id, tuple(d.value for d in dims), how


def _carried(name: str, j: int, body: list[ast.stmt]) -> bool | None:
    """Whether the array ``body[j]`` makes is read by the next step (two buffers, swapped), or
    None where it cannot be made before the loop (above)."""
    if name in bound_names(body[:j] + body[j + 1:]):
        return None
    found = [(s.targets[0].id, k) for k, s in enumerate(body) if _alias(s, name)]
    aliases = {name: j, **dict(found)}
    if len(aliases) != 1 + len(found):
        return None                                  # an alias bound twice from the array
    checker = _Reads(set(aliases))
    skip = {j} | {k for _, k in found}
    if not all(checker.statement(stmt) for k, stmt in enumerate(body) if k not in skip):
        return None
    # read before it is bound again: the step before's array, while this step's is written
    return any(alias in _read(stmt) and k < at for k, stmt in enumerate(body)
               for alias, at in aliases.items())


def _alias(stmt: ast.stmt, name: str) -> bool:
    """``stmt`` is ``other = name`` at the step's top level."""
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
        and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) \
        and stmt.value.id == name and stmt.targets[0].id != name


class _Reads:
    """Whether a statement reads the names ``held`` only by element or into a new value."""

    def __init__(self, held: set[str]):
        self.held = held

    def statement(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, Comment):
            return True
        if isinstance(stmt, ast.Assign):
            copies = all(isinstance(t, ast.Subscript) for t in stmt.targets)
            return all(self._target(t) for t in stmt.targets) and self.expr(stmt.value, copies)
        if isinstance(stmt, ast.AugAssign):
            return self._target(stmt.target) and self.expr(stmt.value, True)
        if isinstance(stmt, ast.Expr):
            return self.expr(stmt.value, True)
        if isinstance(stmt, (ast.For, ast.While, ast.If)):
            test = stmt.iter if isinstance(stmt, ast.For) else stmt.test
            return self.expr(test, True) and all(self.statement(s) for s in
                                                 stmt.body + stmt.orelse)
        return not ({n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} & self.held)

    def _target(self, t: ast.expr) -> bool:
        if isinstance(t, ast.Name):
            return True
        if isinstance(t, ast.Subscript):             # written in place, element or slice
            return self.expr(t.value, True) and self.expr(t.slice, True)
        if isinstance(t, ast.Tuple):
            return all(self._target(e) for e in t.elts)
        return self.expr(t, False)

    def expr(self, e: ast.expr, consumed: bool) -> bool:
        """``e`` reads the names held only by element or into a new value; ``consumed``: ``e``'s
        own value is used to make another (not kept, as a name's or a call's value is)."""
        if isinstance(e, ast.Name):
            return consumed or e.id not in self.held
        if isinstance(e, ast.Subscript):
            return self.expr(e.value, consumed) and self.expr(e.slice, True)
        if isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
            return all(self.expr(c, True) for c in ast.iter_child_nodes(e)
                       if isinstance(c, ast.expr))
        if isinstance(e, ast.IfExp):
            return self.expr(e.test, True) and self.expr(e.body, consumed) \
                and self.expr(e.orelse, consumed)
        if isinstance(e, ast.Attribute):
            return self.expr(e.value, consumed)
        if isinstance(e, ast.Call):
            fresh = self._fresh_call(e.func) and all(k.arg != "out" for k in e.keywords)
            if isinstance(e.func, ast.Attribute) and xp_name(e.func) is None:
                head = self.expr(e.func.value, fresh)
            else:
                head = self.expr(e.func, True)
            return head and all(self.expr(a, fresh) for a in e.args) \
                and all(self.expr(k.value, fresh) for k in e.keywords)
        if isinstance(e, (ast.Tuple, ast.List)):
            return all(self.expr(c, consumed) for c in e.elts)
        if isinstance(e, (ast.Constant, ast.Slice)):
            return all(self.expr(c, True) for c in ast.iter_child_nodes(e)
                       if isinstance(c, ast.expr))
        return not ({n.id for n in ast.walk(e) if isinstance(n, ast.Name)} & self.held)

    @staticmethod
    def _fresh_call(func: ast.expr) -> bool:
        name = xp_name(func)
        if name is not None:
            return name in _FRESH
        if isinstance(func, ast.Name):
            return func.id in _FRESH_NAMES or func.id.startswith("_pad")
        return isinstance(func, ast.Attribute) and func.attr in _FRESH_METHODS


def _read(stmt: ast.stmt) -> set[str]:
    """The names ``stmt`` reads (all it holds but the names an assignment or a loop binds)."""
    stores = set()
    for n in ast.walk(stmt):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] \
            if isinstance(n, ast.For) else []
        for t in targets:
            stores |= {id(e) for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                       if isinstance(e, ast.Name)}
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and id(n) not in stores}


def _zeroed(name: str, shape: tuple, index: list[str], used: set[str]) -> ast.stmt:
    """``name``'s elements set to 0.0 by a loop nest over ``shape`` (a dimension of 1: index 0),
    its loops named as the nests' (``index``, grown by names nothing else uses)."""
    loops, at = [], []
    for n in shape:
        if n == 1:
            at.append(ast.Constant(0))
            continue
        if len(loops) == len(index):
            index.append(_fresh(f"i{len(index)}", used))
        loops.append((index[len(loops)], n))
        at.append(ast.Name(loops[-1][0]))
    key = at[0] if len(at) == 1 else ast.Tuple(at)
    nest: ast.stmt = ast.Assign([ast.Subscript(ast.Name(name), key)], ast.Constant(0.0), lineno=0)
    for i, n in reversed(loops):
        nest = ast.For(ast.Name(i), ast.Call(ast.Name("range"), [ast.Constant(n)], []), [nest], [])
    return nest


def _empty(shape: tuple) -> ast.expr:
    return ast.Call(ast.Attribute(ast.Name("xp"), "empty"),
                    [ast.Tuple([ast.Constant(n) for n in shape])], [])


def _fresh(name: str, used: set[str]) -> str:
    k, out = 0, name
    while out in used:
        k += 1
        out = f"{name}{k}"
    used.add(out)
    return out
