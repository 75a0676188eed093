"""The estimators on Dask input: validation, units, the sampled start, lazy results.

``RobustKMeans.fit`` and ``RobustGaussianMixture.fit`` hand a
``dask.array.Array`` (or a Dask DataFrame, whose numeric columns are used)
to :func:`fit_dask`, which

1. validates it lazily (float64/float32, finite, one pass of reductions:
   mean, extremes, the finiteness check) and brings it to the estimator's
   internal units (centred on the mean, divided by a power of two when its
   magnitude is extreme, :func:`~robustclust._estimators.units.power_of_two_scale`),
   then persists it once;
2. finds the initial centres (means): an explicit ``init`` array as given;
   ``init="k-means||"``: k-means|| on all the data
   (:func:`~robustclust._core.starts.kmeans_parallel`, 7 passes); otherwise
   the in-memory estimator (same parameters, its own restarts and robust
   start) is fitted on a uniform sample of :func:`sample_size` rows and its
   centres (means) start the fit on all the data; the mixture's initial
   weights and covariance come from those means and all the data, as in
   memory;
3. runs lambda selection of :mod:`robustclust._core.selection` (lambda given,
   by count, or the default) on a :class:`~robustclust._core.dask_backend.DaskSolver`
   (:class:`~robustclust._core.dask_backend.DaskMixtureSolver` for the mixture);
4. stores the results: centres (means, weights, covariance), lambda, counts,
   objective as numpy; ``labels_``, ``memberships_``, ``outlier_mask_`` and
   ``outlier_norms_`` (and the mixture's ``outlier_scores_``) as lazy dask
   arrays built from the final parameters; ``outlier_indices_`` (global
   int64 row numbers) and ``outlier_rows_`` (the k x p outlier vectors o_n)
   concrete.  ``outlier_vectors_`` (an N x p sparse matrix) is None: it is
   never built.

Nothing here imports dask at module level: :func:`is_dask` looks at the
type's module only, so ``import robustclust`` and numpy fits never load it.
"""

import math
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .covariance_types import COVARIANCE_TYPES, eigenvalue_bound, start_covariance
from .outliers import NOISE_ATTRIBUTES, check_outlier_params, warn_chi2_fallback
from .units import divide_by_power_of_two, power_of_two_scale, typical_magnitude


#: Rows of the uniform sample that seeds a fit without explicit ``init``:
#: ``min(N, max(SAMPLE_MIN_ROWS, SAMPLE_ROWS_PER_CLUSTER * n_clusters))``.
SAMPLE_MIN_ROWS = 10_000
SAMPLE_ROWS_PER_CLUSTER = 500


def is_dask(X):
    """Whether X is a Dask collection (without importing dask)."""
    module = type(X).__module__ or ""
    return module.split(".")[0] in ("dask", "dask_expr")


def sample_size(n_samples, n_clusters):
    """Rows of the sample whose in-memory fit starts a Dask fit."""
    return min(n_samples, max(SAMPLE_MIN_ROWS, SAMPLE_ROWS_PER_CLUSTER * n_clusters))


# -- input --------------------------------------------------------------------------------
def as_dask_array(X, estimator=None, reset=True):
    """(dask array with one chunk across the columns, feature names or None)."""
    import dask.array as da
    import dask.dataframe as dd

    names = None
    if isinstance(X, dd.Series):
        X = X.to_frame()
    if isinstance(X, dd.DataFrame):
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        numeric = [c for c, t in X.dtypes.items() if is_numeric_dtype(t) and not is_bool_dtype(t)]
        if not numeric:
            raise ValueError("The Dask DataFrame has no numeric columns to cluster.")
        X = X[numeric]
        names = np.asarray([str(c) for c in numeric], dtype=object)
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise TypeError(f"Expected a dask.array.Array or dask DataFrame, got {type(X).__name__}.")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array of shape (n_samples, n_features), got "
                         f"{X.ndim} dimension(s); reshape your data.")
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    kind = np.dtype(X.dtype).kind
    if kind not in "biuf":
        raise ValueError(f"X must be numeric (float64 or float32), got dtype {X.dtype}.")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"Found array with shape {X.shape}: at least one sample and one "
                         "feature are required.")
    X = X.rechunk({1: -1})
    if estimator is not None and not reset:
        check_is_fitted(estimator)
        if X.shape[1] != estimator.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} "
                             f"is expecting {estimator.n_features_in_} features as input.")
    return X, names


