"""Robust (soft, weighted) K-means: the estimator (Algorithms 1 and 3's linear case)."""

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
from sklearn.cluster import kmeans_plusplus
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_array, check_is_fitted, validate_data

from .._core.compiled import lazy_module, worth
from .._core.backend import asarray, namespace, to_numpy
from .._core.geometry import LinearGeometry
from .._core.models import KMeansModel
from .._core.penalties import make_penalty
from .._core.refine import Refined, fixed_outlier_state, refined_assignment
from .._core.solver import Solver
from .._core.spaces import PointSpace
from .._core.starts import (
    AUTO_KEEP,
    AUTO_STARTS,
    NOISE_COUNT_STARTS,
    kmeans_parallel_in_memory,
    robust_start,
    screened_starts,
    trim_count,
)
from ._params import PENALTIES
from .base import (
    MAX_ITER,
    MAX_N_INIT,
    NoiseDefaultMixin,
    RobustEstimator,
    check_frame_columns,
    state_from,
)
from .units import internal_units, restore_input
from .dask_fit import is_dask, predict_dask, score_dask


_dense = lazy_module("robustclust._core._dense")

class RobustKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin,
                   NoiseDefaultMixin, RobustEstimator):
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
    lam : float or "chi2", default=None
        The outlier-controlling lambda >= 0 of eqs. (5)/(6); ``np.inf`` gives
        plain (soft) K-means, 0 flags every point.  Give ``lam`` or
        ``n_outliers``, not both.  With neither, the number of outliers is
        estimated from the data (the default count, see Notes) and lambda is
        chosen to flag it.  ``"chi2"``: lambda from a chi^2 tail of the
        distances to the nearest centre (see Notes, "Default lambda").
    n_outliers : int or float, default=None
        Target number of outliers s.  An int is a count (0 <= s < N; not a
        boolean); a float in (0, 0.5) is a fraction of N (the
        ``contamination`` convention),
        rounded to the nearest count.  lambda is then chosen along a
        decreasing, warm-started grid and refined by bisection so that exactly
        s points are flagged where the path allows (see Notes).
    fuzzifier : float, default=1.0
        The exponent q >= 1 of the memberships (eq. (6)).  1 is hard robust
        K-means (assignment rule eq. (15)); above 1 soft robust K-means
        (membership update eq. (14)), the softer the larger.
    penalty : {"group", "elementwise", "log", "log-elementwise"}, default="group"
        The outlier penalty rho.  ``"group"``: rho(o) = ||o||_2, whole points
        are outliers (the paper).  ``"elementwise"``: rho(o) = ||o||_1
        (Remark 2), single entries are outliers; the O-step soft-thresholds
        each entry of the residual at lam / 2, and a point is flagged when
        any of its entries is.  ``"log"`` and ``"log-elementwise"``: their log
        versions lam * log(1 + ||o|| / eps) of Section III-C
        (eqs. (29)-(30)), the paper's "weighted" robust K-means: one
        majorization-minimization reweighting lam_n = lam / (||o_n|| + eps)
        per iteration, started from the converged unweighted solution.
    eps : float, default=None
        The eps of the log penalties.  None uses 1e-3 times the
        root-mean-square distance of the points to their mean, so the
        default is scale-free.
    init : {"robust", "k-means++", "k-means||", "random"} or array of shape \
            (n_clusters, n_features), default="robust"
        ``"robust"``: a start that far, isolated points cannot capture
        (:mod:`robustclust._core.starts`): k-means++-type seeding on all but
        the t farthest points (D^2 sampling mixed with uniform sampling, each
        centre the best of a few candidates by the trimmed potential), then
        concentration steps of trimmed k-means (assign, keep the N - t
        nearest points, move the centres to their means), from three cheap
        starts, the best by the trimmed potential kept.  t is ``n_outliers``
        when given, else 20% of N.  It is the default because k-means++
        draws a far point as a centre almost surely, and that centre keeps a
        cluster of its own while two real clusters merge.
        ``"k-means++"``: scikit-learn's :func:`~sklearn.cluster.kmeans_plusplus`
        (the default before the robust start; the paper's kind of start).
        ``"k-means||"``: k-means|| (Bahmani et al., 2012), meant for Dask
        input, where it reads all the data in 7 passes instead of fitting a
        sample: 5 rounds of D^2 oversampling (2 n_clusters points per round
        in expectation), each candidate weighted by the weight of the points
        nearest to it, reduced to n_clusters centres by the robust start on
        the weighted candidates, trimming t points' worth of weight (so far
        points, light candidates, are trimmed).  Its draws depend on the
        rows' positions, not on the blocks: the same ``random_state`` gives
        the same centres for any chunking, and in memory (one block).
        ``"random"``: n_clusters distinct data points drawn at random (a
        random U in the simplex, as the paper suggests, makes soft K-means
        collapse all centres onto the grand mean).  An array: the initial
        centres (then ``n_init`` is 1).
    n_init : "auto" or int, default="auto"
        Number of initialisations (at most 10,000); the best run is kept, judged by the cost
        of eq. (6) (its log-penalty version with a log penalty), or, when
        ``n_outliers`` is given, by the l0-constrained cost of eq. (3)
        (after refinement when ``refine`` is on).  ``"auto"``: with
        ``init="robust"``, ten robust starts drawn on a sample of the rows (at
        least 2,000, 100 per cluster) and the best two by their trimmed cost
        there run on all the rows (tclust's many short starts and few long
        ones, :func:`robustclust._core.starts.screened_starts`: at 100,000 x
        32 with 16 clusters ten full starts cost 14 KMeans fits, these a
        fraction of one); one start for the other ``init``, as scikit-learn's
        ``n_init="auto"``.  With the default count (neither ``lam`` nor
        ``n_outliers``) the fit is K-means of the points that are not noise,
        and its starts are the noise model's clusters, the robust start its EM
        began from and the best of ``NOISE_COUNT_STARTS`` = 3 robust starts of
        its own, instead of ten (the EM can merge two clusters where the noise
        is dense; measured, see ``NOISE_COUNT_STARTS``).
    refine : {"auto", True, False}, default="auto"
        Exact trimmed refinement of the fitted solution (see Notes):
        concentration steps that lower the l0 cost of eq. (3) to a fixed
        point at which exactly s points are flagged.  ``"auto"`` refines
        when ``n_outliers`` is given or the default count sets it (a count
        is then the question, and eq. (3) is the problem that count
        defines) for hard K-means (``fuzzifier=1``) with
        ``penalty="group"`` (the steps run on a host
        copy of X for other array namespaces; a Dask fit is not refined
        and warns where it would be);
        otherwise the paper's estimator is returned as is.  ``True``
        refines those fits whatever sets lambda (s is then the number of
        points the fit flags) and raises ValueError for the others;
        ``False`` keeps the unrefined estimator of the paper.  The name
        follows "refinement" steps in tclust / trimmed k-means terminology.
    max_iter : int, default=300
        Maximum number of BCD iterations of one run (at most 100,000).
    tol : float, default=1e-6
        epsilon_s of the paper's stopping rule
        ||M_t - M_{t-1}||_F <= tol ||M_t||_F; the outlier matrix must settle
        in the same relative sense.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisations.
    verbose : int, default=0
        Print the objective at every iteration.
    copy_x : bool, default=True
        Centre a copy of dense X (the fit works on centred data: see
        :mod:`~robustclust._estimators.units`).  ``False`` centres a
        writeable C-ordered NumPy X where it lies, saving a copy of X, and
        adds the offset back before ``fit`` returns (also when it raises):
        each value then differs from the original by at most the rounding
        of that subtraction and addition.  Input that is not C-ordered
        float, sparse, read-only or of another namespace, or whose values
        differ by more than the dtype holds (their centring could not be
        undone), is copied as with ``True``.

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
        ||o_n||_2, the outlier score (positive exactly for the points labelled
        -1).  After refinement, o_n = x_n - m_{c(n)} (eq. (3)): the whole
        distance to the nearest centre, which :meth:`outlier_norms` of a
        refined model gives new points too; the paper's estimator (not
        refined) gives the O-step's shrunk ||r_n|| - lambda_ / 2.
    outlier_scores_ : ndarray of shape (n_samples,)
        The outlier score the fit thresholds: ``outlier_norms_`` (the same
        array; the mixtures' is the Mahalanobis size).
    outlier_indices_ : ndarray of int64
        Row indices of the outliers (``np.flatnonzero(outlier_mask_)``).
    outlier_vectors_ : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        The outlier matrix O, stored sparse: memory grows with the number of
        outliers.  ``X - outlier_vectors_`` is the cleaned data.  None for
        Dask input and other array namespaces.
    outlier_rows_ : ndarray of shape (n_outliers_, n_features)
        The rows of O at ``outlier_indices_``, dense.
    lambda_ : float
        lambda used (chosen, when ``n_outliers`` or neither was given).
        After refinement: a lambda at which the hard O-step at the refined
        centres flags exactly the refined outliers (the middle of that
        interval, see Notes), so that ``predict`` reproduces ``labels_`` on
        the training points; the unrefined one is ``unrefined_lambda_``.
    unweighted_lambda_ : float
        lambda of the unweighted run that starts the weighted one; equals
        ``lambda_`` unless a log penalty and ``n_outliers`` are both given.
    n_outliers_ : int
        Number of points flagged.
    outlier_probability_ : ndarray of shape (n_samples,) or None
        With the ``"noise"`` default: each point's posterior probability of
        the noise component; with ``refine`` the points where it exceeds 0.5
        are the outliers (with ``refine=False`` or soft K-means the fit flags
        that many points by its own distances, which can differ in a few
        borderline points).  None when ``lam`` or ``n_outliers`` was given or
        the ``"chi2"`` rule was used.
    noise_proportion_ : float or None
        The estimated noise proportion pi_0 of that model (None likewise).
    inlier_flag_rate_ : float or None
        What the ``"noise"`` default promises for Gaussian clusters: the
        fitted model's expected fraction of points drawn from its Gaussian
        clusters whose outlier probability exceeds 0.5 (None likewise).
    eps_ : float or None
        eps used by the log penalty (None unless a log penalty or ``eps``).
    objective_ : float
        Final cost (eq. (6), or its log-penalty version); the
        l0 cost of eq. (3) (``trimmed_cost_``) when the fit was refined.
    trimmed_cost_ : float
        The l0 cost of eq. (3) at the fitted centres: the weighted squared
        distances of all but the s points farthest from their nearest
        centre (s = ``n_outliers`` when given, else ``n_outliers_``).
    refine_history_ : ndarray
        The l0 cost of eq. (3) at the start of the refinement and after each
        concentration step (non-increasing); empty when not refined.
    unrefined_lambda_ : float
        lambda of the unrefined solution (equals ``lambda_`` when not
        refined).
    objective_history_ : ndarray
        Cost after each BCD iteration of the final run (the reweighted run
        with a log penalty).
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

    **Default outlier count**.  With neither ``lam`` nor ``n_outliers``, the
    data are modelled as Gaussian clusters plus uniform noise,
    f(x) = pi_0 / V + sum_c pi_c g_c(x), V the volume of the bounding box of
    the data (over its non-constant features), in the manner of mclust's
    noise component (:mod:`robustclust._core.noise`).  The model is fitted by
    EM on a sample of max(3,000, 6 C (p + 1)) rows at most 10,000 (all rows
    when there are fewer), in standardised units (each
    feature centred on its median and divided by its spread), so that its
    answer does not depend on the units of the columns, from its own robust
    start; each cluster has a full covariance (shrunk 20% towards a multiple
    of the identity) and its posterior predictive Student t density, which
    widens the tails of small clusters in many dimensions.  A point's
    outlier probability is its posterior probability of the noise component
    (``outlier_probability_``, every row).  With ``refine`` (hard K-means,
    group penalty) the points where it exceeds 0.5 are the outliers and the
    clusters are K-means of the other points (concentration steps with that
    set fixed, from the noise model's clusters, its start and three robust
    starts: see ``n_init``); ``predict`` flags new points the same way
    (the noise model is kept, in model files too).  Otherwise the count is
    fitted as ``n_outliers`` would be.  What it promises: on data without
    noise EM drives pi_0, and with it every probability, towards 0, so
    Gaussian clusters get essentially no outliers; with noise, the expected
    fraction of Gaussian inliers flagged is ``inlier_flag_rate_``; noise far
    from the clusters is found whatever its proportion, and standardised
    real data sets with non-Gaussian clusters get few (iris, wine, breast
    cancer, digits: at most 2%, raw or standardised: tests/test_default_count.py).
    Where the model cannot run (sparse input, more than 256 features,
    constant features, or no cluster it can tell from the noise) lambda is
    set by the chi^2 rule below, with an :class:`OutlierCountWarning`, and
    ``outlier_rule_`` says which rule set the outliers.

    **Default lambda** (``lam="chi2"``, and sparse data or more
    than 256 features).  K-means first; sigma^2 = median_n min_c
    ||x_n - m_c||^2 / median(chi^2_p); lambda is set so that a Gaussian
    inlier is flagged with probability 0.1% (lam = 2 sigma sqrt(chi^2_p
    quantile 0.999) for the group penalty); the robust fit at that lambda
    re-estimates sigma once and is refitted.  With a log penalty, the
    weighted lambda is then tuned (from that fit) to flag as many points as
    it does.  Dask input always uses this rule.

    **Choosing lambda by count.**  K-means from every initialisation; from
    the best, a decreasing geometric grid from lam_max (the smallest lambda
    that flags nothing) with warm starts until s points are flagged;
    bisection between the last two grid points; every initialisation
    restarted cold at that lambda (a path from the K-means solution inherits
    its local minimum), the best kept by the l0 cost of eq. (3); a last
    warm-started bisection to hit s exactly.  If no lambda flags exactly s
    (the count can jump), the closest count is kept and an
    :class:`OutlierCountWarning` is raised.  With a log penalty, the
    unweighted lambda is tuned first and the weighted lambda is tuned from
    that solution, so ``lambda_`` is then the weighted lambda.

    **Refinement** (``refine``).  Minimizing eq. (3) over the outlier
    vectors leaves trimmed K-means: the cost of the N - s kept points to
    their centres.  From the fitted centres, and from every initialisation
    (one per restart), concentration steps (assign each point to its
    nearest centre, flag the s points of largest weighted squared distance,
    move each centre to the weighted mean of its kept points) are repeated
    until the labels and the kept set repeat; no step increases the l0
    cost, so the refined cost is at most the unrefined fit's.  The candidate
    of smallest l0 cost is returned: its centres (a fixed point: the means
    of their kept points), s flagged points with o_n = x_n - m_{c(n)} (the
    minimizer of eq. (3) for that set: the score ``outlier_norms_`` is the
    whole distance to the nearest centre), and ``objective_`` the l0 cost.
    ``lambda_`` becomes d_(s) + d_(s+1) (d the distances to the nearest
    centre, decreasing): every lambda in [2 d_(s+1), 2 d_(s)) flags exactly
    the refined set at the refined centres (with sample weights that
    reorder the farthest points no lambda does, and ``lambda_`` is then
    2 d_(s)).  A refined model labels and scores new points by the same
    rule (:meth:`predict`, :meth:`outlier_norms`): flagged iff the distance
    to the nearest centre exceeds ``lambda_`` / 2, scored by that distance,
    so that on the training points it reproduces ``labels_`` and
    ``outlier_norms_``.  Not done for Dask input.

    **A count that cannot be met honestly.**  When the s-th and (s+1)-th
    largest (weighted) costs of the refined fit tie -- repeated rows, rows
    sitting on a centre, data with fewer distinct rows than ``n_clusters``
    + s -- which of the tied points the concentration steps trim is an
    accident of their order.  The rule: a tie is flagged whole or not at
    all, whichever count is nearer s (the smaller on equal distance), and a
    row on its centre (score 0) never; the count then differs from s and an
    :class:`OutlierCountWarning` says so.  A flagged point always has a
    positive score, and of two equal rows both or neither are flagged.  The
    unrefined fits follow the same rule by their construction (a lambda
    flags a point iff its residual exceeds lambda / 2, so equal rows share
    their flag and rows on a centre are never flagged; the count search
    keeps the closest count and warns).

    **Empty clusters** (q = 1) are reseeded, as in scikit-learn, at the inliers
    that fit worst; a centre without members does not enter the cost, so
    this keeps the cost non-increasing.  A cluster all of whose members are
    flagged keeps its centre; its index then does not appear in ``labels_``.

    **predict** runs the training iteration for each new point on its own,
    with the fitted centres held fixed: for hard RKM the nearest centre and
    o = the prox of the residual, so a point is flagged iff its distance to
    the nearest centre exceeds lambda_ / 2; for soft fits and log penalties the
    O- and U-steps alternate until they settle (log: the MM reweighting
    started from the unweighted solution, as in training); a refined model
    flags a point iff that distance exceeds lambda_ / 2 and scores it by the
    distance itself.  A fit stores this rule applied to its own rows (the
    joint BCD can stop at a coordinate-wise minimum that is not a point's
    own best: an outlier whose o_n was set against a centre that is not its
    nearest; the stored memberships and outliers are then each point's
    best, at a cost no higher), so ``predict`` on the training points
    reproduces ``labels_`` and :meth:`outlier_norms` ``outlier_norms_``.
    Not the fits with a log penalty: the MM reweighting's limit depends on where it
    starts, and their ``predict`` can differ from ``labels_``.

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
        "lam": [Interval(Real, 0, None, closed="both"), StrOptions({"chi2"}), None],
        "n_outliers": [
            Interval(Integral, 0, None, closed="left"),
            Interval(Real, 0, 0.5, closed="neither"),
            None,
        ],
        "fuzzifier": [Interval(Real, 1, None, closed="left")],
        "penalty": [StrOptions(set(PENALTIES))],
        "eps": [Interval(Real, 0, None, closed="neither"), None],
        "init": [StrOptions({"robust", "k-means++", "k-means||", "random"}), "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, MAX_N_INIT, closed="both")],
        "refine": [StrOptions({"auto"}), "boolean"],
        "max_iter": [Interval(Integral, 1, MAX_ITER, closed="both")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "copy_x": ["boolean"],
    }

    _renamed_params = ("q", "weighted", "default_rule")
    _dask_fit = "kmeans"

    def __init__(self, n_clusters=8, *, lam=None, n_outliers=None, fuzzifier=1.0,
                 penalty="group", eps=None, init="robust", n_init="auto", refine="auto",
                 max_iter=300, tol=1e-6, random_state=None, verbose=0, copy_x=True,
                 **renamed):
        self.n_clusters = n_clusters
        self.lam = lam
        self.n_outliers = n_outliers
        self.fuzzifier = fuzzifier
        self.penalty = penalty
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.refine = refine
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
        self.copy_x = copy_x
        self._take_renamed(renamed)

    _optional_state_names = ("trimmed_cost_", "unrefined_lambda_", "_flags_noise_points",
                             "_refined",
                             *NoiseDefaultMixin._noise_state_names)
    #: Whether the fit was refined: new points then get the refined model's
    #: rule and score (:func:`~robustclust._core.refine.refined_scores`).
    _refined = False
    _fitted_state_names = (
        "cluster_centers_", "lambda_", "unweighted_lambda_", "eps_", "n_outliers_",
        "objective_", "n_iter_", "n_features_in_", "_offset", "_scale", "_n_features_out",
    )

    # -- the hooks of the fit template ----------------------------------------------------
    def _validate_input(self, X, sample_weight, reset):
        return validate_linear_input(self, X, sample_weight, reset)

    def _check_init(self, X):
        self._n_init = resolved_n_init(self.n_init, self.init)
        if isinstance(self.init, str):
            return
        init = check_array(to_numpy(self.init), dtype=[np.float64, np.float32],
                           ensure_all_finite=False, input_name="init")
        if init.shape != (self.n_clusters, X.shape[1]):
            raise ValueError(
                f"The shape of the initial centres {init.shape} does not match "
                f"the number of clusters and features "
                f"({self.n_clusters}, {X.shape[1]}).")
        if not np.all(np.isfinite(init)):
            raise ValueError("The initial centres contain NaN or infinity.")
        if self.n_init not in (1, "auto"):
            warnings.warn(
                "Explicit initial centres were given: performing one "
                f"initialisation instead of n_init={self.n_init}.",
                RuntimeWarning, stacklevel=5)
        self._n_init = 1

    def _make_geometry(self, X, sample_weight):
        # in place only for the fit's own problem (fit sets the request and
        # adds the offset back; a path's problem, say, centres a copy)
        in_place = (self.__dict__.pop("_centre_in_place", False)
                    and isinstance(X, np.ndarray) and X.flags.writeable)
        Xi, self._offset, self._scale, sq_norms = internal_units(X, norms=True,
                                                                 in_place=in_place)
        if in_place:
            self._centred_input = X  # fit adds the offset back
        return LinearGeometry(Xi, sq_norms), {"offset": self._offset, "scale": self._scale,
                                    "lambda_unit": self._scale,
                                    "objective_unit": self._scale * self._scale}

    @property
    def _lambda_unit(self):
        return self._scale

    def _make_model(self, geometry):
        return KMeansModel(self.n_clusters, self.fuzzifier)

    def _refine_unsupported(self, problem):
        if self.fuzzifier != 1:
            return "needs hard K-means (fuzzifier=1)"
        if self.penalty != "group":
            return "needs penalty='group' (whole points are outliers, no log reweighting)"
        return None

    def _make_penalties(self, geometry, sample_weight):
        """The convex penalty and its log variant (eps in internal units: ``self._eps``)."""
        if self.eps is not None:
            eps = float(self.eps) / self._scale
        elif not self._log_penalty:
            eps = None
        else:
            eps = default_eps(geometry.X, sample_weight)
        self._eps = eps
        return make_penalty(self._rho), make_penalty(self._rho, True, eps)

    def _initializations(self, solver, X, sample_weight, rng, n_outliers=None, extra=(),
                         n_starts=AUTO_STARTS, n_keep=AUTO_KEEP):
        """The starts; with ``init="robust"`` and ``n_init="auto"``, the centres
        ``extra`` (internal units) followed by the best ``n_keep`` of ``n_starts``
        screened starts."""
        g = solver.geometry
        if not isinstance(self.init, str):
            init = np.asarray(to_numpy(self.init), dtype=np.float64)
            init = (init - to_numpy(self._offset)) / self._scale
            return [asarray(init, g.xp, like=g.sq_norms, dtype=g.dtype)]
        Xh = to_numpy(g.X, g.xp)
        w = np.asarray(to_numpy(sample_weight, g.xp), dtype=np.float64)
        n_trim = trim_count(self.n_outliers if n_outliers is None else n_outliers,
                            Xh.shape[0], self.n_clusters)
        if self.n_init == "auto" and self.init == "robust":
            starts = screened_starts(Xh, w, self.n_clusters, n_trim, rng, n_starts=n_starts,
                                     n_keep=n_keep)
            return [asarray(c.astype(Xh.dtype, copy=False), g.xp, like=g.sq_norms)
                    for c in [*extra, *starts]]
        return [asarray(initial_centers(Xh, w, self.n_clusters, self.init, rng, n_trim), g.xp,
                        like=g.sq_norms) for _ in range(self._n_init)]

    def _recount_starts(self, problem, n_outliers):
        if not (isinstance(self.init, str) and self.init in ("robust", "k-means||")):
            return None  # k-means++, random draws and given centres trim nothing
        solver = problem.solver
        model = getattr(self, "_noise_model", None)
        screened = {}
        if model is not None and self.init == "robust" and self.n_init == "auto":
            # the default count: the noise points are fixed and the clusters are
            # K-means of the others, started from the noise model's clusters, the
            # robust start its EM began from and the best of a few robust starts
            # of our own (see n_init)
            g = solver.geometry
            Xh = to_numpy(g.X, g.xp)
            w = np.asarray(to_numpy(solver.sample_weight, g.xp))
            screened = {"extra": model.centres_in_input_units(Xh[np.flatnonzero(w > 0)[:1]]),
                        "n_starts": NOISE_COUNT_STARTS, "n_keep": 1}
        with solver.blas():
            return self._initializations(solver, None, solver.sample_weight,
                                         check_random_state(self.random_state), n_outliers,
                                         **screened)

    def _store_model(self, problem, state):
        solver = problem.solver
        g = solver.geometry
        dtype = problem.dtype
        self.cluster_centers_ = _as_dtype(problem.user_centers(state), dtype)
        if state.memberships is None:
            # hard: the 0/1 matrix is built from the labels when first read
            # (an N x C array as large as X at p = C, which a fit needs no more);
            # the labels are kept apart from labels_ (which a user may change),
            # in the smallest type that holds them: a byte each up to 256 clusters
            labels = np.asarray(to_numpy(state.labels, g.xp))
            small = (np.min_scalar_type(self.n_clusters - 1)
                     if labels.size and labels.min() >= 0 else np.intp)
            self._hard_memberships = (labels.astype(small), self.n_clusters, dtype)
            self.__dict__.pop("_memberships", None)
            self.__dict__.pop("memberships_", None)
        else:
            self.memberships_ = _as_dtype(to_numpy(state.memberships, g.xp), dtype)
        # an N x p SciPy matrix: NumPy input only (None on other namespaces)
        self.outlier_vectors_ = outlier_matrix(problem, state, dtype) if g.is_numpy else None
        self.eps_ = None if self._eps is None else self._eps * problem.scale
        self._n_features_out = self.n_clusters

    def _new_point_solver(self, X):
        Xi, _, _ = internal_units(X, self._offset, self._scale)
        g = LinearGeometry(Xi)
        eps = None if self.eps_ is None else self.eps_ / self._scale
        solver = Solver(g, KMeansModel(self.n_clusters, self.fuzzifier), make_penalty(self._rho),
                        make_penalty(self._rho, True, eps), max_iter=self.max_iter,
                        tol=self.tol)
        centers = (np.asarray(self._fitted("cluster_centers_"), dtype=np.float64)
                   - to_numpy(self._offset)) / self._scale
        centers = asarray(centers, g.xp, like=g.sq_norms, dtype=g.dtype)
        return solver, state_from(centers)

    @classmethod
    def from_fitted_state(cls, params, state):
        if "_refined" not in state and "lambda_" in state and "unrefined_lambda_" in state:
            # a file written before the flag was saved: only a refined fit
            # stores a lambda_ other than the unrefined one
            state = {**state, "_refined": bool(state["lambda_"] != state["unrefined_lambda_"])}
        return super().from_fitted_state(params, state)

    # -- fitted memberships ----------------------------------------------------------------
    @property
    def memberships_(self):
        # (``memberships_`` itself: an estimator pickled before this was a property)
        U = self.__dict__.get("_memberships", self.__dict__.get("memberships_"))
        if U is None:
            hard = self.__dict__.get("_hard_memberships")
            if hard is None:
                raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                     "'memberships_'")
            labels, n_clusters, dtype = hard
            labels = labels.astype(np.intp, copy=False)
            U = np.zeros((labels.shape[0], n_clusters), dtype=dtype)
            U[np.arange(labels.shape[0]), labels] = 1
            self.__dict__["_memberships"] = U
        return U

    @memberships_.setter
    def memberships_(self, value):
        self.__dict__.pop("_hard_memberships", None)
        self.__dict__.pop("memberships_", None)
        self.__dict__["_memberships"] = value

    # -- fit ---------------------------------------------------------------------------
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
        self._centre_in_place = not self.copy_x
        try:
            return self._fit(X, sample_weight)
        finally:
            self.__dict__.pop("_centre_in_place", None)
            centred = self.__dict__.pop("_centred_input", None)
            if centred is not None:
                restore_input(centred, self._offset)

    # -- new points ------------------------------------------------------------------------
    def _assign(self, X):
        """The fitted rule on new points: a refined model flags a point farther
        than lambda_ / 2 from its nearest centre and scores it by that distance
        (as its fit); a fit that flagged the default count's noise points flags
        the new points its noise model calls noise (probability above 0.5),
        each labelled by its nearest centre."""
        if not getattr(self, "_flags_noise_points", False):
            solver, state = super()._assign(X)
            if self._refined:  # the refined model's rule and score, as in fit
                state = refined_assignment(solver, state, self.lambda_ / self._lambda_unit)
            return solver, state
        if getattr(self, "_noise_model", None) is None:
            raise ValueError("this model flags the points its noise model calls noise, and "
                             "its noise model is missing: fit it again.")
        solver, state = self._clean(X)
        g = solver.geometry
        Xi = to_numpy(g.X, g.xp)
        noise = self._noise_model.noise_probability(Xi.toarray() if sp.issparse(Xi) else Xi)
        labels = np.asarray(to_numpy(state.labels, g.xp))
        d2 = np.asarray(to_numpy(solver.products_of(state).sq_distances(), g.xp))
        d2 = d2[np.arange(len(labels)), labels]
        flagged = noise > 0.5
        refined = Refined(to_numpy(state.centers, g.xp), labels, flagged, d2,
                          float(d2[~flagged].sum()))
        return solver, fixed_outlier_state(solver, refined)


    def outlier_norms(self, X):
        """Outlier score ||o||_2 that new points would receive (0 for inliers).

        The same per-point problem as :meth:`predict`; the score grows with
        the distance to the nearest centre beyond the threshold lambda_ / 2:
        ||r|| - lambda_ / 2 (the group O-step of eq. (11)), or for a refined
        model the whole distance ||r|| (the o_n of eq. (3) that its fit
        stores in ``outlier_norms_``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        norms : ndarray of shape (n_samples,)
        """
        if is_dask(X):
            return predict_dask(self, X, "outlier_norms")
        solver, state = self._assign(X)
        return self._outlier_norms_of(solver, state)

    def transform(self, X):
        """Euclidean distances to the cluster centres.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        if is_dask(X):
            return predict_dask(self, X, "transform")
        check_is_fitted(self)
        X, _ = self._validate_input(X, None, reset=False)
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
        if is_dask(X):
            return score_dask(self, X, sample_weight)
        solver, state = self._assign(X)
        X = state_input_rows(solver)
        sample_weight = _check_sample_weight(to_numpy(sample_weight), X, dtype=np.float64)
        costs = np.asarray(to_numpy(state.point_costs, solver.xp), dtype=np.float64)
        return -float(np.dot(sample_weight, costs)) * self._scale**2

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.array_api_support = True
        return tags


def resolved_n_init(n_init, init):
    """The number of initialisations a fit runs: ``n_init``, or for ``"auto"`` the
    ``AUTO_KEEP`` best screened robust starts (``init="robust"``), else one."""
    if n_init != "auto":
        return n_init
    return AUTO_KEEP if isinstance(init, str) and init == "robust" else 1


def validate_linear_input(estimator, X, sample_weight, reset):
    """X as float64/float32 (dense C-ordered of its namespace, or CSR); the weights."""
    xp, is_numpy = namespace(X) if hasattr(X, "shape") and not hasattr(X, "iloc") \
        else (np, True)
    dtype = [np.float64, np.float32] if is_numpy else [xp.float64, xp.float32]
    check_frame_columns(X)
    X = validate_data(estimator, X, reset=reset, accept_sparse="csr", dtype=dtype, order="C",
                      accept_large_sparse=False)
    if sample_weight is not None or reset:
        sample_weight = _check_sample_weight(sample_weight, X, dtype=dtype[0],
                                             ensure_non_negative=True)
    return X, sample_weight


def state_input_rows(solver):
    """An array with the new points' row count (for weight validation)."""
    return np.empty((solver.geometry.n_samples, 0))


def _as_dtype(array, dtype):
    return np.asarray(array).astype(dtype, copy=False)


def default_eps(X, sample_weight):
    """1e-3 times the root-mean-square distance of the points to their (weighted) mean."""
    xp, is_numpy = namespace(X)
    if not is_numpy:
        X, sample_weight = to_numpy(X, xp), to_numpy(sample_weight, xp)
    mean = np.asarray(sample_weight @ X).ravel() / sample_weight.sum()
    sq = np.asarray(sample_weight @ (X.multiply(X) if sp.issparse(X) else X * X))
    total_var = max(float(sq.sum() / sample_weight.sum() - mean @ mean), 0.0)
    return 1e-3 * math.sqrt(total_var) if total_var > 0 else 1e-3


def initial_centers(X, sample_weight, n_clusters, init, rng, n_trim=0):
    """Initial centres (NumPy or CSR X): the robust start (trimming ``n_trim``
    points), k-means++ seeding, k-means|| (X as one block), or distinct points
    drawn by weight."""
    if init == "k-means||":
        centers = kmeans_parallel_in_memory(X, sample_weight, n_clusters, n_trim, rng)
        return centers.astype(X.dtype, copy=False)
    if init == "robust":
        centers = robust_start(PointSpace(X), n_clusters, sample_weight, n_trim, rng)
        return centers.astype(X.dtype, copy=False)
    if init == "k-means++":
        centers, _ = kmeans_plusplus(X, n_clusters, sample_weight=sample_weight,
                                     random_state=rng)
        return centers.astype(X.dtype, copy=False)
    positive = sample_weight > 0
    p = np.where(positive, sample_weight, 0.0)
    if positive.sum() < n_clusters:
        p = None
    else:
        p = p / p.sum()
    idx = rng.choice(X.shape[0], n_clusters, replace=False, p=p)
    centers = X[idx].toarray() if sp.issparse(X) else X[idx]
    return np.array(centers, dtype=X.dtype)


def outlier_matrix(problem, state, dtype):
    """The outlier matrix O in the user's units, CSR: memory grows with the outliers."""
    solver = problem.solver
    g = solver.geometry
    n, p = g.n_samples, g.dim
    o = state.outliers
    if o.count == 0:
        return sp.csr_matrix((n, p), dtype=dtype)
    index = np.asarray(to_numpy(o.index, solver.xp))
    if (g.is_numpy and not g.sparse and o.rows is None and o.shrink is not None
            and o.weights is not None and np.ndim(o.weights) == 1 and g.X.flags.c_contiguous
            and worth(n)):
        # one compiled pass over the flagged rows (the fused path's states)
        data, indices, indptr = _dense.outlier_csr(g.X, index, o.weights, o.shrink,
                                                   state.centers, problem.scale, dtype)
        return sp.csr_matrix((data, indices, indptr), shape=(n, p))
    vals = np.asarray(to_numpy(g.outlier_rows(o, state.centers), solver.xp)) * problem.scale
    indptr = np.zeros(n + 1, dtype=np.int64)
    indptr[index + 1] = p
    O = sp.csr_matrix((vals.astype(dtype, copy=False).ravel(),
                       np.tile(np.arange(p, dtype=np.int64), len(index)), np.cumsum(indptr)),
                      shape=(n, p))
    O.eliminate_zeros()
    return O
