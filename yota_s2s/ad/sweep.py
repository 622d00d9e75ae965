"""The reverse sweep: the engine that turns statements into the statements of their gradients.

    for stmt in reversed(stmts):                # only statements on a path to the result
        dy = adjoint(stmt.out)                  # complete: every use has been swept
        for operand that needs a gradient:
            g = rule(operand)(operands, y, dy)  # instantiated by the frontend: tape statements
            accumulate(operand, fit(g, operand))

Done here once, not in each rule: ``fit`` sums the axes a value was broadcast along (only where
shapes differ) and casts back to the operand's dtype; ``accumulate`` adds the contributions of a
value used several times; contributions of indexing (``x[2]``, ``x[7]``) go into one buffer
per array (``dx[2] += ...``), never one zero array per index; ``masked`` keeps the branch that
``np.where`` (a mask, clip) did not select from turning its exact zeros into nan.

A statement that holds statements of its own (a loop region) has a structural rule instead:
``STRUCTURAL_RULES`` maps its kind to the function that sweeps it, and the module that defines
the structure fills it (regions.py registers ``"loop"``), so that the engine knows no region.
``backward.py`` runs a sweep over a whole tape, regions.py one over a loop's step,
``backward.transpose`` one with no tape of its own (``Sweep.linear``).
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..errors import NoRuleError, YotaError
from ..frontend.evaluator import Evaluator
from ..frontend.frame import Frame
from ..ir.analysis import Analysis, index_copies
from ..ir.tape import ACCUMULATE, Aval, Lit, Stmt, Tape, Var, tree_atoms
from ..ir.values import to_tree
from ..rules.indexing import index_add, setitem
from ..rules.registry import NODIFF_ALL, Rule
from ..rules.template import bind, check_options

Zeros = tuple     # of (condition, when) pairs: a gradient is zero wherever one condition == when

# The structural rules: the kind of a statement's primitive (``Primitive.emit[0]``) -> the
# function that sweeps such a statement, ``rule(sweep, stmt)``; filled where the structure is
# defined (regions.py: "loop"), as JAX's control_flow/loops.py registers scan's rules
STRUCTURAL_RULES: dict[str, Callable[["Sweep", Stmt], None]] = {}


def refuse_complex(stmt: Stmt, active: list[Var]) -> None:
    """A primitive whose derivative is written for real values only (``real_only``: max, sort,
    eigh) refuses complex operands that need one, in both sweeps."""
    reason = stmt.prim.real_only
    if reason and any(v.aval.dtype.kind == "c" for v in active):
        raise YotaError(f"{stmt.prim.name} of complex values has no derivative here: {reason}",
                        stmt.loc, "Differentiate through real values: np.real(z), np.imag(z) "
                        "or np.abs(z), and compare or decompose those (docs/complex.md).")


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


class Sweep:
    """A reverse sweep: the adjoints of the values in ``active`` (those on a differentiable
    path), summed as each use of a value is swept, and the statements that compute them,
    emitted through the evaluator ``ev`` (into ``ev.stmts``).

    ``tape``: the statements swept (None for a sweep with no tape of its own: ``linear``);
    ``home`` is a copy of its statements, where a region's statement is replaced by the forward
    region that saves (regions.py). ``primals``: a rule's result -> what it is the gradient of
    (shared with the enclosing sweep by a region's). ``in_region``: the sweep of a loop
    region's step. ``masks``: keep track of exact zeros (``masked``); the sweeps of loop
    regions and of transpose do not mask."""

    def __init__(self, ev: Evaluator, tape: Tape | None = None, active: set[Var] = frozenset(),
                 *, primals: dict[Var, Var] | None = None, in_region: bool = False,
                 masks: bool = False):
        self.tape, self.ev, self.rules = tape, ev, ev.rules
        self.active = set(active)
        self.full: dict[Var, Any] = {}        # v -> accumulated gradient (a Var or a constant)
        self.primals: dict[Var, Var] = {} if primals is None else primals
        self.scatter: dict[Var, list[tuple[Any, Any, Stmt]]] = {}   # v -> [(key, dy, stmt)]
        self.home: list[Stmt] = [] if tape is None else list(tape.stmts)
        self.cancelled: set[tuple[int, str]] = set()     # terms that cancel: RuleSet.cancels
        self.in_region = in_region
        # v -> ((c, when), ...): v's gradient is exactly zero wherever one c == its when
        self.zeros: dict[Var, Zeros] | None = {} if masks else None

    @classmethod
    def linear(cls, ev: Evaluator, active: set[Var] = frozenset()) -> "Sweep":
        """A sweep with no tape of its own, for ``transpose`` and forward.py's fitting."""
        return cls(ev, None, active)

    def find_cancellations(self) -> None:
        """The terms of the tape's statements that cancel (``RuleSet.cancels``)."""
        facts = Analysis(self.tape)
        self.cancelled = set().union(*(check(self.tape, facts)
                                       for check in self.rules.cancellations))

    def sweep_all(self, stmts: list[Stmt]) -> None:
        """Sweep ``stmts``, last to first (a statement's index is its place in ``home``)."""
        for index in reversed(range(len(stmts))):
            self.sweep(stmts[index], index)

    # -- one statement -------------------------------------------------------------------

    def sweep(self, stmt: Stmt, index: int = -1) -> None:
        """Sweep ``stmt`` (``index``: its place in ``home``) once its results' adjoints are
        complete: by its structural rule (``STRUCTURAL_RULES``), else by its operands' rules;
        what it emits is located at ``stmt``."""
        if not any(o in self.full or o in self.scatter for o in stmt.outs):
            return
        refuse_complex(stmt, [u for u in stmt.uses() if u in self.active])
        with self.ev.at(stmt.loc):
            structural = STRUCTURAL_RULES.get(stmt.prim.emit[0] if stmt.prim.emit else None)
            if structural is not None:
                return structural(self, stmt)
            self._sweep_primitive(stmt, index)

    def _sweep_primitive(self, stmt: Stmt, index: int) -> None:
        """A primitive's statement: each operand's gradient from its rule, fitted and added."""
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
            with self.ev.at(rule=str(rule)):
                self._apply(rule, stmt, tree, name, targets, dys, zeros)

    def _apply(self, rule: Rule, stmt: Stmt, tree: Any, name: str, targets: list, dys: list,
               zeros: Zeros) -> None:
        """The gradient of one operand (``name``: ``tree``) from its ``rule``, added to each
        of its atoms' adjoints; a scatter rule's (``x[key]``) is kept for the buffer."""
        if rule.scatter and _selects_all(stmt.args[1]):
            self.accumulate(targets[0], self.emit(self.rules.lookup(np.reshape),
                                                  [dys[0], Lit(targets[0].aval.shape)], {}))
            return
        if rule.scatter:
            self.scatter.setdefault(targets[0], []).append((stmt.args[1], dys[0], stmt))
            return
        start = len(self.ev.stmts)
        grads = self.instantiate(rule, stmt, dys)
        for atom, g in align(tree, grads, stmt, name):
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
            with self.ev.at(rule="the gradient of a branch that np.where (a mask, clip) did "
                                 "not select is 0"):
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
        check_options(rule, dict(stmt.params), stmt.loc)
        env = bind(rule, env, dict(stmt.params))
        ev.rule_domain = rule.domain
        try:
            with ev.at(rule=str(rule)):
                if rule.expr is None:
                    return ev.inline(rule.fn, [], env, None)
                frame = Frame(None, rule.globals, {}, None)
                frame.locals.update(env)
                with ev.in_frame(frame):
                    return ev.expr(rule.expr)
        finally:
            ev.rule_domain = None

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
            with self.ev.at(rule=ACCUMULATE):
                g = self.emit(self.rules.lookup(operator.add), [self.full[var], g], {},
                              grad_of=var)
        self.full[var] = g

    def adjoint(self, var: Var) -> Any:
        """The complete gradient of ``var``: full contributions plus one scatter buffer."""
        parts = self.scatter.pop(var, [])
        total = self.full.pop(var, None)
        if parts and isinstance(total, Var) and total.aval == var.aval and all(
                stmt.out.aval.ndim and not index_copies(stmt) for _, _, stmt in parts):
            total = self._add_rows(var, total, parts)
        elif parts:
            with self.ev.at(parts[0][2].loc):
                total = self._buffer(var, total, parts)
        return total

    def _buffer(self, var: Var, total: Any, parts: list) -> Var:
        """The contributions of ``parts`` added into a buffer of zeros, ``da[key] += dy``,
        and the buffer added to ``total``."""
        dtype = {} if var.aval.dtype == np.float64 else {"dtype": var.aval.dtype}
        with self.ev.at(rule="getitem a: da = zeros(a.shape), then da[key] += dy for each key"):
            buf = self.emit(self.rules.lookup(np.zeros), [Lit(var.aval.shape)], dtype,
                            grad_of=var)
        elements = self._elements(var, parts)
        for key, dy, stmt in elements:
            with self.ev.at(stmt.loc, "getitem a: da[key] += dy"):
                buf = self.emit(self.rules.lookup(index_add), [buf, key, dy], {}, grad_of=var)
        if total is None:
            return buf
        with self.ev.at(elements[-1][2].loc, ACCUMULATE):
            return self.emit(self.rules.lookup(operator.add), [total, buf], {}, grad_of=var)

    def _add_rows(self, var: Var, total: Var, parts: list) -> Var:
        """The contributions of parts read by basic keys (``x[t]``, ``x[1:]``: no element
        twice) added into the rows of ``var``'s gradient itself, ``dx[t] = dx[t] + dy``, where
        it is already an array of ``var``'s shape: in a loop over the rows of an array, a
        step's cost is that of a row, not of a zero array of the whole shape."""
        for key, dy, stmt in self._elements(var, parts):
            with self.ev.at(stmt.loc, "getitem a: da[key] += dy"):
                row = self.emit(self.rules.lookup(operator.getitem), [total, key], {})
                row = self.emit(self.rules.lookup(operator.add), [row, dy], {})
                total = self.emit(self.rules.lookup(setitem), [total, key, row], {}, grad_of=var)
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
                with self.ev.at(part.loc, ACCUMULATE):
                    total = self.emit(self.rules.lookup(operator.add), [total, dy], {},
                                      grad_of=stmt.out)
            elements.append((key, total, stmt))
        return elements

    def final_grad(self, var: Var) -> Any:
        with self.ev.at(self.tape.loc, "zero: the result does not depend on it"):
            g = self.adjoint(var)
            if g is None:
                dtype = {} if var.aval.dtype == np.float64 else {"dtype": var.aval.dtype}
                if var.aval.weak:
                    return 0j if var.aval.dtype.kind == "c" else 0.0
                return self.emit(self.rules.lookup(np.zeros), [Lit(var.aval.shape)], dtype,
                                 grad_of=var)
            with self.ev.at(rule="fit the gradient to the argument"):
                g = self.fit(g, var.aval)
                complex_of_real = var.aval.dtype.kind == "c" and _dtype(g).kind != "c"
                if var.aval.weak and not isinstance(g, Var) and complex_of_real:
                    g = complex(g.value if isinstance(g, Lit) else g)   # a Python complex: complex
                elif var.aval.weak and isinstance(g, Var) and (not g.aval.weak or complex_of_real):
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
            from ..rules.elementwise import astype
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


def _dtype(g: Any) -> np.dtype:
    """The dtype of a gradient (a Var's from its aval: its value is not computed)."""
    return g.aval.dtype if isinstance(g, Var) else np.result_type(g)


def _value(tree: Any) -> Any:
    """A statement operand as the frontend sees it: Vars stay, literals are plain values."""
    if isinstance(tree, tuple):
        return tuple(_value(t) for t in tree)
    return tree.value if isinstance(tree, Lit) else tree


def align(tree: Any, grads: Any, stmt: Stmt | None = None, name: str = ""):
    """Pairs (operand atom, its gradient) for an operand that may be a tuple of arrays.
    ``stmt`` and ``name``: the statement and operand, for the message when the rule gave one
    gradient for a sequence (the primitive read a list of traced values as one array)."""
    if isinstance(tree, tuple):
        if not isinstance(grads, (tuple, list)) or len(grads) != len(tree):
            raise _sequence_operand(tree, stmt, name)
        for t, g in zip(tree, grads):
            yield from align(t, g, stmt, name)
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
