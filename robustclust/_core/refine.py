"""Concentration steps: the exact l0 (trimmed K-means) cost of eq. (3), decreased.

For s outliers, the l0-constrained problem of eq. (3) is, after minimizing
over the outlier vectors (o_n = x_n - m_{c(n)} on the flagged points, 0
elsewhere), trimmed K-means:

    min over M, labels c and a set T of s points of
        sum_{n not in T} w_n ||x_n - m_{c(n)}||^2.

A *concentration step* (the C-step of trimmed k-means and tclust) minimizes
it over (c, T) with M fixed -- each point to its nearest centre, T the s
points of largest weighted cost -- and then over M with (c, T) fixed -- each
centre the weighted mean of its kept points (a centre without kept weight
stays where it is).  Neither half can increase the cost, so the costs of
successive steps never increase; there are finitely many (c, T), so steps
repeated until c and T repeat reach a fixed point (the ``max_steps`` cap
only guards against ties between equal costs).

The step is written once, here, for every caller: the robust start
(:mod:`robustclust._core.starts`, which trims ``n_trim`` points while it
seeds) and the refinement of a fitted robust K-means solution
(:func:`refine`, used by the estimators' ``refine`` option).  The geometry is
reached through a *space* (``centre_distances`` and ``means``; see
:class:`~robustclust._core.spaces.PointSpace`).
"""

from dataclasses import dataclass, field

import numpy as np

from .. import _progress
from .backend import asarray, to_numpy
from .compiled import lazy_module, worth
from .spaces import PointSpace

_concentration = lazy_module("robustclust._core._concentration")
_fused = lazy_module("robustclust._core._fused")

#: Concentration steps of a refinement (fewer when the kept set settles).
REFINE_MAX_STEPS = 100
#: Concentration steps every candidate of a refinement is screened with; the
#: one of smallest l0 cost after them runs on to a fixed point (tclust's rule:
#: many short runs, the best one to the end).  Near the boundaries of many
#: clusters the kept set of 10^6 points can take the whole REFINE_MAX_STEPS
#: to settle (make_blobs(10^6, 4, centers=16) with 1% uniform noise: the
#: default fit's three candidates ran 4, 100 and 100 steps, 6.8 of its 7.6
#: CPU s); the candidate of smallest cost after 10 steps was the one of
#: smallest final cost there and on bench_trimmed's sets.
REFINE_SCREEN_STEPS = 10


def trim_mask(costs, n_trim, weights=None):
    """True for the ``n_trim`` points of largest cost.

    With ``weights`` (points that stand for that many, such as the weighted
    candidates of k-means||), ``n_trim`` is a weight: the points of largest
    cost per unit of weight, as many as weigh at most ``n_trim`` together.
    """
    mask = np.zeros(costs.shape[0], dtype=bool)
    if weights is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            unit = np.where(weights > 0, costs / weights, 0.0)
        order = np.argsort(-unit, kind="stable")
        mask[order[:np.searchsorted(np.cumsum(weights[order]), n_trim, side="right")]] = True
    elif n_trim > 0:
        mask[np.argpartition(-costs, n_trim - 1)[:n_trim]] = True
    return mask


def assign_and_trim(space, centres, w, n_trim, by_weight=False):
    """The (c, T) half of a step at fixed centres.

    Returns (labels, trimmed mask, squared distance of each point to its
    centre, l0 cost of eq. (3): the weighted cost of the kept points).
    ``by_weight``: ``n_trim`` is a weight to trim (:func:`trim_mask`).
    """
    D = space.centre_distances(centres)
    labels = np.argmin(D, axis=0)
    d2 = D[labels, np.arange(space.n_samples)]
    costs = w * d2
    trimmed = trim_mask(costs, n_trim, w if by_weight else None)
    return labels, trimmed, d2, float(costs[~trimmed].sum())


def concentration_step(space, centres, w, n_trim, by_weight=False):
    """One concentration step from ``centres``.

    Returns (new centres, labels, trimmed mask, cost at ``centres``): the
    labels, mask and cost are those of the (c, T) half at the given centres;
    the new centres are the weighted means of the kept points of each label.
    """
    labels, trimmed, _, cost = assign_and_trim(space, centres, w, n_trim, by_weight)
    return space.means(labels, np.where(trimmed, 0.0, w), centres), labels, trimmed, cost


