"""Writes the format-1 model files here with robustclust 0.1.0 at main 33fb150 (before
per-component covariances): PYTHONPATH=<that checkout> python make_format1.py tests/model_files

They check that later versions read format-1 files (tests/test_model_io.py)."""
import sys
import numpy as np
import robustclust
from robustclust import RobustGaussianMixture, save_model
from robustclust.datasets import make_blobs_with_outliers
out = sys.argv[1]
X = make_blobs_with_outliers(n_outliers=20, random_state=2).X[::2]
new = np.vstack([X[:15] + 0.3, [[25.0, -25.0], [0.0, 0.0]]])
expected = {"X_new": new}
for kind in ("spherical", "diag", "full"):
    m = RobustGaussianMixture(4, n_outliers=10, covariance_type=kind, n_init=2,
                              random_state=0).fit(X)
    save_model(m, f"{out}/rpc_format1_{kind}.npz")
    expected[f"{kind}/predict"] = m.predict(new)
    expected[f"{kind}/predict_proba"] = m.predict_proba(new)
    expected[f"{kind}/score_samples"] = m.score_samples(new)
    expected[f"{kind}/covariances_"] = np.asarray(m.covariances_)
    expected[f"{kind}/means_"] = m.means_
np.savez(f"{out}/rpc_format1_expected.npz", **expected)
print(robustclust.__file__)
