"""The robust start: trimmed k-means++ seeding, then concentration steps.

k-means++ (D^2 sampling) picks a far, isolated point as a centre with a
probability that grows with its squared distance; a point 1e6 away from
everything is chosen second with probability one.  Such a centre keeps a
cluster of its own while two real clusters share one, and neither the
robust fit nor the count search can move it: that is the failure the
default start must avoid.  This module builds a start that far points
cannot capture, once, for every estimator (linear and kernel geometries):

1. **Trimmed seeding** (after the robust k-means++ of Deshpande, Kacham and
   Pratap, UAI 2020).  Every new centre is the best of a few candidates
   drawn with probability

       alpha w_n D~_n^2 / sum_m w_m D~_m^2 + (1 - alpha) w_n / sum_m w_m,

   where D~_n^2 is the squared distance to the nearest centre chosen so far
   with the ``n_trim`` largest costs set to 0 (the points that would be
   trimmed cannot be drawn by the D^2 part), mixed with uniform (weighted)
   sampling.  The best candidate is the one with the smallest *trimmed
   potential*: sum of w_n min_c ||x_n - m_c||^2 over all but the ``n_trim``
   points of largest cost (eq. (3) of the paper with the centres fixed).  A
   far point as a centre lowers that potential by nothing, since it is
   trimmed either way, while a centre in an uncovered cluster lowers it by
   that cluster's spread.
2. **Concentration steps** (the C-steps of trimmed k-means and tclust):
   assign each point to its nearest centre, keep the N - ``n_trim`` points
   of smallest cost, move each centre to the weighted mean of its kept
   points.  No step increases the trimmed potential.
3. **Several cheap starts**: ``N_SEEDINGS`` seedings, each followed by
   ``SCREEN_STEPS`` concentration steps; the one with the smallest trimmed
   potential is concentrated until its kept set settles (at most
   ``MAX_STEPS`` steps) and returned, its centres in the order in which
   their clusters first appear among the points.

``n_trim`` is the requested outlier count s when the estimator has one,
otherwise ``ceil(DEFAULT_TRIM_FRACTION * N)`` (see :func:`trim_count`); it
is capped at N - n_clusters so that every centre can keep a point.

**k-means||** (:func:`kmeans_parallel`, ``init="k-means||"``, meant for
data in blocks such as Dask arrays): a few passes of D^2 oversampling give
weighted candidates (each stands for the points nearest to it), which the
robust start above reduces to the centres, trimming ``n_trim`` points'
worth of weight.  Its random draws are functions of the rows' global
positions and its sums are exact, so it does not depend on the blocks.

The geometry is reached through two operations (:class:`PointSpace` for
data matrices, dense or CSR; :class:`KernelSpace` for a kernel matrix, the
centres then being coefficient rows B with m_c = sum_n B_cn phi(x_n)):
squared distances from chosen points to every point, and from weighted
means of labelled, kept points to every point.
"""

import math
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from .. import _progress
from .compiled import lazy_njit, worth
from .refine import concentration_steps, trim_mask
from .spaces import PointSpace

#: Fraction of the points trimmed when no outlier count is given: above the
#: contamination of most data sets a user would cluster without saying how
#: many outliers to expect, below the size of any cluster worth finding.
DEFAULT_TRIM_FRACTION = 0.2
#: Weight of the (trimmed) D^2 part of the sampling law; the rest is uniform.
D2_WEIGHT = 0.5
#: Cheap starts per initialisation; the best by the trimmed potential is kept.
N_SEEDINGS = 3
#: Concentration steps a cheap start gets before the starts are compared.
SCREEN_STEPS = 3
#: Concentration steps of the start that is kept (fewer when its kept set settles).
MAX_STEPS = 30


def trim_count(n_outliers, n_samples, n_clusters):
    """The number of points the start trims.

    ``n_outliers`` as the estimators take it (an int count, a fraction of N
    in (0, 0.5), or None); None trims ``ceil(DEFAULT_TRIM_FRACTION * N)``.
    Capped at N - n_clusters (at least one point kept per centre).
    """
    if n_outliers is None:
        t = math.ceil(DEFAULT_TRIM_FRACTION * n_samples)
    elif isinstance(n_outliers, (int, np.integer)):
        t = int(n_outliers)
    else:
        t = int(round(float(n_outliers) * n_samples))
    return max(0, min(t, n_samples - n_clusters))


