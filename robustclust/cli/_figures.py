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
#: Nodes ranked by name in the path figure of a graph.
GRAPH_RANKED = 20
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


def plane_view(X, inliers=None):
    """(2-D coordinates, axis names) of the rows of X for a scatter plot.

    Two columns are shown as they are; more are projected on their first
    two principal components, fitted on the ``inliers`` (so the outliers do
    not choose the view; all rows when fewer than three), the axis names
    giving each component's share of that variance; a single column is
    drawn against the row number.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] == 2:
        return X, ("column 1", "column 2")
    if X.shape[1] == 1:
        return np.column_stack([np.arange(1, len(X) + 1), X[:, 0]]), ("row", "value")
    from sklearn.decomposition import PCA

    basis = X if inliers is None or np.count_nonzero(inliers) < 3 else X[inliers]
    pca = PCA(n_components=2).fit(basis)
    whose = "inlier" if basis is not X else "total"
    share = pca.explained_variance_ratio_
    return pca.transform(X), tuple(f"principal component {k + 1} ({share[k]:.0%} of {whose} "
                                   "variance)" for k in range(2))


def nearest_centre_distances(X, labels):
    """(cluster, distance) of every row to the mean of its cluster's inliers, in all
    the columns; outliers take the nearest such mean."""
    X = np.asarray(X, dtype=np.float64)
    clusters = np.unique(labels[labels >= 0])
    if len(clusters) == 0:
        return np.zeros(len(X), dtype=int), np.zeros(len(X))
    means = np.stack([X[labels == c].mean(axis=0) for c in clusters])
    d2 = ((X[:, None, :] - means[None, :, :]) ** 2).sum(axis=2) if len(X) * len(clusters) \
        * X.shape[1] <= 50_000_000 else None
    if d2 is None:  # large data: one cluster at a time
        d2 = np.stack([((X - m) ** 2).sum(axis=1) for m in means], axis=1)
    nearest = np.where(labels >= 0, np.searchsorted(clusters, np.maximum(labels, 0)),
                       d2.argmin(axis=1))
    return clusters[nearest], np.sqrt(d2[np.arange(len(X)), nearest])


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

    labels = np.asarray(labels)
    view, names = plane_view(X, labels >= 0)
    if axis_names is not None and np.asarray(X).shape[1] == 2:
        names = axis_names
    projected = np.asarray(X).shape[1] > 2
    if projected:
        fig = _figure(figsize=(10.4, 5.2), layout="constrained")
        ax, strip = fig.subplots(1, 2, width_ratios=(1.4, 1))
    else:
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
    if projected:
        fig.suptitle(title, fontsize=10)
        ax.set_title(f"a 2-D projection of {np.asarray(X).shape[1]} columns: an outlier\n"
                     "drawn inside a cluster is far from it in the others", fontsize=9)
        _distance_strip(strip, X, labels, colors)
    fig.legend(loc="outside right upper", fontsize=8, markerscale=1.5)
    return fig


def _distance_strip(ax, X, labels, colors):
    """Each row's distance to its cluster's mean in all the columns, by cluster: what a
    projection hides (gid ``"distances"``: the inliers; ``"outlier-distances"``)."""
    cluster, dist = nearest_centre_distances(X, labels)
    jitter = np.random.default_rng(0).uniform(-0.3, 0.3, size=len(dist))
    inlier = labels >= 0
    ax.scatter(cluster[inlier] + jitter[inlier], dist[inlier], s=8, linewidths=0,
               color=[colors[c] for c in cluster[inlier]], gid="distances")
    if (~inlier).any():
        ax.scatter(cluster[~inlier] + jitter[~inlier], dist[~inlier], c="crimson",
                   marker="x", s=18, linewidths=0.9, gid="outlier-distances")
    ax.set_xticks(np.unique(cluster))
    ax.set_xlabel("cluster (an outlier: the nearest)")
    ax.set_ylabel("distance to the cluster's mean, all columns")
    ax.set_title("the same rows by their distance in all the columns\n(outliers: red crosses)",
                 fontsize=9)


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
    if noun == "node":
        # on a graph every node turns into an outlier within a few percent of
        # lambda_max and their curves lie on top of one another: rank the nodes
        _entry_ranking(curves, path, labels)
        plot_outlier_count_path(path, counts)
        from matplotlib.ticker import FormatStrFormatter

        shown = active_range(path)
        if shown is not None:
            counts.set_xlim(*shown)
        for axis_format in (counts.xaxis.set_major_formatter, counts.xaxis.set_minor_formatter):
            axis_format(FormatStrFormatter("%g"))
        counts.set_title("number of outliers", fontsize=10)
        fig.suptitle(title, fontsize=10)
        return fig
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


def entry_lambdas(path):
    """The largest grid lambda at which each row is flagged (0 where it never is)."""
    norms = np.asarray(path.outlier_norms)
    lams = np.asarray(path.lambdas, dtype=np.float64)
    flagged = norms > 0
    first = flagged.argmax(axis=0)
    return np.where(flagged.any(axis=0), lams[first], 0.0)


def _entry_ranking(ax, path, labels, limit=GRAPH_RANKED):
    """The rows flagged first, by the lambda at which each is first flagged (gid
    ``"entry-lambdas"``), named on the y axis."""
    entry = entry_lambdas(path)
    order = np.lexsort((np.arange(len(entry)), -entry))[:limit]
    order = order[entry[order] > 0]
    names = [str(labels[i]) if labels is not None else str(i + 1) for i in order]
    y = np.arange(len(order))[::-1]
    ax.scatter(entry[order], y, color="crimson", s=18, gid="entry-lambdas")
    ax.hlines(y, entry[order].min() if len(order) else 0, entry[order], color="0.8",
              linewidth=0.8)
    ax.set_yticks(y, names, fontsize=7)
    ax.set_xlabel("\N{GREEK SMALL LETTER LAMDA} at which the node is first flagged")
    ax.set_title(f"the {len(order)} nodes flagged first (largest \N{GREEK SMALL LETTER LAMDA})",
                 fontsize=10)


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
