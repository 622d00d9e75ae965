"""ir/analysis.py: what a tape's statements say about its values, tape text in, facts out.

Each value is written ``name@position`` (the statement that makes it; -1 for an input), with
the statements reading it, its last read (the outputs are read at the end, ``len(stmts)``), the
value whose memory it shares (a view, an in-place update: the root of its memory class), how
long that memory must keep its contents where that is later than the value's own last read, and
whether it is an argument's memory or returned.
"""
from __future__ import annotations

import operator

import numpy as np

from yota_s2s.compiler import gradient_tape
from yota_s2s.frontend import trace_function
from yota_s2s.ir.analysis import Analysis, basic_parts, index_copies, memory_bases, read_only
from yota_s2s.ir.names import namer_of
from yota_s2s.ir.printer import format_tape
from yota_s2s.rules import RULES


def views(x, W):
    y = x[1:]
    z = np.exp(y)
    m = W.T @ z
    a = np.zeros(3)
    a[1] = m[0]
    a *= 2.0
    return np.sum(a * a) + np.sum(y)


ARGS = (np.ones(4), np.ones((3, 3)))


def facts_text(tape, facts: Analysis) -> str:
    names = namer_of(tape)

    def at(v):
        return f"{names[v]}@{facts.defined[v]}"
    rows = []
    for v in sorted(facts.defined, key=lambda v: facts.defined[v]):
        row = [f"{at(v)}: read {facts.readers.get(v, [])} last {facts.last.get(v, '-')}"]
        if facts.root(v) is not v:
            row.append(f"shares {at(facts.root(v))}")
        if facts.last_memory[v] != facts.last.get(v, -1):
            row.append(f"memory until {facts.last_memory[v]}")
        row += ["argument's"] * (v in facts.arguments) + ["returned"] * (v in facts.returned)
        rows.append(" ".join(row))
    rows.append("updates " + ", ".join(f"{at(r)}: {p}" for r, p in facts.updates.items()))
    return "\n".join(rows)


def test_def_use_and_memory_classes_of_a_gradient_tape():
    _, tape = gradient_tape(views, ARGS, check=True)
    assert format_tape(tape, locations=False) == """\
tape views(x:f64[4], W:f64[3,3]) -> f64[]
  y_:f64[3] = getitem[key=1:] x
  z:f64[3] = exp y_
  t1:f64[3,3] = transpose W
  m:f64[3] = matmul t1 z
  a:f64[3] = zeros 3
  t2:f64[] = getitem[key=0] m
  a:f64[3] = setitem_ a 1 t2
  a_1:f64[3] = mul a 2.0
  t3:f64[3] = mul a_1 a_1
  t4:f64[] = sum t3
  t5:f64[] = sum y_
  views:f64[] = add t4 t5
  da_1:f64[3] = add a_1 a_1
  da:f64[3] = mul da_1 2.0
  dt2:f64[] = getitem[key=1] da
  dm:f64[3] = zeros (3,)
  dm:f64[3] = index_add dm 0 dt2
  t6:f64[3,1] = getitem[key=(..., None)] dm
  dt1:f64[3,3] = mul t6 z
  dz:f64[3] = matmul dm t1
  dW:f64[3,3] = transpose dt1
  dy__part1:f64[3] = mul dz z
  dy_:f64[3] = add 1.0 dy__part1
  dx:f64[4] = zeros (4,)
  dx:f64[4] = index_add dx 1: dy_
  return views
  grads x: dx, W: dW"""
    facts = Analysis(tape)
    assert facts.end == 25 and facts.outputs == [tape.stmts[11].out, tape.stmts[24].out,
                                                 tape.stmts[20].out]
    assert facts_text(tape, facts) == """\
x@-1: read [0] last 0 memory until 10 argument's
W@-1: read [2] last 2 memory until 19 argument's
y_@0: read [1, 10] last 10 shares x@-1 argument's
z@1: read [3, 18, 21] last 21
t1@2: read [3, 19] last 19 shares W@-1 argument's
m@3: read [5] last 5 memory until 6
a@4: read [6] last 6 memory until 7
t2@5: read [6] last 6 shares m@3
a@6: read [7] last 7 shares a@4
a_1@7: read [8, 12] last 12
t3@8: read [9] last 9
t4@9: read [11] last 11
t5@10: read [11] last 11
views@11: read [] last 25 returned
da_1@12: read [13] last 13
da@13: read [14] last 14 memory until 16
dt2@14: read [16] last 16 shares da@13
dm@15: read [16] last 16 memory until 19
dm@16: read [17, 19] last 19 shares dm@15
t6@17: read [18] last 18 shares dm@15 memory until 19
dt1@18: read [20] last 20 memory until 25 returned
dz@19: read [21] last 21
dW@20: read [] last 25 shares dt1@18 returned
dy__part1@21: read [22] last 22
dy_@22: read [24] last 24
dx@23: read [24] last 24 memory until 25 returned
dx@24: read [] last 25 shares dx@23 returned
updates a@4: [6], dm@15: [16], dx@23: [24]"""
    out = {i: s.out for i, s in enumerate(tape.stmts)}
    assert facts.uses[out[7]] == 4 and facts.uses[out[1]] == 3      # a_1 * a_1: two uses
    assert facts.producer[out[20]] is tape.stmts[20]
    assert facts.view_root(out[20]) is out[18] and facts.view_root(out[17]) is out[15]
    assert facts.view_root(out[14]) is out[13] and facts.view_root(out[0]) is tape.inputs[0].var
    assert facts.same_memory(out[17], out[16]) and not facts.same_memory(out[16], out[18])
    assert sorted(facts.defined[m] for m in facts.members[out[15]]) == [15, 16, 17]
    # z's memory may be written from its last read on; an argument's or an output's never
    assert facts.free_after(out[1], 21) and not facts.free_after(out[1], 20)
    assert not facts.free_after(out[0], 24) and not facts.free_after(out[18], 24)
    a = facts.root(out[6])
    assert facts.written_between({a}, 4, 7) and not facts.written_between({a}, 6, 7)
    assert not facts.written_between({facts.root(out[1])}, -1, 25)


