"""The array-namespace seam: the linear estimators run on array_api_strict arrays.

Under ``sklearn.config_context(array_api_dispatch=True)`` the dense linear
estimators take arrays of any array-API namespace and compute with that
namespace's functions only (array_api_strict has nothing else).  They must
give the same outlier set and labels, and centres within 1e-10, as on NumPy.

scikit-learn's array-API mode needs ``SCIPY_ARRAY_API=1`` set before SciPy
is imported, which would change SciPy for the rest of the suite, so the
comparison runs in a subprocess.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("array_api_strict")

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np
    import array_api_strict as xps
    import sklearn
    from robustclust import RobustKMeans, RobustGaussianMixture
    from robustclust.datasets import make_blobs_with_outliers

    xps.set_array_api_strict_flags(api_version="2024.12")
    warnings.simplefilter("ignore")
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    X_new = np.vstack([X[:20] + 0.05, [[40.0, -40.0], [25.0, 30.0]]])
    ESTIMATORS = [
        RobustKMeans(4, lam=4.0, n_init=2, random_state=0),
        RobustKMeans(4, n_outliers=40, n_init=2, random_state=0),
        RobustKMeans(4, q=1.5, n_init=2, random_state=0),
        RobustKMeans(4, lam=3.0, weighted=True, n_init=2, random_state=0),
        RobustGaussianMixture(4, n_outliers=40, n_init=2, random_state=0),
        RobustGaussianMixture(4, lam=1.5, covariance_type="diag", n_init=2, random_state=0),
        RobustGaussianMixture(4, n_outliers=40, covariance_type="full", n_init=2,
                              random_state=0),
        RobustKMeans(4, n_init=2, random_state=0),
        RobustGaussianMixture(4, lam=1.5, covariance_type="full", weighted=True, n_init=2,
                              random_state=0),
    ]
    for est in ESTIMATORS:
        ref = sklearn.base.clone(est).fit(X)
        with sklearn.config_context(array_api_dispatch=True):
            got = sklearn.base.clone(est).fit(xps.asarray(X))
            labels = got.predict(xps.asarray(X_new))
        name = repr(est)
        centres = "cluster_centers_" if hasattr(ref, "cluster_centers_") else "means_"
        assert type(getattr(got, centres)).__module__.startswith("array_api_strict"), name
        assert type(labels).__module__.startswith("array_api_strict"), name
        for attr in ("outlier_mask_", "labels_"):
            assert np.array_equal(np.asarray(getattr(got, attr)), getattr(ref, attr)), (name, attr)
        a, b = getattr(ref, centres), np.asarray(getattr(got, centres))
        assert np.max(np.abs(a - b)) <= 1e-10 * max(1.0, np.max(np.abs(a))), (name, a, b)
        assert abs(got.objective_ - ref.objective_) <= 1e-10 * abs(ref.objective_), name
        assert got.n_outliers_ == ref.n_outliers_ > 0, name
        assert np.array_equal(np.asarray(labels), ref.predict(X_new)), name
        print("ok", name)
""")


def test_linear_estimators_on_array_api_strict_equal_numpy():
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("ok ") == 9
