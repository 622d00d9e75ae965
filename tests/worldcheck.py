"""The referee of the world fuzzer (tests/worlds.py): compile, change the world, call, compare.

``check(world)`` imports the world's module (``fuzzcheck.load``: a real module, whose globals
the generated code reads by the module's name), compiles ``f``'s gradient with ``ys.simplegrad``
in both forms (``buffered``, the default, and ``plain``, ``buffers=False``), and calls it, and
``ys.grad`` (form ``grad``), once on the world as written and once after each of the world's
changes (``World.calls``). Before each call it runs ``f`` again (the value, with numpy) and
takes central differences in float64 (``fuzzcheck.Differences``) with respect to every float
array argument and every leaf of a struct argument: one array reached by two paths (tied
weights) is one leaf, perturbed in place so that both paths see it, and its gradient is the sum
of the entries that the gradient's ``{path: gradient}`` dict holds for it. Each call must give
that value and those gradients, or refuse cleanly (``stale``): a ``GuardError`` (the generated
module's own or yota_s2s's), an ``ArgumentMismatch`` or another ``YotaError`` subclass but
``InternalError``, or the generated code's argument check ("... compile again for these
arguments"). A ``simplegrad`` form that refused is compiled again for the world as it is now,
and that function must then be right. At the last call the buffered form is called again with
``out=`` entries that are the world's own arrays of an argument's shape (``out_on_the_world``):
refused, or the same results. The outcome of a world is the worst of its calls':

- ``ok``: every call right;
- ``stale``: every call right or refused cleanly, some refused;
- ``refusal``: a clean ``YotaError`` when compiling (an unsupported construct);
- ``generator``: numpy itself fails on the program, or its value or differences are not finite;
- ``crash``: any other exception, when compiling or calling;
- ``mismatch``: a value or gradient that differs from the program run again (the worst).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import yota_s2s as ys
from yota_s2s.errors import InternalError, YotaError

from .fuzzcheck import (TOLERANCES, Differences, Found, Outcome, _first, far, gradient_far,
                        load)

FORMS = ("buffered", "plain", "grad")
RANK = {"ok": 0, "stale": 1, "refusal": 2, "generator": 3, "crash": 4, "mismatch": 5}
KINDS = tuple(RANK)
RTOL, ATOL, TIGHT = TOLERANCES[8]


def is_refusal(e: BaseException) -> bool:
    """A clean refusal of a call whose world changed: a YotaError subclass (not InternalError),
    the generated module's GuardError, or its argument check."""
    if isinstance(e, YotaError):
        return type(e) not in (YotaError, InternalError)
    if type(e).__name__ == "GuardError":
        return True
    return isinstance(e, TypeError) and "compile again for these arguments" in str(e)


# -- struct leaves --------------------------------------------------------------------------

def get(obj, path):
    for key in path:
        obj = obj[key] if isinstance(obj, (list, tuple, dict)) else getattr(obj, key)
    return obj


def put(obj, path, value) -> None:
    parent = get(obj, path[:-1])
    if isinstance(parent, (list, dict)):
        parent[path[-1]] = value
    else:
        setattr(parent, path[-1], value)


