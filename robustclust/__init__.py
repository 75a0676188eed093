"""robustclust: clustering that names its outliers in one pass.

Implements robust K-means (hard, soft, weighted), robust Gaussian mixtures
and their kernel versions with outlier-sparsity regularization, after
Forero, Kekatos and Giannakis, "Robust Clustering Using Outlier-Sparsity
Regularization", IEEE Trans. Signal Processing, 2012.

The public names are loaded on first use (``robustclust.RobustKMeans``,
``from robustclust import RobustKMeans``): ``import robustclust`` alone, and
the command line's ``--help``, do not import scikit-learn, and the command
line can catch an interruption or a lack of memory while NumPy,
scikit-learn and numba load (see :mod:`robustclust.__main__`).
"""

import importlib

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    "KernelRobustGaussianMixture": "._estimators",
    "KernelRobustKMeans": "._estimators",
    "OutlierCountWarning": "._core.selection",
    "RegularizationPath": "._path",
    "RobustGaussianMixture": "._estimators",
    "RobustKMeans": "._estimators",
    "load_model": "._model_io",
    "regularization_path": "._path",
    "save_model": "._model_io",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
