"""Evaluation metrics for robust clustering.

The functions here score the two outputs of a robust clustering algorithm
against a known ground truth: the estimated cluster centres
(:func:`center_rmse`) and the set of points declared outliers
(:func:`outlier_precision_recall`).
"""

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["center_rmse", "outlier_precision_recall"]


def _check_centers(centers, name):
    """Return ``centers`` as a finite 2-D float64 array or raise ValueError."""
    try:
        centers = np.asarray(centers, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array-like, got {exc}") from exc
    if centers.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_clusters, n_features), "
            f"got an array with ndim={centers.ndim} and shape {centers.shape}."
        )
    if centers.shape[0] == 0 or centers.shape[1] == 0:
        raise ValueError(
            f"{name} must contain at least one centre and one feature, "
            f"got shape {centers.shape}."
        )
    if not np.all(np.isfinite(centers)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return centers


def center_rmse(true_centers, estimated_centers):
    """Root-mean-square error of estimated cluster centres.

    Estimated centres are first matched one-to-one to the true centres by
    minimising the total squared Euclidean distance (Hungarian algorithm),
    which removes the arbitrary ordering of cluster labels. The error is then

    .. math::

        \\mathrm{RMSE} = \\sqrt{\\frac{1}{C} \\sum_{c=1}^{C}
        \\lVert \\hat{\\mathbf{m}}_{\\pi(c)} - \\mathbf{m}_c \\rVert_2^2},

    where :math:`\\pi` is the optimal matching and :math:`C` is the number of
    true centres.

    Parameters
    ----------
    true_centers : array-like of shape (n_clusters, n_features)
        Ground-truth cluster centres :math:`\\mathbf{m}_c`.

    estimated_centers : array-like of shape (n_estimated, n_features)
        Estimated cluster centres, in any order. ``n_estimated`` must be at
        least ``n_clusters``; when it is larger, the matching picks the
        ``n_clusters`` estimated centres that fit best and the remaining rows
        are ignored.

    Returns
    -------
    rmse : float
        Root-mean-square Euclidean error per true centre, a non-negative
        float in the units of the data.

    Raises
    ------
    ValueError
        If either input is not a finite, non-empty 2-D array, if the two
        inputs have a different number of features, or if fewer centres are
        estimated than there are true centres.

    Notes
    -----
    This is the "RMSE of cluster center estimates" reported in Table I of
    the robust clustering paper (Section VI-A), where it is averaged over
    100 algorithm initialisations. The matching uses
    :func:`scipy.optimize.linear_sum_assignment` on the
    ``(n_clusters, n_estimated)`` matrix of squared distances, so the
    returned value is the smallest RMSE over all injective assignments of
    estimated centres to true centres. The result is invariant to any
    permutation of the rows of either input.

    Examples
    --------
    >>> from robustclust.metrics import center_rmse
    >>> true = [[0.0, 0.0], [10.0, 0.0]]
    >>> est = [[10.0, 3.0], [0.0, 4.0]]  # swapped order, errors 3 and 4
    >>> round(center_rmse(true, est), 6)  # sqrt((16 + 9) / 2)
    3.535534
    """
    true_centers = _check_centers(true_centers, "true_centers")
    estimated_centers = _check_centers(estimated_centers, "estimated_centers")
    n_clusters, n_features = true_centers.shape
    n_estimated, n_features_est = estimated_centers.shape
    if n_features_est != n_features:
        raise ValueError(
            "true_centers and estimated_centers must have the same number of "
            f"features, got {n_features} and {n_features_est}."
        )
    if n_estimated < n_clusters:
        raise ValueError(
            f"estimated_centers has {n_estimated} rows but true_centers has "
            f"{n_clusters}; at least as many estimated centres as true "
            "centres are required."
        )

    diff = true_centers[:, np.newaxis, :] - estimated_centers[np.newaxis, :, :]
    sq_dist = np.einsum("ijk,ijk->ij", diff, diff)
    rows, cols = linear_sum_assignment(sq_dist)
    return float(np.sqrt(sq_dist[rows, cols].sum() / n_clusters))


def _check_mask(mask, name):
    """Return ``mask`` as a 1-D boolean array or raise ValueError."""
    mask = np.asarray(mask)
    if mask.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of booleans, got an array with "
            f"ndim={mask.ndim} and shape {mask.shape}."
        )
    if mask.dtype == np.bool_:
        return mask
    if mask.size == 0 or (
        np.issubdtype(mask.dtype, np.number) and np.all((mask == 0) | (mask == 1))
    ):
        return mask.astype(bool)
    raise ValueError(
        f"{name} must contain only booleans (or 0/1 values), got dtype "
        f"{mask.dtype}."
    )


def outlier_precision_recall(true_mask, predicted_mask):
    """Precision and recall of outlier detection.

    Outliers are the positive class: precision is the fraction of points
    flagged as outliers that truly are outliers, and recall is the fraction
    of true outliers that are flagged.

    Parameters
    ----------
    true_mask : array-like of shape (n_samples,)
        Boolean ground truth, ``True`` for points generated as outliers.
        Integer arrays holding only 0 and 1 are accepted.

    predicted_mask : array-like of shape (n_samples,)
        Boolean prediction, ``True`` for points declared outliers (for
        instance ``labels_ == -1`` of a fitted robust clusterer). Integer
        arrays holding only 0 and 1 are accepted.

    Returns
    -------
    precision : float
        ``TP / (TP + FP)``, or ``1.0`` when nothing is predicted as an
        outlier.

    recall : float
        ``TP / (TP + FN)``, or ``1.0`` when there are no true outliers.

    Raises
    ------
    ValueError
        If a mask is not 1-D, holds values other than booleans or 0/1, or if
        the two masks have different lengths.

    Notes
    -----
    The degenerate cases are defined so that doing nothing wrong scores
    perfectly: a detector that flags no point makes no false alarm
    (precision 1.0), and when the data hold no outlier none can be missed
    (recall 1.0). Unlike :func:`sklearn.metrics.precision_score`, no warning
    is emitted in these cases.

    Examples
    --------
    >>> from robustclust.metrics import outlier_precision_recall
    >>> true = [True, True, True, False, False]
    >>> pred = [True, True, False, True, False]
    >>> outlier_precision_recall(true, pred)  # TP=2, FP=1, FN=1
    (0.6666666666666666, 0.6666666666666666)
    >>> outlier_precision_recall(true, [False] * 5)
    (1.0, 0.0)
    """
    true_mask = _check_mask(true_mask, "true_mask")
    predicted_mask = _check_mask(predicted_mask, "predicted_mask")
    if true_mask.shape[0] != predicted_mask.shape[0]:
        raise ValueError(
            "true_mask and predicted_mask must have the same length, got "
            f"{true_mask.shape[0]} and {predicted_mask.shape[0]}."
        )
    true_positives = int(np.count_nonzero(true_mask & predicted_mask))
    n_predicted = int(np.count_nonzero(predicted_mask))
    n_true = int(np.count_nonzero(true_mask))
    precision = true_positives / n_predicted if n_predicted else 1.0
    recall = true_positives / n_true if n_true else 1.0
    return float(precision), float(recall)
