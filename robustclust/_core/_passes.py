"""Compiled iterations of the soft models on a dense NumPy X, few clusters x features (numba).

An iteration of the common-Sigma mixture (:meth:`MixtureModel.iterate
<robustclust._core.models.MixtureModel.iterate>`) or of soft K-means
(:meth:`KMeansModel.iterate <robustclust._core.models.KMeansModel.iterate>`)
on the array path is twenty to thirty array calls through
:class:`~robustclust._core.geometry.Products` (the inner products with the
centres, the outliers' removed distances, their norms, the scatter).  On a
few thousand points in a few dimensions each call costs more in Python than
in arithmetic, and a count search runs hundreds of iterations: at N = 2,000,
p = 2, C = 3 an EM iteration took about 1 ms.  Here the per-point work of
an iteration is two loops over the rows of X:

1. :func:`_mean_sums`: sum_n v_nc and sum_n v_nc (x_n - o_n) with the previous
   outliers' rows: the numerators and denominators of the means (eq. (23),
   v = gamma) or of the centre step (eq. (9), v = u^q w);
2. :func:`_outlier_pass`: r_n = x_n - sum_c w_nc m_c, ||r_n|| in the metric
   (the previous Sigma's for the mixture, Euclidean for K-means), the O-step
   of eqs. (11), (24)-(25), (30) (:func:`~robustclust._core._hard_kernels.group_shrink`)
   and o_n = s_n r_n (kept as the outliers' rows, which the next iteration's
   sums and the stopping rule read); then, with y_n = x_n - o_n, the
   distances ||y_n - m_c||^2 (the U-step's, eq. (14), and the spherical
   E-step's) or the scatter matrix of the covariance step (eq. (26), with
   the majorizer's outlier term).

For diagonal and full Sigma a third loop, :func:`_whitened_distances`,
measures ||y_n - m_c|| and ||o_n|| in the new Sigma's norm.  The covariance from its
sums (:meth:`MixtureModel.covariance_from_statistics`), the E-step
(:func:`~robustclust._core.models.posteriors`), the fuzzy U-step
(:mod:`robustclust._core._soft`) and the centre division are the models'
own functions.  The loops compute the array path's formulas with the
differences taken per row instead of expanded into inner products, so the
two agree to rounding (the tests compare them iterate by iterate).  Beyond
``MAX_WORK`` clusters times features the BLAS products of the array path win.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ._fused import thresholds
from ._hard_kernels import group_shrink  # see its note on numba's cache
from .state import Outliers, State, dense_outliers

#: Largest n_clusters x n_features for which the compiled iterations are used:
#: their loops cost about N C p scalar operations, the array path's BLAS
#: products less once C p passes 24-32 (one EM or soft K-means iteration at
#: N = 2,000 / 20,000: 0.4 / 2.7 ms against 0.9 / 4.4 ms for p = 2, C = 3;
#: 1.4 against 1.3 ms for p = 8, C = 8; 2,700 against 230-330 ms at
#: N = 200,000, p = 32, C = 16).  The tests lower it to -1 to compare the paths.
MAX_WORK = 24

_SPHERICAL, _DIAG, _FULL = 0, 1, 2
#: Rows per block of :func:`_mean_sums` (its columns of a block stay in cache).
_BLOCK = 256
_NO_INDEX = np.empty(0, dtype=np.intp)
_NO_ROWS = np.empty((0, 0))
_NO_SIZES = np.empty(0)

#: :func:`_outlier_pass`'s metric: its kind (_SPHERICAL, _DIAG, _FULL), the
#: scale of a spherical one and P (a diagonal as one row, or the full factor).
Metric = namedtuple("Metric", "kind scale P")
#: The O-step's rule: lambda (the penalty's convention), the threshold tau0 of
#: a point without previous outlier, the log penalty's eps and whether it is used.
OStepRule = namedtuple("OStepRule", "lam tau0 eps weighted")
#: Where :func:`_outlier_pass` writes the O-step: s_n and ||o_n|| (N,), and the
#: flagged points' indices and rows o_n, in order.
OStepOut = namedtuple("OStepOut", "shrink sizes index rows")


@njit(cache=True, nogil=True)
def _mean_sums(X, resp, index, rows, nk, sums):
    """nk_c += sum_n v_nc; sums_c += sum_n v_nc (x_n - o_n) (``resp`` is V)."""
    n, p = X.shape
    C = resp.shape[1]
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        for c in range(C):  # a column of a block at a time: the sum stays in a register
            t = 0.0
            for i in range(start, stop):
                t += resp[i, c]
            nk[c] += t
            for j in range(p):
                t = 0.0
                for i in range(start, stop):
                    t += resp[i, c] * X[i, j]
                sums[c, j] += t
    for k in range(index.shape[0]):
        i = index[k]
        for c in range(C):
            g = resp[i, c]
            for j in range(p):
                sums[c, j] -= g * rows[k, j]


@njit(cache=True, nogil=True)
def _sq_distance(y, M, c):
    """||y - m_c||^2 for a row y and the row c of M."""
    d = 0.0
    for j in range(y.shape[0]):
        t = y[j] - M[c, j]
        d += t * t
    return d


@njit(cache=True, nogil=True)
def _outlier_pass(X, resp, means, metric, prev_size, rule, spherical, lam_model, nk, out, D, S):
    """The O-step of every point and what the next steps sum over, in one loop.

    r_n = x_n - sum_c w_nc m_c and its norm in the metric (spherical: scale
    ||r||^2; diag: sum_j P_j^2 r_j^2; full: ||r P||^2); the O-step of eqs.
    (11), (24)-(25), (30) (:func:`~robustclust._core._hard_kernels.group_shrink`,
    lam in the penalty's convention): s_n, ||o_n|| = s_n ||r_n|| and, for the
    flagged points in order, their indices and rows o_n = s_n r_n.  Then
    y_n = x_n - o_n and

    * ``spherical``: D_nc = ||y_n - m_c||^2; returns (k, sum_nc w_nc D_nc);
    * otherwise S = sum_nc w_nc (y_n - m_c)(y_n - m_c)^T + sum_n (lam_n /
      ||o_n||) o_n o_n^T, the scatter of the covariance step with the
      majorizer's outlier term (lam_n = ``lam_model``, divided by ||o_n|| +
      eps for the log penalty), expanded as sum_n y_n y_n^T - M^T A
      - A^T M + M^T diag(nk) M with A_c = sum_n w_nc y_n and ``nk`` = sum_n
      w_nc, as the array path's scatter; returns (k, 0).

    ``metric``, ``rule``, ``out``: :data:`Metric`, :data:`OStepRule`, :data:`OStepOut`.
    """
    kind, scale, P = metric
    lam, tau0, eps, weighted = rule
    shrink, sizes, index, rows = out
    n, p = X.shape
    C = means.shape[0]
    r = np.empty(p)
    y = np.empty(p)
    ay = np.zeros((C, p))
    trace = 0.0
    k = 0
    for i in range(n):
        for j in range(p):
            v = X[i, j]
            for c in range(C):
                v -= resp[i, c] * means[c, j]
            r[j] = v
        r2 = 0.0
        if kind == 0:
            for j in range(p):
                r2 += r[j] * r[j]
            r2 *= scale
        elif kind == 1:
            for j in range(p):
                t = r[j] * P[0, j]
                r2 += t * t
        else:
            for j in range(p):
                t = 0.0
                for a in range(p):
                    t += r[a] * P[a, j]
                r2 += t * t
        s, norm = group_shrink(r2, prev_size[i] if weighted else 0.0, lam, tau0, eps,
                               weighted)
        shrink[i] = s
        size = s * norm
        sizes[i] = size
        flagged = s > 0
        if flagged:
            index[k] = i
            for j in range(p):
                o = s * r[j]
                rows[k, j] = o
                y[j] = X[i, j] - o
        else:
            for j in range(p):
                y[j] = X[i, j]
        if spherical:
            for c in range(C):
                d = _sq_distance(y, means, c)
                D[i, c] = d
                trace += resp[i, c] * d
        else:
            for a in range(p):
                ya = y[a]
                for b in range(a, p):
                    S[a, b] += ya * y[b]
            if flagged:
                lam_n = lam_model / (size + eps) if weighted else lam_model
                w = lam_n / size
                for a in range(p):
                    oa = w * rows[k, a]
                    for b in range(a, p):
                        S[a, b] += oa * rows[k, b]
            for c in range(C):
                g = resp[i, c]
                for j in range(p):
                    ay[c, j] += g * y[j]
        if flagged:
            k += 1
    if not spherical:
        for a in range(p):
            for b in range(a, p):
                t = 0.0
                for c in range(C):
                    t += nk[c] * means[c, a] * means[c, b] - means[c, a] * ay[c, b] \
                        - ay[c, a] * means[c, b]
                S[a, b] += t
        for a in range(p):
            for b in range(a):
                S[a, b] = S[b, a]
    return k, trace


@njit(cache=True, nogil=True)
def _whitened_distances(X, index, rows, means, kind, P, D, sizes):
    """D_nc = ||y_n - m_c||^2 in the metric of P (diag or full), y_n = x_n - o_n,
    and ``sizes`` = ||o_k|| in that metric for the flagged points."""
    n, p = X.shape
    C = means.shape[0]
    y = np.empty(p)
    w = np.empty(p)
    wm = np.empty((C, p))
    for c in range(C):  # the means in whitened coordinates
        for j in range(p):
            if kind == 1:
                wm[c, j] = means[c, j] * P[0, j]
            else:
                t = 0.0
                for a in range(p):
                    t += means[c, a] * P[a, j]
                wm[c, j] = t
    k = 0
    n_out = index.shape[0]
    for i in range(n):
        if k < n_out and index[k] == i:
            for j in range(p):
                y[j] = X[i, j] - rows[k, j]
            size = 0.0
            for j in range(p):
                if kind == 1:
                    t = rows[k, j] * P[0, j]
                else:
                    t = 0.0
                    for a in range(p):
                        t += rows[k, a] * P[a, j]
                size += t * t
            sizes[k] = math.sqrt(size)
            k += 1
        else:
            for j in range(p):
                y[j] = X[i, j]
        if kind == 1:
            for j in range(p):
                w[j] = y[j] * P[0, j]
        else:
            for j in range(p):
                w[j] = 0.0
            for a in range(p):
                ya = y[a]
                for j in range(p):
                    w[j] += ya * P[a, j]
        for c in range(C):
            D[i, c] = _sq_distance(w, wm, c)


@njit(cache=True, nogil=True)
def _add_to_rows(D, index, values):
    """D[index[k], :] += values[k] (NumPy's fancy-indexed update of a short row
    costs ten times this loop)."""
    for k in range(index.shape[0]):
        for c in range(D.shape[1]):
            D[index[k], c] += values[k]


def _small_dense(solver, penalty):
    """A dense float64 NumPy X (no kernel) with C p at most ``MAX_WORK``, and the
    group penalty.  float32 data keep the array path, whose products are in the
    data's precision (the mixture's estimator converts its data to float64)."""
    g = solver.geometry
    return (not g.kernel and g.is_numpy and not g.sparse and penalty.row_sparse
            and g.X.dtype == np.float64 and g.dim * solver.model.n_clusters <= MAX_WORK)


def mixture_eligible(solver, penalty):
    """Whether ``solver`` runs the common-Sigma mixture where the loops serve
    (:func:`_small_dense`)."""
    model = solver.model
    return model.mixture and model.shared_covariance and _small_dense(solver, penalty)


def kmeans_eligible(solver, penalty):
    """Whether ``solver`` runs soft K-means (q > 1) where the loops serve
    (:func:`_small_dense`)."""
    model = solver.model
    return not model.mixture and not model.hard and _small_dense(solver, penalty)


def _metric(cov):
    """(kind code, scale, P as a 2-D float64 array) of a covariance."""
    if cov.kind == "spherical":
        return _SPHERICAL, cov.scale, np.zeros((1, 1))
    if cov.kind == "diag":
        return _DIAG, 1.0, np.ascontiguousarray(np.asarray(cov.P, dtype=np.float64)[None, :])
    return _FULL, 1.0, np.ascontiguousarray(cov.P, dtype=np.float64)


def _sums(solver, state, V):
    """(sum_n v_nc, sum_n v_nc (x_n - o_n)) with the state's outliers, for (N, C) V."""
    N, p = solver.geometry.X.shape
    prev = dense_outliers(state.outliers, N)
    if prev.count:
        index = prev.index
        rows = np.ascontiguousarray(solver.geometry.outlier_rows(prev, state.centers))
    else:
        index, rows = _NO_INDEX, _NO_ROWS
    C = V.shape[1]
    totals, sums = np.zeros(C), np.zeros((C, p))
    _mean_sums(solver.geometry.X, V, index, rows, totals, sums)
    return totals, sums, prev


