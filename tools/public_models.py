"""Public models differentiated from their authors' own forward code (issue 35).

    python tools/public_models.py --ml-from-scratch PATH --numpy-ml PATH --autograd PATH

Each PATH is a copy of the repository (a work tree, or a bare git directory, read at HEAD):
https://github.com/eriklindernoren/ML-From-Scratch, https://github.com/ddbourgin/numpy-ml and
https://github.com/HIPS/autograd.
Nothing of theirs is kept in this repository: the files are read from the copy when this runs
and loaded from a temporary folder. For each model the script prints the compile time, the
loop notes, and how far the gradient is from the authors' handwritten backward pass (where
theirs is exact) or from central differences:

- ML-From-Scratch's MLP (``Dense``, ``Activation``; ``CrossEntropy``): its layers keep their
  input for the backward pass (``self.layer_input = X``), which the generated code does too;
  the loss object is built inside the loss from static values.
- ML-From-Scratch's RNN layer (``SquareLoss``): U, V, W against the authors' backpropagation
  through time (``bptt_trunc`` as long as the sequence, so theirs is exact in U, V, W).
- numpy-ml's MLP (two ``FullyConnected`` layers, ReLU then affine; ``CrossEntropy`` of the
  softmax): each layer appends its input to ``self.X`` and its ``Z`` to a dict of lists for its
  backward pass, which the generated code does to the caller's layers too.
- autograd's fluidsim (``simulate`` on a random 110 x 110 smoke and target, 100 steps, as the
  example's size): the time loop must stay a loop region; compile time, and the gradient at a
  few entries against central differences.
"""
from __future__ import annotations

import argparse
import collections
import collections.abc
import copy
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import yota_s2s as ys  # noqa: E402


def read(repo: str, path: str) -> str:
    """``path`` from the copy ``repo``: a file of its work tree, or HEAD's in a git directory."""
    file = Path(repo) / path
    if file.is_file():
        return file.read_text()
    return subprocess.run(["git", f"--git-dir={repo}", "show", f"HEAD:{path}"],
                          capture_output=True, text=True, check=True).stdout


def _ml_from_scratch(repo: str, folder: Path) -> None:
    package = folder / "mlfromscratch"
    (package / "deep_learning").mkdir(parents=True)
    for name in ("activation_functions", "layers", "loss_functions"):
        path = f"mlfromscratch/deep_learning/{name}.py"
        (folder / path).write_text(read(repo, path))
    (package / "__init__.py").write_text("")
    (package / "deep_learning" / "__init__.py").write_text("")
    # (their utils import sklearn and matplotlib; the loss functions need one function of it)
    (package / "utils.py").write_text("import numpy as np\n\n\ndef accuracy_score(a, b):\n"
                                      "    return np.mean(a == b)\n")
    sys.path.insert(0, str(folder))


class _Kept:
    """An optimizer that keeps the gradients the authors' backward pass hands it."""

    def __init__(self, found: dict, name: str):
        self.found, self.name = found, name

    def update(self, w, grad):
        self.found[self.name] = grad
        return w


def mlp_loss(layers, X, y):
    from mlfromscratch.deep_learning.loss_functions import CrossEntropy
    out = X
    for layer in layers:
        out = layer.forward_pass(out)
    return np.mean(CrossEntropy().loss(y, out))


def ml_from_scratch_mlp() -> None:
    from mlfromscratch.deep_learning.layers import Activation, Dense
    from mlfromscratch.deep_learning.loss_functions import CrossEntropy
    np.random.seed(0)
    layers = [Dense(16, input_shape=(8,)), Activation("relu"), Dense(4, input_shape=(16,)),
              Activation("sigmoid")]     # (their softmax's backward is its diagonal alone)
    for layer in layers:
        if isinstance(layer, Dense):
            layer.initialize(None)
    X, y = np.random.randn(32, 8), np.eye(4)[np.random.randint(0, 4, 32)]
    ref, found = copy.deepcopy(layers), {}
    for i, layer in enumerate(ref):
        if isinstance(layer, Dense):
            layer.W_opt, layer.w0_opt = _Kept(found, (i, "W")), _Kept(found, (i, "w0"))
    start = time.perf_counter()
    value, g = ys.grad(mlp_loss, layers, X, y)
    took = time.perf_counter() - start
    out = X
    for layer in ref:
        out = layer.forward_pass(out)
    accum = CrossEntropy().gradient(y, out) / out.size      # (the mean's 1 / size)
    for layer in reversed(ref):
        accum = layer.backward_pass(accum)
    worst = max(np.max(np.abs(g[0][key] - found[key])) for key in found)
    stored = all(np.array_equal(a.layer_input, b.layer_input) for a, b in zip(layers, ref))
    print(f"ML-From-Scratch MLP: compiled in {took:.2f} s; value {value:.12g} "
          f"(theirs {mlp_loss(copy.deepcopy(ref), X, y):.12g}); |dW - theirs| <= {worst:.1e}, "
          f"|dX - theirs| = {np.max(np.abs(g[1] - accum)):.1e}; layer_input kept as theirs: "
          f"{stored}")


