"""The default outlier count of RobustKMeans (neither lam nor n_outliers):
Gaussian clusters plus a uniform noise component (robustclust._core.noise)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import datasets
from sklearn.preprocessing import StandardScaler

from robustclust import RobustKMeans
from robustclust._core import noise


def _blobs_with_noise(fraction, seed=0):
    """make_blobs(300, 3 centres, 3 features, random_state=1) plus uniform noise
    making up ``fraction`` of the result, over a box 3 times the blobs' extent."""
    X, _ = datasets.make_blobs(300, centers=3, n_features=3, random_state=1)
    lo, hi = X.min(axis=0), X.max(axis=0)
    mid, half = (lo + hi) / 2, 1.5 * (hi - lo)
    n_noise = int(round(fraction / (1 - fraction) * len(X)))
    U = np.random.default_rng(seed).uniform(mid - half, mid + half, size=(n_noise, 3))
    planted = np.r_[np.zeros(len(X), bool), np.ones(n_noise, bool)]
    return np.vstack([X, U]), planted


@pytest.mark.parametrize("loader, k", [(datasets.load_iris, 3), (datasets.load_wine, 3),
                                       (datasets.load_breast_cancer, 2),
                                       (datasets.load_digits, 10)],
                         ids=["iris", "wine", "breast_cancer", "digits"])
def test_default_flags_at_most_two_percent_of_standardised_real_data(loader, k):
    X = StandardScaler().fit_transform(loader().data)
    m = RobustKMeans(k, random_state=0).fit(X)
    assert m.n_outliers_ <= 0.02 * len(X)
    # the chi^2 rule flags 3% (iris) to 19% (breast cancer) of these sets
    old = RobustKMeans(k, random_state=0, default_rule="chi2").fit(X)
    assert old.n_outliers_ > m.n_outliers_


@pytest.mark.parametrize("fraction", [0.1, 0.6])
def test_default_finds_planted_uniform_noise(fraction):
    X, planted = _blobs_with_noise(fraction)
    m = RobustKMeans(3, random_state=0).fit(X)
    n_planted = planted.sum()
    assert abs(m.n_outliers_ - n_planted) <= 0.2 * n_planted
    precision = (m.outlier_mask_ & planted).sum() / m.n_outliers_
    assert precision >= 0.9
    # the noise proportion is estimated, not capped at one half
    assert m.noise_proportion_ == pytest.approx(fraction, abs=0.05)
    # the count is the number of points whose noise probability exceeds 0.5
    assert m.n_outliers_ == np.count_nonzero(m.outlier_probability_ > 0.5)
    # fitted through the count machinery and refined (hard K-means, group penalty)
    assert m.refine_history_.size > 0
    assert m.lambda_rule().startswith("default: chosen to flag the points whose noise")


