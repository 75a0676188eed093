"""Plots of fitted robust clusterings and regularization paths (the paper's figures).

===============================  ==============================================
:func:`plot_outlier_norms_path`  ‖o_n‖ of every point against λ (Fig. 2)
:func:`plot_outlier_count_path`  number of outliers against λ (Figs. 3, 4)
:func:`plot_clusters`            2-D scatter, outliers circled, radius ∝ ‖o_n‖
                                 (Figs. 1, 5)
:func:`plot_image_mosaic`        images on a grid, in reading order (Fig. 6)
:func:`plot_centroids_and_outliers`  centroids, and outliers ranked by ‖o_n‖
                                 (Fig. 6)
:func:`plot_kernel_matrix`       kernel matrix permuted by cluster, outliers
                                 last (Fig. 8)
:func:`plot_graph`               network drawing, outliers highlighted
                                 (Figs. 7, 9)
===============================  ==============================================

Every function takes an optional ``ax`` (a :class:`matplotlib.axes.Axes`) and
draws only there, returning it (:func:`plot_centroids_and_outliers`, which
draws two panels, takes ``axes`` and returns the Figure).

Headless use. No function calls ``plt.show()``, chooses a backend or changes
``rcParams``. When ``ax`` is given, :mod:`matplotlib.pyplot` is not even
imported, so axes from a plain ``matplotlib.figure.Figure()`` keep everything
outside pyplot's global state (the way to draw many figures in a script or a
server). When ``ax`` is None, the function makes one new figure with
``plt.subplots`` so that ``plt.show()`` and notebooks display it; pyplot then
uses matplotlib's default backend, which is Agg on a machine without a
display. Close such figures (``plt.close(ax.figure)``) when making many.

matplotlib is an optional dependency: ``pip install "robustclust[plot]"``.
"""

import numpy as np

try:
    import matplotlib
    from matplotlib.collections import LineCollection
    from matplotlib.colors import ListedColormap, to_rgba_array
    from matplotlib.patches import Circle, Rectangle
except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
    raise ImportError(
        "robustclust.plotting needs matplotlib; install it with "
        '`pip install "robustclust[plot]"` (or `pip install matplotlib`).'
    ) from exc

__all__ = [
    "cluster_colors",
    "cluster_order",
    "plot_centroids_and_outliers",
    "plot_clusters",
    "plot_graph",
    "plot_image_mosaic",
    "plot_kernel_matrix",
    "plot_outlier_count_path",
    "plot_outlier_norms_path",
]

OUTLIER_COLOR = "tab:red"
INLIER_CURVE_COLOR = "0.75"
#: Smallest circle of :func:`plot_clusters`, as a share of the largest.
MIN_CIRCLE_SHARE = 0.25
#: Clusters given a legend entry of their own at most.
LEGEND_CLUSTERS = 12
#: Height added above the data of :func:`plot_clusters` per row of legend entries.
LEGEND_BAND = 0.09


# --------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------


