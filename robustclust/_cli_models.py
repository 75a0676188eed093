"""From command-line options to estimators, and from estimators to per-row results.

The only module of the command line that knows the estimator classes:
:func:`build_estimator` turns the options into an unfitted estimator,
:func:`row_results` and :func:`describe` read a fitted one.  The kernel
estimators (``--kernel``, graph inputs) plug in at
:func:`_kernel_estimator`.
"""

from dataclasses import dataclass

import click
import numpy as np
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from ._kmeans import RobustKMeans
from ._mixture import RobustGaussianMixture

METHODS = ("kmeans", "soft", "gmm")
COVARIANCES = ("spherical", "diag", "full")
KERNELS = ("rbf", "poly", "linear", "cosine")

#: Fuzzifier of ``--method soft`` when ``--q`` is not given (the paper's).
DEFAULT_Q = 1.5


class NotAvailableError(click.UsageError):
    """The options ask for an estimator this version does not have (exit 2)."""


@dataclass(frozen=True)
class ModelOptions:
    """The estimator options shared by ``fit`` and ``path`` (already checked).

    ``lam`` and ``n_outliers`` are None when not given; ``q`` and
    ``covariance`` are None unless they apply to ``method``.
    """

    n_clusters: int
    method: str = "kmeans"
    q: float | None = None
    covariance: str | None = None
    weighted: bool = False
    kernel: str | None = None
    standardize: bool = False
    n_init: int | None = None
    seed: int | None = 0
    lam: float | None = None
    n_outliers: int | float | None = None


def build_estimator(options, *, graph=False):
    """The unfitted estimator (or StandardScaler + estimator pipeline) to run.

    Parameters
    ----------
    options : ModelOptions
    graph : bool, default=False
        The input is a graph (always clustered with the graph kernel).

    Returns
    -------
    estimator : RobustKMeans, RobustGaussianMixture or Pipeline
    """
    if graph or options.kernel is not None:
        return _kernel_estimator(options, graph)
    common = {"lam": options.lam, "n_outliers": options.n_outliers,
              "weighted": options.weighted, "random_state": options.seed}
    if options.n_init is not None:
        common["n_init"] = options.n_init
    if options.method == "gmm":
        estimator = RobustGaussianMixture(
            options.n_clusters, covariance_type=options.covariance or "spherical", **common)
    else:
        q = (options.q or DEFAULT_Q) if options.method == "soft" else 1.0
        estimator = RobustKMeans(options.n_clusters, q=q, **common)
    return make_pipeline(StandardScaler(), estimator) if options.standardize else estimator


def _kernel_estimator(options, graph):
    """Kernel robust K-means / mixture for ``--kernel`` and graph inputs.

    Not available yet: the kernel estimators (``KernelRobustKMeans``,
    ``KernelRobustGaussianMixture``, ``robustclust.graph``) are still being
    written.  This is the one place to build them from ``options``.
    """
    raise kernels_not_available("graph inputs need" if graph
                                else f"--kernel {options.kernel} needs")


def kernels_not_available(what):
    """The usage error for a feature that needs the kernel estimators."""
    return NotAvailableError(f"{what} the kernel estimators, which are not available in "
                             "this version of robustclust yet")


def final_estimator(model):
    """The clustering estimator itself (the last step of a pipeline)."""
    return model[-1] if isinstance(model, Pipeline) else model


def fitted_data(model, X):
    """X as the clustering estimator sees it (after the pipeline's scaling)."""
    return model[:-1].transform(X) if isinstance(model, Pipeline) else X


def row_results(model):
    """(labels, outlier mask, outlier score) of every training row of a fitted model.

    The score is ``outlier_scores_`` (||o_n|| in the Sigma^-1 norm, scale-free)
    where the estimator has it, else ``outlier_norms_`` (||o_n||_2).
    """
    est = final_estimator(model)
    scores = getattr(est, "outlier_scores_", None)
    if scores is None:
        scores = est.outlier_norms_
    return est.labels_, est.outlier_mask_, np.asarray(scores, dtype=np.float64)


def predict_rows(model, X):
    """(labels, outlier mask, scores or None) of new rows under a fitted model.

    Scores need a method that computes them for new points:
    ``RobustKMeans.outlier_norms``; other estimators give None.
    """
    labels = model.predict(X)
    est = final_estimator(model)
    scores = None
    if hasattr(est, "outlier_norms"):
        scores = np.asarray(est.outlier_norms(fitted_data(model, X)), dtype=np.float64)
    return labels, labels == -1, scores


def describe(model):
    """A short human name of the fitted method, e.g. 'weighted soft robust K-means (q=1.5)'."""
    est = final_estimator(model)
    prefix = "weighted " if est.weighted else ""
    if isinstance(est, RobustGaussianMixture):
        return (f"{prefix}robust Gaussian mixture (RPC, {est.covariance_type} "
                "covariance)")
    if est.q == 1:
        return f"{prefix}hard robust K-means"
    return f"{prefix}soft robust K-means (q={est.q:g})"


def n_clusters(model):
    """Number of clusters (components) of a model."""
    est = final_estimator(model)
    return est.n_components if isinstance(est, RobustGaussianMixture) else est.n_clusters


def feature_names(model):
    """Column names the model was fitted on, or None."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]
