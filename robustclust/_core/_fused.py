"""The compiled hard K-means iteration: :func:`hard_pass` over a dense NumPy X,
the driver's step (:class:`FusedStepper`) and Elkan's bounds between passes.

:func:`hard_pass` does an iteration's O-step, U-step, next centre sums and
shift in one chunked pass over X, the kernels of
:mod:`robustclust._core._hard_kernels` (their module notes give the
formulas).  A run stores the bounds only when ``STORE_MIN_PASSES_LEFT``
passes may follow and a probe of the rows predicts that most will settle
(80%; in float32 90%, settling and staying inliers).  From
``PARALLEL_MIN_ROWS`` rows on, the rows are split into blocks of decreasing
size (:func:`block_edges`), which a few Python threads (the calling one among
them) take in turn and run through the compiled GIL-free kernel, each block
with its own sums (added in block order: the result does not depend on which
thread ran which block), with BLAS limited to one thread (plain threads
rather than numba's ``prange``: an OpenMP pool spin-waits between calls and,
on a busy 2-core machine, made every BLAS call around it slower).
"""

import math
import os
import threading
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from ._hard_kernels import (_NEAREST, _NO_BOUNDS, _NO_COSTS, _NO_CUM, _NO_FROZEN, _NO_FSUMS,
                            _NO_L, _NO_LMIN, _NO_NEAR, _PREVIOUS, _STORE_BOUNDS, _USE_BOUNDS,
                            Block, BoundsView, Centres, Outputs, Previous, Rows, Rule,
                            _hard_block)
from .compiled import worth
from ._pass_states import ParkedOutliers, park, pass_state

# -- the pass's constants --------------------------------------------------------------
# Each with the measurement behind it, and set only here: the kernels take
# what follows from them as arguments.

#: Below this many rows the NumPy iteration is used (0: the pass for every size).
FUSED_MIN_ROWS = 0
#: Below this many rows the pass runs in the calling thread: a parallel launch
#: costs more than it saves.
PARALLEL_MIN_ROWS = 20_000
#: Fewest features from which a run keeps distance bounds (below, a product
#: <x, m> costs little more than the test that would skip it).
BOUNDS_MIN_DIM = 8
#: Most N x C bounds (float32) a run keeps: 2^25 entries, 128 MB.
BOUNDS_MAX_ENTRIES = 2 ** 25
#: Least N C p from which a run keeps them: below, the products they could
#: save cost less than their bookkeeping per pass (measured: the weighted
#: path on sklearn's digits, N C p = 690,000, ran 25% slower with them).
BOUNDS_MIN_WORK = 10_000_000
#: Rows per BLAS product inside the pass: as many as make ``CHUNK_BYTES`` of
#: X, within [``CHUNK_ROWS``, ``CHUNK_ROWS_MAX``] (:func:`chunk_rows_for`).
#: scikit-learn's Lloyd loop uses 256; with few features a product of 256
#: rows is too small for the BLAS kernel (N = 200,000, p = 32, C = 16, one
#: thread: the chunked products took 4.2 ms in float32 with 256 rows, 3.1 ms
#: with 1024; a whole plain pass 14.3 against 13.3 ms at 40% flagged).
CHUNK_ROWS = 256
CHUNK_ROWS_MAX = 1024
CHUNK_BYTES = 2 ** 18
#: In a parallel pass each block takes this share of the rows still left,
#: divided by the number of threads (guided scheduling, :func:`block_edges`),
#: and at least ``BLOCK_MIN_CHUNKS`` chunks: the first blocks are large and
#: the last ones small, so that neither thread waits long for the other's last
#: block.  With eight equal blocks a thread, the threads of a float32 fit at
#: 40% flagged were busy 95% of a pass (92-94% with four), with these 97-98%.
BLOCK_SHARE = 0.5
BLOCK_MIN_CHUNKS = 2
#: A bound is read as L - cum in float64, rounded by up to 1.1e-16 (L + cum);
#: with cum at most max ||x|| that stays well inside the margin of the test
#: (at least 2 p 1.1e-16 max ||x|| in distance), and bounds after drifts that
#: large would settle nothing anyway.
RESET_DRIFT = 1.0
#: Passes after which the bounds are stored anew (each pass keeps a C-vector).
MAX_HISTORY = 4096
#: Share of the probe rows that bounds stored now must be predicted to settle
#: at the next pass for a run to store them (see :meth:`Bounds.worth_storing`).
STORE_MIN_SETTLED = 0.8
#: The same in float32, where the share counts only the rows that stay
#: inliers (the running sums hold them unread).  There a pass with the bounds
#: costs per row read about three times, and per row held unread about 0.4
#: times, what a plain pass costs per row (late passes on bench_kmeans's data
#: at 8% and 40% flagged, one thread), so it breaks even at about 77% unread;
#: with 0.8 a 40-iteration fit at 8% flagged stored at its 14th pass and its
#: next five passes cost 1.1-1.25 times a plain one.  With 0.9 it stores at
#: the 21st and every pass after costs 0.75-0.95 times a plain one (per
#: iteration over passes 20-40: 0.87-0.89 times the time with 0.8 in two
#: interleaved runs of nine, 0.94 at 1% flagged; in float64 0.9 cost 1.06-1.2
#: times 0.8).
STORE_MIN_SETTLED_FLOAT32 = 0.9
#: Rows of X on which that prediction is made.
PROBE_ROWS = 1024
#: Fewest passes that may follow a pass for it to store the bounds: storing
#: costs about half a plain pass more, and the first passes after it save
#: little (the running sums are being filled), so fewer cannot repay it
#: (measured on bench_kmeans's data: a 20-iteration fit that stored them at
#: its 15th pass ran 3-8% slower than without them).
STORE_MIN_PASSES_LEFT = 8
#: Share of the tested rows whose Hamerly test fails above which the next
#: pass reads every tested row's C bounds in order instead of only theirs:
#: scattered, each of those reads waits for memory (measured: a late float32
#: pass on bench_kmeans's data, 43% failing, 10.5 ms -> 9.0 ms).
STREAM_SHARE = 0.25

