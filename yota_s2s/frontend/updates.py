"""In-place updates, functionalized (mixed into ``Evaluator``): ``x[key] = v``, ``x[key] += v``
and ``x += v`` on arrays.

numpy writes into memory, and every name and every view of that memory sees the change
(``v = x[:2]; v += 1`` changes ``x``). The tape is pure, so an update makes a new version of
the array, ``x_1 = setitem(x, key, v)``, and two maps make every later read see it:

- ``latest``: an old version -> its new version. Names, containers and closures all hold the
  old Var; reads resolve through this map (``current``).
- ``views``: a value that shares memory with an operand (found on the example values with
  ``np.may_share_memory``) -> (that base, the statement that made it). Writing into a view
  writes its base too (``x_1 = setitem(x, (:2,), v_1)``, or the inverse reshape/transpose); a
  view whose base has a new version is made again from it when it is next read.

Writing into an argument, or into a view of one, would change the caller's data; writing into
a read-only view (``np.broadcast_to``) fails in numpy: both are errors that say so. Rules never
write in place (they call ``setitem``), so in backward mode none of this runs; only a generated
module's plain form that a rule inlines (a gradient differentiated again, rules/implicit.py)
writes, where its old array is dead: ``generated_update``. The generated code writes in place
again wherever the old array is not needed (passes/inplace.py).
"""
from __future__ import annotations

import operator
from typing import Any

import gast
import numpy as np

from ..errors import ArgumentWriteError, UnsupportedSyntax
from ..ir.analysis import memory_bases
from ..ir.tape import Lit, Stmt, Var, tree_atoms, tree_map
from ..rules.indexing import setitem
from ..rules.outside import EXTERNAL
from ..rules.shape import ravel
from .expressions import BINOP_SYMBOLS as _BINOP_SYMBOLS

# How to write a view back into its base: the inverse of the view, per primitive.
_RESHAPES = (np.reshape, ravel, np.squeeze, np.expand_dims, np.atleast_1d, np.atleast_2d,
             np.atleast_3d)


