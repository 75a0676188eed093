"""The trimmed-likelihood refinement of the mixtures (robustclust._core.trimmed_mixture).

A far point flagged is a point gone: whatever its distance and the covariance
type, the blobs keep their labels; the trimmed log-likelihood never falls
along the concentration steps; ``n_outliers=s`` flags exactly s; the refined
rule for new points (the trimming level) gives back the fit's flags.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import logsumexp
from sklearn.metrics import adjusted_rand_score

from robustclust import RobustGaussianMixture
from robustclust._core.covariance import ComponentCovariances, Covariance
from robustclust._core.trimmed_mixture import concentrate, log_densities
from robustclust._estimators.covariance_types import COVARIANCE_TYPES, make_mixture_model

TYPES = list(COVARIANCE_TYPES)


def three_blobs(seed=0):
    rng = np.random.RandomState(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.vstack([c + 0.5 * rng.randn(60, 2) for c in centres])
    return X, np.repeat([0, 1, 2], 60)


@pytest.mark.parametrize("count", [1, None])
@pytest.mark.parametrize("covariance_type", TYPES)
@pytest.mark.parametrize("distance", [1e2, 1e4, 1e6, 1e150])
def test_one_far_point_is_flagged_and_breaks_nothing(distance, covariance_type, count):
    X, y = three_blobs()
    X = np.vstack([X, [[distance, -distance]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no count warning
        model = RobustGaussianMixture(3, n_outliers=count, covariance_type=covariance_type,
                                      random_state=0).fit(X)
    assert model.outlier_mask_[-1]
    assert model.n_outliers_ == 1
    assert adjusted_rand_score(y, model.labels_[:-1]) == 1.0
    # the means are those of the blobs, not pulled towards the far point
    assert np.abs(np.sort(model.means_[:, 0]) - [0.0, 0.0, 6.0]).max() < 0.3


def _trimmed_cost(X, weights, means, cov, s):
    ell = logsumexp(log_densities(X, weights, means, cov), axis=1)
    return -np.sort(ell)[s:].sum()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), covariance_type=st.sampled_from(TYPES),
       s=st.integers(0, 20))
def test_the_trimmed_likelihood_never_falls(seed, covariance_type, s):
    rng = np.random.RandomState(seed)
    X = np.vstack([rng.randn(40, 2) + [4, 0], rng.randn(40, 2) * [0.5, 2],
                   rng.uniform(-15, 15, (10, 2))])
    model = make_mixture_model(covariance_type, 2, 1e-6, 2, "auto")
    means = X[rng.choice(len(X), 2, replace=False)]
    kind, per_component = COVARIANCE_TYPES[covariance_type]
    if per_component:
        value = {"spherical": np.ones(2), "diag": np.ones((2, 2)),
                 "full": np.stack([np.eye(2)] * 2)}[kind]
        cov = ComponentCovariances(kind, value, 2)
    else:
        cov = Covariance(kind, {"spherical": 1.0, "diag": np.ones(2), "full": np.eye(2)}[kind],
                         2)
    result = concentrate(model, X, np.array([0.5, 0.5]), means, cov, s, 200, 0.0)
    history = np.array(result.history)
    assert np.all(np.diff(history) <= 1e-9 * np.abs(history[:-1]).max())
    assert result.trimmed.sum() == s
    # the returned cost is the trimmed cost at the returned parameters
    assert result.cost == pytest.approx(
        _trimmed_cost(X, result.weights, result.means, result.covariance, s), rel=1e-10)
    # the trimmed points are the s least likely
    ell = result.log_density
    if 0 < s < len(X):
        assert ell[result.trimmed].max() <= ell[~result.trimmed].min()


@pytest.mark.parametrize("covariance_type", TYPES)
def test_a_count_is_flagged_exactly_and_predict_gives_the_fit_back(covariance_type):
    rng = np.random.RandomState(3)
    X = np.vstack([rng.randn(100, 2) * [2.0, 0.4], rng.randn(100, 2) * 0.5 + [0, 5],
                   rng.uniform(-20, 20, (30, 2))])
    for s in (5, 30, 45):
        model = RobustGaussianMixture(2, n_outliers=s, covariance_type=covariance_type,
                                      random_state=0).fit(X)
        assert model.n_outliers_ == s
        assert model._refined
        np.testing.assert_array_equal(model.predict(X), model.labels_)
        # the flagged points are those below the trimming level
        low = model.score_samples(X) < model.log_density_threshold_
        np.testing.assert_array_equal(low, model.outlier_mask_)


def test_refine_false_keeps_the_penalized_estimator():
    X, y = three_blobs()
    X = np.vstack([X, [[1e6, -1e6]]])
    model = RobustGaussianMixture(3, n_outliers=1, refine=False, random_state=0).fit(X)
    assert not model._refined and model.log_density_threshold_ is None
    refined = RobustGaussianMixture(3, n_outliers=1, random_state=0).fit(X)
    # the refinement's trimmed cost is at most the penalized fit's
    assert refined.trimmed_cost_ <= model.trimmed_cost_ + 1e-9 * abs(model.trimmed_cost_)


def test_refine_true_on_sparse_input_names_the_problem():
    import scipy.sparse as sp

    X, _ = three_blobs()
    with pytest.raises(ValueError, match="refine=True needs dense input"):
        RobustGaussianMixture(3, n_outliers=1, refine=True).fit(sp.csr_matrix(X + 10))


def test_the_default_eigenvalue_bound_is_tclusts_for_per_component_types():
    rng = np.random.RandomState(0)
    # eigenvalues 9 and 0.01 (ratio 900) and 1: unbounded, the fit keeps about 900
    X = np.vstack([rng.randn(200, 2) * [3.0, 0.1], rng.randn(200, 2) + [0, 8]])
    ratios = {}
    for bound in ("auto", None):
        model = RobustGaussianMixture(2, n_outliers=4, covariance_type="full",
                                      eigenvalue_ratio=bound, random_state=0).fit(X)
        values = np.concatenate([np.linalg.eigvalsh(c) for c in model.covariances_])
        ratios[bound] = values.max() / values.min()
    assert ratios["auto"] == pytest.approx(12.0, rel=1e-6)
    assert ratios[None] > 300
