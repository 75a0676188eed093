"""Compiled E-step of the Gaussian mixture (numba), for NumPy float64 arrays.

The E-step of eq. (20) is four NumPy passes over an (N, C) array with a
short row (log-probabilities, their row maxima, the log-sum-exp and the
posteriors) and a fifth for the labels; at a thousand points their Python
calls and temporaries are a sixth of an EM iteration.  The kernel computes
the same formulas as :func:`robustclust._core.models.posteriors`
and :func:`robustclust._core.backend.logsumexp` term for term (row maximum
factored out, a non-finite maximum replaced by 0; the first largest
posterior is the label), in one pass per row, so the results agree to
rounding.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _e_step(D, log_w, offset, resp, log_norm, labels):
    n, C = D.shape
    for i in range(n):
        amax = -np.inf
        for c in range(C):
            lp = log_w[c] - 0.5 * (offset[c] + D[i, c])
            resp[i, c] = lp
            if lp > amax:
                amax = lp
        if not math.isfinite(amax):
            amax = 0.0
        total = 0.0
        for c in range(C):
            total += math.exp(resp[i, c] - amax)
        ln = math.log(total) + amax
        log_norm[i] = ln
        best = 0
        for c in range(C):
            r = math.exp(resp[i, c] - ln)
            resp[i, c] = r
            if r > resp[i, best]:
                best = c
        labels[i] = best


def e_step(D, log_w, offset):
    """(posteriors, log-normalisers, labels) for Mahalanobis distances D (N, C),
    log mixing weights log_w (C,) and offset = P log(2 pi) + log det Sigma_c, one
    number or one per component (C,)."""
    D = np.ascontiguousarray(D, dtype=np.float64)
    n, C = D.shape
    resp, log_norm = np.empty((n, C)), np.empty(n)
    labels = np.empty(n, dtype=np.intp)
    offset = np.ascontiguousarray(np.broadcast_to(np.asarray(offset, dtype=np.float64), (C,)))
    _e_step(D, np.ascontiguousarray(log_w, dtype=np.float64), offset, resp, log_norm, labels)
    return resp, log_norm, labels
