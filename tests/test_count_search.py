"""The count search: the count is hit exactly, at a lambda that flags exactly s,
and the search stops early where the count jumps over s."""

import warnings
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np
import pytest

from robustclust import RobustGaussianMixture, RobustKMeans
from robustclust._core.selection import (
    JUMP_STALL,
    LOOSE_TOL_FACTOR,
    MAX_STALL,
    PROBE_ROUNDS,
    SAME_SCREEN_RTOL,
    WEIGHTED_STEP,
    CountSearch,
    same_screen,
    select_by_count,
)
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
    fit = RobustKMeans(4, fuzzifier=q, n_outliers=s, init=start, n_init=1).fit(data.X)
    assert fit.n_outliers_ == s
    lam = fit.lambda_

    def fixed(value):
        return RobustKMeans(4, fuzzifier=q, lam=value, init=start, n_init=1).fit(data.X)

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


class _PlateauJumpSolver(_JumpSolver):
    """Counts that fall smoothly with lam, level off within 1e-3 on either side of
    a jump from 700 to 500 at lam = 1 (as cold EM fits do near a jump), and
    whose critical lams all tie (no reading: the search brackets and bisects)."""

    def count(self, lam):
        if lam <= 0.999:
            return 700 + round(2000 * (0.999 - lam))
        if lam <= 1.0:
            return 700
        if lam <= 1.001:
            return 500
        return max(0, 500 - round(2000 * (lam - 1.001)))

    def critical_lambdas(self, state, weighted=False):
        return np.ones(1000)


def _plateau_search(jump_stall):
    solver = _PlateauJumpSolver()
    search = CountSearch(solver, 600, lambda lam, hi, tol: solver.run(None, lam, tol=tol),
                         loose=1.0, jump_stall=jump_stall)
    return search, search.search(3.0)


def test_a_search_of_cold_fits_ends_sooner_at_a_bracket_that_shows_a_jump():
    plain, (_, state) = _plateau_search(None)
    early, (_, state_early) = _plateau_search(JUMP_STALL)
    # the same closest count (either side of the jump is 100 away) ...
    assert abs(state.n_outliers - 600) == abs(state_early.n_outliers - 600) == 100
    # ... after MAX_STALL - JUMP_STALL fewer bisection steps: the plateaus bring no
    # count closer, and across the bracket, narrowed below JUMP_RTOL, the count
    # changes by 200 where the first bracket's slope predicts far less
    assert early.evaluations == plain.evaluations - (MAX_STALL - JUMP_STALL)
    (lam_a, count_a), (lam_b, count_b) = early.first_bracket
    assert count_a < 600 < count_b and lam_a > lam_b
    # the same gap across a bracket wider than JUMP_RTOL is no jump yet: s may
    # lie inside it (a kernel mixture asked for 24 saw 23 and 36 across 6e-3)
    hi, lo = _State(1.0005, 500, 0.0), _State(0.9995, 700, 0.0)
    assert early._shows_jump((hi.lam, hi), (lo.lam, lo))
    wide_hi, wide_lo = _State(1.01, 500, 0.0), _State(0.99, 700, 0.0)
    assert not early._shows_jump((wide_hi.lam, wide_hi), (wide_lo.lam, wide_lo))


class _SteepSolver(_JumpSolver):
    """Count = round(100,000 - 50,000 lam): steep (N = 100,000) but no jump."""

    def count(self, lam):
        return int(np.clip(round(100_000 - 50_000 * lam), 0, 100_000))

    def critical_lambdas(self, state, weighted=False):
        return np.ones(1000)


def test_a_steep_count_without_a_jump_is_still_hit_exactly_by_a_search_of_cold_fits():
    # the jump rule compares the gap across the bracket with the first bracket's
    # slope: a count that changes by thousands across a wide bracket and by one
    # across a narrow one is no jump, and bisection goes on to hit s
    solver = _SteepSolver()
    search = CountSearch(solver, 37_123, lambda lam, hi, tol: solver.run(None, lam, tol=tol),
                         loose=1.0, jump_stall=JUMP_STALL)
    lam, state = search.search(3.0)
    assert state.n_outliers == 37_123
    assert solver.count(lam) == 37_123
    assert not search._shows_jump((lam * (1 + 1e-6), _State(lam, 37_122, 0.0)),
                                  (lam * (1 - 1e-6), _State(lam, 37_124, 0.0)))


@dataclass
class _FlaggedState(_State):
    outliers: object = None


class _FlaggingSolver(_PlateauJumpSolver):
    """The plateau solver whose states flag the first ``count`` points."""

    def to_host(self, array):
        return array

    def critical_lambdas(self, state, weighted=False):
        return np.linspace(2.0, 0.1, 1000)  # a reading: about 0.86

    def run(self, state, lam, weighted=False, tol=None):
        base = super().run(state, lam, weighted, tol)
        return _FlaggedState(base.lam, base.n_outliers, base.tol,
                             outliers=SimpleNamespace(index=np.arange(base.n_outliers)))


@pytest.mark.parametrize("answer_points", ["same", "other", None])
def test_a_probe_that_reaches_the_answers_points_ends_there(answer_points):
    # another start's probe at the lam the search found (no count s there: a
    # jump): when its first evaluation flags the same points as the search's
    # answer it has reached the same solution, and the probe stops
    solver = _FlaggingSolver()
    answer = solver.run(None, 1.0005)
    if answer_points == "other":
        answer = replace(answer, outliers=SimpleNamespace(index=np.arange(1, 501)))
    search = CountSearch(solver, 600, lambda lam, hi, tol: solver.run(None, lam, tol=tol),
                         loose=1.0, jump_stall=JUMP_STALL)
    lam, state = search.probe(1.0005, answer=None if answer_points is None else answer)
    assert (lam, state.n_outliers) == (1.0005, 500)
    assert search.evaluations == (1 if answer_points == "same" else PROBE_ROUNDS)


