"""The default outlier count of RobustKMeans and RobustGaussianMixture (neither lam
nor n_outliers): Gaussian clusters plus a uniform noise component
(robustclust._core.noise, wired into both estimators by NoiseDefaultMixin)."""

import contextlib
import io
import json
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import scipy.sparse as sp
from sklearn import datasets
from sklearn.preprocessing import StandardScaler

from robustclust import OutlierCountWarning, RobustGaussianMixture, RobustKMeans
from robustclust._core import noise

NOISE_RULE = ("default: chosen to flag the points whose noise probability exceeds 0.5 "
              "(Gaussian clusters plus uniform noise)")
CHI2_RULE = "default: flags about 0.1% of Gaussian inliers"


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
    old = RobustKMeans(k, random_state=0, lam="chi2").fit(X)
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


def test_explicit_lam_and_count_fit_no_noise_model():
    X, _ = _blobs_with_noise(0.1)
    for params in ({"lam": 6.0}, {"n_outliers": 20}):
        a = RobustKMeans(3, random_state=0, **params).fit(X)
        assert a.outlier_probability_ is None and a.noise_proportion_ is None
        with pytest.raises(ValueError, match="neither lam nor n_outliers"):
            a.outlier_probability(X)
    with pytest.raises(ValueError, match="Give at most one of lam and n_outliers"):
        RobustKMeans(3, lam="chi2", n_outliers=20).fit(X)


def test_refit_with_a_count_clears_the_noise_model():
    X, _ = _blobs_with_noise(0.1)
    m = RobustKMeans(3, random_state=0).fit(X)
    assert m.outlier_probability_ is not None
    m.set_params(n_outliers=5).fit(X)
    assert m.outlier_probability_ is None and m.n_outliers_ == 5


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
    model = RobustKMeans(3, random_state=0).fit(X)._noise_model
    assert isinstance(model, noise.NoiseModel) and model.keep.all()
    rng = np.random.default_rng(0)
    n = 400000
    counts = rng.multinomial(n, model.weights / model.weights.sum())
    # the clusters live in the model's standardised units; the model takes the
    # estimator's internal units
    draws = np.vstack([rng.multivariate_normal(model.means[c], model.covariances[c], size=k)
                       for c, k in enumerate(counts)]) * model.scale + model.loc
    measured = np.mean(model.noise_probability(draws) > 0.5)
    rate = model.inlier_flag_rate()
    assert rate > 0
    # each cluster alone against the noise: the other clusters only lower
    # the noise probability, so the measured fraction is at most the rate
    assert measured <= rate * 1.1 + 3 / n
    assert measured >= 0.5 * rate


@pytest.mark.parametrize("rows", [200, 150])  # most of the 333 rows, and fewer than half
def test_em_on_a_sample_of_large_data(rows, monkeypatch):
    """Above em_sample_size() rows EM runs on a fixed random sample; the box and
    the probabilities are those of all rows."""
    X, planted = _blobs_with_noise(0.1)
    full = RobustKMeans(3, random_state=0).fit(X)
    monkeypatch.setattr(noise, "MAX_EM_ROWS", rows)
    sampled = RobustKMeans(3, random_state=0).fit(X)
    assert sampled.outlier_probability_.shape == (len(X),)
    assert sampled._noise_model.sizes.sum() + sampled.noise_proportion_ * rows \
        == pytest.approx(rows)  # EM saw that many rows
    assert abs(sampled.n_outliers_ - planted.sum()) <= 0.2 * planted.sum()
    assert (sampled.outlier_mask_ & planted).sum() >= 0.9 * sampled.n_outliers_
    assert abs(sampled.n_outliers_ - full.n_outliers_) <= 3
    # the rows EM saw and the others: the same probabilities as new points get
    np.testing.assert_allclose(sampled.outlier_probability(X), sampled.outlier_probability_,
                               atol=1e-10)


def test_a_dask_fit_keeps_the_chi2_rule_and_clears_an_earlier_noise_model():
    da = pytest.importorskip("dask.array")
    X, _ = _blobs_with_noise(0.1)
    m = RobustKMeans(3, init=X[[0, 100, 200]], n_init=1).fit(X)
    assert m.noise_proportion_ is not None
    m.fit(da.from_array(X, chunks=100))
    assert m.outlier_probability_ is None and m.noise_proportion_ is None
    assert m.lambda_rule() == "default: flags about 0.1% of Gaussian inliers"
    with pytest.raises(ValueError, match="neither lam nor n_outliers"):
        m.outlier_probability(X)


# -- RobustGaussianMixture: the same rule -------------------------------------------------
# (n_outliers_ equals the noise count in each case below: the count fit reaches it)

