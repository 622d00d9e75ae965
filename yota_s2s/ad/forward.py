"""The forward sweep (forward mode): from a tape to one that also computes the tangent of its
result, a Jacobian-vector product.

    for stmt in tape:                                # in order
        for operand with a tangent:
            t = jvp(stmt.prim, operand)(operands, y, tangent)    # instantiated by the frontend
        tangent(stmt.out) = sum of the t, fit to the out's shape and dtype

Each argument with float values gets a tangent argument (``dot_x`` for ``x``); the result's
tangent is returned after the value. How a primitive's JVP is found (``RuleSet.jvp``), most
specific first:

- a declared ``jvprule`` (a handful: the parts of a complex number, whose VJP is not the JVP);
- ``linear`` (``reshape``, ``sum``, ``concatenate``, ``x[key]``): the primitive itself applied
  to the tangents, zeros in place of the constant operands;
- ``multilinear`` (``@``, ``einsum``, ``kron``): the sum over the operands of the primitive
  with that one operand's tangent;
- ``elementwise`` (every ufunc, scipy.stats): the VJP rule is ``dy`` times a pointwise
  derivative, so the same rule with ``dy`` := the operand's tangent is the JVP;
- otherwise the VJP rule is transposed: a VJP rule is a linear map ``dy -> dx``; instantiated
  on a placeholder ``dy`` and swept backward from ``dx`` with the tangent as its seed
  (``backward.transpose``), it gives ``J t`` (``inv``: ``-mT(y) @ dy @ mT(y)`` becomes
  ``-y @ t @ y``). This is JAX's derivation of VJPs from JVPs, run the other way.

A primitive with neither is refused with what to add. docs/how-it-works.md explains the choice.
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable

import numpy as np

from ..errors import NoRuleError, YotaError
from ..frontend.evaluator import Evaluator
from ..ir.tape import ACCUMULATE, TANGENT, Input, Lit, Stmt, Tape, Var, tree_atoms, tree_map
from ..ir.values import to_tree
from ..rules.registry import NODIFF_ALL, tangent_name
from .backward import describe, is_constant, loss_of, transpose
from .sweep import Sweep, align, refuse_complex


# A statement that holds statements of its own (a branch) has a structural JVP instead, by
# its kind: ``rule(sweep, stmt)`` sets the tangents of its results; filled where the structure
# is defined (branches.py: "branch"), as sweep.STRUCTURAL_RULES is for the reverse sweep.
STRUCTURAL_JVPS: dict[str, Callable[["_ForwardSweep", Stmt], None]] = {}


def forward(tape: Tape, ev: Evaluator, tangents: list[Any], has_aux: bool = False,
            wrt: set[int] | None = None) -> Tape:
    """Extend ``tape`` (recorded by ``ev``) with the tangent of its result, given example
    ``tangents`` (one per argument; None for those without float values). A structured result
    (a tuple, a dict: nested tuples on the tape) gets a tangent of its structure, None for its
    leaves without one (ints, bools, strings); ``has_aux``: the result is a pair ``(out, aux)``
    and only ``out`` gets a tangent; ``wrt``: the arguments (by number) that get a tangent
    argument, None for every argument with float values (the others are held constant)."""
    return _ForwardSweep(tape, ev, tangents, has_aux, wrt).run()


class _ForwardSweep:
    def __init__(self, tape: Tape, ev: Evaluator, tangents: list[Any], has_aux: bool = False,
                 wrt: set[int] | None = None):
        self.tape, self.ev, self.rules, self.has_aux = tape, ev, ev.rules, has_aux
        self.wrt = wrt
        self.example = tangents
        self.tangent: dict[Var, Any] = {}     # primal Var -> its tangent (a Var)
        self.marks: dict[Var, Var] = {}       # tangent Var -> its primal, for names
        self.linear = Sweep.linear(ev)       # fit/emit helpers (no tape of its own)
        self.start = 0          # where the tangent section starts in ``ev.stmts`` (a while's
        #                         JVP, while_tangents.py, moves it: it takes the loop's place)

    def run(self) -> Tape:
        tape, ev = self.tape, self.ev
        result = loss_of(tape) if self.has_aux else tape.result
        constant = isinstance(result, Lit) and (is_constant(result) or    # tangent 0.0
                                                  _complex_number(result))   # (0j)
        if not isinstance(result, tuple) and not constant and \
                (not isinstance(result, Var) or not result.aval.is_float):
            raise YotaError(f"{tape.name} returns {describe(result)}; forward mode "
                            "needs float arrays or scalars as the result", tape.loc,
                            "Return float arrays (alone, or in a tuple, dict or dataclass); "
                            "return other values beside them with has_aux=True.")
        with ev.deriving(list(tape.stmts)) as stmts:
            inputs, params, kinds = self._tangent_inputs()
            self.start = len(stmts)
            for stmt in tape.stmts:
                self.push(stmt)
            out = self._result_tangent(result, alone=True) if not isinstance(result, tuple) \
                else tree_map(self._result_tangent, result)
        start = self.start
        stmts = stmts[:start] + [s.replace(rule=_tangent_rule(s.rule)) for s in stmts[start:]]
        primals = dict(tape.primals)
        primals.update(self.marks)
        return tape.copy(stmts=stmts, tangent=out, inputs=tape.inputs + inputs,
                         params=tape.params + params, arg_kinds=tape.arg_kinds + kinds,
                         primals=primals,
                         tangents=set(self.marks))

    def _result_tangent(self, atom: Any, alone: bool = False) -> Any:
        """The tangent of one leaf of the result: zero where it does not depend on the
        arguments, None where it has none (an int, a bool, a string: in a structured result;
        a result ``alone`` is a float array or scalar, or a constant number, whose is 0.0)."""
        if isinstance(atom, Lit):
            value = np.asarray(atom.value) if atom.value is not None else None
            if alone:
                return Lit(0j if value is not None and value.dtype.kind == "c" else 0.0)
            if value is None or value.dtype.kind not in "fc":
                return Lit(None)
            return Lit(0j if value.dtype.kind == "c" else 0.0) if value.ndim == 0 \
                else _zero(atom)
        if not atom.aval.is_float:
            return Lit(None)
        out = self.tangent.get(atom)
        if out is None and atom.aval.weak:      # independent of the arguments
            return Lit(0j if atom.aval.dtype.kind == "c" else 0.0)
        if out is None:
            with self.ev.at(self.tape.loc, f"{TANGENT}the result's tangent"):
                out = self._zeros(atom)
        return out

    def _tangent_inputs(self) -> tuple[list[Input], tuple[str, ...], tuple[str, ...]]:
        """A tangent argument for each argument with float values (``dot_x``), in order:
        its Inputs, names and kinds."""
        tape = self.tape
        floats = sorted({i.argnum for i in tape.inputs if i.var.aval.is_float
                         and (self.wrt is None or i.argnum in self.wrt)})
        params = tuple(_tangent_param(tape.params[k], tape.params) for k in floats)
        objects = _object_arguments(self.ev, tape.params)
        inputs = []
        for inp in tape.inputs:
            if not inp.var.aval.is_float or inp.argnum not in floats:
                continue
            if inp.argnum in objects:
                raise YotaError(f"{tape.name}: forward mode takes arrays, floats and tuples, "
                                f"lists and dicts of them; {objects[inp.argnum]}", tape.loc,
                                "Pass its arrays in a tuple, list or dict, or as arguments of "
                                "their own.")
            example = self.example[inp.argnum] if inp.argnum < len(self.example) else None
            example = _at_path(example, inp.path)
            aval = inp.var.aval
            value = np.ones(aval.shape, aval.dtype) if example is None \
                else np.asarray(example, aval.dtype).reshape(aval.shape)
            var = Var(aval)
            self.ev.values[var] = value.item() if aval.weak else value
            self.tangent[inp.var] = var
            self.marks[var] = inp.var
            k = floats.index(inp.argnum)
            access = params[k] + inp.access[len(tape.params[inp.argnum]):] if inp.path \
                else params[k]       # a leaf of a structure: the same path in its tangent
            inputs.append(Input(var, len(tape.params) + k, inp.path, access))
        return inputs, params, tuple(tape.arg_kinds[k] for k in floats)

    # -- one statement -------------------------------------------------------------------

    def push(self, stmt: Stmt) -> None:
        active = [a for a in stmt.uses() if a in self.tangent]
        if not active or not any(o.aval.dtype.kind in "fc" for o in stmt.outs):
            return          # ints and bools (np.iscomplexobj, a count) have no tangent
        refuse_complex(stmt, active)
        if NODIFF_ALL in self.rules.nodiffs.get(stmt.prim, ()):
            return
        with self.ev.at(stmt.loc):
            structural = STRUCTURAL_JVPS.get(stmt.prim.emit[0] if stmt.prim.emit else None)
            if structural is not None:
                return structural(self, stmt)
            self._add_tangents(stmt, self._contributions(stmt))

    def _contributions(self, stmt: Stmt) -> list[tuple]:
        """The parts of the tangents of ``stmt``'s results: one tuple per operand (one per
        position, for a multilinear primitive; one in all, for a linear one), one entry per
        result."""
        ev, prim = self.ev, stmt.prim
        parts: list[Any] = []
        if prim.linear:
            with ev.at(rule=f"{TANGENT}{prim.name}: linear, itself applied to the tangents"):
                parts.append(self._apply(stmt, lambda k, atom: True))
        elif prim.multilinear:          # x @ x: each position in turn, not each value
            with ev.at(rule=f"{TANGENT}{prim.name}: multilinear, one operand's tangent at a "
                            "time"):
                for position in [k for k, a in enumerate(_atoms(stmt.args)) if a in self.tangent]:
                    parts.append(self._apply(stmt, lambda k, atom, p=position: k == p))
        else:
            for name, tree in zip(prim.operands, stmt.args):
                name = name.lstrip("*")
                if not any(a in self.tangent for a in tree_atoms(tree) if isinstance(a, Var)) \
                        or self.rules.is_nodiff(prim, name):
                    continue
                parts.append(self._operand(stmt, name, tree))
        return parts

    def _add_tangents(self, stmt: Stmt, parts: list[tuple]) -> None:
        """Each result's tangent: the sum of its parts, each fitted to it."""
        for k, out in enumerate(stmt.outs):
            total = None
            for part in parts:
                piece = part[k]
                if piece is None or not isinstance(piece, Var) and np.all(piece == 0):
                    continue
                piece = self.linear.fit(piece, out.aval)
                if total is None:
                    total = piece
                else:
                    with self.ev.at(rule=f"{TANGENT}{ACCUMULATE}"):
                        total = self.emit(operator.add, [total, piece], {})
            if total is None or not out.aval.is_float:
                continue
            if not isinstance(total, Var):
                total = self._filled(out, total)
            if total not in self.marks:          # (not another value's tangent, passed on)
                self.marks[total] = out
            self.tangent[out] = total

    def _operand(self, stmt: Stmt, name: str, tree: Any) -> tuple:
        """The contribution of operand ``name``, one entry per output of ``stmt``."""
        kind, rule = self.rules.jvp(stmt.prim, name)
        tangent = tree_map(lambda atom: self._tangent_or_zero(atom), tree)
        if kind == "none":
            raise NoRuleError(
                f"{stmt.prim.name} has neither a JVP nor a VJP rule for its operand {name!r}",
                stmt.loc, f'Add ys.jvprule(<function>, "{name}", "<expr in y, '
                f'{tangent_name(name)}, ...>") (the tangent of the result due to {name}), a VJP '
                f'rule ys.diffrule(<function>, "{name}", ...), which forward mode transposes, '
                f"or declare the primitive linear=True if it is linear.")
        if kind == "transposed":
            return self._transposed(rule, stmt, tree, tangent)
        if stmt.prim.nout != 1:
            raise YotaError(f"internal: an {kind} JVP for {stmt.prim.name}, which has "
                            f"{stmt.prim.nout} results", stmt.loc, "Declare a jvprule.")
        if kind == "declared":
            value = self.linear.instantiate(rule, stmt, [None],
                                       extra={tangent_name(name): _value(tangent)})
        else:                            # elementwise: the VJP rule with dy := the tangent
            value = self.linear.instantiate(rule, stmt, [_value(tangent)])
        return (value,)

    def _transposed(self, rule, stmt: Stmt, tree: Any, tangent: Any) -> tuple:
        """Transpose the VJP rule: placeholders for ``dy`` (zeros: the rule is linear in them),
        the rule's result fitted to the operand, then swept backward from it with the
        operand's tangent as its seed; the placeholders' adjoints are the output tangents."""
        ev = self.ev
        start = len(ev.stmts)
        with ev.at(rule=ev.rule_text):      # (the rule's text ends with its instantiation)
            dys = [self._zeros(o) for o in stmt.outs]
            grads = self.linear.instantiate(rule, stmt, dys)
            seeds = []
            for atom, g in align(tree, grads, stmt):
                if isinstance(atom, Var) and atom in self.tangent and g is not None:
                    g = self.linear.fit(g, atom.aval)
                    if isinstance(g, Var):
                        seeds.append((g, self.tangent[atom]))
        return tuple(transpose(ev, ev.stmts[start:], dys, seeds))

    def _apply(self, stmt: Stmt, replaced) -> tuple:
        """``stmt``'s primitive on its operands, those that ``replaced`` picks (and have a
        tangent) taking their tangents, other float operands zeros where ``replaced`` picks
        them (a constant term of a linear map has no tangent), and so do the int constants
        joined with them (``np.stack((1, a * a))``: its items are data, whatever their dtype)."""
        position = iter(range(1 << 30))

        def swap(atom, joined):
            if not replaced(next(position), atom):
                return atom
            if not _is_float(atom, self.ev):
                return _zero(atom) if joined and isinstance(atom, Lit) else atom
            return self._tangent_or_zero(atom)
        args = [tree_map(lambda a, j=name in stmt.prim.sequences: swap(a, j), t)
                for name, t in zip(stmt.prim.operands, stmt.args)]
        result = self.ev.emit(stmt.prim, args, dict(stmt.params), None)
        return tuple(result) if stmt.prim.nout != 1 else (result,)

    def _tangent_or_zero(self, atom: Any) -> Any:
        if isinstance(atom, Var):
            if atom in self.tangent:
                return self.tangent[atom]
            return self._zeros(atom) if atom.aval.is_float else atom
        value = atom.value
        if isinstance(value, (float, complex, np.ndarray, np.generic)) and \
                np.result_type(value).kind in "fc":
            return Lit(np.zeros_like(value) if isinstance(value, np.ndarray)
                       else type(value)(0))
        return atom

    def _zeros(self, var: Var) -> Any:
        dtype = {} if var.aval.dtype == np.float64 else {"dtype": var.aval.dtype}
        return self.emit(np.zeros, [Lit(var.aval.shape)], dtype)

    def _filled(self, var: Var, value: Any) -> Var:
        return self.emit(np.full, [Lit(var.aval.shape), Lit(value)], {"dtype": var.aval.dtype})

    def emit(self, fn, operands: list, params: dict) -> Var:
        return self.ev.emit(self.rules.lookup(fn), [to_tree(o) for o in operands], params, None)


