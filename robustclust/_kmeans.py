"""Robust (soft, weighted) K-means: the estimator."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.cluster import kmeans_plusplus
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_is_fitted,
    validate_data,
)

from ._base import centre, check_outlier_params, store_outliers
from ._bcd import RKMSolver
from ._penalties import make_penalty
from ._selection import default_lambda, fit_lambda


class RobustKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin,
                   BaseEstimator):
    """Robust K-means with outlier-sparsity regularization.

    Clusters the data and flags its outliers in one pass by minimizing

        sum_n sum_c u_nc^q (||x_n - m_c - o_n||^2 + lam * rho(o_n))

    (eq. (5) for q = 1, eq. (6) for q > 1) over the centres M, the
    memberships U and one outlier vector o_n per point, by block coordinate
    descent (Algorithm 1).  A point is an outlier when its o_n is nonzero;
    the penalty rho keeps all but a few of them at zero.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters C.
    lam : float, default=None
        The outlier-controlling lambda >= 0 of eqs. (5)/(6); ``np.inf`` gives
        plain (soft) K-means, 0 flags every point.  Give ``lam`` or
        ``n_outliers``, not both.  With neither, lambda is set from the data
        (see Notes).
    n_outliers : int or float, default=None
        Target number of outliers s.  An int is a count (0 <= s < N); a float
        in (0, 0.5) is a fraction of N (the ``contamination`` convention),
        rounded to the nearest count.  lambda is then chosen along a
        decreasing, warm-started grid and refined by bisection so that exactly
        s points are flagged where the path allows (see Notes).
    q : float, default=1.0
        Fuzzifier, q >= 1.  q = 1 is hard robust K-means (assignment rule
        eq. (15)); q > 1 is soft robust K-means (membership update eq. (14)).
    weighted : bool, default=False
        Use the log penalty lam * log(1 + ||o_n|| / eps) of Section III-C
        (eqs. (29)-(30)): one majorization-minimization reweighting
        lam_n = lam / (||o_n|| + eps) per iteration, started from the
        converged unweighted solution.
    eps : float, default=None
        The eps of the log penalty.  None uses 1e-3 times the root-mean-square
        distance of the points to their mean, so the default is scale-free.
    penalty : {"group", "elementwise"}, default="group"
        ``"group"``: rho(o) = ||o||_2, whole points are outliers (the paper).
        ``"elementwise"``: rho(o) = ||o||_1 (Remark 2), single entries are
        outliers; the O-step soft-thresholds each entry of the residual at
        lam / 2.  A point is flagged when any of its entries is.
    init : {"k-means++", "random"} or array of shape (n_clusters, n_features), \
            default="k-means++"
        ``"k-means++"``: scikit-learn's :func:`~sklearn.cluster.kmeans_plusplus`.
        ``"random"``: n_clusters distinct data points drawn at random (a
        random U in the simplex, as the paper suggests, makes soft K-means
        collapse all centres onto the grand mean).  An array: the initial
        centres (then ``n_init`` is 1).
    n_init : int, default=10
        Number of initialisations; the best run is kept, judged by the cost
        of eq. (6) (its log-penalty version when ``weighted``), or, when
        ``n_outliers`` is given, by the l0-constrained cost of eq. (3).
    max_iter : int, default=300
        Maximum number of BCD iterations of one run.
    tol : float, default=1e-6
        epsilon_s of the paper's stopping rule
        ||M_t - M_{t-1}||_F <= tol ||M_t||_F; the outlier matrix must settle
        in the same relative sense.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisations.
    verbose : int, default=0
        Print the objective at every iteration.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Centres M.
    labels_ : ndarray of shape (n_samples,)
        Cluster of each point (argmax of its memberships), -1 for outliers.
    memberships_ : ndarray of shape (n_samples, n_clusters)
        U: 0/1 for q = 1, fuzzy for q > 1 (outliers keep their memberships).
    outlier_mask_ : ndarray of shape (n_samples,), dtype bool
        True where o_n != 0.
    outlier_norms_ : ndarray of shape (n_samples,)
        ||o_n||_2, the outlier score (0 for inliers).
    outlier_vectors_ : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        The outlier matrix O, stored sparse: memory grows with the number of
        outliers.  ``X - outlier_vectors_`` is the cleaned data.
    lambda_ : float
        lambda used (chosen, when ``n_outliers`` or neither was given).
    unweighted_lambda_ : float
        lambda of the unweighted run that starts the weighted one; equals
        ``lambda_`` unless ``weighted`` and ``n_outliers`` are both given.
    n_outliers_ : int
        Number of points flagged.
    eps_ : float or None
        eps used by the log penalty (None unless ``weighted`` or ``eps``).
    objective_ : float
        Final cost (eq. (6), or its log-penalty version when weighted).
    objective_history_ : ndarray
        Cost after each BCD iteration of the final run (the weighted run when
        ``weighted``).
    n_iter_ : int
        Iterations of the final run.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only when X has feature names

    See Also
    --------
    regularization_path : solutions along a decreasing lambda grid.
    sklearn.cluster.KMeans : the lam = inf limit (q = 1).

    Notes
    -----
    **Updates.**  o_n is the group soft threshold of the residual r_n
    (eqs. (11)-(12)), so a point is flagged iff ||r_n|| > lam / 2;
    memberships follow eq. (14) or eq. (15); centres are the u^q-weighted
    means of x_n - o_n (eq. (9)).  For hard RKM with the group penalty the
    centre step is instead the IRLS step of the Huber location problem that
    the (M, O) block reduces to for fixed labels (weights
    min(1, (lam/2) / ||x_n - m_c||)): it has the same fixed points as eq. (9)
    and never increases the cost, but does not slow down when many points
    are flagged (measured: 674 instead of 2999 iterations for a 100-value
    path on the paper's 80-outlier set).  Every step minimizes or majorizes
    the cost over its block, so the cost never increases (Proposition 2).
    One iteration costs one product X M^T plus O(N C) work, like a Lloyd
    iteration.

    **Default lambda.**  With neither ``lam`` nor ``n_outliers``: K-means
    first; sigma^2 = median_n min_c ||x_n - m_c||^2 / median(chi^2_p); lambda
    is set so that a Gaussian inlier is flagged with probability 0.1%
    (lam = 2 sigma sqrt(chi^2_p quantile 0.999) for the group penalty);
    the robust fit at that lambda re-estimates sigma once and is refitted.
    With ``weighted``, the weighted lambda is then tuned (from that fit) to
    flag as many points as it does.

    **Choosing lambda by count.**  K-means from every initialisation; from
    the best, a decreasing geometric grid from lam_max (the smallest lambda
    that flags nothing) with warm starts until s points are flagged;
    bisection between the last two grid points; every initialisation
    restarted cold at that lambda (a path from the K-means solution inherits
    its local minimum), the best kept by the l0 cost of eq. (3); a last
    warm-started bisection to hit s exactly.  If no lambda flags exactly s
    (the count can jump), the closest count is kept and an
    :class:`OutlierCountWarning` is raised.  With ``weighted``, the
    unweighted lambda is tuned first and the weighted lambda is tuned from
    that solution, so ``lambda_`` is then the weighted lambda.

    **Empty clusters** (q = 1) are reseeded, as in scikit-learn, at the inliers
    that fit worst; a centre without members does not enter the cost, so
    this keeps the cost non-increasing.  A cluster all of whose members are
    flagged keeps its centre; its index then does not appear in ``labels_``.

    **predict** runs the training iteration for each new point on its own,
    with the fitted centres held fixed: for hard RKM the nearest centre and
    o = the prox of the residual, so a point is flagged iff its distance to
    the nearest centre exceeds lambda_ / 2; for soft or weighted fits the
    O- and U-steps alternate until they settle (weighted: the MM reweighting
    started from the unweighted solution, as in training).  On training
    points it can disagree with ``labels_`` where the joint BCD stopped at a
    coordinate-wise minimum that is not the point's own best (an outlier
    whose o_n was set against a centre that is not its nearest).

    References
    ----------
    P. A. Forero, V. Kekatos, G. B. Giannakis, "Robust Clustering Using
    Outlier-Sparsity Regularization", IEEE Transactions on Signal Processing,
    60(8), 2012.

    Examples
    --------
    >>> from robustclust import RobustKMeans
    >>> from robustclust.datasets import make_blobs_with_outliers
    >>> data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    >>> model = RobustKMeans(n_clusters=4, n_outliers=40, random_state=0)
    >>> model.fit(data.X).n_outliers_
    40
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="both"), None],
        "n_outliers": [
            Interval(Integral, 0, None, closed="left"),
            Interval(Real, 0, 0.5, closed="neither"),
            None,
        ],
        "q": [Interval(Real, 1, None, closed="left")],
        "weighted": ["boolean"],
        "eps": [Interval(Real, 0, None, closed="neither"), None],
        "penalty": [StrOptions({"group", "elementwise"})],
        "init": [StrOptions({"k-means++", "random"}), "array-like"],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=8, *, lam=None, n_outliers=None, q=1.0,
                 weighted=False, eps=None, penalty="group", init="k-means++",
                 n_init=10, max_iter=300, tol=1e-6, random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.lam = lam
        self.n_outliers = n_outliers
        self.q = q
        self.weighted = weighted
        self.eps = eps
        self.penalty = penalty
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    # -- set-up shared by fit and regularization_path ----------------------------
    def _validate_X(self, X, reset):
        return validate_data(self, X, reset=reset, accept_sparse="csr",
                             dtype=[np.float64, np.float32], order="C",
                             accept_large_sparse=False)

    def _check_params_vs_input(self, X):
        self._target = check_outlier_params(self, X.shape[0], self.n_clusters)
        self._n_init = self.n_init
        if not isinstance(self.init, str):
            init = check_array(self.init, dtype=[np.float64, np.float32],
                               ensure_all_finite=False, input_name="init")
            if init.shape != (self.n_clusters, X.shape[1]):
                raise ValueError(
                    f"The shape of the initial centres {init.shape} does not match "
                    f"the number of clusters and features "
                    f"({self.n_clusters}, {X.shape[1]}).")
            if not np.all(np.isfinite(init)):
                raise ValueError("The initial centres contain NaN or infinity.")
            if self.n_init != 1:
                warnings.warn(
                    "Explicit initial centres were given: performing one "
                    f"initialisation instead of n_init={self.n_init}.",
                    RuntimeWarning, stacklevel=3)
                self._n_init = 1

    def _initial_centers(self, X, sample_weight, rng):
        if not isinstance(self.init, str):
            return np.array(self.init, dtype=X.dtype) - self._offset
        if self.init == "k-means++":
            centers, _ = kmeans_plusplus(X, self.n_clusters, sample_weight=sample_weight,
                                         random_state=rng)
            return centers.astype(X.dtype, copy=False)
        positive = sample_weight > 0
        p = np.where(positive, sample_weight, 0.0)
        if positive.sum() < self.n_clusters:
            p = None
        else:
            p = p / p.sum()
        idx = rng.choice(X.shape[0], self.n_clusters, replace=False, p=p)
        centers = X[idx].toarray() if sp.issparse(X) else X[idx]
        return np.array(centers, dtype=X.dtype)

    def _penalties(self, X, sample_weight):
        if self.eps is not None:
            eps = float(self.eps)
        elif not self.weighted:
            eps = None
        else:
            mean = np.asarray(sample_weight @ X).ravel() / sample_weight.sum()
            sq = np.asarray(sample_weight @ (X.multiply(X) if sp.issparse(X) else X * X))
            total_var = max(float(sq.sum() / sample_weight.sum() - mean @ mean), 0.0)
            eps = 1e-3 * math.sqrt(total_var) if total_var > 0 else 1e-3
        return (make_penalty(self.penalty), make_penalty(self.penalty, True, eps), eps)

    def _prepare(self, X, sample_weight, reset=True):
        """Validated data, weights, a solver and the initial centres."""
        X = self._validate_X(X, reset=reset)
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                             ensure_non_negative=True)
        self._check_params_vs_input(X)
        penalty, log_penalty, self._eps = self._penalties(X, sample_weight)
        X, self._offset = centre(X)
        solver = RKMSolver(X, sample_weight, self.n_clusters, self.q, penalty,
                           log_penalty, self.max_iter, self.tol, self.verbose)
        rng = check_random_state(self.random_state)
        inits = [self._initial_centers(X, sample_weight, rng) for _ in range(self._n_init)]
        return X, sample_weight, solver, inits

    # -- fit ---------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Cluster X and flag its outliers.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; sparse input is converted to CSR.
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each point's whole term of the cost: centres become
            weighted means, the outlier step is unchanged.

        Returns
        -------
        self : RobustKMeans
        """
        X, sample_weight, solver, inits = self._prepare(X, sample_weight)
        lam, lam_unweighted, state = fit_lambda(
            solver, inits, lam=None if self.lam is None else float(self.lam),
            target=self._target, weighted=self.weighted,
            default_lam=lambda st: self._default_lambda(X, sample_weight, solver, st))
        self._store(X, state, lam, lam_unweighted)
        return self

    def _default_lambda(self, X, sample_weight, solver, state):
        return default_lambda(solver.nearest_sq_dists(state.centers), sample_weight,
                              X.shape[1], self.penalty)

    def _store(self, X, state, lam, lam_unweighted):
        n, p = X.shape
        store_outliers(self, state, lam, lam_unweighted, n, p, X.dtype)
        self.cluster_centers_ = (state.centers + self._offset).astype(X.dtype, copy=False)
        if state.memberships is None:
            U = np.zeros((n, self.n_clusters), dtype=X.dtype)
            U[np.arange(n), state.labels] = 1
        else:
            U = state.memberships.astype(X.dtype, copy=False)
        self.memberships_ = U
        self.eps_ = self._eps
        self._n_features_out = self.n_clusters

    # -- new points ----------------------------------------------------------------
    def _assign(self, X):
        """Per-point training steps for new points with the fitted centres."""
        check_is_fitted(self)
        X, _ = centre(self._validate_X(X, reset=False), self._offset)
        solver = RKMSolver(X, np.ones(X.shape[0]), self.n_clusters, self.q,
                           make_penalty(self.penalty),
                           make_penalty(self.penalty, True, self.eps_), self.max_iter, self.tol)
        stages = [(self.unweighted_lambda_, False)]
        if self.weighted:
            stages.append((self.lambda_, True))
        return X, solver.assign(self.cluster_centers_ - self._offset, stages)

    def predict(self, X):
        """Nearest cluster of each point, -1 where it would be flagged.

        The rule is the training one with the centres held fixed: o is the
        exact minimizer of ||r - o||^2 + lambda_ rho(o) for the point's
        residual r, and the point is an outlier when o != 0.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        _, (labels, _, index, _, _) = self._assign(X)
        labels = labels.astype(np.intp, copy=True)
        labels[index] = -1
        return labels

    def outlier_norms(self, X):
        """Outlier score ||o||_2 that new points would receive (0 for inliers).

        The same per-point problem as :meth:`predict`; the score grows with
        the distance to the nearest centre beyond the threshold lambda_ / 2.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        norms : ndarray of shape (n_samples,)
        """
        X, (_, _, index, vals, _) = self._assign(X)
        norms = np.zeros(X.shape[0], dtype=X.dtype)
        norms[index] = np.linalg.norm(vals, axis=1)
        return norms

    def transform(self, X):
        """Euclidean distances to the cluster centres.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        return euclidean_distances(X, self.cluster_centers_)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the cost of eq. (6) of X with the fitted centres.

        Each point gets its best memberships and outlier vector (as in
        :meth:`predict`); larger is better.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        X, (_, _, _, _, costs) = self._assign(X)
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        return -float(np.dot(sample_weight, costs))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

