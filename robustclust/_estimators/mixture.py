"""Robust probabilistic clustering (RPC and weighted RPC): the estimator (Algorithm 2)."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import DensityMixin, _fit_context
from sklearn.cluster import kmeans_plusplus
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array

from .._core.backend import asarray, to_numpy
from .._core.covariance import Covariance
from .._core.geometry import LinearGeometry
from .._core.models import MixtureModel
from .._core.penalties import make_penalty
from .._core.selection import OutlierCountWarning
from .._core.solver import Solver
from .._core.starts import kmeans_parallel_in_memory, trim_count
from .base import RobustEstimator, internal_units, state_from
from .dask_fit import is_dask, predict_dask
from .fitted import bad_value
from .kmeans import RobustKMeans, outlier_matrix, validate_linear_input


class RobustGaussianMixture(DensityMixin, RobustEstimator):
    """Gaussian mixture with outlier-sparsity regularization (RPC).

    Fits pi, the means, one covariance Sigma common to all components and one
    outlier vector o_n per point by minimizing the regularized negative
    log-likelihood of eq. (8),

        - sum_n log sum_c pi_c N(x_n; m_c + o_n, Sigma) + lam sum_n ||o_n||_{Sigma^-1},

    with the EM algorithm of Algorithm 2 (see Notes).  A point is an outlier
    when its o_n is nonzero: when its residual r_n = x_n - sum_c gamma_nc m_c
    is more than lam away in Mahalanobis distance, so lam is scale-free.

    Parameters
    ----------
    n_components : int, default=1
        Number of mixture components C.
    lam : float, default=None
        lambda > 0 of eq. (8); ``np.inf`` gives a plain mixture with a common
        covariance.  ``lam=0`` is rejected: the cost is then unbounded below
        (Section II-B).  Give ``lam`` or ``n_outliers``, not both; with
        neither, lam = sqrt(chi^2_p quantile(0.999)), so that a Gaussian inlier
        (||r_n||^2_{Sigma^-1} ~ chi^2_p) is flagged with probability 0.1%.
    n_outliers : int or float, default=None
        Target number of outliers (an int, or a fraction in (0, 0.5)); lambda
        is chosen as in :class:`RobustKMeans`.
    covariance_type : {"spherical", "diag", "full"}, default="spherical"
        The common covariance: sigma^2 I (the paper's, eqs. (25), (27)), a
        diagonal, or a full matrix (``"full"`` is scikit-learn's ``"tied"``).
    weighted : bool, default=False
        Log penalty lam log(1 + ||o_n||_{Sigma^-1} / eps) (Section III-C),
        started from the converged RPC solution.
    eps : float, default=None
        eps of the log penalty, in Mahalanobis units; None means 1e-3.
    init : {"robust", "robust-kmeans", "k-means++", "k-means||", "random"} or array of \
            shape (n_components, n_features), default="robust"
        Initial means; the initial weights and covariance are those of the
        nearest-mean partition (the covariance from its closest half, see
        :mod:`robustclust._core.models`).  ``"robust"`` starts from a
        :class:`RobustKMeans` fit with the same ``n_outliers`` from its
        robust start (``init="robust"`` there: trimmed seeding and
        concentration steps, which far points cannot capture); its flagged
        points are left out of the initial covariance.  ``"robust-kmeans"``:
        the same fit from k-means++ seeding (the default before the robust
        start): on the paper's 80-outlier set, RPC from 10 single k-means++
        starts ended with a component on the outliers in 8 (centre RMSE 1.75
        on average), from RobustKMeans starts in none (RMSE 0.62).
        ``"k-means||"``: the means of :class:`RobustKMeans`' k-means|| start
        (meant for Dask input: all the data in 7 passes, no sample fit).
    n_init : int, default=10
        Initialisations; the best run is kept (cost of eq. (8), or, with
        ``n_outliers``, the negative log-likelihood of all but the s least
        likely points).
    max_iter : int, default=300
    tol : float, default=1e-4
        Stop when an EM iteration lowers the cost of eq. (8) (negative
        log-likelihood plus penalty) by at most ``tol`` per unit of sample
        weight and leaves the flagged set unchanged: scikit-learn's
        GaussianMixture rule (its default, 1e-3, is looser; mclust's relative
        1e-5 is about 4e-5 per point on the paper's data).  EM converges
        linearly: on the paper's 80-outlier set, the old rule (means moving by
        less than 1e-6 of their norm) took 300 iterations and still had not
        stopped.
    reg_covar : float, default=1e-6
        Floor on the eigenvalues (variances) of Sigma, relative to the mean
        per-feature variance of X (so that rescaling X rescales the fit and
        changes nothing else).  It keeps Sigma positive definite without
        breaking the monotone decrease of the cost (the floored step is the
        exact minimizer over {Sigma >= floor I}).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
    means_ : ndarray of shape (n_components, n_features)
    covariances_ : float, ndarray of shape (n_features,) or (n_features, n_features)
        The common covariance: the variance sigma^2 (spherical), the
        variances (diag) or the matrix (full).  For data beyond about 1e154
        (below 1e-154) in magnitude its entries overflow to inf (underflow to
        0) in float64; the fit, ``predict`` and ``score`` run in internal
        units and from ``precisions_cholesky_``, which stays finite.
    precisions_cholesky_ : float or ndarray
        P with Sigma^-1 = P P^T: 1/sigma, 1/sqrt(variances), or an upper
        triangular matrix (scikit-learn's convention).
    labels_ : ndarray of shape (n_samples,)
        MAP component, -1 for outliers.
    memberships_ : ndarray of shape (n_samples, n_components)
        Posteriors gamma of eq. (20) at the fitted parameters.
    outlier_mask_, outlier_norms_ : ndarray of shape (n_samples,)
        o_n != 0 and ||o_n||_2.
    outlier_scores_ : ndarray of shape (n_samples,)
        ||o_n||_{Sigma^-1}, the scale-free outlier score.
    outlier_vectors_ : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    lambda_, unweighted_lambda_, eps_ : float
    n_outliers_ : int
    objective_ : float
        Final cost of eq. (8) (log-penalty version when ``weighted``).
    objective_history_ : ndarray
        Cost after each EM iteration of the final run.
    n_iter_ : int
    converged_ : bool

    See Also
    --------
    RobustKMeans, sklearn.mixture.GaussianMixture

    Notes
    -----
    The closed-form steps that go beyond the paper (its O-step for a full
    Sigma needs a cone program, its Sigma-step a numerical solver) are
    derived in :mod:`robustclust._core.models` (module docstring): with a common Sigma the
    O-step is the group-lasso prox in whitened coordinates,
    o_n = r_n [1 - lam / ||r_n||_{Sigma^-1}]_+ (eq. (25) for Sigma = sigma^2 I),
    and the Sigma-step majorizes sqrt(o^T Sigma^-1 o) at the current Sigma
    (concavity of the square root), giving a weighted scatter matrix; for
    spherical Sigma it is the paper's exact root of eq. (27).  The log penalty
    is majorized as a function of the Mahalanobis norm.  Every step
    decreases the cost.

    A Dask array or DataFrame is fitted block by block on the data where it
    lies (see the README, "Data larger than memory"): the per-point
    attributes are then lazy dask arrays, and so are ``predict``,
    ``predict_proba`` and ``score_samples`` of Dask input.

    ``score_samples`` is the log-density of the fitted mixture, o = 0: an
    outlier gets the low density the mixture gives it.  ``bic``/``aic`` count
    the mixture's parameters (means, weights, the common covariance): they
    score the fitted density on X, like scikit-learn's.

    Examples
    --------
    >>> from robustclust import RobustGaussianMixture
    >>> from robustclust.datasets import make_blobs_with_outliers
    >>> data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    >>> model = RobustGaussianMixture(4, n_outliers=40, random_state=0).fit(data.X)
    >>> model.n_outliers_
    40
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="both"), None],
        "n_outliers": [
            Interval(Integral, 0, None, closed="left"),
            Interval(Real, 0, 0.5, closed="neither"),
            None,
        ],
        "covariance_type": [StrOptions({"spherical", "diag", "full"})],
        "weighted": ["boolean"],
        "eps": [Interval(Real, 0, None, closed="neither"), None],
        "init": [StrOptions({"robust", "k-means++", "k-means||", "random", "robust-kmeans"}),
                 "array-like"],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "reg_covar": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components=1, *, lam=None, n_outliers=None,
                 covariance_type="spherical", weighted=False, eps=None, init="robust",
                 n_init=10, max_iter=300, tol=1e-4, reg_covar=1e-6, random_state=None,
                 verbose=0):
        self.n_components = n_components
        self.lam = lam
        self.n_outliers = n_outliers
        self.covariance_type = covariance_type
        self.weighted = weighted
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.reg_covar = reg_covar
        self.random_state = random_state
        self.verbose = verbose

    _n_clusters_name = "n_components"
    _default_lambda_description = "flags about 0.1% of Gaussian inliers"
    _lambda_unit = 1.0
    _fitted_state_names = (
        "weights_", "means_", "covariances_", "precisions_cholesky_", "lambda_",
        "unweighted_lambda_", "eps_", "n_outliers_", "objective_", "n_iter_", "converged_",
        "n_features_in_", "_offset", "_scale", "_covar_floor",
    )

    def _fitted_shapes(self):
        k, p = self.n_components, self.n_features_in_
        cov = {"spherical": (), "diag": (p,), "full": (p, p)}[self.covariance_type]
        return {"means_": (k, p), "weights_": (k,), "covariances_": cov,
                "precisions_cholesky_": cov}

    def _check_fitted_values(self):
        check_mixture_weights(self)
        if self.covariance_type != "full" and np.any(np.asarray(self.covariances_) <= 0):
            raise bad_value(type(self).__name__, "covariances_", self.covariances_,
                            "not positive")

    # -- the hooks of the fit template ----------------------------------------------------
    def _validate_input(self, X, sample_weight, reset):
        if sample_weight is not None:
            raise ValueError("RobustGaussianMixture does not support sample_weight.")
        X, _ = validate_linear_input(self, X, None, reset)
        return X, None

    def _check_init(self, X):
        self._n_init = self.n_init
        if isinstance(self.init, str):
            return
        means = check_array(to_numpy(self.init), dtype=[np.float64, np.float32],
                            input_name="init")
        if means.shape != (self.n_components, X.shape[1]):
            raise ValueError(
                f"The shape of the initial means {means.shape} does not match the "
                f"number of components and features ({self.n_components}, {X.shape[1]}).")
        if self.n_init != 1:
            warnings.warn("Explicit initial means were given: performing one "
                          f"initialisation instead of n_init={self.n_init}.",
                          RuntimeWarning, stacklevel=5)
            self._n_init = 1

    def _make_geometry(self, X, sample_weight):
        Xi, self._offset, self._scale = internal_units(X)
        # the EM steps are computed in float64 whatever the data's dtype (the
        # cost stays monotone to float64 rounding); the starts see the data
        # in its own dtype
        self._start_data = Xi
        geometry = LinearGeometry(Xi.astype(np.float64, copy=False)
                                  if sp.issparse(Xi) or isinstance(Xi, np.ndarray) else Xi)
        n, p = X.shape
        return geometry, {"offset": self._offset, "scale": self._scale, "lambda_unit": 1.0,
                          "objective_shift": n * p * math.log(self._scale), "dtype": X.dtype}

    def _make_model(self, geometry):
        self._covar_floor = self.reg_covar * mean_variance(geometry.X)
        return MixtureModel(self.n_components, self.covariance_type, self._covar_floor,
                            geometry.dim)

    def _make_penalties(self, geometry, sample_weight):
        self._eps = 1e-3 if self.eps is None else float(self.eps)
        return make_penalty("group"), make_penalty("group", True, self._eps)

    def _initializations(self, solver, X, sample_weight, rng):
        g = solver.geometry
        if not isinstance(self.init, str):
            means = np.asarray(to_numpy(self.init), dtype=np.float64)
            means = (means - to_numpy(self._offset)) / self._scale
            return [(asarray(means, g.xp, like=g.sq_norms), None)]
        Xh = to_numpy(self._start_data, g.xp)
        del self._start_data
        return [self._initial_means(Xh, rng) for _ in range(self._n_init)]

    def _initial_means(self, X, rng):
        C = self.n_components
        if self.init == "k-means++":
            return kmeans_plusplus(X, C, random_state=rng)[0], None
        if self.init == "k-means||":
            n_trim = trim_count(self.n_outliers, X.shape[0], C)
            return kmeans_parallel_in_memory(X, np.ones(X.shape[0]), C, n_trim, rng), None
        if self.init == "random":
            idx = rng.choice(X.shape[0], C, replace=False)
            return (X[idx].toarray() if sp.issparse(X) else X[idx]), None
        with warnings.catch_warnings():
            # an unreachable count only shifts the start a little
            warnings.simplefilter("ignore", OutlierCountWarning)
            seeding = "robust" if self.init == "robust" else "k-means++"
            rkm = RobustKMeans(C, n_outliers=self.n_outliers, init=seeding, n_init=1,
                               refine=False, default_rule="chi2",
                               random_state=rng.randint(np.iinfo(np.int32).max)).fit(X)
        return rkm.cluster_centers_, rkm.outlier_mask_

    def _store_model(self, problem, state):
        solver = problem.solver
        g = solver.geometry
        xp = solver.xp
        n = g.n_samples
        s = problem.scale
        cov = state.covariance
        self.weights_ = np.asarray(to_numpy(state.weights, xp), dtype=np.float64)
        self.means_ = problem.user_centers(state).astype(problem.dtype, copy=False)
        with np.errstate(over="ignore", under="ignore"):  # beyond 1e154: inf (see predict)
            self.covariances_ = np.float64(cov.value) * s * s if np.ndim(cov.value) == 0 \
                else cov.value * s * s
        self.precisions_cholesky_ = cov.P / s
        self.memberships_ = np.asarray(to_numpy(state.memberships, xp))
        self.outlier_scores_ = np.zeros(n)
        o = state.outliers
        if o.count:
            self.outlier_scores_[np.asarray(to_numpy(o.index, xp))] = to_numpy(o.sizes, xp)
        self.outlier_vectors_ = (outlier_matrix(problem, state, problem.dtype) if g.is_numpy
                                 else None)  # SciPy: NumPy input only
        self.eps_ = self._eps
        if self.n_outliers_ == n:
            warnings.warn(
                f"Every point is flagged (lambda_={self.lambda_:.3g}): with the log "
                "penalty and lam below the dimension the cost of eq. (8) decreases "
                "without bound as Sigma shrinks, until the reg_covar floor; increase lam.",
                UserWarning, stacklevel=4)

    def _new_point_solver(self, X):
        Xi, _, _ = internal_units(X, self._offset, self._scale)
        g = LinearGeometry(Xi.astype(np.float64, copy=False)
                           if sp.issparse(Xi) or isinstance(Xi, np.ndarray) else Xi)
        p = g.dim
        eps = 1e-3 if self.eps is None else float(self.eps)
        model = MixtureModel(self.n_components, self.covariance_type, self._covar_floor, p)
        solver = Solver(g, model, make_penalty("group"), make_penalty("group", True, eps),
                        max_iter=self.max_iter, tol=self.tol)
        s = self._scale
        means = (np.asarray(self._fitted("means_"), dtype=np.float64)
                 - to_numpy(self._offset)) / s
        # from the precision factor, which stays finite where covariances_ overflow
        cov = Covariance.from_precision_factor(
            self.covariance_type, np.asarray(self._fitted("precisions_cholesky_")) * s, p)
        start = state_from(asarray(means, g.xp, like=g.sq_norms),
                           asarray(self._fitted("weights_"), g.xp, like=g.sq_norms), cov)
        return solver, start

    # -- fit ---------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the mixture and flag the outliers.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        self : RobustGaussianMixture
        """
        return self._fit(X)

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_`` (MAP component, -1 for outliers).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X).labels_

    # -- new points ----------------------------------------------------------------------

    def predict_proba(self, X):
        """Posteriors gamma of each point (with its outlier vector), (n_samples, C).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
            (a lazy dask array for Dask input)
        """
        if is_dask(X):
            return predict_dask(self, X, "predict_proba")
        return self._output(to_numpy(self._assign(X)[1].memberships), X)

    def score_samples(self, X):
        """Log-density of each point under the fitted mixture, with o = 0.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        log_prob : ndarray of shape (n_samples,)
            (a lazy dask array for Dask input)
        """
        if is_dask(X):
            return predict_dask(self, X, "score_samples")
        _, state = self._clean(X)
        log_prob = (np.asarray(to_numpy(-state.point_costs))
                    - self.n_features_in_ * math.log(self._scale))
        return self._output(log_prob, X)

    def score(self, X, y=None):
        """Mean log-density of X under the fitted mixture (see score_samples).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        log_likelihood : float
        """
        if is_dask(X):
            return float(self.score_samples(X).mean().compute())
        return float(np.mean(self.score_samples(X)))

    def _n_parameters(self):
        p = self.means_.shape[1]
        cov = {"spherical": 1, "diag": p, "full": p * (p + 1) // 2}[self.covariance_type]
        return self.n_components * p + self.n_components - 1 + cov

    def bic(self, X):
        """Bayesian information criterion of the fitted mixture on X (lower is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        bic : float
        """
        n = _n_rows(X)
        return -2 * self.score(X) * n + self._n_parameters() * np.log(n)

    def aic(self, X):
        """Akaike information criterion of the fitted mixture on X (lower is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        aic : float
        """
        n = _n_rows(X)
        return -2 * self.score(X) * n + 2 * self._n_parameters()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.array_api_support = True
        return tags


def _n_rows(X):
    """Rows of X without converting it (sparse and Dask input keep their type)."""
    return X.shape[0] if sp.issparse(X) or is_dask(X) else np.asarray(X).shape[0]


def check_mixture_weights(estimator):
    """Mixing weights that sum to 1 (a fitted state read back)."""
    if not np.isclose(np.sum(estimator.weights_), 1.0, rtol=1e-6):
        raise bad_value(type(estimator).__name__, "weights_", estimator.weights_,
                        "not summing to 1")


def mean_variance(X):
    """Mean per-feature variance of X (1 when X is constant)."""
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
    else:
        X = to_numpy(X)
        var = X.var(axis=0)
    v = float(np.mean(var))
    return v if v > 0 else 1.0
