"""RobustKMeans: limits named by the paper, lambda selection, inputs, outputs."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from robustclust import OutlierCountWarning, RobustKMeans
from robustclust.datasets import make_blobs_with_outliers
from robustclust.metrics import center_rmse, outlier_precision_recall


def _blobs(seed=0, n=300, p=4, C=3):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=5.0, size=(C, p))
    return means[rng.integers(C, size=n)] + rng.normal(size=(n, p))


# -- limits --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_infinite_lambda_is_sklearn_kmeans(seed, dtype):
    X = _blobs(seed).astype(dtype)
    init = X[np.random.default_rng(seed).choice(len(X), 3, replace=False)]
    ours = RobustKMeans(3, lam=np.inf, init=init, n_init=1, tol=0, max_iter=300).fit(X)
    ref = KMeans(3, init=init, n_init=1, algorithm="lloyd", tol=0, max_iter=300).fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_,
                               rtol=1e-5 if dtype == np.float32 else 1e-10, atol=1e-5)
    assert ours.n_outliers_ == 0
    assert ours.objective_ == pytest.approx(ref.inertia_, rel=1e-4)


def test_large_finite_lambda_equals_kmeans_and_lambda_zero_flags_all():
    X = _blobs(1)
    init = X[:3]
    big = RobustKMeans(3, lam=1e6, init=init, n_init=1, tol=0).fit(X)
    ref = KMeans(3, init=init, n_init=1, tol=0).fit(X)
    np.testing.assert_array_equal(big.labels_, ref.labels_)
    # every point with a nonzero residual (here: no point sits on a centre)
    zero = RobustKMeans(3, lam=0.0, init=init + 0.01, n_init=1).fit(X)
    assert zero.n_outliers_ == len(X)
    assert np.all(zero.labels_ == -1)
    assert zero.objective_ == pytest.approx(0.0, abs=1e-9)


def test_q_to_one_approaches_the_hard_solution():
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    init = X[[0, 60, 110, 160]]
    hard = RobustKMeans(4, lam=5.0, init=init, n_init=1, tol=1e-12).fit(X)
    soft = RobustKMeans(4, lam=5.0, fuzzifier=1.001, init=init, n_init=1, tol=1e-12,
                        max_iter=3000).fit(X)
    # u_nc = (d_min / d_nc)^(1/(q-1)) / sum: the memberships become 0/1 ...
    assert np.abs(soft.memberships_ - hard.memberships_).max() < 1e-3
    # ... and the solution that of hard RKM
    np.testing.assert_allclose(soft.cluster_centers_, hard.cluster_centers_, atol=1e-3)
    np.testing.assert_array_equal(soft.labels_, hard.labels_)


def test_soft_lambda_inf_is_fuzzy_cmeans_fixed_point():
    X = _blobs(2)
    m = RobustKMeans(3, lam=np.inf, fuzzifier=2.0, n_init=1, random_state=0, tol=1e-12,
                     max_iter=1000).fit(X)
    U = m.memberships_
    D = ((X[:, None] - m.cluster_centers_[None]) ** 2).sum(-1)
    inv = 1 / D
    np.testing.assert_allclose(U, inv / inv.sum(1, keepdims=True), atol=1e-8)


# -- reproducibility and dtypes ---------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(n_outliers=10), dict(fuzzifier=1.5, lam=4.0)])
def test_random_state_reproduces_the_fit(kw):
    X = make_blobs_with_outliers(n_outliers=40, random_state=1).X
    a = RobustKMeans(4, random_state=7, **kw).fit(X)
    b = RobustKMeans(4, random_state=7, **kw).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.lambda_ == b.lambda_


def test_memberships_follow_the_last_fit():
    # a hard fit's 0/1 memberships (each row's nearest centre, outliers too),
    # after a soft fit of the same estimator and back
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    model = RobustKMeans(4, lam=5.0, random_state=0)
    with pytest.raises(AttributeError, match="memberships_"):
        model.memberships_
    soft = model.set_params(fuzzifier=1.5).fit(X).memberships_
    assert 0 < soft.min() and soft.max() < 1
    hard = model.set_params(fuzzifier=1.0).fit(X).memberships_
    nearest = ((X[:, None, :] - model.cluster_centers_[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(hard, np.eye(4)[nearest])
    assert model.n_outliers_ > 0 and hard.dtype == np.float64
    np.testing.assert_allclose(model.set_params(fuzzifier=1.5).fit(X).memberships_, soft)
    # an estimator pickled when memberships_ was a plain attribute
    old = RobustKMeans(4, lam=5.0, random_state=0)
    old.__dict__["memberships_"] = soft
    assert old.memberships_ is soft
    np.testing.assert_array_equal(old.fit(X).memberships_, hard)  # refitted: its own


@pytest.mark.parametrize("kw", [dict(lam=5.0), dict(fuzzifier=1.5, lam=5.0), dict(n_outliers=40)])
def test_float32_in_float32_out(kw):
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    m64 = RobustKMeans(4, random_state=0, **kw).fit(X)
    m32 = RobustKMeans(4, random_state=0, **kw).fit(X.astype(np.float32))
    assert m32.cluster_centers_.dtype == np.float32
    assert m32.transform(X.astype(np.float32)).dtype == np.float32
    assert m32.memberships_.dtype == np.float32
    # k-means++ draws in float32 can differ: compare up to a permutation
    assert center_rmse(m64.cluster_centers_, m32.cluster_centers_) < 1e-3
    assert adjusted_rand_score(m64.labels_, m32.labels_) > 0.98


# -- outliers by count ---------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(fuzzifier=1.5), dict(penalty="log"), dict(fuzzifier=1.5, penalty="log")])
def test_n_outliers_flags_exactly_s_on_the_paper_set(kw):
    data = make_blobs_with_outliers(n_outliers=80, random_state=0)
    m = RobustKMeans(4, n_outliers=80, random_state=0, **kw).fit(data.X)
    assert m.n_outliers_ == 80
    precision, recall = outlier_precision_recall(data.outlier_mask, m.outlier_mask_)
    assert recall >= 0.95
    # every true cluster has its own centre (none spent on outliers, no merge)
    dist = np.linalg.norm(m.cluster_centers_[:, None] - data.centers[None], axis=-1)
    assert sorted(dist.argmin(axis=1)) == [0, 1, 2, 3]
    assert dist.min(axis=1).max() < 1.2
    # the blobs overlap (means 3.5 apart, sd 0.9): the true centres themselves
    # give an inlier ARI of 0.91
    inliers = ~data.outlier_mask & ~m.outlier_mask_
    assert adjusted_rand_score(data.labels[inliers], m.labels_[inliers]) > 0.75
    # K-means, by contrast, is dragged off
    km = KMeans(4, n_init=10, random_state=0).fit(data.X)
    assert center_rmse(data.centers, m.cluster_centers_) < center_rmse(data.centers, km.cluster_centers_)


def test_weighted_reduces_the_shrinkage_bias():
    data = make_blobs_with_outliers(n_outliers=80, random_state=0)
    # the paper's (unrefined) estimator shrinks the flagged residuals; the
    # refined fit (o_n = x_n - m_c) has no shrinkage bias and does better still
    plain = RobustKMeans(4, n_outliers=80, random_state=0, refine=False).fit(data.X)
    weighted = RobustKMeans(4, n_outliers=80, penalty="log", random_state=0).fit(data.X)
    refined = RobustKMeans(4, n_outliers=80, random_state=0).fit(data.X)
    assert center_rmse(data.centers, weighted.cluster_centers_) < \
        0.7 * center_rmse(data.centers, plain.cluster_centers_)
    assert center_rmse(data.centers, refined.cluster_centers_) <= \
        center_rmse(data.centers, weighted.cluster_centers_)


def test_restarts_escape_the_kmeans_local_minimum():
    # 40 outliers on a far ring: K-means spends centres on the ring and merges
    # true clusters; the warm path from that solution keeps the split, the
    # cold restarts at the selected lambda (judged by the l0 cost of eq. (3))
    # do not.
    from robustclust._core.selection import (
        kmeans_solution,
        lambda_grid,
        lambda_max,
        select_by_count,
    )
    data = make_blobs_with_outliers(n_outliers=0, random_state=0)
    rng = np.random.default_rng(0)
    angle, radius = rng.uniform(0, 2 * np.pi, 40), rng.uniform(8, 12, 40)
    X = np.vstack([data.X, np.c_[radius * np.cos(angle), radius * np.sin(angle)]])
    problem = RobustKMeans(4, n_outliers=40).build_problem(X)
    solver, offset = problem.solver, problem.offset  # the solver sees X minus the offset
    inits = [c - offset for c in [data.centers.copy()] + [
        X[np.random.default_rng(s).choice(len(X), 4, replace=False)] for s in range(5)]]

    def right(M):
        """Every true cluster has its own centre, within 1.25 of its mean.

        (A centre between two merged clusters is 1.75 from both; a cluster's
        own centre carries the bias of the flagged points, which pull it by
        the threshold lam / 2 towards themselves: up to 1.14 here.)
        """
        dist = np.linalg.norm(M[:, None] + offset - data.centers[None], axis=-1)
        return sorted(dist.argmin(axis=1)) == [0, 1, 2, 3] and dist.min(axis=1).max() < 1.25

    km = kmeans_solution(solver, inits)
    assert not right(km.centers)                      # K-means: centres on the ring
    lmax = lambda_max(solver, km)
    path_only = km
    for lam in lambda_grid(lmax, 30, 1e-3)[1:]:       # down the path until 40 are flagged
        path_only = solver.run(path_only, lam)
        if path_only.n_outliers >= 40:
            break
    assert not right(path_only.centers)               # the path alone inherits it
    _, state, _ = select_by_count(solver, inits, 40, weighted=False)
    assert right(state.centers)                       # the restarts escape it
    assert set(state.outlier_index) == set(range(200, 240))


def test_n_outliers_fraction_and_zero():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    n = len(data.X)
    m = RobustKMeans(4, n_outliers=40 / n, random_state=0).fit(data.X)
    assert m.n_outliers_ == 40
    m0 = RobustKMeans(4, n_outliers=0, random_state=0).fit(data.X)
    assert m0.n_outliers_ == 0
    # lambda_ is lambda_max: just below it something is flagged
    below = RobustKMeans(4, lam=0.999 * m0.lambda_, init=m0.cluster_centers_, n_init=1).fit(data.X)
    assert below.n_outliers_ >= 1


def test_unreachable_count_warns_and_keeps_closest():
    # Two tight clusters and two far pairs of identical points: identical
    # points are flagged together, so the count jumps over 3.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(scale=0.01, size=(20, 2)),
                   [100.0, 0.0] + rng.normal(scale=0.01, size=(20, 2)),
                   [[50.0, 70.0]] * 2, [[50.0, -90.0]] * 2])
    with pytest.warns(OutlierCountWarning, match="n_outliers=3"):
        m = RobustKMeans(2, n_outliers=3, random_state=0, refine=False).fit(X)
    assert m.n_outliers_ in (2, 4)
    assert set(np.flatnonzero(m.outlier_mask_)) <= {40, 41, 42, 43}
    # the refined fit solves eq. (3) with s = 3, which trims one of two equal
    # rows: ties are never split (2 and 4 are as near 3: the smaller), and it warns
    with pytest.warns(OutlierCountWarning, match="n_outliers=3 was asked for, but 2 points"):
        r = RobustKMeans(2, n_outliers=3, random_state=0).fit(X)
    assert r.n_outliers_ == 2 and set(np.flatnonzero(r.outlier_mask_)) == {42, 43}
    np.testing.assert_array_equal(r.predict(X), r.labels_)


# -- default lambda --------------------------------------------------------------------
def test_chi2_default_lambda_flags_about_one_in_a_thousand_gaussian_inliers():
    rng = np.random.default_rng(0)
    means = np.array([[0, 0, 0], [20, 0, 0], [0, 20, 0]], dtype=float)
    X = np.vstack([m + 2.0 * rng.normal(size=(4000, 3)) for m in means])
    m = RobustKMeans(3, random_state=0, n_init=3, lam="chi2").fit(X)
    rate = m.n_outliers_ / len(X)
    assert 0.0 < rate < 0.004
    # threshold lambda_/2 = sigma * sqrt(chi2_3 quantile 0.999) with sigma = 2
    assert m.lambda_ / 2 == pytest.approx(2.0 * np.sqrt(16.266), rel=0.05)


def test_default_lambda_catches_gross_outliers():
    rng = np.random.default_rng(1)
    means = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    inliers = np.vstack([m + rng.normal(size=(100, 2)) for m in means])
    angle = rng.uniform(0, 2 * np.pi, 20)
    gross = 5.0 + 30.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    X = np.vstack([inliers, gross])
    m = RobustKMeans(3, random_state=0).fit(X)
    assert np.all(m.outlier_mask_[300:])
    assert m.outlier_mask_[:300].sum() <= 3


# -- sample weights and sparse input -------------------------------------------------------
def test_integer_sample_weight_equals_repetition():
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X[::3]
    w = np.random.default_rng(0).integers(1, 4, size=len(X))
    init = X[:4]
    a = RobustKMeans(4, lam=4.0, init=init, n_init=1, tol=1e-12).fit(X, sample_weight=w)
    b = RobustKMeans(4, lam=4.0, init=init, n_init=1, tol=1e-12).fit(np.repeat(X, w, axis=0))
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, atol=1e-10)
    np.testing.assert_array_equal(np.repeat(a.labels_, w), b.labels_)
    assert a.objective_ == pytest.approx(b.objective_)


def test_l0_cost_for_restarts_uses_the_weights():
    # eq. (3) with weights: the best single outlier is the heavy far point
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(50, 2)), [[6.0, 0.0], [0.0, 9.0]]])
    w = np.r_[np.ones(50), 100.0, 1.0]
    problem = RobustKMeans(1, lam=1.0).build_problem(X, w)
    solver = problem.solver  # the solver sees X minus problem.offset
    state = solver.init_state(-problem.offset[None])
    d2 = (X**2).sum(1)
    expected = np.dot(w, d2) - w[50] * d2[50]
    assert solver.trimmed_cost(state, 1) == pytest.approx(expected)


def test_default_weighted_lambda_does_not_depend_on_units():
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    masks = [RobustKMeans(4, penalty="log", random_state=0).fit(X * scale).outlier_mask_
             for scale in (1.0, 100.0, 1e4)]
    plain = RobustKMeans(4, random_state=0).fit(X).outlier_mask_
    assert plain.sum() > 0
    for mask in masks:
        assert mask.sum() == plain.sum()
        np.testing.assert_array_equal(mask, masks[0])


@pytest.mark.parametrize("kw", [dict(lam=4.0), dict(lam=4.0, fuzzifier=1.5), dict(n_outliers=40)])
def test_translation_does_not_change_the_fit(kw):
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    a = RobustKMeans(4, random_state=0, **kw).fit(X)
    b = RobustKMeans(4, random_state=0, **kw).fit(X + 1e6)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(b.cluster_centers_ - 1e6, a.cluster_centers_, atol=1e-6)
    np.testing.assert_array_equal(b.predict(X + 1e6), a.predict(X))


def test_zero_weight_points_do_not_move_centres():
    X = _blobs(4)
    w = np.ones(len(X))
    Xo = np.vstack([X, [[1e3] * 4]])
    init = X[:3]
    a = RobustKMeans(3, lam=np.inf, init=init, n_init=1).fit(X)
    b = RobustKMeans(3, lam=np.inf, init=init, n_init=1).fit(Xo, sample_weight=np.r_[w, 0])
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", [dict(lam=3.0), dict(lam=3.0, fuzzifier=1.5), dict(lam=2.0, penalty="elementwise"),
                                dict(n_outliers=15), dict(lam=3.0, penalty="log")])
def test_sparse_input_gives_the_dense_result(kw, dtype):
    rng = np.random.default_rng(0)
    X = _blobs(5, n=200, p=6)
    X[rng.random(X.shape) < 0.5] = 0.0
    X = X.astype(dtype)
    w = rng.uniform(0.5, 2.0, size=len(X))
    init = X[:3]
    # dense input is centred, sparse is not: converge fully, compare closely
    kw = dict(init=init, n_init=1, tol=1e-13, max_iter=3000) | kw
    a = RobustKMeans(3, **kw).fit(X, sample_weight=w)
    b = RobustKMeans(3, **kw).fit(sp.csr_matrix(X), sample_weight=w)
    assert b.cluster_centers_.dtype == dtype
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_,
                               atol=1e-8 if dtype == np.float64 else 1e-4)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.predict(X), b.predict(sp.csr_matrix(X)))


def test_empty_clusters_are_reseeded_never_nan():
    X = _blobs(6, n=60, p=2)
    init = np.vstack([X[:2], [[1e4, 1e4]]])  # third centre far from all data
    m = RobustKMeans(3, lam=np.inf, init=init, n_init=1).fit(X)
    assert np.all(np.isfinite(m.cluster_centers_))
    assert len(np.unique(m.labels_)) == 3
    m = RobustKMeans(3, lam=5.0, init=init, n_init=1).fit(X)
    assert np.all(np.isfinite(m.cluster_centers_))


# -- predict, scores, transform --------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(n_outliers=40), dict(n_outliers=40, fuzzifier=1.5), dict(lam=5.0, penalty="log")])
def test_predict_on_training_points_mostly_agrees(kw):
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    m = RobustKMeans(4, random_state=0, **kw).fit(data.X)
    disagree = np.mean(m.predict(data.X) != m.labels_)
    assert disagree <= 0.02


def test_predict_rule_on_new_points():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    m = RobustKMeans(4, n_outliers=40, random_state=0).fit(data.X)
    M = m.cluster_centers_
    c = M[0]
    away = c - np.delete(M, 0, axis=0).mean(axis=0)
    away /= np.linalg.norm(away)             # points along it keep centre 0 nearest
    thr = m.lambda_ / 2
    near, far = c + 0.5 * thr * away, c + 2.0 * thr * away
    assert np.argmin(np.linalg.norm(far - M, axis=1)) == 0
    np.testing.assert_array_equal(m.predict(np.vstack([near, far])), [0, -1])
    # a refined model's o is the whole residual (eq. (3)), as in its fit
    np.testing.assert_allclose(m.outlier_norms(np.vstack([near, far])), [0.0, 2.0 * thr])
    # the paper's estimator: o = r (1 - thr / ||r||), so ||o|| = ||r|| - thr = thr
    u = RobustKMeans(4, n_outliers=40, random_state=0, refine=False).fit(data.X)
    c, thr = u.cluster_centers_[0], u.lambda_ / 2
    away = c - np.delete(u.cluster_centers_, 0, axis=0).mean(axis=0)
    far = c + 2.0 * thr * away / np.linalg.norm(away)
    np.testing.assert_allclose(u.outlier_norms(far[None]), [thr])


def test_outlier_norms_of_training_points_match_attribute():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    # unrefined: a refined fit's outlier_norms_ are the whole residuals
    m = RobustKMeans(4, n_outliers=40, random_state=0, refine=False).fit(data.X)
    got = m.outlier_norms(data.X)
    # where the training cluster is the nearest centre, the rules coincide
    nearest = m.transform(data.X).argmin(axis=1)
    same = nearest == m.memberships_.argmax(axis=1)
    assert same.mean() > 0.98
    np.testing.assert_allclose(got[same], m.outlier_norms_[same], atol=1e-8)
    # elsewhere predict finds a better per-point solution: a smaller o
    assert np.all(got[~same] <= m.outlier_norms_[~same] + 1e-12)


def test_transform_and_score():
    X = _blobs(7)
    m = RobustKMeans(3, lam=np.inf, random_state=0).fit(X)
    D = m.transform(X)
    np.testing.assert_allclose(D, np.sqrt(((X[:, None] - m.cluster_centers_[None]) ** 2).sum(-1)))
    assert m.score(X) == pytest.approx(-m.objective_, rel=1e-6)


def test_outlier_vectors_are_sparse_and_clean_the_data():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    m = RobustKMeans(4, n_outliers=40, random_state=0).fit(data.X)
    O = m.outlier_vectors_
    assert sp.issparse(O) and O.shape == data.X.shape
    assert O.nnz == 40 * 2
    np.testing.assert_array_equal(np.flatnonzero(np.diff(O.indptr)), np.flatnonzero(m.outlier_mask_))


def test_fit_predict_equals_labels():
    X = make_blobs_with_outliers(n_outliers=40, random_state=2).X
    a = RobustKMeans(4, n_outliers=20, random_state=1).fit_predict(X)
    b = RobustKMeans(4, n_outliers=20, random_state=1).fit(X).labels_
    np.testing.assert_array_equal(a, b)


# -- bad input ------------------------------------------------------------------------------
X_OK = _blobs(0, n=30)


@pytest.mark.parametrize("X, params, exc, message", [
    (np.array([[0.0, np.nan], [1, 1], [2, 2]]), dict(n_clusters=2), ValueError, "NaN"),
    (np.array([[0.0, np.inf], [1, 1], [2, 2]]), dict(n_clusters=2), ValueError, "infinity"),
    (np.arange(5.0), dict(n_clusters=2), ValueError, "Expected 2D array"),
    (np.empty((0, 3)), dict(n_clusters=2), ValueError, "0 sample"),
    (X_OK, dict(n_clusters=31), ValueError, "n_samples=30 should be >= n_clusters=31"),
    (X_OK, dict(lam=-1.0), ValueError, "'lam' parameter"),
    (X_OK, dict(fuzzifier=0.5), ValueError, "'fuzzifier' parameter"),
    (X_OK, dict(n_outliers=30), ValueError, "n_outliers=30 must be smaller than the number of samples"),
    (X_OK, dict(n_outliers=-1), ValueError, "'n_outliers' parameter"),
    (X_OK, dict(n_outliers=0.7), ValueError, "'n_outliers' parameter"),
    (X_OK, dict(lam=1.0, n_outliers=3), ValueError, "Give at most one of lam and n_outliers"),
    (X_OK, dict(n_clusters=3, init=np.zeros((2, 4))), ValueError, r"initial centres \(2, 4\)"),
    (X_OK, dict(n_clusters=3, init=np.zeros((3, 5))), ValueError, r"initial centres \(3, 5\)"),
    (X_OK, dict(penalty="l0"), ValueError, "'penalty' parameter"),
    (X_OK, dict(n_clusters=2, init=np.array([["a"] * 4] * 2)), ValueError, "could not convert"),
    (np.array([["a", "b"], ["c", "d"]], dtype=object), dict(n_clusters=1), ValueError, "could not convert"),
])
def test_bad_input_is_named(X, params, exc, message):
    with pytest.raises(exc, match=message):
        RobustKMeans(**({"n_clusters": 3} | params)).fit(X)


def test_bad_sample_weights_are_named():
    with pytest.raises(ValueError, match="sample_weight"):
        RobustKMeans(3, lam=5.0).fit(X_OK, sample_weight=-np.ones(len(X_OK)))
    with pytest.raises(ValueError, match="at least one non-zero"):
        RobustKMeans(3, lam=5.0).fit(X_OK, sample_weight=np.zeros(len(X_OK)))
    with pytest.raises(ValueError, match="sample_weight.shape"):
        RobustKMeans(3, lam=5.0).fit(X_OK, sample_weight=np.ones(3))


def test_fraction_rounding_to_zero_warns():
    with pytest.warns(OutlierCountWarning, match="rounds to 0 outliers"):
        m = RobustKMeans(3, n_outliers=0.001, random_state=0).fit(X_OK)
    assert m.n_outliers_ == 0


def test_predict_checks_feature_count_and_fit():
    m = RobustKMeans(3, lam=5.0, random_state=0)
    with pytest.raises(Exception, match="not fitted"):
        m.predict(X_OK)
    m.fit(X_OK)
    with pytest.raises(ValueError, match=re.escape("X has 2 features, but RobustKMeans is expecting 4")):
        m.predict(X_OK[:, :2])


def test_fit_does_not_modify_parameters_or_input():
    X = X_OK.copy()
    m = RobustKMeans(3, n_outliers=0.1, random_state=0)
    m.fit(X)
    assert m.get_params()["n_outliers"] == 0.1
    np.testing.assert_array_equal(X, X_OK)


def test_explicit_init_with_n_init_warns():
    with pytest.warns(RuntimeWarning, match="one initialisation"):
        RobustKMeans(3, lam=5.0, init=X_OK[:3], n_init=5).fit(X_OK)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RobustKMeans(3, lam=5.0, init=X_OK[:3], n_init=1).fit(X_OK)
