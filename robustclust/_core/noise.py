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

A cluster the start missed.  EM from a start that put two centres into one
cluster and none into a small one calls the small cluster noise and stays
in that local optimum; its points are then far denser than uniform noise.
After EM, :func:`_reseed_dense_noise` looks at the noise points: when the
densest is much closer to its neighbours than uniform noise would be, the
cluster whose removal costs the least likelihood restarts there, and the
result is kept if EM from it reaches a higher likelihood.

What the rule promises.  Data without noise drive pi_0 towards 0, and with
it the probabilities: on Gaussian clusters the default flags essentially no
point.  With noise present, a point drawn from cluster c is flagged iff its
predictive density falls below pi_0 / (pi_c V) (ignoring the other
clusters, which only lower its noise probability), i.e. iff its Mahalanobis
distance exceeds a threshold t_c; :meth:`NoiseModel.inlier_flag_rate` gives
sum_c pi_c / (1 - pi_0) P(chi^2_p > t_c), the expected fraction of Gaussian
inliers flagged under the fitted model.

Cost: O(N C p^2) per EM iteration (full covariances), on a sample of
max(3,000, 6 C (p + 1)) rows at most 10,000 (EM_MIN_ROWS; the bounding box
and the probabilities are those of all rows), and one evaluation of the
densities of the other rows; data with more than
MAX_FEATURES features, or sparse data, keep the chi^2 default of
:func:`robustclust._core.selection.default_lambda`.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from .. import _progress
from .compiled import lazy_module
from .geometry import WHITEN_BLOCK_ROWS
from .threads import single_blas

stats = lazy_module("scipy.stats", compiled=False)  # imported on first use