def _axes(ax, **subplots_kw):
    """``ax``, or the Axes of a new pyplot figure (pyplot imported only then)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(**subplots_kw)[1]


def cluster_colors(n_colors, cmap=None):
    """``n_colors`` RGBA rows for the clusters.

    Parameters
    ----------
    n_colors : int
    cmap : str, default=None

    Returns
    -------
    colors : ndarray of shape (n_colors, 4)

    Notes
    -----
    Default: the nine colours of tab10 without its red, then the nine light
    ones of tab20 without its light red (cycled beyond 18), so that red is
    left to the outliers and the first nine clusters get distinct hues. A
    given ``cmap`` is used as is: its first colours if it is a listed
    colormap with enough of them, else evenly spaced samples.
    """
    if cmap is None:
        tab20 = matplotlib.colormaps["tab20"].colors
        palette = [tab20[i] for i in (0, 2, 4, 8, 10, 12, 14, 16, 18)]
        palette += [tab20[i] for i in (1, 3, 5, 9, 11, 13, 15, 17, 19)]
        return to_rgba_array([palette[i % len(palette)] for i in range(n_colors)])
    colormap = matplotlib.colormaps[cmap]
    if isinstance(colormap, ListedColormap) and n_colors <= colormap.N:
        return to_rgba_array(colormap.colors[:n_colors])
    return colormap(np.linspace(0.0, 1.0, max(n_colors, 1)))[:n_colors]


def _check_labels(labels, n_samples=None, name="labels"):
    labels = np.asarray(labels)
    if labels.ndim != 1 or (labels.size and labels.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-D array of integers (-1 for outliers).")
    if labels.size and labels.min() < -1:
        raise ValueError(f"{name} must be cluster indices >= 0, or -1 for outliers.")
    if n_samples is not None and labels.shape[0] != n_samples:
        raise ValueError(f"{name} has {labels.shape[0]} entries for {n_samples} samples.")
    return labels.astype(np.intp)


def _outlier_mask(labels, outlier_mask):
    """Points flagged by ``labels == -1`` or by ``outlier_mask``."""
    mask = labels == -1
    if outlier_mask is not None:
        extra = np.asarray(outlier_mask, dtype=bool)
        if extra.shape != labels.shape:
            raise ValueError(f"outlier_mask has shape {extra.shape}, labels {labels.shape}.")
        mask = mask | extra
    return mask


def _color_index(labels, inliers):
    """Map each inlier's cluster label to 0..k-1 (sorted labels); -1 for outliers."""
    clusters = np.unique(labels[inliers])
    index = np.full(labels.shape, -1, dtype=np.intp)
    index[inliers] = np.searchsorted(clusters, labels[inliers])
    return clusters, index


def _positive_lambdas(lambdas, log_scale):
    """Boolean mask of the grid points that can be drawn (λ > 0 on a log axis)."""
    lambdas = np.asarray(lambdas, dtype=np.float64)
    return lambdas > 0 if log_scale else np.ones(lambdas.shape, dtype=bool)


# --------------------------------------------------------------------------
# regularization path (Figs. 2-4)
# --------------------------------------------------------------------------


def plot_outlier_norms_path(path, ax=None, *, highlight=None, log_scale=True, cmap="tab10",
                            linewidth=1.0):
    """Curves of ‖o_n‖₂ against λ, one per point (the paper's Fig. 2).

    Parameters
    ----------
    path : RegularizationPath
        From :func:`robustclust.regularization_path`.
    ax : matplotlib.axes.Axes, default=None
        Where to draw; None makes a new pyplot figure.
    highlight : array-like of bool or int, default=None
        Points whose curves are coloured (a mask of length n_samples, or
        indices); the others are grey. None colours every point that is
        flagged somewhere on the path. To colour the points one λ flags:
        ``highlight=path.outlier_norms[g] > 0`` for its grid index ``g``.
    log_scale : bool, default=True
        Logarithmic λ axis; grid values λ = 0 are then left out.
    cmap : str, default="tab10"
        Colormap cycled over the highlighted curves.
    linewidth : float, default=1.0

    Returns
    -------
    ax : matplotlib.axes.Axes
        The grey curves are the LineCollection with gid ``"inliers"``, the
        coloured ones that with gid ``"outliers"``, one segment per point in
        increasing point order.
    """
    lambdas = np.asarray(path.lambdas, dtype=np.float64)
    norms = np.asarray(path.outlier_norms, dtype=np.float64)
    n_samples = norms.shape[1]
    if highlight is None:
        chosen = np.any(norms > 0, axis=0)
    else:
        highlight = np.asarray(highlight)
        chosen = np.zeros(n_samples, dtype=bool)
        if highlight.dtype == bool:
            if highlight.shape != (n_samples,):
                raise ValueError(f"highlight mask must have shape ({n_samples},).")
            chosen = highlight.copy()
        else:
            chosen[highlight.astype(np.intp)] = True
    keep = _positive_lambdas(lambdas, log_scale)
    x = lambdas[keep]
    curves = np.stack([np.broadcast_to(x[:, None], norms[keep].shape), norms[keep]], axis=-1)
    curves = curves.transpose(1, 0, 2)  # (n_samples, n_lambdas, 2)

    ax = _axes(ax)
    if log_scale:
        ax.set_xscale("log")
    grey = LineCollection(curves[~chosen], colors=INLIER_CURVE_COLOR, linewidths=linewidth,
                          zorder=1, gid="inliers")
    colors = matplotlib.colormaps[cmap](np.arange(chosen.sum()) % matplotlib.colormaps[cmap].N)
    colored = LineCollection(curves[chosen], colors=colors, linewidths=linewidth, zorder=2,
                             gid="outliers")
    ax.add_collection(grey)
    ax.add_collection(colored)
    ax.autoscale_view()
    ax.set_xlabel("λ")
    ax.set_ylabel("‖o_n‖₂")
    return ax


