"""Reads from outside the function and random draws, as the generated code writes them.

An ``external`` statement (rules/outside.py) reads an array where the source reads it, at
call time, and checks it, since the code was compiled for its shape and dtype::

    # model.py:12  return np.sum((X @ w - y) ** 2)
    X = model.X
    if type(X) is not xp.ndarray or X.shape != (100, 3) or X.dtype != xp.float64:
        raise _changed('model.X', 'float64[100, 3]', X)

(a scipy.sparse matrix, ``getattr(A, 'format', None) != 'csr' or A.shape != ...``.)

A ``draw`` statement calls the generator the source calls: ``xp.random.randn(3, 4)`` for
numpy's own, ``model.rs.randn(3, 4)`` or ``_fn.__closure__[0].cell_contents.normal(size=3)``
for the user's, read at call time. The root of a read is a user module, imported by name
(``import model``: the module, so that a rebound global is seen; see imports.py), or ``_fn``,
the compiled function itself, whose closure holds the data (the generated function takes it
as a keyword argument; ``bind(fn)`` returns the function with it filled in).
"""
from __future__ import annotations

import ast
from typing import Any

from ..errors import InternalError
from ..ir.region import body_tapes
from ..ir.tape import Stmt, Tape, Var
from ..text import (access_attr, access_expr, access_item, describe, docstring_line, identifier,
                    literal_text)
from .targets import not_an_array

FUNCTION_PARAM = "_fn"
BIND = "bind"

CHANGED_PRELUDE = '''
def _changed(name, expected, value):
    got = f"{value.dtype}{list(value.shape)}" if hasattr(value, "shape") else repr(value)
    return GuardError(f"{name}, read from outside the function, was {expected} when this "
                      f"gradient was compiled and is {got} now; compile again (ys.grad does "
                      "this for you)")
'''


# where the code reads a scipy.sparse matrix, ``got`` names its format too ("csc float64[5, 4]")
_SPARSE_GOT = '''    if hasattr(value, "format") and hasattr(value, "shape"):     # a scipy.sparse matrix
        got = f"{value.format} {got}"
'''


def changed_prelude(tapes: list[Tape]) -> str:
    """``_changed``, which names what a value read from outside has become."""
    sparse = any(s.prim.emit[:1] == ("external",) and s.out.aval.sparse
                 for tape in tapes for t in (tape, *body_tapes(tape)) for s in t.stmts)
    if not sparse:
        return CHANGED_PRELUDE
    head, _, tail = CHANGED_PRELUDE.partition("    return GuardError")
    return head + _SPARSE_GOT + "    return GuardError" + tail


def unparse_expr(node: ast.expr) -> str:
    return ast.unparse(node)


def modules_read(tape: Tape) -> list[str]:
    """The user modules the statements of ``tape`` read from, in a fixed order."""
    found = {s.param("root")[1] for s in tape.stmts
             if _outside(s) and s.param("root")[0] == "module"}
    return sorted(found)


def reads_function(tape: Tape) -> bool:
    """Does the code read the compiled function's own closure (the ``_fn`` argument)?"""
    return any(_outside(s) and s.param("root") == ("function",) for s in tape.stmts)


def has_reads(tape: Tape) -> bool:
    return any(s.prim.emit[:1] in (("external",), ("external_check",)) for s in tape.stmts)


def arrays_read(emitter: Any, tape: Tape) -> list[tuple[str, str]]:
    """(name shown, access text) of each array the code reads from outside (``model.W``),
    once each, its loop bodies' too: what the caller's out= must not share memory with."""
    found: dict[tuple, tuple[str, str]] = {}
    for t in (tape, *body_tapes(tape)):
        for stmt in t.stmts:
            if stmt.prim.emit[:1] == ("external",) and not stmt.out.aval.weak:
                root, path = stmt.param("root"), stmt.param("path")
                found.setdefault((root, path), (stmt.param("shown") or shown(root, path),
                                                unparse_expr(access(emitter, root, path))))
    return list(found.values())


def _outside(stmt: Stmt) -> bool:
    return stmt.prim.emit[:1] in (("external",), ("draw",), ("external_check",))


def access(emitter: Any, root: tuple, path: tuple) -> ast.expr:
    """``model.X``, ``_fn.__closure__[0].cell_contents``: built from checked identifiers and
    literals (``text.access_*``), then checked again as an access."""
    if root[0] == "module":
        text = identifier(emitter.roots[root[1]]) if "." not in emitter.roots[root[1]] else \
            ".".join(map(identifier, emitter.roots[root[1]].split(".")))
    elif root[0] == "function":
        text = FUNCTION_PARAM
    elif root[0] == "numpy":
        text = "xp.random"
    else:
        raise InternalError(f"no root {root!r}")
    text = _steps(text, path)
    return access_expr(text)


