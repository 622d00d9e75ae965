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

A while's own body (``While``) the same way (``hoisted_while_invariants``): a statement of
the trip that reads only the loop's invariants (``-k`` of ``f1 = -k * y``) is made once,
before the loop, and the body and the condition read its value as one more invariant; each
trip then computes ``nk * y``, one call, where the passes would have made ``-(k * y)``, two.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.analysis import Analysis
from ..ir.rewrite import substitute_stmt, resolver
from ..ir.tape import Input, Stmt, Tape, Var
from ..ir.whiles import Unwind, While, unwind_primitive, while_of, while_primitive


def hoisted_invariants(tape: Tape) -> Tape:
    """``tape`` with each unwind's invariant statements made before it (the docstring)."""
    return _each_hoisted(tape, Unwind, _hoisted)


def hoisted_while_invariants(tape: Tape) -> Tape:
    """``tape`` with each while's trip statements of its invariants alone made before it."""
    return _each_hoisted(tape, While, _hoisted_from_while)


def _each_hoisted(tape: Tape, kind: type, hoisted) -> Tape:
    """``tape`` with ``hoisted(stmt)``'s statements made before each statement of a ``kind``
    construct (``While``, ``Unwind``), and the statement as it gives it back."""
    stmts: list[Stmt] = []
    for stmt in tape.stmts:
        if isinstance(while_of(stmt), kind):
            before, stmt = hoisted(stmt)
            stmts += before
        stmts.append(stmt)
    if len(stmts) == len(tape.stmts) and all(a is b for a, b in zip(stmts, tape.stmts)):
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


def _moved(step: Tape, invariants: list[Var], results: set) -> list[Stmt]:
    """The statements of ``step`` made of ``invariants`` (and numbers) alone, in order."""
    facts = Analysis(step)
    fixed, moved = set(invariants), []
    for st in step.stmts:
        if _movable(st, fixed, facts, results):
            moved.append(st)
            fixed.update(st.outs)
    return moved


def _made_before(moved: list[Stmt], outer: dict, rule) -> list[Stmt]:
    """``moved`` as statements of the enclosing tape (``outer``: the tape's value of each of
    the step's invariants; each value moved gets a Var of its own there, added to it, or the
    Var of the same call moved before it: ``-k`` of ``f1 = -k * y`` and ``f2 = -k * y1``)."""
    before, seen = [], {}
    for st in moved:
        fresh = tuple(Var(o.aval, o.hint) for o in st.outs)
        new = substitute_stmt(st, resolver(outer))
        try:
            key = (new.prim, new.args, new.params, tuple(o.aval for o in st.outs))
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in seen:
            outer.update(zip(st.outs, seen[key]))
            continue
        if key is not None:
            seen[key] = fresh
        outer.update(zip(st.outs, fresh))
        before.append(new.replace(outs=fresh, rule=st.rule if st.rule is not None else rule))
    return before


def _hoisted_from_while(stmt: Stmt) -> tuple[list[Stmt], Stmt]:
    """The statements made before the while ``stmt``, and ``stmt`` reading their values as
    invariants after its own (the body's and the condition's last inputs)."""
    loop: While = while_of(stmt)
    body, n = loop.body, loop.ncarry
    invariants = [i.var for i in body.inputs[n:]]
    moved = _moved(body, invariants, {r for r in body.result if isinstance(r, Var)})
    if not moved:
        return [], stmt
    outer: dict[Var, object] = dict(zip(invariants, stmt.args[n:]))
    before = _made_before(moved, outer, stmt.rule)
    gone = {id(x) for x in moved}
    first: dict[Var, Var] = {}      # the body's Var of each value made before the loop
    for o in (o for st in moved for o in st.outs):
        first.setdefault(outer[o], o)
    alias = {o: first[outer[o]] for st in moved for o in st.outs if first[outer[o]] is not o}
    kept = [substitute_stmt(x, resolver(alias)) if alias else x
            for x in body.stmts if id(x) not in gone]
    read = {u for x in kept for u in x.uses()}
    made = [o for st in moved for o in st.outs if o in read]
    names = tuple(v.hint or "k" for v in made)

    def extended(tape: Tape, made_vars: list[Var], stmts) -> Tape:
        inputs = [Input(i.var, k) for k, i in enumerate(
            [*tape.inputs, *(Input(v, 0) for v in made_vars)])]
        return tape.copy(stmts=stmts, inputs=inputs, params=(*tape.params, *names))
    new_body = extended(body, made, kept)
    cond = extended(loop.cond, [Var(v.aval, v.hint) for v in made], loop.cond.stmts)
    new = replace(loop, body=new_body, cond=cond)
    return before, stmt.replace(
        prim=while_primitive(new, (*stmt.prim.operands, *names), len(stmt.outs)),
        args=(*stmt.args, *(outer[v] for v in made)), params=(("loop", new),))
