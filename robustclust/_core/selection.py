"""Choosing lam: restarts, the warm-started path, count targets, the default.

Everything here talks to a :class:`~robustclust._core.solver.Solver` through
its calls, so that every estimator family (K-means, mixtures, kernels) shares
it:

* ``solver.init_state(init, lam=None)``: a cold state from an initialisation;
* ``solver.run(state, lam, weighted=False)``: BCD/EM at ``lam`` from ``state``;
* ``solver.lambda_max(state)``: the smallest lam that flags nothing;
* ``solver.trimmed_cost(state, s)``: the l0 cost of eq. (3) with s outliers;
* ``solver.default_lambda(state)``: the data-driven lam at a state;
* ``solver.as_start(state)`` and ``solver.as_answer(state)`` (optional): a
  state kept only to start runs from, lighter (:func:`as_start`), and such a
  state in its full form again, as a search returns it (:func:`as_answer`);
* ``solver.zero_lambda_ok``: whether lam = 0 is a problem worth solving.
"""

import math
import warnings

import numpy as np

from .. import _progress
from .compiled import lazy_module

stats = lazy_module("scipy.stats", compiled=False)  # imported on first use

#: Probability that a Gaussian inlier is flagged under the default lam.
DEFAULT_FALSE_ALARM = 1e-3


def as_start(solver, state):
    """``state`` as a search keeps it to start runs from: ``solver.as_start``
    where the solver has it (the compiled pass's per-point costs dropped),
    else ``state``."""
    lighter = getattr(solver, "as_start", None)
    return state if lighter is None else lighter(state)


def as_answer(solver, state):
    """A state kept by :func:`as_start` in its full form (``solver.as_answer``
    where the solver has it, else ``state``): what a search returns."""
    whole = getattr(solver, "as_answer", None)
    return state if whole is None else whole(state)


def fit_at(solver, state, lam, weighted):
    """The paper's recipe at one lam: RKM, then (weighted) WRKM from it."""
    state = solver.run(state, lam)
    if weighted:
        state = solver.run(state, lam, weighted=True)
    return state


def best_of(states, key):
    """The state with the smallest key (first one on ties)."""
    best, best_key = None, math.inf
    for state in states:
        k = key(state)
        if best is None or k < best_key:
            best, best_key = state, k
    return best


def kmeans_solution(solver, inits):
    """The lam = inf solution (K-means, or the plain mixture) from each
    initialisation; the best by cost."""
    return best_of((solver.run(solver.init_state(c), math.inf) for c in inits),
                   key=lambda st: st.objective)


def lambda_max(solver, state):
    """Smallest lam at which no point is flagged, at a lam = inf fixed point."""
    return solver.lambda_max(state)


def lambda_grid(lam_max, n_lambdas, min_ratio):
    """Decreasing geometric grid from lam_max (the paper's 'Selecting lam')."""
    if lam_max <= 0:
        return np.zeros(1)
    return np.geomspace(lam_max, lam_max * min_ratio, n_lambdas)


def default_lambda(sq_dists, sample_weight, n_features, penalty_name):
    """Data-driven lam from a robust estimate of the inlier noise scale.

    sigma^2 is estimated as the weighted median over points of the squared
    distance to the nearest centre divided by the median of chi^2_p: for a
    Gaussian inlier ||x_n - m_c||^2 / sigma^2 ~ chi^2_p, and the median ignores
    the outliers as long as they are fewer than half the points.  lam is then
    set so that an inlier is flagged with probability DEFAULT_FALSE_ALARM:

    * group penalty: flagged iff ||r_n|| > lam / 2, so
      lam = 2 sigma sqrt(chi^2_p quantile(1 - alpha));
    * elementwise: flagged iff some |r_nj| > lam / 2, so
      lam = 2 sigma z(1 - a / 2) with a = 1 - (1 - alpha)^(1 / p).
    """
    med = float(np.quantile(sq_dists, 0.5, weights=sample_weight, method="inverted_cdf"))
    if med == 0:
        # over half the points sit on a centre (duplicates): use the others
        spread = (sq_dists > 0) & (sample_weight > 0)
        if not spread.any():
            return 0.0
        med = float(np.quantile(sq_dists[spread], 0.5, weights=sample_weight[spread],
                                method="inverted_cdf"))
    sigma = math.sqrt(med / stats.chi2.median(n_features))
    alpha = DEFAULT_FALSE_ALARM
    if penalty_name == "group":
        return 2.0 * sigma * math.sqrt(stats.chi2.isf(alpha, n_features))
    per_entry = -math.expm1(math.log1p(-alpha) / n_features)
    return 2.0 * sigma * stats.norm.isf(per_entry / 2.0)


