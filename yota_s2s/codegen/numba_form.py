"""The numba printer: the plain form's loop regions as ``numba.njit(cache=True)`` functions.

``engine="numba"`` writes the plain form (module.py, the review form's statements) and then
moves each loop region, the forward's and the backward's, into a function of its own that
numba compiles: the statements the region was written as, its ``for`` loop with the step's
blocks and their source-line comments, unchanged::

    @numba.njit(cache=True)
    def _rnn_grad_loop1(h0, xs, Wx, Wh, b):
        # workloads.py:192  for t in range(xs.shape[0]):   (the loop as the numpy form has it)
        h = h0
        ...
        return h, total, H

and the function calls it where the region was (``h, total, H = _rnn_grad_loop1(h0, ...)``,
under ``# numba: the loop runs in _rnn_grad_loop1``). The loop's arguments are the names it
reads that the function made before it; its results, the names it binds that the function
reads after it (an array it only changes in place needs no result: numba changes the caller's
array).

A function with one loop (a forward, ``ys.compile``) is first tried as one such function, its
whole body (``_f_body``: the loop and the statements around it, so that the interpreter makes
only the call), as a function without loops always is; where numba refuses it, the loop is a
function of its own, and the module says why the body is not one (``# numba: the body is not
one numba function``). A function with more loops (a gradient: the forward's and the
backward's) has a function for each (``WHOLE_LOOPS``: compile time).

Whether numba can compile a loop is decided when the module is compiled (``check_loops``, the
pipeline calls it): each loop is compiled for the types of its arguments, from the tape (an
array of the tape's dtype and number of dimensions, a float, an int); a loop numba refuses is
written again as the numpy form writes it, under a comment saying why (``# numba: this loop
stays numpy: ...``). The compiled code is cached beside the module (``cache=True``), so a
second process loads it instead of compiling it again.
"""
from __future__ import annotations

import ast
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import UsageError
from ..ir.region import loop_of
from ..ir.tape import Aval, Tape
from ..text import comment, identifier
from .numba_calls import DECORATOR, numba_forms, pad_helper, runtime_refusal
from .numba_hoist import hoisted
from .numba_nests import bind, loop_nests
from .numba_shapes import Shapes, Val, kind_of, xp_name
from .render import INDENT, Block, Comment, block_nodes, statement_lines

ENGINES = ("numpy", "numba", "auto", "fused")

INSTALL = "pip install 'yota-s2s[numba]' (or pip install numba)"


def check_engine(engine: str) -> str:
    """``engine`` as the pipeline takes it: "numpy", "numba", or "auto" where numba is
    installed ("numpy" where it is not), "fused" (cupy_form.py, for device="cuda"); numba asked
    for but not installed is an error that says how to install it."""
    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {', '.join(map(repr, ENGINES))}, "
                         f"not {engine!r}", hint='Pass engine="numpy" or engine="numba".')
    if engine in ("numpy", "fused"):
        return engine
    try:
        import numba  # noqa: F401
    except ImportError:
        if engine == "auto":
            return "numpy"
        raise UsageError(f'engine="{engine}" needs numba, which is not installed',
                         hint=f"Install it: {INSTALL}; or pass engine=\"numpy\".") from None
    return engine


