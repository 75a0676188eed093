"""Robust mixture on planted sets: outlier precision, recall, inlier ARI and exact counts.

Three kinds of planted data, generated here (seeds 0-2):

* ``shapes``: four 2-D clusters of different shapes (140 points each) plus
  28 (5%) uniform points at least 14 from every centre;
* ``five12``: five 3-D clusters (80 points each) plus 12% uniform points at
  least 8 from every centre;
* ``aniso10`` / ``aniso40``: four anisotropic 5-D clusters of 60, 150, 300
  and 500 points in 10% and 40% uniform noise over their bounding box.

Each set is fitted by ``RobustGaussianMixture(covariance_type="full")`` at
its defaults, with the planted count given and with the default count.
Prints, per kind and count, the worst of the three seeds and the median CPU
seconds of a fit.

    python benchmarks/bench_mixture_planted.py
"""

import time
import warnings

import numpy as np
from sklearn.metrics import adjusted_rand_score

from robustclust import RobustGaussianMixture

SEEDS = range(3)


def far_uniform(rng, n, centres, low, high, gap):
    """n uniform points in [low, high]^p at least ``gap`` from every centre."""
    points = []
    while len(points) < n:
        z = rng.uniform(low, high, centres.shape[1])
        if np.min(np.linalg.norm(centres - z, axis=1)) >= gap:
            points.append(z)
    return np.array(points)


def shapes(seed):
    rng = np.random.RandomState(seed)
    covariances = [np.array([[5.0, 0.0], [0.0, 0.4]]), np.array([[0.4, 0.0], [0.0, 5.0]]),
                   np.array([[1.0, -0.8], [-0.8, 1.0]]), 0.3 * np.eye(2)]
    centres = np.array([[0.0, 0.0], [10.0, 10.0], [-10.0, 10.0], [10.0, -8.0]])
    X = np.vstack([rng.multivariate_normal(c, S, 140) for c, S in zip(centres, covariances)])
    noise = far_uniform(rng, 28, centres, -30, 30, 14)
    return np.vstack([X, noise]), np.r_[np.repeat(np.arange(4), 140), -np.ones(28, int)], 4


def five(seed, fraction=0.12):
    rng = np.random.RandomState(seed)

    def separated():
        c = rng.uniform(-10, 10, (5, 3))
        gaps = [np.linalg.norm(c[i] - c[j]) for i in range(5) for j in range(i)]
        return c if min(gaps) >= 5 else None

    centres = None
    while centres is None:
        centres = separated()
    X = np.vstack([c + rng.randn(80, 3) for c in centres])
    n = int(fraction * len(X) / (1 - fraction))
    noise = far_uniform(rng, n, centres, -40, 40, 8)
    return np.vstack([X, noise]), np.r_[np.repeat(np.arange(5), 80), -np.ones(n, int)], 5


def anisotropic(seed, fraction):
    rng = np.random.RandomState(seed)
    p, sizes = 5, [60, 150, 300, 500]
    centres = rng.uniform(-15, 15, (len(sizes), p))
    parts = []
    for c, m in zip(centres, sizes):
        A = rng.randn(p, p)
        parts.append(rng.multivariate_normal(c, A @ A.T / p + 0.1 * np.eye(p), m))
    X = np.vstack(parts)
    n = int(fraction * len(X) / (1 - fraction))
    noise = rng.uniform(X.min(axis=0) - 5, X.max(axis=0) + 5, (n, p))
    y = np.r_[np.repeat(np.arange(len(sizes)), sizes), -np.ones(n, int)]
    return np.vstack([X, noise]), y, len(sizes)


KINDS = {"shapes": shapes, "five12": five, "aniso10": lambda s: anisotropic(s, 0.1),
         "aniso40": lambda s: anisotropic(s, 0.4)}


def scores(make, seed, count_given):
    X, y, k = make(seed)
    planted = y < 0
    s = int(planted.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        model = RobustGaussianMixture(k, covariance_type="full",
                                      n_outliers=s if count_given else None,
                                      random_state=0).fit(X)
        cpu = time.process_time() - start
    flagged = model.outlier_mask_
    hits = int((flagged & planted).sum())
    return (hits / max(int(flagged.sum()), 1), hits / s,
            adjusted_rand_score(y[~planted], model.labels_[~planted]), model.n_outliers_ == s,
            cpu)


def main():
    print("kind     count    precision  recall  inlier ARI  exact  cpu s (median)")
    for name, make in KINDS.items():
        for count_given in (True, False):
            r = np.array([scores(make, seed, count_given) for seed in SEEDS], dtype=float)
            print(f"{name:8s} {'given' if count_given else 'default':8s} "
                  f"{r[:, 0].min():9.2f}  {r[:, 1].min():6.2f}  {r[:, 2].min():10.3f}  "
                  f"{int(r[:, 3].sum())}/{len(SEEDS)}    {np.median(r[:, 4]):.2f}", flush=True)


if __name__ == "__main__":
    main()
