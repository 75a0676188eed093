"""Kernel robust K-means and kernel RPC: the estimators (Section IV of the paper)."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy import stats
from scipy.linalg import eigh
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.cluster import KMeans
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import euclidean_distances, pairwise_kernels
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_is_fitted,
    validate_data,
)

from ._base import check_outlier_params, store_outlier_summary
from ._kernel_solver import KernelRKMSolver, KernelRPCSolver
from ._kmeans import RobustKMeans
from ._mixture import RobustGaussianMixture
from ._penalties import make_penalty
from ._selection import (
    DEFAULT_FALSE_ALARM,
    OutlierCountWarning,
    default_lambda,
    fit_lambda,
    robust_distance_threshold,
)

#: Kernels whose feature space is R^p: the chi^2 rules of the linear estimators apply.
_EXPLICIT_FEATURES = ("linear", "cosine")
_SKLEARN_NAMES = {"rbf": "rbf", "poly": "polynomial", "linear": "linear", "cosine": "cosine"}
#: Rows of the median heuristic's subsample.
_GAMMA_SAMPLE = 1000
#: Relative tolerance of the symmetry and positive semidefiniteness checks.
_PSD_RTOL = 1e-8
#: Above this many points the spectral start uses ARPACK instead of a dense eigensolver.
_DENSE_EIGH_MAX = 2000

_KERNEL_CONSTRAINTS = {
    "kernel": [StrOptions({"rbf", "poly", "linear", "cosine", "precomputed"}), callable],
    "gamma": [Interval(Real, 0, None, closed="neither"), None],
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Real],
    "psd_shift": ["boolean"],
    "approximation": [StrOptions({"nystroem"}), None],
    "n_landmarks": [Interval(Integral, 1, None, closed="left")],
}


def check_kernel_matrix(K, shift=False):
    """Check that a precomputed kernel matrix is symmetric positive semidefinite.

    Asymmetry above 1e-8 ||K||_max, or a smallest eigenvalue below
    -1e-8 ||K||_2, is an error; with ``shift=True`` a negative smallest
    eigenvalue is instead removed by adding -lambda_min to the diagonal
    (every distance between distinct points grows by 2 |lambda_min|).
    Returns the (symmetrized, possibly shifted) matrix.
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"A precomputed kernel must be a square matrix; got shape {K.shape}.")
    scale = float(np.abs(K).max()) if K.size else 0.0
    asym = float(np.abs(K - K.T).max()) if K.size else 0.0
    if asym > _PSD_RTOL * max(scale, 1e-300):
        raise ValueError(f"The kernel matrix is not symmetric (max |K - K^T| = {asym:.3g}).")
    K = (K + K.T) / 2.0
    vals = eigh(K, eigvals_only=True, subset_by_index=[0, 0]) if len(K) else np.zeros(1)
    top = eigh(K, eigvals_only=True, subset_by_index=[len(K) - 1, len(K) - 1]) \
        if len(K) else np.zeros(1)
    lam_min = float(vals[0])
    if lam_min < -_PSD_RTOL * max(abs(float(top[0])), 1e-300):
        if not shift:
            raise ValueError(
                f"The kernel matrix is not positive semidefinite: its smallest eigenvalue "
                f"is {lam_min:.3g}. Use a valid kernel, or psd_shift=True to add "
                f"{-lam_min:.3g} to its diagonal.")
        K = K + (-lam_min) * np.eye(len(K))
    return K


def _median_heuristic_gamma(X):
    """gamma = 1 / median_{i<j} ||x_i - x_j||^2 over (a fixed subsample of) X."""
    if X.shape[0] > _GAMMA_SAMPLE:
        X = X[np.random.RandomState(0).choice(X.shape[0], _GAMMA_SAMPLE, replace=False)]
    D = euclidean_distances(X, squared=True)
    d = D[np.triu_indices(len(X), 1)]
    d = d[d > 0]
    med = float(np.median(d)) if len(d) else 0.0
    return 1.0 / med if med > 0 else 1.0


def _centring(K):
    """Column means and grand mean of K; centring K (H K H) changes no distance."""
    col = K.mean(axis=0)
    return col, float(col.mean())


