"""Algebraic simplification: the identities a careful person never writes.

    x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0, x ** 1, x +- np.zeros(...)  ->  x
    -(-x) -> x;   -1 * x, 0 - x, np.zeros(...) - x -> -x
    reshape / broadcast_to / astype / squeeze / expand_dims / ravel to the same shape -> x
    a reshape (transpose, expand_dims, x[key], ...) of broadcast_to(c, s) -> broadcast_to(c, new
        shape), or ``c`` itself for a single element
    reshape(sum(x, axis, keepdims=True), s) -> sum(x, axis)   when that already has shape s
    x.T.T -> x
    np.where(c, np.where(c, a, b), d), np.where(c, np.where(~c, b, a), d) -> np.where(c, a, d)
    broadcast_to(c, s) * k -> broadcast_to(c * k, s);  broadcast_to(a, s) * b -> a * b
        when ``a`` and ``b`` broadcast to the result by themselves (no array of ones);
        broadcast_to(u, s) / k -> broadcast_to(u / k, s) (the small array is scaled)
    (a @ b).T -> b.T @ a.T for matrices (no strided view of a product)
    sums and products of broadcast constants -> row and column sums (see broadcast.py)

An identity only applies where the result has exactly the operand's shape and dtype, so
dropping it cannot change a broadcast or a promotion.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir.rewrite import Folding, resolver, substitute, substitute_stmt, use_counts
from ..ir.tape import Aval, Lit, Stmt, Tape, Var, tree_vars
from ..ir.values import normalize_static, static_of, to_tree
from ..rules.elementwise import astype
from ..rules.indexing import setitem
from ..rules.registry import RuleSet
from ..rules.shape import ravel
from .broadcast import broadcast_constant

# the operand itself when the result has its shape and dtype
_SAME_SHAPE_NOOPS = {np.reshape, np.broadcast_to, astype, np.squeeze, np.expand_dims, ravel}
# elementwise with broadcasting: may operate on what a broadcast_to broadcast
_ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
                np.maximum, np.minimum, np.where}
# a rearrangement of a constant array is that constant, in the new shape
_SHAPE_OPS = {np.reshape, np.expand_dims, np.squeeze, np.transpose, ravel, np.broadcast_to,
              np.swapaxes}


def simplify(tape: Tape, rules: RuleSet) -> tuple[Tape, bool]:
    mapping: dict[Var, object] = {}
    resolve = resolver(mapping)
    producer: dict[Var, Stmt] = {}
    uses = use_counts(tape)
    targets = tape.in_place_targets()
    names = tape.copy()         # a scratch copy: the names this pass gives go in its tables
    kept, changed = [], False
    folding = Folding(tape, mapping)
    for stmt in tape.stmts:
        folding.note(stmt)
        stmt = substitute_stmt(stmt, resolve)
        new = broadcast_constant(stmt, producer, rules)
        if new is None:
            new = _simplify(stmt, producer, uses, rules)
        if isinstance(new, Var) and stmt.outs and stmt.out in targets:
            new = None      # an in-place target must stay a fresh array, not become another
        if isinstance(new, Stmt):
            new = [new]
        if new is None or isinstance(new, list):
            replaced = new or [stmt]
            kept += replaced
            for s in replaced:
                for o in s.outs:
                    producer[o] = s
            folding.kept(replaced, stmt, producer)
        else:
            folding.replaced(stmt)
            mapping[stmt.out] = new
            _take_over_name(stmt.out, new, producer, names)
        changed |= new is not None
    if not changed:
        return tape, False
    return substitute(tape, mapping, kept, hints=names.hints, primals=names.primals,
                      folded=folding.folded), True


def _take_over_name(old: Var, new, producer: dict[Var, Stmt], names: Tape) -> None:
    """The value that replaces ``old`` takes its name where it has none of its own (in the
    side tables of ``names``): ``total = 0.0 + t`` makes ``t`` the ``total``, and
    ``dx = t * 1`` makes a temporary of the backward pass the gradient ``dx`` (not ``t2``)."""
    if not isinstance(new, Var):
        return
    if names.hint_of(new) is None and names.primal_of(new) is None \
            and names.hint_of(old) is not None:
        names.hints[new] = names.hint_of(old)
    if names.primal_of(old) is not None and names.primal_of(new) is None \
            and names.hint_of(new) is None and new in producer and producer[new].rule is not None:
        names.primals[new] = names.primal_of(old)


def _is(atom, value) -> bool:
    return isinstance(atom, Lit) and isinstance(atom.value, (int, float, np.number)) \
        and not isinstance(atom.value, bool) and atom.value == value


def _same(atom, out: Var) -> bool:
    return isinstance(atom, Var) and atom.aval == out.aval


def _simplify(stmt: Stmt, producer: dict[Var, Stmt], uses, rules: RuleSet):
    fn, args, out = stmt.prim.fn, stmt.args, stmt.outs[0] if stmt.outs else None
    if fn in (operator.mul, operator.add) and len(args) == 2:
        unit = 1 if fn is operator.mul else 0
        a, b = args
        if _is(b, unit) and _same(a, out):
            return a
        if _is(a, unit) and _same(b, out):
            return b
        if fn is operator.mul and (_is(a, -1) and _same(b, out) or _is(b, -1) and _same(a, out)):
            return _neg(stmt, b if _is(a, -1) else a, rules)
    if fn is operator.add:
        for zero, other in ((args[0], args[1]), (args[1], args[0])):
            if _made_by(zero, np.zeros, producer) and _same(other, out):
                return other                      # a fresh array of zeros adds nothing
    if fn in (operator.truediv, operator.pow) and _is(args[1], 1) and _same(args[0], out):
        return args[0]
    if fn is operator.sub:
        if _is(args[1], 0) and _same(args[0], out):
            return args[0]
        if _is(args[0], 0) and _same(args[1], out):
            return _neg(stmt, args[1], rules)
        if _made_by(args[1], np.zeros, producer) and _same(args[0], out):
            return args[0]
        if _made_by(args[0], np.zeros, producer) and _same(args[1], out):
            return _neg(stmt, args[1], rules)     # (an unwind with nothing to do gave zeros)
    if fn is operator.neg and _made_by(args[0], operator.neg, producer):
        inner = producer[args[0]]
        if _same(inner.args[0], out):
            return inner.args[0]
    if fn in _SAME_SHAPE_NOOPS and _same(args[0], out):
        return args[0]
    if (fn in _SHAPE_OPS or (fn is operator.getitem and not any(tree_vars(args[1])))) \
            and _made_by(args[0], np.broadcast_to, producer):
        inner = producer[args[0]]
        if isinstance(inner.args[0], Lit) and np.size(inner.args[0].value) == 1:  # 1.0 or [1.0]
            value = inner.args[0].value
            # the constant as a scalar: it broadcasts to any shape ([[1.0]] does not to (3,))
            const = inner.args[0] if np.ndim(value) == 0 else \
                Lit(normalize_static(np.reshape(value, ())))
            if out.aval.shape == () and np.result_type(value) == out.aval.dtype:
                return const                # one element of a constant is the constant
            return inner.replace(outs=stmt.outs, args=(const, to_tree(out.aval.shape)))
    if fn is operator.getitem and isinstance(args[0], Var):
        read = _read_past_write(stmt, producer.get(args[0]))
        if read is not None:
            return read
    if fn is np.sum and stmt.param("axis") == () and _same(args[0], out):
        return args[0]
    if fn is np.transpose and _transposed_product(stmt, producer, uses):
        return _transposed_product(stmt, producer, uses)
    if fn is np.transpose and stmt.param("axes") is None \
            and _made_by(args[0], np.transpose, producer):
        inner = producer[args[0]]
        if inner.param("axes") is None and _same(inner.args[0], out):
            return inner.args[0]
    if fn is np.reshape and isinstance(args[0], Var):
        return _drop_kept_axes(stmt, producer.get(args[0]))
    if fn is np.where:
        nested = _nested_where(stmt, producer)
        if nested is not None:
            return nested
    if fn in _ELEMENTWISE:
        return _through_broadcast(stmt, producer)
    return None


def _nested_where(stmt: Stmt, producer: dict[Var, Stmt]) -> Stmt | None:
    """``np.where(c, np.where(c, a, b), d)`` -> ``np.where(c, a, d)``, and ``b`` for the
    inner one's other choice (the same on the other side; ``~c`` inside picks the other
    choice), when that keeps the shape and dtype."""
    cond, *choices = stmt.args
    for i, choice in enumerate(choices):
        if not _made_by(choice, np.where, producer):
            continue
        inner = producer[choice].args
        if inner[0] is cond:
            picked = inner[1 + i]
        elif _negation(inner[0], cond, producer):
            picked = inner[2 - i]
        else:
            continue
        trial = list(choices)
        trial[i] = picked
        if np.result_type(*(_dtype_arg(a) for a in trial)) == stmt.out.aval.dtype and \
                np.broadcast_shapes(*(_shape(a) for a in [cond, *trial])) == stmt.out.aval.shape:
            return stmt.replace(args=(cond, *trial))
    return None


def _negation(a, b, producer: dict[Var, Stmt]) -> bool:
    """Is one of the boolean masks ``a``, ``b`` the other's ``~`` (``np.logical_not``)?"""
    for x, y in ((a, b), (b, a)):
        if isinstance(y, Var) and y.aval.dtype == bool and any(
                _made_by(x, fn, producer) and producer[x].args[0] is y
                for fn in (operator.invert, np.invert, np.logical_not)):
            return True
    return False