@dataclass
class LoopKernel:
    """One loop region moved into a function numba compiles: its ``name``, the names it takes
    (``params``, with the tape's values they hold, ``avals``: None where the name holds no
    value of the tape), the names it returns, and its statements."""

    name: str
    index: int                       # the region's place among the function's regions
    params: list[str]
    avals: list[Aval | None]
    results: list[str]
    result_avals: list[Aval | None]
    nodes: list[ast.stmt]
    note: str = ""                   # the region's source line, said above the function
    # the shapes of the names its statements bind once, outside their loops: the tape's
    known: Mapping[str, Val] = field(default_factory=dict)

    def text(self) -> str:
        value = ast.Name(self.results[0]) if len(self.results) == 1 else \
            ast.Tuple([ast.Name(r) for r in self.results])
        ret = [ast.Return(value)] if self.results else []
        fn = ast.FunctionDef(self.name, ast.arguments([], [ast.arg(p) for p in self.params],
                                                      None, [], [], None, []),
                             self.nodes + ret, [], None, lineno=1)
        body = [INDENT + line for node in fn.body for line in statement_lines(node)]
        head = [comment(f"numba: {self.note}")] if self.note else []
        return "\n".join([""] + head + [DECORATOR,
                                            f"def {self.name}({', '.join(self.params)}):"]
                         + body) + "\n"


@dataclass
class NumbaForm:
    """What the numba printer made of one function: its loops (``kernels``) and the loops left
    in numpy (``fallbacks``: a region's index -> why)."""

    fallbacks: Mapping[int, str] = field(default_factory=dict)
    auto: bool = False               # engine="auto": loops over large arrays stay numpy
    kernels: list[LoopKernel] = field(default_factory=list)
    helpers: set[int] = field(default_factory=set)     # the _padN the loops call

    def texts(self) -> list[str]:
        """The module's numba functions: the helpers, then the loops."""
        return [pad_helper(n) for n in sorted(self.helpers)] + [k.text() for k in self.kernels]


def numba_blocks(blocks: list[Block], tape: Tape, names: Any, fname: str,
                 tail: list[str], form: NumbaForm) -> list[Block]:
    """``blocks`` with each loop region's statements moved into a ``LoopKernel`` (added to
    ``form.kernels``) and a call of it in their place; a region in ``form.fallbacks`` stays
    as it is, under a comment saying why. ``names``: the function's Namer (a name -> the tape
    value it holds, for the loop's argument types); ``tail``: the lines written after the
    blocks (the results built and returned), for what the function reads after a loop."""
    held = _held(tape, names)
    made: set[str] = set(names.params)
    straight = _straight(blocks, tape, held, made, tail, fname, form)
    if straight is not None:
        return straight
    reads_after = _reads_after(blocks, tail)
    out: list[Block] = []
    if form.fallbacks.get(WHOLE) is not None:
        out.append(Block(blocks[0].section, None, [Comment(comment(
            "numba: the body is not one numba function (each loop is tried alone): "
            f"{form.fallbacks[WHOLE]}"))]))
    regions = 0
    for i, block in enumerate(blocks):
        if block.loop is not None or not any(loop_of(s) for s in block.sources):
            out.append(block)
            made |= _stores(block.stmts)
            continue
        stmts, sizes = [], []
        parts = block.parts()
        for k, (source, nodes) in enumerate(parts):
            if loop_of(source) is None:
                stmts += nodes
                sizes.append(len(nodes))
                made |= _stores(nodes)
                continue
            regions += 1
            later = reads_after[i] | _loads([n for _, ns in parts[k + 1:] for n in ns])
            written = _region(regions, source, nodes, made, later, held, fname, form)
            stmts += written
            sizes.append(len(written))
            made |= _stores(nodes)
        out.append(Block(block.section, block.loc, stmts, list(block.sources), None,
                         list(block.quiet), sizes))
    return out


# the index of a function's whole body among its kernels (its regions are 1, 2, ...)
WHOLE = 0

# a function with at most this many loops is one numba function, its whole body; with more,
# each loop is a function of its own: numba's compile time grows faster than the function
# (measured, cold: the spring chain's gradient, a forward and a backward loop, 7.6 s of CPU as
# one function, 4.0 s as two; its forward, one loop, 1.4-1.7 s as one)
WHOLE_LOOPS = 1


