"""Many outliers: the array path's maps over all points, and the path's stopping rule.

With at least a quarter of the points flagged (``Outliers.many``) the
centre step's sums of x_n - o_n and the U-step's distances to x_n - o_n are
computed from the shrink form o_n = s_n (x_n - sum_d w_nd m_d) over all points
(an (N, C) map and one product with X) instead of from the k outlier rows,
so an iteration costs the same whatever the number of flagged points.  Both
forms must give the same numbers; the explicit rows are the reference.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustclust import RobustGaussianMixture, RobustKMeans, regularization_path
from robustclust._core import _passes
from robustclust._core import state as state_module
from robustclust._core.geometry import LinearGeometry
from robustclust._core.solver import _Stepper
from robustclust._core.state import Outliers
from robustclust.datasets import make_blobs_with_outliers


def _problem(seed, n, p, C, share):
    """X, centres M, soft weights W, per-point shrink s (a ``share`` flagged), V."""
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=3.0, size=(n, p))
    M = rng.normal(scale=3.0, size=(C, p))
    W = rng.dirichlet(np.ones(C), size=n)
    s = np.zeros(n)
    flagged = rng.permutation(n)[:max(1, math.ceil(share * n))]
    s[flagged] = rng.uniform(0.05, 1.0, size=flagged.size)
    V = rng.uniform(0.0, 2.0, size=(n, C))
    return X, M, W, s, V


def _outliers(s, W, norms):
    index = np.flatnonzero(s > 0)
    sizes = s * norms
    return Outliers(index, shrink=s[index], weights=W[index], sizes=sizes[index],
                    shrink_full=s, sizes_full=sizes, weights_full=W)


def _rows(X, M, W, s):
    """o_n = s_n (x_n - W_n M) for every point (zeros for inliers)."""
    return s[:, None] * (X - W @ M)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 60), p=st.integers(1, 6),
       C=st.integers(1, 5), share=st.floats(0.25, 1.0))
def test_removed_sums_over_all_points_equal_the_outlier_rows(seed, n, p, C, share):
    X, M, W, s, V = _problem(seed, n, p, C, share)
    g = LinearGeometry(X)
    outliers = _outliers(s, W, np.linalg.norm(X - W @ M, axis=1))
    assert outliers.many(n)
    many = g.removed_sums(V, outliers, M)
    explicit = V.T @ (X - _rows(X, M, W, s))
    scale = np.abs(V).sum(axis=0)[:, None] * (np.abs(X).max() + np.abs(M).max())
    assert np.all(np.abs(many - explicit) <= 1e-13 * scale)
    # and the k-row form gives the same
    few = g.point_sums(V) - g.outlier_sums(V, _outliers(s, W, outliers.sizes_full), M)
    assert np.all(np.abs(many - few) <= 1e-13 * scale)


def test_removed_sums_use_the_rows_below_the_share(monkeypatch):
    X, M, W, s, V = _problem(3, 40, 3, 3, 0.1)
    g = LinearGeometry(X)
    outliers = _outliers(s, W, np.ones(40))
    assert not outliers.many(40) and outliers.count == 4
    calls = []
    real = LinearGeometry.outlier_sums
    monkeypatch.setattr(LinearGeometry, "outlier_sums",
                        lambda self, *a: calls.append(1) or real(self, *a))
    np.testing.assert_allclose(g.removed_sums(V, outliers, M),
                               V.T @ (X - _rows(X, M, W, s)), rtol=1e-12, atol=1e-12)
    assert calls == [1]
    monkeypatch.setattr(state_module, "MANY_SHARE", 10)  # now 4 of 40 is many
    assert outliers.many(40)
    np.testing.assert_allclose(g.removed_sums(V, outliers, M),
                               V.T @ (X - _rows(X, M, W, s)), rtol=1e-12, atol=1e-12)
    assert calls == [1]


def test_many_needs_the_per_point_form():
    s = np.array([0.5, 0.0, 0.3, 0.0])
    W = np.full((4, 2), 0.5)
    o = _outliers(s, W, np.ones(4))
    assert o.many(4) and o.many(8) and not o.many(9)
    assert not Outliers(o.index, shrink=o.shrink, weights=o.weights, sizes=o.sizes).many(4)
    labels = Outliers(o.index, shrink=o.shrink, weights=np.zeros(2, dtype=int),
                      sizes=o.sizes, shrink_full=s, sizes_full=s,
                      weights_full=np.zeros(4, dtype=int))
    assert not labels.many(4)  # hard K-means' labels: its own compiled pass
    explicit = Outliers(o.index, shrink=None, weights=o.weights, sizes=o.sizes,
                        rows=np.ones((2, 3)), sizes_full=s, weights_full=W)
    assert not explicit.many(4)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), p=st.integers(1, 6),
       C=st.integers(1, 5), share=st.floats(0.0, 1.0))
def test_removed_distances_over_all_points(seed, n, p, C, share):
    X, M, W, s, _ = _problem(seed, n, p, C, share)
    products = LinearGeometry(X).products(M)
    D = products.removed_sq_distances(s, W)
    Y = X - _rows(X, M, W, s)
    exact = ((Y[:, None, :] - M[None]) ** 2).sum(axis=2)
    scale = (X**2).sum(axis=1)[:, None] + (M**2).sum(axis=1)[None, :] + 1.0
    assert np.all(np.abs(D - exact) <= 1e-13 * scale)
    # a point with s_n = 0 gets the plain distance, bit for bit
    inl = s == 0
    np.testing.assert_array_equal(D[inl], products.sq_distances()[inl])


def test_weighted_products_are_kept_for_the_same_weights_only():
    X, M, W, s, _ = _problem(1, 30, 4, 3, 0.5)
    products = LinearGeometry(X).products(M)
    exact = ((X - W @ M) ** 2).sum(axis=1)
    np.testing.assert_allclose(products.residual_sq_norms(W), exact, rtol=1e-12)
    first = products.weighted(W)
    assert all(a is b for a, b in zip(products.weighted(W), first))  # kept
    W2 = W[::-1].copy()  # another matrix: computed afresh
    np.testing.assert_allclose(products.residual_sq_norms(W2),
                               ((X - W2 @ M) ** 2).sum(axis=1), rtol=1e-12)
    D = products.removed_sq_distances(s, W)
    Y = X - _rows(X, M, W, s)
    np.testing.assert_allclose(D, ((Y[:, None, :] - M[None]) ** 2).sum(axis=2),
                               rtol=1e-10, atol=1e-10)


def _fit_both(monkeypatch, est, X):
    """(fit with the all-point maps, fit with the k rows only, how often each
    took the maps)."""
    taken = []
    real = Outliers.many

    def counted(self, n):
        out = real(self, n)
        taken[-1] += out
        return out

    with monkeypatch.context() as m:
        m.setattr(_passes, "MAX_WORK", -1)  # the array path, at any size
        m.setattr(Outliers, "many", counted)
        taken.append(0)
        many = _summary(est.fit(X))
        m.setattr(state_module, "MANY_SHARE", 0)  # never "many": count * 0 < n
        taken.append(0)
        few = _summary(est.fit(X))
    return many, few, taken


def _summary(est):
    centers = est.means_ if hasattr(est, "means_") else est.cluster_centers_
    return (est.labels_.copy(), est.outlier_mask_.copy(), np.array(centers), est.n_iter_,
            est.objective_history_[-1])


@pytest.mark.parametrize("make", [
    lambda: RobustKMeans(3, fuzzifier=1.5, lam=0.5, random_state=0, n_init=2),
    lambda: RobustKMeans(3, fuzzifier=2.0, penalty="log", lam=1.0, random_state=0, n_init=2),
    lambda: RobustGaussianMixture(3, lam=0.4, covariance_type="tied_spherical",
                                  random_state=0, n_init=1),
    lambda: RobustGaussianMixture(3, lam=0.4, covariance_type="tied", random_state=0,
                                  n_init=1),
], ids=["soft", "soft-weighted", "rpc-tied-spherical", "rpc-tied"])
def test_fits_with_most_points_flagged_are_the_k_row_fits(monkeypatch, make):
    # (the mixtures with one covariance per component keep explicit rows)
    X = make_blobs_with_outliers(n_outliers=40, n_per_cluster=60, random_state=3).X
    (la, ma, ca, ia, oa), (lb, mb, cb, ib, ob), taken = _fit_both(monkeypatch, make(), X)
    assert ma.sum() >= len(X) // 4
    assert taken[0] > 0 and taken[1] == 0  # the maps, then the k rows only
    np.testing.assert_array_equal(ma, mb)
    np.testing.assert_array_equal(la, lb)
    assert ia == ib
    np.testing.assert_allclose(ca, cb, rtol=1e-9, atol=1e-9 * np.abs(cb).max())
    assert oa == pytest.approx(ob, rel=1e-9)


# -- the path's stopping rule ------------------------------------------------------------
def _soft_solver(tol=1e-6):
    X = make_blobs_with_outliers(n_outliers=40, n_per_cluster=60, random_state=1).X
    problem = RobustKMeans(3, fuzzifier=1.5, random_state=0, n_init=1, tol=tol).build_problem(X)
    return problem.solver, problem.inits[0]


def _first_settled(solver, state, lam, tol, max_iter=300):
    """Iterations until the centres' rule holds, counted by hand."""
    stepper = _Stepper(solver, lam, solver.penalty, shifts="centres")
    for it in range(1, max_iter + 1):
        new, (c_shift, c_norm, _, _) = stepper.step(state)
        same = np.array_equal(state.outliers.index, new.outliers.index)
        state = new
        if it > 1 and same and c_shift <= tol * c_norm:
            return it, state
    return max_iter, state


