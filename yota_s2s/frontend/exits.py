"""``break`` and ``continue`` of a loop body written as structured code (issue 33), so that a
loop that leaves on data can be a while statement (whiles.py) or a region, its exits
branches (branches.py).

``lower(body, flag)`` gives the body without its own ``break`` and ``continue``:

- the statements after an ``if`` one arm of which always leaves move into the other arm
  (``if c: continue`` then ``B`` is ``if c: pass else: B``; so is ``if c: X; break``, its
  ``break`` made ``flag = True``);
- ``continue`` is then nothing: the trip ends where its arm ends;
- ``break`` sets ``flag`` (``done = True``), which the loop's condition reads
  (``while C and not done``).

Only an arm that always leaves or never does can have statements after it; an arm that leaves
on some paths only, an exit inside ``try`` or ``with``, or a ``break`` where no flag is given,
cannot be lowered (None: the loop is unrolled on the example, a guard per test, as before).
The statements kept are the user's own nodes, with their lines; a new ``if`` has the line of
the one it replaces, ``flag = True`` the line of its ``break``.
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
        stmts, _ = _block(body, flag)
    except _Cannot:
        return None
    return stmts or [gast.copy_location(gast.Pass(), body[0])]


def _block(stmts: list, flag: str | None) -> tuple[list, str]:
    """The block lowered, and whether it always leaves the trip, may, or never does."""
    out: list = []
    for k, s in enumerate(stmts):
        if isinstance(s, gast.Continue):
            return out, ALWAYS
        if isinstance(s, gast.Break):
            if flag is None:
                raise _Cannot()
            value = gast.Constant(value=True, kind=None)
            target = gast.Name(flag, gast.Store(), None, None)
            out.append(gast.copy_location(
                gast.Assign(targets=[gast.copy_location(target, s)],
                            value=gast.copy_location(value, s), type_comment=None), s))
            return out, ALWAYS
        if not own_exits([s]):
            out.append(s)
            continue
        if not isinstance(s, gast.If):
            raise _Cannot()         # an exit inside try, with, match: not lowered
        (then, a), (orelse, b) = _block(s.body, flag), _block(s.orelse, flag)
        rest = stmts[k + 1:]
        if rest and a != b and ALWAYS in (a, b) and NEVER in (a, b):
            more, c = _block(rest, flag)
            if a == NEVER:
                then = then + more
            else:
                orelse = orelse + more
            out.append(_if(s, then, orelse))
            return out, ALWAYS if c == ALWAYS else MAY
        if rest and not (a == b == ALWAYS):
            raise _Cannot()         # an arm that leaves on some paths only, with code after
        out.append(_if(s, then, orelse))
        return out, a if a == b else MAY
    return out, NEVER


def _if(node: gast.If, then: list, orelse: list) -> gast.If:
    new = gast.If(test=node.test, body=then or [gast.copy_location(gast.Pass(), node)],
                  orelse=orelse)
    return gast.copy_location(new, node)
