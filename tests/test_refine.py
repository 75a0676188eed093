"""Exact trimmed refinement of robust K-means (``refine``): the l0 cost of eq. (3).

From the fitted solution, concentration steps (nearest centre, flag the s
farthest points, centres to the means of the kept points) lower the l0
cost of eq. (3) to a fixed point that flags exactly s points.
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustclust import RobustKMeans, load_model, save_model
from robustclust._core import _concentration
from robustclust._core.refine import (concentration_steps, continued, refine,
                                      separating_critical_lambda, separating_lambda)
from robustclust._core.selection import OutlierCountWarning
from robustclust._core.spaces import PointSpace
from robustclust.datasets import make_blobs_with_outliers


def contaminated(seed, n=60, n_out=10, k=3, dim=2):
    """k Gaussian clusters plus ``n_out`` uniform points on a wide box."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-6, 6, size=(k, dim))
    X = centres[rng.integers(k, size=n)] + rng.normal(size=(n, dim))
    return np.vstack([X, rng.uniform(-15, 15, size=(n_out, dim))])


def l0_cost(X, centres, s, w=None):
    """eq. (3) at fixed centres: all but the s largest (weighted) nearest distances."""
    d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1).min(axis=1)
    costs = d2 if w is None else w * d2
    return float(np.sort(costs)[: len(X) - s].sum())


def fit_pair(X, s, seed, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutlierCountWarning)
        plain = RobustKMeans(3, n_outliers=s, refine=False, random_state=seed, **kw).fit(X)
    refined = RobustKMeans(3, n_outliers=s, random_state=seed, **kw).fit(X)
    return plain, refined


def assert_fixed_point(model, X, s, w=None):
    """The flagged set is the s farthest points and every centre the mean of its kept points."""
    M = model.cluster_centers_
    D = ((X[:, None, :] - M[None]) ** 2).sum(-1)
    nearest = D.argmin(axis=1)
    d2 = D[np.arange(len(X)), nearest]
    costs = d2 if w is None else w * d2
    flagged = model.outlier_mask_
    assert flagged.sum() == s == model.n_outliers_
    if s:
        assert costs[flagged].min() >= costs[~flagged].max()
    kept = ~flagged
    np.testing.assert_array_equal(model.labels_[kept], nearest[kept])
    assert np.all(model.labels_[flagged] == -1)
    ww = np.ones(len(X)) if w is None else w
    for c in range(M.shape[0]):
        members = kept & (nearest == c)
        if ww[members].sum() > 0:
            mean = (ww[members, None] * X[members]).sum(0) / ww[members].sum()
            np.testing.assert_allclose(M[c], mean, rtol=1e-10, atol=1e-10)
    # o_n = x_n - m_{c(n)} on the flagged points, 0 elsewhere
    O = model.outlier_vectors_.toarray()
    np.testing.assert_allclose(O[flagged], X[flagged] - M[nearest[flagged]], atol=1e-10)
    assert not O[kept].any()
    np.testing.assert_allclose(model.objective_, float(costs[kept].sum()), rtol=1e-10)
    np.testing.assert_allclose(model.trimmed_cost_, model.objective_)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), s=st.integers(0, 15), n_init=st.integers(1, 4),
       init=st.sampled_from(["robust", "k-means++", "random"]))
def test_refined_l0_cost_never_exceeds_the_unrefined_fit(seed, s, n_init, init):
    X = contaminated(seed)
    plain, refined = fit_pair(X, s, seed, n_init=n_init, init=init)
    assert refined.trimmed_cost_ <= plain.trimmed_cost_ * (1 + 1e-12) + 1e-12
    # the unrefined fit's trimmed_cost_ is eq. (3) at its own centres
    np.testing.assert_allclose(plain.trimmed_cost_, l0_cost(X, plain.cluster_centers_, s),
                               rtol=1e-9)
    hist = refined.refine_history_
    assert np.all(np.diff(hist) <= 1e-12 * max(1.0, hist[0]))
    assert_fixed_point(refined, X, s)


