"""Random programs that read the world outside their arguments, and random changes to that
world between calls: the world fuzzer (tests/worldcheck.py referees them; tools/fuzz.py
--world runs thousands; tests/test_world_fuzz.py a few in CI).

``generate(seed)`` writes a Python module (one seed, one module, on every machine) that defines
a function ``f`` and the world it reads: module globals read by name (a float, a tuple, a config
dict with a nested dict, a list of floats, a list of arrays, an array, an int that bounds a
``range``, a list of ints that picks rows, a helper function reached through a global),
attributes of a global object (a float field, an array field, a list field), a class attribute
read through an instance that an instance attribute may later shadow, closure variables of a
factory (a float, a list, an array, a dict, a list of ints), defaults (an array, a float, a
mutable list), keyword-only defaults of a helper or of ``f`` (``__kwdefaults__``), a
``functools.partial`` held in a global (a float or an array among its stored arguments), data
on a class (an array, a list, a dict, a number, a list of ints) of a module-level class or of
one defined inside a factory (reached through a global holding the class, an instance, or a
closure variable), int arguments in slice bounds (negative, clipped, empty) and in ``range``,
and a struct argument whose fields share one array (tied weights) and read a class attribute. The
arguments are module globals too (``X``, ``ARG_k``, ``M``), so that a change of an int argument
or a rebinding of a struct field is a statement like any other.

``World.calls`` lists, for each call after the first, the statements run in the module's
namespace before it (rebind, change in place, untie and tie again, shadow and unshadow an
attribute, pick another int, grow or rewrite a list of ints, change ``__kwdefaults__`` or a
partial's stored arguments in place or rebind them, change a class's data in place). Every statement keeps the program
one numpy runs: ints stay in the range every use of theirs accepts, arrays keep their shapes,
and values stay moderate, so that a difference between the compiled gradient and the program
run again is the compiler's.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

HELPERS = '''\
def _cell(fn, name):
    """The closure cell of ``fn`` that holds ``name``."""
    return fn.__closure__[fn.__code__.co_freevars.index(name)]


def _set_default(fn, name, value):
    """Rebind the default of parameter ``name`` of ``fn`` (a new ``__defaults__`` tuple)."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount]
    values = list(fn.__defaults__)
    values[names.index(name) - (len(names) - len(values))] = value
    fn.__defaults__ = tuple(values)