def _loaded(loader):
    return StandardScaler().fit_transform(loader().data)


@pytest.mark.parametrize("covariance_type", ["tied_spherical", "tied", "full"])
@pytest.mark.parametrize("loader, k", [(datasets.load_iris, 3), (datasets.load_wine, 3),
                                       (datasets.load_breast_cancer, 2)],
                         ids=["iris", "wine", "breast_cancer"])
def test_mixture_default_flags_at_most_two_percent_of_standardised_real_data(
        loader, k, covariance_type):
    X = _loaded(loader)
    m = RobustGaussianMixture(k, covariance_type=covariance_type, random_state=0).fit(X)
    assert m.n_outliers_ <= 0.02 * len(X)  # measured: 0 in each case
    assert m.outlier_probability_ is not None
    assert m.lambda_rule() == NOISE_RULE
    if covariance_type == "tied_spherical":
        # the chi^2 rule flags 4 (iris), 8 (wine) and 66 (breast cancer)
        old = RobustGaussianMixture(k, random_state=0, lam="chi2").fit(X)
        assert old.n_outliers_ > max(m.n_outliers_, 0.02 * len(X))


@pytest.mark.parametrize("covariance_type", [
    "tied_spherical", pytest.param("tied", marks=pytest.mark.slow),
    pytest.param("full", marks=pytest.mark.slow)])
def test_mixture_default_flags_at_most_two_percent_of_standardised_digits(covariance_type):
    X = _loaded(datasets.load_digits)
    m = RobustGaussianMixture(10, covariance_type=covariance_type, random_state=0).fit(X)
    assert m.n_outliers_ <= 0.02 * len(X)  # measured: 24 of 1,797
    assert m.n_outliers_ == np.count_nonzero(m.outlier_probability_ > 0.5)
    if covariance_type == "tied_spherical":  # the chi^2 rule: 163 (9.1%)
        old = RobustGaussianMixture(10, random_state=0, lam="chi2").fit(X)
        assert old.n_outliers_ > 0.05 * len(X)


@pytest.mark.parametrize("covariance_type", ["tied_spherical", "tied"])
@pytest.mark.parametrize("fraction", [0.1, 0.6])
def test_mixture_default_finds_planted_uniform_noise(fraction, covariance_type):
    X, planted = _blobs_with_noise(fraction)
    m = RobustGaussianMixture(3, covariance_type=covariance_type, random_state=0).fit(X)
    n_planted = planted.sum()
    assert abs(m.n_outliers_ - n_planted) <= 0.2 * n_planted
    precision = (m.outlier_mask_ & planted).sum() / m.n_outliers_
    assert precision >= 0.9  # measured: 1.0 (32 of 33 and 437 of 450 flagged)
    assert m.noise_proportion_ == pytest.approx(fraction, abs=0.05)
    # the count is the points whose noise probability exceeds 0.5, and the refined
    # fit flags those very points
    assert m.n_outliers_ == np.count_nonzero(m.outlier_probability_ > 0.5)
    np.testing.assert_array_equal(m.outlier_mask_, m.outlier_probability_ > 0.5)
    assert m.lambda_rule() == NOISE_RULE
    if fraction == 0.6:  # the chi^2 rule flags none of the 450
        old = RobustGaussianMixture(3, covariance_type=covariance_type, random_state=0,
                                    lam="chi2").fit(X)
        assert old.n_outliers_ < 0.2 * n_planted


@pytest.mark.parametrize("covariance_type", ["tied_spherical", "full"])
def test_mixture_default_count_fits_the_other_points_without_a_penalized_fit(covariance_type):
    """The noise points are the outliers and the mixture is the trimmed-likelihood
    fit of the others from the starts: no penalized fit runs (no unrefined lambda),
    the cost is that of the kept points and never rose, and lambda_ is positive
    and finite (one at which the O-step at the fitted parameters flags them)."""
    X, planted = _blobs_with_noise(0.1)
    m = RobustGaussianMixture(3, covariance_type=covariance_type, random_state=0).fit(X)
    np.testing.assert_array_equal(m.outlier_mask_, m.outlier_probability_ > 0.5)
    assert m.unrefined_lambda_ is None
    assert m.trimmed_cost_ == m.objective_ == m.refine_history_[-1]
    assert np.all(np.diff(m.refine_history_) <= 1e-9 * abs(m.refine_history_[0]))
    assert 0.0 < m.lambda_ < np.inf
    # the kept points' likelihood: objective_ is minus the sum of their log densities
    assert m.objective_ == pytest.approx(-m.score_samples(X)[~m.outlier_mask_].sum(), rel=1e-9)


