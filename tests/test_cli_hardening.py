"""Issue 13: nothing lost, nothing silently wrong.

One test (or a few) per numbered case of the issue, each asserting the exact
message or behaviour.  Most run the command line in-process through
:func:`robustclust.cli.main`, the function the console script calls (the
same argument parsing, error formatting and exit statuses); the cases that
need real processes (two runs at once, SIGTERM) run the console script and
are marked slow.
"""

import bz2
import errno
import gzip
import json
import lzma
import os
import signal
import subprocess
import time
import traceback
import zipfile
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from robustclust import (
    KernelRobustGaussianMixture,
    KernelRobustKMeans,
    RobustGaussianMixture,
    RobustKMeans,
    regularization_path,
    save_model,
)
from robustclust.datasets import make_blobs_with_outliers
from robustclust.graph import normalized_adjacency_kernel
from cli_session import COMMAND, invoke

#: The core's overflow warnings and OutlierCountWarning, expected while item 4 is open.
QUIET_CORE = pytest.mark.filterwarnings("ignore::RuntimeWarning",
                                        "ignore::robustclust.OutlierCountWarning")


def listing(where):
    """Every entry of a folder, hidden temporary files included."""
    return sorted(p.name for p in Path(where).iterdir())


def blobs(n_outliers=40):
    return make_blobs_with_outliers(n_outliers=n_outliers, random_state=0).X


def write_blobs(where, name="blobs.csv", n_outliers=40):
    pd.DataFrame(blobs(n_outliers), columns=["x", "y"]).to_csv(where / name, index=False)
    return where / name


# -- 1. publish without replacing --------------------------------------------------------
def _appears_during_fit(monkeypatch, path, text):
    """Make ``path`` appear (with ``text``) while the estimator fits."""
    import robustclust.cli._commands as commands

    real = commands.run_estimator

    def fit_then_write(func, *args, **kwargs):
        result = real(func, *args, **kwargs)
        Path(path).write_text(text)
        return result

    monkeypatch.setattr(commands, "run_estimator", fit_then_write)


def test_1_a_file_that_appears_during_the_fit_is_kept_and_nothing_is_written(
        tmp_path, monkeypatch):
    write_blobs(tmp_path)
    _appears_during_fit(monkeypatch, tmp_path / "precious.csv", "notes\n")
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "-s", "40", "--save-model",
                               "m.npz", "-o", "precious.csv", "--plot", "p.png"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: precious.csv was created by another program while "
                   "this command ran (another run?); it was left as it is and nothing was "
                   "written (use --force to overwrite it)\n")
    assert (tmp_path / "precious.csv").read_text() == "notes\n"
    # all or none: the model, published before the table, was taken back; no temporary left
    assert listing(tmp_path) == ["blobs.csv", "precious.csv"]


def test_1_force_replaces_a_file_that_appeared(tmp_path, monkeypatch):
    write_blobs(tmp_path)
    _appears_during_fit(monkeypatch, tmp_path / "out.csv", "notes\n")
    status, _, err = invoke(["fit", "blobs.csv", "-k", "4", "-s", "40", "-o", "out.csv",
                             "--force", "--quiet"], tmp_path)
    assert (status, err) == (0, "")
    out = pd.read_csv(tmp_path / "out.csv")
    assert len(out) == 240 and out["is_outlier"].sum() == 40
    assert listing(tmp_path) == ["blobs.csv", "out.csv"]


def test_1_staged_files_publish_all_or_none(tmp_path):
    from robustclust._files import StagedFiles, UnsafeWriteError

    (tmp_path / "b.txt").write_text("theirs")
    with pytest.raises(UnsafeWriteError, match="b.txt was created by another program"):
        with StagedFiles() as staged:
            for name in ("a.txt", "b.txt", "c.txt"):
                with staged.open(tmp_path / name, "w") as fh:
                    fh.write(name)
            staged.publish()
    assert listing(tmp_path) == ["b.txt"]
    assert (tmp_path / "b.txt").read_text() == "theirs"
    with StagedFiles(replace=True) as staged:
        with staged.open(tmp_path / "b.txt", "w") as fh:
            fh.write("ours")
        staged.publish()
    assert (tmp_path / "b.txt").read_text() == "ours" and listing(tmp_path) == ["b.txt"]