def rnn_loss(layer, X, y):
    from mlfromscratch.deep_learning.loss_functions import SquareLoss
    return np.sum(SquareLoss().loss(y, layer.forward_pass(X)))


def ml_from_scratch_rnn(steps: int = 10) -> None:
    from mlfromscratch.deep_learning.layers import RNN
    from mlfromscratch.deep_learning.loss_functions import SquareLoss
    np.random.seed(0)
    layer = RNN(6, activation="tanh", bptt_trunc=steps, input_shape=(steps, 4))
    layer.initialize(None)
    X, y = np.random.randn(3, steps, 4), np.random.randn(3, steps, 4)
    ref, found = copy.deepcopy(layer), {}
    ref.U_opt, ref.V_opt, ref.W_opt = (_Kept(found, (n,)) for n in "UVW")
    start = time.perf_counter()
    value, g = ys.grad(rnn_loss, layer, X, y)
    took = time.perf_counter() - start
    ref.backward_pass(SquareLoss().gradient(y, ref.forward_pass(X)))
    worst = max(np.max(np.abs(g[0][key] - found[key])) for key in found)
    loops = ys.trace(rnn_loss, copy.deepcopy(ref), X, y)[1].loops
    print(f"ML-From-Scratch RNN: compiled in {took:.2f} s; value {value:.12g}; "
          f"|dU, dV, dW - theirs| <= {worst:.1e}; loop: {'; '.join(loops)}")


def _numpy_ml(repo: str, folder: Path) -> None:
    """numpy-ml's package, from a work tree or a git directory, importable from ``folder``."""
    folder.mkdir()
    if (Path(repo) / "numpy_ml").is_dir():
        shutil.copytree(Path(repo) / "numpy_ml", folder / "numpy_ml")
    else:
        archive = subprocess.run(["git", f"--git-dir={repo}", "archive", "HEAD", "numpy_ml"],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                      else {}))
    (folder / "numpy_ml" / "__init__.py").write_text("")    # (the rest needs scikit-learn)
    collections.Hashable = collections.abc.Hashable         # (Python < 3.10's name, theirs)
    sys.path.insert(0, str(folder))


def softmax(z):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_ml_loss(layers, X, y):
    from numpy_ml.neural_nets.losses import CrossEntropy
    h = X
    for layer in layers:
        h = layer.forward(h)        # (each keeps X and Z for its backward: self.X.append(X))
    return CrossEntropy().loss(y, softmax(h))


def numpy_ml_mlp() -> None:
    from numpy_ml.neural_nets.layers import FullyConnected
    from numpy_ml.neural_nets.losses import CrossEntropy
    np.random.seed(0)
    layers = [FullyConnected(16, act_fn="ReLU"),
              FullyConnected(4, act_fn="Affine(slope=1, intercept=0)")]
    X, y = np.random.randn(8, 5), np.eye(4)[np.random.randint(0, 4, 8)]
    layers[1].forward(layers[0].forward(X, retain_derived=False), retain_derived=False)
    ref = copy.deepcopy(layers)
    start = time.perf_counter()
    value, g = ys.grad(numpy_ml_loss, layers, X, y)
    took = time.perf_counter() - start
    h = X
    for layer in ref:
        h = layer.forward(h)
    d = CrossEntropy.grad(y, softmax(h))
    for layer in reversed(ref):
        d = layer.backward(d)
    worst = max(np.max(np.abs(g[0][(i, "parameters", k)] - layer.gradients[k]))
                for i, layer in enumerate(ref) for k in ("W", "b"))
    kept = all(len(a.X) == 1 and np.array_equal(a.X[0], b.X[0]) for a, b in zip(layers, ref))
    print(f"numpy-ml MLP: compiled in {took:.2f} s; value {value:.12g}; |dW, db - theirs| <= "
          f"{worst:.1e}, |dX - theirs| = {np.max(np.abs(g[1] - d)):.1e}; X kept as theirs: "
          f"{kept}")


