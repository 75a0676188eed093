"""The USPS experiment of the reproduction (Table II, Fig. 6) and its K-medians.

The experiment itself needs the USPS digits: the tests that run it read the
project's copy in ``../shared/data`` and are skipped where that folder is
absent (a user's checkout). K-medians and the cost helpers are tested on
small synthetic data.
"""

import io
from pathlib import Path

import numpy as np
from scipy.special import logsumexp
import pytest

from robustclust import KernelRobustGaussianMixture, KernelRobustKMeans
from robustclust._reproduce import run_reproduction, usps
from robustclust._reproduce._kmedians import kmedians, l1_distances
from robustclust._reproduce._report import DataNotFound

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_usps = pytest.mark.skipif(
    not (SHARED / "usps.mat").is_file(),
    reason=f"USPS copy usps.mat not found in {SHARED} (the project's shared/data folder, "
           "absent from a user's checkout)",
)
ROBUST = ("rkm", "rpc", "krkm", "krpc")
PLAIN = ("kmeans", "kmedians", "kernel_kmeans")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def no_download_cache(tmp_path, monkeypatch):
    """Only data_home is searched: no user cache, no $ROBUSTCLUST_DATA."""
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sklearn_home"))
    monkeypatch.delenv("ROBUSTCLUST_DATA", raising=False)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("usps_report")
    return out, usps.run(out, quick=True, data_home=SHARED)


# ---------------------------------------------------------------------------
# K-medians
# ---------------------------------------------------------------------------

# Two groups; the coordinate-wise medians are (1, 1) and (10, 10) (the means
# would be (1.2, 0.8) and (10.33, 11.33)).
GROUP_A = [(0, 0), (1, 0), (0, 2), (4, 1), (1, 1)]
GROUP_B = [(10, 10), (11, 10), (10, 14)]
TOY = np.array(GROUP_A + GROUP_B, dtype=float)


def test_kmedians_hand_solution():
    # From (0, 0) and (4, 1), the point (4, 1) first joins the far group (whose
    # median is then (10, 10)), and moves back once the near median is (0.5, 0.5).
    result = kmedians(TOY, [[0, 0], [4, 1]])
    np.testing.assert_array_equal(result.labels, [0, 0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(result.centers, [[1, 1], [10, 10]])
    # l1 distances to (1, 1): 2 + 1 + 2 + 3 + 0; to (10, 10): 0 + 1 + 4
    assert result.cost == 13.0
    # round 1 from (0, 0) and (4, 1): 0 + 1 + 2 + 0 + 2 and 15 + 16 + 19;
    # round 2 from (0.5, 0.5) and (10, 10): 1 + 1 + 2 + 4 + 1 and 0 + 1 + 4
    np.testing.assert_array_equal(result.history, [55.0, 14.0])
    assert result.n_iter == 2


def test_kmedians_cost_never_increases_and_ends_at_a_fixed_point():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.laplace(loc, 1.0, size=(60, 5)) for loc in (-4, 0, 4, 8)])
    for seed in range(5):
        init = X[np.random.default_rng(seed).choice(len(X), 6, replace=False)]
        result = kmedians(X, init)
        assert np.all(np.diff(result.history) < 0)
        assert result.cost <= result.history[-1]
        D = l1_distances(X, result.centers)
        # every point is at a nearest centre, every centre is its points' median
        np.testing.assert_allclose(D[np.arange(len(X)), result.labels], D.min(axis=1))
        for c in np.unique(result.labels):
            np.testing.assert_array_equal(result.centers[c],
                                          np.median(X[result.labels == c], axis=0))
        assert result.cost == pytest.approx(D.min(axis=1).sum())


def test_kmedians_keeps_the_centre_of_an_empty_cluster():
    far = [100.0, 100.0]
    result = kmedians(TOY, [[0, 0], [10, 10], far])
    assert 2 not in result.labels
    np.testing.assert_array_equal(result.centers[2], far)


def test_kmedians_rejects_bad_init():
    with pytest.raises(ValueError, match="init must have shape"):
        kmedians(TOY, [[0, 0, 0]])


# ---------------------------------------------------------------------------
# initialisations and selection costs
# ---------------------------------------------------------------------------


def _unit_rows(n, p, seed):
    X = np.random.default_rng(seed).normal(size=(n, p))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_shared_inits_give_the_nearest_seed_partition_in_both_spaces():
    X = _unit_rows(200, 10, 0)
    K = (X @ X.T) ** 3
    inits = usps.shared_inits(X, 4, seed=3)
    assert len(inits) == 4
    assert len({tuple(i.seeds) for i in inits}) == 4
    for init in inits:
        assert len(set(init.seeds.tolist())) == usps.N_CLUSTERS
        np.testing.assert_array_equal(init.centers, X[init.seeds])
        euclid = ((X[:, None, :] - init.centers[None]) ** 2).sum(axis=2)
        feature = (np.diag(K)[:, None] - 2 * K[:, init.seeds]
                   + np.diag(K)[init.seeds][None, :])
        np.testing.assert_array_equal(init.labels, euclid.argmin(axis=1))
        np.testing.assert_array_equal(init.labels, feature.argmin(axis=1))
        np.testing.assert_array_equal(init.labels[init.seeds], np.arange(usps.N_CLUSTERS))


def test_trimmed_sum_drops_the_largest():
    assert usps.trimmed_sum([5.0, 1.0, 9.0, 2.0], 2) == 3.0
    assert usps.trimmed_sum([5.0, 1.0], 0) == 6.0