@pytest.mark.slow
def test_mixture_default_count_with_per_component_full_covariances():
    """The count is the noise model's whatever covariance_type, and the
    per-component fit flags the noise model's points."""
    for fraction in (0.1, 0.6):
        X, planted = _blobs_with_noise(fraction)
        m = RobustGaussianMixture(3, covariance_type="full", random_state=0, n_init=3).fit(X)
        assert abs(m.n_outliers_ - planted.sum()) <= 0.2 * planted.sum()
        assert m.n_outliers_ == np.count_nonzero(m.outlier_probability_ > 0.5)


def test_mixture_outlier_probability_calibrated_on_gaussian_inliers():
    """Three 2-D Gaussian clusters of 10,000 plus 30% uniform noise: measured
    0.0044 of the Gaussian points with probability > 0.5 against 0.0047 promised;
    the mixture flags those very points."""
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [12.0, 0.0], [0.0, 12.0]])
    G = np.vstack([m + rng.normal(size=(10000, 2)) for m in means])
    lo, hi = G.min(axis=0), G.max(axis=0)
    U = rng.uniform(lo - (hi - lo) / 2, hi + (hi - lo) / 2, size=(len(G) * 3 // 7, 2))
    m = RobustGaussianMixture(3, random_state=0, n_init=3).fit(np.vstack([G, U]))
    promise = m.inlier_flag_rate_
    assert 1e-3 < promise < 1e-2
    measured = np.mean(m.outlier_probability_[:len(G)] > 0.5)
    assert promise / 2 <= measured <= 2 * promise
    flagged = np.mean(m.outlier_mask_[:len(G)])
    assert promise / 2 <= flagged <= 2 * promise
    assert m.noise_proportion_ == pytest.approx(0.3, abs=0.01)


def test_mixture_gaussian_clusters_without_noise_get_essentially_no_outliers():
    rng = np.random.default_rng(1)
    means = np.array([[0.0, 0.0, 0.0], [20.0, 0.0, 0.0], [0.0, 20.0, 0.0]])
    X = np.vstack([m + 2.0 * rng.normal(size=(4000, 3)) for m in means])
    m = RobustGaussianMixture(3, random_state=0, n_init=3).fit(X)
    assert m.noise_proportion_ < 1e-3
    assert m.inlier_flag_rate_ < 1e-4
    assert m.n_outliers_ <= 2


@pytest.mark.parametrize("cls", [RobustKMeans, RobustGaussianMixture])
def test_the_count_does_not_depend_on_the_units_of_the_columns(cls):
    X, planted = _blobs_with_noise(0.1)
    scaled = X * np.array([1.0, 1e4, 1e-3])
    moved = StandardScaler().fit_transform(X)
    fits = [cls(3, random_state=0).fit(Z) for Z in (X, scaled, moved)]
    for m in fits[1:]:
        assert m.n_outliers_ == fits[0].n_outliers_
        np.testing.assert_allclose(m.outlier_probability_, fits[0].outlier_probability_,
                                   atol=1e-9)
        assert m.noise_proportion_ == pytest.approx(fits[0].noise_proportion_, rel=1e-9)
    # the planted far points are flagged in every copy (K-means distances follow the
    # columns' units, the set flagged here does not change)
    if cls is RobustKMeans:
        for m in fits[1:]:
            np.testing.assert_array_equal(m.outlier_mask_, fits[0].outlier_mask_)


@pytest.mark.parametrize("loader, k", [(datasets.load_wine, 3),
                                       (datasets.load_breast_cancer, 2)],
                         ids=["wine", "breast_cancer"])
def test_raw_real_data_sets_get_the_count_of_their_standardised_copies(loader, k):
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    data = loader()
    raw = RobustKMeans(k, random_state=0).fit(data.data)
    std = RobustKMeans(k, random_state=0).fit(StandardScaler().fit_transform(data.data))
    tenfold = data.data.copy()
    tenfold[:, 0] *= 1e4
    big = RobustKMeans(k, random_state=0).fit(tenfold)
    assert raw.n_outliers_ <= 0.05 * len(data.data)  # measured: 0 (wine), 2 (cancer)
    np.testing.assert_array_equal(raw.outlier_mask_, std.outlier_mask_)
    np.testing.assert_array_equal(raw.outlier_mask_, big.outlier_mask_)
    assert raw.outlier_rule_ == "noise"
    keep = raw.labels_ >= 0
    ours = adjusted_rand_score(data.target[keep], raw.labels_[keep])
    theirs = adjusted_rand_score(data.target, KMeans(k, random_state=0).fit(data.data).labels_)
    assert ours >= theirs - 0.02


def test_every_fallback_to_the_chi2_rule_warns_and_is_recorded():
    X, _ = _blobs_with_noise(0.1)
    with pytest.warns(OutlierCountWarning, match=r"does not apply \(sparse input\).*"
                                                 "outlier_rule_ == 'chi2'"):
        m = RobustKMeans(3, random_state=0).fit(sp.csr_matrix(X - X.min(axis=0)))
    assert m.outlier_rule_ == "chi2"
    with pytest.warns(OutlierCountWarning, match="every feature constant"):
        m = RobustGaussianMixture(2, random_state=0).fit(np.ones((30, 2)))
    assert m.outlier_rule_ == "chi2"
    # asked for: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierCountWarning)
        assert RobustKMeans(3, lam="chi2", random_state=0).fit(X).outlier_rule_ == "chi2"
        assert RobustKMeans(3, random_state=0).fit(X).outlier_rule_ == "noise"
        assert RobustKMeans(3, lam=2.0, random_state=0).fit(X).outlier_rule_ == "lam"
        assert RobustKMeans(3, n_outliers=5, random_state=0).fit(X).outlier_rule_ == \
            "n_outliers"


#: RobustGaussianMixture(k, covariance_type=..., n_init=3, random_state=0) with its
#: default before default_rule existed (main 59d1914), on _blobs_with_noise(0.1) and
#: standardised iris: lambda_, n_outliers_, objective_, the flagged rows, the sums of
#: means_ and covariances_.
MAIN_CHI2 = {
    ("blobs", "tied_spherical"): (4.0331422236561565, 27, 2886.577725467809,
                                  [300, 301, 303, 304, 305, 306, 307, 308, 309, 310, 312, 315,
                                   316, 317, 318, 319, 320, 322, 323, 324, 325, 326, 328, 329,
                                   330, 331, 332], -36.146664148084795, 6.603275603032355),
    ("blobs", "tied"): (4.0331422236561565, 24, 2795.602217569606,
                        [300, 301, 303, 304, 305, 306, 308, 309, 312, 315, 316, 317, 318, 319,
                         320, 322, 323, 324, 325, 326, 329, 330, 331, 332],
                        -35.037946064653205, 34.116754898777465),
    ("blobs", "full"): (4.0331422236561565, 0, 2187.5996633784407, [], -26.509946381123704,
                        382.0929633084944),
    ("iris", "tied_spherical"): (4.297304614860712, 4, 570.8023884023676, [15, 41, 117, 131],
                                 0.17206581122602155, 0.23402017285668902),
    ("iris", "tied"): (4.297304614860712, 0, 366.69975247466425, [], -0.03069926855494509,
                       2.347799859147491),
    ("iris", "full"): (4.297304614860712, 0, 290.5310903601911, [], -0.2846188646862939,
                       7.425121511579944),
}


@pytest.mark.parametrize("data, covariance_type", list(MAIN_CHI2))
def test_mixture_chi2_rule_is_the_earlier_default(data, covariance_type):
    X = _blobs_with_noise(0.1)[0] if data == "blobs" else _loaded(datasets.load_iris)
    m = RobustGaussianMixture(3, covariance_type=covariance_type, n_init=3, random_state=0,
                              lam="chi2").fit(X)
    lam, count, objective, flagged, means_sum, cov_sum = MAIN_CHI2[data, covariance_type]
    assert m.lambda_ == pytest.approx(lam, rel=1e-12)
    assert m.n_outliers_ == count
    np.testing.assert_array_equal(np.flatnonzero(m.outlier_mask_), flagged)
    # EM now stops as scikit-learn's, one iteration after its test: that iteration
    # lowers the recorded cost (by at most 1e-5 of it here) and moves the
    # parameters by a fraction of tol's worth of likelihood (measured: the sum of
    # the covariances by at most 0.4%, of the means by at most 0.015 absolute)
    assert objective - 1e-4 * abs(objective) <= m.objective_ <= objective + 1e-12 * abs(objective)
    assert float(np.sum(m.means_)) == pytest.approx(means_sum, abs=0.05)
    assert float(np.sum(m.covariances_)) == pytest.approx(cov_sum, rel=1e-2)
    assert m.outlier_probability_ is None and m.noise_proportion_ is None
    assert m.lambda_rule() == CHI2_RULE


def test_mixture_explicit_lam_and_count_fit_no_noise_model():
    X, _ = _blobs_with_noise(0.1)
    for params in ({"lam": 3.0}, {"n_outliers": 20}):
        a = RobustGaussianMixture(3, random_state=0, n_init=3, **params).fit(X)
        assert a.outlier_probability_ is None and a.noise_proportion_ is None
        assert a.inlier_flag_rate_ is None
        with pytest.raises(ValueError, match="neither lam nor n_outliers"):
            a.outlier_probability(X)


def test_mixture_refit_with_a_count_clears_the_noise_model():
    X, _ = _blobs_with_noise(0.1)
    m = RobustGaussianMixture(3, random_state=0, n_init=3).fit(X)
    assert m.outlier_probability_ is not None and m.noise_proportion_ > 0
    m.set_params(n_outliers=5).fit(X)
    assert m.outlier_probability_ is None and m.noise_proportion_ is None
    assert m.n_outliers_ == 5 and m.lambda_rule() == "chosen to flag n_outliers points"


def test_mixture_outlier_probability_of_new_points():
    X, _ = _blobs_with_noise(0.1)
    m = RobustGaussianMixture(3, random_state=0, n_init=3).fit(X)
    np.testing.assert_allclose(m.outlier_probability(X), m.outlier_probability_, atol=1e-10)
    far = X.max(axis=0) - 1e-3
    p = m.outlier_probability(np.vstack([m.means_, far]))
    assert np.all(p[:3] < 1e-3) and p[3] > 0.99
    with pytest.raises(ValueError, match="dense X"):
        m.outlier_probability(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="features"):
        m.outlier_probability(X[:, :2])


@pytest.mark.parametrize("cls", [RobustKMeans, RobustGaussianMixture])
def test_noise_model_is_invariant_to_units_for_both_estimators(cls):
    X, _ = _blobs_with_noise(0.1)
    a = cls(3, random_state=0, n_init=3).fit(X)
    b = cls(3, random_state=0, n_init=3).fit(1000.0 * X + 5.0)
    assert a.n_outliers_ == b.n_outliers_
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)
    np.testing.assert_allclose(a.outlier_probability_, b.outlier_probability_, atol=1e-6)


@pytest.mark.parametrize("cls", [RobustKMeans, RobustGaussianMixture])
def test_sparse_input_and_many_features_keep_the_chi2_rule(cls):
    X, _ = _blobs_with_noise(0.1)
    X = X - X.min(axis=0)
    a = cls(3, random_state=0, n_init=2).fit(sp.csr_matrix(X))
    b = cls(3, random_state=0, n_init=2, lam="chi2").fit(sp.csr_matrix(X))
    assert a.outlier_probability_ is None and a.noise_proportion_ is None
    assert a.lambda_ == b.lambda_ and a.lambda_rule() == b.lambda_rule() == CHI2_RULE
    # more than MAX_FEATURES features: the chi2 rule (full covariances cost too much)
    rng = np.random.default_rng(3)
    wide = np.vstack([c + rng.normal(size=(100, noise.MAX_FEATURES + 1))
                      for c in (0.0, 10.0, 20.0)])
    a = cls(3, random_state=0, n_init=1).fit(wide)
    b = cls(3, random_state=0, n_init=1, lam="chi2").fit(wide)
    assert a.outlier_probability_ is None and a.lambda_rule() == CHI2_RULE
    assert a.lambda_ == b.lambda_
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)


