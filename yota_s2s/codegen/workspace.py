"""The module-level pieces of planned memory (buffers.py): the work-array table, the per-thread
accessor, and the helpers that put returned gradients into the caller's ``out=`` arrays.

    WORK_ARRAYS = [          # shape, dtype: the values that live in it
        ((256, 512), "float64", "h, dh"),
    ]

Each thread gets its own work arrays on its first call (``threading.local``), so concurrent
calls never share one; what a call returns is never a work array. A function that calls code
outside numpy (a user's function: a ``nodiff`` logger or monitor, a rule's helper) or reads the
user's objects may be called again, in the same thread, before it returns: it takes its arrays
for the call and gives them back as it returns (``_local.arrays = _arrays``), and a call made
while they are taken makes its own (``reentrant``). One that calls only numpy cannot be entered
again, and reuses its arrays without taking them.
"""
from __future__ import annotations

import numpy as np

from ..ir.region import inner_tapes, loop_of
from ..ir.tape import Tape
from ..text import literal_text
from .lines import WIDTH
from .outside import arrays_read, has_reads
from .plan import ZeroList
from .scalars import MAX_SIZE

_WORK = '''
_local = threading.local()


def _work_arrays():
    """This thread's work arrays: made on its first call, reused by every later one."""
    arrays = getattr(_local, "arrays", None)
    if arrays is None:
        arrays = _local.arrays = tuple(xp.empty(shape, dtype) for shape, dtype, _ in WORK_ARRAYS)
    return arrays
'''

# the same, for a function that may be entered again while it runs (``reentrant``)
_WORK_TAKEN = '''
_local = threading.local()


def _work_arrays():
    """This thread's work arrays, taken by a call until it gives them back as it returns
    (``_local.arrays = _arrays``): made on the thread's first call, reused by every later one.
    A call made while they are taken (the function called again by a function it calls: a
    logger, a monitor) makes arrays of its own, so it never writes over the outer call's."""
    arrays = getattr(_local, "arrays", None)
    if arrays is None:
        return tuple(xp.empty(shape, dtype) for shape, dtype, _ in WORK_ARRAYS)
    _local.arrays = None
    return arrays
'''

# the error of a while loop past ``max_steps`` (codegen/whiles.py)
_STEP_LIMIT = '''
class StepLimitError(RuntimeError):
    """A while loop ran more trips than the max_steps this gradient was compiled with."""
'''

# the same, then the lists of rows of loop stacks (stack_rows.py), with either
_ROWS = ("arrays = _local.arrays = tuple(xp.empty(shape, dtype) for shape, dtype, _ in "
         "WORK_ARRAYS)",
         """arrays = tuple(xp.empty(shape, dtype) for shape, dtype, _ in WORK_ARRAYS)
        arrays = _local.arrays = arrays + tuple(list(arrays[k]) for k in ROW_LISTS)""")
_ROWS_TAKEN = ("""return tuple(xp.empty(shape, dtype) for shape, dtype, _ in WORK_ARRAYS)""",
               """arrays = tuple(xp.empty(shape, dtype) for shape, dtype, _ in WORK_ARRAYS)
        return arrays + tuple(list(arrays[k]) for k in ROW_LISTS)""")
_ROWS_DOC = ("first call, reused by every later one.",
             "first call, reused by every later one;\n    then, for each work array ROW_LISTS "
             "names, the list of its rows (views, made once).")

# a while loop's stacks (codegen/whiles.py), held per thread as the work arrays are
_STACKS = '''

def _stacks():
    """This thread's while-loop stacks: made on its first call with the rows of STACKS (a stack
    of arrays as a list of its rows); a loop that finds one full doubles it, and it is kept so
    for the calls after."""
    stacks = getattr(_local, "stacks", None)
    if stacks is None:
        stacks = _local.stacks = [list(xp.empty(shape, dtype)) if len(shape) > 1 else
                                  xp.empty(shape, dtype) for shape, dtype, _ in STACKS]
    return stacks
'''

_STACKS_TAKEN = '''

def _stacks():
    """This thread's while-loop stacks, taken by a call until it gives them back as it returns
    (``_local.stacks = _held_stacks``): made with the rows of STACKS, doubled by a loop that
    finds one full and kept so (a stack of arrays as a list of its rows). A call made while
    they are taken makes stacks of its own."""
    stacks = getattr(_local, "stacks", None)
    if stacks is None:
        return [list(xp.empty(shape, dtype)) if len(shape) > 1 else xp.empty(shape, dtype)
                for shape, dtype, _ in STACKS]
    _local.stacks = None
    return stacks
'''

