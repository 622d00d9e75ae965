"""A tangent map's independent steps, hoisted: the statements of an unrolled loop that apply
one primitive, at every step, to values its tangent inputs and the forward give (not to what
the steps carry) become one statement over all the steps, before them::

    # t = 0                                      dot_xs @ Wx               (every step at once)
    t1 = dot_xs[0] @ Wx                          xs @ dot_Wx
    t2 = xs[0] @ dot_Wx              ->          T1 + T2
    t3 = t1 + t2                                 # t = 0
    ...                                          t3 = T3[0]
    # t = 1                                      ...
    t8 = dot_xs[1] @ Wx                          # t = 1
    ...                                          t10 = T3[1]

A *group* is a set of statements of one primitive (with the same options) whose operands are,
position by position, either the same value in every statement or values that vary:

- rows ``A[k]`` of one array at consecutive ``k`` (``dot_xs[t]``, the forward's ``xs[t]``, the
  rows of a statement hoisted before), counting up or down: the batched operand is ``A`` or
  its slice (``A[a:b]``, ``A[::-1]``);
- values of the forward (``h`` at each step): the forward stacks them once (``np.stack``), a
  residual like the others, so the tangent map reads one array.

A group is batched where numpy's broadcasting lines the steps up on a new first axis: an
elementwise primitive whose varying operands have the result's dimensions, or a matrix product
``@`` whose varying operand is a stack of matrices (or of the vectors on its left) against a
fixed matrix. Each statement of the group becomes the row of the batched result it stands for
(a view), and the rounds go on until no group is left: two products hoisted in one round, their
sums in the next. The tangent map then keeps only the per-step work on what the steps carry
(``dot_h @ Wh``, the ``tanh``'s factor); the forward, which runs once, makes the stacks.

A sum that mixes the two, ``T1[k] + (dot_h @ Wh + T3[k])`` (the tangent of ``x @ Wx + h @ Wh``
in every argument), is regrouped, when no round batches more, so that its terms made before the
steps are added first: ``(T1[k] + T3[k]) + dot_h @ Wh``; the next round batches those sums too
(``T1 + T3``, once), and each step keeps one add where it had two. The same for ``-`` (a
difference ``x - (u + w)`` is ``(x - w) - u``). Floating-point addition is not associative: the
regrouped sum may differ from the plain JVP's in its last bits.

Last, a hoisted sum of products of the forward's values with matrices of the tangent map,
``xs @ dot_Wx + hs @ dot_Wh``, is one product ``[xs | hs] @ [dot_Wx; dot_Wh]``: the forward
joins ``xs`` and ``hs`` once (``np.concatenate`` on their last axis, one residual), the tangent
map joins the small matrices, and one product replaces two products and their add (the same
floating-point work, in one call of the BLAS). What the steps no longer read is dropped, so
the forward saves nothing for it.
"""
from __future__ import annotations

import operator
from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np

from ..ir.analysis import basic_parts
from ..ir.tape import TANGENT, Aval, Lit, Stmt, Var
from ..rules.registry import RuleSet

HOISTED = TANGENT + "every step at once: the steps' statements that read none of the loop's values"
STACKED = TANGENT + "the forward's values that every step reads, stacked once for the tangent map"


def hoist_steps(forward: list[Stmt], tangent: list[Stmt], carried: set[Var], inputs: set[Var],
                rules: RuleSet, results: set[Var]) -> tuple[list[Stmt], list[Stmt]]:
    """The forward's and the tangent map's statements with the tangent map's independent steps
    hoisted (the module docstring): ``carried`` are the values that read a tangent (the tangent
    inputs among them, ``inputs``); every other value is the forward's, which the tangent map
    may read as a residual. ``results``: the tangent map's results (never regrouped away)."""
    hoisting = _Hoisting(forward, tangent, carried, inputs, rules)
    while hoisting.round() or hoisting.regroup(results):
        pass
    hoisting.stack_residuals()
    hoisting.fuse_products(results)
    return hoisting.forward, _live(hoisting.top + hoisting.body, results)


