"""Choosing lam: restarts, the warm-started path, count targets, the default.

Everything here talks to a :class:`~robustclust._core.solver.Solver` through
its calls, so that every estimator family (K-means, mixtures, kernels) shares
it:

* ``solver.init_state(init, lam=None)``: a cold state from an initialisation;
* ``solver.run(state, lam, weighted=False)``: BCD/EM at ``lam`` from ``state``;
* ``solver.lambda_max(state)``: the smallest lam that flags nothing;
* ``solver.trimmed_cost(state, s)``: the l0 cost of eq. (3) with s outliers;
* ``solver.default_lambda(state)``: the data-driven lam at a state;
* ``solver.zero_lambda_ok``: whether lam = 0 is a problem worth solving.
"""

import math
import warnings

import numpy as np
from scipy import stats

#: Probability that a Gaussian inlier is flagged under the default lam.
DEFAULT_FALSE_ALARM = 1e-3


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


class _CountSearch:
    """Finds lam at which exactly ``s`` points are flagged.

    ``evaluate(lam, warm_state)`` solves at lam from a warm start. Every state
    seen is remembered so that, when no lam gives exactly s (the count can
    jump by more than one), the closest one is returned.
    """

    def __init__(self, evaluate, s, max_bisect=60, rtol=1e-9, zero_lambda_ok=True):
        self.zero_lambda_ok = zero_lambda_ok
        self.evaluate = evaluate
        self.s = s
        self.max_bisect = max_bisect
        self.rtol = rtol
        self.best = None

    def _seen(self, lam, state):
        gap = abs(state.n_outliers - self.s)
        if self.best is None or gap < abs(self.best[1].n_outliers - self.s):
            self.best = (lam, state)
        return state.n_outliers == self.s

    def bisect(self, hi, lo):
        """hi = (lam, state) with count < s, lo = (lam, state) with count > s."""
        for _ in range(self.max_bisect):
            (lam_hi, st_hi), (lam_lo, _) = hi, lo
            if lam_hi - lam_lo <= self.rtol * lam_hi:
                break
            mid = math.sqrt(lam_hi * lam_lo) if lam_lo > 0 else 0.5 * lam_hi  # never 0
            state = self.evaluate(mid, st_hi)
            if self._seen(mid, state):
                return mid, state
            if state.n_outliers < self.s:
                hi = (mid, state)
            else:
                lo = (mid, state)
        return self.best

    def along_path(self, lam_start, state, grid):
        """Walk down a decreasing grid with warm starts, then bisect."""
        prev = (lam_start, state)
        if self._seen(lam_start, state):
            return prev
        tail = [0.0] if self.zero_lambda_ok else []
        for lam in list(grid) + tail:
            if lam >= prev[0]:
                continue
            st = self.evaluate(lam, prev[1])
            if self._seen(lam, st):
                return lam, st
            if st.n_outliers > self.s:
                if prev[1].n_outliers > self.s:
                    return self.best  # started above s: nothing to bracket
                return self.bisect(prev, (lam, st))
            prev = (lam, st)
        return self.best

    def local(self, lam, state, factor=0.7, max_steps=80):
        """Bracket s by geometric steps from (lam, state), then bisect."""
        if self._seen(lam, state):
            return lam, state
        below = state.n_outliers < self.s
        step = factor if below else 1.0 / factor
        cur = (lam, state)
        for _ in range(max_steps):
            nl = cur[0] * step if cur[0] > 0 else 1e-12  # never 0
            st = self.evaluate(nl, cur[1])
            if self._seen(nl, st):
                return nl, st
            if below and st.n_outliers > self.s:
                return self.bisect(cur, (nl, st))
            if not below and st.n_outliers < self.s:
                return self.bisect((nl, st), cur)
            cur = (nl, st)
        return self.best


