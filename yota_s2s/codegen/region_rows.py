"""Values a loop step makes in a row of an array (buffered form), as a handwritten BPTT does.

- a state saved in its stack (``H[t + 1] = h``) is made in that row: ``h = xp.tanh(...,
  out=H[t + 1])`` (``first_rows``, ``state_saves``, ``states_in_rows``);
- a value written into a row of a stack the loop carries is made there (``values_in_rows``);
- the rows of an accumulator each step writes once are assigned, not added to
  (``rows_written_once``), and made in place where a ufunc or a product makes them
  (``made_in_rows_once``);
- the product of every step's input row with a weight is one product before the loop
  (``products_before``).

Each function returns what it found as (statement, its new node, the statement left out);
regions.py writes them.
"""
from __future__ import annotations

import ast
import operator

from ..ir.analysis import Analysis
from ..ir.branch import branch_of
from ..ir.region import EMPTY, handed_over_operands, loop_of
from ..ir.tape import Lit, Stmt, Var
from ..passes.stacked import row_offset
from ..rules.indexing import index_add, setitem_
from ..text import literal
from .buffers import construct_arrays, writer
from .emit import Emitter
from .out_forms import row_call
from .region_slots import in_array_after


def first_rows(sub: Emitter, loop, blocks) -> list[tuple[Var, Var, int, Stmt]]:
    """The stacks that keep a carried value and its next value in one array (ad/regions.py:
    the step at ``t`` saves its state ``h`` at row ``t`` and the next state at ``t + 1``): row
    ``t`` of step ``t`` is what the step before wrote at its ``t + 1``, so only the first step's
    save is needed, written once before the loop (``H[0] = h``): one row written per step, as
    in a handwritten BPTT. (stack, carried value, row, the save left out of the body) per such
    stack, where the analysis shows the stack's memory written by exactly those two saves and
    read by nothing else in the step."""
    if not _one_node_each(blocks):
        return []
    facts, body, index = sub.facts, loop.body, loop.index
    stmts = body.stmts

    def is_index(key, shift: int) -> bool:
        """``key`` is the step index plus ``shift``."""
        if not shift:
            return key is index
        made = facts.producer.get(key) if isinstance(key, Var) else None
        return made is not None and made.prim.fn is operator.add and made.args[0] is index \
            and isinstance(made.args[1], Lit) and type(made.args[1].value) is int \
            and made.args[1].value == shift

    found = []
    results = dict(zip(loop.carried, body.result))
    fresh = dict(zip(loop.carried, loop.fresh))
    for stack in loop.carried:
        if fresh[stack] != EMPTY:
            continue
        root = facts.root(stack)
        writes = facts.updates.get(root, [])
        if len(writes) != 2:
            continue
        save, later = stmts[writes[0]], stmts[writes[1]]
        if save.prim.fn is not setitem_ or later.prim.fn is not setitem_ \
                or save.args[0] is not stack or later.args[0] is not save.out:
            continue
        c = save.args[2]
        if not isinstance(c, Var) or c not in results or fresh[c] or results[c] is not later.args[2]:
            continue
        first, second = (0, 1) if not loop.reverse else (1, 0)
        if not (is_index(save.args[1], first) and is_index(later.args[1], second)):
            continue
        members = facts.members.get(root, [])
        readers = {p for m in members for p in facts.readers.get(m, ())}
        if readers - {writes[0], writes[1]} or results[stack] is not later.out:
            continue
        found.append((stack, c, 0 if not loop.reverse else loop.length, save))
    return found


def _one_node_each(blocks) -> bool:
    """Each statement of the body is written as one statement (a loop region, its ``for``
    loop with what starts and ends it, counts as one): the written nodes are the body's."""
    return all(len(nodes) == 1 or loop_of(source) is not None
               for block in blocks for source, nodes in block.parts())


