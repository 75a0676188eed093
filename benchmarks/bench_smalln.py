"""Small-N overhead: CPU seconds of one fit with an outlier count, beside scikit-learn.

Data: three unit-variance Gaussian clusters at (0, 0), (6, 0), (3, 5) holding
n / 2 points, plus n / 2 points uniform on [-10, 16]^2; s = n / 2, C = 3,
default settings, ``random_state=0``.  Each cell is the median over
``--runs`` fits of the process CPU time (``time.process_time``: not inflated
by other jobs, but it counts every BLAS thread, so all rows, scikit-learn's
included, run under ``threadpoolctl`` with the same BLAS thread limit,
``--blas-threads``, 1 by default).

    python benchmarks/bench_smalln.py [--runs 3] [--sizes 1000 2000] [--blas-threads 1]
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from robustclust import RobustGaussianMixture, RobustKMeans

ROWS = {
    "soft weighted RKM": lambda n: RobustKMeans(3, fuzzifier=1.5, penalty="log", n_outliers=n // 2,
                                                random_state=0),
    "weighted RKM": lambda n: RobustKMeans(3, penalty="log", n_outliers=n // 2,
                                           random_state=0),
    "soft RKM": lambda n: RobustKMeans(3, fuzzifier=1.5, n_outliers=n // 2, random_state=0),
    "hard RKM": lambda n: RobustKMeans(3, n_outliers=n // 2, random_state=0),
    "RPC spherical": lambda n: RobustGaussianMixture(3, n_outliers=n // 2, random_state=0),
    "RPC tied": lambda n: RobustGaussianMixture(3, covariance_type="tied",
                                                n_outliers=n // 2, random_state=0),
    "sklearn GaussianMixture": lambda n: GaussianMixture(3, random_state=0),
    "sklearn GaussianMixture n_init=10": lambda n: GaussianMixture(3, n_init=10,
                                                                   random_state=0),
}


def make_data(n, seed=0):
    """n / 2 points in three unit-variance clusters, n / 2 uniform on [-10, 16]^2."""
    rng = np.random.default_rng(seed)
    means = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
    k = n // 2
    inliers = means[rng.integers(3, size=k)] + rng.normal(size=(k, 2))
    noise = rng.uniform(-10, 16, size=(n - k, 2))
    return np.vstack([inliers, noise])


def cpu_time(make, X):
    start = time.process_time()
    est = make().fit(X)
    return time.process_time() - start, est


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--only", default=None, help="rows whose name contains this")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"CPU seconds per fit, median of {args.runs} runs; BLAS threads limited to "
          f"{args.blas_threads} for every row; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores")
    header = f"{'model':36s}" + "".join(f"{'n=' + str(n):>12s}" for n in args.sizes) \
        + "   flagged"
    print(header)
    print("-" * len(header))
    data = {n: make_data(n) for n in args.sizes}
    for name, factory in ROWS.items():
        if args.only and args.only not in name:
            continue
        cells, flagged = [], []
        for n in args.sizes:
            times = []
            with threadpool_limits(limits=args.blas_threads, user_api="blas"):
                for _ in range(args.runs):
                    t, est = cpu_time(lambda: factory(n), data[n])
                    times.append(t)
            cells.append(f"{np.median(times):12.3f}")
            flagged.append(str(getattr(est, "n_outliers_", "-")))
        print(f"{name:36s}" + "".join(cells) + "   " + "/".join(flagged))


if __name__ == "__main__":
    main()
