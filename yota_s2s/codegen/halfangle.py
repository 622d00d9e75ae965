"""Sine and cosine from one tangent of the half angle, inside cache-blocked chains (blocks.py).

numpy computes float64 ``sin`` and ``cos`` with the C library, one element at a time (numpy 1.25
turned their SIMD loops off: 4 ulp was too coarse for it; numpy PR 23925), while its float64
``tan`` runs a SIMD loop (SVML's, within 1 ulp) where numpy was built with one for this CPU
(x86-64 with AVX-512). Per 1e6 elements on the bench machine: sin 9 ms, cos 9 ms, tan 1.5 ms,
a multiply or a division 0.2 ms. A chain's sine and cosine of one array (``np.sin(x)`` forward
and its derivative ``np.cos(x)`` backward share the operand) then come from the identities of
the half angle:

    t = tan(x / 2)      d = 1 + t*t
    sin(x) = 2t / d     cos(x) = (2 - d) / d          (= (1 - t*t) / (1 + t*t))

Next to cos's zeros (``|d - 2| < 2**-7``: ``|cos x|`` below about 2**-8, 0.5% of uniformly
spread x), t's own rounding is a large part of ``2 - d``: there the cosine is numpy's, computed
for those elements only (``where=``). Written in the chain's loop as

    # sin and cos of x from one tan of the half angle, ... (halfangle.py)
    t_x = xp.multiply(0.5, x[k], out=buf5[:n])
    xp.tan(t_x, out=t_x)
    d_x = xp.multiply(t_x, t_x, out=buf6[:n])
    d_x += 1.0
    s = xp.add(t_x, t_x, out=buf1[:n])          # where np.sin(x) was
    s /= d_x
    ...
    gap = xp.subtract(d_x, 2.0, out=buf7[:n])   # where np.cos(x) was
    xp.abs(gap, out=gap)
    near = xp.less(gap, 0.0078125, out=buf8[:n])
    c = xp.subtract(2.0, d_x, out=buf2[:n])
    c /= d_x
    xp.cos(x[k], out=c, where=near)

a tan and a dozen cheap ufuncs, about 5 ms per 1e6 elements instead of 19 (one of the two
alone: 3.7 ms instead of 9). ``t`` and ``d`` are work arrays of one block each, live from the
first of an array's sin/cos statements to its last; ``gap`` and ``near`` only inside one; a
later array (or chain) reuses them once free.

Accuracy (tests/test_buffers.py, against long double, |x| from 1e-300 to 1e300): sin within
2.4 ulp (numpy's: 0.5 ulp); cos within 3e-16 absolute (numpy's: 6e-17) and 7e-14 relative
(3e-16 / 2**-8; numpy's own next to its zeros). Exact: sin(+-0) = +-0, cos(0) = 1,
cos(pi) = -1; |sin| <= 1, |cos| <= 1. For a subnormal x, ``x / 2`` rounds: sin within one
subnormal ulp. inf and nan give nan, inf with numpy's "invalid value" RuntimeWarning (naming
tan, not sin; FloatingPointError under ``np.errstate(invalid="raise")``, as for np.sin); with
``np.errstate(under="raise")``, |x| < 1.5e-154 raises where np.sin does not (``t*t``
underflows). ``t*t`` never overflows: no double is within 4e-19 of an odd multiple of pi/2 (the
worst case of argument reduction, Muller's "Elementary Functions"), so |t| < 3e18.

Where: the buffered form on numpy, in a chain (so never on cupy, whose sin and cos are fast
kernels, nor in the plain form, which keeps ``xp.sin`` and ``xp.cos`` for review), for float64
operands (float32 sin and cos are numpy SIMD loops already), and only where numpy's float64 tan
dispatches to a SIMD loop (``simd_tan``). The fuzzer (tests/test_fuzz.py, ``tools/fuzz.py
--block``) checks the buffered form against the plain one and finite differences.
"""
from __future__ import annotations

import ast
import functools

import numpy as np

from ..ir.tape import Stmt, Var
from ..text import comment, dotted
from .render import Comment

# None: where ``simd_tan()``; tests set True (or False) to write the form on any machine.
ENABLED: bool | None = None
_TRIG = (np.sin, np.cos)
NEAR = 2.0 ** -7         # |d - 2| below this: |cos x| below about 2**-8, numpy's cos there


