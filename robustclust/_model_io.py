"""Model files: fitted estimators as NumPy arrays plus JSON, never pickle.

Format, version 1
-----------------
A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays; the name
need not end in ``.npz``), read with ``allow_pickle=False`` so that loading
never runs code.  It holds:

``__robustclust_model__``
    A 0-d unicode array: UTF-8 JSON text (as written by Python's ``json``,
    so ``Infinity`` and ``NaN`` may appear) with the keys

    * ``"format"``: ``"robustclust-model"``;
    * ``"format_version"``: 1; a reader refuses files with a larger version;
    * ``"library_version"``: the robustclust version that wrote the file;
    * ``"estimator"``: an estimator spec (below).

``<prefix><attribute>``
    One numeric or fixed-width unicode array per array-valued parameter or
    fitted attribute, under the key the spec names.

An estimator spec is ``{"class": name, "params": {...}, "attributes": {...}}``:
``params`` are the estimator's ``get_params(deep=False)`` and ``attributes``
its fitted attributes listed in :data:`FITTED_ATTRIBUTES` (what ``predict``
and the other methods for new data need, and the fit's summary numbers;
per-training-row arrays such as ``labels_`` are not stored), plus those of
:data:`OPTIONAL_ATTRIBUTES` that it has.  A JSON value is a number, string,
boolean or null, ``{"array": key}`` for an array stored in the archive
(``"object": true`` when it was an object array of strings, such as
``feature_names_in_``), or ``{"mapping": {name: value, ...}}`` for a dict
of such values (the kernel estimators' kernel arguments).  A random-state
instance is stored as null.  A :class:`sklearn.pipeline.Pipeline` whose steps are all listed
(e.g. ``StandardScaler`` then ``RobustKMeans``) is stored as
``{"class": "Pipeline", "params": {...}, "steps": [[name, spec], ...]}``.

The kernel estimators' ``predict`` evaluates the kernel between new points
and the training points, so their model files hold the training data
(``X_fit_``, after the pipeline's scaling), and the file grows with it:
N x (p + C) numbers.  Kernel models fitted with ``kernel="precomputed"``
(graphs), a callable kernel or ``approximation="nystroem"`` are not saved:
the first cannot predict new points at all, the others hold Python objects.

Adding an estimator means adding its class and attribute names to
:data:`FITTED_ATTRIBUTES`.
"""

import json
import warnings
import zipfile
from numbers import Integral, Real

import numpy as np
from numpy.lib.npyio import NpzFile
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from ._files import atomic_write
from ._kernel import KernelRobustGaussianMixture, KernelRobustKMeans
from ._kmeans import RobustKMeans
from ._mixture import RobustGaussianMixture

FORMAT = "robustclust-model"
FORMAT_VERSION = 1
_META_KEY = "__robustclust_model__"

#: Fitted attributes stored per estimator class: those needed by predict,
#: transform, score and friends on new data, and the fit's summary numbers.
#: ``feature_names_in_`` is stored when present (fitted on named columns).
FITTED_ATTRIBUTES = {
    RobustKMeans: (
        "cluster_centers_", "lambda_", "unweighted_lambda_", "eps_", "n_outliers_",
        "objective_", "n_iter_", "n_features_in_", "_offset", "_n_features_out",
    ),
    RobustGaussianMixture: (
        "weights_", "means_", "covariances_", "precisions_cholesky_", "lambda_",
        "unweighted_lambda_", "eps_", "n_outliers_", "objective_", "n_iter_",
        "converged_", "n_features_in_", "_offset", "_covar_floor",
    ),
    KernelRobustKMeans: (
        "X_fit_", "dual_coef_", "_gram_centres", "_kernel_col_mean", "_kernel_mean",
        "_kernel_kw", "gamma_", "lambda_", "unweighted_lambda_", "eps_", "n_outliers_",
        "objective_", "n_iter_", "n_features_in_",
    ),
    KernelRobustGaussianMixture: (
        "X_fit_", "dual_coef_", "_gram_centres", "_kernel_col_mean", "_kernel_mean",
        "_kernel_kw", "gamma_", "weights_", "variance_", "feature_dim_", "_covar_floor",
        "lambda_", "unweighted_lambda_", "eps_", "n_outliers_", "objective_", "n_iter_",
        "n_features_in_",
    ),
    StandardScaler: ("mean_", "var_", "scale_", "n_samples_seen_", "n_features_in_"),
}
#: Stored when the estimator has them: column names (fitted on named
#: columns), the centres of a linear-kernel model.
OPTIONAL_ATTRIBUTES = ("feature_names_in_", "cluster_centers_")
_KERNEL_CLASSES = (KernelRobustKMeans, KernelRobustGaussianMixture)
_CLASSES = {cls.__name__: cls for cls in FITTED_ATTRIBUTES}


