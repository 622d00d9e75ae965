"""autograd.scipy.signal: scipy.signal, except ``convolve``, autograd's own generalization
(``axes``, ``dot_axes``), which is scipy's ``convolve`` when neither is given."""
from scipy.signal import *  # noqa: F401, F403
from scipy.signal import convolve as _convolve

from ._internal import OutOfScope


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):
    if axes is not None or len(dot_axes[0]) + len(dot_axes[1]) > 0:
        raise OutOfScope("autograd.scipy.signal.convolve with axes/dot_axes: autograd's own function")
    return _convolve(A, B, mode=mode)
