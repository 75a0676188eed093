"""Reproducers of the hostile-input probe (issue 44), one or more per class.

Every test here failed on the code before its fix.  The console-script
sessions are in tests/test_signals.py and tests/test_memory_limits.py.
"""

import warnings

import numpy as np
import pytest

from robustclust import OutlierCountWarning, RobustGaussianMixture, RobustKMeans
from robustclust.cli import main

# -- silent wrong results: the far point that captured a start ----------------------------
FAR = np.r_[np.zeros((30, 2)), np.ones((30, 2)), [[100.0, 100.0]]]


@pytest.mark.parametrize("make", [
    lambda: RobustKMeans(2, n_outliers=1, weighted=True, random_state=0),
    lambda: RobustKMeans(2, n_outliers=1, q=1.5, random_state=0),
    lambda: RobustKMeans(2, n_outliers=1, refine=False, random_state=0),
    lambda: RobustGaussianMixture(2, n_outliers=1, covariance_type="full", random_state=0),
    lambda: RobustGaussianMixture(2, n_outliers=1, random_state=0),
], ids=["weighted", "soft", "unrefined", "mixture_full", "mixture"])
def test_a_far_point_does_not_capture_the_count_search_start(make):
    # the count search read lam = c_(1) / 2 at the start (every other row sits
    # on its centre, c_(2) = 0): the far point's pull lam / 2 dragged the
    # centre of (1, 1) past the (0, 0) rows, and (100, 100) kept a cluster
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierCountWarning)
        model = make().fit(FAR)
    assert model.n_outliers_ == 1 and model.labels_[-1] == -1
    centres = getattr(model, "cluster_centers_", None)
    centres = model.means_ if centres is None else centres
    np.testing.assert_allclose(np.sort(centres[:, 0]), [0.0, 1.0], atol=0.05)
    assert len(set(model.labels_[:30])) == 1 and len(set(model.labels_[30:60])) == 1
    assert model.labels_[0] != model.labels_[30]


# -- the command line on tied tables ------------------------------------------------------
def test_tied_tables_on_the_command_line_warn_instead_of_failing_numerically(tmp_path, capsys):
    path = tmp_path / "ties.csv"
    path.write_text("x\n" + "\n".join(["-2", "0", "6", "0", "0", "12", "0", "12", "1", "12"])
                    + "\n")
    const = tmp_path / "const.csv"
    const.write_text("a,b,c\n" + "7,7,7\n" * 50)
    for table, k in ((path, "4"), (const, "2")):
        out = tmp_path / f"{table.stem}-labels.csv"
        assert main(["fit", str(table), "-k", k, "-s", "3", "-o", str(out), "--quiet"]) == 0
        err = capsys.readouterr().err
        assert "failed numerically" not in err
        assert "n_outliers=3 was asked for, but only" in err
        import pandas as pd

        frame = pd.read_csv(out)
        np.testing.assert_array_equal(frame.is_outlier, frame.outlier_score > 0)
        np.testing.assert_array_equal(frame.is_outlier, frame.cluster == -1)
