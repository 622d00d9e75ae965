"""The fused cupy printer (``device="cuda", engine="fused"``): elementwise groups as CUDA kernels.

On a GPU, at the bench sizes, a gradient's time is kernel launches: the plain cupy form launches
one kernel for each numpy call. This printer writes the plain form and then, with the grouping
the numba printer uses (numba_nests.fused_groups: consecutive elementwise statements over one
shape, broadcasting, forward and backward alike), writes each group as one
``cupy.ElementwiseKernel`` whose CUDA C body is in the module, the source lines and rules as
its comments::

    _loss_grad_k0 = xp.ElementwiseKernel(
        'float64 r0, float64 b',
        'float64 z, float64 t3',
        'z = tanh(r0 + b);\\n'
        '// model.py:6  loss = np.sum(z * z - z)\\n'
        't3 = z * z - z;\\n', ...)
    ...
        # model.py:5  z = np.tanh(x @ W + b)        (in the function, where the statements were)
        r0 = x @ W
        # kernel _loss_grad_k0: 2 statements in one launch
        z, t3 = _loss_grad_k0(r0, b)

A sum over axes of an elementwise expression is a ``cupy.ReductionKernel``; matrix products
and any call that is not elementwise stay as the plain form writes them (cuBLAS, cupy), computed
before the kernel into a name of their own. A group that does not fit (a value not float64, an
integer operand, ``xp.add.at``) is written back as numpy statements.

The C is a small, explicit subset, so that tests/fakecupy.py can evaluate it exactly with
numpy: statements ``double NAME = EXPR;``, ``NAME = EXPR;``, ``NAME op= EXPR;`` (op one of
``+ - * /``), ``// comment`` lines; expressions of float literals, names, parentheses, unary
``-``, ``+ - * /`` and calls of the functions in ``C_FUNCTIONS`` (the three of ``PREAMBLE``
included). Kernels are compiled with ``--fmad=false``: no multiply-add is contracted, so each
operation rounds as numpy's does. Kernels are made when the module is imported (cupy compiles
each on its first launch and caches it on disk).
"""
from __future__ import annotations

import ast
import copy
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from ..text import comment, identifier, literal_text
from .numba_form import _free, _held
from .numba_nests import fused_groups
from .numba_shapes import UNARY, Val, broadcast, kind_of, xp_name
from .render import Block, Comment, block_nodes

# numpy's name -> the C function the kernels call (``sq``, ``maximum``, ``minimum``: PREAMBLE's)
C_FUNCTIONS = {
    "tanh": "tanh", "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
    "tan": "tan", "abs": "fabs", "absolute": "fabs", "log1p": "log1p", "expm1": "expm1",
    "arctan": "atan", "arcsin": "asin", "arccos": "acos", "sinh": "sinh", "cosh": "cosh",
    "arctanh": "atanh", "arcsinh": "asinh", "arccosh": "acosh", "log2": "log2",
    "log10": "log10", "exp2": "exp2", "square": "sq", "maximum": "maximum",
    "minimum": "minimum", "arctan2": "atan2", "hypot": "hypot", "power": "pow",
}

# the device functions every kernel may call: numpy's square, and maximum and minimum, which
# give nan where either operand is nan (C's fmax would give the other operand)
PREAMBLE = textwrap.dedent("""\
    __device__ double sq(double x) { return x * x; }
    __device__ double maximum(double a, double b) { return (a > b || a != a) ? a : b; }
    __device__ double minimum(double a, double b) { return (a < b || a != a) ? a : b; }
    """)
OPTIONS = ("--fmad=false",)

# words a parameter or local of a kernel cannot be named: C and CUDA's, cupy's (``i``, the
# element's index; ``_ind``...), and the functions above
_RESERVED = frozenset("""
    auto bool break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while class delete new operator private protected
    public template this throw try catch virtual namespace using friend true false nullptr
    i n threadIdx blockIdx blockDim gridDim warpSize
    int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64
    complex128
    """.split()) | frozenset(C_FUNCTIONS.values())
_C_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


class NotFused(Exception):
    """A group the printer writes back as numpy statements."""


