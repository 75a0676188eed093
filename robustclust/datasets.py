"""Data sets: synthetic sets with planted outliers, and the paper's real data.

The two generators reproduce the synthetic benchmarks of Section VI-A of the
robust clustering paper ("Synthetic Datasets", Fig. 1):

* :func:`make_blobs_with_outliers` -- four spherical Gaussian clusters plus
  outliers scattered around them (Fig. 1(a), Table I);
* :func:`make_rings_with_outliers` -- two concentric rings plus outliers
  between and outside the rings (Fig. 1(b)).

Both return a :class:`sklearn.utils.Bunch` whose ``labels`` follow the
convention used throughout :mod:`robustclust`: cluster indices ``0, 1, ...``
for inliers and ``-1`` for outliers.

The loaders read the real data sets of Sections VI-B to VI-D:

* :func:`load_usps` -- USPS handwritten digits (ESL text files or ``.mat``);
* :func:`load_dolphins` -- Lusseau's dolphin social network (GML);
* :func:`load_football` -- Girvan and Newman's college football network (GML).

Where the loaders look, in order: the folder ``data_home`` (or the
environment variable ``ROBUSTCLUST_DATA``), which is only read; the download
cache ``~/scikit_learn_data/robustclust`` (scikit-learn's data home, moved by
``SCIKIT_LEARN_DATA``); finally the public download location, whose file is
checked and then moved into the cache in one atomic rename. Offline with no
local copy, they raise :class:`FileNotFoundError` naming the folders searched
and the URLs to download by hand.
"""

import numbers

import networkx as nx
import numpy as np
from scipy.stats import truncnorm
from sklearn.utils import Bunch, check_random_state

from ._fetch import ChecksumError, RemoteFile, find_or_download, sha256sum
from ._readers import USPS_SIDE, read_gml, read_usps_mat, read_usps_text

__all__ = [
    "ChecksumError",
    "load_dolphins",
    "load_football",
    "load_usps",
    "make_blobs_with_outliers",
    "make_rings_with_outliers",
]

# Candidates drawn per round of rejection sampling, and the number of rounds
# after which the outlier region is declared (practically) empty.
_OUTLIER_BATCH = 64
_MAX_OUTLIER_ROUNDS = 10_000


def _check_int(value, name, min_value=0):
    """Raise ValueError unless ``value`` is an integer ``>= min_value``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"{name} must be an integer >= {min_value}, got {value!r} "
            f"of type {type(value).__name__}."
        )
    if value < min_value:
        raise ValueError(f"{name} must be an integer >= {min_value}, got {value}.")
    return int(value)


def _check_real(value, name, *, positive=True):
    """Raise ValueError unless ``value`` is a finite real, > 0 (or >= 0)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{name} must be a real number, got {value!r} "
            f"of type {type(value).__name__}."
        )
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}.")
    if not positive and value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}.")
    return value


def _shuffle_fields(rng, fields, n_samples):
    """Apply one random permutation to every per-sample array in ``fields``."""
    perm = rng.permutation(n_samples)
    return {key: value[perm] for key, value in fields.items()}


def _annulus_points(rng, n, r_min, r_max):
    """Draw ``n`` points uniformly (by area) in an annulus around the origin."""
    radius = np.sqrt(rng.uniform(r_min**2, r_max**2, size=n))
    angle = rng.uniform(0.0, 2.0 * np.pi, size=n)
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])


