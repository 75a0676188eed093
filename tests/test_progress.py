"""The solvers report every iteration to a listener (the command line's progress bar)."""

from robustclust import RobustGaussianMixture, RobustKMeans, _progress
from robustclust.datasets import make_blobs_with_outliers


def test_every_iteration_of_one_run_is_reported_once():
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    for est in (RobustKMeans(4, lam=3.0, n_init=1, random_state=0),
                RobustGaussianMixture(4, lam=3.0, n_init=1, init="k-means++", random_state=0)):
        ticks = []
        with _progress.listen(lambda: ticks.append(1)):
            est.fit(X)
        assert len(ticks) == est.n_iter_ > 1


def test_restarts_are_reported_and_nothing_outside_the_block():
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    one, five = [], []
    with _progress.listen(lambda: one.append(1)):
        RobustKMeans(4, lam=3.0, n_init=1, random_state=0).fit(X)
    with _progress.listen(lambda: five.append(1)):
        RobustKMeans(4, lam=3.0, n_init=5, random_state=0).fit(X)
    after = len(five)
    RobustKMeans(4, lam=3.0, n_init=5, random_state=0).fit(X)
    _progress.iteration()  # no listener now: a no-op
    assert len(five) == after > len(one)
