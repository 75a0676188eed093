"""Compiled row maps of soft K-means (numba), for NumPy float64 arrays.

One soft K-means iteration calls the fuzzy U-step of eq. (14), its costs
sum_c u_nc^q D_nc, the labels, the residual weights u_n^q / sum_c u_nc^q of
eq. (12) and the centre weights u_nc^q w_n of eq. (9): each a few NumPy
passes over an (N, C) array with a short row, and a non-integer power in
three of them.  At a few thousand points those passes and their Python
calls are most of an iteration (1 ms at N = 1,000, C = 3).  The kernels below
compute the same formulas (:func:`robustclust._core.models.fuzzy_memberships`
and :func:`~robustclust._core.models.residual_weights`, term for term, so the
results agree to rounding) in one pass per row.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _power(u, q):
    """u^q for 0 <= u <= 1: u sqrt(u) for q = 1.5 (within an ulp of pow, which
    cost two thirds of the U-step), u u for q = 2 (NumPy's power squares)."""
    if q == 1.5:
        return u * math.sqrt(u)
    if q == 2.0:
        return u * u
    return u ** q


@njit(cache=True, nogil=True)
def _memberships(D, q, U, Uq, W, costs, labels):
    n, C = D.shape
    a = 1.0 / (q - 1.0)
    for i in range(n):
        cmin = D[i, 0]
        for c in range(1, C):
            if D[i, c] < cmin:
                cmin = D[i, c]
        total = 0.0
        for c in range(C):
            d = D[i, c]
            if cmin > 0:
                r = cmin / d
            else:
                r = 1.0 if d == 0 else 0.0
            if a == 2.0:  # q = 1.5: as NumPy's power, which squares for 2
                u = r * r
            elif a == 1.0:
                u = r
            else:
                u = r ** a
            U[i, c] = u
            total += u
        best = 0
        cost = 0.0
        for c in range(C):
            u = U[i, c] / total
            U[i, c] = u
            if u > U[i, best]:
                best = c
            uq = _power(u, q)
            Uq[i, c] = uq
            cost += uq * D[i, c]
        costs[i] = cost
        labels[i] = best
        # the residual weights u^q / sum u^q (models.residual_weights scales by
        # the row maximum first; u^q of the largest u >= 1/C cannot underflow)
        total = 0.0
        for c in range(C):
            total += Uq[i, c]
        for c in range(C):
            W[i, c] = Uq[i, c] / total


@njit(cache=True, nogil=True)
def _residual_weights(U, q, W):
    n, C = U.shape
    for i in range(n):
        m = U[i, 0]
        for c in range(1, C):
            if U[i, c] > m:
                m = U[i, c]
        total = 0.0
        for c in range(C):
            w = _power(U[i, c] / m, q)
            W[i, c] = w
            total += w
        for c in range(C):
            W[i, c] = W[i, c] / total


def soft_memberships(D, q):
    """(U, U^q, W, costs, labels) of eq. (14) for squared distances D, (N, C)
    float64, with W = U^q / sum_c U^q the residual weights of eq. (12)."""
    D = np.ascontiguousarray(D, dtype=np.float64)
    n, C = D.shape
    U, Uq, W = np.empty((n, C)), np.empty((n, C)), np.empty((n, C))
    costs, labels = np.empty(n), np.empty(n, dtype=np.intp)
    _memberships(D, float(q), U, Uq, W, costs, labels)
    return U, Uq, W, costs, labels


def soft_residual_weights(U, q):
    """u_n^q / sum_c u_nc^q row by row (scaled by the row maximum first), (N, C)."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    W = np.empty(U.shape)
    _residual_weights(U, float(q), W)
    return W
