"""A small K-medians (Lloyd iterations in the l1 norm) for the USPS comparison.

Table II of the paper compares robust K-means with K-medians, the usual
"robust" alternative to K-means: each point goes to the centre nearest in
the l1 norm, each centre is the coordinate-wise median of its points. No
dependency of the project provides one, so this module does; it is private
to the reproduction.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["KMediansResult", "kmedians", "l1_distances"]


@dataclass
class KMediansResult:
    """Outcome of :func:`kmedians`.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,)
        Index of each point's centre.
    centers : ndarray of shape (n_clusters, n_features)
        The centres: coordinate-wise medians of their points.
    cost : float
        sum_n ||x_n - m_{c(n)}||_1 at ``labels`` and ``centers``.
    history : ndarray
        The cost after the assignment step of every round, before its centre
        update (strictly decreasing).
    n_iter : int
        Number of rounds (assignment, then centre update); the last
        assignment, which changes nothing, is not counted.
    """

    labels: np.ndarray
    centers: np.ndarray
    cost: float
    history: np.ndarray
    n_iter: int


def l1_distances(X, centers):
    """l1 distance of every point to every centre, shape (n_samples, n_clusters)."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    return np.column_stack([np.abs(X - m).sum(axis=1) for m in centers])


def kmedians(X, init, *, max_iter=300):
    """K-medians from given initial centres.

    Minimizes sum_n ||x_n - m_{c(n)}||_1 over the assignment c and the
    centres M by alternating the two exact block minimizations:

    * assignment: each point to its l1-nearest centre (ties: lowest index);
    * update: each centre to the coordinate-wise median of its points (the
      l1 cost separates over coordinates, and a median minimizes a sum of
      absolute deviations; with an even count :func:`numpy.median` returns the
      midpoint of the two middle values, one of the minimizers).

    Neither step increases the cost, so it is non-increasing; the iteration
    stops when the assignment no longer changes or the cost no longer
    decreases (which also rules out cycling between tied assignments).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    init : array-like of shape (n_clusters, n_features)
        Initial centres (e.g. distinct data points).
    max_iter : int, default=300
        Maximum number of assignment steps.

    Returns
    -------
    result : KMediansResult

    Notes
    -----
    A centre that loses all its points keeps its position: it costs nothing,
    so the cost stays non-increasing, and it may win points back later.
    """
    X = np.asarray(X, dtype=np.float64)
    centers = np.array(init, dtype=np.float64)
    if centers.ndim != 2 or centers.shape[1] != X.shape[1]:
        raise ValueError(f"init must have shape (n_clusters, {X.shape[1]}); "
                         f"got {centers.shape}.")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}.")
    rows = np.arange(X.shape[0])
    labels, history = None, []
    for _ in range(max_iter):
        D = l1_distances(X, centers)
        new_labels = D.argmin(axis=1)
        cost = float(D[rows, new_labels].sum())
        if labels is not None and (np.array_equal(new_labels, labels) or cost >= history[-1]):
            break
        labels = new_labels
        history.append(cost)
        for c in range(centers.shape[0]):
            members = X[labels == c]
            if len(members):
                centers[c] = np.median(members, axis=0)
    cost = float(l1_distances(X, centers)[rows, labels].sum())
    return KMediansResult(labels=labels, centers=centers, cost=cost,
                          history=np.asarray(history), n_iter=len(history))
