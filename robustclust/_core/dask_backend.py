"""The solver on a Dask array: per-block maps, float64 reductions, numpy parameters.

:class:`DaskSolver` offers the calls of :class:`~robustclust._core.solver.Solver`
that lambda selection uses (``init_state``, ``run``, ``lambda_max``,
``critical_lambdas``, ``trimmed_cost``, ``default_lambda``), so the count
search, the restarts and the default lambda of
:mod:`robustclust._core.selection` run unchanged on data held by a Dask
cluster.  What differs is where an iteration's work happens:

* the data X (in internal units) is persisted once, split in row blocks;
* one pass per iteration: the small parameters (centres, lambda and the k
  flagged points' outlier records) go to the workers in one task, every
  block computes its per-point map with the model's own numpy functions
  (:meth:`KMeansModel.membership_step`, :meth:`KMeansModel.fixed_centre_step`,
  :meth:`KMeansModel.centre_weights`, the geometry's sums: the block updates
  are written once, in :mod:`.models`) and returns float64 sufficient
  statistics (weighted sums of rows and their weights per cluster, cost,
  the squared outlier shift, its flagged points); the driver adds them in
  block order and divides in numpy;
* no per-point array survives a pass.  The iteration of the paper needs the
  previous labels (the O-step's residual is taken against them), and a
  point's previous label is a function of the previous centres alone unless
  the point was flagged: so a pass recomputes the previous U-step from the
  previous centres and the flagged points' records (k of them, concrete on
  the driver) and then runs the O- and U-steps at the new centres.  That is
  two products X M^T per iteration instead of one; in exchange the task
  graph of a pass depends on nothing but the persisted X and small
  parameters, so the scheduler's task table does not grow with the
  iteration count, and a lost block is recomputed from X alone.

Every reduction is a sum of per-block float64 partials in block order, or a
max, or a merge of per-block top-k lists: the same data split in 1 or 64
blocks gives the same labels and outliers and centres equal to rounding.

Order statistics at scale.  A count search reads the lambda flagging s
points off the s-th and (s+1)-th largest critical lambdas
(:func:`~robustclust._core.selection.lambda_for_count`); here each block
returns its own top s+1 and the driver merges them, so
:meth:`DaskSolver.critical_lambdas` returns exactly the top ``count_target``
+ 1 values, which is all ``lambda_for_count(., count_target)`` reads.  The
weighted median of the default lambda comes from exact per-block
histograms, refined until the bin holding the median is small enough to
gather (:func:`weighted_quantile`).

The mixture.  :class:`DaskMixtureSolver` does the same for
:class:`~robustclust._core.models.MixtureModel`: a state is (pi, means,
Sigma, the flagged points' records, lambda), its posteriors are recomputed
from them by each pass (:meth:`MixtureModel.state_at`), and an EM iteration
takes two passes, one per sum over the points it needs (the means', then
the covariance's after the O-step); the block updates are the model's own
(E-step, O-step, the sums of :meth:`MixtureModel.mean_statistics` and
:meth:`MixtureModel.covariance_statistics`), the divisions its
:meth:`MixtureModel.means_and_weights` and
:meth:`MixtureModel.covariance_from_statistics` on the driver.

Only :func:`robustclust._estimators.dask_fit` imports this module, and only
for Dask input: ``import robustclust`` never imports dask.
"""

import contextlib
import math
from dataclasses import dataclass, field, replace

import numpy as np

from .. import _progress
from .geometry import Assignment, LinearGeometry
from .models import _divide_rows, worst_fitting_inliers
from .selection import default_lambda as _default_lambda_formula
from .solver import EMStop, Solver
from .state import Outliers, State
from .threads import single_blas

#: Values gathered to the driver to finish a quantile exactly.
QUANTILE_GATHER = 65_536
#: Bins of one refinement pass of :func:`weighted_quantile`.
QUANTILE_BINS = 4096


@dataclass
class Flagged:
    """The outlier records of a state: the k flagged points, concrete on the driver.

    o_n = shrink_n (x_n - sum_c w_nc m_c) for n in ``index`` (global row
    numbers, sorted), with ``weights`` the residual weights of the O-step
    that made them (labels, or (k, C) rows) and ``sizes`` = ||o_n||.
    """

    index: np.ndarray
    shrink: np.ndarray
    weights: np.ndarray
    sizes: np.ndarray

    @classmethod
    def empty(cls, n_clusters, hard):
        weights = np.empty(0, dtype=np.intp) if hard else np.empty((0, n_clusters))
        return cls(np.empty(0, dtype=np.int64), np.empty(0), weights, np.empty(0))

    @property
    def count(self):
        return int(self.index.shape[0])

    def block(self, start, stop, n_block):
        """The records of rows start:stop as an :class:`Outliers` of the block."""
        lo, hi = self._span(start, stop)
        local = (self.index[lo:hi] - start).astype(np.intp)
        shrink_full, sizes_full = np.zeros(n_block), np.zeros(n_block)
        shrink_full[local] = self.shrink[lo:hi]
        sizes_full[local] = self.sizes[lo:hi]
        sizes = self.sizes[lo:hi]
        return Outliers(local, shrink=self.shrink[lo:hi], weights=self.weights[lo:hi],
                        sizes=sizes, euclidean=sizes, shrink_full=shrink_full,
                        sizes_full=sizes_full)

    def _span(self, start, stop):
        return np.searchsorted(self.index, [start, stop])


