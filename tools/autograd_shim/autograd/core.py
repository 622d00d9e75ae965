from . import make_jvp as _make_jvp
from . import make_vjp as _make_vjp


def make_vjp(fun, x):
    return _make_vjp(fun)(x)


def make_jvp(fun, x):
    return _make_jvp(fun)(x)


from ._internal import internals

internals(globals(), "vspace", "primitive_vjps", "primitive_jvps", "defvjp", "defjvp", "VSpace",
          "SparseObject", "primitive_with_deprecation_warnings")
