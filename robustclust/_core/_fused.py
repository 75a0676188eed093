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
per row.  From ``PARALLEL_MIN_ROWS`` rows on, the rows are split over a few
Python threads that each run the compiled GIL-free kernel on their own block,
with BLAS limited to one thread (plain threads rather than numba's ``prange``:
an OpenMP pool spin-waits between calls and, on a busy 2-core machine, made
every BLAS call around it slower).
"""

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from .state import Outliers, State

#: Below this many rows the NumPy iteration is used (0: the pass for every size).
FUSED_MIN_ROWS = 0
#: Below this many rows the pass runs in the calling thread: a parallel launch
#: costs more than it saves.
PARALLEL_MIN_ROWS = 20_000
#: Rows per BLAS product inside the pass (scikit-learn's Lloyd loop uses 256).
CHUNK_ROWS = 256

_N_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                        else (os.cpu_count() or 1)))
_EXECUTOR = None

#: Modes of the pass: the O-step residual against the previous label, or against
#: the nearest centre (a cold start, where the previous labels are the nearest).
_PREVIOUS, _NEAREST = 0, 1


@njit(nogil=True, cache=True, inline="always")
def _g(G, r, c, transposed):
    """Row r, centre c of the chunk's products, whichever layout holds them."""
    if transposed:
        return G[c, r]
    return G[r, c]


@njit(nogil=True, cache=True)
def _hard_block(X, centers, centers_t, M64, mm, MM, sep, sq_norms, sample_weight, prev_labels,
                prev_size, old_shrink, old_ref, M_old, lam, tau0, eps, weighted, irls, mode,
                need_shift, transposed, start, stop, chunk_rows,
                labels, ref, shrink, size, sums, weights, acc):
    """Rows start:stop of :func:`hard_pass`; sums/weights/acc are this block's own.

    The products of a chunk are one BLAS call, laid out as (C, rows) when
    ``transposed`` (then the nearest centres are found for all the chunk's
    rows at once, a loop the compiler vectorizes) or (rows, C).
    """
    C = centers_t.shape[1]
    p = X.shape[1]
    shift2 = 0.0
    onorm2 = 0.0
    objective = 0.0
    if transposed:
        buf = np.empty((C, chunk_rows), dtype=X.dtype)
    else:
        buf = np.empty((chunk_rows, C), dtype=X.dtype)
    low = np.empty(chunk_rows)
    near = np.empty(chunk_rows, dtype=np.intp)
    dist = np.empty(C)
    for lo in range(start, stop, chunk_rows):
        hi = min(stop, lo + chunk_rows)
        m = hi - lo
        if transposed:
            if m == chunk_rows:
                np.dot(centers, X[lo:hi].T, buf)
                G = buf
            else:
                G = np.dot(centers, X[lo:hi].T)
            m0 = mm[0]
            for r in range(m):
                low[r] = m0 - 2.0 * G[0, r]
                near[r] = 0
            for c in range(1, C):
                mc = mm[c]
                row = G[c]
                for r in range(m):
                    d = mc - 2.0 * row[r]
                    better = d < low[r]
                    low[r] = d if better else low[r]
                    near[r] = c if better else near[r]
        else:
            if m == chunk_rows:
                np.dot(X[lo:hi], centers_t, buf)
                G = buf
            else:
                G = np.dot(X[lo:hi], centers_t)
            for r in range(m):
                best = mm[0] - 2.0 * G[r, 0]
                arg = 0
                for c in range(1, C):
                    d = mm[c] - 2.0 * G[r, c]
                    better = d < best
                    best = d if better else best
                    arg = c if better else arg
                low[r] = best
                near[r] = arg
        for r in range(m):
            i = lo + r
            xx = sq_norms[i]
            arg = near[r]
            if mode == 1:
                l = arg
                ref[i] = l
            else:
                l = prev_labels[i]
            gl = _g(G, r, l, transposed)
            r2 = xx + mm[l] - 2.0 * gl
            if r2 < 0.0:
                r2 = 0.0
            tau = tau0
            if weighted and prev_size[i] > 0.0:
                tau = lam / (2.0 * (prev_size[i] + eps))
            s = 0.0
            if r2 > tau * tau:
                r_ = math.sqrt(r2)
                s = 1.0 - tau / r_
            w = sample_weight[i]
            if s > 0.0:
                t = 1.0 - s
                sz = s * r_
                if weighted:
                    pen = lam * math.log1p(sz / eps)
                else:
                    pen = lam * sz
                base = t * t * xx + 2.0 * t * s * gl + s * s * MM[l, l]
                t2, s2 = 2.0 * t, 2.0 * s
                # y = x - o lies on the segment from m_l to x, so D_c - D_l =
                # t (T_c - T_l) + s ||m_c - m_l||^2 with T = mm - 2 g; it is
                # positive for every c != l when t (min T - T_l) + s sep_l > 0
                # (always when m_l is x's nearest centre): then l is the label
                if t * (low[r] - (mm[l] - 2.0 * gl)) + s * sep[l] > 1e-12 * (xx + mm[l]):
                    lab = l
                    best = max(base - t2 * gl - s2 * MM[l, l] + mm[l], 0.0)
                else:
                    for c in range(C):
                        dist[c] = max(base - t2 * _g(G, r, c, transposed) - s2 * MM[l, c]
                                      + mm[c], 0.0)
                    lab = 0
                    best = dist[0]
                    for c in range(1, C):
                        better = dist[c] < best
                        best = dist[c] if better else best
                        lab = c if better else lab
                labels[i] = lab
                objective += w * (best + pen)
                shrink[i] = s
                size[i] = sz
                onorm2 += sz * sz
                if irls:
                    # a = min(1, tau / ||x - m_lab||); for lab = l that is tau / r = t
                    a = t
                    if lab != l:
                        dl = xx + mm[lab] - 2.0 * _g(G, r, lab, transposed)
                        a = 1.0
                        if dl > 0.0:
                            a = min(tau / math.sqrt(dl), 1.0)
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
                v = xx + low[r]
                if v > 0.0:
                    objective += w * v
                shrink[i] = 0.0
                size[i] = 0.0
                weights[arg] += w
                for j in range(p):
                    sums[arg, j] += w * X[i, j]
            if need_shift:
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
    acc[2] += objective


