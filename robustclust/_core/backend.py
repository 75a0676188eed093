"""The array namespace of the data, and the few helpers the standard lacks.

The core is written against the array API standard (the ``xp`` namespace of
its input, found with scikit-learn's ``get_namespace``, as scikit-learn's own
estimators do).  NumPy input gets NumPy itself (faster for the small work
that wraps the big products); any other namespace (``array_api_strict`` in
the tests, GPU arrays) the standard functions only.  What the standard does
not have (one-hot sums in place of ``bincount``, row-wise dot products,
moving small results to the host) is here, once.

Only :mod:`robustclust._core.geometry` touches the data matrix; the rest of
the core sees N x C products, N-vectors and C x C / C x p / p x p matrices.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils._array_api import _convert_to_numpy, _is_numpy_namespace, get_namespace
from sklearn.utils._array_api import device as _device


def namespace(*arrays):
    """(xp, is_numpy): the namespace of ``arrays`` (NumPy itself for NumPy/SciPy input)."""
    arrays = [a for a in arrays if a is not None and not sp.issparse(a)]
    if not arrays:
        return np, True
    xp, _ = get_namespace(*arrays)
    if _is_numpy_namespace(xp):
        return np, True
    return xp, False


def device(array):
    """The device of an array (None for NumPy and SciPy)."""
    if array is None or sp.issparse(array) or isinstance(array, np.ndarray):
        return None
    return _device(array)


def to_numpy(array, xp=None):
    """A NumPy copy (or view) of an array of any namespace."""
    if array is None or isinstance(array, np.ndarray) or np.isscalar(array):
        return array
    if isinstance(array, (list, tuple)):
        return np.asarray(array)
    if sp.issparse(array):
        return array
    xp = xp or namespace(array)[0]
    return _convert_to_numpy(array, xp)


def asarray(values, xp, like=None, dtype=None):
    """``values`` (host or device) as an array of ``xp`` on the device of ``like``."""
    return xp.asarray(values, dtype=dtype, device=device(like))


def float64(xp):
    return xp.float64


def rowdot(A, B, xp):
    """sum_j A_ij B_ij for each row i, in float64."""
    if xp is np:
        return np.einsum("ij,ij->i", A, B, dtype=np.float64)
    return xp.sum(xp.astype(A, xp.float64) * xp.astype(B, xp.float64), axis=1)


def onehot(labels, n_columns, xp, weights=None, like=None):
    """(N, n_columns) float64 matrix with ``weights`` (default 1) at (n, labels[n])."""
    n = labels.shape[0]
    if xp is np:
        A = np.zeros((n, n_columns))
        A[np.arange(n), labels] = 1.0 if weights is None else weights
        return A
    cols = xp.arange(n_columns, device=device(labels))
    A = xp.astype(labels[:, None] == cols[None, :], xp.float64)
    return A if weights is None else A * weights[:, None]


def pick(A, labels, xp):
    """A[n, labels[n]] for every row n."""
    if xp is np:
        return A[np.arange(A.shape[0]), labels]
    return xp.take_along_axis(A, labels[:, None], axis=1)[:, 0]


def take(A, index, xp, axis=0):
    """Rows (or columns) ``index`` of a dense array."""
    if xp is np:
        return A[index] if axis == 0 else A[:, index]
    return xp.take(A, index, axis=axis)


def colsum(A, xp):
    """sum_n A_nc for each column c of a tall (N, C) matrix.

    Other namespaces: as the product 1^T A.  A reduction over the long axis
    is slow on GPUs (CuPy took 120 ms for N = 10^7, C = 16 in float64, where
    the product took 0.5 ms); a matrix-vector product is what their BLAS
    does best.
    """
    if xp is np:
        return np.sum(A, axis=0)
    return xp.ones(A.shape[0], dtype=A.dtype, device=device(A)) @ A


def bincount(labels, weights, n_bins, xp):
    """Weighted counts of ``labels`` (float64), as numpy's bincount."""
    if xp is np:
        return np.bincount(labels, weights=weights, minlength=n_bins).astype(np.float64)
    A = onehot(labels, n_bins, xp)
    return colsum(A, xp) if weights is None else xp.astype(weights, xp.float64) @ A


def flatnonzero(mask, xp):
    return xp.nonzero(mask)[0]


def set_rows(A, index, values, xp):
    """A copy of A with rows ``index`` replaced by ``values`` (in place for NumPy)."""
    if xp is np:
        A[index] = values
        return A
    from sklearn.externals import array_api_extra as xpx

    return xpx.at(A)[index].set(values)


def set_masked_rows(A, mask, values, xp):
    """A with the rows where ``mask`` holds replaced by ``values`` (in their order).

    A boolean mask is the scatter the array API standard has (no integer-array
    assignment); in place where the namespace allows it (on a copy when the
    mask is A itself).
    """
    from sklearn.externals import array_api_extra as xpx

    if mask is A:  # PyTorch refuses to write to the tensor that is the mask
        A = xp.asarray(A, copy=True)
    return xpx.at(A)[mask].set(values)


def scatter_values(n, index, values, xp, like=None, dtype=None):
    """A length-n vector of zeros with ``values`` at ``index``."""
    dtype = dtype or float64(xp)
    if xp is np:
        out = np.zeros(n, dtype=dtype)
        out[index] = values
        return out
    out = xp.zeros(n, dtype=dtype, device=device(like))
    from sklearn.externals import array_api_extra as xpx

    return xpx.at(out)[index].set(xp.astype(values, dtype))


def _like(value, ref, xp):
    """A Python scalar as a 0-d array of ``ref``'s dtype and device."""
    if hasattr(value, "dtype"):
        return value
    return xp.asarray(value, dtype=ref.dtype, device=device(ref))


def where(cond, a, b, xp):
    """``a`` where ``cond`` else ``b`` (either may be a Python scalar)."""
    if xp is np:
        return np.where(cond, a, b)
    ref = a if hasattr(a, "dtype") else b
    return xp.where(cond, _like(a, ref, xp), _like(b, ref, xp))


def minimum(a, b, xp):
    """Elementwise minimum (either may be a Python scalar)."""
    ref = a if hasattr(a, "dtype") else b
    return xp.minimum(_like(a, ref, xp), _like(b, ref, xp))


def maximum(a, b, xp):
    """Elementwise maximum (either may be a Python scalar)."""
    ref = a if hasattr(a, "dtype") else b
    return xp.maximum(_like(a, ref, xp), _like(b, ref, xp))


def logsumexp(A, xp):
    """log sum_c exp(A_nc) row by row (the rows' maxima factored out; a row
    with no finite entry gives its maximum, -inf or inf, not NaN)."""
    amax = xp.max(A, axis=1)
    amax = where(xp.isfinite(amax), amax, 0.0, xp)
    return xp.log(xp.sum(xp.exp(A - amax[:, None]), axis=1)) + amax


def scalar(value):
    """A Python float from a 0-d array of any namespace."""
    return float(value)
