"""Figures of the command line's ``--plot``: clusters, graphs and the lambda path.

Clusters are drawn in the colours of :func:`robustclust.plotting.cluster_colors`
by label (no red: red is kept for the outliers), one legend entry per cluster, the
legend outside the axes so that it covers no point; outliers are crossed and
circled, the circle's radius proportional to the score but never below
:data:`MIN_CIRCLE_RADIUS` points, so that every outlier's circle shows.
Graphs are drawn with their outliers as red diamonds.  The path figure draws
the curves of the rows that become outliers first in colour (at most
:data:`PATH_HIGHLIGHTS`) and every other curve light grey, on a log lambda
axis.

matplotlib is optional (the ``plot`` extra) and imported only here, when a
figure is drawn; the figures are built without pyplot, so no display or
global state is involved.
"""

import numpy as np

#: Radius, in points, of the circle around the highest-scoring outlier.
MAX_CIRCLE_RADIUS = 18.0
#: Smallest circle radius, in points (an outlier with a tiny score stays visible).
MIN_CIRCLE_RADIUS = 4.0
#: Clusters named one by one in the legend at most.
LEGEND_CLUSTERS = 12
#: Curves coloured in the outlier-norm panel of the path figure at most.
PATH_HIGHLIGHTS = 10
#: Graphs with more nodes are drawn without node names (they would overlap).
MAX_NAMED_NODES = 200


def check_available():
    """Raise ImportError with an installation hint unless matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'robustclust[plot]'") from None


def _figure(**kwargs):
    check_available()
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def plane_view(X):
    """(2-D coordinates, axis names) of the rows of X for a scatter plot.

    Two columns are shown as they are; more are projected on their first
    two principal components; a single column is drawn against the row
    number.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] == 2:
        return X, ("column 1", "column 2")
    if X.shape[1] == 1:
        return np.column_stack([np.arange(1, len(X) + 1), X[:, 0]]), ("row", "value")
    from sklearn.decomposition import PCA

    return PCA(n_components=2).fit_transform(X), ("principal component 1",
                                                    "principal component 2")


def circle_radii(scores):
    """Circle radii in points: proportional to the score, at least MIN_CIRCLE_RADIUS."""
    scores = np.asarray(scores, dtype=np.float64)
    top = float(scores.max()) if scores.size else 0.0
    radius = MAX_CIRCLE_RADIUS * scores / top if top > 0 else np.zeros_like(scores)
    return np.maximum(radius, MIN_CIRCLE_RADIUS)


def cluster_figure(X, labels, scores, *, axis_names=None, title=""):
    """Scatter plot of the clusters, each outlier crossed and circled by its score.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data as the estimator saw it.
    labels : ndarray of shape (n_samples,)
        Cluster index, -1 for outliers.
    scores : ndarray of shape (n_samples,)
        Outlier scores (0 for inliers).
    axis_names : tuple of str, default=None
        Axis labels when X has two columns (its column names).
    title : str, default=""

    Returns
    -------
    figure : matplotlib.figure.Figure
        One axes: a PathCollection per cluster (gid ``"cluster-<c>"``), then
        the outliers' crosses (gid ``"outliers"``) and circles (gid
        ``"outlier-circles"``, sizes = radius²).
    """
    from ..plotting import cluster_colors

    view, names = plane_view(X)
    if axis_names is not None and np.asarray(X).shape[1] == 2:
        names = axis_names
    labels = np.asarray(labels)
    fig = _figure(figsize=(6.4, 5.2), layout="constrained")
    ax = fig.subplots()
    clusters = np.unique(labels[labels >= 0])
    colors = cluster_colors(int(labels.max()) + 1 if len(clusters) else 1)
    for c in clusters:
        members, color = labels == c, colors[c]
        named = len(clusters) <= LEGEND_CLUSTERS or c < LEGEND_CLUSTERS - 1
        ax.scatter(view[members, 0], view[members, 1], color=color, s=12, linewidths=0,
                   gid=f"cluster-{c}", label=f"cluster {c} ({members.sum()})" if named
                   else None)
    if len(clusters) > LEGEND_CLUSTERS:
        ax.plot([], [], " ", label=f"... {len(clusters) - LEGEND_CLUSTERS + 1} more clusters")
    outlier = labels < 0
    if outlier.any():
        ax.scatter(view[outlier, 0], view[outlier, 1], c="0.25", marker="x", s=14,
                   linewidths=0.8, gid="outliers")
        ax.scatter(view[outlier, 0], view[outlier, 1], s=circle_radii(scores[outlier]) ** 2,
                   facecolors="none", edgecolors="crimson", linewidths=0.9,
                   gid="outlier-circles",
                   label=f"outliers ({outlier.sum()}), radius \N{PROPORTIONAL TO} score")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(title, fontsize=10)
    fig.legend(loc="outside right upper", fontsize=8, markerscale=1.5)
    return fig


