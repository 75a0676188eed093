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


def _phases_of(fit):
    seen, ticks = [], []
    with _progress.listen(lambda: ticks.append(seen[-1] if seen else None),
                          lambda phase: seen.append(phase)):
        fit()
    return seen, ticks


def test_a_noise_model_fit_and_a_count_search_name_their_phases_with_totals():
    import numpy as np

    from robustclust._core import noise
    from robustclust._core.starts import NOISE_COUNT_STARTS

    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    seen, ticks = _phases_of(lambda: RobustKMeans(4, random_state=0).fit(X))
    names = [p.name for p in seen if p is not None]
    assert "noise model (the default count)" in names and "starts" in names
    assert "refinement" in names
    by_name = {p.name: p for p in seen if p is not None}
    assert by_name["noise model (the default count)"].total == noise.MAX_EM_ITER
    # every step falls inside a phase of known total, and no phase overruns it
    counts = {}  # by identity: a phase entered twice is two phases
    for phase in ticks:
        assert phase is not None and phase.total is not None
        counts[id(phase)] = counts.get(id(phase), 0) + 1
    assert all(counts.get(id(p), 0) <= p.total for p in seen if p is not None)
    # the starts (the noise model's, then the fit's own) report one step each, all
    starts = [p for p in seen if p is not None and p.name == "starts"]
    assert len(starts) == 2
    assert all(sum(1 for t in ticks if t is p) == p.total for p in starts)
    assert starts[1].total == NOISE_COUNT_STARTS
    assert seen[-1] is None  # the fit ends outside any phase
    # a count search: its evaluations against the search's budget
    seen, ticks = _phases_of(lambda: RobustKMeans(4, n_outliers=40, random_state=0).fit(X))
    search = [p for p in seen if p is not None and p.name == "lambda for the count"]
    assert search and search[0].own_steps and search[0].total >= 52
    steps = sum(1 for phase in ticks if phase is search[0])
    assert 0 < steps <= search[0].total
    assert np.isfinite(float(steps))


def test_the_command_line_bar_shows_the_phase_and_its_total():
    import io

    from robustclust._core.starts import NOISE_COUNT_STARTS
    from robustclust.cli._run import progress_bar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    out = Terminal()
    with progress_bar("fit", quiet=False, file=out):
        RobustKMeans(4, random_state=0).fit(X)
    text = out.getvalue()
    assert "fit: noise model (the default count)" in text and "/200" in text
    assert "fit: starts" in text and f"/{NOISE_COUNT_STARTS}" in text