def _trimmed(costs, n_trim, weights=None):
    """Sum of ``costs`` along the last axis without the ``n_trim`` largest (with
    ``weights``: without the largest per unit weight that weigh at most ``n_trim``)."""
    if weights is not None:
        return np.array([row[~trim_mask(row, n_trim, weights)].sum()
                         for row in np.reshape(costs, (-1, costs.shape[-1]))])
    if n_trim <= 0:
        return costs.sum(axis=-1)
    n = costs.shape[-1]
    return np.partition(costs, n - n_trim - 1, axis=-1)[..., : n - n_trim].sum(axis=-1)


def trimmed_seeding(space, n_clusters, sample_weight, n_trim, rng, n_candidates=None,
                    by_weight=False):
    """Indices of ``n_clusters`` seed points (step 1 of the module docstring).

    ``by_weight``: ``n_trim`` is a weight to trim, not a count
    (:func:`robustclust._core.refine.trim_mask`).
    """
    n = space.n_samples
    w = np.asarray(sample_weight, dtype=np.float64)
    if n_candidates is None:
        n_candidates = 2 + int(math.log(n_clusters)) + 1
    uniform = w / w.sum() if w.sum() > 0 else np.full(n, 1.0 / n)
    chosen = []
    closest = None
    for _ in range(n_clusters):
        if closest is None:
            p = uniform.copy()
        else:
            d2 = w * closest
            d2[trim_mask(d2, n_trim, w if by_weight else None)] = 0.0
            total = d2.sum()
            p = (D2_WEIGHT * d2 / total + (1.0 - D2_WEIGHT) * uniform) if total > 0 \
                else uniform.copy()
        p[chosen] = 0.0  # a point is a centre once (N close to n_clusters, duplicates)
        if not p.sum() > 0:
            p = np.ones(n)
            p[chosen] = 0.0
        p /= p.sum()
        candidates = rng.choice(n, size=min(n_candidates, np.count_nonzero(p)), replace=False,
                                p=p)
        d = space.point_distances(candidates)
        if closest is not None:
            d = np.minimum(d, closest[None, :])
        best = int(np.argmin(_trimmed(d * w[None, :], n_trim, w if by_weight else None)))
        chosen.append(int(candidates[best]))
        closest = d[best]
    return np.array(chosen)


def concentrate(space, centres, sample_weight, n_trim, max_steps, by_weight=False):
    """Concentration steps from ``centres``: (centres, trimmed potential, steps).

    Each step assigns every point to its nearest centre, keeps the N - n_trim
    points of smallest weighted cost and moves each centre to the weighted
    mean of its kept points; it stops when the labels and the kept set repeat
    (:func:`robustclust._core.refine.concentration_steps`, the one copy of
    the step).
    """
    centres, potential, steps, _ = concentration_steps(space, centres, sample_weight, n_trim,
                                                       max_steps, by_weight)
    return centres, potential, steps


def robust_start(space, n_clusters, sample_weight, n_trim, rng, n_seedings=N_SEEDINGS,
                 by_weight=False):
    """The robust start's centres (points: (C, p); kernels: coefficients (C, N)).

    ``n_seedings`` trimmed seedings, each concentrated ``SCREEN_STEPS``
    steps; the best by the trimmed potential is concentrated until it
    settles.  See the module docstring.  ``by_weight``: ``n_trim`` is a
    weight to trim (points that stand for many, :func:`kmeans_parallel`).
    """
    best = None
    for _ in range(n_seedings):
        index = trimmed_seeding(space, n_clusters, sample_weight, n_trim, rng,
                                by_weight=by_weight)
        centres, potential, _ = concentrate(space, space.points(index), sample_weight, n_trim,
                                            SCREEN_STEPS, by_weight)
        if best is None or potential < best[1]:
            best = (centres, potential)
    centres, _, _ = concentrate(space, best[0], sample_weight, n_trim, MAX_STEPS, by_weight)
    return centres[_first_appearance_order(space.centre_distances(centres))]


#: ``n_init="auto"`` (:func:`screened_starts`): robust starts drawn on a sample of the
#: rows, and how many of the best are kept for the fit.  Measured (bench_defaults and
#: tests/test_starts.py): ten starts on all rows cost 14x a KMeans fit at 100,000 rows
#: x 32 (16 clusters), while ten on a sample of 2,000 and the best two on all rows
#: reach the same trimmed cost on the planted sets and bench_trimmed's.
AUTO_STARTS = 10
AUTO_KEEP = 2
#: Robust starts of a fit with the default count, besides the noise model's clusters
#: and its own start (``RobustKMeans``, ``n_init="auto"``): its noise points are
#: fixed, and K-means of the others needs no protection from far points, only a
#: good start; the noise model's EM can merge two clusters where the noise is dense
#: (three blobs in 60% uniform noise: an empty cluster from its clusters alone).
#: Measured (5 seeds each, bench_defaults' eight real sets and planted blobs at 10^3
#: and 10^4): the mean l0 cost equal to that of the ten starts of before within
#: 0.002%, lower on digits (raw -0.13%, standardised -0.26%), the same mean ARI
#: within 0.004; the default fit 0.72-0.95x the CPU (medians of 7, two interleaved rounds).
NOISE_COUNT_STARTS = 3
#: Rows of that sample: at least START_SAMPLE_MIN_ROWS, START_SAMPLE_ROWS_PER_CLUSTER
#: per cluster (the trimmed seeding needs a few dozen points of every cluster).
START_SAMPLE_MIN_ROWS = 2000
START_SAMPLE_ROWS_PER_CLUSTER = 100


