"""robustclust.plotting: what each function draws, headless and without side effects."""

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Circle, Rectangle  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402

from robustclust import (  # noqa: E402
    RegularizationPath,
    RobustGaussianMixture,
    RobustKMeans,
    regularization_path,
)
from robustclust.datasets import make_blobs_with_outliers  # noqa: E402
from robustclust.plotting import (  # noqa: E402
    OUTLIER_COLOR,
    MIN_CIRCLE_SHARE,
    cluster_order,
    plot_centroids_and_outliers,
    plot_clusters,
    plot_graph,
    plot_image_mosaic,
    plot_kernel_matrix,
    plot_outlier_count_path,
    plot_outlier_norms_path,
)


@pytest.fixture(autouse=True)
def no_show_no_leak(monkeypatch):
    """Fail on any show(); fail if a test leaves a pyplot figure open."""
    def refuse(*args, **kwargs):
        raise AssertionError("plotting functions must never call show()")

    monkeypatch.setattr(plt, "show", refuse)
    monkeypatch.setattr(Figure, "show", refuse)
    before = plt.get_fignums()
    yield
    leaked = [n for n in plt.get_fignums() if n not in before]
    plt.close("all")
    assert leaked == [], "a plotting function left a pyplot figure behind"


def _ax():
    """Axes of a figure that pyplot does not know about."""
    return Figure().subplots()


def _by_gid(artists, gid):
    found = [a for a in artists if a.get_gid() == gid]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.fixture(scope="module")
def blobs():
    data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    # unrefined: the group O-step's shrunk norms include small ones (the minimum circle)
    model = RobustKMeans(4, n_outliers=40, n_init=3, random_state=0, refine=False).fit(data.X)
    return data.X, model


@pytest.fixture(scope="module")
def path(blobs):
    return regularization_path(RobustKMeans(4, n_init=2, random_state=0), blobs[0], n_lambdas=25)


def _hand_path(lambdas, n_outliers, n_samples=3):
    """A RegularizationPath with chosen grid and counts (other fields filler)."""
    lambdas = np.asarray(lambdas, dtype=float)
    k = len(lambdas)
    norms = np.zeros((k, n_samples))
    return RegularizationPath(lambdas, norms, np.asarray(n_outliers), np.zeros(k),
                              np.ones(k, dtype=int), np.zeros((k, 1, 2)), float(lambdas[0]), 0.0)


# --------------------------------------------------------------------------
# headless use
# --------------------------------------------------------------------------


def test_module_import_and_drawing_on_given_axes_never_import_pyplot():
    code = (
        "import sys, numpy as np\n"
        "from matplotlib.figure import Figure\n"
        "import robustclust.plotting as p\n"
        "ax = Figure().subplots()\n"
        "p.plot_image_mosaic(np.zeros((3, 4)), (2, 2), ax=ax)\n"
        "p.plot_kernel_matrix(np.eye(3), [0, 1, -1], ax=ax)\n"
        "p.plot_clusters(np.arange(8.).reshape(4, 2), [0, 0, 1, -1], ax=ax)\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'\n"
    )
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}  # as on a headless server
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr


def test_without_ax_each_function_makes_exactly_one_pyplot_figure(blobs, path):
    X, model = blobs
    G = nx.path_graph(4)
    images = np.random.default_rng(0).normal(size=(5, 4))
    calls = [
        lambda: plot_outlier_norms_path(path),
        lambda: plot_outlier_count_path(path, target=40),
        lambda: plot_clusters(X, model),
        lambda: plot_image_mosaic(images, (2, 2)),
        lambda: plot_kernel_matrix(np.eye(4), [0, 0, 1, -1]),
        lambda: plot_graph(G, [0, 0, 1, -1]),
    ]
    for call in calls:
        before = set(plt.get_fignums())
        ax = call()
        new = set(plt.get_fignums()) - before
        assert len(new) == 1
        assert ax.figure.number in new
        plt.close(ax.figure)
    before = set(plt.get_fignums())
    flat = SimpleNamespace(labels_=np.array([0, 1, -1]), outlier_mask_=np.array([0, 0, 1], bool),
                           outlier_norms_=np.array([0, 0, 2.0]), cluster_centers_=np.eye(2, 4))
    fig = plot_centroids_and_outliers(flat, np.ones((3, 4)), (2, 2))
    assert set(plt.get_fignums()) - before == {fig.number}
    plt.close(fig)


