import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans

from robustclust.datasets import make_blobs_with_outliers, make_rings_with_outliers
from robustclust.metrics import center_rmse

# Documented default geometry of make_blobs_with_outliers.
BLOB_OFFSET = 1.75
BLOB_BOX = 5.5
BLOB_MIN_DIST = 3.25

# Documented default geometry of make_rings_with_outliers.
INNER_RADIUS, OUTER_RADIUS, NOISE, MARGIN, OUTSIDE_WIDTH = 1.0, 4.0, 0.15, 0.5, 1.0


def _radii(X):
    return np.linalg.norm(X, axis=1)


# --------------------------------------------------------------------------
# make_blobs_with_outliers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_outliers", [0, 40, 80])
def test_blobs_shapes_dtypes_and_counts(n_outliers):
    data = make_blobs_with_outliers(n_outliers=n_outliers, random_state=0)
    n_samples = 200 + n_outliers
    assert data.X.shape == (n_samples, 2)
    assert data.X.dtype == np.float64
    assert data.labels.shape == (n_samples,)
    assert data.labels.dtype == np.int64
    assert data.outlier_mask.dtype == np.bool_
    assert data.centers.shape == (4, 2)
    np.testing.assert_array_equal(data.outlier_mask, data.labels == -1)
    assert data.outlier_mask.sum() == n_outliers
    np.testing.assert_array_equal(np.bincount(data.labels[data.labels >= 0]), [50] * 4)
    assert np.all(np.isfinite(data.X))


def test_blobs_rows_are_ordered_clusters_then_outliers():
    data = make_blobs_with_outliers(n_outliers=40, n_per_cluster=7, random_state=0)
    expected = np.concatenate([np.repeat(np.arange(4), 7), np.full(40, -1)])
    np.testing.assert_array_equal(data.labels, expected)


def test_blobs_centers_are_the_documented_square():
    data = make_blobs_with_outliers(random_state=0)
    a = BLOB_OFFSET
    np.testing.assert_array_equal(data.centers, [[-a, -a], [a, -a], [-a, a], [a, a]])
    custom = make_blobs_with_outliers(
        center_offset=3.0, outlier_box=8.0, random_state=0
    )
    np.testing.assert_array_equal(custom.centers, [[-3, -3], [3, -3], [-3, 3], [3, 3]])


def test_blobs_outliers_lie_in_documented_region():
    data = make_blobs_with_outliers(n_outliers=500, random_state=1)
    outliers = data.X[data.outlier_mask]
    assert np.all(np.abs(outliers) <= BLOB_BOX)
    dist = np.linalg.norm(outliers[:, None, :] - data.centers[None, :, :], axis=2)
    assert np.all(dist > BLOB_MIN_DIST)
    # The outliers surround the clusters: every quadrant gets some of them.
    quadrant = (outliers[:, 0] > 0).astype(int) * 2 + (outliers[:, 1] > 0)
    assert np.all(np.bincount(quadrant, minlength=4) > 50)


def test_blobs_outlier_region_parameters_are_honoured():
    data = make_blobs_with_outliers(
        n_outliers=300, center_offset=2.0, outlier_box=7.0,
        min_outlier_distance=4.0, random_state=3,
    )
    outliers = data.X[data.outlier_mask]
    assert np.all(np.abs(outliers) <= 7.0)
    dist = np.linalg.norm(outliers[:, None, :] - data.centers[None, :, :], axis=2)
    assert np.all(dist > 4.0)
    # The box is really used up to its edges.
    assert np.abs(outliers).max() > 6.5


def test_blobs_inliers_follow_the_documented_gaussians():
    data = make_blobs_with_outliers(n_outliers=0, n_per_cluster=4000, random_state=0)
    for c in range(4):
        points = data.X[data.labels == c]
        np.testing.assert_allclose(points.mean(axis=0), data.centers[c], atol=0.06)
        np.testing.assert_allclose(np.cov(points.T), 0.8 * np.eye(2), atol=0.06)