def concentration_steps(space, centres, sample_weight, n_trim, max_steps, by_weight=False):
    """Concentration steps from ``centres``: (centres, cost, steps, history).

    Stops when the labels and the kept set repeat (the centres are then the
    means of their kept points: a fixed point) or after ``max_steps`` steps.
    ``cost`` is the l0 cost at the returned centres; ``history`` the cost
    at the centres of every step (non-increasing).  ``by_weight``: see
    :func:`assign_and_trim`.
    """
    return _steps(space, centres, sample_weight, n_trim, max_steps, by_weight)[:4]


def _steps(space, centres, sample_weight, n_trim, max_steps, by_weight=False):
    """:func:`concentration_steps` and whether they stopped at a fixed point (the
    labels and the kept set repeated) rather than at ``max_steps``."""
    w = np.asarray(sample_weight, dtype=np.float64)
    dense = compiled_space(space)
    if dense is not None and not by_weight:
        centres, cost, steps, history, _, _, _, settled = \
            _concentration.concentration_steps_dense(dense, space.sq_norms, centres, w,
                                                     n_trim, max_steps)
        return centres, cost, steps, history, settled
    previous = None
    history = []
    for step in range(max_steps + 1):
        new, labels, trimmed, cost = concentration_step(space, centres, w, n_trim, by_weight)
        history.append(cost)
        settled = (previous is not None and np.array_equal(previous[0], labels)
                   and np.array_equal(previous[1], trimmed))
        if step == max_steps or settled:
            return centres, cost, step, history, settled
        previous = (labels, trimmed)
        centres = new
    return centres, cost, max_steps, history, False  # pragma: no cover - the loop returns


def compiled_space(space):
    """The dense X of ``space`` for the compiled steps, or None (a kernel or sparse
    space, or one of too few rows for them to pay: ``PointSpace.compiled``)."""
    dense = getattr(space, "dense", None)
    return dense if dense is not None and space.compiled else None


@dataclass
class Refined:
    """A fixed point of the concentration steps (all in the space's units).

    Attributes
    ----------
    centres : ndarray of shape (C, p)
    labels : ndarray of shape (N,)
        Nearest centre of every point (flagged ones included).
    trimmed : ndarray of shape (N,), dtype bool
        The s flagged points: those of largest weighted squared distance.
    sq_distances : ndarray of shape (N,)
        ||x_n - m_{c(n)}||^2 at ``centres``.
    cost : float
        The l0 cost of eq. (3) at ``centres``.
    history : list of float
        Cost after each step, starting with that of the starting centres.
    steps : int
    settled : bool
        Whether the steps stopped because the labels and the kept set
        repeated (a fixed point), not at their cap.
    """

    centres: np.ndarray
    labels: np.ndarray
    trimmed: np.ndarray
    sq_distances: np.ndarray
    cost: float
    history: list = field(default_factory=list)
    steps: int = 0
    settled: bool = True


def refine(space, centres, sample_weight, n_trim, max_steps=REFINE_MAX_STEPS, fixed=None):
    """Concentration steps from ``centres`` until the kept set settles.

    Parameters
    ----------
    space : PointSpace
        The points (see :mod:`robustclust._core.spaces`).
    centres : ndarray of shape (C, p)
        The starting centres (the robust K-means solution, or a start).
    sample_weight : ndarray of shape (N,)
    n_trim : int
        The number s of points to flag.
    max_steps : int, default=REFINE_MAX_STEPS
    fixed : ndarray of shape (N,), dtype bool, default=None
        A flagged set given in advance (the default count's noise points):
        the steps then trim exactly it (its points weigh nothing) and move
        the centres as K-means of the others.

    Returns
    -------
    refined : Refined
    """
    w = np.asarray(sample_weight, dtype=np.float64)
    centres = np.asarray(centres, dtype=np.float64)
    if fixed is not None:  # the fixed points weigh nothing, and none is trimmed
        w, n_trim = np.where(fixed, 0.0, w), 0
    if compiled_space(space) is not None:
        centres, cost, steps, history, labels, trimmed, d2, settled = \
            _concentration.concentration_steps_dense(space.dense, space.sq_norms, centres, w,
                                                     n_trim, max_steps)
    else:
        centres, _, steps, history, settled = _steps(space, centres, w, n_trim, max_steps)
        labels, trimmed, d2, cost = assign_and_trim(space, centres, w, n_trim)
    if fixed is not None:
        trimmed = np.asarray(fixed, dtype=bool)
    return Refined(centres, labels, trimmed, d2, cost, history, steps, settled)


