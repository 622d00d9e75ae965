"""Abstract evaluation: a statement's results known by shape and dtype, computed only if read.

The evaluator needs of most values only their shape, dtype and kind (an ndarray, a numpy
scalar, a Python number): the backward sweep never reads a number, and a forward chain of
elementwise operations is read only where Python code looks at it (a branch on a value, a
``float()``, a static key). So ``emit`` asks ``evaluate`` first; where it has an answer, the
Var's example value is a *ghost*: a zero-strided array of the real shape and dtype
(``np.broadcast_to`` of one element: no memory), a numpy scalar or a Python number of the
right type. ``Values`` holds the example values and computes a ghost's real value when it is
read (``values[v]``), from the statements that made it, and keeps it; ``values.peek(v)`` is the
value or its ghost, for questions about shape, dtype and kind. Compile time and memory then
grow with the program, not with the arrays.

How each primitive is evaluated abstractly (``evaluate``), by trait or function:

- elementwise ufuncs (the ``ufunc`` trait): the operands' broadcast shape; dtype and kind from
  the primitive applied to one-element stand-ins of the operands' dtypes and kinds;
- reductions (``np.sum``, ``mean``, ``max``, ``min``, ``prod``): the axes' shape; dtype and kind
  from the primitive on a stand-in of one element per axis;
- ``@``: the matmul shape rule; ``astype``: the operand's shape; creation from a static shape
  (``np.zeros``...); ``index_add``/``setitem`` in derivative rules: the target's shape;
- views (``x.T``, ``x[1:]``, ``b[:, None]``, ``np.broadcast_to``...) applied to the ghosts
  themselves: a view of a ghost is a ghost, and shares its memory as the real view would.
  A reshape may copy or not depending on the layout, so it is applied to ghosts only in
  derivative rules, where the evaluator does not track views;
- anything else: evaluated for real, as are statements whose operands include a value whose
  content decides the result's shape (a traced key or mask).

``YOTA_S2S_CHECK_ABSTRACT=1`` computes every abstract result for real too and compares them (the
tests can run this way).
"""
from __future__ import annotations

import builtins
import operator
import os
from typing import Any

import numpy as np

from ..ir.tape import Aval, Lit, Primitive, Stmt, Var, tree_atoms, tree_map
from ..ir.values import static_of
from ..rules.elementwise import astype
from ..rules.indexing import index_add, setitem
from ..rules.shape import ravel
from ..rules.stop import stop_gradient

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:                 # numpy < 2
    from numpy.core.numeric import normalize_axis_tuple

CHECK = os.environ.get("YOTA_S2S_CHECK_ABSTRACT", "") not in ("", "0")


