"""A thin stand-in for ``autograd``, mapping its differential operators to yota_s2s.

tools/autograd_suite.py puts the directory above this package first on ``sys.path`` and runs
autograd's own tests against it. ``autograd.numpy`` is numpy and ``autograd.scipy`` is scipy
(the same modules, so a test differentiates the program a user would write); each operator
is the yota_s2s entry point that docs/porting.md names for it. Nothing here computes a
derivative: a gradient that comes back is yota_s2s's.
"""
import functools
import sys
import types

import numpy
import numpy.fft
import numpy.linalg
import numpy.random
import scipy
import scipy.integrate
import scipy.linalg
import scipy.special
import scipy.stats

import yota_s2s as ys

from ._internal import Internal
from ._tree import restructure, zeros_like

from . import scipy_signal  # noqa: E402  (autograd's own generalized convolve)

_scipy = types.ModuleType(__name__ + ".scipy")
for _name in ("special", "stats", "linalg"):
    setattr(_scipy, _name, getattr(scipy, _name))
_integrate = types.ModuleType(__name__ + ".scipy.integrate")   # odeint: ys.odeint (the adjoint)
_integrate.__getattr__ = functools.partial(getattr, scipy.integrate)
_integrate.odeint = ys.odeint
_scipy.integrate = _integrate
_scipy.signal, _scipy.misc = scipy_signal, scipy.special
_ALIASES = {"numpy": numpy, "numpy.random": numpy.random, "numpy.linalg": numpy.linalg,
            "numpy.fft": numpy.fft, "scipy": _scipy, "scipy.special": scipy.special,
            "scipy.stats": scipy.stats, "scipy.linalg": scipy.linalg,
            "scipy.integrate": _integrate, "scipy.misc": scipy.special,
            "scipy.signal": scipy_signal}
for _stat in ("multivariate_normal", "norm", "t", "gamma", "beta", "chi2", "poisson", "dirichlet"):
    _ALIASES["scipy.stats." + _stat] = getattr(scipy.stats, _stat)
for _name, _module in _ALIASES.items():
    sys.modules[__name__ + "." + _name] = _module
scipy = _scipy   # autograd.scipy: scipy, with autograd.scipy.signal as above


def _positions(argnum):
    return tuple(argnum) if isinstance(argnum, (list, tuple)) else argnum


def _picked(fun, argnum, with_value):
    """A function returning what ``fun`` (a ys.gradient-like function) returns, with each
    gradient of a structured argument (a ``{path: array}`` dict) put back in the argument's
    own structure, as autograd returns it. (Not ``functools.wraps``: a decorated function
    cannot be made inside a function yota_s2s traces, as this one is in autograd's
    ``grad(lambda x: grad(f)(x))``.)"""
    def call(*args, **kwargs):
        out = fun(*args, **kwargs)
        value, grads = out if with_value else (None, out)
        if isinstance(argnum, tuple):
            grads = tuple([restructure(g, args[i]) for i, g in zip(argnum, grads)])
        else:
            grads = restructure(grads, args[argnum])
        return (value, grads) if with_value else grads
    return call


def grad(fun, argnum=0):
    argnum = _positions(argnum)
    return _picked(ys.gradient(fun, argnum), argnum, False)


def value_and_grad(fun, argnum=0):
    argnum = _positions(argnum)
    return _picked(ys.value_and_grad(fun, argnum), argnum, True)


def elementwise_grad(fun, argnum=0):
    argnum = _positions(argnum)
    return _picked(ys.elementwise_grad(fun, argnum), argnum, False)


def holomorphic_grad(fun, argnum=0):
    return grad(lambda *args: numpy.real(fun(*args)), argnum)


def grad_named(fun, argname):
    return ys.gradient(fun, argname)


def multigrad_dict(fun):
    def call(*args):
        names = fun.__code__.co_varnames[:len(args)]
        return dict(zip(names, grad(fun, tuple(range(len(args))))(*args)))
    return call


