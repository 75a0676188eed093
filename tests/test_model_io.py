"""Model files: save_model / load_model round trips and their refusals."""

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.cluster import KMeans
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import robustclust
from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
    load_model,
    save_model,
)
from robustclust._model_io import FORMAT_VERSION, ModelFileError
from robustclust.datasets import make_blobs_with_outliers


@pytest.fixture(scope="module")
def data():
    """Training blobs (40 outliers) and new points near them."""
    X = make_blobs_with_outliers(n_outliers=40, random_state=1).X
    new = X[::3] + np.random.default_rng(0).normal(scale=0.4, size=X[::3].shape)
    return X, new


ESTIMATORS = {
    "hard-count": lambda: RobustKMeans(4, n_outliers=40, n_init=3, random_state=0),
    "soft-weighted": lambda: RobustKMeans(4, fuzzifier=1.5, penalty="log", n_init=2, random_state=0),
    "elementwise-lam": lambda: RobustKMeans(4, lam=2.0, penalty="elementwise", n_init=2,
                                            random_state=np.random.RandomState(3)),
    "explicit-init": lambda: RobustKMeans(2, init=[[-2.0, -2.0], [2.0, 2.0]], n_init=1,
                                          random_state=0),
    "gmm-spherical": lambda: RobustGaussianMixture(4, n_outliers=40, n_init=2, random_state=0),
    "gmm-diag-weighted": lambda: RobustGaussianMixture(4, covariance_type="diag",
                                                       penalty="log", n_init=2,
                                                       random_state=0),
    "gmm-full-inf": lambda: RobustGaussianMixture(4, covariance_type="full", lam=np.inf,
                                                  n_init=2, random_state=0),
    "gmm-spherical-ratio": lambda: RobustGaussianMixture(4, covariance_type="spherical",
                                                         n_outliers=40, eigenvalue_ratio=4.0,
                                                         n_init=2, random_state=0),
    "gmm-tied-count": lambda: RobustGaussianMixture(4, covariance_type="tied", n_outliers=40,
                                                    n_init=2, random_state=0),
    "gmm-tied-diag-inits": lambda: RobustGaussianMixture(
        4, covariance_type="tied_diag", lam=2.0, init={"weights": [0.25, 0.25, 0.25, 0.25], "means": [[-3.0, -3.0], [3.0, 3.0], [-3.0, 3.0], [3.0, -3.0]], "precisions": [1.0, 2.0]}, n_init=1),
    "pipeline": lambda: make_pipeline(StandardScaler(),
                                      RobustKMeans(4, n_outliers=0.1, n_init=2,
                                                   random_state=0)),
}


def _final(model):
    return model[-1] if hasattr(model, "steps") else model


@pytest.mark.parametrize("name", ESTIMATORS)
def test_round_trip_reproduces_every_method_for_new_data(name, data, tmp_path):
    X, new = data
    model = ESTIMATORS[name]().fit(X)
    path = tmp_path / "model.bin"
    save_model(model, path)
    loaded = load_model(path)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(new), model.predict(new))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    est, est2 = _final(model), _final(loaded)
    if isinstance(est, RobustKMeans):
        Xt = model[:-1].transform(new) if hasattr(model, "steps") else new
        np.testing.assert_array_equal(est2.outlier_norms(Xt), est.outlier_norms(Xt))
        np.testing.assert_array_equal(est2.transform(Xt), est.transform(Xt))
        assert est2.score(Xt) == est.score(Xt)
    else:
        np.testing.assert_array_equal(loaded.predict_proba(new), model.predict_proba(new))
        np.testing.assert_array_equal(loaded.score_samples(new), model.score_samples(new))
        assert loaded.bic(new) == model.bic(new)
    for attr in ("lambda_", "unweighted_lambda_", "n_outliers_", "objective_", "n_iter_"):
        assert getattr(est2, attr) == getattr(est, attr)
    params, params2 = est.get_params(), est2.get_params()
    if isinstance(params["random_state"], np.random.RandomState):
        assert params2.pop("random_state") is None
        params.pop("random_state")
    for key, value in params.items():
        np.testing.assert_equal(params2[key], value)