def _spectral_embedding(K, n_clusters):
    """Rows of the top ``n_clusters`` eigenvectors of K, scaled to unit length.

    The spectral relaxation of kernel K-means on K (Dhillon, Guan and Kulis,
    2004): max tr(Y^T K Y) over orthonormal Y is attained by the leading
    eigenvectors of K; their rows are normalized as in Ng, Jordan and Weiss
    and then clustered with K-means.  For the graph kernel
    K = nu I + D^{-1/2} E D^{-1/2} these are the eigenvectors of the C
    smallest eigenvalues of the symmetric Laplacian L = I - D^{-1/2} E D^{-1/2}
    whatever nu is: the paper's spectral start (Section VI-C).  K is used
    uncentred, as the relaxation needs.
    """
    n = len(K)
    if n <= _DENSE_EIGH_MAX:
        _, V = eigh(K, subset_by_index=[n - n_clusters, n - 1])
    else:
        _, V = eigsh(K, k=n_clusters, which="LA", v0=np.ones(n))
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(norms > 0, norms, 1.0)


def _kmeans_plusplus_indices(kdiag, K, n_clusters, sample_weight, rng):
    """Greedy k-means++ seeding on feature-space distances; returns point indices.

    As scikit-learn's ``kmeans_plusplus`` (2 + log C candidates per step,
    the one that most reduces the potential is kept), with
    ||phi_i - phi_j||^2 = K_ii + K_jj - 2 K_ij.
    """
    n = len(kdiag)
    n_trials = 2 + int(math.log(n_clusters))
    p = sample_weight / sample_weight.sum()
    first = rng.choice(n, p=p)
    centres = [first]
    closest = np.maximum(kdiag + kdiag[first] - 2.0 * K[first], 0.0)
    potential = float(sample_weight @ closest)
    for _ in range(1, n_clusters):
        if potential <= 0:
            rest = np.setdiff1d(np.arange(n), centres)
            centres.append(int(rng.choice(rest)))
            continue
        cum = np.cumsum(sample_weight * closest)
        cand = np.searchsorted(cum, rng.uniform(size=n_trials) * cum[-1])
        cand = np.clip(cand, 0, n - 1)
        d = np.maximum(kdiag[cand, None] + kdiag[None, :] - 2.0 * K[cand], 0.0)
        new_closest = np.minimum(closest, d)
        pots = new_closest @ sample_weight
        best = int(np.argmin(pots))
        centres.append(int(cand[best]))
        closest, potential = new_closest[best], float(pots[best])
    return np.array(centres)


