"""Internal units of the linear estimators: X centred, and scaled by a power of two.

The linear estimators centre dense data (every distance is expanded as
||x||^2 - 2 x.m + ||m||^2, which cancels for data far from the origin) and
divide it by a power of two when its magnitude is extreme (above 2^100 or
below 2^-100 in float64; 2^20 / 2^-20 in float32), so that squares neither
overflow nor underflow (:func:`power_of_two_scale`): results are the same
for data multiplied by 10^150 or 10^-150, and a power of two changes no
rounding.  Data spanning more magnitudes than float64 squares can hold
(10^270 between the largest and a typical value) are refused with a
message.  The offset is the mean, or the coordinate-wise median when a few
huge values would make the mean lose the other points' digits.  Everything
stored is in the user's units.
"""

import math

import numpy as np
import scipy.sparse as sp

from .._core.backend import colsum, namespace, to_numpy
from .._core.compiled import lazy_module, worth

#: Offset digits the mean may cost the points before the median is used.
_OFFSET_BITS = 20
_dense = lazy_module("robustclust._core._dense")


def internal_units(X, offset=None, scale=None, norms=False, in_place=False):
    """(X in internal units, offset, scale): see the module docstring.

    Dense X is centred (a copy; with ``in_place``, a writeable NumPy X is
    centred where it lies, and the caller adds the offset back with
    :func:`restore_input`); sparse X is not (centring would densify it).
    With ``offset`` and ``scale`` given (new points), those are applied.
    With ``norms``, a fourth item: the squared row norms of the result
    (float64) where the centring pass computed them on the way, else None.
    """
    xp, is_numpy = namespace(X)
    float32 = X.dtype == (np.float32 if is_numpy else xp.float32)
    sq = None
    if sp.issparse(X):
        offset = np.zeros(X.shape[1], dtype=X.dtype) if offset is None else offset
        if scale is None:
            values = np.abs(X.data)
            top = float(values.max()) if X.nnz else 0.0
            scale = power_of_two_scale(top, typical_magnitude(values), float32)
        Xs = X if scale == 1.0 else divide_by_power_of_two(X, scale)
        return (Xs, offset, scale, None) if norms else (Xs, offset, scale)
    top = None
    if offset is None:
        if not is_numpy:
            offset = xp.astype(colsum(xp.astype(X, xp.float64), xp) / X.shape[0], X.dtype)
        elif X.shape[0] > 0:
            offset = (_dense.column_means(X) if worth(X.shape[0])
                      else np.ascontiguousarray(X).sum(axis=0, dtype=np.float64)
                      / X.shape[0]).astype(X.dtype)
        else:
            offset = xp.mean(X, axis=0)
        # in place only where every value can be given back: no difference of
        # two of them overflows (the offset lies within each column's range)
        in_place = (in_place and is_numpy and X.flags.writeable and X.size > 0
                    and float(X.max()) - float(X.min()) <= float(np.finfo(X.dtype).max))
        if is_numpy and X.shape[0] > 1:
            offset, Xc, top, sq = _robust_offset(X, offset, norms, in_place)
        else:
            Xc = np.subtract(X, offset, out=X) if in_place else X - offset
    else:
        in_place = False
        Xc = X - (offset if is_numpy else xp.asarray(offset, dtype=X.dtype))
    if scale is None:
        try:
            if top is None:
                top = float(xp.max(xp.abs(Xc))) if Xc.shape[0] else 0.0
            sample = to_numpy(Xc[:: max(1, Xc.shape[0] // 1000), :], xp)
            scale = power_of_two_scale(top, typical_magnitude(np.abs(sample)), float32)
        except BaseException:  # data refused: the caller's X as it was
            if in_place:
                restore_input(X, offset)
            raise
    if scale != 1.0:
        Xc = divide_by_power_of_two(Xc, scale)
        sq = None
    return (Xc, offset, scale, sq) if norms else (Xc, offset, scale)


def divide_by_power_of_two(X, scale):
    """X / scale for a power of two, exactly (in steps when 1 / scale would overflow)."""
    exponent = -int(round(math.log2(scale)))
    while exponent:
        step = max(-1000, min(1000, exponent))
        X = X * 2.0**step
        exponent -= step
    return X


def typical_magnitude(magnitudes):
    """The median of the nonzero magnitudes (0 when there are none)."""
    nonzero = magnitudes[magnitudes > 0]
    return float(np.median(nonzero)) if nonzero.size else 0.0


def restore_input(X, offset):
    """X + offset in place: a NumPy X that ``internal_units(..., in_place=True)``
    centred, back in its own units (to the rounding of the subtraction and
    the addition: an ulp of the offset at most)."""
    np.add(X, offset, out=X)


def _robust_offset(X, mean, norms=False, in_place=False):
    """The median instead of the mean when a few huge values dominate the mean.

    Subtracting an offset rounds each coordinate to eps |offset|; the mean of
    data with a value 10^150 times the others is 10^150 / N times them, which
    wipes out their digits.  The coordinate-wise median stays with the bulk.
    The mean is kept unless it lies more than 2^20 spreads (median absolute
    deviation, on a sample of rows) from the median.  Returns (offset,
    centred X, max |centred X|, squared row norms of the centred X or None),
    the last three from one pass over X (the norms with ``norms``, for a
    C-contiguous X).
    """
    sample = X[:: max(1, X.shape[0] // 1000)]
    med = np.median(sample, axis=0)
    dev = np.abs(sample - med)
    spread = np.median(dev, axis=0)
    spread = np.where(spread > 0, spread, dev.max(axis=0))
    far = np.abs(mean - med) > 2.0**_OFFSET_BITS * np.where(spread > 0, spread, 1.0)
    offset = mean
    if far.any() or not np.all(np.isfinite(mean)):
        offset = np.median(X, axis=0).astype(X.dtype)
    out = X if in_place else None
    if X.flags.c_contiguous and worth(X.shape[0]):
        if norms:
            return (offset, *_dense.centre_with_extent(X, offset, norms=True, out=out))
        return (offset, *_dense.centre_with_extent(X, offset, out=out), None)
    Xc = np.subtract(X, offset, out=out)
    sq = np.einsum("ij,ij->i", Xc, Xc, dtype=np.float64) if norms else None
    return offset, Xc, float(np.abs(Xc).max()), sq


def power_of_two_scale(top, typical, float32=False):
    """A power of two s such that the squares of X / s neither overflow nor underflow.

    ``top`` is max |x| and ``typical`` the median nonzero |x|.  Data whose
    magnitudes lie within [2^-B, 2^B] (B = 100 in float64, 20 in float32) are
    left as they are (s = 1); otherwise s is the power of two nearest to the
    geometric mean of ``top`` and ``typical``, which centres the magnitudes
    on 1.  Raises ValueError when they span more than the dtype's squares can
    hold (top / typical above 2^900 in float64, 2^100 in float32).
    """
    bound, span = (20, 100) if float32 else (100, 900)
    if top == 0.0:
        return 1.0
    if not math.isfinite(top):
        raise ValueError("X contains values too large for the computation (their magnitude "
                         "overflows): rescale the data.")
    typical = typical if typical > 0 else top
    if 2.0**-bound <= typical and top <= 2.0**bound:
        return 1.0
    if top / typical > 2.0**span:
        raise ValueError(
            f"X spans too many orders of magnitude for the squared distances of the fit: its "
            f"largest magnitude is {top:.3g} and a typical one {typical:.3g}; remove or "
            "rescale the extreme values.")
    return 2.0 ** round(0.5 * (math.log2(top) + math.log2(typical)))
