"""Optimizing passes over the tape, each in its own module.

Every pass is a function ``(tape, rules) -> (tape, changed)``, where ``rules`` is the RuleSet
the tape was made with: the primitives of the statements a pass writes come from it (and
passes recognise statements by their primitive's function or traits, never by its name).
``optimize`` runs ``PIPELINE`` until nothing changes, then ``fresh_outputs`` makes sure
nothing returned aliases an argument, another output or a read-only view (and dead-code
elimination drops what that replaced), and ``write_in_place`` turns updates (``setitem``) back
into the in-place assignments the user wrote, where the old array is not needed.
``plain_constants`` then writes float64 constants as plain floats where that changes nothing.
For the buffered form, ``recompute`` makes cheap forward values again where the backward
section reads them, instead of keeping them in memory; on a CPU, ``lower`` writes a primitive
that numpy computes one element at a time as SIMD ufuncs computing the same formula.
Loop bodies go through the same passes, each as a tape of its own (``regions.py``).
"""
from __future__ import annotations

from ..ir.tape import Tape
from ..rules.registry import RuleSet
from .constants import plain_constants
from .cse import cse, cse_within_sections
from .dce import dce
from .fold import fold
from .inplace import write_in_place
from .lower import lower
from .recompute import recompute
from .outputs import fresh_outputs
from .regions import in_place_bodies, optimize_bodies
from .signs import signs
from .simplify import simplify
from .stacked import stack_products

PIPELINE = [fold, simplify, signs, cse, dce]
# The review form (the plain form, what a reviewer reads): no CSE across the sections.
REVIEW_PIPELINE = [fold, simplify, signs, cse_within_sections, dce]
MAX_ROUNDS = 20


def optimize(tape: Tape, rules: RuleSet, passes=PIPELINE, review: bool = False,
             device: str | None = None) -> Tape:
    """``review``: the pipeline of the review form (``REVIEW_PIPELINE``); ``device``: where the
    buffered module runs (``lower`` is for numpy on a CPU; None: not said, not lowered)."""
    if review:
        passes = REVIEW_PIPELINE
    tape = _rounds(tape, rules, passes)
    tape, _ = dce(fresh_outputs(tape, rules), rules)
    tape, _ = plain_constants(tape, rules)
    # inside loop bodies (passes/regions.py): the same passes, each body a tape of its own
    tape = optimize_bodies(tape, lambda body: _rounds(body, rules, passes + [plain_constants]))
    if not review:      # the buffered form: an accumulator's per-step products, one after the loop
        tape, _ = stack_products(tape, rules)
    tape = in_place_bodies(write_in_place(tape, rules), rules)
    if not review:      # the buffered form: cheap forward values made again, not kept
        tape, _ = recompute(tape, rules)
        if device == "cpu":     # numpy's scalar loops as SIMD ufuncs (not cupy's kernels)
            tape, _ = lower(tape, rules)
    return tape


def _rounds(tape: Tape, rules: RuleSet, passes) -> Tape:
    for _ in range(MAX_ROUNDS):
        changed = False
        for run_pass in passes:
            tape, did = run_pass(tape, rules)
            changed |= did
        if not changed:
            break
    return tape


__all__ = ["PIPELINE", "REVIEW_PIPELINE", "optimize", "cse", "cse_within_sections", "dce", "fold", "signs", "simplify", "fresh_outputs",
           "write_in_place", "plain_constants", "recompute", "lower"]
