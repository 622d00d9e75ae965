"""``scipy.signal`` and ``scipy.linalg`` (loaded when scipy is installed): convolve and
correlate (n-dimensional, modes full, same, valid; real inputs), solve_triangular (lower,
trans, unit_diagonal), solve_banded (real), cholesky (lower), sqrtm and solve_sylvester (which
sqrtm's rule calls).

A convolution's gradient is a correlation of the incoming gradient, placed where ``mode`` cut
the output from the full one (scipy centres it), with the other operand; ``correlate(a, b)``
is ``convolve(a, b flipped on every axis)``. The linear-algebra rules hold where the function
is differentiable: an invertible triangle, a positive-definite matrix (cholesky), a matrix
whose square root has no eigenvalues summing to zero (sqrtm). Where scipy reads one triangle
(solve_triangular, cholesky), the gradient is that triangle's; solve_banded's, its band's.
"""
import numpy as np
from scipy.linalg import cholesky, solve_banded, solve_sylvester, solve_triangular, sqrtm
from scipy.signal import convolve, correlate

from .linalg import REAL_MATRICES, cholesky_grad  # noqa: F401  (named in a rule below)
from .products import mT
from .reductions import conj_if_complex as cj  # noqa: F401  (named in rules below)
from .registry import diffrule, primitive

primitive(convolve, "in1, in2, mode='full', method='auto'", module="scipy.signal", multilinear=True)
primitive(correlate, "in1, in2, mode='full', method='auto'", module="scipy.signal", multilinear=True)
primitive(solve_triangular, "a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, "
          "check_finite=True", module="scipy.linalg")
primitive(cholesky, "a, lower=False, overwrite_a=False, check_finite=True", module="scipy.linalg",
          real_only=REAL_MATRICES)
primitive(solve_banded, "l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, "
          "check_finite=True", module="scipy.linalg", real_only=REAL_MATRICES)
primitive(sqrtm, "A", module="scipy.linalg")
primitive(solve_sylvester, "a, b, q", module="scipy.linalg")


# ----- convolve, correlate ----------------------------------------------------------------
def full_output(dy, in1, in2):
    """``dy`` placed in the full output (``s1 + s2 - 1`` per axis) where scipy's ``mode``
    centred it (a full ``dy`` stays as it is)."""
    full = [m + n - 1 for m, n in zip(np.shape(in1), np.shape(in2))]
    widths = [((f - d) // 2, f - d - (f - d) // 2) for f, d in zip(full, np.shape(dy))]
    return np.pad(dy, widths)


# For complex operands: correlate conjugates its second operand, convolve does not, so each
# rule conjugates (cj) where the other one would (docs/complex.md).
diffrule(convolve,  "in1", "correlate(full_output(dy, in1, in2), cj(in2), 'valid')",
         ignores=("mode", "method"))        # full_output reads the mode from dy's shape
diffrule(convolve,  "in2", "correlate(full_output(dy, in1, in2), cj(in1), 'valid')",
         ignores=("mode", "method"))
diffrule(correlate, "in1", "convolve(full_output(dy, in1, in2), cj(in2), 'valid')",
         ignores=("mode", "method"))
diffrule(correlate, "in2", "np.flip(correlate(full_output(cj(dy), in1, in2), in1, 'valid'))",
         ignores=("mode", "method"))


# ----- linear algebra ---------------------------------------------------------------------
def transposed(trans):
    """scipy's ``trans`` (0, 1, 2, 'N', 'T', 'C') as a bool: solve with a.T."""
    return trans in (1, 2, "T", "C")


def other_side(trans):
    """The ``trans`` that solves with the other side of ``a``."""
    return 0 if transposed(trans) else 1


def triangle_read(g, lower=False, unit_diagonal=False):
    """``g`` on the triangle solve_triangular reads (without the diagonal for a unit one)."""
    if unit_diagonal:
        return np.tril(g, -1) if lower else np.triu(g, 1)
    return np.tril(g) if lower else np.triu(g)


diffrule(solve_triangular, "b", "solve_triangular(a, dy, trans=other_side(trans), lower=lower, "
                                "unit_diagonal=unit_diagonal)",
         ignores=("overwrite_b", "check_finite"))


@diffrule(solve_triangular, "a", ignores=("overwrite_b", "check_finite"))
def solve_triangular_grad_a(a, b, y, dy, trans=0, lower=False, unit_diagonal=False):
    """With ``g`` the gradient of ``b``: ``-g y^T`` (``-y g^T`` for ``trans``), on the triangle."""
    g = solve_triangular(a, dy, trans=other_side(trans), lower=lower, unit_diagonal=unit_diagonal)
    if np.ndim(b) == 1:
        g, y = g[:, None], y[:, None]
    grad = -y @ mT(g) if transposed(trans) else -g @ mT(y)
    return triangle_read(grad, lower, unit_diagonal)


def banded_to_dense(l_and_u, ab):
    """The matrix ``A`` that solve_banded reads from ``ab``: ``A[i, j] = ab[u + i - j, j]``,
    each row of ``ab`` a diagonal ``d = j - i`` from ``-l`` to ``u``."""
    lower, upper = l_and_u
    n = np.shape(ab)[1]
    return sum(np.diag(ab[upper - d, max(0, d):n + min(0, d)], d) for d in range(-lower, upper + 1))


def dense_to_banded(l_and_u, m):
    """The band of ``m`` as solve_banded's ``ab`` (zero where a diagonal is shorter)."""
    lower, upper = l_and_u
    return np.stack([np.pad(np.diagonal(m, d), (max(0, d), max(0, -d)))
                     for d in range(upper, -lower - 1, -1)])


@diffrule(solve_banded, "b", ignores=("overwrite_ab", "overwrite_b", "check_finite"))
def solve_banded_grad_b(l_and_u, ab, b, dy):
    """``A^-T dy``, with ``A`` the banded matrix."""
    return np.linalg.solve(mT(banded_to_dense(l_and_u, ab)), dy)


@diffrule(solve_banded, "ab", ignores=("overwrite_ab", "overwrite_b", "check_finite"))
def solve_banded_grad_ab(l_and_u, ab, b, y, dy):
    """``-g y^T`` (g the gradient of ``b``) on the band that ``ab`` holds."""
    g = np.linalg.solve(mT(banded_to_dense(l_and_u, ab)), dy)
    if np.ndim(b) == 1:
        g, y = g[:, None], y[:, None]
    return dense_to_banded(l_and_u, -g @ mT(y))


diffrule(cholesky, "a", "cholesky_grad(a, y, dy, not lower)",
         ignores=("overwrite_a", "check_finite"))     # upper unless lower=True

# sqrtm: X X = A, so X dX + dX X = dA, and dA = the solution G of X^T G + G X^T = dX.
diffrule(sqrtm, "A", "solve_sylvester(mT(y), mT(y), dy)")
diffrule(solve_sylvester, "q", "solve_sylvester(mT(a), mT(b), dy)")
diffrule(solve_sylvester, "a", "-solve_sylvester(mT(a), mT(b), dy) @ mT(y)")
diffrule(solve_sylvester, "b", "-mT(y) @ solve_sylvester(mT(a), mT(b), dy)")