def continued(space, refined, sample_weight, n_trim, max_steps=REFINE_MAX_STEPS, fixed=None):
    """``refined`` (a :func:`refine` result that may have stopped at its step cap)
    run on to a fixed point, to ``max_steps`` steps in all.

    Its centres are those its last step assigned at, so the steps from them
    continue its sequence exactly (the first repeats that assignment: its
    cost is not counted twice in the history).
    """
    if refined.settled or refined.steps >= max_steps:
        return refined
    more = refine(space, refined.centres, sample_weight, n_trim,
                  max_steps=max_steps - refined.steps, fixed=fixed)
    return Refined(more.centres, more.labels, more.trimmed, more.sq_distances, more.cost,
                   refined.history + more.history[1:], refined.steps + more.steps,
                   more.settled)


#: Distances below this fraction of the data's extent are not told apart (the
#: squared distances ||x||^2 - 2 x.m + ||m||^2 carry rounding errors of
#: eps (||x||^2 + ||m||^2), so a distance is known to about sqrt(eps) ~ 2^-26
#: of the norms; this leaves a margin of 64).
RESOLUTION = 2.0**-20


def resolution(sq_norms, centres):
    """The smallest distance the refined rule tells from 0 and from a tie:
    RESOLUTION times the largest norm of the points and centres."""
    sq = np.asarray(sq_norms, dtype=np.float64)
    top = float(sq.max()) if sq.size else 0.0
    c = np.asarray(centres, dtype=np.float64)
    top += float((c * c).sum(axis=1).max()) if c.size else 0.0
    return RESOLUTION * np.sqrt(top)


def untied(costs, trimmed, sq_distances, weights, res=0.0):
    """The points a refined fit flags: the trimmed set with no tie split.

    The one rule of a refined fit for a count that cannot be met honestly.
    The concentration steps trim the s points of largest (weighted) cost;
    when the s-th and (s+1)-th largest costs tie -- repeated rows, data with
    fewer distinct rows than clusters plus s -- which of the tied points are
    trimmed is an accident of their order.  So the tie is flagged whole or
    not at all, whichever count is nearer s (the smaller one when both are
    as near: the count search of the unrefined fits keeps the closest count
    the same way), and rows that sit on their centre (score 0) are never
    flagged; the estimator then warns (OutlierCountWarning).  A flagged
    point always has a positive score, and of two equal rows both or
    neither are flagged.  Ties are judged to the squared distances'
    precision ``res**2``, a distance 0 to ``res`` (:func:`resolution`).
    """
    costs = np.asarray(costs, dtype=np.float64)
    d = np.sqrt(np.maximum(np.asarray(sq_distances, dtype=np.float64), 0.0))
    s = int(np.count_nonzero(trimmed))
    kept = costs[~trimmed]
    inner = float(kept.max()) if kept.size else 0.0
    # squared distances carry absolute errors of eps (||x||^2 + ||m||^2), so
    # two costs tie within res^2 (RESOLUTION^2 of the squared norms: 2^12 eps);
    # a distance is told from 0 to res (the square root of that error)
    slack = np.asarray(weights, dtype=np.float64) * res * res
    beyond = trimmed & (d > res) & (costs > inner + slack)
    fewer = int(np.count_nonzero(beyond))
    if fewer == s or not kept.size:
        return beyond
    tie = (np.abs(costs - inner) <= slack) & ~beyond
    if not tie.any() or np.any(d[tie] <= res):  # rows on a centre: never flagged
        return beyond
    more = fewer + int(np.count_nonzero(tie))
    return beyond | tie if more - s < s - fewer else beyond


def separating_lambda(sq_distances, flagged, res=0.0):
    """A lambda at which the hard group O-step flags exactly ``flagged``.

    At fixed centres the O-step of eqs. (11)-(12) flags a point iff its
    distance to its nearest centre exceeds lam / 2, so every lam in
    [2 d_(s+1), 2 d_(s)) (d sorted decreasingly) flags exactly the s
    farthest points.  Returns the middle of that interval, d_(s) + d_(s+1);
    2 (d_(1) + res) when s = 0 (nothing flagged: ``res``, the distances'
    precision, keeps the farthest point unflagged when its distance is
    computed again with other rounding, as ``predict`` does); 0 when every
    point is flagged.  When the interval is empty (sample weights that flag
    a point nearer than one kept; ties are not flagged, see
    :func:`untied`), 2 d_(s): the flagged points as near as a kept one are
    then not flagged by it.
    """
    d = np.sqrt(np.maximum(np.asarray(sq_distances, dtype=np.float64), 0.0))
    kept, out = d[~flagged], d[flagged]
    if kept.size == 0:
        return 0.0
    inner = float(kept.max())
    if out.size == 0:
        return 2.0 * (inner + res)
    outer = float(out.min())
    if outer > inner:
        return outer + inner
    return 2.0 * outer