@dataclass
class MixtureFlagged(Flagged):
    """The mixture's records: ``weights`` are the posterior rows (k, C) of the O-step,
    ``sizes`` = ||o_n|| in the Sigma^-1 norm of the state's covariance, and
    ``euclidean`` = ||o_n||_2 where the O-step knows it (spherical Sigma), else None
    (as :meth:`MixtureModel.outlier_step` leaves them)."""

    euclidean: np.ndarray | None = None

    @classmethod
    def empty(cls, n_clusters, spherical):
        return cls(np.empty(0, dtype=np.int64), np.empty(0), np.empty((0, n_clusters)),
                   np.empty(0), np.empty(0) if spherical else None)

    def block(self, start, stop, n_block):
        outliers = super().block(start, stop, n_block)
        lo, hi = self._span(start, stop)
        outliers.euclidean = None if self.euclidean is None else self.euclidean[lo:hi]
        return outliers


@dataclass
class DaskState:
    """A state on the driver: parameters, flagged points, costs; no per-point array.

    ``lam`` and ``weighted`` are those of the U-step that made the state (a
    pass recomputes it); ``pending`` holds the sufficient statistics of the
    next centre step, computed for ``pending_key`` = (lam, weighted).  The
    mixture's states also hold pi (``weights``) and Sigma (``covariance``);
    their ``pending`` statistics (of the means) do not depend on lam.
    """

    centers: np.ndarray
    flagged: Flagged
    lam: float
    weighted: bool
    objective: float = math.nan
    weights: np.ndarray | None = None
    covariance: object = None
    pending: dict | None = None
    pending_key: tuple | None = None
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False

    @property
    def n_outliers(self):
        return self.flagged.count

    @property
    def outlier_index(self):
        return self.flagged.index

    def finished(self, history, n_iter, converged):
        return replace(self, history=history, n_iter=n_iter, converged=converged)


# -- what runs on a block -----------------------------------------------------------------
def _block_solver(X, w, spec):
    """A numpy solver of one block, with the fit's model and penalties."""
    return Solver(LinearGeometry(X), spec["model"], spec["penalty"], spec["log_penalty"],
                  sample_weight=w)


def _rebuild(solver, flagged, start, centers, lam, weighted):
    """The block's part of a state: the U-step at ``centers`` with its flagged points.

    For a point not flagged this is the nearest centre (its memberships),
    which is what the U-step gave it in the iteration that made the state;
    a flagged point gets the same U-step with its recorded o_n.
    """
    g = solver.geometry
    model = solver.model
    outliers = flagged.block(start, start + g.n_samples, g.n_samples)
    products = g.products(centers)
    penalty = solver.log_penalty if weighted else solver.penalty
    labels, U, costs = model.membership_step(solver, products, outliers, lam, penalty, centers)
    return State(centers, products, labels, U, outliers, costs, solver.objective_of(costs))


def _records(state, start):
    """The flagged points of a block state as global records."""
    o = state.outliers
    index = np.asarray(o.index, dtype=np.int64) + start
    return {"index": index, "shrink": np.asarray(o.shrink, dtype=np.float64),
            "weights": np.asarray(o.weights), "sizes": np.asarray(o.sizes, dtype=np.float64)}


def _top(values, k):
    """The k largest values, sorted decreasing (all of them when fewer)."""
    values = np.asarray(values, dtype=np.float64)
    if k < values.shape[0]:
        values = np.partition(values, values.shape[0] - k)[values.shape[0] - k:]
    return np.sort(values)[::-1]


def block_pass(X, w, start, spec):
    """Everything one pass asks of one block; small float64 results only.

    ``spec`` holds the model and penalties, ``prev`` = (centres, flagged,
    lam, weighted) of the state to rebuild, optionally ``step`` = (centres,
    lam, weighted) of the O- and U-steps at new centres, ``stats`` =
    (lam, weighted) of the next centre step, and the extra questions
    (``critical``, ``lambda_max``, ``scores``, ``histogram``, ``gather``).
    """
    X = np.ascontiguousarray(X)
    w = np.asarray(w, dtype=np.float64)
    solver = _block_solver(X, w, spec)
    g, model = solver.geometry, solver.model
    out = {}
    with single_blas():
        centers, flagged, lam, weighted = spec["prev"]
        state = _rebuild(solver, flagged, start, centers, lam, weighted)
        if spec.get("step") is not None:
            new_centers, lam, weighted = spec["step"]
            products = state.products if new_centers is centers else g.products(new_centers)
            penalty = solver.log_penalty if weighted else solver.penalty
            prev = state
            state = model.fixed_centre_step(solver, prev, new_centers, products, lam, penalty)
            shift = g.outlier_shift(prev.outliers, state.outliers, prev.centers, state.centers)
            out["shift2"] = float(shift) ** 2
            out["norm2"] = float(np.sum(np.asarray(state.outliers.euclidean) ** 2))
            out["records"] = _records(state, start)
        out["objective"] = float(state.objective)
        if spec.get("stats") is not None:
            out.update(_centre_statistics(solver, state, *spec["stats"], start))
        if spec.get("critical") is not None:
            crit_weighted, top = spec["critical"]
            penalty = solver.log_penalty if crit_weighted else solver.penalty
            out["critical"] = _top(model.critical_lambdas(solver, state, penalty), top)
        if spec.get("lambda_max"):
            out["residual_max"] = float(model.residual_max(solver, state, solver.penalty))
        if spec.get("scores") is not None:
            scores = np.asarray(model.point_scores(solver, state), dtype=np.float64)
            out["score_sum"] = float(scores.sum())
            out["score_top"] = _top(scores, spec["scores"])
        if any(spec.get(k) is not None for k in ("histogram", "gather", "above")):
            _quantile_answers(out, np.min(state.products.sq_distances(), axis=1), w, spec)
    return out


