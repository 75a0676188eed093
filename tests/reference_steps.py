"""Reference updates written out for the tests (not collected: no tests here)."""

import numpy as np


def mm_limit(a, t, lam, eps, steps=20_000):
    """The log penalty's O-step on magnitudes, by definition: the MM steps of
    eq. (30), t <- [a - lam / (2 (t + eps))]_+, run from t until they stop
    moving (the paper takes one step per iteration; the package takes their
    limit, in closed form).  ``lam`` in the penalty's convention (threshold
    lam / 2 at t = 0); arrays of magnitudes a and starting values t."""
    t = np.asarray(t, dtype=float)
    for _ in range(steps):
        t_next = np.maximum(a - lam / (2 * (t + eps)), 0.0)
        if np.array_equal(t_next, t):
            break
        t = t_next
    return t
