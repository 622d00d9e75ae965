"""A small variational autoencoder whose objective draws its own noise, as in autograd's VAE
example: ``eps = rs.randn(...)`` inside the function.

The generated gradient keeps the draw as a call (``eps = vae.rs.randn(20, 2)``) in its forward
section, drawing from the same ``RandomState`` as the function, read from this module when the
code runs; the backward section reuses that ``eps``. Each call of the gradient draws fresh
numbers, as each call of ``elbo_loss`` does; seed ``rs`` before a call to repeat one. The
gradient reaches the encoder through the reparameterized sample ``mean + std * eps``.

    python examples/vae.py
"""
import numpy as np

import yota_s2s as ys

rs = np.random.RandomState(0)           # the generator the objective draws from
N, D, H, Z = 20, 8, 6, 2
DATA = (np.random.RandomState(1).rand(N, D) > 0.5).astype(float)    # binary images, a global


def init_params(seed=0):
    r = np.random.RandomState(seed)
    shapes = {"W1": (D, H), "b1": (H,), "Wm": (H, Z), "Ws": (H, Z),
              "V1": (Z, H), "c1": (H,), "V2": (H, D)}
    return {k: 0.3 * r.randn(*s) for k, s in shapes.items()}


def encode(p, x):
    h = np.tanh(x @ p["W1"] + p["b1"])
    return h @ p["Wm"], h @ p["Ws"]           # mean and log standard deviation of q(z|x)


def decode(p, z):
    return np.tanh(z @ p["V1"] + p["c1"]) @ p["V2"]     # Bernoulli logits


def elbo_loss(p):
    """The negative evidence lower bound per image, from one sample of z per image."""
    mean, log_std = encode(p, DATA)
    eps = rs.randn(*mean.shape)
    z = mean + np.exp(log_std) * eps
    logits = decode(p, z)
    log_lik = np.sum(DATA * logits - np.logaddexp(0.0, logits))
    kl = 0.5 * np.sum(np.exp(2.0 * log_std) + mean ** 2 - 1.0 - 2.0 * log_std)
    return -(log_lik - kl) / N


def main(iterations=100, rate=0.1):
    p = init_params()
    dloss = ys.simplegrad(elbo_loss, p)
    first = np.mean([elbo_loss(p) for _ in range(20)])
    for _ in range(iterations):
        value, dp = dloss(p)
        ys.update(p, dp, lambda x, g: x - rate * g)
    last = np.mean([elbo_loss(p) for _ in range(20)])
    print(f"loss {first:.4f} -> {last:.4f} after {iterations} steps")
    return first, last


if __name__ == "__main__":
    main()
