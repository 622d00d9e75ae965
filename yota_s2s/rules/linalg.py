"""Linear algebra: ``np.linalg`` inv pinv det slogdet solve cholesky eigh eig svd qr norm.

Each rule holds where the function is differentiable, and says so: an invertible matrix
(inv, slogdet, solve), constant rank (pinv), a positive-definite matrix (cholesky),
distinct eigenvalues or singular values (eigh, eig, svd), full column rank (qr). Where numpy reads
only one triangle of a symmetric input (cholesky, eigh), the gradient is the exact one for that
triangle, so it agrees with finite differences on any input. Batched inputs (``(..., n, n)``)
work throughout; ``mT`` swaps the last two axes.
"""
import numpy as np

from .products import mT
from .registry import batchrule, diffrule, primitive
from .reductions import conj_if_complex, other_products, restore_axes

primitive(np.linalg.inv, "a")
REAL_MATRICES = "its rule is written for real matrices (a complex one needs conjugate transposes)"
primitive(np.linalg.pinv, "a, rcond=None, hermitian=False", real_only=REAL_MATRICES)
primitive(np.linalg.det, "a")
primitive(np.linalg.slogdet, "a", nout=2)
primitive(np.linalg.solve, "a, b")
primitive(np.linalg.cholesky, "a, upper=False", real_only=REAL_MATRICES)
primitive(np.linalg.eigh, "a, UPLO='L'", nout=2)
primitive(np.linalg.eig, "a", nout=2)
primitive(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False", nout=3)
primitive(np.linalg.qr, "a, mode='reduced'", nout=2, real_only=REAL_MATRICES)
primitive(np.linalg.norm, "x, ord=None, axis=None, keepdims=False")


def svd_values(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``np.linalg.svd(a, compute_uv=False)``: the singular values only."""
    return np.linalg.svd(a, full_matrices, False, hermitian)


primitive(svd_values, "a, full_matrices=True, compute_uv=True, hermitian=False",
          name="svd_values", emit=("call", "xp.linalg.svd"))

diffrule(np.linalg.inv, "a", "-mT(y) @ dy @ mT(y)")


def per_matrix(scale, a):
    """A value per matrix of ``a``, shaped to scale whole matrices."""
    return scale if np.ndim(a) == 2 else np.expand_dims(scale, (-2, -1))


@diffrule(np.linalg.det, "a")
def det_grad(a, y, dy):
    """d det(a) / da is the cofactor matrix (the adjugate transposed; ``det(a) inv(a).T`` for
    an invertible ``a``), finite at a singular ``a`` too; so is its own derivative, at repeated
    singular values too (``cofactor``)."""
    return per_matrix(dy, a) * cofactor(a, y)


def cofactor(a, det):
    """The cofactor matrix of ``a`` (``det`` its determinant), by formulas whose own derivative
    (det's second order) is right too, at repeated singular values and at singular matrices:

    - up to 5 x 5, the definition: each entry the signed determinant of ``a`` without that
      entry's row and column. Exact at every matrix and to every order (its derivative is
      det's rule again, one size down); it costs n^2 small determinants, which up to 5 x 5
      is no more than the factorizations below.
    - larger, ``det(a) inv(a).T`` where ``a`` is well conditioned (det's and inv's rules are
      smooth there: the identity, an orthogonal matrix), and where it is nearly singular, from
      its SVD ``u diag(s) vh``: ``det(u) det(vh) conj(u) diag(the product of the other s)
      conj(vh)``, with no division; the second order there goes through svd's rule and needs
      the singular values distinct (a 6 x 6 singular projection's Hessian is nan). Each formula
      reads a harmless matrix where the other is chosen (the identity; singular values
      n, ..., 1), so the branch not taken sends no nan back.
    """
    n = np.shape(a)[-1]
    if n == 1:
        return np.ones_like(a)
    if n <= 5:
        keep = np.array([[k for k in range(n) if k != i] for i in range(n)], int).reshape(n, -1)
        minors = a[..., keep[:, None, :, None], keep[None, :, None, :]]    # (..., n, n, n-1, n-1)
        signs = np.array([[(-1.0) ** (i + j) for j in range(n)] for i in range(n)])
        return signs * np.linalg.det(minors)
    s = np.linalg.svd(a, compute_uv=False)
    taken = per_matrix(s[..., -1] > s[..., 0] * np.finfo(a.dtype).eps ** 0.5, a)
    by_inverse = per_matrix(det, a) * mT(np.linalg.inv(np.where(taken, a, np.eye(n))))
    u, s, vh = np.linalg.svd(np.where(taken, np.diag(np.arange(n, 0.0, -1.0)), a))
    phase = np.linalg.det(u) * np.linalg.det(vh)
    others = np.expand_dims(other_products(s), -2)
    by_svd = per_matrix(phase, a) * ((np.conj(u) * others) @ np.conj(vh))
    return np.where(taken, by_inverse, by_svd)


SINGULAR_LOGDET = (
    "np.linalg.slogdet of a singular matrix (at the example arguments): its log-determinant "
    "is -inf (numpy's value is (0, -inf)) and has no gradient (inv(a).T does not exist)",
    "Differentiate at an invertible matrix, or differentiate np.linalg.det(a): its gradient, "
    "the cofactor matrix, is finite at a singular matrix.")


@diffrule(np.linalg.slogdet, "a", domain=SINGULAR_LOGDET)
def slogdet_grad(a, dy):
    """d log|det a| / da = inv(a).T (for a complex ``a`` too: log|det a| = Re log det a), at an
    invertible ``a``: at a singular one log|det a| is -inf with no gradient, and compiling
    says so. The sign is piecewise constant, but not for a complex ``a``: refused there."""
    dsign, dlog = dy
    if dsign is not None and np.iscomplexobj(a):
        raise NotImplementedError("the gradient through the sign of slogdet of a complex "
                                  "matrix (use the log-determinant, or np.linalg.det)")
    if dlog is None:
        return None
    return per_matrix(dlog, a) * mT(np.linalg.inv(a))


@diffrule(np.linalg.pinv, "a", ignores=("rcond", "hermitian"))
def pinv_grad(a, y, dy):
    """Golub and Pereyra's derivative of the pseudo-inverse, valid where the rank is constant
    (near full-rank inputs)."""
    m, n = np.shape(a)[-2:]
    t1 = -mT(y) @ dy @ mT(y)
    t2 = (np.eye(m) - a @ y) @ mT(dy) @ y @ mT(y)
    t3 = mT(y) @ y @ mT(dy) @ (np.eye(n) - y @ a)
    return t1 + t2 + t3


diffrule(np.linalg.solve, "b", "np.linalg.solve(mT(a), dy)")


@diffrule(np.linalg.solve, "a")
def solve_grad_a(a, b, y, dy):
    """With ``g = solve(a.T, dy)``: ``da = -g y.T`` (an outer product for a vector ``b``)."""
    g = np.linalg.solve(mT(a), dy)
    if np.ndim(b) == 1:
        return -np.expand_dims(g, -1) * np.expand_dims(y, -2)
    return -g @ mT(y)


def triangle_grad(g, lower=True):
    """The gradient for the triangle numpy reads of a symmetric (Hermitian) input, from ``g``,
    as if both triangles were one parameter: doubled off the diagonal (``hermitian``)."""
    both = g + conj_of(g, mT(g))
    strict = np.tril(both, -1) if lower else np.triu(both, 1)
    return strict + real_of(g) * np.eye(np.shape(g)[-1])


@diffrule(np.linalg.cholesky, "a")
def cholesky_grad(a, y, dy, upper=False):
    """Murray (2016): with ``phi`` the lower triangle with its diagonal halved,
    ``S = L^-T phi(L^T dL) L^-1``, symmetrized. ``a`` must be positive definite."""
    low, dlow = (mT(y), mT(dy)) if upper else (y, dy)
    n = np.shape(a)[-1]
    phi = np.tril(mT(low) @ dlow) * (1.0 - 0.5 * np.eye(n))
    s = np.linalg.solve(mT(low), mT(np.linalg.solve(mT(low), mT(phi))))
    return triangle_grad((s + mT(s)) / 2, lower=not upper)


@diffrule(np.linalg.eigh, "a")
def eigh_grad(a, y, dy, UPLO="L"):
    """``V diag(dw) V^T + V (F * V^T dV) V^T`` with ``F_ij = 1 / (w_j - w_i)``: the
    eigenvalues must be distinct for the eigenvector part (complex ``a``: ``hermitian``)."""
    w, v = y
    dw, dv = dy
    n = np.shape(a)[-1]
    g = 0.0
    if dw is not None:
        g = (conj_of(a, v) * np.expand_dims(dw, -2)) @ mT(v)
    if dv is not None:
        eye = np.eye(n)
        gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1) + eye
        g = g + conj_of(a, v) @ ((mT(v) @ dv) * (1.0 - eye) / gaps) @ mT(v)
    return triangle_grad(g, lower=UPLO == "L")


@diffrule(np.linalg.eig, "a")
def eig_grad(a, y, dy):
    """autograd's: ``V^-T (diag(dw) + F * V^T dV - F * (V^T conj(V) (Re(V^T dV) * I))) V^T``
    with ``F_ij = 1 / (w_j - w_i)`` off the diagonal: the eigenvalues must be distinct (a
    real matrix's may be complex pairs; its gradient is the real part)."""
    w, v = y
    dw, dv = dy
    eye = np.eye(np.shape(a)[-1])
    vt = mT(v)
    inner = 0.0
    if dw is not None:
        inner = np.expand_dims(dw, -2) * eye
    if dv is not None:
        f = (1.0 - eye) / (np.expand_dims(w, -2) - np.expand_dims(w, -1) + eye)
        vt_dv = vt @ dv
        inner = inner + f * vt_dv - f * ((vt @ np.conj(v)) @ (np.real(vt_dv) * eye))
    return np.linalg.solve(vt, inner @ vt)


@diffrule(np.linalg.svd, "a", ignores=("compute_uv", "hermitian"))
def svd_grad(a, y, dy, full_matrices=True):
    """Townsend (2016), as in autograd: needs distinct nonzero singular values, and
    ``full_matrices=False`` unless ``a`` is square (complex ``a``: ``hermitian``)."""
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError("the gradient of np.linalg.svd of a non-square matrix needs "
                                  "full_matrices=False")
    u, s, vt = y
    du, ds, dvt = dy
    k = min(m, n)
    eye = np.eye(k)
    f = 1.0 / (np.expand_dims(s, -2) ** 2 - np.expand_dims(s, -1) ** 2 + eye)
    v = mT(vt)
    inner = 0.0 if ds is None else eye * np.expand_dims(ds, -2)
    if du is not None:
        utdu = mT(u) @ du
        inner = phase_diagonal(a, utdu, s, inner + f * skew(a, utdu) * np.expand_dims(s, -2))
    if dvt is not None:
        vtdv = conj_of(a, vt @ mT(dvt))
        inner = inner + np.expand_dims(s, -1) * (f * skew(a, vtdv))
    g = conj_of(a, u) @ inner @ conj_of(a, vt)
    if du is not None and m > n:
        g = g + (np.eye(m) - conj_of(a, u) @ mT(u)) @ du / np.expand_dims(s, -2) @ conj_of(a, vt)
    if dvt is not None and m < n:
        g = g + (conj_of(a, u) / np.expand_dims(s, -2)) @ dvt @ (np.eye(n) - v @ conj_of(a, vt))
    return g


@diffrule(svd_values, "a", ignores=("full_matrices", "compute_uv", "hermitian"))
def svd_values_grad(a, dy):
    """d s / d a = U diag(ds) V^T, for distinct singular values."""
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    return conj_if_complex((u * np.expand_dims(dy, -2)) @ vt)


@diffrule(np.linalg.qr, "a")
def qr_grad(a, y, dy, mode="reduced"):
    """For ``a = QR`` with full column rank and m >= n (reduced): with
    ``M = R dR^T - dQ^T Q``, ``da = (dQ + Q copyltu(M)) R^-T``."""
    m, n = np.shape(a)[-2:]
    if m < n or mode != "reduced":
        raise NotImplementedError("the gradient of np.linalg.qr needs mode='reduced' and a "
                                  "matrix with at least as many rows as columns")
    q, r = y
    dq, dr = dy
    big = 0.0 if dr is None else r @ mT(dr)
    if dq is not None:
        big = big - mT(dq) @ q
    low = np.tril(big, -1)
    sym = low + mT(low) + big * np.eye(n)
    total = q @ sym if dq is None else dq + q @ sym
    return mT(np.linalg.solve(r, mT(total)))


@diffrule(np.linalg.norm, "x")
def norm_grad(x, y, dy, ord=None, axis=None, keepdims=False):
    """Vector norms (any ``ord``) along ``axis`` or of a flattened array; matrix norms ('fro',
    'nuc', 1, -1, 2, -2, inf, -inf) of a 2-D array or along a pair of axes. A norm is real:
    for a complex ``x`` its gradient is the conjugate of the real formula (np.sign(x) is
    x / |x| there)."""
    return conj_if_complex(real_norm_grad(x, y, dy, ord, axis, keepdims))


def real_norm_grad(x, y, dy, ord, axis, keepdims):
    if ord is None or ord == "fro" and axis is None:
        return x * restore_axes(dy / y, axis, keepdims)
    if axis is None and np.ndim(x) == 2 or isinstance(axis, tuple) and len(axis) == 2:
        return matrix_norm_grad(x, y, dy, ord, axis, keepdims)
    return vector_norm_grad(x, y, dy, ord, axis, keepdims)


def vector_norm_grad(x, y, dy, ord, axis, keepdims):
    """(sum |x|^p)^(1/p): ``sign(x) |x|^(p-1) / y^(p-1)``; at p = inf the largest |x| share."""
    y, dy = restore_axes(y, axis, keepdims), restore_axes(dy, axis, keepdims)
    if ord == 0:
        return np.zeros_like(x)
    if ord == np.inf or ord == -np.inf:
        hit = np.abs(x) == y
        return dy * np.sign(x) * hit / np.sum(hit, axis=axis, keepdims=True)
    if ord == 1:
        return dy * np.sign(x)
    if ord == 2:
        return dy * x / y
    if np.iscomplexobj(x):      # sign(x) |x|^(p-1) as x |x|^(p-2): np.sign(z) has no derivative
        return dy * x * np.abs(x) ** (ord - 2) / y ** (ord - 1)
    return dy * np.sign(x) * np.abs(x) ** (ord - 1) / y ** (ord - 1)


def matrix_norm_grad(x, y, dy, ord, axis, keepdims):
    rows, cols = (a % np.ndim(x) for a in axis or (0, 1))
    dy = restore_axes(dy, axis, keepdims)
    if ord == "fro":
        return dy * x / restore_axes(y, axis, keepdims)
    last = (rows, cols) == (np.ndim(x) - 2, np.ndim(x) - 1)
    m = x if last else np.moveaxis(x, (rows, cols), (-2, -1))
    if ord in ("nuc", 2, -2):
        u, s, vt = np.linalg.svd(m, full_matrices=False)
        if ord == "nuc":
            g = u @ vt
        else:
            pick = 0 if ord == 2 else -1
            g = u[..., :, pick:pick + 1 or None] @ vt[..., pick:pick + 1 or None, :]
    else:
        over = -2 if ord in (1, -1) else -1        # 1: column sums (over rows); inf: row sums
        sums = np.sum(np.abs(m), axis=over, keepdims=True)
        hit = sums == (np.max(sums, axis=(-2, -1), keepdims=True) if ord in (1, np.inf)
                       else np.min(sums, axis=(-2, -1), keepdims=True))
        g = np.sign(m) * hit / np.sum(hit, axis=(-2, -1), keepdims=True)
    return dy * (g if last else np.moveaxis(g, (-2, -1), (rows, cols)))


# -- batching (ys.vmap): numpy's linalg works on stacks of matrices, the batch one more axis --

from .batching import after_batch, lifted  # noqa: E402


def _stacked(fn):
    def linalg_batched(a, **options):
        return fn(a, **options)
    return linalg_batched


for _fn in (np.linalg.inv, np.linalg.det, np.linalg.slogdet, np.linalg.cholesky,
            np.linalg.eigh, np.linalg.eig, np.linalg.qr):
    batchrule(_fn, _stacked(_fn))


@batchrule(np.linalg.pinv)
def pinv_batched(a, rcond=None, hermitian=False):
    return np.linalg.pinv(a, rcond, hermitian)


@batchrule(np.linalg.svd)
def svd_batched(a, full_matrices=True, compute_uv=True, hermitian=False):
    return np.linalg.svd(a, full_matrices, compute_uv, hermitian)


@batchrule(svd_values)
def svd_values_batched(a, full_matrices=True, compute_uv=True, hermitian=False):
    return svd_values(a, full_matrices, compute_uv, hermitian)


@batchrule(np.linalg.solve)
def solve_batched(a, b, batched, size):
    """``b`` a vector per example: a column of one, so that numpy reads a stack of them."""
    a, b_ = lifted(a, batched[0], size), lifted(b, batched[1], size)
    if np.ndim(b_) == 2:
        return np.linalg.solve(a, b_[..., None])[..., 0]
    return np.linalg.solve(a, b_)


@batchrule(np.linalg.norm)
def norm_batched(x, size, ord=None, axis=None, keepdims=False):
    n = np.ndim(x) - 1
    if axis is None and (ord is None or n == 1):     # the 2-norm of all elements
        flat = np.linalg.norm(np.reshape(x, (size, -1)), ord, 1)
        return np.reshape(flat, (size,) + (1,) * n) if keepdims else flat
    if axis is None:
        axis = tuple(range(n))
    return np.linalg.norm(x, ord, after_batch(axis, n), keepdims)


# -- hermitian: eigh and svd of complex matrices (autograd's convention, docs/complex.md) --
#
# For a real loss of a complex matrix the gradient is dL/da - i dL/db, and a cotangent is
# conj of the steepest-ascent direction; the real formulas above then hold with conjugates:
# eigh's first V is conj(V), and the other triangle of the Hermitian matrix numpy reads is the
# conjugate of the one it reads, of which only the diagonal's real part counts; svd's U^T dU
# and conj(Vh dVh^T) take their antisymmetric parts with the conjugate transpose, conj(U) and
# conj(Vh) stand outside, and i Im(diag(U^T dU)) / s joins the diagonal. Each column of V (or
# U, with its row of Vh) is unique up to a phase e^(i theta): the gradient is the one of a
# function that does not depend on the phases (|v|, s, u u^H). A real matrix writes the real
# formulas unchanged: the helpers below are the identity there.

def conj_of(like, a):
    """``conj(a)`` where ``like`` is complex, ``a`` otherwise."""
    return np.conj(a) if np.iscomplexobj(like) else a


def skew(like, m):
    """``m - mT(m)``; ``m - mH(m)`` where ``like`` is complex."""
    return m - conj_of(like, mT(m))


def real_of(a):
    """The real part of a complex ``a``; a real ``a`` itself."""
    return np.real(a) if np.iscomplexobj(a) else a


def phase_diagonal(a, utdu, s, inner):
    """svd's ``inner`` with ``i Im(diag(U^T dU)) / s`` added for a complex ``a``."""
    if not np.iscomplexobj(a):
        return inner
    return inner + 1j * np.eye(np.shape(s)[-1]) * np.imag(utdu) / np.expand_dims(s, -2)
