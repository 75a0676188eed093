"""Outlier penalties and THE outlier (O-) step, once for every model and geometry.

Every estimator in the package solves a problem of the form

    data fit(X - O, centres, memberships) + lam * sum_n rho(o_n)

and the only place where the choice of ``rho`` matters is the O-step:

* ``group``       rho(o) = ||o||, the paper's group-lasso penalty (eqs. (5)-(8));
                  whole vectors are outliers;
* ``elementwise`` rho(o) = ||o||_1 of Remark 2; single entries are outliers
                  (linear geometry with the Euclidean norm only: kernel
                  feature spaces and Mahalanobis norms have no entries to
                  threshold one by one);

and, for each of them, the log ("weighted") variant of Section III-C,
rho(o) = log(1 + ||o|| / eps) (group) or sum_j log(1 + |o_j| / eps).
``log(1 + t/eps)`` differs from the paper's ``log(t + eps)`` by the constant
``log eps``: same minimizers and derivative ``1 / (t + eps)``, but zero at
``o = 0``, so the cost stays non-negative and ``lam -> inf`` is K-means.

Notes
-----
For a point with weight ``S_n`` (``sum_c u_nc^q`` in eq. (10); 1 for the
mixture, whose posteriors sum to one) the O-step minimizes
``S_n (||r_n - o||^2 + lam rho(o))`` over o, so the minimizer is the proximal
operator of ``(lam / 2) rho`` at the residual ``r_n`` of eq. (12):

* group:       o = r [1 - tau / ||r||]_+        (eq. (11), Proposition 1), tau = lam / 2;
* elementwise: o_j = sign(r_j) [|r_j| - tau]_+  (soft thresholding).

The mixture's O-step (eq. (24)) is the same prox in the Sigma^-1 norm with
tau = lam (the E-step's 1/2 is on the squared term), which is why its
models pass ``2 lam``.  The log penalty is majorized at the previous iterate
by its tangent, ``lam / (t_prev + eps) * t`` (eq. (30)), so one MM step is
the same prox with the per-point (or per-entry) threshold
``tau = lam / (2 (t_prev + eps))``; the majorizer touches the cost at the
previous iterate, so an MM step never increases the true cost.

The paper takes a single MM step per BCD iteration "to speed up the
algorithm" (its footnote to eq. (30)), although minimizing over o_n takes
several.  Here the O-step goes all the way: with the residual fixed, the MM
steps on a magnitude t >= 0 (||o_n||, or |o_nj| entry-wise) are
t <- [a - tau(t)]_+ with a = ||r_n|| (|r_nj|), and their limit has a closed
form (:func:`log_limit`), so it costs what one step costs.  The steps never
increase the cost, so neither does their limit; its fixed points are those
of the single-step iteration.  The single step is slow where it matters:
a flagged point whose o_n should vanish shrinks by a little each iteration
and the centres follow (on the paper's set a weighted path value took 137
iterations, shedding one outlier every 10-30 of them).  From o_n = 0 the
limit is 0 exactly when the first step is (a <= lam / (2 eps)), so which
points become outliers is decided as before.
"""

import numpy as np

from .backend import device, flatnonzero, maximum, minimum, namespace, take, where
from .state import Outliers


