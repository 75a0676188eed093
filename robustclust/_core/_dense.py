"""Compiled one-pass helpers for a dense NumPy X (numba): set-up and results.

A fit of hard K-means costs about ten passes over X; the passes around the
iterations (centring a copy, finding its extent, writing the outlier matrix)
used to take three or four more as separate NumPy calls.  These do each in
one pass, with results equal to the NumPy expressions they replace:

* :func:`centre_with_extent`: ``X - offset`` and ``max |X - offset|``;
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


@njit(nogil=True, cache=True)
def _centre_rows(X, offset, out, tops, b):
    top = 0.0
    n, p = X.shape
    for i in range(n):
        for j in range(p):
            v = X[i, j] - offset[j]
            out[i, j] = v
            a = abs(v)
            if a > top:
                top = a
    tops[b] = top


def centre_with_extent(X, offset):
    """(X - offset, max |X - offset|) in one pass; X C-contiguous NumPy, offset of X's dtype.

    NaN never reaches here (validation refuses it); an infinite difference
    gives an infinite extent, which :func:`power_of_two_scale` refuses.
    Large X is split into blocks of rows for the hard pass's threads.
    """
    out = np.empty_like(X)
    offset = np.ascontiguousarray(offset, dtype=X.dtype)
    n, p = X.shape
    n_blocks = 1 if n * p < PARALLEL_ENTRIES else BLOCKS
    edges = [n * b // n_blocks for b in range(n_blocks + 1)]
    tops = np.zeros(n_blocks)
    _fused.run_blocks(_centre_rows, [(X[lo:hi], offset, out[lo:hi], tops, b)
                                     for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))])
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
    n_blocks = 1 if k * p < PARALLEL_ENTRIES else BLOCKS
    edges = [k * b // n_blocks for b in range(n_blocks + 1)]
    zeros = np.zeros(n_blocks, dtype=np.int64)
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
    return data, indices, np.cumsum(counts)