@pytest.mark.slow
def test_1_two_runs_writing_the_same_output_at_once(tmp_path):
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(60000, 2)), columns=["x", "y"]).to_csv(
        tmp_path / "big.csv", index=False)

    def command(s, output):
        return COMMAND + ["fit", "big.csv", "-k", "2", "--n-init", "1", "-s", s, "-o", output,
                          "--quiet"]

    procs = {s: subprocess.Popen(command(s, "same.csv"), cwd=tmp_path, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for s in ("10", "20")}
    results = {s: (p.wait(timeout=300), p.stdout.read(), p.stderr.read())
               for s, p in procs.items()}
    assert sorted(status for status, _, _ in results.values()) == [0, 1]
    winner = next(s for s, (status, _, _) in results.items() if status == 0)
    loser = next(s for s in results if s != winner)
    assert results[winner][1:] == ("", "")
    assert results[loser][1] == ""
    assert results[loser][2] in (
        "robustclust fit: error: same.csv already exists (use --force to overwrite it)\n",
        "robustclust fit: error: same.csv was created by another program while this command "
        "ran (another run?); it was left as it is and nothing was written (use --force to "
        "overwrite it)\n")
    # the file holds the winner's complete output, byte for byte
    again = subprocess.run(command(winner, "again.csv"), cwd=tmp_path, capture_output=True)
    assert again.returncode == 0
    assert (tmp_path / "same.csv").read_bytes() == (tmp_path / "again.csv").read_bytes()
    assert pd.read_csv(tmp_path / "same.csv")["is_outlier"].sum() == int(winner)
    assert not [name for name in listing(tmp_path) if name.endswith(".tmp")]


# -- 2. reproduce writes only into its own folder ---------------------------------------------
@pytest.fixture
def fake_experiment(monkeypatch):
    """The dolphins experiment replaced by one that writes one small figure."""
    from matplotlib.figure import Figure

    from robustclust._reproduce import dolphins
    from robustclust._reproduce._report import Section, save_figure

    def run(out_dir, *, quick, data_home=None):
        fig = Figure(figsize=(1, 1))
        fig.add_subplot().plot([0, 1])
        return Section(key="dolphins", title="Dolphins", body="b",
                       figures=[save_figure(fig, out_dir, "fig7_dolphins.png")])

    monkeypatch.setattr(dolphins, "run", run)


def _reproduce(out, *extra):
    return ["reproduce", "--only", "dolphins", "--no-download", "--out", out, *extra]


def test_2_reproduce_refuses_a_folder_with_files_it_did_not_write(tmp_path, fake_experiment):
    status, out, err = invoke(_reproduce("rep"), tmp_path)
    assert status == 0
    assert err == "reproduce: dolphins ...\n" + err.splitlines()[1] + "\n"  # progress only
    assert listing(tmp_path / "rep") == [".robustclust-reproduce.json", "README.md",
                                         "fig7_dolphins.png"]
    assert invoke(_reproduce("rep"), tmp_path)[0] == 0  # its own files: replaced
    (tmp_path / "rep" / "notes.txt").write_text("mine\n")
    status, out, err = invoke(_reproduce("rep"), tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust reproduce: error: rep holds files that reproduce did not write "
                   "(notes.txt): choose a new or empty --out folder, or use --force to write "
                   "beside them (files with the report's names are then replaced)\n")
    status, _, err = invoke(_reproduce("rep", "--force"), tmp_path)
    assert status == 0 and "error" not in err
    assert (tmp_path / "rep" / "notes.txt").read_text() == "mine\n"
    # a report file edited since is not the reproduction's any more
    (tmp_path / "rep" / "notes.txt").unlink()
    with open(tmp_path / "rep" / "README.md", "a") as fh:
        fh.write("my remarks\n")
    status, _, err = invoke(_reproduce("rep"), tmp_path)
    assert status == 1 and "(README.md)" in err


def test_2_reproduce_into_the_current_folder_keeps_its_readme(tmp_path, fake_experiment):
    (tmp_path / "README.md").write_text("# my project\n")
    status, out, err = invoke(_reproduce("."), tmp_path)
    assert (status, out) == (1, "")
    assert err.startswith("robustclust reproduce: error: . holds files that reproduce did not "
                          "write (README.md): ")
    assert (tmp_path / "README.md").read_text() == "# my project\n"
    assert listing(tmp_path) == ["README.md"]


# -- 3. SIGTERM cleans up ------------------------------------------------------------------
def test_3_sigterm_while_writing_removes_the_temporary_file(tmp_path, monkeypatch):
    import robustclust.cli._run as run

    write_blobs(tmp_path)
    real = run.table_writer

    def killed_while_writing(frame, path):
        mode, write = real(frame, path)

        def write_then_die(fh):
            write(fh)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler interrupts this

        return mode, write_then_die

    monkeypatch.setattr("robustclust.cli._commands.table_writer", killed_while_writing)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "-o", "out.csv"], tmp_path)
    assert (status, out, err) == (143, "", "robustclust fit: error: terminated by SIGTERM\n")
    assert listing(tmp_path) == ["blobs.csv"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handler restored


@pytest.mark.parametrize("moment", ["creating", "publishing"])
def test_3_a_signal_at_the_creation_or_the_publication_leaves_nothing(tmp_path, monkeypatch,
                                                                      moment):
    # the signal arrives right after the temporary file is created (before its
    # descriptor is returned) or right after it is linked to its name: the names
    # are recorded first, so the cleanup finds everything (the signal's handler
    # runs in the main thread whatever thread the kernel delivered it to, so
    # blocking signals around these steps would not be enough)
    from robustclust import _files

    class Terminated(Exception):
        pass

    def raise_terminated(signum, frame):
        raise Terminated

    real_create, real_link = _files._create_exclusive, _files._link

    def create(name):
        fd = real_create(name)
        os.close(fd)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this

    def link(tmp, path):
        real_link(tmp, path)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)

    if moment == "creating":
        monkeypatch.setattr(_files, "_create_exclusive", create)
    else:
        monkeypatch.setattr(_files, "_link", link)
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        with pytest.raises(Terminated):
            with _files.atomic_write(tmp_path / "out.csv", "w", replace=False) as fh:
                fh.write("a,b\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    # nothing is left: not the temporary file, not the half-published name
    assert listing(tmp_path) == []


@pytest.mark.slow
def test_3_sigterm_to_the_console_script_during_the_write(tmp_path):
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(300000, 2)), columns=["x", "y"]).to_csv(
        tmp_path / "big.csv", index=False)
    proc = subprocess.Popen(COMMAND + ["fit", "big.csv", "-k", "2", "--lam", "3",
                                       "--n-init", "1", "-o", "out.csv"],
                            cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        if any(name.startswith(".out.csv.") for name in listing(tmp_path)):
            proc.send_signal(signal.SIGTERM)
            break
        time.sleep(0.002)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out, err) == (143, "",
                                           "robustclust fit: error: terminated by SIGTERM\n")
    assert listing(tmp_path) == ["big.csv"]


# -- 4. results invariant to the scale of the data (core) ---------------------------------
SCALE_MODELS = {
    "kmeans": (lambda: RobustKMeans(4, n_init=2, random_state=0), 1),
    "kmeans-count": (lambda: RobustKMeans(4, n_init=2, n_outliers=40, random_state=0), 1),
    "mixture": (lambda: RobustGaussianMixture(4, n_init=1, n_outliers=40, random_state=0), 0),
    "linear-kernel": (lambda: KernelRobustKMeans(4, kernel="linear", n_init=2, n_outliers=40,
                                                 random_state=0), 1),
    "linear-kernel-mixture": (lambda: KernelRobustGaussianMixture(
        4, kernel="linear", n_init=1, n_outliers=40, random_state=0), 0),
}


@QUIET_CORE
@pytest.mark.parametrize("scale", [
    1e150, 1e-150,
    pytest.param(1e300, marks=pytest.mark.slow),
    pytest.param(1e-300, marks=pytest.mark.slow),
])
@pytest.mark.parametrize("name", list(SCALE_MODELS))
def test_4_results_are_invariant_to_the_scale_of_the_data(name, scale):
    make, power = SCALE_MODELS[name]
    X = blobs()
    a, b = make().fit(X), make().fit(X * scale)
    np.testing.assert_array_equal(b.labels_, a.labels_)
    np.testing.assert_array_equal(b.outlier_mask_, a.outlier_mask_)
    # K-means' lambda is in the data's units (its penalty is lambda * ||o_n||); the
    # mixture's is scale-free (||o_n|| in the Sigma^-1 norm)
    np.testing.assert_allclose(b.lambda_, a.lambda_ * scale ** power, rtol=1e-6)
    np.testing.assert_allclose(b.outlier_norms_, a.outlier_norms_ * scale, rtol=1e-6)
    centres = getattr(b, "cluster_centers_", getattr(b, "means_", None))
    if centres is not None:
        expected = getattr(a, "cluster_centers_", getattr(a, "means_", None)) * scale
        np.testing.assert_allclose(centres, expected, rtol=1e-6)


