"""The RuleSet: which callables are primitives, and their derivative rules.

A primitive is declared with its signature in numpy's own parameter names::

    primitive(np.sum, "a, axis=None, dtype=None, keepdims=False")

Parameters without a default are *operands* (given positionally, traced or literal); those with
a default are static *options* (keywords, printed as ``[axis=1]``). A primitive is called, never
inlined. A rule is one expression per differentiable operand, written in those names plus ``y``
(the result) and ``dy`` (the incoming gradient)::

    diffrule(np.tanh, "x", "dy * (1 - y * y)")

or an ordinary Python function whose parameters are such names and which returns the gradient;
the frontend inlines it like user code, so shape branches are decided at compile time::

    @diffrule(np.sum, "a")
    def sum_grad(a, dy, axis=None, keepdims=False):
        ...

``diffrule`` and ``nodiff`` make a function a primitive on first use (its operands and options
read from its signature). Later declarations win: a rule replaces the one before it (a user rule
overrides a built-in), ``nodiff`` drops rules, and re-declaring a primitive carries its rules
over to the new signature. Every change takes a new ``version``, unique across all RuleSets, so
compiled code keyed on it goes stale. There is one default ``RuleSet`` (``RULES``); tests can
``copy()`` it.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import linecache
import os
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from ..errors import RuleError, SourceLoc
from ..ir.tape import TRAITS, Primitive
from .callables import (call_emit, default_traits, is_mutator, mutator_hint, numpy_path,
                        optional_operands, parse_signature, qualified_name, read_signature)
from .template import (check_rule_expr, check_rule_function, forwarded_kwargs, function_loc,
                       parse_rule_expr, placeholders, rule_parameters, spelled)

if TYPE_CHECKING:
    import gast


NODIFF_ALL = "*"
_versions = itertools.count(1)

@dataclass(frozen=True)
class Rule:
    """The derivative of ``prim`` with respect to its operand ``argname`` (a ``jvprule``: the
    tangent due to it).

    A one-line rule is parsed and checked on first use of ``expr``: a user's at once, when it is
    registered, so that a mistake shows at its line; a built-in's when a gradient needs it (the
    hundreds of them would make ``import yota_s2s`` slow; tests/test_rules.py reads them all).
    """

    prim: Primitive
    argname: str
    text: str                        # the expression, or "name(params)" of a rule function
    fn: Callable | None = None       # multi-line rules (inlined by the frontend)
    scatter: bool = False            # d a[key] += dy, accumulated per array (see ad/sweep.py)
    globals: dict | None = None      # where names in ``expr`` resolve (np, math, user helpers)
    loc: SourceLoc | None = None     # where the rule was registered
    forwards: str | None = None      # a rule function's ``**kw`` parameter (see ``kwargs``)
    ignores: frozenset = frozenset()  # options that do not change this gradient (``dtype``)
    shows: str | None = None         # a rule function's formula, as the comments show it
    domain: tuple[str, str] | None = None   # (what, what to do) where it fails on the example
    tangent: bool = False            # a jvprule: ``d<argname>``, the tangent, in place of dy

    @property
    def expr(self) -> gast.expr | None:
        """A one-line rule's expression (None for a rule function and a scatter)."""
        return self._parsed[0] if self.fn is None and not self.scatter else None

    @property
    def kwargs(self) -> str | None:
        """``kw`` in ``**kw``: the name that stands for the keyword options of the call."""
        return self._parsed[1] if self.fn is None and not self.scatter else self.forwards

    def names(self) -> set[str]:
        """The placeholders the rule may use: operands, options, ``y`` and ``dy`` (its tangent
        ``d<argname>`` for a jvprule)."""
        names = placeholders(self.prim, self.loc)
        return names - {"dy"} | {tangent_name(self.argname)} if self.tangent else names

    def check(self) -> None:
        """Parse and check a one-line rule now (it raises a ``RuleError`` at ``loc``)."""
        if self.fn is None and not self.scatter:
            self._parsed        # noqa: B018 (computed and kept)

    @functools.cached_property
    def _parsed(self) -> tuple[gast.expr, str | None]:
        expr = parse_rule_expr(self.text, self.loc)
        names = self.names()
        kwargs = None if self.tangent else forwarded_kwargs(expr, names, self.prim, self.loc)
        check_rule_expr(expr, names | {kwargs} - {None}, self.globals, self.prim, self.loc)
        return expr, kwargs

    def __str__(self) -> str:
        """``tanh x: dy * (1 - y * y)``; a rule function shows its formula (``shows=``) or says
        where it is written (``matmul x1: matmul_grad_x1(x1, x2, dy) in rules/products.py:32``,
        a path in the yota_s2s package)."""
        if self.shows is not None:
            return f"{self.prim.name} {self.argname}: {self.shows}"
        where = ""
        if self.fn is not None and self.loc is not None:
            package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            path = os.path.abspath(self.loc.file)
            inside = path.startswith(package + os.sep)
            where = f" in {os.path.relpath(path, package)}:{self.loc.line}" \
                if inside else f" in {self.loc.short}"
        return f"{self.prim.name} {self.argname}: {self.text}{where}"


