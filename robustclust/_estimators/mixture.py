"""Robust probabilistic clustering (RPC and weighted RPC): the estimator (Algorithm 2)."""

import copy
import math
import warnings
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import DensityMixin, _fit_context
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array

from .._core.backend import asarray, to_numpy
from .._core.covariance import ComponentCovariances, Covariance
from .._core.geometry import LinearGeometry
from .._core.penalties import make_penalty
from .._core.selection import OutlierCountWarning, same_init
from .._core.solver import Solver
from .._core.starts import kmeans_parallel_in_memory, trim_count
from .._core.refine import separating_critical_lambda
from .._core.trimmed_mixture import flag_points, refine_mixture
from .base import (
    MAX_ITER,
    MAX_N_INIT,
    NoiseDefaultMixin,
    RobustEstimator,
    state_from,
)
from .units import internal_units
from .dask_fit import is_dask, predict_dask
from .fitted import bad_value
from .covariance_types import (
    COVARIANCE_TYPES,
    covariance_shape,
    make_mixture_model,
    start_covariance,
)
from .kmeans import RobustKMeans, outlier_matrix, validate_linear_input


class KMeansStarts:
    """The robust K-means fits that start a mixture, one per initialisation, on one X.

    Each initialisation is a :class:`RobustKMeans` with its own random state
    (the only setting in which they differ).  The first one validates X and
    builds the problem (internal units, solver); the later ones draw their
    starts on that problem (the random state enters only through them), so X
    is validated once.  A fit is a function of its starts, and the robust
    start often settles on the same centres from different seeds: a repeated
    start is not fitted again, the earlier fit is returned.
    """

    def __init__(self, X):
        self.X = X
        self.first = None  # (the first estimator before its fit, its problem unfitted)
        self.fits = []     # (starts, fitted estimator)

    def fit(self, estimator):
        """``estimator`` fitted on X, or an earlier fit that began from the same starts.

        An estimator whose settings differ from the first one's in more than
        the random state builds its own problem.
        """
        if self.first is None or not self._same_settings(estimator):
            problem = estimator.build_problem(self.X)
            if self.first is None:
                self.first = (copy.copy(estimator), replace(problem))
        else:
            template, first = self.first
            seed = estimator.random_state
            estimator = copy.copy(template)  # the input attributes of the first build
            estimator.random_state = seed
            solver = first.solver
            with solver.blas():
                inits = estimator._initializations(solver, None, solver.sample_weight,
                                                   check_random_state(seed))
            problem = replace(first, inits=inits)  # a fit may set its target
        for starts, fitted in self.fits:
            if same_init(starts, problem.inits):
                return fitted
        estimator._fit_problem(problem)
        self.fits.append((problem.inits, estimator))
        return estimator

    def _same_settings(self, estimator):
        first = self.first[0].get_params(deep=False)
        params = estimator.get_params(deep=False)
        first.pop("random_state")
        params.pop("random_state")
        return type(estimator) is type(self.first[0]) and params.keys() == first.keys() \
            and all(same_init(params[k], first[k]) if isinstance(params[k], np.ndarray)
                    else params[k] == first[k] for k in params)


#: The named starts of the mixtures' ``init``.
MIXTURE_STARTS = ("robust", "k-means++", "k-means||", "random", "robust-kmeans")
#: The keys of a dict ``init``.
INIT_KEYS = ("means", "weights", "precisions")


def init_parts(init):
    """(named start or None, means, weights, precisions) of the ``init`` parameter.

    ``init`` is a start's name, an array of means, or a dict with the keys
    ``"means"`` (a start's name or an array; default ``"robust"``),
    ``"weights"`` and ``"precisions"``.
    """
    if isinstance(init, dict):
        unknown = sorted(set(init) - set(INIT_KEYS))
        if unknown:
            raise ValueError(f"init has the unknown keys {unknown}; a dict init takes "
                             f"{list(INIT_KEYS)}.")
        means = init.get("means", "robust")
        weights, precisions = init.get("weights"), init.get("precisions")
    else:
        means, weights, precisions = init, None, None
    if isinstance(means, str):
        if means not in MIXTURE_STARTS:
            raise ValueError(f"init['means'] must be an array or one of {list(MIXTURE_STARTS)}; "
                             f"got {means!r}.")
        return means, None, weights, precisions
    return None, means, weights, precisions


