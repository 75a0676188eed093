"""Table I: centre RMSE and outlier precision/recall on the four-blob data.

The paper's nine methods are those of :data:`robustclust._reproduce.demo.METHODS`
(run by :func:`robustclust._reproduce.demo.evaluate_methods`, as ``make demo`` does).
Two rows the paper lacks show what a user would try instead with
scikit-learn alone:

* ``HDBSCAN``: :class:`sklearn.cluster.HDBSCAN`, its noise points taken as
  the outliers and the centres as the means of the clusters it finds; it
  has no initialisation, so it runs once.  Two settings: the default
  (``min_cluster_size=5``) and ``cluster_selection_method="leaf"`` with
  ``min_cluster_size=10``, the setting that found four clusters on the
  40-outlier set.
* ``GMM + 1``: :class:`sklearn.mixture.GaussianMixture` with ``C + 1``
  full-covariance components, from the same initialisation seeds; the
  component with the largest covariance determinant (the broadest) is the
  outlier component, the means of the other ``C`` are the centres.
"""

import warnings

import numpy as np
from sklearn.cluster import HDBSCAN
from sklearn.mixture import GaussianMixture

from .demo import (
    _N_CLUSTERS,
    _N_INLIERS,
    _SOFT_Q,
    METHODS,
    OUTLIER_LEVELS,
    PAPER_TABLE_I,
    evaluate_methods,
)
from ..datasets import make_blobs_with_outliers
from ..metrics import center_rmse
from ._report import Section, comparison_table, markdown_table

TITLE = "Table I: centre RMSE on four Gaussian blobs with 40 or 80 outliers"

#: Initialisations per method (the paper's 100); quick mode uses fewer.
N_RUNS = 100
N_RUNS_QUICK = 10
DATA_SEED = 0

#: The scikit-learn rows: name -> HDBSCAN keyword arguments.
HDBSCAN_SETTINGS = {
    "HDBSCAN (default)": {"min_cluster_size": 5},
    "HDBSCAN (leaf, min_cluster_size=10)": {"min_cluster_size": 10,
                                             "cluster_selection_method": "leaf"},
}
GMM_ROW = "GMM + 1 component"

_ROBUST = [name for name, (_, _, robust) in METHODS.items() if robust]


def _hdbscan_row(X, true_centers, params):
    """RMSE (None if fewer than C clusters), number of clusters found, noise mask."""
    labels = HDBSCAN(copy=True, **params).fit(X).labels_
    n_found = int(labels.max()) + 1
    rmse = None
    if n_found >= len(true_centers):
        centers = np.array([X[labels == c].mean(axis=0) for c in range(n_found)])
        rmse = center_rmse(true_centers, centers)
    flagged = labels == -1
    return rmse, n_found, flagged


