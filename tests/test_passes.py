"""The compiled iterations (robustclust._core._passes) are the array path's.

``MixtureModel.iterate`` (one Sigma) and ``KMeansModel.iterate`` (q > 1) run
the compiled loops for a dense NumPy X with C p at most ``MAX_WORK``;
lowering that to -1 sends the same solver through the array calls of
:class:`~robustclust._core.geometry.Products`.  Both are fed the same state
and must return the same next state to rounding: every common-Sigma kind,
both penalties, float32 input to the mixture (its estimator converts it to
float64), soft K-means with sample weights, states with and without outliers.
"""

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from robustclust import RobustGaussianMixture, RobustKMeans
from robustclust._core import _hard_kernels, _passes
from robustclust._core.penalties import log_limit
from synthetic_data import gaussian_clusters_with_noise

TYPES = ["tied_spherical", "tied_diag", "tied"]


def _data(seed):
    return gaussian_clusters_with_noise(seed, n=240, n_out=40)


def _solver(X, covariance_type, weighted, lam):
    est = RobustGaussianMixture(3, lam=lam, covariance_type=covariance_type,
                                penalty="log" if weighted else "group", random_state=0, n_init=1)
    problem = est.build_problem(X)
    return problem.solver, problem.inits[0]


def _both(monkeypatch, solver, state, lam, weighted):
    """(compiled, array path) next states from ``state``."""
    penalty = solver.log_penalty if weighted else solver.penalty
    eligible = _passes.kmeans_eligible if not solver.model.mixture else \
        _passes.mixture_eligible
    assert eligible(solver, penalty)
    compiled = solver.model.iterate(solver, state, lam, penalty)
    with monkeypatch.context() as m:
        m.setattr(_passes, "MAX_WORK", -1)
        assert not eligible(solver, penalty)
        array = solver.model.iterate(solver, state, lam, penalty)
    return compiled, array


def _assert_same(a, b, rtol=1e-11):
    np.testing.assert_array_equal(a.outliers.index, b.outliers.index)
    np.testing.assert_allclose(a.centers, b.centers, rtol=rtol, atol=rtol)
    if a.covariance is not None:
        np.testing.assert_allclose(a.weights, b.weights, rtol=rtol)
        scale = np.abs(b.covariance.value).max()  # off-diagonal zeros: rounding of it
        np.testing.assert_allclose(a.covariance.value, b.covariance.value, rtol=rtol,
                                   atol=rtol * scale)
    np.testing.assert_allclose(a.memberships, b.memberships, rtol=rtol, atol=1e-13)
    np.testing.assert_allclose(a.outliers.shrink, b.outliers.shrink, rtol=rtol, atol=1e-13)
    np.testing.assert_allclose(a.outliers.sizes, b.outliers.sizes, rtol=rtol, atol=1e-13)
    np.testing.assert_allclose(a.outliers.sizes_full, b.outliers.sizes_full, rtol=rtol,
                               atol=1e-13)
    # -log p(x_n) = (log det Sigma + D_n) / 2 + ...: with a collapsed Sigma its parts
    # are large and nearly cancel, and their size is the scale of its rounding
    log_det = abs(b.covariance.log_det) if b.covariance is not None else 0.0
    np.testing.assert_allclose(a.point_costs, b.point_costs, rtol=rtol,
                               atol=rtol * (np.abs(b.point_costs).max() + log_det + 1.0))
    np.testing.assert_array_equal(a.labels, b.labels)
    # the cost's two parts can nearly cancel (a collapsed Sigma): their size is the scale
    scale = np.abs(b.point_costs).sum() + abs(b.objective)
    assert a.objective == pytest.approx(b.objective, rel=rtol, abs=rtol * scale)
    if (a.covariance is None or a.covariance.kind == "spherical") and a.outliers.count:
        np.testing.assert_allclose(a.outliers.euclidean, b.outliers.euclidean, rtol=rtol)


