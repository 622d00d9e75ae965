# a tanh RNN summed over its steps (docs/how-it-works.md: loop regions)
import numpy as np


def rnn(W, U, b, h0, xs):
    h = h0
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        loss += np.sum(h)
    return loss


# -- loops that become regions, and loops that stay unrolled (tests/test_loops.py) --

def rnn_rows(W, U, b, h0, xs):
    h = h0
    total = 0.0
    for x in xs:
        h = np.tanh(W @ h + U @ x + b)
        total = total + np.sum(h ** 2)
    return total * 0.5


def rnn_args(T=12, H=5, D=3, seed=0):
    r = np.random.default_rng(seed)
    return (r.normal(size=(H, H)) * 0.3, r.normal(size=(H, D)) * 0.3, r.normal(size=H) * 0.1,
            r.normal(size=H), r.normal(size=(T, D)))


def shifted(x, w):
    s = 0.0
    for i in range(1, x.shape[0]):
        s = s + w * x[i] * x[i - 1] ** 2
    return s


def cyclic(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[(i + 1) % n] ** 2
    return s


def branchy(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] ** 2
        else:
            s = s - x[i]
    return s


def growing(x):
    v = x[:1]
    for i in range(9):
        v = np.concatenate([v, x[i:i + 1] * v[-1:]])
    return np.sum(v)


def breaking(x):
    s = 0.0
    for i in range(x.shape[0]):
        if i == 5:
            break
        s = s + np.sin(x[i])
    return s


def returning(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * s + 1.0
        if i == 6:
            return s
    return s


def short(x):
    s = 0.0
    for i in range(4):
        s = s + np.exp(x[i])
    return s


def helper_step(h, W, x):
    return np.tanh(W @ h + x)


def with_helper(W, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = helper_step(h, W, xs[t])
    return np.sum(h * h)


def inner_region(W, h, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return h


def calls_region(W, h0, xs):
    return np.sum(inner_region(W, h0, xs) ** 2)


def zipped(W, xs, ys):
    h = np.zeros(W.shape[0])
    s = 0.0
    for x, y in zip(xs, ys):
        h = np.tanh(W @ h + x)
        s = s + np.sum((h - y) ** 2)
    return s


def enumerated(w, xs):
    s = 0.0
    for i, x in enumerate(xs):
        s = s + np.sum(w * x) * xs[i - 1, 0]
    return s


def written_rows(W, xs):
    h = np.zeros(W.shape[0])
    out = np.zeros((xs.shape[0], W.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        out[t] = h
    return np.sum(out ** 2)


def appended(W, xs):
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def nested(W, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        for k in range(8):
            h = np.tanh(W @ h + xs[t] * k)
    return np.sum(h)


def counted(x):
    s = 0.0
    i = 1
    while i < 10:
        s = s + np.sin(x[i]) * x[i - 1]
        i += 1
    return s * i


def masked(xs):
    s = 0.0
    for t in range(xs.shape[0]):
        s = s + np.sum(xs[t][xs[t] > 0] ** 2)      # a sum of a selection: a select (selections.py)
    return s


def index_scaled(x):
    """A float made from the step index (t + 1.0): a Python float in the step and in its
    adjoint (fuzzer seed 77020: saved in a float64 stack, it widened a float32 gradient)."""
    h = x * 0.5
    out = np.zeros((10,) + x.shape, dtype=x.dtype)
    for t in range(10):
        h = np.cos(h * 0.835 - 0.381)
        out[t] = h * (t + 1.0)
    return np.sum(np.tanh(out) * out)


def softmax_steps(W, xs, labels):
    """A log-softmax in each step of a loop region: its max's gradient cancels (max_shift)."""
    total = 0.0
    for t in range(10):
        logits = xs[t] @ W
        shifted = logits - np.max(logits, axis=1, keepdims=True)
        logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
        total = total - np.sum(labels[t] * logp)
    return total


def named_out(x):
    """A loop body's value named ``out``, the buffered form's keyword: the body renames it."""
    s = 0.0
    for i in range(10):
        out = np.sin(x[i])
        s = s + out * out
    return s


def weak_then_array(x):
    """A region that carries a Python float, then one that starts from it (its start is the
    first region's result, known by kind only: a Python float)."""
    s = 0.5
    for i in range(10):
        s = s * 0.9 + 0.1
    h = x * 1.0
    for i in range(10):
        h = np.sin(h) * s + x
        s = s * 0.95
    return np.sum(h ** 2) * s


def rows_read_after(W, xs):
    """Rows of an appended list read one by one after the loop (each row's statement goes on
    the tape when it is read; the others cost nothing)."""
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    return np.sum(hs[-1] ** 2) + np.sum(hs[3] * hs[5]) + len(hs) * 0.1


def rows_written_after(W, xs):
    """A row written in place after the loop, then the list stacked: the write reaches the
    stack (the rows are views of it), as numpy's list of arrays would give."""
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    first = hs[4]
    hs[2][1] = 0.5
    hs[6] *= 2.0
    return np.sum(np.stack(hs) ** 2) + np.sum(first * hs[2])




def stacks_and_rows_written(W, xs):
    """np.stack copies: a write into one stack reaches neither the rows nor another stack of
    them, a row written after stacking leaves the stacks, a stack made after sees it."""
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    first = np.stack(hs)
    second = np.stack(hs)
    first[2] += 1.0
    hs[3] *= 2.0
    hs[1][1] = 2.0
    third = np.array(hs)
    return np.sum(first * hs[2]) + np.sum(second ** 2 * third) + np.sum(hs[3] ** 3)


# -- a list's rows and the carried values share memory as numpy's do -------------------------

def last_row_is_state(W, xs):
    """hs.append(h): after the loop h is hs[-1]; h += 1 changes both, not a stack made before
    (a region: h is a view of the last row)."""
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    before = np.stack(hs)
    last = hs[-1]
    h += 1.0
    return np.sum(last * h) + np.sum(before) + np.sum(np.stack(hs))


def appended_then_updated(W, xs):
    """The list holds the one array updated in place at every step (unrolled)."""
    h = np.tanh(xs[0])
    hs = []
    for t in range(xs.shape[0]):
        hs.append(h)
        h += np.sin(W @ xs[t])
    return np.sum(np.stack(hs) ** 2)


def appended_before_step(W, xs):
    """hs[0] is the loop's start, which another name holds (unrolled)."""
    h = np.tanh(xs[0])
    first = h
    hs = []
    for t in range(xs.shape[0]):
        hs.append(h)
        h = np.tanh(W @ h + xs[t])
    hs[0] *= 2.0
    return np.sum(first) + np.sum(np.stack(hs) ** 2) + np.sum(h)


def appended_view(W, xs):
    """hs[-1] is a view of h after the loop (unrolled)."""
    h = np.tanh(xs[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h[1:])
    h += 1.0
    return np.sum(np.stack(hs) ** 2) + np.sum(hs[-1])


def zero_d_total(W, xs):
    """A 0-d array accumulator stays an array: ``total *= 2`` reaches ``before``."""
    total = np.zeros(())
    for t in range(xs.shape[0]):
        total += np.sum(np.sin(W @ xs[t]))
    before = total
    total *= 2.0
    return before + total


def rnn_batched(Wx, Wh, b, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + np.sum(h ** 2)
    return total * 0.5


def rnn_input_second(Wx, Wh, b, xs, h0):
    """rnn_batched with the step's input product written second."""
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ Wh + xs[t] @ Wx + b)
        total = total + np.sum(h ** 2)
    return total * 0.5


def rnn_dot(Wx, Wh, b, xs, h0):
    """rnn_batched with np.dot for the products."""
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(xs[t], Wx) + np.dot(h, Wh) + b)
        total = total + np.sum(h ** 2)
    return total * 0.5


def rnn_leaving_two(Wx, Wh, b, xs, h0):
    """rnn_batched over all but the last two rows of ``xs``."""
    h = h0
    total = 0.0
    for t in range(xs.shape[0] - 2):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        total = total + np.sum(h ** 2)
    return total * 0.5


def rnn_batched_args(T=10, B=4, D=3, H=5, seed=0):
    r = np.random.default_rng(seed)
    return (r.normal(size=(D, H)) * 0.4, r.normal(size=(H, H)) * 0.4, r.normal(size=H) * 0.1,
            r.normal(size=(T, B, D)), r.normal(size=(B, H)) * 0.3)


def rnn_vector_args(T=10, D=3, H=5, seed=0):
    """rnn_batched's arguments for one sequence: ``h`` a vector, whose gradients of
    ``xs[t] @ Wx`` and ``h @ Wh`` are outer products of rows (passes/stacked.py)."""
    Wx, Wh, b, xs, h0 = rnn_batched_args(T, 1, D, H, seed)
    return Wx, Wh, b, xs[:, 0], h0[0]


def _stage(y, W, b):
    return np.tanh(W @ y + b) - 0.5 * y


def rk4_steps(W, b, y0, dts):
    """RK4 (tools/workloads.py's rk4 at a small size): each step adds four outer products of
    the stages' dz and their points to dW, and the four dz to db (passes/stacked.py)."""
    y = y0
    for dt in dts:
        k1 = _stage(y, W, b)
        k2 = _stage(y + 0.5 * dt * k1, W, b)
        k3 = _stage(y + 0.5 * dt * k2, W, b)
        k4 = _stage(y + dt * k3, W, b)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return 0.5 * np.sum(y * y)


def rk4_args(T=12, n=4, seed=0):
    r = np.random.default_rng(seed)
    return (r.normal(size=(n, n)) / np.sqrt(n), r.normal(size=n) * 0.1, r.normal(size=n),
            0.05 + 0.1 * r.random(T))


def leaky(x, xs):
    h = x * 0.5
    for t in range(xs.shape[0]):
        h = np.tanh(h * 0.9 + x + xs[t])
    return np.sum(h * h)


def two_stacks(x, xs):
    a = np.zeros((xs.shape[0], x.shape[0]))
    b = np.zeros((xs.shape[0], x.shape[0]))
    h = x
    for t in range(xs.shape[0]):
        v = np.sin(h * xs[t] + 0.3)
        a[t] = v
        b[t] = v
        h = v * 0.5
    return np.sum(a * b) + np.sum(h)


def broadcast_invariants(x, c, r, xs):
    h = x * 0.5
    for t in range(xs.shape[0]):
        h = np.tanh(h * 0.9 + c + r + xs[t])
    return np.sum(h * h)


def reversed_leak(Wx, Wh, xs, h0):
    """A loop over time reversed whose loss reads a slice of the state: the state's gradient
    is a zeroed work array with its slice added, two statements for one (codegen/regions.py
    kept one statement per tape statement and lost the addition to the carried gradient)."""
    h = h0
    total = 0.0
    for t in range(xs.shape[0] - 1, -1, -1):
        h = np.tanh(xs[t] @ Wx + h @ Wh) + 0.5 * h
        total = total + np.sum(h[:, :2] ** 2)
    return total


def cosine_of_inputs(Wx, Wh, xs, h0):
    """The pre-activation read twice (tanh and cos): its gradient is made in a row of the
    state stack (passes/stacked.py) under the name of a value in the carried gradient's
    array, which the planned body then named as the home of the next carried gradient."""
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        z = xs[t] @ Wx + h @ Wh
        h = np.tanh(z)
        total = total + np.sum(h ** 2) + np.sum(np.cos(z))
    return total


def reversed_steps(Wx, Wh, xs, h0):
    """``reversed(range(T))``: the loop is a region like ``range(T - 1, -1, -1)`` (it was
    unrolled without a note: a reversed range has no length)."""
    h = h0
    total = 0.0
    for t in reversed(range(xs.shape[0])):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
        total = total + np.mean(h[0] ** 2)
    return total


def row_sums(Wx, Wh, xs, h0):
    """Each step's state summed along its rows into a row of ``out``: the planned body writes
    the sum as a product with a vector of ones (codegen/out_forms.py sum_as_product), a
    module-level name the body's emitter made and the module never defined (NameError)."""
    h = h0
    out = np.zeros((xs.shape[0], h0.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh)
        out[t] = np.sum(h, axis=-1)
    return np.sum(np.cos(out))


def batched_args(T=10, B=4, D=3, H=5, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal((D, H)) * 0.5, r.standard_normal((H, H)) * 0.5,
            r.standard_normal((T, B, D)), r.standard_normal((B, H)))


# -- rows of an array written and read in the steps (flow6): each step's cost is a row's --

def row_read_in_step(W, xs):
    """``O[t]`` written, then read again in the same step: its gradient is added into the row
    of ``dO`` (no zero array of ``O``'s shape per step, no copy of ``dO``)."""
    h = np.zeros(W.shape[0])
    O = np.zeros((xs.shape[0], W.shape[0]))
    for t in range(xs.shape[0]):
        O[t] = np.tanh(W @ h + xs[t])
        h = O[t] * 0.5 + h
    return np.sum(O * O)


def row_from_row(W, xs):
    """The state lives in the rows: ``O[t + 1]`` from ``O[t]``."""
    O = np.zeros((xs.shape[0] + 1, W.shape[0]))
    O[0] = xs[0]
    for t in range(xs.shape[0]):
        O[t + 1] = np.tanh(W @ O[t] + xs[t])
    return np.sum(O * O)


def row_updated_twice(W, xs):
    """A row updated twice in a step, read in between (``t6 = O[t]`` before ``O[t] *= h``)."""
    h = np.zeros(W.shape[0])
    O = np.zeros((xs.shape[0], W.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        O[t] += h
        O[t] *= h
    return np.sum(O)


def two_row_stores(W, xs):
    h = np.zeros(W.shape[0])
    O = np.zeros((xs.shape[0], W.shape[0]))
    P = np.zeros((xs.shape[0], W.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        O[t] = h
        P[t] = h * h
    return np.sum(O * P)


def stencil(vx, vy, f):
    """Centred differences on a periodic grid (np.roll) and diffusion, ten steps: the backward
    step makes the differences again from the saved field (one stack, not two)."""
    for _ in range(10):
        dfx = np.roll(f, -1, axis=1) - np.roll(f, 1, axis=1)
        dfy = np.roll(f, -1, axis=0) - np.roll(f, 1, axis=0)
        lap = np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0) + np.roll(f, 2, axis=1) \
            + np.roll(f, -1, axis=1) - 4.0 * f
        f = f - 0.1 * (vx * dfx + vy * dfy) + 0.05 * lap
    return np.sum(f * f)


def stencil_args(n=6, m=5, seed=0):
    r = np.random.default_rng(seed)
    return r.random((n, m)), r.random((n, m)), r.random((n, m))



def advected(vx, vy, f):
    """autograd's fluidsim advection, eight steps: the cell grid is made in the step
    (np.meshgrid of np.arange: the same in every call, so nothing to check when the code
    runs) and the field is gathered at run-time integer indices (np.floor(...).astype(int))."""
    for _ in range(8):
        rows, cols = f.shape
        cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols))
        center_xs = (cell_xs - vx).ravel()
        center_ys = (cell_ys - vy).ravel()
        left_ix = np.floor(center_xs).astype(int)
        top_ix = np.floor(center_ys).astype(int)
        rw = center_xs - left_ix
        bw = center_ys - top_ix
        left_ix = np.mod(left_ix, rows)
        right_ix = np.mod(left_ix + 1, rows)
        top_ix = np.mod(top_ix, cols)
        bot_ix = np.mod(top_ix + 1, cols)
        flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) \
            + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
        f = np.reshape(flat_f, (rows, cols))
    return np.sum(f * f)


def advected_args(n=5, seed=0):
    r = np.random.default_rng(seed)
    return 0.3 * r.standard_normal((n, n)), 0.3 * r.standard_normal((n, n)), r.random((n, n))

# -- accumulator loops (ad/regions.py _accumulator_loop): each step's adjoint in the step --
# (``cyclic`` above is one: the ring workload)

def ring_squared(x):
    """The sum's gradient is known only after the loop (``2 s``): the loop adds up each step's
    adjoint at ``ds = 1`` and the gradient is scaled once after it."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s = s + np.sin(x[i]) * x[(i + 1) % n]
    return s ** 2


def two_sums(x, w):
    """Two running sums, both returned as they are (their cotangents are constants)."""
    a = 0.0
    b = 0.0
    for i in range(x.shape[0]):
        a += x[i] * w
        b -= np.cos(x[i] * w)
    return a + 2.0 * b


def two_sums_multiplied(x, w):
    """Two running sums whose cotangents are known only after the loop: two loops."""
    a = 0.0
    b = 0.0
    for i in range(x.shape[0]):
        a += x[i] * w
        b += np.cos(x[i] * w)
    return a * b


def previous_product(x):
    """``p`` is carried and needs a gradient, ``s`` reads it: not an accumulator loop."""
    s = 0.0
    p = 0.5
    for i in range(x.shape[0]):
        s += x[i] * p
        p = x[i] * 1.0
    return s


def minibatch(W, b, X, Y):
    """``loss += f(X[i], W)`` over minibatches of arrays: no stacks saved, one loop."""
    loss = 0.0
    for i in range(X.shape[0]):
        h = np.tanh(X[i] @ W + b)
        loss = loss + np.mean((h - Y[i]) ** 2)
    return loss / X.shape[0] + 0.1 * np.sum(W * W)


def minibatch_squared(W, X):
    """An array loss summed in the loop, squared after it (the cotangent comes after)."""
    loss = 0.0
    for i in range(X.shape[0]):
        loss = loss + np.sum(np.tanh(X[i] @ W))
    return loss ** 2


def decayed_sum(x, W):
    """Counting down, with a carried value that needs no gradient (``q``, read by the step
    where it is at that step) and an array sum of the step's products."""
    s = np.zeros(3)
    q = 1.0
    for i in reversed(range(x.shape[0])):
        s = s + q * np.tanh(W @ x[i])
        q = q * 0.5 + 0.25
    return np.sum(s * s)


def decayed_total(x, W):
    """``decayed_sum`` with a scalar sum that is the result: one loop, counting down."""
    s = 0.0
    q = 1.0
    for i in reversed(range(x.shape[0])):
        s = s + q * np.sum(np.tanh(W @ x[i]))
        q = q * 0.5 + 0.25
    return s


def inner_sums(W, xs):
    """An accumulator loop inside another loop's step: two loops each (the outer step's
    adjoint would otherwise read the inner sums' gradients, saved for every outer step)."""
    total = 0.0
    for t in range(xs.shape[0]):
        s = 0.0
        for k in range(8):
            s = s + np.sum(np.tanh(W @ xs[t] * k))
        total = total + s * s
    return total


def diffusion_step(kappa, f):
    """An explicit step of diffusion with a varying coefficient on a periodic grid."""
    lap = np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0) + np.roll(f, 1, axis=1) \
        + np.roll(f, -1, axis=1) - 4.0 * f
    return f + 0.1 * kappa * lap


def diffused_odd(kappa, f):
    """The field is carried from step to step, a new value each step: nine steps."""
    for _ in range(9):
        f = diffusion_step(kappa, f)
    return np.sum(np.sin(f))


def diffused_even(kappa, f):
    """Ten steps, and the field itself returned (a forward-only module returns it)."""
    for _ in range(10):
        f = diffusion_step(kappa, f)
    return f


def widened_state(h0, b):
    """A float32 state that the first step makes float64 (``b`` is float64): numpy runs that
    step in float32 up to the addition."""
    h = h0 * 0.5
    total = 0.0
    for t in range(10):
        h = h * 0.322 + np.tanh(h + b) * 0.322
        total = total + np.mean(h[2] * h[2])
    return total


def lent_after_body(x0, x1, x2, x3):
    """(fuzzer seed 29,500,303) Two loops; the first one's backward carries ``dh``, which lives
    in the memory of the zero gradient of ``x1`` (written after it), as do its body's work
    arrays, chosen before: ``dx1_mem`` is made before either is read (LEND_MIN at 1)."""
    hs = []
    h = x0.sum(axis=1) * 0.883
    for t in range(8):
        h = np.sin(h * 0.883 + -0.464 * t)
        hs.append(np.sum(h))
    v3 = np.stack(hs).sum(axis=0)
    Wx = np.cos(np.linspace(-0.246, 45.378, 64, dtype=x2.dtype)).reshape(2, 32) * 0.535
    Wh = np.cos(np.linspace(1.282, 718.668, 1024, dtype=x2.dtype)).reshape(32, 32) * 0.107 \
        * np.cos(x3)
    b = 0.113 * x3
    h = np.tanh(np.dot(x2[0], Wx)) * 0.5
    c = np.zeros((16, 32), dtype=x2.dtype)
    total = 0.0
    for t in range(11):
        z = np.dot(x2[t], Wx) + np.dot(h, Wh) + b
        c = np.tanh(z) * c + np.tanh(z)
        h = np.tanh(c)
        total = total + np.mean(h[11]) * 0.5
    return v3 + np.sin(total)


def lent_after_body_args(seed=0):
    r = np.random.default_rng(seed)
    return (r.uniform(-1, 1, (2, 1, 4)), r.uniform(-1, 1, (2, 3, 4)), r.uniform(-1, 1, (11, 16, 2)),
            r.uniform(-1, 1, 32))


# Lists a loop appends to and reads in the same step (issue 29, item 11). At step t the list
# has t more rows than when the loop starts: hs[-1] before the append is the row the step
# before made, hs[len(hs) - 1] too, hs[-2] the one before; hs[t] and hs[t // 2] move with t.

def last_of_list(W, xs):
    """numpy-ml's LSTMCell keeps its states in lists: hs[-1] is the previous step's state."""
    hs = [np.zeros((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(hs[-1] @ W + xs[t]))
    return np.sum(hs[-1] ** 2)


def two_lists(W, xs):
    """An LSTM-like cell: the cell and the state, each the last item of its list."""
    hs = [np.zeros((2, W.shape[1]))]
    cs = [np.zeros((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        c = cs[-1] * np.tanh(xs[t] @ W) + np.tanh(hs[-1] @ W)
        cs.append(c)
        hs.append(np.tanh(cs[-1]) * np.cos(hs[-1]))
    return np.sum(hs[-1] ** 2) + np.sum(cs[-1])


def two_back(W, xs):
    """hs[-2]: the row two steps back (the first two steps read rows from before the loop)."""
    hs = [np.zeros((2, W.shape[1])), np.ones((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(hs[-1] @ W + hs[-2] * 0.5 + xs[t]))
    return np.sum(hs[-1] ** 2)


def by_length(W, xs):
    hs = [np.zeros((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(hs[len(hs) - 1] @ W + xs[t]))
    return np.sum(hs[-1] ** 2)


def by_step(W, xs):
    hs = [np.zeros((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(hs[t] @ W + xs[t]) + hs[t // 2] * 0.5)
    return np.sum(np.stack(hs) ** 2)


def whole_list(W, xs):
    """sum(hs) and len(hs) read the whole list, which grows."""
    hs = [np.zeros((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ W) + sum(hs) * (0.1 / len(hs)))
    return np.sum(hs[-1] ** 2)


def own_row(W, xs):
    """hs[-1] after the append is the step's own row, the same at every step: a region."""
    hs = []
    total = 0.0
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ W))
        total = total + np.sum(hs[-1] * xs[t])
    return total + np.sum(np.stack(hs) ** 2)


def rewritten_row(W, xs):
    hs = [np.zeros((2, W.shape[1]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ W))
        hs[-1] = hs[-1] * 2.0 + hs[-2]
    return np.sum(hs[-1] ** 2)


def list_in_dict(W, xs, state):
    """The list inside a dict argument (``state["hs"]``)."""
    for t in range(xs.shape[0]):
        state["hs"].append(np.tanh(state["hs"][-1] @ W + xs[t]))
    return np.sum(state["hs"][-1] ** 2)


def list_args(T=9, seed=0):
    r = np.random.default_rng(seed)
    return r.normal(size=(3, 3)) * 0.6, r.normal(size=(T, 2, 3))


def list_made_in_step(W, xs):
    """A list the step makes (list()) and appends to is the step's own: a region."""
    h = np.zeros(W.shape[1])
    for t in range(xs.shape[0]):
        parts = list()
        parts.append(h @ W)
        parts.append(xs[t, 0])
        h = np.tanh(sum(parts))
    return np.sum(h ** 2)


def params_dict(params, xs):
    """A dict argument read in the step, unchanged: a region (its items were compared by
    identity of pairs made anew, and it was unrolled)."""
    h = np.zeros(params["W"].shape[1])
    for t in range(xs.shape[0]):
        h = np.tanh(h @ params["W"] + xs[t, 0] * params["b"])
    return np.sum(h ** 2)


# dicts keyed by the step (issue 35, min-char-rnn's xs, hs, ys, ps: frontend/region_dicts.py)

def keyed_states(W, xs):
    """min-char-rnn's form: hs[-1] before the loop, hs[t] from hs[t - 1], the loss an int 0
    made a float by the first step, items read after the loop by key."""
    hs, ps = {}, {}
    hs[-1] = np.zeros((2, W.shape[1]))
    loss = 0
    for t in range(xs.shape[0]):
        hs[t] = np.tanh(hs[t - 1] @ W + xs[t])
        ps[t] = np.exp(hs[t]) / np.sum(np.exp(hs[t]))
        loss += -np.log(ps[t][0, 1])
    return loss + np.sum(hs[xs.shape[0] - 1] ** 2) + np.sum(hs[2] * hs[-1])


def keyed_one_hot(W, xs):
    """An item set to zeros, then written in place through its key (xs[t][k] = 1)."""
    hs, onehot = {-1: np.zeros((2, W.shape[1]))}, {}
    for t in range(xs.shape[0]):
        onehot[t] = np.zeros((2, W.shape[1]))
        onehot[t][0, t % 3] = 1.0
        hs[t] = np.tanh(hs[t - 1] @ W + onehot[t] * xs[t])
    return np.sum(hs[xs.shape[0] - 1] ** 2)


def keyed_from_one(W, xs):
    """range(1, n): the item before the first step is hs[0]."""
    hs = {0: np.tanh(xs[0])}
    for t in range(1, xs.shape[0]):
        hs[t] = np.tanh(hs[t - 1] @ W + xs[t])
    return sum(np.sum(hs[t] ** 2) for t in (1, 4, xs.shape[0] - 1))


def keyed_two_back(W, xs):
    """hs[t - 2]: another step's item than the one before: unrolled."""
    hs = {-2: np.ones((2, W.shape[1])), -1: np.zeros((2, W.shape[1]))}
    for t in range(xs.shape[0]):
        hs[t] = np.tanh(hs[t - 1] @ W + 0.5 * hs[t - 2] + xs[t])
    return np.sum(hs[xs.shape[0] - 1] ** 2)


def keyed_two_items(W, xs):
    """Two items keyed by the step set in one step: unrolled."""
    hs = {-1: np.zeros((2, W.shape[1]))}
    for t in range(xs.shape[0]):
        hs[t] = np.tanh(hs[t - 1] @ W + xs[t])
        hs[t + 100] = hs[t] * 2.0
    return np.sum(hs[xs.shape[0] + 99] ** 2)


def keyed_read_in_a_later_loop(W, xs):
    """A later loop reads hs[t] of a dict the first one set: another item at each step, which
    that loop does not set (unrolled; it read hs[0] at every step before this was checked)."""
    hs = {-1: np.zeros((2, W.shape[1]))}
    for t in range(xs.shape[0]):
        hs[t] = np.tanh(hs[t - 1] @ W + xs[t])
    total = 0.0
    for t in range(xs.shape[0]):
        total = total + np.sum(hs[t] * xs[t])
    return total


def column_bumped(x, W):
    """A carried value written in place (``dh[:, 2] += 1.0``), then made anew from what the
    write left (``dh * x``): the step saves the written value for the product's gradient. Its
    row was saved under the carried value's name after the new value took it, so the backward
    read the new value (dx 35% off)."""
    dh = np.zeros((3, 4))
    for t in range(10):
        dh[:, 2] += 1.0
        dh = dh * (1 - x * x) @ W.T
    return np.sum(dh * np.cos(x))


def column_summed(x, W):
    """``np.sum(h[:, 2])`` in a running total: its gradient step is ``dh[:, 2] += 1.0``, so the
    reverse-over-reverse Hessian-vector product traced the module above (62% off)."""
    h = x
    total = 0.0
    for t in range(10):
        h = np.tanh(h @ W)
        total = total + np.sum(h[:, 2])
    return total
