"""From command-line options to estimators, and from estimators to per-row results.

The only module of the command line that knows the estimator classes:
:func:`build_estimator` turns the options into an unfitted estimator (the
kernel estimators for ``--kernel`` and graph inputs), :func:`model_input`
gives it the matrix to fit (a graph's kernel), :func:`row_results` and
:func:`describe` read a fitted one.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from .. import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
)
from .._estimators._params import OLD_DEFAULT_LANDMARKS
from .._estimators.kernel import KERNEL_PARAMS, NAMED_KERNELS

METHODS = ("kmeans", "soft", "gmm")
COVARIANCES = ("tied_spherical", "tied_diag", "tied", "spherical", "diag", "full")
KERNELS = NAMED_KERNELS
INITS = ("robust", "k-means++", "random", "spectral", "robust-kmeans")
APPROXIMATIONS = ("exact", "nystroem")
#: The kernel parameters and the ``--kernel`` values they apply to.
KERNEL_PARAMETERS = {"gamma": ("rbf", "poly"), "degree": ("poly",), "coef0": ("poly",)}

#: Fuzzifier of ``--method soft`` when ``--q`` is not given (the paper's).
DEFAULT_Q = 1.5
#: Initialisation of graph inputs when ``--init`` is not given (the paper's).
GRAPH_INIT = "spectral"


@dataclass(frozen=True)
class ModelOptions:
    """The estimator options shared by ``fit`` and ``path`` (already checked).

    ``lam`` and ``n_outliers`` are None when not given; ``q``,
    ``covariance``, ``kernel``, ``gamma``, ``degree``, ``coef0`` and ``init``
    are None unless given (and they apply).  ``approximation`` is None (not
    chosen yet), ``"exact"`` or ``"nystroem"`` with ``n_landmarks`` (None:
    the estimator's default), for ``kernel`` only.
    """

    n_clusters: int
    method: str = "kmeans"
    q: float | None = None
    covariance: str | None = None
    weighted: bool = False
    kernel: str | None = None
    gamma: float | None = None
    degree: int | None = None
    coef0: float | None = None
    init: str | None = None
    standardize: bool = False
    n_init: int | None = None
    seed: int | None = 0
    lam: float | None = None
    n_outliers: int | float | None = None
    approximation: str | None = None
    n_landmarks: int | None = None
    refine: bool = True


def build_estimator(options, *, graph=False):
    """The unfitted estimator (or StandardScaler + estimator pipeline) to run.

    Parameters
    ----------
    options : ModelOptions
    graph : bool, default=False
        The input is a graph: the kernel estimators with
        ``kernel="precomputed"`` on its normalized adjacency kernel
        (:func:`model_input`), initialised by spectral clustering unless
        ``options.init`` says otherwise.

    Returns
    -------
    estimator : RobustKMeans, RobustGaussianMixture, KernelRobustKMeans, \
            KernelRobustGaussianMixture or Pipeline
    """
    common = {"lam": options.lam, "n_outliers": options.n_outliers,
              "penalty": "log" if options.weighted else "group", "random_state": options.seed}
    if options.n_init is not None:
        common["n_init"] = options.n_init
    if graph:
        common.update(kernel="precomputed", init=GRAPH_INIT)
    elif options.kernel is not None:
        common["kernel"] = options.kernel
        kernel_params = {name: getattr(options, name) for name in KERNEL_PARAMETERS
                         if getattr(options, name) is not None}
        if kernel_params:
            common["kernel_params"] = kernel_params
        if options.approximation == "nystroem":
            common["n_landmarks"] = options.n_landmarks or OLD_DEFAULT_LANDMARKS
    if options.init is not None:
        common["init"] = options.init
    kernel = "kernel" in common
    q = (options.q or DEFAULT_Q) if options.method == "soft" else 1.0
    if options.method == "gmm" and kernel:
        estimator = KernelRobustGaussianMixture(options.n_clusters, **common)
    elif options.method == "gmm":
        estimator = RobustGaussianMixture(
            options.n_clusters, covariance_type=options.covariance or "tied_spherical", **common)
    elif kernel:
        estimator = KernelRobustKMeans(options.n_clusters, fuzzifier=q, **common)
    else:
        estimator = RobustKMeans(options.n_clusters, fuzzifier=q, **common)
        if not options.refine:
            estimator.set_params(refine=False)
    return make_pipeline(StandardScaler(), estimator) if options.standardize else estimator


def model_input(data):
    """What the estimator is fitted on: the selected columns, or a graph's kernel.

    A graph becomes K = nu I + D^-1/2 E D^-1/2
    (:func:`robustclust.graph.normalized_adjacency_kernel`), rows in node
    order.  Raises ValueError for graphs it cannot take (isolated nodes,
    negative weights).
    """
    if data.graph is None:
        return data.X
    from ..graph import normalized_adjacency_kernel

    return normalized_adjacency_kernel(data.graph)


def lambda_rule(options, target, s, model, noun):
    """How lambda was set, in words: the count's target, "given", or the default rule."""
    if target is not None:
        return target.describe(s, noun)
    if options.lam is not None:
        return "given"
    return default_lambda_rule(model)


def default_lambda_rule(model):
    """How the default lambda of a model is set, in words (the estimator's own account)."""
    return final_estimator(model).lambda_rule()


def final_estimator(model):
    """The clustering estimator itself (the last step of a pipeline)."""
    return model[-1] if isinstance(model, Pipeline) else model


def own_matrix(model, data):
    """(X for ``model.fit``, feature names to set after it) without a copy of X.

    A RobustKMeans fitted directly (no scaling pipeline) centres the
    reader's own float block in place (``copy_x=False``) instead of a copy:
    a table's values are then held once.  pandas hands that block out
    read-only (copy-on-write); when it is the reader's alone
    (``data.X_owned``: no frame that rows are written from shares it) it is
    made writeable, and after the fit the caller tells the estimator, given
    an array, the column names and sets ``copy_x`` back (a saved model does
    not centre its user's data in place).  Its values after the fit differ from the read ones by
    the rounding of the centring at most; nothing written comes from them.
    Other models and inputs get ``data.X`` as it is, and (X, None) comes back.
    """
    from .._estimators.kmeans import RobustKMeans

    X = data.X
    if type(model) is not RobustKMeans or not data.X_owned or not hasattr(X, "columns"):
        return X, None
    values = X.to_numpy()
    if not values.flags.writeable:
        try:
            values.flags.writeable = True
        except ValueError:  # not the reader's own block: the estimator copies it
            return X, None
    model.set_params(copy_x=False)
    names = list(X.columns)
    return values, (names if all(isinstance(name, str) for name in names) else None)


def fitted_data(model, X):
    """X as the clustering estimator sees it (after the pipeline's scaling)."""
    return model[:-1].transform(X) if isinstance(model, Pipeline) else X


def row_results(model):
    """(labels, outlier mask, outlier score) of every training row of a fitted model.

    The score is ``outlier_scores_``: ||o_n||_2 for the K-means estimators
    (in feature space for kernels), ||o_n|| in the Sigma^-1 norm for the
    mixtures (scale-free; ||o_n|| / sigma for the kernel mixture).  It is 0
    exactly for the rows not flagged and > 0 for the flagged ones.
    """
    est = final_estimator(model)
    return est.labels_, est.outlier_mask_, np.asarray(est.outlier_scores_, dtype=np.float64)


def predict_rows(model, X):
    """(labels, outlier mask, scores or None) of new rows under a fitted model.

    Scores need a method that computes them for new points:
    ``outlier_norms`` of the (kernel) K-means models; the mixtures give None.
    """
    labels = model.predict(X)
    est = final_estimator(model)
    scores = None
    if hasattr(est, "outlier_norms"):
        scores = np.asarray(est.outlier_norms(fitted_data(model, X)), dtype=np.float64)
    return labels, labels == -1, scores


def describe(model):
    """A short human name of the fitted method, e.g. 'weighted soft robust K-means (q=1.5)'.

    A Nystroem approximation is named after the kernel:
    'hard kernel robust K-means (rbf kernel, gamma=0.25, Nystroem, 100 landmarks)'.

    Kernel models name their kernel: 'hard kernel robust K-means (rbf
    kernel, gamma=0.25)' (gamma=1/median or 1/p: the default gamma of a
    model not fitted yet); ``kernel="precomputed"`` is called the graph
    kernel, the only precomputed kernel the command line makes.
    """
    est = final_estimator(model)
    prefix = "weighted " if est.penalty.startswith("log") else ""
    kernel = kernel_name(model)
    if kernel is not None:
        detail = f"{kernel} kernel"
        gamma = kernel_gamma(model)
        if est.kernel == "rbf":
            detail += ", gamma=" + ("1/median" if gamma is None else f"{gamma:.4g}")
        elif est.kernel == "poly":
            gamma = "1/p" if gamma is None else f"{gamma:.4g}"
            degree, coef0 = (kernel_parameter(est, name) for name in ("degree", "coef0"))
            detail += f", degree {degree}, gamma={gamma}, coef0={coef0:g}"
        if est.n_landmarks is not None:
            fitted = getattr(est, "nystroem_", None)
            landmarks = est.n_landmarks if fitted is None else fitted.n_components
            detail += f", Nystroem, {landmarks} landmarks"
        if isinstance(est, KernelRobustGaussianMixture):
            return f"{prefix}kernel robust Gaussian mixture (KRPC, {detail})"
        if est.fuzzifier == 1:
            return f"{prefix}hard kernel robust K-means ({detail})"
        return f"{prefix}soft kernel robust K-means (q={est.fuzzifier:g}, {detail})"
    if isinstance(est, RobustGaussianMixture):
        return (f"{prefix}robust Gaussian mixture (RPC, {est.covariance_type} "
                "covariance)")
    if est.fuzzifier == 1:
        return f"{prefix}hard robust K-means"
    return f"{prefix}soft robust K-means (q={est.fuzzifier:g})"


def kernel_name(model):
    """'rbf', 'poly', 'linear', 'cosine', 'graph' (precomputed) or None (no kernel)."""
    kernel = getattr(final_estimator(model), "kernel", None)
    return "graph" if kernel == "precomputed" else kernel


def kernel_gamma(model):
    """gamma of an rbf or poly kernel: the one used once fitted, else the one given.

    None: not fitted with the default (1 / the median squared distance for
    rbf, 1 / n_features for poly), or no such kernel.
    """
    est = final_estimator(model)
    return getattr(est, "gamma_", kernel_parameter(est, "gamma"))


def kernel_parameter(est, name):
    """An entry of a kernel estimator's ``kernel_params`` (its default when absent)."""
    return (getattr(est, "kernel_params", None) or {}).get(name, KERNEL_PARAMS[name][1])


def n_clusters(model):
    """Number of clusters (components) of a model."""
    est = final_estimator(model)
    return getattr(est, "n_components", None) or est.n_clusters


def feature_names(model):
    """Column names the model was fitted on, or None."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]
