"""Derivative rules, one file per family, all registered in one ``RuleSet`` (``RULES``).

    operators.py    + - * / ** unary -, % and the piecewise-constant ones (// < == & ...)
    elementwise.py  numpy ufuncs, complex parts, math functions on floats, abs/float, astype
    discrete.py     rounding, tests and index-valued functions (no gradient)
    reductions.py   sum mean prod max min std var nansum nanmean cumsum cumprod diff
    shape.py        reshape ravel squeeze transpose moveaxis broadcast_to flip roll rot90 ...
    joining.py      concatenate stack hstack vstack ... split ... tile repeat pad
    indexing.py     x[key], x[key] = v, take take_along_axis delete sort partition
    products.py     @ dot vdot inner outer kron tensordot einsum
    matrices.py     diag diagonal trace tril triu
    linalg.py       np.linalg: inv pinv det slogdet solve cholesky eigh svd qr norm
    creation.py     zeros ones full arange ... (no gradient)
    control.py      guards (no gradient)
    stop.py         stop_gradient (identity forward, no gradient)
    signal.py       np.convolve correlate, np.fft: fft ifft rfft irfft fft2 ifft2 fftn ifftn
    convolution.py  convolve: autograd's n-dimensional convolution (axes, dot_axes, mode)
    implicit.py     fixed_point, odeint: implicit functions of a user's function (the adjoint
                    fixed point, the adjoint method), never differentiated through their steps
    outside.py      external, draw: values read from outside the function when it runs (no
                    gradient)

Every built-in family registers here, at ``import yota_s2s``, not when the frontend first
imports one: ``RULES.version`` (part of ``ys.grad``'s cache key) is then the same before and
after the first compile.

Optional families, imported on first sight of their library (``DEFERRED``: once it is imported,
at the first lookup or declaration after that; ``RULES.load_all()`` imports every one whose library
is installed; ``OPTIONAL`` lists those loaded), so that ``import yota_s2s`` does not import scipy:

    scipy_special.py  scipy.special: gammaln digamma erf expit xlogy logsumexp softmax ...
    scipy_stats.py    scipy.stats: norm t gamma beta chi2 poisson multivariate_normal dirichlet
    scipy_misc.py     scipy.signal.convolve, scipy.linalg: solve_triangular cholesky sqrtm

registry.py holds the ``RuleSet``, callables.py reads what a callable is as a primitive (its
signature, name and call), template.py checks and binds rules, listing.py prints them.
batching.py holds the helpers of the batching rules (``batchrule``, for ``ys.vmap``), which
each family declares beside its derivative rules.

The same ``diffrule``/``nodiff`` calls that users make register the built-ins, so these files
are also the examples to learn from.
"""
import sys
import types

from . import (control, convolution, creation, discrete, elementwise, implicit, indexing,
               joining, linalg, matrices, operators, outside, products, reductions, shape, signal,
               stop)
from .listing import RuleListing, list_rules
from .registry import (RULES, Rule, RuleSet, alias, batchrule, cancels, diffrule, jvprule,
                       nodiff, primitive, scatter_rule)
from .stop import stop_gradient

__all__ = ["RULES", "Rule", "RuleSet", "RuleListing", "alias", "batchrule", "cancels", "diffrule",
           "jvprule",
           "nodiff",
           "primitive",
           "scatter_rule", "stop_gradient", "list_rules", "control", "convolution", "creation",
           "discrete", "elementwise", "indexing", "joining", "linalg", "matrices", "operators", "outside",
           "products", "reductions", "shape", "signal", "stop", "OPTIONAL", "DEFERRED"]


# library -> the family of its rules, imported on first sight of the library
DEFERRED = {"scipy.special": "scipy_special", "scipy.stats": "scipy_stats",
            "scipy.signal": "scipy_misc", "scipy.linalg": "scipy_misc"}
for _library, _family in DEFERRED.items():
    RULES.defer(_library, f"{__name__}.{_family}")
OPTIONAL = RULES.loaded


class _CallablePackage(types.ModuleType):
    """``ys.rules()`` lists the rules, while ``ys.rules`` stays this package (``ys.rules.RULES``):
    a function of that name would shadow the package on ``yota_s2s``."""

    def __call__(self, match=None, rules: RuleSet = RULES) -> RuleListing:
        """The registered primitives and their rules (of ``match``: a function or part of a
        name), readable in a terminal: ``print(ys.rules(np.tanh))``."""
        return list_rules(match, rules)


sys.modules[__name__].__class__ = _CallablePackage
