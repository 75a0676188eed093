"""The ``robustclust`` console script, run in subprocesses on real files."""

import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    OutlierCountWarning,
    RobustGaussianMixture,
    RobustKMeans,
    load_model,
    regularization_path,
    save_model,
)
from robustclust.cli import main
from robustclust.cli._summary import summary_rows
from robustclust.cli._data import read_graph, rows_phrase
from robustclust._files import UnsafeWriteError, atomic_write, check_destination
from robustclust.datasets import make_blobs_with_outliers
from robustclust.graph import normalized_adjacency_kernel

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
DOLPHINS = SHARED_DATA / "dolphins.gml"
FOOTBALL = SHARED_DATA / "football.gml"
_SCRIPT = Path(sys.executable).with_name("robustclust")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "robustclust"]


@pytest.fixture(autouse=True)
def _compiled_kernels_on_small_data():
    """Here the suite's in-process fits take the user's path, as the console
    script's processes do: below COMPILED_MIN_ROWS rows the NumPy steps
    (the same results as the compiled kernels' to rounding, and the tests
    compare the script's output with an in-process fit's to the last bit)."""


def run(args, cwd, env=None, stdin=None):
    """Run the console script in ``cwd``; the CompletedProcess (text)."""
    return subprocess.run(COMMAND + [str(a) for a in args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300, stdin=stdin)


def blobs():
    """The paper's four blobs with 40 outliers (240 rows)."""
    return make_blobs_with_outliers(n_outliers=40, random_state=0).X


def messy_frame():
    """20 rows: a text column, numbers, missing values in rows 3 and 17, a mixed column."""
    rng = np.random.default_rng(5)
    a = np.round(np.r_[rng.normal(0, 1, 10), rng.normal(6, 1, 10)], 3)
    b = np.round(np.r_[rng.normal(0, 1, 10), rng.normal(6, 1, 10)], 3)
    b[[2, 16]] = np.nan
    names = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan",
             "judy", "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent",
             "victor", "walter", "zoe"]
    note = ["ok"] * 20
    note[4] = "check, twice"
    return pd.DataFrame({"name": names, "a": a, "b": b, "note": note})


def write_files(where):
    """Every input file the tests read, written into ``where``."""
    X = blobs()
    pd.DataFrame(X, columns=["x", "y"]).to_csv(where / "blobs.csv", index=False)
    messy_frame().to_csv(where / "messy.csv", index=False)
    np.save(where / "blobs.npy", X)
    (where / "broken.csv").write_text("x,y\n1,2\n3,4,5\n")
    (where / "empty.csv").write_text("")
    (where / "headerless.csv").write_text("1.5,2.5\n3,4\n5,6\n")
    (where / "tiny.csv").write_text("x,y\n1,2\n3,4\n5,7\n")
    (where / "data.xlsx").write_text("not really")
    np.save(where / "cube.npy", np.zeros((2, 2, 2)))
    (where / "bad.gml").write_text("graph [\n  node [ id 0 label \"a\" ]\n  edge [ source 0\n")
    (where / "bad.edges").write_text("a b\nb c 1 2\n")
    (where / "ring.edges").write_text("a b\nb c\nc d\nd e\ne f\nf a\n")
    (where / "directed.gml").write_text(
        "graph [\n  directed 1\n  node [ id 0 label \"a\" ]\n  node [ id 1 label \"b\" ]\n"
        "  edge [ source 0 target 1 ]\n]\n")
    (where / "existing.csv").write_text("keep me\n")
    (where / "link.csv").symlink_to("blobs.csv")
    model = RobustKMeans(4, n_init=1, random_state=0).fit(pd.DataFrame(X, columns=["x", "y"]))
    save_model(model, where / "xy.model")
    shutil.copy(where / "xy.model", where / "model.csv")


