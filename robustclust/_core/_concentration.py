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

#: Entries of the blocks of rows of X whose products with the centres a step
#: takes at a time (256 kB, about a core's L2 cache): the block of products
#: (rows x C) and of float32 rows converted to float64 (rows x p).  The
#: (N, C) product matrix of all rows would be the largest array of a
#: refinement, 32 MB at 10^6 rows and 4 centres, as large as X
#: (benchmarks/bench_memory.py).  A step took 1.1x the time of one with the
#: whole product at 300,000 x 4 rows (4 centres) and 100,000 x 32 (16), 0.5x
#: at 10^6 x 4 (16); blocks of 2 MB took 0.9-1.5x and 0.9x.
_BLOCK_ENTRIES = 2**15


@njit(nogil=True, cache=True)
def _block_rows(n, p, C):
    """Rows of a block: _BLOCK_ENTRIES over the wider of p and C, at least one."""
    return max(1, min(n, _BLOCK_ENTRIES // max(p, C, 1)))


def _block_products(X, lo, hi, centres_t, rows, G):
    """``G[:hi - lo]`` := <x_n, m_c> for the rows ``lo:hi`` of X, in float64."""
    G[:hi - lo] = np.dot(np.asarray(X[lo:hi], dtype=np.float64), centres_t)


@overload(_block_products)
def _block_products_compiled(X, lo, hi, centres_t, rows, G):
    if X.dtype == types.float64 and X.layout == "C":
        def direct(X, lo, hi, centres_t, rows, G):
            G[:hi - lo] = np.dot(X[lo:hi], centres_t)
        return direct

    def converted(X, lo, hi, centres_t, rows, G):
        # float32 (or Fortran-ordered) rows copied into a float64 block: the
        # products NumPy takes of float32 rows and float64 centres, without a
        # float64 copy of X
        block = rows[:hi - lo]
        block[:, :] = X[lo:hi]
        G[:hi - lo] = np.dot(block, centres_t)

    return converted


@njit(nogil=True, cache=True)
def _assign(X, sq_norms, centres, w, labels, d2, costs):
    """Nearest centres, squared distances and costs of every row; whether a
    label changed."""
    n, p = X.shape
    C = centres.shape[0]
    centres_t = np.ascontiguousarray(centres.T)
    msq = np.empty(C)
    for c in range(C):
        acc = 0.0
        for j in range(p):
            acc += centres[c, j] * centres[c, j]
        msq[c] = acc
    size = _block_rows(n, p, C)
    rows = np.empty((size, p))
    G = np.empty((size, C))
    changed = False
    for lo in range(0, n, size):
        hi = min(n, lo + size)
        _block_products(X, lo, hi, centres_t, rows, G)
        for i in range(lo, hi):
            best = np.inf
            arg = 0
            for c in range(C):
                v = msq[c] + sq_norms[i] - 2.0 * G[i - lo, c]
                if v < 0.0:
                    v = 0.0
                if v < best:
                    best = v
                    arg = c
            if labels[i] != arg:
                changed = True
            labels[i] = arg
            d2[i] = best
            costs[i] = w[i] * best
    return changed


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
    trimmed = np.zeros(n, dtype=np.bool_)
    was = np.zeros(n, dtype=np.bool_)
    d2 = np.empty(n)
    costs = np.empty(n)
    current = centres.copy()
    new = np.empty_like(centres)
    cost = 0.0
    for step in range(max_steps + 1):
        moved = _assign(X, sq_norms, current, w, labels, d2, costs)
        _trim(costs, n_trim, trimmed)
        cost = _kept_cost(costs, trimmed)
        history[step] = cost
        same = step > 0 and not moved
        if same:
            for i in range(n):
                if trimmed[i] != was[i]:
                    same = False
                    break
        if step == max_steps or same:
            return current, cost, step, labels, trimmed, d2, same
        was[:] = trimmed
        _means(X, labels, trimmed, w, current, new)
        current, new = new, current
    return current, cost, max_steps, labels, trimmed, d2, False  # pragma: no cover


def concentration_steps_dense(X, sq_norms, centres, sample_weight, n_trim, max_steps):
    """Concentration steps from ``centres`` on a dense float64 or float32 X, compiled.

    Returns (centres, cost, steps, history, labels, trimmed, sq_distances,
    settled): the centres at which the last step assigned, the l0 cost there,
    the number of steps taken, the cost at the centres of every step, the
    last assignment (nearest centre, trimmed mask, squared distance to the
    nearest centre), and whether the labels and the kept set repeated (a
    fixed point; else the steps stopped at ``max_steps``).  See
    :func:`robustclust._core.refine.concentration_steps`.
    """
    history = np.empty(max_steps + 1)
    if not (X.dtype in (np.float64, np.float32)
            and (X.flags.c_contiguous or X.flags.f_contiguous)):
        X = np.ascontiguousarray(X, dtype=np.float64)
    centres, cost, steps, labels, trimmed, d2, settled = _steps(
        X, np.asarray(sq_norms, dtype=np.float64),
        np.ascontiguousarray(centres, dtype=np.float64),
        np.ascontiguousarray(sample_weight, dtype=np.float64), int(n_trim), int(max_steps),
        history)
    return (centres, float(cost), int(steps), history[:steps + 1].tolist(), labels, trimmed,
            d2, bool(settled))
