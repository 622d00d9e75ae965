"""An early ``return`` on data (issue 33): in an ``if``, the ``if`` is a branch statement whose
arms bind the returned value; inside a loop, the loop is a while statement that leaves at the
``return``, and the function returns after it, under a branch on whether it did.

An ``if`` that returns, then the statements after it (``if a <= d: return 0.5 * a ** 2`` then
``return a - 0.5``), is run as the one ``if`` of exits.single_exit, its arms binding ``f`` where
they returned (``if a <= d: f = 0.5 * a ** 2 else: f = a - 0.5``), then ``return f``: the same
program, whose ``if`` on data can then be a branch statement (or a guard, as before, where it
cannot: that is decided on the ``if`` as for any other).

In a block ``for ...: A; if <test on data>: return E; B`` then ``C; return G`` (the loop's
body returns once; the statements after the loop end in the block's one ``return``), the
``return E`` is ``returned = True`` and a ``break`` (exits.py lowers it: the flag ``done``),
so that the loop is a while statement (whiles.py) carrying the flag ``returned``, and the
statements after it are

    if returned:
        f = E               # the state after the loop is the state at the return
    else:
        C
        f = G
    return f

where ``f`` is the function's name (the name its result has in the module): a branch
statement when ``E`` and ``G`` have one shape and dtype (``E`` may read a ``for``'s index:
after the loop it is the returning trip's, as Python leaves it). Where the loop cannot be a while
statement or the two results differ (a return whose shape differs from the other's), all is
undone and the loop is run as it is: unrolled, a guard on each test on data, as before.
"""
from __future__ import annotations

import functools

import gast

from ..ir.tape import Var
from .exits import single_exit
from .region_syntax import _walk_own


class ReturnsMixin:
    """The early return on data in a loop (mixed into ``Evaluator``)."""

    def returning_loop(self, node: gast.stmt, rest: list) -> bool:
        """Run the loop ``node`` whose body returns and the statements after it (``rest``) as
        a while statement and a branch on whether it returned (raising the function's
        return); False (nothing done) to run the loop as it is."""
        if not isinstance(node, (gast.For, gast.While)) or not _returns(node) \
                or self.collector is not None or self.backward_mode or not self.branches \
                or not self.whiles or self.trial_depth:
            return False
        used = {n.id for n in gast.walk(self.frame.fn.node) if isinstance(n, gast.Name)}
        returned = _fresh("returned", used)
        result = self.frame.fn.name if self.frame.fn.name not in used else _fresh("result", used)
        plan = _plan(node, rest, returned, result)
        if plan is None:
            return False
        loop, after, alone = plan
        saved, _ = self._trial_state()
        outer, self.exit_flags = self.exit_flags, self.exit_flags | {returned}
        if alone:       # the only way out but the loop's end: the break's flag is `returned`
            self.break_flag = returned
        frame = self.frame
        held, frame.stmt = frame.stmt, node
        try:
            with self.collect() as stmts:
                if isinstance(loop, gast.For):
                    made = self.while_for(loop, self.loop_iterable(loop.iter))
                else:
                    made = self.while_region(loop)
                flag = self.current(frame.locals.get(returned))
                frame.stmt = after
                if not made or not isinstance(flag, Var) or not self.branch_if(after, flag):
                    raise _NotHere()
        except Exception:
            self._restore(saved)
            return False
        finally:
            self.exit_flags, self.break_flag = outer, None
            frame.stmt = held
        self.stmts.extend(stmts)
        frame.locals.pop(returned, None)
        self.exec_stmt(gast.copy_location(
            gast.Return(value=gast.Name(result, gast.Load(), None, None)), rest[-1]))
        return True     # (exec_stmt raised the return)


    def returning_if(self, node: gast.stmt, rest: list) -> bool:
        """Run the ``if`` ``node`` that returns, and the statements after it (``rest``), as one
        ``if`` whose arms bind the function's result, then return it; False (nothing done)
        where the block cannot be written so."""
        if not isinstance(node, gast.If) or not _returns(node) or self.collector is not None \
                or self.backward_mode or not self.branches or self.trial_depth:
            return False
        plan = _single_exit((node, *rest), self.frame.fn.node, self.frame.fn.name)
        if plan is None:
            return False
        lowered, result = plan
        self.exec_stmt(lowered)
        self.exec_stmt(gast.copy_location(
            gast.Return(value=gast.Name(result, gast.Load(), None, None)), lowered))
        return True     # (exec_stmt raised the return)


