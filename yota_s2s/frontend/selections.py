"""Boolean masks whose count depends on the data, written as selects over the whole array.

``z[pos] = np.exp(-x[pos])`` reads as many elements as ``pos`` holds True. Traced as it is
written, every shape after ``x[pos]`` is the example's count, and a guard checks the count
when the code runs (``numpy_calls.guard_selection``): the module is right for that count
only, and every new minibatch fails it. Where what a mask selects feeds only elementwise work
that is written back through the same mask, or summed, nothing needs the count, and
``select_masks`` (run on a trace's statements when it ends) writes that work over the whole
array instead::

    z[pos] = np.exp(-x[pos])    ->  xs = np.where(pos, x, fill)
                                    z = np.where(pos, np.exp(-xs), z)
    np.sum(np.log(x[x > 0]))    ->  np.sum(np.where(m, np.log(xs), 0.0))

and the guards on that mask's count go. A mask is "the same" where it is computed the same
way from the same values (``~pos`` written twice is one mask).

The lanes the mask leaves out compute values that are thrown away; they must not overflow or
divide by zero, or ``0 * inf`` would put a nan in the gradient (``exp(-x)`` at ``x = -800``).
They are given the value ``fill`` of the first lane the mask selects (``np.argmax(mask)``):
the work is elementwise, so every lane then computes what that selected lane computes, which
the program computes anyway, and a value is no more out of its domain than the program's own
(the backward's selects give those lanes no gradient either way). ``fill`` is a constant for
differentiation (``stop_gradient``). Where nothing is selected, ``fill`` is the first element
(unselected): numpy may warn about its value then, but the selects drop it, and the values
and gradients are right. A selection copied as it is (``top[neg] = z[neg]``) needs no fill.

A mask keeps its guard wherever anything else depends on its count: a selected value (or one
computed from it) used otherwise (a matrix product, a mean, a row, the function's result,
another mask's update), its shape read by the code (``len``, ``.shape``: ``static_reads``), a
selection of rows (``x[m, :]``, a mask of fewer dimensions than the array), ``np.argwhere``.
"""
from __future__ import annotations

import operator
import types
from typing import Any

import numpy as np

from ..ir.tape import Lit, Stmt, Var, tree_atoms, tree_map, tree_vars
from ..rules.elementwise import astype
from ..rules.indexing import index_add, setitem
from ..rules.stop import stop_gradient

_COUNTED = (np.argwhere, np.flatnonzero)    # a result of the mask's count, beside x[mask]


def select_masks(ev: Any, stmts: list[Stmt], escapes: set[Var]) -> list[Stmt]:
    """``stmts`` with each selection through a mask that only elementwise work reads, written
    back through the mask (or summed), written as selects, and the guards on its count gone
    (see the module's doc). ``escapes``: Vars read other than by ``stmts`` (the result)."""
    if not ev.selection_guards:
        return stmts
    plan = _Plan(stmts)
    for v in escapes | ev.static_reads:
        plan.block(v)
    free = plan.free()
    if not free:
        return stmts
    return _rewritten(ev, plan, free)


def select_masks_in_step(ev: Any, body: list[Stmt], frame: Any, containers: dict) -> list[Stmt]:
    """``select_masks`` on the statements of a loop's trial step (frontend/regions.py), so
    that a step with such a selection stays one program for every step, and the loop a
    region. What outlives the step is read from the frame's names, the lists and dicts the
    step reaches (``containers``: the trial's watch) and the update tables; where one of
    them holds an object this does not look into, the step is left as it is."""
    if not ev.selection_guards:
        return body
    escapes: set[Var] = set()
    roots = [*frame.locals.values(), *ev.latest.keys(), *ev.latest.values(), *ev.views,
             *(obj for obj, _ in containers.values())]
    seen: set[int] = set()
    while roots:
        value = roots.pop()
        if isinstance(value, Var):
            escapes.add(value)
        elif isinstance(value, (list, tuple, set, dict)):
            if id(value) not in seen:
                seen.add(id(value))
                roots += [*value.keys(), *value.values()] if isinstance(value, dict) else value
        elif not _plain(value):
            return body
    return select_masks(ev, body, escapes)


def _plain(value: Any) -> bool:
    """A value that holds no traced one: a number, a string, an array, a function, a module."""
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes, range,
                                               slice, np.ndarray, np.generic, np.dtype, type,
                                               types.FunctionType, types.BuiltinFunctionType,
                                               types.ModuleType))


