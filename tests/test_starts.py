"""The robust default start (``init="robust"``): far, isolated points cannot capture it.

The failures of issue 14, item 1, as tests: every fit below uses the default
start and ``n_init=1``.  With k-means++ each of them ends with a centre on a
far point and two real clusters merged.
"""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    OutlierCountWarning,
    RobustGaussianMixture,
    RobustKMeans,
)
from robustclust._core.spaces import KernelSpace, PointSpace
from robustclust._core.starts import (
    DEFAULT_TRIM_FRACTION,
    concentrate,
    robust_start,
    trim_count,
    trimmed_seeding,
)

_SCRIPT = Path(sys.executable).with_name("robustclust")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "robustclust"]
SEVEN = np.array([1, 2, 3, 10, 11, 12, 50], dtype=np.float64)[:, None]


def blobs():
    return make_blobs(300, centers=3, n_features=3, random_state=1)


def with_far_points(n_far, seed):
    """The blobs plus ``n_far`` points 100-1000 units from their mean, in random directions."""
    X, y = blobs()
    rng = np.random.RandomState(seed)
    direction = rng.standard_normal((n_far, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    far = X.mean(axis=0) + direction * rng.uniform(100, 1000, n_far)[:, None]
    return np.vstack([X, far]), y


FIVE_CENTRES = np.array([[0, 0, 0], [12, 0, 0], [0, 12, 0], [0, 0, 12], [12, 12, 12]], float)


def five_clusters(seed, fraction):
    """5 Gaussian clusters (sd 1, centres 12 apart) in 3-D and a ``fraction`` of the
    points uniform in [-100, 100]^3, more than 40 from every centre."""
    X, y = make_blobs(500, centers=FIVE_CENTRES, cluster_std=1.0, random_state=seed)
    rng = np.random.RandomState(1000 + seed)
    n_out = int(round(fraction * 500 / (1 - fraction)))
    out = []
    while len(out) < n_out:
        p = rng.uniform(-100, 100, 3)
        if np.min(np.linalg.norm(FIVE_CENTRES - p, axis=1)) > 40:
            out.append(p)
    return np.vstack([X, out]), y, n_out


def centre_rmse(centres):
    D = ((centres[:, None, :] - FIVE_CENTRES[None]) ** 2).sum(axis=-1)
    rows, cols = linear_sum_assignment(D)
    return float(np.sqrt(D[rows, cols].mean()))


# -- 1. the 7-point file -------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_seven_points_flag_50_and_keep_the_two_groups(seed):
    model = RobustKMeans(2, n_outliers=1, n_init=1, random_state=seed).fit(SEVEN)
    labels = model.labels_
    assert labels[6] == -1
    assert len(set(labels[:3])) == 1 and len(set(labels[3:6])) == 1
    assert labels[0] != labels[3]


def test_seven_points_on_the_command_line(tmp_path):
    (tmp_path / "o.csv").write_text("v\n1\n2\n3\n10\n11\n12\n50\n")
    run = subprocess.run([*COMMAND, "fit", "o.csv", "-k", "2", "-s", "1", "-o", "out.csv"],
                         cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "1 outlier" in run.stdout
    rows = np.genfromtxt(tmp_path / "out.csv", delimiter=",", names=True, dtype=None,
                         encoding="utf-8")
    assert list(rows["is_outlier"]) == [False] * 6 + [True]
    clusters = rows["cluster"]
    assert len(set(clusters[:3])) == 1 and len(set(clusters[3:6])) == 1
    assert clusters[0] != clusters[3]


# -- 2. three blobs and a row at 1e6 -------------------------------------------------------
HARD_SOFT_WEIGHTED = [{}, {"fuzzifier": 1.5}, {"penalty": "log"}, {"penalty": "elementwise"}]


@pytest.mark.parametrize("params", HARD_SOFT_WEIGHTED)
@pytest.mark.parametrize("count", [1, None])
@pytest.mark.parametrize("seed", range(3))
def test_a_row_at_1e6_is_flagged(params, count, seed):
    X, y = blobs()
    X = np.vstack([X, [1e6, 0.0, 0.0]])
    model = RobustKMeans(3, n_outliers=count, n_init=1, random_state=seed, **params).fit(X)
    assert model.labels_[-1] == -1
    assert adjusted_rand_score(y, model.labels_[:-1]) == 1.0
    if count is not None:
        assert model.n_outliers_ == 1


MIXTURE_SIGMA = (
    "not the start: in the mixture's variance update (eq. (27)) the penalty "
    "lam ||o_n|| / sigma of a far point pulls sigma up by lam sum_n ||o_n|| / (2 N P), "
    "and a sigma ten times the clusters' merges the components; the linear mixture's "
    "trimmed refinement (refine='auto') removes it, the kernel mixture has none yet")


@pytest.mark.parametrize("seed", range(3))
def test_the_mixture_starts_from_the_clusters_despite_a_row_at_1e6(seed):
    X, y = blobs()
    X = np.vstack([X, [1e6, 0.0, 0.0]])
    model = RobustGaussianMixture(3, n_outliers=1, n_init=1, random_state=seed)
    problem = model.build_problem(X)
    means, left_out = problem.inits[0]
    means = means * problem.scale + problem.offset
    truth = np.array([X[:300][y == c].mean(axis=0) for c in range(3)])
    D = np.linalg.norm(means[:, None] - truth[None], axis=-1)
    assert D.min(axis=1).max() < 0.5
    assert left_out[-1] and left_out.sum() == 1


def test_a_row_at_1e6_is_flagged_by_the_mixture():
    X, y = blobs()
    X = np.vstack([X, [1e6, 0.0, 0.0]])
    model = RobustGaussianMixture(3, n_outliers=1, n_init=1, random_state=0).fit(X)
    assert model.labels_[-1] == -1
    assert adjusted_rand_score(y, model.labels_[:-1]) == 1.0


def test_the_k_means_plus_plus_start_is_captured_by_it():
    # what the robust start is for: k-means++ spends a centre on the far row
    X, y = blobs()
    X = np.vstack([X, [1e6, 0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutlierCountWarning)
        model = RobustKMeans(3, n_outliers=1, init="k-means++", n_init=1,
                             random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_[:-1]) < 1.0


# -- 3. planted far outliers -----------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_far", range(1, 6))
@pytest.mark.parametrize("seed", range(5))
def test_planted_far_outliers_are_all_caught(weighted, n_far, seed):
    X, y = with_far_points(n_far, seed)
    for count in (n_far, None):
        model = RobustKMeans(3, n_outliers=count, penalty="log" if weighted else "group", n_init=1,
                             random_state=seed).fit(X)
        assert model.outlier_mask_[300:].all()
        assert adjusted_rand_score(y, model.labels_[:300]) == 1.0
        if count is not None:
            assert model.n_outliers_ == n_far


def test_planted_far_outliers_are_all_caught_by_the_mixture():
    results = []
    for n_far in range(1, 6):
        for seed in range(5):
            X, y = with_far_points(n_far, seed)
            model = RobustGaussianMixture(3, n_outliers=n_far, n_init=1,
                                          random_state=seed).fit(X)
            results.append(bool(model.outlier_mask_[300:].all())
                           and adjusted_rand_score(y, model.labels_[:300]) == 1.0)
    assert all(results)


# -- 4. five clusters and 10-15% far uniform outliers --------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fraction", [0.10, 0.13, 0.15])
@pytest.mark.parametrize("count", [True, False])
def test_single_starts_recover_the_clusters(weighted, fraction, count):
    recovered = 0
    seeds = range(20)
    for seed in seeds:
        X, y, n_out = five_clusters(seed, fraction)
        model = RobustKMeans(5, n_outliers=n_out if count else None, penalty="log" if weighted else "group",
                             n_init=1, random_state=seed).fit(X)
        plain = KMeans(5, n_init=1, random_state=seed).fit(X)
        rmse, plain_rmse = centre_rmse(model.cluster_centers_), \
            centre_rmse(plain.cluster_centers_)
        ari = adjusted_rand_score(y, model.labels_[:500])
        recovered += rmse < 0.5 * plain_rmse and ari >= 0.99
    assert recovered >= 0.95 * len(seeds)


# -- the start itself --------------------------------------------------------------------------
def test_trim_count():
    assert trim_count(None, 100, 3) == int(np.ceil(DEFAULT_TRIM_FRACTION * 100))
    assert trim_count(7, 100, 3) == 7
    assert trim_count(0.1, 100, 3) == 10
    assert trim_count(None, 4, 4) == 0  # every centre keeps a point
    assert trim_count(5, 6, 3) == 3


def test_the_seeding_never_picks_a_point_it_trims():
    X, _ = blobs()
    X = np.vstack([X, [[1e6, 0, 0], [0, -1e6, 0]]])
    space = PointSpace(X)
    for seed in range(50):
        index = trimmed_seeding(space, 3, np.ones(len(X)), 2, np.random.RandomState(seed))
        assert index.max() < 300 and len(set(index)) == 3


def test_concentration_steps_never_increase_the_trimmed_potential():
    X, _, n_out = five_clusters(0, 0.13)
    space = PointSpace(X)
    w = np.ones(len(X))
    rng = np.random.RandomState(0)
    centres = space.points(rng.choice(len(X), 5, replace=False))
    potentials = []
    for _ in range(10):
        centres, potential, _ = concentrate(space, centres, w, n_out, 1)
        potentials.append(potential)
    assert np.all(np.diff(potentials) <= 1e-9 * potentials[0])


@pytest.mark.parametrize("block_entries", [None, 7])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_means_of_dense_and_sparse_points_are_the_definition(block_entries, dtype,
                                                                     monkeypatch):
    """The means of each label's weighted points (a label of no weight keeps its
    centre), in one block of rows or in blocks of a few rows, dense or CSR."""
    from robustclust._core import spaces

    if block_entries is not None:
        monkeypatch.setattr(spaces, "MEANS_BLOCK_ENTRIES", block_entries)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5)).astype(dtype)
    labels = rng.integers(0, 3, size=40)  # label 3 never appears
    w = rng.uniform(0.0, 2.0, size=40)
    w[labels == 2] = 0.0  # label 2 appears with no weight
    centres = rng.normal(size=(4, 5))
    expected = centres.copy()
    for c in (0, 1):
        rows = labels == c
        expected[c] = (w[rows, None] * X[rows].astype(np.float64)).sum(axis=0) / w[rows].sum()
    for data in (X, sp.csr_matrix(X)):
        got = PointSpace(data).means(labels, w, centres)
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)
        np.testing.assert_array_equal(got[2:], centres[2:])


def test_sparse_kernel_and_dense_starts_agree():
    X, _ = with_far_points(3, 0)
    w = np.ones(len(X))
    dense = robust_start(PointSpace(X), 3, w, 3, np.random.RandomState(0))
    sparse = robust_start(PointSpace(sp.csr_matrix(X)), 3, w, 3, np.random.RandomState(0))
    K = X @ X.T
    B = robust_start(KernelSpace(K, np.diag(K)), 3, w, 3, np.random.RandomState(0))
    np.testing.assert_allclose(sparse, dense, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(B @ X, dense, rtol=1e-9, atol=1e-6)


def test_float32_sparse_and_weighted_fits():
    X, y = with_far_points(2, 1)
    for data in (X.astype(np.float32), sp.csr_matrix(X)):
        model = RobustKMeans(3, n_outliers=2, n_init=1, random_state=0).fit(data)
        assert model.outlier_mask_[300:].all()
        assert adjusted_rand_score(y, model.labels_[:300]) == 1.0
    assert RobustKMeans(3, n_init=1).fit(X.astype(np.float32)).cluster_centers_.dtype \
        == np.float32
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(X))
    w[:50] = 0.0
    model = RobustKMeans(3, n_outliers=2, n_init=1, random_state=0).fit(X, sample_weight=w)
    assert model.outlier_mask_[300:].all()


@pytest.mark.parametrize("X, k", [
    (np.zeros((5, 2)), 2),            # one point, repeated
    (np.ones((4, 1)), 4),             # as many clusters as (equal) points
    (np.array([[0.0], [1.0], [2.0]]), 3),
    (np.array([[0.0], [0.0], [1.0], [1.0]]), 2),
    (np.array([[1.0, 2.0]]), 1),
])
def test_tiny_and_duplicated_data(X, k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutlierCountWarning)
        for params in ({}, {"lam": 1.0}, {"n_outliers": 1} if len(X) > 1 else {}):
            model = RobustKMeans(k, n_init=2, random_state=0, **params).fit(X)
            assert np.all(np.isfinite(model.cluster_centers_))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_kernel_estimators_start_robustly(kernel):
    X, y = blobs()
    X = np.vstack([X, [1e3, 0.0, 0.0]])
    for model in (KernelRobustKMeans(3, kernel=kernel, init="robust", n_init=1,
                                     random_state=0),
                  KernelRobustKMeans(3, kernel=kernel, init="robust", n_outliers=1, n_init=1,
                                     random_state=0)):
        model.fit(X)
        assert model.labels_[-1] == -1
        assert adjusted_rand_score(y, model.labels_[:-1]) == 1.0


def test_the_kernel_mixture_starts_robustly():
    # the start flags the far row and leaves it out of the initial variance ...
    X, y = blobs()
    X = np.vstack([X, [1e3, 0.0, 0.0]])
    model = KernelRobustGaussianMixture(3, kernel="linear", init="robust", n_outliers=1,
                                        n_init=1, max_iter=1, random_state=0).fit(X)
    assert model.labels_[-1] == -1
    assert adjusted_rand_score(y, model.labels_[:-1]) == 1.0


@pytest.mark.xfail(strict=True, reason=MIXTURE_SIGMA)
def test_the_kernel_mixture_keeps_the_far_row_flagged_and_the_clusters_apart():
    # ... but EM run to convergence merges the clusters, as the linear mixture does
    X, y = blobs()
    X = np.vstack([X, [1e3, 0.0, 0.0]])
    model = KernelRobustGaussianMixture(3, kernel="linear", init="robust", n_outliers=1,
                                        n_init=1, random_state=0).fit(X)
    assert model.labels_[-1] == -1
    assert adjusted_rand_score(y, model.labels_[:-1]) == 1.0


def test_the_start_is_the_default_of_the_linear_estimators():
    # the kernel estimators keep k-means++ (see KernelRobustKMeans's init)
    assert RobustKMeans().init == RobustGaussianMixture().init == "robust"
    assert KernelRobustKMeans().init == "k-means++"
    assert KernelRobustGaussianMixture().init == "robust-kmeans"


def test_float32_sparse_input_gets_the_robust_start():
    # the start's sparse products need one dtype: float32 CSR used to raise
    # "Dtype of A and B must be the same"
    X, _ = blobs()
    X = np.vstack([X, [1e3, 0.0, 0.0]])
    dense = RobustKMeans(3, n_outliers=1, n_init=1, random_state=0).fit(X.astype(np.float32))
    sparse = RobustKMeans(3, n_outliers=1, n_init=1, random_state=0).fit(
        sp.csr_matrix(X.astype(np.float32)))
    assert sparse.cluster_centers_.dtype == np.float32
    np.testing.assert_array_equal(sparse.outlier_mask_, dense.outlier_mask_)
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    assert sparse.outlier_mask_[-1] and sparse.n_outliers_ == 1


# -- k-means|| (init="k-means||"): block-free draws, exact potentials, weighted candidates -----
from fractions import Fraction  # noqa: E402
import math  # noqa: E402

from robustclust._core import starts as _starts  # noqa: E402
from robustclust._core.refine import trim_mask  # noqa: E402
from synthetic_data import separated_blobs  # noqa: E402


def numpy_blocks(X, w, bounds):
    """``run`` of :func:`kmeans_parallel_candidates` over the row blocks X[a:b]."""
    return lambda spec: [_starts.kmeans_parallel_block(X[a:b], w[a:b], a, spec)
                         for a, b in zip(bounds[:-1], bounds[1:])]


def test_exact_sum_is_correctly_rounded_and_split_free():
    rng = np.random.default_rng(0)
    values = rng.exponential(size=20001) * 10.0 ** rng.integers(-40, 40, size=20001)
    values[::7] *= -1
    want = math.fsum(values)
    assert _starts.add_exact([_starts.exact_sum(values)]) == want
    for cuts in ([1, 2], [10, 5000, 5001, 19999], list(range(0, 20001, 997))):
        bounds = [0, *cuts, len(values)]
        parts = [_starts.exact_sum(values[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        assert _starts.add_exact(parts[::-1]) == want  # any order of the blocks
    exact = sum(Fraction(v) for v in values[:50])  # a plain float sum would round differently
    assert _starts.add_exact([_starts.exact_sum(values[:50])]) == float(exact)


def test_row_uniforms_are_a_function_of_the_row_and_uniform():
    rows = np.arange(200_000)
    u = _starts.row_uniforms(7, 3, rows)
    assert np.array_equal(np.concatenate([_starts.row_uniforms(7, 3, rows[:1234]),
                                          _starts.row_uniforms(7, 3, rows[1234:])]), u)
    assert np.array_equal(_starts.row_uniforms(7, 3, rows[[5, 99_999, 3]]), u[[5, 99_999, 3]])
    assert not np.any(_starts.row_uniforms(8, 3, rows[:100]) == u[:100])
    assert not np.any(_starts.row_uniforms(7, 4, rows[:100]) == u[:100])
    assert np.all((u > 0) & (u < 1))
    counts = np.bincount((u * 50).astype(int), minlength=50)
    chi2 = float(((counts - 4000.0) ** 2 / 4000.0).sum())
    from scipy import stats

    assert stats.chi2.sf(chi2, 49) > 1e-4, chi2
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01  # neighbouring rows independent


def test_trim_mask_by_weight_trims_the_farthest_per_unit_of_weight():
    d2 = np.array([1.0, 50.0, 2.0, 40.0, 30.0])
    w = np.array([100.0, 1.0, 80.0, 2.0, 500.0])
    # farthest first: 50 (weight 1), 40 (2), 30 (500): a budget of 3 takes the first two
    np.testing.assert_array_equal(trim_mask(w * d2, 3.0, w), [False, True, False, True, False])
    np.testing.assert_array_equal(trim_mask(w * d2, 2.9, w), [False, True, False, False, False])
    np.testing.assert_array_equal(trim_mask(w * d2, 0.0, w), [False] * 5)
    # by count the heavy candidate at 30 would be trimmed first (largest w d2)
    np.testing.assert_array_equal(trim_mask(w * d2, 1), [False, False, False, False, True])


def test_kmeans_parallel_candidates_do_not_depend_on_the_blocks():
    X, y = separated_blobs(1)
    w = np.ones(len(X))
    n = len(X)
    runs = [numpy_blocks(X, w, bounds) for bounds in
            ([0, n], [0, 1, 300, 301, 1000, 2001, n], list(range(0, n, 32)) + [n])]
    got = [_starts.kmeans_parallel_candidates(run, 4, key=12345) for run in runs]
    cand, weights, potentials = got[0]
    for other in got[1:]:
        np.testing.assert_array_equal(other[0], cand)
        np.testing.assert_array_equal(other[1], weights)
        assert other[2] == potentials
    assert weights.sum() == n  # every point in one cell
    # the weights are the Voronoi counts of the candidates
    nearest = ((X[:, None, :] - cand[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(weights, np.bincount(nearest, minlength=len(cand)))
    # the candidates are data rows, distinct, ~1 + 5 rounds of 2k in expectation
    assert all((X == c).all(1).any() for c in cand)
    assert len(np.unique(cand, axis=0)) == len(cand)
    assert 8 <= len(cand) <= 1 + 5 * 8 * 2
    assert potentials[-1] < potentials[0] / 10  # the rounds cover the data
    other_key = _starts.kmeans_parallel_candidates(runs[0], 4, key=54321)[0]
    assert other_key.shape != cand.shape or not np.array_equal(other_key, cand)


def test_kmeans_parallel_weights_follow_sample_weight():
    X, _ = separated_blobs(2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(X))
    cand, weights, _ = _starts.kmeans_parallel_candidates(numpy_blocks(X, w, [0, 900, len(X)]),
                                                          4, key=9)
    assert weights.sum() == pytest.approx(w.sum(), rel=1e-12)
    nearest = ((X[:, None, :] - cand[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_allclose(weights, np.bincount(nearest, w, minlength=len(cand)),
                               rtol=1e-12)


@pytest.mark.parametrize("estimator", [RobustKMeans, RobustGaussianMixture])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kmeans_parallel_start_in_memory_recovers_clusters_and_far_points(estimator, seed):
    X, y = separated_blobs(seed)
    m = estimator(4, init="k-means||", n_init=1, n_outliers=40, random_state=seed).fit(X)
    inliers = y >= 0
    assert adjusted_rand_score(y[inliers], m.labels_[inliers]) == 1.0
    np.testing.assert_array_equal(m.outlier_indices_, np.flatnonzero(~inliers))


def test_kmeans_parallel_reduction_trims_by_weight():
    """The far points are many light candidates: a start trimming a count of candidates
    by weighted cost keeps them and puts a centre there; trimming by weight does not."""
    X, y = separated_blobs(4, n_far=120)
    Xc = X - X.mean(0)
    cand, weights, _ = _starts.kmeans_parallel_candidates(
        numpy_blocks(Xc, np.ones(len(X)), [0, len(X)]), 4, key=11)
    truth = np.array([Xc[y == c].mean(0) for c in range(4)])

    def worst(centres):
        D = ((centres[:, None] - truth[None]) ** 2).sum(-1)
        rows, cols = linear_sum_assignment(D)
        return float(np.sqrt(D[rows, cols]).max())

    by_weight = robust_start(PointSpace(cand), 4, weights, 120, np.random.RandomState(0),
                             by_weight=True)
    assert worst(by_weight) < 5.0  # on the clusters (20 apart), up to the candidates
    n_light = int(np.searchsorted(np.cumsum(np.sort(weights)), 120, side="right"))
    by_count = robust_start(PointSpace(cand), 4, weights, n_light, np.random.RandomState(0))
    assert worst(by_count) > 20.0


def test_kmeans_parallel_on_csr_equals_dense():
    X, _ = separated_blobs(5, n_per=200, n_far=10)
    X[np.abs(X) < 3.0] = 0.0  # some zeros for the sparse matrix
    w = np.ones(len(X))
    dense = _starts.kmeans_parallel_candidates(numpy_blocks(X, w, [0, 333, len(X)]), 4, key=2)
    csr = _starts.kmeans_parallel_candidates(numpy_blocks(sp.csr_matrix(X), w, [0, len(X)]),
                                             4, key=2)
    for a, b in zip(dense[:2], csr[:2]):
        np.testing.assert_array_equal(a, b)
    centres = RobustKMeans(4, init="k-means||", n_init=1, random_state=0).fit(
        sp.csr_matrix(X)).cluster_centers_
    assert centres.shape == (4, 3) and np.all(np.isfinite(centres))


# -- a default count above the start's trim ---------------------------------------------------
def _blobs_in_noise(seed=0):
    """make_blobs' three 2-D clusters (300 points) and 450 uniform points (60%) over a box
    three times their extent."""
    X, y = make_blobs(300, centers=3, n_features=2, random_state=1)
    lo, hi = X.min(0), X.max(0)
    mid, half = (lo + hi) / 2, 1.5 * (hi - lo)
    noise = np.random.default_rng(seed).uniform(mid - half, mid + half, size=(450, 2))
    return np.vstack([X, noise]), y


def test_a_default_count_above_the_starts_trim_is_fitted_from_starts_that_trim_it():
    # the starts trim 20% of the points when no count is given; the noise rule finds
    # about 60% here: the starts are drawn once the count is known, trimming it (from
    # 20%-trimmed starts the clusters came out with ARI 0.55 and 2.4x the l0 cost)
    X, y = _blobs_in_noise()
    default = RobustKMeans(3, random_state=0).fit(X)
    s = default.n_outliers_
    assert 0.8 * 450 <= s <= 1.2 * 450
    # the noise points are the outliers; the clusters: K-means of the others
    np.testing.assert_array_equal(default.outlier_mask_, default.outlier_probability_ > 0.5)
    kept = ~default.outlier_mask_
    nearest = ((X[kept, None] - default.cluster_centers_[None]) ** 2).sum(axis=2).argmin(axis=1)
    for c in range(3):  # a fixed point: each centre the mean of its kept points
        np.testing.assert_allclose(default.cluster_centers_[c],
                                   X[kept][nearest == c].mean(axis=0), rtol=1e-9)
    assert adjusted_rand_score(y, default.labels_[:300]) >= 0.95
    assert default.outlier_mask_[300:].mean() >= 0.9
    # a count given instead flags the s farthest points: nearly the same ones
    given = RobustKMeans(3, n_outliers=s, random_state=0).fit(X)
    assert (given.outlier_mask_ != default.outlier_mask_).sum() <= 0.05 * s


@pytest.mark.parametrize("covariance_type", ["tied_spherical", "tied"])
def test_the_mixtures_default_count_above_the_starts_trim_is_fitted_as_n_outliers(
        covariance_type):
    # the mixture's starts (robust K-means fits) used the chi2 default when no count was
    # given; with the noise rule's count of about 60% they are drawn again with it
    X, _ = _blobs_in_noise()
    default = RobustGaussianMixture(3, covariance_type=covariance_type, random_state=0).fit(X)
    s = default.n_outliers_
    assert s > 0.2 * len(X)
    # the default flags its noise model's points; the count given flags the s least
    # likely under the mixture: the same count, nearly the same points
    np.testing.assert_array_equal(default.outlier_mask_, default.outlier_probability_ > 0.5)
    given = RobustGaussianMixture(3, n_outliers=s, covariance_type=covariance_type,
                                  random_state=0).fit(X)
    assert given.n_outliers_ == s
    assert np.mean(default.outlier_mask_ == given.outlier_mask_) >= 0.95
    assert default.outlier_mask_[300:].mean() >= 0.85
    assert given.outlier_mask_[300:].mean() >= 0.85


def test_the_mixture_fits_each_distinct_k_means_start_once(monkeypatch):
    # the ten robust K-means starts of a mixture often settle on the same centres
    # from different seeds; a K-means fit whose start repeats an earlier one's is
    # reused, and the starts (hence the fit) are those of fitting every start
    from robustclust._estimators import base, mixture

    X, _ = _blobs_in_noise()
    fitted = []
    real_fit = base.RobustEstimator._fit_problem

    def counting(self, problem):
        if isinstance(self, RobustKMeans):
            fitted.append(problem.inits[0])
        return real_fit(self, problem)

    def model():
        return RobustGaussianMixture(3, n_outliers=450, covariance_type="tied",
                                     n_init=10, random_state=0)

    monkeypatch.setattr(base.RobustEstimator, "_fit_problem", counting)
    starts = model().build_problem(X).inits
    distinct = [a for k, a in enumerate(fitted)
                if not any(np.array_equal(a, b) for b in fitted[:k])]
    assert len(fitted) == len(distinct) < len(starts) == 10
    # every start fitted, none reused
    monkeypatch.setattr(mixture, "same_init", lambda a, b: False)
    fitted.clear()
    again = model().build_problem(X).inits
    assert len(fitted) == 10
    _assert_same_starts(starts, again)


def _assert_same_starts(a, b):
    """Two lists of mixture starts (means, outlier mask) are equal."""
    assert len(a) == len(b)
    for (means_a, mask_a), (means_b, mask_b) in zip(a, b):
        np.testing.assert_array_equal(means_a, means_b)
        np.testing.assert_array_equal(mask_a, mask_b)


def _count_builds(monkeypatch, setting):
    """The list that every RobustKMeans.build_problem call appends its ``setting`` to."""
    builds = []
    real_build = RobustKMeans.build_problem

    def counting(self, *args, **kwargs):
        builds.append(getattr(self, setting))
        return real_build(self, *args, **kwargs)

    monkeypatch.setattr(RobustKMeans, "build_problem", counting)
    return builds


@pytest.mark.parametrize("sparse", [False, True])
def test_the_mixture_starts_share_one_problem_and_equal_fits_from_scratch(monkeypatch, sparse):
    # KMeansStarts builds (validates X, internal units, solver) once and draws the
    # later starts on that problem; each start must be the K-means fit that
    # RobustKMeans(random_state=seed).fit(X) gives on its own
    from robustclust._estimators import mixture

    X, _ = _blobs_in_noise(3)
    if sparse:
        X = sp.csr_matrix(X)
    builds = _count_builds(monkeypatch, "random_state")

    def model():
        return RobustGaussianMixture(3, n_outliers=450, covariance_type="tied",
                                     n_init=10, random_state=4)

    shared = model().build_problem(X).inits
    assert len(builds) == 1 and len(shared) == 10

    def from_scratch(self, estimator):
        return estimator.fit(self.X)

    monkeypatch.setattr(mixture.KMeansStarts, "fit", from_scratch)
    builds.clear()
    alone = model().build_problem(X).inits
    assert len(builds) == 10
    _assert_same_starts(shared, alone)


def test_a_start_with_other_settings_builds_its_own_problem(monkeypatch):
    from robustclust._estimators.mixture import KMeansStarts

    X, _ = _blobs_in_noise(5)
    builds = _count_builds(monkeypatch, "n_outliers")
    starts = KMeansStarts(X)
    a = starts.fit(RobustKMeans(3, n_outliers=400, n_init=1, random_state=1))
    b = starts.fit(RobustKMeans(3, n_outliers=400, n_init=1, random_state=2))
    c = starts.fit(RobustKMeans(3, n_outliers=200, n_init=1, random_state=2))
    assert builds == [400, 200]
    assert (a.n_outliers_, b.n_outliers_, c.n_outliers_) == (400, 400, 200)
    expected = RobustKMeans(3, n_outliers=200, n_init=1, random_state=2).fit(X)
    np.testing.assert_array_equal(c.cluster_centers_, expected.cluster_centers_)


def test_screened_starts_of_a_large_set_take_the_same_steps_compiled_or_not(monkeypatch):
    """Above the compiled kernels' row count the sample's concentration steps run
    compiled (the fit runs them anyway); they reach the centres the NumPy steps do."""
    from robustclust._core import starts as starts_module
    from robustclust._core.compiled import COMPILED_MIN_ROWS

    X, _ = make_blobs(COMPILED_MIN_ROWS + 500, n_features=4, centers=5, random_state=2)
    X[:40] += 60.0  # far rows for the trimming
    w = np.ones(len(X))
    compiled = starts_module.screened_starts(X, w, 5, 40, np.random.RandomState(0))
    monkeypatch.setattr(starts_module, "worth", lambda n: False)
    plain = starts_module.screened_starts(X, w, 5, 40, np.random.RandomState(0))
    assert len(compiled) == len(plain) == 2
    for a, b in zip(compiled, plain):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
