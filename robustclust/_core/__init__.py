"""The solver core: the paper's algorithm written once.

* :mod:`.state`: the iterate (centres, memberships, outliers in shrink form);
* :mod:`.geometry`: the only code that touches the data (linear features or a
  kernel matrix): products, distances, sums, shifts;
* :mod:`.covariance`: the mixture's Sigma, common or per component (factor,
  log-determinant, floor, eigenvalue-ratio bound);
* :mod:`.penalties`: the penalties and THE O-step;
* :mod:`.models`: robust K-means (U- and M-steps) and the robust mixture
  (E-, M- and Sigma-steps);
* :mod:`.components`: the robust mixture with one covariance per component;
* :mod:`.solver`: the driver (init, run loop, stopping rule, assign);
* :mod:`._fused`: the compiled hard K-means pass (dense NumPy fast path):
  its driver, and :mod:`._hard_kernels`: its numba kernels;
* :mod:`.selection`: lambda by count, the default lambda, the path's grid;
* :mod:`.threads`: BLAS thread limits;
* :mod:`.backend`: the array namespace and what the standard lacks.
"""