def _gmm_runs(X, true_centers, n_runs):
    """Centre RMSE and flagged mask of C + 1 component mixtures, one per seed."""
    rmse = np.empty(n_runs)
    flagged_runs = []
    for run in range(n_runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gmm = GaussianMixture(_N_CLUSTERS + 1, random_state=run).fit(X)
        broad = int(np.argmax(np.linalg.det(gmm.covariances_)))
        rmse[run] = center_rmse(true_centers, np.delete(gmm.means_, broad, axis=0))
        flagged_runs.append(gmm.predict(X) == broad)
    return rmse, flagged_runs


def _scores(flagged, outlier_mask):
    found = int(np.count_nonzero(flagged & outlier_mask))
    n_flagged = int(np.count_nonzero(flagged))
    precision = found / n_flagged if n_flagged else np.nan
    return found, n_flagged, precision, found / outlier_mask.sum()


def evaluate(n_runs):
    """All rows of the table: ``rows[name][level]`` = dict of means."""
    runs, warning_counts = evaluate_methods(n_runs, DATA_SEED)
    rows = {}
    for name, per_level in runs.items():
        rows[name] = {}
        for level, r in per_level.items():
            rows[name][level] = {
                "rmse": float(r["rmse"].mean()),
                "flagged": float(r["flagged"].mean()),
                "flagged_min": int(r["flagged"].min()),
                "inexact": int(np.count_nonzero(r["flagged"] != level)),
                "count_warnings": warning_counts[("OutlierCountWarning", name, level)],
                "flagged_max": int(r["flagged"].max()),
                "precision": (float(np.nanmean(r["precision"]))
                              if np.isfinite(r["precision"]).any() else None),
                "recall": float(r["recall"].mean()),
            }
    for level in OUTLIER_LEVELS:
        data = make_blobs_with_outliers(n_outliers=level, random_state=DATA_SEED)
        for name, params in HDBSCAN_SETTINGS.items():
            rmse, n_found, flagged = _hdbscan_row(data.X, data.centers, params)
            _, n_flagged, precision, recall = _scores(flagged, data.outlier_mask)
            rows.setdefault(name, {})[level] = {
                "rmse": rmse, "clusters": n_found, "flagged": float(n_flagged),
                "flagged_min": n_flagged, "flagged_max": n_flagged,
                "precision": None if np.isnan(precision) else precision, "recall": recall,
            }
        rmse, flagged_runs = _gmm_runs(data.X, data.centers, n_runs)
        scores = np.array([_scores(f, data.outlier_mask) for f in flagged_runs], dtype=float)
        rows.setdefault(GMM_ROW, {})[level] = {
            "rmse": float(rmse.mean()), "flagged": float(scores[:, 1].mean()),
            "flagged_min": int(scores[:, 1].min()), "flagged_max": int(scores[:, 1].max()),
            "precision": float(np.nanmean(scores[:, 2])), "recall": float(scores[:, 3].mean()),
        }
    return rows, warning_counts


def _level_name(level):
    return f"{level}/{_N_INLIERS + level}"


def _flagged_cell(row):
    if row["flagged_min"] == row["flagged_max"]:
        return str(row["flagged_min"])
    return f"{row['flagged']:.1f} ({row['flagged_min']}–{row['flagged_max']})"


def _oracle_rmse(level):
    """RMSE of the per-cluster means of the true inliers (the best a method can do)."""
    data = make_blobs_with_outliers(n_outliers=level, random_state=DATA_SEED)
    means = np.array([data.X[data.labels == c].mean(axis=0) for c in range(_N_CLUSTERS)])
    return center_rmse(data.centers, means)


def _inexact_sentence(inexact):
    misses = {name: count for name, count in inexact.items() if count}
    if not misses:
        return ""
    where = ", ".join(f"{name} {count}" for name, count in misses.items())
    return (f"The others ({where}) could not: along the λ path the count jumps over "
            "the target between neighbouring λ values, and the estimator then "
            "returns the nearest count with an `OutlierCountWarning`.")


def _yes_no(beats):
    failed = [name for name, ok in beats.items() if not ok]
    return "yes" if not failed else "no: " + ", ".join(failed) + " do not"


def _weighted_sentence(rows):
    """How much the log-penalty (weighted) versions change, ours against the paper's."""
    parts, hard = [], None
    for plain, weighted in (("hard RKM", "hard WRKM"), ("soft RKM", "soft WRKM"),
                            ("RPC", "WRPC")):
        ours = [rows[weighted][lv]["rmse"] / rows[plain][lv]["rmse"] for lv in OUTLIER_LEVELS]
        paper = [PAPER_TABLE_I[weighted][lv] / PAPER_TABLE_I[plain][lv] for lv in OUTLIER_LEVELS]
        hard = ours if hard is None else hard
        parts.append(f"{weighted}/{plain} {ours[0]:.2f} and {ours[1]:.2f} "
                     f"(paper {paper[0]:.2f} and {paper[1]:.2f})")
    return ("The weighted versions start from the unweighted solution and reweight the "
            "penalty (Sec. III-C); their RMSE relative to the unweighted ones, at 40 and 80 "
            "outliers: " + "; ".join(parts) + ". In the paper the weighted hard RKM changes "
            "almost nothing; " + ("in ours it lowers the RMSE too; the paper does not say "
                                  "how its hard WRKM was initialised, which may be the reason."
                                  if max(hard) < 0.9 else "nor does it in ours."))


def run(out_dir, *, quick, data_home=None):
    """Compute Table I and return its section (no figures)."""
    n_runs = N_RUNS_QUICK if quick else N_RUNS
    rows, warning_counts = evaluate(n_runs)
    levels = OUTLIER_LEVELS
    columns = [_level_name(level) for level in levels]
    ours = {name: {_level_name(lv): r[lv]["rmse"] for lv in levels} for name, r in rows.items()}
    paper = {name: {_level_name(lv): v for lv, v in per.items()}
             for name, per in PAPER_TABLE_I.items()}
    names = list(rows)
    rmse_table = comparison_table(names, columns, ours, paper)

    header = ["method"]
    for col in columns:
        header += [f"{col} flagged", f"{col} precision", f"{col} recall"]
    pr_rows = []
    for name in names:
        row = [name]
        for lv in levels:
            r = rows[name][lv]
            row += [_flagged_cell(r), r["precision"], r["recall"]]
        pr_rows.append(row)
    pr_table = markdown_table(header, pr_rows, digits=3)

    kmeans = rows["hard K-means"]
    beats = {name: all(rows[name][lv]["rmse"] < kmeans[lv]["rmse"] for lv in levels)
             for name in _ROBUST}
    inexact = {name: sum(rows[name][lv]["inexact"] for lv in levels) for name in _ROBUST}
    unwarned = {name: sum(max(rows[name][lv]["inexact"] - rows[name][lv]["count_warnings"], 0)
                          for lv in levels) for name in _ROBUST}
    n_robust_fits = len(_ROBUST) * len(levels) * n_runs
    checks = {
        "every robust method has a lower mean RMSE than hard K-means at 40 and 80 outliers":
            all(beats.values()),
        "every robust fit flags exactly the true number of outliers, or warns that no λ does":
            not any(unwarned.values()),
    }

    hd_clusters = "; ".join(
        f"{name}: " + " and ".join(f"{rows[name][lv]['clusters']}" for lv in levels)
        + " clusters" for name in HDBSCAN_SETTINGS)
    both = [name for name in HDBSCAN_SETTINGS for lv in levels
            if (rows[name][lv]["precision"] or 0) >= 0.9 and rows[name][lv]["recall"] >= 0.9]
    hd_sentence = ("no setting reaches both precision and recall of 0.9 at either level."
                   if not both else f"{', '.join(sorted(set(both)))} reaches 0.9 in both "
                   "at some level.")
    gmm_recall = rows[GMM_ROW][80]["recall"]
    gmm_sentence = ("does not isolate the outliers in that component: scattered outliers are "
                    "better explained by stretching several components, so the centres move "
                    "and the broadest component holds only some of the outliers."
                    if gmm_recall < 0.5 else "catches most outliers in its broad component.")
    diffs = {name: [ours[name][c] - paper[name][c] for c in columns] for name in PAPER_TABLE_I}
    lower = [name for name, d in diffs.items() if all(x < 0 for x in d)]
    higher = [name for name, d in diffs.items() if all(x > 0 for x in d)]
    oracle = [_oracle_rmse(lv) for lv in levels]
    below = [name for name in PAPER_TABLE_I
             if min(PAPER_TABLE_I[name].values()) < min(oracle)]
    oracle_sentence = (
        f"For scale: the means of the true inliers of each cluster, which no method can "
        f"beat on average, are at RMSE {oracle[0]:.4f} and {oracle[1]:.4f} from the true "
        f"centres here (the expected value is √(2·0.8/50) ≈ 0.179)"
        + (f"; the paper's {', '.join(below)} {'is' if len(below) == 1 else 'are'} below "
           "that, so its RMSE may have been defined differently (for instance without the "
           "square root, or per coordinate)." if below else "."))
    best = min(names, key=lambda n: rows[n][80]["rmse"] if rows[n][80]["rmse"] is not None
               else np.inf)
    body = f"""\
Data: `make_blobs_with_outliers(n_outliers=40 or 80, random_state={DATA_SEED})`, four
Gaussian clusters of 50 points with covariance 0.8 I and outliers spread around
them. Every method runs once from each of {n_runs} random initialisations
(`init="random"`, `n_init=1`, `random_state=0..{n_runs - 1}`); robust methods are told
the true number of outliers (λ is chosen along the warm-started path to flag
exactly that many); soft methods use q = {_SOFT_Q}; RPC and WRPC start from a robust
K-means fit with the same seed. RMSE is the root mean squared distance between
true and estimated centres after optimal matching, averaged over the runs.

{rmse_table}
Outlier detection (means over the runs; precision is undefined, –, when a
method flags nothing):

{pr_table}
**Where we differ from the paper.** The paper does not give the means of its
clusters or how its outliers were drawn, so the data set is ours, calibrated
only so that plain hard K-means lands near the paper's numbers (averaged over 20
data seeds it gives 0.733 and 1.058; single seeds give 0.61-0.88 and 0.90-1.23,
and this report uses one). The paper's ranking holds: every robust method has
a lower RMSE than hard K-means ({_yes_no(beats)}), and {best} has the lowest RMSE
of all at 80 outliers. Ours is lower than the paper's on both sets for
{', '.join(lower) or 'no method'}, higher on both for {', '.join(higher) or 'no method'},
and mixed for the rest. {_weighted_sentence(rows)}
{oracle_sentence}
{n_robust_fits - sum(inexact.values())} of the {n_robust_fits} robust fits flag exactly the true
number of outliers. {_inexact_sentence(inexact)}

**The scikit-learn rows.** HDBSCAN needs no number of clusters but, on these
overlapping blobs, merges or splits them (at 40 and 80 outliers, {hd_clusters}); where it finds fewer
than four clusters no RMSE can be computed (–), and where it finds more, the
RMSE uses the four best-matching ones, which flatters it. Its noise points serve
as its outliers: {hd_sentence} A Gaussian mixture with one extra component (mean
recall {gmm_recall:.2f} at 80 outliers) {gmm_sentence}
"""
    values = {"n_runs": n_runs, "rows": {name: {str(lv): r for lv, r in per.items()}
                                        for name, per in rows.items()}}
    return Section(key="table1", title=TITLE, body=body, checks=checks, values=values)