class _KernelEstimator(BaseEstimator):
    """Kernel matrices, their checks, initialisations and prediction rows."""

    # -- the kernel ----------------------------------------------------------------
    def _validate_X(self, X, reset):
        if self.kernel == "precomputed":
            if not reset:
                raise ValueError(
                    "predict needs the kernel of every new point with itself as well as "
                    "with the training points, which kernel='precomputed' does not give; "
                    "use labels_ for the training points or a kernel function.")
            return check_array(X, dtype=np.float64, input_name="K")
        return validate_data(self, X, reset=reset, dtype=np.float64)

    def _kernel_args(self, X):
        if callable(self.kernel) or self.kernel in ("linear", "cosine"):
            return {}
        gamma = self.gamma
        if gamma is None and self.kernel == "rbf":
            gamma = _median_heuristic_gamma(X)
        if self.kernel == "rbf":
            return {"gamma": gamma}
        return {"gamma": gamma, "degree": self.degree, "coef0": self.coef0}

    def _pairwise(self, X, Y):
        if callable(self.kernel):
            return np.asarray(self.kernel(X, Y), dtype=np.float64)
        return pairwise_kernels(X, Y, metric=_SKLEARN_NAMES[self.kernel], **self._kernel_kw)

    def _kernel_diag(self, X, chunk=256):
        """k(x, x) for the rows of X."""
        return np.concatenate([np.diag(self._pairwise(X[i:i + chunk], X[i:i + chunk]))
                               for i in range(0, X.shape[0], chunk)])

    def _training_kernel(self, X):
        """Validated training kernel matrix (uncentred) and the resolved gamma."""
        if self.kernel == "precomputed":
            if self.approximation is not None:
                raise ValueError("approximation='nystroem' needs feature vectors; it cannot "
                                 "be used with kernel='precomputed'.")
            K = check_kernel_matrix(X, shift=self.psd_shift)
            self.gamma_ = None
            return K
        self._kernel_kw = self._kernel_args(X)
        self.gamma_ = self._kernel_kw.get("gamma")
        K = self._pairwise(X, X)
        if callable(self.kernel):
            K = check_kernel_matrix(K, shift=self.psd_shift)
        return (K + K.T) / 2.0

    def _feature_dim(self, X):
        """P of the chi^2 and variance rules: p for explicit features, None otherwise."""
        if not callable(self.kernel) and self.kernel in _EXPLICIT_FEATURES:
            return X.shape[1]
        return None

    def _new_rows(self, X):
        """(k(x, x), centred kernel rows against the training points) for new X."""
        Kx = self._pairwise(X, self.X_fit_)
        diag = self._kernel_diag(X)
        row = Kx.mean(axis=1)
        Kx = Kx - row[:, None] - self._kernel_col_mean + self._kernel_mean
        diag = diag - 2.0 * row + self._kernel_mean
        return diag, Kx

    # -- initialisations -----------------------------------------------------------
    def _check_init(self, n_samples, n_clusters):
        self._n_init = self.n_init
        if isinstance(self.init, str):
            return
        labels = np.asarray(self.init)
        if labels.shape != (n_samples,) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"init must be a string or an integer array of initial labels of shape "
                f"({n_samples},); got an array of shape {labels.shape} and dtype "
                f"{labels.dtype}.")
        if labels.min() < 0 or labels.max() >= n_clusters:
            raise ValueError(f"Initial labels must lie in [0, {n_clusters - 1}].")
        if len(np.unique(labels)) != n_clusters:
            raise ValueError("Every cluster needs at least one point in the initial labels.")
        if self.n_init != 1:
            warnings.warn("Initial labels were given: performing one initialisation "
                          f"instead of n_init={self.n_init}.", RuntimeWarning, stacklevel=4)
            self._n_init = 1

    def _spectral_start(self, K_raw, n_clusters):
        """The embedding of ``init="spectral"``, computed once per fit (None otherwise)."""
        if isinstance(self.init, str) and self.init == "spectral":
            return _spectral_embedding(K_raw, n_clusters)
        return None

    def _initial_coefficients(self, solver, K_raw, sample_weight, rng, n_clusters,
                              embedding=None):
        """Initial B (N, C) from ``init``: one-hot columns (data points) or label means.

        ``embedding`` is :func:`_spectral_embedding` of K_raw for ``init="spectral"``
        (computed here when not given); each start runs K-means on it with its
        own seed.
        """
        n = solver.n_samples
        if not isinstance(self.init, str):
            return solver.coefficients_from_labels(np.asarray(self.init), sample_weight)
        if self.init == "spectral":
            if embedding is None:
                embedding = _spectral_embedding(K_raw, n_clusters)
            labels = KMeans(n_clusters, n_init=10,
                            random_state=rng.randint(np.iinfo(np.int32).max)).fit(
                                embedding).labels_
            return solver.coefficients_from_labels(labels, sample_weight)
        if self.init == "k-means++":
            idx = _kmeans_plusplus_indices(solver.kdiag, solver.K, n_clusters, sample_weight,
                                           rng)
        else:  # random distinct points
            positive = np.flatnonzero(sample_weight > 0)
            pool = positive if len(positive) >= n_clusters else np.arange(n)
            idx = rng.choice(pool, n_clusters, replace=False)
        B = np.zeros((n, n_clusters))
        B[idx, np.arange(n_clusters)] = 1.0
        return B

    def _store_kernel(self, X, K_raw):
        self.X_fit_ = None if self.kernel == "precomputed" else X
        self._kernel_col_mean, self._kernel_mean = _centring(K_raw)

    def _store_state(self, state, lam, lam_unweighted, X):
        n = state.dual_coef.shape[0]
        store_outlier_summary(self, state, lam, lam_unweighted, n, state.outlier_sizes,
                              np.float64)
        self.dual_coef_ = state.dual_coef
        self._gram_centres = state.G
        if isinstance(self.kernel, str) and self.kernel == "linear":
            self.cluster_centers_ = state.dual_coef.T @ X

    # -- Nystroem ------------------------------------------------------------------
    def _nystroem(self, X):
        if callable(self.kernel):
            kw, metric = {}, _RowsKernel(self.kernel)
        else:
            kw, metric = self._kernel_args(X), _SKLEARN_NAMES[self.kernel]
        self.gamma_ = kw.get("gamma")
        self.nystroem_ = Nystroem(kernel=metric, n_components=min(self.n_landmarks, len(X)),
                                  random_state=self.random_state, **kw)
        return self.nystroem_.fit_transform(X)

    def _copy_from_linear(self, model):
        for name in ("labels_", "outlier_mask_", "outlier_norms_", "lambda_",
                     "unweighted_lambda_", "n_outliers_", "objective_", "objective_history_",
                     "n_iter_", "memberships_", "eps_"):
            setattr(self, name, getattr(model, name))
        self.approximate_model_ = model
        self.dual_coef_ = None


