"""Hard robust K-means (fixed lambda) vs scikit-learn's Lloyd K-means, per iteration and fit.

Both start from the same centres on the same data in the same process, run a
fixed number of iterations (tol=0), and are timed alternately.  lambda is set
so that 1%, 10% and 40% of the points are flagged (twice the matching
quantile of the distances to the nearest of the K-means centres); the cost of
an iteration must not depend on that share.  Per-iteration cost is
(t(2k iterations) - t(k)) / k, so fixed set-up costs cancel; the whole fit is
the k-iteration fit (validation, centring a copy of X, the first assignment
included).  Wall-clock and process CPU time are both reported (the CPU time
is not inflated by other jobs on the machine); ratios are ours / scikit-learn.

    python benchmarks/bench_kmeans.py [--n 200000] [--p 32] [--c 16] [--runs 7] [--iters 10]
        [--dtype both|float64|float32] [--output FILE.json]
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning

from _results import Results, add_output_option

from robustclust import RobustKMeans

SHARES = (0.01, 0.10, 0.40)


def timed_fit(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wall, cpu = time.perf_counter(), time.process_time()
        model.fit(X)
        return time.perf_counter() - wall, time.process_time() - cpu, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--p", type=int, default=32)
    parser.add_argument("--c", type=int, default=16)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--dtype", choices=("float64", "float32", "both"), default="both")
    add_output_option(parser)
    args = parser.parse_args()
    results = Results(
        "bench_kmeans", __doc__.splitlines()[0],
        f"Hard robust K-means at a fixed lambda against KMeans(algorithm='lloyd'), the same "
        f"data and initial centres, N = {args.n}, p = {args.p}, C = {args.c}, 1% uniform "
        f"outliers; per iteration = (t({2 * args.iters} it) - t({args.iters} it)) / "
        f"{args.iters}, the whole fit is the {args.iters}-iteration fit; medians of "
        f"{args.runs} alternate runs. Ratios are ours / scikit-learn's (below 1: ours is "
        f"faster), each the median of the runs' own ratios, which need not be the ratio of "
        f"the two medians beside it.", args)
    table = results.table("Time per iteration and per fit", [
        ("dtype", "dtype"), ("flagged", "flagged", ".1%"),
        ("rkm_ms_it", "RKM ms/it", ".2f"), ("km_ms_it", "KMeans ms/it", ".2f"),
        ("ratio_it", "ratio per iteration", ".2f"),
        ("cpu_ratio_it", "CPU ratio per iteration", ".2f"),
        ("rkm_fit_s", "RKM fit s", ".3f"), ("km_fit_s", "KMeans fit s", ".3f"),
        ("ratio_fit", "ratio fit", ".2f"), ("cpu_ratio_fit", "CPU ratio fit", ".2f")])

    rng = np.random.default_rng(0)
    means = rng.normal(scale=0.5, size=(args.c, args.p))  # overlapping: no early convergence
    X64 = means[rng.integers(args.c, size=args.n)] + rng.normal(size=(args.n, args.p))
    n_out = args.n // 100
    X64[:n_out] = rng.uniform(-30, 30, size=(n_out, args.p))
    init64, _ = kmeans_plusplus(X64, args.c, random_state=0)
    ref_fit = KMeans(args.c, init=init64, n_init=1, max_iter=args.iters).fit(X64)
    dist = np.sqrt(ref_fit.transform(X64).min(axis=1) ** 2)

    print(f"N={args.n}, p={args.p}, C={args.c}; {args.iters} and {2 * args.iters} iterations, "
          f"medians of {args.runs} runs; load average at start "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'dtype':8s} {'flagged':>8s} {'RKM ms/it':>10s} {'KM ms/it':>9s} {'ratio/it':>9s} "
          f"{'CPU ratio/it':>12s} {'RKM fit s':>9s} {'KM fit s':>8s} {'ratio fit':>9s} "
          f"{'CPU ratio fit':>13s}")
    dtypes = (np.float64, np.float32) if args.dtype == "both" else (np.dtype(args.dtype).type,)
    for dtype in dtypes:
        X = X64.astype(dtype)
        init = init64.astype(dtype)
        for share in SHARES:
            lam = 2.0 * float(np.quantile(dist, 1.0 - share))

            def ours(k):
                return RobustKMeans(args.c, lam=lam, init=init, n_init=1, tol=0, max_iter=k)

            def ref(k):
                return KMeans(args.c, init=init, n_init=1, algorithm="lloyd", tol=0, max_iter=k)

            timed_fit(ours(2), X)  # compile / warm up
            samples = {name: [] for name in ("o_it", "r_it", "o_cit", "r_cit", "o_fit", "r_fit",
                                             "o_cfit", "r_cfit")}
            flagged = 0
            for _ in range(args.runs):
                for who, make in (("o", ours), ("r", ref)):
                    w1, c1, m = timed_fit(make(args.iters), X)
                    w2, c2, _ = timed_fit(make(2 * args.iters), X)
                    assert m.n_iter_ == args.iters, (who, m.n_iter_)
                    samples[who + "_it"].append((w2 - w1) / args.iters)
                    samples[who + "_cit"].append((c2 - c1) / args.iters)
                    samples[who + "_fit"].append(w1)
                    samples[who + "_cfit"].append(c1)
                    if who == "o":
                        flagged = m.n_outliers_
            med = {k: float(np.median(v)) for k, v in samples.items()}
            ratio = [float(np.median(np.array(samples["o" + s]) / np.array(samples["r" + s])))
                     for s in ("_it", "_cit", "_fit", "_cfit")]
            print(f"{np.dtype(dtype).name:8s} {100 * flagged / args.n:7.1f}% "
                  f"{1e3 * med['o_it']:10.2f} {1e3 * med['r_it']:9.2f} {ratio[0]:9.2f} "
                  f"{ratio[1]:12.2f} {med['o_fit']:9.3f} {med['r_fit']:8.3f} {ratio[2]:9.2f} "
                  f"{ratio[3]:13.2f}", flush=True)
            table.add(dtype=np.dtype(dtype).name, flagged=flagged / args.n,
                      rkm_ms_it=1e3 * med["o_it"], km_ms_it=1e3 * med["r_it"],
                      ratio_it=ratio[0], cpu_ratio_it=ratio[1], rkm_fit_s=med["o_fit"],
                      km_fit_s=med["r_fit"], ratio_fit=ratio[2], cpu_ratio_fit=ratio[3])
    results.write(args.output)


if __name__ == "__main__":
    main()
