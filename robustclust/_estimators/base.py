"""The estimator base: parameter rules, the fit template, new points, attributes.

Every robust estimator of the package is a :class:`RobustEstimator`.  A fit is
always the same template, in the manner of scikit-learn's ``BaseMixture``:

1. :meth:`RobustEstimator.build_problem` validates X, checks the parameters
   against it (including the rules the model declares, such as "lambda > 0"
   for the mixture), brings the data to internal units, and assembles a
   :class:`~robustclust._core.solver.Solver` (geometry, model, penalties)
   and the initialisations.  Subclasses supply ``_validate_input``,
   ``_make_geometry``, ``_make_model``, ``_make_penalties`` and
   ``_initializations``.
2. :func:`~robustclust._core.selection.fit_lambda` sets lambda (given, by
   count, or the default) and returns the final state.
3. :meth:`RobustEstimator._store` writes the shared fitted attributes;
   subclasses add theirs in ``_store_model``.

New points (``predict``, outlier scores, ``score``) go through the driver's
``assign`` with the fitted parameters held fixed (:meth:`_assign`).

Internal units: :mod:`robustclust._estimators.units`.

Hooks for other code (all public, documented on the methods):
``build_problem`` (the regularization path), ``fitted_state`` /
``from_fitted_state`` (model files), ``lambda_rule`` (the command line's
summary).

The default outlier count of the linear estimators (neither ``lam`` nor
``n_outliers`` given to :class:`~robustclust.RobustKMeans` or
:class:`~robustclust.RobustGaussianMixture`) is :class:`NoiseDefaultMixin`:
the noise model of :mod:`robustclust._core.noise`, its attributes, its
fallbacks and ``outlier_probability``, written once for both.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._core.backend import asarray, namespace, to_numpy
from .._core.noise import MAX_FEATURES, default_count
from .._core.refine import refine_fit
from .._core.selection import OutlierCountWarning, fit_lambda
from .._core.solver import Solver
from .._core.starts import trim_count
from .._core.state import State
from ._params import PENALTIES, translate_params
from .outliers import NOISE_ATTRIBUTES, check_outlier_params, warn_chi2_fallback
from .dask_fit import is_dask
from .fitted import check_state
from .units import internal_units

#: Most initialisations and iterations an estimator takes: larger values are
#: refused (a fit with n_init=10**9 would run for ever; the command line's
#: --n-init has the same cap).
MAX_N_INIT = 10_000
MAX_ITER = 100_000
#: Internal units of model files written before they were stored.
_STATE_DEFAULTS = {"_scale": 1.0}


@dataclass
class Problem:
    """What an estimator solves on a data set: the hook of ``regularization_path``.

    Attributes
    ----------
    solver : Solver
        Geometry, model and penalties on the data in internal units.
    inits : list
        One initialisation per start (``n_init`` of them).
    target : int or None
        The requested outlier count s.
    lam : float or None
        The requested lambda, in internal units.
    offset : ndarray of shape (n_features,) or float
        Subtracted from the data (internal = (X - offset) / scale).
    scale : float
        A power of two (1 for data of ordinary magnitude).
    lambda_unit : float
        User lambda = internal lambda * lambda_unit (``scale`` for K-means,
        whose lambda is a distance; 1 for the mixture, whose is not).
    objective_shift : float
        User objective = internal objective * ``objective_unit`` + this.
    objective_unit : float
    dtype : numpy dtype
        Of the user's data (the fitted arrays keep it).
    """

    solver: Solver
    inits: list
    target: int | None
    lam: float | None
    offset: object
    scale: float
    lambda_unit: float
    objective_unit: float = 1.0
    objective_shift: float = 0.0
    dtype: object = None

    def __post_init__(self):
        if self.dtype is None:
            self.dtype = self.solver.geometry.dtype
        xp = self.solver.xp
        # the NumPy dtype (of an array-API dtype, for other namespaces)
        self.dtype = np.dtype(np.float32 if self.dtype == xp.float32 else np.float64)

    def user_lambda(self, lam):
        return float(lam) * self.lambda_unit

    def user_objective(self, value):
        """An objective in the user's units (inf where squared data overflow float64)."""
        value = float(value)
        if value == 0.0 or math.isinf(value):
            return value + self.objective_shift
        return value * self.objective_unit + self.objective_shift

    def user_centers(self, state):
        """Centres in the user's units (coefficients for kernel geometries)."""
        if self.solver.geometry.kernel:
            return np.asarray(state.centers)
        xp = self.solver.xp
        return to_numpy(state.centers, xp) * self.scale + to_numpy(self.offset, xp)

    def user_outlier_norms(self, state):
        """||o_n|| of every point in the user's units (feature space for kernels), (N,)."""
        solver = self.solver
        o = state.outliers
        out = np.zeros(solver.geometry.n_samples)
        if o.count:
            norms = solver.geometry.outlier_norms(o, state.centers)
            out[to_numpy(o.index, solver.xp)] = to_numpy(norms, solver.xp) * self.scale
        return out