KERNEL_ESTIMATORS = {
    "rbf-count": lambda: KernelRobustKMeans(4, n_outliers=40, n_init=2, random_state=0),
    "poly-soft-weighted": lambda: KernelRobustKMeans(4, kernel="poly", kernel_params={"degree": 2, "coef0": 0.5}, fuzzifier=1.5, penalty="log", n_init=2,
                                                     random_state=0),
    "linear": lambda: KernelRobustKMeans(4, kernel="linear", lam=3.0, n_init=2,
                                         random_state=0),
    "krpc-cosine": lambda: KernelRobustGaussianMixture(4, kernel="cosine", n_outliers=20,
                                                       n_init=2, random_state=0),
    "krpc-rbf-pipeline": lambda: make_pipeline(
        StandardScaler(), KernelRobustGaussianMixture(4, kernel_params={"gamma": 0.5}, penalty="log", n_init=2,
                                                      random_state=0)),
}


@pytest.mark.parametrize("name", KERNEL_ESTIMATORS)
def test_kernel_round_trip_reproduces_predict_on_new_and_training_rows(name, data, tmp_path):
    X, new = data
    frame, new_frame = (pd.DataFrame(a, columns=["u", "v"]) for a in (X, new))
    model = KERNEL_ESTIMATORS[name]().fit(frame)
    path = tmp_path / "kernel.model"
    save_model(model, path)
    loaded = load_model(path)
    for rows in (new_frame, frame):
        np.testing.assert_array_equal(loaded.predict(rows), model.predict(rows))
    est, est2 = _final(model), _final(loaded)
    Xt = model[:-1].transform(new_frame) if hasattr(model, "steps") else new_frame
    if isinstance(est, KernelRobustKMeans):
        np.testing.assert_array_equal(est2.outlier_norms(Xt), est.outlier_norms(Xt))
    else:
        np.testing.assert_array_equal(est2.predict_proba(Xt), est.predict_proba(Xt))
    for attr in ("gamma_", "lambda_", "unweighted_lambda_", "n_outliers_", "objective_",
                 "n_iter_"):
        assert getattr(est2, attr) == getattr(est, attr)
    assert list(loaded.feature_names_in_) == ["u", "v"]
    np.testing.assert_array_equal(est2.X_fit_, est.X_fit_)  # the file holds the training rows
    if est.kernel == "linear":
        np.testing.assert_array_equal(est2.cluster_centers_, est.cluster_centers_)
    else:
        assert not hasattr(est2, "cluster_centers_")


