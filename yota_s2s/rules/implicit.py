"""Implicit functions of a user's function: ``fixed_point`` (autograd's ``misc.fixed_points``)
and ``odeint`` (scipy's conventions), each a primitive whose function is an operand, with a
rule that never differentiates through the solver's iterations or steps.

- ``fixed_point(f, a, x0, distance, tol)`` iterates ``x = f(a)(x)`` from ``x0`` until
  ``distance(x, x_prev) <= tol``. At the solution ``x* = f(a)(x*)``, so (implicit function
  theorem) ``dx*/da = (I - df/dx)^-1 df/da``: the gradient of ``a`` is ``vjp_a(w)``, with ``w``
  the fixed point of the adjoint iteration ``w = dy + vjp_x(w)`` (``vjp_a``, ``vjp_x``: the
  VJP of ``(a, x) -> f(a)(x)`` at ``(a, x*)``). As autograd's, that adjoint is written with
  ``fixed_point`` and generated gradients (``solve_adjoint``), and its primitive's rule is
  the gradient of that definition, traced: second derivatives (and up) go through it.
- ``odeint(func, y0, t, args=())`` integrates ``dy/dt = func(y, t, *args)`` with
  ``scipy.integrate.odeint`` and returns the states at each ``t``. Its gradient is the adjoint
  method: backward from the last time, between each pair of times, integrate the augmented
  system ``(y, a, g_args)' = (func, -a^T df/dy, -a^T df/dargs)`` from the state and adjoint
  ``a`` there, adding the incoming gradient of each state; ``dy0`` is the last adjoint, the
  time gradients ``dy_i . func(y_i, t_i)`` (minus the adjoint's at ``t_0``). That adjoint too
  is written with ``odeint`` and generated gradients (``solve_odeint_adjoint``, autograd's
  ``grad_odeint``), and its primitive's rule is the gradient of that definition.

The VJPs of the user's function are generated gradients (``ys.gradient`` of ``applied_dot``,
``func_dot``: ``ys.source`` shows them), compiled once per function and argument signature.
The API layer makes them (``GRADIENTS``, through ``gradient_of``, which traced code inlines);
the generated code calls ``fixed_point_adjoint`` and ``odeint_adjoint`` by name, importing them
from here.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import InternalError
from ..marks import function_maker
from .registry import diffrule, nodiff, primitive


class _Gradients:
    """The maker of gradient functions, ``make(fn, argnum)`` (``ys.gradient``): set by the API
    layer, which this layer cannot import. What it makes is kept per ``(fn, argnum)`` (a few
    functions of this module): the adjoints call one per step of their iterations."""

    make: Callable | None = None
    made: dict = {}

    def __call__(self, fn: Callable, argnum: Any) -> Callable:
        if self.make is None:       # set by ``import yota_s2s``, which importing this runs
            raise InternalError("no maker of gradients: yota_s2s.solvers was not imported")
        key = (fn, argnum)
        if key not in self.made:
            self.made[key] = self.make(fn, argnum)
        return self.made[key]


GRADIENTS = _Gradients()


@function_maker
def gradient_of(fn: Callable, argnum: Any) -> Callable:
    """``ys.gradient(fn, argnum)``. Marked as a function maker: in traced code (a rule's body,
    ``solve_adjoint``) it is made when compiling and a call of what it makes is inlined, so
    that the gradient it computes can be differentiated again."""
    return GRADIENTS(fn, argnum)


# ----- fixed_point -------------------------------------------------------------------------
def fixed_point(f, a, x0, distance, tol):
    """The fixed point of ``x -> f(a)(x)`` reached from ``x0``: iterated until
    ``distance(x, x_prev) <= tol`` (autograd's ``fixed_point``)."""
    step = f(a)
    x, x_prev = step(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = step(x), x
    return x


def applied_dot(f, a, x, w):
    """``<w, f(a)(x)>``: its gradients in ``a`` and ``x`` are one step's vector-Jacobian
    products with ``w`` at ``(a, x)``."""
    return np.sum(f(a)(x) * w)


def adjoint_step(params):
    """The adjoint iteration's step ``w -> dx + vjp_x(w)`` at the fixed point ``x``
    (``params`` is ``(f, a, x, dx)``): a function of the kind ``fixed_point`` iterates."""
    f, a, x, dx = params
    vjp_x = gradient_of(applied_dot, 2)
    return lambda w: dx + vjp_x(f, a, x, w)


def solve_adjoint(f, a, x, dx, distance, tol):
    """The gradient of ``a`` through the fixed point ``x = f(a)(x)`` given ``dx``, the
    gradient of ``x``: ``vjp_a(w)`` where ``w`` is itself a fixed point, ``w = dx + vjp_x(w)``
    iterated to ``distance(w, w_prev) <= tol`` (autograd's ``fixed_point_vjp``). Written with
    ``fixed_point`` and generated gradients only, so that the frontend can trace it: the
    derivative of ``fixed_point_adjoint`` is this function's gradient (second order and up)."""
    w = fixed_point(adjoint_step, (f, a, x, dx), _like(x, dx), distance, tol)
    da = gradient_of(applied_dot, 1)(f, a, x, w)
    if isinstance(a, (tuple, list)):      # the float leaves' gradients, raveled in one vector
        flat = [np.ravel(_leaf_gradient((da,), (0, *path), v)) for path, v in float_leaves(a)]
        return np.concatenate(flat) if flat else np.zeros(0)
    return da


def fixed_point_adjoint(f, a, x, dx, distance, tol):
    """``solve_adjoint`` as a primitive: first-order gradients call it by name."""
    return solve_adjoint(f, a, x, dx, distance, tol)


def adjoint_dot(f, a, x, dx, distance, tol, c):
    """``<c, solve_adjoint(...)>``: its gradients are ``fixed_point_adjoint``'s VJPs."""
    return np.sum(solve_adjoint(f, a, x, dx, distance, tol) * c)


def _like(x, value):
    """Zeros like ``x`` (a float for a float)."""
    return 0.0 * value if np.ndim(x) == 0 and not isinstance(x, np.ndarray) else np.zeros_like(x)


# operands taken as given (``sequences``): a tuple or list ``a`` stays one, as autograd's
primitive(fixed_point, "f, a, x0, distance, tol", name="ys.fixed_point", sequences=("*",),
          real_only="its adjoint iterates real vector-Jacobian products")
primitive(fixed_point_adjoint, "f, a, x, dx, distance, tol", name="ys.fixed_point_adjoint",
          sequences=("*",))


@diffrule(fixed_point, "a", shows="fixed_point_adjoint(f, a, y, dy, distance, tol)")
def fixed_point_grad_a(f, a, x0, distance, tol, y, dy):
    """The adjoint fixed point's gradient; for a tuple or list ``a`` (autograd's examples pass
    ``(a, b)``), one per item, cut from the adjoint's vector."""
    if isinstance(a, (tuple, list)):
        return unravel_like(fixed_point_adjoint(f, a, y, dy, distance, tol), a)
    return fixed_point_adjoint(f, a, y, dy, distance, tol)


# the fixed point reached does not move with the start or the tolerance (where it converged)
nodiff(fixed_point, "x0")
nodiff(fixed_point, "tol")


# the adjoint's own derivative: the gradient of its definition, traced (fixed_point's rule again)
@diffrule(fixed_point_adjoint, "a", shows="gradient(adjoint_dot)(f, a, x, dx, distance, tol, dy)[0]")
def fixed_point_adjoint_grad_a(f, a, x, dx, distance, tol, y, dy):
    """For a tuple or list ``a``, one gradient per item (``{path: gradient}`` shaped like ``a``)."""
    da = gradient_of(adjoint_dot, (1, 2, 3))(f, a, x, dx, distance, tol, dy)[0]
    return shaped_like(da, a) if isinstance(a, (tuple, list)) else da


@diffrule(fixed_point_adjoint, "x", shows="gradient(adjoint_dot)(f, a, x, dx, distance, tol, dy)[1]")
def fixed_point_adjoint_grad_x(f, a, x, dx, distance, tol, y, dy):
    return gradient_of(adjoint_dot, (1, 2, 3))(f, a, x, dx, distance, tol, dy)[1]


@diffrule(fixed_point_adjoint, "dx", shows="gradient(adjoint_dot)(f, a, x, dx, distance, tol, dy)[2]")
def fixed_point_adjoint_grad_dx(f, a, x, dx, distance, tol, y, dy):
    return gradient_of(adjoint_dot, (1, 2, 3))(f, a, x, dx, distance, tol, dy)[2]


nodiff(fixed_point_adjoint, "tol")


# ----- odeint ------------------------------------------------------------------------------
def odeint(func, y0, t, args=(), rtol=None, atol=None, mxstep=0):
    """``scipy.integrate.odeint(func, y0, t, args)``: the states ``y(t_i)`` of
    ``dy/dt = func(y, t, *args)`` from ``y(t_0) = y0``, one row per time (``y0`` 1-D)."""
    from scipy.integrate import odeint as scipy_odeint
    return scipy_odeint(func, y0, t, args=tuple(args), rtol=rtol, atol=atol, mxstep=mxstep)


def func_dot(func, y, t, args, c):
    """``<c, func(y, t, *args)>``: its gradients in ``y`` and ``args`` are ``func``'s
    vector-Jacobian products with ``c``."""
    return np.sum(func(y, t, *args) * c)


def augmented_dynamics(state, t, func, d, args):
    """The adjoint method's system, ``state = (y, a, g)`` (``d`` the size of ``y``):
    ``(func(y, t), -a^T dfunc/dy, -a^T dfunc/dargs)``, the last raveled over the float leaves
    of ``args``; scipy calls it with ``t`` a Python float, as it calls ``func``."""
    y, a = state[:d], state[d:2 * d]
    leaves = float_leaves(args)
    if not leaves:
        return np.concatenate([func(y, t, *args), gradient_of(func_dot, 1)(func, y, t, args, -a)])
    g_y, g_args = gradient_of(func_dot, (1, 3))(func, y, t, args, -a)
    flat = [np.ravel(_leaf_gradient((g_args,), (0, *path), v)) for path, v in leaves]
    return np.concatenate([func(y, t, *args), g_y, *flat])


def solve_odeint_adjoint(func, states, t, dstates, args, rtol=None, atol=None, mxstep=0):
    """The adjoint method for ``states = odeint(func, y0, t, args)`` and the incoming gradient
    ``dstates`` of its rows: ``(dy0, dt, dargs)``, ``dargs`` the gradients of the float leaves
    of ``args`` raveled into one vector (``unravel_like`` gives them their shapes).

    Backward from the last time, each interval ``[t_i, t_(i-1)]`` integrates the augmented
    state ``(y, a, g)`` (``augmented_dynamics``) with ``odeint`` itself, from ``y_i``, the
    adjoint ``a`` (which gains ``dstates_i`` at each time) and the gradient ``g`` so far. At
    the end ``a`` is ``dy0`` and ``g`` the gradient of ``args``. A time's gradient is
    ``dstates_i . func(y_i, t_i)``; ``t_0``'s is ``-a . func(y_0, t_0)`` with ``a`` the adjoint
    arriving there. Written with ``odeint`` and generated gradients only (autograd's
    ``grad_odeint``), so that the frontend can trace it: the derivative of ``odeint_adjoint``
    is this function's gradient.
    """
    n, d = np.shape(states)
    a = dstates[n - 1]
    g = np.zeros(sum(int(np.size(v)) for _, v in float_leaves(args)))
    dt = []
    for i in range(n - 1, 0, -1):
        dt.append(np.dot(dstates[i], np.ravel(func(states[i], t[i], *args))))
        state = np.concatenate([states[i], a, g])
        state = odeint(augmented_dynamics, state, np.stack([t[i], t[i - 1]]), (func, d, args),
                       rtol, atol, mxstep)[1]
        a, g = state[d:2 * d], state[2 * d:]
        if i == 1:
            dt.append(-np.dot(a, np.ravel(func(states[0], t[0], *args))))
        a = a + dstates[i - 1]
    if n == 1:
        dt.append(0.0 * t[0])
    return a, np.stack(dt[::-1]), g


def odeint_adjoint(func, states, t, dstates, args, rtol=None, atol=None, mxstep=0):
    """``solve_odeint_adjoint`` as a primitive: first-order gradients call it by name."""
    a, dt, g = solve_odeint_adjoint(func, states, t, dstates, args, rtol, atol, mxstep)
    return np.asarray(a), np.asarray(dt), np.asarray(g)


def odeint_adjoint_dot(func, states, t, dstates, args, rtol, atol, mxstep, c0, c1, c2):
    """``<(c0, c1, c2), solve_odeint_adjoint(...)>``: its gradients are ``odeint_adjoint``'s
    VJPs."""
    a, dt, g = solve_odeint_adjoint(func, states, t, dstates, args, rtol, atol, mxstep)
    return np.sum(a * c0) + np.sum(dt * c1) + np.sum(g * c2)


def float_leaves(tree, path=()):
    """``(path, value)`` of the float leaves (arrays, floats) of a tuple or list of ``args``."""
    if isinstance(tree, (tuple, list)):
        out = []
        for i, item in enumerate(tree):
            out += float_leaves(item, path + (i,))
        return out
    return [(path, tree)] if _float_leaf(tree) else []


def _float_leaf(value):
    """A float or complex number or array: a leaf with a gradient (not an int, a string, a
    function: ``fixed_point``'s adjoint iterates over ``(f, a, x, dx)``)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc"
    return isinstance(value, (float, complex, np.floating, np.complexfloating))


def _leaf_gradient(grads, path, value):
    """The gradient of the leaf at ``path`` (``(argument, *path in it)``) from a generated
    VJP's gradients (an array or float per argument, a ``{path: gradient}`` dict for a
    struct); zeros where there is none."""
    g = grads[path[0]]
    if isinstance(g, dict):
        g = g.get(path[1:])
    return np.zeros(np.shape(value)) if g is None else g


def shaped_like(grads, tree, path=()):
    """A struct argument's gradients (``{path: gradient}``, as a generated gradient gives
    them) shaped like it: a tuple per tuple or list, zeros for a float leaf with none, None
    for a leaf that is not a float."""
    if isinstance(tree, (tuple, list)):
        return tuple(shaped_like(grads, item, path + (i,)) for i, item in enumerate(tree))
    if not _float_leaf(tree):
        return None
    g = grads.get(path)
    return np.zeros(np.shape(tree)) if g is None else g


def unravel_like(flat, args):
    """``flat`` (``odeint_adjoint``'s gradient of ``args``) as gradients shaped like
    ``args``: a tuple per tuple or list, None for a leaf that is not a float."""
    out, start = _unravel(flat, args, 0)
    return out


def _unravel(flat, tree, start):
    if isinstance(tree, (tuple, list)):
        items = []
        for item in tree:
            g, start = _unravel(flat, item, start)
            items.append(g)
        return tuple(items), start
    if not _float_leaf(tree):
        return None, start
    size = np.size(tree)
    return np.reshape(flat[start:start + size], np.shape(tree)), start + size


# args is a tuple of any structs (autograd passes (params,), a list of (W, b)): taken as given
# the tolerances are operands, not options: a gradient of the adjoint (solve_odeint_adjoint,
# traced) takes them as arguments
primitive(odeint, "func, y0, t, args=(), rtol=None, atol=None, mxstep=0", name="ys.odeint",
          operands="func, y0, t, args, rtol, atol", sequences=("*",))
primitive(odeint_adjoint, "func, states, t, dstates, args=(), rtol=None, atol=None, mxstep=0",
          name="ys.odeint_adjoint", operands="func, states, t, dstates, args, rtol, atol",
          nout=3, sequences=("*",))
for _name in ("rtol", "atol"):      # the solution does not move with them (where it converged)
    nodiff(odeint, _name)
    nodiff(odeint_adjoint, _name)
diffrule(odeint, "y0", "odeint_adjoint(func, y, t, dy, args, rtol, atol, mxstep)[0]")
diffrule(odeint, "t", "odeint_adjoint(func, y, t, dy, args, rtol, atol, mxstep)[1]")
diffrule(odeint, "args", "unravel_like(odeint_adjoint(func, y, t, dy, args, rtol, atol, "
                         "mxstep)[2], args)")


# the adjoint's own derivative: the gradient of its definition, traced (odeint's rules again)
def _adjoint_gradients(func, states, t, dstates, args, y, dy, rtol, atol, mxstep):
    """The gradients of ``solve_odeint_adjoint``'s ``states, t, dstates`` (and ``args``, shaped
    like it) with the cotangents ``dy`` of its three results (zeros for one with none)."""
    c = tuple(np.zeros(np.shape(out)) if d is None else d for out, d in zip(y, dy))
    if not float_leaves(args):
        return (*gradient_of(odeint_adjoint_dot, (1, 2, 3))(
            func, states, t, dstates, args, rtol, atol, mxstep, *c), None)
    g_states, g_t, g_dstates, g_args = gradient_of(odeint_adjoint_dot, (1, 2, 3, 4))(
        func, states, t, dstates, args, rtol, atol, mxstep, *c)
    return g_states, g_t, g_dstates, shaped_like(g_args, args)


@diffrule(odeint_adjoint, "states", shows="gradient(odeint_adjoint_dot)(...)[0]")
def odeint_adjoint_grad_states(func, states, t, dstates, args, y, dy, rtol=None, atol=None,
                               mxstep=0):
    return _adjoint_gradients(func, states, t, dstates, args, y, dy, rtol, atol, mxstep)[0]


@diffrule(odeint_adjoint, "t", shows="gradient(odeint_adjoint_dot)(...)[1]")
def odeint_adjoint_grad_t(func, states, t, dstates, args, y, dy, rtol=None, atol=None, mxstep=0):
    return _adjoint_gradients(func, states, t, dstates, args, y, dy, rtol, atol, mxstep)[1]


@diffrule(odeint_adjoint, "dstates", shows="gradient(odeint_adjoint_dot)(...)[2]")
def odeint_adjoint_grad_dstates(func, states, t, dstates, args, y, dy, rtol=None, atol=None,
                                mxstep=0):
    return _adjoint_gradients(func, states, t, dstates, args, y, dy, rtol, atol, mxstep)[2]


@diffrule(odeint_adjoint, "args", shows="gradient(odeint_adjoint_dot)(...)[3]")
def odeint_adjoint_grad_args(func, states, t, dstates, args, y, dy, rtol=None, atol=None,
                             mxstep=0):
    return _adjoint_gradients(func, states, t, dstates, args, y, dy, rtol, atol, mxstep)[3]
