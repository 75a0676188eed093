"""The compiled kernels of the hard K-means pass over a dense NumPy X (numba).

For hard robust K-means with the group penalty (convex or log), everything
an iteration does after the centre division is a function of one row of
G = X M^T and O(C) numbers per point, so
:func:`~robustclust._core._fused.hard_pass` does it in one chunked pass over X,
as scikit-learn's Lloyd loop does for K-means:

* r_n = x_n - m_l with l the previous label: ||r_n||^2 = ||x||^2 + ||m_l||^2 - 2 g_l;
* the O-step of eq. (11), s_n = [1 - tau / ||r_n||]_+, o_n = s_n r_n (for
  the log penalty the limit of the MM steps of eq. (30),
  :func:`~robustclust._core.penalties.log_limit`);
* the U-step of eq. (15): for an inlier the nearest centre; for an outlier
  (y = x - o = t x + s m_l, t = 1 - s) the distances
  ||y - m_c||^2 = t^2 ||x||^2 + 2 t (s g_l - g_c) + s^2 ||m_l||^2 - 2 s <m_l, m_c> + ||m_c||^2
  from the row of G and the C x C matrix M M^T;
* the numerators and denominators of the next centre step: the IRLS weights
  a_n = min(1, (lam/2) / ||x_n - m_{c(n)}||) of the convex penalty, or the
  rows y_n of eq. (9) for the log penalty;
* the stopping rule's ||O_t - O_{t-1}||_F from both iterates' (s, l, M).

No outlier row is gathered and no set is formed: the cost of an iteration does
not depend on how many points are flagged.  Once the centres move little,
Elkan's bounds (:class:`~robustclust._core._fused.Bounds`) show for most rows that the nearest centre
has not changed; such a row costs one product <x, m_l> instead of a row of
G, and only the other rows go through the BLAS call.  An inlier's terms of the
centre step stay in running sums while an upper bound on its distance shows
that it is still an inlier of the same centre: such a row is not read at all,
and a pass late in a run reads little more than its outliers' rows and those
near a boundary.  These are the same formulas as
:class:`~robustclust._core.geometry.Products` and
:class:`~robustclust._core.models.KMeansModel` (which the tests check), written
per row; in a pass without bounds with the convex penalty and the IRLS
centre step, the rows whose previous label is their nearest centre (most of
them) take one path for inlier and outlier (:func:`_common_rows`).

The kernels take their arguments grouped in named tuples (:data:`Rows`,
:data:`Centres`, ...); :mod:`robustclust._core._fused` decides which bounds
a pass uses, splits the rows into blocks and runs them on threads.  The
kernels here call no compiled function of another file, as numba's cache
does not see a change to one; the kernels of :mod:`robustclust._core._passes`
call :func:`group_shrink` (see its note).
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit

#: Modes of the pass: the O-step residual against the previous label, or against
#: the nearest centre (a cold start, where the previous labels are the nearest).
_PREVIOUS, _NEAREST = 0, 1


@njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def _row_dot(X, i, M, c):
    """<x_i, m_c> accumulated in float64 (reassociated: the compiler vectorizes it)."""
    acc = 0.0
    for j in range(X.shape[1]):
        acc += X[i, j] * M[c, j]
    return acc


@njit(nogil=True, cache=True)
def _margin(kerr, xx, mmax):
    """The rounding margin of the bounds for a row with ||x||^2 = xx, in squared
    distance: kerr sqrt(xx max||m||^2), bounded by the mean of the two (no
    square root).  The test and the storing of the bounds must use the same one."""
    return kerr * 0.5 * (xx + mmax)


@njit(nogil=True, cache=True)
def group_shrink(r2, z0, lam, tau0, eps, weighted):
    """The group O-step of one point: (s, ||r||) with o = s r, for a residual of
    squared norm ``r2`` (||r|| is 0 when s = 0 and it was not needed).

    Convex penalty: s = [1 - tau0 / ||r||]_+ (eq. (11)).  Log penalty
    (``weighted``): the limit of the MM steps of eq. (30) from ||o|| = ``z0``,
    the arithmetic of :func:`~robustclust._core.penalties.log_limit`
    (tau0 = lam / (2 eps) is the threshold from z0 = 0).

    Also called by the cached kernels of :mod:`robustclust._core._passes`:
    numba's cache does not see a change to a function of another file, so a
    change here must touch that file too (or clear ``__pycache__``).
    """
    s = 0.0
    r_ = 0.0
    if weighted:
        if z0 > 0.0 or r2 > tau0 * tau0:
            r_ = math.sqrt(r2)
            disc = (r_ + eps) * (r_ + eps) - 2.0 * lam
            root = math.sqrt(max(disc, 0.0))
            zhi = 0.5 * ((r_ - eps) + root)
            zlo = 0.5 * ((r_ - eps) - root)
            if zhi > 0.0 and (z0 == 0.0 or (disc >= 0.0 and z0 > zlo)):
                s = zhi / r_
    elif r2 > tau0 * tau0:
        r_ = math.sqrt(r2)
        s = 1.0 - tau0 / r_
    return s, r_


# -- the kernels' arguments, grouped by what they are --------------------------------
# (numba passes a named tuple's fields as it passes arguments: unpacking one
# costs nothing)

#: The data, read only: X (N, p), ||x_n||^2 and the sample weights (N,).
Rows = namedtuple("Rows", "X sq_norms sample_weight")
#: This pass's centres M and what follows from them: M^T in X's precision
#: (p, C), M in float64 (C, p), ||m_c||^2, M M^T, each centre's squared
#: distance to its nearest other one (``sep``), the distances between centres
#: rounded down (``cdist``, infinite on the diagonal) and the squares of their
#: row minima (``sepd2``, the bounds' Hamerly test), and the bounds' rounding
#: margin (``kerr``, ``mmax``: :func:`_margin`).
Centres = namedtuple("Centres", "t M mm MM sep cdist sepd2 kerr mmax")
#: The previous iterate, per point: the labels of its U-step (the O-step's
#: residuals are against them), ||o_n|| (the log penalty's thresholds) and,
#: for the stopping rule's ||O_t - O_{t-1}||_F, s_n, the label o_n was
#: computed against and the centres M_{t-1}.
Previous = namedtuple("Previous", "labels size shrink ref M")
#: The O-step's rule and what the pass computes: lambda, the threshold tau0
#: of a point without previous outlier, the log penalty's eps and whether it
#: is used, the IRLS centre rule, the mode (_PREVIOUS or _NEAREST) and
#: whether the shift is wanted.
Rule = namedtuple("Rule", "lam tau0 eps weighted irls mode need_shift")
#: Elkan's bounds as this pass uses them (:class:`~robustclust._core._fused.Bounds`): the mode
#: (_NO_BOUNDS, _STORE_BOUNDS, _USE_BOUNDS), each row's nearest centre, its
#: lower bounds L (N, C) and their least (``lmin``) with the pass that stored
#: them (``stamp``), the centres' drift since the bounds were stored
#: (``cum``; ``since`` per stored pass, ``now`` this pass), whether the
#: bounds are streamed, and the rows held in the running sums (``frozen``)
#: with their upper bounds.
BoundsView = namedtuple("BoundsView", "mode near L cum lmin stamp since now stream frozen upper")
#: The per-point outputs (N,): labels, the labels the O-step used (``ref``),
#: s_n, ||o_n||, and the l0 costs (shape (0,) for none).
Outputs = namedtuple("Outputs", "labels ref shrink size costs")
#: One block of rows, start:stop in chunks of ``chunk_rows``, with its own
#: accumulators: the next centre step's sums (C, p) and weights (C,), the
#: pass's totals (``acc``, 7: see :func:`_hard_block`) and the running sums of
#: the rows the bounds hold (``fsums``, ``fweights``, ``fsq``).
Block = namedtuple("Block", "start stop chunk_rows sums weights acc fsums fweights fsq")
#: A chunk's scratch arrays for :func:`_open_rows` (see there).
Scratch = namedtuple("Scratch", "slot todo rows_of xbuf gsettled pend leaving")

_NO_NEAR = np.empty(0, dtype=np.int32)
_NO_L = np.empty((0, 0), dtype=np.float32)
_NO_LMIN = np.empty(0, dtype=np.float32)
_NO_CUM = np.empty(0)
_NO_COSTS = np.empty(0)
_NO_FROZEN = np.empty(0, dtype=np.int8)
_NO_FSUMS = np.empty((0, 0))

#: How the pass uses the distance bounds: none, all rows computed and their
#: bounds stored, or rows the bounds settle skipped.
_NO_BOUNDS, _STORE_BOUNDS, _USE_BOUNDS = 0, 1, 2


@njit(nogil=True, cache=True)
def _open_rows(rows, cen, prev_labels, tau0, bnd, blk, out, scratch, lo, hi):
    """The rows lo:hi of a pass with the bounds in use (:func:`_hard_block`):
    which are settled and which go through the BLAS call.

    Elkan's test: l_c, a lower bound on ||x - m_c|| (stored minus the
    centres' drift since), against an upper bound on ||x - m_a||, with a
    margin e that covers the rounding of every product, so a settled row has
    the nearest centre the full computation finds.

    A row the running sums hold and the bounds settle is not read
    (``slot[r]`` = -2) and its outputs are written here; the others are
    listed in ``todo`` (offsets r, in order): ``slot[r]`` = -1 for a row
    settled by its exact distance to its nearest centre (whose product is
    ``gsettled[r]``), else k, its row in ``xbuf[:nf]`` (``rows_of[k]`` = r).
    Returns (nf, number listed, rows not read, rows Hamerly's test left
    open, rows tested).
    """
    X, sq_norms, sample_weight = rows
    M64, mm, cdist, sepd2, kerr, mmax = cen.M, cen.mm, cen.cdist, cen.sepd2, cen.kerr, cen.mmax
    near, L, cum, lmin, stamp, since = bnd.near, bnd.L, bnd.cum, bnd.lmin, bnd.stamp, bnd.since
    stream, frozen, upper = bnd.stream, bnd.frozen, bnd.upper
    fsums, fweights, fsq = blk.fsums, blk.fweights, blk.fsq
    labels, shrink, size = out.labels, out.shrink, out.size
    slot, todo, rows_of, xbuf, gsettled, pend, leaving = scratch
    C = L.shape[1]
    p = X.shape[1]
    n_unread = n_open = n_tested = 0
    # 1. the tests that read no row of X; the rows they leave open are pending
    npend = 0
    for r in range(hi - lo):
        i = lo + r
        a = near[i]
        leave = False
        if frozen[i]:
            # an inlier of m_a at the last pass, in the running sums: it stays
            # one, of the same nearest centre, when its upper bound u (plus the
            # margin) is within the threshold and the tests below hold with u
            # for ||x - m_a|| (then its row is not read: nothing it adds has
            # changed)
            xx = sq_norms[i]
            u = (upper[i] + cum[a]) * (1.0 + 4.5e-16)  # that sum's rounding
            need2 = u * u + _margin(kerr, xx, mmax)
            if need2 <= tau0 * tau0:
                open_ = 0
                if not stream:
                    h = lmin[i] - since[stamp[i]]
                    open_ = -1
                    if (h > 0.0 and h * h >= need2) or sepd2[a] >= 4.0 * need2:
                        open_ = 0
                    n_tested += 1
                    n_open -= open_
                if open_ != 0 or stream:
                    open_ = 0
                    need = math.sqrt(need2)
                    for c in range(C):
                        open_ += (L[i, c] - cum[c] < need) & (cdist[a, c] - u < need)
                if open_ == 0:
                    slot[r] = -2
                    n_unread += 1
                    # an inlier of m_a, o = 0: the output arrays mostly hold
                    # these values already (those of two passes ago): a line
                    # only read is not written back
                    if labels[i] != a:
                        labels[i] = a
                    if shrink[i] != 0.0:
                        shrink[i] = 0.0
                    if size[i] != 0.0:
                        size[i] = 0.0
                    continue
            # otherwise out of the running sums, and tested or computed below
            frozen[i] = 0
            leave = True
        pend[npend] = r
        leaving[npend] = leave
        npend += 1
    # 2. the pending rows of X, gathered by one loop of independent loads:
    #    rows scattered over X each miss the cache, and here the misses
    #    overlap (one at a time, they cost most of a late pass)
    for q in range(npend):
        i = lo + pend[q]
        for j in range(p):
            xbuf[q, j] = X[i, j]
    # 3. the pending rows: out of the running sums; a row whose nearest centre
    #    was its label is tested with its exact distance; the others are
    #    computed
    nf = 0
    for q in range(npend):
        r = pend[q]
        todo[q] = r
        i = lo + r
        a = near[i]
        if leaving[q]:
            xx = sq_norms[i]
            w = sample_weight[i]
            fweights[a] -= w
            fsq[a] -= w * xx
            for j in range(p):
                fsums[a, j] -= w * xbuf[q, j]
        if prev_labels[i] == a:
            xx = sq_norms[i]
            ga = _row_dot(xbuf, q, M64, a)
            e = _margin(kerr, xx, mmax)
            ua2 = max(xx + mm[a] - 2.0 * ga, 0.0) + e
            need2 = ua2 + e
            # first Hamerly's test, from one number per row: the least lower
            # bound at the row's last storing, less the most any centre has
            # moved since (h >= need, squared), or half the gap to m_a's
            # nearest other centre (sepd[a] - ua >= need holds when sepd[a] >=
            # 2 need, as ua <= need); then each centre's own bound (cdist[a, a]
            # is infinite: c = a never counts; a loop the compiler vectorizes,
            # without a branch per centre).  The same tests as for a frozen row
            # above, written out twice: as a function of their own (scalars
            # and the row views L[i], cdist[a]) a late float32 pass at 1%
            # flagged took 6.7 against 4.8 ms, inlined by numba 10.2 ms
            open_ = 0
            if not stream:
                h = lmin[i] - since[stamp[i]]
                open_ = -1
                if (h > 0.0 and h * h >= need2) or sepd2[a] >= 4.0 * need2:
                    open_ = 0
                n_tested += 1
                n_open -= open_
            if open_ != 0 or stream:
                open_ = 0
                ua = math.sqrt(ua2)
                need = math.sqrt(need2)
                for c in range(C):
                    open_ += (L[i, c] - cum[c] < need) & (cdist[a, c] - ua < need)
            if open_ == 0:
                slot[r] = -1
                gsettled[r] = ga
                continue
        slot[r] = nf
        rows_of[nf] = r
        if nf != q:
            for j in range(p):
                xbuf[nf, j] = xbuf[q, j]
        nf += 1
    return nf, npend, n_unread, n_open, n_tested


@njit(nogil=True, cache=True)
def _nearest_rows(G, half, mm, low, nearest):
    """For each row k of G = X_chunk M^T, the nearest centre (the first of
    equals) and ||m_c||^2 - 2 <x, m_c> for it (float64).

    The nearest centre maximizes <x, m_c> - ||m_c||^2 / 2, compared in X's
    precision as scikit-learn does (for float64 X the order of ||m_c||^2 - 2
    <x, m_c>, scaling by 2 being exact); a float32 search without
    conversions costs 60% of a float64 one.

    Four rows at a time: each row's search is a chain of dependent
    max-and-select steps (one per centre, a few cycles each), and four
    independent chains keep the processor busy (15-20% less time than one
    row at a time, the same labels; comparing 16 centres of a row at once as
    LLVM vectors saved 4-7.5% of a late plain pass at C = 16, below what a
    trick must buy to stay, and is gone; so did asking for the next chunk's
    rows during the search, LLVM's prefetch: 3-6% of a plain pass at p = 32,
    C = 16, 0-2% at p = 8, C = 64 and p = 128, C = 8).
    """
    C = G.shape[1]
    m = G.shape[0]
    k = 0
    while k + 4 <= m:
        h = half[0]
        b0 = G[k, 0] - h
        b1 = G[k + 1, 0] - h
        b2 = G[k + 2, 0] - h
        b3 = G[k + 3, 0] - h
        a0 = a1 = a2 = a3 = 0
        for c in range(1, C):
            h = half[c]
            d0 = G[k, c] - h
            d1 = G[k + 1, c] - h
            d2 = G[k + 2, c] - h
            d3 = G[k + 3, c] - h
            u0 = d0 > b0
            u1 = d1 > b1
            u2 = d2 > b2
            u3 = d3 > b3
            b0 = d0 if u0 else b0
            b1 = d1 if u1 else b1
            b2 = d2 if u2 else b2
            b3 = d3 if u3 else b3
            a0 = c if u0 else a0
            a1 = c if u1 else a1
            a2 = c if u2 else a2
            a3 = c if u3 else a3
        low[k] = mm[a0] - 2.0 * G[k, a0]
        low[k + 1] = mm[a1] - 2.0 * G[k + 1, a1]
        low[k + 2] = mm[a2] - 2.0 * G[k + 2, a2]
        low[k + 3] = mm[a3] - 2.0 * G[k + 3, a3]
        nearest[k] = a0
        nearest[k + 1] = a1
        nearest[k + 2] = a2
        nearest[k + 3] = a3
        k += 4
    for k in range(k, m):
        best = G[k, 0] - half[0]
        arg = 0
        for c in range(1, C):
            d = G[k, c] - half[c]
            better = d > best
            best = d if better else best
            arg = c if better else arg
        low[k] = mm[arg] - 2.0 * G[k, arg]
        nearest[k] = arg


@njit(nogil=True, cache=True)
def _store_bounds(G, lo, rows_of, nearest, sq_norms, mm, kerr, mmax, cum, own, now,
                  near, L, lmin, stamp):
    """Elkan's bounds of the rows of a chunk that went through the BLAS call
    (row k of G is x_{lo + rows_of[k]}): the nearest centre, each lower bound
    l_c = sqrt(||x - m_c||^2 - e) stored as l_c + cum[c] rounded down to
    float32, and the least of them over the other centres (Hamerly's)."""
    C = G.shape[1]
    # a local scratch row: the compiler knows that no argument aliases it
    # (as an argument, its square roots stayed scalar)
    lrow = np.empty(C)
    for k in range(G.shape[0]):
        i = lo + rows_of[k]
        arg = nearest[k]
        xx = sq_norms[i]
        near[i] = arg
        e = _margin(kerr, xx, mmax)
        # three loops: the first two vectorize (a minimum in the same loop
        # kept the square roots scalar: a pass that stores the bounds 15.8
        # against 11.8 ms); c = arg is left out of the least bound by an
        # infinite term
        for c in range(C):
            lrow[c] = math.sqrt(max(xx + mm[c] - 2.0 * G[k, c] - e, 0.0))
        for c in range(C):
            v = lrow[c] + cum[c]
            L[i, c] = v - 1.2e-7 * v  # rounds down to float32
        least = np.inf
        for c in range(C):
            least = min(least, lrow[c] + own[arg, c])
        lmin[i] = least - 1.2e-7 * least
        stamp[i] = now


@njit(nogil=True, cache=True)
def _shift2(X, i, s, s0, M64, l, M_old, l0):
    """||o_n - o_n'||^2 of one point for the stopping rule's ||O_t - O_{t-1}||_F:
    o = s (x - m_l) now, o' = s0 (x - m'_l0) at the previous iterate."""
    diff2 = 0.0
    for j in range(X.shape[1]):
        dj = (s - s0) * X[i, j] - s * M64[l, j] + s0 * M_old[l0, j]
        diff2 += dj * dj
    return diff2


@njit(nogil=True, cache=True, error_model="numpy")
def _common_rows(rows, cen, prev, rule, out, blk, m, lo, nearest, low, rest, tot):
    """The common rows of a chunk of ``m`` rows of a plain pass (every row
    through the BLAS call; convex group penalty, IRLS centre step, no running
    sums): those whose previous label l is their nearest centre.

    Two loops.  The first computes every row's numbers from contiguous
    per-row arrays, with no branch and no gather, so that the compiler
    vectorizes it (square roots and divisions four rows at a time): ||r||^2
    = ||x||^2 + (||m_l||^2 - 2 <x, m_l>), the O-step's s and ||r|| from
    :func:`group_shrink` (inlined: inlier and outlier differ only by value), the
    IRLS weight w t with t = 1 - s (= tau0 / ||r|| for an outlier), and the
    objective term: t^2 ||r||^2 + lam ||o|| for an outlier (its
    ||y - m_l||^2, y = x - o = m_l + t r), ||r||^2 for an inlier.  The
    second adds them up row by row (the labels, s and ||o|| written where
    they changed, the centre sums, the shift); it leaves to
    :func:`_hard_block`'s loop (listed in ``rest``; their number is
    returned) the rows whose label is not their nearest centre and the
    outliers whose U-step needs more than l's margin (s sep_l above a
    rounding margin keeps l).  One row at a time, with the O-step's division
    on the path of a branch that the processor mispredicted for one row in
    three at 40% flagged, a plain pass took 12-15% longer (single thread).
    ``tot`` adds the shift^2, ||O||^2 and objective terms (per chunk, so
    those sums are reassociated to rounding; ||r||^2 is rounded as the
    nearest-centre search's, the objective term as t^2 ||r||^2: both differ
    from :func:`_hard_block`'s expressions by rounding only).  The numpy
    error model: a lane that is not used may divide by zero."""
    X, sq_norms, sample_weight = rows
    mm, sep, M64 = cen.mm, cen.sep, cen.M
    prev_labels, old_shrink, old_ref, M_old = prev.labels, prev.shrink, prev.ref, prev.M
    lam, tau0, mode, need_shift = rule.lam, rule.tau0, rule.mode, rule.need_shift
    labels, ref, shrink, size, costs = out
    sums, weights = blk.sums, blk.weights
    p = X.shape[1]
    tt = tau0 * tau0
    xxs = sq_norms[lo:lo + m]
    ws = sample_weight[lo:lo + m]
    prevs = prev_labels[lo:lo + m]
    # per row: s, ||o||, IRLS weight, objective term; and 0 (not a common
    # row), 1 (a common inlier) or 2 (a common outlier)
    num = np.empty((4, m))
    code = np.empty(m, dtype=np.int8)
    for k in range(m):
        a = nearest[k]
        common = (a if mode == 1 else prevs[k]) == a
        r2 = xxs[k] + low[k]
        r2 = 0.0 if r2 < 0.0 else r2
        over = r2 > tt
        s, r_ = group_shrink(r2, 0.0, lam, tau0, 1.0, False)  # r_ = 0 unless over
        t = 1.0 - s
        sz = s * r_
        num[0, k] = s
        num[1, k] = sz
        num[2, k] = ws[k] * t
        num[3, k] = ws[k] * ((t * t * r2 + lam * sz) if over else r2)
        code[k] = common + common * over
    if costs.shape[0]:
        for k in range(m):
            costs[lo + k] = max(xxs[k] + low[k], 0.0)
    if mode == 1:
        for k in range(m):
            ref[lo + k] = nearest[k]
    n_rest = 0
    t_shift = t_onorm = t_obj = 0.0
    for k in range(m):
        arg = nearest[k]
        s = num[0, k]
        c = code[k]
        # (no short circuit: one branch, almost never taken)
        if (c == 0) | ((c == 2) & (not s * sep[arg] > 1e-12 * (xxs[k] + mm[arg]))):
            rest[n_rest] = k
            n_rest += 1
            continue
        i = lo + k
        sz = num[1, k]
        if labels[i] != arg:
            labels[i] = arg
        if shrink[i] != s:
            shrink[i] = s
        if size[i] != sz:
            size[i] = sz
        t_obj += num[3, k]
        t_onorm += sz * sz
        wa = num[2, k]
        weights[arg] += wa
        for j in range(p):
            sums[arg, j] += wa * X[i, j]
        if need_shift:
            s0 = old_shrink[i]
            if s > 0.0 or s0 > 0.0:
                t_shift += _shift2(X, i, s, s0, M64, arg, M_old, old_ref[i])
    tot[0] += t_shift
    tot[1] += t_onorm
    tot[2] += t_obj
    return n_rest


@njit(nogil=True, cache=True)
def _hard_block(rows, cen, prev, rule, bnd, out, blk):
    """The rows of one block (:class:`Block`) of :func:`~robustclust._core._fused.hard_pass`.

    The products of a chunk's rows are one BLAS call, laid out (rows, C) as
    in scikit-learn's Lloyd loop (the (C, rows) layout, whose nearest-centre
    search vectorizes over the rows, ran its BLAS call slower: a float64 plain
    pass 16.8 against 12.4 ms on an AVX-512 machine).  With
    ``bounds_mode`` = _USE_BOUNDS a row whose bounds show that its previous
    nearest centre is still the nearest costs one product instead of C, and
    only the other rows of the chunk go through the BLAS call
    (:func:`_open_rows`).

    With bounds, an inlier's contribution to the centre step (w x, w, and
    w ||x||^2 for the objective) is kept in the block's running sums
    ``fsums``, ``fweights``, ``fsq`` (``frozen[i]`` = 1) rather than in this
    pass's: while its upper bound on ||x - m_a|| (``upper[i]`` + ``cum[a]``)
    shows that it is still an inlier of the same nearest centre, the row is
    not read at all (see :class:`~robustclust._core._fused.Bounds`).

    ``acc`` receives shift^2, ||O||^2, the objective, the rows through the
    BLAS call, the rows not read, the rows Hamerly's test left open and the
    rows tested.
    """
    X, sq_norms, sample_weight = rows
    centers_t, M64, mm, MM, sep, cdist, _, kerr, mmax = cen
    prev_labels, prev_size, old_shrink, old_ref, M_old = prev
    lam, tau0, eps, weighted, irls, mode, need_shift = rule
    bounds_mode, near, L, cum, lmin, stamp, since, now, stream, frozen, upper = bnd
    labels, ref, shrink, size, costs = out
    start, stop, chunk_rows, sums, weights, acc, fsums, fweights, fsq = blk
    C = centers_t.shape[1]
    p = X.shape[1]
    track = frozen.shape[0] > 0
    simple = irls and not weighted and not track and bounds_mode == 0
    rest = np.empty(chunk_rows, dtype=np.intp)
    tot = np.zeros(3)
    # shift^2, ||O||^2, objective, rows through the BLAS call, rows not read,
    # rows Hamerly's test left open, rows tested (scalars: an array's entry
    # updated row by row is a store and a load on every row's path)
    t_shift = t_onorm = t_obj = 0.0
    t_comp = t_unread = t_open = t_tested = 0
    # own[a, c]: infinite for c = a, else 0 (the least bound over the other centres)
    own = np.zeros((C, C))
    for c in range(C):
        own[c, c] = np.inf
    buf = np.empty((chunk_rows, C), dtype=X.dtype)
    half = (0.5 * mm).astype(X.dtype)
    xbuf = np.empty((chunk_rows if bounds_mode == 2 else 0, p), dtype=X.dtype)
    low = np.empty(chunk_rows)
    nearest = np.empty(chunk_rows, dtype=np.intp)
    dist = np.empty(C)
    grow = np.empty(C)
    # row offsets: of the rows of the BLAS call (rows_of), of the rows this
    # loop goes through (todo: all unless the bounds are in use)
    slot = np.arange(chunk_rows)
    rows_of = np.arange(chunk_rows)
    todo = np.arange(chunk_rows)
    gsettled = np.empty(chunk_rows)
    pend = np.empty(chunk_rows, dtype=np.intp)
    leaving = np.empty(chunk_rows, dtype=np.bool_)
    scratch = Scratch(slot, todo, rows_of, xbuf, gsettled, pend, leaving)
    for lo in range(start, stop, chunk_rows):
        hi = min(stop, lo + chunk_rows)
        m = hi - lo
        if bounds_mode == 2:
            nf, ntodo, n_unread, n_open, n_tested = _open_rows(
                rows, cen, prev_labels, tau0, bnd, blk, out, scratch, lo, hi)
            t_unread += n_unread
            t_open += n_open
            t_tested += n_tested
            Xc = xbuf[:nf]
        else:
            nf = ntodo = m
            Xc = X[lo:hi]
        t_comp += nf
        G = buf[:nf]
        if nf > 0:
            np.dot(Xc, centers_t, G)
            _nearest_rows(G, half, mm, low, nearest)
            if bounds_mode != 0:
                _store_bounds(G, lo, rows_of, nearest, sq_norms, mm, kerr, mmax, cum, own, now,
                              near, L, lmin, stamp)
        listed = todo
        if simple and nf > 0:
            ntodo = _common_rows(rows, cen, prev, rule, out, blk, nf, lo, nearest, low,
                                 rest, tot)
            listed = rest
        for q in range(ntodo):
            r = listed[q]
            i = lo + r
            k = slot[r]
            xx = sq_norms[i]
            # grow: <x_i, m_c> for every c when complete, else only for the nearest
            complete = k >= 0
            if complete:
                arg = nearest[k]
                lowr = low[k]
            else:
                arg = near[i]
                lowr = mm[arg] - 2.0 * gsettled[r]
            if mode == 1:
                l = arg
                ref[i] = l
            else:
                l = prev_labels[i]
            if complete:
                gl = G[k, l]
            else:
                gl = gsettled[r]
            r2 = xx + mm[l] - 2.0 * gl
            if r2 < 0.0:
                r2 = 0.0
            s, r_ = group_shrink(r2, prev_size[i] if weighted else 0.0, lam, tau0, eps,
                                 weighted)
            w = sample_weight[i]
            if costs.shape[0]:
                costs[i] = max(xx + lowr, 0.0)  # to the nearest centre, o = 0
            if track:
                frozen[i] = 0
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
                if t * (lowr - (mm[l] - 2.0 * gl)) + s * sep[l] > 1e-12 * (xx + mm[l]):
                    lab = l
                    best = max(base - t2 * gl - s2 * MM[l, l] + mm[l], 0.0)
                else:
                    if not complete:
                        for c in range(C):
                            grow[c] = gl if c == l else _row_dot(X, i, M64, c)
                    else:
                        for c in range(C):
                            grow[c] = G[k, c]
                    for c in range(C):
                        dist[c] = max(base - t2 * grow[c] - s2 * MM[l, c] + mm[c], 0.0)
                    lab = 0
                    best = dist[0]
                    for c in range(1, C):
                        better = dist[c] < best
                        best = dist[c] if better else best
                        lab = c if better else lab
                labels[i] = lab
                t_obj += w * (best + pen)
                shrink[i] = s
                size[i] = sz
                t_onorm += sz * sz
                if irls:
                    if weighted:
                        # the log penalty: the knee is the next O-step's
                        # threshold, lam / (2 (||o|| + eps)) at this pass's o
                        # (eq. (30))
                        dl = r2 if lab == l else xx + mm[lab] - 2.0 * grow[lab]
                        a = 1.0
                        if dl > 0.0:
                            a = min(lam / (2.0 * (sz + eps)) / math.sqrt(dl), 1.0)
                    else:
                        # a = min(1, tau / ||x - m_lab||); for lab = l: tau / r = t
                        a = t
                        if lab != l:
                            dl = xx + mm[lab] - 2.0 * grow[lab]
                            a = 1.0
                            if dl > 0.0:
                                a = min(tau0 / math.sqrt(dl), 1.0)
                    wa = w * a
                    weights[lab] += wa
                    for j in range(p):
                        sums[lab, j] += wa * X[i, j]
                else:
                    weights[lab] += w
                    for j in range(p):
                        sums[lab, j] += w * (t * X[i, j] + s * M64[l, j])
            if not s > 0.0:
                # an inlier, o = 0: the output arrays mostly hold these values
                # already (those of two passes ago): a line only read is not
                # written back
                if labels[i] != arg:
                    labels[i] = arg
                if shrink[i] != 0.0:
                    shrink[i] = 0.0
                if size[i] != 0.0:
                    size[i] = 0.0
                v = xx + lowr
                if track:
                    # into the running sums, with an upper bound on ||x - m_arg||
                    # (stored less cum[arg], rounded up to float32); the pass's
                    # objective adds their terms from the sums
                    frozen[i] = 1
                    u = math.sqrt(max(v, 0.0) + _margin(kerr, xx, mmax)) - cum[arg]
                    upper[i] = u + 1.2e-7 * abs(u)
                    fweights[arg] += w
                    fsq[arg] += w * xx
                    for j in range(p):
                        fsums[arg, j] += w * X[i, j]
                else:
                    if v > 0.0:
                        t_obj += w * v
                    weights[arg] += w
                    for j in range(p):
                        sums[arg, j] += w * X[i, j]
            if need_shift:
                s0 = old_shrink[i]
                if s > 0.0 or s0 > 0.0:
                    t_shift += _shift2(X, i, s, s0, M64, l, M_old, old_ref[i])
    acc[0] += t_shift + tot[0]
    acc[1] += t_onorm + tot[1]
    acc[2] += t_obj + tot[2]
    acc[3] += t_comp
    acc[4] += t_unread
    acc[5] += t_open
    acc[6] += t_tested