def numpy_ml_cnn() -> None:
    """numpy-ml's layers as a small CNN: ``Conv2D`` (3 x 3, same padding, ReLU), ``Pool2D``
    (2 x 2 max, their loops over examples, rows, columns and channels), ``Flatten``, an affine
    ``FullyConnected``; ``CrossEntropy`` of the softmax. Each layer keeps what its backward pass
    reads (its input, ``Z``, ``out_rows``: an ``np.int64``, the input's shape), which the
    generated code does to the caller's layers too."""
    from numpy_ml.neural_nets.layers import Conv2D, Flatten, FullyConnected, Pool2D
    from numpy_ml.neural_nets.losses import CrossEntropy
    np.random.seed(0)
    layers = [Conv2D(out_ch=4, kernel_shape=(3, 3), pad="same", stride=1, act_fn="ReLU"),
              Pool2D(kernel_shape=(2, 2), stride=2, mode="max"), Flatten(),
              FullyConnected(5, act_fn="Affine(slope=1, intercept=0)")]
    X, y = np.random.randn(4, 8, 8, 2), np.eye(5)[np.random.randint(0, 5, 4)]
    h = X
    for layer in layers:                # (their parameters are made on the first forward)
        h = layer.forward(h, retain_derived=False)
    pristine, ref = copy.deepcopy(layers), copy.deepcopy(layers)
    start = time.perf_counter()
    value, g = ys.grad(numpy_ml_loss, layers, X, y, wrt=0)
    took = time.perf_counter() - start

    def theirs(ref):
        h = X
        for layer in ref:
            h = layer.forward(h)
        d = CrossEntropy.grad(y, softmax(h))
        for layer in reversed(ref):
            d = layer.backward(d)
    theirs(ref)
    worst = max(np.max(np.abs(g[0][(i, "parameters", k)] - layer.gradients[k]))
                for i, layer in enumerate(ref) for k in layer.gradients)
    kept = all(_same_lists(a.X, b.X) and all(
        _same_lists(v, b.derived_variables[k]) for k, v in a.derived_variables.items()
        if isinstance(v, list)) for a, b in zip(layers, ref))
    ours = _best(lambda: ys.grad(numpy_ml_loss, copy.deepcopy(pristine), X, y, wrt=0),
                 number=3)
    theirs_time = _best(lambda: theirs(copy.deepcopy(pristine)), number=3)
    compiled = g._variant.compiled
    print(f"numpy-ml CNN: compiled in {took:.2f} s to {len(compiled.text.splitlines())} lines; "
          f"|dW, db - theirs| <= {worst:.1e}; what the layers keep as theirs: {kept}; "
          f"{ours * 1e3:.2f} ms per "
          f"gradient against {theirs_time * 1e3:.2f} ms for theirs ({ours / theirs_time:.2f}x, "
          f"both with a deep copy of the layers); loops: "
          f"{'; '.join(compiled.forward.loops) or 'none'}")


def _same_lists(a: list, b: list) -> bool:
    """Do two lists hold equal items (arrays, numbers, shapes) of the same types?"""
    return len(a) == len(b) and all(type(p) is type(q) and np.array_equal(p, q)
                                    for p, q in zip(a, b))


def lstm_loss(cell, X, Y):
    """numpy-ml's ``LSTM`` layer's forward loop (its ``LSTM`` class itself cannot be made at
    their HEAD: ``LayerBase.__init__`` assigns ``self.gradients``, a property without a setter
    there), with a squared error."""
    total = 0.0
    for t in range(X.shape[2]):
        yt, _ = cell.forward(X[:, :, t])
        total = total + np.sum((yt - Y[:, :, t]) ** 2)
    return total