# -- bad inputs: one line on stderr, the right exit status, nothing written ----------
BAD = [
    # (id, arguments, exit status, the one stderr line)
    ("missing file", ["fit", "nope.csv", "-k", "2"], 1,
     "robustclust fit: error: no such file: nope.csv"),
    ("unreadable csv", ["fit", "broken.csv", "-k", "2"], 1,
     "robustclust fit: error: line 3 of broken.csv has 3 fields but the header line has 2: "
     "every line needs one field per column (an empty field for a missing value)"),
    ("empty csv", ["fit", "empty.csv", "-k", "2"], 1,
     "robustclust fit: error: empty.csv is empty"),
    ("no header", ["fit", "headerless.csv", "-k", "2"], 1,
     "robustclust fit: error: the first line of headerless.csv (1.5, 2.5) looks like data, "
     "not column names: add a header line naming the columns"),
    ("non-numeric column", ["fit", "messy.csv", "-k", "2", "--columns", "a,name"], 1,
     "robustclust fit: error: column 'name' of messy.csv is not numeric (row 1: 'alice')"),
    ("unknown column", ["fit", "messy.csv", "-k", "2", "--columns", "a,zz"], 1,
     "robustclust fit: error: no column 'zz' in messy.csv (columns: name, a, b, note)"),
    ("missing values", ["fit", "messy.csv", "-k", "2", "-o", "out.csv"], 1,
     "robustclust fit: error: missing values in rows 3 and 17 of messy.csv (column b): "
     "use --drop-missing to leave these rows out"),
    ("fewer rows than clusters", ["fit", "tiny.csv", "-k", "4"], 1,
     "robustclust fit: error: 3 rows of tiny.csv for 4 clusters: need at least one row "
     "per cluster"),
    ("too many outliers", ["fit", "tiny.csv", "-k", "2", "-s", "3"], 1,
     "robustclust fit: error: -s/--outliers 3 is too many for 3 rows of tiny.csv: 2 clusters "
     "need at least one row each, so at most 1 can be flagged"),
    ("3-D array", ["fit", "cube.npy", "-k", "2"], 1,
     "robustclust fit: error: cube.npy holds a 3-D array; expected rows x columns (2-D)"),
    ("bad gml", ["fit", "bad.gml", "-k", "2"], 1,
     "robustclust fit: error: cannot read bad.gml as GML: expected ']', found EOF at (4, 1)"),
    ("bad edge list", ["fit", "bad.edges", "-k", "2"], 1,
     "robustclust fit: error: bad.edges, line 2: expected 'node node' or 'node node "
     "weight', got 4 fields; names with spaces must be quoted (\"Tom Smith\") or the fields "
     "separated by tabs or commas"),
    ("unknown method", ["fit", "blobs.csv", "-k", "2", "--method", "foo"], 2,
     "robustclust fit: error: Invalid value for '--method': 'foo' is not one of "
     "'kmeans', 'soft', 'gmm'."),
    ("unknown covariance", ["fit", "blobs.csv", "-k", "2", "--method", "gmm",
                            "--covariance", "banded"], 2,
     "robustclust fit: error: Invalid value for '--covariance': 'banded' is not one of "
     "'tied_spherical', 'tied_diag', 'tied', 'spherical', 'diag', 'full'."),
    ("unknown kernel", ["fit", "blobs.csv", "-k", "2", "--kernel", "sigmoid"], 2,
     "robustclust fit: error: Invalid value for '--kernel': 'sigmoid' is not one of "
     "'rbf', 'poly', 'linear', 'cosine'."),
    ("unknown option", ["fit", "blobs.csv", "-k", "2", "--bogus"], 2,
     "robustclust fit: error: No such option '--bogus'. Did you mean '--columns'?"),
    ("unknown command", ["bogus"], 2, "robustclust: error: No such command 'bogus'."),
    ("unknown format", ["fit", "data.xlsx", "-k", "2"], 2,
     "robustclust fit: error: Invalid value for INPUT: cannot tell the format of data.xlsx "
     "from its name: expected one of .csv, .tsv, .parquet, .pq, .npy, .gml, .edges, .txt "
     "(CSV/TSV may be compressed, e.g. .csv.gz)"),
    ("no clusters", ["fit", "blobs.csv"], 2,
     "robustclust fit: error: Missing option '-k' / '--clusters'."),
    ("zero clusters", ["fit", "blobs.csv", "-k", "0"], 2,
     "robustclust fit: error: Invalid value for '-k' / '--clusters': 0 is not in the "
     "range x>=1."),
    ("count and lambda", ["fit", "blobs.csv", "-k", "2", "-s", "5", "--lam", "1"], 2,
     "robustclust fit: error: give at most one of -s/--outliers and --lam"),
    ("bad count", ["fit", "blobs.csv", "-k", "2", "-s", "many"], 2,
     "robustclust fit: error: Invalid value for '-s' / '--outliers': expected a count (80), "
     "a fraction of the rows below 1 (0.05) or a percentage below 100 (5%), got 'many'"),
    ("percentage of 100", ["fit", "blobs.csv", "-k", "2", "-s", "100%"], 2,
     "robustclust fit: error: Invalid value for '-s' / '--outliers': a percentage of the rows "
     "must be below 100%, got '100%'"),
    ("count that is not whole", ["fit", "blobs.csv", "-k", "2", "-s", "1.5"], 2,
     "robustclust fit: error: Invalid value for '-s' / '--outliers': '1.5' is neither a "
     "whole count nor a fraction below 1"),
    ("negative lambda", ["fit", "blobs.csv", "-k", "2", "--lam", "-1"], 2,
     "robustclust fit: error: Invalid value for '--lam': expected a number >= 0 (or inf), "
     "got '-1'"),
    ("q without soft", ["fit", "blobs.csv", "-k", "2", "--q", "2"], 2,
     "robustclust fit: error: --q applies to --method soft only"),
    ("q of 1", ["fit", "blobs.csv", "-k", "2", "--method", "soft", "--q", "1"], 2,
     "robustclust fit: error: Invalid value for '--q': 1.0 is not in the range x>1."),
    ("covariance without gmm", ["fit", "blobs.csv", "-k", "2", "--covariance", "full"], 2,
     "robustclust fit: error: --covariance applies to --method gmm only"),
    ("gmm at lambda 0", ["fit", "blobs.csv", "-k", "2", "--method", "gmm", "--lam", "0"], 2,
     "robustclust fit: error: --lam must be > 0 with --method gmm (at 0 the mixture's cost "
     "is unbounded below)"),
    ("gamma without kernel", ["fit", "blobs.csv", "-k", "2", "--gamma", "0.5"], 2,
     "robustclust fit: error: --gamma applies to --kernel rbf and poly only"),
    ("gamma of a linear kernel", ["path", "blobs.csv", "-k", "2", "--kernel", "linear",
                                  "--gamma", "0.5"], 2,
     "robustclust path: error: --gamma applies to --kernel rbf and poly only"),
    ("degree of rbf", ["fit", "blobs.csv", "-k", "2", "--kernel", "rbf", "--degree", "2"], 2,
     "robustclust fit: error: --degree applies to --kernel poly only"),
    ("coef0 without kernel", ["fit", "blobs.csv", "-k", "2", "--coef0", "0"], 2,
     "robustclust fit: error: --coef0 applies to --kernel poly only"),
    ("zero gamma", ["fit", "blobs.csv", "-k", "2", "--kernel", "rbf", "--gamma", "0"], 2,
     "robustclust fit: error: Invalid value for '--gamma': 0.0 is not in the range x>0."),
    ("covariance with kernel", ["fit", "blobs.csv", "-k", "2", "--kernel", "rbf", "--method",
                                "gmm", "--covariance", "full"], 2,
     "robustclust fit: error: --covariance does not apply to kernels: the kernel mixture "
     "has one variance in feature space"),
    ("covariance of a graph", ["fit", "ring.edges", "-k", "2", "--method", "gmm",
                               "--covariance", "diag"], 2,
     "robustclust fit: error: --covariance does not apply to kernels: the kernel mixture "
     "has one variance in feature space"),
    ("unknown init", ["fit", "blobs.csv", "-k", "2", "--init", "farthest"], 2,
     "robustclust fit: error: Invalid value for '--init': 'farthest' is not one of "
     "'robust', 'k-means++', 'random', 'spectral', 'robust-kmeans'."),
    ("spectral init without kernel", ["fit", "blobs.csv", "-k", "2", "--init", "spectral"], 2,
     "robustclust fit: error: --init spectral applies to --kernel and graph inputs only"),
    ("robust-kmeans init without gmm", ["fit", "blobs.csv", "-k", "2", "--kernel", "rbf",
                                        "--init", "robust-kmeans"], 2,
     "robustclust fit: error: --init robust-kmeans applies to --method gmm only"),
    ("kernel of a graph", ["fit", "ring.edges", "-k", "2", "--kernel", "rbf"], 2,
     "robustclust fit: error: --kernel does not apply to graph inputs: they are clustered "
     "with their normalized adjacency kernel"),
    ("gamma of a graph", ["path", "ring.edges", "-k", "2", "--gamma", "1"], 2,
     "robustclust path: error: --gamma does not apply to graph inputs: they are clustered "
     "with their normalized adjacency kernel"),
    ("standardized graph", ["fit", "ring.edges", "-k", "2", "--standardize"], 2,
     "robustclust fit: error: --standardize does not apply to graph inputs"),
    ("columns of a graph", ["fit", "ring.edges", "-k", "2", "--columns", "a"], 2,
     "robustclust fit: error: --columns does not apply to graph inputs"),
    ("model of a graph", ["fit", "ring.edges", "-k", "2", "--save-model", "ring.npz"], 2,
     "robustclust fit: error: --save-model does not apply to graph inputs: a model of a "
     "graph's nodes cannot label new nodes (-o writes the nodes' labels)"),
    ("graph with fewer nodes than clusters", ["fit", "ring.edges", "-k", "7"], 1,
     "robustclust fit: error: 6 nodes of ring.edges for 7 clusters: need at least one node "
     "per cluster"),
    ("too many outlying nodes", ["fit", "ring.edges", "-k", "2", "-s", "6"], 1,
     "robustclust fit: error: -s/--outliers 6 is too many for 6 nodes of ring.edges: 2 "
     "clusters need at least one node each, so at most 4 can be flagged"),
    ("directed graph", ["fit", "directed.gml", "-k", "2"], 1,
     "robustclust fit: error: directed.gml holds a directed graph; clustering needs an "
     "undirected one (write 'directed 0' in the file to read its edges as undirected)"),
    ("output exists", ["fit", "blobs.csv", "-k", "2", "-o", "existing.csv"], 1,
     "robustclust fit: error: existing.csv already exists (use --force to overwrite it)"),
    ("output is the input", ["fit", "blobs.csv", "-k", "2", "-o", "blobs.csv", "--force"], 1,
     "robustclust fit: error: refusing to write over the input file blobs.csv"),
    ("output links to the input", ["fit", "blobs.csv", "-k", "2", "-o", "link.csv",
                                   "--force"], 1,
     "robustclust fit: error: refusing to write over the input file link.csv"),
    ("model over the input", ["fit", "blobs.csv", "-k", "2", "--save-model", "./blobs.csv",
                              "--force"], 1,
     "robustclust fit: error: refusing to write over the input file blobs.csv"),
    ("output in a missing directory", ["fit", "blobs.csv", "-k", "2", "-o", "no/out.csv"], 1,
     "robustclust fit: error: cannot write no/out.csv: directory no does not exist"),
    ("output suffix", ["fit", "blobs.csv", "-k", "2", "-o", "out.txt"], 2,
     "robustclust fit: error: Invalid value for '-o' / '--output': the output file name "
     "must end in .csv or .tsv"),
    ("plot suffix", ["fit", "blobs.csv", "-k", "2", "--plot", "out.jpeg"], 2,
     "robustclust fit: error: Invalid value for '--plot': the plot file name must end in "
     ".png, .pdf, .svg"),
    ("output and model collide", ["fit", "blobs.csv", "-k", "2", "-o", "out.csv",
                                  "--save-model", "out.csv"], 2,
     "robustclust fit: error: -o/--output and --save-model name the same file out.csv"),
    ("predict without model", ["predict", "blobs.csv"], 2,
     "robustclust predict: error: Missing option '-m' / '--model'."),
    ("missing model", ["predict", "-m", "none.model", "blobs.csv"], 1,
     "robustclust predict: error: no such model file: none.model"),
    ("not a model", ["predict", "-m", "messy.csv", "blobs.csv"], 1,
     "robustclust predict: error: messy.csv is not a robustclust model file "
     "(not a .npz archive)"),
    ("model columns missing", ["predict", "-m", "xy.model", "messy.csv"], 1,
     "robustclust predict: error: no column 'x' in messy.csv (columns: name, a, b, note)"),
    ("predict over the model", ["predict", "-m", "model.csv", "blobs.csv", "-o",
                                "model.csv", "--force"], 1,
     "robustclust predict: error: refusing to write over the input file model.csv"),
    ("predict over the input", ["predict", "-m", "xy.model", "blobs.csv", "-o", "blobs.csv",
                                "--force"], 1,
     "robustclust predict: error: refusing to write over the input file blobs.csv"),
    ("predict a graph", ["predict", "-m", "xy.model", "bad.gml"], 2,
     "robustclust predict: error: predict does not take graph inputs: a saved model labels "
     "new rows of numbers; 'robustclust fit GRAPH -o FILE.csv' labels the nodes of a graph"),
    ("path missing values", ["path", "messy.csv", "-k", "2"], 1,
     "robustclust path: error: missing values in rows 3 and 17 of messy.csv (column b): "
     "use --drop-missing to leave these rows out"),
    ("demo runs", ["demo", "--runs", "0"], 2,
     "robustclust demo: error: Invalid value for '--runs': 0 is not in the range x>=1."),
]


