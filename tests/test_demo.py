"""Tests of the Table I demo (robustclust._reproduce.demo) and the command line."""

import io
import subprocess
import sys
import warnings

import pytest

import robustclust._reproduce.demo as demo
from robustclust import OutlierCountWarning
from robustclust.__main__ import main

N_RUNS = 5
LEVELS = (40, 80)
PLAIN = ("hard K-means", "soft K-means")
ROBUST = ("hard RKM", "hard WRKM", "soft RKM", "soft WRKM")


@pytest.fixture(scope="module")
def demo_run():
    """One short demo (5 initialisations, data seed 0): (results, printed text)."""
    out = io.StringIO()
    results = demo.run_demo(n_runs=N_RUNS, data_seed=0, stream=out)
    return results, out.getvalue()


def _table_rows(text):
    """The printed table rows, keyed by method name."""
    rows = {}
    for line in text.splitlines():
        for name in demo.METHODS:
            if line.startswith(name + " "):
                rows[name] = line[len(name):].split()
    return rows


def test_results_cover_every_method_and_level(demo_run):
    results, _ = demo_run
    assert list(results) == list(demo.METHODS)
    for name in results:
        assert set(results[name]) == set(LEVELS)
        for n_outliers in LEVELS:
            rmse, found = results[name][n_outliers]
            assert 0.0 < rmse < 5.0
            assert 0.0 <= found <= n_outliers


def test_table_prints_every_row_with_our_and_the_papers_numbers(demo_run):
    results, text = demo_run
    rows = _table_rows(text)
    assert set(rows) == set(demo.METHODS)
    for name, cells in rows.items():
        # ours 40, paper 40, ours 80, paper 80, found 40, found 80
        assert len(cells) == 6
        assert float(cells[0]) == pytest.approx(results[name][40][0], abs=5e-5)
        assert float(cells[2]) == pytest.approx(results[name][80][0], abs=5e-5)
        assert float(cells[1]) == demo.PAPER_TABLE_I[name][40]
        assert float(cells[3]) == demo.PAPER_TABLE_I[name][80]
        for cell, n_outliers in zip(cells[4:], LEVELS):
            found, true = cell.split("/")
            assert int(true) == n_outliers
            assert float(found) == pytest.approx(results[name][n_outliers][1], abs=0.05)
    for name in PLAIN:
        assert rows[name][4:] == ["0/40", "0/80"]
    assert "5 random initialisations" in text
    assert "Hungarian" in text and "per centre" in text


def test_plain_kmeans_flags_nothing_and_robust_methods_find_the_outliers(demo_run):
    results, _ = demo_run
    for n_outliers in LEVELS:
        for name in PLAIN:
            assert results[name][n_outliers][1] == 0.0
        for name in ROBUST:
            # Told the true count, the robust methods flag mostly true outliers.
            assert results[name][n_outliers][1] >= 0.8 * n_outliers


@pytest.mark.parametrize("n_outliers", LEVELS)
def test_robust_methods_beat_plain_kmeans(demo_run, n_outliers):
    rmse = {name: demo_run[0][name][n_outliers][0] for name in demo.METHODS}
    # Each robust method beats its plain counterpart...
    assert rmse["hard RKM"] < rmse["hard K-means"]
    assert rmse["hard WRKM"] < rmse["hard K-means"]
    assert rmse["soft RKM"] < rmse["soft K-means"]
    assert rmse["soft WRKM"] < rmse["soft K-means"]
    # ... the weighting improves on the unweighted fit (by a wide margin on
    # this data: the group penalty leaves every flagged point pulling its
    # centre by lambda / 2), and soft WRKM beats both plain K-means.
    assert rmse["hard WRKM"] < rmse["hard RKM"]
    assert rmse["soft WRKM"] < rmse["soft RKM"]
    assert rmse["soft WRKM"] < 0.5 * min(rmse["hard K-means"], rmse["soft K-means"])
    # the robust mixture beats the plain one (EM), and weighting helps again
    assert rmse["RPC"] < rmse["EM"]
    assert rmse["WRPC"] < rmse["RPC"]


def test_fit_warnings_are_suppressed_and_counted(monkeypatch):
    class Noisy(demo.RobustKMeans):
        def fit(self, X, y=None, sample_weight=None):
            if self.n_outliers == 80 and self.penalty == "group" and self.fuzzifier == 1.0:
                warnings.warn("count missed", OutlierCountWarning, stacklevel=2)
            return super().fit(X, y, sample_weight)

    monkeypatch.setattr(demo, "METHODS", {
        "hard K-means": (demo.RobustKMeans, {"lam": float("inf")}, False),
        "hard RKM": (Noisy, {"fuzzifier": 1.0}, True),
    })
    out = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning escaping the demo fails
        demo.run_demo(n_runs=2, stream=out)
    assert "2 warnings from individual fits suppressed" in out.getvalue()
    assert "OutlierCountWarning x2 (hard RKM, 80/280)" in out.getvalue()


@pytest.mark.parametrize("n_runs", [0, -1, 2.5, True])
def test_run_demo_rejects_bad_n_runs(n_runs):
    with pytest.raises(ValueError, match="n_runs"):
        demo.run_demo(n_runs=n_runs, stream=io.StringIO())


def test_main_without_command_prints_usage(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("Usage: robustclust")


def test_main_rejects_bad_runs(capsys):
    assert main(["demo", "--runs", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--runs" in err


def _run_module(*args):
    return subprocess.run([sys.executable, "-m", "robustclust", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_demo_prints_the_table():
    proc = _run_module("demo", "--runs", "2")
    assert proc.returncode == 0, proc.stderr
    assert set(_table_rows(proc.stdout)) == set(demo.METHODS)
    assert "2 random initialisations" in proc.stdout


def test_cli_unknown_command_is_one_line_and_exit_2():
    proc = _run_module("bogus")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert "bogus" in lines[0]