_MADE = ("""[list(xp.empty(shape, dtype)) if len(shape) > 1 else
                                  xp.empty(shape, dtype) for shape, dtype, _ in STACKS]""",
         """[list(xp.empty(shape, dtype)) if len(shape) > 1 else xp.empty(shape, dtype)
                for shape, dtype, _ in STACKS]""")     # _stacks()' making of the stacks

_NUMBER_ROWS = '''
NUMBER_ROWS = {{{}}}    # the stacks of float64 numbers held as lists of 0-d rows


def _number_rows(count):
    """A stack of float64 numbers as a list of ``count`` 0-d rows (views of one new array): a
    trip fills its row with its number, and the ufuncs that read the number read the row."""
    rows = xp.empty(count)
    return [rows[i, ...] for i in range(count)]


def _stack(k, shape, dtype):
    """Stack ``k`` of STACKS, made: a list of 0-d rows (NUMBER_ROWS), a list of its rows (a
    stack of arrays), or an array."""
    if k in NUMBER_ROWS:
        return _number_rows(shape[0])
    return list(xp.empty(shape, dtype)) if len(shape) > 1 else xp.empty(shape, dtype)
'''

_OUT = '''
def _out_entry(out, key):
    argnum, path = key if isinstance(key, tuple) else (key, ())
    entry = out[argnum]
    if not path or entry is None:
        return entry
    if not hasattr(entry, "get"):
        raise TypeError(f"out[{argnum}] must be None or a dict {{path: array}}, as the gradient "
                        f"returned for that argument, not {entry.__class__.__name__}")
    return entry.get(path)


def _check_out(func, out, count, arrays, entries, unused, reads=()):
    """The caller's out=: one entry per argument (``count``), each None or a writeable numpy
    array of the gradient's shape and dtype (``entries``) sharing no memory with an argument
    (``arrays``), an array the function reads from outside (``reads``: a global, a closure's)
    or another entry; None for the arguments that get no gradient array."""
    if (out.__class__ is not tuple and out.__class__ is not list
            and not isinstance(out, (list, tuple))) or len(out) != count:
        size = f" of {len(out)}" if isinstance(out, (list, tuple)) else ""
        raise TypeError(f"{func}: out must be a list with one entry per argument ({count}), "
                        f"each an array or None; got {out.__class__.__name__}{size}")
    given = []
    for key, shape, dtype in entries:
        array = out[key] if key.__class__ is int else _out_entry(out, key)
        if array is None:
            continue
        if array.__class__ is not xp.ndarray or array.shape != shape or array.dtype != dtype:
            got = f"{array.dtype}{list(array.shape)}" if hasattr(array, "shape") else ""
            raise TypeError(f"{func}: out[{key!r}] must be {xp.dtype(dtype).name}{list(shape)} "
                            f"(a numpy array, or None), got {array.__class__.__name__} {got}")
        if not array.flags.writeable:
            raise ValueError(f"{func}: out[{key!r}] is read-only; pass a writeable array or None")
        owns = array.base is None         # two arrays that own their memory do not overlap
        for other in arrays:
            if other is array or ((not owns or other.base is not None)
                                  and _overlap(array, other)):
                raise _shared(func, key, "an argument")
        for name, other in reads:
            if other.__class__ is xp.ndarray and _overlap(array, other):
                raise _shared(func, key, f"{name}, which the function reads")
        for other in given:
            if other is array or ((not owns or other.base is not None)
                                  and _overlap(array, other)):
                raise _shared(func, key, "another out= entry")
        given.append(array)
    for argnum in unused:
        if out[argnum] is not None:
            raise TypeError(f"{func}: out[{argnum}] must be None: no gradient array is "
                            "returned for that argument")


def _overlap(a, b):
    return xp.may_share_memory(a, b) and xp.shares_memory(a, b)


def _shared(func, key, what):
    return ValueError(f"{func}: out[{key!r}] shares memory with {what}; gradients must go into "
                      "arrays of their own (or None)")


def _result(out, key, shape, dtype=xp.float64, order="C"):
    """The array a returned gradient goes into: the caller's (out=, checked) or a new one."""
    array = None if out is None else _out_entry(out, key)
    return xp.empty(shape, dtype, order=order) if array is None else array
'''

