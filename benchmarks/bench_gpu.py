"""Hard robust K-means on GPU arrays (CuPy / PyTorch): time per iteration against lower bounds.

The data (N x p, float32 by default) is made on the device; the estimator is
fitted under ``sklearn.config_context(array_api_dispatch=True)`` from the same
initial centres at a fixed lambda flagging 1%, 10% and 40% of the points
(twice the matching quantile of the distances to the nearest initial centre).
Per iteration = (t(2k iterations) - t(k)) / k, the device synchronized after
each fit, so set-up costs (validation, centring a copy, the first assignment,
the transfers of the results) cancel.  The same iteration count is timed for
two references written directly in the namespace, on the same data:

* ``gemm``: the product X M^T alone, the floor under any Lloyd iteration;
* ``lloyd``: a plain K-means iteration (the product, the row norms of M,
  argmin, the cluster sums and counts as products with the one-hot labels).

With ``--cpu`` the same fits run on a NumPy copy on the host's cores (our
NumPy path, and scikit-learn's ``KMeans(algorithm="lloyd")``) for scale.

cuML is not used: it is not installable on the benchmark machine (no
package registry there).  Ratios are ours / reference.

    python benchmarks/bench_gpu.py [--backend cupy|torch] [--n 10000000] [--p 32] [--c 16]
"""

import argparse
import math
import os
import time
import warnings

import numpy as np
import sklearn
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning

from robustclust import RobustKMeans

SHARES = (0.01, 0.10, 0.40)


class CuPy:
    def __init__(self, dtype):
        import cupy

        self.xp, self.dtype = cupy, getattr(cupy, dtype)

    def data(self, n, p, c, seed):
        cp = self.xp
        rng = cp.random.default_rng(seed)
        means = cp.asarray(np.random.default_rng(seed).normal(scale=0.5, size=(c, p)))
        labels = rng.integers(0, c, size=n)
        X = (means[labels] + rng.standard_normal((n, p))).astype(self.dtype)
        n_out = n // 100
        X[:n_out] = rng.uniform(-30, 30, size=(n_out, p)).astype(self.dtype)
        return X

    def asarray(self, a):
        return self.xp.asarray(a, dtype=self.dtype)

    def host(self, a):
        return self.xp.asnumpy(a)

    def sync(self):
        self.xp.cuda.Device().synchronize()

    def memory(self):
        return self.xp.get_default_memory_pool().total_bytes()

    def onehot(self, labels, c):
        return (labels[:, None] == self.xp.arange(c)[None, :]).astype(self.dtype)

    def rowsum(self, A):
        return A.sum(axis=1)

    def ones(self, n):
        return self.xp.ones(n, dtype=self.dtype)

    def argmin(self, A):
        return A.argmin(axis=1)

    def name(self):
        props = self.xp.cuda.runtime.getDeviceProperties(0)
        return f"CuPy {self.xp.__version__} on {props['name'].decode()}"


class Torch(CuPy):
    def __init__(self, dtype):
        import torch

        self.xp, self.dtype = torch, getattr(torch, dtype)

    def data(self, n, p, c, seed):
        """CuPy's data (the same numbers as ``--backend cupy``), shared through DLPack."""
        return self.xp.from_dlpack(CuPy("float32" if self.dtype == self.xp.float32
                                        else "float64").data(n, p, c, seed))

    def asarray(self, a):
        return self.xp.as_tensor(a, dtype=self.dtype, device="cuda")

    def host(self, a):
        return a.detach().cpu().numpy()

    def sync(self):
        self.xp.cuda.synchronize()

    def memory(self):
        return self.xp.cuda.max_memory_allocated()

    def onehot(self, labels, c):
        return (labels[:, None] == self.xp.arange(c, device="cuda")[None, :]).to(self.dtype)

    def rowsum(self, A):
        return A.sum(dim=1)

    def ones(self, n):
        return self.xp.ones(n, dtype=self.dtype, device="cuda")

    def argmin(self, A):
        return A.argmin(dim=1)

    def name(self):
        return f"PyTorch {self.xp.__version__} on {self.xp.cuda.get_device_name(0)}"


def timed(b, fn):
    b.sync()
    start = time.perf_counter()
    out = fn()
    b.sync()
    return time.perf_counter() - start, out


def fit(b, X, c, lam, init, k):
    model = RobustKMeans(c, lam=lam, init=init, n_init=1, tol=0, max_iter=k)
    with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X)
    return model


def gemm_loop(b, X, M, k):
    out = None
    for _ in range(k):
        out = X @ M.T
    return out


def lloyd_loop(b, X, M, k):
    c = M.shape[0]
    for _ in range(k):
        D = b.rowsum(M * M)[None, :] - 2.0 * (X @ M.T)
        A = b.onehot(b.argmin(D), c)
        counts = b.ones(X.shape[0]) @ A  # a column sum as a product: fast on GPUs
        M = (A.T @ X) / counts[:, None]
    return M