def test_mixture_constant_features_are_left_out_of_the_volume():
    X, _ = _blobs_with_noise(0.1)
    Xc = np.column_stack([X, np.full(len(X), 7.0)])
    a = RobustGaussianMixture(3, random_state=0, n_init=3).fit(X)
    b = RobustGaussianMixture(3, random_state=0, n_init=3).fit(Xc)
    assert a.n_outliers_ == b.n_outliers_
    np.testing.assert_allclose(a.outlier_probability_, b.outlier_probability_, atol=1e-8)


def test_bad_lambda_rule_is_refused_with_a_clear_error():
    X, _ = _blobs_with_noise(0.1)
    for cls in (RobustKMeans, RobustGaussianMixture):
        with pytest.raises(ValueError, match=f"'lam' parameter of {cls.__name__} "
                                             ".*Got 'mclust' instead"):
            cls(3, lam="mclust").fit(X)


@pytest.mark.parametrize("cls", [RobustKMeans, RobustGaussianMixture])
def test_model_file_keeps_which_default_rule_was_used_for_both_estimators(tmp_path, cls):
    from robustclust._model_io import load_model, save_model

    X, _ = _blobs_with_noise(0.1)
    for rule, description in (("noise", NOISE_RULE), ("chi2", CHI2_RULE)):
        m = cls(3, random_state=0, n_init=3, lam=None if rule == "noise" else "chi2").fit(X)
        path = tmp_path / f"{cls.__name__}-{rule}.npz"
        save_model(m, path)
        back = load_model(path)
        assert m.lambda_rule() == description and back.lambda_rule() == description
        assert back.get_params()["lam"] == (None if rule == "noise" else "chi2")
        # saved when set (the noise rule), absent otherwise
        assert getattr(back, "noise_proportion_", None) == m.noise_proportion_
        assert getattr(back, "inlier_flag_rate_", None) == m.inlier_flag_rate_
        assert (m.noise_proportion_ is None) == (rule == "chi2")
        np.testing.assert_array_equal(back.predict(X), m.predict(X))
        # the noise model is in the file: the same probabilities for new points
        if rule == "noise":
            np.testing.assert_allclose(back.outlier_probability(X), m.outlier_probability_,
                                       rtol=0, atol=1e-12)
        else:
            with pytest.raises(ValueError, match="neither lam nor n_outliers"):
                back.outlier_probability(X)