'''


@dataclass(frozen=True)
class World:
    seed: int
    head: str                                   # the module up to ``def f``
    sig: str                                    # f's parameters
    terms: tuple[tuple[str, ...], ...]          # f's body: blocks whose last line is tK = ...
    tail: str                                   # the closure's factory call, if any
    args: tuple[str, ...]                       # the module names passed as f's arguments
    calls: tuple[tuple[str, ...], ...]          # statements run before each later call
    leaves: tuple = ()                          # (struct argument, its leaf paths)

    def source(self) -> str:
        names = [block[-1].split(" = ")[0] for block in self.terms]
        fn = [f"def f({self.sig}):", *["    " + line for block in self.terms for line in block],
              f"    return {' + '.join(names + ['np.sum(x) * 0.25'])}"]
        if self.tail:
            fn = [self.tail.splitlines()[0], *["    " + line for line in fn],
                  *self.tail.splitlines()[1:]]
        return "\n".join([self.head, *fn, ""])

    def describe(self) -> str:
        """The module, then the calls and the statements before each."""
        lines = [self.source(), f"# call 1: f({', '.join(self.args)})"]
        for n, stmts in enumerate(self.calls, 2):
            lines += [f"#   {s}" for s in stmts] + [f"# call {n}: f({', '.join(self.args)})"]
        return "\n".join(lines)


class Gen:
    """One program: its declarations, parameters, body terms and candidate mutations."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seed = seed
        self.n = self.rng.randint(6, 12)             # len(x)
        self.rows, self.cols = self.rng.randint(3, 5), self.rng.randint(2, min(4, self.n))
        self.decls: list[str] = []                  # module level, before f
        self.classes: list[str] = []
        self.after: list[str] = []                  # module level, after f
        self.params: list[tuple[str, str]] = []     # (parameter, module name of the argument)
        self.defaults: list[tuple[str, str]] = []   # (parameter, default's source)
        self.kwonly: list[tuple[str, str]] = []     # (keyword-only parameter, default's source)
        self.closure: list[tuple[str, str]] = []    # (factory parameter, value's source)
        self.blocks: list[list[str]] = []           # f's body: one block per loss term
        self.mutations: list = []                   # functions rng -> statement(s)
        self.ints: dict[str, list[int]] = {}        # int parameter -> [lo, hi]
        self.leaves: dict[str, list] = {}
        self.count = 0

    # -- values ---------------------------------------------------------------------------

    def num(self) -> float:
        return round(self.rng.uniform(0.3, 1.8) * self.rng.choice((1, 1, 1, -1)), 2)

    def vec(self, n: int) -> str:
        return "np.array([" + ", ".join(repr(round(self.rng.uniform(-1, 1.2), 2))
                                        for _ in range(n)) + "])"

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def term(self, expr: str, *lines: str) -> None:
        self.blocks.append([*lines, f"t{len(self.blocks)} = {expr}"])

    def mutate(self, *options) -> None:
        """Candidate mutations: functions of the rng that return a statement."""
        self.mutations += options

    def x_expr(self) -> str:
        return self.rng.choice(("x", "x", "np.tanh(x)", "x * 0.5 + 0.1"))

    def pick(self, lo: int, hi: int) -> int:
        """An int in [lo, hi], mostly near the array's length (negative, clipped, empty)."""
        near = max(lo, -self.n - 2), min(hi, self.n + 2)
        return self.rng.randint(*near) if self.rng.random() < 0.85 else self.rng.randint(lo, hi)

    def use_int(self, lo: int, hi: int) -> str:
        """An int parameter whose values every use accepts lie in [lo, hi]."""
        names = list(self.ints)
        if names and (len(names) == 2 or self.rng.random() < 0.6):
            k = self.rng.choice(names)
        else:
            k = "ki"[len(names)]
            self.ints[k] = [-3 * self.n, 3 * self.n]
            self.params.append((k, f"ARG_{k}"))
        span = self.ints[k]
        span[0], span[1] = max(span[0], lo), min(span[1], hi)
        return k

    # -- the world's features -------------------------------------------------------------

    def glob_float(self):
        s = self.name("S")
        self.decls.append(f"{s} = {self.num()}")
        self.term(f"np.sum(np.sin({self.x_expr()}) * x) * {s}")
        self.mutate(lambda r: f"{s} = {self.num()}")

    def glob_tuple(self):
        s = self.name("T")
        self.decls.append(f"{s} = ({self.num()}, {self.num()})")
        self.term(f"{s}[0] * np.sum(x ** 2) + {s}[1] * np.sum(np.cos(x))")
        self.mutate(lambda r: f"{s} = ({self.num()}, {self.num()})")

    def config_dict(self):
        c = self.name("CFG")
        self.decls.append(f'{c} = {{"l2": {self.num()}, "opt": {{"lr": {self.num()}}}, '
                          f'"n": 2}}')
        self.term(f'np.sum({self.x_expr()} ** 2) * {c}["l2"] + {c}["opt"]["lr"] * np.sum(x)')
        self.mutate(lambda r: f'{c}["l2"] = {self.num()}',
                    lambda r: f'{c}["opt"]["lr"] = {self.num()}',
                    lambda r: f'{c}["opt"] = {{"lr": {self.num()}}}',
                    lambda r: f'{c} = {{"l2": {self.num()}, "opt": {{"lr": {self.num()}}}, '
                              f'"n": 2}}')

    def float_list(self):
        lst = self.name("L")
        size = self.rng.randint(1, 3)
        self.decls.append(f"{lst} = [{', '.join(str(self.num()) for _ in range(size))}]")
        j = self.rng.randrange(size)
        if self.rng.random() < 0.5:
            self.term(f"np.sum(np.cos(x) * {lst}[{j}])")
        else:
            a = f"a{self.count}"
            self.term(a, f"{a} = 0.0", f"for c in {lst}:",
                      f"    {a} = {a} + c * np.sum(np.tanh({self.x_expr()}))")
        self.mutate(lambda r: f"{lst}[{j}] = {self.num()}",
                    lambda r: f"{lst}[:] = [{', '.join(str(self.num()) for _ in range(size))}]",
                    lambda r: f"{lst}.append({self.num()})",
                    lambda r: f"{lst} = [{', '.join(str(self.num()) for _ in range(size))}]")

    def array_list(self):
        lst, c = self.name("LAY"), self.cols
        self.decls.append(f"{lst} = [{self.vec(c)}, {self.vec(c)}]")
        a = f"a{self.count}"
        self.term(a, f"{a} = 0.0", f"for W in {lst}:",
                  f"    {a} = {a} + np.sum(np.tanh(x[:{c}] * W))")
        self.mutate(lambda r: f"{lst}[0] = {lst}[0] * {self.num()}",
                    lambda r: f"{lst}[1][{r.randrange(c)}] = {self.num()}",
                    lambda r: f"{lst}[1] = {lst}[0]",
                    lambda r: f"{lst}.append({self.vec(c)})")

    def glob_array(self):
        g = self.name("G")
        self.decls.append(f"{g} = {self.vec(self.n)}")
        self.term(self.rng.choice((f"np.sum(x * {g})", f"np.sum(np.tanh(x + {g}))",
                                   f"np.sum(x[1:] * {g}[:-1])")))
        self.mutate(lambda r: f"{g}[{r.randrange(self.n)}] = {self.num()}",
                    lambda r: f"{g} *= {self.num()}",
                    lambda r: f"{g} = {g} + {self.num()}")

    def glob_object(self):
        cls, o = self.name("Obj"), f"O{self.count}"
        self.classes.append(
            f"class {cls}:\n    def __init__(self, scale):\n        self.scale = scale\n"
            f"        self.W = {self.vec(self.n)}\n"
            f"        self.ws = [{self.num()}, {self.num()}]\n")
        self.decls.append(f"{o} = {cls}({self.num()})")
        self.term(self.rng.choice((f"{o}.scale * np.sum(x * x)", f"np.sum(x * {o}.W)",
                                   f"{o}.ws[1] * np.sum(np.sin(x)) + {o}.scale")))
        self.mutate(lambda r: f"{o}.scale = {self.num()}",
                    lambda r: f"{o}.W[{r.randrange(self.n)}] = {self.num()}",
                    lambda r: f"{o}.W = {o}.W * {self.num()}",
                    lambda r: f"{o}.ws[{r.randrange(2)}] = {self.num()}",
                    lambda r: f"{o} = {cls}({self.num()})")

    def class_attr(self):
        cls, o = self.name("K"), f"KI{self.count}"
        self.classes.append(f"class {cls}:\n    rate = {self.num()}\n")
        self.decls.append(f"{o} = {cls}()")
        self.term(self.rng.choice((f"{o}.rate * np.sum(np.cos(x))",
                                   f"{cls}.rate * np.sum(x ** 2) + {o}.rate")))
        self.mutate(lambda r: f"{cls}.rate = {self.num()}",
                    lambda r: f"{o}.rate = {self.num()}",
                    lambda r: f'{o}.__dict__.pop("rate", None)')

    def helper(self):
        s, h = self.name("SH"), f"hlp{self.count}"
        self.decls.append(f"{s} = {self.num()}")
        self.classes.append(f"def {h}(v):\n    return np.sin(v) * {s}\n\n\n"
                            f"def {h}_other(v):\n    return np.cos(v) * {self.num()}\n")
        self.term(f"np.sum({h}(x))")
        self.mutate(lambda r: f"{s} = {self.num()}", lambda r: f"{h} = {h}_other")

    def global_int(self):
        g = self.name("NS")
        self.decls.append(f"{g} = {self.rng.randint(0, self.n)}")
        a = f"a{self.count}"
        self.term(a, f"{a} = 0.0", f"for t in range({g}):",
                  f"    {a} = {a} + np.sin(x[t]) * x[(t + 1) % {self.n}]")
        self.mutate(lambda r: f"{g} = {r.randint(0, self.n)}")

    def int_list(self, where: str = "global"):
        ids, size = self.name("IDS"), self.rng.randint(1, 4)

        def draw(r, k=size):
            return "[" + ", ".join(str(r.randrange(self.n)) for _ in range(k)) + "]"
        a = f"a{self.count}"
        name = ids if where == "global" else ids.lower()
        if where == "global":
            self.decls.append(f"{ids} = {draw(self.rng)}")
        else:
            self.closure.append((name, draw(self.rng)))
        if self.rng.random() < 0.6:
            self.term(a, f"{a} = 0.0", f"for t in range(len({name})):",
                      f"    {a} = {a} + np.tanh(x[{name}[t]]) * x[{name}[t]]")
        else:
            self.term(f"np.sum(x[{name}] ** 2)")
        target = ids if where == "global" else f'_cell(f, "{name}").cell_contents'
        self.mutate(lambda r: f"{target}[:] = {draw(r)}",
                    lambda r: f"{target}[0] = {r.randrange(self.n)}",
                    lambda r: f"{target}.append({r.randrange(self.n)})")
        if where == "global":
            self.mutate(lambda r: f"{ids} = {draw(r, r.randint(1, 4))}")
        else:
            self.mutate(lambda r: f'_cell(f, "{name}").cell_contents = {draw(r, r.randint(1, 4))}')

    def closure_values(self):
        c = self.name("c")
        kind = self.rng.choice(("float", "list", "array", "dict"))
        cell = f'_cell(f, "{c}").cell_contents'
        if kind == "float":
            self.closure.append((c, str(self.num())))
            self.term(f"{c} * np.sum(np.sin(x) ** 2)")
            self.mutate(lambda r: f"{cell} = {self.num()}")
        elif kind == "list":
            self.closure.append((c, f"[{self.num()}, {self.num()}]"))
            self.term(f"{c}[0] * np.sum(x) + {c}[1] * np.sum(x * x)")
            self.mutate(lambda r: f"{cell}[{r.randrange(2)}] = {self.num()}",
                        lambda r: f"{cell} = [{self.num()}, {self.num()}]")
        elif kind == "array":
            self.closure.append((c, self.vec(self.n)))
            self.term(f"np.sum(np.tanh(x) * {c})")
            self.mutate(lambda r: f"{cell}[{r.randrange(self.n)}] = {self.num()}",
                        lambda r: f"{cell} = {cell} * {self.num()}")
        else:
            self.closure.append((c, f'{{"w": {self.num()}}}'))
            self.term(f'{c}["w"] * np.sum(np.cos(x) * x)')
            self.mutate(lambda r: f'{cell}["w"] = {self.num()}',
                        lambda r: f'{cell} = {{"w": {self.num()}}}')

    def default_values(self):
        d = self.name("d")
        kind = self.rng.choice(("array", "float", "list"))
        if kind == "array":
            self.defaults.append((d, self.vec(3)))
            self.term(f"np.sum(np.sin(x[:3]) * {d})")
            self.mutate(lambda r: f"f.__defaults__[{{i}}][{r.randrange(3)}] = {self.num()}",
                        lambda r: f'_set_default(f, "{d}", {self.vec(3)})')
        elif kind == "float":
            self.defaults.append((d, str(self.num())))
            self.term(f"{d} * np.sum(x ** 2)")
            self.mutate(lambda r: f'_set_default(f, "{d}", {self.num()})')
        else:
            self.defaults.append((d, f"[{self.num()}, {self.num()}]"))
            self.term(f"{d}[0] * np.sum(np.sin(x)) + {d}[1]")
            self.mutate(lambda r: f"f.__defaults__[{{i}}][{r.randrange(2)}] = {self.num()}",
                        lambda r: f'_set_default(f, "{d}", [{self.num()}, {self.num()}])')
        index = len(self.defaults) - 1
        self.mutations[-2:] = [lambda r, m=m: m(r).replace("{i}", str(index))
                               for m in self.mutations[-2:]]

    def int_slice(self):
        n = self.n
        kinds = [("np.sum(x[:-{k}] ** 2)", -3 * n, 3 * n),
                 ("np.sum(np.sin(x[-{k}:]))", -3 * n, 3 * n),
                 ("np.sum(x[{k}:-{k}] * x[{k}:-{k}])", -3 * n, 3 * n),
                 ("np.sum(x[{k}:] ** 3)", -3 * n, 3 * n),
                 ("np.sum(np.tanh(x[:{k}]))", -3 * n, 3 * n),
                 ("np.sum(x[{k}:{k} + 3] ** 2)", -3 * n, 3 * n),
                 ("np.sum(AM[:-{k}, :] ** 2)", -3 * n, 3 * n),
                 ("np.sum(AM[{k}:, 1:] * 0.5)", -3 * n, 3 * n),
                 ("x[{k}] * np.sum(x)", -n, n - 1),
                 ("np.sum(x[{k} % 3:] ** 2)", -3 * n, 3 * n)]
        text, lo, hi = self.rng.choice(kinds)
        k = self.use_int(lo, hi)
        if "AM" in text:
            self.need_matrix()
        self.term(text.format(k=k).replace("AM", "A"))
        if self.rng.random() < 0.3:                 # a slice between two int arguments
            other = "i" if k == "k" else "k"
            if other not in self.ints:
                self.ints[other] = [-3 * n, 3 * n]
                self.params.append((other, f"ARG_{other}"))
            self.term(self.rng.choice((f"np.sum(x[{k}:{other}] * 2.0)",
                                       f"np.sum(np.cos(x[-{other}:-{k}]))")))

    def int_range(self):
        k = self.use_int(-2, self.n)
        a = f"a{self.count}"
        self.count += 1
        if self.rng.random() < 0.6:
            self.term(a, f"{a} = 0.0", f"for t in range({k}):",
                      f"    {a} = {a} + np.tanh(x[t] * {self.num()}) * x[t]")
            return
        # states kept in a list, the last read back (hs[-1]): from 8 steps a loop region
        hs = f"hs{self.count}"
        self.term(f"np.sum({hs}[-1] ** 2)", f"{hs} = [x[:2] * 0.5]", f"for t in range({k}):",
                  f"    {hs}.append(np.tanh({hs}[-1] * {self.num()} + x[t]))")

    def need_matrix(self):
        if ("A", "AM") not in self.params:
            self.params.append(("A", "AM"))

    def tied_struct(self):
        c = self.cols
        self.classes.append("class Enc:\n    pass\n")
        self.classes.append(f"class Model:\n    scale = {self.num()}\n")
        self.decls += ["M = Model()", "M.enc = Enc()", f"M.enc.W = {self.vec(c)}",
                       "M.dec_W = M.enc.W", f"M.b = {self.vec(c)}", f"M.gain = {self.num()}"]
        self.params.append(("m", "M"))
        self.leaves["M"] = [("enc", "W"), ("dec_W",), ("b",), ("gain",), ("scale",)]
        xs = f"x[:{c}]"
        self.term(self.rng.choice((f"np.sum(np.tanh({xs} * m.enc.W) * m.dec_W)",
                                   f"np.sum(np.tanh({xs} @ np.outer(m.enc.W, m.dec_W)))")))
        for _ in range(self.rng.randint(0, 2)):
            self.term(self.rng.choice(("np.sum((m.dec_W - 0.3) ** 2) * m.gain",
                                       "np.sum(m.enc.W * m.b)",
                                       f"m.scale * np.sum(m.dec_W * {xs})",
                                       "np.sum(m.b * m.dec_W) * m.scale")))
        self.mutate(lambda r: "M.dec_W = M.dec_W.copy()",
                    lambda r: f"M.dec_W = M.dec_W - {self.num() / 10}",
                    lambda r: "M.dec_W = M.enc.W",
                    lambda r: "M.enc.W = M.dec_W",
                    lambda r: f"M.enc.W += {self.num() / 10}",
                    lambda r: "M.b = M.enc.W",
                    lambda r: f"M.scale = {self.num()}",
                    lambda r: f"Model.scale = {self.num()}",
                    lambda r: f"M.gain = {self.num()}",
                    lambda r: 'M.__dict__.pop("scale", None)')

    def array_dict(self):
        d = self.name("DATA")
        self.decls.append(f'{d} = {{"w": {self.vec(self.n)}, "b": np.array({self.num()})}}')
        self.term(f'np.sum(np.tanh(x * {d}["w"])) + {d}["b"] * np.sum(x)')
        self.mutate(lambda r: f'{d}["w"] = {d}["w"] * {self.num()}',
                    lambda r: f'{d}["w"][{r.randrange(self.n)}] = {self.num()}',
                    lambda r: f'{d}["b"][...] = {self.num()}',
                    lambda r: f'{d}["b"] = np.array({self.num()})')

    def nested_object(self):
        cls, o = self.name("Cfg"), f"C{self.count}"
        self.classes.append(
            f"class {cls}:\n    def __init__(self):\n        self.inner = {cls}Inner()\n"
            f"        self.steps = {self.rng.randint(0, self.n)}\n"
            f"        self.ids = [{self.rng.randrange(self.n)}, {self.rng.randrange(self.n)}]\n\n\n"
            f"class {cls}Inner:\n    def __init__(self):\n        self.l2 = {self.num()}\n")
        self.decls.append(f"{o} = {cls}()")
        a = f"a{self.count}"
        self.term(self.rng.choice((f"{o}.inner.l2 * np.sum(x ** 2)",
                                   f"np.sum(x[{o}.ids] * {o}.inner.l2)")))
        self.term(a, f"{a} = 0.0", f"for t in range({o}.steps):",
                  f"    {a} = {a} + np.cos(x[t]) * x[t]")
        self.mutate(lambda r: f"{o}.inner.l2 = {self.num()}",
                    lambda r: f"{o}.inner = {cls}Inner()",
                    lambda r: f"{o}.steps = {r.randint(0, self.n)}",
                    lambda r: f"{o}.ids[0] = {r.randrange(self.n)}",
                    lambda r: f"{o}.ids = {[r.randrange(self.n) for _ in range(r.randint(1, 3))]}")

    def flags(self):
        flag, mode, act = self.name("FLAG"), f"MODE{self.count}", f"ACT{self.count}"
        self.decls += [f"{flag} = {self.rng.choice((True, False))}",
                       f'{mode} = "{self.rng.choice(("sin", "square"))}"',
                       f"{act} = np.{self.rng.choice(('tanh', 'sin', 'cos'))}"]
        a = f"a{self.count}"
        self.term(a, f"if {flag}:", f"    {a} = np.sum({act}(x))", "else:",
                  f"    {a} = np.sum(x * x) * 0.5",
                  f'if {mode} == "sin":', f"    {a} = {a} + np.sum(np.sin(x))")
        self.mutate(lambda r: f"{flag} = not {flag}",
                    lambda r: f'{mode} = "{r.choice(("sin", "square"))}"',
                    lambda r: f"{act} = np.{r.choice(('tanh', 'sin', 'cos', 'arctan'))}")

    def numpy_scalars(self):
        s, z = self.name("NP"), f"Z{self.count}"
        self.decls += [f"{s} = np.float64({self.num()})", f"{z} = np.array({self.num()})"]
        self.term(f"{s} * np.sum(np.sin(x)) + np.sum(x * x) * {z}")
        self.mutate(lambda r: f"{s} = np.float64({self.num()})",
                    lambda r: f"{z}[...] = {self.num()}",
                    lambda r: f"{z} += {self.num()}",
                    lambda r: f"{z} = np.array({self.num()})")

    def float_argument(self):
        if ("s", "ARG_s") in self.params:
            return
        self.params.append(("s", "ARG_s"))
        self.decls.append(f"ARG_s = {self.num()}")
        self.term("s * np.sum(np.tanh(x)) + s * s")
        self.mutate(lambda r: f"ARG_s = {self.num()}")

    def kw_defaults(self):
        """Keyword-only defaults of a helper (or of ``f``), rebound or changed in place through
        ``__kwdefaults__`` (a dict: its float and array read at run time, its int checked)."""
        c = self.cols
        if self.rng.random() < 0.3 and not self.kwonly:      # f's own: f(x, ..., *, e=...)
            e = self.name("e")
            self.kwonly.append((e, f"{self.vec(c)}"))
            self.term(f"np.sum(np.sin(x[:{c}]) * {e})")
            self.mutate(lambda r: f'f.__kwdefaults__["{e}"][{r.randrange(c)}] = {self.num()}',
                        lambda r: f'f.__kwdefaults__["{e}"] = {self.vec(c)}',
                        lambda r: f'f.__kwdefaults__ = {{"{e}": {self.vec(c)}}}')
            return
        h = self.name("kwh")
        self.classes.append(f"def {h}(v, *, a={self.num()}, w={self.vec(c)}, "
                            f"k={self.rng.randint(1, c)}):\n"
                            f"    return np.sum(np.sin(v[:k]) * w[:k]) * a\n")
        self.term(self.rng.choice((f"{h}(x)", f"{h}(x, a={self.num()})",
                                   f"{h}(x * 0.5, k=1) + {h}(x)")))
        kw = f"{h}.__kwdefaults__"
        self.mutate(lambda r: f'{kw}["a"] = {self.num()}',
                    lambda r: f'{kw}["w"][{r.randrange(c)}] = {self.num()}',
                    lambda r: f'{kw}["w"] = {self.vec(c)}',
                    lambda r: f'{kw}["k"] = {r.randint(1, c)}',
                    lambda r: f'{kw} = {{"a": {self.num()}, "w": {self.vec(c)}, '
                              f'"k": {r.randint(1, c)}}}')

    def global_partial(self):
        """A ``functools.partial`` held in a global: rebound to another partial, or its stored
        arguments changed in place (``P.keywords["s"] = ...``, ``P.args[0][1] = ...``)."""
        g, p, c = self.name("pg"), f"P{self.count}", self.cols
        self.classes.append(f"def {g}(s, v, W, k=1):\n"
                            f"    return np.sum(np.tanh(v[:k] * s) * W[:k])\n\n\n"
                            f"def {g}_w(W, v, s, k=1):\n    return {g}(s, v, W, k)\n")
        if self.rng.random() < 0.5:             # a float in args, the array in keywords

            def make(r):
                return f"functools.partial({g}, {self.num()}, W={self.vec(c)}, " \
                       f"k={r.randint(1, c)})"
            self.mutate(lambda r: f'{p}.keywords["W"][{r.randrange(c)}] = {self.num()}',
                        lambda r: f'{p}.keywords["W"] = {self.vec(c)}')
        else:                                   # the array in args, a float in keywords

            def make(r):
                return f"functools.partial({g}_w, {self.vec(c)}, s={self.num()}, " \
                       f"k={r.randint(1, c)})"
            self.mutate(lambda r: f'{p}.keywords["s"] = {self.num()}',
                        lambda r: f"{p}.args[0][{r.randrange(c)}] = {self.num()}")
        self.decls.append(f"{p} = {make(self.rng)}")
        self.term(self.rng.choice((f"{p}(x)", f"{p}(np.sin(x)) * 0.5", f"{p}(x, k=1)")))
        self.mutate(lambda r: f"{p} = {make(r)}",
                    lambda r: f'{p}.keywords["k"] = {r.randint(1, c)}')

    def class_data(self, where: str | None = None):
        """Data on a class (an array, a list of floats, a dict, a number, a list of ints) read
        through the class or an instance: a module-level class, or one defined inside a
        factory (reached through a global holding the class, an instance, or a closure
        variable), changed in place, rebound or shadowed between calls."""
        where = where or self.rng.choice(("module", "module", "class", "instance", "closure"))
        cls, c = self.name("CD"), self.cols
        body = (f"class {cls}:\n    W = {self.vec(self.n)}\n"
                f"    scales = [{self.num()}, {self.num()}]\n"
                f'    table = {{"a": {self.num()}}}\n    rate = {self.num()}\n'
                f"    ids = [{self.rng.randrange(self.n)}, {self.rng.randrange(self.n)}]\n\n"
                f"    def term(self, v):\n"
                f"        return np.sum(np.sin(v) * self.W) * self.scales[1]\n")
        inst = f"CDI{self.count}"
        if where == "module":
            self.classes.append(body)
            target, ref = cls, self.rng.choice((cls, inst))
            self.decls.append(f"{inst} = {cls}()")
        else:
            maker = f"make_{cls.lower()}"
            self.classes.append(f"def {maker}():\n" + "".join(
                f"    {line}\n" if line else "\n" for line in body.splitlines())
                + f"    return {cls}\n")
            if where == "class":
                self.decls.append(f"{cls} = {maker}()")
                target = ref = cls
                self.mutate(lambda r: f"{cls} = {maker}()")
            elif where == "instance":
                self.decls.append(f"{inst} = {maker}()()")
                target, ref = f"type({inst})", inst
            else:
                ref = cls.lower()
                self.closure.append((ref, f"{maker}()"))
                target = f'_cell(f, "{ref}").cell_contents'
        terms = [f"np.sum(np.tanh(x) * {ref}.W) * {ref}.rate",
                 f"{ref}.scales[{self.rng.randrange(2)}] * np.sum(x ** 2) "
                 f'+ {ref}.table["a"] * np.sum(np.sin(x))',
                 f"np.sum(x[{ref}.ids] ** 2) * {ref}.scales[0]"]
        if ref == inst:
            terms.append(f"{inst}.term(x)")
        self.term(self.rng.choice(terms))
        self.mutate(lambda r: f"{target}.W[{r.randrange(self.n)}] = {self.num()}",
                    lambda r: f"{target}.W = {target}.W * {self.num()}",
                    lambda r: f"{target}.scales[{r.randrange(2)}] = {self.num()}",
                    lambda r: f"{target}.scales.append({self.num()})",
                    lambda r: f'{target}.table["a"] = {self.num()}',
                    lambda r: f"{target}.rate = {self.num()}",
                    lambda r: f"{target}.ids[{r.randrange(2)}] = {r.randrange(self.n)}",
                    lambda r: f"{target}.ids = [{r.randrange(self.n)}, {r.randrange(self.n)}]")
        if ref == inst:
            self.mutate(lambda r: f"{inst}.rate = {self.num()}",
                        lambda r: f'{inst}.__dict__.pop("rate", None)',
                        lambda r: f"{inst}.W = {self.vec(self.n)}",
                        lambda r: f'{inst}.__dict__.pop("W", None)')

    def changes(self) -> list:
        """The candidate changes, each once (an int's is listed thrice, to draw it often)."""
        return list({id(m): m for m in self.mutations}.values())

    FEATURES = ("glob_float", "glob_tuple", "config_dict", "float_list", "array_list",
                "glob_array", "glob_object", "class_attr", "helper", "global_int", "int_list",
                "closure_values", "default_values", "int_slice", "int_slice", "int_range",
                "tied_struct", "array_dict", "nested_object", "flags", "numpy_scalars",
                "float_argument", "kw_defaults", "global_partial", "class_data", "class_data")

    # -- the module -----------------------------------------------------------------------

    def build(self, chosen: tuple = (), change: int | None = None) -> World:
        """The world: ``chosen`` features (by default two to five drawn), three to five calls
        after the first with one to three changes each (``change``: one call, after that one
        of the candidate changes)."""
        rng = self.rng
        chosen = chosen or rng.sample(self.FEATURES, rng.randint(2, 5))
        for feature in chosen:
            if feature == "tied_struct" and ("m", "M") in self.params:
                continue
            if feature == "int_list" and rng.random() < 0.35:
                self.int_list("closure")
            else:
                getattr(self, feature)()
        self.params.insert(0, ("x", "X"))
        arrays = [f"X = {self.vec(self.n)}"]
        if ("A", "AM") in self.params:
            arrays.append("AM = np.array([" + ", ".join(self.vec(self.cols)[9:-1]
                                                        for _ in range(self.rows)) + "])")
        for k, (lo, hi) in self.ints.items():
            arrays.append(f"ARG_{k} = {self.pick(lo, hi)}")
            self.mutate(*[lambda r, k=k, lo=lo, hi=hi: f"ARG_{k} = {self.pick(lo, hi)}"] * 3)
        self.mutate(lambda r: "X = X * 1.05 - 0.02")
        sig = ", ".join([p for p, _ in self.params] + [f"{d}={v}" for d, v in self.defaults]
                        + ["*"] * bool(self.kwonly) + [f"{d}={v}" for d, v in self.kwonly])
        tail = ""
        if self.closure:
            tail = (f"def make({', '.join(c for c, _ in self.closure)}):\n    return f\n\n"
                    f"f = make({', '.join(v for _, v in self.closure)})")
        head = "\n".join(["import functools", "", "import numpy as np", "",
                          f"# world seed {self.seed}", "", HELPERS, "",
                          *[c + "\n" for c in self.classes], *self.decls, *arrays, "", ""])
        calls = []
        for _ in range(rng.randint(3, 5)):
            picks = rng.sample(self.mutations, min(len(self.mutations), rng.randint(1, 3)))
            calls.append(tuple(m(rng) for m in picks))
        if change is not None:
            calls = [(self.changes()[change](rng),)]
        return World(self.seed, head, sig, tuple(tuple(b) for b in self.blocks), tail,
                     tuple(n for _, n in self.params), tuple(calls),
                     tuple((k, tuple(v)) for k, v in self.leaves.items()))


def generate(seed: int) -> World:
    """The program and the world changes of ``seed``."""
    return Gen(seed).build()


def catalogue(seeds=range(3)):
    """``(feature, change, world)``: for each seed, each feature on its own and each of its
    candidate changes, one world of two calls with that one change between them (a table of
    which kinds of outside read and change are still wrong, each with a small reproducer)."""
    for seed in seeds:
        for feature in dict.fromkeys(Gen.FEATURES):
            probe = Gen(seed)
            probe.build((feature,))
            for i in range(len(probe.changes())):
                world = Gen(seed).build((feature,), change=i)
                yield feature, world.calls[0][0], world