def check_frame_columns(X):
    """ValueError naming the columns of a DataFrame that hold no numbers.

    NumPy's conversion of a frame with a datetime column fails with a
    ``DTypePromotionError`` and one of text with "could not convert string
    to float", neither naming the column; this names each column, its type
    and (for text) the first value that is not a number.
    """
    columns = getattr(X, "columns", None)
    dtypes = getattr(X, "dtypes", None)
    if columns is None or dtypes is None or not hasattr(X, "iloc"):
        return
    import pandas as pd

    bad = []
    for position, (name, dtype) in enumerate(zip(columns, dtypes)):
        if pd.api.types.is_bool_dtype(dtype) or (pd.api.types.is_numeric_dtype(dtype)
                                                 and not pd.api.types.is_complex_dtype(dtype)):
            continue
        if getattr(dtype, "kind", "") in "mM" or isinstance(dtype, pd.PeriodDtype):
            bad.append(f"{name!r} ({dtype})")
            continue
        column = X.iloc[:, position]
        try:
            numbers = pd.to_numeric(column, errors="coerce")
        except (TypeError, ValueError):
            bad.append(f"{name!r} ({dtype})")
            continue
        wrong = numbers.isna().to_numpy() & column.notna().to_numpy()
        if wrong.any():
            bad.append(f"{name!r} ({dtype}: {column.iloc[int(np.argmax(wrong))]!r})")
    if bad:
        what = "a column that holds" if len(bad) == 1 else f"{len(bad)} columns that hold"
        raise ValueError(f"X has {what} no numbers: {', '.join(bad[:10])}"
                         f"{' ...' if len(bad) > 10 else ''}; select the numeric columns, or "
                         "convert these to numbers, first.")


def _warn_refined_count(flagged, target, unrefined):
    """OutlierCountWarning when a refined fit flags another count than its s.

    The rule of :func:`robustclust._core.refine.untied`: rows that tie at the
    boundary of the s trimmed points are flagged all or none, whichever count
    is nearer s, and rows on a centre never.
    """
    s = target if target is not None else unrefined
    if flagged == s:
        return
    flagged_words = "1 point is" if flagged == 1 else f"{flagged} points are"
    warnings.warn(
        f"n_outliers={s} was asked for, but {flagged_words} flagged: the row at the "
        f"boundary of the {s} farthest ties with {'kept' if flagged < s else 'flagged'} rows "
        "(repeated rows, rows on a centre, as when there are fewer distinct rows than "
        "clusters plus outliers), and tied rows are flagged all or none, whichever count "
        f"is nearer {s}.", OutlierCountWarning, stacklevel=6)


def warn_empty_clusters(estimator, labels, n_clusters):
    """ConvergenceWarning naming the clusters of a K-means fit that keep no row.

    Repeated rows (fewer distinct rows than clusters plus outliers) or far
    values (a damaged file) can leave a cluster whose centre no kept row is
    nearest; its centre is then not a mean of anything.
    """
    labels = to_numpy(labels, namespace(labels)[0])  # (from a GPU too)
    sizes = np.bincount(labels[labels >= 0], minlength=n_clusters)
    empty = np.flatnonzero(sizes == 0)
    if empty.size:
        which = ", ".join(str(int(c)) for c in empty)
        keeps = "keeps no row (cluster" if empty.size == 1 else "keep no row (clusters"
        warnings.warn(
            f"{type(estimator).__name__}: {empty.size} of the {n_clusters} clusters {keeps} "
            f"{which}): the data have fewer distinct rows than clusters plus "
            "outliers, or rows far from the others; fit fewer clusters, or look at the "
            "data.", ConvergenceWarning, stacklevel=6)


