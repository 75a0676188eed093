"""robustclust against the robust clusterers a user would otherwise pick.

Peers, each given the same k and, where it takes one, the same outlier
budget s:

- ``trimcluster::trimkmeans(X, k, trim, runs=100)`` (R): trimmed k-means.
  It keeps ceiling((1 - trim) n) points, so trim = (s + 0.5)/n trims exactly s.
- ``mclust::Mclust(X, G=k, initialization=list(noise=...))`` (R): Gaussian
  mixture plus a uniform noise component; mclust's default model selection
  by BIC over its covariance models.  Initial noise guess: the 10% of the
  points with the largest distance to their 10th nearest neighbour (computed
  here with scikit-learn; its CPU time is added to mclust's).  mclust then
  estimates the noise proportion itself.
- scikit-learn ``KMeans(n_init=10)`` then the s points farthest from their
  centre flagged; ``GaussianMixture`` (full covariances, n_init=1) then the
  s least likely points flagged; ``HDBSCAN(min_cluster_size=max(5, N/20))``
  (no k; its noise label -1 are the outliers).
- ours: ``RobustKMeans(k)`` (default count) and ``RobustKMeans(k,
  n_outliers=s)``; ``RobustGaussianMixture(k)`` with the default
  ``"tied_spherical"`` and with ``"full"``, each with the default count and
  with ``n_outliers=s``.

Data: standardised iris, wine, breast cancer, digits (constant pixels
dropped) with s = 5% of N (no planted outliers: ARI on the points a method
keeps, against the true classes); USPS (all ten digits, pixels as given,
s = 5%) when ``load_usps`` finds a local copy (``--usps-home``, default
/work/shared/data); synthetic sets with planted outliers (s = planted count):
``make_blobs(300, centers=3, random_state=1)`` in 2-D and 3-D plus uniform
noise over a box three times the blobs' extent making up 10% and 60% of the
set, and three 2-D clusters of different shapes (elongated, broad, tight)
plus 5% far outliers (Mahalanobis distance > 8 from every cluster).  On
synthetic sets the ARI is over the true inliers, a flagged inlier counting
as a cluster of its own (-1); precision and recall are those of the flagged
set against the planted one.

"l0 cost" is eq. (3) of the paper at a K-means-type result's centres: the
sum of the N - s smallest squared distances to the nearest centre (same
function for every method).

CPU time is process CPU time (``time.process_time``), median over ``--runs``
seeds (0, 1, ...; metrics are medians over the seeds too); a fit whose first
run takes more than ``--slow`` seconds is run once.  The R peers are timed
inside R (``proc.time()`` user + sys around the call, excluding R's start-up
and reading the CSV), ``--r-runs`` times (default 1).  Run with one BLAS
thread: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``.  Without ``Rscript``
or the R packages the R peers are skipped with a note.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_peers.py [--runs 3]
"""

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.cluster import HDBSCAN, KMeans
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

from robustclust import RobustGaussianMixture, RobustKMeans

# ---------------------------------------------------------------- data sets


def _real(loader, k):
    X = loader().data.astype(float)
    X = X[:, X.std(axis=0) > 0]          # digits: constant pixels carry nothing
    y = loader().target
    return dict(X=StandardScaler().fit_transform(X), y=y, k=k,
                s=math.ceil(0.05 * len(X)), outliers=None)


def _blobs_noise(p, fraction, seed=0):
    X, y = make_blobs(300, centers=3, n_features=p, random_state=1)
    lo, hi = X.min(axis=0), X.max(axis=0)
    mid, half = (lo + hi) / 2, 1.5 * (hi - lo)
    n_noise = round(300 * fraction / (1 - fraction))
    U = np.random.default_rng(seed).uniform(mid - half, mid + half, size=(n_noise, p))
    out = np.r_[np.zeros(300, bool), np.ones(n_noise, bool)]
    return dict(X=np.vstack([X, U]), y=np.r_[y, -np.ones(n_noise, int)], k=3,
                s=n_noise, outliers=out)