def test_blobs_cluster_variance_parameter():
    data = make_blobs_with_outliers(
        n_outliers=0, n_per_cluster=4000, cluster_variance=0.2, random_state=0
    )
    points = data.X[data.labels == 0]
    np.testing.assert_allclose(np.cov(points.T), 0.2 * np.eye(2), atol=0.02)


def test_blobs_reproducible_with_random_state():
    first = make_blobs_with_outliers(random_state=42)
    second = make_blobs_with_outliers(random_state=42)
    for key in ("X", "labels", "outlier_mask", "centers"):
        np.testing.assert_array_equal(first[key], second[key])
    third = make_blobs_with_outliers(random_state=np.random.RandomState(42))
    np.testing.assert_array_equal(first.X, third.X)
    other = make_blobs_with_outliers(random_state=43)
    assert not np.allclose(first.X, other.X)


def test_blobs_smaller_outlier_set_is_a_prefix_of_larger_one():
    small = make_blobs_with_outliers(n_outliers=40, random_state=5)
    large = make_blobs_with_outliers(n_outliers=80, random_state=5)
    np.testing.assert_array_equal(small.X, large.X[:240])
    np.testing.assert_array_equal(small.labels, large.labels[:240])


def test_blobs_shuffle_permutes_rows_consistently():
    plain = make_blobs_with_outliers(n_outliers=40, random_state=7)
    shuffled = make_blobs_with_outliers(n_outliers=40, shuffle=True, random_state=7)
    assert not np.array_equal(plain.labels, shuffled.labels)
    assert np.array_equal(np.sort(plain.labels), np.sort(shuffled.labels))
    np.testing.assert_array_equal(shuffled.outlier_mask, shuffled.labels == -1)
    lookup = {tuple(x): label for x, label in zip(plain.X, plain.labels)}
    assert len(lookup) == plain.X.shape[0]
    for x, label in zip(shuffled.X, shuffled.labels):
        assert lookup[tuple(x)] == label


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_outliers": -1}, "n_outliers"),
        ({"n_outliers": 2.5}, "n_outliers"),
        ({"n_outliers": True}, "n_outliers"),
        ({"n_outliers": "40"}, "n_outliers"),
        ({"n_per_cluster": 0}, "n_per_cluster"),
        ({"center_offset": -1.0}, "center_offset"),
        ({"cluster_variance": 0.0}, "cluster_variance"),
        ({"cluster_variance": np.nan}, "cluster_variance"),
        ({"outlier_box": -2.0}, "outlier_box"),
        ({"min_outlier_distance": np.inf}, "min_outlier_distance"),
        ({"min_outlier_distance": -0.5}, "min_outlier_distance"),
    ],
)
def test_blobs_invalid_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_blobs_with_outliers(random_state=0, **kwargs)


def test_blobs_empty_outlier_region_raises():
    with pytest.raises(ValueError, match="Could not place the outliers"):
        make_blobs_with_outliers(
            outlier_box=2.0, min_outlier_distance=5.0, random_state=0
        )
    # Without outliers the (empty) region is never sampled.
    data = make_blobs_with_outliers(
        n_outliers=0, outlier_box=2.0, min_outlier_distance=5.0, random_state=0
    )
    assert data.X.shape == (200, 2)


def _kmeans_mean_rmse(data, n_inits):
    errors = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(n_inits):
            km = KMeans(n_clusters=4, init="random", n_init=1, random_state=seed)
            errors.append(center_rmse(data.centers, km.fit(data.X).cluster_centers_))
    return float(np.mean(errors))


