"""Geometries: the only code that touches the data representation.

A geometry answers, for its points x_1..x_N and any centres, the questions
the block updates ask:

* inner products of points and centres (:meth:`products`), from which every
  distance and residual norm of the paper follows (:class:`Products`:
  eqs. (12), (37), (38) in one place);
* sums of weighted points and of weighted outlier vectors (the numerators of
  eqs. (9), (23), (32));
* points as centres (reseeding an empty cluster), explicit residual rows
  (the entry-wise penalty), the scatter matrix of a covariance step;
* how far centres and outliers moved between iterates (the stopping rule).

:class:`LinearGeometry` holds a data matrix (dense of any array namespace, or
CSR), optionally measured in a Mahalanobis metric; centres are rows of means.
:class:`KernelGeometry` holds a kernel matrix K; a centre is a row of
coefficients b over the training points (m = sum_n b_n phi(x_n), eq. (31)),
so it is the linear geometry of the points e_1..e_N with inner product K.
Models, penalties and the driver see only what these classes return.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms, safe_sparse_dot

from .backend import (asarray, bincount, float64, maximum, namespace, onehot, pick, rowdot,
                      set_masked_rows, take)


#: Rows x components of the block of whitened rows the per-component distances
#: compute with one product (measured, 100,000 x 32 with 16 components and
#: 200,000 x 8 with 64: 0.32x and 0.35x the time of one product per component;
#: blocks of 2^13 were 3.7x and 0.5x: each product needs rows enough to pay).
WHITEN_BLOCK_ROWS = 65536
#: Rows x centres of the block of products :meth:`LinearGeometry.label_sq_norms`
#: takes at a time (4 MB: the (N, C) products of a whole state are as large
#: as X when C is about the number of features, benchmarks/bench_memory.py;
#: blocks of 8,192 rows cost a fit of 300,000 x 4 rows 10-20% in the calls).
LABEL_BLOCK_ENTRIES = 2**19
#: Largest N * C for which hard K-means' centre sums use a dense indicator.
_DENSE_INDICATOR = 2**18


@dataclass
class Assignment:
    """Weights on one cluster per point: ``weights[n]`` on cluster ``labels[n]``.

    The V of hard K-means' centre step (eq. (9) with u_nc in {0, 1}), kept as
    labels so that its sums cost O(N p), not O(N C p).
    """

    labels: object
    weights: object
    n_clusters: int

    def dense(self, xp):
        return onehot(self.labels, self.n_clusters, xp, self.weights)

    def totals(self, xp):
        """sum_n V_nc for each c."""
        return bincount(self.labels, self.weights, self.n_clusters, xp)


def weight_rows(V, index, xp):
    """Rows ``index`` of a weight matrix V (dense, or an :class:`Assignment`), (k, C)."""
    if isinstance(V, Assignment):
        return onehot(take(V.labels, index, xp), V.n_clusters, xp, take(V.weights, index, xp))
    return take(V, index, xp)


@dataclass
class Products:
    """Inner products of N points with C centres, in one metric.

    ``cross[n, c] = <x_n, m_c>``, ``gram[c, d] = <m_c, m_d>``,
    ``diag[n] = <x_n, x_n>``.  Every distance the paper uses is a quadratic
    form in these (eqs. (12), (37), (38)), so the functions below serve
    linear features, Mahalanobis metrics and kernel feature spaces alike.
    ``raw`` keeps the Euclidean products when these are a scalar multiple of
    them (a spherical covariance), so a change of variance costs no product.
    """

    cross: object
    gram: object
    diag: object
    xp: object = np
    #: (W, <x_n, M^T w_n>, G w_n, w_n^T G w_n) of the last residual weights W
    #: (an (N, C) matrix, by identity): the O-step's residual norms and the
    #: U-step's distances of one iteration both need them.
    _weighted: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def sq_distances(self):
        """||x_n - m_c||^2 for all points and centres, (N, C) (eq. (37), o = 0)."""
        xp = self.xp
        D = self.diag[:, None] - 2.0 * self.cross + xp.linalg.diagonal(self.gram)[None, :]
        return maximum(D, 0.0, xp) if xp is not np else np.maximum(D, 0.0, out=D)

    def residual_sq_norms(self, W):
        """||x_n - sum_c w_nc m_c||^2: the residual norms of eq. (12) (and (33)).

        ``W`` is a label per point (hard K-means: w_n = e_label) or an (N, C)
        matrix of residual weights.
        """
        xp = self.xp
        if W.ndim == 1:
            r2 = self.diag + pick_diag(self.gram, W, xp) - 2.0 * pick(self.cross, W, xp)
        else:
            cross_w, _, quad = self.weighted(W)
            r2 = self.diag - 2.0 * cross_w + quad
        return maximum(r2, 0.0, xp)

    def weighted(self, W):
        """(<x_n, sum_c w_nc m_c>, G w_n, w_n^T G w_n) for an (N, C) weight matrix,
        ((N,), (N, C), (N,)); kept for the last W."""
        kept = self._weighted
        if kept is not None and kept[0] is W:
            return kept[1:]
        xp = self.xp
        GW = W @ self.gram
        parts = (rowdot(W, self.cross, xp), GW, rowdot(GW, W, xp))
        self._weighted = (W,) + parts
        return parts

    def removed_sq_distances(self, shrink, W):
        """||x_n - o_n - m_c||^2 for every point and centre, (N, C) (eq. (37)).

        o_n = s_n (x_n - sum_d w_nd m_d) with s_n = ``shrink`` (0 for inliers)
        and the residual weights ``W`` (labels or rows); writing t_n = 1 - s_n,

            ||t x + s M^T w - m_c||^2 = t^2 <x,x> + 2 t (s <x, M^T w> - <x, m_c>)
                                        + s^2 w^T G w - 2 s (G w)_c + G_cc,

        which for s_n = 0 is the plain distance.
        """
        xp = self.xp
        t = 1.0 - shrink
        kb = self.cross
        if W.ndim == 1:
            cross_w = pick(kb, W, xp)
            GW = take(self.gram, W, xp)
            quad = pick_diag(self.gram, W, xp)
        else:
            cross_w, GW, quad = self.weighted(W)
        a = t * t * self.diag + shrink * shrink * quad + 2.0 * t * shrink * cross_w
        if xp is np:  # the same sums in place: (N, C) temporaries cost more than the flops
            D = kb * (-2.0 * t)[:, None]
            D += a[:, None]
            D -= GW * (2.0 * shrink)[:, None]
            D += xp.linalg.diagonal(self.gram)[None, :]
            return np.maximum(D, 0.0, out=D)
        D = (-2.0 * t)[:, None] * kb + a[:, None] - (2.0 * shrink)[:, None] * GW \
            + xp.linalg.diagonal(self.gram)[None, :]
        return maximum(D, 0.0, xp)

    def rows(self, index):
        """The products of the points ``index`` only."""
        return Products(take(self.cross, index, self.xp), self.gram,
                        take(self.diag, index, self.xp), self.xp)

    def rescaled(self, factor):
        """The products in a metric ``factor`` times this one."""
        return Products(self.cross * factor, self.gram * factor, self.diag * factor, self.xp)


def pick_diag(A, labels, xp):
    """A[labels[n], labels[n]] for a small square A."""
    return xp.take(xp.linalg.diagonal(A), labels)


def dense_rows(X, index, xp=np):
    """Rows ``index`` of a dense or CSR X as a dense float64 array."""
    if sp.issparse(X):
        return X[index].toarray().astype(np.float64, copy=False)
    rows = take(X, index, xp)
    return asarray(rows, xp, like=rows, dtype=float64(xp))


class LinearGeometry:
    """Points as rows of a data matrix X (dense of any namespace, or CSR).

    Centres are C x p arrays (float64 or the data's dtype); the products with
    them use the data's precision (as scikit-learn's K-means does) and every
    per-point quantity is computed in float64.  A metric (a
    :class:`~robustclust._core.covariance.Covariance` of kind diag or full)
    measures everything in the Sigma^-1 norm.

    Parameters
    ----------
    X : array or CSR matrix of shape (n_samples, n_features)
        The data, already centred and scaled by the estimator.
    sq_norms : ndarray of shape (n_samples,), optional
        The squared row norms of X (float64), where the estimator computed
        them while centring X (NumPy X only); else they are computed here.
    """

    kernel = False

    def __init__(self, X, sq_norms=None):
        self.X = X
        self.sparse = sp.issparse(X)
        self.xp, self.is_numpy = namespace(X)
        self.n_samples, self.dim = X.shape
        self.feature_dim = self.dim
        self.dtype = X.dtype
        xp = self.xp
        if self.is_numpy and sq_norms is not None:
            self.sq_norms = np.asarray(sq_norms, dtype=np.float64)
        elif self.is_numpy:
            self.sq_norms = row_norms(X, squared=True).astype(np.float64)
        else:
            self.sq_norms = rowdot(X, X, xp)
        self._gram = None
        self._squares_cache = None
        #: the compiled hard pass's distance bounds over this X
        #: (:func:`~robustclust._core._fused.bounds_of`)
        self.pass_bounds = None

    # -- products ----------------------------------------------------------------
    def _dot(self, A):
        """X A^T in the data's precision, returned as float64, (N, rows of A)."""
        xp = self.xp
        if self.is_numpy:
            A = np.asarray(A, dtype=self.dtype)
            return np.asarray(safe_sparse_dot(self.X, A.T, dense_output=True),
                              dtype=np.float64)
        A = xp.astype(A, self.dtype)
        return xp.astype(self.X @ A.T, xp.float64)

    def products(self, centers, metric=None):
        """:class:`Products` of the points with ``centers`` (in ``metric``: None is
        the Euclidean inner product, else a diag or full covariance)."""
        xp = self.xp
        M = asarray(centers, xp, like=centers, dtype=float64(xp))
        if metric is None:
            return Products(self._dot(M), M @ M.T, self.sq_norms, xp)
        return self._metric_products(M, metric)

    def label_sq_norms(self, centers, labels):
        """||x_n - m_{labels[n]}||^2, (N,): ``products(centers).residual_sq_norms(labels)``
        by the same formula, the products taken a block of rows at a time (no
        (N, C) array; NumPy X, else through :meth:`products`).  Equal to
        rounding: BLAS may sum a block's products in another order than the
        whole product's (seen with one centre)."""
        if not self.is_numpy:
            return self.products(centers).residual_sq_norms(labels)
        M = np.asarray(centers, dtype=np.float64)
        gram_diag = np.diagonal(M @ M.T)
        A = np.asarray(M, dtype=self.dtype)
        out = np.empty(self.n_samples)
        rows = max(1, LABEL_BLOCK_ENTRIES // max(M.shape[0], 1))
        for lo in range(0, self.n_samples, rows):
            hi = min(lo + rows, self.n_samples)
            cross = np.asarray(safe_sparse_dot(self.X[lo:hi], A.T, dense_output=True),
                               dtype=np.float64)
            own = labels[lo:hi]
            out[lo:hi] = (self.sq_norms[lo:hi] + gram_diag[own]
                          - 2.0 * cross[np.arange(hi - lo), own])
        return np.maximum(out, 0.0, out=out)

    def _metric_products(self, M, metric):
        xp = self.xp
        if metric.kind == "diag":
            p2 = metric.precision_diag(xp, like=M)
            Mw = M * p2
            if self.sparse:
                diag = np.asarray(self.X.multiply(self.X) @ p2).ravel()
            elif self.is_numpy:
                diag = np.einsum("np,p,np->n", self.X, p2, self.X)
            else:
                X64 = xp.astype(self.X, xp.float64)
                diag = xp.sum(X64 * X64 * p2, axis=1)
            return Products(self._dot(Mw), Mw @ M.T, diag, xp)
        # full: whitened data X P (Sigma^-1 = P P^T)
        P = metric.factor(xp, like=M)
        if self.is_numpy:
            Xw = np.asarray(safe_sparse_dot(self.X, P, dense_output=True), dtype=np.float64)
            diag = row_norms(Xw, squared=True)
        else:
            Xw = xp.astype(self.X, xp.float64) @ P
            diag = rowdot(Xw, Xw, xp)
        Mw = M @ P
        return Products(Xw @ Mw.T, Mw @ Mw.T, diag, xp)

    # -- sums ----------------------------------------------------------------------
    def point_sums(self, V):
        """sum_n V_nc x_n for each c, (C, p) float64.

        ``V`` is an (N, C) weight matrix, or (labels, weights) for weights on
        one cluster per point (hard K-means: a sparse product, O(N p)).
        """
        xp = self.xp
        if isinstance(V, Assignment):
            if self.is_numpy:
                n = self.n_samples
                X64 = self.X.astype(np.float64, copy=False)
                if n * V.n_clusters <= _DENSE_INDICATOR:
                    # small problems: one product with the (N, C) indicator
                    # (building a sparse one cost more than the sum)
                    return np.asarray(safe_sparse_dot(X64.T, V.dense(np),
                                                      dense_output=True)).T
                indicator = sp.csc_matrix(
                    (np.asarray(V.weights, dtype=np.float64), np.asarray(V.labels),
                     np.arange(n + 1)), shape=(V.n_clusters, n))
                sums = indicator @ X64
                return sums.toarray() if sp.issparse(sums) else np.asarray(sums)
            V = V.dense(xp)
        if self.is_numpy:
            return np.asarray(safe_sparse_dot(self.X.T, V, dense_output=True),
                              dtype=np.float64).T
        return V.T @ xp.astype(self.X, xp.float64)

    def removed_sums(self, V, outliers, centers):
        """sum_n V_nc (x_n - o_n) for each c, (C, p): the numerators of eqs. (9), (23).

        ``V`` as in :meth:`point_sums`; ``centers`` those of the O-step that
        made ``outliers``.  With many outliers (:meth:`Outliers.many`) in the
        shrink form o_n = s_n (x_n - sum_d w_nd m_d),

            sum_n V_nc (1 - s_n) x_n + [(V s)^T W M]_c,

        one product with X and an (N, C) one, whatever their number; else
        the k outlier rows are formed (:meth:`outlier_sums`).
        """
        if outliers.count == 0:
            return self.point_sums(V)
        if isinstance(V, Assignment) or not outliers.many(self.n_samples):
            return self.point_sums(V) - self.outlier_sums(V, outliers, centers)
        s = outliers.shrink_full[:, None]
        return (self.point_sums(V * (1.0 - s))
                + self.combination((V * s).T @ outliers.weights_full, centers))

    def outlier_sums(self, V, outliers, centers):
        """sum_n V_nc o_n for each c, (C, p): the outlier part of eqs. (9), (23).

        ``V`` as in :meth:`point_sums`; only the k outlier rows are used.
        """
        xp = self.xp
        if outliers.count == 0:
            return None
        rows = self.outlier_rows(outliers, centers)
        return weight_rows(V, outliers.index, xp).T @ rows

    def outlier_rows(self, outliers, centers):
        """The outlier vectors o_n as dense float64 rows, (k, p); cached."""
        if outliers.rows is None:
            xp = self.xp
            X_k = dense_rows(self.X, outliers.index, xp)
            outliers.rows = outliers.shrink[:, None] * (X_k - self.combination(
                outliers.weights, centers))
        return outliers.rows

    def combination(self, W, centers):
        """sum_c w_nc m_c for rows ``W`` (labels or weights), (k, p) float64."""
        xp = self.xp
        M = asarray(centers, xp, like=centers, dtype=float64(xp))
        return take(M, W, xp) if W.ndim == 1 else W @ M

    def residual_rows(self, centers, W, index):
        """Residuals x_n - sum_c w_nc m_c of the points ``index`` as dense rows.

        ``W`` holds the rows of those points (labels or weights).
        """
        return dense_rows(self.X, index, self.xp) - self.combination(W, centers)

    def points(self, index):
        """The points ``index`` as dense float64 rows, (k, p)."""
        return dense_rows(self.X, index, self.xp)

    def point_centers(self, index):
        """Centres placed on the points ``index`` (reseeding), (k, p)."""
        rows = dense_rows(self.X, index, self.xp)
        return self.xp.astype(rows, self.dtype)

    def scatter(self, V, nk, centers, outliers, lam_n=None, t0=None):
        """S = sum_n sum_c V_nc (y_n - m_c)(y_n - m_c)^T with y_n = x_n - o_n (eq. (26)),
        plus sum_n (lam_n / t0_n) o_n o_n^T when ``lam_n`` is given, (p, p).

        X^T X is computed once; the outliers enter through their k rows.
        """
        xp = self.xp
        if self._gram is None:
            if self.is_numpy:
                self._gram = np.asarray(safe_sparse_dot(self.X.T, self.X, dense_output=True),
                                        dtype=np.float64)
            else:
                X64 = xp.astype(self.X, xp.float64)
                self._gram = X64.T @ X64
        M = centers
        A = self.point_sums(V)
        Syy = self._gram
        if outliers.count:
            vals = self.outlier_rows(outliers, centers)
            A = A - weight_rows(V, outliers.index, xp).T @ vals
            Xo = dense_rows(self.X, outliers.index, xp)
            cross = Xo.T @ vals
            Syy = Syy - cross - cross.T + vals.T @ vals
        S = Syy - M.T @ A - A.T @ M + (M.T * nk) @ M
        if lam_n is not None and outliers.count:
            vals = outliers.rows
            S = S + (vals.T * (lam_n / t0)) @ vals
        return S

    # -- one covariance per component ------------------------------------------------
    def _squares(self):
        """X * X in float64 (CSR for sparse X), made once: the per-component
        diagonal covariances use it three times an iteration."""
        if self._squares_cache is None:
            xp = self.xp
            if self.sparse:
                self._squares_cache = self.X.multiply(self.X).tocsr().astype(np.float64)
            elif self.is_numpy:
                self._squares_cache = np.square(self.X, dtype=np.float64)
            else:
                X64 = xp.astype(self.X, xp.float64)
                self._squares_cache = X64 * X64
        return self._squares_cache

    def _squares_times(self, A):
        """(X * X) A^T in float64, (N, rows of A): squared coordinates weighted."""
        if self.sparse:
            return np.asarray(self._squares() @ np.asarray(A).T, dtype=np.float64)
        if self.is_numpy:
            return self._squares() @ np.asarray(A, dtype=np.float64).T
        return self._squares() @ A.T

    def _weighted_squares(self, V):
        """V^T (X * X) in float64, (C, p), for an (N, C) weight matrix V."""
        if self.sparse:
            return np.asarray(self._squares().T @ V, dtype=np.float64).T
        return V.T @ self._squares()

    def _whitened(self, P):
        """X P in float64 for a (p, p) factor P, (N, p): one GEMM."""
        xp = self.xp
        if self.is_numpy:
            return np.asarray(safe_sparse_dot(self.X, P, dense_output=True), dtype=np.float64)
        return xp.astype(self.X, xp.float64) @ P

    def _whitened_sq_distances(self, M, P):
        """||(x_n - m_c) P_c||^2 for dense NumPy X, (N, C): the rows times every
        component's factor side by side, one GEMM a block of WHITEN_BLOCK_ROWS
        rows x components, then the squares summed per component."""
        C, p, _ = P.shape
        W = P.transpose(1, 0, 2).reshape(p, C * p)           # [P_1 ... P_C]
        shift = np.einsum("cj,cjk->ck", M, P).reshape(C * p)  # m_c P_c
        n = self.n_samples
        D = np.empty((n, C))
        rows = max(1, WHITEN_BLOCK_ROWS // C)
        for start in range(0, n, rows):
            Y = np.asarray(self.X[start:start + rows] @ W, dtype=np.float64)
            Y -= shift
            Y = Y.reshape(len(Y), C, p)
            D[start:start + rows] = np.einsum("ncj,ncj->nc", Y, Y)
        return D

    def component_sq_distances(self, centers, covs, outliers=None):
        """||x_n - o_n - m_c||^2 in Sigma_c^-1's norm, every point and component, (N, C).

        ``covs`` is a :class:`~robustclust._core.covariance.ComponentCovariances`.
        Full covariances: one whitening X P_c (a GEMM) per component;
        diagonal: two products with the (C, p) precisions; spherical: the
        Euclidean distances scaled per component.  The outliers (explicit
        rows o_n, ``outliers`` None or empty for o = 0) are measured on their
        k rows.
        """
        xp = self.xp
        M = asarray(centers, xp, like=centers, dtype=float64(xp))
        C = M.shape[0]
        if covs.kind == "spherical":
            prec = asarray(covs.P**2, xp, like=M)
            D = self.products(M).sq_distances() * prec[None, :]
        elif covs.kind == "diag":
            prec = asarray(covs.P**2, xp, like=M)
            Mp = prec * M
            D = (self._squares_times(prec) - 2.0 * self._dot(Mp)
                 + xp.sum(Mp * M, axis=1)[None, :])
            D = maximum(D, 0.0, xp)
        elif self.is_numpy and not self.sparse:
            D = self._whitened_sq_distances(M, np.asarray(covs.P, dtype=np.float64))
        else:
            cols = []
            for c in range(C):
                P_c = asarray(covs.P[c], xp, like=M)
                Y = self._whitened(P_c) - (M[c, :] @ P_c)[None, :]  # (x - m_c) P_c
                cols.append(rowdot(Y, Y, xp))
            D = xp.stack(cols, axis=1)
        if outliers is not None and outliers.count:
            Y = dense_rows(self.X, outliers.index, xp) - self.outlier_rows(outliers, centers)
            removed = row_sq_distances(Y, M, covs, xp)
            if xp is np:
                D[outliers.index] = removed
            else:  # the standard scatters by a boolean mask (rows in index order)
                D = set_masked_rows(D, outliers.flagged_full, removed, xp)
        return D

    def component_scatter(self, V, nk, centers, outliers):
        """sum_n V_nc (y_n - m_c)(y_n - m_c)^T for each c, y_n = x_n - o_n: (C, p, p).

        The per-component scatter of the covariance step (eq. (26) for each
        component): X^T diag(V_c) X is one GEMM per component; the outliers
        enter through their k rows.
        """
        xp = self.xp
        M = asarray(centers, xp, like=centers, dtype=float64(xp))
        C = M.shape[0]
        if self.sparse:  # expanded around the origin: centring would densify X
            A = self.point_sums(V)
            mats = []
            for c in range(C):
                v = V[:, c]
                G = np.asarray(safe_sparse_dot(self.X.T, self.X.multiply(v[:, None]).tocsr(),
                                               dense_output=True), dtype=np.float64)
                m, a = M[c], A[c]
                mats.append(G - np.outer(m, a) - np.outer(a, m) + nk[c] * np.outer(m, m))
        else:  # (x_n - m_c) formed, as scikit-learn does: no cancellation
            X64 = self.X.astype(np.float64, copy=False) if self.is_numpy \
                else xp.astype(self.X, xp.float64)
            mats = []
            for c in range(C):
                v = V[:, c]
                if xp is np:  # the rows of the component only: the others add 0 exactly
                    rows = np.flatnonzero(v)
                    if len(rows) < 0.5 * len(v):
                        R = X64[rows] - M[c, :][None, :]
                        mats.append((R * v[rows][:, None]).T @ R)
                        continue
                R = X64 - M[c, :][None, :]
                mats.append((R * v[:, None]).T @ R)
        if outliers.count:
            # y_k = x_k - o_k on the k outlier rows: swap their terms
            vals = self.outlier_rows(outliers, centers)
            Vk = weight_rows(V, outliers.index, xp)
            Xo = dense_rows(self.X, outliers.index, xp)
            for c in range(C):
                w = Vk[:, c][:, None]
                Rx = Xo - M[c, :][None, :]
                Ry = Rx - vals
                mats[c] = mats[c] + (Ry * w).T @ Ry - (Rx * w).T @ Rx
        return xp.stack(mats, axis=0)

    def component_scatter_diag(self, V, nk, centers, outliers):
        """The diagonals of :meth:`component_scatter`, (C, p): one product (X * X)^T V."""
        xp = self.xp
        M = asarray(centers, xp, like=centers, dtype=float64(xp))
        A = self.point_sums(V)
        Q = self._weighted_squares(V)  # sum_n V_nc x_nj^2
        if outliers.count:
            vals = self.outlier_rows(outliers, centers)
            Vk = weight_rows(V, outliers.index, xp)
            Xo = dense_rows(self.X, outliers.index, xp)
            A = A - Vk.T @ vals
            Q = Q - Vk.T @ (2.0 * Xo * vals - vals * vals)
        return Q - 2.0 * M * A + nk[:, None] * M * M

    # -- how far an iterate moved ---------------------------------------------------
    def centre_norm(self, centers, products=None):
        """||M||_F (Euclidean)."""
        return float(np.linalg.norm(centers)) if self.xp is np else \
            math.sqrt(float(self.xp.sum(centers * centers)))

    def centre_shift(self, old, new, old_products=None, new_products=None):
        """||M_new - M_old||_F."""
        return self.centre_norm(new - old)

    def outlier_shift(self, old, new, old_centers, new_centers, old_products=None,
                      new_products=None):
        """||O_new - O_old||_F between two sparse-row outlier matrices."""
        xp = self.xp
        a = self.outlier_rows(old, old_centers) if old.count else None
        b = self.outlier_rows(new, new_centers) if new.count else None
        if a is None and b is None:
            return 0.0
        if a is None:
            return self.centre_norm(b)
        if b is None:
            return self.centre_norm(a)
        ia, ib = old.index, new.index
        if xp is np and np.array_equal(ia, ib):
            return float(np.linalg.norm(b - a))
        # rows in both: their difference; rows in one only: themselves
        in_new = take(new.sizes_full, ia, xp) > 0
        in_old = take(old.sizes_full, ib, xp) > 0
        pb = xp.searchsorted(ib, ia[in_new])
        diff = a[in_new] - take(b, pb, xp)
        sq = (xp.sum(diff * diff) + xp.sum(a[~in_new] ** 2) + xp.sum(b[~in_old] ** 2))
        return math.sqrt(max(float(sq), 0.0))

    def outlier_norms(self, outliers, centers):
        """Euclidean ||o_n||_2 of the outlier rows (known, or from the rows)."""
        if outliers.euclidean is not None:
            return outliers.euclidean
        rows = self.outlier_rows(outliers, centers)
        return self.xp.sqrt(rowdot(rows, rows, self.xp))

    def outlier_norm(self, outliers, centers):
        """||O||_F."""
        if outliers.count == 0:
            return 0.0
        if outliers.euclidean is not None:
            return math.sqrt(float(self.xp.sum(outliers.euclidean ** 2)))
        return self.centre_norm(self.outlier_rows(outliers, centers))


def row_sq_distances(Y, M, covs, xp=np):
    """||y_k - m_c||^2 in Sigma_c^-1's norm for a few dense rows Y (k, p), (k, C).

    Spherical and diagonal kinds: all components at once, from the (k, C, p)
    differences (a few rows, a few components: one expression instead of a
    call per component, which dominated the small-N EM iteration); full:
    component by component (k x p temporaries only).
    """
    if covs.kind != "full":
        return _diagonal_sq_norms(Y[:, None, :] - M[None, :, :], covs, xp)
    cols = []
    for c in range(M.shape[0]):
        diff = Y - M[c, :][None, :]
        cols.append(_row_norms_in(diff, covs, c, xp))
    return xp.stack(cols, axis=1) if cols else xp.zeros((Y.shape[0], 0))


def row_sq_norms(V, covs, xp=np):
    """||v_k||^2 in each Sigma_c^-1's norm for a few dense rows V (k, p), (k, C)."""
    if covs.kind == "spherical":
        return rowdot(V, V, xp)[:, None] * asarray(covs.P**2, xp, like=V)[None, :]
    if covs.kind == "diag":
        return _diagonal_sq_norms(V[:, None, :], covs, xp)
    return xp.stack([_row_norms_in(V, covs, c, xp) for c in range(covs.n_components)], axis=1)


def _diagonal_sq_norms(V, covs, xp):
    """sum_j V_kcj^2 Lambda_c,jj for (k, C, p) rows (or (k, 1, p): the same rows in
    every component's norm), spherical or diagonal Lambda_c, (k, C); each term
    rounded as :func:`_row_norms_in` rounds it."""
    prec = asarray(covs.P**2, xp, like=V)
    if covs.kind == "spherical":
        if xp is np:
            return np.einsum("kcj,kcj->kc", V, V, dtype=np.float64) * prec[None, :]
        V = xp.astype(V, xp.float64)
        return xp.sum(V * V, axis=2) * prec[None, :]
    T = V * V * prec[None, :, :]
    p = T.shape[2]
    if p >= _SEQUENTIAL_SUM:
        return xp.sum(T, axis=2)
    # a short axis: one addition of (k, C) arrays per feature, instead of a
    # reduction call per (k, C) entry (about 40 ns each, most of the small-N EM
    # iteration of the diagonal type); left to right, as NumPy sums fewer
    # than 8 terms, so the result is the same to the last bit
    out = T[:, :, 0]
    for j in range(1, p):
        out = out + T[:, :, j]
    return out


#: NumPy adds fewer terms than this left to right (pairwise beyond).
_SEQUENTIAL_SUM = 8


def _row_norms_in(V, covs, c, xp):
    like = V
    if covs.kind == "spherical":
        # P_c P_c as NumPy's P**2 of row_sq_norms squares it (Python's float ** 2
        # calls pow, one ulp off x * x for some x)
        P_c = float(covs.P[c])
        return rowdot(V, V, xp) * (P_c * P_c)
    if covs.kind == "diag":
        prec = asarray(covs.P[c] ** 2, xp, like=like)
        return xp.sum(V * V * prec[None, :], axis=1)
    W = V @ asarray(covs.P[c], xp, like=like)
    return rowdot(W, W, xp)




class KernelGeometry:
    """Points given by a kernel matrix K (or their kernel rows against training points).

    A centre is a row b of coefficients over the N training points,
    m = sum_n b_n phi(x_n) (eq. (31)); the centres of a state are the C x N
    matrix B^T.  The products are K B (the O(N^2 C) work of an iteration) and
    B^T K B; sums of weighted points are weight matrices themselves (the
    point phi(x_n) is the coefficient vector e_n), and outlier vectors
    o_n = s_n (phi(x_n) - sum_c w_nc m_c) are combinations of e_n and the
    rows of B (eqs. (33)-(36)).  NumPy only.

    Parameters
    ----------
    K : ndarray of shape (n_samples, n_samples) or None
        The (centred) training kernel matrix.
    feature_dim : int or None
        Dimension of the feature space when it is known (linear and cosine
        kernels: n_features), None otherwise.
    rows, diag, center_gram : ndarrays, optional
        For new points: their kernel rows against the training points
        (n_new, N), their k(x, x), and B^T K B of the fitted centres.
    """

    kernel = True
    xp = np
    is_numpy = True
    sparse = False

    def __init__(self, K=None, feature_dim=None, *, rows=None, diag=None, center_gram=None):
        self.K = K if rows is None else rows
        self.training = rows is None
        self.sq_norms = np.ascontiguousarray(np.diag(K) if diag is None else diag,
                                             dtype=np.float64)
        self.n_samples = self.K.shape[0]
        self.dim = self.K.shape[1]
        self.feature_dim = feature_dim
        self.dtype = np.dtype(np.float64)
        self._center_gram = center_gram

    def products(self, centers, metric=None):
        """K B and B^T K B for the coefficient rows ``centers`` = B^T, (N, C) and (C, C)."""
        if metric is not None:
            raise ValueError("kernel geometries have no Mahalanobis metric")
        KB = self.K @ centers.T
        if self.training:
            G = centers @ KB
            G = (G + G.T) / 2.0
        else:
            G = self._center_gram
        return Products(KB, G, self.sq_norms, np)

    def point_sums(self, V):
        """sum_n V_nc e_n: the weights themselves, as C x N coefficient rows."""
        if isinstance(V, Assignment):
            V = V.dense(np)
        return np.ascontiguousarray(V.T)

    def removed_sums(self, V, outliers, centers):
        """sum_n V_nc (phi_n - o_n) in coefficients, (C, N) (eq. (32))."""
        sums = self.point_sums(V)
        if outliers.count == 0:
            return sums
        return sums - self.outlier_sums(V, outliers, centers)

    def outlier_sums(self, V, outliers, centers):
        """sum_n V_nc o_n in coefficients, (C, N): eq. (36) summed as in eq. (32)."""
        if outliers.count == 0:
            return None
        index, s, W = outliers.index, outliers.shrink, outliers.weights
        Vk = weight_rows(V, index, np)
        sV = s[:, None] * Vk
        out = np.zeros((Vk.shape[1], self.n_samples))
        out[:, index] = sV.T
        Wk = _weight_rows(W, Vk.shape[1])
        return out - (Wk.T @ sV).T @ centers

    def point_centers(self, index):
        """Centres on the training points ``index``: rows e_n."""
        B = np.zeros((len(index), self.n_samples))
        B[np.arange(len(index)), index] = 1.0
        return B

    def outlier_norms(self, outliers, centers=None):
        """||o_n|| in feature space (eq. (38))."""
        return outliers.sizes if outliers.euclidean is None else outliers.euclidean

    def outlier_norm(self, outliers, centers=None):
        """||O||_F in feature space."""
        e = self.outlier_norms(outliers)
        return math.sqrt(float(np.dot(e, e)))

    def centre_norm(self, centers, products):
        """||M||_F in feature space: sqrt(trace(B^T K B))."""
        return math.sqrt(max(float(np.trace(products.gram)), 0.0))

    def centre_shift(self, old, new, old_products, new_products):
        """||M_new - M_old||_F in feature space, from K B of both."""
        dB = new - old
        return math.sqrt(max(float(np.einsum("cn,nc->", dB, new_products.cross
                                             - old_products.cross)), 0.0))

    def outlier_shift(self, old, new, old_centers, new_centers, old_products, new_products):
        """||O_new - O_old||_F in feature space, each O in the shrink form on its own B.

        Row n of the difference is (s'_n - s_n) phi_n - (s'_n M' w'_n - s_n M w_n).
        """
        ia, ib = old.index, new.index
        union = np.union1d(ia, ib)
        if len(union) == 0:
            return 0.0
        C = old_products.cross.shape[1]
        s0, s1 = np.zeros(len(union)), np.zeros(len(union))
        c0, c1 = np.zeros((len(union), C)), np.zeros((len(union), C))
        pa, pb = np.searchsorted(union, ia), np.searchsorted(union, ib)
        s0[pa], s1[pb] = old.shrink, new.shrink
        c0[pa] = old.shrink[:, None] * _weight_rows(old.weights, C)
        c1[pb] = new.shrink[:, None] * _weight_rows(new.weights, C)
        ds = s1 - s0
        KB0, KB1 = old_products.cross, new_products.cross
        cross = new_centers @ KB0  # B'^T K B
        lin = (np.einsum("kc,kc->k", KB1[union], c1) - np.einsum("kc,kc->k", KB0[union], c0))
        quad = (np.einsum("kc,kc->k", c1 @ new_products.gram, c1)
                - 2.0 * np.einsum("kc,kc->k", c1 @ cross, c0)
                + np.einsum("kc,kc->k", c0 @ old_products.gram, c0))
        sq = ds * ds * self.sq_norms[union] - 2.0 * ds * lin + quad
        return math.sqrt(max(float(sq.sum()), 0.0))


def _weight_rows(W, C):
    """Rows of residual weights as a dense (k, C) matrix (labels become one-hot)."""
    return onehot(W, C, np) if W.ndim == 1 else W


