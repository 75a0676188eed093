import itertools

import numpy as np
import pytest

from robustclust.metrics import center_rmse, outlier_precision_recall

# --------------------------------------------------------------------------
# center_rmse
# --------------------------------------------------------------------------


def test_center_rmse_hand_computed_toy_example():
    true = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    # Estimates listed in a scrambled order with errors of norm 3, 4 and 0.
    est = np.array([[0.0, 14.0], [3.0, 0.0], [10.0, 0.0]])
    expected = np.sqrt((3.0**2 + 4.0**2 + 0.0**2) / 3.0)
    assert center_rmse(true, est) == pytest.approx(expected, rel=1e-12)


def test_center_rmse_zero_for_exact_estimate():
    rng = np.random.RandomState(0)
    true = rng.normal(size=(5, 3))
    assert center_rmse(true, true[::-1]) == 0.0


def test_center_rmse_uses_optimal_not_greedy_matching():
    # Greedily matching true centre 0 to its nearest estimate (1.4, squared
    # error 1.96) leaves true centre 3 with estimate -2 (squared error 25).
    # The optimal matching pays 2^2 + 1.6^2 = 6.56 in total instead.
    true = np.array([[0.0], [3.0]])
    est = np.array([[1.4], [-2.0]])
    expected = np.sqrt((4.0 + 1.6**2) / 2.0)
    assert center_rmse(true, est) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_center_rmse_invariant_to_row_permutations(seed):
    rng = np.random.RandomState(seed)
    true = rng.normal(scale=5.0, size=(4, 2))
    est = true + rng.normal(scale=0.5, size=(4, 2))
    reference = center_rmse(true, est)
    assert reference > 0
    for perm in itertools.permutations(range(4)):
        perm = list(perm)
        assert center_rmse(true, est[perm]) == pytest.approx(reference, rel=1e-12)
        assert center_rmse(true[perm], est) == pytest.approx(reference, rel=1e-12)


def test_center_rmse_matches_brute_force_over_permutations():
    rng = np.random.RandomState(42)
    true = rng.uniform(-3, 3, size=(4, 2))
    est = rng.uniform(-3, 3, size=(4, 2))
    brute = min(
        np.sqrt(np.mean(np.sum((est[list(p)] - true) ** 2, axis=1)))
        for p in itertools.permutations(range(4))
    )
    assert center_rmse(true, est) == pytest.approx(brute, rel=1e-12)


def test_center_rmse_ignores_extra_estimated_rows():
    true = np.array([[0.0, 0.0], [5.0, 5.0]])
    est = np.array([[100.0, 100.0], [5.0, 6.0], [-50.0, 3.0], [0.0, 1.0]])
    # The two far-away rows are left unmatched; both matched errors are 1.
    assert center_rmse(true, est) == pytest.approx(1.0)


def test_center_rmse_accepts_lists_and_returns_python_float():
    # Either matching costs 4 in total: (0,0)->(0,2) and (1,1)->(1,1), or
    # (0,0)->(1,1) and (1,1)->(0,2) with squared errors 2 + 2.
    value = center_rmse([[0, 0], [1, 1]], [[1, 1], [0, 2]])
    assert isinstance(value, float)
    assert value == pytest.approx(np.sqrt(2.0))


def test_center_rmse_rejects_fewer_estimates():
    with pytest.raises(ValueError, match="estimated_centers has 2 rows"):
        center_rmse(np.zeros((3, 2)), np.zeros((2, 2)))


def test_center_rmse_rejects_feature_mismatch():
    with pytest.raises(ValueError, match="same number of features"):
        center_rmse(np.zeros((3, 2)), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "true, est, name",
    [
        (np.zeros(3), np.zeros((3, 1)), "true_centers"),
        (np.zeros((3, 2)), np.zeros(6), "estimated_centers"),
        (np.zeros((3, 2, 1)), np.zeros((3, 2)), "true_centers"),
        (np.zeros((0, 2)), np.zeros((3, 2)), "true_centers"),
        (np.zeros((3, 2)), [[0.0, np.nan]] * 3, "estimated_centers"),
        (np.zeros((3, 2)), [["a", "b"]] * 3, "estimated_centers"),
    ],
)
def test_center_rmse_rejects_bad_arrays_naming_the_parameter(true, est, name):
    with pytest.raises(ValueError, match=name):
        center_rmse(true, est)


# --------------------------------------------------------------------------
# outlier_precision_recall
# --------------------------------------------------------------------------


def test_precision_recall_hand_made_example():
    true = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    pred = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0], dtype=bool)
    # TP = 3, FP = 2, FN = 1.
    precision, recall = outlier_precision_recall(true, pred)
    assert precision == pytest.approx(3 / 5)
    assert recall == pytest.approx(3 / 4)
    assert isinstance(precision, float) and isinstance(recall, float)


def test_precision_recall_perfect_detection():
    true = np.array([False, True, False, True])
    assert outlier_precision_recall(true, true.copy()) == (1.0, 1.0)


def test_precision_recall_accepts_zero_one_integers():
    assert outlier_precision_recall([0, 1, 1, 0], [1, 1, 0, 0]) == (0.5, 0.5)


def test_precision_is_one_when_nothing_is_predicted():
    precision, recall = outlier_precision_recall([True, False, True], [False] * 3)
    assert precision == 1.0
    assert recall == 0.0


def test_recall_is_one_when_there_are_no_true_outliers():
    precision, recall = outlier_precision_recall([False] * 3, [True, False, False])
    assert precision == 0.0
    assert recall == 1.0


def test_precision_recall_rejects_length_mismatch():
    with pytest.raises(ValueError, match="same length"):
        outlier_precision_recall([True, False], [True, False, False])


@pytest.mark.parametrize(
    "true, pred, name",
    [
        ([[True, False]], [True, False], "true_mask"),
        ([True, False], [0, 2], "predicted_mask"),
        ([0.5, 1.0], [True, False], "true_mask"),
    ],
)
def test_precision_recall_rejects_bad_masks(true, pred, name):
    with pytest.raises(ValueError, match=name):
        outlier_precision_recall(true, pred)
