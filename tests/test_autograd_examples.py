"""tools/autograd_examples.py: an autograd-style example, its imports ported, runs statement by
statement with its gradient calls recorded (autograd's own examples are read from a copy of its
repository when the tool runs; this one stands in for them)."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import autograd_examples  # noqa: E402

EXAMPLE = '''import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad
from autograd.misc.optimizers import adam


def loss(w, i):
    return np.sum(np.tanh(w) ** 2)


if __name__ == "__main__":
    w0 = npr.RandomState(0).randn(3)
    print(grad(loss)(w0, 0))
    w = adam(grad(loss), w0, num_iters=100)
    not_defined
'''


def test_an_example_runs_ported_with_its_gradient_calls_recorded(tmp_path, monkeypatch):
    text = autograd_examples.ported(EXAMPLE)
    assert text.splitlines()[:4] == ["import numpy as np", "import numpy.random as npr",
                                     "from yota_s2s import gradient as grad",
                                     "from autograd_examples import adam"]
    monkeypatch.setitem(sys.modules, "autograd_examples", autograd_examples)
    (tmp_path / "toy.py").write_text(text)
    run = autograd_examples.run_example("toy", tmp_path, iters=2)
    assert run.failed == [(15, "NameError: name 'not_defined' is not defined")]
    assert len(run.calls) == 3                      # the print, then adam's first 2 steps
    (value,), (gradient,) = run.calls[0]
    w0 = np.random.RandomState(0).randn(3)
    assert np.isclose(value, np.sum(np.tanh(w0) ** 2))
    assert np.allclose(gradient, 2 * np.tanh(w0) * (1 - np.tanh(w0) ** 2))
    assert np.allclose(run.printed, gradient, rtol=1e-7)
    notes, worst = autograd_examples.compare(run, run)
    assert (notes, worst) == ("12 values and gradient entries, 3 printed numbers", 0.0)


def test_an_import_of_autograd_without_a_port_is_an_error():
    with pytest.raises(SystemExit, match="no port for the import 'from autograd import hessian'"):
        autograd_examples.ported("from autograd import hessian\n")