def start_sample_size(n_samples, n_clusters):
    """Rows of the sample the screened starts are drawn on (all rows when fewer)."""
    return min(n_samples, max(START_SAMPLE_MIN_ROWS, START_SAMPLE_ROWS_PER_CLUSTER * n_clusters))


def screened_starts(X, sample_weight, n_clusters, n_trim, rng, n_starts=AUTO_STARTS,
                    n_keep=AUTO_KEEP):
    """The ``n_keep`` best of ``n_starts`` robust starts drawn on a sample of the rows.

    tclust's way of many cheap starts and a few full ones, on a uniform sample
    of :func:`start_sample_size` rows of positive weight, trimming ``n_trim``
    scaled to the sample: ``n_starts`` trimmed seedings, each concentrated
    ``SCREEN_STEPS`` steps (the cheap starts of :func:`robust_start`), ranked
    by their trimmed potential on the sample; the best ``n_keep`` are
    concentrated until they settle and returned (the fit then runs on all
    the rows from them).  The cost of the starts no longer grows with
    N.  ``X`` is a NumPy array or CSR matrix.
    """
    w = np.asarray(sample_weight, dtype=np.float64)
    n = X.shape[0]
    rows = np.flatnonzero(w > 0)
    m = start_sample_size(len(rows), n_clusters)
    if m < len(rows):
        rows = np.sort(rng.choice(rows, m, replace=False))
        t = min(int(round(n_trim * m / n)), m - n_clusters)
    else:
        rows, t = np.arange(n), n_trim
    # the sample's steps compiled when the data's fit runs compiled steps anyway
    space = PointSpace(X[rows], compiled=worth(n))
    ws = w[rows]
    screened = []
    for k in _progress.steps("starts", range(n_starts), n_starts):
        index = trimmed_seeding(space, n_clusters, ws, t, rng)
        centres, potential, _ = concentrate(space, space.points(index), ws, t, SCREEN_STEPS)
        screened.append((potential, k, centres))
    screened.sort(key=lambda item: item[:2])
    kept = []
    for _, _, centres in screened[:n_keep]:
        centres, _, _ = concentrate(space, centres, ws, t, MAX_STEPS)
        kept.append(centres[_first_appearance_order(space.centre_distances(centres))])
    return kept


def _first_appearance_order(D):
    """Centres ordered by the first point nearest to each (centres nearest to none last).

    Starts that reach the same partition then give the same labels, so that
    restarts do not differ only by a permutation (a tie the restart
    comparison would break by rounding).
    """
    labels = np.argmin(D, axis=0)
    first = np.full(D.shape[0], D.shape[1])
    np.minimum.at(first, labels, np.arange(D.shape[1]))
    return np.argsort(first, kind="stable")


