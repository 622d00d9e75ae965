"""The VJP of a function as a function of its arguments and the cotangent, made before it
is traced, so that differentiating it inlines a generated gradient."""
import numpy

import yota_s2s as ys

from ._made import PAIRED, made
from ._tree import inner, is_float_leaf, restructure


def vjp_function(f, args, i):
    """``(*args, v) -> the VJP of f at args with v in argument i``, made before it is traced
    (so that the differentiation of it inlines a generated gradient)."""
    y = f(*args)
    if is_float_leaf(y) and not numpy.iscomplexobj(y):
        vf = ys.vjp(f, *args, wrt=i)
        arg = args[i]

        def vjp_f(*a):
            return restructure(vf(*a)[1 + i], arg)
        return vjp_f, y
    paired = made(PAIRED, "paired", _f=f, _inner=inner)
    return ys.gradient(paired, i), y


def cotangent_like(y, v):
    """``v`` as ``ys.vjp``'s function takes a cotangent for the result ``y``: a 0-d array for
    a numpy scalar, as ``y`` is one."""
    if isinstance(y, numpy.generic):
        return numpy.asarray(v, dtype=y.dtype)
    return v
