"""The mixture's covariances: their factors, log-determinants, floor and ratio bound.

A :class:`Covariance` is one common covariance of a kind (``"spherical"``
sigma^2 I, ``"diag"``, ``"full"``), factorized once when it is made.  The
factorization is p x p work done on the host in NumPy; the geometry receives
the precision factor P (Sigma^-1 = P P^T, scikit-learn's
``precisions_cholesky_`` convention) in the data's namespace.
:class:`ComponentCovariances` holds one covariance per component (the
per-component models), each factorized the same way.

Two guards keep a covariance step well posed: the floor ``reg_covar`` on
every eigenvalue (:func:`floor_covariance`) and, optionally, a bound on the
ratio of the largest to the smallest eigenvalue over all components
(:func:`constrain_eigenvalues`, tclust's ``restr.fact``).  Both are exact
minimizers of the step's cost over their constraint sets, so the cost stays
monotone.

A spherical covariance is no metric for the geometry: its products are the
Euclidean ones, and ``scale`` = 1 / sigma^2 turns Euclidean squared
distances into Mahalanobis ones, so a change of variance costs no product.
"""

import math

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.linalg.lapack import dpotrf, dtrtrs

from .backend import asarray
from .compiled import lazy_module, lazy_njit

stats = lazy_module("scipy.stats", compiled=False)  # imported on first use

SINGULAR = ("The common covariance became singular (a constant or collinear feature, or "
            "more components than distinct points?): increase reg_covar.")


class Covariance:
    """A covariance of one kind and its precision factor.

    Parameters
    ----------
    kind : {"spherical", "diag", "full"}
    value : float, ndarray of shape (p,) or (p, p)
        sigma^2, the variances, or the matrix.
    dim : int
        Dimension P of the space (p, or the kernel feature space's P).
    """

    def __init__(self, kind, value, dim):
        self.kind = kind
        self.dim = dim
        if kind == "spherical":
            value = float(value)
            if not value > 0:
                raise ValueError(SINGULAR)
            self.value = value
            self.P = 1.0 / math.sqrt(value)
            self.log_det = dim * math.log(value)
            return
        value = np.asarray(value, dtype=np.float64)
        self.value = value
        variances = value.diagonal() if kind == "full" else value
        if not (variances > 0).all():  # the method: cheaper than np.all's dispatch
            raise ValueError(SINGULAR)
        if kind == "full":
            try:
                chol = _cholesky(value)
            except np.linalg.LinAlgError:
                raise ValueError(SINGULAR) from None
            self.P = _lower_inverse(chol).T
            self.log_det = 2.0 * float(np.log(chol.diagonal()).sum())
        else:
            self.P = 1.0 / np.sqrt(value)
            self.log_det = float(np.log(value).sum())

    @classmethod
    def full_step(cls, B_over_N, n, reg_covar, ratio, dim):
        """The full covariance of a step, ``bound_covariance("full", ...)``, factorized.

        Small matrices without a ratio bound whose every eigenvalue is above
        the floor (the floor then changes nothing) are symmetrized, checked
        and factorized in one compiled call (:func:`_factor_full`): the same
        matrix as :func:`floor_covariance` returns, without its five LAPACK
        and a dozen NumPy calls (a tenth of a common-Sigma EM iteration at a
        few thousand points in 2-D).  Anything else goes the general way.
        """
        B = np.asarray(B_over_N, dtype=np.float64)
        p = B.shape[0]
        if ratio is None and p <= SMALL_FACTOR_DIM:
            value, P = np.empty((p, p)), np.empty((p, p))
            log_det = _factor_full(np.ascontiguousarray(B), float(reg_covar), value, P)
            if not math.isnan(log_det):
                cov = cls.__new__(cls)
                cov.kind, cov.dim, cov.value = "full", dim, value
                cov.P, cov.log_det = P, log_det
                return cov
        return cls("full", bound_covariance("full", B, n, reg_covar, ratio), dim)

    @classmethod
    def from_precision_factor(cls, kind, P, dim):
        """The covariance whose precision factor is P (Sigma^-1 = P P^T).

        P is scikit-learn's ``precisions_cholesky_`` (upper triangular for
        "full"); it stays representable where Sigma itself would overflow or
        underflow (data beyond about 1e154 or below 1e-154 in magnitude).
        """
        if kind == "spherical":
            return cls(kind, 1.0 / float(P) ** 2, dim)
        P = np.asarray(P, dtype=np.float64)
        if kind == "diag":
            return cls(kind, 1.0 / P**2, dim)
        inverse = solve_triangular(P, np.eye(dim), lower=False)  # P^-1
        return cls(kind, inverse.T @ inverse, dim)

    @property
    def metric(self):
        """What the geometry measures with: None (Euclidean) for spherical, else self."""
        return None if self.kind == "spherical" else self

    @property
    def scale(self):
        """Factor from the geometry's squared distances to Mahalanobis ones."""
        return 1.0 / self.value if self.kind == "spherical" else 1.0

    def precision_diag(self, xp=np, like=None):
        """1 / variances (diag kind), in ``xp``."""
        return asarray(self.P**2, xp, like)

    def factor(self, xp=np, like=None):
        """P (full kind), in ``xp``."""
        return asarray(self.P, xp, like)

    def whiten(self, V):
        """Rows of a small dense NumPy V in whitened coordinates (V P)."""
        return V @ self.P if self.kind == "full" else V * self.P

    def sq_norms(self, V):
        """||v||^2_{Sigma^-1} for the rows of a small dense NumPy V."""
        W = self.whiten(V)
        return np.einsum("ij,ij->i", W, W)