def test_reassigned_counts_points_after_matching_the_clusters():
    a = [0, 0, 1, 1, 2, 2]
    assert usps.reassigned(a, [5, 5, 3, 3, 4, 4]) == 0  # same partition, other names
    assert usps.reassigned(a, [1, 1, 0, 0, 0, 1]) == 2  # cluster 2 split up
    assert usps.reassigned([], []) == 0


def test_kernel_costs_match_the_estimators_objectives():
    # at lam = inf the estimators' objectives are the plain costs our
    # selection rule trims: the sum of nearest squared distances (kernel
    # K-means, from transform) and the negative log-likelihood (kernel
    # mixture, from score_samples); both checked against K itself
    X = _unit_rows(150, 8, 1)
    K = (X @ X.T) ** 3
    labels = usps.shared_inits(X, 1, n_clusters=3)[0].labels
    km = KernelRobustKMeans(3, lam=np.inf, init=labels, n_init=1, **usps.POLY).fit(X)
    B = km.dual_coef_
    by_hand = np.diag(K)[:, None] - 2.0 * K @ B + np.einsum("nc,nm,mc->c", B, K, B)
    d2 = km.transform(X) ** 2
    np.testing.assert_allclose(d2, np.maximum(by_hand, 0.0), rtol=1e-9, atol=1e-9)
    assert d2.min(axis=1).sum() == pytest.approx(km.objective_, rel=1e-9)
    np.testing.assert_array_equal(d2.argmin(axis=1), km.labels_)
    gm = KernelRobustGaussianMixture(3, lam=np.inf, init=labels, n_init=1,
                                     **usps.POLY).fit(X)
    B, var = gm.dual_coef_, gm.variance_
    D = np.diag(K)[:, None] - 2.0 * K @ B + np.einsum("nc,nm,mc->c", B, K, B)
    nll = (-logsumexp(np.log(gm.weights_) - D / (2.0 * var), axis=1)
           + 0.5 * gm.feature_dim_ * np.log(2.0 * np.pi * var))
    np.testing.assert_allclose(-gm.score_samples(X), nll, rtol=1e-9)
    assert nll.sum() == pytest.approx(gm.objective_, rel=1e-9)


# ---------------------------------------------------------------------------
# the experiment
# ---------------------------------------------------------------------------


def test_missing_data_raises_data_not_found(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataNotFound, match="USPS digits were not found"):
        usps.run(tmp_path, quick=True, data_home=empty)
    sections = run_reproduction(tmp_path / "report", quick=True, data_home=empty,
                                experiments=["usps"], stream=io.StringIO())
    assert sections[0].skipped and "USPS" in sections[0].skipped
    assert "Not run" in (tmp_path / "report" / "README.md").read_text()


@needs_usps
def test_sample_is_balanced_and_unit_norm():
    X, y = usps.load_sample(SHARED, 20)
    assert X.shape == (120, 256)
    np.testing.assert_array_equal(np.bincount(y), [20] * 6)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    X2, _ = usps.load_sample(SHARED, 20)
    np.testing.assert_array_equal(X, X2)  # fixed seed


@needs_usps
def test_quick_run_flags_exactly_s_in_every_run(quick_run):
    _, section = quick_run
    s = usps.QUICK.n_outliers
    values = section.values
    assert values["n_outliers_target"] == s
    for key in ROBUST:
        assert values["n_flagged"][key] == s
        assert values["n_flagged_runs"][key] == [s] * usps.QUICK.n_inits
    for name in ("WRKM", "WRPC"):
        assert values["weighted"][name]["n_outliers"] == s
    assert section.checks and all(section.checks.values()), section.checks


@needs_usps
def test_quick_run_keeps_the_min_cost_run(quick_run):
    _, section = quick_run
    values = section.values
    for key in ROBUST + PLAIN:
        costs = values["costs"][key]
        assert len(costs) == usps.QUICK.n_inits
        assert values["best_run"][key] == int(np.argmin(costs))
        assert values["ari"][key] == values["ari_runs"][key][values["best_run"][key]]


@needs_usps
def test_quick_run_aris_and_robust_gain(quick_run):
    _, section = quick_run
    ari = section.values["ari"]
    assert set(ari) == set(ROBUST + PLAIN)
    for value in ari.values():
        assert -1.0 <= value <= 1.0
    # the digits are found far better than chance, and flagging s points helps
    assert min(ari.values()) > 0.3
    assert ari["rkm"] >= ari["kmeans"]
    assert ari["krkm"] >= ari["kernel_kmeans"]
    common = section.values["common_outliers"]
    assert 0 <= common["rkm_rpc"] <= usps.QUICK.n_outliers
    for key in ROBUST:
        assert sum(section.values["outlier_digits"][key]) == usps.QUICK.n_outliers


@needs_usps
def test_quick_run_writes_its_figures_and_table(quick_run):
    out, section = quick_run
    assert section.key == "usps" and section.title == usps.TITLE
    assert section.figures == ["usps_rpc.png", "usps_krkm_outliers.png"]
    for name in section.figures:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
        assert f"]({name})" in section.body
    # Table II with the paper's numbers beside ours
    for paper_value in ("0.6469", "0.5382", "0.6573", "0.6508", "0.5571", "0.6978", "0.6965"):
        assert paper_value in section.body
    assert "Quick version" in section.body
