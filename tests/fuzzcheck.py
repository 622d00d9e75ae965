"""The referee for generated programs (tests/fuzzing.py): compile, call, compare, classify.

``check(program)`` compiles the program's gradient in each form (buffered, the default, and
plain), and for each form, in this order: calls it (value against numpy, gradients against
central finite differences in float64, estimated again where they disagree (``Differences``),
their shapes and dtypes), checks the arguments were not
written and the gradients are the caller's (writeable, sharing no memory), calls it again on
other inputs and checks the first result did not change, calls it a third time (same result),
with Fortran-ordered, strided and read-only copies of the arguments, its forward mode (the
tangent along a random direction against the finite-difference gradient), and (buffered form) with
``out=``: every entry an array, every other entry None, an entry of the wrong shape (must
raise), an entry that is the argument itself (must raise or still be right); then with one
element of an argument at an extreme value (1e200, 800, 0, 1e-300...): where numpy computes the
value, the generated function must compute the same value, inf and nan included, and not raise.
Before each call but the first, the buffered form's work arrays are filled with nan (``poison``):
a call that reads what an earlier one left there shows. Then it compares the forms with each
other, the extreme calls too. The outcome is one of

- ``ok``;
- ``mismatch``: a silently wrong value or gradient (the worst), with the form and the check;
- ``crash``: an exception that is not a clean ``YotaError`` refusal (``InternalError`` included),
  at compile time or when the generated function runs;
- ``refusal``: a ``YotaError`` subclass at compile time (unsupported, no rule...), acceptable;
  a bare ``YotaError`` counts as a crash: numpy ran the program, so a call failing during the
  compile ("np.foo(...) fails: ...") is a call the compiler made wrongly;
- ``generator``: numpy itself rejects the program (a bug of the generator).
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import yota_s2s as ys
from yota_s2s.errors import InternalError, YotaError

from .fuzzdiff import Differences, copies, far, gradient_far, run_numpy, snapshot

FORMS = ("buffered", "plain")
# (rtol, atol) against finite differences and the tight rtol between calls and forms, by the
# narrowest argument's dtype (its itemsize): sums of float16 values agree to a few units of 1e-3
TOLERANCES = {8: (1e-4, 1e-5, 1e-10), 4: (3e-3, 3e-3, 2e-5), 2: (3e-2, 3e-2, 5e-3)}
RANK = {"ok": 0, "refusal": 1, "generator": 2, "crash": 3, "mismatch": 4}


@dataclass
class Outcome:
    seed: int
    kind: str = "ok"
    form: str = ""
    check: str = ""
    detail: str = ""
    forms: dict = field(default_factory=dict)      # form -> kind
    modules: dict = field(default_factory=dict)    # form -> generated module text

    @property
    def key(self) -> tuple:
        return self.kind, self.form, self.check

    def line(self) -> str:
        where = f"{self.form}: " if self.form else ""
        return f"seed {self.seed}: {self.kind}: {where}{self.check}: {self.detail}"[:300]


class Found(Exception):
    def __init__(self, kind: str, check: str, detail: str = ""):
        super().__init__(detail)
        self.kind, self.check, self.detail = kind, check, detail


def load(program, directory: Path):
    """Write the program's source to ``directory`` and import it; its function ``f``."""
    text = program.source()
    name = f"fz_{program.seed}_{hashlib.sha1(text.encode()).hexdigest()[:10]}"
    path = directory / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def layouts(args):
    """Fortran-ordered, strided and read-only copies of the arguments (same values)."""
    fortran = [np.asfortranarray(a) if np.ndim(a) >= 2 else a for a in args]
    strided = []
    for a in args:
        if np.ndim(a) == 0:
            strided.append(a)
            continue
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        strided.append(big[..., ::2])
    readonly = copies(args)
    for a in readonly:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
    return {"fortran-ordered args": fortran, "strided args": strided, "read-only args": readonly}


def poison(df) -> None:
    """Fill the buffered form's work arrays (this thread's, once made) with nan, the largest
    integer or True: they are made by ``xp.empty``, so no call may read what an earlier call
    left in them; poisoned before each call, a value read before it is written shows."""
    local = getattr(df, "__globals__", {}).get("_local")
    for a in getattr(local, "arrays", None) or ():
        if a.__class__ is list:         # a work array's rows (ROW_LISTS): views, poisoned with it
            continue
        if a.dtype.kind in "fc":
            a.fill(np.nan)
        elif a.dtype.kind in "iu":
            a.fill(np.iinfo(a.dtype).max)
        elif a.dtype.kind == "b":
            a.fill(True)


