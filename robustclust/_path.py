"""The warm-started regularization path (the paper's "Selecting lambda" remark)."""

import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone

from . import _progress

from ._core.selection import kmeans_solution, lambda_grid

#: Each grid value is solved to this multiple of the estimator's tolerance.
PATH_TOL_FACTOR = 10.0


@dataclass(frozen=True)
class RegularizationPath:
    """Solutions of a robust clustering problem along a decreasing lambda grid.

    Attributes
    ----------
    lambdas : ndarray of shape (n_lambdas,)
        The grid, decreasing.
    outlier_norms : ndarray of shape (n_lambdas, n_samples)
        ||o_n||_2 of every point at every lambda (the curves of Fig. 2).
    n_outliers : ndarray of shape (n_lambdas,)
        Number of flagged points at every lambda (Fig. 3).
    objectives : ndarray of shape (n_lambdas,)
        Final cost at every lambda.
    n_iter : ndarray of shape (n_lambdas,)
        BCD iterations spent at every lambda (both runs when weighted).
    centers : ndarray of shape (n_lambdas, n_clusters, n_features)
        Centres at every lambda.
    lambda_max : float
        Smallest lambda at which nothing is flagged, from the K-means start.
    fit_time : float
        Seconds spent on the whole path, the K-means start included.
    """

    lambdas: np.ndarray
    outlier_norms: np.ndarray
    n_outliers: np.ndarray
    objectives: np.ndarray
    n_iter: np.ndarray
    centers: np.ndarray
    lambda_max: float
    fit_time: float

    def lambda_range(self, n_outliers):
        """(min, max) of the grid values at which exactly ``n_outliers`` are flagged.

        Returns None when no grid value flags that many (e.g. the paper's
        "lambda in [6.2, 7.6] yields 80" for its Fig. 3).
        """
        hit = self.lambdas[self.n_outliers == n_outliers]
        if len(hit) == 0:
            return None
        return float(hit.min()), float(hit.max())


#: Most lambda values of a grid (the command line's --n-lambdas has the same cap).
MAX_N_LAMBDAS = 10_000


def regularization_path(estimator, X, lambdas=None, n_lambdas=100, *,
                        sample_weight=None, lambda_min_ratio=1e-3, path_tol=None):
    """Solve along a decreasing lambda grid with warm starts.

    The estimator's own settings (n_clusters, fuzzifier, penalty, init,
    n_init, random_state, ...) define the problem; its ``lam`` and
    ``n_outliers`` are ignored.  The path starts from the best K-means
    solution over the estimator's initialisations (lambda = inf) and each
    grid point is solved from the solution at the previous one, so few
    iterations are needed per lambda.  With a log penalty each grid point
    is the paper's weighted solution at that lambda: the unweighted problem
    (warm-started along the path) followed by the weighted one from it.

    Parameters
    ----------
    estimator : RobustKMeans
        Unfitted or fitted; it is not modified.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
    lambdas : array-like, default=None
        Grid to use (sorted decreasing).  None: ``n_lambdas`` values spaced
        geometrically from lambda_max down to ``lambda_min_ratio * lambda_max``.
    n_lambdas : int, default=100
        Number of grid values, 1 to 10,000.
    sample_weight : array-like of shape (n_samples,), default=None
    lambda_min_ratio : float, default=1e-3
    path_tol : float, default=None
        Each grid value is solved to ``path_tol`` times the estimator's
        ``tol`` (the next value starts from it, so the error does not add up
        along the path).  None: 10 for K-means (soft K-means converges
        linearly; on the paper's set this halves the path's iterations and
        moves its centres by < 1e-3 relative), 1 for the mixture, whose
        tolerance is already on the objective.  1 solves every value as a
        fixed-lambda fit would (K-means: until its centres and its outlier
        matrix settle), and so does any value up to 1.  Above 1, a K-means
        grid value stops once its flagged set is unchanged and its centres
        move by at most ``path_tol * tol`` relative (after two iterations at
        least): the outlier rows follow from the centres and memberships,
        and with every point flagged (the bottom of a path) they drift for
        hundreds of soft K-means iterations while the centres hardly move.
        The weighted stage of a grid value (the reported solution of
        a log penalty, started from the unweighted one) keeps the fit's
        rule at ``path_tol * tol``: with the centres' rule a soft weighted
        path's outlier norms moved by a few percent.

    Returns
    -------
    path : RegularizationPath
    """
    start = time.perf_counter()
    if not 0 < lambda_min_ratio < 1:
        raise ValueError(f"lambda_min_ratio must be in (0, 1), got {lambda_min_ratio!r}.")
    if lambdas is None and not (isinstance(n_lambdas, (int, np.integer))
                                and not isinstance(n_lambdas, bool)
                                and 1 <= n_lambdas <= MAX_N_LAMBDAS):
        raise ValueError(f"n_lambdas must be a positive integer, at most {MAX_N_LAMBDAS}; "
                         f"got {n_lambdas!r}.")
    est = clone(estimator).set_params(lam=None, n_outliers=None)
    problem = est.build_problem(X, sample_weight)
    solver = problem.solver
    if lambdas is not None:
        grid = np.asarray(lambdas, dtype=np.float64).ravel()
        if grid.size == 0 or np.any(np.isnan(grid)) or np.any(grid < 0):
            raise ValueError("lambdas must be a non-empty array of values >= 0.")
        grid = np.sort(grid)[::-1]
        if not solver.zero_lambda_ok and np.any(grid == 0):
            raise ValueError(f"lambdas must be > 0 for {type(estimator).__name__}: "
                             "lam = 0 makes its cost unbounded below.")
    if path_tol is None:  # EM stops on its objective: its tolerance is not loosened
        path_tol = 1.0 if solver.model.stops_on_objective else PATH_TOL_FACTOR
    tol = solver.tol * path_tol
    settle = "centres" if path_tol > 1.0 else "fit"
    with solver.blas():
        state = kmeans_solution(solver, problem.inits)
        lam_max = problem.user_lambda(solver.lambda_max(state))
        if lambdas is None:
            grid = lambda_grid(lam_max, n_lambdas, lambda_min_ratio)
        n = solver.geometry.n_samples
        norms = np.zeros((len(grid), n))
        counts = np.zeros(len(grid), dtype=np.intp)
        objectives = np.zeros(len(grid))
        iters = np.zeros(len(grid), dtype=np.intp)
        centers = None
        for g, lam in _progress.steps("lambda path", enumerate(grid), len(grid)):
            internal = lam / problem.lambda_unit
            state = solver.run(state, internal, tol=tol, settle=settle)
            shown, spent = state, state.n_iter
            if est.penalty.startswith("log"):
                shown = solver.run(state, internal, weighted=True, tol=tol)
                spent += shown.n_iter
            norms[g] = problem.user_outlier_norms(shown)
            counts[g] = shown.n_outliers
            objectives[g] = problem.user_objective(shown.objective)
            iters[g] = spent
            user = problem.user_centers(shown)
            if centers is None:
                centers = np.zeros((len(grid),) + user.shape, dtype=_centre_dtype(solver))
            centers[g] = user
    return RegularizationPath(grid, norms, counts, objectives, iters, centers,
                              float(lam_max), time.perf_counter() - start)


def _centre_dtype(solver):
    g = solver.geometry
    return np.float64 if (g.kernel or solver.model.mixture) else g.dtype