class GroupPenalty:
    """rho(o) = ||o|| (or log(1 + ||o|| / eps) when weighted).

    Whole rows are outliers, and a point is one iff its residual norm is
    above its threshold, so the O-step screens on the norms alone
    (``row_sparse``).
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

    def value_of_norms(self, norms, xp=np):
        """rho(o_n) from the norms ||o_n||."""
        if self.weighted:
            return xp.log1p(norms / self.eps)
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

    def threshold_of_norms(self, lam, norms, xp=np):
        """Thresholds from the previous norms ||o_n|| (k,), as ``threshold_at``."""
        if not self.weighted:
            return xp.full(norms.shape[0], lam / 2.0, device=device(norms))
        return lam / (2.0 * (norms + self.eps))

    def point_thresholds(self, lam, prev_norms):
        """The O-step threshold of every point: a scalar for the convex penalty;
        for the log penalty the array lam / (2 (||o_n|| + eps)) from the
        previous ||o_n|| of every point (0 where o_n was 0: lam / (2 eps))."""
        if not self.weighted:
            return self.threshold(lam)
        return lam / (2.0 * (prev_norms + self.eps))

    @staticmethod
    def shrink(norms, tau, xp=np):
        """Group soft-threshold factors [1 - tau / ||r||]_+ of eq. (11) for rows of
        norms ``norms`` (any norm: the mixture passes Mahalanobis norms)."""
        safe = where(norms > 0, norms, 1.0, xp)
        return where(norms > tau, 1.0 - tau / safe, 0.0, xp)

    def prox(self, R, tau):
        """Group soft threshold of the rows of R, thresholds tau (scalar or (k,))."""
        shrink = self.shrink(self.magnitudes(R), tau)
        return R * shrink.astype(R.dtype, copy=False)[:, None]

    def critical_lambdas(self, norms, prev_norms=None):
        """lam below which each point is flagged: 2 ||r_n||, the inverse of its
        threshold; when weighted, the lam below which :func:`log_limit` from
        the previous ||o_n|| is positive (2 eps ||r_n|| from o_n = 0)."""
        if self.weighted:
            return log_critical(norms, prev_norms, self.eps)
        return 2.0 * norms

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


def log_limit(a, prev, lam, eps, a2=None):
    """Limit of the log penalty's MM steps t <- [a - lam / (2 (t + eps))]_+ from t = ``prev``.

    The map f(t) = a - lam / (2 (t + eps)) is increasing and concave, with
    fixed points t_-+ = ((a - eps) -+ sqrt((a + eps)^2 - 2 lam)) / 2 when the
    root is real.  From prev > t_- the steps go to t_+ (up or down), from
    below it to 0 (as they do when there is no fixed point, or t_+ <= 0).
    From prev = 0 that is t_+ exactly when the first step leaves 0,
    a^2 > (lam / (2 eps))^2 (``a2`` = a^2, as the residuals' squared norms
    were computed), the test of one MM step.  ``lam`` is in the penalty's
    convention (threshold lam / 2 at t = 0).  Elementwise over arrays of
    any namespace; returns t.
    """
    xp, _ = namespace(a)
    if a2 is None:
        a2 = a * a
    tau0 = lam / (2.0 * eps)
    disc = (a + eps) * (a + eps) - 2.0 * lam
    root = xp.sqrt(maximum(disc, 0.0, xp))
    upper = 0.5 * ((a - eps) + root)
    lower = 0.5 * ((a - eps) - root)
    keep = where(prev > 0, (disc >= 0) & (prev > lower), a2 > tau0 * tau0, xp)
    return where(keep & (upper > 0), upper, 0.0, xp)


def log_critical(a, prev, eps):
    """lam below which :func:`log_limit` (a, prev, lam) is positive, elementwise.

    From prev = 0 that is 2 eps a (the inverse of the first step's
    threshold).  From prev > 0 it is positive iff the root is real
    (lam <= (a + eps)^2 / 2), prev lies above t_- (lam < 2 (eps + prev)
    (a - prev) when a - eps - 2 prev >= 0; always otherwise) and t_+ > 0
    (lam < 2 eps a when a < eps; always otherwise).
    """
    xp, _ = namespace(a)
    inf = float("inf")
    crit = 0.5 * (a + eps) * (a + eps)
    crit = minimum(crit, where(a - eps - 2.0 * prev >= 0,
                               2.0 * (eps + prev) * (a - prev), inf, xp), xp)
    crit = minimum(crit, where(a < eps, 2.0 * eps * a, inf, xp), xp)
    return where(prev > 0, crit, 2.0 * a * eps, xp)


def make_penalty(name, weighted=False, eps=None):
    """Penalty object for the ``penalty`` parameter of the estimators."""
    cls = {"group": GroupPenalty, "elementwise": ElementwisePenalty}[name]
    return cls(weighted=weighted, eps=eps)


#: Rows of residuals formed at once by the entry-wise O-step.
CHUNK_ROWS = 4096


def outlier_step(penalty, lam, r2, W, prev, xp=np, residuals=None):
    """The O-step: screen, shrink, store (eqs. (11), (24)-(25), (30), (36)).

    Parameters
    ----------
    penalty : GroupPenalty or ElementwisePenalty
    lam : float
        lambda in the penalty's convention (the threshold is lam / 2; the
        mixture passes 2 lambda).
    r2 : array of shape (N,)
        Squared norms of the residuals r_n (eq. (12)) in the penalty's norm.
    W : array of shape (N,) or (N, C)
        Residual weights of every point (labels or rows), stored with the
        outliers so that o_n = s_n (x_n - sum_c w_nc m_c) can be formed.
    prev : Outliers
        The previous outliers (their sizes set the log penalty's thresholds,
        eq. (30)).
    residuals : callable, optional
        ``residuals(index)`` -> dense residual rows; the entry-wise penalty
        needs them (it thresholds entries, not norms).

    Returns
    -------
    Outliers
        index, shrink factors s_n, weight rows, sizes ||o_n|| = s_n ||r_n||;
        explicit rows for the entry-wise penalty.
    """
    n = r2.shape[0]
    if not penalty.row_sparse:
        return _elementwise_step(penalty, lam, n, W, prev, residuals)
    norms = xp.sqrt(r2)
    if penalty.weighted:
        size = log_limit(norms, prev.sizes_full, lam, penalty.eps, r2)
        shrink = where(size > 0, size / where(norms > 0, norms, 1.0, xp), 0.0, xp)
    else:
        tau = penalty.point_thresholds(lam, prev.sizes_full)
        shrink = penalty.shrink(norms, tau, xp)
        shrink = where(r2 > tau * tau, shrink, 0.0, xp)
    index = flatnonzero(shrink > 0, xp)
    sizes = shrink * norms
    return Outliers(index, shrink=take(shrink, index, xp), weights=take(W, index, xp),
                    sizes=take(sizes, index, xp), shrink_full=shrink, sizes_full=sizes,
                    weights_full=W)


def _elementwise_step(penalty, lam, n, W, prev, residuals):
    """Entry-wise soft thresholding of every residual, chunk by chunk (NumPy)."""
    lookup = np.full(n, -1, dtype=np.intp)
    lookup[prev.index] = np.arange(prev.count)
    prev_rows = prev.rows
    idx_parts, val_parts = [], []
    for start in range(0, n, CHUNK_ROWS):
        rows = np.arange(start, min(start + CHUNK_ROWS, n))
        R = residuals(rows)
        before = np.zeros(R.shape)
        pos = lookup[rows]
        if prev.count:
            before[pos >= 0] = prev_rows[pos[pos >= 0]]
        if penalty.weighted:
            O = (np.sign(R) * log_limit(np.abs(R), np.abs(before), lam, penalty.eps)
                 ).astype(R.dtype, copy=False)
        else:
            O = penalty.prox(R, penalty.threshold_at(lam, before))
        keep = np.flatnonzero(np.any(O != 0, axis=1))
        idx_parts.append(rows[keep])
        val_parts.append(O[keep])
    index = np.concatenate(idx_parts).astype(np.intp)
    vals = np.concatenate(val_parts).astype(np.float64, copy=False)
    sizes = penalty.magnitudes(vals)
    sizes_full = np.zeros(n)
    sizes_full[index] = sizes
    return Outliers(index, shrink=None, weights=W[index], sizes=sizes, rows=vals,
                    sizes_full=sizes_full, weights_full=W)


def penalty_values(penalty, outliers, xp=np):
    """rho(o_n) of every point (0 for inliers), for the cost."""
    if outliers.explicit:
        values = np.zeros(outliers.sizes_full.shape[0])
        values[outliers.index] = penalty.value(outliers.rows)
        return values
    return penalty.value_of_norms(outliers.sizes_full, xp)
