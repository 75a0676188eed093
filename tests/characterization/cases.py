"""Data sets and estimator cases recorded from earlier versions of the library.

``record_tied.py`` stores the tied-covariance fits that
``tests/test_mixture_components.py`` compares with, from the data sets here.
The case list once served a characterization suite that refitted 57 recorded
fits of the four separate solvers; it was retired once every engine had its
own equality tests against the reference step (``test_fused.py``,
``test_passes.py``, ``test_estep.py``, ``test_dask.py``, ...).
"""

import networkx as nx
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
    regularization_path,
)
from robustclust.datasets import make_blobs_with_outliers, make_rings_with_outliers
from robustclust.graph import normalized_adjacency_kernel


def paper_set(dtype=np.float64):
    """The paper's synthetic set: 4 clusters of 50 points and 80 outliers (280 x 2)."""
    return make_blobs_with_outliers(n_outliers=80, random_state=0).X.astype(dtype)


def eight_dim():
    """630 x 8: five Gaussian blobs and 30 uniform points far from them."""
    X, _ = make_blobs(600, centers=5, n_features=8, cluster_std=1.2, random_state=3)
    rng = np.random.RandomState(4)
    out = rng.uniform(-30, 30, size=(30, 8))
    return np.vstack([X, out])


def sparse_set():
    """A 500 x 30 CSR matrix (density 0.2) with 15 heavy rows."""
    rng = np.random.RandomState(5)
    X = sp.random(500, 30, density=0.2, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.uniform(0.5, 1.5, n))
    X = X.tolil()
    for i in range(15):
        X[i, rng.choice(30, 6, replace=False)] = rng.uniform(8, 12, 6)
    return X.tocsr()


def large_set(dtype=np.float64):
    """25,000 x 4: six blobs and 2% uniform outliers (the compiled hard pass)."""
    X, _ = make_blobs(24_500, centers=6, n_features=4, cluster_std=1.0, random_state=6)
    rng = np.random.RandomState(7)
    out = rng.uniform(-25, 25, size=(500, 4))
    return np.vstack([X, out]).astype(dtype)


def rings():
    return make_rings_with_outliers(random_state=0).X


def karate_kernel():
    return normalized_adjacency_kernel(nx.karate_club_graph())


