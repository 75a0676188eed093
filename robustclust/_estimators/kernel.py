"""Kernel robust K-means and kernel RPC: the estimators (Section IV of the paper).

Both run the solver core on a :class:`~robustclust._core.geometry.KernelGeometry`
(the centred kernel matrix), with the same models as the linear estimators:
with a linear kernel the iterates are those of :class:`RobustKMeans` and of
spherical :class:`RobustGaussianMixture`.  Kernel evaluation, checks and the
feature-space starts are in :mod:`robustclust._estimators.kernels`.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.cluster import KMeans
from sklearn.kernel_approximation import Nystroem
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_is_fitted,
    validate_data,
)

from .._core.covariance import Covariance
from .._core.geometry import KernelGeometry
from .._core.models import KMeansModel, MixtureModel
from .._core.penalties import make_penalty
from .._core.selection import OutlierCountWarning
from .._core.solver import Solver
from .._core.spaces import KernelSpace
from .._core.starts import robust_start, trim_count
from .base import (
    MAX_N_INIT,
    RobustEstimator,
    check_frame_columns,
    state_from,
)
from .outliers import NOISE_ATTRIBUTES
from .units import internal_units
from .kernels import (
    EXPLICIT_FEATURES,
    SKLEARN_NAMES,
    RowsKernel,
    centring,
    check_kernel_matrix,
    coefficients_from_labels,
    evaluate_kernel,
    kernel_diagonal,
    kmeans_plusplus_indices,
    median_heuristic_gamma,
    spectral_embedding,
)
from .kmeans import RobustKMeans
from .mixture import RobustGaussianMixture, check_mixture_weights

KERNEL_CONSTRAINTS = {
    "kernel": [StrOptions({"rbf", "poly", "linear", "cosine", "precomputed"}), callable],
    "kernel_params": [dict, None],
    "lam": [Interval(Real, 0, None, closed="both"), None],
    "penalty": [StrOptions({"group", "log"})],
    "n_init": [Interval(Integral, 1, MAX_N_INIT, closed="both")],
    "n_landmarks": [Interval(Integral, 1, None, closed="left"), None],
}
#: The keys of ``kernel_params``: their rules and defaults.
KERNEL_PARAMS = {
    "gamma": ([Interval(Real, 0, None, closed="neither"), None], None),
    "degree": ([Interval(Integral, 1, None, closed="left")], 3),
    "coef0": ([Real], 1.0),
    "psd_shift": (["boolean"], False),
}
#: The keys the old parameters of the same names map to (see ``_params``).
_RENAMED_KERNEL = ("q", "weighted", "gamma", "degree", "coef0", "psd_shift",
                   "approximation")
#: The named kernels (the command line offers the same).
NAMED_KERNELS = ("rbf", "poly", "linear", "cosine")


class _KernelEstimator(RobustEstimator):
    """Kernel matrices, their checks, initialisations and the rows of new points."""

    _renamed_params = _RENAMED_KERNEL

    # -- kernel_params ---------------------------------------------------------------
    def _kernel_param(self, name):
        """One entry of ``kernel_params`` (its default when absent), checked."""
        params = self.kernel_params or {}
        unknown = sorted(set(params) - set(KERNEL_PARAMS))
        if unknown:
            raise ValueError(f"kernel_params has the unknown keys {unknown}; it takes "
                             f"{list(KERNEL_PARAMS)}.")
        rules, default = KERNEL_PARAMS[name]
        if name not in params:
            return default
        value = params[name]
        validate_parameter_constraints({name: rules}, {name: value}, type(self).__name__)
        return value

    @property
    def _gamma(self):
        return self._kernel_param("gamma")

    @property
    def _degree(self):
        return self._kernel_param("degree")

    @property
    def _coef0(self):
        return self._kernel_param("coef0")

    @property
    def _psd_shift(self):
        return self._kernel_param("psd_shift")

    @property
    def _approximate(self):
        """Whether the fit runs on Nystroem features (``n_landmarks`` given)."""
        return self.n_landmarks is not None

    #: X enters the linear and cosine kernels as (X - _input_offset) / _input_scale
    #: (a power of two for data of extreme magnitude, see ``internal_units``);
    #: feature-space distances are then in units of ``_scale``.
    _input_offset = 0.0
    _input_scale = 1.0
    _scale = 1.0
    _lambda_unit = 1.0
    _optional_state_names = ("_input_offset", "_input_scale", "_scale")

    # -- the kernel ----------------------------------------------------------------
    def _validate_X(self, X, reset):
        if self.kernel == "precomputed":
            if not reset:
                raise ValueError(
                    "predict needs the kernel of every new point with itself as well as "
                    "with the training points, which kernel='precomputed' does not give; "
                    "use labels_ for the training points or a kernel function.")
            check_frame_columns(X)
            return check_array(X, dtype=np.float64, input_name="K")
        check_frame_columns(X)
        return validate_data(self, X, reset=reset, dtype=np.float64, accept_sparse="csr")

    def _kernel_args(self, X):
        if callable(self.kernel) or self.kernel in EXPLICIT_FEATURES:
            return {}
        gamma = self._gamma
        if gamma is None and self.kernel == "rbf":
            gamma = median_heuristic_gamma(X)
        if self.kernel == "rbf":
            return {"gamma": gamma}
        return {"gamma": gamma, "degree": self._degree, "coef0": self._coef0}

    def _pairwise(self, X, Y):
        return evaluate_kernel(self.kernel, X, Y, getattr(self, "_kernel_kw", {}))

    def _set_input_units(self, X):
        """Offset and power-of-two scale of X for the linear and cosine kernels.

        The linear kernel's distances are those of the data, so X is centred
        and scaled as for :class:`RobustKMeans` (results invariant to the
        data's magnitude, lambda in the data's units); the cosine kernel is
        scale-free, so X is only scaled (its entries would overflow).  Other
        kernels see X as it is.
        """
        self._input_offset, self._input_scale, self._scale = 0.0, 1.0, 1.0
        if callable(self.kernel) or self.kernel not in ("linear", "cosine"):
            return
        if sp.issparse(X) and X.nnz == 0:
            return
        if self.kernel == "linear":
            _, self._input_offset, self._input_scale = internal_units(X)
            self._scale = self._input_scale
        else:
            _, _, self._input_scale = internal_units(X, offset=np.zeros(X.shape[1]))

    def _in_kernel_units(self, X):
        """X as the kernel sees it (see ``_set_input_units``)."""
        if self._input_scale == 1.0 and np.all(np.asarray(self._input_offset) == 0):
            return X
        return internal_units(X, self._input_offset, self._input_scale)[0]

    def _training_kernel(self, X):
        """Validated training kernel matrix (uncentred); sets ``gamma_`` and the input units."""
        self._set_input_units(X)
        if self.kernel == "precomputed":
            if self._approximate:
                raise ValueError("n_landmarks (Nystroem features) needs feature vectors; it cannot "
                                 "be used with kernel='precomputed'.")
            K = check_kernel_matrix(X, shift=self._psd_shift)
            self.gamma_ = None
            return K
        self._kernel_kw = self._kernel_args(X)
        self.gamma_ = self._kernel_kw.get("gamma")
        X = self._in_kernel_units(X)
        K = self._pairwise(X, X)
        if not np.all(np.isfinite(K)):
            raise ValueError("The kernel matrix has infinite or NaN entries (the data's "
                             "magnitude overflows the kernel): rescale the data.")
        if callable(self.kernel):
            K = check_kernel_matrix(K, shift=self._psd_shift)
        return (K + K.T) / 2.0

    def _feature_dim(self, X):
        """P of the chi^2 and variance rules: p for explicit features, None otherwise."""
        if not callable(self.kernel) and self.kernel in EXPLICIT_FEATURES:
            return X.shape[1]
        return None

    def _new_rows(self, X):
        """(k(x, x), centred kernel rows against the training points) for new X."""
        X = self._in_kernel_units(X)
        Kx = self._pairwise(X, self._in_kernel_units(self.X_fit_))
        diag = kernel_diagonal(self.kernel, X, self._kernel_kw)
        row = Kx.mean(axis=1)
        Kx = Kx - row[:, None] - self._kernel_col_mean + self._kernel_mean
        diag = diag - 2.0 * row + self._kernel_mean
        return diag, Kx

    # -- the hooks of the fit template ----------------------------------------------------
    def _make_geometry(self, X, sample_weight):
        K_raw = self._training_kernel(X)
        self.X_fit_ = None if self.kernel == "precomputed" else X
        self._kernel_col_mean, self._kernel_mean = centring(K_raw)
        K = K_raw - self._kernel_col_mean[:, None] - self._kernel_col_mean + self._kernel_mean
        self._embedding = None
        if isinstance(self.init, str) and self.init == "spectral":
            self._embedding = spectral_embedding(K_raw, self._n_clusters)
        return KernelGeometry(K, self._feature_dim(X)), self._units(X.shape[0])

    def _check_init(self, X):
        self._n_init = self.n_init
        if isinstance(self.init, str):
            return
        n_samples, n_clusters = X.shape[0], self._n_clusters
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
                          f"instead of n_init={self.n_init}.", RuntimeWarning, stacklevel=5)
            self._n_init = 1

    def _initial_coefficients(self, geometry, sample_weight, rng):
        """Initial centre coefficients B^T (C, N) from ``init``: points or label means.

        ``init="spectral"`` runs K-means on the spectral embedding (computed
        once per fit) with each start's own seed.
        """
        n, C = geometry.n_samples, self._n_clusters
        if not isinstance(self.init, str):
            return coefficients_from_labels(np.asarray(self.init), C, sample_weight)
        if self.init == "spectral":
            labels = KMeans(C, n_init=10, random_state=rng.randint(np.iinfo(np.int32).max)).fit(
                self._embedding).labels_
            return coefficients_from_labels(labels, C, sample_weight)
        if self.init == "robust":
            space = KernelSpace(geometry.K, geometry.sq_norms)
            return robust_start(space, C, sample_weight, trim_count(self.n_outliers, n, C), rng)
        if self.init == "k-means++":
            idx = kmeans_plusplus_indices(geometry.sq_norms, geometry.K, C, sample_weight, rng)
        else:  # random distinct points
            positive = np.flatnonzero(sample_weight > 0)
            pool = positive if len(positive) >= C else np.arange(n)
            idx = rng.choice(pool, C, replace=False)
        B = np.zeros((C, n))
        B[np.arange(C), idx] = 1.0
        return B

    def _store_kernel_state(self, problem, state):
        """dual_coef_, the centres' Gram matrix, the linear kernel's centres."""
        self.dual_coef_ = np.ascontiguousarray(state.centers.T)
        self._gram_centres = problem.solver.products_of(state).gram
        self._embedding = None
        if isinstance(self.kernel, str) and self.kernel == "linear":
            self.cluster_centers_ = np.asarray(safe_sparse_dot(self.dual_coef_.T, self.X_fit_,
                                                               dense_output=True))

    def _new_point_geometry(self, X):
        diag, Kx = self._new_rows(X)
        return KernelGeometry(feature_dim=getattr(self, "feature_dim_", None), rows=Kx, diag=diag,
                              center_gram=self._gram_centres)

    # -- Nystroem ------------------------------------------------------------------
    def _nystroem(self, X):
        if callable(self.kernel):
            kw, metric = {}, RowsKernel(self.kernel)
        else:
            kw, metric = self._kernel_args(X), SKLEARN_NAMES[self.kernel]
        self.gamma_ = kw.get("gamma")
        self.nystroem_ = Nystroem(kernel=metric, n_components=min(self.n_landmarks, X.shape[0]),
                                  random_state=self.random_state, **kw)
        return self.nystroem_.fit_transform(X)

    def _fit_nystroem(self, X, sample_weight=None):
        """Fit the linear estimator on Nystroem features (``n_landmarks`` given)."""
        X = self._validate_X(X, reset=True)
        if self.kernel == "precomputed":
            self._training_kernel(X)  # raises the Nystroem error
        Z = self._nystroem(X)
        model = self._linear_model()
        model = model.fit(Z) if sample_weight is None else model.fit(Z, sample_weight=sample_weight)
        for name in ("labels_", "outlier_mask_", "outlier_indices_", "outlier_norms_",
                     "outlier_scores_", "lambda_", "unweighted_lambda_", "n_outliers_",
                     "objective_", "objective_history_", "n_iter_", "converged_",
                     "memberships_", "eps_", *NOISE_ATTRIBUTES):
            setattr(self, name, getattr(model, name))
        self.outlier_rule_ = model.outlier_rule_
        # Nystroem features are not the input space: no outlier vectors there
        self.outlier_vectors_ = self.outlier_rows_ = None
        self.approximate_model_ = model
        self.dual_coef_ = None
        self._n_features_out = self._n_clusters
        return model

    def _fitted_shapes(self):
        k, p = self._n_clusters, self.n_features_in_
        n = np.shape(self.X_fit_)[0] if np.ndim(self.X_fit_) == 2 else -1
        shapes = {"X_fit_": (n, p), "dual_coef_": (n, k), "_kernel_col_mean": (n,),
                  "_gram_centres": (k, k), "cluster_centers_": (k, p)}
        if hasattr(self, "weights_"):
            shapes["weights_"] = (k,)
        return shapes

    def _check_fitted_values(self):
        if hasattr(self, "weights_"):
            check_mixture_weights(self)

    def _nystroem_features(self, X):
        """New points as the Nystroem features the approximate model was fitted on."""
        check_is_fitted(self)
        return self.nystroem_.transform(self._validate_X(X, reset=False))

    def _assign(self, X):
        if self._approximate:
            return self.approximate_model_._assign(self._nystroem_features(X))
        return super()._assign(X)

    def lambda_rule(self):
        if self.n_outliers is None and self._lam_value is None and not callable(self.kernel) \
                and self.kernel in EXPLICIT_FEATURES:
            return "default: flags about 0.1% of Gaussian inliers"
        return super().lambda_rule()

    @property
    def _default_rule_name(self):
        # the linear and cosine kernels have a dimension: the chi^2 rule of the
        # linear estimators; the others a robust tail of the distances
        explicit = not callable(self.kernel) and self.kernel in EXPLICIT_FEATURES
        return "chi2" if explicit else "tail"


class KernelRobustKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin,
                         _KernelEstimator):
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
        the paper's homogeneous (x^T y)^3 is
        ``kernel_params={"degree": 3, "gamma": 1, "coef0": 0}``.
        ``"linear"``: x^T y (equals :class:`RobustKMeans`).  ``"cosine"``:
        x^T y / (||x|| ||y||).  ``"precomputed"``: X is the N x N kernel matrix
        (any symmetric PSD similarity).  A callable ``kernel(X, Y)`` returns
        the (n_X, n_Y) kernel matrix, as for :class:`sklearn.svm.SVC`.  The
        built-in kernels are scikit-learn's :mod:`sklearn.metrics.pairwise`.
    kernel_params : dict, default=None
        Parameters of the kernel, as the keyword arguments of
        :func:`sklearn.metrics.pairwise.pairwise_kernels`:
        ``"gamma"`` (float > 0, for "rbf" and "poly"; default None: for
        "rbf", 1 / the median of the squared distances between pairs of
        points (a robust estimate of twice the total variance: outliers,
        fewer than half the points, barely move a median; computed on a
        fixed subsample of 1000 points when N is larger); for "poly", 1 /
        n_features (scikit-learn's rule); the value used is ``gamma_``),
        ``"degree"`` (int, default 3) and ``"coef0"`` (float, default 1) for
        "poly"; and ``"psd_shift"`` (bool, default False) for precomputed or
        callable kernels whose smallest eigenvalue is below -1e-8 ||K||: add
        -lambda_min to the diagonal instead of raising.
    lam, n_outliers, fuzzifier, eps, n_init, max_iter, tol, random_state, verbose
        As in :class:`RobustKMeans` (outlier sizes are feature-space norms
        ||o_n|| = ||alpha_n||_K, eq. (38)).
    penalty : {"group", "log"}, default="group"
        As in :class:`RobustKMeans` (a feature space has no entries to
        threshold one by one, so no entry-wise penalty).
    init : {"k-means++", "robust", "random", "spectral"} or array of shape \
            (n_samples,), default="k-means++"
        ``"k-means++"``: k-means++ seeding with feature-space distances;
        ``"robust"``: the robust start of :class:`RobustKMeans` with
        feature-space distances (centres are means of kept points, so their
        distances come from K).  It is not the default here: with the rbf
        kernel feature-space distances are at most sqrt(2), so a far point
        cannot dominate the D^2 sampling as it does in input space, and on
        the two rings of :func:`~robustclust.datasets.make_rings_with_outliers`
        (gamma = 0.2, 60 outliers) every robust start concentrates on the same
        trimmed fixed point that cuts both rings (ARI 0.37, trimmed cost 139.2)
        where 10 k-means++ starts find the rings (ARI 1.0, 137.8).  Use it
        with the linear kernel, or with far outliers and a wide kernel;
        ``"random"``: distinct random points; ``"spectral"``: the spectral
        relaxation of kernel K-means, K-means on the unit-length rows of the
        top ``n_clusters`` eigenvectors of K (the eigenvectors are computed
        once; each of the ``n_init`` starts clusters them with its own
        seed).  With :func:`robustclust.graph.normalized_adjacency_kernel`
        this is spectral clustering with the symmetric Laplacian
        I - D^{-1/2} E D^{-1/2}, the paper's start for graphs (Section VI-C);
        an integer array: initial labels (the initial centres are the means
        of their groups).
    n_landmarks : int, default=None
        None: the exact N x N kernel.  An int m: map X to m Nystroem features
        (:class:`sklearn.kernel_approximation.Nystroem` with m landmarks) and
        run the linear :class:`RobustKMeans` on them: O(N m C) per iteration
        and O(N m) memory instead of O(N^2 C) and O(N^2).  Use it when N is
        beyond a few ten thousand (K alone takes 8 N^2 bytes); the clustering
        is then that of the rank-m approximation of K (m = 100 is a usual
        start).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each point, -1 for outliers.
    memberships_ : ndarray of shape (n_samples, n_clusters)
    outlier_mask_ : ndarray of shape (n_samples,), dtype bool
    outlier_norms_, outlier_scores_ : ndarray of shape (n_samples,)
        ||o_n|| in feature space (eq. (38)), 0 for inliers (the same array).
    outlier_indices_ : ndarray of int64
        Row indices of the outliers.
    outlier_vectors_, outlier_rows_ : None
        The outlier vectors live in feature space, not in the input's.
    outlier_probability_, noise_proportion_, inlier_flag_rate_ : None
        The kernel estimators have no noise-model default count.
    dual_coef_ : ndarray of shape (n_samples, n_clusters)
        B: centre c is sum_n B_nc phi(x_n) (eq. (31)); None with Nystroem.
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Only for the linear kernel: B^T X.
    lambda_, unweighted_lambda_, n_outliers_, objective_, objective_history_, n_iter_, eps_
        As in :class:`RobustKMeans`.
    gamma_ : float or None
        The gamma used.
    approximate_model_ : RobustKMeans
        The linear model on the Nystroem features (only with ``n_landmarks``).

    Notes
    -----
    **Cost.**  A direct transcription of Algorithm 3 carries the N x N
    matrices A and Delta and costs O(N^3 C) per iteration.  Here A is kept as
    one shrink factor and one weight row per outlier (A = Delta S with
    Delta = I - B W^T), so an iteration costs one product K B plus O(N C^2):
    O(N^2 C) time, memory K plus O(N C).  The derivation is in
    :mod:`robustclust._core.state` (outliers as shrink factors of residuals)
    and :class:`robustclust._core.geometry.KernelGeometry`.  K is centred
    once (H K H), which changes no distance and improves rounding.

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
    >>> model = KernelRobustKMeans(2, kernel="rbf", kernel_params={"gamma": 0.2},
    ...                            fuzzifier=1.1, n_outliers=60, init="spectral", n_init=3,
    ...                            random_state=0).fit(data.X)
    >>> int(model.n_outliers_)
    60
    """

    _parameter_constraints: dict = {
        **{name: rule for name, rule in RobustKMeans._parameter_constraints.items()
           if name != "refine"},
        **KERNEL_CONSTRAINTS,
        "init": [StrOptions({"robust", "k-means++", "random", "spectral"}), "array-like"],
    }

    def __init__(self, n_clusters=8, *, kernel="rbf", kernel_params=None, lam=None,
                 n_outliers=None, fuzzifier=1.0, penalty="group", eps=None, init="k-means++",
                 n_init=10, max_iter=300, tol=1e-6, n_landmarks=None, random_state=None,
                 verbose=0, **renamed):
        self.n_clusters = n_clusters
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.n_outliers = n_outliers
        self.fuzzifier = fuzzifier
        self.penalty = penalty
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose
        self._take_renamed(renamed)

    def _linear_model(self):
        init = self.init if self.init in ("robust", "k-means++", "random") else "k-means++"
        lam = "chi2" if self.lam is None and self.n_outliers is None else self.lam
        return RobustKMeans(self.n_clusters, lam=lam, n_outliers=self.n_outliers,
                            fuzzifier=self.fuzzifier, penalty=self.penalty, eps=self.eps,
                            init=init, n_init=self.n_init, max_iter=self.max_iter, tol=self.tol,
                            refine=False, random_state=self.random_state, verbose=self.verbose)

    _default_lambda_description = "a robust 0.1% tail of the feature-space distances"
    _fitted_state_names = (
        "X_fit_", "dual_coef_", "_gram_centres", "_kernel_col_mean", "_kernel_mean",
        "_kernel_kw", "gamma_", "lambda_", "unweighted_lambda_", "eps_", "n_outliers_",
        "objective_", "n_iter_", "n_features_in_",
    )

    # -- the hooks of the fit template ----------------------------------------------------
    def _validate_input(self, X, sample_weight, reset):
        X = self._validate_X(X, reset)
        if reset:
            sample_weight = _check_sample_weight(sample_weight, np.empty((X.shape[0], 0)),
                                                 dtype=np.float64, ensure_non_negative=True)
        return X, sample_weight

    def _units(self, n_samples):
        # lambda is a feature-space distance, the objective a squared one
        return {"offset": 0.0, "scale": self._scale, "lambda_unit": self._scale,
                "objective_unit": self._scale * self._scale}

    @property
    def _lambda_unit(self):
        return self._scale

    def _make_model(self, geometry):
        return KMeansModel(self.n_clusters, self.fuzzifier)

    def _make_penalties(self, geometry, sample_weight):
        """eps of the log penalty: 1e-3 x the RMS feature-space distance to the mean."""
        if self.eps is not None:
            eps = float(self.eps) / self._scale
        elif not self._log_penalty:
            eps = None
        else:
            # K is centred: ||phi_n - mean||^2 = K_nn
            total = float(sample_weight @ geometry.sq_norms) / sample_weight.sum()
            eps = 1e-3 * math.sqrt(total) if total > 0 else 1e-3
        self._eps = eps
        return make_penalty("group"), make_penalty("group", True, eps)

    def _initializations(self, solver, X, sample_weight, rng):
        return [self._initial_coefficients(solver.geometry, sample_weight, rng)
                for _ in range(self._n_init)]

    def _store_model(self, problem, state):
        self._store_kernel_state(problem, state)
        n = problem.solver.geometry.n_samples
        if state.memberships is None:
            U = np.zeros((n, self.n_clusters))
            U[np.arange(n), state.labels] = 1.0
        else:
            U = state.memberships
        self.memberships_ = U
        self.eps_ = None if self._eps is None else self._eps * self._scale
        self._n_features_out = self.n_clusters

    def _new_point_solver(self, X):
        g = self._new_point_geometry(X)
        eps = None if self.eps_ is None else self.eps_ / self._scale
        solver = Solver(g, KMeansModel(self.n_clusters, self.fuzzifier), make_penalty("group"),
                        make_penalty("group", True, eps), max_iter=self.max_iter,
                        tol=self.tol)
        return solver, state_from(self.dual_coef_.T)

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
        if self._approximate:
            self._fit_nystroem(X, sample_weight)
            return self
        return self._fit(X, sample_weight)


    def transform(self, X):
        """Feature-space distances ||phi(x) - m_c|| to the cluster centres (eq. (37), o = 0).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        if self._approximate:
            return self.approximate_model_.transform(self._nystroem_features(X))
        solver, state = self._clean(X)
        return np.sqrt(solver.products_of(state).sq_distances())

    def outlier_norms(self, X):
        """Feature-space ||o|| that new points would receive (0 for inliers).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        norms : ndarray of shape (n_samples,)
        """
        solver, state = self._assign(X)
        return np.asarray(self._outlier_norms_of(solver, state), dtype=np.float64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not (isinstance(self.kernel, str)
                                      and self.kernel == "precomputed")
        return tags


class KernelRobustGaussianMixture(_KernelEstimator):
    """Kernel robust probabilistic clustering: Algorithm 4 (KRPC) in O(N^2 C) per iteration.

    RPC (:class:`RobustGaussianMixture` with ``covariance_type="tied_spherical"``)
    on the empirical kernel map: a mixture of Gaussians with a common
    covariance sigma^2 I in a feature space of dimension P, with one outlier
    vector per point in the span of the mapped points.

    Parameters
    ----------
    n_components : int, default=1
    kernel, kernel_params, n_landmarks
        As in :class:`KernelRobustKMeans`.
    lam, n_outliers, penalty, eps, n_init, max_iter, tol, random_state, verbose
        As in :class:`RobustGaussianMixture` (lam = 0 is rejected).
    init : {"robust-kmeans", "robust", "k-means++", "random", "spectral"} or \
            array of shape (n_samples,), default="robust-kmeans"
        ``"robust-kmeans"``: a :class:`KernelRobustKMeans` fit (one start, the
        same kernel and n_outliers) from k-means++ seeding, the default of
        :class:`KernelRobustKMeans` (see there why the robust start is not);
        its centres start the means and its outliers are left out of the
        initial variance.  ``"robust"``: the same fit from its robust start.
        The others as in :class:`KernelRobustKMeans`.
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
        sigma^2 (inf or 0 when the data's magnitude is beyond about 1e154 or
        below 1e-154: predictions use the internal units).
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

    _renamed_params = tuple(name for name in _RENAMED_KERNEL if name != "q")
    _parameter_constraints: dict = {
        **{name: rule for name, rule in RobustGaussianMixture._parameter_constraints.items()
           if name not in ("covariance_type", "eigenvalue_ratio")},
        **KERNEL_CONSTRAINTS,
        "init": [StrOptions({"robust", "robust-kmeans", "k-means++", "random", "spectral"}),
                 "array-like"],
    }

    def __init__(self, n_components=1, *, kernel="rbf", kernel_params=None, lam=None,
                 n_outliers=None, penalty="group", eps=None, init="robust-kmeans", n_init=10,
                 max_iter=300, tol=1e-4, reg_covar=1e-6, n_landmarks=None, random_state=None,
                 verbose=0, **renamed):
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.lam = lam
        self.n_outliers = n_outliers
        self.penalty = penalty
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.reg_covar = reg_covar
        self.n_landmarks = n_landmarks
        self.random_state = random_state
        self.verbose = verbose
        self._take_renamed(renamed)

    _n_clusters_name = "n_components"
    _default_lambda_description = "a robust 0.1% tail of the feature-space distances"
    _variance = None
    _optional_state_names = _KernelEstimator._optional_state_names + ("_variance",)
    _fitted_state_names = (
        "X_fit_", "dual_coef_", "_gram_centres", "_kernel_col_mean", "_kernel_mean",
        "_kernel_kw", "gamma_", "weights_", "variance_", "feature_dim_", "_covar_floor",
        "lambda_", "unweighted_lambda_", "eps_", "n_outliers_", "objective_", "n_iter_",
        "n_features_in_",
    )

    # -- the hooks of the fit template ----------------------------------------------------
    def _validate_input(self, X, sample_weight, reset):
        if sample_weight is not None:
            raise ValueError("KernelRobustGaussianMixture does not support sample_weight.")
        return self._validate_X(X, reset), None

    def _units(self, n_samples):
        # lambda and eps are scale-free (||o|| in the Sigma^-1 norm); the
        # log-likelihood of P-dimensional data scaled by s drops by P log s a point
        dim = self._feature_dim(self.X_fit_) if self.X_fit_ is not None else None
        return {"offset": 0.0, "scale": self._scale, "lambda_unit": 1.0,
                "objective_shift": n_samples * (dim or n_samples) * math.log(self._scale)}

    def _make_model(self, geometry):
        n = geometry.n_samples
        dim = geometry.feature_dim or n
        self.feature_dim_ = dim
        spread = float(np.mean(geometry.sq_norms)) / dim
        self._covar_floor = self.reg_covar * (spread if spread > 0 else 1.0)
        return MixtureModel(self.n_components, "spherical", self._covar_floor, dim)

    def _make_penalties(self, geometry, sample_weight):
        self._eps = 1e-3 if self.eps is None else float(self.eps)
        return make_penalty("group"), make_penalty("group", True, self._eps)

    def _initializations(self, solver, X, sample_weight, rng):
        return [self._initial_params(solver.geometry, rng) for _ in range(self._n_init)]

    def _initial_params(self, geometry, rng):
        if not isinstance(self.init, str) or self.init not in ("robust", "robust-kmeans"):
            ones = np.ones(geometry.n_samples)
            return self._initial_coefficients(geometry, ones, rng), None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OutlierCountWarning)
            krkm = KernelRobustKMeans(
                self.n_components, kernel="precomputed", n_outliers=self.n_outliers,
                init="robust" if self.init == "robust" else "k-means++", n_init=1,
                random_state=rng.randint(np.iinfo(np.int32).max)).fit(geometry.K)
        return krkm.dual_coef_.T, krkm.outlier_mask_

    def _linear_model(self):
        init = self.init if self.init in ("robust", "k-means++", "random", "robust-kmeans") \
            else "robust-kmeans"
        lam = "chi2" if self.lam is None and self.n_outliers is None else self.lam
        return RobustGaussianMixture(
            self.n_components, lam=lam, n_outliers=self.n_outliers,
            covariance_type="tied_spherical", penalty=self.penalty, eps=self.eps, init=init,
            n_init=self.n_init, max_iter=self.max_iter, tol=self.tol,
            reg_covar=self.reg_covar, random_state=self.random_state, verbose=self.verbose,
            # the exact kernel mixture has no trimmed refinement: the Nystroem
            # features are fitted by the same (penalized) estimator
            refine=False)

    def _store_model(self, problem, state):
        self._store_kernel_state(problem, state)
        self.memberships_ = state.memberships
        self.weights_ = state.weights
        variance = float(state.covariance.value)
        self._variance = variance  # in internal units: variance_ overflows beyond 1e154
        with np.errstate(over="ignore", under="ignore"):
            self.variance_ = float(np.float64(variance) * self._scale * self._scale)
        self.outlier_scores_ = self.outlier_norms_ / (math.sqrt(variance) * self._scale)
        self.eps_ = self._eps

    def _new_point_solver(self, X):
        g = self._new_point_geometry(X)
        model = MixtureModel(self.n_components, "spherical", self._covar_floor, self.feature_dim_)
        solver = Solver(g, model, make_penalty("group"), make_penalty("group", True, self.eps_),
                        max_iter=self.max_iter, tol=self.tol)
        variance = getattr(self, "_variance", None)
        if variance is None:
            variance = self.variance_ / self._scale / self._scale
        cov = Covariance("spherical", variance, self.feature_dim_)
        return solver, state_from(self.dual_coef_.T, self.weights_, cov)

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
        if self._approximate:
            model = self._fit_nystroem(X)
            self.weights_, self.variance_ = model.weights_, float(model.covariances_)
            self._variance = None
            self.outlier_scores_ = model.outlier_scores_
            self.feature_dim_ = model.means_.shape[1]
            return self
        return self._fit(X)

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_`` (MAP component, -1 for outliers)."""
        return self.fit(X).labels_


    def score_samples(self, X):
        """Log-density of each point under the fitted feature-space mixture, with o = 0.

        The mixture of Section IV-C: weights ``weights_``, means in feature
        space, covariance ``variance_`` times the identity of dimension
        ``feature_dim_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_prob : ndarray of shape (n_samples,)
        """
        if self._approximate:
            return self.approximate_model_.score_samples(self._nystroem_features(X))
        _, state = self._clean(X)
        shift = self.feature_dim_ * math.log(self._scale) if self._scale != 1.0 else 0.0
        return -np.asarray(state.point_costs) - shift

    def score(self, X, y=None):
        """Mean log-density of X under the fitted mixture (see score_samples).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        log_likelihood : float
        """
        return float(np.mean(self.score_samples(X)))

    def predict_proba(self, X):
        """Posteriors of each new point (with its outlier vector).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
        """
        return np.asarray(self._assign(X)[1].memberships)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not (isinstance(self.kernel, str)
                                      and self.kernel == "precomputed")
        return tags