@functools.cache
def simd_tan() -> bool:
    """Does numpy's float64 tan run a SIMD loop on this machine? Its CPU dispatch says which of
    the loops compiled in (``available``) this CPU runs (``current``): a SIMD target (x86-64:
    ``X86_V4``; ``AVX512_SKX`` in older numpy) or ``baseline(...)``, the C library's tan."""
    try:
        from numpy.lib.introspect import opt_func_info
        info = opt_func_info(func_name="^tan$", signature="float64")
        current = info["tan"]["dd"]["current"]
    except (ImportError, KeyError, TypeError):
        return False
    return bool(current) and not current.startswith("baseline")


def applies() -> bool:
    return simd_tan() if ENABLED is None else ENABLED


def trig_operand(stmt: Stmt) -> Var | None:
    """The float64 array whose sine or cosine ``stmt`` computes into planned memory, or None."""
    if stmt.prim.fn not in _TRIG or len(stmt.args) != 1 or stmt.params or len(stmt.outs) != 1:
        return None
    x = stmt.args[0]
    if not isinstance(x, Var) or x.aval.dtype != np.float64 or stmt.out.aval.dtype != np.float64:
        return None
    return x


def rewrite(em, chain, written: list[tuple[Stmt, list[ast.stmt]]]) -> set[int]:
    """Rewrites the chain's ``xp.sin``/``xp.cos`` statements in ``written`` (in place) as above;
    returns the work arrays (slots) they use, to be read a block at a time."""
    sites: dict[Var, list[int]] = {}
    for i, (s, nodes) in enumerate(written):
        x = trig_operand(s)
        if x is not None and _written_call(nodes) is not None:
            sites.setdefault(x, []).append(i)
    used: set[int] = set()
    busy: list[tuple[int, tuple[int, int]]] = []        # (last site, pair) of pairs in use
    for x, at in sorted(sites.items(), key=lambda item: item[1][0]):
        free = [b for b in busy if b[0] < at[0]]
        if free:
            busy.remove(free[0])
            pair = free[0][1]
        else:
            pair = _slots(em, chain, len(busy))
        busy.append((at[-1], pair))
        used.update(pair)
        if any(written[i][0].prim.fn is np.cos for i in at):
            used.update(_slots(em, chain, "near"))
        _rewrite_sites(em, chain, x, [written[i] for i in at], pair)
    return used


def _slots(em, chain, key) -> tuple[int, int]:
    """One-block work arrays of the chain's block shape: the ``key``-th pair for t and d, or
    (``"near"``) a float64 and a bool one for the cosine's test next to its zeros. An earlier
    chain's of the same block shape are free (its loop is over); else two new ones."""
    shape = (chain.rows, *chain.shape[1:])
    found = em.trig_slots.setdefault(shape, {"pairs": []})
    if key == "near":
        if "near" not in found:
            found["near"] = (em.add_slot(chain.shape, np.dtype(np.float64), ["gap"]),
                             em.add_slot(chain.shape, np.dtype(bool), ["near"]))
        return found["near"]
    pairs = found["pairs"]
    while len(pairs) <= key:
        pairs.append(tuple(em.add_slot(chain.shape, np.dtype(np.float64), []) for _ in range(2)))
    return pairs[key]


def _written_call(nodes: list[ast.stmt]) -> ast.Call | None:
    """The ``xp.sin(x, out=...)`` of a statement written into planned memory (out_forms.py):
    ``s = xp.sin(x, out=buf1)`` or, in place, ``xp.sin(x, out=x)``."""
    if len(nodes) != 1:
        return None
    node = nodes[0]
    call = node.value if isinstance(node, (ast.Assign, ast.Expr)) else None
    if not isinstance(call, ast.Call) or len(call.args) != 1 \
            or [k.arg for k in call.keywords] != ["out"]:
        return None
    if isinstance(node, ast.Expr) and not isinstance(call.keywords[0].value, ast.Name):
        return None
    return call


