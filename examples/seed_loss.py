"""The seed example: compile the gradient of a small loss, check it, and show the module.

    python examples/seed_loss.py
"""
import numpy as np

import yota_s2s as ys


def loss(W, b, x):
    return np.sum(W @ x + b[:, None])


def main():
    rng = np.random.default_rng(0)
    W, b, x = rng.random((128, 784)), rng.random(128), rng.random((784, 100))

    dloss = ys.simplegrad(loss, W, b, x)
    val, dW, db, dx = dloss(W, b, x)

    # the handwritten gradient: d/dW sum(W @ x + b) = ones @ x.T, and so on
    ones = np.ones((128, 100))
    assert np.allclose(val, loss(W, b, x))
    assert np.allclose(dW, ones @ x.T) and np.allclose(db, 100.0) and np.allclose(dx, W.T @ ones)
    print(f"loss = {val:.6g}; dW {dW.shape}, db {db.shape}, dx {dx.shape} match the handwritten gradient")

    print("\n--- the generated module", dloss.__module__, "---\n")
    print(ys.source(dloss))

    val, tape = ys.trace(loss, W, b, x)
    print("--- the tape ---\n")
    print(tape)


if __name__ == "__main__":
    main()
