"""Dask input: the same answers as in memory, whatever the chunking, on a LocalCluster.

The fixtures run a ``distributed.LocalCluster`` of 2 workers x 1 thread
(threads in this process; one slow test uses processes and kills a worker
mid-fit).  Every test has a timeout: a fit must never hang.
"""

import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from robustclust import KernelRobustKMeans, RobustGaussianMixture, RobustKMeans  # noqa: E402
from robustclust import _progress  # noqa: E402
from robustclust._core import dask_backend  # noqa: E402
from synthetic_data import separated_blobs  # noqa: E402

pytestmark = pytest.mark.timeout(300)

N_CLUSTERS = 4


def _data(n_per_cluster=400, n_outliers=60, p=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    means = np.array([[-4.0, -4.0, 0.0], [4.0, -4.0, 1.0], [-4.0, 4.0, -1.0], [4.0, 4.0, 0.5]])
    means = np.hstack([means, np.zeros((4, max(0, p - 3)))])[:, :p]
    X = np.vstack([m + rng.normal(size=(n_per_cluster, p)) for m in means])
    out = rng.uniform(-14, 14, size=(4 * n_outliers, p))
    far = np.min(((out[:, None, :] - means[None]) ** 2).sum(-1), axis=1) > 7.0**2
    X = np.vstack([X, out[far][:n_outliers]])
    X = X[rng.permutation(len(X))] + 100.0  # off the origin: centring matters
    return X.astype(dtype)


def _init(X, seed=1):
    rng = np.random.default_rng(seed)
    return X[rng.choice(len(X), N_CLUSTERS, replace=False)]


def _blocks(X, n_blocks):
    return da.from_array(X, chunks=(int(np.ceil(len(X) / n_blocks)), -1))


def _assert_same_fit(m, ref, centre_tol=1e-10):
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    np.testing.assert_array_equal(m.labels_.compute(), ref.labels_)
    np.testing.assert_allclose(m.cluster_centers_, ref.cluster_centers_, rtol=0, atol=centre_tol)
    assert m.n_iter_ == ref.n_iter_
    assert m.n_outliers_ == ref.n_outliers_
    assert m.lambda_ == pytest.approx(ref.lambda_, rel=1e-12)
    assert m.objective_ == pytest.approx(ref.objective_, rel=1e-10)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


# -- the core never loads dask ----------------------------------------------------------------
def test_import_and_numpy_fit_do_not_import_dask():
    code = ("import sys, numpy as np\n"
            "import robustclust\n"
            "X = np.random.default_rng(0).normal(size=(200, 2))\n"
            "m = robustclust.RobustKMeans(3, n_outliers=4, n_init=2, random_state=0).fit(X)\n"
            "m.predict(X)\n"
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('dask', 'distributed')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


# -- the threaded scheduler (no client) -------------------------------------------------------
def test_threaded_scheduler_same_answer_as_in_memory():
    X = _data()
    init = _init(X)
    ref = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1).fit(X)
    with dask.config.set(scheduler="threads"):
        m = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1).fit(_blocks(X, 5))
        _assert_same_fit(m, ref)


