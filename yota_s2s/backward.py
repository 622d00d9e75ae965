"""The reverse sweep: from a forward tape to a tape that also computes gradients.

    for stmt in reversed(tape):                 # only statements on a path to the result
        dy = adjoint(stmt.out)                  # complete: every use has been swept
        for operand that needs a gradient:
            g = rule(operand)(operands, y, dy)  # instantiated by the frontend: tape statements
            accumulate(operand, fit(g, operand))

Done here once, not in each rule: ``fit`` sums the axes a value was broadcast along (only where
shapes differ) and casts back to the operand's dtype; ``accumulate`` adds the contributions of a
value used several times; contributions of indexing (``x[2]``, ``x[7]``) go into one buffer
per array (``dx[2] += ...``), never one zero array per index; ``masked`` keeps the branch that
``np.where`` (a mask, clip) did not select from turning its exact zeros into nan.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .errors import NoRuleError, YotaError
from .frontend.evaluator import Evaluator, Frame
from .ir.analysis import Analysis, index_copies
from .ir.tape import ACCUMULATE, Aval, Lit, Stmt, Tape, Var, tree_atoms
from .ir.values import to_tree
from .rules.indexing import index_add, setitem
from .rules.registry import NODIFF_ALL, Rule
from .rules.template import bind, check_options
from .ir.region import loop_of
from .region_backward import sweep_region

Zeros = tuple     # of (condition, when) pairs: a gradient is zero wherever one condition == when


def backward(tape: Tape, ev: Evaluator, wrt: set[int] | None = None) -> Tape:
    """Extend ``tape`` (recorded by ``ev``) with the gradients of its result."""
    return _Sweep(tape, ev, wrt).run()


def refuse_complex(stmt: Stmt, active: list[Var]) -> None:
    """A primitive whose derivative is written for real values only (``real_only``: max, sort,
    eigh) refuses complex operands that need one, in both sweeps."""
    reason = stmt.prim.real_only
    if reason and any(v.aval.dtype.kind == "c" for v in active):
        raise YotaError(f"{stmt.prim.name} of complex values has no derivative here: {reason}",
                        stmt.loc, "Differentiate through real values: np.real(z), np.imag(z) "
                        "or np.abs(z), and compare or decompose those (docs/complex.md).")


def transpose(ev: Evaluator, stmts: list[Stmt], inputs: list[Var],
              seeds: list[tuple[Any, Any]]) -> list[Any]:
    """The transpose of the linear map that ``stmts`` compute from ``inputs``: the adjoints of
    ``inputs`` (None where zero) when each ``(value, seed)`` of ``seeds`` gives a value its
    adjoint. Forward mode uses it to turn a VJP rule into a JVP (forward.py)."""
    sweep = _Sweep.linear(ev)
    sweep.active = set(inputs)
    for stmt in stmts:
        if any(u in sweep.active for u in stmt.uses()):
            sweep.active |= {o for o in stmt.outs if o.aval.is_float}
    for value, seed in seeds:
        if value in sweep.active:
            sweep.accumulate(value, seed)
    for stmt in reversed(stmts):
        if not any(o in inputs for o in stmt.outs):     # (what makes a placeholder)
            sweep.sweep(stmt)
    out = []
    for u in inputs:
        g = sweep.adjoint(u)
        out.append(None if g is None else sweep.fit(g, u.aval))
    return out


class _Sweep:
    in_region = False       # the sweep of a loop region's step (region_backward.py)
    # v -> ((c, when), ...): v's gradient is exactly zero wherever one c == its when (see
    # ``masked``); None in the sweeps of loop regions and of transpose, which do not mask
    zeros: dict[Var, Zeros] | None = None

    @classmethod
    def linear(cls, ev: Evaluator) -> "_Sweep":
        """A sweep with no tape of its own, for ``transpose`` and forward.py's fitting."""
        sweep = cls.__new__(cls)
        sweep.tape, sweep.ev, sweep.rules = None, ev, ev.rules
        sweep.active, sweep.full, sweep.primals, sweep.scatter = set(), {}, {}, {}
        sweep.cancelled = set()
        return sweep

    def __init__(self, tape: Tape, ev: Evaluator, wrt: set[int] | None):
        self.tape, self.ev, self.rules = tape, ev, ev.rules
        self.diff = [i.var.aval.is_float and (wrt is None or i.argnum in wrt) for i in tape.inputs]
        self.active = self._active_vars()
        self.full: dict[Var, Any] = {}        # v -> accumulated gradient (a Var or a constant)
        self.primals: dict[Var, Var] = {}     # a rule's result -> what it is the gradient of
        self.scatter: dict[Var, list[tuple[Any, Any, Stmt]]] = {}   # v -> [(key, dy, stmt)]
        self.home: list[Stmt] = ev.stmts      # where the forward statements are (regions grow)
        self.cancelled: set[tuple[int, str]] = set()     # terms that cancel: RuleSet.cancels
        self.zeros = {}

    def _active_vars(self) -> set[Var]:
        """Values on a differentiable path from an input that wants a gradient."""
        seeds = {i.var for i, d in zip(self.tape.inputs, self.diff) if d}
        return active_from(self.tape.stmts, seeds, self.rules)

    def run(self) -> Tape:
        ev, result = self.ev, self.tape.result
        ev.backward_mode = True
        ev.stmts = self.home = list(self.tape.stmts)
        if isinstance(result, tuple):
            raise YotaError(f"{self.tape.name} returns {_describe(result)}; gradients need one "
                            "scalar float result, the loss", self.tape.loc,
                            "Return the loss alone. For the gradients of a non-scalar result "
                            "use ys.vjp or ys.jacobian; returning other values beside the loss "
                            "(JAX's has_aux) is not supported yet.")
        if not _constant(result) and (not isinstance(result, Var) or result.aval.size != 1
                                      or not result.aval.is_float):
            raise YotaError(f"{self.tape.name} returns {_describe(result)}; gradients need a "
                            "scalar float result (or an array of one element)", self.tape.loc,
                            "Reduce the output to a scalar, e.g. return np.sum(...) or "
                            "np.mean(...); for the gradients of a non-scalar result use ys.vjp "
                            "or ys.jacobian.")
        if isinstance(result, Var) and result.aval.dtype.kind == "c":
            raise YotaError(f"{self.tape.name} returns a complex scalar ({result.aval}); the "
                            "gradient of a value that is not real is not defined", self.tape.loc,
                            "Return a real scalar: its real part (np.real(...), .real), its "
                            "magnitude (np.abs(...)) or a squared norm. The derivative of a "
                            "holomorphic function is a JVP: ys.jvp(f, (z,), (1.0 + 0j,)) "
                            "(docs/complex.md).")
        if result in self.active:
            self.full[result] = _one(result.aval)
            if result.aval.shape != ():      # an array of one element, taken as a scalar
                self.ev.loc_override, self.ev.rule_text = self.tape.loc, "the result's own gradient"
                dtype = {} if result.aval.dtype == np.float64 else {"dtype": result.aval.dtype}
                self.full[result] = self.emit(self.rules.lookup(np.ones),
                                              [Lit(result.aval.shape)], dtype, grad_of=result)
            facts = Analysis(self.tape)
            self.cancelled = set().union(*(check(self.tape, facts)
                                           for check in self.rules.cancellations))
            for index in reversed(range(len(self.tape.stmts))):
                self.sweep(self.tape.stmts[index], index)
        grads = [to_tree(self.final_grad(i.var)) if d else None
                 for i, d in zip(self.tape.inputs, self.diff)]
        ev.backward_mode, ev.loc_override, ev.rule_text = False, None, None
        return self.tape.copy(stmts=ev.stmts, grads=grads, primals=self.primals)

    # -- one statement -------------------------------------------------------------------

    def sweep(self, stmt: Stmt, index: int = -1) -> None:
        if not any(o in self.full or o in self.scatter for o in stmt.outs):
            return
        refuse_complex(stmt, [u for u in stmt.uses() if u in self.active])
        self.ev.loc_override = stmt.loc
        if loop_of(stmt) is not None:
            return sweep_region(self, stmt)
        zeros = self._zeros_of_adjoint(stmt)
        dys = [self.adjoint(o) for o in stmt.outs]
        for name, tree in zip(stmt.prim.operands, stmt.args):
            name = name.lstrip("*")
            targets = [a for a in tree_atoms(tree) if isinstance(a, Var) and a in self.active]
            if not targets or self.rules.is_nodiff(stmt.prim, name) \
                    or (index, name) in self.cancelled:
                continue
            rule = self.rules.rule(stmt.prim, name)
            if rule is None:
                raise NoRuleError(f"{stmt.prim.name} has no derivative rule for its operand {name!r}",
                                  stmt.loc, f'Add ys.diffrule(<function>, "{name}", "<expr in y, dy, ...>") '
                                  f"or mark the operand ys.nodiff(<function>, \"{name}\").")
            self.ev.rule_text = str(rule)
            if rule.scatter and _selects_all(stmt.args[1]):
                self.accumulate(targets[0], self.emit(self.rules.lookup(np.reshape),
                                                      [dys[0], Lit(targets[0].aval.shape)], {}))
                continue
            if rule.scatter:
                self.scatter.setdefault(targets[0], []).append((stmt.args[1], dys[0], stmt))
                continue
            start = len(self.ev.stmts)
            grads = self.instantiate(rule, stmt, dys)
            for atom, g in _align(tree, grads, stmt, name):
                if isinstance(atom, Var) and atom in self.active and g is not None:
                    g, known = self.masked(g, zeros, dys[0], start)
                    fitted = self.fit(g, atom.aval)
                    self.accumulate(atom, fitted, _zeros_for(known, g, fitted, atom))

    # -- exact zeros: a branch that np.where (a mask, clip) did not select -----------------

    def _zeros_of_adjoint(self, stmt: Stmt) -> Zeros:
        """Where ``stmt``'s result's gradient is known to be zero, when ``stmt`` is elementwise
        (its rules can be masked per element) and nothing else adds to that gradient."""
        if self.zeros is None or len(stmt.outs) != 1:
            return ()
        known = self.zeros.pop(stmt.out, ())
        elementwise = stmt.prim.elementwise or stmt.prim.ufunc is not None
        return known if elementwise and stmt.out not in self.scatter else ()

    def masked(self, g: Any, zeros: Zeros, dy: Any, start: int) -> tuple[Any, Zeros]:
        """A rule's result ``g`` (statements from ``start`` on) with what is known of its zeros.

        ``y = np.where(c, a, b)`` gives ``b`` the gradient ``np.where(c, 0.0, dy)``: exactly
        zero where ``c``, whatever ``dy``. An elementwise rule then multiplies that zero by its
        local derivative, which may be inf or nan there, where ``b`` was not selected
        (``np.sqrt(-x)`` at ``x > 0``): the gradient would be nan where the function's is not.
        So a rule whose incoming gradient is zero where ``c == when`` (``zeros``: one pair per
        selection it went through) gets its result masked, ``np.where(c, 0.0, g)``, unless it
        only scales ``dy`` by finite constants (``-dy``, ``dy * 0.5``: zero stays zero) or by
        booleans and integers. The zeros then carry on to the operand. They start at a
        gradient that is a selection:
        ``np.where(c, u, 0.0)``, ``np.where(c, 0.0, u)``, ``setitem(u, mask, 0.0)`` with a
        boolean mask (``x[mask] = v``: what was overwritten), ``u * mask`` with a boolean mask
        (the rules of ``np.where``, of ``x[mask] = v``, of ``a * mask``, and ``np.clip``'s)."""
        if self.zeros is None or not isinstance(g, Var):
            return g, ()
        new = self.ev.stmts[start:]
        own = _selection(g, new)
        if zeros and not _scales(g, dy, new):
            self.ev.rule_text = "the gradient of a branch that np.where (a mask, clip) did " \
                                "not select is 0"
            for cond, when in zeros:
                args = [cond, Lit(0.0), g] if when else [cond, g, Lit(0.0)]
                g = self.emit(self.rules.lookup(np.where), args, {})
        return g, zeros + tuple(z for z in own if not _among(z, zeros))

    def instantiate(self, rule: Rule, stmt: Stmt, dys: list, extra: dict | None = None) -> Any:
        """Run the rule in the frontend with its placeholders bound to this statement
        (``extra``: more placeholders, a JVP rule's tangent)."""
        ev, prim = self.ev, stmt.prim
        env = {name.lstrip("*"): _value(tree) for name, tree in zip(prim.operands, stmt.args)}
        env.update({name: stmt.param(name) for name, _ in prim.options})
        env["y"] = stmt.outs[0] if prim.nout == 1 else tuple(stmt.outs)
        env["dy"] = dys[0] if prim.nout == 1 else tuple(dys)
        env.update(extra or {})
        ev.rule_text = str(rule)
        check_options(rule, dict(stmt.params), stmt.loc)
        env = bind(rule, env, dict(stmt.params))
        if rule.expr is not None:
            frame = Frame(None, rule.globals, {}, None)
            frame.locals.update(env)
            saved, ev.frame = ev.frame, frame
            try:
                return ev.expr(rule.expr)
            finally:
                ev.frame = saved
        return ev.inline(rule.fn, [], env, None)

    # -- adjoints ------------------------------------------------------------------------

    def accumulate(self, var: Var, g: Any, zeros: Zeros = ()) -> None:
        if isinstance(g, Var) and g.grad_of is None and g not in self.primals:
            self.primals[g] = var          # (a rule may return a forward value: never changed)
        if self.zeros is not None:        # a sum is zero where each of its parts is
            known = self.zeros.pop(var, ())
            kept = zeros if var not in self.full else tuple(z for z in zeros if _among(z, known))
            if kept:
                self.zeros[var] = kept
        if var in self.full:
            self.ev.rule_text = ACCUMULATE
            g = self.emit(self.rules.lookup(operator.add), [self.full[var], g], {}, grad_of=var)
        self.full[var] = g

    def adjoint(self, var: Var) -> Any:
        """The complete gradient of ``var``: full contributions plus one scatter buffer."""
        parts = self.scatter.pop(var, [])
        total = self.full.pop(var, None)
        if parts and isinstance(total, Var) and total.aval == var.aval and all(
                stmt.out.aval.ndim and not index_copies(stmt) for _, _, stmt in parts):
            total = self._add_rows(var, total, parts)
        elif parts:
            saved = self.ev.loc_override
            self.ev.loc_override = parts[0][2].loc
            dtype = {} if var.aval.dtype == np.float64 else {"dtype": var.aval.dtype}
            self.ev.rule_text = "getitem a: da = zeros(a.shape), then da[key] += dy for each key"
            buf = self.emit(self.rules.lookup(np.zeros), [Lit(var.aval.shape)], dtype, grad_of=var)
            for key, dy, stmt in self._elements(var, parts):
                self.ev.loc_override, self.ev.rule_text = stmt.loc, "getitem a: da[key] += dy"
                buf = self.emit(self.rules.lookup(index_add), [buf, key, dy], {}, grad_of=var)
            self.ev.rule_text = ACCUMULATE
            total = buf if total is None else self.emit(self.rules.lookup(operator.add), [total, buf], {},
                                                        grad_of=var)
            self.ev.loc_override = saved
        return total

    def _add_rows(self, var: Var, total: Var, parts: list) -> Var:
        """The contributions of parts read by basic keys (``x[t]``, ``x[1:]``: no element
        twice) added into the rows of ``var``'s gradient itself, ``dx[t] = dx[t] + dy``, where
        it is already an array of ``var``'s shape: in a loop over the rows of an array, a
        step's cost is that of a row, not of a zero array of the whole shape."""
        saved = self.ev.loc_override
        for key, dy, stmt in self._elements(var, parts):
            self.ev.loc_override, self.ev.rule_text = stmt.loc, "getitem a: da[key] += dy"
            row = self.emit(self.rules.lookup(operator.getitem), [total, key], {})
            row = self.emit(self.rules.lookup(operator.add), [row, dy], {})
            total = self.emit(self.rules.lookup(setitem), [total, key, row], {}, grad_of=var)
        self.ev.loc_override = saved
        return total

    def _elements(self, var: Var, parts: list) -> list[tuple[Any, Any, Stmt]]:
        """The contributions ``(key, dy, stmt)`` to ``var``'s buffer, fitted; the numbers for
        one element (``x[4]`` read three times) added first, so that each element is written
        once: ``dx[4] += a + b + c`` (the sum that ``dx[4] += a; dx[4] += b ...`` makes, in
        the same order), in the order each element is first reached. The sums are all made
        first, so that the buffer's writes follow each other (scalar mode makes the array from
        its elements there: codegen/scalars.py)."""
        grouped: dict[Any, list] = {}
        for key, dy, stmt in parts:
            dy = self.fit(dy, stmt.out.aval)
            one = isinstance(key, Lit) and type(key.value) is int and stmt.out.aval.shape == ()
            grouped.setdefault(key.value % var.aval.shape[0] if one else object(), []).append(
                (key, dy, stmt))
        elements = []
        for group in grouped.values():
            key, total, stmt = group[0]
            for _, dy, part in group[1:]:
                self.ev.loc_override, self.ev.rule_text = part.loc, ACCUMULATE
                total = self.emit(self.rules.lookup(operator.add), [total, dy], {},
                                  grad_of=stmt.out)
            elements.append((key, total, stmt))
        return elements

    def final_grad(self, var: Var) -> Any:
        self.ev.loc_override, self.ev.rule_text = self.tape.loc, "zero: the result does not depend on it"
        g = self.adjoint(var)
        if g is None:
            dtype = {} if var.aval.dtype == np.float64 else {"dtype": var.aval.dtype}
            if var.aval.weak:
                return 0.0
            return self.emit(self.rules.lookup(np.zeros), [Lit(var.aval.shape)], dtype, grad_of=var)
        self.ev.rule_text = "fit the gradient to the argument"
        g = self.fit(g, var.aval)
        if var.aval.weak and isinstance(g, Var) and not g.aval.weak:
            python = complex if var.aval.dtype.kind == "c" else float
            g = self.emit(self.rules.lookup(python), [g], {}, grad_of=var)
        return g

    def fit(self, g: Any, target: Aval) -> Any:
        """``g`` summed over broadcast axes (or broadcast up) to ``target``'s shape, and cast to
        its dtype. Emits nothing when they already agree."""
        shape = g.aval.shape if isinstance(g, Var) else np.shape(g)
        if shape != target.shape:
            g = self._reshape_to(g, shape, target.shape)
        dtype = _dtype(g)
        if target.dtype.kind == "f" and dtype.kind == "c":
            # a real value's gradient is the real part (autograd's convention for complex)
            g = self.emit(self.rules.lookup(np.real), [g], {})
            dtype = _dtype(g)
        if target.is_float and not target.weak and dtype != target.dtype and not isinstance(g, Var):
            g = target.dtype.type(g)        # a constant: cast now (a Python float has no astype)
        elif target.is_float and not target.weak and dtype != target.dtype:
            from .rules.elementwise import astype
            g = self.emit(self.rules.lookup(astype), [g, Lit(target.dtype)], {})
        return g

    def _reshape_to(self, g: Any, shape: tuple, target: tuple) -> Any:
        lead = len(shape) - len(target)
        if lead >= 0 and all(t in (1, s) for s, t in zip(shape[lead:], target)):
            axes = tuple(range(lead)) + tuple(lead + i for i, (s, t) in
                                              enumerate(zip(shape[lead:], target)) if t == 1 and s != 1)
            params = {"axis": axes[0] if len(axes) == 1 else axes}
            if lead == 0:
                params["keepdims"] = True
            g = self.emit(self.rules.lookup(np.sum), [g], params)
            if g.aval.shape != target:
                g = self.emit(self.rules.lookup(np.reshape), [g, Lit(target)], {})
            return g
        if np.broadcast_shapes(shape, target) == target:
            return self.emit(self.rules.lookup(np.broadcast_to), [g, Lit(target)], {})
        raise YotaError(f"internal: a gradient of shape {shape} cannot fit {target}",
                        self.ev.loc_override, "This is a yota_s2s bug; please report it.")

    def emit(self, prim, operands: list, params: dict, grad_of: Var | None = None) -> Var:
        return self.ev.emit(prim, [to_tree(o) for o in operands], params, None, grad_of=grad_of)


