"""Trimmed-likelihood refinement of a robust mixture: concentration steps with EM.

The mixture's counterpart of :mod:`robustclust._core.refine`.  For s
outliers the trimmed-likelihood problem (Neykov, Filzmoser, Dimova and
Neytchev 2007; the mixture variant of tclust, Garcia-Escudero, Gordaliza,
Matran and Mayo-Iscar 2008) is

    max over theta = (pi, m, Sigma) and a set T of s points of
        L_T(theta) = sum_{n not in T} log sum_c pi_c N(x_n; m_c, Sigma_c),

with Sigma under the model's restrictions (the ``reg_covar`` floor and the
``eigenvalue_ratio`` bound, :func:`~robustclust._core.covariance.constrain_eigenvalues`).
A *concentration step* from theta:

1. E-step: the log-density l_n(theta) of every point; T := the s points of
   smallest l_n (every other choice of s points has a smaller L_T(theta));
2. M-step on the kept points: the posteriors gamma_nc of eq. (20) for
   n not in T (0 on T), then pi, the means and the covariances of eqs.
   (22), (23), (26) from those weights alone, the covariances as the exact
   minimizer over the restrictions (the same functions as the EM step:
   ``MixtureModel._covariance_of``, ``ComponentMixtureModel.covariances_from_scatter``).

Step 1 maximizes L_T over T at fixed theta and step 2 is an EM step for the
kept points, which cannot decrease their log-likelihood, so L_T never
decreases from one step to the next (``tests/test_trimmed_mixture.py``
checks it).  The steps stop when T repeats and L_T rose by at most ``tol``
per kept point (scikit-learn's rule for EM), or after ``max_steps``.

A flagged point moves nothing: it has weight 0 in every M-step, so how far
it lies does not enter the fit (the penalized fit of eq. (8) grows sigma by
lam sum_n ||o_n|| in eq. (27), which one far point can make as large as it
likes).  Where this differs from tclust: the posteriors are soft (tclust's
``opt="mixture"``, not its classification likelihood), the restriction
bounds the eigenvalues over every component and direction at once as
tclust's ``restr.fact`` does, with our floor below it, and the covariance
types include the tied ones of the paper.  Where it differs from eq. (8)
with an l0 penalty: there a flagged point's o_n = x_n - m_c still costs
-log max_c pi_c N(m_c; m_c, Sigma_c), a term that rewards shrinking Sigma;
the trimmed likelihood drops the point.

Candidates (:func:`refine_mixture`): the penalized fit's parameters and the
initial parameters of every start; the largest L_T wins.
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import logsumexp

from .. import _progress
from .backend import asarray
from .covariance import ComponentCovariances
from .models import _TINY
from .state import Outliers

_LOG_2PI = math.log(2 * math.pi)

#: Costs that differ by at most this much relative to their size tie
#: (equal rows get equal log-densities up to rounding of their products).
TIE_RTOL = 1e-12


def log_densities(X, weights, means, cov):
    """log pi_c + log N(x_n; m_c, Sigma_c) of every point and component, (N, C).

    ``cov`` is one Covariance (common to all components) or a
    ComponentCovariances; X dense float64 (N, p).
    """
    C = means.shape[0]
    parts = cov.parts if isinstance(cov, ComponentCovariances) else [cov] * C
    out = np.empty((X.shape[0], C))
    for c, part in enumerate(parts):
        W = part.whiten(X - means[c])
        out[:, c] = -0.5 * (part.dim * _LOG_2PI + part.log_det + np.einsum("ij,ij->i", W, W))
    with np.errstate(divide="ignore"):
        out += np.log(np.asarray(weights, dtype=np.float64))
    return out


def m_step(model, X, resp):
    """(pi, means, covariance) of eqs. (22), (23), (26) from the weights ``resp``
    (the posteriors, 0 on trimmed points), under the model's restrictions."""
    nk = resp.sum(axis=0) + _TINY
    weights = nk / nk.sum()
    means = (resp.T @ X) / nk[:, None]
    n_kept = float(resp.sum())
    kind = model.kind
    C, p = means.shape
    if getattr(model, "covariances_from_scatter", None) is not None:  # per component
        if kind == "full":
            S = np.empty((C, p, p))
            for c in range(C):
                R = X - means[c]
                S[c] = (R * resp[:, c:c + 1]).T @ R
        else:
            S = np.stack([resp[:, c] @ (X - means[c]) ** 2 for c in range(C)])
        return weights, means, model.covariances_from_scatter(S, nk)
    if kind == "spherical":
        trace = sum(float(resp[:, c] @ ((X - means[c]) ** 2).sum(axis=1)) for c in range(C))
        return weights, means, model._covariance_of(trace, 0.0, None, n_kept)
    S = np.zeros((p, p))
    for c in range(C):
        R = X - means[c]
        S += (R * resp[:, c:c + 1]).T @ R
    return weights, means, model._covariance_of(None, None, S, n_kept)