class _Hoisting:
    def __init__(self, forward: list[Stmt], tangent: list[Stmt], carried: set[Var],
                 inputs: set[Var], rules: RuleSet):
        self.forward, self.body, self.rules = list(forward), list(tangent), rules
        self.carried = carried
        self.top: list[Stmt] = []            # the hoisted statements, before the steps
        self.at_top: set[Var] = set(inputs)  # tangent values made before the steps
        self.rows: dict[Var, tuple[Var, int]] = {}     # A[k], a value made before the steps
        self.getitem = rules.lookup(operator.getitem)
        self.loc = None                      # where the group being batched is, without its step
        for stmt in (*forward, *tangent):
            self._row(stmt)

    def _row(self, stmt: Stmt) -> None:
        """Note ``stmt`` if it makes a row ``A[k]`` of an array made before the steps."""
        if stmt.prim.fn is not operator.getitem or len(stmt.args) != 2:
            return
        a, key = stmt.args
        parts = basic_parts(key)
        if isinstance(a, Var) and self._early(a) and parts is not None and len(parts) == 1 \
                and isinstance(parts[0], int) and a.aval.ndim >= 1:
            self.rows[stmt.out] = (a, parts[0] % a.aval.shape[0])

    def _early(self, v: Var) -> bool:
        """Made before the steps: the forward's (a residual) or hoisted."""
        return v not in self.carried or v in self.at_top

    def round(self) -> bool:
        groups: dict[tuple, list[int]] = {}
        for i, stmt in enumerate(self.body):
            key = self._key(stmt)
            if key is not None:
                groups.setdefault(key, []).append(i)
        done = False
        for members in groups.values():
            if len(members) > 1 and self._batch([self.body[i] for i in members], members):
                done = True
        return done

    def regroup(self, results: set[Var]) -> bool:
        """Each sum of the steps ``x ± (u ± w)`` (either side), where ``x`` and ``w`` are made
        before the steps and ``u`` is not, written ``±u ± (x ± w)``: the terms made before the
        steps added first (the module docstring); True where one was."""
        uses = Counter(u for s in self.body for u in s.uses())
        uses.update(results)
        made = {s.out: i for i, s in enumerate(self.body) if len(s.outs) == 1}
        rewritten: dict[int, tuple[Stmt, ...]] = {}
        for i, stmt in enumerate(self.body):
            found = self._regroupable(stmt, made, uses)
            if found is None or i in rewritten or found[0] in rewritten:
                continue
            j, new = found
            rewritten[j], rewritten[i] = (), new
            self.carried.add(new[0].out)
        self.body = [s for i, stmt in enumerate(self.body) for s in rewritten.get(i, (stmt,))]
        return bool(rewritten)

    def _regroupable(self, c: Stmt, made: dict[Var, int], uses: Counter
                     ) -> tuple[int, tuple[Stmt, Stmt]] | None:
        """Where ``c`` is ``x ± b`` (or ``b ± x``) and ``b``, used by ``c`` alone, is ``u ± w``
        (or ``w ± u``), ``x`` and ``w`` made before the steps and ``u`` not: the index of ``b``'s
        statement and the two statements for ``c``, ``e = x ± w`` and ``c = ±u ± e``."""
        terms = self._signed(c) if c.loc is not None and c.loc.iteration else None
        if terms is None or sum(self._before(v) for v, _ in terms) != 1:
            return None
        (x, sx), (b, sb) = sorted(terms, key=lambda t: not self._before(t[0]))
        j = made.get(b)
        inner = None if j is None or uses[b] != 1 else self._signed(self.body[j])
        if inner is None or sum(self._before(v) for v, _ in inner) != 1:
            return None
        (w, sw), (u, su) = sorted(inner, key=lambda t: not self._before(t[0]))
        sw, su = sb * sw, sb * su
        add, sub = self.rules.lookup(operator.add), self.rules.lookup(operator.sub)
        # e = sx * x + sw * w, written with a sign ge: c = su * u + ge * e
        e_prim, e_args, ge = ((add, (x, w), 1) if sx > 0 and sw > 0 else
                              (sub, (x, w), 1) if sx > 0 else
                              (sub, (w, x), 1) if sw > 0 else (add, (x, w), -1))
        if su < 0 and ge < 0:
            return None
        e = Var(x.aval)
        c_prim, c_args = ((add, (u, e)) if su > 0 and ge > 0 else
                          (sub, (u, e)) if su > 0 else (sub, (e, u)))
        b_stmt = self.body[j]
        return j, (Stmt((e,), e_prim, e_args, (), b_stmt.loc, b_stmt.rule),
                   Stmt(c.outs, c_prim, c_args, (), c.loc, c.rule))

    def _signed(self, stmt: Stmt) -> list[tuple[Var, int]] | None:
        """``stmt``'s two terms with their signs, where it is an add or a subtract of two
        values of its own shape and dtype; else None."""
        prim = stmt.prim
        if prim.ufunc not in (np.add, np.subtract) or stmt.params or len(stmt.args) != 2 \
                or len(stmt.outs) != 1 or not all(
                    isinstance(a, Var) and a.aval == stmt.out.aval for a in stmt.args) \
                or stmt.out.aval.weak:
            return None
        a, b = stmt.args
        return [(a, 1), (b, -1 if prim.ufunc is np.subtract else 1)]

    def stack_residuals(self) -> None:
        """The statements left in the steps that read, at every step of one source line, a
        different value of the forward at one operand (``dot_h * (1 - h * h)``): each reads
        its row of one array, the forward's stack of those values (or the array they are rows
        of): one residual for all the steps where there was one a step."""
        groups: dict[tuple, list[int]] = {}
        for i, stmt in enumerate(self.body):
            if stmt.loc is None or not stmt.loc.iteration or self._key(stmt) is not None:
                continue
            for k, arg in enumerate(stmt.args):
                if isinstance(arg, Var) and not arg.aval.weak and arg not in self.carried:
                    key = (stmt.prim, stmt.params, replace(stmt.loc, iteration=""), k, arg.aval)
                    groups.setdefault(key, []).append(i)
        rows: dict[int, list[tuple[int, Stmt]]] = {}
        for (*_, k, _aval), members in groups.items():
            atoms = [self.body[i].args[k] for i in members]
            if len(set(atoms)) != len(atoms) or len(atoms) < 2:
                continue
            self.loc = replace(self.body[members[0]].loc, iteration="")
            made: list[Stmt] = []
            stacked = self._batched(atoms, made)
            if stacked is None:
                continue
            self._place(made)
            for j, i in enumerate(members):
                row = Stmt((Var(atoms[j].aval),), self.getitem, (stacked, Lit(j)), (),
                           self.body[i].loc, self.body[i].rule)
                rows.setdefault(i, []).append((k, row))
        body = []
        for i, stmt in enumerate(self.body):
            args = list(stmt.args)
            for k, row in rows.get(i, ()):
                body.append(row)
                args[k] = row.out
            body.append(stmt.replace(args=tuple(args)) if i in rows else stmt)
        self.body = body

    def fuse_products(self, results: set[Var]) -> None:
        """Each hoisted sum of products ``A @ dB + C @ dD + ...`` (``A``, ``C`` the forward's,
        ``dB``, ``dD`` matrices of the tangent map) made one product, ``[A | C] @ [dB; dD]``:
        the forward joins ``A`` and ``C`` once (``np.concatenate`` on their last axis), the
        tangent map the small matrices, and one product replaces two and their add."""
        uses = _live_uses([*self.top, *self.body], results)
        maker = {s.out: s for s in self.top if len(s.outs) == 1}
        inner = {a for s in self.top if _is_add(s) for a in s.args
                 if uses[a] == 1 and a in maker and _is_add(maker[a])}
        top = list(self.top)
        for root in [s for s in self.top if _is_add(s) and s.out not in inner]:
            terms, chain = _terms(root, maker, inner)
            groups: dict[tuple, list[Var]] = {}
            for t in terms:
                m = maker.get(t)
                if m is not None and uses[t] == 1 and m.prim.fn is operator.matmul \
                        and self._joinable(*m.args, t):
                    a, b = m.args
                    groups.setdefault((a.aval.shape[:-1], b.aval.shape[1]), []).append(t)
            fused = [g for g in groups.values() if len(g) > 1]
            if not fused:
                continue
            self.loc, made = root.loc, []
            for group in fused:
                lefts = tuple(maker[t].args[0] for t in group)
                rights = tuple(maker[t].args[1] for t in group)
                joined = self._emit(made, self.rules.lookup(np.concatenate), (lefts,), Aval(
                    (*lefts[0].aval.shape[:-1], sum(a.aval.shape[-1] for a in lefts)),
                    lefts[0].aval.dtype), STACKED, "_".join(filter(None, (a.hint for a in lefts)))
                    or None)
                made[-1] = made[-1].replace(params=(("axis", -1),))
                stacked = self._emit(made, self.rules.lookup(np.concatenate), (rights,), Aval(
                    (sum(b.aval.shape[0] for b in rights), rights[0].aval.shape[1]),
                    rights[0].aval.dtype), HOISTED)
                product = self._emit(made, self.rules.lookup(operator.matmul),
                                     (joined, stacked), root.out.aval, HOISTED)
                terms = [product if t is group[0] else t for t in terms if t not in group[1:]]
                chain += [maker[t] for t in group]
            total = terms[0]
            for k, t in enumerate(terms[1:]):
                out = root.out if k == len(terms) - 2 else Var(root.out.aval)
                made.append(Stmt((out,), root.prim, (total, t), (), root.loc, HOISTED))
                total = out
            at = top.index(root)
            gone = {id(c) for c in chain}
            self.forward += [m for m in made if m.rule == STACKED]
            top[at:at + 1] = [m for m in made if m.rule != STACKED]
            top = [t for t in top if id(t) not in gone]
        self.top = top

    def _joinable(self, a: Any, b: Any, out: Var) -> bool:
        """``a @ b`` with ``a`` the forward's and ``b`` a matrix of the tangent map, all of
        ``out``'s dtype: a product that joins others of its kind."""
        return isinstance(a, Var) and isinstance(b, Var) and a not in self.carried \
            and a not in self.at_top and b in self.carried and b.aval.ndim == 2 \
            and a.aval.ndim >= 2 and a.aval.dtype == b.aval.dtype == out.aval.dtype

    def _place(self, made: list[Stmt]) -> None:
        """Statements made for the steps: a stack of the forward's values in the forward,
        every other one at the top of the tangent map."""
        for stmt in made:
            if stmt.rule == STACKED:
                self.forward.append(stmt)
            else:
                self.top.append(stmt)
                self.at_top.update(stmt.outs)

    def _before(self, v: Var) -> bool:
        """Made before the steps, or a row of what is."""
        return v in self.rows or self._early(v)

    def _key(self, stmt: Stmt) -> tuple | None:
        """What a statement's group shares: its primitive, options and the kind of each
        operand; None for a statement that reads a value of the steps."""
        prim = stmt.prim
        if prim.inplace or prim.view or prim.effect or prim.creates or len(stmt.outs) != 1 \
                or stmt.out.aval.weak or stmt.out in self.rows \
                or not (prim.fn is operator.matmul or prim.ufunc is not None):
            return None
        kinds: list[Any] = [prim, stmt.params]
        for arg in stmt.args:
            if isinstance(arg, Lit):
                kinds.append(("lit", arg))
            elif not isinstance(arg, Var) or arg.aval.weak:
                return None
            elif arg in self.rows:
                kinds.append(("row", self.rows[arg][0]))
            elif arg not in self.carried:
                kinds.append(("forward", arg.aval))
            elif arg in self.at_top:
                kinds.append(("top", arg))
            else:
                return None
        return tuple(kinds)

    def _batch(self, group: list[Stmt], where: list[int]) -> bool:
        """One statement for the ``group`` (at ``where`` in the steps), before the steps, and
        each of the group a row of its result; False where it cannot be batched."""
        first, n = group[0], len(group)
        varying = [any(not _same(s.args[i], first.args[i]) for s in group)
                   for i in range(len(first.args))]
        if not any(varying) or not _lines_up(first, varying):
            return False
        self.loc = replace(first.loc, iteration="") if first.loc is not None else None
        made: list[Stmt] = []
        operands = []
        for i, vary in enumerate(varying):
            atoms = [s.args[i] for s in group]
            operand = self._batched(atoms, made) if vary else self._early_form(atoms[0], made)
            if operand is None:
                return False
            operands.append(operand)
        out = Var(Aval((n, *first.out.aval.shape), first.out.aval.dtype))
        made.append(Stmt((out,), first.prim, tuple(operands), first.params, self.loc, HOISTED))
        self._place(made)
        for j, (stmt, i) in enumerate(zip(group, where)):
            self.body[i] = Stmt(stmt.outs, self.getitem, (out, Lit(j)), (), stmt.loc, stmt.rule)
            self.rows[stmt.out] = (out, j)
        return True

    def _early_form(self, atom: Any, made: list[Stmt]) -> Any:
        """``atom``, the same in every statement of a group, as a value made before the steps:
        a row of a tangent input is made again there."""
        if not isinstance(atom, Var) or self._early(atom):
            return atom
        a, k = self.rows[atom]
        return self._emit(made, self.getitem, (a, Lit(k)), atom.aval, HOISTED)

    def _batched(self, atoms: list[Any], made: list[Stmt]) -> Var | None:
        """The values ``atoms`` (one per step) as one array, the steps first: the array they
        are consecutive rows of (or its slice), else the forward's stack of them."""
        if any(isinstance(a, Lit) for a in atoms):
            return None
        rows = [self.rows.get(a) for a in atoms]
        if all(r is not None and r[0] is rows[0][0] for r in rows):
            a, n = rows[0][0], len(rows)
            key = _consecutive([k for _, k in rows], a.aval.shape[0])
            if key == slice(None):
                return a
            if key is not None:
                aval = Aval((n, *a.aval.shape[1:]), a.aval.dtype)
                return self._emit(made, self.getitem, (a, Lit(key)), aval, HOISTED)
        if all(a not in self.carried for a in atoms):      # the forward's: stacked there
            aval = Aval((len(atoms), *atoms[0].aval.shape), atoms[0].aval.dtype)
            hint = atoms[-1].hint and f"{atoms[-1].hint}s"
            return self._emit(made, self.rules.lookup(np.stack), (tuple(atoms),), aval, STACKED,
                              hint)
        return None

    def _emit(self, made: list[Stmt], prim, args: tuple, aval: Aval, rule: str,
              hint: str | None = None) -> Var:
        """A statement before the steps: in the forward for a stack of its values (``rule``
        STACKED), else at the top of the tangent map."""
        out = Var(aval, hint)
        made.append(Stmt((out,), prim, args, (), self.loc, rule))
        return out