def _weights(sample_weight, X):
    import dask.array as da

    if sample_weight is None:
        return da.ones(X.shape[0], chunks=(X.chunks[0],), dtype=np.float64)
    if is_dask(sample_weight):
        w = sample_weight.astype(np.float64)
        if w.ndim != 1 or w.shape[0] != X.shape[0]:
            raise ValueError(f"sample_weight.shape == {w.shape}, expected ({X.shape[0]},)!")
        return w.rechunk((X.chunks[0],))
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(X.shape[0], float(w))
    if w.shape != (X.shape[0],):
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({X.shape[0]},)!")
    return da.from_array(w, chunks=(X.chunks[0],))


def internal_units(X, w):
    """(X in internal units, persisted; w persisted; offset; scale), one reduction pass.

    As :func:`robustclust._estimators.units.internal_units` for dense data:
    centred on the mean, divided by a power of two when its magnitude is
    extreme.  (The in-memory path's switch to the median when a few huge
    values dominate the mean is not made here: such data are refused.)
    """
    import dask
    import dask.array as da

    float32 = X.dtype == np.float32
    mean, high, low, finite, wmin = dask.compute(
        X.mean(axis=0, dtype=np.float64), X.max(axis=0), X.min(axis=0),
        da.isfinite(X).all(), w.min())
    if not finite:
        raise ValueError("Input X contains NaN or infinity.")
    if not np.isfinite(wmin) or wmin < 0:
        raise ValueError("sample_weight must be finite and non-negative.")
    offset = mean.astype(X.dtype)
    top = float(np.max(np.maximum(high - offset, offset - low)))
    step = max(1, X.shape[0] // 1000)
    sample = np.abs(np.asarray(X[::step].compute()) - offset)
    spread = np.median(sample, axis=0)
    if np.any(np.abs(mean - np.median(np.asarray(X[::step].compute()), axis=0))
              > 2.0**20 * np.where(spread > 0, spread, np.maximum(sample.max(axis=0), 1.0))):
        raise ValueError("A few values dominate the mean of X (they are 2^20 spreads away "
                         "from the rest): remove or rescale them before a Dask fit.")
    scale = power_of_two_scale(top, typical_magnitude(sample), float32)
    Xi = X - offset
    if scale != 1.0:
        Xi = divide_by_power_of_two(Xi, scale)
    Xi, w = dask.persist(Xi.astype(X.dtype), w)
    return Xi, w, offset, scale


# -- fit ------------------------------------------------------------------------------------
def _check_supported(estimator):
    if estimator._dask_fit is None:
        raise TypeError(f"{type(estimator).__name__} does not fit Dask arrays yet; "
                        "RobustKMeans and RobustGaussianMixture do (or compute the data to "
                        "numpy first).")
    if estimator._rho != "group":
        raise ValueError(f"penalty={estimator.penalty!r} is not supported on Dask arrays; use "
                         "penalty='group' or 'log', or compute the data to numpy first.")


def _check_refine(estimator, target, stacklevel):
    """A Dask fit is not refined (the trimmed refinement runs on NumPy input):
    ``refine=True`` is an error, and ``refine="auto"`` with a count, which
    would refine the same fit in memory, says so."""
    refine = getattr(estimator, "refine", False)
    if refine is False:
        return
    if refine is True:
        raise ValueError("refine=True needs NumPy input: the trimmed refinement does not run "
                         "on Dask arrays yet; use refine='auto' or False, or compute the data "
                         "to numpy first.")
    if target is None or (not _is_mixture(estimator)
                          and estimator._refine_unsupported(None) is not None):
        return  # no count, or a fit that is not refined in memory either
    warnings.warn("this count fit on Dask data is not refined: the trimmed refinement runs on "
                  "NumPy input only, so the penalized fit of the count is kept and differs "
                  "from the refined fit of the same data in memory (refine=False says so "
                  "and silences this).", UserWarning, stacklevel=stacklevel)


def _sample_start(estimator, X, w, target, rng):
    """Initial centres (user units): the in-memory estimator fitted on a uniform sample."""
    n = X.shape[0]
    m = sample_size(n, estimator._n_clusters)
    if m >= n:
        index = np.arange(n)
    elif m > n // 2:
        index = np.sort(rng.choice(n, m, replace=False))
    else:
        index = np.unique(rng.randint(0, n, size=m + m // 4 + 16))
        while index.shape[0] < m:
            index = np.unique(np.concatenate([index, rng.randint(0, n, size=m)]))
        index = np.sort(rng.choice(index, m, replace=False))
    import dask

    rows, weights = dask.compute(X[index], w[index])
    sub = clone(estimator)
    params = {"random_state": rng.randint(np.iinfo(np.int32).max), "verbose": 0}
    if target is not None and isinstance(estimator.n_outliers, (int, np.integer)):
        params["n_outliers"] = int(round(target * m / n))
    sub.set_params(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if _is_mixture(estimator):  # no sample weights; its means start the fit
            return sub.fit(np.asarray(rows)).means_
        sub.fit(np.asarray(rows), sample_weight=np.asarray(weights))
    return sub.cluster_centers_


def _initial_centres(estimator, X, Xi, w, target, rng, offset, scale):
    """Initial centres (means) in internal units, float64: the ``init`` array; k-means||
    on all the data (``init="k-means||"``); otherwise the sampled start."""
    from .._core.dask_backend import run_blocks
    from .._core.starts import kmeans_parallel, kmeans_parallel_block, trim_count

    if estimator._named_start == "k-means||":
        C = estimator._n_clusters
        return kmeans_parallel(lambda spec: run_blocks(Xi, w, kmeans_parallel_block, spec), C,
                               trim_count(estimator.n_outliers, X.shape[0], C), rng)
    if estimator._named_start is not None:
        init = _sample_start(estimator, X, w, target, rng)
    else:
        init = np.asarray(estimator.init, dtype=np.float64)
    return (init - np.asarray(offset, dtype=np.float64)) / scale


def _is_mixture(estimator):
    return estimator._dask_fit == "mixture"


def _default_eps(Xi, w):
    """1e-3 times the root-mean-square distance to the weighted mean (as ``default_eps``)."""
    import dask

    wsum, wx, wxx = dask.compute(w.sum(), (w[:, None] * Xi).sum(axis=0, dtype=np.float64),
                                 (w[:, None] * Xi * Xi).sum(axis=0, dtype=np.float64))
    mean = wx / wsum
    total_var = max(float(wxx.sum() / wsum - mean @ mean), 0.0)
    return 1e-3 * math.sqrt(total_var) if total_var > 0 else 1e-3


def _input_attributes(estimator, X, w, names):
    """Internal units of X (``_offset``, ``_scale``), ``n_features_in_`` and
    ``feature_names_in_`` on ``estimator``, as an in-memory fit sets them.
    Returns (X and w in internal units, the offset, the scale)."""
    Xi, w, offset, scale = internal_units(X, w)
    estimator._offset, estimator._scale = offset, scale
    estimator.n_features_in_ = X.shape[1]
    if names is not None:
        estimator.feature_names_in_ = names
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    return Xi, w, offset, scale


def fit_dask(estimator, X, sample_weight=None):
    """Fit ``estimator`` (RobustKMeans, RobustGaussianMixture) on a Dask array or
    DataFrame; returns it."""
    from .._core.dask_backend import DaskSolver
    from .._core.penalties import make_penalty
    from .._core.selection import fit_lambda

    _check_supported(estimator)
    if _is_mixture(estimator):  # its fit takes no sample_weight
        return _fit_mixture(estimator, X)
    X, names = as_dask_array(X)
    w = _weights(sample_weight, X)
    n, p = X.shape
    target = check_outlier_params(estimator, n, estimator.n_clusters)
    _check_refine(estimator, target, stacklevel=6)
    estimator._check_init(X)
    Xi, w, offset, scale = _input_attributes(estimator, X, w, names)
    if estimator.eps is not None:
        eps = float(estimator.eps) / scale
    else:
        eps = _default_eps(Xi, w) if estimator._log_penalty else None
    estimator._eps = eps
    model = estimator._make_model(None)
    penalty = make_penalty(estimator._rho)
    log_penalty = make_penalty(estimator._rho, True, eps)
    rng = check_random_state(estimator.random_state)
    inits = [_initial_centres(estimator, X, Xi, w, target, rng, offset, scale).astype(X.dtype)]
    solver = DaskSolver(Xi, w, model, penalty, log_penalty, count_target=target,
                        max_iter=estimator.max_iter, tol=estimator.tol,
                        verbose=estimator.verbose)
    lam_given = None if estimator._lam_value is None else float(estimator._lam_value) / scale
    lam, lam_unweighted, state = fit_lambda(solver, inits, lam=lam_given, target=target,
                                            weighted=estimator._log_penalty, lambda_unit=scale)
    _store(estimator, solver, state, lam, lam_unweighted, offset, scale)
    estimator._dask_solver_passes = solver.passes
    if not estimator._log_penalty and estimator._settle:
        _settle(estimator, solver, X, w)
    return estimator


def _settle(estimator, solver, X, w):
    """The fitted rule on the training blocks, as a fit in memory stores it
    (``base.settled_state``): what ``predict`` gives each block, so that it
    reproduces ``labels_`` and the scores (the BCD's own state had outliers
    whose o_n pointed at a centre that is not their nearest).  One pass over
    the data for the flags, scores, outlier rows and the cost; the per-point
    attributes stay lazy."""
    import dask

    twin = _numpy_twin(estimator)
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
    parts = [dask.delayed(_settle_block)(xb, wb, twin, int(start))
             for xb, wb, start in zip(X.to_delayed()[:, 0], w.to_delayed(), starts)]
    results = dask.compute(*parts)
    dtype = np.dtype(solver.dtype)
    index = np.concatenate([r[0] for r in results]).astype(np.int64)
    norms = np.concatenate([r[1] for r in results]).astype(dtype)
    rows = [r[2] for r in results if len(r[2])]
    estimator.outlier_indices_ = index
    estimator.n_outliers_ = int(index.shape[0])
    estimator.outlier_rows_ = (np.vstack(rows) if rows else
                               np.zeros((0, X.shape[1]))).astype(dtype)
    estimator.objective_ = float(sum(r[3] for r in results))
    estimator.labels_ = X.map_blocks(_apply, twin, "predict", dtype=np.intp, drop_axis=1)
    estimator.memberships_ = X.map_blocks(_memberships_block, twin, dtype=dtype,
                                          chunks=(X.chunks[0], (estimator.n_clusters,)))
    _lazy_outlier_arrays(estimator, solver, index, {"outlier_mask_": None,
                                                    "outlier_norms_": norms})


def _settle_block(X, w, twin, start):
    """(flagged rows + start, their scores, their outlier vectors, the block's cost)."""
    X = np.asarray(X)
    solver, state = twin._assign(X)
    labels = twin._labels_of(state)
    flagged = np.flatnonzero(labels == -1)
    norms = np.asarray(twin._outlier_norms_of(solver, state))[flagged]
    o = state.outliers
    if o.count:
        rows = np.asarray(solver.geometry.outlier_rows(o, state.centers)) * twin._scale
    else:
        rows = np.zeros((0, X.shape[1]))
    costs = np.asarray(state.point_costs, dtype=np.float64)
    cost = float(np.dot(np.asarray(w, dtype=np.float64), costs)) * twin._scale ** 2
    return flagged + start, norms, rows, cost


def _memberships_block(X, twin):
    _, state = twin._assign(np.asarray(X))
    if state.memberships is not None:
        return np.asarray(state.memberships)
    U = np.zeros((X.shape[0], twin.n_clusters))
    U[np.arange(X.shape[0]), np.asarray(state.labels)] = 1.0
    return U


def _store(estimator, solver, state, lam, lam_unweighted, offset, scale):
    """Fitted attributes: small ones numpy, per-point ones lazy dask arrays."""
    from .._core.geometry import LinearGeometry
    from .._core.state import Outliers

    dtype = np.dtype(solver.dtype)
    p = solver.dim
    flagged = state.flagged
    index = flagged.index.astype(np.int64)
    estimator.cluster_centers_ = (np.asarray(state.centers, dtype=np.float64) * scale
                                  + offset).astype(dtype)
    estimator.lambda_ = float(lam) * scale
    estimator.unweighted_lambda_ = float(lam_unweighted) * scale
    estimator.n_outliers_ = int(index.shape[0])
    estimator.outlier_indices_ = index
    unit = scale * scale
    estimator.objective_ = _user_objective(state.objective, unit)
    estimator.objective_history_ = np.array([_user_objective(v, unit) for v in state.history],
                                            dtype=np.float64)
    estimator.n_iter_ = int(state.n_iter)
    estimator.converged_ = bool(state.converged)
    estimator.eps_ = None if estimator._eps is None else estimator._eps * scale
    estimator._n_features_out = estimator.n_clusters
    # the k outlier vectors o_n = s_n (x_n - sum_c w_nc m_c), concrete
    if index.shape[0]:
        rows = np.asarray(solver.X[index].compute())
        local = Outliers(np.arange(index.shape[0]), shrink=flagged.shrink,
                         weights=flagged.weights, sizes=flagged.sizes)
        o = LinearGeometry(rows).outlier_rows(local, state.centers) * scale
    else:
        o = np.zeros((0, p))
    estimator.outlier_rows_ = o.astype(dtype)
    estimator.outlier_vectors_ = None
    # lazy per-point attributes, from the final parameters
    estimator.labels_ = solver.block_map(state, "labels", np.intp)
    estimator.memberships_ = solver.block_map(state, "memberships", dtype)
    norms = (flagged.sizes * scale).astype(dtype)
    _lazy_outlier_arrays(estimator, solver, index, {
        "outlier_mask_": None, "outlier_norms_": norms, "outlier_scores_": norms})
    _no_noise_model(estimator)


def _no_noise_model(estimator):
    """A Dask fit keeps the chi^2 default lambda: no noise-model attributes; a fit
    with neither lam nor n_outliers says so (the in-memory default is the noise
    count)."""
    for name in NOISE_ATTRIBUTES:
        setattr(estimator, name, None)
    if estimator.n_outliers is not None:
        estimator.outlier_rule_ = "n_outliers"
    elif estimator._lam_value is not None:
        estimator.outlier_rule_ = "lam"
    else:
        estimator.outlier_rule_ = "chi2"
        if not estimator._chi2_rule:
            warn_chi2_fallback(type(estimator).__name__, "Dask input", stacklevel=8)


def _fit_mixture(estimator, X):
    """RobustGaussianMixture on Dask data: as :func:`fit_dask`, with the mixture's
    units (lambda and eps are Mahalanobis, the objective shifts by N p log scale)."""
    import dask.array as da

    from .._core.dask_backend import DaskMixtureSolver
    from .._core.models import MixtureModel
    from .._core.penalties import make_penalty
    from .._core.selection import fit_lambda


    kind, per_component = COVARIANCE_TYPES[estimator.covariance_type]
    if per_component:
        raise ValueError(
            f"covariance_type={estimator.covariance_type!r} (one covariance per component) "
            "is not supported on Dask arrays yet; the common ones are: 'tied_spherical' "
            "(the paper's), 'tied_diag' and 'tied' (or compute the data to numpy first).")
    X, names = as_dask_array(X)
    w = _weights(None, X)
    n, p = X.shape
    C = estimator.n_components
    target = check_outlier_params(estimator, n, C)
    _check_refine(estimator, target, stacklevel=7)
    estimator._check_init(X)
    if estimator._lam_value == 0:
        raise ValueError(MixtureModel.zero_lambda_message)
    Xi, w, offset, scale = _input_attributes(estimator, X, w, names)
    # mean_variance of the internal data (1 when it is constant)
    variance = float(da.mean(Xi.astype(np.float64).var(axis=0)).compute())
    estimator._covar_floor = estimator.reg_covar * (variance if variance > 0 else 1.0)
    model = MixtureModel(C, kind, estimator._covar_floor, p,
                         eigenvalue_bound(estimator.covariance_type, estimator.eigenvalue_ratio))
    model.start_weights = estimator._start_weights
    if estimator._start_precisions is not None:
        model.start_covariance = start_covariance(estimator._start_precisions,
                                                  estimator.covariance_type, scale, p)
    estimator._eps = 1e-3 if estimator.eps is None else float(estimator.eps)
    penalty, log_penalty = make_penalty("group"), make_penalty("group", True, estimator._eps)
    rng = check_random_state(estimator.random_state)
    if estimator._start_means is not None:  # an init array or means_init
        means = (np.asarray(estimator._start_means, dtype=np.float64)
                 - np.asarray(offset, dtype=np.float64)) / scale
    else:
        means = _initial_centres(estimator, X, Xi, w, target, rng, offset, scale)
    inits = [(means, None)]
    solver = DaskMixtureSolver(Xi, w, model, penalty, log_penalty, count_target=target,
                               max_iter=estimator.max_iter, tol=estimator.tol,
                               verbose=estimator.verbose)
    lam, lam_unweighted, state = fit_lambda(
        solver, inits, lam=None if estimator._lam_value is None else float(estimator._lam_value),
        target=target, weighted=estimator._log_penalty,
        compare_trimmed=estimator._named_start == "robust")
    _store_mixture(estimator, solver, state, lam, lam_unweighted, offset, scale)
    estimator._dask_solver_passes = solver.passes
    return estimator


def _store_mixture(estimator, solver, state, lam, lam_unweighted, offset, scale):
    """The mixture's fitted attributes: parameters numpy, per-point ones lazy."""
    from .._core.geometry import LinearGeometry
    from .._core.state import Outliers

    dtype = np.dtype(solver.X.dtype)
    n, p = solver.n_samples, solver.dim
    flagged = state.flagged
    index = flagged.index.astype(np.int64)
    cov = state.covariance
    estimator.weights_ = np.asarray(state.weights, dtype=np.float64)
    estimator.means_ = (np.asarray(state.centers, dtype=np.float64) * scale
                        + offset).astype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        estimator.covariances_ = np.float64(cov.value) * scale * scale \
            if np.ndim(cov.value) == 0 else cov.value * scale * scale
    estimator.precisions_cholesky_ = cov.P / scale
    estimator.lambda_ = float(lam)
    estimator.unweighted_lambda_ = float(lam_unweighted)
    estimator.eps_ = estimator._eps
    estimator.n_outliers_ = int(index.shape[0])
    estimator.outlier_indices_ = index
    shift = n * p * math.log(scale)
    estimator.objective_ = _user_objective(state.objective, 1.0) + shift
    estimator.objective_history_ = np.array([_user_objective(v, 1.0) + shift
                                             for v in state.history], dtype=np.float64)
    estimator.n_iter_ = int(state.n_iter)
    estimator.converged_ = bool(state.converged)
    # the k outlier vectors o_n = s_n (x_n - sum_c gamma_nc m_c) and their norms, concrete
    if index.shape[0]:
        rows = np.asarray(solver.X[index].compute(), dtype=np.float64)
        local = Outliers(np.arange(index.shape[0]), shrink=flagged.shrink,
                         weights=flagged.weights, sizes=flagged.sizes,
                         euclidean=flagged.euclidean)
        geometry = LinearGeometry(rows)
        o = geometry.outlier_rows(local, state.centers) * scale
        norms = np.asarray(geometry.outlier_norms(local, state.centers)) * scale
    else:
        o, norms = np.zeros((0, p)), np.zeros(0)
    estimator.outlier_rows_ = o.astype(dtype)
    estimator.outlier_vectors_ = None
    estimator.labels_ = solver.block_map(state, "labels", np.intp)
    estimator.memberships_ = solver.block_map(state, "memberships", np.float64)
    _lazy_outlier_arrays(estimator, solver, index, {
        "outlier_mask_": None, "outlier_norms_": norms.astype(dtype),
        "outlier_scores_": np.asarray(flagged.sizes, dtype=np.float64)})
    _no_noise_model(estimator)
    if estimator.n_outliers_ == n:
        warnings.warn(
            f"Every point is flagged (lambda_={estimator.lambda_:.3g}): with the log "
            "penalty and lam below the dimension the cost of eq. (8) decreases "
            "without bound as Sigma shrinks, until the reg_covar floor; increase lam.",
            UserWarning, stacklevel=4)


def _lazy_outlier_arrays(estimator, solver, index, values):
    """Per-point arrays, lazily: True (``None``) or the given value at the flagged rows."""
    import dask.array as da

    chunks = (solver.X.chunks[0],)
    starts = da.from_array(np.concatenate([[0], np.cumsum(chunks[0])[:-1]]).astype(np.int64),
                           chunks=1)
    for name, value in values.items():
        if value is None:
            arr = da.map_blocks(_mask_block, starts, index, chunks=chunks, dtype=bool)
        else:
            arr = da.map_blocks(_norms_block, starts, index, value, chunks=chunks,
                                dtype=value.dtype)
        setattr(estimator, name, arr)


def _user_objective(value, unit):
    value = float(value)
    if value == 0.0 or math.isinf(value):
        return value
    return value * unit


def _mask_block(start, index, block_info=None):
    loc = block_info[None]["array-location"][0]
    mask = np.zeros(loc[1] - loc[0], dtype=bool)
    lo, hi = np.searchsorted(index, loc)
    mask[index[lo:hi] - loc[0]] = True
    return mask


def _norms_block(start, index, norms, block_info=None):
    loc = block_info[None]["array-location"][0]
    out = np.zeros(loc[1] - loc[0], dtype=norms.dtype)
    lo, hi = np.searchsorted(index, loc)
    out[index[lo:hi] - loc[0]] = norms[lo:hi]
    return out


# -- new points -------------------------------------------------------------------------------
def _numpy_twin(estimator):
    """A copy of the fitted estimator holding only what predicting needs (numpy)."""
    state = {k: v for k, v in estimator.fitted_state().items() if k != "feature_names_in_"}
    return type(estimator).from_fitted_state(estimator.get_params(), state)


def _apply(X, twin, method):
    return getattr(twin, method)(np.asarray(X))


def _score_block(X, w, twin):
    return twin.score(np.asarray(X), sample_weight=np.asarray(w))


def predict_dask(estimator, X, method="predict"):
    """``method`` of new points as a lazy dask array: predict, outlier_norms and
    transform (K-means), predict, predict_proba and score_samples (the mixture).

    Each block is handled by the in-memory estimator's own method with the
    fitted parameters (points are independent given them).
    """
    X, _ = as_dask_array(X, estimator, reset=False)
    twin = _numpy_twin(estimator)
    if method in ("transform", "predict_proba"):
        return X.map_blocks(_apply, twin, method, dtype=np.float64,
                            chunks=(X.chunks[0], (estimator._n_clusters,)))
    dtype = {"predict": np.intp, "score_samples": np.float64}.get(method, X.dtype)
    return X.map_blocks(_apply, twin, method, dtype=dtype, drop_axis=1)


def score_dask(estimator, X, sample_weight=None):
    """Opposite of the cost of new points (a float), summed over the blocks."""
    import dask

    X, _ = as_dask_array(X, estimator, reset=False)
    w = _weights(sample_weight, X)
    twin = _numpy_twin(estimator)
    parts = [dask.delayed(_score_block)(xb, wb, twin)
             for xb, wb in zip(X.to_delayed()[:, 0], w.to_delayed())]
    return float(np.sum(dask.compute(*parts)))
