"""Every fit of every estimator sets the same outlier attributes, and they agree."""

import numpy as np
import pytest
import scipy.sparse as sp

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
)
from robustclust._estimators.outliers import NOISE_ATTRIBUTES, OUTLIER_ATTRIBUTES
from robustclust.datasets import make_blobs_with_outliers

X = make_blobs_with_outliers(n_outliers=30, random_state=1).X

ESTIMATORS = {
    "rkm-count": RobustKMeans(4, n_outliers=30, n_init=2, random_state=0),
    "rkm-default": RobustKMeans(4, n_init=2, random_state=0),
    "rkm-lam-soft": RobustKMeans(4, lam=4.0, fuzzifier=1.5, n_init=2, random_state=0),
    "rkm-elementwise": RobustKMeans(4, lam=3.0, penalty="elementwise", n_init=2,
                                    random_state=0),
    "rpc-count": RobustGaussianMixture(4, n_outliers=30, n_init=2, random_state=0),
    "rpc-default-full": RobustGaussianMixture(4, covariance_type="full", n_init=2,
                                              random_state=0),
    "krkm": KernelRobustKMeans(4, n_outliers=30, n_init=2, random_state=0),
    "krkm-nystroem": KernelRobustKMeans(4, n_outliers=30, n_landmarks=40, n_init=2,
                                        random_state=0),
    "krpc": KernelRobustGaussianMixture(4, n_outliers=30, n_init=2, random_state=0),
}


def _check(est, n):
    for name in OUTLIER_ATTRIBUTES:
        assert hasattr(est, name), name
    mask = np.asarray(est.outlier_mask_)
    labels = np.asarray(est.labels_)
    scores = np.asarray(est.outlier_scores_)
    np.testing.assert_array_equal(mask, labels == -1)
    np.testing.assert_array_equal(mask, scores > 0)
    np.testing.assert_array_equal(np.asarray(est.outlier_norms_) > 0, mask)
    assert isinstance(est.outlier_indices_, np.ndarray)
    assert est.outlier_indices_.dtype == np.int64
    np.testing.assert_array_equal(est.outlier_indices_, np.flatnonzero(mask))
    assert est.n_outliers_ == mask.sum()
    if est.outlier_vectors_ is not None:
        assert sp.issparse(est.outlier_vectors_) and est.outlier_vectors_.shape[0] == n
        np.testing.assert_array_equal(est.outlier_rows_,
                                      est.outlier_vectors_[est.outlier_indices_].toarray())
        np.testing.assert_allclose(np.linalg.norm(est.outlier_rows_, axis=1),
                                   np.asarray(est.outlier_norms_)[mask], rtol=1e-6)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_fit_sets_the_same_outlier_attributes(name):
    est = ESTIMATORS[name].fit(X)
    _check(est, len(X))
    assert est.n_outliers_ > 0
    kernel = isinstance(est, (KernelRobustKMeans, KernelRobustGaussianMixture))
    assert (est.outlier_vectors_ is None) == kernel
    assert (est.outlier_rows_ is None) == kernel
    if not isinstance(est, RobustGaussianMixture) and not isinstance(
            est, KernelRobustGaussianMixture):
        np.testing.assert_array_equal(est.outlier_scores_, est.outlier_norms_)
    noise = "default" in name
    for attr in NOISE_ATTRIBUTES:
        assert (getattr(est, attr) is None) != noise, attr


def test_a_refit_with_a_count_clears_the_noise_attributes():
    est = RobustKMeans(4, n_init=2, random_state=0).fit(X)
    assert est.noise_proportion_ is not None
    est.set_params(n_outliers=10).fit(X)
    assert all(getattr(est, a) is None for a in NOISE_ATTRIBUTES)


@pytest.mark.parametrize("cls", [RobustKMeans, RobustGaussianMixture])
def test_dask_fits_set_the_same_outlier_attributes(cls):
    da = pytest.importorskip("dask.array")
    est = cls(4, n_outliers=30, n_init=1, random_state=0).fit(da.from_array(X, chunks=100))
    for name in OUTLIER_ATTRIBUTES:
        assert hasattr(est, name), name
    assert est.outlier_vectors_ is None and est.outlier_rows_.shape == (30, 2)
    mask = np.asarray(est.outlier_mask_.compute())
    np.testing.assert_array_equal(est.outlier_indices_, np.flatnonzero(mask))
    np.testing.assert_array_equal(np.asarray(est.outlier_scores_.compute()) > 0, mask)
    assert all(getattr(est, a) is None for a in NOISE_ATTRIBUTES)