def robust_distance_threshold(dists, sample_weight=None):
    """Distance beyond which a point is flagged when the feature dimension is unknown.

    Kernel feature spaces (RBF: infinite; the empirical kernel map: N) have
    no dimension that a chi^2 rule could use, so the inlier distances to
    their nearest centre are treated as roughly Gaussian and the threshold
    is median + z * 1.4826 * MAD (weighted median and MAD, which ignore the
    outliers as long as they are fewer than half the points), with z the
    (1 - DEFAULT_FALSE_ALARM) Gaussian quantile.
    """
    dists = np.asarray(dists, dtype=np.float64)
    w = np.ones(len(dists)) if sample_weight is None else sample_weight
    med = float(np.quantile(dists, 0.5, weights=w, method="inverted_cdf"))
    mad = float(np.quantile(np.abs(dists - med), 0.5, weights=w, method="inverted_cdf"))
    return med + stats.norm.isf(DEFAULT_FALSE_ALARM) * 1.4826 * mad


#: Relative margin above lambda_max of the lam of a count fit with s = 0.
ZERO_COUNT_MARGIN = 2.0**-20
#: lambda_for_count's reading, as a fraction of c_(s), when c_(s+1) = 0 (every
#: point but s sits on a centre: data with repeated rows).
ZERO_LOWER_FRACTION = 1e-6
#: Iterations each start runs before the starts are compared (screening).
SCREEN_ITERATIONS = 5
#: The count search's intermediate evaluations stop at this multiple of the
#: solver's tolerance; only its answer is iterated to the full tolerance.
LOOSE_TOL_FACTOR = 100.0
#: Bisection evaluations in a row that bring no count closer to s before the
#: count is declared to jump over s.
MAX_STALL = 6
#: The same for searches whose every evaluation is a cold fit (the mixture).  Not
#: fewer: with 3, a per-component full mixture asked for 32 of 330 points (10%
#: uniform noise) stopped at 33 where 6 reach 32.
COLD_MAX_STALL = MAX_STALL
#: A search of cold fits (the mixture) declares a jump sooner when the bracket
#: shows one: after JUMP_STALL evaluations in a row that bring no count closer
#: to s, if the counts on its two sides differ by more than JUMP_FACTOR times
#: what the slope of the search's first bracket (count against log lam)
#: predicts over its width.  Cold EM fits at lams closer than that land on
#: either side at random (measured at n = 2,000, half uniform noise, s = n / 2:
#: the counts 990, 991, 993 on one side and 1148-1181 on the other, in no
#: order, across a bracket of 1e-3 relative width, where the first bracket's
#: slope predicts a change of 3), and when the bracket is narrower than
#: JUMP_RTOL relative: a wider one may still hold s (a kernel mixture of 240
#: points, asked for 24, saw 23 and 36 across a bracket of 6e-3 and found 24
#: inside it).
JUMP_STALL = 2
JUMP_FACTOR = 10.0
JUMP_RTOL = 2e-3
#: Largest step, as a factor of lam, from an open bracket's side to a weighted
#: search's next reading (see :meth:`CountSearch._within_step`).
WEIGHTED_STEP = 2.0
#: Evaluations of a kept start's search begun at the lam another start found.
PROBE_ROUNDS = 3
#: Screened starts flagging the same points with trimmed costs this close
#: (relative) are one start (:func:`same_screen`).
SAME_SCREEN_RTOL = 1e-8


