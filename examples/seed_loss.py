"""The seed example: compile the gradient of a small loss, check it, and show the module.

    python examples/seed_loss.py              # the readable (plain) form of the module
    python examples/seed_loss.py --buffered   # the fast form that ys.simplegrad runs
"""
import sys

import numpy as np

import yota_s2s as ys


def loss(W, b, x):
    return np.sum(W @ x + b[:, None])


def main(buffered=False):
    rng = np.random.default_rng(0)
    W, b, x = rng.random((128, 784)), rng.random(128), rng.random((784, 100))

    dloss = ys.simplegrad(loss, W, b, x)        # the fast form: work arrays kept between calls
    val, dW, db, dx = dloss(W, b, x)

    # the handwritten gradient: d/dW sum(W @ x + b) = ones @ x.T, and so on
    ones = np.ones((128, 100))
    assert np.allclose(val, loss(W, b, x))
    assert np.allclose(dW, ones @ x.T) and np.allclose(db, 100.0) and np.allclose(dx, W.T @ ones)
    print(f"loss = {val:.6g}; dW {dW.shape}, db {db.shape}, dx {dx.shape} match the handwritten gradient")

    if buffered:
        print("\n--- the generated module that dloss runs (the buffered form) ---\n")
        print(ys.source(dloss))
    else:
        # the same gradient in the plain form: one statement per operation, to read and review
        plain = ys.simplegrad(loss, W, b, x, buffers=False)
        print("\n--- the generated module, plain form: ys.simplegrad(loss, W, b, x, buffers=False)"
              " ---\n")
        print(ys.source(plain))
        print("(dloss runs the buffered form of this module, which reuses its work arrays "
              "between\n calls: print(ys.source(dloss)), or python examples/seed_loss.py "
              "--buffered)\n")

    val, tape = ys.trace(loss, W, b, x)
    print("--- the tape ---\n")
    print(tape)


if __name__ == "__main__":
    main(buffered="--buffered" in sys.argv[1:])