class Flat:
    """``f`` as a function of its float arguments only: the float array arguments, then, for
    each struct argument, one entry per leaf (an array reached by several paths is one leaf,
    installed at all of them). Each call installs the leaves it is given and puts the
    original objects back after."""

    def __init__(self, f, args, leaves: dict[int, list]):
        self.f, self.args = f, list(args)
        self.slots, self.values = [], []        # (argument, paths or None), its value
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray) and a.dtype.kind == "f":
                self.slots.append((i, None))
                self.values.append(a)
            for paths in self.groups(a, leaves.get(i, ())):
                self.slots.append((i, paths))
                self.values.append(get(a, paths[0]))

    @staticmethod
    def groups(struct, paths) -> list[list]:
        """The leaf paths of ``struct``, one group per array object; a float is its own. An
        attribute is a leaf where the object holds it (a class attribute read through the
        object is not a field: an instance attribute that shadows it is)."""
        by_id, out = {}, []
        for p in paths:
            parent = get(struct, p[:-1])
            if not isinstance(parent, (list, tuple, dict)) and p[-1] not in vars(parent):
                continue
            v = get(struct, p)
            if isinstance(v, np.ndarray):
                if id(v) in by_id:
                    by_id[id(v)].append(p)
                    continue
                by_id[id(v)] = group = [p]
                out.append(group)
            elif isinstance(v, float):
                out.append([p])
        return out

    def __call__(self, *flat):
        args = list(self.args)
        try:
            for (i, paths), v in zip(self.slots, flat):
                if paths is None:
                    args[i] = v
                else:
                    for p in paths:
                        put(args[i], p, v)
            return self.f(*args)
        finally:
            for (i, paths), v in zip(self.slots, self.values):
                if paths is not None:
                    for p in paths:
                        put(args[i], p, v)

    def split(self, grads) -> list:
        """The gradients a compiled function returned, one per entry of the flat list (a
        struct's dict entries summed per leaf); raise Found on an entry for no leaf."""
        out = []
        for k, (i, paths) in enumerate(self.slots):
            g = grads[i]
            if paths is None:
                out.append(g)
                continue
            if not isinstance(g, dict):
                raise Found("mismatch", f"gradient {i}", f"{type(g).__name__} for a struct")
            hits = [v for p, v in g.items() if tuple(p) in map(tuple, paths)]
            out.append(None if not hits else sum(np.asarray(h, np.float64) for h in hits))
        for i, g in enumerate(grads):
            if isinstance(g, dict):
                known = {tuple(p) for (j, paths) in self.slots if j == i and paths
                         for p in paths}
                extra = [p for p in g if tuple(p) not in known]
                if extra:
                    raise Found("mismatch", f"gradient {i}", f"entry for {extra[0]}, no leaf")
        return out


# -- one call -------------------------------------------------------------------------------

def reference(f, args, leaves):
    """numpy's value of ``f(*args)`` and the central differences (``Flat``, ``Differences``)."""
    with np.errstate(all="ignore"):
        value = float(f(*args))
        flat = Flat(f, args, leaves)
        fd = Differences(flat, flat.values, value)
    if not np.isfinite(value) or not all(np.all(np.isfinite(g)) for g in fd):
        raise ValueError("not finite")
    return value, flat, fd


def judge(result, args, value, flat, fd) -> None:
    """Raise Found("mismatch") where ``result`` (value, gradient per argument) is wrong."""
    if not isinstance(result, tuple) or len(result) != len(args) + 1:
        raise Found("mismatch", "call", f"returned {type(result).__name__} of the wrong length")
    bad = far(np.float64(result[0]), value, TIGHT, TIGHT * max(1.0, abs(value)))
    if bad:
        raise Found("mismatch", "value vs numpy", bad)
    for i, a in enumerate(args):
        g = result[1 + i]
        if not isinstance(a, (np.ndarray, float)) and not isinstance(g, dict) and g is not None:
            raise Found("mismatch", f"gradient {i}", f"{type(g).__name__} for {type(a).__name__}")
    for k, g in enumerate(flat.split(result[1:])):
        bad = gradient_far(g, fd, k, value, RTOL, ATOL)
        if bad:
            i, paths = flat.slots[k]
            what = f"gradient {i}" + (f" {paths}" if paths else "")
            raise Found("mismatch", f"{what} vs finite differences", bad)


def compile_form(form, f, args):
    try:
        return ys.simplegrad(f, *args, buffers=form == "buffered")
    except YotaError as e:
        internal = type(e) in (YotaError, InternalError)
        raise Found("crash" if internal else "refusal", "compile", _first(e))
    except Exception as e:
        raise Found("crash", "compile", _first(e))


def call_form(form, compiled, modules, f, args):
    """One call of ``form``: its result (None where ``ys.grad`` refused) and the refusal it
    met first ('' if none; a ``simplegrad`` form is then compiled again and called);
    ``modules[form]``: the generated module that ran."""
    if form == "grad":
        try:
            value, g = ys.grad(f, *args)
        except Exception as e:
            if is_refusal(e):
                return None, "ys.grad refused: " + _first(e)
            raise Found("crash", "call", _first(e))
        modules[form] = g.source
        modules.setdefault("loaded", set()).add(g.function.__module__)
        return (value, *g), ""
    modules[form] = ys.source(compiled[form])
    modules.setdefault("loaded", set()).add(compiled[form].__module__)
    try:
        return compiled[form](*args), ""
    except Exception as e:
        if not is_refusal(e):
            raise Found("crash", "call", _first(e))
        refusal = _first(e)
    compiled[form] = compile_form(form, f, args)
    modules[form] = ys.source(compiled[form])
    modules["loaded"].add(compiled[form].__module__)
    try:
        return compiled[form](*args), refusal
    except Exception as e:
        raise Found("crash", "call after compiling again", _first(e))


