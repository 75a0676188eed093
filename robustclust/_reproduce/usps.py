"""USPS digits 0-5: Table II and Fig. 6 of the paper (Section VI-B).

The set-up of the paper: for each digit 0-5, 300 images drawn uniformly at
random from the training and test images together (1800 images), each
256-pixel image scaled to unit l2 norm; C = 6 clusters and s = 100 outliers.
Every method runs from the same 20 random initialisations; the run of
smallest cost is kept, and its partition is scored by the adjusted Rand
index (ARI) against the digit labels after leaving out the points it
flags.  Methods: K-means, K-medians, hard robust K-means (RKM, q = 1, eq.
(5)) and RPC (eq. (8), spherical covariance sigma^2 I, eqs. (25), (27)); with
the homogeneous polynomial kernel (x^T y)^3: kernel K-means, KRKM
(Algorithm 3) and KRPC (Algorithm 4).

Choices the paper leaves open, made here:

* **Shared initialisations.** Initialisation r draws C = 6 distinct images
  (the seeds).  The linear methods start from the seeds as centres.  The
  kernel estimators take initial labels, so they get the partition of the
  points by their nearest seed; for unit-norm data this is the same
  partition in pixel space and in the feature space of (x^T y)^3 (both
  distances decrease with x^T x_seed), i.e. exactly the first assignment of
  the linear methods, and the kernel methods start from its means (one
  Lloyd step from the seeds in feature space).
* **Min-cost run.** Each method is judged by its own objective.  K-means and
  kernel K-means: the sum of squared distances to the nearest centre (eq.
  (1)); K-medians: the sum of l1 distances.  The robust fits pick lambda
  separately in every run so that exactly s points are flagged, so their
  penalized costs (eqs. (5), (8)) are at different lambdas and cannot be
  compared across runs; they are compared by the lambda-free l0 form
  instead, as the estimators themselves do when ``n_outliers`` is given:
  RKM and KRKM by the cost of eq. (3) (sum of squared distances to the
  nearest centre of all but the s farthest points, in pixel or feature
  space), RPC and KRPC by the negative log-likelihood (o = 0) of all but
  the s least likely points.
"""

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from matplotlib.figure import Figure
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from .. import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
)
from ..datasets import load_usps
from ..plotting import plot_centroids_and_outliers, plot_image_mosaic
from ._kmedians import kmedians
from ._report import DataNotFound, Section, comparison_table, markdown_table, save_figure

TITLE = "USPS digits (Table II, Fig. 6)"
KEY = "usps"

DIGITS = tuple(range(6))
N_CLUSTERS = 6
#: Seed of the draw of the images, and of the initialisations.
DATA_SEED = 0
INIT_SEED = 1
#: The homogeneous polynomial kernel (x^T y)^3 of the paper.
POLY = {"kernel": "poly", "kernel_params": {"degree": 3, "gamma": 1.0, "coef0": 0.0}}

#: Table II of the paper (ARI after removing the outliers).
PAPER_ARI = {
    "K-means": {"linear": 0.6469, "polynomial": 0.5571},
    "K-medians": {"linear": 0.5382, "polynomial": None},
    "RKM": {"linear": 0.6573, "polynomial": 0.6978},
    "RPC": {"linear": 0.6508, "polynomial": 0.6965},
}
#: Outliers common to RKM and RPC in the paper.
PAPER_COMMON_OUTLIERS = 97


@dataclass(frozen=True)
class Setup:
    """Size of the experiment: images per digit, outliers s, initialisations."""

    per_digit: int
    n_outliers: int
    n_inits: int


#: The paper's experiment.
FULL = Setup(per_digit=300, n_outliers=100, n_inits=20)
#: A small version for the tests (s scaled with N).
QUICK = Setup(per_digit=100, n_outliers=33, n_inits=3)


# ---------------------------------------------------------------------------
# data and initialisations
# ---------------------------------------------------------------------------