def test_centres_rule_counts_iterations_as_it_says():
    solver, init = _soft_solver()
    tol = 1e-5
    start = solver.run(solver.init_state(init, 2.0), 2.0)
    for lam in (1.99, 1.5, 0.3, 0.01):
        run = solver.run(start, lam, tol=tol, settle="centres")
        n, by_hand = _first_settled(solver, start, lam, tol)
        assert run.n_iter == n
        np.testing.assert_array_equal(run.centers, by_hand.centers)
        start = run
    # the fit's rule asks the outlier matrix to settle too: never fewer iterations
    fit = solver.run(start, 0.005, tol=tol)
    cen = solver.run(start, 0.005, tol=tol, settle="centres")
    assert cen.n_iter <= fit.n_iter


def test_centres_rule_takes_two_iterations_after_a_lambda_change():
    # from a converged state, the first centre step at a new lam uses the old
    # O: the centres hardly move; the rule waits for the O-step at lam
    solver, init = _soft_solver()
    start = solver.run(solver.init_state(init, 2.0), 2.0, tol=1e-12)
    first, _ = _Stepper(solver, 1.999, solver.penalty, shifts="centres").step(start)
    assert np.array_equal(first.outliers.index, start.outliers.index)
    run = solver.run(start, 1.999, tol=1e-5, settle="centres")
    assert run.n_iter >= 2