class RobustEstimator(BaseEstimator):
    """Base of the robust estimators: the fit template and everything around it.

    Subclasses declare ``_n_clusters_name`` ("n_clusters" or "n_components")
    and implement the hooks named in the module docstring.

    Every fit of every estimator, in memory or on Dask, sets the same outlier
    attributes (``OUTLIER_ATTRIBUTES``), None where one does not apply:

    * ``labels_``: the cluster, -1 for the outliers;
    * ``outlier_mask_``: True for the outliers (exactly ``labels_ == -1`` and
      ``outlier_scores_ > 0``);
    * ``outlier_indices_``: their row indices, a NumPy int64 array (also for
      Dask input, where the per-row attributes are lazy);
    * ``outlier_scores_``: the score the fit thresholds, 0 for inliers:
      ||o_n|| for the K-means estimators (in feature space for kernels),
      ||o_n|| in the Sigma^-1 norm for the mixtures (||o_n|| / sigma for the
      kernel mixture);
    * ``outlier_norms_``: ||o_n||_2 (in feature space for kernels), equal to
      ``outlier_scores_`` for the K-means estimators;
    * ``outlier_vectors_``: the outlier matrix O, a SciPy CSR matrix of shape
      (n_samples, n_features) (None for kernels, Dask and other array
      namespaces);
    * ``outlier_rows_``: the rows of O at ``outlier_indices_``, dense, shape
      (n_outliers_, n_features) (None for kernels);
    * ``n_outliers_``, ``lambda_``;
    * ``outlier_rule_``: what set them: ``"n_outliers"`` or ``"lam"`` (given),
      ``"noise"`` (the default count's noise model), ``"chi2"`` (the chi^2
      default lambda: ``lam="chi2"``, Dask input, or a fallback of the
      default count, which warns), ``"tail"`` (the kernel estimators' default
      lambda, a robust tail of the feature-space distances);
    * ``outlier_probability_``, ``noise_proportion_``, ``inlier_flag_rate_``:
      the default count's noise model (None unless it set the count).
    """

    _n_clusters_name = "n_clusters"
    #: How a fit on a Dask array runs (:mod:`.dask_fit`): "kmeans", "mixture",
    #: or None where the estimator does not fit Dask arrays.
    _dask_fit = None
    #: Parameter names of the earlier release that the class still accepts
    #: (translated by :mod:`._params`, with a FutureWarning).
    _renamed_params: tuple = ()
    #: Whether a fit stores the fitted rule on its rows (:func:`settled_state`);
    #: off for the robust K-means fits that start a mixture, which take the
    #: flags of the BCD's own solution.
    _settle = True

    @property
    def _n_clusters(self):
        return getattr(self, self._n_clusters_name)

    # -- parameters ----------------------------------------------------------------------
    def _take_renamed(self, old):
        """Set the current parameters from old-named ones given to ``__init__``."""
        if old:
            current = {name: getattr(self, name) for name in self._get_param_names()}
            for name, value in translate_params(type(self), current, old,
                                                stacklevel=5).items():
                setattr(self, name, value)

    def set_params(self, **params):
        """Set the parameters (old names are translated, with a FutureWarning).

        Parameters
        ----------
        **params : dict

        Returns
        -------
        self : estimator
        """
        old = {name: params.pop(name) for name in list(params) if name in self._renamed_params}
        if old:
            current = {**self.get_params(deep=False), **params}
            params = translate_params(type(self), current, old, stacklevel=4)
        return super().set_params(**params)

    @property
    def _log_penalty(self):
        """Whether the log ("weighted") variant of the penalty is used (Section III-C)."""
        return PENALTIES[self.penalty][1]

    @property
    def _rho(self):
        """The penalty rho: ``"group"`` or ``"elementwise"``."""
        return PENALTIES[self.penalty][0]

    @property
    def _lam_value(self):
        """The given lambda as a number, None when lambda is to be chosen."""
        lam = getattr(self, "lam", None)
        return None if lam is None or isinstance(lam, str) else lam

    @property
    def _named_start(self):
        """The name of the start (``init`` when a string), None for given parameters."""
        return self.init if isinstance(self.init, str) else None

    @property
    def _chi2_rule(self):
        """Whether ``lam="chi2"`` asks for the chi^2 default lambda."""
        return isinstance(getattr(self, "lam", None), str)

    # -- hooks of the subclasses ---------------------------------------------------------
    def _validate_input(self, X, sample_weight, reset):  # pragma: no cover - abstract
        raise NotImplementedError

    def _make_geometry(self, X, sample_weight):  # pragma: no cover - abstract
        raise NotImplementedError

    def _make_model(self, geometry):  # pragma: no cover - abstract
        raise NotImplementedError

    def _make_penalties(self, geometry, sample_weight):  # pragma: no cover - abstract
        raise NotImplementedError

    def _initializations(self, solver, X, sample_weight, rng):  # pragma: no cover
        raise NotImplementedError

    def _check_init(self, X):
        """Check an explicit ``init`` against X; sets ``self._n_init``."""
        self._n_init = self.n_init

    def _store_model(self, problem, state):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the template ------------------------------------------------------------------
    def build_problem(self, X, sample_weight=None, *, starts=True):
        """Validate X and assemble what a fit solves: solver, starts, units.

        This is the hook of :func:`robustclust.regularization_path` (and of
        :meth:`fit`): the estimator's settings (clusters, model, penalty,
        initialisation, ``n_init``, ``random_state``) define the problem.
        It sets the input attributes (``n_features_in_``, ...) as ``fit`` does.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            (or the kernel matrix, for ``kernel="precomputed"``)
        sample_weight : array-like of shape (n_samples,), default=None
        starts : bool, default=True
            Draw the initialisations (``problem.inits``); False leaves them
            None, for a fit that draws them once it knows its outlier count.

        Returns
        -------
        problem : Problem
        """
        X, sample_weight = self._validate_input(X, sample_weight, reset=True)
        n = X.shape[0]
        target = check_outlier_params(self, n, self._n_clusters)
        self._check_init(X)
        geometry, units = self._make_geometry(X, sample_weight)
        model = self._make_model(geometry)
        if not model.zero_lambda_ok and self._lam_value == 0:
            raise ValueError(model.zero_lambda_message)
        penalty, log_penalty = self._make_penalties(geometry, sample_weight)
        solver = Solver(geometry, model, penalty, log_penalty, sample_weight=sample_weight,
                        max_iter=self.max_iter, tol=self.tol, verbose=self.verbose)
        inits = None
        if starts:
            rng = check_random_state(self.random_state)
            with solver.blas():
                inits = self._initializations(solver, X, sample_weight, rng)
        problem = Problem(solver, inits, target, None, **units)
        if self._lam_value is not None:
            problem.lam = float(self._lam_value) / problem.lambda_unit
        return problem

    def _fit(self, X, sample_weight=None):
        # attributes of an earlier default count that this fit does not set
        self._forget_default_count(existing_only=True)
        if is_dask(X):  # per-block passes over a Dask cluster (dask_fit)
            from .dask_fit import fit_dask

            return fit_dask(self, X, sample_weight)
        # a fit that estimates its count draws its starts once it knows it
        return self._fit_problem(self.build_problem(X, sample_weight,
                                                    starts=not self._counts_by_default))

    @property
    def _counts_by_default(self):
        """Whether a fit estimates its outlier count (subclasses with a default count)."""
        return False

    def _fit_problem(self, problem):
        """The fit of a problem :meth:`build_problem` made (the second half of
        ``fit``): lam, the solution, the refinement, the fitted attributes."""
        self._forget_default_count()
        solver = problem.solver
        counted = problem.target is None and problem.lam is None
        if counted:
            problem.target = self._default_count(problem)
            counted = problem.target is not None
            if counted:
                self._starts_for_count(problem)
        if problem.inits is None:  # deferred, and no count to trim: the default starts
            with solver.blas():
                problem.inits = self._initializations(
                    solver, None, solver.sample_weight, check_random_state(self.random_state))
        refining = self._refining(problem)
        fixed = self._fixed_outliers() if counted and refining else None
        if fixed is not None:
            # the default count's noise points are the outliers (a set that does
            # not depend on the units of the columns): the clusters are those of
            # the other points (K-means, or the mixture's EM), from every start;
            # no penalized fit is needed
            with solver.blas():
                state, lam, history = self._refine(problem, None, None, fixed)
            self._store(problem, state, lam, lam)
            self.unrefined_lambda_ = None
            self.trimmed_cost_ = self.objective_
            self.refine_history_ = np.array([problem.user_objective(v) for v in history],
                                            dtype=np.float64)
            self.outlier_rule_ = "noise"
            self._flags_noise_points = True
            self._refined = True  # the trimmed model with the noise set trimmed
            if not solver.model.mixture:
                warn_empty_clusters(self, self.labels_, self._n_clusters)
            return self
        self._flags_noise_points = False
        with solver.blas():
            with warnings.catch_warnings():
                # the refinement flags the count asked for (and warns itself when
                # ties allow no such set: _warn_refined_count); a default
                # count is an estimate that no one asked for exactly
                if refining or counted:
                    warnings.simplefilter("ignore", OutlierCountWarning)
                lam, lam_unweighted, state = fit_lambda(
                    solver, problem.inits, lam=problem.lam, target=problem.target,
                    weighted=self._log_penalty, lambda_unit=problem.lambda_unit,
                    compare_trimmed=self._named_start == "robust")
            refined = self._refine(problem, state, lam) if refining else None
            if refined is None and self._settle and not (self._log_penalty
                                                         or solver.model.mixture):
                settled = settled_state(solver, state, lam)
                if (problem.target is not None and not counted
                        and state.n_outliers == problem.target != settled.n_outliers):
                    warnings.warn(
                        f"n_outliers={problem.target} was asked for; the fit flagged that "
                        f"many, but {settled.n_outliers} points are flagged by its rule "
                        f"(lambda_={problem.user_lambda(lam):.6g}) with its parameters "
                        "held fixed, and those are kept.", OutlierCountWarning,
                        stacklevel=4)
                # the same centres (eq. (3)'s cost is theirs): the fit's own state,
                # a set of per-row arrays, is not kept beside it
                state = settled
            else:
                settled = state
        if refined is None:  # a refined fit stores the refined state only
            self._store(problem, settled, lam, lam_unweighted)
        if hasattr(self, "refine"):  # eq. (3) at the centres: the fit's state has its costs
            self._store_refined(problem, state, lam, refined)
        if refined is not None and not counted:
            _warn_refined_count(refined[0].n_outliers, problem.target, state.n_outliers)
        if not solver.model.mixture:
            warn_empty_clusters(self, self.labels_, self._n_clusters)
        self.outlier_rule_ = ("n_outliers" if self.n_outliers is not None
                              else "lam" if self._lam_value is not None
                              else "noise" if counted else self._default_rule_name)
        return self

    def _refine(self, problem, state, lam, fixed=None):
        """The refined solution of a fitted problem: (state, lambda, history) of
        the trimmed refinement (:func:`~robustclust._core.refine.refine_fit`
        for K-means; the mixtures override it), ``fixed`` the points to flag;
        ``state`` and ``lam`` None when no penalized fit ran (a default count's
        noise points: the starts are the only candidates)."""
        return refine_fit(problem, state, fixed=fixed)

    #: How a fit with neither lam nor n_outliers set lambda when no count was
    #: estimated (``outlier_rule_``); the kernel estimators override it.
    _default_rule_name = "chi2"

    def _starts_for_count(self, problem):
        """Starts that trim the default count.

        A fit that estimates its count draws its starts once it knows it
        (``problem.inits`` None), trimming the count as with ``n_outliers``
        given; starts drawn before (a problem built with them) that trimmed
        ``DEFAULT_TRIM_FRACTION`` of the points
        (:func:`~robustclust._core.starts.trim_count`) are drawn again when
        the count is above that (data that are mostly noise: starts that
        kept much of the noise).  Subclasses whose starts trim override
        :meth:`_recount_starts`.
        """
        g = problem.solver.geometry
        if problem.inits is None or problem.target > trim_count(None, g.n_samples,
                                                                self._n_clusters):
            inits = self._recount_starts(problem, problem.target)
            if inits is not None:
                problem.inits = inits

    def _recount_starts(self, problem, n_outliers):
        """The starts of a fit with ``n_outliers`` (internal units), or None
        when they do not depend on it."""
        return None

    def _default_count(self, problem):
        """The outlier count a fit with neither lam nor n_outliers uses (None:
        the default lambda of ``solver.default_lambda``); subclasses override."""
        return None

    def _fixed_outliers(self):
        """The points a refined default-count fit flags, decided by the count itself
        (a boolean mask), or None to flag the farthest; subclasses override."""
        return None

    def _forget_default_count(self, existing_only=False):
        """Reset what ``_default_count`` sets (``existing_only``: the attributes an
        earlier fit set; else all of them, once X is validated); subclasses override.

        Estimators without a default count have none: their noise attributes
        are None after every fit (``OUTLIER_ATTRIBUTES``)."""
        if not existing_only:
            for name in NOISE_ATTRIBUTES:
                setattr(self, name, None)

    # -- exact trimmed refinement ------------------------------------------------------
    def _refine_unsupported(self, problem):
        """Why this fit cannot be refined (None when it can); subclasses narrow it."""
        return "is only implemented for RobustKMeans"

    def _refining(self, problem):
        """Whether the fit is refined (the ``refine`` parameter; see RobustKMeans)."""
        refine = getattr(self, "refine", False)
        if refine is False:
            return False
        why = self._refine_unsupported(problem)
        if refine == "auto":
            return problem.target is not None and why is None
        if why is not None:
            raise ValueError(f"refine=True {why}; use refine='auto' or False.")
        return True

    def _store_refined(self, problem, state, lam, refined):
        """``trimmed_cost_``, ``refine_history_``, ``unrefined_lambda_``; with a
        refinement, also every fitted attribute of the refined solution (the
        unrefined state is then never stored)."""
        solver = problem.solver
        if refined is None:
            self._refined = False
            self.unrefined_lambda_ = self.lambda_
            s = problem.target if problem.target is not None else self.n_outliers_
            self.trimmed_cost_ = problem.user_objective(solver.trimmed_cost(state, s))
            self.refine_history_ = np.empty(0)
            return
        new_state, lam_refined, history = refined
        self._store(problem, new_state, lam_refined, lam_refined)
        self._refined = True
        self.unrefined_lambda_ = problem.user_lambda(lam)
        self.trimmed_cost_ = self.objective_
        self.refine_history_ = np.array([problem.user_objective(v)
                                         for v in history], dtype=np.float64)

    def _store(self, problem, state, lam, lam_unweighted):
        """The shared fitted attributes, in the user's units."""
        solver = problem.solver
        xp = solver.xp
        n = solver.geometry.n_samples
        index = np.asarray(to_numpy(state.outlier_index, xp), dtype=np.intp)
        labels = np.array(to_numpy(state.labels, xp), dtype=np.intp)
        labels[index] = -1
        self.labels_ = labels
        self.outlier_mask_ = np.zeros(n, dtype=bool)
        self.outlier_mask_[index] = True
        self.outlier_indices_ = index.astype(np.int64)
        self.outlier_norms_ = problem.user_outlier_norms(state).astype(problem.dtype,
                                                                        copy=False)
        self.outlier_scores_ = self.outlier_norms_  # the mixtures' scores are theirs
        self.lambda_ = problem.user_lambda(lam)
        self.unweighted_lambda_ = problem.user_lambda(lam_unweighted)
        self.n_outliers_ = int(len(index))
        self.objective_ = problem.user_objective(state.objective)
        self.objective_history_ = np.array([problem.user_objective(v) for v in state.history],
                                           dtype=np.float64)
        self.n_iter_ = int(state.n_iter)
        self.converged_ = bool(state.converged)
        self._store_model(problem, state)
        O = getattr(self, "outlier_vectors_", None)
        self.outlier_rows_ = None if O is None else O[index].toarray()
        if not hasattr(self, "outlier_vectors_"):
            self.outlier_vectors_ = None  # a feature space has no vectors in input units
        if not solver.geometry.is_numpy:
            self._to_input_namespace(solver)

    def _to_input_namespace(self, solver):
        """Fitted arrays in the namespace and on the device of the training data.

        As scikit-learn's estimators do under ``array_api_dispatch``; the
        outlier matrix, a SciPy sparse matrix, is NumPy-only (``None`` here:
        ``outlier_indices_`` and ``outlier_norms_`` name the outliers).
        """
        xp = solver.xp
        like = solver.geometry.sq_norms
        for name, value in list(vars(self).items()):
            if (name.endswith("_") and isinstance(value, np.ndarray)
                    and value.dtype.kind in "biuf" and name != "objective_history_"):
                setattr(self, name, asarray(value, xp, like=like))
        if hasattr(self, "outlier_vectors_"):
            self.outlier_vectors_ = None

    def _output(self, array, like):
        """A result for new points ``like`` in their namespace."""
        xp, is_numpy = namespace(like)
        return array if is_numpy else asarray(np.asarray(array), xp, like=like)

    # -- new points ----------------------------------------------------------------------
    def _stages(self):
        """The (lambda, weighted) stages of the fitted rule, in internal units."""
        unit = self._lambda_unit
        stages = [(self.unweighted_lambda_ / unit, False)]
        if self._log_penalty:
            stages.append((self.lambda_ / unit, True))
        return stages

    def _assign(self, X):
        """The fitted rule on new points: the final state of the driver's ``assign``."""
        check_is_fitted(self)
        X, _ = self._validate_input(X, None, reset=False)
        solver, start = self._new_point_solver(X)
        with solver.blas():
            state = solver.assign(start, self._stages())
        return solver, state

    def predict(self, X):
        """Cluster of each new point, -1 where the fitted rule flags it.

        The training iteration is run for the new points with the fitted
        centres (and, for mixtures, weights and covariance) held fixed: the
        O- and U-steps (E-steps) alternate until they settle, so a point is
        an outlier exactly when the fit's rule gives it a nonzero o.  The
        label is the nearest centre (the most likely component for mixtures).
        A K-means fit (not weighted) stores this rule applied to its own rows
        (:func:`settled_state`), so on the training points ``predict``
        reproduces ``labels_``; the weighted fits and the mixtures can differ
        there (their per-point iterations can reach another fixed point than
        the fit's).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            (a lazy dask array for Dask input)
        """
        if is_dask(X):
            from .dask_fit import predict_dask

            return predict_dask(self, X, "predict")
        _, state = self._assign(X)
        return self._labels_of(state, X)

    def _clean(self, X):
        """(solver, state) of new points with o = 0: memberships and costs, no outliers."""
        check_is_fitted(self)
        X, _ = self._validate_input(X, None, reset=False)
        solver, start = self._new_point_solver(X)
        with solver.blas():
            state = solver.assign(start, [])
        return solver, state

    def _fitted(self, name):
        """A fitted array attribute as a NumPy array."""
        return to_numpy(getattr(self, name))

    def _labels_of(self, state, like=None):
        """Labels of an assigned state: the cluster, -1 for outliers."""
        labels = np.array(to_numpy(state.labels), dtype=np.intp)
        labels[np.asarray(to_numpy(state.outlier_index), dtype=np.intp)] = -1
        return labels if like is None else self._output(labels, like)

    def _outlier_norms_of(self, solver, state):
        """||o|| of the points of an assigned state, in the user's units (0 for inliers)."""
        g = solver.geometry
        norms = np.zeros(g.n_samples)
        o = state.outliers
        if o.count:
            norms[np.asarray(to_numpy(o.index))] = np.asarray(
                to_numpy(g.outlier_norms(o, state.centers))) * self._lambda_unit
        if g.is_numpy:
            return norms.astype(g.dtype, copy=False)
        return self._output(norms, g.sq_norms)

    def lambda_rule(self):
        """How ``lambda_`` was set, in words (the command line's summary line).

        Returns
        -------
        rule : str
        """
        if self.n_outliers is not None:
            return "chosen to flag n_outliers points"
        if self._lam_value is not None:
            return "given"
        return "default: " + self._default_lambda_description

    # -- model files -----------------------------------------------------------------------
    #: Fitted attributes (public and internal) that predicting needs, per class.
    _fitted_state_names: tuple = ()
    #: Fitted attributes saved when set, with class defaults otherwise.
    _optional_state_names: tuple = ()

    def fitted_state(self):
        """What a model file must hold for this fitted estimator to predict again.

        Returns
        -------
        state : dict
            Attribute name -> value (numbers, strings, arrays, or dicts of
            them), public fitted attributes and the internal units.  Restore
            with :meth:`from_fitted_state`.
        """
        check_is_fitted(self)
        names = self._fitted_state_names + tuple(
            a for a in ("feature_names_in_", "cluster_centers_", *self._optional_state_names)
            if a not in self._fitted_state_names and getattr(self, a, None) is not None)
        return {name: getattr(self, name) for name in names}

    @classmethod
    def from_fitted_state(cls, params, state):
        """An estimator with parameters ``params`` and the attributes of ``state``.

        The inverse of :meth:`fitted_state`; raises ValueError naming what is
        missing or invalid (a NaN, a negative lambda, arrays whose shapes
        disagree: :mod:`robustclust._estimators.fitted`).

        Parameters
        ----------
        params : dict
        state : dict

        Returns
        -------
        estimator
        """
        estimator = cls(**params)
        state = {**_STATE_DEFAULTS, **state}
        missing = [a for a in cls._fitted_state_names if a not in state]
        if missing:
            raise ValueError(f"{cls.__name__} lacks the fitted attributes {missing}")
        for name, value in state.items():
            setattr(estimator, name, value)
        check_state(estimator, tuple(state), estimator._fitted_shapes())
        estimator._check_fitted_values()
        estimator._restore_state()
        return estimator

    def _restore_state(self):
        """Rebuild what a fitted state holds in a storable form (subclasses)."""

    def _fitted_shapes(self):
        """attribute -> the shape a fitted state must give it (subclasses add theirs)."""
        return {"cluster_centers_": (self._n_clusters, self.n_features_in_)}

    def _check_fitted_values(self):
        """Class-specific checks of a fitted state read back (ValueError)."""