class ModelFileError(ValueError):
    """A file that is not a model file this version of robustclust can load."""


def save_model(estimator, path):
    """Save a fitted estimator to a model file (no pickle).

    The file is written atomically: a temporary file in the same directory
    is renamed onto ``path`` once complete, replacing any existing file.

    Parameters
    ----------
    estimator : RobustKMeans, RobustGaussianMixture, KernelRobustKMeans, \
            KernelRobustGaussianMixture or Pipeline
        A fitted estimator; a pipeline may combine them with
        ``StandardScaler``.  A kernel model's file holds its training data
        (its ``predict`` needs them).
    path : str or path-like
        Destination; written as given (no suffix is added).

    Raises
    ------
    TypeError
        The estimator class has no entry in the model format, or it is a
        kernel model that cannot be saved: ``kernel="precomputed"`` (it
        cannot predict new points), a callable kernel or
        ``approximation="nystroem"``.
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.

    See Also
    --------
    load_model

    Notes
    -----
    The format is documented in :mod:`robustclust._model_io`: a ``.npz``
    archive of arrays plus JSON metadata with the format version, the
    library version, the estimator class, its parameters and the fitted
    attributes that predicting needs.
    """
    arrays = _arrays(estimator)
    with atomic_write(path) as fh:
        np.savez(fh, **arrays)


def write_model(estimator, file):
    """Write a fitted estimator's model file to an open binary file (see :func:`save_model`).

    Raises the errors of :func:`save_model` before anything is written.
    """
    arrays = _arrays(estimator)
    np.savez(file, **arrays)


def _arrays(estimator):
    """{key: array} of a model file, the metadata included."""
    arrays = {}
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": _library_version(),
        "estimator": _spec(estimator, "", arrays),
    }
    arrays[_META_KEY] = np.array(json.dumps(meta))
    return arrays


def load_model(path):
    """Load an estimator saved by :func:`save_model`.

    Loading never unpickles: the archive is read with ``allow_pickle=False``
    and the estimator is rebuilt from its class name (one of the supported
    classes), its parameters and its fitted attributes.  ``predict`` and the
    other methods for new data give the same results as the saved estimator.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    estimator : RobustKMeans, RobustGaussianMixture, KernelRobustKMeans, \
            KernelRobustGaussianMixture or Pipeline

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError
        (a ValueError) The file is not a robustclust model file, is
        corrupted, or was written by a newer, incompatible model format.
    """
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic == b"\x93NUMPY":
        raise ModelFileError(f"{path} is not a robustclust model file (a plain .npy array)")
    if not magic.startswith(b"PK"):
        raise ModelFileError(f"{path} is not a robustclust model file (not a .npz archive)")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"{path} is corrupted ({_first_line(exc)})") from exc
    if not isinstance(archive, NpzFile):  # pragma: no cover - the magic said zip
        raise ModelFileError(f"{path} is not a robustclust model file")
    with archive:
        try:
            return _probe(_read(archive))
        except ModelFileError as exc:
            raise ModelFileError(f"{path} {exc}") from exc
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, TypeError) as exc:
            raise ModelFileError(f"{path} is corrupted ({_first_line(exc)})") from exc