def _shapes(seed=0):
    """Elongated, broad and tight 2-D clusters plus 5% far outliers."""
    rng = np.random.default_rng(seed)
    a = np.pi / 6
    R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    covs = [R @ np.diag([36.0, 0.25]) @ R.T, 4.0 * np.eye(2), 0.04 * np.eye(2)]
    means = [np.array([0.0, 0.0]), np.array([16.0, -4.0]), np.array([12.0, 10.0])]
    sizes = [300, 200, 100]
    X = np.vstack([rng.multivariate_normal(m, c, n) for m, c, n in zip(means, covs, sizes)])
    y = np.repeat(np.arange(3), sizes)
    n_out = round(0.05 * 600 / 0.95)
    P = [np.linalg.inv(c) for c in covs]
    far = []
    while len(far) < n_out:
        u = rng.uniform([-30, -30], [45, 40])
        if all((u - m) @ Pi @ (u - m) > 64 for m, Pi in zip(means, P)):
            far.append(u)
    out = np.r_[np.zeros(600, bool), np.ones(n_out, bool)]
    return dict(X=np.vstack([X, far]), y=np.r_[y, -np.ones(n_out, int)], k=3, s=n_out,
                outliers=out)


def _usps(home, full=False):
    try:
        from robustclust.datasets import load_usps
        b = load_usps(home, download_if_missing=False)
    except (OSError, ValueError, ImportError) as exc:
        print(f"USPS skipped: {exc}".splitlines()[0])
        return None
    # large for the per-component models: mclust gets the models it uses when
    # n <= p (spherical and diagonal) and its hierarchical start on 2,000 points;
    # the full per-component mixtures are left out unless --usps-full
    return dict(X=b.data.astype(float), y=b.target, k=10, s=math.ceil(0.05 * len(b.data)),
                outliers=None, mclust_models="EII,VII,EEI,VEI,EVI,VVI", mclust_subset=2000,
                tkm_runs=10,    # trimkmeans' 100 starts take over 2 s each on digits
                skip=() if full else ("RobustGaussianMixture full (default)",
                                      "RobustGaussianMixture full (n_outliers=s)"))


# ---------------------------------------------------------------- metrics


def l0_cost(X, centres, s):
    """eq. (3) at fixed centres: all but the s largest nearest squared distances."""
    d2 = (np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ centres.T
          + np.einsum("ij,ij->i", centres, centres)[None, :]).min(axis=1)
    return float(np.sort(np.maximum(d2, 0.0))[: X.shape[0] - s].sum())


def score(data, labels, flagged, centres):
    """ARI, flagged count, precision, recall, l0 cost for one result."""
    y, out = data["y"], data["outliers"]
    labels = np.where(flagged, -1, labels)
    if out is None:
        keep = ~flagged
        ari = adjusted_rand_score(y[keep], labels[keep]) if keep.sum() > 1 else float("nan")
        prec = rec = float("nan")
    else:
        ari = adjusted_rand_score(y[~out], labels[~out])
        tp = int((flagged & out).sum())
        prec = tp / flagged.sum() if flagged.sum() else float("nan")
        rec = tp / out.sum()
    cost = l0_cost(data["X"], centres, data["s"]) if centres is not None else float("nan")
    return dict(ari=ari, flagged=int(flagged.sum()), prec=prec, rec=rec, cost=cost)


# ---------------------------------------------------------------- Python methods


def _kmeans_drop(X, k, s, seed):
    km = KMeans(k, n_init=10, random_state=seed).fit(X)
    d = ((X - km.cluster_centers_[km.labels_]) ** 2).sum(axis=1)
    flagged = np.zeros(len(X), bool)
    flagged[np.argsort(-d, kind="stable")[:s]] = True
    return km.labels_, flagged, km.cluster_centers_


def _gmm_drop(X, k, s, seed):
    gm = GaussianMixture(k, covariance_type="full", random_state=seed).fit(X)
    flagged = np.zeros(len(X), bool)
    flagged[np.argsort(gm.score_samples(X), kind="stable")[:s]] = True
    return gm.predict(X), flagged, None