def make_blobs_with_outliers(
    n_outliers=80,
    n_per_cluster=50,
    *,
    center_offset=1.75,
    cluster_variance=0.8,
    outlier_box=5.5,
    min_outlier_distance=3.25,
    shuffle=False,
    random_state=None,
):
    """Four spherical Gaussian clusters contaminated by scattered outliers.

    Reproduces the first synthetic data set of the paper (Section VI-A,
    Fig. 1(a)): ``4 * n_per_cluster`` inliers drawn from four bivariate
    Gaussians with common covariance ``cluster_variance * I_2``, plus
    ``n_outliers`` outlying points. The paper uses 50 points per cluster and
    40 or 80 outliers (N = 240 or 280).

    Geometry (defaults in brackets): the four means sit at the corners of a
    square, ``(-a, -a), (a, -a), (-a, a), (a, a)`` with
    ``a = center_offset`` [1.75]; the outliers are uniform on the square
    ``[-b, b]^2`` with ``b = outlier_box`` [5.5], restricted to points whose
    Euclidean distance to *every* mean exceeds ``r = min_outlier_distance``
    [3.25] (about 3.6 cluster standard deviations for the default variance).

    Parameters
    ----------
    n_outliers : int, default=80
        Number of outlying points (``>= 0``).

    n_per_cluster : int, default=50
        Number of inliers drawn from each of the four Gaussians (``>= 1``).

    center_offset : float, default=1.75
        Half side ``a`` of the square whose corners are the cluster means.

    cluster_variance : float, default=0.8
        Variance of each coordinate; every cluster has covariance
        ``cluster_variance * I_2``.

    outlier_box : float, default=5.5
        Half width ``b`` of the square ``[-b, b]^2`` in which outliers are
        drawn.

    min_outlier_distance : float, default=3.25
        Outliers are at Euclidean distance greater than this from every
        cluster mean (``>= 0``; ``0`` makes them uniform on the whole box).

    shuffle : bool, default=False
        If False, the rows are ordered cluster 0, 1, 2, 3 (``n_per_cluster``
        rows each) followed by the outliers. If True, all per-sample arrays
        are permuted by the same random permutation.

    random_state : int, RandomState instance or None, default=None
        Seed or generator for the draw. Pass an int for reproducible output.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the fields

        X : ndarray of shape (4 * n_per_cluster + n_outliers, 2)
            The points, float64.
        labels : ndarray of shape (n_samples,)
            int64 cluster index in ``0..3`` for inliers, ``-1`` for outliers.
        outlier_mask : ndarray of shape (n_samples,)
            ``True`` for outliers (equal to ``labels == -1``).
        centers : ndarray of shape (4, 2)
            True cluster means; row ``c`` is the mean of cluster ``c``.

    Raises
    ------
    ValueError
        If a count is not a non-negative integer (``n_per_cluster`` must be
        positive), a length or variance is negative, zero where it must be
        positive (``cluster_variance``, ``outlier_box``) or not finite, or
        the outlier region (box minus the discs around the means) is too small to place
        the outliers.

    Notes
    -----
    The paper does not list its means or outlier distribution; this geometry
    was chosen so that plain hard K-means behaves as in its Table I. With
    ``sklearn.cluster.KMeans(n_clusters=4, init="random", n_init=1)`` run for
    100 initialisations (``random_state=0..99``) on one data set, the mean
    :func:`~robustclust.metrics.center_rmse` is 0.73 with 40 outliers and
    1.06 with 80 outliers, averaged over the data seeds
    ``random_state=0..19`` (paper: 0.7227 and 1.0892). Single data seeds give
    0.61 to 0.88 (40 outliers) and 0.90 to 1.23 (80 outliers);
    ``random_state=0`` gives 0.66 and 0.99.

    Inliers are drawn first, then the outliers by rejection sampling in
    fixed-size batches, so for a given integer ``random_state`` and
    ``n_per_cluster`` the outliers of a smaller ``n_outliers`` are exactly the
    first outliers of a larger one (for instance, the 40-outlier set is the
    80-outlier set with its last 40 outliers removed), provided
    ``shuffle=False``.

    Examples
    --------
    >>> from robustclust.datasets import make_blobs_with_outliers
    >>> data = make_blobs_with_outliers(n_outliers=40, random_state=0)
    >>> data.X.shape
    (240, 2)
    >>> int(data.outlier_mask.sum()), sorted(set(data.labels.tolist()))
    (40, [-1, 0, 1, 2, 3])
    >>> data.centers
    array([[-1.75, -1.75],
           [ 1.75, -1.75],
           [-1.75,  1.75],
           [ 1.75,  1.75]])
    """
    n_outliers = _check_int(n_outliers, "n_outliers", 0)
    n_per_cluster = _check_int(n_per_cluster, "n_per_cluster", 1)
    a = _check_real(center_offset, "center_offset", positive=False)
    variance = _check_real(cluster_variance, "cluster_variance")
    b = _check_real(outlier_box, "outlier_box")
    r = _check_real(min_outlier_distance, "min_outlier_distance", positive=False)
    rng = check_random_state(random_state)

    centers = np.array([[-a, -a], [a, -a], [-a, a], [a, a]], dtype=np.float64)
    n_clusters = centers.shape[0]
    inliers = rng.normal(
        scale=np.sqrt(variance), size=(n_clusters, n_per_cluster, 2)
    ) + centers[:, np.newaxis, :]
    inliers = inliers.reshape(-1, 2)

    outliers = np.empty((n_outliers, 2), dtype=np.float64)
    n_found = 0
    rounds = 0
    while n_found < n_outliers:
        if rounds == _MAX_OUTLIER_ROUNDS:
            raise ValueError(
                "Could not place the outliers: the region of the box "
                f"[-{b}, {b}]^2 (outlier_box) farther than "
                f"min_outlier_distance={r} from every cluster mean is empty "
                "or too small. Increase outlier_box or decrease "
                "min_outlier_distance."
            )
        candidates = rng.uniform(-b, b, size=(_OUTLIER_BATCH, 2))
        dist = np.linalg.norm(
            candidates[:, np.newaxis, :] - centers[np.newaxis, :, :], axis=2
        )
        accepted = candidates[dist.min(axis=1) > r]
        take = min(accepted.shape[0], n_outliers - n_found)
        outliers[n_found : n_found + take] = accepted[:take]
        n_found += take
        rounds += 1

    X = np.vstack([inliers, outliers])
    labels = np.concatenate(
        [
            np.repeat(np.arange(n_clusters, dtype=np.int64), n_per_cluster),
            np.full(n_outliers, -1, dtype=np.int64),
        ]
    )
    fields = {"X": X, "labels": labels, "outlier_mask": labels == -1}
    if shuffle:
        fields = _shuffle_fields(rng, fields, X.shape[0])
    return Bunch(**fields, centers=centers)