def _bracket(path, target):
    """(low, high): the first neighbouring grid values whose counts straddle ``target``."""
    lambdas = np.asarray(path.lambdas, dtype=np.float64)
    side = np.sign(np.asarray(path.n_outliers, dtype=np.float64) - target)
    crossing = np.flatnonzero(side[:-1] * side[1:] < 0)
    if len(crossing) == 0:
        return None
    i = crossing[0]
    return tuple(sorted((float(lambdas[i]), float(lambdas[i + 1]))))


def plot_outlier_count_path(path, ax=None, *, target=None, log_scale=True):
    """Number of outliers against λ (the paper's Figs. 3 and 4).

    Parameters
    ----------
    path : RegularizationPath
        From :func:`robustclust.regularization_path`.
    ax : matplotlib.axes.Axes, default=None
        Where to draw; None makes a new pyplot figure.
    target : int, default=None
        A count to look for: a dashed horizontal line at it, and the range of
        grid values flagging exactly that many
        (:meth:`RegularizationPath.lambda_range`) shaded and given in the
        legend.  When no grid value does, the interval between the two
        neighbouring grid values whose counts straddle the target is shaded
        instead, gid ``"target-bracket"`` (the λ that flags that many, if one
        does, lies inside; a bisection there finds it), and the legend says
        "the count passes <target> between λ = low and high"; when the counts never reach
        it, the legend says that no grid λ flags it.
    log_scale : bool, default=True
        Logarithmic λ axis; grid values λ = 0 are then left out.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The first line holds the grid values and the counts.
    """
    lambdas = np.asarray(path.lambdas, dtype=np.float64)
    keep = _positive_lambdas(lambdas, log_scale)
    ax = _axes(ax)
    if log_scale:
        ax.set_xscale("log")
    ax.plot(lambdas[keep], np.asarray(path.n_outliers)[keep], marker=".", color="C0",
            label="outliers flagged")
    if target is not None:
        ax.axhline(target, color="C3", linestyle="--", linewidth=1.0, label=f"{target} outliers")
        span = path.lambda_range(target)
        bracket = None if span is not None else _bracket(path, target)
        if span is None and bracket is None:
            ax.plot([], [], " ", label=f"no grid λ flags exactly {target}")
        elif span is None:
            low, high = bracket
            ax.axvspan(low, high, color="C2", alpha=0.25, gid="target-bracket",
                       label=f"the count passes {target} between λ = {low:.3g} and "
                             f"{high:.3g}")
        else:
            low, high = span
            ax.axvspan(low, high, color="C2", alpha=0.25, gid="target-range",
                       label=f"λ from {low:.3g} to {high:.3g} flags exactly {target}")
            for value in (low, high):
                ax.axvline(value, color="C2", linewidth=0.8)
        ax.legend(fontsize="small")
    ax.set_xlabel("λ")
    ax.set_ylabel("number of outliers")
    return ax


# --------------------------------------------------------------------------
# scatter with circled outliers (Figs. 1, 5)
# --------------------------------------------------------------------------