@QUIET_CORE
@pytest.mark.parametrize("scale", [1e150, 1e-150])
def test_4_weighted_soft_labels_are_invariant_to_the_scale(scale):
    def make():
        return RobustKMeans(4, fuzzifier=1.5, penalty="log", n_init=2, n_outliers=40, random_state=0)

    X = blobs()
    np.testing.assert_array_equal(make().fit(X * scale).labels_, make().fit(X).labels_)


@QUIET_CORE
@pytest.mark.parametrize("value", [1e150, 1e160])
def test_4_one_huge_value_is_the_top_outlier(value):
    X = blobs().copy()
    X[0, 0] = value
    model = RobustKMeans(4, n_init=2, random_state=0).fit(X)
    assert np.isfinite(model.lambda_) and np.isfinite(model.objective_)
    assert model.labels_[0] == -1
    assert np.argmax(model.outlier_norms_) == 0


def _huge_value_file(where, value):
    frame = pd.DataFrame(blobs(), columns=["x", "y"])
    frame.loc[0, "x"] = value
    frame.to_csv(where / "huge.csv", index=False)


@pytest.mark.parametrize("value", [1e150, 1e160])
def test_4_a_huge_value_in_a_file_is_flagged_or_a_clear_error(tmp_path, value):
    _huge_value_file(tmp_path, value)
    status, out, err = invoke(["fit", "huge.csv", "-k", "4", "-o", "out.csv", "--json"],
                              tmp_path)
    if status == 0:  # the core copes: the row is flagged and lambda is a number
        summary = json.loads(out)
        assert summary["lambda"] == summary["lambda"] and summary["top_outliers"][0]["row"] == 1
        assert pd.read_csv(tmp_path / "out.csv")["is_outlier"][0]
    else:
        assert (status, out) == (1, "")
        assert err.startswith("robustclust fit: error: the fit of huge.csv failed numerically: ")
        assert f"to {value:.3g}, the largest in row 1, column x)" in err
        assert err.count("\n") == 1 and listing(tmp_path) == ["huge.csv"]


def test_4_a_huge_value_in_a_file_is_flagged(tmp_path):
    _huge_value_file(tmp_path, 1e160)
    status, out, err = invoke(["fit", "huge.csv", "-k", "4", "--json"], tmp_path)
    assert (status, err) == (0, "")
    assert json.loads(out)["top_outliers"][0]["row"] == 1


def test_4_tiny_data_gives_the_results_of_the_data_at_its_usual_scale(tmp_path):
    # not a silent lambda of 0: the core computes in internal units, so the
    # 1e-300 table flags the rows the unscaled table flags, with lambda 1e-300 times
    for name, factor in (("t.csv", 1e-300), ("u.csv", 1.0)):
        pd.DataFrame(blobs() * factor, columns=["x", "y"]).to_csv(tmp_path / name, index=False)
    runs = []
    for name in ("t.csv", "u.csv"):
        status, out, err = invoke(["fit", name, "-k", "4", "-s", "40", "--json",
                                   "-o", f"out-{name}"], tmp_path)
        assert (status, err) == (0, "")
        runs.append((json.loads(out), pd.read_csv(tmp_path / f"out-{name}")))
    (tiny, tiny_rows), (usual, usual_rows) = runs
    assert tiny["lambda"] == pytest.approx(usual["lambda"] * 1e-300, rel=1e-9)
    assert list(tiny_rows["is_outlier"]) == list(usual_rows["is_outlier"])
    assert tiny["n_outliers"] == usual["n_outliers"] == 40


# -- 5. ragged lines, unnamed index columns -----------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("x,y\n1,2,100\n3,4,5\n5,6,7\n",
     "line 2 of t.csv has 3 fields but the header line has 2"),
    ("x,y\n1,2\n3\n5,6\n", "line 3 of t.csv has 1 field but the header line has 2"),
    ('x,y\n"a\nb",1\n1,2,3\n', "line 4 of t.csv has 3 fields but the header line has 2"),
    ("x,y\r\n1,2\r\n\r\n3,4,\r\n", "line 4 of t.csv has 3 fields but the header line has 2"),
], ids=["extra field on every row", "short row", "after a quoted newline", "CRLF"])
def test_5_ragged_lines_are_refused_with_their_line_number(tmp_path, text, message):
    (tmp_path / "t.csv").write_text(text, newline="")
    status, out, err = invoke(["fit", "t.csv", "-k", "1", "-o", "out.csv"], tmp_path)
    assert (status, out) == (1, "")
    assert err == (f"robustclust fit: error: {message}: every line needs one field per column "
                   "(an empty field for a missing value)\n")
    assert listing(tmp_path) == ["t.csv"]


def test_5_an_unnamed_index_column_is_skipped_with_a_warning(tmp_path):
    frame = pd.DataFrame(blobs(), columns=["x", "y"])
    frame.to_csv(tmp_path / "indexed.csv")  # pandas writes the index, unnamed
    status, out, err = invoke(["fit", "indexed.csv", "-k", "4", "-s", "40", "-o", "out.csv"],
                              tmp_path)
    assert status == 0
    assert err == ("robustclust fit: warning: column 1 of indexed.csv has no name in the header "
                   "line (an index written by pandas?); it is not used: name it in the header "
                   "to use it\n")
    lines = out.splitlines()
    assert lines[1:4] == ["input: indexed.csv, 240 rows, 3 columns", "features: x, y",
                          "skipped columns: Unnamed: 0 (no name)"]
    expected = RobustKMeans(4, n_outliers=40, random_state=0).fit(frame)
    written = pd.read_csv(tmp_path / "out.csv")
    np.testing.assert_array_equal(written["cluster"], expected.labels_)
    # the index column is copied as it was, its empty name included
    source = (tmp_path / "indexed.csv").read_text().splitlines()
    result = (tmp_path / "out.csv").read_text().splitlines()
    assert result[0] == source[0] + ",cluster,is_outlier,outlier_score"
    assert all(r.startswith(s + ",") for s, r in zip(source[1:], result[1:]))


# -- 6. pass-through columns byte for byte; the summary names the features ----------------
ZIPS = ('zip,name,count,price,x,y\n'
        '00501,NA,5,1.50,0.1,0.2\n'
        '02134,"Smith, Ann",6,2.00,0.2,0.1\n'
        '10001,,7,3,5.1,5.0\n'
        '00210,null,8,4.25,5.0,5.2\n'
        '60601,"say ""hi""",9,1e3,0.0,0.1\n'
        '94105,x,10,0.5,5.2,5.1\n')


