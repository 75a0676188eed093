"""Reproduction of Table I of the robust clustering paper (Section VI-A).

:func:`run_demo` clusters the four-blob synthetic data set of
:func:`~robustclust.datasets.make_blobs_with_outliers` with plain and robust
K-means, hard and soft, and prints the mean centre RMSE of each method next
to the value the paper reports, together with how many of the planted
outliers each method flags.
"""

import sys
import time
import warnings
from collections import Counter
from numbers import Integral

import numpy as np

from .. import RobustGaussianMixture, RobustKMeans
from ..datasets import make_blobs_with_outliers
from ..metrics import center_rmse

__all__ = ["METHODS", "OUTLIER_LEVELS", "PAPER_TABLE_I", "evaluate_methods", "run_demo"]

#: Numbers of planted outliers of the two data sets (N = 200 + outliers).
OUTLIER_LEVELS = (40, 80)

#: Fuzzifier of the soft methods, as in the paper.
_SOFT_Q = 1.5

#: Number of clusters and of inliers of the data set (4 x 50 points).
_N_CLUSTERS = 4
_N_INLIERS = 200

#: Row name -> (estimator class, keyword arguments, whether the method is
#: told the true outlier count through ``n_outliers``).  Plain K-means is the
#: ``lam = inf`` limit of robust K-means, EM (a spherical mixture with one
#: common variance) that of RPC.
METHODS = {
    "hard K-means": (RobustKMeans, {"lam": np.inf, "fuzzifier": 1.0}, False),
    "soft K-means": (RobustKMeans, {"lam": np.inf, "fuzzifier": _SOFT_Q}, False),
    "EM": (RobustGaussianMixture, {"lam": np.inf, "covariance_type": "tied_spherical"}, False),
    # the paper's estimator: no trimmed refinement of the count fit
    "hard RKM": (RobustKMeans, {"fuzzifier": 1.0, "refine": False}, True),
    "hard WRKM": (RobustKMeans, {"fuzzifier": 1.0, "penalty": "log"}, True),
    "soft RKM": (RobustKMeans, {"fuzzifier": _SOFT_Q}, True),
    "soft WRKM": (RobustKMeans, {"fuzzifier": _SOFT_Q, "penalty": "log"}, True),
    # the paper's model: one variance sigma^2 I common to all components, and its
    # estimator: no trimmed refinement of the count fit
    "RPC": (RobustGaussianMixture, {"init": "robust-kmeans", "refine": False,
                                    "covariance_type": "tied_spherical"}, True),
    "WRPC": (RobustGaussianMixture, {"init": "robust-kmeans", "penalty": "log",
                                     "refine": False, "covariance_type": "tied_spherical"},
             True),
}

#: Mean centre RMSE reported in Table I of the paper, per method and number
#: of outliers.
PAPER_TABLE_I = {
    "hard K-means": {40: 0.7227, 80: 1.0892},
    "soft K-means": {40: 0.5530, 80: 1.0206},
    "EM": {40: 0.6143, 80: 1.0032},
    "hard RKM": {40: 0.4986, 80: 0.8813},
    "hard WRKM": {40: 0.4985, 80: 0.8812},
    "soft RKM": {40: 0.2587, 80: 0.6259},
    "soft WRKM": {40: 0.0937, 80: 0.1758},
    "RPC": {40: 0.2789, 80: 0.3891},
    "WRPC": {40: 0.1525, 80: 0.1750},
}


