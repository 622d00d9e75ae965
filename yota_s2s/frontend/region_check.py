"""Is a trial's step the same program at every step? The checks after the step ran once.

``check_step`` reads what the trial's one step did (its statements, the names it left, the
lists it appended to, the arrays it wrote into) and says one of four things: the region's
carried outputs (it can be a region), a reason to unroll (a str, which the loop's note
shows), the avals some carried values must start from (a dict: ``s = 0.0`` then
``s += np.sum(x)`` makes ``s`` float64 from the first step), or the lists whose ``hs[-1]``
to carry (a ``CarryLast``). Each of its steps below returns a reason where it finds one.
"""
from __future__ import annotations

from typing import Any

import gast
import numpy as np

from ..ir.analysis import Analysis
from ..ir.tape import Input, Tape, Var
from .region_dicts import keyed_row
from .region_lists import (READS_LAST, CarryLast, KeyedLast, LastRow, Watch, changed, items_of,
                           misread)
from .region_syntax import loaded_outside

_MISSING = object()


def check_step(ev: Any, node: gast.For, names: list[str], carried: dict, saved: tuple,
               watch: Watch, body: list) -> Any:
    """``(outs, updated, appended)`` when the step is a region: the carried values after
    the step, the carried names written into in place, the rows appended to lists; else a
    reason (str), the avals to start from (dict) or the lists whose ``hs[-1]`` to carry."""
    if any(s.prim.effect for s in body):
        return "the body checks a traced value (a guard) or prints"
    made = {v for s in body for v in s.outs}
    inputs = {v for v, _ in carried.values()}
    appended = appended_rows(ev, watch, made, inputs)
    if not isinstance(appended, list):
        return appended
    for old, new in ev.latest.items():
        if saved.latest.get(old) is not new and old not in inputs and old not in made:
            return "an array from before the loop is updated through another name"
    outs, wider = [], {}
    reason = carried_names_after(ev, node, names, carried, saved.names, made, outs, wider) or \
        carried_rows_after(ev, carried, appended, outs, wider)
    if reason:
        return reason
    if wider:
        return wider
    if not outs and not appended:
        return "the loop carries no traced value"
    updated = {name for name, (var, _) in carried.items() if var in ev.latest}
    return memory_reason(ev, body, inputs, made, outs, appended, updated) or \
        (outs, updated, appended)


def appended_rows(ev: Any, watch: Watch, made: set, inputs: set) -> Any:
    """The rows the step appended to lists from before it (``[(list, row)]``, one row each); a
    reason where it changed a list or dict otherwise; a ``CarryLast`` where it read ``hs[-1]``
    before the append."""
    appended = []               # hs.append(h): one value per step, stacked
    carry = CarryLast()
    for obj, items in watch.containers.values():
        row = keyed_row(ev, watch, obj, items, made, inputs) if id(obj) in watch.keyed else None
        if isinstance(row, KeyedLast):          # hs[t - 1], the item the step before set
            if not traceable(ev.current(obj[row.key])):
                return "the step reads hs[t - 1] of a dict of static values it sets"
            carry[id(obj)] = row
            continue
        if isinstance(row, str):
            return row
        if row is not None:                     # hs[t] = h: one item per step
            appended.append((obj, row))
            continue
        now = items_of(obj)
        if isinstance(obj, list) and len(now) == len(items) + 1 and \
                all(a is b for a, b in zip(now, items)) and isinstance(now[-1], Var) and \
                (now[-1] in made or now[-1] in inputs):
            reads = misread(watch.reads.get(id(obj), ()), len(items), id(obj) in watch.last)
            if reads is READS_LAST and traceable(ev.current(items[-1])):
                carry[id(obj)] = obj
            elif reads:
                return reads if reads is not READS_LAST else \
                    "the step reads hs[-1] of a list of static values it appends to"
            appended.append((obj, now[-1]))
            continue
        if changed(now, items):
            return "the loop changes a Python list or dict"
    if any(key not in watch.keyed for key in watch.keyed_reads):
        return "the step reads an item of a dict by the step index, which it does not set: " \
            "another item at each step"
    return carry or appended


