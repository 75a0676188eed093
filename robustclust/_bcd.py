"""Block coordinate descent for robust (soft) K-means, Algorithm 1 of the paper.

The three block updates are pure functions of arrays:

* ``centre_step``     eq. (9): a weighted sum over points (a reduction); for
                      hard RKM with the group penalty the IRLS form of the
                      same step (``RKMSolver._irls_weights``);
* ``outlier_step``    eqs. (11)-(12): one prox per point (a map), delegated to
                      the penalty objects of :mod:`robustclust._penalties`;
* ``membership_step`` eq. (14) for q > 1, eq. (15) for q = 1 (a map).

``RKMSolver`` strings them together.  One iteration costs one product
``X @ M.T`` (N x C), O(N C) elementwise work and O(k C p) for the k current
outliers, so it is of the same order as one Lloyd iteration of K-means.  The
outlier matrix O is kept as (row indices, dense rows) so that its memory grows
with the number of outliers, not with N p.
"""

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms, safe_sparse_dot
from threadpoolctl import ThreadpoolController

from . import _progress
from ._kernels import hard_pass

_THREADPOOLS = ThreadpoolController()

#: Below this many rows one numpy iteration is cheaper than a parallel launch.
FUSED_MIN_ROWS = 20_000

_EMPTY_INDEX = np.empty(0, dtype=np.intp)


@dataclass
class State:
    """One iterate (M, O, U) of the BCD, with its bookkeeping."""

    centers: np.ndarray  # (C, p)
    labels: np.ndarray  # (N,) nearest/most-likely cluster (ignores outlier flags)
    memberships: np.ndarray | None  # (N, C) fuzzy U for q > 1, None for q = 1
    outlier_index: np.ndarray  # (k,) sorted indices of points with o_n != 0
    outlier_vectors: np.ndarray  # (k, p) the nonzero rows of O
    point_costs: np.ndarray  # (N,) each point's term of eq. (6), with penalty
    objective: float
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    # (sums, weights, rule): what the next centre step divides, when the fused
    # pass already has it (saves a pass over X); rule names the M-step it was
    # made for ("eq9", "irls", or "any" when there are no outliers)
    cluster_sums: tuple | None = None

    @property
    def n_outliers(self):
        return len(self.outlier_index)

    @property
    def outlier_magnitudes(self):
        """||o_n||_2 of the outlier rows."""
        return np.linalg.norm(self.outlier_vectors, axis=1)


def dense_rows(X, index):
    """Rows ``index`` of X as a dense array (X dense or CSR)."""
    if sp.issparse(X):
        return X[index].toarray()
    return X[index]


