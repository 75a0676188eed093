"""The parameters of the earlier release: accepted for one release, with a FutureWarning
that names the replacement; the fit is the one the new names give; old model files load."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
    load_model,
)
from robustclust.datasets import make_blobs_with_outliers

X = make_blobs_with_outliers(n_outliers=20, random_state=5).X[::2]
MEANS = X[[0, 10, 20, 30]]

#: (class, old keyword arguments, the same fit in the current names, the replacement named)
CASES = [
    (RobustKMeans, dict(q=1.5, lam=3.0), dict(fuzzifier=1.5, lam=3.0), "fuzzifier=1.5"),
    (RobustKMeans, dict(weighted=True, n_outliers=8), dict(penalty="log", n_outliers=8),
     "penalty='log'"),
    (RobustKMeans, dict(weighted=True, penalty="elementwise", lam=2.0),
     dict(penalty="log-elementwise", lam=2.0), "penalty='log-elementwise'"),
    (RobustKMeans, dict(weighted=False, lam=2.0), dict(lam=2.0), "penalty='group'"),
    (RobustKMeans, dict(default_rule="chi2"), dict(lam="chi2"), "lam='chi2'"),
    (RobustKMeans, dict(default_rule="noise"), dict(), "leave it out"),
    (RobustKMeans, dict(default_rule="chi2", n_outliers=8), dict(n_outliers=8), "leave it out"),
    (RobustGaussianMixture, dict(weighted=True, lam=2.0), dict(penalty="log", lam=2.0),
     "penalty='log'"),
    (RobustGaussianMixture, dict(means_init=MEANS, lam=2.0), dict(init=MEANS, lam=2.0),
     "init="),
    (RobustGaussianMixture,
     dict(means_init=MEANS, weights_init=[0.1, 0.2, 0.3, 0.4], precisions_init=2.0, lam=2.0),
     dict(init={"means": MEANS, "weights": [0.1, 0.2, 0.3, 0.4], "precisions": 2.0},
          lam=2.0), "init="),
    (RobustGaussianMixture, dict(init="k-means++", weights_init=[0.25] * 4, lam=2.0),
     dict(init={"means": "k-means++", "weights": [0.25] * 4}, lam=2.0), "init="),
    (KernelRobustKMeans, dict(gamma=0.3, q=1.2, n_outliers=8),
     dict(kernel_params={"gamma": 0.3}, fuzzifier=1.2, n_outliers=8),
     "kernel_params={'gamma': 0.3}"),
    (KernelRobustKMeans, dict(kernel="poly", degree=2, coef0=0.5, lam=1.0),
     dict(kernel="poly", kernel_params={"degree": 2, "coef0": 0.5}, lam=1.0),
     "kernel_params={'degree': 2}"),
    (KernelRobustKMeans, dict(approximation="nystroem", n_landmarks=30, n_outliers=8),
     dict(n_landmarks=30, n_outliers=8), "n_landmarks=30"),
    (KernelRobustKMeans, dict(approximation="nystroem", n_outliers=8),
     dict(n_landmarks=100, n_outliers=8), "n_landmarks=100"),
    (KernelRobustGaussianMixture, dict(weighted=True, gamma=0.3, lam=1.0),
     dict(penalty="log", kernel_params={"gamma": 0.3}, lam=1.0), "penalty='log'"),
]


@pytest.mark.parametrize("cls, old, new, replacement", CASES)
def test_old_names_warn_naming_the_replacement_and_fit_as_the_new_ones(cls, old, new,
                                                                      replacement):
    n = 4 if cls is not KernelRobustGaussianMixture else 3
    with pytest.warns(FutureWarning, match="is deprecated and will be removed") as record:
        est = cls(n, n_init=1, random_state=0, **old)
    assert any(replacement in str(w.message) for w in record), [str(w.message) for w in record]
    ref = cls(n, n_init=1, random_state=0, **new)
    assert repr(est) == repr(ref)
    est.fit(X)
    ref.fit(X)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    assert est.lambda_ == ref.lambda_
    # clone copies the current names only: no warning
    clone(est)


def test_set_params_translates_old_names_too():
    est = RobustKMeans(3, penalty="elementwise")
    with pytest.warns(FutureWarning, match="write penalty='log-elementwise' instead"):
        est.set_params(weighted=True)
    assert est.penalty == "log-elementwise"
    with pytest.warns(FutureWarning, match="write fuzzifier=2.0 instead"):
        est.set_params(q=2.0, n_clusters=5)
    assert (est.fuzzifier, est.n_clusters) == (2.0, 5)


def test_an_unknown_keyword_is_still_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'fuzziness'"):
        RobustKMeans(3, fuzziness=1.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gamma'"):
        RobustKMeans(3, gamma=0.5)  # an old name of the kernel estimators only


def test_every_estimator_has_at_most_15_constructor_parameters():
    for cls in (RobustKMeans, RobustGaussianMixture, KernelRobustKMeans,
                KernelRobustGaussianMixture):
        assert len(cls().get_params()) <= 15, cls.__name__


def test_bad_kernel_params_are_named():
    with pytest.raises(ValueError, match=r"kernel_params has the unknown keys \['gama'\]"):
        KernelRobustKMeans(2, kernel_params={"gama": 1.0}).fit(X)
    with pytest.raises(ValueError, match="'gamma' parameter of KernelRobustKMeans"):
        KernelRobustKMeans(2, kernel_params={"gamma": -1.0}).fit(X)


MODEL_FILES = Path(__file__).parent / "model_files"
FORMAT2 = ["rkm_weighted_soft", "rkm_chi2", "rpc_full_means", "rpc_weighted_pipeline",
           "krkm_poly", "krpc_rbf"]


@pytest.mark.parametrize("name", FORMAT2)
def test_model_files_of_the_earlier_release_load_and_predict_as_written(name, recwarn):
    # written at main 46554ed with the old names (model_files/make_format2.py)
    path = MODEL_FILES / f"format2_{name}.npz"
    with np.load(path, allow_pickle=False) as npz:
        meta = json.loads(npz["__robustclust_model__"].item())
    assert meta["format_version"] == 2
    model = load_model(path)
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]
    expected = np.load(MODEL_FILES / "format2_expected.npz")
    new = expected["X_new"]
    np.testing.assert_array_equal(model.predict(new), expected[f"{name}/predict"])
    est = model[-1] if hasattr(model, "steps") else model
    if f"{name}/outlier_norms" in expected:
        features = model[:-1].transform(new) if hasattr(model, "steps") else new
        np.testing.assert_allclose(est.outlier_norms(features),
                                   expected[f"{name}/outlier_norms"], rtol=1e-12, atol=1e-12)
    current = {"rkm_weighted_soft": dict(fuzzifier=1.5, penalty="log"),
               "rkm_chi2": dict(lam="chi2"),
               "rpc_weighted_pipeline": dict(penalty="log"),
               "krkm_poly": dict(fuzzifier=1.2, kernel_params={"gamma": 0.5, "degree": 2},
                                 n_landmarks=None),
               "krpc_rbf": dict(kernel_params={"gamma": 0.3}, n_landmarks=None),
               }.get(name, {})
    params = est.get_params()
    for key, value in current.items():
        assert params[key] == value, key
    if name == "rpc_full_means":
        np.testing.assert_array_equal(params["init"], MEANS_FORMAT2)


MEANS_FORMAT2 = make_blobs_with_outliers(n_outliers=20, random_state=3).X[::2][[0, 10, 20, 30]]
