"""Loaders of the real data sets: formats, search order, checked atomic downloads.

Tests marked ``shared`` read the project's reference copies in
``../shared/data`` and are skipped where that folder is absent (a user's
checkout). Everything else builds its own small files in ``tmp_path`` and
serves downloads from a local HTTP server: no test touches the internet.
"""

import gzip
import hashlib
import http.server
import io
import os
import threading
import urllib.error
import zipfile
from functools import partial
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from scipy.io import savemat

from robustclust import datasets
from robustclust._fetch import RemoteFile
from robustclust.datasets import (
    REFERENCE_SHA256,
    ChecksumError,
    load_dolphins,
    load_football,
    load_usps,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
shared = pytest.mark.skipif(
    not all((SHARED / name).is_file() for name in REFERENCE_SHA256),
    reason=f"reference data copies not found in {SHARED} (the project's shared/data "
           "folder, absent from a user's checkout)",
)

USPS_TRAIN_COUNTS = [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]
USPS_TEST_COUNTS = [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Point the download cache into tmp_path and forget $ROBUSTCLUST_DATA."""
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sklearn_home"))
    monkeypatch.delenv("ROBUSTCLUST_DATA", raising=False)
    return tmp_path / "sklearn_home" / "robustclust"


@pytest.fixture
def offline(monkeypatch):
    """Every download attempt fails as it does without a network; count the attempts."""
    attempts = []

    def fail(request, *args, **kwargs):
        attempts.append(request.full_url)
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr("urllib.request.urlopen", fail)
    return attempts


def _files(folder):
    """Every file under folder (hidden temporary files included)."""
    folder = Path(folder)
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# --------------------------------------------------------------------------
# small synthetic files in the original formats
# --------------------------------------------------------------------------


def _esl_text(X, y):
    """ESL layout: digit, then the pixels, space separated, a trailing space per line."""
    lines = [" ".join([f"{label:.4f}"] + [f"{v:.4f}" for v in row]) + " "
             for label, row in zip(y, X)]
    return ("\n".join(lines) + "\n").encode("ascii")


def _fake_usps(rng, n):
    X = np.round(rng.uniform(-1, 1, size=(n, 256)), 4)
    X[:, 0], X[:, 1] = -1.0, 1.0
    y = rng.integers(0, 10, size=n)
    return X, y


def _write_esl(folder, rng, n_train=12, n_test=5, compress=True):
    folder.mkdir(parents=True, exist_ok=True)
    (X_tr, y_tr), (X_te, y_te) = _fake_usps(rng, n_train), _fake_usps(rng, n_test)
    for name, (X, y) in {"zip.train": (X_tr, y_tr), "zip.test": (X_te, y_te)}.items():
        raw = _esl_text(X, y)
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(raw))
        else:
            (folder / name).write_bytes(raw)
    return X_tr, y_tr, X_te, y_te


def _gml(n_nodes, edges, attribute=None, creator=True):
    """GML text as in Newman's files (a Creator line before the graph)."""
    out = ['Creator "test"\n' if creator else "", "graph\n[\n  directed 0\n"]
    for i in range(n_nodes):
        extra = f"    {attribute} {i % 2}\n" if attribute else ""
        out.append(f'  node\n  [\n    id {i}\n    label "n{i}"\n{extra}  ]\n')
    for a, b in edges:
        out.append(f"  edge\n  [\n    source {a}\n    target {b}\n  ]\n")
    out.append("]\n")
    return "".join(out)


def _zip_bytes(member, text):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, text)
        archive.writestr(member.replace(".gml", ".txt"), "description")
    return buffer.getvalue()


# --------------------------------------------------------------------------
# a local HTTP server standing in for the public download locations
# --------------------------------------------------------------------------


class _QuietFileHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """Serve tmp_path/served over HTTP on localhost; yields the base URL and the folder."""
    root = tmp_path / "served"
    root.mkdir()
    handler = partial(_QuietFileHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _serve_as(monkeypatch, filename, url, sha256):
    monkeypatch.setitem(datasets._REMOTES, filename, RemoteFile(filename, url, sha256))


# --------------------------------------------------------------------------
# the reference copies in ../shared/data
# --------------------------------------------------------------------------


@shared
def test_reference_copies_match_their_documented_checksums():
    for name, digest in REFERENCE_SHA256.items():
        assert hashlib.sha256((SHARED / name).read_bytes()).hexdigest() == digest
    assert load_usps(SHARED).sha256 == [REFERENCE_SHA256["usps.mat"]]
    assert load_dolphins(SHARED).sha256 == REFERENCE_SHA256["dolphins.gml"]
    assert load_football(SHARED).sha256 == REFERENCE_SHA256["football.gml"]


@shared
def test_usps_shapes_ranges_and_label_counts(offline):
    usps = load_usps(SHARED)
    assert usps.data.shape == (7291 + 2007, 256)
    assert usps.data.dtype == np.float64
    assert usps.data.min() == -1.0 and usps.data.max() == 1.0
    assert usps.images.shape == (9298, 16, 16)
    assert np.shares_memory(usps.images, usps.data)
    assert usps.target.dtype == np.int64
    train, test = usps.split == "train", usps.split == "test"
    assert train.sum() == 7291 and test.sum() == 2007
    assert np.all(train[:7291]) and np.all(test[7291:])  # training images first
    np.testing.assert_array_equal(np.bincount(usps.target[train]), USPS_TRAIN_COUNTS)
    np.testing.assert_array_equal(np.bincount(usps.target[test]), USPS_TEST_COUNTS)
    np.testing.assert_array_equal(usps.target_names, np.arange(10))
    assert usps.filenames == [str(SHARED / "usps.mat")]
    assert offline == []  # a local copy: no download attempted


@shared
def test_usps_images_are_upright_row_major():
    # The first training image is a 6: ink (+1) in the bottom loop, none in the
    # top right corner, which only holds with row-major 16x16 images.
    usps = load_usps(SHARED)
    six = usps.images[0]
    assert usps.target[0] == 6
    assert (six[12:, 2:12] > 0).sum() > 25
    assert (six[:5, 11:] > 0).sum() == 0


@shared
def test_usps_digits_filter_keeps_rows_in_order():
    full = load_usps(SHARED)
    part = load_usps(SHARED, digits=range(6))
    keep = full.target < 6
    assert part.data.shape == (6143, 256)
    np.testing.assert_array_equal(part.data, full.data[keep])
    np.testing.assert_array_equal(part.target, full.target[keep])
    np.testing.assert_array_equal(part.split, full.split[keep])
    np.testing.assert_array_equal(part.target_names, np.arange(6))
    only = load_usps(SHARED, digits=[9, 3])
    assert set(only.target) == {3, 9}
    assert len(only.target) == USPS_TRAIN_COUNTS[3] + USPS_TRAIN_COUNTS[9] + \
        USPS_TEST_COUNTS[3] + USPS_TEST_COUNTS[9]


@pytest.mark.parametrize("digits", [[10], [-1], [], [1.5], ["a"], [[1, 2]]])
def test_usps_rejects_bad_digits(digits):
    with pytest.raises(ValueError, match="digits"):
        load_usps("/nonexistent", digits=digits)


@shared
def test_environment_variable_names_the_data_folder(monkeypatch, offline):
    monkeypatch.setenv("ROBUSTCLUST_DATA", str(SHARED))
    assert load_dolphins().graph.number_of_nodes() == 62
    assert load_usps(digits=[0]).data.shape == (1194 + 359, 256)
    assert offline == []


@shared
def test_dolphins_graph_names_and_ground_truth():
    dolphins = load_dolphins(SHARED)
    graph = dolphins.graph
    assert isinstance(graph, nx.Graph) and not graph.is_directed()
    assert (graph.number_of_nodes(), graph.number_of_edges()) == (62, 159)
    assert dolphins.node_names == list(graph.nodes)
    # The dolphins the paper discusses, with the degrees it quotes
    # (sn89 2, sn100 7, tr99 7, kringel 9; zig has a single link).
    degree = dict(zip(dolphins.node_names, dolphins.degrees))
    assert {name: degree[name] for name in ("SN89", "SN100", "TR99", "Kringel", "Zig")} == \
        {"SN89": 2, "SN100": 7, "TR99": 7, "Kringel": 9, "Zig": 1}
    assert dolphins.group.dtype == np.int64 and set(dolphins.group) == {1, 2}
    assert dolphins.target is dolphins.group
    np.testing.assert_array_equal(np.bincount(dolphins.group), [0, 19, 43])
    A = dolphins.adjacency
    assert A.shape == (62, 62)
    np.testing.assert_array_equal(A, A.T)
    assert np.all(np.diag(A) == 0) and set(np.unique(A)) == {0.0, 1.0}
    np.testing.assert_array_equal(A.sum(axis=1), dolphins.degrees)
    i, j = dolphins.node_names.index("SN89"), dolphins.node_names.index("SN100")
    assert A[i, j] == graph.has_edge("SN89", "SN100")


@shared
def test_football_graph_and_conferences():
    football = load_football(SHARED)
    graph = football.graph
    assert (graph.number_of_nodes(), graph.number_of_edges()) == (115, 613)
    assert football.node_names == list(graph.nodes)
    assert football.value.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(football.value),
                                  [9, 8, 11, 12, 10, 5, 13, 8, 10, 12, 7, 10])
    assert football.target is football.value
    assert len(football.conference_names) == 12
    conference = {name: football.conference_names[v]
                  for name, v in zip(football.node_names, football.value)}
    assert conference["NotreDame"] == conference["Navy"] == "Independents"
    assert conference["Toledo"] == conference["MiamiOhio"] == "Mid-American"
    assert conference["BrighamYoung"] == "Mountain West"
    assert conference["FloridaState"] == "Atlantic Coast"
    # The paper's 12 outlier teams are all nodes of the graph.
    paper = ["Connecticut", "Navy", "NotreDame", "NorthernIllinois", "Toledo", "MiamiOhio",
             "BowlingGreenState", "CentralMichigan", "EasternMichigan", "Kent", "Ohio",
             "Marshall"]
    assert set(paper) <= set(football.node_names)
    np.testing.assert_array_equal(football.adjacency.sum(axis=1), football.degrees)
    assert football.adjacency.sum() == 2 * 613


# --------------------------------------------------------------------------
# file formats, from small files written here
# --------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False])
def test_usps_reads_the_esl_text_format(tmp_path, compress, offline):
    rng = np.random.default_rng(0)
    X_tr, y_tr, X_te, y_te = _write_esl(tmp_path / "esl", rng, compress=compress)
    usps = load_usps(tmp_path / "esl")
    np.testing.assert_array_equal(usps.data, np.vstack([X_tr, X_te]))
    np.testing.assert_array_equal(usps.target, np.concatenate([y_tr, y_te]))
    assert list(usps.split) == ["train"] * 12 + ["test"] * 5
    suffix = ".gz" if compress else ""
    assert usps.filenames == [str(tmp_path / "esl" / f"zip.{s}{suffix}") for s in ("train", "test")]
    np.testing.assert_array_equal(usps.images[3], X_tr[3].reshape(16, 16))
    assert offline == []


@shared
def test_usps_text_and_mat_layouts_agree(tmp_path):
    mat = load_usps(SHARED)
    folder = tmp_path / "esl"
    folder.mkdir()
    train = mat.split == "train"
    for name, rows in (("zip.train.gz", train), ("zip.test.gz", ~train)):
        lines = [" ".join([str(int(t))] + [repr(float(v)) for v in x])
                 for t, x in zip(mat.target[rows], mat.data[rows])]
        (folder / name).write_bytes(gzip.compress("\n".join(lines).encode()))
    text = load_usps(folder, digits=[0, 1, 2, 3, 4, 5])
    mat6 = load_usps(SHARED, digits=range(6))
    np.testing.assert_array_equal(text.data, mat6.data)
    np.testing.assert_array_equal(text.target, mat6.target)
    np.testing.assert_array_equal(text.split, mat6.split)


def test_usps_reads_the_mat_layout_and_prefers_it(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "both"
    _write_esl(folder, rng)  # the .mat must win over these
    X_tr, y_tr = _fake_usps(rng, 7)
    X_te, y_te = _fake_usps(rng, 3)
    savemat(folder / "usps.mat", {"Xtr": X_tr, "ytr": y_tr[:, None].astype(np.uint8),
                                  "Xtst": X_te, "ytst": y_te[:, None].astype(np.uint8)})
    usps = load_usps(folder)
    np.testing.assert_array_equal(usps.data, np.vstack([X_tr, X_te]))
    np.testing.assert_array_equal(usps.target, np.concatenate([y_tr, y_te]))
    assert usps.filenames == [str(folder / "usps.mat")]


@pytest.mark.parametrize("problem, match", [
    ("columns", "257 numbers per line"),
    ("label", "digits 0-9"),
    ("pixel", r"\[-1, 1\]"),
    ("garbage", "ESL digits file"),
])
def test_usps_rejects_malformed_text(tmp_path, problem, match):
    rng = np.random.default_rng(2)
    X, y = _fake_usps(rng, 4)
    if problem == "label":
        y[1] = 11
    if problem == "pixel":
        X[2, 5] = 2.0
    raw = _esl_text(X[:, :-1] if problem == "columns" else X, y)
    if problem == "garbage":
        raw = gzip.compress(raw)[:-20]  # truncated archive: CRC/end marker missing
    else:
        raw = gzip.compress(raw)
    (tmp_path / "zip.train.gz").write_bytes(raw)
    (tmp_path / "zip.test.gz").write_bytes(gzip.compress(_esl_text(*_fake_usps(rng, 2))))
    with pytest.raises(ValueError, match=match):
        load_usps(tmp_path)


def test_usps_mat_with_missing_variables_is_rejected(tmp_path):
    savemat(tmp_path / "usps.mat", {"X": np.zeros((2, 256))})
    with pytest.raises(ValueError, match="Xtr, ytr, Xtst, ytst"):
        load_usps(tmp_path)


def test_graph_loader_reads_gml_and_newman_zip(tmp_path, offline):
    edges = [(0, 1), (1, 2), (2, 0), (2, 3)]
    (tmp_path / "gml").mkdir()
    (tmp_path / "gml" / "football.gml").write_text(_gml(4, edges, attribute="value"))
    football = load_football(tmp_path / "gml")
    assert football.node_names == ["n0", "n1", "n2", "n3"]
    np.testing.assert_array_equal(football.value, [0, 1, 0, 1])
    np.testing.assert_array_equal(football.degrees, [2, 2, 3, 1])
    # Newman's archive: the GML inside a zip, without a "group" attribute.
    (tmp_path / "zip").mkdir()
    (tmp_path / "zip" / "dolphins.zip").write_bytes(_zip_bytes("dolphins.gml", _gml(4, edges)))
    dolphins = load_dolphins(tmp_path / "zip")
    assert dolphins.graph.number_of_edges() == 4
    assert dolphins.group is None and dolphins.target is None
    assert offline == []


# --------------------------------------------------------------------------
# search order, offline errors
# --------------------------------------------------------------------------


def test_data_home_is_searched_before_the_cache(tmp_path, isolated_cache):
    rng = np.random.default_rng(3)
    in_cache = _write_esl(isolated_cache, rng, n_train=4)
    in_home = _write_esl(tmp_path / "home", rng, n_train=6)
    np.testing.assert_array_equal(load_usps(tmp_path / "home").data[:6], in_home[0])
    # Not in data_home: the cache is read.
    np.testing.assert_array_equal(load_usps(tmp_path / "empty").data[:4], in_cache[0])
    np.testing.assert_array_equal(load_usps().data[:4], in_cache[0])


def test_offline_without_local_copy_names_folders_and_urls(tmp_path, isolated_cache, offline):
    home = tmp_path / "empty_home"
    home.mkdir()
    with pytest.raises(FileNotFoundError) as info:
        load_usps(home)
    message = str(info.value)
    for expected in (str(home), str(isolated_cache), "usps.mat", "zip.train.gz",
                     "https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz",
                     "https://hastie.su.domains/ElemStatLearn/datasets/zip.test.gz",
                     "offline", "name resolution"):
        assert expected in message
    assert offline == ["https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz"]
    assert _files(isolated_cache) == []
    with pytest.raises(FileNotFoundError, match="dolphins.zip") as info:
        load_dolphins(home)
    assert "http://www-personal.umich.edu/~mejn/netdata/dolphins.zip" in str(info.value)
    assert _files(isolated_cache) == []


def test_download_if_missing_false_never_downloads(tmp_path, offline):
    with pytest.raises(FileNotFoundError, match="download_if_missing=False"):
        load_football(tmp_path, download_if_missing=False)
    with pytest.raises(FileNotFoundError, match="download_if_missing=False"):
        load_usps(tmp_path, download_if_missing=False)
    assert offline == []


# --------------------------------------------------------------------------
# downloads: checksum, content check, atomic cache
# --------------------------------------------------------------------------


def _serve_usps(monkeypatch, server, rng, *, train_sha="right", train_bytes=None):
    url, root = server
    X_tr, y_tr, X_te, y_te = _write_esl(root, rng)
    if train_bytes is not None:
        (root / "zip.train.gz").write_bytes(train_bytes)
    for name in ("zip.train.gz", "zip.test.gz"):
        digest = hashlib.sha256((root / name).read_bytes()).hexdigest()
        if name == "zip.train.gz" and train_sha != "right":
            digest = train_sha
        _serve_as(monkeypatch, name, f"{url}/{name}", digest)
    return X_tr, y_tr, X_te, y_te


def test_download_verifies_and_caches(tmp_path, server, monkeypatch, isolated_cache):
    X_tr, y_tr, X_te, y_te = _serve_usps(monkeypatch, server, np.random.default_rng(4))
    usps = load_usps(tmp_path / "nowhere", digits=[y_tr[0]])
    keep = np.concatenate([y_tr, y_te]) == y_tr[0]
    np.testing.assert_array_equal(usps.data, np.vstack([X_tr, X_te])[keep])
    assert _files(isolated_cache) == ["zip.test.gz", "zip.train.gz"]
    for name in ("zip.train.gz", "zip.test.gz"):
        assert (isolated_cache / name).read_bytes() == (server[1] / name).read_bytes()
    assert usps.filenames == [str(isolated_cache / n) for n in ("zip.train.gz", "zip.test.gz")]
    # Later calls read the cache, even offline.
    monkeypatch.setattr("urllib.request.urlopen", _refuse)
    np.testing.assert_array_equal(load_usps().data[: len(y_tr)], X_tr)


def _refuse(*args, **kwargs):
    raise AssertionError("no download expected")


def test_checksum_mismatch_deletes_the_download(tmp_path, server, monkeypatch, isolated_cache):
    _serve_usps(monkeypatch, server, np.random.default_rng(5), train_sha="0" * 64)
    with pytest.raises(ChecksumError, match="Checksum mismatch") as info:
        load_usps(tmp_path / "nowhere")
    assert "0" * 64 in str(info.value)
    assert isinstance(info.value, OSError)
    assert _files(isolated_cache) == []  # no final file, no temporary file
    # The cause fixed, the next call succeeds.
    _serve_usps(monkeypatch, server, np.random.default_rng(5))
    assert load_usps(tmp_path / "nowhere").data.shape == (17, 256)


def test_unknown_checksum_falls_back_to_the_content_check(tmp_path, server, monkeypatch,
                                                          isolated_cache):
    rng = np.random.default_rng(6)
    good = gzip.compress(_esl_text(*_fake_usps(rng, 3)))
    _serve_usps(monkeypatch, server, rng, train_sha=None, train_bytes=good[:-12])
    with pytest.raises(ChecksumError, match="not readable as zip.train.gz"):
        load_usps(tmp_path / "nowhere")
    assert _files(isolated_cache) == []
    _serve_usps(monkeypatch, server, rng, train_sha=None, train_bytes=good)
    assert load_usps(tmp_path / "nowhere").data.shape == (3 + 5, 256)


def test_only_missing_files_are_downloaded(tmp_path, server, monkeypatch, isolated_cache):
    rng = np.random.default_rng(7)
    _serve_usps(monkeypatch, server, rng)
    isolated_cache.mkdir(parents=True)
    (isolated_cache / "zip.train.gz").write_bytes((server[1] / "zip.train.gz").read_bytes())
    fetched = []
    real = __import__("urllib.request").request.urlopen

    def spy(request, *args, **kwargs):
        fetched.append(request.full_url.rsplit("/", 1)[-1])
        assert request.get_header("User-agent").startswith("robustclust")
        return real(request, *args, **kwargs)

    monkeypatch.setattr("urllib.request.urlopen", spy)
    load_usps(tmp_path / "nowhere")
    assert fetched == ["zip.test.gz"]


class _TruncatingHandler(http.server.BaseHTTPRequestHandler):
    """Announces 10,000 bytes, sends 100, then closes the connection."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "10000")
        self.end_headers()
        self.wfile.write(b"\x1f\x8b" + b"x" * 98)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_truncated_transfer_leaves_no_file(tmp_path, monkeypatch, isolated_cache):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TruncatingHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/football.zip"
        _serve_as(monkeypatch, "football.zip", url, None)
        with pytest.raises(OSError) as info:
            load_football(tmp_path / "nowhere")
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    # Either the HTTP layer (IncompleteRead: "download failed") or the
    # length check ("stopped after") notices; nothing reaches the cache.
    assert "download failed" in str(info.value) or "stopped after" in str(info.value)
    assert _files(isolated_cache) == []


class _InterruptedResponse:
    """A response that delivers one chunk, then is interrupted (Ctrl-C)."""

    headers = {}

    def __init__(self):
        self.calls = 0

    def read(self, size):
        self.calls += 1
        if self.calls == 1:
            return b"\x1f\x8b partial bytes"
        raise KeyboardInterrupt

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_interrupted_download_leaves_no_partial_file(tmp_path, monkeypatch, isolated_cache):
    written = []
    real_replace = os.replace
    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: _InterruptedResponse())
    monkeypatch.setattr("os.replace", lambda *a: written.append(a) or real_replace(*a))
    with pytest.raises(KeyboardInterrupt):
        load_usps(tmp_path / "nowhere")
    assert written == []
    assert isolated_cache.is_dir()  # the download had started there...
    assert _files(isolated_cache) == []  # ...and left nothing behind


def test_graph_download_from_newman_zip(tmp_path, server, monkeypatch, isolated_cache):
    url, root = server
    text = _gml(5, [(0, 1), (1, 2), (3, 4)])
    (root / "dolphins.zip").write_bytes(_zip_bytes("dolphins.gml", text))
    digest = hashlib.sha256((root / "dolphins.zip").read_bytes()).hexdigest()
    _serve_as(monkeypatch, "dolphins.zip", f"{url}/dolphins.zip", digest)
    dolphins = load_dolphins(tmp_path / "nowhere")
    assert dolphins.graph.number_of_nodes() == 5
    assert dolphins.graph.number_of_edges() == 3
    assert dolphins.filename == str(isolated_cache / "dolphins.zip")
    assert _files(isolated_cache) == ["dolphins.zip"]
    # A zip without the GML inside is refused and not cached.
    (root / "football.zip").write_bytes(_zip_bytes("other.gml", text))
    _serve_as(monkeypatch, "football.zip", f"{url}/football.zip", None)
    with pytest.raises(ChecksumError, match="no 'football.gml' in the archive"):
        load_football(tmp_path / "nowhere")
    assert _files(isolated_cache) == ["dolphins.zip"]
