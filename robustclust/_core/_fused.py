"""The compiled hard K-means iteration: one pass over a dense NumPy X (numba).

For hard robust K-means with the group penalty (convex or log), everything
an iteration does after the centre division is a function of one row of
G = X M^T and O(C) numbers per point, so :func:`hard_pass` does it in one
chunked pass over X, as scikit-learn's Lloyd loop does for K-means:

* r_n = x_n - m_l with l the previous label: ||r_n||^2 = ||x||^2 + ||m_l||^2 - 2 g_l;
* the O-step of eq. (11) (thresholds of eq. (30) for the log penalty):
  s_n = [1 - tau_n / ||r_n||]_+, o_n = s_n r_n;
* the U-step of eq. (15): for an inlier the nearest centre; for an outlier
  (y = x - o = t x + s m_l, t = 1 - s) the distances
  ||y - m_c||^2 = t^2 ||x||^2 + 2 t (s g_l - g_c) + s^2 ||m_l||^2 - 2 s <m_l, m_c> + ||m_c||^2
  from the row of G and the C x C matrix M M^T;
* the numerators and denominators of the next centre step: the IRLS weights
  a_n = min(1, (lam/2) / ||x_n - m_{c(n)}||) of the convex penalty, or the
  rows y_n of eq. (9) for the log penalty;
* the stopping rule's ||O_t - O_{t-1}||_F from both iterates' (s, l, M).

No outlier row is gathered and no set is formed: the cost of an iteration does
not depend on how many points are flagged.  These are the same formulas as
:class:`~robustclust._core.geometry.Products` and
:class:`~robustclust._core.models.KMeansModel` (which the tests check), written
per row.  The rows are split over a few Python threads that each run the
compiled GIL-free kernel on their own block, with BLAS limited to one thread
(plain threads rather than numba's ``prange``: an OpenMP pool spin-waits between
calls and, on a busy 2-core machine, made every BLAS call around it slower).
"""

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from .state import Outliers, State

#: Below this many rows one NumPy iteration is cheaper than a parallel launch.
FUSED_MIN_ROWS = 20_000
#: Rows per BLAS product inside the pass.
CHUNK_ROWS = 512

_N_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                        else (os.cpu_count() or 1)))
_EXECUTOR = None

#: Modes of the pass: the O-step residual against the previous label, or against
#: the nearest centre (a cold start, where the previous labels are the nearest).
_PREVIOUS, _NEAREST = 0, 1


@njit(nogil=True, cache=True)
def _hard_block(X, centers_t, M64, mm, MM, sq_norms, sample_weight, prev_labels, prev_size,
                old_shrink, old_ref, M_old, lam, tau0, eps, weighted, irls, mode,
                start, stop, chunk_rows,
                labels, ref, shrink, size, costs, sums, weights, acc):
    """Rows start:stop of :func:`hard_pass`; sums/weights/acc are this block's own."""
    C = centers_t.shape[1]
    p = X.shape[1]
    shift2 = 0.0
    onorm2 = 0.0
    for lo in range(start, stop, chunk_rows):
        hi = min(stop, lo + chunk_rows)
        G = np.dot(X[lo:hi], centers_t)
        for i in range(lo, hi):
            g = G[i - lo]
            xx = sq_norms[i]
            arg = 0
            low = mm[0] - 2.0 * g[0]
            for c in range(1, C):
                d = mm[c] - 2.0 * g[c]
                if d < low:
                    low = d
                    arg = c
            if mode == 1:
                l = arg
            else:
                l = prev_labels[i]
            ref[i] = l
            r2 = xx + mm[l] - 2.0 * g[l]
            if r2 < 0.0:
                r2 = 0.0
            tau = tau0
            if weighted and prev_size[i] > 0.0:
                tau = lam / (2.0 * (prev_size[i] + eps))
            s = 0.0
            if r2 > tau * tau:
                r = math.sqrt(r2)
                s = 1.0 - tau / r
            w = sample_weight[i]
            if s > 0.0:
                t = 1.0 - s
                sz = s * r
                if weighted:
                    pen = lam * math.log1p(sz / eps)
                else:
                    pen = lam * sz
                base = t * t * xx + 2.0 * t * s * g[l] + s * s * MM[l, l]
                lab = 0
                best = 0.0
                for c in range(C):
                    d = base - 2.0 * t * g[c] - 2.0 * s * MM[l, c] + mm[c]
                    if d < 0.0:
                        d = 0.0
                    if c == 0 or d < best:
                        best = d
                        lab = c
                labels[i] = lab
                costs[i] = best + pen
                shrink[i] = s
                size[i] = sz
                onorm2 += sz * sz
                if irls:
                    dl = xx + mm[lab] - 2.0 * g[lab]
                    a = 1.0
                    if dl > 0.0:
                        a = tau / math.sqrt(dl)
                        if a > 1.0:
                            a = 1.0
                    wa = w * a
                    weights[lab] += wa
                    for j in range(p):
                        sums[lab, j] += wa * X[i, j]
                else:
                    weights[lab] += w
                    for j in range(p):
                        sums[lab, j] += w * (t * X[i, j] + s * M64[l, j])
            else:
                labels[i] = arg
                v = xx + low
                costs[i] = v if v > 0.0 else 0.0
                shrink[i] = 0.0
                size[i] = 0.0
                weights[arg] += w
                for j in range(p):
                    sums[arg, j] += w * X[i, j]
            s0 = old_shrink[i]
            if s > 0.0 or s0 > 0.0:
                lo_ = old_ref[i]
                diff2 = 0.0
                for j in range(p):
                    dj = (s - s0) * X[i, j] - s * M64[l, j] + s0 * M_old[lo_, j]
                    diff2 += dj * dj
                shift2 += diff2
    acc[0] += shift2
    acc[1] += onorm2