class UpdatesMixin:
    latest: dict[Var, Var]
    views: dict[Var, tuple[Var, Stmt]]
    constants: set[Var]

    # -- reading -------------------------------------------------------------------------

    def current(self, value: Any) -> Any:
        """The version of ``value`` that a read sees now."""
        if not isinstance(value, Var) or self.backward_mode:
            return value
        while value in self.latest:
            value = self.latest[value]
        made = self.views.get(value)
        if made is not None:
            base, stmt = made
            fresh = self.current(base)
            if fresh is not base:
                args = tuple(tree_map(lambda a: fresh if a is base else a, t) for t in stmt.args)
                again = self.emit(stmt.prim, list(args), dict(stmt.params), self.frame.stmt)
                again.hint = again.hint or value.hint
                self.latest[value] = again
                return again
        if value in self.pending_rows:
            self.place_row(value)       # a row of a region's list, read (region_lists.py)
        return value

    def current_tree(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return type(value)(self.current_tree(v) for v in value)
        if isinstance(value, dict):
            return {k: self.current_tree(v) for k, v in value.items()}
        return self.current(value)

    def note_views(self, stmt: Stmt, node: gast.AST | None = None) -> Var | None:
        """Remember a result that shares memory with one of its operands. A result that shares
        memory its primitive does not declare (a function of the user's returning a view) is
        copied: the tape's analysis (ir/analysis.py) knows memory from the primitives alone, and
        passes and codegen would write into one array and change the other. Returns the copy
        that stands for the result then (a write into it is refused, as into a view)."""
        if not self.backward_mode and self.made_of_constants(stmt):
            self.constants.update(stmt.outs)    # np.array([0, 2]): the same in every call
        if len(stmt.outs) != 1:
            return None
        result = self.values.peek(stmt.out)     # a ghost views the ghost it is made from
        if not isinstance(result, np.ndarray):
            return None
        for atom in (a for t in stmt.args for a in tree_atoms(t)):
            if isinstance(atom, Var) and isinstance(self.values.peek(atom), np.ndarray) \
                    and np.may_share_memory(result, self.values.peek(atom)):
                declared = atom in memory_bases(stmt)
                copy = None if declared else \
                    self.emit(self.rules.lookup(np.copy), [stmt.out], {}, node)
                if not self.backward_mode:
                    self.views[copy or stmt.out] = (atom, stmt)
                return copy
        return None

    def made_of_constants(self, stmt: Stmt) -> bool:
        """Is ``stmt``'s result the same in every call: made from static values and constants
        alone (``np.arange(rows)``, then ``np.meshgrid`` of those) by a primitive that reads
        nothing from outside (a global read when the code runs, a random draw)?"""
        if stmt.prim.effect or stmt.prim is EXTERNAL:
            return False
        atoms = [a for t in stmt.args for a in tree_atoms(t) if isinstance(a, Var)]
        return all(a in self.constants for a in atoms) and (bool(atoms) or stmt.prim.creates)

    def all_constants(self, operands: Any) -> bool:
        """Are all the traced values among ``operands`` constants (``made_of_constants``)?"""
        return all(self.current(a) in self.constants for a in tree_atoms(operands)
                   if isinstance(a, Var))

    # -- writing -------------------------------------------------------------------------

    def write_item(self, target: Any, key: Any, value: Any, node: gast.AST, shown: str,
                   written: str = "") -> None:
        """``target[key] = value``. ``shown`` names the target as the user wrote it, ``written``
        the update (``x[...] = ...`` unless said otherwise)."""
        if self.backward_mode and _generated_code(self.frame.globals):
            return self.generated_update(target, key, value, node)
        local = shown if "[" in shown else shown.split(".")[-1]   # (hs[...] is a list's item)
        self.check_writable(target, node, written or f"{shown}[...] = ...", shown,
                            f"Copy it first: `{local} = {shown}.copy()`.")
        params = {"repeats": True} if _may_repeat(key, self.constants, self.values) else {}
        new = self.call_primitive(self.rules.lookup(setitem), (target, key, value), params, node)
        self.replace(target, new, node)

    def generated_update(self, target: Any, key: Any, value: Any, node: gast.AST) -> None:
        """``x[key] = v`` (or ``+=``) in a generated module's plain form that a derivative rule
        inlines (a rule that differentiates a generated gradient: rules/implicit.py). The
        module writes in place only where the old ``x`` is dead, with no view of it read later
        (passes/inplace.py), so the update is the pure ``setitem`` under the same local names."""
        params = {"repeats": True} if _may_repeat(key, self.constants, self.values) else {}
        new = self.call_primitive(self.rules.lookup(setitem), (target, key, value), params, node)
        new.hint = new.hint or getattr(target, "hint", None)
        for name, bound in list(self.frame.locals.items()):
            if bound is target:
                self.frame.locals[name] = new

    def update_by_method(self, method: Any, args: list, kwargs: dict, node: gast.AST) -> None:
        """``x.sort()``, ``x.partition(k)``, ``x.fill(v)``: numpy's in-place methods."""
        from .resolve import IN_PLACE_METHODS
        target = self.current(method.var)
        fn = IN_PLACE_METHODS[method.name]
        value = args[0] if fn is None else self.call(fn, [target, *args], kwargs, node)
        func = node.func.value if isinstance(node, gast.Call) else None
        shown = func.id if isinstance(func, gast.Name) else "the array"
        self.write_item(target, Ellipsis, value, node, shown, f"{shown}.{method.name}()")

    def write_out(self, fn: Any, args: list, kwargs: dict, node: gast.AST) -> Any:
        """``np.exp(y, out=y)``, ``np.clip(a, 0, 1, out=a)``: the call without ``out=``,
        then its result written into ``out`` (an in-place update, as ``y[...] = np.exp(y)``:
        every name and view of that array sees it). Returns ``out``'s new version, as numpy
        returns ``out``."""
        kwargs = dict(kwargs)
        out = kwargs.pop("out")
        if isinstance(out, tuple) and len(out) == 1:        # a ufunc's out=(y,)
            out = out[0]
        result = self.call(fn, args, kwargs, node)
        if out is None:
            return result
        given = next((kw.value for kw in getattr(node, "keywords", ()) if kw.arg == "out"), None)
        shown = given.id if isinstance(given, gast.Name) else "out"
        name = getattr(fn, "__name__", "f")
        target = self.current(out)
        rewrite = f"`{shown} = np.{name}(...)` (without out=)"
        self.check_writable(target, node, f"np.{name}(..., out={shown})", shown,
                            f"Write {rewrite} to make a new array instead.")
        new = self.cast_update(target, result, node, rewrite)
        self.replace(target, new, node)
        return new

    def augmented(self, op: gast.operator, current: Any, value: Any, node: gast.AST,
                  shown: str) -> Any:
        """``current op= value``: in place on an array (numpy's semantics), else a new value."""
        if isinstance(current, list):
            if isinstance(value, Var):
                value = self.iterate(value, node)
            return _IN_PLACE[type(op)](current, value)
        if not self.is_array(current):
            return self.binop(op, current, value, node)
        symbol = _BINOP_SYMBOLS[type(op)]
        self.check_writable(current, node, f"{shown} {symbol}= ...", shown,
                            f"Write `{shown} = {shown} {symbol} ...` to make a new array instead.")
        new = self.binop(op, current, value, node)
        new = self.cast_update(current, new, node, f"`{shown} = {shown} {symbol} ...`")
        self.replace(current, new, node)
        return new

    def is_array(self, value: Any) -> bool:
        """A traced ndarray (numpy scalars and Python floats are immutable)."""
        return isinstance(value, Var) and isinstance(self.values.peek(value), np.ndarray)

    def cast_update(self, target: Var, new: Any, node: gast.AST, rewrite: str) -> Any:
        """An in-place result keeps the target's shape and dtype, as numpy requires
        (``rewrite``: the assignment that makes a new array instead)."""
        shape, dtype = target.aval.shape, target.aval.dtype
        got = new.aval if isinstance(new, Var) else None
        if got is not None and got.shape != shape:
            raise self.unsupported(node, f"an in-place update of a {target.aval} array with a "
                                   f"result of shape {got.shape}: numpy cannot broadcast the "
                                   "array itself", f"Write {rewrite} to make a new array.")
        if got is not None and got.dtype != dtype:
            if not np.can_cast(got.dtype, dtype, "same_kind"):
                raise self.unsupported(node, f"an in-place update casts {got.dtype} into "
                                       f"{dtype}, which numpy refuses",
                                       f"Write {rewrite} to make a new array.")
            from ..rules.elementwise import astype
            new = self.call_primitive(self.rules.lookup(astype), (new, dtype), {}, node)
        if got is not None and not shape and not self.is_array(new):
            # numpy's ``a += 1.0`` on a 0-d array keeps the array (which other names may hold),
            # where ``a + 1.0`` is a numpy scalar: the update stays an array
            new = self.call_primitive(self.rules.lookup(np.copy), (new,), {}, node)
        return new

    def replace(self, old: Var, new: Var, node: gast.AST) -> None:
        """``new`` is what ``old``'s memory holds now; views write through to their base."""
        self.check_shared(old)
        new.hint = new.hint or old.hint
        self.latest[old] = new
        made = self.views.get(old)
        if made is None:
            return
        base, stmt = made
        fresh = self.current(base)
        new_base = self.unview(stmt, fresh, new, node)
        self.views.pop(new_base, None)          # (a reshape back may look like a view of new)
        self.views[new] = (new_base, stmt.replace(
            args=tuple(tree_map(lambda a: new_base if a is base else a, t) for t in stmt.args)))
        self.replace(fresh, new_base, node)

    def unview(self, stmt: Stmt, base: Var, new: Var, node: gast.AST) -> Var:
        """The base with the view's memory replaced by ``new``."""
        fn, args, lookup = stmt.prim.fn, stmt.args, self.rules.lookup
        if fn is operator.getitem:
            return self.call_primitive(lookup(setitem), (base, args[1], new), {}, node)
        if fn in _RESHAPES:
            return self.call_primitive(lookup(np.reshape), (new, base.aval.shape), {}, node)
        if fn is np.transpose:
            axes = stmt.param("axes")
            back = () if axes is None else (tuple(int(i) for i in np.argsort(axes)),)
            return self.call_primitive(lookup(np.transpose), (new, *back), {}, node)
        if fn is np.swapaxes:
            return self.call_primitive(lookup(np.swapaxes), (new, args[1], args[2]), {}, node)
        if fn is np.moveaxis:
            return self.call_primitive(lookup(np.moveaxis), (new, args[2], args[1]), {}, node)
        if fn is np.flip:
            return self.call_primitive(lookup(np.flip), (new,), dict(stmt.params), node)
        raise UnsupportedSyntax(f"this writes into the result of {stmt.prim.name}, which shares "
                                "memory with its argument; writing through it is not supported",
                                self.loc(node), "Copy it first (`.copy()`), or write into the "
                                "original array.")

    def check_writable(self, target: Any, node: gast.AST, shown: str, name: str,
                       fix: str) -> None:
        """Refuse updates numpy would refuse, and updates of the caller's arrays.

        ``shown`` is the update as the user wrote it (``x += ...``), ``name`` the array it
        writes into (``x``), ``fix`` how to avoid it.
        """
        if self.backward_mode:
            raise self.unsupported(node, f"`{shown}` in a derivative rule: rules are pure",
                                   "Write the update as `a = setitem(a, key, v)` "
                                   "(from yota_s2s.rules.indexing).")
        if not self.is_array(target):
            kind = target.aval if isinstance(target, Var) else type(target).__name__
            raise self.unsupported(node, f"`{shown}` assigns into an element of {kind}, which "
                                   "is not an array", "numpy scalars and Python numbers are "
                                   "immutable; make an array first (np.array, np.zeros, .copy()).")
        var = target
        while True:
            if self.is_input(var):
                raise ArgumentWriteError(f"`{shown}` would change the caller's array "
                                         f"{name if var is target else var.hint} in place",
                                         self.loc(node), fix)
            if not self.values[var].flags.writeable:
                raise self.unsupported(node, f"`{shown}` writes into a read-only view "
                                       f"(made by {self.views[var][1].prim.name})",
                                       "Copy it first (`.copy()`).")
            if var not in self.views:
                return
            var = self.current(self.views[var][0])


def _generated_code(scope: dict) -> bool:
    """Is ``scope`` the globals of a module yota-s2s wrote (a plain form: ``__yota_text__``)?"""
    return isinstance(scope.get("__yota_text__"), str)


def _may_repeat(key: Any, constants: set, values: dict) -> bool:
    """Can the key name one position twice? Only through integer index arrays: a constant one
    is checked, a traced one might."""
    parts = key if isinstance(key, tuple) else (key,)
    arrays = []
    for part in parts:
        if isinstance(part, Lit):
            part = part.value
        if isinstance(part, list):
            part = np.asarray(part)
        if isinstance(part, Var) and part in constants:
            part = values[part]
        if isinstance(part, Var):
            if part.aval.ndim > 0:
                return True
        elif isinstance(part, np.ndarray) and part.ndim > 0:
            arrays.append(part)
    if not arrays:
        return False
    if any(a.dtype == bool for a in arrays):
        return len(arrays) > 1
    flat = np.stack([a.ravel() for a in np.broadcast_arrays(*arrays)])
    return np.unique(flat, axis=1).shape[1] < flat.shape[1]


_IN_PLACE = {gast.Add: operator.iadd, gast.Sub: operator.isub, gast.Mult: operator.imul,
             gast.Div: operator.itruediv, gast.FloorDiv: operator.ifloordiv,
             gast.Mod: operator.imod, gast.Pow: operator.ipow, gast.MatMult: operator.imatmul,
             gast.BitAnd: operator.iand, gast.BitOr: operator.ior, gast.BitXor: operator.ixor,
             gast.LShift: operator.ilshift, gast.RShift: operator.irshift}
