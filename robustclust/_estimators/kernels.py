"""Kernel utilities: evaluation, checks, centring, the gamma default, the kernel starts.

The one home of what the kernel estimators need besides the solver core:

* evaluating a named kernel (scikit-learn's :mod:`sklearn.metrics.pairwise`)
  or a callable, with a shape check, and k(x, x) for new points;
* :func:`check_kernel_matrix`: symmetric positive semidefinite, or shifted;
* :func:`median_heuristic_gamma`: the rbf default gamma;
* :func:`centring`: H K H (changes no distance between affine combinations);
* the starts in feature space: :func:`kmeans_plusplus_indices` (k-means++ on
  kernel distances), :func:`spectral_embedding` (the spectral relaxation of
  kernel K-means; the paper's Laplacian start for graphs), and
  :func:`coefficients_from_labels` (a partition as centre coefficients).
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.sparse.linalg import eigsh
from sklearn.metrics.pairwise import euclidean_distances, pairwise_kernels

#: Kernels whose feature space is R^p: the chi^2 rules of the linear estimators apply.
EXPLICIT_FEATURES = ("linear", "cosine")
SKLEARN_NAMES = {"rbf": "rbf", "poly": "polynomial", "linear": "linear", "cosine": "cosine"}
#: Rows of the median heuristic's subsample.
GAMMA_SAMPLE = 1000
#: Relative tolerance of the symmetry and positive semidefiniteness checks.
PSD_RTOL = 1e-8
#: Above this many points the spectral start uses ARPACK instead of a dense eigensolver.
DENSE_EIGH_MAX = 2000


def check_kernel_matrix(K, shift=False):
    """Check that a precomputed kernel matrix is symmetric positive semidefinite.

    Asymmetry above 1e-8 ||K||_max, or a smallest eigenvalue below
    -1e-8 ||K||_2, is an error; with ``shift=True`` a negative smallest
    eigenvalue is instead removed by adding -lambda_min to the diagonal
    (every distance between distinct points grows by 2 |lambda_min|).
    Returns the (symmetrized, possibly shifted) matrix.
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"A precomputed kernel must be a square matrix; got shape {K.shape}.")
    scale = float(np.abs(K).max()) if K.size else 0.0
    asym = float(np.abs(K - K.T).max()) if K.size else 0.0
    if asym > PSD_RTOL * max(scale, 1e-300):
        raise ValueError(f"The kernel matrix is not symmetric (max |K - K^T| = {asym:.3g}).")
    K = (K + K.T) / 2.0
    vals = eigh(K, eigvals_only=True, subset_by_index=[0, 0]) if len(K) else np.zeros(1)
    top = eigh(K, eigvals_only=True, subset_by_index=[len(K) - 1, len(K) - 1]) \
        if len(K) else np.zeros(1)
    lam_min = float(vals[0])
    if lam_min < -PSD_RTOL * max(abs(float(top[0])), 1e-300):
        if not shift:
            raise ValueError(
                f"The kernel matrix is not positive semidefinite: its smallest eigenvalue "
                f"is {lam_min:.3g}. Use a valid kernel, or kernel_params={{'psd_shift': True}} "
                f"to add "
                f"{-lam_min:.3g} to its diagonal.")
        K = K + (-lam_min) * np.eye(len(K))
    return K


def median_heuristic_gamma(X):
    """gamma = 1 / median_{i<j} ||x_i - x_j||^2 over (a fixed subsample of) X."""
    if X.shape[0] > GAMMA_SAMPLE:
        X = X[np.random.RandomState(0).choice(X.shape[0], GAMMA_SAMPLE, replace=False)]
    D = euclidean_distances(X, squared=True)
    d = D[np.triu_indices(X.shape[0], 1)]
    d = d[d > 0]
    med = float(np.median(d)) if len(d) else 0.0
    return 1.0 / med if med > 0 else 1.0


def centring(K):
    """Column means and grand mean of K; centring K (H K H) changes no distance."""
    col = K.mean(axis=0)
    return col, float(col.mean())


