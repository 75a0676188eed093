"""The count search: the count is hit exactly, at a lambda that flags exactly s,
and the search stops early where the count jumps over s."""

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from robustclust import RobustKMeans
from robustclust._core.selection import LOOSE_TOL_FACTOR, MAX_STALL, CountSearch
from robustclust.datasets import make_blobs_with_outliers


@pytest.mark.parametrize("q", [1.0, 1.5])
def test_count_fit_lambda_lies_in_the_interval_that_flags_s(q):
    # Brute force: fixed-lambda fits from the same start on a fine grid around
    # the lambda the count search returned.  The search's lambda must flag s
    # itself (the same points) and lie between the grid values on either side
    # of it, whose counts bracket s.
    data = make_blobs_with_outliers(n_outliers=15, n_per_cluster=35, random_state=1)
    start = data.centers + 0.3
    s = 15
    fit = RobustKMeans(4, q=q, n_outliers=s, init=start, n_init=1).fit(data.X)
    assert fit.n_outliers_ == s
    lam = fit.lambda_

    def fixed(value):
        return RobustKMeans(4, q=q, lam=value, init=start, n_init=1).fit(data.X)

    at = fixed(lam)
    assert at.n_outliers_ == s
    assert np.array_equal(at.outlier_mask_, fit.outlier_mask_)
    grid = lam * np.geomspace(0.5, 2.0, 121)
    counts = np.array([fixed(v).n_outliers_ for v in grid])
    assert np.all(np.diff(counts) <= 0)          # the count falls as lam grows
    exact = grid[counts == s]
    assert exact.size                            # a grid value flags s too
    step = grid[1] / grid[0]
    assert exact.min() / step <= lam <= exact.max() * step
    below, above = grid[grid < lam], grid[grid > lam]
    assert counts[grid < lam][-1] >= s and counts[grid > lam][0] <= s
    assert below.size and above.size


# -- the search on a model of its solver -------------------------------------------------
@dataclass
class _State:
    lam: float
    n_outliers: int
    tol: float
    converged: bool = True
    history: list = field(default_factory=list)
    n_iter: int = 1

    def finished(self, history, n_iter, converged):
        return replace(self, history=history, n_iter=n_iter, converged=converged)


class _JumpSolver:
    """Counts that fall with lam and jump from 20 to 10 at lam = 1 (no lam flags 15)."""

    tol = 1e-6
    zero_lambda_ok = True

    def __init__(self):
        self.runs = []

    def count(self, lam):
        return 20 if lam <= 1.0 else 10

    def run(self, state, lam, weighted=False, tol=None):
        tol = self.tol if tol is None else tol
        self.runs.append((lam, tol))
        return _State(lam, self.count(lam), tol)

    def critical_lambdas(self, state, weighted=False):
        # reading these at any state gives a lam just beside the jump
        return np.r_[np.full(12, 1.5), np.full(30, 0.5)]


def test_bisection_stops_when_the_count_jumps_over_s():
    solver = _JumpSolver()
    search = CountSearch(solver, 15, lambda lam, hi, tol: solver.run(None, lam, tol=tol))
    lam, state = search.search(3.0)
    assert state.n_outliers in (10, 20)
    # without the stall rule the bisection would narrow the jump to rtol = 1e-7
    # (about 24 more evaluations); it stops MAX_STALL evaluations after the
    # last improvement instead
    assert search.evaluations <= search.max_rounds // 2 + 2 + MAX_STALL


class _LinearSolver(_JumpSolver):
    """Count = round(100 - 50 lam): every count in [0, 100] is reachable."""

    def count(self, lam):
        return int(np.clip(round(100 - 50 * lam), 0, 100))

    def critical_lambdas(self, state, weighted=False):
        return (100 - np.arange(100) - 0.5) / 50


def test_intermediate_evaluations_are_loose_and_the_answer_is_finished_at_full_tolerance():
    solver = _LinearSolver()
    search = CountSearch(solver, 37, lambda lam, hi, tol: solver.run(None, lam, tol=tol))
    lam, state = search.finish(*search.search(0.1))
    assert state.n_outliers == 37
    assert state.tol == solver.tol                            # the answer: full tolerance
    intermediate = solver.runs[:-1]
    assert intermediate and all(tol == solver.tol * LOOSE_TOL_FACTOR for _, tol in intermediate)
    assert solver.runs[-1] == (lam, solver.tol)


class _DriftSolver(_LinearSolver):
    """Loose runs flag one point more than the converged run at the same lam."""

    def count(self, lam, tol=None):
        return super().count(lam)

    def run(self, state, lam, weighted=False, tol=None):
        out = super().run(state, lam, weighted, tol)
        if out.tol > self.tol:
            out.n_outliers += 1
        return out


def test_a_count_that_moves_at_full_tolerance_is_searched_again():
    solver = _DriftSolver()
    search = CountSearch(solver, 37, lambda lam, hi, tol: solver.run(None, lam, tol=tol))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lam, state = search.finish(*search.search(0.1))
    assert state.n_outliers == 37 and state.tol == solver.tol
