"""Compiled concentration steps for a dense NumPy X (numba).

The concentration step of :mod:`robustclust._core.refine` (assign each point
to its nearest centre, trim the ``n_trim`` points of largest weighted cost,
move each centre to the weighted mean of its kept points) is run many times
per fit: three screening steps for each of several seedings of every
restart's robust start, up to 30 for the start kept, and up to 100 for each
candidate of the trimmed refinement.  Written with NumPy calls, a step on a
small data set costs a few hundred microseconds of call overhead, about what
its arithmetic costs on 10^5 points.  :func:`concentration_steps_dense` runs
the whole loop in one compiled call with the same arithmetic:

* squared distances ||m_c||^2 + ||x_n||^2 - 2 <x_n, m_c>, clipped at 0, the
  nearest centre the first of the smallest (as ``np.argmin``);
* the trimmed set: the ``n_trim`` points of largest cost, ties at the
  boundary broken towards the lower index;
* the means summed over the kept points in increasing index (as the sparse
  label matrix's product did), a centre without kept weight left in place.

It stops when the labels and the trimmed set repeat, as the NumPy loop does.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

#: Rows of a float32 X converted to float64 at a time for the products.
_CONVERT_ROWS = 2048


def _products(X, centres_t):
    """<x_n, m_c> for every row, (N, C), in float64."""
    return np.dot(np.asarray(X, dtype=np.float64), centres_t)


@overload(_products)
def _products_compiled(X, centres_t):
    if X.dtype == types.float64:
        return lambda X, centres_t: np.dot(X, centres_t)

    def converted(X, centres_t):
        # a float32 X: its rows converted to float64 a block at a time (the
        # products NumPy takes of float32 rows and float64 centres, without a
        # float64 copy of X)
        n, p = X.shape
        G = np.empty((n, centres_t.shape[1]))
        block = np.empty((min(n, _CONVERT_ROWS), p))
        for lo in range(0, n, _CONVERT_ROWS):
            hi = min(n, lo + _CONVERT_ROWS)
            rows = block[:hi - lo]
            rows[:, :] = X[lo:hi]
            G[lo:hi] = np.dot(rows, centres_t)
        return G

    return converted


@njit(nogil=True, cache=True)
def _assign(X, sq_norms, centres, w, labels, d2, costs):
    n = X.shape[0]
    C = centres.shape[0]
    G = _products(X, np.ascontiguousarray(centres.T))
    msq = np.empty(C)
    for c in range(C):
        acc = 0.0
        for j in range(centres.shape[1]):
            acc += centres[c, j] * centres[c, j]
        msq[c] = acc
    for i in range(n):
        best = np.inf
        arg = 0
        for c in range(C):
            v = msq[c] + sq_norms[i] - 2.0 * G[i, c]
            if v < 0.0:
                v = 0.0
            if v < best:
                best = v
                arg = c
        labels[i] = arg
        d2[i] = best
        costs[i] = w[i] * best


@njit(nogil=True, cache=True)
def _trim(costs, n_trim, trimmed):
    """``trimmed`` := the ``n_trim`` largest costs (ties towards the lower index)."""
    n = costs.shape[0]
    trimmed[:] = False
    if n_trim <= 0:
        return
    if n_trim >= n:
        trimmed[:] = True
        return
    # the smallest trimmed value: the (n - n_trim)-th order statistic (0-based)
    bound = np.partition(costs, n - n_trim)[n - n_trim]
    above = 0
    for i in range(n):
        if costs[i] > bound:
            trimmed[i] = True
            above += 1
    left = n_trim - above
    for i in range(n):
        if left == 0:
            break
        if costs[i] == bound:
            trimmed[i] = True
            left -= 1


@njit(nogil=True, cache=True)
def _means(X, labels, trimmed, w, centres, out):
    n, p = X.shape
    C = centres.shape[0]
    sums = np.zeros((C, p))
    weights = np.zeros(C)
    for i in range(n):
        if trimmed[i]:
            continue
        c = labels[i]
        wi = w[i]
        weights[c] += wi
        for j in range(p):
            sums[c, j] += wi * X[i, j]
    for c in range(C):
        if weights[c] > 0:
            for j in range(p):
                out[c, j] = sums[c, j] / weights[c]
        else:
            for j in range(p):
                out[c, j] = centres[c, j]


@njit(nogil=True, cache=True)
def _kept_cost(costs, trimmed):
    total = 0.0
    for i in range(costs.shape[0]):
        if not trimmed[i]:
            total += costs[i]
    return total


@njit(nogil=True, cache=True)
def _steps(X, sq_norms, centres, w, n_trim, max_steps, history):
    n = X.shape[0]
    labels = np.empty(n, dtype=np.int64)
    previous = np.empty(n, dtype=np.int64)
    trimmed = np.zeros(n, dtype=np.bool_)
    was = np.zeros(n, dtype=np.bool_)
    d2 = np.empty(n)
    costs = np.empty(n)
    current = centres.copy()
    new = np.empty_like(centres)
    cost = 0.0
    for step in range(max_steps + 1):
        _assign(X, sq_norms, current, w, labels, d2, costs)
        _trim(costs, n_trim, trimmed)
        cost = _kept_cost(costs, trimmed)
        history[step] = cost
        same = step > 0
        if same:
            for i in range(n):
                if labels[i] != previous[i] or trimmed[i] != was[i]:
                    same = False
                    break
        if step == max_steps or same:
            return current, cost, step, labels, trimmed, d2
        previous[:] = labels
        was[:] = trimmed
        _means(X, labels, trimmed, w, current, new)
        current, new = new, current
    return current, cost, max_steps, labels, trimmed, d2  # pragma: no cover


def concentration_steps_dense(X, sq_norms, centres, sample_weight, n_trim, max_steps):
    """Concentration steps from ``centres`` on a dense float64 or float32 X, compiled.

    Returns (centres, cost, steps, history, labels, trimmed, sq_distances):
    the centres at which the last step assigned, the l0 cost there, the
    number of steps taken, the cost at the centres of every step, and the
    last assignment (nearest centre, trimmed mask, squared distance to the
    nearest centre).  See :func:`robustclust._core.refine.concentration_steps`.
    """
    history = np.empty(max_steps + 1)
    if not (X.dtype in (np.float64, np.float32)
            and (X.flags.c_contiguous or X.flags.f_contiguous)):
        X = np.ascontiguousarray(X, dtype=np.float64)
    centres, cost, steps, labels, trimmed, d2 = _steps(
        X, np.asarray(sq_norms, dtype=np.float64),
        np.ascontiguousarray(centres, dtype=np.float64),
        np.ascontiguousarray(sample_weight, dtype=np.float64), int(n_trim), int(max_steps),
        history)
    return centres, float(cost), int(steps), history[:steps + 1].tolist(), labels, trimmed, d2