def rows_written_once(sub: Emitter, loop, blocks) -> dict[Var, tuple[Stmt, ast.stmt]]:
    """An accumulator the loop makes (zeros) of one row per step, to which each step adds only
    at its own row (``dxs[t] += v``): every row is written once, so the step assigns it
    (``dxs[t] = v``) and the array starts uninitialized, with no zero fill. Accumulator ->
    (the addition, its assignment)."""
    if not _one_node_each(blocks):
        return {}
    facts, body, found = sub.facts, loop.body, {}
    results = dict(zip(loop.carried, body.result))
    for c, fresh in zip(loop.carried, loop.fresh):
        if fresh is not True or c not in body.owned or not c.aval.ndim \
                or c.aval.shape[0] != loop.length:
            continue
        readers = facts.readers.get(c, [])
        members = facts.members.get(facts.root(c), [])
        if len(readers) != 1 or any(facts.readers.get(m, [])
                                    for m in members if m is not c):
            continue
        add = body.stmts[readers[0]]
        if add.prim.fn is not index_add or add.args[0] is not c or add.args[1] is not loop.index \
                or add.out is not results[c] or facts.uses[c] != 1:
            continue
        row = ast.Subscript(ast.Name(sub.names[add.out]), sub.key(add.args[1]), ast.Store())
        found[c] = (add, ast.Assign([row], sub.atom(add.args[2]), lineno=0))
    return found


def made_in_rows_once(em: Emitter, sub: Emitter, loop,
                      once: dict) -> list[tuple[Stmt, ast.stmt, Stmt]]:
    """In the buffered form, the value a step assigns to its row of an array written once per
    row (``once``, from ``rows_written_once``: ``dxs[t] = dt5``) is made in that row, where a
    ufunc or a matrix product of the row's shape and dtype makes it and nothing else reads it:
    ``xp.matmul(dt9, Wx.T, out=dxs[t])``, no copy. (the value's statement, its new node, the
    addition it replaces) per such value."""
    if not em.fast:
        return []
    facts, body, found = sub.facts, loop.body, []
    for c, (add, _) in once.items():
        v = add.args[2]
        made = facts.producer.get(v) if isinstance(v, Var) else None
        form = writer(made) if made is not None else None
        if form not in ("ufunc", "matmul") or v.aval.weak \
                or (v in sub.inlined and sub.planned is not None) \
                or facts.readers.get(v) != [facts.defined[add.out]] \
                or any(v is r for r in body.result) \
                or v.aval.shape != tuple(c.aval.shape[1:]) or v.aval.dtype != c.aval.dtype:
            continue
        row = ast.Subscript(ast.Name(sub.names[add.out]), sub.key(add.args[1]), ast.Load())
        found.append((made, ast.Expr(row_call(sub, made, row, form)), add))
    return found


def state_saves(em: Emitter, stmt: Stmt, loop, sub: Emitter,
                first) -> list[tuple[Stmt, Stmt, ast.expr, int]]:
    """The states of ``first_rows`` that can be made in their stack's row: where the state
    comes from an elementwise function (a ufunc) of its shape, nothing between it and its save
    touches the stack or the state's memory, and nothing after the loop reads the loop's last
    state (a view of the stack there). (the state's statement, the save, the row, the index
    from which nothing before the save reads the stack and the row's key is made) per state."""
    if not em.fast:
        return []
    facts, found = sub.facts, []
    after = dict(zip(loop.carried, stmt.outs))
    for stack, c, _, _ in first:
        results = dict(zip(loop.carried, loop.body.result))
        o, root = results[c], facts.root(stack)
        save = next(s for s in loop.body.stmts if s.prim.inplace and len(s.args) == 3
                    and s.args[2] is o
                    and facts.root(s.args[0]) is root)
        made = facts.producer.get(o)
        armed = made is not None and branch_made(made, o)
        if made is None or (writer(made) != "ufunc" and not armed) or o.aval.weak \
                or c.aval.weak or o.aval.shape != tuple(stack.aval.shape[1:]) \
                or o.aval.dtype != stack.aval.dtype:
            continue
        start, stop = facts.defined[o], facts.defined[save.out]
        key = save.args[1]
        free = 1 + max((p for m in facts.members.get(root, []) for p in facts.readers.get(m, ())
                        if p < stop), default=-1)
        if isinstance(key, Var) and key not in sub.inlined:
            free = max(free, facts.defined.get(key, -1) + 1)
        if start < free or facts.updates.get(facts.root(o)):
            continue
        if (em.facts.readers.get(after[c]) or after[c] in em.facts.returned) \
                and not (armed and _last_state_read_before(em, stmt, after[c], after[stack])):
            continue
        row = ast.Subscript(ast.Name(sub.names[save.args[0]]), sub.key(key), ast.Load())
        found.append((made, save, row, free))
    return found


def branch_made(made: Stmt, o: Var) -> bool:
    """Whether ``o`` is an array result of the branch ``made`` (its arms make it in the array
    the plan gives it: codegen/branch_plan.py)."""
    return made.prim.emit[:1] == ("branch",) and any(o is a for a in construct_arrays(made))