def _steps(text: str, path: tuple) -> str:
    """``text`` read along ``path``: attributes and items, and at the end ``len(...)`` or
    ``tuple(...)`` (a list's length, a dict's keys)."""
    for kind, key in path:
        if kind == "len":
            text = f"len({text})"
        elif kind == "keys":
            text = f"tuple({text})"
        else:
            text = access_attr(text, key) if kind == "attr" else access_item(text, key)
    return text


def shown(root: tuple, path: tuple) -> str:
    """The read as a message names it: ``model.X``, ``objective's closure``..."""
    text = {"module": lambda: root[1], "function": lambda: "the function",
            "numpy": lambda: "np.random"}[root[0]]()
    return _steps(text, path)


def outside_statements(emitter: Any, stmt: Stmt) -> list[ast.stmt]:
    root, path = stmt.param("root"), stmt.param("path")
    if stmt.prim.emit[0] == "external_check":
        value = stmt.param("expected")
        read = unparse_expr(access(emitter, root, path))
        test = f"{read} is not None" if value is None else f"{read} != {literal_text(value)}"
        message = ", ".join(map(literal_text, (stmt.param("shown"), describe(value))))
        return [ast.parse(f"if {test}:\n    raise _changed({message}, {read})").body[0]]
    target = ast.Name(emitter.names[stmt.out])
    if stmt.prim.emit[0] == "draw":
        (operands,) = stmt.args
        items = [emitter.atom(a) for a in operands]
        names = stmt.param("keywords")
        positional = items[:len(items) - len(names)]
        keywords = [ast.keyword(identifier(k), v)
                    for k, v in zip(names, items[len(items) - len(names):])]
        method = ast.Attribute(access(emitter, root, path), identifier(stmt.param("method")),
                               ast.Load())
        return [ast.Assign([target], ast.Call(method, positional, keywords), lineno=0)]
    var: Var = stmt.out
    read = ast.Assign([target], access(emitter, root, path), lineno=0)
    name = target.id
    if var.aval.weak:
        test, expected = f"type({name}) is not float", "a float"
    elif var.aval.sparse:           # a scipy.sparse matrix: of its format (rules/sparse.py)
        test = (f"getattr({name}, 'format', None) != {literal_text(var.aval.sparse)} or "
                f"{name}.shape != {literal_text(var.aval.shape)} or {name}.dtype != "
                f"{literal_text(var.aval.dtype)}")
        expected = f"{var.aval.sparse} {var.aval.dtype.name}[{', '.join(map(str, var.aval.shape))}]"
    else:
        test = (f"{not_an_array(emitter.device, name)} or {name}.shape != "
                f"{literal_text(var.aval.shape)} or {name}.dtype != "
                f"{literal_text(var.aval.dtype)}")
        expected = f"{var.aval.dtype.name}[{', '.join(map(str, var.aval.shape))}]"
    message = ", ".join(map(literal_text, (stmt.param("shown") or shown(root, path), expected)))
    check = ast.parse(f"if {test}:\n    raise _changed({message}, {name})").body[0]
    return [read, check]


def bind_function(tape: Tape, fname: str) -> str:
    """``bind(fn)``: the gradient function reading ``fn``'s closure at each call."""
    free = tuple(tape.freevars)
    doc = docstring_line(f"{fname} for fn, a function {tape.name} closing over "
                         f"{', '.join(free)}: the code reads them at each call.")
    message = literal_text(f"bind: fn must be a function closing over {', '.join(free)}")
    lines = [
        "",
        f"def {BIND}(fn):",
        f'    """{doc}"""',
        f"    if getattr(getattr(fn, '__code__', None), 'co_freevars', None) != "
        f"{literal_text(free)}:",
        f"        raise TypeError({message})",
        "",
        f"    def {fname}_of(*args, **kwargs):",
        f"        return {fname}(*args, {FUNCTION_PARAM}=fn, **kwargs)",
        f"    {fname}_of.__doc__ = {fname}.__doc__",
        f"    return {fname}_of",
    ]
    return "\n".join(lines) + "\n"


def unbound_check(fname: str, tape: Tape) -> list[str]:
    """The first lines of a function that reads its closure: it must have been bound."""
    message = literal_text(f"{fname} reads the closure of {tape.name}: call the function "
                           f"that bind({tape.name}) returns (ys.simplegrad returns it)")
    return [f"if {FUNCTION_PARAM} is None:", f"    raise TypeError({message})"]