def test_drawing_on_given_axes_creates_no_figure(blobs, path):
    X, model = blobs
    before = plt.get_fignums()
    for draw in (plot_outlier_norms_path, plot_outlier_count_path):
        ax = _ax()
        assert draw(path, ax) is ax
    ax = _ax()
    assert plot_clusters(X, model, ax) is ax
    fig = Figure()
    axes = fig.subplots(1, 2)
    images = np.random.default_rng(0).normal(size=(6, 16))
    flat = SimpleNamespace(labels_=np.array([0, 1, -1, 0, 1, 0]),
                           outlier_mask_=np.array([0, 0, 1, 0, 0, 0], bool),
                           outlier_norms_=np.array([0, 0, 2.0, 0, 0, 0]))
    assert plot_centroids_and_outliers(flat, images, (4, 4), axes=axes) is fig
    assert plt.get_fignums() == before


# --------------------------------------------------------------------------
# Fig. 2: outlier-norm curves
# --------------------------------------------------------------------------


def test_norm_curves_one_per_point_on_a_log_axis(path, blobs):
    ax = plot_outlier_norms_path(path, _ax())
    assert ax.get_xscale() == "log"
    grey, colored = _by_gid(ax.collections, "inliers"), _by_gid(ax.collections, "outliers")
    ever = np.any(path.outlier_norms > 0, axis=0)
    assert len(grey.get_segments()) == (~ever).sum()
    assert len(colored.get_segments()) == ever.sum() == len(blobs[0]) - (~ever).sum()
    for segment, n in zip(colored.get_segments(), np.flatnonzero(ever)):
        np.testing.assert_allclose(segment[:, 0], path.lambdas)
        np.testing.assert_allclose(segment[:, 1], path.outlier_norms[:, n])
    assert np.all(grey.get_colors() == to_rgba("0.75"))


def test_norm_curves_highlight_a_mask_or_indices(path):
    g = int(np.argmax(path.n_outliers >= 40))
    mask = path.outlier_norms[g] > 0
    ax = plot_outlier_norms_path(path, _ax(), highlight=mask)
    colored = _by_gid(ax.collections, "outliers").get_segments()
    grey = _by_gid(ax.collections, "inliers").get_segments()
    assert len(colored) == mask.sum() and len(grey) == (~mask).sum()
    np.testing.assert_allclose(colored[0][:, 1], path.outlier_norms[:, np.flatnonzero(mask)[0]])
    np.testing.assert_allclose(grey[0][:, 1], path.outlier_norms[:, np.flatnonzero(~mask)[0]])
    ax = plot_outlier_norms_path(path, _ax(), highlight=[5, 2])
    colored = _by_gid(ax.collections, "outliers").get_segments()
    assert len(colored) == 2
    np.testing.assert_allclose(colored[1][:, 1], path.outlier_norms[:, 5])


def test_norm_curves_leave_out_lambda_zero_on_log_axis_only():
    hand = _hand_path([4.0, 2.0, 1.0, 0.0], [0, 1, 2, 3])
    hand.outlier_norms[:] = [[0, 0, 0], [0, 0, 1], [0, 1, 2], [1, 2, 3]]
    segments = _by_gid(plot_outlier_norms_path(hand, _ax()).collections,
                       "outliers").get_segments()
    np.testing.assert_allclose(segments[0][:, 0], [4, 2, 1])
    ax = plot_outlier_norms_path(hand, _ax(), log_scale=False)
    assert ax.get_xscale() == "linear"
    np.testing.assert_allclose(_by_gid(ax.collections, "outliers").get_segments()[2][:, 1],
                               [0, 1, 2, 3])


# --------------------------------------------------------------------------
# Fig. 3: outlier counts
# --------------------------------------------------------------------------


def test_count_curve_is_the_path_counts(path):
    ax = plot_outlier_count_path(path, _ax())
    assert ax.get_xscale() == "log"
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), path.lambdas)
    np.testing.assert_array_equal(line.get_ydata(), path.n_outliers)
    assert ax.get_legend() is None