def _straight(blocks: list[Block], tape: Tape, held: Mapping[str, Aval], made: set[str],
              tail: list[str], fname: str, form: NumbaForm) -> list[Block] | None:
    """A function's whole body (engine="numba", not "auto"), the blocks' statements under their
    source lines, its loops as the plain form writes them, as one function numba compiles
    (``_f_grad_body``), called in one block: no statement between two loops is left to the
    interpreter. None for a function with a cache-blocked chain, or with a loop where numba
    refused the whole body (then each loop is a function of its own, and the module says why
    the body is not one). A body without loops numba refuses stays numpy, saying why."""
    if form.auto or not blocks or any(b.loop is not None for b in blocks):
        return None
    loops = sum(1 for b in blocks for s in b.sources if loop_of(s) is not None)
    if loops > WHOLE_LOOPS:
        return None
    if form.fallbacks.get(WHOLE) is not None:
        if loops:
            return None
        return [Block(blocks[0].section, None, [Comment(comment(
            f"numba: the body stays numpy: {form.fallbacks[WHOLE]}"))])] + blocks
    nodes: list[ast.stmt] = []
    previous, shown = None, set()
    for block in blocks:
        nodes += block_nodes(block, tape.name, lambda s: [], previous, shown)
        previous = block
    later = set(_free(ast.parse(textwrap.dedent("\n".join(tail))).body, set()))
    written = _region(WHOLE, None, nodes, made, later, held, fname, form)
    return [Block(blocks[0].section, None, written, [], None, [], [len(written)])]


def _region(index: int, source, nodes: list[ast.stmt], made: set[str], later: set[str],
            held: Mapping[str, Aval], fname: str, form: NumbaForm) -> list[ast.stmt]:
    """The statements a region is written as in the function: a call of its kernel, or (in
    ``form.fallbacks``) its own statements under the reason. Region 0 (no ``source``): a
    function's straight-line body."""
    why = form.fallbacks.get(index)
    if why is None and form.auto:
        why = _too_large(source)
    if why is not None:
        return [Comment(comment(f"numba: this loop stays numpy: {why}"))] + nodes
    params = [n for n in _free(nodes, set()) if n in made]
    results = [n for n in _ordered_stores(nodes) if n in later]
    name = identifier(f"_{fname}_loop{index}" if source is not None else f"_{fname}_body")
    loc = source.loc if source is not None else None
    note = f"{loc.short}  {loc.text}" if loc is not None else ""
    avals = [held.get(p) for p in params]
    known = _known(nodes, held)
    form.kernels.append(LoopKernel(name, index, params, avals, results,
                                   [held.get(r) for r in results],
                                   _compiled_form(nodes, params, avals, results, form, known),
                                   note, known))
    call = ast.Call(ast.Name(name), [_argument(p, held.get(p)) for p in params], [])
    head = Comment(comment(f"numba: the {'loop' if source is not None else 'body'} runs in "
                           f"{name}"))
    if not results:
        return [head, ast.Expr(call)]
    target = ast.Name(results[0]) if len(results) == 1 else \
        ast.Tuple([ast.Name(r) for r in results])
    return [head, ast.Assign([target], call, lineno=0)] + _scalar_types(results, held)


def _scalar_types(results: list[str], held: Mapping[str, Aval]) -> list[ast.stmt]:
    """numba returns a number as a Python float, int or complex: a float32 (or any other
    dtype than the Python number's) number of the tape made that dtype again, as numpy's is."""
    python = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.complex128), np.dtype(bool))
    out = []
    for name in results:
        aval = held.get(name)
        if aval is not None and aval.shape == () and np.dtype(aval.dtype) not in python:
            cast = ast.Call(ast.Attribute(ast.Name("xp"), np.dtype(aval.dtype).name),
                            [ast.Name(name)], [])
            out.append(ast.Assign([ast.Name(name)], cast, lineno=0))
    return out