@dataclass
class Kernel:
    """One kernel of the module: its Python name, its parameters (``ins``, ``outs``: C
    declarations) and its body (C lines; a reduction's: its map expression, whose terms it
    adds; its source lines are comments above its call)."""

    name: str
    ins: list[str]
    outs: list[str]
    body: list[str]
    reduce: bool = False

    def text(self) -> str:
        cname = re.sub(r"[^A-Za-z0-9_]", "_", self.name.encode("ascii", "replace").decode())
        kind = "ReductionKernel" if self.reduce else "ElementwiseKernel"
        lines = [f"{self.name} = xp.{kind}(", f"    {literal_text(', '.join(self.ins))},",
                 f"    {literal_text(', '.join(self.outs))},"]
        body = [line + "\n" for line in self.body]
        if self.reduce:         # map, reduce, post-map expressions and the identity
            body[-1] = self.body[-1]
        lines += [f"    {literal_text(line)}" for line in body[:-1]]
        lines.append(f"    {literal_text(body[-1])},")
        if self.reduce:
            out = self.outs[0].split()[1]
            lines.append(f"    'a + b', {literal_text(out + ' = a')}, '0',")
        lines.append(f"    {literal_text(cname)}, preamble=_CUDA_PREAMBLE, "
                     "options=_CUDA_OPTIONS)")
        return "\n" + "\n".join(lines) + "\n"


@dataclass
class FusedForm:
    """What the fused printer made of a module's functions: its kernels."""

    kernels: list[Kernel] = field(default_factory=list)

    def texts(self) -> list[str]:
        """The module's kernels, after the preamble they share (none without kernels)."""
        if not self.kernels:
            return []
        lines = ["", "# The kernels' CUDA C (codegen/cupy_form.py): each replaces the numpy "
                 "statements that", "# its comments name; compiled on first launch, cached "
                 "by cupy.", "_CUDA_PREAMBLE = ("]
        lines += [f"    {literal_text(line)}" for line in PREAMBLE.splitlines(keepends=True)]
        lines += [")", f"_CUDA_OPTIONS = {literal_text(OPTIONS)}", ""]
        return ["\n".join(lines)] + [k.text() for k in self.kernels]


FUSED_NOTE = """
Engine fused: elementwise statements run as cupy kernels whose CUDA C is written below (the
statements they replace are their comments). The review form is the plain module of the same
code: ys.simplegrad(f, *args, device="cuda", buffers=False)."""


def fused_blocks(blocks: list[Block], tape: Any, emitter: Any, fname: str, tail: list[str],
                 form: FusedForm) -> list[Block]:
    """``blocks`` (the plain form's, for cupy) as one block whose elementwise groups are kernel
    calls (the kernels added to ``form.kernels``); the sections' headers stay as comments.
    ``emitter``: the function's (its names, its rules for the comments); ``tail``: the lines
    written after the blocks, for what the function reads after them."""
    if not blocks or any(b.loop is not None for b in blocks):
        return blocks
    names = emitter.names
    held = _held(tape, names)
    nodes: list[ast.stmt] = []
    previous, shown = None, set()
    for block in blocks:
        if previous is not None and block.section != previous.section:
            nodes.append(Comment(comment(f"-- {block.section} --")))
        nodes += block_nodes(block, tape.name, emitter.rules_of, previous, shown)
        previous = block
    later = _free(ast.parse(textwrap.dedent("\n".join(tail))).body, set())
    env = {p: None if held.get(p) is None else
           Val(tuple(held[p].shape), kind_of(held[p].dtype)) for p in names.params}
    lowering, items, counts = fused_groups(nodes, env, later, _bound_once(nodes, held),
                                           products=False)      # matrix products: cuBLAS
    items = _rebinding(items)
    written = _Printer(lowering, counts, fname, form).items(items)
    return [Block(blocks[0].section, None, written, [], None, [], [len(written)])]


def _rebinding(items: list) -> list:
    """``items`` with a Nest joined to the one before it where the grouping parted them only
    because a name is bound again (``dmu = -mu``, then ``dmu = dmu + dz``): in a kernel the
    first binding is a C local (the numba printer writes its nests' arrays in place, and keeps
    them apart)."""
    out: list = []
    for item in items:
        if isinstance(item, ast.For):
            item = ast.For(item.target, item.iter, _rebinding(item.body), [])
        last = out[-1] if out else None
        if hasattr(item, "writes") and hasattr(last, "writes"):
            joined = copy.copy(last)
            joined.writes, joined.read = list(last.writes), set(last.read)
            joined.written, joined.made = set(last.written), set(last.made)
            fits = True
            for k, w in enumerate(item.writes):
                fits = fits and _rejoins(joined, w)
                if fits:
                    joined.add(w, item.head if k == 0 else w.comments)
            if fits:
                out[-1] = joined
                continue
        out.append(item)
    return out


