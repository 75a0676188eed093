"""Time per iteration: RobustKMeans (hard, fixed lambda) vs scikit-learn's Lloyd K-means.

Both start from the same centres on the same data in the same process.
Prints the median over repeats of the time per iteration and their ratio.

    python benchmarks/bench_kmeans.py [--n 200000] [--p 32] [--c 16] [--repeats 5]
"""

import argparse

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus

from _timing import per_iteration

from robustclust import RobustKMeans


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--p", type=int, default=32)
    parser.add_argument("--c", type=int, default=16)
    parser.add_argument("--iters", type=int, default=10, help="fixed iteration count")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    means = rng.normal(scale=0.3, size=(args.c, args.p))  # overlapping: many Lloyd iterations
    X64 = means[rng.integers(args.c, size=args.n)] + rng.normal(size=(args.n, args.p))
    n_out = args.n // 100
    X64[:n_out] = rng.uniform(-30, 30, size=(n_out, args.p))
    init64, _ = kmeans_plusplus(X64, args.c, random_state=0)
    # flags the planted 1%: inlier residual norms are about sqrt(p), the
    # threshold lambda/2 is three times that
    lam = 2 * 3 * np.sqrt(args.p)

    print(f"N={args.n}, p={args.p}, C={args.c}; per-iteration cost = (t({2 * args.iters} it) "
          f"- t({args.iters} it)) / {args.iters}, median of {args.repeats}")
    print(f"{'dtype':8s} {'RKM ms/it':>10s} {'KMeans ms/it':>13s} {'ratio':>6s}   "
          f"{'RKM fit s':>9s} {'KMeans fit s':>12s} {'ratio':>6s} {'outliers':>9s}")
    for dtype in (np.float64, np.float32):
        X = X64.astype(dtype)
        init = init64.astype(dtype)

        # tol=0 and a fixed max_iter: both run exactly the asked iterations
        def ours(n_iter):
            return RobustKMeans(args.c, lam=lam, init=init, n_init=1, tol=0, max_iter=n_iter)

        def ref(n_iter):
            return KMeans(args.c, init=init, n_init=1, algorithm="lloyd", tol=0,
                          max_iter=n_iter)

        ours(1).fit(X)  # compile / warm up
        it_ours, fit_ours = per_iteration(ours, X, args.iters, args.repeats)
        it_ref, fit_ref = per_iteration(ref, X, args.iters, args.repeats)
        flagged = ours(args.iters).fit(X).n_outliers_
        print(f"{np.dtype(dtype).name:8s} {1e3 * it_ours:10.2f} {1e3 * it_ref:13.2f} "
              f"{it_ours / it_ref:6.2f}   {fit_ours:9.3f} {fit_ref:12.3f} "
              f"{fit_ours / fit_ref:6.2f} {flagged:9d}")


if __name__ == "__main__":
    main()