def _quantile_answers(out, d2, w, spec):
    """A block's part of :func:`weighted_quantile`: a histogram of ``d2``, the values
    in a range, or (``above`` = v) the weight at most v and the next value above it."""
    positive = spec.get("positive", False)
    keep = (d2 > 0) & (w > 0) if positive else np.ones(d2.shape[0], bool)
    d2, wk = d2[keep], w[keep]
    if spec.get("histogram") is not None:
        out.update(_histogram(d2, wk, *spec["histogram"]))
    elif spec.get("gather") is not None:
        lo, hi = spec["gather"]
        inside = (d2 >= lo) & (d2 <= hi)
        out["values"], out["weights"] = d2[inside], wk[inside]
        out["below"] = float(wk[d2 < lo].sum())
    elif spec.get("above") is not None:
        v = spec["above"]
        out["at_most"] = float(wk[d2 <= v].sum())
        higher = d2[d2 > v]
        out["next_above"] = float(higher.min()) if higher.shape[0] else math.inf


def _centre_statistics(solver, state, lam, weighted, start):
    """The numerators and denominators of the next centre step at (lam, weighted).

    :meth:`KMeansModel.centre_weights` and the geometry's sums, as in
    :meth:`KMeansModel.centre_step`; for hard K-means also the member
    weights and the worst-fitting inliers that would reseed an empty cluster.
    """
    g, model, xp = solver.geometry, solver.model, solver.xp
    penalty = solver.log_penalty if weighted else solver.penalty
    V, subtract = model.centre_weights(solver, state, lam, penalty)
    sums = g.removed_sums(V, state.outliers, state.centers) if subtract else g.point_sums(V)
    totals = V.totals(xp) if isinstance(V, Assignment) else np.sum(V, axis=0)
    out = {"sums": np.asarray(sums, dtype=np.float64), "totals": np.asarray(totals, np.float64)}
    if model.hard:
        C = model.n_clusters
        out["members"] = np.bincount(state.labels, weights=solver.sample_weight,
                                     minlength=C).astype(np.float64)
        flagged = solver.dense(state.outliers).sizes_full > 0
        far = worst_fitting_inliers(state.point_costs, flagged, C)
        far = far[~flagged[far]]
        out["far_index"] = far.astype(np.int64) + start
        out["far_cost"] = np.asarray(state.point_costs[far], dtype=np.float64)
    return out


def _histogram(values, weights, lo, hi, bins):
    """Weighted counts of ``values`` below ``lo`` and in ``bins`` bins of [lo, hi]."""
    below = float(weights[values < lo].sum())
    inside = (values >= lo) & (values <= hi)
    counts = np.histogram(values[inside], bins=bins, range=(lo, hi),
                          weights=weights[inside])[0] if hi > lo else \
        np.array([float(weights[inside].sum())])
    n_in = np.histogram(values[inside], bins=bins, range=(lo, hi))[0] if hi > lo else \
        np.array([int(inside.sum())])
    return {"below": below, "counts": counts.astype(np.float64), "n_in": n_in,
            "n": int(values.shape[0]), "total": float(weights.sum()),
            "vmax": float(values.max()) if len(values) else -1.0}


def _block_map(X, w, start, spec):
    """Labels (-1 for flagged points), memberships or outlier flags of one block."""
    solver = _block_solver(np.ascontiguousarray(X), np.asarray(w, dtype=np.float64), spec)
    with single_blas():
        centers, flagged, lam, weighted = spec["prev"]
        state = _rebuild(solver, flagged, start, centers, lam, weighted)
    what = spec["what"]
    if what == "labels":
        labels = np.asarray(state.labels, dtype=np.intp).copy()
        labels[state.outliers.index] = -1
        return labels
    if what == "memberships":
        if state.memberships is not None:
            return np.asarray(state.memberships)
        U = np.zeros((X.shape[0], solver.n_clusters))
        U[np.arange(X.shape[0]), state.labels] = 1.0
        return U
    raise ValueError(what)


def run_blocks(X, sample_weight, function, spec):
    """``function(X_block, w_block, start, spec)`` on every row block, in row order: one
    pass over a persisted X (the k-means|| start's passes,
    :func:`robustclust._core.starts.kmeans_parallel`)."""
    import dask

    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
    params = dask.delayed(spec, pure=False, traverse=False)
    tasks = [dask.delayed(function, pure=False)(xb, wb, int(start), params)
             for xb, wb, start in zip(X.to_delayed()[:, 0], sample_weight.to_delayed(), starts)]
    return list(dask.compute(*tasks))


