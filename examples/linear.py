"""The seed example: gradients of a loss with respect to a model object, and training it.

    python examples/linear.py

``ys.grad`` compiles on the first call and finds the compiled module in its cache afterwards;
``g[0]`` holds the gradients of the model's fields by path, and ``ys.update`` applies the step
to the model in place.
"""
import numpy as np

import yota_s2s as ys


class Linear:
    def __init__(self, W, b):
        self.W, self.b = W, b


def forward(m, X):
    return m.W @ X


def loss(m, X):
    return np.sum(forward(m, X))


def main():
    np.random.seed(0)
    m = Linear(np.random.rand(3, 4), np.random.rand(3))
    X = np.random.rand(4, 5)
    val, g = ys.grad(loss, m, X)
    print("g[0] =", {path: grad.shape for path, grad in g[0].items()}, " (gradients by path)")
    print("g[1] =", g[1].shape, "  (the gradient with respect to X)")
    W = m.W
    for i in range(100):
        val, g = ys.grad(loss, m, X)
        ys.update(m, g[0], lambda x, gx: x - 0.01 * gx)
        if i % 10 == 0 or i == 99:
            print(f"step {i:3d}  loss {val:9.4f}")
    assert m.W is W, "update works in place: the model keeps its arrays"
    print("cache:", ys.cache_info())
    print("\n--- the generated module ---\n")
    print(g.source)


if __name__ == "__main__":
    main()
