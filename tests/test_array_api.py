"""The array-namespace seam: the linear estimators run on array_api_strict arrays.

Under ``sklearn.config_context(array_api_dispatch=True)`` the dense linear
estimators take arrays of any array-API namespace and compute with that
namespace's functions only (array_api_strict has nothing else).  They must
give the same outlier set and labels, and centres within 1e-10, as on NumPy
(tests/array_namespace_check.py holds the comparison; tests/test_gpu.py runs
it on CuPy and PyTorch arrays on a GPU).

scikit-learn's array-API mode needs ``SCIPY_ARRAY_API=1`` set before SciPy
is imported, which would change SciPy for the rest of the suite, so the
comparison runs in a subprocess.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).with_name("array_namespace_check.py")
N_ESTIMATORS = 15


def run_check(backend):
    """Run the comparison for ``backend`` in a subprocess; its output."""
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    out = subprocess.run([sys.executable, str(CHECK), backend], check=False, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("ok ") == N_ESTIMATORS, out.stdout
    return out.stdout


def test_linear_estimators_on_array_api_strict_equal_numpy():
    pytest.importorskip("array_api_strict")
    run_check("strict")


def test_linear_estimators_on_a_second_device_equal_numpy():
    """array_api_strict's 'device1' stands in for a GPU: its arrays refuse
    conversion to NumPy and mixing with other devices, as CuPy's do."""
    pytest.importorskip("array_api_strict")
    run_check("strict-device")