_DELIVER = '''
def _deliver(out, key, value):
    """``value``, or a copy of it in the caller's array when one was given (out=, checked).
    A list (a vector of Python floats, scalar mode) becomes a new array when none was given."""
    array = None if out is None else out[key] if key.__class__ is int else _out_entry(out, key)
    if array is None:
        return xp.asarray(value) if value.__class__ is list else value
    array[...] = value                  # same shape and dtype (checked): a plain copy
    return array
'''


def _work_row(shape: tuple, dtype: np.dtype, held: list[str], slot: str) -> str:
    """A row of WORK_ARRAYS, its values' names cut (``...``) to fit in the line."""
    for n in range(len(held), 0, -1):
        names = ", ".join(held[:n]) + (", ..." if n < len(held) else "")
        row = f"    {literal_text((shape, dtype.name, names))},    # {slot}"
        if len(row) <= WIDTH:
            break
    return row


def out_entries(emitter, tape: Tape) -> list[tuple]:
    """(key, shape, dtype) of each gradient the caller's out= may hold."""
    memory, entries = emitter.memory, []
    keys = {g.result: g.members[-1] for g in memory.group.values() if g.kind == "result"}
    keys.update({key: v for v, key in memory.delivered.items()})
    for (argnum, path), v in sorted(keys.items(), key=lambda kv: (kv[0][0], repr(kv[0][1]))):
        entries.append((argnum if not path else (argnum, path), v.aval.shape, v.aval.dtype.name))
    return entries


def out_check_lines(emitter, tape: Tape, fname: str) -> list[str]:
    """``if out is not None: _check_out(...)``: every out= entry checked once, up front.
    Where every entry is an argument's (no struct paths), one or two, and the arguments are a
    few numbers, the common out= (a list or tuple of arrays made for it: ``np.empty_like``) is
    told apart first by a few tests written inline, and only anything else is checked in full
    (``_check_out`` costs more than the polynomial's arithmetic)."""
    if not takes_out(emitter):
        return []
    arrays = [emitter.names[i.var] for i in tape.inputs if not i.var.aval.weak]
    entries = out_entries(emitter, tape)
    given = {key if isinstance(key, int) else key[0] for key, _, _ in entries}
    unused = tuple(argnum for argnum in range(len(tape.params)) if argnum not in given)
    texts = [f"({key!r}, {shape!r}, {emitter.dtype_constant(np.dtype(dtype))})"
             for key, shape, dtype in entries]
    # the arrays it reads from outside (model.W), read here too: the caller's arrays must not
    # be one of them (or a view of one), written before the function reads it
    reads = [f"({literal_text(shown)}, {text})" for shown, text in arrays_read(emitter, tape)]
    head = f"_check_out({fname!r}, out, {len(tape.params)}, [{', '.join(arrays)}], "
    tail = f", reads=[{', '.join(reads)}])" if reads else ")"
    call = f"{head}[{', '.join(texts)}], {unused!r}{tail}"
    # inline tests only where the arguments are a few numbers (scalar mode's size) with one or
    # two gradients, and nothing is read from outside: a larger function's own work dwarfs
    # _check_out's half microsecond, and the tests grow with the number of entries times the
    # number of arguments (five lines an entry)
    small = sum(i.var.aval.size for i in tape.inputs) <= MAX_SIZE and len(entries) <= 2 \
        and not reads
    indent = "    " if small and entries and all(isinstance(key, int) for key, _, _ in entries) \
        else ""
    if len(call) + 8 + len(indent) <= 99:
        check = [f"    {indent}{call}"]
    else:
        check = [f"    {indent}{head}["] + [f"    {indent}    {t}," for t in texts] + \
            ([f"    {indent}], {unused!r})"] if not reads else
             [f"    {indent}], {unused!r}, reads=["] +
             [f"    {indent}    {r}," for r in reads] + [f"    {indent}])"])
    if not indent:
        return ["if out is not None:"] + check
    return ["if out is not None:"] + _common_out(emitter, tape, arrays, entries, unused) + check