def _made_by(atom, fn, producer: dict[Var, Stmt]) -> bool:
    """Is ``atom`` the result of a call of the primitive of ``fn``?"""
    made = producer.get(atom) if isinstance(atom, Var) else None
    return made is not None and made.prim.fn is fn


def _through_broadcast(stmt: Stmt, producer: dict[Var, Stmt]):
    """Operate on what was broadcast instead of the broadcast array, when the result keeps
    its shape and dtype: constants fold, and arrays of ones never get made."""
    args = list(stmt.args)
    for i, arg in enumerate(args):
        if not _made_by(arg, np.broadcast_to, producer):
            continue
        inner = producer[arg]
        src, shape = inner.args
        others = args[:i] + args[i + 1:]
        if isinstance(src, Lit) and all(isinstance(o, Lit) for o in others) \
                and static_of(shape) == stmt.out.aval.shape:
            values = [a.value if a is not arg else src.value for a in args]
            folded = stmt.prim.fn(*values)
            if np.ndim(folded) == 0 and np.result_type(folded) == stmt.out.aval.dtype:
                return inner.replace(outs=stmt.outs, args=(Lit(folded), shape))
        trial = args[:i] + [src] + args[i + 1:]
        if np.result_type(*(_dtype_arg(a) for a in trial)) != stmt.out.aval.dtype:
            continue
        weak = not any(_strong(a) for a in trial)     # Python floats give a Python float
        if np.broadcast_shapes(*(_shape(a) for a in trial)) == stmt.out.aval.shape \
                and weak == stmt.out.aval.weak:
            return stmt.replace(args=tuple(trial))
        if isinstance(src, Var) and all(isinstance(o, Lit) and np.ndim(o.value) == 0 for o in others):
            # broadcast_to(u, s) / 6 -> broadcast_to(u / 6, s): scale the small array
            small = Var(Aval(src.aval.shape, stmt.out.aval.dtype, weak))
            return [stmt.replace(outs=(small,), args=tuple(trial)),
                    inner.replace(outs=stmt.outs, args=(small, shape), loc=stmt.loc, rule=stmt.rule)]
    return None


