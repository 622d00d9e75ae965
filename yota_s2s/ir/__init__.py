"""The IR: the tape (tape.py), its names (names.py), printer (printer.py) and verifier (verify.py).

``play`` and ``printer`` are imported here because they give a Tape its ``play`` and ``str``
(``tape.METHODS``): the tape, the bottom of the IR, imports neither.
"""
from . import play, printer  # noqa: F401  (they fill in tape.METHODS)
from .tape import Atom, Aval, Input, Lit, Primitive, StaticInput, Stmt, Tape, Var

__all__ = ["Atom", "Aval", "Input", "Lit", "Primitive", "StaticInput", "Stmt", "Tape", "Var"]
