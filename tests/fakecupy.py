"""A stand-in for cupy on a machine without a GPU: numpy, plus the kernels the fused printer
writes (codegen/cupy_form.py), evaluated with numpy broadcasting, plus CUDA graphs' control flow.

``ElementwiseKernel`` and ``ReductionKernel`` parse the CUDA C the printer emits, and only that:
the subset cupy_form.py's docstring states (``double t = e;``, ``y = e;``, ``y += e;``, ``//``
comments; float literals, names, parentheses, unary minus, ``+ - * /``, the functions of
``FUNCTIONS``). Anything else (an integer literal, a ternary, a cast, a function it does not
know, a preamble or an option other than the printer's) is an error here, so that the subset
stays small and each operation is numpy's, rounded as numpy rounds it: the fused module's
gradient can then be compared with the plain module's to the last bits. (On a device, only the
sums' order of additions and CUDA's libm differ: ulps.)

``cuda.Stream``, ``begin_capture``/``end_capture`` and ``Graph.launch`` stand for a CUDA
graph's capture and replay, for their control flow only: ``COUNTS`` says how many kernels were
launched, how many graphs captured and how many replayed. ``compare`` is the referee's test of
a module's results against numpy's (tools/fused_check.py, tools/fuzz_fused.py, the suite).
"""
from __future__ import annotations

import contextlib
import re
import types
from typing import Any

import numpy as np

from yota_s2s.codegen.cupy_form import OPTIONS, PREAMBLE

FUNCTIONS = {
    "tanh": np.tanh, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "fabs": np.abs, "log1p": np.log1p, "expm1": np.expm1,
    "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh,
    "atanh": np.arctanh, "asinh": np.arcsinh, "acosh": np.arccosh, "log2": np.log2,
    "log10": np.log10, "exp2": np.exp2, "atan2": np.arctan2, "hypot": np.hypot,
    "pow": np.power,
    # PREAMBLE's device functions (checked to be the printer's text, below)
    "sq": np.square, "maximum": np.maximum, "minimum": np.minimum,
}
_PREAMBLE_TEXT = (
    "__device__ double sq(double x) { return x * x; }\n"
    "__device__ double maximum(double a, double b) { return (a > b || a != a) ? a : b; }\n"
    "__device__ double minimum(double a, double b) { return (a < b || a != a) ? a : b; }\n")

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+|\d+)|([A-Za-z_]\w*)"
                    r"|(\+=|-=|\*=|/=|[-+*/(),=]))")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, at = [], 0
    text = text.rstrip()
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None or m.end() == at:
            raise SyntaxError(f"not in the printer's C subset: {text[at:]!r}")
        kind = "num" if m.group(1) else "name" if m.group(2) else "op"
        out.append((kind, m.group(m.lastindex)))
        at = m.end()
    return out