class _Plan:
    """What each statement is to a mask (by its key: ``mask_key``): a selection (``leaf``),
    elementwise work on selected values (``work``), a write back (``sink``, ``scalar``), a
    sum (``sum``); the masks that something else depends on (``blocked``)."""

    def __init__(self, stmts: list[Stmt]):
        self.stmts = stmts
        self.keys: dict[Var, int] = {}
        self.numbers: dict[Any, int] = {}
        self.selected: dict[Var, tuple[Any, Var]] = {}   # a selected value: (mask key, mask)
        self.leaves: dict[Var, frozenset[int]] = {}      # the selections it is computed from
        self.worked: set[int] = set()                    # selections that work reads
        self.roles: dict[int, tuple[str, Any]] = {}
        self.counted: dict[Any, list[int]] = {}          # statements shaped by a mask's count
        self.blocked: set = set()
        for i, stmt in enumerate(stmts):
            self.number(stmt)
            self.classify(i, stmt)

    def mask_key(self, var: Var) -> int:
        """A value number: equal for masks computed the same way from the same values."""
        key = self.keys.get(var)
        if key is None:         # an input, or a value from outside the statements
            key = self.keys[var] = self.numbers.setdefault(("var", var.id), len(self.numbers))
        return key

    def number(self, stmt: Stmt) -> None:
        """The value numbers of ``stmt``'s results (in order: its operands have theirs): the
        same for the same elementwise function of the same values (comparisons, ``~``, casts:
        what masks are made of; anything else is itself only)."""
        shape: Any = None
        prim = stmt.prim
        if len(stmt.outs) == 1 and (prim.elementwise or prim.ufunc is not None) \
                and not (prim.effect or prim.creates or prim.inplace):
            shape = (prim, tuple(tree_map(lambda a: self.mask_key(a) if isinstance(a, Var)
                                          else a, t) for t in stmt.args), stmt.params)
            try:
                hash(shape)
            except TypeError:       # an unhashable option: the value is itself only
                shape = None
        for v in stmt.outs:
            self.keys[v] = self.numbers.setdefault(shape or ("var", v.id), len(self.numbers))

    def block(self, var: Var) -> None:
        if var in self.selected:
            self.blocked.add(self.selected[var][0])

    def free(self) -> set:
        """The masks whose every count-shaped statement is rewritten."""
        return {k for k, counted in self.counted.items()
                if k not in self.blocked and all(i in self.roles for i in counted)}

    def classify(self, i: int, stmt: Stmt) -> None:
        fn = stmt.prim.fn
        masks = _masks(stmt)
        for m in masks:
            self.counted.setdefault(self.mask_key(m), []).append(i)
        inside = [v for v in stmt.uses() if v in self.selected]
        if not inside:
            self.standalone(i, stmt, masks)
            return
        keys = {self.selected[v][0] for v in inside}
        key, mask = self.selected[inside[0]]
        if len(keys) > 1:
            self.blocked |= keys
        elif _work(stmt, inside, self.selected):
            self.selected[stmt.out] = (key, mask)
            self.leaves[stmt.out] = frozenset().union(*(self.leaves[v] for v in inside))
            self.worked |= self.leaves[stmt.out]
            self.roles[i] = ("work", key)
        elif fn is setitem and _write_back(stmt, self.selected, self.mask_key, key):
            self.roles[i] = ("sink", key)
        elif fn is np.sum and _summed(stmt):
            self.roles[i] = ("sum", key)
        else:
            self.blocked.add(key)
            for m in masks:
                self.blocked.add(self.mask_key(m))

    def standalone(self, i: int, stmt: Stmt, masks: list[Var]) -> None:
        """A selection ``x[mask]``, or a write of a number ``z[mask] = c``: each counts on
        the mask alone."""
        fn, args = stmt.prim.fn, stmt.args
        if fn is operator.getitem and _full_mask(args[1], args[0]):
            key = self.mask_key(args[1])
            self.selected[stmt.out] = (key, args[1])
            self.leaves[stmt.out] = frozenset((i,))
            self.roles[i] = ("leaf", key)
        elif fn is setitem and _full_mask(args[1], args[0]) and isinstance(args[2], Var) \
                and args[2].aval.shape == ():
            self.roles[i] = ("scalar", self.mask_key(args[1]))


def _masks(stmt: Stmt) -> list[Var]:
    """The boolean masks whose count shapes ``stmt`` (the ones ``guard_selection`` checks)."""
    fn, args = stmt.prim.fn, stmt.args
    if fn in _COUNTED:
        return [args[0]] if isinstance(args[0], Var) else []
    if fn is operator.getitem or fn in (setitem, index_add) and isinstance(args[2], Var):
        return [a for a in tree_vars(args[1]) if a.aval.dtype == bool]
    return []


