"""RobustKMeans and RobustGaussianMixture on Dask: block throughput, per-pass
overhead, lazily generated fits, the k-means|| start.

    python benchmarks/bench_dask.py [--rows N] [--skip-fit | --only-fit] [--mixture] [--start]

1. Rows per second of one worker's block pass (:func:`block_pass`, two
   products X M^T per pass) against one in-memory iteration of the same
   solver on the same rows (the numba pass for dense NumPy).
2. Per-pass overhead on a ``LocalCluster`` (2 workers x 1 thread, threads):
   seconds per iteration at a fixed data size for several block counts,
   fitted as a + b * n_blocks by least squares.
3. A fit of ``--rows`` x 16 float32 rows generated lazily on the workers
   (never held by the client), 1% of them outliers, flagged by count:
   wall time, passes over the data, peak resident memory of each process.
4. ``--mixture``: rows per second of one worker's EM iteration (the two
   block passes of :class:`DaskMixtureSolver`) against one in-memory EM
   iteration, and the lazy fit of 3. with ``RobustGaussianMixture``
   (full covariance).
5. ``--start``: the lazy K-means fit of 3. from ``init="k-means||"``
   against the sampled start: wall time, passes, the start's share.
"""

import argparse
import math
import os
import resource
import time

import numpy as np

P, C = 16, 16


def _blobs_block(block_id, rows, seed, dtype=np.float32, p=P):
    """Rows of block ``block_id``: C Gaussian clusters, 1% uniform outliers."""
    rng = np.random.default_rng([seed, block_id])
    means = np.random.default_rng(seed).normal(scale=8.0, size=(C, p))
    X = means[rng.integers(C, size=rows)] + rng.normal(size=(rows, p))
    n_out = rows // 100
    X[:n_out] = rng.uniform(-60, 60, size=(n_out, p))
    return X.astype(dtype)


def lazy_blobs(n_rows, rows_per_block, seed=0):
    import dask
    import dask.array as da

    blocks = []
    for b, start in enumerate(range(0, n_rows, rows_per_block)):
        rows = min(rows_per_block, n_rows - start)
        blocks.append(da.from_delayed(dask.delayed(_blobs_block)(b, rows, seed),
                                      shape=(rows, P), dtype=np.float32))
    return da.concatenate(blocks)


