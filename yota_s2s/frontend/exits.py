"""``break`` and ``continue`` of a loop body written as structured code (issue 33), so that a
loop that leaves on data can be a while statement (whiles.py) or a region, its exits
branches (branches.py).

``lower(body, flag)`` gives the body without its own ``break`` and ``continue``:

- the statements after an ``if`` one arm of which always leaves move into the other arm
  (``if c: continue`` then ``B`` is ``if c: pass else: B``; so is ``if c: X; break``, its
  ``break`` made ``flag = True``), and on into the arm of an ``if`` there that does not always
  leave (an ``elif`` chain);
- ``continue`` is then nothing: the trip ends where its arm ends;
- ``break`` sets ``flag`` (``done = True``), which the loop's condition reads
  (``while C and not done``).

An ``if`` neither arm of which always leaves can have no statements after it where an arm
leaves on some paths (they would be written twice); that, an exit inside ``try`` or ``with``,
or a ``break`` where no flag is given, cannot be lowered (None: the loop is unrolled on the
example, a guard per test, as before).
The statements kept are the user's own nodes, with their lines; a new ``if`` has the line of
the one it replaces, ``flag = True`` the line of its ``break``.

``single_exit(block, result)`` does the same with a function's ``return``: a block that
always returns (``if c: return E`` then ``B; return G``) as one ``if`` whose arms bind
``result`` (``if c: result = E else: B; result = G``), after which the caller returns
``result`` (returns.py: an ``if`` on data that returns is a branch statement). There, the
statements after an ``if`` neither arm of which always returns, one arm returning on some paths
(``if c: (if d: return E) ...``), are written in both arms (up to ``_COPIED`` of them).
"""
from __future__ import annotations

import gast

from .region_syntax import _walk_own

ALWAYS, MAY, NEVER = "always", "may", "never"


class _Cannot(Exception):
    """An exit that cannot be written as structured code."""


def own_exits(body: list) -> list:
    """The ``break`` and ``continue`` statements of this loop's body (not of a loop in it)."""
    return [n for s in body if not isinstance(s, (gast.For, gast.While))
            for n in _walk_own([s], loops=False) if isinstance(n, (gast.Break, gast.Continue))]


def lower(body: list, flag: str | None) -> list | None:
    """``body`` with its own ``break`` (which sets ``flag``) and ``continue`` written as
    structured code; None where they cannot be (see the module's docstring)."""
    try:
        stmts, _ = _block(body, flag, None)
    except _Cannot:
        return None
    return stmts or [gast.copy_location(gast.Pass(), body[0])]


def single_exit(block: list, result: str) -> gast.If | None:
    """``block``, which starts with an ``if`` that returns, as one ``if`` whose arms bind
    ``result`` where they returned it; None where the block does not return on every path, or
    a ``return`` cannot be written so (in a loop, ``try`` or ``with``, or without a value)."""
    try:
        stmts, leaves = _block(block, None, result)
    except _Cannot:
        return None
    return stmts[0] if leaves == ALWAYS and len(stmts) == 1 else None


def _block(stmts: list, flag: str | None, result: str | None) -> tuple[list, str]:
    """The block lowered, and whether it always leaves the trip (or the function, where
    ``result`` is given), may, or never does."""
    out: list = []
    for k, s in enumerate(stmts):
        if isinstance(s, gast.Continue):
            return out, ALWAYS
        if isinstance(s, gast.Break):
            if flag is None:
                raise _Cannot()
            out.append(_bind(flag, gast.Constant(value=True, kind=None), s))
            return out, ALWAYS
        if isinstance(s, gast.Return) and result is not None:
            if s.value is None:
                raise _Cannot()
            out.append(_bind(result, s.value, s))
            return out, ALWAYS
        if not own_exits([s]) and not (result is not None and _returns([s])):
            out.append(s)
            continue
        if not isinstance(s, gast.If):
            raise _Cannot()         # an exit inside try, with, match, a loop: not lowered
        (then, a), (orelse, b) = _block(s.body, flag, result), _block(s.orelse, flag, result)
        rest = stmts[k + 1:]
        if rest and a != b and ALWAYS in (a, b):     # rest runs after the other arm only
            if a == ALWAYS:
                orelse, c = _block(s.orelse + rest, flag, result)
            else:
                then, c = _block(s.body + rest, flag, result)
            out.append(_if(s, then, orelse))
            return out, ALWAYS if c == ALWAYS else MAY
        if rest and MAY in (a, b) and ALWAYS not in (a, b) and result is not None \
                and _size(rest) <= _COPIED:     # a return on some paths: rest in each arm
            (then, a), (orelse, b) = (_block(s.body + rest, flag, result),
                                      _block(s.orelse + rest, flag, result))
            out.append(_if(s, then, orelse))
            return out, a if a == b else MAY
        if rest and not (a == b == ALWAYS):
            raise _Cannot()         # an arm that leaves on some paths only, with code after
        out.append(_if(s, then, orelse))
        return out, a if a == b else MAY
    return out, NEVER


_COPIED = 20     # the most statements after an if that single_exit writes in both its arms


def _size(stmts: list) -> int:
    return sum(isinstance(n, gast.stmt) for n in _walk_own(stmts))


def _returns(stmts: list) -> bool:
    return any(isinstance(n, gast.Return) for n in _walk_own(stmts))


def _bind(name: str, value: gast.expr, where: gast.stmt) -> gast.Assign:
    """``name = value`` on the line of ``where`` (a new value keeps that line too; the
    user's expression keeps its own)."""
    target = gast.copy_location(gast.Name(name, gast.Store(), None, None), where)
    if isinstance(value, gast.Constant):
        value = gast.copy_location(value, where)
    return gast.copy_location(gast.Assign(targets=[target], value=value, type_comment=None),
                              where)


def _if(node: gast.If, then: list, orelse: list) -> gast.If:
    new = gast.If(test=node.test, body=then or [gast.copy_location(gast.Pass(), node)],
                  orelse=orelse)
    return gast.copy_location(new, node)