def load_sample(data_home, per_digit, seed=DATA_SEED):
    """The paper's sample: ``per_digit`` images of each digit 0-5, unit l2 norm.

    Parameters
    ----------
    data_home : str or path-like or None
        Folder with ``usps.mat`` or the ESL files (see
        :func:`robustclust.datasets.load_usps`); nothing is downloaded.
    per_digit : int
        Images drawn (without replacement) from the training and test images
        of each digit together.
    seed : int, default=DATA_SEED

    Returns
    -------
    X : ndarray of shape (6 * per_digit, 256)
        Rows scaled to unit l2 norm, grouped by digit.
    y : ndarray of shape (6 * per_digit,)
        The digits.

    Raises
    ------
    DataNotFound
        No local copy of the USPS digits.
    """
    try:
        usps = load_usps(data_home, digits=DIGITS, download_if_missing=False)
    except FileNotFoundError as exc:
        raise DataNotFound(
            "the USPS digits were not found (usps.mat, or zip.train.gz and zip.test.gz "
            f"from the ESL site) in {data_home or 'the default data folders'}; "
            "download them with robustclust.datasets.load_usps() first. "
            f"Details: {exc}") from exc
    rng = np.random.default_rng(seed)
    index = np.concatenate([
        rng.choice(np.flatnonzero(usps.target == digit), per_digit, replace=False)
        for digit in DIGITS])
    X = usps.data[index]
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    return X, usps.target[index]


@dataclass(frozen=True)
class Init:
    """One shared initialisation: C seed images and the partition around them."""

    seeds: np.ndarray
    centers: np.ndarray
    labels: np.ndarray


def shared_inits(X, n_inits, seed=INIT_SEED, n_clusters=N_CLUSTERS):
    """``n_inits`` draws of ``n_clusters`` distinct points, with their partitions.

    The partition assigns every point to the seed of largest inner product,
    i.e. nearest in pixel space and in the feature space of (x^T y)^3 alike
    (rows of X have unit norm); each seed is in its own group.
    """
    rng = np.random.default_rng(seed)
    inits = []
    for _ in range(n_inits):
        seeds = rng.choice(X.shape[0], n_clusters, replace=False)
        labels = (X @ X[seeds].T).argmax(axis=1)
        labels[seeds] = np.arange(n_clusters)
        inits.append(Init(seeds=seeds, centers=X[seeds].copy(), labels=labels))
    return inits


# ---------------------------------------------------------------------------
# the methods and their selection costs
# ---------------------------------------------------------------------------


@dataclass
class Problem:
    """Data of one run: images, digits, s."""

    X: np.ndarray
    y: np.ndarray
    n_outliers: int


@dataclass
class Fit:
    """One run of one method."""

    labels: np.ndarray
    outlier_mask: np.ndarray
    outlier_norms: np.ndarray
    cost: float
    model: object


def trimmed_sum(costs, n_trim):
    """Sum of ``costs`` without its ``n_trim`` largest entries (the l0 form)."""
    costs = np.sort(np.asarray(costs, dtype=np.float64))
    return float(costs[: len(costs) - n_trim].sum())


def _from_estimator(model, cost):
    return Fit(labels=np.asarray(model.labels_), outlier_mask=np.asarray(model.outlier_mask_),
               outlier_norms=np.asarray(model.outlier_norms_), cost=float(cost), model=model)


def fit_kmeans(problem, init):
    """K-means (RobustKMeans with lam = inf) from the seeds; cost eq. (1)."""
    model = RobustKMeans(N_CLUSTERS, lam=np.inf, init=init.centers, n_init=1).fit(problem.X)
    return _from_estimator(model, model.objective_)


def fit_kmedians(problem, init):
    """K-medians from the seeds; cost: sum of l1 distances."""
    result = kmedians(problem.X, init.centers)
    n = problem.X.shape[0]
    return Fit(labels=result.labels, outlier_mask=np.zeros(n, bool), outlier_norms=np.zeros(n),
               cost=result.cost, model=result)


def fit_rkm(problem, init):
    """Hard RKM (q = 1) flagging s points, from the seeds; cost eq. (3)."""
    model = RobustKMeans(N_CLUSTERS, n_outliers=problem.n_outliers, init=init.centers,
                         n_init=1, refine=False).fit(problem.X)  # the paper's estimator
    d2 = model.transform(problem.X).min(axis=1) ** 2
    return _from_estimator(model, trimmed_sum(d2, problem.n_outliers))


