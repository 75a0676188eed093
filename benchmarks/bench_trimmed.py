"""Refined robust K-means against trimmed k-means on trimmed k-means' own objective.

Trimmed k-means (Cuesta-Albertos, Gordaliza, Matran 1997; R's
``trimcluster::trimkmeans``) minimizes the l0 cost of eq. (3) of the paper:
the squared distances of the N - s kept points to their nearest centre.
The baseline here is written from that definition: 100 random starts
(k distinct data points), each followed by concentration steps (assign to
the nearest centre, keep the N - s nearest points, centres to the means of
their kept points) until the kept set and the labels repeat; the start of
smallest cost wins.  It shares no code with the package.

The published implementation, R's ``trimcluster::trimkmeans`` (100 runs by
default, as here), is run too when ``Rscript`` and the package are installed
(Debian: ``apt-get install r-base-core r-cran-trimcluster``); it is timed
inside R (``proc.time`` around the call: R's start-up and the reading of the
data are not counted) and gets ``trim = (s + 1/2) / N`` so that it keeps
exactly N - s points (it keeps ``ceiling((1 - trim) N)``).  Without R those
columns say so.

Both get the same k and s; the table gives the l0 cost of eq. (3) at each
result's centres (computed by one function for all; "RKM" is the unrefined
fit), the process CPU time (median of ``--runs``; run with one BLAS thread,
e.g. ``OMP_NUM_THREADS=1``), and their ratios.  Target (issue 14): the refined
fit's cost at most trimmed k-means', at most 1/10 of its CPU time.

    python benchmarks/bench_trimmed.py [--runs 3] [--starts 100] [--no-r] [--output FILE.json]
"""

import argparse
import math
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from _results import Results, add_output_option

from robustclust import RobustKMeans


def l0_cost(X, centres, s):
    """eq. (3) at fixed centres: all but the s largest nearest squared distances."""
    d2 = (np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ centres.T
          + np.einsum("ij,ij->i", centres, centres)[None, :]).min(axis=1)
    d2 = np.maximum(d2, 0.0)
    return float(np.sort(d2)[: X.shape[0] - s].sum())


def trimmed_kmeans(X, k, s, starts=100, max_steps=1000, seed=0):
    """Trimmed k-means: ``starts`` random starts of concentration steps; best centres."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    best_cost, best = math.inf, None
    for _ in range(starts):
        M = X[rng.choice(n, k, replace=False)].copy()
        previous = None
        for _ in range(max_steps):
            D = sq[:, None] - 2.0 * X @ M.T + np.einsum("ij,ij->i", M, M)[None, :]
            labels = D.argmin(axis=1)
            d2 = D[np.arange(n), labels]
            kept = np.ones(n, dtype=bool)
            if s:
                kept[np.argpartition(-d2, s - 1)[:s]] = False
            key = (labels, kept)
            if previous is not None and np.array_equal(previous[0], labels) \
                    and np.array_equal(previous[1], kept):
                break
            previous = key
            for c in range(k):
                members = kept & (labels == c)
                if members.any():
                    M[c] = X[members].mean(axis=0)
        cost = l0_cost(X, M, s)
        if cost < best_cost:
            best_cost, best = cost, M.copy()
    return best


R_SCRIPT = """
suppressMessages(library(trimcluster))
args <- commandArgs(trailingOnly = TRUE)
X <- as.matrix(read.csv(args[1], header = FALSE))
k <- as.integer(args[2]); s <- as.integer(args[3]); runs <- as.integer(args[4])
set.seed(as.integer(args[5]))
t <- proc.time()
fit <- trimkmeans(X, k, trim = (s + 0.5) / nrow(X), runs = runs)
el <- proc.time() - t
cat(el[["user.self"]] + el[["sys.self"]], "\n")
write.table(fit$means, args[6], row.names = FALSE, col.names = FALSE, sep = ",")
"""


def r_available():
    """Whether Rscript with trimcluster can be run here."""
    if shutil.which("Rscript") is None:
        return False
    out = subprocess.run(["Rscript", "-e", "library(trimcluster)"], capture_output=True)
    return out.returncode == 0


def r_trimkmeans(X, k, s, runs, seed=0):
    """(centres, CPU seconds inside R) of ``trimcluster::trimkmeans``."""
    with tempfile.TemporaryDirectory() as tmp:
        data, script, means = (os.path.join(tmp, name)
                               for name in ("x.csv", "tkm.R", "means.csv"))
        np.savetxt(data, X, delimiter=",", fmt="%.17g")
        with open(script, "w") as f:
            f.write(R_SCRIPT)
        out = subprocess.run(["Rscript", script, data, str(k), str(s), str(runs), str(seed),
                              means], capture_output=True, text=True, check=True)
        return np.loadtxt(means, delimiter=",", ndmin=2), float(out.stdout.split()[0])


def noisy_2d(seed=0):
    """Three 2-D Gaussian clusters (400 points) and 600 uniform noise points (60%)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
    X = centres[rng.integers(3, size=400)] + rng.normal(size=(400, 2))
    noise = rng.uniform(-15, 20, size=(600, 2))
    return np.vstack([X, noise]), 3, 600