def _probe(model):
    """The model, once it has predicted one row of zeros without an error."""
    p = model.n_features_in_
    names = getattr(model, "feature_names_in_", None)
    row = np.zeros((1, p))
    if names is not None:
        import pandas as pd

        row = pd.DataFrame(row, columns=list(names))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels = np.asarray(model.predict(row))
    except Exception as exc:  # anything: the file's values do not work together
        raise ModelFileError(f"is corrupted: predicting with it fails ({_first_line(exc)})") \
            from None
    if labels.shape != (1,):
        raise ModelFileError("is corrupted: predicting with it gives no label")
    return model


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- saving ----------------------------------------------------------------------
def _library_version():
    from . import __version__

    return __version__


def _spec(estimator, prefix, arrays):
    """JSON spec of ``estimator``; its arrays go into ``arrays`` under ``prefix``."""
    if isinstance(estimator, Pipeline):
        params = estimator.get_params(deep=False)
        steps = params.pop("steps")
        return {
            "class": "Pipeline",
            "params": {k: _value(v, f"{prefix}{k}", arrays) for k, v in params.items()},
            "steps": [[name, _spec(step, f"{prefix}{i}/", arrays)]
                      for i, (name, step) in enumerate(steps)],
        }
    cls = type(estimator)
    if cls not in FITTED_ATTRIBUTES:
        supported = ", ".join(sorted(_CLASSES)) + ", Pipeline"
        raise TypeError(f"cannot save a {cls.__name__}: model files hold {supported}")
    check_is_fitted(estimator)
    _check_savable(estimator)
    names = FITTED_ATTRIBUTES[cls] + tuple(
        a for a in OPTIONAL_ATTRIBUTES
        if a not in FITTED_ATTRIBUTES[cls] and getattr(estimator, a, None) is not None)
    return {
        "class": cls.__name__,
        "params": {k: _value(v, f"{prefix}param:{k}", arrays)
                   for k, v in estimator.get_params(deep=False).items()},
        "attributes": {a: _value(getattr(estimator, a), f"{prefix}{a}", arrays)
                       for a in names},
    }


def _check_savable(estimator):
    """Refuse the kernel models a file cannot hold (TypeError)."""
    if not isinstance(estimator, _KERNEL_CLASSES):
        return
    name = type(estimator).__name__
    if callable(estimator.kernel):
        raise TypeError(f"cannot save a {name} with a callable kernel: model files hold "
                        "no code (use one of the named kernels)")
    if estimator.kernel == "precomputed":
        raise TypeError(f"cannot save a {name} with kernel='precomputed': it cannot "
                        "predict new points (that needs their kernel values), so there "
                        "is nothing a model file could be used for")
    if estimator.approximation is not None:
        raise TypeError(f"cannot save a {name} fitted with "
                        f"approximation={estimator.approximation!r}")


