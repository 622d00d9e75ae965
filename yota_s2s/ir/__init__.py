"""The IR: the tape (tape.py), its names (names.py), printer (printer.py) and verifier (verify.py)."""
from .tape import Atom, Aval, Input, Lit, Primitive, StaticInput, Stmt, Tape, Var

__all__ = ["Atom", "Aval", "Input", "Lit", "Primitive", "StaticInput", "Stmt", "Tape", "Var"]