class _Expr:
    """A recursive-descent reader of one expression of the subset, evaluated on ``env``."""

    def __init__(self, tokens: list[tuple[str, str]], env: dict[str, Any]):
        self.tokens, self.at, self.env = tokens, 0, env

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise SyntaxError("the expression ends early")
        tok = self.tokens[self.at]
        if want is not None and tok[1] != want:
            raise SyntaxError(f"expected {want!r}, found {tok[1]!r}")
        self.at += 1
        return tok

    def expr(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            right = self.term()
            value = np.add(value, right) if op == "+" else np.subtract(value, right)
        return value

    def term(self):
        value = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()[1]
            right = self.unary()
            value = np.multiply(value, right) if op == "*" else np.divide(value, right)
        return value

    def unary(self):
        if self.peek() == "-":
            self.take()
            return np.negative(self.unary())
        return self.atom()

    def atom(self):
        kind, text = self.take()
        if kind == "num":
            if "." not in text and "e" not in text:
                raise SyntaxError(f"an integer literal, {text}: C would divide it as one")
            return np.float64(text)
        if kind == "name":
            if self.peek() == "(":
                self.take("(")
                args = [self.expr()]
                while self.peek() == ",":
                    self.take(",")
                    args.append(self.expr())
                self.take(")")
                if text not in FUNCTIONS:
                    raise SyntaxError(f"{text}() is not a function of the subset")
                return FUNCTIONS[text](*args)
            if text not in self.env:
                raise NameError(f"the kernel reads {text}, which it has not")
            return self.env[text]
        if text == "(":
            value = self.expr()
            self.take(")")
            return value
        raise SyntaxError(f"unexpected {text!r}")


def _evaluate(text: str, env: dict[str, Any]):
    reader = _Expr(_tokens(text), env)
    value = reader.expr()
    if reader.peek() is not None:
        raise SyntaxError(f"left over in {text!r}: {reader.peek()!r}")
    return value


def _params(text: str) -> list[str]:
    names = []
    for part in text.split(",") if text.strip() else []:
        words = part.split()
        if len(words) != 2 or words[0] != "float64":
            raise TypeError(f"a parameter the printer does not write: {part!r}")
        names.append(words[1])
    return names


def _check(preamble: str, options: tuple) -> None:
    if preamble != _PREAMBLE_TEXT or preamble != PREAMBLE or tuple(options) != OPTIONS:
        raise ValueError("the kernel's preamble or options are not the printer's")


def _array(value, name: str) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.dtype != np.float64:
        raise TypeError(f"{name}: a {value.dtype} array for a float64 parameter")
    if not isinstance(value, (np.ndarray, float, np.floating)):
        raise TypeError(f"{name}: {type(value).__name__} for a float64 parameter")
    return np.asarray(value, dtype=np.float64)


def _same_elements(name: str, ins: list, outs: list) -> None:
    """Where an input shares memory with an output, each thread's element of one is its
    element of the other; else the threads race (element i writes what element j reads), and
    numpy's statement-by-statement answer is not the device's: an error here."""
    for k, o in enumerate(outs):
        for a in ins + outs[:k]:
            if np.may_share_memory(a, o) and not (
                    a.__array_interface__["data"][0] == o.__array_interface__["data"][0]
                    and all(x == y for x, y, n in zip(a.strides, o.strides, o.shape) if n > 1)):
                raise RuntimeError(f"{name}: an input or output overlaps an output at other "
                                   "elements (the threads would race)")


COUNTS = {"launches": 0, "captures": 0, "replays": 0}


class ElementwiseKernel:
    def __init__(self, in_params: str, out_params: str, operation: str, name: str,
                 preamble: str = "", options: tuple = ()):
        _check(preamble, options)
        self.ins, self.outs, self.name = _params(in_params), _params(out_params), name
        self.lines = []
        for line in operation.split("\n"):
            line = line.split("//", 1)[0].strip()
            if not line:
                continue
            if not line.endswith(";") or line.count(";") != 1:
                raise SyntaxError(f"one statement a line, ending in ';': {line!r}")
            self.lines.append(line[:-1])

    def __call__(self, *args):
        if len(args) not in (len(self.ins), len(self.ins) + len(self.outs)):
            raise TypeError(f"{self.name}: {len(args)} arguments")
        COUNTS["launches"] += 1
        ins = [_array(a, n) for a, n in zip(args, self.ins)]
        given = list(args[len(self.ins):])
        shape = np.broadcast_shapes(*[a.shape for a in ins + given])
        if given and any(o.shape != shape for o in given):
            raise ValueError(f"{self.name}: an output's shape is not {shape}")
        outs = given or [np.empty(shape) for _ in self.outs]
        # cupy binds each parameter to its element by reference: an input that is a view of an
        # output (``t6 = O[t]`` in, ``O[t]`` out) reads what the kernel wrote there before
        env = {n: np.broadcast_to(a, shape) for n, a in zip(self.ins, ins)}
        env.update(zip(self.outs, outs))
        _same_elements(self.name, [env[n] for n in self.ins], outs)
        for line in self.lines:
            m = re.fullmatch(r"(double\s+)?([A-Za-z_]\w*)\s*(=|\+=|-=|\*=|/=)\s*(.+)", line)
            if m is None:
                raise SyntaxError(f"not a statement of the subset: {line!r}")
            local, name, op, text = m.groups()
            value = _evaluate(text, env)
            if local:
                if op != "=" or name in env:
                    raise SyntaxError(f"a local declared twice, or with {op}: {line!r}")
                env[name] = np.array(np.broadcast_to(value, shape))   # a copy: a number
                continue
            if name not in self.outs:
                raise SyntaxError(f"{name} is not an output: {line!r}")
            out = env[name]
            if op != "=":
                value = {"+=": np.add, "-=": np.subtract, "*=": np.multiply,
                         "/=": np.divide}[op](out, value)
            out[...] = value
        return outs[0] if len(outs) == 1 else tuple(outs)


class ReductionKernel:
    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str,
                 post_map_expr: str, identity: str, name: str, preamble: str = "",
                 options: tuple = ()):
        _check(preamble, options)
        self.ins, self.outs, self.name = _params(in_params), _params(out_params), name
        if len(self.outs) != 1 or reduce_expr != "a + b" or identity != "0" \
                or post_map_expr != f"{self.outs[0]} = a":
            raise SyntaxError("a reduction other than the printer's sum")
        self.map = map_expr

    def __call__(self, *args, axis=None, keepdims=False):
        if len(args) != len(self.ins):
            raise TypeError(f"{self.name}: {len(args)} arguments")
        COUNTS["launches"] += 1
        ins = [_array(a, n) for a, n in zip(args, self.ins)]
        shape = np.broadcast_shapes(*[a.shape for a in ins])
        env = {n: np.broadcast_to(a, shape) for n, a in zip(self.ins, ins)}
        value = np.array(np.broadcast_to(_evaluate(self.map, env), shape))
        return np.asarray(value.sum(axis=axis, keepdims=keepdims))