class _OvershootSolver(_LinearSolver):
    """Count = round(100 - 50 lam), and readings far past the lam flagging s (the
    weighted problem's critical lams at a solution: see CountSearch._within_step)."""

    def critical_lambdas(self, state, weighted=False):
        return 40.0 + np.arange(100) / 100


@pytest.mark.parametrize("weighted", [False, True])
def test_a_weighted_search_steps_at_most_weighted_step_past_its_bracket(weighted):
    solver = _OvershootSolver()
    search = CountSearch(solver, 37, lambda lam, hi, tol: solver.run(None, lam, tol=tol),
                         weighted=weighted)
    lam, state = search.search(0.1)
    assert state.n_outliers == 37
    second = solver.runs[1][0]
    # 0.1 flags 95 > 37: the reading (about 40.6) is taken as is, or capped at
    # WEIGHTED_STEP times 0.1
    if weighted:
        assert second == WEIGHTED_STEP * 0.1
    else:
        assert 40.6 < second < 40.65


# -- starts that screen to the same points at the same cost are searched once ----------
def _screened(cost, lam, points):
    state = SimpleNamespace(n_outliers=len(points),
                            outliers=SimpleNamespace(index=np.asarray(points)))
    return (cost, lam, state, 0)


@pytest.mark.parametrize("cost_b, points_b, same", [
    (1000.0, [1, 2, 3], True),                                     # the same screen
    (1000.0 * (1 + 0.5 * SAME_SCREEN_RTOL), [1, 2, 3], True),       # rounding apart
    (1000.0 * (1 + 2 * SAME_SCREEN_RTOL), [1, 2, 3], False),        # a different cost
    (1000.0 * (1 + 0.5 * SAME_SCREEN_RTOL), [1, 2, 4], False),      # other points
    (1000.0 * (1 + 0.5 * SAME_SCREEN_RTOL), [1, 2], False),
])
def test_same_screen_needs_the_same_points_and_the_same_cost(cost_b, points_b, same):
    solver = SimpleNamespace(to_host=lambda a: a)
    a = _screened(1000.0, 2.0, [1, 2, 3])
    b = _screened(cost_b, 2.0 if cost_b == 1000.0 else 2.0000001, points_b)
    assert same_screen(solver, a, b) is same
    assert same_screen(solver, b, a) is same


def _mixture_problem():
    data = make_blobs_with_outliers(n_outliers=40, n_per_cluster=80, random_state=2)
    means = data.centers + 0.2
    est = RobustGaussianMixture(4, covariance_type="tied", n_outliers=40, init=means,
                                n_init=1, random_state=0)
    return est.build_problem(data.X)


@pytest.mark.parametrize("other", ["rounding", "different"])
def test_a_start_rounding_apart_from_another_gets_no_search_of_its_own(monkeypatch, other):
    # the mixture's starts are robust K-means fits from different seeds, which
    # often reach one solution up to the rounding of their own solver: the
    # second is screened, but neither searched nor probed again.  A start
    # that screens elsewhere is still probed (n_keep = 2 of 2 starts).
    problem = _mixture_problem()
    solver = problem.solver
    (means, mask), = problem.inits
    moved = means * (1 + 1e-13) if other == "rounding" else means[::-1] + 0.5
    probes = []
    original = CountSearch.probe

    def probe(self, *args, **kwargs):
        probes.append(args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CountSearch, "probe", probe)
    lam_one, state_one, _ = select_by_count(solver, [(means, mask)], 40, False)
    assert not probes
    lam, state, _ = select_by_count(solver, [(means, mask), (moved, mask)], 40, False)
    if other == "rounding":
        assert not probes
        # one start's answer (the one that screened lower, by rounding)
        assert lam == pytest.approx(lam_one, rel=1e-10)
        assert np.array_equal(state.outliers.index, state_one.outliers.index)
        np.testing.assert_allclose(state.centers, state_one.centers, rtol=1e-10)
    else:
        assert len(probes) == 1


def test_the_kept_cold_start_is_the_same_state_after_a_search_and_dropped_after():
    # the mixture's count search restarts every cold evaluation from its init's
    # start state, kept by the solver inside keeping_starts: the search must not
    # change that state, and the solver must not keep it afterwards
    problem = _mixture_problem()
    solver = problem.solver
    init = problem.inits[0]
    with solver.keeping_starts():
        start = solver.init_state(init)
        assert solver.init_state(init) is start
        before = {name: np.array(getattr(start, name), copy=True)
                  for name in ("centers", "memberships", "labels", "point_costs")}
        cov = np.array(start.covariance.value, copy=True)
        lam, state, _ = select_by_count(solver, [init], 40, False)
        assert state.n_outliers == 40
        assert solver.init_state(init) is start  # the nested search kept it
        for name, value in before.items():
            np.testing.assert_array_equal(getattr(start, name), value)
        np.testing.assert_array_equal(start.covariance.value, cov)
        assert start.outliers.count == 0
    again = solver.init_state(init)
    assert again is not start and solver.init_state(init) is not again
    np.testing.assert_array_equal(again.memberships, before["memberships"])