def _full_mask(key: Any, array: Any) -> bool:
    """Is ``key`` one traced boolean mask of ``array``'s shape (not a row mask)?"""
    return isinstance(key, Var) and isinstance(array, Var) and key.aval.dtype == bool \
        and key.aval.ndim > 0 and key.aval.shape == array.aval.shape


def _work(stmt: Stmt, inside: list[Var], selected: dict) -> bool:
    """Elementwise work on selected values and numbers, giving one value of their shape."""
    prim, shape = stmt.prim, inside[0].aval.shape
    if not (prim.elementwise or prim.ufunc is not None) or prim.effect or prim.inplace \
            or len(stmt.outs) != 1 \
            or stmt.out.aval.shape != shape:
        return False
    return all(a in selected or a.aval.shape == () if isinstance(a, Var) else np.ndim(a.value) == 0
               for t in stmt.args for a in tree_atoms(t))


def _write_back(stmt: Stmt, selected: dict, mask_key: Any, key: Any) -> bool:
    """``z[mask] = v``: ``v`` selected through the same mask, ``z`` of the mask's shape."""
    z, m, v = stmt.args
    return v in selected and z not in selected and m not in selected and _full_mask(m, z) \
        and mask_key(m) == key


def _summed(stmt: Stmt) -> bool:
    """``np.sum`` of the whole selection (it has one axis), to a number."""
    params = dict(stmt.params)
    return len(stmt.args) == 1 and params.get("axis") in (None, 0, -1, (0,)) \
        and not params.get("keepdims", False)


def _rewritten(ev: Any, plan: _Plan, free: set) -> list[Stmt]:
    guards = {same for same, mask in ev.selection_guards.items() if plan.mask_key(mask) in free}
    whole: dict[Var, Var] = {}      # a selected value -> the same work over the whole array
    out: list[Stmt] = []
    with ev.collect(out):
        for i, stmt in enumerate(plan.stmts):
            role, key = plan.roles.get(i, (None, None))
            if stmt.prim.effect and any(a in guards for a in stmt.uses()):
                continue                            # a guard on a count nothing needs now
            if key not in free:
                out.append(stmt)
                continue
            record = _Recorder(ev, stmt)
            args = stmt.args
            if role == "leaf":
                whole[stmt.out] = _filled(record, *args) if i in plan.worked else args[0]
            elif role == "work":
                whole[stmt.out] = record(stmt.prim, *tree_map(lambda a: whole.get(a, a),
                                                              args), params=stmt.params)
            elif role == "sum":
                mask = plan.selected[args[0]][1]
                zero = Lit(0.0 if args[0].aval.is_float else 0)
                kept = record(ev.rules.lookup(np.where), mask, whole[args[0]], zero)
                params = tuple(p for p in stmt.params if p[0] != "axis")
                record(stmt.prim, kept, params=params, outs=stmt.outs)
            else:                                   # "sink", "scalar": z[mask] = v
                z, mask, v = args
                record.written(mask, whole.get(v, v), z)
    return out


def _filled(record: "_Recorder", x: Var, mask: Var) -> Var:
    """``np.where(mask, x, fill)``: the lanes ``mask`` leaves out hold the first selected
    lane's value, ``fill`` (a constant for differentiation)."""
    rules = record.ev.rules
    first = record(rules.lookup(np.argmax), mask)
    fill = record(rules.lookup(stop_gradient), record(rules.lookup(np.take), x, first))
    return record(rules.lookup(np.where), mask, x, fill)


class _Recorder:
    """Records statements at ``stmt``'s line, with its rule text."""

    def __init__(self, ev: Any, stmt: Stmt):
        self.ev, self.stmt = ev, stmt

    def __call__(self, prim: Any, *operands: Any, params: tuple = (),
                 outs: tuple[Var, ...] | None = None) -> Var:
        operands = [a if isinstance(a, (Var, Lit, tuple)) else Lit(a) for a in operands]
        return self.ev.record(prim, operands, dict(params), self.stmt.loc, self.stmt.rule,
                              outs=outs).out

    def written(self, mask: Var, v: Any, z: Var) -> None:
        """``z[mask] = v`` as ``np.where(mask, v, z)``, into the write's own result (``v``
        cast to ``z``'s dtype first where the select would widen it)."""
        where = self.ev.rules.lookup(np.where)
        widened = self(where, mask, v, z).aval != self.stmt.out.aval
        self.ev.stmts.pop()         # (a trial)
        if widened:
            v = self(self.ev.rules.lookup(astype), v, z.aval.dtype)
        self(where, mask, v, z, outs=self.stmt.outs)