# -- the referee: a module's results against numpy's -------------------------------------

def leaves(value) -> list:
    """A result's arrays and numbers, in order (tuples, lists, dicts by key)."""
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in leaves(v)]
    if isinstance(value, dict):
        return [x for k in sorted(value, key=repr) for x in leaves(value[k])]
    return [value]


def compare(got, want, rtol: float = 1e-12) -> str | None:
    """Why ``got`` is not ``want`` to ``rtol`` relative (of the largest element), or None."""
    got, want = leaves(got), leaves(want)
    if len(got) != len(want):
        return f"{len(got)} results, numpy has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None or g is None:
            if (g is None) != (w is None):
                return f"result {i}: None on one side"
            continue
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"result {i}: {g.dtype}{list(g.shape)}, numpy {w.dtype}{list(w.shape)}"
        scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)) if w.size else 0.0
        if w.dtype.kind in "fc" and not np.allclose(g, w, rtol=rtol, atol=rtol * scale,
                                                    equal_nan=True):
            return f"result {i}: off by {float(np.max(np.abs(g - w))):.3g} (scale {scale:.3g})"
        if w.dtype.kind not in "fc" and not np.array_equal(g, w):
            return f"result {i} differs"
    return None


# -- CUDA graphs: capture and replay, their control flow only ---------------------------------

class Graph:
    """A captured graph. numpy runs the captured call's work when it is captured; launching
    the graph counts a replay (it cannot run the work again: the stand-in checks when capture
    and replay happen, not what a device computes)."""

    def launch(self, stream=None) -> None:
        if Stream.capturing:
            raise RuntimeError("a graph launched while capturing")
        COUNTS["replays"] += 1


class Stream:
    capturing = False
    current: "Stream | None" = None

    def __init__(self, non_blocking: bool = False):
        self.non_blocking = non_blocking

    def __enter__(self):
        self._previous, Stream.current = Stream.current, self
        return self

    def __exit__(self, *exc):
        Stream.current = self._previous

    def record(self) -> object:
        return object()

    def wait_event(self, event: object) -> None:
        pass

    def begin_capture(self, mode=None) -> None:
        if Stream.capturing or not self.non_blocking or Stream.current is not self:
            raise RuntimeError("capture begins once, on a non-blocking stream in use")
        Stream.capturing = True

    def end_capture(self) -> Graph:
        if not Stream.capturing:
            raise RuntimeError("end_capture without begin_capture")
        Stream.capturing = False
        COUNTS["captures"] += 1
        return Graph()


_NULL = Stream()


@contextlib.contextmanager
def _using_allocator(allocator):
    """numpy allocates on its own: nothing to route (the stand-in checks control flow)."""
    yield


class _Pool:
    def malloc(self, size: int) -> bytearray:
        return bytearray(size)


_POOL = _Pool()


def module() -> types.ModuleType:
    """A fresh ``cupy`` stand-in: numpy's names, the kernels, ``cuda.Stream``/``Graph``."""
    fake = types.ModuleType("cupy")
    fake.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    fake.ElementwiseKernel, fake.ReductionKernel = ElementwiseKernel, ReductionKernel
    fake.cuda = types.SimpleNamespace(Stream=Stream, Graph=Graph,
                                      get_current_stream=lambda: Stream.current or _NULL,
                                      using_allocator=_using_allocator)
    fake.get_default_memory_pool = lambda: _POOL
    return fake