def block_throughput(rows=200_000, repeats=3, p=P):
    from robustclust import RobustKMeans
    from robustclust._core import dask_backend
    from robustclust._core.models import KMeansModel
    from robustclust._core.penalties import make_penalty

    X = _blobs_block(0, rows, 0, p=p)
    X = X - X.mean(0)
    init = X[:: rows // C][:C].copy()
    model = KMeansModel(C)
    flagged = dask_backend.Flagged.empty(C, True)
    spec = {"model": model, "penalty": make_penalty("group"), "log_penalty": None,
            "prev": (init, flagged, math.inf, False), "step": (init, 10.0, False),
            "stats": (10.0, False)}
    w = np.ones(rows)
    best = cpu_best = math.inf
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        dask_backend.block_pass(X, w, 0, spec)
        best = min(best, time.perf_counter() - t)
        cpu_best = min(cpu_best, time.process_time() - c)
    est = RobustKMeans(C, lam=10.0, init=init, n_init=1, tol=0.0, max_iter=10)
    t, c = time.perf_counter(), time.process_time()
    est.fit(X)
    mem, cpu_mem = (time.perf_counter() - t) / est.n_iter_, (time.process_time() - c) / est.n_iter_
    print(f"p = {p}: block pass {rows / best:,.0f} rows/s per worker "
          f"({rows / cpu_best:,.0f} per CPU-second); in-memory iteration: "
          f"{rows / mem:,.0f} rows/s ({rows / cpu_mem:,.0f} per CPU-second; fit incl. start, "
          f"{est.n_iter_} iterations)")


def pass_overhead(rows=64_000, blocks=(2, 8, 32, 64), iters=8):
    import dask.array as da
    import distributed

    from robustclust import RobustKMeans

    X = _blobs_block(0, rows, 1)
    init = X[:: rows // C][:C].copy()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        times = []
        for nb in blocks:
            Xd = da.from_array(X, chunks=(math.ceil(rows / nb), -1))
            RobustKMeans(C, lam=10.0, init=init, n_init=1, tol=0.0, max_iter=2).fit(Xd)
            t = time.perf_counter()
            m = RobustKMeans(C, lam=10.0, init=init, n_init=1, tol=0.0, max_iter=iters).fit(Xd)
            dt = (time.perf_counter() - t) / (m._dask_solver_passes)
            times.append(dt)
            print(f"  {nb:3d} blocks: {dt * 1e3:7.1f} ms per pass")
        A = np.vstack([np.ones(len(blocks)), blocks]).T
        (a, b), *_ = np.linalg.lstsq(A, np.array(times), rcond=None)
        print(f"per pass: a = {a * 1e3:.1f} ms + b = {b * 1e3:.2f} ms per block "
              f"({rows} x {P} float32 rows, C = {C}, 2 workers x 1 thread)")


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def mixture_block_throughput(rows=200_000, repeats=3, lam=3.0):
    from robustclust import RobustGaussianMixture
    from robustclust._core import dask_backend
    from robustclust._core.geometry import LinearGeometry
    from robustclust._core.models import MixtureModel
    from robustclust._core.penalties import make_penalty
    from robustclust._core.solver import Solver

    X = _blobs_block(0, rows, 0).astype(np.float64)
    X = X - X.mean(0)
    init = X[:: rows // C][:C].copy()
    model = MixtureModel(C, "full", 1e-6 * float(X.var(0).mean()), P)
    penalty = make_penalty("group")
    _, weights, cov = model.initial_parameters(Solver(LinearGeometry(X), model, penalty), init)
    prev = (init, weights, cov, dask_backend.MixtureFlagged.empty(C, False), lam, False)
    specs = [{"model": model, "penalty": penalty, "log_penalty": None, "prev": prev,
              "means": True},
             {"model": model, "penalty": penalty, "log_penalty": None, "prev": prev,
              "step": (init, lam, False)}]
    w = np.ones(rows)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        for spec in specs:
            dask_backend.mixture_block_pass(X, w, 0, spec)
        best = min(best, time.perf_counter() - t)
    times = []
    for iters in (5, 15):
        est = RobustGaussianMixture(C, covariance_type="full", lam=lam, init=init, n_init=1,
                                    tol=0.0, max_iter=iters)
        t = time.perf_counter()
        est.fit(X)
        times.append((time.perf_counter() - t, est.n_iter_))
    mem = (times[1][0] - times[0][0]) / (times[1][1] - times[0][1])
    print(f"mixture (full): block EM iteration (2 passes): {rows / best:,.0f} rows/s per "
          f"worker; in-memory EM iteration: {rows / mem:,.0f} rows/s")


def lazy_fit(n_rows, rows_per_block=500_000, mixture=False, init="robust"):
    import distributed

    from robustclust import RobustGaussianMixture, RobustKMeans

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        X = lazy_blobs(n_rows, rows_per_block)
        load = os.getloadavg()[0]
        cpu0 = client.run(_cpu_seconds)
        t, c = time.perf_counter(), _cpu_seconds()
        if mixture:
            m = RobustGaussianMixture(C, covariance_type="full", n_outliers=n_rows // 100,
                                      init=init, random_state=0).fit(X)
        else:
            m = RobustKMeans(C, n_outliers=n_rows // 100, init=init, random_state=0).fit(X)
        wall, cpu = time.perf_counter() - t, _cpu_seconds() - c
        cpu1 = client.run(_cpu_seconds)
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        truth = np.zeros(n_rows, dtype=bool)  # the first 1% of every block
        for start in range(0, n_rows, rows_per_block):
            truth[start:start + min(rows_per_block, n_rows - start) // 100] = True
        found = np.zeros(n_rows, dtype=bool)
        found[m.outlier_indices_] = True
        name = type(m).__name__
        print(f"lazy {name} (init={init!r}) {n_rows:,} x {P} float32, {X.numblocks[0]} "
              f"blocks, load average {load:.2f} at start: {wall:.1f} s wall, "
              f"{m._dask_solver_passes} passes, {m.n_iter_} iterations, {m.n_outliers_} "
              f"flagged ({np.sum(found & truth)} of {truth.sum()} planted), "
              f"lambda {m.lambda_:.4g}")
        print(f"  CPU seconds: client {cpu:.1f}; workers "
              + ", ".join(f"{cpu1[k] - cpu0[k]:.1f}" for k in cpu1))
        print(f"  peak RSS: client {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
              " MiB; workers " + ", ".join(f"{v / 1024:.0f} MiB" for v in peaks.values()))


def start_times(n_rows, rows_per_block=500_000):
    """The start alone: k-means|| on all the rows against the sampled start."""
    import distributed
    from sklearn.utils import check_random_state

    from robustclust import RobustKMeans
    from robustclust._estimators import dask_fit

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        X = lazy_blobs(n_rows, rows_per_block)
        w = dask_fit._weights(None, X)
        Xi, w, offset, scale = dask_fit.internal_units(X, w)
        for init in ("robust", "k-means||"):
            est = RobustKMeans(C, n_outliers=n_rows // 100, init=init, random_state=0)
            t = time.perf_counter()
            dask_fit._initial_centres(est, X, Xi, w, n_rows // 100, check_random_state(0),
                                      offset, scale)
            print(f"  start init={init!r}: {time.perf_counter() - t:.1f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--skip-fit", action="store_true")
    parser.add_argument("--only-fit", action="store_true")
    parser.add_argument("--mixture", action="store_true")
    parser.add_argument("--start", action="store_true")
    args = parser.parse_args()
    if not args.only_fit:
        block_throughput()
        block_throughput(p=32)
        pass_overhead()
        if args.mixture:
            mixture_block_throughput()
    if not args.skip_fit:
        lazy_fit(args.rows)
        if args.mixture:
            lazy_fit(args.rows, mixture=True)
    if args.start:
        start_times(args.rows)
        lazy_fit(args.rows, init="k-means||")


if __name__ == "__main__":
    main()
