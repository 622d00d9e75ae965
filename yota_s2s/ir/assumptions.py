"""What a compiled function assumes about the world outside its arguments: one record.

Every value the trace read from outside the function's arguments, or that shaped the code
(a global, a closure cell, a default, a class or instance attribute, an item of a container,
two argument leaves that were one object, the rule set), is one ``Assumption``: what it is, the
kind of place it came from, *how* the compiled code stays right when it changes, and where the
source read it (file:line). ``how`` is one of

- ``READ``: read again by the generated code when it runs (an ``external`` statement: a global
  array, a float in a config dict), checked for type, shape and dtype;
- ``VALUE``: compiled in, and the generated code checks at each call that it still has the value
  compiled for (an ``external_check`` statement: an int in a list, a string field);
- ``IDENTITY``: compiled in, and a guard checks at each call that the name is still bound to
  the very object (a helper function, a class attribute, ``f.__defaults__``, a closure cell's
  number, tied weights ``m.dec_W is m.enc.W``, the class of a struct argument). ``ys.grad``
  compiles again when one fails; a ``simplegrad`` function raises ``GuardError`` naming it;
- ``VERSION``: the rule set's version (``ys.diffrule``/``ys.nodiff`` bump it);
- ``INDEX``: an int argument's role in an index, guarded by the normalized arithmetic of the
  index it feeds (numpy's negative and clipped bounds).

The frontend gathers the record from where the trace decides each (``frontend.assumptions``:
``OutsideReads`` for run-time reads and value checks, ``Depends`` for identity, the flattener for
classes, ties and shadowing, ``Evaluator.assumed`` for any other kind, such as an int's role).
A ``simplegrad`` function checks the identity entries at each call (``cache.world_guard``),
except library modules and library functions bound under their own name (``np``, ``exp`` of
``from numpy import exp``: ``depends.library_binding``), as the rule set's version is not
checked either: the code is written. A library function under another name (``ACT = np.tanh``)
is checked. The tape carries the record (``Tape.assumptions``); the printed tape and the generated
module's header list it; ``verify.check_assumptions`` refuses a record with an entry that has no
way to stay right, or a tape whose outside reads have no entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

READ = "read at run time"
VALUE = "guarded by value"
IDENTITY = "guarded by identity"
VERSION = "guarded by version"
INDEX = "guarded by index arithmetic"
HOWS = (READ, VALUE, IDENTITY, VERSION, INDEX)


@dataclass(frozen=True)
class Assumption:
    """One thing the compiled code relies on. ``what`` names it as the user would write it
    (``model.CFG['l2']``, ``Model.scale``, ``m.dec_W is m.enc.W``); ``kind`` is the place
    (``global``, ``closure cell``, ``default``, ``class attribute``, ``attribute``, ``item``,
    ``tie``, ``class``, ``rules``, ...); ``how`` one of ``HOWS``; ``loc`` where the source read
    it (None where no one line did: the rule set, an argument's class)."""

    what: str
    kind: str
    how: str
    loc: Any = None
    guard: Any = None       # what a guard tests (a frontend.depends.Dep, a pair of accesses...)
    code: bool = False      # a function, class or module the code was made from (not data)

    def line(self) -> str:
        where = f"  ({self.loc.short})" if self.loc is not None else ""
        return f"{self.what} ({self.kind}): {self.how}{where}"


def listed(record: tuple[Assumption, ...]) -> list[Assumption]:
    """The entries a header lists: those about data (the functions, classes and modules the code
    was made from, and the rule set, are guarded too but not listed), one per (what, how)."""
    seen, out = set(), []
    for entry in record:
        if entry.code:
            continue
        key = (entry.what, entry.how)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def lines(record: tuple[Assumption, ...]) -> list[str]:
    """The record as the module header and the printed tape show it (none: no lines)."""
    entries = listed(record)
    if not entries:
        return []
    return ["Assumes, outside its arguments (docs/outside.md):"] + \
        [f"  {entry.line()}" for entry in entries]