def test_count_target_line_and_range():
    hand = _hand_path([8.0, 7.0, 6.0, 5.0, 4.0], [0, 3, 3, 3, 9])
    ax = plot_outlier_count_path(hand, _ax(), target=3)
    target_line = ax.get_lines()[1]
    np.testing.assert_array_equal(target_line.get_ydata(), [3, 3])
    span = _by_gid(ax.patches, "target-range")
    x0, x1 = span.get_x(), span.get_x() + span.get_width()
    assert (x0, x1) == hand.lambda_range(3) == (5.0, 7.0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "λ from 5 to 7 flags exactly 3" in legend


def test_count_target_between_grid_values_shades_the_bracketing_interval():
    hand = _hand_path([8.0, 7.0, 6.0], [0, 2, 4])
    ax = plot_outlier_count_path(hand, _ax(), target=3)
    assert _by_gid(ax.patches, "target-range") is None
    span = _by_gid(ax.patches, "target-bracket")
    assert (span.get_x(), span.get_x() + span.get_width()) == (6.0, 7.0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "the count passes 3 between λ = 6 and 7" in legend


def test_count_target_never_reached_says_so():
    hand = _hand_path([8.0, 7.0, 6.0], [0, 2, 2])
    ax = plot_outlier_count_path(hand, _ax(), target=3)
    assert _by_gid(ax.patches, "target-range") is None
    assert _by_gid(ax.patches, "target-bracket") is None
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "no grid λ flags exactly 3" in legend


# --------------------------------------------------------------------------
# Figs. 1, 5: scatter with circled outliers
# --------------------------------------------------------------------------


def _circles(ax):
    return [p for p in ax.patches if isinstance(p, Circle) and p.get_gid() == "outlier-circle"]


def test_scatter_circles_every_outlier_with_radius_proportional_to_norm(blobs):
    X, model = blobs
    ax = plot_clusters(X, model, _ax())
    circles = _circles(ax)
    out = np.flatnonzero(model.outlier_mask_)
    assert len(circles) == model.n_outliers_ == len(out) == 40
    np.testing.assert_allclose([c.center for c in circles], X[out])
    radii = np.array([c.get_radius() for c in circles])
    norms = model.outlier_norms_[out]
    largest = 0.08 * np.ptp(X, axis=0).max()
    np.testing.assert_allclose(radii.max(), largest)
    # proportional to the norm, but never below a quarter of the largest circle
    np.testing.assert_allclose(radii, np.maximum(largest * norms / norms.max(),
                                                 MIN_CIRCLE_SHARE * largest))
    assert (norms < MIN_CIRCLE_SHARE * norms.max()).any()  # the minimum is exercised
    exact = _circles(plot_clusters(X, model, _ax(), circle_scale=1.0))
    np.testing.assert_allclose([c.get_radius() for c in exact], norms)


def test_scatter_points_colours_and_centres(blobs):
    X, model = blobs
    ax = plot_clusters(X, model, _ax())
    inliers = _by_gid(ax.collections, "inliers")
    inside = model.labels_ >= 0
    np.testing.assert_allclose(inliers.get_offsets(), X[inside])
    np.testing.assert_allclose(_by_gid(ax.collections, "outliers").get_offsets(),
                               X[~inside])
    colors = inliers.get_facecolors()
    for c in range(4):
        rows = colors[model.labels_[inside] == c]
        assert len(np.unique(rows, axis=0)) == 1
    assert len(np.unique(colors, axis=0)) == 4
    assert not np.any(np.all(np.isclose(colors, to_rgba(OUTLIER_COLOR)), axis=1))
    np.testing.assert_allclose(_by_gid(ax.collections, "centers").get_offsets(),
                               model.cluster_centers_)
    assert ax.get_aspect() == 1.0


def test_scatter_from_labels_only_uses_equal_circles_and_no_centres():
    X = np.array([[0.0, 0], [1, 0], [0, 1], [5, 5], [-5, 5]])
    ax = plot_clusters(X, [0, 0, 1, -1, -1], _ax())
    radii = [c.get_radius() for c in _circles(ax)]
    assert len(radii) == 2 and radii[0] == radii[1]
    assert _by_gid(ax.collections, "centers") is None
    norms = np.array([0, 0, 0, 1.0, 3.0])
    radii = [c.get_radius() for c in _circles(plot_clusters(X, [0, 0, 1, -1, -1], _ax(),
                                                            outlier_norms=norms))]
    assert radii[1] == pytest.approx(3 * radii[0])


def test_scatter_projects_wide_data_on_inlier_principal_components():
    rng = np.random.default_rng(0)
    data = make_blobs_with_outliers(n_outliers=20, random_state=1)
    X = np.hstack([data.X, rng.normal(scale=0.3, size=(len(data.X), 3))])
    model = RobustGaussianMixture(4, n_outliers=20, n_init=2, random_state=0).fit(X)
    ax = plot_clusters(X, model, _ax())
    assert ax.get_xlabel().startswith("PC 1") and "inlier variance" in ax.get_xlabel()
    assert ax.get_ylabel().startswith("PC 2")
    pca = PCA(n_components=2).fit(X[model.labels_ >= 0])
    np.testing.assert_allclose(_by_gid(ax.collections, "inliers").get_offsets(),
                               pca.transform(X[model.labels_ >= 0]))
    np.testing.assert_allclose(_by_gid(ax.collections, "centers").get_offsets(),
                               pca.transform(model.means_))
    assert len(_circles(ax)) == model.n_outliers_


def test_scatter_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 2 features"):
        plot_clusters(np.zeros((3, 1)), [0, 0, 1], _ax())
    with pytest.raises(ValueError, match="3 entries for 4 samples"):
        plot_clusters(np.zeros((4, 2)), [0, 0, 1], _ax())
    with pytest.raises(ValueError, match="-1 for outliers"):
        plot_clusters(np.zeros((3, 2)), [0, -2, 1], _ax())


# --------------------------------------------------------------------------
# Fig. 6: mosaics
# --------------------------------------------------------------------------


def _mosaic(ax):
    """The mosaic's pixels, blank cells (masked by imshow) as NaN."""
    return np.ma.filled(_by_gid(ax.images, "mosaic").get_array().astype(float), np.nan)


def test_mosaic_grid_shape_and_reading_order():
    images = np.arange(7 * 6, dtype=float).reshape(7, 6)  # 7 images of 3x2
    canvas = _mosaic(plot_image_mosaic(images, (3, 2), ncols=3, ax=_ax()))
    assert canvas.shape == (3 * (3 + 1) + 1, 3 * (2 + 1) + 1)
    for k in range(7):
        row, col = divmod(k, 3)
        tile = canvas[1 + row * 4: 1 + row * 4 + 3, 1 + col * 3: 1 + col * 3 + 2]
        np.testing.assert_array_equal(tile, images[k].reshape(3, 2))
    assert np.isnan(canvas[9:12, 4:6]).all()  # cells 8 and 9 are blank
    assert np.isnan(canvas[0]).all() and np.isnan(canvas[:, 3]).all()  # padding


def test_mosaic_default_columns_and_titles():
    images = np.random.default_rng(0).uniform(-1, 1, size=(10, 16, 16))
    ax = plot_image_mosaic(images, ax=_ax())
    assert _mosaic(ax).shape == (3 * 17 + 1, 4 * 17 + 1)  # ceil(sqrt(10)) = 4 columns
    titles = [f"#{k}" for k in range(10)]
    ax = plot_image_mosaic(images, ncols=5, titles=titles, ax=_ax())
    assert [t.get_text() for t in ax.texts] == titles
    gap = 1 + 16 // 3
    canvas = _mosaic(ax)
    assert canvas.shape == (2 * (16 + gap) + 1, 5 * 17 + 1)
    np.testing.assert_array_equal(canvas[gap:gap + 16, 1:17], images[0])
    with pytest.raises(ValueError, match="9 titles for 10 images"):
        plot_image_mosaic(images, titles=titles[:9], ax=_ax())
    with pytest.raises(ValueError, match="needs 64"):
        plot_image_mosaic(images, (8, 8), ax=_ax())


def _tiles(canvas, shape, n, ncols):
    h, w = shape
    return np.array([canvas[1 + (k // ncols) * (h + 1):][:h, 1 + (k % ncols) * (w + 1):][:, :w]
                     .ravel() for k in range(n)])


def test_centroids_and_outliers_ranked_by_outlier_norm():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(m, 0.3, size=(40, 16)) for m in (-1.0, 1.0)])
    X[[3, 50, 70]] += rng.normal(0, 4, size=(3, 16))
    model = RobustKMeans(2, n_outliers=3, n_init=2, random_state=0).fit(X)
    fig = Figure()
    axes = fig.subplots(1, 2)
    plot_centroids_and_outliers(model, X, (4, 4), axes=axes, ncols=2)
    centroids = _tiles(_mosaic(axes[0]), (4, 4), 2, 2)
    np.testing.assert_allclose(centroids, model.cluster_centers_)
    ranked = np.flatnonzero(model.outlier_mask_)
    ranked = ranked[np.argsort(-model.outlier_norms_[ranked])]
    assert sorted(ranked) == [3, 50, 70]
    np.testing.assert_allclose(_tiles(_mosaic(axes[1]), (4, 4), 3, 2), X[ranked])
    assert "largest ‖o_n‖ first" in axes[1].get_title()
    fig = Figure()
    axes = fig.subplots(1, 2)
    plot_centroids_and_outliers(model, X, (4, 4), n_outliers=1, axes=axes)
    np.testing.assert_allclose(_tiles(_mosaic(axes[1]), (4, 4), 1, 1), X[ranked[:1]])


def test_centroids_fall_back_to_inlier_cluster_means():
    X = np.arange(5 * 4, dtype=float).reshape(5, 4)
    fitted = SimpleNamespace(labels_=np.array([1, 0, 1, -1, 0]),
                             outlier_mask_=np.array([0, 0, 0, 1, 0], bool),
                             outlier_norms_=np.array([0, 0, 0, 1.0, 0]))
    fig = Figure()
    axes = fig.subplots(1, 2)
    plot_centroids_and_outliers(fitted, X, (2, 2), axes=axes)
    np.testing.assert_allclose(_tiles(_mosaic(axes[0]), (2, 2), 2, 2),
                               [X[[1, 4]].mean(0), X[[0, 2]].mean(0)])
    assert "cluster means" in axes[0].get_title()


# --------------------------------------------------------------------------
# Fig. 8: kernel matrix
# --------------------------------------------------------------------------


def test_cluster_order_groups_clusters_and_puts_outliers_last():
    labels = np.array([2, 0, -1, 1, 0, 2, -1, 1, 0])
    order, n_in = cluster_order(labels)
    np.testing.assert_array_equal(order, [1, 4, 8, 3, 7, 0, 5, 2, 6])
    assert n_in == 7
    order, n_in = cluster_order(labels, outlier_mask=labels == 1)
    np.testing.assert_array_equal(order, [1, 4, 8, 0, 5, 2, 3, 6, 7])
    assert n_in == 5


def test_kernel_matrix_is_permuted_with_outliers_last_and_framed():
    n = 9
    K = np.arange(n * n, dtype=float).reshape(n, n)  # entry tells its (row, column)
    labels = np.array([2, 0, -1, 1, 0, 2, -1, 1, 0])
    ax = plot_kernel_matrix(K, labels, ax=_ax())
    shown = np.asarray(_by_gid(ax.images, "kernel").get_array())
    rows, cols = shown[:, 0] // n, shown[0] % n
    np.testing.assert_array_equal(rows, cols)
    order = rows.astype(int)
    np.testing.assert_array_equal(shown, K[np.ix_(order, order)])
    grouped = labels[order]
    np.testing.assert_array_equal(grouped, [0, 0, 0, 1, 1, 2, 2, -1, -1])
    frames = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "outlier-block"]
    assert len(frames) == 2
    assert {(f.get_y(), f.get_height()) for f in frames} == {(6.5, 2), (-0.5, n)}
    assert all(to_rgba(f.get_edgecolor()) == to_rgba(OUTLIER_COLOR) for f in frames)


def test_kernel_matrix_names_and_zero_colour():
    K = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [0.5, 0.0, 1.0]])
    ax = plot_kernel_matrix(K, [1, -1, 0], ax=_ax(), names=["a", "b", "c"], zero_color="blue")
    ticks = ax.get_yticklabels()
    assert [t.get_text() for t in ticks] == ["c", "a", "b"]
    assert to_rgba(ticks[2].get_color()) == to_rgba(OUTLIER_COLOR)
    assert to_rgba(ticks[0].get_color()) != to_rgba(OUTLIER_COLOR)
    image = _by_gid(ax.images, "kernel")
    np.testing.assert_array_equal(np.ma.getmaskarray(image.get_array()), K[np.ix_([2, 0, 1],
                                                                                  [2, 0, 1])] == 0)
    assert image.get_cmap().get_bad() == pytest.approx(to_rgba("blue"))
    with pytest.raises(ValueError, match="square"):
        plot_kernel_matrix(np.ones((2, 3)), [0, 1], ax=_ax())