def _fitted_parts(estimator_or_labels):
    """labels, outlier norms (or None), centres (or None) of an estimator or labels."""
    if hasattr(estimator_or_labels, "labels_"):
        est = estimator_or_labels
        centers = getattr(est, "cluster_centers_", getattr(est, "means_", None))
        return (np.asarray(est.labels_), getattr(est, "outlier_norms_", None), centers)
    return np.asarray(estimator_or_labels), None, None


def plot_clusters(X, estimator_or_labels, ax=None, *, outlier_norms=None, centers=None,
                  circle_scale=None, cmap=None, point_size=12):
    """Scatter coloured by cluster; outliers starred and circled, radius ∝ ‖o_n‖.

    The paper's Figs. 1 and 5. Data with more than two features are drawn on
    their first two principal components (fitted on the inliers, so the
    outliers do not choose the view; the axis labels say so).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data the labels belong to (``n_features >= 2``).
    estimator_or_labels : fitted estimator or array-like of shape (n_samples,)
        An estimator with ``labels_`` (-1 for outliers), from which
        ``outlier_norms_`` and ``cluster_centers_`` or ``means_`` are also
        taken when present; or the labels themselves.
    ax : matplotlib.axes.Axes, default=None
        Where to draw; None makes a new pyplot figure.
    outlier_norms : array-like of shape (n_samples,), default=None
        ‖o_n‖ for the circle radii, overriding the estimator's; without
        either, every outlier gets the same circle.
    centers : array-like of shape (n_clusters, n_features), default=None
        Centres to mark (an "X" in the cluster's colour), overriding the
        estimator's.
    circle_scale : float, default=None
        Circle radius per unit of ‖o_n‖, in plotted coordinates. None: the
        largest circle gets 8% of the larger side of the data's bounding
        box, and no circle gets less than :data:`MIN_CIRCLE_SHARE` of the
        largest (so that an outlier with a tiny ‖o_n‖ still shows its
        circle). With 2-D data, ``circle_scale=1`` draws each circle through
        the cleaned point x_n − o_n (no minimum).
    cmap : str, default=None
        Colormap of the clusters; None is tab10 without red (tab20 without
        red beyond 9 clusters): red is kept for the outliers.
    point_size : float, default=12
        Marker area of the points.

    Returns
    -------
    ax : matplotlib.axes.Axes
        Inliers are the PathCollection with gid ``"inliers"``, outliers
        ``"outliers"``, centres ``"centers"``; each outlier has a
        :class:`~matplotlib.patches.Circle` patch (gid ``"outlier-circle"``),
        in increasing point order. The aspect ratio is equal, so circles are
        round. The legend, one entry per cluster (up to
        :data:`LEGEND_CLUSTERS`), sits in a band added above the data, where
        it covers no point and no circle.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 2:
        raise ValueError(f"X must be 2-D with at least 2 features, got shape {X.shape}.")
    labels, est_norms, est_centers = _fitted_parts(estimator_or_labels)
    labels = _check_labels(labels, X.shape[0])
    norms = est_norms if outlier_norms is None else outlier_norms
    centers = est_centers if centers is None else centers
    outliers = labels == -1
    inliers = ~outliers

    if X.shape[1] == 2:
        project = None
        Z = X
        axis_labels = ("x₁", "x₂")
    else:
        from sklearn.decomposition import PCA

        basis = X[inliers] if inliers.sum() >= 3 else X
        project = PCA(n_components=2).fit(basis)
        Z = project.transform(X)
        share = project.explained_variance_ratio_
        whose = "inlier" if basis is not X else "total"
        axis_labels = tuple(f"PC {k + 1} ({share[k]:.0%} of {whose} variance)" for k in range(2))

    ax = _axes(ax)
    # colours by cluster label, so that a cluster and its centre match even
    # when a cluster has no inlier left
    clusters = np.unique(labels[inliers])
    n_centers = 0 if centers is None else len(np.asarray(centers))
    colors = cluster_colors(max(n_centers, labels.max() + 1 if labels.size else 0, 1), cmap)
    ax.scatter(Z[inliers, 0], Z[inliers, 1], c=colors[labels[inliers]], s=point_size,
               linewidths=0, gid="inliers")
    for k, cluster in enumerate(clusters):
        if k < LEGEND_CLUSTERS:  # legend entries only: no points
            ax.scatter([], [], color=colors[cluster], s=point_size, linewidths=0,
                       label=f"cluster {cluster}")
    if len(clusters) > LEGEND_CLUSTERS:
        ax.plot([], [], " ", label=f"... {len(clusters) - LEGEND_CLUSTERS} more")
    if outliers.any():
        ax.scatter(Z[outliers, 0], Z[outliers, 1], marker="*", c="k", s=3 * point_size,
                   linewidths=0, gid="outliers", label="outliers")
        radii_norms = (np.ones(outliers.sum()) if norms is None
                       else np.asarray(norms, dtype=np.float64)[outliers])
        radii = None
        if circle_scale is None:
            extent = np.ptp(Z, axis=0).max() if Z.shape[0] > 1 else 1.0
            top = radii_norms.max()
            circle_scale = 0.08 * (extent if extent > 0 else 1.0) / (top if top > 0 else 1.0)
            radii = np.maximum(circle_scale * radii_norms,
                               MIN_CIRCLE_SHARE * circle_scale * top)
        if radii is None:
            radii = circle_scale * radii_norms
        for (x, y), r in zip(Z[outliers], radii):
            ax.add_patch(Circle((x, y), r, fill=False, edgecolor=OUTLIER_COLOR,
                                linewidth=0.8, gid="outlier-circle"))

    if centers is not None:
        C = np.asarray(centers, dtype=np.float64)
        C2 = C if project is None else project.transform(C)
        ax.scatter(C2[:, 0], C2[:, 1], marker="X", s=12 * point_size, c=colors[:len(C2)],
                   edgecolors="k", linewidths=1.0, zorder=3, gid="centers", label="centres")
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    _legend_on_top(ax)
    return ax


def _legend_on_top(ax, per_row=4):
    """The legend in a band added above the data, so that it covers no point or circle.

    Inside the axes (a title or a neighbouring panel stays free); the band
    is :data:`LEGEND_BAND` of the height per row of entries.
    """
    entries = len(ax.get_legend_handles_labels()[1])
    rows = -(-entries // per_row)
    low, high = ax.get_ylim()
    for patch in ax.patches:  # circles reach beyond the points
        if isinstance(patch, Circle):
            high = max(high, patch.center[1] + patch.get_radius())
    ax.set_ylim(low, high + LEGEND_BAND * rows * (high - low))
    ax.legend(fontsize="small", loc="upper center", ncol=min(entries, per_row),
              handletextpad=0.3, columnspacing=1.0, borderaxespad=0.3)


# --------------------------------------------------------------------------
# image mosaics (Fig. 6)
# --------------------------------------------------------------------------


def plot_image_mosaic(images, image_shape=(16, 16), *, ncols=None, titles=None, ax=None,
                      cmap="gray_r", vmin=None, vmax=None, pad=1):
    """Images on a grid, in reading order (left to right, top to bottom).

    Parameters
    ----------
    images : array-like of shape (n_images, height * width) or (n_images, height, width)
        Pixel rows (e.g. USPS digits or cluster centroids).
    image_shape : tuple of int, default=(16, 16)
        (height, width) of one image; rows are reshaped in C order.
    ncols : int, default=None
        Images per row; None is ``ceil(sqrt(n_images))``.
    titles : sequence of str, default=None
        One caption per image, drawn in a gap above it.
    ax : matplotlib.axes.Axes, default=None
        Where to draw; None makes a new pyplot figure.
    cmap : str, default="gray_r"
        Colormap (gray_r shows large values, USPS ink, in black).
    vmin, vmax : float, default=None
        Colour limits shared by all images; None: the images' min and max.
    pad : int, default=1
        Blank pixels between images (and around the grid).

    Returns
    -------
    ax : matplotlib.axes.Axes
        The mosaic is one image (gid ``"mosaic"``) of shape
        ``(nrows * (height + gap) + pad, ncols * (width + pad) + pad)``,
        ``gap`` being ``pad`` without titles; blank cells are NaN
        (transparent).
    """
    height, width = (int(v) for v in image_shape)
    images = np.asarray(images, dtype=np.float64)
    if images.ndim == 1:
        images = images[np.newaxis]
    if images.shape[0] == 0:
        raise ValueError("images is empty.")
    if images[0].size != height * width:
        raise ValueError(f"each image has {images[0].size} pixels, image_shape "
                         f"{image_shape} needs {height * width}.")
    images = images.reshape(-1, height, width)
    n_images = images.shape[0]
    if ncols is None:
        ncols = int(np.ceil(np.sqrt(n_images)))
    ncols = max(1, min(int(ncols), n_images))
    nrows = -(-n_images // ncols)
    if titles is not None and len(titles) != n_images:
        raise ValueError(f"{len(titles)} titles for {n_images} images.")
    gap = pad if titles is None else pad + max(4, height // 3)
    canvas = np.full((nrows * (height + gap) + pad, ncols * (width + pad) + pad), np.nan)
    for k, image in enumerate(images):
        row, col = divmod(k, ncols)
        top, left = gap + row * (height + gap), pad + col * (width + pad)
        canvas[top:top + height, left:left + width] = image
    vmin = np.nanmin(images) if vmin is None else vmin
    vmax = np.nanmax(images) if vmax is None else vmax

    ax = _axes(ax)
    ax.imshow(canvas, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", gid="mosaic")
    if titles is not None:
        for k, title in enumerate(titles):
            row, col = divmod(k, ncols)
            ax.text(pad + col * (width + pad) + width / 2, gap + row * (height + gap) - 0.7,
                    str(title), ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def plot_centroids_and_outliers(estimator, X, image_shape=(16, 16), *, n_outliers=None,
                                ncols=10, axes=None, cmap="gray_r"):
    """Two mosaics: the cluster centroids, and the outliers ranked by ‖o_n‖ (Fig. 6).

    Parameters
    ----------
    estimator : fitted estimator
        With ``labels_``, ``outlier_mask_`` and ``outlier_norms_``; the
        centroids are its ``cluster_centers_`` or ``means_``, else (kernel
        estimators, whose centres live in feature space) the mean image of
        each cluster's inliers.
    X : array-like of shape (n_samples, height * width)
        The images the estimator was fitted on.
    image_shape : tuple of int, default=(16, 16)
    n_outliers : int, default=None
        Show the ``n_outliers`` largest ‖o_n‖; None shows every outlier.
    ncols : int, default=10
        Images per row in each mosaic.
    axes : sequence of two matplotlib.axes.Axes, default=None
        Where to draw (centroids, outliers); None makes a new pyplot figure
        with two panels.
    cmap : str, default="gray_r"

    Returns
    -------
    fig : matplotlib.figure.Figure
        The figure of the two panels. The outlier panel is in reading order,
        largest ‖o_n‖ first; ties keep the sample order.
    """
    X = np.asarray(X, dtype=np.float64)
    labels = _check_labels(estimator.labels_, X.shape[0], "estimator.labels_")
    centers = getattr(estimator, "cluster_centers_", getattr(estimator, "means_", None))
    if centers is not None:
        centroids, what = np.asarray(centers, dtype=np.float64), "centroids"
    else:
        clusters = np.unique(labels[labels >= 0])
        centroids = np.array([X[labels == c].mean(axis=0) for c in clusters])
        what = "cluster means (inliers)"
    norms = np.asarray(estimator.outlier_norms_, dtype=np.float64)
    flagged = np.flatnonzero(np.asarray(estimator.outlier_mask_, dtype=bool))
    ranked = flagged[np.argsort(-norms[flagged], kind="stable")]
    if n_outliers is not None:
        ranked = ranked[: int(n_outliers)]

    if axes is None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 5.5))
    else:
        fig = axes[0].figure
    plot_image_mosaic(centroids, image_shape, ncols=min(ncols, len(centroids)), ax=axes[0],
                      cmap=cmap)
    axes[0].set_title(f"{len(centroids)} {what}")
    if len(ranked):
        plot_image_mosaic(X[ranked], image_shape, ncols=ncols, ax=axes[1], cmap=cmap)
        axes[1].set_title(f"{len(ranked)} outliers, largest ‖o_n‖ first")
    else:
        axes[1].set_axis_off()
        axes[1].set_title("no outliers")
    return fig


# --------------------------------------------------------------------------
# kernel matrix (Fig. 8)
# --------------------------------------------------------------------------


def cluster_order(labels, outlier_mask=None):
    """Permutation grouping each cluster's points, clusters by label, outliers last.

    Within a group the sample order is kept. ``labels == -1`` marks outliers,
    as does ``outlier_mask`` when given.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
    outlier_mask : array-like of bool of shape (n_samples,), default=None

    Returns
    -------
    order : ndarray of shape (n_samples,)
        Indices, so that ``K[np.ix_(order, order)]`` is the permuted matrix.
    n_inliers : int
        Position of the first outlier in ``order``.
    """
    labels = _check_labels(labels)
    outliers = _outlier_mask(labels, outlier_mask)
    inliers = np.flatnonzero(~outliers)
    inliers = inliers[np.argsort(labels[inliers], kind="stable")]
    return np.concatenate([inliers, np.flatnonzero(outliers)]), len(inliers)


def plot_kernel_matrix(K, labels, outlier_mask=None, ax=None, *, names=None, cmap="viridis",
                       zero_color=None):
    """Kernel matrix with rows and columns grouped by cluster, outliers last (Fig. 8).

    Parameters
    ----------
    K : array-like of shape (n_samples, n_samples)
    labels : array-like of shape (n_samples,)
        Cluster of each point, -1 for outliers (e.g. ``labels_``).
    outlier_mask : array-like of bool of shape (n_samples,), default=None
        More points to treat as outliers (e.g. ``outlier_mask_``).
    ax : matplotlib.axes.Axes, default=None
        Where to draw; None makes a new pyplot figure.
    names : sequence of str, default=None
        Row names (e.g. football teams), shown as tick labels in the permuted
        order, outliers in red.
    cmap : str, default="viridis"
    zero_color : color, default=None
        Colour for entries exactly 0 (the paper draws them blue); None uses
        the colormap.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The image (gid ``"kernel"``) is ``K[np.ix_(order, order)]`` with
        ``order`` from :func:`cluster_order`. Thin white lines separate the
        clusters; the outlier rows and columns are framed in red (two
        Rectangle patches, gid ``"outlier-block"``).
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square matrix, got shape {K.shape}.")
    labels = _check_labels(labels, K.shape[0])
    order, n_inliers = cluster_order(labels, outlier_mask)
    n = K.shape[0]
    permuted = K[np.ix_(order, order)]
    colormap = matplotlib.colormaps[cmap]
    shown = permuted
    if zero_color is not None:
        colormap = colormap.with_extremes(bad=zero_color)
        shown = np.ma.masked_equal(permuted, 0.0)

    ax = _axes(ax)
    ax.imshow(shown, cmap=colormap, interpolation="nearest", gid="kernel")
    sorted_labels = labels[order[:n_inliers]]
    for edge in np.flatnonzero(np.diff(sorted_labels)) + 1:
        ax.axhline(edge - 0.5, color="w", linewidth=0.6)
        ax.axvline(edge - 0.5, color="w", linewidth=0.6)
    if n_inliers < n:
        n_out = n - n_inliers
        for xy, w, h in (((-0.5, n_inliers - 0.5), n, n_out), ((n_inliers - 0.5, -0.5), n_out, n)):
            ax.add_patch(Rectangle(xy, w, h, fill=False, edgecolor=OUTLIER_COLOR, linewidth=1.2,
                                   gid="outlier-block"))
    if names is not None:
        if len(names) != n:
            raise ValueError(f"{len(names)} names for {n} rows.")
        ax.set_yticks(np.arange(n))
        ax.set_yticklabels([str(names[i]) for i in order], fontsize=4)
        for position, tick in enumerate(ax.get_yticklabels()):
            if position >= n_inliers:
                tick.set_color(OUTLIER_COLOR)
        ax.set_xticks([])
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    return ax


