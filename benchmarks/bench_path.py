"""Cost of the warm-started regularization path relative to single fits.

For each data set: the whole path (n_lambdas values, warm starts, one K-means
start) against one cold fit at a lambda in the middle of the path with the
same settings (n_init=1), median of several runs, and the total BCD
iterations of the path against cold fits at every grid value.

    python benchmarks/bench_path.py [--repeats 5]
"""

import argparse
import time

import numpy as np

from robustclust import RobustKMeans, regularization_path
from robustclust.datasets import make_blobs_with_outliers


def datasets():
    yield "paper set, 80/280", make_blobs_with_outliers(n_outliers=80, random_state=0).X, 4
    rng = np.random.default_rng(0)
    means = rng.normal(scale=5.0, size=(8, 8))
    X = means[rng.integers(8, size=20_000)] + rng.normal(size=(20_000, 8))
    X[:400] = rng.uniform(-20, 20, size=(400, 8))
    yield "N=20000, p=8, C=8", X, 8


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-lambdas", type=int, default=100)
    args = parser.parse_args()
    print(f"{'data':20s} {'path s':>8s} {'one fit s':>10s} {'ratio':>6s} "
          f"{'path iters':>11s} {'cold iters':>11s}")
    for name, X, C in datasets():
        est = RobustKMeans(C, n_init=1, random_state=0)
        path_t, fit_t = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            path = regularization_path(est, X, n_lambdas=args.n_lambdas)
            path_t.append(time.perf_counter() - start)
            lam = path.lambdas[len(path.lambdas) // 2]
            start = time.perf_counter()
            RobustKMeans(C, lam=lam, n_init=1, random_state=0).fit(X)
            fit_t.append(time.perf_counter() - start)
        cold = sum(RobustKMeans(C, lam=lam, n_init=1, random_state=0).fit(X).n_iter_
                   for lam in path.lambdas)
        p, f = np.median(path_t), np.median(fit_t)
        print(f"{name:20s} {p:8.3f} {f:10.3f} {p / f:6.1f} {path.n_iter.sum():11d} {cold:11d}")


if __name__ == "__main__":
    main()