def test_run_rejects_an_unknown_rule():
    solver, init = _soft_solver()
    with pytest.raises(ValueError, match="settle must be 'fit' or 'centres'"):
        solver.run(solver.init_state(init, 1.0), 1.0, settle="outliers")


def test_soft_path_with_every_point_flagged_stops_on_the_centres():
    # at the bottom of a soft path every point is flagged and the outlier
    # rows drift with the memberships for hundreds of iterations; the path's
    # rule stops on the centres, and flags what the fit's rule flags
    X = make_blobs_with_outliers(n_outliers=40, n_per_cluster=60, random_state=1).X
    est = RobustKMeans(3, fuzzifier=1.5, random_state=0, n_init=1)
    loose = regularization_path(est, X, n_lambdas=30)
    exact = regularization_path(est, X, n_lambdas=30, path_tol=1.0)
    assert loose.n_outliers[-1] == len(X)
    assert loose.n_iter.sum() < exact.n_iter.sum()
    assert np.abs(loose.n_outliers - exact.n_outliers).max() <= 1
    scale = np.abs(exact.centers).max()
    assert np.abs(loose.centers - exact.centers).max() < 1e-2 * scale


@pytest.mark.parametrize("path_tol, unweighted", [(None, "centres"), (10.0, "centres"),
                                                  (1.0, "fit"), (0.5, "fit")])
def test_path_rules_by_stage_and_tolerance(monkeypatch, path_tol, unweighted):
    # the centres' rule only where the path loosens the tolerance, and never
    # for the weighted stage (the solution a weighted path reports)
    from robustclust._core.solver import Solver

    seen = []
    real = Solver.run

    def spy(self, state, lam, weighted=False, max_iter=None, tol=None, settle="fit"):
        seen.append((weighted, settle, tol))
        return real(self, state, lam, weighted, max_iter, tol, settle)

    monkeypatch.setattr(Solver, "run", spy)
    X = make_blobs_with_outliers(n_outliers=20, n_per_cluster=40, random_state=1).X
    est = RobustKMeans(3, fuzzifier=1.5, penalty="log", random_state=0, n_init=1, tol=1e-6)
    regularization_path(est, X, n_lambdas=4, path_tol=path_tol)
    path_runs = [r for r in seen if r[2] is not None]
    factor = 10.0 if path_tol is None else path_tol
    assert len(path_runs) == 8
    for weighted, settle, tol in path_runs:
        assert tol == pytest.approx(1e-6 * factor)
        assert settle == ("fit" if weighted else unweighted)