@pytest.mark.parametrize("seed", range(5))
def test_every_concentration_step_is_non_increasing_from_poor_starts(seed):
    rng = np.random.default_rng(seed)
    X = contaminated(seed, n=200, n_out=60, k=4)
    space = PointSpace(X)
    start = X[rng.choice(len(X), 4, replace=False)]  # random points: many steps
    _, cost, steps, history = concentration_steps(space, start, np.ones(len(X)), 60, 500)
    assert steps >= 2 and len(history) == steps + 1
    assert np.all(np.diff(history) <= 1e-12 * history[0])
    assert history[-1] == cost
    # and each recorded cost is eq. (3) at that step's centres
    np.testing.assert_allclose(history[0], l0_cost(X, start, 60), rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_refined_fit_is_a_fixed_point_with_sample_weights_and_sparse_input(seed):
    import scipy.sparse as sp

    X = contaminated(seed, n=80, n_out=12)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, size=len(X))
    model = RobustKMeans(3, n_outliers=12, random_state=seed).fit(X, sample_weight=w)
    assert_fixed_point(model, X, 12, w)
    sparse = RobustKMeans(3, n_outliers=12, random_state=seed).fit(sp.csr_matrix(X))
    dense = RobustKMeans(3, n_outliers=12, random_state=seed).fit(X)
    np.testing.assert_allclose(sparse.trimmed_cost_, dense.trimmed_cost_, rtol=1e-9)
    assert_fixed_point(sparse, X, 12)


def brute_force_trimmed_kmeans(X, k, s):
    """The global minimum of eq. (3) by enumeration: every trimmed set, every partition."""
    n = len(X)
    best = np.inf
    for T in itertools.combinations(range(n), s):
        kept = np.setdiff1d(np.arange(n), T)
        Y = X[kept]
        # labels of the first kept point fixed to 0 (label symmetry)
        for rest in itertools.product(range(k), repeat=len(Y) - 1):
            labels = np.array((0,) + rest)
            cost = 0.0
            for c in range(k):
                members = Y[labels == c]
                if len(members):
                    cost += ((members - members.mean(0)) ** 2).sum()
            best = min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_refined_fit_reaches_the_brute_force_optimum_on_tiny_data(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) + [6.0, 0.0],
                   rng.uniform(-20, 20, size=(2, 2))])
    exact = brute_force_trimmed_kmeans(X, 2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutlierCountWarning)
        model = RobustKMeans(2, n_outliers=2, random_state=seed).fit(X)
    np.testing.assert_allclose(model.trimmed_cost_, exact, rtol=1e-10)


def test_refinement_helper_equals_many_start_trimmed_kmeans_on_a_larger_set():
    """200 random starts of concentration steps (trimmed k-means) find no lower cost."""
    X = contaminated(7, n=120, n_out=30, k=3)
    model = RobustKMeans(3, n_outliers=30, random_state=0).fit(X)
    rng = np.random.default_rng(0)
    space, w = PointSpace(X), np.ones(len(X))
    best = min(refine(space, X[rng.choice(len(X), 3, replace=False)], w, 30).cost
               for _ in range(200))
    assert model.trimmed_cost_ <= best * (1 + 1e-10)


def test_predict_reproduces_the_refined_labels_through_lambda():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    model = RobustKMeans(4, n_outliers=40, random_state=0).fit(data.X)
    np.testing.assert_array_equal(model.predict(data.X), model.labels_)
    d = np.sqrt(((data.X[:, None] - model.cluster_centers_[None]) ** 2).sum(-1).min(1))
    flagged = model.outlier_mask_
    # lambda_ / 2 separates the flagged distances from the kept ones
    assert d[~flagged].max() < model.lambda_ / 2 < d[flagged].min()
    assert model.unrefined_lambda_ != model.lambda_


def test_separating_lambda_edge_cases():
    trimmed = np.array([False, False, True])
    assert separating_lambda(np.array([1.0, 4.0, 16.0]), trimmed) == 6.0
    assert separating_lambda(np.array([1.0, 4.0, 16.0]), np.zeros(3, bool)) == 8.0
    tie = separating_lambda(np.array([1.0, 4.0, 4.0]), trimmed)  # no lambda flags one of two
    assert tie == 4.0
    assert separating_lambda(np.ones(2), np.ones(2, bool)) == 0.0


