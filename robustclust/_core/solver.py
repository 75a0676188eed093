"""The driver: one loop, one stopping rule and one signature for every model.

:class:`Solver` strings a geometry, a model and a pair of penalties together
and offers the calls that lambda selection (:mod:`robustclust._core.selection`),
the regularization path and the estimators use:

* ``init_state(init, lam=None)``: a cold state from an initialisation (initial
  centres; for the mixture, (means, points to leave out of the initial
  covariance)), with the O- and U-steps run at the initial centres when lam
  is finite (the cycle M -> O -> U simply starts at O);
* ``run(state, lam, weighted=False)``: iterations at lam until the stopping
  rule holds;
* ``assign(start, stages)``: memberships and outliers of the geometry's
  points with the centres of a fitted state held fixed (``predict``);
* ``lambda_max(state)``, ``trimmed_cost(state, s)``, ``default_lambda(state)``,
  ``zero_lambda_ok``.

The stopping rule of K-means is the paper's ||M_t - M_{t-1}||_F <= tol
||M_t||_F, plus the outlier matrix settling in the same relative sense,
||O_t - O_{t-1}||_F <= tol max(||O_t||_F, ||M_t||_F): a run started from a
converged solution with a new penalty must let O settle too.  The mixture's
EM converges linearly, often slowly (a mean moving by 1e-8 per iteration
after hundreds of iterations), so it stops as scikit-learn's GaussianMixture
and mclust do, on the objective: once an iteration has lowered the cost of
eq. (8) by at most tol per unit of sample weight and left the flagged set as
it was, one more iteration runs and the run stops.  That is scikit-learn's
``tol``: its test compares the bounds of the two previous parameter sets
(each E-step scores the parameters before the M-step that follows) and it
returns the parameters of the M-step after the test, so at lam = inf both
stop after the same number of iterations with the same parameters.  Its
first test compares the bound of the initial parameters; so does ours at
lam = inf from a cold state (an initialisation's E-step), while at a finite
lam it waits for the run's second iteration (the first objective may be
that of another penalty).  The test is ``<=`` here, ``<`` there, so
``tol=0`` stops on an iteration that changes the cost by nothing at all,
where scikit-learn runs ``max_iter``.
As there, the run counts as converged once the test has passed: the
iteration after it may still change the flagged set.
"""

import math
from contextlib import contextmanager

import numpy as np

from .. import _progress
from . import _pass_states
from .backend import asarray, float64, scalar, set_masked_rows, to_numpy
from .compiled import lazy_module, worth
from .geometry import dense_rows
from .state import dense_outliers
from .selection import DEFAULT_FALSE_ALARM, default_lambda, robust_distance_threshold
from .threads import blas_limits

_fused = lazy_module("robustclust._core._fused")

stats = lazy_module("scipy.stats", compiled=False)  # imported on first use