def _last_state_read_before(em: Emitter, stmt: Stmt, last: Var, stack: Var) -> bool:
    """Whether the loop's last state ``last``, a view of its stack's last row where the step
    makes its states in their rows, keeps its contents while it is read: everything made over
    it in the plan (region_slots.in_array_after) is read for the last time before anything reads
    or writes the stack after the loop (``stack``: the unwind takes it as its own), none of it
    is returned or handed to a later loop to update in place."""
    at = next(i for i, s in enumerate(em.tape.stmts) if s is stmt)
    members, last_read = in_array_after(em, last, at)
    facts = em.facts
    handed = {a for i, s in enumerate(em.tape.stmts) if i > at and loop_of(s) is not None
              for a in handed_over_operands(facts, s, i)}
    stack_read = min((p for m in facts.members.get(facts.root(stack), [stack])
                      for p in facts.readers.get(m, ()) if p > at), default=facts.end)
    return not any(facts.same_memory(m, h) for m in members for h in handed) \
        and not any(m in facts.returned for m in members) and last_read < stack_read


def states_in_rows(sub: Emitter, saves) -> list[tuple[Stmt, ast.stmt, Stmt]]:
    """In the buffered form, a state saved in its stack (``first_rows``) is made in its row:
    ``h = xp.tanh(..., out=H[t + 1])``, no copy; ``h`` is then that row, which no later step
    writes. Where the plan put the values it is made over in that row too (buffers.py
    ``"row"``: ``t = xp.matmul(xs[t], Wx, out=H[t + 1])``, then ``t += ...``), it is made over
    them in place: ``h = xp.tanh(t, out=t)``. (the state's statement, its new node, the save
    left out) per state of ``state_saves`` (``saves``)."""
    found = []
    for made, save, row, _ in saves:
        if made.prim.emit[:1] == ("branch",):
            continue        # (its arms make it in the row: buffers._rows, branch_plan.py)
        over = _row_operand(sub, made)
        target = ast.Name(sub.names[over]) if over is not None else row
        node = ast.Assign([ast.Name(sub.names[made.out])], row_call(sub, made, target), lineno=0)
        found.append((made, node, save))
    return found


def _row_operand(sub: Emitter, made: Stmt) -> Var | None:
    """The operand of the state's statement ``made`` whose group the plan put in the state's
    row (buffers.py ``"row"``), or None."""
    groups = sub.memory.group
    return next((a for a in made.args if isinstance(a, Var) and a in groups
                 and groups[a].kind == "row"), None)


def values_in_rows(em: Emitter, loop, sub: Emitter,
                   dropped: set[int]) -> list[tuple[Stmt, ast.stmt, Stmt]]:
    """In the buffered form, a value a step writes into a row of a stack the loop carries and
    owns (``H[t + 1] = dz``, passes/stacked.py) is made in that row: ``dz = xp.multiply(...,
    out=H[t + 1])``, no copy. Where it comes from an elementwise function (a ufunc) of the
    row's shape and dtype, is not carried out of the step, the stack is written by nothing
    else in the step, and between the value and its write the step reads the stack only
    through rows at other offsets from the step index (``h_prev = H[t]`` while ``H[t + 1]`` is
    written): the row's old contents are not read once the value is made. (the value's
    statement, its new node, the write left out) per such value."""
    found = []
    for made, g, save, row, _ in _row_values(em, loop, sub, dropped):
        if made.prim.emit[:1] != ("branch",):
            node = ast.Assign([ast.Name(sub.names[g])], row_call(sub, made, row), lineno=0)
            found.append((made, node, save))
    return found


def branch_rows(em: Emitter, loop, sub: Emitter,
                dropped: set[int]) -> list[tuple[Var, Stmt, ast.expr, frozenset]]:
    """As ``values_in_rows``, a branch's result a step writes into a row of a stack (``H[t6] =
    dw_1``): each arm makes it in that row (``t7 = xp.multiply(t7, h_prev, out=H[t6])``;
    buffers._rows, branch_plan.py), an arm that gives on what it read copies it there. The
    branch may read the row itself (``h_new = H[t6]``, read in an arm): those operands are
    given (``reads``) and an arm makes its result in the row only from after its last read
    of them (buffers._homes). (the value, the write left out, the row, reads) each."""
    return [(g, save, row, reads) for made, g, save, row, reads
            in _row_values(em, loop, sub, dropped) if made.prim.emit[:1] == ("branch",)]