def make_rings_with_outliers(
    n_inner=50,
    n_outer=150,
    n_outliers=60,
    *,
    inner_radius=1.0,
    outer_radius=4.0,
    noise=0.15,
    outlier_margin=0.5,
    outside_width=1.0,
    shuffle=False,
    random_state=None,
):
    """Two concentric rings contaminated by outliers between and outside them.

    Reproduces the second synthetic data set of the paper (Section VI-A,
    Fig. 1(b)): an inner ring of 50 points, an outer ring of 150 points and
    60 outliers, half of them in the gap between the rings and half outside
    the outer ring (N = 260). Both rings are centred at the origin.

    Geometry (defaults in brackets): a ring point has a uniform random angle
    and radius ``R + noise * z``, where ``R`` is ``inner_radius`` [1.0] or
    ``outer_radius`` [4.0] and ``z`` is standard normal truncated to
    ``[-3, 3]``, so ring radii lie in ``[R - 3 noise, R + 3 noise]``
    ([0.55, 1.45] and [3.55, 4.45] with ``noise`` [0.15]). ``n_outliers // 2``
    "between" outliers are uniform (by area) on the annulus of radii
    ``[inner_radius + outlier_margin, outer_radius - outlier_margin]``
    ([1.5, 3.5]); the remaining "outside" outliers are uniform on the
    annulus ``[outer_radius + outlier_margin,
    outer_radius + outlier_margin + outside_width]`` ([4.5, 5.5]).

    Parameters
    ----------
    n_inner : int, default=50
        Number of points on the inner ring (``>= 1``).

    n_outer : int, default=150
        Number of points on the outer ring (``>= 1``).

    n_outliers : int, default=60
        Number of outliers (``>= 0``); ``n_outliers // 2`` lie between the
        rings and ``n_outliers - n_outliers // 2`` outside the outer ring.

    inner_radius : float, default=1.0
        Nominal radius of the inner ring (``> 0``).

    outer_radius : float, default=4.0
        Nominal radius of the outer ring (``> inner_radius``).

    noise : float, default=0.15
        Standard deviation of the (truncated) Gaussian radial jitter of the
        ring points (``>= 0``, and ``3 * noise < inner_radius``).

    outlier_margin : float, default=0.5
        Radial gap between the nominal ring radii and the outlier annuli
        (``>= 0``). With ``outlier_margin > 3 * noise`` no outlier can fall
        on a ring.

    outside_width : float, default=1.0
        Radial width of the annulus holding the outside outliers (``> 0``).

    shuffle : bool, default=False
        If False, the rows are ordered inner ring, outer ring, between
        outliers, outside outliers. If True, all per-sample arrays are
        permuted by the same random permutation.

    random_state : int, RandomState instance or None, default=None
        Seed or generator for the draw. Pass an int for reproducible output.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the fields

        X : ndarray of shape (n_inner + n_outer + n_outliers, 2)
            The points, float64.
        labels : ndarray of shape (n_samples,)
            int64; ``0`` inner ring, ``1`` outer ring, ``-1`` outliers.
        outlier_mask : ndarray of shape (n_samples,)
            ``True`` for outliers (equal to ``labels == -1``).
        outlier_region : ndarray of shape (n_samples,)
            String array: ``"inlier"`` for ring points, ``"between"`` for
            outliers between the rings, ``"outside"`` for outliers outside
            the outer ring.
        center : ndarray of shape (2,)
            Common centre of the rings, ``[0., 0.]``.
        radii : ndarray of shape (2,)
            Nominal radii ``[inner_radius, outer_radius]``; ``radii[k]`` is
            the radius of the ring with label ``k``.

    Raises
    ------
    ValueError
        If a count is not a non-negative integer (ring sizes must be
        positive), a scale is invalid, ``outer_radius <= inner_radius``,
        ``3 * noise >= inner_radius``, or the between-ring annulus is empty
        (``inner_radius + outlier_margin >= outer_radius - outlier_margin``).

    Notes
    -----
    The paper clusters this set with the Gaussian kernel
    ``exp(-0.2 ||x - y||^2)``, whose length scale (about 1.6) is comparable
    to the gap between the rings, so the default radii keep the data at
    that scale. The outliers are not placed far from the data: the outside
    annulus starts just ``outlier_margin`` beyond the outer ring.

    Examples
    --------
    >>> import numpy as np
    >>> from robustclust.datasets import make_rings_with_outliers
    >>> data = make_rings_with_outliers(random_state=0)
    >>> data.X.shape
    (260, 2)
    >>> np.bincount(data.labels + 1)  # outliers, inner, outer
    array([ 60,  50, 150])
    >>> int((data.outlier_region == "between").sum())
    30
    >>> data.radii
    array([1., 4.])
    """
    n_inner = _check_int(n_inner, "n_inner", 1)
    n_outer = _check_int(n_outer, "n_outer", 1)
    n_outliers = _check_int(n_outliers, "n_outliers", 0)
    inner_radius = _check_real(inner_radius, "inner_radius")
    outer_radius = _check_real(outer_radius, "outer_radius")
    noise = _check_real(noise, "noise", positive=False)
    outlier_margin = _check_real(outlier_margin, "outlier_margin", positive=False)
    outside_width = _check_real(outside_width, "outside_width")
    if outer_radius <= inner_radius:
        raise ValueError(
            f"outer_radius must be greater than inner_radius, got "
            f"outer_radius={outer_radius} and inner_radius={inner_radius}."
        )
    if 3.0 * noise >= inner_radius:
        raise ValueError(
            f"noise must be smaller than inner_radius / 3 = {inner_radius / 3:g} "
            f"so that the inner ring does not reach its centre, got {noise}."
        )
    between_min = inner_radius + outlier_margin
    between_max = outer_radius - outlier_margin
    if between_min >= between_max:
        raise ValueError(
            "outlier_margin is too large for the gap between the rings: "
            f"inner_radius + outlier_margin = {between_min:g} must be smaller "
            f"than outer_radius - outlier_margin = {between_max:g}."
        )
    rng = check_random_state(random_state)

    def ring(n, radius):
        jitter = truncnorm.rvs(-3.0, 3.0, size=n, random_state=rng)
        r = radius + noise * jitter
        angle = rng.uniform(0.0, 2.0 * np.pi, size=n)
        return np.column_stack([r * np.cos(angle), r * np.sin(angle)])

    n_between = n_outliers // 2
    n_outside = n_outliers - n_between
    outside_min = outer_radius + outlier_margin
    X = np.vstack(
        [
            ring(n_inner, inner_radius),
            ring(n_outer, outer_radius),
            _annulus_points(rng, n_between, between_min, between_max),
            _annulus_points(rng, n_outside, outside_min, outside_min + outside_width),
        ]
    )
    labels = np.concatenate(
        [
            np.zeros(n_inner, dtype=np.int64),
            np.ones(n_outer, dtype=np.int64),
            np.full(n_outliers, -1, dtype=np.int64),
        ]
    )
    region = np.array(
        ["inlier"] * (n_inner + n_outer)
        + ["between"] * n_between
        + ["outside"] * n_outside
    )
    fields = {
        "X": X,
        "labels": labels,
        "outlier_mask": labels == -1,
        "outlier_region": region,
    }
    if shuffle:
        fields = _shuffle_fields(rng, fields, X.shape[0])
    return Bunch(
        **fields,
        center=np.zeros(2, dtype=np.float64),
        radii=np.array([inner_radius, outer_radius], dtype=np.float64),
    )