class Solver:
    """Runs a model on a geometry for any lambda, warm-started from any state.

    Parameters
    ----------
    geometry : LinearGeometry or KernelGeometry
    model : KMeansModel or MixtureModel
    penalty : GroupPenalty or ElementwisePenalty
        The convex penalty.
    log_penalty : same class with ``weighted=True``, optional
        The penalty of weighted runs.
    sample_weight : array of shape (N,), optional
    max_iter, tol, verbose : see the estimators.
    """

    def __init__(self, geometry, model, penalty, log_penalty=None, *, sample_weight=None,
                 max_iter=300, tol=1e-6, verbose=0):
        if not penalty.row_sparse and (geometry.kernel or model.mixture):
            where = "a kernel feature space" if geometry.kernel else "the mixture's Sigma^-1 norm"
            raise ValueError(f"penalty='{penalty.name}' thresholds coordinates one by one, "
                             f"which {where} does not have; use penalty='group'.")
        self.geometry = geometry
        self.model = model
        self.penalty = penalty
        self.log_penalty = log_penalty
        self.xp = geometry.xp
        n = geometry.n_samples
        if sample_weight is None:
            sample_weight = asarray(np.ones(n), self.xp, like=geometry.sq_norms)
        self.sample_weight = sample_weight
        self.n_clusters = model.n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self._keep_starts = False
        self._last_start = None

    def count_hint(self, s):
        """The count that the next ``critical_lambdas`` calls are read for.

        A solver that gathers only the top s + 1 critical lambdas (the Dask
        solver) needs it; this one computes them all and ignores it.
        """

    @property
    def zero_lambda_ok(self):
        return self.model.zero_lambda_ok

    @property
    def is_numpy_backend(self):
        return self.geometry.is_numpy

    def blas(self):
        """Context for work on this solver's data: BLAS threads as :mod:`.threads` says."""
        return blas_limits(self)

    # -- what the models ask ------------------------------------------------------------
    def objective_of(self, costs):
        """sum_n w_n costs_n."""
        return scalar(self.xp.sum(self.sample_weight * costs))

    def to_host(self, array):
        return to_numpy(array, self.xp)

    def geometry_dtype(self, centers):
        """Centres in the precision the geometry keeps them in (the data's)."""
        dtype = self.geometry.dtype
        return self.xp.astype(centers, dtype, copy=False)

    def products_of(self, state):
        """The state's products (computed when a compiled pass did not keep them)."""
        if state.products is not None:
            return state.products
        metric = state.covariance.metric if state.covariance is not None else None
        return self.geometry.products(state.centers, metric)

    def outlier_distances(self, products, outliers, centers):
        """||x_n - o_n - m_c||^2 for every point and centre, (N, C) (eq. (37)).

        The shrink form through the products (with many outliers,
        :meth:`Outliers.many`, over all points: s_n = 0 leaves the plain
        distance, in the same arithmetic); explicit rows (entry-wise penalty,
        NumPy) through the points themselves.
        """
        if outliers.many(self.geometry.n_samples):
            return products.removed_sq_distances(outliers.shrink_full, outliers.weights_full)
        if not outliers.explicit:
            index = outliers.index
            removed = products.rows(index).removed_sq_distances(outliers.shrink,
                                                                outliers.weights)
            D = products.sq_distances()
            if self.xp is np:
                D[index] = removed
                return D
            # the standard scatters by a boolean mask (rows in index order)
            return set_masked_rows(D, outliers.shrink_full > 0, removed, self.xp)
        D = products.sq_distances()
        Y = dense_rows(self.geometry.X, outliers.index) - outliers.rows
        M = np.asarray(centers, dtype=np.float64)
        D[outliers.index] = np.maximum(np.einsum("ij,ij->i", Y, Y)[:, None] - 2.0 * Y @ M.T
                                       + np.einsum("cj,cj->c", M, M)[None, :], 0.0)
        return D

    def label_distances(self, state):
        """||x_n - m_{label_n}||^2 for every point."""
        return self.residual_sq_norms(state, state.labels)

    def residual_sq_norms(self, state, W):
        """The residual norms of eq. (12) at the state's centres, (N,): through its
        products; for hard labels in the Euclidean norm, when no pass kept them,
        through the products with each row's own centre (no (N, C) array)."""
        if (state.products is None and W.ndim == 1 and state.covariance is None
                and hasattr(self.geometry, "label_sq_norms")):
            return self.geometry.label_sq_norms(state.centers, W)
        return self.products_of(state).residual_sq_norms(W)

    def dense(self, outliers):
        """``outliers`` with their per-point vectors (filled in for the compiled pass's)."""
        return dense_outliers(outliers, self.geometry.n_samples)

    def residual_rows(self, centers, W):
        """``rows -> residual rows`` for the entry-wise O-step (None for the group one)."""
        if self.penalty.row_sparse:
            return None
        return lambda rows: self.geometry.residual_rows(centers, W[rows], rows)

    # -- the interface of lambda selection ---------------------------------------------
    def init_state(self, init, lam=None):
        """Cold state from ``init``; with a finite lam, O and U (or E) at it too."""
        model = self.model
        finite = lam is not None and np.isfinite(lam)
        lam = None if lam is None else float(lam)
        if model.mixture:
            state = self._mixture_start(init)
        else:
            centers = self.geometry_dtype(asarray(init, self.xp, like=self.geometry.sq_norms))
            if worth(self.geometry.n_samples) and _fused.eligible(self, self.penalty):
                return _fused.init_state(self, np.array(centers), lam)
            products = self.geometry.products(centers)
            state = model.start(self, centers, products)
        if finite:
            state = model.fixed_centre_step(self, state, state.centers, state.products, lam,
                                            self.penalty)
        return state

    @contextmanager
    def keeping_starts(self):
        """Context in which the mixture's cold start of the last initialisation
        is kept (:meth:`_mixture_start`); dropped on exit (it is a whole state)."""
        keep = self._keep_starts
        self._keep_starts = True
        try:
            yield
        finally:
            self._keep_starts = keep
            if not keep:
                self._last_start = None

    def _mixture_start(self, init):
        """The mixture's state at the initial parameters of ``init`` = (means,
        excluded mask), O = 0 (E-step).

        Inside :meth:`keeping_starts`, kept for the last ``init`` (the object
        itself): a count search of cold fits starts each of its evaluations
        from one initialisation, and the initial parameters (a partition, a
        trimmed scatter, an E-step: 1.3 ms at 2,000 points) do not depend on
        lam.  States are never modified in place.
        """
        last = self._last_start
        if last is not None and last[0] is init:
            return last[1]
        model = self.model
        centers, exclude = init
        centers = asarray(centers, self.xp, like=self.geometry.sq_norms,
                          dtype=float64(self.xp))
        products, weights, cov = model.initial_parameters(self, centers, exclude)
        if cov.metric is not None:
            products = self.geometry.products(centers, cov.metric)
        state = model.start(self, centers, products, weights, cov)
        if self._keep_starts:
            self._last_start = (init, state)  # holds init: its identity stays its own
        return state

    def run(self, state, lam, weighted=False, max_iter=None, tol=None, settle="fit"):
        """Iterations at ``lam`` from ``state`` until the stopping rule holds.

        ``max_iter`` caps this run below the solver's own cap (screening starts);
        ``tol`` replaces the solver's tolerance for this run (the looser one of a
        count search's intermediate evaluations).  ``settle`` is the stopping
        rule of a model that does not stop on its objective: "fit" (centres and
        outlier matrix moved by at most ``tol`` relative), or "centres" (the
        path's: the flagged set is unchanged and the centres moved by at most
        ``tol`` relative, after at least two iterations, so that the centres
        have seen an O-step at ``lam``; the outlier rows, a function of the
        centres and memberships, are not compared).
        """
        if settle not in ("fit", "centres"):
            raise ValueError(f"settle must be 'fit' or 'centres', got {settle!r}.")
        lam = float(lam)
        state = _pass_states.full_labels(state)  # a start kept by as_start
        max_iter = self.max_iter if max_iter is None else min(max_iter, self.max_iter)
        tol = self.tol if tol is None else tol
        penalty = self.log_penalty if weighted else self.penalty
        if worth(self.geometry.n_samples) and _fused.eligible(self, penalty):
            stepper = _fused.FusedStepper(self, lam, penalty, tol, max_iter)
        else:
            # a model stopping on its objective never reads the shifts, the
            # centres' rule not the outlier matrix's
            shifts = ("none" if self.model.stops_on_objective
                      else "centres" if settle == "centres" else "all")
            stepper = _Stepper(self, lam, penalty, shifts=shifts)
        on_objective = self.model.stops_on_objective
        if on_objective:
            em_stop = EMStop(state, lam, tol * float(scalar(self.xp.sum(self.sample_weight))))
        with blas_limits(self):
            history, converged, it = [], False, 0
            for it in range(1, max_iter + 1):
                previous = state
                state, (c_shift, c_norm, o_shift, o_norm) = stepper.step(state)
                history.append(state.objective)
                _progress.iteration()
                if self.verbose:
                    print(f"  iteration {it}: objective {state.objective:.6g}, "
                          f"outliers {state.n_outliers}")
                if on_objective:
                    converged = em_stop(state.objective, lambda: _same_flagged(
                        previous.outliers, state.outliers, self.xp))
                elif settle == "centres":
                    converged = (it > 1 and c_shift <= tol * c_norm
                                 and _same_flagged(previous.outliers, state.outliers, self.xp))
                else:
                    converged = (c_shift <= tol * c_norm
                                 and o_shift <= tol * max(o_norm, c_norm))
                if converged:
                    break
        return stepper.finish(state.finished(history, it, converged))

    def assign(self, start, stages, max_iter=100):
        """Memberships and outliers of the geometry's points, centres fixed.

        The O- and U-steps (E-steps) of the fit, alternated with the centres
        (and the mixture's weights and Sigma) of the fitted state ``start``
        held fixed until they settle.  ``stages`` is a list of (lam, weighted)
        pairs run one after the other, each started from the previous one's
        result, as in training: [(lam, False)] for the convex penalty,
        [(lam_unweighted, False), (lam, True)] for the weighted variant,
        whose MM reweighting starts from the unweighted solution.  For hard
        K-means and the convex penalty one pass is exact: the nearest centre
        and the prox of the residual (moving x toward its nearest centre keeps
        that centre nearest).  Returns the final state.
        """
        model = self.model
        centers = start.centers
        if (len(stages) == 1 and not stages[0][1] and not model.mixture
                and worth(self.geometry.n_samples) and _fused.eligible(self, self.penalty)):
            # the one exact pass, compiled: no N x C matrices
            return model.settled_assignment(self, centers, float(stages[0][0]))
        cov = start.covariance
        products = self.geometry.products(centers, cov.metric if cov is not None else None)
        if model.mixture:
            state = model.start(self, centers, products, start.weights, cov)
        else:
            state = model.start(self, centers, products)
        for lam, weighted in stages:
            lam = float(lam)
            penalty = self.log_penalty if weighted else self.penalty
            for _ in range(max_iter):
                new = model.fixed_centre_step(self, state, centers, products, lam, penalty)
                settled = _same_assignment(state, new, self.xp)
                state = new
                if settled:
                    break
        return state

    def lambda_max(self, state):
        """Smallest lam at which the O-step flags nothing, from ``state``."""
        return self.model.lambda_max(self, state)

    def critical_lambdas(self, state, weighted=False):
        """For every point, the lam below which the next O-step flags it, (N,) NumPy.

        At the state's parameters a point is flagged iff its residual norm
        exceeds its threshold; that threshold grows with lam, so the point is
        flagged exactly for lam below this value, and the lams that flag
        exactly s points lie between the s-th and (s+1)-th largest of them.
        """
        penalty = self.log_penalty if weighted else self.penalty
        return np.asarray(self.to_host(self.model.critical_lambdas(self, state, penalty)),
                          dtype=np.float64)

    def as_start(self, state):
        """``state`` kept only to start later runs from: the per-point costs it
        holds for reports dropped and its labels made small (the compiled
        pass's, :func:`~robustclust._core._pass_states.as_start`; others as
        they are).  :meth:`as_answer` and :meth:`run` undo it."""
        return _pass_states.as_start(state)

    def as_answer(self, state):
        """A state a search returns: one kept by :meth:`as_start` in its full form."""
        return _pass_states.full_labels(state)

    def trimmed_cost(self, state, n_trim):
        """The l0-constrained cost of eq. (3) at the state's parameters.

        For fixed centres the best choice of at most ``n_trim`` outliers is the
        points with the largest cost; they cost nothing.  Comparable across
        states whatever their own outlier counts (for the mixture, the
        negative log-likelihood of all but the n_trim least likely points).
        """
        scores = np.array(self.to_host(self.model.point_scores(self, state)), dtype=np.float64)
        kept = scores.shape[0] - n_trim
        if n_trim > 0 and kept > 0:
            scores.partition(kept)  # in place: the n_trim largest last, no index array
        return float(scores[:max(kept, 0)].sum())

    def default_lambda(self, state):
        """The data-driven lambda at ``state`` (see :mod:`robustclust._core.selection`).

        K-means: the chi^2 rule on the distances to the nearest centre when the
        feature dimension is known, else twice a robust 0.1% tail of those
        distances.  Mixture: sqrt(chi^2_P quantile(0.999)) (lam is in
        Mahalanobis units) when P is known, else a robust tail of the residual
        norms over sigma.
        """
        dim = self.geometry.feature_dim
        w = self.to_host(self.sample_weight)
        products = self.products_of(state)
        if self.model.mixture:
            if dim is not None:
                return math.sqrt(stats.chi2.isf(DEFAULT_FALSE_ALARM, dim))
            r = np.sqrt(self.to_host(products.residual_sq_norms(state.memberships)))
            return robust_distance_threshold(r) / math.sqrt(state.covariance.value)
        d2 = np.asarray(self.to_host(self.xp.min(products.sq_distances(), axis=1)))
        if dim is not None:
            return default_lambda(d2, w, dim, self.penalty.name)
        return 2.0 * robust_distance_threshold(np.sqrt(d2), w)


