"""Optimizing passes over the tape, each in its own module, run as a schedule of named stages.

Every pass is a function ``(tape, rules) -> (tape, changed)``, where ``rules`` is the RuleSet
the tape was made with: the primitives of the statements a pass writes come from it (and
passes recognise statements by their primitive's function or traits, never by its name).
``STAGES`` is the schedule, in order: each stage has a name and says which form it makes
(``buffered``: what runs; ``plain``: the review form, what a reviewer reads) and on which
device (``lower`` is for numpy on a CPU). ``optimize`` runs the stages that apply; with
``check`` the verifier (ir/verify.py) runs after each one that changes the tape and an error
names the stage; ``until`` stops after the stage of that name (``yota-s2s trace --grad
--after STAGE``).
Loop bodies go through the same passes, each as a tape of its own (``regions.py``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import InternalError
from ..ir import verify
from ..ir.tape import Tape
from ..rules.registry import RuleSet
from .arm_reads import outer_values_in_arms
from .arm_saves import saved_in_arms
from .arm_sums import sums_in_arms
from .constants import plain_constants
from .cse import cse, cse_within_sections
from .dce import dce
from .fold import fold
from .inplace import write_in_place
from .lower import lower
from .recompute import recompute
from .outputs import fresh_outputs
from .regions import in_place_bodies, optimize_bodies
from .while_invariants import hoisted_invariants, hoisted_while_invariants
from .while_rows import recomputed_rows
from .signs import signs
from .simplify import simplify
from .stacked import stack_products

Pass = Callable[[Tape, RuleSet], "tuple[Tape, bool]"]

PIPELINE = [fold, simplify, signs, cse, dce, sums_in_arms, saved_in_arms,
            outer_values_in_arms]
# The review form (the plain form, what a reviewer reads): no CSE across the sections.
REVIEW_PIPELINE = [fold, simplify, signs, cse_within_sections, dce, sums_in_arms,
                   saved_in_arms, outer_values_in_arms]
ROUNDS = {"buffered": PIPELINE, "plain": REVIEW_PIPELINE}     # the fixed point's, by form
FORMS = ("buffered", "plain")
MAX_ROUNDS = 20


@dataclass(frozen=True)
class Stage:
    """One step of the schedule: ``run(tape, rules, rounds)`` gives the tape after it
    (``rounds``: the passes of the fixed point for the form being made); ``does``: what it
    does, in a line (``yota-s2s trace --grad --after`` shows it). It applies to the ``forms``
    listed, and only on ``device`` where one is said."""

    name: str
    run: Callable[[Tape, RuleSet, Sequence[Pass]], Tape]
    does: str
    forms: tuple[str, ...] = FORMS
    device: str | None = None

    def applies(self, form: str, device: str | None) -> bool:
        return form in self.forms and (self.device is None or self.device == device)


def _fixed_point(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    """The passes in turn, at most ``MAX_ROUNDS`` rounds, until none changes the tape. A pass
    is a function of the tape, so once each has run on the tape as it is without changing it,
    the rest of a round would change nothing either: it stops there, not at the round's end."""
    unchanged = 0       # passes run, one after another, that changed nothing
    for run_pass in itertools.islice(itertools.cycle(rounds), MAX_ROUNDS * len(rounds)):
        tape, did = run_pass(tape, rules)
        unchanged = 0 if did else unchanged + 1
        if unchanged == len(rounds):
            break
    return tape