def test_6_columns_not_used_are_copied_byte_for_byte(tmp_path):
    (tmp_path / "zips.csv").write_text(ZIPS)
    status, out, err = invoke(["fit", "zips.csv", "-k", "2", "--columns", "x,y", "--lam", "5",
                               "-o", "out.csv"], tmp_path)
    assert (status, err) == (0, "")
    assert out.splitlines()[1:3] == ["input: zips.csv, 6 rows, 6 columns", "features: x, y"]
    expected = RobustKMeans(2, lam=5.0, random_state=0).fit(
        pd.read_csv(tmp_path / "zips.csv")[["x", "y"]])
    written = (tmp_path / "out.csv").read_text().splitlines()
    source = ZIPS.splitlines()
    assert written[0] == source[0] + ",cluster,is_outlier,outlier_score"
    for line, original, label in zip(written[1:], source[1:], expected.labels_):
        assert line == f"{original},{label},False,0.0"


def test_6_codes_with_leading_zeros_are_not_features_unless_named(tmp_path):
    (tmp_path / "zips.csv").write_text(ZIPS)
    status, out, err = invoke(["fit", "zips.csv", "-k", "2", "--lam", "5"], tmp_path)
    assert (status, err) == (0, "")
    assert out.splitlines()[1:4] == [
        "input: zips.csv, 6 rows, 6 columns", "features: count, price, x, y",
        "skipped columns: zip (a code? '00501' has a leading zero), name (not numeric)"]
    status, out, _ = invoke(["fit", "zips.csv", "-k", "2", "--lam", "5", "--columns",
                             "zip,x"], tmp_path)
    assert status == 0 and out.splitlines()[2] == "features: zip, x"


# -- 7. graphs: GML labels, edge lists with headers, spaces, quotes, tabs, commas ----------
def _nodes(path):
    return pd.read_csv(path, keep_default_na=False)["node"].tolist()


def test_7_gml_with_a_label_used_twice_is_refused(tmp_path):
    (tmp_path / "dup.gml").write_text(
        'graph [\n node [ id 0 label "a" ]\n node [ id 1 label "a" ]\n'
        ' node [ id 2 label "b" ]\n edge [ source 0 target 1 ]\n edge [ source 1 target 2 ]\n]\n')
    (tmp_path / "some.gml").write_text(
        'graph [\n node [ id 0 label "a" ]\n node [ id 1 ]\n node [ id 2 label "b" ]\n'
        ' edge [ source 0 target 1 ]\n edge [ source 1 target 2 ]\n]\n')
    status, out, err = invoke(["fit", "dup.gml", "-k", "1"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: cannot read dup.gml as GML: the node label 'a' names "
                   "more than one node; node labels must be unique (rename one, or remove every "
                   "label to name the nodes by their id)\n")
    status, out, err = invoke(["fit", "some.gml", "-k", "1"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: cannot read some.gml as GML: node 1 has no label but "
                   "2 others have one; give every node a label, or none (the nodes are then "
                   "named by their id)\n")


RING = ["a", "b", "c", "d", "e", "f"]


@pytest.mark.parametrize("text, names, warning", [
    ("source target\n" + "".join(f"{u} {v}\n" for u, v in zip(RING, RING[1:] + RING[:1])),
     RING, "line 1 of g.edges (source target) names the columns; it was read as a header, "
           "not as an edge"),
    ("Source,Target,Weight\n" + "".join(f"{u},{v},2\n" for u, v in zip(RING, RING[1:] + RING[:1])),
     RING, "line 1 of g.edges (Source Target Weight) names the columns; it was read as a "
           "header, not as an edge"),
    ('"Tom Smith" "Ann Lee"\n"Ann Lee" "Bo X" 2  # a comment\n"Bo X" "Tom Smith"\n',
     ["Tom Smith", "Ann Lee", "Bo X"], None),
    ("Tom Smith\tAnn Lee\nAnn Lee\tBo X\t2\nBo X\tTom Smith\n",
     ["Tom Smith", "Ann Lee", "Bo X"], None),
    ("Tom Smith, Ann Lee\nAnn Lee, Bo X\nBo X, Tom Smith\n",
     ["Tom Smith", "Ann Lee", "Bo X"], None),
], ids=["space header", "comma header", "quoted names", "tabs", "commas"])
def test_7_edge_lists_with_headers_and_names_with_spaces(tmp_path, text, names, warning):
    (tmp_path / "g.edges").write_text(text)
    status, out, err = invoke(["fit", "g.edges", "-k", "1", "-o", "nodes.csv", "--quiet"],
                              tmp_path)
    assert status == 0
    assert err == ("" if warning is None else f"robustclust fit: warning: {warning}\n")
    assert _nodes(tmp_path / "nodes.csv") == names


@pytest.mark.parametrize("line, message", [
    ("Tom Smith Ann Lee", "g.edges, line 1: expected 'node node' or 'node node weight', got 4 "
                          "fields; names with spaces must be quoted (\"Tom Smith\") or the "
                          "fields separated by tabs or commas"),
    ("Tom Smith Ann", "g.edges, line 1: the third field 'Ann' is not a weight; if the node "
                      "names have spaces, quote them (\"Tom Smith\") or separate the fields by "
                      "tabs or commas"),
    ('"Tom Smith Ann', "g.edges, line 1: no closing quotation"),
    ("a\tb\t-1", "g.edges, line 1: the edge weight '-1' is not a non-negative number"),
])
def test_7_edge_list_lines_that_cannot_be_read_say_what_to_do(tmp_path, line, message):
    (tmp_path / "g.edges").write_text(line + "\n")
    status, out, err = invoke(["fit", "g.edges", "-k", "1"], tmp_path)
    assert (status, out, err) == (1, "", f"robustclust fit: error: {message}\n")


# -- 8. tampered model files are refused on load, before anything is written -------------
def _tamper(src, dst, edit=None, arrays_edit=None):
    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays["__robustclust_model__"].item())
    if edit:
        edit(meta["estimator"])
    if arrays_edit:
        arrays_edit(arrays)
    arrays["__robustclust_model__"] = np.array(json.dumps(meta))
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)


def _nan_centre(arrays):
    arrays["cluster_centers_"] = arrays["cluster_centers_"].copy()
    arrays["cluster_centers_"][0, 0] = np.nan


@pytest.mark.parametrize("edit, arrays_edit, message", [
    (lambda e: e["attributes"].update(lambda_=float("nan")), None,
     "is corrupted: RobustKMeans.lambda_ = nan is not a number (NaN)"),
    (lambda e: e["attributes"].update(lambda_=-1.0), None,
     "is corrupted: RobustKMeans.lambda_ = -1.0 is negative"),
    (None, _nan_centre,
     "is corrupted: RobustKMeans.cluster_centers_ holds values that are not a number (NaN)"),
    (lambda e: e["params"].update(n_clusters="abc"), None,
     "holds an invalid RobustKMeans parameter: the 'n_clusters' parameter of RobustKMeans "
     "must be an int in the range [1, inf). Got 'abc' instead."),
    (lambda e: e["params"].update(n_clusters=5), None,
     "is corrupted: RobustKMeans.cluster_centers_ has shape (4, 2), expected (5, 2)"),
    (lambda e: e["attributes"].update(n_outliers_=2.5), None,
     "is corrupted: RobustKMeans.n_outliers_ = 2.5 is not a whole number"),
], ids=["lambda NaN", "lambda < 0", "NaN centre", "n_clusters abc", "n_clusters 5",
        "fractional count"])
