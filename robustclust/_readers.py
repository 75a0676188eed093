"""Parsers for the file formats of the real data sets (no I/O policy here).

* USPS digits as distributed with *The Elements of Statistical Learning*:
  the text files ``zip.train(.gz)`` / ``zip.test(.gz)`` (one image per
  line: the digit, then 256 pixel values in [-1, 1], whitespace separated)
  and the MATLAB layout with variables ``Xtr``, ``ytr``, ``Xtst``, ``ytst``.
* Graphs in GML (Mark Newman's network data), plain or inside a ``.zip``.

Formats are recognised by content (gzip and zip magic bytes), not by file
name, so the loaders can validate a download under its temporary name.
Every reader raises ValueError when the content is not what it expects.
"""

import gzip
import zipfile

import networkx as nx
import numpy as np
from scipy.io import loadmat

USPS_SIDE = 16
USPS_N_PIXELS = USPS_SIDE * USPS_SIDE
_GZIP_MAGIC = b"\x1f\x8b"


def _is_gzip(path):
    with open(path, "rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def _check_usps_arrays(X, y, source):
    """Validate one split and return it as float64 pixels and int64 digits."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    if X.ndim != 2 or X.shape[1] != USPS_N_PIXELS:
        raise ValueError(f"{source}: expected {USPS_N_PIXELS} pixels per image, "
                         f"got an array of shape {X.shape}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{source}: {X.shape[0]} images but {y.shape[0]} labels.")
    if X.shape[0] == 0:
        raise ValueError(f"{source}: no images.")
    if not np.all(np.isfinite(X)) or X.min() < -1.0 or X.max() > 1.0:
        raise ValueError(f"{source}: pixel values must be finite and in [-1, 1], "
                         f"got range [{np.nanmin(X)}, {np.nanmax(X)}].")
    labels = y.astype(np.float64)
    if np.any(labels != np.round(labels)) or labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{source}: labels must be the digits 0-9.")
    return X, labels.astype(np.int64)


def read_usps_text(path):
    """One ESL text file (gzip-compressed or not) → (pixels (n, 256), digits (n,))."""
    opener = gzip.open if _is_gzip(path) else open
    try:
        with opener(path, "rt", encoding="ascii") as fh:
            table = np.loadtxt(fh, dtype=np.float64, ndmin=2)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        # gzip.BadGzipFile is an OSError; a truncated archive an EOFError.
        raise ValueError(f"{path}: not a readable ESL digits file ({exc}).") from exc
    if table.shape[1] != 1 + USPS_N_PIXELS:
        raise ValueError(f"{path}: expected {1 + USPS_N_PIXELS} numbers per line "
                         f"(digit + {USPS_N_PIXELS} pixels), got {table.shape[1]}.")
    return _check_usps_arrays(table[:, 1:], table[:, 0], str(path))


def read_usps_mat(path):
    """The ``.mat`` layout → (X_train, y_train, X_test, y_test)."""
    mat = loadmat(path)
    missing = [key for key in ("Xtr", "ytr", "Xtst", "ytst") if key not in mat]
    if missing:
        raise ValueError(f"{path}: missing variables {missing}; expected Xtr, ytr, "
                         "Xtst, ytst as in the ESL USPS .mat layout.")
    X_train, y_train = _check_usps_arrays(mat["Xtr"], mat["ytr"], f"{path}:Xtr")
    X_test, y_test = _check_usps_arrays(mat["Xtst"], mat["ytst"], f"{path}:Xtst")
    return X_train, y_train, X_test, y_test


def read_gml(path, member):
    """A GML graph from ``path``, or from the entry ``member`` when it is a zip.

    Nodes are keyed by their ``label`` attribute (``networkx.parse_gml``
    with ``label="label"``). Text is decoded as UTF-8, falling back to
    Latin-1 (the GML standard's character set).
    """
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
            if bad is not None:
                raise ValueError(f"{path}: corrupted zip entry {bad!r} (CRC mismatch).")
            names = [name for name in archive.namelist() if name.rsplit("/", 1)[-1] == member]
            if not names:
                raise ValueError(f"{path}: no {member!r} in the archive "
                                 f"(entries: {archive.namelist()}).")
            raw = archive.read(names[0])
    else:
        with open(path, "rb") as fh:
            raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    try:
        graph = nx.parse_gml(text, label="label")
    except nx.NetworkXError as exc:
        raise ValueError(f"{path}: not a readable GML graph ({exc}).") from exc
    if graph.number_of_nodes() == 0:
        raise ValueError(f"{path}: the graph has no nodes.")
    return graph
