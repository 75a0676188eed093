"""The lambda grid of ``robustclust path``: geometric, then refined where the count jumps.

A geometric grid from lambda_max down to lambda_max / 1000 can step over
everything that matters: on the graphs of Section VI every node turns into
an outlier between two neighbouring grid values (karate: 0, then 34 at the
next value).  :func:`refined_path` solves the geometric grid, then adds
values evenly inside each interval whose counts differ by more than
``ceil(N / n_lambdas)`` and solves again, for a few rounds, so that the
table shows where the count changes.  Each round is one warm-started
:func:`robustclust.regularization_path` on the merged grid.

When lambda_max does not flag nothing (the mixture's lambda_max comes from
the K-means start and is not exact for the mixture), the grid is extended
upwards by doubling until a value flags nothing, so that the table starts
with zero outliers.
"""

import dataclasses
import math

import numpy as np

from .. import regularization_path

#: Rounds of refinement at most.
MAX_ROUNDS = 8
#: Values added inside one interval per round at most.
MAX_INSERTED = 8
#: Doublings of lambda_max tried at most when it still flags something.
MAX_DOUBLINGS = 8
#: Intervals narrower than this (relative) are not split further: counts that jump
#: there jump at once as far as four significant digits can tell.
MIN_RELATIVE_WIDTH = 1e-4


def _geometric(high, low, n):
    if n == 1:
        return np.array([high])
    return np.geomspace(high, low, n)


def _merged(grid, new):
    return np.unique(np.r_[grid, new])[::-1]


def refined_path(estimator, X, *, n_lambdas, lam_min=None, lam_max=None, refine=True):
    """The regularization path on a grid that follows the outlier count.

    Parameters
    ----------
    estimator : estimator
        As for :func:`robustclust.regularization_path`.
    X : array-like
    n_lambdas : int
        Values of the geometric grid.
    lam_min, lam_max : float, default=None
        Ends of the geometric grid; None: lambda_max / 1000 and lambda_max.
    refine : bool, default=True
        Add values where the count jumps (and above a lambda_max that flags
        something); False keeps the geometric grid.

    Returns
    -------
    path : RegularizationPath
        The last path solved.
    lambda_max_flags : int or None
        Outliers at the estimator's lambda_max (None when ``lam_max`` is given).
    """
    if lam_max is None:
        if lam_min is None:
            path = regularization_path(estimator, X, n_lambdas=n_lambdas)
        else:
            top = regularization_path(estimator, X, lambdas=[lam_min]).lambda_max
            if not lam_min < top:
                raise ValueError(f"--lam-min {lam_min:g} is not below lambda_max "
                                 f"({top:.4g}), where the path starts")
            path = regularization_path(estimator, X,
                                       lambdas=_geometric(top, lam_min, n_lambdas))
    else:
        path = regularization_path(
            estimator, X, lambdas=_geometric(lam_max, lam_min or lam_max / 1000, n_lambdas))
    n = path.outlier_norms.shape[1]
    gap = max(1, math.ceil(n / n_lambdas))
    budget = 3 * n_lambdas + 50
    for _ in range(MAX_ROUNDS if refine else 0):
        lams, counts = path.lambdas, path.n_outliers
        new = []
        if lam_max is None and counts[0] > 0 and lams[0] < path.lambda_max * 2 ** MAX_DOUBLINGS:
            new += [lams[0] * 2.0 ** j for j in range(1, MAX_DOUBLINGS + 1)]
        for i in range(len(lams) - 1):
            jump = abs(int(counts[i]) - int(counts[i + 1]))
            if jump > gap and lams[i] - lams[i + 1] > MIN_RELATIVE_WIDTH * lams[i]:
                inserted = min(math.ceil(jump / gap), MAX_INSERTED)
                new += list(np.linspace(lams[i + 1], lams[i], inserted + 2)[1:-1])
        room = budget - len(lams)
        if not new or room <= 0:
            break
        path = regularization_path(estimator, X, lambdas=_merged(lams, new[:room]))
    if lam_max is not None:
        return path, None
    path = _trim_top(path)
    at_max = np.flatnonzero(path.lambdas == path.lambda_max)
    return path, (int(path.n_outliers[at_max[0]]) if len(at_max) else None)


def _trim_top(path):
    """The path without the values added above lambda_max but the lowest that flags none."""
    above = np.flatnonzero((path.lambdas > path.lambda_max) & (path.n_outliers == 0))
    if len(above) <= 1:
        return path
    keep = slice(above[-1], None)
    return dataclasses.replace(
        path, lambdas=path.lambdas[keep], outlier_norms=path.outlier_norms[keep],
        n_outliers=path.n_outliers[keep], objectives=path.objectives[keep],
        n_iter=path.n_iter[keep], centers=path.centers[keep])
