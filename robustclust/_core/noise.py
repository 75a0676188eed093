"""The default outlier count: Gaussian clusters plus a uniform noise component.

When neither lam nor a count is given, :class:`~robustclust.RobustKMeans`
asks this module how many points are outliers and then fits with that count
(the count machinery of :mod:`robustclust._core.selection`).  The model, in
the manner of mclust's noise component (Banfield & Raftery), is

    f(x) = pi_0 / V + sum_c pi_c g_c(x),

with V the volume of the data's bounding box (features that are constant on
the data are left out: they carry no information about outlyingness) and g_c
the density of cluster c.  EM estimates the means, covariances, cluster
weights and the noise proportion pi_0 (never capped: a data set that is 60%
noise gets pi_0 near 0.6).  A point's outlier probability is its posterior
probability of the noise component; the outliers are the points where it
exceeds 0.5 (the Bayes rule).

Cluster densities.  The M-step is the usual weighted mean and covariance
(shrunk by SHRINKAGE towards tr(S)/p times the identity, so that a feature
constant within a cluster does not make every deviation infinitely
unlikely).  The E-step evaluates each cluster by its posterior predictive
density, the Student t with nu_c = n_c - p + 1 degrees of freedom and scale
S_c (n_c + 1) / nu_c (n_c the cluster's effective size): the density of a
new point drawn from a Gaussian whose mean and covariance were estimated
from n_c points.  For large clusters (n_c >> p) it is the Gaussian; for the
small clusters of real data sets in many dimensions (wine: 60 points in 13
dimensions; digits: 180 in 64) it widens the tails as much as the estimate
is uncertain, which keeps points that merely break a poorly estimated
correlation from being called noise.

What the rule promises.  Data without noise drive pi_0 towards 0, and with
it the probabilities: on Gaussian clusters the default flags essentially no
point.  With noise present, a point drawn from cluster c is flagged iff its
predictive density falls below pi_0 / (pi_c V) (ignoring the other
clusters, which only lower its noise probability), i.e. iff its Mahalanobis
distance exceeds a threshold t_c; :meth:`NoiseModel.inlier_flag_rate` gives
sum_c pi_c / (1 - pi_0) P(chi^2_p > t_c), the expected fraction of Gaussian
inliers flagged under the fitted model.

Cost: O(N C p^2) per EM iteration (full covariances), on at most
MAX_EM_ROWS rows (a fixed random sample of larger data; the bounding box and
the probabilities are those of all rows); data with more than
MAX_FEATURES features, or sparse data, keep the chi^2 default of
:func:`robustclust._core.selection.default_lambda`.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import gammaln, logsumexp

from .threads import single_blas

#: Weight of tr(S)/p I in each cluster's covariance (shrinkage of S).
SHRINKAGE = 0.2
#: EM iterations at most, and the relative log-likelihood change that stops it.
MAX_EM_ITER = 200
EM_TOL = 1e-8
#: Starts (of the estimator's initialisations) that EM is run from.
MAX_STARTS = 3
#: Above this many features the noise model is not used (full covariances).
MAX_FEATURES = 256
#: Rows EM is run on at most (a random sample of larger data sets).
MAX_EM_ROWS = 50000
#: The initial noise proportion (EM moves it anywhere in [0, 1)).
INITIAL_NOISE = 0.5


@dataclass
class NoiseModel:
    """A fitted Gaussian-clusters-plus-uniform-noise model (see the module docstring).

    ``keep`` selects the features the model uses; ``means`` (C, p'),
    ``covariances`` (C, p', p') the ML (shrunk) covariances, ``sizes`` the
    clusters' effective sizes n_c, ``weights`` pi_c, ``noise`` pi_0,
    ``log_volume`` log V; ``log_likelihood`` of the training data.
    """

    keep: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    sizes: np.ndarray
    weights: np.ndarray
    noise: float
    log_volume: float
    log_likelihood: float = -math.inf
    n_iter: int = 0

    @property
    def dim(self):
        return int(self.means.shape[1])

    def _predictive(self, c):
        """(nu, scale factor) of cluster c's predictive t."""
        n_c = max(float(self.sizes[c]), 1.0)
        nu = max(n_c - self.dim + 1.0, 1.0)
        return nu, (n_c + 1.0) / nu

    def joint_log_densities(self, X):
        """log pi_c g_c(x) for each cluster and log pi_0 / V last: (N, C + 1)."""
        X = np.asarray(X, dtype=np.float64)[:, self.keep]
        n, p = X.shape
        C = len(self.weights)
        out = np.full((n, C + 1), -np.inf)
        for c in range(C):
            if self.weights[c] <= 0:
                continue
            nu, factor = self._predictive(c)
            L = np.linalg.cholesky(self.covariances[c] * factor)
            Z = _solve_lower(L, (X - self.means[c]).T)
            d2 = np.einsum("ij,ij->j", Z, Z)
            log_det = 2.0 * float(np.log(np.diag(L)).sum())
            out[:, c] = (math.log(self.weights[c]) + gammaln(0.5 * (nu + p))
                         - gammaln(0.5 * nu) - 0.5 * p * math.log(nu * math.pi)
                         - 0.5 * log_det - 0.5 * (nu + p) * np.log1p(d2 / nu))
        if self.noise > 0:
            out[:, C] = math.log(self.noise) - self.log_volume
        return out

    def noise_probability(self, X):
        """Posterior probability of the noise component of each row of X."""
        ll = self.joint_log_densities(X)
        return np.exp(ll[:, -1] - logsumexp(ll, axis=1))

    def inlier_flag_rate(self):
        """Expected fraction of points drawn from the Gaussian clusters with
        noise probability > 0.5 (each cluster alone against the noise)."""
        if self.noise <= 0:
            return 0.0
        p = self.dim
        total, rate = float(self.weights.sum()), 0.0
        if total <= 0:
            return 0.0
        for c in range(len(self.weights)):
            if self.weights[c] <= 0:
                continue
            nu, factor = self._predictive(c)
            L = np.linalg.cholesky(self.covariances[c] * factor)
            log_det = 2.0 * float(np.log(np.diag(L)).sum())
            # log pi_c t_c(x) < log pi_0 - log V  <=>  log1p(d2 / nu) > rhs
            rhs = (math.log(self.weights[c]) + gammaln(0.5 * (nu + p)) - gammaln(0.5 * nu)
                   - 0.5 * p * math.log(nu * math.pi) - 0.5 * log_det
                   - math.log(self.noise) + self.log_volume) / (0.5 * (nu + p))
            if rhs <= 0:
                rate += self.weights[c]
                continue
            d2 = nu * math.expm1(rhs)  # Mahalanobis^2 in the predictive scale
            # a draw x ~ N(m, S): its Mahalanobis^2 in the scale S is chi^2_p
            rate += self.weights[c] * float(stats.chi2.sf(d2 * factor, p))
        return rate / total


def _solve_lower(L, B):
    from scipy.linalg import solve_triangular

    return solve_triangular(L, B, lower=True, check_finite=False)


def _shrunk(S, p, floor):
    """S shrunk towards tr(S)/p I, plus the per-feature ``floor`` on the diagonal."""
    target = max(float(np.trace(S)) / p, float(floor.min()))
    return (1.0 - SHRINKAGE) * S + SHRINKAGE * target * np.eye(p) + np.diag(floor)


def fit_noise_model(X, centers, sample_weight=None, max_iter=MAX_EM_ITER, tol=EM_TOL,
                    extent=None):
    """EM for Gaussian clusters plus uniform noise, started at ``centers``.

    The start: each point goes to its nearest centre; each cluster's
    covariance is that of the half of its points nearest to the centre,
    scaled up to what a Gaussian's whole would have (the nearer half of a
    Gaussian has E[d^2] = p F_{p+2}(m) / 0.5, m the chi^2_p median); pi_0 is
    INITIAL_NOISE.  ``extent``: the sides of the bounding box (default: that
    of X's rows of positive weight).  Returns a :class:`NoiseModel`.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    pos = w > 0
    if extent is None:
        extent = X[pos].max(axis=0) - X[pos].min(axis=0)
    keep = extent > 0
    if not keep.any():
        return None
    X = X[:, keep]
    centers = np.asarray(centers, dtype=np.float64)[:, keep]
    p = X.shape[1]
    C = centers.shape[0]
    log_volume = float(np.log(extent[keep]).sum())
    wsum = float(w.sum())
    gmean = w @ X / wsum
    gvar = w @ (X - gmean) ** 2 / wsum
    # per feature: a floor relative to the mean variance would swamp the
    # within-cluster spread of features far smaller than the largest (one value
    # at 1e20 among unit-scale data made every point noise)
    floor = 1e-9 * np.maximum(gvar, np.finfo(float).tiny)

    d2 = (np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ centers.T
          + np.einsum("ij,ij->i", centers, centers)[None, :])
    labels = np.argmin(d2, axis=1)
    scale_up = 0.5 / float(stats.chi2.cdf(stats.chi2.median(p), p + 2))
    means = centers.copy()
    covs = np.empty((C, p, p))
    sizes = np.empty(C)
    for c in range(C):
        idx = np.flatnonzero((labels == c) & pos)
        sizes[c] = w[idx].sum()
        if idx.size == 0:
            covs[c] = _shrunk(np.diag(gvar), p, floor)
            continue
        near = idx[d2[idx, c] <= np.median(d2[idx, c])]
        D = X[near] - means[c]
        wn = w[near]
        S = (D * wn[:, None]).T @ D / max(wn.sum(), np.finfo(float).tiny) * scale_up
        covs[c] = _shrunk(S, p, floor)
    noise = INITIAL_NOISE
    weights = (1.0 - noise) * sizes / max(sizes.sum(), np.finfo(float).tiny)
    model = NoiseModel(keep, means, covs, (1.0 - noise) * sizes, weights, noise, log_volume)
    Xfull = np.zeros((n, len(keep)))
    Xfull[:, keep] = X
    previous = None
    for it in range(1, max_iter + 1):
        ll = model.joint_log_densities(Xfull)
        total = logsumexp(ll, axis=1)
        loglik = float(w @ total)
        R = np.exp(ll - total[:, None]) * w[:, None]
        nk = R.sum(axis=0)
        model.noise = float(nk[C] / wsum)
        model.weights = nk[:C] / wsum
        model.sizes = nk[:C].copy()
        for c in range(C):
            if nk[c] <= 1e-12 * wsum:
                model.weights[c] = 0.0
                continue
            r = R[:, c]
            model.means[c] = r @ X / nk[c]
            D = X - model.means[c]
            model.covariances[c] = _shrunk((D * r[:, None]).T @ D / nk[c], p, floor)
        model.log_likelihood, model.n_iter = loglik, it
        if previous is not None and abs(loglik - previous) <= tol * abs(loglik):
            break
        previous = loglik
    return model


def default_count(X, starts, sample_weight=None):
    """(count, noise probability of each point, model): EM from up to MAX_STARTS
    starts, the model of largest log-likelihood kept."""
    best = None
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    pos = w > 0
    extent = X[pos].max(axis=0) - X[pos].min(axis=0) if pos.any() else np.zeros(X.shape[1])
    # EM on at most MAX_EM_ROWS rows (a fixed random sample); the box and the
    # probabilities are those of all rows
    rows = np.arange(n)
    if n > MAX_EM_ROWS:
        rows = np.sort(np.random.RandomState(0).choice(n, MAX_EM_ROWS, replace=False))
    # one BLAS thread: C products of p x N by N x p per iteration, each too
    # small to pay for waking the pool (measured on digits, 2 busy cores:
    # 1.8 s instead of 55 s)
    with single_blas():
        for centers in starts[:MAX_STARTS]:
            model = fit_noise_model(X[rows], centers, w[rows], extent=extent)
            if model is not None and (best is None
                                      or model.log_likelihood > best.log_likelihood):
                best = model
    if best is None:  # every feature constant: nothing is an outlier
        return 0, np.zeros(np.asarray(X).shape[0]), None
    with single_blas():
        prob = best.noise_probability(X)
    return int(np.count_nonzero((prob > 0.5) & (w > 0))), prob, best