def trim_lowest(log_density, n_trim, fixed=None):
    """The trimmed set T: the ``n_trim`` points of smallest log-density (ties
    towards the lower index), or ``fixed`` when given."""
    if fixed is not None:
        return np.asarray(fixed, dtype=bool)
    order = np.lexsort((np.arange(log_density.shape[0]), log_density))
    mask = np.zeros(log_density.shape[0], dtype=bool)
    mask[order[:n_trim]] = True
    return mask


@dataclass
class TrimmedMixture:
    """A fixed point of the concentration steps (internal units, host float64).

    Attributes
    ----------
    weights, means : ndarray
    covariance : Covariance or ComponentCovariances
    trimmed : ndarray of shape (N,), dtype bool
    log_density : ndarray of shape (N,)
        l_n at the returned parameters.
    cost : float
        -L_T: minus the log-likelihood of the kept points.
    history : list of float
        The cost after each step, starting from the candidate's.
    steps : int
    converged : bool
    """

    weights: np.ndarray
    means: np.ndarray
    covariance: object
    trimmed: np.ndarray
    log_density: np.ndarray
    cost: float
    history: list = field(default_factory=list)
    steps: int = 0
    converged: bool = False


def concentrate(model, X, weights, means, cov, n_trim, max_steps, tol, fixed=None):
    """Concentration steps from (pi, m, Sigma) until T settles and L_T stops rising.

    Parameters
    ----------
    model : MixtureModel or ComponentMixtureModel
        Its kind, floor and eigenvalue-ratio bound define the M-step.
    X : ndarray of shape (N, p), float64
    weights, means, cov : the starting parameters
    n_trim : int
    max_steps : int
    tol : float
        Stop when L_T rose by at most ``tol`` per kept point and T repeated.
    fixed : ndarray of shape (N,), dtype bool, default=None
        A trimmed set given in advance (the default count's noise points):
        the steps are then EM on the other points.

    Returns
    -------
    TrimmedMixture
    """
    n = X.shape[0]
    kept = max(n - (int(np.count_nonzero(fixed)) if fixed is not None else n_trim), 1)
    history, previous, steps, converged = [], None, 0, False
    while True:
        logp = log_densities(X, weights, means, cov)
        ell = logsumexp(logp, axis=1)
        trimmed = trim_lowest(ell, n_trim, fixed)
        cost = -float(ell[~trimmed].sum())
        if history and previous is not None and np.array_equal(previous, trimmed) \
                and history[-1] - cost <= tol * kept:
            converged = True
        history.append(cost)
        if converged or steps >= max_steps:
            return TrimmedMixture(weights, means, cov, trimmed, ell, cost, history, steps,
                                  converged)
        with np.errstate(under="ignore"):
            resp = np.exp(logp - ell[:, None])
        resp[trimmed] = 0.0
        weights, means, cov = m_step(model, X, resp)
        previous = trimmed
        steps += 1


def untied_trimmed(log_density, trimmed):
    """The trimmed set with no tie split: when the boundary log-density is shared
    by kept and trimmed points (repeated rows), the tie is trimmed whole or not
    at all, whichever count is nearer s (the smaller one when both are as
    near), as :func:`robustclust._core.refine.untied` does for K-means."""
    s = int(np.count_nonzero(trimmed))
    if s == 0 or s == trimmed.shape[0]:
        return trimmed
    inner = float(log_density[~trimmed].min())
    slack = TIE_RTOL * max(abs(inner), 1.0)
    tie = np.abs(log_density - inner) <= slack
    if not (tie & trimmed).any():
        return trimmed
    beyond = trimmed & ~tie
    fewer = int(np.count_nonzero(beyond))
    more = fewer + int(np.count_nonzero(tie))
    return beyond | tie if more - s < s - fewer else beyond


def separating_level(log_density, trimmed):
    """A log-density below which exactly the trimmed points lie: the middle of
    the gap between the largest trimmed and the smallest kept l_n (the
    refined model's rule for new points); -inf without trimmed points,
    +inf when every point is trimmed.  When the sets interleave (a fixed
    trimmed set), the smallest kept l_n."""
    if not trimmed.any():
        return -math.inf
    if trimmed.all():
        return math.inf
    low, high = float(log_density[trimmed].max()), float(log_density[~trimmed].min())
    if low < high:
        return 0.5 * (low + high) if math.isfinite(low) else high - 1.0
    return high