def _known(nodes: list[ast.stmt], held: Mapping[str, Aval]) -> dict[str, Val]:
    """The shapes of the names ``nodes`` bind once, at their top level (the function's own
    values, one name each: ``held`` tells their shapes where the statements do not, as for
    ``t5 = xp.cos(xp.arange(12) + 1.0).reshape((2, 6))``)."""
    binds = Counter(e.id for node in nodes for n in ast.walk(node)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target] if
                              isinstance(n, (ast.For, ast.AugAssign, ast.AnnAssign)) else [])
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                    if isinstance(e, ast.Name))
    top = _names([n for n in nodes if not isinstance(n, (ast.For, ast.While))], stores=True)
    return {n: Val(tuple(held[n].shape), kind_of(held[n].dtype)) for n in top
            if n in held and binds[n] == 1}


def _compiled_form(nodes: list[ast.stmt], params: list[str], avals: list[Aval | None],
                   results: list[str], form: NumbaForm,
                   known: Mapping[str, Val] | None = None) -> list[ast.stmt]:
    """A loop's statements as its numba function holds them: the calls numba does not take
    rewritten (numba_calls.py), then the array statements as loop nests (numba_nests.py);
    ``form.helpers`` gets the ``_padN`` helpers the statements still call."""
    nodes, index = loop_nests(numba_forms(nodes, set()), {
        p: None if a is None else Val(tuple(a.shape), kind_of(a.dtype))
        for p, a in zip(params, avals)}, results, known)
    nodes = hoisted(nodes, params, index)
    form.helpers |= {int(n.func.id[4:]) for node in nodes for n in ast.walk(node)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                     and re.fullmatch(r"_pad\d+", n.func.id)}
    return nodes


# engine="auto" compiles a loop whose step makes no array over this many elements: there the
# interpreter's cost per numpy call (about a microsecond) is the step's cost. Measured (tools/
# bench.py --loops): numba 25x faster than the plain form on the spring chain (arrays of 32),
# 1.2x on the RNN of batch 16, hidden 64 (1,024, its products' time numpy's and numba's alike)
AUTO_ELEMENTS = 4096


def _too_large(source) -> str | None:
    """Why engine="auto" leaves the region ``source`` in numpy, or None."""
    body = loop_of(source).body
    largest = max((int(np.prod(v.aval.shape)) for s in body.stmts for v in s.outs), default=0)
    if largest <= AUTO_ELEMENTS:
        return None
    return f"its step makes arrays of {largest:,} elements (engine=\"auto\" compiles loops " \
        f"over at most {AUTO_ELEMENTS:,})"


def worth_numba(tape: Tape) -> bool:
    """engine="auto" writes ``tape`` for numba: it has a loop region over small arrays (else
    the numpy printer's buffered form is the faster module)."""
    return any(loop_of(s) is not None and _too_large(s) is None for s in tape.stmts)


def _argument(name: str, aval: Aval | None) -> ast.expr:
    """A loop's argument as the call passes it: a number of the tape (shape ``()``) as a numpy
    scalar, ``xp.asarray(t)[()]``, whether numpy made it a scalar or a 0-d array, so that numba
    gets the type ``check_loops`` compiled for (a 0-d array would be compiled again, and might
    not compile); a Python float, an array as they are."""
    if aval is None or aval.shape or aval.weak:
        return ast.Name(name)
    return ast.Subscript(ast.Call(ast.Attribute(ast.Name("xp"), "asarray"), [ast.Name(name)], []),
                         ast.Tuple([]))


def _held(tape: Tape, names: Any) -> dict[str, Aval]:
    """A name -> the tape value it holds last (the function's names of its parameters and of
    the values its statements make)."""
    held = {}
    for var in [i.var for i in tape.inputs] + [v for s in tape.stmts for v in s.outs]:
        name = names.names.get(var)
        if name is not None:
            held[name] = var.aval
    return held