def test_8_tampered_model_files_are_refused_before_anything_is_written(
        tmp_path, edit, arrays_edit, message):
    write_blobs(tmp_path)
    save_model(RobustKMeans(4, n_init=1, random_state=0).fit(
        pd.read_csv(tmp_path / "blobs.csv")), tmp_path / "good.npz")
    _tamper(tmp_path / "good.npz", tmp_path / "bad.npz", edit, arrays_edit)
    status, out, err = invoke(["predict", "-m", "bad.npz", "blobs.csv", "-o", "out.csv"],
                              tmp_path)
    assert (status, out, err) == (1, "", f"robustclust predict: error: bad.npz {message}\n")
    assert listing(tmp_path) == ["bad.npz", "blobs.csv", "good.npz"]


def test_8_an_infinite_lambda_is_a_valid_model(tmp_path):
    write_blobs(tmp_path)
    save_model(RobustKMeans(4, lam=np.inf, n_init=1, random_state=0).fit(
        pd.read_csv(tmp_path / "blobs.csv")), tmp_path / "plain.npz")
    status, _, err = invoke(["predict", "-m", "plain.npz", "blobs.csv", "--quiet"], tmp_path)
    assert (status, err) == (0, "")


# -- 9. the lambda path where the count changes -------------------------------------------
@pytest.fixture
def karate(tmp_path):
    nx.write_edgelist(nx.karate_club_graph(), tmp_path / "karate.edges", data=False)
    return tmp_path


@pytest.mark.slow
def test_9_graph_path_shows_where_the_count_changes(karate):
    status, out, err = invoke(["path", "karate.edges", "-k", "2", "--n-lambdas", "10",
                               "--json"], karate)
    assert (status, err) == (0, "")
    summary = json.loads(out)
    lams, counts = np.array(summary["lambdas"]), np.array(summary["n_outliers"])
    assert counts[0] == 0 and counts.max() == 34 and summary["lambda_max_flags"] == 0
    assert np.all(np.diff(lams) < 0)
    # the geometric grid is kept, values are added inside it
    geometric = np.geomspace(summary["lambda_max"], summary["lambda_max"] / 1000, 10)
    assert np.all(np.isin(np.round(geometric, 12), np.round(lams, 12)))
    assert len(lams) > 20
    # between two values more than 1e-4 apart, the count moves by at most 34 / 10
    apart = lams[:-1] - lams[1:] > 1e-4 * lams[:-1]
    assert np.abs(np.diff(counts))[apart].max() <= 4
    # intermediate counts are shown (the geometric grid alone gives 0 then 34)
    assert len(set(counts.tolist()) & set(range(5, 30))) >= 5
    K = normalized_adjacency_kernel(nx.read_edgelist(karate / "karate.edges"))
    expected = regularization_path(KernelRobustKMeans(2, kernel="precomputed", init="spectral",
                                                      random_state=0), K, lambdas=lams)
    np.testing.assert_array_equal(counts, expected.n_outliers)


def test_9_lam_min_and_lam_max_set_the_grid(karate):
    status, out, err = invoke(["path", "karate.edges", "-k", "2", "--n-lambdas", "5",
                               "--lam-min", "1.5", "--lam-max", "1.7", "--no-refine",
                               "--table"], karate)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[2] == "lambda: 5 values from 1.7 down to 1.5; " + lines[2].split("; ")[-1]
    shown = [float(line.split()[0]) for line in lines[5:10]]
    np.testing.assert_allclose(shown, np.geomspace(1.7, 1.5, 5), rtol=1e-3)
    status, _, err = invoke(["path", "karate.edges", "-k", "2", "--lam-min", "2",
                             "--lam-max", "1"], karate)
    assert (status, err) == (2, "robustclust path: error: --lam-min 2 must be smaller than "
                                "--lam-max 1\n")


@pytest.mark.slow
def test_9_mixture_path_says_what_lambda_max_flags(tmp_path):
    write_blobs(tmp_path, n_outliers=80)
    status, out, err = invoke(["path", "blobs.csv", "-k", "4", "--method", "gmm",
                               "--n-lambdas", "6", "--json"], tmp_path)
    assert (status, err) == (0, "")
    summary = json.loads(out)
    assert summary["n_outliers"][0] == 0  # the table starts where nothing is flagged
    assert summary["lambda_max_flags"] == 1 and summary["lambdas"][1] == summary["lambda_max"]
    status, out, _ = invoke(["path", "blobs.csv", "-k", "4", "--method", "gmm",
                             "--n-lambdas", "6"], tmp_path)
    assert out.splitlines()[3].startswith(
        f"lambda_max: {summary['lambda_max']:.4g} flags 1 row, so the grid starts higher, at "
        f"{summary['lambdas'][0]:.4g}, which flags none; ")
    assert "nothing is flagged above it" not in out


# -- 10. one message per failure ---------------------------------------------------------
def _compressed(where, name, opener):
    data = (where / "blobs.csv").read_bytes()
    with opener(where / name, "wb") as fh:
        fh.write(data)
    full = (where / name).read_bytes()
    (where / name).write_bytes(full[: len(full) // 2])


@pytest.mark.parametrize("name, opener, what", [
    ("t.csv.gz", gzip.open, "gzip"), ("t.csv.bz2", bz2.open, "bzip2"),
    ("t.csv.xz", lzma.open, "xz"),
])
def test_10_truncated_compressed_files(tmp_path, name, opener, what):
    write_blobs(tmp_path)
    _compressed(tmp_path, name, opener)
    status, out, err = invoke(["fit", name, "-k", "4"], tmp_path)
    assert (status, out) == (1, "")
    assert err == (f"robustclust fit: error: {name} is truncated: the {what} data end before "
                   "the end of the archive\n")


def test_10_zip_with_two_files_and_damaged_archives(tmp_path):
    path = write_blobs(tmp_path)
    with zipfile.ZipFile(tmp_path / "two.csv.zip", "w") as archive:
        archive.write(path, "a.csv")
        archive.write(path, "b.csv")
    with zipfile.ZipFile(tmp_path / "one.csv.zip", "w") as archive:
        archive.write(path, "a.csv")
    (tmp_path / "bad.csv.gz").write_bytes(b"x,y\n1,2\n")
    (tmp_path / "bad.csv.zip").write_bytes(b"x,y\n1,2\n")
    cases = {
        "two.csv.zip": "two.csv.zip holds 2 files (a.csv, b.csv); a zipped table must hold "
                       "exactly one file: extract the one to read and give its name",
        "bad.csv.gz": "bad.csv.gz is not valid gzip data (Not a gzipped file (b'x,'))",
        "bad.csv.zip": "bad.csv.zip is not a valid zip archive (File is not a zip file)",
    }
    for name, message in cases.items():
        assert invoke(["fit", name, "-k", "4"], tmp_path) == (
            1, "", f"robustclust fit: error: {message}\n")
    status, out, _ = invoke(["fit", "one.csv.zip", "-k", "4", "-s", "40", "--json"], tmp_path)
    assert status == 0 and json.loads(out)["n_outliers"] == 40


@pytest.mark.parametrize("where, code, reason", [
    ("_create_exclusive", errno.EROFS, "Read-only file system"),
    ("fsync", errno.ENOSPC, "No space left on device"),
    ("link", errno.EIO, "Input/output error"),
])
def test_10_read_only_and_full_disks(tmp_path, monkeypatch, where, code, reason):
    import robustclust._files as files

    write_blobs(tmp_path)

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    target = files if where == "_create_exclusive" else files.os
    monkeypatch.setattr(target, where, refuse)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "-o", "out.csv"], tmp_path)
    assert (status, out) == (1, "")
    assert err == (f"robustclust fit: error: cannot write out.csv: {reason}; nothing was "
                   "written\n")
    assert listing(tmp_path) == ["blobs.csv"]


