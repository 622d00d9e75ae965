"""The pipeline, end to end: function + example arguments -> imported gradient function.

    trace (frontend) -> backward -> optimize (passes) -> write (codegen) -> load
    trace (frontend) -> forward  -> optimize (passes) -> write (codegen) -> load   (jvp)
    trace (frontend) -> forward  -> optimize (passes) -> split (ad/linearize) -> write x 2

With ``check=True`` the verifier runs after every stage (the trace, the sweep, and each stage
of ``passes.STAGES`` that changes the tape) and an error names the stage (the tests do this).
"""
from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from .ad.backward import backward
from .ad.batch_whiles import NotBatched
from .ad.batching import batch
from .ad.forward import forward as forward_sweep
from .ad.linearize import split
from .codegen import function_name, load, module_name_for, write_module
from .codegen.cupy_form import FusedForm
from .codegen.outside import reads_function
from .codegen.module import names_taken
from .codegen.numba_form import NumbaForm, check_engine, check_loops, worth_numba
from .codegen.targets import DEVICES, PLAIN_ONLY
from .errors import UnsupportedSyntax, UsageError
from .frontend import trace_function
from .frontend.depends import Assumptions
from .ir import verify
from .ir.names import assign_names
from .ir.region import body_tapes
from .ir.structure import LeafAxes
from .ir.tape import Tape
from .objects import is_lazy_array, param_names
from .passes import optimize, verified
from .rules.registry import RULES, RuleSet



@dataclass
class Compiled:
    """A compiled gradient: the function, its module and text, and the tapes behind it."""

    fn: Callable
    module: ModuleType
    text: str
    forward: Tape
    tape: Tape
    assumes: Assumptions | None = None      # for ys.grad's cache: what else the code relies on

    @property
    def reads_closure(self) -> bool:
        """The function reads its closure at call time: it takes the function as ``_fn``."""
        return reads_function(self.tape)


def gradient_tape(f: Any, args: Sequence[Any], rules: RuleSet = RULES, wrt: set[int] | None = None,
                  check: bool = False, passes: bool = True, review: bool = False,
                  device: str | None = None, after: str | None = None,
                  has_aux: bool = False) -> tuple[Tape, Tape]:
    """(forward tape, optimized gradient tape) for ``f`` on ``args``; ``review``: optimized
    for the review form (the plain form, ``buffers=False``: passes.REVIEW_PIPELINE);
    ``device``: the buffered form's tape for that device, as ``compile_grad`` makes it
    (passes.lower on "cpu"; None: not lowered, a tape the plain form can be written from);
    ``after``: the tape after that stage of the passes (``passes.STAGE_NAMES``)."""
    forward, tape, _ = _gradient(f, args, rules, wrt, check, passes, review=review,
                                 device=None if review else device, after=after,
                                 has_aux=has_aux)
    return forward, tape