def n_keep(n_init):
    """Starts that get a full search after screening (tclust's nkeep): 1-3 of 10, ..."""
    return min(n_init, 2 + n_init // 10) if n_init > 1 else 1


def lambda_for_count(critical, s, zero_lambda_ok=True):
    """A lam that flags exactly s points given their critical lams (or None).

    A point is flagged iff lam is below its critical value, so the lams
    flagging s points lie in [c_(s+1), c_(s)) for the critical values sorted
    decreasing; the geometric midpoint is returned (half c_(s) when
    c_(s+1) = 0), but at most 2 c_(s+1): each flagged point pulls its centre
    with the force lam / 2 (the Huber step), so lam stays at the scale of the
    kept points' distances; the midpoint of the interval of a point 10^6 away
    would pull a centre off its cluster.  When c_(s+1) = 0 (all points but s
    sit on their centres: repeated rows) the kept points have no scale, and
    ZERO_LOWER_FRACTION c_(s) is returned, the limit of that rule: half
    c_(s) there let one point at (100, 100) pull the centre of 30 rows at
    (1, 1) past the 30 rows at (0, 0), which then took both groups, and the
    far point kept a cluster of its own (the soft, weighted and mixture fits
    start their count search at such a reading).  None when s is 0 or all
    points (no finite interval) or the two values tie.
    """
    n = len(critical)
    if s <= 0 or s > n:
        return None
    if s == n:
        upper, lower = float(np.min(critical)), 0.0
    else:
        part = -np.partition(-critical, [s - 1, s])
        upper, lower = float(part[s - 1]), float(part[s])
    if not upper > lower:
        return None
    if lower > 0:
        return min(math.sqrt(upper * lower), 2.0 * lower)
    if s == n:
        return 0.5 * upper
    return ZERO_LOWER_FRACTION * upper


class CountSearch:
    """Finds lam at which exactly ``s`` points are flagged, by order statistics.

    Each round reads the lam that flags s points at the current parameters off
    the order statistics of the points' critical lams
    (:meth:`Solver.critical_lambdas`), solves at it, and reads again at the
    new solution: a fixed-point iteration that usually lands on s in a few
    rounds.  The lams seen bracket s (counts below s above, counts above s
    below); a reading outside the bracket is replaced by the bracket's
    geometric midpoint, and a bracket that survives several rounds (the
    count jumps over s) is settled by bisection.  When no lam flags exactly
    s, the closest count is kept.

    ``solve(lam, hi)`` gives the solution at lam, ``hi`` being the bracket's
    upper side (a solution with fewer than s outliers at a larger lam) or
    None: K-means warm-starts from it (the solutions then follow the path
    downwards in lam), the mixture restarts from its initialisation (a warm
    start from a solution with too few outliers lets the common variance grow
    and a component absorb outliers), the weighted variant from the
    unweighted solution (the paper's rule).
    """

    def __init__(self, solver, s, solve, weighted=False, max_rounds=12, max_bisect=40,
                 rtol=1e-7, loose=LOOSE_TOL_FACTOR, max_stall=MAX_STALL, jump_stall=None):
        self.solver = solver
        self.s = s
        self.solve = solve
        self.weighted = weighted
        self.max_rounds = max_rounds
        self.max_bisect = max_bisect
        self.rtol = rtol
        #: tolerance of the intermediate evaluations (None: the solver's own)
        self.tol = None if not loose or loose == 1 else solver.tol * loose
        self.max_stall = max_stall
        #: stall that ends a bisection across a bracket showing a jump (None: off)
        self.jump_stall = jump_stall
        #: the first bracket's ((lam, count) above, (lam, count) below)
        self.first_bracket = None
        self.best = None
        self.evaluations = 0

    def evaluate(self, lam, hi=None):
        self.evaluations += 1
        _progress.step()
        return self.solve(lam, hi, self.tol)

    def finish(self, lam, state):
        """The search's answer at the solver's own tolerance, in its full form
        (:func:`as_answer`): see :meth:`_finish`."""
        lam, state = self._finish(lam, state)
        return lam, as_answer(self.solver, state)

    def _finish(self, lam, state):
        """The search's answer at the solver's own tolerance.

        The intermediate evaluations stop at a looser tolerance; the answer
        ``(lam, state)`` is iterated on at the same lam to the solver's
        tolerance (the same iterates a full-tolerance evaluation would have
        continued with).  When the count is then not s, the search runs again
        at full tolerance from ``lam`` (bisecting to ``rtol``, as without the
        loose stage) and the closer of the two answers is kept.
        """
        if self.tol is None:
            return lam, state
        final = self.solver.run(state, lam, weighted=self.weighted)
        # one run at lam: the loose iterations and their continuation
        final = final.finished(list(state.history) + list(final.history),
                               state.n_iter + final.n_iter, final.converged)
        if final.n_outliers == self.s:
            return lam, final
        final = as_start(self.solver, final)  # not held whole through the search
        # not exact: the search as it was before the loose stage, at full
        # tolerance and bisecting down to rtol (a jump seen at the loose
        # tolerance may not be one at the full tolerance)
        self.tol, self.best, self.max_stall = None, None, self.max_bisect
        lam_full, state_full = self.search(lam)
        if abs(state_full.n_outliers - self.s) <= abs(final.n_outliers - self.s):
            return lam_full, state_full
        return lam, final

    def _seen(self, lam, state):
        gap = abs(state.n_outliers - self.s)
        if gap and (self.best is None or gap < abs(self.best[1].n_outliers - self.s)):
            # kept as a start (an answer only when no evaluation hits s: its
            # costs, for the report, are then computed again)
            self.best = (lam, as_start(self.solver, state))
        elif not gap:
            self.best = (lam, state)
        return not gap

    def _read(self, state):
        return lambda_for_count(self.solver.critical_lambdas(state, self.weighted), self.s,
                                self.solver.zero_lambda_ok)

    def search(self, lam):
        """(lam, state) flagging s, the first evaluation at ``lam``."""
        found, hi, lo = self._rounds(lam, self.max_rounds, settle=True)
        if found is not None:
            return found
        if hi is not None and lo is not None:
            return self.bisect(hi, lo)
        return self.best

    def probe(self, lam, rounds=PROBE_ROUNDS, answer=None):
        """(lam, state) as :meth:`search` from ``lam``, but with at most ``rounds``
        evaluations and no bisection: the closest count seen when s is not hit.

        ``answer``: the state another start's search found at ``lam``; when the
        first evaluation flags the same points, this start has reached the
        same solution, and the probe ends there.
        """
        self.best = None
        found, _, _ = self._rounds(lam, rounds, settle=False, answer=answer)
        return self.best if found is None else found

    def _rounds(self, lam, rounds, settle, answer=None):
        """Up to ``rounds`` evaluations, each at the lam read off the previous one's
        critical lams (the bracket's midpoint when the reading falls outside it).

        Returns ((lam, state) flagging s, or None; hi; lo).  ``settle`` (the
        search): a lam that cannot be read is replaced by the midpoint, and a
        bracket that holds after half the rounds ends them (bisection settles
        it); without (a probe), an unreadable lam ends them.
        """
        hi = lo = None
        for round_ in range(rounds):
            if lam is None and not settle:
                break
            if not (lam is not None and (hi is None or lam < hi[0])
                    and (lo is None or lam > lo[0])):
                lam = self._between(hi, lo)
                if lam is None:
                    break
            new = self.evaluate(lam, hi)
            if self._seen(lam, new):
                return (lam, new), hi, lo
            if round_ == 0 and answer is not None and self._same_points(new, answer):
                break
            hi, lo = self._bracket(hi, lo, lam, new)
            if settle and hi is not None and lo is not None and round_ >= rounds // 2:
                break
            lam = self._read(new)
            new = None  # its per-point costs are not held through the next evaluation
            if self.weighted and lam is not None:
                lam = self._within_step(lam, hi, lo)
        return None, hi, lo

    def _within_step(self, lam, hi, lo):
        """A weighted search's reading, at most WEIGHTED_STEP times past an open
        bracket's side.  The critical lams of the weighted problem's flagged
        points, at a solution, are where their MM limit vanishes with the
        centres fixed, far above the lam that the same points stop being
        flagged at in a run from the unweighted solution (each evaluation's
        start): the reading overshoots, and a run at a lam that flags few
        points of a soft model can take ten times the iterations of one near s."""
        if hi is None and lo is not None and lo[0] > 0:
            return min(lam, WEIGHTED_STEP * lo[0])
        if lo is None and hi is not None:
            return max(lam, hi[0] / WEIGHTED_STEP)
        return lam

    def _same_points(self, a, b):
        return same_points(self.solver, a, b)

    def _bracket(self, hi, lo, lam, new):
        """(hi, lo) narrowed by an evaluation: hi the smallest lam flagging fewer
        than s, lo the largest flagging more."""
        # the bracket's states are starts of later evaluations
        if new.n_outliers < self.s:
            hi = (lam, as_start(self.solver, new)) if hi is None or lam < hi[0] else hi
        else:
            lo = (lam, as_start(self.solver, new)) if lo is None or lam > lo[0] else lo
        if self.first_bracket is None and hi is not None and lo is not None:
            self.first_bracket = ((hi[0], hi[1].n_outliers), (lo[0], lo[1].n_outliers))
        return hi, lo

    def _shows_jump(self, hi, lo):
        """Whether the bracket (hi, lo), narrower than JUMP_RTOL relative, has counts
        that differ by more than JUMP_FACTOR times what the first bracket's slope
        predicts over its width."""
        if self.first_bracket is None or hi[0] - lo[0] > JUMP_RTOL * hi[0]:
            return False
        (lam_a, count_a), (lam_b, count_b) = self.first_bracket
        if not (lam_b > 0 and lo[0] > 0 and lam_a > lam_b):
            return False
        slope = (count_b - count_a) / math.log(lam_a / lam_b)
        predicted = slope * math.log(hi[0] / lo[0])
        return lo[1].n_outliers - hi[1].n_outliers > JUMP_FACTOR * max(predicted, 1.0)

    def _between(self, hi, lo):
        """A lam strictly inside the bracket (either side may be open)."""
        if hi is not None and lo is not None:
            return math.sqrt(hi[0] * lo[0]) if lo[0] > 0 else 0.5 * hi[0]
        if hi is not None:
            return 0.5 * hi[0] if hi[0] > 0 else None
        if lo is not None:
            return 2.0 * lo[0] if lo[0] > 0 else 1.0
        return None

    def bisect(self, hi, lo):
        """Bisection between hi = (lam, state) with count < s and lo with count > s.

        Stops after ``max_stall`` evaluations in a row that bring no count
        closer to s than the best seen: the count then jumps over s at a lam
        inside the bracket (the solution path is discontinuous there, where the
        solution falls into another local minimum), and narrowing the jump
        further (to ``rtol``) only reproduces counts on either side of it.
        With ``jump_stall`` (searches of cold fits), already after that many
        when the bracket shows the jump (:meth:`_shows_jump`).
        """
        stall = 0
        for _ in range(self.max_bisect):
            lam_hi, lam_lo = hi[0], lo[0]
            if lam_hi - lam_lo <= self.rtol * lam_hi or stall >= self.max_stall:
                break
            if (self.jump_stall is not None and stall >= self.jump_stall
                    and self._shows_jump(hi, lo)):
                break
            mid = math.sqrt(lam_hi * lam_lo) if lam_lo > 0 else 0.5 * lam_hi  # never 0
            best = self.best
            state = self.evaluate(mid, hi)
            if self._seen(mid, state):
                return mid, state
            stall = stall + 1 if self.best is best else 0
            if state.n_outliers < self.s:
                hi = (mid, as_start(self.solver, state))
            else:
                lo = (mid, as_start(self.solver, state))
            state = None  # its per-point costs are not held through the next evaluation
        return self.best


def screen(solver, init, s):
    """A start run briefly at the lam that flags s points at its own parameters.

    Returns (trimmed cost of eq. (3), lam, state): starts are compared by the
    l0 cost with s outliers (tclust's idea: many cheap starts, full solves
    for the best few).
    """
    return _screen_from(solver, solver.init_state(init), s,
                        lambda lam: solver.init_state(init, lam))


def screen_kmeans(solver, init, s):
    """As :func:`screen`, from the lam = inf solution (K-means) of the start.

    The paper's path: its solutions lie on the branch of the K-means fixed
    point, whose centres sit on the bulk of each cluster.  Screened with the
    cold start of :func:`screen`: a K-means fixed point may spend a centre
    on a clump of outliers, a start run at lam directly may not.
    """
    # to the loose tolerance of the count search's intermediate evaluations:
    # the screen compares starts, and the search that follows a kept one
    # iterates on from here (soft K-means converges linearly: 34 iterations
    # at 1e-6 on a 1,000-point set, 17 at 1e-4)
    km = solver.run(solver.init_state(init), math.inf, tol=solver.tol * LOOSE_TOL_FACTOR)
    return _screen_from(solver, km, s, lambda lam: km)


def positive_lambda(solver, lam):
    """``lam``, or 1 where it is 0 and the model takes no lam = 0.

    lam_max is 0 when every residual is 0 (every row on a centre: repeated
    rows): no lam flags a point there, and lam = 0 is no problem of the
    mixture (its cost is unbounded below; its O-step, and predict's, would
    flag rounding errors as outliers), so any positive lam is the answer.
    """
    if lam <= 0 and not solver.zero_lambda_ok:
        return 1.0
    return lam


def _screen_from(solver, start, s, at):
    lam = lambda_for_count(solver.critical_lambdas(start), s, solver.zero_lambda_ok)
    if lam is None:
        lam = solver.lambda_max(start)
    lam = positive_lambda(solver, lam)
    state = solver.run(at(lam), lam, max_iter=SCREEN_ITERATIONS)
    # scored here; kept only as the start of a search or probe
    return solver.trimmed_cost(state, s), lam, as_start(solver, state)


def _solver_from(solver, init, state):
    """``solve(lam, hi)`` of a :class:`CountSearch` for one start (see there)."""
    if solver.model.cold_count_search:
        return lambda lam, hi, tol: solver.run(solver.init_state(init, lam), lam, tol=tol)
    return lambda lam, hi, tol: solver.run(state if hi is None else hi[1], lam, tol=tol)


def same_init(a, b):
    """Whether two initialisations are identical (arrays, or tuples of arrays/None)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(same_init(x, y) for x, y in zip(a, b)))
    if a is None or b is None:
        return a is None and b is None
    try:
        a, b = np.asarray(a), np.asarray(b)
    except Exception:  # an array of another namespace: not compared
        return False
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))


def same_points(solver, a, b):
    """Whether two states flag the same points."""
    if a.n_outliers != b.n_outliers:
        return False
    host = solver.to_host
    return bool(np.array_equal(np.asarray(host(a.outliers.index)),
                               np.asarray(host(b.outliers.index))))


def same_screen(solver, a, b):
    """Whether two screened starts (trimmed cost, lam, state, ...) are one start.

    Either they screened to the same (cost, lam) (starts at the same K-means
    fixed point), or their screened states flag the same points with trimmed
    costs equal to SAME_SCREEN_RTOL: two starts that differ by the rounding of
    the robust starts' own solver (the mixture's robust K-means starts from
    different seeds often reach one solution, to 1e-9) run on to the same
    solution, and a second search or probe from one of them only repeats the
    first (a cold EM fit: a sixth of a count fit at 2,000 points).
    """
    if (a[0], a[1]) == (b[0], b[1]):
        return True
    close = abs(a[0] - b[0]) <= SAME_SCREEN_RTOL * max(abs(a[0]), abs(b[0]))
    return bool(close and same_points(solver, a[2], b[2]))


def select_by_count(solver, inits, s, weighted):
    """lam and solution flagging exactly ``s`` points (or as close as possible).

    1. Screening: every start is run a few iterations at the lam that flags s
       at its own initial parameters, and scored by the l0 cost of eq. (3);
       K-means-type models screen the start's K-means solution the same way
       (:func:`screen_kmeans`), the beginning of the paper's path.
    2. The best screened start gets a full :class:`CountSearch`; the next few
       (:func:`n_keep`) a short probe (:meth:`CountSearch.probe`) from the lam
       it found; the best result is kept (exact count first, then the l0 cost).
    3. Weighted variant: from that solution, the weighted lam is searched the
       same way, every evaluation restarting the MM iterations from the
       unweighted solution (the paper's rule; running both at one lam breaks
       when norms are small: the count sits at 0 and then jumps by hundreds).

    Returns (lam, state, unweighted_lam).
    """
    # the steps: the searches' evaluations (a bound: 12 rounds and 40 bisections for
    # the first start's search, a few probes for the others')
    budget = 52 + PROBE_ROUNDS * (n_keep(len(inits)) - 1) + (52 if weighted else 0)
    with solver.keeping_starts(), _progress.phase("lambda for the count", budget,
                                                  own_steps=True):
        return _select_by_count(solver, inits, s, weighted)


def _select_by_count(solver, inits, s, weighted):
    if s == 0:
        km = kmeans_solution(solver, inits)
        # just above lambda_max: the point that sets it stays unflagged when its
        # distance is computed again with other rounding (predict, Dask blocks)
        lam = positive_lambda(solver, lambda_max(solver, km) * (1.0 + ZERO_COUNT_MARGIN))
        state = solver.run(km, lam, weighted=True) if weighted else km
        return lam, state, lam
    screens = [screen] if solver.model.cold_count_search else [screen, screen_kmeans]
    # a start equal to an earlier one (the mixture's robust K-means starts
    # often reach the same centres) would screen to the same result, which
    # the de-duplication below drops: it is not screened again
    unique = [i for i, init in enumerate(inits)
              if not any(same_init(init, inits[j]) for j in range(i))]
    screened = sorted((how(solver, inits[i], s) + (i,) for i in unique
                       for how in screens), key=lambda item: (item[0], item[3]))
    # starts that reached the same K-means fixed point, or screen to the same
    # points at the same cost (:func:`same_screen`), are searched once
    distinct = []
    for item in screened:
        if not distinct or not same_screen(solver, distinct[-1], item):
            distinct.append(item)
    # EM restarted cold at each lam stops on a flagged set that holds for one
    # iteration; near a jump of the count it is still drifting there, so its
    # searches run at the full tolerance
    loose = 1.0 if solver.model.cold_count_search else LOOSE_TOL_FACTOR
    # and each of its evaluations is a whole cold fit (30-40 EM iterations at
    # 1,000 points): a jump of the count is declared after fewer of them when
    # the bracket shows one (JUMP_STALL, :meth:`CountSearch._shows_jump`)
    stall = COLD_MAX_STALL if solver.model.cold_count_search else MAX_STALL
    jump = JUMP_STALL if solver.model.cold_count_search else None
    # the best screened start gets the whole search from its own reading; the
    # next kept ones start theirs at the lam it found, where they usually hit
    # s at the first evaluation: a few probing rounds, no bisection
    # (the states of the starts not kept are dropped: each holds per-row arrays)
    kept = distinct[:n_keep(len(inits))]
    screened = distinct = item = None
    results = []
    found = answer = None
    for k in range(len(kept)):
        _, lam, state, i = kept[k]
        kept[k] = None  # its state lives on in its search's warm starts only
        search = CountSearch(solver, s, _solver_from(solver, inits[i], state), loose=loose,
                             max_stall=stall, jump_stall=jump)
        del state
        if k == 0:
            lam_k, state_k = search.search(lam)
        else:
            lam_k, state_k = search.probe(found, answer=answer)
        # scored now (exact count first, then the l0 cost); kept as a start
        key = (abs(state_k.n_outliers - s), solver.trimmed_cost(state_k, s))
        search.best = None
        results.append((key, lam_k, as_start(solver, state_k), search))
        state_k = None
        if k == 0:  # the later probes compare their first evaluation's points with it
            found, answer = lam_k, results[0][2]
    _, lam, state, search = min(results, key=lambda r: r[0])
    del results  # the other searches' states
    lam, state = search.finish(lam, state)
    if not weighted:
        return lam, state, lam
    lam_w, state_w = tune_weighted(solver, state, lam, s, loose=loose)
    return lam_w, state_w, lam


def tune_weighted(solver, start, lam, s, loose=1.0):
    """Weighted (log-penalty) lam flagging ``s`` points, from an unweighted solution.

    Every evaluation restarts the MM iterations from ``start`` (the paper's
    rule: the weighted run starts from the converged unweighted one); the
    lams come from the order statistics of the weighted critical lams.
    Running both at one lam does not work: the weighted threshold
    lam / (2 (||o_n|| + eps)) compares lam with squared distances, so its
    count depends on the data's units.  ``loose``: see :class:`CountSearch`.
    """
    search = CountSearch(solver, s, lambda lam_w, hi, tol: solver.run(start, lam_w, weighted=True,
                                                                      tol=tol),
                         weighted=True, loose=loose)
    first = lambda_for_count(solver.critical_lambdas(start, True), s, solver.zero_lambda_ok)
    return search.finish(*search.search(lam if first is None else first))


class OutlierCountWarning(UserWarning):
    """The requested number of outliers could not be flagged exactly."""


def fit_lambda(solver, inits, *, lam, target, weighted, lambda_unit=1.0,
               compare_trimmed=False):
    """The three ways an estimator's lam is set; returns (lam, unweighted_lam, state).

    * ``target`` (a count s): :func:`select_by_count`, with a warning when the
      path cannot flag exactly s points;
    * ``lam``: the paper's recipe at that lam from every initialisation, the
      best run kept by its cost;
    * neither: ``solver.default_lambda(state)`` at the lam = inf solution,
      restarts at that lam, the default once more at the best run, a warm refit; with
      ``weighted`` the weighted lam is then tuned to flag as many points as
      the unweighted default does (running both at one lam makes the count
      depend on the data's units).  With ``compare_trimmed`` (the robust
      start) the runs are compared by the l0 cost of eq. (3) at the largest
      count any of them flags, not by their cost: the l1 penalty of a far
      point grows with its distance, so that cost prefers a centre on it (the
      lam = inf solution from the start) to flagging it.

    ``lambda_unit`` converts lam to the user's units in the warning.
    """
    if target is not None:
        lam, state, lam_unweighted = select_by_count(solver, inits, target, weighted)
        if state.n_outliers != target:
            warnings.warn(
                f"n_outliers={target} was asked for but no lambda on the path flags "
                f"exactly that many points; {state.n_outliers} are flagged "
                f"(lambda_={lam * lambda_unit:.6g}).", OutlierCountWarning, stacklevel=3)
        return lam, lam_unweighted, state
    if lam is not None:
        state = best_of((fit_at(solver, solver.init_state(c, lam), lam, weighted)
                         for c in inits), key=lambda st: st.objective)
        return lam, lam, state
    start = kmeans_solution(solver, inits)
    lam = solver.default_lambda(start)
    runs = [solver.run(start, lam)] + [solver.run(solver.init_state(c, lam), lam)
                                       for c in inits]
    key = lambda st: st.objective  # noqa: E731
    if compare_trimmed:  # the l0 cost of eq. (3) at the largest count flagged
        trim = max(st.n_outliers for st in runs)
        key = lambda st: solver.trimmed_cost(st, trim)  # noqa: E731
    best = best_of(runs, key=key)
    lam = solver.default_lambda(best)
    state = solver.run(best, lam)
    if not weighted:
        return lam, lam, state
    solver.count_hint(state.n_outliers)
    lam_w, state_w = tune_weighted(solver, state, lam, state.n_outliers)
    return lam_w, lam, state_w