class NoiseDefaultMixin:
    """The default count of the linear estimators: the noise-component count.

    With neither ``lam`` nor ``n_outliers``, a fit
    asks :func:`robustclust._core.noise.default_count` for the number of
    outliers (EM for Gaussian clusters plus uniform noise, in standardised
    units, from its own robust start) and is then fitted with that count
    (``RobustEstimator._fit``).  Where the model cannot run (sparse input,
    more than ``MAX_FEATURES`` features, constant features, no cluster told
    from the noise) the chi^2 lambda is used, with an
    :class:`OutlierCountWarning` that says why.  It sets
    ``outlier_probability_``, ``noise_proportion_`` and ``inlier_flag_rate_``
    (None after a fit with ``lam``, ``n_outliers``, ``lam="chi2"``, sparse
    input, more than ``MAX_FEATURES`` features, or Dask input: those keep the
    chi^2 default lambda of ``solver.default_lambda``), and offers
    :meth:`outlier_probability` for new points.  Put it before
    :class:`RobustEstimator` in the bases (it implements the hooks
    ``_default_count`` and ``_forget_default_count`` of ``RobustEstimator._fit``).
    """

    _chi2_description = "flags about 0.1% of Gaussian inliers"
    _noise_description = ("chosen to flag the points whose noise probability exceeds 0.5 "
                          "(Gaussian clusters plus uniform noise)")
    #: Saved in model files when set; ``noise_proportion_`` also says which rule was used.
    _noise_state_names = ("noise_proportion_", "inlier_flag_rate_")
    _noise_attributes = ("outlier_probability_", "noise_proportion_", "inlier_flag_rate_")

    @property
    def _default_lambda_description(self):
        if getattr(self, "noise_proportion_", None) is not None:
            return self._noise_description
        return self._chi2_description

    def _forget_default_count(self, existing_only=False):
        """No noise model: the attributes None (``existing_only``: those already
        set, so that a Dask fit, which uses the chi2 rule, leaves no noise model
        of an earlier fit behind, and an unfitted estimator gains no attribute
        before its input is validated)."""
        self._noise_model = None
        self._noise_points = None
        self._flags_noise_points = False  # (how new points are flagged)
        for name in self._noise_attributes:
            if not existing_only or hasattr(self, name):
                setattr(self, name, None)

    @property
    def _counts_by_default(self):
        return self.n_outliers is None and getattr(self, "lam", None) is None

    def fitted_state(self):
        """As :meth:`RobustEstimator.fitted_state`, with the noise model (``_noise_state``)."""
        state = super().fitted_state()
        if getattr(self, "_noise_model", None) is not None:
            state["_noise_state"] = noise_model_state(self._noise_model)
        return state

    def _restore_state(self):
        super()._restore_state()
        if hasattr(self, "_noise_state"):
            self._noise_model = noise_model_from_state(type(self).__name__,
                                                      self.__dict__.pop("_noise_state"))

    def _fixed_outliers(self):
        return getattr(self, "_noise_points", None)

    def _default_count(self, problem):
        """The noise-component count, or None (the chi2 rule: asked for with
        ``lam="chi2"``, or a fallback, which warns and says why)."""
        g = problem.solver.geometry
        if self._chi2_rule:
            return None
        why = None
        if g.sparse:
            why = "sparse input"
        elif g.dim > MAX_FEATURES:
            why = f"{g.dim} features (the noise model takes at most {MAX_FEATURES})"
        else:
            X = np.asarray(to_numpy(g.X, g.xp), dtype=np.float64)
            w = np.asarray(to_numpy(problem.solver.sample_weight, g.xp), dtype=np.float64)
            s, prob, model = default_count(X, w, self._n_clusters,
                                           check_random_state(self.random_state))
            if model is None:
                why = "every feature constant"
            elif s > np.count_nonzero(w > 0) - self._n_clusters:
                # noise everywhere but a point per cluster or less: the model found no
                # cluster it could tell from the noise (data whose spread is lost to
                # rounding beside one extreme value), and a count that flags every
                # point would be no answer
                why = f"the noise model calls {s} of {len(w)} rows noise"
        if why is not None:
            warn_chi2_fallback(type(self).__name__, why, stacklevel=7)
            return None
        self._noise_model = model
        self._noise_points = (prob > 0.5) & (w > 0)
        self.outlier_probability_ = prob.astype(problem.dtype, copy=False)
        self.noise_proportion_ = float(model.noise)
        self.inlier_flag_rate_ = float(model.inlier_flag_rate())
        return s

    def outlier_probability(self, X):
        """Noise probability of new points under the fitted noise model.

        Only after a fit with the ``"noise"`` default (see
        ``outlier_probability_``); the model's clusters, weights and noise
        density are those of the fit (model files keep them; files written
        before they did cannot answer).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        probability : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        model = getattr(self, "_noise_model", None)
        if model is None and getattr(self, "noise_proportion_", None) is not None:
            raise ValueError("outlier_probability needs the noise model of the fit, which "
                             "model files of the earlier release do not keep: fit the "
                             "estimator again.")
        if model is None:
            raise ValueError("outlier_probability needs a fit with neither lam nor "
                             "n_outliers (the default count; dense data, at most "
                             f"{MAX_FEATURES} features).")
        X, _ = self._validate_input(X, None, reset=False)
        if sp.issparse(X):
            raise ValueError("outlier_probability takes dense X.")
        Xi, _, _ = internal_units(X, self._offset, self._scale)
        return self._output(model.noise_probability(to_numpy(Xi)), X)


def noise_model_state(model):
    """A fitted noise model as a dict of numbers and arrays (a model file's)."""
    return {"keep": model.keep.astype(np.int8), "means": model.means,
            "covariances": model.covariances, "sizes": model.sizes,
            "weights": model.weights, "noise": float(model.noise),
            "log_volume": float(model.log_volume), "loc": model.loc, "scale": model.scale}


def noise_model_from_state(name, state):
    """The noise model of :func:`noise_model_state`, checked (ValueError naming it)."""
    from .._core.noise import NoiseModel

    try:
        keep = np.asarray(state["keep"]).astype(bool)
        means = np.asarray(state["means"], dtype=np.float64)
        covs = np.asarray(state["covariances"], dtype=np.float64)
        arrays = [np.asarray(state[k], dtype=np.float64) for k in ("sizes", "weights", "loc",
                                                                   "scale")]
        noise, log_volume = float(state["noise"]), float(state["log_volume"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{name}._noise_state is incomplete") from None
    C, p = means.shape if means.ndim == 2 else (-1, -1)
    sizes, weights, loc, scale = arrays
    if (keep.ndim != 1 or int(keep.sum()) != p or covs.shape != (C, p, p)
            or sizes.shape != (C,) or weights.shape != (C,) or loc.shape != (p,)
            or scale.shape != (p,) or not 0.0 <= noise < 1.0 or np.any(weights < 0)
            or np.any(scale <= 0) or not np.all(np.isfinite(covs))):
        raise ValueError(f"{name}._noise_state holds values no fit gives")
    try:
        np.linalg.cholesky(covs)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name}._noise_state holds a covariance that is not positive "
                         "definite") from None
    return NoiseModel(keep, means, covs, sizes, weights, noise, log_volume, loc=loc,
                      scale=scale)


def state_from(centers, weights=None, covariance=None):
    """A state holding only fitted parameters: the start of ``assign``."""
    return State(centers, None, None, None, None, None, 0.0, weights=weights,
                 covariance=covariance)


def settled_state(solver, state, lam):
    """The fitted rule applied to the training points: what ``predict`` gives them.

    The O- and U-steps (E-steps) with the fitted parameters of ``state`` held
    fixed, from O = 0, until they settle (``Solver.assign``, the computation
    of ``predict``), so that ``predict`` on the training rows reproduces
    ``labels_`` and the outlier scores.  Block coordinate descent can stop
    where a point's o_n was set against a centre that is not its nearest
    (its U-step then keeps that centre, as o_n points towards it); the
    point's own problem, which this solves, never chooses so, and its cost
    is lower: the settled state's cost is at most the state's.  The
    parameters are not moved again.  For the K-means models only (linear
    and kernel, hard and soft), not weighted: the weighted (log-penalty)
    fits' per-point MM limit depends on where it starts, and a fit's path
    does not start where ``predict`` does; the mixtures' E- and O-steps
    alternated from O = 0 can reach another fixed point than EM's, with
    another count (a count fit of 42 came out at 41), and their ``predict``
    gives labels only, which agree (an outlier is -1 whichever component its
    o_n points to).
    """
    start = state_from(state.centers, state.weights, state.covariance)
    settled = solver.assign(start, [(lam, False)])
    return settled.finished(list(state.history), state.n_iter, state.converged)
