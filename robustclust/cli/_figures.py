"""Figures of the command line's ``--plot``: clusters, graphs and the lambda path.

Clusters are drawn with their outliers circled, graphs with their outliers as
diamonds.

matplotlib is optional (the ``plot`` extra) and imported only here, when a
figure is drawn; the figures are built without pyplot, so no display or
global state is involved.
"""

import numpy as np

#: Radius, in points, of the circle around the highest-scoring outlier.
MAX_CIRCLE_RADIUS = 18.0
#: Curves drawn at most in the outlier-norm panel of the path figure.
MAX_PATH_CURVES = 500
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


def cluster_figure(X, labels, scores, *, axis_names=None, title=""):
    """Scatter plot of the clusters, each outlier circled with radius proportional to its score.

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
    """
    view, names = plane_view(X)
    if axis_names is not None and np.asarray(X).shape[1] == 2:
        names = axis_names
    fig = _figure(figsize=(6.4, 5.2), layout="constrained")
    ax = fig.subplots()
    inlier = labels >= 0
    ax.scatter(view[inlier, 0], view[inlier, 1], c=labels[inlier] % 10, cmap="tab10",
               vmin=0, vmax=9, s=12, label="clustered rows")
    outlier = ~inlier
    if outlier.any():
        top = float(scores[outlier].max())
        radius = MAX_CIRCLE_RADIUS * scores[outlier] / top if top > 0 else 0 * scores[outlier]
        ax.scatter(view[outlier, 0], view[outlier, 1], c="0.4", marker="x", s=12)
        ax.scatter(view[outlier, 0], view[outlier, 1], s=radius**2, facecolors="none",
                   edgecolors="crimson", linewidths=0.9,
                   label="outliers (radius \N{PROPORTIONAL TO} score)")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=8)
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


def path_figure(path, *, title=""):
    """The paper's Figs. 2 and 3: ||o_n|| of each row and the outlier count versus lambda.

    Parameters
    ----------
    path : RegularizationPath
    title : str, default=""

    Returns
    -------
    figure : matplotlib.figure.Figure
    """
    fig = _figure(figsize=(11, 4.2), layout="constrained")
    curves, counts = fig.subplots(1, 2)
    peak = path.outlier_norms.max(axis=0)
    shown = np.flatnonzero(peak > 0)
    if len(shown) > MAX_PATH_CURVES:
        shown = shown[np.argsort(-peak[shown])[:MAX_PATH_CURVES]]
    curves.plot(path.lambdas, path.outlier_norms[:, shown], linewidth=0.7)
    note = f" ({MAX_PATH_CURVES} largest)" if (peak > 0).sum() > MAX_PATH_CURVES else ""
    curves.set_title(f"outlier norms of the rows{note}", fontsize=10)
    curves.set_xlabel("\N{GREEK SMALL LETTER LAMDA}")
    curves.set_ylabel("\N{DOUBLE VERTICAL LINE}o\N{DOUBLE VERTICAL LINE}")
    counts.step(path.lambdas, path.n_outliers, where="post")
    counts.set_title("number of outliers", fontsize=10)
    counts.set_xlabel("\N{GREEK SMALL LETTER LAMDA}")
    counts.set_ylabel("outliers")
    fig.suptitle(title, fontsize=10)
    return fig