# -- k-means|| for data in blocks ---------------------------------------------------------------
#: Oversampling rounds of k-means|| (Bahmani et al. found 5 enough; the paper's r).
KMEANS_PARALLEL_ROUNDS = 5
#: Points sampled per round, in expectation, per cluster (the paper's l = 2k).
KMEANS_PARALLEL_OVERSAMPLING = 2
#: Entries of the dense row chunks of a CSR X in the exact distances.
_CHUNK_ENTRIES = 2**21

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(z):
    """The SplitMix64 finalizer (Steele, Lea and Flood, 2014) on uint64 arrays."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def row_uniforms(key, stream, rows):
    """Uniform draws in (0, 1) for the global row numbers ``rows``.

    Counter-based: the draw of row n in stream s is a hash of (key, s, n)
    alone (SplitMix64 at position n + 1 of the sequence seeded by key and s),
    so it does not depend on how the rows are split in blocks, nor on the
    order in which the blocks are visited.
    """
    with np.errstate(over="ignore"):
        seed = _mix64(np.array([key], dtype=np.uint64) + np.uint64(stream) * _GOLDEN)
        z = _mix64(seed + (np.asarray(rows, dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def exact_sum(values):
    """The exact sum of float64 values as (integer numerator, power of two).

    Sums of such pairs are exact too (:func:`add_exact`), so a total over
    blocks does not depend on the blocks: each value is m 2^(e-53) with an
    integer mantissa m < 2^53, split in two halves summed per exponent in
    int64 (exact up to 2^36 values).
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    values = values[values != 0]
    if values.shape[0] == 0:
        return (0, 0)
    frac, exp = np.frexp(values)
    mant = (frac * 2.0**53).astype(np.int64)  # exact, sign included
    exps, where = np.unique(exp, return_inverse=True)
    high, low = np.zeros(exps.shape[0], np.int64), np.zeros(exps.shape[0], np.int64)
    np.add.at(high, where, mant >> 26)
    np.add.at(low, where, mant & (2**26 - 1))
    base = int(exps[0])
    total = sum(((int(h) << 26) + int(lo)) << (int(e) - base)
                for h, lo, e in zip(high, low, exps))
    return (total, base - 53)


def add_exact(parts):
    """The sum of :func:`exact_sum` pairs, rounded once to float64."""
    parts = [p for p in parts if p[0] != 0]
    if not parts:
        return 0.0
    base = min(e for _, e in parts)
    total = sum(m << (e - base) for m, e in parts)
    return float(total * Fraction(2) ** base)


@lazy_njit(nogil=True, cache=True)
def _nearest_rows(X, centres_t, d2, nearest):
    """min_c sum_j (x_nj - c_j)^2 (float64, j in order) and its first argmin.

    ``centres_t`` is (p, m): the loop over the centres is the inner one (it
    vectorizes), each centre's sum still runs over j in order.
    """
    n, p = X.shape
    m = centres_t.shape[1]
    acc = np.empty(m)
    for i in range(n):
        acc[:] = 0.0
        for j in range(p):
            x = np.float64(X[i, j])
            for c in range(m):
                diff = x - centres_t[j, c]
                acc[c] += diff * diff
        best, arg = np.inf, 0
        for c in range(m):
            if acc[c] < best:
                best, arg = acc[c], c
        d2[i] = best
        nearest[i] = arg


