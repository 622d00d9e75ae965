"""Per-example gradients of an MLP 784-512-10 (batch 256): ys.per_example_grad against the
batch gradient, a loop of ys.simplegrad over the rows, and the ghost norms' peak memory.

    python tools/vmap_bench.py                  # times (best of --repeat), ratios, peaks
    python tools/vmap_bench.py --batch 64 --hidden 128 --repeat 3

Reports, per call of the compiled modules (compiling is not timed):
  batch gradient        the gradient of the summed loss over the batch (ys.simplegrad)
  per-example           ys.per_example_grad: one gradient per example, the batch first
  loop of simplegrad    the gradient of one row at a time, for every row
  ghost norms           ys.per_example_grad(..., norms=True): each example's gradient norm
and checks that the per-example gradients equal the loop's to 1e-12; "(numpy, by hand)" makes
the same gradients in numpy as one would by hand (the batch's forward and backward, then each
layer's outer products written once), and the last line is numpy making the first layer's
per-example gradients alone (one broadcast product into a new array), which no per-example
method can avoid. Peak memory is Python's
tracemalloc peak during one call (numpy's arrays are traced). Where JAX is installed (never a
dependency), the same run times JAX's ``jit(vmap(grad(example_loss)))`` against its own
``jit(grad(batch_loss))`` in float64 on the CPU, checked against ours to 1e-10.
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import yota_s2s as ys


def example_loss(params, x, label):
    """Softmax cross-entropy of one example (``label`` an int), tanh hidden layer."""
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits)
    return m + np.log(np.sum(np.exp(logits - m))) - logits[label]


def batch_loss(params, X, labels):
    """The summed loss of the batch (its gradient is the sum of the per-example ones)."""
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits, axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.sum(np.exp(logits - m), axis=1))
    return np.sum(lse - logits[np.arange(X.shape[0]), labels])


def by_hand(params, X, labels):
    """The per-example gradients written by hand in numpy: the batch's forward and backward,
    then each layer's outer products, each written once into a new array (the least numpy
    work that makes them: what a per-example module can at best match)."""
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    g2 = e / np.sum(e, axis=1, keepdims=True)
    g2[np.arange(X.shape[0]), labels] -= 1.0
    g1 = (g2 @ params["W2"].T) * (1.0 - h * h)
    return {"W1": np.multiply(X[:, :, None], g1[:, None, :]), "b1": g1,
            "W2": np.multiply(h[:, :, None], g2[:, None, :]), "b2": g2}


def jax_ratio(params, X, labels, per_example, repeat: int) -> str:
    """JAX's per-example gradients / its batch gradient, in this run (or why not measured)."""
    try:
        import jax
    except ImportError:
        return "JAX is not installed here: jit(vmap(grad)) / jit(grad) is not measured."
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def one(p, x, label):
        h = jnp.tanh(x @ p["W1"] + p["b1"])
        logits = h @ p["W2"] + p["b2"]
        return jax.nn.logsumexp(logits) - logits[label]

    def summed(p, X, labels):
        return jnp.sum(jax.vmap(one, in_axes=(None, 0, 0))(p, X, labels))
    per = jax.jit(jax.vmap(jax.grad(one), in_axes=(None, 0, 0)))
    batch = jax.jit(jax.grad(summed))
    p, Xj, lj = ({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(X),
                 jnp.asarray(labels))
    got = per(p, Xj, lj)
    worst = max(float(np.max(np.abs(np.asarray(got[k]) - per_example[k]))) for k in params)
    t_per = best(lambda: jax.block_until_ready(per(p, Xj, lj)), repeat)
    t_batch = best(lambda: jax.block_until_ready(batch(p, Xj, lj)), repeat)
    return (f"  JAX {jax.__version__} (CPU, float64): jit(vmap(grad)) {t_per * 1e3:.2f} ms / "
            f"jit(grad) of the summed loss {t_batch * 1e3:.2f} ms = {t_per / t_batch:.2f}x "
            f"(max |diff| from ours {worst:.1e})")


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak(fn) -> int:
    fn()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--inputs", type=int, default=784)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    n, d, h, c = options.batch, options.inputs, options.hidden, options.classes
    params = {"W1": rng.standard_normal((d, h)) / np.sqrt(d), "b1": np.zeros(h),
              "W2": rng.standard_normal((h, c)) / np.sqrt(h), "b2": np.zeros(c)}
    X, labels = rng.standard_normal((n, d)), rng.integers(0, c, n)

    batch_grad = ys.simplegrad(batch_loss, params, X, labels)
    per_example = ys.per_example_grad(example_loss, params, X, labels)
    # (a label as a 0-d array: traced, where an np.int64 would be a static value)
    rows = [(X[i], np.asarray(labels[i])) for i in range(n)]
    row_grad = ys.simplegrad(example_loss, params, *rows[0])

    worst = 0.0
    summed = {k: 0.0 for k in params}
    for i in range(n):
        _, g, _, _ = row_grad(params, *rows[i])
        for k in params:
            worst = max(worst, float(np.max(np.abs(per_example[k][i] - g[(k,)]))))
            summed[k] = summed[k] + g[(k,)]
    _, batch_g, _, _ = batch_grad(params, X, labels)
    worst_sum = max(float(np.max(np.abs(summed[k] - batch_g[(k,)]))) for k in params)
    hand = by_hand(params, X, labels)
    worst_hand = max(float(np.max(np.abs(hand[k] - per_example[k]))) for k in params)
    del hand

    t_batch = best(lambda: batch_grad(params, X, labels), options.repeat)
    t_per = best(lambda: ys.per_example_grad(example_loss, params, X, labels), options.repeat)
    t_ghost = best(lambda: ys.per_example_grad(example_loss, params, X, labels, norms=True),
                   options.repeat)
    t_loop = best(lambda: [row_grad(params, *row) for row in rows],
                  max(1, options.repeat // 3))
    t_hand = best(lambda: by_hand(params, X, labels), options.repeat)
    G = rng.standard_normal((n, h))
    t_floor = best(lambda: np.multiply(X[:, :, None], G[:, None, :]), options.repeat)
    m_batch = peak(lambda: batch_grad(params, X, labels))
    m_ghost = peak(lambda: ys.per_example_grad(example_loss, params, X, labels, norms=True))
    m_per = peak(lambda: ys.per_example_grad(example_loss, params, X, labels))

    print(f"MLP {d}-{h}-{c}, batch {n}, float64; best of {options.repeat} calls")
    print(f"  per-example gradients vs a loop of simplegrad on rows: max |diff| {worst:.1e}; "
          f"their sum vs the batch gradient: {worst_sum:.1e}")
    print(f"  {'batch gradient':22s} {t_batch * 1e3:8.2f} ms   1.00x   "
          f"peak {m_batch / 2**20:7.1f} MiB")
    print(f"  {'per-example':22s} {t_per * 1e3:8.2f} ms  {t_per / t_batch:5.2f}x   "
          f"peak {m_per / 2**20:7.1f} MiB")
    print(f"  {'ghost norms':22s} {t_ghost * 1e3:8.2f} ms  {t_ghost / t_batch:5.2f}x   "
          f"peak {m_ghost / 2**20:7.1f} MiB")
    print(f"  {'(numpy, by hand)':22s} {t_hand * 1e3:8.2f} ms  {t_hand / t_batch:5.2f}x   "
          f"the same gradients written by hand (max |diff| {worst_hand:.1e}): the best numpy does")
    print(f"  {'loop of simplegrad':22s} {t_loop * 1e3:8.2f} ms  {t_loop / t_batch:5.2f}x")
    print(f"  {'(numpy: W1 per example)':22s} {t_floor * 1e3:8.2f} ms  {t_floor / t_batch:5.2f}x   "
          f"x[:, :, None] * g[:, None, :] alone, a new ({n}, {d}, {h}) array: the floor")
    print(jax_ratio(params, X, labels, per_example, options.repeat))


if __name__ == "__main__":
    main()
