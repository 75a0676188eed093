"""The solver core reproduces the fits recorded from the code before it.

``tests/characterization/main_e0d44fb.npz`` holds 57 fits (and predictions)
recorded with ``tests/characterization/record.py`` from commit e0d44fb, the
last commit with the four separate solvers.  Each case is refitted here and
compared: the same labels, outlier sets and predictions, and every number
within 1e-9 relative (float32 data: 1e-5, its own rounding: the core now
computes the mixture in float64 throughout and orders some sums differently).

Cases changed on purpose are checked for what they should now be:

* ``rkm_hard_lam0``: at lam = 0 every start has cost exactly 0 (every point
  is its own outlier).  The old solvers' rounding left 1e-14 and 4e-14 and
  kept the second start; the core's costs are exactly 0 and the first start
  is kept.
* ``rpc_spherical_sparse_lam``: a degenerate problem (lam = 4 flags 469 of
  500 points) on sparse input.  The old code's sparse and dense fits of the
  same data disagreed (costs 10146.38 after 12 iterations and 10120.65 after
  144: 1e-11 differences in the robust K-means start grew); the core's sparse
  fit is its dense fit (same labels, outliers and cost 10120.65; 143 and 144
  iterations).
* ``krkm_rbf_count`` (with the first core, before the new count search):
  two starts reached the same partition with the cluster indices swapped and
  costs equal to 1e-15, and the other one was kept.

The mixtures' stopping rule was then changed on purpose (EM now stops on the
objective, as scikit-learn's GaussianMixture does, default ``tol=1e-4``): the
fixture ``earlier_mixture_rule`` restores the recorded rule (means and
outliers moving by less than 1e-6 of their norms) so that every iterate can
still be compared; ``tests/test_mixture.py`` checks the new rule.

The weighted (log-penalty) hard fits were then changed on purpose: their
centre step is now the IRLS step of the MM majorizer (as the convex
penalty's), which has the same fixed points as eq. (9) but does not crawl
when most points are flagged.  ``wrkm_hard_large_lam`` reaches the same
solution (labels, outliers, cost to 1e-9; centres within the tolerance's
reach, 4e-8); ``wrkm_hard_lam`` a different local minimum of lower cost
(1980.47 against 2006.11, 48 outliers instead of 49).

The log penalty's O-step was then changed on purpose: it returns the limit
of the MM steps of eq. (30) at the residual (``penalties.log_limit``), where
the paper takes one step per BCD iteration; the fixed points are the same.
Every weighted fit and count fit above still reproduces its record except
two: ``wkrpc_rbf_lam`` (a degenerate fit, all 260 points flagged, sigma^2 =
3e-9) reaches the same solution (labels, outliers, iterations, cost to
6e-11; outlier norms within 1.1e-6 of scale), its first iterate's cost lower;
``path_wrkm_soft``'s weighted grid points are other stationary points on
7 of its 12 values (counts within 9, costs within 2.1%), of lower total
cost (6516.0 against 6567.5) in fewer iterations.

The fits with a target count were then changed on purpose by the new count
search (order statistics, screened restarts): they must flag the same
points as recorded (all 25 but one do), and the one that differs flagged
inliers before and flags the planted outliers now.

The squared row norms of dense X were then added up in float64 while X is
centred, and the offset (the mean) in float64 (for float32 X both were
float32 sums): ``rkm_soft_default_f32``'s three starts reach one partition
with the clusters numbered differently, at costs equal to float32 rounding
(1146.901005 against the recorded 1146.901019), and now another of them is
kept; it is compared with its clusters renumbered as recorded (``PERMUTED``).

The K-means fits that are not weighted were then changed on purpose (issue 44:
``predict`` on the training rows must reproduce ``labels_`` and the scores of
the fit): a fit now stores the fitted rule applied to its training rows, the
memberships and outliers that ``predict`` gives them with the fitted
parameters held fixed (``settled_state`` in ``robustclust._estimators.base``).
The BCD had stopped at coordinate-wise minima where some outliers' o_n was
set against a centre that is not their nearest (30 of the 135 outliers of
``rkm_hard_lam``), which no single point's problem chooses.  The ``SETTLED``
fits keep their labels, outlier sets and predictions; their costs are the
same or lower (1352.67 -> 1298.81 for ``rkm_hard_lam``), and the outlier
norms, vectors and memberships are those of the per-point problem.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse
import pytest

HERE = Path(__file__).parent / "characterization"
sys.path.insert(0, str(HERE))
import cases  # noqa: E402

RECORD = np.load(HERE / "main_e0d44fb.npz")
CHANGED = {"rkm_hard_lam0", "rpc_spherical_sparse_lam", "wrkm_hard_lam",
           "wrkm_hard_large_lam", "wkrpc_rbf_lam", "path_wrkm_soft"}
#: Fits with a target count: the count search was rewritten after the recording
#: (order statistics instead of a grid walk), so lambda (anywhere in the
#: interval that flags s points) and the iterates differ; the flagged set must not.
COUNT = [n for n in cases.CASES if "count" in n]
#: Fits whose starts reach one partition with the clusters numbered
#: differently, at costs equal to float32 rounding: which start is kept
#: depends on the last bits of the squared norms (computed in float64 while
#: centring X since, no longer rounded to float32), so they are compared
#: with the recorded clusters' numbering.
PERMUTED = {"rkm_soft_default_f32"}
#: Fits whose stored state is now the fitted rule on their rows (see above).
SETTLED = {"rkm_hard_lam", "rkm_hard_random_init", "rkm_soft_lam", "erkm_hard_lam",
           "rkm_hard_large_lam", "rkm_hard_large_default", "krkm_rbf_hard_lam",
           "krkm_soft_poly_lam"}


@pytest.fixture(autouse=True)
def earlier_mixture_rule(monkeypatch):
    """The mixtures' stopping rule, tolerance, floor and estimator of the recording."""
    from robustclust import KernelRobustGaussianMixture, RobustGaussianMixture
    from robustclust._core.models import MixtureModel
    from robustclust._estimators import mixture

    monkeypatch.setattr(MixtureModel, "stops_on_objective", False)
    for cls in (RobustGaussianMixture, KernelRobustGaussianMixture):
        monkeypatch.setitem(cls.__init__.__kwdefaults__, "tol", 1e-6)
    # the reg_covar floor was relative to the features' variances (now their MADs)
    # and the fits were not refined (refine="auto" now refines the count fits)
    robust = mixture.mean_variance  # sparse X: the variances still

    def variances(X):
        if scipy.sparse.issparse(X):
            return robust(X)
        return float(np.mean(np.asarray(X).var(axis=0))) or 1.0

    monkeypatch.setattr(mixture, "mean_variance", variances)
    monkeypatch.setitem(RobustGaussianMixture.__init__.__kwdefaults__, "refine", False)