def exact_sq_distances(X, centres):
    """min_c ||x_n - c||^2 and its argmin for the rows of X (dense or CSR), row by row.

    Formed from the differences, summed over the features in order (compiled,
    no product whose blocking could change its rounding): a row's value is
    the same whatever block it is in, and it is never negative.
    """
    n = X.shape[0]
    centres = np.ascontiguousarray(np.asarray(centres, dtype=np.float64).T)
    d2 = np.empty(n)
    nearest = np.empty(n, dtype=np.intp)
    if not sp.issparse(X):
        _nearest_rows(np.ascontiguousarray(X), centres, d2, nearest)
        return d2, nearest
    step = max(1, _CHUNK_ENTRIES // max(1, X.shape[1]))
    for start in range(0, n, step):
        _nearest_rows(X[start:start + step].toarray(), centres, d2[start:start + step],
                      nearest[start:start + step])
    return d2, nearest


def kmeans_parallel_block(X, w, start, spec):
    """What one pass of :func:`kmeans_parallel` asks of a block of rows start:start+n.

    ``spec["first"]`` = key: the block's row of smallest exponential clock
    -log(u_n) / w_n (the first centre is drawn with probability w_n / sum w);
    ``spec["round"]`` = (key, round, oversampling, centres): the exact
    weighted potential w_n min_c ||x_n - c||^2 of the block and the rows that
    the round could sample whatever the other blocks' potentials (those with
    u_n < 2 l w_n d_n^2 / the block's own potential); ``spec["weights"]`` =
    centres: the weight of the block's points nearest to each centre (exact sums).
    """
    w = np.asarray(w, dtype=np.float64)
    n = X.shape[0]
    rows = np.arange(start, start + n, dtype=np.int64)
    if spec.get("first") is not None:
        u = row_uniforms(spec["first"], 0, rows)
        with np.errstate(divide="ignore"):
            clock = np.where(w > 0, -np.log(u) / w, math.inf)
        i = int(np.argmin(clock))
        row = X[i:i + 1]
        row = row.toarray() if sp.issparse(row) else row
        return {"clock": float(clock[i]), "index": int(rows[i]),
                "row": np.asarray(row, dtype=np.float64).ravel()}
    if spec.get("weights") is not None:
        centres = spec["weights"]
        _, nearest = exact_sq_distances(X, centres)
        order = np.argsort(nearest, kind="stable")
        cells = np.split(w[order], np.searchsorted(nearest[order], np.arange(1, len(centres))))
        return {"weights": [exact_sum(cell) for cell in cells]}
    key, round_, oversampling, centres = spec["round"]
    d2, _ = exact_sq_distances(X, centres)
    cost = w * d2
    partial = exact_sum(cost)
    local = add_exact([partial])
    u = row_uniforms(key, round_, rows)
    pick = np.flatnonzero(u * local < 2.0 * oversampling * cost) if local > 0 else \
        np.empty(0, dtype=np.intp)
    picked = X[pick]
    picked = picked.toarray() if sp.issparse(picked) else picked
    return {"potential": partial, "index": rows[pick], "u": u[pick], "cost": cost[pick],
            "rows": np.asarray(picked, dtype=np.float64)}


def kmeans_parallel_candidates(run, n_clusters, key, rounds=KMEANS_PARALLEL_ROUNDS,
                               oversampling=None):
    """The weighted candidates of k-means|| (Bahmani et al., VLDB 2012).

    ``run(spec)`` runs :func:`kmeans_parallel_block` on every block of the
    data and returns the results in row order (one pass).  The first
    candidate is a point drawn by weight; each of ``rounds`` rounds (one
    pass) adds every point n independently with probability
    min(1, l w_n d_n^2 / phi), d_n its distance to the candidates so far and
    phi = sum_n w_n d_n^2 (l = ``oversampling``, 2 per cluster by default);
    a last pass weighs each candidate by the weight of the points nearest to
    it (its Voronoi cell), so the weights sum to the total weight.  The draws
    are :func:`row_uniforms` of the global row numbers, the distances are
    formed row by row (:func:`exact_sq_distances`) and phi and the weights
    are summed exactly (:func:`exact_sum`), so the candidates and weights
    depend on ``key`` and the data only, not on the blocks.  Returns
    (candidates (m, p) float64, weights (m,), potential phi after each
    round); candidates of zero weight are dropped.
    """
    l = float(oversampling if oversampling is not None
              else KMEANS_PARALLEL_OVERSAMPLING * n_clusters)
    first = min(run({"first": key}), key=lambda r: (r["clock"], r["index"]))
    centres = first["row"][None, :]
    potentials = []
    for round_ in range(1, rounds + 1):
        results = run({"round": (key, round_, l, centres)})
        phi = add_exact([r["potential"] for r in results])
        potentials.append(phi)
        if phi <= 0:  # every point on a candidate
            break
        index = np.concatenate([r["index"] for r in results])
        keep = np.concatenate([r["u"] for r in results]) * phi < \
            l * np.concatenate([r["cost"] for r in results])
        if np.any(keep):
            rows = np.concatenate([r["rows"] for r in results])[keep]
            centres = np.vstack([centres, rows[np.argsort(index[keep], kind="stable")]])
    cells = [r["weights"] for r in run({"weights": centres})]
    weights = np.array([add_exact([block[c] for block in cells]) for c in range(len(centres))])
    positive = weights > 0
    return centres[positive], weights[positive], potentials


def kmeans_parallel(run, n_clusters, n_trim, rng, **kwargs):
    """k-means|| centres: :func:`kmeans_parallel_candidates`, then :func:`robust_start`
    on the weighted candidates.

    ``n_trim`` is the start's trim count in points.  A candidate stands for
    the points of its cell, so the robust start trims by weight
    (``by_weight``): the candidates farthest from the centres, as many as
    weigh at most ``n_trim`` together.  Far points are light candidates
    (their cells hold few points), so they are trimmed; trimming a count of
    candidates by their weighted cost would trim the heavy ones instead.
    Fewer distinct candidates than clusters (data with fewer distinct
    points) are repeated.
    """
    key = int(rng.randint(np.iinfo(np.int64).max, dtype=np.int64))
    candidates, weights, _ = kmeans_parallel_candidates(run, n_clusters, key, **kwargs)
    if candidates.shape[0] <= n_clusters:
        return np.resize(candidates, (n_clusters, candidates.shape[1]))
    return robust_start(PointSpace(candidates), n_clusters, weights, n_trim, rng,
                        by_weight=True)


def kmeans_parallel_in_memory(X, sample_weight, n_clusters, n_trim, rng, **kwargs):
    """:func:`kmeans_parallel` on an in-memory X (dense or CSR) as one block."""
    return kmeans_parallel(lambda spec: [kmeans_parallel_block(X, sample_weight, 0, spec)],
                           n_clusters, n_trim, rng, **kwargs)
