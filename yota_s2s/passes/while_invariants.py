"""An unwind's statements of its invariants alone, made once before it (ir/whiles.py).

The step of a while's backward (``Unwind``) runs once per recorded trip; a statement of it
that reads only the loop's invariants (and numbers) gives the same value on every trip:
``-k`` of the rule of ``-k * y`` (mul, x1: ``dy * x2`` with ``x2 = -k``). It is made once,
before the unwind, and the step reads its value as one more invariant::

    for t in reversed(range(trips)):            t11 = -k
        ...                              ->     for t in reversed(range(trips)):
        t11 = -k                                    ...
        t16 = t11 * t14                             t16 = t11 * t14

Moved: a statement with no effect, no construct of its own and no in-place update, view or
new array of static operands (``np.zeros``: an array the trips would then share), whose
value the step neither gives as a result nor writes in place (the trips share it now).
Where the loop runs no trip, the statement runs once anyway: it is a pure function of values
the function holds already.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.analysis import Analysis
from ..ir.rewrite import substitute_stmt, resolver
from ..ir.tape import Input, Stmt, Tape, Var
from ..ir.whiles import Unwind, unwind_primitive, while_of


def hoisted_invariants(tape: Tape) -> Tape:
    """``tape`` with each unwind's invariant statements made before it (the docstring)."""
    stmts: list[Stmt] = []
    for stmt in tape.stmts:
        if isinstance(while_of(stmt), Unwind):
            before, stmt = _hoisted(stmt)
            stmts += before
        stmts.append(stmt)
    if all(a is b for a, b in zip(stmts, tape.stmts)) and len(stmts) == len(tape.stmts):
        return tape
    return tape.copy(stmts=stmts)


# the statements holding tapes of their own (a region, a branch, a while, an unwind)
_CONSTRUCTS = (("loop",), ("branch",), ("while",), ("unwind",))


def _movable(s: Stmt, fixed: set[Var], facts: Analysis, results: set) -> bool:
    prim = s.prim
    if prim.effect or prim.inplace or prim.view or prim.creates or prim.emit[:1] in _CONSTRUCTS:
        return False
    if any(o in results or facts.updates.get(facts.root(o)) for o in s.outs):
        return False
    return all(v in fixed for v in s.uses()) and any(True for _ in s.uses())


def _hoisted(stmt: Stmt) -> tuple[list[Stmt], Stmt]:
    """The statements made before the unwind ``stmt``, and ``stmt`` reading their values."""
    unwind: Unwind = while_of(stmt)
    step, s, j = unwind.step, unwind.nsaved, unwind.ninvariant
    invariants = [i.var for i in step.inputs[s:s + j]]
    facts = Analysis(step)
    results = {r for r in step.result if isinstance(r, Var)}
    fixed, moved = set(invariants), []
    for st in step.stmts:
        if _movable(st, fixed, facts, results):
            moved.append(st)
            fixed.update(st.outs)
    if not moved:
        return [], stmt
    # the enclosing tape's statements: the step's invariants read as the unwind's operands,
    # each value made under a Var of its own there
    outer: dict[Var, object] = dict(zip(invariants, stmt.args[1 + s:1 + s + j]))
    before = []
    for st in moved:
        fresh = tuple(Var(o.aval, o.hint) for o in st.outs)
        outer.update(zip(st.outs, fresh))
        # (a forward value the step made again is in the unwind's section: its rule)
        before.append(substitute_stmt(st, resolver(outer)).replace(
            outs=fresh, rule=st.rule if st.rule is not None else stmt.rule))
    gone = {id(x) for x in moved}
    read = {u for x in step.stmts if id(x) not in gone for u in x.uses()}
    made = [o for st in moved for o in st.outs if o in read]
    inputs = [*step.inputs[:s + j], *(Input(v, 0) for v in made), *step.inputs[s + j:]]
    inputs = [Input(i.var, k) for k, i in enumerate(inputs)]
    params = (*step.params[:s + j], *(v.hint or "k" for v in made), *step.params[s + j:])
    new_step = step.copy(stmts=[x for x in step.stmts if id(x) not in gone], inputs=inputs,
                         params=tuple(params))
    new = replace(unwind, step=new_step, ninvariant=j + len(made))
    args = (*stmt.args[:1 + s + j], *(outer[v] for v in made), *stmt.args[1 + s + j:])
    return before, stmt.replace(prim=unwind_primitive(new, tuple(params), len(stmt.outs)),
                                args=args, params=(("unwind", new),))