# --------------------------------------------------------------------------
# Real data sets (Section VI-B to VI-D of the paper)
# --------------------------------------------------------------------------

# Public locations of the originals and the sha256 of the exact bytes served
# there. The checksums are None because the originals could not be fetched
# when this module was written and their hosts publish none we know of; a None
# entry means "no checksum": the download is accepted on its content check
# alone, which reads every byte (the gzip and zip CRC-32 of the content) and
# parses the file. Put the digest here once verified, and mismatching
# downloads are refused.
_REMOTES = {
    "zip.train.gz": RemoteFile(
        "zip.train.gz", "https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz", None),
    "zip.test.gz": RemoteFile(
        "zip.test.gz", "https://hastie.su.domains/ElemStatLearn/datasets/zip.test.gz", None),
    "dolphins.zip": RemoteFile(
        "dolphins.zip", "http://www-personal.umich.edu/~mejn/netdata/dolphins.zip", None),
    "football.zip": RemoteFile(
        "football.zip", "http://www-personal.umich.edu/~mejn/netdata/football.zip", None),
}

# sha256 of the reference copies the experiments and tests were run on (the
# project's ``shared/data`` folder). Local files are not required to match
# (a .gml extracted from Newman's zip differs from them), but every loader
# reports the digest of what it read, so a result can say which file it used.
REFERENCE_SHA256 = {
    "usps.mat": "4c62a66012efa5fdd571d35bdb0810d837c87e698304027978e88c68f7ea9e78",
    "dolphins.gml": "2c85a3304d7946dd87576e3f303d72ef8c59b384b80621a461920ed686dc0250",
    "football.gml": "1e271fa2e2ed184078273077fddc48299f0b263923394e4e2c06c4bbc4ea73cc",
}

