"""Tape with gradients -> the text of a gradient module.

Layout: header docstring (what, compiled for what, how to regenerate), imports (``numpy`` or
``cupy`` as ``xp``, ``math`` where Python floats need it, the user's modules for the functions
that rules and primitives name; see imports.py), ``GuardError`` where guards exist,
then one function per tape (``yota-s2s compile`` writes one per marked function of a model
file): argument checks, ``# -- forward --``, ``# -- backward --``, return. Each
statement is unparsed on its own so that comments and blank lines are ours; the text depends
only on the tape, so two compilations of the same input are byte-identical.
"""
from __future__ import annotations

import ast
import builtins
import textwrap
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import InternalError
from ..ir.assumptions import lines as assumption_lines
from ..ir.branch import Branch
from ..ir.names import MODULE_NAMES
from ..ir.region import Loop, inner_tapes
from ..ir.tape import Tape, Var
from ..ir.whiles import Unwind, While
from ..text import (access_expr, comment, describe, docstring_line, identifier, literal_text,
                    name_base, printable)
from ..version import __version__
from .branches import branch_statements
from .whiles import unwind_statements, while_statements
from .emit import CONSTRUCTS, Emitter
from .imports import Imports, plan_imports
from .lines import fit
from .cupy_form import FUSED_NOTE, FusedForm, fused_blocks
from .numba_form import NUMBA_NOTE, NumbaForm, numba_blocks
from .plan import Plan
from .outside import BIND, FUNCTION_PARAM, bind_function, changed_prelude, has_reads, \
    reads_function, unbound_check
from .regions import region_statements
from .stack_rows import held_rows
from .render import INDENT, Block, Comment, block_lines, block_nodes, statement_lines, unparse
from .targets import DASK_MISMATCH, check_calls, import_lines, not_an_array
from .workspace import (give_back_line, header_lines, out_check_lines, prelude, takes_out,
                        unpack_line)

CONSTRUCTS[Loop] = region_statements        # a loop region: a ``for`` loop, its body once
CONSTRUCTS[Branch] = branch_statements      # a branch: an ``if``, each arm under its own
CONSTRUCTS[While] = while_statements        # a while statement: a ``while``, its body once
CONSTRUCTS[Unwind] = unwind_statements      # its backward: a ``for`` over the trips, reversed

_PRELUDE_GUARD = '''
class GuardError(ValueError):
    """These arguments take a path through the source other than the one compiled."""
'''

_PRELUDE_MISMATCH = '''
def _mismatch(func, name, expected, value):
    if isinstance(value, xp.ndarray) and type(value) is not xp.ndarray:
        return TypeError(f"{func}: argument {name} is a {type(value).__qualname__}, a subclass of "
                         "ndarray, whose operations may differ (np.matrix's * is a matrix "
                         "product, a masked array skips masked elements); pass a plain array: "
                         f"np.asarray({name}) (a masked array: {name}.filled(value))")
    got = f"{value.dtype}{list(value.shape)}" if hasattr(value, "shape") else repr(value)
    kind = type(value).__module__.partition(".")[0]
    if kind in ("numpy", "cupy") and kind != xp.__name__ and hasattr(value, "shape"):
        fix = f"cupy.asarray({name})" if kind == "numpy" else f"{name}.get()"
        return TypeError(f"{func}: argument {name} is a {kind} array ({got}); this module was "
                         f"compiled for {xp.__name__} arrays: pass {fix}, or compile for the "
                         "other device")
    return TypeError(f"{func}: argument {name} must be {expected}, got {got}; compile again "
                     "for these arguments (ys.grad does this for you)")
'''


def function_name(tape: Tape) -> str:
    """``loss_grad`` for a gradient tape, ``loss_jvp`` for forward mode, ``loss_vmap`` for a
    batched one (``ys.vmap``), ``loss_forward`` for a tape with none of these (``ys.compile``'s
    forward-only module), ``loss_linearize`` and ``loss_tangent`` for the halves of a
    linearization (``Tape.role``)."""
    suffix = f"_{tape.role}" if tape.role else "_jvp" if tape.tangent is not None else \
        "_grad" if tape.grads is not None else "_vmap" if tape.batch is not None else "_forward"
    return f"{name_base(tape.name)}{suffix}" if tape.name.isidentifier() else f"lambda{suffix}"


