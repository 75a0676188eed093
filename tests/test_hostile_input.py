"""Reproducers of the hostile-input probe (issue 44), one or more per class.

Every test here failed on the code before its fix.  The console-script
sessions are in tests/test_signals.py and tests/test_memory_limits.py.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from robustclust import OutlierCountWarning, RobustGaussianMixture, RobustKMeans
from robustclust.cli import main

# -- silent wrong results: the far point that captured a start ----------------------------
FAR = np.r_[np.zeros((30, 2)), np.ones((30, 2)), [[100.0, 100.0]]]


@pytest.mark.parametrize("make", [
    lambda: RobustKMeans(2, n_outliers=1, penalty="log", random_state=0),
    lambda: RobustKMeans(2, n_outliers=1, fuzzifier=1.5, random_state=0),
    lambda: RobustKMeans(2, n_outliers=1, refine=False, random_state=0),
    lambda: RobustGaussianMixture(2, n_outliers=1, covariance_type="full", random_state=0),
    lambda: RobustGaussianMixture(2, n_outliers=1, random_state=0),
], ids=["weighted", "soft", "unrefined", "mixture_full", "mixture"])
def test_a_far_point_does_not_capture_the_count_search_start(make):
    # the count search read lam = c_(1) / 2 at the start (every other row sits
    # on its centre, c_(2) = 0): the far point's pull lam / 2 dragged the
    # centre of (1, 1) past the (0, 0) rows, and (100, 100) kept a cluster
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierCountWarning)
        model = make().fit(FAR)
    assert model.n_outliers_ == 1 and model.labels_[-1] == -1
    centres = getattr(model, "cluster_centers_", None)
    centres = model.means_ if centres is None else centres
    np.testing.assert_allclose(np.sort(centres[:, 0]), [0.0, 1.0], atol=0.05)
    assert len(set(model.labels_[:30])) == 1 and len(set(model.labels_[30:60])) == 1
    assert model.labels_[0] != model.labels_[30]


# -- the command line on tied tables ------------------------------------------------------
def test_tied_tables_on_the_command_line_warn_instead_of_failing_numerically(tmp_path, capsys):
    path = tmp_path / "ties.csv"
    path.write_text("x\n" + "\n".join(["-2", "0", "6", "0", "0", "12", "0", "12", "1", "12"])
                    + "\n")
    const = tmp_path / "const.csv"
    const.write_text("a,b,c\n" + "7,7,7\n" * 50)
    for table, k in ((path, "4"), (const, "2")):
        out = tmp_path / f"{table.stem}-labels.csv"
        assert main(["fit", str(table), "-k", k, "-s", "3", "-o", str(out), "--quiet"]) == 0
        err = capsys.readouterr().err
        assert "failed numerically" not in err
        assert "n_outliers=3 was asked for, but" in err
        import pandas as pd

        frame = pd.read_csv(out)
        np.testing.assert_array_equal(frame.is_outlier, frame.outlier_score > 0)
        np.testing.assert_array_equal(frame.is_outlier, frame.cluster == -1)


# -- absurd parameters are refused by the estimators ---------------------------------------
SMALL = np.random.default_rng(0).normal(size=(20, 2))


@pytest.mark.parametrize("make, what", [
    (lambda: RobustKMeans(2, n_init=10**9), "n_init"),
    (lambda: RobustKMeans(2, max_iter=10**9), "max_iter"),
    (lambda: RobustGaussianMixture(2, n_init=10**9), "n_init"),
    (lambda: RobustGaussianMixture(2, max_iter=10**9), "max_iter"),
    (lambda: RobustKMeans(2, n_outliers=True), "n_outliers=True is a boolean"),
    (lambda: RobustGaussianMixture(2, n_outliers=True), "n_outliers=True is a boolean"),
])
def test_absurd_parameters_are_refused_before_the_fit(make, what):
    with pytest.raises(ValueError, match=what):
        make().fit(SMALL)


def test_kernel_estimators_share_the_caps():
    from robustclust import KernelRobustGaussianMixture, KernelRobustKMeans

    for cls in (KernelRobustKMeans, KernelRobustGaussianMixture):
        with pytest.raises(ValueError, match="n_init"):
            cls(2, n_init=10**9).fit(SMALL)


def test_absurd_n_lambdas_is_refused_before_any_work():
    from robustclust import regularization_path

    with pytest.raises(ValueError, match="n_lambdas must be a positive integer, at most 10000"):
        regularization_path(RobustKMeans(2), SMALL, n_lambdas=10**9)


def test_a_nan_nu_is_refused():
    import networkx as nx

    from robustclust.graph import normalized_adjacency_kernel

    G = nx.karate_club_graph()
    for nu, what in ((float("nan"), "not a finite number"), (float("inf"), "not a finite"),
                     (True, "must be a number")):
        with pytest.raises(ValueError, match=what):
            normalized_adjacency_kernel(G, nu=nu)


def test_a_frame_column_of_dates_or_text_is_named():
    import pandas as pd

    from robustclust import KernelRobustKMeans

    frame = pd.DataFrame({"a": np.arange(10.0), "when": pd.date_range("2020", periods=10),
                          "word": ["x"] * 10})
    for cls in (RobustKMeans, RobustGaussianMixture, KernelRobustKMeans):
        with pytest.raises(ValueError, match=r"'when' \(datetime64"):
            cls(2).fit(frame[["a", "when"]])
        with pytest.raises(ValueError, match=r"'word' \(.*'x'\)"):
            cls(2).fit(frame[["a", "word"]])


# -- model files ---------------------------------------------------------------------------
def test_save_model_names_a_directory_or_a_missing_folder(tmp_path, monkeypatch):
    from robustclust import save_model

    model = RobustKMeans(2, random_state=0).fit(SMALL)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        save_model(model, ".")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        save_model(model, tmp_path)
    with pytest.raises(FileNotFoundError, match="no such folder") as info:
        save_model(model, tmp_path / "missing" / "m.npz")
    assert ".tmp" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def _forged(tmp_path, name, replace):
    """A model file with one member replaced: replace(member name, bytes) -> bytes."""
    import zipfile

    from robustclust import save_model

    good = tmp_path / "good.npz"
    save_model(RobustKMeans(2, random_state=0).fit(SMALL), good)
    bad = tmp_path / name
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as out:
        for info in src.infolist():
            out.writestr(info, replace(info.filename, src.read(info)))
    return bad


def test_a_model_member_declaring_more_data_than_it_holds_is_refused_at_once(tmp_path):
    import io
    import resource
    import time

    from robustclust import load_model

    def huge(name, data):
        if not name.startswith("cluster_centers_"):
            return data
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                                   "shape": (800_000_000,)})
        return buf.getvalue() + b"\0" * 1000

    path = _forged(tmp_path, "big.npz", huge)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ValueError, match="declares 6400000000 bytes of data but holds 1000"):
        load_model(path)
    assert time.perf_counter() - start < 5
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 200_000


def test_deeply_nested_model_metadata_is_corrupted_not_an_internal_error(tmp_path, capsys):
    import io

    from robustclust import load_model

    def deep(name, data):
        if not name.startswith("__robustclust_model__"):
            return data
        buf = io.BytesIO()
        np.save(buf, np.array("[" * 100_000 + "]" * 100_000))
        return buf.getvalue()

    path = _forged(tmp_path, "deep.npz", deep)
    with pytest.raises(ValueError, match="metadata nest deeper"):
        load_model(path)
    rows = tmp_path / "rows.csv"
    rows.write_text("x0,x1\n1,2\n")
    assert main(["predict", "-m", str(path), str(rows)]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err and len(err.strip().splitlines()) == 1


# -- the command line's usage errors and words ------------------------------------------
def test_path_lambda_bounds_must_be_finite_usage_errors(tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    rows.write_text("x,y\n" + "".join(f"{i},{i % 3}\n" for i in range(12)))
    for option, value in (("--lam-max", "nan"), ("--lam-min", "inf"), ("--lam-max", "-1")):
        assert main(["path", str(rows), "-k", "2", option, value]) == 2
        err = capsys.readouterr().err
        assert f"Invalid value for '{option}'" in err and len(err.strip().splitlines()) == 1


def test_one_cluster_needs_a_row(tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n1\n2\n")
    assert main(["fit", str(rows), "-k", "1", "-s", "2"]) == 1
    assert "1 cluster needs at least one row, so at most 1" in capsys.readouterr().err


# -- datasets read wrongly with exit 0 ------------------------------------------------------
def _parquet_rows(path, n=300, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    pd.DataFrame(rng.normal(size=(n, 2)), columns=["x", "y"]).to_parquet(path)


def test_a_parquet_dataset_naming_a_column_twice_is_refused(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    import pyarrow.parquet as pq

    table = pa.table([pa.array(np.arange(10.0)), pa.array(np.arange(10.0) % 3),
                      pa.array(np.arange(10.0))], names=["x", "y", "x"])
    pq.write_table(table, tmp_path / "dup.parquet")
    assert main(["fit", str(tmp_path / "dup.parquet"), "-k", "2", "-o",
                 str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "names two columns 'x' (columns 1 and 3): rename one" in err
    assert not (tmp_path / "out").exists()


def test_a_glob_through_a_symlink_loop_reads_each_file_once(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    (tmp_path / "data").mkdir()
    for i in range(2):
        _parquet_rows(tmp_path / "data" / f"p{i}.parquet", seed=i)
    (tmp_path / "data" / "loop").symlink_to("..")
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "data/**/*.parquet", "-k", "2", "--json"]) == 0
    captured = capsys.readouterr()
    import json

    summary = json.loads(captured.out)
    assert summary["n_rows"] == 600
    assert "each file is read once" in captured.err


def test_damaged_parquet_pages_with_checksums_are_refused(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    import pyarrow.parquet as pq

    X = np.random.default_rng(0).normal(size=(2000, 2))
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"x": X[:, 0], "y": X[:, 1]}), good, compression="NONE",
                   write_page_checksum=True)
    data = bytearray(good.read_bytes())
    at = data.find(X[1000, 0].tobytes())
    data[at:at + 8] = np.float64(1e67).tobytes()  # a value the page's CRC does not match
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    for args in (["fit", str(bad), "-k", "2"],
                 ["fit", str(bad), "-k", "2", "-o", str(tmp_path / "out")]):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "CRC checksum verification failed" in err and len(err.splitlines()) == 1


def test_a_cluster_left_without_rows_is_reported(tmp_path, capsys):
    # 50 equal rows and k = 2: one centre takes every row, the other none
    path = tmp_path / "const.csv"
    path.write_text("a,b\n" + "7,7\n" * 50)
    assert main(["fit", str(path), "-k", "2", "-s", "3", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 of the 2 clusters keeps no row (cluster 1)" in err
    with pytest.warns(ConvergenceWarning, match=r"1 of the 2 clusters keeps no row") as seen:
        RobustKMeans(2, random_state=0).fit(np.full((50, 2), 7.0))
    assert all(w.filename == __file__ for w in seen if w.category is ConvergenceWarning)