# Conference index -> name for the football network (the ``value`` node
# attribute), as listed in football.txt of Newman's archive.
FOOTBALL_CONFERENCES = (
    "Atlantic Coast", "Big East", "Big Ten", "Big Twelve", "Conference USA",
    "Independents", "Mid-American", "Mountain West", "Pacific Ten",
    "Southeastern", "Sun Belt", "Western Athletic",
)

_USPS_LAYOUTS = [
    ("usps.mat",),
    ("zip.train.gz", "zip.test.gz"),
    ("zip.train", "zip.test"),
]


def _check_digits(digits):
    """None or a sorted int64 array of distinct digits in 0..9."""
    if digits is None:
        return None
    values = np.atleast_1d(np.asarray(digits))
    if values.size == 0 or values.dtype.kind not in "iu" or values.ndim != 1:
        raise ValueError(f"digits must be None or a non-empty list of integers "
                         f"in 0..9, got {digits!r}.")
    if values.min() < 0 or values.max() > 9:
        raise ValueError(f"digits must lie in 0..9, got {digits!r}.")
    return np.unique(values).astype(np.int64)


def load_usps(data_home=None, *, digits=None, download_if_missing=True):
    """Load the USPS handwritten digits (16x16 grey images, 9298 of them).

    The digits as distributed with *The Elements of Statistical Learning*
    (Hastie, Tibshirani and Friedman): 7291 training and 2007 test images,
    pixels scaled to [-1, 1]. The paper clusters digits 0-5 (Section VI-B).

    Reads, in each folder searched (see Notes), the first of these that is
    present: ``usps.mat`` (MATLAB file with ``Xtr`` (7291x256), ``ytr``,
    ``Xtst`` (2007x256), ``ytst``); the ESL originals ``zip.train.gz`` and
    ``zip.test.gz`` (text, one image per line: the digit, then 256 pixel
    values, whitespace separated); or the same two files uncompressed
    (``zip.train``, ``zip.test``).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding a local copy, searched first and never written to.
        None: the environment variable ``ROBUSTCLUST_DATA`` when set.

    digits : array-like of int or None, default=None
        Keep only images of these digits (e.g. ``range(6)`` for the paper's
        experiment); None keeps all ten.

    download_if_missing : bool, default=True
        When no local copy exists, download ``zip.train.gz`` and
        ``zip.test.gz`` from https://hastie.su.domains/ElemStatLearn/datasets/
        into the cache. False raises instead.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the fields

        data : ndarray of shape (n_samples, 256)
            float64 pixels in [-1, 1], row by row (+1 is ink); the training
            images first, then the test images, each in file order.
        images : ndarray of shape (n_samples, 16, 16)
            The same pixels as images (a view of ``data``).
        target : ndarray of shape (n_samples,)
            int64 digit of each image.
        split : ndarray of shape (n_samples,)
            ``"train"`` or ``"test"``: the ESL file each image comes from.
        target_names : ndarray of shape (n_digits,)
            The digits kept.
        filenames : list of str
            The files read.
        sha256 : list of str
            Digest of each file read (compare with ``REFERENCE_SHA256``).
        DESCR : str
            A short description.

    Raises
    ------
    FileNotFoundError
        No local copy, and ``download_if_missing=False`` or the download
        failed (offline); the message names the folders searched and the
        files to download.
    ChecksumError
        A download arrived corrupted or truncated (an ``OSError``); nothing
        was cached.
    ValueError
        ``digits`` is invalid, or a file is not in the expected format.

    Notes
    -----
    Folders searched, in order: ``data_home`` (or ``$ROBUSTCLUST_DATA``),
    then the download cache ``<scikit-learn data home>/robustclust``
    (``~/scikit_learn_data/robustclust`` unless ``SCIKIT_LEARN_DATA`` is
    set). A download is written to a temporary file in the cache, checked
    (its sha256 when one is recorded, always the gzip CRC and a full parse)
    and renamed into place atomically: the cache never holds a partial file.

    Examples
    --------
    >>> from robustclust.datasets import load_usps
    >>> usps = load_usps("../shared/data", digits=range(6))  # doctest: +SKIP
    >>> usps.data.shape, usps.images.shape  # doctest: +SKIP
    ((6143, 256), (6143, 16, 16))
    """
    digits = _check_digits(digits)
    remotes = (_REMOTES["zip.train.gz"], _REMOTES["zip.test.gz"])
    validate = {remote.filename: read_usps_text for remote in remotes}
    paths = find_or_download("USPS digits", _USPS_LAYOUTS, remotes, data_home=data_home,
                             download_if_missing=download_if_missing, validate=validate)
    if len(paths) == 1:
        X_train, y_train, X_test, y_test = read_usps_mat(paths[0])
    else:
        X_train, y_train = read_usps_text(paths[0])
        X_test, y_test = read_usps_text(paths[1])
    X = np.vstack([X_train, X_test])
    y = np.concatenate([y_train, y_test])
    split = np.array(["train"] * len(y_train) + ["test"] * len(y_test))
    if digits is not None:
        keep = np.isin(y, digits)
        X, y, split = X[keep], y[keep], split[keep]
    return Bunch(
        data=X,
        images=X.reshape(-1, USPS_SIDE, USPS_SIDE),
        target=y,
        split=split,
        target_names=np.arange(10, dtype=np.int64) if digits is None else digits,
        filenames=[str(path) for path in paths],
        sha256=[sha256sum(path) for path in paths],
        DESCR=("USPS handwritten digits (ESL version): 16x16 images, pixels in "
               "[-1, 1]; 7291 training + 2007 test images."),
    )


