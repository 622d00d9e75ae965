"""autograd.scipy.signal: scipy.signal, except ``convolve``, autograd's own generalization
(``axes``, ``dot_axes``): ``ys.signal.convolve``."""
from scipy.signal import *  # noqa: F401, F403

from yota_s2s.signal import convolve  # noqa: F401