def _transposed_product(stmt: Stmt, producer: dict[Var, Stmt], uses) -> list[Stmt] | None:
    """``(a @ b).T`` -> ``b.T @ a.T`` for matrices in the backward section (the forward keeps
    the user's own form): the product is made in the order it is read, not as a transposed
    (strided) view, and transposes of transposes cancel."""
    if not _made_by(stmt.args[0], operator.matmul, producer):
        return None
    inner = producer[stmt.args[0]]
    if inner.rule is None or uses[stmt.args[0]] != 1 or stmt.params or stmt.out.aval.ndim != 2:
        return None
    a, b = inner.args
    if not (isinstance(a, Var) and isinstance(b, Var) and a.aval.ndim == 2 and b.aval.ndim == 2):
        return None
    bt, at = Var(Aval(b.aval.shape[::-1], b.aval.dtype)), Var(Aval(a.aval.shape[::-1], a.aval.dtype))
    return [stmt.replace(outs=(bt,), args=(b,)), stmt.replace(outs=(at,), args=(a,)),
            inner.replace(outs=stmt.outs, args=(bt, at), loc=stmt.loc, rule=stmt.rule)]


def _shape(atom) -> tuple:
    return atom.aval.shape if isinstance(atom, Var) else np.shape(atom.value)


def _strong(atom) -> bool:
    """A numpy value (an array or numpy scalar), not a Python scalar."""
    if isinstance(atom, Lit):
        return isinstance(atom.value, (np.ndarray, np.generic))
    return not atom.aval.weak


def _dtype_arg(atom):
    """What decides the result dtype under numpy's promotion rules (Python scalars are weak)."""
    if isinstance(atom, Lit):
        return atom.value
    if atom.aval.weak:
        return atom.aval.dtype.type(0).item()
    return atom.aval.dtype


def _read_past_write(stmt: Stmt, write: Stmt | None):
    """``a_1 = setitem(a, k, v); a_1[j]``: for static ints, ``a[j]`` when ``j != k`` and ``v``
    when they are the same element (as in the gradient of ``out[i] = ...`` in a loop)."""
    if write is None or write.prim.fn is not setitem:
        return None
    base, written, value = write.args
    read, n = stmt.args[1], stmt.args[0].aval.shape[0] if stmt.args[0].aval.ndim else 0
    if not (_static_int(read) and _static_int(written)) or n == 0:
        return None
    if read.value % n != written.value % n:
        return stmt.replace(args=(base, read))
    if isinstance(value, Lit) or (isinstance(value, Var) and value.aval == stmt.out.aval):
        return value if not isinstance(value, Lit) or stmt.out.aval.shape == () else None
    return None


def _static_int(atom) -> bool:
    return isinstance(atom, Lit) and type(atom.value) is int


def _neg(stmt: Stmt, x, rules: RuleSet) -> Stmt:
    return stmt.replace(prim=rules.lookup(operator.neg), args=(x,), params=())


def _drop_kept_axes(stmt: Stmt, inner: Stmt | None):
    """``reshape(sum(x, axis, keepdims=True), s)`` is ``sum(x, axis)`` when shapes agree."""
    if inner is None or inner.prim.fn is not np.sum or not inner.param("keepdims"):
        return None
    axis = inner.param("axis")
    source = inner.args[0]
    if not isinstance(source, Var):
        return None
    shape = source.aval.shape
    axes = range(len(shape)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes}
    if tuple(n for i, n in enumerate(shape) if i not in axes) != stmt.out.aval.shape:
        return None
    params = tuple((k, v) for k, v in inner.params if k != "keepdims")
    return stmt.replace(prim=inner.prim, args=inner.args, params=params)