def refine_mixture(problem, state, fixed=None):
    """The trimmed-likelihood refinement of a fitted mixture problem.

    Candidates: the parameters of ``state`` (the penalized fit; None for
    none) and the initial parameters of every initialisation of the
    problem, each concentrated by :func:`concentrate` with s = the
    requested count (the count the fit flagged when none was asked for);
    the smallest cost -L_T wins (the fitted state's on ties).  With
    ``fixed`` the steps keep that trimmed set.

    Returns
    -------
    state : State
        The refined parameters' E-step state with o = 0 posteriors, the
        trimmed points flagged with o_n = r_n = x_n - sum_c gamma_nc m_c
        (shrink 1), ``point_costs`` -l_n of the kept points (0 on the
        flagged), ``objective`` -L_T.
    level : float
        :func:`separating_level`, in internal units.
    history : list of float
        -L_T after each step of the chosen candidate.
    """
    solver = problem.solver
    model = solver.model
    g = solver.geometry
    X = np.asarray(g.X, dtype=np.float64)
    s = problem.target if problem.target is not None else state.n_outliers
    candidates = []
    if state is not None:
        candidates.append((np.asarray(state.weights, dtype=np.float64),
                           np.asarray(state.centers, dtype=np.float64), state.covariance))
    for init in problem.inits:
        centers, exclude = init if isinstance(init, tuple) else (init, None)
        centers = asarray(np.asarray(centers, dtype=np.float64), g.xp, like=g.sq_norms)
        _, weights, cov = model.initial_parameters(solver, centers, exclude)
        candidates.append((np.asarray(weights, dtype=np.float64), np.asarray(centers), cov))
    best = None
    for weights, means, cov in _progress.steps("refinement", candidates, len(candidates)):
        result = concentrate(model, X, weights, means, cov, s, solver.max_iter, solver.tol,
                             fixed)
        if best is None or result.cost < best.cost:
            best = result
    trimmed = best.trimmed if fixed is not None else untied_trimmed(best.log_density,
                                                                   best.trimmed)
    return (trimmed_state(solver, best, trimmed, state), separating_level(best.log_density,
                                                                         trimmed),
            best.history)


def trimmed_state(solver, best, trimmed, state=None):
    """The State of a :class:`TrimmedMixture` with ``trimmed`` flagged
    (see :func:`refine_mixture`); ``history``, ``n_iter`` and ``converged``
    of ``state`` (the penalized run) when given, else of the steps."""
    g = solver.geometry
    centers = asarray(best.means, g.xp, like=g.sq_norms)
    cov = best.covariance
    products = None if isinstance(cov, ComponentCovariances) else g.products(centers,
                                                                             cov.metric)
    clean = solver.model.start(solver, centers, products, best.weights, cov)
    if state is None:
        history, n_iter, converged = list(best.history), best.steps, best.converged
    else:
        history, n_iter, converged = list(state.history), state.n_iter, state.converged
    return replace(flag_points(solver, clean, trimmed), history=history, n_iter=n_iter,
                   converged=converged)


def flag_points(solver, clean, flagged):
    """A mixture state with o = 0 (``clean``: an E-step at fixed parameters) with
    the points ``flagged`` made outliers: o_n = r_n = x_n - sum_c gamma_nc m_c
    (shrink 1, the gamma of the o = 0 E-step), sized in the covariance's norm
    (per component: sum_c gamma_nc ||r_n||_{Sigma_c^-1}), their costs 0 and
    ``objective`` minus the log-likelihood of the others.  The refined fit's
    state and a refined model's state of new points (``predict``)."""
    g = solver.geometry
    cov = clean.covariance
    resp = np.asarray(clean.memberships, dtype=np.float64)
    means = np.asarray(clean.centers, dtype=np.float64)
    flagged = np.asarray(flagged, dtype=bool)
    index = np.flatnonzero(flagged).astype(np.int64)
    X = g.X
    rows = np.asarray(X[index].toarray() if hasattr(X, "toarray") else X[index],
                      dtype=np.float64) - resp[index] @ means
    if isinstance(cov, ComponentCovariances):
        component = (np.sqrt(cov.sq_norms(rows)) if index.size
                     else np.zeros((0, len(cov.parts))))
        sizes = (resp[index] * component).sum(axis=1)
    else:
        component = None
        sizes = np.sqrt(cov.sq_norms(rows)) if index.size else np.zeros(0)
    n = flagged.shape[0]
    sizes_full, shrink_full = np.zeros(n), np.zeros(n)
    sizes_full[index], shrink_full[index] = sizes, 1.0
    outliers = Outliers(index, shrink=np.ones(index.size), weights=resp[index], sizes=sizes,
                        rows=rows, euclidean=np.sqrt((rows * rows).sum(axis=1)),
                        shrink_full=shrink_full, sizes_full=sizes_full, weights_full=resp,
                        component_sizes=component)
    costs = np.where(flagged, 0.0, np.asarray(clean.point_costs, dtype=np.float64))
    return replace(clean, outliers=outliers, point_costs=costs, objective=float(costs.sum()))
