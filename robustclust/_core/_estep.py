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


# error_model="numpy": 0 / 0 is NaN (a row of -inf log-probabilities), as in NumPy
@njit(cache=True, nogil=True, error_model="numpy")
def _e_step(D, log_w, offset, resp, log_norm, labels):
    n, C = D.shape
    for i in range(n):
        amax = -np.inf
        top = -1
        for c in range(C):
            lp = log_w[c] - 0.5 * (offset[c] + D[i, c])
            resp[i, c] = lp
            if lp > amax:
                amax = lp
                top = c
        if not math.isfinite(amax):
            amax = 0.0
            top = -1
        total = 0.0
        for c in range(C):
            # exp(0) = 1 exactly: the row's largest term costs no exponential
            e = 1.0 if c == top else math.exp(resp[i, c] - amax)
            resp[i, c] = e
            total += e
        log_norm[i] = math.log(total) + amax
        best = 0
        for c in range(C):
            r = resp[i, c] / total
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
    if isinstance(offset, float):  # a tenth of broadcast_to's cost, which showed in a
        value, offset = offset, np.empty(C)  # small EM iteration
        offset.fill(value)
    elif np.ndim(offset):
        offset = np.ascontiguousarray(np.broadcast_to(np.asarray(offset, dtype=np.float64),
                                                      (C,)))
    else:
        offset = np.full(C, float(offset))
    _e_step(D, np.ascontiguousarray(log_w, dtype=np.float64), offset, resp, log_norm, labels)
    return resp, log_norm, labels