# -- the same answers as in memory --------------------------------------------------------------
# Dask fits are not refined (``refine``): count fits are compared with refine=False in memory.
CASES = {
    "hard": dict(lam=4.0),
    "soft": dict(lam=4.0, fuzzifier=1.5),
    "weighted": dict(lam=4.0, penalty="log"),
    "hard-count": dict(n_outliers=60, refine=False),
    "weighted-count": dict(n_outliers=60, penalty="log"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_answers_as_in_memory_from_the_same_start(client, case):
    X = _data()
    init = _init(X)
    kw = CASES[case]
    ref = RobustKMeans(N_CLUSTERS, init=init, n_init=1, **kw).fit(X)
    m = RobustKMeans(N_CLUSTERS, init=init, n_init=1, **kw).fit(_blocks(X, 7))
    _assert_same_fit(m, ref)
    if "n_outliers" in kw:
        assert m.n_outliers_ == kw["n_outliers"]
    if "q" in kw:
        np.testing.assert_allclose(m.memberships_.compute(), ref.memberships_, rtol=0,
                                   atol=1e-10)


def test_sample_weight_same_answer_as_in_memory(client):
    X = _data(seed=3)
    w = np.random.default_rng(4).uniform(0.2, 3.0, size=len(X))
    init = _init(X, seed=5)
    ref = RobustKMeans(N_CLUSTERS, refine=False, n_outliers=50, init=init, n_init=1).fit(
        X, sample_weight=w)
    m = RobustKMeans(N_CLUSTERS, refine=False, n_outliers=50, init=init, n_init=1).fit(
        _blocks(X, 6), sample_weight=da.from_array(w, chunks=500))
    _assert_same_fit(m, ref)


def test_default_lambda_same_as_in_memory(client):
    X = _data(seed=6)
    init = _init(X, seed=7)
    # a Dask fit keeps the chi^2 default lambda (lam="chi2" in memory)
    ref = RobustKMeans(N_CLUSTERS, init=init, n_init=1, lam="chi2").fit(X)
    m = RobustKMeans(N_CLUSTERS, init=init, n_init=1).fit(_blocks(X, 4))
    _assert_same_fit(m, ref)


@pytest.mark.parametrize("kw", [dict(lam=4.0),
                                pytest.param(dict(n_outliers=60), marks=pytest.mark.slow),
                                pytest.param(dict(lam=4.0, fuzzifier=1.5), marks=pytest.mark.slow)],
                         ids=["lam", "count", "soft"])
def test_chunking_does_not_change_the_answer(client, kw):
    X = _data(seed=8)
    init = _init(X, seed=9)
    fits = [RobustKMeans(N_CLUSTERS, init=init, n_init=1, **kw).fit(_blocks(X, nb))
            for nb in (1, 7, 64)]
    first = fits[0]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.outlier_indices_, first.outlier_indices_)
        np.testing.assert_array_equal(other.labels_.compute(), first.labels_.compute())
        np.testing.assert_allclose(other.cluster_centers_, first.cluster_centers_, rtol=0,
                                   atol=1e-10)
        assert other.n_iter_ == first.n_iter_


def test_float32_same_outliers_and_labels(client):
    X = _data(seed=10).astype(np.float32)
    init = _init(X, seed=11)
    ref = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1).fit(X)
    m = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1).fit(_blocks(X, 7))
    assert m.cluster_centers_.dtype == np.float32
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    np.testing.assert_array_equal(m.labels_.compute(), ref.labels_)
    # the offsets are float32 means summed in different orders: float32 rounding
    np.testing.assert_allclose(m.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-4)


# -- results ------------------------------------------------------------------------------------
def test_fitted_attributes_and_new_points(client):
    X = _data(seed=12)
    init = _init(X, seed=13)
    ref = RobustKMeans(N_CLUSTERS, refine=False, n_outliers=40, init=init, n_init=1).fit(X)
    Xd = _blocks(X, 5)
    m = RobustKMeans(N_CLUSTERS, refine=False, n_outliers=40, init=init, n_init=1).fit(Xd)
    for name in ("labels_", "outlier_mask_", "outlier_norms_", "memberships_"):
        assert isinstance(getattr(m, name), da.Array), name
    assert isinstance(m.outlier_indices_, np.ndarray) and m.outlier_indices_.dtype == np.int64
    assert isinstance(m.cluster_centers_, np.ndarray)
    assert m.outlier_vectors_ is None
    np.testing.assert_array_equal(m.outlier_mask_.compute(), ref.outlier_mask_)
    np.testing.assert_allclose(m.outlier_norms_.compute(), ref.outlier_norms_, rtol=0,
                               atol=1e-9)
    np.testing.assert_allclose(m.outlier_rows_, ref.outlier_vectors_[ref.outlier_indices_]
                               .toarray(), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(m.memberships_.compute(), ref.memberships_)
    new = _data(n_per_cluster=100, n_outliers=30, seed=14)
    pred = m.predict(_blocks(new, 3))
    assert isinstance(pred, da.Array)
    np.testing.assert_array_equal(pred.compute(), ref.predict(new))
    norms = m.outlier_norms(_blocks(new, 3))
    assert isinstance(norms, da.Array)
    np.testing.assert_allclose(norms.compute(), ref.outlier_norms(new), rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.transform(_blocks(new, 3)).compute(), ref.transform(new),
                               rtol=0, atol=1e-9)
    assert m.score(_blocks(new, 3)) == pytest.approx(ref.score(new), rel=1e-10)
    assert isinstance(m.fit_predict(Xd), da.Array)


def test_dask_dataframe_numeric_columns(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X = _data(seed=15)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["name"] = "x"
    init = _init(X, seed=16)
    ref = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1).fit(X)
    m = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1).fit(
        dd.from_pandas(frame, npartitions=4))
    np.testing.assert_array_equal(m.feature_names_in_, ["a", "b", "c"])
    _assert_same_fit(m, ref)