def numpy_ml_lstm(steps: int = 10) -> None:
    """numpy-ml's ``LSTMCell`` over ``steps`` steps, against their ``backward`` for each step
    in reverse (exact: their accumulators carry dA and dC back)."""
    from numpy_ml.neural_nets.layers import LSTMCell
    np.random.seed(0)
    cell = LSTMCell(8)
    X, Y = np.random.randn(4, 3, steps), np.random.randn(4, 8, steps)
    cell.n_in = 3
    cell._init_params()         # (as their first forward does; flush_gradients would leave
    ref = copy.deepcopy(cell)   # the accumulators [] where their backward needs None)
    start = time.perf_counter()
    value, g = ys.grad(lstm_loss, cell, X, Y, wrt=0)
    took = time.perf_counter() - start

    def theirs(layer):
        outs = [layer.forward(X[:, :, t])[0] for t in range(steps)]
        for t in reversed(range(steps)):
            layer.backward(2 * (outs[t] - Y[:, :, t]))
    theirs(ref)
    worst = max(np.max(np.abs(g[0][("parameters", k)] - ref.gradients[k])) for k in ref.gradients)
    kept = all(np.array_equal(a, b) for a, b in zip(cell.derived_variables["A"],
                                                    ref.derived_variables["A"]))
    ours = _best(lambda: ys.grad(lstm_loss, copy.deepcopy(ref), X, Y, wrt=0), number=3)
    theirs_time = _best(lambda: theirs(copy.deepcopy(ref)), number=3)
    compiled = g._variant.compiled
    print(f"numpy-ml LSTM: compiled in {took:.2f} s to {len(compiled.text.splitlines())} lines; "
          f"|dW, db - theirs| <= {worst:.1e}; states kept as theirs: {kept}; {ours * 1e3:.2f} ms "
          f"per gradient against {theirs_time * 1e3:.2f} ms for theirs ({ours / theirs_time:.2f}x,"
          f" both with a deep copy of the cell); loops: "
          f"{'; '.join(compiled.forward.loops) or 'none'}")


def fluidsim(repo: str, folder: Path, size: int = 110, steps: int = 100) -> None:
    source = read(repo, "examples/fluidsim/fluidsim.py")
    source = source.replace("import autograd.numpy as np", "import numpy as np")
    source = source.replace("from autograd import value_and_grad", "")
    path = folder / "fluidsim.py"
    path.write_text(source)
    for name in ("matplotlib", "matplotlib.pyplot"):     # (its plotting is not run)
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["matplotlib.pyplot"].imread = None
    sys.path.insert(0, str(folder))
    import fluidsim as sim
    rng = np.random.default_rng(0)
    smoke, target = rng.random((size, size)), rng.random((size, size))

    def objective(params):
        vx = np.reshape(params[:size * size], (size, size))
        vy = np.reshape(params[size * size:], (size, size))
        return np.mean((target - sim.simulate(vx, vy, smoke, steps)) ** 2)
    params = 0.3 * rng.standard_normal(2 * size * size)
    ys.simplegrad(lambda a: np.sum(np.sin(a)), np.ones(3))      # (the compiler's imports)
    start = time.perf_counter()
    df = ys.simplegrad(objective, params)
    took = time.perf_counter() - start
    value, d = df(params)
    worst = 0.0
    for i in (3, size * size + 7):
        e = np.zeros_like(params)
        e[i] = 1e-6
        numeric = (objective(params + e) - objective(params - e)) / 2e-6
        worst = max(worst, abs(d[i] - numeric) / max(abs(numeric), 1e-12))
    loops = [n for n in ys.trace(objective, params)[1].loops if "range(10)" not in n]
    print(f"autograd fluidsim ({size} x {size}, {steps} steps): compiled in {took:.2f} s, "
          f"{len(ys.source(df).splitlines())} lines; value {value:.12g} (numpy "
          f"{objective(params):.12g}); relative error vs central differences <= {worst:.1e}; "
          f"loop: {'; '.join(loops)}")


