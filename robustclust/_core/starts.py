"""The robust start: trimmed k-means++ seeding, then concentration steps.

k-means++ (D^2 sampling) picks a far, isolated point as a centre with a
probability that grows with its squared distance; a point 1e6 away from
everything is chosen second with probability one.  Such a centre keeps a
cluster of its own while two real clusters share one, and neither the
robust fit nor the count search can move it: that is the failure the
default start must avoid.  This module builds a start that far points
cannot capture, once, for every estimator (linear and kernel geometries):

1. **Trimmed seeding** (after the robust k-means++ of Deshpande, Kacham and
   Pratap, UAI 2020).  Every new centre is the best of a few candidates
   drawn with probability

       alpha w_n D~_n^2 / sum_m w_m D~_m^2 + (1 - alpha) w_n / sum_m w_m,

   where D~_n^2 is the squared distance to the nearest centre chosen so far
   with the ``n_trim`` largest costs set to 0 (the points that would be
   trimmed cannot be drawn by the D^2 part), mixed with uniform (weighted)
   sampling.  The best candidate is the one with the smallest *trimmed
   potential*: sum of w_n min_c ||x_n - m_c||^2 over all but the ``n_trim``
   points of largest cost (eq. (3) of the paper with the centres fixed).  A
   far point as a centre lowers that potential by nothing, since it is
   trimmed either way, while a centre in an uncovered cluster lowers it by
   that cluster's spread.
2. **Concentration steps** (the C-steps of trimmed k-means and tclust):
   assign each point to its nearest centre, keep the N - ``n_trim`` points
   of smallest cost, move each centre to the weighted mean of its kept
   points.  No step increases the trimmed potential.
3. **Several cheap starts**: ``N_SEEDINGS`` seedings, each followed by
   ``SCREEN_STEPS`` concentration steps; the one with the smallest trimmed
   potential is concentrated until its kept set settles (at most
   ``MAX_STEPS`` steps) and returned, its centres in the order in which
   their clusters first appear among the points.

``n_trim`` is the requested outlier count s when the estimator has one,
otherwise ``ceil(DEFAULT_TRIM_FRACTION * N)`` (see :func:`trim_count`); it
is capped at N - n_clusters so that every centre can keep a point.

The geometry is reached through two operations (:class:`PointSpace` for
data matrices, dense or CSR; :class:`KernelSpace` for a kernel matrix, the
centres then being coefficient rows B with m_c = sum_n B_cn phi(x_n)):
squared distances from chosen points to every point, and from weighted
means of labelled, kept points to every point.
"""

import math

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms, safe_sparse_dot

from .refine import concentration_steps, trim_mask

#: Fraction of the points trimmed when no outlier count is given: above the
#: contamination of most data sets a user would cluster without saying how
#: many outliers to expect, below the size of any cluster worth finding.
DEFAULT_TRIM_FRACTION = 0.2
#: Weight of the (trimmed) D^2 part of the sampling law; the rest is uniform.
D2_WEIGHT = 0.5
#: Cheap starts per initialisation; the best by the trimmed potential is kept.
N_SEEDINGS = 3
#: Concentration steps a cheap start gets before the starts are compared.
SCREEN_STEPS = 3
#: Concentration steps of the start that is kept (fewer when its kept set settles).
MAX_STEPS = 30


def trim_count(n_outliers, n_samples, n_clusters):
    """The number of points the start trims.

    ``n_outliers`` as the estimators take it (an int count, a fraction of N
    in (0, 0.5), or None); None trims ``ceil(DEFAULT_TRIM_FRACTION * N)``.
    Capped at N - n_clusters (at least one point kept per centre).
    """
    if n_outliers is None:
        t = math.ceil(DEFAULT_TRIM_FRACTION * n_samples)
    elif isinstance(n_outliers, (int, np.integer)):
        t = int(n_outliers)
    else:
        t = int(round(float(n_outliers) * n_samples))
    return max(0, min(t, n_samples - n_clusters))


class PointSpace:
    """Squared Euclidean distances of the rows of X (NumPy array or CSR matrix)."""

    def __init__(self, X):
        # sparse products need one dtype on both sides, and the centres are float64
        self.X = X.astype(np.float64) if sp.issparse(X) and X.dtype != np.float64 else X
        self.n_samples = X.shape[0]
        self.sq_norms = row_norms(X, squared=True).astype(np.float64, copy=False)

    def point_distances(self, index):
        """||x_i - x_n||^2 for the points ``index``, (len(index), N)."""
        rows = self.X[index]
        cross = np.asarray(safe_sparse_dot(rows, self.X.T, dense_output=True),
                           dtype=np.float64)
        return np.maximum(self.sq_norms[index, None] + self.sq_norms[None, :] - 2.0 * cross,
                          0.0)

    def points(self, index):
        """Centres placed on the points ``index``."""
        rows = self.X[index]
        return np.asarray(rows.toarray() if sp.issparse(rows) else rows, dtype=np.float64)

    def centre_distances(self, centres):
        """||m_c - x_n||^2, (C, N)."""
        cross = np.asarray(safe_sparse_dot(self.X, centres.T, dense_output=True),
                           dtype=np.float64).T
        sq = np.einsum("cj,cj->c", centres, centres)
        return np.maximum(sq[:, None] + self.sq_norms[None, :] - 2.0 * cross, 0.0)

    def means(self, labels, weights, centres):
        """Weighted means of the points of each label (``weights`` 0 where trimmed);
        a label without weight keeps its centre."""
        C = centres.shape[0]
        V = sp.csr_matrix((weights, (labels, np.arange(self.n_samples))),
                          shape=(C, self.n_samples))
        sums = np.asarray(V.sum(axis=1)).ravel()
        new = np.asarray(safe_sparse_dot(V, self.X, dense_output=True), dtype=np.float64)
        has = sums > 0
        out = centres.copy()
        out[has] = new[has] / sums[has, None]
        return out


