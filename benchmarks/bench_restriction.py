"""The eigenvalue-ratio restriction of per-component mixtures: which default.

tclust bounds the ratio of the largest to the smallest eigenvalue over all
components' covariances (``restr.fact``, default 12); mclust has no bound and
avoids degenerate fits by its choice among covariance models.  This script
fits ``RobustGaussianMixture`` with ``covariance_type`` "spherical", "diag"
and "full" at each bound of ``--ratios`` (``none`` = no bound, the floor
only), everything else at its default, on

* the planted sets of ``bench_mixture_planted`` (shapes, five12, aniso10,
  aniso40; seeds 0-2), with the planted count given and with the default
  count: the worst over the seeds of outlier precision, recall and the
  inlier ARI;
* the real sets of the tests, standardised (iris k=3, wine k=3, breast
  cancer k=2, digits k=10 with its constant pixels dropped), with
  ``n_outliers`` = 5% of N and with the default count: the ARI against the
  classes on the points kept, and the share flagged.

    python benchmarks/bench_restriction.py [--ratios none,12,50] [--quick]

``--quick`` leaves digits out.
"""

import argparse
import os
import time
import warnings

from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from bench_mixture_planted import KINDS, SEEDS
from robustclust import RobustGaussianMixture

TYPES = ("spherical", "diag", "full")


def _fit(X, k, covariance_type, ratio, count):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustGaussianMixture(k, covariance_type=covariance_type, eigenvalue_ratio=ratio,
                                     n_outliers=count, random_state=0).fit(X)


def planted(covariance_type, ratio, make, count_given):
    worst = [1.0, 1.0, 1.0]
    for seed in SEEDS:
        X, y, k = make(seed)
        truth = y < 0
        s = int(truth.sum())
        m = _fit(X, k, covariance_type, ratio, s if count_given else None)
        flagged = m.outlier_mask_
        hits = int((flagged & truth).sum())
        got = (hits / max(int(flagged.sum()), 1), hits / s,
               adjusted_rand_score(y[~truth], m.labels_[~truth]))
        worst = [min(a, b) for a, b in zip(worst, got)]
    return worst


def real_sets(quick):
    sets = {"iris": (load_iris, 3), "wine": (load_wine, 3),
            "breast cancer": (load_breast_cancer, 2)}
    if not quick:
        sets["digits"] = (load_digits, 10)
    out = {}
    for name, (load, k) in sets.items():
        data = load()
        X = data.data[:, data.data.std(axis=0) > 0]
        out[name] = (StandardScaler().fit_transform(X), data.target, k)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratios", default="none,12,50")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    ratios = [None if r.strip().lower() == "none" else float(r) for r in args.ratios.split(",")]
    print("load average at start:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    start = time.process_time()
    print("\nPlanted sets: worst of 3 seeds, precision / recall / inlier ARI\n")
    print(f"{'type':10s} {'ratio':>6s} " + " ".join(f"{k + ' ' + c:>24s}" for k in KINDS
                                                    for c in ("given", "default")))
    for covariance_type in TYPES:
        for ratio in ratios:
            cells = []
            for make in KINDS.values():
                for count_given in (True, False):
                    p, r, a = planted(covariance_type, ratio, make, count_given)
                    cells.append(f"{p:.2f}/{r:.2f}/{a:.3f}")
            print(f"{covariance_type:10s} {str(ratio):>6s} " + " ".join(f"{c:>24s}" for c in cells),
                  flush=True)
    sets = real_sets(args.quick)
    print("\nReal sets (standardised): ARI on the kept points (% flagged), "
          "n_outliers = 5% of N / default count\n")
    print(f"{'type':10s} {'ratio':>6s} " + " ".join(f"{n:>26s}" for n in sets))
    for covariance_type in TYPES:
        for ratio in ratios:
            cells = []
            for X, y, k in sets.values():
                parts = []
                for count in (int(round(0.05 * len(X))), None):
                    m = _fit(X, k, covariance_type, ratio, count)
                    kept = ~m.outlier_mask_
                    parts.append(f"{adjusted_rand_score(y[kept], m.labels_[kept]):.2f}"
                                 f" ({100 * m.n_outliers_ / len(X):.1f}%)")
                cells.append(" / ".join(parts))
            print(f"{covariance_type:10s} {str(ratio):>6s} " + " ".join(f"{c:>26s}" for c in cells),
                  flush=True)
    print(f"\nCPU seconds in all: {time.process_time() - start:.0f}; load average at end: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
