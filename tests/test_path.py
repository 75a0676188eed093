"""regularization_path: the warm-started lambda grid of the paper's Figs. 2-3."""

import numpy as np
import pytest

from robustclust import RegularizationPath, RobustKMeans, regularization_path
from robustclust.datasets import make_blobs_with_outliers


@pytest.fixture(scope="module")
def data():
    return make_blobs_with_outliers(n_outliers=80, random_state=0)


@pytest.mark.parametrize("kw", [dict(), dict(fuzzifier=1.5), dict(penalty="elementwise")])
def test_path_starts_outlier_free_and_ends_flagging_almost_all(data, kw):
    path = regularization_path(RobustKMeans(4, random_state=0, **kw), data.X, n_lambdas=40)
    assert isinstance(path, RegularizationPath)
    n = len(data.X)
    assert path.lambdas.shape == (40,) and path.outlier_norms.shape == (40, n)
    assert np.all(np.diff(path.lambdas) < 0)
    assert path.lambdas[0] == pytest.approx(path.lambda_max)
    # lambda_max is the smallest lambda with no outlier: nothing at the top ...
    assert path.n_outliers[0] == 0 and np.all(path.outlier_norms[0] == 0)
    # ... and most points flagged at lambda_max / 1000
    assert path.n_outliers[-1] > 0.9 * n
    np.testing.assert_array_equal(path.n_outliers, (path.outlier_norms > 0).sum(axis=1))


def test_every_path_point_satisfies_the_outlier_update(data):
    # hard RKM fixed point of eq. (11): inliers lie within lambda/2 of their
    # centre (so of the nearest one); an outlier's norm is its distance to
    # its centre minus lambda/2, for one of the centres
    path = regularization_path(RobustKMeans(4, random_state=0, tol=1e-10), data.X,
                               n_lambdas=30)
    for lam, norms, M in zip(path.lambdas, path.outlier_norms, path.centers):
        dist = np.linalg.norm(data.X[:, None] - M[None], axis=-1)
        inl = norms == 0
        assert np.all(dist[inl].min(axis=1) <= lam / 2 + 1e-6)
        gap = np.abs(dist[~inl] - lam / 2 - norms[~inl, None]).min(axis=1)
        assert np.all(gap < 1e-5)


def test_lambda_range_reads_the_count_curve(data):
    path = regularization_path(RobustKMeans(4, random_state=0), data.X, n_lambdas=200)
    s = int(path.n_outliers[30])
    lo, hi = path.lambda_range(s)
    assert lo <= path.lambdas[30] <= hi
    assert np.all(path.n_outliers[(path.lambdas >= lo) & (path.lambdas <= hi)] == s)
    assert path.lambda_range(len(data.X) + 1) is None


def test_warm_starts_need_fewer_iterations_than_cold_fits(data):
    path = regularization_path(RobustKMeans(4, random_state=0), data.X, n_lambdas=100)
    every = slice(None, None, 10)
    cold = [RobustKMeans(4, lam=lam, random_state=0, n_init=1).fit(data.X).n_iter_
            for lam in path.lambdas[every]]
    # measured: 2999 warm iterations for the 100 values vs 18112 cold
    assert path.n_iter[every].sum() < 0.5 * np.sum(cold)


def test_weighted_path_and_explicit_grid(data):
    grid = [10.0, 2.0, 5.0]
    path = regularization_path(RobustKMeans(4, penalty="log", random_state=0), data.X,
                               lambdas=grid)
    np.testing.assert_array_equal(path.lambdas, [10.0, 5.0, 2.0])
    assert np.all(np.diff(path.n_outliers) >= 0)


def test_path_rejects_bad_grids(data):
    with pytest.raises(ValueError, match="lambdas must be"):
        regularization_path(RobustKMeans(4), data.X, lambdas=[1.0, -1.0])
    with pytest.raises(ValueError, match="n_lambdas must be a positive integer"):
        regularization_path(RobustKMeans(4), data.X, n_lambdas=0)
    for ratio in (0.0, 5.0):
        with pytest.raises(ValueError, match="lambda_min_ratio must be in"):
            regularization_path(RobustKMeans(4), data.X, lambda_min_ratio=ratio)


def test_path_does_not_modify_the_estimator(data):
    est = RobustKMeans(4, n_outliers=80, random_state=0)
    regularization_path(est, data.X, n_lambdas=5)
    assert est.get_params()["n_outliers"] == 80
    assert not hasattr(est, "cluster_centers_")


def test_path_tolerance_trades_iterations_for_accuracy(data):
    # soft K-means converges linearly: solving each grid value to 10x the
    # estimator's tolerance (the default) needs far fewer iterations than to
    # the tolerance itself and flags the same points at (nearly) every value
    est = RobustKMeans(4, fuzzifier=1.5, random_state=0, n_init=1)
    loose = regularization_path(est, data.X, n_lambdas=40)
    exact = regularization_path(est, data.X, n_lambdas=40, path_tol=1.0)
    assert loose.n_iter.sum() < 0.8 * exact.n_iter.sum()
    assert np.sum(loose.n_outliers != exact.n_outliers) <= 2
    assert np.abs(loose.n_outliers - exact.n_outliers).max() <= 1
    scale = np.abs(exact.centers).max()
    assert np.abs(loose.centers - exact.centers).max() < 1e-2 * scale


def test_mixture_path_keeps_its_tolerance():
    from robustclust import RobustGaussianMixture

    X = make_blobs_with_outliers(n_outliers=20, n_per_cluster=40, random_state=2).X
    est = RobustGaussianMixture(3, random_state=0, n_init=1)
    a = regularization_path(est, X, n_lambdas=8)
    b = regularization_path(est, X, n_lambdas=8, path_tol=1.0)
    np.testing.assert_array_equal(a.n_iter, b.n_iter)
    np.testing.assert_array_equal(a.centers, b.centers)
