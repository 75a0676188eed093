"""``robustclust fit`` on a dataset (issue 16): a glob or a directory of Parquet or CSV files.

Whole runs of the console script (the fits against the in-memory command
line and the API, the LocalCluster of --workers, a running scheduler for
--scheduler, Ctrl-C) and, for the many bad inputs, the command line
in-process through :func:`robustclust.cli.main` (same parsing, messages and
exit statuses, Dask's threaded scheduler).  Every failure must be one line
on stderr with the exit status of its kind, and leave the output's folder as
it was.  Every test has a timeout, and so has every subprocess.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from robustclust import RobustGaussianMixture, RobustKMeans, load_model  # noqa: E402
from cli_session import COMMAND, invoke  # noqa: E402

pytestmark = pytest.mark.timeout(300)

PARTS = 3
ROWS_PER_PART = 310
N_OUTLIERS = 30


def rows():
    """930 rows: three well separated clusters of 300 and 30 far outliers, shuffled."""
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])
    X = np.vstack([c + rng.normal(size=(300, 2)) for c in centres]
                  + [rng.uniform(-20, 20, size=(N_OUTLIERS, 2))])
    return X[rng.permutation(len(X))]


def frame():
    X = rows()
    return pd.DataFrame({"x": X[:, 0], "y": X[:, 1],
                         "name": [f"r{i}" for i in range(len(X))]})


def split(table):
    return [table.iloc[i * ROWS_PER_PART:(i + 1) * ROWS_PER_PART] for i in range(PARTS)]


def write_parquet(folder, table=None, name="part{}.parquet"):
    folder.mkdir(exist_ok=True)
    for i, part in enumerate(split(frame() if table is None else table)):
        part.to_parquet(folder / name.format(i), index=False)
    return folder


def write_csv(folder, table=None):
    folder.mkdir(exist_ok=True)
    for i, part in enumerate(split(frame() if table is None else table)):
        part.to_csv(folder / f"part{i}.csv", index=False)
    return folder


def run(args, cwd, timeout=300):
    return subprocess.run(COMMAND + [str(a) for a in args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout)


def listing(where):
    """Every entry of a folder, hidden temporary files included."""
    return sorted(p.name for p in Path(where).iterdir())


def parts_of(folder):
    return [pd.read_parquet(folder / name) for name in listing(folder)]


# -- the same fit as in memory ------------------------------------------------------------------
def test_parquet_glob_fit_equals_the_in_memory_fit_of_the_rows_concatenated(tmp_path):
    write_parquet(tmp_path / "data")
    frame().to_csv(tmp_path / "all.csv", index=False)
    fit = run(["fit", "data/*.parquet", "-k", 3, "-s", N_OUTLIERS, "--seed", 0, "-o", "out/",
               "--json"], tmp_path)
    assert (fit.returncode, fit.stderr) == (0, "")
    # Dask fits are not refined: the in-memory fit to compare is --unrefined
    memory = run(["fit", "all.csv", "-k", 3, "-s", N_OUTLIERS, "--seed", 0, "--unrefined",
                  "-o", "memory.csv", "--json"], tmp_path)
    assert (memory.returncode, memory.stderr) == (0, "")
    summary, in_memory = json.loads(fit.stdout), json.loads(memory.stdout)
    out = pd.concat(parts_of(tmp_path / "out"), ignore_index=True)
    mem = pd.read_csv(tmp_path / "memory.csv")
    assert summary["n_outliers"] == in_memory["n_outliers"] == N_OUTLIERS
    np.testing.assert_array_equal(out["cluster"].to_numpy(dtype=int), mem["cluster"].to_numpy())
    np.testing.assert_array_equal(out["is_outlier"].to_numpy(dtype=bool),
                                  mem["is_outlier"].to_numpy())
    assert summary["cluster_sizes"] == in_memory["cluster_sizes"] == [300, 300, 300]
    assert [t["row"] for t in summary["top_outliers"]] == \
        [t["row"] for t in in_memory["top_outliers"]]
    # and exactly the API's Dask fit of the same rows (same seed, one block per file)
    with dask.config.set(scheduler="threads"):
        model = RobustKMeans(3, n_outliers=N_OUTLIERS, random_state=0).fit(
            da.from_array(rows(), chunks=(ROWS_PER_PART, -1)))
        labels = model.labels_.compute()
    np.testing.assert_array_equal(out["cluster"].to_numpy(dtype=int), labels)
    np.testing.assert_array_equal(out.index[out["is_outlier"].to_numpy(dtype=bool)],
                                  model.outlier_indices_)
    assert summary["lambda"] == pytest.approx(model.lambda_, rel=1e-12)
    assert summary["objective"] == pytest.approx(model.objective_, rel=1e-12)


def test_the_mixture_on_a_parquet_glob_is_the_api_dask_fit(tmp_path):
    write_parquet(tmp_path / "data")
    fit = run(["fit", "data/*.parquet", "-k", 3, "-s", N_OUTLIERS, "--seed", 0, "--method",
               "gmm", "--covariance", "tied_diag", "-o", "out/", "--json"], tmp_path)
    assert (fit.returncode, fit.stderr) == (0, "")
    summary = json.loads(fit.stdout)
    out = pd.concat(parts_of(tmp_path / "out"), ignore_index=True)
    with dask.config.set(scheduler="threads"):
        model = RobustGaussianMixture(3, covariance_type="tied_diag", n_outliers=N_OUTLIERS,
                                      random_state=0).fit(
            da.from_array(rows(), chunks=(ROWS_PER_PART, -1)))
        labels = model.labels_.compute()
        scores = model.outlier_scores_.compute()
    assert summary["n_outliers"] == model.n_outliers_ == N_OUTLIERS
    np.testing.assert_array_equal(out["cluster"].to_numpy(dtype=int), labels)
    np.testing.assert_array_equal(out.index[out["is_outlier"].to_numpy(dtype=bool)],
                                  model.outlier_indices_)
    np.testing.assert_allclose(out["outlier_score"].to_numpy(dtype=float), scores, rtol=1e-12)
    assert summary["lambda"] == pytest.approx(model.lambda_, rel=1e-12)


def test_a_per_component_mixture_on_a_dataset_is_refused_naming_the_common_types(tmp_path):
    write_parquet(tmp_path / "data")
    fit = run(["fit", "data/*.parquet", "-k", 3, "--method", "gmm", "--covariance", "diag",
               "-o", "out/"], tmp_path)
    assert fit.returncode == 2  # a usage error, found before any cluster starts
    assert fit.stderr.strip().splitlines() == [
        "robustclust fit: error: --covariance diag (one covariance per component) does not "
        "run on a Dask dataset yet: use --covariance tied_spherical, tied_diag or tied, or "
        "fit one file in memory"]
    assert not (tmp_path / "out").exists()


def test_the_output_dataset_one_part_per_file_in_row_order(tmp_path):
    write_parquet(tmp_path / "data")
    status, out, err = invoke(["fit", "data/*.parquet", "-k", 3, "-s", N_OUTLIERS, "-o", "out/",
                               "--json"], tmp_path)
    assert (status, err) == (0, "")
    summary = json.loads(out)
    assert listing(tmp_path) == ["data", "out"]  # no temporary directory left
    assert listing(tmp_path / "out") == ["part.00000.parquet", "part.00001.parquet",
                                         "part.00002.parquet"]
    parts = parts_of(tmp_path / "out")
    for i, (part, source) in enumerate(zip(parts, split(frame()))):
        assert list(part.columns) == ["row", "x", "y", "cluster", "is_outlier",
                                      "outlier_score"]
        np.testing.assert_array_equal(part["row"], np.arange(1, ROWS_PER_PART + 1)
                                      + i * ROWS_PER_PART)
        np.testing.assert_array_equal(part[["x", "y"]].to_numpy(), source[["x", "y"]].to_numpy())
    whole = pd.concat(parts, ignore_index=True)
    flagged = whole["is_outlier"].to_numpy(dtype=bool)
    np.testing.assert_array_equal(flagged, whole["cluster"].to_numpy(dtype=int) == -1)
    np.testing.assert_array_equal(flagged, whole["outlier_score"].to_numpy() > 0)
    assert flagged.sum() == summary["n_outliers"] == N_OUTLIERS
    top = whole.sort_values("outlier_score", ascending=False, kind="stable").head(10)
    assert [t["row"] for t in summary["top_outliers"]] == top["row"].tolist()
    np.testing.assert_allclose([t["score"] for t in summary["top_outliers"]],
                               top["outlier_score"], rtol=1e-12)
    assert summary["cluster_sizes"] == np.bincount(whole["cluster"][~flagged]).tolist()
    assert (summary["n_rows"], summary["n_rows_used"], summary["output"],
            summary["output_parts"]) == (930, 930, "out", 3)
    assert summary["dataset"] == {"format": "parquet", "n_files": 3, "n_partitions": 3}
    assert summary["scheduler"] == {"kind": "threads", "address": None, "n_workers": 1,
                                    "n_threads": summary["scheduler"]["n_threads"]}
    assert summary["skipped_columns"] == {"name": "not numeric"}


def test_the_text_summary(tmp_path):
    write_parquet(tmp_path / "data")
    status, out, err = invoke(["fit", "data/*.parquet", "-k", 3, "-s", N_OUTLIERS, "-o", "out"],
                              tmp_path)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[:6] == [
        "fit: hard robust K-means, 3 clusters",
        "input: data/*.parquet (3 Parquet files, 3 partitions), 930 rows, 3 columns",
        "features: x, y",
        "skipped columns: name (not numeric)",
        "dask: threaded scheduler (in this process; --workers N starts a local cluster)",
        "note: Dask fits are not refined: no concentration steps after the count search (as "
        "--unrefined in memory)",
    ]
    assert lines[6].startswith("lambda: ") and lines[6].endswith(" (chosen to flag 30 outliers)")
    assert lines[9:15] == ["cluster   rows", "0          300", "1          300", "2          300",
                           "outliers    30", ""]
    assert lines[15:17] == ["top outliers by score", "row  score"]
    assert len(lines) == 17 + 10 + 1 and lines[-1] == "wrote out (Parquet dataset, 3 part files)"


def test_csv_glob_and_a_directory_give_the_parquet_result(tmp_path, monkeypatch):
    from robustclust.cli import _dataset

    write_parquet(tmp_path / "pq")
    write_csv(tmp_path / "csv")
    (tmp_path / "csv" / "_SUCCESS").write_text("")  # left out of a directory
    (tmp_path / "csv" / ".part9.csv").write_text("x,y\n1,2\n")  # hidden: left out
    assert invoke(["fit", "pq/*.parquet", "-k", 3, "-s", 30, "-o", "a", "--quiet"],
                  tmp_path) == (0, "", "")
    assert invoke(["fit", "csv", "-k", 3, "-s", 30, "-o", "b", "--quiet"], tmp_path) == (0, "", "")
    monkeypatch.setattr(_dataset, "CSV_BLOCKSIZE", 2000)  # many blocks per file
    status, out, err = invoke(["fit", "csv/*.csv", "-k", 3, "-s", 30, "-o", "c", "--json"],
                              tmp_path)
    assert (status, err) == (0, "")
    n_blocks = json.loads(out)["dataset"]["n_partitions"]
    assert n_blocks > 3 * 4
    a, b = (pd.concat(parts_of(tmp_path / x), ignore_index=True) for x in "ab")
    pd.testing.assert_frame_equal(a, b)
    assert len(listing(tmp_path / "c")) == n_blocks  # one part per partition
    c = pd.concat(parts_of(tmp_path / "c"), ignore_index=True)
    exact = ["row", "x", "y", "cluster", "is_outlier"]
    pd.testing.assert_frame_equal(a[exact], c[exact])
    np.testing.assert_allclose(a["outlier_score"], c["outlier_score"], rtol=1e-12, atol=0)


def test_a_parquet_file_is_a_dataset_with_an_output_directory(tmp_path):
    frame().to_parquet(tmp_path / "one.parquet", index=False)
    status, out, err = invoke(["fit", "one.parquet", "-k", 3, "-s", 30, "-o", "out", "--json"],
                              tmp_path)
    assert (status, err) == (0, "")
    summary = json.loads(out)
    assert summary["dataset"] == {"format": "parquet", "n_files": 1, "n_partitions": 1}
    assert listing(tmp_path / "out") == ["part.00000.parquet"]
    # with a .csv output it is read in memory, as before: a CSV file, no dask
    status, out, err = invoke(["fit", "one.parquet", "-k", 3, "-s", 30, "-o", "out.csv",
                               "--json"], tmp_path)
    assert (status, err) == (0, "")
    summary = json.loads(out)
    assert "dataset" not in summary and "scheduler" not in summary
    assert list(pd.read_csv(tmp_path / "out.csv").columns) == ["x", "y", "name", "cluster",
                                                               "is_outlier", "outlier_score"]


def test_drop_missing_leaves_rows_out_with_empty_results(tmp_path):
    table = frame()
    table.loc[[5, 400, 401], "y"] = np.nan
    table.loc[700, "x"] = np.inf
    write_parquet(tmp_path / "data", table)
    status, out, err = invoke(["fit", "data", "-k", 3, "-s", 30], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: missing or infinite values in rows 6, 401, 402 and "
                   "701 of data (columns x, y): use --drop-missing to leave these rows out\n")
    status, out, err = invoke(["fit", "data", "-k", 3, "-s", 30, "--drop-missing", "-o", "out"],
                              tmp_path)
    assert (status, err) == (0, "")
    assert "left out 4 rows with missing values: rows 6, 401, 402 and 701" in out.splitlines()
    whole = pd.concat(parts_of(tmp_path / "out"), ignore_index=True)
    empty = whole["cluster"].isna().to_numpy()
    np.testing.assert_array_equal(np.flatnonzero(empty) + 1, [6, 401, 402, 701])
    assert whole["is_outlier"].isna().sum() == 4 and whole["outlier_score"].isna().sum() == 4
    assert whole["is_outlier"].sum() == 30 and len(whole) == 930
    # the rows kept are fitted as the API fits them, rows numbered across the files
    keep = ~empty
    with dask.config.set(scheduler="threads"):
        model = RobustKMeans(3, n_outliers=30, random_state=0).fit(
            da.from_array(rows()[keep], chunks=(ROWS_PER_PART, -1)))
    np.testing.assert_array_equal(np.flatnonzero(whole["is_outlier"].fillna(False)[keep]),
                                  model.outlier_indices_)


def test_save_model_names_the_columns_for_predict(tmp_path):
    write_parquet(tmp_path / "data")
    frame().to_csv(tmp_path / "all.csv", index=False)
    assert invoke(["fit", "data/*.parquet", "-k", 3, "-s", 30, "-o", "out", "--save-model",
                   "model.npz", "--quiet"], tmp_path) == (0, "", "")
    assert list(load_model(tmp_path / "model.npz").feature_names_in_) == ["x", "y"]
    assert invoke(["predict", "-m", "model.npz", "all.csv", "-o", "predicted.csv", "--quiet"],
                  tmp_path) == (0, "", "")
    fitted = pd.concat(parts_of(tmp_path / "out"), ignore_index=True)
    predicted = pd.read_csv(tmp_path / "predicted.csv")
    np.testing.assert_array_equal(predicted["cluster"], fitted["cluster"].to_numpy(dtype=int))


# -- bad inputs: one line, the right status, nothing written --------------------------------
def _parquet(tmp_path):
    write_parquet(tmp_path / "data")


def _schemas(tmp_path):
    write_parquet(tmp_path / "data")
    frame().rename(columns={"y": "z"}).iloc[:10].to_parquet(tmp_path / "data" / "part3.parquet")


def _types(tmp_path):
    write_parquet(tmp_path / "data")
    frame().assign(y="text").iloc[:10].to_parquet(tmp_path / "data" / "part3.parquet")


def _corrupt_footer(tmp_path):
    write_parquet(tmp_path / "data")
    (tmp_path / "data" / "part1.parquet").write_bytes(b"PAR1 not really")


def _corrupt_page(tmp_path):
    write_parquet(tmp_path / "data")
    damaged = bytearray((tmp_path / "data" / "part1.parquet").read_bytes())
    damaged[20:2000] = b"\xff" * 1980  # the footer is intact, the pages are not
    (tmp_path / "data" / "part1.parquet").write_bytes(bytes(damaged))


def _mixed(tmp_path):
    write_parquet(tmp_path / "data")
    frame().to_csv(tmp_path / "data" / "extra.csv", index=False)


def _csv_text_in_a_later_file(tmp_path):
    table = frame()
    table["y"] = table["y"].astype(object)
    table.loc[700, "y"] = "n/a?"
    write_csv(tmp_path / "data", table)


def _ragged(tmp_path):
    write_csv(tmp_path / "data")
    path = tmp_path / "data" / "part1.csv"
    lines = path.read_text().splitlines()
    lines[150] += ",1"
    path.write_text("\n".join(lines) + "\n")


def _compressed(tmp_path):
    (tmp_path / "data").mkdir()
    frame().to_csv(tmp_path / "data" / "a.csv.gz", index=False)


def _nothing(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("")


def _existing_file(tmp_path):
    write_parquet(tmp_path / "data")
    (tmp_path / "out").write_text("mine")


def _existing_directory(tmp_path):
    write_parquet(tmp_path / "data")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")


HOSTILE = {
    "empty glob": (_parquet, ["nothing/*.parquet"], 1,
                   "no file matches nothing/*.parquet"),
    "no data file in the directory": (_nothing, ["data"], 1,
                                      "data holds no Parquet (.parquet, .pq) or CSV/TSV "
                                      "(.csv, .tsv) file"),
    "different columns": (_schemas, ["data/*.parquet"], 1,
                          "data/part3.parquet does not have the columns of data/part0.parquet "
                          "(x, z, name instead of x, y, name): every file of a dataset needs "
                          "the same columns, in the same order"),
    "a column of another type": (_types, ["data/*.parquet"], 1,
                                 "column 'y' is numeric (float64) in data/part0.parquet but not "
                                 "numeric (str) in data/part3.parquet: every file of a dataset "
                                 "needs the same columns"),
    "a named text column": (_parquet, ["data/*.parquet", "--columns", "x,name"], 1,
                            "column 'name' of data/*.parquet is not numeric"),
    "an unknown column": (_parquet, ["data/*.parquet", "--columns", "x,w"], 1,
                          "no column 'w' in data/*.parquet (columns: x, y, name)"),
    "text in a later CSV file": (_csv_text_in_a_later_file, ["data/*.csv", "--columns", "x,y"],
                                 1, "column 'y' of data/*.csv is not numeric (row 701: "
                                    "'n/a?')"),
    "a ragged CSV line": (_ragged, ["data/*.csv"], 1,
                          "line 151 of data/part1.csv has 4 fields but the header line has 3: "
                          "every line needs one field per column (an empty field for a "
                          "missing value)"),
    "a corrupt footer": (_corrupt_footer, ["data/*.parquet"], 1,
                         "cannot read data/part1.parquet as Parquet: Parquet magic bytes not "
                         "found in footer. Either the file is corrupted or this is not a "
                         "parquet file."),
    "corrupt pages": (_corrupt_page, ["data/*.parquet"], 1,
                      "cannot read data/part1.parquet as Parquet: "),
    "Parquet and CSV": (_mixed, ["data/*"], 1,
                        "data/* matches both CSV and Parquet files (data/extra.csv, "
                        "data/part0.parquet): a dataset is one format; name one with a "
                        "pattern such as 'data/*.csv'"),
    "compressed CSV": (_compressed, ["data/*"], 1,
                       "data/a.csv.gz is compressed: the CSV/TSV files of a dataset are read "
                       "in blocks and must be plain text; decompress them, or convert them to "
                       "Parquet"),
    "an existing output file": (_existing_file, ["data/*.parquet", "-o", "out"], 1,
                                "out already exists (use --force to replace it)"),
    "an existing output directory": (_existing_directory, ["data/*.parquet", "-o", "out"], 1,
                                     "out is a directory that is not empty and not an earlier "
                                     "output (it holds notes.txt): refusing to replace it, "
                                     "even with --force"),
    "the input directory as output": (_parquet, ["data", "-o", "data", "--force"], 1,
                                      "refusing to write over the input: data is or holds an "
                                      "input file"),
    "too many outliers": (_parquet, ["data", "-s", "928"], 1,
                          "-s/--outliers 928 is too many for 930 rows of data: 3 clusters need "
                          "at least one row each, so at most 927 can be flagged"),
    # usage errors
    "a .csv output": (_parquet, ["data", "-o", "out.csv"], 2,
                      "with a dataset INPUT, -o names a directory, written as a Parquet "
                      "dataset (one part file per partition), not a .csv file: e.g. -o out/"),
    "a kernel": (_parquet, ["data", "--kernel", "rbf"], 2,
                 "--kernel does not apply to a Dask dataset: kernel fits need the whole kernel "
                 "matrix in memory"),
    "a plot": (_parquet, ["data", "--plot", "p.png"], 2,
               "--plot does not apply to a Dask dataset: it draws every row"),
    "standardize": (_parquet, ["data", "--standardize"], 2,
                    "--standardize does not apply to a Dask dataset: scale the columns first"),
    "workers and scheduler": (_parquet, ["data", "--workers", 2, "--scheduler",
                                              "tcp://127.0.0.1:8786"], 2,
                              "give at most one of --workers and --scheduler"),
    "workers with a CSV file": (lambda p: frame().to_csv(p / "all.csv", index=False),
                                ["all.csv", "--workers", 2], 2,
                                "--workers applies to dataset inputs only: a quoted glob "
                                "('data/*.parquet'), a directory of Parquet or CSV files, or a "
                                "Parquet file"),
    "scheduler with a CSV file": (lambda p: frame().to_csv(p / "all.csv", index=False),
                                  ["all.csv", "--scheduler", "tcp://127.0.0.1:8786"], 2,
                                  "--scheduler applies to dataset inputs only: a quoted glob "
                                  "('data/*.parquet'), a directory of Parquet or CSV files, or "
                                  "a Parquet file"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_bad_inputs_are_one_line_and_leave_nothing(tmp_path, case):
    setup, args, status_wanted, message = HOSTILE[case]
    setup(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    status, out, err = invoke(["fit", *args, "-k", 3], tmp_path)
    assert (status, out) == (status_wanted, "")
    assert err.startswith(f"robustclust fit: error: {message}")
    assert err.endswith("\n") and err.count("\n") == 1
    # the folders are as they were: nothing written, nothing touched, no temporary left
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before


def test_an_empty_output_directory_is_replaced(tmp_path):
    write_parquet(tmp_path / "data")
    (tmp_path / "out").mkdir()
    assert invoke(["fit", "data", "-k", 3, "-s", 30, "-o", "out", "--quiet"],
                  tmp_path) == (0, "", "")
    assert listing(tmp_path / "out") == ["part.00000.parquet", "part.00001.parquet",
                                         "part.00002.parquet"]


def test_force_replaces_an_earlier_output_only(tmp_path):
    write_parquet(tmp_path / "data")
    assert invoke(["fit", "data", "-k", 3, "-s", 30, "-o", "out", "--quiet"],
                  tmp_path) == (0, "", "")
    (tmp_path / "out" / "part.00007.parquet").write_text("an older, longer output")
    assert invoke(["fit", "data", "-k", 3, "-s", 10, "-o", "out", "--quiet", "--force"],
                  tmp_path) == (0, "", "")
    assert listing(tmp_path) == ["data", "out"]
    assert listing(tmp_path / "out") == ["part.00000.parquet", "part.00001.parquet",
                                         "part.00002.parquet"]
    whole = pd.concat(parts_of(tmp_path / "out"), ignore_index=True)
    assert whole["is_outlier"].sum() == 10


def test_sigterm_while_writing_the_parts_leaves_nothing(tmp_path, monkeypatch):
    from robustclust.cli import _dask_run

    write_parquet(tmp_path / "data")
    real = _dask_run.part_name

    def name_then_die(i, n):
        if i == 1:  # part 0 is written
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler interrupts this
        return real(i, n)

    monkeypatch.setattr(_dask_run, "part_name", name_then_die)
    status, out, err = invoke(["fit", "data", "-k", 3, "-o", "out"], tmp_path)
    assert (status, out, err) == (143, "", "robustclust fit: error: terminated by SIGTERM\n")
    assert listing(tmp_path) == ["data"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handler restored


# -- schedulers -------------------------------------------------------------------------------
def test_workers_run_on_a_local_cluster_with_the_same_result(tmp_path):
    write_parquet(tmp_path / "data")
    assert invoke(["fit", "data", "-k", 3, "-s", 30, "-o", "threads", "--quiet"],
                  tmp_path) == (0, "", "")
    fit = run(["fit", "data/*.parquet", "-k", 3, "-s", 30, "-o", "local", "--workers", 2,
               "--json"], tmp_path)
    assert (fit.returncode, fit.stderr) == (0, "")
    where = json.loads(fit.stdout)["scheduler"]
    # the workers and threads the scheduler had, not the option's value
    assert (where["kind"], where["n_workers"], where["n_threads"]) == ("local", 2, 2)
    assert where["address"].startswith("tcp://127.0.0.1:")
    a, b = (pd.concat(parts_of(tmp_path / x), ignore_index=True) for x in ("threads", "local"))
    exact = ["row", "x", "y", "cluster", "is_outlier"]
    pd.testing.assert_frame_equal(a[exact], b[exact])
    text = run(["fit", "data/*.parquet", "-k", 3, "--workers", 1], tmp_path)
    assert text.returncode == 0 and text.stderr == ""
    line = next(x for x in text.stdout.splitlines() if x.startswith("dask: "))
    assert line.startswith("dask: local cluster (LocalCluster) of 1 worker x 1 thread at "
                           "tcp://127.0.0.1:") and line.endswith(", closed at the end")


def test_scheduler_runs_on_a_running_cluster_and_leaves_it_running(tmp_path):
    write_parquet(tmp_path / "data")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as client:
        before = cluster.scheduler.transition_counter
        fit = run(["fit", "data/*.parquet", "-k", 3, "-s", 30, "-o", "out", "--scheduler",
                   cluster.scheduler_address, "--json"], tmp_path)
        assert (fit.returncode, fit.stderr) == (0, "")
        assert json.loads(fit.stdout)["scheduler"] == {
            "kind": "external", "address": cluster.scheduler_address, "n_workers": 2,
            "n_threads": 2}
        assert cluster.scheduler.transition_counter > before + 100  # its workers did the work
        assert client.submit(sum, [1, 2]).result(timeout=30) == 3  # still up
    whole = pd.concat(parts_of(tmp_path / "out"), ignore_index=True)
    assert whole["is_outlier"].sum() == 30


def test_an_unreachable_scheduler_is_one_line_within_the_timeout(tmp_path):
    from robustclust.cli._dask_run import CONNECT_TIMEOUT_S

    write_parquet(tmp_path / "data")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    fit = run(["fit", "data", "-k", 3, "-o", "out", "--scheduler", f"tcp://127.0.0.1:{port}"],
              tmp_path, timeout=120)
    elapsed = time.monotonic() - start
    assert (fit.returncode, fit.stdout) == (1, "")
    assert fit.stderr == (f"robustclust fit: error: cannot reach the Dask scheduler at "
                          f"tcp://127.0.0.1:{port} (--scheduler): Timed out trying to connect "
                          f"to tcp://127.0.0.1:{port} after {CONNECT_TIMEOUT_S} s\n")
    assert elapsed < CONNECT_TIMEOUT_S + 30
    assert listing(tmp_path) == ["data"]


def test_ctrl_c_closes_the_local_cluster_and_leaves_nothing(tmp_path):
    psutil = pytest.importorskip("psutil")
    rng = np.random.default_rng(1)
    (tmp_path / "data").mkdir()
    for i in range(4):  # big enough to be interrupted in the middle
        pd.DataFrame(rng.normal(size=(200_000, 4)), columns=list("abcd")).to_parquet(
            tmp_path / "data" / f"p{i}.parquet")
    proc = subprocess.Popen(COMMAND + ["fit", "data", "-k", "3", "-s", "100", "-o", "out",
                                       "--workers", "2"],
                            cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    workers = {}
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and len(workers) < 2:
        try:  # the worker processes (a nanny and a worker each)
            for child in psutil.Process(proc.pid).children(recursive=True):
                workers[child.pid] = child
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    time.sleep(1)  # the cluster starts (a signal then is held until it has) or runs
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out) == (130, "")
    assert err.strip() == "robustclust fit: error: interrupted"
    assert len(workers) >= 2
    time.sleep(1)
    alive = [p for p in workers.values()
             if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    assert listing(tmp_path) == ["data"]


def test_a_close_that_hangs_after_ctrl_c_ends_within_the_grace_time():
    """The --workers exit timer: a block that hangs after SIGINT (as closing a
    cluster once did) ends the process with 130 and the one error line."""
    script = ("import os, signal, time\n"
              "from robustclust.cli import _dask_run\n"
              "with _dask_run._exit_after_signal(1.0):\n"
              "    try:\n"
              "        os.kill(os.getpid(), signal.SIGINT)\n"
              "        time.sleep(5)\n"
              "    except KeyboardInterrupt:\n"
              "        time.sleep(60)  # the hang\n")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert (out.returncode, out.stdout) == (130, "")
    assert out.stderr == "robustclust fit: error: interrupted\n"
    assert time.monotonic() - start < 30