#: Weight of tr(S)/p I in each cluster's covariance (shrinkage of S).
SHRINKAGE = 0.2
#: EM iterations at most, and the relative log-likelihood change that stops it.
MAX_EM_ITER = 200
EM_TOL = 1e-8
#: EM also stops once the sample's count of noise points (probability > 0.5) has
#: not changed for COUNT_STABLE iterations in a row and the log-likelihood moves by
#: less than COUNT_TOL (relative): the count is what the model is for.
COUNT_STABLE = 3
COUNT_TOL = 1e-5
#: Above this many features the noise model is not used (full covariances).
MAX_FEATURES = 256
#: The rows EM runs on (:func:`em_sample_size`): a fixed random sample of larger
#: data; the box and the probabilities, hence the count, are those of every row.
#: The sample sets how well the model that decides the count is estimated, and two
#: of its parts need rows.  The noise proportion pi_0: at a 1% share a sample of
#: EM_MIN_ROWS = 3,000 holds about 30 noise points, so log pi_0 has a standard
#: error of about 0.18; the rule flags a point of cluster c iff its squared
#: Mahalanobis distance exceeds a threshold that moves by twice that, 0.37, far
#: less than the chi^2 spread of the inliers around it (a count within a few
#: percent, below the +-20% target).  The clusters: EM_ROWS_PER_CLUSTER_FEATURE
#: (p + 1) rows each, so that the predictive t of every cluster has at least
#: 5p degrees of freedom (its scale within 1.2 of the Gaussian's).  Measured
#: (3 seeds each; bench_defaults' planted blobs at 10^4 and 10^5 rows, 32
#: features, and blobs in uniform noise that overlaps them, 1-10% of 20,000 rows
#: in 4 or 8 features): counts within 2% of those of a 10,000-row sample (the
#: earlier fixed size); the default fit's CPU 0.55x at 10^4 planted blobs,
#: 0.85x at 10^5.  At most MAX_EM_ROWS rows.
EM_MIN_ROWS = 3000
EM_ROWS_PER_CLUSTER_FEATURE = 6
MAX_EM_ROWS = 10000
#: Rows this many spreads from the sample's median in some feature are left out of
#: EM (they are noise under any Gaussian fitted to the others).
FAR_SPREADS = 1e6
#: Starts of the model's own robust start (the best by the trimmed potential kept).
NOISE_STARTS = 3
#: Moves of a cluster onto a dense group of noise points at most
#: (:func:`_reseed_dense_noise`), the noise points looked at, and the chance that
#: uniform noise would hold a group as dense as the one a move starts from.
RESEED_MOVES = 2
DENSE_SAMPLE = 2000
DENSE_ALPHA = 1e-3
#: Responsibilities below this (a 1e-20 of one row's weight) are left out of a
#: cluster's M-step.  The predictive t's tails leave almost every row a responsibility
#: between 1e-300 and 1e-30 for every cluster (16 blobs in 32 dimensions: 9,900 of
#: 10,000 rows above 0, 619 above 1e-30), which would make each cluster's covariance a
#: product over all rows; the rows left out move a mean by at most MAX_EM_ROWS *
#: RESPONSIBILITY_FLOOR * FAR_SPREADS * sqrt(p) spreads (1e-9 at p = 100).
RESPONSIBILITY_FLOOR = 1e-20
#: The initial noise proportion (EM moves it anywhere in [0, 1)).
INITIAL_NOISE = 0.5
#: Rows x clusters whose densities are evaluated at once (memory: 8 p bytes each):
#: the per-component distances' block (``geometry.WHITEN_BLOCK_ROWS``).
CHUNK_ROWS = WHITEN_BLOCK_ROWS


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
    #: Location and scale of the kept features: the model lives in the
    #: standardised units (x - loc) / scale, so that it does not depend on the
    #: units of the columns (see :func:`default_count`).
    loc: np.ndarray = None
    scale: np.ndarray = None
    #: The robust start EM began from (the model's units; not kept in model files).
    start: np.ndarray = None

    @property
    def dim(self):
        return int(self.means.shape[1])

    def centres_in_input_units(self, X):
        """The clusters' means and the robust start EM began from, as centres in
        X's units (the units the model was given): [means, start] (the start only
        when the model has one), each (C, p) with the constant features at their
        value on X's first row."""
        out = []
        for Z in (self.means, self.start):
            if Z is None:
                continue
            M = np.repeat(np.asarray(X[:1], dtype=np.float64), Z.shape[0], axis=0)
            M[:, self.keep] = Z if self.loc is None else Z * self.scale + self.loc
            out.append(M)
        return out

    def _predictive(self, c):
        """(nu, scale factor) of cluster c's predictive t."""
        n_c = max(float(self.sizes[c]), 1.0)
        nu = max(n_c - self.dim + 1.0, 1.0)
        return nu, (n_c + 1.0) / nu

    def joint_log_densities(self, X):
        """log pi_c g_c(x) for each cluster and log pi_0 / V last: (N, C + 1).

        X in the units the model was given (the estimator's internal units);
        the model standardises it.  One product of the rows with the inverse
        Cholesky factors of every cluster side by side gives all the
        Mahalanobis distances (in chunks of CHUNK_ROWS rows).
        """
        X = self._standardised(X)
        n, p = X.shape
        C = len(self.weights)
        out = np.full((n, C + 1), -np.inf)
        if self.noise > 0:
            out[:, C] = math.log(self.noise) - self.log_volume
        active = np.flatnonzero(self.weights > 0)
        if not len(active):
            return out
        nu, factor = np.array([self._predictive(c) for c in active]).T
        L = np.linalg.cholesky(self.covariances[active] * factor[:, None, None])
        # z = (x - m) W_c: z.z is the Mahalanobis distance, W_c = L_c^-T side by side
        W = np.concatenate([_inverse_lower(L_c).T for L_c in L], axis=1)
        shift = np.concatenate([self.means[c] @ W[:, i * p:(i + 1) * p]
                                for i, c in enumerate(active)])
        log_det = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        power = 0.5 * (nu + p)
        const = (np.log(self.weights[active]) + gammaln(power) - gammaln(0.5 * nu)
                 - 0.5 * p * np.log(nu * math.pi) - 0.5 * log_det)
        rows = max(1, CHUNK_ROWS // len(active))
        for start in range(0, n, rows):
            with np.errstate(over="ignore", invalid="ignore"):  # far rows: d2 = inf
                Z = X[start:start + rows] @ W
                Z -= shift
                d2 = np.einsum("nkp,nkp->nk", *(Z.reshape(len(Z), len(active), p),) * 2)
                d2[~np.isfinite(d2)] = np.inf
                out[start:start + rows, active] = const - power * np.log1p(d2 / nu)
        return out

    def _standardised(self, X):
        X = np.asarray(X, dtype=np.float64)[:, self.keep]
        if self.loc is None:
            return X
        with np.errstate(over="ignore"):
            return (X - self.loc) / self.scale

    def noise_probability(self, X):
        """Posterior probability of the noise component of each row of X."""
        X = np.asarray(X)
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], CHUNK_ROWS):
            out[start:start + CHUNK_ROWS] = _noise_posterior(
                self.joint_log_densities(X[start:start + CHUNK_ROWS]))
        return out

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