def _rejoins(nest, w) -> bool:
    """``nest.joins(w)``, a name the nest made bound again allowed."""
    if w.new is None or w.new not in nest.made or w.new in nest.written - nest.made:
        return nest.joins(w)
    made, nest.made = nest.made, nest.made - {w.new}
    written, nest.written = nest.written, nest.written - {w.new}
    try:
        return nest.joins(w)
    finally:
        nest.made, nest.written = made, written


def _bound_once(nodes: list, held: dict) -> dict[str, Val]:
    """The tape's Val of each name the statements bind once, outside any loop (a value of the
    tape, whatever call made it: ``t1 = xp.arange(3)``), for the shapes the grouping cannot
    tell from the statements."""
    bound: dict[str, int] = {}

    def walk(stmts: list, looped: bool) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.For, ast.While)):
                targets = [stmt.target] if isinstance(stmt, ast.For) else []
                walk([ast.Assign(targets, ast.Constant(0))] + stmt.body + stmt.orelse, True)
            elif isinstance(stmt, ast.If):
                walk(stmt.body + stmt.orelse, looped)
            elif isinstance(stmt, (ast.Assign, ast.AugAssign)):
                for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(e, ast.Name):
                            bound[e.id] = bound.get(e.id, 0) + (2 if looped else 1)
    walk(nodes, False)
    return {name: Val(tuple(held[name].shape), kind_of(held[name].dtype))
            for name, k in bound.items() if k == 1 and name in held}


class _Printer:
    def __init__(self, lowering, counts: dict[str, int], fname: str, form: FusedForm):
        self.lowering, self.counts, self.fname, self.form = lowering, counts, fname, form

    def items(self, items: list) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for item in items:
            if isinstance(item, ast.For):
                out.append(ast.For(item.target, item.iter, self.items(item.body), []))
            elif hasattr(item, "writes"):                   # a Nest
                try:
                    out += item.head + self.kernel(item)
                except NotFused:
                    out += item.head + [s for w in item.writes for s in w.comments + [_numpy(w)]]
            else:
                out.append(item)
        return out

    def kernel(self, nest) -> list[ast.stmt]:
        if any(w.gather for w in nest.writes):
            raise NotFused
        k = _Body(self.lowering, reduce=nest.writes[0].axes is not None)
        inside: dict[str, int] = {}
        for w in nest.writes:
            for n in ast.walk(w.value if w.new is not None else ast.Tuple([w.value, w.target])):
                if isinstance(n, ast.Name):
                    inside[n.id] = inside.get(n.id, 0) + 1
        name = identifier(f"_{self.fname}_k{len(self.form.kernels)}")
        if nest.writes[0].axes is not None:
            return self._reduction(nest.writes[0], k, name)
        seen: set[str] = set()
        for i, w in enumerate(nest.writes):
            self.lowering.shapes.env = w.env
            seen |= w.reads()
            value = k.expr(w.value)
            k.body += ["// " + _c_comment(c.text) for c in w.comments]
            if w.new is None:
                op = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}.get(
                    type(w.op), "=") if w.op is not None else "="
                k.body.append(f"{k.output(w.target, None)} {op} {value};")
            elif any(x.new == w.new for x in nest.writes[i + 1:]) or (
                    w.new not in seen and self.counts.get(w.new, 0) == inside.get(w.new, 0)):
                k.body.append(f"double {k.local(w.new)} = {value};")     # only this kernel
            else:
                out = w.new
                if w.new in seen:       # read before in this kernel: with out= given, an
                    out = self.lowering.fresh(w.new + "_")      # array of its own, named after
                    k.after.append(ast.Assign([ast.Name(w.new)], ast.Name(out), lineno=0))
                k.body.append(f"{k.output(ast.Name(out), w.new)} = {value};")
        if k.operations + sum(w.new is None and w.op is not None for w in nest.writes) < 2:
            raise NotFused              # one operation: numpy's call is one launch too
        return self._call(k, name, nest.shape)

    def _call(self, k: "_Body", name: str, shape: tuple[int, ...]) -> list[ast.stmt]:
        if not k.outs:
            raise NotFused
        shapes = [v.shape for _, _, v in k.ins.values()]
        given = any(new is None for _, _, new in k.outs) or not shapes \
            or broadcast(*shapes) != shape
        args = [e for _, e, _ in k.ins.values()]
        self.form.kernels.append(Kernel(name, [f"float64 {c}" for c, _, _ in k.ins.values()],
                                        [f"float64 {c}" for c, _, _ in k.outs], k.body))
        count = sum(not line.startswith("//") for line in k.body)
        plural = "s" if count > 1 else ""
        head = Comment(comment(f"kernel {name}: {count} statement{plural} in one launch"))
        if given:
            made = [ast.Assign([target], _empty(shape), lineno=0)
                    for _, target, new in k.outs if new is not None]
            call = ast.Call(ast.Name(name), args + [e for _, e, _ in k.outs], [])
            return made + [head, ast.Expr(call)] + k.after
        targets = [ast.Name(new) for _, _, new in k.outs]     # (new arrays: the names bound)
        target = targets[0] if len(targets) == 1 else ast.Tuple(targets)
        return [head, ast.Assign([target], ast.Call(ast.Name(name), args, []), lineno=0)]

    def _reduction(self, w, k: "_Body", name: str) -> list[ast.stmt]:
        self.lowering.shapes.env = w.env
        if isinstance(w.value, (ast.Name, ast.Subscript)):
            raise NotFused             # a sum of an array: cupy's own sum is one kernel too
        value = k.expr(w.value)
        shapes = [v.shape for _, _, v in k.ins.values()]
        if not shapes or broadcast(*shapes) != w.shape:
            raise NotFused
        out = k.output(ast.Name(w.new), w.new)
        self.form.kernels.append(Kernel(name, [f"float64 {c}" for c, _, _ in k.ins.values()],
                                        [f"float64 {out}"], [value], reduce=True))
        call = _summed(w, [e for _, e, _ in k.ins.values()])
        call.func = ast.Name(name)
        return w.comments + [Comment(comment(f"kernel {name}: a sum in one launch")),
                             ast.Assign([ast.Name(w.new)], call, lineno=0)]


