"""Time per EM iteration: RobustGaussianMixture vs scikit-learn's GaussianMixture.

Same data, same process, same initial parameters (means, weights, covariances);
tied_spherical (ours: one common sigma^2; scikit-learn's spherical: one per
component), tied vs tied, and the per-component types against scikit-learn's
same types.  Per-iteration cost is (t(2k iterations) - t(k)) / k, median over
repeats; fixed lam.

    python benchmarks/bench_mixture.py [--n 200000] [--p 32] [--c 16] [--repeats 5]
"""

import argparse

import numpy as np
from scipy.stats import chi2
from sklearn.cluster import kmeans_plusplus
from sklearn.mixture import GaussianMixture

from _timing import per_iteration

from robustclust import RobustGaussianMixture


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--p", type=int, default=32)
    parser.add_argument("--c", type=int, default=16)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    means = rng.normal(scale=0.5, size=(args.c, args.p))
    X = means[rng.integers(args.c, size=args.n)] + rng.normal(size=(args.n, args.p))
    X[: args.n // 100] = rng.uniform(-10, 10, size=(args.n // 100, args.p))
    M0, _ = kmeans_plusplus(X, args.c, random_state=0)
    lam = float(np.sqrt(chi2.isf(1e-3, args.p)))  # the default: 0.1% of Gaussian inliers
    print(f"N={args.n}, p={args.p}, C={args.c}, lam={lam:.3f}; per-iteration cost = "
          f"(t({2 * args.iters} it) - t({args.iters} it)) / {args.iters}, median of {args.repeats}")
    print(f"{'ours':14s} {'sklearn':9s} {'ours ms/it':>10s} {'sklearn ms/it':>13s} {'ratio':>6s}"
          f" {'outliers':>9s}")
    for ours_type, ref_type in [("tied_spherical", "spherical"), ("tied", "tied"),
                                ("spherical", "spherical"), ("diag", "diag"), ("full", "full")]:
        # per-component covariances: a floor (ours) and a ridge (scikit-learn's), or one
        # of the 16 components can collapse in scikit-learn's full fit
        reg = 0.0 if ours_type.startswith("tied") else 1e-6
        est = RobustGaussianMixture(args.c, covariance_type=ours_type, reg_covar=reg)
        problem = est.build_problem(X)   # the solver sees X minus problem.offset
        solver = problem.solver
        _, w, cov = solver.model.initial_parameters(solver, M0 - problem.offset)
        w = np.asarray(w)
        M, cov = M0, cov.value
        ours_precisions = np.linalg.inv(cov) if ref_type in ("tied", "full") else 1.0 / cov
        precisions = ours_precisions
        if ours_type == "tied_spherical":  # scikit-learn's: one (equal) per component
            precisions = np.full(args.c, 1.0 / cov)

        def ours(k):
            return RobustGaussianMixture(args.c, lam=lam, covariance_type=ours_type, init={"means": M0, "weights": w, "precisions": ours_precisions},
                                         n_init=1, tol=0, max_iter=k, reg_covar=reg)

        def ref(k):
            return GaussianMixture(args.c, covariance_type=ref_type, weights_init=w,
                                   means_init=M, precisions_init=precisions, tol=0,
                                   max_iter=k, reg_covar=reg)

        it_ours, _ = per_iteration(ours, X, args.iters, args.repeats)
        it_ref, _ = per_iteration(ref, X, args.iters, args.repeats)
        flagged = ours(args.iters).fit(X).n_outliers_
        print(f"{ours_type:14s} {ref_type:9s} {1e3 * it_ours:10.1f} {1e3 * it_ref:13.1f} "
              f"{it_ours / it_ref:6.2f} {flagged:9d}")


if __name__ == "__main__":
    main()