def test_separating_critical_lambda_edge_cases():
    """A point is flagged iff lam < its critical lambda."""
    critical = np.array([1.0, 2.0, 5.0, 9.0])
    flagged = np.array([False, False, True, True])
    lam = separating_critical_lambda(critical, flagged)
    assert lam == 3.5
    np.testing.assert_array_equal(critical > lam, flagged)
    assert separating_critical_lambda(critical, np.zeros(4, bool)) == 9.0  # flags none
    assert not np.any(critical > separating_critical_lambda(critical, np.zeros(4, bool)))
    assert separating_critical_lambda(critical, np.ones(4, bool)) == 0.0
    # interleaved (a fixed set): the smallest flagged one
    assert separating_critical_lambda(critical, np.array([False, True, False, True])) == 2.0


def test_refine_false_is_the_paper_estimator_and_auto_skips_what_it_cannot_refine():
    X = contaminated(3)
    plain = RobustKMeans(3, n_outliers=10, refine=False, random_state=0).fit(X)
    assert plain.refine_history_.size == 0 and plain.unrefined_lambda_ == plain.lambda_
    soft = RobustKMeans(3, n_outliers=10, fuzzifier=1.5, random_state=0).fit(X)  # auto: off
    assert soft.refine_history_.size == 0
    default = RobustKMeans(3, random_state=0, lam="chi2").fit(X)  # no count: off
    assert default.refine_history_.size == 0
    # the noise default sets a count, and auto refines it as it would n_outliers
    counted = RobustKMeans(3, random_state=0).fit(X)
    assert counted.refine_history_.size > 0
    assert counted.n_outliers_ == np.count_nonzero(counted.outlier_probability_ > 0.5)
    with pytest.raises(ValueError, match="refine=True needs hard K-means"):
        RobustKMeans(3, n_outliers=10, fuzzifier=1.5, refine=True).fit(X)
    with pytest.raises(ValueError, match="refine=True needs penalty='group'"):
        RobustKMeans(3, n_outliers=10, penalty="log", refine=True).fit(X)
    # refine=True at a given lambda refines at the count that lambda flags
    at_lam = RobustKMeans(3, lam=4.0, refine=False, random_state=0).fit(X)
    refined = RobustKMeans(3, lam=4.0, refine=True, random_state=0).fit(X)
    assert refined.n_outliers_ == at_lam.n_outliers_
    assert refined.trimmed_cost_ <= at_lam.trimmed_cost_ * (1 + 1e-12)
    assert_fixed_point(refined, X, at_lam.n_outliers_)


def test_model_file_round_trips_refine_and_its_attributes(tmp_path):
    X = contaminated(5)
    model = RobustKMeans(3, n_outliers=8, random_state=0).fit(X)
    path = tmp_path / "m.rcmodel"
    save_model(model, path)
    back = load_model(path)
    assert back.refine == "auto"
    assert back.trimmed_cost_ == model.trimmed_cost_
    assert back.unrefined_lambda_ == model.unrefined_lambda_
    np.testing.assert_array_equal(back.predict(X), model.labels_)
    off = RobustKMeans(3, n_outliers=8, refine=False, random_state=0).fit(X)
    save_model(off, path)
    assert load_model(path).refine is False


def test_command_line_refines_by_default_and_unrefined_keeps_the_paper_estimator(tmp_path,
                                                                                   capsys):
    import pandas as pd

    from robustclust.cli import main

    X = contaminated(11)
    pd.DataFrame(X, columns=["a", "b"]).to_csv(tmp_path / "x.csv", index=False)
    for flag, refining in (([], "auto"), (["--unrefined"], False)):
        out = tmp_path / f"out{len(flag)}.csv"
        assert main(["fit", str(tmp_path / "x.csv"), "-k", "3", "-s", "10", "--quiet",
                     "-o", str(out), *flag]) == 0
        labels = pd.read_csv(out)["cluster"].to_numpy()
        model = RobustKMeans(3, n_outliers=10, refine=refining, random_state=0).fit(X)
        np.testing.assert_array_equal(labels, model.labels_)
    assert main(["fit", str(tmp_path / "x.csv"), "-k", "3", "-s", "10", "--method", "gmm",
                 "--unrefined"]) == 2
    assert "--unrefined applies to --method kmeans" in capsys.readouterr().err


