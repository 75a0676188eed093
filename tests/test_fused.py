"""The compiled hard-RKM pass equals its NumPy definition, and the fused
solver path (large N) gives the same fits as the array path (small N)."""

import numpy as np
import pytest
from sklearn.cluster import KMeans

import robustclust._core._fused as fused_module
from robustclust import RobustKMeans
from robustclust._core._fused import hard_pass


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


def test_fused_path_is_kmeans_at_infinite_lambda():
    X = _large(2)
    init = X[300:304]
    ours = RobustKMeans(4, lam=np.inf, init=init, n_init=1, tol=0).fit(X)
    ref = KMeans(4, init=init, n_init=1, tol=0, algorithm="lloyd").fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(), dict(weighted=True), dict(penalty="elementwise")])
def test_fused_path_equals_numpy_path_along_a_warm_started_path(monkeypatch, kw):
    # warm starts carry the fused pass's cluster sums from one lambda to the
    # next; they must not leak a stale M-step into the new lambda
    from robustclust import regularization_path
    from robustclust.datasets import make_blobs_with_outliers
    X = make_blobs_with_outliers(n_outliers=80, random_state=0).X
    est = RobustKMeans(4, random_state=0, n_init=2, **kw)
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 0)
    fused = regularization_path(est, X, n_lambdas=25)
    monkeypatch.setattr(fused_module, "FUSED_MIN_ROWS", 10**9)
    plain = regularization_path(est, X, n_lambdas=25)
    np.testing.assert_array_equal(fused.n_outliers, plain.n_outliers)
    np.testing.assert_array_equal(fused.n_iter, plain.n_iter)
    np.testing.assert_allclose(fused.centers, plain.centers, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kw", [dict(lam=3.0), dict(lam=3.0, penalty="elementwise"),
                                dict(lam=0.05, weighted=True), dict(n_outliers=40)])
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


def _reference_pass(X, M, w, prev, lam, tau, weighted, eps, irls, old):
    """The O-step, U-step, next centre sums and outlier shift, written out per point."""
    X, M = X.astype(np.float64), M.astype(np.float64)
    n, C = len(X), len(M)
    labels, shrink, size = np.empty(n, int), np.zeros(n), np.zeros(n)
    sums, weights, objective, shift2 = np.zeros_like(M), np.zeros(C), 0.0, 0.0
    for i in range(n):
        r = X[i] - M[prev[i]]
        o = max(0.0, 1 - tau[i] / np.linalg.norm(r)) * r  # eq. (11)
        y = X[i] - o
        pen = np.linalg.norm(o)
        pen = lam * (np.log1p(pen / eps) if weighted else pen)
        D = ((y - M) ** 2).sum(1) + (pen if o.any() else 0.0)  # eq. (15)
        labels[i] = D.argmin()
        objective += w[i] * D.min()
        shrink[i] = 1 - tau[i] / np.linalg.norm(r) if o.any() else 0.0
        size[i] = np.linalg.norm(o)
        if irls and o.any():
            a = min(1.0, (lam / 2) / np.linalg.norm(X[i] - M[labels[i]]))
            sums[labels[i]] += w[i] * a * X[i]
            weights[labels[i]] += w[i] * a
        else:
            sums[labels[i]] += w[i] * (X[i] if irls else y)
            weights[labels[i]] += w[i]
        old_o = old["shrink"][i] * (X[i] - old["centers"][old["ref"][i]])
        shift2 += ((o - old_o) ** 2).sum()
    return dict(labels=labels, shrink=shrink, size=size, sums=sums, weights=weights,
                objective=objective, shift=np.sqrt(shift2), onorm=np.linalg.norm(size))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hard_pass_with_outliers_matches_its_definition(weighted, dtype):
    rng = np.random.default_rng(3)
    n, p, C = 701, 6, 4
    M = rng.normal(scale=3.0, size=(C, p))
    X = (M[rng.integers(C, size=n)] + rng.normal(size=(n, p))).astype(dtype)
    X[:90] = rng.uniform(-12, 12, size=(90, p))
    M = M.astype(dtype)
    w = rng.uniform(0.5, 2.0, size=n)
    prev = rng.integers(C, size=n)
    eps, lam = 0.05, (0.2 if weighted else 5.0)
    prev_size = np.where(rng.uniform(size=n) < 0.2, rng.uniform(0.1, 3.0, size=n), 0.0)
    tau = lam / (2 * (prev_size + eps)) if weighted else np.full(n, lam / 2)
    old = {"shrink": np.where(rng.uniform(size=n) < 0.3, rng.uniform(0.1, 0.9, size=n), 0.0),
           "ref": rng.integers(C, size=n), "centers": rng.normal(size=(C, p))}
    sq = (X.astype(np.float64) ** 2).sum(1)
    out = hard_pass(X, M, sq, w, prev, lam=lam, tau0=lam / (2 * eps) if weighted else lam / 2,
                    eps=eps, weighted=weighted, irls=not weighted, prev_size=prev_size,
                    old_shrink=old["shrink"], old_ref=old["ref"], old_centers=old["centers"],
                    n_threads=3, chunk_rows=64)
    ref = _reference_pass(X, M, w, prev, lam, tau, weighted, eps, not weighted, old)
    tol = 1e-9 if dtype == np.float64 else 2e-5
    assert 50 < (ref["shrink"] > 0).sum() < n
    np.testing.assert_array_equal(out["labels"], ref["labels"])
    for key in ("shrink", "size", "sums", "weights"):
        np.testing.assert_allclose(out[key], ref[key], rtol=tol, atol=tol, err_msg=key)
    for key in ("objective", "shift", "onorm"):
        assert out[key] == pytest.approx(ref[key], rel=tol), key