def _check_positive_int(value, name):
    """Return ``value`` as an int, or raise ValueError unless it is >= 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise ValueError(
            f"{name} must be a positive integer, got {value!r} "
            f"of type {type(value).__name__}."
        )
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}.")
    return int(value)


def evaluate_methods(n_runs, data_seed, methods=None):
    """Fit every method from every initialisation on both data sets.

    Parameters
    ----------
    n_runs : int
        Number of initialisations per method and data set.
    data_seed : int
        ``random_state`` of the data generator.
    methods : dict, default=None
        Subset of :data:`METHODS` (same layout); None means all of them.

    Returns
    -------
    runs : dict
        ``runs[method][n_outliers]`` is a dict of arrays of length
        ``n_runs``: ``"rmse"`` (centre RMSE), ``"found"`` (true outliers
        among the flagged points), ``"flagged"`` (points flagged),
        ``"precision"`` and ``"recall"`` of the flagged set (precision is
        NaN when nothing is flagged).
    warning_counts : collections.Counter
        Number of warnings raised by the fits, keyed by
        ``(warning class name, method, n_outliers)``.
    """
    methods = METHODS if methods is None else methods
    runs = {name: {} for name in methods}
    warning_counts = Counter()
    for n_outliers in OUTLIER_LEVELS:
        # One data set per contamination level, shared by all methods and runs.
        data = make_blobs_with_outliers(n_outliers=n_outliers, random_state=data_seed)
        for name, (estimator, params, robust) in methods.items():
            per_run = {key: np.empty(n_runs)
                       for key in ("rmse", "found", "flagged", "precision", "recall")}
            for run in range(n_runs):
                model = estimator(
                    _N_CLUSTERS,
                    n_outliers=n_outliers if robust else None,
                    n_init=1,
                    random_state=run,
                    **({"init": "random"} | params),
                )
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model.fit(data.X)
                for w in caught:
                    warning_counts[(w.category.__name__, name, n_outliers)] += 1
                centers = getattr(model, "cluster_centers_", None)
                per_run["rmse"][run] = center_rmse(
                    data.centers, model.means_ if centers is None else centers)
                flagged = model.outlier_mask_
                found = np.count_nonzero(flagged & data.outlier_mask)
                per_run["found"][run] = found
                per_run["flagged"][run] = np.count_nonzero(flagged)
                per_run["precision"][run] = (found / flagged.sum() if flagged.any()
                                             else np.nan)
                per_run["recall"][run] = found / n_outliers
            runs[name][n_outliers] = per_run
    return runs, warning_counts


def _evaluate(n_runs, data_seed):
    """Mean centre RMSE and mean true outliers found, per method and data set.

    Returns
    -------
    results : dict
        ``results[method][n_outliers] = (mean_rmse, mean_true_found)``.
    warning_counts : collections.Counter
        As returned by :func:`evaluate_methods`.
    """
    runs, warning_counts = evaluate_methods(n_runs, data_seed)
    results = {
        name: {level: (float(r["rmse"].mean()), float(r["found"].mean()))
               for level, r in per_level.items()}
        for name, per_level in runs.items()
    }
    return results, warning_counts


def _format_count(mean_found, n_true):
    """``"76.3/80"``, or ``"80/80"`` when the mean is a whole number."""
    text = f"{mean_found:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return f"{text}/{n_true}"


def _format_warnings(warning_counts):
    """One footer sentence summarising the suppressed warnings ("" if none)."""
    total = sum(warning_counts.values())
    if not total:
        return ""
    parts = [
        f"{category} x{count} ({method}, {n_outliers}/{_N_INLIERS + n_outliers})"
        for (category, method, n_outliers), count in sorted(warning_counts.items())
    ]
    noun = "warning" if total == 1 else "warnings"
    return f"{total} {noun} from individual fits suppressed: " + "; ".join(parts) + "."


def _format_table(results, n_runs, data_seed, warning_counts):
    """The printed report: header line, table, footer lines."""
    levels = OUTLIER_LEVELS
    sizes = {s: f"{s}/{_N_INLIERS + s}" for s in levels}
    lines = [
        f"Table I of Forero et al. (Sec. VI-A): 4 Gaussian clusters x 50 points "
        f"(cov 0.8 I) + 40 or 80 outliers, data seed {data_seed}.",
        f"Each method is run once from each of {n_runs} random initialisations "
        f"(init='random', n_init=1, random_state=0..{n_runs - 1}); robust methods "
        f"are given the true outlier count; soft methods use q={_SOFT_Q}; RPC and WRPC "
        f"start from a RobustKMeans fit seeded by the same random_state.",
        "",
    ]
    name_w = max(len("method"), *(len(name) for name in results))
    num_w = 7
    count_w = max(len("found " + sizes[s]) for s in levels)
    rmse_group_w = 2 * num_w + 2

    def row(name, cells_rmse, cells_count):
        rmse_part = "   ".join(
            f"{a:>{num_w}}  {b:>{num_w}}" for a, b in cells_rmse
        )
        count_part = "  ".join(f"{c:>{count_w}}" for c in cells_count)
        return f"{name:<{name_w}}   {rmse_part}   {count_part}"

    title_rmse = "   ".join(f"{'RMSE ' + sizes[s]:^{rmse_group_w}}" for s in levels)
    title_count = "  ".join(f"{'':>{count_w}}" for _ in levels)
    lines.append(f"{'':<{name_w}}   {title_rmse}   {title_count}".rstrip())
    lines.append(row("method", [("ours", "paper")] * len(levels),
                     ["found " + sizes[s] for s in levels]))
    lines.append(row("-" * name_w, [("-" * num_w, "-" * num_w)] * len(levels),
                     ["-" * count_w] * len(levels)))
    for name, per_level in results.items():
        lines.append(row(
            name,
            [(f"{per_level[s][0]:.4f}", f"{PAPER_TABLE_I[name][s]:.4f}") for s in levels],
            [_format_count(per_level[s][1], s) for s in levels],
        ))
    lines.append("")
    lines.append(
        "RMSE: root mean squared Euclidean error per centre, "
        "sqrt(mean_c ||m_hat_pi(c) - m_c||^2), after optimal (Hungarian) matching"
    )
    lines.append(
        "of estimated to true centres, averaged over the initialisations; "
        "'found': mean number of true outliers among the flagged points."
    )
    warning_line = _format_warnings(warning_counts)
    if warning_line:
        lines.append(warning_line)
    return "\n".join(lines) + "\n"


def run_demo(n_runs=100, data_seed=0, stream=None):
    """Reproduce Table I of the paper and print it.

    For the 40-outlier (N = 240) and the 80-outlier (N = 280) versions of
    the four-blob data set, every method is run once from each of ``n_runs``
    random initialisations (``init="random"``, ``n_init=1``,
    ``random_state=0, ..., n_runs - 1``), as the paper averages over 100
    algorithm initialisations. The methods are hard and soft (``fuzzifier=1.5``)
    K-means (``lam=inf``) and hard and soft robust K-means, unweighted
    (RKM) and weighted (WRKM), told the true number of outliers.

    Parameters
    ----------
    n_runs : int, default=100
        Number of initialisations per method and data set (``>= 1``).
    data_seed : int, default=0
        ``random_state`` of :func:`~robustclust.datasets.make_blobs_with_outliers`;
        the same seed draws both data sets (the 40-outlier set is the
        80-outlier set without its last 40 outliers).
    stream : file-like object, default=None
        Where the table is written; None means :data:`sys.stdout` at call
        time.

    Returns
    -------
    results : dict
        ``results[method][n_outliers] = (mean_rmse, mean_true_found)`` for
        every method name of :data:`METHODS` and ``n_outliers`` in
        :data:`OUTLIER_LEVELS`: the mean centre RMSE
        (:func:`~robustclust.metrics.center_rmse`) and the mean number of
        true outliers among the flagged points.

    Raises
    ------
    ValueError
        If ``n_runs`` is not a positive integer.

    Notes
    -----
    Warnings raised by individual fits (for instance
    :class:`~robustclust.OutlierCountWarning` when no lambda flags exactly
    the requested number of points) are not shown; their number is given
    in the footer of the table. The wall-clock time of the whole demo is
    printed on the last line.

    Examples
    --------
    >>> import io
    >>> from robustclust._reproduce.demo import run_demo
    >>> results = run_demo(n_runs=1, stream=io.StringIO())
    >>> sorted(results["soft WRKM"])
    [40, 80]
    """
    n_runs = _check_positive_int(n_runs, "n_runs")
    if stream is None:
        stream = sys.stdout
    start = time.perf_counter()
    results, warning_counts = _evaluate(n_runs, data_seed)
    elapsed = time.perf_counter() - start
    stream.write(_format_table(results, n_runs, data_seed, warning_counts))
    stream.write(f"Run time: {elapsed:.1f} s.\n")
    stream.flush()
    return results