def select_by_count(solver, inits, s, weighted, n_grid=30, min_ratio=1e-3):
    """lam and solution flagging exactly ``s`` points (or as close as possible).

    1. K-means from every initialisation; the best one starts the path.
    2. The paper's decreasing grid from lam_max with warm starts until the
       count reaches s, then bisection between the last two grid points.
    3. A path warm-started from K-means inherits its local minimum (a centre
       spent on outliers, two clusters merged), so every initialisation is
       also restarted cold at that lam and the best state is kept, judged by
       the l0-constrained cost of eq. (3) with s outliers (comparable whatever
       each state's own count is).
    4. Bisection again, every evaluation started from the kept state, to hit
       s exactly.
    5. Weighted variant: from that solution, tune the weighted lam on its own
       (running both at one lam breaks when norms are small: the count sits
       at 0 and then jumps by hundreds).

    Returns (lam, state, unweighted_lam).
    """
    km = kmeans_solution(solver, inits)
    if s == 0:
        lam = lambda_max(solver, km)
        state = solver.run(km, lam, weighted=True) if weighted else km
        return lam, state, lam

    def evaluate(lam, warm):
        return solver.run(warm, lam)

    lam_max = lambda_max(solver, km)
    lam1, st1 = _CountSearch(evaluate, s, zero_lambda_ok=solver.zero_lambda_ok).along_path(
        lam_max, km, lambda_grid(lam_max, n_grid, min_ratio)[1:])
    candidates = [st1] + [solver.run(solver.init_state(c, lam1), lam1) for c in inits]
    kept = best_of(candidates, key=lambda st: solver.trimmed_cost(st, s))

    def from_kept(lam, _warm):
        # every evaluation restarts from the kept state: warm-starting from the
        # previous evaluation lets the solution drift out of the kept basin
        # (a mixture component sliding onto the outliers as lam grows)
        return solver.run(kept, lam)

    lam, state = _CountSearch(from_kept, s).local(lam1, kept)
    if not weighted:
        return lam, state, lam
    lam_w, state_w = tune_weighted(solver, state, lam, s)
    return lam_w, state_w, lam


def tune_weighted(solver, start, lam, s):
    """Weighted (log-penalty) lam flagging ``s`` points, from an unweighted solution.

    Every evaluation restarts the MM iterations from ``start`` (the paper's
    rule: the weighted run starts from the converged unweighted one); the
    search starts at the unweighted ``lam`` and brackets s geometrically.
    Running both at one lam does not work: the weighted threshold
    lam / (2 (||o_n|| + eps)) compares lam with squared distances, so its
    count depends on the data's units.
    """

    def evaluate_weighted(lam_w, _warm):
        return solver.run(start, lam_w, weighted=True)

    return _CountSearch(evaluate_weighted, s).local(lam, evaluate_weighted(lam, None))


class OutlierCountWarning(UserWarning):
    """The requested number of outliers could not be flagged exactly."""


def fit_lambda(solver, inits, *, lam, target, weighted):
    """The three ways an estimator's lam is set; returns (lam, unweighted_lam, state).

    * ``target`` (a count s): :func:`select_by_count`, with a warning when the
      path cannot flag exactly s points;
    * ``lam``: the paper's recipe at that lam from every initialisation, the
      best run kept by its cost;
    * neither: ``solver.default_lambda(state)`` at the lam = inf solution,
      restarts at that lam, the default once more at the best run, a warm refit; with
      ``weighted`` the weighted lam is then tuned to flag as many points as
      the unweighted default does (running both at one lam makes the count
      depend on the data's units).
    """
    if target is not None:
        lam, state, lam_unweighted = select_by_count(solver, inits, target, weighted)
        if state.n_outliers != target:
            warnings.warn(
                f"n_outliers={target} was asked for but no lambda on the path flags "
                f"exactly that many points; {state.n_outliers} are flagged "
                f"(lambda_={lam:.6g}).", OutlierCountWarning, stacklevel=3)
        return lam, lam_unweighted, state
    if lam is not None:
        state = best_of((fit_at(solver, solver.init_state(c, lam), lam, weighted)
                         for c in inits), key=lambda st: st.objective)
        return lam, lam, state
    start = kmeans_solution(solver, inits)
    lam = solver.default_lambda(start)
    runs = [solver.run(start, lam)] + [solver.run(solver.init_state(c, lam), lam)
                                       for c in inits]
    best = best_of(runs, key=lambda st: st.objective)
    lam = solver.default_lambda(best)
    state = solver.run(best, lam)
    if not weighted:
        return lam, lam, state
    lam_w, state_w = tune_weighted(solver, state, lam, state.n_outliers)
    return lam_w, lam, state_w