@pytest.mark.parametrize(
    "n_outliers, paper_rmse, band",
    [(40, 0.7227, (0.55, 0.90)), (80, 1.0892, (0.90, 1.30))],
)
def test_blobs_kmeans_rmse_close_to_paper_table_1(n_outliers, paper_rmse, band):
    # Plain hard K-means (one random initialisation per run) should be hurt
    # by the outliers about as much as in Table I of the paper. Averaged
    # over data seeds 0..4 with 20 initialisations each the measured values
    # are 0.77 (40 outliers) and 1.05 (80 outliers); with 100
    # initialisations and data seeds 0..19 they are 0.73 and 1.06.
    rmse = np.mean(
        [
            _kmeans_mean_rmse(
                make_blobs_with_outliers(n_outliers=n_outliers, random_state=s), 20
            )
            for s in range(5)
        ]
    )
    assert band[0] <= rmse <= band[1]
    assert abs(rmse - paper_rmse) < 0.15


def test_blobs_kmeans_error_is_caused_by_the_outliers():
    # Same inliers without the outliers: K-means is then far more accurate,
    # so the band above measures outlier damage, not a hard geometry.
    clean = make_blobs_with_outliers(n_outliers=0, random_state=0)
    assert _kmeans_mean_rmse(clean, 20) < 0.5 * 0.7227


# --------------------------------------------------------------------------
# make_rings_with_outliers
# --------------------------------------------------------------------------


def test_rings_shapes_dtypes_and_counts():
    data = make_rings_with_outliers(random_state=0)
    assert data.X.shape == (260, 2)
    assert data.X.dtype == np.float64
    assert data.labels.dtype == np.int64
    assert data.outlier_mask.dtype == np.bool_
    np.testing.assert_array_equal(np.bincount(data.labels + 1), [60, 50, 150])
    np.testing.assert_array_equal(data.outlier_mask, data.labels == -1)
    np.testing.assert_array_equal(data.center, [0.0, 0.0])
    np.testing.assert_array_equal(data.radii, [INNER_RADIUS, OUTER_RADIUS])
    assert data.outlier_region.shape == (260,)
    assert set(data.outlier_region.tolist()) == {"inlier", "between", "outside"}


def test_rings_outliers_split_thirty_thirty():
    data = make_rings_with_outliers(random_state=0)
    region = data.outlier_region
    assert np.sum(region == "between") == 30
    assert np.sum(region == "outside") == 30
    np.testing.assert_array_equal(region == "inlier", ~data.outlier_mask)