def test_10_out_of_memory_is_one_line_with_the_nystroem_hint(tmp_path, monkeypatch):
    write_blobs(tmp_path)

    def allocate(self, X, y=None):
        raise MemoryError("Unable to allocate 29.1 TiB for an array with shape "
                          "(2000000, 2000000) and data type float64")

    monkeypatch.setattr(KernelRobustKMeans, "fit", allocate)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: out of memory (Unable to allocate 29.1 TiB for an "
                   "array with shape (2000000, 2000000) and data type float64); with --kernel, "
                   "--approximation nystroem (--n-landmarks M) needs far less\n")


def test_10_the_kernel_memory_is_estimated_before_the_allocation(tmp_path, monkeypatch):
    write_blobs(tmp_path)
    monkeypatch.setattr("robustclust.cli._run.available_memory", lambda: 1_000_000)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf",
                               "--approximation", "exact"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: the exact rbf kernel of 240 rows needs about "
                   "1.38 MB but 1 MB of memory are available: use --approximation nystroem "
                   "(--n-landmarks M)\n")


def test_10_an_eof_error_is_not_reported_as_an_interruption(tmp_path, monkeypatch):
    write_blobs(tmp_path)

    def truncated(*args, **kwargs):
        raise EOFError("Ran out of input")

    monkeypatch.setattr("robustclust.cli._commands.read_input", truncated)
    monkeypatch.delenv("ROBUSTCLUST_DEBUG", raising=False)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: internal error (RuntimeError: unexpected end of "
                   "data (Ran out of input)); please report it (ROBUSTCLUST_DEBUG=1 shows the "
                   "traceback)\n")


# -- 11. one rule for counts and fractions -------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    ("80.0", 80), ("1e2", 100), ("50%", 120), ("0.5", 120), ("236", 236), ("98.3%", 236),
    ("0", 0), ("0.0", 0),
])
def test_11_counts_and_fractions_follow_one_rule(tmp_path, value, expected):
    write_blobs(tmp_path)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "-s", value, "--n-init", "1",
                               "--json"], tmp_path)
    assert status == 0, err
    assert json.loads(out)["lambda_rule"].startswith(
        f"chosen to flag {expected} outlier{'' if expected == 1 else 's'}")


@pytest.mark.parametrize("value, shown", [
    ("237", "-s/--outliers 237"), ("1e3", "-s/--outliers 1e3"),
    ("0.99", "-s/--outliers 0.99 (238 rows)"), ("99%", "-s/--outliers 99% (238 rows)"),
])
def test_11_too_many_outliers_is_the_same_error_for_counts_and_fractions(tmp_path, value,
                                                                         shown):
    write_blobs(tmp_path)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "-s", value], tmp_path)
    assert (status, out) == (1, "")
    assert err == (f"robustclust fit: error: {shown} is too many for 240 rows of blobs.csv: 4 "
                   "clusters need at least one row each, so at most 236 can be flagged\n")


# -- 12. messages that name the real problem -------------------------------------------------
def test_12_standardizing_huge_values_names_the_overflow(tmp_path):
    pd.DataFrame(blobs() * 1e300, columns=["x", "y"]).to_csv(tmp_path / "h.csv", index=False)
    status, out, err = invoke(["fit", "h.csv", "-k", "4", "--standardize"], tmp_path)
    assert (status, out) == (1, "")
    assert err == ("robustclust fit: error: cannot --standardize h.csv: the variance of columns "
                   "x, y overflows (values up to 5.47e+300); divide them by a power of ten "
                   "first\n")
    assert "NaN" not in err


def test_12_trailing_empty_spreadsheet_columns_are_skipped(tmp_path):
    frame = pd.DataFrame(blobs(), columns=["x", "y"])
    text = "x,y,,\n" + "".join(f"{x!r},{y!r},,\n" for x, y in frame.to_numpy().tolist())
    (tmp_path / "sheet.csv").write_text(text)
    status, out, err = invoke(["fit", "sheet.csv", "-k", "4", "-s", "40"], tmp_path)
    assert (status, err) == (0, "")
    assert out.splitlines()[1:4] == ["input: sheet.csv, 240 rows, 4 columns", "features: x, y",
                                     "skipped columns: Unnamed: 2 (empty), Unnamed: 3 (empty)"]


def test_12_a_named_empty_column_suggests_columns_not_drop_missing(tmp_path):
    frame = pd.DataFrame(blobs(), columns=["x", "y"])
    frame["z"] = np.nan
    frame.to_csv(tmp_path / "z.csv", index=False)
    for extra in ([], ["--drop-missing"]):
        status, out, err = invoke(["fit", "z.csv", "-k", "4", "--columns", "x,y,z", *extra],
                                  tmp_path)
        assert (status, out) == (1, "")
        assert err == ("robustclust fit: error: every row of z.csv has missing values in the "
                       "column z: leave it out with --columns x,y\n")


# -- 13. plurals and long column lists ---------------------------------------------------------
def test_13_singular_words(tmp_path):
    (tmp_path / "one.csv").write_text("x,y\n0,0\n")
    status, out, err = invoke(["fit", "one.csv", "-k", "1", "-s", "0"], tmp_path)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "fit: hard robust K-means, 1 cluster"
    assert lines[1] == "input: one.csv, 1 row, 2 columns"
    write_blobs(tmp_path)
    status, out, _ = invoke(["fit", "blobs.csv", "-k", "4", "-s", "1", "--columns", "x"],
                            tmp_path)
    lines = out.splitlines()
    assert lines[1] == "input: blobs.csv, 240 rows, 2 columns"
    assert lines[3].endswith("(chosen to flag 1 outlier)")
    assert lines[4].startswith("result: 1 outlier, ")
    (tmp_path / "two.csv").write_text("x,y\n0,0\n")
    assert invoke(["fit", "two.csv", "-k", "2"], tmp_path) == (
        1, "", "robustclust fit: error: 1 row of two.csv for 2 clusters: need at least one row "
               "per cluster\n")