def _reads_after(blocks: list[Block], tail: list[str]) -> list[set[str]]:
    """For each block that holds a loop region, the names the blocks after it and ``tail``
    read before binding them (the others: an empty set)."""
    rest = ast.parse(textwrap.dedent("\n".join(tail))).body
    after = []
    for block in reversed(blocks):
        region = block.loop is None and any(loop_of(s) for s in block.sources)
        after.append(set(_free(rest, set())) if region else set())
        rest = (block.stmts if block.loop is None else
                block.loop.before + [block.loop.loop] + block.loop.after) + rest
    return after[::-1]


def _names(nodes: list[ast.stmt], stores: bool) -> list[str]:
    """The names ``nodes`` bind (``stores``) or read, in order. (The writers' nodes carry no
    ``ctx``: a name is bound where it is an assignment's or a loop's target, or an element of
    a tuple that is; ``x[i] = v`` and ``x += v`` read ``x``.)"""
    bound, read = [], []
    for node in nodes:
        targets = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Assign):
                tops = n.targets
            elif isinstance(n, (ast.For, ast.AugAssign, ast.AnnAssign)):
                tops = [n.target]
            else:
                continue
            for t in tops:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Name):
                        targets.add(id(e))
                        if not isinstance(n, ast.AugAssign) and e.id not in bound:
                            bound.append(e.id)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and (id(n) not in targets or _augmented(node, n)) \
                    and n.id not in read:
                read.append(n.id)
    return bound if stores else read


def _free(nodes: list[ast.stmt], bound: set[str]) -> list[str]:
    """The names ``nodes`` read before binding them, in order (a loop's body is read with the
    names bound before the loop and its index: what its first step reads)."""
    free: list[str] = []

    def read(*exprs) -> None:
        for e in exprs:
            for n in ast.walk(e):
                if isinstance(n, ast.Name) and n.id not in bound and n.id not in free:
                    free.append(n.id)

    for node in nodes:
        if isinstance(node, ast.For):
            read(node.iter)
            inner = set(bound) | set(_names([ast.Assign([node.target], node.iter)], True))
            free += [n for n in _free(node.body, inner) if n not in free]
            bound |= inner | _stores(node.body)
            continue
        if isinstance(node, ast.Assign):
            read(node.value)
            targets = node.targets
        elif isinstance(node, ast.AugAssign):
            read(node.value, node.target)
            targets = [node.target]
        else:
            read(node)
            continue
        for t in targets:
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(e, ast.Name):
                    bound.add(e.id)
                else:
                    read(e)          # x[i] = v reads x and i
    return free


def _augmented(node: ast.stmt, name: ast.Name) -> bool:
    """``name`` is the target of an augmented assignment in ``node`` (``x += v`` reads ``x``
    and binds it again)."""
    return any(isinstance(n, ast.AugAssign) and n.target is name for n in ast.walk(node))


def _ordered_loads(nodes: list[ast.stmt]) -> list[str]:
    return _names(nodes, stores=False)


def _ordered_stores(nodes: list[ast.stmt]) -> list[str]:
    return list(dict.fromkeys(_names(nodes, stores=True) + _augmented_names(nodes)))


def _augmented_names(nodes: list[ast.stmt]) -> list[str]:
    return [n.target.id for node in nodes for n in ast.walk(node)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)]


def _loads(nodes: list[ast.stmt]) -> set[str]:
    return set(_names(nodes, stores=False))


def _stores(nodes: list[ast.stmt]) -> set[str]:
    return set(_ordered_stores(nodes))


# -- the trial compile ----------------------------------------------------------------------

def numba_type(aval: Aval) -> Any:
    """The numba type of a value the tape describes as ``aval``: an array of its dtype and
    number of dimensions (C order, as the function makes them), a Python or numpy scalar."""
    import numba
    if not aval.shape:
        return numba.from_dtype(aval.dtype)
    return numba.types.Array(numba.from_dtype(aval.dtype), len(aval.shape), "C")


CROSS_REFUSAL = "numba's np.cross takes 3-vectors only (of 2-vectors it raises at run time)"