def _min_char_rnn(repo: str, folder: Path) -> types.ModuleType:
    """min-char-rnn's ``lossFun`` (Python 2: its ``xrange``), read from the copy's
    ``min-char-rnn.py`` (at its root or under ``python/``), as a module of ``folder`` whose
    globals are the model's; the function's text is theirs but for its first line, which takes
    the parameters it reads as globals as arguments too (``lossFun_of``)."""
    for path in ("min-char-rnn.py", "python/min-char-rnn.py"):
        try:
            source = read(repo, path)
            break
        except subprocess.CalledProcessError:
            continue
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def lossFun("))
    end = next(i for i in range(start + 1, len(lines))
               if lines[i][:1] not in ("", " ", "\t", "#"))
    function = "\n".join(lines[start:end])
    signature = "def lossFun(inputs, targets, hprev):"
    assert lines[start] == signature, lines[start]
    text = ("import numpy as np\n\nxrange = range\n\n\n" + function + "\n\n\n" +
            function.replace(signature, "def lossFun_of(Wxh, Whh, Why, bh, by, inputs, targets, "
                             "hprev):", 1) + "\n")
    (folder / "min_char_rnn.py").write_text(text)
    sys.path.insert(0, str(folder))
    import min_char_rnn
    return min_char_rnn


def min_char_loss(Wxh, Whh, Why, bh, by, inputs, targets, hprev):
    from min_char_rnn import lossFun_of
    return lossFun_of(Wxh, Whh, Why, bh, by, inputs, targets, hprev)[0]


def min_char_rnn(repo: str, folder: Path, chunks: int = 5) -> None:
    """The gist's sizes (100 hidden units, 25 steps), 65 characters: ``lossFun`` traced whole
    (its handwritten backward pass is dead code of the loss), differentiated with ``ys.grad``
    for a few chunks of text (their token ids in lists, as the gist's training loop makes
    them), against the gradients the authors' ``lossFun`` returns (clipped to [-5, 5]: exact
    where smaller)."""
    folder.mkdir()
    module = _min_char_rnn(repo, folder)
    rs = np.random.RandomState(0)
    vocab, hidden, steps = 65, 100, 25
    module.vocab_size = vocab
    params = [rs.randn(hidden, vocab) * 0.01, rs.randn(hidden, hidden) * 0.01,
              rs.randn(vocab, hidden) * 0.01, np.zeros((hidden, 1)), np.zeros((vocab, 1))]
    for name, value in zip(("Wxh", "Whh", "Why", "bh", "by"), params):
        setattr(module, name, value)
    text = [int(c) for c in rs.randint(0, vocab, chunks * steps + 1)]
    ys.clear_cache()
    hprev, worst, took = np.zeros((hidden, 1)), 0.0, []
    for n in range(chunks):
        inputs, targets = text[n * steps:(n + 1) * steps], text[n * steps + 1:(n + 1) * steps + 1]
        start = time.perf_counter()
        value, g = ys.grad(min_char_loss, *params, inputs, targets, hprev, wrt=(0, 1, 2, 3, 4))
        took.append(time.perf_counter() - start)
        loss, *theirs, hnext = module.lossFun(inputs, targets, hprev)
        worst = max([worst, abs(value - loss)] + [np.max(np.abs(a - b))
                                                   for a, b in zip(g[:5], theirs)])
        hprev = hnext
    info, compiled = ys.cache_info(), g._variant.compiled
    ours = _best(lambda: ys.grad(min_char_loss, *params, inputs, targets, hprev,
                                 wrt=(0, 1, 2, 3, 4)))
    theirs_time = _best(lambda: module.lossFun(inputs, targets, hprev))
    print(f"min-char-rnn: compiled in {took[0]:.2f} s to {len(compiled.text.splitlines())} lines; "
          f"{chunks} chunks: {info['misses']} compile, {info['hits']} cache hits; "
          f"|value, dW, db - theirs| <= {worst:.1e}; {ours * 1e3:.2f} ms per gradient against "
          f"{theirs_time * 1e3:.2f} ms for theirs ({ours / theirs_time:.2f}x); "
          f"loops: {'; '.join(compiled.forward.loops)}")


def _cs231n(repo: str, folder: Path, assignment: str) -> None:
    """The ``cs231n`` package of ``assignmentN`` in a copy of a CS231n solution repository
    (their ``__init__`` files; the Cython im2col they import is not built: their message
    about it is not shown), importable from ``folder`` in place of another assignment's."""
    archive = subprocess.run(["git", f"--git-dir={repo}", "archive", "HEAD", f"{assignment}/cs231n"],
                             capture_output=True, check=True).stdout if not \
        (Path(repo) / assignment).is_dir() else None
    if archive is None:
        shutil.copytree(Path(repo) / assignment / "cs231n", folder / assignment / "cs231n")
    else:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                      else {}))
    for name in [m for m in sys.modules if m == "cs231n" or m.startswith("cs231n.")]:
        del sys.modules[name]
    sys.path.insert(0, str(folder / assignment))


def _model_loss(model, *data):
    return model.loss(*data)[0]


