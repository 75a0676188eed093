"""The compiled E-step (robustclust._core._estep) computes the NumPy formulas."""

import numpy as np

from robustclust._core import _estep
from robustclust._core.backend import logsumexp


def numpy_e_step(D, log_w, offset):
    log_prob = log_w[None, :] - 0.5 * (offset + D)
    log_norm = logsumexp(log_prob, np)
    resp = np.exp(log_prob - log_norm[:, None])
    return resp, log_norm, np.argmax(resp, axis=1)


def test_compiled_e_step_matches_numpy():
    rng = np.random.default_rng(0)
    D = rng.gamma(2.0, 3.0, size=(500, 4))
    D[:50] *= 1e3  # far points: posteriors of 0 and 1
    D[50, :] = D[50, 0]  # a tie: the first component is the label
    log_w = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    resp, log_norm, labels = _estep.e_step(D, log_w, 3.7)
    want = numpy_e_step(D, log_w, 3.7)
    np.testing.assert_allclose(resp, want[0], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(log_norm, want[1], rtol=1e-13)
    np.testing.assert_array_equal(labels, want[2])
    assert labels[50] == 3  # equal distances: the largest weight wins
    np.testing.assert_allclose(resp.sum(axis=1), 1.0, rtol=1e-12)


def test_compiled_e_step_keeps_the_fallback_for_infinite_rows():
    D = np.array([[np.inf, np.inf], [1.0, 2.0]])
    log_w = np.log(np.array([0.5, 0.5]))
    resp, log_norm, _ = _estep.e_step(D, log_w, 0.0)
    want = numpy_e_step(D, log_w, 0.0)
    assert np.isneginf(log_norm[0]) and np.isneginf(want[1][0])
    np.testing.assert_allclose(resp[1], want[0][1], rtol=1e-14)


def test_compiled_e_step_takes_one_offset_per_component():
    # per-component covariances: log det Sigma_c differs by component
    rng = np.random.default_rng(1)
    D = rng.gamma(2.0, 3.0, size=(300, 3))
    log_w = np.log(np.array([0.5, 0.3, 0.2]))
    offset = np.array([1.0, -2.5, 4.0])
    resp, log_norm, labels = _estep.e_step(D, log_w, offset)
    want = numpy_e_step(D, log_w, offset[None, :])
    np.testing.assert_allclose(resp, want[0], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(log_norm, want[1], rtol=1e-13)
    np.testing.assert_array_equal(labels, want[2])
    # a number is the same offset for every component
    np.testing.assert_array_equal(_estep.e_step(D, log_w, 1.5)[1],
                                  _estep.e_step(D, log_w, np.full(3, 1.5))[1])