def _fresh_outputs(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    return dce(fresh_outputs(tape, rules), rules)[0]


def _plain_constants(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    return plain_constants(tape, rules)[0]


def _bodies(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    """(An unwind that its step's passes left with nothing to do is gone: regions.py; then
    the values it gave, the zeros it started from, go through the passes again.)"""
    tape = hoisted_while_invariants(tape)
    new = optimize_bodies(
        tape, lambda body: _fixed_point(body, rules, list(rounds) + [plain_constants]), rules)
    if len(new.stmts) < len(tape.stmts):
        new = _fixed_point(new, rules, rounds)
    hoisted = hoisted_invariants(new)
    # (a value made before an unwind that the forward made before its while too: ``-k``)
    return _fixed_point(hoisted, rules, rounds) if hoisted is not new else hoisted


def _remade_rows(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    """(The plain form's: the buffered form holds such a number in a 0-d row, which its
    unwind's ufuncs read as it is, codegen/while_numbers.py, where the number made again
    would be filled into a 0-d work array.)"""
    remade = recomputed_rows(tape)
    if remade is tape:
        return tape
    hoisted = hoisted_invariants(remade)
    return _fixed_point(hoisted, rules, rounds)


def _stacked_products(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    return stack_products(tape, rules)[0]


def _in_place(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    return in_place_bodies(write_in_place(tape, rules), rules)


def _recompute(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    return recompute(tape, rules)[0]


def _lower(tape: Tape, rules: RuleSet, rounds: Sequence[Pass]) -> Tape:
    return lower(tape, rules)[0]


STAGES = (
    Stage("fixed-point", _fixed_point, "fold, simplify, signs, cse, dce, until nothing changes"),
    Stage("fresh-outputs", _fresh_outputs,
          "no returned array aliases an argument, another output or a view"),
    Stage("plain-constants", _plain_constants,
          "float64 constants as plain floats where that changes nothing"),
    Stage("bodies", _bodies, "inside each loop body: the fixed point and plain constants; "
          "the statements of a while's trip or backward step made of invariants alone: once, "
          "before it"),
    Stage("remade-rows", _remade_rows, "a while's stacked number made again from the rows its "
          "backward reads", forms=("plain",)),
    Stage("stacked-products", _stacked_products,
          "an accumulator's per-step products: one product after the loop", forms=("buffered",)),
    Stage("in-place", _in_place,
          "updates written in place where the old array is dead, in loops too"),
    Stage("recompute", _recompute, "cheap forward values made again where the backward reads "
          "them", forms=("buffered",)),
    Stage("lower", _lower, "numpy's scalar loops (logaddexp, mean) as SIMD ufuncs",
          forms=("buffered",), device="cpu"),
)
STAGE_NAMES = tuple(stage.name for stage in STAGES)


def stages_for(form: str, device: str | None = None) -> tuple[Stage, ...]:
    """The stages that make ``form`` ("buffered" or "plain") for ``device`` (None: not said)."""
    return tuple(stage for stage in STAGES if stage.applies(form, device))


def optimize(tape: Tape, rules: RuleSet, passes: Sequence[Pass] | None = None,
             review: bool = False, device: str | None = None, *, check: bool = False,
             until: str | None = None, since: str | None = None) -> Tape:
    """``tape`` through the stages of its form: ``review``, the plain form (the review form),
    else the buffered one; ``device``: where the buffered module runs (``lower`` is for numpy
    on a CPU; None: not said, not lowered). ``passes``: the fixed point's passes instead of the
    form's. ``check``: the verifier after every stage that changed the tape; ``until``: stop
    after that stage (a ValueError names the stages where it is not one of the form's);
    ``since``: start at that stage (of the schedule, run or not for this form: the rest of a
    tape optimized ``until`` the stage before it)."""
    form = "plain" if review else "buffered"
    schedule = stages_for(form, device)
    if until is not None and until not in {stage.name for stage in schedule}:
        raise ValueError(_not_a_stage(until, form, device, schedule))
    if since is not None:
        if since not in STAGE_NAMES:
            raise ValueError(_not_a_stage(since, form, device, schedule))
        later = STAGE_NAMES[STAGE_NAMES.index(since):]
        schedule = tuple(stage for stage in schedule if stage.name in later)
    rounds = ROUNDS[form] if passes is None else passes
    for stage in schedule:
        before, tape = tape, stage.run(tape, rules, rounds)
        if check and tape is not before:    # (a stage that changes nothing returns its tape;
            # stages never change a tape in place)
            verified(tape, stage.name)
        if stage.name == until:
            break
    return tape


def verified(tape: Tape, after: str) -> Tape:
    """``verify.check(tape)``, its error saying that ``after`` made the tape."""
    try:
        return verify.check(tape)
    except InternalError as error:
        raise InternalError(f"after the stage {after!r}: {error.what}", error.loc,
                            error.hint) from None


def _not_a_stage(name: str, form: str, device: str | None, schedule) -> str:
    names = ", ".join(stage.name for stage in schedule)
    if name not in STAGE_NAMES:
        return f"{name!r} is not a stage of the passes; the stages: {', '.join(STAGE_NAMES)}"
    where = f" on {device!r}" if device else " (no device said)"
    return f"the stage {name!r} does not run for the {form} form{where}; its stages: {names}"


__all__ = ["PIPELINE", "REVIEW_PIPELINE", "STAGES", "STAGE_NAMES", "Stage", "stages_for",
           "optimize", "verified", "cse", "cse_within_sections", "dce", "fold", "signs",
           "simplify", "sums_in_arms", "saved_in_arms", "outer_values_in_arms",
           "fresh_outputs", "write_in_place", "plain_constants", "recompute", "lower"]