@pytest.mark.filterwarnings("ignore:Every point is flagged")
@pytest.mark.parametrize("covariance_type", TYPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_each_iteration_is_the_array_paths(monkeypatch, covariance_type, weighted, dtype):
    X = _data(1).astype(dtype)
    lam = 1.2
    solver, init = _solver(X, covariance_type, weighted, lam)
    state = solver.init_state(init, lam)
    if weighted:  # the log penalty starts from the convex penalty's solution
        state = solver.run(state, lam, max_iter=5)
    flagged = []
    for _ in range(12):
        compiled, array = _both(monkeypatch, solver, state, lam, weighted)
        _assert_same(compiled, array)
        # the outlier rows the compiled pass keeps are o_n = s_n (x_n - sum_c w_nc m_c)
        if compiled.outliers.count:
            idx = compiled.outliers.index
            Xs = solver.geometry.X  # the data as the solver sees them (centred)
            R = Xs[idx].astype(np.float64) - compiled.outliers.weights @ compiled.centers
            np.testing.assert_allclose(compiled.outliers.rows,
                                       compiled.outliers.shrink[:, None] * R,
                                       rtol=1e-12, atol=1e-12)
        flagged.append(compiled.outliers.count)
        state = compiled  # the next step from the compiled state (its cached rows)
    assert 0 < flagged[-1] < X.shape[0]


@pytest.mark.parametrize("covariance_type", TYPES)
def test_whole_fits_agree(monkeypatch, covariance_type):
    X = _data(2)
    kw = dict(lam=1.5, covariance_type=covariance_type, random_state=0, n_init=2)
    solver = RobustGaussianMixture(3, **kw).build_problem(X).solver
    assert _passes.mixture_eligible(solver, solver.penalty)
    a = RobustGaussianMixture(3, **kw).fit(X)
    monkeypatch.setattr(_passes, "MAX_WORK", -1)
    b = RobustGaussianMixture(3, **kw).fit(X)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)
    np.testing.assert_allclose(a.means_, b.means_, rtol=1e-9, atol=1e-9)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-11)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_infinite_lambda_flags_nothing(monkeypatch, covariance_type):
    X = _data(3)
    solver, init = _solver(X, covariance_type, False, np.inf)
    state = solver.init_state(init)
    for _ in range(3):
        compiled, array = _both(monkeypatch, solver, state, np.inf, False)
        assert compiled.outliers.count == 0
        _assert_same(compiled, array)
        state = compiled


def test_soft_kmeans_at_infinite_lambda_and_from_k_row_outliers(monkeypatch):
    X = _data(8)
    est = RobustKMeans(3, fuzzifier=2.0, lam=np.inf, random_state=0, n_init=1)
    problem = est.build_problem(X)
    solver = problem.solver
    state = solver.init_state(problem.inits[0])
    for _ in range(3):  # lam = inf: soft K-means itself
        compiled, array = _both(monkeypatch, solver, state, np.inf, False)
        assert compiled.outliers.count == 0
        _assert_same(compiled, array)
        state = compiled
    # a state whose outliers come in the k-row form only (no per-point vectors)
    lam = 3.0
    state = solver.run(solver.init_state(problem.inits[0], lam), lam, max_iter=4)
    assert state.outliers.count
    bare = replace(state, outliers=replace(state.outliers, shrink_full=None, sizes_full=None,
                                           weights_full=None, rows=None))
    compiled, array = _both(monkeypatch, solver, bare, lam, False)
    _assert_same(compiled, array)
    _assert_same(compiled, solver.model.iterate(solver, state, lam, solver.penalty))