def _row_values(em: Emitter, loop, sub: Emitter, dropped: set[int]):
    """The values of ``values_in_rows`` and ``branch_rows``: (the value's statement, the
    value, its write, the row, the operands of a branch that view the row) each."""
    if not em.fast:
        return []
    facts, body, found = sub.facts, loop.body, []
    results = {id(r) for r in body.result}
    for c in loop.carried:
        if c not in body.owned or c.aval.weak or c.aval.ndim < 1:
            continue
        root = facts.root(c)
        writes = facts.updates.get(root, [])
        if len(writes) != 1:
            continue
        save = body.stmts[writes[0]]
        if save.prim.fn is not setitem_ or save.args[0] is not c or id(save) in dropped:
            continue
        key, g = save.args[1], save.args[2]
        offset = row_offset(key, loop, facts)
        made = facts.producer.get(g) if isinstance(g, Var) else None
        armed = made is not None and branch_made(made, g)
        if offset is None or made is None or (writer(made) != "ufunc" and not armed) \
                or g.aval.weak or id(g) in results or g in sub.inlined \
                or g.aval.shape != tuple(c.aval.shape[1:]) or g.aval.dtype != c.aval.dtype:
            continue
        start, stop = facts.defined[g], facts.defined[save.out]
        if isinstance(key, Var) and (facts.defined.get(key, -1) > start or key in sub.inlined):
            continue
        if facts.updates.get(facts.root(g)):
            continue
        reads, clear = set(), True
        for m in facts.members.get(root, []):
            for p in facts.readers.get(m, ()) if m is not c else ():
                at = _written_at(p, body, sub)
                if armed and at == start and _row_at(m, c, loop, facts) == offset \
                        and any(m is a for a in made.args):
                    reads.add(m)        # read by the branch: its arms see to it
                elif start <= at < stop if armed else start < at < stop:
                    clear = clear and _row_at(m, c, loop, facts) not in (None, offset)
        if not clear or reads and not _arms_read_first(made, g, reads):
            continue
        row = ast.Subscript(ast.Name(sub.names[c]), sub.key(key), ast.Load())
        found.append((made, g, save, row, frozenset(reads)))
    return found


def _arms_read_first(made: Stmt, g: Var, reads: set[Var]) -> bool:
    """Whether each arm of the branch ``made`` reads its operands ``reads`` (views of the row
    its result ``g`` is to be made in) for the last time before it makes any value its result
    may be made over (the result's ancestors of its shape and dtype: the plan's candidates,
    buffers._overwritable), or in a ufunc making the first of them. (buffers._homes checks it
    again on the arm's plan, with the reads where the written code makes them; where it finds
    otherwise, the arm makes its result in an array of its own, copied into the row.)"""
    k = next(i for i, o in enumerate(made.outs) if o is g)
    for arm in branch_of(made).arms:
        r, facts = arm.result[k], Analysis(arm)
        inputs = {i.var for i in arm.inputs}
        if not isinstance(r, Var) or r in inputs:
            continue        # (an operand given on: copied into the row)
        views = {i.var for i, a in zip(arm.inputs, made.args[1:]) if any(a is v for v in reads)}
        last = max((facts.last_memory.get(v, -1) for v in views), default=-1)
        seen, todo = set(), [r]
        while todo:
            v = todo.pop()
            stmt = facts.producer.get(v)
            if v in seen or stmt is None:
                continue
            seen.add(v)
            at = facts.defined[v]
            if (v.aval.shape, v.aval.dtype) == (r.aval.shape, r.aval.dtype) \
                    and (at < last or at == last and writer(stmt) != "ufunc"):
                return False
            todo += stmt.uses()
    return True


def _written_at(p: int, body, sub: Emitter) -> int:
    """Where the statement at ``p`` is read in the written code: a value written inside its
    reader's expression (``sub.inlined``: ``dW += dz * h_prev``) is computed there."""
    while True:
        outs = body.stmts[p].outs
        readers = sub.facts.readers.get(outs[0]) if outs and outs[0] in sub.inlined else None
        if not readers:
            return p
        p = readers[-1]


def _row_at(v: Var, stack: Var, loop, facts) -> int | None:
    """The offset ``d`` where ``v`` is a view of row ``t + d`` of ``stack`` (through views of
    one base: ``H[t].T``); None if it is not (or not known to be) one row."""
    while v in facts.producer:
        made = facts.producer[v]
        if made.prim.fn is operator.getitem and made.args[0] is stack and len(made.args) == 2:
            return row_offset(made.args[1], loop, facts)
        bases = [b for b in (made.args[0],) if isinstance(b, Var)] if made.prim.view else []
        if len(bases) != 1 or not facts.same_memory(bases[0], stack):
            return None
        v = bases[0]
    return None


