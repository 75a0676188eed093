"""The point sets that the robust starts and the concentration steps work on.

A space answers squared distances (point to point, centre to point), places
centres on points and takes weighted means; the starts
(:mod:`robustclust._core.starts`) and the refinement
(:mod:`robustclust._core.refine`) are written against it, once for the
rows of X (:class:`PointSpace`) and for feature space through a kernel
matrix (:class:`KernelSpace`).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms, safe_sparse_dot

from .compiled import worth

#: Entries of the dense label-by-row weight block that :meth:`PointSpace.means`
#: multiplies with X (8 MB): the means of dense X are products of such blocks
#: with row blocks of X, a third of the time of building a SciPy matrix for
#: them at 1,000-2,000 rows (the NumPy concentration steps run below
#: ``compiled.COMPILED_MIN_ROWS`` rows).
MEANS_BLOCK_ENTRIES = 2**20


class PointSpace:
    """Squared Euclidean distances of the rows of X (NumPy array or CSR matrix)."""

    def __init__(self, X, compiled=None, sq_norms=None):
        # sparse products need one dtype on both sides, and the centres are float64
        self.X = X.astype(np.float64) if sp.issparse(X) and X.dtype != np.float64 else X
        #: the data for the compiled concentration steps (dense float64 or
        #: float32 X), else None
        self.dense = (X if isinstance(X, np.ndarray) and X.dtype in (np.float64, np.float32)
                      and (X.flags.c_contiguous or X.flags.f_contiguous) else None)
        self.n_samples = X.shape[0]
        #: whether the compiled steps run on ``dense`` (default: when the rows are
        #: enough for them to pay, ``compiled.worth``; a sample of a larger data
        #: set, whose fit runs them anyway, may say so)
        self.compiled = worth(self.n_samples) if compiled is None else bool(compiled)
        #: ||x_n||^2, float64 (``sq_norms``: computed already by the caller)
        self.sq_norms = (row_norms(X, squared=True).astype(np.float64, copy=False)
                         if sq_norms is None else sq_norms)

    def point_distances(self, index):
        """||x_i - x_n||^2 for the points ``index``, (len(index), N)."""
        rows = self.X[index]
        cross = np.asarray(safe_sparse_dot(rows, self.X.T, dense_output=True),
                           dtype=np.float64)
        return np.maximum(self.sq_norms[index, None] + self.sq_norms[None, :] - 2.0 * cross,
                          0.0)

    def points(self, index):
        """Centres placed on the points ``index``."""
        rows = self.X[index]
        return np.asarray(rows.toarray() if sp.issparse(rows) else rows, dtype=np.float64)

    def centre_distances(self, centres):
        """||m_c - x_n||^2, (C, N)."""
        cross = np.asarray(safe_sparse_dot(self.X, centres.T, dense_output=True),
                           dtype=np.float64).T
        sq = np.einsum("cj,cj->c", centres, centres)
        return np.maximum(sq[:, None] + self.sq_norms[None, :] - 2.0 * cross, 0.0)

    def means(self, labels, weights, centres):
        """Weighted means of the points of each label (``weights`` 0 where trimmed);
        a label without weight keeps its centre."""
        C = centres.shape[0]
        n = self.n_samples
        if sp.issparse(self.X):
            V = sp.csr_matrix((weights, (labels, np.arange(n))), shape=(C, n))
            sums = np.asarray(V.sum(axis=1)).ravel()
            new = np.asarray(safe_sparse_dot(V, self.X, dense_output=True), dtype=np.float64)
        else:
            sums = np.bincount(labels, weights=weights, minlength=C).astype(np.float64)
            new = np.zeros((C, self.X.shape[1]))
            rows = max(1, MEANS_BLOCK_ENTRIES // C)
            for start in range(0, n, rows):
                stop = min(n, start + rows)
                V = np.zeros((C, stop - start))
                V[labels[start:stop], np.arange(stop - start)] = weights[start:stop]
                new += V @ self.X[start:stop]
        has = sums > 0
        out = centres.copy()
        out[has] = new[has] / sums[has, None]
        return out


class KernelSpace:
    """Feature-space distances from a kernel matrix K; centres are coefficient rows B."""

    def __init__(self, K, diag):
        self.K = K
        self.n_samples = K.shape[0]
        self.sq_norms = np.asarray(diag, dtype=np.float64)

    def point_distances(self, index):
        return np.maximum(self.sq_norms[index, None] + self.sq_norms[None, :]
                          - 2.0 * self.K[index], 0.0)

    def points(self, index):
        B = np.zeros((len(index), self.n_samples))
        B[np.arange(len(index)), index] = 1.0
        return B

    def centre_distances(self, B):
        BK = B @ self.K
        sq = np.einsum("cn,cn->c", BK, B)
        return np.maximum(sq[:, None] + self.sq_norms[None, :] - 2.0 * BK, 0.0)

    def means(self, labels, weights, B):
        C = B.shape[0]
        V = np.zeros((C, self.n_samples))
        V[labels, np.arange(self.n_samples)] = weights
        sums = V.sum(axis=1)
        has = sums > 0
        out = B.copy()
        out[has] = V[has] / sums[has, None]
        return out