# --------------------------------------------------------------------------
# Figs. 7, 9: graphs
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    G = nx.karate_club_graph()
    G = nx.relabel_nodes(G, {n: f"v{n}" for n in G.nodes})
    labels = np.array([0 if G.nodes[n]["club"] == "Mr. Hi" else 1 for n in G.nodes])
    labels[[0, 33, 11]] = -1
    return G, labels


def test_graph_layout_is_deterministic_and_edges_follow_it(graph):
    G, labels = graph
    first = plot_graph(G, labels, ax=_ax())
    again = plot_graph(G, labels, ax=_ax())
    other = plot_graph(G, labels, ax=_ax(), seed=1)
    offsets = [_by_gid(a.collections, "inliers").get_offsets() for a in (first, again, other)]
    np.testing.assert_array_equal(offsets[0], offsets[1])
    assert not np.allclose(offsets[0], offsets[2])
    pos = nx.spring_layout(G, seed=0)
    inside = labels >= 0
    nodes = list(G.nodes)
    np.testing.assert_allclose(offsets[0], [pos[nodes[i]] for i in np.flatnonzero(inside)])
    edges = _by_gid(first.collections, "edges").get_segments()
    assert len(edges) == G.number_of_edges()
    for segment, (u, v) in zip(edges, G.edges()):
        np.testing.assert_allclose(segment, [pos[u], pos[v]])


