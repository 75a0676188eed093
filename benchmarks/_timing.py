"""Timing helper shared by the benchmark scripts."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning


def fit_time(make, X, n_iter):
    """Seconds to fit ``make(n_iter)`` on X, checking it ran exactly n_iter iterations."""
    model = make(n_iter)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X)
    elapsed = time.perf_counter() - start
    assert model.n_iter_ == n_iter, (model.n_iter_, n_iter)
    return elapsed


def per_iteration(make, X, n_iter, repeats):
    """Median marginal cost of one iteration: (t(2k) - t(k)) / k.

    Differencing removes the fixed cost of a fit (input validation, the first
    assignment), so this is the cost of the loop body alone; the median
    whole-fit time for k iterations is returned as well.
    """
    marginal, whole = [], []
    for _ in range(repeats):
        short = fit_time(make, X, n_iter)
        long = fit_time(make, X, 2 * n_iter)
        marginal.append((long - short) / n_iter)
        whole.append(short)
    return float(np.median(marginal)), float(np.median(whole))