def check_form(form, df, args, others, ref, tol) -> list:
    """Run every check of one compiled form; raise Found on the first failure. Before each
    call the buffered form's work arrays are poisoned (``poison``)."""
    rtol, atol, tight = tol
    before = copies(args)
    plain_df = df

    def df(*xs, **kw):
        poison(plain_df)
        return plain_df(*xs, **kw)

    def call(check, *xs, **kw):
        try:
            return df(*xs, **kw)
        except Exception as e:
            raise Found("crash", check, f"{type(e).__name__}: {e}".splitlines()[0])

    def same(check, got, want, rel=tight):
        for i, (g, w) in enumerate(zip(got, want)):
            w = np.asarray(w, np.float64) if w is not None else None
            if w is None:
                if g is not None:
                    raise Found("mismatch", check, f"result {i} is not None")
                continue
            bad = far(g, w, rel, rel * max(1.0, float(np.max(np.abs(w), initial=0))))
            if bad:
                raise Found("mismatch", check, f"result {i} {bad}")

    first = call("call", *args)
    if not isinstance(first, tuple) or len(first) != len(args) + 1:
        raise Found("mismatch", "call", f"returned {type(first).__name__} of the wrong length")
    for a, c in zip(args, before):
        if not np.array_equal(a, c):
            raise Found("mismatch", "arguments unchanged", "the call wrote into an argument")
    kept = snapshot(first)
    grads = [g for g in first[1:] if isinstance(g, np.ndarray)]
    for i, g in enumerate(grads):
        if not g.flags.writeable:
            raise Found("mismatch", "gradients are the caller's", f"gradient {i} is read-only")
        for other in [a for a in args if isinstance(a, np.ndarray)] + grads[i + 1:]:
            if np.shares_memory(g, other):
                raise Found("mismatch", "gradients are the caller's",
                            f"gradient {i} shares memory with an argument or another gradient")
    value, fd = ref
    bad = far(np.float64(first[0]), value[0], tight, tight * max(1.0, abs(value[0])))
    if bad:
        raise Found("mismatch", "value vs numpy", bad)
    for i, (g, a) in enumerate(zip(first[1:], args)):
        bad = gradient_far(g, fd, i, value[0], rtol, atol)
        if bad:
            raise Found("mismatch", f"gradient {i} vs finite differences", bad)
        got = (np.shape(g), np.asarray(g).dtype.name)
        want = (a.shape, a.dtype.name) if isinstance(a, np.ndarray) else ((), got[1])
        if g is not None and got != want:           # a Python float's: any float scalar
            raise Found("mismatch", f"gradient {i} type", f"{got} for {want}")
    second = call("second call", *others)
    bad = far(np.float64(second[0]), value[1], tight, tight * max(1.0, abs(value[1])))
    if bad:
        raise Found("mismatch", "second call value vs numpy", bad)
    same("first result unchanged by a second call", first, kept, 0.0)
    same("third call repeats the first", call("third call", *args), kept)
    # another layout changes the order of numpy's sums; in float32 a long program amplifies
    # that rounding past ``tight`` in the plain form too (seeds 23,000,119 and 23,100,089)
    f32 = any(getattr(a, "dtype", None) == np.float32 for a in args)
    for name, xs in layouts(args).items():
        same(name, call(name, *xs), kept, rtol if f32 else tight)
    if form == "buffered":
        out = [np.full_like(a, np.nan) if isinstance(a, np.ndarray) else None for a in args]
        got = call("out=", *args, out=out)
        same("out= results", got, kept)
        for i, (g, o) in enumerate(zip(got[1:], out)):
            if o is not None and g is not o and not np.array_equal(o, kept[i + 1]):
                raise Found("mismatch", "out= entry not written",
                            f"out[{i}] for {args[i].dtype}{list(args[i].shape)}")
        half = [None if i % 2 or not isinstance(a, np.ndarray) else np.full_like(a, np.nan)
                for i, a in enumerate(args)]
        same("out= with None entries", call("out= with None", *args, out=half), kept)
        for i, a in enumerate(args):
            if not isinstance(a, np.ndarray):
                continue
            wrong = [None] * len(args)
            wrong[i] = np.zeros(a.shape + (2,), a.dtype)
            try:
                df(*args, out=wrong)
            except Exception:
                pass
            else:
                raise Found("mismatch", "out= of the wrong shape accepted", f"out[{i}]")
            xs = copies(args)                  # the argument itself as its gradient's out=
            alias = [None] * len(args)
            alias[i] = xs[i]
            try:
                got = df(*xs, out=alias)
            except Exception:
                continue
            same("out= aliasing an argument", got, kept)
    return kept