def _is_add(stmt: Stmt) -> bool:
    """An add of two values of its result's shape and dtype."""
    return stmt.prim.ufunc is np.add and not stmt.params and len(stmt.args) == 2 \
        and len(stmt.outs) == 1 and all(isinstance(a, Var) and a.aval == stmt.out.aval
                                        for a in stmt.args)


def _terms(root: Stmt, maker: dict[Var, Stmt], inner: set[Var]) -> tuple[list[Var], list[Stmt]]:
    """The terms of the sum ``root`` ends, through the adds that only it reads (``inner``),
    and the statements of that sum."""
    terms: list[Var] = []
    chain = [root]
    for a in root.args:
        if a in inner:
            sub, stmts = _terms(maker[a], maker, inner)
            terms += sub
            chain += stmts
        else:
            terms.append(a)
    return terms, chain


def _live(stmts: list[Stmt], results: set[Var]) -> list[Stmt]:
    """The statements that the results need (or that write or have an effect): the rows of a
    value made once for all the steps that the steps no longer read are gone, so the tangent
    map reads nothing of the forward for them."""
    needed, kept = set(results), []
    for stmt in reversed(stmts):
        if any(o in needed for o in stmt.outs) or stmt.prim.inplace or stmt.prim.effect:
            needed.update(stmt.uses())
            kept.append(stmt)
    return kept[::-1]


