"""Tape -> commented blocks of Python statements (``ast`` nodes), ready to unparse.

Readability decisions live here:

- a temporary used once, by the next statements of the same source line, is written inline
  (``h = xp.tanh(W @ x + b[:, None])``); values with a source name and gradients keep theirs;
- consecutive statements from the same source line form a block under one comment, in the
  forward section ``# model.py:4  h = ...`` and in the backward ``# grad of model.py:4  ...``;
- primitives are written as the operator (``a @ b``), the method (``dt.sum(axis=1)``) or the
  ``xp.`` function a person would write; ``dx[2] += t`` for a plain-key accumulation, and
  ``x[i] = v`` for an update written in place.

gast is the reader's AST; the writer builds stdlib ``ast`` nodes directly, since its node set
for these few statements is stable across the Python versions we support and ``ast.unparse``
takes them as they are.
"""
from __future__ import annotations

import ast
import operator
from typing import Any, Callable

import numpy as np

from ..errors import StaticValueError
from ..ir.branch import branch_of
from ..ir.whiles import while_of
from ..ir.region import loop_of
from ..ir.tape import Atom, Lit, Primitive, Stmt, Tape, Var, tree_vars
from ..rules.control import guard, store
from ..rules.elementwise import astype
from ..rules.indexing import index_add, setitem_
from ..rules.outside import draw, external, external_check
from ..text import (access_expr, dotted, fraction, identifier, index_literal, literal,
                    literal_text)
from .blocks import write_chain
from .buffers import out_keeps_value
from .imports import function_value
from .outside import outside_statements
from .plan import plan_function
from .render import Block, block_nodes, group_blocks, section_of, unparse
from .flags import flag_arithmetic
from .scalars import float_literal, scalar_statement, square
from .out_forms import write_statement

_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv,
           "%": ast.Mod, "**": ast.Pow, "@": ast.MatMult, "&": ast.BitAnd, "|": ast.BitOr,
           "^": ast.BitXor}
_AUGMENTED = {"+", "-", "*", "/", "//", "%", "**", "&", "|", "^"}     # not @: numpy refuses @=
_UNOPS = {"-": ast.USub, "~": ast.Invert, "+": ast.UAdd}
_CMPS = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}
# numpy's logic of one bool each (an if's test on data: frontend/conditions.py) written as
# Python's, which reads as the source did and costs no ufunc call: ``xp.bool_(a > 0 and b >
# 0)`` (numpy's bool, as the ufunc gives: a comparison of Python floats gives Python's)
_LOGIC = {np.logical_and: lambda xs: ast.BoolOp(ast.And(), xs),
          np.logical_or: lambda xs: ast.BoolOp(ast.Or(), xs),
          np.logical_not: lambda xs: ast.UnaryOp(ast.Not(), xs[0])}

# The writers of constructs that hold statements of their own, by the type of the construct the
# statement carries (``Loop``: a loop region, regions.py; ``Branch``: an ``if``, branches.py). Each writes its statement with
# Emitters of its own, so it sits above this module; module.py, which assembles the generated
# module, fills the table.
CONSTRUCTS: dict[type, Callable[[Emitter, Stmt], list[ast.stmt]]] = {}

# The writers of statements read or drawn from outside the arguments (outside.py), by primitive
OUTSIDE: dict[Callable, Callable[[Emitter, Stmt], list[ast.stmt]]] = {
    external: outside_statements, external_check: outside_statements, draw: outside_statements}


