"""The estimators' outlier parameters and attributes: the names of the fitted
outlier attributes, the checks of ``lam`` and ``n_outliers`` against the data,
and the warning that says the default count fell back to another rule."""

import warnings
from numbers import Integral

import numpy as np

from .._core.selection import OutlierCountWarning

#: The fitted outlier attributes every fit of every estimator sets (None where they
#: do not apply), documented in :class:`RobustEstimator`.
OUTLIER_ATTRIBUTES = ("labels_", "outlier_mask_", "outlier_indices_", "outlier_scores_",
                      "outlier_norms_", "outlier_vectors_", "outlier_rows_", "n_outliers_",
                      "lambda_", "outlier_rule_", "outlier_probability_",
                      "noise_proportion_", "inlier_flag_rate_")
#: The default count's attributes (None unless its noise model set the count).
NOISE_ATTRIBUTES = ("outlier_probability_", "noise_proportion_", "inlier_flag_rate_")


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
    if isinstance(n_outliers, (bool, np.bool_)):
        raise ValueError(f"n_outliers={n_outliers!r} is a boolean; give a count (an int) or "
                         "a fraction of the samples (a float in (0, 0.5)).")
    if isinstance(n_outliers, Integral):
        s = int(n_outliers)
        if s >= n_samples:
            raise ValueError(f"n_outliers={s} must be smaller than the number of "
                             f"samples ({n_samples}).")
        return s
    s = int(round(n_outliers * n_samples))
    if s == 0:
        warnings.warn(f"n_outliers={n_outliers} of {n_samples} samples rounds to 0 "
                      "outliers: nothing will be flagged.", OutlierCountWarning, stacklevel=5)
    return s


def warn_chi2_fallback(name, why, stacklevel=5):
    """The one line that says the default count fell back to the chi2 lambda."""
    warnings.warn(
        f"{name}: the default outlier count (a noise model) does not apply ({why}); lambda "
        "is set by the chi2 rule instead (outlier_rule_ == 'chi2'). Give n_outliers or lam "
        "to choose, or lam='chi2' to ask for this rule.", OutlierCountWarning,
        stacklevel=stacklevel)