def marginal(b, run, k, runs, iterations=None):
    """Median of (t(2k) - t(k)) / (iterations of the second - of the first) over
    ``runs`` pairs, and the median k-iteration time.  ``iterations(out)`` counts
    the iterations a run made (a fit may converge before its max_iter)."""
    iterations = iterations or (lambda out: None)
    per, whole = [], []
    timed(b, lambda: run(k))  # warm-up: kernels compiled, memory pool filled
    for _ in range(runs):
        t1, out = timed(b, lambda: run(k))
        t2, out2 = timed(b, lambda: run(2 * k))
        n1, n2 = iterations(out) or k, iterations(out2) or 2 * k
        per.append((t2 - t1) / (n2 - n1) if n2 > n1 else math.nan)
        whole.append(t1)
    return float(np.median(per)), float(np.median(whole)), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cupy", "torch"), default="cupy")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--p", type=int, default=32)
    parser.add_argument("--c", type=int, default=16)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", action="store_true", help="also time the host's NumPy fits")
    args = parser.parse_args()
    b = (CuPy if args.backend == "cupy" else Torch)(args.dtype)
    X = b.data(args.n, args.p, args.c, seed=0)
    b.sync()
    sample = b.host(X[: min(args.n, 100_000)]).astype(np.float64)
    init_host, _ = kmeans_plusplus(sample, args.c, random_state=0)
    M0 = b.asarray(init_host)
    # lambda from the distances to the centres of 10 Lloyd iterations (near where
    # the robust fit goes), as in bench_kmeans.py
    M10 = lloyd_loop(b, X, M0, 10)
    D0 = b.rowsum(M10 * M10)[None, :] - 2.0 * (X @ M10.T)
    nearest = b.host(D0.min(1)[0] if args.backend == "torch" else D0.min(axis=1))
    dist = np.sqrt(np.maximum(nearest.astype(np.float64) + b.host(b.rowsum(X * X)), 0.0))
    del D0

    print(f"{b.name()}; N={args.n}, p={args.p}, "
          f"C={args.c}, {args.dtype}; {args.iters} and {2 * args.iters} iterations, "
          f"medians of {args.runs} runs")
    k = args.iters
    t_gemm, _, _ = marginal(b, lambda n: gemm_loop(b, X, M0, n), k, args.runs)
    t_lloyd, f_lloyd, _ = marginal(b, lambda n: lloyd_loop(b, X, M0, n), k, args.runs)
    print(f"reference: X M^T {1e3 * t_gemm:.3f} ms/it; plain Lloyd iteration "
          f"{1e3 * t_lloyd:.2f} ms/it ({f_lloyd:.3f} s for {k})")
    print(f"{'flagged':>8s} {'RKM ms/it':>10s} {'/ X M^T':>8s} {'/ Lloyd':>8s} "
          f"{'RKM fit s':>10s} {'peak GiB':>9s}")
    lams = [2.0 * float(np.quantile(dist, 1.0 - share)) for share in SHARES]
    for lam in lams:
        t_it, t_fit, model = marginal(b, lambda n, lam=lam: fit(b, X, args.c, lam, M0, n), k,
                                      args.runs, iterations=lambda m: m.n_iter_)
        print(f"{100 * model.n_outliers_ / args.n:7.1f}% {1e3 * t_it:10.2f} "
              f"{t_it / t_gemm:8.1f} {t_it / t_lloyd:8.2f} {t_fit:10.3f} "
              f"{b.memory() / 2**30:9.2f}", flush=True)
    if args.cpu:
        Xh, init = b.host(X), init_host.astype(np.dtype(args.dtype))
        del X
        cpu_fits(Xh, init, lams, args.c, k, args.runs)


def cpu_fits(X, init, shares_lam, c, k, runs):
    """Per-iteration time of our NumPy fit and scikit-learn's Lloyd on the host."""
    from sklearn.cluster import KMeans

    def sk(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return KMeans(c, init=init, n_init=1, algorithm="lloyd", tol=0, max_iter=n).fit(X)

    def ours(lam):
        def run(n):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                return RobustKMeans(c, lam=lam, init=init, n_init=1, tol=0, max_iter=n).fit(X)
        return run

    host = Host()
    t_sk, _, _ = marginal(host, sk, k, runs, iterations=lambda m: m.n_iter_)
    print(f"host ({os.cpu_count()} cores): scikit-learn Lloyd {1e3 * t_sk:.1f} ms/it")
    for lam in shares_lam:
        t, _, m = marginal(host, ours(lam), k, runs, iterations=lambda m: m.n_iter_)
        print(f"host: RKM {100 * m.n_outliers_ / X.shape[0]:.1f}% flagged {1e3 * t:.1f} ms/it "
              f"({t / t_sk:.2f} x Lloyd)", flush=True)


class Host:
    def sync(self):
        pass


if __name__ == "__main__":
    main()