class Emitter:
    """Writes a tape's statements; ``fast=True`` adds scalar mode (scalars.py) and writes
    arrays into planned memory (buffers.py, out_forms.py)."""

    def __init__(self, tape: Tape, taken: set[str] = frozenset(),
                 calls: dict[Primitive, str] | None = None, fast: bool = False,
                 roots: dict[str, str] | None = None, blocked: bool = True,
                 inline: set[Var] = frozenset(), named: set[Var] = frozenset(),
                 plan: frozenset | None = None, carried: dict[Var, Var] | None = None,
                 floats: set[Var] = frozenset(), turns: frozenset = frozenset(),
                 rows: dict | None = None, first: frozenset = frozenset(),
                 device: str = "cpu", max_steps: int | None = None,
                 homes: dict | None = None, over_carried: bool = False):
        """``inline``: more temporaries written inside their one reader's expression, where
        the caller has checked that nothing they read is written before that reader runs;
        ``named``: temporaries that get a statement and a name of their own; ``plan``: plan
        the memory (as ``fast`` does, without scalar mode: a loop body, regions.py) of every
        value but these (made where the caller writes them), and ``carried`` (a step's
        results -> the carried values they become) written over the carried arrays, and
        ``turns`` (step results that may live in two work arrays in turn, buffers.py), and
        ``rows`` (states made in a row of their stack: the row, where it is free to write)
        made over a group of work-array values that then lives in that row, and ``first``
        (values a chain should start from, buffers.py), ``homes`` (a branch arm's results ->
        the arrays they are made in, branches.py), ``over_carried`` (a carried value written
        over by any value made from it once dead: a while's trip); ``max_steps``: the bound on a while's
        trips (whiles.py)."""
        self.tape, self.fast = tape, fast
        self.planned = plan
        self.blocked = blocked            # a CPU module (blocked chains; numpy, not cupy)
        self.device = device              # the array module checks test for (targets.py)
        self.calls = calls or {}          # user functions: how the module's imports name them
        self.roots = roots or {}          # user modules read at call time: how they are named
        self.plan = plan_function(tape, taken, fast, blocked, inline, named, plan, carried,
                                  floats, turns, rows, first, homes, over_carried)
        self.scalars, self.inlined, self.facts = self.plan.scalars, self.plan.inlined, \
            self.plan.facts
        self.memory, self.names, self.chains = self.plan.memory, self.plan.names, \
            list(self.plan.chains)
        self.scalar_names, self.slot_names = self.plan.scalar_names, self.plan.slot_names
        self.lent_arrays = self.plan.lent_arrays     # returned group -> its array, made early
        self.made_by = self.facts.producer
        self.unpacked_done: set[Var] = set()
        self.modules: set[str] = set()
        self.ones: dict[tuple[int, str], str] = {}    # ones vectors for row/column sums
        self.numbers: dict[tuple[str, str], str] = {}     # 0-d arrays of numbers ufuncs read
        self.number_slots: dict[str, int] = {}    # dtype -> the 0-d work array of reductions
        self.enclosing: Emitter | None = None     # a loop body's: the function's (regions.py)
        self.within: tuple | None = None          # an arm's: (its branch statement, the arm);
        # a while's body, condition or unwind step: (that statement, the tape's own inputs)
        self.slot_at: int | None = None     # a planned arm's or body's: its function statement
        self.turned: list[tuple[str, str]] = []    # loops' pairs of work arrays (regions.py)
        self.dtypes: dict[tuple, str] = {}    # (dtype, scalar type?) -> its module-level name
        self.trig_slots: dict[tuple, list] = {}     # block shape -> pairs of slots (halfangle.py)
        self.lent_made: set = set()                 # those and the lent work arrays made so far
        self.delivered_done: set[Var] = set()       # returned values _deliver'ed where made
        self.dot_sums = fast      # a dot product for ``np.sum(h ** 2)`` (regions.py sets it)
        self.lists: set[Var] = set()      # values a loop made as Python lists (regions.py)
        self.passed: set[str] = set()     # a trip's spares an arm may leave unused (branches.py)
        self.list_names: dict[Var, str] = {}      # an argument -> its x.tolist() (regions.py)
        self.body_names: set[str] = set()         # names loop bodies assign (regions.py)
        self.max_steps = max_steps
        self.while_stacks: list[tuple] = []       # the buffered form's held stacks (whiles.py)
        self.row_stacks: dict = {}      # stacks of 0-d rows: Var -> index (while_numbers.py)
        self.row_numbers: set = set()   # an unwind's 0-d rows, read by ufuncs as they are
        self.number_rows: dict = {}     # a trip's numbers -> their rows (whiles._TripRows)
        self.rows_filled: set = set()   # those rows filled so far
        self.step_limit = False                   # a while raises StepLimitError (whiles.py)
        self.flag_forms: dict[tuple, bool] = {}   # conditional floats, or not (flags.py)

    def dtype_constant(self, dtype: np.dtype, scalar: bool = False) -> str:
        """How an argument check names ``dtype``: ``xp.float64`` in the plain form, a dtype
        made once at module level (``_float64 = xp.dtype(xp.float64)``, workspace.prelude) in
        the buffered one, where comparing with it costs a third as much. ``scalar``: its numpy
        scalar type, for a Python float returned as numpy's (``_float64_scalar = xp.float64``,
        bound once: a fifth faster to call than ``xp.float64``)."""
        if not self.fast:
            return literal_text(dtype)
        key = (dtype, scalar)
        if key not in self.dtypes:
            self.dtypes[key] = self.outer_name(f"_{dtype.name}" + ("_scalar" if scalar else ""))
        return self.dtypes[key]

    def outer_name(self, hint: str, avoid: frozenset = frozenset()) -> str:
        """A fresh name bound outside every loop (at module level or when the function
        starts): none that a loop body assigns (``body_names``) or that is in ``avoid``."""
        body = (self.body_names | avoid) - self.names.taken
        self.names.taken |= body
        name = self.names.fresh(hint)
        self.names.taken -= body
        return name

    def temporary(self, hint: str) -> str:
        """A fresh name for a statement's own temporary, taken in every enclosing emitter
        too: no name the function gives later (an unwind's index) is this one."""
        name, em = self.names.fresh(hint), self.enclosing
        while em is not None:
            em.names.taken.add(name)
            em = em.enclosing
        return name

    def ones_vector(self, n: int, dtype: str, avoid: frozenset = frozenset()) -> str:
        """The module-level vector of ``n`` ones (``_ONES_n``, workspace.prelude) for row and
        column sums as products: a loop body's is its function's (the module defines those),
        named apart from the names the body assigns (``avoid``) and those earlier bodies did."""
        if self.enclosing is not None:
            return self.enclosing.ones_vector(n, dtype, frozenset(self.names.taken)
                                              | frozenset(self.names.names.values()) | avoid)
        key = (n, dtype)
        if key not in self.ones:
            self.ones[key] = self.outer_name(f"_ONES_{n}" + ("" if dtype == "float64" else "_F32"),
                                             avoid)
        return self.ones[key]

    def number_array(self, value: float, dtype: np.dtype, avoid: frozenset = frozenset()) -> str:
        """The module-level 0-d array of ``value`` in ``dtype`` (``_1_0 = xp.array(1.0)``,
        workspace.prelude), for a number a ufunc reads: numpy makes a new 0-d array of a
        Python number on every call (8 bytes of array data, a quarter microsecond). A loop
        body's is its function's, named apart from the names the body assigns."""
        if self.enclosing is not None:
            return self.enclosing.number_array(value, dtype, frozenset(self.names.taken)
                                               | frozenset(self.names.names.values()) | avoid)
        key = (repr(value), dtype.name)
        if key not in self.numbers:
            text = repr(value)
            hint = "_" + ("MINUS_" if text.startswith("-") else "") + \
                text.lstrip("-").replace(".", "_").replace("-", "_").replace("+", "")
            hint = hint.replace("inf", "INF").replace("nan", "NAN")
            self.numbers[key] = self.outer_name(
                hint + ("" if dtype == np.float64 else "_" + dtype.name.upper()), avoid)
        return self.numbers[key]

    def number_slot(self, dtype: np.dtype, label: str, avoid: frozenset = frozenset()) -> str:
        """The function's 0-d work array of ``dtype`` that a reduction to a number writes into
        (``t.sum(out=buf4)[()]``; ``label``: the value's name, for WORK_ARRAYS): numpy would
        return the number in a new 0-d array. Its value is read at once (``[()]``, a numpy
        scalar), so every such reduction of the function shares it."""
        if self.enclosing is not None:
            return self.enclosing.number_slot(dtype, label, frozenset(self.names.taken)
                                              | frozenset(self.names.names.values()) | avoid)
        if dtype.name not in self.number_slots:
            self.number_slots[dtype.name] = len(self.memory.slots)
            self.memory.slots.append(((), dtype, []))
            self.slot_names.append(self.outer_name(f"buf{len(self.memory.slots)}", avoid))
        k = self.number_slots[dtype.name]
        if label not in self.memory.slots[k][2]:
            self.memory.slots[k][2].append(label)
        return self.slot_names[k]

    def add_slot(self, shape: tuple, dtype, members: list) -> int:
        """A new work array (its index): bound when the function starts, so named apart from
        the names an earlier loop's body assigns."""
        self.memory.slots.append((tuple(shape), dtype, members))
        self.slot_names.append(self.outer_name(f"buf{len(self.memory.slots)}"))
        return len(self.memory.slots) - 1

    def function(self) -> "Emitter":
        """The emitter of the function this one writes a part of (an arm, an arm's arm, a
        while's tape): its source lines are the function's own, not marked inlined."""
        em = self
        while em.enclosing is not None:
            em = em.enclosing
        return em

    def nested(self, tape: Tape, names, within: tuple | None = None,
               homes: dict | None = None, place: Callable | None = None,
               carried: dict | None = None, turns: frozenset = frozenset(),
               unplanned: frozenset = frozenset()) -> tuple[list[ast.stmt], "Emitter"]:
        """``tape`` (a branch's arm, a while's tape) written by an emitter of its own under
        ``names``, inside this one's function, with its comments; that emitter. ``within``:
        the branch statement whose arm ``tape`` is (``(stmt, arm)``), where an arm's results
        become that statement's (codegen/branches.py asks it); a while's tape, ``(stmt, the
        inputs the loop carries)``. ``place`` (given: the memory of every value of ``tape``
        planned, ``homes`` its results made in the arrays given, ``carried`` and ``turns`` as
        ``Emitter`` takes them: a while's trip; but the values ``unplanned``) is called with
        the emitter before it writes: it places the plan's work arrays."""
        self.names.taken |= names.given()
        tape = tape.copy()
        tape.namer = names
        sub = Emitter(tape, calls=self.calls, roots=self.roots, blocked=self.blocked,
                      device=self.device, plan=frozenset(unplanned) if place else None, homes=homes,
                      carried=carried, turns=turns, over_carried=carried is not None)
        sub.enclosing, sub.within = self, within
        if place is not None:
            sub.dot_sums = self.function().fast     # np.sum(h * h) as h.dot(h), as a loop's
            place(sub)
        nodes: list[ast.stmt] = []
        previous, shown = None, set()
        for block in sub.blocks():
            nodes += block_nodes(block, self.function().tape.name, sub.rules_of, previous, shown)
            previous = block
        self.modules |= sub.modules
        return nodes, sub

    def blocks(self) -> list[Block]:
        chains = {c.start: c for c in self.chains}
        stmts, i, written = self.tape.stmts, 0, []
        blocks: list[Block] = []
        while i < len(stmts):
            chain = chains.get(i)
            loop = write_chain(self, chain, group_blocks) if chain is not None else None
            if loop is not None:
                blocks += group_blocks(written)
                written = []
                sources = stmts[chain.start:chain.stop]
                blocks.append(Block(section_of(sources[0]), sources[0].loc, loop.before,
                                    list(sources), loop))
                i = chain.stop
                continue
            stmt = stmts[i]
            i += 1
            if not any(v in self.inlined for v in stmt.outs):
                written.append((stmt, self.statements(stmt)))
        return blocks + group_blocks(written)

    def rules_of(self, stmt: Stmt) -> list[str]:
        """The rule of ``stmt``, then those of the temporaries written inline into it."""
        rules: list[str] = []

        def visit(s: Stmt) -> None:
            if s.rule and s.rule not in rules:
                rules.append(s.rule)
            for o in s.outs[:1]:      # rules of statements folded into this one (passes)
                rules.extend(r for r in self.tape.folded.get(o, ()) if r not in rules)
            for v in s.uses():
                if v in self.inlined:
                    visit(self.made_by[v])
        visit(stmt)
        return rules

    # -- statements ----------------------------------------------------------------------

    def statements(self, stmt: Stmt) -> list[ast.stmt]:
        outside = OUTSIDE.get(stmt.prim.fn)
        if outside is not None:
            return outside(self, stmt)
        construct = loop_of(stmt) or branch_of(stmt) or while_of(stmt)
        if construct is not None:
            return CONSTRUCTS[type(construct)](self, stmt)
        try:
            special = scalar_statement(self, stmt)
            if special is None:
                special = write_statement(self, stmt)
            return special if special is not None else [self.statement(stmt)]
        except StaticValueError as e:      # a value with no literal (text.py): say where
            if e.loc is not None:
                raise
            raise StaticValueError(e.what, stmt.loc, e.hint) from None

    def statement(self, stmt: Stmt) -> ast.stmt:
        special = _STATEMENTS.get(stmt.prim.fn)
        if special is not None:
            return special(self, stmt)
        value = self.expression(stmt)
        if not stmt.outs:
            return ast.Expr(value)
        targets = [ast.Name(self.names[v]) for v in stmt.outs]
        target = targets[0] if len(targets) == 1 else ast.Tuple(targets)
        return ast.Assign([target], value, lineno=0)

    def store(self, stmt: Stmt) -> ast.stmt:
        """``layer.layer_input = X``, ``cache.append(v)``, ``d["k"] = v`` on an argument's
        object, list or dict, done to the caller's (rules/control.py ``store``): an array made
        inside as a copy of its own (a work array's memory is used again), an argument's array
        as it is."""
        root = dict(zip(self.tape.params, self.names.params))
        target = access_expr(stmt.param("target"), root)
        (atom,) = stmt.args
        value = self.atom(atom)
        if isinstance(atom, Var) and atom.aval.ndim and \
                all(atom is not i.var for i in self.tape.inputs):
            value = ast.Call(ast.Attribute(value, "copy", ast.Load()), [], [])
        kind = stmt.param("kind")
        if kind in ("append", "extend"):       # (extend: the rows of a loop's stack)
            method = ast.Attribute(target, kind, ast.Load())
            return ast.Expr(ast.Call(method, [value], []))
        field = ast.Subscript(target, literal(stmt.param("name")), ast.Store()) \
            if kind == "item" else ast.Attribute(target, identifier(stmt.param("name")), ast.Store())
        return ast.Assign([field], value, lineno=0)

    def guard(self, stmt: Stmt) -> ast.stmt:
        cond = self.atom(stmt.args[0])
        if stmt.param("expected"):
            cond = ast.UnaryOp(ast.Not(), cond)
        where = stmt.param("where")
        expected = stmt.param("expected")
        message = f"{where} was {expected} when this gradient was compiled and is " \
                  f"{not expected} now; compile again for these arguments (ys.grad does this for you)"
        raise_ = ast.Raise(ast.Call(ast.Name("GuardError"), [ast.Constant(message)], []))
        return ast.If(cond, [raise_], [])

    def index_add(self, stmt: Stmt) -> ast.stmt:
        buf, key, value = stmt.args
        target = ast.Name(self.names[stmt.out])
        if any(v.aval.dtype.kind in "iu" and v.aval.ndim > 0 for v in tree_vars(key)) or \
                _has_array_lit(key):
            # integer-array keys may repeat an index: add.at accumulates every one (a boolean
            # mask names each element once)
            call = ast.Call(_dotted("xp.add.at"), [target, self.key(key, call=True), self.atom(value)], [])
            return ast.Expr(call)
        sub = ast.Subscript(target, self.key(key), ast.Store())
        return ast.AugAssign(sub, ast.Add(), self.atom(value))

    def update(self, stmt: Stmt) -> ast.stmt:
        """``x[key] = v`` in place (passes/inplace.py), or ``x[key] += w`` where ``v`` is
        ``x[key] + w`` written inline and keeps ``x``'s dtype."""
        target, key, value = stmt.args
        sub = ast.Subscript(ast.Name(self.names[stmt.out]), self.key(key), ast.Store())
        op = self.made_by.get(value) if isinstance(value, Var) and value in self.inlined else None
        if op is not None and op.prim.emit[0] == "binop" and op.prim.emit[1] in _AUGMENTED \
                and op.out.aval.dtype == stmt.out.aval.dtype and isinstance(op.args[0], Var):
            read = self.made_by.get(op.args[0]) if op.args[0] in self.inlined else None
            if read is not None and read.prim.fn is operator.getitem \
                    and read.args == (target, key):
                return ast.AugAssign(sub, _BINOPS[op.prim.emit[1]](), self.atom(op.args[1]))
        return ast.Assign([sub], self.atom(value), lineno=0)

    # -- expressions ---------------------------------------------------------------------

    def atom(self, atom: Any) -> ast.expr:
        if isinstance(atom, tuple):
            return ast.Tuple([self.atom(a) for a in atom])
        if isinstance(atom, Var):
            if atom in self.inlined:
                return self.expression(self.made_by[atom])
            return ast.Name(self.names[atom])
        return self.literal(atom.value)

    def expression(self, stmt: Stmt) -> ast.expr:
        emit, args = stmt.prim.emit, stmt.args
        kind = emit[0]
        numpy_form = self.scalars.numpy_form(stmt)
        if numpy_form is not None:
            return ast.Call(_dotted(numpy_form), [self.atom(a) for a in args], [])
        if self.dot_sums and stmt.prim.fn is np.sum and _sum_of_squares(self, stmt) is not None:
            base = self.atom(_sum_of_squares(self, stmt))
            if not self.numbers_in_arrays:
                return ast.Call(_dotted("xp.vdot"), [base, base], [])
            if _sum_of_squares(self, stmt).aval.ndim > 1:    # vdot's own copy, where it makes one
                base = ast.Call(ast.Attribute(base, "ravel", ast.Load()), [], [])
            dot = ast.Call(ast.Attribute(base, "dot", ast.Load()), [base], [])
            return self.into_number(stmt, dot, scalar=True)
        if stmt.prim.fn in _LOGIC and all(_one_bool(a) for a in args):
            logic = _LOGIC[stmt.prim.fn]([_unwrapped(self.atom(a)) for a in args])
            return ast.Call(_dotted("xp.bool_"), [logic], [])
        if kind == "binop" and emit[1] == "**" and square(self, stmt) is not None:
            return square(self, stmt)
        if kind == "binop" and (flags := flag_arithmetic(self, stmt)) is not None:
            return flags
        if kind == "binop":
            left, right = (float_literal(self, stmt, a) or self.atom(a) for a in args)
            return ast.BinOp(left, _BINOPS[emit[1]](), right)
        if kind == "unop":
            return ast.UnaryOp(_UNOPS[emit[1]](), self.atom(args[0]))
        if kind == "cmp":
            return ast.Compare(self.atom(args[0]), [_CMPS[emit[1]]()], [self.atom(args[1])])
        if kind == "identity":
            return self.atom(args[0])
        if kind == "getitem":
            return ast.Subscript(self.atom(args[0]), self.key(args[1]), ast.Load())
        keywords = [ast.keyword(identifier(k), self.literal(v)) for k, v in stmt.params]
        operands = [self.atom(a) for a in args]
        if stmt.prim.operands and stmt.prim.operands[-1].startswith("*"):
            operands = operands[:-1] + list(operands[-1].elts)
        if stmt.prim.optional:      # ``norm.logpdf(x, scale=s)``: by name, left out at defaults
            n = len(args) - len(stmt.prim.optional)
            given = zip(stmt.prim.optional, args[n:], operands[n:])
            keywords = [ast.keyword(name, op) for (name, default), a, op in given
                        if a != Lit(default)] + keywords
            operands = operands[:n]
        first = args[0] if args else None
        is_array = isinstance(first, Var) and not first.aval.weak and first not in self.scalars.floats
        if stmt.prim.fn is np.transpose and not stmt.params and is_array and first.aval.ndim == 2:
            return ast.Attribute(operands[0], "T", ast.Load())
        if kind == "method" or (stmt.prim.method and is_array):     # ``dt.sum(axis=1)``
            name = emit[1] if kind == "method" else stmt.prim.method
            this = operands[0]
            if not is_array and stmt.prim.fn is astype:     # a Python number: xp.float64(v)
                return ast.Call(operands[1], [this], [])
            if not is_array:
                this = ast.Call(_dotted("xp.asarray"), [this], [])    # a Python float: no methods
            call = ast.Call(ast.Attribute(this, identifier(name), ast.Load()), operands[1:],
                            keywords)
            # (numpy's min takes out= as max does: only cupy's refuses it, and numbers go
            # through 0-d arrays on a CPU only)
            if is_array and (stmt.prim.out_form == "reduce" or stmt.prim.fn is np.min) \
                    and self.numbers_in_arrays and stmt.out.aval.ndim == 0 \
                    and not stmt.out.aval.weak and out_keeps_value(stmt):
                return self.into_number(stmt, call)
            return call
        if stmt.prim.array_first and _python_number(first, self.scalars.floats):
            operands[0] = ast.Call(_dotted("xp.asarray"), [operands[0]], [])
            if self.numbers_in_arrays and isinstance(first, Lit) and type(first.value) is float:
                operands[0] = ast.Name(self.number_array(first.value, np.dtype(np.float64)))
        if stmt.prim in self.calls:
            return ast.Call(_dotted(self.calls[stmt.prim]), operands, keywords)
        self.modules.add(emit[1].split(".")[0])
        call = ast.Call(_dotted(emit[1]), operands, keywords)
        if stmt.prim.out_form == "dot" and self.numbers_in_arrays and _vector_dot(stmt):
            return self.into_number(stmt, call, scalar=True)    # numpy's 0-d array, else
        return call

    @property
    def numbers_in_arrays(self) -> bool:
        """Reductions to a number and the numbers ufuncs read go through 0-d arrays made once
        (``number_slot``, ``number_array``): in the buffered form of a CPU module, where a call
        with out= allocates no array (a GPU module's cupy takes numbers as they are)."""
        root = self
        while root.enclosing is not None:
            root = root.enclosing
        return root.fast and root.blocked

    def into_number(self, stmt: Stmt, call: ast.Call, scalar: bool = False) -> ast.expr:
        """``t.sum(out=buf4)[()]``: a reduction to a number through the function's 0-d work
        array, read at once as a numpy scalar (``[()]``), as the call alone returns it;
        ``scalar``: the call returns that scalar itself (``xp.dot(x, x, out=buf4)``; ``[()]``
        of a numpy scalar would make a 0-d array)."""
        slot = self.number_slot(stmt.out.aval.dtype, unparse(call))
        call.keywords.append(ast.keyword("out", ast.Name(slot)))
        return call if scalar else ast.Subscript(call, ast.Tuple([], ast.Load()), ast.Load())

    def key(self, key: Any, call: bool = False) -> ast.expr:
        """An index key: slices, None, ..., ints and index arrays, as Python writes them
        (``call``: as an argument, where ``:`` is spelled ``slice(None)``)."""
        parts = key if isinstance(key, tuple) else None
        if parts is None:
            return self.key_part(key, call)
        return ast.Tuple([self.key_part(p, call) for p in parts])

    def key_part(self, part: Any, call: bool = False) -> ast.expr:
        if isinstance(part, Lit) and isinstance(part.value, np.ndarray) and part.value.dtype.kind in "iub":
            return index_literal(part.value)     # x[[0, 2]], as written
        if isinstance(part, Lit) and isinstance(part.value, slice):
            s = part.value
            bounds = [s.start, s.stop, s.step]
            if call:
                bounds = bounds[:2] if s.step is None else bounds
                bounds = [None] if bounds == [None, None] else bounds
                return ast.Call(ast.Name("slice"), [self.literal(v) for v in bounds], [])
            return ast.Slice(*(None if v is None else self.literal(v) for v in bounds))
        return self.atom(part)

    def literal(self, value: Any) -> ast.expr:
        """A static value, exact for its type (``xp.float32(0.5)``): ``text.literal``; in the
        plain (review) form a float made from a count shows it: ``-1 / 64``."""
        function = function_value(value)
        if function is not None and function in self.calls:
            return _dotted(self.calls[function])     # a function given to a primitive, by name
        shown = None if self.fast else fraction(value)
        return shown if shown is not None else literal(value)


