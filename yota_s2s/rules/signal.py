"""Convolution and Fourier transforms in numpy: ``np.convolve`` and ``np.correlate`` (modes
full, same, valid; real 1-D inputs), ``np.fft``: fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn
irfftn (with ``n``/``s``, ``axis``/``axes`` and ``norm``), fftshift ifftshift.

Each is linear in each operand, so its gradient is the transposed map: for a convolution a
correlation of the incoming gradient (placed in the full-length output) with the other operand;
for the discrete Fourier transform, whose matrix is symmetric, the same transform of ``dy``
(autograd's convention for complex values: no conjugates), cut or zero-padded back to the
input's length where ``n`` changed it. ``rfft`` reads a real input, so its gradient is the real
part of an ``fft`` of ``dy`` padded to the full spectrum; ``irfft`` counts each frequency other
than 0 and n/2 twice (``conj(c_k)`` stands for the negative frequency).
"""
import numpy as np

from .reductions import conj_if_complex as cj  # noqa: F401  (named in rules below)
from .registry import diffrule, primitive

primitive(np.convolve, "a, v, mode='full'", multilinear=True)
primitive(np.correlate, "a, v, mode='valid'", multilinear=True)


# ----- convolve, correlate ----------------------------------------------------------------
def full_output(dy, a, v, mode, correlate=False):
    """``dy`` placed where ``mode`` cut it from the full output (``len(a) + len(v) - 1``)."""
    n_full = np.shape(a)[0] + np.shape(v)[0] - 1
    start = mode_start(a, v, mode, correlate)
    return np.pad(dy, (start, n_full - start - np.shape(dy)[0]))


def mode_start(a, v, mode, correlate=False):
    """Where the output of ``mode`` starts in the full output."""
    m, n = np.shape(a)[0], np.shape(v)[0]
    if mode == "full":
        return 0
    if mode == "valid":
        return min(m, n) - 1
    if correlate and n > m:
        return m // 2
    return (min(m, n) - 1) // 2


# For complex operands: np.correlate conjugates its second operand, np.convolve does not, so
# each rule conjugates (cj) where the other one would (docs/complex.md).
diffrule(np.convolve,  "a", "np.correlate(full_output(dy, a, v, mode), cj(v), 'valid')")
diffrule(np.convolve,  "v", "np.correlate(full_output(dy, a, v, mode), cj(a), 'valid')")
diffrule(np.correlate, "a", "np.convolve(full_output(dy, a, v, mode, True), cj(v), 'valid')")
diffrule(np.correlate, "v", "np.correlate(full_output(cj(dy), a, v, mode, True), a, 'valid')[::-1]")


# ----- fft ----------------------------------------------------------------------------------
def fit(g, shape, axes):
    """``g`` cut or zero-padded along ``axes`` to the lengths of ``shape`` there."""
    for axis in axes:
        length, have = shape[axis], np.shape(g)[axis]
        if have > length:
            g = np.take(g, np.arange(length), axis=axis)
        elif have < length:
            widths = [(0, 0)] * np.ndim(g)
            widths[axis] = (0, length - have)
            g = np.pad(g, widths)
    return g


def fft_axes(a, s, axes):
    """The axes an n-dimensional transform works on (numpy's defaults)."""
    if axes is not None:
        return tuple(axes)
    count = np.ndim(a) if s is None else len(s)
    return tuple(range(-count, 0))


for fft in (np.fft.fft, np.fft.fft2, np.fft.fftn, np.fft.ifft, np.fft.ifft2, np.fft.ifftn,
            np.fft.rfft, np.fft.irfft, np.fft.rfft2, np.fft.rfftn, np.fft.irfft2, np.fft.irfftn,
            np.fft.fftshift, np.fft.ifftshift):
    primitive(fft, linear=True)       # forward mode: the transform of the tangent
