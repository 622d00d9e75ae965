"""autograd.test_util on yota_s2s: autograd's checks (a VJP against central differences, a
JVP against them, then the same for the derivative functions, to ``order``), with the
derivatives computed by the shim's operators, that is by yota_s2s."""
from itertools import product

import numpy
import numpy.random as npr

import yota_s2s as ys

from . import make_vjp
from ._tree import inner, is_float_leaf, leaves, tree_map
from ._made import WITH_KEYWORDS, made
from ._vjp import cotangent_like
from ._vjp import vjp_function as _vjp_function

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def randn_like(x):
    def one(a):
        if not is_float_leaf(a):
            return a
        shape = numpy.shape(a)
        r = npr.randn(*shape)
        if numpy.iscomplexobj(a):
            r = r + 1j * npr.randn(*shape)
        if shape:
            return r
        # a tangent of the argument's own type: a Python float for a float, a numpy scalar
        # (np.float64 is a float too) for a numpy scalar
        return r if type(a) in (float, complex) else numpy.asarray(r, numpy.result_type(a))[()]
    return tree_map(one, x)


def _shift(x, v, s):
    return tree_map(lambda a, d: a + s * d if is_float_leaf(a) else a, x, v)


def numerical_jvp(f, args, i, v):
    plus = list(args)
    minus = list(args)
    plus[i] = _shift(args[i], v, EPS / 2)
    minus[i] = _shift(args[i], v, -EPS / 2)
    return tree_map(lambda p, m: (p - m) / EPS, f(*plus), f(*minus))


def _same_space(g, x, what):
    gl, xl = leaves(g), leaves(x)
    assert len(gl) == len(xl), f"{what}: {len(gl)} values, expected {len(xl)}"
    for a, b in zip(gl, xl):
        if not is_float_leaf(b):
            continue
        assert numpy.shape(a) == numpy.shape(b), f"{what}: shape {numpy.shape(a)}, expected {numpy.shape(b)}"
        assert numpy.iscomplexobj(a) <= numpy.iscomplexobj(b), f"{what}: complex for a real argument"


def check_vjp(f, args, i):
    vjp, y = make_vjp(f, i)(*args)
    x_v, y_v = randn_like(args[i]), randn_like(y)
    g = vjp(cotangent_like(y, y_v))
    _same_space(g, args[i], "VJP")
    exact = inner(tree_map(numpy.conj, x_v), g)
    numeric = inner(y_v, numerical_jvp(f, args, i, x_v))
    assert scalar_close(numeric, exact), \
        f"Derivative (VJP) check of {getattr(f, '__name__', f)} failed:\nanalytic: {exact}\nnumeric:  {numeric}"
    return y


def check_equivalent(x, y):
    _same_space(x, y, "value")
    v = randn_like(y)
    assert scalar_close(inner(x, v), inner(y, v)), f"Value mismatch:\nx: {x}\ny: {y}"


def _tangents(args, i, v):
    return tuple(v if j == i else None for j, a in enumerate(args))


def check_jvp(f, args, i):
    v = randn_like(args[i])
    _, tangent = ys.jvp(f, tuple(args), _tangents(args, i, v))
    check_equivalent(tangent, numerical_jvp(f, args, i, v))


def _jvp_function(f, args, i):
    """``(*args, t, *zeros) -> the JVP of f at args along t in argument i`` (zero tangents,
    passed in, for the other float arguments)."""
    floats = [j for j, a in enumerate(args) if any(map(is_float_leaf, leaves(a)))]
    jf = ys.jvpfunction(f, *args)
    n = len(args)
    others = [j for j in floats if j != i]
    picks = tuple(n if j == i else n + 1 + others.index(j) for j in floats)

    def jvp_f(*a):
        return jf(*(a[:n] + tuple([a[k] for k in picks])))[1]
    return jvp_f, [_zero(args[j]) for j in others]


def _zero(a):
    return tree_map(lambda x: (type(x)(0) if isinstance(x, (float, complex)) else numpy.zeros_like(x))
                    if is_float_leaf(x) else None, a)


def _check(f, args, i, modes, order):
    if "fwd" in modes:
        check_jvp(f, args, i)
        if order > 1:
            jvp_f, zeros = _jvp_function(f, args, i)
            jvp_f.__name__ = f"jvp_{getattr(f, '__name__', 'f')}"
            t = randn_like(args[i])
            check_grads(jvp_f, (i, len(args)), modes, order - 1)(*args, t, *zeros)
    if "rev" in modes:
        check_vjp(f, args, i)
        if order > 1:
            vjp_f, y = _vjp_function(f, args, i)
            vjp_f.__name__ = f"vjp_{getattr(f, '__name__', 'f')}"
            v = cotangent_like(y, randn_like(y))
            check_grads(vjp_f, (i, len(args)), modes, order - 1)(*args, v)


def check_grads(f, argnum=0, modes=None, order=2):
    modes = ["fwd", "rev"] if modes is None else modes
    assert all(m in ["fwd", "rev"] for m in modes)

    def at(*args, **kwargs):
        fk = made(WITH_KEYWORDS, getattr(f, "__name__", "f"), _f=f, _kwargs=kwargs) if kwargs else f
        for i in (argnum if isinstance(argnum, (list, tuple)) else (argnum,)):
            _check(fk, args, i, modes, order)
    return at


def combo_check(fun, *args, **kwargs):
    _check_grads = lambda f: check_grads(f, *args, **kwargs)

    def _combo_check(*args, **kwargs):
        kwarg_key_vals = [[(k, x) for x in xs] for k, xs in kwargs.items()]
        for _args in product(*args):
            for _kwargs in product(*kwarg_key_vals):
                _check_grads(fun)(*_args, **dict(_kwargs))
    return _combo_check