def _logsumexp(a, axis=1):
    """log sum exp of a 2-D array along ``axis`` (1: of each row), -inf where every
    term is -inf; scipy.special's, without its overhead per call (a third of
    its time on 1,000 x 17 joint densities)."""
    top = np.max(a, axis=axis, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - top).sum(axis=axis)) + np.squeeze(top, axis=axis)


def _noise_posterior(joint):
    """The noise component's posterior from joint log densities (noise last); a row
    of no density under any component (infinitely far from every cluster, the
    noise proportion 0) is noise."""
    total = _logsumexp(joint, axis=1)
    with np.errstate(invalid="ignore"):
        p = np.exp(joint[:, -1] - total)
    p[np.isneginf(total)] = 1.0
    return p


def _inverse_lower(L):
    from scipy.linalg import solve_triangular

    return solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)


def _shrunk(S, p, floor):
    """S shrunk towards tr(S)/p I, plus the per-feature ``floor`` on the diagonal."""
    target = max(float(np.trace(S)) / p, float(floor.min()))
    return (1.0 - SHRINKAGE) * S + SHRINKAGE * target * np.eye(p) + np.diag(floor)


def _fit_noise_model(X, centers, sample_weight, max_iter, tol, extent, certain_noise):
    """:func:`fit_noise_model`, returning (model, joint log densities of the rows of X
    under it) or None."""
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
    data = _EMData(X, Xfull, w, pos, wsum, floor, certain_noise)
    joint = _run_em(model, data, max_iter, tol)
    return _reseed_dense_noise(model, joint, data, max_iter, tol)


def fit_noise_model(X, centers, sample_weight=None, max_iter=MAX_EM_ITER, tol=EM_TOL,
                    extent=None, certain_noise=0.0):
    """EM for Gaussian clusters plus uniform noise, started at ``centers``.

    The start: each point goes to its nearest centre; each cluster's
    covariance is that of the half of its points nearest to the centre,
    scaled up to what a Gaussian's whole would have (the nearer half of a
    Gaussian has E[d^2] = p F_{p+2}(m) / 0.5, m the chi^2_p median); pi_0 is
    INITIAL_NOISE.  ``extent``: the sides of the bounding box (default: that
    of X's rows of positive weight).  ``certain_noise``: the weight of rows
    left out of X as noise for certain (their responsibility is the noise
    component's alone), counted in the noise proportion.  Returns a
    :class:`NoiseModel`, or None when every feature is constant.
    """
    fitted = _fit_noise_model(X, centers, sample_weight, max_iter, tol, extent, certain_noise)
    return None if fitted is None else fitted[0]


@dataclass
class _EMData:
    """What the noise model's EM iterations read: the rows in the model's features
    (``X``) and in all of them (``Xfull``), weights, the covariance floor."""

    X: np.ndarray
    Xfull: np.ndarray
    w: np.ndarray
    pos: np.ndarray
    wsum: float
    floor: np.ndarray
    certain_noise: float


def _run_em(model, data, max_iter, tol):
    """EM iterations of ``model`` (in place) until it stops (see :func:`fit_noise_model`).

    Returns the joint log densities of the rows under the model as it is left
    (the E-step that found EM converged ends it: the model is the one whose
    likelihood was measured, and its densities need no second evaluation).
    """
    X, w, pos, wsum, certain_noise = data.X, data.w, data.pos, data.wsum, data.certain_noise
    C, p = model.means.shape
    previous = None
    counts = []
    for it in range(1, max_iter + 2):
        ll = model.joint_log_densities(data.Xfull)
        total = _logsumexp(ll, axis=1)
        loglik = float(w @ total)
        counts.append(int(np.count_nonzero((ll[:, C] - total > math.log(0.5)) & pos)))
        model.log_likelihood = loglik
        if previous is not None:
            change = abs(loglik - previous)
            settled = len(counts) > COUNT_STABLE and len(set(counts[-COUNT_STABLE - 1:])) == 1
            if change <= tol * abs(loglik) or (settled and change <= COUNT_TOL * abs(loglik)):
                break
        if it > max_iter:
            break
        previous = loglik
        _progress.iteration()
        R = np.exp(ll - total[:, None]) * w[:, None]
        nk = R.sum(axis=0)
        model.noise = float((nk[C] + certain_noise) / (wsum + certain_noise))
        model.weights = nk[:C] / (wsum + certain_noise)
        model.sizes = nk[:C].copy()
        for c in range(C):
            if nk[c] <= 1e-12 * wsum:
                model.weights[c] = 0.0
                continue
            # the rows with some responsibility only (RESPONSIBILITY_FLOOR): of well
            # separated clusters the others' responsibilities add nothing
            rows = np.flatnonzero(R[:, c] > RESPONSIBILITY_FLOOR)
            r, Xc = R[rows, c], X[rows]
            model.means[c] = r @ Xc / nk[c]
            D = Xc - model.means[c]
            model.covariances[c] = _shrunk((D * r[:, None]).T @ D / nk[c], p, data.floor)
        model.n_iter = it
    return ll