def hard_pass(X, centers, sq_norms, sample_weight, prev_labels, *, lam=np.inf, tau0=np.inf,
              eps=1.0, weighted=False, irls=True, nearest=False, prev_size=None,
              old_shrink=None, old_ref=None, old_centers=None, need_shift=True, out=None,
              n_threads=None, chunk_rows=CHUNK_ROWS):
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
    need_shift : bool, default=True
        Compute that shift (the driver skips it while the centres alone show
        that the run has not converged: it would not change the decision).
    out : dict, optional
        Arrays to write the per-point results into (a previous result that
        nothing refers to any more): fresh arrays cost a page fault per 4 kB
        on first write, a sizeable part of a pass.

    Returns
    -------
    dict with labels, ref (the labels the O-step used), shrink, size (N,),
    sums (C, p) and weights (C,) of the next centre step, shift
    (||O_t - O_{t-1}||_F, NaN when not computed), onorm (||O_t||_F) and the
    objective sum_n w_n costs_n.
    """
    global _EXECUTOR
    n, p = X.shape
    C = centers.shape[0]
    if n_threads is None:
        n_threads = _N_THREADS if n >= PARALLEL_MIN_ROWS else 1
    n_threads = max(1, min(n_threads, n // chunk_rows + 1))
    centers = np.ascontiguousarray(centers, dtype=X.dtype)
    centers_t = np.ascontiguousarray(centers.T)
    M64 = np.ascontiguousarray(centers, dtype=np.float64)
    mm = np.einsum("cj,cj->c", M64, M64)
    MM = M64 @ M64.T
    # squared distance of each centre to its nearest other centre
    gaps = mm[:, None] + mm[None, :] - 2.0 * MM
    np.fill_diagonal(gaps, np.inf)
    sep = np.maximum(gaps.min(axis=1), 0.0) if C > 1 else np.full(C, np.inf)
    if out is None:
        out = {"labels": np.empty(n, dtype=np.intp), "shrink": np.empty(n),
               "size": np.empty(n)}
    labels, shrink, size = out["labels"], out["shrink"], out["size"]
    ref = np.empty(n, dtype=np.intp) if nearest else prev_labels
    need_shift = need_shift and old_shrink is not None
    prev_size = shrink if prev_size is None else prev_size  # unread unless weighted
    old_shrink = shrink if old_shrink is None else old_shrink  # unread unless need_shift
    old_ref = labels if old_ref is None else old_ref
    M_old = M64 if old_centers is None else np.ascontiguousarray(old_centers, dtype=np.float64)
    n_blocks = n_threads
    sums = np.zeros((n_blocks, C, p))
    weights = np.zeros((n_blocks, C))
    acc = np.zeros((n_blocks, 3))
    bounds = [n * b // n_blocks for b in range(n_blocks + 1)]  # np.linspace's, exactly
    mode = _NEAREST if nearest else _PREVIOUS
    # the faster BLAS layout of each dtype, measured: (C, rows) for float64, (rows, C) for float32
    transposed = X.dtype == np.float64
    args = [(X, centers, centers_t, M64, mm, MM, sep, sq_norms, sample_weight, prev_labels,
             prev_size, old_shrink, old_ref, M_old, float(lam), float(tau0), float(eps),
             bool(weighted), bool(irls), mode, bool(need_shift), transposed, bounds[b],
             bounds[b + 1], chunk_rows,
             labels, ref, shrink, size, sums[b], weights[b], acc[b])
            for b in range(n_blocks)]
    if n_blocks == 1:
        _hard_block(*args[0])
    else:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=_N_THREADS)
        for future in [_EXECUTOR.submit(_hard_block, *a) for a in args]:
            future.result()
    # one block: its own arrays (a sum over one block would copy them)
    total, sums, weights = ((acc[0], sums[0], weights[0]) if n_blocks == 1
                            else (acc.sum(axis=0), sums.sum(axis=0), weights.sum(axis=0)))
    return {"labels": labels, "ref": ref, "shrink": shrink, "size": size,
            "sums": sums, "weights": weights,
            "shift": math.sqrt(max(total[0], 0.0)) if need_shift else math.nan,
            "onorm": math.sqrt(max(total[1], 0.0)), "objective": float(total[2])}


def eligible(solver, penalty):
    """Whether ``solver`` runs hard K-means with the group penalty on a dense NumPy X
    (of at least ``FUSED_MIN_ROWS`` rows, which the tests raise to compare with
    the NumPy iteration)."""
    g = solver.geometry
    return (solver.model.hard and not solver.model.mixture and not g.kernel and g.is_numpy
            and not g.sparse and g.n_samples >= FUSED_MIN_ROWS and penalty.name == "group")


def _thresholds(lam, penalty):
    """(tau0, eps) of the pass for ``penalty`` at ``lam``."""
    if not np.isfinite(lam):
        return np.inf, 1.0
    return penalty.threshold(lam), (penalty.eps if penalty.weighted else 1.0)


class _PassOutliers(Outliers):
    """The outliers of a pass, as its per-point arrays; the k-row form on first use.

    Most states of a run are only read for their cost, so the O(N) scan for
    the outliers' indices is left until someone asks.
    """

    def __init__(self, result):
        self.shrink_full = result["shrink"]
        self.sizes_full = result["size"]
        self.weights_full = result["ref"]
        self.rows = None
        self._index = None

    def _compress(self):
        if self._index is None:
            self._index = np.flatnonzero(self.shrink_full)
        return self._index

    index = property(lambda self: self._compress())
    shrink = property(lambda self: self.shrink_full[self._compress()])
    sizes = property(lambda self: self.sizes_full[self._compress()])
    euclidean = sizes
    weights = property(lambda self: self.weights_full[self._compress()])


def _outliers(result):
    """The outliers of a pass's per-point arrays."""
    return _PassOutliers(result)