class _Body:
    """One kernel being written: its inputs (a Python expression's text -> its C name, the
    expression, its Val), outputs (C name, the expression passed, the new name or None),
    the C names of values it makes (``names``) and its lines."""

    def __init__(self, lowering, reduce: bool = False):
        self.lowering = lowering
        self.ins: dict[str, tuple[str, ast.expr, Val]] = {}
        self.outs: list[tuple[str, ast.expr, str | None]] = []
        self.names: dict[str, str] = {}
        self.taken: set[str] = {"a", "b"} if reduce else set()   # a reduction's own
        self.body: list[str] = []
        self.after: list[ast.stmt] = []
        self.operations = 0             # the arithmetic and the calls written

    def cname(self, name: str) -> str:
        base = name if _C_NAME.match(name) and name not in _RESERVED else \
            "v" + re.sub(r"[^A-Za-z0-9_]", "", name.encode("ascii", "ignore").decode())
        out, k = base, 0
        while out in self.taken:
            k += 1
            out = f"{base}_{k}"
        self.taken.add(out)
        return out

    def local(self, name: str) -> str:
        self.names[name] = self.cname(name)
        return self.names[name]

    def output(self, target: ast.expr, new: str | None) -> str:
        base = target.id if isinstance(target, ast.Name) else _first_name(target)
        c = self.cname(base)
        self.outs.append((c, target, new))
        if new is not None:
            self.names[new] = c
        return c

    def _input(self, e: ast.expr) -> str:
        if {n.id for n in ast.walk(e) if isinstance(n, ast.Name)} & set(self.names):
            raise NotFused              # (the grouping keeps these apart; checked all the same)
        key = ast.unparse(e)
        if key not in self.ins:
            val = self.lowering.shapes.of(e)
            if val is None or val.kind != "f":
                raise NotFused          # an integer operand: C would divide it as an integer
            base = e.id if isinstance(e, ast.Name) else _first_name(e) + "_in"
            self.ins[key] = (self.cname(base), e, val)
        return self.ins[key][0]

    def expr(self, e: ast.expr) -> str:
        return self._expr(e)[0]

    def _expr(self, e: ast.expr) -> tuple[str, int]:
        """``e`` in C, with its precedence (3 an atom, 2 unary, 1 * /, 0 + -)."""
        self.operations += isinstance(e, (ast.BinOp, ast.Call)) or (
            isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub))
        if isinstance(e, ast.Constant):
            return _number(e.value), 3
        if isinstance(e, ast.Name):
            return (self.names[e.id] if e.id in self.names else self._input(e)), 3
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            text, p = self._expr(e.operand)
            if isinstance(e.op, ast.UAdd):
                return text, p
            return "-" + (text if p >= 3 and not text.startswith("-") else f"({text})"), 2
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Pow):
            if isinstance(e.right, ast.Constant) and e.right.value == 2:
                return f"sq({self.expr(e.left)})", 3
            return f"pow({self.expr(e.left)}, {self.expr(e.right)})", 3
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            prec = 0 if isinstance(e.op, (ast.Add, ast.Sub)) else 1
            sign = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}[type(e.op)]
            left, lp = self._expr(e.left)
            right, rp = self._expr(e.right)
            left = left if lp >= prec else f"({left})"
            right = right if rp > prec else f"({right})"
            return f"{left} {sign} {right}", prec
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.Subscript):
            return self._input(e), 3
        raise NotFused

    def _call(self, e: ast.Call) -> tuple[str, int]:
        name = xp_name(e.func)
        if isinstance(e.func, ast.Attribute) and e.func.attr == "copy" and name is None \
                and not e.args and not e.keywords:
            return self._expr(e.func.value)
        if e.keywords:
            raise NotFused
        if name in ("expand_dims", "roll") or (isinstance(e.func, ast.Name)
                                               and e.func.id.startswith("_pad")):
            return self._input(e), 3        # a view or a shifted copy: cupy makes it
        args = [self.expr(a) for a in e.args]
        if name == "negative" and len(args) == 1:
            return f"-({args[0]})", 2
        if name == "reciprocal" and len(args) == 1:
            return f"1.0 / ({args[0]})", 1
        if name in C_FUNCTIONS and len(args) == (1 if name in UNARY else 2):
            return f"{C_FUNCTIONS[name]}({', '.join(args)})", 3
        raise NotFused