def fit_rpc(problem, init):
    """RPC (spherical sigma^2 I) flagging s points, from the seeds; trimmed NLL."""
    model = RobustGaussianMixture(N_CLUSTERS, n_outliers=problem.n_outliers,
                                  covariance_type="tied_spherical", init=init.centers,
                                  n_init=1, refine=False).fit(problem.X)  # the paper's
    return _from_estimator(model, trimmed_sum(-model.score_samples(problem.X),
                                              problem.n_outliers))


def fit_kernel_kmeans(problem, init):
    """Kernel K-means with (x^T y)^3 from the seed partition; cost eq. (1) in feature space."""
    model = KernelRobustKMeans(N_CLUSTERS, lam=np.inf, init=init.labels, n_init=1,
                               **POLY).fit(problem.X)
    return _from_estimator(model, model.objective_)


def fit_krkm(problem, init):
    """KRKM (q = 1) with (x^T y)^3 flagging s points; cost eq. (3) in feature space."""
    model = KernelRobustKMeans(N_CLUSTERS, n_outliers=problem.n_outliers, init=init.labels,
                               n_init=1, **POLY).fit(problem.X)
    d2 = model.transform(problem.X).min(axis=1) ** 2
    return _from_estimator(model, trimmed_sum(d2, problem.n_outliers))


def fit_krpc(problem, init):
    """KRPC with (x^T y)^3 flagging s points, from the seed partition; trimmed NLL."""
    model = KernelRobustGaussianMixture(N_CLUSTERS, n_outliers=problem.n_outliers,
                                        init=init.labels, n_init=1, **POLY).fit(problem.X)
    return _from_estimator(model, trimmed_sum(-model.score_samples(problem.X),
                                              problem.n_outliers))


@dataclass(frozen=True)
class Method:
    key: str
    row: str
    column: str
    robust: bool
    fit: object


METHODS = (
    Method("kmeans", "K-means", "linear", False, fit_kmeans),
    Method("kmedians", "K-medians", "linear", False, fit_kmedians),
    Method("rkm", "RKM", "linear", True, fit_rkm),
    Method("rpc", "RPC", "linear", True, fit_rpc),
    Method("kernel_kmeans", "K-means", "polynomial", False, fit_kernel_kmeans),
    Method("krkm", "RKM", "polynomial", True, fit_krkm),
    Method("krpc", "RPC", "polynomial", True, fit_krpc),
)
_NAMES = {"kmeans": "K-means", "kmedians": "K-medians", "rkm": "RKM", "rpc": "RPC",
          "kernel_kmeans": "kernel K-means", "krkm": "KRKM", "krpc": "KRPC"}


def inlier_ari(y, labels, outlier_mask):
    """ARI between digits and clusters over the points not flagged."""
    keep = ~np.asarray(outlier_mask, dtype=bool)
    return float(adjusted_rand_score(y[keep], np.asarray(labels)[keep]))


def majority_digits(y, labels, outlier_mask):
    """The most frequent digit among each cluster's inliers, sorted (one per non-empty cluster)."""
    keep = ~np.asarray(outlier_mask, dtype=bool)
    labels = np.asarray(labels)[keep]
    return sorted(int(np.bincount(y[keep][labels == c]).argmax()) for c in np.unique(labels))


@dataclass
class MethodRuns:
    """All runs of one method and the one of smallest cost."""

    method: Method
    costs: list = field(default_factory=list)
    aris: list = field(default_factory=list)
    counts: list = field(default_factory=list)
    majorities: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    warnings: set = field(default_factory=set)
    best: Fit | None = None
    best_run: int = -1

    def add(self, run, fit, ari, majority, seconds, caught):
        self.costs.append(fit.cost)
        self.aris.append(ari)
        self.counts.append(int(fit.outlier_mask.sum()))
        self.majorities.append(majority)
        self.seconds.append(seconds)
        self.warnings.update(f"{w.category.__name__}: {w.message}" for w in caught)
        if self.best is None or fit.cost < self.best.cost:
            self.best, self.best_run = fit, run

    @property
    def best_ari(self):
        return self.aris[self.best_run]


def run_methods(problem, inits, methods=METHODS):
    """Every method from every initialisation; returns {key: MethodRuns}."""
    runs = {m.key: MethodRuns(m) for m in methods}
    for r, init in enumerate(inits):
        for method in methods:
            began = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fit = method.fit(problem, init)
            seconds = time.perf_counter() - began
            ari = inlier_ari(problem.y, fit.labels, fit.outlier_mask)
            majority = majority_digits(problem.y, fit.labels, fit.outlier_mask)
            runs[method.key].add(r, fit, ari, majority, seconds, caught)
    return runs