@dataclass
class Written:
    """One generated function: its tape, the emitter that named its values, its blocks of
    statements, the names it returns and its text."""

    tape: Tape
    emitter: Emitter
    blocks: list[Block]
    returns: list[str]
    text: str


def write_module(tapes: Tape | Sequence[Tape], device: str = "cpu",
                 regenerate: str | None = None, buffers: bool = True,
                 source: str | None = None, numba: NumbaForm | None = None,
                 fused: FusedForm | None = None, max_steps: int | None = None) -> str:
    """The module's text: one gradient function per tape.

    ``buffers=False`` gives the plain form: every statement a primitive that has a rule, so the
    module can be compiled again (gradients of gradients); with ``buffers=True`` values live in
    planned memory (buffers.py) and small vectors read element by element become Python floats
    (scalars.py). Several tapes share one module in the plain form only (the work arrays are
    the module's). ``source`` names the model file and its hash (``yota-s2s compile`` records
    it); with it, or with several tapes, the header describes each function in turn.
    ``numba``: the numba printer's form (numba_form.py; the plain form's loops moved into
    compiled functions): its ``fallbacks`` say which loops stay numpy, and the loops written
    are added to its ``kernels``. ``fused``: cupy_form.py's (elementwise groups as kernels);
    ``max_steps``: the most trips a while loop may run (whiles.py ``StepLimitError``)."""
    tapes = [tapes] if isinstance(tapes, Tape) else list(tapes)
    if buffers and len(tapes) > 1:
        raise InternalError("several gradient functions share a module in the plain form only",
                            hint="Write them with buffers=False.")
    written, imports = write_functions(tapes, buffers, device == "cpu", numba, fused, device,
                                       max_steps)
    if len(written) == 1 and source is None:
        header = _header(tapes[0], device, regenerate, written[0].returns, written[0].emitter)
    else:
        header = _header_many(written, device, regenerate, source)
    modules = set().union(*(w.emitter.modules for w in written))
    if numba is not None:
        header = header.replace("\n\"\"\"", "\n" + NUMBA_NOTE + "\n\"\"\"", 1) \
            if numba.kernels else header
        modules |= {"numba"} if numba.kernels else set()
    if fused is not None and fused.kernels:
        header = header.replace("\n\"\"\"", "\n" + FUSED_NOTE + "\n\"\"\"", 1)
    parts = [header, _imports(device, modules, imports.lines)]
    if any(s.prim.emit[:1] == ("guard",) for tape in tapes for s in tape.stmts) or \
            any(has_reads(tape) for tape in tapes):
        parts.append(_PRELUDE_GUARD)
    if any(has_reads(tape) for tape in tapes):
        parts.append(changed_prelude(tapes))
    if any(_has_checks(tape) for tape in tapes):
        parts.append(DASK_MISMATCH if device == "dask" else _PRELUDE_MISMATCH)
    parts += [text for text in (prelude(w.emitter) for w in written) if text]
    parts += numba.texts() if numba is not None else []
    parts += fused.texts() if fused is not None else []
    text = "\n".join(parts + [w.text for w in written])
    check_names(text)
    check_calls(text, device)
    return text