class _NotHere(Exception):
    """The loop and the statements after it cannot be a while statement and a branch."""


@functools.lru_cache(maxsize=None)
def _returns(node: gast.stmt) -> bool:
    """Does the loop or ``if`` ``node`` hold a ``return`` of its function (in its body or its
    ``else``: a loop's ``else`` keeps the loop as it is, returning_loop's plan)?"""
    return any(isinstance(n, gast.Return) for n in _walk_own([node]))


@functools.lru_cache(maxsize=None)
def _single_exit(block: tuple, fn: gast.FunctionDef, name: str) -> tuple[gast.If, str] | None:
    """The block as one ``if`` (exits.single_exit) and the name its arms bind the result to:
    the function's, or ``result`` where the function reads that name; made once a block."""
    used = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}
    result = name if name not in used else _fresh("result", used)
    lowered = single_exit(list(block), result)
    return None if lowered is None else (lowered, result)


def _fresh(name: str, used: set) -> str:
    return next(f"{name}{k or ''}" for k in range(len(used) + 1) if f"{name}{k or ''}" not in used)


def _plan(node: gast.For | gast.While, rest: list, returned: str, result: str
          ) -> tuple[gast.stmt, gast.If, bool] | None:
    """The loop with its ``return E`` made ``returned = True; break``, the ``if`` after it
    (see the module's docstring) and whether the ``break`` is the body's only one (then it is
    ``break`` alone, and its flag is ``returned``); None where the code is not of that
    form."""
    returns = [n for n in _walk_own(node.body) if isinstance(n, gast.Return)]
    if len(returns) != 1 or returns[0].value is None or node.orelse \
            or returns[0] not in list(_walk_own(node.body, loops=False)):
        return None
    ret = returns[0]
    if not rest or not isinstance(rest[-1], gast.Return) or rest[-1].value is None \
            or any(isinstance(n, (gast.Return, gast.Break, gast.Continue, gast.Yield,
                                  gast.YieldFrom)) for n in _walk_own(rest[:-1])):
        return None
    flag = gast.Assign(targets=[gast.Name(returned, gast.Store(), None, None)],
                       value=gast.Constant(value=True, kind=None), type_comment=None)
    alone = not any(isinstance(n, gast.Break) for n in _walk_own(node.body, loops=False))
    leave = [gast.copy_location(gast.Break(), ret)]
    body = _replaced(node.body, ret, leave if alone else [_located(flag, ret)] + leave)
    fields = {f: getattr(node, f) for f in node._fields}
    loop = gast.copy_location(type(node)(**{**fields, "body": body}), node)
    test = gast.copy_location(gast.Name(returned, gast.Load(), None, None), ret)
    after = gast.If(test=test, body=[_assign(result, ret)],
                    orelse=rest[:-1] + [_assign(result, rest[-1])])
    return loop, gast.copy_location(after, ret), alone


def _replaced(block: list, target: gast.stmt, new: list) -> list:
    """``block`` with the statement ``target`` (in it or in an ``if`` of it) made ``new``."""
    out = []
    for s in block:
        if s is target:
            out.extend(new)
        elif isinstance(s, gast.If) and any(n is target for n in gast.walk(s)):
            out.append(gast.copy_location(gast.If(test=s.test,
                                                  body=_replaced(s.body, target, new),
                                                  orelse=_replaced(s.orelse, target, new)), s))
        else:
            out.append(s)
    return out


def _assign(name: str, ret: gast.Return) -> gast.Assign:
    """``name = <the returned value>``, on the return's line."""
    return _located(gast.Assign(targets=[gast.Name(name, gast.Store(), None, None)],
                                value=ret.value, type_comment=None), ret)


def _located(node: gast.Assign, where: gast.AST) -> gast.Assign:
    """A new assignment (its targets and a new value too) on the line of ``where``; the
    user's nodes it holds keep theirs."""
    for n in [node, *node.targets] + ([node.value] if isinstance(node.value, gast.Constant)
                                      else []):
        gast.copy_location(n, where)
    return node
