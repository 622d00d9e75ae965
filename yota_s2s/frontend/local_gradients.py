"""``ys.gradient(g)`` of a ``g`` defined inside the function being compiled (autograd's
``grad(lambda y: x * y)(2.0)``, closing over the traced ``x``).

The function is lifted: its source, with every name it reads from the enclosing function's
frames made a parameter after its own, becomes a Python function of the same module
(``types.FunctionType`` over the module's globals; its text kept in ``linecache`` under
``<lifted NAME>`` so that the frontend can read it). ``ys.gradient`` makes the gradient
function of the lifted one, and what the call returns is a ``LocalFunction`` that passes the
values of those names (traced values too, read when it is called, as a closure's) after the
arguments: its call is inlined as any gradient function's, so the gradient flows through them
as through arguments.
"""
from __future__ import annotations

import ast
import itertools
import linecache
import types
from typing import Any, Callable

import gast

from ..ir.values import LocalFunction
from .frame import Frame

_COUNT = itertools.count()


def lifted_maker(maker: Callable, local: LocalFunction, args: list, kwargs: dict) -> Any:
    """What ``maker(local, *args[1:], **kwargs)`` (``ys.gradient(g, argnum)``) stands for in
    the traced code, or None where ``local`` cannot be lifted (defaults, a function it reads
    that is itself defined in the traced code, or it is not the first argument)."""
    if not args or args[0] is not local or local.defaults or local.kw_defaults:
        return None
    free = _free_names(local)
    if _MADE in free or any(isinstance(local.scope.lookup(n), LocalFunction) for n in free):
        return None
    made = maker(_lifted(local, free), *args[1:], **kwargs)
    return _bound(local, made, free)


def _free_names(local: LocalFunction) -> list[str]:
    """The names ``local`` reads from the frames of the function it is defined in (not its
    own parameters or locals, not globals or builtins), in order of first use."""
    node = local.node
    params = {a.id for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    params |= {a.id for a in (node.args.vararg, node.args.kwarg) if a is not None}
    body = node.body if isinstance(node.body, list) else [node.body]
    stored, loaded = set(), []
    for part in body:
        for n in gast.walk(part):
            if isinstance(n, gast.Name):
                if isinstance(n.ctx, gast.Load):
                    loaded.append(n.id)
                else:
                    stored.add(n.id)
    free = []
    for name in loaded:
        if name in params or name in stored or name in free:
            continue
        frame: Frame | None = local.scope
        while frame is not None:
            if name in frame.locals or name in frame.closure:
                free.append(name)
                break
            frame = frame.parent
    return free


def _lifted(local: LocalFunction, free: list[str]) -> types.FunctionType:
    """``local`` as a function of the module it is written in, taking ``free`` after its own
    parameters."""
    node = gast.gast_to_ast(local.node)
    name = local.name if local.name.isidentifier() else "lifted"
    node.args.args = [*node.args.args, *(ast.arg(n) for n in free)]
    if isinstance(node, ast.Lambda):
        text = f"def {name}({ast.unparse(node.args)}):\n    return {ast.unparse(node.body)}\n"
    else:
        node.name, node.decorator_list = name, []
        text = ast.unparse(node) + "\n"
    filename = f"<lifted {name} {next(_COUNT)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    code = next(c for c in compile(text, filename, "exec").co_consts
                if isinstance(c, types.CodeType))
    scope = local.scope.globals
    return types.FunctionType(code, getattr(scope, "globals", scope), name)   # (WatchedGlobals')


def _bound(local: LocalFunction, made: Any, free: list[str]) -> LocalFunction:
    """A ``LocalFunction`` ``lambda *args: made(*args, *free)`` under the frame ``local`` was
    defined in: the names are read when it is called, as Python reads a closure's."""
    text = f"lambda *args: {_MADE}(*args{''.join(', ' + n for n in free)})"
    node = gast.parse(text).body[0].value
    scope = Frame(local.scope.fn, local.scope.globals, {}, local.scope)
    scope.locals[_MADE] = made
    return LocalFunction(node, scope, (), {}, f"gradient of {local.name}")


_MADE = "_yota_made"
