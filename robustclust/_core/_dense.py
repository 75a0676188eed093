"""Compiled one-pass helpers for a dense NumPy X (numba): set-up and results.

A fit of hard K-means costs about ten passes over X; the passes around the
iterations (centring a copy, finding its extent, writing the outlier matrix)
used to take three or four more as separate NumPy calls.  These do each in
one pass, with results equal to the NumPy expressions they replace (except
the mean, whose sums are float64 where NumPy's mean of float32 X adds in
float32):

* :func:`column_means`: the mean of X's rows;
* :func:`centre_with_extent`: ``X - offset``, ``max |X - offset|`` and,
  on request, the rows' squared norms;
* :func:`outlier_csr`: the rows ``s_n (x_n - m_l)`` of the flagged points as
  the data and column indices of a CSR matrix (the O-step's outlier vectors,
  eq. (11), scaled back to the user's units).
"""

import numpy as np
from numba import njit

from . import _fused

#: Entries (of X, or of the outlier matrix) from which the rows are split into
#: ``BLOCKS`` blocks that the hard pass's threads take in turn
#: (:func:`~robustclust._core._fused.run_blocks`): the writes to fresh memory,
#: a page fault per 4 kB, are most of the cost of these passes.
PARALLEL_ENTRIES = 2 ** 18
BLOCKS = 8


def _row_blocks(n, p):
    """Edges of the blocks of rows a pass over an n x p array is split into."""
    n_blocks = 1 if n * p < PARALLEL_ENTRIES else BLOCKS
    return [n * b // n_blocks for b in range(n_blocks + 1)]


@njit(nogil=True, cache=True)
def _column_sums(X, sums):
    n, p = X.shape
    for i in range(n):
        for j in range(p):
            sums[j] += X[i, j]


def column_means(X):
    """The mean of the rows of a NumPy X, as float64 (the same for any memory layout).

    Each block of rows is added up in float64 on the hard pass's threads (NumPy's
    mean of float32 adds in float32, one thread: 6.6 ms for 200,000 x 32).
    """
    n, p = X.shape
    edges = _row_blocks(n, p)
    sums = np.zeros((len(edges) - 1, p))
    _fused.run_blocks(_column_sums, [(X[lo:hi], sums[b])
                                     for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))])
    return sums.sum(axis=0) / max(n, 1)


@njit(nogil=True, cache=True)
def _centre_rows(X, offset, out, tops, b, sq):
    top = 0.0
    n, p = X.shape
    norms = sq.shape[0] > 0
    for i in range(n):
        acc = 0.0
        for j in range(p):
            v = X[i, j] - offset[j]
            out[i, j] = v
            a = abs(v)
            if a > top:
                top = a
            if norms:
                w = np.float64(v)
                acc += w * w
        if norms:
            sq[i] = acc
    tops[b] = top


def centre_with_extent(X, offset, norms=False, out=None):
    """(X - offset, max |X - offset|) in one pass; X C-contiguous NumPy, offset of X's dtype.

    With ``norms``, also the squared norms of the centred rows (as stored, in
    X's dtype), added in float64: (Xc, extent, sq_norms).  NaN never reaches
    here (validation refuses it); an infinite difference gives an infinite
    extent, which :func:`power_of_two_scale` refuses.  Large X is split into
    blocks of rows for the hard pass's threads.  ``out``: where the centred
    rows go (X itself centres X in place: each value is read before it is
    written); a new array by default.
    """
    out = np.empty_like(X) if out is None else out
    offset = np.ascontiguousarray(offset, dtype=X.dtype)
    n, p = X.shape
    edges = _row_blocks(n, p)
    tops = np.zeros(len(edges) - 1)
    sq = np.empty(n if norms else 0)
    _fused.run_blocks(_centre_rows, [(X[lo:hi], offset, out[lo:hi], tops, b, sq[lo:hi])
                                     for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))])
    if norms:
        return out, float(tops.max()), sq
    return out, float(tops.max())


@njit(nogil=True, cache=True)
def _outlier_rows(X, index, ref, shrink, centers, scale, data, indices, zeros, b):
    p = X.shape[1]
    n_zero = 0
    for k in range(index.shape[0]):
        i = index[k]
        s = shrink[k]
        l = ref[k]
        base = k * p
        for j in range(p):
            data[base + j] = s * (X[i, j] - centers[l, j]) * scale
            indices[base + j] = j
            n_zero += data[base + j] == 0
    zeros[b] = n_zero


def outlier_csr(X, index, ref, shrink, centers, scale, dtype):
    """CSR arrays (data, indices, indptr) of the outlier vectors o_n = s_n (x_n - m_l), scaled.

    ``index`` (k,) the flagged rows in increasing order, ``ref`` their O-step
    labels l, ``shrink`` their s_n, ``centers`` (C, p) the centres the O-step
    used; each row becomes ``scale * o_n`` in ``dtype``.  Zero entries (a
    coordinate where x_n equals m_l) are dropped, as ``eliminate_zeros`` would.
    """
    n, p = X.shape
    k = index.shape[0]
    # written in ``dtype`` directly: each entry is computed in float64 and rounded
    # once, as a float64 array's astype would (without its second array)
    data = np.empty(k * p, dtype=np.dtype(dtype))
    indices = np.empty(k * p, dtype=np.int32 if p < 2**31 else np.int64)
    index = np.asarray(index, dtype=np.int64)
    ref = np.asarray(ref, dtype=np.int64)
    shrink = np.asarray(shrink, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    edges = _row_blocks(k, p)
    zeros = np.zeros(len(edges) - 1, dtype=np.int64)
    _fused.run_blocks(_outlier_rows, [
        (X, index[lo:hi], ref[lo:hi], shrink[lo:hi], centers, float(scale),
         data[lo * p:hi * p], indices[lo * p:hi * p], zeros, b)
        for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))])
    counts = np.zeros(n + 1, dtype=np.int64)
    if not zeros.any():
        counts[index + 1] = p
    else:
        nonzero = data != 0
        np.add.at(counts, index + 1, nonzero.reshape(k, p).sum(axis=1))
        data, indices = data[nonzero], indices[nonzero]
    return data, indices, np.cumsum(counts, out=counts)