class _Stepper:
    """One iteration of the model in the array namespace, and how far it moved."""

    def __init__(self, solver, lam, penalty, shifts="all"):
        self.solver = solver
        self.lam = lam
        self.penalty = penalty
        self.shifts = shifts

    def step(self, state):
        """The next state and (centre shift, centre norm, outlier shift, outlier
        norm): the four None when ``shifts`` is "none" (the stopping rule on the
        objective does not read them), the outlier two when it is "centres"
        (the path's rule: the outlier shift would form every outlier row)."""
        solver = self.solver
        g = solver.geometry
        new = solver.model.iterate(solver, state, self.lam, self.penalty)
        if self.shifts == "none":
            return new, (None, None, None, None)
        c_shift = g.centre_shift(state.centers, new.centers, state.products, new.products)
        c_norm = g.centre_norm(new.centers, new.products)
        if self.shifts == "centres":
            return new, (c_shift, c_norm, None, None)
        o_shift = g.outlier_shift(state.outliers, new.outliers, state.centers, new.centers,
                                  state.products, new.products)
        return new, (c_shift, c_norm, o_shift, g.outlier_norm(new.outliers, new.centers))

    def finish(self, state):
        """The run's last state, as the run returns it."""
        return state


class EMStop:
    """The mixtures' stopping rule (module notes), for one run from ``state`` at ``lam``.

    Called with each iteration's cost (and a function telling whether the
    iteration left the flagged set as it was), it returns True after the
    iteration that follows the first whose gain was at most ``gain_tol``.
    At lam = inf a cold state (an initialisation's E-step, never iterated)
    has the cost of its initial parameters, which scikit-learn's first test
    compares with; at a finite lam a run's first cost may be another lam's,
    so the first test waits for the second iteration.  Written once for
    :meth:`Solver.run` and the Dask mixture's run.
    """

    def __init__(self, state, lam, gain_tol):
        self.gain_tol = gain_tol
        self.last = (state.objective if math.isinf(lam) and state.n_iter == 0
                     and not state.history else None)
        self.settled = False

    def __call__(self, objective, same_flagged):
        converged = self.settled
        if not self.settled and self.last is not None:
            self.settled = abs(self.last - objective) <= self.gain_tol and same_flagged()
        self.last = objective
        return converged


def _same_flagged(a, b, xp):
    """Whether two outlier sets flag the same points."""
    if a.count != b.count:
        return False
    return bool(xp.all(a.index == b.index))


def _same_assignment(old, new, xp):
    """Whether an assignment step changed nothing (to rounding)."""
    a, b = old.outliers, new.outliers
    if a.count != b.count:
        return False
    same = (bool(xp.all(a.index == b.index))
            and bool(xp.all(xp.abs(a.sizes - b.sizes) <= 1e-12 * xp.abs(b.sizes)))
            and bool(xp.all(old.labels == new.labels))
            and (old.memberships is None
                 or bool(xp.all(xp.abs(old.memberships - new.memberships) <= 1e-12))))
    return same