def _against_theirs(title: str, model: Any, data: tuple, kept: Callable | None = None) -> None:
    """``model.loss(*data)``'s loss differentiated (its handwritten backward pass, in the same
    method, is dead code of the loss) against the gradients it returns, with the value, compile
    time, time per gradient against theirs, and the loop notes; ``kept(model, theirs)``: is
    what the call left in the model as theirs left it."""
    ref = copy.deepcopy(model)
    start = time.perf_counter()
    value, g = ys.grad(_model_loss, model, *data, wrt=0)
    took = time.perf_counter() - start
    loss, grads = ref.loss(*data)
    if kept is not None:
        print(f"  {title}: the model after one call as theirs: {kept(model, ref)}")
    worst = max(np.max(np.abs(g[0][("params", k)] - grads[k])) for k in grads)
    ours = _best(lambda: ys.grad(_model_loss, model, *data, wrt=0), number=5)
    theirs = _best(lambda: ref.loss(*data), number=5)
    compiled = g._variant.compiled
    print(f"{title}: compiled in {took:.2f} s to {len(compiled.text.splitlines())} lines; "
          f"|value - theirs| = {abs(value - loss):.1e}, |grads - theirs| <= {worst:.1e}; "
          f"{ours * 1e3:.2f} ms per gradient against {theirs * 1e3:.2f} ms for theirs "
          f"({ours / theirs:.2f}x); loops: {'; '.join(compiled.forward.loops) or 'none'}")


def cs231n_captioning(cell: str) -> None:
    """assignment 3's ``CaptioningRNN`` (``cell_type`` rnn or lstm) in float64, at the
    assignment's gradient-check sizes but for 16 time steps (as its COCO captions)."""
    from cs231n.classifiers.rnn import CaptioningRNN
    np.random.seed(0)
    words = {"<NULL>": 0, "<START>": 1, "<END>": 2, **{f"w{i}": i + 3 for i in range(27)}}
    model = CaptioningRNN(words, input_dim=20, wordvec_dim=30, hidden_dim=40, cell_type=cell,
                          dtype=np.float64)
    features = np.random.randn(10, 20)
    captions = np.random.randint(0, len(words), (10, 17))
    _against_theirs(f"CS231n captioning {cell.upper()}", model, (features, captions))


def cs231n_fc_net() -> None:
    """assignment 2's ``FullyConnectedNet`` with batch normalization and L2 regularization
    (float64); the batch norm's running means, which its forward updates in the model's
    ``bn_params`` dicts, are updated as theirs."""
    import contextlib
    with contextlib.redirect_stdout(io.StringIO()):      # (their note on the Cython im2col)
        from cs231n.classifiers.fc_net import FullyConnectedNet
    np.random.seed(0)
    model = FullyConnectedNet([100, 50], input_dim=3 * 32 * 32, num_classes=10,
                              use_batchnorm=True, reg=0.1, weight_scale=5e-2, dtype=np.float64)
    X, y = np.random.randn(64, 3, 32, 32), np.random.randint(0, 10, 64)

    def kept(ours, theirs):
        return all(np.array_equal(a[k], b[k]) for a, b in zip(ours.bn_params, theirs.bn_params)
                   for k in ("running_mean", "running_var"))
    _against_theirs("CS231n fully connected net with batch norm", model, (X, y), kept)


def _best(fn: Callable, repeat: int = 5, number: int = 20) -> float:
    """The best of ``repeat`` runs of ``number`` calls, per call (s)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ml-from-scratch", help="a copy of eriklindernoren/ML-From-Scratch")
    parser.add_argument("--numpy-ml", help="a copy of ddbourgin/numpy-ml")
    parser.add_argument("--autograd", help="a copy of HIPS/autograd")
    parser.add_argument("--cs231n", help="a copy of a CS231n (2017) solution repository: "
                        "assignment2/cs231n and assignment3/cs231n")
    parser.add_argument("--min-char-rnn", help="a copy of a repository that holds karpathy's "
                        "min-char-rnn.py (a gist) unchanged")
    ns = parser.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory() as tmp:
        if ns.ml_from_scratch:
            _ml_from_scratch(ns.ml_from_scratch, Path(tmp) / "mlfs")
            ml_from_scratch_mlp()
            ml_from_scratch_rnn()
        if ns.numpy_ml:
            _numpy_ml(ns.numpy_ml, Path(tmp) / "numpy_ml")
            numpy_ml_mlp()
            numpy_ml_cnn()
            numpy_ml_lstm()
        if ns.min_char_rnn:
            min_char_rnn(ns.min_char_rnn, Path(tmp) / "min_char_rnn")
        if ns.cs231n:
            _cs231n(ns.cs231n, Path(tmp) / "cs231n", "assignment3")
            cs231n_captioning("rnn")
            cs231n_captioning("lstm")
            _cs231n(ns.cs231n, Path(tmp) / "cs231n", "assignment2")
            cs231n_fc_net()
        if ns.autograd:
            (Path(tmp) / "autograd").mkdir()
            fluidsim(ns.autograd, Path(tmp) / "autograd")


if __name__ == "__main__":
    main()
