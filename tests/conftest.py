"""Suite-wide settings: which tests are slow.

``make test`` (CI) runs everything; ``make test-fast`` (``pytest -m "not slow"``)
skips the tests marked here: whole-program sessions (the console script, the
README sessions, the paper reproduction, the Table I demo), scikit-learn's
common checks, the array-API run in a subprocess, the Dask tests (a
LocalCluster each module) and a few fits of the paper's experiments.
"""

import pytest

#: Modules whose every test is slow.
SLOW_MODULES = {
    "test_cli.py", "test_demo.py", "test_sessions.py",
    "test_reproduce.py", "test_reproduce_usps.py",
    "test_estimator_checks.py", "test_array_api.py", "test_gpu.py", "test_dask.py",
    "test_cli_dask.py", "test_cold_start.py",
}
#: Single slow tests (module, test function name).
SLOW_TESTS = {
    ("test_datasets.py", "test_blobs_kmeans_rmse_close_to_paper_table_1"),
    ("test_kernel.py", "test_rings_all_outside_outliers_are_out_of_reach_at_gamma_02"),
    ("test_kernel.py", "test_rings_krkm_and_krpc_separate_the_rings"),
    ("test_fused.py", "test_fused_path_equals_numpy_path_along_a_warm_started_path"),
    ("test_loaders.py", "test_usps_text_and_mat_layouts_agree"),
    ("test_starts.py", "test_seven_points_on_the_command_line"),
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.name
        name = getattr(item, "originalname", item.name)
        if module in SLOW_MODULES or (module, name) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _compiled_kernels_on_small_data(monkeypatch):
    """Every kernel runs on the suite's small data sets: the compiled ones too.

    Users' fits of fewer than ``COMPILED_MIN_ROWS`` rows run the NumPy steps
    (so a first fit compiles nothing); the suite runs the compiled ones from
    0 rows, and the tests that compare both paths set the thresholds
    themselves.  tests/test_cold_start.py checks the default in fresh processes.
    """
    from robustclust._core import compiled

    monkeypatch.setattr(compiled, "COMPILED_MIN_ROWS", 0)