def test_sampled_start_flags_the_planted_outliers(client):
    X = _data(n_per_cluster=3000, n_outliers=100, seed=17)
    m = RobustKMeans(N_CLUSTERS, refine=False, n_outliers=100, random_state=0).fit(_blocks(X, 8))
    ref = RobustKMeans(N_CLUSTERS, refine=False, n_outliers=100, random_state=0).fit(X)
    assert m.n_outliers_ == 100
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    # another start, the same fixed point: equal to the stopping rule's tolerance
    np.testing.assert_allclose(np.sort(m.cluster_centers_, axis=0),
                               np.sort(ref.cluster_centers_, axis=0), rtol=0, atol=1e-3)


def test_weighted_median_is_exact(client, monkeypatch):
    """The histogram refinement of the default lambda's median equals numpy's."""
    monkeypatch.setattr(dask_backend, "QUANTILE_GATHER", 40)
    monkeypatch.setattr(dask_backend, "QUANTILE_BINS", 8)
    X = _data(seed=18)
    X[:300] = X[300]  # ties
    w = np.random.default_rng(19).uniform(0.1, 2.0, size=len(X))
    init = _init(X, seed=20)
    m = RobustKMeans(N_CLUSTERS, lam=np.inf, init=init, n_init=1).fit(X, sample_weight=w)
    from robustclust._core.dask_backend import DaskSolver, weighted_quantile
    from robustclust._core.models import KMeansModel
    from robustclust._core.penalties import make_penalty

    solver = DaskSolver(_blocks(X, 7), da.from_array(w, chunks=((len(X) + 6) // 7,)),
                        KMeansModel(N_CLUSTERS), make_penalty("group"))
    state = solver.init_state(m.cluster_centers_)
    d2 = ((X[:, None, :] - m.cluster_centers_[None]) ** 2).sum(-1).min(1)
    # a quantile inside the 300 tied values: more than QUANTILE_GATHER in one value
    tie = d2[300]
    order = np.argsort(d2, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    inside_tie = 0.5 * (cum[d2[order] < tie][-1] + cum[d2[order] <= tie][-1])
    for q in (0.5, 0.1, 0.9, inside_tie):
        before = solver.passes
        got = weighted_quantile(solver, state, q)
        want = np.quantile(d2, q, weights=w, method="inverted_cdf")
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert solver.passes - before > 2  # the refinement ran: nothing gathered whole
    assert weighted_quantile(solver, state, inside_tie) == pytest.approx(tie, rel=1e-9)


# -- the scheduler ---------------------------------------------------------------------------------
def _n_tasks(client, settle=5.0):
    """Tasks the scheduler holds once the releases of finished work have reached it
    (on a loaded machine they trail the fit: 41 tasks instead of 19 were counted
    right after a 50-iteration fit): two equal counts 0.3 s apart, within ``settle``
    seconds."""
    deadline = time.monotonic() + settle
    count = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
    while time.monotonic() < deadline:
        time.sleep(0.3)
        again = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        if again == count:
            break
        count = again
    return count


def test_task_table_does_not_grow_with_iterations(client):
    X = _data(seed=21)
    Xd = _blocks(X, 6).persist()
    init = _init(X, seed=22)
    counts = []
    models = []
    for iters in (5, 50):
        m = RobustKMeans(N_CLUSTERS, lam=4.0, init=init, n_init=1, tol=0.0,
                         max_iter=iters).fit(Xd)
        models.append(m)
        assert m.n_iter_ == iters
        counts.append(_n_tasks(client))
    assert counts[1] - counts[0] <= 2 * Xd.numblocks[0] + 4, counts


# -- bad input ------------------------------------------------------------------------------------
def test_bad_input_gets_clear_errors(client):
    X = _data(seed=23)
    bad = X.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        RobustKMeans(N_CLUSTERS, lam=4.0).fit(_blocks(bad, 3))
    with pytest.raises(ValueError, match="2-D"):
        RobustKMeans(N_CLUSTERS, lam=4.0).fit(da.from_array(X[:, 0], chunks=100))
    with pytest.raises(ValueError, match="elementwise"):
        RobustKMeans(N_CLUSTERS, lam=4.0, penalty="elementwise").fit(_blocks(X, 3))
    with pytest.raises(TypeError, match="does not fit Dask arrays"):
        KernelRobustKMeans(N_CLUSTERS, lam=4.0).fit(_blocks(X, 3))
    with pytest.raises(ValueError, match="sample_weight"):
        RobustKMeans(N_CLUSTERS, lam=4.0).fit(_blocks(X, 3), sample_weight=-np.ones(len(X)))
    m = RobustKMeans(N_CLUSTERS, lam=4.0, init=_init(X), n_init=1).fit(_blocks(X, 3))
    with pytest.raises(ValueError, match="features"):
        m.predict(da.from_array(X[:, :2], chunks=100))


# -- processes, and a worker killed mid-fit ---------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(420)
def test_worker_killed_mid_fit_same_answer():
    X = _data(seed=24)
    init = _init(X, seed=25)
    kw = dict(n_outliers=60, init=init, n_init=1, refine=False)
    ref = RobustKMeans(N_CLUSTERS, **kw).fit(X)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        m = RobustKMeans(N_CLUSTERS, **kw).fit(_blocks(X, 6))
        _assert_same_fit(m, ref)
        pids = c.run(os.getpid)
        victim = pids[sorted(pids)[0]]
        killed = threading.Event()

        def kill_when_the_search_begins(phase):
            # the first phase is the count's lambda search: every evaluation
            # after it runs on the one worker left (the killed one's blocks
            # are recomputed)
            if phase is not None and not killed.is_set():
                killed.set()
                os.kill(victim, signal.SIGKILL)

        with _progress.listen(lambda: None, phases=kill_when_the_search_begins):
            m2 = RobustKMeans(N_CLUSTERS, **kw).fit(_blocks(X, 6))
        assert killed.is_set()
        _assert_same_fit(m2, ref)


# -- the mixture --------------------------------------------------------------------------------
COVARIANCES = ("tied_spherical", "tied_diag", "tied")   # one covariance for all components
#: the kind of MixtureModel (the common covariance) of each type
KIND = {"tied_spherical": "spherical", "tied_diag": "diag", "tied": "full"}


# A Dask mixture fit is not refined yet (the trimmed refinement runs on NumPy input):
# its in-memory reference is the penalized fit, refine=False.
def _assert_same_mixture(m, ref, X):
    """The Dask fit ``m`` is the in-memory fit ``ref``: same outliers and labels,
    parameters and objective to 1e-10 (means relative to their spread about X's mean)."""
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    np.testing.assert_array_equal(m.labels_.compute(), ref.labels_)
    spread = np.abs(ref.means_ - X.mean(axis=0)).max()
    np.testing.assert_allclose(m.means_, ref.means_, rtol=0, atol=1e-10 * spread)
    np.testing.assert_allclose(m.weights_, ref.weights_, rtol=1e-10, atol=0)
    np.testing.assert_allclose(m.covariances_, ref.covariances_, rtol=1e-10,
                               atol=1e-10 * np.abs(ref.covariances_).max())
    assert m.n_iter_ == ref.n_iter_
    assert m.converged_ == ref.converged_
    assert m.n_outliers_ == ref.n_outliers_
    assert m.lambda_ == pytest.approx(ref.lambda_, rel=1e-12)
    assert m.unweighted_lambda_ == pytest.approx(ref.unweighted_lambda_, rel=1e-12)
    assert m.objective_ == pytest.approx(ref.objective_, rel=1e-10)
    np.testing.assert_allclose(m.objective_history_, ref.objective_history_, rtol=1e-10)


MIXTURE_CASES = {
    "lam": dict(lam=3.0),
    "weighted": dict(lam=3.0, penalty="log"),
    "count": dict(n_outliers=60),
}


@pytest.mark.parametrize("case", list(MIXTURE_CASES))
@pytest.mark.parametrize("covariance_type", COVARIANCES)
def test_mixture_same_answers_as_in_memory_from_the_same_means(client, covariance_type, case):
    X = _data()
    init = _init(X)
    kw = dict(covariance_type=covariance_type, init=init, n_init=1, **MIXTURE_CASES[case])
    ref = RobustGaussianMixture(N_CLUSTERS, refine=False, **kw).fit(X)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(_blocks(X, 7))
    _assert_same_mixture(m, ref, X)
    assert ref.n_outliers_ > 40  # the planted points are flagged (60 far ones)
    if case == "count":
        assert m.n_outliers_ == 60
    np.testing.assert_allclose(m.memberships_.compute(), ref.memberships_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("covariance_type, kw", [
    ("tied_spherical", dict()), ("tied", dict()),
    ("tied_diag", dict(n_outliers=50, penalty="log"))],
    ids=["default-spherical", "default-full", "weighted-count-diag"])
def test_mixture_default_lambda_and_weighted_count_as_in_memory(client, covariance_type, kw):
    X = _data(seed=30)
    init = _init(X, seed=31)
    kw = dict(covariance_type=covariance_type, init=init, n_init=1, **kw)
    # a Dask fit keeps the chi^2 default lambda (lam="chi2" in memory)
    chi2 = {} if "n_outliers" in kw else {"lam": "chi2"}
    ref = RobustGaussianMixture(N_CLUSTERS, refine=False, **chi2, **kw).fit(X)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(_blocks(X, 5))
    _assert_same_mixture(m, ref, X)
    if "n_outliers" in kw:
        assert m.n_outliers_ == kw["n_outliers"]


@pytest.mark.parametrize("n", [1201, 1200])
@pytest.mark.parametrize("covariance_type", COVARIANCES)
def test_mixture_initial_parameters_equal_in_memory(client, monkeypatch, covariance_type, n):
    """pi and Sigma from the initial means (the exact median of an odd or even count,
    ties included, through the histogram refinement) equal MixtureModel.initial_parameters."""
    from robustclust._core.dask_backend import DaskMixtureSolver
    from robustclust._core.geometry import LinearGeometry
    from robustclust._core.models import MixtureModel
    from robustclust._core.penalties import make_penalty
    from robustclust._core.solver import Solver

    monkeypatch.setattr(dask_backend, "QUANTILE_GATHER", 30)
    monkeypatch.setattr(dask_backend, "QUANTILE_BINS", 8)
    X = _data(seed=32)[:n] - 100.0
    X[:200] = X[200]  # ties at the median's side
    centers = _init(X, seed=33).astype(np.float64)
    model = MixtureModel(N_CLUSTERS, KIND[covariance_type], 1e-6, X.shape[1])
    penalty = make_penalty("group")
    _, weights, cov = model.initial_parameters(Solver(LinearGeometry(X), model, penalty),
                                                centers)
    solver = DaskMixtureSolver(_blocks(X, 7), da.ones(n, chunks=((n + 6) // 7,)), model,
                               penalty)
    got_weights, got_cov = solver.initial_parameters(centers)
    np.testing.assert_allclose(got_weights, weights, rtol=1e-15, atol=0)
    np.testing.assert_allclose(got_cov.value, cov.value, rtol=1e-12,
                               atol=1e-12 * np.abs(cov.value).max())
    assert solver.passes > 3  # the histogram refinement ran
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1).min(1)
    assert (n % 2 == 0) == (np.median(d2) not in d2)  # an even count averages two values


@pytest.mark.parametrize("covariance_type", ["tied_spherical", "tied"])
def test_mixture_chunking_does_not_change_the_answer(client, covariance_type):
    X = _data(seed=34)
    init = _init(X, seed=35)
    kw = dict(lam=3.0, covariance_type=covariance_type, init=init, n_init=1)
    fits = [RobustGaussianMixture(N_CLUSTERS, **kw).fit(_blocks(X, nb)) for nb in (1, 7, 64)]
    first = fits[0]
    spread = np.abs(first.means_ - X.mean(axis=0)).max()
    assert first.n_outliers_ > 40
    for other in fits[1:]:
        np.testing.assert_array_equal(other.outlier_indices_, first.outlier_indices_)
        np.testing.assert_array_equal(other.labels_.compute(), first.labels_.compute())
        np.testing.assert_allclose(other.means_, first.means_, rtol=0, atol=1e-10 * spread)
        assert other.n_iter_ == first.n_iter_
        assert other.objective_ == pytest.approx(first.objective_, rel=1e-10)


def test_mixture_fitted_attributes_and_new_points(client):
    X = _data(seed=36)
    init = _init(X, seed=37)
    kw = dict(n_outliers=40, covariance_type="tied_diag", init=init, n_init=1)
    ref = RobustGaussianMixture(N_CLUSTERS, refine=False, **kw).fit(X)
    Xd = _blocks(X, 5)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(Xd)
    for name in ("labels_", "memberships_", "outlier_mask_", "outlier_norms_",
                 "outlier_scores_"):
        assert isinstance(getattr(m, name), da.Array), name
    for name in ("means_", "weights_", "covariances_", "precisions_cholesky_"):
        assert isinstance(getattr(m, name), np.ndarray), name
    assert m.outlier_indices_.dtype == np.int64 and m.outlier_vectors_ is None
    np.testing.assert_array_equal(m.outlier_mask_.compute(), ref.outlier_mask_)
    np.testing.assert_allclose(m.outlier_norms_.compute(), ref.outlier_norms_, rtol=0,
                               atol=1e-9)
    np.testing.assert_allclose(m.outlier_scores_.compute(), ref.outlier_scores_, rtol=0,
                               atol=1e-9)
    np.testing.assert_allclose(m.outlier_rows_, ref.outlier_vectors_[ref.outlier_indices_]
                               .toarray(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.precisions_cholesky_, ref.precisions_cholesky_, rtol=1e-10)
    new = _data(n_per_cluster=100, n_outliers=30, seed=38)
    new_d = _blocks(new, 3)
    for method in ("predict", "predict_proba", "score_samples"):
        got = getattr(m, method)(new_d)
        assert isinstance(got, da.Array), method
        np.testing.assert_allclose(got.compute(), getattr(ref, method)(new), rtol=0,
                                   atol=1e-9, err_msg=method)
    assert m.score(new_d) == pytest.approx(ref.score(new), rel=1e-10)
    assert m.bic(new_d) == pytest.approx(ref.bic(new), rel=1e-10)
    assert m.aic(new_d) == pytest.approx(ref.aic(new), rel=1e-10)
    assert isinstance(m.fit_predict(Xd), da.Array)


def test_mixture_dask_dataframe_numeric_columns(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X = _data(seed=39)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["name"] = "x"
    init = _init(X, seed=40)
    kw = dict(lam=3.0, covariance_type="tied", init=init, n_init=1)
    ref = RobustGaussianMixture(N_CLUSTERS, **kw).fit(X)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(dd.from_pandas(frame, npartitions=4))
    np.testing.assert_array_equal(m.feature_names_in_, ["a", "b", "c"])
    _assert_same_mixture(m, ref, X)


def test_mixture_sampled_start_flags_the_planted_outliers(client):
    X = _data(n_per_cluster=3000, n_outliers=100, seed=41)
    kw = dict(n_outliers=100, covariance_type="tied", random_state=0, tol=1e-8)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(_blocks(X, 8))
    ref = RobustGaussianMixture(N_CLUSTERS, refine=False, **kw).fit(X)
    assert m.n_outliers_ == 100
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    # another start, the same fixed point: equal to the stopping rule's tolerance
    np.testing.assert_allclose(np.sort(m.means_, axis=0), np.sort(ref.means_, axis=0),
                               rtol=0, atol=1e-3)


def test_mixture_task_table_does_not_grow_with_iterations(client):
    X = _data(seed=21)
    Xd = _blocks(X, 6).persist()
    init = _init(X, seed=22)
    counts = []
    models = []
    for iters in (5, 50):
        m = RobustGaussianMixture(N_CLUSTERS, lam=3.0, covariance_type="tied", init=init,
                                  n_init=1, tol=0.0, max_iter=iters).fit(Xd)
        models.append(m)
        assert m.n_iter_ == iters
        counts.append(_n_tasks(client))
    assert counts[1] - counts[0] <= 2 * Xd.numblocks[0] + 4, counts


def test_mixture_float32_same_outliers_and_labels(client):
    X = _data(seed=43).astype(np.float32)
    init = _init(X, seed=44)
    kw = dict(lam=3.0, covariance_type="tied_diag", init=init, n_init=1)
    ref = RobustGaussianMixture(N_CLUSTERS, **kw).fit(X)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(_blocks(X, 7))
    assert m.means_.dtype == np.float32
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    np.testing.assert_array_equal(m.labels_.compute(), ref.labels_)
    # the offsets are float32 means summed in different orders: float32 rounding
    np.testing.assert_allclose(m.means_, ref.means_, rtol=0, atol=1e-4)


def test_mixture_bad_input_gets_clear_errors(client):
    X = _data(seed=42)
    with pytest.raises(ValueError, match="unbounded below"):
        RobustGaussianMixture(N_CLUSTERS, lam=0.0).fit(_blocks(X, 3))
    with pytest.raises(ValueError, match="initial means"):
        RobustGaussianMixture(N_CLUSTERS, lam=3.0, init=X[:2]).fit(_blocks(X, 3))


@pytest.mark.parametrize("covariance_type", ["spherical", "diag", "full"])
def test_per_component_covariances_are_refused_on_dask_with_the_supported_types(
        client, covariance_type):
    X = _data(seed=43)
    with pytest.raises(ValueError, match=f"covariance_type='{covariance_type}' \\(one "
                       "covariance per component\\) is not supported on Dask arrays yet; the "
                       "common ones are: 'tied_spherical' \\(the paper's\\), 'tied_diag' and "
                       "'tied'"):
        RobustGaussianMixture(N_CLUSTERS, lam=3.0, covariance_type=covariance_type,
                              n_init=1).fit(_blocks(X, 3))


@pytest.mark.parametrize("estimator", [RobustKMeans, RobustGaussianMixture])
def test_a_dask_count_fit_says_it_is_not_refined(client, estimator):
    # in memory refine="auto" refines a count fit; on Dask the penalized fit of the
    # count is kept, and the fit says so instead of differing silently
    X = _data(seed=44)
    Xd = _blocks(X, 3)
    kw = dict(n_outliers=60, init=_init(X), n_init=1)
    with pytest.warns(UserWarning, match="this count fit on Dask data is not refined: the "
                      "trimmed refinement runs on NumPy input only") as record:
        m = estimator(N_CLUSTERS, **kw).fit(Xd)
    assert all(w.filename == __file__ for w in record
               if "not refined" in str(w.message))     # the user's line
    ref = estimator(N_CLUSTERS, refine=False, **kw).fit(X)
    np.testing.assert_array_equal(m.outlier_indices_, ref.outlier_indices_)
    refined = estimator(N_CLUSTERS, **kw).fit(X)
    assert refined.trimmed_cost_ <= ref.trimmed_cost_
    with pytest.raises(ValueError, match="refine=True needs NumPy input: the trimmed "
                       "refinement does not run on Dask arrays yet"):
        estimator(N_CLUSTERS, refine=True, **kw).fit(Xd)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # refine=False, or no count: nothing to say
        estimator(N_CLUSTERS, refine=False, **kw).fit(Xd)
        estimator(N_CLUSTERS, lam=3.0, init=kw["init"], n_init=1).fit(Xd)


@pytest.mark.parametrize("covariance_type", COVARIANCES)
def test_mixture_initial_parameters_and_ratio_bound_as_in_memory(client, covariance_type):
    # initial means, weights and precisions start the Dask fit as they do in memory, and
    # the eigenvalue-ratio bound holds there too
    X = _data(seed=44)
    X[:, 0] *= 4.0                       # an elongated common covariance: the bound binds
    p = X.shape[1]
    precisions = {"tied_spherical": 0.5, "tied_diag": np.full(p, 0.5),
                  "tied": 0.5 * np.eye(p)}[covariance_type]
    kw = dict(lam=3.0, covariance_type=covariance_type,
              init={"means": _init(X, seed=45), "weights": np.full(N_CLUSTERS, 1.0 / N_CLUSTERS),
                    "precisions": precisions},
              eigenvalue_ratio=2.0, n_init=1)
    ref = RobustGaussianMixture(N_CLUSTERS, **kw).fit(X)
    m = RobustGaussianMixture(N_CLUSTERS, **kw).fit(_blocks(X, 7))
    _assert_same_mixture(m, ref, X)
    vals = np.linalg.eigvalsh(np.atleast_2d(np.diag(m.covariances_) if m.covariances_.ndim == 1
                                            else m.covariances_))
    assert vals.max() <= 2.0 * vals.min() * (1 + 1e-9)


# -- k-means|| ----------------------------------------------------------------------------------
def _separated_blobs(seed):
    """N_CLUSTERS clusters of 1,500 points 20 apart and 60 points 60-120 away."""
    return separated_blobs(seed, k=N_CLUSTERS, n_per=1500, n_far=60, offset=100.0)


@pytest.mark.parametrize("estimator", [RobustKMeans, RobustGaussianMixture])
def test_kmeans_parallel_start_recovers_the_clusters_and_flags_the_far_points(client, estimator):
    from sklearn.metrics import adjusted_rand_score

    for seed in (0, 1):
        X, y = _separated_blobs(seed)
        m = estimator(N_CLUSTERS, init="k-means||", n_outliers=60, random_state=seed).fit(
            _blocks(X, 6))
        inliers = y >= 0
        assert adjusted_rand_score(y[inliers], m.labels_.compute()[inliers]) == 1.0
        np.testing.assert_array_equal(m.outlier_indices_, np.flatnonzero(~inliers))


def test_kmeans_parallel_candidates_the_same_in_any_blocks_and_in_memory(client):
    from robustclust._core.dask_backend import run_blocks
    from robustclust._core.starts import kmeans_parallel_block, kmeans_parallel_candidates

    X, _ = _separated_blobs(2)
    n = len(X)
    w = np.random.default_rng(5).uniform(0.5, 2.0, n)
    for weights in (np.ones(n), w):
        ref = kmeans_parallel_candidates(
            lambda spec: [kmeans_parallel_block(X, weights, 0, spec)], N_CLUSTERS, key=77)
        for nb in (1, 7, 64):
            Xd = _blocks(X, nb)
            wd = da.from_array(weights, chunks=(Xd.chunks[0],))
            got = kmeans_parallel_candidates(
                lambda spec: run_blocks(Xd, wd, kmeans_parallel_block, spec), N_CLUSTERS, key=77)
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_array_equal(got[1], ref[1])
            assert got[2] == ref[2]
        if weights is w:
            assert ref[1].sum() == pytest.approx(w.sum(), rel=1e-12)
        else:
            assert ref[1].sum() == n  # the candidates' weights count every point once
    other = kmeans_parallel_candidates(lambda spec: [kmeans_parallel_block(X, w, 0, spec)],
                                       N_CLUSTERS, key=78)
    assert other[0].shape != ref[0].shape or not np.array_equal(other[0], ref[0])


def test_kmeans_parallel_fit_the_same_in_any_blocks_and_in_memory(client):
    X, _ = _separated_blobs(3)
    kw = dict(init="k-means||", n_init=1, n_outliers=60, refine=False, random_state=4)
    ref = RobustKMeans(N_CLUSTERS, **kw).fit(X)
    fits = [RobustKMeans(N_CLUSTERS, **kw).fit(_blocks(X, nb)) for nb in (1, 7, 64)]
    for m in fits:
        _assert_same_fit(m, ref)
    again = RobustKMeans(N_CLUSTERS, **kw).fit(_blocks(X, 7))
    np.testing.assert_array_equal(again.cluster_centers_, fits[1].cluster_centers_)
