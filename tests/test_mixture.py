"""RobustGaussianMixture: the RPC cost never increases, its closed-form steps
are the minimizers they claim to be, and the limits match scikit-learn."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from sklearn.mixture import GaussianMixture

from robustclust import RobustGaussianMixture, regularization_path
from robustclust._core.covariance import Covariance
from robustclust._core.penalties import make_penalty
from robustclust.datasets import make_blobs_with_outliers
from robustclust.metrics import center_rmse, outlier_precision_recall
from synthetic_data import gaussian_clusters_with_noise

#: the common-covariance types (the paper's model and its diag / full variants)
TYPES = ["tied_spherical", "tied_diag", "tied"]
ALL_TYPES = TYPES + ["spherical", "diag", "full"]


_data = gaussian_clusters_with_noise


@pytest.mark.filterwarnings("ignore:Every point is flagged")
@pytest.mark.parametrize("covariance_type", TYPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_cost_of_eq8_never_increases(covariance_type, weighted, seed):
    X = _data(seed)
    lam = [0.5, 1.5, 3.0][seed % 3]
    m = RobustGaussianMixture(3, lam=lam, covariance_type=covariance_type, penalty="log" if weighted else "group",
                              n_init=1, random_state=seed, tol=0, max_iter=80).fit(X)
    h = m.objective_history_
    assert np.all(np.diff(h) <= 1e-9 * max(1.0, abs(h[0]))), np.diff(h).max()
    assert m.n_outliers_ > 0


@pytest.mark.parametrize("seed", range(3))
def test_infinite_lambda_tied_is_sklearn_tied(seed):
    X = _data(seed, n_out=0)
    M0 = X[[0, 50, 100]]
    ours = RobustGaussianMixture(3, lam=np.inf, covariance_type="tied", init=M0, n_init=1,
                                 tol=0, max_iter=40, reg_covar=0).fit(X)
    # the same initial parameters: nearest-mean proportions and pooled covariance
    problem = RobustGaussianMixture(3, covariance_type="tied", reg_covar=0).build_problem(X)
    solver = problem.solver                  # the solver sees X minus problem.offset
    _, w, cov = solver.model.initial_parameters(solver, M0 - problem.offset)
    M, cov = M0 - problem.offset, cov.value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = GaussianMixture(3, covariance_type="tied", weights_init=w,
                              means_init=M + problem.offset,
                              precisions_init=np.linalg.inv(cov), max_iter=40, tol=0,
                              reg_covar=0).fit(X)
    np.testing.assert_allclose(ours.means_, ref.means_, atol=1e-10)
    np.testing.assert_allclose(ours.weights_, ref.weights_, atol=1e-12)
    np.testing.assert_allclose(ours.covariances_, ref.covariances_, atol=1e-10)
    np.testing.assert_array_equal(ours.labels_, ref.predict(X))
    assert ours.objective_ == pytest.approx(-ref.score(X) * len(X), rel=1e-12)
    np.testing.assert_allclose(ours.score_samples(X), ref.score_samples(X), atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-9)


def test_spherical_outlier_threshold_scales_with_sigma_and_sigma_is_the_root():
    X = _data(1)
    lam = 1.5
    # tol=0: EM runs until an iteration changes the cost by nothing at all (a gain
    # of 1e-13 per point still leaves the means moving by about its square root,
    # 3e-7: where exactly the rounding stops it moves the fixed point's error
    # between 1e-7 and 2e-7)
    m = RobustGaussianMixture(3, lam=lam, covariance_type="tied_spherical", n_init=1,
                              random_state=0, tol=0, max_iter=3000).fit(X)
    assert m.converged_
    sigma = math.sqrt(m.covariances_)
    O = m.outlier_vectors_.toarray()
    R = X - m.memberships_ @ m.means_
    # eq. (25): o_n = r_n [1 - lam sigma / ||r_n||]_+
    norms = np.linalg.norm(R, axis=1, keepdims=True)
    np.testing.assert_allclose(O, R * np.maximum(1 - lam * sigma / norms, 0), atol=5e-7)
    # eq. (27): sigma minimizes S / (2 s^2) + N p log s + lam sum ||o_n|| / s
    N, p = X.shape
    G = m.memberships_
    S = sum((G[:, c] * ((X - O - m.means_[c]) ** 2).sum(1)).sum() for c in range(3))
    a = lam * np.linalg.norm(O, axis=1).sum()
    res = minimize_scalar(lambda s: S / (2 * s * s) + N * p * math.log(s) + a / s,
                          bounds=(1e-3, 100), method="bounded", options=dict(xatol=1e-12))
    assert sigma == pytest.approx(res.x, rel=1e-6)


@pytest.mark.parametrize("covariance_type", ["tied_diag", "tied"])
def test_converged_covariance_is_the_majorizer_minimizer(covariance_type):
    # at a fixed point Sigma = (S + sum_n (lam / ||o_n||_{Sigma^-1}) o_n o_n^T) / N
    X = _data(2)
    lam = 1.0
    m = RobustGaussianMixture(3, lam=lam, covariance_type=covariance_type, n_init=1,
                              random_state=0, tol=1e-13, max_iter=5000, reg_covar=0).fit(X)
    O = m.outlier_vectors_.toarray()
    Y = X - O
    G = m.memberships_
    S = sum((G[:, c, None] * (Y - m.means_[c])).T @ (Y - m.means_[c]) for c in range(3))
    cov = m.covariances_ if covariance_type == "tied" else np.diag(m.covariances_)
    t = np.sqrt(np.einsum("np,pq,nq->n", O, np.linalg.inv(cov), O))
    flagged = t > 0
    B = S + (O[flagged].T * (lam / t[flagged])) @ O[flagged]
    expected = B / len(X)
    got = m.covariances_
    if covariance_type == "tied_diag":
        expected = np.diag(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_mahalanobis_o_step_matches_brute_force(seed):
    # min_o 1/2 ||r - o||^2_{S^-1} + lam ||o||_{S^-1} is o = r [1 - lam / ||r||_{S^-1}]_+
    rng = np.random.default_rng(seed)
    p = 3
    A = rng.normal(size=(p, p))
    Sigma = A @ A.T + 0.5 * np.eye(p)
    Pinv = np.linalg.inv(Sigma)
    r = rng.normal(scale=2.0, size=p)
    lam = rng.uniform(0.2, 2.0)
    cov = Covariance("full", Sigma, p)
    tr = np.sqrt(cov.sq_norms(r[None]))[0]
    closed = r * max(1 - lam / tr, 0)

    def cost(o):
        d = r - o
        return 0.5 * d @ Pinv @ d + lam * math.sqrt(max(o @ Pinv @ o, 0))

    best = min((minimize(cost, s, method="Nelder-Mead",
                         options=dict(xatol=1e-10, fatol=1e-12, maxiter=20000))
                for s in [np.zeros(p), r, 0.5 * r]), key=lambda res: res.fun)
    assert cost(closed) <= best.fun + 1e-8


def test_lambda_zero_is_rejected_as_unbounded():
    with pytest.raises(ValueError, match="unbounded below"):
        RobustGaussianMixture(2, lam=0.0).fit(_data(0))


@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_feature_scale_does_not_overflow_or_change_labels(scale):
    X = _data(3)
    a = RobustGaussianMixture(3, lam=1.5, random_state=0, n_init=2).fit(X)
    b = RobustGaussianMixture(3, lam=1.5, random_state=0, n_init=2).fit(X * scale)
    assert np.all(np.isfinite(b.objective_history_))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(b.means_ / scale, a.means_, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(), dict(penalty="log")])
def test_n_outliers_on_the_paper_set(kw):
    data = make_blobs_with_outliers(n_outliers=80, random_state=0)
    m = RobustGaussianMixture(4, n_outliers=80, random_state=0, **kw).fit(data.X)
    assert m.n_outliers_ == 80
    _, recall = outlier_precision_recall(data.outlier_mask, m.outlier_mask_)
    assert recall >= 0.95
    assert center_rmse(data.centers, m.means_) < 0.7


@pytest.mark.parametrize("covariance_type", ["tied_diag", "tied"])
def test_n_outliers_other_covariances_with_40_outliers(covariance_type):
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    m = RobustGaussianMixture(4, n_outliers=40, covariance_type=covariance_type,
                              random_state=0).fit(data.X)
    assert m.n_outliers_ == 40
    assert outlier_precision_recall(data.outlier_mask, m.outlier_mask_)[1] >= 0.95
    assert center_rmse(data.centers, m.means_) < 0.5


def test_default_lambda_and_attributes():
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0, 0], [12, 0, 0], [0, 12, 0]])
    X = np.vstack([m + rng.normal(size=(2000, 3)) for m in means])
    # the chi^2 rule (the default is the noise count: tests/test_default_count.py)
    m = RobustGaussianMixture(3, random_state=0, n_init=2, lam="chi2").fit(X)
    assert m.lambda_ == pytest.approx(math.sqrt(16.266), rel=1e-3)   # chi2_3 0.999 quantile
    assert m.n_outliers_ / len(X) < 0.004
    assert m.memberships_.shape == (len(X), 3)
    np.testing.assert_allclose(m.memberships_.sum(1), 1.0)
    assert m.covariances_ == pytest.approx(1.0, rel=0.05)
    assert m.precisions_cholesky_ == pytest.approx(1 / math.sqrt(m.covariances_))
    np.testing.assert_array_equal(m.outlier_mask_, m.labels_ == -1)
    np.testing.assert_allclose(m.outlier_scores_, m.outlier_norms_ / math.sqrt(m.covariances_))


def test_predict_agrees_with_training_labels():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    m = RobustGaussianMixture(4, n_outliers=40, random_state=0).fit(data.X)
    assert np.mean(m.predict(data.X) != m.labels_) <= 0.01
    far = m.means_[0] + 20 * math.sqrt(m.covariances_)
    assert m.predict(far[None])[0] == -1
    assert m.score_samples(far[None])[0] < m.score_samples(m.means_[:1])[0]


def test_bic_aic_count_the_mixture_parameters():
    X = _data(4, n_out=0)
    m = RobustGaussianMixture(3, lam=np.inf, covariance_type="tied", n_init=1, random_state=0,
                              reg_covar=0).fit(X)
    ll = m.score(X) * len(X)
    k = 3 * 3 + 2 + 6
    assert m.bic(X) == pytest.approx(-2 * ll + k * math.log(len(X)))
    assert m.aic(X) == pytest.approx(-2 * ll + 2 * k)


def test_regularization_path_for_the_mixture():
    data = make_blobs_with_outliers(n_outliers=80, random_state=0)
    path = regularization_path(RobustGaussianMixture(4, random_state=0, n_init=2), data.X,
                               n_lambdas=30)
    # lambda_max = max_n ||r_n||_{Sigma^-1} at the plain mixture (EM stopped at
    # tol, so at most the one point on the threshold can cross it)
    assert path.n_outliers[0] <= 1
    assert path.n_outliers[2] >= 1
    assert path.n_outliers[-1] > 200
    assert np.all(np.diff(path.n_outliers[:10]) >= 0)


@pytest.mark.parametrize("X, params, message", [
    (np.array([[0.0, np.nan], [1, 1], [2, 2]]), dict(n_components=2), "NaN"),
    (np.arange(5.0), dict(n_components=2), "Expected 2D array"),
    (_data(0)[:4], dict(n_components=5), "n_samples=4 should be >= n_clusters=5"),
    (_data(0), dict(lam=-1.0), "'lam' parameter"),
    (_data(0), dict(lam=1.0, n_outliers=3), "Give at most one of lam and n_outliers"),
    (_data(0), dict(n_outliers=10**4), "must be smaller than the number of samples"),
    (_data(0), dict(init=np.zeros((2, 3))), r"initial means \(2, 3\)"),
    (_data(0), dict(covariance_type="banded"), "'covariance_type' parameter"),
])
def test_bad_input_is_named(X, params, message):
    with pytest.raises(ValueError, match=message):
        RobustGaussianMixture(**({"n_components": 3} | params)).fit(X)


def test_log_penalty_in_mahalanobis_units_matches_the_formula():
    X = _data(5)
    m = RobustGaussianMixture(3, lam=0.05, penalty="log", eps=0.01, covariance_type="tied",
                              n_init=1, random_state=0).fit(X)
    pen = make_penalty("group", True, 0.01)
    cov = Covariance("full", m.covariances_, 3)
    O = m.outlier_vectors_.toarray()[m.outlier_mask_]
    nll = -m.score_samples(X - m.outlier_vectors_.toarray()).sum()
    assert m.objective_ == pytest.approx(nll + 0.05 * pen.value(cov.whiten(O)).sum(), rel=1e-9)


@pytest.mark.parametrize("covariance_type", ALL_TYPES)
def test_sparse_input_gives_the_dense_result(covariance_type):
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = _data(6)
    X[rng.random(X.shape) < 0.3] = 0.0
    # dense input is centred, sparse is not: converge fully, compare closely.  Without
    # the ratio bound a per-component diagonal covariance collapses onto the points
    # whose feature is exactly 0 (variance 3e-5), where the two converge apart by 3e-6.
    # Near convergence the means still move by up to 1e-6 per iteration while the
    # cost gains less than tol, so rounding alone can stop the two fits one iteration
    # apart (diag at tol=1e-12: 186 and 185 iterations, means 5e-7 apart; tied_diag
    # at 1e-13: 63 and 62, 7.7e-7): the means, about 7 apart, are compared to 3e-6
    ratio = None if covariance_type.startswith("tied") else 100.0
    kw = dict(lam=1.5, covariance_type=covariance_type, init=X[[0, 50, 100]], n_init=1,
              tol=1e-13, max_iter=5000, eigenvalue_ratio=ratio)
    a = RobustGaussianMixture(3, **kw).fit(X)
    b = RobustGaussianMixture(3, **kw).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(a.means_, b.means_, atol=3e-6)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.predict(X), b.predict(sp.csr_matrix(X)))


@pytest.mark.parametrize("covariance_type", ALL_TYPES)
def test_translation_does_not_change_the_fit(covariance_type):
    # distances are expanded as ||x||^2 - 2 x.m + ||m||^2: far from the origin
    # that cancels unless the data are centred
    X = _data(7)
    a = RobustGaussianMixture(3, lam=1.5, covariance_type=covariance_type, random_state=0,
                              n_init=2).fit(X)
    b = RobustGaussianMixture(3, lam=1.5, covariance_type=covariance_type, random_state=0,
                              n_init=2).fit(X + 1e6)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(b.means_ - 1e6, a.means_, atol=1e-6)
    np.testing.assert_allclose(b.covariances_, a.covariances_, rtol=1e-6)
    assert np.all(np.diff(b.objective_history_) <= 1e-9 * abs(b.objective_history_[0]))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.filterwarnings("ignore:Every point is flagged")
def test_float32_input_keeps_the_cost_monotone(weighted):
    X = _data(8).astype(np.float32)
    m = RobustGaussianMixture(3, lam=1.5 if not weighted else 0.3, penalty="log" if weighted else "group",
                              n_init=1, random_state=0, tol=0, max_iter=60).fit(X)
    h = m.objective_history_
    assert np.all(np.diff(h) <= 1e-9 * abs(h[0]))
    assert m.means_.dtype == np.float32


def test_covariance_floor_binds_on_a_constant_feature():
    X = _data(9)
    X[:, 2] = 3.0                      # no variance along the third axis
    m = RobustGaussianMixture(3, lam=2.0, covariance_type="tied", random_state=0,
                              n_init=1, reg_covar=1e-4).fit(X)
    # the floor's scale: the mean of the features' squared normalised MADs (a
    # feature without spread counts its variance, here 0)
    mad = 1.4826 * np.median(np.abs(X - np.median(X, axis=0)), axis=0)
    floor = 1e-4 * np.where(mad > 0, mad**2, X.var(axis=0)).mean()
    assert np.linalg.eigvalsh(m.covariances_).min() == pytest.approx(floor, rel=1e-9)
    assert np.all(np.diff(m.objective_history_) <= 1e-9 * abs(m.objective_history_[0]))
    with pytest.raises(ValueError, match="increase reg_covar"):
        RobustGaussianMixture(3, lam=2.0, covariance_type="tied", random_state=0,
                              reg_covar=0).fit(X)


def test_mixture_path_never_solves_at_lambda_zero():
    X = _data(10)
    with pytest.raises(ValueError, match="lambdas must be > 0"):
        regularization_path(RobustGaussianMixture(3), X, lambdas=[1.0, 0.0])


# -- the stopping rule: EM stops on the objective, as scikit-learn's does ------------------
@pytest.mark.parametrize("covariance_type", ["tied_spherical", "tied"])
def test_em_stops_when_the_objective_gain_per_point_is_below_tol(covariance_type):
    X = make_blobs_with_outliers(n_outliers=80, random_state=0).X
    est = RobustGaussianMixture(4, lam=1.5, covariance_type=covariance_type, n_init=1,
                                random_state=0).fit(X)
    h = np.asarray(est.objective_history_)
    assert est.tol == 1e-4 and est.converged_ and est.n_iter_ == len(h) < 60
    # the last gain is within tol per point
    assert abs(h[-2] - h[-1]) <= 1e-4 * X.shape[0]
    # EM never increases the cost of eq. (8)
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[1:]))


def test_the_new_rule_stops_on_the_iterates_of_the_old_one(monkeypatch):
    # the rule only decides when to stop: the iterates are those the earlier
    # rule (means moving by less than tol of their norm) produced, which on
    # this set ran into max_iter=300 without stopping
    from robustclust._core.models import MixtureModel

    X = make_blobs_with_outliers(n_outliers=80, random_state=0).X
    new = RobustGaussianMixture(4, lam=1.5, n_init=1, random_state=0).fit(X)
    monkeypatch.setattr(MixtureModel, "stops_on_objective", False)
    old = RobustGaussianMixture(4, lam=1.5, n_init=1, random_state=0, tol=1e-6).fit(X)
    assert old.n_iter_ == 300 and not old.converged_
    np.testing.assert_allclose(new.objective_history_, old.objective_history_[:new.n_iter_],
                               rtol=1e-12)


def test_a_smaller_tol_runs_longer_and_lowers_the_cost():
    X = make_blobs_with_outliers(n_outliers=80, random_state=0).X
    fits = [RobustGaussianMixture(4, lam=1.5, n_init=1, random_state=0, tol=tol).fit(X)
            for tol in (1e-2, 1e-4, 1e-6)]
    assert fits[0].n_iter_ < fits[1].n_iter_ < fits[2].n_iter_
    assert fits[0].objective_ > fits[1].objective_ > fits[2].objective_