def test_model_file_of_an_earlier_mixture_reads_as_the_chi2_rule(tmp_path):
    """A file written before the noise rule existed (lam None, no noise
    attributes) loads with the chi2 description, as its fit used."""
    from robustclust._model_io import load_model, save_model

    X, _ = _blobs_with_noise(0.1)
    m = RobustGaussianMixture(3, random_state=0, n_init=2, lam="chi2").fit(X)
    path = tmp_path / "m.npz"
    save_model(m, path)
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    meta = json.loads(str(arrays["__robustclust_model__"]))
    meta["estimator"]["params"]["lam"] = None
    # written before the noise rule: no noise attribute, nor the flag of how new
    # points are flagged (False here: the chi2 rule's fit)
    attributes = meta["estimator"]["attributes"]
    assert not getattr(m, "_flags_noise_points", False)
    if isinstance(attributes, dict):
        attributes.pop("_flags_noise_points", None)
    else:
        attributes[:] = [k for k in attributes if k != "_flags_noise_points"]
    assert not any("noise" in k for k in attributes)
    arrays["__robustclust_model__"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)
    back = load_model(path)
    assert back.lam is None  # the class default; the fit's rule was chi2
    assert back.lambda_rule() == CHI2_RULE
    np.testing.assert_array_equal(back.predict(X), m.predict(X))


