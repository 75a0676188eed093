"""Outlier penalties: the sparsity term on the outlier vectors o_n.

Every estimator in the package solves a problem of the form

    data fit(X - O, centres, memberships) + lam * sum_n rho(o_n)

and the only place where the choice of ``rho`` matters is the outlier
(O-) step.  This module holds that step, once, for every penalty:

* ``group``       rho(o) = ||o||_2, the paper's group-lasso penalty
                  (eqs. (5)-(6)); whole vectors are outliers.
* ``elementwise`` rho(o) = ||o||_1 of Remark 2; single entries are outliers.

and, for each of them, the log ("weighted") variant of Section III-C,
rho(o) = log(1 + ||o|| / eps) (group) or sum_j log(1 + |o_j| / eps)
(elementwise).  ``log(1 + t/eps)`` differs from the paper's
``log(t + eps)`` by the constant ``log eps``, so it has the same minimizers
and derivative ``1 / (t + eps)`` but is zero at ``o = 0``; this keeps the
cost non-negative and makes ``lam -> inf`` reduce to K-means exactly.

Notes
-----
For a point with per-point weight ``S_n`` (``sum_c u_nc^q`` in eq. (10)) the
O-step minimizes ``S_n (||r_n - o||^2 + lam rho(o))``.  ``S_n`` cancels, so
the minimizer is the proximal operator of ``(lam / 2) rho`` at the residual
``r_n`` of eq. (12):

* group:       o = r [1 - tau / ||r||]_+           (eq. (11)), tau = lam / 2
* elementwise: o_j = sign(r_j) [|r_j| - tau]_+     (soft thresholding)

The log penalty is not convex; as in eq. (30) it is majorized at the
previous iterate by its tangent, ``lam / (t_prev + eps) * t``, so the MM step
is the same prox with the per-point (group) or per-entry (elementwise)
threshold ``tau = lam / (2 (t_prev + eps))``.  Since the majorizer touches the
cost at the previous iterate, one MM step never increases the true cost.
"""

import numpy as np


class GroupPenalty:
    """rho(o) = ||o||_2 (or log(1 + ||o||_2 / eps) when weighted).

    Whole rows are outliers: the O-step can skip every point whose residual
    norm is below the threshold (``row_sparse``).
    """

    name = "group"
    row_sparse = True

    def __init__(self, weighted=False, eps=None):
        self.weighted = weighted
        self.eps = eps

    def magnitudes(self, vals):
        """Per-row magnitudes ||o_n||_2 of outlier rows ``vals`` (k, p)."""
        return np.sqrt(np.einsum("ij,ij->i", vals, vals, dtype=np.float64))

    def value(self, vals):
        """Per-row penalty rho(o_n) for outlier rows ``vals`` (k, p)."""
        return self.value_of_norms(self.magnitudes(vals))

    def value_of_norms(self, norms):
        """rho(o_n) from the norms ||o_n|| (kernel solvers never form o_n)."""
        if self.weighted:
            return np.log1p(norms / self.eps)
        return norms

    def threshold(self, lam):
        """Threshold for a point whose previous o_n is 0: lam / 2 (eq. (11)),
        lam / (2 eps) when weighted (eq. (30))."""
        return lam / (2.0 * self.eps) if self.weighted else lam / 2.0

    def threshold_at(self, lam, prev):
        """Thresholds given the previous outlier rows ``prev`` (k, p): (k,) here.

        eq. (30): lam_n / 2 = lam / (2 (||o_n|| + eps)) when weighted.
        """
        return self.threshold_of_norms(lam, self.magnitudes(prev))

    def threshold_of_norms(self, lam, norms):
        """Thresholds from the previous norms ||o_n|| (k,), as ``threshold_at``."""
        if not self.weighted:
            return np.full(len(norms), lam / 2.0)
        return lam / (2.0 * (norms + self.eps))

    def point_thresholds(self, lam, n_samples, prev_index, prev_norms):
        """The O-step threshold of every point: a scalar for the convex penalty;
        for the log penalty an (n_samples,) array, lam / (2 eps) where the
        previous o_n is 0 and ``threshold_of_norms`` at the previous outliers
        ``prev_index`` (norms ``prev_norms``)."""
        tau = self.threshold(lam)
        if not self.weighted:
            return tau
        tau = np.full(n_samples, tau)
        tau[prev_index] = self.threshold_of_norms(lam, prev_norms)
        return tau

    @staticmethod
    def shrink(norms, tau):
        """Group soft-threshold factors [1 - tau / ||r||]_+ of eq. (11) for rows of
        norms ``norms`` (any norm: the mixture passes Mahalanobis norms)."""
        tau = np.broadcast_to(tau, norms.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(norms > tau, 1.0 - tau / norms, 0.0)

    def prox(self, R, tau):
        """Group soft threshold of the rows of R, thresholds tau (scalar or (k,))."""
        shrink = self.shrink(self.magnitudes(R), tau)
        return R * shrink.astype(R.dtype, copy=False)[:, None]

    def lambda_max(self, residual_max):
        """Smallest lam at which the O-step from O = 0 flags nothing.

        ``residual_max`` is max_n ||r_n||_2 (group) or max_{n,j} |r_nj|
        (elementwise).
        """
        scale = 2.0 * residual_max
        return scale * self.eps if self.weighted else scale


class ElementwisePenalty(GroupPenalty):
    """rho(o) = ||o||_1 (or sum_j log(1 + |o_j| / eps) when weighted).

    Entries are outliers: every residual entry must be looked at.
    """

    name = "elementwise"
    row_sparse = False

    def value(self, vals):
        a = np.abs(vals).astype(np.float64, copy=False)
        if self.weighted:
            return np.log1p(a / self.eps).sum(axis=1)
        return a.sum(axis=1)

    def threshold_at(self, lam, prev):
        """Per-entry thresholds (k, p): lam / (2 (|o_nj| + eps)) when weighted."""
        if not self.weighted:
            return np.full(prev.shape, lam / 2.0)
        return lam / (2.0 * (np.abs(prev) + self.eps))

    def prox(self, R, tau):
        """Entry-wise soft threshold of R (thresholds scalar or R's shape)."""
        a = np.abs(R)
        return (np.sign(R) * np.maximum(a - tau, 0.0)).astype(R.dtype, copy=False)


def make_penalty(name, weighted=False, eps=None):
    """Penalty object for the ``penalty`` parameter of the estimators."""
    cls = {"group": GroupPenalty, "elementwise": ElementwisePenalty}[name]
    return cls(weighted=weighted, eps=eps)