def _value(value, key, arrays):
    """A JSON-able stand-in for ``value``; arrays are stored under ``key``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    if isinstance(value, np.random.RandomState):
        return None  # seeds only the fit, which a loaded model does not rerun
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"mapping": {k: _value(v, f"{key}:{k}", arrays) for k, v in value.items()}}
    if isinstance(value, (np.ndarray, list, tuple)):
        array = np.asarray(value)
        if array.dtype == object:
            if not all(isinstance(v, str) for v in array.ravel()):
                raise TypeError(f"cannot save {key}: an object array that is not all strings")
            arrays[key] = array.astype(str)
            return {"array": key, "object": True}
        arrays[key] = array
        return {"array": key}
    raise TypeError(f"cannot save {key}: a {type(value).__name__} value")


# -- loading ---------------------------------------------------------------------
def _read(archive):
    """The estimator in an open archive; ModelFileError messages omit the path."""
    if _META_KEY not in archive.files:
        raise ModelFileError("is not a robustclust model file (no model metadata)")
    text = archive[_META_KEY]
    if text.dtype.kind != "U" or text.ndim != 0:
        raise ModelFileError("is corrupted (malformed model metadata)")
    meta = json.loads(text.item())
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFileError("is not a robustclust model file (unknown format)")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFileError("is corrupted (no format version)")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"was written by robustclust {meta.get('library_version', '?')} in model "
            f"format {version}; this robustclust ({_library_version()}) reads format "
            f"{FORMAT_VERSION} and older: upgrade robustclust to load it")
    return _build(meta["estimator"], archive)


def _build(spec, npz):
    """The estimator described by ``spec``, with its arrays from ``npz``."""
    name = spec["class"]
    if name == "Pipeline":
        steps = [(step_name, _build(step, npz)) for step_name, step in spec["steps"]]
        params = {k: _restore(v, npz) for k, v in spec["params"].items()}
        return Pipeline(steps, **params)
    if name not in _CLASSES:
        raise ModelFileError(f"holds an estimator class this robustclust does not know: {name}")
    cls = _CLASSES[name]
    known = set(cls().get_params(deep=False))
    unknown = set(spec["params"]) - known
    if unknown:
        raise ModelFileError(
            f"holds {name} parameters this robustclust does not know: {sorted(unknown)}")
    estimator = cls(**{k: _restore(v, npz) for k, v in spec["params"].items()})
    _check_params(estimator, name)
    attributes = spec["attributes"]
    missing = [a for a in FITTED_ATTRIBUTES[cls] if a not in attributes]
    if missing:
        raise ModelFileError(f"is corrupted: {name} lacks the fitted attributes {missing}")
    for attr, value in attributes.items():
        setattr(estimator, attr, _restore(value, npz))
    _check_attributes(estimator, name)
    return estimator


# -- validation of what was read -------------------------------------------------
#: Fitted numbers that may be +inf (lambda = inf is plain clustering).
_MAY_BE_INFINITE = {"lambda_", "unweighted_lambda_"}
#: Fitted numbers that must be >= 0, and those that must be > 0.
_NON_NEGATIVE = {"lambda_", "unweighted_lambda_", "n_outliers_", "n_iter_", "weights_",
                 "var_", "n_samples_seen_", "_covar_floor"}
_POSITIVE = {"eps_", "gamma_", "variance_", "scale_", "n_features_in_", "feature_dim_",
             "_n_features_out"}
#: Fitted numbers that must be whole.
_WHOLE = {"n_outliers_", "n_iter_", "n_features_in_", "feature_dim_", "_n_features_out",
          "n_samples_seen_"}


def _check_params(estimator, name):
    """Refuse parameter values the estimator would refuse (its own constraints)."""
    validate = getattr(estimator, "_validate_params", None)
    if validate is None:  # pragma: no cover - every supported class has constraints
        return
    try:
        validate()
    except ValueError as exc:  # sklearn's InvalidParameterError
        text = " ".join(str(exc).split())
        raise ModelFileError(f"holds an invalid {name} parameter: "
                             f"{text[:1].lower()}{text[1:]}") from None


def _bad_value(name, attr, value, why):
    """'is corrupted: RobustKMeans.lambda_ = -1.0 is negative' (arrays: 'holds ...')."""
    if np.ndim(value) == 0:
        shown = np.asarray(value).item()
        return ModelFileError(f"is corrupted: {name}.{attr} = {shown!r} is {why}")
    return ModelFileError(f"is corrupted: {name}.{attr} holds values that are {why}")


def _check_number(name, attr, value):
    """Finite (or +inf where allowed), signs and whole numbers as the attribute needs."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_number(name, f"{attr}[{key!r}]", item)
        return
    if value is None or isinstance(value, str):
        return
    array = np.asarray(value)
    if array.dtype == bool or array.dtype.kind in "UO":
        return
    if array.dtype.kind not in "iuf":
        raise _bad_value(name, attr, value, "not a number")
    if np.isnan(array).any():
        raise _bad_value(name, attr, value, "not a number (NaN)")
    allowed_inf = attr in _MAY_BE_INFINITE
    if np.isinf(array).any() and not (allowed_inf and np.all(array[np.isinf(array)] > 0)):
        raise _bad_value(name, attr, value, "infinite")
    if attr in _NON_NEGATIVE and (array < 0).any():
        raise _bad_value(name, attr, value, "negative")
    if attr in _POSITIVE and (array <= 0).any():
        raise _bad_value(name, attr, value, "not positive")
    if attr in _WHOLE and np.any(array != np.round(array)):
        raise _bad_value(name, attr, value, "not a whole number")


