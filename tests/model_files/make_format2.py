"""Writes the format-2 model files here with robustclust 0.1.0 at main 46554ed (before the
parameters were renamed: q, weighted, default_rule, means_init, gamma, approximation, ...):
PYTHONPATH=<that checkout> python make_format2.py tests/model_files

They check that later versions read format-2 files with the old parameter names
(tests/test_model_io.py)."""
import sys

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import robustclust
from robustclust import (KernelRobustGaussianMixture, KernelRobustKMeans,
                         RobustGaussianMixture, RobustKMeans, save_model)
from robustclust.datasets import make_blobs_with_outliers

out = sys.argv[1]
X = make_blobs_with_outliers(n_outliers=20, random_state=3).X[::2]
new = np.vstack([X[:15] + 0.3, [[25.0, -25.0], [0.0, 0.0]]])
models = {
    "rkm_weighted_soft": RobustKMeans(4, n_outliers=10, q=1.5, weighted=True, n_init=2,
                                      random_state=0),
    "rkm_chi2": RobustKMeans(4, default_rule="chi2", n_init=2, random_state=0),
    "rpc_full_means": RobustGaussianMixture(4, n_outliers=10, covariance_type="full",
                                            means_init=X[[0, 10, 20, 30]], n_init=1),
    "rpc_weighted_pipeline": make_pipeline(StandardScaler(), RobustGaussianMixture(
        4, lam=2.0, weighted=True, covariance_type="tied", n_init=2, random_state=0)),
    "krkm_poly": KernelRobustKMeans(4, kernel="poly", gamma=0.5, degree=2, coef0=1.0,
                                    n_outliers=10, q=1.2, n_init=2, random_state=0),
    "krpc_rbf": KernelRobustGaussianMixture(4, kernel="rbf", gamma=0.3, n_outliers=10,
                                            n_init=2, random_state=0),
}
expected = {"X_new": new}
for name, model in models.items():
    model.fit(X)
    save_model(model, f"{out}/format2_{name}.npz")
    expected[f"{name}/predict"] = model.predict(new)
    est = model[-1] if hasattr(model, "steps") else model
    if hasattr(est, "outlier_norms"):
        expected[f"{name}/outlier_norms"] = est.outlier_norms(
            model[:-1].transform(new) if hasattr(model, "steps") else new)
np.savez(f"{out}/format2_expected.npz", **expected)
print(robustclust.__file__)
