"""The batching sweep (``ys.vmap``): from the tape of one example to the tape of a batch.

    for stmt in tape:                                    # in order
        if no operand is batched:  stmt, as it is
        else:                      batch(stmt.prim)(operands, batched, size)   # the batch first

A batched value carries the batch as its first axis, always: ``x`` of shape ``(3,)`` in the
tape of one example is ``(B, 3)`` in the batched tape. How a primitive batches, most specific
first:

- a declared ``batchrule`` (``RuleSet.batchrule``), a function of the operands and options
  written beside the primitive's derivative rules (rules/*.py) and inlined by the frontend like
  them: ``@`` with one vector operand, reductions and indexing shifting their axes by one;
- ``elementwise`` (every ufunc, the operators, ``np.where``): a batched operand of fewer
  dimensions than the result gets length-1 axes after its batch axis (``x[:, None]``), so that
  numpy's broadcasting lines up the examples, and the primitive is applied as it is.

A primitive with neither is refused where it is called, by name, with what to do. A statement
that holds statements (a loop region) has a structural rule (``STRUCTURAL``: batch_regions.py
batches the body and the carried values). A guard on a batched value holds for every example
(``np.all``/``np.any``), so the module refuses a batch whose examples take different branches.
Each batched result is checked against the example's shape: ``(B,) + shape``.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import GuardError, NoRuleError, UsageError, YotaError
from ..frontend.abstract import ghost
from ..frontend.evaluator import Evaluator
from ..ir.tape import Aval, Input, Lit, Stmt, Tape, Var, tree_atoms, tree_map
from ..ir.values import to_tree
from ..ir.structure import LeafAxes
from ..objects import child
from ..rules.batching import DIFFERENT_PATHS
from ..rules.template import rule_parameters, spelled

# Statements that hold statements (a loop region): the kind of their primitive
# (``Primitive.emit[0]``) -> ``rule(batching, stmt, operands, flags)``, which emits the batched
# statement and marks its batched results; batch_regions.py registers "loop" (imported by
# ad/__init__.py, as regions.py registers the sweep's)
STRUCTURAL: dict[str, Callable] = {}

# Calls recorded without a declared primitive (rules/callables.opaque_primitive) that ask about
# the dtype of an array: the batch's answer is every example's (np.linalg.eig's check of
# whether its eigenvalues came out complex), the same for the whole batch
DTYPE_FACTS = (np.iscomplexobj, np.isrealobj)


def batch(tape: Tape, rules, axes: Sequence[int | None], args: Sequence[Any],
          out_axes: Any = 0, norms: bool = False) -> Tape:
    """The tape of ``tape``'s function applied to each example of a batch: ``args`` are the
    batched arguments (argument ``k`` batched along ``axes[k]``, None: the same for every
    example); the results carry the batch along ``out_axes`` (one axis for all, or one per
    result), and so do the gradients of a gradient tape (one per example). ``norms``: a
    gradient tape's result becomes each example's gradient norm, over all its gradients
    (``Batching.norms``), and it returns no gradients."""
    return Batching(tape, rules, axes, args).run(out_axes, norms)


class Batching:
    """One batching sweep: the statements of ``tape`` written for the batch through its own
    evaluator ``ev`` (the batch's example values), ``new`` the value that stands for each of
    ``tape``'s, ``batched`` those that carry the batch."""

    def __init__(self, tape: Tape, rules, axes: Sequence[int | None], args: Sequence[Any],
                 size: int | None = None):
        self.tape, self.rules, self.axes, self.args = tape, rules, list(axes), args
        self.ev = Evaluator(rules)
        self.ev.regions = self.ev.branches = self.ev.whiles = False
        self.new: dict[Var, Any] = {}       # a Var of ``tape`` -> its value in the batched tape
        self.batched: set[Var] = set()      # the batched ones among those values
        self.size = _batch_size(axes, args, tape) if size is None else size
        self.hints: dict[Var, str] = {}

    @classmethod
    def inside(cls, rules, body: Tape, size: int) -> "Batching":
        """The batching of a region's body (batch_regions.py), its inputs set by the caller."""
        return cls(body, rules, [], [], size)

    def replay(self, tape: Tape, batched: set) -> list[Input]:
        """``tape``'s inputs made again, those in ``batched`` with the leading axis of the
        examples, and its statements pushed through this batching (inside ``ev.collect()``);
        the new inputs."""
        inputs = []
        for inp in tape.inputs:
            var = inp.var
            aval = Aval((self.size,) + var.aval.shape, var.aval.dtype) if var in batched \
                else var.aval
            new = Var(aval, var.hint)
            self.ev.values[new] = 0 if aval.weak else ghost(aval.shape, aval.dtype)
            self.new[var] = new
            if var in batched:
                self.batched.add(new)
            inputs.append(Input(new, inp.argnum, inp.path, inp.access))
        self.ev.input_vars = {i.var for i in inputs}
        for stmt in tape.stmts:
            with self.ev.at(stmt.loc, stmt.rule):
                self.push(stmt)
        return inputs

    def run(self, out_axes: Any, norms: bool = False) -> Tape:
        tape, ev = self.tape, self.ev
        grads = None
        with ev.collect() as stmts:
            inputs = self._inputs()
            for stmt in tape.stmts:
                with ev.at(stmt.loc, stmt.rule):
                    self.push(stmt)
            with ev.at(tape.loc, None):
                result = self._results(out_axes)
                if tape.grads is not None:
                    grads = [None if g is None else self._result(g, 0) for g in tape.grads]
            if norms:
                if grads is None:
                    raise YotaError("internal: ghost norms of a tape without gradients", tape.loc)
                with ev.at(tape.loc, "ghost norms: |a|^2 |g|^2 for a dense layer's outer "
                                     "product, the squares summed for the others"):
                    result, grads = self.norms([g for g in grads if g is not None], stmts), None
        kinds = tuple("array" if a is not None and not isinstance(a, LeafAxes) else k
                      for a, k in zip(self.axes, tape.arg_kinds))
        hints = self.named(stmts)
        return tape.copy(stmts=list(stmts), inputs=inputs, result=result, grads=grads,
                         arg_kinds=kinds, hints=hints, primals={}, folded={}, tangent=None,
                         tangents=set(), owned=frozenset(), loops=list(tape.loops),
                         batch=self.size)

    def named(self, stmts: list[Stmt]) -> dict[Var, str]:
        """The source names of the batched tape's values: those of the values they stand for,
        and an in-place statement's result named as the array it updates."""
        hints = dict(self.hints)
        for stmt in stmts:
            base = stmt.first_var if stmt.prim.inplace and stmt.outs else None
            if base is not None and (hints.get(base) or base.hint):
                hints[stmt.out] = hints.get(base) or base.hint
        return hints

    def lifted(self, value: Any) -> Var:
        """``value`` (a Var or a constant) as a batch: a copy of it per example."""
        shape = (self.size,) + (value.aval.shape if isinstance(value, Var)
                                else np.shape(value.value))
        value = self.emit(np.copy, [self.emit(np.broadcast_to, [value, Lit(shape)], {})], {})
        self.batched.add(value)
        return value

    # -- the arguments -----------------------------------------------------------------

    def _inputs(self) -> list[Input]:
        inputs = []
        for inp in self.tape.inputs:
            axis = self.axis(inp.argnum, inp.path)
            if axis is None:
                var = Var(inp.var.aval, inp.var.hint)
                self.ev.values[var] = self._leaf(inp)
                self.new[inp.var] = var
                inputs.append(Input(var, inp.argnum, inp.path, inp.access))
                continue
            value = np.asarray(self._leaf(inp))
            var = Var(Aval.of(value), inp.var.hint)
            self.ev.values[var] = value
            inputs.append(Input(var, inp.argnum, inp.path, inp.access))
            if axis != 0:
                with self.ev.at(self.tape.loc, None):
                    var = self.emit(np.moveaxis, [var, Lit(axis), Lit(0)], {})
            self.new[inp.var] = var
            self.batched.add(var)
            self.hints[var] = self.tape.hint_of(inp.var) or inp.access
        self.ev.input_vars = {i.var for i in inputs}
        read = {i.argnum for i in self.tape.inputs}
        for static in self.tape.statics:
            if self.axis(static.argnum, static.path) is not None and static.argnum not in read:
                raise UsageError(f"vmap: {self.tape.name} reads its argument "
                                 f"{self.tape.params[static.argnum]} as a static value (a "
                                 "shape, a count, a flag), which in_axes batches",
                                 self.tape.loc, "Give None in in_axes for it: one value for "
                                 "every example.")
        return inputs

    def axis(self, argnum: int, path: tuple) -> int | None:
        """The batch axis of argument ``argnum``'s leaf at ``path`` (None: not batched)."""
        axis = self.axes[argnum]
        return axis.at(path) if isinstance(axis, LeafAxes) else axis

    def _leaf(self, inp: Input) -> Any:
        """The value of the argument's leaf ``inp`` (the argument, or a field of a structure)."""
        return _at(self.args[inp.argnum], inp.path)

    # -- one statement -----------------------------------------------------------------

    def push(self, stmt: Stmt) -> None:
        """Batch ``stmt``: its results' values in the batched tape go into ``new``."""
        try:
            self._push(stmt)
        except GuardError as e:      # a branch the example batch takes apart, as it is batched
            if e.what.startswith("vmap:"):
                raise
            raise GuardError(f"vmap: the examples of the batch take different paths through "
                             f"the code ({e.what})", stmt.loc, DIFFERENT_PATHS) from None

    def _push(self, stmt: Stmt) -> None:
        args = tuple(tree_map(self._atom, a) for a in stmt.args)
        flags = tuple(tree_map(lambda a: isinstance(a, Var) and a in self.batched, a)
                      for a in args)
        if not any(any(tree_atoms(f)) for f in flags):
            outs = self.ev.emit(stmt.prim, list(args), dict(stmt.params), None)
            self._bind(stmt, outs, batched=False)
            return
        if stmt.prim.fn in DTYPE_FACTS:
            outs = self.ev.emit(stmt.prim, list(args), dict(stmt.params), None)
            self._bind(stmt, outs, batched=False)
            return
        structural = STRUCTURAL.get(stmt.prim.emit[0] if stmt.prim.emit else None)
        rule = self.rules.batches.get(stmt.prim)
        if structural is not None:
            outs = structural(self, stmt, args, flags)
            self._bind(stmt, outs, batched=None)
            return
        if rule is not None:
            outs = self._declared(rule, stmt, args, flags)
            if isinstance(outs, str):           # the rule's reason why it cannot
                raise NoRuleError(f"vmap: {stmt.prim.name} {outs}", stmt.loc,
                                  "Compute it from values that are the same for every example, "
                                  f"or give it a batching rule that can ({rule.fn.__name__} in "
                                  f"{rule.loc.short if rule.loc else 'its rule file'}).")
        elif stmt.prim.elementwise or stmt.prim.ufunc is not None:
            outs = self._elementwise(stmt, args, flags)
        else:
            raise NoRuleError(
                f"vmap: {stmt.prim.name} has no batching rule, and its operand "
                f"{_batched_operand(stmt, flags)} differs per example here", stmt.loc,
                "Declare one beside its derivative rules: "
                f"@ys.rules.batchrule({spelled(stmt.prim.fn)}) "
                "on a function of its operands and options that computes a whole batch, the "
                "batch first (docs/vmap.md); or call vmap on a function that computes it "
                "from values that are the same for every example.")
        self._bind(stmt, outs, batched=True)

    def _declared(self, rule, stmt: Stmt, args: tuple, flags: tuple) -> Any:
        prim = stmt.prim
        env = {name.lstrip("*"): _value(tree) for name, tree in zip(prim.operands, args)}
        env.update({name: stmt.param(name) for name, _ in prim.options})
        env["batched"] = flags
        env["size"] = self.size
        params, kwargs = rule_parameters(rule.fn)
        given = {k: env[k] for k in params if k in env}
        if kwargs is not None:          # ``**options``: the options the call set
            given.update((k, v) for k, v in stmt.params if k not in given)
        saved, self.ev.backward_mode = self.ev.backward_mode, True   # as a derivative rule's:
        try:                    # its local names name nothing, its constants widen nothing
            return self.ev.inline(rule.fn, [], given, None)
        finally:
            self.ev.backward_mode = saved

    def _elementwise(self, stmt: Stmt, args: tuple, flags: tuple) -> Any:
        """Batched operands of fewer dimensions than the result get length-1 axes after the
        batch, so that broadcasting pairs example with example."""
        rank = max(o.aval.ndim for o in stmt.outs)
        lined = []
        for arg, flag in zip(args, flags):
            if flag is True and arg.aval.ndim - 1 < rank:
                arg = self.emit(np.expand_dims, [arg, Lit(tuple(
                    range(1, 1 + rank - (arg.aval.ndim - 1))))], {})
            lined.append(arg)
        return self.ev.emit(stmt.prim, lined, dict(stmt.params), None)

    def _bind(self, stmt: Stmt, outs: Any, batched: bool | None) -> None:
        """``stmt``'s results are ``outs`` (``batched``: all or none; None: as the structural
        rule marked them)."""
        outs = outs if isinstance(outs, tuple) else (outs,)
        if len(outs) != len(stmt.outs):
            raise YotaError(f"internal: vmap of {stmt.prim.name} gave {len(outs)} results for "
                            f"{len(stmt.outs)}", stmt.loc)
        for old, new in zip(stmt.outs, outs):
            new = to_tree(new)
            if batched or batched is None and new in self.batched:
                want = (self.size,) + old.aval.shape
                got = new.aval.shape if isinstance(new, Var) else None
                if got != want or new.aval.dtype != old.aval.dtype and not old.aval.weak:
                    raise YotaError(f"internal: the batching of {stmt.prim.name} made "
                                    f"{new.aval if isinstance(new, Var) else new} where "
                                    f"{old.aval.dtype}{list(want)} was due", stmt.loc,
                                    "Report this (its batching rule is wrong).")
                self.batched.add(new)
            self.new[old] = new
            hint = self.tape.hint_of(old)
            # (the result of an in-place statement is its first operand, named as that is)
            if hint and isinstance(new, Var) and new not in self.hints and not stmt.prim.inplace:
                self.hints[new] = hint

    def _atom(self, atom: Any) -> Any:
        return self.new.get(atom, atom) if isinstance(atom, Var) else atom

    # -- the results -------------------------------------------------------------------

    def _results(self, out_axes: Any) -> Any:
        atoms = list(tree_atoms(self.tape.result))
        if isinstance(out_axes, (tuple, list)):
            if len(out_axes) != len(atoms):
                raise UsageError(f"out_axes={out_axes!r} gives {len(out_axes)} axes for "
                                 f"{len(atoms)} results", hint="Give one axis per result, or "
                                 "one int for all of them.")
            axes = iter(out_axes)
        else:
            axes = iter([out_axes] * len(atoms))
        return tree_map(lambda atom: self._result(atom, next(axes)), self.tape.result)

    def _result(self, atom: Any, axis: int) -> Any:
        value = self._atom(atom)
        if not (isinstance(value, Var) and value in self.batched):
            value = self.lifted(value)
        if axis % value.aval.ndim != 0:
            value = self.emit(np.moveaxis, [value, Lit(0), Lit(axis)], {})
        return value

    # -- ghost norms -------------------------------------------------------------------

    def norms(self, grads: list, stmts: list[Stmt]) -> Var:
        """Each example's gradient norm: the root of the sum over ``grads`` of their squares,
        each summed over its axes but the batch. A gradient made as the product of two
        batched values whose examples have their lengths on different axes (``a[:, None] *
        g[None, :]``: a dense layer's weight, one example's input times its output gradient)
        has the product of their squared norms as its own, and is not made at all."""
        made = {o: s for s in stmts for o in s.outs}
        total = None
        for g in grads:
            if not g.aval.is_float:
                continue
            stmt = made.get(g)
            if stmt is not None and _outer_product(stmt, self.batched):
                p, q = stmt.args
                part = self.emit(operator.mul, [self._squares(p), self._squares(q)], {})
            else:
                part = self._squares(g)
            total = part if total is None else self.emit(operator.add, [total, part], {})
        if total is None:
            return self.emit(np.zeros, [Lit((self.size,))], {})
        return self.emit(np.sqrt, [total], {})

    def _squares(self, x: Var) -> Var:
        """The sum of the squares of each example of ``x`` (of |x|^2 for a complex one)."""
        if x.aval.dtype.kind == "c":
            x = self.emit(np.abs, [x], {})
        square = self.emit(operator.mul, [x, x], {})
        if x.aval.ndim == 1:
            return square
        axes = tuple(range(1, x.aval.ndim))
        return self.emit(np.sum, [square], {"axis": axes[0] if len(axes) == 1 else axes})

    def emit(self, fn: Any, operands: list, params: dict) -> Var:
        return self.ev.emit(self.rules.lookup(fn), [to_tree(o) for o in operands], params, None)


def _outer_product(stmt: Stmt, batched: set[Var]) -> bool:
    """``p * q`` of two batched arrays whose examples have more than one element on different
    axes: the product's squared norm is the product of theirs."""
    if stmt.prim.fn is not operator.mul or len(stmt.args) != 2:
        return False
    p, q = stmt.args
    if not all(isinstance(v, Var) and v in batched and v.aval.ndim == stmt.out.aval.ndim
               for v in (p, q)):
        return False
    return all(m == 1 or n == 1 for m, n in zip(p.aval.shape[1:], q.aval.shape[1:]))


def _batch_size(axes: Sequence[int | None], args: Sequence[Any], tape: Tape) -> int:
    sizes = {}
    for k, axis in enumerate(axes):
        if isinstance(axis, LeafAxes):
            sizes.update(((k, path), np.shape(_at(args[k], path))[a]) for path, a in axis.axes)
        elif axis is not None:
            sizes[(k, ())] = np.shape(args[k])[axis]
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{tape.params[k]}{''.join(f'[{p!r}]' for p in path)}: {n}"
                          for (k, path), n in sizes.items())
        raise UsageError(f"vmap: the batched arguments have batches of different sizes ({shown})",
                         hint="Give every batched argument the same number of examples along "
                              "its axis in in_axes.")
    return next(iter(sizes.values()))


def _batched_operand(stmt: Stmt, flags: tuple) -> str:
    names = [n.lstrip("*") for n, f in zip(stmt.prim.operands, flags) if any(tree_atoms(f))]
    return repr(names[0]) if names else "(one)"


def _value(tree: Any) -> Any:
    if isinstance(tree, tuple):
        return tuple(_value(t) for t in tree)
    return tree.value if isinstance(tree, Lit) else tree


def _at(value: Any, path: tuple) -> Any:
    for key in path:
        value = child(value, key)
    return value