def _common_out(emitter, tape: Tape, arrays: list[str], entries: list[tuple],
                unused: tuple) -> list[str]:
    """``if (out is not a list or tuple of the right length, or an argument is a view, or an
    entry is not a writeable array of its own (``base is None``) of the right shape and dtype
    (the dtype made once: ``is``), or an entry is an argument or another entry):``. An array
    that owns its memory shares none with another that does, so these entries need no overlap
    test: ``_check_out`` tells the rest apart, with its errors."""
    groups = [[f"(out.__class__ is not list and out.__class__ is not tuple) "
               f"or len(out) != {len(tape.params)}"] + [f"{name}.base is not None"
                                                       for name in arrays]]
    bound = {}
    for key, shape, dtype in entries:   # a line each (written out: ~40 ns less than a call)
        entry = bound[key] = emitter.outer_name(f"out{key}")     # read once, by its first test
        groups.append([f"({entry} := out[{key}]).__class__ is not xp.ndarray",
                       f"{entry}.base is not None",
                       f"{entry}.shape != {shape!r}",
                       f"{entry}.dtype is not {emitter.dtype_constant(np.dtype(dtype))}",
                       f"not {entry}.flags.writeable"])
    # an entry that is an argument or another entry: of the same shape and dtype
    avals = [i.var.aval for i in tape.inputs if not i.var.aval.weak]
    groups.append([f"{bound[key]} is {name}" for key, shape, dtype in entries
                   for name, a in zip(arrays, avals) if (a.shape, a.dtype.name) == (shape, dtype)]
                  + [f"{bound[a]} is {bound[b]}" for i, (a, *kind) in enumerate(entries)
                     for b, *other in entries[i + 1:] if kind == other]
                  + [f"out[{argnum}] is not None" for argnum in unused])
    lines: list[str] = []
    for tests in filter(None, groups):
        line = "            or " + tests[0] if lines else "    if (" + tests[0]
        for test in tests[1:]:
            if len(line) + len(test) + 4 > 95:       # (in the function: 4 columns more)
                lines.append(line)
                line = "            or " + test
            else:
                line += " or " + test
        lines.append(line)
    return lines[:-1] + [lines[-1] + "):"]


def takes_out(emitter) -> bool:
    memory = emitter.memory
    return bool(memory.delivered) or any(g.kind == "result" for g in memory.group.values())


def prelude(emitter) -> str:
    """Module-level definitions the function body relies on ("" when there are none)."""
    memory, parts = emitter.memory, []
    if emitter.step_limit:
        parts.append(_STEP_LIMIT)
    if emitter.dtypes:
        made = [f"{name} = " + (literal_text(dtype) if scalar
                                else f"xp.dtype({literal_text(dtype)})")
                for (dtype, scalar), name in sorted(emitter.dtypes.items(), key=lambda kv: kv[1])]
        parts.append("\n# The dtypes the argument checks compare with (and the numpy type of a "
                     "returned float), made once.\n" + "\n".join(made) + "\n")
    if emitter.ones:
        parts.append("\n# Row and column sums of matrices are products with these (see header); "
                     "never written.\n" + "\n".join(
                         f"{name} = xp.ones({n})" if dtype == "float64" else
                         f"{name} = xp.ones({n}, xp.{dtype})"
                         for (n, dtype), name in sorted(emitter.ones.items())) + "\n")
    if emitter.numbers:
        parts.append("\n# Numbers that ufuncs read, as 0-d arrays of their dtype made once (numpy makes a "
                     "0-d array of a\n# Python number on every call); never written.\n" + "\n".join(
                         f"{name} = xp.array({literal_text(float(value))})" if dtype == "float64"
                         else f"{name} = xp.array({literal_text(float(value))}, xp.{dtype})"
                         for (value, dtype), name in emitter.numbers.items()) + "\n")
    if len(memory.slots) > len(memory.lent):
        rows = []
        for k, ((shape, dtype, values), name) in enumerate(zip(memory.slots, emitter.slot_names)):
            if k in memory.lent:
                continue
            held = list(dict.fromkeys(v if isinstance(v, str) else emitter.names[v]
                                      for v in values))    # str: a name
            rows.append(_work_row(shape, dtype, held, name))
        parts.append("\nWORK_ARRAYS = [    # shape, dtype, the values that live in it\n"
                     + "\n".join(rows) + "\n]\n" + _row_lists(emitter))
    if emitter.while_stacks:
        parts.append(_stacks_prelude(emitter, len(memory.slots) > len(memory.lent)))
    if takes_out(emitter):
        parts.append(_OUT)
    if memory.delivered:
        parts.append(_DELIVER)
    return "\n".join(parts)


