"""Figs. 4-5: kernel RKM and RPC with the Gaussian kernel on two rings with outliers.

The data set of :func:`robustclust.datasets.make_rings_with_outliers` (inner
ring 50 points, outer ring 150, 30 outliers between the rings and 30 outside,
N = 260).  KRKM (q = 1.1) is run from 10 kernel k-means++ starts; KRPC starts
from KRKM's partition (its memberships, the outliers included), because its
own restarts land in half-ring splits (see the text).  Both are asked for the
60 outliers, unweighted and weighted (the paper's Fig. 5 shows the weighted
versions), at the paper's bandwidth α = 0.2 and at a narrower one, α = 1.
"""

import numpy as np
from matplotlib.figure import Figure
from sklearn.metrics import adjusted_rand_score

from .. import KernelRobustGaussianMixture, KernelRobustKMeans, regularization_path
from ..datasets import make_rings_with_outliers
from ..plotting import plot_clusters
from ._report import Section, markdown_table, save_figure

TITLE = "Figs. 4-5: kernel RKM and RPC on two rings (Gaussian kernel)"

DATA_SEED = 0
N_OUTLIERS = 60
GAMMAS = (0.2, 1.0)
Q = 1.1


def _report_row(data, est):
    flagged = est.outlier_mask_
    inliers = ~data.outlier_mask & ~flagged
    ari = adjusted_rand_score(data.labels[inliers], est.labels_[inliers])
    outside = int(np.count_nonzero(flagged & (data.outlier_region == "outside")))
    between = int(np.count_nonzero(flagged & (data.outlier_region == "between")))
    return ari, int(flagged.sum()), outside, between, outside + between


def _fits(X, gamma, n_init):
    """KRKM, WKRKM, KRPC, WKRPC at one bandwidth, asked for N_OUTLIERS."""
    common = dict(kernel="rbf", kernel_params={"gamma": gamma}, n_outliers=N_OUTLIERS)
    # the paper's k-means++-type start, with which the reported numbers were measured
    krkm = KernelRobustKMeans(2, fuzzifier=Q, init="k-means++", n_init=n_init, random_state=0,
                              **common).fit(X)
    start = krkm.memberships_.argmax(axis=1)
    fits = {
        "KRKM": krkm,
        "WKRKM": KernelRobustKMeans(2, fuzzifier=Q, penalty="log", init=start, n_init=1,
                                    **common).fit(X),
        "KRPC": KernelRobustGaussianMixture(2, init=start, n_init=1, **common).fit(X),
        "WKRPC": KernelRobustGaussianMixture(2, init=start, penalty="log", n_init=1,
                                             **common).fit(X),
    }
    return fits