def _log_likelihood(model, joint, data):
    """The model's log-likelihood of the rows (the certain noise included), from
    their joint log densities ``joint``."""
    total = float(data.w @ _logsumexp(joint, axis=1))
    if data.certain_noise > 0:
        total += data.certain_noise * (math.log(model.noise) - model.log_volume)
    return total


def _reseed_dense_noise(model, joint, data, max_iter, tol):
    """Move a cluster onto a dense group of the model's noise points while that
    raises the likelihood (at most RESEED_MOVES times).

    EM from a start that put two centres into one cluster and none into a
    small one calls the small cluster noise and stays there: its points are
    then far denser than the uniform noise around them.  The test, on at
    most DENSE_SAMPLE of the noise points (n of them): r, the smallest
    distance of a point to its (p + 1)-th nearest other noise point, must be
    one that n points spread uniformly over the box would reach nowhere:
    with lambda = (n - 1) omega_p r^p / V the expected number of the others
    within r of a point (omega_p the volume of the unit ball), n P(Poisson
    (lambda) >= p + 1) < DENSE_ALPHA.  Exact duplicates (r = 0) are not a
    group.  If the test passes, the cluster whose removal costs the least
    likelihood restarts from the 2 (p + 1) noise points nearest to that
    point, EM runs, and the result is kept only if it raises the likelihood
    by more than COUNT_TOL of it.  On uniform noise the test fails and the
    fit is as it was, at the cost of one look at the noise points.
    """
    from scipy.spatial.distance import cdist

    X, w, pos = data.X, data.w, data.pos
    C, p = model.means.shape
    best, best_ll, ll = model, _log_likelihood(model, joint, data), joint
    k = p + 1
    log_ball = 0.5 * p * math.log(math.pi) - gammaln(0.5 * p + 1.0)
    for _ in range(RESEED_MOVES):
        if C < 2:
            break
        total = _logsumexp(ll, axis=1)
        noisy = np.flatnonzero((ll[:, C] - total > math.log(0.5)) & pos)
        if len(noisy) < 2 * (k + 1):
            break
        sample = noisy
        if len(sample) > DENSE_SAMPLE:
            sample = noisy[np.linspace(0, len(noisy) - 1, DENSE_SAMPLE).astype(np.intp)]
        n = len(sample)
        kth = np.partition(cdist(X[sample], X[sample]), k, axis=1)[:, k]  # [:, 0]: itself
        kth[kth <= 0] = np.inf                 # duplicates are not a group
        i = int(np.argmin(kth))
        if not np.isfinite(kth[i]):
            break
        expected = math.exp(math.log(n - 1) + log_ball + p * math.log(kth[i])
                            - best.log_volume)
        if n * float(stats.poisson.sf(k - 1, expected)) >= DENSE_ALPHA:
            break
        # the cluster whose removal costs the least likelihood
        loss = [float(w @ _logsumexp(np.delete(ll, c, axis=1), axis=1)) for c in range(C)]
        c = int(np.argmax(loss))
        near = sample[np.argsort(cdist(X[sample[i]][None, :], X[sample])[0])[:2 * k]]
        trial = NoiseModel(best.keep, best.means.copy(), best.covariances.copy(),
                           best.sizes.copy(), best.weights.copy(), best.noise,
                           best.log_volume)
        trial.means[c] = X[near].mean(axis=0)
        R = X[near] - trial.means[c]
        trial.covariances[c] = _shrunk(R.T @ R / len(near), p, data.floor)
        share = float(w[near].sum()) / data.wsum
        trial.weights[c] = share
        trial.sizes[c] = float(w[near].sum())
        # the noise keeps half its share at least: at 0 EM could never revive it
        trial.noise = max(best.noise - share, 0.5 * best.noise)
        scale = 1.0 / (trial.noise + trial.weights.sum())
        trial.weights *= scale
        trial.noise *= scale
        with _progress.phase("noise model: a cluster moved onto dense noise points",
                             max_iter):
            trial_joint = _run_em(trial, data, max_iter, tol)
        trial_ll = _log_likelihood(trial, trial_joint, data)
        if not trial_ll > best_ll + COUNT_TOL * abs(best_ll):
            break
        best, best_ll, ll = trial, trial_ll, trial_joint
    return best, ll


