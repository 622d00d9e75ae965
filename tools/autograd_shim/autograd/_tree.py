"""Values as autograd's vector spaces see them: a float or complex leaf, or a list, tuple or
dict of values (plain Python, no yota_s2s)."""
import numpy


def is_leaf(x):
    return not isinstance(x, (list, tuple, dict))


def is_float_leaf(x):
    return is_leaf(x) and not isinstance(x, (bool, numpy.bool_)) and \
        numpy.issubdtype(numpy.asarray(x).dtype, numpy.inexact)


def tree_map(fn, *trees):
    first = trees[0]
    if isinstance(first, (list, tuple)):
        return type(first)(tree_map(fn, *parts) for parts in zip(*trees))
    if isinstance(first, dict):
        return {k: tree_map(fn, *[t[k] for t in trees]) for k in first}
    return fn(*trees)


def leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for part in x for leaf in leaves(part)]
    if isinstance(x, dict):
        return [leaf for k in x for leaf in leaves(x[k])]
    return [x]


def zeros_like(x):
    return tree_map(lambda a: numpy.zeros_like(a) if is_float_leaf(a) else None, x)


def restructure(g, arg):
    """yota_s2s's gradient of a structured argument, a ``{path: array}`` dict, as a value of
    the argument's structure (autograd's form); a leaf's gradient as it is."""
    if is_leaf(arg):
        return g
    return _build(g, arg, ())


def _build(g, arg, path):
    if isinstance(arg, (list, tuple)):
        return type(arg)([_build(g, a, path + (i,)) for i, a in enumerate(arg)])
    if isinstance(arg, dict):
        return {k: _build(g, v, path + (k,)) for k, v in arg.items()}
    if path in g and g[path] is not None:
        return g[path]
    return numpy.zeros_like(arg) if is_float_leaf(arg) else None


def inner(a, b):
    """autograd's inner product of a vector space: the real part of ``vdot``, summed over
    the leaves (in traced code too: the shim's VJP of a complex or structured result)."""
    if isinstance(a, (list, tuple)):
        total = 0.0
        for i in range(len(a)):
            total = total + inner(a[i], b[i])
        return total
    if isinstance(a, dict):
        total = 0.0
        for k in a:
            total = total + inner(a[k], b[k])
        return total
    return numpy.real(numpy.sum(numpy.conj(a) * b))