class KernelSpace:
    """Feature-space distances from a kernel matrix K; centres are coefficient rows B."""

    def __init__(self, K, diag):
        self.K = K
        self.n_samples = K.shape[0]
        self.sq_norms = np.asarray(diag, dtype=np.float64)

    def point_distances(self, index):
        return np.maximum(self.sq_norms[index, None] + self.sq_norms[None, :]
                          - 2.0 * self.K[index], 0.0)

    def points(self, index):
        B = np.zeros((len(index), self.n_samples))
        B[np.arange(len(index)), index] = 1.0
        return B

    def centre_distances(self, B):
        BK = B @ self.K
        sq = np.einsum("cn,cn->c", BK, B)
        return np.maximum(sq[:, None] + self.sq_norms[None, :] - 2.0 * BK, 0.0)

    def means(self, labels, weights, B):
        C = B.shape[0]
        V = np.zeros((C, self.n_samples))
        V[labels, np.arange(self.n_samples)] = weights
        sums = V.sum(axis=1)
        has = sums > 0
        out = B.copy()
        out[has] = V[has] / sums[has, None]
        return out


def _trimmed(costs, n_trim):
    """Sum of ``costs`` along the last axis without the ``n_trim`` largest."""
    if n_trim <= 0:
        return costs.sum(axis=-1)
    n = costs.shape[-1]
    return np.partition(costs, n - n_trim - 1, axis=-1)[..., : n - n_trim].sum(axis=-1)


def trimmed_seeding(space, n_clusters, sample_weight, n_trim, rng, n_candidates=None):
    """Indices of ``n_clusters`` seed points (step 1 of the module docstring)."""
    n = space.n_samples
    w = np.asarray(sample_weight, dtype=np.float64)
    if n_candidates is None:
        n_candidates = 2 + int(math.log(n_clusters)) + 1
    uniform = w / w.sum() if w.sum() > 0 else np.full(n, 1.0 / n)
    chosen = []
    closest = None
    for _ in range(n_clusters):
        if closest is None:
            p = uniform.copy()
        else:
            d2 = w * closest
            d2[trim_mask(d2, n_trim)] = 0.0
            total = d2.sum()
            p = (D2_WEIGHT * d2 / total + (1.0 - D2_WEIGHT) * uniform) if total > 0 \
                else uniform.copy()
        p[chosen] = 0.0  # a point is a centre once (N close to n_clusters, duplicates)
        if not p.sum() > 0:
            p = np.ones(n)
            p[chosen] = 0.0
        p /= p.sum()
        candidates = rng.choice(n, size=min(n_candidates, np.count_nonzero(p)), replace=False,
                                p=p)
        d = space.point_distances(candidates)
        if closest is not None:
            d = np.minimum(d, closest[None, :])
        best = int(np.argmin(_trimmed(d * w[None, :], n_trim)))
        chosen.append(int(candidates[best]))
        closest = d[best]
    return np.array(chosen)


def concentrate(space, centres, sample_weight, n_trim, max_steps):
    """Concentration steps from ``centres``: (centres, trimmed potential, steps).

    Each step assigns every point to its nearest centre, keeps the N - n_trim
    points of smallest weighted cost and moves each centre to the weighted
    mean of its kept points; it stops when the labels and the kept set repeat
    (:func:`robustclust._core.refine.concentration_steps`, the one copy of
    the step).
    """
    centres, potential, steps, _ = concentration_steps(space, centres, sample_weight, n_trim,
                                                       max_steps)
    return centres, potential, steps


def robust_start(space, n_clusters, sample_weight, n_trim, rng, n_seedings=N_SEEDINGS):
    """The robust start's centres (points: (C, p); kernels: coefficients (C, N)).

    ``n_seedings`` trimmed seedings, each concentrated ``SCREEN_STEPS``
    steps; the best by the trimmed potential is concentrated until it
    settles.  See the module docstring.
    """
    best = None
    for _ in range(n_seedings):
        index = trimmed_seeding(space, n_clusters, sample_weight, n_trim, rng)
        centres, potential, _ = concentrate(space, space.points(index), sample_weight, n_trim,
                                            SCREEN_STEPS)
        if best is None or potential < best[1]:
            best = (centres, potential)
    centres, _, _ = concentrate(space, best[0], sample_weight, n_trim, MAX_STEPS)
    return centres[_first_appearance_order(space.centre_distances(centres))]


def _first_appearance_order(D):
    """Centres ordered by the first point nearest to each (centres nearest to none last).

    Starts that reach the same partition then give the same labels, so that
    restarts do not differ only by a permutation (a tie the restart
    comparison would break by rounding).
    """
    labels = np.argmin(D, axis=0)
    first = np.full(D.shape[0], D.shape[1])
    np.minimum.at(first, labels, np.arange(D.shape[1]))
    return np.argsort(first, kind="stable")
