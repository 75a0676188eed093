"""Records the common-covariance mixtures of robustclust main 33fb150 (the last version
in which covariance_type "spherical", "diag" and "full" named one covariance common to
all components) for tests/test_mixture_components.py:

    PYTHONPATH=<checkout of 33fb150> python tests/characterization/record_tied.py

writes tests/characterization/tied_main_33fb150.npz.  The cases use the names of that
version; the test fits them under the new names ("tied_spherical", "tied_diag",
"tied") and must get the same numbers.
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from cases import eight_dim, paper_set, sparse_set  # noqa: E402

from robustclust import RobustGaussianMixture  # noqa: E402

#: name -> (data, covariance type under the old name, other parameters)
CASES = {
    "paper_full_count": (paper_set, "full", dict(n_components=4, n_outliers=80, n_init=3)),
    "paper_diag_lam": (paper_set, "diag", dict(n_components=4, lam=2.0, n_init=2)),
    "paper_spherical_weighted_count": (paper_set, "spherical",
                                       dict(n_components=4, n_outliers=80, weighted=True,
                                            n_init=2)),
    "eight_full_default": (eight_dim, "full", dict(n_components=5, n_init=2)),
    "sparse_full_lam": (sparse_set, "full", dict(n_components=3, lam=4.0, n_init=2)),
}
ATTRIBUTES = ("labels_", "outlier_mask_", "means_", "covariances_", "weights_", "objective_",
              "lambda_", "n_iter_")


def fit(name, covariance_type):
    data, _, params = CASES[name]
    X = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "default_rule" in RobustGaussianMixture().get_params() or hasattr(
                RobustGaussianMixture, "_renamed_params"):
            # the recorded version's default lambda (the default is now the noise
            # count); deprecated names are translated, without the warning
            params = {"default_rule": "chi2", **params}
        if "refine" in RobustGaussianMixture().get_params():
            # the recorded version's estimator: the paper's, not refined
            params = {"refine": False, **params}
        model = RobustGaussianMixture(covariance_type=covariance_type, random_state=0,
                                      **params).fit(X)
        new = X[:50] * 1.1
        predicted = model.predict(new)
    out = {a: np.asarray(getattr(model, a)) for a in ATTRIBUTES}
    out["predict"] = np.asarray(predicted)
    return out


if __name__ == "__main__":
    record = {}
    for name, (_, old, _) in CASES.items():
        for key, value in fit(name, old).items():
            record[f"{name}/{key}"] = value
    np.savez(Path(__file__).parent / "tied_main_33fb150.npz", **record)