def _row_lists(emitter) -> str:
    """``_work_arrays()``, and ROW_LISTS before it where loop stacks' rows are held as lists
    (stack_rows.py): the work arrays whose rows ``_work_arrays()`` adds as lists."""
    text = _WORK_TAKEN if reentrant(emitter) else _WORK
    lists = getattr(emitter, "row_lists", [])
    if not lists:
        return text
    for old, new in (_ROWS_TAKEN if reentrant(emitter) else _ROWS, _ROWS_DOC):
        text = text.replace(old, new, 1)
    rows = "\n".join(f"    {k},    # {name}" for k, name in lists)
    return ("\nROW_LISTS = [    # work arrays (their places in WORK_ARRAYS) whose rows are held as "
            "lists\n" + rows + "\n]\n" + text)


def _stacks_prelude(emitter, local: bool) -> str:
    """STACKS and ``_stacks()``: the while loops' stacks, held per thread (``local``: the
    work arrays' ``_local`` is defined already); the stacks of 0-d rows (NUMBER_ROWS,
    codegen/while_numbers.py) made by ``_number_rows``."""
    numbered = sorted(emitter.row_stacks.values())
    rows = "\n".join(_work_row(shape, dtype, [name], f"_held_stacks[{k}]"
                               + (", 0-d rows" if k in numbered else ""))
                     for k, (shape, dtype, name) in enumerate(emitter.while_stacks))
    head = "" if local else "\n_local = threading.local()\n"
    text = _STACKS_TAKEN if reentrant(emitter) else _STACKS
    if numbered:    # each stack made by _stack(), which knows the stacks of 0-d rows
        for made in _MADE:
            indent = made.split("\n")[1]
            indent = indent[:len(indent) - len(indent.lstrip())]
            text = text.replace(made, "[_stack(k, shape, dtype) for k, (shape, dtype, _)\n"
                                + indent + "in enumerate(STACKS)]")
        text = _NUMBER_ROWS.format(", ".join(map(str, numbered))) + text
    return (head + "\nSTACKS = [    # rows at first, dtype, the stack (a loop doubles it as it "
            "needs)\n" + rows + "\n]\n" + text)


def unpack_line(emitter) -> list[str]:
    """``buf1, buf2 = _work_arrays()``: the work arrays held (those that live in a returned
    array are views of it, made where they are first written: out_forms.py). A ``reentrant``
    function keeps the tuple (``_arrays``) to give it back: ``give_back_line``."""
    held = _held(emitter) + [name for _, name in getattr(emitter, "row_lists", [])]
    stacks = ["_held_stacks = _stacks()"] if emitter.while_stacks else []
    if not held:
        return stacks
    names = f"{', '.join(held)}{',' if len(held) == 1 else ''}"
    return ([f"{names} = _arrays = _work_arrays()"] if reentrant(emitter) else
            [f"{names} = _work_arrays()"]) + stacks


def give_back_line(emitter) -> list[str]:
    """``_local.arrays = _arrays``, before the ``return`` of a ``reentrant`` function that
    holds work arrays: the next call (this thread's) takes them again. (A call that raises
    keeps them: the next one makes new arrays.)"""
    if not reentrant(emitter):
        return []
    return (["_local.arrays = _arrays    # given back for the next call"] if _held(emitter)
            else []) + (["_local.stacks = _held_stacks"] if emitter.while_stacks else [])


def _held(emitter) -> list[str]:
    return [name for k, name in enumerate(emitter.slot_names) if k not in emitter.memory.lent]


def reentrant(emitter) -> bool:
    """May the function be called again, in this thread, before it returns? Where it calls a
    function from outside numpy (imported: a user's, or a library's), or reads the user's
    objects at run time (an attribute may be a property): code that may call it."""
    tapes = [emitter.tape, *inner_tapes(emitter.tape)]
    return bool(emitter.calls) or any(has_reads(t) for t in tapes)