def spectral_embedding(K, n_clusters):
    """Rows of the top ``n_clusters`` eigenvectors of K, scaled to unit length.

    The spectral relaxation of kernel K-means on K (Dhillon, Guan and Kulis,
    2004): max tr(Y^T K Y) over orthonormal Y is attained by the leading
    eigenvectors of K; their rows are normalized as in Ng, Jordan and Weiss
    and then clustered with K-means.  For the graph kernel
    K = nu I + D^{-1/2} E D^{-1/2} these are the eigenvectors of the C
    smallest eigenvalues of the symmetric Laplacian L = I - D^{-1/2} E D^{-1/2}
    whatever nu is: the paper's spectral start (Section VI-C).  K is used
    uncentred, as the relaxation needs.
    """
    n = len(K)
    if n <= DENSE_EIGH_MAX:
        _, V = eigh(K, subset_by_index=[n - n_clusters, n - 1])
    else:
        _, V = eigsh(K, k=n_clusters, which="LA", v0=np.ones(n))
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(norms > 0, norms, 1.0)


def kmeans_plusplus_indices(kdiag, K, n_clusters, sample_weight, rng):
    """Greedy k-means++ seeding on feature-space distances; returns point indices.

    As scikit-learn's ``kmeans_plusplus`` (2 + log C candidates per step,
    the one that most reduces the potential is kept), with
    ||phi_i - phi_j||^2 = K_ii + K_jj - 2 K_ij.
    """
    n = len(kdiag)
    n_trials = 2 + int(math.log(n_clusters))
    p = sample_weight / sample_weight.sum()
    first = rng.choice(n, p=p)
    centres = [first]
    closest = np.maximum(kdiag + kdiag[first] - 2.0 * K[first], 0.0)
    potential = float(sample_weight @ closest)
    for _ in range(1, n_clusters):
        if potential <= 0:
            rest = np.setdiff1d(np.arange(n), centres)
            centres.append(int(rng.choice(rest)))
            continue
        cum = np.cumsum(sample_weight * closest)
        cand = np.searchsorted(cum, rng.uniform(size=n_trials) * cum[-1])
        cand = np.clip(cand, 0, n - 1)
        d = np.maximum(kdiag[cand, None] + kdiag[None, :] - 2.0 * K[cand], 0.0)
        new_closest = np.minimum(closest, d)
        pots = new_closest @ sample_weight
        best = int(np.argmin(pots))
        centres.append(int(cand[best]))
        closest, potential = new_closest[best], float(pots[best])
    return np.array(centres)


class RowsKernel:
    """Adapts a matrix kernel k(X, Y) -> (n_X, n_Y) to scikit-learn's row callable."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, x, y):
        return float(np.asarray(self.kernel(x[None, :], y[None, :]))[0, 0])




def evaluate_kernel(kernel, X, Y, kernel_kw):
    """k(X, Y) for a named or callable kernel, as a dense float64 (n_X, n_Y) matrix."""
    if callable(kernel):
        K = kernel(X, Y)
        K = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=np.float64)
        shape = (X.shape[0], Y.shape[0])
        if K.shape != shape:
            raise ValueError(f"The kernel callable returned a matrix of shape {K.shape}; it "
                             f"must return one of shape {shape} (rows of X by rows of Y).")
        return K
    return pairwise_kernels(X, Y, metric=SKLEARN_NAMES[kernel], **kernel_kw)


def kernel_diagonal(kernel, X, kernel_kw, chunk=256):
    """k(x, x) for the rows of X."""
    return np.concatenate([np.diag(evaluate_kernel(kernel, X[i:i + chunk], X[i:i + chunk],
                                                   kernel_kw))
                           for i in range(0, X.shape[0], chunk)])


def coefficients_from_labels(labels, n_clusters, sample_weight=None):
    """Centre coefficients B^T (C, N) whose rows are the (weighted) means of the groups."""
    n = len(labels)
    w = np.ones(n) if sample_weight is None else sample_weight
    V = np.zeros((n, n_clusters))
    V[np.arange(n), labels] = w
    sums = V.sum(axis=0)
    if np.any(sums <= 0):
        raise ValueError("Every cluster of the initial labels needs a point of "
                         "positive weight.")
    return (V / sums).T


def points_as_coefficients(index, n_samples):
    """Centre coefficients B^T (C, N) of centres placed on the points ``index``."""
    B = np.zeros((len(index), n_samples))
    B[np.arange(len(index)), index] = 1.0
    return B
