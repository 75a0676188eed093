"""A first run compiles nothing it does not need: no numba for small problems, none
at import, the compiled kernels from COMPILED_MIN_ROWS rows on."""

import os
import subprocess
import sys

import pytest

FIT_SMALL = """
import sys
import numpy as np
from robustclust import {cls}
X = np.random.default_rng(0).normal(size=(300, 3)) + np.repeat(np.eye(3) * 8, 100, axis=0)
{cls}(3, random_state=0, **{kw}).fit(X)
print('numba' in sys.modules)
"""


def _fresh(code, tmp_path, empty_cache=True):
    env = dict(os.environ)
    if empty_cache:  # as on a fresh install
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize("cls, kw", [("RobustKMeans", {}), ("RobustKMeans", {"n_outliers": 5}),
                                     ("RobustKMeans", {"fuzzifier": 1.5}),
                                     ("RobustGaussianMixture", {}),
                                     ("RobustGaussianMixture", {"covariance_type": "full"}),
                                     ("KernelRobustKMeans", {"n_outliers": 5})])
def test_a_small_fit_in_a_fresh_process_imports_no_numba(tmp_path, cls, kw):
    assert _fresh(FIT_SMALL.format(cls=cls, kw=kw), tmp_path) == ["False"]
    assert not (tmp_path / "numba-cache").exists() or not any(
        (tmp_path / "numba-cache").rglob("*.nbi"))


def test_import_loads_neither_numba_nor_scikit_learn(tmp_path):
    code = ("import sys, robustclust; "
            "print('numba' in sys.modules, 'sklearn' in sys.modules, "
            "'scipy.stats' in sys.modules)")
    assert _fresh(code, tmp_path) == ["False", "False", "False"]


def test_a_large_fit_runs_the_compiled_kernels(tmp_path):
    code = ("import sys, numpy as np; from robustclust import RobustKMeans; "
            "from robustclust._core.compiled import COMPILED_MIN_ROWS, loaded; "
            "X = np.random.default_rng(0).normal(size=(COMPILED_MIN_ROWS, 2)); "
            "RobustKMeans(2, n_outliers=5, random_state=0).fit(X); "
            "print('numba' in sys.modules, loaded.is_set())")
    # (numba's own cache: a fresh one would compile for half a minute)
    assert _fresh(code, tmp_path, empty_cache=False) == ["True", "True"]