# --------------------------------------------------------------------------
# graphs (Figs. 7, 9)
# --------------------------------------------------------------------------


def plot_graph(G, labels, outlier_mask=None, outlier_scores=None, pos=None, ax=None, *,
               node_names=True, seed=0, cmap=None, node_size=60, font_size=6):
    """Network drawing: nodes coloured by cluster, outliers as large bold diamonds.

    Parameters
    ----------
    G : networkx.Graph
    labels : array-like of shape (n_nodes,)
        Cluster of each node in ``G.nodes`` order, -1 for outliers.
    outlier_mask : array-like of bool of shape (n_nodes,), default=None
        More nodes to treat as outliers.
    outlier_scores : array-like of shape (n_nodes,), default=None
        ‖o_n‖ per node: outlier diamonds grow with it (area
        ``node_size * (1.5 + 2.5 * score / max score)``).
    pos : dict, default=None
        Node positions; None: ``networkx.spring_layout(G, seed=seed)``, the
        same picture on every call.
    ax : matplotlib.axes.Axes, default=None
        Where to draw; None makes a new pyplot figure.
    node_names : bool, default=True
        Write each node's name; outliers' names in bold (as in Fig. 7).
    seed : int, default=0
        Seed of the spring layout.
    cmap : str, default=None
        Colormap of the clusters; None is tab10 without red (tab20 without
        red beyond 9 clusters): red is kept for the outliers.
    node_size, font_size : float, default=60 and 6

    Returns
    -------
    ax : matplotlib.axes.Axes
        Edges are the LineCollection with gid ``"edges"``, inliers the
        PathCollection ``"inliers"``, outliers ``"outliers"`` (diamonds, red
        edge), both in ``G.nodes`` order; names are Text artists.
    """
    import networkx as nx

    nodes = list(G.nodes)
    labels = _check_labels(labels, len(nodes))
    outliers = _outlier_mask(labels, outlier_mask)
    if pos is None:
        pos = nx.spring_layout(G, seed=seed)
    xy = np.array([pos[node] for node in nodes], dtype=np.float64).reshape(len(nodes), 2)

    ax = _axes(ax)
    segments = [(pos[u], pos[v]) for u, v in G.edges()]
    ax.add_collection(LineCollection(segments, colors="0.65", linewidths=0.6, zorder=1,
                                     gid="edges"))
    inliers = ~outliers
    clusters, color_index = _color_index(labels, inliers)
    colors = cluster_colors(len(clusters), cmap)
    ax.scatter(xy[inliers, 0], xy[inliers, 1], s=node_size, c=colors[color_index[inliers]],
               edgecolors="k", linewidths=0.4, zorder=2, gid="inliers")
    if outliers.any():
        sizes = np.full(outliers.sum(), 2.5 * node_size)
        if outlier_scores is not None:
            scores = np.asarray(outlier_scores, dtype=np.float64)[outliers]
            top = scores.max()
            sizes = node_size * (1.5 + 2.5 * (scores / top if top > 0 else 0 * scores))
        ax.scatter(xy[outliers, 0], xy[outliers, 1], s=sizes, marker="D", c="w",
                   edgecolors=OUTLIER_COLOR, linewidths=1.5, zorder=3, gid="outliers")
    if node_names:
        for node, (x, y), is_outlier in zip(nodes, xy, outliers):
            ax.text(x, y, f" {node}", fontsize=font_size, ha="left", va="bottom", zorder=4,
                    fontweight="bold" if is_outlier else "normal")
    ax.autoscale_view()
    ax.set_axis_off()
    return ax