class Values(dict):
    """Var -> example value. A ghost (see the module docstring) is computed, with the ghosts it
    depends on, when it is read, and kept from then on."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.made: dict[Var, Stmt] = {}     # ghost -> the statement that computes it

    def __getitem__(self, var: Var) -> Any:
        if var in self.made:
            self.force(var)
        return dict.__getitem__(self, var)

    def get(self, var: Var, default: Any = None) -> Any:
        return self[var] if var in self else default

    def peek(self, var: Var) -> Any:
        """The value, or its ghost: for its shape, dtype and kind only."""
        return dict.__getitem__(self, var)

    def is_ghost(self, var: Var) -> bool:
        return var in self.made

    def set_ghost(self, var: Var, ghost: Any, stmt: Stmt) -> None:
        dict.__setitem__(self, var, ghost)
        self.made[var] = stmt

    def __setitem__(self, var: Var, value: Any) -> None:
        self.made.pop(var, None)
        dict.__setitem__(self, var, value)

    def derive(self, var: Var, source: Var, convert: Any = None) -> None:
        """``var`` holds ``convert(source's value)`` (the value itself without ``convert``):
        computed when read if ``source`` is a ghost, so a name bound to a value does not make
        the value (a loop's carried values and invariants, a saved value)."""
        convert = convert or _same
        if not self.is_ghost(source):
            self[var] = convert(dict.__getitem__(self, source))
            return
        sample = self.peek(source)          # (a ghost: a Python number, or no memory)
        if isinstance(sample, np.ndarray):
            sample = ghost(var.aval.shape, var.aval.dtype)
        made = Primitive("example", convert, ("value",))
        self.set_ghost(var, convert(sample), Stmt((var,), made, (source,)))

    def force(self, var: Var) -> None:
        """Compute ``var`` and the ghosts it depends on, in the order they were made."""
        needed, stack = {}, [var]
        while stack:
            v = stack.pop()
            stmt = self.made.get(v)
            if stmt is None or v in needed:
                continue
            needed[v] = stmt
            stack.extend(u for u in stmt.uses() if u in self.made and u not in needed)
        done: set[int] = set()
        for v in sorted(needed, key=lambda v: v.id):
            stmt = needed[v]
            if id(stmt) in done or v not in self.made:
                continue
            done.add(id(stmt))
            operands = writable(stmt.prim, [tree_map(self._concrete, t) for t in stmt.args])
            results = stmt.prim.apply(operands, dict(stmt.params))
            for out, value in zip(stmt.outs, results):
                self[out] = value

    def _concrete(self, atom: Any) -> Any:
        return dict.__getitem__(self, atom) if isinstance(atom, Var) else atom.value


def writable(prim: Any, operands: list) -> list:
    """``operands`` for ``prim.apply``: an in-place primitive writes into its first operand,
    which is copied where it is read-only (a ghost standing for zeros: a saved stack, an
    accumulator that starts as zeros)."""
    first = operands[0] if operands else None
    if prim.inplace and isinstance(first, np.ndarray) and not first.flags.writeable:
        operands[0] = first.copy()
    return operands


def _same(value: Any) -> Any:
    return value


def ghost(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` that holds one element (read-only, zero strides)."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def evaluate(ev: Any, prim: Any, operands: list, params: dict) -> tuple | None:
    """The results of ``prim`` on ``operands`` (trees of Vars and Lits) as ghosts, or None where
    this primitive is evaluated for real."""
    values: Values = ev.values
    if not isinstance(values, Values) or prim.effect:
        return None
    if prim.emit[:1] == ("loop",):
        return _region(values, params["loop"])
    if prim.emit[:1] == ("branch",):
        return _branch(params["branch"])
    if prim.emit[:1] in (("while",), ("unwind",)):
        return _whiles(prim, operands, params)
    if prim.nout != 1:
        return None
    atoms = [a for t in operands for a in tree_atoms(t)]
    vars_ = [a for a in atoms if isinstance(a, Var)]
    fn = prim.fn
    if not vars_ and fn not in _CREATIONS or any(v.aval.dtype.kind == "O" for v in vars_):
        return None         # (an object array's results depend on the objects in it)
    if vars_ and all(not values.is_ghost(v) for v in vars_) and not _makes_data(prim):
        return None         # a view of real values: made for real (it costs no memory)
    try:
        with np.errstate(all="ignore"):
            if isinstance(prim.ufunc, np.ufunc) and prim.ufunc.signature is None:
                result = _elementwise(values, prim, operands, params)
            elif fn in _REDUCTIONS:
                result = _reduction(values, prim, operands, params)
            elif fn is operator.matmul:
                result = _matmul(values, prim, operands, params)
            elif fn is astype:
                result = _astype(values, operands, params)
            elif fn in _CREATIONS:
                result = _creation(values, fn, operands, params)
            elif fn in (index_add, setitem) and ev.backward_mode:
                result = _like_target(values, operands)
            elif fn in (builtins.float, builtins.complex) and vars_[0].aval.size == 1:
                result = fn(1)
            elif fn in _VIEWS or (fn in _RESHAPES and ev.backward_mode):
                result = _on_ghosts(values, prim, operands, params)
            else:
                return None
    except Exception:
        return None         # let the real evaluation say what is wrong
    return None if result is None else (result,)


def _region(values: Values, loop: Any) -> tuple:
    """A loop region's results: the carried values after the last step, of the avals they
    have before it (the region trial checked that a step keeps them: frontend/regions.py), of
    the kind (an array, a numpy scalar, a Python number) the body's result has after the
    trial's step. The steps run only if Python code reads a result (``run_loop``)."""
    results = []
    for c, out in zip(loop.carried, loop.outs):
        if not isinstance(out, Var):
            results.append(out.value)
            continue
        sample = values.peek(out) if out in values else values.peek(c) if c in values else None
        aval = c.aval
        if isinstance(sample, np.ndarray) or sample is None:
            results.append(ghost(aval.shape, aval.dtype))
        elif aval.weak:
            results.append(type(sample)(0))
        else:
            results.append(aval.dtype.type(0))
    return tuple(results)


def _whiles(prim: Any, operands: list, params: dict) -> tuple:
    """A while or unwind statement's results (ir/whiles.py), of the avals its tapes give
    them: the loop runs only if Python code reads a result."""
    if prim.emit[0] == "while":
        loop = params["loop"]
        avals = [i.var.aval for i in loop.body.inputs[:loop.ncarry]]
        if loop.record:
            avals.append(Aval((), np.dtype(np.int64)))
            avals += loop.stack_avals()
    else:
        avals = [r.aval if isinstance(r, Var) else Aval.of(r.value)
                 for r in params["unwind"].step.result]
    results = tuple(ghost(a.shape, a.dtype) if a.ndim else a.dtype.type(0) for a in avals)
    return results


def _branch(branch: Any) -> tuple:
    """A branch statement's results (ir/branch.py), of the avals both arms give them: the arm
    runs only if Python code reads a result (``run_branch``)."""
    results = []
    for out in branch.then.result:
        aval = out.aval if isinstance(out, Var) else Aval.of(out.value)
        if aval.weak:
            results.append(aval.dtype.type(0).item())
        elif aval.ndim:
            results.append(ghost(aval.shape, aval.dtype))
        else:
            results.append(aval.dtype.type(0))
    return tuple(results)


def _makes_data(prim: Any) -> bool:
    """A primitive that makes a new array from real operands (not a view of them)."""
    return prim.fn not in _VIEWS and prim.fn not in _RESHAPES


def _stand_in(values: Values, atom: Any, ndim: int | None = None) -> Any:
    """A one-element value of ``atom``'s dtype and kind (``ndim`` axes of length 1 if given)."""
    if not isinstance(atom, Var):
        return atom.value
    aval = atom.aval
    if aval.weak and not isinstance(values.peek(atom), np.ndarray):
        return type(values.peek(atom))(1)
    if ndim:
        return np.ones((1,) * ndim, aval.dtype)
    value = values.peek(atom)
    return np.ones((), aval.dtype) if isinstance(value, np.ndarray) else aval.dtype.type(1)


def _result(sample: Any, shape: tuple) -> Any:
    """A ghost of ``shape`` with ``sample``'s dtype and kind."""
    if isinstance(sample, np.ndarray) or shape != ():
        return ghost(shape, np.result_type(sample))
    return sample


_NUMBERS = (bool, int, float, complex, np.bool_, np.number, np.ndarray)


def _broadcast_shapes(shapes: list[tuple]) -> tuple:
    """``np.broadcast_shapes(*shapes)``, at a fraction of its cost (it makes an array of each
    shape): ValueError where they do not broadcast."""
    ndim = max(map(len, shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for axis, n in enumerate(shape, ndim - len(shape)):
            if n != 1:
                if out[axis] == 1:
                    out[axis] = n
                elif out[axis] != n:
                    raise ValueError(f"shapes {shapes} do not broadcast")
    return tuple(out)


def _shape(atom: Any) -> tuple:
    return atom.aval.shape if isinstance(atom, Var) else np.shape(atom.value)


def _elementwise(values: Values, prim: Any, operands: list, params: dict) -> Any:
    if any(isinstance(t, tuple) for t in operands):
        return None
    if all(a.aval.weak for a in operands if isinstance(a, Var)):
        return None     # Python numbers: Python's rules (-2.0 ** 0.5 is complex, 1.0 / 0.0 fails)
    if any(isinstance(a, Lit) and not isinstance(a.value, _NUMBERS) for a in operands):
        return None     # x * Fraction(1, 2) is an object array: numpy decides from the value
    shape = _broadcast_shapes([_shape(t) for t in operands])
    sample = prim.apply([_stand_in(values, t) for t in operands], params)[0]
    return _result(sample, shape)


_REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.prod)


def _reduction(values: Values, prim: Any, operands: list, params: dict) -> Any:
    (a,) = operands
    if not isinstance(a, Var) or a.aval.weak:
        return None
    shape, ndim = a.aval.shape, a.aval.ndim
    if 0 in shape and prim.fn in (np.max, np.min):
        return None     # numpy refuses: let it say so
    axis = params.get("axis")
    axes = set(range(ndim)) if axis is None else set(normalize_axis_tuple(axis, ndim))
    if params.get("keepdims"):
        out = tuple(1 if i in axes else d for i, d in enumerate(shape))
    else:
        out = tuple(d for i, d in enumerate(shape) if i not in axes)
    sample = prim.apply([_stand_in(values, a, ndim)], params)[0]
    return None if np.ndim(sample) != len(out) else _result(sample, out)


def _matmul(values: Values, prim: Any, operands: list, params: dict) -> Any:
    a, b = operands
    if not (isinstance(a, Var) and isinstance(b, Var)) or not a.aval.ndim or not b.aval.ndim:
        return None
    sa, sb = a.aval.shape, b.aval.shape
    a2 = sa if len(sa) > 1 else (1,) + sa
    b2 = sb if len(sb) > 1 else sb + (1,)
    if a2[-1] != b2[-2]:
        return None
    out = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(sb) == 1:
        out = out[:-1]
    if len(sa) == 1:
        out = out[:-2] + out[-1:] if len(sb) > 1 else out[:-1]
    sample = prim.apply([_stand_in(values, a, len(sa)), _stand_in(values, b, len(sb))],
                        params)[0]
    return _result(sample, out)


def _astype(values: Values, operands: list, params: dict) -> Any:
    x, dtype = operands
    if not isinstance(x, Var) or x.aval.weak:
        return None
    sample = astype(_stand_in(values, x), dtype.value)
    return _result(sample, x.aval.shape)


_CREATIONS = (np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like,
              np.empty_like, np.full_like)


def _creation(values: Values, fn: Any, operands: list, params: dict) -> Any:
    if any(isinstance(a, Var) for t in operands[1:] for a in tree_atoms(t)):
        return None
    first, rest = operands[0], [static_of(t) for t in operands[1:]]
    if fn in (np.zeros, np.ones, np.empty, np.full):
        if any(isinstance(a, Var) for a in tree_atoms(first)):
            return None
        return ghost(_as_shape(static_of(first)), fn((), *rest, **params).dtype)
    if not isinstance(first, Var) or first.aval.weak:
        return None
    shape = params.get("shape")
    sample = fn(np.ones((), first.aval.dtype), *rest,
                **{k: v for k, v in params.items() if k != "shape"})
    return ghost(first.aval.shape if shape is None else _as_shape(shape), sample.dtype)


def _as_shape(shape: Any) -> tuple:
    return tuple(int(s) for s in shape) if isinstance(shape, (tuple, list)) else (int(shape),)


def _like_target(values: Values, operands: list) -> Any:
    a = operands[0]
    if not isinstance(a, Var) or not isinstance(values.peek(a), np.ndarray):
        return None
    return ghost(a.aval.shape, a.aval.dtype)


_VIEWS = (operator.getitem, np.transpose, np.expand_dims, np.squeeze, np.atleast_1d,
          np.atleast_2d, np.atleast_3d, np.broadcast_to, np.swapaxes, np.moveaxis, np.rollaxis,
          np.flip, np.fliplr, np.flipud, np.rot90, np.diagonal, stop_gradient)
_RESHAPES = (np.reshape, ravel)


def _on_ghosts(values: Values, prim: Any, operands: list, params: dict) -> Any:
    """A view of the ghosts (a key that is itself traced decides the shape: not here)."""
    if prim.fn is operator.getitem and any(isinstance(a, Var) for a in tree_atoms(operands[1])):
        return None
    first = operands[0]
    if not isinstance(first, Var) or not isinstance(values.peek(first), np.ndarray):
        return None
    if any(isinstance(a, Var) for a in tree_atoms(tuple(operands[1:]))):
        return None
    result = prim.apply([tree_map(lambda a: values.peek(a) if isinstance(a, Var) else a.value, t)
                         for t in operands], params)[0]
    if isinstance(result, np.ndarray) and not np.may_share_memory(result, values.peek(first)):
        return ghost(result.shape, result.dtype)        # (fancy indexing copies)
    return result


def check(ghosts: tuple, real: tuple, prim: Any) -> None:
    """``YOTA_S2S_CHECK_ABSTRACT``: the ghosts have the real results' avals and kinds."""
    for g, r in zip(ghosts, real):
        same_kind = isinstance(g, np.ndarray) == isinstance(r, np.ndarray) and \
            (isinstance(g, np.ndarray) or type(g) is type(r))
        if Aval.of(g) != Aval.of(r) or not same_kind:
            raise AssertionError(f"abstract evaluation of {prim.name}: {Aval.of(g)} "
                                 f"{type(g).__name__}, evaluated: {Aval.of(r)} {type(r).__name__}")