def standardised(loader, k):
    X = StandardScaler().fit_transform(loader().data)
    return X, k, math.ceil(0.05 * X.shape[0])  # s: 5% of the points


SETS = {
    "digits": lambda: standardised(load_digits, 10),
    "iris": lambda: standardised(load_iris, 3),
    "wine": lambda: standardised(load_wine, 3),
    "breast cancer": lambda: standardised(load_breast_cancer, 2),
    "2-D, 60% noise": noisy_2d,
}


def cpu(fn, runs):
    times, out = [], None
    for _ in range(runs):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return out, float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--no-r", action="store_true", help="skip R's trimkmeans")
    add_output_option(parser)
    args = parser.parse_args()
    use_r = not args.no_r and r_available()
    results = Results(
        "bench_trimmed", __doc__.splitlines()[0],
        f"The l0 cost of eq. (3) (trimmed k-means' objective) at each result's centres, and "
        f"process CPU seconds (medians of {args.runs} runs). 'trimmed k-means' is the NumPy "
        f"transcription of its definition in the script ({args.starts} random starts of "
        f"concentration steps); 'RKM' is RobustKMeans(k, n_outliers=s, refine=False), "
        f"'refined' the default RobustKMeans(k, n_outliers=s). Standardised data, s = 5% of "
        f"N; the last set is 400 points in three 2-D clusters plus 600 uniform ones.", args)
    columns = [("data", "data"), ("n", "N"), ("k", "k"), ("s", "s"),
               ("tkm_cost", "trimmed k-means cost", ".6g"), ("rkm_cost", "RKM cost", ".6g"),
               ("refined_cost", "refined cost", ".6g"),
               ("cost_ratio", "refined / trimmed k-means cost", ".5f"),
               ("tkm_cpu", "trimmed k-means CPU s", ".3f"), ("rkm_cpu", "RKM CPU s", ".3f"),
               ("refined_cpu", "refined CPU s", ".3f"),
               ("cpu_ratio", "refined / trimmed k-means CPU", ".3f")]
    if use_r:
        columns += [("r_cost", "R trimkmeans cost", ".6g"),
                    ("r_cost_ratio", "refined / R cost", ".5f"),
                    ("r_cpu", "R CPU s", ".3f"), ("r_cpu_ratio", "refined / R CPU", ".4f")]
    else:
        results.note("R's trimcluster::trimkmeans was not run (Rscript or the package "
                     "absent, or --no-r).")
    table = results.table("Refined robust K-means against trimmed k-means", columns)
    print(f"load average {os.getloadavg()[0]:.2f}; R trimkmeans: "
          f"{'run once per set' if use_r else 'not run (Rscript or trimcluster absent)'}")
    print(f"{'data':16s} {'N':>5s} {'k':>3s} {'s':>4s} {'tkm cost':>12s} {'RKM cost':>12s} "
          f"{'refined':>12s} {'ref/tkm':>8s} {'tkm CPU s':>10s} {'RKM CPU s':>10s} "
          f"{'ref CPU s':>10s} "
          f"{'CPU ratio':>9s} {'R cost':>12s} {'ref/R':>7s} {'R CPU s':>9s} {'CPU/R':>7s}")
    for name, make in SETS.items():
        X, k, s = make()
        M_t, t_t = cpu(lambda: trimmed_kmeans(X, k, s, args.starts), args.runs)
        plain, t_p = cpu(lambda: RobustKMeans(k, n_outliers=s, refine=False,
                                              random_state=0).fit(X), args.runs)
        ref, t_r = cpu(lambda: RobustKMeans(k, n_outliers=s, random_state=0).fit(X), args.runs)
        c_t = l0_cost(X, M_t, s)
        c_p = l0_cost(X, plain.cluster_centers_, s)
        c_r = l0_cost(X, ref.cluster_centers_, s)
        line = (f"{name:16s} {X.shape[0]:5d} {k:3d} {s:4d} {c_t:12.6g} {c_p:12.6g} {c_r:12.6g} "
                f"{c_r / c_t:8.4f} {t_t:10.3f} {t_p:10.3f} {t_r:10.3f} {t_r / t_t:9.3f}")
        row = dict(data=name, n=X.shape[0], k=k, s=s, tkm_cost=c_t, rkm_cost=c_p,
                   refined_cost=c_r, cost_ratio=c_r / c_t, tkm_cpu=t_t, rkm_cpu=t_p,
                   refined_cpu=t_r, cpu_ratio=t_r / t_t)
        if use_r:
            M_R, t_R = r_trimkmeans(X, k, s, args.starts)
            c_R = l0_cost(X, M_R, s)
            line += f" {c_R:12.6g} {c_r / c_R:7.4f} {t_R:9.3f} {t_r / t_R:7.4f}"
            row.update(r_cost=c_R, r_cost_ratio=c_r / c_R, r_cpu=t_R, r_cpu_ratio=t_r / t_R)
        print(line, flush=True)
        table.add(**row)
    results.write(args.output)


if __name__ == "__main__":
    main()