class _RowsKernel:
    """Adapts a matrix kernel k(X, Y) -> (n_X, n_Y) to scikit-learn's row callable."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, x, y):
        return float(np.asarray(self.kernel(x[None, :], y[None, :]))[0, 0])


class KernelRobustKMeans(ClusterMixin, _KernelEstimator):
    """Kernel robust (soft) K-means: Algorithm 3 (KRKM) in O(N^2 C) per iteration.

    Robust K-means (:class:`RobustKMeans`) in the feature space of a kernel:
    every centre is a combination sum_n B_nc phi(x_n) of the mapped points
    and every outlier vector o_n lies in their span (Proposition 4), so the
    BCD of eqs. (31)-(38) only needs the kernel matrix.  Clusters that are
    not linearly separable (rings, moons) and objects that are not vectors
    (graphs, through :func:`robustclust.graph.normalized_adjacency_kernel`
    and ``kernel="precomputed"``) can be clustered with their outliers.

    Parameters
    ----------
    n_clusters : int, default=8
    kernel : {"rbf", "poly", "linear", "cosine", "precomputed"} or callable, \
            default="rbf"
        ``"rbf"``: exp(-gamma ||x - y||^2).  ``"poly"``: (gamma x^T y + coef0)^degree;
        the paper's homogeneous (x^T y)^3 is ``degree=3, gamma=1, coef0=0``.
        ``"linear"``: x^T y (equals :class:`RobustKMeans`).  ``"cosine"``:
        x^T y / (||x|| ||y||).  ``"precomputed"``: X is the N x N kernel matrix
        (any symmetric PSD similarity).  A callable ``kernel(X, Y)`` returns
        the (n_X, n_Y) kernel matrix, as for :class:`sklearn.svm.SVC`.  The
        built-in kernels are scikit-learn's :mod:`sklearn.metrics.pairwise`.
    gamma : float, default=None
        For "rbf" and "poly".  None: for "rbf", 1 / the median of the squared
        distances between pairs of points (a robust estimate of twice the
        total variance: outliers, fewer than half the points, barely move a
        median; computed on a fixed subsample of 1000 points when N is
        larger); for "poly", 1 / n_features (scikit-learn's rule).
        The value used is ``gamma_``.
    degree : int, default=3
    coef0 : float, default=1
    lam, n_outliers, q, weighted, eps, n_init, max_iter, tol, random_state, verbose
        As in :class:`RobustKMeans` (group penalty; outlier sizes are
        feature-space norms ||o_n|| = ||alpha_n||_K, eq. (38)).
    init : {"k-means++", "random", "spectral"} or array of shape (n_samples,), \
            default="k-means++"
        ``"k-means++"``: k-means++ seeding with feature-space distances;
        ``"random"``: distinct random points; ``"spectral"``: the spectral
        relaxation of kernel K-means, K-means on the unit-length rows of the
        top ``n_clusters`` eigenvectors of K (the eigenvectors are computed
        once; each of the ``n_init`` starts clusters them with its own
        seed).  With :func:`robustclust.graph.normalized_adjacency_kernel`
        this is spectral clustering with the symmetric Laplacian
        I - D^{-1/2} E D^{-1/2}, the paper's start for graphs (Section VI-C);
        an integer array: initial labels (the initial centres are the means
        of their groups).
    psd_shift : bool, default=False
        For precomputed or callable kernels whose smallest eigenvalue is below
        -1e-8 ||K||: add -lambda_min to the diagonal instead of raising.
    approximation : {None, "nystroem"}, default=None
        ``"nystroem"``: map X to ``n_landmarks`` Nystroem features
        (:class:`sklearn.kernel_approximation.Nystroem`) and run the linear
        :class:`RobustKMeans` on them: O(N m C) per iteration and O(N m)
        memory instead of O(N^2 C) and O(N^2).  Use it when N is beyond a few
        ten thousand (K alone takes 8 N^2 bytes); the clustering is then that
        of the rank-m approximation of K.
    n_landmarks : int, default=100
        Number m of Nystroem landmarks (its ``n_components``).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each point, -1 for outliers.
    memberships_ : ndarray of shape (n_samples, n_clusters)
    outlier_mask_ : ndarray of shape (n_samples,), dtype bool
    outlier_norms_ : ndarray of shape (n_samples,)
        ||o_n|| in feature space (eq. (38)), 0 for inliers.
    dual_coef_ : ndarray of shape (n_samples, n_clusters)
        B: centre c is sum_n B_nc phi(x_n) (eq. (31)); None with Nystroem.
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Only for the linear kernel: B^T X.
    lambda_, unweighted_lambda_, n_outliers_, objective_, objective_history_, n_iter_, eps_
        As in :class:`RobustKMeans`.
    gamma_ : float or None
        The gamma used.
    approximate_model_ : RobustKMeans
        The linear model on the Nystroem features (only with approximation).

    Notes
    -----
    **Cost.**  A direct transcription of Algorithm 3 carries the N x N
    matrices A and Delta and costs O(N^3 C) per iteration.  Here A is kept as
    one shrink factor and one weight row per outlier (A = Delta S with
    Delta = I - B W^T), so an iteration costs one product K B plus O(N C^2):
    O(N^2 C) time, memory K plus O(N C).  The derivation is in
    :mod:`robustclust._kernel_solver`.  K is centred once (H K H), which
    changes no distance and improves rounding.

    **Same steps as RobustKMeans.**  With ``kernel="linear"`` the iterates
    (labels, outliers, objective history) are those of :class:`RobustKMeans`
    from the same initial centres, including its IRLS centre step for
    q = 1 (same fixed points as eq. (32), fewer iterations).

    **Default lambda.**  Linear and cosine kernels: the chi^2 rule of
    :class:`RobustKMeans` with p features.  Other kernels have no usable
    dimension, so lam / 2 = median + 3.09 * 1.4826 * MAD of the distances to
    the nearest centre (a robust 0.1% Gaussian tail, see
    ``robust_distance_threshold``).

    **predict** computes the kernel between new and training points and runs
    the training O- and U-steps with the centres fixed, as
    :meth:`RobustKMeans.predict`.

    Examples
    --------
    >>> from robustclust import KernelRobustKMeans
    >>> from robustclust.datasets import make_rings_with_outliers
    >>> data = make_rings_with_outliers(random_state=0)
    >>> model = KernelRobustKMeans(2, kernel="rbf", gamma=0.2, q=1.1, n_outliers=60,
    ...                            init="spectral", n_init=3, random_state=0).fit(data.X)
    >>> int(model.n_outliers_)
    60
    """

    _parameter_constraints: dict = {
        **RobustKMeans._parameter_constraints,
        **_KERNEL_CONSTRAINTS,
        "init": [StrOptions({"k-means++", "random", "spectral"}), "array-like"],
    }
    _parameter_constraints.pop("penalty")

    def __init__(self, n_clusters=8, *, kernel="rbf", gamma=None, degree=3, coef0=1.0,
                 lam=None, n_outliers=None, q=1.0, weighted=False, eps=None,
                 init="k-means++", n_init=10, max_iter=300, tol=1e-6, psd_shift=False,
                 approximation=None, n_landmarks=100, random_state=None, verbose=0):
        self.n_clusters = n_clusters
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.n_outliers = n_outliers
        self.q = q
        self.weighted = weighted
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.psd_shift = psd_shift
        self.approximation = approximation
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose

    def _linear_model(self):
        init = self.init if self.init in ("k-means++", "random") else "k-means++"
        return RobustKMeans(self.n_clusters, lam=self.lam, n_outliers=self.n_outliers, q=self.q,
                            weighted=self.weighted, eps=self.eps, init=init,
                            n_init=self.n_init, max_iter=self.max_iter, tol=self.tol,
                            random_state=self.random_state, verbose=self.verbose)

    def _prepare(self, X, sample_weight, reset=True):
        """Kernel matrix, weights, a solver and the initial coefficients."""
        X = self._validate_X(X, reset=reset)
        n = X.shape[0]
        sample_weight = _check_sample_weight(sample_weight, np.empty((n, 0)),
                                             dtype=np.float64, ensure_non_negative=True)
        self._target = check_outlier_params(self, n, self.n_clusters)
        self._check_init(n, self.n_clusters)
        K_raw = self._training_kernel(X)
        self._store_kernel(X, K_raw)
        K = K_raw - self._kernel_col_mean[:, None] - self._kernel_col_mean + self._kernel_mean
        self._eps = self._resolve_eps(K, sample_weight)
        solver = KernelRKMSolver(K, sample_weight, self.n_clusters, self.q,
                                 make_penalty("group"), make_penalty("group", True, self._eps),
                                 self.max_iter, self.tol, self.verbose)
        rng = check_random_state(self.random_state)
        embedding = self._spectral_start(K_raw, self.n_clusters)
        inits = [self._initial_coefficients(solver, K_raw, sample_weight, rng, self.n_clusters,
                                            embedding)
                 for _ in range(self._n_init)]
        self._offset = 0.0
        return X, sample_weight, solver, inits

    def _resolve_eps(self, K, sample_weight):
        """eps of the log penalty: 1e-3 x the RMS feature-space distance to the mean."""
        if self.eps is not None:
            return float(self.eps)
        if not self.weighted:
            return None
        # K is centred: ||phi_n - mean||^2 = K_nn
        total = float(sample_weight @ np.diag(K)) / sample_weight.sum()
        return 1e-3 * math.sqrt(total) if total > 0 else 1e-3

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Cluster X in feature space and flag its outliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Training data, or the kernel matrix when ``kernel="precomputed"``.
        y : Ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : KernelRobustKMeans
        """
        if self.approximation == "nystroem":
            X = self._validate_X(X, reset=True)
            if self.kernel == "precomputed":
                self._training_kernel(X)  # raises the Nystroem error
            Z = self._nystroem(X)
            self._copy_from_linear(self._linear_model().fit(Z, sample_weight=sample_weight))
            return self
        X, sample_weight, solver, inits = self._prepare(X, sample_weight)
        dim = self._feature_dim(X)

        def default_lam(state):
            d2 = solver.nearest_sq_dists(state)
            if dim is not None:
                return default_lambda(d2, sample_weight, dim, "group")
            return 2.0 * robust_distance_threshold(np.sqrt(d2), sample_weight)

        lam, lam_unweighted, state = fit_lambda(
            solver, inits, lam=None if self.lam is None else float(self.lam),
            target=self._target, weighted=self.weighted, default_lam=default_lam)
        self._store_state(state, lam, lam_unweighted, X)
        n = len(state.labels)
        if state.memberships is None:
            U = np.zeros((n, self.n_clusters))
            U[np.arange(n), state.labels] = 1.0
        else:
            U = state.memberships
        self.memberships_ = U
        self.eps_ = self._eps
        return self

    def _assign(self, X):
        """(labels, memberships, outlier_index, outlier_sizes, costs) of new points."""
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        if self.approximation == "nystroem":
            _, (labels, U, index, vals, costs) = self.approximate_model_._assign(
                self.nystroem_.transform(X))
            return labels, U, index, np.linalg.norm(vals, axis=1), costs
        diag, Kx = self._new_rows(X)
        solver = KernelRKMSolver(np.zeros((0, 0)), np.ones(len(diag)), self.n_clusters, self.q,
                                 make_penalty("group"), make_penalty("group", True, self.eps_),
                                 self.max_iter, self.tol)
        stages = [(self.unweighted_lambda_, False)]
        if self.weighted:
            stages.append((self.lambda_, True))
        return solver.assign(diag, Kx @ self.dual_coef_, self._gram_centres, stages)

    def predict(self, X):
        """Nearest cluster in feature space of each new point, -1 where flagged.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        labels, _, index, _, _ = self._assign(X)
        labels = labels.astype(np.intp, copy=True)
        labels[index] = -1
        return labels

    def outlier_norms(self, X):
        """Feature-space ||o|| that new points would receive (0 for inliers).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        norms : ndarray of shape (n_samples,)
        """
        labels, _, index, sizes, _ = self._assign(X)
        norms = np.zeros(len(labels))
        norms[index] = sizes
        return norms


class KernelRobustGaussianMixture(_KernelEstimator):
    """Kernel robust probabilistic clustering: Algorithm 4 (KRPC) in O(N^2 C) per iteration.

    RPC (:class:`RobustGaussianMixture` with ``covariance_type="spherical"``)
    on the empirical kernel map: a mixture of Gaussians with a common
    covariance sigma^2 I in a feature space of dimension P, with one outlier
    vector per point in the span of the mapped points.

    Parameters
    ----------
    n_components : int, default=1
    kernel, gamma, degree, coef0, psd_shift, approximation, n_landmarks
        As in :class:`KernelRobustKMeans`.
    lam, n_outliers, weighted, eps, n_init, max_iter, tol, random_state, verbose
        As in :class:`RobustGaussianMixture` (lam = 0 is rejected).
    init : {"robust-kmeans", "k-means++", "random", "spectral"} or array of \
            shape (n_samples,), default="robust-kmeans"
        ``"robust-kmeans"``: a :class:`KernelRobustKMeans` fit (one start, the
        same kernel and n_outliers); its centres start the means and its
        outliers are left out of the initial variance.  The others as in
        :class:`KernelRobustKMeans`.
    reg_covar : float, default=1e-6
        Floor on sigma^2, relative to the mean squared feature-space distance
        to the mean divided by P.

    Attributes
    ----------
    labels_, outlier_mask_, outlier_norms_, dual_coef_, lambda_, n_outliers_, \
    objective_, objective_history_, n_iter_, gamma_
        As in :class:`KernelRobustKMeans`.
    memberships_ : ndarray of shape (n_samples, n_components)
        Posteriors gamma.
    weights_ : ndarray of shape (n_components,)
    variance_ : float
        sigma^2.
    feature_dim_ : int
        P of eq. (27): n_features for the linear and cosine kernels (their
        feature space is R^p), N otherwise (the empirical kernel map,
        Section IV-C).
    outlier_scores_ : ndarray of shape (n_samples,)
        ||o_n|| / sigma, the Mahalanobis size the penalty sees.

    Notes
    -----
    Step 8 of Algorithm 4 as printed reuses the distances of step 3 (the
    previous centres and outliers) in the sigma update; the exact minimizer
    of eq. (26) needs the updated ones, which is what is used here, so that
    with a linear kernel the iterates are those of RobustGaussianMixture
    (spherical) from the same initial means.  The default lambda is that of
    RobustGaussianMixture for the linear and cosine kernels; otherwise
    lam sigma = median + 3.09 * 1.4826 * MAD of the residual norms at the
    plain-mixture solution.
    """

    _parameter_constraints: dict = {
        **RobustGaussianMixture._parameter_constraints,
        **_KERNEL_CONSTRAINTS,
        "init": [StrOptions({"robust-kmeans", "k-means++", "random", "spectral"}),
                 "array-like"],
    }
    _parameter_constraints.pop("covariance_type")

    def __init__(self, n_components=1, *, kernel="rbf", gamma=None, degree=3, coef0=1.0,
                 lam=None, n_outliers=None, weighted=False, eps=None, init="robust-kmeans",
                 n_init=10, max_iter=300, tol=1e-6, reg_covar=1e-6, psd_shift=False,
                 approximation=None, n_landmarks=100, random_state=None, verbose=0):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.lam = lam
        self.n_outliers = n_outliers
        self.weighted = weighted
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.reg_covar = reg_covar
        self.psd_shift = psd_shift
        self.approximation = approximation
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose

    def _prepare(self, X, sample_weight=None, reset=True):
        if sample_weight is not None:
            raise ValueError("KernelRobustGaussianMixture does not support sample_weight.")
        X = self._validate_X(X, reset=reset)
        n = X.shape[0]
        self._target = check_outlier_params(self, n, self.n_components)
        if self.lam is not None and self.lam == 0:
            raise ValueError(
                "lam=0 makes the cost of eq. (8) unbounded below (Section II-B of the "
                "paper): o_n = x_n - m_c with Sigma -> 0; use lam > 0.")
        self._check_init(n, self.n_components)
        K_raw = self._training_kernel(X)
        self._store_kernel(X, K_raw)
        K = K_raw - self._kernel_col_mean[:, None] - self._kernel_col_mean + self._kernel_mean
        dim = self._feature_dim(X) or n
        self.feature_dim_ = dim
        self._eps = 1e-3 if self.eps is None else float(self.eps)
        spread = float(np.mean(np.diag(K))) / dim
        self._covar_floor = self.reg_covar * (spread if spread > 0 else 1.0)
        solver = KernelRPCSolver(K, self.n_components, make_penalty("group"),
                                 make_penalty("group", True, self._eps), dim,
                                 self._covar_floor, self.max_iter, self.tol, self.verbose)
        rng = check_random_state(self.random_state)
        embedding = self._spectral_start(K_raw, self.n_components)
        inits = [self._initial_params(solver, K_raw, X, rng, embedding)
                 for _ in range(self._n_init)]
        self._offset = 0.0
        return X, None, solver, inits

    def _initial_params(self, solver, K_raw, X, rng, embedding=None):
        if not isinstance(self.init, str) or self.init != "robust-kmeans":
            ones = np.ones(solver.n_samples)
            return self._initial_coefficients(solver, K_raw, ones, rng, self.n_components,
                                              embedding), None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OutlierCountWarning)
            krkm = KernelRobustKMeans(
                self.n_components, kernel="precomputed", n_outliers=self.n_outliers,
                init="k-means++", n_init=1,
                random_state=rng.randint(np.iinfo(np.int32).max)).fit(solver.K)
        return krkm.dual_coef_, krkm.outlier_mask_

    def _linear_model(self):
        init = self.init if self.init in ("k-means++", "random", "robust-kmeans") \
            else "robust-kmeans"
        return RobustGaussianMixture(
            self.n_components, lam=self.lam, n_outliers=self.n_outliers,
            covariance_type="spherical", weighted=self.weighted, eps=self.eps, init=init,
            n_init=self.n_init, max_iter=self.max_iter, tol=self.tol, reg_covar=self.reg_covar,
            random_state=self.random_state, verbose=self.verbose)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the kernel mixture and flag the outliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Training data, or the kernel matrix when ``kernel="precomputed"``.
        y : Ignored

        Returns
        -------
        self : KernelRobustGaussianMixture
        """
        if self.approximation == "nystroem":
            X = self._validate_X(X, reset=True)
            if self.kernel == "precomputed":
                self._training_kernel(X)
            model = self._linear_model().fit(self._nystroem(X))
            self._copy_from_linear(model)
            self.weights_, self.variance_ = model.weights_, float(model.covariances_)
            self.outlier_scores_ = model.outlier_scores_
            self.feature_dim_ = model.means_.shape[1]
            return self
        X, _, solver, inits = self._prepare(X)
        dim = self._feature_dim(X)

        def default_lam(state):
            if dim is not None:
                return math.sqrt(stats.chi2.isf(DEFAULT_FALSE_ALARM, dim))
            return robust_distance_threshold(solver.residual_norms(state)) / math.sqrt(
                state.variance)

        lam, lam_unweighted, state = fit_lambda(
            solver, inits, lam=None if self.lam is None else float(self.lam),
            target=self._target, weighted=self.weighted, default_lam=default_lam)
        self._store_state(state, lam, lam_unweighted, X)
        self.memberships_ = state.memberships
        self.weights_ = state.weights
        self.variance_ = float(state.variance)
        self.outlier_scores_ = self.outlier_norms_ / math.sqrt(state.variance)
        self.eps_ = self._eps
        return self

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_`` (MAP component, -1 for outliers)."""
        return self.fit(X).labels_

    def _assign(self, X):
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        if self.approximation == "nystroem":
            return self.approximate_model_._assign(self.nystroem_.transform(X))
        diag, Kx = self._new_rows(X)
        solver = KernelRPCSolver(np.zeros((0, 0)), self.n_components, make_penalty("group"),
                                 make_penalty("group", True, self.eps_), self.feature_dim_,
                                 self._covar_floor, self.max_iter, self.tol)
        stages = [(self.unweighted_lambda_, False)]
        if self.weighted:
            stages.append((self.lambda_, True))
        return solver.assign(diag, Kx @ self.dual_coef_, self._gram_centres, self.weights_,
                             self.variance_, stages)

    def predict(self, X):
        """MAP component of each new point, -1 where the fitted rule flags it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        resp, index = self._assign(X)[:2]
        labels = resp.argmax(axis=1)
        labels[index] = -1
        return labels

    def predict_proba(self, X):
        """Posteriors of each new point (with its outlier vector).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
        """
        return self._assign(X)[0]