# ---------------------------------------------------------------------------
# the weighted variants (Section III-C)
# ---------------------------------------------------------------------------


def _norm_spread(norms, mask):
    """Coefficient of variation std / mean of the flagged points' ||o_n||."""
    values = np.asarray(norms)[np.asarray(mask, dtype=bool)]
    return float(values.std() / values.mean()) if len(values) and values.mean() > 0 else None


def weighted_comparison(problem, rkm, rpc):
    """WRKM and WRPC started from the selected RKM and RPC solutions.

    Returns a dict per method: flagged count, outliers in common with the
    unweighted fit, ARI, how many of the points that both leave in change
    cluster (after matching the clusters of the two fits) and the ARI
    between the two partitions there, the spread of ||o_n|| before and
    after, the time and the warnings of the fit.
    """
    s = problem.n_outliers
    out = {}
    cases = (
        ("WRKM", rkm, lambda: RobustKMeans(N_CLUSTERS, n_outliers=s, penalty="log",
                                           init=rkm.model.cluster_centers_, n_init=1)),
        ("WRPC", rpc, lambda: RobustGaussianMixture(N_CLUSTERS, n_outliers=s, penalty="log",
                                                    covariance_type="tied_spherical",
                                                    init=rpc.model.means_, n_init=1,
                                                    refine=False)),
    )
    for name, base, make in cases:
        began = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = make().fit(problem.X)
        seconds = time.perf_counter() - began
        both = ~model.outlier_mask_ & ~base.outlier_mask
        out[name] = {
            "n_outliers": int(model.n_outliers_),
            "common_outliers": int((model.outlier_mask_ & base.outlier_mask).sum()),
            "ari": inlier_ari(problem.y, model.labels_, model.outlier_mask_),
            "reassigned": reassigned(base.labels[both], model.labels_[both]),
            "agreement_ari": float(adjusted_rand_score(base.labels[both], model.labels_[both])),
            "norm_spread_unweighted": _norm_spread(base.outlier_norms, base.outlier_mask),
            "norm_spread_weighted": _norm_spread(model.outlier_norms_, model.outlier_mask_),
            "seconds": seconds,
            "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
        }
    return out