def separating_critical_lambda(critical, flagged):
    """A lambda at which a step that flags a point iff lam < its critical lambda
    (:meth:`~robustclust._core.solver.Solver.critical_lambdas`) flags exactly
    ``flagged``: the middle of (largest kept, smallest flagged critical
    lambda); the largest kept one when nothing is flagged (no point exceeds
    it); 0 when every point is flagged.  When the sets interleave (a fixed
    set, such as the default count's noise points), the smallest flagged one:
    the flagged points below any kept one are then not flagged by it.
    """
    critical = np.asarray(critical, dtype=np.float64)
    kept, out = critical[~flagged], critical[flagged]
    if kept.size == 0:
        return 0.0
    inner = float(kept.max())
    if out.size == 0:
        return inner
    outer = float(out.min())
    return 0.5 * (outer + inner) if outer > inner else outer


def hard_threshold(sq_distances, lam):
    """Flagged by a refined model at ``lam``: ||x_n - m_{c(n)}|| > lam / 2.

    The group O-step's threshold, so that ``lambda_`` of a refined fit flags
    its outliers (:func:`separating_lambda`); ``predict`` and
    ``outlier_norms`` of a refined model apply it to new points.
    """
    d = np.sqrt(np.maximum(np.asarray(sq_distances, dtype=np.float64), 0.0))
    return d > 0.5 * float(lam)


def refined_scores(sq_distances, flagged):
    """The outlier score of a refined model: ||o_n|| with o_n = x_n - m_{c(n)}
    on the flagged points (the whole residual: the l0 problem of eqs. (3)-(4)
    sets o_n so), 0 elsewhere.

    The one definition of the score of a refined (l0) model, for ``fit``
    (:func:`refine_fit`) and for new points (``predict``, ``outlier_norms``):
    it is the distance to the nearest centre, not the group O-step's shrunk
    ||r_n|| - lambda_ / 2, which belongs to the l1 problem of eq. (5) that
    the refinement leaves.  Positive exactly on the flagged points (a flagged
    point lies farther than lambda_ / 2 >= 0 from its centre).
    """
    d = np.sqrt(np.maximum(np.asarray(sq_distances, dtype=np.float64), 0.0))
    return np.where(flagged, d, 0.0)


def threshold_outliers(sq_distances, labels, flagged, back=None):
    """The outliers of a refined model in State form: o_n = x_n - m_{c(n)}
    (shrink 1) on ``flagged``, sized by :func:`refined_scores`.  ``back``
    brings NumPy arrays to the geometry's namespace (identity by default)."""
    from .state import Outliers

    back = back or (lambda values: values)
    d = refined_scores(sq_distances, flagged)
    labels = np.asarray(labels).astype(np.int64, copy=False)
    index = np.flatnonzero(flagged).astype(np.int64)
    return Outliers(back(index), shrink=back(np.ones(index.size)),
                    weights=back(labels[index]), sizes=back(d[index]),
                    euclidean=back(d[index]), shrink_full=back(flagged.astype(np.float64)),
                    sizes_full=back(d), weights_full=back(labels))


def refined_assignment(solver, state, lam):
    """A state of new points assigned by a refined model (``predict``): the
    nearest centres of ``state`` and the outliers of :func:`threshold_outliers`
    at ``lam`` (internal units), the same rule and score as the fit's."""
    from dataclasses import replace

    g = solver.geometry
    sq = np.asarray(solver.to_host(solver.label_distances(state)), dtype=np.float64)
    labels = np.asarray(solver.to_host(state.labels))

    def back(values):
        return asarray(values, solver.xp, like=g.sq_norms)

    outliers = threshold_outliers(sq, labels, hard_threshold(sq, lam), back)
    return replace(state, outliers=outliers)