def _cholesky(A):
    """The lower Cholesky factor of a float64 matrix, as ``scipy.linalg.cholesky``.

    LAPACK's potrf is called directly for a finite matrix: the same routine
    and result, without scipy.linalg's checks and wrappers, which cost about
    ten times a small factorization (an EM iteration of a full covariance
    factorizes one p x p matrix).  Raises ``np.linalg.LinAlgError`` when A
    is not positive definite.
    """
    if A.dtype != np.float64 or not np.isfinite(A).all():
        return cholesky(A, lower=True)  # scipy's own errors
    chol, info = dpotrf(A, lower=1, clean=1)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if info < 0:  # pragma: no cover - an argument error
        raise ValueError(f"LAPACK potrf: illegal value in argument {-info}")
    return chol


def _lower_inverse(L):
    """L^-1 of a lower triangular factor (LAPACK trtrs, as ``solve_triangular(L,
    I, lower=True)``, called directly for the reason of :func:`_cholesky`)."""
    inverse, info = dtrtrs(L, np.eye(L.shape[0]), lower=1)
    if info != 0:  # pragma: no cover - a positive definite factor has no zero pivot
        return solve_triangular(L, np.eye(L.shape[0]), lower=True)
    return inverse


#: Largest dimension factorized by the compiled :func:`_factor_full` (its
#: Cholesky is a plain triple loop: LAPACK's blocked one wins past this).
SMALL_FACTOR_DIM = 16


