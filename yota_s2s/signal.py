"""``ys.signal``: autograd's ``autograd.scipy.signal``, which scipy has no counterpart of.

``convolve(A, B, axes=None, dot_axes=((), ()), mode='full')`` convolves ``A`` and ``B`` along
the pairs of ``axes``, sums along those of ``dot_axes`` and keeps every other axis, as
autograd's does (its ``convnet`` example's layers); rules/convolution.py defines it and its
gradients. Port ``import autograd.scipy.signal`` as ``import yota_s2s.signal``.
"""
from .rules.convolution import convolve

__all__ = ["convolve"]
