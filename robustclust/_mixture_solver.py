"""EM with outlier vectors for a Gaussian mixture with one common covariance:
Algorithm 2 of the paper (RPC), extended to diagonal and full covariances.

Cost (eq. (8)), with rho(t) = t (RPC) or log(1 + t / eps) (weighted RPC):

    F = - sum_n log sum_c pi_c N(x_n - o_n; m_c, Sigma)
        + lam sum_n rho(||o_n||_{Sigma^-1})

One iteration, from the posteriors gamma of the current parameters:

* pi_c = mean_n gamma_nc (eq. (22));
* m_c = gamma-weighted mean of x_n - o_n (eq. (23));
* O-step (eq. (24)): since sum_c gamma_nc = 1,
      sum_c gamma_nc / 2 ||x_n - m_c - o||^2_{S^-1} = 1/2 ||r_n - o||^2_{S^-1} + const
  with r_n = x_n - sum_c gamma_nc m_c.  In whitened coordinates
  (z = Sigma^{-1/2} v) this is a plain group-lasso prox, so
      o_n = r_n [1 - tau_n / ||r_n||_{Sigma^-1}]_+ ,
  tau_n = lam (RPC; for Sigma = sigma^2 I this is eq. (25), threshold lam sigma
  on ||r_n||_2), or for the log penalty its tangent at the previous
  t_n = ||o_n||_{Sigma^-1}: tau_n = lam / (t_n + eps) (eq. (30), majorized as a
  function of the Mahalanobis norm, so the bound holds for every Sigma);
* Sigma-step (eq. (26)): with S = sum_n sum_c gamma_nc (y_n - m_c)(y_n - m_c)^T,
  y_n = x_n - o_n, the cost in Sigma is
      1/2 tr(Sigma^-1 S) + N/2 log det Sigma + sum_n lam_n ||o_n||_{Sigma^-1}.
  - spherical, Sigma = sigma^2 I: the exact positive root of eq. (27) with
    lam sum_n ||o_n|| replaced by sum_n lam_n ||o_n||_2;
  - diagonal or full: ||o||_{Sigma^-1} = sqrt(q), q = o^T Sigma^-1 o, is concave
    in q, so sqrt(q) <= sqrt(q0) + (q - q0) / (2 sqrt(q0)) at the current
    Sigma_0; the majorizer is 1/2 tr(Sigma^-1 B) + N/2 log det Sigma with
        B = S + sum_n (lam_n / ||o_n||_{Sigma_0^-1}) o_n o_n^T,
    minimized by Sigma = B / N (its diagonal for "diag").  It touches the cost
    at Sigma_0, so the step never increases it.
  ``reg_covar`` is a floor on the eigenvalues (variances): the minimizer of
  the same majorizer over {Sigma >= reg_covar I} clips the eigenvalues of B/N
  (the scalar cost is unimodal in each eigenvalue), so the floor keeps
  monotonicity, unlike adding it to the diagonal.
* E-step with the new parameters: gamma and the cost F (log-sum-exp).

Each block step minimizes (or minimizes a majorizer of) the EM bound, so F
never increases.  The statistics need one product X M^T (spherical, diag) or
a whitening X P plus one product (full) per E-step and one for the O-step,
plus O(k p^2) for the k outliers: X^T X is computed once.
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from scipy import stats
from scipy.linalg import cholesky, solve_triangular
from scipy.special import logsumexp
from sklearn.utils.extmath import row_norms, safe_sparse_dot

from . import _progress
from ._bcd import _EMPTY_INDEX, _outlier_shift, dense_rows

_LOG_2PI = math.log(2 * math.pi)
_SINGULAR = ("The common covariance became singular (a constant or collinear feature, or "
             "more components than distinct points?): increase reg_covar.")


@dataclass
class MixtureState:
    """Parameters (pi, M, Sigma, O), the posteriors they give and bookkeeping."""

    centers: np.ndarray  # (C, p) means
    weights: np.ndarray  # (C,) pi
    covariance: np.ndarray  # () variance, (p,) variances or (p, p)
    outlier_index: np.ndarray
    outlier_vectors: np.ndarray
    memberships: np.ndarray  # (N, C) posteriors at these parameters
    point_log_likelihood: np.ndarray  # (N,) log sum_c pi_c N(x_n - o_n; m_c, Sigma)
    objective: float
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False

    @property
    def n_outliers(self):
        return len(self.outlier_index)

    @property
    def outlier_magnitudes(self):
        """||o_n||_2 of the outlier rows."""
        return np.linalg.norm(self.outlier_vectors, axis=1)

    @property
    def labels(self):
        return np.argmax(self.memberships, axis=1)


class Covariance:
    """A common covariance of one type: its whitening factor and statistics.

    ``P`` is the precision Cholesky factor (Sigma^-1 = P P^T): a scalar
    1/sigma (spherical), a vector (diag) or an upper-triangular matrix (full,
    scikit-learn's ``precisions_cholesky_`` convention).
    """

    def __init__(self, kind, value, n_features):
        self.kind = kind
        self.value = value
        self.p = n_features
        variances = np.diag(value) if kind == "full" else np.asarray(value)
        if not np.all(variances > 0):
            raise ValueError(_SINGULAR)
        if kind == "full":
            try:
                chol = cholesky(value, lower=True)
            except np.linalg.LinAlgError:
                raise ValueError(_SINGULAR) from None
            self.P = solve_triangular(chol, np.eye(n_features), lower=True).T
            self.log_det = 2.0 * np.log(np.diag(chol)).sum()
        elif kind == "diag":
            self.P = 1.0 / np.sqrt(value)
            self.log_det = np.log(value).sum()
        else:
            self.P = 1.0 / math.sqrt(value)
            self.log_det = n_features * math.log(value)

    def whiten(self, V):
        """V Sigma^{-1/2} in the P convention: rows of V to whitened rows."""
        return V @ self.P if self.kind == "full" else V * self.P

    def sq_norms(self, V):
        """||v||^2_{Sigma^-1} for the rows of a dense V."""
        return row_norms(self.whiten(V), squared=True)

    def data_terms(self, X, sq_norms_X):
        """Whitened data: (Xw or None, ||x_n||^2_{Sigma^-1}) for all points."""
        if self.kind == "full":
            Xw = np.asarray(safe_sparse_dot(X, self.P, dense_output=True))
            return Xw, row_norms(Xw, squared=True)
        if self.kind == "diag":
            P2 = self.P**2
            if sp.issparse(X):
                return None, np.asarray(X.multiply(X) @ P2).ravel()
            return None, np.einsum("np,p,np->n", X, P2, X)
        return None, sq_norms_X * self.P**2

    def cross(self, X, Xw, M):
        """x_n^T Sigma^-1 m_c for all points and centres, (N, C)."""
        if self.kind == "full":
            return Xw @ self.whiten(M).T
        return np.asarray(safe_sparse_dot(X, (M * self.P**2).T, dense_output=True))


def floor_covariance(kind, B_over_N, reg_covar):
    """Minimizer of 1/2 tr(S^-1 B) + N/2 log det S over S >= reg I (see module)."""
    if kind == "full":
        vals, vecs = np.linalg.eigh((B_over_N + B_over_N.T) / 2)
        return (vecs * np.maximum(vals, reg_covar)) @ vecs.T
    return np.maximum(B_over_N, reg_covar)


def consistency_factor(p):
    """0.5 / F_{chi^2_{p+2}}(median of chi^2_p): makes the scatter of the closest
    half of Gaussian points unbiased for sigma^2 (as in the minimum covariance
    determinant)."""
    return 0.5 / stats.chi2.cdf(stats.chi2.median(p), p + 2)


class RPCSolver:
    """Runs (weighted) RPC on fixed data for any lam, warm-started from any state.

    The same calls as :class:`robustclust._bcd.RKMSolver`, so that
    :mod:`robustclust._selection` chooses lam for both.
    """

    #: lam = 0 makes eq. (8) unbounded below (Section II-B): never solve at it
    zero_lambda_ok = False

    def __init__(self, X, n_components, covariance_type, penalty, log_penalty, reg_covar,
                 max_iter, tol, verbose=0):
        self.X = X
        self.n_samples, self.n_features = X.shape
        self.n_clusters = n_components
        self.kind = covariance_type
        self.penalty = penalty
        self.log_penalty = log_penalty
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.sq_norms = row_norms(X, squared=True).astype(np.float64)
        gram = np.asarray(safe_sparse_dot(X.T, X, dense_output=True), dtype=np.float64)
        self.gram = gram  # X^T X, once

    # -- pieces --------------------------------------------------------------------
    def _outlier_rows_distances(self, cov, M, index, vals):
        """||x_n - o_n - m_c||^2_{Sigma^-1} for the outlier rows, (k, C)."""
        Y = cov.whiten(dense_rows(self.X, index) - vals)
        Mw = cov.whiten(M)
        return np.maximum(row_norms(Y, squared=True)[:, None] - 2.0 * Y @ Mw.T
                          + row_norms(Mw, squared=True), 0.0)

    def e_step(self, M, weights, cov, index, vals, lam, penalty):
        """Posteriors, per-point log-likelihoods and the cost F of eq. (8)."""
        Xw, xx = cov.data_terms(self.X, self.sq_norms)
        D = xx[:, None] - 2.0 * cov.cross(self.X, Xw, M) + cov.sq_norms(M)
        np.maximum(D, 0.0, out=D)
        if len(index):
            D[index] = self._outlier_rows_distances(cov, M, index, vals)
        log_prob = np.log(weights) - 0.5 * (self.n_features * _LOG_2PI + cov.log_det + D)
        log_norm = logsumexp(log_prob, axis=1)
        resp = np.exp(log_prob - log_norm[:, None])
        cost = -float(log_norm.sum())
        if len(index):
            cost += lam * float(penalty.value(cov.whiten(vals)).sum())
        return resp, log_norm, cost

    def _state(self, M, weights, cov, index, vals, lam, penalty):
        resp, log_norm, cost = self.e_step(M, weights, cov, index, vals, lam, penalty)
        return MixtureState(M, weights, cov.value, index, vals, resp, log_norm, cost)

    def _residual_sq_norms(self, resp, M, cov):
        """||r_n||^2_{Sigma^-1}, r_n = x_n - sum_c gamma_nc m_c, without forming R."""
        Xw, xx = cov.data_terms(self.X, self.sq_norms)
        Mw = cov.whiten(M)
        cross = np.einsum("nc,nc->n", resp, cov.cross(self.X, Xw, M))
        quad = np.einsum("nc,nc->n", resp @ (Mw @ Mw.T), resp)
        return np.maximum(xx - 2.0 * cross + quad, 0.0)

    def outlier_step(self, lam, penalty, resp, M, cov, prev_index, prev_vals):
        """eq. (24): group prox of r_n in Mahalanobis norm (module docstring)."""
        r2 = self._residual_sq_norms(resp, M, cov)
        # the thresholds are lam (not lam / 2 as in RKM): pass 2 lam
        tau = penalty.point_thresholds(2.0 * lam, self.n_samples, prev_index,
                                       penalty.magnitudes(cov.whiten(prev_vals)))
        cand = np.flatnonzero(r2 > tau * tau)
        R = dense_rows(self.X, cand) - resp[cand] @ M
        shrink = penalty.shrink(np.sqrt(cov.sq_norms(R)), tau if np.isscalar(tau) else tau[cand])
        vals = R * shrink[:, None]
        keep = shrink > 0
        # kept in float64: rounding o to float32 would make the step inexact
        return cand[keep], vals[keep]

    def covariance_step(self, lam, penalty, resp, M, sums_x, nk, index, vals, cov_old):
        """eq. (26)/(27): exact root (spherical) or majorized closed form."""
        N, p = self.n_samples, self.n_features
        # a_c = sum_n gamma_nc (x_n - o_n)
        A = sums_x - (resp[index].T @ vals if len(index) else 0.0)
        Xo = dense_rows(self.X, index)
        cross_xo = Xo.T @ vals if len(index) else np.zeros((p, p))
        Syy = self.gram - cross_xo - cross_xo.T + vals.T @ vals
        S = Syy - M.T @ A - A.T @ M + (M.T * nk) @ M
        lam_n = np.zeros(len(index))
        if len(index):
            t0 = np.sqrt(cov_old.sq_norms(vals))
            lam_n = lam / (t0 + penalty.eps) if penalty.weighted else np.full(len(index), lam)
        if self.kind == "spherical":
            a = float(np.dot(lam_n, np.sqrt(row_norms(vals, squared=True)))) if len(index) else 0.0
            h = a / (2.0 * N * p)
            sigma = h + math.sqrt(max(np.trace(S), 0.0) / (N * p) + h * h)
            return max(sigma * sigma, self.reg_covar)
        B = S
        if len(index):
            B = S + (vals.T * (lam_n / t0)) @ vals
        if self.kind == "diag":
            return floor_covariance("diag", np.diag(B) / N, self.reg_covar)
        return floor_covariance("full", B / N, self.reg_covar)

    # -- the solver interface ---------------------------------------------------------
    def params_from_means(self, means, exclude=None):
        """Initial pi and Sigma from initial means: a robust nearest-mean partition.

        pi: the proportions of the nearest-mean partition.  Sigma: the scatter
        of the half of the points closest to their mean, times the consistency
        factor 0.5 / F_{chi^2_{p+2}}(median of chi^2_p) that makes it unbiased
        for Gaussian clusters (as in the minimum covariance determinant).  A
        scatter of all points would be inflated by the outliers, and the
        threshold lam sqrt(Sigma) of the first O-steps with it.  ``exclude``
        (bool mask) leaves points out as well.
        """
        M = np.asarray(means, dtype=np.float64)
        D = np.maximum(self.sq_norms[:, None] - 2.0 * np.asarray(
            safe_sparse_dot(self.X, M.T, dense_output=True)) + row_norms(M, squared=True), 0.0)
        labels = D.argmin(axis=1)
        d2 = D[np.arange(self.n_samples), labels]
        counts = np.bincount(labels, minlength=self.n_clusters).astype(np.float64)
        tiny = 10 * np.finfo(float).eps
        weights = (counts + tiny) / (counts.sum() + tiny * self.n_clusters)
        keep = np.ones(self.n_samples, bool) if exclude is None else ~exclude
        keep &= d2 <= np.median(d2[keep])
        idx = np.flatnonzero(keep)
        R = dense_rows(self.X, idx) - M[labels[idx]]
        p = self.n_features
        factor = consistency_factor(p)
        n = max(len(idx), 1)
        if self.kind == "spherical":
            cov = max(factor * float((R * R).sum()) / (n * p), self.reg_covar)
        elif self.kind == "diag":
            cov = floor_covariance("diag", factor * (R * R).sum(0) / n, self.reg_covar)
        else:
            cov = floor_covariance("full", factor * (R.T @ R) / n, self.reg_covar)
        if np.all(np.asarray(cov) <= 0):  # every kept point on its mean
            cov = np.asarray(cov) + 1.0
        return M, weights, cov

    def init_state(self, init, lam=None):
        """State at the initial parameters; with a finite lam, O at them too.

        ``init`` is (means, exclude): initial means and an optional mask of
        points to leave out of the initial covariance.
        """
        means, exclude = init
        M, weights, cov_value = self.params_from_means(means, exclude)
        cov = Covariance(self.kind, cov_value, self.n_features)
        empty = np.empty((0, self.n_features), dtype=self.X.dtype)
        state = self._state(M, weights, cov, _EMPTY_INDEX, empty, np.inf, self.penalty)
        if lam is None or not np.isfinite(lam):
            return state
        index, vals = self.outlier_step(lam, self.penalty, state.memberships, M, cov,
                                        _EMPTY_INDEX, empty)
        return self._state(M, weights, cov, index, vals, lam, self.penalty)

    def run(self, state, lam, weighted=False):
        """EM iterations at ``lam`` from ``state`` until M and O settle."""
        penalty = self.log_penalty if weighted else self.penalty
        M, weights = state.centers, state.weights
        cov = Covariance(self.kind, state.covariance, self.n_features)
        index, vals = state.outlier_index, state.outlier_vectors
        resp = state.memberships
        history, converged = [], False
        current = state
        for it in range(1, self.max_iter + 1):
            nk = resp.sum(axis=0) + 10 * np.finfo(float).eps
            new_weights = nk / nk.sum()
            sums_x = np.asarray(safe_sparse_dot(resp.T, self.X, dense_output=True))
            sums = sums_x - (resp[index].T @ vals if len(index) else 0.0)
            new_M = sums / nk[:, None]
            new_index, new_vals = self.outlier_step(lam, penalty, resp, new_M, cov, index, vals)
            cov_value = self.covariance_step(lam, penalty, resp, new_M, sums_x, nk, new_index,
                                             new_vals, cov)
            new_cov = Covariance(self.kind, cov_value, self.n_features)
            resp, log_norm, obj = self.e_step(new_M, new_weights, new_cov, new_index, new_vals,
                                              lam, penalty)
            history.append(obj)
            center_shift = np.linalg.norm(new_M - M)
            outlier_shift = _outlier_shift(index, vals, new_index, new_vals)
            M, weights, cov, index, vals = new_M, new_weights, new_cov, new_index, new_vals
            current = MixtureState(M, weights, cov.value, index, vals, resp, log_norm, obj)
            _progress.iteration()
            if self.verbose:
                print(f"  iteration {it}: objective {obj:.6g}, outliers {len(index)}")
            scale_m = np.linalg.norm(M)
            if (center_shift <= self.tol * scale_m
                    and outlier_shift <= self.tol * max(np.linalg.norm(vals), scale_m)):
                converged = True
                break
        return replace(current, history=history, n_iter=it, converged=converged)

    def lambda_max(self, state):
        """max_n ||r_n||_{Sigma^-1} at a lam = inf fixed point: the O-step threshold
        is lam itself, so just below it one point is flagged."""
        cov = Covariance(self.kind, state.covariance, self.n_features)
        return math.sqrt(float(self._residual_sq_norms(state.memberships, state.centers,
                                                       cov).max()))

    def trimmed_cost(self, state, n_trim):
        """Negative log-likelihood (o = 0) of all but the n_trim least likely points."""
        cov = Covariance(self.kind, state.covariance, self.n_features)
        _, log_norm, _ = self.e_step(state.centers, state.weights, cov, _EMPTY_INDEX,
                                     state.outlier_vectors[:0], np.inf, self.penalty)
        nll = -log_norm
        if n_trim > 0:
            nll[np.argpartition(-nll, n_trim - 1)[:n_trim]] = 0.0
        return float(nll.sum())

    def assign(self, M, weights, cov_value, stages, max_iter=100):
        """Posteriors and outlier vectors of the solver's points, parameters fixed.

        E- and O-steps alternate until they settle; ``stages`` is a list of
        (lam, weighted) pairs run one after the other as in training (the
        weighted MM starts from the unweighted solution).

        Returns (memberships, outlier_index, outlier_vectors, point_log_likelihood).
        """
        cov = Covariance(self.kind, cov_value, self.n_features)
        index = _EMPTY_INDEX
        vals = np.empty((0, self.n_features), dtype=self.X.dtype)
        resp, log_norm, _ = self.e_step(M, weights, cov, index, vals, np.inf, self.penalty)
        for lam, weighted in stages:
            penalty = self.log_penalty if weighted else self.penalty
            for _ in range(max_iter):
                new_index, new_vals = self.outlier_step(lam, penalty, resp, M, cov, index, vals)
                new_resp, log_norm, _ = self.e_step(M, weights, cov, new_index, new_vals, lam,
                                                    penalty)
                settled = (np.array_equal(new_index, index)
                           and np.allclose(new_vals, vals, rtol=1e-12, atol=0)
                           and np.allclose(new_resp, resp, rtol=0, atol=1e-12))
                index, vals, resp = new_index, new_vals, new_resp
                if settled:
                    break
        return resp, index, vals, log_norm