def _o_step(solver, W, centers, kind, scale, P, prev, lam, penalty, spherical=True,
            lam_model=0.0, nk=_NO_SIZES, S=_NO_ROWS):
    """:func:`_outlier_pass` (lam in the penalty's convention): (s, ||o||, index,
    rows, D (spherical; else an empty array), trace)."""
    X = solver.geometry.X
    N, p = X.shape
    tau0, eps = thresholds(lam, penalty)
    shrink, sizes, index = np.empty(N), np.empty(N), np.empty(N, dtype=np.intp)
    rows = np.empty((N, p))
    D = np.empty((N, centers.shape[0])) if spherical else _NO_ROWS
    k, trace = _outlier_pass(X, W, centers, Metric(kind, scale, P), prev.sizes_full,
                             OStepRule(lam, tau0, eps, penalty.weighted), spherical, lam_model,
                             nk, OStepOut(shrink, sizes, index, rows), D, S)
    return shrink, sizes, index[:k].copy(), rows[:k].copy(), D, trace


def kmeans_iterate(model, solver, state, lam, penalty):
    """One soft K-means iteration of ``model`` (M-, O- and U-step), as its ``iterate``."""
    from ._soft import soft_memberships

    X = solver.geometry.X
    N, p = X.shape
    # eq. (9): the centres from u^q w and the previous outliers
    cache = state.soft_cache()
    Uq = cache[0] if cache is not None else state.memberships ** model.q
    V = np.ascontiguousarray(Uq * solver.sample_weight[:, None], dtype=np.float64)
    totals, sums, prev = _sums(solver, state, V)
    centers = model.divide(solver, sums, totals, state)
    M = np.ascontiguousarray(centers, dtype=np.float64)
    # O-step with the residual weights u^q / sum u^q of the state (eqs. (11), (12), (30))
    W = np.ascontiguousarray(model.state_weights(solver, state), dtype=np.float64)
    shrink, sizes_full, index, rows, D, _ = _o_step(solver, W, M, _SPHERICAL, 1.0, _NO_ROWS,
                                                    prev, lam, penalty)
    k = index.shape[0]
    sizes = sizes_full[index]
    if k:  # the outliers' penalty enters their distances (eq. (14))
        _add_to_rows(D, index, lam * penalty.value_of_norms(sizes))
    # take: a quarter of the time of W[index] for a short row
    outliers = Outliers(index, shrink=shrink[index], weights=W.take(index, axis=0),
                        sizes=sizes, rows=rows, euclidean=sizes, shrink_full=shrink,
                        sizes_full=sizes_full, weights_full=W)
    # U-step, eq. (14)
    U, Uq, W_next, costs, labels = soft_memberships(D, model.q)
    return State(centers, None, labels, U, outliers, costs, solver.objective_of(costs),
                 soft=(U, Uq, W_next))