def test_13_wide_tables_are_summarised(tmp_path):
    rng = np.random.default_rng(0)
    names = [f"column_{j}" for j in range(64)]
    frame = pd.DataFrame(rng.normal(size=(30, 64)), columns=names)
    frame["label"] = [f"r{i}" for i in range(30)]
    frame.to_csv(tmp_path / "wide.csv", index=False)
    status, out, err = invoke(["fit", "wide.csv", "-k", "2", "--lam", "100"], tmp_path)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[2] == ("features: column_0, column_1, column_2, column_3, column_4, ..., "
                        "column_62, column_63 (64 in all)")
    assert max(len(line) for line in lines) <= 100
    status, out, _ = invoke(["fit", "wide.csv", "-k", "2", "--lam", "100", "--json"], tmp_path)
    assert json.loads(out)["columns"] == names  # the JSON keeps every name


# -- 14. absurd counts, and the array the estimator gets -------------------------------------
def test_14_absurd_counts_are_refused(tmp_path):
    write_blobs(tmp_path)
    assert invoke(["fit", "blobs.csv", "-k", "4", "--n-init", "1000000000"], tmp_path) == (
        2, "", "robustclust fit: error: Invalid value for '--n-init': 1000000000 is not in the "
               "range 1<=x<=10000.\n")
    assert invoke(["path", "blobs.csv", "-k", "4", "--n-lambdas", "100000"], tmp_path)[0] == 2


def test_14_the_estimator_gets_what_pandas_gives_a_library_user(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(50, 20)), columns=[f"c{j}" for j in range(20)])
    frame["name"] = "n"
    frame.to_csv(tmp_path / "t.csv", index=False)
    seen = []
    real = RobustKMeans.fit

    def spy(self, X, y=None, sample_weight=None):
        # the values as the fit receives them (it centres the reader's own
        # block in place and adds the offset back)
        seen.append((self, np.array(X, copy=True), X, self.copy_x))
        return real(self, X)

    monkeypatch.setattr(RobustKMeans, "fit", spy)
    assert invoke(["fit", "t.csv", "-k", "2", "--quiet"], tmp_path)[0] == 0
    ((est, ours, given, copy_x),) = seen
    api = pd.read_csv(tmp_path / "t.csv")[[f"c{j}" for j in range(20)]]
    theirs = api.to_numpy()
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == np.float64
    # the estimators' own layout (issue 44: their input check copied pandas'
    # column-major block, one copy of the values more at a fit's peak), and
    # no copy of it at all: the reader's block is centred in place
    # (copy_x=False), and the estimator knows the columns by name all the same
    assert isinstance(given, np.ndarray) and given.flags["C_CONTIGUOUS"]
    assert copy_x is False
    assert list(est.feature_names_in_) == list(api.columns)
    np.testing.assert_allclose(given, theirs, rtol=0, atol=4 * np.finfo(float).eps
                               * np.abs(theirs).max())
    # the fit is a library user's, bit for bit
    X = pd.DataFrame(ours, columns=api.columns)
    mine, user = real(RobustKMeans(2, random_state=0), X), real(RobustKMeans(2, random_state=0),
                                                                api)
    np.testing.assert_array_equal(mine.labels_, user.labels_)
    np.testing.assert_array_equal(mine.outlier_norms_, user.outlier_norms_)
    np.testing.assert_array_equal(mine.cluster_centers_, user.cluster_centers_)
    # --standardize: pandas' layout, so that the scaler's sums are the library's
    seen.clear()
    monkeypatch.setattr("sklearn.pipeline.Pipeline.fit",
                        lambda self, X, y=None, **kw: seen.append(X) or self)
    invoke(["fit", "t.csv", "-k", "2", "--quiet", "--standardize"], tmp_path)
    (X,) = seen
    assert X.to_numpy().flags["F_CONTIGUOUS"] == theirs.flags["F_CONTIGUOUS"]


# -- 15. Nystroem from the command line ---------------------------------------------------
def test_15_approximation_nystroem_with_landmarks(tmp_path):
    write_blobs(tmp_path)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf",
                               "--approximation", "nystroem", "--n-landmarks", "30", "-s", "40",
                               "-o", "out.csv", "--json"], tmp_path)
    assert (status, err) == (0, "")
    model = KernelRobustKMeans(4, kernel="rbf", n_landmarks=30,
                               n_outliers=40, random_state=0).fit(
        pd.read_csv(tmp_path / "blobs.csv"))
    summary = json.loads(out)
    assert summary["method"] == (f"hard kernel robust K-means (rbf kernel, "
                                 f"gamma={model.gamma_:.4g}, Nystroem, 30 landmarks)")
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "out.csv")["cluster"],
                                  model.labels_)
    assert invoke(["fit", "blobs.csv", "-k", "4", "--approximation", "nystroem"],
                  tmp_path) == (2, "", "robustclust fit: error: --approximation applies to "
                                       "--kernel only\n")
    assert invoke(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf", "--approximation",
                   "nystroem", "--save-model", "m.npz"], tmp_path) == (
        2, "", "robustclust fit: error: --save-model does not apply to --approximation "
               "nystroem: such models cannot be saved\n")


def test_15_nystroem_is_chosen_when_the_kernel_would_not_fit(tmp_path, monkeypatch):
    write_blobs(tmp_path)
    monkeypatch.setattr("robustclust.cli._run.available_memory", lambda: 2_000_000)
    status, out, err = invoke(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf", "-s", "40"],
                              tmp_path)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("fit: hard kernel robust K-means (rbf kernel, gamma=")
    assert lines[0].endswith(", Nystroem, 100 landmarks), 4 clusters")
    assert lines[3] == ("note: the exact rbf kernel of 240 rows needs about 1.38 MB, more than "
                        "half the 2 MB of memory available: using the Nystroem approximation "
                        "with 100 landmarks (--approximation exact insists on the exact kernel)")
    monkeypatch.setattr("robustclust.cli._run.available_memory", lambda: 10_000_000)
    status, out, _ = invoke(["fit", "blobs.csv", "-k", "4", "--kernel", "rbf", "-s", "40"],
                            tmp_path)
    assert status == 0 and "Nystroem" not in out and "note:" not in out