def test_compiled_steps_taken_block_by_block_equal_the_numpy_loop():
    # the products with the centres are taken a block of rows at a time
    # (float32 rows converted to float64 block by block; NumPy's product
    # converts the whole of X): more rows than a block, both dtypes and layouts
    rng = np.random.default_rng(3)
    n = 2 * _concentration._block_rows(10**6, 3, 3) + 517  # rows of 3 features, 3 centres
    means = np.array([[0.0, 0.0, 0.0], [5.0, 0.0, 1.0], [0.0, 6.0, -1.0]])
    X64 = means[rng.integers(3, size=n)] + rng.normal(size=(n, 3))
    X64[:300] = rng.uniform(-20, 20, size=(300, 3))
    w = rng.uniform(0.5, 2.0, n)
    centres = X64[[400, 900, 1500]] + 0.5
    for dtype, order in itertools.product((np.float32, np.float64), ("C", "F")):
        X = np.asarray(X64, dtype=dtype, order=order)
        fast = PointSpace(X)
        assert fast.dense is X
        got = concentration_steps(fast, centres, w, 300, 40)
        want = concentration_steps(_numpy_space(X), centres, w, 300, 40)
        assert got[2] == want[2] > 2
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[3], want[3], rtol=1e-12)
        a, b = refine(fast, centres, w, 300), refine(_numpy_space(X), centres, w, 300)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.trimmed, b.trimmed)