@dataclass(frozen=True)
class BatchRule:
    """How ``prim`` computes a whole batch (``RuleSet.batchrule``; ad/batching.py)."""

    prim: Primitive
    fn: Callable
    loc: SourceLoc | None = None

    def __str__(self) -> str:
        return f"{self.prim.name} batched: {self.fn.__name__}"


def _checked(rule: Rule) -> Rule:
    """``rule``, its expression parsed and checked now unless a built-in rule file registered it
    (see ``Rule``)."""
    if not (rule.globals or {}).get("__name__", "").startswith(__package__ + "."):
        rule.check()
    return rule


def _caller() -> tuple[SourceLoc, dict]:
    """Where the user (or a built-in rule file) registered a rule, and the names visible there
    (a module's globals; inside a function, its locals too, as they are now)."""
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    # what inspect.getframeinfo reports, without its search of the file's source (hundreds of
    # calls at import): the call's first line is the frame's line on every Python
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line).strip()
    names = frame.f_globals
    if frame.f_locals is not frame.f_globals:
        names = {**frame.f_globals, **frame.f_locals}
    return SourceLoc(filename, line, func=_frame_func(frame), text=text), names


def _frame_func(frame) -> str:
    name = frame.f_code.co_name
    return "" if name == "<module>" else name


class RuleSet:
    def __init__(self) -> None:
        self.prims: dict[Any, Primitive] = {}
        self.rules: dict[tuple[Primitive, str], Rule] = {}
        self.nodiffs: dict[Primitive, set[str]] = {}
        self.cancellations: list[Callable] = []     # see ``cancels``
        self.jvps: dict[tuple[Primitive, str], Rule] = {}     # declared JVP rules (few)
        self.batches: dict[Primitive, BatchRule] = {}        # batching rules (ad/batching.py)
        self.deferred: dict[str, str] = {}     # library -> rule family to import on first sight
        self.loaded: list[str] = []            # the deferred families imported so far
        self._loading = False
        self.version = next(_versions)

    def copy(self) -> "RuleSet":
        """A copy with the rules as they are now, and the deferred families whose library is
        imported already (a copy loads no family later: ``load_all()`` first for them all)."""
        self.load_seen()
        new = RuleSet()
        new.prims, new.rules, new.jvps = dict(self.prims), dict(self.rules), dict(self.jvps)
        new.batches = dict(self.batches)
        new.nodiffs = {p: set(s) for p, s in self.nodiffs.items()}
        new.cancellations = list(self.cancellations)
        return new

    def _changed(self) -> None:
        self.version = next(_versions)

    # -- families loaded on first sight of their library -------------------------------------

    def defer(self, library: str, family: str) -> None:
        """Import the rule file ``family`` (a module name) on first sight of ``library``: when
        ``library`` is in ``sys.modules`` at a lookup that finds no primitive, at a
        declaration, at a ``copy()``. A function of ``library`` exists only once the library
        is imported, so its rules are there before the frontend asks for them, and before a
        user's rule for it (which then wins), while ``import yota_s2s`` imports none of it."""
        self.deferred[library] = family

    def load_seen(self) -> None:
        """Import the deferred families whose library is imported."""
        if self.deferred and any(library in sys.modules for library in self.deferred):
            self._load([lib for lib in self.deferred if lib in sys.modules])

    def load_all(self) -> list[str]:
        """Import every deferred family whose library is installed (listings and the
        coverage page show them all); the others are skipped quietly. Returns those loaded."""
        self._load(list(self.deferred), skip_missing=True)
        return self.loaded

    def _load(self, libraries: list[str], skip_missing: bool = False) -> None:
        """Import the families of ``libraries``. What compiled code is keyed on stays valid
        (the version is kept): nothing compiled before could call a function of a library
        that was not imported, and a family only declares that library's functions."""
        if self._loading:
            return                 # a family's own declarations: the loop below goes on
        version, self._loading = self.version, True
        try:
            self._import(libraries, skip_missing)
        finally:
            self.version, self._loading = version, False

    def _import(self, libraries: list[str], skip_missing: bool) -> None:
        for library in libraries:
            family = self.deferred.pop(library, None)
            if family is None or family.rsplit(".", 1)[-1] in self.loaded:
                continue
            try:
                importlib.import_module(family)
            except ImportError as e:
                missing = e.name or ""
                if not (skip_missing and (missing == library.split(".")[0]
                                          or missing.startswith(library.split(".")[0] + "."))):
                    raise
                continue
            self.loaded.append(family.rsplit(".", 1)[-1])

    # -- declaring ---------------------------------------------------------------------------

    def primitive(self, fn: Any, spec: str | None = None, *, name: str | None = None,
                  emit: tuple | None = None, nout: int = 1, module: str | None = None,
                  operands: str | None = None, **traits: Any) -> Primitive:
        """Declare ``fn`` a primitive: called, never inlined. ``module`` names where generated
        code imports it from (for functions defined in ``__main__``, or re-exported);
        ``name`` is how it is printed, nothing else. ``operands`` names the parameters that
        are operands when some of them have defaults (``"x, loc, scale"`` for the spec
        ``"x, loc=0.0, scale=1.0"``: a call may leave them out, or give them traced values).
        ``traits`` (``view=True``, ``method="sum"``...: ``ir.tape.TRAITS``) tell passes and
        codegen what it does; a re-declared primitive keeps those not given. Idempotent unless
        something new is given."""
        _check_hashable(fn)
        if is_mutator(fn):
            raise RuleError(f"{spelled(fn)} writes into its argument in place and returns None: "
                            "as a primitive (a rule, or ys.nodiff) its call would be recorded "
                            "without the write, and every later read of the array would miss it",
                            _caller()[0], mutator_hint(fn))
        self.load_seen()
        old = self.prims.get(fn)
        if old is not None and (spec, name, emit, module, operands) == (None,) * 5 and not traits:
            return old
        loc = _caller()[0]
        unknown = sorted(set(traits) - set(TRAITS))
        if unknown:
            raise RuleError(f"ys.primitive({spelled(fn)}) has no option {unknown[0]!r}", loc,
                            f"Its traits are: {', '.join(TRAITS)}.")
        if spec is not None and "**" in spec:
            raise RuleError(f"the spec {spec!r} has **keywords; a primitive needs its options "
                            "by name", loc, "List them with defaults: \"x, w, pad=0, stride=1\".")
        required, options = parse_signature(spec) if spec is not None else read_signature(fn, loc)
        optional = optional_operands(required, options, operands, loc)
        declared = old.traits() if old is not None else default_traits(fn)
        declared.update(traits)
        stray = sorted(set(declared.get("written", ())) - {n for n, _ in options[len(optional):]})
        if stray:
            raise RuleError(f"written={stray[0]!r}: {spelled(fn)} has no such option", loc,
                            "List the options (parameters with defaults) to pass in every call.")
        prim = Primitive(name or numpy_path(fn) or qualified_name(fn, module), fn,
                         required + tuple(n for n, _ in optional), options[len(optional):],
                         emit or call_emit(fn, module), nout, optional, **declared)
        if old is not None:
            self._carry_over(old, prim, loc)
        self.prims[fn] = prim
        self._changed()
        return prim

    def _carry_over(self, old: Primitive, new: Primitive, loc: SourceLoc) -> None:
        """A re-declared primitive keeps its rules, nodiff marks and aliases (checked against
        the new signature before anything changes); its traits were kept where not given."""
        operands = {o.lstrip("*") for o in new.operands}
        moved = {}
        for (prim, argname), rule in self.rules.items():
            if prim is not old:
                continue
            if argname not in operands:
                raise RuleError(f"re-declaring {spelled(new.fn)} drops its operand {argname!r}, "
                                f"which has a rule ({rule.loc.short if rule.loc else 'built in'})",
                                loc, "Declare the primitive before registering its rules.")
            if rule.expr is not None:
                check_rule_expr(rule.expr, placeholders(new, loc) | {rule.kwargs} - {None},
                                rule.globals, new, loc)
            moved[(new, argname)] = replace(rule, prim=new)
        self.rules = {k: r for k, r in self.rules.items() if k[0] is not old} | moved
        self.jvps = {(new if p is old else p, a): replace(r, prim=new) if p is old else r
                     for (p, a), r in self.jvps.items()}
        self.prims.update((fn, new) for fn, prim in list(self.prims.items()) if prim is old)
        if old in self.batches:
            self.batches[new] = replace(self.batches.pop(old), prim=new)
        marks = self.nodiffs.pop(old, set())
        if marks:
            self.nodiffs[new] = {m for m in marks if m == NODIFF_ALL or m in operands}

    def alias(self, fn: Any, target: Any) -> None:
        """Calls to ``fn`` become the primitive of ``target`` (``np.add`` -> ``+``)."""
        self.prims[fn] = self.prims[target]
        self._changed()

    def diffrule(self, fn: Any, argname: str, rule: str | Callable | None = None, *,
                 ignores: tuple[str, ...] = (), shows: str | None = None,
                 domain: tuple[str, str] | None = None):
        """Register ``rule`` as the derivative of ``fn`` with respect to ``argname``.

        ``rule`` is an expression in ``fn``'s parameter names, ``y`` and ``dy`` (and ``**kw``
        for the keyword options of the call), or a function of those names; without it,
        ``diffrule`` is a decorator for such a function. A call that sets an option the rule
        neither reads nor forwards is refused when it is compiled (the gradient would ignore
        it), unless the option is listed in ``ignores``: it does not change this gradient.
        ``shows`` is the formula a rule function computes, as the generated code's comments
        show it (``dy * x2 * x1 ** (x2 - 1)``) instead of the function's name and place.
        ``domain`` is ``(what, what to do)``: what the error says, at the call in the user's
        code, where a step of the rule fails on the example arguments (outside the inputs the
        derivative exists for: ``inv`` of a singular matrix in slogdet's rule).
        """
        if rule is None:
            def register(rule_fn: Callable) -> Callable:
                self.diffrule(fn, argname, rule_fn, ignores=ignores, shows=shows, domain=domain)
                return rule_fn
            return register
        loc, env = _caller()
        if inspect.isfunction(rule):
            loc = function_loc(rule)      # the def itself: the same line on every Python
        if domain is not None and not (isinstance(domain, tuple) and len(domain) == 2 and
                                       all(isinstance(t, str) for t in domain)):
            raise RuleError(f"domain= of the rule for {spelled(fn)} must be two strings: what "
                            "the error says and what to do", loc,
                            'Write domain=("<what fails and why>", "<what to do>").')
        prim = self.primitive(fn)
        self._check_argname(prim, argname, loc)
        ignores = (ignores,) if isinstance(ignores, str) else tuple(ignores)
        unknown = sorted(set(ignores) - {o for o, _ in prim.options})
        if unknown:
            raise RuleError(f"ignores={unknown[0]!r}: {spelled(fn)} has no such option", loc,
                            f"Its options are: {', '.join(o for o, _ in prim.options) or '(none)'}.")
        allowed = placeholders(prim, loc)
        if isinstance(rule, str) and shows is not None:
            raise RuleError(f"shows= is for a rule function: the rule {rule.strip()!r} of "
                            f"{spelled(fn)} shows itself", loc, "Leave shows= out.")
        if isinstance(rule, str):
            entry = _checked(Rule(prim, argname, rule.strip(), globals=env, loc=loc,
                                  ignores=frozenset(ignores), domain=domain))
        elif not inspect.isfunction(rule):
            raise RuleError(f"the rule for {spelled(fn)} must be a string or a Python function, "
                            f"not {type(rule).__name__}", loc,
                            'Write it as "<expr in y, dy, ...>" or as a def.')
        else:
            kwargs = check_rule_function(rule, allowed, prim)
            params = ", ".join(rule_parameters(rule)[0])
            entry = Rule(prim, argname, f"{rule.__name__}({params})", fn=rule, loc=loc,
                         forwards=kwargs, ignores=frozenset(ignores), shows=shows, domain=domain)
        self.rules[(prim, argname)] = entry
        self._unmark(prim, argname)
        self._changed()
        return rule

    def jvprule(self, fn: Any, argname: str, rule: str | Callable | None = None):
        """Register ``rule`` as the tangent of ``fn``'s result due to its operand ``argname``
        (forward mode; the contributions of the operands add up). It is written like a
        ``diffrule``, in ``fn``'s parameter names and ``y``, with ``d<argname>`` (``dz`` for
        ``z``) the operand's tangent in place of ``dy``::

            jvprule(np.angle, "z", "np.imag(np.conj(z) * dz) / np.abs(z) ** 2")

        Most primitives need none: ad/forward.py derives the JVP from the ``elementwise``,
        ``linear`` and ``multilinear`` traits, or by transposing the VJP rule."""
        if rule is None:
            def register(rule_fn: Callable) -> Callable:
                self.jvprule(fn, argname, rule_fn)
                return rule_fn
            return register
        loc, env = _caller()
        if inspect.isfunction(rule):
            loc = function_loc(rule)
        prim = self.primitive(fn)
        self._check_argname(prim, argname, loc)
        allowed = placeholders(prim, loc) - {"dy"} | {tangent_name(argname)}
        if isinstance(rule, str):
            entry = _checked(Rule(prim, argname, rule.strip(), globals=env, loc=loc, tangent=True))
        else:
            check_rule_function(rule, allowed, prim)
            params = ", ".join(rule_parameters(rule)[0])
            entry = Rule(prim, argname, f"{rule.__name__}({params})", fn=rule, loc=loc)
        self.jvps[(prim, argname)] = entry
        self._changed()
        return rule

    def jvp(self, prim: Primitive, argname: str) -> tuple[str, Rule | None]:
        """How forward mode gets the tangent due to ``argname``: ("declared", its jvprule),
        ("linear", None), ("multilinear", None), ("elementwise", the VJP rule, used with dy
        := the tangent), ("transposed", the VJP rule) or ("none", None)."""
        declared = self.jvps.get((prim, argname))
        if declared is not None:
            return "declared", declared
        if prim.linear:
            return "linear", None
        if prim.multilinear:
            return "multilinear", None
        vjp = self.rules.get((prim, argname))
        if vjp is None:
            return "none", None
        pointwise = prim.elementwise or prim.ufunc is not None
        return ("elementwise" if pointwise else "transposed"), vjp

    def batchrule(self, fn: Any, rule: Callable | None = None):
        """Register ``rule`` as the batching rule of ``fn`` (``ys.vmap``, ad/batching.py): a
        function of ``fn``'s operands and options, written like a derivative rule function,
        that computes ``fn`` for a whole batch. Its batched operands come with the batch as
        their first axis; the placeholders ``batched`` (per operand: whether it is batched, a
        tree of flags for a sequence operand) and ``size`` (the batch size) say which and how
        many; it returns the batched result(s), the batch first::

            @batchrule(np.sum)
            def sum_batched(a, axis=None, dtype=None, keepdims=False):
                return np.sum(a, after_batch(axis, np.ndim(a) - 1), dtype, keepdims)

        Most primitives need none: an ``elementwise`` one (every ufunc, the operators) lines
        its operands up and is applied to them as it is. Without a rule a batched operand is
        refused, naming the primitive and the line of the call."""
        if rule is None:
            def register(rule_fn: Callable) -> Callable:
                self.batchrule(fn, rule_fn)
                return rule_fn
            return register
        if not inspect.isfunction(rule):
            raise RuleError(f"the batching rule for {spelled(fn)} must be a Python function, "
                            f"not {type(rule).__name__}", _caller()[0],
                            "Write it as a def of the primitive's operands and options.")
        prim = self.primitive(fn)
        loc = function_loc(rule)
        names = {o.lstrip("*") for o in prim.operands} | {o for o, _ in prim.options}
        params, kwargs = rule_parameters(rule)
        unknown = [p for p in params if p not in names | {"batched", "size", kwargs}]
        if unknown:
            raise RuleError(f"the batching rule {rule.__name__} of {spelled(fn)} has a "
                            f"parameter {unknown[0]!r}, which is no operand or option of it",
                            loc, f"Its operands and options are: {', '.join(sorted(names))}; "
                            "batched and size say which operands are batched and how many.")
        self.batches[prim] = BatchRule(prim, rule, loc)
        self._changed()
        return rule

    def _unmark(self, prim: Primitive, argname: str) -> None:
        """A rule for ``argname`` lifts an earlier ``nodiff`` of it (or of the whole call)."""
        marks = self.nodiffs.get(prim)
        if not marks:
            return
        if NODIFF_ALL in marks:
            marks.discard(NODIFF_ALL)
            marks |= {o.lstrip("*") for o in prim.operands}
        marks.discard(argname)

    def scatter_rule(self, fn: Any, argname: str) -> None:
        """``d a[key] += dy``: contributions to one array accumulate in a single buffer."""
        prim = self.primitive(fn)
        loc, _ = _caller()
        self.rules[(prim, argname)] = Rule(prim, argname, "d{a}[key] += dy", scatter=True, loc=loc)
        self._changed()

    def nodiff(self, fn: Any, argname: str | None = None) -> Any:
        """No gradient flows through ``fn`` (or through its operand ``argname``); its rules
        for those operands are dropped. Returns ``fn``, so it also works as a decorator."""
        prim = self.primitive(fn)
        if argname is None:
            self.nodiffs[prim] = {NODIFF_ALL}
            self.rules = {k: r for k, r in self.rules.items() if k[0] is not prim}
        else:
            self._check_argname(prim, argname, _caller()[0])
            self.nodiffs.setdefault(prim, set()).add(argname)
            self.rules.pop((prim, argname), None)
        self._changed()
        return fn

    def cancels(self, check: Callable) -> Callable:
        """Declare terms that cancel exactly: ``check(tape, facts)`` (the forward tape and its
        ``ir.analysis.Analysis``) returns ``(statement index, operand name)`` pairs whose
        gradient contributions add up to zero for every value of the arguments (the max
        subtracted before a log-sum-exp); ad/sweep.py emits nothing for them. Returns
        ``check``, so it works as a decorator (docs/rules.md, "Terms that cancel")."""
        if check not in self.cancellations:
            self.cancellations.append(check)
            self._changed()
        return check

    def _check_argname(self, prim: Primitive, argname: str, loc: SourceLoc) -> None:
        names = [o.lstrip("*") for o in prim.operands]
        if argname not in names:
            options = [o for o, _ in prim.options]
            hint = f"Its operands are: {', '.join(names) or '(none)'}."
            if argname in options:
                hint = (f"{argname!r} is a static option of {spelled(prim.fn)} (it has a "
                        f"default), and static values get no gradient. {hint}")
            raise RuleError(f"{spelled(prim.fn)} has no operand named {argname!r}", loc, hint)

    # -- looking up --------------------------------------------------------------------------

    def lookup(self, fn: Any) -> Primitive | None:
        try:
            prim = self.prims.get(fn)
        except TypeError:         # unhashable callables are never primitives
            return None
        if prim is None and self.deferred:
            self.load_seen()
            prim = self.prims.get(fn)
        return prim

    def rule(self, prim: Primitive, argname: str) -> Rule | None:
        return self.rules.get((prim, argname))

    def is_nodiff(self, prim: Primitive, argname: str) -> bool:
        marks = self.nodiffs.get(prim, ())
        return NODIFF_ALL in marks or argname in marks


def _check_hashable(fn: Any) -> None:
    try:
        hash(fn)
    except TypeError:
        raise RuleError(f"{fn!r} cannot be a primitive: it is not hashable", _caller()[0],
                        "Register the function itself, not a bound or partial object.") from None


def tangent_name(argname: str) -> str:
    """The placeholder for an operand's tangent in a ``jvprule``: ``dz`` for ``z``."""
    return "d" + argname


RULES = RuleSet()
primitive = RULES.primitive
alias = RULES.alias
scatter_rule = RULES.scatter_rule
nodiff = RULES.nodiff
diffrule = RULES.diffrule
cancels = RULES.cancels
jvprule = RULES.jvprule
batchrule = RULES.batchrule
