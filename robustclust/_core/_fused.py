"""The compiled hard K-means iteration: one pass over a dense NumPy X (numba).

For hard robust K-means with the group penalty (convex or log), everything
an iteration does after the centre division is a function of one row of
G = X M^T and O(C) numbers per point, so :func:`hard_pass` does it in one
chunked pass over X, as scikit-learn's Lloyd loop does for K-means:

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
Elkan's bounds (:class:`Bounds`) show for most rows that the nearest centre
has not changed; such a row costs one product <x, m_l> instead of a row of
G, and only the other rows go through the BLAS call (in a pass without bounds,
the next chunk's rows are prefetched during this one's nearest-centre search,
:func:`_prefetch_rows`).  An inlier's terms of the
centre step stay in running sums while an upper bound on its distance shows
that it is still an inlier of the same centre: such a row is not read at all,
and a pass late in a run reads little more than its outliers' rows and those
near a boundary.  These are the same formulas as
:class:`~robustclust._core.geometry.Products` and
:class:`~robustclust._core.models.KMeansModel` (which the tests check), written
per row; in a pass without bounds with the convex penalty and the IRLS
centre step, the rows whose previous label is their nearest centre (most of
them) take one path for inlier and outlier (:func:`_common_rows`).  A run
stores the bounds only when ``STORE_MIN_PASSES_LEFT`` passes may follow and
a probe of the rows predicts that most will settle (80%; in float32 90%,
settling and staying inliers).  From
``PARALLEL_MIN_ROWS`` rows on, the rows are split into blocks of
decreasing size (:func:`block_edges`), which a few Python threads (the
calling one among them) take in turn and run through the compiled GIL-free
kernel, each block with its own sums (added in block order: the result does
not depend on which thread ran which block), with BLAS limited to one thread
(plain threads rather than numba's ``prange``:
an OpenMP pool spin-waits between calls and, on a busy 2-core machine, made
every BLAS call around it slower).
"""

import math
import os
import threading
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .compiled import worth
from .state import Outliers, State

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
#: Most bytes of X per chunk for which a plain pass asks for the next chunk's
#: rows while it works on this one's products (:func:`_prefetch_rows`).
PREFETCH_MAX_BYTES = 2 ** 19

_N_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                        else (os.cpu_count() or 1)))
_EXECUTOR = None

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