def test_an_inlined_value_is_read_where_its_reader_is():
    """``inlined``: codegen writes ``t5`` (``sum(y_)``) inside the expression of its reader at
    11, so ``y_`` is read there, and ``x``'s memory must keep its contents until then."""
    _, tape = gradient_tape(views, ARGS)
    y, t5 = tape.stmts[0].out, tape.stmts[10].out
    x = tape.inputs[0].var
    plain, inlined = Analysis(tape), Analysis(tape, inlined={t5})
    assert (plain.last[y], plain.last_memory[x]) == (10, 10)
    assert (inlined.last[y], inlined.last_memory[x]) == (11, 11)
    assert inlined.readers == plain.readers and inlined.last[t5] == plain.last[t5] == 11


def test_per_statement_memory_facts():
    """A basic index is a view of its operand (one element too: cupy gives a 0-d array that
    sees later writes); an index array makes a copy; a broadcast is read-only; an in-place
    update's result is its first operand's memory."""
    def indexing(x, i):
        return np.sum(x[1:]) + x[2] + np.sum(x[np.array([0, 2], dtype=np.int64)]) + np.sum(x[i]) + \
            np.sum(np.broadcast_to(x[0], (3,)))
    forward, _ = trace_function(indexing, (np.ones(4), np.array([1, 3])), RULES)
    assert format_tape(forward, locations=False).split("\n")[1:11] == [
        "  t1:f64[3] = getitem[key=1:] x",
        "  t2:f64[] = sum t1",
        "  t3:f64[] = getitem[key=2] x",
        "  t4:f64[] = add t2 t3",
        "  t5:f64[2] = getitem[key=array([0, 2], int64)] x",
        "  t6:f64[] = sum t5",
        "  t7:f64[] = add t4 t6",
        "  t8:f64[2] = getitem[key=i] x",
        "  t9:f64[] = sum t8",
        "  t10:f64[] = add t7 t9"]
    stmts, x = forward.stmts, forward.inputs[0].var
    assert [index_copies(stmts[k]) for k in (0, 2, 4, 7)] == [False, False, True, True]
    assert memory_bases(stmts[0]) == memory_bases(stmts[2]) == (x,)
    assert memory_bases(stmts[4]) == memory_bases(stmts[1]) == ()
    broadcast = next(s for s in stmts if s.prim.fn is np.broadcast_to)
    assert read_only(broadcast) and not read_only(stmts[0]) and not read_only(stmts[4])
    assert basic_parts(stmts[0].args[1]) == (slice(1, None),) and \
        basic_parts(stmts[4].args[1]) is None
    _, tape = gradient_tape(views, ARGS)
    update = tape.stmts[6]
    assert update.prim.inplace and memory_bases(update) == (tape.stmts[4].out,)
    assert all(s.prim.fn is not operator.getitem or not index_copies(s) for s in tape.stmts)