def _zero(atom: Lit) -> Lit:
    """A zero like the number or array ``atom`` holds."""
    value = atom.value
    return Lit(np.zeros_like(value) if isinstance(value, np.ndarray) else type(value)(0))


def _tangent_rule(text: str | None) -> str:
    """Every statement of the tangent section has a rule text starting with ``TANGENT``."""
    text = text or "tangent"
    return text if text.startswith(TANGENT) else TANGENT + text


def _object_arguments(ev: Evaluator, params: tuple[str, ...]) -> dict[int, str]:
    """The arguments that hold an object of a class (not a namedtuple), each with what the
    first such object is: forward mode does not build a tangent of their structure."""
    found: dict[int, str] = {}
    for access, cls in getattr(ev.flattener, "types", ()):
        root = re.match(r"\w+", access)
        if root and root.group() in params and not issubclass(cls, tuple):
            found.setdefault(params.index(root.group()), f"{access} is a {cls.__name__} object")
    return found


def _at_path(example: Any, path: tuple) -> Any:
    """The example tangent of the leaf at ``path`` in a structured argument's tangent (None:
    none given)."""
    for key in path:
        if example is None:
            return None
        example = getattr(example, key) if isinstance(key, str) and \
            not isinstance(example, dict) else example[key]
    return example


def _tangent_param(name: str, taken: tuple) -> str:
    base = "dot_" + name
    while base in taken:
        base += "_"
    return base


def _atoms(args: tuple) -> list:
    """The atoms of a statement's operands, in order (as ``tree_map`` visits them)."""
    return [a for tree in args for a in tree_atoms(tree)]


def _is_float(atom: Any, ev: Evaluator) -> bool:
    if isinstance(atom, Var):
        return atom.aval.is_float
    return isinstance(atom.value, (float, complex, np.ndarray, np.generic)) and \
        np.result_type(atom.value).kind in "fc"


def _value(tree: Any) -> Any:
    if isinstance(tree, tuple):
        return tuple(_value(t) for t in tree)
    return tree.value if isinstance(tree, Lit) else tree


def _complex_number(result: Lit) -> bool:
    """A complex constant (a VJP of a real function at complex arguments may be ``0j``): its
    tangent is ``0j``. (A loss cannot be complex, so ``is_constant`` leaves it out.)"""
    return np.ndim(result.value) == 0 and np.asarray(result.value).dtype.kind == "c"
