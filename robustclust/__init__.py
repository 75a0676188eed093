"""robustclust: clustering that names its outliers in one pass.

Implements robust K-means (hard, soft, weighted), robust Gaussian mixtures
and their kernel versions with outlier-sparsity regularization, after
Forero, Kekatos and Giannakis, "Robust Clustering Using Outlier-Sparsity
Regularization", IEEE Trans. Signal Processing, 2012.
"""

from ._core.selection import OutlierCountWarning
from ._estimators import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
)
from ._model_io import load_model, save_model
from ._path import RegularizationPath, regularization_path

__version__ = "0.1.0"

__all__ = [
    "KernelRobustGaussianMixture",
    "KernelRobustKMeans",
    "OutlierCountWarning",
    "RegularizationPath",
    "RobustGaussianMixture",
    "RobustKMeans",
    "load_model",
    "regularization_path",
    "save_model",
    "__version__",
]
