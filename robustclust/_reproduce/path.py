"""Figs. 2-3: outlier norms and outlier counts along the λ path, and the path's cost.

On the 80-outlier blob set, :func:`robustclust.regularization_path` solves
hard RKM (q = 1), soft RKM (q = 1.5) and RPC (σ²I) on a geometric grid of λ
from λ_max down to λ_max / 100, each grid point warm-started from the
previous one.  The section reports λ_max, the λ range that flags exactly the
80 planted outliers (the paper: [6.2, 7.6] for RKM, 0.91 for RPC), and how
long the whole path takes against one cold fit (the paper: "comparable").
"""

import time

import numpy as np
from matplotlib.figure import Figure

from .. import RobustGaussianMixture, RobustKMeans, regularization_path
from ..datasets import make_blobs_with_outliers
from ..plotting import plot_outlier_count_path, plot_outlier_norms_path
from ._report import Section, markdown_table, save_figure

TITLE = "Figs. 2-3: outlier norms and counts against λ, and the cost of the path"

N_OUTLIERS = 80
DATA_SEED = 0
#: Grid sizes: the paper's "at most 1,000 values" and a coarser one.
N_LAMBDAS = (100, 1000)
N_LAMBDAS_QUICK = (100,)
LAMBDA_MIN_RATIO = 1e-2
REPEATS = 3

#: name -> unfitted estimator (random initialisation, as in the paper's Fig. 2).
def _models():
    return {
        "RKM (q = 1)": RobustKMeans(4, fuzzifier=1.0, init="random", n_init=1, random_state=0),
        "RKM (q = 1.5)": RobustKMeans(4, fuzzifier=1.5, init="random", n_init=1, random_state=0),
        "RPC": RobustGaussianMixture(4, covariance_type="tied_spherical", init="robust-kmeans",
                                     n_init=1, random_state=0),
    }

#: The paper's numbers (Sec. VI-A): λ_max and the λ range giving 80 outliers.
PAPER = {
    "RKM (q = 1)": {"lambda_max": 17.0, "range": (6.2, 7.6)},
    "RKM (q = 1.5)": {"lambda_max": None, "range": None},
    "RPC": {"lambda_max": None, "range": (0.91, 0.91)},
}


