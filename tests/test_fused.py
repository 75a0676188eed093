"""The compiled hard-RKM pass equals its NumPy definition, the fused solver
path gives the same fits as the array path, and the pass's distance bounds
change nothing but the work."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.cluster import KMeans

import robustclust._core._fused as fused_module
import robustclust._core._hard_kernels as kernels
import robustclust._core._pass_states as pass_states
from robustclust import RobustKMeans
from robustclust._core._fused import PassRule, PreviousOutliers, hard_pass
from reference_steps import mm_limit


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hard_pass_matches_numpy(dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1003, 7)).astype(dtype)
    M = rng.normal(size=(5, 7)).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=1003)
    prev = rng.integers(5, size=1003)
    sq = (X.astype(np.float64) ** 2).sum(1)
    out = hard_pass(X, M, sq, w, prev, n_threads=3, chunk_rows=64)
    labels, sums, weights = out["labels"], out["sums"], out["weights"]
    D = ((X[:, None, :].astype(np.float64) - M[None].astype(np.float64)) ** 2).sum(-1)
    tol = 1e-9 if dtype == np.float64 else 1e-3
    np.testing.assert_array_equal(out["ref"], prev)
    assert not out["shrink"].any()  # lam = inf: no outliers
    np.testing.assert_array_equal(labels, D.argmin(1))
    assert out["objective"] == pytest.approx(np.dot(w, D.min(1)), rel=tol)
    onehot = np.eye(5)[labels] * w[:, None]
    np.testing.assert_allclose(sums, onehot.T @ X.astype(np.float64), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(weights, onehot.sum(0))


def _large(seed=0, n=fused_module.PARALLEL_MIN_ROWS + 5000, p=5, C=4):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=6.0, size=(C, p))
    X = means[rng.integers(C, size=n)] + rng.normal(size=(n, p))
    X[:200] = rng.uniform(-25, 25, size=(200, p))
    return X


@pytest.mark.parametrize("penalty", ["group", "elementwise"])
def test_fused_path_equals_numpy_path(monkeypatch, penalty):
    X = _large()
    w = np.random.default_rng(1).uniform(0.5, 1.5, size=len(X))
    kw = dict(lam=8.0, init=X[200:204], n_init=1, tol=1e-10, penalty=penalty)
    fused = RobustKMeans(4, **kw).fit(X, sample_weight=w)
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 10**9)
    plain = RobustKMeans(4, **kw).fit(X, sample_weight=w)
    np.testing.assert_array_equal(fused.labels_, plain.labels_)
    np.testing.assert_allclose(fused.cluster_centers_, plain.cluster_centers_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fused.objective_history_, plain.objective_history_, rtol=1e-9)
    assert fused.n_outliers_ > 0


@pytest.mark.parametrize("lam", [0.0, 1e-3])
def test_fused_path_equals_numpy_path_when_every_point_is_flagged(monkeypatch, lam):
    # lam = 0: s = 1 and IRLS weight 0 for every row of the common path (the
    # centre step then has no weight), as in the NumPy path
    X = np.random.default_rng(0).normal(size=(3000, 12))
    fused = RobustKMeans(4, lam=lam, random_state=0, n_init=2).fit(X)
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 10**9)
    plain = RobustKMeans(4, lam=lam, random_state=0, n_init=2).fit(X)
    assert fused.n_outliers_ == plain.n_outliers_ == len(X)
    np.testing.assert_array_equal(fused.labels_, plain.labels_)
    np.testing.assert_allclose(fused.cluster_centers_, plain.cluster_centers_, rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(fused.objective_history_, plain.objective_history_, rtol=1e-9)


def test_fused_path_is_kmeans_at_infinite_lambda():
    X = _large(2)
    init = X[300:304]
    ours = RobustKMeans(4, lam=np.inf, init=init, n_init=1, tol=0).fit(X)
    ref = KMeans(4, init=init, n_init=1, tol=0, algorithm="lloyd").fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(), dict(penalty="log"), dict(penalty="elementwise")])
def test_fused_path_equals_numpy_path_along_a_warm_started_path(monkeypatch, kw):
    # warm starts carry the fused pass's cluster sums from one lambda to the
    # next; they must not leak a stale M-step into the new lambda
    from robustclust.datasets import make_blobs_with_outliers
    X = make_blobs_with_outliers(n_outliers=80, random_state=0).X
    est = RobustKMeans(4, random_state=0, n_init=2, **kw)
    _same_path_both_ways(monkeypatch, est, X, "FUSED_MIN_ROWS", 0, 10**9, 25)


def _same_path_both_ways(monkeypatch, est, X, switch, on, off, n_lambdas):
    """The regularization path with the module constant ``switch`` at ``on`` and
    at ``off``: the same counts and iterations, centres to 1e-9."""
    from robustclust import regularization_path
    monkeypatch.setattr(fused_module, switch, on)
    first = regularization_path(est, X, n_lambdas=n_lambdas)
    monkeypatch.setattr(fused_module, switch, off)
    second = regularization_path(est, X, n_lambdas=n_lambdas)
    np.testing.assert_array_equal(first.n_outliers, second.n_outliers)
    np.testing.assert_array_equal(first.n_iter, second.n_iter)
    np.testing.assert_allclose(first.centers, second.centers, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(lam=3.0), dict(lam=3.0, penalty="elementwise"),
                                dict(lam=0.05, penalty="log"), dict(n_outliers=40)])
def test_fused_cold_start_equals_numpy_cold_start(monkeypatch, kw):
    from robustclust.datasets import make_blobs_with_outliers
    X = make_blobs_with_outliers(n_outliers=40, random_state=1).X
    w = np.random.default_rng(0).uniform(0.5, 2, size=len(X))
    est = RobustKMeans(4, random_state=0, n_init=3, **kw)
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 0)
    fused = est.fit(X, sample_weight=w)
    fused_hist, fused_labels = fused.objective_history_, fused.labels_
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 10**9)
    plain = RobustKMeans(4, random_state=0, n_init=3, **kw).fit(X, sample_weight=w)
    np.testing.assert_array_equal(fused_labels, plain.labels_)
    np.testing.assert_allclose(fused_hist, plain.objective_history_, rtol=1e-9)


def _first_nearest(d):
    """The one-by-one search's answer for a row of differences d_c = <x, m_c> -
    ||m_c||^2 / 2: it starts from centre 0 and moves to a centre only when its
    difference is larger, so a NaN at centre 0 is the answer and NaNs after it
    are skipped; otherwise the first of the largest."""
    if np.isnan(d[0]):
        return 0
    best = np.nanmax(d)
    return int(np.flatnonzero(d == best)[0])


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 13),
       C=st.one_of(st.integers(1, 7), st.integers(8, 70)),
       levels=st.sampled_from([3, 1000]), dtype=st.sampled_from([np.float32, np.float64]),
       nans=st.sampled_from([0.0, 0.0, 0.15]))
def test_nearest_rows_finds_the_first_of_the_nearest_centres(seed, m, C, levels, dtype, nans):
    # four rows at a time, then the rest one by one: each row's answer is
    # argmax_c <x, m_c> - ||m_c||^2 / 2 in X's precision, the first of equals
    # (few levels: many ties, signed zeros among them), and ||m||^2 - 2 <x, m>
    # for it in float64.  NaN differences (inf - inf in a product) get the
    # one-by-one search's answer
    rng = np.random.default_rng(seed)
    G = (rng.integers(-levels, levels, size=(m, C)) / 4.0).astype(dtype)
    half = (rng.integers(-levels, levels, size=C) / 8.0).astype(dtype)
    G[rng.random(G.shape) < 0.1] = -0.0
    half[rng.random(C) < 0.1] = -0.0
    G[rng.random(G.shape) < nans] = np.nan
    if nans and m > 1:
        G[1] = np.nan  # a row without any number
    mm = rng.random(C)
    low, nearest = np.empty(m), np.empty(m, dtype=np.intp)
    kernels._nearest_rows(G, half, mm, low, nearest)
    expected = np.array([_first_nearest(d) for d in G - half])
    if not nans:  # numpy's argmax: the first of equals
        np.testing.assert_array_equal(expected, np.argmax(G - half, axis=1))
    np.testing.assert_array_equal(nearest, expected)
    rows = np.arange(m)
    np.testing.assert_array_equal(low, mm[expected] - 2.0 * G[rows, expected].astype(np.float64))


def test_nearest_rows_skips_a_nan_difference_anywhere_after_centre_0():
    # one NaN at centre 1, the largest difference at 5 or 17: the answer is 5
    # or 17, for a row of the four-row search and for one searched alone
    for dtype in (np.float32, np.float64):
        for C in (7, 16, 32, 40):
            G = np.zeros((5, C), dtype=dtype)  # rows 0-3 searched together, row 4 alone
            half = np.zeros(C, dtype=dtype)
            G[:, 1] = np.nan
            top = 17 if C > 17 else 5
            G[:, top] = 10.0
            low, nearest = np.empty(5), np.empty(5, dtype=np.intp)
            kernels._nearest_rows(G, half, np.ones(C), low, nearest)
            assert (nearest == top).all(), (dtype, C)
            G[:, 0] = np.nan  # a NaN at centre 0: the answer is 0
            kernels._nearest_rows(G, half, np.ones(C), low, nearest)
            assert (nearest == 0).all(), (dtype, C)


def _reference_pass(X, M, w, prev, lam, tau, weighted, eps, irls, old, prev_size=None):
    """The O-step, U-step, next centre sums and outlier shift, written out per point."""
    X, M = X.astype(np.float64), M.astype(np.float64)
    n, C = len(X), len(M)
    labels, shrink, size = np.empty(n, int), np.zeros(n), np.zeros(n)
    sums, weights, objective, shift2 = np.zeros_like(M), np.zeros(C), 0.0, 0.0
    if weighted:  # the limit of the MM steps from the previous ||o_n||
        limit = mm_limit(np.linalg.norm(X - M[prev], axis=1), prev_size, lam, eps)
    for i in range(n):
        r = X[i] - M[prev[i]]
        if weighted:
            o = limit[i] / np.linalg.norm(r) * r
        else:
            o = max(0.0, 1 - tau[i] / np.linalg.norm(r)) * r  # eq. (11)
        y = X[i] - o
        pen = np.linalg.norm(o)
        pen = lam * (np.log1p(pen / eps) if weighted else pen)
        D = ((y - M) ** 2).sum(1) + (pen if o.any() else 0.0)  # eq. (15)
        labels[i] = D.argmin()
        objective += w[i] * D.min()
        shrink[i] = np.linalg.norm(o) / np.linalg.norm(r) if o.any() else 0.0
        size[i] = np.linalg.norm(o)
        if irls and o.any():
            # the knee: lam / 2, or the log penalty's next threshold (eq. (30))
            knee = lam / (2 * (size[i] + eps)) if weighted else lam / 2
            a = min(1.0, knee / np.linalg.norm(X[i] - M[labels[i]]))
            sums[labels[i]] += w[i] * a * X[i]
            weights[labels[i]] += w[i] * a
        else:
            sums[labels[i]] += w[i] * (X[i] if irls else y)
            weights[labels[i]] += w[i]
        old_o = old["shrink"][i] * (X[i] - old["centers"][old["ref"][i]])
        shift2 += ((o - old_o) ** 2).sum()
    return dict(labels=labels, shrink=shrink, size=size, sums=sums, weights=weights,
                objective=objective, shift=np.sqrt(shift2), onorm=np.linalg.norm(size))


@pytest.mark.parametrize("weighted, irls", [(False, True), (False, False), (True, True),
                                           (True, False)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("prev_kind", ["random", "nearest", "nearest, twin centres"])
def test_hard_pass_with_outliers_matches_its_definition(weighted, irls, dtype, prev_kind):
    # random previous labels, or (as late in a run) the nearest centre for all
    # but a tenth of the rows: the plain pass's common rows (previous label =
    # nearest centre, convex penalty, IRLS) take a path of their own; with two
    # equal centres (no gap between them: their outliers leave that path)
    # and rows of weight 0
    rng = np.random.default_rng(3)
    n, p, C = 701, 6, 4
    M = rng.normal(scale=3.0, size=(C, p))
    X = (M[rng.integers(C, size=n)] + rng.normal(size=(n, p))).astype(dtype)
    X[:90] = rng.uniform(-12, 12, size=(90, p))
    if prev_kind == "nearest, twin centres":
        M[3] = M[0]
    M = M.astype(dtype)
    w = rng.uniform(0.5, 2.0, size=n)
    if prev_kind == "nearest, twin centres":
        w[::7] = 0.0
    prev = rng.integers(C, size=n)
    if prev_kind != "random":
        X64, M64 = X.astype(np.float64), M.astype(np.float64)
        nearest = ((X64[:, None, :] - M64[None]) ** 2).sum(-1).argmin(1)
        prev = np.where(rng.uniform(size=n) < 0.9, nearest, prev)
    eps, lam = 0.05, (0.2 if weighted else 5.0)
    prev_size = np.where(rng.uniform(size=n) < 0.2, rng.uniform(0.1, 3.0, size=n), 0.0)
    tau = lam / (2 * (prev_size + eps)) if weighted else np.full(n, lam / 2)
    old = {"shrink": np.where(rng.uniform(size=n) < 0.3, rng.uniform(0.1, 0.9, size=n), 0.0),
           "ref": rng.integers(C, size=n), "centers": rng.normal(size=(C, p))}
    sq = (X.astype(np.float64) ** 2).sum(1)
    costs = np.empty(n)
    tau0 = lam / (2 * eps) if weighted else lam / 2
    out = hard_pass(X, M, sq, w, prev, rule=PassRule(lam, tau0, eps, weighted, irls),
                    prev_size=prev_size,
                    previous=PreviousOutliers(old["shrink"], old["ref"], old["centers"]),
                    n_threads=3, chunk_rows=64, costs=costs)
    ref = _reference_pass(X, M, w, prev, lam, tau, weighted, eps, irls, old, prev_size)
    tol = 1e-9 if dtype == np.float64 else 2e-5
    assert 50 < (ref["shrink"] > 0).sum() < n
    X64, M64 = X.astype(np.float64), M.astype(np.float64)
    nearest_cost = ((X64[:, None, :] - M64[None]) ** 2).sum(-1).min(1)  # the l0 costs
    np.testing.assert_allclose(costs, nearest_cost, rtol=tol, atol=tol * nearest_cost.max())
    np.testing.assert_array_equal(out["labels"], ref["labels"])
    for key in ("shrink", "size", "sums", "weights"):
        np.testing.assert_allclose(out[key], ref[key], rtol=tol, atol=tol, err_msg=key)
    for key in ("objective", "shift", "onorm"):
        assert out[key] == pytest.approx(ref[key], rel=tol), key


def _iterate(X, M0, lam, n_iter, bounds, weighted=False, eps=0.05, sample_weight=None):
    """Hard RKM passes from M0 (IRLS or eq. (9) centre steps), with or without
    distance bounds; the results of every pass."""
    n = len(X)
    sq = (X.astype(np.float64) ** 2).sum(1)
    w = np.ones(n) if sample_weight is None else sample_weight
    tau0 = lam / (2 * eps) if weighted else lam / 2
    kw = dict(rule=PassRule(lam, tau0, eps, weighted, not weighted), n_threads=2,
              chunk_rows=64)
    res = hard_pass(X, M0, sq, w, np.zeros(n, dtype=np.intp), nearest=True,
                    prev_size=np.zeros(n), **kw)
    centers, out = np.asarray(M0, dtype=np.float64), []
    for _ in range(n_iter):
        new = res["sums"] / res["weights"][:, None]
        res = hard_pass(X, new, sq, w, res["labels"], prev_size=res["size"],
                        previous=PreviousOutliers(res["shrink"], res["ref"], centers),
                        bounds=bounds, **kw)
        centers = new
        out.append(res)
    return out


def _overlapping(n=3000, p=12, C=6, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=1.0, size=(C, p))
    X = means[rng.integers(C, size=n)] + rng.normal(size=(n, p))
    X[: n // 20] = rng.uniform(-10, 10, size=(n // 20, p))
    return X.astype(dtype), X[n // 2: n // 2 + C].astype(dtype)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("lam", [np.inf, 8.0, 4.0])
def test_passes_with_distance_bounds_equal_passes_without(weighted, lam):
    # Elkan's bounds skip the products of rows whose nearest centre cannot
    # have changed; every pass must give what the pass without them gives
    X, M0 = _overlapping()
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=len(X))
    lam = lam / 40 if weighted and np.isfinite(lam) else lam
    plain = _iterate(X, M0, lam, 25, None, weighted=weighted, sample_weight=w)
    bounds = fused_module.Bounds(len(X), len(M0), 1.0)
    bounded = _iterate(X, M0, lam, 25, bounds, weighted=weighted, sample_weight=w)
    for a, b in zip(plain, bounded):
        np.testing.assert_array_equal(a["labels"], b["labels"])
        for key in ("shrink", "size", "sums", "weights"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-9, atol=1e-9, err_msg=key)
        assert b["objective"] == pytest.approx(a["objective"], rel=1e-12)
        assert b["onorm"] == pytest.approx(a["onorm"], rel=1e-9, abs=1e-12)
    assert plain[0]["computed"] == len(X) == bounded[0]["computed"]  # bounds stored
    assert bounded[-1]["computed"] < len(X) // 2  # and used
    # the running sums: most inliers are not read (at the small lambdas only
    # 6-31 points are inliers)
    inliers = (bounded[-1]["shrink"] == 0).sum()
    assert bounded[0]["unread"] == 0
    if inliers > 100:
        assert bounded[-1]["unread"] > 0.8 * inliers
    if np.isfinite(lam):
        assert 0 < (bounded[-1]["shrink"] > 0).sum() < len(X)


def test_running_sums_hold_only_for_the_iterate_they_were_left_by():
    # rows the running sums hold are not read; they are only valid for the
    # iterate the last pass made (its labels) with the same sample weights:
    # any other previous iterate, or weights, and every row is read again
    X, M0 = _overlapping(n=4000, p=12, C=6, seed=7)
    n = len(X)
    sq = (X ** 2).sum(1)
    w = np.ones(n)
    kw = dict(rule=PassRule(10.0, 5.0), n_threads=2, chunk_rows=64)
    res = hard_pass(X, M0, sq, w, np.zeros(n, dtype=np.intp), nearest=True, **kw)
    bounds = fused_module.Bounds(n, len(M0), float(np.sqrt(sq.max())))
    states = [res]
    for _ in range(20):
        M = res["sums"] / res["weights"][:, None]
        res = hard_pass(X, M, sq, w, res["labels"], prev_size=res["size"],
                        previous=PreviousOutliers(res["shrink"], res["ref"], None), bounds=bounds, **kw)
        states.append(res)
    assert res["unread"] > n // 2
    M = res["sums"] / res["weights"][:, None]
    for prev, weights in ((states[5], w), (res, w.copy()), (res, w)):
        args = (X, M, sq, weights, prev["labels"])
        more = dict(prev_size=prev["size"], previous=PreviousOutliers(prev["shrink"], prev["ref"], None), **kw)
        plain = hard_pass(*args, **more)
        b = hard_pass(*args, bounds=bounds, **more)
        fresh = prev is not res or weights is not w
        assert (b["unread"] == 0) == fresh
        np.testing.assert_array_equal(b["labels"], plain["labels"])
        for key in ("shrink", "size", "sums", "weights"):
            np.testing.assert_allclose(b[key], plain[key], rtol=1e-10, atol=1e-10, err_msg=key)
        assert b["objective"] == pytest.approx(plain["objective"], rel=1e-12)
        res = b if fresh else res
    # a pass that keeps the l0 costs reads every row, and they are exact
    prev = res
    costs = np.empty(n)
    b = hard_pass(X, M, sq, w, prev["labels"], prev_size=prev["size"],
                  previous=PreviousOutliers(prev["shrink"], prev["ref"], None), bounds=bounds, costs=costs, **kw)
    assert b["unread"] == 0
    np.testing.assert_allclose(costs, ((X[:, None] - M[None]) ** 2).sum(-1).min(1),
                               rtol=1e-9, atol=1e-9)
    # it is a plain pass (every row through the BLAS call), and the bounds
    # stay valid: still tied to the centres they were last used at, so the
    # next pass adds the drift from those, the costs pass's included; it
    # settles rows and equals the pass without bounds
    assert b["computed"] == n
    M_bounds, cum = bounds.centers.copy(), bounds.cum.copy()
    step = 0.02 * np.linalg.norm(M, axis=1).mean()
    M1 = M + step  # the costs pass at moved centres
    more = dict(prev_size=prev["size"], previous=PreviousOutliers(prev["shrink"], prev["ref"], None), **kw)
    b = hard_pass(X, M1, sq, w, prev["labels"], bounds=bounds, costs=np.empty(n), **more)
    assert b["computed"] == n
    np.testing.assert_array_equal(bounds.centers, M_bounds)
    M2 = M1 + step
    more = dict(prev_size=b["size"], previous=PreviousOutliers(b["shrink"], b["ref"], None), **kw)
    after = hard_pass(X, M2, sq, w, b["labels"], bounds=bounds, **more)
    plain = hard_pass(X, M2, sq, w, b["labels"], **more)
    drift = np.sqrt(((M2 - M_bounds) ** 2).sum(axis=1))  # both moves
    np.testing.assert_allclose(bounds.cum, cum + drift * (1 + 1e-12), rtol=1e-12)
    assert after["computed"] < n // 2 and after["unread"] == 0  # the running sums anew
    np.testing.assert_array_equal(after["labels"], plain["labels"])
    np.testing.assert_allclose(after["sums"], plain["sums"], rtol=1e-10, atol=1e-10)


def test_running_sums_let_a_row_go_when_it_may_become_an_outlier_or_move():
    # a row in the running sums leaves them as soon as its upper bound may
    # pass the threshold (a smaller lambda) or a centre may come nearer
    X, M0 = _overlapping(n=3000, p=10, C=5, seed=8)
    n = len(X)
    sq = (X ** 2).sum(1)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=n)
    res = hard_pass(X, M0, sq, w, np.zeros(n, dtype=np.intp), nearest=True, rule=PassRule(10.0, 5.0))
    bounds = fused_module.Bounds(n, len(M0), float(np.sqrt(sq.max())))
    plain_res = res
    rng = np.random.default_rng(2)
    # lambda shrinking pass by pass, then a centre jumping onto another's points
    lams = [10.0] * 6 + [8.0, 6.0, 5.0, 4.5, 4.0] + [4.0] * 4
    unread = []
    for t, lam in enumerate(lams):
        M = res["sums"] / res["weights"][:, None]
        if t == len(lams) - 2:
            M = M.copy()
            M[0] = M[1] + 0.01 * rng.normal(size=M.shape[1])
        kw = dict(rule=PassRule(lam, lam / 2))
        b = hard_pass(X, M, sq, w, res["labels"], prev_size=res["size"],
                      previous=PreviousOutliers(res["shrink"], res["ref"], None), bounds=bounds, **kw)
        a = hard_pass(X, M, sq, w, plain_res["labels"], prev_size=plain_res["size"],
                      previous=PreviousOutliers(plain_res["shrink"], plain_res["ref"], None), **kw)
        np.testing.assert_array_equal(a["labels"], b["labels"])
        np.testing.assert_array_equal(a["shrink"] > 0, b["shrink"] > 0)
        for key in ("shrink", "sums", "weights"):
            np.testing.assert_allclose(b[key], a[key], rtol=1e-9, atol=1e-9, err_msg=key)
        assert b["objective"] == pytest.approx(a["objective"], rel=1e-12)
        res, plain_res = b, a
        unread.append(b["unread"])
    assert 0 < (res["shrink"] > 0).sum() < n
    assert max(unread[:6]) > n // 2 and max(unread[6:]) > 0


def test_bounds_in_float32_differ_only_at_ties_within_its_rounding():
    # the skipped rows' products are float64 and the others' a BLAS call on
    # fewer rows, so a label may differ from the pass without bounds, but only
    # between two centres whose distances agree to float32 rounding
    X, M0 = _overlapping(n=6000, dtype=np.float32)
    bounds = fused_module.Bounds(len(X), len(M0), 1.0)
    sq = (X.astype(np.float64) ** 2).sum(1)
    res = hard_pass(X, M0, sq, np.ones(len(X)), np.zeros(len(X), dtype=np.intp), nearest=True)
    centers, differing = M0.astype(np.float64), 0
    for _ in range(25):
        new = res["sums"] / res["weights"][:, None]
        kw = dict(previous=PreviousOutliers(res["shrink"], res["ref"], centers))
        a = hard_pass(X, new, sq, np.ones(len(X)), res["labels"], **kw)
        b = hard_pass(X, new, sq, np.ones(len(X)), res["labels"], bounds=bounds, **kw)
        M = new.astype(np.float32).astype(np.float64)
        for i in np.flatnonzero(a["labels"] != b["labels"]):
            d = ((X[i].astype(np.float64) - M) ** 2).sum(1)
            assert abs(d[a["labels"][i]] - d[b["labels"][i]]) <= 1e-5 * sq[i]
            differing += 1
        res, centers = a, new
    assert differing <= 5
    assert b["computed"] < len(X) // 5


def test_bounds_with_equal_centres_and_points_on_ties():
    # two identical centres and points equidistant from two others: no bound
    # can separate them, so those rows are always computed, as without bounds
    rng = np.random.default_rng(2)
    p = 10
    M = rng.normal(size=(4, p))
    M[3] = M[2]
    mid = (M[0] + M[1]) / 2
    X = np.vstack([M[rng.integers(4, size=500)] + 0.3 * rng.normal(size=(500, p)),
                   np.repeat(mid[None], 20, axis=0)])
    sq = (X ** 2).sum(1)
    w = np.ones(len(X))
    bounds = fused_module.Bounds(len(X), 4, 1.0)
    prev = hard_pass(X, M, sq, w, np.zeros(len(X), dtype=np.intp), nearest=True)["labels"]
    for _ in range(3):
        a = hard_pass(X, M, sq, w, prev)
        b = hard_pass(X, M, sq, w, prev, bounds=bounds)
        np.testing.assert_array_equal(a["labels"], b["labels"])
        prev = a["labels"]
    assert b["computed"] >= 20 + (prev >= 2).sum()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-3, 3.0))
@example(seed=300793, scale=0.19140625)  # a share of exactly 204 / 300 = need
def test_store_prediction_counts_the_rows_elkans_test_would_settle(seed, scale):
    # the compiled prediction against Elkan's test written from the distances
    # ||x - m_c|| themselves: a row settles when every other centre, moved
    # towards it by its drift, stays farther than its nearest centre moved away
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 6))
    M = rng.normal(size=(4, 6))
    drift = scale * rng.random(4)
    D = np.linalg.norm(X[:, None, :] - M[None, :, :], axis=2)
    settled = inliers = 0
    reach_max = float(np.median(D.min(1)))  # counting only the rows that stay within it
    for d in D:
        a = int(np.argmin(d))
        ok = all(d[c] - drift[c] >= d[a] + drift[a] for c in range(4) if c != a)
        settled += ok
        inliers += ok and d[a] + drift[a] <= reach_max
    args = (X, (X ** 2).sum(1), M, (M ** 2).sum(1), drift)
    share = fused_module._settled_share(*args)
    assert share == pytest.approx(settled / 300, abs=1.5 / 300)  # a rounding tie at most
    share = fused_module._settled_share(*args, reach_max)
    assert share == pytest.approx(inliers / 300, abs=2.5 / 300)
    # stopping early once the share cannot reach ``need`` leaves the decision
    for limit in (np.inf, reach_max):
        whole = fused_module._settled_share(*args, limit)
        for need in (0.05, 0.3, 0.5, 0.8, 0.95, whole, whole + 1e-9):
            early = fused_module._settled_share(*args, limit, need)
            assert (early >= need) == (whole >= need)
            assert early <= whole


def test_bounds_are_stored_only_when_the_probe_predicts_they_will_settle_most_rows():
    # a pass that would store the bounds first predicts, on a few rows, how
    # many the next pass would settle if the centres moved as they just did
    X, M0 = _overlapping(n=4000, p=16, C=5, seed=3)
    sq = (X ** 2).sum(1)
    w = np.ones(len(X))
    rows = np.arange(0, len(X), 4)
    bounds = fused_module.Bounds(len(X), 5, float(np.sqrt(sq.max())),
                                 probe=(X[rows], sq[rows]))
    res = hard_pass(X, M0, sq, w, np.zeros(len(X), dtype=np.intp), nearest=True)
    centers = [M0]
    for _ in range(40):
        centers.append(res["sums"] / res["weights"][:, None])
        res = hard_pass(X, centers[-1], sq, w, res["labels"])
    M = centers[-1]
    spacing = np.sqrt(((M[:, None] - M[None]) ** 2).sum(-1))[np.triu_indices(5, 1)].min()
    mm = (M ** 2).sum(1)
    assert not bounds.worth_storing(M, mm)  # no move seen yet
    bounds.moved(M - 1e-9)
    assert bounds.worth_storing(M, mm)  # still centres: every row settles
    bounds.moved(M - spacing)  # centres moving by their own spacing: few rows would
    assert not bounds.worth_storing(M, mm)
    # the decision is the predicted share against ``need`` (a first move seen:
    # each centre moved 0.3 spacing along the first axis, no scaling)
    bounds = fused_module.Bounds(len(X), 5, float(np.sqrt(sq.max())), probe=(X[rows], sq[rows]))
    step = np.zeros_like(M)
    step[:, 0] = 0.3 * spacing
    bounds.moved(M - step)
    drift = np.full(5, 0.3 * spacing)
    share = fused_module._settled_share(X[rows], sq[rows], M, mm, drift)
    assert 0.05 < share < 0.95
    for need in (share - 0.02, share, share + 0.02):
        assert bounds.worth_storing(M, mm, need=need) == (share >= need)

    # in a pass: the first one (no move known) and a far jump store nothing,
    # small moves store, and the pass after settles most rows; the results are
    # those of plain passes
    fresh = fused_module.Bounds(len(X), 5, float(np.sqrt(sq.max())), probe=(X[rows], sq[rows]))
    labels = res["labels"]
    computed, stored = [], []
    for M_t in (M0, centers[-3], centers[-2], centers[-1]):
        a = hard_pass(X, M_t, sq, w, labels, bounds=fresh)
        b = hard_pass(X, M_t, sq, w, labels)
        np.testing.assert_array_equal(a["labels"], b["labels"])
        computed.append(a["computed"])
        stored.append(fresh.centers is not None)
        labels = b["labels"]
    assert stored == [False, False, True, True]  # M0 -> centers[-3] is a far jump
    assert computed[:3] == [len(X)] * 3 and computed[3] < len(X) // 10


def _count_settled_passes(monkeypatch):
    """Count, in the list returned, the passes in which the bounds settled rows."""
    count = [0]
    real = fused_module.hard_pass

    def counting(X, *args, **kw):
        out = real(X, *args, **kw)
        count[0] += out["computed"] < len(X)
        return out

    monkeypatch.setattr(fused_module, "hard_pass", counting)
    return count


@pytest.mark.parametrize("kw", [dict(lam=6.0), dict(n_outliers=150), dict(lam=0.2, penalty="log")])
def test_fits_with_distance_bounds_equal_fits_without(monkeypatch, kw):
    X, _ = _overlapping(n=4000, p=16, C=5, seed=3)
    est = dict(n_init=2, random_state=0, tol=1e-8, **kw)
    monkeypatch.setattr(fused_module, "BOUNDS_MIN_WORK", 0)
    settled = _count_settled_passes(monkeypatch)
    bounded = RobustKMeans(5, **est).fit(X)
    assert settled[0] > 0  # the bounds skipped rows
    monkeypatch.setattr(fused_module, "BOUNDS_MIN_DIM", 10**9)
    plain = RobustKMeans(5, **est).fit(X)
    np.testing.assert_array_equal(bounded.labels_, plain.labels_)
    np.testing.assert_array_equal(bounded.outlier_mask_, plain.outlier_mask_)
    assert bounded.n_iter_ == plain.n_iter_
    np.testing.assert_allclose(bounded.cluster_centers_, plain.cluster_centers_, rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(bounded.objective_history_, plain.objective_history_, rtol=1e-9)
    assert bounded.lambda_ == pytest.approx(plain.lambda_, rel=1e-9)


def test_bounds_are_stored_only_when_enough_passes_may_follow(monkeypatch):
    # storing costs more than a plain pass and pays back over later passes: a
    # run stores them only while STORE_MIN_PASSES_LEFT passes or more may follow
    X, _ = _overlapping(n=4000, p=16, C=5, seed=3)
    monkeypatch.setattr(fused_module, "BOUNDS_MIN_WORK", 0)
    passes, stores = [0], []
    real_pass, real_record = fused_module.hard_pass, fused_module.Bounds.record

    def counting(*args, **kw):
        passes[0] += 1
        return real_pass(*args, **kw)

    def recording(self, restart):
        if restart:
            stores.append(passes[0] - 1)  # the stepper's step of this pass (init_state's: 0)
        return real_record(self, restart)

    monkeypatch.setattr(fused_module, "hard_pass", counting)
    monkeypatch.setattr(fused_module.Bounds, "record", recording)
    left = fused_module.STORE_MIN_PASSES_LEFT

    def run(max_iter):
        passes[0], stores[:] = 0, []
        RobustKMeans(5, lam=4.0, n_init=1, random_state=0, tol=0, max_iter=max_iter).fit(X)
        assert all(max_iter - step >= left for step in stores), stores
        return list(stores)

    long_run = run(40)
    assert long_run  # stored once the centres settled, at step long_run[0]
    # the same run cut short where that step has one pass too few after it
    assert run(long_run[0] + left - 1) == []
    assert run(long_run[0] + left)[:1] == long_run[:1]


@pytest.mark.parametrize("lam, stored32", [(12.0, True), (4.0, False)])
def test_float32_bounds_are_stored_only_when_most_rows_stay_inliers(monkeypatch, lam,
                                                                   stored32):
    # in float32 the bounds pay by the inliers that the running sums hold
    # unread (an outlier is read at every pass): with most rows flagged a
    # float32 run keeps none, a float64 run still does (its products pay)
    X, _ = _overlapping(n=4000, p=16, C=5, seed=3)
    monkeypatch.setattr(fused_module, "BOUNDS_MIN_WORK", 0)
    stores = []
    real_record = fused_module.Bounds.record

    def recording(self, restart):
        stores.append(restart)
        return real_record(self, restart)

    monkeypatch.setattr(fused_module.Bounds, "record", recording)
    flagged = {}
    for dtype in (np.float64, np.float32):
        stores.clear()
        fit = RobustKMeans(5, lam=lam, n_init=1, random_state=0, tol=0,
                           max_iter=30).fit(X.astype(dtype))
        flagged[dtype] = fit.outlier_mask_.mean()
        assert any(stores) == (stored32 or dtype == np.float64), (dtype, stores)
    assert (flagged[np.float32] > 0.5) != stored32


def test_a_warm_started_path_with_distance_bounds_equals_the_path_without(monkeypatch):
    # the bounds outlive each lambda's run: the next run adds its centres' drift
    X, _ = _overlapping(n=3000, p=9, C=4, seed=4)
    est = RobustKMeans(4, random_state=0, n_init=2)
    monkeypatch.setattr(fused_module, "BOUNDS_MIN_WORK", 0)
    settled = _count_settled_passes(monkeypatch)
    _same_path_both_ways(monkeypatch, est, X, "BOUNDS_MIN_DIM", 0, 10**9, 30)
    assert settled[0] > 0


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), p=st.integers(8, 12),
       C=st.integers(2, 6), scale=st.sampled_from([0.0, 1e-9, 1e-3, 0.1, 1.0, 50.0]),
       lam=st.sampled_from([np.inf, 0.5, 3.0]), rounded=st.booleans())
def test_bounds_never_change_a_pass(seed, n, p, C, scale, lam, rounded):
    # random centre moves, from none to jumps, duplicate rows and centres on
    # an integer grid (exact ties): labels as without bounds, sums to rounding,
    # except between centres whose distances to the point agree to rounding
    # (a point on its centre, duplicate centres): there the products' rounding
    # decides, and the computed rows' BLAS call covers fewer rows
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * 3
    if rounded:
        X = np.round(X)
    X[rng.integers(n, size=n // 3)] = X[0]
    sq = (X ** 2).sum(1)
    w = rng.uniform(0.5, 2.0, size=n)
    M = X[rng.integers(n, size=C)].copy()
    bounds = fused_module.Bounds(n, C, float(np.sqrt(sq.max())))
    prev = hard_pass(X, M, sq, w, np.zeros(n, dtype=np.intp), nearest=True)["labels"]
    for _ in range(4):
        kw = dict(rule=PassRule(lam, lam / 2), chunk_rows=32)
        a = hard_pass(X, M, sq, w, prev, **kw)
        b = hard_pass(X, M, sq, w, prev, bounds=bounds, **kw)
        np.testing.assert_allclose(a["shrink"], b["shrink"], rtol=1e-9, atol=1e-12)
        differ = np.flatnonzero(a["labels"] != b["labels"])
        for i in differ:
            y = X[i] - a["shrink"][i] * (X[i] - M[prev[i]])
            d = ((y - M) ** 2).sum(1)
            scale2 = sq[i] + (M ** 2).sum(1).max()
            assert abs(d[a["labels"][i]] - d[b["labels"][i]]) <= 1e-12 * scale2
        if not len(differ):
            np.testing.assert_allclose(a["sums"], b["sums"], rtol=1e-9, atol=1e-9)
        prev = a["labels"]
        move = rng.normal(size=M.shape) * scale
        M = np.round(M + move) if rounded else M + move


def test_bounds_record_how_far_the_fastest_centre_has_moved_since_each_pass():
    bounds = fused_module.Bounds(10, 3, 1.0)
    moves = [np.zeros(3), np.array([0.5, 0.0, 0.1]), np.array([0.0, 0.3, 0.0]),
             np.array([0.2, 0.2, 0.0])]
    for t, move in enumerate(moves):
        bounds.cum += move
        since, now = bounds.record(restart=t == 0)
        assert now == t
        cum = np.cumsum(moves[: t + 1], axis=0)
        expected = [(cum[-1] - cum[s]).max() for s in range(t + 1)]
        np.testing.assert_allclose(since, expected, rtol=0, atol=1e-14)
        assert (since >= np.array(expected)).all()  # rounded up, never down
    for _ in range(70):  # the history grows past its first allocation
        since, now = bounds.record(restart=False)
    assert now == 73 and len(since) == 74
    np.testing.assert_allclose(since[3:], 0.0, atol=1e-14)  # nothing moved since pass 3
    np.testing.assert_allclose(since[:3], expected[:3], atol=1e-14)
    assert bounds.record(restart=True)[1] == 0


@pytest.mark.parametrize("kw", [dict(lam=6.0, max_iter=4), dict(lam=6.0, tol=1e-6),
                                dict(n_outliers=150), dict(lam=np.inf, max_iter=3)])
def test_the_fit_reports_the_l0_costs_its_last_pass_kept(monkeypatch, kw):
    # trimmed_cost_ (eq. (3) at the fitted centres) is read off the last pass
    # when it kept the costs (its centres had settled, or it was the run's
    # last): no pass over X of its own
    X, _ = _overlapping(n=4000, p=16, C=5, seed=3)
    calls = [0]
    real = fused_module.nearest_sq_distances

    def counting(*args):
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(fused_module, "nearest_sq_distances", counting)
    model = RobustKMeans(5, n_init=1, random_state=0, **kw).fit(X)
    s = int(model.outlier_mask_.sum())
    d = ((X[:, None, :] - model.cluster_centers_[None]) ** 2).sum(-1).min(axis=1)
    expected = np.sort(d)[: len(X) - s].sum() if s else d.sum()
    assert model.trimmed_cost_ == pytest.approx(expected, rel=1e-10)
    if "n_outliers" not in kw:
        assert calls[0] == 0


def test_kept_costs_belong_to_the_state_whose_pass_kept_them():
    # the stepper's two sets of output arrays alternate: once a later pass has
    # written into a state's arrays, that state's costs are not read any more
    X, _ = _overlapping(n=2000, p=4, C=3, seed=1)
    problem = RobustKMeans(3, n_init=1, random_state=0).build_problem(X)
    solver = problem.solver
    stepper = fused_module.FusedStepper(solver, 5.0, solver.penalty, tol=np.inf, max_iter=10)
    state = fused_module.init_state(solver, problem.inits[0], 5.0)
    states = []
    for _ in range(3):
        state, _ = stepper.step(state)  # tol = inf: every pass may end the run
        states.append(state)
    g = solver.geometry
    for st_ in states[1:]:
        kept = pass_states.kept_costs(st_)
        np.testing.assert_allclose(kept, fused_module.nearest_sq_distances(
            g.X, st_.centers, g.sq_norms), rtol=1e-12, atol=1e-12)
    assert pass_states.kept_costs(states[0]) is None  # its arrays now hold the third pass's


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outlier_matrix_is_written_in_the_fits_dtype_rounded_once(dtype):
    # the flagged rows s_n (x_n - m_l) * scale, each entry computed in float64
    # and rounded once to the fit's dtype; an entry equal to zero is dropped
    from robustclust._core._dense import outlier_csr

    rng = np.random.default_rng(7)
    X = rng.normal(size=(50, 5)).astype(dtype)
    M = rng.normal(size=(3, 5))
    index = np.array([2, 9, 30])
    ref = np.array([0, 2, 1])
    shrink = np.array([0.25, 0.5, 1.0 / 3.0])
    X[30, 4] = M[1, 4] = 1.5  # a zero entry of the outlier matrix
    data, indices, indptr = outlier_csr(X, index, ref, shrink, M, 4.0, dtype)
    assert data.dtype == dtype
    expected = (shrink[:, None] * (X[index].astype(np.float64) - M[ref]) * 4.0).astype(dtype)
    O = np.zeros((50, 5), dtype=dtype)
    for i in range(50):
        O[i, indices[indptr[i]:indptr[i + 1]]] = data[indptr[i]:indptr[i + 1]]
    np.testing.assert_array_equal(O[index], expected)
    assert len(data) == 14 and not (data == 0).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outlier_matrix_and_centring_written_in_blocks_of_rows(dtype, monkeypatch):
    # with the rows split into blocks for the threads: the same entries, a zero
    # entry in the last block dropped, and X - offset with its largest |entry|
    from robustclust._core import _dense

    rng = np.random.default_rng(11)
    X = rng.normal(size=(203, 7)).astype(dtype)
    M = rng.normal(size=(4, 7))
    index = np.sort(rng.choice(203, 61, replace=False))
    ref = rng.integers(4, size=61)
    shrink = rng.uniform(0.1, 1.0, size=61)
    X[index[-1], 3] = M[ref[-1], 3] = 0.75
    X[17, 2] = -9.5  # the largest |X - offset|, in the first block
    offset = X.mean(axis=0)
    expected = (shrink[:, None] * (X[index].astype(np.float64) - M[ref]) * 2.0).astype(dtype)
    one = _dense.outlier_csr(X, index, ref, shrink, M, 2.0, dtype)
    Xc1, top1 = _dense.centre_with_extent(X, offset)
    monkeypatch.setattr(_dense, "PARALLEL_ENTRIES", 1)
    data, indices, indptr = _dense.outlier_csr(X, index, ref, shrink, M, 2.0, dtype)
    Xc, top = _dense.centre_with_extent(X, offset)
    for a, b in zip(one, (data, indices, indptr)):
        np.testing.assert_array_equal(a, b)
    assert len(data) == 61 * 7 - 1 and not (data == 0).any()
    O = np.zeros((203, 7), dtype=dtype)
    for i in range(203):
        O[i, indices[indptr[i]:indptr[i + 1]]] = data[indptr[i]:indptr[i + 1]]
    np.testing.assert_array_equal(O[index], expected)
    np.testing.assert_array_equal(Xc, X - offset)
    np.testing.assert_array_equal(Xc1, Xc)
    assert top == top1 == float(np.abs(X - offset).max()) == float(abs(X[17, 2] - offset[2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_means_and_centring_norms_in_blocks_of_rows(dtype, monkeypatch):
    # the offset's float64 sums and the squared norms of the centred rows that
    # the centring pass adds up on the way: the same in one block or several,
    # and equal to their definitions (float64 sums of the stored entries)
    from robustclust._core import _dense
    from robustclust._estimators.units import internal_units

    rng = np.random.default_rng(5)
    X = (rng.normal(size=(203, 7)) * 3.0 + 100.0).astype(dtype)
    exact = X.astype(np.float64).sum(axis=0) / 203
    mean1 = _dense.column_means(X)
    Xc1, top1, sq1 = _dense.centre_with_extent(X, mean1.astype(dtype), norms=True)
    monkeypatch.setattr(_dense, "PARALLEL_ENTRIES", 1)
    mean = _dense.column_means(X)
    Xc, top, sq = _dense.centre_with_extent(X, mean1.astype(dtype), norms=True)
    assert mean.dtype == np.float64
    np.testing.assert_allclose(mean, exact, rtol=1e-15)
    np.testing.assert_allclose(mean1, exact, rtol=1e-15)
    np.testing.assert_array_equal(Xc1, Xc)
    np.testing.assert_array_equal(sq1, sq)
    np.testing.assert_allclose(sq, (Xc.astype(np.float64) ** 2).sum(axis=1), rtol=1e-14)
    assert top == top1
    # internal units hand the norms on, and drop them when X is rescaled
    Xi, offset, scale, norms = internal_units(X, norms=True)
    assert scale == 1.0 and offset.dtype == dtype
    np.testing.assert_allclose(offset, exact.astype(dtype), rtol=1e-15)
    np.testing.assert_allclose(norms, (Xi.astype(np.float64) ** 2).sum(axis=1), rtol=1e-14)
    # the same offset and rows whatever X's memory layout
    Xf, offset_f, _ = internal_units(np.asfortranarray(X))
    np.testing.assert_array_equal(offset_f, offset)
    np.testing.assert_array_equal(Xf, Xi)
    big = 2.0 ** (40 if dtype == np.float32 else 150)  # beyond 2^20 / 2^100: rescaled
    Xi, offset, scale, norms = internal_units(X * dtype(big), norms=True)
    assert scale != 1.0 and norms is None


@pytest.mark.parametrize("p", [1, 32, 64, 256, 4096])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunks_hold_at_most_chunk_bytes_of_x_within_the_row_limits(p, dtype):
    # a BLAS product's rows: as many as fit CHUNK_BYTES of X, within
    # [CHUNK_ROWS, CHUNK_ROWS_MAX] (the lower limit wins for wide rows)
    rows = fused_module.chunk_rows_for(np.empty((0, p), dtype=dtype))
    row_bytes = p * np.dtype(dtype).itemsize
    assert fused_module.CHUNK_ROWS <= rows <= fused_module.CHUNK_ROWS_MAX
    assert rows * row_bytes <= fused_module.CHUNK_BYTES or rows == fused_module.CHUNK_ROWS
    assert rows == fused_module.CHUNK_ROWS_MAX or (rows + 1) * row_bytes > \
        fused_module.CHUNK_BYTES


def test_a_pass_does_not_depend_on_its_chunk_size():
    X = _large(p=40)
    sq = (X ** 2).sum(axis=1)
    w = np.ones(len(X))
    M = X[:4].copy()
    prev = np.zeros(len(X), dtype=np.intp)
    a = hard_pass(X, M, sq, w, prev, rule=PassRule(10.0, 5.0), nearest=True)
    b = hard_pass(X, M, sq, w, prev, rule=PassRule(10.0, 5.0), nearest=True, chunk_rows=256)
    np.testing.assert_array_equal(a["labels"], b["labels"])
    np.testing.assert_array_equal(a["shrink"], b["shrink"])
    np.testing.assert_allclose(a["sums"], b["sums"], rtol=1e-12)
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 400_000), n_threads=st.integers(1, 8),
       chunk_rows=st.sampled_from([1, 7, 64, 256, 1024]))
def test_block_edges_split_the_rows_into_whole_chunks_of_decreasing_size(n, n_threads,
                                                                         chunk_rows):
    edges = fused_module.block_edges(n, n_threads, chunk_rows)
    sizes = np.diff(edges)
    assert edges[0] == 0 and edges[-1] == n
    if n_threads == 1 or n <= chunk_rows:
        assert edges == [0, n]
        return
    assert (sizes > 0).all()
    # whole chunks (but the last block), never fewer than the least block,
    # never growing: each takes a share of the rows still left
    least = fused_module.BLOCK_MIN_CHUNKS * chunk_rows
    assert (sizes[:-1] % chunk_rows == 0).all() and (sizes[:-1] >= least).all()
    assert (np.diff(sizes[:-1]) <= 0).all()
    # more blocks than threads once there are rows for them (a thread free
    # early takes another), and the same blocks every time
    if n >= 2 * n_threads * least:
        assert len(sizes) > n_threads
    assert edges == fused_module.block_edges(n, n_threads, chunk_rows)


def test_a_pass_on_guided_blocks_equals_the_pass_on_one_thread(monkeypatch):
    # blocks of decreasing size on 3 threads, more than the threads, taken in
    # whatever order the threads are free: the labels and outputs are those of
    # one block, the float64 sums equal to rounding
    X = _large(p=6, C=5)
    sq = (X ** 2).sum(axis=1)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(X))
    M = X[:5].copy()
    prev = np.random.default_rng(2).integers(5, size=len(X))
    kw = dict(rule=PassRule(12.0, 6.0), chunk_rows=64)
    one = hard_pass(X, M, sq, w, prev, n_threads=1, **kw)
    spans = []
    real = fused_module.run_blocks

    def spy(kernel, blocks, n_threads=None):
        spans.extend((args[-1].start, args[-1].stop) for args in blocks)
        return real(kernel, blocks, n_threads)

    monkeypatch.setattr(fused_module, "run_blocks", spy)
    many = hard_pass(X, M, sq, w, prev, n_threads=3, **kw)
    again = hard_pass(X, M, sq, w, prev, n_threads=3, **kw)
    edges = fused_module.block_edges(len(X), 3, 64)
    assert len(edges) - 1 > 3
    assert spans == 2 * list(zip(edges[:-1], edges[1:]))
    for key in ("sums", "weights"):  # the blocks' sums added in block order
        np.testing.assert_array_equal(again[key], many[key])
    assert again["objective"] == many["objective"]
    for key in ("labels", "ref", "shrink", "size"):
        np.testing.assert_array_equal(one[key], many[key])
    assert 0 < one["shrink"].astype(bool).sum() < len(X)
    np.testing.assert_allclose(many["sums"], one["sums"], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(many["weights"], one["weights"], rtol=1e-12)
    assert many["objective"] == pytest.approx(one["objective"], rel=1e-12)


@pytest.mark.parametrize("lam", [0.0, 6.0, np.inf])
def test_compiled_assignment_equals_the_numpy_assignment(monkeypatch, lam):
    # predict's (and the fit's settled) assignment at fixed centres: one compiled
    # pass gives the labels, outliers, per-point costs of eq. (6) and the score
    # that the NumPy O- and U-steps settle on
    X = _large(seed=3)
    w = np.random.default_rng(2).uniform(0.5, 1.5, size=len(X))
    model = RobustKMeans(4, lam=6.0, init=X[200:204], n_init=1).fit(X, sample_weight=w)
    model.unweighted_lambda_ = model.lambda_ = lam
    solver, fast = model._assign(X)
    assert fast.products is None  # the compiled pass's state (no N x C products)
    fast_score, fast_norms = model.score(X, sample_weight=w), model.outlier_norms(X)
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 10**9)
    _, plain = model._assign(X)
    assert plain.products is not None
    np.testing.assert_array_equal(np.asarray(fast.labels), np.asarray(plain.labels))
    np.testing.assert_array_equal(fast.outliers.index, plain.outliers.index)
    # (distances from products: an absolute rounding of eps (|x|^2 + |m|^2), which
    # ||o|| = ||r|| - lam / 2 near the threshold keeps)
    np.testing.assert_allclose(fast.outliers.sizes, plain.outliers.sizes, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.point_costs, plain.point_costs, rtol=1e-10, atol=1e-12)
    assert fast.objective == pytest.approx(plain.objective, rel=1e-12)
    assert fast_score == pytest.approx(model.score(X, sample_weight=w), rel=1e-12)
    np.testing.assert_allclose(fast_norms, model.outlier_norms(X), rtol=1e-12, atol=1e-12)
    assert (0 < len(plain.outliers.index) < len(X)) == (lam == 6.0)