for fft, fft2, fftn in ((np.fft.fft, np.fft.fft2, np.fft.fftn),
                        (np.fft.ifft, np.fft.ifft2, np.fft.ifftn)):
    diffrule(fft,  "a", f"fit(np.fft.{fft.__name__}(dy, axis=axis, norm=norm), "
                        "np.shape(a), (axis,))", ignores=("n", "out"))     # fit: n
    diffrule(fft2, "a", f"fit(np.fft.{fft2.__name__}(dy, axes=axes, norm=norm), "
                        "np.shape(a), axes)", ignores=("s", "out"))        # fit: s
    diffrule(fftn, "a", f"fit(np.fft.{fftn.__name__}(dy, axes=fft_axes(a, s, axes), norm=norm), "
                        "np.shape(a), fft_axes(a, s, axes))", ignores=("out",))


@diffrule(np.fft.rfft, "a", ignores=("out",))
def rfft_grad(a, dy, n=None, axis=-1, norm=None):
    """The real part of the fft of ``dy`` zero-padded to the full spectrum."""
    length = np.shape(a)[axis] if n is None else n
    full = fit(dy, np.shape(dy)[:axis % np.ndim(dy)] + (length,) +
               np.shape(dy)[axis % np.ndim(dy) + 1:], (axis,))
    return fit(np.real(np.fft.fft(full, axis=axis, norm=norm)), np.shape(a), (axis,))


@diffrule(np.fft.rfftn, "a", ignores=("out",))
def rfftn_grad(a, dy, s=None, axes=None, norm=None):
    """The real part of the fftn of ``dy`` zero-padded to the full spectrum on the last axis."""
    axes = fft_axes(a, s, axes)
    last = axes[-1] % np.ndim(dy)
    length = np.shape(a)[last] if s is None else s[-1]
    full = fit(dy, np.shape(dy)[:last] + (length,) + np.shape(dy)[last + 1:], (last,))
    return fit(np.real(np.fft.fftn(full, axes=axes, norm=norm)), np.shape(a), axes)


@diffrule(np.fft.irfftn, "a", ignores=("out",))
def irfftn_grad(a, y, dy, s=None, axes=None, norm=None):
    """``ifftn(dy)`` at the frequencies ``irfftn`` reads on the last axis, doubled there but
    for 0 and n/2."""
    axes = fft_axes(a, s, axes)
    last = axes[-1] % np.ndim(dy)
    length = np.shape(y)[last]
    half = length // 2 + 1
    twice = [1.0] + [2.0] * (half - 2) + [1.0 if length % 2 == 0 else 2.0]
    g = np.take(np.fft.ifftn(dy, axes=axes, norm=norm), np.arange(half), axis=last)
    shape = [1] * np.ndim(dy)
    shape[last] = half
    return fit(g * np.reshape(np.array(twice[:half]), shape), np.shape(a), axes)


diffrule(np.fft.rfft2,  "a", "rfftn_grad(a, dy, s, axes, norm)", ignores=("out",))
diffrule(np.fft.irfft2, "a", "irfftn_grad(a, y, dy, s, axes, norm)", ignores=("out",))
diffrule(np.fft.fftshift,  "x", "np.fft.ifftshift(dy, axes)")      # a roll: back the other way
diffrule(np.fft.ifftshift, "x", "np.fft.fftshift(dy, axes)")


@diffrule(np.fft.irfft, "a", ignores=("out",))
def irfft_grad(a, y, dy, n=None, axis=-1, norm=None):
    """``ifft(dy)`` at the frequencies ``irfft`` reads, doubled but for 0 and n/2."""
    length = np.shape(y)[axis]
    half = length // 2 + 1
    twice = [1.0] + [2.0] * (half - 2) + [1.0 if length % 2 == 0 else 2.0]
    g = np.take(np.fft.ifft(dy, axis=axis, norm=norm), np.arange(half), axis=axis)
    shape = [1] * np.ndim(dy)
    shape[axis] = half
    return fit(g * np.reshape(np.array(twice), shape), np.shape(a), (axis,))