@lazy_njit(cache=True, nogil=True)
def _factor_full(B, floor, value, P):
    """value = (B + B^T) / 2 and P = L^-T for its lower Cholesky factor L;
    returns log det value, or NaN when value is not finite or has an
    eigenvalue at or below ``floor`` (value - floor I has no Cholesky factor)
    or no factor itself (the caller then takes the general way)."""
    p = B.shape[0]
    for i in range(p):
        for j in range(p):
            v = (B[i, j] + B[j, i]) / 2
            if not math.isfinite(v):
                return math.nan
            value[i, j] = v
    L = np.zeros((p, p))
    for shift in (floor, 0.0):  # first the floor's test, then the factor itself
        for j in range(p):
            d = value[j, j] - shift
            for k in range(j):
                d -= L[j, k] * L[j, k]
            if not d > 0:
                return math.nan
            L[j, j] = math.sqrt(d)
            for i in range(j + 1, p):
                t = value[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                L[i, j] = t / L[j, j]
    log_det = 0.0
    for j in range(p):
        log_det += math.log(L[j, j])
    # L^-1 by forward substitution, column j of the identity at a time, stored
    # transposed: P[j, i] = (L^-1)[i, j]
    for j in range(p):
        for i in range(p):
            if i < j:
                P[j, i] = 0.0
                continue
            t = 1.0 if i == j else 0.0
            for k in range(j, i):
                t -= L[i, k] * P[j, k]
            P[j, i] = t / L[i, i]
    return 2.0 * log_det


COMPONENT_SINGULAR = ("The covariance of component {c} became singular (a cluster of "
                      "identical or collinear points?): increase reg_covar or set "
                      "eigenvalue_ratio.")


class ComponentCovariances:
    """One covariance per component, each of one kind, factorized once.

    Parameters
    ----------
    kind : {"spherical", "diag", "full"}
    values : ndarray of shape (C,), (C, p) or (C, p, p)
        sigma_c^2, the variances, or the matrices.
    dim : int
    check : bool, default=True
        Factorize the values (a singular one is an error naming its
        component); False keeps raw values (an initial value to be bounded
        before use: only ``value`` is set).

    Attributes
    ----------
    P : ndarray of shape (C,), (C, p) or (C, p, p)
        Precision factors, Sigma_c^-1 = P_c P_c^T (scikit-learn's
        ``precisions_cholesky_``).
    log_det : ndarray of shape (C,)
    """

    #: the geometry's products stay Euclidean: the model measures per component
    metric = None

    def __init__(self, kind, values, dim, check=True):
        self.kind = kind
        self.dim = dim
        values = np.asarray(values, dtype=np.float64)
        self.value = values
        if not check:  # raw values, to be constrained before use
            return
        parts = []
        for c, value in enumerate(values):
            try:
                parts.append(Covariance(kind, value, dim))
            except ValueError:
                raise ValueError(COMPONENT_SINGULAR.format(c=c)) from None
        self.parts = parts
        self.P = np.array([part.P for part in parts], dtype=np.float64)
        self.log_det = np.array([part.log_det for part in parts])

    @classmethod
    def from_precision_factors(cls, kind, P, dim):
        """The covariances whose precision factors are the rows of P (see
        :meth:`Covariance.from_precision_factor`)."""
        values = [Covariance.from_precision_factor(kind, P_c, dim).value for P_c in P]
        return cls(kind, np.array(values, dtype=np.float64), dim)

    @property
    def n_components(self):
        return len(self.parts)

    def precisions(self):
        """Sigma_c^-1: (C,) precisions, (C, p) inverse variances or (C, p, p) matrices."""
        if self.kind == "full":
            return np.einsum("cij,ckj->cik", self.P, self.P)
        return self.P**2

    def sq_norms(self, V):
        """||v_n||^2_{Sigma_c^-1} for the rows of a small dense NumPy V, (k, C)."""
        return np.stack([part.sq_norms(V) for part in self.parts], axis=1)


def floor_covariance(kind, B_over_N, reg_covar):
    """Minimizer of 1/2 tr(S^-1 B) + N/2 log det S over S >= reg I.

    The scalar cost is unimodal in each eigenvalue (variance), so the floor
    clips the eigenvalues of B / N: the floored step is still an exact block
    minimizer and keeps the cost monotone.
    """
    if kind == "full":
        B = (B_over_N + B_over_N.T) / 2
        if _above(B, reg_covar):  # no eigenvalue to clip: B itself, exactly
            return B
        vals, vecs = np.linalg.eigh(B)
        return (vecs * np.maximum(vals, factorable_floor(vals, reg_covar))) @ vecs.T
    if kind == "spherical":
        return max(float(B_over_N), reg_covar)
    return np.maximum(B_over_N, reg_covar)


#: The smallest eigenvalue a full covariance keeps, relative to its largest: a
#: matrix rebuilt from its eigenvalues carries rounding errors of about 2e-16
#: of the largest, so one more ill-conditioned than this is not positive
#: definite in float64 (one row 1e150 from clusters of sd 0.5).
RELATIVE_FLOOR = 1e-12


def factorable_floor(eigenvalues, floor):
    """The floor of a full covariance step: ``floor``, or RELATIVE_FLOOR times the
    largest eigenvalue when that is more (only matrices float64 cannot factor
    otherwise are changed); no floor stays none (``reg_covar=0``: a singular
    step is an error)."""
    if not floor > 0:
        return float(floor)
    top = float(np.max(eigenvalues)) if np.size(eigenvalues) else 0.0
    return max(float(floor), RELATIVE_FLOOR * top if math.isfinite(top) else 0.0)


def _above(B, floor):
    """Whether the symmetric float64 matrix B has every eigenvalue above ``floor``:
    B - floor I has a Cholesky factor (LAPACK potrf, a tenth of an eigh of a
    small matrix; the covariance step of a full Sigma runs once per EM
    iteration).  False for a non-finite B (left to the eigh)."""
    if not np.isfinite(B).all():
        return False
    _, info = dpotrf(B - floor * np.eye(B.shape[0]), lower=1, clean=0)
    return info == 0


def constrain_eigenvalues(n, d, a=None, floor=0.0, ratio=None):
    """Eigenvalues v minimizing sum_j g_j(v_j) with every v_j in [m, ratio m], m >= floor.

    g_j(v) = n_j / 2 (log v + d_j / v) + a_j / sqrt(v) is the cost of one
    eigenvalue (variance) of a covariance step: n_j the weight of the
    component (its size N_c; N_c p for a spherical one), d_j the eigenvalue
    of its scatter divided by n_j, and a_j >= 0 the linear outlier term of
    eq. (27) (spherical kinds; 0 otherwise).  Without a bound (``ratio``
    None) each eigenvalue is its own minimizer, floored; with one, all of
    them (over every component and direction) are clipped into [m, ratio m]
    for the m >= floor that minimizes the total cost, as tclust's
    ``restr.fact`` (Fritz, Garcia-Escudero and Mayo-Iscar, 2013) does for
    the scatter eigenvalues.

    The minimizer is exact: for fixed m each g_j is unimodal in v, so
    clipping its own minimizer v*_j = (h_j + sqrt(h_j^2 + d_j))^2,
    h_j = a_j / (2 n_j), is best; as a function of t = log m the total cost
    is convex (each clipped term is a convex function of t: g_j is convex
    in log v, and clipping to a window sliding with t keeps it so), and on
    each interval between the breakpoints {log v*_j, log v*_j - log ratio}
    the points below and above the window are fixed, so the stationary
    point solves a quadratic in w = m^-1/2,

        w^2 (sum_L n d + sum_H n d / r) + w (sum_L a + sum_H a / sqrt(r)) = sum_{L+H} n,

    evaluated for every interval with prefix sums over the sorted v*_j
    (O(J log J) for J eigenvalues).  The best of those candidates is the
    minimizer over m; the floor then binds as max(m, floor) (convexity).

    Parameters
    ----------
    n, d, a : arrays of one shape (a defaults to zeros)
    floor : float
    ratio : float >= 1 or None

    Returns
    -------
    v : ndarray of the shape of ``d``
    """
    n = np.asarray(n, dtype=np.float64)
    d = np.maximum(np.asarray(d, dtype=np.float64), 0.0)
    shape = d.shape
    n, d = np.broadcast_to(n, shape).ravel(), d.ravel()
    a = np.zeros_like(d) if a is None else np.broadcast_to(
        np.asarray(a, dtype=np.float64), shape).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(n > 0, a / (2.0 * n), 0.0)
    best = (h + np.sqrt(h * h + d)) ** 2
    if ratio is None:
        return np.maximum(best, floor).reshape(shape)
    tiny = np.finfo(np.float64).tiny
    u = np.log(np.maximum(best, tiny))
    ell = math.log(ratio)
    order = np.argsort(u, kind="stable")
    u, n_s, nd, a_s = u[order], n[order], (n * d)[order], a[order]
    zero = np.zeros(1)
    cn, cnd, ca = (np.concatenate([zero, np.cumsum(v)]) for v in (n_s, nd, a_s))
    # the constant part: each term at its own minimizer
    own = np.where(n_s > 0, 0.5 * n_s * u + 0.5 * nd / np.exp(u), 0.0) + a_s * np.exp(-u / 2)
    cown = np.concatenate([zero, np.cumsum(own)])
    J = len(u)
    breaks = np.unique(np.concatenate([u, u - ell]))
    # one probe inside every interval (and beyond both ends) fixes L and H
    probes = np.concatenate([[breaks[0] - 1.0], (breaks[:-1] + breaks[1:]) / 2,
                             [breaks[-1] + 1.0]])
    lo = np.concatenate([[-np.inf], breaks])
    hi = np.concatenate([breaks, [np.inf]])
    nL = np.searchsorted(u, probes, side="left")            # u_j < t
    nH = J - np.searchsorted(u, probes + ell, side="right")  # u_j > t + ell
    r = ratio

    def sums(k_low, k_high):
        top = J - k_high
        N0 = cn[k_low] + (cn[J] - cn[top])
        alpha = cnd[k_low] + (cnd[J] - cnd[top]) / r
        beta = ca[k_low] + (ca[J] - ca[top]) / math.sqrt(r)
        return N0, alpha, beta

    N0, alpha, beta = sums(nL, nH)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = np.where(alpha > 0,
                     (np.sqrt(beta * beta + 4.0 * alpha * N0) - beta) / (2.0 * alpha),
                     np.where(beta > 0, N0 / beta, np.inf))
        t_star = np.where(N0 > 0, -2.0 * np.log(w), -np.inf)
    t = np.clip(t_star, lo, hi)
    # an interval unbounded below whose cost keeps falling: its finite end
    t = np.where(np.isfinite(t), t, np.where(np.isfinite(lo), lo, hi))
    kL = np.searchsorted(u, t, side="left")
    kH = J - np.searchsorted(u, t + ell, side="right")
    N0, alpha, beta = sums(kL, kH)
    top = J - kH
    with np.errstate(over="ignore"):
        m = np.exp(t)
        cost = (0.5 * (cn[kL] * t + (cn[J] - cn[top]) * (t + ell))
                + 0.5 * alpha / m + beta / np.sqrt(m) + (cown[top] - cown[kL]))
    m = float(np.exp(t[int(np.argmin(cost))]))
    m = max(m, floor)
    return np.clip(best, m, ratio * m).reshape(shape)


def bound_covariance(kind, B_over_N, n, reg_covar, ratio=None):
    """:func:`floor_covariance`, and with a ``ratio`` the eigenvalue-ratio bound too.

    ``n`` is the weight of the covariance (N for a common one).
    """
    if ratio is None:
        return floor_covariance(kind, B_over_N, reg_covar)
    if kind == "full":
        vals, vecs = np.linalg.eigh((B_over_N + B_over_N.T) / 2)
        vals = constrain_eigenvalues(n, vals, None, factorable_floor(vals, reg_covar), ratio)
        return (vecs * vals) @ vecs.T
    if kind == "spherical":
        return max(float(B_over_N), reg_covar)
    return constrain_eigenvalues(n, B_over_N, None, reg_covar, ratio)


def consistency_factor(p):
    """0.5 / F_{chi^2_{p+2}}(median of chi^2_p): makes the scatter of the closest
    half of Gaussian points unbiased for sigma^2 (as in the minimum covariance
    determinant)."""
    return 0.5 / stats.chi2.cdf(stats.chi2.median(p), p + 2)