def em_sample_size(n_clusters, n_features):
    """Rows of the sample the noise model's EM runs on (see EM_MIN_ROWS):
    max(EM_MIN_ROWS, EM_ROWS_PER_CLUSTER_FEATURE C (p + 1)), at most MAX_EM_ROWS."""
    return min(MAX_EM_ROWS, max(EM_MIN_ROWS,
                                EM_ROWS_PER_CLUSTER_FEATURE * n_clusters * (n_features + 1)))


def default_count(X, sample_weight, n_clusters, rng):
    """(count, noise probability of each row, model), or (0, zeros, None) when every
    feature is constant.

    The model is fitted on a sample of :func:`em_sample_size` rows of positive
    weight (all of them when there are fewer), in standardised units: each feature is centred on the sample's
    median and divided by its normalised median absolute deviation (its
    standard deviation where that is 0, its range where both are), so that
    the count does not depend on the units of the columns (the model itself,
    full covariances over the bounding box, would not; its start and the
    shrinkage towards a multiple of the identity would).  EM starts from
    the model's own robust start on that sample (the best of NOISE_STARTS,
    :func:`~robustclust._core.starts.screened_starts`, trimming the default
    share of the rows) and stops when the sample's count settles.  The
    probabilities, and the count, are those of every row.
    """
    from .starts import screened_starts, trim_count

    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    pos = w > 0
    if not pos.any():
        return 0, np.zeros(n), None
    extent = X[pos].max(axis=0) - X[pos].min(axis=0)
    keep = extent > 0
    if not keep.any():  # every feature constant: nothing is an outlier
        return 0, np.zeros(n), None
    rows = np.flatnonzero(pos)
    m = em_sample_size(n_clusters, int(np.count_nonzero(keep)))
    if len(rows) > m:
        rows = np.sort(rng.choice(rows, m, replace=False))
    S = X[rows][:, keep]
    loc = np.median(S, axis=0)
    scale = 1.4826 * np.median(np.abs(S - loc), axis=0)
    std = S.std(axis=0)
    scale = np.where(scale > 0, scale, np.where(std > 0, std, extent[keep]))
    with np.errstate(over="ignore"):
        Z = (S - loc) / scale
    # rows beyond FAR_SPREADS spreads of the median in some feature are noise under
    # any Gaussian fitted to the others (their squares may not even be finite): EM
    # runs without them, and their probability comes out 1
    near = np.all(np.abs(Z) <= FAR_SPREADS, axis=1)
    far_weight = 0.0
    if np.count_nonzero(near) > n_clusters:
        far_weight = float(w[rows[~near]].sum())
        Z, rows = Z[near], rows[near]
    ws = w[rows]
    # one BLAS thread: C products of N x p by p x p per iteration, each too small
    # to pay for waking the pool (measured on digits, 2 busy cores: 1.8 s instead
    # of 55 s for the per-cluster solves of before)
    with single_blas(), _progress.phase("noise model (the default count)", MAX_EM_ITER):
        # trimming at most half a cluster's share: the 20% the estimators' starts
        # trim could leave whole clusters of a many-cluster set uncovered (16
        # clusters of 6% each), and EM then calls one of them noise
        n_trim = min(trim_count(None, len(rows), n_clusters),
                     int(len(rows) / (2 * n_clusters)))
        start = screened_starts(Z, ws, n_clusters, n_trim, rng, n_starts=NOISE_STARTS,
                                n_keep=1)[0]
        model, joint = _fit_noise_model(Z, start, ws, MAX_EM_ITER, EM_TOL, extent[keep] / scale,
                                        far_weight)
        model.keep, model.loc, model.scale, model.start = keep, loc, scale, start
        # the rows EM saw have their densities under the final model already; when
        # they are most of the rows the others are evaluated alone (a copy of
        # them), otherwise every row is, in blocks (no copy of X)
        rest = np.ones(n, dtype=bool)
        rest[rows] = False
        if np.count_nonzero(rest) <= len(rows):
            prob = np.empty(n)
            prob[rows] = _noise_posterior(joint)
            if rest.any():
                prob[rest] = model.noise_probability(X[rest])
        else:
            prob = model.noise_probability(X)
    return int(np.count_nonzero((prob > 0.5) & pos)), prob, model