# -- the driver ------------------------------------------------------------------------------
class DaskSolver:
    """The solver's interface for lambda selection, over a persisted Dask array.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        The data in internal units, persisted, one chunk across the columns.
    sample_weight : dask.array.Array of shape (n_samples,)
        Same row chunks as X.
    model, penalty, log_penalty : as for :class:`~robustclust._core.solver.Solver`
        (K-means models here).
    count_target : int or None
        The s of a count search: :meth:`critical_lambdas` returns the top
        s + 1 critical lambdas.
    max_iter, tol, verbose : as the estimators'.
    """

    xp = np
    is_numpy_backend = True
    #: What one pass asks of a block, and the per-point maps of the fitted attributes.
    _block_pass = staticmethod(block_pass)
    _block_map = staticmethod(_block_map)

    def __init__(self, X, sample_weight, model, penalty, log_penalty=None, *, count_target=None,
                 max_iter=300, tol=1e-6, verbose=0):
        import dask

        self._dask = dask
        self.X = X
        self.sample_weight = sample_weight
        self.model = model
        self.penalty = penalty
        self.log_penalty = log_penalty
        self.count_target = count_target
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.n_samples, self.dim = X.shape
        self.dtype = np.dtype(X.dtype)
        self.n_clusters = model.n_clusters
        self.feature_dim = self.dim
        # the passes name the persisted blocks (``self.X`` keeps them alive); the lazy
        # fitted attributes hold them (unoptimized graphs: the futures on a cluster)
        self._blocks = list(zip(X.to_delayed()[:, 0], sample_weight.to_delayed()))
        self._held_blocks = None
        self._starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
        self.passes = 0

    @property
    def zero_lambda_ok(self):
        return self.model.zero_lambda_ok

    @property
    def n_blocks(self):
        return len(self._blocks)

    def blas(self):
        return single_blas()

    # -- one pass over the data ---------------------------------------------------------
    def _pass(self, **spec):
        """Run :func:`block_pass` on every block; the results in block order."""
        dask = self._dask
        spec = {"model": self.model, "penalty": self.penalty, "log_penalty": self.log_penalty,
                **spec}
        params = dask.delayed(spec, pure=False, traverse=False)
        tasks = [dask.delayed(self._block_pass, pure=False)(xb, wb, int(start), params)
                 for (xb, wb), start in zip(self._blocks, self._starts)]
        self.passes += 1
        return list(dask.compute(*tasks))

    def _prev(self, state):
        return (state.centers, state.flagged, state.lam, state.weighted)

    def _merge_records(self, results):
        """The flagged points of all blocks (block order is row order)."""
        parts = [r["records"] for r in results]
        weights = [p["weights"] for p in parts]
        hard = self.model.hard
        return Flagged(
            np.concatenate([p["index"] for p in parts]).astype(np.int64),
            np.concatenate([p["shrink"] for p in parts]),
            (np.concatenate(weights).astype(np.intp) if hard
             else np.concatenate([np.reshape(x, (-1, self.n_clusters)) for x in weights])),
            np.concatenate([p["sizes"] for p in parts]))

    @staticmethod
    def _sum(results, name):
        """Sum of a per-block result in block order, in float64."""
        total = None
        for r in results:
            value = np.asarray(r[name], dtype=np.float64)
            total = value.copy() if total is None else total + value
        return total

    def _statistics(self, results):
        stats = {name: self._sum(results, name) for name in ("sums", "totals")}
        if self.model.hard:
            stats["members"] = self._sum(results, "members")
            stats["far_index"] = np.concatenate([r["far_index"] for r in results])
            stats["far_cost"] = np.concatenate([r["far_cost"] for r in results])
        return stats

    # -- states -----------------------------------------------------------------------------
    def geometry_dtype(self, centers):
        return np.asarray(centers).astype(self.dtype, copy=False)

    def init_state(self, init, lam=None):
        """Cold state at initial centres; with a finite lam, O and U at them too."""
        centers = self.geometry_dtype(np.asarray(init))
        start = DaskState(centers, Flagged.empty(self.n_clusters, self.model.hard), math.inf,
                          False)
        if lam is None or not np.isfinite(lam):
            results = self._pass(prev=self._prev(start), stats=(math.inf, False))
            start.objective = self._sum(results, "objective").item()
            start.pending, start.pending_key = self._statistics(results), (math.inf, False)
            return start
        lam = float(lam)
        results = self._pass(prev=self._prev(start), step=(centers, lam, False),
                             stats=(lam, False))
        return self._state_from(results, centers, lam, False)

    def _state_from(self, results, centers, lam, weighted):
        return DaskState(centers, self._merge_records(results), lam, weighted,
                         objective=self._sum(results, "objective").item(),
                         pending=self._statistics(results), pending_key=(lam, weighted))

    def _divide(self, state):
        """The centre step's division (:meth:`KMeansModel.divide`); empty clusters reseeded."""
        stats = state.pending
        totals = stats["totals"]
        centers = self.geometry_dtype(_divide_rows(stats["sums"], totals, state.centers, np))
        if not self.model.hard or bool(np.all(totals > 0)):
            return centers
        empty = np.flatnonzero(stats["members"] <= 0)
        if empty.shape[0] == 0:
            return centers
        # the worst-fitting inliers overall: largest cost first, lowest row on ties
        order = np.lexsort((stats["far_index"], -stats["far_cost"]))
        far = np.sort(stats["far_index"][order[:empty.shape[0]]])
        rows = np.asarray(self.X[far].compute())
        far_in_order = stats["far_index"][order[:empty.shape[0]]]
        host = np.array(centers)
        host[empty] = rows[np.searchsorted(far, far_in_order)].astype(self.dtype)
        return host

    def run(self, state, lam, weighted=False, max_iter=None, tol=None):
        """Iterations at ``lam`` from ``state`` until the stopping rule holds (one pass each)."""
        lam = float(lam)
        max_iter = self.max_iter if max_iter is None else min(max_iter, self.max_iter)
        tol = self.tol if tol is None else tol
        key = (lam, weighted)
        if state.pending is None or state.pending_key != key:
            results = self._pass(prev=self._prev(state), stats=key)
            state = replace(state, pending=self._statistics(results), pending_key=key)
        history, converged, it = [], False, 0
        for it in range(1, max_iter + 1):
            centers = self._divide(state)
            c_norm = float(np.linalg.norm(centers))
            c_shift = float(np.linalg.norm(centers - state.centers))
            results = self._pass(prev=self._prev(state), step=(centers, lam, weighted),
                                 stats=key)
            new = self._state_from(results, centers, lam, weighted)
            o_shift = math.sqrt(max(self._sum(results, "shift2").item(), 0.0))
            o_norm = math.sqrt(max(self._sum(results, "norm2").item(), 0.0))
            state = new
            history.append(state.objective)
            _progress.iteration()
            if self.verbose:
                print(f"  iteration {it}: objective {state.objective:.6g}, "
                      f"outliers {state.n_outliers}")
            if c_shift <= tol * c_norm and o_shift <= tol * max(o_norm, c_norm):
                converged = True
                break
        return state.finished(history, it, converged)

    # -- the questions of lambda selection -------------------------------------------------
    def lambda_max(self, state):
        """Smallest lam that flags nothing: a max over the blocks."""
        results = self._pass(prev=self._prev(state), lambda_max=True)
        return self.penalty.lambda_max(max(r["residual_max"] for r in results))

    def count_hint(self, s):
        """Gather the top ``s`` + 1 critical lambdas from now on (the default lambda's
        weighted stage asks for the count the unweighted one reached)."""
        self.count_target = s

    def keeping_starts(self):
        """Context of a count search (:meth:`Solver.keeping_starts`): nothing is kept
        here, every state lives on the cluster."""
        return contextlib.nullcontext()

    def critical_lambdas(self, state, weighted=False):
        """The top ``count_target`` + 1 critical lambdas, decreasing (per-block top-k, merged).

        ``lambda_for_count(result, count_target)`` equals its value on the
        critical lambdas of all points.
        """
        if self.count_target is None:
            raise RuntimeError("a count search on Dask data needs the solver's count_target")
        top = self.count_target + 1
        results = self._pass(prev=self._prev(state), critical=(weighted, top))
        return _top(np.concatenate([r["critical"] for r in results]), top)

    def trimmed_cost(self, state, n_trim):
        """The l0 cost of eq. (3): all the points' scores less the n_trim largest."""
        results = self._pass(prev=self._prev(state), scores=max(int(n_trim), 0))
        total = self._sum(results, "score_sum").item()
        if n_trim > 0:
            total -= float(_top(np.concatenate([r["score_top"] for r in results]),
                                n_trim).sum())
        return total

    def default_lambda(self, state):
        """The chi^2 rule of :func:`selection.default_lambda` from an exact weighted median."""
        med = weighted_quantile(self, state, 0.5, positive=False)
        if med == 0:
            med = weighted_quantile(self, state, 0.5, positive=True)
            if med is None:
                return 0.0
        return _default_lambda_formula(np.array([med]), np.ones(1), self.dim, self.penalty.name)

    # -- the final state, lazily, for the fitted attributes -----------------------------------
    def block_map(self, state, what, dtype, weighted=None):
        """A lazy dask array of a per-point map of ``state``: labels, memberships, norms."""
        import dask.array as da

        spec = {"model": self.model, "penalty": self.penalty, "log_penalty": self.log_penalty,
                "prev": self._prev(state), "what": what}
        params = self._dask.delayed(spec, pure=True, traverse=False)
        chunks = self.X.chunks[0]
        if self._held_blocks is None:
            self._held_blocks = list(zip(self.X.to_delayed(optimize_graph=False)[:, 0],
                                         self.sample_weight.to_delayed(optimize_graph=False)))
        parts = []
        for (xb, wb), start, n in zip(self._held_blocks, self._starts, chunks):
            shape = (n, self.n_clusters) if what == "memberships" else (n,)
            parts.append(da.from_delayed(self._dask.delayed(self._block_map)(xb, wb,
                                                                            int(start), params),
                                         shape=shape, dtype=dtype))
        return da.concatenate(parts, axis=0)