def carried_names_after(ev: Any, node: gast.For, names: list[str], carried: dict,
                        before: dict, made: set, outs: list, wider: dict) -> str | None:
    """Each name the body assigns, after the step: a carried one's new value goes to ``outs``
    (or its wider aval to ``wider``), a static one must be unchanged, a new one not read after
    the loop. A reason where one is not so."""
    frame = ev.frame
    for name in names:
        pre, now = before.get(name, _MISSING), frame.locals.get(name, _MISSING)
        if name in carried:
            var = carried[name][0]
            now = ev.current(now) if now is not _MISSING else now
            if now is var:
                continue
            if not isinstance(now, Var):
                return f"`{name}` becomes a static value in the loop"
            if now not in made:
                return f"`{name}` is not computed in the loop"
            if now.aval != var.aval:
                if widens(var.aval, now.aval):
                    wider[name] = now.aval
                    continue
                return f"`{name}` changes from {var.aval} to {now.aval} in the loop"
            outs.append((name, now))
        elif pre is _MISSING:
            if isinstance(now, Var) and name in loaded_outside(frame, node):
                return f"`{name}` is first bound in the loop and read after it"
        elif type(pre) is int and isinstance(now, Var) and now in made and \
                now.aval.ndim == 0 and now.aval.dtype.kind in "fc":
            wider[name] = now.aval      # loss = 0, then loss += a float: a float from 0
        elif not _same_static(pre, now):
            return f"`{name}` is a static value that changes in the loop"
    return None


def carried_rows_after(ev: Any, carried: dict, appended: list, outs: list,
                       wider: dict) -> str | None:
    """Each carried ``hs[-1]`` after the step: the row it appended, to ``outs`` (or its wider
    aval to ``wider``). A reason where the step did not append or wrote into the row."""
    rows = {id(obj): v for obj, v in appended}
    for key, (var, _) in carried.items():
        if not isinstance(key, LastRow):
            continue
        now = rows.get(id(key.rows))
        if now is None:
            return f"the step reads {key} but does not append to the list"
        if var in ev.latest:
            return f"the step writes into {key}, the row the step before appended"
        if now.aval != var.aval:
            if widens(var.aval, now.aval):
                wider[key] = now.aval
                continue
            return f"{key} changes from {var.aval} to {now.aval} in the loop"
        outs.append((key, now))
    return None


def memory_reason(ev: Any, body: list, inputs: set, made: set, outs: list, appended: list,
                  updated: set) -> str | None:
    """Why the step's outputs do not own their memory as a region's must (None: they do): each
    carried value and each appended row an array of its own, made in the step."""
    facts = Analysis(Tape("step", (), [Input(v, 0) for v in inputs], body,
                          result=tuple(v for _, v in outs)), frozenset())
    roots, rows = [facts.view_root(v) for _, v in outs], [v for _, v in appended]
    if any(root not in made for root in roots):
        return "a carried value is a view of a value from before the step"
    if len(set(roots)) < len(roots) or len(set(rows)) < len(rows):
        return "two names (or two lists) hold one array after a step"
    for _, v in appended:       # a row must be an array of its own, as the stack's is
        if v in inputs:
            return "a list gets the array a step starts from (hs.append(h) before h changes)"
        if facts.view_root(v) is not v:
            return "a list gets a view, whose memory a later value shares"
        if v in ev.latest or any(out is v and name in updated for name, out in outs):
            return "a list gets an array that is then changed in place"
    return None


def traceable(value: Any) -> bool:
    """Can a name holding ``value`` be carried: a Var, a float or complex number or array?"""
    if isinstance(value, Var):
        return True
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc"


def widens(before, after) -> bool:
    """A carried value the first step makes wider (a float32 start made float64): the same
    shape, a dtype numpy casts to without losing its kind."""
    return after.shape == before.shape and np.can_cast(before.dtype, after.dtype, "same_kind")


def error_reason(e: Exception) -> str:
    """A step's error as a reason to unroll: its first line."""
    what = getattr(e, "what", None) or str(e) or type(e).__name__
    return what.splitlines()[0][:120]


def _same_static(a: Any, b: Any) -> bool:
    """Is a static value unchanged by the step (equal, of the same type; an array never)?"""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (Var, np.ndarray)):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False