def _scales(g: Var, dy: Any, stmts: list[Stmt]) -> bool:
    """Is ``g`` made from ``dy`` by ``stmts`` with nothing but finite numbers, booleans and
    integers besides (so a zero of ``dy`` stays zero)?"""
    made = {dy} if isinstance(dy, Var) else set()
    for stmt in stmts:
        if all(_finite(a, made) for t in stmt.args for a in tree_atoms(t)):
            made.update(stmt.outs)
    return g in made


def _finite(atom: Any, made: set) -> bool:
    if isinstance(atom, Var):
        return atom in made or atom.aval.dtype.kind in "biu"
    value = atom.value if isinstance(atom, Lit) else atom
    try:
        return bool(np.all(np.isfinite(value)))
    except TypeError:
        return True             # a key, a shape, a dtype: not a number that multiplies


def _among(pair: tuple[Var, bool], zeros: Zeros) -> bool:
    return any(c is pair[0] and w == pair[1] for c, w in zeros)


def _selection(g: Var, stmts: list[Stmt]) -> Zeros:
    """Where ``g`` is zero by construction (``masked``): made by ``np.where(c, u, 0)``,
    ``np.where(c, 0, u)``, ``setitem(u, mask, 0)`` or ``u * mask``, with ``c``, ``mask``
    boolean arrays of ``g``'s shape or one that broadcasts to it."""
    made = next((s for s in reversed(stmts) if g in s.outs), None)
    if made is None:
        return ()
    fn, args = made.prim.fn, made.args
    if fn is np.where and _bool(args[0]):
        if _is_zero(args[2]):
            return ((args[0], False),)
        if _is_zero(args[1]):
            return ((args[0], True),)
    if fn is setitem and _bool(args[1]) and args[1].aval.shape == g.aval.shape \
            and _is_zero(args[2]):
        return ((args[1], True),)
    masks = [mask for mask in args if _bool(mask)] if fn is operator.mul else []
    return ((masks[0], False),) if masks else ()