def test_kernel_arguments_are_stored_as_a_json_mapping(data, tmp_path):
    X, _ = data
    model = KernelRobustKMeans(4, kernel="poly", kernel_params={"degree": 2}, n_init=1, random_state=0).fit(X)
    save_model(model, tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:
        meta = json.loads(npz["__robustclust_model__"].item())
    attributes = meta["estimator"]["attributes"]
    assert attributes["_kernel_kw"] == {"mapping": {"gamma": None, "degree": 2, "coef0": 1.0}}
    assert attributes["gamma_"] is None  # poly without gamma: 1 / n_features at predict time
    assert load_model(tmp_path / "m.npz")._kernel_kw == model._kernel_kw


def test_kernel_models_that_cannot_predict_or_hold_code_are_refused(data, tmp_path):
    X, _ = data
    path = tmp_path / "m.npz"
    K = X @ X.T
    refused = [
        (KernelRobustKMeans(4, kernel="precomputed", n_init=1).fit(K),
         "cannot save a KernelRobustKMeans with kernel='precomputed': it cannot predict new "
         "points"),
        (KernelRobustGaussianMixture(4, kernel=lambda A, B: A @ B.T, n_init=1).fit(X),
         "cannot save a KernelRobustGaussianMixture with a callable kernel"),
        (KernelRobustKMeans(4, n_landmarks=20, n_init=1).fit(X),
         "cannot save a KernelRobustKMeans fitted on Nystroem features (n_landmarks=20)"),
    ]
    for model, message in refused:
        with pytest.raises(TypeError) as exc:
            save_model(model, path)
        assert str(exc.value).startswith(message)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_file_name_is_kept_and_dtype_and_feature_names_survive(tmp_path):
    X = make_blobs_with_outliers(n_outliers=20, random_state=0).X.astype(np.float32)
    frame = pd.DataFrame(X, columns=["width", "height"])
    model = RobustKMeans(4, n_init=2, random_state=0).fit(frame)
    path = tmp_path / "clusters.model"
    save_model(model, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clusters.model"]
    loaded = load_model(path)
    assert loaded.cluster_centers_.dtype == np.float32
    assert list(loaded.feature_names_in_) == ["width", "height"]
    assert loaded.feature_names_in_.dtype == object
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    with pytest.raises(ValueError, match="feature names"):
        loaded.predict(frame[["height", "width"]])


def test_file_is_arrays_plus_json_metadata_without_pickle(tmp_path):
    X = make_blobs_with_outliers(n_outliers=20, random_state=0).X
    path = tmp_path / "m.npz"
    save_model(RobustGaussianMixture(4, n_init=1, random_state=0).fit(X), path)
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    assert all(a.dtype != object for a in arrays.values())
    meta = json.loads(arrays.pop("__robustclust_model__").item())
    assert meta["format"] == "robustclust-model"
    assert meta["format_version"] == FORMAT_VERSION == 3
    assert meta["library_version"] == robustclust.__version__
    spec = meta["estimator"]
    assert spec["class"] == "RobustGaussianMixture"
    assert spec["params"]["n_components"] == 4
    assert spec["attributes"]["means_"] == {"array": "means_"}
    assert isinstance(spec["attributes"]["covariances_"], float)  # spherical: sigma^2
    assert arrays["means_"].shape == (4, 2)
    assert "labels_" not in spec["attributes"]  # per-training-row arrays are not stored


FORMAT1 = Path(__file__).parent / "model_files"


@pytest.mark.parametrize("kind", ["spherical", "diag", "full"])
def test_format1_mixtures_load_with_their_common_covariance(kind):
    # written by robustclust before per-component covariances (model_files/make_format1.py):
    # "spherical", "diag" and "full" then meant one covariance common to all components
    model = load_model(FORMAT1 / f"rpc_format1_{kind}.npz")
    expected = np.load(FORMAT1 / "rpc_format1_expected.npz")
    assert model.covariance_type == {"spherical": "tied_spherical", "diag": "tied_diag",
                                     "full": "tied"}[kind]
    np.testing.assert_array_equal(np.asarray(model.covariances_), expected[f"{kind}/covariances_"])
    np.testing.assert_array_equal(model.means_, expected[f"{kind}/means_"])
    new = expected["X_new"]
    np.testing.assert_array_equal(model.predict(new), expected[f"{kind}/predict"])
    np.testing.assert_allclose(model.predict_proba(new), expected[f"{kind}/predict_proba"],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.score_samples(new), expected[f"{kind}/score_samples"],
                               rtol=1e-12)
    with np.load(FORMAT1 / f"rpc_format1_{kind}.npz", allow_pickle=False) as npz:
        meta = json.loads(npz["__robustclust_model__"].item())
    assert meta["format_version"] == 1
    assert meta["estimator"]["params"]["covariance_type"] == kind


def test_a_format1_pipeline_step_is_renamed_too(tmp_path):
    X = make_blobs_with_outliers(n_outliers=20, random_state=0).X
    path = tmp_path / "pipe.npz"
    save_model(make_pipeline(StandardScaler(),
                             RobustGaussianMixture(4, covariance_type="tied", n_init=1,
                                                   random_state=0)).fit(X), path)

    def as_format1(meta):
        meta["format_version"] = 1
        meta["estimator"]["steps"][1][1]["params"]["covariance_type"] = "full"

    _rewrite(path, as_format1)
    assert load_model(path)[-1].covariance_type == "tied"
    # format 2 keeps the value it names: "full" is one covariance per component there,
    # whose (p, p) covariance is then refused as the wrong shape
    _rewrite(path, lambda meta: meta.update(format_version=2))
    with pytest.raises(ModelFileError, match=r"covariances_ has shape \(2, 2\)"):
        load_model(path)


def _rewrite(path, edit):
    """Rewrite a model file with its metadata passed through ``edit``."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays["__robustclust_model__"].item())
    edit(meta)
    arrays["__robustclust_model__"] = np.array(json.dumps(meta))
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.fixture
def model_file(tmp_path):
    X = make_blobs_with_outliers(n_outliers=20, random_state=0).X
    path = tmp_path / "model.npz"
    save_model(RobustKMeans(4, n_init=1, random_state=0).fit(X), path)
    return path


def test_newer_format_version_is_refused_with_an_upgrade_hint(model_file):
    def newer(meta):
        meta["format_version"] = FORMAT_VERSION + 1
        meta["library_version"] = "9.0.0"

    _rewrite(model_file, newer)
    with pytest.raises(ModelFileError) as exc:
        load_model(model_file)
    assert str(exc.value) == (
        f"{model_file} was written by robustclust 9.0.0 in model format 4; this "
        f"robustclust ({robustclust.__version__}) reads format 3 and older: upgrade "
        "robustclust to load it")


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["estimator"].update({"class": "os.system"}),
     "holds an estimator class this robustclust does not know: os.system"),
    (lambda m: m["estimator"]["params"].update({"bogus": 1}),
     "holds RobustKMeans parameters this robustclust does not know: ['bogus']"),
    (lambda m: m["estimator"]["attributes"].pop("cluster_centers_"),
     "is corrupted: RobustKMeans lacks the fitted attributes ['cluster_centers_']"),
    (lambda m: m.pop("format_version"), "is corrupted (no format version)"),
    (lambda m: m.update({"format": "something-else"}),
     "is not a robustclust model file (unknown format)"),
])
def test_damaged_metadata_is_refused(model_file, edit, message):
    _rewrite(model_file, edit)
    with pytest.raises(ModelFileError) as exc:
        load_model(model_file)
    assert str(exc.value) == f"{model_file} {message}"


def test_missing_array_is_reported_as_corruption(model_file):
    with np.load(model_file, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "cluster_centers_"}
    with open(model_file, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ModelFileError, match=r"model\.npz is corrupted \("):
        load_model(model_file)


def test_truncated_and_bit_flipped_files_are_refused(model_file, tmp_path):
    raw = model_file.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFileError, match="truncated.npz is corrupted"):
        load_model(truncated)
    # damage the stored centres: the zip CRC check catches it
    with zipfile.ZipFile(model_file) as zf:
        info = zf.getinfo("cluster_centers_.npy")
    flipped = bytearray(raw)
    flipped[info.header_offset + 30 + len(info.filename) + info.file_size - 3] ^= 0xFF
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(bytes(flipped))
    with pytest.raises(ModelFileError, match="damaged.npz is corrupted"):
        load_model(damaged)


def test_other_files_are_not_model_files(tmp_path):
    pickled = tmp_path / "model.pkl"
    pickled.write_bytes(pickle.dumps({"a": 1}))
    text = tmp_path / "data.csv"
    text.write_text("x,y\n1,2\n")
    array = tmp_path / "a.npy"
    np.save(array, np.zeros(3))
    archive = tmp_path / "a.npz"
    np.savez(archive, x=np.zeros(3))
    expected = {
        pickled: "is not a robustclust model file (not a .npz archive)",
        text: "is not a robustclust model file (not a .npz archive)",
        array: "is not a robustclust model file (a plain .npy array)",
        archive: "is not a robustclust model file (no model metadata)",
    }
    for path, message in expected.items():
        with pytest.raises(ModelFileError) as exc:
            load_model(path)
        assert str(exc.value) == f"{path} {message}"
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.npz")


def test_unsupported_or_unfitted_estimators_are_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "m.npz"
    path.write_bytes(b"keep me")
    with pytest.raises(NotFittedError):
        save_model(RobustKMeans(3), path)
    X = make_blobs_with_outliers(n_outliers=20, random_state=0).X
    with pytest.raises(TypeError, match="cannot save a KMeans: model files hold"):
        save_model(KMeans(2, n_init=1).fit(X), path)
    assert path.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temporary file left