#: The bad inputs the issue names, also run through the console script.
IN_SUBPROCESS = ("missing file", "unreadable csv", "non-numeric column", "missing values",
                 "fewer rows than clusters", "unknown method", "unknown option",
                 "unknown command", "output is the input", "demo runs",
                 "gamma without kernel", "covariance with kernel", "unknown kernel",
                 "predict a graph", "directed graph")


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("bad")
    write_files(where)
    return where


def _snapshot(where):
    return {p.name: p.read_bytes() for p in where.iterdir()}


@pytest.mark.parametrize("case_id, args, status, message", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_one_line_with_the_right_status(bad_dir, monkeypatch, capsys, case_id,
                                                     args, status, message):
    monkeypatch.chdir(bad_dir)
    before = _snapshot(bad_dir)
    assert main(args) == status
    out, err = capsys.readouterr()
    assert out == ""
    assert err == message + "\n"
    assert _snapshot(bad_dir) == before  # nothing written, no temporary file left


def test_bad_inputs_through_the_console_script(bad_dir):
    cases = [case for case in BAD if case[0] in IN_SUBPROCESS]
    assert len(cases) == len(IN_SUBPROCESS)
    before = _snapshot(bad_dir)
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = list(pool.map(lambda case: run(case[1], bad_dir), cases))
    for (case_id, _, status, message), proc in zip(cases, procs):
        assert (proc.returncode, proc.stdout, proc.stderr) == (status, "", message + "\n"), \
            case_id
    assert _snapshot(bad_dir) == before


# -- fit, predict, path on good inputs -----------------------------------------------
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """fit blobs.csv -k 4 -s 40 with every output, --json --quiet: (dir, process)."""
    where = tmp_path_factory.mktemp("fit")
    write_files(where)
    proc = run(["fit", "blobs.csv", "-k", "4", "-s", "40", "-o", "out.csv",
                "--save-model", "m.npz", "--json", "--quiet"], where)
    assert proc.returncode == 0, proc.stderr
    return where, proc


def test_fit_output_is_the_input_rows_plus_the_library_results(fitted):
    where, proc = fitted
    assert proc.stderr == ""
    model = RobustKMeans(4, n_outliers=40, random_state=0).fit(blobs())
    out = pd.read_csv(where / "out.csv")
    assert list(out.columns) == ["x", "y", "cluster", "is_outlier", "outlier_score"]
    pd.testing.assert_frame_equal(out[["x", "y"]], pd.read_csv(where / "blobs.csv"))
    np.testing.assert_array_equal(out["cluster"], model.labels_)
    np.testing.assert_array_equal(out["is_outlier"], model.labels_ == -1)
    np.testing.assert_array_equal(out["outlier_score"], model.outlier_norms_)
    assert (out["outlier_score"] > 0).sum() == 40

    summary = json.loads(proc.stdout)
    assert summary["lambda"] == model.lambda_
    assert summary["n_outliers"] == 40
    assert summary["cluster_sizes"] == np.bincount(model.labels_[model.labels_ >= 0]).tolist()
    assert summary["objective"] == model.objective_
    assert summary["n_iter"] == model.n_iter_
    assert summary["columns"] == ["x", "y"] and summary["n_rows"] == 240
    assert summary["estimator"] == "RobustKMeans"
    assert summary["method"] == "hard robust K-means"
    assert summary["lambda_rule"] == "chosen to flag 40 outliers"
    assert summary["output"] == "out.csv" and summary["saved_model"] == "m.npz"
    assert summary["warnings"] == [] and summary["time_s"] > 0
    top = summary["top_outliers"]
    assert len(top) == 10
    order = np.argsort(-model.outlier_norms_, kind="stable")[:10]
    assert [t["row"] for t in top] == (order + 1).tolist()  # rows count from 1
    assert [t["score"] for t in top] == model.outlier_norms_[order].tolist()


def test_saved_model_predicts_the_fitted_labels(fitted):
    where, _ = fitted
    proc = run(["predict", "--model", "m.npz", "out.csv", "-o", "pred.csv"], where)
    assert proc.returncode == 0, proc.stderr
    fit_out = pd.read_csv(where / "out.csv")
    pred = pd.read_csv(where / "pred.csv")
    # the earlier result columns are replaced, the input columns kept
    assert list(pred.columns) == ["x", "y", "cluster", "is_outlier", "outlier_score"]
    np.testing.assert_array_equal(pred["cluster"], fit_out["cluster"])
    model = load_model(where / "m.npz")
    frame = pd.read_csv(where / "blobs.csv")
    np.testing.assert_array_equal(pred["outlier_score"], model.outlier_norms(frame))
    lines = proc.stdout.splitlines()
    assert lines[:4] == ["predict: hard robust K-means, 4 clusters", "model: m.npz",
                         "input: out.csv, 240 rows, 5 columns", "features: x, y"]
    assert lines[4].startswith("result: 40 outliers, ")
    assert lines[-1] == "wrote pred.csv"


def test_predict_new_rows_matches_the_loaded_model(fitted):
    where, _ = fitted
    new = pd.DataFrame({"y": [0.0, 9.0, -1.0], "label": ["p", "q", "r"], "x": [0.5, 9.0, 2.0]})
    new.to_csv(where / "new.csv", index=False)
    proc = run(["predict", "-m", "m.npz", "new.csv", "--json"], where)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    model = load_model(where / "m.npz")
    expected = model.predict(new[["x", "y"]])
    assert summary["n_outliers"] == int((expected == -1).sum()) == 1
    assert summary["columns"] == ["x", "y"]  # taken by name, in the model's order
    assert summary["cluster_sizes"] == np.bincount(expected[expected >= 0],
                                                   minlength=4).tolist()


def test_messy_table_with_drop_missing_keeps_every_row_and_column(tmp_path):
    write_files(tmp_path)
    proc = run(["fit", "messy.csv", "-k", "2", "--drop-missing", "-o", "out.csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False, dtype=str)
    original = pd.read_csv(tmp_path / "messy.csv", keep_default_na=False, dtype=str)
    pd.testing.assert_frame_equal(out[original.columns], original)
    assert out.loc[[2, 16], ["cluster", "is_outlier", "outlier_score"]].eq("").all().all()
    kept = messy_frame().dropna()
    model = RobustKMeans(2, random_state=0).fit(kept[["a", "b"]])
    np.testing.assert_array_equal(out["cluster"].drop(index=[2, 16]).astype(int),
                                  model.labels_)
    lines = proc.stdout.splitlines()
    assert lines[1:5] == ["input: messy.csv, 20 rows, 4 columns", "features: a, b",
                          "skipped columns: name (not numeric), note (not numeric)",
                          "left out 2 rows with missing values: rows 3 and 17"]


def test_npy_and_tsv_inputs_and_tsv_output(tmp_path):
    write_files(tmp_path)
    X = blobs()
    pd.DataFrame(X, columns=["x", "y"]).to_csv(tmp_path / "blobs.tsv", sep="\t", index=False)
    proc = run(["fit", "blobs.npy", "-k", "4", "--lam", "4", "--columns", "1", "-o", "a.csv",
                "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "a.csv")
    assert list(out.columns) == ["0", "1", "cluster", "is_outlier", "outlier_score"]
    np.testing.assert_array_equal(out[["0", "1"]].to_numpy(), X)
    model = RobustKMeans(4, lam=4.0, random_state=0).fit(X[:, [1]])
    np.testing.assert_array_equal(out["cluster"], model.labels_)
    assert json.loads(proc.stdout)["lambda_rule"] == "given"

    proc = run(["fit", "blobs.tsv", "-k", "4", "--lam", "4", "-o", "b.tsv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "b.tsv", sep="\t")
    np.testing.assert_array_equal(out["cluster"],
                                  RobustKMeans(4, lam=4.0, random_state=0).fit(X).labels_)


def test_standardized_mixture_is_saved_with_its_scaling(tmp_path):
    write_files(tmp_path)
    frame = pd.read_csv(tmp_path / "blobs.csv")
    frame["y"] *= 100  # different units: standardizing matters
    frame.to_csv(tmp_path / "units.csv", index=False)
    proc = run(["fit", "units.csv", "-k", "4", "--method", "gmm", "--covariance", "diag",
                "--standardize", "-s", "5%", "--n-init", "2", "--save-model", "g.npz",
                "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    model = make_pipeline(StandardScaler(),
                          RobustGaussianMixture(4, covariance_type="diag", n_outliers=0.05,
                                                n_init=2, random_state=0)).fit(frame)
    assert summary["estimator"] == "RobustGaussianMixture"
    assert summary["method"] == "robust Gaussian mixture (RPC, diag covariance)"
    assert summary["lambda_rule"] == "chosen to flag 12 outliers (5% of the rows)"
    assert summary["lambda"] == model[-1].lambda_
    assert summary["n_outliers"] == model[-1].n_outliers_
    loaded = load_model(tmp_path / "g.npz")
    assert [name for name, _ in loaded.steps] == ["standardscaler", "robustgaussianmixture"]
    proc = run(["predict", "-m", "g.npz", "units.csv", "-o", "p.csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    pred = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_array_equal(pred["cluster"], model.predict(frame))
    assert "outlier_score" not in pred  # no per-point score for new rows of a mixture


def test_soft_weighted_method_and_warnings(tmp_path):
    X = np.array([[0, 0]] * 10 + [[0, 1]] * 10 + [[10, 0]] * 10 + [[10, 1]] * 10
                 + [[5, 40]] * 3, dtype=float)
    pd.DataFrame(X, columns=["u", "v"]).to_csv(tmp_path / "dup.csv", index=False)
    proc = run(["fit", "dup.csv", "-k", "2", "-s", "2", "--json", "--unrefined"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the paper's estimator: no lambda flags exactly 2 points, since the three
    # copies of (5, 40) are flagged together or not at all; the count search
    # returns the closest count it reaches, 3 (the copies; 0 with an earlier
    # screening of the starts, one further from 2), and says so
    with pytest.warns(OutlierCountWarning):
        model = RobustKMeans(2, n_outliers=2, refine=False, random_state=0).fit(X)
    assert model.n_outliers_ == 3
    np.testing.assert_array_equal(model.outlier_indices_, [40, 41, 42])
    # the copies are flagged: lambda below twice their distance to the nearest centre
    assert model.lambda_ < 2 * model.transform(X[40:41]).min()
    warning = ("n_outliers=2 was asked for but no lambda on the path flags exactly that "
               f"many points; 3 are flagged (lambda_={model.lambda_:.6g}).")
    assert proc.stderr == f"robustclust fit: warning: {warning}\n"
    assert json.loads(proc.stdout)["warnings"] == [warning]
    # the default (trimmed refinement of eq. (3)) puts a centre on the 3 copies
    # and trims 2 of the 40 other rows, which all lie as far from the other
    # centre: a tie is flagged whole or not at all, whichever is nearer 2 (none),
    # with a warning (it flagged 2 of 40 equal distances, and predict none)
    proc = run(["fit", "dup.csv", "-k", "2", "-s", "2", "--json"], tmp_path)
    assert proc.returncode == 0
    summary = json.loads(proc.stdout)
    assert summary["n_outliers"] == 0
    assert summary["warnings"] == ["n_outliers=2 was asked for, but 0 points are flagged: "
                                   "the row at the boundary of the 2 farthest ties with "
                                   "kept rows (repeated rows, rows on a centre, as when "
                                   "there are fewer distinct rows than clusters plus "
                                   "outliers), and tied rows are flagged all or none, "
                                   "whichever count is nearer 2."]

    proc = run(["fit", "dup.csv", "-k", "2", "--method", "soft", "--q", "2", "--weighted",
                "--lam", "3", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    model = RobustKMeans(2, fuzzifier=2.0, penalty="log", lam=3.0, random_state=0).fit(X)
    assert summary["method"] == "weighted soft robust K-means (q=2)"
    assert summary["lambda"] == model.lambda_ and summary["n_outliers"] == model.n_outliers_


def test_path_table_matches_regularization_path(tmp_path):
    write_files(tmp_path)
    proc = run(["path", "blobs.csv", "-k", "4", "--n-lambdas", "8", "--no-refine", "-o",
                "path.csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = regularization_path(RobustKMeans(4, random_state=0), blobs(), n_lambdas=8)
    table = pd.read_csv(tmp_path / "path.csv")
    assert list(table.columns) == ["lambda", "n_outliers", "objective", "n_iter"]
    np.testing.assert_array_equal(table["lambda"], expected.lambdas)
    np.testing.assert_array_equal(table["n_outliers"], expected.n_outliers)
    lines = proc.stdout.splitlines()
    assert lines[0] == "path: hard robust K-means, 4 clusters"
    assert lines[2] == "features: x, y"
    assert lines[3].startswith(f"lambda_max: {expected.lambda_max:.4g} (nothing is flagged "
                               f"above it); 8 values down to {expected.lambdas[-1]:.4g}; ")
    # the short table: the first and last values and where the count reaches each share
    shown = summary_rows(expected.n_outliers)
    rows = [line.split() for line in lines[6:6 + len(shown)]]
    assert [float(r[0]) for r in rows] == [float(f"{expected.lambdas[i]:.4g}") for i in shown]
    assert [int(r[1]) for r in rows] == expected.n_outliers[shown].tolist()
    assert lines[-1] == "wrote path.csv"
    # --table prints them all
    proc = run(["path", "blobs.csv", "-k", "4", "--n-lambdas", "8", "--no-refine", "--table"],
               tmp_path)
    rows = [line.split() for line in proc.stdout.splitlines()[6:14]]
    assert [float(r[0]) for r in rows] == [float(f"{v:.4g}") for v in expected.lambdas]
    assert [int(r[1]) for r in rows] == expected.n_outliers.tolist()


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_plots_are_written_as_png(tmp_path):
    write_files(tmp_path)
    proc = run(["fit", "blobs.csv", "-k", "4", "-s", "40", "--plot", "fit.png", "--quiet"],
               tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert _png_size(tmp_path / "fit.png") == (768, 624)
    proc = run(["path", "blobs.csv", "-k", "4", "--n-lambdas", "5", "--plot", "path.png",
                "--quiet"], tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert _png_size(tmp_path / "path.png") == (1320, 504)


def _without(module, where):
    """An environment in which importing ``module`` fails."""
    shadow = where / "shadow" / module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f"raise ImportError('no {module} here')\n")
    return {**os.environ, "PYTHONPATH": str(where / "shadow")}


def test_plot_without_matplotlib_fails_before_fitting(tmp_path):
    write_files(tmp_path)
    proc = run(["fit", "blobs.csv", "-k", "4", "-o", "out.csv", "--plot", "f.png"], tmp_path,
               env=_without("matplotlib", tmp_path))
    assert proc.returncode == 1
    assert proc.stderr == ("robustclust fit: error: --plot needs matplotlib: pip install "
                           "'robustclust[plot]'\n")
    assert not (tmp_path / "out.csv").exists()


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path):
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    proc = run(["fit", "t.parquet", "-k", "2"], tmp_path, env=_without("pyarrow", tmp_path))
    assert proc.returncode == 1
    assert proc.stderr == ("robustclust fit: error: reading Parquet files needs pyarrow: "
                           "pip install 'robustclust[parquet]'\n")


def test_parquet_input(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow (the parquet extra) is not installed")
    pd.DataFrame(blobs(), columns=["x", "y"]).to_parquet(tmp_path / "b.parquet")
    proc = run(["fit", "b.parquet", "-k", "4", "--lam", "4", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    model = RobustKMeans(4, lam=4.0, random_state=0).fit(blobs())
    assert json.loads(proc.stdout)["n_outliers"] == model.n_outliers_


def test_existing_output_is_kept_without_force_and_replaced_with_it(tmp_path):
    write_files(tmp_path)
    args = ["fit", "blobs.csv", "-k", "4", "--lam", "4", "-o", "existing.csv", "--quiet"]
    proc = run(args, tmp_path)
    assert proc.returncode == 1
    assert (tmp_path / "existing.csv").read_text() == "keep me\n"
    proc = run(args + ["--force"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert pd.read_csv(tmp_path / "existing.csv").columns[-1] == "outlier_score"
    assert (tmp_path / "blobs.csv").read_text().startswith("x,y\n")


def test_progress_bar_only_on_a_terminal_and_not_when_quiet(tmp_path):
    write_files(tmp_path)

    def stderr_on_a_terminal(extra):
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        proc = subprocess.Popen(COMMAND + ["fit", "blobs.csv", "-k", "4", "-s", "40",
                                           "-o", "out.csv", "--force"] + extra,
                                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(timeout=300) == 0
        os.close(leader)
        return b"".join(chunks).decode()

    shown = stderr_on_a_terminal([])
    assert shown.startswith("\rfit: ")
    # a phase of the fit (the count's lambda search) shows a bar with its total
    assert re.search(r"\rfit: [^\r]*\| 0/\d+ \[", shown), shown
    assert shown.endswith("\r")  # the bar is erased when the fit ends
    assert stderr_on_a_terminal(["--quiet"]) == ""


# -- kernels and graphs ----------------------------------------------------------------
def assert_self_consistent(out, n_outliers=None):
    """is_outlier is exactly cluster == -1 and exactly outlier_score > 0."""
    flagged = out["is_outlier"].to_numpy(dtype=bool)
    np.testing.assert_array_equal(flagged, out["cluster"].to_numpy() == -1)
    if "outlier_score" in out:
        np.testing.assert_array_equal(flagged, out["outlier_score"].to_numpy() > 0)
    if n_outliers is not None:
        assert flagged.sum() == n_outliers


@pytest.mark.parametrize("args, n_outliers", [
    (["-s", "40"], 40),
    (["--method", "soft", "--weighted", "-s", "5%"], 12),
    (["--method", "gmm", "--covariance", "diag", "--weighted", "-s", "40"], 40),
    (["--kernel", "rbf", "--method", "soft", "--weighted", "-s", "40"], 40),
    (["--kernel", "cosine", "--method", "gmm", "-s", "0.1"], 24),
    (["--kernel", "rbf"], None),
], ids=["hard", "soft-weighted", "gmm-weighted", "kernel-soft-weighted", "kernel-gmm",
        "kernel-default-lambda"])
def test_fit_output_flags_exactly_the_rows_with_a_positive_score(tmp_path, monkeypatch, capsys,
                                                                 args, n_outliers):
    write_files(tmp_path)
    monkeypatch.chdir(tmp_path)  # in-process: the console script itself is tested above
    assert main(["fit", "blobs.csv", "-k", "4", "--n-init", "3", "-o", "out.csv", "--json"]
                + args) == 0
    out = pd.read_csv(tmp_path / "out.csv")
    assert_self_consistent(out, n_outliers)
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_outliers"] == out["is_outlier"].sum()
    if n_outliers is None:  # the rbf kernel has no dimension for the chi^2 rule
        assert summary["lambda_rule"] == ("default: a robust 0.1% tail of the feature-space "
                                          "distances")


def test_linear_kernel_gives_the_linear_models_results(fitted):
    where, _ = fitted
    # the linear model's default start (the kernel estimators' default is k-means++);
    # the kernel estimators do not refine, so neither does the linear fit here
    # (ten full robust starts each: the linear model's n_init="auto" screens its
    # starts on a sample, which the kernel estimators do not)
    proc = run(["fit", "blobs.csv", "-k", "4", "-s", "40", "--unrefined", "--n-init", "10",
                "-o", "linear-unrefined.csv", "--json", "--quiet"], where)
    kernel = run(["fit", "blobs.csv", "-k", "4", "-s", "40", "--kernel", "linear", "--init",
                  "robust", "--n-init", "10", "-o", "linear-kernel.csv", "--json", "--quiet"],
                 where)
    assert proc.returncode == 0 and kernel.returncode == 0, kernel.stderr
    plain = pd.read_csv(where / "linear-unrefined.csv")
    kern = pd.read_csv(where / "linear-kernel.csv")
    pd.testing.assert_frame_equal(kern[["x", "y", "cluster", "is_outlier"]],
                                  plain[["x", "y", "cluster", "is_outlier"]])
    np.testing.assert_allclose(kern["outlier_score"], plain["outlier_score"], rtol=1e-9,
                               atol=1e-12)
    a, b = json.loads(proc.stdout), json.loads(kernel.stdout)
    assert b["estimator"] == "KernelRobustKMeans" and b["kernel"] == "linear"
    assert b["method"] == "hard kernel robust K-means (linear kernel)"
    assert b["lambda"] == pytest.approx(a["lambda"], rel=1e-9)
    assert b["cluster_sizes"] == a["cluster_sizes"]


@pytest.fixture(scope="module")
def rbf_fitted(tmp_path_factory):
    """fit blobs.csv -k 4 --kernel rbf -s 40 -o rbf.csv --save-model rbf.npz --json."""
    where = tmp_path_factory.mktemp("rbf")
    write_files(where)
    proc = run(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf", "-s", "40", "-o", "rbf.csv",
                "--save-model", "rbf.npz", "--json"], where)
    assert proc.returncode == 0, proc.stderr
    model = KernelRobustKMeans(4, kernel="rbf", n_outliers=40, random_state=0).fit(
        pd.read_csv(where / "blobs.csv"))
    return where, proc, model


def test_rbf_fit_output_is_the_library_result(rbf_fitted):
    where, proc, model = rbf_fitted
    out = pd.read_csv(where / "rbf.csv")
    assert list(out.columns) == ["x", "y", "cluster", "is_outlier", "outlier_score"]
    pd.testing.assert_frame_equal(out[["x", "y"]], pd.read_csv(where / "blobs.csv"))
    np.testing.assert_array_equal(out["cluster"], model.labels_)
    np.testing.assert_array_equal(out["outlier_score"], model.outlier_norms_)
    assert_self_consistent(out, 40)
    summary = json.loads(proc.stdout)
    assert (summary["estimator"], summary["kernel"]) == ("KernelRobustKMeans", "rbf")
    assert summary["gamma"] == model.gamma_  # the median heuristic's value
    assert summary["method"] == ("hard kernel robust K-means (rbf kernel, "
                                 f"gamma={model.gamma_:.4g})")
    assert summary["lambda"] == model.lambda_ and summary["n_outliers"] == 40
    assert summary["lambda_rule"] == "chosen to flag 40 outliers"
    assert summary["saved_model"] == "rbf.npz"


def test_rbf_save_then_predict_reproduces_the_fitted_labels(rbf_fitted):
    where, _, model = rbf_fitted
    proc = run(["predict", "-m", "rbf.npz", "rbf.csv", "-o", "pred.csv"], where)
    assert proc.returncode == 0, proc.stderr
    pred, fit_out = pd.read_csv(where / "pred.csv"), pd.read_csv(where / "rbf.csv")
    X = fit_out[["x", "y"]]
    # predict reruns the O- and U-steps per row with the centres fixed: it always equals
    # the in-memory model's predict, and on these rows also the fitted labels (a row
    # near the threshold could in general go either way)
    np.testing.assert_array_equal(pred["cluster"], model.predict(X))
    np.testing.assert_array_equal(pred["cluster"], fit_out["cluster"])
    np.testing.assert_array_equal(pred["outlier_score"], model.outlier_norms(X))
    assert_self_consistent(pred, 40)
    assert proc.stdout.splitlines()[0] == (
        f"predict: hard kernel robust K-means (rbf kernel, gamma={model.gamma_:.4g}), "
        "4 clusters")


def test_kernel_mixture_poly_options_and_standardizing_reach_the_estimator(tmp_path):
    write_files(tmp_path)
    frame = pd.read_csv(tmp_path / "blobs.csv")
    proc = run(["fit", "blobs.csv", "-k", "4", "--kernel", "poly", "--gamma", "0.5",
                "--degree", "2", "--coef0", "0.25", "--method", "gmm", "--init", "random",
                "--standardize", "-s", "20", "--n-init", "3", "--seed", "7", "-o", "g.csv",
                "--save-model", "g.npz", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    model = make_pipeline(StandardScaler(), KernelRobustGaussianMixture(
        4, kernel="poly", kernel_params={"gamma": 0.5, "degree": 2, "coef0": 0.25}, init="random", n_outliers=20,
        n_init=3, random_state=7)).fit(frame)
    out = pd.read_csv(tmp_path / "g.csv")
    np.testing.assert_array_equal(out["cluster"], model[-1].labels_)
    np.testing.assert_array_equal(out["outlier_score"], model[-1].outlier_scores_)
    assert_self_consistent(out, 20)
    summary = json.loads(proc.stdout)
    assert summary["method"] == ("kernel robust Gaussian mixture (KRPC, poly kernel, "
                                 "degree 2, gamma=0.5, coef0=0.25)")
    proc = run(["predict", "-m", "g.npz", "blobs.csv", "-o", "p.csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    pred = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_array_equal(pred["cluster"], model.predict(frame))
    assert "outlier_score" not in pred  # mixtures have no per-point score for new rows
    assert_self_consistent(pred)


def test_spectral_init_and_kernel_path(tmp_path):
    write_files(tmp_path)
    X = blobs()
    proc = run(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf", "--gamma", "0.1", "--init",
                "spectral", "--lam", "1", "--n-init", "2", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    model = KernelRobustKMeans(4, kernel="rbf", kernel_params={"gamma": 0.1}, init="spectral", lam=1.0,
                               n_init=2, random_state=0).fit(X)
    summary = json.loads(proc.stdout)
    assert summary["n_outliers"] == model.n_outliers_
    assert summary["objective"] == model.objective_
    assert summary["lambda_rule"] == "given"

    proc = run(["path", "blobs.csv", "-k", "4", "--kernel", "rbf", "--n-lambdas", "6",
                "--no-refine", "-o", "path.csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = regularization_path(KernelRobustKMeans(4, random_state=0), X, n_lambdas=6)
    table = pd.read_csv(tmp_path / "path.csv")
    np.testing.assert_array_equal(table["lambda"], expected.lambdas)
    np.testing.assert_array_equal(table["n_outliers"], expected.n_outliers)
    assert proc.stdout.splitlines()[0] == ("path: hard kernel robust K-means (rbf kernel, "
                                           "gamma=1/median), 4 clusters")


#: Two 5-cliques joined by the edge a1-b1, and x, linked to one node of each.
TWO_CLIQUES = "".join(f"{g}{i} {g}{j}\n" for g in "ab" for i in range(1, 6)
                      for j in range(i + 1, 6)) + "a1 b1\nx a2\nx,b2,1.0  # a comma too\n"


def test_edge_list_nodes_are_clustered_and_named(tmp_path):
    (tmp_path / "cliques.edges").write_text("# two cliques and a go-between\n" + TWO_CLIQUES)
    graph = read_graph(tmp_path / "cliques.edges", "edgelist")
    assert (graph.number_of_nodes(), graph.number_of_edges()) == (11, 23)
    proc = run(["fit", "cliques.edges", "-k", "2", "-s", "1", "-o", "nodes.csv"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "nodes.csv")
    assert list(out.columns) == ["node", "degree", "cluster", "is_outlier", "outlier_score"]
    assert out["node"].tolist() == list(graph.nodes)
    assert out["degree"].tolist() == [d for _, d in graph.degree()]
    assert_self_consistent(out, 1)
    by_node = out.set_index("node")["cluster"]
    assert by_node["x"] == -1  # linked to both cliques, it belongs to neither
    a, b = by_node[[f"a{i}" for i in range(1, 6)]], by_node[[f"b{i}" for i in range(1, 6)]]
    assert a.nunique() == b.nunique() == 1 and a.iloc[0] != b.iloc[0]

    K = normalized_adjacency_kernel(graph)
    model = KernelRobustKMeans(2, kernel="precomputed", init="spectral", n_outliers=1,
                               random_state=0).fit(K)
    np.testing.assert_array_equal(out["cluster"], model.labels_)
    np.testing.assert_array_equal(out["outlier_score"], model.outlier_norms_)
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["fit: hard kernel robust K-means (graph kernel), 2 clusters",
                         "input: cliques.edges, 11 nodes, 23 edges",
                         f"lambda: {model.lambda_:.4g} (chosen to flag 1 outlier)"]
    assert lines[5:9] == ["cluster   nodes", "0             5", "1             5",
                          "outliers      1"]
    assert lines[9:] == ["", "top outliers by score", "node  degree  score",
                         f"x          2  {model.outlier_norms_[-1]:.4g}", "wrote nodes.csv"]

    proc = run(["path", "cliques.edges", "-k", "2", "--n-lambdas", "5", "--no-refine",
                "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = regularization_path(KernelRobustKMeans(2, kernel="precomputed",
                                                      init="spectral", random_state=0),
                                   K, n_lambdas=5)
    assert json.loads(proc.stdout)["n_outliers"] == expected.n_outliers.tolist()


def test_graphs_the_graph_kernel_cannot_take_are_one_line_data_errors(tmp_path):
    (tmp_path / "lonely.gml").write_text(
        'graph [\n  node [ id 0 label "a" ]\n  node [ id 1 label "b" ]\n'
        '  node [ id 2 label "lonely" ]\n  edge [ source 0 target 1 ]\n]\n')
    (tmp_path / "zero.edges").write_text("a b\nb c\nc d 0\n")  # d: only a 0-weight edge
    for name, node in (("lonely.gml", "'lonely'"), ("zero.edges", "'d'")):
        proc = run(["fit", name, "-k", "2", "-o", "out.csv"], tmp_path)
        assert proc.returncode == 1
        assert proc.stdout == ""
        assert proc.stderr.startswith(f"robustclust fit: error: cannot cluster {name}: the "
                                      "graph has 1 isolated node(s) (")
        assert node in proc.stderr and proc.stderr.count("\n") == 1
        assert not (tmp_path / "out.csv").exists()


@pytest.mark.skipif(not DOLPHINS.exists(), reason="../shared/data/dolphins.gml is absent")
def test_dolphins_gml_is_clustered_with_node_names(tmp_path):
    graph = read_graph(DOLPHINS, "gml")
    assert (graph.number_of_nodes(), graph.number_of_edges()) == (62, 159)
    assert list(graph.nodes)[:3] == ["Beak", "Beescratch", "Bumper"]
    shutil.copy(DOLPHINS, tmp_path / "dolphins.gml")
    proc = run(["fit", "dolphins.gml", "-k", "4", "-s", "12", "-o", "dolphins.csv",
                "--plot", "dolphins.png", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "dolphins.csv")
    assert out["node"].tolist() == list(graph.nodes)
    assert_self_consistent(out, 12)
    flagged = set(out.loc[out["is_outlier"], "node"])
    assert {"SN89", "TR99"} <= flagged and "Zig" not in flagged  # as in the paper's Fig. 7
    model = KernelRobustKMeans(4, kernel="precomputed", init="spectral", n_outliers=12,
                               random_state=0).fit(normalized_adjacency_kernel(graph))
    np.testing.assert_array_equal(out["cluster"], model.labels_)
    summary = json.loads(proc.stdout)
    assert summary["graph"] and summary["kernel"] == "graph" and summary["n_edges"] == 159
    assert summary["n_outliers"] == 12 and summary["plot"] == "dolphins.png"
    degree = dict(graph.degree())
    top = summary["top_outliers"]
    assert len(top) == 10 and {t["node"] for t in top} <= flagged
    assert all(t["degree"] == degree[t["node"]] for t in top)
    assert [t["score"] for t in top] == sorted(out["outlier_score"], reverse=True)[:10]
    assert _png_size(tmp_path / "dolphins.png") == (864, 768)


@pytest.mark.skipif(not FOOTBALL.exists(), reason="../shared/data/football.gml is absent")
def test_football_conferences_are_found(tmp_path):
    from sklearn.metrics import adjusted_rand_score

    shutil.copy(FOOTBALL, tmp_path / "football.gml")
    proc = run(["fit", "football.gml", "-k", "12", "-s", "12", "--n-init", "10", "-o",
                "teams.csv", "--quiet"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "teams.csv")
    assert_self_consistent(out, 12)
    graph = read_graph(FOOTBALL, "gml")
    conference = np.array([graph.nodes[team]["value"] for team in graph.nodes])
    assert out["node"].tolist() == list(graph.nodes)
    inliers = ~out["is_outlier"].to_numpy()
    # the paper's Section VI-D: the conferences, up to the teams flagged
    assert adjusted_rand_score(conference[inliers], out["cluster"][inliers]) > 0.9


def test_graph_plot_highlights_the_outliers(tmp_path):
    pytest.importorskip("matplotlib")
    from robustclust.cli._figures import graph_figure

    (tmp_path / "cliques.edges").write_text(TWO_CLIQUES)
    graph = read_graph(tmp_path / "cliques.edges", "edgelist")
    labels = np.array([0] * 5 + [1] * 5 + [-1])
    scores = np.r_[np.zeros(10), 0.2]
    ax = graph_figure(graph, labels, scores, title="t").axes[0]
    outliers = [c for c in ax.collections if c.get_gid() == "outliers"]
    assert len(outliers) == 1 and len(outliers[0].get_offsets()) == 1
    bold = [t.get_text().strip() for t in ax.texts if t.get_fontweight() == "bold"]
    assert bold == [list(graph.nodes)[10]] and ax.get_title() == "t"


def test_help_version_and_demo_entry(tmp_path):
    proc = run(["--version"], tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "robustclust, version 0.1.0\n")
    proc = run(["fit", "--help"], tmp_path)
    assert proc.returncode == 0
    for option in ("--columns", "-k, --clusters", "-s, --outliers", "--lam", "--method",
                   "--q", "--covariance", "--weighted", "--kernel", "--gamma", "--degree",
                   "--coef0", "--init", "--standardize",
                   "--n-init", "--seed", "-o, --output", "--plot", "--save-model", "--json",
                   "--quiet", "--force", "--drop-missing"):
        assert option in proc.stdout


# -- in-process checks of the pieces -------------------------------------------------
def test_rows_phrase():
    assert rows_phrase([3]) == "row 3"
    assert rows_phrase([3, 17]) == "rows 3 and 17"
    assert rows_phrase([1, 2, 3]) == "rows 1, 2 and 3"
    assert rows_phrase(range(1, 14)) == "rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 3 more"


def test_atomic_write_leaves_the_old_file_on_failure(tmp_path):
    dest = tmp_path / "out.csv"
    dest.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_write(dest, "w") as fh:
            fh.write("half a ")
            raise RuntimeError("interrupted")
    assert dest.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    with atomic_write(dest, "w") as fh:
        fh.write("new\n")
    assert dest.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    umask = os.umask(0)
    os.umask(umask)
    assert dest.stat().st_mode & 0o777 == 0o666 & ~umask


def test_check_destination(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("x\n1\n")
    assert check_destination(tmp_path / "new.csv", inputs=[source]) == tmp_path / "new.csv"
    with pytest.raises(UnsafeWriteError, match="already exists"):
        check_destination(source)
    assert check_destination(source, force=True) == source  # not an input here
    with pytest.raises(UnsafeWriteError, match="refusing to write over the input"):
        check_destination(tmp_path / "." / "in.csv", inputs=[source], force=True)
    with pytest.raises(UnsafeWriteError, match="is a directory"):
        check_destination(tmp_path, force=True)


def test_main_without_arguments_prints_help_and_returns_0(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("Usage: robustclust [OPTIONS] COMMAND")


def test_unexpected_exceptions_are_one_line(monkeypatch, capsys, tmp_path):
    import robustclust.cli._commands as cli

    def boom(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cli, "read_input", boom)
    monkeypatch.delenv("ROBUSTCLUST_DEBUG", raising=False)
    assert main(["fit", str(tmp_path / "x.csv"), "-k", "2"]) == 1
    err = capsys.readouterr().err
    assert err == ("robustclust fit: error: internal error (RuntimeError: boom second line); "
                   "please report it (ROBUSTCLUST_DEBUG=1 shows the traceback)\n")
    monkeypatch.setenv("ROBUSTCLUST_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(["fit", str(tmp_path / "x.csv"), "-k", "2"])


def test_cluster_figure_circles_each_outlier_with_radius_proportional_to_its_score():
    pytest.importorskip("matplotlib")
    from sklearn.decomposition import PCA

    from robustclust.cli._figures import MAX_CIRCLE_RADIUS, MIN_CIRCLE_RADIUS, cluster_figure

    X = blobs()
    model = RobustKMeans(4, n_outliers=40, random_state=0).fit(X)
    labels, scores = model.labels_, model.outlier_norms_
    out = labels == -1
    ax = cluster_figure(X, labels, scores, axis_names=("x", "y")).axes[0]
    by_gid = {c.get_gid(): c for c in ax.collections}
    for c in range(4):
        np.testing.assert_array_equal(by_gid[f"cluster-{c}"].get_offsets(), X[labels == c])
    circles = by_gid["outlier-circles"]
    np.testing.assert_array_equal(circles.get_offsets(), X[out])
    np.testing.assert_allclose(
        np.sqrt(circles.get_sizes()),
        np.maximum(MAX_CIRCLE_RADIUS * scores[out] / scores[out].max(), MIN_CIRCLE_RADIUS))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x", "y")

    X3 = np.column_stack([X, X[:, 0] - 2 * X[:, 1]])
    fig = cluster_figure(X3, labels, scores)
    ax, strip = fig.axes[:2]
    pca = PCA(n_components=2).fit(X3[labels >= 0])  # the outliers do not choose the view
    view = pca.transform(X3)
    np.testing.assert_allclose(ax.collections[0].get_offsets(), view[labels == 0])
    share = pca.explained_variance_ratio_[0]
    assert ax.get_xlabel() == f"principal component 1 ({share:.0%} of inlier variance)"
    assert "a 2-D projection of 3 columns" in ax.get_title()
    # the second panel: distances in all the columns to the cluster's inlier mean
    by_gid = {c.get_gid(): c for c in strip.collections}
    far = by_gid["outlier-distances"].get_offsets()[:, 1]
    means = np.stack([X3[labels == c].mean(axis=0) for c in range(4)])
    expected = np.sqrt(((X3[out][:, None] - means[None]) ** 2).sum(axis=2)).min(axis=1)
    np.testing.assert_allclose(far, expected)