# Values where float arithmetic overflows, underflows or divides by zero: numpy answers inf,
# nan or 0 there, and so must the generated function (Python's ``**`` and ``/`` raise instead).
EXTREMES = (1e200, -1e200, 800.0, -800.0, 0.0, 1e-300)


def extreme_args(args, seed: int) -> list[list]:
    """Copies of the arguments with one float element pushed to an extreme value, a few ways."""
    rng = np.random.default_rng(seed + 3)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.size]
    variants = []
    for v in rng.choice(EXTREMES, 3, replace=False):
        xs = copies(args)
        if not arrays:
            continue
        i = int(rng.choice(arrays))
        j = tuple(int(rng.integers(n)) for n in xs[i].shape)
        with np.errstate(over="ignore"):
            xs[i][j] = v
        variants.append(xs)
    return variants


def special_far(got, want, rtol: float | None, kinds: bool = True) -> str:
    """``far`` where inf and nan must sit at the same places and finite elements agree (within
    ``rtol``; not compared when it is None). ``kinds=False``: where ``want`` is inf or nan,
    ``got`` must be inf or nan, either."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    fin = np.isfinite(want)
    same_special = np.where(np.isnan(want), np.isnan(got), got == want) if kinds \
        else ~np.isfinite(got)
    if not np.all(same_special | fin):
        k = tuple(int(i) for i in np.argwhere(~(same_special | fin))[0])
        return f"at {k}: {float(got[k])!r} vs {float(want[k])!r}"
    if not np.any(fin) or rtol is None:
        return ""
    scale = max(1.0, float(np.max(np.abs(want[fin]))))
    return far(np.where(fin, got, 0.0), np.where(fin, want, 0.0), rtol, rtol * scale)


class _ProductSums:
    """numpy, but ``np.sum(x, axis=k)`` of a float matrix as the buffered form writes it where
    it may (codegen/out_forms.py ``sum_as_product``): BLAS's product with a vector of ones,
    which sums in its own order (a row of three: (a0 + a2) + a1, numpy's (a0 + a1) + a2)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def sum(x, axis=None, **kw):
        if kw or axis not in (0, 1, -1, -2) or not isinstance(x, np.ndarray) or x.ndim != 2 \
                or x.dtype.name not in ("float64", "float32") or 0 in x.strides \
                or (x.dtype.name == "float32" and x.shape[axis] > 4096):
            return np.sum(x, axis, **kw)
        ones = np.ones(x.shape[axis], x.dtype)
        return np.matmul(ones, x) if axis % 2 == 0 else np.matmul(x, ones)


def sensitivity(f, xs, want) -> float:
    """How far numpy's own value of ``f`` moves (relative) when every float array argument moves by
    one unit in its last place, up or down (``sin(v * w)`` where ``w`` reached 1e5 in float32
    moves by 1e-4; both ways, because a value past 2**53 in float64 makes ``sin`` of it noise,
    which one nudge alone may leave near where it was by chance: --whiles seed 920831, ``sin``
    of a sum near 3.5e29, moved 0.16 up and 1.25 down), or when the arrays are laid out in
    Fortran order, so that numpy's own sums run in another order: a sum in another order (a
    product with ones, a work array in C order where numpy's temporary was a transposed view's
    layout) may be that far off too. The second sees what the first cannot: terms that cancel
    (``x * tanh(x) + x`` at x = -800 in float32 is 0.72, one unit in the last place of 800 from
    another summation order, whatever x is). Neither reorders a sum of an intermediate
    (``np.sum(a * a, axis=-1)``), which the buffered form writes as a product with ones: the
    third runs the program with its ``np.sum`` calls written so (``_ProductSums``), the same
    bits as the buffered form's (float32 seed 741151: the sum near 640,000 is one ulp, 0.0625,
    off numpy's, and two products of it that cancel carry that ulp into a value near 1280: 5e-5
    relative). Where the arguments are narrower than float64, numpy's own rounding error, its
    value against the program run in float64, bounds the rest (``sin`` of a float32 sum near 33
    moves by 4e-6 for one unit in the last place of the sum); taken where it is under 1e-3, so
    that a branch the float64 run takes the other way does not excuse anything."""
    nudged, lowered = ([np.nextafter(a, way) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                        else a for a in xs] for way in (np.inf, -np.inf))
    fortran = [np.asfortranarray(a) if isinstance(a, np.ndarray) and a.ndim > 1 else a
               for a in xs]
    narrow = any(isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.itemsize < 8
                 for a in xs)
    wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
            for a in xs]
    worst = 0.0
    if narrow:
        try:
            exact = np.float64(f(*copies(wide)))
        except Exception:
            exact = np.nan
        error = abs(exact - want) / max(1.0, abs(want))
        if error < 1e-3:
            worst = float(error)
    for moved_args, numpy in ((nudged, np), (lowered, np), (fortran, np), (xs, _ProductSums())):
        try:
            f.__globals__["np"] = numpy
            moved = np.float64(f(*copies(moved_args)))
        except Exception:
            if numpy is not np:         # the probe's own failure: no other order to weigh
                continue
            return np.inf
        finally:
            f.__globals__["np"] = np
        if not (np.isfinite(moved) and np.isfinite(want)):
            continue
        worst = max(worst, float(abs(moved - want) / max(1.0, abs(want))))
    return worst


