"""The iterate shared by every estimator: centres, memberships, outliers, costs.

One :class:`State` type serves robust K-means, the robust mixture and their
kernel versions.  What differs between them is held by other objects: the
geometry decides what a centre is (a row of C x p means, or a row of C x N
coefficients over the training points, eq. (31)), the model which fields it
fills (mixing weights and covariance for RPC).

Outliers (:class:`Outliers`) are stored sparsely, k of them, in the form the
paper's closed-form O-step gives (Proposition 1, eqs. (11), (25), (36)):

    o_n = s_n (x_n - sum_c w_nc m_c),   n in ``index``,

a shrink factor s_n in (0, 1] times the point's residual, with w_n the
residual weights of that O-step (the label for hard K-means, u_n^q / sum u^q
for soft K-means, the posteriors for RPC) and m the state's centres.  This
form needs no coordinates, so the same code serves feature vectors and kernel
feature spaces (where Algorithm 3's N x N matrix A is exactly these k
columns).  Besides the k-row (sparse) form, the O-step keeps the per-point
vectors it computed (s_n and ||o_n|| for every point, 0 for inliers): the
per-point maps of the next steps use them with no scatter, which the array
API standard does not have.  The entry-wise penalty of Remark 2 does not give
a multiple of the residual; its outliers are explicit rows (``rows``), in the
linear geometry only.
"""

from dataclasses import dataclass, field, replace

import numpy as np


#: :meth:`Outliers.many`: per-point maps once a 1 / MANY_SHARE share is flagged.
MANY_SHARE = 4


@dataclass
class Outliers:
    """The nonzero outlier vectors of a state.

    Attributes
    ----------
    index : array of shape (k,)
        Sorted indices of the points with o_n != 0.
    shrink : array of shape (k,) or None
        s_n of o_n = s_n r_n (group penalty); None for explicit rows.
    weights : array of shape (k,) or (k, C), or None
        Residual weights w_n of those points at the O-step: labels (hard
        K-means) or rows of weights.
    sizes : array of shape (k,)
        ||o_n|| in the norm the penalty sees (Euclidean for K-means, the
        Sigma^-1 norm of the state's covariance for the mixture).
    rows : array of shape (k, p) or None
        o_n themselves: the entry-wise penalty's outliers, or a cache of the
        group form's rows in the linear geometry.
    euclidean : array of shape (k,) or None
        ||o_n||_2 when ``sizes`` are in another norm and it is known without
        the rows (a spherical covariance: ``sizes`` * sigma).
    shrink_full, sizes_full : arrays of shape (N,) or None
        s_n and ``sizes`` for every point (0 for inliers).
    weights_full : array of shape (N,) or (N, C), or None
        The residual weights of every point at the O-step.
    component_sizes : array of shape (k, C) or None
        ||o_n|| in each component's Sigma_c^-1 norm (the mixture with one
        covariance per component; ``sizes`` is then their posterior mean).
    flagged_full : bool array of shape (N,) or None
        o_n != 0 for every point: the mask by which the array API standard
        scatters the k rows (it has no integer-array assignment).
    """

    index: object
    shrink: object = None
    weights: object = None
    sizes: object = None
    rows: object = None
    euclidean: object = None
    shrink_full: object = None
    sizes_full: object = None
    weights_full: object = None
    component_sizes: object = None
    flagged_full: object = None

    @property
    def count(self):
        return int(self.index.shape[0])

    @property
    def explicit(self):
        """True for explicit rows (entry-wise penalty), False for the shrink form."""
        return self.shrink is None

    def many(self, n):
        """Whether maps over all n points beat gathers of the k outlier rows: the
        shrink form with its per-point vectors (soft weights, (N, C)) and at
        least n / MANY_SHARE outliers.  Those maps give what the k rows give
        (s_n = 0 leaves a point as it is), at a cost that does not grow with k.
        """
        return (not self.explicit and self.shrink_full is not None
                and self.weights_full is not None and self.weights_full.ndim == 2
                and self.count * MANY_SHARE >= n)


def no_outliers(n, xp=np, like=None):
    """The empty outlier set of n points."""
    from .backend import asarray

    index = asarray(np.empty(0, dtype=np.int64), xp, like)
    empty = asarray(np.empty(0), xp, like)
    zeros = asarray(np.zeros(n), xp, like)
    return Outliers(index, shrink=empty, weights=index, sizes=empty, euclidean=empty,
                    shrink_full=zeros, sizes_full=zeros)


def dense_outliers(outliers, n):
    """The per-point vectors of NumPy outliers given in k-row form only (in place)."""
    if outliers.shrink_full is None:
        shrink, sizes = np.zeros(n), np.zeros(n)
        shrink[outliers.index] = outliers.shrink
        sizes[outliers.index] = outliers.sizes
        outliers.shrink_full, outliers.sizes_full = shrink, sizes
    return outliers


@dataclass
class State:
    """One iterate of the block coordinate descent (or EM), with its bookkeeping.

    Attributes
    ----------
    centers : array of shape (C, dim)
        Means (linear geometry) or coefficients B^T over the training points
        (kernel geometry, eq. (31)), in the solver's internal units.
    products : Products
        Inner products of the points with ``centers`` in the state's metric.
    labels : array of shape (N,)
        Nearest (hard) or most likely cluster, ignoring outlier flags.
    memberships : array of shape (N, C) or None
        U of eq. (14) (soft K-means) or the posteriors of eq. (20) (mixture);
        None for hard K-means.
    outliers : Outliers
    point_costs : array of shape (N,)
        Each point's term of the cost (K-means), or minus its log-likelihood
        (mixture).
    objective : float
    weights : array of shape (C,) or None
        Mixing weights pi (mixture).
    covariance : Covariance or None
        Sigma (mixture).
    history, n_iter, converged
        Cost after each iteration of the run that produced the state.
    pending : tuple or None
        What the next centre step divides, when the compiled hard pass
        already has it: (sums, weights, key, the pass's per-point results).
    soft : tuple or None
        Soft K-means on NumPy: (U, U^q, residual weights u_n^q / sum_c u_nc^q)
        kept by the U-step that computed U; valid only while ``memberships``
        is that U (a state copied with other memberships ignores it).
    """

    centers: object
    products: object
    labels: object
    memberships: object
    outliers: Outliers
    point_costs: object
    objective: float
    weights: object = None
    covariance: object = None
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    pending: tuple | None = None
    soft: tuple | None = None

    def soft_cache(self):
        """(U^q, residual weights) of the state's own memberships, or None."""
        if self.soft is not None and self.soft[0] is self.memberships:
            return self.soft[1:]
        return None

    @property
    def n_outliers(self):
        return self.outliers.count

    @property
    def outlier_index(self):
        return self.outliers.index

    def finished(self, history, n_iter, converged):
        return replace(self, history=history, n_iter=n_iter, converged=converged)
