"""autograd's ``examples/ode_net.py``: a neural ODE fitted to a trajectory, with gradients
through ``scipy.integrate.odeint`` by the adjoint method (``ys.odeint``).

    .venv/bin/python examples/ode_net.py

The port changes the imports (``autograd.numpy`` -> ``numpy``, autograd's ``grad`` ->
``ys.gradient``, ``autograd.scipy.integrate.odeint`` -> ``ys.odeint``, ``autograd.builtins``'
``tuple`` -> Python's) and leaves out the plots. autograd's ``adam`` flattens the parameters
(``autograd.misc.optimizers``); it is written below with ``ys.flatten``, since autograd is not
a dependency. The gradient module calls ``odeint(nn_predict, ...)`` forward and
``odeint_adjoint(nn_predict, ...)`` backward, which integrates the adjoint system with the
generated VJP of ``nn_predict`` (``ys.source(ys.vjp(nn_predict, y, t, params))`` shows it).
"""
import itertools

import numpy as np
import numpy.random as npr

import yota_s2s as ys
from yota_s2s import odeint

grad = ys.gradient

N = 30  # Dataset size
D = 2  # Data dimension
max_T = 1.5


# Two-dimensional damped oscillator
def func(y, t0, A):
    return np.dot(y**3, A)


def nn_predict(inputs, t, params):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.maximum(0, outputs)
    return outputs


def init_nn_params(scale, layer_sizes, rs=None):
    """Build a list of (weights, biases) tuples, one for each layer."""
    rs = rs if rs is not None else npr.RandomState(0)
    return [
        (
            rs.randn(insize, outsize) * scale,  # weight matrix
            rs.randn(outsize) * scale,
        )  # bias vector
        for insize, outsize in itertools.pairwise(layer_sizes)
    ]


# Define neural ODE model.
def ode_pred(params, y0, t):
    return odeint(nn_predict, y0, t, tuple((params,)), rtol=0.01)


def L1_loss(pred, targets):
    return np.mean(np.abs(pred - targets))


def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """autograd's ``adam`` on structured parameters: flattened with ``ys.flatten``, the
    gradient by field path laid out the same way (``unflatten.flat``)."""
    flat, unflatten = ys.flatten(x)
    m = np.zeros(len(flat))
    v = np.zeros(len(flat))
    for i in range(num_iters):
        params = unflatten(flat)
        g_struct = grad(params, i)
        g = unflatten.flat(g_struct)
        if callback:
            callback(params, i, g_struct)
        m = (1 - b1) * g + b1 * m  # First  moment estimate.
        v = (1 - b2) * (g**2) + b2 * v  # Second moment estimate.
        mhat = m / (1 - b1 ** (i + 1))  # Bias correction.
        vhat = v / (1 - b2 ** (i + 1))
        flat = flat - step_size * mhat / (np.sqrt(vhat) + eps)
    return unflatten(flat)


def main(num_iters=1000, hidden=150, every=10):
    # Generate data from true dynamics.
    true_y0 = np.array([2.0, 0.0]).T
    t = np.linspace(0.0, max_T, N)
    true_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
    true_y = odeint(func, true_y0, t, args=(true_A,))

    def train_loss(params, iter):
        pred = ode_pred(params, true_y0, t)
        return L1_loss(pred, true_y)

    losses = []

    def callback(params, iter, g):
        pred = ode_pred(params, true_y0, t)
        losses.append(L1_loss(pred, true_y))
        if iter % every == 0:
            print(f"Iteration {iter:d} train loss {losses[-1]:.6f}")

    # Train neural net dynamics to match data.
    init_params = init_nn_params(0.1, layer_sizes=[D, hidden, D])
    optimized_params = adam(grad(train_loss), init_params, num_iters=num_iters, callback=callback)
    return losses, optimized_params


if __name__ == "__main__":
    main()