def run(out_dir, *, quick, data_home=None):
    """Fit the four kernel methods at both bandwidths, draw Figs. 4-5."""
    data = make_rings_with_outliers(n_outliers=N_OUTLIERS, random_state=DATA_SEED)
    X = data.X
    n_init = 10  # fewer starts miss the rings at alpha = 0.2 (ARI 0.37 with 3)
    rows, values, all_fits = [], {}, {}
    for gamma in GAMMAS:
        fits = _fits(X, gamma, n_init)
        all_fits[gamma] = fits
        for name, est in fits.items():
            ari, flagged, outside, between, caught = _report_row(data, est)
            rows.append([name, gamma, ari, flagged, f"{outside}/30", f"{between}/30",
                         f"{caught}/60"])
            values[f"{name} gamma={gamma}"] = {"ari": ari, "flagged": flagged,
                                               "outside": outside, "between": between}

    fig4 = Figure(figsize=(10, 3.6))
    n_lambdas = 40 if quick else 100
    for ax, (label, make) in zip(fig4.subplots(1, 2), [
            ("KRKM (q = 1.1)", lambda g: KernelRobustKMeans(2, kernel="rbf", kernel_params={"gamma": g}, fuzzifier=Q,
                                                            init="k-means++",
                                                            n_init=n_init, random_state=0)),
            ("KRPC", lambda g: KernelRobustGaussianMixture(
                2, kernel="rbf", kernel_params={"gamma": g},
                init=all_fits[g]["KRKM"].memberships_.argmax(axis=1), n_init=1))]):
        for i, gamma in enumerate(GAMMAS):
            path = regularization_path(make(gamma), X, n_lambdas=n_lambdas,
                                       lambda_min_ratio=0.6)
            keep = path.lambdas > 0
            ax.plot(path.lambdas[keep], path.n_outliers[keep], marker=".", color=f"C{i}",
                    label=f"α = {gamma}")
            span = path.lambda_range(N_OUTLIERS)
            values[f"{label} path gamma={gamma}"] = {"range": span}
        ax.axhline(N_OUTLIERS, color="C3", linestyle="--", linewidth=1.0, label="60 outliers")
        ax.set_xlabel("λ")
        ax.set_ylabel("number of outliers")
        ax.set_title(f"{label}: outliers against λ")
        ax.legend(fontsize="small")
    fig5 = Figure(figsize=(10, 9.5))
    for row_axes, gamma in zip(fig5.subplots(2, 2), GAMMAS):
        for ax, name in zip(row_axes, ["WKRKM", "WKRPC"]):
            plot_clusters(X, all_fits[gamma][name], ax=ax)
            ax.set_title(f"{name}, α = {gamma}: circles ∝ ‖o_n‖")
            ax.set_aspect("equal")
    figures = [save_figure(fig4, out_dir, "fig4_rings_outlier_counts.png"),
               save_figure(fig5, out_dir, "fig5_rings_outliers.png")]

    table = markdown_table(
        ["method", "α (gamma)", "ARI (inliers kept)", "flagged", "outside caught",
         "between caught", "true outliers caught"], rows, digits=3)
    best = max(values[f"{n} gamma=0.2"]["outside"] for n in ("KRKM", "WKRKM", "KRPC", "WKRPC"))
    body = f"""\
Data: `make_rings_with_outliers(random_state={DATA_SEED})`: rings of radius 1 and 4
(50 and 150 points, radial noise 0.15), 30 outliers uniform between radii 1.5 and
3.5 and 30 between 4.5 and 5.5. Kernel κ(x, y) = exp(−α‖x − y‖²). Every method is
asked for 60 outliers. KRKM: q = {Q}, best of {n_init} kernel k-means++ starts; the
weighted and the KRPC fits start from KRKM's partition. ARI is computed on the
points that are neither planted nor flagged outliers.

{table}
![Number of outliers against λ (Fig. 4)](fig4_rings_outlier_counts.png)

![Rings, outliers circled with radius ∝ ‖o_n‖ (Fig. 5)](fig5_rings_outliers.png)

**Where we differ from the paper.** The paper reports that KRKM and KRPC "are able to
identify the 60 outlying points"; we do not get all 60. Both rings are recovered
(ARI column), and at α = 0.2 the outliers outside the outer ring are caught
({best}/30 at best) but few of those between the rings: in the feature space of
such a wide kernel (bandwidth 1/√0.2 ≈ 2.2 against a ring width of 0.15) a point
between the rings is about as close to a ring's centroid as a point on a sparse
stretch of the ring itself. This is a property of the data and the kernel, not of
the search: with the true rings' own centroids, the 60 points farthest from
their nearest centroid at α = 0.2 include only 28 of the 30 outside points and 10
of the 30 between points (a test in `tests/test_kernel.py` checks this without
any of our solver code). A narrower kernel, α = 1, catches many more of the points
between the rings at the same ARI. The paper chose α⁻¹ as "a robust variance
estimate of the entire dataset" and does not give the value it obtained or its
exact outlier layout, so its data may have had wider gaps. We also found that
random restarts of KRPC alone land in half-ring splits (ARI about 0.2), which is
why KRPC starts from KRKM's partition.
"""
    return Section(key="rings", title=TITLE, body=body, values=values, figures=figures)
