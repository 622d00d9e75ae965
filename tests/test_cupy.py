"""The cupy path for real: every case of the gradient-check table compiled with
``device="cuda"``, in both forms, called twice on cupy arrays, against the numpy gradient.

Skipped where cupy or a CUDA device is missing (CI has neither); run on a GPU machine with
``python -m pytest -q tests/test_cupy.py``. Cases that cupy itself cannot run are listed in
``CUPY_LACKS`` with the reason, and the test checks that they still fail, so the list stays true.
"""
from __future__ import annotations

import numpy as np
import pytest

from yota_s2s.compiler import compile_grad

from .test_gradcheck import CASES, Case

cp = pytest.importorskip("cupy")
try:
    HAS_DEVICE = cp.cuda.runtime.getDeviceCount() > 0
except Exception:                                   # no driver, or no device
    HAS_DEVICE = False
pytestmark = pytest.mark.skipif(not HAS_DEVICE, reason="no CUDA device")

CUPY_LACKS: dict[str, str] = {}


def to_device(value):
    if isinstance(value, np.ndarray):
        return cp.asarray(value)
    if isinstance(value, tuple):
        return tuple(to_device(v) for v in value)
    if isinstance(value, list):
        return [to_device(v) for v in value]
    return value


def to_host(value):
    if isinstance(value, cp.ndarray):
        return value.get()
    return value


@pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cuda_gradient_equals_the_numpy_gradient(case: Case, buffers: bool, tmp_path) -> None:
    args = case.make_args(np.random.default_rng(1))
    expected = compile_grad(case.fn, args, buffers=buffers).fn(*args)

    def run():
        df = compile_grad(case.fn, args, buffers=buffers, device="cuda", out_dir=tmp_path,
                          module_name=f"gpu_{CASES.index(case)}_{int(buffers)}").fn
        dargs = to_device(args)
        df(*dargs)                                   # work arrays reused on the second call
        return df(*dargs)

    if case.name in CUPY_LACKS:
        with pytest.raises(Exception):
            run()
        return
    got = run()
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert g is None
            continue
        assert not isinstance(g, np.ndarray), f"output {i} came back on the host"
        g = to_host(g)
        assert np.shape(g) == np.shape(e), f"output {i}: shape {np.shape(g)} != {np.shape(e)}"
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9, err_msg=f"output {i} of {case.name}")
