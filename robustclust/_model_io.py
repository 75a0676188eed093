"""Model files: fitted estimators as NumPy arrays plus JSON, never pickle.

Format, version 3
-----------------
A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays; the name
need not end in ``.npz``), read with ``allow_pickle=False`` so that loading
never runs code.  It holds:

``__robustclust_model__``
    A 0-d unicode array: UTF-8 JSON text (as written by Python's ``json``,
    so ``Infinity`` and ``NaN`` may appear) with the keys

    * ``"format"``: ``"robustclust-model"``;
    * ``"format_version"``: 3; a reader refuses files with a larger version
      (format 1: the mixtures' common covariance types under their old
      names; format 2: the parameter names of the earlier release, ``q``,
      ``weighted``, ``gamma``, ... (``robustclust._estimators._params``), read
      under their current names);
    * ``"library_version"``: the robustclust version that wrote the file;
    * ``"estimator"``: an estimator spec (below).

``<prefix><attribute>``
    One numeric or fixed-width unicode array per array-valued parameter or
    fitted attribute, under the key the spec names.

An estimator spec is ``{"class": name, "params": {...}, "attributes": {...}}``:
``params`` are the estimator's ``get_params(deep=False)`` and ``attributes``
the fitted state it gives through its public hook ``fitted_state()`` (what
``predict`` and the other methods for new data need, and the fit's summary
numbers; per-training-row arrays such as ``labels_`` are not stored); it is
rebuilt with the class method ``from_fitted_state(params, attributes)``.  A JSON value is a number, string,
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
(graphs), a callable kernel or Nystroem features (``n_landmarks``) are not saved:
the first cannot predict new points at all, the others hold Python objects.

Adding an estimator means adding its class to :data:`CLASSES` (scikit-learn's
``StandardScaler`` has its attribute names in :data:`SCALER_ATTRIBUTES`).

Versions.  Format 2 differs from format 1 in one meaning only: the
``covariance_type`` of a ``RobustGaussianMixture``.  In format 1 the values
``"spherical"``, ``"diag"`` and ``"full"`` named one covariance common to
all components; since per-component covariances took those names
(scikit-learn's meanings), the common ones are ``"tied_spherical"``,
``"tied_diag"`` and ``"tied"``.  A format-1 file is read with its values
renamed (:data:`V1_COVARIANCE_TYPES`), so it predicts as it did.
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

from ._estimators import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
)
from ._estimators._params import translate_params
from ._estimators.fitted import check_state
from ._files import atomic_write

FORMAT = "robustclust-model"
FORMAT_VERSION = 3
#: What a format-1 file's RobustGaussianMixture covariance_type meant (see above).
V1_COVARIANCE_TYPES = {"spherical": "tied_spherical", "diag": "tied_diag", "full": "tied"}
_META_KEY = "__robustclust_model__"

#: The estimator classes a model file can hold (they rebuild themselves from
#: ``fitted_state()``), and the attributes stored for a StandardScaler step.
CLASSES = (RobustKMeans, RobustGaussianMixture, KernelRobustKMeans,
           KernelRobustGaussianMixture)
SCALER_ATTRIBUTES = ("mean_", "var_", "scale_", "n_samples_seen_", "n_features_in_")
_KERNEL_CLASSES = (KernelRobustKMeans, KernelRobustGaussianMixture)
_CLASSES = {cls.__name__: cls for cls in CLASSES + (StandardScaler,)}


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
        Nystroem features (``n_landmarks``).
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
        _check_members(path)
        archive = np.load(path, allow_pickle=False)
    except ModelFileError as exc:
        raise ModelFileError(f"{path} {exc}") from None
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
        except RecursionError:
            raise ModelFileError(f"{path} is corrupted (its metadata nest deeper than any "
                                 "model's)") from None


#: A stored array member may be compressed this many times at most (np.savez
#: stores them uncompressed): a member that would expand further is refused
#: before it is read.
MAX_EXPANSION = 100


def _check_members(path):
    """ModelFileError before any array is read when a member of the archive
    cannot be what it says: an ``.npy`` header that declares more (or less)
    data than the member holds -- a 6 MB file whose header declared 6.4 GB
    took 6.4 GB of memory and 40 s before it was found corrupted -- or a
    member compressed beyond :data:`MAX_EXPANSION` times."""
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            if (info.compress_type != zipfile.ZIP_STORED
                    and info.file_size > MAX_EXPANSION * max(info.compress_size, 1)):
                raise ModelFileError(f"is corrupted (member {info.filename} would expand "
                                     f"{info.file_size} bytes from {info.compress_size})")
            with archive.open(info) as fh:
                try:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                except (ValueError, EOFError, OSError, SyntaxError) as exc:
                    raise ModelFileError(f"is corrupted (member {info.filename}: "
                                         f"{_first_line(exc)})") from None
                header = fh.tell()
            if dtype.hasobject:
                continue  # refused by allow_pickle=False when read
            declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
            held = info.file_size - header
            if declared != held:
                raise ModelFileError(f"is corrupted (member {info.filename} declares "
                                     f"{declared} bytes of data but holds {held})")


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
    if cls.__name__ not in _CLASSES or _CLASSES[cls.__name__] is not cls:
        supported = ", ".join(sorted(_CLASSES)) + ", Pipeline"
        raise TypeError(f"cannot save a {cls.__name__}: model files hold {supported}")
    check_is_fitted(estimator)
    _check_savable(estimator)
    if cls is StandardScaler:
        fitted = {a: getattr(estimator, a) for a in SCALER_ATTRIBUTES + ("feature_names_in_",)
                  if hasattr(estimator, a)}
    else:
        fitted = estimator.fitted_state()
    return {
        "class": cls.__name__,
        "params": {k: _value(v, f"{prefix}param:{k}", arrays)
                   for k, v in estimator.get_params(deep=False).items()},
        "attributes": {a: _value(v, f"{prefix}{a}", arrays) for a, v in fitted.items()},
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
    if estimator.n_landmarks is not None:
        raise TypeError(f"cannot save a {name} fitted on Nystroem features "
                        f"(n_landmarks={estimator.n_landmarks!r})")


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
    spec = meta["estimator"]
    if version < 2:
        _rename_v1(spec)
    return _build(spec, archive)


def _rename_v1(spec):
    """A format-1 spec's mixture covariance types under their format-2 names (in place)."""
    if not isinstance(spec, dict):
        return
    if spec.get("class") == "Pipeline":
        for step in spec.get("steps") or []:
            if isinstance(step, list) and len(step) == 2:
                _rename_v1(step[1])
        return
    params = spec.get("params")
    if spec.get("class") == "RobustGaussianMixture" and isinstance(params, dict):
        old = params.get("covariance_type")
        if isinstance(old, str) and old in V1_COVARIANCE_TYPES:
            params["covariance_type"] = V1_COVARIANCE_TYPES[old]


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
    renamed = set(getattr(cls, "_renamed_params", ()))
    unknown = set(spec["params"]) - known - renamed
    if unknown:
        raise ModelFileError(
            f"holds {name} parameters this robustclust does not know: {sorted(unknown)}")
    params = {k: _restore(v, npz) for k, v in spec["params"].items() if k in known}
    old = {k: _restore(v, npz) for k, v in spec["params"].items() if k in renamed}
    if old:  # a file of the earlier release: its parameters under their current names
        params = translate_params(cls, params, old, warn=False)
    attributes = {k: _restore(v, npz) for k, v in spec["attributes"].items()}
    _check_params(cls(**params), name)
    if cls is StandardScaler:
        return _scaler(params, attributes)
    try:
        return cls.from_fitted_state(params, attributes)
    except ValueError as exc:
        raise ModelFileError(f"is corrupted: {exc}") from None


def _scaler(params, attributes):
    """A StandardScaler step rebuilt from its attributes, checked as an estimator's are."""
    missing = [a for a in SCALER_ATTRIBUTES if a not in attributes]
    if missing:
        raise ModelFileError(f"is corrupted: StandardScaler lacks the fitted attributes "
                             f"{missing}")
    scaler = StandardScaler(**params)
    for attr, value in attributes.items():
        setattr(scaler, attr, value)
    p = scaler.n_features_in_
    try:
        check_state(scaler, tuple(attributes), {a: (p,) for a in ("mean_", "var_", "scale_")})
    except ValueError as exc:
        raise ModelFileError(f"is corrupted: {exc}") from None
    return scaler


# -- validation of what was read -------------------------------------------------
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


def _restore(value, npz):
    """Inverse of :func:`_value`."""
    if isinstance(value, dict) and "mapping" in value:
        return {k: _restore(v, npz) for k, v in value["mapping"].items()}
    if isinstance(value, dict):
        array = npz[value["array"]]
        return array.astype(object) if value.get("object") else array
    return value