def jacobian(fun, argnum=0):
    return lambda *args: ys.jacobian(fun, *args, argnum=argnum)


def hessian(fun, argnum=0):
    return lambda *args: ys.hessian(fun, *args, argnum=argnum)


def make_vjp(fun, argnum=0):
    """``make_vjp(fun, argnum)(*args) == (vjp, fun(*args))``: ``vjp(g)`` is the gradient of
    ``<g, fun(*args)>`` in argument ``argnum``, by ``ys.vjp`` (a real float result) or by
    ``ys.gradient`` of that inner product (a complex or structured result)."""
    def at(*args):
        from ._vjp import cotangent_like, vjp_function
        vjp_f, ans = vjp_function(fun, args, argnum)
        return (lambda g: vjp_f(*args, cotangent_like(ans, g))), ans
    return at


def make_jvp(fun, argnum=0):
    def at(*args):
        def jvp(v):
            tangents = tuple(v if i == argnum else zeros_like(a) for i, a in enumerate(args))
            return ys.jvp(fun, args, tangents)
        return jvp
    return at


def deriv(fun, argnum=0):
    return lambda *args: make_jvp(fun, argnum)(*args)(numpy.ones_like(args[argnum]))[1]


def make_hvp(fun, argnum=0):
    def at(*args):
        hf = ys.hvp(fun, *args, argnum=argnum)
        return (lambda v: hf(*args, v)), grad(fun, argnum)(*args)
    return at


def hessian_tensor_product(fun, argnum=0):
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args):
        return numpy.tensordot(fun_grad(*args[:-1]), args[-1], numpy.ndim(args[-1]))
    return grad(vector_dot_grad, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """autograd's: the Jacobian of ``tensordot(tensor, fun(*args))`` (a tensor when ``tensor``
    covers fewer axes than ``fun``'s result), ``ys.jacobian``."""
    def vector_dot_fun(*args):
        return numpy.tensordot(args[-1], fun(*args[:-1]), numpy.ndim(args[-1]))
    return jacobian(vector_dot_fun, argnum)


vector_jacobian_product = tensor_jacobian_product


def make_ggnvp(f, g=lambda x: 1.0 / 2 * numpy.sum(x**2, axis=-1), f_argnum=0):
    """autograd's generalized Gauss-Newton products ``J^T H_g J v`` (``J`` the Jacobian of
    ``f`` at ``x``, ``H_g`` the Hessian of ``g`` at ``f(x)``), composed as autograd composes
    them: ``ys.jvp`` of ``f``, ``ys.hvp`` of ``g``, ``ys.vjp`` of ``f``."""
    def at(*args):
        x = args[f_argnum]
        fx = f(*args)
        vf = ys.vjp(f, *args, wrt=f_argnum)
        hg = ys.hvp(g, fx)

        def ggnvp(v):
            tangents = tuple(v if i == f_argnum else zeros_like(a) for i, a in enumerate(args))
            _, jv = ys.jvp(f, args, tangents)
            return restructure(vf(*args, hg(fx, jv))[1 + f_argnum], x)
        return ggnvp
    return at


def grad_and_aux(fun, argnum=0):
    def call(*args):
        dfun = grad(lambda *a: fun(*a)[0], argnum)
        return dfun(*args), fun(*args)[1]
    return call


def checkpoint(fun):
    return fun   # recomputation is a memory policy; the values are fun's


for _name in ("make_diagonal", "metadata", "array_from_args", "array_from_scalar_or_array"):
    setattr(numpy, _name, Internal(_name))   # autograd.numpy's own functions, not numpy's
from ._linalg import T, _dot  # noqa: E402  (autograd.numpy.linalg's helpers, in numpy)

numpy.linalg._dot, numpy.linalg.T = _dot, T

from .builtins import dict, isinstance, list, tuple, type  # noqa: E402, A004
from .core import primitive_with_deprecation_warnings as primitive  # noqa: E402