def check_extremes(df, f, variants) -> list:
    """Call the gradient where an argument holds an extreme value (``extreme_args``). Where numpy
    computes the value, the generated function must compute it too, the same inf or nan
    included, and not raise; its results, for comparing the forms. Finite values agree to 1e-6,
    or to a few times numpy's own ``sensitivity`` there, where it is larger."""
    results = []
    for xs in variants:
        with np.errstate(all="ignore"):
            try:
                want = np.float64(f(*copies(xs)))
            except Exception:                   # numpy refuses these values too
                results.append(None)
                continue
            try:
                poison(df)
                got = df(*xs)
            except Exception as e:
                if type(e).__name__ == "GuardError":    # a branch went the other way: a refusal
                    results.append(None)
                    continue
                raise Found("crash", "extreme values", f"{_first(e)} where numpy gives {want!r}")
        with np.errstate(all="ignore"):
            rtol = max(1e-6, 4 * sensitivity(f, xs, want))
        bad = special_far(np.float64(got[0]), want, rtol)
        if bad:
            raise Found("mismatch", "extreme values: value vs numpy", bad)
        results.append(snapshot(got))
    return results


def check_jvp(form, f, args, fd, tol, seed) -> None:
    """Forward mode of the same program in the same form: the tangent along random directions
    against the finite-difference gradient dotted with them."""
    rtol, atol, _ = tol
    rng = np.random.default_rng(seed + 2)
    tangents = [rng.standard_normal(np.shape(a)).astype(a.dtype) if isinstance(a, np.ndarray)
                else float(rng.standard_normal()) for a in args]
    try:
        jf = ys.jvpfunction(f, *args, buffers=form == "buffered")
    except YotaError as e:
        internal = type(e) in (YotaError, InternalError)
        raise Found("crash" if internal else "refusal", "jvp compile", _first(e))
    except Exception as e:
        raise Found("crash", "jvp compile", _first(e))
    try:
        value, tangent = jf(*args, *tangents)
    except Exception as e:
        raise Found("crash", "jvp call", _first(e))
    finally:
        sys.modules.pop(jf.__module__, None)
    want = sum(float(np.sum(np.asarray(g, np.float64) * t)) for g, t in zip(fd, tangents))
    scale = max(1.0, sum(float(np.sum(np.abs(np.asarray(g, np.float64) * t)))
                         for g, t in zip(fd, tangents)))
    bad = far(np.float64(tangent), np.float64(want), rtol, atol * scale)
    if bad:
        raise Found("mismatch", "jvp vs finite differences", bad)