def fuzzy_memberships(costs, q):
    """Minimizer of sum_c u_c^q costs_c over the simplex, row by row (eq. (14)).

    Written as ``u_c = r_c^a / sum r^a`` with ``r_c = min(costs) / costs_c`` and
    ``a = 1 / (q - 1)`` so that nothing overflows as q -> 1+ (the result tends
    to the hard rule of eq. (15)); a row with a zero cost shares its mass
    between its zero-cost clusters.
    """
    costs = np.asarray(costs, dtype=np.float64)
    cmin = costs.min(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(cmin > 0, cmin / costs, (costs == 0).astype(np.float64))
    u = ratio ** (1.0 / (q - 1.0))
    u /= u.sum(axis=1, keepdims=True)
    return u


def residual_weights(memberships, q):
    """Rows u_n^q / sum_c u_nc^q: the weights of the soft residual r_n (eq. (12)).

    Scaled by the row maximum first so that u^q cannot underflow to 0 / 0.
    """
    wq = (memberships / memberships.max(axis=1, keepdims=True)) ** q
    return wq / wq.sum(axis=1, keepdims=True)


def centre_step(X, sample_weight, labels, memberships, q, index, vals, n_clusters):
    """Weighted means of x_n - o_n, eq. (9). Returns (sums, weights) per cluster.

    The caller divides; clusters with zero weight are the caller's to reseed.
    """
    if memberships is None:
        n = X.shape[0]
        indicator = sp.csr_matrix(
            (sample_weight, (labels, np.arange(n))), shape=(n_clusters, n), dtype=np.float64
        )
        sums = np.asarray(safe_sparse_dot(indicator, X.astype(np.float64, copy=False),
                                          dense_output=True))
        weights = np.bincount(labels, weights=sample_weight, minlength=n_clusters)
        if len(index):
            np.add.at(sums, labels[index], -(sample_weight[index, None] * vals))
    else:
        wq = memberships**q * sample_weight[:, None]
        sums = np.asarray(safe_sparse_dot(X.T, wq, dense_output=True)).T
        weights = wq.sum(axis=0)
        if len(index):
            sums -= wq[index].T @ vals
    return sums.astype(X.dtype, copy=False), weights


def residual_rows(X, centers, labels, norm_weights, index):
    """Residuals r_n of eq. (12) for the points ``index``, as dense rows."""
    xr = dense_rows(X, index)
    if norm_weights is None:
        return xr - centers[labels[index]]
    return xr - norm_weights[index] @ centers


class RKMSolver:
    """Runs Algorithm 1 on fixed data for any lam, warm-started from any state.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    sample_weight : ndarray of shape (n_samples,)
    n_clusters, q, max_iter, tol, verbose : see :class:`RobustKMeans`.
    penalty : GroupPenalty or ElementwisePenalty, the convex penalty.
    log_penalty : same class with ``weighted=True``, used by weighted runs.
    """

    chunk_rows = 4096
    #: lam = 0 is a valid problem here: every point with a residual is flagged
    zero_lambda_ok = True

    def __init__(self, X, sample_weight, n_clusters, q, penalty, log_penalty,
                 max_iter, tol, verbose=0):
        self.X = X
        self.sample_weight = sample_weight
        self.n_clusters = n_clusters
        self.q = float(q)
        self.hard = self.q == 1.0
        self.penalty = penalty
        self.log_penalty = log_penalty
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.sq_norms = row_norms(X, squared=True).astype(np.float64)
        self.n_samples, self.n_features = X.shape

    # -- pieces of one iteration -------------------------------------------------
    def _products(self, centers):
        """Cross products G = X M^T and the squared centre norms."""
        G = np.asarray(safe_sparse_dot(self.X, centers.T, dense_output=True))
        mm = row_norms(centers, squared=True)
        return G, mm

    def _norm_weights(self, memberships):
        return None if memberships is None else residual_weights(memberships, self.q)

    def _residual_sq_norms(self, G, mm, centers, labels, norm_weights):
        """||r_n||^2 for all points from G, without forming R."""
        if norm_weights is None:
            rows = np.arange(self.n_samples)
            r2 = self.sq_norms + mm[labels] - 2.0 * G[rows, labels]
        else:
            cross = np.einsum("nc,nc->n", norm_weights, G, dtype=np.float64)
            quad = np.einsum("nc,nc->n", norm_weights @ (centers @ centers.T),
                             norm_weights, dtype=np.float64)
            r2 = self.sq_norms - 2.0 * cross + quad
        return np.maximum(r2, 0.0)

    def _residuals(self, G, mm, centers, labels, norm_weights):
        """(||r_n||^2 for every point, the hard pass or None) from G = X M^T.

        For q = 1 the hard pass also carries the nearest centres that the
        U-step reuses.
        """
        if self.hard:
            passed = self.hard_pass(G, mm, labels)
            return passed[0], passed
        return self._residual_sq_norms(G, mm, centers, labels, norm_weights), None

    def outlier_step(self, lam, penalty, r2, centers, labels, norm_weights,
                     prev_index, prev_vals):
        """O-step, eqs. (11)-(12) (group) or entry-wise soft thresholding.

        ``r2`` holds ||r_n||^2 for every point (used by the group penalty).
        """
        X = self.X
        if penalty.row_sparse:
            # only points whose residual norm exceeds their threshold can move
            tau = penalty.point_thresholds(lam, self.n_samples, prev_index,
                                           penalty.magnitudes(prev_vals))
            cand = np.flatnonzero(r2 > tau * tau)
            R = residual_rows(X, centers, labels, norm_weights, cand)
            vals = penalty.prox(R, tau if np.isscalar(tau) else tau[cand])
        else:
            lookup = np.full(self.n_samples, -1, dtype=np.intp)
            lookup[prev_index] = np.arange(len(prev_index))
            idx_parts, val_parts = [], []
            for start in range(0, self.n_samples, self.chunk_rows):
                rows = np.arange(start, min(start + self.chunk_rows, self.n_samples))
                R = residual_rows(X, centers, labels, norm_weights, rows)
                prev = np.zeros(R.shape)
                pos = lookup[rows]
                prev[pos >= 0] = prev_vals[pos[pos >= 0]]
                O = penalty.prox(R, penalty.threshold_at(lam, prev))
                keep = np.flatnonzero(np.any(O != 0, axis=1))
                idx_parts.append(rows[keep])
                val_parts.append(O[keep])
            cand = np.concatenate(idx_parts)
            vals = np.concatenate(val_parts)
        keep = np.any(vals != 0, axis=1)
        return cand[keep].astype(np.intp), vals[keep].astype(X.dtype, copy=False)

    def _outlier_row_costs(self, lam, penalty, centers, mm, index, vals):
        """||x_n - o_n - m_c||^2 + lam rho(o_n) for the outlier rows, (k, C)."""
        Y = dense_rows(self.X, index) - vals
        D = np.maximum(row_norms(Y, squared=True)[:, None] - 2.0 * (Y @ centers.T) + mm, 0.0)
        return D + (lam * penalty.value(vals))[:, None]

    def hard_pass(self, G, mm, prev_labels):
        """||r_n||^2 under the previous labels, nearest centres, their costs.

        numpy version of :func:`robustclust._kernels.hard_pass`, for sparse X.
        """
        rows = np.arange(self.n_samples)
        T = mm - 2.0 * G
        labels = T.argmin(axis=1)
        r2 = np.maximum(self.sq_norms + T[rows, prev_labels], 0.0)
        best = np.maximum(self.sq_norms + T[rows, labels], 0.0)
        return r2, labels, best

    def membership_step(self, lam, penalty, centers, G, mm, index, vals, hard_pass=None):
        """U-step, eq. (14) (q > 1) or eq. (15) (q = 1), with the current O.

        For q = 1 ``hard_pass`` carries the nearest centres of the points with
        o_n = 0; only the outlier rows are recomputed.  For q > 1 ``G`` is
        overwritten.  Returns (labels, memberships, point_costs).
        """
        if self.hard:
            _, labels, costs = hard_pass if hard_pass is not None else \
                self.hard_pass(G, mm, np.zeros(self.n_samples, dtype=np.intp))
            if len(index):
                D = self._outlier_row_costs(lam, penalty, centers, mm, index, vals)
                labels[index] = D.argmin(axis=1)
                costs[index] = D.min(axis=1)
            return labels, None, costs
        D = G.astype(np.float64, copy=False)
        D *= -2.0
        D += mm
        D += self.sq_norms[:, None]
        np.maximum(D, 0.0, out=D)
        if len(index):
            D[index] = self._outlier_row_costs(lam, penalty, centers, mm, index, vals)
        U = fuzzy_memberships(D, self.q)
        costs = np.einsum("nc,nc->n", U**self.q, D)
        return np.argmax(U, axis=1), U, costs

    def _reseed_empty(self, centers, weights, state):
        """Move centres of empty clusters to the worst-fitting inliers.

        As scikit-learn's K-means does, but outliers are never used as seeds.
        A centre with no members does not enter the cost, so this cannot
        increase it.
        """
        if not self.hard or np.all(weights > 0):
            return centers
        # zero weight can also mean members that all carry an IRLS weight of 0
        # (lam = 0); those clusters are not empty and keep their centre
        members = np.bincount(state.labels, self.sample_weight, self.n_clusters)
        empty = np.flatnonzero(members <= 0)
        if len(empty) == 0:
            return centers
        far = worst_fitting_inliers(state.point_costs, state.outlier_index, len(empty))
        centers[empty] = dense_rows(self.X, far)
        return centers

    # -- whole runs -----------------------------------------------------------
    def objective_of(self, costs):
        return float(np.dot(self.sample_weight, costs))

    def _fused(self):
        return self.hard and not sp.issparse(self.X) and self.n_samples >= FUSED_MIN_ROWS

    def init_state(self, centers, lam=None):
        """Cold state from initial centres: memberships, then (given ``lam``) O.

        Without ``lam`` (or with lam = inf) O = 0 and the memberships best fit
        ``centers``.  With a finite ``lam`` the O- and U-steps are also run at
        the initial centres, so the first centre update already discounts the
        points far from every initial centre instead of being dragged by them
        (the cycle M -> O -> U simply starts at O).
        """
        centers = np.array(centers, dtype=self.X.dtype)
        empty_vals = np.empty((0, self.n_features), dtype=self.X.dtype)
        finite = lam is not None and np.isfinite(lam)
        if self._fused():
            with _THREADPOOLS.limit(limits=1, user_api="blas"):
                _, labels, costs, sums, weights = hard_pass(
                    self.X, centers, self.sq_norms, self.sample_weight,
                    np.zeros(self.n_samples, dtype=np.intp))
            if not finite:
                return State(centers, labels, None, _EMPTY_INDEX, empty_vals, costs,
                             self.objective_of(costs), cluster_sums=(sums, weights, "any"))
            # residuals to the nearest centres are the distances just computed
            index, vals = self.outlier_step(lam, self.penalty, costs, centers, labels, None,
                                            _EMPTY_INDEX, empty_vals)
            nearest = labels[index]
            mm = row_norms(centers, squared=True)
            labels, _, costs = self.membership_step(lam, self.penalty, centers, None, mm, index,
                                                    vals, (costs, labels, costs.copy()))
            irls = self.penalty.name == "group"
            sums, weights = self._fused_sums(sums, weights, nearest, labels, index, vals,
                                             lam, centers, irls)
            return State(centers, labels, None, index, vals, costs, self.objective_of(costs),
                         cluster_sums=(sums, weights, ("irls", lam) if irls else "eq9"))
        G, mm = self._products(centers)
        labels, U, costs = self.membership_step(
            np.inf, self.penalty, centers, G.copy(), mm, _EMPTY_INDEX, empty_vals)
        index, vals = _EMPTY_INDEX, empty_vals
        if finite:
            labels, U, index, vals, costs = self._step_at_fixed_centres(
                lam, self.penalty, centers, G, mm, labels, U, index, vals)
        return State(centers, labels, U, index, vals, costs, self.objective_of(costs))

    def run(self, state, lam, weighted=False):
        """BCD iterations at ``lam`` from ``state`` until the stopping rule holds.

        Stops when both ||M_t - M_{t-1}||_F <= tol ||M_t||_F (the paper's rule)
        and ||O_t - O_{t-1}||_F <= tol max(||O_t||_F, ||M_t||_F): a run started
        from a converged solution with a new penalty must let O settle too.
        """
        penalty = self.log_penalty if weighted else self.penalty
        if self._fused():
            # the fused kernel parallelizes over rows; BLAS threads inside it
            # would oversubscribe the cores
            with _THREADPOOLS.limit(limits=1, user_api="blas"):
                return self._run(state, lam, penalty, fused=True)
        return self._run(state, lam, penalty, fused=False)

    def _irls_weights(self, lam, centers, labels, index):
        """Multipliers a_n = min(1, (lam/2) / ||x_n - m_{c(n)}||) of the outlier rows.

        Hard RKM with the group penalty: for fixed labels, minimizing over O
        leaves each point the Huber cost H(||x_n - m_c||) with knee lam / 2,
        and the (M, O) block is Huber location estimation.  Its IRLS step,
        m_c = sum w_n a_n x_n / sum w_n a_n, minimizes a quadratic majorizer of
        the cost that touches it at the current iterate, so it never increases
        the cost of eq. (5); its fixed points are those of eq. (9) (centres
        equal the means of x_n - o_n), but where eq. (9) moves a centre by a
        step shrunk by the share of flagged points, IRLS does not, so runs
        with many outliers (the bottom of a path) need far fewer iterations.
        """
        if len(index) == 0:
            return np.ones(0)
        R = dense_rows(self.X, index) - centers[labels[index]]
        dist = np.sqrt(row_norms(R, squared=True))
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, (lam / 2.0) / dist)

    def _fused_sums(self, sums, weights, nearest, labels, index, vals, lam, centers, irls):
        """Cluster sums for the next centre step, from the fused pass's ones.

        The kernel summed w x_n into each point's nearest cluster; outlier rows
        contribute w (x_n - o_n) (eq. (9)) or w a_n x_n (IRLS) to their final
        cluster instead.  Returns (sums, weights), modified in place.
        """
        if len(index):
            w = self.sample_weight[index]
            x = dense_rows(self.X, index)
            if irls:
                w_new, target = w * self._irls_weights(lam, centers, labels, index), x
            else:
                w_new, target = w, x - vals
            final = labels[index]
            sums += (_onehot(final, w_new, self.n_clusters).T @ target
                     - _onehot(nearest, w, self.n_clusters).T @ x)
            weights += (np.bincount(final, w_new, self.n_clusters)
                        - np.bincount(nearest, w, self.n_clusters))
        return sums, weights

    def _run(self, state, lam, penalty, fused):
        centers, labels, U = state.centers, state.labels, state.memberships
        index, vals = state.outlier_index, state.outlier_vectors
        w = self.sample_weight
        irls = self.hard and penalty.name == "group" and not penalty.weighted
        # IRLS weights depend on lam: cached sums are reusable only at the same lam
        rule = ("irls", lam) if irls else "eq9"
        history = []
        converged = False
        current = state
        cached = state.cluster_sums
        next_sums = (cached[:2] if fused and cached is not None and cached[2] in (rule, "any")
                     else None)
        for it in range(1, self.max_iter + 1):
            if next_sums is not None:
                sums, weights = next_sums
            elif irls:
                w_eff = w.copy()
                w_eff[index] *= self._irls_weights(lam, centers, labels, index)
                sums, weights = centre_step(self.X, w_eff, labels, None, self.q, _EMPTY_INDEX,
                                            vals[:0], self.n_clusters)
            else:
                sums, weights = centre_step(self.X, w, labels, U, self.q, index, vals,
                                            self.n_clusters)
            with np.errstate(divide="ignore", invalid="ignore"):
                new_centers = np.where(weights[:, None] > 0,
                                       sums / weights[:, None], centers).astype(self.X.dtype)
            new_centers = self._reseed_empty(new_centers, weights, current)
            norm_weights = self._norm_weights(U)
            if fused:
                G = None
                mm = row_norms(new_centers, squared=True)
                r2, lab0, best, s_next, w_next = hard_pass(
                    self.X, new_centers, self.sq_norms, w, labels)
                passed = (r2, lab0, best)
            else:
                G, mm = self._products(new_centers)
                r2, passed = self._residuals(G, mm, new_centers, labels, norm_weights)
            new_index, new_vals = self.outlier_step(
                lam, penalty, r2, new_centers, labels, norm_weights, index, vals)
            if fused:
                nearest = lab0[new_index]  # before the outlier rows are reassigned
            labels, U, costs = self.membership_step(
                lam, penalty, new_centers, G, mm, new_index, new_vals, passed)
            if fused:
                next_sums = self._fused_sums(s_next, w_next, nearest, labels, new_index,
                                             new_vals, lam, new_centers, irls)
            obj = self.objective_of(costs)
            history.append(obj)
            center_shift = np.linalg.norm(new_centers - centers)
            outlier_shift = _outlier_shift(index, vals, new_index, new_vals)
            centers, index, vals = new_centers, new_index, new_vals
            current = State(centers, labels, U, index, vals, costs, obj,
                            cluster_sums=None if next_sums is None else (*next_sums, rule))
            _progress.iteration()
            if self.verbose:
                print(f"  iteration {it}: objective {obj:.6g}, outliers {len(index)}")
            scale_m = np.linalg.norm(centers)
            scale_o = max(np.linalg.norm(vals), scale_m)
            if center_shift <= self.tol * scale_m and outlier_shift <= self.tol * scale_o:
                converged = True
                break
        return replace(current, history=history, n_iter=it, converged=converged)

    def _step_at_fixed_centres(self, lam, penalty, centers, G, mm, labels, U, index, vals):
        """One O-step and one U-step with the centres (and G = X M^T) fixed.

        Returns (labels, memberships, outlier_index, outlier_vectors, costs).
        """
        nw = self._norm_weights(U)
        r2, passed = self._residuals(G, mm, centers, labels, nw)
        index, vals = self.outlier_step(lam, penalty, r2, centers, labels, nw, index, vals)
        labels, U, costs = self.membership_step(lam, penalty, centers, G.copy(), mm,
                                                index, vals, passed)
        return labels, U, index, vals, costs

    def assign(self, centers, stages, max_iter=100):
        """Memberships and outlier vectors of the solver's points, centres fixed.

        The O- and U-steps of the fit, alternated with the centres held fixed
        until they settle.  ``stages`` is a list of (lam, weighted) pairs run
        one after the other, each started from the previous one's result, as
        in training: [(lam, False)] for RKM, [(lam_unweighted, False),
        (lam, True)] for the weighted variant, whose MM reweighting starts
        from the unweighted solution.  For q = 1 and the convex penalty one
        pass is exact: the nearest centre and the prox of the residual
        (moving x toward its nearest centre keeps that centre nearest).

        Returns (labels, memberships or None, outlier_index, outlier_vectors,
        point_costs).
        """
        centers = np.asarray(centers, dtype=self.X.dtype)
        G, mm = self._products(centers)
        index = _EMPTY_INDEX
        vals = np.empty((0, self.n_features), dtype=self.X.dtype)
        labels, U, costs = self.membership_step(np.inf, self.penalty, centers, G.copy(), mm,
                                                index, vals)
        for lam, weighted in stages:
            penalty = self.log_penalty if weighted else self.penalty
            for _ in range(max_iter):
                new_labels, new_U, new_index, new_vals, costs = self._step_at_fixed_centres(
                    lam, penalty, centers, G, mm, labels, U, index, vals)
                settled = (np.array_equal(new_index, index)
                           and np.allclose(new_vals, vals, rtol=1e-12, atol=0)
                           and np.array_equal(new_labels, labels)
                           and (U is None or np.allclose(new_U, U, rtol=0, atol=1e-12)))
                index, vals, labels, U = new_index, new_vals, new_labels, new_U
                if settled:
                    break
        return labels, U, index, vals, costs

    def lambda_max(self, state):
        """Smallest lam at which the O-step flags nothing, from ``state``."""
        return self.penalty.lambda_max(self.residual_max(state))

    def residual_max(self, state):
        """max_n ||r_n||_2 (group) or max_{n,j} |r_nj| (elementwise) at ``state``.

        With O = 0 at a K-means fixed point this gives lam_max, the smallest lam
        at which no point is flagged.
        """
        nw = self._norm_weights(state.memberships)
        if self.penalty.row_sparse:
            G, mm = self._products(state.centers)
            r2 = self._residual_sq_norms(G, mm, state.centers, state.labels, nw)
            return float(np.sqrt(r2.max()))
        best = 0.0
        for start in range(0, self.n_samples, self.chunk_rows):
            rows = np.arange(start, min(start + self.chunk_rows, self.n_samples))
            R = residual_rows(self.X, state.centers, state.labels, nw, rows)
            best = max(best, float(np.abs(R).max()))
        return best

    def _sq_dists(self, centers):
        G, mm = self._products(centers)
        return np.maximum(self.sq_norms[:, None] - 2.0 * G + mm, 0.0)

    def nearest_sq_dists(self, centers):
        """Squared distance of every point to its nearest centre."""
        return self._sq_dists(centers).min(axis=1)

    def clean_costs(self, centers):
        """Each point's best cost without outlier term: min_u sum_c u^q ||x - m_c||^2."""
        D = self._sq_dists(centers)
        if self.hard:
            return D.min(axis=1)
        U = fuzzy_memberships(D, self.q)
        return np.einsum("nc,nc->n", U**self.q, D)

    def trimmed_cost(self, state, n_trim):
        """The l0-constrained cost of eq. (3) at the state's centres.

        For fixed centres, the best choice of at most ``n_trim`` outliers is the
        points with the largest weighted cost; they cost nothing. Comparable
        across states whatever their own outlier counts.
        """
        costs = self.sample_weight * self.clean_costs(state.centers)
        if n_trim > 0:
            worst = np.argpartition(-costs, n_trim - 1)[:n_trim]
            costs[worst] = 0.0
        return float(costs.sum())


def worst_fitting_inliers(point_costs, outlier_index, k):
    """Indices of the k non-outliers with the largest cost: reseeds for empty clusters."""
    costs = point_costs.copy()
    costs[outlier_index] = -np.inf
    return np.argsort(-costs, kind="stable")[:k]


def _onehot(labels, weights, n_clusters):
    """(k, C) matrix with ``weights`` at (i, labels[i])."""
    A = np.zeros((len(labels), n_clusters))
    A[np.arange(len(labels)), labels] = weights
    return A


def _outlier_shift(index_a, vals_a, index_b, vals_b):
    """||O_a - O_b||_F for two sparse-row outlier matrices."""
    if np.array_equal(index_a, index_b):
        return float(np.linalg.norm(vals_a - vals_b))
    union = np.union1d(index_a, index_b)
    if len(union) == 0:
        return 0.0
    diff = np.zeros((len(union), vals_a.shape[1] if len(index_a) else vals_b.shape[1]))
    diff[np.searchsorted(union, index_a)] += vals_a
    diff[np.searchsorted(union, index_b)] -= vals_b
    return float(np.linalg.norm(diff))
