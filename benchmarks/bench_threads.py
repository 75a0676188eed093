"""Threads must not fight: fits with the library's defaults vs OPENBLAS_NUM_THREADS=1 by hand.

A second process keeps one core busy the whole time (as another job on a
shared machine does).  Each fit runs in a fresh subprocess, once with the
environment as it is and once with OPENBLAS_NUM_THREADS=1 (and the other BLAS
variables) set by hand; the fit alone is timed (not the imports).  The
library limits its BLAS threads itself, so the two times should be close:
the acceptance bound is default <= 1.5 x one-thread.

    python benchmarks/bench_threads.py [--runs 3] [--only NAME]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

CASES = {
    "README mixture (tied, 80 outliers)": """
from robustclust import RobustGaussianMixture
from robustclust.datasets import make_blobs_with_outliers
X = make_blobs_with_outliers(n_outliers=80, random_state=0).X
est = RobustGaussianMixture(4, n_outliers=80, covariance_type="tied", random_state=0)
""",
    "digits, full mixture, k=10": """
from sklearn.datasets import load_digits
from robustclust import RobustGaussianMixture
X = load_digits().data
est = RobustGaussianMixture(10, covariance_type="tied", random_state=0)
""",
    "digits, kernel mixture (rbf), k=10": """
from sklearn.datasets import load_digits
from robustclust import KernelRobustGaussianMixture
X = load_digits().data
est = KernelRobustGaussianMixture(10, kernel="rbf", n_init=3, random_state=0)
""",
}

RUNNER = """
import time, warnings
warnings.simplefilter("ignore")
{setup}
start = time.perf_counter()
est.fit(X)
print(time.perf_counter() - start)
"""

ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS")}


def fit_seconds(setup, env):
    out = subprocess.run([sys.executable, "-c", RUNNER.format(setup=setup)], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    results = {}
    try:
        time.sleep(1.0)
        print(f"a busy process on one of {os.cpu_count()} cores; medians of {args.runs} runs; "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'fit':38s} {'defaults s':>10s} {'1 thread s':>10s} {'ratio':>6s}")
        for name, setup in CASES.items():
            if args.only and args.only not in name:
                continue
            default, single = [], []
            for _ in range(args.runs):
                default.append(fit_seconds(setup, dict(os.environ)))
                single.append(fit_seconds(setup, {**os.environ, **ONE_THREAD}))
            d, s = float(np.median(default)), float(np.median(single))
            results[name] = {"default": default, "one_thread": single}
            print(f"{name:38s} {d:10.2f} {s:10.2f} {d / s:6.2f}", flush=True)
    finally:
        busy.kill()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
