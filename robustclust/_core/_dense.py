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


@njit(nogil=True, cache=True)
def _centre_rows(X, offset, out):
    top = 0.0
    n, p = X.shape
    for i in range(n):
        for j in range(p):
            v = X[i, j] - offset[j]
            out[i, j] = v
            a = abs(v)
            if a > top:
                top = a
    return top


def centre_with_extent(X, offset):
    """(X - offset, max |X - offset|) in one pass; X C-contiguous NumPy, offset of X's dtype.

    NaN never reaches here (validation refuses it); an infinite difference
    gives an infinite extent, which :func:`power_of_two_scale` refuses.
    """
    out = np.empty_like(X)
    offset = np.ascontiguousarray(offset, dtype=X.dtype)
    top = _centre_rows(X, offset, out)
    return out, float(top)


@njit(nogil=True, cache=True)
def _outlier_rows(X, index, ref, shrink, centers, scale, data, indices):
    p = X.shape[1]
    for k in range(index.shape[0]):
        i = index[k]
        s = shrink[k]
        l = ref[k]
        base = k * p
        for j in range(p):
            data[base + j] = s * (X[i, j] - centers[l, j]) * scale
            indices[base + j] = j


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
    _outlier_rows(X, np.asarray(index, dtype=np.int64), np.asarray(ref, dtype=np.int64),
                  np.asarray(shrink, dtype=np.float64),
                  np.ascontiguousarray(centers, dtype=np.float64), float(scale), data, indices)
    counts = np.zeros(n + 1, dtype=np.int64)
    nonzero = data != 0
    if nonzero.all():
        counts[np.asarray(index) + 1] = p
    else:
        np.add.at(counts, np.asarray(index) + 1, nonzero.reshape(k, p).sum(axis=1))
        data, indices = data[nonzero], indices[nonzero]
    return data, indices, np.cumsum(counts)