def header_lines(emitter, tape: Tape) -> list[str]:
    memory, lines = emitter.memory, []
    if emitter.fast:
        lines += ["The buffered form, written for speed, not for review: a name may hold several "
                  "values in turn, and intermediates are written into work arrays and the "
                  "returned ones. Call after call it returns what the plain form returns, which "
                  "is the form to review (yota-s2s compile writes it; ys.simplegrad(f, "
                  "..., buffers=False); the review page): tests/test_fuzz.py checks the two forms "
                  "against each other and finite differences on random programs.", ""]
    if emitter.ones:
        lines.append("Sums along an axis of a matrix are written as products with a vector of "
                     "ones (_ONES_n), which BLAS computes several times faster.")
    if emitter.numbers or emitter.number_slots:
        slots = [emitter.slot_names[k] for k in emitter.number_slots.values()]
        ways = (["the numbers ufuncs read are made once (_1_0 for 1.0)"] if emitter.numbers
                else []) + ([f"a number made at run time goes into {' or '.join(slots)}"
                             + (" (one per dtype)" if len(slots) > 1 else "")
                             + f" (.sum(out={slots[0]})[()], or {slots[0]}[()] = number "
                             "before a ufunc reads it)"] if slots else [])
        lines.append("Numbers go through 0-d arrays, where numpy would make a new one on each "
                     "call: " + "; ".join(ways) + ".")
    if len(memory.slots) > len(memory.lent):
        lines.append(f"Work arrays: {len(memory.slots) - len(memory.lent)} per thread, "
                     f"{_size(memory.bytes)} (WORK_ARRAYS), made on a thread's first call"
                     + ("; taken by a call until it returns, so that a call made meanwhile "
                        "(by a function this one calls) makes its own." if reentrant(emitter)
                        else "."))
    if getattr(emitter, "row_lists", None):
        lists = ", ".join(name for _, name in emitter.row_lists)
        first = emitter.row_lists[0][1]
        lines.append(f"Loop stacks' rows: {lists} (ROW_LISTS), the rows of a stack's work array "
                     "as a list of views, made with the work arrays; a step reads and writes a "
                     f"row through it ({first}[t], {first}[t][...] = value) instead of making "
                     "a new view of it each time.")
    conditions = [emitter.names[o] for region in emitter.plan.regions
                  for c, how in region.starts if isinstance(how, ZeroList) and how.fill is False
                  for c2, o in zip(loop_of(region.stmt).carried, region.stmt.outs) if c2 is c]
    if conditions:
        lines.append(f"Stacks of a loop's branch conditions ({', '.join(conditions)}): Python "
                     "lists of the bools stored ([False] * n), read back as they were stored.")
    if emitter.while_stacks:
        lines.append(f"While-loop stacks: {len(emitter.while_stacks)} per thread (STACKS), made on "
                     "a thread's first call; a loop that needs more rows doubles one, and the "
                     "thread keeps it so" + (f" (up to max_steps={emitter.max_steps} rows)"
                                             if emitter.max_steps is not None else "") + ".")
        rows = [name for k, (_, _, name) in enumerate(emitter.while_stacks)
                if k in emitter.row_stacks.values()]
        if rows:
            lines.append(f"{', '.join(rows)}: stacks of numbers as lists of 0-d rows "
                         "(NUMBER_ROWS): a trip writes its number into its row once, and the "
                         "ufuncs that read the number, the backward's too, read the row.")
    if memory.lent:
        lines.append(f"{len(memory.lent)} more in the memory of returned gradients, before "
                     "those are written.")
    heads = [emitter.names[g.members[-1]] for g in {id(g): g for g in memory.group.values()
                                                     if g.kind == "head"}.values()]
    if heads:
        lines.append(f"{', '.join(heads)}: in the first row of the gradient "
                     f"{'it is' if len(heads) == 1 else 'each is'} broadcast into, then copied "
                     "to the other rows.")
    if emitter.turned:
        pairs = ", ".join(f"{new} and {spare}" for new, spare in emitter.turned)
        lines.append("An array a loop makes anew each step is written into two work arrays in "
                     f"turn ({pairs}: a step writes the first while the second holds the step "
                     "before's, then they swap), not into a new array each step.")
    if takes_out(emitter):
        lines.append("Gradients come back in new arrays, or in the caller's: pass out= with one "
                     "array (or None) per argument to allocate nothing.")
    return lines


def _size(n: int) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"