def _check_shape(name, attr, value, shape):
    actual = np.shape(value)
    if actual != shape:
        raise ModelFileError(f"is corrupted: {name}.{attr} has shape {actual}, expected "
                             f"{shape}")


def _check_attributes(estimator, name):
    """Every fitted value finite and of the shape the others imply."""
    for attr in FITTED_ATTRIBUTES[type(estimator)] + OPTIONAL_ATTRIBUTES:
        if hasattr(estimator, attr):
            _check_number(name, attr, getattr(estimator, attr))
    p = estimator.n_features_in_
    if not isinstance(p, Integral) or isinstance(p, bool):
        raise _bad_value(name, "n_features_in_", p, "not a whole number")
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        _check_shape(name, "feature_names_in_", names, (p,))
    if isinstance(estimator, StandardScaler):
        for attr in ("mean_", "var_", "scale_"):
            _check_shape(name, attr, getattr(estimator, attr), (p,))
        return
    k = getattr(estimator, "n_components", None) or estimator.n_clusters
    if isinstance(estimator, _KERNEL_CLASSES):
        n = np.shape(estimator.X_fit_)[0] if np.ndim(estimator.X_fit_) == 2 else -1
        _check_shape(name, "X_fit_", estimator.X_fit_, (n, p))
        _check_shape(name, "dual_coef_", estimator.dual_coef_, (n, k))
        _check_shape(name, "_kernel_col_mean", estimator._kernel_col_mean, (n,))
        _check_shape(name, "_gram_centres", estimator._gram_centres, (k, k))
    if getattr(estimator, "cluster_centers_", None) is not None:
        _check_shape(name, "cluster_centers_", estimator.cluster_centers_, (k, p))
    if isinstance(estimator, (RobustGaussianMixture, KernelRobustGaussianMixture)):
        _check_shape(name, "weights_", estimator.weights_, (k,))
        if not np.isclose(np.sum(estimator.weights_), 1.0, rtol=1e-6):
            raise _bad_value(name, "weights_", estimator.weights_, "not summing to 1")
    if isinstance(estimator, RobustGaussianMixture):
        _check_shape(name, "means_", estimator.means_, (k, p))
        shape = {"spherical": (), "diag": (p,), "full": (p, p)}[estimator.covariance_type]
        _check_shape(name, "covariances_", estimator.covariances_, shape)
        _check_shape(name, "precisions_cholesky_", estimator.precisions_cholesky_, shape)
        if estimator.covariance_type != "full" and np.any(np.asarray(estimator.covariances_) <= 0):
            raise _bad_value(name, "covariances_", estimator.covariances_, "not positive")


def _restore(value, npz):
    """Inverse of :func:`_value`."""
    if isinstance(value, dict) and "mapping" in value:
        return {k: _restore(v, npz) for k, v in value["mapping"].items()}
    if isinstance(value, dict):
        array = npz[value["array"]]
        return array.astype(object) if value.get("object") else array
    return value