def test_graph_outliers_are_diamonds_sized_by_score_and_named_in_bold(graph):
    G, labels = graph
    nodes = list(G.nodes)
    scores = np.zeros(len(nodes))
    scores[[0, 11, 33]] = [3.0, 1.0, 2.0]
    pos = {n: (i, i % 3) for i, n in enumerate(nodes)}
    ax = plot_graph(G, labels, outlier_scores=scores, pos=pos, ax=_ax())
    outliers = _by_gid(ax.collections, "outliers")
    np.testing.assert_allclose(outliers.get_offsets(), [pos["v0"], pos["v11"], pos["v33"]])
    sizes = outliers.get_sizes()
    np.testing.assert_array_equal(np.argsort(sizes), np.argsort([3.0, 1.0, 2.0]))
    assert to_rgba(outliers.get_edgecolors()[0]) == to_rgba(OUTLIER_COLOR)
    assert len(ax.texts) == len(nodes)
    bold = {t.get_text().strip() for t in ax.texts if t.get_fontweight() == "bold"}
    assert bold == {"v0", "v11", "v33"}
    extra = plot_graph(G, labels, outlier_mask=np.arange(len(nodes)) == 5, pos=pos,
                       ax=_ax(), node_names=False)
    assert len(_by_gid(extra.collections, "outliers").get_offsets()) == 4
    assert len(extra.texts) == 0


def test_getting_started_plotting_example_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "getting_started.rst"
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", page.read_text())
    plotting = [re.sub(r"(?m)^   ", "", b) for b in blocks if "robustclust.plotting" in b]
    assert len(plotting) == 1
    monkeypatch.chdir(tmp_path)
    # The names the page's first example defines, rebuilt cheaply (fewer
    # initialisations; tests/test_sessions.py runs the examples as written)
    data = make_blobs_with_outliers(n_outliers=80, random_state=0)
    namespace = {
        "data": data,
        "model": RobustKMeans(4, n_outliers=80, n_init=2, random_state=0).fit(data.X),
        "RobustKMeans": RobustKMeans,
        "regularization_path": regularization_path,
    }
    exec(compile(plotting[0], "getting_started.rst", "exec"), namespace)
    assert (tmp_path / "clusters.png").stat().st_size > 10_000
    assert len(_circles(namespace["left"])) == namespace["model"].n_outliers_