@intrinsic
def _prefetch(typingctx, X, offset):
    """Ask the processor to bring the cache line at byte ``offset`` of the
    C-contiguous array ``X``'s data into its caches (LLVM's prefetch for a
    read, kept in every level; a hint: nothing is read, no fault is raised)."""
    if not (isinstance(X, types.Array) and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        if signature.args[0].layout != "C":
            return context.get_dummy_value()  # no byte offsets to speak of: no hint
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        byte = ir.IntType(8)
        ptr = builder.gep(builder.bitcast(ary.data, byte.as_pointer()), [args[1]])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        name = "llvm.prefetch.p0" if getattr(ptr.type, "is_opaque", False) else "llvm.prefetch.p0i8"
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        # read (0), keep in all levels (3), data cache (1)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(X, offset), codegen


@njit(nogil=True, cache=True)
def _prefetch_rows(X, lo, hi):
    """Prefetch rows lo:hi of a C-contiguous X, one request per 64-byte line.

    A plain pass reads X once, a chunk at a time, and the BLAS call of a
    chunk waited for its rows to come from memory.  :func:`_nearest_rows`
    asks for the next chunk's rows, four with every four rows it searches, so
    that they arrive while this chunk is searched and added up (the requests
    spread over the search: all at once after the BLAS call, they waited for
    free line-fill buffers).  Measured single-threaded on bench_kmeans's data
    (a late plain pass, the cache flushed between calls): 6-18% less time,
    the same results.
    """
    row = X.shape[1] * X.itemsize
    for off in range(lo * row, hi * row, 64):
        _prefetch(X, off)


#: Centres compared at once by the nearest-centre search (:func:`_nearest_rows`).
LANES = 16


def _lanes(context, builder, aryty, ary, idx):
    """LANES consecutive entries of a C-contiguous array from the index ``idx``,
    as one LLVM vector."""
    a = context.make_array(aryty)(context, builder, ary)
    ptr = cgutils.get_item_pointer(context, builder, aryty, a, idx)
    T = context.get_data_type(aryty.dtype)
    vty = ir.VectorType(T, LANES)
    if getattr(ptr.type, "is_opaque", False):  # an llvmlite with opaque pointers
        return builder.load(ptr, typ=vty, align=context.get_abi_sizeof(T))
    return builder.load(builder.bitcast(ptr, vty.as_pointer()),
                        align=context.get_abi_sizeof(T))


def _lanes_ok(G, half):
    return (isinstance(G, types.Array) and isinstance(half, types.Array) and G.ndim == 2
            and half.ndim == 1 and G.layout == "C" and half.layout == "C"
            and G.dtype == half.dtype and isinstance(G.dtype, types.Float))


def _lanes_diff(context, builder, Gty, hty, G, k, half, c0):
    """G[k, c0:c0 + LANES] - half[c0:c0 + LANES], one vector."""
    return builder.fsub(_lanes(context, builder, Gty, G, [k, c0]),
                        _lanes(context, builder, hty, half, [c0]))


@intrinsic
def _lanes_max(typingctx, G, k, half, blocks):
    """The largest of G[k, c] - half[c] for c < ``blocks`` LANES (differences
    in G's precision), NaNs left out (-inf if all are NaN): the blocks'
    lane-wise maximum from -inf, then a tree of pairwise maxima across the
    lanes."""
    if not (_lanes_ok(G, half) and isinstance(blocks, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        Gty, kty, hty, bty = signature.args
        G_, k, half_, blocks = args
        k = context.cast(builder, k, kty, types.intp)
        blocks = context.cast(builder, blocks, bty, types.intp)
        intp = context.get_value_type(types.intp)
        i32 = ir.IntType(32)
        vty = ir.VectorType(context.get_data_type(Gty.dtype), LANES)
        # a NaN never compares larger: its lane keeps what it had
        acc = cgutils.alloca_once_value(builder, ir.Constant(vty, [-math.inf] * LANES))
        with cgutils.for_range(builder, blocks) as loop:
            c0 = builder.mul(loop.index, ir.Constant(intp, LANES))
            d = _lanes_diff(context, builder, Gty, hty, G_, k, half_, c0)
            v = builder.load(acc)
            builder.store(builder.select(builder.fcmp_ordered(">", d, v), d, v), acc)
        d = builder.load(acc)
        n = LANES
        while n > 1:
            n //= 2
            lo = builder.shuffle_vector(d, d, ir.Constant(ir.VectorType(i32, n), list(range(n))))
            hi = builder.shuffle_vector(d, d, ir.Constant(ir.VectorType(i32, n),
                                                          list(range(n, 2 * n))))
            d = builder.select(builder.fcmp_ordered(">", hi, lo), hi, lo)
        return builder.extract_element(d, ir.Constant(i32, 0))

    return G.dtype(G, k, half, blocks), codegen


@intrinsic
def _lanes_first(typingctx, G, k, half, blocks, best):
    """The first c < ``blocks`` LANES with G[k, c] - half[c] == ``best``, else -1."""
    if not (_lanes_ok(G, half) and isinstance(blocks, types.Integer) and best == G.dtype):
        return None

    def codegen(context, builder, signature, args):
        Gty, kty, hty, bty, _ = signature.args
        G_, k, half_, blocks, best = args
        k = context.cast(builder, k, kty, types.intp)
        blocks = context.cast(builder, blocks, bty, types.intp)
        intp = context.get_value_type(types.intp)
        i32, i64 = ir.IntType(32), ir.IntType(64)
        vty = ir.VectorType(context.get_data_type(Gty.dtype), LANES)
        one = builder.insert_element(ir.Constant(vty, ir.Undefined), best, ir.Constant(i32, 0))
        splat = builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(i32, LANES),
                                                             [0] * LANES))
        cttz = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            i64, [i64, ir.IntType(1)]), "llvm.cttz.i64")
        found = cgutils.alloca_once_value(builder, ir.Constant(intp, -1))
        with cgutils.for_range(builder, blocks) as loop:
            with builder.if_then(builder.icmp_signed("<", builder.load(found),
                                                     ir.Constant(intp, 0))):
                c0 = builder.mul(loop.index, ir.Constant(intp, LANES))
                d = _lanes_diff(context, builder, Gty, hty, G_, k, half_, c0)
                bits = builder.zext(builder.bitcast(builder.fcmp_ordered("==", d, splat),
                                                    ir.IntType(LANES)), i64)
                with builder.if_then(builder.icmp_unsigned("!=", bits, ir.Constant(i64, 0))):
                    b = builder.call(cttz, [bits, ir.Constant(ir.IntType(1), 1)])
                    builder.store(builder.add(c0, context.cast(builder, b, types.int64,
                                                               types.intp)), found)
        return builder.load(found)

    return types.intp(G, k, half, blocks, best), codegen


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
#: Elkan's bounds as this pass uses them (:class:`Bounds`): the mode
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
def _nearest_rows(G, half, mm, low, nearest, X, pf_lo, pf_hi):
    """For each row k of G = X_chunk M^T, the nearest centre (the first of
    equals) and ||m_c||^2 - 2 <x, m_c> for it (float64).

    The nearest centre maximizes <x, m_c> - ||m_c||^2 / 2, compared in X's
    precision as scikit-learn does (for float64 X the order of ||m_c||^2 - 2
    <x, m_c>, scaling by 2 being exact); a float32 search without
    conversions costs 60% of a float64 one.

    From ``LANES`` (16) centres on, a row's centres are compared LANES at a
    time as vectors (:func:`_lanes_max`: the lane-wise maximum over the
    blocks, then a tree across the lanes; :func:`_lanes_first`: the first
    centre whose difference equals it), the centres past the last whole
    block one by one: the same differences and the same first of equals as
    one by one, and its answer where a difference is NaN (inf - inf in a
    product: centre 0 if its difference is NaN, else the NaNs are skipped)
    (a late plain pass on bench_kmeans's data, C = 16, one
    thread: 4-7.5% less time than four rows at a time, float32 and float64,
    identical results; with 8 lanes, two blocks and a block loop in numba,
    7-8% more).  With fewer centres, four rows at a time: each row's search
    is a chain of dependent max-and-select steps (one per centre, a few
    cycles each), and four independent chains keep the processor busy
    (15-20% less time than one row at a time, the same labels).  With each
    four rows, four rows ``pf_lo``, ``pf_lo`` + 1, ... (below ``pf_hi``) of
    ``X`` are prefetched (:func:`_prefetch_rows`; none when ``pf_hi`` <=
    ``pf_lo``).
    """
    C = G.shape[1]
    m = G.shape[0]
    k = 0
    if C >= LANES:
        blocks = C // LANES
        Cv = blocks * LANES
        for k in range(m):
            if k % 4 == 0 and pf_lo + k < pf_hi:
                _prefetch_rows(X, pf_lo + k, min(pf_lo + k + 4, pf_hi))
            best = _lanes_max(G, k, half, blocks)
            for c in range(Cv, C):
                d = G[k, c] - half[c]
                best = d if d > best else best
            # the one-by-one search starts from centre 0 and skips the NaNs
            # after it: a NaN there is its answer, else the first largest
            arg = 0
            if G[k, 0] - half[0] <= best:
                arg = _lanes_first(G, k, half, blocks, best)
                if arg < 0:
                    for c in range(Cv, C):
                        if G[k, c] - half[c] == best:
                            arg = c
                            break
                arg = max(arg, 0)  # (cannot stay -1: centre 0 is at most best)
            low[k] = mm[arg] - 2.0 * G[k, arg]
            nearest[k] = arg
        return
    while k + 4 <= m:
        if pf_lo + k < pf_hi:
            _prefetch_rows(X, pf_lo + k, min(pf_lo + k + 4, pf_hi))
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
    """The rows of one block (:class:`Block`) of :func:`hard_pass`.

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
    not read at all (see :class:`Bounds`).

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
    # in a plain pass, the next chunk's rows are asked for early (those of a
    # pass with bounds are gathered, see _open_rows)
    prefetch = bounds_mode == 0 and chunk_rows * p * X.itemsize <= PREFETCH_MAX_BYTES
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
            _nearest_rows(G, half, mm, low, nearest, X, hi,
                          min(stop, hi + chunk_rows) if prefetch else 0)
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
        #: the running sums (see :func:`_hard_block`): ``frozen[i]`` = 1 for
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


def kept_costs(state):
    """The l0 costs (N,) that the pass which made ``state`` kept for its centres
    (see :meth:`FusedStepper.step`), or None."""
    pending = state.pending
    result = pending[3] if isinstance(pending, tuple) and len(pending) == 4 else None
    if (result is None or result.get("costs") is None
            or result.get("costs_of") is not state.centers):
        return None
    return result["costs"]


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
    return _state(solver, centers, result, key)


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
        """(sums, weights, per-point arrays) of a state for the next pass."""
        solver = self.solver
        pending = state.pending
        if pending is not None and pending[2] in (self.key, "any"):
            return pending[0], pending[1], pending[3]
        V, subtract = solver.model.centre_weights(solver, state, self.lam, self.penalty)
        g = solver.geometry
        sums = g.removed_sums(V, state.outliers, state.centers) if subtract \
            else g.point_sums(V)
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
        new = _state(solver, centers, result, self.key)
        return new, (c_shift, c_norm, result["shift"], result["onorm"])