def _numpy_space(X):
    """The same points with the compiled steps switched off (the NumPy loop)."""
    space = PointSpace(X)
    space.dense = None
    return space


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(5, 60), p=st.integers(1, 4),
       C=st.integers(1, 4), trim=st.floats(0.0, 0.6), weighted=st.booleans(),
       grid=st.booleans(), layout=st.sampled_from(["C", "F"]),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_compiled_concentration_steps_equal_the_numpy_loop(seed, n, p, C, trim, weighted,
                                                           grid, layout, dtype):
    """The compiled loop (dense float64 or float32 X) takes the NumPy loop's
    steps: the same centres, costs, step count and, at the end, labels and
    trimmed set.  With
    duplicate points and tied costs (``grid``: integer coordinates) the tie rule
    may differ, so there the l0 cost must not increase and the end must be a
    fixed point trimming exactly s points."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, p)).astype(float) if grid else rng.normal(size=(n, p))
    X = np.asarray(X, order=layout, dtype=dtype)
    w = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    C = min(C, n)
    s = min(int(trim * n), n - C)
    centres = X[rng.choice(n, C, replace=False)] + 0.1 * rng.normal(size=(C, p))
    fast = PointSpace(X)
    assert fast.dense is not None
    got = concentration_steps(fast, centres, w, s, 25)
    if grid:
        # tied costs may be trimmed differently (the NumPy loop's partition picks
        # any of them): the compiled loop must still decrease the l0 cost at every
        # step and stop at a fixed point that trims exactly s points
        assert all(b <= a * (1 + 1e-12) + 1e-12 for a, b in zip(got[3], got[3][1:]))
        out = refine(fast, centres, w, s)
        assert out.trimmed.sum() == s
        kept = ~out.trimmed
        d2 = ((X[:, None, :] - out.centres[None]) ** 2).sum(-1)
        np.testing.assert_allclose(out.sq_distances, d2.min(axis=1), atol=1e-9)
        assert out.cost == pytest.approx((w * out.sq_distances)[kept].sum(), abs=1e-9)
        if out.steps < 100:  # a fixed point: the centres are the means of their kept points
            for c in range(C):
                members = kept & (out.labels == c)
                if members.any():
                    np.testing.assert_allclose(
                        out.centres[c], np.average(X[members], axis=0, weights=w[members]),
                        atol=1e-9)
        return
    want = concentration_steps(_numpy_space(X), centres, w, s, 25)
    assert got[2] == want[2]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-12, atol=1e-12)
    a, b = refine(fast, centres, w, s), refine(_numpy_space(X), centres, w, s)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.trimmed, b.trimmed)
    assert a.trimmed.sum() == s
    assert a.cost == pytest.approx(b.cost, rel=1e-12)


def test_compiled_trimming_flags_exactly_s_points_among_ties():
    """Every point at the same distance: the s flagged ones are the first s (the
    compiled loop's tie rule), and the cost is that of the N - s kept points."""
    X = np.array([[1.0], [-1.0]] * 5)  # ten points at distance 1 from the centre 0
    for s in range(0, 9):
        out = refine(PointSpace(X), np.zeros((1, 1)), np.ones(10), s, max_steps=0)
        np.testing.assert_array_equal(np.flatnonzero(out.trimmed), np.arange(s))
        assert out.cost == 10 - s


def test_distances_that_differ_past_their_rounding_are_no_tie():
    # the 14th and 15th farthest points lie 2.168344 and 2.168353 from their
    # centres: 9e-6 apart, far beyond the squared distances' rounding (about
    # 1e-13 here), so exactly s are flagged and nothing warns
    X = contaminated(5553)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierCountWarning)
        model = RobustKMeans(3, n_outliers=15, n_init=1, init="k-means++",
                             random_state=5553).fit(X)
    assert_fixed_point(model, X, 15)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_steps_continued_from_a_capped_refinement_are_the_uninterrupted_ones(compiled):
    # a screened candidate stopped at its cap runs on exactly as if it had not
    # stopped: the same fixed point, history and step count
    X = make_blobs_with_outliers(n_outliers=60, n_per_cluster=700, random_state=2).X
    space = PointSpace(X, compiled=compiled)
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(X))
    centres = X[[0, 1000, 2000, 2500]] + 0.3
    whole = refine(space, centres, w, 60)
    assert whole.settled and whole.steps > 4
    capped = refine(space, centres, w, 60, max_steps=3)
    assert not capped.settled and capped.steps == 3
    again = continued(space, capped, w, 60)
    assert again.steps == whole.steps and again.settled
    assert again.history == whole.history
    np.testing.assert_array_equal(again.centres, whole.centres)
    np.testing.assert_array_equal(again.labels, whole.labels)
    np.testing.assert_array_equal(again.trimmed, whole.trimmed)
    assert continued(space, whole, w, 60) is whole
    # a fixed point reached at the very step of the cap is one (no step more)
    exact = refine(space, centres, w, 60, max_steps=whole.steps)
    assert exact.settled and exact.history == whole.history
    assert continued(space, exact, w, 60) is exact


def test_the_refinement_runs_on_the_candidate_of_smallest_screened_cost(monkeypatch):
    # every candidate gets REFINE_SCREEN_STEPS steps, only the one of smallest
    # cost then more
    from robustclust._core import refine as refine_module

    calls = []
    real = refine_module.refine

    def recorded(space, centres, w, s, max_steps=refine_module.REFINE_MAX_STEPS, fixed=None):
        result = real(space, centres, w, s, max_steps=max_steps, fixed=fixed)
        calls.append((max_steps, np.array(centres), result))
        return result

    monkeypatch.setattr(refine_module, "refine", recorded)
    # a screen of no step: each candidate scored at its start (never settled)
    monkeypatch.setattr(refine_module, "REFINE_SCREEN_STEPS", 0)
    X = make_blobs_with_outliers(n_outliers=40, n_per_cluster=500, random_state=3).X
    model = RobustKMeans(4, n_outliers=40, n_init=3, random_state=0).fit(X)
    screens = [result for steps, _, result in calls if steps == 0]
    assert len(screens) >= 3  # the fitted centres and the starts
    assert not any(r.settled for r in screens)
    best = min(screens, key=lambda r: r.cost)
    rest = [(steps, start) for steps, start, _ in calls if steps != 0]
    assert len(rest) == 1 and rest[0][0] == refine_module.REFINE_MAX_STEPS
    np.testing.assert_array_equal(rest[0][1], best.centres)
    final = calls[-1][2]
    assert final.settled and final.steps > 0
    assert len(model.refine_history_) == 1 + final.steps