def recorded(name):
    prefix = name + "/"
    return {k[len(prefix):]: RECORD[k] for k in RECORD.files if k.startswith(prefix)}


def run(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: np.asarray(v) for k, v in cases.run(name).items()}


def assert_same(name, new, old, rtol):
    assert set(new) >= set(old) - {"warnings"}, name
    for key, a in old.items():
        if key == "warnings":
            continue
        b = new[key]
        assert a.shape == b.shape, (name, key, a.shape, b.shape)
        if a.dtype.kind in "fc":
            finite = np.isfinite(a)
            np.testing.assert_array_equal(finite, np.isfinite(b), err_msg=f"{name}/{key}")
            scale = np.abs(a[finite]).max() if finite.any() else 1.0
            np.testing.assert_allclose(b[finite], a[finite], rtol=0, atol=rtol * max(scale, 1e-300),
                                       err_msg=f"{name}/{key}")
            np.testing.assert_array_equal(a[~finite], b[~finite], err_msg=f"{name}/{key}")
        else:
            np.testing.assert_array_equal(b, a, err_msg=f"{name}/{key}")


def renumbered(new, old):
    """``new`` with its clusters numbered as in ``old`` (matched by nearest centre)."""
    perm = np.array([int(np.argmin(((old["cluster_centers_"] - c) ** 2).sum(axis=1)))
                     for c in new["cluster_centers_"]])
    assert sorted(perm) == list(range(len(perm)))
    inverse = np.argsort(perm)
    out = dict(new)
    out["labels_"] = np.where(new["labels_"] >= 0, perm[new["labels_"]], new["labels_"])
    out["cluster_centers_"] = new["cluster_centers_"][inverse]
    out["memberships_"] = new["memberships_"][:, inverse]
    return out


@pytest.mark.parametrize("name", [n for n in cases.ALL
                                  if n not in CHANGED | SETTLED and n not in COUNT])
def test_reproduces_the_recorded_fit(name):
    rtol = 1e-5 if "f32" in name else 1e-9
    new, old = run(name), recorded(name)
    if name in PERMUTED:
        new = renumbered(new, old)
    assert_same(name, new, old, rtol)


@pytest.mark.parametrize("name", sorted(SETTLED))
def test_settled_fits_keep_their_labels_at_the_same_or_a_lower_cost(name):
    new, old = run(name), recorded(name)
    for key in ("labels_", "outlier_mask_", "n_outliers_", "predict"):
        if key in old:
            np.testing.assert_array_equal(new[key], old[key], err_msg=key)
    if "objective_" in old:
        assert float(new["objective_"]) <= float(old["objective_"]) * (1 + 1e-9) + 1e-9
    rtol = 1e-5 if "f32" in name else 1e-9
    for key in ("cluster_centers_", "means_", "lambda_", "n_iter_"):
        if key in old:
            assert_same(name, {key: new[key]}, {key: old[key]}, rtol)


@pytest.mark.parametrize("name", [n for n in COUNT if n != "rpc_diag_count"])
def test_count_fits_flag_the_recorded_points(name):
    new, old = run(name), recorded(name)
    assert new["n_outliers_"] == old["n_outliers_"]
    np.testing.assert_array_equal(new["outlier_mask_"], old["outlier_mask_"])