def _bool(atom: Any) -> bool:
    return isinstance(atom, Var) and atom.aval.dtype == bool


def _is_zero(atom: Any) -> bool:
    return isinstance(atom, Lit) and np.ndim(atom.value) == 0 and atom.value == 0


def _zeros_for(known: Zeros, g: Any, fitted: Any, atom: Var) -> Zeros:
    """``known`` zeros of a rule's result ``g``, for the operand ``atom`` (its fitted part):
    only where nothing was summed, and the conditions that broadcast to the operand."""
    if fitted is not g or not isinstance(g, Var) or g.aval.shape != atom.aval.shape:
        return ()
    shape = atom.aval.shape
    return tuple((c, w) for c, w in known if len(c.aval.shape) <= len(shape)
                 and np.broadcast_shapes(c.aval.shape, shape) == shape)


def active_from(stmts: list[Stmt], seeds: set[Var], rules) -> set[Var]:
    """``seeds`` and the float values computed from them by ``stmts``."""
    active = set(seeds)
    for stmt in stmts:
        if NODIFF_ALL in rules.nodiffs.get(stmt.prim, ()):
            refuse_complex(stmt, [u for u in stmt.uses() if u in active])
            continue
        if any(u in active for u in stmt.uses()):
            active |= {o for o in stmt.outs if o.aval.is_float}
    return active