def mixture_iterate(model, solver, state, lam, penalty):
    """One EM iteration of ``model`` (a :class:`MixtureModel`), as its ``iterate``."""
    X = solver.geometry.X
    N, p = X.shape
    C = model.n_clusters
    resp = np.ascontiguousarray(state.memberships, dtype=np.float64)
    # eqs. (22)-(23): pi and the means from (gamma, O)
    nk_raw, sums, prev = _sums(solver, state, resp)
    means, weights = model.means_and_weights(nk_raw, sums)
    # O-step with the previous Sigma (eqs. (24)-(25), (30)): the threshold is lam
    cov_old = state.covariance
    kind, scale, P = _metric(cov_old)
    spherical = model.kind == "spherical"
    S = _NO_ROWS if spherical else np.zeros((p, p))
    # ... and the covariance step's sums (eq. (26)/(27)) in the same loop
    shrink, sizes_old, index, rows, D, trace = _o_step(
        solver, resp, means, kind, scale, P, prev, model.penalty_scale * lam, penalty,
        spherical, float(lam), nk_raw, S)
    k = index.shape[0]
    t0 = sizes_old[index]  # ||o_n|| in the previous Sigma's norm
    euclidean = None
    if spherical:
        euclidean = t0 / math.sqrt(scale)
        a = 0.0
        if k:  # sum_n lam_n ||o_n||_2 of eq. (27)
            lam_n = lam / (t0 + penalty.eps) if penalty.weighted else np.full(k, float(lam))
            a = float(lam_n @ euclidean)
        totals = {"trace": trace, "a": a}
    else:
        totals = {"scatter": S}
    cov = model.covariance_from_statistics(totals, N, means)
    # distances and outlier sizes in the new Sigma's norm, then the E-step
    if spherical:
        D *= cov.scale
        sizes = euclidean * math.sqrt(cov.scale)
    else:
        kind, _, P = _metric(cov)
        D, sizes = np.empty((N, C)), np.empty(k)
        _whitened_distances(X, index, rows, means, kind, P, D, sizes)
    sizes_full = np.zeros(N)
    sizes_full[index] = sizes
    return _e_state(model, solver, means, None, weights, cov, resp, D, index, rows, shrink,
                    sizes, sizes_full, euclidean, lam, penalty)