def weighted_quantile(solver, state, q, positive=False):
    """The weighted ``inverted_cdf`` q-quantile of min_c ||x_n - m_c||^2, exactly.

    The smallest value v whose points weigh at least q times the total
    (numpy's ``np.quantile(..., weights=w, method="inverted_cdf")``).
    Per-block weighted histograms narrow the bin that holds it until the bin
    holds at most :data:`QUANTILE_GATHER` values, which are gathered and
    finished on the driver.  A bin too narrow to split (a few floats wide)
    that still holds more (ties) is walked value by value, one pass each.
    With ``positive`` only the values > 0 (of positive weight) count; None
    when there are none.
    """
    source = {"prev": solver._prev(state)}
    results = solver._pass(**source, histogram=(0.0, 0.0, 1), positive=positive)
    return smallest_reaching(solver, source, results, lambda total: q * total, positive)


def smallest_reaching(solver, source, results, target_of, positive=False):
    """The smallest value v whose points (values <= v) weigh at least ``target_of(total)``.

    The values are the per-point squared distances that the passes with
    ``source`` (a state to rebuild, or the mixture's initial partition)
    compute; ``results`` are those of a first pass with ``histogram=(0, 0, 1)``.
    None when no value counts.
    """
    total = solver._sum(results, "total").item()
    vmax = max(r["vmax"] for r in results)
    if total <= 0 or vmax < 0:
        return None
    target = target_of(total)
    lo, hi = 0.0, vmax
    count = sum(r["n"] for r in results)
    for _ in range(64):
        if count <= QUANTILE_GATHER or not hi > lo:
            break
        if not np.all(np.diff(np.linspace(lo, hi, QUANTILE_BINS + 1)) > 0):
            break  # too few floats in [lo, hi] for the bins (numpy refuses them)
        results = solver._pass(**source, histogram=(lo, hi, QUANTILE_BINS),
                               positive=positive)
        counts = solver._sum(results, "counts")
        n_in = np.sum([r["n_in"] for r in results], axis=0)
        cum = solver._sum(results, "below").item() + np.cumsum(counts)
        b = int(min(np.searchsorted(cum, target, side="left"), QUANTILE_BINS - 1))
        edges = np.linspace(lo, hi, QUANTILE_BINS + 1)
        if (float(edges[b]), float(edges[b + 1])) == (lo, hi):
            break
        lo, hi, count = float(edges[b]), float(edges[b + 1]), int(n_in[b])
    if count > QUANTILE_GATHER:  # ties: a bin of a few floats; walk its distinct values
        value = lo  # the values below lo weigh less than the target
        while True:
            results = solver._pass(**source, above=value, positive=positive)
            if sum(r["at_most"] for r in results) >= target:
                return value
            value = min(r["next_above"] for r in results)
    results = solver._pass(**source, gather=(lo, hi), positive=positive)
    values = np.concatenate([r["values"] for r in results])
    weights = np.concatenate([r["weights"] for r in results])
    order = np.argsort(values, kind="stable")
    cum = solver._sum(results, "below").item() + np.cumsum(weights[order])
    i = int(np.searchsorted(cum, target, side="left"))
    return float(values[order][min(i, len(order) - 1)])


