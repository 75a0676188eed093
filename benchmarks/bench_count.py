"""Cost of hitting an outlier count, and of the whole lambda path, in fixed-lambda fits.

For each model and data set: the time of a fit with ``n_outliers=s`` divided
by the time of one fit at the lambda that fit found (same settings, same
``n_init``), and the time of the 100-value ``regularization_path`` divided by
the same fixed-lambda fit.  Medians over several runs; process CPU time (not
inflated by other jobs on the machine) and wall time.

    python benchmarks/bench_count.py [--runs 3] [--only NAME] [--data NAME] [--large] [--progress]
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from robustclust import RobustGaussianMixture, RobustKMeans, regularization_path
from robustclust.datasets import make_blobs_with_outliers

MODELS = {
    "hard RKM": lambda C, **kw: RobustKMeans(C, **kw),
    "soft RKM": lambda C, **kw: RobustKMeans(C, fuzzifier=1.5, **kw),
    "weighted RKM": lambda C, **kw: RobustKMeans(C, penalty="log", **kw),
    "RPC spherical": lambda C, **kw: RobustGaussianMixture(C, **kw),
    "RPC tied": lambda C, **kw: RobustGaussianMixture(C, covariance_type="tied", **kw),
}


def datasets(large):
    yield "paper 80/280", make_blobs_with_outliers(n_outliers=80, random_state=0).X, 4, 80
    yield "digits k=6", StandardScaler().fit_transform(load_digits(n_class=6).data), 6, 50
    if large:
        rng = np.random.default_rng(0)
        means = rng.normal(scale=4.0, size=(16, 32))
        X = means[rng.integers(16, size=200_000)] + rng.normal(size=(200_000, 32))
        X[:2000] = rng.uniform(-30, 30, size=(2000, 32))
        yield "N=200000 p=32 C=16", X, 16, 2000


def timed(func):
    wall, cpu = time.perf_counter(), time.process_time()
    out = func()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def progress(args, line):
    """Each timing as it is taken, on stderr (``--progress``): a large row's three
    fits can take an hour between the table's lines."""
    if args.progress:
        print(line, file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default=None, help="models or data sets whose name "
                        "contains this")
    parser.add_argument("--data", default=None, help="data sets whose name contains this")
    parser.add_argument("--large", action="store_true", help="add the N = 200,000 set")
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--progress", action="store_true",
                        help="print each timing on stderr as it is taken")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"n_init={args.n_init}; medians of {args.runs} runs; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; ratios of CPU time "
          "(wall time in brackets)")
    print(f"{'data':20s} {'model':14s} {'count fit s':>11s} {'fixed fit s':>11s} "
          f"{'count/fixed':>14s} {'path s':>8s} {'path/fixed':>14s} {'flagged':>8s}")
    for name, X, C, s in datasets(args.large):
        if args.data and args.data not in name:
            continue
        for model, make in MODELS.items():
            if args.only and args.only not in model and args.only not in name:
                continue
            rows = []
            for run in range(args.runs):
                kw = {"n_init": args.n_init, "random_state": run}
                cw, cc, fitted = timed(lambda: make(C, n_outliers=s, **kw).fit(X))
                progress(args, f"{name} {model} run {run}: count fit {cc:.3f} s CPU "
                         f"({cw:.3f} wall), {fitted.n_outliers_} flagged")
                fw, fc, _ = timed(lambda: make(C, lam=fitted.unweighted_lambda_
                                               if model != "weighted RKM" else fitted.lambda_,
                                               **kw).fit(X))
                progress(args, f"{name} {model} run {run}: fixed fit {fc:.3f} s CPU "
                         f"({fw:.3f} wall)")
                pw, pc, _ = timed(lambda: regularization_path(make(C, **kw), X, n_lambdas=100))
                progress(args, f"{name} {model} run {run}: path {pc:.3f} s CPU ({pw:.3f} wall)")
                rows.append((cc, fc, cc / fc, cw / fw, pc, pc / fc, pw / fw, fitted.n_outliers_))
            m = np.median(np.array(rows), axis=0)
            print(f"{name:20s} {model:14s} {m[0]:11.3f} {m[1]:11.3f} {m[2]:7.1f} ({m[3]:4.1f}) "
                  f"{m[4]:8.3f} {m[5]:7.1f} ({m[6]:4.1f}) {int(m[7]):8d}", flush=True)


if __name__ == "__main__":
    main()
