"""Compiled per-iteration kernel of hard robust K-means (numba).

numpy needs several passes over X and over the N x C matrix G = X M^T per
iteration (a product, a gather, an argmin, a single-threaded sparse product
for the centre sums); measured against scikit-learn's fused Cython Lloyd
loop that is several times slower (benchmarks/bench_kmeans.py).
:func:`hard_pass` does all of it in one pass over X, as scikit-learn does,
splitting the rows over a few Python threads that each run the compiled,
GIL-free block kernel.  Plain threads rather than numba's ``prange``: an
OpenMP pool spin-waits between calls and, on a busy 2-core machine, made
every BLAS call around it several times slower.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

_N_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                        else (os.cpu_count() or 1)))
_EXECUTOR = None


@njit(nogil=True, cache=True)
def _hard_block(X, centers_t, mm, sq_norms, sample_weight, prev_labels, start, stop,
                chunk_rows, r2, labels, best, sums, weights):
    """Rows start:stop of :func:`hard_pass`; sums/weights are this block's own."""
    C = centers_t.shape[1]
    p = X.shape[1]
    for lo in range(start, stop, chunk_rows):
        hi = min(stop, lo + chunk_rows)
        G = np.dot(X[lo:hi], centers_t)
        for i in range(lo, hi):
            g = G[i - lo]
            l = prev_labels[i]
            v = sq_norms[i] + mm[l] - 2.0 * g[l]
            r2[i] = v if v > 0.0 else 0.0
            arg = 0
            low = mm[0] - 2.0 * g[0]
            for c in range(1, C):
                d = mm[c] - 2.0 * g[c]
                if d < low:
                    low = d
                    arg = c
            labels[i] = arg
            v = sq_norms[i] + low
            best[i] = v if v > 0.0 else 0.0
            w = sample_weight[i]
            weights[arg] += w
            for j in range(p):
                sums[arg, j] += w * X[i, j]


def hard_pass(X, centers, sq_norms, sample_weight, prev_labels, n_threads=None,
              chunk_rows=1024):
    """One fused pass over a dense X for hard RKM: products, assignment, sums.

    For every row n, with G = X M^T computed chunk by chunk (BLAS):

    * ``r2[n] = max(||x_n||^2 + ||m_l||^2 - 2 G[n, l], 0)``, l = prev_labels[n]
      (||r_n||^2 of eq. (12) for q = 1);
    * ``labels[n] = argmin_c ||m_c||^2 - 2 G[n, c]``  (eq. (15) with o_n = 0);
    * ``best[n] = max(||x_n||^2 + min_c (||m_c||^2 - 2 G[n, c]), 0)``;

    and the sums of ``w_n x_n`` and of ``w_n`` per cluster of ``labels``,
    ready for the next centre update (eq. (9)).  Call it with BLAS limited to
    one thread: the parallelism is over blocks of rows.

    Returns (r2, labels, best, sums, weights).
    """
    global _EXECUTOR
    n, p = X.shape
    C = centers.shape[0]
    n_threads = n_threads or _N_THREADS
    centers_t = np.ascontiguousarray(centers.T)
    mm = (centers.astype(np.float64) ** 2).sum(axis=1)
    r2, best = np.empty(n), np.empty(n)
    labels = np.empty(n, dtype=np.intp)
    sums = np.zeros((n_threads, C, p))
    weights = np.zeros((n_threads, C))
    bounds = np.linspace(0, n, n_threads + 1).astype(np.intp)
    args = [(X, centers_t, mm, sq_norms, sample_weight, prev_labels, bounds[t], bounds[t + 1],
             chunk_rows, r2, labels, best, sums[t], weights[t]) for t in range(n_threads)]
    if n_threads == 1:
        _hard_block(*args[0])
    else:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=_N_THREADS)
        for future in [_EXECUTOR.submit(_hard_block, *a) for a in args]:
            future.result()
    return r2, labels, best, sums.sum(axis=0), weights.sum(axis=0)