def hard_pass(X, centers, sq_norms, sample_weight, prev_labels, *, lam=np.inf, tau0=np.inf,
              eps=1.0, weighted=False, irls=True, nearest=False, prev_size=None,
              old_shrink=None, old_ref=None, old_centers=None, n_threads=None,
              chunk_rows=CHUNK_ROWS):
    """One fused pass over a dense X: O-step, U-step, next centre sums, shift.

    Parameters
    ----------
    X : ndarray of shape (N, p), float64 or float32, C-contiguous
    centers : ndarray of shape (C, p)
        The centres M of this iteration.
    sq_norms, sample_weight : ndarrays of shape (N,)
    prev_labels : ndarray of shape (N,)
        Labels of the previous U-step (the O-step's residuals use them), or
        ignored with ``nearest=True`` (the nearest centre is used).
    lam, tau0, eps, weighted, irls
        lambda, the threshold of a point without previous outlier (lam / 2, or
        lam / (2 eps) for the log penalty), the log penalty's eps and whether
        it is used, and the centre rule for the next iteration.
    prev_size : ndarray of shape (N,), optional
        ||o_n|| of the previous iterate (log-penalty thresholds).
    old_shrink, old_ref, old_centers : optional
        The previous iterate's outliers as (s_n, l_n) per point and its
        centres, for ||O_t - O_{t-1}||_F.

    Returns
    -------
    dict with labels, ref (the labels the O-step used), shrink, size, costs
    (N,), sums (C, p) and weights (C,) of the next centre step, shift
    (||O_t - O_{t-1}||_F) and onorm (||O_t||_F).
    """
    global _EXECUTOR
    n, p = X.shape
    C = centers.shape[0]
    n_threads = max(1, min(n_threads or _N_THREADS, n // chunk_rows + 1))
    centers = np.asarray(centers, dtype=X.dtype)
    centers_t = np.ascontiguousarray(centers.T)
    M64 = np.ascontiguousarray(centers, dtype=np.float64)
    mm = np.einsum("cj,cj->c", M64, M64)
    MM = M64 @ M64.T
    zeros = np.zeros(n)
    prev_size = zeros if prev_size is None else prev_size
    old_shrink = zeros if old_shrink is None else old_shrink
    old_ref = np.zeros(n, dtype=np.intp) if old_ref is None else old_ref
    M_old = M64 if old_centers is None else np.ascontiguousarray(old_centers, dtype=np.float64)
    labels = np.empty(n, dtype=np.intp)
    ref = np.empty(n, dtype=np.intp)
    shrink, size, costs = np.empty(n), np.empty(n), np.empty(n)
    n_blocks = n_threads
    sums = np.zeros((n_blocks, C, p))
    weights = np.zeros((n_blocks, C))
    acc = np.zeros((n_blocks, 2))
    bounds = np.linspace(0, n, n_blocks + 1).astype(np.intp)
    mode = _NEAREST if nearest else _PREVIOUS
    args = [(X, centers_t, M64, mm, MM, sq_norms, sample_weight, prev_labels, prev_size,
             old_shrink, old_ref, M_old, float(lam), float(tau0), float(eps), bool(weighted),
             bool(irls), mode, bounds[b], bounds[b + 1], chunk_rows,
             labels, ref, shrink, size, costs, sums[b], weights[b], acc[b])
            for b in range(n_blocks)]
    if n_blocks == 1:
        _hard_block(*args[0])
    else:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=_N_THREADS)
        for future in [_EXECUTOR.submit(_hard_block, *a) for a in args]:
            future.result()
    total = acc.sum(axis=0)
    return {"labels": labels, "ref": ref, "shrink": shrink, "size": size, "costs": costs,
            "sums": sums.sum(axis=0), "weights": weights.sum(axis=0),
            "shift": math.sqrt(max(total[0], 0.0)), "onorm": math.sqrt(max(total[1], 0.0))}


def eligible(solver, penalty):
    """Whether ``solver`` runs hard K-means on a dense NumPy X large enough for the pass."""
    g = solver.geometry
    return (solver.model.hard and not solver.model.mixture and not g.kernel and g.is_numpy
            and not g.sparse and g.n_samples >= FUSED_MIN_ROWS and penalty.name == "group")


def _thresholds(lam, penalty):
    """(tau0, eps) of the pass for ``penalty`` at ``lam``."""
    if not np.isfinite(lam):
        return np.inf, 1.0
    return penalty.threshold(lam), (penalty.eps if penalty.weighted else 1.0)


def _outliers(result):
    """The sparse outliers of a pass's per-point arrays."""
    index = np.flatnonzero(result["shrink"])
    return Outliers(index, shrink=result["shrink"][index], weights=result["ref"][index],
                    sizes=result["size"][index], shrink_full=result["shrink"],
                    sizes_full=result["size"], weights_full=result["ref"])


def _state(solver, centers, result, key):
    return State(centers, None, result["labels"], None, _outliers(result), result["costs"],
                 solver.objective_of(result["costs"]),
                 pending=(result["sums"], result["weights"], key, result))


def init_state(solver, centers, lam):
    """Cold state at initial centres: nearest centres, then (finite ``lam``) O and U.

    One pass: the residuals of the O-step are those to the nearest centres.
    """
    g = solver.geometry
    penalty = solver.penalty
    tau0, eps = _thresholds(lam if lam is not None else np.inf, penalty)
    finite = lam is not None and np.isfinite(lam)
    irls = solver.model.uses_irls(penalty)
    result = hard_pass(g.X, centers, g.sq_norms, solver.sample_weight,
                       np.zeros(g.n_samples, dtype=np.intp), lam=lam if finite else np.inf,
                       tau0=tau0, eps=eps, irls=irls, nearest=True)
    key = "any" if not finite or not result["shrink"].any() else (("irls", lam) if irls
                                                                   else "eq9")
    return _state(solver, centers, result, key)


class FusedStepper:
    """The driver's step for :func:`eligible` solvers: one :func:`hard_pass` per iteration."""

    def __init__(self, solver, lam, penalty):
        self.solver = solver
        self.lam = lam
        self.penalty = penalty
        self.irls = solver.model.uses_irls(penalty)
        self.key = ("irls", lam) if self.irls else "eq9"
        self.tau0, self.eps = _thresholds(lam, penalty)

    def _previous(self, state):
        """(sums, weights, per-point arrays) of a state for the next pass."""
        solver = self.solver
        pending = state.pending
        if pending is not None and pending[2] in (self.key, "any"):
            return pending[0], pending[1], pending[3]
        V, subtract = solver.model.centre_weights(solver, state, self.lam, self.penalty)
        g = solver.geometry
        sums = g.point_sums(V)
        if subtract and state.n_outliers:
            sums = sums - g.outlier_sums(V, state.outliers, state.centers)
        o = solver.dense(state.outliers)
        ref = o.weights_full
        if ref is None:
            ref = np.zeros(g.n_samples, dtype=np.intp)
            ref[o.index] = o.weights
        return sums, V.totals(np), {"shrink": o.shrink_full, "size": o.sizes_full, "ref": ref}

    def step(self, state):
        solver = self.solver
        g = solver.geometry
        sums, totals, prev = self._previous(state)
        centers = solver.model.divide(solver, sums, totals, state)
        result = hard_pass(g.X, centers, g.sq_norms, solver.sample_weight, state.labels,
                           lam=self.lam, tau0=self.tau0, eps=self.eps,
                           weighted=self.penalty.weighted, irls=self.irls,
                           prev_size=prev["size"], old_shrink=prev["shrink"],
                           old_ref=prev["ref"], old_centers=state.centers)
        new = _state(solver, centers, result, self.key)
        c_norm = float(np.linalg.norm(centers))
        shifts = (float(np.linalg.norm(centers - state.centers)), c_norm, result["shift"],
                  result["onorm"])
        return new, shifts