def refine_fit(problem, state, fixed=None):
    """The refined solution of a fitted hard robust K-means problem.

    Candidates: the fitted state's centres and every initialisation of the
    problem (one per restart), each concentrated by :func:`refine` with s =
    the requested count (the count the fit flagged when none was asked
    for); each runs REFINE_SCREEN_STEPS steps, the one of smallest l0 cost of
    eq. (3) then (the fitted state's on ties) on to a fixed point
    (:func:`continued`).
    With ``fixed`` (a boolean mask of the points to flag, the default
    count's noise points), the steps keep that set and ``state`` may be
    None (no penalized fit: the initialisations are the candidates).

    Parameters
    ----------
    problem : robustclust._estimators.base.Problem
        A linear, NumPy problem (dense or CSR data in internal units).
    state : State
        The unrefined solution.

    Returns
    -------
    state : State
        The refined centres and labels, the outliers of :func:`untied` (s
        of them, fewer when ties allow no more: see there) with
        o_n = x_n - m_{c(n)} (shrink 1: the hard threshold of eq. (4); eq.
        (3) sets them so), ``objective`` the l0 cost with s trimmed;
        ``history``, ``n_iter`` and ``converged`` of the unrefined run.
    lam : float
        :func:`separating_lambda` at the refined centres (internal units).
    history : list of float
        The l0 cost after each concentration step of the chosen candidate.
    """
    solver = problem.solver
    g = solver.geometry
    xp = solver.xp
    s = problem.target if problem.target is not None else state.n_outliers
    # the steps run on the host in float64 (sparse products need one dtype);
    # their results go back to the data's array namespace
    X = g.X if g.is_numpy else to_numpy(g.X, xp)
    # the geometry's squared norms are those of these rows (float64 X)
    norms = g.sq_norms if g.is_numpy and X.dtype == np.float64 else None
    space = PointSpace(X if X.dtype == np.float64 else X.astype(np.float64),
                       sq_norms=None if norms is None else np.asarray(norms, dtype=np.float64))
    w = np.asarray(solver.to_host(solver.sample_weight), dtype=np.float64)
    best = None
    starts = problem.inits if state is None else [state.centers, *problem.inits]
    screen = REFINE_SCREEN_STEPS if len(starts) > 1 else REFINE_MAX_STEPS
    for centres in _progress.steps("refinement", starts, len(starts)):
        centres = np.asarray(solver.to_host(centres), dtype=np.float64)
        candidate = refine(space, centres, w, s, max_steps=screen, fixed=fixed)
        if best is None or candidate.cost < best.cost:
            best = candidate
        candidate = None  # not alive through the next start's steps: (N,) arrays
    best = continued(space, best, w, s, fixed=fixed)
    res = resolution(space.sq_norms, best.centres)
    # a fixed set is flagged as it is; a trimmed count with no tie split
    flagged = best.trimmed if fixed is not None else untied(
        w * best.sq_distances, best.trimmed, best.sq_distances, w, res)
    refined = fixed_outlier_state(solver, best, state, flagged)
    return refined, separating_lambda(best.sq_distances, flagged, res), best.history


def fixed_outlier_state(solver, best, state=None, flagged=None):
    """The State of a :class:`Refined` result: its centres and labels, the
    points of ``flagged`` (its trimmed points by default) flagged with
    o_n = x_n - m_{c(n)} (shrink 1: the lam -> 0 limit of the group O-step
    on that set; eq. (3) sets them so; :func:`threshold_outliers`),
    ``objective`` its cost; ``history``, ``n_iter`` and ``converged`` of
    ``state`` (the unrefined run), else of the steps."""
    from .state import State

    g = solver.geometry
    xp = solver.xp

    def back(values, dtype=None):
        return asarray(values, xp, like=g.sq_norms, dtype=dtype)

    flagged = best.trimmed if flagged is None else flagged
    centres = solver.geometry_dtype(back(best.centres))
    outliers = threshold_outliers(best.sq_distances, best.labels, flagged, back)
    labels = best.labels.astype(np.int64, copy=False)  # shared with the outliers' own
    costs = np.where(flagged, 0.0, best.sq_distances)
    if state is None:
        history, n_iter, converged = list(best.history), best.steps, True
    else:
        history, n_iter, converged = list(state.history), state.n_iter, state.converged
    # the compiled pass's X (dense NumPy, rows enough for the compiled kernels):
    # no (N, C) products kept (those who need them compute them,
    # Solver.products_of), as for that pass's own states
    compiled = worth(g.n_samples) and _fused.dense_linear(solver)
    products = None if compiled else g.products(centres)
    return State(centres, products, back(labels), None, outliers, back(costs),
                 best.cost, history=history, n_iter=n_iter, converged=converged)