def test_what_the_compiled_iteration_serves():
    X = _data(4)
    dense, _ = _solver(X, "tied", False, 1.0)
    assert _passes.mixture_eligible(dense, dense.penalty)
    assert _passes.mixture_eligible(dense, dense.log_penalty)
    sparse, _ = _solver(sp.csr_matrix(X), "tied", False, 1.0)
    assert not _passes.mixture_eligible(sparse, sparse.penalty)
    per_component, _ = _solver(X, "full", False, 1.0)
    assert not _passes.mixture_eligible(per_component, per_component.penalty)
    wide = np.hstack([X] * (_passes.MAX_WORK // (3 * X.shape[1]) + 1))
    assert 3 * wide.shape[1] > _passes.MAX_WORK
    solver, _ = _solver(wide, "tied_spherical", False, 1.0)
    assert not _passes.mixture_eligible(solver, solver.penalty)


@settings(max_examples=150, deadline=None)
@given(r=st.floats(0.0, 50.0), z0=st.floats(0.0, 50.0), lam=st.floats(1e-3, 200.0),
       eps=st.floats(1e-2, 10.0), weighted=st.booleans())
def test_group_shrink_is_the_penalties_o_step(r, z0, lam, eps, weighted):
    """The compiled O-step of one point is the array O-step: the convex
    penalty's s = [1 - (lam/2) / ||r||]_+ and the log penalty's MM limit."""
    r2 = r * r
    z0 = z0 if weighted else 0.0
    tau0 = lam / (2.0 * eps) if weighted else lam / 2.0
    s, norm = _hard_kernels.group_shrink(r2, z0, lam, tau0, eps if weighted else 1.0, weighted)
    a = math.sqrt(r2)
    if weighted:
        want = float(log_limit(np.array([a]), np.array([z0]), lam, eps, np.array([r2]))[0])
    else:
        want = max(a - lam / 2.0, 0.0)
    assert s * norm == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert (s > 0) == (want > 0)
    if s > 0:
        assert norm == pytest.approx(a, rel=1e-15)


@pytest.mark.parametrize("q", [1.5, 2.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_each_soft_kmeans_iteration_is_the_array_paths(monkeypatch, q, weighted):
    X = _data(5)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=X.shape[0])
    lam = 3.0
    est = RobustKMeans(3, fuzzifier=q, penalty="log" if weighted else "group", lam=lam, random_state=0, n_init=1)
    problem = est.build_problem(X, sample_weight=w)
    solver = problem.solver
    state = solver.init_state(problem.inits[0], lam)
    if weighted:
        state = solver.run(state, lam, max_iter=5)
    flagged = []
    for _ in range(12):
        compiled, array = _both(monkeypatch, solver, state, lam, weighted)
        _assert_same(compiled, array)
        # the U-step's by-products (u^q and the next residual weights) too
        for x, y in zip(compiled.soft[1:], array.soft[1:]):
            np.testing.assert_allclose(x, y, rtol=1e-11, atol=1e-13)
        flagged.append(compiled.outliers.count)
        state = compiled
    assert 0 < flagged[-1] < X.shape[0]


def test_soft_kmeans_count_fits_agree(monkeypatch):
    X = _data(6)
    kw = dict(fuzzifier=1.5, n_outliers=40, penalty="log", random_state=0)
    solver = RobustKMeans(3, **kw).build_problem(X).solver
    assert _passes.kmeans_eligible(solver, solver.log_penalty)
    a = RobustKMeans(3, **kw).fit(X)
    monkeypatch.setattr(_passes, "MAX_WORK", -1)
    b = RobustKMeans(3, **kw).fit(X)
    assert a.n_outliers_ == b.n_outliers_ == 40
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert a.lambda_ == pytest.approx(b.lambda_, rel=1e-9)


def test_soft_kmeans_on_float32_data_keeps_the_array_path():
    X = _data(7).astype(np.float32)
    problem = RobustKMeans(3, fuzzifier=1.5, lam=2.0).build_problem(X)
    assert not _passes.kmeans_eligible(problem.solver, problem.solver.penalty)
    hard = RobustKMeans(3, lam=2.0).build_problem(X.astype(np.float64)).solver
    assert not _passes.kmeans_eligible(hard, hard.penalty)  # hard K-means: the fused pass
    elementwise = RobustKMeans(3, fuzzifier=1.5, lam=2.0, penalty="elementwise").build_problem(
        X.astype(np.float64)).solver
    assert not _passes.kmeans_eligible(elementwise, elementwise.penalty)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(6, 40), p=st.integers(1, 4),
       C=st.integers(1, 4), lam=st.floats(0.05, 6.0), weighted=st.booleans(),
       kind=st.sampled_from(TYPES + ["soft"]))
@example(seed=31, n=6, p=3, C=1, lam=2.5, weighted=False, kind="tied")
def test_one_iteration_on_small_random_problems(seed, n, p, C, lam, weighted, kind):
    """Any size down to one feature and one cluster, none or every point flagged:
    the compiled iteration is the array path's."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * rng.uniform(0.1, 10.0)
    X[: n // 4] += rng.uniform(-20, 20, size=(n // 4, p))  # a few far points
    init = X[rng.choice(n, C, replace=False)]
    if kind == "soft":
        est = RobustKMeans(C, fuzzifier=1.5, penalty="log" if weighted else "group", lam=lam, init=init, n_init=1)
    else:
        est = RobustGaussianMixture(C, lam=lam, covariance_type=kind, penalty="log" if weighted else "group",
                                    init=init, n_init=1)
    problem = est.build_problem(X)
    solver = problem.solver
    penalty = solver.log_penalty if weighted else solver.penalty
    eligible = _passes.kmeans_eligible if kind == "soft" else _passes.mixture_eligible
    assert eligible(solver, penalty)
    try:
        state = solver.init_state(problem.inits[0], lam)
    except ValueError:  # a singular initial covariance (repeated points): not our case
        return
    for _ in range(3):
        outcomes = []
        for limit in (_passes.MAX_WORK, -1):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(_passes, "MAX_WORK", limit)
                try:
                    outcomes.append(solver.model.iterate(solver, state, lam, penalty))
                except ValueError as error:  # Sigma collapsed
                    outcomes.append(str(error))
        compiled, array = outcomes
        if isinstance(compiled, str) or isinstance(array, str):
            assert compiled == array  # both paths refuse, with the same message
            return
        # a rounding delta of the log-probabilities -D/2 moves a posterior by delta
        # relative, and delta is eps times the largest Mahalanobis distance: with a
        # collapsed Sigma (variance 3e-5 against points 20 apart) about 1e-8
        # (with a full Sigma, its smallest eigenvalue: an off-diagonal entry
        # may be the smallest, or negative); the compiled pass expands the
        # scatter (sum y y^T - M^T A - A^T M + M^T diag(nk) M), which loses
        # about eps ||y||^2 / lambda_min(Sigma) to cancellation, and an O-step
        # s = 1 - tau / ||r|| moves by (1 - s) / s times ||r||'s relative error
        # (seen: s = 0.45 moved 1.1e-9 relative, with eigenvalues of 1e-3
        # against points about 20 apart)
        rtol = 1e-9
        if kind != "soft":
            value = np.asarray(array.covariance.value)
            smallest = np.linalg.eigvalsh(value).min() if value.ndim == 2 else value.min()
            spread = np.ptp(solver.geometry.X) ** 2 / smallest
            rtol = max(rtol, 64 * np.finfo(float).eps * spread)
        _assert_same(compiled, array, rtol=rtol)
        state = compiled



@pytest.mark.parametrize("kind", TYPES + ["soft"])
def test_every_point_flagged_one_cluster_one_feature(monkeypatch, kind):
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(size=30), rng.uniform(-30, 30, size=10)])[:, None]
    lam = 0.01  # every residual above the threshold
    if kind == "soft":
        est = RobustKMeans(1, fuzzifier=1.5, lam=lam, n_init=1, random_state=0)
    else:
        est = RobustGaussianMixture(1, lam=lam, covariance_type=kind, n_init=1,
                                    random_state=0, reg_covar=1e-3)
    problem = est.build_problem(X)
    solver = problem.solver
    state = solver.init_state(problem.inits[0], lam)
    for _ in range(3):
        compiled, array = _both(monkeypatch, solver, state, lam, False)
        _assert_same(compiled, array, rtol=1e-9)
        state = compiled
    assert compiled.outliers.count == X.shape[0]


@pytest.mark.filterwarnings("ignore:Every point is flagged")
@pytest.mark.parametrize("covariance_type", TYPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("start", ["cold", "running"])
def test_the_fixed_parameter_step_is_the_array_paths(monkeypatch, covariance_type, weighted,
                                                      start):
    # MixtureModel.fixed_centre_step (O- then E-step, parameters held): the first
    # step of every cold fit at a lam, and the assignment of new points
    X = _data(4)
    lam = 1.1
    solver, init = _solver(X, covariance_type, weighted, lam)
    penalty = solver.log_penalty if weighted else solver.penalty
    state = solver.init_state(init)  # O = 0, the initial parameters
    if start == "running":
        state = solver.run(solver.init_state(init, lam), lam, max_iter=4)
    model = solver.model
    assert _passes.mixture_eligible(solver, penalty)
    products = solver.products_of(state)
    compiled = model.fixed_centre_step(solver, state, state.centers, products, lam,
                                       penalty)
    with monkeypatch.context() as m:
        m.setattr(_passes, "MAX_WORK", -1)
        assert not _passes.mixture_eligible(solver, penalty)
        array = model.fixed_centre_step(solver, state, state.centers, products, lam,
                                        penalty)
    if weighted and start == "cold":  # the log penalty's MM step from o = 0 flags none
        assert compiled.outliers.count == 0
    else:
        assert 0 < compiled.outliers.count < X.shape[0]
    _assert_same(compiled, array)
    # the parameters are the state's, untouched
    assert compiled.centers is state.centers and compiled.covariance is state.covariance
    assert compiled.weights is state.weights
    idx = compiled.outliers.index
    R = solver.geometry.X[idx] - compiled.outliers.weights @ state.centers
    np.testing.assert_allclose(compiled.outliers.rows, compiled.outliers.shrink[:, None] * R,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_predictions_agree(monkeypatch, covariance_type):
    # predict and the outlier scores of new points go through the fixed step
    X = _data(5)
    est = RobustGaussianMixture(3, lam=1.3, covariance_type=covariance_type, random_state=0,
                                n_init=2).fit(X)
    new = _data(6)
    a = (est.predict(new), est.predict_proba(new), est.score_samples(new))
    monkeypatch.setattr(_passes, "MAX_WORK", -1)
    b = (est.predict(new), est.predict_proba(new), est.score_samples(new))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(a[2], b[2], rtol=1e-11)