_N_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                        else (os.cpu_count() or 1)))
_EXECUTOR = None


def run_blocks(kernel, blocks, n_threads=None):
    """``kernel(*args)`` for each ``args`` of ``blocks``, on up to ``n_threads``
    threads (default: the cores this process may use, at most 8), the calling
    one among them; each thread takes the next block when it is free.

    ``kernel`` is a compiled GIL-free (``nogil``) function that writes only
    into its block's own arrays; its return values are dropped.
    """
    global _EXECUTOR
    n_threads = min(_N_THREADS if n_threads is None else n_threads, len(blocks))
    if n_threads <= 1:
        for args in blocks:
            kernel(*args)
        return
    if _EXECUTOR is None:
        _EXECUTOR = ThreadPoolExecutor(max_workers=max(1, _N_THREADS - 1))
    queue = iter(blocks)
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                args = next(queue, None)
            if args is None:
                return
            kernel(*args)

    # the calling thread works too (one hand-over fewer)
    futures = [_EXECUTOR.submit(work) for _ in range(n_threads - 1)]
    work()
    for future in futures:
        future.result()


def block_edges(n, n_threads, chunk_rows):
    """Where the blocks of rows of a pass start and end: [0, ..., n].

    One block for one thread.  Otherwise guided scheduling: each block takes
    ``BLOCK_SHARE`` of the rows still left divided by ``n_threads``, rounded
    up to whole chunks and at least ``BLOCK_MIN_CHUNKS`` chunks (the last block
    takes what is left).  The threads take the blocks in order as they become
    free, so the large first blocks cost few hand-overs and the small last
    ones leave little for one thread to finish alone.  The edges depend on n,
    ``n_threads`` and ``chunk_rows`` only: each block's running sums
    (:class:`Bounds`) stay tied to the same rows from pass to pass.
    """
    if n_threads <= 1 or n <= chunk_rows:
        return [0, n]
    least = BLOCK_MIN_CHUNKS * chunk_rows
    edges = [0]
    while edges[-1] < n:
        size = max(least, int(BLOCK_SHARE * (n - edges[-1]) / n_threads))
        size = -(-size // chunk_rows) * chunk_rows
        edges.append(min(n, edges[-1] + size))
    return edges


def _block_zeros(n_blocks, width):
    """Zeros of shape (n_blocks, width), each block's row 64 bytes clear of the
    next one's, so that the threads never write to one cache line (false
    sharing cost a third of a pass)."""
    pad = 8
    return np.zeros((n_blocks, width + 2 * pad))[:, pad:pad + width]


def _moves(new, old):
    """How far each centre moved from ``old`` to ``new``: ||m_c - m_c'||, (C,)."""
    return np.sqrt(((new - old) ** 2).sum(axis=1))


@njit(nogil=True, cache=True)
def _settled_share(Xs, sq, M, mm, drift, reach_max=np.inf, need=0.0):
    """The share of the rows of ``Xs`` that Elkan's test would settle after each
    centre m_c moved by ``drift[c]``, with exact bounds: every other centre
    stays farther than the nearest one after both have moved (one compiled
    loop: as NumPy expressions, 180 microseconds a pass); with ``reach_max``,
    only the rows whose distance to the nearest centre, plus its drift, stays
    within it count.  With ``need``, the loop stops as soon as more than a
    share 1 - ``need`` of the rows have failed and returns the share so far,
    which is below ``need`` as the whole share would be (in a float32 run at
    36% flagged the prediction fails at every pass: it cost 0.2-0.4 ms of a
    9 ms pass in which the other thread waited)."""
    C = M.shape[0]
    n = Xs.shape[0]
    G = np.dot(Xs, np.ascontiguousarray(M.T))
    D = np.empty(C)
    settled = 0
    failed = 0
    for i in range(n):
        a = 0
        for c in range(C):
            D[c] = math.sqrt(max(sq[i] + mm[c] - 2.0 * G[i, c], 0.0))
            if D[c] < D[a]:
                a = c
        reach = D[a] + drift[a]
        ok = reach <= reach_max
        if ok:
            for c in range(C):
                if c != a and D[c] - drift[c] < reach:
                    ok = False
        settled += ok
        if not ok:
            failed += 1
            # the most the whole share can be, rounded as the share itself
            # (a bound n - need n on the failures, rounded otherwise, stopped
            # one row early where the share was exactly need)
            if (n - failed) / n < need:
                break
    return settled / max(n, 1)


class Bounds:
    """Elkan's distance bounds of the passes over one X (see :func:`hard_pass`).

    ``near[i]`` is x_i's nearest centre at the last pass, whose centres are
    ``centers`` (None before the first), and ``L[i, c] - cum[c]`` a lower
    bound on ||x_i - m_c||, where ``cum`` adds up how far each centre has
    moved since (a bound is stored as l + cum, so a pass need not touch
    every bound).  They hold whatever state or lambda the next pass starts
    from: a pass adds its centres' drift from ``centers``.
    """

    def __init__(self, n, n_clusters, scale, probe=None):
        self.near = np.zeros(n, dtype=np.int32)
        self.L = np.empty((n, n_clusters), dtype=np.float32)
        self.cum = np.zeros(n_clusters)
        self.centers = None
        #: per row, the least bound over the other centres when it was last
        #: stored, and the pass that stored it; ``history[t]`` is ``cum`` at
        #: pass t since the last pass that stored every row
        self.lmin = np.zeros(n, dtype=np.float32)
        self.stamp = np.zeros(n, dtype=np.int32)
        self.history = np.empty((64, n_clusters))
        self.passes = 0
        #: drifts added up past ``RESET_DRIFT`` times this (max ||x||): the next
        #: pass stores the bounds anew (see RESET_DRIFT)
        self.scale = scale
        #: plain passes to run before the bounds are stored again, and how
        #: many times in a row they have not paid
        self.wait = 0
        self.misses = 0
        #: rows of X (float64) and their squared norms on which a pass that
        #: would store the bounds first predicts whether they will pay
        #: (:meth:`worth_storing`); None: store whenever the bounds are stale
        self.probe = probe
        #: the centres of the last pass (whether it used the bounds or not)
        #: and how far the fastest of them moved in it
        self.last = None
        self.last_move = None
        #: whether the next pass reads every tested row's C bounds in order
        #: (see ``STREAM_SHARE``)
        self.stream = False
        #: the running sums (see :func:`~robustclust._core._hard_kernels._hard_block`): ``frozen[i]`` = 1 for
        #: the rows they hold, ``upper[i]`` + ``cum[near[i]]`` an upper bound
        #: on their distance to their centre, and per block of rows, the sums
        #: of w x, w and w ||x||^2 of those rows by centre; they belong to the
        #: per-point arrays ``owner`` (the labels of the pass that left them)
        self.frozen = np.zeros(n, dtype=np.int8)
        self.upper = np.zeros(n, dtype=np.float32)
        self.running = None
        self.owner = None

    def running_sums(self, chained, sample_weight, edges, p):
        """The running sums (sums, weights, squares) of each block of rows, if
        they hold what the last pass left (``chained``: its per-point arrays are
        the previous iterate of this one) for these weights and blocks; else
        cleared (every row then goes through this pass)."""
        C = self.L.shape[1]
        run = self.running
        if (run is not None and chained and run[3] is sample_weight
                and run[4] == edges and run[0].shape[2] == p):
            return run[:3]
        n_blocks = len(edges) - 1
        sums = _block_zeros(n_blocks, C * p).reshape(n_blocks, C, p)
        weights = _block_zeros(n_blocks, C)
        squares = _block_zeros(n_blocks, C)
        self.frozen[:] = 0
        self.running = (sums, weights, squares, sample_weight, list(edges))
        return self.running[:3]

    def moved(self, centers):
        """Note the centres of a pass (for :meth:`worth_storing`)."""
        if self.last is not None:
            self.last_move = float(_moves(centers, self.last).max())
        self.last = centers.copy()

    def worth_storing(self, centers, mm, reach_max=np.inf, need=None):
        """Whether bounds stored at ``centers`` would settle at least ``need``
        (default ``STORE_MIN_SETTLED``) of the probe rows at the next pass, if the
        centres move by then as they did since the last pass, scaled by how
        that move compares with the one before (the moves shrink as a run
        converges).  Storing costs most of a pass more than a plain one: while
        the centres still move far, the next pass would settle few rows.
        With ``reach_max`` (the O-step's threshold), only rows that stay
        inliers count: those the running sums can hold unread.  For the log
        penalty that is the threshold of a row without previous outlier;
        rows already flagged have a lower one, so there the prediction is
        optimistic.
        """
        if self.probe is None:
            return True
        if self.last is None:
            return False
        drift = _moves(centers, self.last)
        top = float(drift.max())
        if self.last_move and top < self.last_move:
            drift = drift * (top / self.last_move)
        Xs, sq = self.probe
        need = STORE_MIN_SETTLED if need is None else need
        return _settled_share(Xs, sq, centers, mm, drift, reach_max, need) >= need

    def record(self, restart):
        """Note this pass's ``cum``; return, for each earlier pass t, how far the
        fastest centre has moved since (float64, rounded up), and t for this one."""
        if restart:
            self.passes = 0
        if self.passes == len(self.history):
            self.history = np.concatenate([self.history, np.empty_like(self.history)])
        self.history[self.passes] = self.cum
        now = self.passes
        self.passes += 1
        since = (self.cum[None, :] - self.history[:self.passes]).max(axis=1)
        return since + 1e-15 * self.cum.max(), now

    def settle(self, computed, n):
        """After a pass that used the bounds: while the centres still move far
        (more than a quarter of the rows were computed), a pass with them costs
        more than one without (the failed tests, storing the bounds); then
        wait 1, 2, 4, 8 plain passes before trying them again."""
        if 4 * computed > n:
            self.misses += 1
            self.wait = 2 ** min(self.misses - 1, 3)
        else:
            self.misses = 0


def bounds_of(geometry, n_clusters):
    """The geometry's :class:`Bounds` for ``n_clusters`` centres (made on first use),
    or None where :func:`uses_bounds` says no."""
    if not uses_bounds(geometry.n_samples, geometry.dim, n_clusters):
        return None
    bounds = geometry.pass_bounds
    if bounds is None or bounds.L.shape[1] != n_clusters:
        n = geometry.n_samples
        rows = np.linspace(0, n - 1, min(n, PROBE_ROWS)).astype(np.intp)
        probe = (np.ascontiguousarray(geometry.X[rows], dtype=np.float64),
                 np.ascontiguousarray(geometry.sq_norms[rows], dtype=np.float64))
        bounds = Bounds(n, n_clusters, math.sqrt(float(geometry.sq_norms.max())), probe)
        geometry.pass_bounds = bounds
    return bounds


def chunk_rows_for(X):
    """Rows of X per BLAS product of a pass (see ``CHUNK_BYTES``)."""
    row_bytes = max(1, X.shape[1] * X.dtype.itemsize)
    return int(min(CHUNK_ROWS_MAX, max(CHUNK_ROWS, CHUNK_BYTES // row_bytes)))


#: The O-step's rule of a pass (:func:`hard_pass`): lambda, the threshold tau0 of
#: a point without previous outlier (lam / 2, or lam / (2 eps) for the log
#: penalty), the log penalty's eps and whether it is used, and the IRLS centre
#: rule for the next iteration; the defaults: K-means (no outliers).
PassRule = namedtuple("PassRule", "lam tau0 eps weighted irls",
                      defaults=(np.inf, np.inf, 1.0, False, True))
#: The previous iterate's outliers, for ||O_t - O_{t-1}||_F: s_n, the label
#: each o_n was computed against, and the centres.
PreviousOutliers = namedtuple("PreviousOutliers", "shrink ref centers")


def hard_pass(X, centers, sq_norms, sample_weight, prev_labels, *, rule=PassRule(),
              nearest=False, prev_size=None, previous=None, need_shift=True, out=None,
              bounds=None, store=True, costs=None, n_threads=None, chunk_rows=None):
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
    rule : PassRule, default=PassRule()
        The O-step's lambda and thresholds, and the centre rule.
    prev_size : ndarray of shape (N,), optional
        ||o_n|| of the previous iterate (log-penalty thresholds).
    previous : PreviousOutliers, optional
        The previous iterate's outliers as (s_n, l_n) per point and its
        centres (None: the pass's own centres), for ||O_t - O_{t-1}||_F.
    need_shift : bool, default=True
        Compute that shift (the driver skips it while the centres alone show
        that the run has not converged: it would not change the decision).
    out : dict, optional
        Arrays to write the per-point results into (a previous result that
        nothing refers to any more): fresh arrays cost a page fault per 4 kB
        on first write, a sizeable part of a pass.
    bounds : Bounds, optional
        Elkan's bounds (Elkan 2003, "Using the triangle inequality to
        accelerate k-means") of the earlier passes over this X: a row whose
        bounds, moved by each centre's drift since, show that its nearest
        centre has not changed costs one product <x, m> instead of C; the
        other rows go through the BLAS call, and their bounds are stored
        anew.  The results are those of the pass without bounds (labels
        equal; sums to rounding): the bounds carry a margin for the rounding
        of every product.  Not with ``nearest=True``.  A pass that fills
        ``costs`` reads every row: it does not use bounds already stored
        (they stay valid for the next pass).
    store : bool, default=True
        Whether this pass may store the bounds (the stepper says no when
        fewer than ``STORE_MIN_PASSES_LEFT`` passes may follow); bounds
        already stored are used either way.
    costs : ndarray of shape (N,), optional
        Filled with every point's squared distance to its nearest centre,
        min_c ||x_n - m_c||^2 (the l0 costs of eq. (3)).
    n_threads : int, optional
        Threads to run the blocks of rows on (default: all, from
        ``PARALLEL_MIN_ROWS`` rows on).
    chunk_rows : int, optional
        Rows per BLAS product (default :func:`chunk_rows_for`).

    Returns
    -------
    dict with labels, ref (the labels the O-step used), shrink, size (N,),
    sums (C, p) and weights (C,) of the next centre step, shift
    (||O_t - O_{t-1}||_F, NaN when not computed), onorm (||O_t||_F), the
    objective sum_n w_n costs_n, computed (how many rows went through the
    BLAS call) and unread (how many rows the running sums held unchanged).
    """
    n, p = X.shape
    C = centers.shape[0]
    lam, tau0, eps, weighted, irls = rule
    old_shrink, old_ref, old_centers = previous if previous is not None else (None,) * 3
    if chunk_rows is None:
        chunk_rows = chunk_rows_for(X)
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
    bounds_mode, near, L, cum, cdist = _NO_BOUNDS, _NO_NEAR, _NO_L, _NO_CUM, gaps
    lmin, stamp, since, now, sepd = _NO_LMIN, _NO_NEAR, _NO_CUM, 0, _NO_CUM
    stream = False
    frozen, upper = _NO_FROZEN, _NO_LMIN
    if bounds is not None and nearest:
        raise ValueError("bounds need the previous labels (nearest=False)")
    kept = bounds
    owner = None
    if bounds is not None:
        # the per-point arrays the running sums belong to; this pass's, if it keeps them
        owner, bounds.owner = bounds.owner, None
    if bounds is not None and bounds.wait > 0:
        # backing off: a plain pass, after which the bounds are stale
        bounds.wait -= 1
        bounds.centers = None
        bounds = None
    if bounds is not None and costs is not None and bounds.centers is not None:
        # a pass that keeps every row's l0 cost reads every row: with the
        # bounds it would gather and test them all (the last pass of a
        # 40-iteration float32 fit on bench_kmeans's data at 8% flagged, two
        # threads: 9.3 ms, 1.6 times a plain pass of that fit).  A plain pass,
        # which leaves the bounds valid: the
        # next pass adds the drift from ``bounds.centers``, this one's included,
        # to ``cum`` (the running sums, tied to this pass's arrays, start anew)
        bounds = None
    if bounds is not None:
        bounds_mode = _STORE_BOUNDS
        if bounds.centers is not None:
            bounds.cum += _moves(M64, bounds.centers) * (1.0 + 1e-12)
            if (bounds.cum.max() <= RESET_DRIFT * bounds.scale
                    and bounds.passes < MAX_HISTORY):
                bounds_mode = _USE_BOUNDS
        # in float32 a BLAS product row costs little more than a settled
        # row's bookkeeping: the bounds pay by the inliers that the running
        # sums hold unread, not by the products they save (an outlier is read
        # at every pass), and only from a larger predicted share
        # (STORE_MIN_SETTLED_FLOAT32); in float64 the products pay too
        single = X.dtype == np.float32
        if bounds_mode == _STORE_BOUNDS and not (store and bounds.worth_storing(
                M64, mm, tau0 if single else np.inf,
                STORE_MIN_SETTLED_FLOAT32 if single else STORE_MIN_SETTLED)):
            # too few passes left to repay the storing, or the next pass
            # would settle (float32: hold unread) few rows: a plain pass
            bounds.centers = None
            bounds_mode, bounds = _NO_BOUNDS, None
    if bounds is not None:
        if bounds_mode == _STORE_BOUNDS:
            bounds.cum[:] = 0.0
        since, now = bounds.record(bounds_mode == _STORE_BOUNDS)
        near, L, cum, lmin, stamp = bounds.near, bounds.L, bounds.cum, bounds.lmin, bounds.stamp
        stream = bounds.stream and bounds_mode == _USE_BOUNDS
        # centre-to-centre distances, rounded down
        cdist = np.sqrt(np.maximum(gaps - 1e-12 * (mm[:, None] + mm[None, :]), 0.0))
        np.fill_diagonal(cdist, np.inf)
        sepd = cdist.min(axis=1) if C > 1 else np.full(C, np.inf)
    # |error| of a difference of two squared distances from products in X's
    # precision over p terms is at most 4 gamma_p ||x|| max ||m||; the margin
    # is twice that, plus the float64 products' own, plus the rounding of the
    # nearest-centre search in X's precision (a unit each of <x, m_c> -
    # ||m_c||^2 / 2 and of ||m_c||^2 / 2: at most 2 unit (||x||^2 + max ||m||^2)
    # in squared distance)
    unit = float(np.finfo(X.dtype).eps) / 2
    kerr = 8.0 * (p * unit / (1.0 - p * unit) + p * 1.2e-16) + 8.0 * unit
    mmax = float(mm.max()) if C else 0.0
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
    # several blocks a thread, taken in turn by whichever thread is free: the
    # rows' costs differ (outliers, rows near a boundary, a first write to
    # fresh memory), and halves of X in two threads waited on each other
    edges = block_edges(n, n_threads, chunk_rows)
    n_blocks = len(edges) - 1
    # each block's own accumulators
    sums = _block_zeros(n_blocks, C * p).reshape(n_blocks, C, p)
    weights = _block_zeros(n_blocks, C)
    acc = _block_zeros(n_blocks, 7)
    running = [(_NO_FSUMS, _NO_CUM, _NO_CUM)] * n_blocks
    if bounds is not None:
        if bounds_mode == _STORE_BOUNDS or costs is not None:
            bounds.running = None  # every row computed: the sums start anew
        fsums, fweights, fsq = bounds.running_sums(prev_labels is owner, sample_weight, edges, p)
        frozen, upper = bounds.frozen, bounds.upper
        running = [(fsums[b], fweights[b], fsq[b]) for b in range(n_blocks)]
    common = (Rows(X, sq_norms, sample_weight),
              Centres(centers_t, M64, mm, MM, sep, cdist, sepd * sepd, kerr, mmax),
              Previous(prev_labels, prev_size, old_shrink, old_ref, M_old),
              Rule(float(lam), float(tau0), float(eps), bool(weighted), bool(irls),
                   _NEAREST if nearest else _PREVIOUS, bool(need_shift)),
              BoundsView(bounds_mode, near, L, cum, lmin, stamp, since, now, stream, frozen,
                         upper),
              Outputs(labels, ref, shrink, size, _NO_COSTS if costs is None else costs))
    args = [common + (Block(edges[b], edges[b + 1], chunk_rows, sums[b], weights[b], acc[b],
                            *running[b]),)
            for b in range(n_blocks)]
    run_blocks(_hard_block, args, n_threads)
    if kept is not None:
        kept.moved(M64)
    if bounds is not None:
        bounds.centers = M64.copy()
        bounds.owner = labels
        if bounds_mode == _USE_BOUNDS:
            bounds.settle(int(acc[:, 3].sum()), n)
            # read every tested row's bounds in order (the memory streams them)
            # rather than the rows Hamerly's test leaves open (a cache miss
            # each) once those are more than STREAM_SHARE of the tested rows,
            # until the bounds are stored again (the drift only adds up)
            bounds.stream = stream or bool(acc[:, 5].sum() > STREAM_SHARE * acc[:, 6].sum())
        else:
            bounds.stream = False
    # one block: its own arrays (a sum over one block would copy them)
    total, sums, weights = ((acc[0], sums[0], weights[0]) if n_blocks == 1
                            else (acc.sum(axis=0), sums.sum(axis=0), weights.sum(axis=0)))
    if bounds is not None:
        # the rows the running sums hold: their terms of the centre step, and
        # of the objective, sum w ||x - m_a||^2 = sum w ||x||^2 + w ||m_a||^2 - 2 <m_a, w x>
        fs, fw = fsums.sum(axis=0), fweights.sum(axis=0)
        sums = sums + fs
        weights = weights + fw
        total = total.copy()
        total[2] += float(fsq.sum() + fw @ mm - 2.0 * np.einsum("cj,cj->", fs, M64))
    return {"labels": labels, "ref": ref, "shrink": shrink, "size": size,
            "sums": sums, "weights": weights,
            "shift": math.sqrt(max(total[0], 0.0)) if need_shift else math.nan,
            "onorm": math.sqrt(max(total[1], 0.0)), "objective": float(total[2]),
            "computed": int(total[3]), "unread": int(total[4])}


def nearest_sq_distances(X, centers, sq_norms):
    """min_c ||x_n - m_c||^2 for every row of a dense X, (N,): one pass, no N x C matrix."""
    n = X.shape[0]
    costs = np.empty(n)
    hard_pass(X, centers, sq_norms, np.ones(n), np.zeros(n, dtype=np.intp), nearest=True,
              costs=costs)
    return costs


def dense_linear(solver):
    """Whether ``solver``'s geometry is a dense NumPy X (no kernel) of at least
    ``FUSED_MIN_ROWS`` rows: what the compiled pass reads."""
    g = solver.geometry
    return (not g.kernel and g.is_numpy and not g.sparse and g.n_samples >= FUSED_MIN_ROWS
            and worth(g.n_samples))


def uses_bounds(n_samples, dim, n_clusters):
    """Whether a run's passes keep Elkan's bounds: when a product <x, m> costs
    enough to be worth skipping (``BOUNDS_MIN_DIM``), a pass enough to pay for
    their bookkeeping (``BOUNDS_MIN_WORK``) and the N x C bounds fit in
    ``BOUNDS_MAX_ENTRIES``."""
    return (dim >= BOUNDS_MIN_DIM and n_clusters > 1
            and n_samples * n_clusters <= BOUNDS_MAX_ENTRIES
            and n_samples * n_clusters * dim >= BOUNDS_MIN_WORK)


def eligible(solver, penalty):
    """Whether ``solver`` runs hard K-means with the group penalty on a dense NumPy X
    (of at least ``FUSED_MIN_ROWS`` rows, which the tests raise to compare with
    the NumPy iteration)."""
    return (solver.model.hard and not solver.model.mixture and dense_linear(solver)
            and penalty.name == "group")


def thresholds(lam, penalty):
    """(tau0, eps) of the pass for ``penalty`` at ``lam``."""
    if not np.isfinite(lam):
        return np.inf, 1.0
    return penalty.threshold(lam), (penalty.eps if penalty.weighted else 1.0)


def init_state(solver, centers, lam, costs=None):
    """Cold state at initial centres: nearest centres, then (finite ``lam``) O and U.

    One pass: the residuals of the O-step are those to the nearest centres.
    ``costs`` (an (N,) float64 array) receives each point's squared distance
    to its nearest centre.
    """
    g = solver.geometry
    penalty = solver.penalty
    tau0, eps = thresholds(lam if lam is not None else np.inf, penalty)
    finite = lam is not None and np.isfinite(lam)
    irls = solver.model.uses_irls(penalty)
    result = hard_pass(g.X, centers, g.sq_norms, solver.sample_weight,
                       np.zeros(g.n_samples, dtype=np.intp),
                       rule=PassRule(lam if finite else np.inf, tau0, eps, irls=irls),
                       nearest=True, costs=costs)
    if costs is not None:  # the l0 costs at these centres (kept_costs)
        result["costs"], result["costs_of"] = costs, centers
    key = "any" if not finite or not result["shrink"].any() else (
        ("irls", lam, penalty.weighted) if irls else "eq9")
    return park(pass_state(solver, centers, result, key))


class FusedStepper:
    """The driver's step for :func:`eligible` solvers: one :func:`hard_pass` per iteration.

    Its results alternate between two sets of arrays: the state of iteration
    t is written where that of t - 2 was, which nothing refers to any more
    (the driver keeps only the current state; the state a run started from
    is never written to).
    """

    def __init__(self, solver, lam, penalty, tol=None, max_iter=None):
        self.solver = solver
        self.max_iter = solver.max_iter if max_iter is None else max_iter
        self.steps = 0
        self.lam = lam
        self.penalty = penalty
        self.tol = solver.tol if tol is None else tol
        self.irls = solver.model.uses_irls(penalty)
        # the IRLS weights depend on lam and on the penalty's thresholds
        self.key = ("irls", lam, penalty.weighted) if self.irls else "eq9"
        tau0, eps = thresholds(lam, penalty)
        self.rule = PassRule(lam, tau0, eps, penalty.weighted, self.irls)
        self.buffers = [None, None]
        self.turn = 0
        self.bounds = bounds_of(solver.geometry, solver.n_clusters)

    def _previous(self, state):
        """(sums, weights, per-point arrays) of a state for the next pass.

        The arrays of a state in k-row form (:func:`park`) are scattered into
        new ones, which the run's second pass then writes its results into.
        """
        solver = self.solver
        pending = state.pending
        if pending is not None and pending[2] in (self.key, "any"):
            sums, totals, prev = pending[0], pending[1], pending[3]
            if not prev.get("parked"):
                return sums, totals, prev
        else:
            V, subtract = solver.model.centre_weights(solver, state, self.lam, self.penalty)
            g = solver.geometry
            sums = g.removed_sums(V, state.outliers, state.centers) if subtract \
                else g.point_sums(V)
            totals = V.totals(np)
            if not isinstance(state.outliers, ParkedOutliers):
                o = solver.dense(state.outliers)
                ref = o.weights_full
                if ref is None:
                    ref = np.zeros(g.n_samples, dtype=np.intp)
                    ref[o.index] = o.weights
                return sums, totals, {"shrink": o.shrink_full, "size": o.sizes_full,
                                      "ref": ref}
        o = state.outliers  # parked: each read scatters into a new array
        shrink, size, ref = o.shrink_full, o.sizes_full, o.weights_full
        if self.steps == 0 and self.buffers[1] is None:
            # read by the first pass only (the second reads the first's):
            # the second pass's outputs (ref, a label array, as its labels)
            self.buffers[1] = {"labels": ref, "shrink": shrink, "size": size}
        return sums, totals, {"shrink": shrink, "size": size, "ref": ref}

    def finish(self, state):
        """The run's last state, as it is kept (:func:`park`)."""
        return park(state)

    def step(self, state):
        solver = self.solver
        g = solver.geometry
        sums, totals, prev = self._previous(state)
        centers = solver.model.divide(solver, sums, totals, state)
        c_norm = float(np.linalg.norm(centers))
        c_shift = float(np.linalg.norm(centers - state.centers))
        self.steps += 1
        out = self.buffers[self.turn]
        # a pass that may end the run (the centres have settled, or the last
        # iteration) keeps its l0 costs: the fit reports them
        # (KMeansModel.point_scores), and they save a pass over X
        settled = c_shift <= self.tol * c_norm
        may_end = settled or self.steps >= self.max_iter
        costs = None
        if out is not None:
            out["costs_of"] = None  # its arrays are about to hold this pass's results
            costs = out.get("costs") if may_end else None
        if may_end and costs is None:
            costs = np.empty(g.n_samples)
        result = hard_pass(g.X, centers, g.sq_norms, solver.sample_weight, state.labels,
                           rule=self.rule, prev_size=prev["size"],
                           previous=PreviousOutliers(prev["shrink"], prev["ref"],
                                                     state.centers),
                           need_shift=settled,
                           out=out, bounds=self.bounds,
                           store=self.max_iter - self.steps >= STORE_MIN_PASSES_LEFT,
                           costs=costs)
        # the costs belong to these centres (a later pass into this buffer
        # leaves them with other ones)
        result["costs"], result["costs_of"] = costs, centers
        self.buffers[self.turn] = result
        self.turn = 1 - self.turn
        new = pass_state(solver, centers, result, self.key)
        return new, (c_shift, c_norm, result["shift"], result["onorm"])
