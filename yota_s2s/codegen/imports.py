"""The user's functions that generated code calls, and the imports that make them resolve.

A primitive declared from user code (a function with a rule, one marked ``nodiff``, a gradient
helper declared with ``ys.primitive``) is emitted as ``("call", qualname, module)``. The
generated module imports it by name, as a person would::

    from model import logistic
    ...
    t1 = logistic(x)

so it runs in a fresh process that has ``model`` on its path, without yota_s2s. Where that name
is already taken in the generated function (a parameter called ``logistic``), the module is
imported under an alias instead (``import model as _model``; ``_model.logistic(x)``).

A method of an object that a module holds by name is imported with its object
(``from scipy.stats import norm``; ``norm.logpdf(x, mu, s)``), and a ufunc from outside numpy
from the module that exports it (``from scipy.special import gammaln``).

A function that cannot be imported by name is an error here, at compile time, never a
``NameError`` later: one defined in ``__main__`` (a script run directly, a notebook) or inside
another function, a method bound to an object, or one its module no longer holds under that
name.
"""
from __future__ import annotations

import importlib
import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ..errors import RuleError, SourceLoc
from ..ir.names import AVOIDED, RESERVED
from ..ir.tape import Primitive, Tape, tree_atoms
from ..rules.callables import call_emit
from ..text import is_identifier, normal, printable
from .outside import modules_read

MODULE_PRELUDE_NAMES = frozenset({"_mismatch"})
FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, np.ufunc)


@dataclass(frozen=True)
class FunctionValue:
    """A function that a primitive takes as an operand (``ys.odeint(func, ...)``), written in
    the generated code by name, imported as the user's primitives are."""

    fn: Any
    emit: tuple


def function_value(value: Any) -> FunctionValue | None:
    """The ``FunctionValue`` of a literal that is a function, else None."""
    if not isinstance(value, FUNCTION_TYPES):
        return None
    return FunctionValue(value, call_emit(value, None))


def _function_values(stmt: Any) -> Iterator[FunctionValue]:
    for atom in tree_atoms(stmt.args):
        found = function_value(getattr(atom, "value", None))
        if found is not None:
            yield found
MAX_LINE = 99


@dataclass
class Imports:
    lines: list[str] = field(default_factory=list)            # "from model import logistic"
    calls: dict[Any, str] = field(default_factory=dict)  # prim or FunctionValue -> "logistic"
    names: set[str] = field(default_factory=set)               # names the imports bind
    roots: dict[str, str] = field(default_factory=dict)        # module read at call time -> name


def plan_imports(tape: Tape, module_names: set[str] = frozenset()) -> Imports:
    """The import lines and call paths for the user functions ``tape`` calls, in a fixed order;
    no import binds one of ``module_names`` (the module's own functions)."""
    users: dict[Any, SourceLoc | None] = {}     # primitives, and functions given as operands
    for stmt in tape.stmts:
        if len(stmt.prim.emit) > 2 and stmt.prim not in users:
            users[stmt.prim] = stmt.loc
        for value in _function_values(stmt):
            if value not in users:
                users[value] = stmt.loc
    plan = Imports()
    taken = {normal(n) for n in RESERVED | AVOIDED | MODULE_PRELUDE_NAMES | set(tape.params)
             | set(module_names)}
    bound: dict[str, str] = {}                # name -> the module it is imported from
    names: dict[str, list[str]] = {}          # module -> names imported from it
    aliased: list[str] = []
    for value in [u for u in users if len(u.emit) == 2]:
        plan.calls[value] = value.emit[1]     # a numpy function: ``xp.absolute``
    # a function of the script being run, given to a primitive: read from __main__ when the
    # code runs, as its globals are (a primitive itself must be importable: its rule is kept
    # with it)
    of_main = [u for u in users if isinstance(u, FunctionValue) and u.emit[2:] == ("__main__",)]
    read = list(modules_read(tape))
    if of_main and "__main__" not in read:
        read.append("__main__")
    imported = [u for u in users if len(u.emit) > 2 and u not in of_main]
    for prim in sorted(imported, key=lambda p: (p.emit[2], p.emit[1])):
        _, qualname, module = prim.emit[:3]
        if isinstance(prim, FunctionValue):
            _check_function_value(prim, qualname, users[prim])
        _check_importable(prim, qualname, module, users[prim])
        head = qualname.split(".")[0]
        if bound.get(head, module) == module and head not in taken:
            if head not in bound:
                names.setdefault(module, []).append(head)
            bound[head] = module
            plan.calls[prim] = qualname
            continue
        alias = next((a for a, m in bound.items() if m == module and a.startswith("_")), None)
        if alias is None:
            alias = _fresh("_" + module.replace(".", "_"), taken | set(bound))
            bound[alias] = module
            aliased.append(f"import {module} as {alias}")
        plan.calls[prim] = f"{alias}.{qualname}"
    for module in read:                         # globals read at call time: the module itself
        head = module.split(".")[0]
        if head not in taken and bound.get(head, (module,)) == (module,) and \
                not any(m.split(".")[0] == head and m != module for m in plan.roots):
            bound[head] = (module,)
            plan.roots[module] = module
            aliased.append(f"import {module}")
            continue
        alias = _fresh("_" + module.replace(".", "_").strip("_"), taken | set(bound))
        bound[alias] = (module,)
        plan.roots[module] = alias
        aliased.append(f"import {module} as {alias}")
    for value in of_main:
        qualname = value.emit[1]
        _check_function_value(value, qualname, users[value])
        if _lookup("__main__", qualname) is not value.fn:
            raise RuleError(f"the generated module would read __main__.{qualname}, but that is "
                            f"not the function given here", users[value],
                            "Give the primitive a function defined with def at the top level.")
        plan.calls[value] = f"{plan.roots['__main__']}.{qualname}"
    plan.lines = [_from_import(m, ns) for m, ns in names.items()] + aliased
    plan.names = set(bound)
    return plan


