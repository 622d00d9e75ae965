"""yota_s2s: source-to-source reverse-mode automatic differentiation for Python and NumPy.

    import yota_s2s as ys
    dloss = ys.simplegrad(loss, W, b, x)     # a readable generated module, compiled once
    val, dW, db, dx = dloss(W, b, x)
    val, g = ys.grad(loss, model, X)                   # cached per signature; g[0] by field path
    dloss_dW = ys.gradient(loss)                       # autograd's grad(f): dloss_dW(W, b, x)
    vf = ys.vjp(f, x); y, dx = vf(x, cotangent)        # non-scalar results
    hf = ys.hvp(loss, W, b, x); Hv = hf(W, b, x, v)    # Hessian-vector products (in W)
    value, tape = ys.trace(loss, W, b, x); tape.play(W, b, x)   # the tracer on its own
    floss = ys.compile(loss, W, b, x)                  # a forward-only generated module
    y, dot_y = ys.jvp(f, (x,), (t,))                   # forward mode: J @ t
    y, f_jvp = ys.linearize(f, x); dot_y = f_jvp(t)    # many J @ t at one x, forward run once
    ys.update(model, g[0], lambda x, gx: x - 0.01 * gx)
    x, unflatten = ys.flatten(params)                  # a struct as one vector, and back
    vf = ys.vmap(f, in_axes=(None, 0)); vf(W, X)        # f of each example, batched
    ys.per_example_grad(loss, params, X, Y)            # one gradient per example (norms=True)
    ys.diffrule(logistic, "x", "y * (1 - y) * dy")     # a custom derivative
    print(ys.rules())                                  # every primitive and its rules
"""
from .api import (GradResult, RecompileWarning, cache_info, clear_cache, elementwise_grad, example,
                  grad, gradient, simplegrad, source, trace, value_and_grad)
from .api import compile_forward as compile     # noqa: A004 (ys.compile, as jax.jit)
from .batched import per_example_grad, vmap
from .cuda_graph import cuda_graph
from .errors import (ArgumentMismatch, GuardError, InternalError, NoRuleError, RuleError,
                     StaticValueError, UnsupportedSyntax, UpdateError, UsageError, YotaError)
from .flat import flatten
from .gradcheck import gradcheck
from .higher import hessian, hessp, hvp, jacobian
from .memory_report import MemoryReport, memory_report
from .products import jvp, jvpfunction, linearize, vjp
from .rules import RULES, diffrule, jvprule, nodiff, primitive, stop_gradient
from . import signal
from .solvers import fixed_point, odeint
from .struct_update import update
from .version import __version__

__all__ = ["simplegrad", "grad", "gradient", "value_and_grad", "vjp", "jvp", "jvpfunction",
           "linearize", "jacobian", "hvp", "flatten", "fixed_point", "odeint", "signal", "hessp",
           "hessian", "elementwise_grad", "compile", "vmap", "per_example_grad", "GradResult", "update",
           "clear_cache", "cache_info", "trace", "cuda_graph",
           "source", "example", "gradcheck", "memory_report", "MemoryReport", "diffrule", "jvprule",
           "nodiff", "primitive", "stop_gradient", "rules", "RULES", "YotaError",
           "UnsupportedSyntax", "NoRuleError", "StaticValueError", "RuleError", "GuardError",
           "ArgumentMismatch", "InternalError", "UpdateError", "UsageError", "RecompileWarning", "__version__"]