def _state(solver, centers, result, key):
    # no per-point costs: only reseeding needs them (models.KMeansModel.divide)
    return State(centers, None, result["labels"], None, _outliers(result), None,
                 result["objective"], pending=(result["sums"], result["weights"], key, result))


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
    """The driver's step for :func:`eligible` solvers: one :func:`hard_pass` per iteration.

    Its results alternate between two sets of arrays: the state of iteration
    t is written where that of t - 2 was, which nothing refers to any more
    (the driver keeps only the current state; the state a run started from
    is never written to).
    """

    def __init__(self, solver, lam, penalty, tol=None):
        self.solver = solver
        self.lam = lam
        self.penalty = penalty
        self.tol = solver.tol if tol is None else tol
        self.irls = solver.model.uses_irls(penalty)
        self.key = ("irls", lam) if self.irls else "eq9"
        self.tau0, self.eps = _thresholds(lam, penalty)
        self.buffers = [None, None]
        self.turn = 0

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
        c_norm = float(np.linalg.norm(centers))
        c_shift = float(np.linalg.norm(centers - state.centers))
        result = hard_pass(g.X, centers, g.sq_norms, solver.sample_weight, state.labels,
                           lam=self.lam, tau0=self.tau0, eps=self.eps,
                           weighted=self.penalty.weighted, irls=self.irls,
                           prev_size=prev["size"], old_shrink=prev["shrink"],
                           old_ref=prev["ref"], old_centers=state.centers,
                           need_shift=c_shift <= self.tol * c_norm,
                           out=self.buffers[self.turn])
        self.buffers[self.turn] = result
        self.turn = 1 - self.turn
        new = _state(solver, centers, result, self.key)
        return new, (c_shift, c_norm, result["shift"], result["onorm"])