def _dtype(g: Any) -> np.dtype:
    """The dtype of a gradient (a Var's from its aval: its value is not computed)."""
    return g.aval.dtype if isinstance(g, Var) else np.result_type(g)


def _value(tree: Any) -> Any:
    """A statement operand as the frontend sees it: Vars stay, literals are plain values."""
    if isinstance(tree, tuple):
        return tuple(_value(t) for t in tree)
    return tree.value if isinstance(tree, Lit) else tree


def _align(tree: Any, grads: Any, stmt: Stmt | None = None, name: str = ""):
    """Pairs (operand atom, its gradient) for an operand that may be a tuple of arrays.
    ``stmt`` and ``name``: the statement and operand, for the message when the rule gave one
    gradient for a sequence (the primitive read a list of traced values as one array)."""
    if isinstance(tree, tuple):
        if not isinstance(grads, (tuple, list)) or len(grads) != len(tree):
            raise _sequence_operand(tree, stmt, name)
        for t, g in zip(tree, grads):
            yield from _align(t, g, stmt, name)
    else:
        yield tree, grads


def _sequence_operand(tree: tuple, stmt: Stmt | None, name: str) -> YotaError:
    if stmt is None:
        return YotaError("a rule for a sequence operand must return one gradient per element")
    # numpy's functions read such a list as one array (frontend/calls.py operand_value): a
    # function given its operands as they are (a user's) meets this
    operand = f"its operand {name}" if name else "an operand"
    return YotaError(f"{stmt.prim.name} is given a list or tuple of {len(tree)} traced values "
                     f"as {operand}, and its derivative rule gives one gradient for them, not "
                     "one per element", stmt.loc,
                     "Return a tuple from the rule, one gradient per element, or give the "
                     "function an array: np.asarray(...) of the list.")


