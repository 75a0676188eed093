"""The estimators take pandas DataFrames and keep their column names."""

import numpy as np
import pandas as pd
import pytest

from robustclust import RobustGaussianMixture, RobustKMeans, regularization_path
from robustclust.datasets import make_blobs_with_outliers


@pytest.fixture(scope="module")
def frame():
    X = make_blobs_with_outliers(n_outliers=40, random_state=2).X
    return pd.DataFrame(X, columns=["length", "width"])


@pytest.mark.parametrize("make", [
    lambda: RobustKMeans(4, n_outliers=40, n_init=2, random_state=0),
    lambda: RobustGaussianMixture(4, n_outliers=40, n_init=2, random_state=0),
])
def test_fit_on_a_frame_equals_fit_on_its_values_and_keeps_names(frame, make):
    on_frame = make().fit(frame)
    on_array = make().fit(frame.to_numpy())
    np.testing.assert_array_equal(on_frame.feature_names_in_, ["length", "width"])
    assert not hasattr(on_array, "feature_names_in_")
    np.testing.assert_array_equal(on_frame.labels_, on_array.labels_)
    assert on_frame.lambda_ == on_array.lambda_
    np.testing.assert_array_equal(on_frame.predict(frame), on_array.predict(frame.to_numpy()))
    with pytest.raises(ValueError, match="feature names should match"):
        on_frame.predict(frame[["width", "length"]])


def test_regularization_path_takes_a_frame(frame):
    est = RobustKMeans(4, n_init=2, random_state=0)
    on_frame = regularization_path(est, frame, n_lambdas=6)
    on_array = regularization_path(est, frame.to_numpy(), n_lambdas=6)
    np.testing.assert_array_equal(on_frame.lambdas, on_array.lambdas)
    np.testing.assert_array_equal(on_frame.n_outliers, on_array.n_outliers)