# The statements that are no assignment of an expression, by primitive: a guard raises, an
# accumulation adds into its operand, an update assigns a part of it
_STATEMENTS: dict[Callable, Callable[[Emitter, Stmt], ast.stmt]] = {
    guard: Emitter.guard, index_add: Emitter.index_add, setitem_: Emitter.update,
    store: Emitter.store}


def _vector_dot(stmt: Stmt) -> bool:
    """``np.dot(x, w)`` of two vectors, a number: numpy makes it in a new 0-d array, and writes
    it into a 0-d ``out=`` of its dtype instead (and returns it as a scalar there too)."""
    return stmt.out.aval.ndim == 0 and not stmt.out.aval.weak and all(
        isinstance(a, Var) and a.aval.ndim == 1 and not a.aval.weak and not a.aval.sparse
        for a in stmt.args)


def _dotted(path: str) -> ast.expr:
    return dotted(path)


def _python_number(atom: Any, floats: set[Var]) -> bool:
    """Maybe a number, not an array, in the generated code: a literal, or any 0-d value (a
    Python float, a numpy scalar, or a loop's carried ``ds = 1.0``); cupy's 0-d results are
    arrays already, and ``xp.asarray`` leaves them as they are."""
    if isinstance(atom, Lit):
        return isinstance(atom.value, (int, float, complex, np.generic))
    return isinstance(atom, Var) and (atom.aval.ndim == 0 or atom in floats)


