"""The paper reproduction (``robustclust reproduce``): the quick subset's headline
claims, the report it writes, and the report helpers.

The quick subset runs once per session (about a minute); the graph experiments
need the reference copies in ``../shared/data`` and are skipped without them.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robustclust import cli as _cli
from robustclust._reproduce import EXPERIMENTS, MANIFEST, QUICK_EXPERIMENTS, run_reproduction
from robustclust._reproduce._report import (
    Section,
    comparison_table,
    markdown_table,
    save_figure,
    write_report,
)
from robustclust._reproduce.football import PAPER_OUTLIERS
from robustclust._reproduce._graphs import simple_name

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
shared = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"reference data copies not found in {SHARED} (the project's shared/data "
           "folder); the network experiments need them",
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    data_home = SHARED if SHARED.is_dir() else out / "no-data"
    # the log goes beside the report folder: reproduce refuses a folder holding
    # files it did not write
    sections = run_reproduction(out, quick=True, data_home=data_home,
                                stream=open(out.parent / f"{out.name}-log.txt", "w"))
    return out, {s.key: s for s in sections}


# -- the quick subset: the paper's headline claims ------------------------------------
def test_quick_runs_the_quick_subset_and_meets_every_headline_claim(quick):
    out, sections = quick
    assert list(sections) == list(QUICK_EXPERIMENTS)
    for section in sections.values():
        if section.skipped:
            continue
        failed = [claim for claim, ok in section.checks.items() if not ok]
        assert not failed, f"{section.key}: {failed}"


def test_table1_robust_methods_beat_kmeans_and_flag_exactly_s(quick):
    rows = quick[1]["table1"].values["rows"]
    for level in ("40", "80"):
        kmeans = rows["hard K-means"][level]
        assert kmeans["flagged"] == 0
        for name in ("hard RKM", "hard WRKM", "soft RKM", "soft WRKM", "RPC", "WRPC"):
            row = rows[name][level]
            assert row["rmse"] < kmeans["rmse"], name
            assert row["flagged_min"] == row["flagged_max"] == int(level), name
            # exactly s flagged: precision and recall are the same fraction
            assert row["precision"] == pytest.approx(row["recall"])
        # the weighted soft and probabilistic variants are the paper's most accurate
        assert rows["soft WRKM"][level]["rmse"] < rows["soft K-means"][level]["rmse"]
        assert rows["WRPC"][level]["rmse"] < rows["EM"][level]["rmse"]


def test_table1_scikit_learn_rows_are_scored_like_the_others(quick):
    rows = quick[1]["table1"].values["rows"]
    gmm = rows["GMM + 1 component"]["80"]
    assert 0 <= gmm["precision"] <= 1 and 0 <= gmm["recall"] <= 1
    assert gmm["flagged_min"] <= gmm["flagged"] <= gmm["flagged_max"]
    for name in ("HDBSCAN (default)", "HDBSCAN (leaf, min_cluster_size=10)"):
        for level in ("40", "80"):
            row = rows[name][level]
            # no RMSE exactly when fewer clusters than the four true ones were found
            assert (row["rmse"] is None) == (row["clusters"] < 4)


def test_path_finds_lambda_max_and_an_exact_80_range_for_soft_rkm(quick):
    values = quick[1]["path"].values
    soft = values["RKM (q = 1.5)"]
    low, high = soft["range"]
    assert 0 < low <= high < soft["lambda_max"]
    assert soft["precision_at_target"] > 0.9


@shared
def test_football_matches_the_paper(quick):
    section = quick[1]["football"]
    assert not section.skipped
    c12 = section.values["12"]
    assert c12["ari"] >= 0.88
    assert c12["n_flagged"] == 12
    # the paper's 12 teams, compared as names without spaces and punctuation
    assert {simple_name(n) for n in c12["outliers"]} == {simple_name(n) for n in PAPER_OUTLIERS}


def test_report_lists_every_section_with_the_papers_numbers(quick):
    out, sections = quick
    text = (out / "README.md").read_text(encoding="utf-8")
    for section in sections.values():
        assert f"## {section.title}" in text
        for name in section.figures:
            assert f"]({name})" in text
            assert (out / name).read_bytes()[:8] == PNG_MAGIC
    for paper_number in ("0.7227", "1.0892", "0.1750"):  # Table I
        assert paper_number in text
    assert "**total**" in text
    hidden = [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert hidden == [MANIFEST], "temporary files left"  # only the list of files written


# -- the other experiments, quick settings --------------------------------------------
@pytest.fixture(scope="module")
def others(tmp_path_factory):
    out = tmp_path_factory.mktemp("others")
    data_home = SHARED if SHARED.is_dir() else out / "no-data"
    sections = run_reproduction(out, quick=True, data_home=data_home,
                                experiments=["rings", "dolphins"],
                                stream=open(out.parent / f"{out.name}-log.txt", "w"))
    return out, {s.key: s for s in sections}


def test_rings_recover_both_rings_and_flag_exactly_60(others):
    values = others[1]["rings"].values
    for key, v in values.items():
        if "path" in key:
            continue
        assert v["flagged"] == 60, key
        assert v["ari"] >= 0.9, key
        assert v["outside"] >= 27, key
    # the narrower kernel catches more of the points between the rings
    assert values["KRKM gamma=1.0"]["between"] > values["KRKM gamma=0.2"]["between"]


@shared
def test_dolphins_flag_the_four_dolphins_the_paper_names_but_not_zig(others):
    section = others[1]["dolphins"]
    assert section.checks and all(section.checks.values())
    flagged = {simple_name(n) for n in section.values["outliers"]}
    assert len(flagged) == 12
    assert {"sn89", "sn100", "tr99", "kringel"} <= flagged
    assert "zig" not in flagged
    assert len(section.values["degree_one"]) >= 3  # "several nodes ... have unit degree"
    assert section.values["missed"] == []


def test_missing_data_is_reported_as_not_run(tmp_path, monkeypatch):
    monkeypatch.delenv("ROBUSTCLUST_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # an empty cache
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "cache"))
    sections = run_reproduction(tmp_path / "out", quick=True, data_home=tmp_path / "empty",
                                experiments=["football"], stream=open(tmp_path / "log", "w"))
    assert sections[0].skipped and "load_football" in sections[0].skipped
    text = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "*Not run: load_football" in text


def test_unknown_experiment_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown experiment.*'tabel1'"):
        run_reproduction(tmp_path, experiments=["tabel1"])
    assert set(QUICK_EXPERIMENTS) <= set(EXPERIMENTS)


# -- the command -------------------------------------------------------------------------
def test_console_script_writes_the_report(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "robustclust", "reproduce", "--quick", "--only", "path",
         "--no-download", "--out", str(tmp_path / "rep")],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ok       path: soft RKM flags exactly 80" in proc.stdout
    assert (tmp_path / "rep" / "fig3_outlier_counts.png").read_bytes()[:8] == PNG_MAGIC


def test_console_script_rejects_an_unknown_experiment_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "robustclust", "reproduce", "--only", "tabel1",
         "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "tabel1" in lines[0] and "Traceback" not in proc.stderr


def test_quick_exits_1_when_a_headline_claim_fails(tmp_path, monkeypatch, capsys):
    failing = Section(key="table1", title="T", checks={"robust beats K-means": False})
    monkeypatch.setattr("robustclust._reproduce.run_reproduction",
                        lambda *a, **k: [failing])
    status = _cli.main(["reproduce", "--quick", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert status == 1
    assert "FAILED   table1: robust beats K-means" in captured.out
    assert "1 headline claim(s) failed" in captured.err


# -- report helpers ----------------------------------------------------------------------
def test_comparison_table_puts_ours_beside_the_paper_with_the_difference():
    text = comparison_table(["a", "b"], ["40"], {"a": {"40": 0.5}, "b": {"40": 0.25}},
                            {"a": {"40": 0.75}})
    lines = text.strip().splitlines()
    assert lines[0] == "| method | 40 ours | 40 paper | 40 diff |"
    assert lines[2] == "| a | 0.5000 | 0.7500 | -0.2500 |"
    assert lines[3] == "| b | 0.2500 | – | – |"  # a row the paper lacks


def test_markdown_table_formats_cells_by_type():
    text = markdown_table(["x", "y", "z", "w"], [["r", 3, 0.123456, None],
                                                  ["s", np.int64(4), float("nan"), "t"]],
                          digits=2)
    assert "| r | 3 | 0.12 | – |" in text
    assert "| s | 4 | – | t |" in text
    assert "| --- | ---: | ---: | ---: |" in text


def test_save_figure_and_report_leave_no_partial_files(tmp_path):
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    assert save_figure(fig, tmp_path, "a.png") == "a.png"
    first = (tmp_path / "a.png").read_bytes()
    save_figure(fig, tmp_path, "a.png")
    assert (tmp_path / "a.png").read_bytes() == first  # regenerating is byte-identical
    write_report(tmp_path, [Section(key="k", title="K", body="hello", seconds=1.25),
                            Section(key="m", title="M", skipped="no data")], header="# H")
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "## K\n\nhello\n\n*Time: 1.2 s.*" in text or "*Time: 1.3 s.*" in text
    assert "## M\n\n*Not run: no data*" in text
    # and the manifest, which records each figure as soon as it is written
    # (an interrupted run is resumed: tests/test_signals.py)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "README.md", "a.png"]
    assert json.loads((tmp_path / MANIFEST).read_text())["files"].keys() == {"a.png"}
