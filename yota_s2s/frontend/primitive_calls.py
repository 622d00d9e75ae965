"""Calls of primitives (mixed into ``Evaluator``): bound to operands and options, recorded.

A primitive's call is bound to its signature (its operands, then its options, as
``primitive_signature`` makes it from the declaration in rules/); an operand becomes a tape
operand (an index key as numpy reads it, a list of traced values their stack), an option a
static value. With every operand static, the primitive is computed now (shapes, axes,
index metadata); otherwise ``emit`` records a tape statement, computed on the example values
(or on their abstract values: abstract.py) so that each Var knows its shape and dtype.
"""
from __future__ import annotations

import inspect
from typing import Any

import gast
import numpy as np

from ..errors import (InternalError, SourceLoc, StaticValueError, UnsupportedSyntax,
                      YotaError)
from ..ir.tape import Aval, Primitive, Stmt, Var, tree_atoms, tree_map
from ..ir.values import (MAX_LITERAL_SIZE, LocalFunction, is_traced, normalize_static, to_tree,
                         weak_tree)
from . import abstract
from .index_lists import index_uses
from .numpy_calls import guard_selection, stacked
from .outside_values import SPARSE_HINT

_signatures: dict[Primitive, inspect.Signature] = {}


def primitive_signature(prim: Primitive) -> inspect.Signature:
    """How a call of ``prim`` binds: its operands (``*xs`` a variadic one), then its options."""
    if prim not in _signatures:
        P = inspect.Parameter
        optional = dict(prim.optional)
        params = [P(o[1:], P.VAR_POSITIONAL) if o.startswith("*") else
                  P(o, P.POSITIONAL_OR_KEYWORD, **({"default": optional[o]} if o in optional else {}))
                  for o in prim.operands]
        kind = P.KEYWORD_ONLY if any(o.startswith("*") for o in prim.operands) else P.POSITIONAL_OR_KEYWORD
        params += [P(name, kind, default=default) for name, default in prim.options]
        _signatures[prim] = inspect.Signature(params)
    return _signatures[prim]