def mixture_fixed_step(model, solver, state, centers, products, lam, penalty):
    """The O-step then the E-step at the parameters of ``state`` (means
    ``centers``, weights, Sigma held fixed), as
    :meth:`MixtureModel.fixed_centre_step` (a cold fit's first step at lam,
    and the assignment of points to a fitted mixture)."""
    X = solver.geometry.X
    N = X.shape[0]
    resp = np.ascontiguousarray(state.memberships, dtype=np.float64)
    means = np.ascontiguousarray(centers, dtype=np.float64)
    cov = state.covariance
    kind, scale, P = _metric(cov)
    prev = dense_outliers(state.outliers, N)
    # the O-step with Sigma's threshold lam, and the Euclidean distances D
    shrink, sizes_full, index, rows, D, _ = _o_step(
        solver, resp, means, kind, scale, P, prev, model.penalty_scale * lam, penalty)
    euclidean = None
    if kind == _SPHERICAL:
        D *= scale
        sizes = sizes_full[index]
        euclidean = sizes / math.sqrt(scale)
    else:  # the distances, and the outliers' norms, in Sigma's norm
        sizes = np.empty(index.shape[0])
        _whitened_distances(X, index, rows, means, kind, P, D, sizes)
        sizes_full = np.zeros(N)
        sizes_full[index] = sizes
    return _e_state(model, solver, centers, products, state.weights, cov, resp, D, index,
                    rows, shrink, sizes, sizes_full, euclidean, lam, penalty)


def _e_state(model, solver, centers, products, weights, cov, resp, D, index, rows, shrink,
             sizes, sizes_full, euclidean, lam, penalty):
    """The state after the O-step's outliers (``resp`` the memberships their
    residuals used) and the E-step at the Mahalanobis distances D."""
    # take: a quarter of the time of resp[index] for a short row
    outliers = Outliers(index, shrink=shrink[index], weights=resp.take(index, axis=0),
                        sizes=sizes, rows=rows, euclidean=euclidean, shrink_full=shrink,
                        sizes_full=sizes_full, weights_full=resp)
    resp_new, log_norm, cost, labels = model._e_step(
        solver, D, weights, cov, sizes if index.shape[0] else None, lam, penalty)
    return State(centers, products, labels, resp_new, outliers, -log_norm, cost,
                 weights=weights, covariance=cov)