# -- the mixture (Algorithm 2) ---------------------------------------------------------------
def _mixture_block_solver(X, w, spec):
    """A numpy solver of one block; the mixture's EM runs in float64 whatever X's dtype."""
    return _block_solver(np.ascontiguousarray(X, dtype=np.float64),
                         np.asarray(w, dtype=np.float64), spec)


def _mixture_rebuild(solver, prev, start):
    """The block's part of a state: the E-step at its parameters and flagged points."""
    centers, weights, cov, flagged, lam, weighted = prev
    n = solver.geometry.n_samples
    penalty = solver.log_penalty if weighted else solver.penalty
    return solver.model.state_at(solver, centers, weights, cov, flagged.block(start, start + n, n),
                                 lam, penalty)


def _mixture_records(outliers, start):
    """Outliers of a block as global records (see :class:`MixtureFlagged`)."""
    return {"index": np.asarray(outliers.index, dtype=np.int64) + start,
            "shrink": np.asarray(outliers.shrink, dtype=np.float64),
            "weights": np.asarray(outliers.weights, dtype=np.float64),
            "sizes": np.asarray(outliers.sizes, dtype=np.float64),
            "euclidean": (None if outliers.euclidean is None
                          else np.asarray(outliers.euclidean, dtype=np.float64))}