def _median_time(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def _nearest_counts(path, target):
    """(count just below target, its largest λ), (count just above, its smallest λ)."""
    counts, lambdas = np.asarray(path.n_outliers), np.asarray(path.lambdas)
    below = counts < target
    above = counts > target
    low = (int(counts[below].max()), float(lambdas[below][counts[below] == counts[below].max()].min())) \
        if below.any() else None
    high = (int(counts[above].min()), float(lambdas[above][counts[above] == counts[above].min()].max())) \
        if above.any() else None
    return low, high


def _range_text(span):
    if span is None:
        return "none"
    low, high = span
    return f"{low:.3g}" if np.isclose(low, high) else f"[{low:.3g}, {high:.3g}]"


def _exact_sentence(values):
    hit = [name for name, v in values.items() if v["range"] is not None]
    miss = [name for name, v in values.items() if v["range"] is None]
    text = (f"On this grid {', '.join(hit)} flag{'s' if len(hit) == 1 else ''} exactly "
            f"{N_OUTLIERS} on some range of λ" if hit else
            f"On this grid no method flags exactly {N_OUTLIERS}")
    if miss:
        text += f"; {', '.join(miss)} jump{'s' if len(miss) == 1 else ''} over it"
    return text + "."


def run(out_dir, *, quick, data_home=None):
    """Compute the paths, draw Figs. 2-3, time the path against one fit."""
    data = make_blobs_with_outliers(n_outliers=N_OUTLIERS, random_state=DATA_SEED)
    X, truth = data.X, data.outlier_mask
    grids = N_LAMBDAS_QUICK if quick else N_LAMBDAS
    repeats = 1 if quick else REPEATS
    fine = max(grids)

    rows, cost_rows, values, paths = [], [], {}, {}
    for name, model in _models().items():
        per_grid = {}
        for n_lambdas in grids:
            seconds, path = _median_time(
                lambda: regularization_path(model, X, n_lambdas=n_lambdas,
                                            lambda_min_ratio=LAMBDA_MIN_RATIO), repeats)
            per_grid[n_lambdas] = (seconds, path)
        path = per_grid[fine][1]
        paths[name] = path
        span = path.lambda_range(N_OUTLIERS)
        if span is not None:
            g = int(np.flatnonzero(path.n_outliers == N_OUTLIERS)[0])
            flagged = path.outlier_norms[g] > 0
            precision = float(np.count_nonzero(flagged & truth) / N_OUTLIERS)
            lam_fit = float(np.mean(span))
            near = ""
        else:
            precision = None
            low, high = _nearest_counts(path, N_OUTLIERS)
            near = (f"{low[0]} at λ = {low[1]:.3g}, {high[0]} at λ = {high[1]:.3g}"
                    if low and high else "")
            lam_fit = float(path.lambdas[len(path.lambdas) // 2])
        paper = PAPER[name]
        rows.append([name, path.lambda_max, paper["lambda_max"], _range_text(span),
                     "–" if paper["range"] is None else _range_text(paper["range"]),
                     near or "–", precision])
        fit_seconds, fitted = _median_time(
            lambda: model.set_params(lam=lam_fit).fit(X), repeats)
        model.set_params(lam=None)
        for n_lambdas, (seconds, grid_path) in per_grid.items():
            cost_rows.append([name, n_lambdas, seconds, fit_seconds, seconds / fit_seconds,
                              int(grid_path.n_iter.sum()), int(fitted.n_iter_),
                              float(grid_path.n_iter.sum() / n_lambdas)])
        values[name] = {"lambda_max": path.lambda_max, "range": span,
                        "precision_at_target": precision,
                        "path_seconds": {str(k): v[0] for k, v in per_grid.items()},
                        "fit_seconds": fit_seconds}

    fig2 = Figure(figsize=(10, 3.6))
    for ax, name in zip(fig2.subplots(1, 2), ["RKM (q = 1)", "RPC"]):
        plot_outlier_norms_path(paths[name], ax=ax, highlight=truth)
        ax.set_title(name)
    fig2.suptitle("‖o_n‖ against λ, planted outliers in colour (Fig. 2)")
    fig3 = Figure(figsize=(14, 3.6))
    for ax, (name, path) in zip(fig3.subplots(1, 3), paths.items()):
        plot_outlier_count_path(path, ax=ax, target=N_OUTLIERS)
        ax.set_title(name)
    fig3.suptitle("Number of outliers against λ (Fig. 3)")
    figures = [save_figure(fig2, out_dir, "fig2_outlier_norms.png"),
               save_figure(fig3, out_dir, "fig3_outlier_counts.png")]

    table = markdown_table(
        ["method", "λ_max ours", "λ_max paper", f"λ giving {N_OUTLIERS} ours",
         f"λ giving {N_OUTLIERS} paper", "nearest counts (no exact λ)",
         f"precision at {N_OUTLIERS}"], rows, digits=3)
    cost = markdown_table(
        ["method", "grid values", "path s", "one fit s", "path / fit", "path iterations",
         "one fit iterations", "iterations per grid value"], cost_rows, digits=3)
    rkm = values["RKM (q = 1)"]
    checks = {
        f"soft RKM flags exactly {N_OUTLIERS} somewhere on the path":
            values["RKM (q = 1.5)"]["range"] is not None,
    }
    body = f"""\
Data: the 80-outlier set of Table I (N = 280). Grid: {fine} values spaced
geometrically from λ_max (the smallest λ at which nothing is flagged, from the
K-means start) down to λ_max/{1 / LAMBDA_MIN_RATIO:.0f}; every grid value is solved from the
solution at the previous one. Random initialisation, seed 0.

![Outlier norms against λ (Fig. 2)](fig2_outlier_norms.png)

![Number of outliers against λ (Fig. 3)](fig3_outlier_counts.png)

{table}
**Where we differ from the paper.** λ scales with the distances in the data, and
our data set is not the paper's (its means and outlier law are not given), so
λ_max and the ranges differ in value (ours: λ_max = {rkm['lambda_max']:.3g} for hard RKM,
the paper's about 17). The paper's hard RKM has a plateau of λ on which exactly 80
are flagged; {'ours has one too' if rkm['range'] else 'ours has none: the count jumps over 80 (column "nearest counts")'}.
In our data the outliers are drawn no closer than 3.25 to a mean, about 3.6
cluster standard deviations, so the farthest inliers and the nearest outliers
overlap in distance and no λ separates them cleanly. Asked for exactly 80
(`n_outliers=80`), the estimator bisects λ between grid values and restarts from
every initialisation (Table I counts how often it still cannot reach 80).
{_exact_sentence(values)}

**Cost of the path.** Medians of {repeats} runs: the whole warm-started path against
one cold fit at a λ inside the 80-range (or mid-grid when there is none):

{cost}
The paper says the path over its grid "was computed in an amount of time
comparable to the one used for solving for a specific value of λ". We do not see
that on a grid this fine: each grid value costs at least one iteration, and a
cold fit needs only a few tens of iterations, so the path costs tens to hundreds
of single fits. What warm starts buy is fewer iterations per grid value (last
column) than a cold fit needs.
"""
    return Section(key="path", title=TITLE, body=body, checks=checks, values=values,
                   figures=figures)