def _check_function_value(value: FunctionValue, qualname: str, loc: SourceLoc | None) -> None:
    """A function given to a primitive (``ys.odeint(func, ...)``) must have a name the
    generated module can reach: not a lambda, not one defined inside another function."""
    name = qualname.split(".")[-1]
    if "<lambda>" in qualname or "<locals>" in qualname:
        what = "a lambda" if name == "<lambda>" else \
            f"defined inside {qualname.split('.<locals>')[0]}()"
        raise RuleError(f"the function {printable(name)} given here is {what}, so the generated "
                        "module, which calls it by name, cannot reach it", loc,
                        "Define it with def at the top level of a module and pass that "
                        "function; what it reads from here can go in as arguments.")


def _from_import(module: str, names: list[str]) -> str:
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= MAX_LINE:
        return line
    return f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def _check_importable(prim: Primitive, qualname: str, module: str, loc: SourceLoc | None) -> None:
    name = qualname.split(".")[-1]
    if module == "__main__":
        raise RuleError(f"{name} is defined in __main__ (the script being run, or a notebook), "
                        "so the generated module cannot import it", loc,
                        f"Move {name} and its rule into a module and import them from there, or "
                        f"name the module it can be imported from: "
                        f"ys.primitive({name}, module=\"mymodel\").")
    of_an_object = inspect.ismethod(prim.fn) and not inspect.isclass(prim.fn.__self__)
    plain = all(map(is_identifier, module.split(".") + qualname.split(".")))
    found = _lookup(module, qualname) if plain and "<locals>" not in qualname else None
    if of_an_object:        # held by name only bound to the same object (``norm.logpdf``)
        held = inspect.ismethod(found) and found == prim.fn
    else:
        held = found is not None and _same_definition(found, prim.fn)
    if of_an_object and not held:
        raise RuleError(f"{name} is the method of one object, so the generated module cannot "
                        "import it", loc, "Give the rule to a module-level function, and call "
                        "that function from the method.")
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>")[0]
        raise RuleError(f"{name} is defined inside {outer}(), so the generated module cannot "
                        "import it", loc, f"Define {name} at the top level of its module.")
    if not plain:
        raise RuleError(f"the generated module cannot import {printable(module)}."
                        f"{printable(qualname)}: not a plain dotted name", loc,
                        "Give the function a plain name in a module with a plain name, or name "
                        "the module: ys.primitive(fn, module=\"mymodel\").")
    if not held:
        raise RuleError(f"the generated module would call {module}.{qualname}, but that is not "
                        f"the {name} that has the rule", loc,
                        f"Name the module that exports it: ys.primitive({name}, module=\"...\").")


def _lookup(module: str, qualname: str) -> Any:
    """``module.qualname`` as an import finds it (a method: bound to the object it holds,
    ``scipy.stats.norm.logpdf``), or None."""
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found


def _same_definition(a: Any, b: Any) -> bool:
    """The same object, or the same ``def`` (a module imported again, or under another name)."""
    if a is b:
        return True
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    return code_a is not None and code_b is not None and \
        (code_a.co_filename, code_a.co_firstlineno) == (code_b.co_filename, code_b.co_firstlineno)