def check_names(text: str) -> None:
    """The module parses, and no local shadows a module-level name or builtin the module reads
    (``xp``, ``isinstance``; a prelude helper's ``func`` may be a user's name): a compiler bug."""
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise InternalError(f"the generated module does not parse: {e}") from None
    bound = [n.id for stmt in tree.body if isinstance(stmt, ast.Assign)
             for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    bound += [a.asname or a.name.split(".")[0] for stmt in tree.body
              if isinstance(stmt, (ast.Import, ast.ImportFrom)) for a in stmt.names]
    bound += [stmt.name for stmt in tree.body
              if isinstance(stmt, (ast.FunctionDef, ast.ClassDef))]
    module = set(bound)
    twice = sorted(n for n in module if bound.count(n) > 1)
    if twice:
        raise InternalError(f"the generated module binds {', '.join(twice)} twice")
    functions = [fn for fn in tree.body if isinstance(fn, ast.FunctionDef)]
    local, free = {}, set()
    for fn in functions:
        local[fn.name], loads = _names(fn)
        free |= loads - local[fn.name]
    shared = module | (free & set(dir(builtins)))
    for fn in functions:
        theirs = module - MODULE_NAMES if fn.name in MODULE_NAMES else set()    # a helper's
        clash = sorted(local[fn.name] & (shared - theirs))
        if clash:
            raise InternalError(f"in the generated {fn.name}, {', '.join(clash)} would shadow "
                                "a module-level name or a builtin")


def _names(fn: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """The names ``fn`` binds (its parameters too) and those it reads: one walk."""
    stores = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    loads = set()
    todo: list = [fn]           # (ast.walk, without its generators: most of a module's time)
    while todo:
        n = todo.pop()
        if n.__class__ is ast.Name:
            if n.ctx.__class__ is ast.Store:
                stores.add(n.id)
            elif n.ctx.__class__ is ast.Load:
                loads.add(n.id)
        elif isinstance(n, ast.AST):
            for field in n._fields:
                value = getattr(n, field, None)
                if value.__class__ is list:
                    todo += value
                elif isinstance(value, ast.AST):
                    todo.append(value)
    return stores, loads


def write_functions(tapes: Sequence[Tape], buffers: bool = False, blocked: bool = True,
                    numba: NumbaForm | None = None, fused: FusedForm | None = None,
                    device: str = "cpu", max_steps: int | None = None
                    ) -> tuple[list[Written], Imports]:
    """Each tape's function, and the imports they share (planned over all of them, so that one
    module-level name never means two things). ``blocked``: long elementwise chains of the
    buffered form run in cache-sized blocks (blocks.py; on a CPU, not on a GPU); ``device``:
    the array module the argument checks test for (targets.py)."""
    # (the statements of loop bodies too: their calls are the module's imports as well)
    merged = tapes[0].copy(stmts=[s for t in tapes for s in t.stmts] +
                           [s for t in tapes for body in inner_tapes(t) for s in body.stmts],
        params=tuple(dict.fromkeys(p for t in tapes for p in t.params)))
    functions = {function_name(t) for t in tapes}
    imports = plan_imports(merged, functions)
    taken = imports.names | set().union(*map(names_taken, tapes))      # module-level names
    taken |= {"out"} if buffers else set()                            # out= of the function
    return [_function(t, Emitter(t, taken=taken, calls=imports.calls, fast=buffers,
                                 roots=imports.roots, blocked=blocked, device=device,
                                 max_steps=max_steps), numba, fused)
            for t in tapes], imports


def function_plans(tapes: Sequence[Tape], buffers: bool = True,
                   blocked: bool = True) -> list[Plan]:
    """Each tape's plan (plan.py) as ``write_functions`` writes it: its loop regions' plans are
    made as the regions are written, so the functions are written too."""
    return [written.emitter.plan for written in write_functions(tapes, buffers, blocked)[0]]


def names_taken(tape: Tape) -> set[str]:
    """Names the module defines for ``tape`` (its function, ``_changed``...): no value has one.
    The compiler names the finished tape avoiding them (ir/names.assign_names)."""
    taken = {function_name(tape)}
    taken |= {"_changed"} if has_reads(tape) else set()
    taken |= {FUNCTION_PARAM, BIND} if reads_function(tape) else set()
    return taken


def _function(tape: Tape, emitter: Emitter, numba: NumbaForm | None = None,
              fused: FusedForm | None = None) -> Written:
    blocks, fname = emitter.blocks(), function_name(tape)
    returns, build = _returns(tape, emitter)
    tail = build + [f"return {', '.join(returns)}"]
    if numba is not None:           # the loops as numba functions (numba_form.py)
        blocks = numba_blocks(blocks, tape, emitter.names, fname, tail, numba)
    if fused is not None:           # elementwise groups as CUDA kernels (cupy_form.py)
        blocks = fused_blocks(blocks, tape, emitter, fname, tail, fused)
    held_rows(emitter, blocks)      # a loop stack's rows from a list (buffered form)
    body = (unbound_check(fname, tape) if reads_function(tape) else []) + \
        _checks(tape, emitter, fname) + _struct_args(tape, emitter, fname) + \
        out_check_lines(emitter, tape, fname) + unpack_line(emitter)
    sections: list[str] = []
    previous, shown = None, set()
    for block in blocks:        # (a header where the section changes: a while carrying
        #                         tangents is a forward statement after the tangents it starts from)
        if not sections or block.section != sections[-1]:
            sections.append(block.section)
            body.append(f"# -- {block.section} --")
        if block.loop is None:
            body += block_lines(block, tape.name, emitter.rules_of, previous, shown)
            previous = block
            continue
        chain = block.loop                    # a cache-blocked chain (blocks.py)
        inner: list[ast.stmt] = []
        for part in chain.inner:
            if not sections or part.section != sections[-1]:
                sections.append(part.section)
                inner.append(Comment(comment(f"-- {part.section} --")))
            inner += block_nodes(part, tape.name, emitter.rules_of, previous, shown)
            previous = part
        loop = ast.For(chain.loop.target, chain.loop.iter, chain.loop.body + inner, [])
        body += [line for node in chain.before + chain.notes + [loop] + chain.after
                 for line in statement_lines(node)]
    body += build + give_back_line(emitter)
    body.append(f"return {', '.join(returns)}")
    keywords = (["out=None"] if takes_out(emitter) else []) + \
        ([f"{FUNCTION_PARAM}=None"] if reads_function(tape) else [])
    params = list(map(identifier, emitter.names.params)) + (["*", *keywords] if keywords else [])
    if emitter.memory.slots or emitter.while_stacks:
        emitter.modules.add("threading")
    signature = f"def {identifier(fname)}({', '.join(params)}):"
    text = fit("\n" + signature + "\n" + textwrap.indent("\n".join(body), INDENT) + "\n")
    if reads_function(tape):
        text += "\n" + bind_function(tape, fname)
    return Written(tape, emitter, blocks, returns, text)


# -- header and imports ---------------------------------------------------------------------

# what the module of a tape cut from another (ad/linearize.py) or of a gradient's JVP computes
ROLES = {"linearize": "Linearization (the value, and what its tangent map reads)",
         "tangent": "Tangent map", "hvp": "Gradient and Hessian-vector product"}


def _header(tape: Tape, device: str, regenerate: str | None, returns: list[str],
            emitter: Emitter) -> str:
    where = f" ({tape.loc.short})" if tape.loc else ""
    what = ROLES.get(tape.role) or ("Jacobian-vector product" if tape.tangent is not None else
                                    "Gradient" if tape.grads is not None else "Forward")
    if tape.batch is not None:      # ys.vmap, ys.per_example_grad
        what = f"Batched {what.lower()} ({tape.batch} examples at once)"
    lines = [f"{what} of {tape.name}{where}, generated by yota-s2s {__version__}. Do not edit.",
             ""] + signature_lines(tape, device, returns)
    lines += header_lines(emitter, tape)
    lines += assumption_lines(tape.assumptions)
    if regenerate:
        lines.append(f"Regenerate: {regenerate}")
    return _docstring(textwrap.fill(printable(line), 99, subsequent_indent=INDENT) if line
                      else line for line in lines)


def signature_lines(tape: Tape, device: str, returns: list[str]) -> list[str]:
    """``Compiled for: ...; device cpu.`` and ``Returns: ...``, one line each."""
    args = "; ".join(_describe_param(tape, i) for i in range(len(tape.params)))
    return [f"Compiled for: {args}; device {device}.",
            f"Returns: {', '.join(returns)}{_struct_note(tape, returns)}."]


def _struct_note(tape: Tape, returns: list[str]) -> str:
    # (none in forward mode: a tangent has its argument's structure)
    structs = [f"{r} of {p}" for r, p, k in zip(returns[1:], tape.params, tape.arg_kinds)
               if k == "struct" and r != "None" and tape.tangent is None]
    return f" ({', '.join(structs)}: gradients by field path)" if structs else ""


def _header_many(written: list[Written], device: str, regenerate: str | None,
                 source: str | None) -> str:
    """Each function in a paragraph; lines break between items, never inside one; the source
    and the command stay whole, to be copied."""
    files = sorted({printable(w.tape.loc.short.split(":")[0]) for w in written if w.tape.loc}) \
        or ["?"]
    lines = [f'Gradients for {", ".join(files)}, generated by yota-s2s {__version__}. '
             "Do not edit."]
    for w in written:
        tape = w.tape
        of = f" ({printable(tape.loc.short)})" if tape.loc else ""
        params = [_describe_param(tape, i) for i in range(len(tape.params))]
        lines += ["", f"{function_name(tape)}: the gradient of {tape.name}{of}, device {device}."]
        lines += _wrap_items(f"{INDENT}Compiled for: ", params, "; ", ".")
        lines += _wrap_items(f"{INDENT}Returns: ", w.returns, ", ", _struct_note(tape, w.returns)
                             + ".")
        lines += [INDENT + line for line in header_lines(w.emitter, tape)]
        lines += [INDENT + line for line in assumption_lines(tape.assumptions)]
    tail = ([f"Source: {printable(source)}"] if source else []) + \
        ([f"Regenerate: {printable(regenerate)}"] if regenerate else [])
    return _docstring(lines + ([""] + tail if tail else []))


def _docstring(lines) -> str:
    """The module docstring, its lines escaped (``text.docstring_line``), so that no name or
    value in it (a ``\"\"\"`` in a string argument, a file name, a dict key) can end it; the
    lines are ``printable`` already, so the only newlines are ours."""
    text = "\n".join(docstring_line(line) for line in "\n".join(lines).split("\n"))
    return f'"""{text}\n"""'


def _wrap_items(prefix: str, items: list[str], sep: str, end: str) -> list[str]:
    """``prefix`` and the items, broken at 99 columns between items or between the fields of a
    struct's description, never inside a shape."""
    words = []
    for i, item in enumerate(items):
        *fields, last = _fields(item)
        words += fields + [last + (sep.rstrip() if i < len(items) - 1 else end)]
    lines, line = [], prefix
    indent = " " * (len(prefix) - len(prefix.lstrip())) + INDENT
    for word in words:
        if line not in (prefix, indent) and len(line) + len(word) > 99:
            lines.append(line.rstrip())
            line = indent
        line += word + " "
    return lines + [line.rstrip()]


def _fields(item: str) -> list[str]:
    """``m (a f64[2, 3], b float)`` -> ``["m (a f64[2, 3],", "b float)"]``: split after the
    commas directly inside the outer parentheses."""
    parts, depth, start = [], 0, 0
    for k, char in enumerate(item):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 1 and item[k + 1:k + 2] == " ":
            parts.append(item[start:k + 1])
            start = k + 2
    return parts + [item[start:]]


def _describe_param(tape: Tape, argnum: int) -> str:
    name, kind = tape.params[argnum], tape.arg_kinds[argnum]
    leaves = [i for i in tape.inputs if i.argnum == argnum]
    if kind in ("array", "scalar"):
        return f"{name} {_spec(leaves[0].var)}"
    if kind in ("float", "int", "bool"):
        return f"{name} {kind}"
    if kind == "ints":
        return f"{name} list of {leaves[0].var.aval.shape[0]} ints"
    if kind == "static":
        value = next(s.value for s in tape.statics if s.argnum == argnum)
        return f"{name} = {static_text(value)}"
    facts = [(i.path, f"{i.access} {'float' if i.var.aval.weak else _spec(i.var)}") for i in leaves]
    facts += [(s.path, f"{s.access} = {static_text(s.value)}")
              for s in tape.layout + tape.statics if s.argnum == argnum]
    inner = ", ".join(text for _, text in sorted(facts, key=lambda f: _path_key(f[0])))
    return f"{name} ({inner})" if inner else f"{name} (no arrays)"


def static_text(value: Any) -> str:
    """A static value as the header shows it, the same in every run (no addresses)."""
    return describe(value)


def _spec(var: Var) -> str:
    return f"{var.aval.dtype.name}[{', '.join(map(str, var.aval.shape))}]"


def _imports(device: str, modules: set[str], user: list[str]) -> str:
    """Standard library, then the array module, then the user's modules (PEP 8 order)."""
    lines = [import_lines(device)]
    if "math" in modules:
        lines.insert(0, "import math")
    if "threading" in modules:
        lines.insert(0, "import threading")
    if "numba" in modules:
        lines.append("import numba")
    return "\n".join(lines + user) + "\n"


# -- the function ---------------------------------------------------------------------------

def _has_checks(tape: Tape) -> bool:
    return bool(tape.inputs) or any(_checkable(s.value) for s in tape.statics + tape.layout)


def _checkable(value: Any) -> bool:
    """A static value the function compares its argument with (numpy's ints and bools too:
    ``np.int64(0)`` picks a row as ``0`` does)."""
    return isinstance(value, (bool, int, str, type(None), np.integer, np.bool_)) or (
        isinstance(value, tuple) and all(_checkable(v) for v in value))


def _checks(tape: Tape, emitter: Emitter, fname: str) -> list[str]:
    """Top-level arguments: each array's type, shape and dtype, each static value."""
    lines = []
    for inp in tape.inputs:
        if inp.path == () and tape.arg_kinds[inp.argnum] == "ints":
            lines += _int_list(fname, inp.var, emitter.names.params[inp.argnum], emitter)
        elif inp.path == ():
            lines += _leaf_check(fname, inp.var, emitter.names.params[inp.argnum], inp.access,
                                 emitter)
    for static in tape.statics:
        if static.path == ():
            lines += _static_check(fname, _read(tape, emitter, static.access), static.access,
                                   static.value)
    return lines


def _read(tape: Tape, emitter: Emitter, access: str) -> str:
    """An access (``m.layers[0].W``) as the generated function writes it: checked to be one
    (``text.access_expr``), starting from the function's name for the argument."""
    return unparse(access_expr(access, dict(zip(tape.params, emitter.names.params))))


def _leaf_check(fname: str, var: Var, ref: str, access: str, emitter: Emitter) -> list[str]:
    """The buffered form compares the dtype with a dtype made once (``_float64``): the same
    test as ``!= xp.float64``, without making that dtype again on every call."""
    aval, ref = var.aval, identifier(ref)
    if aval.weak and aval.dtype.kind in "iu":       # an int kept at run time (ys.grad)
        tests = [f"type({ref}) is not int"]
        expected = "an int"
    elif aval.weak and aval.dtype.kind == "b":      # a linearization's saved Python bool
        tests = [f"type({ref}) is not bool"]
        expected = "a bool"
    elif aval.weak:
        number = "(int, float, complex)" if aval.dtype.kind == "c" else "(int, float)"
        tests = [f"not isinstance({ref}, {number})", f"isinstance({ref}, bool)"]
        expected = "a complex" if aval.dtype.kind == "c" else "a float"
    elif aval.sparse:       # a scipy.sparse matrix: a linearization's saved value (linearize.py)
        tests = [f"getattr({ref}, 'format', None) != {literal_text(aval.sparse)}",
                 f"{ref}.shape != {literal_text(aval.shape)}",
                 f"{ref}.dtype != {emitter.dtype_constant(aval.dtype)}"]
        expected = f"{aval.sparse} {_spec(var)}"
    else:
        tests = [not_an_array(emitter.device, ref, scalar_ok=not aval.ndim),
                 f"{ref}.shape != {literal_text(aval.shape)}",
                 f"{ref}.dtype != {emitter.dtype_constant(aval.dtype)}"]
        expected = _spec(var)
    return [_if(*tests), _raise_mismatch(fname, access, expected, ref)]


def _int_list(fname: str, var: Var, ref: str, emitter: Emitter) -> list[str]:
    """A list of ints the code only indexes with (frontend/index_lists.py): checked, then read
    as an array."""
    ref, n = identifier(ref), var.aval.shape[0]
    tests = [f"type({ref}) is not list", f"len({ref}) != {n}",
             f"any(type(i) is not int for i in {ref})"]
    return [_if(*tests), _raise_mismatch(fname, ref, f"a list of {n} ints", ref),
            f"{identifier(emitter.names[var])} = xp.array({ref}, "
            f"dtype={emitter.dtype_constant(var.aval.dtype)})"]


def _raise_mismatch(fname: str, access: str, expected: str, value: str) -> str:
    """``raise _mismatch('f_grad', 'm.W', 'float64[3]', W)``: the texts as literals."""
    texts = ", ".join(literal_text(t) for t in (fname, access, expected))
    return f"{INDENT}raise _mismatch({texts}, {value})"


def _static_check(fname: str, read: str, access: str, value: Any) -> list[str]:
    """``len(m.layers) != 2``, ``m.mode != 'train'``, a function by its name; nothing for
    other objects, which only ``ys.grad``'s cache can tell apart. ``read`` is the access as
    the function writes it, ``access`` as the message shows it."""
    if _checkable(value):
        test, expected = (f"{read} is not None" if value is None else
                          f"{read} != {literal_text(value)}", describe(value))
    elif isinstance(getattr(value, "__name__", None), str) and callable(value):
        expected = str.__str__(value.__name__)
        test = f"getattr({read}, '__name__', None) != {literal_text(expected)}"
    else:
        return []
    return [_if(test), _raise_mismatch(fname, access, expected, read)]


def _if(*tests: str) -> str:
    """``if a or b:``, wrapped after the first test where the line would pass 99 columns
    (between tests, never inside one: a test may hold a string with `` or `` in it)."""
    line = f"if {' or '.join(tests)}:"
    if len(line) + len(INDENT) <= 99 or len(tests) == 1:
        return line
    return f"if ({tests[0]}\n{INDENT * 2}or {' or '.join(tests[1:])}):"


def _struct_args(tape: Tape, emitter: Emitter, fname: str) -> list[str]:
    """Each structured argument, in path order: its layout and static leaves are checked, then
    each traced leaf is read once into a local name and checked (``W = m.W``)."""
    lines = []
    for argnum, kind in enumerate(tape.arg_kinds):
        if kind != "struct":
            continue
        facts = [(s.path, 0, s) for s in tape.layout + tape.statics if s.argnum == argnum]
        facts += [(i.path, 1, i) for i in tape.inputs if i.argnum == argnum]
        for _, is_leaf, fact in sorted(facts, key=lambda f: (_path_key(f[0]), f[1])):
            if not is_leaf:
                lines += _static_check(fname, _read(tape, emitter, fact.access), fact.access,
                                       fact.value)
                continue
            name = identifier(emitter.names[fact.var])
            lines.append(f"{name} = {_read(tape, emitter, fact.access)}")
            lines += _leaf_check(fname, fact.var, name, fact.access, emitter)
    return lines


def _path_key(path: tuple) -> tuple:
    """Sorts paths of mixed keys; a container comes before its items."""
    return tuple((0, k, "") if isinstance(k, int) else (1, 0, literal_text(k)) for k in path)


def _returns(tape: Tape, emitter: Emitter) -> tuple[list[str], list[str]]:
    """The returned names, and the statements that build each struct's ``{path: gradient}``."""
    def text(atom: Any) -> str:
        if isinstance(atom, Var) and atom in emitter.scalars.floats and not atom.aval.weak:
            numpy_type = emitter.dtype_constant(atom.aval.dtype, scalar=True)
            value = f"{numpy_type}({emitter.names[atom]})"     # a numpy scalar, as traced
        else:
            value = unparse(emitter.atom(atom))
        if isinstance(atom, Var) and atom in emitter.memory.delivered \
                and atom not in emitter.delivered_done:
            argnum, path = emitter.memory.delivered[atom]
            key = argnum if not path else (argnum, path)
            return f"_deliver(out, {literal_text(key)}, {value})"
        return value
    def tree(t: Any) -> str:        # a structured result (ir/structure.py) as nested tuples
        if isinstance(t, tuple):
            return "(" + ", ".join(map(tree, t)) + ("," if len(t) == 1 else "") + ")"
        return text(t)
    if tape.grads is None and tape.tangent is None:     # forward only: a tuple as a tuple
        return [tree(tape.result)], []
    out, build = [tree(tape.result)], []
    if tape.tangent is not None:            # forward mode: the value and its tangent
        return out + [tree(tape.tangent)], build
    for argnum, kind in enumerate(tape.arg_kinds):
        leaves = [(i, g) for i, g in zip(tape.inputs, tape.grads or []) if i.argnum == argnum]
        if kind == "struct":
            items = [f"{literal_text(i.path)}: {text(g)}" for i, g in leaves if g is not None]
            if not items and any(i.var.aval.is_float for i, _ in leaves):
                out.append("None")          # not asked for (wrt=)
                continue
            name = emitter.names.fresh("d" + emitter.names.params[argnum])
            build += _dict_lines(name, items)
            out.append(name)
        elif leaves and leaves[0][1] is not None:
            out.append(text(leaves[0][1]))
        else:
            out.append("None")
    return out, build


def _dict_lines(name: str, items: list[str]) -> list[str]:
    line = f"{name} = {{{', '.join(items)}}}"
    if len(line) + len(INDENT) <= 99:
        return [line]
    return [f"{name} = {{"] + [f"{INDENT}{item}," for item in items] + ["}"]
