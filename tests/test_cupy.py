"""The cupy path for real: every case of the gradient-check table compiled with
``device="cuda"``, in both forms and with the fused printer, called twice on cupy arrays,
against the numpy gradient.

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

# The user's own program means something else on cupy: x[idx] += v with a repeated index keeps
# one of the additions on numpy and leaves the result undefined on cupy.
CUPY_DIFFERS = {"update_repeated_index"}

# What cupy (14.2, checked on an H200) cannot run, by case and form, and why. None of these is
# a wrong answer: each raises from cupy, as the user's own function would on cupy arrays.
_FLOAT_ARGUMENT = "cupy functions take arrays, not Python floats (the user's own call fails too)"
_SCALAR_MODE = ("scalar mode mixes Python floats with cupy's 0-d arrays (an element read is a "
                "0-d array on cupy), which xp.array([...]) and xp.stack refuse")
CUPY_LACKS: dict[tuple[str, str], str] = {
    **{(name, form): _FLOAT_ARGUMENT for form in ("buffered", "plain") for name in (
        "sinc[]", "dot_scalar", "inner_1d_scalar", "outer_python_float_operand",
        "python_floats_through_inner_and_float", "outer_with_a_python_float_then_mean")},
    ("take_wrap", "buffered"): "cupy.take has no mode=",
    ("take_wrap", "plain"): "cupy.take has no mode=",
    ("cholesky_upper_batched", "buffered"): "cupy.linalg.cholesky has no upper=",
    ("cholesky_upper_batched", "plain"): "cupy.linalg.cholesky has no upper=",
    **{(name, "buffered"): _SCALAR_MODE for name in (
        "item_with_an_index", "one_element_read_twice", "element_of_a_size_one_constant",
        "written_through_a_view_in_scalar_mode", "update_lists_of_traced", "unrolled_break")},
}


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


@pytest.mark.parametrize("form", ["buffered", "plain", "fused"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cuda_gradient_equals_the_numpy_gradient(case: Case, form: str, tmp_path) -> None:
    """Both printers: the numpy printer's two forms, and the fused printer's (engine="fused",
    the plain form with CUDA kernels: what cupy lacks in the plain form, it lacks there too)."""
    buffers = form == "buffered"
    args = case.make_args(np.random.default_rng(1))
    expected = compile_grad(case.fn, args, buffers=buffers).fn(*args)
    engine = "fused" if form == "fused" else "numpy"

    def run():
        df = compile_grad(case.fn, args, buffers=buffers, device="cuda", out_dir=tmp_path,
                          engine=engine, module_name=f"gpu_{CASES.index(case)}_{form}").fn
        dargs = to_device(args)
        df(*dargs)                                   # work arrays reused on the second call
        return df(*dargs)

    if (case.name, "buffered" if buffers else "plain") in CUPY_LACKS:
        with pytest.raises(Exception):   # the list stays true: a case cupy learns fails here
            run()
        return
    got = run()
    if case.name in CUPY_DIFFERS:      # the list stays true: the value is not numpy's
        assert not np.allclose(to_host(got[0]), expected[0])
        return
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert g is None
            continue
        assert not isinstance(g, np.ndarray), f"output {i} came back on the host"
        g = to_host(g)
        assert np.shape(g) == np.shape(e), f"output {i}: shape {np.shape(g)} != {np.shape(e)}"
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9, err_msg=f"output {i} of {case.name}")
