"""The states of the compiled hard pass (:mod:`robustclust._core._fused`).

A pass's results are per-point arrays (labels, shrink factors, sizes,
reference labels, l0 costs); its state reads its outliers off them
(:class:`PassOutliers`).  A state a search keeps between runs is parked
(:func:`park`): its labels, its kept costs and its k flagged rows only, the
other per-point vectors scattered anew by whoever reads them.
"""

from dataclasses import replace

import numpy as np

from .state import Outliers, State


class PassOutliers(Outliers):
    """The outliers of a pass, as its per-point arrays; the k-row form on first use.

    Most states of a run are only read for their cost, so the O(N) scan for
    the outliers' indices is left until someone asks.
    """

    def __init__(self, result):
        self.shrink_full = result["shrink"]
        self.sizes_full = result["size"]
        self.weights_full = result["ref"]
        self.rows = None
        self._index = None

    def _compress(self):
        if self._index is None:
            self._index = np.flatnonzero(self.shrink_full)
        return self._index

    index = property(lambda self: self._compress())
    shrink = property(lambda self: self.shrink_full[self._compress()])
    sizes = property(lambda self: self.sizes_full[self._compress()])
    euclidean = sizes
    weights = property(lambda self: self.weights_full[self._compress()])


def _outliers(result):
    """The outliers of a pass's per-point arrays."""
    return PassOutliers(result)


def pass_state(solver, centers, result, key):
    """The State of a pass's results (``key``: what its pending sums hold)."""
    # no per-point costs: only reseeding needs them (models.KMeansModel.divide)
    return State(centers, None, result["labels"], None, _outliers(result), None,
                 result["objective"], pending=(result["sums"], result["weights"], key, result))


def park(state):
    """``state`` as it is kept between runs: its labels, its kept l0 costs and its
    flagged rows in k-row form, without the pass's other per-point vectors.

    A pass's shrink factors and sizes are 0 for every inlier, and its
    reference labels are read only at flagged rows, so the k flagged rows
    hold all they say: the next run from the state scatters them into arrays
    of its own (``_fused.FusedStepper._previous``), which its passes then write
    into.  A search keeping a few states (the count's bracket, the screened
    starts, the best start so far) keeps two (N,) vectors each instead of up
    to five (peak memory of a 1%-count fit of 10^6 x 4 rows: see
    ``benchmarks/bench_memory.py``).  Other states are returned as they are.
    """
    pending = state.pending
    if not (isinstance(pending, tuple) and len(pending) == 4
            and isinstance(state.outliers, PassOutliers)):
        return state
    o, result = state.outliers, pending[3]
    kept = {name: result[name] for name in ("sums", "weights", "objective", "costs",
                                            "costs_of") if name in result}
    kept["parked"] = True
    return replace(state, outliers=ParkedOutliers(o.index, o.shrink, o.weights, o.sizes,
                                                   o.shrink_full.shape[0]),
                   pending=pending[:3] + (kept,))


def as_start(state):
    """A parked state kept only as a start of later runs (a screened start, scored
    already; the count's bracket; a search's best so far): without the l0
    costs its last pass kept (:func:`kept_costs` then gives None, and a reader
    computes them again), its labels in the smallest unsigned integer type
    that holds them (a byte each for up to 256 clusters, not eight), which
    :func:`full_labels` turns back into intp (``Solver.run`` does for the
    state it starts from).  Other states are returned as they are."""
    pending = state.pending
    if not (isinstance(pending, tuple) and len(pending) == 4 and pending[3].get("parked")):
        return state
    kept = {name: value for name, value in pending[3].items()
            if name not in ("costs", "costs_of")}
    labels = state.labels
    n_clusters = state.centers.shape[0]
    if (isinstance(labels, np.ndarray) and labels.dtype == np.intp and labels.size
            and 0 < n_clusters <= 2**16 and labels.min() >= 0):
        labels = labels.astype(np.min_scalar_type(n_clusters - 1))
    return replace(state, labels=labels, pending=pending[:3] + (kept,))


def full_labels(state):
    """``state`` with intp labels where :func:`as_start` made them smaller."""
    labels = state.labels
    if isinstance(labels, np.ndarray) and labels.dtype.kind == "u":
        return replace(state, labels=labels.astype(np.intp))
    return state


class ParkedOutliers(Outliers):
    """The outliers of a parked state (:func:`park`): the k flagged rows; their
    per-point vectors (0 for the inliers) are scattered anew on each read."""

    def __init__(self, index, shrink, weights, sizes, n):
        self.index, self.shrink, self.weights = index, shrink, weights
        self.sizes = self.euclidean = sizes
        self.rows = self.component_sizes = self.flagged_full = None
        self.n = n

    def _scatter(self, values, dtype=np.float64):
        full = np.zeros(self.n, dtype=dtype)
        full[self.index] = values
        return full

    shrink_full = property(lambda self: self._scatter(self.shrink))
    sizes_full = property(lambda self: self._scatter(self.sizes))
    weights_full = property(lambda self: self._scatter(self.weights, np.intp))

    def many(self, n):
        return False  # hard labels: no (N, C) weights


def kept_costs(state):
    """The l0 costs (N,) that the pass which made ``state`` kept for its centres
    (see ``_fused.FusedStepper.step``), or None."""
    pending = state.pending
    result = pending[3] if isinstance(pending, tuple) and len(pending) == 4 else None
    if (result is None or result.get("costs") is None
            or result.get("costs_of") is not state.centers):
        return None
    return result["costs"]