def graph_figure(graph, labels, scores, *, title=""):
    """The network, nodes coloured by cluster, outliers as red diamonds sized by score.

    :func:`robustclust.plotting.plot_graph` with its spring layout (seed 0,
    so the same picture every run); node names are written for graphs of
    up to :data:`MAX_NAMED_NODES` nodes.

    Parameters
    ----------
    graph : networkx.Graph
    labels : ndarray of shape (n_nodes,)
        Cluster of each node in ``graph.nodes`` order, -1 for outliers.
    scores : ndarray of shape (n_nodes,)
        Outlier scores (0 for inliers).
    title : str, default=""

    Returns
    -------
    figure : matplotlib.figure.Figure
    """
    fig = _figure(figsize=(7.2, 6.4), layout="constrained")
    from ..plotting import plot_graph

    ax = plot_graph(graph, labels, outlier_scores=scores, ax=fig.subplots(),
                    node_names=graph.number_of_nodes() <= MAX_NAMED_NODES)
    ax.set_title(title, fontsize=10)
    return fig


def first_outliers(path, limit=PATH_HIGHLIGHTS):
    """Indices of the rows flagged earliest on the path (largest lambda first), at most ``limit``.

    Ties (rows flagged at the same grid value) go by their outlier norm
    there, largest first.
    """
    norms = np.asarray(path.outlier_norms)
    flagged = norms > 0
    ever = np.flatnonzero(flagged.any(axis=0))
    if len(ever) == 0:
        return ever
    first = flagged[:, ever].argmax(axis=0)  # grid index where each row is first flagged
    size = norms[first, ever]
    order = np.lexsort((-size, first))
    return ever[order][:limit]


def path_figure(path, *, title="", labels=None, noun="row"):
    """The paper's Figs. 2 and 3: ||o_n|| of each row and the outlier count versus lambda.

    Parameters
    ----------
    path : RegularizationPath
    title : str, default=""
    labels : sequence, default=None
        Names of the rows (node names); None numbers them from 1.
    noun : str, default="row"

    Returns
    -------
    figure : matplotlib.figure.Figure
        Two axes: the curves (grey LineCollection gid ``"inliers"``, coloured
        one ``"outliers"``, as drawn by
        :func:`robustclust.plotting.plot_outlier_norms_path`) and the counts.
    """
    from ..plotting import plot_outlier_count_path, plot_outlier_norms_path

    fig = _figure(figsize=(11, 4.2), layout="constrained")
    curves, counts = fig.subplots(1, 2)
    highlight = first_outliers(path)
    plot_outlier_norms_path(path, curves, highlight=highlight, linewidth=0.8)
    colored = next(c for c in curves.collections if c.get_gid() == "outliers")
    color_of = dict(zip(np.sort(highlight), colored.get_colors()))  # drawn in row order
    for i in highlight:
        name = str(labels[i]) if labels is not None else str(i + 1)
        curves.plot([], [], color=color_of[i], label=f"{noun} {name}")
    if len(highlight):
        fig.legend(fontsize=7, title=f"first {len(highlight)}\nto be flagged",
                   title_fontsize=7, loc="outside right upper")
    curves.set_title(f"outlier norms of the {noun}s (grey: flagged later)", fontsize=10)
    curves.set_xlabel("\N{GREEK SMALL LETTER LAMDA}")
    curves.set_ylabel("\N{DOUBLE VERTICAL LINE}o\N{DOUBLE VERTICAL LINE}")
    plot_outlier_count_path(path, counts)
    what = "number of outliers"
    shown = active_range(path)
    if shown is not None:
        _zoom(curves, counts, path, shown)
        what += (f" (all {int(np.max(path.n_outliers))} below "
                 f"\N{GREEK SMALL LETTER LAMDA} = {shown[0]:.3g})")
    counts.set_title(what, fontsize=10)
    fig.suptitle(title, fontsize=10)
    return fig


def active_range(path, margin=1.5, least_cut=3.0):
    """(low, high) lambda limits around where the count changes, or None for the whole grid.

    The plot stops a factor ``margin`` below the largest lambda at which
    the count reaches its maximum (below it the curves are flat), when that
    leaves out more than a factor ``least_cut`` of the grid.
    """
    lams, counts = np.asarray(path.lambdas), np.asarray(path.n_outliers)
    positive = lams > 0
    if positive.sum() < 2:
        return None
    lams, counts = lams[positive], counts[positive]
    full = int(np.argmax(counts == counts.max()))
    low = lams[full] / margin
    if low <= least_cut * lams[-1]:
        return None
    return low, lams[0] * 1.1


def _zoom(curves, counts, path, shown):
    """Both panels on ``shown`` (log axis, plain tick labels); y fitted to what shows."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    low, high = shown
    inside = (np.asarray(path.lambdas) >= low) & (np.asarray(path.lambdas) <= high)
    top = float(np.asarray(path.outlier_norms)[inside].max()) if inside.any() else 1.0
    curves.set_ylim(-0.03 * top, 1.05 * top if top > 0 else 1.0)
    for ax in (curves, counts):
        ax.set_xlim(low, high)
        if high / low < 30:
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1, 1.2, 1.5, 2, 3, 4, 5, 7)))
            ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.xaxis.set_minor_formatter(NullFormatter())