def _live_uses(stmts: list[Stmt], results: set[Var]) -> Counter:
    """How many times each value is read by the statements that something reads (a dead row
    left by a hoisting reads nothing)."""
    needed, uses = set(results), Counter(results)
    for stmt in reversed(stmts):
        if any(o in needed for o in stmt.outs):
            needed.update(stmt.uses())
            uses.update(stmt.uses())
    return uses


def _consecutive(ks: list[int], length: int) -> slice | None:
    """The slice of an array of ``length`` rows whose rows are ``ks`` (consecutive, counting
    up or, in a loop over ``reversed(range(n))``, down), or None."""
    start, n = ks[0], len(ks)
    if ks == list(range(start, start + n)):
        return slice(None) if start == 0 and n == length else slice(start, start + n)
    if ks == list(range(start, start - n, -1)):
        stop = start - n if start - n >= 0 else None
        return slice(None, None, -1) if start == length - 1 and stop is None else \
            slice(start, stop, -1)
    return None


def _same(a: Any, b: Any) -> bool:
    return a is b or isinstance(a, Lit) and isinstance(b, Lit) and a == b


def _lines_up(stmt: Stmt, varying: list[bool]) -> bool:
    """Whether ``stmt`` on a new first axis of its ``varying`` operands computes each step's
    value at once: numpy's broadcasting pairs step with step."""
    ndims = [a.aval.ndim if isinstance(a, Var) else 0 for a in stmt.args]
    if stmt.prim.fn is operator.matmul:
        (va, vb), (na, nb) = varying, ndims
        if va and vb:            # a stack of matrices times a stack of matrices
            return na == nb == 2
        if va:                   # rows or matrices, stacked, times one matrix (or vector)
            return nb <= 2
        return nb >= 2 and na <= 2      # one matrix (or vector) times stacked matrices
    rank = stmt.out.aval.ndim
    return all(n == rank for n, vary in zip(ndims, varying) if vary)


__all__ = ["hoist_steps", "HOISTED"]