def _sum_of_squares(em: Emitter, stmt: Stmt) -> Var | None:
    """``x`` where ``stmt`` is ``np.sum(x ** 2)`` (or ``x * x``) over a whole float64 array,
    the square written inline: one BLAS dot product, ``xp.vdot(x, x)``, with no array made
    for the square. Where numbers go through 0-d arrays (``numbers_in_arrays``) it is the
    method, ``x.ravel().dot(x.ravel(), out=buf4)``: it returns a numpy scalar as vdot does,
    the same bits, and allocates no array; at 16x64 (numpy 2.4) 0.55 us, where vdot takes
    0.69 us (and 8 bytes) and the function ``xp.dot(..., out=buf4)`` 0.77 us (its
    ``__array_function__`` dispatch)."""
    (square_,) = stmt.args if len(stmt.args) == 1 and not stmt.params else (None,)
    made = em.made_by.get(square_) if square_ in em.inlined else None
    if made is None:
        return None
    x = made.args[0]
    if made.prim.fn is operator.pow:
        twice = isinstance(made.args[1], Lit) and type(made.args[1].value) in (int, float) \
            and made.args[1].value == 2
    else:
        twice = made.prim.fn is operator.mul and made.args[1] is x
    if not twice or not isinstance(x, Var) or x in em.inlined or x in em.scalars.floats \
            or x.aval.weak or not x.aval.ndim or x.aval.dtype != np.float64 \
            or square_.aval.dtype != np.float64:
        return None
    return x



def _has_array_lit(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, Lit) and isinstance(p.value, np.ndarray) for p in parts)


def _unwrapped(node: ast.expr) -> ast.expr:
    """An operand of a logic expression as Python's: ``xp.bool_(a and b)`` -> ``a and b``."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "xp.bool_" and \
            isinstance(node.args[0], (ast.BoolOp, ast.UnaryOp)):
        return node.args[0]
    return node


def _one_bool(atom: Atom) -> bool:
    """Is ``atom`` one bool (a 0-d bool, or Python's)?"""
    if isinstance(atom, Lit):
        return type(atom.value) in (bool, np.bool_)
    return atom.aval.shape == () and atom.aval.dtype == np.bool_