def test_outlier_probability_calibrated_on_gaussian_inliers():
    """Gaussian clusters plus 30% uniform noise: the fraction of the Gaussian
    points whose probability exceeds 0.5 is what ``inlier_flag_rate_`` promises
    (measured 0.0045 against 0.0048)."""
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [12.0, 0.0], [0.0, 12.0]])
    G = np.vstack([m + rng.normal(size=(10000, 2)) for m in means])
    lo, hi = G.min(axis=0), G.max(axis=0)
    U = rng.uniform(lo - (hi - lo) / 2, hi + (hi - lo) / 2, size=(len(G) * 3 // 7, 2))
    m = RobustKMeans(3, random_state=0, n_init=3).fit(np.vstack([G, U]))
    promise = m.inlier_flag_rate_
    assert 1e-3 < promise < 1e-2  # large enough to be measured on 30000 points
    measured = np.mean(m.outlier_probability_[:len(G)] > 0.5)
    assert promise / 2 <= measured <= 2 * promise
    assert m.noise_proportion_ == pytest.approx(0.3, abs=0.01)


def test_gaussian_clusters_without_noise_get_essentially_no_outliers():
    rng = np.random.default_rng(1)
    means = np.array([[0.0, 0.0, 0.0], [20.0, 0.0, 0.0], [0.0, 20.0, 0.0]])
    X = np.vstack([m + 2.0 * rng.normal(size=(4000, 3)) for m in means])
    m = RobustKMeans(3, random_state=0, n_init=3).fit(X)
    assert m.noise_proportion_ < 1e-3
    assert m.inlier_flag_rate_ < 1e-4
    assert m.n_outliers_ <= 2


def test_outlier_probability_of_new_points():
    X, planted = _blobs_with_noise(0.1)
    m = RobustKMeans(3, random_state=0).fit(X)
    np.testing.assert_allclose(m.outlier_probability(X), m.outlier_probability_, atol=1e-10)
    far = X.max(axis=0) - 1e-3  # a corner of the box: far from every cluster
    p = m.outlier_probability(np.vstack([m.cluster_centers_, far]))
    assert np.all(p[:3] < 1e-3) and p[3] > 0.99


def test_noise_model_is_invariant_to_units():
    X, _ = _blobs_with_noise(0.1)
    a = RobustKMeans(3, random_state=0).fit(X)
    b = RobustKMeans(3, random_state=0).fit(1000.0 * X + 5.0)
    assert a.n_outliers_ == b.n_outliers_
    np.testing.assert_allclose(a.outlier_probability_, b.outlier_probability_, atol=1e-6)


def test_explicit_lam_and_count_ignore_the_default_rule():
    X, _ = _blobs_with_noise(0.1)
    for params in ({"lam": 6.0}, {"n_outliers": 20}):
        a = RobustKMeans(3, random_state=0, **params).fit(X)
        b = RobustKMeans(3, random_state=0, default_rule="chi2", **params).fit(X)
        np.testing.assert_array_equal(a.labels_, b.labels_)
        assert a.lambda_ == b.lambda_
        assert a.outlier_probability_ is None and a.noise_proportion_ is None
        with pytest.raises(ValueError, match="default_rule='noise'"):
            a.outlier_probability(X)


def test_refit_with_a_count_clears_the_noise_model():
    X, _ = _blobs_with_noise(0.1)
    m = RobustKMeans(3, random_state=0).fit(X)
    assert m.outlier_probability_ is not None
    m.set_params(n_outliers=5).fit(X)
    assert m.outlier_probability_ is None and m.n_outliers_ == 5


def test_sparse_input_keeps_the_chi2_rule():
    X, _ = _blobs_with_noise(0.1)
    X = X - X.min(axis=0)
    a = RobustKMeans(3, random_state=0).fit(sp.csr_matrix(X))
    b = RobustKMeans(3, random_state=0, default_rule="chi2").fit(sp.csr_matrix(X))
    assert a.outlier_probability_ is None
    assert a.lambda_ == b.lambda_ and a.lambda_rule() == b.lambda_rule()
    assert a.lambda_rule() == "default: flags about 0.1% of Gaussian inliers"


def test_constant_features_are_left_out_of_the_volume():
    X, planted = _blobs_with_noise(0.1)
    Xc = np.column_stack([X, np.full(len(X), 7.0)])
    a = RobustKMeans(3, random_state=0).fit(X)
    b = RobustKMeans(3, random_state=0).fit(Xc)
    assert a.n_outliers_ == b.n_outliers_
    np.testing.assert_allclose(a.outlier_probability_, b.outlier_probability_, atol=1e-8)


def test_inlier_flag_rate_matches_sampling_the_fitted_model():
    """The promise is P(chi^2_p > t_c) with t_c from the predictive t: check it
    against draws from the fitted Gaussian clusters themselves."""
    X, _ = _blobs_with_noise(0.6)
    model = RobustKMeans(3, random_state=0).fit(X)._noise_model  # internal units
    assert isinstance(model, noise.NoiseModel) and model.keep.all()
    rng = np.random.default_rng(0)
    n = 400000
    counts = rng.multinomial(n, model.weights / model.weights.sum())
    draws = np.vstack([rng.multivariate_normal(model.means[c], model.covariances[c], size=k)
                       for c, k in enumerate(counts)])
    measured = np.mean(model.noise_probability(draws) > 0.5)
    rate = model.inlier_flag_rate()
    assert rate > 0
    # each cluster alone against the noise: the other clusters only lower
    # the noise probability, so the measured fraction is at most the rate
    assert measured <= rate * 1.1 + 3 / n
    assert measured >= 0.5 * rate


def test_model_file_keeps_which_default_rule_was_used(tmp_path):
    from robustclust._model_io import load_model, save_model

    X, _ = _blobs_with_noise(0.1)
    for rule, phrase in (("noise", "noise probability exceeds 0.5"),
                         ("chi2", "flags about 0.1% of Gaussian inliers")):
        m = RobustKMeans(3, random_state=0, default_rule=rule).fit(X)
        path = tmp_path / f"{rule}.npz"
        save_model(m, path)
        back = load_model(path)
        assert phrase in m.lambda_rule() and back.lambda_rule() == m.lambda_rule()
        np.testing.assert_array_equal(back.predict(X), m.predict(X))


def test_em_on_a_sample_of_large_data(monkeypatch):
    """Above MAX_EM_ROWS rows EM runs on a fixed random sample; the box and
    the probabilities are those of all rows."""
    X, planted = _blobs_with_noise(0.1)
    full = RobustKMeans(3, random_state=0).fit(X)
    monkeypatch.setattr(noise, "MAX_EM_ROWS", 200)
    sampled = RobustKMeans(3, random_state=0).fit(X)
    assert sampled.outlier_probability_.shape == (len(X),)
    assert sampled._noise_model.sizes.sum() + sampled.noise_proportion_ * 200 \
        == pytest.approx(200)  # EM saw 200 rows
    assert abs(sampled.n_outliers_ - planted.sum()) <= 0.2 * planted.sum()
    assert (sampled.outlier_mask_ & planted).sum() >= 0.9 * sampled.n_outliers_
    assert abs(sampled.n_outliers_ - full.n_outliers_) <= 3


def test_a_dask_fit_keeps_the_chi2_rule_and_clears_an_earlier_noise_model():
    da = pytest.importorskip("dask.array")
    X, _ = _blobs_with_noise(0.1)
    m = RobustKMeans(3, init=X[[0, 100, 200]], n_init=1).fit(X)
    assert m.noise_proportion_ is not None
    m.fit(da.from_array(X, chunks=100))
    assert m.outlier_probability_ is None and m.noise_proportion_ is None
    assert m.lambda_rule() == "default: flags about 0.1% of Gaussian inliers"
    with pytest.raises(ValueError, match="default_rule='noise'"):
        m.outlier_probability(X)