def reassigned(labels_a, labels_b):
    """Points whose cluster differs between two partitions, after the matching
    of their clusters that keeps the most points together."""
    labels_a, labels_b = np.asarray(labels_a), np.asarray(labels_b)
    if labels_a.size == 0:
        return 0
    _, a = np.unique(labels_a, return_inverse=True)
    _, b = np.unique(labels_b, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1), dtype=np.int64)
    np.add.at(table, (a, b), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return int(labels_a.size - table[rows, cols].sum())


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------


def ranked_outliers(fit):
    """Indices of the flagged points, largest ||o_n|| first (ties: sample order)."""
    flagged = np.flatnonzero(fit.outlier_mask)
    return flagged[np.argsort(-fit.outlier_norms[flagged], kind="stable")]


def figure_rpc(out_dir, X, rpc):
    """Fig. 6(a)-(b): RPC centroids and its outliers ranked by ||o_n||."""
    fig = Figure(figsize=(12, 5.2))
    axes = fig.subplots(1, 2, width_ratios=[1, 1.4])
    plot_centroids_and_outliers(rpc.model, X, ncols=10, axes=axes)
    axes[0].set_title("RPC centroids")
    axes[1].set_title(f"{int(rpc.outlier_mask.sum())} RPC outliers, largest ‖o_n‖ first")
    return save_figure(fig, out_dir, f"{KEY}_rpc.png")


def figure_krkm(out_dir, X, krkm):
    """Fig. 6(c): KRKM's outliers (polynomial kernel) ranked by ||o_n||."""
    fig = Figure(figsize=(6, 6))
    ax = fig.subplots()
    ranked = ranked_outliers(krkm)
    plot_image_mosaic(X[ranked], ncols=10, ax=ax)
    ax.set_title(f"{len(ranked)} KRKM outliers, kernel $(x^\\top y)^3$, largest ‖o_n‖ first")
    return save_figure(fig, out_dir, f"{KEY}_krkm_outliers.png")


# ---------------------------------------------------------------------------
# the section
# ---------------------------------------------------------------------------


def run(out_dir, *, quick, data_home):
    """Run the USPS experiment and return its report section.

    Parameters
    ----------
    out_dir : path-like
        Folder of the report (figures are written there).
    quick : bool
        Small version (100 images per digit, s = 33, 3 initialisations) for
        the tests; the full one is the paper's (300, 100, 20).
    data_home : str or path-like or None
        Where ``usps.mat`` (or the ESL files) is looked for.

    Returns
    -------
    section : Section

    Raises
    ------
    DataNotFound
        The USPS digits are not available locally.
    """
    setup = QUICK if quick else FULL
    X, y = load_sample(data_home, setup.per_digit)
    problem = Problem(X, y, setup.n_outliers)
    inits = shared_inits(X, setup.n_inits)
    # Small matrices: one BLAS thread is faster than several fighting for
    # the cores (and measured several times faster on a busy 2-core machine).
    with threadpool_limits(limits=1, user_api="blas"):
        runs = run_methods(problem, inits)
        weighted = weighted_comparison(problem, runs["rkm"].best, runs["rpc"].best)
    figures = [figure_rpc(out_dir, X, runs["rpc"].best),
               figure_krkm(out_dir, X, runs["krkm"].best)]
    values = _values(setup, problem, runs, weighted)
    checks = _checks(setup, runs, weighted, values)
    body = _body(setup, problem, runs, weighted, values, figures)
    return Section(key=KEY, title=TITLE, body=body, checks=checks, values=values,
                   figures=figures)


def _outlier_digits(y, fit):
    return np.bincount(y[fit.outlier_mask], minlength=len(DIGITS)).tolist()


def _values(setup, problem, runs, weighted):
    s = setup.n_outliers
    best = {key: r.best for key, r in runs.items()}
    values = {
        "n_samples": int(problem.X.shape[0]),
        "n_outliers_target": s,
        "n_inits": setup.n_inits,
        "ari": {key: r.best_ari for key, r in runs.items()},
        "ari_runs": {key: [float(a) for a in r.aris] for key, r in runs.items()},
        "costs": {key: [float(c) for c in r.costs] for key, r in runs.items()},
        "best_run": {key: r.best_run for key, r in runs.items()},
        "n_flagged": {key: r.counts[r.best_run] for key, r in runs.items()},
        "n_flagged_runs": {key: r.counts for key, r in runs.items()},
        "seconds": {key: float(sum(r.seconds)) for key, r in runs.items()},
        "common_outliers": {
            "rkm_rpc": int((best["rkm"].outlier_mask & best["rpc"].outlier_mask).sum()),
            "krkm_krpc": int((best["krkm"].outlier_mask & best["krpc"].outlier_mask).sum()),
            "rkm_krkm": int((best["rkm"].outlier_mask & best["krkm"].outlier_mask).sum()),
        },
        "outlier_digits": {key: _outlier_digits(problem.y, best[key])
                           for key in ("rkm", "rpc", "krkm", "krpc")},
        # the plain methods scored on the robust methods' inliers: how much of
        # the robust gain is the removal of the points alone
        "ari_on_robust_inliers": {
            "kmeans_on_rkm": inlier_ari(problem.y, best["kmeans"].labels,
                                        best["rkm"].outlier_mask),
            "kernel_kmeans_on_krkm": inlier_ari(problem.y, best["kernel_kmeans"].labels,
                                                best["krkm"].outlier_mask),
        },
        "weighted": weighted,
        "majority_digits": {key: r.majorities[r.best_run] for key, r in runs.items()},
        "six_digit_runs": {key: _six_digit_runs(r) for key, r in runs.items()},
        "warnings": {key: sorted(r.warnings) for key, r in runs.items()},
    }
    return values


def _six_digit_runs(runs):
    """Runs whose clusters stand for six different digits (by majority), and the
    cheapest of them: its run index, its rank by cost (0 = the min-cost run) and ARI."""
    six = [r for r, digits in enumerate(runs.majorities) if len(set(digits)) == len(DIGITS)]
    if not six:
        return {"count": 0, "cheapest": None, "cost_rank": None, "ari": None}
    cheapest = min(six, key=lambda r: runs.costs[r])
    rank = int(np.sum(np.asarray(runs.costs) < runs.costs[cheapest]))
    return {"count": len(six), "cheapest": cheapest, "cost_rank": rank,
            "ari": float(runs.aris[cheapest])}


def _checks(setup, runs, weighted, values):
    s = setup.n_outliers
    checks = {}
    for key, r in runs.items():
        if r.method.robust:
            checks[f"{_NAMES[key]} flags exactly {s} outliers in every run"] = all(
                c == s for c in r.counts)
    for name, w in weighted.items():
        checks[f"{name} flags exactly {s} outliers"] = w["n_outliers"] == s
    ari = values["ari"]
    checks["RKM ARI >= K-means ARI (Table II)"] = ari["rkm"] >= ari["kmeans"]
    checks["KRKM ARI >= kernel K-means ARI (Table II)"] = ari["krkm"] >= ari["kernel_kmeans"]
    return checks


def _spread(aris):
    return f"{min(aris):.4f}–{max(aris):.4f}"


def _body(setup, problem, runs, weighted, values, figures):
    s = setup.n_outliers
    n = problem.X.shape[0]
    ours = {}
    for key, r in runs.items():
        ours.setdefault(r.method.row, {})[r.method.column] = r.best_ari
    table2 = comparison_table(["K-means", "K-medians", "RKM", "RPC"], ["linear", "polynomial"],
                              ours, PAPER_ARI, first="method")

    detail_rows = []
    for key, r in runs.items():
        detail_rows.append([
            _NAMES[key], r.method.column, r.best_run + 1, r.best_ari,
            float(np.mean(r.aris)), _spread(r.aris),
            r.counts[r.best_run] if r.method.robust else "–",
            float(sum(r.seconds)), float(np.mean(r.seconds)),
        ])
    details = markdown_table(
        ["method", "kernel", "min-cost run", "ARI (min-cost run)", "mean ARI",
         "ARI range", "flagged", "seconds (all runs)", "seconds per fit"],
        detail_rows, digits=4, align="llrrrrrrr")

    cover_rows = []
    for key, r in runs.items():
        found = values["majority_digits"][key]
        missing = sorted(set(DIGITS) - set(found))
        six = values["six_digit_runs"][key]
        cover_rows.append([
            _NAMES[key], " ".join(map(str, found)), " ".join(map(str, missing)) or "none",
            f"{six['count']} / {setup.n_inits}",
            "–" if six["cheapest"] is None else f"{six['cost_rank'] + 1} of {setup.n_inits}",
            six["ari"]])
    cover = markdown_table(
        ["method", "digits of the clusters (min-cost run)", "digits without a cluster",
         "runs with six different digits", "cheapest such run: rank by cost", "its ARI"],
        cover_rows, digits=4, align="lllrrr")

    common = values["common_outliers"]
    digits_rows = [[_NAMES[key], *values["outlier_digits"][key]]
                   for key in ("rkm", "rpc", "krkm", "krpc")]
    digits_table = markdown_table(["method", *[f"digit {d}" for d in DIGITS]], digits_rows)

    w_rows = []
    for name, base_key in (("WRKM", "rkm"), ("WRPC", "rpc")):
        w = weighted[name]
        w_rows.append([name, w["n_outliers"], f"{w['common_outliers']} / {s}",
                       runs[base_key].best_ari, w["ari"], w["reassigned"],
                       w["norm_spread_unweighted"], w["norm_spread_weighted"]])
    w_table = markdown_table(
        ["method", "flagged", "outliers shared with unweighted", "ARI unweighted",
         "ARI weighted", "inliers that change cluster", "std/mean of ‖o_n‖ unweighted",
         "std/mean of ‖o_n‖ weighted"], w_rows, digits=4)

    mode = ("" if setup == FULL else
            f"\n**Quick version** ({setup.per_digit} images per digit, s = {s}, "
            f"{setup.n_inits} initialisations): not the paper's set-up, numbers not "
            "comparable with Table II.\n")
    figure_links = (f"![RPC centroids and outliers]({figures[0]})\n\n"
                    f"![KRKM outliers]({figures[1]})")
    gap_notes = _gap_notes(runs, values)
    raised = {**{_NAMES[k]: v for k, v in values["warnings"].items() if v},
              **{k: w["warnings"] for k, w in weighted.items() if w["warnings"]}}
    warning_note = ("\nWarnings raised by the fits: " + "; ".join(
        f"{name}: {', '.join(msgs)}" for name, msgs in raised.items()) + ".\n"
        if raised else "\nNo fit raised a warning.\n")

    return f"""\
{mode}
{n} images ({setup.per_digit} of each digit 0-5, drawn from the training and test
images together with seed {DATA_SEED}), unit ℓ2 norm; C = {N_CLUSTERS}, s = {s};
{setup.n_inits} initialisations (seed {INIT_SEED}) shared by all methods: C distinct
random images as the initial centres of the linear methods, the partition around
them as the initial labels of the kernel methods (the same partition in both spaces,
since the images have unit norm). Each method keeps its run of smallest cost: the
sum of squared (K-means) or ℓ1 (K-medians) distances, for the robust methods the
λ-free form with s outliers (eq. (3) for RKM and KRKM, the likelihood of all but
the s least likely points for RPC and KRPC), because λ is tuned per run to flag
exactly s points and the penalized costs of different λ do not compare. ARI
against the digits, over the points not flagged. Kernel: (xᵀy)³.

**Table II** (ARI, min-cost run)

{table2}
Every run of every method (ARI range = smallest and largest ARI over the
{setup.n_inits} runs; times are wall-clock on this machine, one BLAS thread):

{details}
Which digit each cluster stands for (the majority digit of its inliers), and how
many runs give each digit a cluster of its own:

{cover}{gap_notes}

**Outliers.** Each robust method flags {', '.join(
        f"{_NAMES[k]} {values['n_flagged'][k]}" for k in ('rkm', 'rpc', 'krkm', 'krpc'))}
(target {s}). RKM and RPC have {common['rkm_rpc']} of their {s} outliers in common
(paper: {PAPER_COMMON_OUTLIERS} of 100); KRKM and KRPC {common['krkm_krpc']}; RKM and
KRKM {common['rkm_krkm']}. Digits of the flagged images:

{digits_table}
**Weighted variants** (log penalty, Section III-C), each started from the selected
unweighted solution and tuned to flag s points:

{w_table}
{_weighted_note(values, s)}
{warning_note}
{figure_links}

Fig. 6(a)-(b): centroids of RPC and its outliers, largest ‖o_n‖ first (reading
order). Fig. 6(c): KRKM's outliers with the polynomial kernel; its centres live in
feature space, so only the flagged images are shown.
"""


def _digit_list(digits):
    digits = [str(d) for d in digits]
    return digits[0] if len(digits) == 1 else ", ".join(digits[:-1]) + " and " + digits[-1]


def _gap_notes(runs, values):
    """Sentences on where our Table II differs from the paper's, from the numbers."""
    ari = values["ari"]
    n_inits = values["n_inits"]
    paper = {key: PAPER_ARI[r.method.row][r.method.column] for key, r in runs.items()}
    notes = []
    below = [key for key in runs if paper[key] is not None and ari[key] < paper[key]]
    spread = max(max(r.aris) - min(r.aris) for r in runs.values())
    notes.append(
        f"{len(below)} of our {sum(v is not None for v in paper.values())} ARIs are below "
        f"the paper's. Our {values['n_samples']} images are a different random draw from "
        "the paper's (which is not published), and a method's runs end in different local "
        f"minima whose ARIs differ by up to {spread:.2f}, so the min-cost run's ARI moves "
        "by a few hundredths with the sample and the initialisations.")
    if values["n_samples"] == len(DIGITS) * FULL.per_digit:
        notes.append(
            "That is not the whole story: on four other draws (data seeds 1-4, measured once "
            "with this module) every method but kernel K-means also stayed below the paper's "
            "ARI, so part of the offset is systematic, and its cause (the paper's "
            "preprocessing or copy of the data, its selection of the run) is unknown to us.")
    # the partition errors behind the numbers
    by_pattern = {}
    for key in runs:
        found = values["majority_digits"][key]
        missing = tuple(sorted(set(DIGITS) - set(found)))
        doubled = tuple(sorted({d for d in found if found.count(d) > 1}))
        if missing:
            by_pattern.setdefault((missing, doubled), []).append(key)
    for (missing, doubled), keys in by_pattern.items():
        six = [values["six_digit_runs"][k]["count"] for k in keys]
        plural = len(missing) > 1
        notes.append(
            f"In the min-cost run of {_digit_list([_NAMES[k] for k in keys])}, "
            f"digit{'s' if plural else ''} {_digit_list(missing)} "
            f"ha{'ve' if plural else 's'} no cluster of {'their' if plural else 'its'} own"
            + (f" while {_digit_list(doubled)} get{'s' if len(doubled) == 1 else ''} two "
               "clusters" if doubled else "")
            + f"; {min(six)}-{max(six)} of the {n_inits} runs give the six digits six "
            "clusters, at a higher cost (table above).")
        closer = [k for k in keys if paper[k] is not None
                  and values["six_digit_runs"][k]["ari"] is not None
                  and abs(values["six_digit_runs"][k]["ari"] - paper[k])
                  < abs(ari[k] - paper[k])]
        if closer:
            notes.append(
                "The cheapest of those runs is closer to the paper's ARI for "
                + _digit_list([f"{_NAMES[k]} ({values['six_digit_runs'][k]['ari']:.4f})"
                               for k in closer])
                + "; for these the gap is mostly which local minimum is the cheapest on our "
                "sample.")
    if "kmedians" in [k for keys in by_pattern.values() for k in keys]:
        notes.append("As in the paper, K-medians' partition does not reveal the six digits.")
    for plain, robust, key in (("kmeans", "rkm", "kmeans_on_rkm"),
                               ("kernel_kmeans", "krkm", "kernel_kmeans_on_krkm")):
        gain = ari[robust] - ari[plain]
        cross = values["ari_on_robust_inliers"][key]
        if gain <= 0:
            continue
        share = (cross - ari[plain]) / gain
        how = ("all of it comes from" if share >= 1 else f"{share:.0%} of it is")
        notes.append(
            f"{_NAMES[robust]} beats {_NAMES[plain]} by {gain:.4f}; {how} leaving out the "
            f"flagged images: the partition of {_NAMES[plain]} scores {cross:.4f} on "
            f"{_NAMES[robust]}'s inliers.")
    paper_lin = PAPER_ARI["K-means"]["linear"] > PAPER_ARI["K-means"]["polynomial"]
    ours_lin = ari["kmeans"] > ari["kernel_kmeans"]
    notes.append(
        "The paper's observation (i), kernel K-means below linear K-means, "
        + ("holds here too" if ours_lin == paper_lin else "does not hold here")
        + f" ({ari['kernel_kmeans']:.4f} against {ari['kmeans']:.4f}); observation (ii), "
        "KRKM above RKM, "
        + ("holds" if ari["krkm"] > ari["rkm"] else "does not hold")
        + f" ({ari['krkm']:.4f} against {ari['rkm']:.4f}).")
    return "\n" + " ".join(notes) + "\n"


def _count(n, noun):
    return f"no {noun}" if n == 0 else f"{n} {noun}{'s' if n != 1 else ''}"


def _weighted_note(values, s):
    """What the weighted variants change, against the paper's statements."""
    parts = []
    for name, base in (("WRKM", "rkm"), ("WRPC", "rpc")):
        w = values["weighted"][name]
        parts.append(
            f"{name} keeps {w['common_outliers']} of {_NAMES[base]}'s {s} outliers, moves "
            f"{_count(w['reassigned'], 'inlier')} to another cluster (ARI "
            f"{w['ari'] - values['ari'][base]:+.4f}) and makes the ‖o_n‖ nearly equal "
            f"(std/mean {w['norm_spread_unweighted']:.2f} → {w['norm_spread_weighted']:.2f})")
    same = all(values["weighted"][n]["reassigned"] == 0
               and values["weighted"][n]["common_outliers"] == s for n in ("WRKM", "WRPC"))
    return ("; ".join(parts) + ". The paper reports the same outliers, equal ARIs and "
            "near-uniform ‖o_n‖ for WRKM; "
            + ("we find the same." if same else
               "here the reweighting moves a few points, so the ARIs differ slightly."))