def test_rings_rows_are_ordered():
    data = make_rings_with_outliers(n_inner=3, n_outer=4, n_outliers=5, random_state=0)
    np.testing.assert_array_equal(data.labels, [0] * 3 + [1] * 4 + [-1] * 5)
    np.testing.assert_array_equal(
        data.outlier_region, ["inlier"] * 7 + ["between"] * 2 + ["outside"] * 3
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rings_radii_in_documented_ranges(seed):
    data = make_rings_with_outliers(random_state=seed)
    r = _radii(data.X - data.center)
    inner, outer = r[data.labels == 0], r[data.labels == 1]
    between = r[data.outlier_region == "between"]
    outside = r[data.outlier_region == "outside"]
    assert np.all(np.abs(inner - INNER_RADIUS) <= 3 * NOISE)
    assert np.all(np.abs(outer - OUTER_RADIUS) <= 3 * NOISE)
    assert np.all(between >= INNER_RADIUS + MARGIN)
    assert np.all(between <= OUTER_RADIUS - MARGIN)
    lo = OUTER_RADIUS + MARGIN
    assert np.all((outside >= lo) & (outside <= lo + OUTSIDE_WIDTH))
    # Outliers never fall on a ring, since MARGIN > 3 * NOISE.
    assert between.min() > inner.max() and between.max() < outer.min()
    assert outside.min() > outer.max()


def test_rings_jitter_scale_and_full_angles():
    data = make_rings_with_outliers(
        n_inner=3000, n_outer=3000, n_outliers=0, random_state=0
    )
    r = _radii(data.X)
    for label, radius in enumerate([INNER_RADIUS, OUTER_RADIUS]):
        ring_r = r[data.labels == label]
        assert abs(ring_r.mean() - radius) < 0.01
        # Standard normal truncated at +/-3 has sd 0.9866.
        assert ring_r.std() == pytest.approx(NOISE * 0.9866, rel=0.05)
        angle = np.arctan2(*data.X[data.labels == label].T[::-1])
        counts = np.histogram(angle, bins=8, range=(-np.pi, np.pi))[0]
        assert counts.min() > 0.8 * 3000 / 8


def test_rings_zero_noise_puts_points_exactly_on_rings():
    data = make_rings_with_outliers(noise=0.0, random_state=0)
    r = _radii(data.X)
    np.testing.assert_allclose(r[data.labels == 0], INNER_RADIUS)
    np.testing.assert_allclose(r[data.labels == 1], OUTER_RADIUS)


def test_rings_outliers_are_uniform_by_area():
    data = make_rings_with_outliers(n_outliers=20000, random_state=0)
    r2 = _radii(data.X) ** 2
    lo, hi = INNER_RADIUS + MARGIN, OUTER_RADIUS - MARGIN
    # Uniform by area means r^2 is uniform on [lo^2, hi^2].
    assert r2[data.outlier_region == "between"].mean() == pytest.approx(
        (lo**2 + hi**2) / 2, rel=0.02
    )


def test_rings_odd_number_of_outliers():
    data = make_rings_with_outliers(n_outliers=7, random_state=0)
    assert np.sum(data.outlier_region == "between") == 3
    assert np.sum(data.outlier_region == "outside") == 4


def test_rings_custom_geometry():
    data = make_rings_with_outliers(
        inner_radius=2.0, outer_radius=6.0, noise=0.1, outlier_margin=1.0,
        outside_width=0.5, random_state=0,
    )
    np.testing.assert_array_equal(data.radii, [2.0, 6.0])
    r = _radii(data.X)
    assert np.all(np.abs(r[data.labels == 1] - 6.0) <= 0.3)
    between = r[data.outlier_region == "between"]
    outside = r[data.outlier_region == "outside"]
    assert np.all((between >= 3.0) & (between <= 5.0))
    assert np.all((outside >= 7.0) & (outside <= 7.5))


def test_rings_reproducible_with_random_state():
    first = make_rings_with_outliers(random_state=3)
    second = make_rings_with_outliers(random_state=3)
    np.testing.assert_array_equal(first.X, second.X)
    np.testing.assert_array_equal(first.outlier_region, second.outlier_region)
    other = make_rings_with_outliers(random_state=4)
    assert not np.allclose(first.X, other.X)


def test_rings_shuffle_permutes_rows_consistently():
    plain = make_rings_with_outliers(random_state=7)
    shuffled = make_rings_with_outliers(shuffle=True, random_state=7)
    assert not np.array_equal(plain.labels, shuffled.labels)
    lookup = {
        tuple(x): (label, region)
        for x, label, region in zip(plain.X, plain.labels, plain.outlier_region)
    }
    assert len(lookup) == plain.X.shape[0]
    for x, label, region in zip(shuffled.X, shuffled.labels, shuffled.outlier_region):
        assert lookup[tuple(x)] == (label, region)
    np.testing.assert_array_equal(shuffled.outlier_mask, shuffled.labels == -1)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_inner": 0}, "n_inner"),
        ({"n_outer": -3}, "n_outer"),
        ({"n_outliers": -1}, "n_outliers"),
        ({"n_outliers": 6.0}, "n_outliers"),
        ({"inner_radius": 0.0}, "inner_radius"),
        ({"outer_radius": 0.5}, "outer_radius"),
        ({"noise": -0.1}, "noise"),
        ({"noise": 0.4}, "noise"),
        ({"outlier_margin": -1.0}, "outlier_margin"),
        ({"outlier_margin": 1.5}, "outlier_margin"),
        ({"outside_width": 0.0}, "outside_width"),
    ],
)
def test_rings_invalid_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_rings_with_outliers(random_state=0, **kwargs)