@pytest.mark.parametrize("method, estimator", [("kmeans", "RobustKMeans"),
                                               ("gmm", "RobustGaussianMixture")])
def test_command_line_reports_the_noise_default(tmp_path, method, estimator):
    import pandas as pd

    from robustclust._model_io import load_model
    from robustclust.cli import main

    X, planted = _blobs_with_noise(0.1)
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(tmp_path / "d.csv", index=False)
    args = ["fit", str(tmp_path / "d.csv"), "-k", "3", "--method", method, "--n-init", "3",
            "--save-model", str(tmp_path / "m.npz"), "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    summary = json.loads(out.getvalue())
    assert summary["estimator"] == estimator
    assert summary["lambda_rule"] == NOISE_RULE
    assert abs(summary["n_outliers"] - planted.sum()) <= 0.2 * planted.sum()
    model = load_model(tmp_path / "m.npz")
    assert model.lambda_rule() == NOISE_RULE
    assert summary["n_outliers"] == model.n_outliers_


@pytest.mark.parametrize("covariance_type", ["tied_spherical", "tied"])
def test_a_dask_mixture_fit_keeps_the_chi2_rule_and_clears_an_earlier_noise_model(
        covariance_type):
    da = pytest.importorskip("dask.array")
    X, _ = _blobs_with_noise(0.1)
    kw = dict(covariance_type=covariance_type, init=X[[0, 100, 200]], n_init=1)
    m = RobustGaussianMixture(3, **kw).fit(X)
    assert m.noise_proportion_ is not None and m.lambda_rule() == NOISE_RULE
    m.fit(da.from_array(X, chunks=100))
    assert m.outlier_probability_ is None and m.noise_proportion_ is None
    assert m.inlier_flag_rate_ is None
    assert m.lambda_rule() == CHI2_RULE
    with pytest.raises(ValueError, match="neither lam nor n_outliers"):
        m.outlier_probability(X)
    ref = RobustGaussianMixture(3, lam="chi2", **kw).fit(X)
    assert m.lambda_ == pytest.approx(ref.lambda_, rel=1e-12)
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)