def _load_graph(name, attribute, data_home, download_if_missing):
    """Read ``<name>.gml`` (or ``<name>.zip``) into the fields every graph Bunch has."""
    remote = _REMOTES[f"{name}.zip"]
    member = f"{name}.gml"
    (path,) = find_or_download(
        f"The {name} network", [(member,), (remote.filename,)], (remote,),
        data_home=data_home, download_if_missing=download_if_missing,
        validate={remote.filename: lambda tmp: read_gml(tmp, member)})
    graph = read_gml(path, member)
    names = list(graph.nodes)
    values = [graph.nodes[node].get(attribute) for node in names]
    truth = None if any(v is None for v in values) else np.asarray(values, dtype=np.int64)
    return graph, truth, Bunch(
        graph=graph,
        node_names=names,
        degrees=np.array([graph.degree(node) for node in names], dtype=np.int64),
        adjacency=nx.to_numpy_array(graph, nodelist=names, dtype=np.float64, weight=None),
        filename=str(path),
        sha256=sha256sum(path),
    )


def load_dolphins(data_home=None, *, download_if_missing=True):
    """Load Lusseau's bottlenose dolphin social network (62 nodes, 159 edges).

    Links join dolphins of Doubtful Sound, New Zealand, seen together more
    often than chance (Lusseau et al., 2003). The paper partitions it with
    kernel robust K-means, C = 4, s = 12 (Section VI-C). Node labels are
    spelled as in the file (``"SN89"``, ``"Kringel"``, ``"Zig"``); the paper
    writes them in lower case.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding a local copy (``dolphins.gml``, or Newman's
        ``dolphins.zip``), searched first and never written to. None: the
        environment variable ``ROBUSTCLUST_DATA`` when set.

    download_if_missing : bool, default=True
        When no local copy exists, download ``dolphins.zip`` from
        http://www-personal.umich.edu/~mejn/netdata/ into the cache. False
        raises instead. The search order, the cache and the checked, atomic
        download are those of :func:`load_usps`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the fields

        graph : networkx.Graph
            The network; nodes are keyed by their GML ``label``.
        node_names : list of str
            The node labels in ``graph.nodes`` order; every per-node array
            below follows this order.
        group : ndarray of shape (n_nodes,) or None
            int64 community (1 or 2) from the node attribute ``group``; None
            when the file has no such attribute (Newman's original file has
            none). ``target`` is the same array.
        degrees : ndarray of shape (n_nodes,)
            int64 degree of each node.
        adjacency : ndarray of shape (n_nodes, n_nodes)
            float64 0/1 adjacency matrix E (symmetric, zero diagonal).
        filename, sha256 : str
            The file read and its digest (compare with ``REFERENCE_SHA256``).
        DESCR : str
            A short description.

    Raises
    ------
    FileNotFoundError
        No local copy, and ``download_if_missing=False`` or the download
        failed (offline); the message names the folders searched and the
        file to download.
    ChecksumError
        A download arrived corrupted or truncated (an ``OSError``); nothing
        was cached.
    ValueError
        The file is not a readable GML graph.

    Examples
    --------
    >>> from robustclust.datasets import load_dolphins
    >>> dolphins = load_dolphins("../shared/data")  # doctest: +SKIP
    >>> dolphins.graph.number_of_nodes(), dolphins.graph.number_of_edges()  # doctest: +SKIP
    (62, 159)
    """
    graph, group, data = _load_graph("dolphins", "group", data_home, download_if_missing)
    data.group = group
    data.target = group
    data.DESCR = ("Dolphin social network of Doubtful Sound (Lusseau et al., 2003): "
                  f"{graph.number_of_nodes()} dolphins, {graph.number_of_edges()} links.")
    return data


