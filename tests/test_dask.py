"""device="dask" (issue 35): the plain form with dask.array as xp, so that the gradient of a loss
over a dataset larger than memory is a lazy dask graph that dask.distributed computes.

The cluster test starts two worker processes with a memory limit and builds a logistic
regression dataset three times that limit, chunk by chunk from seeded generators (never
whole in any process); the gradient computed on the cluster is compared with numpy's on the
same chunks. Skipped without dask (``pip install 'yota-s2s[dask]'``); docs/dask.md.
"""
import logging
import time

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.errors import UsageError

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

FEATURES = 50
ROWS = 20_000                     # a chunk: 8 MB of X
CHUNKS = 75                       # 1.5M rows: X is 600 MB, y 12 MB
MEMORY_LIMIT = 200e6              # per worker (a worker process alone holds ~65 MB)
# dask's memory management as it comes: a worker spills the chunks it holds to its disk past
# 60% of its limit (X is read twice, forward and backward, and the scheduler may hold a chunk
# between the two), pauses at 80%, and its nanny ends it at 95%: the test checks that the
# cluster still has the workers it started with.


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def features(i: int) -> np.ndarray:
    return np.random.default_rng([35, i]).random((ROWS, FEATURES)) - 0.5


def labels(i: int) -> np.ndarray:
    return (np.random.default_rng([36, i]).random(ROWS) < 0.3).astype(np.float64)


def dataset(chunks: int = CHUNKS):
    """X and y as dask arrays whose chunks are made on the workers, as ``features(i)`` and
    ``labels(i)`` make them here. The tasks are numpy's calls and operators (delayed), so a
    worker imports nothing of this test (importing it would take a third of its memory)."""
    def rng(seed):
        return dask.delayed(np.random.default_rng, pure=True)(seed)
    X = [da.from_delayed(rng([35, i]).random((ROWS, FEATURES)) - 0.5, (ROWS, FEATURES),
                         np.float64) for i in range(chunks)]
    y = [da.from_delayed((rng([36, i]).random(ROWS) < 0.3).astype(np.float64), (ROWS,),
                         np.float64) for i in range(chunks)]
    return da.concatenate(X), da.concatenate(y)


def numpy_gradient(w: np.ndarray, chunks: int = CHUNKS) -> tuple[float, np.ndarray]:
    """The mean logistic loss and its gradient in numpy, chunk by chunk (handwritten:
    d/dz logaddexp(0, z) = sigmoid(z))."""
    total, grad, n = 0.0, np.zeros(FEATURES), ROWS * chunks
    for i in range(chunks):
        X, y = features(i), labels(i)
        z = X @ w
        total += np.sum(np.logaddexp(0.0, z) - y * z)
        grad += (np.exp(z - np.logaddexp(0.0, z)) - y) @ X
    return total / n, grad / n


def run_on_cluster(workers: int, chunks: int = CHUNKS) -> tuple[float, np.ndarray, float]:
    """The loss and gradient of ``logistic_loss`` over ``dataset(chunks)``, computed on a local
    cluster of ``workers`` processes of ``MEMORY_LIMIT`` each, and the seconds that took."""
    distributed = pytest.importorskip("dask.distributed")
    w = np.linspace(-0.5, 0.5, FEATURES)
    X, y = dataset(chunks)
    df = ys.simplegrad(logistic_loss, w, X, y, wrt=0, device="dask")
    with distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                                  memory_limit=MEMORY_LIMIT, dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        started = set(client.scheduler_info()["workers"])
        loss, dw, dX, dy = df(w, X, y)
        assert isinstance(loss, da.Array) and isinstance(dw, da.Array)     # lazy: a graph
        assert dX is None and dy is None
        start = time.perf_counter()
        loss, dw = dask.compute(loss, dw)
        elapsed = time.perf_counter() - start
        assert set(client.scheduler_info()["workers"]) == started, "a worker was restarted"
    return loss, dw, elapsed


def test_the_gradient_over_data_three_times_the_workers_memory_is_numpys():
    X, y = dataset()
    assert X.nbytes + y.nbytes > 3 * MEMORY_LIMIT
    loss, dw, _ = run_on_cluster(2)
    expected_loss, expected_dw = numpy_gradient(np.linspace(-0.5, 0.5, FEATURES))
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-10)
    np.testing.assert_allclose(dw, expected_dw, rtol=1e-10, atol=1e-13)