def _hdbscan(X, k, s, seed):
    labels = HDBSCAN(min_cluster_size=max(5, len(X) // 20)).fit_predict(X)
    return labels, labels == -1, None


def _ours(make, centres=True):
    def fit(X, k, s, seed):
        m = make(k, s, seed).fit(X)
        c = m.cluster_centers_ if centres else None
        return m.labels_, np.asarray(m.outlier_mask_, bool), c
    return fit


PY_METHODS = {
    "sklearn KMeans + drop s": (_kmeans_drop, True),
    "sklearn GaussianMixture + drop s": (_gmm_drop, False),
    "sklearn HDBSCAN": (_hdbscan, False),
    "RobustKMeans (default count)": (_ours(lambda k, s, r: RobustKMeans(k, random_state=r)), True),
    "RobustKMeans (n_outliers=s)":
        (_ours(lambda k, s, r: RobustKMeans(k, n_outliers=s, random_state=r)), True),
    "RobustGaussianMixture (default)":
        (_ours(lambda k, s, r: RobustGaussianMixture(k, random_state=r), False), False),
    "RobustGaussianMixture (n_outliers=s)":
        (_ours(lambda k, s, r: RobustGaussianMixture(k, n_outliers=s, random_state=r),
               False), False),
    "RobustGaussianMixture full (default)":
        (_ours(lambda k, s, r: RobustGaussianMixture(k, covariance_type="full",
                                                     random_state=r), False), False),
    "RobustGaussianMixture full (n_outliers=s)":
        (_ours(lambda k, s, r: RobustGaussianMixture(k, n_outliers=s, covariance_type="full",
                                                     random_state=r), False), False),
}


def run_python(data, runs, slow):
    rows = {}
    for name, (fit, _) in PY_METHODS.items():
        if name in data.get("skip", ()):
            print(f"  {name}: left out on this set")
            continue
        results, times = [], []
        for seed in range(runs):
            t = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels, flagged, centres = fit(data["X"], data["k"], data["s"], seed)
            times.append(time.process_time() - t)
            results.append(score(data, labels, flagged, centres))
            if times[0] > slow:
                break
        rows[name] = _median(results, times)
    return rows


def _median(results, times):
    row = {key: float(np.median([r[key] for r in results])) for key in results[0]}
    row["cpu"] = float(np.median(times))
    row["n"] = len(times)
    return row


# ---------------------------------------------------------------- R peers

R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
dir <- args[1]; k <- as.integer(args[2]); s <- as.integer(args[3]); seed <- as.integer(args[4])
models <- if (args[5] == "default") NULL else strsplit(args[5], ",")[[1]]
subset_n <- as.integer(args[6])
suppressPackageStartupMessages({library(trimcluster); library(mclust)})
X <- as.matrix(read.csv(file.path(dir, "X.csv"), header = FALSE))
noise <- scan(file.path(dir, "noise.txt"), quiet = TRUE) == 1
n <- nrow(X)
set.seed(seed)
t0 <- proc.time()
tk <- trimkmeans(X, k, trim = (s + 0.5) / n, runs = as.integer(args[7]))
t1 <- proc.time()
write(as.integer(tk$classification), file.path(dir, "tkm_labels.txt"), ncolumns = 1)
write.table(tk$means, file.path(dir, "tkm_means.txt"), row.names = FALSE, col.names = FALSE)
cat(sum((t1 - t0)[c(1, 2)]), tk$criterion, "\n", file = file.path(dir, "tkm_info.txt"))
set.seed(seed)
t0 <- proc.time()
init <- list(noise = noise)
if (subset_n > 0 && subset_n < n) init$subset <- sort(sample(which(!noise), subset_n))
mc <- Mclust(X, G = k, modelNames = models, initialization = init, verbose = FALSE)
t1 <- proc.time()
if (is.null(mc)) {
  cat(sum((t1 - t0)[c(1, 2)]), "NONE\n", file = file.path(dir, "mc_info.txt"))
} else {
  write(as.integer(mc$classification), file.path(dir, "mc_labels.txt"), ncolumns = 1)
  cat(sum((t1 - t0)[c(1, 2)]), mc$modelName, "\n", file = file.path(dir, "mc_info.txt"))
}
"""


def r_available():
    if shutil.which("Rscript") is None:
        return "Rscript not on PATH"
    check = subprocess.run(
        ["Rscript", "-e", "quit(status = !all(sapply(c('trimcluster', 'mclust'), "
                          "requireNamespace, quietly = TRUE)))"],
        capture_output=True, text=True)
    if check.returncode != 0:
        return "R packages trimcluster and mclust not both installed"
    return None


def noise_guess(X, fraction=0.1, neighbours=10):
    """mclust's initial noise: the points farthest from their 10th nearest neighbour."""
    nn = NearestNeighbors(n_neighbors=neighbours + 1).fit(X)
    d = nn.kneighbors(X)[0][:, -1]
    noise = np.zeros(len(X), bool)
    noise[np.argsort(-d, kind="stable")[: max(1, round(fraction * len(X)))]] = True
    return noise


def run_r(data, runs, timeout):
    X, k, s = data["X"], data["k"], data["s"]
    tk_res, tk_t, mc_res, mc_t, models = [], [], [], [], []
    for seed in range(runs):
        t = time.process_time()
        noise = noise_guess(X)
        t_noise = time.process_time() - t
        with tempfile.TemporaryDirectory() as tmp:
            np.savetxt(os.path.join(tmp, "X.csv"), X, delimiter=",", fmt="%.17g")
            np.savetxt(os.path.join(tmp, "noise.txt"), noise.astype(int), fmt="%d")
            script = os.path.join(tmp, "peers.R")
            with open(script, "w") as fh:
                fh.write(R_SCRIPT)
            try:
                proc = subprocess.run(["Rscript", script, tmp, str(k), str(s), str(seed),
                                       data.get("mclust_models", "default"),
                                       str(data.get("mclust_subset", 0)),
                                       str(data.get("tkm_runs", 100))],
                                      capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                print(f"  R peers: no result within {timeout} s")
                return {}
            if proc.returncode != 0:
                print("  R peers failed:", proc.stderr.strip().splitlines()[-1:])
                return {}
            info = open(os.path.join(tmp, "tkm_info.txt")).read().split()
            tk_t.append(float(info[0]))
            labels = np.loadtxt(os.path.join(tmp, "tkm_labels.txt"), dtype=int) - 1
            means = np.loadtxt(os.path.join(tmp, "tkm_means.txt"), ndmin=2)
            flagged = labels == k           # trimkmeans' class k + 1: trimmed
            tk_res.append(score(data, labels, flagged, means))
            info = open(os.path.join(tmp, "mc_info.txt")).read().split()
            if info[1] != "NONE":
                mc_t.append(float(info[0]) + t_noise)
                models.append(info[1])
                labels = np.loadtxt(os.path.join(tmp, "mc_labels.txt"), dtype=int)
                mc_res.append(score(data, labels, labels == 0, None))
    rows = {f"R trimkmeans (runs={data.get('tkm_runs', 100)})": _median(tk_res, tk_t)}
    if mc_res:
        rows["R Mclust + noise"] = _median(mc_res, mc_t)
        rows["R Mclust + noise"]["model"] = "/".join(sorted(set(models)))
    else:
        print("  Mclust returned no model")
    return rows


# ---------------------------------------------------------------- tables


def fmt(x, spec):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_table(name, data, rows):
    X = data["X"]
    N = len(X)
    print(f"\n### {name}: N = {N}, p = {X.shape[1]}, k = {data['k']}, s = {data['s']}")
    ref = next((r["cost"] for m, r in rows.items() if m.startswith("R trimkmeans")), None)
    synthetic = data["outliers"] is not None
    head = "| method | CPU s | ARI | flagged | "
    head += "precision | recall | " if synthetic else ""
    head += "l0 cost |" + (" cost / trimkmeans |" if ref else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for m, r in rows.items():
        if "model" in r:
            m = f"{m} ({r['model']})"
        line = (f"| {m} | {fmt(r['cpu'], '.3f')} | {fmt(r['ari'], '.3f')} | "
                f"{r['flagged']:.0f} ({100 * r['flagged'] / N:.1f}%) | ")
        if synthetic:
            line += f"{fmt(r['prec'], '.3f')} | {fmt(r['rec'], '.3f')} | "
        line += f"{fmt(r['cost'], '.6g')} |"
        if ref:
            line += f" {fmt(r['cost'] / ref if not math.isnan(r['cost']) else float('nan'), '.4f')} |"
        print(line)
    sys.stdout.flush()


def print_summary(results):
    """One compact table for the real sets, one for the synthetic, one of CPU times."""
    order = []
    for _, _, rows in results:
        order += [m for m in rows if m not in order]
    real = [(n, d, r) for n, d, r in results if not d["synthetic"]]
    synth = [(n, d, r) for n, d, r in results if d["synthetic"]]

    def table(title, sets, cell):
        if not sets:
            return
        print(f"\n{title}\n")
        print("| method | " + " | ".join(n for n, _, _ in sets) + " |")
        print("|---|" + "---:|" * len(sets))
        for m in order:
            cells = [cell(r[m], d) if m in r else "–" for _, d, r in sets]
            if all(c == "–" for c in cells):
                continue
            print(f"| {m} | " + " | ".join(cells) + " |")

    def ari_flagged(r, d):
        model = f" {r['model']}" if "model" in r else ""
        return f"{fmt(r['ari'], '.2f')} ({100 * r['flagged'] / d['N']:.1f}%){model}"

    def ari_pr(r, d):
        model = f" {r['model']}" if "model" in r else ""
        return f"{fmt(r['ari'], '.2f')} / {fmt(r['prec'], '.2f')} / {fmt(r['rec'], '.2f')}{model}"

    def cost(r, d):
        return fmt(r["cost"] / d["ref"] if d["ref"] and not math.isnan(r["cost"]) else
                   float("nan"), ".3f")

    table("ARI on the kept points (% flagged), s = 5% of N", real, ari_flagged)
    table("ARI on the true inliers / precision / recall of the flagged set", synth, ari_pr)
    table("CPU seconds", results, lambda r, d: fmt(r["cpu"], ".2f" if r["cpu"] < 100 else ".0f"))
    table("l0 cost of eq. (3) at the budget s, relative to trimkmeans'", results, cost)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="seeds per Python method")
    parser.add_argument("--r-runs", type=int, default=1, help="seeds per R peer")
    parser.add_argument("--slow", type=float, default=10.0,
                        help="a fit whose first run takes longer than this (CPU s) runs once")
    parser.add_argument("--r-timeout", type=float, default=1800.0)
    parser.add_argument("--usps-home", default="/work/shared/data")
    parser.add_argument("--usps-full", action="store_true",
                        help="also run the full-covariance mixtures on USPS (slow)")
    parser.add_argument("--sets", default=None, help="comma-separated subset of the set names")
    args = parser.parse_args()
    print("load average at start:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print("BLAS threads: OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s" % (
        os.environ.get("OMP_NUM_THREADS"), os.environ.get("OPENBLAS_NUM_THREADS")))
    missing = r_available()
    if missing:
        print(f"R peers skipped: {missing}")
    sets = {
        "iris": lambda: _real(load_iris, 3),
        "wine": lambda: _real(load_wine, 3),
        "breast cancer": lambda: _real(load_breast_cancer, 2),
        "digits": lambda: _real(load_digits, 10),
        "blobs 2-D + 10% noise": lambda: _blobs_noise(2, 0.10),
        "blobs 2-D + 60% noise": lambda: _blobs_noise(2, 0.60),
        "blobs 3-D + 10% noise": lambda: _blobs_noise(3, 0.10),
        "blobs 3-D + 60% noise": lambda: _blobs_noise(3, 0.60),
        "shapes + 5% far outliers": _shapes,
        "USPS": lambda: _usps(args.usps_home, args.usps_full),
    }
    if args.sets:
        wanted = [s.strip() for s in args.sets.split(",")]
        sets = {name: sets[name] for name in wanted}
    else:  # USPS only when asked for: its R peers take the better part of an hour
        del sets["USPS"]
    results = []
    for name, make in sets.items():
        data = make()
        if data is None:
            continue
        rows = {} if missing else run_r(data, args.r_runs, args.r_timeout)
        rows.update(run_python(data, args.runs, args.slow))
        print_table(name, data, rows)
        ref = next((r["cost"] for m, r in rows.items() if m.startswith("R trimkmeans")), None)
        results.append((name, dict(N=len(data["X"]), synthetic=data["outliers"] is not None,
                                   ref=ref), rows))
    print_summary(results)


if __name__ == "__main__":
    main()