@contextlib.contextmanager
def few_collections():
    """A compile makes many small objects (Vars, statements, syntax trees) that live until it
    ends; with Python's default thresholds its cycle collector scans them again and again, a
    cost that grows faster than the program (5x the codegen time for 4x the statements).
    Collecting a young generation every 50,000 allocations instead of 700 keeps the stages
    linear; the thresholds are restored afterwards."""
    saved = gc.get_threshold()
    gc.set_threshold(max(saved[0], 50_000), max(saved[1], 20), max(saved[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def _gradient(f: Any, args: Sequence[Any], rules: RuleSet, wrt: set[int] | None, check: bool,
              passes: bool, dynamic: frozenset[int] = frozenset(), review: bool = False,
              device: str | None = None, after: str | None = None, has_aux: bool = False
              ) -> tuple[Tape, Tape, Assumptions]:
    """``gradient_tape``, and what the trace assumed beyond the tape (for ``ys.grad``'s cache)."""
    with few_collections():
        return _stages(f, args, rules, wrt, check, passes, dynamic, review, device, after,
                       has_aux)


def _stages(f: Any, args: Sequence[Any], rules: RuleSet, wrt: set[int] | None, check: bool,
            passes: bool, dynamic: frozenset[int], review: bool, device: str | None = None,
            after: str | None = None, has_aux: bool = False) -> tuple[Tape, Tape, Assumptions]:
    forward, ev = trace_function(f, args, rules, dynamic=dynamic)
    assumes = ev.assumes
    if check:
        verified(forward, "trace")
    return forward, _optimized(backward(forward, ev, wrt, has_aux), rules, check, passes, review,
                               device, after, made_by="backward"), assumes


def _optimized(tape: Tape, rules: RuleSet, check: bool, passes: bool, review: bool = False,
               device: str | None = None, after: str | None = None, *, made_by: str) -> Tape:
    """A swept tape, verified and (with ``passes``) optimized, then named once
    (ir/names.assign_names); ``review``: optimized for the review form; ``device``: where
    the buffered module runs (None: not said; passes.lower applies on "cpu"); ``check``: the
    verifier after the stage that ``made_by`` names (the sweep, or the trace) and after every
    stage of the passes; ``after``: only the stages up to that one."""
    if check:
        verified(tape, made_by)
    if passes:
        tape = optimize(tape, rules, review=review, device=device, check=check, until=after)
    verify.check_assumptions(tape)       # cheap: every outside read is read or guarded
    return assign_names(tape, names_taken(tape))


def compile_grad(f: Any, args: Sequence[Any], *, rules: RuleSet = RULES,
                 wrt: set[int] | None = None, device: str = "cpu",
                 out_dir: str | Path | None = None, module_name: str | None = None,
                 regenerate: str | None = None, check: bool = False,
                 buffers: bool = True, dynamic: frozenset[int] = frozenset(),
                 has_aux: bool = False, engine: str = "numpy",
                 max_steps: int | None = None) -> Compiled:
    check_max_steps(max_steps)
    buffers = _form(device, buffers, f, args)
    engine, asked = _engine(engine, device), buffers
    buffers = buffers and engine == "numpy"       # numba's loops are the plain form's
    forward, tape, assumes = _gradient(f, args, rules, wrt, check, passes=True, dynamic=dynamic,
                                       review=not buffers, device=device if buffers else None,
                                       has_aux=has_aux)
    written = None
    if engine != "auto" or worth_numba(tape):
        written = _written(forward, tape, device, out_dir, module_name, regenerate, buffers,
                           assumes, engine, max_steps)
    if engine == "auto" and not _has_numba_loops(written):
        # no loop over small arrays, or numba refused every one: the buffered form is faster
        return compile_grad(f, args, rules=rules, wrt=wrt, device=device, out_dir=out_dir,
                            module_name=module_name, regenerate=regenerate, check=check,
                            buffers=asked, dynamic=dynamic, has_aux=has_aux,
                            max_steps=max_steps)
    return written


def check_max_steps(max_steps: Any) -> None:
    """``max_steps`` is None or a positive int (the most trips a while loop may run)."""
    if max_steps is None or (type(max_steps) is int and max_steps > 0):
        return
    raise UsageError(f"max_steps must be a positive int or None, got {max_steps!r}",
                     hint="Pass the most trips a while loop may run, e.g. max_steps=1000, or "
                          "None to let its stacks grow as it needs.")


def _form(device: str, buffers: bool, f: Any, args: Sequence[Any]) -> bool:
    """``buffers`` as ``device`` allows (dask: the plain form only, codegen/targets.py), the
    device's name checked first, and that no dask array is given for another device (its
    module would refuse it at every call)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    lazy = [i for i, arg in enumerate(args) if _holds_lazy(arg)] if device != "dask" else []
    if lazy:
        name, arg = param_names(f, len(args))[lazy[0]], args[lazy[0]]
        raise UsageError(
            f"argument {name} {'is' if is_lazy_array(arg) else 'holds'} a dask array, and the "
            f"gradient is compiled for device={device!r}",
            hint="Compile for device=\"dask\" (the result is a dask graph: docs/dask.md), or "
                 f"pass numpy arrays ({name}.compute()).")
    return buffers and device not in PLAIN_ONLY


def _holds_lazy(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(map(_holds_lazy, value))
    if isinstance(value, dict):
        return any(map(_holds_lazy, value.values()))
    return is_lazy_array(value)


def _has_numba_loops(written: Compiled | None) -> bool:
    """The module runs some loop in numba (it imports numba only then)."""
    return written is not None and "\nimport numba\n" in written.text


def _engine(engine: str, device: str) -> str:
    """The engine a module is written for (numba_form.check_engine): numba on a CPU only,
    fused (CUDA kernels, codegen/cupy_form.py) on a GPU only."""
    engine = check_engine(engine)
    if engine == "fused" and device != "cuda":
        raise UsageError('engine="fused" writes CUDA kernels for cupy; it needs device="cuda"',
                         hint='Pass device="cuda", or engine="numpy" on the CPU.')
    return engine if engine == "fused" or device == "cpu" else "numpy"


def _written(forward: Tape, tape: Tape, device: str, out_dir: str | Path | None,
             module_name: str | None, regenerate: str | None, buffers: bool,
             assumes: Assumptions | None = None, engine: str = "numpy",
             max_steps: int | None = None) -> Compiled:
    """``tape``'s module, written and loaded; with the numba engine, its loops compiled, and
    written again in numpy where numba refuses one (numba_form.check_loops). ``max_steps``:
    the bound on a while loop's trips (write_module)."""
    if device != "cpu":
        _host_only(tape, device)
    with few_collections():
        fname = function_name(tape)

        def loaded(text: str) -> ModuleType:
            name = module_name
            if name is None:
                name = fname if out_dir is not None else module_name_for(fname, text)
            return load(text, name, out_dir)
        text, module = numba_checked(
            lambda form: write_module(tape, device=device, regenerate=regenerate,
                                      buffers=buffers, numba=form,
                                      fused=FusedForm() if engine == "fused" else None,
                                      max_steps=max_steps),
            loaded, engine in ("numba", "auto"), auto=engine == "auto")
    if buffers or engine != "numpy":     # what a gradient of this gradient inlines
        module.__yota_plain__ = PlainForm(tape)
    return Compiled(module_function(module, fname), module, text, forward, tape, assumes)


def _host_only(tape: Tape, device: str) -> None:
    """A scipy.sparse matrix read from outside is a host (numpy) value: refused on a GPU."""
    for t in (tape, *body_tapes(tape)):
        for stmt in t.stmts:
            if stmt.outs and stmt.outs[0].aval.sparse:
                raise UnsupportedSyntax(
                    f"the scipy.sparse matrix {stmt.outs[0].hint or ''} is a numpy (host) "
                    f"value, which the module for device={device!r} cannot multiply", stmt.loc,
                    "Compile for device='cpu', or make the matrix dense (A.toarray()) outside "
                    "the function.")


def numba_checked(write: Callable[[NumbaForm | None], str],
                  loaded: Callable[[str], ModuleType] | None = None,
                  numba: bool = True, auto: bool = False) -> tuple[str, ModuleType | None]:
    """A module's text by ``write(form)`` and, by ``loaded(text)`` (by default loaded only to
    compile its loops), the module: with ``numba``,
    its loops compiled (numba_form.check_loops), and the text written again with the loops
    numba refuses left in numpy, until numba compiles every loop left; ``auto``: the loops
    over large arrays left in numpy too (engine="auto")."""
    if loaded is None:
        if not numba:
            return write(None), None            # nothing to load: the text is the product

        def loaded(text: str) -> ModuleType:
            return load(text, module_name_for("numba_check", text))
    form = NumbaForm(auto=auto) if numba else None
    while True:
        text = write(form)
        module = loaded(text)
        refused = check_loops(module, form.kernels) if form is not None else {}
        if not refused:
            return text, module
        form = NumbaForm(fallbacks={**form.fallbacks, **refused}, auto=auto)


def module_function(module: ModuleType, name: str) -> Any:
    """The generated module's function ``name`` itself, also where ``ys.simplegrad`` gave the
    name to the function that guards it (api.py ``_user_function``: a module loaded before,
    for the same text, is loaded again)."""
    fn = getattr(module, name, None)
    return getattr(fn, "__yota_module_function__", fn)


def compile_forward(f: Any, args: Sequence[Any], *, rules: RuleSet = RULES, device: str = "cpu",
                    out_dir: str | Path | None = None, module_name: str | None = None,
                    check: bool = False, buffers: bool = True, engine: str = "numpy"
                    ) -> Compiled:
    """The forward-only module of ``f`` (``ys.compile``): the traced tape, inlined and
    optimized by the same passes, written with no gradient section."""
    buffers = _form(device, buffers, f, args)
    engine, asked = _engine(engine, device), buffers
    buffers = buffers and engine == "numpy"
    forward, ev = trace_function(f, args, rules)
    assumes = ev.assumes
    optimized = _optimized(forward, rules, check, True, device=device if buffers else None,
                           made_by="trace")
    written = None
    if engine != "auto" or worth_numba(optimized):
        written = _written(forward, optimized, device, out_dir, module_name, None, buffers,
                           assumes, engine)
    if engine == "auto" and not _has_numba_loops(written):
        return compile_forward(f, args, rules=rules, device=device, out_dir=out_dir,
                               module_name=module_name, check=check, buffers=asked)
    return written


class PlainForm:
    """The plain form (``buffers=False``) of a buffered generated module, written from the
    same tape when first asked for. A buffered module keeps one as ``__yota_plain__``: where a
    function being compiled calls the buffered function (a gradient of a gradient), the
    frontend inlines the plain one, which uses only primitives with rules (no work arrays).
    It is written for numpy whatever the device of the buffered one: it is only traced, and the
    code that inlines it is written for its own device."""

    def __init__(self, tape: Tape):
        self.tape = tape
        self.module: ModuleType | None = None

    def __call__(self, name: str) -> Callable | None:
        """The plain module's function ``name`` (None if it has none)."""
        if self.module is None:
            text = write_module(self.tape, buffers=False)
            self.module = load(text, module_name_for(function_name(self.tape), text))
        fn = module_function(self.module, name)
        return fn if callable(fn) else None


def jvp_tape(f: Any, args: Sequence[Any], tangents: Sequence[Any] | None = None,
             rules: RuleSet = RULES, check: bool = False, passes: bool = True,
             has_aux: bool = False) -> tuple[Tape, Tape]:
    """(forward tape, optimized tape that also computes the tangent) for ``f`` on ``args``,
    the tangents' example values ``tangents`` (ones where None)."""
    forward, tape, _ = _jvp_stages(f, args, tangents, rules, check, passes, has_aux)
    return forward, tape


def _jvp_stages(f: Any, args: Sequence[Any], tangents: Sequence[Any] | None, rules: RuleSet,
                check: bool, passes: bool, has_aux: bool = False, after: str | None = None
                ) -> tuple[Tape, Tape, Assumptions]:
    # (forward mode has no JVP of a loop region yet: its loops are unrolled; an if on a
    # traced number is a branch, ad/branch_tangents.py, a while on a traced condition a
    # while statement, ad/while_tangents.py)
    forward, ev = trace_function(f, args, rules, regions=False, branches=True, whiles=True)
    assumes = ev.assumes
    if check:
        verified(forward, "trace")
    tape = forward_sweep(forward, ev, list(tangents or [None] * len(args)), has_aux)
    return forward, _optimized(tape, rules, check, passes, after=after,
                               made_by="forward"), assumes


def compile_jvp(f: Any, args: Sequence[Any], tangents: Sequence[Any] | None = None, *,
                rules: RuleSet = RULES, device: str = "cpu", out_dir: str | Path | None = None,
                module_name: str | None = None, check: bool = False,
                buffers: bool = True, has_aux: bool = False, engine: str = "numpy") -> Compiled:
    """The forward-mode module of ``f``: ``f_jvp(*args, *tangents) == (f(*args), J @ t)``,
    one tangent argument per argument with float values (ad/forward.py); ``has_aux``: ``f``
    returns ``(out, aux)``, and ``t`` is the tangent of ``out``. (Forward mode unrolls loops:
    ``engine="numba"`` writes the plain form, with no loop to compile.)"""
    buffers = _form(device, buffers, f, args)
    engine = _engine(engine, device)
    buffers = buffers and engine == "numpy"
    forward, tape, assumes = _jvp_stages(f, args, tangents, rules, check, passes=True,
                                         has_aux=has_aux)
    return _written(forward, tape, device, out_dir, module_name, None, buffers, assumes, engine)


def hvp_tape(f: Any, args: Sequence[Any], argnum: int, rules: RuleSet = RULES,
             check: bool = False, passes: bool = True) -> tuple[Tape, Tape, Assumptions]:
    """Forward over reverse on the tape: the gradient tape of ``f`` in argument ``argnum``
    (its ``while`` a recording loop and an unwind), and its JVP along a tangent of that
    argument (the others held constant), whose tangent is ``H v``: a ``while``'s JVP stacks
    the tangents beside the values, the unwind's carries the cotangents' tangents
    (ad/while_tangents.py, ad/unwind_tangents.py), so one module serves every trip count.
    Loops are unrolled (forward mode has no JVP of a loop region)."""
    with few_collections():
        forward, ev = trace_function(f, args, rules, regions=False, branches=True, whiles=True)
        if check:
            verified(forward, "trace")
        grad = backward(forward, ev, {argnum})
        gradient = grad.copy(result=grad.grads[argnum], grads=None, structure=None, role="hvp")
        tape = forward_sweep(gradient, ev, [None] * len(args), wrt={argnum})
        return forward, _optimized(tape, rules, check, passes, made_by="forward"), ev.assumes


def compile_hvp(f: Any, args: Sequence[Any], argnum: int, *, rules: RuleSet = RULES,
                device: str = "cpu", out_dir: str | Path | None = None,
                module_name: str | None = None, check: bool = False,
                buffers: bool = True) -> Compiled:
    """The module ``f_hvp(*args, dot_x) == (grad_x f, H @ dot_x)`` (``hvp_tape``), ``x``
    argument ``argnum``: ``ys.hvp`` of a function whose gradient holds a ``while``."""
    buffers = _form(device, buffers, f, args)
    forward, tape, assumes = hvp_tape(f, args, argnum, rules, check)
    return _written(forward, tape, device, out_dir, module_name, None, buffers, assumes)


def compile_linearize(f: Any, args: Sequence[Any], *, rules: RuleSet = RULES,
                      device: str = "cpu", out_dir: str | Path | None = None,
                      check: bool = False, buffers: bool = True, has_aux: bool = False
                      ) -> tuple[Compiled, Compiled] | None:
    """``ys.linearize``'s two modules (ad/linearize.py): the forward, ``f_linearize(*args) ==
    (f(*args), residuals)``, and the tangent map, ``f_tangent(*residuals, *tangents) == J @
    tangents``; None where the JVP tape cannot be cut (a tangent statement writes into a value
    of the forward). The JVP tape is cut before the passes that write in place (the
    tangent map's steps are hoisted on it: ad/hoist.py), each half optimized on from there."""
    buffers = _form(device, buffers, f, args)
    forward, tape, assumes = _jvp_stages(f, args, None, rules, check, passes=True,
                                         has_aux=has_aux, after="bodies")
    halves = split(tape, len(forward.params), rules)
    if halves is None:
        return None
    written = []
    for half, since in ((halves.forward, "stacked-products"), (halves.tangent, "fresh-outputs")):
        if check:
            verified(half, "linearize")
        half = optimize(half, rules, check=check, since=since)
        half = assign_names(half, names_taken(half))
        written.append(_written(forward, half, device, out_dir, None, None, buffers,
                                assumes if half is halves.forward else None))
    return written[0], written[1]


def examples(args: Sequence[Any], axes: Sequence[int | None]) -> list:
    """The first example of a batch: argument ``k``'s entry 0 along ``axes[k]``, an array
    (a 0-d one for a batch of numbers: traced as data, where a number would be static); a
    structure batched by ``LeafAxes``: the structure of its leaves' entries 0."""
    return [a if axis is None else axis.example(a) if isinstance(axis, LeafAxes)
            else np.asarray(np.take(np.asarray(a), 0, axis=axis)) for a, axis in zip(args, axes)]


def vmap_tape(f: Any, args: Sequence[Any], axes: Sequence[int | None], out_axes: Any = 0,
              rules: RuleSet = RULES, check: bool = False, passes: bool = True,
              device: str | None = None) -> tuple[Tape, Tape]:
    """(the tape of one example, the optimized batched tape) of ``f`` on ``args``, argument
    ``k`` batched along ``axes[k]`` (None: the same for every example): ad/batching.py. The
    example is the first of the batch."""
    one, tape, _ = _batched(f, args, axes, rules, check, passes, device, out_axes=out_axes)
    return one, tape


def per_example_tape(f: Any, args: Sequence[Any], axes: Sequence[int | None],
                     norms: bool = False, rules: RuleSet = RULES, check: bool = False,
                     passes: bool = True, device: str | None = None) -> tuple[Tape, Tape]:
    """(the gradient tape of one example, the optimized batched tape): the gradient of ``f``
    with respect to its first argument for each example (``norms``: their norms only)."""
    one, tape, _ = _batched(f, args, axes, rules, check, passes, device, gradient=True,
                            norms=norms)
    return one, tape


def _batched(f: Any, args: Sequence[Any], axes: Sequence[int | None], rules: RuleSet,
             check: bool, passes: bool, device: str | None, gradient: bool = False,
             out_axes: Any = 0, norms: bool = False) -> tuple[Tape, Tape, Assumptions]:
    """``vmap_tape`` (``gradient``: ``per_example_tape``), and what the trace assumed beyond
    the tape (for the guards of ``cache.BUILT``)."""
    with few_collections():
        # (an if on a traced number is a branch, batched as one or as a select:
        # ad/batch_branches.py; a while on a traced condition a while, run while any
        # example's condition holds: ad/batch_whiles.py, or, where that cannot be, unrolled)
        for whiles in (True, False):
            one, ev = trace_function(f, examples(args, axes), rules, whiles=whiles)
            if check:
                verified(one, "trace")
            if gradient:
                one = backward(one, ev, {0})
                if check:
                    verified(one, "backward")
            try:
                tape = batch(one, rules, axes, args, out_axes, norms)
                break
            except NotBatched:
                if not whiles:
                    raise
        return one, _optimized(tape, rules, check, passes, device=device, made_by="vmap"), \
            ev.assumes


def compile_vmap(f: Any, args: Sequence[Any], axes: Sequence[int | None], out_axes: Any = 0, *,
                 rules: RuleSet = RULES, device: str = "cpu", out_dir: str | Path | None = None,
                 module_name: str | None = None, check: bool = False,
                 buffers: bool = True) -> Compiled:
    """The batched module of ``f`` (``ys.vmap``): ``f_vmap(*args)`` computes ``f`` on every
    example of the batch at once, written as numpy code on the whole batch."""
    buffers = _form(device, buffers, f, args)
    one, tape, assumes = _batched(f, args, axes, rules, check, True,
                                  device if buffers else None, out_axes=out_axes)
    return _written(one, tape, device, out_dir, module_name, None, buffers, assumes)


def compile_per_example(f: Any, args: Sequence[Any], axes: Sequence[int | None],
                        norms: bool = False, *, rules: RuleSet = RULES, device: str = "cpu",
                        out_dir: str | Path | None = None, module_name: str | None = None,
                        check: bool = False, buffers: bool = True) -> Compiled:
    """The module of ``ys.per_example_grad``: ``(values, gradients)``, one per example, the
    batch first (``norms``: each example's gradient norm)."""
    buffers = _form(device, buffers, f, args)
    one, tape, assumes = _batched(f, args, axes, rules, check, True,
                                  device if buffers else None, gradient=True, norms=norms)
    return _written(one, tape, device, out_dir, module_name, None, buffers, assumes)