def mixture_block_pass(X, w, start, spec):
    """Everything one pass of the mixture asks of one block; small float64 results only.

    ``partition`` = initial means: the nearest-mean partition of the initial
    parameters (its counts, the quantile questions on its squared distances,
    and with ``threshold`` the sums of the initial Sigma over the points
    within it).  Otherwise ``prev`` = (means, pi, Sigma, flagged, lam,
    weighted) of the state to rebuild (its E-step), then optionally
    ``fixed`` = (lam, weighted): the O- and E-steps with its parameters held
    (:meth:`MixtureModel.fixed_centre_step`), which replace it;
    ``step`` = (means, lam, weighted): the O-step at the new means with the
    state's Sigma and posteriors and the sums of the covariance step;
    ``means``: the sums of the next means; and the questions of lambda
    selection (``critical``, ``lambda_max``, ``scores``).
    """
    solver = _mixture_block_solver(X, w, spec)
    model = solver.model
    out = {}
    with single_blas():
        if spec.get("partition") is not None:
            centers = spec["partition"]
            labels, d2 = model.initial_partition(solver, centers)
            out["sizes"] = np.bincount(labels, minlength=model.n_clusters).astype(np.float64)
            if spec.get("threshold") is not None:
                keep = d2 <= spec["threshold"]
                out["initial"] = np.asarray(
                    model.initial_statistics(solver, centers, labels, d2, keep), np.float64)
                out["kept"] = int(np.count_nonzero(keep))
            _quantile_answers(out, d2, solver.sample_weight, spec)
            return out
        state = _mixture_rebuild(solver, spec["prev"], start)
        if spec.get("fixed") is not None:
            lam, weighted = spec["fixed"]
            penalty = solver.log_penalty if weighted else solver.penalty
            state = model.fixed_centre_step(solver, state, state.centers, state.products, lam,
                                            penalty)
        out["objective"] = float(state.objective)
        out["records"] = _mixture_records(state.outliers, start)
        if spec.get("means"):
            totals, sums = model.mean_statistics(solver, state)
            out["resp_totals"] = np.asarray(totals, dtype=np.float64)
            out["sums"] = np.asarray(sums, dtype=np.float64)
        if spec.get("step") is not None:
            centers, lam, weighted = spec["step"]
            cov = state.covariance
            penalty = solver.log_penalty if weighted else solver.penalty
            products = solver.geometry.products(centers, cov.metric)
            outliers = model.outlier_step(solver, products, cov, state.memberships,
                                          state.outliers, lam, penalty)
            # spherical: Euclidean products, the distances the sigma-step needs
            D = model.distances(solver, products, outliers, centers) \
                if cov.kind == "spherical" else None
            out["covariance"] = model.covariance_statistics(solver, lam, penalty,
                                                            state.memberships, centers,
                                                            outliers, D)
            out["step_records"] = _mixture_records(outliers, start)
        if spec.get("critical") is not None:
            crit_weighted, top = spec["critical"]
            penalty = solver.log_penalty if crit_weighted else solver.penalty
            out["critical"] = _top(model.critical_lambdas(solver, state, penalty), top)
        if spec.get("lambda_max"):
            out["residual_max"] = float(model.residual_max(solver, state))
        if spec.get("scores") is not None:
            scores = np.asarray(model.point_scores(solver, state), dtype=np.float64)
            out["score_sum"] = float(scores.sum())
            out["score_top"] = _top(scores, spec["scores"])
    return out


def _mixture_block_map(X, w, start, spec):
    """MAP components (-1 for flagged points) or posteriors of one block."""
    solver = _mixture_block_solver(X, w, spec)
    with single_blas():
        state = _mixture_rebuild(solver, spec["prev"], start)
    if spec["what"] == "labels":
        labels = np.asarray(state.labels, dtype=np.intp).copy()
        labels[state.outliers.index] = -1
        return labels
    if spec["what"] == "memberships":
        return np.asarray(state.memberships)
    raise ValueError(spec["what"])