class RobustGaussianMixture(DensityMixin, NoiseDefaultMixin, RobustEstimator):
    """Gaussian mixture with outlier-sparsity regularization (RPC).

    Fits pi, the means, the covariances and one outlier vector o_n per point
    by minimizing the regularized negative log-likelihood of eq. (8),

        - sum_n log sum_c pi_c N(x_n; m_c + o_n, Sigma) + lam sum_n ||o_n||_{Sigma^-1},

    with the EM algorithm of Algorithm 2 (see Notes).  A point is an outlier
    when its o_n is nonzero: when its residual r_n = x_n - sum_c gamma_nc m_c
    is more than lam away in Mahalanobis distance, so lam is scale-free.
    The paper's model, and the default, has one covariance sigma^2 I common
    to all components (``covariance_type="tied_spherical"``); the other
    common ("tied") and per-component types are scikit-learn's.  With one
    covariance Sigma_c per component each component measures the outlier
    vector in its own norm (eq. (8) generalized, see Notes):

        - sum_n log sum_c pi_c N(x_n; m_c + o_n, Sigma_c) exp(-lam ||o_n||_{Sigma_c^-1}).

    Parameters
    ----------
    n_components : int, default=1
        Number of mixture components C.
    lam : float or "chi2", default=None
        lambda > 0 of eq. (8); ``np.inf`` gives a plain mixture.  ``lam=0`` is
        rejected: the cost is then unbounded below (Section II-B).  Give
        ``lam`` or ``n_outliers``, not both.  With neither, the number of
        outliers is estimated from the data (the default count of
        :class:`RobustKMeans`, see Notes) and lambda is chosen to flag it.
        ``"chi2"``: lam = sqrt(chi^2_p quantile(0.999)), so that a Gaussian
        inlier (||r_n||^2_{Sigma^-1} ~ chi^2_p) is flagged with probability
        0.1% (but 5-12% of standardised real data sets whose clusters are
        not Gaussian are flagged, and none of a data set that is 60% uniform
        noise).
    n_outliers : int or float, default=None
        Target number of outliers (an int, or a fraction in (0, 0.5)); lambda
        is chosen as in :class:`RobustKMeans`.
    covariance_type : {"tied_spherical", "tied_diag", "tied", "spherical", "diag", \
            "full"}, default="tied_spherical"
        ``"tied_spherical"``: one covariance sigma^2 I common to all
        components, the paper's model (eqs. (25), (27)); ``"tied_diag"``: one
        common diagonal covariance; ``"tied"``: one common full matrix
        (scikit-learn's ``"tied"``); ``"spherical"``, ``"diag"``, ``"full"``:
        one covariance per component, sigma_c^2 I, diagonal or full
        (scikit-learn's meanings).  Earlier versions called the common types
        ``"spherical"``, ``"diag"`` and ``"full"``; their model files are read
        with the new names.
    penalty : {"group", "log"}, default="group"
        ``"group"``: lam ||o_n||_{Sigma^-1}, the paper's RPC (eq. (8)).
        ``"log"``: the log penalty lam log(1 + ||o_n||_{Sigma^-1} / eps) of
        Section III-C (weighted RPC), started from the converged RPC solution.
    eps : float, default=None
        eps of the log penalty, in Mahalanobis units; None means 1e-3.
    init : {"robust", "robust-kmeans", "k-means++", "k-means||", "random"}, array of \
            shape (n_components, n_features) or dict, default="robust"
        The start.  A name or an array gives the initial means; the initial
        weights and covariance are then those of the nearest-mean partition (the covariance from its closest half, see
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
        A dict gives scikit-learn's ``means_init``, ``weights_init`` and
        ``precisions_init`` in one place: ``{"means": ..., "weights": ...,
        "precisions": ...}``, each key optional.  ``"means"``: an array of
        shape (n_components, n_features) (then one initialisation) or a
        start's name (default ``"robust"``); ``"weights"``: mixing weights
        (non-negative, summing to 1; default: the proportions of the
        nearest-mean partition); ``"precisions"``: precisions (inverse
        covariances) in scikit-learn's shapes, (n_components,) for
        "spherical", (n_components, n_features) for "diag", (n_components,
        n_features, n_features) for "full", (n_features, n_features) for
        "tied", a float for "tied_spherical" and (n_features,) for
        "tied_diag" (default: the scatter of the closest half of the
        points, every component starting from it).
    n_init : "auto" or int, default="auto"
        Initialisations (at most 10,000); the best run is kept (cost of eq. (8), or, with
        ``n_outliers``, the negative log-likelihood of all but the s least
        likely points).  ``"auto"``: one, from the :class:`RobustKMeans`
        fit with ``n_init="auto"`` (its best two of ten screened robust
        starts), as scikit-learn's GaussianMixture runs one; an int runs
        that many robust K-means fits of one start each.
    max_iter : int, default=300
        Most EM iterations of one run (at most 100,000).
    tol : float, default=1e-4
        Stop when an EM iteration lowers the cost of eq. (8) (negative
        log-likelihood plus penalty) by at most ``tol`` per unit of sample
        weight and leaves the flagged set unchanged, then run one iteration
        more: scikit-learn's GaussianMixture rule (the change in the mean
        per-point log-likelihood bound), so at ``lam=np.inf`` both stop
        after the same iterations with the same parameters at any ``tol``
        (its default, 1e-3, is looser; mclust's relative 1e-5 is about 4e-5
        per point on the paper's data).  EM converges
        linearly: on the paper's 80-outlier set, the old rule (means moving by
        less than 1e-6 of their norm) took 300 iterations and still had not
        stopped.
    reg_covar : float, default=1e-6
        Floor on the eigenvalues (variances) of Sigma, relative to the mean
        per-feature robust variance of X (squared normalised MADs, so that
        far rows do not raise it, and rescaling X rescales the fit and
        changes nothing else).  It keeps Sigma positive definite without
        breaking the monotone decrease of the cost (the floored step is the
        exact minimizer over {Sigma >= floor I}).  Unlike scikit-learn's, it is
        a floor, not added to every variance: at lam = inf with
        ``reg_covar=0`` the fit is scikit-learn's with ``reg_covar=0``.
    eigenvalue_ratio : float >= 1, "auto" or None, default=None
        Bound on the ratio of the largest to the smallest eigenvalue over all
        covariances (every component and direction), as tclust's
        ``restr.fact``: each covariance step clips all eigenvalues into
        [m, eigenvalue_ratio * m] with the m (>= the ``reg_covar`` floor)
        that minimizes the step's cost, an exact constrained minimizer (see
        :func:`robustclust._core.covariance.constrain_eigenvalues`).  It keeps
        a component from collapsing onto a few points (the likelihood of
        per-component covariances is unbounded otherwise) and a tied
        covariance from becoming nearly singular.  None: the floor only.
        ``"auto"``: 12 (tclust's ``restr.fact`` default) for the
        per-component types, None for the tied ones.  The default None was
        chosen by measurement (``benchmarks/bench_restriction.py``, the user
        guide's "The default eigenvalue restriction"): 12 helps on wine and
        digits and hurts on iris and on anisotropic clusters, whose own
        ratios exceed it.
    refine : {"auto", True, False}, default="auto"
        Trimmed-likelihood refinement (see Notes): concentration steps from
        the penalized fit and from every start, each an E-step, the s
        least likely points trimmed and an M-step on the others; the best
        by the trimmed likelihood is kept and exactly s points are flagged
        (fewer or more only when equal rows tie at the boundary; a warning
        says so).  ``"auto"`` refines when a count is given or estimated
        (the default count: its noise points are the trimmed set) and the
        input is dense NumPy (a warning says when other input keeps a count
        fit from being refined); True refines every fit (ValueError where it
        cannot); False keeps the paper's estimator, whose covariance step
        (eq. (27)) grows with lam sum_n ||o_n||: one row far enough away
        (1e6 from three clusters of sd 0.5) merges the components although
        it is flagged.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
    means_ : ndarray of shape (n_components, n_features)
    covariances_ : float or ndarray
        The covariances, shaped as scikit-learn's: (n_components,) variances
        ("spherical"), (n_components, n_features) ("diag"),
        (n_components, n_features, n_features) ("full"),
        (n_features, n_features) ("tied"); and the common variance sigma^2
        (a float, "tied_spherical") or variances (n_features,) ("tied_diag").
        For data beyond about 1e154 (below 1e-154) in magnitude its entries
        overflow to inf (underflow to 0) in float64; the fit, ``predict`` and
        ``score`` run in internal units and from ``precisions_cholesky_``,
        which stays finite.
    precisions_cholesky_ : float or ndarray
        P with Sigma^-1 = P P^T, shaped as ``covariances_``: 1/sigma,
        1/sqrt(variances), or upper triangular matrices (scikit-learn's
        convention).
    labels_ : ndarray of shape (n_samples,)
        MAP component, -1 for outliers.
    memberships_ : ndarray of shape (n_samples, n_components)
        Posteriors gamma of eq. (20) at the fitted parameters.
    outlier_mask_, outlier_norms_ : ndarray of shape (n_samples,)
        o_n != 0 and ||o_n||_2.
    outlier_scores_ : ndarray of shape (n_samples,)
        ||o_n||_{Sigma^-1}, the scale-free outlier score (per-component
        covariances: sum_c gamma_nc ||o_n||_{Sigma_c^-1}).
    outlier_indices_, outlier_vectors_, outlier_rows_
        As in :class:`RobustKMeans`.
    lambda_, unweighted_lambda_, eps_ : float
        lambda_ is the lambda used (chosen, when ``n_outliers`` or neither
        was given).
    n_outliers_ : int
    outlier_probability_ : ndarray of shape (n_samples,) or None
        With the ``"noise"`` default: each point's posterior probability of
        the noise component; the points where it exceeds 0.5 are the
        outliers, and the mixture is fitted to the others (the trimmed
        likelihood with that set trimmed, from every start; no penalized fit
        runs).  None when ``lam`` or ``n_outliers`` was given or the
        ``"chi2"`` rule was used.
    noise_proportion_ : float or None
        The estimated noise proportion pi_0 of that model (None likewise).
    inlier_flag_rate_ : float or None
        What the ``"noise"`` default promises for Gaussian clusters: the
        noise model's expected fraction of points drawn from its Gaussian
        clusters whose outlier probability exceeds 0.5 (None likewise).
    objective_ : float
        Final cost of eq. (8) (its log-penalty version with ``penalty="log"``);
        after refinement, minus the log-likelihood of the kept points.
    trimmed_cost_ : float
        Minus the log-likelihood of all but the s least likely points at the
        fitted parameters (the refinement's cost).
    refine_history_ : ndarray
        That cost after each concentration step of the kept candidate
        (non-increasing); empty when not refined.
    unrefined_lambda_ : float or None
        lambda of the penalized fit (a refined fit keeps it as ``lambda_``
        too; it flags by its trimming level).  None after a fit with the
        ``"noise"`` default, which runs no penalized fit: its ``lambda_`` is
        one at which the O-step at the fitted parameters flags its outliers
        (where the noise points and the others interleave in their residual
        sizes, the smallest of the flagged points').
    log_density_threshold_ : float or None
        A refined fit's trimming level: the points whose ``score_samples``
        is below it are flagged, the training rows (exactly its outliers)
        and new points alike.  None when not refined.
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

    Per-component covariances (:mod:`robustclust._core.components`, module
    docstring): the E-, pi-, mean- and Sigma_c-steps are eqs. (20), (22),
    (23), (26)-(27) with the component's own weights; the O-step, a group
    lasso with the quadratic A_n = sum_c gamma_nc Sigma_c^-1, is majorized:
    from o_n = 0 it is the shrinkage o_n = r_n [1 - lam / ||r_n||_{A_n}]_+
    of the A_n-weighted residual (exactly the tied step when all Sigma_c are
    equal), and from o_n != 0 the better of that and an IRLS step.  The cost
    never increases; at lam = inf the fit is scikit-learn's EM.  The paper
    (Section II-B) prefers a common Sigma because per-component covariances
    make the likelihood unbounded (a component on one point): ``reg_covar``
    and ``eigenvalue_ratio`` bound it.

    **Default outlier count**.  With neither
    ``lam`` nor ``n_outliers``, the count is that of :class:`RobustKMeans`'
    default (see its Notes, and :mod:`robustclust._core.noise`): the data
    are modelled as Gaussian clusters plus uniform noise over their bounding
    box, f(x) = pi_0 / V + sum_c pi_c g_c(x), in the manner of mclust's noise
    component; EM from its own robust start estimates means, full
    covariances (shrunk towards a multiple of the identity; each cluster
    evaluated by its posterior predictive Student t), weights and pi_0.
    With ``refine`` (the default ``"auto"``) the points whose noise
    probability exceeds 0.5 are the outliers and the mixture is the
    trimmed-likelihood fit of the others from every start (no penalized
    fit runs; ``lambda_`` is one at which the O-step at the fitted
    parameters flags them); with ``refine=False`` the mixture is fitted
    with that count as with ``n_outliers`` and its own rule decides which
    points.  The noise model has full per-cluster covariances whatever
    ``covariance_type``.  What it promises: data without noise drive pi_0,
    and with it every probability, towards 0 (12,000 points of three 3-D
    Gaussian clusters: none flagged); with noise, the expected fraction of
    Gaussian inliers whose probability exceeds 0.5 is ``inlier_flag_rate_``
    (three 2-D clusters of 10,000 plus 30% noise: 0.44% against 0.47%
    promised).  Measured with the default ``covariance_type``
    (``tests/test_default_count.py``, ``random_state=0``): standardised
    iris, wine, breast cancer (0 flagged each) and digits (24 of 1,797),
    where the chi^2 rule flags 2.7%, 4.5%, 11.6% and 9.1%; 300 blob points
    plus 33 (10%) and 450 (60%) uniform points: 32 and 437 flagged, all
    planted, with ``"tied_spherical"`` and ``"full"`` alike.  Cost: EM
    with full covariances, O(N C p^2) per iteration, on a sample of
    max(3,000, 6 C (p + 1)) rows at most 10,000 (standardised digits, 10
    components: a default fit takes 0.5 s of CPU).

    **Refinement** (``refine``; :mod:`robustclust._core.trimmed_mixture`).
    The trimmed likelihood of tclust's mixture variant (Neykov et al. 2007;
    Garcia-Escudero et al. 2008) is maximized over the parameters and a set
    of s trimmed points by concentration steps whose trimmed likelihood
    never falls; the M-step sees the kept points only, so a flagged point
    moves nothing, however far.  Where it differs from tclust: soft
    posteriors (tclust's ``opt="mixture"``), and the tied covariance types.
    Where it differs from eq. (8) with an l0 penalty: a flagged point there
    still costs -log max_c pi_c N(m_c; m_c, Sigma_c), which rewards
    shrinking Sigma; trimming drops it.  Sparse and non-NumPy input are
    not refined with ``"auto"``.

    **Default lambda** (``lam="chi2"``, and sparse data, more than
    256 features or Dask input).  lam = sqrt(chi^2_p quantile(0.999)): a
    Gaussian inlier, whose ||r_n||^2_{Sigma^-1} is chi^2_p, is flagged with
    probability 0.1%.

    A Dask array or DataFrame is fitted block by block on the data where it
    lies (see the README, "Data larger than memory"): the per-point
    attributes are then lazy dask arrays, and so are ``predict``,
    ``predict_proba`` and ``score_samples`` of Dask input.

    ``score_samples`` is the log-density of the fitted mixture, o = 0: an
    outlier gets the low density the mixture gives it.  ``bic``/``aic`` count
    the mixture's parameters (means, weights, the covariances, counted as
    scikit-learn counts them): they score the fitted density on X, like
    scikit-learn's.

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
        "lam": [Interval(Real, 0, None, closed="both"), StrOptions({"chi2"}), None],
        "n_outliers": [
            Interval(Integral, 0, None, closed="left"),
            Interval(Real, 0, 0.5, closed="neither"),
            None,
        ],
        "covariance_type": [StrOptions(set(COVARIANCE_TYPES))],
        "penalty": [StrOptions({"group", "log"})],
        "eps": [Interval(Real, 0, None, closed="neither"), None],
        "init": [StrOptions(set(MIXTURE_STARTS)), "array-like", dict],
        "n_init": [StrOptions({"auto"}), Interval(Integral, 1, MAX_N_INIT, closed="both")],
        "max_iter": [Interval(Integral, 1, MAX_ITER, closed="both")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "reg_covar": [Interval(Real, 0, None, closed="left")],
        "eigenvalue_ratio": [Interval(Real, 1, None, closed="left"), StrOptions({"auto"}),
                             None],
        "refine": [StrOptions({"auto"}), "boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    _renamed_params = ("weighted", "default_rule", "means_init", "weights_init",
                       "precisions_init")

    def __init__(self, n_components=1, *, lam=None, n_outliers=None,
                 covariance_type="tied_spherical", penalty="group", eps=None, init="robust",
                 n_init="auto", max_iter=300, tol=1e-4, reg_covar=1e-6, eigenvalue_ratio=None,
                 refine="auto", random_state=None, verbose=0, **renamed):
        self.n_components = n_components
        self.lam = lam
        self.n_outliers = n_outliers
        self.covariance_type = covariance_type
        self.penalty = penalty
        self.eps = eps
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.reg_covar = reg_covar
        self.eigenvalue_ratio = eigenvalue_ratio
        self.refine = refine
        self.random_state = random_state
        self.verbose = verbose
        self._take_renamed(renamed)

    _n_clusters_name = "n_components"
    _lambda_unit = 1.0
    _dask_fit = "mixture"
    _optional_state_names = ("trimmed_cost_", "unrefined_lambda_", "_flags_noise_points",
                             "_refined", "log_density_threshold_",
                             *NoiseDefaultMixin._noise_state_names)
    #: Whether the fit was refined: new points then get the refined model's rule.
    _refined = False
    _fitted_state_names = (
        "weights_", "means_", "covariances_", "precisions_cholesky_", "lambda_",
        "unweighted_lambda_", "eps_", "n_outliers_", "objective_", "n_iter_", "converged_",
        "n_features_in_", "_offset", "_scale", "_covar_floor",
    )

    def _fitted_shapes(self):
        k, p = self.n_components, self.n_features_in_
        cov = covariance_shape(self.covariance_type, k, p)
        return {"means_": (k, p), "weights_": (k,), "covariances_": cov,
                "precisions_cholesky_": cov}

    def _check_fitted_values(self):
        check_mixture_weights(self)
        kind = COVARIANCE_TYPES[self.covariance_type][0]
        if kind != "full" and np.any(np.asarray(self.covariances_) <= 0):
            raise bad_value(type(self).__name__, "covariances_", self.covariances_,
                            "not positive")

    # -- the hooks of the fit template ----------------------------------------------------
    def _validate_input(self, X, sample_weight, reset):
        if sample_weight is not None:
            raise ValueError("RobustGaussianMixture does not support sample_weight.")
        X, _ = validate_linear_input(self, X, None, reset)
        return X, None

    @property
    def _named_start(self):
        return init_parts(self.init)[0]

    def _check_init(self, X):
        self._n_init = 1 if self.n_init == "auto" else self.n_init
        self._trim_level = None  # set by a refinement (_refine)
        C, p = self.n_components, X.shape[1]
        start, means, weights, precisions = init_parts(self.init)
        self._start = start
        self._start_weights = check_weights_init(to_numpy(weights), C)
        self._start_precisions = check_precisions_init(to_numpy(precisions),
                                                       self.covariance_type, C, p)
        self._start_means = None
        if means is None:
            return
        means = check_array(to_numpy(means), dtype=[np.float64, np.float32],
                            input_name="init['means']")
        if means.shape != (C, p):
            raise ValueError(
                f"The shape of the initial means {means.shape} does not match the "
                f"number of components and features ({C}, {p}).")
        self._start_means = means
        if self.n_init not in (1, "auto"):
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
        model = make_mixture_model(self.covariance_type, self.n_components, self._covar_floor,
                                   geometry.dim, self.eigenvalue_ratio)
        model.start_weights = self._start_weights
        if self._start_precisions is not None:
            model.start_covariance = start_covariance(self._start_precisions,
                                                      self.covariance_type, self._scale,
                                                      geometry.dim)
        return model

    def _refine_unsupported(self, problem):
        g = problem.solver.geometry
        if g.sparse:
            return "needs dense input"
        if not g.is_numpy:
            return "needs NumPy input"
        return None

    def _refining(self, problem):
        """As the estimators' rule; ``refine="auto"`` says when the input keeps a
        count fit from being refined (sparse or non-NumPy input)."""
        refining = super()._refining(problem)
        if self.refine == "auto" and not refining and problem.target is not None:
            why = self._refine_unsupported(problem)
            if why is not None:
                warnings.warn(f"this count fit is not refined: the mixture's trimmed "
                              f"refinement {why}; the penalized fit of eq. (8) is kept "
                              "(refine=False says so and silences this).", UserWarning,
                              stacklevel=6)
        return refining

    def _refine(self, problem, state, lam, fixed=None):
        """The trimmed-likelihood refinement (:func:`refine_mixture`); lambda_ stays
        that of the penalized fit, and the refined rule for new points is the
        trimming level (``log_density_threshold_``).  Without a penalized fit
        (``state`` and ``lam`` None: the default count's noise points ``fixed``),
        lambda_ is one at which the O-step at the refined parameters flags
        those points (:func:`separating_critical_lambda`)."""
        refined, self._trim_level, history = refine_mixture(problem, state, fixed)
        if lam is None:
            solver = problem.solver
            flagged = np.zeros(solver.geometry.n_samples, dtype=bool)
            flagged[np.asarray(to_numpy(refined.outlier_index, solver.xp), dtype=np.intp)] = True
            lam = separating_critical_lambda(solver.critical_lambdas(refined), flagged)
        return refined, lam, history

    def _make_penalties(self, geometry, sample_weight):
        self._eps = 1e-3 if self.eps is None else float(self.eps)
        return make_penalty("group"), make_penalty("group", True, self._eps)

    def _initializations(self, solver, X, sample_weight, rng, n_outliers=None):
        g = solver.geometry
        if self._start_means is not None:
            means = (np.asarray(self._start_means, dtype=np.float64)
                     - to_numpy(self._offset)) / self._scale
            return [(asarray(means, g.xp, like=g.sq_norms), None)]
        Xh = to_numpy(self._start_data, g.xp)
        del self._start_data
        fits = KMeansStarts(Xh)
        return [self._initial_means(Xh, rng, n_outliers, fits) for _ in range(self._n_init)]

    def _recount_starts(self, problem, n_outliers):
        if self._start_means is not None or self._start in ("k-means++", "random"):
            return None  # given means and untrimmed draws do not depend on the count
        solver = problem.solver
        self._start_data = solver.geometry.X  # internal units, float64
        with solver.blas():
            return self._initializations(solver, None, None,
                                         check_random_state(self.random_state), n_outliers)

    def _initial_means(self, X, rng, n_outliers=None, fits=None):
        """One initialisation: (means, the start's outlier mask or None);
        ``n_outliers`` replaces the estimator's for the starts that trim;
        ``fits``: the :class:`KMeansStarts` of the earlier initialisations."""
        C = self.n_components
        n_outliers = self.n_outliers if n_outliers is None else n_outliers
        if self._start == "k-means++":
            return kmeans_plusplus(X, C, random_state=rng)[0], None
        if self._start == "k-means||":
            n_trim = trim_count(n_outliers, X.shape[0], C)
            return kmeans_parallel_in_memory(X, np.ones(X.shape[0]), C, n_trim, rng), None
        if self._start == "random":
            idx = rng.choice(X.shape[0], C, replace=False)
            return (X[idx].toarray() if sp.issparse(X) else X[idx]), None
        with warnings.catch_warnings():
            # an unreachable count only shifts the start a little
            warnings.simplefilter("ignore", OutlierCountWarning)
            seeding = "robust" if self._start == "robust" else "k-means++"
            start = RobustKMeans(C, init=seeding, n_init="auto" if self.n_init == "auto" else 1,
                                 refine=False, random_state=rng.randint(np.iinfo(np.int32).max),
                                 **({"lam": "chi2"} if n_outliers is None
                                    else {"n_outliers": n_outliers}))
            start._settle = False  # the start's own BCD flags (base.settled_state)
            rkm = (KMeansStarts(X) if fits is None else fits).fit(start)
        return rkm.cluster_centers_.copy(), rkm.outlier_mask_.copy()

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
        level = self._trim_level
        self.log_density_threshold_ = (
            None if level is None or not math.isfinite(level)
            else float(level) - g.dim * math.log(s))  # score_samples' units
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
        model = make_mixture_model(self.covariance_type, self.n_components, self._covar_floor,
                                   p, self.eigenvalue_ratio)
        solver = Solver(g, model, make_penalty("group"), make_penalty("group", True, eps),
                        max_iter=self.max_iter, tol=self.tol)
        s = self._scale
        means = (np.asarray(self._fitted("means_"), dtype=np.float64)
                 - to_numpy(self._offset)) / s
        # from the precision factor, which stays finite where covariances_ overflow
        kind, per_component = COVARIANCE_TYPES[self.covariance_type]
        P = np.asarray(self._fitted("precisions_cholesky_")) * s
        if per_component:
            cov = ComponentCovariances.from_precision_factors(kind, P, p)
        else:
            cov = Covariance.from_precision_factor(kind, P, p)
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
    def _assign(self, X):
        """The fitted rule on new points.  A refined model flags the points whose
        log-density (``score_samples``) is below ``log_density_threshold_`` (the
        trimming level that separates its fit's flagged points from the
        others); one that flagged the default count's noise points flags the
        new points its noise model calls noise (probability above 0.5).  Both
        give a flagged point o = r (:func:`flag_points`) and the o = 0
        posteriors.  An unrefined model runs its fit's O- and E-steps."""
        noise = getattr(self, "_flags_noise_points", False)
        if not (noise or self._refined):
            return super()._assign(X)
        solver, clean = self._clean(X)
        g = solver.geometry
        if noise:
            if getattr(self, "_noise_model", None) is None:
                raise ValueError("this model flags the points its noise model calls noise, "
                                 "and its noise model is missing: fit it again.")
            Xi = to_numpy(g.X, g.xp)
            flagged = self._noise_model.noise_probability(
                Xi.toarray() if sp.issparse(Xi) else np.asarray(Xi, dtype=np.float64)) > 0.5
        else:
            level = self.log_density_threshold_
            log_density = -np.asarray(to_numpy(clean.point_costs), dtype=np.float64)
            flagged = (np.zeros(g.n_samples, dtype=bool) if level is None
                       else log_density < level + g.dim * math.log(self._scale))
        return solver, flag_points(solver, clean, flagged)

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
        k, p = self.n_components, self.means_.shape[1]
        cov = {"tied_spherical": 1, "tied_diag": p, "tied": p * (p + 1) // 2, "spherical": k,
               "diag": k * p, "full": k * p * (p + 1) // 2}[self.covariance_type]
        return k * p + k - 1 + cov

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


def check_weights_init(weights, n_components):
    """``init["weights"]`` as a float64 array (or None), with scikit-learn's checks."""
    if weights is None:
        return None
    w = check_array(weights, dtype=[np.float64, np.float32], ensure_2d=False,
                    input_name="init['weights']").astype(np.float64)
    if w.shape != (n_components,):
        raise ValueError(f"init['weights'] should have the shape ({n_components},) "
                         f"(n_components,), but got {w.shape}.")
    if np.any(w < 0) or np.any(w > 1):
        raise ValueError("init['weights'] should be in the range [0, 1], but got min "
                         f"{w.min():.5f} and max {w.max():.5f}.")
    if not np.isclose(w.sum(), 1.0, rtol=0, atol=1e-8):
        raise ValueError(f"init['weights'] should sum to 1, but got sum {w.sum():.8f}.")
    return w


def check_precisions_init(precisions, covariance_type, n_components, n_features):
    """``init["precisions"]`` as a float64 array of the type's shape (or None).

    Positive for the spherical and diagonal types, symmetric positive
    definite matrices for "full" and "tied"; the errors say which.
    """
    if precisions is None:
        return None
    shape = covariance_shape(covariance_type, n_components, n_features)
    P = check_array(np.asarray(precisions, dtype=np.float64) if np.ndim(precisions) == 0
                    else precisions, dtype=[np.float64, np.float32], ensure_2d=False,
                    allow_nd=True, ensure_min_samples=0, ensure_min_features=0,
                    input_name="init['precisions']").astype(np.float64)
    if P.shape != shape:
        raise ValueError(f"init['precisions'] for covariance_type={covariance_type!r} should "
                         f"have the shape {shape}, but got {P.shape}.")
    kind = COVARIANCE_TYPES[covariance_type][0]
    if kind != "full":
        if np.any(P <= 0):
            raise ValueError(f"init['precisions'] for covariance_type={covariance_type!r} "
                             "should be positive.")
        return P
    for c, matrix in enumerate(P.reshape(-1, n_features, n_features)):
        where = "" if P.ndim == 2 else f"[{c}]"
        if not np.allclose(matrix, matrix.T, rtol=1e-8, atol=0):
            raise ValueError(f"init['precisions']{where} should be symmetric.")
        try:
            np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            raise ValueError(f"init['precisions']{where} should be positive definite.") from None
    return P


def _n_rows(X):
    """Rows of X without converting it (sparse and Dask input keep their type)."""
    return X.shape[0] if sp.issparse(X) or is_dask(X) else np.asarray(X).shape[0]


def check_mixture_weights(estimator):
    """Mixing weights that sum to 1 (a fitted state read back)."""
    if not np.isclose(np.sum(estimator.weights_), 1.0, rtol=1e-6):
        raise bad_value(type(estimator).__name__, "weights_", estimator.weights_,
                        "not summing to 1")


def mean_variance(X):
    """Mean per-feature robust variance of X (1 when X is constant): the scale of the
    ``reg_covar`` floor.

    Each feature's variance is its squared normalised MAD, (1.4826 MAD)^2,
    the variance of a Gaussian feature, so that a few far rows do not raise
    the floor (one row at 1e6 from clusters of sd 0.5 gives a variance of
    5e9, and a floor of 1e-6 of it would merge the clusters); a feature
    whose MAD is 0 (more than half its values equal) counts its variance.
    Sparse X: the variances (their medians are mostly 0).
    """
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2
    else:
        X = np.asarray(to_numpy(X), dtype=np.float64)
        median = np.median(X, axis=0)
        mad = 1.4826 * np.median(np.abs(X - median), axis=0)
        var = np.where(mad > 0, mad * mad, X.var(axis=0))
    v = float(np.mean(var))
    return v if v > 0 and math.isfinite(v) else 1.0