def new_points(X):
    """Rows to predict: some training rows moved a little, and far points."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    rng = np.random.RandomState(11)
    near = X[rng.choice(len(X), 20, replace=False)] + 0.1 * rng.standard_normal((20, X.shape[1]))
    far = 40.0 * rng.standard_normal((5, X.shape[1]))
    return np.vstack([near, far]).astype(X.dtype)


# The recording ran with the k-means++ start as the default (the mixtures: a
# RobustKMeans fit from it, "robust-kmeans"); the cases that leave init out pin it.
# It also ran with the chi^2 default lambda of RobustKMeans and RobustGaussianMixture
# (the default is now the noise-component count): the cases pin default_rule="chi2"
# as well (the mixture's only where it has the parameter: older versions lack it).


def _current(cls, kwargs):
    """The cases' parameters (the recorded version's names) under the current names."""
    try:
        from robustclust._estimators._params import translate_params
    except ImportError:  # a version before the renaming
        return kwargs
    old = {k: kwargs.pop(k) for k in list(kwargs) if k in cls._renamed_params}
    return translate_params(cls, kwargs, old, warn=False)


def RKM(*args, init="k-means++", default_rule="chi2", **kwargs):
    return RobustKMeans(*args, **_current(RobustKMeans, {"init": init,
                                                        "default_rule": default_rule,
                                                        **kwargs}))


#: The common-covariance types under their names since per-component covariances
#: arrived (the recorded version called them "spherical", "diag" and "full").
_COMMON = {"spherical": "tied_spherical", "diag": "tied_diag", "full": "tied"}


def RPC(*args, init="robust-kmeans", covariance_type="spherical", **kwargs):
    """RPC with one covariance common to all components (every version's meaning)."""
    if RobustGaussianMixture().covariance_type.startswith("tied"):  # the new names
        covariance_type = _COMMON[covariance_type]
    kwargs.setdefault("default_rule", "chi2")  # versions before the noise rule lack it
    kwargs = _current(RobustGaussianMixture, {"init": init, **kwargs})
    if "default_rule" not in RobustGaussianMixture().get_params():
        kwargs.pop("default_rule", None)
    return RobustGaussianMixture(*args, covariance_type=covariance_type, **kwargs)


def KRKM(*args, init="k-means++", **kwargs):
    return KernelRobustKMeans(*args, **_current(KernelRobustKMeans, {"init": init, **kwargs}))


def KRPC(*args, init="robust-kmeans", **kwargs):
    return KernelRobustGaussianMixture(*args, **_current(KernelRobustGaussianMixture,
                                                         {"init": init, **kwargs}))


#: name -> (data factory, estimator factory, predict new points?)
#: The hard K-means count cases record the unrefined estimator of the paper
#: (``refine=False``); the other count cases are not refined by default.
CASES = {
    # robust K-means, the paper's set
    "rkm_hard_lam": (paper_set, lambda: RKM(4, lam=4.0, n_init=3, random_state=0), True),
    "rkm_hard_count": (paper_set, lambda: RKM(4, n_outliers=80, n_init=3, random_state=0,
                                              refine=False), True),
    "rkm_hard_default": (paper_set, lambda: RKM(4, n_init=3, random_state=0), False),
    "rkm_hard_count_f32": (lambda: paper_set(np.float32),
                           lambda: RKM(4, n_outliers=80, n_init=3, random_state=0,
                                       refine=False), True),
    "rkm_hard_lam0": (paper_set, lambda: RKM(4, lam=0.0, n_init=2, random_state=1), False),
    "rkm_hard_random_init": (paper_set,
                             lambda: RKM(4, lam=3.0, init="random", n_init=3, random_state=2),
                             False),
    "rkm_soft_lam": (paper_set, lambda: RKM(4, q=1.5, lam=4.0, n_init=3, random_state=0), True),
    "rkm_soft_count": (paper_set,
                       lambda: RKM(4, q=1.5, n_outliers=80, n_init=3, random_state=0), False),
    "rkm_soft_default": (paper_set, lambda: RKM(4, q=1.5, n_init=3, random_state=0), False),
    "rkm_soft_default_f32": (lambda: paper_set(np.float32),
                             lambda: RKM(4, q=1.5, n_init=3, random_state=0), False),
    "wrkm_hard_count": (paper_set, lambda: RKM(4, n_outliers=80, weighted=True, n_init=3,
                                                random_state=0), True),
    "wrkm_soft_count": (paper_set, lambda: RKM(4, q=1.5, n_outliers=80, weighted=True,
                                                n_init=3, random_state=0), True),
    "wrkm_hard_lam": (paper_set, lambda: RKM(4, lam=4.0, weighted=True, n_init=3,
                                              random_state=0), False),
    "wrkm_hard_default": (paper_set, lambda: RKM(4, weighted=True, n_init=3, random_state=0),
                          False),
    "erkm_hard_lam": (paper_set, lambda: RKM(4, lam=3.0, penalty="elementwise", n_init=3,
                                              random_state=0), True),
    "erkm_hard_count": (paper_set, lambda: RKM(4, n_outliers=60, penalty="elementwise",
                                                n_init=3, random_state=0), False),
    "erkm_soft_default": (paper_set, lambda: RKM(4, q=1.5, penalty="elementwise", n_init=3,
                                                  random_state=0), False),
    "erkm_weighted_count": (paper_set, lambda: RKM(4, n_outliers=60, penalty="elementwise",
                                                    weighted=True, n_init=3, random_state=0),
                            False),
    # robust K-means on other data
    "rkm_hard_8d_default": (eight_dim, lambda: RKM(5, n_init=3, random_state=0), True),
    "rkm_soft_8d_count": (eight_dim, lambda: RKM(5, q=1.3, n_outliers=30, n_init=3,
                                                  random_state=0), False),
    "rkm_hard_sparse_lam": (sparse_set, lambda: RKM(3, lam=6.0, n_init=3, random_state=0), True),
    "rkm_hard_sparse_count": (sparse_set, lambda: RKM(3, n_outliers=15, n_init=3,
                                                      random_state=0, refine=False), False),
    "rkm_soft_sparse_default": (sparse_set, lambda: RKM(3, q=1.5, n_init=2, random_state=0),
                                False),
    "wrkm_hard_sparse_count": (sparse_set, lambda: RKM(3, n_outliers=15, weighted=True,
                                                       n_init=2, random_state=0), False),
    "rkm_hard_large_lam": (large_set, lambda: RKM(6, lam=6.0, n_init=2, random_state=0), True),
    "rkm_hard_large_count_f32": (lambda: large_set(np.float32),
                                 lambda: RKM(6, n_outliers=500, n_init=2, random_state=0,
                                             refine=False), False),
    "wrkm_hard_large_lam": (large_set, lambda: RKM(6, lam=6.0, weighted=True, n_init=1,
                                                    random_state=0), False),
    "rkm_hard_large_default": (large_set, lambda: RKM(6, n_init=1, random_state=1), False),
    # robust Gaussian mixtures
    "rpc_spherical_count": (paper_set, lambda: RPC(4, n_outliers=80, n_init=3, random_state=0),
                            True),
    "rpc_diag_count": (paper_set, lambda: RPC(4, n_outliers=80, covariance_type="diag",
                                              n_init=3, random_state=0), True),
    "rpc_full_count": (paper_set, lambda: RPC(4, n_outliers=80, covariance_type="full",
                                              n_init=3, random_state=0), True),
    "rpc_spherical_default": (paper_set, lambda: RPC(4, n_init=3, random_state=0), False),
    "rpc_full_default_8d": (eight_dim, lambda: RPC(5, covariance_type="full", n_init=2,
                                                   random_state=0), True),
    "rpc_diag_lam_8d": (eight_dim, lambda: RPC(5, lam=3.5, covariance_type="diag", n_init=2,
                                               random_state=0), False),
    "wrpc_spherical_count": (paper_set, lambda: RPC(4, n_outliers=80, weighted=True, n_init=3,
                                                    random_state=0), True),
    "wrpc_full_lam": (paper_set, lambda: RPC(4, lam=3.0, covariance_type="full", weighted=True,
                                             n_init=3, random_state=0), False),
    "rpc_full_count_f32": (lambda: paper_set(np.float32),
                           lambda: RPC(4, n_outliers=80, covariance_type="full", n_init=2,
                                       random_state=0), False),
    "rpc_spherical_sparse_lam": (sparse_set, lambda: RPC(3, lam=4.0, n_init=2, random_state=0),
                                 False),
    "rpc_kmeanspp_lam": (paper_set, lambda: RPC(4, lam=3.0, init="k-means++", n_init=3,
                                                random_state=0), False),
    # kernel estimators
    "krkm_linear_count": (paper_set, lambda: KRKM(4, kernel="linear", n_outliers=80, n_init=3,
                                                  random_state=0), True),
    "krkm_rbf_count": (rings, lambda: KRKM(2, kernel="rbf", gamma=0.2, q=1.1, n_outliers=60,
                                           init="spectral", n_init=3, random_state=0), True),
    "krkm_rbf_default": (rings, lambda: KRKM(2, kernel="rbf", gamma=0.2, init="spectral",
                                             n_init=2, random_state=0), False),
    "krkm_rbf_hard_lam": (rings, lambda: KRKM(2, kernel="rbf", lam=0.8, n_init=3,
                                              random_state=0), True),
    "krkm_precomputed_count": (karate_kernel,
                               lambda: KRKM(2, kernel="precomputed", init="spectral",
                                            n_outliers=3, random_state=0), False),
    "wkrkm_rbf_count": (rings, lambda: KRKM(2, kernel="rbf", gamma=0.2, weighted=True,
                                            n_outliers=60, init="spectral", n_init=2,
                                            random_state=0), True),
    "krkm_soft_poly_lam": (paper_set, lambda: KRKM(4, kernel="poly", q=1.5, lam=2.0, n_init=2,
                                                   random_state=0), False),
    "krpc_linear_count": (paper_set, lambda: KRPC(4, kernel="linear", n_outliers=80, n_init=2,
                                                  random_state=0), True),
    "krpc_rbf_count": (rings, lambda: KRPC(2, kernel="rbf", gamma=0.2, n_outliers=60,
                                           init="spectral", n_init=2, random_state=0), True),
    "krpc_rbf_default": (rings, lambda: KRPC(2, kernel="rbf", gamma=0.2, init="spectral",
                                             n_init=2, random_state=0), False),
    "krpc_precomputed_count": (karate_kernel,
                               lambda: KRPC(2, kernel="precomputed", init="spectral",
                                            n_outliers=3, n_init=2, random_state=0), False),
    "wkrpc_rbf_lam": (rings, lambda: KRPC(2, kernel="rbf", gamma=0.2, lam=3.0, weighted=True,
                                          init="spectral", n_init=2, random_state=0), False),
    "krkm_nystroem_count": (rings, lambda: KRKM(2, kernel="rbf", gamma=0.2, n_outliers=60,
                                                approximation="nystroem", n_landmarks=50,
                                                n_init=2, random_state=0), True),
    "krpc_nystroem_count": (rings, lambda: KRPC(2, kernel="rbf", gamma=0.2, n_outliers=60,
                                                approximation="nystroem", n_landmarks=50,
                                                n_init=2, random_state=0), True),
}

#: name -> (data factory, estimator factory, n_lambdas)
PATHS = {
    "path_rkm_hard": (paper_set, lambda: RKM(4, n_init=3, random_state=0), 25),
    "path_rpc_spherical": (paper_set, lambda: RPC(4, n_init=2, random_state=0), 15),
    "path_wrkm_soft": (paper_set, lambda: RKM(4, q=1.5, weighted=True, n_init=2,
                                              random_state=0), 12),
    "path_krkm_rbf": (rings, lambda: KRKM(2, kernel="rbf", gamma=0.2, init="spectral",
                                          n_init=2, random_state=0), 12),
}

#: Fitted attributes compared when the estimator has them.
ARRAYS = ("labels_", "outlier_mask_", "outlier_norms_", "outlier_scores_", "cluster_centers_",
          "means_", "weights_", "covariances_", "dual_coef_", "memberships_",
          "objective_history_", "variance_")
SCALARS = ("lambda_", "unweighted_lambda_", "n_outliers_", "objective_", "n_iter_")


def fit_case(name):
    """Fit one case; returns a dict of arrays (fitted attributes, predictions)."""
    data, make, predict = CASES[name]
    X = data()
    est = make().fit(X)
    out = {}
    for attr in ARRAYS + SCALARS:
        value = getattr(est, attr, None)
        if value is not None:
            out[attr] = np.asarray(value)
    if "memberships_" in out and np.all((out["memberships_"] == 0) | (out["memberships_"] == 1)):
        del out["memberships_"]  # hard memberships: the labels say it all
    if sp.issparse(getattr(est, "outlier_vectors_", None)):
        # the nonzero rows only (the rows of outlier_mask_)
        out["outlier_vectors_"] = est.outlier_vectors_.toarray()[est.outlier_mask_]
    out["labels_"] = out["labels_"].astype(np.int32)
    for key in ("outlier_norms_", "outlier_scores_"):
        if key in out:  # nonzero exactly at outlier_mask_
            out[key] = out[key][est.outlier_mask_]
    if predict:
        Xn = new_points(X)
        out["predict"] = np.asarray(est.predict(Xn))
        if hasattr(est, "outlier_norms"):
            out["predict_norms"] = np.asarray(est.outlier_norms(Xn))
        if hasattr(est, "predict_proba"):
            out["predict_proba"] = np.asarray(est.predict_proba(Xn))
    return out


def fit_path(name):
    data, make, n_lambdas = PATHS[name]
    # path_tol=1: every grid value solved to the estimator's tolerance, as
    # recorded (the default now solves K-means values to 10x it; see
    # tests/test_path.py::test_path_tolerance_trades_iterations_for_accuracy)
    path = regularization_path(make(), data(), n_lambdas=n_lambdas, path_tol=1.0)
    return {"lambdas": path.lambdas, "outlier_norms": path.outlier_norms,
            "n_outliers": path.n_outliers, "objectives": path.objectives,
            "n_iter": path.n_iter, "centers": path.centers}


def run(name):
    return fit_path(name) if name in PATHS else fit_case(name)


ALL = list(CASES) + list(PATHS)
