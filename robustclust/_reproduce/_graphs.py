"""Shared steps of the two network experiments (Sec. VI-C and VI-D).

The paper's recipe: the kernel K = νI + D^{-1/2} E D^{-1/2}
(:func:`robustclust.graph.normalized_adjacency_kernel`), kernel robust
K-means initialised by spectral clustering, λ tuned to flag ``s`` nodes.
"""

import numpy as np

from .. import KernelRobustKMeans
from ..graph import normalized_adjacency_kernel
from ._report import DataNotFound

#: Restarts of the spectral initialisation (its k-means step) per fit.
N_INIT = 10


def load(loader, data_home):
    """Call a ``robustclust.datasets`` graph loader without downloading.

    Raises DataNotFound, naming the data set, when there is no local copy.
    """
    try:
        return loader(data_home, download_if_missing=False)
    except FileNotFoundError as exc:
        raise DataNotFound(f"{loader.__name__}: {exc}") from exc


def fit_krkm(graph, n_clusters, n_outliers, random_state=0):
    """(K, fitted KernelRobustKMeans) with the paper's recipe for networks."""
    K = normalized_adjacency_kernel(graph)
    model = KernelRobustKMeans(n_clusters, kernel="precomputed", n_outliers=n_outliers,
                               init="spectral", n_init=N_INIT,
                               random_state=random_state).fit(K)
    return K, model


def ranked_outliers(model, names):
    """Names of the flagged nodes, largest ‖o_n‖ first, and their indices."""
    index = np.flatnonzero(model.outlier_mask_)
    index = index[np.argsort(-model.outlier_norms_[index], kind="stable")]
    return [names[i] for i in index], index


def simple_name(name):
    """Lower case without spaces or punctuation: ``"Miami (Ohio)"`` -> ``"miamiohio"``."""
    return "".join(ch for ch in name.lower() if ch.isalnum())
