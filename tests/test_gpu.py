"""The linear estimators on GPU arrays (CuPy, PyTorch): the NumPy fit's answers, on the device.

The same comparison as tests/test_array_api.py (tests/array_namespace_check.py)
with the data as CuPy arrays and as PyTorch CUDA tensors: same outlier sets,
labels and counts, centres and objective within 1e-10, fitted arrays and
predictions on the input's device.  Skipped where there is no CUDA device
(CI has none); run on a GPU machine before a change to the core lands.
"""

import pytest
from test_array_api import run_check


def _cuda_cupy():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except (ImportError, RuntimeError, OSError):  # no cupy, no driver, no device
        return False


def _cuda_torch():
    try:
        import torch

        return torch.cuda.is_available()
    except (ImportError, RuntimeError, OSError):
        return False


@pytest.mark.skipif(not _cuda_cupy(), reason="needs CuPy and a CUDA device")
def test_linear_estimators_on_cupy_equal_numpy():
    run_check("cupy")


@pytest.mark.skipif(not _cuda_torch(), reason="needs PyTorch and a CUDA device")
def test_linear_estimators_on_torch_cuda_equal_numpy():
    run_check("torch")