def _rewrite_sites(em, chain, x: Var, entries: list[tuple[Stmt, list[ast.stmt]]], pair) -> None:
    t_slot, d_slot = (em.slot_names[k] for k in pair)
    name = em.names[x]
    t, d = em.names.fresh(f"t_{name}"), em.names.fresh(f"d_{name}")
    em.memory.slots[pair[0]][2].append(t)
    em.memory.slots[pair[1]][2].append(d)
    what = " and ".join(dict.fromkeys("sin" if s.prim.fn is np.sin else "cos" for s, _ in entries))
    head = [Comment(comment(f"{what} of {name} from one tan of the half angle, a SIMD loop "
                            "(numpy's float64 sin and cos")),
            Comment(comment(f"are not): t = tan({name}/2), d = 1 + t*t, sin = 2t/d, "
                            "cos = (2 - d)/d (halfangle.py)")),
            _assign(t, _xp("multiply", _number(em, 0.5), em.atom(x), out=ast.Name(t_slot))),
            ast.Expr(_xp("tan", ast.Name(t), out=ast.Name(t))),
            _assign(d, _xp("multiply", ast.Name(t), ast.Name(t), out=ast.Name(d_slot))),
            ast.AugAssign(ast.Name(d), ast.Add(), _number(em, 1.0))]
    for n, (s, nodes) in enumerate(entries):
        node = nodes[0]
        out = _written_call(nodes).keywords[0].value
        result = node.targets[0].id if isinstance(node, ast.Assign) else out.id
        if s.prim.fn is np.sin:     # 2t / d
            lines = [_as(node, _xp("add", ast.Name(t), ast.Name(t), out=out)),
                     ast.AugAssign(ast.Name(result), ast.Div(), ast.Name(d))]
            said = f"sin of {name} = 2t/d"
        else:
            lines = _cosine(em, chain, s, node, out, result, d)
            said = f"cos of {name} = (2 - d)/d; numpy's cos next to its zeros, |d - 2| < 2**-7"
        nodes[:] = (head if n == 0 else []) + [Comment(comment(said + " (halfangle.py)"))] \
            + lines


def _number(em, value: float) -> ast.expr:
    """A float64 number these statements read: the module's 0-d array of it where the function
    allocates no array (``Emitter.number_array``)."""
    if em.numbers_in_arrays:
        return ast.Name(em.number_array(value, np.dtype(np.float64)))
    return ast.Constant(value)


def _cosine(em, chain, s: Stmt, node: ast.stmt, out: ast.expr, result: str,
            d: str) -> list[ast.stmt]:
    """``(2 - d) / d``, then ``xp.cos`` where that is near 0 (``|d - 2| < NEAR``: ``|cos x|``
    below about 2**-8), where t's own rounding would be a large part of it: there the result is
    numpy's, elsewhere within 3e-16 / 2**-8 = 8e-14 of it, relative. Written over the operand
    (in place), the cosines go into ``gap`` first, then over the result."""
    x = s.args[0]
    gap_slot, near_slot = (em.slot_names[k] for k in _slots(em, chain, "near"))
    gap, near = em.names.fresh("gap"), em.names.fresh("near")
    first = _xp("subtract", _number(em, 2.0), ast.Name(d), out=out)
    lines = [_assign(gap, _xp("subtract", ast.Name(d), _number(em, 2.0), out=ast.Name(gap_slot))),
             ast.Expr(_xp("abs", ast.Name(gap), out=ast.Name(gap))),
             _assign(near, _xp("less", ast.Name(gap), _number(em, NEAR), out=ast.Name(near_slot)))]
    where = [ast.keyword("where", ast.Name(near))]
    cos_x = _xp("cos", em.atom(x), out=ast.Name(result))
    cos_x.keywords += where
    body = [_as(node, first), ast.AugAssign(ast.Name(result), ast.Div(), ast.Name(d))]
    if em.memory.over.get(s.out) is not x:
        return lines + body + [ast.Expr(cos_x)]
    cos_x.keywords[0].value = ast.Name(gap)         # in place: x is gone once the result is
    copy = ast.Call(dotted("xp.copyto"), [ast.Name(result), ast.Name(gap)], where)
    return lines + [ast.Expr(cos_x)] + body + [ast.Expr(copy)]


def _as(node: ast.stmt, call: ast.Call) -> ast.stmt:
    """``call`` written as ``node`` was: bound to its name, or alone (in place)."""
    return ast.Assign(node.targets, call, lineno=0) if isinstance(node, ast.Assign) \
        else ast.Expr(call)


def _assign(name: str, value: ast.expr) -> ast.stmt:
    return ast.Assign([ast.Name(name)], value, lineno=0)


def _xp(fn: str, *args: ast.expr, out: ast.expr) -> ast.Call:
    return ast.Call(dotted(f"xp.{fn}"), list(args), [ast.keyword("out", out)])