def check(program, directory: Path, forms=FORMS) -> Outcome:
    """Compile and check ``program`` in ``forms``; the worst outcome found."""
    try:
        f = load(program, directory)
        args = copies(program.args)
        rng = np.random.default_rng(program.seed + 1)
        others = [(a + 1e-3 * rng.standard_normal(np.shape(a))).astype(np.asarray(a).dtype)
                  if isinstance(a, np.ndarray) else a + 1e-3 for a in args]
        value = (run_numpy(f, args), run_numpy(f, others))
        with np.errstate(all="ignore"):
            dtype = np.asarray(f(*copies(args))).dtype     # numpy's rules: the value's dtype
        fd = Differences(f, args, value[0])
        if not np.all(np.isfinite(value)) or not all(np.all(np.isfinite(g)) for g in fd):
            raise ValueError("not finite")
    except Exception as e:
        return Outcome(program.seed, "generator", "", "numpy", f"{type(e).__name__}: {e}")
    tol = TOLERANCES[min(np.asarray(a).dtype.itemsize for a in args)]    # the narrowest float
    results, kinds, modules, worst = {}, {}, {}, Outcome(program.seed)
    extremes, variants = {}, extreme_args(args, program.seed)
    for form in forms:
        now = Outcome(program.seed, "ok", form)
        try:
            df = ys.simplegrad(f, *args, buffers=form == "buffered")
        except YotaError as e:
            # numpy ran the program: a bare YotaError ("np.foo(...) fails: ...") is the compiler
            # failing on a call it made itself, not a refusal of an unsupported construct
            internal = type(e) in (YotaError, InternalError)
            now.kind, now.check, now.detail = ("crash" if internal else "refusal"), "compile", _first(e)
        except Exception as e:
            now.kind, now.check, now.detail = "crash", "compile", _first(e)
        else:
            modules[form] = ys.source(df)
            try:
                results[form] = check_form(form, df, args, others, ((value), fd), tol)
                got = results[form][0].dtype
                if got != dtype:
                    raise Found("mismatch", "value dtype", f"{got} where numpy gives {dtype}")
                check_jvp(form, f, args, fd, tol, program.seed)
                extremes[form] = check_extremes(df, f, variants)
            except Found as e:
                now.kind, now.check, now.detail = e.kind, e.check, e.detail
            except Exception as e:                  # the checker's own failure: report it
                now.kind, now.check, now.detail = "crash", "checker", _first(e)
            finally:
                sys.modules.pop(df.__module__, None)
        kinds[form] = now.kind
        if RANK[now.kind] > RANK[worst.kind]:
            worst = now
    if len(results) == 2 and worst.kind == "ok":
        worst = _compare_forms(program.seed, results, [value[0], *fd], tol[2], kinds,
                               narrow=tol is TOLERANCES[2])
    if len(extremes) == 2 and worst.kind == "ok":
        worst = _compare_extremes(program.seed, extremes, kinds)
    sys.modules.pop(f.__module__, None)
    worst.forms, worst.modules = kinds, modules
    return worst


def _compare_forms(seed, results, reference, rtol, kinds, narrow=False) -> Outcome:
    """The buffered and plain results against each other; a difference is blamed on the form
    further from the reference (numpy's value, finite differences in float64).

    ``narrow`` (float16 arguments): the forms sum in different orders (the buffered form a
    loop's stacked rows at once, the plain form step by step), and over a long float16
    recurrence each order is several ulps off the float64 gradient, in its own direction (seed
    26,600,899: dx[3] is -0.0413 buffered, -0.0333 plain, -0.0349 in float64; 0.008 apart
    against a tolerance of 5e-3). There a difference is a mismatch only where the further form
    is further from the float64 gradient than twice the nearer one's error plus ``rtol``: a
    form worse than rounding explains."""
    for i, (a, b, want) in enumerate(zip(*results.values(), reference)):
        if a is None or b is None:
            continue
        a64, b64, want = (np.asarray(x, np.float64) for x in (a, b, want))
        scale = rtol * max(1.0, float(np.max(np.abs(b64))))
        bad = far(a64, b64, rtol, scale)
        if not bad:
            continue
        errors = {form: np.abs(np.asarray(r[i], np.float64) - want) for form, r in results.items()}
        if narrow:
            near, further = np.minimum(*errors.values()), np.maximum(*errors.values())
            with np.errstate(invalid="ignore"):
                if not np.any(~(further <= 2 * near + scale)):
                    continue
        blamed = max(errors, key=lambda form: float(np.max(errors[form])))
        kinds[blamed] = "mismatch"
        return Outcome(seed, "mismatch", blamed, "buffered vs plain", f"result {i} {bad}")
    return Outcome(seed)


def _compare_extremes(seed, extremes, kinds) -> Outcome:
    """The forms' gradients where an argument holds an extreme value: inf or nan at the same
    places. Finite elements are not compared: near an overflow a gradient can be as
    ill-conditioned as ``sin(1e197)``, where the forms' different (both right) summation orders
    give different numbers. Nor is inf told from nan: where a sum's partial sums overflow, the
    order decides (1e308 + 1e308 - inf is nan, 1e308 - inf + 1e308 is -inf). Seed 25,000,299,
    one argument at -1e200: the plain form's gradient is nan where the buffered form's is inf;
    the plain form sums dWh and db step by step, the buffered form as one product of the
    stacked steps."""
    for a, b in zip(*extremes.values()):
        if a is None or b is None:
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            if x is None or y is None:
                continue
            bad = special_far(x, y, None, kinds=False)
            if bad:
                kinds["buffered"] = "mismatch"
                return Outcome(seed, "mismatch", "buffered", "extreme values: buffered vs plain",
                               f"result {i} {bad}")
    return Outcome(seed)


def _first(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {msg}{where}"
