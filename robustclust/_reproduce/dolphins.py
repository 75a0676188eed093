"""Fig. 7: the dolphins' social network (Sec. VI-C).

Kernel robust K-means on the graph kernel, C = 4 clusters, s = 12 outliers,
spectral initialisation; the flagged dolphins with their degrees beside the
ones the paper names, and the network drawing.
"""

from matplotlib.figure import Figure

from ..datasets import load_dolphins
from ..plotting import plot_graph
from ._graphs import N_INIT, fit_krkm, load, ranked_outliers, simple_name
from ._report import Section, markdown_table, save_figure

TITLE = "Fig. 7: dolphins' social network"

N_CLUSTERS = 4
N_OUTLIERS = 12
#: Dolphins the paper names as outliers (with the degrees it gives), and the
#: degree-1 dolphin it names as not flagged.
PAPER_FLAGGED = {"sn89": 2, "sn100": 7, "tr99": 7, "kringel": 9}
PAPER_NOT_FLAGGED = ("zig",)


def run(out_dir, *, quick, data_home=None):
    """Fit KRKM on the dolphins, list the outliers, draw the network."""
    data = load(load_dolphins, data_home)
    names = list(data.node_names)
    degrees = dict(zip(names, data.degrees.tolist()))
    _, model = fit_krkm(data.graph, N_CLUSTERS, N_OUTLIERS)
    flagged, index = ranked_outliers(model, names)
    flagged_simple = {simple_name(n) for n in flagged}
    rows = [[rank + 1, name, degrees[name], model.outlier_norms_[i],
             "yes" if simple_name(name) in PAPER_FLAGGED else "–"]
            for rank, (name, i) in enumerate(zip(flagged, index))]
    table = markdown_table(["rank", "dolphin", "degree", "‖o_n‖", "named by the paper"],
                           rows, digits=3, align="rlrrr")
    named_rows = []
    for name in list(PAPER_FLAGGED) + list(PAPER_NOT_FLAGGED):
        ours_name = next(n for n in names if simple_name(n) == name)
        paper_says = "flagged" if name in PAPER_FLAGGED else "not flagged"
        named_rows.append([ours_name, degrees[ours_name], paper_says,
                           "flagged" if name in flagged_simple else "not flagged"])
    named = markdown_table(["dolphin", "degree", "paper", "ours"], named_rows,
                           align="lrll")
    degree_one = [n for n in flagged if degrees[n] == 1]
    agree = sum((r[2] == r[3]) for r in named_rows)
    missed = [r[0] for r in named_rows if r[2] == "flagged" and r[3] != "flagged"]

    fig = Figure(figsize=(10, 8.5))
    ax = fig.add_subplot()
    plot_graph(data.graph, model.labels_, outlier_scores=model.outlier_norms_, ax=ax)
    ax.set_title(f"KRKM on the dolphins (C = {N_CLUSTERS}, {N_OUTLIERS} outliers in bold, "
                 "red diamonds)")
    figures = [save_figure(fig, out_dir, "fig7_dolphins.png")]

    checks = {f"exactly {N_OUTLIERS} dolphins flagged": len(flagged) == N_OUTLIERS,
              "zig is not flagged": "zig" not in flagged_simple}
    values = {"outliers": flagged, "degree_one": degree_one, "agree_named": agree,
              "missed": missed}
    gap = ("" if not missed else
           f"\n**Where we differ from the paper.** We do not flag {', '.join(missed)}. "
           + GAP_EXPLANATION + "\n")
    body = f"""\
Kernel and initialisation as for the football network: K = νI + D^(-1/2) E D^(-1/2),
KRKM (q = 1) from the Laplacian spectral start (best of {N_INIT} restarts of its
k-means step, seed 0), λ tuned to flag exactly {N_OUTLIERS} dolphins. The flagged dolphins, largest
‖o_n‖ first ({len(degree_one)} of them have a single link, as the paper observes):

{table}
The dolphins the paper discusses by name ({agree} of {len(named_rows)} agree):

{named}{gap}
![Dolphins network, outliers highlighted (Fig. 7)](fig7_dolphins.png)
"""
    return Section(key="dolphins", title=TITLE, body=body, checks=checks, values=values,
                   figures=figures)


#: Why the dolphins the paper names may be missed (filled in from the
#: investigation of the difference; see the module's tests).
GAP_EXPLANATION = (
    "The outlier set depends on the start: with 62 nodes, local minima of nearly "
    "equal cost flag different dolphins. A start from scikit-learn's "
    "SpectralClustering on the kernel (which normalises the already normalised "
    "adjacency a second time) instead of the paper's Laplacian start missed SN100 "
    "and Kringel at a penalised cost within 0.1% of this one."
)
