"""Random straight-line numpy programs for the fuzzer (tests/test_fuzz.py, tools/fuzz.py).

``generate(seed)`` writes a program as Python source: a function ``f`` of one to three float
arrays, made of elementwise ops and ufuncs, broadcasting arithmetic, reductions, products,
indexing, joining and reshaping, ``np.where``, ``clip``, in-place updates, loops (trip counts 1
to 20: carried values, per-step indexing, ``out[t] =`` rows, nested loops, ``while``, list append
and ``np.stack``, branches on data inside the body) and helper functions, ending in a scalar
loss; in RECURRENT of them an RNN-like loop over a stack of inputs (``Gen.recurrent``: states of
512 elements or more, where the buffered form plans loop bodies, or a few elements); in
SHAPES_MORE of them one or two statements of ``Gen.more`` (loops carrying only running sums,
rows ``O[t]`` read in the steps, float16 and float32 arguments with literals, min and max with
ties, boolean masks, powers and ``np.abs`` at 0, a matrix argument read once whose gradient is
one vector in every row); in SWAPPED of the RNN-like loops the input's product comes second in
the pre-activation's sum; in LISTS of them a loop appends to lists and reads them in the same
step by indices that move with the step (``Gen.listed``: ``hs[-1]``, ``hs[-2]``,
``hs[len(hs) - 1]``, ``hs[t // 2]``); in ALIKE of them two or three more arguments used the
same way, whose gradients are one expression (``Gen.alike``). Each
statement is run on the example arguments as it is chosen, so the generator knows every
value: it only writes a statement numpy accepts, whose
values stay finite and moderate, and that keeps clear of non-differentiable points (no ties
between different elements in max/min/maximum/where/clip/masks, ties between copies of one
element only; no zero in abs but one that stays zero; logs of positive values) by a margin much
larger than the finite-difference step. ``Program.without`` drops statements (for shrinking).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

import numpy as np

SHAPES = [(), (1,), (3,), (4,), (1, 3), (3, 1), (3, 4), (2, 3), (1, 1), (2, 3, 4), (2, 1, 4)]
MARGIN = 0.02          # distance kept from every kink and tie
LIMIT = 30.0           # largest magnitude a value may reach
MAX_SIZE = 48          # largest number of elements of any value
RECURRENT = 0.3        # share of programs with an RNN-like loop (Gen.recurrent)
STENCIL = 0.1          # share of programs with a loop over a periodic field (Gen.stencil)
SHAPES_MORE = 0.3      # share of programs with one or two statements of Gen.more
SWAPPED = 0.3          # share of RNN-like loops whose input product comes second in the sum
LISTS = 0.15           # share of programs with a loop reading a list it appends to (Gen.listed)
ALIKE = 0.2            # share of programs with arguments used the same way (Gen.alike)
BRANCHES = 0.2         # share of programs with an if on a reduction of data (Gen.branches)
WHILES = 0.0           # share of programs with a while on a reduction of data (Gen.whiles;
                       # tools/fuzz.py --whiles: none by default, so every seed's program stays)
EXITS = 0.0            # share of programs with a loop left on data: break, continue, an early
                       # return, an int counter beside a data test (Gen.exits; tools/fuzz.py
                       # --exits: none by default)
INPLACE = 0.0          # share of programs with an in-place write on a value a loop carries, a
                       # while or an if arm updates, then made anew (Gen.carried_writes;
                       # tools/fuzz.py --inplace: none by default)
HELPERS = {            # helper functions a program may define and call: source, call
    "h0": ("def h0(a, b):\n    t = np.tanh(a) + b\n    return t * t", "h0({a}, {b})"),
    "h1": ("def h1(a, s=0.5):\n    return np.sin(a) * s + a", "h1({a}, s={s})"),
    "h2": ("def h2(a, b):\n    return np.sum(a * a, axis=-1) + np.mean(b)", "h2({a}, {b})"),
    "h3": ("def h3(a, b):\n    return h1(a * b, 0.25) - b", "h3({a}, {b})"),
}


# the families a program may have, in the order they are drawn: (name, share of programs, the
# label of its own random stream, the offset of its numpy generator's seed); each has its own
# streams, so adding one leaves the programs of the others as they were
FAMILIES = [("recurrent", RECURRENT, "cell", 2), ("stencil", STENCIL, "grid", 4),
            ("more", SHAPES_MORE, "shapes", 5), ("lists", LISTS, "listed", 6),
            ("alike", ALIKE, "alike args", 7), ("branches", BRANCHES, "branch on data", 8),
            ("whiles", WHILES, "while on data", 9), ("exits", EXITS, "exit on data", 10),
            ("inplace", INPLACE, "carried write", 11)]
FAMILY_METHODS = {"lists": "listed", "inplace": "carried_writes"}        # Gen's method where its name is not the family's


@dataclass(frozen=True)
class Stmt:
    lines: tuple[str, ...]     # source lines, relative to the function body's indentation
    defines: str
    reads: frozenset[str]


@dataclass(frozen=True)
class Program:
    seed: int
    dtype: str
    params: tuple[str, ...]
    args: tuple[np.ndarray, ...]
    stmts: tuple[Stmt, ...] = ()
    terms: tuple[tuple[str, frozenset], ...] = ()   # loss terms: text, names read

    def source(self) -> str:
        body = [f"    {line}" for s in self.stmts for line in s.lines]
        sig = ", ".join(f"{n} {_type(a)}" for n, a in zip(self.params, self.args))
        parts, text = ["import numpy as np", f"# seed {self.seed}: f({sig})"], "\n".join(body)
        for name in sorted(HELPERS, reverse=True):     # h3 calls h1: h3 first
            if f"{name}(" in text:
                parts += ["", HELPERS[name][0], ""]
                text += HELPERS[name][0]
        loss = " + ".join(t for t, _ in self.terms) or "np.sum(x0)"
        parts += ["", f"def f({', '.join(self.params)}):", *body, f"    return {loss}", ""]
        return "\n".join(parts)

    def without(self, drop: set[int]) -> Program:
        """The program less statements ``drop`` and everything that reads what only they made."""
        defined, kept = set(self.params), []
        for i, s in enumerate(self.stmts):
            if i not in drop and s.reads <= defined:
                kept.append(s)
                defined.add(s.defines)
        terms = tuple(t for t in self.terms if t[1] <= defined)
        return replace(self, stmts=tuple(kept), terms=terms)


class Skip(Exception):
    """No value fits the statement being chosen: choose another."""


def fmt(x: float) -> str:
    return repr(round(float(x), 3))


class Gen:
    def __init__(self, seed: int):
        self.seed, self.r = seed, random.Random(seed)
        self.swapped = False            # (generate draws it)
        self.dtype = np.float32 if self.r.random() < 0.25 else np.float64
        self.env: dict = {"np": np}
        for text, _ in HELPERS.values():
            exec(text, self.env)
        self.vals: dict[str, object] = {}
        self.stmts: list[Stmt] = []
        self.n = 0
        self.loop_losses: set[str] = set()     # the values Gen.recurrent and Gen.stencil defined

    # -- values ---------------------------------------------------------------------------
    def pick(self, ok=lambda v: True) -> str | None:
        names = [k for k, v in self.vals.items() if ok(v)]
        if not names:
            return None
        if self.r.random() < 0.5:               # prefer recent values: deeper programs
            return names[-1 - int(self.r.random() ** 2 * min(len(names), 4))]
        return self.r.choice(names)

    def arr(self, ok=lambda v: True) -> str:
        """An array value with ``ok``; Skip (this statement) when there is none."""
        name = self.pick(lambda v: isinstance(v, np.ndarray) and ok(v))
        if name is None:
            raise Skip
        return name

    def new(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def lit(self, lo=-1.5, hi=1.5) -> str:
        x = self.r.uniform(lo, hi)
        return fmt(x if abs(x) > 0.1 else 0.5)

    def const(self, shape: tuple) -> str:
        n = int(np.prod(shape))
        lo, hi = self.lit(-1.2, -0.1), self.lit(0.2, 1.3)
        text = f"np.linspace({lo}, {hi}, {n}, dtype=x0.dtype)"
        return f"{text}.reshape({shape})" if len(shape) != 1 else text

    def between(self, v: np.ndarray) -> float | None:
        """A threshold at least MARGIN away from every element of v."""
        xs = np.unique(np.asarray(v, dtype=np.float64))
        gaps = [(a + b) / 2 for a, b in zip(xs[:-1], xs[1:]) if b - a > 2 * MARGIN + 0.002]
        return float(fmt(self.r.choice(gaps))) if gaps else None

    def accept(self, lines: list[str], name: str, limit: float = LIMIT) -> bool:
        env = dict(self.env, **self.vals)
        try:
            with np.errstate(all="raise"):
                exec("\n".join(lines), env)
        except Exception:
            return False
        v = env.get(name)
        ok = isinstance(v, (float, np.floating)) or (isinstance(v, np.ndarray) and v.dtype.kind == "f"
                                     and v.size <= MAX_SIZE and v.ndim <= 3)
        if not ok or np.size(v) == 0 or not np.all(np.isfinite(v)) or np.max(np.abs(v)) > limit:
            return False
        for k in self.vals:                 # an in-place block may only change what it defines
            if k != name and not _same(self.vals[k], env[k]):
                return False
        reads = set(re.findall(r"\b[vx]\d+\b", "\n".join(lines))) & set(self.vals) - {name}
        self.vals[name] = v
        self.stmts.append(Stmt(tuple(lines), name, frozenset(reads)))
        return True

    # -- statements -----------------------------------------------------------------------
    def unary(self) -> bool:
        a = self.arr()
        v = self.vals[a]
        m, mn, lo = np.max(np.abs(v)), np.min(np.abs(v)), np.min(v)
        ops = ["np.sin({})", "np.cos({})", "np.tanh({})", "np.arctan({})", "np.square({})",
               "-{}", "{} ** 2", "np.negative({})", "{} * {}", "np.sinh({})"]
        if m < 3:
            ops += ["np.exp({})", "np.expm1({})", "np.cosh({})"]
        if lo > 0.1:
            ops += ["np.log({})", "np.sqrt({})", "{} ** 0.5", "np.log1p({})", "{} ** 1.5"]
        if mn > 0.05:
            ops += ["np.abs({})", "abs({})", "np.cbrt({})"]
        if m < 0.9:
            ops += ["np.arcsin({})", "np.arccos({})", "np.arctanh({})"]
        if mn > 0.2:
            ops += ["np.reciprocal({})", "1.0 / {}"]
        op = self.r.choice(ops)
        name = self.new()
        return self.accept([f"{name} = {op.format(a, a)}"], name)

    def operand(self, a: str) -> str:
        """A second operand for ``a``: a broadcast-compatible value, a literal or a constant."""
        shape = np.shape(self.vals[a])
        k = self.r.random()
        if k < 0.55:
            def fits(v):
                try:
                    return len(np.broadcast_shapes(shape, np.shape(v))) <= 3
                except ValueError:
                    return False
            b = self.pick(fits)
            if b is not None:
                return b
        if k < 0.8 or not shape:
            return self.lit()
        return self.const(shape[self.r.randrange(len(shape)):])

    def binary(self) -> bool:
        a = self.arr() if self.r.random() < 0.8 else self.pick()
        b = self.operand(a)
        if self.r.random() < 0.5:
            a, b = b, a
        name = self.new()
        env = dict(self.env, **self.vals)
        try:
            va, vb = (eval(t, env) for t in (a, b))
        except Exception:
            return False
        d = np.asarray(va, np.float64) - np.asarray(vb, np.float64)
        ops = ["{} + {}", "{} - {}", "{} * {}", "np.add({}, {})", "np.multiply({}, {})",
               "np.subtract({}, {})"]
        if np.min(np.abs(vb)) > 0.2:
            ops += ["{} / {}", "np.divide({}, {})"]
        if np.min(np.abs(d)) > MARGIN:
            ops += ["np.maximum({}, {})", "np.minimum({}, {})"]
        if np.min(np.asarray(va) ** 2 + np.asarray(vb) ** 2) > 0.05:
            ops += ["np.arctan2({}, {})"]
        if np.min(va) > 0.1 and np.max(np.abs(vb)) < 2:
            ops += ["{} ** {}", "np.power({}, {})"]
        op = self.r.choice(ops)
        return self.accept([f"{name} = {op.format(a, b)}"], name)

    def reduce(self) -> bool:
        a = self.arr(lambda v: v.ndim >= 1)
        v = self.vals[a]
        fn = self.r.choice(["sum", "sum", "mean", "max", "min", "prod"])
        if fn == "prod" and not (np.min(np.abs(v)) > 0.3 and np.max(np.abs(v)) < 2):
            fn = "sum"
        axes = [None] + list(range(-v.ndim, v.ndim)) + ([(0, v.ndim - 1)] if v.ndim >= 2 else [])
        axis = self.r.choice(axes)
        if fn in ("max", "min"):                # no ties along the reduced axes
            ax = list(range(v.ndim)) if axis is None else list(np.atleast_1d(axis))
            moved = np.moveaxis(v, ax, list(range(-len(ax), 0)))
            gaps = np.diff(np.sort(moved.reshape(moved.shape[:v.ndim - len(ax)] + (-1,))), axis=-1)
            if np.min(gaps, initial=1.0) < MARGIN:
                return False
        opts = [] if axis is None else [f"axis={axis}"]
        if self.r.random() < 0.4:
            opts.append("keepdims=True")
        name = self.new()
        if self.r.random() < 0.5:
            text = f"np.{'amax' if fn == 'max' and self.r.random() < 0.2 else fn}({', '.join([a] + opts)})"
        else:
            text = f"{a}.{fn}({', '.join(opts)})"
        return self.accept([f"{name} = {text}"], name)

    def product(self) -> bool:
        a = self.arr(lambda v: v.ndim >= 1)
        v, name = self.vals[a], self.new()
        s = v.shape
        k = self.r.randrange(8)
        if k == 0:
            text = f"{a} @ {a}.T" if v.ndim == 2 else f"{a} @ {a}"
        elif k == 1 and v.ndim <= 2:
            text = f"np.dot({a}, {self.const((s[-1], self.r.choice([1, 2, 3])))})"
        elif k == 2:
            b = self.pick()
            text = f"np.outer({a}, {b})"
        elif k == 3:
            b = self.arr(lambda w: w.ndim >= 1 and w.shape[-1] == s[-1])
            text = f"np.inner({a}, {b})"
        elif k == 4 and v.ndim == 2:
            b = self.arr(lambda w: w.ndim == 2 and w.shape[0] == s[1])
            text = f"np.einsum('ij,jk->ik', {a}, {b})"
        elif k == 5:
            sub = "ijk"[:v.ndim]
            out = "".join(self.r.sample(sub, self.r.randrange(v.ndim + 1)))
            text = f"np.einsum('{sub},{sub}->{out}', {a}, {a})"
        elif k == 6:
            b = self.arr(lambda w: w.ndim >= 1 and w.shape[0] == s[-1] and w.ndim <= 2)
            text = f"{a} @ {b}"
        else:
            text = f"np.matmul({a}, {self.const((s[-1],))})"
        return self.accept([f"{name} = {text}"], name)

    def index(self) -> bool:
        a = self.arr()
        v, name = self.vals[a], self.new()
        if v.ndim == 0:
            key = self.r.choice(["None", "()", "...", "None, None", f"{a} > {fmt(v - 0.5)}"])
        else:
            n = v.shape[0]
            keys = [str(self.r.randrange(-n, n)), f"{self.r.randrange(n)}:", "::-1", "None",
                    ":, None", f"..., {self.r.randrange(-v.shape[-1], v.shape[-1])}",
                    f"np.array({[self.r.randrange(n) for _ in range(3)]})",
                    f"{[self.r.randrange(n) for _ in range(2)]}", "::2"]
            if v.ndim >= 2:
                keys += [f":, {self.r.randrange(v.shape[1])}", f"1:, :{v.shape[1] - 1 or 1}",
                         f"{self.r.randrange(n)}, ::-1"]
            t = self.between(v)
            if t is not None:
                keys += [f"{a} > {t}", f"{a} < {t}"]
            key = self.r.choice(keys)
        return self.accept([f"{name} = {a}[{key}]"], name)

    def shape_op(self) -> bool:
        a = self.arr()
        v, name = self.vals[a], self.new()
        s, k = v.shape, self.r.randrange(9)
        if k == 0:
            text = f"{a}.reshape(-1)" if self.r.random() < 0.5 else f"np.reshape({a}, ({v.size}, 1))"
        elif k == 1:
            text = f"{a}.T" if self.r.random() < 0.6 else f"np.transpose({a})"
        elif k == 2 and v.ndim >= 1:
            ax = self.r.randrange(-v.ndim, v.ndim)
            other = self.r.choice([f"np.cos({a})", a, f"np.arccos(0.5 * np.tanh({a}))",
                                   f"np.arctan2(1.5, {a})", f"{a} * 2.0"])
            text = f"np.concatenate([{a}, {other}], axis={ax})"
        elif k == 3:
            ax = self.r.randrange(v.ndim + 1)
            text = f"np.stack([np.sin({a}), {a}], axis={ax})"
        elif k == 4:
            text = f"np.hstack([{a}, np.tanh({a})])" if v.ndim else f"np.hstack([np.sin({a}), {a}])"
        elif k == 5:
            text = f"np.tile({a}, {self.r.choice([2, (2, 1)])})"
        elif k == 6:
            text = f"np.expand_dims({a}, {self.r.randrange(v.ndim + 1)})"
        elif k == 7 and 1 in s:
            text = f"np.squeeze({a})"
        else:
            text = f"{a}.ravel()" if self.r.random() < 0.5 else f"np.vstack([{a}, {a}])"
        return self.accept([f"{name} = {text}"], name)

    def select(self) -> bool:
        a = self.arr(lambda v: v.ndim >= 1)
        t, name = self.between(self.vals[a]), self.new()
        if t is None:
            return False
        if self.r.random() < 0.5:
            text = f"np.where({a} > {t}, {a}, {self.operand(a)})"
        else:
            u = self.between(self.vals[a])
            lo, hi = sorted([t, u]) if u is not None and u != t else self.r.choice([(t, None), (None, t)])
            text = f"np.clip({a}, {lo}, {hi})" if self.r.random() < 0.7 else f"{a}.clip({lo}, {hi})"
        return self.accept([f"{name} = {text}"], name)

    def inplace(self) -> bool:
        a = self.arr(lambda v: v.ndim >= 1)
        v, name, k = self.vals[a], self.new(), self.r.randrange(5)
        if k == 0:       # a fresh array filled row by row in a loop
            n = self.r.choice([2, 3])
            lines = [f"{name} = np.zeros(({n},) + {a}.shape, dtype={a}.dtype)",
                     f"for i in range({n}):",
                     f"    {name}[i] = np.sin({a}) * (i + 1.0) + {self.lit()}"]
        elif k == 1:     # a copy with a row overwritten, another updated
            i = self.r.randrange(-v.shape[0], v.shape[0])
            lines = [f"{name} = {a}.copy()" if self.r.random() < 0.5 else f"{name} = {a} * 1.0",
                     f"{name}[{i}] = np.tanh({a}[{i}]) * {self.lit()}",
                     f"{name}[{self.r.randrange(v.shape[0])}] += {self.lit()}"]
        elif k == 2:     # an augmented assignment on a fresh value
            op = self.r.choice(["+=", "-=", "*="])
            lines = [f"{name} = {a} + {self.lit()}", f"{name} {op} {self.operand(a)}"]
        elif k == 3:     # a write through a view
            lines = [f"{name} = {a} * {self.lit()}", f"{name}.T[-1] = np.cos({a}.T[-1])"]
        else:            # a loop carrying a value
            n = self.r.choice([2, 3])
            lines = [f"{name} = {a} * {self.lit()}", f"for i in range({n}):",
                     f"    {name} = np.tanh({name} * 0.9 + {a}) + {self.lit(-0.3, 0.3)}"]
        return self.accept(lines, name)

    def trips(self) -> int:
        """A trip count from 1 to 20, half of them 8 or more (long enough for a loop region)."""
        return self.r.randint(8, 20) if self.r.random() < 0.5 else self.r.randint(1, 7)

    def loop(self) -> bool:
        """A loop defining one value: carried, indexed per step, written row by row, nested."""
        a = self.arr(lambda v: v.ndim >= 1)
        v, name, n, k = self.vals[a], self.new(), self.trips(), self.r.randrange(8)
        w, c = self.lit(0.3, 0.9), self.lit(-0.5, 0.5)
        m = v.shape[0]
        if k == 0:       # a carried value, the index used as a value
            lines = [f"{name} = {a} * {self.lit()}", f"for t in range({n}):",
                     f"    {name} = np.tanh({name} * {w} + {a}) + {c} * t / {n}"]
        elif k == 1:     # a per-step row, the index wrapped around the first axis
            key = self.r.choice([f"t % {m}", f"(t + 1) % {m}", f"{m - 1} - t % {m}"])
            lines = [f"{name} = np.sin({a}[0]) * {w}", f"for t in range({n}):",
                     f"    {name} = np.sin({name} * {w} + {a}[{key}]) + {c}"]
        elif k == 2:     # out[t] = ...: a row per step (a sum when the rows would be too big)
            row = n * v.size <= MAX_SIZE
            shape = f"({n},) + {a}.shape" if row else f"{n}"
            lines = [f"{name} = np.zeros({shape}, dtype={a}.dtype)", f"h = {a} * {w}",
                     f"for t in range({n}):", f"    h = np.cos(h * {w} + {c})",
                     f"    {name}[t] = {'h * (t + 1.0)' if row else 'np.sum(h * h)'}"]
        elif k == 3:     # nested loops
            inner = self.r.randint(1, max(1, 40 // n))
            lines = [f"{name} = {a} * {w}", f"for t in range({n}):", f"    for j in range({inner}):",
                     f"        {name} = np.tanh({name} * {w} + {c} * (t - j)) + 0.1 * {a}"]
        elif k == 4:     # a branch on the data at every step
            return self.branching_loop(a, name, n, w, c)
        elif k == 5:     # list append, then np.stack; writes into the stack or a row, rows read
            n = max(n, self.r.randint(8, 12))      # mostly long enough for a region
            j, u = self.r.randrange(n), self.lit()
            step = [f"    h = np.sin(h * {w} + {c} * t)", f"    hs.append({self.r.choice(['h', 'np.sum(h)'])})"]
            lines = ["hs = []", f"h = {a} * {w}", f"for t in range({n}):",
                     *(step if self.r.random() < 0.7 else step[::-1]),
                     f"{name} = np.stack(hs)" if n * v.size <= MAX_SIZE else f"{name} = np.stack(hs).sum(axis=0)"]
            after = self.r.randrange(5)
            if after == 4:      # h after the loop may be hs[-1] (or hs[0] the start): one array
                lines += [f"h *= {u}", f"{name} = {name} + hs[-1] + hs[0] * h"]
            if after == 1:      # np.stack copies: the write does not reach hs[j]
                lines += [f"{name}[{j if n * v.size <= MAX_SIZE else 0}] *= {u}", f"{name} = {name} * hs[{j}]"]
            elif after == 2:    # a row changed after stacking: the stack keeps the old row
                lines += [f"hs[{j}] *= {u}", f"{name} = {name} + hs[{j}]"]
            elif after == 3:    # a row changed before stacking
                lines.insert(-1, f"hs[{j}] *= {u}")
        elif k == 6:     # a while loop with a static trip count
            lines = [f"{name} = {a} * {w}", "t = 0", f"while t < {n}:",
                     f"    {name} = np.sin({name} * {w} + {a}) * {c} + {w}",
                     "    t += 1"]
        else:            # over the first axis: enumerate, zip, the previous row, matrix rows
            form = 3 if v.ndim == 2 and self.r.random() < 0.5 else self.r.randrange(3)
            if form == 0:
                lines = [f"{name} = np.cos({a}[0]) * {w}", f"for t, row in enumerate({a}):",
                         f"    {name} = {name} * {w} + np.sin(row) * (t + 1.0) * {c}"]
            elif form == 1:
                lines = [f"{name} = {a}[0] * {c}", f"for row, other in zip({a}, {a}[::-1]):",
                         f"    {name} = np.tanh({name} + row * other * {w})"]
            elif form == 2:
                lines = [f"{name} = {a}[0] * {w}", f"for t in range(1, {m}):",
                         f"    {name} = {name} * {w} + {a}[t] * {a}[t - 1]"]
            else:       # an RNN: a (1, p) row of a stack times a matrix per step (passes/stacked.py)
                rows, weights, n = self.new(), self.new(), max(n, 8)
                lines = [f"{rows} = np.concatenate([{a}[:, None, :]] * {-(-n // m)})[:{n}]",
                         f"{weights} = np.cos({a}.T @ {a}) * {w}", f"{name} = {a}[:1] * {c}",
                         f"for t in range({n}):",
                         f"    {name} = np.tanh({rows}[t] @ {weights} + {name} * {w})"]
        return self.accept(lines, name)

    def branching_loop(self, a: str, name: str, n: int, w: str, c: str) -> bool:
        """``if np.sum(h) > threshold`` in the body, the threshold at least MARGIN from the sum
        at every step (a run records the sums; a step that comes too close rejects the loop)."""
        v = np.asarray(self.vals[a], np.float64)
        thr = fmt(float(np.sum(v)) * float(w) + self.r.uniform(-0.5, 0.5))
        lines = [f"{name} = {a} * {w}", f"for t in range({n}):", f"    if np.sum({name}) > {thr}:",
                 f"        {name} = np.tanh({name} + {c})", "    else:",
                 f"        {name} = {name} * {w} + {self.lit(0.2, 0.6)}"]
        probe = list(lines)
        probe.insert(2, f"    sums.append(float(np.sum({name})))")
        env = dict(self.env, **self.vals, sums=[])
        try:
            with np.errstate(all="raise"):
                exec("\n".join(probe), env)
        except Exception:
            return False
        if min(abs(x - float(thr)) for x in env["sums"]) < 5 * MARGIN:
            return False
        return self.accept(lines, name)

    def helper_call(self) -> bool:
        a = self.arr(lambda v: v.ndim >= 1)
        name, call = self.new(), self.r.choice([c for _, c in HELPERS.values()])
        return self.accept([f"{name} = {call.format(a=a, b=self.operand(a), s=self.lit())}"], name)

    def elements(self) -> bool:
        """Arithmetic on single elements of a small vector (the buffered form's scalar mode)."""
        a = self.arr(lambda v: v.ndim == 1 and 2 <= v.size <= 8)
        v, name = self.vals[a], self.new()
        terms = []
        for _ in range(self.r.randint(2, 5)):
            i, j = self.r.randrange(v.size), self.r.randrange(v.size)
            terms.append(self.r.choice([f"{a}[{i}] * {a}[{j}]", f"{a}[{i}] ** 2", f"{self.lit()} * {a}[{i}]",
                                        f"{a}[{i}] ** 3", f"-{a}[{j}]"]
                                       + ([f"{a}[{i}] / {a}[{j}]"] if abs(v[j]) > 0.2 else [])))
        text = terms[0] + "".join(f" {self.r.choice('+-')} {t}" for t in terms[1:])
        return self.accept([f"{name} = {text}"], name)

    def polynomial(self, r: random.Random, rng, params: list, args: list) -> None:
        """One more argument, a short vector read only element by element (the buffered form's
        scalar mode, as the seed's polynomial): products of elements with int and float
        coefficients, integer powers, negations, earlier such values; elements read several
        times. Its own random streams: the rest of the program is what the seed makes anyway."""
        p, size = f"x{len(params)}", r.randint(3, 8)
        x = rng.uniform(-1.5, 1.5, size).astype(self.dtype)
        params.append(p)
        args.append(x)
        self.vals[p] = x
        made: list[str] = []
        for _ in range(r.randint(2, 4)):
            terms = []
            for _ in range(r.randint(2, 6)):
                i, j = r.randrange(size), r.randrange(size)
                c, f = r.choice([2, 3, 6]), fmt(r.uniform(0.2, 1.5))
                terms.append(r.choice([f"{c} * {p}[{i}] * {p}[{j}]", f"{p}[{i}] ** 3",
                                       f"{p}[{i}] * {p}[{j}] ** 2", f"-{p}[{j}]",
                                       f"{c} * {p}[{i}] ** 2 * {p}[{j}]", f"{f} * {p}[{i}]",
                                       f"-{c} * {p}[{i}] * {p}[{j}]", f"{p}[{i}] - {p}[{j}]"]
                                      + [f"{m} * {p}[{i}]" for m in made[-2:]]))
            text = terms[0] + "".join(f" {r.choice('+-')} {t}" for t in terms[1:])
            name = self.new()
            if self.accept([f"{name} = {text}"], name):
                made.append(name)
            else:
                self.n -= 1

    def recurrent(self, r: random.Random, rng, params: list, args: list) -> None:
        """One more argument pair and an RNN-like loop over time (the shapes that hid the
        buffered form's loop-body plan bugs): a stack of inputs ``xs`` (T, B, D), a vector ``p``
        (H,) that scales the weights and makes the bias. The state (B, H), or (H, B) transposed,
        has 512 elements or more in most programs (ad/policies.py REMAKE_MIN: such values
        may be made again in the backward step), a few elements in the rest. Randomly combined: time forward or reversed
        (``range(T - 1, -1, -1)``, ``reversed(range(T))``, ``xs[::-1]``, ``xs[T - 1 - t]``, a
        ``while`` counting down), tanh, residual, GRU-like and LSTM-like cells (sigmoid gates
        times states, the state in two arrays), a second state, the weight on either side of
        the product and transposed, a pre-activation or product read by two or three
        functions, one or two losses per step reading a slice, row or column of a state, rows
        collected in a list and stacked or written into ``out[t]``, a running sum of states.
        Its own random streams: the rest of the program is what the seed makes anyway."""
        big = r.random() < 0.65
        B, H = r.choice([(8, 64), (16, 32), (16, 64), (32, 16)]) if big else (r.randint(1, 4), r.randint(2, 6))
        T, D = r.randint(8, 11), r.choice([1, 2])
        xs, p = f"x{len(params)}", f"x{len(params) + 1}"
        for name, shape, scale in ((xs, (T, B, D), 1.2), (p, (H,), 1.0)):
            params.append(name)
            args.append(rng.uniform(-scale, scale, shape).astype(self.dtype))
            self.vals[name] = args[-1]
        cols = r.random() < 0.3                     # the state transposed: (H, B)
        sig = r.choice(["1.0 / (1.0 + np.exp(-({})))", "0.5 * np.tanh(0.5 * ({})) + 0.5"])
        lines: list[str] = []

        def weight(w: str, rows: int, ncols: int, scale: float, dep: str) -> None:
            lo = fmt(r.uniform(-2, 2))
            hi = fmt(float(lo) + 0.7 * rows * ncols + r.uniform(0, 1))
            lines.append(f"{w} = np.cos(np.linspace({lo}, {hi}, {rows * ncols}, dtype={xs}.dtype))"
                         f".reshape({rows}, {ncols}) * {fmt(scale)}{dep}")

        weight("Wx", D, H, r.uniform(0.5, 1.0), f" * {p}" if r.random() < 0.7 else "")
        rec_scale = r.uniform(0.5, 1.0) / np.sqrt(H)
        weight("Wh", H, H, rec_scale, r.choice(["", f" * np.cos({p})", f" * {p}[:, None]"]))
        lines.append(f"b = {fmt(r.uniform(0.05, 0.3))} * {p}" + ("[:, None]" if cols else ""))
        if self.vals and r.random() < 0.4:          # a value of the rest of the program
            other = r.choice([k for k in self.vals if k not in (xs, p)] or [p])
            lines[-1] += f" + {fmt(r.uniform(0.02, 0.1))} * np.mean({other})"
        # -- the products: the weight on either side, transposes ---------------------------
        def inp(x: str, w: str = "Wx") -> str:
            if cols:
                return r.choice([f"{w}.T @ {x}.T", f"({x} @ {w}).T"])
            return r.choice([f"{x} @ {w}", f"np.dot({x}, {w})"])

        def rec(s: str, w: str = "Wh") -> str:
            if cols:
                return r.choice([f"{w}.T @ {s}", f"({s}.T @ {w}).T", f"np.matmul({w}.T, {s})"])
            return r.choice([f"{s} @ {w}", f"(({w}.T) @ {s}.T).T", f"np.dot({s}, {w})"])

        def plus(a: str, c: str) -> str:
            """``a + c``, or ``c + a`` in SWAPPED of the programs (the input's product second)."""
            return f"{c} + {a}" if self.swapped else f"{a} + {c}"

        shape = f"({H}, {B})" if cols else f"({B}, {H})"
        cell = r.choice(["tanh", "tanh", "residual", "gru", "lstm", "two"])
        states = {"tanh": ["h"], "residual": ["h"], "gru": ["h"], "lstm": ["h", "c"], "two": ["h", "k"]}[cell]
        start = r.randrange(3)
        for s in states:
            if start == 0 or s != "h":
                lines.append(f"{s} = np.zeros({shape}, dtype={xs}.dtype)")
            elif start == 1:
                lines.append(f"h = np.tanh({inp(f'{xs}[0]')}) * 0.5")
            else:
                lines.append(f"h = np.zeros({shape}, dtype={xs}.dtype) + 0.3 * b")
        if cell == "gru":
            weight("Wu", D, H, r.uniform(0.5, 1.0), "")
            weight("Wg", H, H, r.uniform(0.5, 1.0) / np.sqrt(H), "")
        if cell == "lstm":
            weight("Wf", H, H, r.uniform(0.5, 1.0) / np.sqrt(H), r.choice(["", f" * {p}"]))
        if cell == "two":
            weight("Wg", H, H, r.uniform(0.5, 1.0) / np.sqrt(H), "")
        lines.append("total = 0.0")
        # -- time: forward, reversed, counting down through the stack ----------------------
        order = r.randrange(7)
        head, x, has_t = {
            0: (f"for t in range({T}):", f"{xs}[t]", True),
            1: (f"for t in range({T - 1}, -1, -1):", f"{xs}[t]", True),
            2: (f"for t in reversed(range({T})):", f"{xs}[t]", True),
            3: (f"for x in {xs}[::-1]:", "x", False),
            4: (f"for t in range({T}):", f"{xs}[{T - 1} - t]", True),
            5: (f"for x in {xs}:", "x", False),
            6: ("while t >= 0:", f"{xs}[t]", True),
        }[order]
        if order == 6:
            lines.append(f"t = {T - 1}")
        extra = r.sample(["acc", "rows", "out", "product"], r.randint(0, 2))
        if "out" in extra and not has_t:
            extra.remove("out")
        k_slice = r.randint(1, max(1, min(B, H) - 1))
        row = r.randrange(B)

        def part(s: str) -> str:
            """A slice, a row or a column of the state ``s`` (in (B, H) terms, transposed
            where the state is)."""
            j = r.randrange(H)
            keys = [(f"[:, :{k_slice}]", f"[:{k_slice}]"), (f"[{row}]", f"[:, {row}]"),
                    (f"[:, {j}]", f"[{j}]"), ("", ""), (f"[{row}:, ::2]", f"[::2, {row}:]"),
                    ("[-1]", "[:, -1]"), (f".T[{j}]", f"[{j}]")]
            return s + r.choice(keys)[cols]

        def loss(v: str) -> str:
            forms = ["np.mean({} ** 2)", "np.mean(np.sin({}))", "np.mean({} * {})",
                     "np.mean(np.tanh({}) * {})", "np.mean({}) * 0.5", "np.mean(np.cos({}))"]
            if sums:        # a sum's gradient is the step's own (no scale): as a user writes it
                forms = ["np.sum({} ** 2)", "np.sum(np.cos({}))", "np.sum(np.tanh({}) * {})",
                         "np.sum({} * {})", "np.sum(np.sin({}))"]
            form = r.choice(forms)
            term = form.format(v, v)
            if has_t and r.random() < 0.2:
                term += f" * (t + 1.0) / {T}"
            return term

        body: list[str] = []
        z_reads: list[str] = []
        # unscaled sums (float64 only: the loss reaches thousands, which float32 rounds off)
        sums = self.dtype == np.float64 and r.random() < 0.6
        if cell in ("tanh", "residual"):
            body.append(f"z = {plus(inp(x), rec('h'))} + b")
            if "product" in extra:          # the product read twice
                body[-1:] = [f"q = {rec('h')}", f"z = {plus(inp(x), 'q')} + b"]
            act = r.choice(["np.tanh(z)", "np.tanh(z)", "np.tanh(z) + 0.3 * np.cos(z)",
                            "np.sin(z) * 0.8", "np.tanh(z) * np.cos(z)"])
            if "product" in extra:
                act += " + 0.1 * q"
            if cell == "residual":
                a = fmt(r.uniform(0.2, 0.6))
                act = r.choice([f"h + {a} * {act}", f"{a} * h + {act}", f"h * {a} + {act} * {a}"])
            body.append(f"h = {act}")
            z_reads = ["np.sum(np.cos(z))" if sums else "np.mean(np.cos(z))", "np.mean(z * z) * 0.1",
                       "np.mean(np.tanh(z) ** 2)"]
        elif cell == "gru":
            body += [f"g = {rec('h', 'Wg')}",
                     f"u = {sig.format(inp(x, 'Wu') + ' + g')}",
                     f"n = np.tanh({inp(x)} + {rec('h')} * u + b)" if r.random() < 0.5
                     else f"n = np.tanh({inp(x)} + u * g + b)",
                     r.choice(["h = (1.0 - u) * n + u * h", "h = n + u * (h - n)"])]
            z_reads = ["np.mean(u * g)", "np.mean(np.cos(g))", "np.mean(n * n) * 0.5"]
            if "product" in extra:
                extra.remove("product")
        elif cell == "lstm":
            body += [f"z = {plus(inp(x), rec('h'))} + b",
                     f"fg = {sig.format('z + 1.0')}",
                     f"ig = {sig.format(rec('h', 'Wf') + ' - 0.5')}",
                     f"og = {sig.format('0.5 * z')}",
                     "c = fg * c + ig * np.tanh(z)",
                     "h = og * np.tanh(c)"]
            z_reads = ["np.mean(np.cos(z))", "np.mean(c[0] ** 2) * 0.1" if not cols else "np.mean(c[:, 0] ** 2) * 0.1",
                       "np.mean(fg * ig)"]
        else:               # two states: the second reads the first
            body += [f"h = np.tanh({plus(inp(x), rec('h'))} + b)",
                     r.choice([f"k = {fmt(r.uniform(0.3, 0.7))} * k + np.tanh({rec('h', 'Wg')}) * 0.5",
                               f"k = np.sin({rec('k', 'Wg')} + h) * 0.7"])]
            z_reads = [loss(part("k")), "np.mean(h * k)"]
        if "product" in extra and cell not in ("tanh", "residual"):
            extra.remove("product")
        losses = [loss(part("h"))]
        if r.random() < 0.5:                                    # two losses a step
            losses.append(r.choice(z_reads + [loss(part(r.choice(states)))]))
        if r.random() < 0.4 and cell in ("tanh", "residual"):   # a third function of z
            losses.append(z_reads[1])
        body.append("total = total + " + " + ".join(losses))
        if "acc" in extra:
            lines.append(f"acc = np.zeros({shape}, dtype={xs}.dtype)")
            body.append(r.choice(["acc = acc + h", "acc = acc + h * 0.5", "acc += h"]))
        if "rows" in extra:
            lines.append("ys = []")
            body.append(f"ys.append({r.choice([part('h'), 'np.tanh(h)', 'h'])})")
        if "out" in extra:
            o_row, size = r.choice([(f"h[:, {row}]", H) if cols else (f"h[{row}]", H),
                                    ("np.sum(h, axis=-1)", H if cols else B)])
            lines.append(f"O = np.zeros(({T}, {size}), dtype={xs}.dtype)")
            body.append(f"O[t] = {o_row}")
        at = next(i for i, b in enumerate(body) if b.startswith("total"))
        tail = body[at:]
        r.shuffle(tail)                     # the losses, the sum, the rows: in any order
        body[at:] = tail + (["t -= 1"] if order == 6 else [])
        lines += [head] + [f"    {s}" for s in body]
        name = self.new()
        after = ["total"]
        if "acc" in extra:
            after.append(f"np.mean({part('acc')} ** 2) * 0.1")
        if "rows" in extra:
            after.append(r.choice(["np.mean(np.stack(ys) ** 2)", "np.mean(np.stack(ys)[-1]) * 0.5",
                                   "np.mean(np.sin(np.stack(ys)))"]))
        if "out" in extra:
            after.append(r.choice(["np.mean(O * O) * 0.1", "np.mean(np.cos(O[1:] - O[:-1]))"]))
        if r.random() < 0.4:
            after.append(loss(part(states[-1])))
        value = " + ".join(after)
        if r.random() < 0.25:               # a small vector, not a number (a moderate one)
            value = f"np.tanh({'h[:, 0]' if cols else 'h[0]'}[:4]) * ({value})" + " * 0.001" * sums
        lines.append(f"{name} = {value}")
        if self.accept(lines, name, 3e4):
            self.loop_losses.add(name)
        else:
            self.n -= 1

    def stencil(self, r: random.Random, rng, params: list, args: list) -> None:
        """One more argument pair and a loop over a periodic 2-D field, as a PDE solver writes
        it (the shape behind a wrong gradient of the buffered form's loop bodies): centred
        differences and a Laplacian of ``np.roll`` of the field (shifts of 1 or 2, along both
        axes) times a velocity argument; sometimes a nonlinearity, running sums of the velocity
        times a difference (a number, an array), the step number, and the field read after the
        loop. Fields of 576 or 1,024 elements (planned loop bodies) or a few dozen. Its own
        random streams: the rest of the program is what the seed makes anyway."""
        n, T = r.choice([32, 24, 6, 8]), r.randint(3, 7)
        u0, v = f"x{len(params)}", f"x{len(params) + 1}"
        for name, shape in ((u0, (n, n)), (v, r.choice([(n, n), (n, n), (n,)]))):
            params.append(name)
            args.append(rng.uniform(-1.0, 1.0, shape).astype(self.dtype))
            self.vals[name] = args[-1]
        s, c, nu = r.choice([1, 1, 2]), fmt(r.uniform(0.05, 0.15)), fmt(r.uniform(0.02, 0.08))
        vy = r.choice([v, f"0.5 * {v}", f"{v}.T" if len(self.vals[v].shape) == 2 else v])
        step = r.choice(["", " * (t + 1.0)"])
        body = [f"ex = np.roll(u, -{s}, axis=1) - np.roll(u, {s}, axis=1)",
                "ey = np.roll(u, -1, axis=0) - np.roll(u, 1, axis=0)"]
        lap = ("np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)"
               " + np.roll(u, -1, axis=1) - 4.0 * u")
        update = f"u - {c} * ({v} * ex + {vy} * ey){step}"
        update = r.choice([f"{update} + {nu} * ({lap})", update,
                           f"{update} + {nu} * np.tanh({lap})", f"np.tanh({update})"])
        lines, sums, after = [f"u = {u0}"], [], []
        for extra in r.sample(["total", "g", "read"], r.randint(0, 3)):
            if extra == "total":
                lines.append("total = 0.0")
                sums.append(f"total = total + {fmt(r.uniform(0.1, 0.5))}{step} * "
                            + r.choice([f"np.sum({v} * ey)", f"np.mean(ex * ex)", f"np.sum(u * ey)"]))
                after.append("total")
            elif extra == "g":
                lines.append(f"g = np.zeros(({n}, {n}), dtype={u0}.dtype)")
                sums.append(r.choice([f"g = g + {c} * ex * {v}", f"g += {c} * ey * u", "g = g + ex"]))
                after.append(r.choice(["np.mean(g * g)", "np.sum(np.sin(g))"]))
            else:
                body.append("w = u * ex")
                update += " + 0.05 * w"
        r.shuffle(sums)                      # the sums in any order after the differences
        r.shuffle(body)
        body = sorted(body, key=lambda b: b.startswith("w =")) + sums
        lines += [f"for t in range({T}):"] + [f"    {b}" for b in body] + [f"    u = {update}"]
        after.append(r.choice(["np.mean((u - 0.25) ** 2)", "np.sum(np.sin(u) * u)",
                               f"np.mean(u[:, :{n // 2}] ** 2)", f"np.sum(u[{n // 3}])"]))
        name = self.new()
        lines.append(f"{name} = " + " + ".join(after))
        if self.accept(lines, name, 3e4):
            self.loop_losses.add(name)
        else:
            self.n -= 1

    def listed(self, r: random.Random, rng, params: list, args: list) -> None:
        """One more argument and a loop that appends to one or two lists and reads them in the
        same step, as numpy-ml's LSTMCell keeps its states (issue 29, item 11): before the
        append by ``hs[-1]``, ``hs[-2]``, ``hs[len(hs) - 1]``, ``hs[t]``, ``hs[t // 2]``,
        ``hs[0]``, after it by ``hs[-1]`` (the step's own row) and ``hs[-2]``; the lists local
        or in a dict (``st["hs"]``); 1 to 20 steps (from 8, a region's trial); read after the
        loop by ``hs[-1]``, an item, ``np.stack(hs)``. Its own random streams: the rest of the
        program is what the seed makes anyway."""
        x = f"x{len(params)}"
        params.append(x)
        args.append(rng.uniform(-1.0, 1.0, r.choice([(3,), (2, 3), (4,), (1, 3)]))
                    .astype(self.dtype))
        self.vals[x] = args[-1]
        T = r.randint(8, 20) if r.random() < 0.7 else r.randint(1, 7)
        first = r.randint(1, 2)                             # items before the loop
        names = ["hs", "cs"][:r.choice([1, 1, 2])]
        in_dict = r.random() < 0.25
        ref = {n: f'st["{n}"]' if in_dict else n for n in names}
        lines = []
        for n in names:
            items = [r.choice([f"np.zeros_like({x})", f"np.tanh({x}) * {self.lit(0.2, 0.9)}",
                               f"{x} * {self.lit(0.2, 0.9)}"]) for _ in range(first)]
            lines.append(f"{n} = [{', '.join(items)}]")
        if in_dict:
            lines.append("st = {" + ", ".join(f'"{n}": {n}' for n in names) + "}")

        def read(n: str, appended: bool) -> str:
            L = ref[n]
            keys = ["-1", "-1", "0", "t", "t // 2", f"len({L}) - 1"]
            if first == 2 or appended:
                keys += ["-2", "-2"]
            if appended:
                keys += ["t + 1", "-1"]
            return f"{L}[{r.choice(keys)}]"

        body, total = [], r.random() < 0.4
        if total:
            lines.append("total = 0.0")
        for n in names:
            a, b = read(n, False), read(r.choice(names), False)
            w, c = self.lit(0.3, 0.9), self.lit(0.2, 0.8)
            new = r.choice([f"np.tanh({a} * {w} + {x} * {c})",
                            f"np.sin({a}) * {w} + np.tanh({b}) * {c}",
                            f"np.tanh({a} * {b} + {x} * {c})",
                            f"np.tanh({a} + {c} * {x} * t)" if r.random() < 0.5 else
                            f"np.cos({a} * {w}) * {x}"])
            body.append(f"{ref[n]}.append({new})")
            if total and r.random() < 0.7:
                body.append(f"total = total + np.sum({read(n, True)} * {x})")
        if total and not any(b.startswith("total") for b in body):
            body.append(f"total = total + np.sum({read(names[0], True)})")
        lines += [f"for t in range({T}):"] + [f"    {b}" for b in body]
        after = ["total"] if total else []
        for n in names:
            k = r.randrange(-(first + T), first + T)
            after.append(r.choice([f"np.sum({n}[-1] ** 2)", f"np.mean(np.stack({n}) ** 2)",
                                   f"np.sum(np.sin({n}[{k}]))", f"np.sum({n}[-1] * {n}[0])"]))
        name = self.new()
        lines.append(f"{name} = " + " + ".join(after))
        if self.accept(lines, name, 3e4):
            self.loop_losses.add(name)
        else:
            self.n -= 1

    # -- shapes earlier sessions named that the mix above never writes (SHAPES_MORE) ----------
    def more(self, r: random.Random, rng, params: list, args: list) -> None:
        """One or two statements of the shapes below, drawn from their own random streams (the
        rest of the program is what the seed makes anyway): accumulator-only loops, rows
        ``O[t]`` written and read in the steps, float16 and float32 arguments with literals,
        min and max with ties, float arrays times boolean masks, powers and ``np.abs`` at 0,
        a matrix argument read once whose gradient is one vector in every row."""
        kinds = [self.accumulate, self.rows_read, self.ties, self.masked, self.powers,
                 lambda: self.broadcast_rows(rng, params, args)]
        saved, self.r = self.r, r
        try:
            if r.random() < 0.3:
                self.low_precision(rng, params, args)
            for kind in r.sample(kinds, r.randint(1, 2)):
                for _ in range(4):
                    try:
                        if kind():
                            break
                    except Skip:
                        pass
        finally:
            self.r = saved

    def steps(self, n: int) -> str:
        """A loop header over ``t``: counting up, or down two ways."""
        return self.r.choice([f"for t in range({n}):", f"for t in reversed(range({n})):",
                              f"for t in range({n - 1}, -1, -1):"])

    def accumulate(self) -> bool:
        """A loop whose carried values are only running sums (ad/regions.py _accumulator_loop):
        of numbers, of arrays, an array and a number, the sum read in the step, two sums one
        feeding the other, nested loops, ``+=`` and ``-=``; time up or down."""
        a = self.arr(lambda v: v.ndim >= 1)
        v, name, n, k = self.vals[a], self.new(), self.trips(), self.r.randrange(7)
        w, c, m = self.lit(0.3, 0.9), self.lit(-0.5, 0.5), self.vals[a].shape[0]
        step = self.r.choice([f"np.sin({a} * {w} + {c} * t)", f"np.tanh({a} + {c} * t) * {w}",
                              f"{a} * (t + 1.0) / {n}", f"np.cos({a}[t % {m}]) * {w}",
                              f"{a} * {a} * {c}"])
        total = self.r.choice([f"np.mean({step})", f"np.sum({step}) * {fmt(1 / v.size)}"])
        add = self.r.choice([f"{name} = {name} + {{}}", f"{name} += {{}}",
                             f"{name} = {{}} + {name}"])
        head = self.steps(n)
        if k == 0:       # a number
            lines = [f"{name} = 0.0", head, f"    {add.format(total)}"]
        elif k == 1:     # an array, or a number that becomes an array
            start = self.r.choice([f"np.zeros_like({a})", "0.0", f"{a} * 0.0", f"{a} * {w}"])
            lines = [f"{name} = {start}", head, f"    {add.format(step)}"]
            if self.r.random() < 0.4:
                lines.append(f"    {name} -= {self.lit(-0.3, 0.3)}")
        elif k == 2:     # an array and a number in the same step
            lines = [f"{name} = np.zeros_like({a})", head,
                     f"    {add.format(f'{step} + {total} * {c}')}"]
        elif k == 3:     # the sum read in the step
            lines = [f"{name} = 0.0", head,
                     f"    {add.format(f'np.mean(np.sin({a} * {w} + {name} * 0.1))')}"]
        elif k == 4:     # two sums, one feeding the other
            first = self.r.choice(["0.0", f"np.zeros_like({a})"])
            second = self.r.choice(["s * 0.1", f"s * {a} * {c}", "np.tanh(s)"])
            lines = [f"s = {first}", f"{name} = 0.0", head, f"    s = s + {total}",
                     f"    {add.format(second)}"]
            if self.r.random() < 0.5:           # the second reads the first's last step
                lines[3], lines[4] = lines[4], lines[3]
        elif k == 5:     # nested loops of sums
            inner = self.r.randint(1, max(1, 30 // n))
            inner_head = self.r.choice([f"for j in range({inner}):",
                                        f"for j in range({inner - 1}, -1, -1):"])
            lines = [f"{name} = {self.r.choice(['0.0', f'np.zeros_like({a})'])}", head,
                     f"    {inner_head}",
                     f"        {add.format(f'np.sin({a} * {w} + {c} * (t - j)) * 0.2')}"]
            if self.r.random() < 0.5:
                lines.insert(3, f"    {name} = {name} + {c}")
        else:            # a sum of the step's other value, which is carried too
            lines = [f"{name} = 0.0", f"h = {a} * {w}", head, f"    h = np.cos(h * {w} + {c})",
                     f"    {add.format('np.mean(h * h)')}"]
        return self.accept(lines, name)

    def rows_read(self) -> bool:
        """``O[t] = ...`` rows written in a loop and read in the same step, in a later step and
        after the loop; sometimes written twice in one step; time up or down."""
        a = self.arr(lambda v: v.ndim >= 1)
        v, name, n, k = self.vals[a], self.new(), self.trips(), self.r.randrange(4)
        w, c = self.lit(0.3, 0.9), self.lit(-0.5, 0.5)
        row = n * v.size <= MAX_SIZE
        shape, value = (f"({n},) + {a}.shape", f"np.sin(h + {c} * t)") if row \
            else (f"{n}", f"np.mean(np.sin(h + {c} * t))")
        lines = [f"{name} = np.zeros({shape}, dtype={a}.dtype)", f"h = {a} * {w}"]
        if k == 0:       # read in the same step, maybe written twice
            body = [f"{name}[t] = {value}", f"h = h * {w} + {name}[t] * 0.5"]
            if self.r.random() < 0.5:
                body.append(self.r.choice([f"{name}[t] = {name}[t] * {w} + h * 0.1",
                                           f"{name}[t] += 0.1 * h",
                                           f"{name}[t] = np.cos(h) * {c}"]))
            lines += [self.steps(n)] + [f"    {b}" for b in body]
        elif k == 1:     # the previous step's row, time up
            lines += [f"{name}[0] = {value.replace('t)', '0)')}", f"for t in range(1, {n}):",
                      f"    {name}[t] = np.tanh({name}[t - 1] * {w} + h)"]
        elif k == 2:     # the next row, time down
            lines += [f"{name}[{n - 1}] = {value.replace('t)', '0)')}",
                      f"for t in range({n - 2}, -1, -1):",
                      f"    {name}[t] = np.sin({name}[t + 1] * {w}) + h * {c}"]
        else:            # a row read, then written
            lines += [f"{name}[0] = h", self.steps(n), f"    h = np.tanh(h + {name}[0] * {w})",
                      f"    {name}[t] = {name}[t] + h * {c}"]
        if self.r.random() < 0.5:          # read after the loop
            lines.append(self.r.choice([f"{name} = {name} * h",
                                        f"{name} = {name}[1:] - {name}[:-1]",
                                        f"{name} = np.sum({name}, axis=0) + {name}[-1]"]))
        return self.accept(lines, name)

    def low_precision(self, rng, params: list, args: list) -> None:
        """One more argument of a narrower dtype than the program's (float16; float32 in a
        float64 program), read with Python number literals (``x * 0.1`` stays float16) and
        by the program's values (promoted): numpy's dtype rules in both forms."""
        narrow = np.float16 if self.dtype == np.float32 or self.r.random() < 0.5 else np.float32
        p = f"x{len(params)}"
        x = rng.uniform(-1.2, 1.2, self.r.choice([(3,), (4,), (2, 3), (1, 3)])).astype(narrow)
        params.append(p)
        args.append(x)
        self.vals[p] = x
        for _ in range(self.r.randint(1, 3)):
            b = self.pick(lambda v: isinstance(v, np.ndarray) and v.dtype == narrow) or p
            w, c = self.lit(0.3, 0.9), self.lit()
            text = self.r.choice([f"{b} * 0.1 + {c}", f"np.sin({b}) * {w} - {b}",
                                  f"{b} ** 2 * {w} + {b}",
                                  f"np.tanh({b} * 2.0) + 0.1 * {b}", f"np.exp({b} * 0.5) / 2.0",
                                  f"np.sum({b} * {w}) + {b}", f"1.5 * {b} - np.mean({b} ** 2)",
                                  f"{b} * {self.operand(b)}"])
            name = self.new()
            self.accept([f"{name} = {text}"], name)

    def broadcast_rows(self, rng, params: list, args: list) -> bool:
        """One more argument, a matrix read once: times a vector the program computes, or in a
        product with one, summed. Its gradient is a vector in every row, which the buffered
        form makes in the gradient's first row and copies to the others (codegen/buffers.py
        ``_heads``)."""
        a = self.arr(lambda v: 1 <= v.ndim <= 2 and v.size <= 16 and v.dtype == self.dtype)
        v = self.vals[a]
        if a in params:
            return False
        rows = self.r.randint(2, max(2, min(4, MAX_SIZE // v.size)))
        p, name, w = f"x{len(params)}", self.new(), self.lit(0.3, 0.9)
        forms = [f"np.sum({p} * np.tanh({a}))", f"np.sum({p} * {a}) * {w}",
                 f"np.mean({p} * np.sin({a}))", f"np.sum({p} * ({a} * {a} + {w}))"]
        shape = (rows,) + v.shape
        if v.ndim == 2 and self.r.random() < 0.4:      # the row sums of a matrix it computes
            forms, shape = [f"np.sum({p} @ np.tanh({a})) * {w}"], (rows, v.shape[0])
        params.append(p)
        args.append(rng.uniform(-1.0, 1.0, shape).astype(self.dtype))
        self.vals[p] = args[-1]
        if self.accept([f"{name} = {self.r.choice(forms)}"], name):
            return True
        params.pop(), args.pop(), self.vals.pop(p)
        return False

    def alike(self, r: random.Random, rng, params: list, args: list) -> None:
        """Two or three more arguments used the same way in one statement (``np.sum(x3 * v2) *
        2.0 + np.sum(x4 * v2) * 2.0``): their gradients are one expression, which CSE makes
        one value that two returned gradients share (each must come back in an array of its
        own, named for its argument). The arguments are arrays of the value's shape or of its
        last axis (broadcast: their gradients are sums over the others), or Python floats; the
        value may be an argument too. Drawn from its own random streams (the rest of the
        program is what the seed makes anyway)."""
        saved, self.r = self.r, r
        try:
            a = self.arr(lambda v: v.ndim >= 1 and v.dtype == self.dtype)
            v, name, w = self.vals[a], self.new(), self.lit(0.3, 0.9)
            kind = r.choice(["same", "same", "last", "float"])
            shape = v.shape if kind == "same" else v.shape[-1:]
            added = [f"x{len(params) + k}" for k in range(r.choice([2, 2, 3]))]
            for p in added:
                x = rng.uniform(-1.2, 1.2, shape).astype(self.dtype)
                params.append(p)
                args.append(float(fmt(x.flat[0])) if kind == "float" else x)
                self.vals[p] = args[-1]
            form = r.choice(["np.sum({p} * {a}) * {w}", "np.sum({a} * {p})", "{p} * {a}",
                             "np.tanh({a}) * {p}", "np.mean(np.sin({a}) * {p})",
                             "({a} + {p}) * {w}", "np.sum({p} * {a} * {a})"])
            text = " + ".join(form.format(p=p, a=a, w=w) for p in added)
            if not self.accept([f"{name} = {text}"], name):
                for p in added:
                    params.pop(), args.pop(), self.vals.pop(p)
        except Skip:
            pass
        finally:
            self.r = saved

    def branches(self, r: random.Random, rng, params: list, args: list) -> None:
        """``if`` on a reduction of data (``if np.sum(v3) > 0.41:``), arms that give one value
        of one shape and dtype (a branch statement: issue 33), sometimes an ``elif`` or a name
        one arm leaves as it was; the threshold at least MARGIN from the reduction (clear of
        the switch, where the program jumps). Drawn from its own random streams."""
        saved, self.r = self.r, r
        try:
            a = self.arr(lambda v: v.ndim >= 1 and v.dtype == self.dtype)
            v, name = self.vals[a], self.new()
            reduction = r.choice(["np.sum({a})", "np.mean({a})", "np.max({a})",
                                  "np.sum({a} * {a})", "np.min(np.sin({a}))"])
            test = reduction.format(a=a)
            value = float(eval(test, dict(self.env, **self.vals)))
            thr = fmt(value + r.choice([-1, 1]) * r.uniform(5 * MARGIN, 0.6))
            w, c = self.lit(0.2, 0.9), self.lit(-0.5, 0.5)
            arms = [f"np.tanh({a}) * {w}", f"{a} * {a} * {w}", f"np.sin({a}) + {c}",
                    f"{a} * {w} - {c}", f"np.cos({a} * {w})", f"np.exp(-{a} * {a})"]
            first, second, third = r.sample(arms, 3)
            if random.Random(f"returns {self.seed} {len(self.stmts)}").random() < 0.25:
                self._returning_if(name, f"{a} * {c}", f"{test} > {thr}", f"np.sum({first}) * {w}")
                return
            lines = [f"{name} = {a} * {c}"] if r.random() < 0.3 else []
            lines += [f"if {test} > {thr}:", f"    {name} = {first}"]
            if r.random() < 0.3:
                lines += [f"elif {test} < {fmt(float(thr) - 0.8)}:", f"    {name} = {third}"]
            if not lines[0].startswith(f"{name} =") or r.random() < 0.5:
                lines += ["else:", f"    {name} = {second}"]
            self.accept(lines, name)
        except Skip:
            pass
        finally:
            self.r = saved

    def _returning_if(self, name: str, value: str, test: str, returned: str) -> None:
        """``if <test>: return <returned>`` among the statements: the function returns there
        on one path and goes on to the others' loss on the other (issue 33: the statements
        after the ``if`` are its other arm). Checked with the return made an assignment (exec
        has no function)."""
        lines = [f"{name} = {value}", f"if {test}:", f"    return {returned}"]
        if self.accept(lines[:2] + [f"    _ = {returned}"], name):
            self.stmts[-1] = replace(self.stmts[-1], lines=tuple(lines))

    def whiles(self, r: random.Random, rng, params: list, args: list) -> None:
        """``while`` on a reduction of data (a while statement: issue 33): a carried array
        shrunk towards a fixed point until its largest magnitude is small, a running sum
        carried as a float grown past a threshold, or a carried pair (a sum of the shrinking
        values). The threshold lies between two trips' tests, every test at least MARGIN from
        it (clear of the input where the trip count changes and the program jumps), and the
        loop makes 1 to 12 trips, and any input leaves it (a threshold above the fixed
        point's bound). Drawn from its own random streams."""
        saved, self.r = self.r, r
        try:
            a = self.arr(lambda v: v.ndim >= 1 and v.dtype == self.dtype)
            name, kind = self.new(), r.randrange(3)
            w, c = self.lit(0.3, 0.8), self.lit(-0.5, 0.5)
            if kind == 0:
                start = [f"{name} = np.tanh({a}) * 2.0 + {c}"]    # bounded: inf leaves too
                test, below = f"np.max(np.abs({name}))", False
                body = [f"{name} = {name} * {w} + {c} * np.tanh({a})"]
            elif kind == 1:
                start = [f"{name} = 0.0"]
                test, below = name, True
                body = [f"{name} = {name} + np.sum(np.sin({a}) ** 2) * {w} + 0.1"]
            else:
                other = self.new()
                start = [f"{name} = {a} * 0.0", f"{other} = np.tanh({a})"]
                test, below = f"np.sum({other} * {other})", False
                body = [f"{name} = {name} + {other} * {c}", f"{other} = {other} * {w}"]
            env = dict(self.env, **self.vals)
            exec("\n".join(start), env)
            tests = []
            for _ in range(14):
                tests.append(float(eval(test, env)))
                exec("\n".join(body), env)
            def clear(k: int) -> bool:       # a threshold between trip k - 1's and k's
                thr = 0.5 * (tests[k - 1] + tests[k])
                return all(abs(t - thr) >= MARGIN for t in tests[:k + 1]) and \
                    all((t < thr) == below for t in tests[:k]) and (tests[k] < thr) != below
            # the shrinking array's fixed point is c * tanh(a) / (1 - w): a threshold above
            # its bound leaves for any input (seed 3,255: x0 = -800 made tanh -1 and the
            # loop of the program itself endless, numpy's too), and the values start bounded
            # (an inf, float32's 1e200, would stay inf)
            bound = abs(float(c)) / (1 - float(w)) + MARGIN if kind == 0 else -np.inf
            counts = [k for k in range(1, 13)
                      if clear(k) and 0.5 * (tests[k - 1] + tests[k]) > bound]
            if not counts:
                raise Skip
            trips = r.choice(counts)
            thr = 0.5 * (tests[trips - 1] + tests[trips])
            op = "<" if below else ">"
            lines = start + [f"while {test} {op} {fmt(thr)}:"] + [f"    {b}" for b in body]
            self.accept(lines, name)
        except Skip:
            pass
        finally:
            self.r = saved

    def exits(self, r: random.Random, rng, params: list, args: list) -> None:
        """A loop left on data (issue 33): a ``for`` with a ``break`` (after more statements
        in its arm, or not), a ``for`` with a ``continue``, a ``while`` on data beside an int
        counter (``and n < K``) with a ``break``, or a ``for`` with an early ``return``. Every
        test is at least MARGIN from its threshold on every trip the loop runs on the example,
        and every loop ends for any input (a ``for``, or a counter). Drawn from its own random
        streams."""
        saved, self.r = self.r, r
        try:
            a = self.arr(lambda v: v.ndim >= 1 and v.dtype == self.dtype)
            name, kind = self.new(), r.randrange(4)
            w, c, d = self.lit(0.3, 0.8), self.lit(-0.5, 0.5), self.lit(-0.4, 0.4)
            test = r.choice(["np.max(np.abs({v}))", "np.sum({v} * {v})", "np.mean({v})",
                             "np.min(np.cos({v}))"]).format(v=name)
            start = [f"{name} = np.tanh({a}) * 2.0 + {c}"]
            step = f"{name} = {name} * {w} + {c} * np.tanh({a}) + {d} * np.sin(0.7 * t)"
            more = [f"{name} = {name} + {self.lit(-0.3, 0.3)} * np.cos({name})"] \
                if r.random() < 0.5 else []
            trips = r.randint(3, 10)
            if kind == 1:
                lines = self._continue_loop(r, a, name, test, trips)
            elif kind == 2:
                lines = self._counted_while(r, start, name, test, w, c, a)
            else:
                tests = _trip_tests(self.env, self.vals, start, [step], test, more, trips)
                thr = _leaving(r, tests)
                arm = [f"        {name} = {name} * {self.lit(0.5, 1.5)}"] \
                    if r.random() < 0.5 else []
                leave = [f"        return np.sum({name} * {name}) * 0.5"] if kind == 3 \
                    else arm + ["        break"]
                lines = start + [f"for t in range({trips}):", f"    {step}",
                                 f"    if {test} < {fmt(thr)}:", *leave] + \
                    [f"    {m}" for m in more]
            if kind == 3:       # the return checked as a break (exec has no function)
                checked = [line.replace("return ", "_ = ") + "\n        break"
                           if "return " in line else line for line in lines]
                if self.accept(checked, name):
                    self.stmts[-1] = replace(self.stmts[-1], lines=tuple(lines))
            else:
                self.accept(lines, name)
        except Skip:
            pass
        finally:
            self.r = saved

    def _continue_loop(self, r: random.Random, a: str, name: str, test: str,
                       trips: int) -> list:
        """``for``: a value moved each step, and a sum of it where ``test`` is below a
        threshold with steps on each side (``continue`` on the others)."""
        other = self.new()
        start = [f"{other} = np.tanh({a})", f"{name} = {a} * 0.0"]
        step = f"{other} = np.tanh({other} * {self.lit(0.5, 1.2)} + " \
            f"{self.lit(-0.8, 0.8)} * np.sin(0.9 * t))"
        test = test.replace(name, other)
        tests = _trip_tests(self.env, self.vals, start, [step], test, [], trips)
        gaps = [(y - x, 0.5 * (x + y)) for x, y in zip(sorted(tests), sorted(tests)[1:])
                if y - x >= 2 * MARGIN]
        if not gaps:
            raise Skip
        thr = r.choice(gaps)[1]
        arm = [f"        {name} = {name} * {self.lit(0.5, 0.9)}"] if r.random() < 0.4 else []
        return start + [f"for t in range({trips}):", f"    {step}", f"    if {test} > {fmt(thr)}:",
                        *arm, "        continue",
                        f"    {name} = {name} + np.sin({other}) * {self.lit(0.3, 1.2)}"]

    def _counted_while(self, r: random.Random, start: list, name: str, test: str, w: str,
                       c: str, a: str) -> list:
        """``while <test> > thr and n < K:`` with a ``break`` on another test."""
        counter, cap = f"n{self.n}", r.randint(2, 12)
        first = f"np.max(np.abs({name}))"
        step = f"{name} = {name} * {w} + {c} * np.tanh({a})"
        env = dict(self.env, **self.vals)
        exec("\n".join(start), env)
        t1, t2 = [], []
        for _ in range(cap + 1):
            t1.append(float(eval(first, env)))
            exec(step, env)
            t2.append(float(eval(test, env)))
        thr1 = _leaving(r, t1, at_least=1)
        runs = next((k for k, t in enumerate(t1[:cap]) if t < thr1), cap)
        thr2 = _leaving(r, t2[:runs])
        cond = r.choice([f"{first} > {fmt(thr1)} and {counter} < {cap}",
                         f"{counter} < {cap} and {first} > {fmt(thr1)}"])
        return start + [f"{counter} = 0", f"while {cond}:", f"    {step}", f"    {counter} += 1",
                        f"    if {test} < {fmt(thr2)}:", "        break"]

    def ties(self) -> bool:
        """``np.min``/``np.max`` of a whole array and ``np.amin``/``np.amax`` with an axis,
        where the extreme is tied between copies of one element (one derivative; a tie
        between different elements has none and is kept clear of, as ``reduce`` does)."""
        a = self.arr(lambda v: v.ndim >= 1 and v.ndim <= 2)
        v, name = self.vals[a], self.new()
        copies = self.r.choice([f"np.concatenate([{a}, {a}[::-1]])", f"np.stack([{a}, {a} * 1.0])",
                                f"np.tile({a}, 2)", f"{a}[[0, 0, -1]]", f"np.maximum({a}, {a})",
                                f"np.stack([{a}, {a}, {a} - 1.0])", a])
        env = dict(self.env, **self.vals)
        try:
            u = np.asarray(eval(copies, env), np.float64)
        except Exception:
            return False
        fn = self.r.choice(["max", "min", "amax", "amin"])
        axis = self.r.choice([None, None] + list(range(u.ndim)))
        ax = list(range(u.ndim)) if axis is None else [axis]
        moved = np.moveaxis(u, ax, list(range(-len(ax), 0)))
        groups = moved.reshape(moved.shape[:u.ndim - len(ax)] + (-1,))
        for g in groups.reshape(-1, groups.shape[-1]):        # distinct values well apart
            if np.min(np.diff(np.unique(g)), initial=1.0) < MARGIN:
                return False
        opts = "" if axis is None else f", axis={axis}"
        text = self.r.choice([f"np.{fn}({copies}{opts})", f"({copies}).{fn[-3:]}({opts[2:]})"])
        return self.accept([f"{name} = {text}"], name)

    def masked(self) -> bool:
        """A float array times a boolean mask, ``np.where(mask, x, 0.0)``, sums of ``x[mask]``
        (thresholds MARGIN away from every element)."""
        a = self.arr(lambda v: v.ndim >= 1)
        v, name = self.vals[a], self.new()
        t = self.between(v)
        if t is None:
            return False
        b = self.pick(lambda u: isinstance(u, np.ndarray) and u.shape == v.shape) or a
        s = self.between(self.vals[b]) if b != a else t
        if s is None:
            return False
        text = self.r.choice([f"{a} * ({a} > {t})", f"({a} < {t}) * {a}",
                              f"np.where({a} > {t}, {a}, 0.0)",
                              f"np.where({b} < {s}, 0.0, {a} * {a})", f"{a} * ({b} > {s})",
                              f"np.sum({a}[{a} > {t}]) + {a}",
                              f"{a} * ({a} > {t}).astype({a}.dtype)",
                              f"np.sum({a} * ({b} < {s}))"])
        lines = [f"{name} = {text}"]
        if self.r.random() < 0.3:              # a named mask, read twice
            lines = [f"m = {b} > {s}", f"{name} = np.where(m, {a}, 0.0) + {a} * m"]
        return self.accept(lines, name)

    def powers(self) -> bool:
        """``np.sum(h ** 2)`` (a product into a 0-d array in the buffered form), integer powers,
        ``np.abs`` at 0."""
        a = self.arr(lambda v: v.ndim >= 1)
        v, name = self.vals[a], self.new()
        ops = [f"np.sum({a} ** 2)", f"np.sum({a} ** 2) * {a}", f"{a} ** 3", f"np.power({a}, 4)",
               f"np.sum(np.square({a}), axis=-1)", f"np.abs({a} - {a}[..., :1])",
               f"np.abs({a} * 0.0) + {a}", f"({a} ** 2).sum()"]
        if np.min(np.abs(v)) > 0.3:
            ops += [f"{a} ** -2", f"{a} ** -1 * 0.5"]
        return self.accept([f"{name} = {self.r.choice(ops)}"], name)

    def scalar(self) -> bool:
        a = self.arr()
        name = self.new()
        v = self.vals[a]
        text = self.r.choice([f"float(np.sum({a}))", f"float(np.mean({a}))", f"{self.lit()}"]
                             + ([f"float({a}[0])"] if v.ndim == 1 else []))
        return self.accept([f"{name} = {text}"], name)

    def carried_writes(self, r: random.Random, rng, params: list, args: list) -> None:
        """An in-place index write (``h[k] += e``, ``h[:, j] = e``, ``h[i] *= w``) on a value
        a ``for`` loop carries (8 to 14 trips: a loop region), a ``while`` on data updates, or
        an ``if`` arm (at the top level or in a loop's body) updates, then the value made anew
        from the written one (``h = np.tanh(h * (1 - a * a) @ M)``, the shape of the silent
        wrong gradient fixed in cd06248), and later statements reading both the written value
        (through ``p``, made between the write and the rebinding) and the new one. Drawn from
        its own random streams."""
        saved, self.r = self.r, r
        try:
            a = self.arr(lambda v: v.ndim in (1, 2) and v.dtype == self.dtype and v.size >= 2)
            v, name, kind = self.vals[a], self.new(), r.randrange(4)
            w, c, e = self.lit(0.3, 0.8), self.lit(-0.5, 0.5), self.lit(-1.0, 1.0)
            m = fmt(r.uniform(0.2, 0.5))
            weight = f"np.cos({a}.T @ {a})" if v.ndim == 2 else f"np.cos(np.outer({a}, {a}))"
            start = [r.choice([f"h = {a} * {w}", f"h = np.zeros({a}.shape, dtype={a}.dtype)",
                               f"h = np.tanh({a}) + {c}"]), f"M = {weight} * {m}", "s = 0.0"]
            i = r.randrange(v.shape[0])
            writes = [f"h[{i}] += {e}", f"h[{i}] *= {w}", f"h[{i}] = np.sin({a}[{i}]) * {e}",
                      f"h[{i}] -= {a}[{i}] * {c}"]
            if v.ndim == 2:
                j = r.randrange(v.shape[1])
                writes += [f"h[:, {j}] += {e}", f"h[:, {j}] = np.cos({a}[:, {j}]) * {w}",
                           f"h[{i}, {j}] *= {e}"]
            else:
                writes += [f"h[{i}:] += {e}", f"h[:{i + 1}] = np.cos({a}[:{i + 1}]) * {w}"]
            write = r.choice(writes)
            remake = r.choice([f"h = np.tanh(h * (1 - {a} * {a}) @ M)", f"h = np.tanh(h @ M + {a} * {c})",
                               f"h = np.tanh(h * {w} + {a})", f"h = np.sin(h) * {w} + {c} * {a}"])
            read = r.choice(["p = h * {c} + {a}", "p = np.sin(h) * {w}", "p = h * h * {c}"]).format(
                a=a, c=c, w=w)
            after = r.choice(["s = s + np.mean({p} * h)", "s = s + np.mean({p}) * np.mean(h)",
                              "s = s + np.mean(np.tanh({p} + h))"])
            body = [write] + ([read, remake] if r.random() < 0.7 else [remake, read])
            body.append(after.format(p="p"))
            if r.random() < 0.3:        # the written value read only by the rebinding
                body = [write, remake, after.format(p=f"h * {c}")]
            end = [f"{name} = s + np.mean(h * {a})" if r.random() < 0.5 else f"{name} = h * {w} + s"]
            if kind == 0:               # a for loop's region
                lines = start + [f"for t in range({r.randint(8, 14)}):"] + [f"    {b}" for b in body]
            elif kind == 1:             # a while on data: a counter that grows by about 1
                steps = body + [f"k = k + 1.0 + 0.05 * np.tanh(np.sum(h))"]
                env = dict(self.env, **self.vals)
                exec("\n".join(start + ["k = 0.0"]), env)
                tests = [0.0]
                for _ in range(r.randint(2, 12)):
                    exec("\n".join(steps), env)
                    tests.append(float(env["k"]))
                thr = 0.5 * (tests[-2] + tests[-1])
                lines = start + ["k = 0.0", f"while k < {fmt(thr)}:"] + [f"    {b}" for b in steps]
            else:                       # an if arm, at the top level or in a loop's body
                test = r.choice([f"np.sum({a})", f"np.mean(np.sin({a}))", f"np.max({a})"])
                value = float(eval(test, dict(self.env, **self.vals)))
                thr = fmt(value + r.choice([-1, 1]) * r.uniform(5 * MARGIN, 0.6))
                other = [f"h = h * {w} + {c}", f"s = s + np.mean(h) * {c}"]
                taken = value > float(thr)          # mostly the arm the example takes writes
                arms = [body, other] if (r.random() < 0.8) == taken else [other, body]
                arm = [f"if {test} > {thr}:", *(f"    {b}" for b in arms[0]), "else:",
                       *(f"    {b}" for b in arms[1])]
                if kind == 2:
                    lines = start + arm
                else:
                    lines = start + [f"for t in range({r.randint(8, 14)}):"] + [f"    {b}" for b in arm]
            self.accept(lines + end, name)
        except Skip:
            pass
        finally:
            self.r = saved
        self.shared_writes()

    def shared_writes(self) -> None:
        """Half the time: an ``if`` on data whose arms bind ``z`` to an array from before it
        on one path (``z = y``, the view ``z = y[1:]``) and to a new one on the other, then
        ``y`` (or a list holding it) updated in place and both read. numpy's update changes
        ``z`` on that path only: the world of the silent wrong value fixed in 67fc5df. Drawn
        from a random stream of its own (carried_writes' programs stay as they were)."""
        r = random.Random(f"shared write {self.seed}")
        if r.random() < 0.5:
            return
        saved, self.r = self.r, r
        try:
            a = self.arr(lambda v: v.ndim in (1, 2) and v.dtype == self.dtype and v.shape[0] >= 2)
            name = self.new()
            w, c, e = self.lit(0.3, 0.8), self.lit(-0.5, 0.5), self.lit(-1.0, 1.0)
            test = r.choice([f"np.sum({a})", f"np.mean(np.sin({a}))", f"np.max({a})"])
            value = float(eval(test, dict(self.env, **self.vals)))
            thr = fmt(value + r.choice([-1, 1]) * r.uniform(5 * MARGIN, 0.6))
            same, fresh = ("y[1:]", f"y[:-1] * {c}") if r.random() < 0.4 else ("y", f"y * {c}")
            arms = [f"    z = {same}", f"    z = {fresh}"]
            if r.random() < 0.5:
                arms.reverse()
            held = r.random() < 0.3
            target = "held[0]" if held else "y"
            write = r.choice([f"{target} += {e}", f"{target} *= {w}", f"{target}[0] = {e}",
                              f"{target}[-1] -= {a}[-1] * {c}"])
            lines = [f"y = {a} * {w}"] + (["held = [y]"] if held else []) + [
                f"if {test} > {thr}:", arms[0], "else:", arms[1], write,
                f"{name} = np.sum(z * {w}) + np.mean(y * {a})"]
            self.accept(lines, name)
        except Skip:
            pass
        finally:
            self.r = saved

    # -- the program ----------------------------------------------------------------------
    def program(self, recurrent: bool | None = None, stencil: bool | None = None,
                more: bool | None = None, lists: bool | None = None,
                alike: bool | None = None, branches: bool | None = None,
                whiles: bool | None = None, exits: bool | None = None,
                inplace: bool | None = None) -> Program:
        rng = np.random.default_rng(self.seed)
        nargs = self.r.choice([1, 1, 2, 2, 2, 3])
        params, args = [], []
        for i in range(nargs):
            shape = self.r.choice(SHAPES)
            x = rng.uniform(-1.5, 1.5, shape).astype(self.dtype)
            if i and self.r.random() < 0.1:             # a Python float argument
                x = float(fmt(rng.uniform(-1.5, 1.5)))
            params.append(f"x{i}")
            args.append(x)
            self.vals[f"x{i}"] = x
        kinds = [(self.unary, 5), (self.binary, 6), (self.reduce, 2), (self.product, 2),
                 (self.index, 3), (self.shape_op, 3), (self.select, 2), (self.inplace, 2),
                 (self.helper_call, 1), (self.scalar, 0.4), (self.elements, 1), (self.loop, 1.5)]
        fns, weights = zip(*kinds)
        want = self.r.randint(2, 9)
        for _ in range(want * 6):
            if len(self.stmts) >= want:
                break
            try:
                self.r.choices(fns, weights)[0]()
            except Skip:
                pass
        if random.Random(f"polynomial {self.seed}").random() < 0.2:
            self.polynomial(random.Random(self.seed + 1), rng, params, args)
        asked = {"recurrent": recurrent, "stencil": stencil, "more": more, "lists": lists,
                 "alike": alike, "branches": branches, "whiles": whiles, "exits": exits,
                 "inplace": inplace}
        for family, share, stream, offset in FAMILIES:
            on = asked[family]
            if on is None:
                on = random.Random(f"{family} {self.seed}").random() < share
            if on:
                getattr(self, FAMILY_METHODS.get(family, family))(
                    random.Random(f"{stream} {self.seed}"),
                    np.random.default_rng(self.seed + offset), params, args)
        read = set().union(*(s.reads for s in self.stmts)) if self.stmts else set()
        unused = [s.defines for s in self.stmts if s.defines not in read] or params[-1:]
        terms = []
        for t in unused[-5:]:
            form = self.r.choice(["np.sum(np.sin({}))", "np.mean({} * {})", "np.sum({})",
                                  "np.sum(np.tanh({}) * {})"])
            if isinstance(self.vals[t], float) or np.ndim(self.vals[t]) == 0:
                form = self.r.choice(["{}", "np.sin({})", "{} * {}"])
                if t in self.loop_losses:     # mostly as it is: the loop's gradient starts from 1;
                    # never squared (its sums reach thousands: finite differences would not hold)
                    form = random.Random(f"loss {self.seed}").choice(["{}", "{}", "np.sin({})"])
            terms.append((form.format(t, t), frozenset({t})))
        return Program(self.seed, np.dtype(self.dtype).name, tuple(params), tuple(args),
                       tuple(self.stmts), tuple(terms))


def _trip_tests(env: dict, vals: dict, start: list, steps: list, test: str, more: list,
                trips: int) -> list[float]:
    """The values of ``test`` after the ``steps`` of each trip of a loop that never leaves."""
    env = dict(env, **vals)
    exec("\n".join(start), env)
    tests = []
    for t in range(trips):
        env["t"] = t
        exec("\n".join(steps), env)
        tests.append(float(eval(test, env)))
        exec("\n".join(more), env)
    return tests


def _leaving(r: random.Random, tests: list, at_least: int = 0) -> float:
    """A threshold ``thr`` for a loop that leaves where a test is below it: on a trip drawn
    from those it can leave at (every earlier test at least MARGIN above ``thr``, that trip's
    at least MARGIN below; not before trip ``at_least``), or on none."""
    options = []
    for k in range(at_least, len(tests) + 1):
        low = min(tests[:k]) - MARGIN if k else np.inf     # below every earlier test
        if k == len(tests):
            options.append(low - 0.5 if k else -1e3)       # no trip leaves
        elif tests[k] + MARGIN < low:
            options.append(0.5 * (tests[k] + MARGIN + min(low, tests[k] + 1.0)))
    if not options:
        raise Skip
    return r.choice(options)


def _type(a) -> str:
    return f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__


def _same(a, b) -> bool:
    return a is b or (np.shape(a) == np.shape(b) and np.array_equal(a, b))


def generate(seed: int, recurrent: bool | None = None, stencil: bool | None = None,
             more: bool | None = None, swapped: bool | None = None,
             lists: bool | None = None, alike: bool | None = None,
             branches: bool | None = None, whiles: bool | None = None,
             exits: bool | None = None, inplace: bool | None = None) -> Program:
    """The program of ``seed``: the same source and arguments on every machine and run.
    ``recurrent``: with an RNN-like loop (Gen.recurrent) or without one, instead of as the
    seed draws it (RECURRENT of the seeds); ``stencil`` the same for a loop over a periodic
    field (Gen.stencil, STENCIL of the seeds), ``more`` for the statements of Gen.more
    (SHAPES_MORE of the seeds); ``swapped`` for an RNN-like loop's pre-activation written
    with the input's product second (``h @ Wh + xs[t] @ Wx``, SWAPPED of the seeds), ``lists``
    for a loop reading the lists it appends to (Gen.listed, LISTS of the seeds), ``alike`` for
    arguments used the same way (Gen.alike, ALIKE of the seeds), ``branches`` for an ``if`` on
    a reduction of data (Gen.branches, BRANCHES of the seeds), ``whiles`` for a ``while`` on a
    reduction of data (Gen.whiles, WHILES of the seeds: none), ``exits`` for a loop left on
    data (Gen.exits, EXITS of the seeds: none), ``inplace`` for an in-place write on a
    carried value made anew after it (Gen.carried_writes, INPLACE of the seeds: none). The rest of the program is the same."""
    gen = Gen(seed)
    if swapped is None:
        swapped = random.Random(f"operands {seed}").random() < SWAPPED
    gen.swapped = swapped
    return gen.program(recurrent, stencil, more, lists, alike, branches, whiles, exits, inplace)
