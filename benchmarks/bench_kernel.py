"""Kernel robust K-means: time per iteration is O(N^2 C), not O(N^3 C).

For N = 1000 ... 8000 (RBF kernel, C = 8, hard KRKM at a fixed lambda) the
marginal time of one iteration of the solver is compared with one product
K @ B (N x N by N x C), and with the time at N / 2: quadratic growth is a 4x
ratio, cubic 8x.  The direct transcription of Algorithm 3 (the N x N
matrices A and Delta, O(N^3 C)) is timed at N = 500 and 1000 for contrast.

Run:  python benchmarks/bench_kernel.py [--repeats 5]
"""

import argparse
import time

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

from robustclust._core.geometry import KernelGeometry
from robustclust._core.models import KMeansModel
from robustclust._core.penalties import make_penalty
from robustclust._core.solver import Solver

C = 8


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(C, 10))
    X = centres[rng.integers(C, size=n)] + rng.normal(size=(n, 10))
    X[: n // 100] = rng.uniform(-15, 15, size=(n // 100, 10))
    K = rbf_kernel(X, gamma=0.05)
    return K - K.mean(0) - K.mean(1)[:, None] + K.mean()


def solver_for(K, max_iter):
    return Solver(KernelGeometry(K), KMeansModel(C, 1.0), make_penalty("group"),
                  make_penalty("group", True, 1e-3), max_iter=max_iter, tol=0.0)


def iteration_time(K, repeats, k=5):
    """Median of (t(2k iterations) - t(k iterations)) / k from the same start."""
    rng = np.random.default_rng(1)
    B0 = np.zeros((len(K), C))
    B0[rng.choice(len(K), C, replace=False), np.arange(C)] = 1
    out = []
    for _ in range(repeats):
        times = []
        for n_it in (k, 2 * k):
            solver = solver_for(K, n_it)
            state = solver.init_state(B0.T, 0.6)
            t = time.perf_counter()
            state = solver.run(state, 0.6)
            times.append(time.perf_counter() - t)
            assert state.n_iter == n_it
        out.append((times[1] - times[0]) / k)
    return float(np.median(out))


def product_time(K, repeats):
    B = np.random.default_rng(2).uniform(size=(len(K), C))
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        K @ B
        out.append(time.perf_counter() - t)
    return float(np.median(out))


def direct_iteration(K, U, A, lam):
    """One iteration of Algorithm 3 as printed (hard), with N x N A and Delta."""
    N = len(K)
    Uq = U
    B = (np.eye(N) - A) @ Uq / Uq.sum(axis=0)
    Delta = np.eye(N) - B @ (Uq / Uq.sum(axis=1, keepdims=True)).T
    norms = np.sqrt(np.maximum(np.einsum("in,in->n", Delta, K @ Delta), 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        A = Delta * np.where(norms > lam / 2, 1 - lam / (2 * norms), 0)
    D = np.empty((N, C))
    for c in range(C):
        V = np.eye(N) - B[:, [c]] - A
        D[:, c] = np.einsum("in,in->n", V, K @ V)
    U = np.zeros((N, C))
    U[np.arange(N), D.argmin(axis=1)] = 1
    return U, A


def direct_time(K, repeats):
    N = len(K)
    U = np.zeros((N, C))
    U[np.arange(N), np.arange(N) % C] = 1
    A = np.zeros((N, N))
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        U, A = direct_iteration(K, U, A, 0.6)
        out.append(time.perf_counter() - t)
    return float(np.median(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'N':>6} {'ms/iteration':>13} {'K@B ms':>8} {'iter/(K@B)':>11} {'vs N/2':>7}")
    prev = None
    for n in (1000, 2000, 4000, 8000):
        K = data(n)
        it = iteration_time(K, args.repeats)
        kb = product_time(K, args.repeats)
        growth = f"{it / prev:7.2f}" if prev else f"{'':>7}"
        print(f"{n:>6} {1e3 * it:13.2f} {1e3 * kb:8.2f} {it / kb:11.2f} {growth}")
        prev = it
    print("\ndirect transcription of Algorithm 3 (N x N A and Delta):")
    prev = None
    for n in (500, 1000):
        t = direct_time(data(n), max(1, args.repeats // 2))
        growth = f"{t / prev:7.2f}" if prev else ""
        print(f"{n:>6} {1e3 * t:13.1f} ms/iteration {growth}")
        prev = t


if __name__ == "__main__":
    main()