class PrimitiveCallsMixin:
    def call_primitive(self, prim: Primitive, args, kwargs: dict, node: gast.AST) -> Any:
        """``prim(*args, **kwargs)``: computed now when every operand is static and the result
        is not data, else recorded (``emit``)."""
        operands, params = self.bind_primitive(prim, args, kwargs, node)
        local = next((a.value for t in operands for a in tree_atoms(t)
                      if isinstance(getattr(a, "value", None), LocalFunction)), None)
        if local is not None:       # ys.odeint(rhs, ...) with rhs a def of the traced code
            raise self.unsupported(node, f"{prim.name} is given the function {local.name}, "
                                   "defined inside the compiled code; the generated code "
                                   "calls the functions given to it by name",
                                   f"Define {local.name} at the top level of a module, and "
                                   "pass what it reads from here as arguments.")
        if not any(isinstance(a, Var) for t in operands for a in tree_atoms(t)):
            if not prim.creates and not prim.effect:
                result = prim.apply([tree_map(lambda a: a.value, t) for t in operands], params)
                result = result[0] if prim.nout == 1 else result
                if not _is_data(result):
                    return result       # static: shapes, axes, scalars, index metadata
        guard_selection(self, prim, operands, node)
        if index_uses(self, prim, operands, node):      # inputs[t] of a list of ints
            result = self.emit(prim, operands, params, node)
            self.flattener.index_only.add(result)
            return result
        return self.emit(prim, operands, params, node)

    def bind_primitive(self, prim: Primitive, args, kwargs: dict, node: gast.AST):
        """The call's operands (as tape operand trees) and its options (static values, those
        given that differ from the default, and the ``written`` ones always)."""
        loc = self.loc(node)
        if not kwargs and len(args) == len(prim.operands) \
                and not any(o.startswith("*") for o in prim.operands):
            arguments = dict(zip(prim.operands, args))      # what bind gives, at a fraction
        else:
            try:
                arguments = primitive_signature(prim).bind(*args, **kwargs).arguments
            except TypeError as e:
                raise YotaError(f"{prim.name}: {e}", loc) from None
        operands, params, optional = [], {}, dict(prim.optional)
        for name in prim.operands:
            value = arguments.get(name.lstrip("*"), optional.get(name, ()))
            if name.startswith("*"):
                value = tuple(value)
            elif name == "key":
                value = self.index_key(value, node)
            elif "*" not in prim.sequences:
                value = self.operand_value(value, name in prim.sequences, node)
                if (prim.elementwise or prim.ufunc) and isinstance(value, (list, tuple)):
                    value = np.asarray(value)       # np.power(x, (2.0, 3.0)): static data
            operands.append(to_tree(value, loc, key=name == "key"))
        for name, default in prim.options:
            if name not in arguments:
                if name in prim.written:
                    params[name] = default
                continue
            value = self.outside.pinned(arguments[name], node)
            if is_traced(value):
                raise StaticValueError(f"the {name}= argument of {prim.name} must be known at "
                                       "compile time, but it is traced", loc,
                                       f"Pass {name} as a Python value (int, tuple, dtype).")
            value = _static_option(value)
            if not _same(value, default) or name in prim.written:
                params[name] = value
        return operands, params

    def index_key(self, key: Any, node: gast.AST) -> Any:
        """An index key as numpy reads it: a ``range`` is the array ``np.arange`` makes
        (``P[range(N), y]``), made when the code runs."""
        if isinstance(key, tuple):
            return tuple(self.index_key(k, node) for k in key)
        if isinstance(key, range):
            bounds = [key.start, key.stop, key.step] if key.step != 1 else \
                [key.start, key.stop] if key.start else [key.stop]
            return self.call(np.arange, bounds, {}, node)
        return key

    def operand_value(self, value: Any, sequence: bool, node: gast.AST) -> Any:
        """An operand as numpy reads it: where a sequence of arrays goes, a traced array is
        the list of its rows, and an element that is a list or tuple holding traced values an
        array (``np.append([[x, y]], B, axis=0)``); elsewhere a list or tuple holding traced
        values is an array, their ``np.stack`` (nested lists too, as ``np.asarray`` makes
        them)."""
        if sequence:
            if isinstance(value, Var):
                return self.iterate(value, node)
            if type(value) in (list, tuple) and any(
                    isinstance(v, (list, tuple)) and is_traced(v) for v in value):
                return type(value)([stacked(self, v, node) if isinstance(v, (list, tuple))
                                    and is_traced(v) else v for v in value])
            return value
        if isinstance(value, (list, tuple)) and is_traced(value):
            return stacked(self, value, node)
        return value

    def emit(self, prim: Primitive, operands: list, params: dict, node: gast.AST | None,
             grad_of: Var | None = None) -> Any:
        """Record ``prim`` on ``operands`` as a tape statement, computed on the example values
        (or their abstract values); its result Var(s), or the copy a view is read as."""
        loc = self.loc(node)
        operands = [tree_map(self.current, t) for t in operands]
        if self.backward_mode:      # constants of derivative rules never widen a gradient
            operands = [weak_tree(t) for t in operands]
        stmt = self.record(prim, operands, params, loc, self.rule_text, grad_of=grad_of)
        outs = stmt.outs
        copy = self.note_views(stmt, node)
        return copy if copy is not None else outs[0] if prim.nout == 1 else outs

    def record(self, prim: Primitive, operands: list, params: dict, loc: SourceLoc | None,
               rule: str | None, *, grad_of: Var | None = None,
               outs: tuple[Var, ...] | None = None) -> Stmt:
        """The statement ``prim(*operands, **params)`` at ``loc``, appended to the list of
        statements and computed on the example values (or their abstract values); its results
        are new Vars, or ``outs`` (of the same avals). ``emit`` without its reading of the
        current versions of the operands: the operands are the Vars meant."""
        if not prim.sparse:
            refuse_sparse(prim, operands, loc)
        ghosts = abstract.evaluate(self, prim, operands, params)     # shape and dtype only
        try:
            results = ghosts or prim.apply(self.concrete_operands(prim, operands), params)
        except YotaError:
            raise
        except Exception as e:
            if self.rule_domain is not None:     # a derivative rule, outside its domain
                what, fix = self.rule_domain
                raise YotaError(what, loc, fix) from None
            described = ", ".join(_describe(t) for t in operands)
            raise YotaError(f"{prim.name}({described}) fails: {e}", loc) from None
        if outs is None:
            outs = tuple(Var(Aval.of(r), grad_of=grad_of) for r in results)
        elif tuple(v.aval for v in outs) != tuple(Aval.of(r) for r in results):
            raise InternalError(f"{prim.name} gives {[str(Aval.of(r)) for r in results]}, "
                                f"not the {[str(v.aval) for v in outs]} of the Vars given", loc)
        order = [name for name, _ in prim.options]
        stmt = Stmt(outs, prim, tuple(operands),
                    tuple(sorted(params.items(), key=lambda kv: order.index(kv[0]))), loc, rule)
        for v, r in zip(outs, results):
            if ghosts:
                self.values.set_ghost(v, r, stmt)
            else:
                self.values[v] = r
        self.stmts.append(stmt)
        if ghosts and abstract.CHECK:
            abstract.check(ghosts, prim.apply(self.concrete_operands(prim, operands), params),
                           prim)
        return stmt

    def concrete(self, atom: Any) -> Any:
        """An operand's example value."""
        return self.values[atom] if isinstance(atom, Var) else atom.value

    def concrete_operands(self, prim: Primitive, operands: list) -> list:
        """The example values of ``operands``, copied where ``prim`` writes into one."""
        return abstract.writable(prim, [tree_map(self.concrete, t) for t in operands])


def _is_data(value: Any) -> bool:
    """A float array made from constants is data to compute when the code runs
    (``np.broadcast_to(1.0, shape)``, empty ones too), not a constant to write into the code."""
    return isinstance(value, np.ndarray) and value.size != 1 and (
        value.dtype.kind in "fc" or value.size > MAX_LITERAL_SIZE)


def _static_option(value: Any) -> Any:
    """An option's value as a rule sees it: lists as tuples, numpy scalar types as dtypes."""
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):
        return tuple(_static_option(v) for v in value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value)
    return normalize_static(value)


def _same(a: Any, b: Any) -> bool:
    """Is an option's value its default (of the same type)?"""
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def refuse_sparse(prim: Primitive, operands: list, loc: SourceLoc | None) -> None:
    """A scipy.sparse matrix is an operand of products only (the ``sparse`` trait)."""
    for v in (a for t in operands for a in tree_atoms(t)):
        if isinstance(v, Var) and v.aval.sparse:
            name = f" {v.hint}" if v.hint else ""
            raise UnsupportedSyntax(
                f"{prim.name} of the scipy.sparse matrix{name} ({v.aval}): a sparse matrix "
                "read from outside the function is an operand of products only", loc,
                SPARSE_HINT)


def _describe(tree: Any) -> str:
    """Operands as an error message shows them: avals and literals."""
    if isinstance(tree, tuple):
        return "(" + ", ".join(_describe(t) for t in tree) + ")"
    return str(tree.aval) if isinstance(tree, Var) else repr(tree.value)

