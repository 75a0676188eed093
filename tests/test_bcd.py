"""Block updates: each step minimizes its block, the cost never increases,
and a converged run is a fixed point of every update."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from robustclust import RobustKMeans
from robustclust._core.models import fuzzy_memberships
from robustclust._core.penalties import log_critical, log_limit, make_penalty
from reference_steps import mm_limit


def _contaminated(seed, n_in=60, n_out=12, p=3, C=3):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=6.0, size=(C, p))
    X = np.vstack([means[rng.integers(C, size=n_in)] + rng.normal(size=(n_in, p)),
                   rng.uniform(-15, 15, size=(n_out, p))])
    return X


CONFIGS = [
    dict(fuzzifier=1.0),
    dict(fuzzifier=1.5),
    dict(fuzzifier=1.0, penalty="log"),
    dict(fuzzifier=1.5, penalty="log"),
    dict(fuzzifier=1.0, penalty="elementwise"),
    dict(fuzzifier=2.0, penalty="elementwise"),
    dict(fuzzifier=1.0, penalty="log-elementwise"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(0.5, 12.0), init=st.sampled_from(["random", "k-means++"]))
def test_objective_never_increases(config, seed, lam, init):
    X = _contaminated(seed)
    model = RobustKMeans(3, lam=lam, init=init, n_init=1, random_state=seed, tol=0,
                         max_iter=60, **config).fit(X)
    hist = model.objective_history_
    assert len(hist) >= 1
    assert np.all(np.diff(hist) <= 1e-9 * max(1.0, abs(hist[0]))), hist


def _prox_group(r, thr):
    nr = np.linalg.norm(r, axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nr > thr, r * (1 - thr / nr), 0.0)


@pytest.mark.parametrize("q", [1.0, 1.3, 2.0])
@pytest.mark.parametrize("penalty", ["group", "elementwise"])
def test_converged_solution_is_a_fixed_point(q, penalty):
    X = _contaminated(3)
    lam = 5.0
    model = RobustKMeans(3, lam=lam, fuzzifier=q, penalty=penalty, n_init=1, random_state=1,
                         tol=1e-13, max_iter=2000).fit(X)
    assert model.n_iter_ < 2000
    M, U = model.cluster_centers_, model.memberships_
    O = model.outlier_vectors_.toarray()
    W = U**q
    # centres: u^q-weighted means of x_n - o_n (eq. (9))
    np.testing.assert_allclose(M, (W.T @ (X - O)) / W.sum(0)[:, None], atol=1e-8)
    # outlier vectors: prox of the residual of eq. (12) at threshold lam / 2
    R = X - (W / W.sum(1, keepdims=True)) @ M
    if penalty == "group":
        expected = _prox_group(R, lam / 2)
    else:
        expected = np.sign(R) * np.maximum(np.abs(R) - lam / 2, 0)
    np.testing.assert_allclose(O, expected, atol=1e-8)
    # memberships minimize sum_c u^q (||x - o - m_c||^2 + lam rho(o))
    D = ((X - O)[:, None, :] - M[None]) ** 2
    D = D.sum(-1)
    rho = np.linalg.norm(O, axis=1) if penalty == "group" else np.abs(O).sum(1)
    E = D + lam * rho[:, None]
    if q == 1:
        np.testing.assert_array_equal(U.argmax(1), E.argmin(1))
        assert set(np.unique(U)) <= {0.0, 1.0}
    else:
        np.testing.assert_allclose(U, fuzzy_memberships(E, q), atol=1e-8)
    # the reported objective is the cost of eq. (6) at the solution
    assert model.objective_ == pytest.approx((W * E).sum(), rel=1e-10)
    # labels_ marks exactly the nonzero o_n as -1
    np.testing.assert_array_equal(model.labels_ == -1, np.any(O != 0, axis=1))
    np.testing.assert_array_equal(model.outlier_mask_, np.any(O != 0, axis=1))
    np.testing.assert_allclose(model.outlier_norms_, np.linalg.norm(O, axis=1))


def test_weighted_fixed_point_uses_reweighted_thresholds():
    X = _contaminated(5)
    lam = 0.05
    model = RobustKMeans(3, lam=lam, penalty="log", eps=0.01, n_init=1, random_state=0,
                         tol=1e-13, max_iter=3000).fit(X)
    M, U = model.cluster_centers_, model.memberships_
    O = model.outlier_vectors_.toarray()
    R = X - U @ M
    thr = lam / (2 * (np.linalg.norm(O, axis=1) + 0.01))
    np.testing.assert_allclose(O, _prox_group(R, thr[:, None]), atol=1e-7)
    assert model.n_outliers_ > 0


@settings(max_examples=40, deadline=None)
@given(r=st.lists(st.floats(-5, 5), min_size=3, max_size=3),
       lam=st.floats(0.01, 10.0), penalty=st.sampled_from(["group", "elementwise"]))
def test_prox_matches_brute_force_minimization(r, lam, penalty):
    r = np.array(r)
    pen = make_penalty(penalty)
    rho = (lambda o: np.linalg.norm(o)) if penalty == "group" else (lambda o: np.abs(o).sum())

    def cost(o):
        return np.sum((r - o) ** 2) + lam * rho(o)

    got = pen.prox(r[None], pen.threshold_at(lam, np.zeros((1, 3))))[0]
    starts = [np.zeros(3), r, r * 0.5]
    best = min((minimize(cost, s, method="Nelder-Mead",
                         options=dict(xatol=1e-10, fatol=1e-12, maxiter=5000)) for s in starts),
               key=lambda res: res.fun)
    assert cost(got) <= best.fun + 1e-7


@settings(max_examples=40, deadline=None)
@given(r=st.lists(st.floats(-5, 5), min_size=3, max_size=3),
       prev=st.lists(st.floats(-5, 5), min_size=3, max_size=3),
       lam=st.floats(0.01, 10.0), eps=st.floats(0.01, 1.0))
def test_mm_step_decreases_the_log_penalized_cost(r, prev, lam, eps):
    # eq. (30): the reweighted prox minimizes a majorizer touching at prev,
    # so the true cost ||r - o||^2 + lam log(1 + ||o|| / eps) cannot go up.
    r, prev = np.array(r), np.array(prev)
    pen = make_penalty("group", weighted=True, eps=eps)
    new = pen.prox(r[None], pen.threshold_at(lam, prev[None]))[0]

    def cost(o):
        return np.sum((r - o) ** 2) + lam * np.log1p(np.linalg.norm(o) / eps)

    assert cost(new) <= cost(prev) + 1e-9


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.0, 8.0), prev=st.floats(0.0, 8.0), lam=st.floats(0.01, 10.0),
       eps=st.floats(0.01, 1.0))
def test_log_limit_is_where_the_mm_steps_go(a, prev, lam, eps):
    # the O-step of the log penalty: the MM steps of eq. (30) run to their limit,
    # in closed form; it is a fixed point of the step and costs no more than prev
    disc = (a + eps) ** 2 - 2 * lam
    lower = 0.5 * ((a - eps) - np.sqrt(max(disc, 0.0)))
    # away from a tangent point or the unstable fixed point, where the steps crawl
    assume(abs(disc) > 1e-2 and abs(prev - lower) > 1e-2 and lam / (2 * eps) != a)
    t = float(log_limit(np.array([a]), np.array([prev]), lam, eps)[0])
    assert t == pytest.approx(float(mm_limit(np.array([a]), np.array([prev]), lam, eps)[0]),
                              abs=1e-6)
    assert t == pytest.approx(max(a - lam / (2 * (t + eps)), 0.0), abs=1e-9)

    def cost(t):
        return (a - t) ** 2 + lam * np.log1p(t / eps)

    assert cost(t) <= cost(prev) + 1e-9
    assert cost(t) <= cost(max(a - lam / (2 * (prev + eps)), 0.0)) + 1e-9  # one step


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.0, 8.0), prev=st.floats(0.0, 8.0), eps=st.floats(0.01, 1.0))
def test_log_critical_lambda_is_where_the_limit_turns_on(a, prev, eps):
    crit = float(log_critical(np.array([a]), np.array([prev]), eps)[0])
    assume(crit > 1e-6)

    def flagged(lam):
        return float(log_limit(np.array([a]), np.array([prev]), lam, eps)[0]) > 0

    assert flagged(crit * (1 - 1e-6)) and not flagged(crit * (1 + 1e-6))
    # from o = 0: the first MM step's threshold lam / (2 eps), inverted
    assert float(log_critical(np.array([a]), np.array([0.0]), eps)[0]) == 2 * eps * a


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 1000), q=st.floats(1.05, 4.0))
def test_fuzzy_memberships_minimize_the_weighted_cost(seed, q):
    rng = np.random.default_rng(seed)
    costs = rng.uniform(0.01, 5.0, size=(1, 4))
    u = fuzzy_memberships(costs, q)[0]
    assert u.sum() == pytest.approx(1.0)
    f = lambda v: np.sum(v**q * costs[0])  # noqa: E731
    for _ in range(50):
        v = rng.dirichlet(np.ones(4))
        assert f(u) <= f(v) + 1e-12


def test_fuzzy_memberships_with_a_zero_cost():
    u = fuzzy_memberships(np.array([[0.0, 1.0, 0.0], [1.0, 2.0, 4.0]]), 2.0)
    np.testing.assert_allclose(u[0], [0.5, 0.0, 0.5])
    np.testing.assert_allclose(u[1], np.array([1, 0.5, 0.25]) / 1.75)