def products_before(em: Emitter, loop, sub: Emitter,
                    saves) -> list[tuple[Stmt, ast.stmt, ast.stmt, set[int]]]:
    """A step's state made in its stack's row over a product of the step's input row and a
    weight the loop does not change (buffers.py ``"row"``: ``t = xp.matmul(xs[t], Wx,
    out=H[t + 1])``, then ``t += ...``, ``h = xp.tanh(t, out=t)``) has that product made for
    every step at once before the loop, in one matrix product into the rows the steps make
    their states in: ``xp.matmul(xs.reshape((160, 32)), Wx, out=H[1:11].reshape((160, 64)))``
    (what an expert writes: one large product runs faster than ten small ones, and each step
    calls one function less); the step then reads its row, ``t = H[t + 1]``. Forward loops,
    where the row is ``t + 1`` and the input row is ``xs[t]``, both matrices. Each element is
    the sum of the same terms as the step's; numpy's OpenBLAS adds them in the same order
    whatever the number of rows (the same bits in the bench workloads), another BLAS may round
    the last place differently, as it may between any two sizes. (the product's statement,
    the line before the loop, the step's node, the statements left unread) each."""
    if not em.fast or loop.reverse or sub.planned is None:
        return []
    facts, memory, found = sub.facts, sub.memory, []
    for made, save, row, _ in saves:
        over = _row_operand(sub, made) if writer(made) == "ufunc" else None
        if over is None:
            continue
        product = facts.producer.get(memory.group[over].members[0])
        if product is None or memory.writes.get(product.out) != "matmul" \
                or input_product(product, loop, facts) is None \
                or row_offset(save.args[1], loop, facts) != 1:
            continue
        (x, w), taken = product.args, facts.producer[product.args[0]]
        xs, stack, n = taken.args[0], save.args[0], loop.length
        flat = (n * x.aval.shape[0], x.aval.shape[1])
        rows = ast.Name(sub.names[xs]) if xs.aval.shape[0] == n else \
            ast.Subscript(ast.Name(sub.names[xs]), ast.Slice(None, ast.Constant(n)), ast.Load())
        out = ast.Subscript(ast.Name(sub.names[stack]),
                            ast.Slice(ast.Constant(1), ast.Constant(n + 1)), ast.Load())
        before = ast.Expr(ast.Call(ast.Attribute(ast.Name("xp"), "matmul", ast.Load()), [
            _reshaped(rows, flat), ast.Name(sub.names[w])],
            [ast.keyword("out", _reshaped(out, (flat[0], product.out.aval.shape[1])))]))
        em.modules.add("xp")
        node = ast.Assign([ast.Name(sub.names[product.out])], row, lineno=0)
        unread = {id(taken)} if x not in sub.inlined and facts.uses.get(x) == 1 else set()
        found.append((product, before, node, unread))
    return found


def input_product(product: Stmt, loop, facts) -> Var | None:
    """``product``'s result where it is ``xs[t] @ W`` in a forward loop: the step's input row
    times a weight, both matrices, invariants of the loop that nothing updates."""
    if loop.reverse or writer(product) != "matmul" or len(product.args) != 2:
        return None
    x, w = product.args
    taken = facts.producer.get(x) if isinstance(x, Var) else None
    if taken is None or taken.prim.fn is not operator.getitem or len(taken.args) != 2 \
            or taken.args[1] is not loop.index or taken.args[0] not in loop.invariants \
            or w not in loop.invariants or x.aval.ndim != 2 or w.aval.ndim != 2 \
            or any(facts.updates.get(facts.root(v)) for v in (taken.args[0], w)):
        return None
    return product.out


def products_note(product: Stmt, loop, sub: Emitter) -> str:
    """``loop_regions.py:318  xs[t] @ Wx of every step at once``: the comment above
    ``products_before``'s product."""
    x, w = product.args
    xs, t = sub.facts.producer[x].args[0], loop.index
    where = f"{product.loc.short}  " if product.loc is not None else ""
    return f"{where}{sub.names[xs]}[{sub.names[t]}] @ {sub.names[w]} of every step at once"


def _reshaped(array: ast.expr, shape: tuple) -> ast.expr:
    """``array.reshape(shape)``."""
    return ast.Call(ast.Attribute(array, "reshape", ast.Load()), [literal(shape)], [])