def _number(value: Any) -> str:
    if type(value) is float and math.isfinite(value):
        return repr(value)
    if type(value) is int and abs(value) < 2 ** 53:
        return f"{value}.0"
    raise NotFused


def _first_name(e: ast.expr) -> str:
    return next((n.id for n in ast.walk(e) if isinstance(n, ast.Name) and n.id != "xp"), "a")


def _c_comment(text: str) -> str:
    """A comment line of the plan (``# model.py:5  z = ...``) as a C comment's text: cut to
    76 characters, ASCII, no backslash and no ``??`` (a backslash, or the trigraph ``??/``, at
    a line's end would continue the comment onto the next statement)."""
    text = text[2:] if text.startswith("# ") else text.lstrip("#")
    text = text.encode("ascii", "replace").decode().replace("\\", "/")
    while "??" in text:
        text = text.replace("??", "? ?")
    return text if len(text) <= 76 else text[:73] + "..."


def _summed(w, args: list[ast.expr]) -> ast.Call:
    """``xp.sum(value)``, or with the axes summed (``axis=1``, ``axis=(0, 2)``) where they
    are not all of them, and ``keepdims=True`` where it keeps them."""
    axes = sorted(w.axes)
    keywords = [] if len(axes) == len(w.shape) else [ast.keyword("axis", ast.Constant(
        axes[0]) if len(axes) == 1 else ast.Tuple([ast.Constant(a) for a in axes]))]
    keywords += [ast.keyword("keepdims", ast.Constant(True))] if w.keep else []
    return ast.Call(ast.Attribute(ast.Name("xp"), "sum"), args, keywords)


def _empty(shape: tuple[int, ...]) -> ast.expr:
    return ast.Call(ast.Attribute(ast.Name("xp"), "empty"),
                    [ast.Tuple([ast.Constant(n) for n in shape])], [])


def _numpy(w) -> ast.stmt:
    """A grouped statement (numba_nests.Write) written back as numpy computes it."""
    if w.gather:        # (its key as the grouping holds it: a tuple of the list's ints)
        key = w.target.slice
        key = ast.List(key.elts) if isinstance(key, ast.Tuple) else key
        add_at = ast.Attribute(ast.Attribute(ast.Name("xp"), "add"), "at")
        return ast.Expr(ast.Call(add_at, [ast.Name(w.base), key, w.value], []))
    if w.axes is not None:
        return ast.Assign([ast.Name(w.new)], _summed(w, [w.value]), lineno=0)
    if w.new is not None:
        return ast.Assign([ast.Name(w.new)], w.value, lineno=0)
    if w.op is not None:
        return ast.AugAssign(w.target, w.op, w.value)
    return ast.Assign([w.target], w.value, lineno=0)