def test_the_kernel_mixture_keeps_its_own_default():
    """KernelRobustGaussianMixture has no noise rule: its Nystroem fit runs a
    RobustGaussianMixture with the chi2 rule (its documented default)."""
    from robustclust import KernelRobustGaussianMixture

    X, _ = _blobs_with_noise(0.1)
    assert "chi2" not in str(KernelRobustGaussianMixture._parameter_constraints["lam"])
    m = KernelRobustGaussianMixture(3, kernel="rbf", kernel_params={"gamma": 0.05}, n_landmarks=40, n_init=2, random_state=0).fit(X)
    assert m.approximate_model_.lam == "chi2"
    assert m.approximate_model_.noise_proportion_ is None
    ref = RobustGaussianMixture(3, init="robust-kmeans", n_init=2, random_state=0,
                                lam="chi2").fit(m.nystroem_.transform(X))
    assert m.lambda_ == pytest.approx(ref.lambda_, rel=1e-12)
    np.testing.assert_array_equal(m.outlier_mask_, ref.outlier_mask_)


def _paper_blobs_with_one_value(value):
    from robustclust.datasets import make_blobs_with_outliers

    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X.copy()
    X[0, 0] = value
    return X


@pytest.mark.parametrize("value", [1e20, 1e40])
def test_one_extreme_value_is_the_noise_defaults_one_outlier(value):
    # the covariance floor is per feature: one relative to the mean variance (set
    # by the extreme value) swamped the clusters' spread, and every point was noise
    m = RobustKMeans(4, n_init=2, random_state=0).fit(_paper_blobs_with_one_value(value))
    assert m.noise_proportion_ is not None
    assert m.n_outliers_ == 1 and m.labels_[0] == -1
    assert np.count_nonzero(m.outlier_probability_ > 0.5) == 1


def test_one_value_far_beyond_the_others_is_the_noise_models_outlier():
    # at 1e150 the other values' spread is lost to rounding beside the extreme one
    # in the internal units (it near 1, the rest near 1e-150); in the noise model's
    # standardised units it is 1e150 spreads away, left out of EM as noise for
    # certain (its square overflows), and flagged: the model of the others is unharmed
    X = _paper_blobs_with_one_value(1e150)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no overflow
        m = RobustKMeans(4, n_init=2, random_state=0).fit(X)
    assert m.outlier_rule_ == "noise" and m.outlier_probability_[0] == 1.0
    assert m.labels_[0] == -1 and np.argmax(m.outlier_norms_) == 0
    assert m.n_outliers_ < 0.05 * len(X)