def world_arrays(space: dict, f) -> list:
    """The float arrays ``f`` may read from outside: module globals, fields of module-global
    objects, cells of ``f``'s closure (arguments included: they are globals too)."""
    found = []
    for v in list(space.values()) + [c.cell_contents for c in f.__closure__ or ()]:
        found += [v] + [a for a in vars(v).values()] if hasattr(v, "__dict__") and not \
            isinstance(v, type) and not callable(v) else [v]
    return [a for a in found if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def out_on_the_world(df, f, space, args, value, flat, fd) -> None:
    """``out=`` entries that are arrays of the world (of the argument's shape, not the argument
    itself): refused, or the same results as without out= (the module must not read an array
    it has written a gradient into). The world's arrays are put back after."""
    for i, a in enumerate(args):
        if not isinstance(a, np.ndarray):
            continue
        for w in world_arrays(space, f):
            if w is a or w.shape != a.shape or w.dtype != a.dtype or not w.flags.writeable:
                continue
            kept = w.copy()
            out = [None] * len(args)
            out[i] = w
            try:
                result = df(*args, out=out)
            except (YotaError, ValueError, TypeError):
                continue
            except Exception as e:
                raise Found("crash", "out= an array of the world", _first(e))
            else:
                got = (result[0], *result[1:i + 1], result[i + 1].copy(), *result[i + 2:])
            finally:
                w[...] = kept
            try:
                judge(got, args, value, flat, fd)
            except Found as e:
                raise Found(e.kind, f"out=[{i}] an array of the world: {e.check}", e.detail)


# -- a world --------------------------------------------------------------------------------

def check(world, directory: Path, forms=FORMS) -> Outcome:
    """Compile, change the world, call and compare; the worst outcome of every call."""
    try:
        f = load(world, directory)
        module = sys.modules[f.__module__]
    except Exception as e:
        return Outcome(world.seed, "generator", "", "import", _first(e))
    space = vars(module)
    struct = dict(world.leaves)
    leaves = {i: struct[name] for i, name in enumerate(world.args) if name in struct}
    kinds = {form: "ok" for form in forms}
    found = {form: Outcome(world.seed, "ok", form) for form in forms}
    compiled, modules = {}, {}
    try:
        for n, stmts in enumerate(((),) + tuple(world.calls), 1):
            try:
                for s in stmts:
                    exec(s, space)
                f = space["f"]
                args = [space[name] for name in world.args]
                value, flat, fd = reference(f, args, leaves)
            except Exception as e:
                return Outcome(world.seed, "generator", "", f"call {n}: numpy", _first(e))
            for form in forms:
                if kinds[form] in ("refusal", "crash", "mismatch"):
                    continue
                try:
                    if form != "grad" and form not in compiled:
                        compiled[form] = compile_form(form, f, args)
                    result, refused = call_form(form, compiled, modules, f, args)
                    if result is not None:
                        judge(result, args, value, flat, fd)
                    if form == "buffered" and n == 1 + len(world.calls):
                        out_on_the_world(compiled[form], f, space, args, value, flat, fd)
                    if refused and kinds[form] == "ok":
                        kinds[form] = "stale"
                        found[form] = Outcome(world.seed, "stale", form, f"call {n}", refused)
                except Found as e:
                    kinds[form] = e.kind
                    found[form] = Outcome(world.seed, e.kind, form, f"call {n}: {e.check}",
                                          e.detail)
                except Exception as e:               # the checker's own failure: report it
                    kinds[form] = "crash"
                    found[form] = Outcome(world.seed, "crash", form, f"call {n}: checker",
                                          _first(e))
    finally:
        for name in modules.pop("loaded", ()):     # every generated module that ran
            sys.modules.pop(name, None)
        sys.modules.pop(module.__name__, None)
        ys.clear_cache()
    worst = max(found.values(), key=lambda o: RANK[o.kind])
    worst.forms, worst.modules = kinds, modules
    return worst

