"""The mixture's covariance Sigma: its factor, its log-determinant, its floor.

A :class:`Covariance` is one common covariance of a kind (``"spherical"``
sigma^2 I, ``"diag"``, ``"full"``), factorized once when it is made.  The
factorization is p x p work done on the host in NumPy; the geometry receives
the precision factor P (Sigma^-1 = P P^T, scikit-learn's
``precisions_cholesky_`` convention) in the data's namespace.

A spherical covariance is no metric for the geometry: its products are the
Euclidean ones, and ``scale`` = 1 / sigma^2 turns Euclidean squared
distances into Mahalanobis ones, so a change of variance costs no product.
"""

import math

import numpy as np
from scipy import stats
from scipy.linalg import cholesky, solve_triangular

from .backend import asarray

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
        variances = np.diag(value) if kind == "full" else value
        if not np.all(variances > 0):
            raise ValueError(SINGULAR)
        if kind == "full":
            try:
                chol = cholesky(value, lower=True)
            except np.linalg.LinAlgError:
                raise ValueError(SINGULAR) from None
            self.P = solve_triangular(chol, np.eye(dim), lower=True).T
            self.log_det = 2.0 * float(np.log(np.diag(chol)).sum())
        else:
            self.P = 1.0 / np.sqrt(value)
            self.log_det = float(np.log(value).sum())

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


def floor_covariance(kind, B_over_N, reg_covar):
    """Minimizer of 1/2 tr(S^-1 B) + N/2 log det S over S >= reg I.

    The scalar cost is unimodal in each eigenvalue (variance), so the floor
    clips the eigenvalues of B / N: the floored step is still an exact block
    minimizer and keeps the cost monotone.
    """
    if kind == "full":
        vals, vecs = np.linalg.eigh((B_over_N + B_over_N.T) / 2)
        return (vecs * np.maximum(vals, reg_covar)) @ vecs.T
    if kind == "spherical":
        return max(float(B_over_N), reg_covar)
    return np.maximum(B_over_N, reg_covar)


def consistency_factor(p):
    """0.5 / F_{chi^2_{p+2}}(median of chi^2_p): makes the scatter of the closest
    half of Gaussian points unbiased for sigma^2 (as in the minimum covariance
    determinant)."""
    return 0.5 / stats.chi2.cdf(stats.chi2.median(p), p + 2)
