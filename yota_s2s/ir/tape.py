"""The tape: a straight-line SSA program of primitive calls.

Grammar (what every stage consumes and produces)::

    tape    ::= inputs stmt* result grads? tangent?
    stmt    ::= out+ '=' prim[params] arg*          # one primitive call
    arg     ::= Var | Lit | '(' arg* ')'            # a tree: sequences of operands, index keys
    Var     ::= a value with an abstract value (shape, dtype, weak) and a source-name hint
    Lit     ::= a static Python value (number, None, slice, Ellipsis, dtype, tuple of those)

Invariants (checked by ``ir.verify.check``): every Var is defined once, before its uses, either
as an input or as the output of exactly one statement; each Var's aval is what its primitive
produced on the example arguments. Statements are pure except those whose primitive has
``effect`` set (guards), which dead-code elimination keeps, and ``inplace`` primitives, whose
output reuses the storage of their first operand (that operand is not used afterwards).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import SourceLoc

_DTYPE_SHORT = {"float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64",
                "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
                "complex128": "c128", "complex64": "c64"}


@dataclass(frozen=True, slots=True)
class Aval:
    """Abstract value: what the compiler knows of a traced value."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak: bool = False   # a Python scalar (float, complex), not a numpy array or scalar
    # a scipy.sparse matrix or array read from outside (rules/sparse.py): its format ("csr")
    sparse: str = ""

    @classmethod
    def of(cls, value: Any) -> "Aval":
        if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            return cls((), np.result_type(type(value)), weak=True)
        if is_sparse(value):
            return cls(tuple(value.shape), value.dtype, sparse=value.format)
        arr = np.asarray(value)
        return cls(tuple(arr.shape), arr.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_float(self) -> bool:
        return self.dtype.kind in "fc"

    def __str__(self) -> str:
        if self.weak:
            return {"f": "float", "c": "complex", "i": "int", "b": "bool"}[self.dtype.kind]
        name = _DTYPE_SHORT.get(self.dtype.name, self.dtype.name)
        shape = f"{name}[{','.join(map(str, self.shape))}]"
        return f"{self.sparse} {shape}" if self.sparse else shape


def is_sparse(value: Any) -> bool:
    """A scipy.sparse matrix or array (without importing scipy: its classes say so)."""
    return type(value).__module__.startswith("scipy.sparse") and hasattr(value, "format") \
        and hasattr(value, "tocsr")


_ids = itertools.count()

# The rule text of the additions ad/sweep.py makes when a value's gradient has several parts.
ACCUMULATE = "accumulate: the gradients of a value used twice add up"


class Var:
    """A traced value. Identity is the variable: two Vars are never equal unless identical."""

    __slots__ = ("aval", "hint", "grad_of", "id")

    def __init__(self, aval: Aval, hint: str | None = None, grad_of: "Var | None" = None):
        self.aval = aval
        self.hint = hint          # the source name this value was bound to, if any
        self.grad_of = grad_of    # for adjoints: the primal value this is the gradient of
        self.id = next(_ids)      # creation order; used only to sort deterministically

    def __repr__(self) -> str:
        return f"Var({self.hint or '_'}#{self.id}:{self.aval})"


@dataclass(frozen=True, slots=True)
class Lit:
    """A static value used where an operand is expected (``x * 2.0``, ``b[:, None]``)."""

    value: Any

    def __hash__(self) -> int:
        return hash(_exact_key(self.value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lit) and _exact_key(self.value) == _exact_key(other.value)


def _exact_key(value: Any) -> tuple:
    """Equal only for the same value of the same type: an array by its bytes (its ``repr``
    shows 8 digits, so ``[2.0000000001]`` and ``[2.0]`` would be one constant), other values
    by ``repr``, exact for numbers (``-0.0`` and ``0.0`` differ, as they must)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, tuple):
        return (type(value),) + tuple(_exact_key(v) for v in value)
    return (type(value), repr(value))


Atom = Var | Lit
Tree = Any  # Atom | tuple[Tree, ...]


def tree_atoms(tree: Tree) -> Iterator[Atom]:
    if isinstance(tree, tuple):
        for t in tree:
            yield from tree_atoms(t)
    else:
        yield tree


def tree_vars(tree: Tree) -> Iterator[Var]:
    return (a for a in tree_atoms(tree) if isinstance(a, Var))


def tree_map(fn: Callable[[Atom], Tree], tree: Tree) -> Tree:
    if isinstance(tree, tuple):
        return tuple(tree_map(fn, t) for t in tree)
    return fn(tree)


@dataclass(frozen=True, eq=False)
class Primitive:
    """An operation the tape can hold: a numpy function, an operator, a rule-bearing user function.

    ``operands`` are the parameters given positionally (arrays, scalars, shapes); ``options`` are
    static keyword parameters with their defaults. ``emit`` tells codegen how to write a call:
    ``("call", "xp.tanh")``, ``("call", "logistic", "model")`` (a user function, imported from
    its module), ``("binop", "+")``, ``("unop", "-")``, ``("cmp", ">")``, ``("getitem",)``,
    ``("attr", "T")``, ``("method", "astype")``, ``("identity",)`` (the operand itself).
    ``optional`` gives the last operands defaults, for a call that leaves them out
    (``norm.logpdf(x)``: ``loc=0.0, scale=1.0``); they are still written by position.

    ``name`` is for people only (the tape printer, errors, ``ys.rules()``): a user may give any
    name, a built-in's too. Passes and codegen recognise a primitive by its function
    (``stmt.prim.fn is np.transpose``) or by the traits below, declared beside its rules
    (rules/*.py) and kept when the primitive is declared again.
    """

    name: str
    fn: Callable
    operands: tuple[str, ...]
    options: tuple[tuple[str, Any], ...] = ()
    emit: tuple = ()
    nout: int = 1
    optional: tuple[tuple[str, Any], ...] = ()   # trailing operands a call may leave out: defaults
    # -- traits --
    effect: bool = False     # kept without a use (guards)
    inplace: bool = False    # the result is the first operand's storage, updated
    view: bool = False       # the result may share memory with the first operand
    creates: bool = False    # makes a new array even from static operands (np.zeros)
    ufunc: Any = None        # elementwise: computed by this numpy ufunc (``np.add`` for ``+``)
    method: str | None = None    # written as this method of an array operand: ``x.sum(axis=0)``
    out_form: str | None = None  # how a non-ufunc writes into a given array (see TRAITS)
    elementwise: bool = False    # its rules are pointwise: the JVP is the VJP with dy := tangent
    linear: bool = False         # jointly linear in its float operands: the JVP is itself
    multilinear: bool = False    # linear in each float operand: the JVP is a sum of itself
    real_only: str | None = None  # why its derivative is refused for complex values
    array_first: bool = False    # the first operand must be an array (cupy takes no number)
    cheap: bool = False          # one pass over its operands: made again rather than saved
    commutative: bool = False    # two operands in either order: the same value, bit for bit
    written: tuple[str, ...] = ()    # options passed at their default too (see TRAITS)
    sequences: tuple[str, ...] = ()  # operands that are sequences of arrays (see TRAITS)
    sparse: bool = False         # takes a scipy.sparse matrix read from outside (see TRAITS)

    def __repr__(self) -> str:
        return f"<prim {self.name}>"

    def traits(self) -> dict[str, Any]:
        """The declared traits, as ``primitive(..., **traits)`` takes them."""
        return {t: getattr(self, t) for t in TRAITS}

    def defaults(self) -> dict[str, Any]:
        return dict(self.options)

    def apply(self, operands: list, params: dict) -> tuple:
        """Call the primitive on concrete operand values; returns its ``nout`` results."""
        if self.operands and self.operands[-1].startswith("*"):
            operands = [*operands[:-1], *operands[-1]]     # a ``*operands`` tuple spread out
        result = self.fn(*operands, **params)
        return (result,) if self.nout == 1 else tuple(result) if self.nout else ()


# What each trait says, for readers of the rule files (and for ``Primitive.traits``).
TRAITS = {
    "effect": "kept without a use: dead-code elimination never drops it (guards)",
    "inplace": "updates its first operand's storage and returns it (index_add, setitem_)",
    "view": "the result may share memory with the first operand (reshape, x.T, x[1:])",
    "creates": "makes a new array even from static operands, at run time (np.zeros)",
    "ufunc": "elementwise: the numpy ufunc that computes it, broadcasting, with an out= form "
             "(np.exp itself; np.add for +)",
    "method": "written as this ndarray method when its first operand is an array (x.sum())",
    "out_form": "how codegen directs the result into a given array, for a primitive that is "
                "not a ufunc: 'matmul' (matmul(a, b, out=)), 'dot' (np.dot: matmul(a, b, "
                "out=) for operands up to 2-D), 'reduce' (x.sum(axis, out=)), "
                "'copy' (copyto), 'fill' (.fill(c)), 'empty' (the array as it is), 'fill_like', "
                "'empty_like' (so, the first operand giving the shape and dtype alone), 'join' "
                "(concatenate(.., out=)), 'where' (copyto(out, x2); copyto(out, x1, "
                "where=condition))",
    "elementwise": "each result element depends on the operand elements at its (broadcast) "
                   "position only, so a VJP rule is dy times a pointwise derivative and the JVP "
                   "is that rule with dy := the operand's tangent (every ufunc; scipy.stats)",
    "linear": "jointly linear in its float operands (x.T, reshape, sum, concatenate): the JVP "
              "is the primitive applied to the tangents, zeros for constant operands",
    "multilinear": "linear in each float operand separately (matmul, einsum, kron): the JVP "
                   "is the sum over operands of the primitive with that one operand's tangent",
    "real_only": "why it has no derivative for complex operands (it orders them: max, sort, "
                 "clip; its rule is written for real matrices: eigh, svd): both sweeps refuse "
                 "a complex operand that needs one, saying this",
    "array_first": "the first operand must be an array: numpy takes a Python number there, cupy "
                   "does not, so codegen writes xp.asarray(1.0) (np.broadcast_to(1.0, shape))",
    "cheap": "one pass over its operands, no reduction (+, -, np.roll): a loop's backward step "
             "computes it again from the values the forward loop saves, rather than saving it "
             "too, where that saves a stack of values (ad/regions.py)",
    "commutative": "its two operands in either order give the same value, bit for bit (IEEE "
                   "+ and *): CSE takes 3 * x and x * 3 for one value, and an in-place form may "
                   "write over either operand",
    "written": "options passed in every call, at their default too: the function's own default "
               "differs between the numpy versions pyproject admits (np.take_along_axis has "
               "axis=-1 from numpy 2.3 only), so a gradient module must not lean on it",
    "sequences": "operands that are sequences of arrays (concatenate's arrays, vstack's tup): "
                 "a list there is its items, one traced array its rows (np.vstack(x) joins the "
                 "rows of x, as numpy does). Any other operand given a list or tuple that holds "
                 "traced values reads it as numpy does, as an array: np.mean([x, x + 2]) is the "
                 "mean of their np.stack. '*' (a user's function, by default): every operand is "
                 "passed as given",
    "sparse": "takes a scipy.sparse matrix read from outside as an operand (``A @ x``, "
              "``A.T``) and its rules work with one (``A.T @ dy``); every other primitive "
              "refuses one by name (a sparse matrix is a constant: it gets no gradient)",
}

# The rule text of every statement the forward sweep (ad/forward.py) records starts with this:
# codegen writes them in a section of their own, ``# -- tangent --``.
TANGENT = "jvp "


@dataclass(frozen=True, slots=True)
class Stmt:
    outs: tuple[Var, ...]
    prim: Primitive
    args: tuple[Tree, ...]
    params: tuple[tuple[str, Any], ...] = ()
    loc: SourceLoc | None = None
    rule: str | None = None      # backward statements: the rule text they were made from
    # ``uses()``, computed on the first call: a statement never changes, and passes ask often
    _uses: tuple[Var, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def out(self) -> Var:
        return self.outs[0]

    def uses(self) -> tuple[Var, ...]:
        """The Vars among the operands, in order, once per operand that is one."""
        uses = self._uses
        if uses is None:
            uses = tuple(v for arg in self.args for v in tree_vars(arg))
            object.__setattr__(self, "_uses", uses)
        return uses

    @property
    def first_var(self) -> Var | None:
        """The Var of the first operand: what an in-place statement writes into."""
        return next(tree_vars(self.args[0]), None) if self.args else None

    def param(self, name: str) -> Any:
        for key, value in self.params:
            if key == name:
                return value
        return self.prim.defaults().get(name)

    def replace(self, **changes: Any) -> "Stmt":
        fields = {f: getattr(self, f) for f in _STMT_FIELDS}
        fields.update(changes)
        return Stmt(**fields)


_STMT_FIELDS = ("outs", "prim", "args", "params", "loc", "rule")


@dataclass(frozen=True, slots=True)
class Input:
    """A traced leaf of the arguments: argument ``argnum`` itself or a field inside it."""

    var: Var
    argnum: int
    path: tuple = ()
    access: str = ""     # Python that reads the leaf from the argument: "m.layers[0].W"


@dataclass(frozen=True, slots=True)
class StaticInput:
    """A static leaf of the arguments (an int, a flag, a string) or a fact about their layout
    (``len(m.layers)``), baked into the code: ``access`` evaluated to ``value``."""

    argnum: int
    path: tuple
    value: Any
    access: str = ""     # Python that reads it from the argument: "m.act", "len(m.layers)"


# What a tape does that is written above this module: ``play`` (ir/play.py) and ``format``
# (ir/printer.py) put their function here when imported, and ir/__init__.py imports both, so
# they are here wherever a Tape is, while this module imports neither.
METHODS: dict[str, Callable] = {}


@dataclass
class Tape:
    """A function as straight-line SSA, optionally with its gradients.

    ``result`` is the function's value; after the backward pass ``grads[i]`` is the gradient
    of ``result`` with respect to ``inputs[i]`` (None where there is none to compute).
    """

    name: str
    params: tuple[str, ...]
    inputs: list[Input]
    stmts: list[Stmt]
    result: Tree = None
    grads: list[Atom | None] | None = None
    statics: list[StaticInput] = field(default_factory=list)
    loc: SourceLoc | None = None
    # per parameter: "array", "scalar", "float", "int", "bool", "ints", "static", "struct"
    arg_kinds: tuple[str, ...] = ()
    layout: list[StaticInput] = field(default_factory=list)   # len(m.layers) == 2, tuple(d) == keys
    freevars: tuple[str, ...] = ()      # the function's closure variables (co_freevars)
    # Side tables for naming. Vars are shared by the tapes made from one another, so a stage
    # never changes one: where a value takes the place of another it records here that it has
    # that one's source name (``total = 0.0 + t``: ``t`` is ``total``) or that it is a gradient.
    hints: dict[Var, str] = field(default_factory=dict)
    primals: dict[Var, Var] = field(default_factory=dict)
    # The names of its values, given once by ir/names.assign_names on a finished tape (a
    # ``Namer``); a copy, made by a stage that changes the tape, has none until named again.
    namer: Any = field(default=None, compare=False, repr=False)
    # Forward mode (ad/forward.py): the tangent of ``result``, returned after it; ``tangents``
    # marks the Vars that are tangents (named ``dot_h``, where adjoints are ``dh``).
    tangent: Tree = None
    tangents: set = field(default_factory=set)
    loops: list[str] = field(default_factory=list)    # per loop: region or unrolled, and why
    # a loop body's inputs that the body owns and may write in place (ir/region.py: ``fresh``)
    owned: frozenset = frozenset()
    # the rules of backward statements a pass folded away (``1.0 * t13`` is ``t13``), by the
    # result of the statement that reads what they became: its ``# rule`` comment says them
    folded: dict[Var, tuple[str, ...]] = field(default_factory=dict)
    # what the code assumes about the world outside its arguments (ir/assumptions.py): set by
    # the frontend, carried by every stage, listed in the printed tape and the module header
    assumptions: tuple = ()
    # what ``result``'s nested tuples were in the user's code (a dict, a dataclass:
    # ir/structure.py); set by the frontend, None on a tape made otherwise
    structure: Any = None
    # a tape cut from another (ad/linearize.py): "linearize" (the forward that keeps what the
    # tangent map reads) or "tangent" (the tangent map); its function is named for it
    role: str = ""
    # ys.vmap (ad/batching.py): the number of examples a batched tape computes at once, each
    # batched value's first axis (None: not batched)
    batch: int | None = None

    def copy(self, **changes: Any) -> "Tape":
        fields = dict(self.__dict__)
        fields.update(changes)
        fields["inputs"], fields["stmts"] = list(fields["inputs"]), list(fields["stmts"])
        fields["hints"], fields["primals"] = dict(fields["hints"]), dict(fields["primals"])
        fields["folded"] = dict(fields["folded"])
        fields["namer"] = None
        fields["tangents"] = set(fields["tangents"])
        if fields["grads"] is not None:
            fields["grads"] = list(fields["grads"])
        return Tape(**fields)

    def hint_of(self, var: Var) -> str | None:
        """The source name of ``var``: the one it was bound to, or given in ``hints``."""
        return self.hints.get(var, var.hint)

    def primal_of(self, var: Var) -> Var | None:
        """The value ``var`` is the gradient of, if it is one."""
        return self.primals.get(var, var.grad_of)

    def in_place_targets(self) -> set[Var]:
        """The arrays that in-place statements write into (each must stay its own array)."""
        return {s.first_var for s in self.stmts if s.prim.inplace} - {None}

    def outputs(self) -> list[Atom]:
        outs = list(tree_atoms(self.result))
        outs += [g for g in (self.grads or []) if g is not None]
        outs += list(tree_atoms(self.tangent)) if self.tangent is not None else []
        return outs

    def play(self, *args: Any, fn: Callable | None = None) -> Any:
        """Evaluate the tape on ``args`` with numpy, statement by statement (``ir/play.py``):
        its result, and after the backward pass ``(result, *grads)`` per input leaf."""
        return METHODS["play"](self, *args, fn=fn)

    def prefix_of(self, var: Var) -> str:
        """How the name of a derivative starts: ``dot_`` for a tangent, ``d`` for an adjoint."""
        return "dot_" if var in self.tangents else "d"

    def __str__(self) -> str:
        return METHODS["format"](self)

    def __repr__(self) -> str:
        return f"<Tape {self.name}: {len(self.stmts)} stmts>"