class DaskMixtureSolver(DaskSolver):
    """:class:`DaskSolver` for the robust mixture (:class:`MixtureModel`, Algorithm 2).

    A state on the driver is (pi, means, Sigma, the flagged points' records,
    lam): the posteriors are a function of them (:meth:`MixtureModel.state_at`),
    so every pass starts with the E-step of the state it continues.  An EM
    iteration needs two sums over all the points, the means' before the
    O-step and the covariance's after it, hence two passes:

    1. the E-step of the state, and the sums of its next means (eqs. (22),
       (23)), which the driver divides;
    2. the E-step again, the O-step at the new means with the previous Sigma
       and posteriors (eq. (24)), and the sums of the covariance step
       (eq. (26)/(27)); the driver forms Sigma.

    Pass 1 of the next iteration then gives the cost of eq. (8) of the new
    state (the stopping rule's) and its flagged points' sizes in the new
    Sigma's norm.  The initial parameters (nearest-mean proportions, the
    consistent scatter of the closest half of the points) take a pass for the
    partition, the exact median of its squared distances (per-block
    histograms, :func:`smallest_reaching`) and a pass for the scatter; they
    are computed once per initialisation.
    """

    _block_pass = staticmethod(mixture_block_pass)
    _block_map = staticmethod(_mixture_block_map)

    def __init__(self, X, sample_weight, model, penalty, log_penalty=None, **kwargs):
        super().__init__(X, sample_weight, model, penalty, log_penalty, **kwargs)
        self.dtype = np.dtype(np.float64)
        self._initial = {}

    def _prev(self, state):
        return (state.centers, state.weights, state.covariance, state.flagged, state.lam,
                state.weighted)

    def _merge_records(self, results, name="records"):
        parts = [r[name] for r in results]
        euclidean = None if parts[0]["euclidean"] is None else \
            np.concatenate([p["euclidean"] for p in parts])
        return MixtureFlagged(
            np.concatenate([p["index"] for p in parts]).astype(np.int64),
            np.concatenate([p["shrink"] for p in parts]),
            np.concatenate([np.reshape(p["weights"], (-1, self.n_clusters)) for p in parts]),
            np.concatenate([p["sizes"] for p in parts]), euclidean)

    def _state_from(self, results, params):
        """The state of parameters ``params`` from a pass that rebuilt it with ``means``."""
        pending = {"resp_totals": self._sum(results, "resp_totals"),
                   "sums": self._sum(results, "sums")}
        return replace(params, flagged=self._merge_records(results),
                       objective=self._sum(results, "objective").item(), pending=pending,
                       history=[], n_iter=0, converged=False)

    # -- the initial parameters -----------------------------------------------------------
    def initial_parameters(self, centers):
        """(pi, Sigma) of :meth:`MixtureModel.initial_parameters` at the initial means.

        The threshold is numpy's median of the squared distances to the
        nearest mean (the mean of the two middle values for an even count),
        found exactly: the lower middle value by :func:`smallest_reaching`,
        the upper one as the next value above it.
        """
        key = centers.tobytes()
        if key not in self._initial:
            model, n = self.model, self.n_samples
            source = {"partition": centers}
            first = self._pass(**source, histogram=(0.0, 0.0, 1))
            counts = self._sum(first, "sizes")
            low = smallest_reaching(self, source, first, lambda total: (n - 1) // 2 + 1)
            threshold = low
            if n % 2 == 0:
                results = self._pass(**source, above=low)
                at_most = sum(r["at_most"] for r in results)
                high = low if at_most >= n // 2 + 1 else min(r["next_above"] for r in results)
                threshold = (low + high) / 2.0
            results = self._pass(**source, threshold=threshold)
            total = self._sum(results, "initial")
            kept = sum(r["kept"] for r in results)
            self._initial[key] = model.initial_from_statistics(counts, total, kept)
        return self._initial[key]

    # -- states -----------------------------------------------------------------------------
    def init_state(self, init, lam=None):
        """Cold state at initial means; with a finite lam, the O- and E-steps at them too."""
        centers, exclude = init
        if exclude is not None:
            raise ValueError("points left out of the initial covariance are not supported "
                             "on Dask data")
        centers = np.asarray(centers, dtype=np.float64)
        weights, cov = self.initial_parameters(centers)
        start = DaskState(centers, MixtureFlagged.empty(self.n_clusters, cov.kind == "spherical"),
                          math.inf, False, weights=weights, covariance=cov)
        if lam is None or not np.isfinite(lam):
            return self._state_from(self._pass(prev=self._prev(start), means=True), start)
        lam = float(lam)
        results = self._pass(prev=self._prev(start), fixed=(lam, False), means=True)
        return self._state_from(results, replace(start, lam=lam, weighted=False))

    def run(self, state, lam, weighted=False, max_iter=None, tol=None):
        """EM iterations at ``lam`` from ``state`` (two passes each), stopping as
        :meth:`Solver.run` does for the mixture: on the cost, with the flagged set fixed."""
        lam = float(lam)
        max_iter = self.max_iter if max_iter is None else min(max_iter, self.max_iter)
        tol = self.tol if tol is None else tol
        em_stop = EMStop(state, lam, tol * self.weight_total)
        model = self.model
        if state.pending is None:
            state = self._state_from(self._pass(prev=self._prev(state), means=True), state)
        history, converged, it = [], False, 0
        for it in range(1, max_iter + 1):
            previous = state
            centers, weights = model.means_and_weights(state.pending["resp_totals"],
                                                       state.pending["sums"])
            results = self._pass(prev=self._prev(state), step=(centers, lam, weighted))
            totals = {name: self._sum([r["covariance"] for r in results], name)
                      for name in results[0]["covariance"]}
            cov = model.covariance_from_statistics(totals, self.n_samples, centers)
            new = DaskState(centers, self._merge_records(results, "step_records"), lam, weighted,
                            weights=weights, covariance=cov)
            state = self._state_from(self._pass(prev=self._prev(new), means=True), new)
            history.append(state.objective)
            _progress.iteration()
            if self.verbose:
                print(f"  iteration {it}: objective {state.objective:.6g}, "
                      f"outliers {state.n_outliers}")
            converged = em_stop(state.objective, lambda: np.array_equal(
                previous.flagged.index, state.flagged.index))
            if converged:
                break
        return state.finished(history, it, converged)

    @property
    def weight_total(self):
        if getattr(self, "_weight_total", None) is None:
            self._weight_total = float(self.sample_weight.sum().compute())
        return self._weight_total

    # -- the questions of lambda selection -------------------------------------------------
    def lambda_max(self, state):
        """max_n ||r_n||_{Sigma^-1} (:meth:`MixtureModel.lambda_max`): a max over the blocks."""
        results = self._pass(prev=self._prev(state), lambda_max=True)
        return max(r["residual_max"] for r in results)

    def default_lambda(self, state):
        """sqrt(chi^2_p quantile(0.999)), as :meth:`Solver.default_lambda` (no data needed)."""
        from scipy import stats

        from .selection import DEFAULT_FALSE_ALARM

        return math.sqrt(stats.chi2.isf(DEFAULT_FALSE_ALARM, self.dim))
