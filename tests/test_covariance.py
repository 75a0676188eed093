"""The full covariance step's compiled factorization (Covariance.full_step) is the
general one: the floored matrix of floor_covariance, its Cholesky precision
factor and log-determinant, the same errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import cholesky

from robustclust._core import covariance
from robustclust._core.covariance import SINGULAR, Covariance, bound_covariance


def general(B, reg, ratio=None):
    return Covariance("full", bound_covariance("full", B, 100.0, reg, ratio), B.shape[0])


def assert_same_covariance(a, b, rtol=1e-12):
    scale = np.abs(b.value).max()
    np.testing.assert_allclose(a.value, b.value, rtol=0, atol=rtol * scale)
    np.testing.assert_allclose(a.P, b.P, rtol=0, atol=rtol * np.abs(b.P).max())
    assert a.log_det == pytest.approx(b.log_det, rel=rtol, abs=rtol)
    assert (a.kind, a.dim) == (b.kind, b.dim)
    assert a.P.flags.c_contiguous and a.P.dtype == np.float64


def scatter(rng, p, rows, spread):
    """An (asymmetric by rounding) scatter matrix R^T R / rows of rows x p data
    whose directions have scales 10^u, u uniform in [-spread, spread]."""
    R = rng.normal(size=(rows, p)) * 10.0 ** rng.uniform(-spread, spread, size=p)
    R = R @ np.linalg.qr(rng.normal(size=(p, p)))[0]
    return (R.T @ R) / rows


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(1, covariance.SMALL_FACTOR_DIM + 2),
       spread=st.floats(0.0, 3.0), reg=st.sampled_from([0.0, 1e-6, 1e-2]))
def test_the_compiled_factorization_is_the_general_one(seed, p, spread, reg):
    # past SMALL_FACTOR_DIM (and wherever the floor binds) full_step is the general
    # way itself; below it the compiled path must give the same matrix, P
    # (Sigma^-1 = P P^T, upper triangular) and log det
    rng = np.random.default_rng(seed)
    B = scatter(rng, p, rows=p + int(rng.integers(1, 2 * p + 2)), spread=spread)
    fast = Covariance.full_step(B, 100.0, reg, None, p)
    ref = general(B, reg)
    cond = max(1.0, np.linalg.cond(ref.value))
    assert_same_covariance(fast, ref, rtol=1e-9 * cond**0.5)
    # the definitions themselves, to the rounding a condition number allows
    np.testing.assert_allclose(fast.P @ fast.P.T @ fast.value, np.eye(p), atol=1e-12 * cond)
    assert np.array_equal(np.tril(fast.P, -1), np.zeros((p, p)))
    assert fast.log_det == pytest.approx(np.linalg.slogdet(fast.value)[1], abs=1e-13 * cond)
    # the floor, to the rounding of the eigh's reconstruction where it binds
    assert np.linalg.eigvalsh(fast.value).min() >= reg - 1e-13 * np.abs(fast.value).max()


def test_without_a_binding_floor_the_step_keeps_the_symmetrized_matrix_exactly():
    rng = np.random.default_rng(0)
    B = scatter(rng, 3, 20, 1.0)
    B[0, 1] += 1e-12  # asymmetric by more than rounding
    fast = Covariance.full_step(B, 100.0, 1e-6, None, 3)
    np.testing.assert_array_equal(fast.value, (B + B.T) / 2)
    np.testing.assert_array_equal(covariance.floor_covariance("full", B, 1e-6), (B + B.T) / 2)
    L = cholesky((B + B.T) / 2, lower=True)
    np.testing.assert_allclose(fast.P, np.linalg.inv(L).T, rtol=1e-13, atol=1e-15)
    assert fast.log_det == pytest.approx(2 * np.log(np.diag(L)).sum(), rel=1e-14)


@pytest.mark.parametrize("p", [2, 5])
def test_a_binding_floor_clips_the_small_eigenvalues(p):
    # eigenvalues 1e-8 (below the floor 1e-4) and 1 .. : the compiled test fails
    # and the eigh clips the small one to the floor
    rng = np.random.default_rng(p)
    Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
    vals = np.concatenate([[1e-8], np.arange(1, p)])
    B = (Q * vals) @ Q.T
    fast = Covariance.full_step(B, 100.0, 1e-4, None, p)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(fast.value)),
                               np.concatenate([[1e-4], np.arange(1, p)]), atol=1e-12)
    assert_same_covariance(fast, general(B, 1e-4))


def test_a_ratio_bound_takes_the_general_way():
    rng = np.random.default_rng(3)
    B = scatter(rng, 3, 10, 2.0)
    fast = Covariance.full_step(B, 100.0, 1e-6, 5.0, 3)
    vals = np.linalg.eigvalsh(fast.value)
    assert vals.max() / vals.min() == pytest.approx(5.0, rel=1e-9)
    assert_same_covariance(fast, general(B, 1e-6, 5.0))


@pytest.mark.parametrize("bad", ["nan", "inf", "singular"])
def test_a_matrix_without_a_factor_gets_the_general_error(bad):
    B = np.array([[1.0, 0.5], [0.5, 1.0]])
    if bad == "nan":
        B[0, 1] = np.nan
    elif bad == "inf":
        B[1, 1] = np.inf
    else:  # rank one and no floor
        B = np.array([[1.0, 1.0], [1.0, 1.0]])
    errors = []
    for make in (lambda: Covariance.full_step(B, 100.0, 0.0, None, 2), lambda: general(B, 0.0)):
        with pytest.raises((ValueError, np.linalg.LinAlgError)) as info:
            make()
        errors.append((info.type, str(info.value)))
    assert errors[0] == errors[1]
    if bad == "singular":
        assert errors[0] == (ValueError, SINGULAR)


def test_the_compiled_factor_reports_nan_for_each_failure():
    value, P = np.empty((2, 2)), np.empty((2, 2))
    ok = np.array([[2.0, 0.3], [0.3, 1.5]])
    assert math.isfinite(covariance._factor_full(ok, 1e-6, value, P))
    assert math.isnan(covariance._factor_full(ok, 2.0, value, P))  # floor above an eigenvalue
    assert math.isnan(covariance._factor_full(np.array([[1.0, np.inf], [0.0, 1.0]]), 0.0,
                                              value, P))
    assert math.isnan(covariance._factor_full(-ok, 0.0, value, P))
