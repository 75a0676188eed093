"""scikit-learn's common estimator checks over configured instances."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
)

# scikit-learn marks the same checks as expected failures for its own KMeans:
# with a random initialisation, repeating a point changes which points the
# seeding draws, so weights and repetition give different (equally valid)
# local minima.  With explicit initial centres and a fixed lambda the
# equivalence holds exactly: tests/test_kmeans.py::
# test_integer_sample_weight_equals_repetition.
WEIGHT_REASON = ("random initialisation draws differ between weighted and repeated data "
                 "(as for sklearn.cluster.KMeans); exact equivalence is tested with "
                 "explicit initial centres")
# The constructors take the parameter names of the earlier release for one more
# release through a keyword catch-all (``**renamed``, translated with a
# FutureWarning: tests/test_deprecations.py); the check passes that catch-all by its
# name as if it were a parameter, and an unknown keyword is a TypeError, as it
# should be.  Every named parameter takes the check's values without raising.
RENAMED_REASON = "the check passes the deprecation catch-all **renamed as a keyword"
EXPECTED = {
    "check_sample_weight_equivalence_on_dense_data": WEIGHT_REASON,
    "check_sample_weight_equivalence_on_sparse_data": WEIGHT_REASON,
    "check_do_not_raise_errors_in_init_or_set_params": RENAMED_REASON,
}

# The check reads classifier tags of any estimator with predict_proba that
# accepts sparse input (scikit-learn's own GaussianMixture rejects sparse
# input, so it never gets there); a density estimator has none and the check
# crashes.  Sparse input is tested in tests/test_mixture.py::
# test_sparse_input_gives_the_dense_result and, for the kernel mixture,
# tests/test_kernel.py::test_sparse_input_gives_the_dense_result.
MIXTURE_EXPECTED = {
    "check_estimator_sparse_array": "the check assumes a classifier (reads classifier_tags)",
    "check_estimator_sparse_matrix": "the check assumes a classifier (reads classifier_tags)",
}


@parametrize_with_checks(
    [
        RobustKMeans(n_init=2, random_state=0),
        RobustKMeans(fuzzifier=1.5, n_init=2, random_state=0),
        RobustKMeans(lam=5.0, penalty="log", n_init=2, random_state=0),
        RobustKMeans(n_outliers=0.05, penalty="elementwise", n_init=2, random_state=0),
        RobustGaussianMixture(n_init=2, random_state=0),
        RobustGaussianMixture(3, covariance_type="tied", lam=2.0, penalty="log", n_init=2,
                              random_state=0),
        RobustGaussianMixture(2, covariance_type="tied_diag", n_outliers=0.05, n_init=2,
                              random_state=0),
        RobustGaussianMixture(3, covariance_type="full", n_outliers=0.05, n_init=2,
                              random_state=0),
        RobustGaussianMixture(2, covariance_type="diag", lam=2.0, penalty="log",
                              eigenvalue_ratio=50.0, n_init=2, random_state=0),
        KernelRobustKMeans(3, n_init=2, random_state=0),
        KernelRobustKMeans(3, kernel="linear", fuzzifier=1.5, n_outliers=0.05, n_init=2,
                           random_state=0),
        KernelRobustGaussianMixture(2, n_init=2, random_state=0),
    ],
    expected_failed_checks=lambda est: (
        EXPECTED | MIXTURE_EXPECTED
        if isinstance(est, (RobustGaussianMixture, KernelRobustGaussianMixture)) else EXPECTED),
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", [RobustKMeans, RobustGaussianMixture, KernelRobustKMeans,
                                 KernelRobustGaussianMixture])
def test_named_parameters_take_any_value_in_init_and_set_params(cls):
    # check_do_not_raise_errors_in_init_or_set_params without the catch-all
    names = cls().get_params()
    for value in [-1, 3.0, "helloworld", np.array([1.0, 4.0]), [1], {}, []]:
        params = {key: value for key in names}
        cls(**params).set_params(**params)

