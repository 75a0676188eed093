"""What a fit holds in memory (issue 44): ``copy_x=False`` centres X where it
lies and gives it back; the states a search keeps between runs (the compiled
pass's, in k-row form: ``_pass_states.park``) change no result.

The peaks against a file's size are measured by ``benchmarks/bench_memory.py``.
"""

import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from robustclust import RobustKMeans, regularization_path
from robustclust._core import _fused, _pass_states
from robustclust._core.state import State, no_outliers

EPS = np.finfo(np.float64).eps


def far_blobs(n=20_000, p=4, seed=0):
    """Four blobs 1000 from the origin (so that centring changes every value),
    1% of the rows scattered far around them."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, p)) * 20 + 1000.0
    X = centres[rng.integers(4, size=n)] + rng.normal(size=(n, p))
    k = n // 100
    X[:k] += rng.normal(size=(k, p)) * 200
    return X


def assert_same_fit(a, b):
    for name in ("labels_", "cluster_centers_", "outlier_norms_"):
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.lambda_ == b.lambda_
    assert a.objective_ == b.objective_
    assert a.n_iter_ == b.n_iter_


def assert_given_back(X, before):
    """X holds its values again, to the rounding of subtracting and adding the
    offset (an ulp or two of the largest magnitude)."""
    np.testing.assert_allclose(X, before, rtol=0, atol=4 * EPS * np.abs(before).max())


@pytest.mark.parametrize("params", [{"n_outliers": 200}, {"lam": 40.0}, {}],
                         ids=["count", "lambda", "default"])
def test_copy_x_false_gives_the_same_fit_and_x_back(params):
    X = far_blobs()
    before = X.copy()
    copied = RobustKMeans(4, random_state=0, **params).fit(before.copy())
    in_place = RobustKMeans(4, random_state=0, copy_x=False, **params).fit(X)
    assert_same_fit(copied, in_place)
    assert_given_back(X, before)
    assert in_place.n_outliers_ > 0


def test_copy_x_false_holds_no_copy_of_x():
    X = far_blobs(200_000)
    RobustKMeans(4, lam=40.0, random_state=0).fit(X[-5000:].copy())  # compile first
    peaks = {}
    for copy_x in (True, False):
        Y = X.copy()
        tracemalloc.start()
        try:
            RobustKMeans(4, lam=40.0, random_state=0, copy_x=copy_x).fit(Y)
            peaks[copy_x] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[True] - peaks[False] >= 0.9 * X.nbytes, peaks


def test_copy_x_false_gives_x_back_when_the_fit_fails(monkeypatch):
    X = far_blobs(3000)
    before = X.copy()
    centred = []

    def fail(self, geometry):
        centred.append(np.shares_memory(geometry.X, X))
        raise RuntimeError("stopped after the centring")

    monkeypatch.setattr(RobustKMeans, "_make_model", fail)
    with pytest.raises(RuntimeError, match="stopped after the centring"):
        RobustKMeans(4, lam=40.0, copy_x=False).fit(X)
    assert centred == [True]  # the fit did work on X itself
    assert_given_back(X, before)


def test_copy_x_false_gives_x_back_when_its_values_are_refused():
    # values spanning more magnitudes than the squared distances can hold are
    # refused after the centring; X is given back all the same
    X = far_blobs(3000)
    X[0, 0], X[1, 1] = 1e300, 1e-300
    before = X.copy()
    with pytest.raises(ValueError, match="orders of magnitude"):
        RobustKMeans(4, lam=40.0, copy_x=False).fit(X)
    # to the rounding of the bulk's offset (centred, they would be 1000 off)
    bulk = np.ones(X.shape, bool)
    bulk[0, 0] = False
    np.testing.assert_allclose(X[bulk], before[bulk], rtol=0,
                               atol=4 * EPS * np.abs(before[bulk]).max())
    assert abs(X[0, 0] - before[0, 0]) <= 4 * EPS * before[0, 0]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_copy_x_false_copies_values_whose_differences_overflow():
    # x - offset would overflow: X is not changed at all (the fit refuses the
    # values as with a copy)
    X = far_blobs(3000)
    X[:, 0] = -1e308  # the column's median; row 0 lies 2.7e308 from it
    X[0, 0] = 1.7e308
    before = X.copy()
    with pytest.raises(ValueError, match="overflows"):
        RobustKMeans(4, lam=40.0, copy_x=False).fit(X)
    assert_array_equal(X, before)


def _read_only(X):
    X.flags.writeable = False
    return X


@pytest.mark.parametrize("make", [_read_only, np.asfortranarray, lambda X: X.tolist()],
                         ids=["read-only", "fortran", "list"])
def test_copy_x_false_leaves_input_it_cannot_centre_untouched(make):
    X = make(far_blobs(3000))
    before = np.array(X, copy=True)
    RobustKMeans(4, lam=40.0, random_state=0, copy_x=False).fit(X)
    assert_array_equal(np.asarray(X), before)


def test_a_path_of_a_copy_x_false_estimator_leaves_x_untouched():
    # the path builds its problem outside fit: it centres a copy
    X = far_blobs(3000)
    before = X.copy()
    regularization_path(RobustKMeans(4, random_state=0, copy_x=False), X, n_lambdas=3)
    assert_array_equal(X, before)


@pytest.mark.parametrize("params", [{"n_outliers": 200}, {"lam": 40.0}, {},
                                    {"n_outliers": 200, "penalty": "log"},
                                    {"n_outliers": 200, "refine": False}],
                         ids=["count", "lambda", "default", "log-count", "unrefined-count"])
def test_states_kept_in_k_row_form_change_no_result(monkeypatch, params):
    """Parking a finished run's state (its flagged rows only, the costs dropped
    where it is kept as a start) is invisible: the fit equals the one that
    keeps every per-point vector."""
    X = far_blobs()
    parked = RobustKMeans(4, random_state=0, **params).fit(X)
    monkeypatch.setattr(_fused, "park", lambda state: state)
    monkeypatch.setattr(_pass_states, "as_start", lambda state: state)
    whole = RobustKMeans(4, random_state=0, **params).fit(X)
    assert_same_fit(parked, whole)
    assert parked.n_outliers_ > 0
    # the starts' byte labels never reach the fitted attributes
    assert parked.labels_.dtype == whole.labels_.dtype == np.intp
    assert_array_equal(parked.memberships_, whole.memberships_)


def test_hard_memberships_do_not_follow_a_changed_labels_array():
    # memberships_ is built when first read, from labels of the fit's own
    # (labels_, which fit_predict returns, is the user's to change)
    X = far_blobs(3000)
    want = RobustKMeans(4, n_outliers=30, random_state=0).fit(X).memberships_
    model = RobustKMeans(4, n_outliers=30, random_state=0)
    labels = model.fit_predict(X)
    labels[labels == 2] = 7
    labels[labels == 0] = 1
    assert_array_equal(model.memberships_, want)
    assert want.sum(axis=1).min() == 1


def test_a_start_keeps_byte_labels_and_a_run_from_it_reads_them_whole():
    X = far_blobs(3000)
    model = RobustKMeans(4, n_outliers=30, random_state=0).fit(X)
    labels = np.where(model.labels_ < 0, 0, model.labels_)
    parked = State(model.cluster_centers_, None, labels.astype(np.intp), None,
                   no_outliers(len(X)), None, 0.0, pending=(None, None, "any", {"parked": True}))
    start = _pass_states.as_start(parked)
    assert start.labels.dtype == np.uint8 and start.pending[3] == {"parked": True}
    assert_array_equal(start.labels, labels)
    whole = _pass_states.full_labels(start)
    assert whole.labels.dtype == np.intp
    assert_array_equal(whole.labels, labels)


@pytest.mark.parametrize("params", [{"n_outliers": 0.01}, {}], ids=["count", "default"])
def test_a_count_fit_of_narrow_rows_holds_about_three_times_x(params):
    # the count search keeps its bracket and starts without costs and with
    # byte labels, the refinement takes its products a block of rows at a
    # time, the fitted attributes share the labels: a count fit of 200,000 x 4
    # rows (X centred in place) allocates at most 3.3 times X's size (3.9
    # before; benchmarks/bench_memory.py measures the command line's peak)
    X = far_blobs(200_000)
    RobustKMeans(4, random_state=0, **params).fit(X[-6000:].copy())  # compile first
    tracemalloc.start()
    try:
        model = RobustKMeans(4, random_state=0, copy_x=False, **params).fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.n_outliers_ >= 1000
    assert peak <= 3.3 * X.nbytes, peak / X.nbytes