def load_football(data_home=None, *, download_if_missing=True):
    """Load Girvan and Newman's college football network (115 nodes, 613 edges).

    Division I-A teams, joined when they played each other in the 2000
    regular season; the node attribute ``value`` is the team's conference
    (12 of them, :data:`FOOTBALL_CONFERENCES`; 5 is the independents). The
    paper partitions it with kernel robust K-means, C = 12, s = 12
    (Section VI-D).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding a local copy (``football.gml``, or Newman's
        ``football.zip``), searched first and never written to. None: the
        environment variable ``ROBUSTCLUST_DATA`` when set.

    download_if_missing : bool, default=True
        When no local copy exists, download ``football.zip`` from
        http://www-personal.umich.edu/~mejn/netdata/ into the cache. False
        raises instead. The search order, the cache and the checked, atomic
        download are those of :func:`load_usps`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the fields

        graph : networkx.Graph
            The network; nodes are keyed by their GML ``label``.
        node_names : list of str
            The team names in ``graph.nodes`` order; every per-node array
            below follows this order.
        value : ndarray of shape (n_nodes,) or None
            int64 conference index 0-11 of each team (None when a node lacks
            the attribute). ``target`` is the same array.
        conference_names : tuple of str
            Name of each conference index.
        degrees : ndarray of shape (n_nodes,)
            int64 degree (games played) of each team.
        adjacency : ndarray of shape (n_nodes, n_nodes)
            float64 0/1 adjacency matrix E (symmetric, zero diagonal).
        filename, sha256 : str
            The file read and its digest (compare with ``REFERENCE_SHA256``).
        DESCR : str
            A short description.

    Raises
    ------
    FileNotFoundError
        No local copy, and ``download_if_missing=False`` or the download
        failed (offline); the message names the folders searched and the
        file to download.
    ChecksumError
        A download arrived corrupted or truncated (an ``OSError``); nothing
        was cached.
    ValueError
        The file is not a readable GML graph.

    Examples
    --------
    >>> from robustclust.datasets import load_football
    >>> football = load_football("../shared/data")  # doctest: +SKIP
    >>> navy = football.node_names.index("Navy")  # doctest: +SKIP
    >>> football.conference_names[football.value[navy]]  # doctest: +SKIP
    'Independents'
    """
    graph, value, data = _load_graph("football", "value", data_home, download_if_missing)
    data.value = value
    data.target = value
    data.conference_names = FOOTBALL_CONFERENCES
    data.DESCR = ("American college football, Division I-A, season 2000 (Girvan and "
                  f"Newman, 2002): {graph.number_of_nodes()} teams, "
                  f"{graph.number_of_edges()} games, conferences in `value`.")
    return data
