"""Effects: the checks the frontend records where control flow depends on a traced value,
``print`` calls, and fields assigned on argument objects (``store``).

``guard(cond, expected=True, where="model.py:7: if x.sum() > 0:")`` has no derivative; it is an
effect that dead-code elimination keeps. The generated code raises ``GuardError`` when a call
would take the other path.
"""
from __future__ import annotations

from ..errors import GuardError
from .registry import batchrule, nodiff, primitive


def guard(cond, expected=True, where=""):
    if bool(cond) != expected:
        raise GuardError(f"{where} was {expected} when compiled and is {not expected} now")


primitive(guard, "cond, expected=True, where=''", name="guard", emit=("guard",), nout=0,
          effect=True)


def show(*values, sep=" ", end="\n", flush=False):
    """A ``print(...)`` in a compiled function: nothing while tracing; the generated code
    calls ``print`` itself, on the values of that call (jax.debug.print's behaviour)."""


primitive(show, "*values, sep=' ', end='\\n', flush=False", name="print", emit=("call", "print"),
          nout=0, effect=True)
nodiff(show)


def store(value, target="", name="", kind="attr"):
    """``layer.layer_input = X`` where ``layer`` is an argument (``target``, its access), or
    ``cache.append(v)``, ``params["W2"] = W2`` on an argument's list or dict (``kind``
    "append", "item", ``name`` the key; "extend": the rows of a loop region's stack): nothing while tracing; the generated code does it to
    the caller's object at the end of its forward section, with the value's last version, as
    calling the function leaves it (frontend/evaluator.py ``emit_stores``)."""


primitive(store, "value, target='', name='', kind='attr'", name="store", emit=("store",), nout=0,
          effect=True)
nodiff(store)


import numpy as np  # noqa: E402


@batchrule(guard)
def guard_batched(cond, expected=True, where=""):
    """Every example takes the branch the compiled code was traced for: each condition holds
    (or none does) in the whole batch."""
    return guard(np.all(cond) if expected else np.any(cond), expected, where)