# -- 16. graphs without nodes; kernel estimators (core) ------------------------------------
def test_16_the_graph_kernel_of_an_empty_graph_is_a_clear_error():
    for empty in (nx.Graph(), np.zeros((0, 0))):
        with pytest.raises(ValueError, match=r"^The graph has no nodes: the normalized "
                                             r"adjacency kernel needs at least one node"):
            normalized_adjacency_kernel(empty)


def test_16_kernel_estimators_take_sparse_input():
    import scipy.sparse as sp

    X = blobs()
    dense = KernelRobustKMeans(4, kernel="rbf", n_outliers=40, random_state=0).fit(X)
    sparse = KernelRobustKMeans(4, kernel="rbf", n_outliers=40, random_state=0).fit(
        sp.csr_matrix(X))
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)


def test_16_a_callable_kernel_of_the_wrong_shape_is_named():
    def wrong(A, B):
        return np.ones((3, 3))

    with pytest.raises(ValueError, match=r"kernel.*shape \(3, 3\).*\(240, 240\)"):
        KernelRobustKMeans(4, kernel=wrong, random_state=0).fit(blobs())


# -- 17. the newcomer's path --------------------------------------------------------------------
def test_17_the_offline_loader_error_is_one_exception(tmp_path, monkeypatch):
    import urllib.error

    from robustclust.datasets import load_dolphins

    def offline(request, *args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr("urllib.request.urlopen", offline)
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv("ROBUSTCLUST_DATA", raising=False)
    with pytest.raises(FileNotFoundError) as info:
        load_dolphins(tmp_path / "empty")
    exc = info.value
    assert exc.__cause__ is None and exc.__suppress_context__
    text = "".join(traceback.format_exception(exc))
    assert text.count("Traceback") == 1 and "During handling" not in text
    assert ("and the download failed ([Errno -3] Temporary failure in name resolution); "
            "offline?") in str(exc)


def test_17_the_readme_says_to_activate_the_environment():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    before = section.split("```console", 1)[0]
    assert "source .venv/bin/activate" in before and "`.venv/bin`" in before
    assert "source .venv/bin/activate" in readme.split("\n## Example\n", 1)[0]


# -- 18. figures -------------------------------------------------------------------------------
def _ten_clusters():
    rng = np.random.default_rng(1)
    centres = [(3.0 * (i % 5), 4.0 * (i // 5)) for i in range(10)]
    X = np.vstack([rng.normal(c, 0.5, size=(40, 2)) for c in centres]
                  + [rng.uniform(-3, 15, size=(30, 2))])
    # unrefined: the group O-step's shrunk scores include small ones (the minimum radius)
    return X, RobustKMeans(10, n_outliers=30, random_state=0, refine=False).fit(X)


def _overlaps(artist, ax):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    return artist.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


def test_18_fit_figure_legend_colours_circles(tmp_path):
    from matplotlib.colors import to_rgb

    from robustclust.cli._figures import MIN_CIRCLE_RADIUS, cluster_figure

    X, model = _ten_clusters()
    labels, scores = model.labels_, model.outlier_norms_
    fig = cluster_figure(X, labels, scores, axis_names=("a", "b"))
    ax = fig.axes[0]
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    present = np.unique(labels[labels >= 0])
    assert texts == [f"cluster {c} ({(labels == c).sum()})" for c in present] + [
        "outliers (30), radius \N{PROPORTIONAL TO} score"]
    assert not _overlaps(fig.legends[0], ax)  # the legend covers no point
    reds = np.array([to_rgb("crimson"), to_rgb("tab:red")])
    for c in present:
        colour = ax.collections[list(present).index(c)].get_facecolors()[0][:3]
        assert np.min(np.linalg.norm(reds - colour, axis=1)) > 0.3
    circles = next(c for c in ax.collections if c.get_gid() == "outlier-circles")
    radii = np.sqrt(circles.get_sizes())
    assert radii.min() == MIN_CIRCLE_RADIUS and (scores[labels < 0] < scores.max() / 10).any()


def test_18_plot_clusters_legend_covers_no_point_and_circles_have_a_minimum():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from robustclust.plotting import MIN_CIRCLE_SHARE, plot_clusters

    X, model = _ten_clusters()
    ax = Figure(figsize=(6, 5)).subplots()
    plot_clusters(X, model, ax=ax)
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    present = np.unique(model.labels_[model.labels_ >= 0])
    assert texts == [f"cluster {c}" for c in present] + ["outliers", "centres"]
    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    box = legend.get_window_extent(canvas.get_renderer())
    for x, y in ax.transData.transform(X):
        assert not box.contains(x, y)
    for patch in ax.patches:
        assert not patch.get_window_extent(canvas.get_renderer()).overlaps(box)
    radii = [p.get_radius() for p in ax.patches if p.get_gid() == "outlier-circle"]
    assert min(radii) == pytest.approx(MIN_CIRCLE_SHARE * max(radii))
    # a centre and its cluster's points share the colour, whichever clusters are empty
    centres = next(c for c in ax.collections if c.get_gid() == "centers").get_facecolors()
    points = next(c for c in ax.collections if c.get_gid() == "inliers").get_facecolors()
    inside = model.labels_[model.labels_ >= 0]
    for c in present:
        np.testing.assert_allclose(points[inside == c][0], centres[c])


def test_18_path_figure_greys_all_but_the_first_rows_flagged(karate):
    from robustclust.cli._figures import PATH_HIGHLIGHTS, path_figure

    X = blobs(n_outliers=80)
    path = regularization_path(RobustKMeans(4, random_state=0), X, n_lambdas=20)
    fig = path_figure(path, title="t", labels=list(range(1, len(X) + 1)))
    curves, counts = fig.axes
    assert curves.get_xscale() == counts.get_xscale() == "log"
    grey = next(c for c in curves.collections if c.get_gid() == "inliers")
    colored = next(c for c in curves.collections if c.get_gid() == "outliers")
    assert len(colored.get_segments()) == PATH_HIGHLIGHTS
    assert len(grey.get_segments()) == len(X) - PATH_HIGHLIGHTS
    first = np.argmax(path.outlier_norms > 0, axis=0)
    first[~(path.outlier_norms > 0).any(axis=0)] = len(path.lambdas)
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    flagged_first = [int(name.split()[1]) - 1 for name in names]
    assert max(first[flagged_first]) <= np.sort(first)[PATH_HIGHLIGHTS - 1]
    # a graph's path: zoomed to where the count changes
    K = normalized_adjacency_kernel(nx.karate_club_graph())
    path = regularization_path(KernelRobustKMeans(2, kernel="precomputed", init="spectral",
                                                  random_state=0), K, n_lambdas=30)
    low, high = path_figure(path, noun="node").axes[1].get_xlim()
    assert low > path.lambdas[-1] * 100 and high < path.lambdas[0] * 1.2
