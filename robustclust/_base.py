"""Parameter checks shared by the robust estimators."""

import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._selection import OutlierCountWarning


def check_outlier_params(estimator, n_samples, n_clusters):
    """Check n_clusters, lam and n_outliers against the data; the target count.

    Returns the target number of outliers s, or None when ``n_outliers`` is
    not given.  The errors name the offending parameter.
    """
    if n_samples < n_clusters:
        raise ValueError(f"n_samples={n_samples} should be >= n_clusters={n_clusters}.")
    lam, n_outliers = estimator.lam, estimator.n_outliers
    if lam is not None and n_outliers is not None:
        raise ValueError(
            "Give at most one of lam and n_outliers: lam fixes the outlier "
            "threshold, n_outliers asks for lam to be chosen; got "
            f"lam={lam!r} and n_outliers={n_outliers!r}.")
    if n_outliers is None:
        return None
    if isinstance(n_outliers, Integral):
        s = int(n_outliers)
        if s >= n_samples:
            raise ValueError(f"n_outliers={s} must be smaller than the number of "
                             f"samples ({n_samples}).")
        return s
    s = int(round(n_outliers * n_samples))
    if s == 0:
        warnings.warn(f"n_outliers={n_outliers} of {n_samples} samples rounds to 0 "
                      "outliers: nothing will be flagged.", OutlierCountWarning, stacklevel=4)
    return s


def centre(X, offset=None):
    """Dense X minus ``offset`` (its mean by default), as a copy, and the offset.

    Every distance in the solvers is expanded as ||x||^2 - 2 x.m + ||m||^2,
    which cancels catastrophically for data far from the origin; centring
    once makes the fits translation invariant (as scikit-learn's K-means does).
    Sparse X is left as it is (offset 0): centring would densify it.
    """
    if sp.issparse(X):
        return X, np.zeros(X.shape[1], dtype=X.dtype)
    if offset is None:
        offset = X.mean(axis=0)
    return X - offset, offset


def store_outliers(estimator, state, lam, lam_unweighted, n_samples, n_features, dtype):
    """Set the attributes every robust estimator shares from a final state.

    ``labels_`` (argmax of the memberships, -1 for outliers), ``outlier_mask_``,
    ``outlier_norms_`` (||o_n||_2), ``outlier_vectors_`` (CSR, so memory grows
    with the number of outliers), lambda, counts, objective and iterations.
    """
    index, vals = state.outlier_index, state.outlier_vectors
    p = n_features
    store_outlier_summary(estimator, state, lam, lam_unweighted, n_samples,
                          np.linalg.norm(vals, axis=1), dtype)
    O = sp.csr_matrix((np.ravel(vals), (np.repeat(index, p), np.tile(np.arange(p), len(index)))),
                      shape=(n_samples, p), dtype=dtype)
    O.eliminate_zeros()
    estimator.outlier_vectors_ = O


def store_outlier_summary(estimator, state, lam, lam_unweighted, n_samples, norms, dtype):
    """The shared attributes that do not need the outlier vectors themselves
    (kernel estimators only know their norms)."""
    index = state.outlier_index
    estimator.labels_ = state.labels.astype(np.intp, copy=True)
    estimator.labels_[index] = -1
    estimator.outlier_mask_ = np.zeros(n_samples, dtype=bool)
    estimator.outlier_mask_[index] = True
    estimator.outlier_norms_ = np.zeros(n_samples, dtype=dtype)
    estimator.outlier_norms_[index] = norms
    estimator.lambda_ = float(lam)
    estimator.unweighted_lambda_ = float(lam_unweighted)
    estimator.n_outliers_ = int(len(index))
    estimator.objective_ = float(state.objective)
    estimator.objective_history_ = np.asarray(state.history, dtype=np.float64)
    estimator.n_iter_ = int(state.n_iter)
