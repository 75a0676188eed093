"""Checks of a fitted state read back from elsewhere (a model file).

:meth:`RobustEstimator.from_fitted_state` refuses values that no fit could
have produced before they reach ``predict``: NaN or infinite numbers, signs
and whole numbers as each attribute needs, and array shapes that disagree
with one another.  The messages name the class and the attribute, e.g.
``RobustKMeans.lambda_ = -1.0 is negative``.
"""

from numbers import Integral

import numpy as np

#: Fitted numbers that may be +inf (lambda = inf is plain clustering).
MAY_BE_INFINITE = {"lambda_", "unweighted_lambda_", "unrefined_lambda_"}
#: Fitted numbers that must be >= 0, and those that must be > 0.
NON_NEGATIVE = {"lambda_", "unweighted_lambda_", "unrefined_lambda_", "trimmed_cost_",
                "n_outliers_", "n_iter_", "weights_",
                "var_", "n_samples_seen_", "_covar_floor"}
POSITIVE = {"eps_", "gamma_", "variance_", "scale_", "n_features_in_", "feature_dim_",
            "_n_features_out", "_scale", "_input_scale", "_variance"}
#: Fitted numbers that must be whole.
WHOLE = {"n_outliers_", "n_iter_", "n_features_in_", "feature_dim_", "_n_features_out",
         "n_samples_seen_"}


def bad_value(name, attr, value, why):
    """'RobustKMeans.lambda_ = -1.0 is negative' (arrays: '... holds values that are ...')."""
    if np.ndim(value) == 0:
        shown = np.asarray(value).item()
        return ValueError(f"{name}.{attr} = {shown!r} is {why}")
    return ValueError(f"{name}.{attr} holds values that are {why}")


def check_number(name, attr, value):
    """Finite (or +inf where allowed), signs and whole numbers as the attribute needs."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_number(name, f"{attr}[{key!r}]", item)
        return
    if value is None or isinstance(value, str):
        return
    array = np.asarray(value)
    if array.dtype == bool or array.dtype.kind in "UO":
        return
    if array.dtype.kind not in "iuf":
        raise bad_value(name, attr, value, "not a number")
    if np.isnan(array).any():
        raise bad_value(name, attr, value, "not a number (NaN)")
    allowed_inf = attr in MAY_BE_INFINITE
    if np.isinf(array).any() and not (allowed_inf and np.all(array[np.isinf(array)] > 0)):
        raise bad_value(name, attr, value, "infinite")
    if attr in NON_NEGATIVE and (array < 0).any():
        raise bad_value(name, attr, value, "negative")
    if attr in POSITIVE and (array <= 0).any():
        raise bad_value(name, attr, value, "not positive")
    if attr in WHOLE and np.any(array != np.round(array)):
        raise bad_value(name, attr, value, "not a whole number")


def check_shape(name, attr, value, shape):
    actual = np.shape(value)
    if actual != shape:
        raise ValueError(f"{name}.{attr} has shape {actual}, expected {shape}")


def check_state(estimator, names, shapes):
    """Every value of ``names`` a valid number, every array of ``shapes`` its shape.

    ``shapes`` maps attribute names to the expected shape, computed from
    ``n_features_in_`` and the number of clusters by the estimator.
    """
    name = type(estimator).__name__
    for attr in names:
        if hasattr(estimator, attr):
            check_number(name, attr, getattr(estimator, attr))
    p = estimator.n_features_in_
    if not isinstance(p, Integral) or isinstance(p, bool):
        raise bad_value(name, "n_features_in_", p, "not a whole number")
    names_in = getattr(estimator, "feature_names_in_", None)
    if names_in is not None:
        check_shape(name, "feature_names_in_", names_in, (p,))
    for attr, shape in shapes.items():
        if getattr(estimator, attr, None) is not None:
            check_shape(name, attr, getattr(estimator, attr), shape)
