"""Fit the dense linear estimators on arrays of another namespace and compare with NumPy.

    SCIPY_ARRAY_API=1 python tests/array_namespace_check.py {strict,strict-device,cupy,torch}

Under ``sklearn.config_context(array_api_dispatch=True)`` each estimator is
fitted on the data converted to the namespace (``array_api_strict`` on the
CPU, and on its emulated second device; CuPy or PyTorch arrays on the first CUDA device) and must give the
NumPy fit's outlier set and labels, centres and objective within 1e-10
(relative; 1e-8 on a GPU, see ``RTOL``), its count, and its predictions; the fitted centres and the
predictions must be arrays of the input's namespace on the input's device.
Prints one ``ok <estimator>`` line per estimator and exits 1 at the first
difference.  Run as a subprocess by tests/test_array_api.py (CPU, in CI) and
tests/test_gpu.py (skipped without a CUDA device): scikit-learn's array-API
mode needs ``SCIPY_ARRAY_API=1`` before SciPy is imported.
"""

import sys
import warnings

import numpy as np
import sklearn

from robustclust import RobustGaussianMixture, RobustKMeans
from robustclust._core import compiled
from robustclust.datasets import make_blobs_with_outliers

# the NumPy reference runs the compiled kernels, as everywhere in the suite
# (tests/conftest.py): they are the path whose results the namespace path
# must reproduce to RTOL
compiled.COMPILED_MIN_ROWS = 0


def backend(name):
    """(to_namespace, is_on_input_device, to_numpy) for a backend name."""
    if name in ("strict", "strict-device"):
        import array_api_strict as xps

        if name == "strict":
            xps.set_array_api_strict_flags(api_version="2024.12")
            where = xps.Device("CPU_DEVICE")
        else:
            # an emulated accelerator: arrays on 'device1' refuse conversion to
            # NumPy (as CuPy's do) and the 2023.12 standard takes no Python
            # scalars in binary functions (as PyTorch's maximum/minimum)
            xps.set_array_api_strict_flags(api_version="2023.12")
            where = xps.Device("device1")

        def on_device(a):
            return type(a).__module__.startswith("array_api_strict") and a.device == where

        def to_np(a):
            return np.asarray(xps.asarray(a, device=xps.Device("CPU_DEVICE")))

        return (lambda a: xps.asarray(a, device=where)), on_device, to_np
    if name == "cupy":
        import cupy

        def on_device(a):
            return isinstance(a, cupy.ndarray) and a.device.id == 0

        return cupy.asarray, on_device, cupy.asnumpy
    if name == "torch":
        import torch

        def on_device(a):
            return isinstance(a, torch.Tensor) and a.device.type == "cuda"

        return (lambda a: torch.as_tensor(a, device="cuda"), on_device,
                lambda a: a.detach().cpu().numpy())
    raise SystemExit(f"unknown backend {name!r}: strict, cupy or torch")


INIT = np.array([[-5.0, -5.0], [5.0, 5.0], [-5.0, 5.0], [5.0, -5.0]])


def estimators():
    """The estimators compared; an explicit ``init`` (and the mixture's ``means_init``,
    ``weights_init``, ``precisions_init``) is given in the namespace."""
    return [
        RobustKMeans(4, lam=4.0, n_init=2, random_state=0),
        RobustKMeans(4, n_outliers=40, n_init=2, random_state=0),
        RobustKMeans(4, fuzzifier=1.5, n_init=2, random_state=0),
        RobustKMeans(4, lam=3.0, penalty="log", n_init=2, random_state=0),
        RobustGaussianMixture(4, n_outliers=40, n_init=2, refine=False, random_state=0),
        RobustGaussianMixture(4, lam=1.5, covariance_type="tied_diag", n_init=2,
                              random_state=0),
        RobustGaussianMixture(4, n_outliers=40, covariance_type="tied", n_init=2,
                              refine=False, random_state=0),
        RobustKMeans(4, n_init=2, random_state=0),
        RobustGaussianMixture(4, lam=1.5, covariance_type="tied", penalty="log", n_init=2,
                              random_state=0),
        RobustKMeans(4, n_outliers=40, init=INIT),
        RobustGaussianMixture(4, n_outliers=40, init=INIT, refine=False),
        # (the mixtures' trimmed refinement runs on NumPy input only: the count fits
        # compare the penalized engines, refine=False)
        # one covariance per component
        RobustGaussianMixture(4, n_outliers=40, covariance_type="full", n_init=2,
                              refine=False, random_state=0),
        RobustGaussianMixture(4, lam=1.5, covariance_type="diag", penalty="log", n_init=2,
                              random_state=0),
        RobustGaussianMixture(4, lam=1.5, covariance_type="spherical", eigenvalue_ratio=5.0,
                              n_init=2, random_state=0),
        RobustGaussianMixture(4, lam=2.0, covariance_type="full",
                              init={"means": INIT, "weights": np.full(4, 0.25),
                                    "precisions": np.repeat(np.eye(2)[None], 4, axis=0)}),
    ]


#: Relative tolerance on centres and objective: a GPU's BLAS sums in another
#: order than NumPy's, and a count search's bisection or EM's stopping rule
#: can carry those last bits a few digits up (PyTorch on an H100: 1.9e-9 on
#: the mixture's means with a count target, labels and outliers equal).
RTOL = {"strict": 1e-10, "strict-device": 1e-10, "cupy": 1e-8, "torch": 1e-8}


def check(name):
    to_xp, on_device, to_np = backend(name)
    rtol = RTOL[name]
    warnings.simplefilter("ignore")
    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    X_new = np.vstack([X[:20] + 0.05, [[40.0, -40.0], [25.0, 30.0]]])
    for est in estimators():
        ref = sklearn.base.clone(est).fit(X)
        with sklearn.config_context(array_api_dispatch=True):
            got = sklearn.base.clone(est)
            if isinstance(est.init, dict):  # the mixtures' means, weights and precisions
                got.set_params(init={k: v if isinstance(v, str) else to_xp(v)
                                     for k, v in est.init.items()})
            elif not isinstance(est.init, str):
                got.set_params(init=to_xp(est.init))
            got.fit(to_xp(X))
            labels = got.predict(to_xp(X_new))
        label = repr(est)
        centres = "cluster_centers_" if hasattr(ref, "cluster_centers_") else "means_"
        assert on_device(getattr(got, centres)), (label, type(getattr(got, centres)))
        assert on_device(labels), (label, type(labels))
        for attr in ("outlier_mask_", "labels_"):
            assert on_device(getattr(got, attr)), (label, attr)
            assert np.array_equal(to_np(getattr(got, attr)), getattr(ref, attr)), (label, attr)
        if getattr(ref, "_hard_memberships", None) is not None:  # built when first read
            U = got.memberships_
            assert np.array_equal(U if isinstance(U, np.ndarray) else to_np(U),
                                  ref.memberships_), (label, "memberships_")
        a, b = getattr(ref, centres), to_np(getattr(got, centres))
        assert np.max(np.abs(a - b)) <= rtol * max(1.0, np.max(np.abs(a))), \
            (label, "centres differ by", np.max(np.abs(a - b)), "iterations", ref.n_iter_,
             got.n_iter_, "objectives", ref.objective_, got.objective_)
        assert abs(got.objective_ - ref.objective_) <= rtol * abs(ref.objective_), label
        assert got.n_outliers_ == ref.n_outliers_ > 0, label
        assert np.array_equal(to_np(labels), ref.predict(X_new)), label
        print("ok", label, flush=True)


if __name__ == "__main__":
    check(sys.argv[1] if len(sys.argv) > 1 else "strict")