def _selects_all(key: Any) -> bool:
    """``b[:, None]``, ``x[...]``: a key that only adds axes keeps every element once, so its
    gradient is a reshape of ``dy`` rather than a scatter."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, Lit) and (p.value is None or p.value is Ellipsis or
                                       (isinstance(p.value, slice) and p.value == slice(None)))
               for p in parts)


def _one(aval: Aval) -> Any:
    return 1.0 if aval.weak or aval.dtype == np.float64 else aval.dtype.type(1)


def _constant(result: Any) -> bool:
    """A real number that no gradient flows to: a constant (``lambda x: 1.0``, a value made
    of static ints), or a bool or int computed from the arguments (``x > y``). Its gradient
    with respect to every argument is zero, as in autograd and JAX."""
    if isinstance(result, Lit):
        return np.ndim(result.value) == 0 and np.asarray(result.value).dtype.kind in "biuf"
    return isinstance(result, Var) and result.aval.size == 1 and result.aval.dtype.kind in "biu"


def _describe(value: Any) -> str:
    """A returned value in the user's words: ``an array of float64[3]``, ``a tuple of 2
    values (a float64 scalar, an array of float64[3])``, ``the constant 3``."""
    if isinstance(value, tuple):
        return (f"a tuple of {len(value)} value{'' if len(value) == 1 else 's'} ("
                + ", ".join(_describe(v) for v in value) + ")")
    if isinstance(value, Var):
        aval = value.aval
        if aval.shape == ():
            return f"a {'Python ' if aval.weak else ''}{aval.dtype} scalar"
        return f"an array of {aval.dtype}[{', '.join(map(str, aval.shape))}]"
    value = value.value if isinstance(value, Lit) else value
    return "None" if value is None else f"the constant {value!r}"