def _cross_refusal(kernel: LoopKernel) -> str | None:
    """``CROSS_REFUSAL`` where a statement of ``kernel`` crosses vectors whose last axis is not
    known to be 3 (its shapes followed statement by statement from the kernel's arguments', and
    the tape's where the statements do not tell them)."""
    shapes = Shapes({p: Val(tuple(a.shape), kind_of(a.dtype)) for p, a in
                     zip(kernel.params, kernel.avals)},
                    kernel.known)

    def refused(stmts: list[ast.stmt]) -> bool:
        for stmt in stmts:
            if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
                shapes.env[stmt.target.id] = Val((), "i")
                if refused(stmt.body):
                    return True
            elif any(isinstance(n, ast.Call) and xp_name(n.func) == "cross" and not all(
                    (v := shapes.of(arg)) is not None and v.shape[-1:] == (3,)
                    for arg in n.args[:2]) for n in ast.walk(stmt)):
                return True
            bind(stmt, shapes)
        return False
    return CROSS_REFUSAL if refused(kernel.nodes) else None


def check_loops(module: Any, kernels: list[LoopKernel]) -> dict[int, str]:
    """Compile each loop of ``module`` for its arguments' types; the loops numba refuses, by
    index, with the reason (the first line of numba's message that says what it found)."""
    refused = {}
    for kernel in kernels:
        if any(a is None for a in kernel.avals):
            missing = [p for p, a in zip(kernel.params, kernel.avals) if a is None]
            refused[kernel.index] = f"{', '.join(missing)} holds no value of the tape"
            continue
        why = runtime_refusal(kernel.nodes) or _cross_refusal(kernel)
        if why is not None:
            refused[kernel.index] = why
            continue
        dispatcher = getattr(module, kernel.name)
        signature = tuple(numba_type(a) for a in kernel.avals)
        try:
            dispatcher.compile(signature)
        except Exception as e:      # numba's TypingError, UnsupportedError, LoweringError...
            refused[kernel.index] = _reason(e)
            continue
        changed = _dtype_changed(kernel, dispatcher.overloads[signature].signature.return_type)
        if changed:
            refused[kernel.index] = changed
    return refused


def _dtype_changed(kernel: LoopKernel, returned: Any) -> str | None:
    """Where numba's types promote otherwise than numpy's (numba keeps numpy 1's rules: a
    float32 array times a float is float64 there), a result of another dtype than the tape's:
    the reason the loop stays numpy."""
    import numba
    types = list(returned) if isinstance(returned, numba.types.BaseTuple) else \
        [returned] if kernel.results else []
    for name, aval, got in zip(kernel.results, kernel.result_avals, types):
        dtype = getattr(got, "dtype", got)
        if aval is not None and dtype != numba.from_dtype(aval.dtype):
            return f"numba computes {name} as {dtype} where numpy makes {aval.dtype}"
    return None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _reason(error: Exception) -> str:
    """numba's message, cut to the line that says what it could not do (with the call it could
    not type: ``No implementation of function Function(<function roll>) found for signature:
    roll(array(float64, 2d, C), Literal[int](-1), axis=Literal[int](1))``)."""
    lines = [_ANSI.sub("", line).strip() for line in str(error).splitlines()]
    lines = [line for line in lines
             if line and not line.startswith(("Failed in ", "During:", "- "))]
    if not lines:
        return type(error).__name__
    text = lines[0]
    if text.endswith("found for signature:") and len(lines) > 1 and lines[1].startswith(">>>"):
        text += " " + lines[1][3:].strip()
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    return text if len(text) <= 200 else text[:197] + "..."


# the header's paragraph in a module with numba loops
NUMBA_NOTE = """
Engine numba: the loops below run as numba.njit(cache=True) functions (their statements are
the plain numpy form's). The review form is the plain numpy module of the same code:
ys.simplegrad(f, *args, buffers=False), or yota-s2s with --engine numpy."""
