"""Frozen scipy.stats distributions in traced code: ``stats.norm(0.0, s).logpdf(w)`` is
``stats.norm.logpdf(w, loc=0.0, scale=s)``, the method of the distribution with the frozen
parameters passed by name, so it is the primitive that carries the rule (rules/scipy_stats.py).

A call of a distribution (``norm(mu, s)``, ``t(df)``, ``multivariate_normal(m, c)``) made while
tracing is a ``Frozen``, whatever its arguments; a frozen univariate distribution read from
outside the function (``PRIOR = norm(0, 1)`` at module level) is read the same way. scipy is
imported only when such a value is met (it is an optional dependency).
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Frozen:
    """A scipy.stats distribution with its parameters: ``dist(*args, **kwargs)``."""

    dist: Any
    args: tuple
    kwargs: dict


def _scipy_stats(value: Any) -> bool:
    return type(value).__module__.startswith("scipy.stats")


def is_distribution(fn: Any) -> bool:
    """``scipy.stats.norm``, ``t``, ``poisson``, ``multivariate_normal``...: an object whose
    call freezes its parameters."""
    if not _scipy_stats(fn):
        return False
    from scipy.stats import rv_continuous, rv_discrete
    from scipy.stats._multivariate import multi_rv_generic
    return isinstance(fn, (rv_continuous, rv_discrete, multi_rv_generic))


def as_frozen(value: Any) -> Frozen | None:
    """A ``Frozen`` for a frozen univariate distribution made outside the traced code."""
    if isinstance(value, Frozen):
        return value
    if not _scipy_stats(value):
        return None
    import scipy.stats
    from scipy.stats._distn_infrastructure import rv_frozen
    if not isinstance(value, rv_frozen):
        return None
    # scipy freezes a copy of the distribution: the rules are on the one scipy.stats names
    dist = getattr(scipy.stats, value.dist.name, None)
    if type(dist) is not type(value.dist):
        return None
    return Frozen(dist, tuple(value.args), dict(value.kwds))


def parameter_names(dist: Any) -> list[str]:
    """The names of a distribution's parameters, in the order its call takes them: its shape
    parameters, then ``loc`` (and ``scale`` for a continuous one); a multivariate one's are
    those of its call (``mean, cov, allow_singular``), without ``seed``."""
    from scipy.stats import rv_continuous, rv_discrete
    shapes = [s.strip() for s in (getattr(dist, "shapes", None) or "").split(",") if s.strip()]
    if isinstance(dist, rv_continuous):
        return shapes + ["loc", "scale"]
    if isinstance(dist, rv_discrete):
        return shapes + ["loc"]
    params = inspect.signature(dist.__call__).parameters
    return [n for n, p in params.items()
            if n != "seed" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def frozen_method(frozen: Frozen, name: str) -> Any:
    """``frozen.name``: the distribution's method with the parameters bound by name."""
    names = parameter_names(frozen.dist)
    if len(frozen.args) > len(names):
        raise TypeError(f"{type(frozen.dist).__name__}() takes {len(names)} parameters "
                        f"({', '.join(names)}), {len(frozen.args)} given")
    bound = dict(zip(names, frozen.args), **frozen.kwargs)
    return functools.partial(getattr(frozen.dist, name), **bound)