# -- a cluster the start missed -------------------------------------------------------------
def _missed_cluster(seed):
    """Two clusters of 400 and 300 points, a tight one of 40, 60 uniform points."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal([0.0, 0.0], 1.0, (400, 2)), rng.normal([10.0, 0.0], 1.0, (300, 2)),
                   rng.normal([0.0, 10.0], 0.3, (40, 2)), rng.uniform(-10, 20, (60, 2))])
    return X, np.r_[np.zeros(700), np.ones(40), -np.ones(60)]


@pytest.mark.parametrize("seed", range(4))
def test_noise_model_moves_a_cluster_onto_the_small_cluster_a_start_missed(seed, monkeypatch):
    # a start with two centres in the big cluster and none in the small one: EM alone
    # calls the 40 tight points noise; the move onto the densest noise points finds
    # them, at a higher likelihood
    X, y = _missed_cluster(seed)
    start = np.array([[-1.0, 0.0], [1.0, 0.0], [10.0, 0.0]])
    moved = noise.fit_noise_model(X, start)
    monkeypatch.setattr(noise, "RESEED_MOVES", 0)
    stuck = noise.fit_noise_model(X, start)
    assert np.all(stuck.noise_probability(X)[y == 1] > 0.5)
    assert not np.any(moved.noise_probability(X)[y == 1] > 0.5)
    assert moved.log_likelihood > stuck.log_likelihood
    flagged = moved.noise_probability(X) > 0.5
    assert abs(int(flagged.sum()) - 60) <= 10 and np.mean(y[flagged] < 0) >= 0.9


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_noise_model_makes_no_move_on_uniform_noise(p, monkeypatch):
    # clusters plus uniform noise from a start at the true centres: the densest noise
    # points are as dense as uniform noise makes some of them, and nothing moves
    for seed in range(3):
        rng = np.random.default_rng(seed)
        centres = np.zeros((2, p))
        centres[1, 0] = 10.0
        X = np.vstack([rng.normal(centres[0], 1.0, (300, p)),
                       rng.normal(centres[1], 1.0, (200, p)), rng.uniform(-10, 20, (56, p))])
        moved = noise.fit_noise_model(X, centres.copy())
        with monkeypatch.context() as m:
            m.setattr(noise, "RESEED_MOVES", 0)
            plain = noise.fit_noise_model(X, centres.copy())
        np.testing.assert_array_equal(moved.means, plain.means)
        assert moved.noise == plain.noise


def test_noise_model_takes_exact_duplicates_for_no_group(monkeypatch):
    # eight copies of one far row among the noise: a cluster moved onto them would
    # get a degenerate covariance and an unbounded likelihood; they stay noise
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0], [10.0, 0.0]])
    X = np.vstack([rng.normal(centres[0], 1.0, (300, 2)), rng.normal(centres[1], 1.0, (200, 2)),
                   rng.uniform(-10, 20, (56, 2)), np.tile([[15.0, 15.0]], (8, 1))])
    moved = noise.fit_noise_model(X, centres.copy())
    with monkeypatch.context() as m:
        m.setattr(noise, "RESEED_MOVES", 0)
        plain = noise.fit_noise_model(X, centres.copy())
    np.testing.assert_array_equal(moved.means, plain.means)
    assert np.all(moved.noise_probability(X[-8:]) > 0.5)


def test_negligible_responsibilities_leave_the_model_as_it_was(monkeypatch):
    """Rows below RESPONSIBILITY_FLOOR are left out of a cluster's M-step: on
    overlapping blobs in many dimensions (where the t tails give every row
    some responsibility for every cluster) the fitted model is the one of
    the M-step over all rows, to rounding (a floor of 1e-6 would move the
    covariances by 1e-6), and the count the same."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(2000, n_features=16, centers=8, cluster_std=4.0, random_state=3)
    X[:20] = np.random.default_rng(3).uniform(-60, 60, size=(20, 16))
    w = np.ones(len(X))

    def fit():
        return noise.default_count(X, w, 8, np.random.default_rng(0))

    s, prob, model = fit()
    monkeypatch.setattr(noise, "RESPONSIBILITY_FLOOR", 0.0)
    s0, prob0, model0 = fit()
    assert model.n_iter == model0.n_iter
    assert s == s0 and np.array_equal(prob > 0.5, prob0 > 0.5)
    np.testing.assert_allclose(model.means, model0.means, rtol=0, atol=1e-9)
    np.testing.assert_allclose(model.covariances, model0.covariances, rtol=0, atol=1e-9)
    assert model.noise == pytest.approx(model0.noise, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6),
                  elements=st.one_of(st.floats(-800.0, 800.0), st.just(-np.inf))))
def test_the_noise_models_log_sum_exp_is_scipys(a):
    """Rows of joint log densities, some -inf or entirely -inf (no density)."""
    from scipy.special import logsumexp

    with np.errstate(divide="ignore"):
        expected = logsumexp(a, axis=1)
    np.testing.assert_allclose(noise._logsumexp(a, axis=1), expected, rtol=1e-12, atol=1e-12)


def test_the_default_counts_clusters_start_from_the_noise_models():
    """With the default count the clusters are K-means of the non-noise points, and
    the noise model's clusters and its EM's robust start are among the starts: the
    fit's cost is at most that of Lloyd's K-means on those points from either."""
    from sklearn.cluster import KMeans

    X, _ = _blobs_with_noise(0.1)
    m = RobustKMeans(3, random_state=0).fit(X)
    kept = ~m.outlier_mask_
    internal = (X - m._offset) / m._scale
    starts = m._noise_model.centres_in_input_units(internal[:1])
    assert len(starts) == 2 and all(c.shape == (3, 3) for c in starts)
    for centres in starts:  # internal units back to the data's
        lloyd = KMeans(3, init=centres * m._scale + m._offset, n_init=1, tol=0,
                       max_iter=1000).fit(X[kept])
        assert m.objective_ <= lloyd.inertia_ * (1 + 1e-9)
    assert m.objective_ == pytest.approx(
        ((X[kept] - m.cluster_centers_[m.labels_[kept]]) ** 2).sum(), rel=1e-9)


@pytest.mark.parametrize("method, clusters", [("kmeans", "K-means"), ("gmm", "the mixture")])
def test_command_line_says_what_the_default_count_fits_to_the_other_points(tmp_path, method,
                                                                           clusters):
    import pandas as pd

    from robustclust.cli import main

    X, _ = _blobs_with_noise(0.1)
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(tmp_path / "d.csv", index=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fit", str(tmp_path / "d.csv"), "-k", "3", "--method", method]) == 0
    lines = [line for line in out.getvalue().splitlines() if line.startswith("outliers: ")]
    assert lines and lines[0].startswith("outliers: the points the noise model calls noise; "
                                          f"the clusters: {clusters} of the others (")