def test_count_fit_that_flagged_inliers_now_flags_the_planted_outliers():
    # the recorded diagonal mixture flagged 48 of the 80 planted outliers (a
    # component on them, centre RMSE 2.59); the count search now finds all 80
    from robustclust.datasets import make_blobs_with_outliers
    from robustclust.metrics import center_rmse, outlier_precision_recall

    data = make_blobs_with_outliers(n_outliers=80, random_state=0)
    new, old = run("rpc_diag_count"), recorded("rpc_diag_count")
    assert outlier_precision_recall(data.outlier_mask, old["outlier_mask_"]) == (0.6, 0.6)
    assert outlier_precision_recall(data.outlier_mask, new["outlier_mask_"]) == (1.0, 1.0)
    assert center_rmse(data.centers, new["means_"]) < 0.7 < center_rmse(data.centers,
                                                                        old["means_"])


def test_lambda_zero_keeps_the_first_of_tied_starts():
    new, old = run("rkm_hard_lam0"), recorded("rkm_hard_lam0")
    assert new["objective_"] == 0.0 and 0 < old["objective_"] < 1e-13
    assert new["n_outliers_"] == old["n_outliers_"] == 276
    # the first start alone gives the kept solution
    data, make, _ = cases.CASES["rkm_hard_lam0"]
    first = make().set_params(n_init=1).fit(data())
    np.testing.assert_array_equal(new["labels_"], first.labels_)


def test_sparse_degenerate_mixture_now_equals_its_dense_fit():
    data, make, _ = cases.CASES["rpc_spherical_sparse_lam"]
    X = data()
    sparse, dense = make().fit(X), make().fit(X.toarray())
    # the same solution; 143 iterations of a problem this flat leave 1e-6 of rounding
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    np.testing.assert_array_equal(sparse.outlier_mask_, dense.outlier_mask_)
    assert abs(sparse.n_iter_ - dense.n_iter_) <= 1
    np.testing.assert_allclose(sparse.means_, dense.means_, rtol=1e-5, atol=1e-8)
    assert sparse.objective_ == pytest.approx(dense.objective_, rel=1e-9)
    # the old sparse fit stopped elsewhere; its dense fit (like both now) reached 10120.65
    assert recorded("rpc_spherical_sparse_lam")["objective_"] == pytest.approx(10146.382,
                                                                                abs=1e-3)
    assert dense.objective_ == pytest.approx(10120.6525, abs=1e-3)


def test_weighted_fits_take_irls_centre_steps_to_the_same_or_a_lower_minimum():
    # the same solution: labels and outliers exact, the cost to 1e-9, the centres
    # within the stopping rule's reach (tol = 1e-4 of their norm)
    new, old = run("wrkm_hard_large_lam"), recorded("wrkm_hard_large_lam")
    np.testing.assert_array_equal(new["labels_"], old["labels_"])
    np.testing.assert_array_equal(new["outlier_mask_"], old["outlier_mask_"])
    assert float(new["objective_"]) == pytest.approx(float(old["objective_"]), rel=1e-9)
    scale = np.abs(old["cluster_centers_"]).max()
    np.testing.assert_allclose(new["cluster_centers_"], old["cluster_centers_"], rtol=0,
                               atol=1e-6 * scale)
    assert int(new["n_iter_"]) <= int(old["n_iter_"])
    # another local minimum, of lower cost, one flagged point fewer
    new, old = run("wrkm_hard_lam"), recorded("wrkm_hard_lam")
    assert float(new["objective_"]) < float(old["objective_"]) - 10.0
    assert (int(new["n_outliers_"]), int(old["n_outliers_"])) == (48, 49)
    assert (new["outlier_mask_"] != old["outlier_mask_"]).sum() == 1


def test_log_penalty_mm_limit_reaches_the_same_or_cheaper_stationary_points():
    # a degenerate weighted kernel mixture (every point flagged): the same solution
    new, old = run("wkrpc_rbf_lam"), recorded("wkrpc_rbf_lam")
    for key in ("labels_", "outlier_mask_", "n_outliers_", "n_iter_"):
        np.testing.assert_array_equal(new[key], old[key], err_msg=key)
    assert int(new["n_outliers_"]) == 260
    assert float(new["objective_"]) == pytest.approx(float(old["objective_"]), rel=1e-9)
    scale = np.abs(old["outlier_norms_"]).max()
    np.testing.assert_allclose(new["outlier_norms_"], old["outlier_norms_"], rtol=0,
                               atol=1e-5 * scale)
    # the first weighted iterate starts from the MM limit: a lower cost
    assert new["objective_history_"][0] < old["objective_history_"][0]
    # a soft weighted path: the same grid; other stationary points on some
    # values, of lower cost in total, in fewer iterations
    new, old = run("path_wrkm_soft"), recorded("path_wrkm_soft")
    np.testing.assert_allclose(new["lambdas"], old["lambdas"], rtol=1e-12)
    assert new["n_outliers"][0] == old["n_outliers"][0] == 0
    assert np.abs(new["n_outliers"] - old["n_outliers"]).max() <= 9
    np.testing.assert_allclose(new["objectives"], old["objectives"], rtol=0.025)
    assert new["objectives"].sum() < old["objectives"].sum() - 40.0
    assert new["n_iter"].sum() < old["n_iter"].sum()