def _small():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(4)
    X = rng.standard_normal((30, 4))
    y = (rng.random(30) < 0.5).astype(np.float64)
    return w, X, y


def test_chunked_and_numpy_arguments_give_numpys_gradient_lazily():
    w, X, y = _small()
    Xd, yd = da.from_array(X, chunks=(7, 4)), da.from_array(y, chunks=7)
    df = ys.simplegrad(logistic_loss, w, Xd, yd, device="dask")
    expected = ys.simplegrad(logistic_loss, w, X, y)(w, X, y)
    for args in [(w, Xd, yd), (da.from_array(w, chunks=2), Xd, y), (w, X, y)]:
        got = dask.compute(*df(*args), scheduler="synchronous")
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-15)
    assert isinstance(df(w, Xd, yd)[1], da.Array)
    source = ys.source(df)
    assert "import dask.array as xp\n" in source and "out=" not in source   # the plain form
    with pytest.raises(TypeError, match=r"argument X must be float64\[30, 4\].*got a dask array "
                                        r"float64\[29, 4\]"):
        df(w, Xd[1:], yd)
    with pytest.raises(TypeError, match=r"argument y must be float64\[30\].*got \[0\.0\]"):
        df(w, Xd, [0.0])


def _never(block_info=None):
    raise AssertionError("compiling computed a chunk of the data")


def test_compiling_reads_the_shapes_of_dask_arguments_not_their_data():
    w, X, y = _small()
    never = da.map_blocks(_never, dtype=np.float64, chunks=((10, 10, 10), (4,)))
    df = ys.simplegrad(logistic_loss, w, never, y, wrt=0, device="dask")
    value, dw = dask.compute(*df(w, X, y)[:2], scheduler="synchronous")
    e_value, e_dw = ys.simplegrad(logistic_loss, w, X, y, wrt=0)(w, X, y)[:2]
    np.testing.assert_allclose(dw, e_dw, rtol=1e-12)


def test_ys_grad_compiles_once_for_dask_arrays_of_one_shape(monkeypatch):
    import yota_s2s.api as api
    compiles = []
    compile_grad = api.compile_grad
    monkeypatch.setattr(api, "compile_grad", lambda *a, **k: compiles.append(1) or
                        compile_grad(*a, **k))
    w, X, y = _small()
    Xd, yd = da.from_array(X, chunks=(7, 4)), da.from_array(y, chunks=7)
    first = ys.grad(logistic_loss, w, Xd, yd, wrt=0, device="dask")
    compiled = len(compiles)
    again = ys.grad(logistic_loss, w, da.from_array(X, chunks=(15, 4)), yd, wrt=0, device="dask")
    assert len(compiles) == compiled      # another chunking: the same module
    expected = ys.grad(logistic_loss, w, X, y, wrt=0)
    for got in (first, again):
        value, (dw, dX, dy) = dask.compute(*got, scheduler="synchronous")
        np.testing.assert_allclose(value, expected[0], rtol=1e-12)
        np.testing.assert_allclose(dw, expected[1][0], rtol=1e-12)
        assert dX is None and dy is None


def log_det(A):
    return np.log(np.linalg.det(A @ A.T + 1.0))


def test_a_call_dask_array_lacks_is_refused_when_compiling_with_the_line_that_needs_it():
    A = np.random.default_rng(0).standard_normal((3, 3))
    with pytest.raises(UsageError, match=r"xp\.linalg\.det for test_dask\.py:\d+ .*dask\.array "
                                         r"has no linalg\.det"):
        ys.simplegrad(log_det, da.from_array(A), device="dask")


def test_a_dask_argument_compiled_for_numpy_is_refused():
    w, X, y = _small()
    with pytest.raises(UsageError, match=r"(?s)argument X is a dask array, and the gradient "
                                         r"is compiled for device='cpu'.*device=\"dask\".*"
                                         r"X\.compute\(\)"):
        ys.simplegrad(logistic_loss, w, da.from_array(X), y)
